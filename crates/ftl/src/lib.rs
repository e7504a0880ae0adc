//! A page-mapping flash translation layer over the NAND model, exposed as a
//! [`BlockDevice`]: one write frontier per stream, foreground and background garbage
//! collection with pluggable victim policies, dynamic and static wear levelling, TRIM with
//! durable trim records, bad-block retirement, and power-loss recovery by OOB scan.
//!
//! Durability rules (see ARCHITECTURE.md, "Durable write path"):
//! 1. A page's OOB carries, per 4 KiB slot, the logical page it holds, and a sequence
//!    number that grows with every program. Recovery keeps, per logical page, the copy with
//!    the highest sequence number.
//! 2. A slot superseded while its page waited in the write buffer is programmed as padding,
//!    so no stale copy ever carries a newer sequence number than the live one.
//! 3. Trims and remaps are logged as mapping records in record pages (`records.rs`); a
//!    record hides every older statement about its logical page.
//! 4. Before any block is erased, every buffer and pending record is made durable, so an
//!    erase never removes the last durable copy of anything the volatile state superseded.
//!
//! The mapping (L2P, fragment lengths, reference counts of slots shared after a remap)
//! is one part with its own invariants, [`mapping::Mapping`]; REMAP is `remap.rs`.

mod blocks;
mod byref;
mod check;
mod cmt;
mod compress;
pub mod compression;
pub mod config;
mod construct;
mod counters;
pub mod csd;
mod gc;
mod host;
mod hpb;
mod mapping;
mod parts;
pub mod policy;
pub mod predictor;
mod predictor_table;
pub mod presets;
mod records;
mod recovery;
mod remap;
mod stream;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_construct;
pub mod thermal;
pub mod unit;
mod wbuf;
mod write;

use std::collections::BTreeMap;

use flashstack_block::{
    check_range, BlockDevice, BlockError, Completion, Hints, Payload, Remap, RemapExtent, LBA_SIZE,
};
use flashstack_nand::{ConfigError, FlashMedium, Nand, NandError};
use flashstack_sim::memory::LazyTable;
use flashstack_sim::{Divisor, LatencyHistogram, Nanos, Resource};
use stream::is_start;

use blocks::{BlockState, BlockTable};
pub use byref::PageSource;
pub use cmt::{
    choose_victim, demote_protected, place_on_hit, relocation_update, RelocationAction, Segment,
};
pub use config::{
    Allocation, CmtPolicyKind, DestagePolicyKind, DeviceConfig, FtlConfig, GcCollect, GcConfig,
    HostConfig, HpbConfig, MappingCacheConfig, RelocationUpdates, StreamMode, VictimPolicyKind,
    WearConfig, WriteBufferConfig,
};
pub use construct::ConstructedState;
pub use counters::FtlCounters;
use host::HostQueue;
pub use hpb::{HpbLookup, HPB_ENTRY_BYTES};
use mapping::Mapping;
pub use parts::DeviceParts;
use policy::{GcPolicy, VictimCandidate};
use records::RecordPage;
use stream::Stream;
pub use unit::{unit_update, UnitUpdate};
pub use wbuf::{destage_group, StreamHead};

/// Mapping-table value of an unmapped logical page.
pub(crate) const UNMAPPED: u32 = u32::MAX;
/// Superseded fragments remembered at most between two flushes (their bytes are dropped
/// at the flush; beyond this bound they stay until their block is erased).
pub(crate) const DEAD_FRAGMENTS_MAX: usize = 1 << 20;

/// Why a block's data is being moved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cause {
    Host,
    Gc,
    WearLevel,
    /// The rest of a mapping unit a host write updated in part, copied into the unit's
    /// new page (read-modify-write, `unit.rs`).
    Rmw,
}

/// Per-request-kind latency histograms.
#[derive(Clone, Debug, Default)]
pub struct Latencies {
    pub read: LatencyHistogram,
    pub write: LatencyHistogram,
    pub trim: LatencyHistogram,
    pub flush: LatencyHistogram,
    pub remap: LatencyHistogram,
}

/// The flash device: FTL + NAND + host interface.
pub struct Ftl {
    config: DeviceConfig,
    nand: Nand,
    policy: GcPolicy,
    units: u32,
    /// Bytes per slot, the physical mapping unit (4 KiB, or less when logical pages may
    /// take fewer bytes than 4 KiB on flash).
    slot_bytes: u32,
    /// Slots an uncompressed logical page takes.
    slots_per_lpn: u32,
    /// Logical pages per mapping unit (`ftl.mapping_unit_bytes` ÷ 4 KiB): 1 for 4 KiB
    /// mapping; the slots of a flash page when the unit is the page (`unit.rs`).
    unit_lpns: u32,
    slots_per_page: u32,
    pages_per_block: u32,
    /// Slot → page and slot → block without the hardware divide.
    per_page: Divisor,
    per_block: Divisor,
    /// Page → index in its block.
    pages_per_block_div: Divisor,
    user_lbas: u64,
    /// Logical pages' worth of flash live data may take: `user_lbas` unless the device
    /// exports more than its flash (`ftl.exported_capacity_factor`, `csd.rs`).
    budget_lbas: u64,
    /// L2P, fragment lengths, shared-slot reference counts.
    mapping: Mapping,
    /// Programmed data slots on flash per logical page (live or not): a trim record can be
    /// dropped once no older copy it hides remains. Built on the first trim (a full scan)
    /// and kept from then on; workloads without trims never pay for it.
    copies: Option<Vec<u32>>,
    blocks: BlockTable,
    streams: Vec<Stream>,
    host_streams: u32,
    next_host_die: u32,
    /// `ftl.allocation = "super-page"`: host and relocation streams stage full pages
    /// (`stream.rs`).
    super_page: bool,
    planes_per_die: u32,
    /// A wear-levelling cycle is under way (`gc.rs`, `after_erase`).
    wear_levelling: bool,
    /// Page buffers for staged pages, reused.
    spare_buffers: Vec<Box<[u8]>>,
    pending_trims: Vec<u32>,
    /// Logical pages whose current binding (an alias of a slot GC moved, or one a record
    /// page about to be erased held) must be logged before the next erase.
    pending_binds: Vec<u32>,
    /// Payloads of mapping-record pages, keyed by page. These are page contents: they
    /// survive power loss and vanish only when their block is erased or retired.
    records: BTreeMap<u32, RecordPage>,
    retire_queue: Vec<u32>,
    erases_since_wl_check: Vec<u32>,
    seq: u64,
    queue: HostQueue,
    controller: Resource,
    host_link: Resource,
    counters: FtlCounters,
    latencies: Latencies,
    powered_off: bool,
    compressor: compress::Compressor,
    /// Sum and count of the ratios (permille) written into each block: Cr(B) for caGC.
    block_ratio_sum: Vec<u64>,
    block_ratio_count: Vec<u32>,
    candidates: Vec<VictimCandidate>,
    candidate_blocks: Vec<u32>,
    relocation_slots: Vec<(u32, u32)>,
    /// The fragment GC is moving right now, so a straddling copy can be undone.
    relocation_origin: Option<(u32, u32)>,
    /// The demand-based mapping-table cache (`cmt.rs`); `None` when the whole table is in
    /// SRAM (the default). Boxed: every access takes it out of the `Ftl` and puts it
    /// back, which moves a pointer rather than the whole cache.
    mapping_cache: Option<Box<cmt::MappingCache>>,
    /// The controller write buffer (`wbuf.rs`); `None` when writes wait for their page
    /// (the default).
    write_buffer: Option<wbuf::WriteBuffer>,
    /// Superseded fragments on flash (first slot, slots, the page's sequence number)
    /// whose bytes go at the next flush (`write.rs`, `note_dead`).
    dead_fragments: Vec<(u32, u32, u64)>,
    measure_start_ns: Nanos,
    last_arrival_ns: Nanos,
    /// When the device worked during the measurement (host requests from arrival until
    /// the array drained): the energy model's busy periods. Bookkeeping only.
    activity: flashstack_sim::ActivityLog,
    /// Versions of the pages of the host write being served (pages by reference).
    content_tags: byref::ContentTags,
}

impl Ftl {
    /// Builds a device with erased flash. `store_contents` keeps page bytes (needed for
    /// reads with a buffer and for content-aware techniques).
    pub fn new(config: DeviceConfig, store_contents: bool, seed: u64) -> Result<Ftl, ConfigError> {
        config.validate()?;
        let slot_bytes = config.ftl.slot_bytes;
        let nand = Nand::with_slot_bytes(config.nand.clone(), slot_bytes, store_contents, seed)?;
        Ftl::with_nand(config, nand)
    }

    /// A device over `nand` (erased, or holding state to be rebuilt by
    /// [`Ftl::power_cycle`]); the NAND must have been built for `config.nand` with
    /// `config.ftl.slot_bytes`.
    fn with_nand(config: DeviceConfig, nand: Nand) -> Result<Ftl, ConfigError> {
        config.validate()?;
        let slot_bytes = config.ftl.slot_bytes;
        if nand.config() != &config.nand || nand.slot_bytes() != slot_bytes {
            return Err(ConfigError::new(
                "nand",
                "the flash array was built for another geometry or slot size",
            ));
        }
        let store_contents = nand.stores_contents();
        let slots_per_lpn = LBA_SIZE as u32 / slot_bytes;
        let g = nand.geometry().clone();
        let mut compressor = compress::Compressor::new(
            config.ftl.compression.as_ref().map(|c| c.policy),
            config
                .ftl
                .compression
                .as_ref()
                .map(|c| c.codec)
                .unwrap_or_default(),
            config
                .ftl
                .compression
                .as_ref()
                .map(|c| c.controller.clone())
                .unwrap_or_default(),
        )
        .map_err(|e| ConfigError::new("ftl.compression.codec", e.to_string()))?;
        compressor.sample = config
            .ftl
            .compression
            .as_ref()
            .map(|c| c.predictor_sample)
            .unwrap_or_default();
        if compressor.policy.is_some() && !store_contents {
            return Err(ConfigError::new(
                "ftl.compression",
                "compression works on page contents: the device must store them (--contents)",
            ));
        }
        debug_assert_eq!(compressor.policy.is_some(), config.compresses());
        let host_streams = host_streams(&config);
        let budget_lbas = user_capacity_lbas(&config, host_streams)?;
        let user_lbas = csd::exported_lbas(budget_lbas, config.ftl.exported_capacity_factor);
        let slots_per_page = g.page_size_bytes / slot_bytes;
        let slots_per_block = g.pages_per_block * slots_per_page;
        let mut blocks = BlockTable::new(
            g.units(),
            g.blocks_per_plane,
            slots_per_block,
            config.ftl.wear.dynamic,
        );
        debug_assert_eq!(g.units() * g.blocks_per_plane, g.blocks());
        blocks.fill_free_pools();
        let super_page = config.ftl.allocation == Allocation::SuperPage;
        let streams = stream::build_streams(
            host_streams,
            g.units(),
            g.page_size_bytes,
            g.planes_per_die,
            super_page,
        );
        Ok(Ftl {
            policy: GcPolicy::new(config.ftl.gc.policy),
            units: g.units(),
            slot_bytes,
            slots_per_lpn,
            unit_lpns: config.ftl.mapping_unit_bytes / LBA_SIZE as u32,
            slots_per_page,
            per_page: Divisor::new(slots_per_page),
            per_block: Divisor::new(slots_per_block),
            pages_per_block_div: Divisor::new(g.pages_per_block),
            pages_per_block: g.pages_per_block,
            user_lbas,
            budget_lbas,
            mapping: Mapping::new(
                // Reads UNMAPPED until written; memory follows the pages written.
                LazyTable::new(user_lbas as usize),
                (slots_per_lpn > 1).then(|| vec![0; user_lbas as usize]),
            ),
            copies: None,
            blocks,
            streams,
            host_streams,
            next_host_die: 0,
            super_page,
            planes_per_die: g.planes_per_die,
            wear_levelling: false,
            spare_buffers: Vec::new(),
            pending_trims: Vec::new(),
            pending_binds: Vec::new(),
            records: BTreeMap::new(),
            retire_queue: Vec::new(),
            erases_since_wl_check: vec![0; g.units() as usize],
            seq: 1,
            queue: HostQueue::new(config.host.queue_depth),
            controller: Resource::default(),
            host_link: Resource::default(),
            counters: FtlCounters::default(),
            latencies: Latencies::default(),
            powered_off: false,
            compressor,
            block_ratio_sum: vec![0; g.blocks() as usize],
            block_ratio_count: vec![0; g.blocks() as usize],
            candidates: Vec::new(),
            candidate_blocks: Vec::new(),
            relocation_slots: Vec::new(),
            relocation_origin: None,
            dead_fragments: Vec::new(),
            mapping_cache: cmt::MappingCache::new(
                &config.ftl.mapping_cache,
                user_lbas,
                config.ftl.mapping_unit_bytes / LBA_SIZE as u32,
                g.page_size_bytes,
                g.pages_per_block,
                g.units(),
            )
            .map(Box::new),
            write_buffer: wbuf::WriteBuffer::new(&config.ftl.write_buffer),
            measure_start_ns: 0,
            last_arrival_ns: 0,
            activity: flashstack_sim::ActivityLog::new(0),
            content_tags: Default::default(),
            nand,
            config,
        })
    }

    pub fn config(&self) -> &DeviceConfig {
        &self.config
    }
    pub fn nand(&self) -> &Nand {
        &self.nand
    }
    /// Direct access to the medium, for fault injection (power cuts) in tests and tools.
    pub fn nand_mut(&mut self) -> &mut Nand {
        &mut self.nand
    }
    pub fn counters(&self) -> &FtlCounters {
        &self.counters
    }
    pub fn latencies(&self) -> &Latencies {
        &self.latencies
    }
    pub fn policy_name(&self) -> &'static str {
        use policy::VictimPolicy;
        self.policy.name()
    }
    pub fn user_capacity_bytes(&self) -> u64 {
        self.user_lbas * LBA_SIZE as u64
    }
    /// LBAs currently mapped (holding data).
    pub fn mapped_lbas(&self) -> u64 {
        self.mapping.l2p.iter().filter(|&s| s != UNMAPPED).count() as u64
    }
    /// Whether `lba` holds data (written and not trimmed since); false beyond the device.
    pub fn is_mapped(&self, lba: u64) -> bool {
        self.mapping
            .l2p
            .get(lba as usize)
            .is_some_and(|slot| slot != UNMAPPED)
    }
    /// LBAs held in the controller write buffer, not yet destaged; `None` without one.
    pub fn write_buffer_lbas(&self) -> Option<u64> {
        self.write_buffer.as_ref().map(|wb| wb.buffered_lbas())
    }
    /// Free blocks on a die.
    pub fn free_blocks(&self, die: u32) -> u32 {
        self.blocks.free_count(die)
    }
    /// When the device last had work in flight: the end of the measured timeline so far.
    pub fn busy_until_ns(&self) -> Nanos {
        self.nand
            .idle_at_ns()
            .max(self.queue.last_completion_ns())
            .max(self.controller.busy_until_ns())
    }
    /// Start of the measurement phase (after preconditioning).
    pub fn measure_start_ns(&self) -> Nanos {
        self.measure_start_ns
    }
    pub fn last_arrival_ns(&self) -> Nanos {
        self.last_arrival_ns
    }

    /// Hints that `lba` will be accessed soon: its mapping entry is pulled towards the CPU
    /// cache so the request does not stall on it. No effect on results.
    #[inline]
    pub fn prefetch(&self, lba: u64) {
        self.mapping.l2p.prefetch(lba as usize);
    }

    /// The second stage of [`Ftl::prefetch`], a few requests later: the mapping entry is in
    /// the cache by now, so the block-table entries an overwrite will update can be pulled
    /// in too. No effect on results.
    #[inline]
    pub fn prefetch_block_of(&self, lba: u64) {
        let Some(slot) = self.mapping.l2p.get(lba as usize) else {
            return;
        };
        if slot != UNMAPPED {
            self.blocks.prefetch(self.block_of_slot(slot));
        }
    }

    /// Most of the device is about to be written (preconditioning a large fill): its
    /// lazily built tables are advised to use huge pages from here on, which keeps TLB
    /// misses out of the hot path once they are dense. A speed hint; no effect on results.
    pub fn expect_dense(&self) {
        self.mapping.l2p.advise_dense();
        self.nand.expect_dense();
    }

    /// Starts a measurement phase: counters and histograms restart, flash state (data,
    /// wear, free space) is kept. Used after preconditioning.
    pub fn reset_measurement(&mut self) {
        self.counters = FtlCounters::default();
        self.latencies = Latencies::default();
        self.nand.reset_counters();
        self.controller.reset_busy_total();
        self.host_link.reset_busy_total();
        self.measure_start_ns = self.busy_until_ns().max(self.last_arrival_ns);
        self.activity = flashstack_sim::ActivityLog::new(self.measure_start_ns);
    }

    /// The device's busy periods since the measurement started.
    pub fn activity(&self) -> &flashstack_sim::ActivityLog {
        &self.activity
    }

    /// A request ran from `arrival_ns` to `complete_ns`; the device is busy until its
    /// array drains too (a buffered write completes before its page is programmed).
    fn note_activity(&mut self, arrival_ns: Nanos, complete_ns: Nanos) {
        let end_ns = complete_ns.max(self.nand.idle_at_ns());
        self.activity.note(arrival_ns, end_ns);
    }

    fn begin(&mut self, arrival_ns: Nanos) -> Result<(), BlockError> {
        if self.powered_off || !self.nand.is_powered() {
            self.powered_off = true;
            return Err(BlockError::PowerLoss);
        }
        self.last_arrival_ns = self.last_arrival_ns.max(arrival_ns);
        self.wbuf_drain(arrival_ns).map_err(|e| self.fail(e))?;
        self.background_gc(arrival_ns).map_err(|e| self.fail(e))
    }

    /// Converts a NAND error into the block-level error and poisons the device on power
    /// loss: nothing may run until `power_cycle`.
    fn fail(&mut self, error: FtlError) -> BlockError {
        match error {
            FtlError::Nand(NandError::PowerLoss) => {
                self.powered_off = true;
                BlockError::PowerLoss
            }
            FtlError::Nand(e) => BlockError::NoSpace {
                reason: format!("unrecoverable flash failure: {e}"),
            },
            FtlError::NoSpace(reason) => BlockError::NoSpace { reason },
            FtlError::Corrupt(reason) => BlockError::Unreadable { reason },
        }
    }

    /// Counts the data copies of every logical page on flash (first trim, or recovery with
    /// trim records present).
    fn build_copies(&mut self) {
        self.copies = Some(self.count_copies_on_flash());
    }

    /// Programmed data slots per logical page over every good block, live or not.
    pub(crate) fn count_copies_on_flash(&self) -> Vec<u32> {
        use flashstack_nand::oob_flags::{CORRUPT, TRIM_RECORD};
        let skip = CORRUPT | TRIM_RECORD;
        let mut copies = vec![0u32; self.user_lbas as usize];
        for block in 0..self.config.nand.geometry.blocks() {
            if self.nand.is_bad(block) {
                continue;
            }
            let first = self.nand.first_page(block);
            for page in first..first + self.nand.programmed_pages(block) {
                let Some(oob) = self.nand.oob(page) else {
                    continue;
                };
                if oob.flags & skip != 0 {
                    continue;
                }
                let starts = oob.lpns.iter().filter(|&&l| is_start(l));
                for &lpn in starts {
                    copies[lpn as usize] += 1;
                }
            }
        }
        // Binds are statements about their logical page too: a trim must hide them.
        for records in self.records.values() {
            for &(lpn, _) in records.binds.iter() {
                copies[lpn as usize] += 1;
            }
        }
        copies
    }

    /// Slots the fragment of `lpn` takes (it must be mapped).
    #[inline]
    pub(crate) fn len_of(&self, lpn: u32) -> u32 {
        self.mapping.len_of(lpn)
    }

    #[inline]
    pub(crate) fn set_len(&mut self, lpn: u32, len: u32) {
        self.mapping.set_len(lpn, len)
    }

    #[inline]
    fn block_of_slot(&self, slot: u32) -> u32 {
        self.per_block.div(slot)
    }
    #[inline]
    fn page_of_slot(&self, slot: u32) -> u32 {
        self.per_page.div(slot)
    }
    /// The slot's index inside its page.
    #[inline]
    pub(crate) fn slot_in_page(&self, slot: u32) -> u32 {
        self.per_page.rem(slot)
    }
}

/// Pulls the cache line holding `value` towards the CPU (a hint; never changes results).
#[inline]
pub(crate) fn prefetch_line<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching a valid reference's address has no side effects.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(value as *const T as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

/// Internal errors; mapped to [`BlockError`] at the interface.
#[derive(Debug)]
pub(crate) enum FtlError {
    Nand(NandError),
    NoSpace(String),
    /// Stored bytes that do not decode (a compressed fragment that fails to decompress).
    Corrupt(String),
}

impl From<NandError> for FtlError {
    fn from(e: NandError) -> Self {
        FtlError::Nand(e)
    }
}

/// User capacity: physical good slots ÷ (1 + OP), and never more than the flash minus the
/// blocks the FTL must hold back (frontiers and the GC reserve) on every die.
/// Host frontiers (open blocks) each die holds back: a compressing device's logs by
/// compression ratio, else the stream mode's.
pub(crate) fn host_streams(config: &DeviceConfig) -> u32 {
    if config.compresses() {
        compress::COMPRESSION_HOST_STREAMS
    } else {
        policy::host_stream_count(config.ftl.streams, config.ftl.streams_max)
    }
}

pub(crate) fn user_capacity_lbas(
    config: &DeviceConfig,
    host_streams: u32,
) -> Result<u64, ConfigError> {
    let g = &config.nand.geometry;
    // Capacities in 4 KiB logical blocks, whatever the slot size.
    let slots_per_block = (g.pages_per_block * g.page_size_bytes) as u64 / LBA_SIZE as u64;
    let physical = g.raw_bytes() / LBA_SIZE as u64;
    let by_op = (physical as f64 / (1.0 + config.ftl.overprovisioning_ratio)).floor() as u64;
    let held_back_blocks = (config.ftl.gc.foreground_free_blocks + host_streams + 2) as u64;
    let reserve = g.units() as u64 * held_back_blocks * slots_per_block;
    let user = by_op.min(physical.saturating_sub(reserve));
    if user == 0 {
        return Err(ConfigError::new(
            "geometry",
            format!(
                "too small: each die must hold back {held_back_blocks} blocks for frontiers \
                 and GC, leaving no user capacity"
            ),
        ));
    }
    Ok(user)
}

impl BlockDevice for Ftl {
    fn capacity_lbas(&self) -> u64 {
        self.user_lbas
    }

    fn write(
        &mut self,
        arrival_ns: Nanos,
        lba: u64,
        payload: Payload<'_>,
        hints: Hints,
    ) -> Result<Completion, BlockError> {
        if let Payload::Bytes(bytes) = payload {
            if bytes.len() % LBA_SIZE != 0 {
                return Err(BlockError::Misaligned { len: bytes.len() });
            }
        }
        check_range(lba, payload.lba_count(), self.user_lbas)?;
        self.begin(arrival_ns)?;
        let result = match self.write_buffer {
            Some(_) => self.buffered_write(arrival_ns, lba, payload, hints),
            None if self.maps_units() => self.host_write_units(arrival_ns, lba, payload, hints),
            None => self.host_write(arrival_ns, lba, payload, hints),
        };
        let completion = result.map_err(|e| self.fail(e))?;
        self.latencies
            .write
            .record(completion.complete_ns - arrival_ns);
        self.note_activity(arrival_ns, completion.complete_ns);
        Ok(completion)
    }

    fn read(
        &mut self,
        arrival_ns: Nanos,
        lba: u64,
        count: u32,
        out: Option<&mut [u8]>,
    ) -> Result<Completion, BlockError> {
        check_range(lba, count, self.user_lbas)?;
        if let Some(buffer) = &out {
            if buffer.len() != count as usize * LBA_SIZE {
                return Err(BlockError::BadBuffer {
                    len: buffer.len(),
                    count,
                });
            }
            if !self.nand.stores_contents() {
                return Err(BlockError::ContentsNotStored);
            }
        }
        self.begin(arrival_ns)?;
        let completion = self
            .host_read(arrival_ns, lba, count, out)
            .map_err(|e| self.fail(e))?;
        self.latencies
            .read
            .record(completion.complete_ns - arrival_ns);
        self.note_activity(arrival_ns, completion.complete_ns);
        Ok(completion)
    }

    fn trim(&mut self, arrival_ns: Nanos, lba: u64, count: u32) -> Result<Completion, BlockError> {
        check_range(lba, count, self.user_lbas)?;
        self.begin(arrival_ns)?;
        let completion = self
            .host_trim(arrival_ns, lba, count)
            .map_err(|e| self.fail(e))?;
        self.latencies
            .trim
            .record(completion.complete_ns - arrival_ns);
        self.note_activity(arrival_ns, completion.complete_ns);
        Ok(completion)
    }

    fn flush(&mut self, arrival_ns: Nanos) -> Result<Completion, BlockError> {
        self.begin(arrival_ns)?;
        let completion = self.host_flush(arrival_ns).map_err(|e| self.fail(e))?;
        self.latencies
            .flush
            .record(completion.complete_ns - arrival_ns);
        self.note_activity(arrival_ns, completion.complete_ns);
        Ok(completion)
    }

    fn as_remap(&mut self) -> Option<&mut dyn Remap> {
        Some(self)
    }

    fn physical_free_bytes(&self) -> Option<u64> {
        self.physical_free()
    }

    fn physical_budget_bytes(&self) -> Option<u64> {
        (self.user_lbas > self.budget_lbas)
            .then(|| self.budget_lbas * flashstack_block::LBA_SIZE as u64)
    }
}

impl Remap for Ftl {
    fn remap_lbas_max(&self) -> u32 {
        self.bind_entries_per_page() as u32
    }

    fn remap_extents(
        &mut self,
        arrival_ns: Nanos,
        extents: &[RemapExtent],
    ) -> Result<Completion, BlockError> {
        let max = self.remap_lbas_max();
        flashstack_block::check_remap_extents(extents, self.user_lbas, max)?;
        if self.maps_units() {
            return Err(BlockError::Unsupported {
                operation: "remap",
                reason: "a page-sized mapping unit (ftl.mapping_unit_bytes) keeps each unit's \
                         logical pages in one flash page; remap needs 4 KiB mapping"
                    .into(),
            });
        }
        if self.compression_active() {
            return Err(BlockError::Unsupported {
                operation: "remap",
                reason: "a compressing FTL stores pages as variable-length fragments; remap \
                         is implemented for uncompressed mapping only"
                    .into(),
            });
        }
        self.begin(arrival_ns)?;
        let completion = self
            .host_remap(arrival_ns, extents)
            .map_err(|e| self.fail(e))?;
        self.latencies
            .remap
            .record(completion.complete_ns - arrival_ns);
        self.note_activity(arrival_ns, completion.complete_ns);
        Ok(completion)
    }
}
