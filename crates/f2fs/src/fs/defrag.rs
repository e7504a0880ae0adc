//! The copying defragmenter's mechanism: a file's written pages read and written again,
//! in page order, to new blocks of its data log, so they land on consecutive addresses
//! as far as the log's free space allows. This is what F2FS's `F2FS_IOC_DEFRAGMENT`
//! does (the range's pages are dirtied and written out of place through the normal
//! write path, never in place) and what e4defrag achieves on ext4 (a donor file written
//! contiguously, its blocks swapped in): every page of the file costs one read and one
//! program of user data, which is what the Janusd seed's logical defragmenter avoids.
//!
//! Which files to defragment is the caller's decision (`flashstack-janusd`'s policy);
//! this module only carries it out. The moved pages become durable at the next
//! checkpoint (or the file's fsync), as with any write.

use flashstack_block::BlockDevice;

use super::data::BALANCE_EVERY_PAGES;
use super::{F2fs, FsError};
use crate::consts::*;

/// What rewriting one file cost the file system.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CopyDefragOutcome {
    /// Data pages read from the device (one per written page).
    pub pages_read: u64,
    /// Data pages written to new blocks.
    pub pages_written: u64,
}

impl<D: BlockDevice> F2fs<D> {
    /// Rewrites every written page of regular file `ino` out of place to its data log, in
    /// page order; holes, reserved-only pages and inline data stay as they are. Refused
    /// with [`FsError::NoSpace`] before anything moves when the free blocks could not
    /// hold a second copy of the file (the kernel's ioctl refuses when free sections
    /// run short, too). Cleaning may run between chunks of pages, as during any long
    /// write.
    pub fn defrag_copy(&mut self, ino: u32) -> Result<CopyDefragOutcome, FsError> {
        self.check_file(ino)?;
        self.writable("defrag")?;
        let addrs = self.file_block_addrs(ino)?;
        let written: Vec<u64> = (0..addrs.len() as u64)
            .filter(|&i| !matches!(addrs[i as usize], NULL_ADDR | NEW_ADDR))
            .collect();
        let free = self.cp.user_block_count.saturating_sub(self.used_blocks());
        if written.len() as u64 > free {
            return Err(FsError::NoSpace);
        }
        let log = self.data_log(ino)?;
        let mut out = CopyDefragOutcome::default();
        for chunk in written.chunks(BALANCE_EVERY_PAGES as usize) {
            self.balanced("defrag", |fs| {
                for &index in chunk {
                    let page = fs.load_page(ino, index)?;
                    fs.store_page_out_of_place(ino, index, &page, log)?;
                    out.pages_read += 1;
                    out.pages_written += 1;
                }
                Ok(())
            })?;
        }
        Ok(out)
    }

    /// The longest run of consecutive free segments of the main area, in blocks: the
    /// largest extent a log could lay down without a break right now.
    pub fn longest_free_run_blocks(&self) -> u64 {
        let (mut best, mut run) = (0u64, 0u64);
        for segno in 0..self.segs.info.len() as u32 {
            if self.segs.is_free(segno) {
                run += 1;
                best = best.max(run);
            } else {
                run = 0;
            }
        }
        best * BLOCKS_PER_SEG as u64
    }
}
