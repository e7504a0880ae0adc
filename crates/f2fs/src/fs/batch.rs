//! Batch atomic commits: several files' pages and sizes made durable all or nothing by one
//! checkpoint (MobiFS's checkpoint of sealed cache transactions, `docs/mobifs.md`).
//!
//! The rule is that of [`F2fs::commit_atomic_write`] (`atomic.rs`) stretched over several
//! inodes: every page goes to a *new* block (never in place, whatever the IPU policy or the
//! file's temperature), so the blocks the last checkpoint points to stay intact; cleaning
//! runs before the first block and after the last, never inside; and instead of one
//! inode's fsync chain the batch ends with a checkpoint, the file system's one multi-file
//! atomic step. Nothing of the batch carries an fsync mark, so a power cut anywhere before
//! the checkpoint pack is complete recovers the previous checkpoint (roll-forward finds
//! nothing of it); once the pack is on the device, every file of the batch is there.

use flashstack_block::BlockDevice;

use super::data::{MAX_FILE_BYTES, OFF_SIZE};
use super::{F2fs, FsError};
use crate::codec::Block;
use crate::consts::*;

/// One file of a batch commit.
#[derive(Clone, Debug)]
pub struct BatchFile<'a> {
    pub ino: u32,
    /// Page index and content, ascending, each index at most once.
    pub pages: Vec<(u64, &'a Block)>,
    /// The file's size after the commit.
    pub size_bytes: u64,
    /// The smallest size the file had since the state on disk (a truncate): blocks from
    /// here on are freed first, so pages not in `pages` read as zeros. The page holding a
    /// partial cut must be in `pages` (the caller rewrites it with its tail zeroed).
    pub cut_bytes: u64,
}

impl<D: BlockDevice> F2fs<D> {
    /// Commits `files` all or nothing with one checkpoint (see the module doc). Fails with
    /// [`FsError::NoSpace`] before writing anything if the pages would not fit.
    pub fn commit_atomic_batch(&mut self, files: &[BatchFile<'_>]) -> Result<(), FsError> {
        for file in files {
            if self.is_dir_inode(file.ino)? {
                return Err(FsError::IsDir(format!("inode {}", file.ino)));
            }
            if file.size_bytes > MAX_FILE_BYTES {
                return Err(FsError::TooLarge(format!("size {}", file.size_bytes)));
            }
        }
        // Cleaning (and the checkpoint it ends with) before anything of the batch.
        self.balance()?;
        self.timed("atomic_batch", |fs| {
            fs.writable("atomic_batch")?;
            let pages: u64 = files.iter().map(|f| f.pages.len() as u64).sum();
            fs.ensure_atomic_space(pages)?;
            for file in files {
                fs.batch_file_op(file)?;
            }
            fs.checkpoint(false)
        })?;
        self.balance()?;
        self.balance_fs_bg(false)
    }

    fn batch_file_op(&mut self, file: &BatchFile<'_>) -> Result<(), FsError> {
        let (ino, bs) = (file.ino, BLOCK_SIZE as u64);
        let keep = file.size_bytes.div_ceil(bs);
        if self.has_inline(ino, F2FS_INLINE_DATA)? {
            self.convert_inline_data(ino)?;
        }
        let old_size = self.inode_u64(ino, OFF_SIZE)?;
        let cut = file.cut_bytes.min(old_size).min(file.size_bytes);
        if cut < old_size {
            self.since_cp.moved_or_shrunk.insert(ino);
            self.free_blocks_from(ino, cut.div_ceil(bs))?;
            self.set_inode_u64(ino, OFF_SIZE, cut)?;
        }
        let rewritten = |i: u64| file.pages.iter().any(|&(p, _)| p == i);
        self.zero_post_eof(ino, file.size_bytes, rewritten)?;
        let log = super::atomic::atomic_data_log();
        for &(index, page) in file.pages.iter().filter(|&&(i, _)| i < keep) {
            self.store_page_out_of_place(ino, index, page, log)?;
        }
        self.set_inode_u64(ino, OFF_SIZE, file.size_bytes)?;
        self.touch(ino)
    }
}
