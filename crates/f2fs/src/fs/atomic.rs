//! Atomic writes (`F2FS_IOC_START_ATOMIC_WRITE` / `COMMIT` / `ABORT`, which Android's
//! SQLite uses for `SQLITE_IOCAP_BATCH_ATOMIC`).
//!
//! The kernel stages the pages of an atomic file in a hidden copy-on-write inode and, at
//! commit, swaps their addresses into the file's direct nodes and runs the fsync path with
//! the fsync mark only on the last node of the chain. Here the page cache above stages the
//! pages (start and abort never reach the file system) and hands them all down in one
//! [`F2fs::commit_atomic_write`], which keeps the same rule:
//!
//! **All or nothing.** Every staged page goes to a *new* block (never in place, whatever
//! the IPU policy: the blocks the last durable state points to stay intact), in the hot
//! data log as the kernel's COW blocks do; then the file's size, then the fsync chain of
//! its dirty direct nodes and inode, the fsync mark on the last one only. Roll-forward
//! replays an inode's nodes only up to its last fsync mark, so a power cut anywhere before
//! that last node is on the device recovers the previous state (the new blocks are past
//! the checkpointed log positions, i.e. free); once it is there, recovery replays every
//! address of the commit. Where the fsync path checkpoints instead (a new file, a shrink,
//! the kernel's `cp_reason`s) the checkpoint is itself atomic. No checkpoint can fall in
//! the middle: cleaning runs before the first block is written (and the space the commit
//! needs is checked then, so it cannot fail half-way for want of space), and none runs
//! inside the operation.

use flashstack_block::BlockDevice;

use super::data::{MAX_FILE_BYTES, OFF_SIZE};
use super::policy::{self, DataTemperature};
use super::{F2fs, FsError};
use crate::codec::Block;
use crate::consts::*;

/// The log an atomic commit's pages go to: hot data, as the kernel's COW blocks.
pub(super) fn atomic_data_log() -> usize {
    policy::data_log(DataTemperature {
        gc_moving: false,
        cold_file: false,
        hot_file: false,
        hot_data: true,
        dir: false,
    })
}

impl<D: BlockDevice> F2fs<D> {
    /// Commits an atomic write of `ino`: `pages` (page index and content, each index at
    /// most once) and the size `size_bytes` become durable all or nothing (see the module
    /// doc). Counts as an fsync. Fails with [`FsError::NoSpace`] before writing anything
    /// if the pages would not fit.
    pub fn commit_atomic_write(
        &mut self,
        ino: u32,
        pages: &[(u64, &Block)],
        size_bytes: u64,
    ) -> Result<(), FsError> {
        if self.is_dir_inode(ino)? {
            return Err(FsError::IsDir(format!("inode {ino}")));
        }
        if size_bytes > MAX_FILE_BYTES {
            return Err(FsError::TooLarge(format!("size {size_bytes}")));
        }
        // Cleaning (and the checkpoint it ends with) before anything of the commit.
        self.balance()?;
        self.timed("atomic_commit", |fs| {
            fs.writable("atomic_commit")?;
            fs.commit_atomic_op(ino, pages, size_bytes)
        })?;
        self.balance()?;
        self.balance_fs_bg(false)
    }

    fn commit_atomic_op(
        &mut self,
        ino: u32,
        pages: &[(u64, &Block)],
        size_bytes: u64,
    ) -> Result<(), FsError> {
        let bs = BLOCK_SIZE as u64;
        let keep = size_bytes.div_ceil(bs);
        let pages: Vec<(u64, &Block)> = pages
            .iter()
            .copied()
            .filter(|&(index, _)| index < keep)
            .collect();
        self.ensure_atomic_space(pages.len() as u64)?;
        if self.has_inline(ino, F2FS_INLINE_DATA)? {
            // Atomic files never keep inline data (`f2fs_may_inline_data`).
            self.convert_inline_data(ino)?;
        }
        self.zero_post_eof(ino, size_bytes, |i| pages.iter().any(|&(p, _)| p == i))?;
        let old_size = self.inode_u64(ino, OFF_SIZE)?;
        if size_bytes < old_size {
            // Blocks past the new end go; the fsync below then checkpoints (a shrink).
            self.since_cp.moved_or_shrunk.insert(ino);
            self.free_blocks_from(ino, keep)?;
        }
        let log = atomic_data_log();
        for (index, page) in pages {
            self.store_page_out_of_place(ino, index, page, log)?;
        }
        self.set_inode_u64(ino, OFF_SIZE, size_bytes)?;
        self.touch(ino)?;
        self.metrics.atomic_commits += 1;
        self.fsync_op(ino)
    }

    /// The blocks of the commit (data, and at worst a new direct node per page plus the
    /// inode) fit in the user capacity and in the free segments above the reserve.
    pub(super) fn ensure_atomic_space(&mut self, pages: u64) -> Result<(), FsError> {
        let nodes = self.dirty_nodes.len() as u64 + pages + 1;
        if self.used_blocks() + nodes + pages > self.cp.user_block_count {
            return Err(FsError::NoSpace);
        }
        let segs = (pages + nodes).div_ceil(BLOCKS_PER_SEG as u64) + 2;
        if (self.segs.free_segments() as u64) < self.cp.rsvd_segment_count as u64 + segs {
            return Err(FsError::NoSpace);
        }
        Ok(())
    }
}
