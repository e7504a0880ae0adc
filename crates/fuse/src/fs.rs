//! The FUSE adapter of block-file mode: a root directory holding one file, `disk.img`,
//! whose bytes are the device's. Each callback decodes its request, calls [`BlockFile`] and
//! replies; errors become errno through [`crate::errno`].

use std::ffi::OsStr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, UNIX_EPOCH};

use flashstack_block::{BlockDevice, LBA_SIZE};
use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, LockOwner,
    OpenFlags, ReplyAttr, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen,
    ReplyStatfs, ReplyWrite, Request, WriteFlags,
};

use crate::errno::{self, libc_consts as e};
use crate::{BlockFile, BlockFileError};

/// The one file of block-file mode.
pub const DISK_FILE_NAME: &str = "disk.img";
const DISK_INO: INodeNo = INodeNo(2);
/// Attributes never change behind the kernel's back except through us.
const TTL: Duration = Duration::from_secs(1);
/// `fallocate` mode bits (Linux): keep the size, punch a hole.
const FALLOC_FL_KEEP_SIZE: i32 = 0x01;
const FALLOC_FL_PUNCH_HOLE: i32 = 0x02;

/// Block-file mode's file system. The device is shared so that the caller can read its
/// counters after unmounting.
pub struct BlockFs<D: BlockDevice + Send + 'static> {
    file: Arc<Mutex<BlockFile<D>>>,
    uid: u32,
    gid: u32,
}

impl<D: BlockDevice + Send + 'static> BlockFs<D> {
    /// `uid`/`gid` own the files (the mounting user).
    pub fn new(file: Arc<Mutex<BlockFile<D>>>, uid: u32, gid: u32) -> Self {
        BlockFs { file, uid, gid }
    }

    fn file(&self) -> MutexGuard<'_, BlockFile<D>> {
        // A panic while holding the lock is a simulator bug; the state is still the
        // device's, so keep serving rather than poisoning every later request.
        self.file.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn attr(&self, ino: INodeNo) -> Option<FileAttr> {
        let (kind, perm, nlink, size) = match ino {
            INodeNo::ROOT => (FileType::Directory, 0o755, 2, 0),
            DISK_INO => (FileType::RegularFile, 0o644, 1, self.file().size_bytes()),
            _ => return None,
        };
        Some(FileAttr {
            ino,
            size,
            blocks: size.div_ceil(512),
            atime: UNIX_EPOCH,
            mtime: UNIX_EPOCH,
            ctime: UNIX_EPOCH,
            crtime: UNIX_EPOCH,
            kind,
            perm,
            nlink,
            uid: self.uid,
            gid: self.gid,
            rdev: 0,
            blksize: LBA_SIZE as u32,
            flags: 0,
        })
    }
}

fn err(code: i32) -> Errno {
    Errno::from_i32(code)
}

fn file_err(error: &BlockFileError) -> Errno {
    err(errno::of_block_file(error))
}

impl<D: BlockDevice + Send + 'static> Filesystem for BlockFs<D> {
    fn destroy(&mut self) {
        // Unmounting makes everything durable, as a clean shutdown of the device would.
        let _ = self.file().sync();
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        if parent != INodeNo::ROOT {
            return reply.error(err(e::ENOTDIR));
        }
        match (name == DISK_FILE_NAME)
            .then(|| self.attr(DISK_INO))
            .flatten()
        {
            Some(attr) => reply.entry(&TTL, &attr, Generation(0)),
            None => reply.error(err(e::ENOENT)),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.attr(ino) {
            Some(attr) => reply.attr(&TTL, &attr),
            None => reply.error(err(e::ENOENT)),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<fuser::TimeOrNow>,
        _mtime: Option<fuser::TimeOrNow>,
        _ctime: Option<std::time::SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<std::time::SystemTime>,
        _chgtime: Option<std::time::SystemTime>,
        _bkuptime: Option<std::time::SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let Some(attr) = self.attr(ino) else {
            return reply.error(err(e::ENOENT));
        };
        // The device's size is fixed: only a no-op truncate (as O_TRUNC-free tools send)
        // is accepted; times and modes are not stored.
        match size {
            Some(s) if s != attr.size => reply.error(err(e::EFBIG)),
            _ => reply.attr(&TTL, &attr),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        if ino != DISK_INO {
            return reply.error(err(e::EISDIR));
        }
        // Direct I/O: no kernel page cache between the loop device and the FTL, so every
        // read, write and flush reaches the device as such.
        reply.opened(FileHandle(0), FopenFlags::FOPEN_DIRECT_IO);
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
        if ino != DISK_INO {
            return reply.error(err(e::EISDIR));
        }
        let mut buffer = vec![0u8; size as usize];
        match self.file().read_at(offset, &mut buffer) {
            Ok(n) => reply.data(&buffer[..n]),
            Err(error) => reply.error(file_err(&error)),
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
        if ino != DISK_INO {
            return reply.error(err(e::EISDIR));
        }
        match self.file().write_at(offset, data) {
            Ok(n) => reply.written(n as u32),
            Err(error) => reply.error(file_err(&error)),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        // close(): nothing is buffered above the device, so nothing to do.
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        match self.file().sync() {
            Ok(()) => reply.ok(),
            Err(error) => reply.error(file_err(&error)),
        }
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
        if ino != DISK_INO {
            return reply.error(err(e::EISDIR));
        }
        // The loop driver turns discards into hole punches: they reach the FTL as TRIM.
        let result = match mode {
            m if m == FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE => {
                self.file().discard(offset, length)
            }
            // Preallocation within the fixed size changes nothing.
            0 | FALLOC_FL_KEEP_SIZE => Ok(()),
            _ => return reply.error(err(e::EOPNOTSUPP)),
        };
        match result {
            Ok(()) => reply.ok(),
            Err(error) => reply.error(file_err(&error)),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        if ino != INodeNo::ROOT {
            return reply.error(err(e::ENOTDIR));
        }
        let entries = [
            (INodeNo::ROOT, FileType::Directory, "."),
            (INodeNo::ROOT, FileType::Directory, ".."),
            (DISK_INO, FileType::RegularFile, DISK_FILE_NAME),
        ];
        for (i, (ino, kind, name)) in entries.iter().enumerate().skip(offset as usize) {
            if reply.add(*ino, i as u64 + 1, *kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let blocks = self.file().size_bytes() / LBA_SIZE as u64;
        reply.statfs(blocks, 0, 0, 2, 0, LBA_SIZE as u32, 255, LBA_SIZE as u32);
    }
}
