//! Space: the user-block limit, and foreground segment cleaning (greedy victim, valid
//! blocks moved to the cold data log or rewritten as nodes) when free segments fall to the
//! reserve (`has_not_enough_free_secs` in the kernel). Cleaned segments become free only
//! after the checkpoint that follows, since the previous one may still point into them.

use flashstack_block::BlockDevice;

use super::policy::{self, VictimInfo};
use super::{corrupt, BlockKind, F2fs, FsError};
use crate::consts::*;
use crate::layout::CURSEG_COLD_DATA;
use crate::summary::{Summary, SummaryBlock};

/// Segments cleaned at most per foreground pass (a bound, not a target).
const GC_MAX_VICTIMS_PER_PASS: u32 = 16;
/// `DEF_MAX_VICTIM_SEARCH`: dirty segments a background search looks at.
const MAX_VICTIM_SEARCH: usize = 4096;

impl<D: BlockDevice> F2fs<D> {
    /// Refuses a block past the user-visible capacity (`inc_valid_block_count`).
    pub(crate) fn ensure_space(&mut self) -> Result<(), FsError> {
        let pending = self.dirty_nodes.len() as u64;
        if self.used_blocks() + pending + 1 > self.cp.user_block_count {
            return Err(FsError::NoSpace);
        }
        Ok(())
    }

    /// Runs an operation, then cleans if it left free segments at the reserve
    /// (`f2fs_balance_fs`, which the kernel's namespace operations call on their way out).
    /// Cleaning runs between operations, never inside one, so the checkpoint it ends with
    /// never records half an operation (the kernel's `f2fs_lock_op` gives the same).
    pub(crate) fn balanced<T>(
        &mut self,
        name: &'static str,
        op: impl FnOnce(&mut Self) -> Result<T, FsError>,
    ) -> Result<T, FsError> {
        self.timed(name, |fs| {
            fs.writable(name)?;
            // A compressed file's staged cluster is written when its operation ends.
            let out = op(fs).inspect_err(|_| fs.drop_cluster_stage())?;
            fs.flush_cluster_stage()?;
            fs.balance()?;
            fs.balance_fs_bg(false)?;
            fs.ondemand_adjust()?;
            Ok(out)
        })
    }

    /// Runs an operation and records its virtual latency (device time of its requests,
    /// each issued when the previous completed) under `name`.
    pub(crate) fn timed<T>(
        &mut self,
        name: &'static str,
        op: impl FnOnce(&mut Self) -> Result<T, FsError>,
    ) -> Result<T, FsError> {
        let start = self.now_ns;
        let out = op(self);
        let took = self.now_ns.saturating_sub(start);
        self.op_latency.entry(name).or_default().record(took);
        self.clock.last_request_ns = self.now_ns;
        out
    }

    /// Cleans when free segments fell to the reserve.
    pub(crate) fn balance(&mut self) -> Result<(), FsError> {
        if self.in_gc || !self.needs_cleaning() {
            return Ok(());
        }
        self.in_gc = true;
        let result = self.foreground_gc();
        self.in_gc = false;
        result
    }

    /// Free segments at or under the reserve plus what dirty nodes will take.
    fn needs_cleaning(&self) -> bool {
        let node_segs = (self.dirty_nodes.len() as u32).div_ceil(BLOCKS_PER_SEG) + 1;
        self.segs.free_segments() <= self.cp.rsvd_segment_count + node_segs
    }

    fn foreground_gc(&mut self) -> Result<(), FsError> {
        if !self.segs.prefree.is_empty() {
            self.checkpoint(false)?;
        }
        let mut cleaned = 0;
        while self.needs_cleaning() && cleaned < GC_MAX_VICTIMS_PER_PASS {
            let Some(victim) = self.pick_victim() else {
                break;
            };
            self.clean_segment(victim)?;
            cleaned += 1;
        }
        if cleaned > 0 {
            self.checkpoint(false)?;
        }
        Ok(())
    }

    /// Background cleaning of one section (`f2fs_gc` with `BG_GC`): when free sections
    /// are short it becomes foreground cleaning; otherwise the cost-benefit victim is
    /// cleaned, its blocks moved to the cold logs, and no checkpoint follows (the victim
    /// turns pre-free, reusable after the next one). Returns whether a victim was found.
    pub(crate) fn background_gc(&mut self) -> Result<bool, FsError> {
        if self.in_gc {
            return Ok(false);
        }
        if self.needs_cleaning() {
            let before = self.metrics.gc_cycles;
            self.balance()?;
            return Ok(self.metrics.gc_cycles > before);
        }
        let Some(victim) = self.pick_bg_victim() else {
            return Ok(false);
        };
        self.in_gc = true;
        let result = self.clean_segment(victim);
        self.in_gc = false;
        result?;
        self.metrics.bg_gc_cycles += 1;
        Ok(true)
    }

    /// Cost-benefit over at most `MAX_VICTIM_SEARCH` dirty segments from where the last
    /// search ended (`get_victim_by_default` with `GC_CB`).
    fn pick_bg_victim(&mut self) -> Option<u32> {
        let total = self.segs.info.len() as u32;
        let mut candidates = Vec::new();
        let mut searched_to = self.clock.last_victim;
        for i in 0..total {
            let segno = (self.clock.last_victim + i) % total;
            searched_to = segno + 1;
            if let Some(v) = self.victim_info(segno) {
                candidates.push(v);
                if candidates.len() >= MAX_VICTIM_SEARCH {
                    break;
                }
            }
        }
        self.clock.last_victim = searched_to % total.max(1);
        for v in &candidates {
            self.clock.min_mtime = self.clock.min_mtime.min(v.mtime);
        }
        let newest = candidates.iter().map(|v| v.mtime).max().unwrap_or(0);
        let max_mtime = self.segs.now_secs.max(newest);
        policy::pick_cb_victim(&candidates, BLOCKS_PER_SEG, self.clock.min_mtime, max_mtime)
    }

    /// A dirty segment: not current, some but not all blocks valid.
    fn victim_info(&self, segno: u32) -> Option<VictimInfo> {
        let info = &self.segs.info[segno as usize];
        let valid = info.valid_blocks as u32;
        (valid > 0 && valid < BLOCKS_PER_SEG && !self.segs.is_current(segno)).then_some(
            VictimInfo {
                segno,
                valid_blocks: valid,
                mtime: info.mtime,
            },
        )
    }

    /// `utilization`: valid blocks as a share of the user blocks, in percent.
    pub(crate) fn utilization_percent(&self) -> u64 {
        self.used_blocks() * 100 / self.cp.user_block_count.max(1)
    }

    /// `f2fs_need_SSR` from the free and reserved segments and the dirty nodes.
    pub(crate) fn ssr_needed(&self) -> bool {
        let node_segs = (self.dirty_nodes.len() as u64).div_ceil(BLOCKS_PER_SEG as u64);
        policy::need_ssr(
            self.segs.free_segments() as u64,
            node_segs,
            0,
            self.cp.rsvd_segment_count as u64,
            &self.cfg,
        )
    }

    /// Greedy: the non-current segment with the fewest valid blocks (`get_victim_by_default`
    /// with `GC_GREEDY`); none if every candidate is full.
    fn pick_victim(&self) -> Option<u32> {
        (0..self.segs.info.len() as u32)
            .filter(|&s| !self.segs.is_current(s))
            .map(|s| (self.segs.info[s as usize].valid_blocks, s))
            .filter(|&(v, _)| v > 0 && (v as u32) < BLOCKS_PER_SEG)
            .min()
            .map(|(_, s)| s)
    }

    /// Moves every valid block out of `segno`; meanwhile SSR may not take it
    /// (`cur_victim_sec` in the foreground, `victim_secmap` in the background).
    fn clean_segment(&mut self, segno: u32) -> Result<(), FsError> {
        self.segs.gc_victim = Some(segno);
        let result = self.move_valid_blocks(segno);
        self.segs.gc_victim = None;
        result?;
        self.metrics.gc_cycles += 1;
        Ok(())
    }

    fn move_valid_blocks(&mut self, segno: u32) -> Result<(), FsError> {
        let at = self.sb.ssa_blkaddr as u64 + segno as u64;
        let sum = SummaryBlock::decode(&*self.read_block(at)?);
        let is_node = self.segs.info[segno as usize].seg_type as usize >= NR_CURSEG_DATA_TYPE;
        let base = self.sb.main_blkaddr + segno * BLOCKS_PER_SEG;
        for off in 0..BLOCKS_PER_SEG {
            let blkaddr = base + off;
            if !self.segs.is_valid(blkaddr) {
                continue;
            }
            let entry = sum.entries[off as usize];
            if is_node {
                self.move_node(entry.nid, blkaddr)?;
            } else {
                self.move_data(entry, blkaddr)?;
            }
        }
        Ok(())
    }

    fn move_node(&mut self, nid: u32, blkaddr: u32) -> Result<(), FsError> {
        if self.nat_get(nid)?.block_addr != blkaddr {
            return Err(corrupt(format!(
                "cleaning: block {blkaddr} is valid but node {nid} lives elsewhere"
            )));
        }
        self.node(nid)?;
        self.write_node(nid, BlockKind::GcNode, 0)
    }

    /// Moves a data block to the cold data log (GC-moved data is cold) through the
    /// addressing layer (`pagemap.rs`), which points its owner at the new place.
    fn move_data(&mut self, sum: Summary, blkaddr: u32) -> Result<(), FsError> {
        self.relocate_block(sum, blkaddr, CURSEG_COLD_DATA)?;
        self.gc_moved_unflushed = true;
        Ok(())
    }
}
