//! Full consistency check of the FTL's tables against the flash. O(device size): for tests
//! and for `--check` runs, not for every request of a long run.

use flashstack_nand::oob_flags;

use crate::stream::{continuation, is_continuation, is_start};
use crate::{BlockState, Ftl, UNMAPPED};

impl Ftl {
    /// Verifies every invariant the FTL relies on; returns a description of the first
    /// violation.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.check_mapping()?;
        self.check_unit_placement()?;
        self.check_blocks()?;
        self.check_copies()?;
        self.check_fragments_on_flash()?;
        self.check_mapping_cache()?;
        self.check_hpb()?;
        self.wbuf_check()?;
        self.check_counters()
    }

    fn check_mapping(&self) -> Result<(), String> {
        let mut valid = vec![0u32; self.blocks.state.len()];
        for (lpn, slot) in self.mapping.l2p.iter().enumerate() {
            if slot == UNMAPPED {
                continue;
            }
            let lpn = lpn as u32;
            let len = self.len_of(lpn);
            let block = self.block_of_slot(slot);
            if self.mapping.counts_valid(lpn) {
                valid[block as usize] += len;
            }
            let state = self.blocks.state[block as usize];
            if matches!(state, BlockState::Free | BlockState::Bad) {
                return Err(format!("lpn {lpn} maps into {state:?} block {block}"));
            }
            // An alias's fragment names the slot's owner.
            let named = match self.mapping.aliases(slot).binary_search(&lpn) {
                Ok(_) => self.slot_owner(slot).unwrap_or(lpn),
                Err(_) => lpn,
            };
            self.check_fragment(named, slot, len)?;
        }
        self.mapping.check(|slot| self.slot_owner(slot))?;
        for (block, &count) in valid.iter().enumerate() {
            if self.blocks.valid_slots[block] != count {
                return Err(format!(
                    "block {block}: table says {} valid slots, mapping says {count}",
                    self.blocks.valid_slots[block]
                ));
            }
        }
        Ok(())
    }

    /// The fragment at `slot` named `lpn`: its first slot names it, the next `len − 1` say
    /// `CONTINUATION`, all within one page, on flash or in the buffer bound to the page.
    fn check_fragment(&self, lpn: u32, slot: u32, len: u32) -> Result<(), String> {
        let spp = self.slots_per_page;
        let page = self.page_of_slot(slot);
        let index = slot % spp;
        let straddles = index + len > spp;
        let same_block = self.nand.block_of_page(page) == self.nand.block_of_page(page + 1);
        if len == 0 || len > self.slots_per_lpn || (straddles && !same_block) {
            return Err(format!(
                "lpn {lpn}: fragment of {len} slots at slot {index} of {page}"
            ));
        }
        let expected = |k: u32| {
            if k == 0 {
                lpn
            } else {
                continuation(len - 1 - k)
            }
        };
        let head = self.slot_values(page, index..(index + len).min(spp))?;
        let tail = match straddles {
            true => self.slot_values(page + 1, 0..index + len - spp)?,
            false => Vec::new(),
        };
        for (k, value) in head.iter().chain(tail.iter()).enumerate() {
            if *value != expected(k as u32) {
                return Err(format!(
                    "lpn {lpn} (page {page} slot {index}, {len} slots): slot {k} says {value}"
                ));
            }
        }
        Ok(())
    }

    /// The OOB values of `slots` of `page`, from flash or from the buffer bound to it.
    fn slot_values(&self, page: u32, slots: std::ops::Range<u32>) -> Result<Vec<u32>, String> {
        match self.nand.oob(page) {
            Some(oob) => {
                if oob.flags & (oob_flags::CORRUPT | oob_flags::TRIM_RECORD) != 0 {
                    return Err(format!("a mapping points into unusable page {page}"));
                }
                Ok(oob.lpns[slots.start as usize..slots.end as usize].to_vec())
            }
            None => match self.buffered_page(page) {
                Some(b) if slots.end <= b.filled => {
                    Ok(b.lpns[slots.start as usize..slots.end as usize].to_vec())
                }
                _ => Err(format!(
                    "a mapping points into unprogrammed, unbuffered page {page}"
                )),
            },
        }
    }

    /// Every continuation slot on flash follows its fragment's start or the continuation
    /// before it (across a page boundary within a block, for straddlers).
    fn check_fragments_on_flash(&self) -> Result<(), String> {
        for block in 0..self.blocks.state.len() as u32 {
            let first = self.nand.first_page(block);
            let mut previous = flashstack_nand::NO_LPN;
            for page in first..first + self.nand.programmed_pages(block) {
                let Some(oob) = self.nand.oob(page) else {
                    previous = flashstack_nand::NO_LPN;
                    continue;
                };
                for (i, &value) in oob.lpns.iter().enumerate() {
                    let follows = || {
                        is_start(previous) || (is_continuation(previous) && previous == value + 1)
                    };
                    if is_continuation(value) && !follows() {
                        return Err(format!("page {page} slot {i}: continuation of nothing"));
                    }
                    previous = value;
                }
            }
        }
        Ok(())
    }

    fn check_blocks(&self) -> Result<(), String> {
        for unit in 0..self.units {
            let free = self.blocks.count_in_state(unit, BlockState::Free);
            if free != self.blocks.free_count(unit) {
                return Err(format!(
                    "unit {unit}: {free} blocks marked free, pool holds {}",
                    self.blocks.free_count(unit)
                ));
            }
        }
        for block in 0..self.blocks.state.len() as u32 {
            let state = self.blocks.state[block as usize];
            let programmed = self.nand.programmed_pages(block);
            if state == BlockState::Free && programmed != 0 {
                return Err(format!(
                    "free block {block} has {programmed} programmed pages"
                ));
            }
            if (state == BlockState::Bad) != self.nand.is_bad(block) {
                return Err(format!(
                    "block {block}: FTL state {state:?} disagrees with NAND"
                ));
            }
        }
        Ok(())
    }

    fn check_copies(&self) -> Result<(), String> {
        let copies = self.count_copies_on_flash();
        let Some(table) = &self.copies else {
            return Ok(());
        };
        match copies.iter().zip(table).position(|(a, b)| a != b) {
            Some(lpn) => Err(format!(
                "lpn {lpn}: {} copies on flash, table says {}",
                copies[lpn], table[lpn]
            )),
            None => Ok(()),
        }
    }

    fn check_counters(&self) -> Result<(), String> {
        let c = &self.counters;
        let slots = c.page_programs * self.slots_per_page as u64;
        if c.program_slots_total() != slots {
            return Err(format!(
                "programmed slots by cause sum to {}, pages × slots = {slots}",
                c.program_slots_total()
            ));
        }
        if c.page_programs != self.nand.counters().page_programs {
            return Err(format!(
                "FTL counted {} programs, NAND {}",
                c.page_programs,
                self.nand.counters().page_programs
            ));
        }
        Ok(())
    }
}
