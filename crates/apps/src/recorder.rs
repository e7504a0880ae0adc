//! Recording every file call as a file-level trace (`flashstack_workload::FileOp`).

use std::collections::{BTreeMap, BTreeSet};

use flashstack_sqlvfs::{FileApi, FileError, FileId, Nanos, OpenFlags};
use flashstack_workload::{
    class_for_path, class_for_prefix, Access, Analyzer, Data, FieldError, FileOp, FileTrace,
    OpKind, OpenFlags as TraceFlags, TraceSummary, INLINE_DATA_MAX_BYTES,
};
use serde::{Deserialize, Serialize};

/// Most paths whose existence the recorder remembers (a cache; see `learn_owned`).
const EXISTING_MAX: usize = 1 << 16;

/// Limits of a [`Recorder`]: a trace lives in memory, so both its length and the bytes it
/// captures are bounded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecorderConfig {
    /// Most operations one recording holds; further calls fail with
    /// [`FileError::TableFull`] (a silently shortened trace would mislead every figure).
    pub max_ops: usize,
    /// Most write bytes captured inline; later writes carry their content class instead
    /// (the class their path or first bytes suggest), so the update difference of those
    /// writes is not measured.
    pub max_captured_bytes: u64,
    /// Thread number written on every operation.
    pub tid: u32,
    /// Keep the recorded operations (and the bytes of their writes) to hand back at
    /// [`Recorder::stop`]. Off, the recording is only analysed as it is made (the same
    /// summary, [`Recorder::stop`] returns it without a trace): a run that does not save
    /// its trace then holds none of the bytes its writes carried.
    #[serde(default = "keep_ops_default")]
    pub keep_ops: bool,
}

fn keep_ops_default() -> bool {
    true
}

impl Default for RecorderConfig {
    fn default() -> Self {
        Self {
            max_ops: 4_000_000,
            max_captured_bytes: 1 << 30,
            tid: 1,
            keep_ops: true,
        }
    }
}

/// What a handle the recorder has seen opened refers to.
#[derive(Clone, Debug)]
struct Handle {
    fd: u32,
    path: String,
    read_only: bool,
    delete_on_close: bool,
}

/// A [`FileApi`] wrapper that records every call it forwards while recording is on.
///
/// Mapping: `open` → `open` (with `creat` only when the file did not exist, so the
/// analysis knows which files are older than the trace), `close` → `close`, `read_at` →
/// `pread` (bytes actually read), `write_at` → `pwrite` with the captured bytes, `truncate`
/// → `ftruncate`, `size` → `fstat`, `sync` → `fsync`/`fdatasync`, `delete` → `unlink`
/// (plus `sync` when the directory is synced, as the mount recorder does), `exists` →
/// `stat`, `rename` → `rename`, `mkdir` → `mkdir`, `atomic_commit` → `fsync` (the
/// fsync it ends with; `atomic_begin`/`atomic_abort` are ioctls a trace does not
/// carry). A delete-on-close handle's `close` is followed by the `unlink` the close
/// performs. Failed calls are not recorded (as the
/// strace importer leaves them out). Times are the calls' issue times, relative to the
/// start of the recording. Fds are the lowest free numbers from 3, as a kernel gives them.
///
/// Handles opened before recording starts are tracked too; [`start`](Self::start) opens
/// them in the trace (without `creat`), so that the trace satisfies the fd state machine.
#[derive(Debug)]
pub struct Recorder<F> {
    inner: F,
    config: RecorderConfig,
    handles: BTreeMap<FileId, Handle>,
    used_fds: BTreeSet<u32>,
    /// Paths known to exist (learned from calls), so `open` asks the file system at most once.
    existing: BTreeMap<String, bool>,
    recording: bool,
    start_ns: Nanos,
    last_ns: u64,
    captured_bytes: u64,
    trace: Vec<FileOp>,
    /// Operations recorded so far (kept in `trace` or not).
    op_count: usize,
    /// The recording's summary, built as operations are recorded.
    analyzer: Option<Analyzer>,
    /// The first operation the analysis refused (the summary is then not given).
    analysis_error: Option<FieldError>,
}

/// What a recording yields: its trace (when [`RecorderConfig::keep_ops`]) and its
/// summary, or the analysis's error.
#[derive(Debug)]
pub struct Recording {
    pub trace: Option<FileTrace>,
    pub summary: Result<TraceSummary, FieldError>,
}

impl<F: FileApi> Recorder<F> {
    /// Wraps `inner`; recording is off until [`start`](Self::start).
    pub fn new(inner: F, config: RecorderConfig) -> Self {
        Self {
            inner,
            config,
            handles: BTreeMap::new(),
            used_fds: BTreeSet::new(),
            existing: BTreeMap::new(),
            recording: false,
            start_ns: 0,
            last_ns: 0,
            captured_bytes: 0,
            trace: Vec::new(),
            op_count: 0,
            analyzer: None,
            analysis_error: None,
        }
    }

    /// The wrapped file system.
    pub fn inner(&self) -> &F {
        &self.inner
    }

    /// Starts a new recording at virtual time `now`: the trace restarts empty, and every
    /// handle open now is opened in it first.
    pub fn start(&mut self, now: Nanos) -> Result<(), FileError> {
        self.trace.clear();
        self.op_count = 0;
        self.analyzer = Some(Analyzer::new());
        self.analysis_error = None;
        self.captured_bytes = 0;
        self.recording = true;
        self.start_ns = now;
        self.last_ns = 0;
        let open: Vec<Handle> = self.handles.values().cloned().collect();
        for h in open {
            let flags = TraceFlags {
                access: if h.read_only {
                    Access::Rdonly
                } else {
                    Access::Rdwr
                },
                ..TraceFlags::default()
            };
            self.push(
                now,
                OpKind::Open {
                    fd: h.fd,
                    path: h.path,
                    flags,
                },
            )?;
        }
        Ok(())
    }

    /// Stops recording; returns the trace (if kept) and its summary.
    pub fn stop(&mut self) -> Recording {
        self.recording = false;
        let ops = std::mem::take(&mut self.trace);
        let summary = match (self.analysis_error.take(), self.analyzer.take()) {
            (Some(e), _) => Err(e),
            (None, Some(a)) => Ok(a.finish()),
            (None, None) => Ok(Analyzer::new().finish()),
        };
        Recording {
            trace: self.config.keep_ops.then_some(FileTrace { ops }),
            summary,
        }
    }

    /// Whether calls are being recorded.
    pub fn recording(&self) -> bool {
        self.recording
    }

    /// Operations recorded so far (none kept without [`RecorderConfig::keep_ops`]).
    pub fn ops(&self) -> &[FileOp] {
        &self.trace
    }

    fn push(&mut self, now: Nanos, kind: OpKind) -> Result<(), FileError> {
        if !self.recording {
            return Ok(());
        }
        if self.op_count >= self.config.max_ops {
            return Err(FileError::TableFull {
                table: "recorded operations",
                limit: self.config.max_ops,
            });
        }
        // One clock drives every call, so times only grow; the max guards a caller that
        // issues a call "in the past" from breaking the format's ordering rule.
        let time_ns = now.saturating_sub(self.start_ns).max(self.last_ns);
        self.last_ns = time_ns;
        let op = FileOp {
            time_ns,
            tid: self.config.tid,
            kind,
        };
        self.op_count += 1;
        if let Some(analyzer) = self.analyzer.as_mut() {
            if let Err(e) = analyzer.op(&op) {
                self.analysis_error = Some(e);
                self.analyzer = None;
            }
        }
        if self.config.keep_ops {
            self.trace.push(op);
        }
        Ok(())
    }

    /// Refuses a call before it runs when the trace could not hold it.
    fn room(&self, ops: usize) -> Result<(), FileError> {
        if self.recording && self.op_count + ops > self.config.max_ops {
            return Err(FileError::TableFull {
                table: "recorded operations",
                limit: self.config.max_ops,
            });
        }
        Ok(())
    }

    fn lowest_free_fd(&self) -> u32 {
        (3..)
            .find(|fd| !self.used_fds.contains(fd))
            .unwrap_or(u32::MAX)
    }

    fn handle(&self, file: FileId) -> Result<&Handle, FileError> {
        self.handles.get(&file).ok_or(FileError::BadHandle(file))
    }

    fn exists_now(&mut self, now: Nanos, path: &str) -> Result<bool, FileError> {
        if let Some(&known) = self.existing.get(path) {
            return Ok(known);
        }
        if !self.recording {
            // Only a recorded `open` needs to know; unrecorded ones skip the probe.
            return Ok(true);
        }
        // Asked at the open's own time and not charged: the probe is the recorder's
        // instrumentation, not something the app does.
        let (exists, _) = self.inner.exists(now, path)?;
        Ok(exists)
    }

    fn learn(&mut self, path: &str, exists: bool) {
        self.learn_owned(path.to_owned(), exists);
    }

    /// Remembers whether `path` exists; the table is a cache, so it is emptied rather than
    /// allowed to grow without bound.
    fn learn_owned(&mut self, path: String, exists: bool) {
        if self.existing.len() >= EXISTING_MAX {
            self.existing.clear();
        }
        self.existing.insert(path, exists);
    }

    fn data_of(&mut self, path: &str, data: &[u8]) -> Data {
        let len = data.len() as u64;
        if self.captured_bytes + len <= self.config.max_captured_bytes {
            self.captured_bytes += len;
            return Data::Bytes(data.to_vec());
        }
        match class_for_prefix(data).or_else(|| class_for_path(path)) {
            Some(class) => Data::Class {
                class,
                change_ratio: None,
            },
            None => Data::Unknown,
        }
    }
}

impl<F: FileApi> FileApi for Recorder<F> {
    fn user_input(&mut self, now: Nanos, input: flashstack_sqlvfs::UserInput) {
        self.inner.user_input(now, input);
    }
    fn open(
        &mut self,
        now: Nanos,
        path: &str,
        flags: OpenFlags,
    ) -> Result<(FileId, Nanos), FileError> {
        self.room(1)?;
        let existed = self.exists_now(now, path)?;
        let (id, done) = self.inner.open(now, path, flags)?;
        let fd = self.lowest_free_fd();
        self.used_fds.insert(fd);
        self.learn(path, true);
        self.handles.insert(
            id,
            Handle {
                fd,
                path: path.to_owned(),
                read_only: flags.read_only,
                delete_on_close: flags.delete_on_close,
            },
        );
        let created = flags.create && !existed;
        let trace_flags = TraceFlags {
            access: if flags.read_only {
                Access::Rdonly
            } else {
                Access::Rdwr
            },
            create: created,
            exclusive: created && flags.exclusive,
            ..TraceFlags::default()
        };
        self.push(
            now,
            OpKind::Open {
                fd,
                path: path.to_owned(),
                flags: trace_flags,
            },
        )?;
        Ok((id, done))
    }

    fn close(&mut self, now: Nanos, file: FileId) -> Result<Nanos, FileError> {
        self.room(2)?;
        let h = self.handle(file)?.clone();
        let done = self.inner.close(now, file)?;
        self.handles.remove(&file);
        self.used_fds.remove(&h.fd);
        self.push(now, OpKind::Close { fd: h.fd })?;
        let last_handle = !self.handles.values().any(|o| o.path == h.path);
        if h.delete_on_close && last_handle {
            self.learn_owned(h.path.clone(), false);
            self.push(now, OpKind::Unlink { path: h.path })?;
        }
        Ok(done)
    }

    fn read_at(
        &mut self,
        now: Nanos,
        file: FileId,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<(usize, Nanos), FileError> {
        self.room(1)?;
        let fd = self.handle(file)?.fd;
        let (n, done) = self.inner.read_at(now, file, offset, buf)?;
        self.push(
            now,
            OpKind::Pread {
                fd,
                offset_bytes: offset,
                len_bytes: n as u64,
            },
        )?;
        Ok((n, done))
    }

    fn write_at(
        &mut self,
        now: Nanos,
        file: FileId,
        offset: u64,
        data: &[u8],
    ) -> Result<Nanos, FileError> {
        let pieces = data.len().div_ceil(INLINE_DATA_MAX_BYTES).max(1);
        self.room(pieces)?;
        let h = self.handle(file)?.clone();
        let done = self.inner.write_at(now, file, offset, data)?;
        if self.recording {
            // The format carries at most 4 MiB inline per line: split larger writes.
            let mut at = 0usize;
            for chunk in data.chunks(INLINE_DATA_MAX_BYTES) {
                let data = self.data_of(&h.path, chunk);
                self.push(
                    now,
                    OpKind::Pwrite {
                        fd: h.fd,
                        offset_bytes: offset + at as u64,
                        len_bytes: chunk.len() as u64,
                        data,
                    },
                )?;
                at += chunk.len();
            }
        }
        Ok(done)
    }

    fn truncate(&mut self, now: Nanos, file: FileId, size_bytes: u64) -> Result<Nanos, FileError> {
        self.room(1)?;
        let fd = self.handle(file)?.fd;
        let done = self.inner.truncate(now, file, size_bytes)?;
        self.push(
            now,
            OpKind::Ftruncate {
                fd,
                len_bytes: size_bytes,
            },
        )?;
        Ok(done)
    }

    fn size(&mut self, now: Nanos, file: FileId) -> Result<(u64, Nanos), FileError> {
        self.room(1)?;
        let fd = self.handle(file)?.fd;
        let r = self.inner.size(now, file)?;
        self.push(
            now,
            OpKind::Fstat {
                fd,
                size_bytes: None,
            },
        )?;
        Ok(r)
    }

    fn sync(&mut self, now: Nanos, file: FileId, data_only: bool) -> Result<Nanos, FileError> {
        self.room(1)?;
        let fd = self.handle(file)?.fd;
        let done = self.inner.sync(now, file, data_only)?;
        let kind = if data_only {
            OpKind::Fdatasync { fd }
        } else {
            OpKind::Fsync { fd }
        };
        self.push(now, kind)?;
        Ok(done)
    }

    fn atomic_write_supported(&mut self) -> bool {
        self.inner.atomic_write_supported()
    }

    /// Not in the trace: a file-level trace has no ioctls (the staged writes are).
    fn atomic_begin(&mut self, now: Nanos, file: FileId) -> Result<Nanos, FileError> {
        self.inner.atomic_begin(now, file)
    }

    /// Recorded as the `fsync` the commit ends with.
    fn atomic_commit(&mut self, now: Nanos, file: FileId) -> Result<Nanos, FileError> {
        self.room(1)?;
        let fd = self.handle(file)?.fd;
        let done = self.inner.atomic_commit(now, file)?;
        self.push(now, OpKind::Fsync { fd })?;
        Ok(done)
    }

    /// Not in the trace (the writes it drops stay in it).
    fn atomic_abort(&mut self, now: Nanos, file: FileId) -> Result<Nanos, FileError> {
        self.inner.atomic_abort(now, file)
    }

    fn delete(&mut self, now: Nanos, path: &str, sync_dir: bool) -> Result<Nanos, FileError> {
        self.room(2)?;
        let done = self.inner.delete(now, path, sync_dir)?;
        self.learn_owned(path.to_owned(), false);
        self.push(
            now,
            OpKind::Unlink {
                path: path.to_owned(),
            },
        )?;
        if sync_dir {
            self.push(now, OpKind::Sync)?;
        }
        Ok(done)
    }

    fn exists(&mut self, now: Nanos, path: &str) -> Result<(bool, Nanos), FileError> {
        self.room(1)?;
        let (exists, done) = self.inner.exists(now, path)?;
        self.learn_owned(path.to_owned(), exists);
        self.push(
            now,
            OpKind::Stat {
                path: path.to_owned(),
                size_bytes: None,
            },
        )?;
        Ok((exists, done))
    }

    fn rename(&mut self, now: Nanos, from: &str, to: &str) -> Result<Nanos, FileError> {
        self.room(1)?;
        let done = self.inner.rename(now, from, to)?;
        self.learn_owned(from.to_owned(), false);
        self.learn_owned(to.to_owned(), true);
        for h in self.handles.values_mut() {
            if h.path == from {
                h.path = to.to_owned();
            }
        }
        self.push(
            now,
            OpKind::Rename {
                from: from.to_owned(),
                to: to.to_owned(),
            },
        )?;
        Ok(done)
    }

    fn mkdir(&mut self, now: Nanos, path: &str) -> Result<Nanos, FileError> {
        self.room(1)?;
        let done = self.inner.mkdir(now, path)?;
        self.push(
            now,
            OpKind::Mkdir {
                path: path.to_owned(),
            },
        )?;
        Ok(done)
    }

    /// Recorded as `sync`: the format's fds name files, and a directory fsync makes names
    /// durable as a `sync` does.
    fn sync_dir(&mut self, now: Nanos, path: &str) -> Result<Nanos, FileError> {
        self.room(1)?;
        let done = self.inner.sync_dir(now, path)?;
        self.push(now, OpKind::Sync)?;
        Ok(done)
    }
}

/// A boxed file system as a sized [`FileApi`], so the runner can wrap any
/// `Box<dyn FileApi>` (MemFs, the assembled stack) in a [`Recorder`].
pub struct BoxedApi(pub Box<dyn FileApi>);

impl std::fmt::Debug for BoxedApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BoxedApi")
    }
}

impl FileApi for BoxedApi {
    fn user_input(&mut self, now: Nanos, input: flashstack_sqlvfs::UserInput) {
        self.0.user_input(now, input);
    }
    fn open(
        &mut self,
        now: Nanos,
        path: &str,
        flags: OpenFlags,
    ) -> Result<(FileId, Nanos), FileError> {
        self.0.open(now, path, flags)
    }
    fn close(&mut self, now: Nanos, file: FileId) -> Result<Nanos, FileError> {
        self.0.close(now, file)
    }
    fn read_at(
        &mut self,
        now: Nanos,
        file: FileId,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<(usize, Nanos), FileError> {
        self.0.read_at(now, file, offset, buf)
    }
    fn write_at(
        &mut self,
        now: Nanos,
        file: FileId,
        offset: u64,
        data: &[u8],
    ) -> Result<Nanos, FileError> {
        self.0.write_at(now, file, offset, data)
    }
    fn truncate(&mut self, now: Nanos, file: FileId, size_bytes: u64) -> Result<Nanos, FileError> {
        self.0.truncate(now, file, size_bytes)
    }
    fn size(&mut self, now: Nanos, file: FileId) -> Result<(u64, Nanos), FileError> {
        self.0.size(now, file)
    }
    fn sync(&mut self, now: Nanos, file: FileId, data_only: bool) -> Result<Nanos, FileError> {
        self.0.sync(now, file, data_only)
    }
    fn delete(&mut self, now: Nanos, path: &str, sync_dir: bool) -> Result<Nanos, FileError> {
        self.0.delete(now, path, sync_dir)
    }
    fn exists(&mut self, now: Nanos, path: &str) -> Result<(bool, Nanos), FileError> {
        self.0.exists(now, path)
    }
    fn rename(&mut self, now: Nanos, from: &str, to: &str) -> Result<Nanos, FileError> {
        self.0.rename(now, from, to)
    }
    fn mkdir(&mut self, now: Nanos, path: &str) -> Result<Nanos, FileError> {
        self.0.mkdir(now, path)
    }
    fn sync_dir(&mut self, now: Nanos, path: &str) -> Result<Nanos, FileError> {
        self.0.sync_dir(now, path)
    }
    fn atomic_write_supported(&mut self) -> bool {
        self.0.atomic_write_supported()
    }
    fn atomic_begin(&mut self, now: Nanos, file: FileId) -> Result<Nanos, FileError> {
        self.0.atomic_begin(now, file)
    }
    fn atomic_commit(&mut self, now: Nanos, file: FileId) -> Result<Nanos, FileError> {
        self.0.atomic_commit(now, file)
    }
    fn atomic_abort(&mut self, now: Nanos, file: FileId) -> Result<Nanos, FileError> {
        self.0.atomic_abort(now, file)
    }
}
