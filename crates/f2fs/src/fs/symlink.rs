//! Symbolic links, as the kernel makes them (`f2fs_symlink` in `fs/f2fs/namei.c`):
//!
//! - the inode's mode is `S_IFLNK | 0777`, its one name's dentry has file type
//!   `F2FS_FT_SYMLINK`, and it has exactly one link (fsck.f2fs flags a symlink with any
//!   other count, so hard links to symlinks are refused here);
//! - the target is the file's data, written as `page_symlink` writes it: its bytes without
//!   the terminating NUL, `i_size` = the target's length. A new symlink starts with inline
//!   data (`f2fs_may_inline_data` allows regular files and symlinks), so a target that fits
//!   in the inode's inline area stays in the inode block (`F2FS_INLINE_DATA` and
//!   `F2FS_DATA_EXIST`); a longer one goes to data block 0, as a regular file's data does;
//! - a target is 1 to 4095 bytes (the kernel's limit is the block size counting the NUL;
//!   an empty target is refused by the VFS, and fsck.f2fs flags a symlink of size 0).
//!
//! Like a regular file's creation, the new name is durable at the next checkpoint. Paths
//! given to this F2FS's path-based calls never follow symlinks.

use flashstack_block::BlockDevice;

use super::attr::NewInode;
use super::data::OFF_SIZE;
use super::{F2fs, FsError};
use crate::consts::*;

/// Longest symlink target in bytes (a block, less the NUL the kernel counts).
pub const SYMLINK_TARGET_MAX: usize = BLOCK_SIZE - 1;

impl<D: BlockDevice> F2fs<D> {
    /// Creates a symlink at `path` pointing to `target`; returns its inode number.
    pub fn symlink(&mut self, path: &str, target: &[u8]) -> Result<u32, FsError> {
        self.balanced("symlink", |fs| {
            let (dir, name) = fs.parent_of(path)?;
            fs.symlink_at(dir, name, target, path, (0, 0))
        })
    }

    /// `symlink` by parent directory and name (as a FUSE mount asks).
    pub fn symlink_in(&mut self, dir: u32, name: &str, target: &[u8]) -> Result<u32, FsError> {
        self.symlink_in_as(dir, name, target, (0, 0))
    }

    /// [`F2fs::symlink_in`] owned by `(uid, gid)`.
    pub fn symlink_in_as(
        &mut self,
        dir: u32,
        name: &str,
        target: &[u8],
        owner: (u32, u32),
    ) -> Result<u32, FsError> {
        self.balanced("symlink", |fs| {
            fs.check_parent(dir, name)?;
            fs.symlink_at(dir, name, target, name, owner)
        })
    }

    fn symlink_at(
        &mut self,
        dir: u32,
        name: &str,
        target: &[u8],
        path: &str,
        (uid, gid): (u32, u32),
    ) -> Result<u32, FsError> {
        if target.is_empty() {
            return Err(FsError::NotFound(format!("{path}: empty symlink target")));
        }
        if target.len() > SYMLINK_TARGET_MAX {
            return Err(FsError::NameTooLong(format!(
                "{path}: symlink target of {} bytes",
                target.len()
            )));
        }
        if self.find_entry(dir, name.as_bytes())?.is_some() {
            return Err(FsError::Exists(path.to_string()));
        }
        // Inline data and a cold node, as a regular file's.
        let new = NewInode {
            mode: S_IFLNK | 0o777,
            uid,
            gid,
            rdev: 0,
        };
        let ino = self.new_inode_as(dir, name, &new)?;
        self.add_entry(dir, name.as_bytes(), ino, FT_SYMLINK)?;
        self.write_at(ino, 0, target)?;
        Ok(ino)
    }

    /// The target of the symlink at `path` (the last component is not followed).
    pub fn readlink(&mut self, path: &str) -> Result<Vec<u8>, FsError> {
        let ino = self.lookup(path)?;
        self.readlink_ino(ino)
    }

    /// The target of symlink `ino`.
    pub fn readlink_ino(&mut self, ino: u32) -> Result<Vec<u8>, FsError> {
        if !self.is_symlink_inode(ino)? {
            return Err(FsError::Invalid(format!("inode {ino} is not a symlink")));
        }
        let size = self.inode_u64(ino, OFF_SIZE)?;
        self.timed("readlink", |fs| fs.read_at(ino, 0, size as usize))
    }

    pub(crate) fn is_symlink_inode(&mut self, ino: u32) -> Result<bool, FsError> {
        let node = self.node(ino)?;
        let mode = u16::from_le_bytes([node[0], node[1]]);
        Ok(mode & S_IFMT == S_IFLNK)
    }
}
