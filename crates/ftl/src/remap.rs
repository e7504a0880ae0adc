//! REMAP: make ranges of logical pages refer to the flash slots of other ranges, at the
//! cost of one mapping-record page (the contract is on [`flashstack_block::Remap`]).
//!
//! Step by step:
//! 1. Make everything volatile durable (`make_durable`): buffered writes reach flash, so
//!    every source slot is programmed and can be named; pending trims and binds are older
//!    than the remap and are logged first.
//! 2. Read the source range's slots and write one record page holding a bind
//!    `dst + i → slot` per mapped source page and a trim of `dst + i` per unmapped one.
//!    The metadata stream allocates without GC, so the slots read in this step are still
//!    the mapping when the page is programmed. A power cut before the program completes
//!    leaves no record (a torn page is never inserted into the log): the remap did not
//!    happen. Once it completes, recovery applies all of it: atomic.
//! 3. Apply it to the volatile mapping: each `dst + i` drops its old slot (which dies with
//!    its last reference) and becomes an alias of the source slot; `src` keeps its
//!    mapping. No user data is read or programmed.

use flashstack_block::{Completion, RemapExtent};
use flashstack_sim::Nanos;

use crate::records::{RecordKind, RecordPage};
use crate::{Ftl, FtlError, UNMAPPED};

impl Ftl {
    /// Serves a remap whose extents the interface has checked.
    pub(crate) fn host_remap(
        &mut self,
        arrival_ns: Nanos,
        extents: &[RemapExtent],
    ) -> Result<Completion, FtlError> {
        let (queue_slot, start_ns) = self.queue.admit(arrival_ns);
        let (_, accepted_ns) = self
            .controller
            .reserve(start_ns, self.config.host.controller_overhead_ns);
        if self.copies.is_none() {
            self.build_copies();
        }
        // The write buffer first (a remap names slots on flash), then the page buffers.
        let destaged_ns = self.wbuf_destage_all(accepted_ns)?;
        // Destinations change: their destaged bytes still in DRAM are no longer theirs.
        for e in extents {
            self.wbuf_discard(e.dst, e.count);
        }
        let durable_ns = self.make_durable(accepted_ns)?.max(destaged_ns);
        // Every source is read before any destination changes (they are disjoint anyway).
        let targets: Vec<(u32, u32)> = extents
            .iter()
            .flat_map(|e| (0..e.count).map(move |i| (e.src as u32 + i, e.dst as u32 + i)))
            .map(|(src, dst)| (dst, self.mapping.l2p.at(src as usize)))
            .collect();
        let count = targets.len() as u64;
        let page = RecordPage {
            trims: targets
                .iter()
                .filter(|&&(_, slot)| slot == UNMAPPED)
                .map(|&(lpn, _)| lpn)
                .collect(),
            binds: targets
                .iter()
                .filter(|&&(_, slot)| slot != UNMAPPED)
                .copied()
                .collect(),
        };
        let logged_ns = self.program_record_page(page, RecordKind::Remap, durable_ns)?;
        for (lpn, slot) in targets {
            match slot {
                UNMAPPED => self.unmap(lpn),
                _ => self.rebind(lpn, slot),
            }
        }
        let complete_ns = logged_ns.max(self.nand.idle_at_ns());
        self.counters.host_remap_requests += 1;
        self.counters.host_remap_lbas += count;
        self.queue.complete(queue_slot, complete_ns);
        Ok(Completion {
            start_ns,
            complete_ns,
        })
    }

    /// Points `lpn` at the existing `slot` (on flash or in a buffer) besides whatever else
    /// refers to it. The caller makes the new binding durable (a record, now or pending).
    pub(crate) fn rebind(&mut self, lpn: u32, slot: u32) {
        self.hpb_mark(lpn);
        if self.mapping.l2p.at(lpn as usize) == slot {
            return;
        }
        let owner = self
            .slot_owner(slot)
            .expect("a mapped slot names its owner on flash or in a buffer");
        let len = self.slots_per_lpn;
        self.unmap(lpn);
        if self.mapping.bind(lpn, slot, len, owner) {
            self.blocks.add_valid(self.block_of_slot(slot), len);
        }
    }

    /// The logical page a data slot's OOB (or, before its program, its buffer) names.
    pub(crate) fn slot_owner(&self, slot: u32) -> Option<u32> {
        let page = self.page_of_slot(slot);
        let i = self.slot_in_page(slot) as usize;
        match self.nand.oob(page) {
            Some(oob) => oob.lpns.get(i).copied(),
            None => self
                .buffered_page(page)
                .filter(|b| (i as u32) < b.filled)
                .map(|b| b.lpns[i]),
        }
    }

    /// After GC moved the representatives of shared slots, points every other referrer of
    /// each old slot at the representative's new slot, and queues their binds (logged by
    /// the `make_durable` that precedes the victim's erase).
    pub(crate) fn repoint_sharers(&mut self, moved: &[(u32, u32)]) {
        for &(old, rep) in moved {
            let new = self.mapping.l2p.at(rep as usize);
            if new == old || new == UNMAPPED {
                continue;
            }
            self.counters.shared_slots_moved += 1;
            let mut sharers = self.mapping.aliases(old).to_vec();
            let owner = self.slot_owner(old).unwrap_or(crate::UNMAPPED);
            if owner != rep && self.mapping.l2p.get(owner as usize) == Some(old) {
                sharers.push(owner);
            }
            for lpn in sharers {
                self.rebind(lpn, new);
                self.pending_binds.push(lpn);
            }
        }
    }
}
