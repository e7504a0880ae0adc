//! Power-loss recovery: rebuild the mapping from the flash alone.

use std::collections::BTreeMap;

use flashstack_block::{BlockError, Completion};
use flashstack_nand::{oob_flags, NO_LPN};
use flashstack_sim::Nanos;

use crate::blocks::BlockTable;
use crate::stream::{build_streams, is_continuation, is_start};

use crate::{BlockState, Ftl, UNMAPPED};

/// How far ahead [`Ftl::mount_single_copies`] requests mapping entries.
const PREFETCH_AHEAD_SLOTS: usize = 32;

impl Ftl {
    /// Restores power after a cut (or a clean shutdown) and rebuilds every volatile table by
    /// scanning the OOB of every programmed page: per logical page the newest statement
    /// wins, a data copy by its page's sequence number or a mapping record (trim, bind) by
    /// its record page's. Returns the scan's span in
    /// virtual time, the device's mount time.
    pub fn power_cycle(&mut self, now_ns: Nanos) -> Result<Completion, BlockError> {
        self.nand.power_on(now_ns);
        let held = self.wbuf_power_loss();
        self.reset_volatile_state(now_ns);
        let mut seq_max = 0;
        let mut record_pages: Vec<(u64, u32)> = Vec::new();
        let mut scan_end_ns = now_ns;
        let g = self.config.nand.geometry.clone();
        for block in 0..g.blocks() {
            if self.nand.is_bad(block) {
                self.blocks.set_state(block, BlockState::Bad);
                continue;
            }
            let first_page = self.nand.first_page(block);
            for page in first_page..first_page + self.nand.programmed_pages(block) {
                let timing = self
                    .nand
                    .read_oob(page, now_ns)
                    .map_err(|_| BlockError::PowerLoss)?;
                scan_end_ns = scan_end_ns.max(timing.end_ns);
                seq_max = seq_max.max(self.scan_page(page, &mut record_pages));
            }
        }
        self.apply_records(record_pages);
        let repaired = self.repair_split_units();
        let (nand, per_page) = (&self.nand, &self.per_page);
        self.mapping.rebuild_shared(|slot| {
            let oob = nand.oob(per_page.div(slot));
            oob.expect("recovered slots are on flash").lpns[per_page.rem(slot) as usize]
        });
        if !self.records.is_empty() || repaired {
            self.build_copies();
        }
        self.rebuild_block_table(now_ns);
        let scan_end_ns = self
            .cmt_recover(scan_end_ns)
            .map_err(|_| BlockError::PowerLoss)?;
        self.seq = seq_max + 1;
        self.queue.reset(scan_end_ns);
        // A capacitor-backed buffer was destaged during the hold-up time.
        let scan_end_ns = self
            .wbuf_hold_up(held, scan_end_ns)
            .map_err(|_| BlockError::PowerLoss)?;
        self.counters.power_cycles += 1;
        self.counters.recovery_ns_last = scan_end_ns - now_ns;
        self.queue.reset(scan_end_ns);
        Ok(Completion {
            start_ns: now_ns,
            complete_ns: scan_end_ns,
        })
    }

    /// Mounts flash known to hold exactly one copy of each mapped logical page, each in
    /// one slot, and nothing else (no mapping records, bad blocks or torn pages): what a
    /// constructed steady state lays out. Builds the same tables as [`Ftl::power_cycle`]
    /// (tested in `tests_construct`) in one pass over the spare areas, without comparing
    /// statements, and charges no scan time: the device is handed over as it was left, as
    /// a replay-preconditioned one is. Panics on flash that breaks the premise (a second
    /// copy of a logical page), since only the constructor calls it.
    pub(crate) fn mount_single_copies(&mut self, now_ns: Nanos) {
        assert!(self.records.is_empty() && self.slots_per_lpn == 1);
        self.nand.power_on(now_ns);
        self.reset_volatile_state(now_ns);
        // The table's prefix is about to be written in random order: on 4 KiB pages each
        // entry would also be a TLB miss.
        self.mapping.l2p.advise_dense();
        let spp = self.slots_per_page;
        let mut seq_max = 0;
        for block in 0..self.config.nand.geometry.blocks() {
            assert!(
                !self.nand.is_bad(block),
                "constructed flash has no bad block"
            );
            let programmed = self.nand.programmed_pages(block);
            if programmed == 0 {
                continue;
            }
            let first_page = self.nand.first_page(block);
            // Programs go in page order: a block's last page is its newest.
            let last = self
                .nand
                .oob(first_page + programmed - 1)
                .expect("programmed");
            seq_max = seq_max.max(last.seq);
            let (flags, lpns) = self.nand.block_oob(block);
            debug_assert!(flags.iter().all(|&f| f == oob_flags::PROGRAMMED));
            let first_slot = first_page * spp;
            let mut valid = 0;
            for (i, &lpn) in lpns.iter().enumerate() {
                // The logical pages are in random order: each entry is a cache miss, so
                // later ones are requested while this one is written.
                if let Some(&ahead) = lpns.get(i + PREFETCH_AHEAD_SLOTS) {
                    self.mapping.l2p.prefetch(ahead as usize);
                }
                if lpn as u64 >= self.user_lbas {
                    continue; // padding
                }
                let old = self
                    .mapping
                    .l2p
                    .replace(lpn as usize, first_slot + i as u32);
                assert_eq!(old, UNMAPPED, "logical page {lpn} has a second copy");
                valid += 1;
            }
            if valid > 0 {
                self.blocks.add_valid(block, valid);
            }
        }
        self.rebuild_block_states(now_ns);
        self.cmt_recover(now_ns)
            .expect("no translation page is stale after a mount");
        self.seq = seq_max + 1;
        self.queue.reset(now_ns);
    }

    fn reset_volatile_state(&mut self, now_ns: Nanos) {
        let g = &self.config.nand.geometry;
        self.powered_off = false;
        self.mapping.clear();
        self.copies = None;
        self.blocks = BlockTable::new(
            g.units(),
            g.blocks_per_plane,
            g.pages_per_block * self.slots_per_page,
            self.config.ftl.wear.dynamic,
        );
        self.streams = build_streams(
            self.host_streams,
            g.units(),
            g.page_size_bytes,
            g.planes_per_die,
            self.super_page,
        );
        self.pending_trims.clear();
        self.pending_binds.clear();
        // What was superseded before the cut may be what recovery maps now.
        self.dead_fragments.clear();
        self.block_ratio_sum.fill(0);
        self.block_ratio_count.fill(0);
        self.retire_queue.clear();
        self.erases_since_wl_check.fill(0);
        self.queue.reset(now_ns);
        if let Some(cache) = self.mapping_cache.as_mut() {
            cache.lose_power();
        }
        // Mapping records are page contents, not volatile state: a torn program never
        // inserted one.
    }

    /// Folds one page's OOB into the mapping; returns its sequence number.
    fn scan_page(&mut self, page: u32, record_pages: &mut Vec<(u64, u32)>) -> u64 {
        let oob = self.nand.oob(page).expect("scanned pages are programmed");
        let seq = oob.seq;
        if oob.flags & oob_flags::CORRUPT != 0 {
            return 0;
        }
        if oob.flags & oob_flags::TRIM_RECORD != 0 {
            record_pages.push((seq, page));
            return seq;
        }
        let spp = self.slots_per_page;
        let mut lpns = [NO_LPN; flashstack_nand::MAX_SLOTS_PER_PAGE as usize];
        lpns[..spp as usize].copy_from_slice(oob.lpns);
        for i in 0..spp {
            let lpn = lpns[i as usize];
            if !is_start(lpn) || lpn as u64 >= self.user_lbas {
                continue;
            }
            let Some(len) = self.complete_fragment_len(page, i, &lpns[..spp as usize]) else {
                continue; // A straddler whose tail never reached flash.
            };
            let current = self.mapping.l2p.at(lpn as usize);
            if current == UNMAPPED || seq > self.slot_seq(current) {
                self.mapping.l2p.set(lpn as usize, page * spp + i);
                self.set_len(lpn, len);
            }
        }
        seq
    }

    /// The length of the fragment starting at slot `i` of `page`, following its countdown of
    /// continuation markers into the next page of the block if it straddles; `None` if the
    /// countdown does not reach 0 (its second page was never programmed).
    fn complete_fragment_len(&self, page: u32, i: u32, lpns: &[u32]) -> Option<u32> {
        let mut countdown = Countdown {
            len: 1,
            expect: None,
        };
        for &value in &lpns[i as usize + 1..] {
            match countdown.step(value) {
                Step::Done => return Some(countdown.len),
                Step::More => {}
                Step::NotContinuation if countdown.len == 1 => return Some(1),
                Step::NotContinuation | Step::Broken => return None,
            }
        }
        // A start on the last slot is a one-slot fragment: straddlers leave at least two
        // slots on their first page.
        if countdown.len == 1 {
            return Some(1);
        }
        let next = page + 1;
        if self.nand.block_of_page(next) != self.nand.block_of_page(page) {
            return None;
        }
        let oob = self.nand.oob(next)?;
        if oob.flags & flashstack_nand::oob_flags::CORRUPT != 0 {
            return None;
        }
        for &value in oob.lpns {
            match countdown.step(value) {
                Step::Done => return Some(countdown.len),
                Step::More => {}
                Step::NotContinuation | Step::Broken => return None,
            }
        }
        None
    }

    fn slot_seq(&self, slot: u32) -> u64 {
        self.nand
            .oob(self.page_of_slot(slot))
            .expect("mapped slots are programmed")
            .seq
    }

    /// Applies the mapping records in sequence order: each wins over every older
    /// statement about its logical page (a data copy, or an earlier record).
    fn apply_records(&mut self, mut record_pages: Vec<(u64, u32)>) {
        record_pages.sort_unstable();
        // The sequence number of the statement each record-touched page now stands on.
        let mut stated: BTreeMap<u32, u64> = BTreeMap::new();
        let log = std::mem::take(&mut self.records);
        for (seq, page) in record_pages {
            let Some(records) = log.get(&page) else {
                continue;
            };
            for &lpn in records.trims.iter() {
                if self.statement_seq(&stated, lpn) < seq {
                    self.mapping.l2p.set(lpn as usize, UNMAPPED);
                    stated.insert(lpn, seq);
                }
            }
            for &(lpn, slot) in records.binds.iter() {
                if self.statement_seq(&stated, lpn) >= seq {
                    continue;
                }
                if let Some(len) = self.bindable_len(slot) {
                    self.mapping.l2p.set(lpn as usize, slot);
                    self.set_len(lpn, len);
                    stated.insert(lpn, seq);
                }
            }
        }
        self.records = log;
    }

    /// The sequence number of what `lpn` maps by now: a record's, or its data copy's
    /// (0 when unmapped by the scan).
    fn statement_seq(&self, stated: &BTreeMap<u32, u64>, lpn: u32) -> u64 {
        if let Some(&seq) = stated.get(&lpn) {
            return seq;
        }
        match self.mapping.l2p.at(lpn as usize) {
            UNMAPPED => 0,
            slot => self.slot_seq(slot),
        }
    }

    /// The fragment length at `slot` if a bind may point there: a complete fragment's
    /// first slot in a programmed data page. Erasing a slot a bind names requires a newer
    /// statement first (durability rule 4), so this only ever refuses a bind already
    /// superseded.
    fn bindable_len(&self, slot: u32) -> Option<u32> {
        let page = self.page_of_slot(slot);
        let oob = self.nand.oob(page)?;
        if oob.flags & (oob_flags::CORRUPT | oob_flags::TRIM_RECORD) != 0 {
            return None;
        }
        let i = self.slot_in_page(slot);
        if !is_start(oob.lpns[i as usize]) {
            return None;
        }
        let mut lpns = [NO_LPN; flashstack_nand::MAX_SLOTS_PER_PAGE as usize];
        let spp = self.slots_per_page as usize;
        lpns[..spp].copy_from_slice(oob.lpns);
        self.complete_fragment_len(page, i, &lpns[..spp])
    }

    /// Valid counts from the mapping, then states: programmed blocks are sealed (a frontier
    /// left half-written is not reopened), erased ones go back to the free pools.
    fn rebuild_block_table(&mut self, now_ns: Nanos) {
        for i in 0..self.mapping.l2p.len() {
            let slot = self.mapping.l2p.at(i);
            if slot != UNMAPPED && self.mapping.counts_valid(i as u32) {
                let block = self.block_of_slot(slot);
                let len = self.len_of(i as u32);
                self.blocks.add_valid(block, len);
            }
        }
        self.rebuild_block_states(now_ns);
    }

    /// Block states and free pools from the flash, valid counts already in place.
    fn rebuild_block_states(&mut self, now_ns: Nanos) {
        for block in 0..self.config.nand.geometry.blocks() {
            if self.blocks.state[block as usize] == BlockState::Bad {
                continue;
            }
            self.blocks.last_write_ns[block as usize] = now_ns;
            if self.nand.programmed_pages(block) == 0 {
                self.blocks.push_free(block, self.nand.erase_count(block));
            } else {
                self.blocks.set_state(block, BlockState::Sealed);
                if self.nand.is_failing(block) {
                    self.queue_retirement(block);
                }
            }
        }
    }
}

/// Walks a fragment's continuation markers: each names the slots still to come.
struct Countdown {
    len: u32,
    expect: Option<u32>,
}

enum Step {
    /// The marker said 0: the fragment ends here.
    Done,
    /// A continuation with more to come.
    More,
    /// Not a continuation: the fragment ended before this slot.
    NotContinuation,
    /// A continuation out of sequence.
    Broken,
}

impl Countdown {
    fn step(&mut self, value: u32) -> Step {
        if !is_continuation(value) {
            return Step::NotContinuation;
        }
        let remaining = value - crate::stream::CONTINUATION_BASE;
        if self.expect.is_some_and(|e| e != remaining) {
            return Step::Broken;
        }
        self.expect = remaining.checked_sub(1);
        self.len += 1;
        if remaining == 0 {
            Step::Done
        } else {
            Step::More
        }
    }
}
