//! `workload analyze`: the columns of the MedFS paper's workload table for a file-level
//! trace, plus sync counts and where the writes went by file type.
//!
//! Definitions (also in `docs/file-traces.md`):
//!
//! * **Vol**: bytes written by `write`/`pwrite` (MB = 10^6 bytes, as the table prints).
//! * **Small**: the share of written bytes that went to *small files*: files whose largest
//!   size in the trace is at most [`SMALL_FILE_MAX_BYTES`] = 923 × 4 KiB ≈ 3.69 MB, the
//!   most an F2FS inode addresses through its own direct pointers (MedFS's threshold).
//! * **UR** (update ratio): the share of written bytes that overwrite bytes the file
//!   already held (below its size just before the write). A file the trace did not create
//!   or truncate existed before the trace with an unknown size; every write to it counts
//!   as an update (such files are mostly databases rewritten in place) and the bytes are
//!   reported separately as `preexisting_write_bytes`, so the assumption's weight shows.
//! * **UD** (update difference): the mean, over update writes whose difference is known,
//!   of the share of overwritten bytes that changed. Known from captured bytes when the
//!   trace carries the bytes both times, else from a write's declared change ratio.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};

use serde::Serialize;

use crate::error::FieldError;
use crate::op::{Data, FileOp, FileTrace};
use crate::resolve::{Effect, Resolver, FILES_MAX};

/// MedFS's small-file bound: 923 direct pointers × 4 KiB.
pub const SMALL_FILE_MAX_BYTES: u64 = 923 * 4096;

/// Most 4 KiB pages of captured bytes kept to measure update differences (256 MiB); bytes
/// beyond it are not compared (`ud_pages_dropped` counts them).
pub const CONTENT_PAGES_MAX: usize = 1 << 16;

const PAGE_BYTES: u64 = 4096;

/// Kinds of file an app writes, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileType {
    /// A SQLite database (`.db`, `.sqlite`, `.sqlite3`, `.db3`).
    SqliteDb,
    /// Its rollback journal (`-journal`, and `-mj…` super-journals).
    SqliteJournal,
    /// Its write-ahead log (`-wal`).
    SqliteWal,
    /// Its WAL index (`-shm`).
    SqliteShm,
    /// Temporary files: `.tmp`, `.temp`, `.bak`, `.swp`, `.part`, names ending in `~`, or a
    /// `tmp`/`temp` directory on the path.
    Temp,
    /// Media by extension (images, audio, video).
    Media,
    /// Android's shared preferences: a `shared_prefs` directory on the path (XML files
    /// rewritten whole).
    Prefs,
    /// Anything else in a `cache` or `code_cache` directory.
    Cache,
    /// A file whose name the capture lost: the stand-ins of a MobiGen import
    /// (`…/mobigen-fd<FD>`, `/mobigen/fd<FD>`).
    Unknown,
    Other,
}

impl FileType {
    pub const ALL: [FileType; 10] = [
        FileType::SqliteDb,
        FileType::SqliteJournal,
        FileType::SqliteWal,
        FileType::SqliteShm,
        FileType::Temp,
        FileType::Media,
        FileType::Prefs,
        FileType::Cache,
        FileType::Unknown,
        FileType::Other,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FileType::SqliteDb => "sqlite-db",
            FileType::SqliteJournal => "sqlite-journal",
            FileType::SqliteWal => "sqlite-wal",
            FileType::SqliteShm => "sqlite-shm",
            FileType::Temp => "temp",
            FileType::Media => "media",
            FileType::Prefs => "prefs",
            FileType::Cache => "cache",
            FileType::Unknown => "unknown",
            FileType::Other => "other",
        }
    }

    /// The type a path's name suggests. In order: the SQLite suffixes, a MobiGen
    /// stand-in, a `shared_prefs` directory, temporary names, media extensions, a cache
    /// directory.
    pub fn of(path: &str) -> FileType {
        let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
        let in_dir = |names: &[&str]| {
            path.split('/')
                .rev()
                .skip(1)
                .any(|dir| names.contains(&dir.to_ascii_lowercase().as_str()))
        };
        let extension = name.rsplit_once('.').map_or("", |(_, ext)| ext);
        if name.ends_with("-journal") || name.contains("-mj") && name.contains(".db") {
            return FileType::SqliteJournal;
        }
        if name.ends_with("-wal") {
            return FileType::SqliteWal;
        }
        if name.ends_with("-shm") {
            return FileType::SqliteShm;
        }
        if matches!(extension, "db" | "sqlite" | "sqlite3" | "db3") {
            return FileType::SqliteDb;
        }
        if name.starts_with("mobigen-fd") || path.starts_with("/mobigen/fd") {
            return FileType::Unknown;
        }
        if in_dir(&["shared_prefs"]) {
            return FileType::Prefs;
        }
        let temp_dir = in_dir(&["tmp", "temp", ".tmp"]);
        if matches!(
            extension,
            "tmp" | "temp" | "bak" | "swp" | "part" | "crdownload"
        ) || name.ends_with('~')
            || temp_dir
        {
            return FileType::Temp;
        }
        if matches!(
            extension,
            "jpg"
                | "jpeg"
                | "png"
                | "gif"
                | "webp"
                | "heic"
                | "heif"
                | "bmp"
                | "mp4"
                | "m4v"
                | "mkv"
                | "webm"
                | "3gp"
                | "mov"
                | "avi"
                | "mp3"
                | "m4a"
                | "aac"
                | "ogg"
                | "opus"
                | "oga"
                | "amr"
                | "wav"
                | "flac"
        ) {
            return FileType::Media;
        }
        if in_dir(&["cache", "code_cache"]) {
            return FileType::Cache;
        }
        FileType::Other
    }
}

impl fmt::Display for FileType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One row of the file-type breakdown.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TypeRow {
    pub file_type: FileType,
    /// Distinct files written under a name of this type.
    pub files: u64,
    pub write_ops: u64,
    pub write_bytes: u64,
    /// `write_bytes` ÷ all written bytes.
    pub write_share: f64,
    pub update_bytes: u64,
    /// fsync and fdatasync calls on files of this type.
    pub syncs: u64,
}

/// What `workload analyze` reports for a trace. Ratios are fractions (0.25 = 25%); a ratio
/// over nothing (no writes, no measured update) is `None`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TraceSummary {
    pub ops: u64,
    pub threads: u64,
    pub span_ns: u64,
    pub files_written: u64,
    pub read_ops: u64,
    pub read_bytes: u64,
    pub write_ops: u64,
    /// MedFS "Vol".
    pub write_bytes: u64,
    pub small_file_write_bytes: u64,
    /// MedFS "Small".
    pub small_write_share: Option<f64>,
    pub update_write_ops: u64,
    pub update_bytes: u64,
    /// MedFS "UR".
    pub update_ratio: Option<f64>,
    /// Bytes written to files that existed before the trace (size unknown; counted as
    /// updates).
    pub preexisting_write_bytes: u64,
    /// MedFS "UD": mean changed share per update whose difference is known.
    pub update_difference: Option<f64>,
    /// Updates whose difference was measured on captured bytes.
    pub ud_measured_updates: u64,
    /// Updates whose difference was taken from a declared change ratio.
    pub ud_declared_updates: u64,
    /// Pages of captured bytes not kept because the content table was full.
    pub ud_pages_dropped: u64,
    /// Writes by what they carry.
    pub writes_with_bytes: u64,
    pub writes_with_class: u64,
    pub writes_unknown: u64,
    pub fsync_count: u64,
    pub fdatasync_count: u64,
    pub sync_count: u64,
    pub by_type: Vec<TypeRow>,
    /// Columns this trace cannot give (or gives only as a bound), each with why: what the
    /// capture format did not keep.
    pub not_computable: Vec<ColumnNote>,
}

/// A column of the summary that the trace cannot give, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ColumnNote {
    pub column: &'static str,
    pub reason: String,
}

struct Page {
    bytes: Box<[u8; PAGE_BYTES as usize]>,
    /// Bit `i % 64` of word `i / 64`: byte `i` has been captured.
    known: [u64; PAGE_BYTES as usize / 64],
}

impl Page {
    /// Stores `new` at `from`; returns how many of the bytes already known differ and how
    /// many were known. One known-word (64 bytes) at a time: whole words known or unknown
    /// (nearly all of them) are compared and copied as slices.
    fn store(&mut self, from: usize, new: &[u8]) -> (u64, u64) {
        let (mut changed, mut compared) = (0u64, 0u64);
        let mut at = 0;
        while at < new.len() {
            let slot = from + at;
            let (word, bit) = (slot / 64, slot % 64);
            let take = (64 - bit).min(new.len() - at);
            let mask = if take == 64 {
                u64::MAX
            } else {
                ((1u64 << take) - 1) << bit
            };
            let known = self.known[word] & mask;
            let (old, fresh) = (&mut self.bytes[slot..slot + take], &new[at..at + take]);
            if known == mask {
                compared += take as u64;
                changed += differing_bytes(old, fresh);
            } else if known != 0 {
                for (i, (a, b)) in old.iter().zip(fresh).enumerate() {
                    if known & (1 << (bit + i)) != 0 {
                        compared += 1;
                        changed += u64::from(a != b);
                    }
                }
            }
            old.copy_from_slice(fresh);
            self.known[word] |= mask;
            at += take;
        }
        (changed, compared)
    }
}

/// How many bytes of `a` and `b` (equal lengths) differ: eight at a time, a word's
/// nonzero bytes of `a ^ b` counted with one population count (the iterator form
/// compiled to two bytes a step).
fn differing_bytes(a: &[u8], b: &[u8]) -> u64 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let mut count = 0u64;
    let (wa, wb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail = wa
        .remainder()
        .iter()
        .zip(wb.remainder())
        .filter(|(x, y)| x != y)
        .count();
    for (x, y) in wa.zip(wb) {
        let v = u64::from_ne_bytes(x.try_into().expect("8 bytes"))
            ^ u64::from_ne_bytes(y.try_into().expect("8 bytes"));
        // A byte's high bit ends up set iff the byte is nonzero.
        let nonzero = (((v & LOW7) + LOW7) | v) & !LOW7;
        count += u64::from(nonzero.count_ones());
    }
    count + tail as u64
}

struct FileStats {
    max_size_bytes: u64,
    write_bytes: u64,
    /// Names the file has now (0 once unlinked).
    links: u32,
}

/// Takes `path`'s name away from its file; a file left with no name loses its kept bytes.
fn detach(
    ids: &mut BTreeMap<String, usize>,
    files: &mut [FileStats],
    content: &mut BTreeMap<(usize, u64), Page>,
    path: &str,
) {
    if let Some(id) = ids.remove(path) {
        let file = &mut files[id];
        file.links = file.links.saturating_sub(1);
        if file.links == 0 {
            drop_content(content, id, 0);
        }
    }
}

/// The summary of a trace built one operation at a time, in trace order: [`analyze`]
/// feeds it a whole trace; a recorder feeds it each call as it is made, so that a run
/// can report the summary without keeping the trace (and the bytes of its writes).
pub struct Analyzer {
    resolver: Resolver,
    ids: BTreeMap<String, usize>,
    files: Vec<FileStats>,
    content: BTreeMap<(usize, u64), Page>,
    typed: BTreeSet<(FileType, usize)>,
    rows: BTreeMap<FileType, TypeRow>,
    threads: BTreeSet<u32>,
    s: TraceSummary,
    ud_sum: f64,
    /// Times of the first and the latest operation.
    first_ns: Option<u64>,
    last_ns: u64,
}

impl fmt::Debug for Analyzer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Analyzer")
            .field("ops", &self.s.ops)
            .finish()
    }
}

impl Default for Analyzer {
    fn default() -> Self {
        Self::new()
    }
}

impl Analyzer {
    pub fn new() -> Self {
        let s = TraceSummary {
            ops: 0,
            threads: 0,
            span_ns: 0,
            files_written: 0,
            read_ops: 0,
            read_bytes: 0,
            write_ops: 0,
            write_bytes: 0,
            small_file_write_bytes: 0,
            small_write_share: None,
            update_write_ops: 0,
            update_bytes: 0,
            update_ratio: None,
            preexisting_write_bytes: 0,
            update_difference: None,
            ud_measured_updates: 0,
            ud_declared_updates: 0,
            ud_pages_dropped: 0,
            writes_with_bytes: 0,
            writes_with_class: 0,
            writes_unknown: 0,
            fsync_count: 0,
            fdatasync_count: 0,
            sync_count: 0,
            by_type: Vec::new(),
            not_computable: Vec::new(),
        };
        Analyzer {
            resolver: Resolver::new(),
            ids: BTreeMap::new(),
            files: Vec::new(),
            content: BTreeMap::new(),
            typed: BTreeSet::new(),
            rows: BTreeMap::new(),
            threads: BTreeSet::new(),
            s,
            ud_sum: 0.0,
            first_ns: None,
            last_ns: 0,
        }
    }

    /// Takes the trace's next operation (which must satisfy the fd state machine, as every
    /// parsed, imported or recorded trace does; the error names the operation's index
    /// otherwise). After an error the analyzer is spent: its summary would count part of
    /// the refused operation, so callers drop it (as [`analyze`] and the recorder do).
    pub fn op(&mut self, op: &FileOp) -> Result<(), FieldError> {
        let index = self.s.ops as usize;
        self.threads.insert(op.tid);
        self.first_ns.get_or_insert(op.time_ns);
        self.last_ns = op.time_ns;
        let effect = self.resolver.apply(op).map_err(|e| FieldError {
            field: e.field,
            message: format!(
                "operation {} ({}): {}",
                index + 1,
                op.kind.name(),
                e.message
            ),
        })?;
        self.s.ops += 1;
        match effect {
            Effect::Open {
                path,
                created,
                truncated,
            } => {
                if created {
                    // A new file under this name: what an unlinked one held is gone.
                    detach(&mut self.ids, &mut self.files, &mut self.content, &path);
                }
                let id = id_of(&mut self.ids, &mut self.files, &path)?;
                if truncated {
                    drop_content(&mut self.content, id, 0);
                }
            }
            Effect::Read { len_bytes, .. } => {
                self.s.read_ops += 1;
                self.s.read_bytes += len_bytes;
            }
            Effect::Write {
                path,
                offset_bytes,
                len_bytes,
                data,
                size_before_bytes,
                size_known,
            } => {
                let id = id_of(&mut self.ids, &mut self.files, &path)?;
                let file_type = FileType::of(&path);
                self.s.write_ops += 1;
                self.s.write_bytes += len_bytes;
                let end = offset_bytes + len_bytes;
                let update = if size_known {
                    size_before_bytes.min(end).saturating_sub(offset_bytes)
                } else {
                    self.s.preexisting_write_bytes += len_bytes;
                    len_bytes
                };
                if update > 0 {
                    self.s.update_write_ops += 1;
                    self.s.update_bytes += update;
                }
                let stats = &mut self.files[id];
                stats.write_bytes += len_bytes;
                stats.max_size_bytes = stats.max_size_bytes.max(size_before_bytes).max(end);
                match data {
                    Data::Unknown => self.s.writes_unknown += 1,
                    Data::Class { change_ratio, .. } => {
                        self.s.writes_with_class += 1;
                        if let (true, Some(ratio)) = (update > 0, change_ratio) {
                            self.ud_sum += ratio;
                            self.s.ud_declared_updates += 1;
                        }
                    }
                    Data::Bytes(bytes) => {
                        self.s.writes_with_bytes += 1;
                        let (changed, compared) =
                            store_bytes(&mut self.content, id, offset_bytes, bytes, &mut self.s);
                        if update > 0 && compared > 0 {
                            self.ud_sum += changed as f64 / compared as f64;
                            self.s.ud_measured_updates += 1;
                        }
                    }
                }
                if self.typed.insert((file_type, id)) {
                    row(&mut self.rows, file_type).files += 1;
                }
                let r = row(&mut self.rows, file_type);
                r.write_ops += 1;
                r.write_bytes += len_bytes;
                r.update_bytes += update;
            }
            Effect::Sync { path, data_only } => match path {
                None => self.s.sync_count += 1,
                Some(path) => {
                    if data_only {
                        self.s.fdatasync_count += 1;
                    } else {
                        self.s.fsync_count += 1;
                    }
                    row(&mut self.rows, FileType::of(&path)).syncs += 1;
                }
            },
            Effect::Truncate { path, len_bytes } => {
                let id = id_of(&mut self.ids, &mut self.files, &path)?;
                drop_content(&mut self.content, id, len_bytes);
                let stats = &mut self.files[id];
                stats.max_size_bytes = stats.max_size_bytes.max(len_bytes);
            }
            Effect::Unlink { path } => {
                detach(&mut self.ids, &mut self.files, &mut self.content, &path)
            }
            Effect::Rename { from, to } => {
                let moved = self.ids.remove(&from);
                detach(&mut self.ids, &mut self.files, &mut self.content, &to);
                if let Some(id) = moved {
                    self.ids.insert(to, id);
                }
            }
            Effect::Link { from, to } => {
                if let Some(&id) = self.ids.get(&from) {
                    detach(&mut self.ids, &mut self.files, &mut self.content, &to);
                    self.ids.insert(to, id);
                    self.files[id].links += 1;
                }
            }
            Effect::Other => {}
        }
        Ok(())
    }

    /// The summary of every operation taken.
    pub fn finish(self) -> TraceSummary {
        let mut s = self.s;
        s.threads = self.threads.len() as u64;
        s.span_ns = self
            .last_ns
            .saturating_sub(self.first_ns.unwrap_or(self.last_ns));
        s.files_written = self.files.iter().filter(|f| f.write_bytes > 0).count() as u64;
        s.small_file_write_bytes = self
            .files
            .iter()
            .filter(|f| f.max_size_bytes <= SMALL_FILE_MAX_BYTES)
            .map(|f| f.write_bytes)
            .sum();
        let share = |part: u64, whole: u64| (whole > 0).then(|| part as f64 / whole as f64);
        s.small_write_share = share(s.small_file_write_bytes, s.write_bytes);
        s.update_ratio = share(s.update_bytes, s.write_bytes);
        let ud_count = s.ud_measured_updates + s.ud_declared_updates;
        s.update_difference = (ud_count > 0).then(|| self.ud_sum / ud_count as f64);
        let total = s.write_bytes;
        s.by_type = self
            .rows
            .into_values()
            .map(|mut r| {
                r.write_share = share(r.write_bytes, total).unwrap_or(0.0);
                r
            })
            .collect();
        s.not_computable = not_computable(&s);
        s
    }
}

/// The id of the file named `path`; a new one for a name first seen.
fn id_of(
    ids: &mut BTreeMap<String, usize>,
    files: &mut Vec<FileStats>,
    path: &str,
) -> Result<usize, FieldError> {
    if let Some(&id) = ids.get(path) {
        return Ok(id);
    }
    if files.len() >= FILES_MAX {
        return Err(FieldError::new(
            "path",
            format!("more than {FILES_MAX} files"),
        ));
    }
    files.push(FileStats {
        max_size_bytes: 0,
        write_bytes: 0,
        links: 1,
    });
    ids.insert(path.to_string(), files.len() - 1);
    Ok(files.len() - 1)
}

/// Summarises a trace (which must satisfy the fd state machine, as every parsed or
/// imported trace does; the error names the operation's index otherwise).
pub fn analyze(trace: &FileTrace) -> Result<TraceSummary, FieldError> {
    let mut analyzer = Analyzer::new();
    for op in &trace.ops {
        analyzer.op(op)?;
    }
    Ok(analyzer.finish())
}

/// The columns `s` cannot give and why, from what its writes carry and its names.
fn not_computable(s: &TraceSummary) -> Vec<ColumnNote> {
    let mut notes = Vec::new();
    let updates = s.update_write_ops;
    if updates > 0 && s.update_difference.is_none() {
        notes.push(ColumnNote {
            column: "UD",
            reason: format!(
                "update writes: {updates}, none with its bytes or a change ratio (MobiGen \
                 keeps no data; strace keeps a write's bytes only when -s is at least its \
                 length)"
            ),
        });
    }
    let unknown = s
        .by_type
        .iter()
        .find(|r| r.file_type == FileType::Unknown && r.write_bytes > 0);
    if let Some(r) = unknown {
        let reason = format!(
            "{} of the written bytes went to {} files whose names the capture lost (MobiGen \
             cuts a writable open's path to its first two components): their type is \
             unknown and files sharing an fd number are merged, so Small and the file-type \
             breakdown are bounds",
            percent(Some(r.write_share)),
            r.files
        );
        notes.push(ColumnNote {
            column: "Small, by file type",
            reason,
        });
    }
    if s.preexisting_write_bytes > 0 {
        notes.push(ColumnNote {
            column: "UR",
            reason: format!(
                "{} written bytes went to files that existed before the trace (size \
                 unknown), all counted as updates: UR is an upper bound",
                s.preexisting_write_bytes
            ),
        });
    }
    notes
}

fn row(rows: &mut BTreeMap<FileType, TypeRow>, file_type: FileType) -> &mut TypeRow {
    rows.entry(file_type).or_insert(TypeRow {
        file_type,
        files: 0,
        write_ops: 0,
        write_bytes: 0,
        write_share: 0.0,
        update_bytes: 0,
        syncs: 0,
    })
}

/// Forgets the captured bytes of file `id` from byte `from` on.
fn drop_content(content: &mut BTreeMap<(usize, u64), Page>, id: usize, from: u64) {
    let first_whole = from.div_ceil(PAGE_BYTES);
    let doomed: Vec<(usize, u64)> = content
        .range((id, first_whole)..=(id, u64::MAX))
        .map(|(&key, _)| key)
        .collect();
    for key in doomed {
        content.remove(&key);
    }
    if !from.is_multiple_of(PAGE_BYTES) {
        if let Some(page) = content.get_mut(&(id, from / PAGE_BYTES)) {
            // Bytes past the new end read as zeros if the file grows again.
            for at in (from % PAGE_BYTES) as usize..PAGE_BYTES as usize {
                page.bytes[at] = 0;
                page.known[at / 64] |= 1 << (at % 64);
            }
        }
    }
}

/// Stores captured bytes, returning how many of the bytes already known differ and how
/// many were known.
fn store_bytes(
    content: &mut BTreeMap<(usize, u64), Page>,
    id: usize,
    offset: u64,
    bytes: &[u8],
    summary: &mut TraceSummary,
) -> (u64, u64) {
    let (mut changed, mut compared) = (0, 0);
    let mut at = 0usize;
    while at < bytes.len() {
        let position = offset + at as u64;
        let (page_index, in_page) = (position / PAGE_BYTES, (position % PAGE_BYTES) as usize);
        let take = (PAGE_BYTES as usize - in_page).min(bytes.len() - at);
        let full = content.len() >= CONTENT_PAGES_MAX;
        let page = match content.entry((id, page_index)) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(_) if full => {
                summary.ud_pages_dropped += 1;
                at += take;
                continue;
            }
            std::collections::btree_map::Entry::Vacant(e) => e.insert(Page {
                bytes: Box::new([0; PAGE_BYTES as usize]),
                known: [0; PAGE_BYTES as usize / 64],
            }),
        };
        let (c, k) = page.store(in_page, &bytes[at..at + take]);
        changed += c;
        compared += k;
        at += take;
    }
    (changed, compared)
}

fn percent(ratio: Option<f64>) -> String {
    ratio.map_or_else(|| "-".to_string(), |r| format!("{:.1}%", r * 100.0))
}

impl TraceSummary {
    /// The summary as a terminal table (MB = 10^6 bytes, as in the MedFS table).
    pub fn render(&self) -> String {
        let mut out = String::new();
        let mb = |bytes: u64| bytes as f64 / 1e6;
        let _ = writeln!(
            out,
            "{} ops from {} threads over {:.3} s; {} files written",
            self.ops,
            self.threads,
            self.span_ns as f64 / 1e9,
            self.files_written
        );
        let _ = writeln!(
            out,
            "{:<26} {:>10.3} MB  ({} bytes in {} writes; reads {:.3} MB in {})",
            "Vol (written)",
            mb(self.write_bytes),
            self.write_bytes,
            self.write_ops,
            mb(self.read_bytes),
            self.read_ops
        );
        let _ = writeln!(
            out,
            "{:<26} {:>10}     (to files <= 923 x 4 KiB = {} bytes)",
            "Small (small-file writes)",
            percent(self.small_write_share),
            SMALL_FILE_MAX_BYTES
        );
        let _ = writeln!(
            out,
            "{:<26} {:>10}     ({} update writes; {} bytes to files older than the trace)",
            "UR (update ratio)",
            percent(self.update_ratio),
            self.update_write_ops,
            self.preexisting_write_bytes
        );
        let _ = writeln!(
            out,
            "{:<26} {:>10}     ({} updates measured on bytes, {} declared)",
            "UD (update difference)",
            percent(self.update_difference),
            self.ud_measured_updates,
            self.ud_declared_updates
        );
        let _ = writeln!(
            out,
            "{:<26} {:>10}     (fdatasync {}, sync {})",
            "fsync", self.fsync_count, self.fdatasync_count, self.sync_count
        );
        let _ = writeln!(
            out,
            "{:<26} {:>10}     (class {}, unknown {})",
            "writes with bytes",
            self.writes_with_bytes,
            self.writes_with_class,
            self.writes_unknown
        );
        let _ = writeln!(
            out,
            "{:<15} {:>6} {:>8} {:>12} {:>7} {:>7} {:>6}",
            "file type", "files", "writes", "bytes", "share", "UR", "syncs"
        );
        for r in &self.by_type {
            let ur = (r.write_bytes > 0).then(|| r.update_bytes as f64 / r.write_bytes as f64);
            let _ = writeln!(
                out,
                "{:<15} {:>6} {:>8} {:>12} {:>7} {:>7} {:>6}",
                r.file_type.name(),
                r.files,
                r.write_ops,
                r.write_bytes,
                percent(Some(r.write_share)),
                percent(ur),
                r.syncs
            );
        }
        for note in &self.not_computable {
            let _ = writeln!(out, "cannot compute {}: {}", note.column, note.reason);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The plain per-byte form `Page::store` must match.
    fn store_bytewise(page: &mut Page, from: usize, new: &[u8]) -> (u64, u64) {
        let (mut changed, mut compared) = (0, 0);
        for (i, &b) in new.iter().enumerate() {
            let slot = from + i;
            let bit = 1u64 << (slot % 64);
            if page.known[slot / 64] & bit != 0 {
                compared += 1;
                changed += u64::from(page.bytes[slot] != b);
            }
            page.bytes[slot] = b;
            page.known[slot / 64] |= bit;
        }
        (changed, compared)
    }

    fn empty() -> Page {
        Page {
            bytes: Box::new([0; PAGE_BYTES as usize]),
            known: [0; PAGE_BYTES as usize / 64],
        }
    }

    proptest! {
        #[test]
        fn differing_bytes_counts_what_a_byte_scan_counts(
            pairs in proptest::collection::vec((0u8..4, 0u8..4), 0..200)
        ) {
            let (a, b): (Vec<u8>, Vec<u8>) = pairs.into_iter().unzip();
            // Values 0-3 and 128-131: equal bytes, and bytes differing only in the high bit.
            let b: Vec<u8> = b.iter().enumerate().map(|(i, &v)| v | (((i % 5 == 0) as u8) << 7)).collect();
            let want = a.iter().zip(&b).filter(|(x, y)| x != y).count() as u64;
            prop_assert_eq!(differing_bytes(&a, &b), want);
        }

        #[test]
        fn word_at_a_time_store_matches_bytewise(
            writes in proptest::collection::vec((0usize..4096, 1usize..700, 0u8..4), 1..12)
        ) {
            let (mut fast, mut slow) = (empty(), empty());
            for (from, len, value) in writes {
                let len = len.min(4096 - from);
                // Few distinct values, so rewrites both match and differ.
                let new: Vec<u8> = (0..len).map(|i| value.wrapping_add((i % 3) as u8)).collect();
                prop_assert_eq!(fast.store(from, &new), store_bytewise(&mut slow, from, &new));
                prop_assert_eq!(&fast.bytes[..], &slow.bytes[..]);
                prop_assert_eq!(fast.known, slow.known);
            }
        }
    }
}
