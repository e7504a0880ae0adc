//! The in-memory SIT: valid-block maps per main-area segment, free and pre-free segments,
//! and the six active logs that append to their current segment.

use std::collections::BTreeSet;

use crate::codec::{set_bit_msb, test_bit_msb};
use crate::consts::*;
use crate::sit::SitEntry;
use crate::summary::{Summary, SummaryBlock};

/// One segment's validity.
#[derive(Clone, Debug)]
pub(crate) struct SegInfo {
    pub valid_blocks: u16,
    pub seg_type: u8,
    pub map: [u8; SIT_VBLOCK_MAP_SIZE],
    pub mtime: u64,
}

impl SegInfo {
    pub fn from_entry(e: &SitEntry) -> SegInfo {
        SegInfo {
            valid_blocks: e.bitmap_count() as u16,
            seg_type: e.seg_type(),
            map: e.valid_map,
            mtime: e.mtime,
        }
    }

    /// `update_segment_mtime`: the segment's mtime is the average time its blocks were
    /// written or invalidated, weighted by the valid blocks (so one update does not make
    /// an old segment look young to cost-benefit cleaning).
    fn age_by(&mut self, secs: u64) {
        let valid = self.valid_blocks as u64;
        self.mtime = if self.mtime == 0 {
            secs
        } else {
            (self.mtime * valid + secs) / (valid + 1)
        };
    }

    pub fn to_entry(&self) -> SitEntry {
        SitEntry {
            vblocks: ((self.seg_type as u16) << SIT_VBLOCKS_SHIFT)
                | (self.valid_blocks & SIT_VBLOCKS_MASK),
            valid_map: self.map,
            mtime: self.mtime,
        }
    }
}

/// A log's place: current segment, next offset and the summary being filled.
#[derive(Clone, Debug)]
pub(crate) struct Log {
    pub segno: u32,
    pub blkoff: u16,
    pub sum: SummaryBlock,
}

/// All segments of the main area.
#[derive(Clone, Debug)]
pub(crate) struct Segs {
    pub main_blkaddr: u32,
    pub info: Vec<SegInfo>,
    /// Segments whose SIT entry changed since the last checkpoint.
    pub dirty: BTreeSet<u32>,
    /// Segments whose entry lives in the checkpoint's SIT journal (the SIT area's copy is
    /// stale).
    pub journal: BTreeSet<u32>,
    /// Segments emptied since the last checkpoint: not reusable until it is written, as
    /// the last checkpoint may still point into them.
    pub prefree: BTreeSet<u32>,
    pub valid_blocks: u64,
    pub logs: Vec<Log>,
    /// Virtual seconds stamped into SIT `mtime`.
    pub now_secs: u64,
}

impl Segs {
    pub fn segno_of(&self, blkaddr: u32) -> Option<(u32, u32)> {
        let rel = blkaddr.checked_sub(self.main_blkaddr)?;
        let segno = rel / BLOCKS_PER_SEG;
        ((segno as usize) < self.info.len()).then_some((segno, rel % BLOCKS_PER_SEG))
    }

    pub fn is_valid(&self, blkaddr: u32) -> bool {
        self.segno_of(blkaddr)
            .is_some_and(|(s, o)| test_bit_msb(&self.info[s as usize].map, o as usize))
    }

    pub fn is_current(&self, segno: u32) -> bool {
        self.logs.iter().any(|l| l.segno == segno)
    }

    /// Clears a block's valid bit; a segment left empty becomes pre-free.
    pub fn invalidate(&mut self, blkaddr: u32) {
        let Some((segno, off)) = self.segno_of(blkaddr) else {
            return;
        };
        let seg = &mut self.info[segno as usize];
        let (byte, mask) = (off as usize / 8, 0x80u8 >> (off % 8));
        if seg.map[byte] & mask == 0 {
            return;
        }
        seg.age_by(self.now_secs);
        seg.map[byte] &= !mask;
        seg.valid_blocks -= 1;
        self.valid_blocks -= 1;
        self.dirty.insert(segno);
        if seg.valid_blocks == 0 && !self.is_current(segno) {
            self.prefree.insert(segno);
        }
    }

    /// `written_secs`: when the block's data was written (a block moved by cleaning
    /// keeps its old segment's age), 0 for now.
    fn mark_valid(&mut self, segno: u32, off: u32, seg_type: u8, written_secs: u64) {
        let seg = &mut self.info[segno as usize];
        seg.age_by(if written_secs == 0 {
            self.now_secs
        } else {
            written_secs
        });
        set_bit_msb(&mut seg.map, off as usize);
        seg.valid_blocks += 1;
        seg.seg_type = seg_type;
        self.valid_blocks += 1;
        self.dirty.insert(segno);
    }

    pub fn is_free(&self, segno: u32) -> bool {
        self.info[segno as usize].valid_blocks == 0
            && !self.prefree.contains(&segno)
            && !self.is_current(segno)
    }

    pub fn free_segments(&self) -> u32 {
        (0..self.info.len() as u32)
            .filter(|&s| self.is_free(s))
            .count() as u32
    }

    /// Segments with no valid block that are not current (what a checkpoint records as
    /// free: pre-free ones become free once it is written).
    pub fn empty_segments(&self) -> u32 {
        (0..self.info.len() as u32)
            .filter(|&s| self.info[s as usize].valid_blocks == 0 && !self.is_current(s))
            .count() as u32
    }

    /// The lowest free segment (the kernel's `alloc_mode=reuse`, default on ≤ 16 GB).
    pub fn pick_free(&self) -> Option<u32> {
        (0..self.info.len() as u32).find(|&s| self.is_free(s))
    }

    /// Whether log `log` can take a block now.
    pub fn has_room(&self, log: usize) -> bool {
        (self.logs[log].blkoff as u32) < BLOCKS_PER_SEG
    }

    /// Takes the next block of log `log` for `sum`; returns its address. When the
    /// segment fills, the caller must call [`Segs::take_full`] to seal it.
    /// The block's data dates from `written_secs` (0: now).
    pub fn alloc_aged(&mut self, log: usize, sum: Summary, written_secs: u64) -> u32 {
        let (segno, off) = (self.logs[log].segno, self.logs[log].blkoff as u32);
        self.logs[log].sum.entries[off as usize] = sum;
        self.logs[log].blkoff += 1;
        self.mark_valid(segno, off, log as u8, written_secs);
        self.main_blkaddr + segno * BLOCKS_PER_SEG + off
    }

    /// Moves a full log to a new free segment; returns the old segment and its summary
    /// block (to be written to the SSA), or None if the log is not full or no segment is
    /// free.
    pub fn take_full(&mut self, log: usize) -> Option<(u32, SummaryBlock)> {
        if self.has_room(log) {
            return None;
        }
        self.switch(log)
    }

    /// Marks a block valid again (roll-forward recovery of a block written after the
    /// checkpoint). The segment keeps its SIT type (`se->type` in
    /// `f2fs_do_replace_block`) if it holds valid blocks or is a log's current segment
    /// (typed when the log took it, even while still empty); only an empty segment the
    /// log moved to after the checkpoint takes `seg_type`.
    pub fn revalidate(&mut self, blkaddr: u32, seg_type: u8) {
        let Some((segno, off)) = self.segno_of(blkaddr) else {
            return;
        };
        if test_bit_msb(&self.info[segno as usize].map, off as usize) {
            return;
        }
        let keep_type = self.info[segno as usize].valid_blocks > 0 || self.is_current(segno);
        let old_type = self.info[segno as usize].seg_type;
        self.mark_valid(segno, off, if keep_type { old_type } else { seg_type }, 0);
        self.prefree.remove(&segno);
    }

    /// Moves log `log` to a new free segment whatever its fill; returns the old segment
    /// and its summary.
    pub fn switch(&mut self, log: usize) -> Option<(u32, SummaryBlock)> {
        let next = self.pick_free()?;
        let entry_type = self.logs[log].sum.entry_type;
        let old = std::mem::replace(
            &mut self.logs[log],
            Log {
                segno: next,
                blkoff: 0,
                sum: SummaryBlock::new(entry_type),
            },
        );
        self.info[next as usize].seg_type = log as u8;
        self.dirty.insert(next);
        if self.info[old.segno as usize].valid_blocks == 0 {
            self.prefree.insert(old.segno);
        }
        Some((old.segno, old.sum))
    }

    /// Address the log writes next (`NEXT_FREE_BLKADDR`), chained from node footers.
    pub fn next_blkaddr(&self, log: usize) -> u32 {
        let l = &self.logs[log];
        self.main_blkaddr + l.segno * BLOCKS_PER_SEG + l.blkoff as u32
    }
}
