//! The NAND flash array: geometry, timing on plane and channel resources, energy, wear,
//! stored page bytes and OOB, and injected faults (program/erase failures, read errors,
//! power cuts).
//!
//! Parallelism: each plane is a parallel unit with its own `busy_until` (multi-plane and
//! independent-plane operation are approximated as planes working independently); the
//! planes of a die share that die's channel. Addresses: block `b` lives on unit
//! `b / blocks_per_plane`; unit `u` is a plane of die `u / planes_per_die`, and die `d`
//! hangs off channel `d % channels`, so consecutive dies sit on different channels. Page `p` of the device is
//! page `p % pages_per_block` of block `p / pages_per_block`; slot `s` (a 4 KiB quarter, half
//! or whole of a page) is slot `s % slots_per_page` of page `s / slots_per_page`.

pub mod config;
mod parts;
mod store;
mod timing;

use std::ops::Range;

use flashstack_sim::{Divisor, Nanos, Rng};
use serde::Serialize;
use thiserror::Error;

pub use config::{
    ChannelModel, ConfigError, DieRules, Endurance, Energy, Faults, Geometry, NandConfig,
    PageTypeTiming, Timing, MAX_SLOTS_PER_PAGE, MIN_SLOT_BYTES, SLOT_SIZE,
};
pub use parts::NandParts;
use store::FrameStore;
pub use store::{ContentRef, SlotOracle, StoredFrames, FRAMES_PER_CHUNK};
use timing::{ArrayTiming, NO_PAGE_INDEX};

/// OOB value of a slot that holds no logical data (padding, or a metadata page).
pub const NO_LPN: u32 = u32::MAX;
/// A slot whose bytes come from the host rather than from another physical slot.
pub const NO_SOURCE: u32 = u32::MAX;

/// OOB flag bits.
pub mod oob_flags {
    /// The page was programmed.
    pub const PROGRAMMED: u8 = 1;
    /// The page's contents are undefined: a torn or failed program. ECC rejects it.
    pub const CORRUPT: u8 = 2;
    /// The page carries an FTL trim record rather than user data.
    pub const TRIM_RECORD: u8 = 4;
    /// The page was written by garbage collection or wear levelling (informational).
    pub const RELOCATED: u8 = 8;
}

#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
pub enum NandError {
    #[error("power was cut during or before this operation")]
    PowerLoss,
    #[error("program failed on block {block}")]
    ProgramFailed { block: u32 },
    #[error("erase failed on block {block}; the block is now bad")]
    EraseFailed { block: u32 },
}

/// An operation [`Nand::occupy_unit`] charges to a die.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnitOp {
    Read,
    Program,
    Erase,
}

/// When an operation held its die: it started at `start_ns` and the data was ready (read)
/// or durable (program, erase) at `end_ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpTiming {
    pub start_ns: Nanos,
    pub end_ns: Nanos,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadOutcome {
    pub timing: OpTiming,
    /// The first read failed ECC and a retry succeeded; the block is flagged as failing.
    pub retried: bool,
}

/// The spare-area contents of one page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageOob<'a> {
    /// Logical page number per slot (`NO_LPN` for padding).
    pub lpns: &'a [u32],
    pub seq: u64,
    pub flags: u8,
}

/// Operation counts and energy inputs since the last `reset_counters`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct NandCounters {
    pub page_reads: u64,
    pub oob_reads: u64,
    pub page_programs: u64,
    pub block_erases: u64,
    pub transfer_bytes: u64,
    pub read_retries: u64,
    pub program_failures: u64,
    pub erase_failures: u64,
}

/// Multi-plane command counts under one command per die (`nand.die_rules`), since the last
/// `reset_counters`: commands that ran on two or more planes of a die, and the operations
/// that joined another plane's command (read, program and erase commands are the page
/// operations less the joins). Zero under independent planes; under independent plane
/// reads, programs and erases only (reads join nothing).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct DieCommandCounters {
    pub multi_plane_reads: u64,
    pub multi_plane_programs: u64,
    pub multi_plane_erases: u64,
    pub plane_joins_read: u64,
    pub plane_joins_program: u64,
    pub plane_joins_erase: u64,
}

/// A NAND flash array.
///
/// Physics: pages of a block are programmed strictly in order, each once between erases;
/// an erase resets a whole block and adds one P/E cycle. Power loss: programmed pages and
/// erased blocks survive; a program or erase under way when power is cut leaves its page
/// (or block) corrupt, which a later read detects. Wear (P/E counts, bad blocks) survives.
pub trait FlashMedium {
    fn geometry(&self) -> &Geometry;
    /// Programs page `page` (the next unprogrammed page of its block). `data`, when given, is
    /// `lpns.len() × 4 KiB` of bytes; slots with `NO_LPN` store nothing.
    fn program(
        &mut self,
        page: u32,
        oob: PageOob<'_>,
        data: Option<&[u8]>,
        ready_ns: Nanos,
    ) -> Result<OpTiming, NandError> {
        self.program_relocating(
            page,
            oob,
            data,
            &[NO_SOURCE; MAX_SLOTS_PER_PAGE as usize],
            ready_ns,
        )
    }
    /// Like `program`, but slot `i` with `sources[i] != NO_SOURCE` (`sources` has at least
    /// one entry per slot) takes its bytes from that programmed slot (garbage collection moving data through the controller); the bytes
    /// in `data` for such slots are ignored.
    fn program_relocating(
        &mut self,
        page: u32,
        oob: PageOob<'_>,
        data: Option<&[u8]>,
        sources: &[u32],
        ready_ns: Nanos,
    ) -> Result<OpTiming, NandError>;
    /// Reads `slots` of `page` into `out` (when given), charging tR once and the channel
    /// pro rata for the slots moved.
    fn read(
        &mut self,
        page: u32,
        slots: Range<u32>,
        out: Option<&mut [u8]>,
        ready_ns: Nanos,
    ) -> Result<ReadOutcome, NandError>;
    fn erase(&mut self, block: u32, ready_ns: Nanos) -> Result<OpTiming, NandError>;
}

#[derive(Clone, Copy, Debug, Default)]
struct PowerState {
    off: bool,
    cut_after_ops: Option<u64>,
    /// The operation an armed cut tore, until power returns.
    torn: Option<TornOp>,
}

/// The operation a power cut tore (for crash tests to see where their cuts landed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TornOp {
    /// A page program; `flags` are the OOB flags it was writing (`oob_flags`).
    Program {
        page: u32,
        flags: u8,
    },
    Erase {
        block: u32,
    },
}

/// The flash array model. See [`FlashMedium`] for its physics.
pub struct Nand {
    config: NandConfig,
    slot_bytes: u32,
    slots_per_page: u32,
    pages_per_block: u32,
    blocks_per_unit: u32,
    /// The divisions of the address arithmetic, without the hardware divide.
    per_block: Divisor,
    per_unit: Divisor,
    /// Channel time to move `n` slots, for `n` in 0..=slots_per_page.
    transfer_ns: Vec<Nanos>,
    /// Planes (or dies) and channels: when each operation holds them.
    timing: ArrayTiming,
    erase_count: Vec<u32>,
    write_ptr: Vec<u16>,
    bad: Vec<bool>,
    failing: Vec<bool>,
    page_flags: Vec<u8>,
    /// Each page's sequence number, except in the blocks `first_seq` numbers.
    page_seq: Vec<u64>,
    /// Per block, 0, or the sequence number of its first page when its pages carry
    /// consecutive numbers not stored in `page_seq` (a constructed device,
    /// [`Nand::from_consecutive_parts`]): 537 MB of `page_seq` left untouched on a 512 GiB
    /// array. A block's numbers are written out before any of its pages changes.
    first_seq: Vec<u64>,
    /// The logical page of each slot of every *programmed* page (`NO_LPN` for padding).
    /// The entries of an unprogrammed page are unspecified (zero until first written,
    /// `NO_LPN` after an erase) and never read: the table starts as untouched zero pages.
    /// [`Nand::to_parts`] writes them as `NO_LPN`.
    slot_lpn: Vec<u32>,
    store: Option<FrameStore>,
    rng: Rng,
    power: PowerState,
    counters: NandCounters,
    /// Every fault probability is zero (the configuration never changes after building).
    fault_free: bool,
    /// The latest end of any operation: when the array goes idle. Kept as operations are
    /// scheduled so the idle check costs O(1) however many planes there are.
    idle_at_ns: Nanos,
}

impl Nand {
    /// Builds an erased array. With `store_contents` the bytes of every programmed slot are
    /// kept; without, the model keeps addresses only (reads return zeros).
    pub fn new(config: NandConfig, store_contents: bool, seed: u64) -> Result<Self, ConfigError> {
        Nand::with_slot_bytes(config, SLOT_SIZE, store_contents, seed)
    }

    /// Builds an erased array whose OOB records a logical page per `slot_bytes` of each page
    /// (512 to 4096, a power of two): 4 KiB slots for plain page mapping, smaller ones for
    /// compressed pages that share a flash page.
    pub fn with_slot_bytes(
        config: NandConfig,
        slot_bytes: u32,
        store_contents: bool,
        seed: u64,
    ) -> Result<Self, ConfigError> {
        config.validate()?;
        let g = &config.geometry;
        if !(MIN_SLOT_BYTES..=SLOT_SIZE).contains(&slot_bytes) || !slot_bytes.is_power_of_two() {
            return Err(ConfigError::new(
                "slot_bytes",
                "must be 512, 1024, 2048 or 4096",
            ));
        }
        let slots_per_page = g.page_size_bytes / slot_bytes;
        let slots = g.pages() * slots_per_page as u64;
        if slots >= u32::MAX as u64 {
            return Err(ConfigError::new(
                "geometry",
                format!("{slots} slots of {slot_bytes} bytes exceed the 2^32-1 addressable"),
            ));
        }
        let blocks = g.blocks() as usize;
        let pages = g.pages() as usize;
        let transfer_ns = (0..=slots_per_page as u64)
            .map(|n| config.timing.transfer_ns_per_page * n / slots_per_page as u64)
            .collect();
        Ok(Nand {
            per_block: Divisor::new(g.pages_per_block),
            per_unit: Divisor::new(g.blocks_per_plane),
            transfer_ns,
            slot_bytes,
            slots_per_page,
            pages_per_block: g.pages_per_block,
            blocks_per_unit: g.blocks_per_plane,
            timing: ArrayTiming::new(&config),
            erase_count: vec![0; blocks],
            write_ptr: vec![0; blocks],
            bad: vec![false; blocks],
            failing: vec![false; blocks],
            // Zero pages until written: a 512 GiB array is built in microseconds and its
            // spare areas take memory only where pages were programmed.
            page_flags: flashstack_sim::memory::zeroed_table(pages),
            page_seq: flashstack_sim::memory::zeroed_table(pages),
            first_seq: vec![0; blocks],
            slot_lpn: flashstack_sim::memory::zeroed_table(slots as usize),
            store: store_contents.then(|| FrameStore::new(slots, slot_bytes)),
            rng: Rng::new(seed ^ 0x4E41_4E44),
            power: PowerState::default(),
            counters: NandCounters::default(),
            idle_at_ns: 0,
            fault_free: {
                let f = &config.faults;
                f.program_fail_probability <= 0.0
                    && f.erase_fail_probability <= 0.0
                    && f.read_error_probability <= 0.0
            },
            config,
        })
    }

    pub fn config(&self) -> &NandConfig {
        &self.config
    }
    /// Bytes per OOB slot (the FTL's physical mapping unit).
    #[inline]
    pub fn slot_bytes(&self) -> u32 {
        self.slot_bytes
    }
    #[inline]
    pub fn slots_per_page(&self) -> u32 {
        self.slots_per_page
    }
    #[inline]
    pub fn stores_contents(&self) -> bool {
        self.store.is_some()
    }
    #[inline]
    pub fn counters(&self) -> &NandCounters {
        &self.counters
    }
    /// Multi-plane command counts (one command per die).
    pub fn die_command_counters(&self) -> &DieCommandCounters {
        self.timing.counters()
    }
    pub fn reset_counters(&mut self) {
        self.counters = NandCounters::default();
        self.timing.reset_counters();
    }

    #[inline]
    pub fn unit_of_block(&self, block: u32) -> u32 {
        self.per_unit.div(block)
    }
    #[inline]
    pub fn block_of_page(&self, page: u32) -> u32 {
        self.per_block.div(page)
    }
    #[inline]
    pub fn first_page(&self, block: u32) -> u32 {
        block * self.pages_per_block
    }
    pub fn blocks_of_unit(&self, unit: u32) -> Range<u32> {
        unit * self.blocks_per_unit..(unit + 1) * self.blocks_per_unit
    }
    #[inline]
    pub fn erase_count(&self, block: u32) -> u32 {
        self.erase_count[block as usize]
    }
    pub fn erase_counts(&self) -> &[u32] {
        &self.erase_count
    }
    #[inline]
    pub fn is_bad(&self, block: u32) -> bool {
        self.bad[block as usize]
    }
    /// A read of this block needed a retry: its data should be moved and the block retired.
    pub fn is_failing(&self, block: u32) -> bool {
        self.failing[block as usize]
    }
    /// Marks a block bad (retired by the FTL); it is never programmed or erased again.
    pub fn retire(&mut self, block: u32) {
        self.bad[block as usize] = true;
    }
    /// Pages programmed in `block` since its last erase.
    #[inline]
    pub fn programmed_pages(&self, block: u32) -> u32 {
        self.write_ptr[block as usize] as u32
    }

    /// The spare area of a page, or `None` for an unprogrammed page. This is the
    /// zero-cost view the FTL's own tables mirror; recovery pays for its scan with
    /// [`Nand::read_oob`].
    #[inline]
    pub fn oob(&self, page: u32) -> Option<PageOob<'_>> {
        let flags = self.page_flags[page as usize];
        if flags & oob_flags::PROGRAMMED == 0 {
            return None;
        }
        let first = (page * self.slots_per_page) as usize;
        Some(PageOob {
            lpns: &self.slot_lpn[first..first + self.slots_per_page as usize],
            seq: self.page_seq_of(page),
            flags,
        })
    }

    /// A programmed page's sequence number, stored or implicit (`first_seq`).
    #[inline]
    fn page_seq_of(&self, page: u32) -> u64 {
        let block = self.block_of_page(page);
        match self.first_seq[block as usize] {
            0 => self.page_seq[page as usize],
            first => first + (page - self.first_page(block)) as u64,
        }
    }

    /// Writes out the implicit sequence numbers of `page`'s block, before the page changes.
    #[inline]
    fn own_page_seq(&mut self, page: u32) {
        let block = self.block_of_page(page);
        let first = self.first_seq[block as usize];
        if first != 0 {
            self.first_seq[block as usize] = 0;
            let first_page = self.first_page(block) as usize;
            for (i, seq) in self.page_seq[first_page..first_page + self.pages_per_block as usize]
                .iter_mut()
                .enumerate()
            {
                *seq = first + i as u64;
            }
        }
    }

    /// Every page's sequence number, the implicit ones written out.
    pub(crate) fn page_seqs(&self) -> Vec<u64> {
        let mut seqs = self.page_seq.clone();
        let ppb = self.pages_per_block as usize;
        for (block, &first) in self.first_seq.iter().enumerate() {
            if first != 0 {
                for (i, seq) in seqs[block * ppb..(block + 1) * ppb].iter_mut().enumerate() {
                    *seq = first + i as u64;
                }
            }
        }
        seqs
    }

    /// The spare areas of `block`'s programmed pages, for a scan of the whole block: each
    /// page's flags, and the logical page of each of their slots.
    #[inline]
    pub fn block_oob(&self, block: u32) -> (&[u8], &[u32]) {
        let first = self.first_page(block) as usize;
        let pages = self.programmed_pages(block) as usize;
        let spp = self.slots_per_page as usize;
        (
            &self.page_flags[first..first + pages],
            &self.slot_lpn[first * spp..(first + pages) * spp],
        )
    }

    /// Cache hints for the stored-bytes bookkeeping of `block`'s programmed slots, before GC
    /// moves (shares) and erases them. No effect on results.
    #[inline]
    pub fn prefetch_block_contents(&self, block: u32) {
        if let Some(store) = &self.store {
            let first = self.first_page(block) as u64 * self.slots_per_page as u64;
            let slots = self.programmed_pages(block) as u64 * self.slots_per_page as u64;
            store.prefetch_refs(first..first + slots);
        }
    }

    /// Most pages are about to be programmed (a device being preconditioned): the spare-area
    /// tables, built lazily so an array that holds little takes little memory, are advised
    /// to use huge pages for the part not yet touched. A speed hint; no effect on results.
    pub fn expect_dense(&self) {
        use flashstack_sim::memory::advise_dense;
        advise_dense(&self.page_flags);
        advise_dense(&self.page_seq);
        advise_dense(&self.slot_lpn);
        if let Some(store) = &self.store {
            store.advise_dense();
        }
    }

    /// Reads only the spare area (a recovery scan): tR plus a short transfer.
    pub fn read_oob(&mut self, page: u32, ready_ns: Nanos) -> Result<OpTiming, NandError> {
        self.check_power()?;
        let unit = self.unit_of_block(self.block_of_page(page));
        let read_ns = self.read_latency_ns(page);
        let timing = self.timing.sense_only(unit, ready_ns, read_ns);
        self.note_end(timing.end_ns);
        self.counters.oob_reads += 1;
        Ok(timing)
    }

    /// Occupies a die with an operation on a page the FTL models outside this array (a
    /// mapping-cache translation page, `ftl/src/cmt.rs`): the die and its channel are busy
    /// as for a real read, program or erase of one page, but no page state, counter or
    /// power-cut countdown changes. Fails only when power is off.
    pub fn occupy_unit(
        &mut self,
        unit: u32,
        op: UnitOp,
        ready_ns: Nanos,
    ) -> Result<OpTiming, NandError> {
        self.check_power()?;
        let t = &self.config.timing;
        let (read_ns, program_ns, erase_ns) = (t.read_ns, t.program_ns, t.erase_ns);
        let xfer_ns = self.transfer_ns(self.slots_per_page);
        // Translation pages are not in the array: no page offset, so they join nothing.
        let timing = match op {
            UnitOp::Read => self
                .timing
                .read(unit, NO_PAGE_INDEX, ready_ns, read_ns, xfer_ns),
            UnitOp::Program => {
                self.timing
                    .program(unit, NO_PAGE_INDEX, ready_ns, xfer_ns, program_ns)
            }
            UnitOp::Erase => self.timing.erase_unjoined(unit, ready_ns, erase_ns),
        };
        self.note_end(timing.end_ns);
        Ok(timing)
    }

    /// Erase-before-write and in-order programming are invariants of the medium: an FTL
    /// that breaks them has a bug, so the simulator stops rather than carry on.
    #[inline]
    fn assert_programmable(&self, block: u32, index_in_block: u32) {
        assert!(!self.bad[block as usize], "program of bad block {block}");
        assert_eq!(
            self.write_ptr[block as usize] as u32, index_in_block,
            "out-of-order or repeated program of page {index_in_block} in block {block}"
        );
    }

    /// True when no operation can fail, tear or be refused: power is on, no cut is armed
    /// and every fault probability is zero. Only then may [`Nand::relocate_page`] be used.
    #[inline]
    pub fn is_infallible(&self) -> bool {
        self.fault_free && !self.power.off && self.power.cut_after_ops.is_none()
    }

    /// Garbage collection's copy of one-slot pages into consecutive pages of one block:
    /// for each `(from, lpn)` of `moves` in order, reads page `from` (tR, then the
    /// channel) and programs it into the next page from `to` on, with OOB `(lpn, seq,
    /// flags)` and `seq` counting up from the given one; stored bytes are shared rather
    /// than copied. Exactly the timing, counters and state of `read(from, 0..1, None,
    /// now_ns)` then `program_relocating(…, sources = [from], ready_ns = read end)` per
    /// move, without their fault and power checks: valid only for one-slot pages of one
    /// unit while [`Nand::is_infallible`] holds (asserted). Returns the
    /// last program's timing.
    pub fn relocate_run(
        &mut self,
        moves: &[(u32, u32)],
        to: u32,
        seq: u64,
        flags: u8,
        now_ns: Nanos,
    ) -> OpTiming {
        assert!(self.is_infallible() && self.slots_per_page == 1);
        let (block, index_in_block) = self.per_block.div_rem(to);
        let run = moves.len() as u32;
        assert!(run >= 1 && index_in_block + run <= self.pages_per_block);
        self.assert_programmable(block, index_in_block);
        let unit = self.unit_of_block(block);
        let xfer_ns = self.transfer_ns(1);
        let mut last = OpTiming {
            start_ns: 0,
            end_ns: 0,
        };
        for (k, &(from, lpn)) in moves.iter().enumerate() {
            let page = to + k as u32;
            debug_assert_eq!(self.unit_of_block(self.block_of_page(from)), unit);
            // The die senses `from`, then holds it until the channel has moved it; the
            // data then goes back over the channel and the die programs it.
            let read_ns = self.read_latency_ns(from);
            let program_ns = self.program_latency_ns(page);
            let from_index = self.per_block.rem(from);
            let read = self.timing.read(unit, from_index, now_ns, read_ns, xfer_ns);
            let index = index_in_block + k as u32;
            last = self
                .timing
                .program(unit, index, read.end_ns, xfer_ns, program_ns);
            self.own_page_seq(page);
            self.page_flags[page as usize] = flags | oob_flags::PROGRAMMED;
            self.page_seq[page as usize] = seq + k as u64;
            self.slot_lpn[page as usize] = lpn;
            if let Some(store) = self.store.as_mut() {
                store.share(page as u64, from as u64);
            }
        }
        self.note_end(last.end_ns);
        self.write_ptr[block as usize] += run as u16;
        self.counters.page_reads += run as u64;
        self.counters.page_programs += run as u64;
        self.counters.transfer_bytes +=
            run as u64 * (self.slot_bytes + self.config.geometry.page_size_bytes) as u64;
        last
    }

    /// Programs one-slot page `page` with OOB `(lpn, seq, flags)` and, when contents are
    /// stored, `data` (4 KiB). Exactly the timing, counters and state of
    /// `program(page, …, data, ready_ns)` without its fault and power checks: valid only
    /// for one-slot pages while [`Nand::is_infallible`] holds (asserted).
    #[inline]
    pub fn program_page(
        &mut self,
        page: u32,
        lpn: u32,
        seq: u64,
        flags: u8,
        data: Option<&[u8]>,
        ready_ns: Nanos,
    ) -> OpTiming {
        assert!(self.is_infallible() && self.slots_per_page == 1);
        let (block, index_in_block) = self.per_block.div_rem(page);
        self.assert_programmable(block, index_in_block);
        let unit = self.unit_of_block(block);
        let xfer_ns = self.transfer_ns(1);
        let program_ns = self.program_latency_ns(page);
        let OpTiming { start_ns, end_ns } =
            self.timing
                .program(unit, index_in_block, ready_ns, xfer_ns, program_ns);
        self.note_end(end_ns);
        self.write_ptr[block as usize] += 1;
        self.counters.page_programs += 1;
        self.counters.transfer_bytes += self.config.geometry.page_size_bytes as u64;
        self.own_page_seq(page);
        self.page_flags[page as usize] = flags | oob_flags::PROGRAMMED;
        self.page_seq[page as usize] = seq;
        self.slot_lpn[page as usize] = lpn;
        if let (Some(store), Some(bytes)) = (self.store.as_mut(), data) {
            assert_eq!(bytes.len(), self.slot_bytes as usize);
            if lpn != NO_LPN {
                store.put(page as u64, bytes);
            }
        }
        OpTiming { start_ns, end_ns }
    }

    /// Arms a power cut: the `ops`-th program or erase from now is torn and every later
    /// operation fails with `PowerLoss` until [`Nand::power_on`].
    pub fn arm_power_cut(&mut self, ops: u64) {
        assert!(ops >= 1, "a power cut must tear some operation");
        self.power.cut_after_ops = Some(ops);
    }

    /// Cancels an armed power cut that has not fired.
    pub fn disarm_power_cut(&mut self) {
        self.power.cut_after_ops = None;
    }

    /// Cuts power now, between operations.
    pub fn cut_power(&mut self) {
        self.power.off = true;
        self.power.cut_after_ops = None;
    }

    #[inline]
    pub fn is_powered(&self) -> bool {
        !self.power.off
    }

    /// The operation the last armed cut tore (`None` after a cut between operations, and
    /// once power is back).
    pub fn torn_op(&self) -> Option<TornOp> {
        self.power.torn
    }

    /// Restores power. Die and channel queues are empty: in-flight work died with the power.
    pub fn power_on(&mut self, now_ns: Nanos) {
        // Announced contents of pages the controller had buffered died with it.
        if let Some(store) = self.store.as_mut() {
            store.forget_expected(0..u64::MAX);
        }
        self.power = PowerState::default();
        self.timing.power_on(now_ns);
        self.idle_at_ns = self.timing.busy_until_max_ns();
    }

    #[inline]
    pub fn unit_busy_until_ns(&self, unit: u32) -> Nanos {
        self.timing.unit_busy_until_ns(unit)
    }

    /// The latest `busy_until` over all planes and channels: when the array goes idle.
    #[inline]
    pub fn idle_at_ns(&self) -> Nanos {
        self.idle_at_ns
    }

    #[inline]
    fn note_end(&mut self, end_ns: Nanos) -> Nanos {
        self.idle_at_ns = self.idle_at_ns.max(end_ns);
        end_ns
    }

    /// Sum of busy time over planes (dies, under one command per die), for utilisation
    /// reports. Under independent plane reads a program or erase counts once per plane of
    /// its die (it holds them all).
    pub fn unit_busy_total_ns(&self) -> Nanos {
        self.timing.timer_busy_total_ns()
    }

    /// Keeps slots whose contents the writer announces ([`Nand::expect_content`]) as
    /// references that `oracle` regenerates when read, instead of their bytes (memory for
    /// devices whose data is generated). `verify`: compare every byte when programmed
    /// (a mismatch stores the bytes and is counted). Returns false, doing nothing, when
    /// the array does not store contents.
    pub fn keep_by_reference(&mut self, oracle: Box<dyn SlotOracle>, verify: bool) -> bool {
        match self.store.as_mut() {
            Some(store) => {
                store.keep_by_reference(oracle, verify);
                true
            }
            None => false,
        }
    }

    /// Announces that the `len` slots from `first_slot` will be programmed with the stored
    /// form of `content` (no effect unless kept by reference). Timing and state are
    /// untouched: only what the store keeps for those bytes changes.
    #[inline]
    pub fn expect_content(&mut self, first_slot: u32, len: u32, content: ContentRef) {
        if let Some(store) = self.store.as_mut() {
            store.expect(first_slot as u64, len, content);
        }
    }

    /// The reference the fragment starting at `slot` is kept as, if it is.
    pub fn content_of_page_at(&self, slot: u32) -> Option<ContentRef> {
        self.store.as_ref()?.reference_at(slot as u64)
    }

    /// Slots kept by reference now, compressed fragments ever programmed as references,
    /// and announced references that did not regenerate their slot's bytes (with
    /// verification on).
    pub fn reference_counts(&self) -> (u64, u64, u64) {
        self.store
            .as_ref()
            .map_or((0, 0, 0), |store| store.reference_counts())
    }

    /// 4 KiB frames holding stored bytes (for memory accounting).
    pub fn stored_slots(&self) -> u64 {
        self.store.as_ref().map_or(0, FrameStore::frames_in_use)
    }

    fn check_power(&self) -> Result<(), NandError> {
        if self.power.off {
            Err(NandError::PowerLoss)
        } else {
            Ok(())
        }
    }

    /// Counts a device write against an armed power cut; true when this one is torn.
    fn tears_now(&mut self) -> bool {
        match self.power.cut_after_ops.as_mut() {
            Some(remaining) => {
                *remaining -= 1;
                if *remaining == 0 {
                    self.power.off = true;
                    self.power.cut_after_ops = None;
                    true
                } else {
                    false
                }
            }
            None => false,
        }
    }

    fn read_latency_ns(&self, page: u32) -> Nanos {
        match &self.config.timing.page_types {
            Some(t) => t.read_ns[(self.per_block.rem(page) % 3) as usize],
            None => self.config.timing.read_ns,
        }
    }

    fn program_latency_ns(&self, page: u32) -> Nanos {
        match &self.config.timing.page_types {
            Some(t) => t.program_ns[(self.per_block.rem(page) % 3) as usize],
            None => self.config.timing.program_ns,
        }
    }

    fn transfer_ns(&self, slots: u32) -> Nanos {
        self.transfer_ns[slots as usize]
    }

    fn record_program(
        &mut self,
        page: u32,
        oob: &PageOob<'_>,
        data: Option<&[u8]>,
        sources: &[u32],
    ) {
        self.own_page_seq(page);
        self.page_flags[page as usize] = oob.flags | oob_flags::PROGRAMMED;
        self.page_seq[page as usize] = oob.seq;
        let first = (page * self.slots_per_page) as usize;
        match oob.lpns {
            // One-slot pages: a store, not a call to memcpy.
            &[lpn] => self.slot_lpn[first] = lpn,
            lpns => self.slot_lpn[first..first + lpns.len()].copy_from_slice(lpns),
        }
        let sb = self.slot_bytes as usize;
        let Some(store) = self.store.as_mut() else {
            return;
        };
        for (i, &lpn) in oob.lpns.iter().enumerate() {
            let slot = first as u64 + i as u64;
            if lpn == NO_LPN {
                continue;
            }
            if sources[i] != NO_SOURCE {
                store.share(slot, sources[i] as u64);
            } else if let Some(bytes) = data {
                store.put(slot, &bytes[i * sb..(i + 1) * sb]);
            }
        }
    }

    /// Drops the stored bytes of `count` slots from `first` (the FTL guarantees it never
    /// reads them again: what superseded them is durable). They read as zeros from now
    /// on; the spare areas are untouched.
    pub fn forget_bytes(&mut self, first: u32, count: u32) {
        if let Some(store) = self.store.as_mut() {
            for slot in first..first + count {
                store.release(slot as u64);
            }
        }
    }

    /// Copies a programmed slot's bytes without charging time: the controller already holds
    /// them (a buffered relocation being read by the host).
    pub fn peek_slot(&self, slot: u32, out: &mut [u8]) {
        match &self.store {
            Some(store) => store.get(slot as u64, out),
            None => out.fill(0),
        }
    }

    fn mark_corrupt(&mut self, page: u32) {
        if self.page_flags[page as usize] & oob_flags::PROGRAMMED == 0 {
            // The page's spare area becomes visible: an unprogrammed page names nothing.
            let first = (page * self.slots_per_page) as usize;
            self.slot_lpn[first..first + self.slots_per_page as usize].fill(NO_LPN);
        }
        self.own_page_seq(page);
        self.page_flags[page as usize] = oob_flags::PROGRAMMED | oob_flags::CORRUPT;
        self.page_seq[page as usize] = 0;
    }
}

impl FlashMedium for Nand {
    #[inline]
    fn geometry(&self) -> &Geometry {
        &self.config.geometry
    }

    fn program_relocating(
        &mut self,
        page: u32,
        oob: PageOob<'_>,
        data: Option<&[u8]>,
        sources: &[u32],
        ready_ns: Nanos,
    ) -> Result<OpTiming, NandError> {
        self.check_power()?;
        let (block, index_in_block) = self.per_block.div_rem(page);
        self.assert_programmable(block, index_in_block);
        assert_eq!(oob.lpns.len() as u32, self.slots_per_page);
        if let Some(bytes) = data {
            assert_eq!(
                bytes.len(),
                (self.slots_per_page * self.slot_bytes) as usize
            );
        }
        let unit = self.unit_of_block(block);
        let transfer_ns = self.transfer_ns(self.slots_per_page);
        let program_ns = self.program_latency_ns(page);
        // Data crosses the channel into the die's page register, then the die programs it.
        let OpTiming { start_ns, end_ns } =
            self.timing
                .program(unit, index_in_block, ready_ns, transfer_ns, program_ns);
        self.note_end(end_ns);
        self.write_ptr[block as usize] += 1;
        self.counters.page_programs += 1;
        self.counters.transfer_bytes += self.config.geometry.page_size_bytes as u64;
        if self.tears_now() {
            self.power.torn = Some(TornOp::Program {
                page,
                flags: oob.flags,
            });
            self.mark_corrupt(page);
            return Err(NandError::PowerLoss);
        }
        if self.rng.chance(self.config.faults.program_fail_probability) {
            self.mark_corrupt(page);
            self.counters.program_failures += 1;
            return Err(NandError::ProgramFailed { block });
        }
        self.record_program(page, &oob, data, sources);
        Ok(OpTiming { start_ns, end_ns })
    }

    fn read(
        &mut self,
        page: u32,
        slots: Range<u32>,
        out: Option<&mut [u8]>,
        ready_ns: Nanos,
    ) -> Result<ReadOutcome, NandError> {
        self.check_power()?;
        assert!(slots.start < slots.end && slots.end <= self.slots_per_page);
        let (block, index_in_block) = self.per_block.div_rem(page);
        let unit = self.unit_of_block(block);
        let retried = self.rng.chance(self.config.faults.read_error_probability);
        let read_ns = self.read_latency_ns(page) * if retried { 2 } else { 1 };
        let slot_count = slots.end - slots.start;
        let transfer_ns = self.transfer_ns(slot_count);
        // The die senses the page, then holds it in its register until the channel moves it.
        let OpTiming { start_ns, end_ns } =
            self.timing
                .read(unit, index_in_block, ready_ns, read_ns, transfer_ns);
        self.note_end(end_ns);
        self.counters.page_reads += 1;
        self.counters.transfer_bytes += (slot_count * self.slot_bytes) as u64;
        if retried {
            self.counters.read_retries += 1;
            self.failing[block as usize] = true;
        }
        if let Some(out) = out {
            assert_eq!(out.len(), (slot_count * self.slot_bytes) as usize);
            let sb = self.slot_bytes as usize;
            let first = (page * self.slots_per_page) as u64;
            let corrupt = self.page_flags[page as usize] & oob_flags::CORRUPT != 0;
            for (i, slot) in slots.enumerate() {
                let dst = &mut out[i * sb..(i + 1) * sb];
                match (&self.store, corrupt) {
                    (Some(store), false) => store.get(first + slot as u64, dst),
                    _ => dst.fill(0),
                }
            }
        }
        Ok(ReadOutcome {
            timing: OpTiming { start_ns, end_ns },
            retried,
        })
    }

    fn erase(&mut self, block: u32, ready_ns: Nanos) -> Result<OpTiming, NandError> {
        self.check_power()?;
        assert!(!self.bad[block as usize], "erase of bad block {block}");
        let unit = self.unit_of_block(block);
        let erase_ns = self.config.timing.erase_ns;
        let OpTiming { start_ns, end_ns } = self.timing.erase(unit, ready_ns, erase_ns);
        self.note_end(end_ns);
        self.counters.block_erases += 1;
        self.erase_count[block as usize] += 1;
        let first_page = self.first_page(block);
        let pages = first_page..first_page + self.pages_per_block;
        if self.tears_now() {
            self.power.torn = Some(TornOp::Erase { block });
            // An interrupted erase leaves every page undefined; the block needs a new erase.
            for page in pages {
                self.mark_corrupt(page);
            }
            self.write_ptr[block as usize] = self.pages_per_block as u16;
            return Err(NandError::PowerLoss);
        }
        self.write_ptr[block as usize] = 0;
        // An implicit block's stored numbers are already zero.
        self.first_seq[block as usize] = 0;
        for page in pages {
            self.page_flags[page as usize] = 0;
            self.page_seq[page as usize] = 0;
        }
        let first_slot = (first_page * self.slots_per_page) as usize;
        let slot_count = (self.pages_per_block * self.slots_per_page) as usize;
        self.slot_lpn[first_slot..first_slot + slot_count].fill(NO_LPN);
        if let Some(store) = self.store.as_mut() {
            for slot in first_slot..first_slot + slot_count {
                store.release(slot as u64);
            }
            store.forget_expected(first_slot as u64..(first_slot + slot_count) as u64);
        }
        let at_limit = self.config.endurance.retire_at_limit
            && self.erase_count[block as usize] > self.config.endurance.pe_cycles_max;
        if at_limit || self.rng.chance(self.config.faults.erase_fail_probability) {
            self.counters.erase_failures += 1;
            self.bad[block as usize] = true;
            return Err(NandError::EraseFailed { block });
        }
        self.failing[block as usize] = false;
        Ok(OpTiming { start_ns, end_ns })
    }
}

#[cfg(test)]
mod tests;
