//! Full consistency check of the FTL's tables against the flash. O(device size): for tests
//! and for `--check` runs, not for every request of a long run.

use flashstack_nand::oob_flags;

use crate::stream::CONTINUATION;
use crate::{BlockState, Ftl, UNMAPPED};

impl Ftl {
    /// Verifies every invariant the FTL relies on; returns a description of the first
    /// violation.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.check_mapping()?;
        self.check_blocks()?;
        self.check_copies()?;
        self.check_fragments_on_flash()?;
        self.check_counters()
    }

    fn check_mapping(&self) -> Result<(), String> {
        let mut valid = vec![0u32; self.blocks.state.len()];
        for (lpn, &slot) in self.l2p.iter().enumerate() {
            if slot == UNMAPPED {
                continue;
            }
            let lpn = lpn as u32;
            let len = self.len_of(lpn);
            let block = self.block_of_slot(slot);
            valid[block as usize] += len;
            let state = self.blocks.state[block as usize];
            if matches!(state, BlockState::Free | BlockState::Bad) {
                return Err(format!("lpn {lpn} maps into {state:?} block {block}"));
            }
            self.check_fragment(lpn, slot, len)?;
        }
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

    /// The fragment of `lpn` at `slot`: its first slot names it, the next `len − 1` say
    /// `CONTINUATION`, all within one page, on flash or in the buffer bound to the page.
    fn check_fragment(&self, lpn: u32, slot: u32, len: u32) -> Result<(), String> {
        let page = self.page_of_slot(slot);
        let index = (slot % self.slots_per_page) as usize;
        if len == 0 || index + len as usize > self.slots_per_page as usize {
            return Err(format!(
                "lpn {lpn}: fragment of {len} slots at slot {index} of {page}"
            ));
        }
        let expected = |k: usize| if k == 0 { lpn } else { CONTINUATION };
        let oob_lpns: Vec<u32> = match self.nand.oob(page) {
            Some(oob) => {
                if oob.flags & (oob_flags::CORRUPT | oob_flags::TRIM_RECORD) != 0 {
                    return Err(format!("lpn {lpn} maps to unusable page {page}"));
                }
                oob.lpns.to_vec()
            }
            None => {
                let stream = self.streams.iter().find(|s| s.target_page == page);
                match stream {
                    Some(s) if (index + len as usize) <= s.filled as usize => s.lpns.to_vec(),
                    _ => return Err(format!("lpn {lpn} maps to unprogrammed, unbuffered {page}")),
                }
            }
        };
        for k in 0..len as usize {
            if oob_lpns[index + k] != expected(k) {
                return Err(format!(
                    "lpn {lpn} maps to page {page} slot {} whose OOB says {}",
                    index + k,
                    oob_lpns[index + k]
                ));
            }
        }
        Ok(())
    }

    /// Every continuation slot on flash follows a fragment start or another continuation.
    fn check_fragments_on_flash(&self) -> Result<(), String> {
        for block in 0..self.blocks.state.len() as u32 {
            let first = self.nand.first_page(block);
            for page in first..first + self.nand.programmed_pages(block) {
                let Some(oob) = self.nand.oob(page) else {
                    continue;
                };
                let mut previous = flashstack_nand::NO_LPN;
                for (i, &lpn) in oob.lpns.iter().enumerate() {
                    if lpn == CONTINUATION && previous == flashstack_nand::NO_LPN {
                        return Err(format!("page {page} slot {i}: continuation of nothing"));
                    }
                    previous = lpn;
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
