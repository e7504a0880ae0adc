//! The one place where core errors become errno values for the kernel.

use crate::tree::FsError;

/// errno for a failed file-system request.
pub fn of_fs(error: &FsError) -> i32 {
    match error {
        FsError::NotFound => libc_consts::ENOENT,
        FsError::Exists => libc_consts::EEXIST,
        FsError::NotDir => libc_consts::ENOTDIR,
        FsError::IsDir => libc_consts::EISDIR,
        FsError::NotEmpty => libc_consts::ENOTEMPTY,
        FsError::NoSpace => libc_consts::ENOSPC,
        FsError::NameTooLong => libc_consts::ENAMETOOLONG,
        FsError::Invalid(_) => libc_consts::EINVAL,
        FsError::TooLarge(_) => libc_consts::EFBIG,
        FsError::Unsupported(_) => libc_consts::EOPNOTSUPP,
        FsError::NotPermitted(_) => libc_consts::EPERM,
        FsError::NoAttr => libc_consts::ENODATA,
        FsError::Io(_) => libc_consts::EIO,
    }
}

/// The errno values used here (Linux numbering, as FUSE speaks it).
pub mod libc_consts {
    pub const EPERM: i32 = 1;
    pub const ENOENT: i32 = 2;
    pub const EIO: i32 = 5;
    pub const EBADF: i32 = 9;
    pub const EACCES: i32 = 13;
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
    pub const ERANGE: i32 = 34;
    /// `ENOATTR` is `ENODATA` on Linux.
    pub const ENODATA: i32 = 61;
}
