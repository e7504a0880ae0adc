//! A mapping unit as large as the flash page (`ftl.mapping_unit_bytes` = the page size;
//! issue 19 item 4), as MQSim's PAGE_LEVEL mapping and page-mapped controllers work.
//!
//! Placement rule: the logical pages of unit `u` (`u × n .. u × n + n`, `n` = unit ÷ 4 KiB)
//! that hold data all sit in one flash page, logical page `u × n + k` in slot `k`. The
//! page holds nothing else. The L2P keeps one entry per 4 KiB logical page (so reads,
//! trims, recovery and the consistency checks work as before), but by the rule those
//! entries move together: the unit is the mapping granule, and the mapping cache keys its
//! entries by unit (`cmt.rs`).
//!
//! Step by step, for a host write to some of the logical pages of a unit:
//! 1. A page is reserved on the write's stream (foreground GC may run first, and may move
//!    this very unit).
//! 2. The pure decision [`unit_update`] says, from which sub-units the write carries and
//!    which are mapped now, which to read from the unit's current page (the mapped ones
//!    the write does not cover) and which to pad (never written, or trimmed).
//! 3. Those sub-units are read in one flash read (`rmw_reads`; its time delays the
//!    program), their copies mapped to the new page beside the host's data, the rest
//!    padded, and the whole page programmed. The copies count as `program_slots_rmw`.
//!
//! Durability. The new page's sequence number is higher than the old page's, so recovery
//! maps every sub-unit to it once it is programmed; a cut that tears the program leaves
//! the old page, still whole, as the newest copy of each: nothing durable is lost. GC
//! moves a unit as one page (`relocate_unit`), padding included, as MQSim moves pages.
//! A trim unmaps its sub-units only; the others stay valid in their page.
//!
//! One case breaks the placement rule after a cut: a sub-unit trimmed before the cut (its
//! trim not yet logged) while the rest of its unit was written again reappears from the
//! older page. Recovery then keeps the unit's newest page and drops what older pages say
//! (those sub-units had been trimmed by the host), logging those trims again
//! ([`Ftl::repair_split_units`]).

use flashstack_block::{Completion, Hints, Payload, LBA_SIZE};
use flashstack_nand::{FlashMedium, MAX_SLOTS_PER_PAGE, NO_LPN, NO_SOURCE};
use flashstack_sim::Nanos;

use crate::write::Accepted;
use crate::{Cause, Ftl, FtlError, UNMAPPED};

const SUB_UNITS_MAX: usize = MAX_SLOTS_PER_PAGE as usize;

/// What an update of some sub-units of a mapping unit needs: bit `k` stands for sub-unit
/// `k` (4 KiB logical page `unit × n + k`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnitUpdate {
    /// Sub-units to read from the unit's current page (mapped, not overwritten).
    pub read: u32,
    /// Sub-units the new page carries data for: the written ones and those read.
    pub program: u32,
    /// Sub-units programmed as padding (neither written nor mapped).
    pub pad: u32,
    /// The span one flash read covers: from the first to past the last sub-unit read
    /// (empty when nothing is read).
    pub read_span: (u32, u32),
}

/// The decision for writing sub-units `written` of an `n`-sub-unit mapping unit whose
/// sub-units `mapped` hold data now: read the mapped ones the write does not cover (in one
/// read of the span from the first to the last), program the whole unit, pad the rest. A
/// sub-unit never written (or trimmed) is not read, as in MQSim.
pub fn unit_update(n: u32, written: u32, mapped: u32) -> UnitUpdate {
    assert!((1..=32).contains(&n), "a unit of {n} sub-units");
    let all = if n == 32 { u32::MAX } else { (1 << n) - 1 };
    let (written, mapped) = (written & all, mapped & all);
    let read = mapped & !written;
    let program = written | read;
    let read_span = match read {
        0 => (0, 0),
        r => (r.trailing_zeros(), 32 - r.leading_zeros()),
    };
    UnitUpdate {
        read,
        program,
        pad: all & !program,
        read_span,
    }
}

impl Ftl {
    /// Whether the mapping unit is larger than 4 KiB (this module's rules apply).
    #[inline]
    pub(crate) fn maps_units(&self) -> bool {
        self.unit_lpns > 1
    }

    /// Sub-units of the unit starting at `base` that exist on this device (the last unit
    /// may be cut short by the capacity).
    fn sub_units(&self, base: u32) -> u32 {
        (self.unit_lpns as u64).min(self.user_lbas - base as u64) as u32
    }

    /// `host_write` with a page-sized mapping unit: the request's logical pages are
    /// written a unit at a time, each unit's page programmed once its data has crossed the
    /// link (module doc).
    pub(crate) fn host_write_units(
        &mut self,
        arrival_ns: Nanos,
        lba: u64,
        payload: Payload<'_>,
        hints: Hints,
    ) -> Result<Completion, FtlError> {
        let count = payload.lba_count();
        let Accepted {
            queue_slot,
            start_ns,
            accepted_ns,
            stream,
        } = self.accept_write(arrival_ns, &hints);
        let mut complete_ns = accepted_ns;
        let mapped_ns = self.cmt_access(lba as u32, count, true, accepted_ns)?;
        let n = self.unit_lpns as u64;
        let end = lba + count as u64;
        let mut at = lba;
        while at < end {
            let base = at / n * n;
            let upto = (base + n).min(end);
            let mut data: [Option<&[u8]>; SUB_UNITS_MAX] = [None; SUB_UNITS_MAX];
            let mut written = 0u32;
            let mut ready_ns = mapped_ns;
            for l in at..upto {
                let (_, link_ns) = self
                    .host_link
                    .reserve(accepted_ns, self.config.host.link_ns_per_4k);
                ready_ns = ready_ns.max(link_ns);
                let k = (l - base) as usize;
                written |= 1 << k;
                if let Payload::Bytes(bytes) = payload {
                    let i = (l - lba) as usize;
                    data[k] = Some(&bytes[i * LBA_SIZE..(i + 1) * LBA_SIZE]);
                }
            }
            let done = self.write_unit(stream as usize, base as u32, written, &data, ready_ns)?;
            complete_ns = complete_ns.max(ready_ns).max(done);
            at = upto;
        }
        if hints.fua {
            complete_ns = complete_ns.max(self.make_durable(complete_ns)?);
        }
        Ok(self.finish_write(queue_slot, start_ns, complete_ns, count))
    }

    /// Writes sub-units `written` (bytes in `data[k]`, or zeros/unstored) of the unit
    /// starting at logical page `base` to a fresh page of `stream`, reading and copying the
    /// unit's other mapped sub-units (steps 1–3 of the module doc). Returns when the page
    /// is programmed.
    pub(crate) fn write_unit(
        &mut self,
        stream: usize,
        base: u32,
        written: u32,
        data: &[Option<&[u8]>],
        ready_ns: Nanos,
    ) -> Result<Nanos, FtlError> {
        debug_assert!(self.maps_units() && base.is_multiple_of(self.unit_lpns));
        // Reserve first: allocation may run GC, which may move this very unit.
        let slot = self.reserve_fragment(stream, self.slots_per_page, true, ready_ns)?;
        debug_assert!(
            slot.is_multiple_of(self.slots_per_page),
            "a unit starts a page"
        );
        let n = self.sub_units(base);
        let mut mapped = 0u32;
        let mut old_slots = [UNMAPPED; SUB_UNITS_MAX];
        for k in 0..n {
            let old = self.mapping.l2p.at((base + k) as usize);
            if old != UNMAPPED {
                mapped |= 1 << k;
                old_slots[k as usize] = old;
            }
        }
        let decision = unit_update(n, written, mapped);
        let mut ready_ns = ready_ns;
        if decision.read != 0 {
            ready_ns = self.read_unit_rest(&old_slots, decision, ready_ns)?;
        }
        for k in 0..self.slots_per_page {
            let lpn = base + k;
            let bit = 1u32 << k;
            if k >= n || decision.pad & bit != 0 {
                self.pad_slot(stream, ready_ns);
            } else if written & bit != 0 {
                self.map(lpn, slot + k, 1);
                self.put_slots(
                    stream,
                    lpn,
                    1,
                    0..1,
                    data[k as usize],
                    NO_SOURCE,
                    ready_ns,
                    Cause::Host,
                );
            } else {
                let old = old_slots[k as usize];
                self.map(lpn, slot + k, 1);
                self.put_slots(stream, lpn, 1, 0..1, None, old, ready_ns, Cause::Rmw);
            }
        }
        Ok(self.program_buffer(stream)?.end_ns)
    }

    /// Reads the sub-units `decision.read` of a unit from the page holding them (one read
    /// of their span); returns when they are in the controller.
    fn read_unit_rest(
        &mut self,
        old_slots: &[u32],
        decision: UnitUpdate,
        ready_ns: Nanos,
    ) -> Result<Nanos, FtlError> {
        let first = decision.read.trailing_zeros() as usize;
        let page = self.page_of_slot(old_slots[first]);
        debug_assert!(
            self.nand.oob(page).is_some(),
            "with a page-sized unit no data page waits in a buffer"
        );
        let (from, to) = decision.read_span;
        let outcome = self.nand.read(page, from..to, None, ready_ns)?;
        self.counters.rmw_reads += 1;
        if outcome.retried {
            self.queue_retirement(self.nand.block_of_page(page));
        }
        Ok(outcome.timing.end_ns)
    }

    /// GC or wear levelling moves the live sub-units `live` (slot, logical page) of one
    /// unit's page, read by `ready_ns`, to a fresh page of `stream`: the unit moves as a
    /// page, at the same offsets, with padding where nothing lives.
    pub(crate) fn relocate_unit(
        &mut self,
        live: &[(u32, u32)],
        stream: usize,
        cause: Cause,
        ready_ns: Nanos,
    ) -> Result<(), FtlError> {
        let slot = self.reserve_fragment(stream, self.slots_per_page, false, ready_ns)?;
        debug_assert!(
            slot.is_multiple_of(self.slots_per_page),
            "a unit starts a page"
        );
        let mut next = live.iter().peekable();
        for k in 0..self.slots_per_page {
            match next.peek() {
                Some(&&(old, lpn)) if self.slot_in_page(old) == k => {
                    debug_assert_eq!(lpn % self.unit_lpns, k, "placement rule");
                    next.next();
                    self.map(lpn, slot + k, 1);
                    self.put_slots(stream, lpn, 1, 0..1, None, old, ready_ns, cause);
                }
                _ => self.pad_slot(stream, ready_ns),
            }
        }
        debug_assert!(next.next().is_none(), "one unit per page");
        self.program_buffer(stream)?;
        Ok(())
    }

    /// After a recovery scan: a unit whose sub-units came back from different pages keeps
    /// those of its newest page; the others were trimmed before the cut (module doc), so
    /// they are unmapped and their trims logged again. Returns whether any was.
    pub(crate) fn repair_split_units(&mut self) -> bool {
        if !self.maps_units() {
            return false;
        }
        let n = self.unit_lpns;
        let mut repaired = false;
        let mut base = 0u32;
        while (base as u64) < self.user_lbas {
            let count = self.sub_units(base);
            let mut pages = [u32::MAX; SUB_UNITS_MAX];
            let mut newest: Option<(u64, u32)> = None;
            let mut split = false;
            for k in 0..count {
                let slot = self.mapping.l2p.at((base + k) as usize);
                if slot == UNMAPPED {
                    continue;
                }
                let page = self.page_of_slot(slot);
                pages[k as usize] = page;
                let seq = self.nand.oob(page).map_or(0, |o| o.seq);
                split |= newest.is_some_and(|(_, p)| p != page);
                if newest.is_none_or(|(s, _)| seq > s) {
                    newest = Some((seq, page));
                }
            }
            if let (true, Some((_, keep))) = (split, newest) {
                for k in 0..count {
                    let page = pages[k as usize];
                    if page != u32::MAX && page != keep {
                        self.mapping.l2p.set((base + k) as usize, UNMAPPED);
                        self.pending_trims.push(base + k);
                        repaired = true;
                    }
                }
            }
            base += n;
        }
        repaired
    }

    /// The placement rule (module doc), for `check_invariants`.
    pub(crate) fn check_unit_placement(&self) -> Result<(), String> {
        if !self.maps_units() {
            return Ok(());
        }
        let n = self.unit_lpns;
        let mut page_of_unit: Option<(u32, u32)> = None;
        for (lpn, slot) in self.mapping.l2p.iter().enumerate() {
            if slot == UNMAPPED {
                continue;
            }
            let lpn = lpn as u32;
            if self.slot_in_page(slot) != lpn % n {
                return Err(format!(
                    "lpn {lpn} in slot {} of its page, not {}",
                    self.slot_in_page(slot),
                    lpn % n
                ));
            }
            let (unit, page) = (lpn / n, self.page_of_slot(slot));
            if let Some((u, p)) = page_of_unit {
                if u == unit && p != page {
                    return Err(format!("unit {unit} split over pages {p} and {page}"));
                }
            }
            page_of_unit = Some((unit, page));
        }
        Ok(())
    }
}

impl Ftl {
    /// The destage of a write-buffer group with a page-sized unit: the group's logical
    /// pages of one unit go to flash together (one page, one read of the rest if any).
    pub(crate) fn destage_units(
        &mut self,
        stream: usize,
        entries: &[(u32, Option<&[u8]>, Nanos)],
        ready_ns: Nanos,
    ) -> Result<Nanos, FtlError> {
        let n = self.unit_lpns;
        // Units in the order of their first entry; within one, later entries win (the
        // buffer holds one version per LBA, so there are none).
        let mut units: Vec<u32> = Vec::new();
        for &(lpn, _, _) in entries {
            let base = lpn / n * n;
            if !units.contains(&base) {
                units.push(base);
            }
        }
        let mut done_ns = ready_ns;
        for base in units {
            let mut data: [Option<&[u8]>; SUB_UNITS_MAX] = [None; SUB_UNITS_MAX];
            let mut written = 0u32;
            let mut unit_ready_ns = ready_ns;
            for &(lpn, bytes, buffered_ns) in entries.iter().filter(|e| e.0 / n * n == base) {
                let k = lpn - base;
                written |= 1 << k;
                data[k as usize] = bytes;
                unit_ready_ns = unit_ready_ns.max(buffered_ns);
            }
            // The unit's one mapping entry changes now, not at acknowledgement.
            let unit_ready_ns = self.cmt_access(base, 1, true, unit_ready_ns)?;
            let end_ns = self.write_unit(stream, base, written, &data, unit_ready_ns)?;
            done_ns = done_ns.max(end_ns);
        }
        Ok(done_ns)
    }
}

impl Ftl {
    /// Fills the stream buffer's next slot with padding (no logical page): the sub-units
    /// of a unit's page that hold nothing.
    pub(crate) fn pad_slot(&mut self, stream: usize, ready_ns: Nanos) {
        let stores = self.nand.stores_contents();
        let sb = self.slot_bytes as usize;
        let s = &mut self.streams[stream];
        let at = s.filled as usize;
        s.lpns[at] = NO_LPN;
        s.sources[at] = NO_SOURCE;
        s.ready_ns = s.ready_ns.max(ready_ns);
        if stores {
            s.data[at * sb..(at + 1) * sb].fill(0);
        }
        s.filled += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partial_update_reads_only_the_mapped_rest() {
        // 8 KiB unit, write the first half, the second mapped: read it, program both.
        let u = unit_update(2, 0b01, 0b11);
        assert_eq!(
            (u.read, u.program, u.pad, u.read_span),
            (0b10, 0b11, 0, (1, 2))
        );
        // The other half never written: nothing read, padded.
        let u = unit_update(2, 0b01, 0b01);
        assert_eq!(
            (u.read, u.program, u.pad, u.read_span),
            (0, 0b01, 0b10, (0, 0))
        );
        // A whole unit written: nothing read, nothing padded.
        let u = unit_update(2, 0b11, 0b11);
        assert_eq!((u.read, u.program, u.pad), (0, 0b11, 0));
        // 16 KiB unit, sub-unit 1 written, 0 and 3 mapped: one read of 0..4, 2 padded.
        let u = unit_update(4, 0b0010, 0b1001);
        assert_eq!(
            (u.read, u.program, u.pad, u.read_span),
            (0b1001, 0b1011, 0b0100, (0, 4))
        );
        // Bits beyond the unit are ignored.
        assert_eq!(unit_update(2, 0b101, 0b110), unit_update(2, 0b01, 0b10));
    }
}
