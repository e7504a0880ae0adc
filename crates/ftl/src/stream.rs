//! Write frontiers and the controller's page buffers.
//!
//! A flash page is divided into slots (4 KiB, or smaller when compressed pages share a
//! page). A logical page occupies a *fragment* of one or more consecutive slots of one
//! page: its first slot's OOB names the logical page, the others say `CONTINUATION`.

use flashstack_nand::{
    oob_flags, FlashMedium, NandError, OpTiming, PageOob, MAX_SLOTS_PER_PAGE, NO_LPN, NO_SOURCE,
};
use flashstack_sim::Nanos;

use crate::{BlockState, Cause, Ftl, FtlError};

const NO_PAGE: u32 = u32::MAX;
const SLOTS_MAX: usize = MAX_SLOTS_PER_PAGE as usize;
/// OOB value of a slot that continues the fragment started in an earlier slot.
pub(crate) const CONTINUATION: u32 = u32::MAX - 1;
/// Attempts at programming one page before a write is given up as failed.
pub(crate) const PROGRAM_ATTEMPTS_MAX: u32 = 16;

/// A frontier's open block on one unit.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Frontier {
    pub block: u32,
    pub next_page: u32,
}

/// A write frontier: its open block per unit, and the page buffer filling towards the next
/// page it will program. Fragments in the buffer are already mapped to their target page.
#[derive(Debug)]
pub(crate) struct Stream {
    /// GC and metadata streams stay on one unit; host streams rotate over units.
    pub pinned_die: Option<u32>,
    pub relocation: bool,
    pub active: Vec<Option<Frontier>>,
    pub target_page: u32,
    /// Per slot: the logical page a fragment starts with, `CONTINUATION`, or `NO_LPN`.
    pub lpns: [u32; SLOTS_MAX],
    /// Per slot, the physical slot a relocation copies from (`NO_SOURCE` for host data).
    pub sources: [u32; SLOTS_MAX],
    pub causes: [Cause; SLOTS_MAX],
    /// The OOB the page gets when programmed (live fragments only), built just before.
    pub oob: [u32; SLOTS_MAX],
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
            lpns: [NO_LPN; SLOTS_MAX],
            sources: [NO_SOURCE; SLOTS_MAX],
            causes: [Cause::Host; SLOTS_MAX],
            oob: [NO_LPN; SLOTS_MAX],
            filled: 0,
            ready_ns: 0,
            data: vec![0; page_size as usize].into_boxed_slice(),
        }
    }

    fn clear_buffer(&mut self) {
        self.target_page = NO_PAGE;
        self.lpns = [NO_LPN; SLOTS_MAX];
        self.sources = [NO_SOURCE; SLOTS_MAX];
        self.filled = 0;
        self.ready_ns = 0;
    }
}

/// Host streams first, then one relocation (GC/WL) stream per unit, then the metadata
/// stream.
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

    pub(crate) fn meta_stream(&self) -> usize {
        self.streams.len() - 1
    }

    /// The first slot of the next `len`-slot fragment of `stream`. A fragment never
    /// straddles pages: if it does not fit, the buffered page is programmed (padded) first.
    /// Allocating a page may run foreground GC for host streams.
    pub(crate) fn reserve_fragment(
        &mut self,
        stream: usize,
        len: u32,
        allow_gc: bool,
        now_ns: Nanos,
    ) -> Result<u32, FtlError> {
        debug_assert!(len >= 1 && len <= self.slots_per_page);
        let s = &self.streams[stream];
        if s.target_page != NO_PAGE && s.filled + len > self.slots_per_page {
            self.program_buffer(stream)?;
        }
        if self.streams[stream].target_page == NO_PAGE {
            let page = self.allocate_page(stream, allow_gc, now_ns)?;
            self.streams[stream].target_page = page;
        }
        let s = &self.streams[stream];
        Ok(s.target_page * self.slots_per_page + s.filled)
    }

    /// Puts `lpn` into the stream's buffer as a `len`-slot fragment at the slot reserved
    /// last, its bytes either `data` or, for a relocation, those of the `len` physical slots
    /// from `source`. Programs the page when it is full.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn fill_fragment(
        &mut self,
        stream: usize,
        lpn: u32,
        len: u32,
        data: Option<&[u8]>,
        source: u32,
        ready_ns: Nanos,
        cause: Cause,
    ) -> Result<Option<OpTiming>, FtlError> {
        let spp = self.slots_per_page;
        let stores = self.nand.stores_contents();
        let sb = self.slot_bytes as usize;
        let s = &mut self.streams[stream];
        let first = s.filled as usize;
        for k in 0..len as usize {
            s.lpns[first + k] = if k == 0 { lpn } else { CONTINUATION };
            s.sources[first + k] = if source == NO_SOURCE {
                NO_SOURCE
            } else {
                source + k as u32
            };
            s.causes[first + k] = cause;
        }
        s.ready_ns = s.ready_ns.max(ready_ns);
        if spp == 1 {
            // A one-slot page is programmed at once, straight from the caller's bytes.
            s.filled = 1;
            if data.is_none() && source == NO_SOURCE && stores {
                s.data.fill(0);
            }
            return self.program_buffer_from(stream, data).map(Some);
        }
        if stores && source == NO_SOURCE {
            let range = first * sb..(first + len as usize) * sb;
            match data {
                Some(bytes) => {
                    s.data[range.start..range.start + bytes.len()].copy_from_slice(bytes)
                }
                None => s.data[range].fill(0),
            }
        }
        s.filled += len;
        if s.filled == spp {
            return self.program_buffer(stream).map(Some);
        }
        Ok(None)
    }
    /// Picks the unit and page for a stream's next page: the stream's open block there, or
    /// a fresh one (after foreground GC when `allow_gc`).
    pub(crate) fn allocate_page(
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

    /// Programs a stream's buffer to its target page, padding empty slots and fragments
    /// superseded while waiting. Retries elsewhere if the program fails.
    pub(crate) fn program_buffer(&mut self, stream: usize) -> Result<OpTiming, FtlError> {
        self.program_buffer_from(stream, None)
    }

    /// Builds the OOB of a buffered page in `stream.oob`: live fragments keep their logical
    /// page (and their continuation slots); superseded ones become padding (durability
    /// rule 2).
    fn build_live_oob(&mut self, stream: usize, page: u32) {
        let spp = self.slots_per_page as usize;
        let first_slot = page * self.slots_per_page;
        let s = &mut self.streams[stream];
        let mut live = false;
        for i in 0..spp {
            let candidate = s.lpns[i];
            s.oob[i] = if candidate == CONTINUATION {
                if live {
                    CONTINUATION
                } else {
                    NO_LPN
                }
            } else {
                live = candidate != NO_LPN && self.l2p[candidate as usize] == first_slot + i as u32;
                if live {
                    candidate
                } else {
                    NO_LPN
                }
            };
        }
    }

    /// `program_buffer` with the page bytes taken from `direct` instead of the buffer.
    fn program_buffer_from(
        &mut self,
        stream: usize,
        direct: Option<&[u8]>,
    ) -> Result<OpTiming, FtlError> {
        assert!(self.streams[stream].filled > 0);
        let spp = self.slots_per_page as usize;
        let mut attempts = 0;
        loop {
            let page = self.streams[stream].target_page;
            self.build_live_oob(stream, page);
            let seq = self.seq;
            self.seq += 1;
            let s = &self.streams[stream];
            let flags = if s.relocation {
                oob_flags::RELOCATED
            } else {
                0
            };
            let oob = PageOob {
                lpns: &s.oob[..spp],
                seq,
                flags,
            };
            let data = match direct {
                Some(bytes) => Some(bytes),
                None => self.nand.stores_contents().then_some(&s.data[..]),
            };
            let ready_ns = s.ready_ns;
            let result = self
                .nand
                .program_relocating(page, oob, data, &s.sources[..spp], ready_ns);
            match result {
                Ok(timing) => {
                    self.after_program(stream, page, timing);
                    return Ok(timing);
                }
                Err(NandError::ProgramFailed { block }) => {
                    attempts += 1;
                    self.counters.program_failures += 1;
                    self.count_wasted_page();
                    if attempts >= PROGRAM_ATTEMPTS_MAX {
                        return Err(FtlError::NoSpace("repeated program failures".into()));
                    }
                    self.retire_frontier(stream, block);
                    self.retarget_buffer(stream, page, ready_ns)?;
                }
                Err(e) => {
                    // A torn program still consumed the page.
                    self.count_wasted_page();
                    return Err(e.into());
                }
            }
        }
    }

    /// A page consumed without data (failed or torn program).
    fn count_wasted_page(&mut self) {
        self.counters.page_programs += 1;
        self.counters.program_slots_padding += self.slots_per_page as u64;
    }

    fn after_program(&mut self, stream: usize, page: u32, timing: OpTiming) {
        self.counters.page_programs += 1;
        for i in 0..self.slots_per_page as usize {
            let lpn = self.streams[stream].oob[i];
            if lpn == NO_LPN {
                self.counters.program_slots_padding += 1;
                continue;
            }
            if lpn != CONTINUATION {
                if let Some(copies) = self.copies.as_mut() {
                    copies[lpn as usize] += 1;
                }
            }
            match self.streams[stream].causes[i] {
                Cause::Host => self.counters.program_slots_host += 1,
                Cause::Gc => self.counters.program_slots_gc += 1,
                Cause::WearLevel => self.counters.program_slots_wl += 1,
            }
        }
        self.note_programmed(page, timing.end_ns);
        self.streams[stream].clear_buffer();
    }

    /// Seals a block once its last page is programmed.
    pub(crate) fn note_programmed(&mut self, page: u32, end_ns: Nanos) {
        let block = self.nand.block_of_page(page);
        self.blocks.last_write_ns[block as usize] = end_ns;
        let last = page % self.pages_per_block == self.pages_per_block - 1;
        if last && self.blocks.state[block as usize] == BlockState::Open {
            self.blocks.set_state(block, BlockState::Sealed);
        }
    }

    /// A program failed in `block`: stop writing there and queue it for retirement.
    pub(crate) fn retire_frontier(&mut self, stream: usize, block: u32) {
        let die = self.nand.unit_of_block(block) as usize;
        if matches!(self.streams[stream].active[die], Some(f) if f.block == block) {
            self.streams[stream].active[die] = None;
        }
        self.blocks.set_state(block, BlockState::Retiring);
        self.retire_queue.push(block);
    }

    /// Moves a buffer that failed to program at `old_page` to a fresh page, remapping its
    /// live fragments (their offsets inside the page stay the same).
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
            if lpn == NO_LPN || lpn == CONTINUATION || self.l2p[lpn as usize] != old_slot {
                continue;
            }
            let new_slot = page * self.slots_per_page + i;
            let len = self.len_of(lpn);
            self.blocks.remove_valid(self.block_of_slot(old_slot), len);
            self.l2p[lpn as usize] = new_slot;
            self.blocks.add_valid(self.block_of_slot(new_slot), len);
        }
        Ok(())
    }
}
