//! The in-memory SIT: valid-block maps per main-area segment (the current one and the
//! checkpointed one), free and pre-free segments, and the six active logs, which append to
//! their current segment (LFS) or fill the holes of a dirty one (SSR).

use std::collections::BTreeSet;

use super::policy::SsrCandidate;
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
    /// `ckpt_valid_map`: blocks valid at the last checkpoint, plus every block written
    /// since (a block freed since the checkpoint keeps its bit until the next one, so SSR
    /// never overwrites what the checkpoint or the roll-forward chain may still need).
    pub ckpt_map: [u8; SIT_VBLOCK_MAP_SIZE],
    /// `ckpt_valid_blocks`: bits set in `ckpt_map`.
    pub ckpt_valid_blocks: u16,
}

impl SegInfo {
    pub fn from_entry(e: &SitEntry) -> SegInfo {
        let valid_blocks = e.bitmap_count() as u16;
        SegInfo {
            valid_blocks,
            seg_type: e.seg_type(),
            map: e.valid_map,
            mtime: e.mtime,
            ckpt_map: e.valid_map,
            ckpt_valid_blocks: valid_blocks,
        }
    }

    /// A checkpoint recorded this entry: the checkpointed map is the current one
    /// (`seg_info_to_raw_sit`).
    pub fn checkpointed(&mut self) {
        self.ckpt_map = self.map;
        self.ckpt_valid_blocks = self.valid_blocks;
    }

    /// `__next_free_blkoff`: the first block at or after `start` clear in both the
    /// current and the checkpointed map, or `BLOCKS_PER_SEG`.
    pub fn next_free_blkoff(&self, start: u32) -> u32 {
        (start..BLOCKS_PER_SEG)
            .find(|&off| {
                let (byte, mask) = (off as usize / 8, 0x80u8 >> (off % 8));
                (self.map[byte] | self.ckpt_map[byte]) & mask == 0
            })
            .unwrap_or(BLOCKS_PER_SEG)
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
    /// `alloc_type == SSR`: the segment is a dirty one whose holes the log fills
    /// (`blkoff` is the next hole); else LFS, appending to a free segment.
    pub ssr: bool,
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
    /// The segment foreground cleaning is emptying (`cur_victim_sec`): SSR skips it.
    pub gc_victim: Option<u32>,
    /// `last_victim[GC_GREEDY]`: where the next SSR search starts.
    pub ssr_last_victim: u32,
    /// [`Segs::free_segments`] as last counted; `None` once a segment may have become
    /// free or stopped being free (see [`Segs::free_changed`]).
    pub free_count: std::cell::Cell<Option<u32>>,
    /// Segments with no valid block, kept as blocks come and go, so the free and empty
    /// counts need no scan of every segment (see [`Segs::set_info`]).
    pub zero_valid: u32,
}

impl Segs {
    /// Takes a new table of segments (mount), recounting what is kept from it.
    pub fn set_info(&mut self, info: Vec<SegInfo>) {
        self.valid_blocks = info.iter().map(|s| s.valid_blocks as u64).sum();
        self.zero_valid = info.iter().filter(|s| s.valid_blocks == 0).count() as u32;
        self.info = info;
        self.free_changed();
    }

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
        if seg.valid_blocks == 0 {
            self.zero_valid += 1;
            if !self.is_current(segno) {
                self.prefree.insert(segno);
            }
        }
    }

    /// `written_secs`: when the block's data was written (a block moved by cleaning
    /// keeps its old segment's age), 0 for now.
    fn mark_valid(&mut self, segno: u32, off: u32, seg_type: u8, written_secs: u64) {
        if self.info[segno as usize].valid_blocks == 0 {
            self.free_changed();
            self.zero_valid -= 1;
        }
        let seg = &mut self.info[segno as usize];
        seg.age_by(if written_secs == 0 {
            self.now_secs
        } else {
            written_secs
        });
        set_bit_msb(&mut seg.map, off as usize);
        seg.valid_blocks += 1;
        if !test_bit_msb(&seg.ckpt_map, off as usize) {
            set_bit_msb(&mut seg.ckpt_map, off as usize);
            seg.ckpt_valid_blocks += 1;
        }
        seg.seg_type = seg_type;
        self.valid_blocks += 1;
        self.dirty.insert(segno);
    }

    pub fn is_free(&self, segno: u32) -> bool {
        self.info[segno as usize].valid_blocks == 0
            && !self.prefree.contains(&segno)
            && !self.is_current(segno)
    }

    /// Free segments. Counting scans the SIT, so the count is kept until a segment can
    /// have changed between free and not free: an empty segment taking a block, a log
    /// moving to a free segment, pre-free segments freed by a checkpoint.
    pub fn free_segments(&self) -> u32 {
        if let Some(n) = self.free_count.get() {
            // Checked against a scan in debug builds, on file systems small enough for
            // the scan not to dominate (every test image).
            debug_assert!(
                self.info.len() > 4096 || n == self.scan_free(),
                "stale free-segment count"
            );
            return n;
        }
        let n = self.count_free();
        self.free_count.set(Some(n));
        n
    }

    /// Segments without valid blocks, less those that are pre-free or current.
    fn count_free(&self) -> u32 {
        let held_prefree = self
            .prefree
            .iter()
            .filter(|&&s| self.info[s as usize].valid_blocks == 0 && !self.is_current(s))
            .count() as u32;
        let n = self.empty_segments() - held_prefree;
        debug_assert!(
            self.info.len() > 4096 || n == self.scan_free(),
            "stale count of free segments"
        );
        n
    }

    /// [`Segs::count_free`] by a scan of every segment (the debug builds' check).
    fn scan_free(&self) -> u32 {
        (0..self.info.len() as u32)
            .filter(|&s| self.is_free(s))
            .count() as u32
    }

    /// Distinct segments current logs are on that hold no valid block.
    fn empty_current(&self) -> u32 {
        let mut n = 0;
        for (i, log) in self.logs.iter().enumerate() {
            let first = !self.logs[..i].iter().any(|l| l.segno == log.segno);
            if first && self.info[log.segno as usize].valid_blocks == 0 {
                n += 1;
            }
        }
        n
    }

    /// Forgets the free-segment count: call after anything that can free a segment or
    /// take a free one outside this module (mount, the checkpoint's pre-free release).
    pub fn free_changed(&self) {
        self.free_count.set(None);
    }

    /// Segments with no valid block that are not current (what a checkpoint records as
    /// free: pre-free ones become free once it is written).
    pub fn empty_segments(&self) -> u32 {
        let n = self.zero_valid - self.empty_current();
        debug_assert!(
            self.info.len() > 4096 || n == self.scan_empty(),
            "stale count of segments without valid blocks"
        );
        n
    }

    fn scan_empty(&self) -> u32 {
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

    /// Takes the next block of log `log` for `sum`; returns its address. The log moves
    /// on to the next block (LFS) or the next hole (SSR, `f2fs_find_next_ssr_block`).
    /// When the segment fills, the caller must call [`Segs::take_full`] to seal it.
    /// The block's data dates from `written_secs` (0: now).
    pub fn alloc_aged(&mut self, log: usize, sum: Summary, written_secs: u64) -> u32 {
        let (segno, off) = (self.logs[log].segno, self.logs[log].blkoff as u32);
        self.logs[log].sum.entries[off as usize] = sum;
        self.mark_valid(segno, off, log as u8, written_secs);
        self.logs[log].blkoff = if self.logs[log].ssr {
            self.info[segno as usize].next_free_blkoff(off + 1) as u16
        } else {
            off as u16 + 1
        };
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
        self.free_changed();
    }

    /// Moves log `log` to a new free segment whatever its fill; returns the old segment
    /// and its summary.
    pub fn switch(&mut self, log: usize) -> Option<(u32, SummaryBlock)> {
        let next = self.pick_free()?;
        self.free_changed();
        let entry_type = self.logs[log].sum.entry_type;
        let old = std::mem::replace(
            &mut self.logs[log],
            Log {
                segno: next,
                blkoff: 0,
                sum: SummaryBlock::new(entry_type),
                ssr: false,
            },
        );
        self.info[next as usize].seg_type = log as u8;
        self.dirty.insert(next);
        if self.info[old.segno as usize].valid_blocks == 0 {
            self.prefree.insert(old.segno);
        }
        Some((old.segno, old.sum))
    }

    /// `change_curseg`: log `log` leaves its segment for the dirty segment `segno` in SSR
    /// mode, with that segment's summary entries (`entries`, read from the SSA) and its
    /// first hole as the next block; the segment takes the log's type. Returns the old
    /// segment and its summary (to be written to the SSA).
    pub fn change_to_ssr(
        &mut self,
        log: usize,
        segno: u32,
        entries: Vec<Summary>,
    ) -> (u32, SummaryBlock) {
        let mut sum = SummaryBlock::new(self.logs[log].sum.entry_type);
        sum.entries = entries;
        let blkoff = self.info[segno as usize].next_free_blkoff(0) as u16;
        let old = std::mem::replace(
            &mut self.logs[log],
            Log {
                segno,
                blkoff,
                sum,
                ssr: true,
            },
        );
        self.info[segno as usize].seg_type = log as u8;
        self.dirty.insert(segno);
        if self.info[old.segno as usize].valid_blocks == 0 {
            self.prefree.insert(old.segno);
        }
        self.free_changed();
        (old.segno, old.sum)
    }

    /// Dirty segments as SSR victim selection sees them, in segment order.
    pub fn ssr_candidates(&self) -> Vec<SsrCandidate> {
        (0..self.info.len() as u32)
            .filter(|&s| {
                let v = self.info[s as usize].valid_blocks as u32;
                v > 0 && v < BLOCKS_PER_SEG && !self.is_current(s)
            })
            .map(|s| SsrCandidate {
                segno: s,
                seg_type: self.info[s as usize].seg_type,
                ckpt_valid_blocks: self.info[s as usize].ckpt_valid_blocks as u32,
                gc_victim: self.gc_victim == Some(s),
            })
            .collect()
    }

    /// Address the log writes next (`NEXT_FREE_BLKADDR`), chained from node footers.
    pub fn next_blkaddr(&self, log: usize) -> u32 {
        let l = &self.logs[log];
        self.main_blkaddr + l.segno * BLOCKS_PER_SEG + l.blkoff as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::policy::{ssr_victim, SsrState};

    fn segs_with_full_segment() -> Segs {
        let free = SegInfo {
            valid_blocks: 0,
            seg_type: 0,
            map: [0; SIT_VBLOCK_MAP_SIZE],
            mtime: 0,
            ckpt_map: [0; SIT_VBLOCK_MAP_SIZE],
            ckpt_valid_blocks: 0,
        };
        let full = SegInfo {
            valid_blocks: BLOCKS_PER_SEG as u16,
            map: [0xff; SIT_VBLOCK_MAP_SIZE],
            ckpt_map: [0xff; SIT_VBLOCK_MAP_SIZE],
            ckpt_valid_blocks: BLOCKS_PER_SEG as u16,
            seg_type: 1,
            ..free.clone()
        };
        Segs {
            main_blkaddr: 1000,
            info: vec![free.clone(), full, free.clone(), free],
            dirty: BTreeSet::new(),
            journal: BTreeSet::new(),
            prefree: BTreeSet::new(),
            valid_blocks: BLOCKS_PER_SEG as u64,
            logs: vec![Log {
                segno: 0,
                blkoff: BLOCKS_PER_SEG as u16,
                sum: SummaryBlock::new(SUM_TYPE_DATA),
                ssr: false,
            }],
            now_secs: 0,
            gc_victim: None,
            ssr_last_victim: 0,
            free_count: Default::default(),
            zero_valid: 3,
        }
    }

    fn victim(segs: &Segs) -> Option<u32> {
        ssr_victim(&SsrState {
            log: 1,
            candidates: &segs.ssr_candidates(),
            last_victim: 0,
            main_segments: segs.info.len() as u32,
            blocks_per_seg: BLOCKS_PER_SEG,
        })
        .segno
    }

    /// Blocks freed since the last checkpoint are never recycled before the next one
    /// (`ckpt_valid_map`): neither chosen by the victim search nor filled by the log.
    #[test]
    fn ssr_reuses_only_blocks_free_in_the_checkpointed_map() {
        let mut segs = segs_with_full_segment();
        let base = 1000 + BLOCKS_PER_SEG;
        segs.invalidate(base + 5);
        segs.invalidate(base + 7);
        assert_eq!(segs.info[1].valid_blocks, 510);
        assert_eq!(victim(&segs), None, "holes younger than the checkpoint");
        segs.info[1].checkpointed();
        assert_eq!(victim(&segs), Some(1));
        let entries = vec![Summary::default(); ENTRIES_IN_SUM];
        let (old, _) = segs.change_to_ssr(0, 1, entries);
        assert_eq!(old, 0);
        assert!(segs.prefree.contains(&0), "the empty old segment waits");
        assert_eq!(segs.logs[0].blkoff, 5);
        assert_eq!(segs.info[1].seg_type, 0, "the segment takes the log's type");
        // Freed after the checkpoint: not a hole for this log either.
        segs.invalidate(base + 9);
        let sum = Summary::default();
        assert_eq!(segs.alloc_aged(0, sum, 0), base + 5);
        assert_eq!(segs.logs[0].blkoff, 7);
        assert_eq!(segs.alloc_aged(0, sum, 0), base + 7);
        assert!(!segs.has_room(0));
        assert_eq!(segs.info[1].valid_blocks, 511);
        // After a checkpoint block 9 is free in both maps.
        segs.info[1].checkpointed();
        assert_eq!(segs.info[1].next_free_blkoff(0), 9);
    }
}
