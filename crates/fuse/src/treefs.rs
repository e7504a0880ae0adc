//! The FUSE adapter of a file-system mount: every callback decodes its request, calls the
//! [`InodeFs`] core and replies; errors become errno through [`crate::errno`]. No caching:
//! files are opened in direct-I/O mode and attributes are not cached, so every read,
//! write, fsync and stat reaches the core as such.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, InitFlags,
    KernelConfig, LockOwner, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, ReplyXattr,
    Request, WriteFlags,
};

use crate::errno::{self, libc_consts as e};
use crate::tree::{
    Attr, FallocMode, Fallocate, FsError, InodeFs, Kind, NewAttr, OpenHow, SetAttr, TimeSet,
    Timestamp, XattrSet,
};

/// Nothing is cached in the kernel: the core is the only truth.
const TTL: Duration = Duration::ZERO;
/// `fallocate` mode bits (Linux): keep the size, punch a hole, zero a range.
const FALLOC_FL_KEEP_SIZE: i32 = 0x01;
const FALLOC_FL_PUNCH_HOLE: i32 = 0x02;
const FALLOC_FL_ZERO_RANGE: i32 = 0x10;
/// File type bits of a mode (`S_IFMT` and the types `mknod` makes).
const S_IFMT: u32 = 0o170000;
const S_IFREG: u32 = 0o100000;
const S_IFCHR: u32 = 0o020000;
const S_IFBLK: u32 = 0o060000;
const S_IFIFO: u32 = 0o010000;
const S_IFSOCK: u32 = 0o140000;
/// `renameat2` flags (Linux).
const RENAME_NOREPLACE: u32 = 1;
const RENAME_EXCHANGE: u32 = 2;
/// `setxattr` flags (Linux).
const XATTR_CREATE: i32 = 1;
const XATTR_REPLACE: i32 = 2;

/// A mounted [`InodeFs`]. The core is shared so that the caller can read its figures after
/// unmounting. Modes, owners and times are the core's; the kernel checks permissions
/// against them (mount with `default_permissions`).
pub struct TreeFs<F: InodeFs> {
    core: Arc<Mutex<F>>,
    /// The next file handle: unique per mount, so a core can tell opens apart.
    next_fh: AtomicU64,
}

impl<F: InodeFs> TreeFs<F> {
    pub fn new(core: Arc<Mutex<F>>) -> Self {
        TreeFs {
            core,
            next_fh: AtomicU64::new(1),
        }
    }

    fn new_fh(&self) -> u64 {
        self.next_fh.fetch_add(1, Ordering::Relaxed)
    }

    fn core(&self) -> MutexGuard<'_, F> {
        self.core.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// FUSE's root is inode 1; the core's root may be any number.
    fn to_core(&self, ino: INodeNo) -> u64 {
        if ino == INodeNo::ROOT {
            self.core().root()
        } else {
            u64::from(ino)
        }
    }

    fn to_fuse(&self, root: u64, ino: u64) -> INodeNo {
        if ino == root {
            INodeNo::ROOT
        } else {
            INodeNo(ino)
        }
    }

    fn file_attr(&self, root: u64, a: &Attr) -> FileAttr {
        FileAttr {
            ino: self.to_fuse(root, a.ino),
            size: a.size,
            blocks: a.blocks,
            atime: system_time(a.atime),
            mtime: system_time(a.mtime),
            ctime: system_time(a.ctime),
            crtime: system_time(a.ctime),
            kind: file_type(a.kind),
            perm: a.perm,
            nlink: a.nlink,
            uid: a.uid,
            gid: a.gid,
            rdev: a.rdev,
            blksize: 4096,
            flags: 0,
        }
    }

    fn entry(&self, result: Result<Attr, FsError>, reply: ReplyEntry) {
        let root = self.core().root();
        match result {
            Ok(a) => reply.entry(&TTL, &self.file_attr(root, &a), Generation(0)),
            Err(error) => reply.error(fs_err(&error)),
        }
    }

    fn attr(&self, result: Result<Attr, FsError>, reply: ReplyAttr) {
        let root = self.core().root();
        match result {
            Ok(a) => reply.attr(&TTL, &self.file_attr(root, &a)),
            Err(error) => reply.error(fs_err(&error)),
        }
    }
}

fn fs_err(error: &FsError) -> Errno {
    Errno::from_i32(errno::of_fs(error))
}

fn empty(result: Result<(), FsError>, reply: ReplyEmpty) {
    match result {
        Ok(()) => reply.ok(),
        Err(error) => reply.error(fs_err(&error)),
    }
}

/// getxattr/listxattr's size protocol: 0 asks for the size; too small a buffer is ERANGE.
fn reply_xattr(data: &[u8], size: u32, reply: ReplyXattr) {
    if size == 0 {
        reply.size(data.len() as u32);
    } else if data.len() > size as usize {
        reply.error(Errno::from_i32(e::ERANGE));
    } else {
        reply.data(data);
    }
}

fn file_type(kind: Kind) -> FileType {
    match kind {
        Kind::File => FileType::RegularFile,
        Kind::Dir => FileType::Directory,
        Kind::Symlink => FileType::Symlink,
        Kind::CharDevice => FileType::CharDevice,
        Kind::BlockDevice => FileType::BlockDevice,
        Kind::Fifo => FileType::NamedPipe,
        Kind::Socket => FileType::Socket,
    }
}

/// A new inode's permission bits (the umask applied) and owner: the caller's.
fn new_attr(req: &Request, mode: u32, umask: u32) -> NewAttr {
    NewAttr {
        perm: (mode & !umask & 0o7777) as u16,
        uid: req.uid(),
        gid: req.gid(),
    }
}

/// A stored time as the kernel wants it; one the host cannot represent (an image's
/// garbage) shows as the epoch rather than failing the request.
fn system_time(t: Timestamp) -> SystemTime {
    let secs = Duration::from_secs(t.secs.unsigned_abs());
    let whole = match t.secs >= 0 {
        true => UNIX_EPOCH.checked_add(secs),
        false => UNIX_EPOCH.checked_sub(secs),
    };
    whole
        .and_then(|w| w.checked_add(Duration::from_nanos(t.nsec.min(999_999_999) as u64)))
        .unwrap_or(UNIX_EPOCH)
}

fn timestamp(t: SystemTime) -> Timestamp {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => Timestamp::from_secs_nanos(d.as_secs() as i64, d.subsec_nanos() as u64),
        Err(before) => {
            let d = before.duration();
            let (secs, nsec) = (d.as_secs() as i64, d.subsec_nanos());
            match nsec {
                0 => Timestamp { secs: -secs, nsec },
                _ => Timestamp {
                    secs: -secs - 1,
                    nsec: 1_000_000_000 - nsec,
                },
            }
        }
    }
}

fn time_set(t: fuser::TimeOrNow) -> TimeSet {
    match t {
        fuser::TimeOrNow::Now => TimeSet::Now,
        fuser::TimeOrNow::SpecificTime(t) => TimeSet::At(timestamp(t)),
    }
}

/// The kind `mknod` makes of a mode's type bits.
fn mknod_kind(mode: u32) -> Option<Kind> {
    match mode & S_IFMT {
        S_IFREG => Some(Kind::File),
        S_IFCHR => Some(Kind::CharDevice),
        S_IFBLK => Some(Kind::BlockDevice),
        S_IFIFO => Some(Kind::Fifo),
        S_IFSOCK => Some(Kind::Socket),
        _ => None,
    }
}

/// `fallocate`'s mode bits as a mode F2FS knows; others (collapse, insert, unshare) none.
fn falloc_mode(mode: i32) -> Option<FallocMode> {
    const KEEP: i32 = FALLOC_FL_KEEP_SIZE;
    match mode {
        0 => Some(FallocMode::Allocate { keep_size: false }),
        KEEP => Some(FallocMode::Allocate { keep_size: true }),
        m if m == FALLOC_FL_PUNCH_HOLE | KEEP => Some(FallocMode::PunchHole),
        FALLOC_FL_ZERO_RANGE => Some(FallocMode::ZeroRange { keep_size: false }),
        m if m == FALLOC_FL_ZERO_RANGE | KEEP => Some(FallocMode::ZeroRange { keep_size: true }),
        _ => None,
    }
}

impl<F: InodeFs> Filesystem for TreeFs<F> {
    /// Files stay in direct-I/O mode (every read and write reaches the core), but may be
    /// mapped shared (`FUSE_DIRECT_IO_ALLOW_MMAP`, Linux 6.6+): SQLite's WAL index (the
    /// `-shm` file) is a shared mapping. The kernel keeps the two coherent: a direct read
    /// or write first writes back the range's dirty mapped pages, and a direct write drops
    /// the cached pages it covers; mapped pages reach the core when the kernel writes them
    /// back (msync, munmap, fsync, memory pressure). Older kernels refuse shared mappings
    /// of such files (ENODEV), as before.
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        if config
            .add_capabilities(InitFlags::FUSE_DIRECT_IO_ALLOW_MMAP)
            .is_err()
        {
            eprintln!(
                "flashstack: this kernel cannot map direct-I/O files shared (before Linux \
                 6.6): SQLite's WAL mode will fail on the mount"
            );
        }
        Ok(())
    }

    fn destroy(&mut self) {
        // Unmount: checkpoint, so the device holds a consistent image.
        if let Err(error) = self.core().sync() {
            eprintln!("flashstack: sync at unmount failed: {error}");
        }
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let parent = self.to_core(parent);
        let result = self.core().lookup(parent, name.as_bytes());
        self.entry(result, reply);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        let ino = self.to_core(ino);
        let result = self.core().getattr(ino);
        self.attr(result, reply);
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<fuser::TimeOrNow>,
        mtime: Option<fuser::TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let ino = self.to_core(ino);
        let mut core = self.core();
        let mut result = core.getattr(ino);
        if let (Ok(_), Some(size)) = (&result, size) {
            result = core.set_size(ino, size);
        }
        let attr = SetAttr {
            perm: mode.map(|m| (m & 0o7777) as u16),
            uid,
            gid,
            atime: atime.map(time_set),
            mtime: mtime.map(time_set),
        };
        // ctime is the core's (now, with any change).
        if result.is_ok() && attr != SetAttr::default() {
            result = core.setattr(ino, &attr);
        }
        drop(core);
        self.attr(result, reply);
    }

    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        rdev: u32,
        reply: ReplyEntry,
    ) {
        let Some(kind) = mknod_kind(mode) else {
            return reply.error(Errno::from_i32(e::EINVAL));
        };
        let parent = self.to_core(parent);
        let new = new_attr(req, mode, umask);
        let mut core = self.core();
        let result = match kind {
            Kind::File => core.create(parent, name.as_bytes(), new),
            _ => core.mknod(parent, name.as_bytes(), kind, new, rdev),
        };
        drop(core);
        self.entry(result, reply);
    }

    fn mkdir(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let parent = self.to_core(parent);
        let result = self
            .core()
            .mkdir(parent, name.as_bytes(), new_attr(req, mode, umask));
        self.entry(result, reply);
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let parent = self.to_core(parent);
        empty(self.core().unlink(parent, name.as_bytes()), reply);
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let parent = self.to_core(parent);
        empty(self.core().rmdir(parent, name.as_bytes()), reply);
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let bits = flags.bits();
        if bits & RENAME_EXCHANGE != 0 || bits & !(RENAME_NOREPLACE | RENAME_EXCHANGE) != 0 {
            return reply.error(Errno::from_i32(e::EINVAL));
        }
        let (parent, newparent) = (self.to_core(parent), self.to_core(newparent));
        let mut core = self.core();
        if bits & RENAME_NOREPLACE != 0 && core.lookup(newparent, newname.as_bytes()).is_ok() {
            return reply.error(Errno::from_i32(e::EEXIST));
        }
        let result = core.rename(parent, name.as_bytes(), newparent, newname.as_bytes());
        drop(core);
        empty(result, reply);
    }

    fn link(
        &self,
        _req: &Request,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        let (ino, newparent) = (self.to_core(ino), self.to_core(newparent));
        let result = self.core().link(ino, newparent, newname.as_bytes());
        self.entry(result, reply);
    }

    fn symlink(
        &self,
        req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        let parent = self.to_core(parent);
        let owner = new_attr(req, 0o777, 0);
        let result = self.core().symlink(
            parent,
            link_name.as_bytes(),
            target.as_os_str().as_bytes(),
            owner,
        );
        self.entry(result, reply);
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        let ino = self.to_core(ino);
        match self.core().readlink(ino) {
            Ok(target) => reply.data(&target),
            Err(error) => reply.error(fs_err(&error)),
        }
    }

    fn setxattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        name: &OsStr,
        value: &[u8],
        flags: i32,
        position: u32,
        reply: ReplyEmpty,
    ) {
        let how = match flags {
            0 => XattrSet::Any,
            XATTR_CREATE => XattrSet::Create,
            XATTR_REPLACE => XattrSet::Replace,
            _ => return reply.error(Errno::from_i32(e::EINVAL)),
        };
        if position != 0 {
            return reply.error(Errno::from_i32(e::EINVAL));
        }
        let ino = self.to_core(ino);
        empty(
            self.core().setxattr(ino, name.as_bytes(), value, how),
            reply,
        );
    }

    fn getxattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, size: u32, reply: ReplyXattr) {
        let ino = self.to_core(ino);
        match self.core().getxattr(ino, name.as_bytes()) {
            Ok(value) => reply_xattr(&value, size, reply),
            Err(error) => reply.error(fs_err(&error)),
        }
    }

    fn listxattr(&self, _req: &Request, ino: INodeNo, size: u32, reply: ReplyXattr) {
        let ino = self.to_core(ino);
        match self.core().listxattr(ino) {
            Ok(names) => {
                let list: Vec<u8> = names
                    .into_iter()
                    .flat_map(|mut n| {
                        n.push(0);
                        n
                    })
                    .collect();
                reply_xattr(&list, size, reply);
            }
            Err(error) => reply.error(fs_err(&error)),
        }
    }

    fn removexattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let ino = self.to_core(ino);
        empty(self.core().removexattr(ino, name.as_bytes()), reply);
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let ino = self.to_core(ino);
        let mut core = self.core();
        match core.getattr(ino) {
            Ok(a) if a.kind == Kind::File => {
                let fh = self.new_fh();
                core.opened(ino, fh, open_how(flags.0, false));
                reply.opened(FileHandle(fh), FopenFlags::FOPEN_DIRECT_IO)
            }
            Ok(_) => reply.error(Errno::from_i32(e::EISDIR)),
            Err(error) => reply.error(fs_err(&error)),
        }
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let parent = self.to_core(parent);
        let mut core = self.core();
        let root = core.root();
        match core.create(parent, name.as_bytes(), new_attr(req, mode, umask)) {
            Ok(a) => {
                let fh = self.new_fh();
                core.opened(a.ino, fh, open_how(flags, true));
                drop(core);
                let attr = self.file_attr(root, &a);
                reply.created(
                    &TTL,
                    &attr,
                    Generation(0),
                    FileHandle(fh),
                    FopenFlags::FOPEN_DIRECT_IO,
                )
            }
            Err(error) => reply.error(fs_err(&error)),
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let ino = self.to_core(ino);
        let mut buffer = vec![0u8; size as usize];
        match self.core().read(ino, offset, &mut buffer) {
            Ok(n) => reply.data(&buffer[..n]),
            Err(error) => reply.error(fs_err(&error)),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let ino = self.to_core(ino);
        match self.core().write(ino, offset, data) {
            Ok(n) => reply.written(n as u32),
            Err(error) => reply.error(fs_err(&error)),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        let ino = self.to_core(ino);
        empty(self.core().flush(ino), reply);
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.core().released(fh.0);
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        let ino = self.to_core(ino);
        empty(self.core().fsync(ino, datasync), reply);
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        let ino = self.to_core(ino);
        empty(self.core().fsync(ino, datasync), reply);
    }

    fn fallocate(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        let Some(mode) = falloc_mode(mode) else {
            return reply.error(Errno::from_i32(e::EOPNOTSUPP));
        };
        let how = Fallocate {
            mode,
            offset,
            len: length,
        };
        let ino = self.to_core(ino);
        empty(self.core().fallocate(ino, how), reply);
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let core_ino = self.to_core(ino);
        let mut core = self.core();
        let root = core.root();
        let listing = match core.readdir(core_ino) {
            Ok(listing) => listing,
            Err(error) => return reply.error(fs_err(&error)),
        };
        drop(core);
        let dots = [
            (ino, FileType::Directory, b".".to_vec()),
            (ino, FileType::Directory, b"..".to_vec()),
        ];
        let entries = dots.into_iter().chain(
            listing
                .into_iter()
                .map(|(i, kind, name)| (self.to_fuse(root, i), file_type(kind), name)),
        );
        for (i, (entry_ino, kind, name)) in entries.enumerate().skip(offset as usize) {
            if reply.add(entry_ino, i as u64 + 1, kind, OsStr::from_bytes(&name)) {
                break;
            }
        }
        reply.ok();
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        match self.core().statfs() {
            Ok(s) => reply.statfs(
                s.blocks,
                s.blocks_free,
                s.blocks_free,
                s.files,
                s.files_free,
                4096,
                255,
                4096,
            ),
            Err(error) => reply.error(fs_err(&error)),
        }
    }
}

/// `open(2)` flags (Linux values) as [`OpenHow`]. `O_TRUNC` is left out: the kernel sends
/// it to the core as a separate size change.
fn open_how(flags: i32, created: bool) -> OpenHow {
    const O_ACCMODE: i32 = 0o3;
    const O_WRONLY: i32 = 0o1;
    const O_RDWR: i32 = 0o2;
    const O_CREAT: i32 = 0o100;
    const O_EXCL: i32 = 0o200;
    const O_APPEND: i32 = 0o2000;
    let access = flags & O_ACCMODE;
    OpenHow {
        read: access != O_WRONLY,
        write: access == O_WRONLY || access == O_RDWR,
        create: created || flags & O_CREAT != 0,
        exclusive: flags & O_EXCL != 0,
        append: flags & O_APPEND != 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_round_trip_before_and_after_the_epoch() {
        for (secs, nsec) in [(0, 0), (1_767_225_600, 5), (-1, 999_999_999), (-86_400, 1)] {
            let t = Timestamp { secs, nsec };
            assert_eq!(timestamp(system_time(t)), t);
        }
        let garbage = Timestamp {
            secs: i64::MIN,
            nsec: u32::MAX,
        };
        // Never a panic on what an image holds.
        let _ = system_time(garbage);
    }
}
