//! The controller write buffer (issue 19 item 2): DRAM (or SRAM) in the controller that
//! acknowledges a host write once its data is in the buffer and programs it later.
//!
//! Step by step:
//! 1. A host write crosses the link and is copied into the buffer (`dram_ns_per_4k`, one
//!    DRAM channel in turn); it completes then. Each LBA keeps its newest version only: an
//!    overwrite of a buffered LBA takes no more room. Reads of buffered LBAs, and of LBAs
//!    destaged whose page program has not ended (their bytes stay in DRAM until it has),
//!    are served from the buffer (`buffer_read_hits`); no mapping lookup, no flash.
//! 2. Destaging is background work: before each request, whole flash pages of buffered
//!    data (the pure policy [`destage_group`] picks which) go down the ordinary write path
//!    (`write_lpn`: allocation, foreground GC, the mapping cache dirtied now) at the time
//!    their die is free, if that is not later than the request. A destaged LBA's DRAM is
//!    held until its page is programmed.
//! 3. Full buffer: a write that finds no room destages the oldest data at once and waits
//!    until enough programs end (`write_buffer_full_waits`, `write_buffer_wait_ns_*`).
//! 4. Flush: everything is destaged, then `make_durable`. FUA (`Hints::fua`): the
//!    request's own LBAs are destaged and made durable before it completes.
//! 5. Power cut: the buffered LBAs are lost (per LBA the flash copy stands), unless the
//!    buffer is `power_loss_protected`: then they are programmed during the hold-up time,
//!    charged to the remount after the cut. A destage group always ends with its page
//!    programmed, so no host data waits in a page buffer outside this one.
//!
//! GC's pre-erase `make_durable` (durability rule 4) does not touch this buffer: buffered
//! data names no flash slot yet, and the flash copies it supersedes stay mapped (so GC
//! moves them) until the destage maps the new one.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

use flashstack_block::{Completion, Hints, Payload, LBA_SIZE};
use flashstack_sim::{Nanos, Resource};

use crate::config::{DestagePolicyKind, WriteBufferConfig};
use crate::stream::NO_PAGE;
use crate::{Cause, Ftl, FtlError};

/// One host stream's buffered data as the destage policy sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamHead {
    pub stream: u32,
    /// Arrival order of its oldest buffered LBA (smaller = older).
    pub oldest: u64,
    /// LBAs it holds.
    pub lbas: u64,
}

/// Which stream destages next and how many of its oldest LBAs: FIFO takes the stream
/// holding the oldest buffered LBA, one flash page (`page_lbas`) of it. `None` when that is
/// less than a page, unless `force` (a flush, a full buffer) takes what there is. A pure
/// function of the streams' heads.
pub fn destage_group(
    policy: DestagePolicyKind,
    heads: &[StreamHead],
    page_lbas: u32,
    force: bool,
) -> Option<(u32, u32)> {
    match policy {
        DestagePolicyKind::Fifo => {
            let head = heads
                .iter()
                .filter(|h| h.lbas > 0)
                .min_by_key(|h| h.oldest)?;
            let count = head.lbas.min(page_lbas as u64) as u32;
            (force || count >= page_lbas).then_some((head.stream, count))
        }
    }
}

/// A buffered LBA taken out at a power cut: (LBA, host stream, bytes).
pub(crate) type CutEntry = (u32, u32, Option<Box<[u8]>>);

/// A destaged LBA's copy in DRAM: when its page program ends, and its bytes.
type InDram = (Nanos, Option<Box<[u8]>>);

#[derive(Debug)]
struct Entry {
    /// Arrival order; the stream queue's stale pairs carry an older one.
    order: u64,
    stream: u32,
    /// When the data was in the buffer.
    buffered_ns: Nanos,
    data: Option<Box<[u8]>>,
}

/// The buffer's volatile state.
#[derive(Debug)]
pub(crate) struct WriteBuffer {
    config: WriteBufferConfig,
    capacity_lbas: u64,
    entries: BTreeMap<u32, Entry>,
    /// Per host stream: (arrival order, LBA) oldest first, with stale pairs (the LBA
    /// rewritten or trimmed since) skipped lazily, and the live LBAs it holds.
    queues: BTreeMap<u32, (VecDeque<(u64, u32)>, u64)>,
    next_order: u64,
    /// Destaged LBAs whose programs have not ended: (end, LBAs), earliest first.
    in_flight: BinaryHeap<Reverse<(Nanos, u64)>>,
    in_flight_lbas: u64,
    /// Destaged LBAs whose page program has not ended, by LBA: when it ends and the
    /// bytes, still in DRAM, from which a read is served until then. `held_ends` lists
    /// (end, LBA) earliest first for pruning; a pair whose LBA was destaged again since
    /// (another end) or trimmed is skipped.
    held: BTreeMap<u32, InDram>,
    held_ends: BinaryHeap<Reverse<(Nanos, u32)>>,
    dram: Resource,
}

impl WriteBuffer {
    pub(crate) fn new(config: &WriteBufferConfig) -> Option<WriteBuffer> {
        (!config.is_off()).then(|| WriteBuffer {
            config: config.clone(),
            capacity_lbas: config.capacity_bytes / LBA_SIZE as u64,
            entries: BTreeMap::new(),
            queues: BTreeMap::new(),
            next_order: 0,
            in_flight: BinaryHeap::new(),
            in_flight_lbas: 0,
            held: BTreeMap::new(),
            held_ends: BinaryHeap::new(),
            dram: Resource::default(),
        })
    }

    pub(crate) fn buffered_lbas(&self) -> u64 {
        self.entries.len() as u64
    }

    pub(crate) fn contains(&self, lpn: u32) -> bool {
        self.entries.contains_key(&lpn)
    }

    /// The first LBA in `from..end` whose newest bytes are in DRAM at `now_ns` (buffered,
    /// or destaged with its program not yet ended), if any.
    pub(crate) fn next_in_dram(&self, from: u32, end: u32, now_ns: Nanos) -> Option<u32> {
        let buffered = self.entries.range(from..end).next().map(|(&l, _)| l);
        let held = self
            .held
            .range(from..buffered.unwrap_or(end))
            .find(|(_, (end_ns, _))| *end_ns > now_ns)
            .map(|(&l, _)| l);
        held.or(buffered)
    }

    /// A destaged group's LBAs stay readable from DRAM until `end_ns`.
    fn hold(&mut self, lpn: u32, end_ns: Nanos, data: Option<Box<[u8]>>) {
        self.held.insert(lpn, (end_ns, data));
        self.held_ends.push(Reverse((end_ns, lpn)));
    }

    fn is_live(&self, order: u64, lpn: u32) -> bool {
        self.entries.get(&lpn).is_some_and(|e| e.order == order)
    }

    /// Every stream holding data, for the policy.
    fn heads(&mut self) -> Vec<StreamHead> {
        let streams: Vec<u32> = self.queues.keys().copied().collect();
        streams
            .into_iter()
            .filter_map(|stream| {
                self.compact(stream);
                let (queue, lbas) = &self.queues[&stream];
                let &(oldest, _) = queue.front()?;
                Some(StreamHead {
                    stream,
                    oldest,
                    lbas: *lbas,
                })
            })
            .collect()
    }

    /// The `count` oldest LBAs of `stream`.
    fn oldest_of(&self, stream: u32, count: u32) -> Vec<u32> {
        self.queues[&stream]
            .0
            .iter()
            .filter(|&&(order, lpn)| self.is_live(order, lpn))
            .map(|&(_, lpn)| lpn)
            .take(count as usize)
            .collect()
    }

    fn insert(&mut self, lpn: u32, stream: u32, buffered_ns: Nanos, data: Option<Box<[u8]>>) {
        let order = self.next_order;
        self.next_order += 1;
        self.insert_with(lpn, stream, order, buffered_ns, data, false);
    }

    /// Puts an entry back (`front`: into its queue's head, for a destage undone).
    fn insert_with(
        &mut self,
        lpn: u32,
        stream: u32,
        order: u64,
        buffered_ns: Nanos,
        data: Option<Box<[u8]>>,
        front: bool,
    ) {
        let entry = Entry {
            order,
            stream,
            buffered_ns,
            data,
        };
        if let Some(old) = self.entries.insert(lpn, entry) {
            self.queues.get_mut(&old.stream).expect("queued").1 -= 1;
            self.compact(old.stream);
        }
        let (queue, lbas) = self.queues.entry(stream).or_default();
        match front {
            true => queue.push_front((order, lpn)),
            false => queue.push_back((order, lpn)),
        }
        *lbas += 1;
    }

    fn remove(&mut self, lpn: u32) -> Option<Entry> {
        let entry = self.entries.remove(&lpn)?;
        self.queues.get_mut(&entry.stream).expect("queued").1 -= 1;
        self.compact(entry.stream);
        Some(entry)
    }

    /// Drops stale pairs at a queue's head, rebuilds it when stale pairs dominate, and
    /// forgets an empty one.
    fn compact(&mut self, stream: u32) {
        let entries = &self.entries;
        let live = |&(order, lpn): &(u64, u32)| entries.get(&lpn).is_some_and(|e| e.order == order);
        let Some((queue, lbas)) = self.queues.get_mut(&stream) else {
            return;
        };
        while queue.front().is_some_and(|p| !live(p)) {
            queue.pop_front();
        }
        if queue.len() as u64 > 2 * *lbas + 64 {
            queue.retain(live);
        }
        if queue.is_empty() {
            self.queues.remove(&stream);
        }
    }

    /// Programs that ended by `now_ns` give their DRAM back.
    fn release_until(&mut self, now_ns: Nanos) {
        while let Some(&Reverse((end_ns, lbas))) = self.in_flight.peek() {
            if end_ns > now_ns {
                break;
            }
            self.in_flight.pop();
            self.in_flight_lbas -= lbas;
        }
    }

    /// Drops the DRAM copies of destaged LBAs whose programs ended by `now_ns`. Called
    /// only at a request's arrival (`wbuf_drain`), never with a later time (a write's
    /// link crossing), so no read arriving before `now_ns` can lose its copy early; a
    /// read checks the end time itself anyway.
    fn prune_held(&mut self, now_ns: Nanos) {
        while let Some(&Reverse((end_ns, lpn))) = self.held_ends.peek() {
            if end_ns > now_ns {
                break;
            }
            self.held_ends.pop();
            if self.held.get(&lpn).is_some_and(|(e, _)| *e == end_ns) {
                self.held.remove(&lpn);
            }
        }
    }

    fn occupied_lbas(&self) -> u64 {
        self.entries.len() as u64 + self.in_flight_lbas
    }
}

impl Ftl {
    fn wbuf(&self) -> &WriteBuffer {
        self.write_buffer.as_ref().expect("write buffer on")
    }
    fn wbuf_mut(&mut self) -> &mut WriteBuffer {
        self.write_buffer.as_mut().expect("write buffer on")
    }

    /// LBAs of one flash page.
    fn page_lbas(&self) -> u32 {
        (self.slots_per_page / self.slots_per_lpn).max(1)
    }

    /// A host write into the buffer: completes when its data is there (after waiting for
    /// room if the buffer is full); with FUA, when its LBAs are durable.
    pub(crate) fn buffered_write(
        &mut self,
        arrival_ns: Nanos,
        lba: u64,
        payload: Payload<'_>,
        hints: Hints,
    ) -> Result<Completion, FtlError> {
        let count = payload.lba_count();
        let crate::write::Accepted {
            queue_slot,
            start_ns,
            accepted_ns,
            stream,
        } = self.accept_write(arrival_ns, &hints);
        let stores = self.nand.stores_contents();
        let dram_ns = self.wbuf().config.dram_ns_per_4k;
        let mut complete_ns = accepted_ns;
        let mut waited_ns = 0;
        for i in 0..count as u64 {
            let (_, crossed_ns) = self
                .host_link
                .reserve(accepted_ns, self.config.host.link_ns_per_4k);
            let lpn = (lba + i) as u32;
            let room_ns = if self.wbuf().contains(lpn) {
                crossed_ns
            } else {
                self.wbuf_room(crossed_ns)?
            };
            waited_ns = waited_ns.max(room_ns - crossed_ns);
            let (_, buffered_ns) = self.wbuf_mut().dram.reserve(room_ns, dram_ns);
            let data = match payload {
                Payload::Bytes(bytes) if stores => Some(
                    bytes[i as usize * LBA_SIZE..(i as usize + 1) * LBA_SIZE]
                        .to_vec()
                        .into_boxed_slice(),
                ),
                _ => None,
            };
            self.wbuf_mut().insert(lpn, stream, buffered_ns, data);
            complete_ns = complete_ns.max(buffered_ns);
        }
        if waited_ns > 0 {
            self.counters.write_buffer_full_waits += 1;
            self.counters.write_buffer_wait_ns_total += waited_ns;
            self.counters.write_buffer_wait_ns_max =
                self.counters.write_buffer_wait_ns_max.max(waited_ns);
        }
        if hints.fua {
            complete_ns = complete_ns.max(self.wbuf_destage_range(lba, count, complete_ns)?);
            complete_ns = complete_ns.max(self.make_durable(complete_ns)?);
            self.counters.write_buffer_fua_writes += 1;
        }
        Ok(self.finish_write(queue_slot, start_ns, complete_ns, count))
    }

    /// When the buffer has room for one more LBA, no earlier than `now_ns`: destages the
    /// oldest data at once if the programs already under way do not free enough.
    fn wbuf_room(&mut self, now_ns: Nanos) -> Result<Nanos, FtlError> {
        let wb = self.wbuf_mut();
        wb.release_until(now_ns);
        let occupied = wb.occupied_lbas();
        if occupied < wb.capacity_lbas {
            return Ok(now_ns);
        }
        let need = occupied + 1 - wb.capacity_lbas;
        while self.wbuf().in_flight_lbas < need && self.wbuf().buffered_lbas() > 0 {
            self.wbuf_destage_next(now_ns, true)?;
        }
        let wb = self.wbuf_mut();
        let mut freed = 0;
        let mut room_ns = now_ns;
        while freed < need {
            let Reverse((end_ns, lbas)) = wb.in_flight.pop().expect("programs under way");
            wb.in_flight_lbas -= lbas;
            freed += lbas;
            room_ns = room_ns.max(end_ns);
            if freed > need {
                // The rest of that page's LBAs stay held until its program ends.
                let rest = freed - need;
                wb.in_flight.push(Reverse((end_ns, rest)));
                wb.in_flight_lbas += rest;
                freed = need;
            }
        }
        Ok(room_ns)
    }

    /// Background destaging before a request arriving at `now_ns`: whole pages, each at
    /// the time its die is free, as long as that is not after `now_ns`.
    pub(crate) fn wbuf_drain(&mut self, now_ns: Nanos) -> Result<(), FtlError> {
        if self.write_buffer.is_none() {
            return Ok(());
        }
        self.wbuf_mut().release_until(now_ns);
        self.wbuf_mut().prune_held(now_ns);
        // Less than a page buffered: no group without force (the common case, cheaply).
        while self.wbuf().buffered_lbas() >= self.page_lbas() as u64 {
            let Some((stream, group)) = self.wbuf_next_group(false) else {
                break;
            };
            let die_free_ns = self
                .nand
                .unit_busy_until_ns(self.next_unit(stream as usize));
            let newest_ns = group
                .iter()
                .map(|l| self.wbuf().entries[l].buffered_ns)
                .max()
                .unwrap_or(0);
            let ready_ns = die_free_ns.max(newest_ns);
            if ready_ns > now_ns {
                break;
            }
            self.wbuf_destage(stream, group, ready_ns)?;
        }
        Ok(())
    }

    /// The unit a host stream's next page goes to.
    fn next_unit(&self, stream: usize) -> u32 {
        let page = self.streams[stream].target_page;
        if page != NO_PAGE {
            return self.nand.unit_of_block(self.nand.block_of_page(page));
        }
        self.streams[stream]
            .pinned_die
            .unwrap_or(self.next_host_die)
    }

    fn wbuf_next_group(&mut self, force: bool) -> Option<(u32, Vec<u32>)> {
        let page_lbas = self.page_lbas();
        let wb = self.wbuf_mut();
        let heads = wb.heads();
        let (stream, count) = destage_group(wb.config.destage, &heads, page_lbas, force)?;
        let group = wb.oldest_of(stream, count);
        Some((stream, self.with_unit_mates(group)))
    }

    /// With a mapping unit of several LBAs, the buffered LBAs sharing a unit with one of
    /// `group` join it: the unit is programmed once with every half the buffer holds, as a
    /// controller caching by mapping unit (MQSim's cache by logical page, a sector bitmap
    /// each) does, instead of once per group with a read or padding for the rest and again
    /// when the rest is destaged. Mates are added after the group, in address order, from
    /// whichever host stream buffered them: a unit is one mapping entry and one page, so
    /// it goes to the group's stream whole (a mate of another stream changes streams).
    fn with_unit_mates(&self, mut group: Vec<u32>) -> Vec<u32> {
        if !self.maps_units() {
            return group;
        }
        let n = self.unit_lpns;
        let mut bases: Vec<u32> = group.iter().map(|&lpn| lpn / n * n).collect();
        bases.dedup();
        let wb = self.wbuf();
        for base in bases {
            for lpn in base..base.saturating_add(n) {
                if wb.contains(lpn) && !group.contains(&lpn) {
                    group.push(lpn);
                }
            }
        }
        group
    }

    /// Destages the group the policy picks (forced: even less than a page); returns when
    /// its programs end.
    fn wbuf_destage_next(&mut self, ready_ns: Nanos, force: bool) -> Result<Nanos, FtlError> {
        match self.wbuf_next_group(force) {
            Some((stream, group)) => self.wbuf_destage(stream, group, ready_ns),
            None => Ok(ready_ns),
        }
    }

    /// Destages everything (a flush, REMAP); returns when the last program ends.
    pub(crate) fn wbuf_destage_all(&mut self, ready_ns: Nanos) -> Result<Nanos, FtlError> {
        let mut done_ns = ready_ns;
        if self.write_buffer.is_none() {
            return Ok(done_ns);
        }
        while self.wbuf().buffered_lbas() > 0 {
            done_ns = done_ns.max(self.wbuf_destage_next(ready_ns, true)?);
        }
        Ok(done_ns)
    }

    /// Destages the buffered LBAs among `lba..lba + count` (a FUA write's own), in groups
    /// of at most a page per stream.
    fn wbuf_destage_range(
        &mut self,
        lba: u64,
        count: u32,
        ready_ns: Nanos,
    ) -> Result<Nanos, FtlError> {
        let page_lbas = self.page_lbas() as usize;
        let mut by_stream: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for lpn in lba as u32..(lba as u32 + count) {
            if let Some(e) = self.wbuf().entries.get(&lpn) {
                by_stream.entry(e.stream).or_default().push(lpn);
            }
        }
        let mut done_ns = ready_ns;
        for (stream, lpns) in by_stream {
            for group in lpns.chunks(page_lbas) {
                // An earlier group's unit mates may have taken some of this one.
                let group: Vec<u32> = group
                    .iter()
                    .copied()
                    .filter(|&l| self.wbuf().contains(l))
                    .collect();
                if group.is_empty() {
                    continue;
                }
                let group = self.with_unit_mates(group);
                done_ns = done_ns.max(self.wbuf_destage(stream, group, ready_ns)?);
            }
        }
        Ok(done_ns)
    }

    /// Programs `group` (buffered LBAs of host stream `stream`) through the ordinary write
    /// path, from `ready_ns`; the page is programmed even if the group does not fill it, so
    /// no host data stays in a page buffer. Their DRAM is held until the programs end. On
    /// an error (a power cut) the group stays buffered.
    fn wbuf_destage(
        &mut self,
        stream: u32,
        group: Vec<u32>,
        ready_ns: Nanos,
    ) -> Result<Nanos, FtlError> {
        let entries: Vec<(u32, Entry)> = group
            .iter()
            .map(|&lpn| (lpn, self.wbuf_mut().remove(lpn).expect("buffered")))
            .collect();
        let result = self.wbuf_program(stream as usize, &entries, ready_ns);
        let wb = self.write_buffer.as_mut().expect("write buffer on");
        match result {
            Ok(done_ns) => {
                wb.in_flight.push(Reverse((done_ns, entries.len() as u64)));
                wb.in_flight_lbas += entries.len() as u64;
                self.counters.write_buffer_destaged_lbas += entries.len() as u64;
                for (lpn, entry) in entries {
                    wb.hold(lpn, done_ns, entry.data);
                }
                Ok(done_ns)
            }
            Err(e) => {
                for (lpn, e) in entries.into_iter().rev() {
                    wb.insert_with(lpn, e.stream, e.order, e.buffered_ns, e.data, true);
                }
                Err(e)
            }
        }
    }

    fn wbuf_program(
        &mut self,
        stream: usize,
        entries: &[(u32, Entry)],
        ready_ns: Nanos,
    ) -> Result<Nanos, FtlError> {
        if self.maps_units() {
            let entries: Vec<(u32, Option<&[u8]>, Nanos)> = entries
                .iter()
                .map(|(lpn, e)| (*lpn, e.data.as_deref(), e.buffered_ns))
                .collect();
            return self.destage_units(stream, &entries, ready_ns);
        }
        let mut done_ns = ready_ns;
        for (lpn, entry) in entries {
            let ready_ns = ready_ns.max(entry.buffered_ns);
            // The mapping entry changes now, not at acknowledgement.
            let mapped_ns = self.cmt_access(*lpn, 1, true, ready_ns)?;
            self.admit_physical(*lpn, self.slots_per_lpn)?;
            let end_ns = self.write_lpn(
                stream,
                *lpn,
                entry.data.as_deref(),
                ready_ns.max(mapped_ns),
                Cause::Host,
            )?;
            done_ns = done_ns.max(end_ns);
        }
        if self.streams[stream].filled > 0 {
            self.streams[stream].ready_ns = self.streams[stream].ready_ns.max(ready_ns);
            done_ns = done_ns.max(self.program_buffer(stream)?.end_ns);
        }
        Ok(done_ns)
    }

    /// Serves a read at `now_ns` of an LBA whose newest bytes are in DRAM: buffered, or
    /// destaged with its page program not yet ended (a controller keeps the data until
    /// the program succeeds, and reads it there rather than waiting for the die). Copies
    /// its bytes into `out` if asked.
    pub(crate) fn wbuf_read(&mut self, lpn: u32, now_ns: Nanos, out: Option<&mut [u8]>) -> bool {
        let Some(wb) = self.write_buffer.as_ref() else {
            return false;
        };
        let data = match wb.entries.get(&lpn) {
            Some(entry) => &entry.data,
            None => match wb.held.get(&lpn) {
                Some((end_ns, data)) if *end_ns > now_ns => data,
                _ => return false,
            },
        };
        if let Some(o) = out {
            match data {
                Some(bytes) => o.copy_from_slice(bytes),
                None => o.fill(0),
            }
        }
        self.counters.buffer_read_hits += 1;
        true
    }

    /// A trim (or a remap, for its destinations) drops the buffered versions of its LBAs
    /// (they must not reach flash later) and their destaged bytes still in DRAM.
    pub(crate) fn wbuf_discard(&mut self, lba: u64, count: u32) {
        let Some(wb) = self.write_buffer.as_mut() else {
            return;
        };
        let end = lba as u32 + count;
        let lpns: Vec<u32> = wb.entries.range(lba as u32..end).map(|(&l, _)| l).collect();
        for lpn in lpns {
            wb.remove(lpn);
        }
        // Their destaged copies must not be read from DRAM either.
        let held: Vec<u32> = wb.held.range(lba as u32..end).map(|(&l, _)| l).collect();
        for lpn in held {
            wb.held.remove(&lpn);
        }
    }

    /// At a power cut: what the buffer held, in arrival order, if it is protected (to be
    /// programmed after the scan); otherwise it is lost and counted.
    pub(crate) fn wbuf_power_loss(&mut self) -> Vec<CutEntry> {
        let Some(wb) = self.write_buffer.as_mut() else {
            return Vec::new();
        };
        let mut order: Vec<(u64, u32)> = std::mem::take(&mut wb.queues)
            .into_values()
            .flat_map(|(queue, _)| queue)
            .collect();
        order.sort_unstable();
        let mut entries = std::mem::take(&mut wb.entries);
        wb.in_flight.clear();
        wb.in_flight_lbas = 0;
        wb.held.clear();
        wb.held_ends.clear();
        wb.dram = Resource::default();
        let held: Vec<CutEntry> = order
            .into_iter()
            .filter_map(|(order, lpn)| match entries.get(&lpn) {
                Some(e) if e.order == order => {
                    entries.remove(&lpn).map(|e| (lpn, e.stream, e.data))
                }
                _ => None,
            })
            .collect();
        if wb.config.power_loss_protected {
            held
        } else {
            self.counters.write_buffer_lost_lbas += held.len() as u64;
            Vec::new()
        }
    }

    /// After the scan of a protected device: what the buffer held at the cut is
    /// programmed (the hold-up destage, charged here) and made durable.
    pub(crate) fn wbuf_hold_up(
        &mut self,
        held: Vec<CutEntry>,
        now_ns: Nanos,
    ) -> Result<Nanos, FtlError> {
        if held.is_empty() {
            return Ok(now_ns);
        }
        self.counters.write_buffer_hold_up_lbas += held.len() as u64;
        for (lpn, stream, data) in held {
            self.wbuf_mut().insert(lpn, stream, now_ns, data);
        }
        let done_ns = self.wbuf_destage_all(now_ns)?;
        let durable_ns = self.make_durable(done_ns)?;
        Ok(done_ns.max(durable_ns).max(self.nand.idle_at_ns()))
    }

    /// Checks the buffer's bookkeeping (`check_invariants`).
    pub(crate) fn wbuf_check(&self) -> Result<(), String> {
        let Some(wb) = self.write_buffer.as_ref() else {
            return Ok(());
        };
        if wb.entries.len() as u64 > wb.capacity_lbas {
            return Err(format!(
                "write buffer holds {} LBAs over its {}",
                wb.entries.len(),
                wb.capacity_lbas
            ));
        }
        if let Some((&lpn, _)) = wb.entries.iter().next_back() {
            if lpn as u64 >= self.user_lbas {
                return Err(format!("write buffer holds LBA {lpn} beyond the device"));
            }
        }
        let mut listed = 0;
        for (&stream, (queue, lbas)) in &wb.queues {
            let live = queue.iter().filter(|&&(o, l)| wb.is_live(o, l)).count() as u64;
            let of_stream = wb.entries.values().filter(|e| e.stream == stream).count() as u64;
            if live != *lbas || live != of_stream {
                return Err(format!(
                    "write buffer stream {stream}: {live} queued, {lbas} counted, \
                     {of_stream} held"
                ));
            }
            listed += live;
        }
        if listed != wb.entries.len() as u64 {
            return Err(format!(
                "write buffer queues list {listed} of {} entries",
                wb.entries.len()
            ));
        }
        // Every DRAM copy of a destaged LBA is listed for pruning at its end time.
        let listed: std::collections::BTreeSet<(Nanos, u32)> =
            wb.held_ends.iter().map(|&Reverse(pair)| pair).collect();
        if let Some((&lpn, &(end_ns, _))) = wb
            .held
            .iter()
            .find(|&(&lpn, &(end_ns, _))| !listed.contains(&(end_ns, lpn)))
        {
            return Err(format!(
                "write buffer: destaged LBA {lpn}'s DRAM copy (until {end_ns} ns) is not listed"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_takes_the_stream_of_the_oldest_lba_a_page_at_a_time() {
        let head = |stream, oldest, lbas| StreamHead {
            stream,
            oldest,
            lbas,
        };
        let fifo = DestagePolicyKind::Fifo;
        let heads = [head(0, 5, 1), head(1, 2, 7), head(2, 9, 4)];
        assert_eq!(destage_group(fifo, &heads, 3, false), Some((1, 3)));
        let heads = [head(0, 5, 1), head(2, 9, 4)];
        assert_eq!(
            destage_group(fifo, &heads, 2, false),
            None,
            "stream 0 holds less than a page"
        );
        assert_eq!(destage_group(fifo, &heads, 2, true), Some((0, 1)));
        assert_eq!(destage_group(fifo, &[], 2, true), None);
        assert_eq!(destage_group(fifo, &[head(3, 1, 0)], 2, true), None);
    }
}
