//! `fallocate(2)` as F2FS does it (`f2fs_fallocate` in `fs/f2fs/file.c`):
//!
//! - **Allocate** (mode 0, `FALLOC_FL_KEEP_SIZE`; `f2fs_expand_inode_data`): every hole
//!   in the blocks the range touches is *reserved*: its address becomes `NEW_ADDR`
//!   (`f2fs_reserve_new_blocks`), counted in `i_blocks` and in the checkpoint's
//!   `valid_block_count` like a written block but with no block on the device. It reads as
//!   zeros; its first write takes a real block out of place (there is nothing to update in
//!   place). Without `KEEP_SIZE` the size grows to the end of the range. Here the whole
//!   reservation is checked against the free space first: `ENOSPC` changes nothing (the
//!   kernel keeps what it reserved before running out).
//! - **Punch a hole** (`FALLOC_FL_PUNCH_HOLE | KEEP_SIZE`; `f2fs_punch_hole`): partial
//!   blocks at the edges are zeroed (read, zeroed, written), whole blocks are freed
//!   (`f2fs_truncate_hole`: written blocks invalidated, reservations released, the direct
//!   nodes kept). The size never changes.
//! - **Zero a range** (`FALLOC_FL_ZERO_RANGE`, with or without `KEEP_SIZE`;
//!   `f2fs_zero_range`): partial edge blocks zeroed as above; each whole block, written
//!   or not, becomes a reservation (`f2fs_do_zero_range`: the old block is invalidated),
//!   so the range reads as zeros and keeps its space. The size grows unless `KEEP_SIZE`.
//!
//! Every mode first moves inline data to a block (`f2fs_convert_inline_inode`) and ends by
//! setting mtime and ctime, making the inode dirty. Other modes (collapse, insert,
//! unshare) are refused (`Unsupported`).

use flashstack_block::BlockDevice;

use super::data::{MAX_FILE_BYTES, OFF_SIZE};
use super::{F2fs, FsError};
use crate::consts::*;

/// What `fallocate` does to a range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FallocMode {
    /// Mode 0 (`keep_size` false) or `FALLOC_FL_KEEP_SIZE`.
    Allocate { keep_size: bool },
    /// `FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE`.
    PunchHole,
    /// `FALLOC_FL_ZERO_RANGE`, optionally with `FALLOC_FL_KEEP_SIZE`.
    ZeroRange { keep_size: bool },
}

const BLOCK: u64 = BLOCK_SIZE as u64;

impl<D: BlockDevice> F2fs<D> {
    /// `fallocate(ino, mode, offset, len)` (see the module doc).
    pub fn fallocate(
        &mut self,
        ino: u32,
        mode: FallocMode,
        offset: u64,
        len: u64,
    ) -> Result<(), FsError> {
        self.check_file(ino)?;
        if len == 0 {
            return Err(FsError::Invalid("fallocate of 0 bytes".into()));
        }
        let end = offset
            .checked_add(len)
            .filter(|&e| e <= MAX_FILE_BYTES)
            .ok_or_else(|| FsError::TooLarge(format!("fallocate ending past {MAX_FILE_BYTES}")))?;
        self.balanced("fallocate", |fs| {
            fs.check_addressing(ino)?;
            if fs.has_inline(ino, F2FS_INLINE_DATA)? {
                fs.convert_inline_data(ino)?;
            }
            // Reservations and holes replace blocks: fold the file's deltas first.
            fs.merge_all_deltas(ino)?;
            match mode {
                FallocMode::Allocate { keep_size } => {
                    fs.allocate_range(ino, offset, end, keep_size)
                }
                FallocMode::PunchHole => fs.punch_range(ino, offset, end),
                FallocMode::ZeroRange { keep_size } => fs.zero_range(ino, offset, end, keep_size),
            }?;
            fs.touch(ino)
        })
    }

    /// Reserves every hole among the blocks `[offset, end)` touches; grows the size.
    fn allocate_range(
        &mut self,
        ino: u32,
        offset: u64,
        end: u64,
        keep_size: bool,
    ) -> Result<(), FsError> {
        let blocks = offset / BLOCK..end.div_ceil(BLOCK);
        let holes = self.holes_in(ino, blocks.clone())?;
        self.ensure_room_for(holes)?;
        for index in blocks {
            self.reserve_block(ino, index, false)?;
        }
        self.grow_unless(ino, end, keep_size)
    }

    /// Zeroes the partial edge blocks and frees the whole blocks in `[offset, end)`.
    fn punch_range(&mut self, ino: u32, offset: u64, end: u64) -> Result<(), FsError> {
        let (first_whole, end_whole) = self.zero_edges(ino, offset, end)?;
        for index in first_whole..end_whole {
            self.free_block_at(ino, index)?;
        }
        Ok(())
    }

    /// Zeroes the partial edge blocks and makes every whole block a reservation.
    fn zero_range(
        &mut self,
        ino: u32,
        offset: u64,
        end: u64,
        keep_size: bool,
    ) -> Result<(), FsError> {
        let whole = offset.div_ceil(BLOCK)..end / BLOCK;
        let holes = self.holes_in(ino, whole.clone())?;
        self.ensure_room_for(holes)?;
        self.zero_edges(ino, offset, end)?;
        for index in whole {
            self.reserve_block(ino, index, true)?;
        }
        self.grow_unless(ino, end, keep_size)
    }

    /// How many of the blocks `range` are holes (a reservation would take a block each).
    fn holes_in(&mut self, ino: u32, range: std::ops::Range<u64>) -> Result<u64, FsError> {
        let mut holes = 0;
        for index in range {
            holes += u64::from(self.block_addr(ino, index)? == NULL_ADDR);
        }
        Ok(holes)
    }

    /// Zeroes the bytes of `[offset, end)` in blocks the range covers only in part (only
    /// below the size: past it, bytes read as zeros anyway); returns the whole blocks
    /// in between.
    fn zero_edges(&mut self, ino: u32, offset: u64, end: u64) -> Result<(u64, u64), FsError> {
        let (first_whole, end_whole) = (offset.div_ceil(BLOCK), end / BLOCK);
        let size = self.inode_u64(ino, OFF_SIZE)?;
        let mut edges = vec![];
        if first_whole > end_whole {
            edges.push((offset, end));
        } else {
            edges.push((offset, (first_whole * BLOCK).min(end)));
            edges.push(((end_whole * BLOCK).max(offset), end));
        }
        for (from, to) in edges {
            let to = to.min(size);
            if from < to {
                let zeros = vec![0u8; (to - from) as usize];
                self.write_at(ino, from, &zeros)?;
            }
        }
        Ok((first_whole, end_whole.max(first_whole)))
    }

    /// Makes block `index` a reservation: a hole becomes one; with `replace`, a written
    /// block is invalidated and becomes one too.
    fn reserve_block(&mut self, ino: u32, index: u64, replace: bool) -> Result<(), FsError> {
        let old = self.block_addr(ino, index)?;
        if old == NEW_ADDR || (old != NULL_ADDR && !replace) {
            return Ok(());
        }
        let d = self
            .dnode(ino, index, true)?
            .ok_or_else(|| super::corrupt("node path vanished"))?;
        self.set_addr(ino, d, NEW_ADDR).map(drop)
    }

    /// Frees block `index` (written or reserved), keeping its node (`truncate_hole`).
    fn free_block_at(&mut self, ino: u32, index: u64) -> Result<(), FsError> {
        let Some(d) = self.dnode(ino, index, false)? else {
            return Ok(());
        };
        self.set_addr(ino, d, NULL_ADDR).map(drop)
    }

    /// What freeing an address does to the counts: a written block is invalidated, a
    /// reservation released.
    pub(crate) fn release_addr(&mut self, addr: u32) {
        if addr == NEW_ADDR || addr == COMPRESS_ADDR {
            self.reserved_blocks = self.reserved_blocks.saturating_sub(1);
        } else if self.in_main(addr) {
            self.segs.invalidate(addr);
            self.note_block_released(addr);
        }
    }

    fn grow_unless(&mut self, ino: u32, end: u64, keep_size: bool) -> Result<(), FsError> {
        match keep_size {
            true => Ok(()),
            false => self.grow_size(ino, end),
        }
    }

    /// `blocks` more blocks (and the nodes dirty now) fit in the user capacity.
    fn ensure_room_for(&mut self, blocks: u64) -> Result<(), FsError> {
        let pending = self.dirty_nodes.len() as u64;
        if self.used_blocks() + pending + blocks > self.cp.user_block_count {
            return Err(FsError::NoSpace);
        }
        Ok(())
    }

    /// Blocks counted as in use: valid in the SIT, or reserved (`valid_block_count`).
    pub(crate) fn used_blocks(&self) -> u64 {
        self.segs.valid_blocks + self.reserved_blocks
    }
}
