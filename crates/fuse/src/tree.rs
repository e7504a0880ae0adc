//! The seam between a FUSE mount and a file system core: inode-based operations, as the
//! kernel sends them, with typed errors that become errno in [`crate::errno`].
//!
//! Physics and durability: an implementation is a file system in simulated time on an
//! emulated device. A completed `write` is visible to every later `read` at once; it
//! survives power loss only once `fsync` of that inode (or `sync`) has completed. Namespace
//! changes (create, unlink, rename, mkdir, ...) survive power loss once the parent
//! directory or the file was fsync'd, or after `sync`. `sync` is what unmount calls: after it
//! the device holds a consistent, checkpointed image.

use thiserror::Error;

pub use flashstack_f2fs::{FallocMode, SetAttr, TimeSet, Timestamp};

/// An inode number; the root directory's is [`InodeFs::root`].
pub type Ino = u64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Symlink,
    CharDevice,
    BlockDevice,
    Fifo,
    Socket,
}

/// What `stat` shows of an inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attr {
    pub ino: Ino,
    pub kind: Kind,
    pub size: u64,
    /// Space in use, in 512-byte units (`st_blocks`).
    pub blocks: u64,
    pub nlink: u32,
    /// Permission bits (`0o644`, set-ID and sticky bits included).
    pub perm: u16,
    pub uid: u32,
    pub gid: u32,
    /// A device file's number (`st_rdev`, the kernel's new encoding); 0 otherwise.
    pub rdev: u32,
    pub atime: Timestamp,
    pub mtime: Timestamp,
    pub ctime: Timestamp,
}

/// What a new inode gets besides its type: permission bits (the umask applied) and the
/// owner (the caller's fsuid and fsgid, as FUSE tells them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewAttr {
    pub perm: u16,
    pub uid: u32,
    pub gid: u32,
}

impl NewAttr {
    /// Permission bits `perm`, owned by root.
    pub fn root(perm: u16) -> NewAttr {
        NewAttr {
            perm,
            uid: 0,
            gid: 0,
        }
    }
}

/// Capacity figures for `statfs`, in 4 KiB blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FsStats {
    pub blocks: u64,
    pub blocks_free: u64,
    pub files: u64,
    pub files_free: u64,
}

/// What `fallocate` asks for: a mode F2FS knows (others are refused before reaching the
/// core) and the byte range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fallocate {
    pub mode: FallocMode,
    pub offset: u64,
    pub len: u64,
}

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum FsError {
    #[error("no such file or directory")]
    NotFound,
    #[error("already exists")]
    Exists,
    #[error("not a directory")]
    NotDir,
    #[error("is a directory")]
    IsDir,
    #[error("directory not empty")]
    NotEmpty,
    #[error("no space left")]
    NoSpace,
    #[error("name too long")]
    NameTooLong,
    #[error("invalid argument: {0}")]
    Invalid(String),
    #[error("file too large: {0}")]
    TooLarge(String),
    #[error("not supported: {0}")]
    Unsupported(String),
    #[error("operation not permitted: {0}")]
    NotPermitted(String),
    #[error("no such attribute")]
    NoAttr,
    #[error("I/O error: {0}")]
    Io(String),
}

/// What `setxattr` may do (its `XATTR_CREATE` / `XATTR_REPLACE` flags).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XattrSet {
    /// Create or replace.
    Any,
    /// The attribute must not exist (`EEXIST`).
    Create,
    /// The attribute must exist (`ENODATA`).
    Replace,
}

/// How a file was opened (the flags of `open(2)` that change what reaches storage).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpenHow {
    pub read: bool,
    pub write: bool,
    pub create: bool,
    pub exclusive: bool,
    pub append: bool,
}

/// A file system as a FUSE mount drives it. Names are raw bytes (no encoding assumed).
pub trait InodeFs: Send + 'static {
    fn root(&self) -> Ino;
    fn lookup(&mut self, parent: Ino, name: &[u8]) -> Result<Attr, FsError>;
    fn getattr(&mut self, ino: Ino) -> Result<Attr, FsError>;
    /// Truncates or extends (with zeros) a regular file.
    fn set_size(&mut self, ino: Ino, size: u64) -> Result<Attr, FsError>;
    /// chmod, chown, utimensat: sets what `attr` names and ctime to now. Who may do what
    /// is the kernel's check (the mount uses `default_permissions`), not the core's.
    fn setattr(&mut self, ino: Ino, attr: &SetAttr) -> Result<Attr, FsError>;
    fn create(&mut self, parent: Ino, name: &[u8], new: NewAttr) -> Result<Attr, FsError>;
    fn mkdir(&mut self, parent: Ino, name: &[u8], new: NewAttr) -> Result<Attr, FsError>;
    /// A device file (`rdev`), FIFO or socket.
    fn mknod(
        &mut self,
        _parent: Ino,
        _name: &[u8],
        kind: Kind,
        _new: NewAttr,
        _rdev: u32,
    ) -> Result<Attr, FsError> {
        Err(FsError::Unsupported(format!("{kind:?} files")))
    }
    fn unlink(&mut self, parent: Ino, name: &[u8]) -> Result<(), FsError>;
    fn rmdir(&mut self, parent: Ino, name: &[u8]) -> Result<(), FsError>;
    /// Replaces an existing target (a file, or an empty directory by a directory).
    fn rename(
        &mut self,
        parent: Ino,
        name: &[u8],
        new_parent: Ino,
        new_name: &[u8],
    ) -> Result<(), FsError>;
    fn link(&mut self, ino: Ino, new_parent: Ino, new_name: &[u8]) -> Result<Attr, FsError>;
    /// Reads up to `out.len()` bytes at `offset`; short at the end of the file.
    fn read(&mut self, ino: Ino, offset: u64, out: &mut [u8]) -> Result<usize, FsError>;
    fn write(&mut self, ino: Ino, offset: u64, data: &[u8]) -> Result<usize, FsError>;
    /// `data_only`: fdatasync (metadata only when the size changed).
    fn fsync(&mut self, ino: Ino, data_only: bool) -> Result<(), FsError>;
    /// Entries of a directory, without `.` and `..`, in a stable order.
    fn readdir(&mut self, dir: Ino) -> Result<Vec<(Ino, Kind, Vec<u8>)>, FsError>;
    fn statfs(&mut self) -> Result<FsStats, FsError>;
    /// Makes everything durable and consistent (unmount, `sync`).
    fn sync(&mut self) -> Result<(), FsError>;
    /// A handle of `ino` is closed (`close(2)`; FUSE `flush`). File systems make nothing
    /// durable here (Linux's do not); a raw device file does.
    fn flush(&mut self, _ino: Ino) -> Result<(), FsError> {
        Ok(())
    }
    fn fallocate(&mut self, _ino: Ino, how: Fallocate) -> Result<(), FsError> {
        Err(FsError::Unsupported(format!("{how:?}")))
    }
    /// The mount opened (or created) `ino` as handle `fh` (unique per mount). Reads and
    /// writes name the inode, not the handle; cores that keep per-open state use this.
    fn opened(&mut self, _ino: Ino, _fh: u64, _how: OpenHow) {}
    /// The last user of handle `fh` closed it.
    fn released(&mut self, _fh: u64) {}
    /// Makes a symlink `name` in `parent` pointing to `target` (stored as given), owned
    /// by `owner` (its permission bits are always 0777).
    fn symlink(
        &mut self,
        _parent: Ino,
        _name: &[u8],
        _target: &[u8],
        _owner: NewAttr,
    ) -> Result<Attr, FsError> {
        Err(FsError::Unsupported("symlinks".into()))
    }
    /// The target of symlink `ino`.
    fn readlink(&mut self, _ino: Ino) -> Result<Vec<u8>, FsError> {
        Err(FsError::Unsupported("symlinks".into()))
    }
    /// Sets extended attribute `name` (namespace prefix included) of `ino`.
    fn setxattr(
        &mut self,
        _ino: Ino,
        _name: &[u8],
        _value: &[u8],
        _how: XattrSet,
    ) -> Result<(), FsError> {
        Err(FsError::Unsupported("xattrs".into()))
    }
    /// The value of extended attribute `name` of `ino` ([`FsError::NoAttr`] if none).
    fn getxattr(&mut self, _ino: Ino, _name: &[u8]) -> Result<Vec<u8>, FsError> {
        Err(FsError::Unsupported("xattrs".into()))
    }
    /// The names of `ino`'s extended attributes.
    fn listxattr(&mut self, _ino: Ino) -> Result<Vec<Vec<u8>>, FsError> {
        Err(FsError::Unsupported("xattrs".into()))
    }
    fn removexattr(&mut self, _ino: Ino, _name: &[u8]) -> Result<(), FsError> {
        Err(FsError::Unsupported("xattrs".into()))
    }
    /// The core's virtual clock (nanoseconds), for recording; 0 if it keeps none.
    fn now_ns(&self) -> u64 {
        0
    }
    /// Time passed with no request: a core whose clock follows the wall clock lets its
    /// background work due by now run (MobiFS's checkpoints). The mount calls it on a
    /// timer; cores on request time ignore it.
    fn tick(&mut self) -> Result<(), FsError> {
        Ok(())
    }
}
