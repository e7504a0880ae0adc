//! The one place where core errors become errno values for the kernel.

use flashstack_block::BlockError;

use crate::tree::FsError;
use crate::BlockFileError;

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
        FsError::Unsupported(_) => libc_consts::EOPNOTSUPP,
        FsError::Io(_) => libc_consts::EIO,
    }
}

/// errno for a failed block-file request.
pub fn of_block_file(error: &BlockFileError) -> i32 {
    match error {
        BlockFileError::BeyondEnd { .. } => libc_consts::ENOSPC,
        BlockFileError::Device(e) => of_block(e),
    }
}

/// errno for a device error: a device out of space is ENOSPC, a power loss or
/// unreadable data EIO, anything else EIO too (the kernel retries nothing on it).
pub fn of_block(error: &BlockError) -> i32 {
    match error {
        BlockError::NoSpace { .. } => libc_consts::ENOSPC,
        BlockError::OutOfRange { .. } | BlockError::Empty => libc_consts::EINVAL,
        _ => libc_consts::EIO,
    }
}

/// The errno values used here (Linux numbering, as FUSE speaks it).
pub mod libc_consts {
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
}
