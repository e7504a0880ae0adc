//! Where a file's data lies: its block addresses in page order, for fragmentation
//! measurements (extents per file), and the space the file system uses.

use flashstack_block::BlockDevice;

use super::data::{node_path, ADDR_WORD};
use super::{word, F2fs, FsError};
use crate::consts::*;

/// Space in use, as the kernel's `utilization()` counts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct BlockUsage {
    /// Valid blocks in the main area (data and nodes).
    pub valid_blocks: u64,
    /// Blocks available to users (`user_block_count` of the checkpoint).
    pub user_blocks: u64,
    /// Segments free for logs (not current, not waiting for a checkpoint).
    pub free_segments: u32,
    /// Main-area segments.
    pub main_segments: u32,
}

impl<D: BlockDevice> F2fs<D> {
    /// The main-area block address of each data page of a regular file, in page order,
    /// up to its size; `NULL_ADDR` (0) for a hole and `NEW_ADDR` for a page reserved but
    /// not yet written. Empty for a file whose data is inline in its inode. Each node
    /// block of the file is read once.
    pub fn file_block_addrs(&mut self, ino: u32) -> Result<Vec<u32>, FsError> {
        let stat = self.stat_ino(ino)?;
        if stat.inline_data || stat.kind != super::FileKind::File {
            return Ok(Vec::new());
        }
        let pages = stat.size_bytes.div_ceil(BLOCK_SIZE as u64);
        let geo = self.geometry(ino)?;
        let mut addrs = Vec::with_capacity(pages as usize);
        while (addrs.len() as u64) < pages {
            let index = addrs.len() as u64;
            let path = node_path(index, geo.addrs, geo.per_block)?;
            let (node_addrs, first_word) = if path.levels.is_empty() {
                (geo.addrs, ADDR_WORD + geo.extra)
            } else {
                (geo.per_block, 0)
            };
            let span = ((node_addrs - path.leaf) as u64).min(pages - index) as usize;
            match self.dnode(ino, index, false)? {
                Some(d) => {
                    let node = self.node(d.nid)?;
                    let start = if path.levels.is_empty() {
                        first_word + path.leaf
                    } else {
                        d.word
                    };
                    addrs.extend((start..start + span).map(|w| word(node, w)));
                }
                None => addrs.extend(std::iter::repeat_n(NULL_ADDR, span)),
            }
        }
        Ok(addrs)
    }

    /// Valid and user blocks, free and main segments.
    pub fn block_usage(&self) -> BlockUsage {
        BlockUsage {
            valid_blocks: self.segs.valid_blocks,
            user_blocks: self.cp.user_block_count,
            free_segments: self.segs.free_segments(),
            main_segments: self.segs.info.len() as u32,
        }
    }
}
