//! [`F2fsTree`]: the page cache over F2FS on an emulated device as an [`InodeFs`] core, so
//! that `flashstack mount` puts real programs on the same stack the app personas use.
//!
//! - **Data** (read, write, truncate, fsync, fdatasync, the size `stat` shows) goes through
//!   the page cache ([`PageCache`]) by inode; the cache writes back to F2FS through
//!   [`F2fsBacking`], the stack's. A failed writeback is the cache's business too: it
//!   keeps the error for the file's next fsync (and for sync), as Linux does, and this core
//!   only turns it into an errno.
//! - **Names** (lookup, create, mkdir, unlink, rmdir, rename, link, readdir) go to F2FS
//!   directly, by parent inode and name. When an inode is freed its cached pages are
//!   dropped without writeback. A file whose last name goes while it is open stays alive
//!   (an F2FS orphan) until its last handle is released, as POSIX requires.
//! - **fsync** writes the file's dirty pages back and runs F2FS's fsync (roll-forward
//!   recovers it); if any name changed since the last checkpoint it also checkpoints, so
//!   the names are durable too (the assembled stack's rule, `docs/stack.md`).
//! - **sync** (and so unmount) writes every dirty page back and checkpoints.
//!
//! # Virtual time
//!
//! One clock: each request arrives when the previous one completed (the rule of every
//! mount, see the crate documentation), runs through the cache and F2FS, and completes at
//! the later of the cache's completion and F2FS's clock (which includes work the cache's
//! flusher handed to F2FS meanwhile). Real time between requests is ignored, so there are
//! no idle periods: the flusher's expiry and F2FS's idle-time cleaning and periodic
//! checkpoints happen only as request service time accumulates.
//!
//! # What survives a crash
//!
//! Exactly what F2FS made durable: a file's data once its `fsync` (or `sync`) completed;
//! data still in the page cache is lost, like on a phone that loses power.

use std::collections::{BTreeMap, BTreeSet};

use flashstack_block::BlockDevice;
use flashstack_cache::{BackingError, CacheConfig, CacheError, PageCache};
use flashstack_f2fs::consts::{
    ADDRS_PER_BLOCK, ADDRS_PER_INODE, BLOCK_SIZE, NIDS_PER_BLOCK, ROOT_INO,
};
use flashstack_f2fs::consts::{S_IFBLK, S_IFCHR, S_IFDIR, S_IFIFO, S_IFREG, S_IFSOCK};
use flashstack_f2fs::{F2fs, FileKind, FsError as F2fsFsError, NewInode, Stat, XattrMode};
use flashstack_sim::{LatencyHistogram, Nanos};
use flashstack_stack::{F2fsBacking, OpMetrics};

use crate::tree::{
    Attr, FallocMode, Fallocate, FsError, FsStats, Ino, InodeFs, Kind, NewAttr, SetAttr, XattrSet,
};
use crate::tree_metrics::F2fsTreeMetrics;

/// The page cache over F2FS on `D`.
pub type MountCache<D> = PageCache<F2fsBacking<D>>;

/// Largest file F2FS's node tree addresses (direct, two single-, two double-, one
/// triple-indirect tree); writes past it are refused at once (EFBIG) rather than lost at
/// writeback.
const MAX_FILE_BYTES: u64 = (ADDRS_PER_INODE as u64
    + 2 * ADDRS_PER_BLOCK as u64
    + 2 * ADDRS_PER_BLOCK as u64 * NIDS_PER_BLOCK as u64
    + ADDRS_PER_BLOCK as u64 * (NIDS_PER_BLOCK as u64).pow(2))
    * BLOCK_SIZE as u64;

/// Longest directory chain followed when naming a path.
const DEPTH_MAX: usize = 4096;

/// Count, bytes and latency of one kind of request.
#[derive(Default)]
struct OpStats {
    count: u64,
    bytes: u64,
    latency: LatencyHistogram,
}

/// Real time since the mount began, for a mount whose virtual clock must also follow the
/// wall clock (MobiFS's staleness bound is in seconds of the user's time). The binary
/// supplies it, so the core never reads the wall clock itself; tests use a manual one.
pub trait RequestClock: Send {
    fn elapsed_ns(&self) -> Nanos;
}

/// F2FS mounted read-write on a device `D`, under a page cache.
pub struct F2fsTree<D: BlockDevice + Send + 'static> {
    cache: MountCache<D>,
    /// The one clock: the latest completion of any request, or with a [`RequestClock`],
    /// the later of that and the real time since the mount.
    now_ns: Nanos,
    wall: Option<Box<dyn RequestClock>>,
    /// The clock when the core was made (F2FS's, after its mount).
    started_ns: Nanos,
    /// Open handles (FUSE file handle → inode) and the count per inode.
    handles: BTreeMap<u64, Ino>,
    open_counts: BTreeMap<Ino, u32>,
    /// Inodes held open in F2FS by this core because their last name went while they were
    /// open: F2FS keeps them as orphans until the last handle is released.
    pinned: BTreeSet<Ino>,
    /// Every directory the kernel has seen: inode → (parent, name), to name a path for
    /// F2FS's path-based `open`.
    dirs: BTreeMap<Ino, (Ino, String)>,
    /// Names changed since the last checkpoint: the next fsync checkpoints too (the
    /// assembled stack's rule, `docs/stack.md`).
    namespace_dirty: bool,
    /// The cache's count of failed writebacks when space was last freed: a later failure
    /// for want of space means F2FS is full (see [`F2fsTree::out_of_space`]).
    writeback_errors_when_freed: u64,
    ops: BTreeMap<&'static str, OpStats>,
}

fn to_u32(ino: Ino) -> Result<u32, FsError> {
    u32::try_from(ino).map_err(|_| FsError::NotFound)
}

fn name_str(name: &[u8]) -> Result<&str, FsError> {
    std::str::from_utf8(name).map_err(|_| FsError::Invalid("names must be UTF-8".into()))
}

/// F2FS's error kinds onto the mount's (errno follows from these in one place).
fn convert(e: F2fsFsError) -> FsError {
    if e.is_no_space() {
        return FsError::NoSpace;
    }
    match e {
        F2fsFsError::NotFound(_) => FsError::NotFound,
        F2fsFsError::Exists(_) => FsError::Exists,
        F2fsFsError::NotDir(_) => FsError::NotDir,
        F2fsFsError::IsDir(_) => FsError::IsDir,
        F2fsFsError::NotEmpty(_) => FsError::NotEmpty,
        F2fsFsError::NoSpace => FsError::NoSpace,
        F2fsFsError::NameTooLong(_) => FsError::NameTooLong,
        F2fsFsError::Invalid(m) => FsError::Invalid(m),
        F2fsFsError::TooLarge(m) => FsError::TooLarge(m),
        F2fsFsError::Unsupported(m) => FsError::Unsupported(m),
        F2fsFsError::NoAttr(_) => FsError::NoAttr,
        other => FsError::Io(other.to_string()),
    }
}

/// The cache's errors, a writeback failure it reports included (`ENOSPC` or `EIO`).
fn convert_cache(e: CacheError) -> FsError {
    match e {
        CacheError::Backing(BackingError::NoSpace { .. })
        | CacheError::Writeback {
            error: BackingError::NoSpace { .. },
            ..
        } => FsError::NoSpace,
        CacheError::RangeOverflow { .. } => FsError::TooLarge(e.to_string()),
        other => FsError::Io(other.to_string()),
    }
}

fn kind_of(stat: &Stat) -> Kind {
    kind_of_file(stat.kind)
}

fn kind_of_file(kind: FileKind) -> Kind {
    match kind {
        FileKind::Dir => Kind::Dir,
        FileKind::Symlink => Kind::Symlink,
        FileKind::CharDevice => Kind::CharDevice,
        FileKind::BlockDevice => Kind::BlockDevice,
        FileKind::Fifo => Kind::Fifo,
        FileKind::Socket => Kind::Socket,
        FileKind::File | FileKind::Other => Kind::File,
    }
}

/// The inode type bits of a kind.
fn type_bits(kind: Kind) -> Option<u16> {
    match kind {
        Kind::File => Some(S_IFREG),
        Kind::Dir => Some(S_IFDIR),
        Kind::CharDevice => Some(S_IFCHR),
        Kind::BlockDevice => Some(S_IFBLK),
        Kind::Fifo => Some(S_IFIFO),
        Kind::Socket => Some(S_IFSOCK),
        Kind::Symlink => None,
    }
}

impl<D: BlockDevice + Send + 'static> F2fsTree<D> {
    /// Puts an empty page cache configured by `cache` over the mounted `fs`, on request
    /// time (each request arrives when the previous one completed). MobiFS's transactions
    /// (`cache.policy = "mobifs"`) are refused here: on request time the clock advances
    /// only with device work, so their staleness bound would not be in force; they need
    /// [`with_wall_clock`](Self::with_wall_clock).
    pub fn new(fs: F2fs<D>, cache: CacheConfig) -> Result<Self, FsError> {
        if cache.policy != flashstack_cache::PolicyName::Linux {
            return Err(FsError::Invalid(
                "cache.policy = mobifs needs the mount's clock to follow the wall clock \
                 (F2fsTree::with_wall_clock), or its staleness bound is not in force"
                    .into(),
            ));
        }
        Self::build(fs, cache, None)
    }

    /// A page cache over `fs` whose clock also follows `wall`: a request arrives at the
    /// later of the previous completion and the real time since the mount, and
    /// [`InodeFs::tick`] runs the cache's background work (writeback, MobiFS's
    /// checkpoints) due by then, so a staleness bound holds in the user's seconds.
    pub fn with_wall_clock(
        fs: F2fs<D>,
        cache: CacheConfig,
        wall: Box<dyn RequestClock>,
    ) -> Result<Self, FsError> {
        Self::build(fs, cache, Some(wall))
    }

    fn build(
        fs: F2fs<D>,
        cache: CacheConfig,
        wall: Option<Box<dyn RequestClock>>,
    ) -> Result<Self, FsError> {
        let now_ns = fs.now_ns();
        let cache = PageCache::new(cache, F2fsBacking::new(fs))
            .map_err(|e| FsError::Invalid(format!("page cache: {e}")))?;
        Ok(F2fsTree {
            cache,
            now_ns,
            wall,
            started_ns: now_ns,
            handles: BTreeMap::new(),
            open_counts: BTreeMap::new(),
            pinned: BTreeSet::new(),
            dirs: BTreeMap::new(),
            namespace_dirty: false,
            writeback_errors_when_freed: 0,
            ops: BTreeMap::new(),
        })
    }

    /// The file system, for its metrics and device.
    pub fn fs(&self) -> &F2fs<D> {
        self.cache.backing().fs()
    }

    /// The page cache.
    pub fn cache(&self) -> &MountCache<D> {
        &self.cache
    }

    /// Every layer's figures (the device's are the caller's: [`F2fsTree::fs`]`.device()`).
    pub fn metrics(&self) -> F2fsTreeMetrics {
        F2fsTreeMetrics {
            started_ns: self.started_ns,
            now_ns: self.now_ns,
            requests: self
                .ops
                .iter()
                .map(|(name, s)| {
                    let metrics = OpMetrics {
                        count: s.count,
                        bytes: s.bytes,
                        latency: s.latency.summary(),
                    };
                    (name.to_string(), metrics)
                })
                .collect(),
            cache: self.cache.metrics().clone(),
            f2fs: self.fs().metrics().clone(),
            writeback_pages_lost: self.cache.metrics().writeback_pages_lost,
        }
    }

    /// The file system after a clean stop: orphans still held are released, every dirty
    /// page written back (no checkpoint here if the cache is already clean: F2FS's
    /// `unmount` writes one).
    pub fn into_inner(mut self) -> Result<F2fs<D>, FsError> {
        let fhs: Vec<u64> = self.handles.keys().copied().collect();
        for fh in fhs {
            self.released(fh);
        }
        if self.cache.dirty_bytes() > 0 {
            self.sync()?;
        }
        Ok(self.cache.into_backing().into_fs())
    }

    /// A power cut: the page cache is dropped (dirty pages lost) and the device given back
    /// as it is, without writing anything.
    pub fn power_cut(mut self) -> D {
        self.cache.crash();
        self.cache.into_backing().into_fs().into_device()
    }

    // ----- time -----

    fn fs_mut(&mut self) -> &mut F2fs<D> {
        self.cache.backing_mut().fs_mut()
    }

    /// With a wall clock, moves the clock to the real time since the mount if that is
    /// later (the time a request arrives at, or a tick).
    fn arrive(&mut self) {
        if let Some(wall) = &self.wall {
            self.now_ns = self.now_ns.max(self.started_ns + wall.elapsed_ns());
        }
    }

    /// Runs `op` on F2FS at the mount's clock; the clock moves to F2FS's.
    fn on_fs<T>(
        &mut self,
        op: impl FnOnce(&mut F2fs<D>) -> Result<T, F2fsFsError>,
    ) -> Result<T, FsError> {
        self.arrive();
        let now = self.now_ns;
        let fs = self.fs_mut();
        fs.advance_to(now);
        let result = op(fs);
        let done = fs.now_ns();
        self.now_ns = self.now_ns.max(done);
        result.map_err(convert)
    }

    /// Runs `op` on the cache at the mount's clock; the clock moves to the later of its
    /// completion and F2FS's clock (a reported writeback error carries its completion).
    fn on_cache<T>(
        &mut self,
        op: impl FnOnce(&mut MountCache<D>, Nanos) -> Result<(T, Nanos), CacheError>,
    ) -> Result<T, FsError> {
        self.on_cache_raw(op).map_err(convert_cache)
    }

    /// [`on_cache`](Self::on_cache) with the cache's own error.
    fn on_cache_raw<T>(
        &mut self,
        op: impl FnOnce(&mut MountCache<D>, Nanos) -> Result<(T, Nanos), CacheError>,
    ) -> Result<T, CacheError> {
        self.arrive();
        let result = op(&mut self.cache, self.now_ns);
        let fs_now = self.cache.backing().fs().now_ns();
        self.now_ns = self.now_ns.max(fs_now);
        if let Err(CacheError::Writeback { done_ns, .. }) = &result {
            self.now_ns = self.now_ns.max(*done_ns);
        }
        let (value, done) = result?;
        self.now_ns = self.now_ns.max(done);
        Ok(value)
    }

    /// Whether a writeback ran out of space since space was last freed: writes that grow
    /// a file are refused at once then (as F2FS's block reservation at write time would).
    fn out_of_space(&self) -> bool {
        match self.cache.writeback_errors_seen() {
            (seen, Some((_, BackingError::NoSpace { .. }))) => {
                seen > self.writeback_errors_when_freed
            }
            _ => false,
        }
    }

    /// Space was freed (a file deleted or shrunk): writes may grow files again.
    fn space_freed(&mut self) {
        self.writeback_errors_when_freed = self.cache.writeback_errors_seen().0;
    }

    /// Records a request that arrived at `start` and completed at the clock now.
    fn record<T>(
        &mut self,
        op: &'static str,
        start: Nanos,
        result: Result<T, FsError>,
        bytes: impl FnOnce(&T) -> u64,
    ) -> Result<T, FsError> {
        let stats = self.ops.entry(op).or_default();
        stats.count += 1;
        if let Ok(value) = &result {
            stats.bytes += bytes(value);
        }
        stats.latency.record(self.now_ns - start);
        result
    }

    // ----- inodes -----

    fn stat(&mut self, ino: Ino) -> Result<Stat, FsError> {
        let ino32 = to_u32(ino)?;
        self.on_fs(|fs| fs.stat_ino(ino32))
    }

    fn attr(&mut self, ino: Ino) -> Result<Attr, FsError> {
        let s = self.stat(ino)?;
        let kind = kind_of(&s);
        let size = match kind {
            // The cache's size: writes not yet written back count.
            Kind::File => self.on_cache(|c, t| c.file_size(t, ino))?,
            _ => s.size_bytes,
        };
        // In 512-byte units: F2FS's blocks without the inode block (as the kernel shows
        // `i_blocks`: written and reserved), or for a file, if more, its size in whole
        // blocks (the cache's pages are not on F2FS yet; the kernel would have reserved
        // them at write time).
        let written = s.blocks.saturating_sub(1) * 8;
        let cached = match kind {
            Kind::File => written.max(size.div_ceil(4096) * 8),
            _ => written,
        };
        Ok(Attr {
            ino,
            kind,
            size,
            blocks: cached,
            nlink: s.links,
            perm: s.mode & 0o7777,
            uid: s.uid,
            gid: s.gid,
            rdev: s.rdev,
            atime: s.atime,
            mtime: s.mtime,
            ctime: s.ctime,
        })
    }

    /// Remembers a directory the kernel now knows, to name paths through it later.
    fn saw(&mut self, attr: &Attr, parent: Ino, name: &str) {
        if attr.kind == Kind::Dir {
            self.dirs.insert(attr.ino, (parent, name.to_string()));
        }
    }

    /// The path of `name` in directory `dir`, from the directories seen.
    fn path_of(&self, mut dir: Ino, name: &str) -> Option<String> {
        let mut parts = vec![name];
        while dir != ROOT_INO as Ino {
            let (parent, dir_name) = self.dirs.get(&dir)?;
            parts.push(dir_name);
            dir = *parent;
            if parts.len() > DEPTH_MAX {
                return None;
            }
        }
        parts.reverse();
        Some(format!("/{}", parts.join("/")))
    }

    /// Before the last name of `ino` (`name` in `dir`) is removed: if it is open, F2FS is
    /// told so (its path-based `open`), so it keeps the inode as an orphan until released.
    fn pin_if_open(&mut self, ino: Ino, dir: Ino, name: &str) -> Result<(), FsError> {
        if !self.open_counts.contains_key(&ino) || self.pinned.contains(&ino) {
            return Ok(());
        }
        // Every directory reached through the mount was looked up first, so the path is
        // known; if not, the inode is freed at once (it was before orphans were kept).
        if let Some(path) = self.path_of(dir, name) {
            self.on_fs(|fs| fs.open(&path))?;
            self.pinned.insert(ino);
        }
        Ok(())
    }

    /// The last name of `ino` is gone: unless it is pinned open, F2FS freed it.
    fn last_name_gone(&mut self, ino: Ino) -> Result<(), FsError> {
        if self.pinned.contains(&ino) {
            return Ok(());
        }
        self.freed(ino)
    }

    /// F2FS freed `ino`: its cached pages go without writeback.
    fn freed(&mut self, ino: Ino) -> Result<(), FsError> {
        self.on_cache(|c, t| c.unlink(t, ino).map(|done| ((), done)))?;
        self.space_freed();
        self.dirs.remove(&ino);
        Ok(())
    }

    // ----- requests (each arrives at `self.now_ns`) -----

    fn do_lookup(&mut self, parent: Ino, name: &[u8]) -> Result<Attr, FsError> {
        let (dir, name) = (to_u32(parent)?, name_str(name)?);
        let ino = self.on_fs(|fs| fs.lookup_in(dir, name))?;
        let attr = self.attr(ino as Ino)?;
        self.saw(&attr, parent, name);
        Ok(attr)
    }

    fn do_set_size(&mut self, ino: Ino, size: u64) -> Result<Attr, FsError> {
        if kind_of(&self.stat(ino)?) == Kind::Dir {
            return Err(FsError::IsDir);
        }
        if size > MAX_FILE_BYTES {
            return Err(FsError::TooLarge(format!("{size} bytes")));
        }
        self.on_cache(|c, t| c.truncate(t, ino, size).map(|done| ((), done)))?;
        self.space_freed();
        self.attr(ino)
    }

    /// A new file, directory or special file (`type_bits` and `new`; `rdev` for devices).
    fn do_create(
        &mut self,
        parent: Ino,
        name: &[u8],
        type_bits: u16,
        new: NewAttr,
        rdev: u32,
    ) -> Result<Attr, FsError> {
        let (parent32, name) = (to_u32(parent)?, name_str(name)?);
        let inode = NewInode {
            mode: type_bits | (new.perm & 0o7777),
            uid: new.uid,
            gid: new.gid,
            rdev,
        };
        let ino = self.on_fs(|fs| fs.mknod_in(parent32, name, &inode))?;
        self.namespace_dirty = true;
        let attr = self.attr(ino as Ino)?;
        self.saw(&attr, parent, name);
        Ok(attr)
    }

    fn do_unlink(&mut self, parent: Ino, name: &[u8]) -> Result<(), FsError> {
        let (dir, name) = (to_u32(parent)?, name_str(name)?);
        let ino = self.on_fs(|fs| fs.lookup_in(dir, name))?;
        let last = self.stat(ino as Ino)?.links <= 1;
        if last {
            self.pin_if_open(ino as Ino, parent, name)?;
        }
        let result = self.on_fs(|fs| fs.unlink_in(dir, name));
        // F2FS may fail after the change (cleaning on the way out): what counts is
        // whether the name is gone.
        if result.is_ok() || !self.names(dir, name, ino) {
            self.namespace_dirty = true;
            if last {
                self.last_name_gone(ino as Ino)?;
            }
        }
        result
    }

    fn do_rmdir(&mut self, parent: Ino, name: &[u8]) -> Result<(), FsError> {
        let (dir, name) = (to_u32(parent)?, name_str(name)?);
        let ino = self.on_fs(|fs| fs.lookup_in(dir, name))?;
        let result = self.on_fs(|fs| fs.rmdir_in(dir, name));
        if result.is_ok() || !self.names(dir, name, ino) {
            self.namespace_dirty = true;
            self.freed(ino as Ino)?;
        }
        result
    }

    /// Whether `name` in `dir` names `ino` now.
    fn names(&mut self, dir: u32, name: &str, ino: u32) -> bool {
        self.on_fs(|fs| fs.lookup_in(dir, name)).ok() == Some(ino)
    }

    fn do_rename(
        &mut self,
        parent: Ino,
        name: &[u8],
        new_parent: Ino,
        new_name: &[u8],
    ) -> Result<(), FsError> {
        let (src, name) = (to_u32(parent)?, name_str(name)?);
        let (dst, new_name) = (to_u32(new_parent)?, name_str(new_name)?);
        let ino = self.on_fs(|fs| fs.lookup_in(src, name))? as Ino;
        let moved_dir = kind_of(&self.stat(ino)?) == Kind::Dir;
        // The inode an existing target names is replaced: freed with its last name.
        let victim = match self.on_fs(|fs| fs.lookup_in(dst, new_name)) {
            Ok(v) if v as Ino != ino => {
                let s = self.stat(v as Ino)?;
                Some((v as Ino, kind_of(&s), s.links))
            }
            _ => None,
        };
        if let Some((v, Kind::File, 1)) = victim {
            self.pin_if_open(v, new_parent, new_name)?;
        }
        let result = self.on_fs(|fs| fs.rename_in(src, name, dst, new_name));
        if result.is_err() && !self.names(dst, new_name, ino as u32) {
            return result;
        }
        self.namespace_dirty = true;
        if moved_dir {
            self.dirs.insert(ino, (new_parent, new_name.to_string()));
        }
        match victim {
            Some((v, Kind::Dir, _)) => self.freed(v)?,
            Some((v, Kind::File, links)) if links <= 1 => self.last_name_gone(v)?,
            _ => {}
        }
        result
    }

    /// The cache's bytes; atime by F2FS's `relatime`, lazily.
    fn do_read(&mut self, ino: Ino, offset: u64, out: &mut [u8]) -> Result<usize, FsError> {
        let n = self.on_cache(|c, t| c.read(t, ino, offset, out))?;
        let ino32 = to_u32(ino)?;
        self.on_fs(|fs| fs.mark_accessed(ino32))?;
        Ok(n)
    }

    fn do_write(&mut self, ino: Ino, offset: u64, data: &[u8]) -> Result<usize, FsError> {
        let end = offset
            .checked_add(data.len() as u64)
            .filter(|&end| end <= MAX_FILE_BYTES)
            .ok_or_else(|| FsError::TooLarge(format!("write ending past {MAX_FILE_BYTES}")))?;
        // After a writeback found F2FS full, growing files is refused at once (as F2FS's
        // block reservation at write time would) until something is freed.
        if self.out_of_space() {
            let size = self.on_cache(|c, t| c.file_size(t, ino))?;
            if end > size {
                return Err(FsError::NoSpace);
            }
        }
        self.on_cache(|c, t| c.write(t, ino, offset, data).map(|done| ((), done)))?;
        let ino32 = to_u32(ino)?;
        self.on_fs(|fs| fs.mark_modified(ino32))?;
        Ok(data.len())
    }

    /// The file's dirty pages are written back and F2FS fsyncs it (roll-forward recovers
    /// it); if names changed since the last checkpoint, a checkpoint follows, so that the
    /// names the file depends on are durable too (the stack's rule, as F2FS checkpoints
    /// when roll-forward cannot cover a change).
    /// A writeback failure the cache reports (the file's pages lost earlier) is returned
    /// after the checkpoint has run.
    fn do_fsync(&mut self, ino: Ino, data_only: bool) -> Result<(), FsError> {
        let synced = self.on_cache_raw(|c, t| {
            match data_only {
                true => c.fdatasync(t, ino),
                false => c.fsync(t, ino),
            }
            .map(|done| ((), done))
        });
        if let Err(e) = synced {
            if !matches!(e, CacheError::Writeback { .. }) {
                return Err(convert_cache(e));
            }
            self.checkpoint_names()?;
            return Err(convert_cache(e));
        }
        self.checkpoint_names()
    }

    /// Checkpoints if names changed since the last checkpoint.
    fn checkpoint_names(&mut self) -> Result<(), FsError> {
        if self.namespace_dirty {
            self.on_fs(|fs| fs.checkpoint_names())?;
            self.namespace_dirty = false;
        }
        Ok(())
    }

    fn do_sync(&mut self) -> Result<(), FsError> {
        let synced = self.on_cache(|c, t| c.sync_all(t).map(|done| ((), done)));
        self.namespace_dirty = false;
        synced
    }

    /// `fallocate` through the cache: the cache first zeroes the partial blocks at the
    /// edges of a punched or zeroed range (as ordinary writes) and drops its pages of the
    /// whole blocks in between (`truncate_pagecache_range`, dirty ones unwritten); F2FS
    /// then frees or reserves those whole blocks. Preallocation reserves in F2FS first and
    /// grows the cache's size after, so `ENOSPC` changes nothing.
    fn do_fallocate(&mut self, ino: Ino, how: Fallocate) -> Result<(), FsError> {
        let Fallocate { mode, offset, len } = how;
        let ino32 = to_u32(ino)?;
        if kind_of(&self.stat(ino)?) != Kind::File {
            return Err(FsError::Invalid("fallocate of a non-regular file".into()));
        }
        let end = offset
            .checked_add(len)
            .filter(|&e| e <= MAX_FILE_BYTES && len > 0)
            .ok_or_else(|| FsError::TooLarge(format!("fallocate of {len} bytes at {offset}")))?;
        let size = self.on_cache(|c, t| c.file_size(t, ino))?;
        // F2FS learns the cache's size first: the cache may drop the pages that held a
        // growth not written back yet, and must not lose the size with them.
        if self.stat(ino)?.size_bytes != size {
            self.on_fs(|fs| fs.writeback_size(ino32, size))?;
        }
        let keep_size = match mode {
            FallocMode::Allocate { keep_size } | FallocMode::ZeroRange { keep_size } => keep_size,
            FallocMode::PunchHole => true,
        };
        let block = BLOCK_SIZE as u64;
        let (first, last) = (offset.div_ceil(block), end / block);
        if !matches!(mode, FallocMode::Allocate { .. }) {
            self.zero_in_cache(ino, offset, end.min(size), first, last)?;
        }
        let f2fs_mode = match mode {
            FallocMode::Allocate { .. } => FallocMode::Allocate { keep_size: true },
            FallocMode::ZeroRange { .. } => FallocMode::ZeroRange { keep_size: true },
            FallocMode::PunchHole => FallocMode::PunchHole,
        };
        // F2FS sees whole blocks only (the edges are the cache's), at most past its size.
        let (f2fs_offset, f2fs_end) = match mode {
            FallocMode::Allocate { .. } => (offset, end),
            _ => (first * block, (last * block).max(first * block)),
        };
        if f2fs_end > f2fs_offset {
            self.on_fs(|fs| fs.fallocate(ino32, f2fs_mode, f2fs_offset, f2fs_end - f2fs_offset))?;
        } else {
            // No whole block: only the times change in F2FS.
            self.on_fs(|fs| fs.touch(ino32))?;
        }
        if !keep_size && end > size {
            self.on_cache(|c, t| c.truncate(t, ino, end).map(|done| ((), done)))?;
        }
        if mode == FallocMode::PunchHole {
            self.space_freed();
        }
        Ok(())
    }

    /// Zeroes `[offset, end)` outside the whole blocks `first..last` through the cache, and
    /// drops the cache's pages of those whole blocks.
    fn zero_in_cache(
        &mut self,
        ino: Ino,
        offset: u64,
        end: u64,
        first: u64,
        last: u64,
    ) -> Result<(), FsError> {
        let block = BLOCK_SIZE as u64;
        let edges = match first > last {
            true => vec![(offset, end)],
            false => vec![
                (offset, (first * block).min(end)),
                ((last * block).max(offset), end),
            ],
        };
        for (from, to) in edges {
            if from < to {
                let zeros = vec![0u8; (to - from) as usize];
                self.on_cache(|c, t| c.write(t, ino, from, &zeros).map(|done| ((), done)))?;
            }
        }
        if last > first {
            self.on_cache(|c, t| c.discard_pages(t, ino, first, last).map(|done| ((), done)))?;
        }
        Ok(())
    }

    fn do_release(&mut self, fh: u64) -> Result<(), FsError> {
        let Some(ino) = self.handles.remove(&fh) else {
            return Ok(());
        };
        let count = self.open_counts.entry(ino).or_default();
        *count = count.saturating_sub(1);
        if *count > 0 {
            return Ok(());
        }
        self.open_counts.remove(&ino);
        if !self.pinned.remove(&ino) {
            return Ok(());
        }
        let orphan = self.stat(ino)?.links == 0;
        if orphan {
            // Dropped before F2FS frees the inode, so nothing is written back to it.
            self.freed(ino)?;
        }
        let ino32 = to_u32(ino)?;
        self.on_fs(|fs| fs.close(ino32))
    }
}

impl<D: BlockDevice + Send + 'static> InodeFs for F2fsTree<D> {
    fn now_ns(&self) -> u64 {
        self.now_ns
    }

    fn tick(&mut self) -> Result<(), FsError> {
        if self.wall.is_none() {
            return Ok(());
        }
        self.on_cache(|cache, now| cache.advance_to(now).map(|()| ((), now)))
    }

    fn root(&self) -> Ino {
        ROOT_INO as Ino
    }

    fn lookup(&mut self, parent: Ino, name: &[u8]) -> Result<Attr, FsError> {
        let start = self.now_ns;
        let result = self.do_lookup(parent, name);
        self.record("lookup", start, result, |_| 0)
    }

    fn getattr(&mut self, ino: Ino) -> Result<Attr, FsError> {
        let start = self.now_ns;
        let result = self.attr(ino);
        self.record("getattr", start, result, |_| 0)
    }

    fn set_size(&mut self, ino: Ino, size: u64) -> Result<Attr, FsError> {
        let start = self.now_ns;
        let result = self.do_set_size(ino, size);
        self.record("truncate", start, result, |_| 0)
    }

    fn setattr(&mut self, ino: Ino, attr: &SetAttr) -> Result<Attr, FsError> {
        let start = self.now_ns;
        let result = (|| {
            let ino32 = to_u32(ino)?;
            self.on_fs(|fs| fs.setattr(ino32, attr))?;
            self.attr(ino)
        })();
        self.record("setattr", start, result, |_| 0)
    }

    fn create(&mut self, parent: Ino, name: &[u8], new: NewAttr) -> Result<Attr, FsError> {
        let start = self.now_ns;
        let result = self.do_create(parent, name, S_IFREG, new, 0);
        self.record("create", start, result, |_| 0)
    }

    fn mkdir(&mut self, parent: Ino, name: &[u8], new: NewAttr) -> Result<Attr, FsError> {
        let start = self.now_ns;
        let result = self.do_create(parent, name, S_IFDIR, new, 0);
        self.record("mkdir", start, result, |_| 0)
    }

    fn mknod(
        &mut self,
        parent: Ino,
        name: &[u8],
        kind: Kind,
        new: NewAttr,
        rdev: u32,
    ) -> Result<Attr, FsError> {
        let start = self.now_ns;
        let result = match type_bits(kind) {
            Some(bits) => self.do_create(parent, name, bits, new, rdev),
            None => Err(FsError::Invalid("mknod of a symlink".into())),
        };
        self.record("mknod", start, result, |_| 0)
    }

    fn fallocate(&mut self, ino: Ino, how: Fallocate) -> Result<(), FsError> {
        let start = self.now_ns;
        let result = self.do_fallocate(ino, how);
        self.record("fallocate", start, result, |_| 0)
    }

    fn unlink(&mut self, parent: Ino, name: &[u8]) -> Result<(), FsError> {
        let start = self.now_ns;
        let result = self.do_unlink(parent, name);
        self.record("unlink", start, result, |_| 0)
    }

    fn rmdir(&mut self, parent: Ino, name: &[u8]) -> Result<(), FsError> {
        let start = self.now_ns;
        let result = self.do_rmdir(parent, name);
        self.record("rmdir", start, result, |_| 0)
    }

    fn rename(
        &mut self,
        parent: Ino,
        name: &[u8],
        new_parent: Ino,
        new_name: &[u8],
    ) -> Result<(), FsError> {
        let start = self.now_ns;
        let result = self.do_rename(parent, name, new_parent, new_name);
        self.record("rename", start, result, |_| 0)
    }

    fn link(&mut self, ino: Ino, new_parent: Ino, new_name: &[u8]) -> Result<Attr, FsError> {
        let start = self.now_ns;
        let result = (|| {
            let (file, dir, name) = (to_u32(ino)?, to_u32(new_parent)?, name_str(new_name)?);
            if !matches!(kind_of(&self.stat(ino)?), Kind::File | Kind::Dir) {
                // fsck.f2fs requires one link per symlink and special file (link(2): EPERM).
                return Err(FsError::NotPermitted(
                    "hard link to a symlink or special file".into(),
                ));
            }
            self.on_fs(|fs| fs.link_in(file, dir, name))?;
            self.namespace_dirty = true;
            self.attr(ino)
        })();
        self.record("link", start, result, |_| 0)
    }

    fn symlink(
        &mut self,
        parent: Ino,
        name: &[u8],
        target: &[u8],
        owner: NewAttr,
    ) -> Result<Attr, FsError> {
        let start = self.now_ns;
        let result = (|| {
            let (dir, name) = (to_u32(parent)?, name_str(name)?);
            let ids = (owner.uid, owner.gid);
            let ino = self.on_fs(|fs| fs.symlink_in_as(dir, name, target, ids))?;
            self.namespace_dirty = true;
            self.attr(ino as Ino)
        })();
        self.record("symlink", start, result, |_| 0)
    }

    fn setxattr(
        &mut self,
        ino: Ino,
        name: &[u8],
        value: &[u8],
        how: XattrSet,
    ) -> Result<(), FsError> {
        let start = self.now_ns;
        let mode = match how {
            XattrSet::Any => XattrMode::Set,
            XattrSet::Create => XattrMode::Create,
            XattrSet::Replace => XattrMode::Replace,
        };
        let result = (|| {
            let ino32 = to_u32(ino)?;
            self.on_fs(|fs| fs.setxattr(ino32, name, value, mode))
        })();
        self.record("setxattr", start, result, |_| value.len() as u64)
    }

    fn getxattr(&mut self, ino: Ino, name: &[u8]) -> Result<Vec<u8>, FsError> {
        let start = self.now_ns;
        let result = (|| {
            let ino32 = to_u32(ino)?;
            self.on_fs(|fs| fs.getxattr(ino32, name))
        })();
        self.record("getxattr", start, result, |v| v.len() as u64)
    }

    fn listxattr(&mut self, ino: Ino) -> Result<Vec<Vec<u8>>, FsError> {
        let start = self.now_ns;
        let result = (|| {
            let ino32 = to_u32(ino)?;
            self.on_fs(|fs| fs.listxattr(ino32))
        })();
        self.record("listxattr", start, result, |_| 0)
    }

    fn removexattr(&mut self, ino: Ino, name: &[u8]) -> Result<(), FsError> {
        let start = self.now_ns;
        let result = (|| {
            let ino32 = to_u32(ino)?;
            self.on_fs(|fs| fs.removexattr(ino32, name))
        })();
        self.record("removexattr", start, result, |_| 0)
    }

    fn readlink(&mut self, ino: Ino) -> Result<Vec<u8>, FsError> {
        let start = self.now_ns;
        let result = (|| {
            let ino32 = to_u32(ino)?;
            self.on_fs(|fs| fs.readlink_ino(ino32))
        })();
        self.record("readlink", start, result, |t| t.len() as u64)
    }

    fn read(&mut self, ino: Ino, offset: u64, out: &mut [u8]) -> Result<usize, FsError> {
        let start = self.now_ns;
        let result = self.do_read(ino, offset, out);
        self.record("read", start, result, |&n| n as u64)
    }

    fn write(&mut self, ino: Ino, offset: u64, data: &[u8]) -> Result<usize, FsError> {
        let start = self.now_ns;
        let result = self.do_write(ino, offset, data);
        self.record("write", start, result, |&n| n as u64)
    }

    fn fsync(&mut self, ino: Ino, data_only: bool) -> Result<(), FsError> {
        let start = self.now_ns;
        let result = self.do_fsync(ino, data_only);
        let op = if data_only { "fdatasync" } else { "fsync" };
        self.record(op, start, result, |_| 0)
    }

    fn readdir(&mut self, dir: Ino) -> Result<Vec<(Ino, Kind, Vec<u8>)>, FsError> {
        let start = self.now_ns;
        let result = (|| {
            let dir32 = to_u32(dir)?;
            let entries = self.on_fs(|fs| fs.readdir_ino(dir32))?;
            Ok(entries
                .into_iter()
                .map(|e| {
                    let kind = kind_of_file(e.kind);
                    if kind == Kind::Dir {
                        self.dirs.insert(e.ino as Ino, (dir, e.name.clone()));
                    }
                    (e.ino as Ino, kind, e.name.into_bytes())
                })
                .collect())
        })();
        self.record("readdir", start, result, |_| 0)
    }

    fn statfs(&mut self) -> Result<FsStats, FsError> {
        let (blocks, free) = self.fs().capacity_blocks();
        Ok(FsStats {
            blocks,
            blocks_free: free,
            files: blocks,
            files_free: free,
        })
    }

    fn sync(&mut self) -> Result<(), FsError> {
        let start = self.now_ns;
        let result = self.do_sync();
        self.record("sync", start, result, |_| 0)
    }

    fn opened(&mut self, ino: Ino, fh: u64, _how: crate::tree::OpenHow) {
        self.handles.insert(fh, ino);
        *self.open_counts.entry(ino).or_default() += 1;
    }

    fn released(&mut self, fh: u64) {
        let start = self.now_ns;
        let result = self.do_release(fh);
        if let Err(error) = self.record("release", start, result, |_| 0) {
            // Nothing to reply to: the kernel does not wait for release's outcome.
            eprintln!("flashstack: release of handle {fh}: {error}");
        }
    }
}
