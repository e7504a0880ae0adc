//! File-operation errors and their one errno mapping.

use thiserror::Error;

use crate::error::F2fsError;

/// Why a file operation failed. Paths and names are carried for the message.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum FsError {
    #[error("{0}: no such file or directory")]
    NotFound(String),
    #[error("{0}: already exists")]
    Exists(String),
    #[error("{0}: not a directory")]
    NotDir(String),
    #[error("{0}: is a directory")]
    IsDir(String),
    #[error("{0}: directory not empty")]
    NotEmpty(String),
    #[error("no space left on the file system")]
    NoSpace,
    #[error("{0}: name longer than 255 bytes")]
    NameTooLong(String),
    #[error("invalid argument: {0}")]
    Invalid(String),
    #[error("file too large: {0}")]
    TooLarge(String),
    #[error("not supported for read-write mounting: {0}")]
    Unsupported(String),
    #[error("corrupt file system: {0}")]
    Corrupt(String),
    #[error("{0}: no such attribute")]
    NoAttr(String),
    #[error("read-only file system: {0}")]
    ReadOnly(String),
    /// A device error or a corruption of the image ([`crate::Corruption`], typed, naming
    /// the structure and where it is).
    #[error(transparent)]
    Device(#[from] F2fsError),
}

impl From<crate::error::Corruption> for FsError {
    fn from(c: crate::error::Corruption) -> Self {
        FsError::Device(F2fsError::Corrupt(c))
    }
}

/// Linux errno values this layer reports.
mod errno {
    pub const ENOENT: i32 = 2;
    pub const EIO: i32 = 5;
    pub const EEXIST: i32 = 17;
    pub const ENOTDIR: i32 = 20;
    pub const EISDIR: i32 = 21;
    pub const EINVAL: i32 = 22;
    pub const EFBIG: i32 = 27;
    pub const ENOSPC: i32 = 28;
    pub const ENAMETOOLONG: i32 = 36;
    pub const ENOTEMPTY: i32 = 39;
    pub const EROFS: i32 = 30;
    pub const EOPNOTSUPP: i32 = 95;
    /// `ENOATTR` is `ENODATA` on Linux.
    pub const ENODATA: i32 = 61;
    /// `EFSCORRUPTED` in the kernel.
    pub const EUCLEAN: i32 = 117;
}

impl FsError {
    /// Whether the file system or the device under it ran out of space: a compressing
    /// device whose flash is full refuses writes the file system thought would fit
    /// (`flashstack_ftl::csd`), and that is ENOSPC too, never EIO.
    pub fn is_no_space(&self) -> bool {
        matches!(
            self,
            FsError::NoSpace
                | FsError::Device(F2fsError::Device(
                    flashstack_block::BlockError::NoSpace { .. }
                ))
        )
    }

    /// The errno a kernel F2FS returns for this failure (the only mapping in the crate).
    pub fn errno(&self) -> i32 {
        use errno::*;
        if self.is_no_space() {
            return ENOSPC;
        }
        match self {
            FsError::NotFound(_) => ENOENT,
            FsError::Exists(_) => EEXIST,
            FsError::NotDir(_) => ENOTDIR,
            FsError::IsDir(_) => EISDIR,
            FsError::NotEmpty(_) => ENOTEMPTY,
            FsError::NoSpace => ENOSPC,
            FsError::NameTooLong(_) => ENAMETOOLONG,
            FsError::Invalid(_) => EINVAL,
            FsError::TooLarge(_) => EFBIG,
            FsError::Unsupported(_) => EOPNOTSUPP,
            FsError::Corrupt(_) => EUCLEAN,
            FsError::NoAttr(_) => ENODATA,
            FsError::ReadOnly(_) => EROFS,
            FsError::Device(F2fsError::Corrupt(_)) => EUCLEAN,
            FsError::Device(_) => EIO,
        }
    }
}

/// A corruption found while walking the image.
pub(crate) fn corrupt(what: impl Into<String>) -> FsError {
    FsError::Corrupt(what.into())
}
