//! An in-memory [`FileApi`] for tests: records every call and simulates power cuts.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use serde::{Deserialize, Serialize};

use crate::api::{FileApi, FileError, FileId, Nanos, OpenFlags};
use crate::rng::SplitMix64;

/// The operation of one logged call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CallOp {
    /// `open`.
    Open,
    /// `close`.
    Close,
    /// `read_at`.
    Read,
    /// `write_at`.
    Write,
    /// `truncate` (offset = new size).
    Truncate,
    /// `size`.
    Size,
    /// `sync(data_only = false)`: fsync.
    Fsync,
    /// `sync(data_only = true)`: fdatasync.
    Fdatasync,
    /// `delete` (offset 1 when the directory is synced).
    Delete,
    /// `exists`.
    Exists,
    /// `rename` (`path` is the old name).
    Rename,
    /// `mkdir`.
    Mkdir,
    /// `atomic_begin`.
    AtomicBegin,
    /// `atomic_commit`.
    AtomicCommit,
    /// `atomic_abort`.
    AtomicAbort,
}

/// One logged file-level call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallRecord {
    /// Virtual time the call was issued.
    pub start_ns: Nanos,
    /// Virtual time it completed.
    pub done_ns: Nanos,
    /// What it was.
    pub op: CallOp,
    /// The file's name.
    pub path: String,
    /// Byte offset (or new size for `Truncate`).
    pub offset: u64,
    /// Bytes moved.
    pub len: u64,
}

/// Costs and limits of the in-memory file system.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemFsConfig {
    /// Fixed cost of every call.
    pub call_ns: Nanos,
    /// Cost per 4 KiB read or written (rounded up).
    pub per_4k_ns: Nanos,
    /// Cost of an fsync.
    pub fsync_ns: Nanos,
    /// Cost of an fdatasync.
    pub fdatasync_ns: Nanos,
    /// Largest file.
    pub max_file_bytes: u64,
    /// Most files (named or open).
    pub max_files: usize,
    /// Most logged calls; later calls fail with [`FileError::TableFull`].
    pub max_log_entries: usize,
    /// Offers atomic writes (F2FS's atomic write feature, which Android's SQLite uses as
    /// `SQLITE_IOCAP_BATCH_ATOMIC`); off by default.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub atomic_write: bool,
}

impl Default for MemFsConfig {
    fn default() -> Self {
        Self {
            call_ns: 2_000,
            per_4k_ns: 1_000,
            fsync_ns: 1_000_000,
            fdatasync_ns: 800_000,
            max_file_bytes: 1 << 30,
            max_files: 4_096,
            max_log_entries: 4_000_000,
            atomic_write: false,
        }
    }
}

#[derive(Debug, Clone)]
enum Pending {
    Write { offset: u64, data: Vec<u8> },
    Truncate(u64),
}

#[derive(Debug, Clone, Default)]
struct Inode {
    data: Vec<u8>,
    durable: Vec<u8>,
    pending: Vec<Pending>,
    /// An atomic write in progress: its changes (applied to `data`, not in `pending`).
    atomic: Option<Atomic>,
}

/// The changes of an atomic write: to make durable at commit, and to undo at abort.
#[derive(Debug, Clone, Default)]
struct Atomic {
    staged: Vec<Pending>,
    /// (offset, bytes overwritten there, length before the change), newest last.
    undo: Vec<(usize, Vec<u8>, usize)>,
}

impl Inode {
    /// Writes `bytes` at `offset`, staged if an atomic write is in progress.
    fn write(&mut self, offset: u64, bytes: &[u8]) {
        if let Some(a) = &mut self.atomic {
            let off = offset as usize;
            let end = (off + bytes.len()).min(self.data.len()).max(off);
            let old = self.data.get(off..end).unwrap_or_default().to_vec();
            a.undo.push((off, old, self.data.len()));
            a.staged.push(Pending::Write {
                offset,
                data: bytes.to_vec(),
            });
        } else {
            self.pending.push(Pending::Write {
                offset,
                data: bytes.to_vec(),
            });
        }
        write_into(&mut self.data, offset, bytes);
    }

    /// Sets the size, staged if an atomic write is in progress.
    fn truncate(&mut self, size: u64) {
        if let Some(a) = &mut self.atomic {
            let cut = (size as usize).min(self.data.len());
            a.undo
                .push((cut, self.data[cut..].to_vec(), self.data.len()));
            a.staged.push(Pending::Truncate(size));
        } else {
            self.pending.push(Pending::Truncate(size));
        }
        self.data.resize(size as usize, 0);
    }

    /// Undoes the staged changes of an atomic write in progress, if any, and ends it.
    fn abort_atomic(&mut self) {
        if let Some(atomic) = self.atomic.take() {
            for (offset, old, len) in atomic.undo.into_iter().rev() {
                write_into(&mut self.data, offset as u64, &old);
                self.data.resize(len, 0);
            }
        }
    }

    /// The durable copy catches up by the unsynced (not staged) changes.
    fn settle(&mut self) {
        for p in self.pending.drain(..) {
            apply(&mut self.durable, p);
        }
    }
}

fn apply(data: &mut Vec<u8>, p: Pending) {
    match p {
        Pending::Write { offset, data: d } => write_into(data, offset, &d),
        Pending::Truncate(n) => data.resize(n as usize, 0),
    }
}

#[derive(Debug, Clone)]
enum NsOp {
    Link(String, u64),
    Unlink(String),
    /// `from`, `to`, the inode: one op, so a cut keeps all of a rename or none of it.
    Rename(String, String, u64),
}

#[derive(Debug, Clone)]
struct Handle {
    ino: u64,
    path: String,
    read_only: bool,
    delete_on_close: bool,
}

#[derive(Debug)]
struct Inner {
    config: MemFsConfig,
    rng: SplitMix64,
    inodes: BTreeMap<u64, Inode>,
    names: BTreeMap<String, u64>,
    durable_names: BTreeMap<String, u64>,
    /// Directories made by `mkdir` (a flat namespace: only recorded).
    dirs: std::collections::BTreeSet<String>,
    pending_ns: Vec<NsOp>,
    handles: BTreeMap<FileId, Handle>,
    next_ino: u64,
    next_handle: FileId,
    log: Vec<CallRecord>,
    powered: bool,
    cut_after_calls: Option<usize>,
}

/// An in-memory file system with a call log and simulated power cuts.
///
/// Durability follows [`FileApi`]'s contract with writes as the unit: at a power cut each
/// unsynced `write_at`/`truncate` of a file is kept or lost by a seeded coin toss (applied
/// in their original order over the last synced contents), and a seeded-length prefix of
/// the namespace operations since the last sync survives. Cloning gives another handle to
/// the same file system.
#[derive(Debug, Clone)]
pub struct MemFs {
    inner: Arc<Mutex<Inner>>,
}

impl MemFs {
    /// An empty file system; `seed` drives which unsynced writes a power cut keeps.
    pub fn new(seed: u64, config: MemFsConfig) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Inner {
                config,
                rng: SplitMix64::new(seed ^ 0x6d65_6d66_735f_6375),
                inodes: BTreeMap::new(),
                names: BTreeMap::new(),
                durable_names: BTreeMap::new(),
                dirs: std::collections::BTreeSet::new(),
                pending_ns: Vec::new(),
                handles: BTreeMap::new(),
                next_ino: 1,
                next_handle: 1,
                log: Vec::new(),
                powered: true,
                cut_after_calls: None,
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A copy of the call log.
    pub fn log(&self) -> Vec<CallRecord> {
        self.lock().log.clone()
    }

    /// Number of logged calls.
    pub fn log_len(&self) -> usize {
        self.lock().log.len()
    }

    /// Empties the call log.
    pub fn clear_log(&self) {
        self.lock().log.clear();
    }

    /// The current (cached) contents of a file, if it exists.
    pub fn contents(&self, path: &str) -> Option<Vec<u8>> {
        let g = self.lock();
        g.names
            .get(path)
            .and_then(|ino| g.inodes.get(ino))
            .map(|i| i.data.clone())
    }

    /// Names of existing files, sorted.
    pub fn file_names(&self) -> Vec<String> {
        self.lock().names.keys().cloned().collect()
    }

    /// Cuts the power once `calls` calls in total have been logged (the call that reaches
    /// the count completes; the next fails with [`FileError::PowerLost`]).
    pub fn arm_power_cut(&self, calls: usize) {
        self.lock().cut_after_calls = Some(calls);
    }

    /// Whether the power is on.
    pub fn powered(&self) -> bool {
        self.lock().powered
    }

    /// Cuts the power now: volatile state is lost as described on [`MemFs`]; every call
    /// fails until [`power_on`](Self::power_on).
    pub fn power_cut(&self) {
        self.lock().cut();
    }

    /// Restores power after a cut (open handles are gone).
    pub fn power_on(&self) {
        let mut g = self.lock();
        g.powered = true;
        g.cut_after_calls = None;
    }
}

impl Inner {
    fn cut(&mut self) {
        if !self.powered {
            return;
        }
        self.powered = false;
        self.cut_after_calls = None;
        let keep = if self.pending_ns.is_empty() {
            0
        } else {
            (self.rng.next() % (self.pending_ns.len() as u64 + 1)) as usize
        };
        let ops: Vec<NsOp> = self.pending_ns.drain(..).take(keep).collect();
        for op in ops {
            match op {
                NsOp::Link(p, ino) => {
                    self.durable_names.insert(p, ino);
                }
                NsOp::Unlink(p) => {
                    self.durable_names.remove(&p);
                }
                NsOp::Rename(from, to, ino) => {
                    self.durable_names.remove(&from);
                    self.durable_names.insert(to, ino);
                }
            }
        }
        self.names = self.durable_names.clone();
        self.handles.clear();
        let live: Vec<u64> = self.names.values().copied().collect();
        let mut inodes = BTreeMap::new();
        for ino in live {
            if let Some(mut node) = self.inodes.remove(&ino) {
                let mut data = std::mem::take(&mut node.durable);
                for p in node.pending.drain(..) {
                    if self.rng.next() & 1 == 0 {
                        continue;
                    }
                    match p {
                        Pending::Write { offset, data: d } => write_into(&mut data, offset, &d),
                        Pending::Truncate(n) => data.resize(n as usize, 0),
                    }
                }
                node.durable = data.clone();
                node.data = data;
                node.atomic = None;
                inodes.insert(ino, node);
            }
        }
        self.inodes = inodes;
    }

    /// Whether the directory `path` is created in exists, as a real file system requires:
    /// a name with no directory part, or directly under `/`, lives in the root.
    fn parent_exists(&self, path: &str) -> bool {
        match path.rsplit_once('/') {
            None | Some(("", _)) => true,
            Some((parent, _)) => self.dirs.contains(parent),
        }
    }

    fn begin(&mut self) -> Result<(), FileError> {
        if !self.powered {
            return Err(FileError::PowerLost);
        }
        if self.log.len() >= self.config.max_log_entries {
            return Err(FileError::TableFull {
                table: "call log",
                limit: self.config.max_log_entries,
            });
        }
        Ok(())
    }

    fn record(
        &mut self,
        start_ns: Nanos,
        done_ns: Nanos,
        op: CallOp,
        path: &str,
        offset: u64,
        len: u64,
    ) {
        self.log.push(CallRecord {
            start_ns,
            done_ns,
            op,
            path: path.to_owned(),
            offset,
            len,
        });
        if self.cut_after_calls.is_some_and(|n| self.log.len() >= n) {
            self.cut();
        }
    }

    fn io_cost(&self, bytes: u64) -> Nanos {
        self.config.call_ns + bytes.div_ceil(4096) * self.config.per_4k_ns
    }

    fn handle(&self, file: FileId) -> Result<Handle, FileError> {
        self.handles
            .get(&file)
            .cloned()
            .ok_or(FileError::BadHandle(file))
    }

    fn collect(&mut self, ino: u64) {
        let referenced = self.names.values().any(|&i| i == ino)
            || self.durable_names.values().any(|&i| i == ino)
            || self.handles.values().any(|h| h.ino == ino)
            || self
                .pending_ns
                .iter()
                .any(|op| matches!(op, NsOp::Link(_, i) | NsOp::Rename(_, _, i) if *i == ino));
        if !referenced {
            self.inodes.remove(&ino);
        }
    }

    fn commit_namespace(&mut self) {
        let ops: Vec<NsOp> = self.pending_ns.drain(..).collect();
        let mut touched = Vec::new();
        for op in ops {
            match op {
                NsOp::Link(p, ino) => {
                    if let Some(old) = self.durable_names.insert(p, ino) {
                        touched.push(old);
                    }
                }
                NsOp::Unlink(p) => {
                    if let Some(old) = self.durable_names.remove(&p) {
                        touched.push(old);
                    }
                }
                NsOp::Rename(from, to, ino) => {
                    if let Some(old) = self.durable_names.remove(&from) {
                        touched.push(old);
                    }
                    if let Some(old) = self.durable_names.insert(to, ino) {
                        touched.push(old);
                    }
                }
            }
        }
        for ino in touched {
            self.collect(ino);
        }
    }
}

fn write_into(data: &mut Vec<u8>, offset: u64, bytes: &[u8]) {
    let off = offset as usize;
    let end = off + bytes.len();
    if data.len() < end {
        data.resize(end, 0);
    }
    data[off..end].copy_from_slice(bytes);
}

impl FileApi for MemFs {
    fn open(
        &mut self,
        now: Nanos,
        path: &str,
        flags: OpenFlags,
    ) -> Result<(FileId, Nanos), FileError> {
        let mut g = self.lock();
        g.begin()?;
        let ino = match g.names.get(path) {
            Some(&ino) => {
                if flags.create && flags.exclusive {
                    return Err(FileError::AlreadyExists(path.to_owned()));
                }
                ino
            }
            None => {
                if !flags.create || !g.parent_exists(path) {
                    return Err(FileError::NotFound(path.to_owned()));
                }
                if g.inodes.len() >= g.config.max_files {
                    return Err(FileError::TableFull {
                        table: "files",
                        limit: g.config.max_files,
                    });
                }
                let ino = g.next_ino;
                g.next_ino += 1;
                g.inodes.insert(ino, Inode::default());
                g.names.insert(path.to_owned(), ino);
                g.pending_ns.push(NsOp::Link(path.to_owned(), ino));
                ino
            }
        };
        if g.handles.len() >= g.config.max_files {
            return Err(FileError::TableFull {
                table: "open handles",
                limit: g.config.max_files,
            });
        }
        let id = g.next_handle;
        g.next_handle += 1;
        g.handles.insert(
            id,
            Handle {
                ino,
                path: path.to_owned(),
                read_only: flags.read_only,
                delete_on_close: flags.delete_on_close,
            },
        );
        let done = now + g.config.call_ns;
        g.record(now, done, CallOp::Open, path, 0, 0);
        Ok((id, done))
    }

    fn close(&mut self, now: Nanos, file: FileId) -> Result<Nanos, FileError> {
        let mut g = self.lock();
        g.begin()?;
        let h = g.handle(file)?;
        g.handles.remove(&file);
        // The last close ends an atomic write in progress by aborting it (F2FS's release).
        if !g.handles.values().any(|o| o.ino == h.ino) {
            if let Some(node) = g.inodes.get_mut(&h.ino) {
                node.abort_atomic();
            }
        }
        if h.delete_on_close && g.names.get(&h.path) == Some(&h.ino) {
            g.names.remove(&h.path);
            g.pending_ns.push(NsOp::Unlink(h.path.clone()));
        }
        g.collect(h.ino);
        let done = now + g.config.call_ns;
        g.record(now, done, CallOp::Close, &h.path, 0, 0);
        Ok(done)
    }

    fn read_at(
        &mut self,
        now: Nanos,
        file: FileId,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<(usize, Nanos), FileError> {
        let mut g = self.lock();
        g.begin()?;
        let h = g.handle(file)?;
        let data = &g.inodes.get(&h.ino).ok_or(FileError::BadHandle(file))?.data;
        let start = (offset as usize).min(data.len());
        let n = (data.len() - start).min(buf.len());
        buf[..n].copy_from_slice(&data[start..start + n]);
        let done = now + g.io_cost(n as u64);
        g.record(now, done, CallOp::Read, &h.path, offset, n as u64);
        Ok((n, done))
    }

    fn write_at(
        &mut self,
        now: Nanos,
        file: FileId,
        offset: u64,
        data: &[u8],
    ) -> Result<Nanos, FileError> {
        let mut g = self.lock();
        g.begin()?;
        let h = g.handle(file)?;
        if h.read_only {
            return Err(FileError::ReadOnly(file));
        }
        let end = offset.saturating_add(data.len() as u64);
        if end > g.config.max_file_bytes {
            return Err(FileError::TooLarge {
                path: h.path,
                size_bytes: end,
                limit_bytes: g.config.max_file_bytes,
            });
        }
        let node = g.inodes.get_mut(&h.ino).ok_or(FileError::BadHandle(file))?;
        node.write(offset, data);
        let done = now + g.io_cost(data.len() as u64);
        g.record(now, done, CallOp::Write, &h.path, offset, data.len() as u64);
        Ok(done)
    }

    fn truncate(&mut self, now: Nanos, file: FileId, size_bytes: u64) -> Result<Nanos, FileError> {
        let mut g = self.lock();
        g.begin()?;
        let h = g.handle(file)?;
        if h.read_only {
            return Err(FileError::ReadOnly(file));
        }
        if size_bytes > g.config.max_file_bytes {
            return Err(FileError::TooLarge {
                path: h.path,
                size_bytes,
                limit_bytes: g.config.max_file_bytes,
            });
        }
        let node = g.inodes.get_mut(&h.ino).ok_or(FileError::BadHandle(file))?;
        node.truncate(size_bytes);
        let done = now + g.config.call_ns;
        g.record(now, done, CallOp::Truncate, &h.path, size_bytes, 0);
        Ok(done)
    }

    fn size(&mut self, now: Nanos, file: FileId) -> Result<(u64, Nanos), FileError> {
        let mut g = self.lock();
        g.begin()?;
        let h = g.handle(file)?;
        let n = g
            .inodes
            .get(&h.ino)
            .ok_or(FileError::BadHandle(file))?
            .data
            .len() as u64;
        let done = now + g.config.call_ns;
        g.record(now, done, CallOp::Size, &h.path, 0, 0);
        Ok((n, done))
    }

    fn sync(&mut self, now: Nanos, file: FileId, data_only: bool) -> Result<Nanos, FileError> {
        let mut g = self.lock();
        g.begin()?;
        let h = g.handle(file)?;
        let node = g.inodes.get_mut(&h.ino).ok_or(FileError::BadHandle(file))?;
        // The durable copy catches up by the writes since the last sync (durable + pending
        // = data), not by a copy of the whole file: a large database fsync'd often would
        // otherwise cost its size at every sync.
        // (Staged changes of an atomic write wait for its commit.)
        node.settle();
        debug_assert!(node.atomic.is_some() || node.durable.len() == node.data.len());
        g.commit_namespace();
        let (cost, op) = if data_only {
            (g.config.fdatasync_ns, CallOp::Fdatasync)
        } else {
            (g.config.fsync_ns, CallOp::Fsync)
        };
        let done = now + cost;
        g.record(now, done, op, &h.path, 0, 0);
        Ok(done)
    }

    fn delete(&mut self, now: Nanos, path: &str, sync_dir: bool) -> Result<Nanos, FileError> {
        let mut g = self.lock();
        g.begin()?;
        let Some(ino) = g.names.remove(path) else {
            return Err(FileError::NotFound(path.to_owned()));
        };
        g.pending_ns.push(NsOp::Unlink(path.to_owned()));
        let mut done = now + g.config.call_ns;
        if sync_dir {
            g.commit_namespace();
            done += g.config.fsync_ns;
        }
        g.collect(ino);
        g.record(now, done, CallOp::Delete, path, u64::from(sync_dir), 0);
        Ok(done)
    }

    fn exists(&mut self, now: Nanos, path: &str) -> Result<(bool, Nanos), FileError> {
        let mut g = self.lock();
        g.begin()?;
        let e = g.names.contains_key(path);
        let done = now + g.config.call_ns;
        g.record(now, done, CallOp::Exists, path, 0, 0);
        Ok((e, done))
    }

    fn rename(&mut self, now: Nanos, from: &str, to: &str) -> Result<Nanos, FileError> {
        let mut g = self.lock();
        g.begin()?;
        if !g.parent_exists(to) {
            return Err(FileError::NotFound(to.to_owned()));
        }
        let Some(ino) = g.names.remove(from) else {
            return Err(FileError::NotFound(from.to_owned()));
        };
        let replaced = g.names.insert(to.to_owned(), ino);
        g.pending_ns
            .push(NsOp::Rename(from.to_owned(), to.to_owned(), ino));
        if let Some(old) = replaced {
            g.collect(old);
        }
        let done = now + g.config.call_ns;
        g.record(now, done, CallOp::Rename, from, 0, 0);
        Ok(done)
    }

    fn mkdir(&mut self, now: Nanos, path: &str) -> Result<Nanos, FileError> {
        let mut g = self.lock();
        g.begin()?;
        if !g.parent_exists(path) {
            return Err(FileError::NotFound(path.to_owned()));
        }
        if g.names.contains_key(path) || !g.dirs.insert(path.to_owned()) {
            return Err(FileError::AlreadyExists(path.to_owned()));
        }
        let done = now + g.config.call_ns;
        g.record(now, done, CallOp::Mkdir, path, 0, 0);
        Ok(done)
    }

    fn atomic_write_supported(&mut self) -> bool {
        self.lock().config.atomic_write
    }

    /// Later writes and truncates of the file are staged (earlier unsynced ones stay
    /// unsynced, subject to the power-cut coin toss as before).
    fn atomic_begin(&mut self, now: Nanos, file: FileId) -> Result<Nanos, FileError> {
        let mut g = self.lock();
        if !g.config.atomic_write {
            return Err(FileError::Unsupported("atomic writes"));
        }
        g.begin()?;
        let h = g.handle(file)?;
        if h.read_only {
            return Err(FileError::ReadOnly(file));
        }
        let node = g.inodes.get_mut(&h.ino).ok_or(FileError::BadHandle(file))?;
        node.atomic.get_or_insert_with(Atomic::default);
        let done = now + g.config.call_ns;
        g.record(now, done, CallOp::AtomicBegin, &h.path, 0, 0);
        Ok(done)
    }

    /// An fsync that makes the staged changes durable with the others, all at once.
    fn atomic_commit(&mut self, now: Nanos, file: FileId) -> Result<Nanos, FileError> {
        let mut g = self.lock();
        g.begin()?;
        let h = g.handle(file)?;
        let node = g.inodes.get_mut(&h.ino).ok_or(FileError::BadHandle(file))?;
        let Some(atomic) = node.atomic.take() else {
            return Err(FileError::Io(format!("{}: no atomic write", h.path)));
        };
        node.settle();
        for p in atomic.staged {
            apply(&mut node.durable, p);
        }
        debug_assert_eq!(node.durable.len(), node.data.len());
        g.commit_namespace();
        let done = now + g.config.fsync_ns;
        g.record(now, done, CallOp::AtomicCommit, &h.path, 0, 0);
        Ok(done)
    }

    fn atomic_abort(&mut self, now: Nanos, file: FileId) -> Result<Nanos, FileError> {
        let mut g = self.lock();
        g.begin()?;
        let h = g.handle(file)?;
        let node = g.inodes.get_mut(&h.ino).ok_or(FileError::BadHandle(file))?;
        node.abort_atomic();
        let done = now + g.config.call_ns;
        g.record(now, done, CallOp::AtomicAbort, &h.path, 0, 0);
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create() -> OpenFlags {
        OpenFlags {
            create: true,
            ..OpenFlags::default()
        }
    }

    #[test]
    fn synced_data_survives_and_unsynced_may_not() {
        let mut lost = 0;
        let mut kept = 0;
        for seed in 0..32 {
            let mut fs = MemFs::new(seed, MemFsConfig::default());
            let (f, t) = fs.open(0, "/a", create()).unwrap();
            let t = fs.write_at(t, f, 0, b"durable").unwrap();
            let t = fs.sync(t, f, true).unwrap();
            fs.write_at(t, f, 0, b"VOLATIL").unwrap();
            fs.power_cut();
            assert_eq!(fs.exists(0, "/a"), Err(FileError::PowerLost));
            fs.power_on();
            let c = fs.contents("/a").unwrap();
            if c == b"durable" {
                lost += 1;
            } else {
                assert_eq!(c, b"VOLATIL");
                kept += 1;
            }
        }
        assert!(lost > 0 && kept > 0, "lost {lost} kept {kept}");
    }

    #[test]
    fn unsynced_create_can_vanish_and_sync_makes_names_durable() {
        let mut vanished = false;
        for seed in 0..16 {
            let mut fs = MemFs::new(seed, MemFsConfig::default());
            let (f, _) = fs.open(0, "/new", create()).unwrap();
            fs.write_at(0, f, 0, b"x").unwrap();
            fs.power_cut();
            fs.power_on();
            vanished |= fs.contents("/new").is_none();
            let (g, _) = fs.open(0, "/b", create()).unwrap();
            fs.sync(0, g, false).unwrap();
            fs.delete(0, "/b", true).unwrap();
            fs.power_cut();
            fs.power_on();
            assert!(fs.contents("/b").is_none());
        }
        assert!(vanished);
    }

    #[test]
    fn rename_is_all_or_nothing_across_a_cut() {
        let (mut old_seen, mut new_seen) = (false, false);
        for seed in 0..32 {
            let mut fs = MemFs::new(seed, MemFsConfig::default());
            let (f, t) = fs.open(0, "/prefs.xml.tmp", create()).unwrap();
            let t = fs.write_at(t, f, 0, b"v2").unwrap();
            let t = fs.sync(t, f, false).unwrap();
            fs.close(t, f).unwrap();
            fs.rename(t, "/prefs.xml.tmp", "/prefs.xml").unwrap();
            assert_eq!(fs.contents("/prefs.xml").unwrap(), b"v2");
            fs.power_cut();
            fs.power_on();
            let old = fs.contents("/prefs.xml.tmp");
            let new = fs.contents("/prefs.xml");
            assert!(
                old.is_some() != new.is_some(),
                "seed {seed}: exactly one name"
            );
            old_seen |= old.is_some();
            new_seen |= new.is_some();
        }
        assert!(old_seen && new_seen);
    }

    #[test]
    fn mkdir_twice_is_an_error() {
        let mut fs = MemFs::new(1, MemFsConfig::default());
        fs.mkdir(0, "/data").unwrap();
        assert_eq!(
            fs.mkdir(0, "/data"),
            Err(FileError::AlreadyExists("/data".into()))
        );
    }

    #[test]
    fn armed_cut_fires_after_the_count() {
        let mut fs = MemFs::new(1, MemFsConfig::default());
        fs.arm_power_cut(2);
        let (f, _) = fs.open(0, "/a", create()).unwrap();
        fs.write_at(0, f, 0, b"abc").unwrap();
        assert!(!fs.powered());
        assert_eq!(fs.size(0, f), Err(FileError::PowerLost));
        assert_eq!(fs.log_len(), 2);
    }
}
