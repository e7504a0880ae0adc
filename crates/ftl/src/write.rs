//! Write frontiers, the controller's page buffers, and the host request paths.

use flashstack_block::{Completion, Hints, Payload, LBA_SIZE};
use flashstack_nand::{
    oob_flags, FlashMedium, NandError, OpTiming, PageOob, NO_LPN, NO_SOURCE, SLOT_SIZE,
};
use flashstack_sim::Nanos;

use crate::{policy, BlockState, Cause, Ftl, FtlError, UNMAPPED};

const NO_PAGE: u32 = u32::MAX;
/// Attempts at programming one page before a write is given up as failed.
const PROGRAM_ATTEMPTS_MAX: u32 = 16;

/// A frontier's open block on one die.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Frontier {
    pub block: u32,
    pub next_page: u32,
}

/// A write frontier: its open block per die, and the page buffer filling towards the next
/// page it will program. Slots in the buffer are already mapped to their target page.
#[derive(Debug)]
pub(crate) struct Stream {
    /// GC and metadata streams stay on one die; host streams rotate over dies.
    pub pinned_die: Option<u32>,
    pub relocation: bool,
    pub active: Vec<Option<Frontier>>,
    pub target_page: u32,
    pub lpns: [u32; 4],
    /// Per slot, the physical slot a relocation copies from (`NO_SOURCE` for host data).
    pub sources: [u32; 4],
    pub causes: [Cause; 4],
    pub filled: u32,
    pub ready_ns: Nanos,
    pub data: Box<[u8]>,
}

impl Stream {
    fn new(pinned_die: Option<u32>, relocation: bool, dies: u32, page_size: u32) -> Self {
        Stream {
            pinned_die,
            relocation,
            active: vec![None; dies as usize],
            target_page: NO_PAGE,
            lpns: [NO_LPN; 4],
            sources: [NO_SOURCE; 4],
            causes: [Cause::Host; 4],
            filled: 0,
            ready_ns: 0,
            data: vec![0; page_size as usize].into_boxed_slice(),
        }
    }

    fn clear_buffer(&mut self) {
        self.target_page = NO_PAGE;
        self.lpns = [NO_LPN; 4];
        self.sources = [NO_SOURCE; 4];
        self.filled = 0;
        self.ready_ns = 0;
    }
}

/// Host streams first, then one relocation (GC/WL) stream per die, then the metadata stream.
pub(crate) fn build_streams(host_streams: u32, dies: u32, page_size: u32) -> Vec<Stream> {
    let mut streams: Vec<Stream> = (0..host_streams)
        .map(|_| Stream::new(None, false, dies, page_size))
        .collect();
    streams.extend((0..dies).map(|d| Stream::new(Some(d), true, dies, page_size)));
    streams.push(Stream::new(None, false, dies, page_size));
    streams
}

impl Ftl {
    pub(crate) fn gc_stream(&self, die: u32) -> usize {
        (self.host_streams + die) as usize
    }

    fn meta_stream(&self) -> usize {
        self.streams.len() - 1
    }

    pub(crate) fn host_write(
        &mut self,
        arrival_ns: Nanos,
        lba: u64,
        payload: Payload<'_>,
        hints: Hints,
    ) -> Result<Completion, FtlError> {
        let count = payload.lba_count();
        let (queue_slot, start_ns) = self.queue.admit(arrival_ns);
        let (_, accepted_ns) = self
            .controller
            .reserve(start_ns, self.config.host.controller_overhead_ns);
        let stream =
            policy::stream_for(self.config.ftl.streams, self.config.ftl.streams_max, &hints)
                as usize;
        let mut complete_ns = accepted_ns;
        for i in 0..count as u64 {
            let (_, ready_ns) = self
                .host_link
                .reserve(accepted_ns, self.config.host.link_ns_per_4k);
            let data = match payload {
                Payload::Bytes(bytes) => {
                    Some(&bytes[i as usize * LBA_SIZE..(i as usize + 1) * LBA_SIZE])
                }
                Payload::Unstored { .. } => None,
            };
            let done = self.write_lpn(stream, (lba + i) as u32, data, ready_ns, Cause::Host)?;
            complete_ns = complete_ns.max(ready_ns).max(done);
        }
        self.counters.host_write_requests += 1;
        self.counters.host_write_lbas += count as u64;
        self.queue.complete(queue_slot, complete_ns);
        Ok(Completion {
            start_ns,
            complete_ns,
        })
    }

    /// Maps `lpn` to the next slot of `stream` and fills it; returns when it is durable
    /// or, if it waits in the buffer, when it was accepted.
    fn write_lpn(
        &mut self,
        stream: usize,
        lpn: u32,
        data: Option<&[u8]>,
        ready_ns: Nanos,
        cause: Cause,
    ) -> Result<Nanos, FtlError> {
        // Reserve first: allocation may run GC, which may move this very logical page.
        let slot = self.reserve_slot(stream, cause == Cause::Host, ready_ns)?;
        self.unmap(lpn);
        self.l2p[lpn as usize] = slot;
        self.blocks.add_valid(self.block_of_slot(slot));
        let programmed = self.fill_slot(stream, lpn, data, NO_SOURCE, ready_ns, cause)?;
        Ok(programmed.map_or(ready_ns, |t| t.end_ns))
    }

    /// Removes the current mapping of `lpn`, if any.
    pub(crate) fn unmap(&mut self, lpn: u32) {
        let old = std::mem::replace(&mut self.l2p[lpn as usize], UNMAPPED);
        if old != UNMAPPED {
            self.blocks.remove_valid(self.block_of_slot(old));
        }
    }

    /// The physical slot the next write to `stream` will occupy, allocating a page (and, for
    /// host streams, running foreground GC) when the buffer has no target yet.
    pub(crate) fn reserve_slot(
        &mut self,
        stream: usize,
        allow_gc: bool,
        now_ns: Nanos,
    ) -> Result<u32, FtlError> {
        if self.streams[stream].target_page == NO_PAGE {
            let page = self.allocate_page(stream, allow_gc, now_ns)?;
            self.streams[stream].target_page = page;
        }
        let s = &self.streams[stream];
        Ok(s.target_page * self.slots_per_page + s.filled)
    }

    /// Puts `lpn` into the stream's next buffer slot, its bytes either `data` or, for a
    /// relocation, those of physical slot `source`. Programs the page when it is full.
    pub(crate) fn fill_slot(
        &mut self,
        stream: usize,
        lpn: u32,
        data: Option<&[u8]>,
        source: u32,
        ready_ns: Nanos,
        cause: Cause,
    ) -> Result<Option<OpTiming>, FtlError> {
        let s = &mut self.streams[stream];
        let index = s.filled as usize;
        s.lpns[index] = lpn;
        s.sources[index] = source;
        s.causes[index] = cause;
        s.ready_ns = s.ready_ns.max(ready_ns);
        if self.slots_per_page == 1 {
            // A one-slot page is programmed at once, straight from the caller's bytes.
            s.filled = 1;
            if data.is_none() && source == NO_SOURCE && self.nand.stores_contents() {
                s.data.fill(0);
            }
            return self.program_buffer_from(stream, data).map(Some);
        }
        if self.nand.stores_contents() && source == NO_SOURCE {
            let range = index * SLOT_SIZE as usize..(index + 1) * SLOT_SIZE as usize;
            match data {
                Some(bytes) => s.data[range].copy_from_slice(bytes),
                None => s.data[range].fill(0),
            }
        }
        s.filled += 1;
        if s.filled == self.slots_per_page {
            return self.program_buffer(stream).map(Some);
        }
        Ok(None)
    }

    /// Picks the die and page for a stream's next page.
    fn allocate_page(
        &mut self,
        stream: usize,
        allow_gc: bool,
        now_ns: Nanos,
    ) -> Result<u32, FtlError> {
        let die = match self.streams[stream].pinned_die {
            Some(d) => d,
            None => {
                let d = self.next_host_die;
                self.next_host_die = (d + 1) % self.units;
                d
            }
        };
        let frontier = match self.streams[stream].active[die as usize] {
            Some(f) if f.next_page < self.pages_per_block => f,
            _ => {
                if allow_gc {
                    self.foreground_gc(die, now_ns)?;
                }
                let block = self.blocks.pop_free(die).ok_or_else(|| {
                    FtlError::NoSpace(format!(
                        "unit {die} has no free block left for stream {stream} \
                         (free per unit: {:?})",
                        (0..self.units)
                            .map(|u| self.blocks.free_count(u))
                            .collect::<Vec<_>>()
                    ))
                })?;
                Frontier {
                    block,
                    next_page: 0,
                }
            }
        };
        let page = self.nand.first_page(frontier.block) + frontier.next_page;
        self.streams[stream].active[die as usize] = Some(Frontier {
            block: frontier.block,
            next_page: frontier.next_page + 1,
        });
        Ok(page)
    }

    /// Programs a stream's buffer to its target page, padding empty slots and slots whose
    /// data was superseded while waiting. Retries elsewhere if the program fails.
    pub(crate) fn program_buffer(&mut self, stream: usize) -> Result<OpTiming, FtlError> {
        self.program_buffer_from(stream, None)
    }

    /// `program_buffer` with the page bytes taken from `direct` instead of the buffer.
    fn program_buffer_from(
        &mut self,
        stream: usize,
        direct: Option<&[u8]>,
    ) -> Result<OpTiming, FtlError> {
        assert!(self.streams[stream].filled > 0);
        let mut attempts = 0;
        loop {
            let page = self.streams[stream].target_page;
            let mut lpns = [NO_LPN; 4];
            let spp = self.slots_per_page as usize;
            for (i, lpn) in lpns.iter_mut().enumerate().take(spp) {
                let candidate = self.streams[stream].lpns[i];
                let live = candidate != NO_LPN
                    && self.l2p[candidate as usize] == page * self.slots_per_page + i as u32;
                if live {
                    *lpn = candidate;
                }
            }
            let s = &self.streams[stream];
            let flags = if s.relocation {
                oob_flags::RELOCATED
            } else {
                0
            };
            let oob = PageOob {
                lpns: &lpns[..spp],
                seq: self.seq,
                flags,
            };
            let data = match direct {
                Some(bytes) => Some(bytes),
                None => self.nand.stores_contents().then_some(&s.data[..]),
            };
            let ready_ns = s.ready_ns;
            let sources = s.sources;
            match self
                .nand
                .program_relocating(page, oob, data, &sources, ready_ns)
            {
                Ok(timing) => {
                    self.seq += 1;
                    self.after_program(stream, page, &lpns[..spp], timing);
                    return Ok(timing);
                }
                Err(NandError::ProgramFailed { block }) => {
                    self.seq += 1;
                    attempts += 1;
                    self.counters.program_failures += 1;
                    self.counters.page_programs += 1;
                    self.counters.program_slots_padding += spp as u64;
                    if attempts >= PROGRAM_ATTEMPTS_MAX {
                        return Err(FtlError::NoSpace("repeated program failures".into()));
                    }
                    self.retire_frontier(stream, block);
                    self.retarget_buffer(stream, page, ready_ns)?;
                }
                Err(e) => {
                    // A torn program still consumed the page.
                    self.seq += 1;
                    self.counters.page_programs += 1;
                    self.counters.program_slots_padding += spp as u64;
                    return Err(e.into());
                }
            }
        }
    }

    fn after_program(&mut self, stream: usize, page: u32, lpns: &[u32], timing: OpTiming) {
        self.counters.page_programs += 1;
        let causes = self.streams[stream].causes;
        for (i, &lpn) in lpns.iter().enumerate() {
            if lpn == NO_LPN {
                self.counters.program_slots_padding += 1;
                continue;
            }
            if let Some(copies) = self.copies.as_mut() {
                copies[lpn as usize] += 1;
            }
            match causes[i] {
                Cause::Host => self.counters.program_slots_host += 1,
                Cause::Gc => self.counters.program_slots_gc += 1,
                Cause::WearLevel => self.counters.program_slots_wl += 1,
            }
        }
        self.note_programmed(page, timing.end_ns);
        self.streams[stream].clear_buffer();
    }

    /// Seals a block once its last page is programmed.
    fn note_programmed(&mut self, page: u32, end_ns: Nanos) {
        let block = self.nand.block_of_page(page);
        self.blocks.last_write_ns[block as usize] = end_ns;
        let last = page % self.pages_per_block == self.pages_per_block - 1;
        if last && self.blocks.state[block as usize] == BlockState::Open {
            self.blocks.set_state(block, BlockState::Sealed);
        }
    }

    /// A program failed in `block`: stop writing there and queue it for retirement.
    fn retire_frontier(&mut self, stream: usize, block: u32) {
        let die = self.nand.unit_of_block(block) as usize;
        if matches!(self.streams[stream].active[die], Some(f) if f.block == block) {
            self.streams[stream].active[die] = None;
        }
        self.blocks.set_state(block, BlockState::Retiring);
        self.retire_queue.push(block);
    }

    /// Moves a buffer that failed to program at `old_page` to a fresh page, remapping its
    /// live slots.
    fn retarget_buffer(
        &mut self,
        stream: usize,
        old_page: u32,
        now_ns: Nanos,
    ) -> Result<(), FtlError> {
        let page = self.allocate_page(stream, false, now_ns)?;
        self.streams[stream].target_page = page;
        for i in 0..self.streams[stream].filled {
            let lpn = self.streams[stream].lpns[i as usize];
            let old_slot = old_page * self.slots_per_page + i;
            if lpn != NO_LPN && self.l2p[lpn as usize] == old_slot {
                let new_slot = page * self.slots_per_page + i;
                self.blocks.remove_valid(self.block_of_slot(old_slot));
                self.l2p[lpn as usize] = new_slot;
                self.blocks.add_valid(self.block_of_slot(new_slot));
            }
        }
        Ok(())
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
        let mut data_ready_ns = accepted_ns;
        let mut i = 0;
        while i < count {
            let lpn = lba as u32 + i;
            let run = self.mapped_run(lpn, count - i);
            let bytes = out
                .as_deref_mut()
                .map(|o| &mut o[i as usize * LBA_SIZE..(i + run) as usize * LBA_SIZE]);
            let done = self.read_run(lpn, run, bytes, accepted_ns)?;
            data_ready_ns = data_ready_ns.max(done);
            i += run;
        }
        // The host link moves the data once it is in the controller.
        let (_, complete_ns) = self.host_link.reserve(
            data_ready_ns,
            self.config.host.link_ns_per_4k * count as u64,
        );
        self.counters.host_read_requests += 1;
        self.counters.host_read_lbas += count as u64;
        self.queue.complete(queue_slot, complete_ns);
        Ok(Completion {
            start_ns,
            complete_ns,
        })
    }

    /// Length of the run starting at `lpn` that one flash read can serve: consecutive slots
    /// of one page (or a single unmapped LBA).
    fn mapped_run(&self, lpn: u32, remaining: u32) -> u32 {
        let first = self.l2p[lpn as usize];
        if first == UNMAPPED {
            return 1;
        }
        let mut run = 1;
        while run < remaining {
            let next = self.l2p[(lpn + run) as usize];
            if next != first + run || self.page_of_slot(next) != self.page_of_slot(first) {
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
        let slot = self.l2p[lpn as usize];
        if slot == UNMAPPED {
            self.counters.unmapped_read_lbas += 1;
            if let Some(o) = out {
                o.fill(0);
            }
            return Ok(ready_ns);
        }
        let page = self.page_of_slot(slot);
        let first = slot % self.slots_per_page;
        if self.nand.oob(page).is_none() {
            // Still in a controller buffer.
            self.counters.buffer_read_hits += run as u64;
            if let Some(o) = out {
                let s = self
                    .streams
                    .iter()
                    .find(|s| s.target_page == page)
                    .expect("buffered");
                for i in 0..run as usize {
                    let slot = first as usize + i;
                    let to = &mut o[i * SLOT_SIZE as usize..(i + 1) * SLOT_SIZE as usize];
                    match s.sources[slot] {
                        NO_SOURCE => to.copy_from_slice(
                            &s.data[slot * SLOT_SIZE as usize..(slot + 1) * SLOT_SIZE as usize],
                        ),
                        source => self.nand.peek_slot(source, to),
                    }
                }
            }
            return Ok(ready_ns);
        }
        let outcome = self.nand.read(page, first..first + run, out, ready_ns)?;
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
        for lpn in lba as u32..lba as u32 + count {
            if self.l2p[lpn as usize] == UNMAPPED {
                continue;
            }
            self.unmap(lpn);
            self.pending_trims.push(lpn);
            if self.pending_trims.len() >= self.trim_entries_per_page() {
                complete_ns = complete_ns.max(self.write_trim_records(complete_ns)?);
            }
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

    /// Programs every partial buffer and logs pending trims. Returns when all of it is done.
    pub(crate) fn make_durable(&mut self, now_ns: Nanos) -> Result<Nanos, FtlError> {
        let mut done_ns = now_ns;
        for stream in 0..self.streams.len() {
            if self.streams[stream].filled > 0 {
                self.streams[stream].ready_ns = self.streams[stream].ready_ns.max(now_ns);
                done_ns = done_ns.max(self.program_buffer(stream)?.end_ns);
            }
        }
        if !self.pending_trims.is_empty() {
            done_ns = done_ns.max(self.write_trim_records(now_ns)?);
        }
        Ok(done_ns)
    }

    pub(crate) fn trim_entries_per_page(&self) -> usize {
        self.config.nand.geometry.page_size_bytes as usize / 4
    }

    /// Writes pending trims as trim-record pages. Entries whose logical page was written
    /// again meanwhile are dropped: the newer data must win.
    pub(crate) fn write_trim_records(&mut self, now_ns: Nanos) -> Result<Nanos, FtlError> {
        let mut entries = std::mem::take(&mut self.pending_trims);
        entries.retain(|&lpn| self.l2p[lpn as usize] == UNMAPPED);
        entries.sort_unstable();
        entries.dedup();
        let mut done_ns = now_ns;
        for chunk in entries.chunks(self.trim_entries_per_page()) {
            done_ns = done_ns.max(self.program_trim_page(chunk, now_ns)?);
        }
        Ok(done_ns)
    }

    /// Trim records go to an open metadata block with room, else to the unit with the most
    /// free blocks, so logging never takes the last free block of a busy unit.
    fn meta_unit(&self) -> u32 {
        let meta = &self.streams[self.meta_stream()];
        let open = (0..self.units).find(
            |&u| matches!(meta.active[u as usize], Some(f) if f.next_page < self.pages_per_block),
        );
        open.unwrap_or_else(|| {
            (0..self.units)
                .max_by_key(|&u| (self.blocks.free_count(u), std::cmp::Reverse(u)))
                .expect("at least one unit")
        })
    }

    fn program_trim_page(&mut self, entries: &[u32], now_ns: Nanos) -> Result<Nanos, FtlError> {
        let stream = self.meta_stream();
        let lpns = [NO_LPN; 4];
        for _ in 0..PROGRAM_ATTEMPTS_MAX {
            let unit = self.meta_unit();
            self.streams[stream].pinned_die = Some(unit);
            let page = self.allocate_page(stream, false, now_ns)?;
            let oob = PageOob {
                lpns: &lpns[..self.slots_per_page as usize],
                seq: self.seq,
                flags: oob_flags::TRIM_RECORD,
            };
            self.seq += 1;
            self.counters.page_programs += 1;
            self.counters.program_slots_meta += self.slots_per_page as u64;
            match self.nand.program(page, oob, None, now_ns) {
                Ok(timing) => {
                    self.counters.trim_record_pages += 1;
                    self.trim_log.insert(page, entries.into());
                    self.note_programmed(page, timing.end_ns);
                    return Ok(timing.end_ns);
                }
                Err(NandError::ProgramFailed { block }) => {
                    self.counters.program_failures += 1;
                    self.retire_frontier(stream, block);
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(FtlError::NoSpace("repeated program failures".into()))
    }
}
