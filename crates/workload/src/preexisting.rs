//! The files a trace uses that existed before its capture began, with the size the trace
//! implies. A replay lays them down before measuring (as the phone held them), so that
//! reads of them reach storage and an `O_EXCL` create or an `unlink` of them means what it
//! meant on the phone.
//!
//! A path names a file that existed before the trace when the first operation naming it
//! is not a creating open: an open without `creat`, an `unlink`, `truncate`, `rename` or
//! `link` from it (importers keep successful calls only, so the call found the file). A
//! `stat` is no evidence: a recorded trace (`Recorder`) keeps an existence check whatever
//! it found, and the format has no result field. Directories ([`crate::directory_paths`])
//! are not files.
//!
//! The size is the furthest byte the trace reads of the old contents: a read through the
//! file, while it still holds them (until it is truncated, unlinked or renamed over), of a
//! range not all written by the trace before; or the start of a write past every byte
//! known so far (old bytes read, bytes the trace wrote), since apps extend files by
//! appending and a hole before the write means those bytes were there. A write's own bytes
//! imply no size: SQLite's journals and WAL grow by appending, and laying down what the
//! trace later writes turns its appends into overwrites (a recorded `telegram` task
//! replayed 205 data blocks in place that the run appended). A file known only by name,
//! or only appended to, has size 0.

use std::collections::{BTreeMap, BTreeSet};

use crate::op::{FileTrace, OpKind};
use crate::resolve::{Effect, Resolver};

/// A file that existed before the trace: its path at the trace's start and its size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreexistingFile {
    pub path: String,
    pub size_bytes: u64,
}

/// The files `trace` uses that existed before it (see the module documentation), in path
/// order, and the directories it uses.
pub fn preexisting_files(trace: &FileTrace) -> (Vec<PreexistingFile>, BTreeSet<String>) {
    let dirs = crate::directory_paths(trace.ops.iter());
    let mut sizes: BTreeMap<String, u64> = BTreeMap::new();
    // Paths seen so far, and for each path whose file still holds its old contents, the
    // path it had at the start (its key in `sizes`).
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut old_contents: BTreeMap<String, String> = BTreeMap::new();
    // The bytes of each such file the trace wrote (by its key).
    let mut written: BTreeMap<String, Written> = BTreeMap::new();
    let mut resolver = Resolver::new();
    for op in &trace.ops {
        let first_sight = |path: &str, seen: &BTreeSet<String>| {
            !seen.contains(path) && !dirs.contains(path.trim_end_matches('/'))
        };
        // A first sight that shows the file existed.
        let existing: Option<&str> = match &op.kind {
            OpKind::Open { path, flags, .. } if !flags.create && !flags.directory => Some(path),
            OpKind::Unlink { path }
            | OpKind::Truncate { path, .. }
            | OpKind::Rename { from: path, .. }
            | OpKind::Link { from: path, .. } => Some(path),
            _ => None,
        };
        if let Some(path) = existing.filter(|p| first_sight(p, &seen)) {
            sizes.insert(path.to_string(), 0);
            old_contents.insert(path.to_string(), path.to_string());
        }
        let Ok(effect) = resolver.apply(op) else {
            continue;
        };
        match effect {
            Effect::Open { path, created, .. } => {
                // The resolver calls an open truncating only a file it knew already.
                let truncates = matches!(&op.kind, OpKind::Open { flags, .. }
                    if flags.truncate && flags.writable());
                if created || truncates {
                    old_contents.remove(&path);
                }
                seen.insert(path);
            }
            Effect::Read {
                path,
                offset_bytes,
                len_bytes,
            } if len_bytes > 0 => {
                if let Some(key) = old_contents.get(&path) {
                    let end = offset_bytes.saturating_add(len_bytes);
                    let ours = written
                        .get(key)
                        .is_some_and(|w| w.covers(offset_bytes, end));
                    if !ours {
                        let size = sizes.entry(key.clone()).or_default();
                        *size = (*size).max(end);
                    }
                }
            }
            Effect::Write {
                path,
                offset_bytes,
                len_bytes,
                ..
            } if len_bytes > 0 => {
                if let Some(key) = old_contents.get(&path) {
                    let end = offset_bytes.saturating_add(len_bytes);
                    let runs = written.entry(key.clone()).or_default();
                    let size = sizes.entry(key.clone()).or_default();
                    // A write that starts past every byte known so far (read as old or
                    // written by the trace) would leave a hole if the file had been
                    // shorter: apps extend files by appending, so the bytes before it
                    // were there (a database page updated without being read first).
                    if offset_bytes > (*size).max(runs.end()) {
                        *size = offset_bytes;
                    }
                    runs.insert(offset_bytes, end);
                }
            }
            Effect::Truncate { path, .. } | Effect::Unlink { path } => {
                old_contents.remove(&path);
                seen.insert(path);
            }
            Effect::Rename { from, to } => {
                old_contents.remove(&to);
                if let Some(key) = old_contents.remove(&from) {
                    old_contents.insert(to.clone(), key);
                }
                seen.insert(from);
                seen.insert(to);
            }
            Effect::Link { from, to } => {
                seen.insert(from);
                seen.insert(to);
            }
            Effect::Read { .. } | Effect::Write { .. } | Effect::Sync { .. } | Effect::Other => {}
        }
        match &op.kind {
            OpKind::Stat {
                path,
                size_bytes: Some(n),
            } => {
                if first_sight(path, &seen) {
                    // Only a successful stat of a regular file carries a size.
                    old_contents.insert(path.clone(), path.clone());
                }
                stat_size(&mut sizes, &old_contents, &written, path, *n);
                seen.insert(path.clone());
            }
            OpKind::Stat { path, .. } => {
                seen.insert(path.clone());
            }
            _ => {}
        }
        if let OpKind::Fstat {
            fd,
            size_bytes: Some(n),
        } = &op.kind
        {
            if let Some(path) = resolver.path_of(*fd) {
                stat_size(&mut sizes, &old_contents, &written, path, *n);
            }
        }
    }
    let files = sizes
        .into_iter()
        .map(|(path, size_bytes)| PreexistingFile { path, size_bytes })
        .collect();
    (files, dirs)
}

/// A stat's size as evidence of a file's old contents: exact while the file still holds
/// them and the trace has written none of it (after a write, the size includes the
/// trace's own appends, which must not be laid down).
fn stat_size(
    sizes: &mut BTreeMap<String, u64>,
    old_contents: &BTreeMap<String, String>,
    written: &BTreeMap<String, Written>,
    path: &str,
    size_bytes: u64,
) {
    let Some(key) = old_contents.get(path) else {
        return;
    };
    if written.get(key).is_some_and(|w| w.end() > 0) {
        return;
    }
    let size = sizes.entry(key.clone()).or_default();
    *size = (*size).max(size_bytes);
}

/// Byte ranges a trace wrote to one file, merged: one entry per run of written bytes, so
/// memory grows with the number of writes, never with their lengths.
#[derive(Default)]
struct Written(BTreeMap<u64, u64>);

impl Written {
    /// Adds `start..end`, merging it with the runs it overlaps or touches.
    fn insert(&mut self, mut start: u64, mut end: u64) {
        if let Some((&s, &e)) = self.0.range(..=start).next_back() {
            if e >= start {
                start = s;
                end = end.max(e);
            }
        }
        let absorbed: Vec<u64> = self.0.range(start..=end).map(|(&s, _)| s).collect();
        for s in absorbed {
            if let Some(e) = self.0.remove(&s) {
                end = end.max(e);
            }
        }
        self.0.insert(start, end);
    }

    /// The end of the last run (0 if nothing was written).
    fn end(&self) -> u64 {
        self.0.last_key_value().map_or(0, |(_, &e)| e)
    }

    /// Whether every byte of `start..end` was written.
    fn covers(&self, start: u64, end: u64) -> bool {
        self.0
            .range(..=start)
            .next_back()
            .is_some_and(|(_, &e)| e >= end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(text: &str) -> FileTrace {
        crate::text::parse_str(&format!("#flashstack-filetrace 1\n{text}"), "t").unwrap()
    }

    #[test]
    fn files_the_trace_did_not_create_are_found_with_their_reach() {
        let t = trace(
            "0 1 open 3 /d/a.db rdwr\n\
             1 1 pread 3 8192 4096\n\
             2 1 pwrite 3 20480 4096 sqlite\n\
             2 1 pread 3 20480 4096\n\
             2 1 pread 3 12288 4096\n\
             3 1 close 3\n\
             3 1 open 7 /d/a.db-wal rdwr\n\
             3 1 pwrite 7 0 8192 sqlite\n\
             3 1 close 7\n\
             4 1 open 4 /d/new rdwr|creat\n\
             5 1 pread 4 0 100\n\
             6 1 unlink /d/gone\n\
             7 1 open 5 /d/t rdwr|trunc\n\
             8 1 pread 5 0 4096\n\
             9 1 stat /d/s\n\
             10 1 open 6 /d rdonly\n\
             11 1 open 8 /d/u.db rdwr\n\
             12 1 pwrite 8 40960 4096 sqlite\n\
             13 1 pwrite 8 0 4096 sqlite\n\
             14 1 pwrite 8 45056 8192 sqlite\n",
        );
        let (files, dirs) = preexisting_files(&t);
        let files: Vec<(&str, u64)> = files
            .iter()
            .map(|f| (f.path.as_str(), f.size_bytes))
            .collect();
        assert_eq!(
            files,
            [
                ("/d/a.db", 20480),
                ("/d/a.db-wal", 0),
                ("/d/gone", 0),
                ("/d/t", 0),
                ("/d/u.db", 40960)
            ]
        );
        assert!(dirs.contains("/d"));
    }

    #[test]
    fn a_stat_size_counts_until_the_trace_writes_the_file() {
        let t = trace(
            "0 1 stat /d/photo.jpg size=8000\n\
             1 1 stat /d/none\n\
             2 1 open 3 /d/a.db rdwr\n\
             3 1 fstat 3 size=12288\n\
             4 1 pwrite 3 12288 4096 sqlite\n\
             5 1 fstat 3 size=16384\n\
             6 1 open 4 /d/b.db rdwr|creat\n\
             7 1 fstat 4 size=4096\n",
        );
        let files: Vec<(String, u64)> = preexisting_files(&t)
            .0
            .into_iter()
            .map(|f| (f.path, f.size_bytes))
            .collect();
        assert_eq!(
            files,
            [
                ("/d/a.db".to_string(), 12288),
                ("/d/photo.jpg".to_string(), 8000)
            ]
        );
    }

    #[test]
    fn written_ranges_merge_and_cover() {
        let mut w = Written::default();
        w.insert(100, 200);
        w.insert(300, 400);
        assert!(w.covers(120, 200) && !w.covers(150, 250) && !w.covers(0, 10));
        w.insert(200, 300);
        assert_eq!(w.0.len(), 1);
        assert!(w.covers(100, 400) && !w.covers(100, 401));
        w.insert(50, 120);
        w.insert(500, 600);
        assert_eq!(
            w.0.iter().map(|(&s, &e)| (s, e)).collect::<Vec<_>>(),
            [(50, 400), (500, 600)]
        );
    }
}
