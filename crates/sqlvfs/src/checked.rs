//! [`Checked`]: a [`FileApi`] that passes every call to the file system below and
//! checks each read against a reference model of the files' contents, so a file system
//! that returns wrong bytes is caught at the first read that shows it (with the file,
//! offset and first differing byte), not later as a "database disk image is malformed"
//! from SQLite. The model is the API's non-crash semantics: writes and truncates are
//! visible at once, an atomic write's changes are dropped on abort and on the last close
//! before a commit. Power cuts are out of its scope (a `PowerLost` error disables it).
//!
//! The wrapper is transparent: it makes no call of its own below, so a run through it
//! takes the same virtual time and leaves the same state as one without it (the CLI's
//! `--check-reads` relies on that). A file it has not seen from its creation is learned
//! lazily: the model knows the bytes written through it and the bytes read before, and
//! checks each read against those; the file's size becomes known from a `size` call, a
//! short read (the end of the file) or a truncate.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::api::{FileApi, FileError, FileId, Nanos, OpenFlags, UserInput};

/// Disjoint byte ranges `[start, end)`, keyed by start, never adjacent (merged).
#[derive(Debug, Default, Clone)]
struct Ranges(BTreeMap<u64, u64>);

impl Ranges {
    fn insert(&mut self, mut start: u64, mut end: u64) {
        if start >= end {
            return;
        }
        // Absorb every range that overlaps or touches [start, end).
        let touching: Vec<(u64, u64)> = self
            .0
            .range(..=end)
            .rev()
            .take_while(|&(_, &e)| e >= start)
            .map(|(&s, &e)| (s, e))
            .collect();
        for (s, e) in touching {
            self.0.remove(&s);
            start = start.min(s);
            end = end.max(e);
        }
        self.0.insert(start, end);
    }

    /// Forgets everything at or past `at`.
    fn cut(&mut self, at: u64) {
        let after: Vec<u64> = self.0.range(at..).map(|(&s, _)| s).collect();
        for s in after {
            self.0.remove(&s);
        }
        if let Some((_, e)) = self.0.range_mut(..at).next_back() {
            *e = (*e).min(at);
        }
    }

    /// The parts of `[start, end)` the set holds.
    fn within(&self, start: u64, end: u64) -> Vec<(u64, u64)> {
        let first = self
            .0
            .range(..=start)
            .next_back()
            .map_or(start, |(&s, _)| s);
        self.0
            .range(first..end)
            .filter_map(|(&s, &e)| {
                let (s, e) = (s.max(start), e.min(end));
                (s < e).then_some((s, e))
            })
            .collect()
    }

    fn end(&self) -> u64 {
        self.0.values().next_back().copied().unwrap_or(0)
    }
}

/// What the model knows of one file's contents.
#[derive(Debug, Default, Clone)]
struct Known {
    /// The file's bytes where `ranges` says they are known (zeros elsewhere).
    bytes: Vec<u8>,
    ranges: Ranges,
    /// The file's size, once known.
    size: Option<u64>,
}

impl Known {
    /// A file that exists with nothing known of it.
    fn unknown() -> Known {
        Known::default()
    }

    /// A file just created empty.
    fn empty() -> Known {
        Known {
            size: Some(0),
            ..Known::default()
        }
    }

    fn put(&mut self, offset: u64, data: &[u8]) {
        let end = offset + data.len() as u64;
        if (self.bytes.len() as u64) < end {
            self.bytes.resize(end as usize, 0);
        }
        self.bytes[offset as usize..end as usize].copy_from_slice(data);
        self.ranges.insert(offset, end);
    }

    fn write(&mut self, offset: u64, data: &[u8]) {
        let end = offset + data.len() as u64;
        if let Some(size) = self.size {
            // A hole between the old end and the write reads as zeros.
            if offset > size {
                self.put(size, &vec![0; (offset - size) as usize]);
            }
            self.size = Some(size.max(end));
        }
        self.put(offset, data);
    }

    fn truncate(&mut self, size: u64) {
        self.ranges.cut(size);
        self.bytes.truncate(size as usize);
        if let Some(old) = self.size.filter(|&old| old < size) {
            self.put(old, &vec![0; (size - old) as usize]);
        }
        self.size = Some(size);
    }

    /// Checks a read of `buf.len()` bytes at `offset` that returned `got`, then learns it.
    fn check_read(&mut self, offset: u64, want_len: usize, got: &[u8]) -> Result<(), String> {
        let n = got.len() as u64;
        if let Some(size) = self.size {
            let expected = size.saturating_sub(offset).min(want_len as u64);
            if n != expected {
                return Err(format!("{n} read, {expected} expected (size {size})"));
            }
        } else if n < want_len as u64 {
            // A short read ends at the end of the file.
            if self.ranges.end() > offset + n {
                return Err(format!(
                    "{n} read, but bytes up to {} were written or read before",
                    self.ranges.end()
                ));
            }
            // An empty read says only that the end is at or before `offset`.
            if n > 0 {
                self.size = Some(offset + n);
            }
        }
        for (s, e) in self.ranges.within(offset, offset + n) {
            let want = &self.bytes[s as usize..e as usize];
            let have = &got[(s - offset) as usize..(e - offset) as usize];
            if let Some(i) = want.iter().zip(have).position(|(a, b)| a != b) {
                return Err(format!(
                    "first difference at byte {} (got {}, expected {})",
                    s + i as u64,
                    have[i],
                    want[i]
                ));
            }
        }
        self.put(offset, got);
        Ok(())
    }

    fn check_size(&mut self, size: u64) -> Result<(), String> {
        match self.size {
            Some(known) if known != size => Err(format!("{size} bytes, {known} expected")),
            None if self.ranges.end() > size => Err(format!(
                "{size} bytes, but bytes up to {} were written or read before",
                self.ranges.end()
            )),
            _ => {
                self.size = Some(size);
                Ok(())
            }
        }
    }
}

/// One file of the model (an inode: names and handles point at it).
#[derive(Debug, Default)]
struct ModelFile {
    known: Known,
    handles: u32,
    named: bool,
    /// The name goes when the last handle closes (`delete_on_close`).
    unlink_on_close: Option<String>,
    /// What was known at `atomic_begin`, restored on abort or on the last close.
    atomic_base: Option<Known>,
}

/// A [`FileApi`] whose reads are checked against a model; see the module doc.
pub struct Checked<A: FileApi> {
    inner: A,
    files: BTreeMap<u64, ModelFile>,
    names: BTreeMap<String, u64>,
    handles: BTreeMap<FileId, u64>,
    /// The name each handle was opened by (for messages).
    paths: BTreeMap<FileId, String>,
    next_file: u64,
    /// Shared so a caller that handed the wrapper away (boxed) can still read it.
    reads_checked: Arc<AtomicU64>,
    disabled: bool,
}

impl<A: FileApi> Checked<A> {
    pub fn new(inner: A) -> Checked<A> {
        Checked {
            inner,
            files: BTreeMap::new(),
            names: BTreeMap::new(),
            handles: BTreeMap::new(),
            paths: BTreeMap::new(),
            next_file: 0,
            reads_checked: Arc::default(),
            disabled: false,
        }
    }

    /// A wrapper that adds its checked reads to `counter` (shared by several wrappers).
    pub fn with_counter(inner: A, counter: Arc<AtomicU64>) -> Checked<A> {
        Checked {
            reads_checked: counter,
            ..Checked::new(inner)
        }
    }

    /// Reads compared with the model so far, as a counter that outlives the wrapper.
    pub fn reads_checked(&self) -> Arc<AtomicU64> {
        self.reads_checked.clone()
    }

    pub fn inner(&mut self) -> &mut A {
        &mut self.inner
    }

    fn file_of(&mut self, id: FileId) -> Option<&mut ModelFile> {
        let f = *self.handles.get(&id)?;
        self.files.get_mut(&f)
    }

    fn drop_file_if_unused(&mut self, f: u64) {
        if self
            .files
            .get(&f)
            .is_some_and(|m| m.handles == 0 && !m.named)
        {
            self.files.remove(&f);
        }
    }

    fn unname(&mut self, path: &str) {
        if let Some(f) = self.names.remove(path) {
            if let Some(m) = self.files.get_mut(&f) {
                m.named = false;
            }
            self.drop_file_if_unused(f);
        }
    }

    /// The model file `path` names, made if the model has not seen it.
    fn file_named(&mut self, path: &str, flags: OpenFlags) -> u64 {
        if let Some(&f) = self.names.get(path) {
            return f;
        }
        let f = self.next_file;
        self.next_file += 1;
        let known = if flags.create && flags.exclusive {
            Known::empty()
        } else {
            Known::unknown()
        };
        let file = ModelFile {
            known,
            named: true,
            ..ModelFile::default()
        };
        self.files.insert(f, file);
        self.names.insert(path.to_string(), f);
        f
    }

    fn track<T>(&mut self, out: Result<T, FileError>) -> Result<T, FileError> {
        if matches!(out, Err(FileError::PowerLost)) {
            self.disabled = true;
        }
        out
    }

    fn mismatch(&self, what: &str, file: FileId, detail: String) -> FileError {
        let path = self.paths.get(&file).cloned().unwrap_or_default();
        FileError::Io(format!("checked {what} of '{path}': {detail}"))
    }
}

impl<A: FileApi> FileApi for Checked<A> {
    fn user_input(&mut self, now: Nanos, input: UserInput) {
        self.inner.user_input(now, input);
    }

    fn open(
        &mut self,
        now: Nanos,
        path: &str,
        flags: OpenFlags,
    ) -> Result<(FileId, Nanos), FileError> {
        let out = self.inner.open(now, path, flags);
        let (id, t) = self.track(out)?;
        if self.disabled {
            return Ok((id, t));
        }
        let f = self.file_named(path, flags);
        let m = self.files.get_mut(&f).expect("named file");
        m.handles += 1;
        if flags.delete_on_close {
            m.unlink_on_close = Some(path.to_string());
        }
        self.handles.insert(id, f);
        self.paths.insert(id, path.to_string());
        Ok((id, t))
    }

    fn close(&mut self, now: Nanos, file: FileId) -> Result<Nanos, FileError> {
        let out = self.inner.close(now, file);
        let t = self.track(out)?;
        self.paths.remove(&file);
        let Some(f) = self.handles.remove(&file) else {
            return Ok(t);
        };
        let mut unlink = None;
        if let Some(m) = self.files.get_mut(&f) {
            m.handles -= 1;
            if m.handles == 0 {
                if let Some(base) = m.atomic_base.take() {
                    m.known = base;
                }
                unlink = m.unlink_on_close.take();
            }
        }
        if let Some(path) = unlink.filter(|p| self.names.get(p) == Some(&f)) {
            self.unname(&path);
        }
        self.drop_file_if_unused(f);
        Ok(t)
    }

    fn read_at(
        &mut self,
        now: Nanos,
        file: FileId,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<(usize, Nanos), FileError> {
        let out = self.inner.read_at(now, file, offset, buf);
        let (n, t) = self.track(out)?;
        if self.disabled {
            return Ok((n, t));
        }
        let Some(m) = self.file_of(file) else {
            return Ok((n, t));
        };
        if let Err(detail) = m.known.check_read(offset, buf.len(), &buf[..n]) {
            let len = buf.len();
            return Err(self.mismatch(
                "read",
                file,
                format!("at offset {offset}, {len} bytes: {detail}"),
            ));
        }
        self.reads_checked.fetch_add(1, Ordering::Relaxed);
        Ok((n, t))
    }

    fn write_at(
        &mut self,
        now: Nanos,
        file: FileId,
        offset: u64,
        data: &[u8],
    ) -> Result<Nanos, FileError> {
        let out = self.inner.write_at(now, file, offset, data);
        let t = self.track(out)?;
        if let Some(m) = self.file_of(file) {
            m.known.write(offset, data);
        }
        Ok(t)
    }

    fn truncate(&mut self, now: Nanos, file: FileId, size_bytes: u64) -> Result<Nanos, FileError> {
        let out = self.inner.truncate(now, file, size_bytes);
        let t = self.track(out)?;
        if let Some(m) = self.file_of(file) {
            m.known.truncate(size_bytes);
        }
        Ok(t)
    }

    fn size(&mut self, now: Nanos, file: FileId) -> Result<(u64, Nanos), FileError> {
        let out = self.inner.size(now, file);
        let (size, t) = self.track(out)?;
        if self.disabled {
            return Ok((size, t));
        }
        if let Some(m) = self.file_of(file) {
            if let Err(detail) = m.known.check_size(size) {
                return Err(self.mismatch("size", file, detail));
            }
        }
        Ok((size, t))
    }

    fn sync(&mut self, now: Nanos, file: FileId, data_only: bool) -> Result<Nanos, FileError> {
        let out = self.inner.sync(now, file, data_only);
        self.track(out)
    }

    fn delete(&mut self, now: Nanos, path: &str, sync_dir: bool) -> Result<Nanos, FileError> {
        let out = self.inner.delete(now, path, sync_dir);
        let t = self.track(out)?;
        self.unname(path);
        Ok(t)
    }

    fn exists(&mut self, now: Nanos, path: &str) -> Result<(bool, Nanos), FileError> {
        let out = self.inner.exists(now, path);
        self.track(out)
    }

    fn rename(&mut self, now: Nanos, from: &str, to: &str) -> Result<Nanos, FileError> {
        let out = self.inner.rename(now, from, to);
        let t = self.track(out)?;
        self.unname(to);
        if let Some(f) = self.names.remove(from) {
            self.names.insert(to.to_string(), f);
        }
        Ok(t)
    }

    fn mkdir(&mut self, now: Nanos, path: &str) -> Result<Nanos, FileError> {
        let out = self.inner.mkdir(now, path);
        self.track(out)
    }

    fn sync_dir(&mut self, now: Nanos, path: &str) -> Result<Nanos, FileError> {
        let out = self.inner.sync_dir(now, path);
        self.track(out)
    }

    fn atomic_write_supported(&mut self) -> bool {
        self.inner.atomic_write_supported()
    }

    fn atomic_begin(&mut self, now: Nanos, file: FileId) -> Result<Nanos, FileError> {
        let out = self.inner.atomic_begin(now, file);
        let t = self.track(out)?;
        if let Some(m) = self.file_of(file) {
            m.atomic_base = Some(m.known.clone());
        }
        Ok(t)
    }

    fn atomic_commit(&mut self, now: Nanos, file: FileId) -> Result<Nanos, FileError> {
        let out = self.inner.atomic_commit(now, file);
        let committed = out.is_ok();
        let out = self.track(out);
        if let Some(m) = self.file_of(file) {
            // On an error the changes are dropped (the trait's contract).
            match m.atomic_base.take() {
                Some(base) if !committed => m.known = base,
                _ => {}
            }
        }
        out
    }

    fn atomic_abort(&mut self, now: Nanos, file: FileId) -> Result<Nanos, FileError> {
        let out = self.inner.atomic_abort(now, file);
        let t = self.track(out)?;
        if let Some(m) = self.file_of(file) {
            if let Some(base) = m.atomic_base.take() {
                m.known = base;
            }
        }
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memfs::{MemFs, MemFsConfig};
    use crate::rng::SplitMix64;

    const CREATE: OpenFlags = OpenFlags {
        create: true,
        exclusive: false,
        read_only: false,
        delete_on_close: false,
    };

    fn memfs() -> MemFs {
        MemFs::new(1, MemFsConfig::default())
    }

    /// Random calls over three names (with a file created before the wrapper): the
    /// wrapper reports nothing on a correct file system, makes no call of its own (the
    /// call log below equals a run without it), and checks reads it learned lazily.
    #[test]
    fn transparent_on_a_correct_file_system() {
        let mut reads_checked = 0;
        for seed in 0..20 {
            let plain = memfs();
            let checked = memfs();
            let mut wrapper = Checked::new(checked.clone());
            let reads = wrapper.reads_checked();
            for fs in [&mut plain.clone() as &mut dyn FileApi, &mut wrapper] {
                random_calls(fs, seed);
            }
            assert_eq!(plain.log(), checked.log(), "seed {seed}");
            reads_checked += reads.load(Ordering::Relaxed);
        }
        assert!(reads_checked > 500, "{reads_checked} reads checked");
    }

    fn random_calls(fs: &mut dyn FileApi, seed: u64) {
        let mut rng = SplitMix64::new(seed);
        let names = ["/a", "/b", "/c"];
        let mut now = 0;
        // A file that exists before the wrapper sees any call.
        let (id, t) = fs.open(now, "/a", CREATE).unwrap();
        now = fs.write_at(t, id, 0, &[7; 9000]).unwrap();
        let mut open: Vec<FileId> = Vec::new();
        for _ in 0..300 {
            let r = rng.next();
            let pick = (r >> 8) as usize;
            match r % 8 {
                0 => {
                    let (id, t) = fs.open(now, names[pick % 3], CREATE).unwrap();
                    open.push(id);
                    now = t;
                }
                1 if !open.is_empty() => {
                    now = fs.close(now, open.swap_remove(pick % open.len())).unwrap();
                }
                2 | 3 if !open.is_empty() => {
                    let mut data = vec![0u8; pick % 5000 + 1];
                    rng.fill(&mut data);
                    let at = (r >> 20) % 12_000;
                    now = fs
                        .write_at(now, open[pick % open.len()], at, &data)
                        .unwrap();
                }
                4 | 5 if !open.is_empty() => {
                    let mut buf = vec![0u8; pick % 6000 + 1];
                    let at = (r >> 20) % 14_000;
                    now = fs
                        .read_at(now, open[pick % open.len()], at, &mut buf)
                        .unwrap()
                        .1;
                }
                6 if !open.is_empty() => {
                    let size = (r >> 20) % 12_000;
                    now = fs.truncate(now, open[pick % open.len()], size).unwrap();
                }
                7 if !open.is_empty() => {
                    now = fs.size(now, open[pick % open.len()]).unwrap().1;
                }
                _ => {}
            }
        }
    }

    /// Bytes changed below the checker (through a plain handle on the same file system,
    /// as a file system returning wrong bytes would look) are reported with their place.
    #[test]
    fn a_changed_byte_is_reported_with_its_place() {
        let mut fs = Checked::new(memfs());
        let (id, t) = fs.open(0, "/db", CREATE).unwrap();
        let t = fs.write_at(t, id, 0, &[1; 100]).unwrap();
        let t = change_below(&mut fs, t, "/db", 50);
        let err = fs.read_at(t, id, 0, &mut [0; 100]).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("'/db'") && msg.contains("byte 50"), "{msg}");
    }

    /// A file the wrapper never saw written: the first read is learned, a later read
    /// that returns other bytes is caught (the bug this wrapper was built for:
    /// readahead returning stored bytes of a compressed cluster).
    #[test]
    fn a_file_seen_first_by_a_read_is_checked_by_later_reads() {
        let inner = memfs();
        let mut plain = inner.clone();
        let (id, t) = plain.open(0, "/old", CREATE).unwrap();
        let t = plain.write_at(t, id, 0, &[3; 8192]).unwrap();
        let t = plain.close(t, id).unwrap();
        let mut fs = Checked::new(inner);
        let (id, t) = fs.open(t, "/old", OpenFlags::default()).unwrap();
        let (n, t) = fs.read_at(t, id, 0, &mut [0; 4096]).unwrap();
        assert_eq!(n, 4096);
        // Past what was read: not known, so not a mismatch.
        let t = change_below(&mut fs, t, "/old", 5000);
        let t = fs.read_at(t, id, 4096, &mut [0; 4096]).unwrap().1;
        let t = change_below(&mut fs, t, "/old", 3072);
        let err = fs.read_at(t, id, 1024, &mut [0; 4096]).unwrap_err();
        assert!(
            err.to_string().contains("first difference at byte 3072"),
            "{err}"
        );
    }

    /// Flips the byte at `at` of `path` through a plain handle, going around the checker.
    fn change_below(fs: &mut Checked<MemFs>, now: Nanos, path: &str, at: u64) -> Nanos {
        let mut plain = fs.inner().clone();
        let (h, t) = plain.open(now, path, CREATE).unwrap();
        let mut byte = [0u8];
        let t = plain.read_at(t, h, at, &mut byte).unwrap().1;
        let t = plain.write_at(t, h, at, &[byte[0] ^ 0x40]).unwrap();
        plain.close(t, h).unwrap()
    }

    #[test]
    fn a_read_past_a_known_end_is_caught() {
        let mut fs = Checked::new(memfs());
        let (id, t) = fs.open(0, "/f", CREATE).unwrap();
        let t = fs.write_at(t, id, 0, &[1; 10]).unwrap();
        let t = fs.size(t, id).unwrap().1;
        // Truncated below the wrapper, through another handle on the same file system.
        let mut other = fs.inner().clone();
        let (o, t) = other.open(t, "/f", CREATE).unwrap();
        let t = other.truncate(t, o, 4).unwrap();
        let err = fs.read_at(t, id, 0, &mut [0; 10]).unwrap_err();
        assert!(err.to_string().contains("4 read, 10 expected"), "{err}");
    }

    /// SQLite's temporary files: a second open of a `delete_on_close` name, before the
    /// first handle closes, sees the same file; the name goes with the last close.
    #[test]
    fn delete_on_close_keeps_the_name_until_the_last_close() {
        let mut fs = Checked::new(memfs());
        let flags = OpenFlags {
            delete_on_close: true,
            ..CREATE
        };
        let (a, t) = fs.open(0, "/tmp1", flags).unwrap();
        let (b, t) = fs.open(t, "/tmp1", CREATE).unwrap();
        let t = fs.write_at(t, a, 0, &[5; 300]).unwrap();
        let (n, t) = fs.read_at(t, b, 0, &mut [0; 300]).unwrap();
        assert_eq!(n, 300);
        let t = fs.close(t, a).unwrap();
        assert!(fs.names.contains_key("/tmp1"), "b still has it open");
        fs.close(t, b).unwrap();
        assert!(!fs.names.contains_key("/tmp1") && fs.files.is_empty());
    }

    /// `Ranges` against a bitmap, over random inserts and cuts.
    #[test]
    fn ranges_match_a_bitmap() {
        let mut rng = SplitMix64::new(9);
        let mut ranges = Ranges::default();
        let mut bits = [false; 200];
        for _ in 0..2000 {
            let r = rng.next();
            let (a, b) = ((r % 200) as usize, ((r >> 16) % 200) as usize);
            let (s, e) = (a.min(b), a.max(b));
            if r >> 40 & 7 == 0 {
                ranges.cut(s as u64);
                bits[s..].fill(false);
            } else {
                ranges.insert(s as u64, e as u64);
                bits[s..e].fill(true);
            }
            let mut from_ranges = [false; 200];
            for (s, e) in ranges.within(0, 200) {
                from_ranges[s as usize..e as usize].fill(true);
            }
            assert_eq!(from_ranges, bits);
            // Disjoint and never touching.
            let v: Vec<_> = ranges.0.iter().collect();
            assert!(v.windows(2).all(|w| w[0].1 < w[1].0), "{v:?}");
            let (q0, q1) = (s as u64 / 2, e as u64 + 7);
            let want: usize = (q0 as usize..(q1 as usize).min(200))
                .filter(|&i| bits[i])
                .count();
            let got: u64 = ranges.within(q0, q1).iter().map(|(s, e)| e - s).sum();
            assert_eq!(got as usize, want);
        }
    }
}
