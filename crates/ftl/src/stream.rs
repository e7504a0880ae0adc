//! Write frontiers and the controller's page buffers.
//!
//! A flash page is divided into slots (4 KiB, or smaller when compressed pages share a
//! page). A logical page occupies a *fragment* of one or more consecutive slots: its first
//! slot's OOB names the logical page, each later slot holds a continuation marker that
//! counts the fragment's slots still to come (0 on its last slot). A fragment lies in one
//! page, except that GC may let a compressed fragment straddle into the next page of the
//! same block (LDC's caGC); the markers let recovery tell a whole straddler from one whose
//! second page never got programmed.

use flashstack_nand::{
    oob_flags, FlashMedium, NandError, OpTiming, PageOob, MAX_SLOTS_PER_PAGE, NO_LPN, NO_SOURCE,
};
use flashstack_sim::Nanos;

use crate::{BlockState, Cause, Ftl, FtlError};

pub(crate) const NO_PAGE: u32 = u32::MAX;
const SLOTS_MAX: usize = MAX_SLOTS_PER_PAGE as usize;
/// OOB values from here to `u32::MAX - 1` mark continuation slots: `CONTINUATION_BASE + r`
/// with r the fragment's slots after this one. Logical page numbers stay below it.
pub(crate) const CONTINUATION_BASE: u32 = u32::MAX - 64;

#[inline]
pub(crate) fn is_continuation(value: u32) -> bool {
    (CONTINUATION_BASE..NO_LPN).contains(&value)
}

#[inline]
pub(crate) fn continuation(remaining: u32) -> u32 {
    debug_assert!(remaining < 63);
    CONTINUATION_BASE + remaining
}

/// A logical page number (not padding, not a continuation).
#[inline]
pub(crate) fn is_start(value: u32) -> bool {
    value < CONTINUATION_BASE
}
/// Attempts at programming one page before a write is given up as failed.
pub(crate) const PROGRAM_ATTEMPTS_MAX: u32 = 16;
/// Page buffers kept for reuse by super-page staging.
const SPARE_BUFFERS_MAX: usize = 64;

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
    /// GC and metadata streams stay on one unit; host streams rotate over units. With
    /// super-page allocation a relocation stream serves a whole die: this is its first
    /// plane, and its cursor rotates over the die's planes.
    pub pinned_die: Option<u32>,
    pub relocation: bool,
    pub active: Vec<Option<Frontier>>,
    pub target_page: u32,
    /// Per slot: the logical page a fragment starts with, a continuation, or `NO_LPN`.
    pub lpns: [u32; SLOTS_MAX],
    /// Per slot, the physical slot a relocation copies from (`NO_SOURCE` for host data).
    pub sources: [u32; SLOTS_MAX],
    pub causes: [Cause; SLOTS_MAX],
    /// The OOB the page gets when programmed (live fragments only), built just before.
    pub oob: [u32; SLOTS_MAX],
    /// A fragment that straddled into this buffer from the previous page: its logical page,
    /// its first slot, and where it came from (to move it again if this page fails).
    pub straddler: u32,
    pub straddler_start: u32,
    pub straddler_origin: (u32, u32),
    pub filled: u32,
    pub ready_ns: Nanos,
    pub data: Box<[u8]>,
    /// Super-page allocation (host and relocation streams): full pages waiting for the
    /// rest of their super-page, oldest first, all on the die of the page in the buffer.
    /// Volatile like the buffer: lost at a power cut, programmed by every `make_durable`.
    pub staged: Vec<Staged>,
    /// Super-page allocation: the unit its next page is allocated on...
    pub cursor: u32,
    /// ...and the units the cursor cycles over, `(first, count)`: every unit for a host
    /// stream, the planes of its die for a relocation stream.
    pub cursor_span: (u32, u32),
}

/// A page still in a controller buffer, as `Ftl::buffered_page` finds it.
pub(crate) struct BufferedPage<'a> {
    pub lpns: &'a [u32],
    pub sources: &'a [u32],
    pub data: &'a [u8],
    pub filled: u32,
}

/// A full page held back until its super-page is complete: the buffer fields it was
/// filled in (no straddler: super-page allocation has no compression).
#[derive(Debug)]
pub(crate) struct Staged {
    pub target_page: u32,
    pub lpns: [u32; SLOTS_MAX],
    pub sources: [u32; SLOTS_MAX],
    pub causes: [Cause; SLOTS_MAX],
    pub filled: u32,
    pub ready_ns: Nanos,
    pub data: Box<[u8]>,
}

impl Staged {
    fn empty(data: Box<[u8]>) -> Self {
        Staged {
            target_page: NO_PAGE,
            lpns: [NO_LPN; SLOTS_MAX],
            sources: [NO_SOURCE; SLOTS_MAX],
            causes: [Cause::Host; SLOTS_MAX],
            filled: 0,
            ready_ns: 0,
            data,
        }
    }
}

impl Stream {
    /// Exchanges the buffer with a staged page.
    fn swap_staged(&mut self, st: &mut Staged) {
        debug_assert_eq!(self.straddler, NO_LPN);
        std::mem::swap(&mut self.target_page, &mut st.target_page);
        std::mem::swap(&mut self.lpns, &mut st.lpns);
        std::mem::swap(&mut self.sources, &mut st.sources);
        std::mem::swap(&mut self.causes, &mut st.causes);
        std::mem::swap(&mut self.filled, &mut st.filled);
        std::mem::swap(&mut self.ready_ns, &mut st.ready_ns);
        std::mem::swap(&mut self.data, &mut st.data);
    }

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
            straddler: NO_LPN,
            straddler_start: 0,
            straddler_origin: (0, 0),
            filled: 0,
            ready_ns: 0,
            data: vec![0; page_size as usize].into_boxed_slice(),
            staged: Vec::new(),
            cursor: 0,
            cursor_span: (0, dies),
        }
    }

    /// Moves the cursor on, returning the unit it pointed at.
    fn advance_cursor(&mut self) -> u32 {
        let u = self.cursor;
        let (first, count) = self.cursor_span;
        self.cursor = if u + 1 == first + count { first } else { u + 1 };
        u
    }

    /// Empties the buffer of a page of `slots` slots (entries beyond stay unused).
    fn clear_buffer(&mut self, slots: usize) {
        self.target_page = NO_PAGE;
        if slots == 1 {
            // One-slot pages (every page of a plain page-mapping FTL): two stores, no
            // call to memset.
            self.lpns[0] = NO_LPN;
            self.sources[0] = NO_SOURCE;
        } else {
            self.lpns[..slots].fill(NO_LPN);
            self.sources[..slots].fill(NO_SOURCE);
        }
        self.straddler = NO_LPN;
        self.filled = 0;
        self.ready_ns = 0;
    }
}

/// Host streams first, then the relocation (GC/WL) streams, then the metadata stream.
/// Page by page there is one relocation stream per unit. With super-page allocation there
/// is one per die, whose cursor cycles over the die's planes as a host stream's cycles over
/// every unit (so each plane still has one relocation frontier), and host stream i starts
/// on die i (modulo the dies), so that streams written together use different dies.
pub(crate) fn build_streams(
    host_streams: u32,
    units: u32,
    page_size: u32,
    planes_per_die: u32,
    super_page: bool,
) -> Vec<Stream> {
    let mut streams: Vec<Stream> = (0..host_streams)
        .map(|i| {
            let mut s = Stream::new(None, false, units, page_size);
            s.cursor = (i % (units / planes_per_die).max(1)) * planes_per_die;
            s
        })
        .collect();
    if super_page {
        streams.extend((0..units).step_by(planes_per_die as usize).map(|first| {
            let mut s = Stream::new(Some(first), true, units, page_size);
            s.cursor = first;
            s.cursor_span = (first, planes_per_die);
            s
        }));
    } else {
        streams.extend((0..units).map(|u| Stream::new(Some(u), true, units, page_size)));
    }
    streams.push(Stream::new(None, false, units, page_size));
    streams
}

impl Ftl {
    /// The relocation stream that takes what GC and wear levelling move out of `unit`:
    /// the unit's own, or with super-page allocation its die's.
    pub(crate) fn gc_stream(&self, unit: u32) -> usize {
        let index = match self.super_page {
            true => unit / self.planes_per_die,
            false => unit,
        };
        (self.host_streams + index) as usize
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
            self.page_full(stream)?;
        }
        if self.streams[stream].target_page == NO_PAGE {
            let page = self.allocate_page(stream, allow_gc, now_ns)?;
            self.streams[stream].target_page = page;
        }
        let s = &self.streams[stream];
        Ok(s.target_page * self.slots_per_page + s.filled)
    }

    /// Like `reserve_fragment`, but a fragment that does not fit the buffered page may
    /// straddle into the next page of the same block (LDC's caGC, for data of low
    /// compressibility). Only streams pinned to a unit can, since only they know their
    /// next page.
    pub(crate) fn reserve_straddling(
        &mut self,
        stream: usize,
        len: u32,
        now_ns: Nanos,
    ) -> Result<u32, FtlError> {
        let s = &self.streams[stream];
        let spp = self.slots_per_page;
        // At least two slots stay on the first page, so its continuation marker tells
        // recovery how many follow (a lone start slot would look like a whole fragment).
        let straddles = s.target_page != NO_PAGE && s.filled + 2 <= spp && s.filled + len > spp;
        if straddles && self.has_next_page_in_block(stream) {
            return Ok(s.target_page * spp + s.filled);
        }
        self.reserve_fragment(stream, len, false, now_ns)
    }

    /// The stream's next allocation will be the page after its buffered one, same block.
    fn has_next_page_in_block(&self, stream: usize) -> bool {
        let s = &self.streams[stream];
        let Some(unit) = s.pinned_die else {
            return false;
        };
        match s.active[unit as usize] {
            Some(f) => {
                self.nand.first_page(f.block) + f.next_page == s.target_page + 1
                    && f.next_page < self.pages_per_block
            }
            None => false,
        }
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
        if spp == 1 && !self.stages(stream) {
            return self.fill_single_slot_page(stream, lpn, data, source, ready_ns, cause);
        }
        let first = self.streams[stream].filled;
        let head = len.min(spp - first);
        self.put_slots(stream, lpn, len, 0..head, data, source, ready_ns, cause);
        if head == len {
            if self.streams[stream].filled == spp {
                return self.page_full(stream);
            }
            return Ok(None);
        }
        // The fragment straddles: program this page, continue in the next one.
        self.counters.straddled_fragments += 1;
        let origin = self.straddle_origin(lpn, source, len);
        let timing = self.program_buffer(stream)?;
        // Read the head's place only now: a failed program moves the page (and the head
        // with it) to a fresh block.
        let start = self.mapping.l2p.at(lpn as usize);
        let next = self.allocate_page(stream, false, ready_ns)?;
        assert_eq!(
            next,
            start / spp + 1,
            "a straddler continues in the next page"
        );
        let s = &mut self.streams[stream];
        s.target_page = next;
        s.straddler = lpn;
        s.straddler_start = start;
        s.straddler_origin = origin;
        self.put_slots(stream, lpn, len, head..len, data, source, ready_ns, cause);
        Ok(Some(timing))
    }

    /// Where a straddling fragment's data lives until it is durable in its new place: the
    /// fragment GC is moving (its mapping before this move).
    fn straddle_origin(&self, lpn: u32, source: u32, len: u32) -> (u32, u32) {
        match source {
            NO_SOURCE => self
                .relocation_origin
                .unwrap_or((self.mapping.l2p.at(lpn as usize), len)),
            _ => (source, len),
        }
    }

    /// Writes fragment slots `ks` (of a `len`-slot fragment) at the buffer's fill point.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn put_slots(
        &mut self,
        stream: usize,
        lpn: u32,
        len: u32,
        ks: std::ops::Range<u32>,
        data: Option<&[u8]>,
        source: u32,
        ready_ns: Nanos,
        cause: Cause,
    ) {
        let stores = self.nand.stores_contents();
        let sb = self.slot_bytes as usize;
        let s = &mut self.streams[stream];
        s.ready_ns = s.ready_ns.max(ready_ns);
        for k in ks {
            let at = s.filled as usize;
            s.lpns[at] = if k == 0 {
                lpn
            } else {
                continuation(len - 1 - k)
            };
            s.sources[at] = if source == NO_SOURCE {
                NO_SOURCE
            } else {
                source + k
            };
            s.causes[at] = cause;
            if stores && source == NO_SOURCE {
                let slot_bytes = &mut s.data[at * sb..(at + 1) * sb];
                match data {
                    Some(bytes) => {
                        slot_bytes.copy_from_slice(&bytes[k as usize * sb..(k as usize + 1) * sb])
                    }
                    None => slot_bytes.fill(0),
                }
            }
            s.filled += 1;
        }
    }

    /// A one-slot page is programmed at once, straight from the caller's bytes.
    pub(crate) fn fill_single_slot_page(
        &mut self,
        stream: usize,
        lpn: u32,
        data: Option<&[u8]>,
        source: u32,
        ready_ns: Nanos,
        cause: Cause,
    ) -> Result<Option<OpTiming>, FtlError> {
        let stores = self.nand.stores_contents();
        let s = &mut self.streams[stream];
        s.lpns[0] = lpn;
        s.sources[0] = source;
        s.causes[0] = cause;
        s.ready_ns = s.ready_ns.max(ready_ns);
        s.filled = 1;
        if data.is_none() && source == NO_SOURCE && stores {
            s.data.fill(0);
        }
        self.program_buffer_from(stream, data).map(Some)
    }

    /// Whether `stream` holds full pages back for super-pages (`ftl.allocation`): host
    /// and relocation streams of a super-page device (record pages are programmed one by
    /// one, each durable when written).
    #[inline]
    pub(crate) fn stages(&self, stream: usize) -> bool {
        self.super_page && stream < self.meta_stream()
    }

    /// The buffer of `stream` is full: programmed now, or, for a staging stream, held
    /// until the super-page is complete (its next page would go to another die), then
    /// programmed with the rest of it. Returns the program's timing if there was one.
    fn page_full(&mut self, stream: usize) -> Result<Option<OpTiming>, FtlError> {
        if !self.stages(stream) {
            return self.program_buffer(stream).map(Some);
        }
        self.stage_buffer(stream);
        if !self.streams[stream]
            .cursor
            .is_multiple_of(self.planes_per_die)
        {
            return Ok(None);
        }
        self.program_staged(stream, 0)
    }

    /// Moves the buffer (full, or partial to be padded) to the stream's staged pages.
    fn stage_buffer(&mut self, stream: usize) {
        let data = self
            .spare_buffers
            .pop()
            .unwrap_or_else(|| vec![0; self.nand.geometry().page_size_bytes as usize].into());
        let mut staged = Staged::empty(data);
        let s = &mut self.streams[stream];
        s.swap_staged(&mut staged);
        s.staged.push(staged);
    }

    /// Programs a staging stream's held pages and its partial buffer (padded), all ready
    /// at the same time (the latest of theirs and `now_ns`), one after another: on a die
    /// with one command at a time and multi-plane programs, pages at the same offset on
    /// its planes join the first one's command. Returns the timing of the one that ends
    /// last (`None` if nothing was held).
    pub(crate) fn program_staged(
        &mut self,
        stream: usize,
        now_ns: Nanos,
    ) -> Result<Option<OpTiming>, FtlError> {
        if self.streams[stream].filled > 0 {
            self.stage_buffer(stream);
        }
        let mut group = std::mem::take(&mut self.streams[stream].staged);
        let ready_ns = group.iter().map(|p| p.ready_ns).fold(now_ns, Nanos::max);
        let mut last: Option<OpTiming> = None;
        let mut failed = None;
        for (i, page) in group.iter_mut().enumerate() {
            page.ready_ns = ready_ns;
            self.streams[stream].swap_staged(page);
            match self.program_buffer(stream) {
                Ok(t) => {
                    if last.is_none_or(|l| t.end_ns > l.end_ns) {
                        last = Some(t);
                    }
                }
                Err(e) => {
                    failed = Some((i, e));
                    break;
                }
            }
        }
        // A page that could not be programmed stays in the buffer, the ones after it stay
        // held: their data is still only here.
        let rest = failed
            .as_ref()
            .map_or(Vec::new(), |&(i, _)| group.drain(i + 1..).collect());
        for page in group.drain(..) {
            if self.spare_buffers.len() < SPARE_BUFFERS_MAX {
                self.spare_buffers.push(page.data);
            }
        }
        // The emptied list goes back, to be filled again without allocating.
        group.extend(rest);
        self.streams[stream].staged = group;
        match failed {
            Some((_, e)) => Err(e),
            None => Ok(last),
        }
    }

    /// The slot values and bytes of a page still in a controller buffer (a stream's
    /// buffer or a staged page): its OOB values, physical sources, bytes and slots
    /// filled.
    pub(crate) fn buffered_page(&self, page: u32) -> Option<BufferedPage<'_>> {
        self.streams.iter().find_map(|s| {
            if s.target_page == page {
                return Some(BufferedPage {
                    lpns: &s.lpns,
                    sources: &s.sources,
                    data: &s.data,
                    filled: s.filled,
                });
            }
            s.staged
                .iter()
                .find(|p| p.target_page == page)
                .map(|p| BufferedPage {
                    lpns: &p.lpns,
                    sources: &p.sources,
                    data: &p.data,
                    filled: p.filled,
                })
        })
    }

    /// Picks the unit and page for a stream's next page: the stream's open block there, or
    /// a fresh one (after foreground GC when `allow_gc`).
    pub(crate) fn allocate_page(
        &mut self,
        stream: usize,
        allow_gc: bool,
        now_ns: Nanos,
    ) -> Result<u32, FtlError> {
        if self.stages(stream) {
            // Its own cursor: the stream's frontiers on a die's planes advance together,
            // at the same page offset.
            let unit = self.next_staging_unit(stream, now_ns)?;
            return self.allocate_on(stream, unit, allow_gc, now_ns);
        }
        let die = match self.streams[stream].pinned_die {
            Some(d) => d,
            None => {
                let d = self.next_host_die;
                self.next_host_die = if d + 1 == self.units { 0 } else { d + 1 };
                d
            }
        };
        self.allocate_on(stream, die, allow_gc, now_ns)
    }

    /// The unit a staging stream's next page goes to: where its cursor points. A
    /// relocation stream allocates without GC, so when that plane's frontier is full and
    /// its free pool empty (GC of another plane of the die moves data here), the plane of
    /// the die with the most free blocks takes the page instead; page by page, the unit's
    /// own pool would have been the only one. What the stream holds is programmed first,
    /// and the cursor goes on from the new plane, so a super-page never has two pages on
    /// one plane (a failed program re-targets its page to a fresh block of its plane,
    /// which would leave a later page of that plane out of order).
    fn next_staging_unit(&mut self, stream: usize, now_ns: Nanos) -> Result<u32, FtlError> {
        let unit = self.streams[stream].advance_cursor();
        let s = &self.streams[stream];
        let has_room = |u: u32| {
            matches!(s.active[u as usize], Some(f) if f.next_page < self.pages_per_block)
                || self.blocks.free_count(u) > 0
        };
        if !s.relocation || has_room(unit) {
            return Ok(unit);
        }
        let (first, count) = s.cursor_span;
        let Some(other) = (first..first + count)
            .filter(|&u| has_room(u))
            .max_by_key(|&u| (self.blocks.free_count(u), std::cmp::Reverse(u)))
        else {
            return Ok(unit);
        };
        self.counters.relocation_plane_fallbacks += 1;
        self.program_staged(stream, now_ns)?;
        let s = &mut self.streams[stream];
        s.cursor = other;
        s.advance_cursor();
        Ok(other)
    }

    /// The unit the next slot a relocation stream takes will land on: its buffered page's,
    /// while that page has room, else where its cursor points (the fallback of
    /// `next_staging_unit` may still send it elsewhere).
    pub(crate) fn relocation_target_unit(&self, stream: usize) -> u32 {
        let s = &self.streams[stream];
        match s.target_page != NO_PAGE && s.filled < self.slots_per_page {
            true => self
                .nand
                .unit_of_block(self.nand.block_of_page(s.target_page)),
            false => s.cursor,
        }
    }

    /// `allocate_page` on a given unit.
    fn allocate_on(
        &mut self,
        stream: usize,
        die: u32,
        allow_gc: bool,
        now_ns: Nanos,
    ) -> Result<u32, FtlError> {
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
        let mut live =
            s.straddler != NO_LPN && self.mapping.l2p.at(s.straddler as usize) == s.straddler_start;
        for i in 0..spp {
            let candidate = s.lpns[i];
            s.oob[i] = if is_continuation(candidate) {
                if live {
                    candidate
                } else {
                    NO_LPN
                }
            } else {
                let slot = first_slot + i as u32;
                live = candidate != NO_LPN && self.mapping.l2p.at(candidate as usize) == slot;
                if live {
                    candidate
                } else if candidate == NO_LPN || self.mapping.nothing_shared() {
                    NO_LPN
                } else {
                    // Superseded owner, but aliases still share the slot: one of them is
                    // named instead (an OOB must never name a page that maps elsewhere).
                    match self.mapping.promote_alias(slot) {
                        Some(alias) => {
                            live = true;
                            s.lpns[i] = alias;
                            alias
                        }
                        None => NO_LPN,
                    }
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
            if is_start(lpn) {
                if let Some(copies) = self.copies.as_mut() {
                    copies[lpn as usize] += 1;
                }
            }
            let cause = self.streams[stream].causes[i];
            self.counters.add_data_slots(cause, 1);
        }
        self.note_programmed(page, timing.end_ns);
        self.streams[stream].clear_buffer(self.slots_per_page as usize);
    }

    /// Seals a block once its last page is programmed.
    pub(crate) fn note_programmed(&mut self, page: u32, end_ns: Nanos) {
        let block = self.nand.block_of_page(page);
        self.blocks.last_write_ns[block as usize] = end_ns;
        let last = self.pages_per_block_div.rem(page) == self.pages_per_block - 1;
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
        let page = if self.stages(stream) {
            // Same plane, so the super-page still has one page per plane (a fresh block:
            // this plane's offsets no longer match its neighbours' until they all move on).
            let unit = self.nand.unit_of_block(self.nand.block_of_page(old_page));
            self.allocate_on(stream, unit, false, now_ns)?
        } else {
            self.allocate_page(stream, false, now_ns)?
        };
        self.streams[stream].target_page = page;
        let s = &self.streams[stream];
        if s.straddler != NO_LPN && self.mapping.l2p.at(s.straddler as usize) == s.straddler_start {
            // The straddler's head is on the previous page; its tail cannot follow it to a
            // new page. Its data is still where GC is moving it from: map it back there, and
            // GC moves it again before erasing that block.
            let (lpn, (origin, len)) = (s.straddler, s.straddler_origin);
            self.map(lpn, origin, len);
        }
        self.streams[stream].straddler = NO_LPN;
        for i in 0..self.streams[stream].filled {
            let lpn = self.streams[stream].lpns[i as usize];
            let old_slot = old_page * self.slots_per_page + i;
            if !is_start(lpn) {
                continue;
            }
            let new_slot = page * self.slots_per_page + i;
            // Every referrer follows the slot; aliases log their new binding.
            let (live, aliases) = self.mapping.rekey(old_slot, new_slot, lpn);
            self.hpb_mark(lpn);
            aliases.iter().for_each(|&a| self.hpb_mark(a));
            if !live {
                continue;
            }
            let len = self.len_of(aliases.first().copied().unwrap_or(lpn));
            self.blocks.remove_valid(self.block_of_slot(old_slot), len);
            self.blocks.add_valid(self.block_of_slot(new_slot), len);
            self.pending_binds.extend(aliases);
        }
        Ok(())
    }
}
