//! Write frontiers, the controller's page buffers, and the host request paths.

use flashstack_block::{Completion, Hints, Payload, LBA_SIZE};
use flashstack_nand::{oob_flags, FlashMedium, NO_SOURCE};
use flashstack_sim::Nanos;

use crate::host::QueueSlot;
use crate::{policy, BlockState, Cause, Ftl, FtlError, DEAD_FRAGMENTS_MAX, UNMAPPED};

/// A host write as the controller accepted it ([`Ftl::accept_write`]).
pub(crate) struct Accepted {
    pub queue_slot: QueueSlot,
    pub start_ns: Nanos,
    pub accepted_ns: Nanos,
    pub stream: u32,
}

impl Ftl {
    /// A host write enters: its queue slot, when it started (after queueing), when the
    /// controller accepted it (after the command overhead) and the stream its hints choose.
    pub(crate) fn accept_write(&mut self, arrival_ns: Nanos, hints: &Hints) -> Accepted {
        let (queue_slot, start_ns) = self.queue.admit(arrival_ns);
        let (_, accepted_ns) = self
            .controller
            .reserve(start_ns, self.config.host.controller_overhead_ns);
        let stream =
            policy::stream_for(self.config.ftl.streams, self.config.ftl.streams_max, hints);
        Accepted {
            queue_slot,
            start_ns,
            accepted_ns,
            stream,
        }
    }

    pub(crate) fn host_write(
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
        let stream = stream as usize;
        let mut complete_ns = accepted_ns;
        // The mapping entries must be in SRAM before the old copies can be invalidated.
        let mapped_ns = self.cmt_access(lba as u32, count, true, accepted_ns)?;
        for i in 0..count as u64 {
            let (_, ready_ns) = self
                .host_link
                .reserve(accepted_ns, self.config.host.link_ns_per_4k);
            let ready_ns = ready_ns.max(mapped_ns);
            let data = match payload {
                Payload::Bytes(bytes) => {
                    Some(&bytes[i as usize * LBA_SIZE..(i as usize + 1) * LBA_SIZE])
                }
                Payload::Unstored { .. } => None,
            };
            let lpn = (lba + i) as u32;
            let done = match data {
                Some(page) if self.compression_active() => self.write_compressible(
                    lpn,
                    page,
                    count as u64,
                    hints.compress_on_device,
                    ready_ns,
                )?,
                _ => {
                    self.admit_physical(lpn, self.slots_per_lpn)?;
                    self.write_lpn(stream, lpn, data, ready_ns, Cause::Host)?
                }
            };
            complete_ns = complete_ns.max(ready_ns).max(done);
        }
        if hints.fua {
            // Force unit access: the page buffers holding this request go to flash now.
            complete_ns = complete_ns.max(self.make_durable(complete_ns)?);
        }
        Ok(self.finish_write(queue_slot, start_ns, complete_ns, count))
    }

    /// A host write ends: it is counted and its queue slot is freed at `complete_ns`
    /// (shared by the direct, mapping-unit and buffered write paths).
    pub(crate) fn finish_write(
        &mut self,
        queue_slot: QueueSlot,
        start_ns: Nanos,
        complete_ns: Nanos,
        count: u32,
    ) -> Completion {
        self.counters.host_write_requests += 1;
        self.counters.host_write_lbas += count as u64;
        self.queue.complete(queue_slot, complete_ns);
        Completion {
            start_ns,
            complete_ns,
        }
    }

    /// Maps `lpn` to the next slot of `stream` and fills it; returns when it is durable
    /// or, if it waits in the buffer, when it was accepted.
    pub(crate) fn write_lpn(
        &mut self,
        stream: usize,
        lpn: u32,
        data: Option<&[u8]>,
        ready_ns: Nanos,
        cause: Cause,
    ) -> Result<Nanos, FtlError> {
        // Reserve first: allocation may run GC, which may move this very logical page.
        let len = self.slots_per_lpn;
        let slot = self.reserve_fragment(stream, len, cause == Cause::Host, ready_ns)?;
        self.map(lpn, slot, len);
        if cause == Cause::Host && data.is_some() {
            self.announce_host_content(lpn, slot, len);
        }
        let zero_page = data.is_none() && self.nand.stores_contents();
        if self.slots_per_page == 1
            && !zero_page
            && self.nand.is_infallible()
            && !self.stages(stream)
        {
            return Ok(self.program_single_slot_page(stream, lpn, data, ready_ns, cause));
        }
        let programmed = self.fill_fragment(stream, lpn, len, data, NO_SOURCE, ready_ns, cause)?;
        Ok(programmed.map_or(ready_ns, |t| t.end_ns))
    }

    /// `fill_single_slot_page` for `lpn`, just mapped to the stream's reserved page, on
    /// flash that cannot fail: no buffering, no retry, one program in the NAND model. Same
    /// steps, same results. Returns when the page is durable.
    fn program_single_slot_page(
        &mut self,
        stream: usize,
        lpn: u32,
        data: Option<&[u8]>,
        ready_ns: Nanos,
        cause: Cause,
    ) -> Nanos {
        let s = &mut self.streams[stream];
        assert_eq!(s.filled, 0);
        let page = std::mem::replace(&mut s.target_page, crate::stream::NO_PAGE);
        debug_assert_eq!(self.mapping.l2p.at(lpn as usize), page);
        let flags = if s.relocation {
            oob_flags::RELOCATED
        } else {
            0
        };
        let seq = self.seq;
        self.seq += 1;
        let timing = self
            .nand
            .program_page(page, lpn, seq, flags, data, ready_ns);
        self.counters.page_programs += 1;
        self.counters.add_data_slots(cause, 1);
        if let Some(copies) = self.copies.as_mut() {
            copies[lpn as usize] += 1;
        }
        self.note_programmed(page, timing.end_ns);
        timing.end_ns
    }

    /// Removes the current mapping of `lpn`, if any; its slot dies with its last
    /// reference.
    pub(crate) fn unmap(&mut self, lpn: u32) {
        if let Some(old) = self.mapping.release(lpn) {
            if old.last {
                self.blocks
                    .remove_valid(self.block_of_slot(old.slot), old.len);
                self.note_dead(old.slot, old.len);
            }
        }
    }

    /// Remembers a superseded fragment on flash: once whatever superseded it is durable
    /// (the next [`Ftl::make_durable`]), no recovery can ever map it again, so its stored
    /// bytes are dropped ([`Ftl::forget_dead_bytes`]). Memory only; no result changes.
    /// A fragment still in a page buffer has no bytes on flash yet (it is programmed as
    /// padding); past the bound the bytes simply stay until the block is erased.
    fn note_dead(&mut self, slot: u32, len: u32) {
        if !self.nand.stores_contents() || self.dead_fragments.len() >= DEAD_FRAGMENTS_MAX {
            return;
        }
        if let Some(oob) = self.nand.oob(self.page_of_slot(slot)) {
            self.dead_fragments.push((slot, len, oob.seq));
        }
    }

    /// Drops the bytes of the fragments superseded before the state just made durable;
    /// a page erased and programmed again since (a higher sequence number) is left alone.
    fn forget_dead_bytes(&mut self) {
        for (slot, len, seq) in std::mem::take(&mut self.dead_fragments) {
            let same_program = self
                .nand
                .oob(self.page_of_slot(slot))
                .is_some_and(|o| o.seq == seq);
            if same_program {
                self.nand.forget_bytes(slot, len);
            }
        }
    }

    /// Maps `lpn` to the `len`-slot fragment at `slot`, dropping its old mapping.
    pub(crate) fn map(&mut self, lpn: u32, slot: u32, len: u32) {
        self.unmap(lpn);
        self.mapping.bind_owner(lpn, slot, len);
        self.blocks.add_valid(self.block_of_slot(slot), len);
    }

    pub(crate) fn host_read(
        &mut self,
        arrival_ns: Nanos,
        lba: u64,
        count: u32,
        mut out: Option<&mut [u8]>,
    ) -> Result<Completion, FtlError> {
        let (queue_slot, start_ns) = self.queue.admit(arrival_ns);
        let (_, accepted_ns) = self
            .controller
            .reserve(start_ns, self.config.host.controller_overhead_ns);
        // UFS HPB: a read carrying valid host entries needs no lookup (`hpb.rs`).
        let hpb = self.hpb_lookup(lba as u32, count);
        let accepted_ns = match hpb {
            crate::HpbLookup::Hit => accepted_ns,
            _ => self.cmt_access(lba as u32, count, false, accepted_ns)?,
        };
        // When each run's data is in the controller, and how many LBAs it holds.
        let mut ready: Vec<(Nanos, u32)> = Vec::new();
        let mut i = 0;
        while i < count {
            let lpn = lba as u32 + i;
            let bytes = out
                .as_deref_mut()
                .map(|o| &mut o[i as usize * LBA_SIZE..(i + 1) as usize * LBA_SIZE]);
            if self.wbuf_read(lpn, accepted_ns, bytes) {
                ready.push((accepted_ns, 1));
                i += 1;
                continue;
            }
            let mut run = self.mapped_run(lpn, count - i);
            if let Some(wb) = self.write_buffer.as_ref() {
                // A run read from flash stops at the next LBA the buffer holds newer.
                if let Some(next) = wb.next_in_dram(lpn + 1, lpn + run, accepted_ns) {
                    run = next - lpn;
                }
            }
            let bytes = out
                .as_deref_mut()
                .map(|o| &mut o[i as usize * LBA_SIZE..(i + run) as usize * LBA_SIZE]);
            let done = self.read_run(lpn, run, bytes, accepted_ns)?;
            ready.push((done, run));
            i += run;
        }
        let complete_ns = self.link_out(accepted_ns, &mut ready);
        self.hpb_respond(lba as u32, count, hpb, complete_ns)?;
        self.counters.host_read_requests += 1;
        self.counters.host_read_lbas += count as u64;
        self.queue.complete(queue_slot, complete_ns);
        Ok(Completion {
            start_ns,
            complete_ns,
        })
    }

    /// The host link moves each run's data as soon as it is in the controller (UFS sends
    /// a read's data in several DATA IN transfers, not after the last page), in the order
    /// the runs become ready; returns when the last byte has crossed.
    fn link_out(&mut self, accepted_ns: Nanos, ready: &mut [(Nanos, u32)]) -> Nanos {
        ready.sort_unstable();
        let mut complete_ns = accepted_ns;
        for &(ready_ns, lbas) in ready.iter() {
            let cost = self.config.host.link_ns_per_4k * lbas as u64;
            complete_ns = complete_ns.max(self.host_link.reserve(ready_ns, cost).1);
        }
        complete_ns
    }

    /// Length of the run starting at `lpn` that one flash read can serve: consecutive slots
    /// of one page (or a single unmapped LBA).
    fn mapped_run(&self, lpn: u32, remaining: u32) -> u32 {
        let first = self.mapping.l2p.at(lpn as usize);
        let stride = self.slots_per_lpn;
        if first == UNMAPPED {
            return 1;
        }
        if self.len_of(lpn) < stride {
            return self.compressed_run(lpn, remaining);
        }
        let mut run = 1;
        while run < remaining {
            let next = self.mapping.l2p.at((lpn + run) as usize);
            let contiguous = next == first + run * stride
                && self.page_of_slot(next) == self.page_of_slot(first)
                && self.len_of(lpn + run) == stride;
            if !contiguous {
                break;
            }
            run += 1;
        }
        run
    }

    fn read_run(
        &mut self,
        lpn: u32,
        run: u32,
        out: Option<&mut [u8]>,
        ready_ns: Nanos,
    ) -> Result<Nanos, FtlError> {
        let slot = self.mapping.l2p.at(lpn as usize);
        if slot == UNMAPPED {
            self.counters.unmapped_read_lbas += 1;
            if let Some(o) = out {
                o.fill(0);
            }
            return Ok(ready_ns);
        }
        if self.len_of(lpn) < self.slots_per_lpn {
            return self.read_compressed_run(lpn, run, out, ready_ns);
        }
        let page = self.page_of_slot(slot);
        let first = self.slot_in_page(slot);
        let slots = run * self.len_of(lpn);
        if self.nand.oob(page).is_none() {
            // Still in a controller buffer.
            self.counters.buffer_read_hits += run as u64;
            if let Some(o) = out {
                let buffered = self.buffered_page(page).expect("buffered");
                let (sources, data) = (buffered.sources, buffered.data);
                let sb = self.slot_bytes as usize;
                for i in 0..slots as usize {
                    let slot = first as usize + i;
                    let to = &mut o[i * sb..(i + 1) * sb];
                    match sources[slot] {
                        NO_SOURCE => to.copy_from_slice(&data[slot * sb..(slot + 1) * sb]),
                        source => self.nand.peek_slot(source, to),
                    }
                }
            }
            return Ok(ready_ns);
        }
        let outcome = self.nand.read(page, first..first + slots, out, ready_ns)?;
        self.counters.page_reads_host += 1;
        if outcome.retried {
            self.queue_retirement(self.nand.block_of_page(page));
        }
        Ok(outcome.timing.end_ns)
    }

    pub(crate) fn queue_retirement(&mut self, block: u32) {
        if self.blocks.state[block as usize] == BlockState::Sealed {
            self.blocks.set_state(block, BlockState::Retiring);
            self.retire_queue.push(block);
        }
    }

    pub(crate) fn host_trim(
        &mut self,
        arrival_ns: Nanos,
        lba: u64,
        count: u32,
    ) -> Result<Completion, FtlError> {
        let (queue_slot, start_ns) = self.queue.admit(arrival_ns);
        let (_, mut complete_ns) = self
            .controller
            .reserve(start_ns, self.config.host.controller_overhead_ns);
        if self.copies.is_none() {
            self.build_copies();
        }
        self.wbuf_discard(lba, count);
        let mut trimmed = self.mapping_cache.is_some().then(Vec::new);
        let end = lba as usize + count as usize;
        let mut from = lba as usize;
        // Each mapped page in order, the next one looked up only after the previous one's
        // work (which may move others) is done.
        while let Some(next) = self.mapping.l2p.next_set(from..end) {
            from = next + 1;
            let lpn = next as u32;
            if let Some(t) = trimmed.as_mut() {
                t.push(lpn);
            }
            self.unmap(lpn);
            self.pending_trims.push(lpn);
            if self.pending_trims.len() >= self.trim_entries_per_page() {
                complete_ns = complete_ns.max(self.write_trim_records(complete_ns)?);
            }
        }
        if let Some(lpns) = trimmed {
            complete_ns = complete_ns.max(self.cmt_update(lpns.into_iter(), complete_ns)?);
        }
        self.counters.host_trim_requests += 1;
        self.counters.host_trim_lbas += count as u64;
        self.queue.complete(queue_slot, complete_ns);
        Ok(Completion {
            start_ns,
            complete_ns,
        })
    }

    pub(crate) fn host_flush(&mut self, arrival_ns: Nanos) -> Result<Completion, FtlError> {
        let (queue_slot, start_ns) = self.queue.admit(arrival_ns);
        let (_, accepted_ns) = self
            .controller
            .reserve(start_ns, self.config.host.controller_overhead_ns);
        // The write buffer first: make_durable then pads what it left in page buffers.
        self.wbuf_destage_all(accepted_ns)?;
        self.make_durable(accepted_ns)?;
        // Everything acknowledged earlier is on flash once the array drains.
        let complete_ns = accepted_ns.max(self.nand.idle_at_ns());
        self.counters.host_flush_requests += 1;
        self.queue.complete(queue_slot, complete_ns);
        Ok(Completion {
            start_ns,
            complete_ns,
        })
    }

    /// Programs every partial buffer, then logs pending trims and binds (after the buffers:
    /// a bind names a slot that must be on flash). Returns when all of it is done.
    pub(crate) fn make_durable(&mut self, now_ns: Nanos) -> Result<Nanos, FtlError> {
        let mut done_ns = now_ns;
        for stream in 0..self.streams.len() {
            if self.stages(stream) {
                if let Some(t) = self.program_staged(stream, now_ns)? {
                    done_ns = done_ns.max(t.end_ns);
                }
                continue;
            }
            if self.streams[stream].filled > 0 {
                self.streams[stream].ready_ns = self.streams[stream].ready_ns.max(now_ns);
                done_ns = done_ns.max(self.program_buffer(stream)?.end_ns);
            }
        }
        if !self.pending_trims.is_empty() {
            done_ns = done_ns.max(self.write_trim_records(now_ns)?);
        }
        if !self.pending_binds.is_empty() {
            done_ns = done_ns.max(self.write_bind_records(now_ns)?);
        }
        self.forget_dead_bytes();
        Ok(done_ns)
    }
}
