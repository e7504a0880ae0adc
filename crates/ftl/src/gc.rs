//! Garbage collection, static wear levelling and bad-block retirement: the mechanisms that
//! carry out the victim policy's decisions.

use flashstack_nand::{oob_flags, FlashMedium, NandError};
use flashstack_sim::memory::LazyTable;
use flashstack_sim::Nanos;

use crate::compression::{gc_may_straddle, gc_packs_fragments, GcStraddle};
use crate::config::GcCollect;
use crate::policy::{choose_super_block, wear_level_needed, VictimCandidate, VictimPolicy};
use crate::stream::is_start;
use crate::{BlockState, Cause, Ftl, FtlError};
use flashstack_nand::NO_SOURCE;

/// Background GC steps allowed in one idle gap; bounds the work a single gap can trigger.
const BACKGROUND_STEPS_MAX: u32 = 256;
/// Idle-time GC cycles in a row that may leave the free pool no larger before the gap's GC
/// stops (LDC presets only; see `background_gc`).
const BACKGROUND_STALL_MAX: u32 = 16;
/// Relocation passes over one block (more than one only after program failures).
const RELOCATION_PASSES_MAX: u32 = 8;
/// Foreground GC cycles one allocation may run before the device reports no space.
const FOREGROUND_CYCLES_MAX: u32 = 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Trigger {
    Foreground,
    Background,
}

impl Ftl {
    /// Reclaims blocks on `die` until its free pool is above the foreground threshold.
    pub(crate) fn foreground_gc(&mut self, die: u32, now_ns: Nanos) -> Result<(), FtlError> {
        let threshold = self.config.ftl.gc.foreground_free_blocks;
        let mut cycles = 0;
        while self.blocks.free_count(die) <= threshold {
            let worked = match self.collects_super_blocks() {
                true => self.gc_super_block(die, now_ns, Trigger::Foreground)? > 0,
                false => self.gc_once(die, now_ns, Trigger::Foreground)?,
            };
            if !worked {
                // Nothing reclaimable: go on from the reserve if any is left.
                if self.blocks.free_count(die) > 0 {
                    return Ok(());
                }
                return Err(FtlError::NoSpace(format!(
                    "die {die}: no free block and no block with invalid data to reclaim"
                )));
            }
            cycles += 1;
            if cycles >= FOREGROUND_CYCLES_MAX {
                return Err(FtlError::NoSpace(format!("die {die}: GC cannot keep up")));
            }
        }
        Ok(())
    }

    /// Uses the idle gap before `arrival_ns` to top up free pools.
    pub(crate) fn background_gc(&mut self, arrival_ns: Nanos) -> Result<(), FtlError> {
        let gc = &self.config.ftl.gc;
        let (target, idle_threshold_ns) = (gc.background_free_blocks, gc.idle_threshold_ns);
        let idle_from_ns = self.busy_until_ns();
        let mut t = idle_from_ns + idle_threshold_ns;
        if t >= arrival_ns {
            return Ok(());
        }
        let mut steps = 0;
        let mut die = 0;
        let mut dies_without_work = 0;
        // On the LDC presets (a compression config, PM's included, so every policy is
        // treated alike): a victim's page-aligned compressed fragments are copied with
        // the padding beside them when they may not straddle, so idle GC on such nearly
        // valid victims can go on for ever without adding a free block. It
        // stops after BACKGROUND_STALL_MAX cycles without the pool growing (tracked on
        // one-die devices, as the LDC presets are). Other devices are unchanged.
        let stall_limit = match self.config.ftl.compression.is_some() {
            true => BACKGROUND_STALL_MAX,
            false => u32::MAX,
        };
        let mut best_free = self.blocks.free_count(die);
        let mut stalled = 0;
        // Super-block GC goes die by die (`die` is then the die's first plane), collecting
        // where the die's emptiest plane is below the target.
        let (step, dies) = match self.collects_super_blocks() {
            true => (self.planes_per_die, self.units / self.planes_per_die),
            false => (1, self.units),
        };
        while t < arrival_ns && steps < BACKGROUND_STEPS_MAX && dies_without_work < dies {
            // Victims collected (the bound on a gap's work counts blocks either way).
            let worked = if step == 1 {
                let worked = self.blocks.free_count(die) < target
                    && self.gc_once(die, t, Trigger::Background)?;
                worked as u32
            } else {
                let neediest = (die..die + step)
                    .min_by_key(|&u| (self.blocks.free_count(u), u))
                    .expect("a die has planes");
                match self.blocks.free_count(neediest) < target {
                    true => self.gc_super_block(neediest, t, Trigger::Background)?,
                    false => 0,
                }
            };
            if worked > 0 {
                dies_without_work = 0;
                steps += worked;
                t = t.max(self.nand.idle_at_ns());
                let free = self.blocks.free_count(die);
                if free > best_free || self.units > 1 {
                    best_free = free;
                    stalled = 0;
                } else {
                    stalled += 1;
                    if stalled >= stall_limit {
                        break;
                    }
                }
            } else {
                dies_without_work += 1;
            }
            die = if die + step == self.units {
                0
            } else {
                die + step
            };
        }
        Ok(())
    }

    /// Whether GC collects a victim on every plane of a die together (`ftl.gc.collect`,
    /// super-page allocation only).
    fn collects_super_blocks(&self) -> bool {
        self.super_page
            && self.planes_per_die > 1
            && self.config.ftl.gc.collect == GcCollect::SuperBlock
    }

    /// One super-block GC cycle on the die of `needed` (the plane whose free pool set it
    /// off): a victim per plane of the die (`choose_super_block`; a block waiting to be
    /// retired goes first on its plane), every victim's valid data moved through the die's
    /// relocation stream, then each victim erased. The moves of N victims fill N planes'
    /// super-pages, so each plane gets back about the block it gave. Erasing starts only
    /// after `reclaim`'s `make_durable` has programmed every page the stream holds, so a
    /// victim is erased only when all its data is durable elsewhere. Returns the number of
    /// victims collected: none when nothing is worth reclaiming on `needed`.
    pub(crate) fn gc_super_block(
        &mut self,
        needed: u32,
        now_ns: Nanos,
        trigger: Trigger,
    ) -> Result<u32, FtlError> {
        let planes = self.planes_per_die;
        let first = needed / planes * planes;
        let retiring: Vec<Option<usize>> = (first..first + planes)
            .map(|u| {
                self.retire_queue
                    .iter()
                    .position(|&b| self.nand.unit_of_block(b) == u)
            })
            .collect();
        let lists: Vec<Vec<VictimCandidate>> = (first..first + planes)
            .zip(&retiring)
            .map(|(u, r)| match r {
                Some(_) => Vec::new(),
                None => self.victim_candidates(u, trigger),
            })
            .collect();
        let views: Vec<&[VictimCandidate]> = lists.iter().map(Vec::as_slice).collect();
        let needed_plane = (needed - first) as usize;
        let must_give = retiring[needed_plane].is_none().then_some(needed_plane);
        let choice = choose_super_block(&self.policy, &views, must_give, now_ns);
        if retiring[needed_plane].is_none() && choice[needed_plane].is_none() {
            return Ok(0);
        }
        let mut victims = Vec::with_capacity(planes as usize);
        for (p, u) in (first..first + planes).enumerate() {
            match choice[p] {
                Some(i) => victims.push(lists[p][i].block),
                None if retiring[p].is_some() => {
                    victims.extend(self.take_retiring(u));
                }
                None => {}
            }
        }
        if victims.is_empty() {
            return Ok(0);
        }
        let n = victims.len() as u64;
        match trigger {
            Trigger::Foreground => self.counters.gc_cycles_foreground += n,
            Trigger::Background => self.counters.gc_cycles_background += n,
        }
        self.counters.gc_super_blocks += 1;
        self.compressor.in_background_gc = trigger == Trigger::Background;
        let mut result = match self.mapping.nothing_shared() {
            true => self.relocate_super_block(&victims, now_ns),
            // Shared slots (REMAP) take the general path, one victim after another.
            false => victims
                .iter()
                .try_for_each(|&victim| self.relocate_block(victim, Cause::Gc, now_ns)),
        };
        if result.is_ok() {
            // The first reclaim's make_durable programs what the stream holds for all of
            // them; the others find nothing left to program.
            for &victim in &victims {
                result = self.reclaim(victim, Cause::Gc, now_ns);
                if result.is_err() {
                    break;
                }
            }
        }
        self.compressor.in_background_gc = false;
        result.map(|()| victims.len() as u32)
    }

    /// Moves the valid data of a super-block's victims (at most one per plane, nothing
    /// shared) through their die's relocation stream. Each page the stream fills is taken
    /// from the victim on the plane that page goes to while that victim has data left, then
    /// from the victim with the most left: so a victim's data stays together on its own
    /// plane as page by page (a block GC writes holds few victims, and data invalidated
    /// together stays together), and only the difference between the victims' valid counts
    /// crosses planes, while the stream's pages still go to the die's planes in turn at one
    /// offset. Moving them one victim after another would spread each victim's data over
    /// every plane, mixing four victims in each block GC writes. Slots that come back after
    /// a failed program are moved again by `reclaim`.
    fn relocate_super_block(&mut self, victims: &[u32], now_ns: Nanos) -> Result<(), FtlError> {
        let stream = self.gc_stream(self.nand.unit_of_block(victims[0]));
        let first_unit = self.streams[stream].cursor_span.0;
        let planes = self.planes_per_die as usize;
        let mut queues: Vec<VictimQueue> = (0..planes)
            .map(|_| VictimQueue {
                slots: Vec::new(),
                next: 0,
                read_end: 0,
                ready_ns: now_ns,
            })
            .collect();
        for &victim in victims {
            if self.blocks.state[victim as usize] == BlockState::Sealed {
                self.blocks.set_state(victim, BlockState::Collecting);
            }
            self.nand.prefetch_block_contents(victim);
            let q = &mut queues[(self.nand.unit_of_block(victim) - first_unit) as usize];
            self.gather_data_slots(victim, &mut q.slots);
            keep_live(&self.mapping.l2p, &mut q.slots);
        }
        let mut result = Ok(());
        loop {
            let target = (self.relocation_target_unit(stream) - first_unit) as usize;
            let from = match queues[target].left() > 0 {
                true => target,
                false => match (0..planes)
                    .filter(|&p| queues[p].left() > 0)
                    .max_by_key(|&p| (queues[p].left(), std::cmp::Reverse(p)))
                {
                    Some(p) => p,
                    None => break,
                },
            };
            let next = queues[from].next;
            if next == queues[from].read_end {
                // The first slot of a source page: read the live span of that page.
                let q = &queues[from];
                let end = self.page_group_end(&q.slots, next);
                let page = self.page_of_slot(q.slots[next].0);
                match self.read_fragment_span(page, &q.slots[next..end], now_ns) {
                    Ok(ready_ns) => {
                        queues[from].read_end = end;
                        queues[from].ready_ns = ready_ns;
                    }
                    Err(e) => {
                        result = Err(e);
                        break;
                    }
                }
            }
            let q = &mut queues[from];
            let (old, lpn) = q.slots[next];
            let ready_ns = q.ready_ns;
            q.next += 1;
            debug_assert_eq!(self.mapping.l2p.at(lpn as usize), old);
            if let Err(e) = self.move_fragment(old, lpn, stream, Cause::Gc, ready_ns) {
                result = Err(e);
                break;
            }
        }
        self.relocation_origin = None;
        result?;
        // GC of data blocks changes the mappings it moved: translation pages follow.
        for q in &queues {
            self.cmt_update(q.slots.iter().map(|&(_, lpn)| lpn), now_ns)?;
        }
        Ok(())
    }

    /// What the victim policy sees of `unit`'s fewest-valid sealed blocks.
    fn victim_candidates(&mut self, unit: u32, trigger: Trigger) -> Vec<VictimCandidate> {
        let window = self.policy.window(self.config.ftl.gc.candidates_max);
        let mut found = std::mem::take(&mut self.candidate_blocks);
        found.clear();
        self.blocks
            .fewest_valid(unit, window, |block| found.push(block));
        let capacity_slots = self.blocks.capacity_slots();
        let min_invalid_slots = self.min_invalid_slots(capacity_slots, trigger);
        let list = found
            .iter()
            .map(|&block| VictimCandidate {
                block,
                valid_slots: self.blocks.valid_slots[block as usize],
                capacity_slots,
                min_invalid_slots,
                last_write_ns: self.blocks.last_write_ns[block as usize],
                erase_count: self.nand.erase_count(block),
                ratio_permille: self.block_ratio_permille(block),
            })
            .collect();
        self.candidate_blocks = found;
        list
    }

    /// One GC cycle on `die`: choose a victim, move its valid data, reclaim it. Returns
    /// false when nothing is worth reclaiming.
    fn gc_once(&mut self, die: u32, now_ns: Nanos, trigger: Trigger) -> Result<bool, FtlError> {
        let victim = match self.take_retiring(die) {
            Some(block) => block,
            None => match self.choose_victim(die, now_ns, trigger) {
                Some(block) => block,
                None => return Ok(false),
            },
        };
        match trigger {
            Trigger::Foreground => self.counters.gc_cycles_foreground += 1,
            Trigger::Background => self.counters.gc_cycles_background += 1,
        }
        self.compressor.in_background_gc = trigger == Trigger::Background;
        let result = self
            .relocate_block(victim, Cause::Gc, now_ns)
            .and_then(|()| self.reclaim(victim, Cause::Gc, now_ns));
        self.compressor.in_background_gc = false;
        result.map(|()| true)
    }

    fn take_retiring(&mut self, die: u32) -> Option<u32> {
        let index = self
            .retire_queue
            .iter()
            .position(|&b| self.nand.unit_of_block(b) == die)?;
        Some(self.retire_queue.swap_remove(index))
    }

    fn choose_victim(&mut self, die: u32, now_ns: Nanos, trigger: Trigger) -> Option<u32> {
        self.candidates = self.victim_candidates(die, trigger);
        let choice = self.policy.choose(&self.candidates, now_ns);
        choice.map(|i| self.candidates[i].block)
    }

    /// Invalid slots a victim must hold: a page (moved data keeps its size), one slot
    /// where moved data may be compressed (see `VictimCandidate`), and in idle time at
    /// least `background_min_invalid_permille` of the block.
    fn min_invalid_slots(&self, capacity_slots: u32, trigger: Trigger) -> u32 {
        let base = match self.compression_active() {
            true => 1,
            false => self.slots_per_page,
        };
        let permille = self.config.ftl.gc.background_min_invalid_permille as u64;
        match trigger {
            Trigger::Background if permille > 0 => {
                base.max((capacity_slots as u64 * permille).div_ceil(1000) as u32)
            }
            _ => base,
        }
    }

    /// Moves every valid slot of `block` to its unit's relocation stream, and re-queues the
    /// trim records it holds that still hide older copies.
    pub(crate) fn relocate_block(
        &mut self,
        block: u32,
        cause: Cause,
        now_ns: Nanos,
    ) -> Result<(), FtlError> {
        let stream = self.gc_stream(self.nand.unit_of_block(block));
        if self.blocks.state[block as usize] == BlockState::Sealed {
            self.blocks.set_state(block, BlockState::Collecting);
        }
        let mut slots = std::mem::take(&mut self.relocation_slots);
        self.nand.prefetch_block_contents(block);
        let mut result = Ok(());
        // A pass moves everything live; a failed program under a straddling copy can map a
        // fragment back here, which the next pass moves again.
        // Staged pages (super-page allocation) take the general path, which holds them.
        let plain = self.slots_per_page == 1 && !self.compression_active() && !self.stages(stream);
        for _pass in 0..RELOCATION_PASSES_MAX {
            self.gather_data_slots(block, &mut slots);
            let shared = match self.mapping.nothing_shared() {
                true => {
                    keep_live(&self.mapping.l2p, &mut slots);
                    Vec::new()
                }
                false => self.keep_live_shared(&mut slots),
            };
            if slots.is_empty() {
                break;
            }
            result = if plain && self.nand.is_infallible() && shared.is_empty() {
                self.relocate_single_slot_pages(&slots, stream, cause, now_ns)
            } else if plain {
                self.move_single_slot_pages(&slots, stream, cause, now_ns)
            } else if self.maps_units() {
                self.move_units(&slots, stream, cause, now_ns)
            } else if self.slots_per_lpn == 1 {
                self.move_page_by_page(&slots, stream, cause, now_ns)
            } else {
                self.move_largest_first(&slots, stream, cause, now_ns)
            };
            if result.is_err() {
                break;
            }
            self.repoint_sharers(&shared);
            // GC of data blocks changes the mappings it moved: translation pages follow.
            if let Err(e) = self.cmt_update(slots.iter().map(|&(_, lpn)| lpn), now_ns) {
                result = Err(e);
                break;
            }
        }
        self.relocation_slots = slots;
        self.relocation_origin = None;
        result
    }

    /// Every (first slot, lpn) of a fragment in `block`, in page order; mapping records
    /// found on the way are re-queued.
    fn gather_data_slots(&mut self, block: u32, slots: &mut Vec<(u32, u32)>) {
        slots.clear();
        let first_page = self.nand.first_page(block);
        let spp = self.slots_per_page as usize;
        let (flags, lpns) = self.nand.block_oob(block);
        let mut trim_pages = false;
        for (i, &f) in flags.iter().enumerate() {
            if f & oob_flags::PROGRAMMED == 0 || f & oob_flags::CORRUPT != 0 {
                continue;
            }
            if f & oob_flags::TRIM_RECORD != 0 {
                trim_pages = true;
                continue;
            }
            let first_slot = (first_page + i as u32) * self.slots_per_page;
            for (k, &lpn) in lpns[i * spp..(i + 1) * spp].iter().enumerate() {
                if is_start(lpn) {
                    slots.push((first_slot + k as u32, lpn));
                }
            }
        }
        if trim_pages {
            for page in first_page..first_page + self.nand.programmed_pages(block) {
                let f = self.nand.oob(page).map_or(0, |oob| oob.flags);
                if f & oob_flags::CORRUPT == 0 && f & oob_flags::TRIM_RECORD != 0 {
                    self.requeue_records(page);
                }
            }
        }
    }

    /// Moves the live fragments that start in one page: one flash read of the span they
    /// cover (two when the last straddles into the next page), then one buffer fragment
    /// each. Bytes of fragments moved as they are stay where they are (the new slots share
    /// them); caGC compresses uncompressed ones on the way.
    /// One-slot fragments: read a page, move its live slots, next page.
    fn move_page_by_page(
        &mut self,
        slots: &[(u32, u32)],
        stream: usize,
        cause: Cause,
        now_ns: Nanos,
    ) -> Result<(), FtlError> {
        let mut i = 0;
        while i < slots.len() {
            let end = self.page_group_end(slots, i);
            let page = self.page_of_slot(slots[i].0);
            self.move_live_fragments(page, &slots[i..end], stream, cause, now_ns)?;
            i = end;
        }
        Ok(())
    }

    /// A page-sized mapping unit: each page holds one unit; it moves as a page
    /// (`unit.rs`, `relocate_unit`).
    fn move_units(
        &mut self,
        slots: &[(u32, u32)],
        stream: usize,
        cause: Cause,
        now_ns: Nanos,
    ) -> Result<(), FtlError> {
        let mut i = 0;
        while i < slots.len() {
            let end = self.page_group_end(slots, i);
            let page = self.page_of_slot(slots[i].0);
            let ready_ns = self.read_fragment_span(page, &slots[i..end], now_ns)?;
            self.relocate_unit(&slots[i..end], stream, cause, ready_ns)?;
            i = end;
        }
        Ok(())
    }

    /// One-slot pages without compression (plain page mapping): every live fragment is
    /// a whole page. The steps `move_page_by_page` and `move_fragment` take for it (read
    /// the page, reserve the stream's next page, remap, program), without the fragment
    /// bookkeeping that cannot apply: no grouping, no compression, no straddling.
    fn move_single_slot_pages(
        &mut self,
        slots: &[(u32, u32)],
        stream: usize,
        cause: Cause,
        now_ns: Nanos,
    ) -> Result<(), FtlError> {
        debug_assert_eq!((self.slots_per_page, self.slots_per_lpn), (1, 1));
        for &(old, lpn) in slots {
            debug_assert_eq!(self.mapping.l2p.at(lpn as usize), old);
            // One slot per page: the slot number is the page number.
            let ready_ns = self.nand.read(old, 0..1, None, now_ns)?.timing.end_ns;
            self.counters.page_reads_relocation += 1;
            self.relocation_origin = Some((old, 1));
            let slot = self.reserve_fragment(stream, 1, false, ready_ns)?;
            self.map(lpn, slot, 1);
            self.fill_single_slot_page(stream, lpn, None, old, ready_ns, cause)?;
        }
        Ok(())
    }

    /// `move_single_slot_pages` on flash that cannot fail: no program can fail or tear,
    /// so a page is never buffered, retried or re-targeted, and the moves that land in
    /// one block are one run in the NAND model. The same steps in the same order, with
    /// the same results, as moving page by page.
    fn relocate_single_slot_pages(
        &mut self,
        slots: &[(u32, u32)],
        stream: usize,
        cause: Cause,
        now_ns: Nanos,
    ) -> Result<(), FtlError> {
        assert_eq!(self.streams[stream].filled, 0);
        let die = self.streams[stream]
            .pinned_die
            .expect("GC streams are pinned") as usize;
        let mut rest = slots;
        while let Some(&(old, _)) = rest.first() {
            // One slot per page: slot numbers are page numbers.
            let first = self.allocate_page(stream, false, now_ns)?;
            let room = self.pages_per_block - self.pages_per_block_div.rem(first);
            let (moves, later) = rest.split_at(rest.len().min(room as usize));
            let run = moves.len() as u32;
            if let Some(f) = self.streams[stream].active[die].as_mut() {
                f.next_page += run - 1;
            }
            for (k, &(from, lpn)) in moves.iter().enumerate() {
                debug_assert_eq!(self.mapping.l2p.at(lpn as usize), from);
                self.mapping.l2p.set(lpn as usize, first + k as u32);
            }
            self.blocks.remove_valid(self.block_of_slot(old), run);
            self.blocks.add_valid(self.block_of_slot(first), run);
            let seq = self.seq;
            self.seq += run as u64;
            let flags = oob_flags::RELOCATED;
            let timing = self.nand.relocate_run(moves, first, seq, flags, now_ns);
            let c = &mut self.counters;
            c.page_reads_relocation += run as u64;
            c.page_programs += run as u64;
            c.add_data_slots(cause, run as u64);
            if let Some(copies) = self.copies.as_mut() {
                for &(_, lpn) in moves {
                    copies[lpn as usize] += 1;
                }
            }
            self.note_programmed(first + run - 1, timing.end_ns);
            rest = later;
        }
        Ok(())
    }

    fn page_group_end(&self, slots: &[(u32, u32)], start: usize) -> usize {
        let page = self.page_of_slot(slots[start].0);
        let mut end = start;
        while end < slots.len() && self.page_of_slot(slots[end].0) == page {
            end += 1;
        }
        end
    }

    /// Fragments of many lengths: read every page first, then move the largest fragments
    /// first, so whole-page fragments fill pages exactly and small ones pack the rest
    /// (first-fit decreasing). Moving them in page order instead can pad so much that a
    /// nearly full victim frees less than its move consumes.
    fn move_largest_first(
        &mut self,
        slots: &[(u32, u32)],
        stream: usize,
        cause: Cause,
        now_ns: Nanos,
    ) -> Result<(), FtlError> {
        let mut moves: Vec<(u32, u32, u32, Nanos)> = Vec::with_capacity(slots.len());
        let mut i = 0;
        while i < slots.len() {
            let end = self.page_group_end(slots, i);
            let page = self.page_of_slot(slots[i].0);
            let ready_ns = self.read_fragment_span(page, &slots[i..end], now_ns)?;
            moves.extend(
                slots[i..end]
                    .iter()
                    .map(|&(old, lpn)| (old, lpn, self.len_of(lpn), ready_ns)),
            );
            i = end;
        }
        moves.sort_by_key(|&(old, _, len, _)| (std::cmp::Reverse(len), old));
        for (old, lpn, _, ready_ns) in moves {
            self.move_fragment(old, lpn, stream, cause, ready_ns)?;
        }
        Ok(())
    }

    /// Reads (for its time) the span of `page` the fragments cover, and the next page's
    /// head if the last one straddles; returns when the data is in the controller.
    fn read_fragment_span(
        &mut self,
        page: u32,
        fragments: &[(u32, u32)],
        now_ns: Nanos,
    ) -> Result<Nanos, FtlError> {
        let spp = self.slots_per_page;
        let first = self.slot_in_page(fragments[0].0);
        let (last_slot, last_lpn) = fragments[fragments.len() - 1];
        let end = self.slot_in_page(last_slot) + self.len_of(last_lpn);
        let mut ready_ns = self
            .nand
            .read(page, first..end.min(spp), None, now_ns)?
            .timing
            .end_ns;
        self.counters.page_reads_relocation += 1;
        if end > spp {
            let tail = self.nand.read(page + 1, 0..end - spp, None, now_ns)?;
            self.counters.page_reads_relocation += 1;
            ready_ns = ready_ns.max(tail.timing.end_ns);
        }
        Ok(ready_ns)
    }

    fn move_live_fragments(
        &mut self,
        page: u32,
        fragments: &[(u32, u32)],
        stream: usize,
        cause: Cause,
        now_ns: Nanos,
    ) -> Result<(), FtlError> {
        let ready_ns = self.read_fragment_span(page, fragments, now_ns)?;
        for &(old, lpn) in fragments {
            debug_assert_eq!(self.mapping.l2p.at(lpn as usize), old);
            self.move_fragment(old, lpn, stream, cause, ready_ns)?;
        }
        Ok(())
    }

    fn move_fragment(
        &mut self,
        old: u32,
        lpn: u32,
        stream: usize,
        cause: Cause,
        ready_ns: Nanos,
    ) -> Result<(), FtlError> {
        let len = self.len_of(lpn);
        self.relocation_origin = Some((old, len));
        let shrunk = match len == self.slots_per_lpn {
            true => self.compress_for_migration(old, ready_ns),
            false => None,
        };
        let scope = self
            .config
            .ftl
            .compression
            .as_ref()
            .map_or(Default::default(), |c| c.gc_straddle_scope);
        let straddle = self
            .compressor
            .policy
            .is_some_and(|p| gc_packs_fragments(scope, p));
        match shrunk {
            Some((new_len, t)) => {
                let slot = match straddle && self.gc_may_straddle(new_len) {
                    true => self.reserve_straddling(stream, new_len, t)?,
                    false => self.reserve_fragment(stream, new_len, false, t)?,
                };
                self.map(lpn, slot, new_len);
                self.announce_compressed_copy(old, slot, new_len);
                self.note_ratio(self.block_of_slot(slot), 1000);
                let fragment = self.compressor_fragment();
                let r =
                    self.fill_fragment(stream, lpn, new_len, Some(&fragment), NO_SOURCE, t, cause);
                self.restore_compressor_fragment(fragment);
                r?;
            }
            None => {
                let slot = match straddle && len < self.slots_per_lpn && self.gc_may_straddle(len) {
                    true => self.reserve_straddling(stream, len, ready_ns)?,
                    false => self.reserve_fragment(stream, len, false, ready_ns)?,
                };
                self.map(lpn, slot, len);
                let ratio = if len < self.slots_per_lpn {
                    1000
                } else {
                    self.block_ratio_permille(self.block_of_slot(old))
                };
                self.note_ratio(self.block_of_slot(slot), ratio);
                self.fill_fragment(stream, lpn, len, None, old, ready_ns, cause)?;
            }
        }
        Ok(())
    }

    /// Whether a `len`-slot compressed fragment GC migrates may straddle (the device's
    /// `gc_straddle` rule).
    fn gc_may_straddle(&self, len: u32) -> bool {
        let rule = self
            .config
            .ftl
            .compression
            .as_ref()
            .map_or(GcStraddle::default(), |c| c.gc_straddle);
        gc_may_straddle(rule, len, self.slots_per_lpn)
    }

    /// Erases (or retires) a block whose valid data has been moved.
    fn reclaim(&mut self, block: u32, cause: Cause, now_ns: Nanos) -> Result<(), FtlError> {
        assert_eq!(
            self.blocks.valid_slots[block as usize], 0,
            "reclaiming live block {block}"
        );
        // Never erase while volatile state supersedes what is on flash (durability rule 4).
        // A program failing under a straddler during that flush maps the straddler back
        // here (its only durable copy), so move it again until the block stays empty.
        self.make_durable(now_ns)?;
        let mut passes = 0;
        while self.blocks.valid_slots[block as usize] != 0 {
            passes += 1;
            if passes > RELOCATION_PASSES_MAX {
                return Err(FtlError::NoSpace(format!(
                    "block {block}: data keeps returning after {passes} relocations"
                )));
            }
            self.relocate_block(block, cause, now_ns)?;
            self.make_durable(now_ns)?;
        }
        self.forget_contents(block);
        if self.blocks.state[block as usize] == BlockState::Retiring {
            self.retire(block);
            return Ok(());
        }
        match self.nand.erase(block, now_ns) {
            Ok(_) => {
                match cause {
                    Cause::WearLevel => self.counters.erases_wl += 1,
                    _ => self.counters.erases_gc += 1,
                }
                self.blocks.push_free(block, self.nand.erase_count(block));
                self.forget_ratio(block);
                self.after_erase(block, now_ns)
            }
            Err(NandError::EraseFailed { .. }) => {
                self.retire(block);
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Drops the bookkeeping of what `block` holds: copy counts and mapping records.
    fn forget_contents(&mut self, block: u32) {
        let first_page = self.nand.first_page(block);
        let spp = self.slots_per_page as usize;
        let (flags, lpns) = self.nand.block_oob(block);
        let mut record_pages = Vec::new();
        for (i, &f) in flags.iter().enumerate() {
            if f & oob_flags::PROGRAMMED == 0 || f & oob_flags::CORRUPT != 0 {
                continue;
            }
            if f & oob_flags::TRIM_RECORD != 0 {
                record_pages.push(first_page + i as u32);
                continue;
            }
            if let Some(copies) = self.copies.as_mut() {
                for &lpn in lpns[i * spp..(i + 1) * spp]
                    .iter()
                    .filter(|&&l| is_start(l))
                {
                    copies[lpn as usize] -= 1;
                }
            }
        }
        for page in record_pages {
            self.forget_record_page(page);
        }
    }

    fn retire(&mut self, block: u32) {
        self.nand.retire(block);
        self.blocks.set_state(block, BlockState::Bad);
        self.counters.blocks_retired += 1;
    }

    /// Static wear levelling, checked every `check_interval_erases` erases on a die.
    fn after_erase(&mut self, block: u32, now_ns: Nanos) -> Result<(), FtlError> {
        let die = self.nand.unit_of_block(block);
        let wear = &self.config.ftl.wear;
        if wear.static_threshold.is_none() {
            return Ok(());
        }
        // With super-page allocation a wear-levelling move leaves the plane (its die's
        // relocation stream writes every plane), so the plane's least-worn free block stays
        // unused and a check right after a wear-levelling erase could start the next one at
        // once, and so on without end: that erase is not counted, the next check waits
        // for other erases. Page by page the moves use the plane's own free blocks, and
        // this stays as it was.
        if self.super_page && self.wear_levelling {
            return Ok(());
        }
        self.erases_since_wl_check[die as usize] += 1;
        if self.erases_since_wl_check[die as usize] < wear.check_interval_erases {
            return Ok(());
        }
        self.erases_since_wl_check[die as usize] = 0;
        let (coldest, erase_min, erase_max) = self.wear_extremes(die);
        if !wear_level_needed(erase_min, erase_max, self.config.ftl.wear.static_threshold) {
            return Ok(());
        }
        let Some(victim) = coldest else { return Ok(()) };
        self.counters.wl_cycles += 1;
        self.wear_levelling = true;
        let result = self
            .relocate_block(victim, Cause::WearLevel, now_ns)
            .and_then(|()| {
                // The victim may have been emptied by the relocation's own flush; reclaim
                // it only if it is still a sealed, empty block.
                match self.blocks.state[victim as usize] == BlockState::Collecting {
                    true => self.reclaim(victim, Cause::WearLevel, now_ns),
                    false => Ok(()),
                }
            });
        self.wear_levelling = false;
        result
    }

    /// The least-worn sealed block of a die, and the die's erase-count range over good blocks.
    fn wear_extremes(&self, die: u32) -> (Option<u32>, u32, u32) {
        let mut coldest: Option<(u32, u32)> = None;
        let (mut erase_min, mut erase_max) = (u32::MAX, 0);
        for block in self.nand.blocks_of_unit(die) {
            let state = self.blocks.state[block as usize];
            if state == BlockState::Bad {
                continue;
            }
            let erases = self.nand.erase_count(block);
            erase_min = erase_min.min(erases);
            erase_max = erase_max.max(erases);
            if state == BlockState::Sealed && coldest.is_none_or(|(e, _)| erases < e) {
                coldest = Some((erases, block));
            }
        }
        (coldest.map(|(_, b)| b), erase_min, erase_max.max(erase_min))
    }
}

impl Ftl {
    /// `keep_live` once slots may be shared: a slot lives while anything refers to it. A
    /// shared slot is moved for one representative (its owner if the owner still maps to
    /// it, else its first alias), which takes the owner's place in `slots`; the pairs
    /// (old slot, representative) returned are re-pointed after the move
    /// ([`Ftl::repoint_sharers`]), so the data is moved once for all its referrers.
    fn keep_live_shared(&self, slots: &mut Vec<(u32, u32)>) -> Vec<(u32, u32)> {
        let mut shared = Vec::new();
        slots.retain_mut(|(slot, lpn)| {
            let owned = self.mapping.l2p.at(*lpn as usize) == *slot;
            if !self.mapping.is_shared(*slot) {
                return owned;
            }
            if !owned {
                *lpn = self.mapping.aliases(*slot)[0];
            }
            shared.push((*slot, *lpn));
            true
        });
        shared
    }
}

/// One super-block victim's live data while `relocate_super_block` moves it: its (slot,
/// lpn) pairs in page order, the next to move, where the source page read last ends, and
/// when that read is done.
struct VictimQueue {
    slots: Vec<(u32, u32)>,
    next: usize,
    read_end: usize,
    ready_ns: Nanos,
}

impl VictimQueue {
    fn left(&self) -> usize {
        self.slots.len() - self.next
    }
}

/// Keeps the (slot, lpn) pairs the mapping still points at, in order. The mapping entries
/// are random cache misses: they are all requested first (prefetches, independent of one
/// another), then checked without a branch on the loaded value, so a mispredicted branch
/// does not cancel the loads still in flight.
fn keep_live(l2p: &LazyTable, slots: &mut Vec<(u32, u32)>) {
    for &(_, lpn) in slots.iter() {
        l2p.prefetch(lpn as usize);
    }
    let mut kept = 0;
    for i in 0..slots.len() {
        let (slot, lpn) = slots[i];
        slots[kept] = (slot, lpn);
        kept += (l2p.at(lpn as usize) == slot) as usize;
    }
    slots.truncate(kept);
}
