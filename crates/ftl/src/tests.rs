//! Reference-model tests: random request sequences with power cuts, checked after every
//! step against a map of what each LBA may hold. REMAP's are in `tests_remap.rs`.

#[path = "tests_remap.rs"]
mod remap;
#[path = "tests_unit.rs"]
mod unit;
#[path = "tests_wbuf.rs"]
mod wbuf;

use std::cell::RefCell;

use flashstack_block::explore::{self, Exploration};
use flashstack_block::{BlockDevice, BlockError, Hints, Payload, Remap, Temperature, LBA_SIZE};
use flashstack_nand::{oob_flags, Endurance, Energy, Faults, Geometry, NandConfig, Timing, TornOp};
use proptest::prelude::*;

use crate::blocks::BlockState;
use crate::compression::CompressionPolicyKind;
use crate::config::*;
use crate::{Cause, Ftl};

pub(crate) fn tiny_config(
    page_size_bytes: u32,
    streams: StreamMode,
    policy: VictimPolicyKind,
) -> DeviceConfig {
    DeviceConfig {
        name: "tiny".into(),
        description: String::new(),
        nand: NandConfig {
            geometry: Geometry {
                channels: 2,
                dies_per_channel: 1,
                planes_per_die: 2,
                blocks_per_plane: 16,
                pages_per_block: 8,
                page_size_bytes,
                oob_size_bytes: 64,
            },
            timing: Timing {
                read_ns: 25_000,
                program_ns: 200_000,
                erase_ns: 1_500_000,
                transfer_ns_per_page: 50_000,
                page_types: None,
                channel_model: Default::default(),
            },
            energy: Energy {
                read_nj: 1,
                program_nj: 1,
                erase_nj: 1,
                transfer_nj_per_page: 1,
                idle_uw: 1,
            },
            endurance: Endurance {
                pe_cycles_max: 100_000,
                retire_at_limit: true,
            },
            faults: Faults::default(),
            die_rules: Default::default(),
            multi_plane: true,
        },
        ftl: FtlConfig {
            overprovisioning_ratio: 0.25,
            streams,
            streams_max: 4,
            gc: GcConfig {
                policy,
                foreground_free_blocks: 2,
                background_free_blocks: 4,
                idle_threshold_ns: 10_000_000,
                candidates_max: 8,
                collect: Default::default(),
                background_min_invalid_permille: 0,
            },
            slot_bytes: 4096,
            mapping_unit_bytes: 4096,
            exported_capacity_factor: 1.0,
            compression: None,
            mapping_cache: MappingCacheConfig::default(),
            write_buffer: WriteBufferConfig::default(),
            allocation: Allocation::Page,
            wear: WearConfig {
                dynamic: true,
                static_threshold: Some(4),
                check_interval_erases: 8,
            },
        },
        host: HostConfig {
            queue_depth: 2,
            controller_overhead_ns: 1_000,
            link_ns_per_4k: 500,
        },
    }
}

#[derive(Clone, Debug)]
enum Op {
    Write {
        lba: u64,
        count: u32,
        hot: bool,
    },
    Read {
        lba: u64,
        count: u32,
    },
    Trim {
        lba: u64,
        count: u32,
    },
    Flush,
    Idle,
    ArmPowerCut {
        after_device_writes: u64,
    },
    CutNow,
    /// `dst + i` takes what `src + i` holds (LBAs as fractions of capacity, like the others).
    Remap {
        src: u64,
        dst: u64,
        count: u32,
    },
    /// Several (src, dst, count) extents in one atomic remap.
    RemapExtents(Vec<(u64, u64, u32)>),
    /// A write with force unit access: durable when it completes.
    WriteFua {
        lba: u64,
        count: u32,
        hot: bool,
    },
}

fn op_strategy() -> impl Strategy<Value = Op> {
    // LBAs are drawn as fractions of capacity and scaled by the harness.
    prop_oneof![
        40 => (0u64..10_000, 1u32..6, any::<bool>())
            .prop_map(|(lba, count, hot)| Op::Write { lba, count, hot }),
        15 => (0u64..10_000, 1u32..6).prop_map(|(lba, count)| Op::Read { lba, count }),
        8 => (0u64..10_000, 1u32..8).prop_map(|(lba, count)| Op::Trim { lba, count }),
        8 => Just(Op::Flush),
        3 => Just(Op::Idle),
        3 => (1u64..40).prop_map(|after_device_writes| Op::ArmPowerCut { after_device_writes }),
        1 => Just(Op::CutNow),
    ]
}

/// What each LBA may read as: `current` while powered; after a power cut any of
/// `possible` (which always holds the value at the last flush).
struct Model {
    current: Vec<u64>,
    possible: Vec<Vec<u64>>,
    next_tag: u64,
}

impl Model {
    fn new(lbas: u64) -> Self {
        Model {
            current: vec![0; lbas as usize],
            possible: vec![vec![0]; lbas as usize],
            next_tag: 1,
        }
    }
    fn set(&mut self, lba: u64, tag: u64) {
        self.current[lba as usize] = tag;
        self.possible[lba as usize].push(tag);
    }
    fn flushed(&mut self) {
        for (lba, tag) in self.current.iter().enumerate() {
            self.possible[lba] = vec![*tag];
        }
    }
}

/// Tag 0 is the zero page; other tags fill the page with a recognisable pattern that is
/// highly compressible, half compressible or barely compressible depending on the tag, so
/// compressing FTLs store fragments of many lengths.
fn page_of(tag: u64) -> Vec<u8> {
    let mut page = vec![0u8; LBA_SIZE];
    if tag == 0 {
        return page;
    }
    for (i, chunk) in page.chunks_exact_mut(8).enumerate() {
        let word = match tag % 3 {
            0 if i > 0 => tag % 251,
            // About 0.7 under LZO1X-1: low compressibility, the data caGC lets straddle.
            1 if i % 8 >= 5 => 0,
            _ => (tag.wrapping_mul(0x9E37_79B9) ^ i as u64).wrapping_mul(0xBF58_476D_1CE4_E5B9),
        };
        chunk.copy_from_slice(&word.to_le_bytes());
    }
    page
}

fn tag_of(page: &[u8], candidates: &[u64]) -> Option<u64> {
    candidates
        .iter()
        .copied()
        .find(|&t| page == page_of(t).as_slice())
}

struct Harness {
    ftl: Ftl,
    model: Model,
    now_ns: u64,
    allow_no_space: bool,
    /// Steps run so far; `check_invariants` runs from step `check_from` on (a sweep
    /// that replays one prefix many times checks it once).
    steps: usize,
    check_from: usize,
    /// Power cuts recovered from, where they landed, and the flushed bytes read back.
    tally: Exploration,
    /// The remap a power cut may have interrupted: per destination LBA, its new tag and
    /// whether that tag tells the remap apart from the LBA's older values.
    remap_in_flight: Option<Vec<(u64, u64, bool)>>,
    /// Remaps the device served (refused ones not counted).
    pub(crate) remaps_done: u64,
    /// Cuts lose nothing acknowledged (a capacitor-backed write buffer, no trims, cuts
    /// only between requests): after recovery every LBA reads its newest value.
    strict_cuts: bool,
}

impl Harness {
    fn new(config: DeviceConfig, seed: u64) -> Self {
        let ftl = Ftl::new(config, true, seed).unwrap();
        let lbas = ftl.capacity_lbas();
        Harness {
            ftl,
            model: Model::new(lbas),
            now_ns: 0,
            allow_no_space: false,
            steps: 0,
            check_from: 0,
            tally: Exploration::new("ftl").durable_by("flushed"),
            remap_in_flight: None,
            remaps_done: 0,
            strict_cuts: false,
        }
    }

    fn scale(&self, lba: u64, count: u32) -> (u64, u32) {
        let cap = self.ftl.capacity_lbas();
        let lba = lba * cap / 10_000;
        (lba, count.min((cap - lba) as u32))
    }

    /// Runs one op; returns false once the device reported it is out of space (fault runs).
    fn step(&mut self, op: &Op) -> bool {
        self.now_ns += 20_000;
        let result = match *op {
            Op::Write { lba, count, hot } => self.write(lba, count, hot, false),
            Op::WriteFua { lba, count, hot } => self.write(lba, count, hot, true),
            Op::Read { lba, count } => self.read_and_compare(lba, count),
            Op::Trim { lba, count } => {
                let (lba, count) = self.scale(lba, count);
                for l in lba..lba + count as u64 {
                    self.model.set(l, 0);
                }
                self.ftl.trim(self.now_ns, lba, count).map(|_| ())
            }
            Op::Flush => self.ftl.flush(self.now_ns).map(|_| self.model.flushed()),
            Op::Idle => {
                self.now_ns += 1_000_000_000;
                Ok(())
            }
            Op::ArmPowerCut {
                after_device_writes,
            } => {
                self.ftl.nand_mut().arm_power_cut(after_device_writes);
                Ok(())
            }
            Op::CutNow => {
                self.ftl.nand_mut().cut_power();
                Err(BlockError::PowerLoss)
            }
            Op::Remap { src, dst, count } => self.remap(&[(src, dst, count)]),
            Op::RemapExtents(ref extents) => self.remap(extents),
        };
        match result {
            Ok(()) => {}
            Err(BlockError::PowerLoss) => {
                self.note_cut();
                self.recover();
            }
            Err(BlockError::NoSpace { .. }) if self.allow_no_space => return false,
            Err(e) => panic!("unexpected error {e}"),
        }
        self.steps += 1;
        if self.steps >= self.check_from {
            if let Err(violation) = self.ftl.check_invariants() {
                panic!("invariant broken after {op:?}: {violation}");
            }
        }
        true
    }

    /// Counts a power cut by what it interrupted: GC (a victim being collected, or an
    /// erase torn), host data in a partial page buffer (lost unless flushed), trims not
    /// yet logged or a trim-record page torn.
    fn note_cut(&mut self) {
        let ftl = &self.ftl;
        let torn = ftl.nand().torn_op();
        let mid_gc = matches!(torn, Some(TornOp::Erase { .. }))
            || ftl.blocks.state.contains(&BlockState::Collecting);
        let mid_buffer = ftl
            .streams
            .iter()
            .any(|s| !s.relocation && (s.filled > 0 || !s.staged.is_empty()));
        let mid_trim_log = !ftl.pending_trims.is_empty()
            || matches!(torn, Some(TornOp::Program { flags, .. })
                if flags & oob_flags::TRIM_RECORD != 0);
        let mid_remap = self.remap_in_flight.is_some();
        self.tally.cut();
        for (name, hit) in [
            ("mid-GC", mid_gc),
            ("mid-buffer", mid_buffer),
            ("mid-trim-log", mid_trim_log),
        ] {
            self.tally.note(name, u64::from(hit));
        }
        // Only runs that remap report this count (the others' lines stay as they were).
        if mid_remap || self.remaps_done > 0 {
            self.tally.note("mid-remap", u64::from(mid_remap));
        }
        // Super-page devices: cuts while GC or wear levelling holds relocated pages back
        // for their super-page (their data then exists only in the victim and the held
        // page).
        if ftl.super_page {
            let gc_held = ftl
                .streams
                .iter()
                .any(|s| s.relocation && !s.staged.is_empty());
            self.tally.note("mid-GC-held", u64::from(gc_held));
            // Super-block GC: cuts while several victims are being collected together
            // (some may already be erased, the others not yet).
            if ftl.config.ftl.gc.collect == GcCollect::SuperBlock {
                let collecting = ftl
                    .blocks
                    .state
                    .iter()
                    .filter(|&&s| s == BlockState::Collecting)
                    .count();
                self.tally
                    .note("mid-super-block", u64::from(collecting > 1));
            }
        }
    }

    fn write(&mut self, lba: u64, count: u32, hot: bool, fua: bool) -> Result<(), BlockError> {
        let (lba, count) = self.scale(lba, count);
        let mut bytes = Vec::with_capacity(count as usize * LBA_SIZE);
        for l in lba..lba + count as u64 {
            let tag = self.model.next_tag;
            self.model.next_tag += 1;
            self.model.set(l, tag);
            bytes.extend_from_slice(&page_of(tag));
        }
        let hints = Hints {
            temperature: Some(if hot {
                Temperature::Hot
            } else {
                Temperature::Cold
            }),
            fua,
            ..Hints::default()
        };
        self.ftl
            .write(self.now_ns, lba, Payload::Bytes(&bytes), hints)?;
        if fua {
            // Durable now: a cut may lose only what is written after it.
            for l in lba..lba + count as u64 {
                self.model.possible[l as usize] = vec![self.model.current[l as usize]];
            }
        }
        Ok(())
    }

    fn read_and_compare(&mut self, lba: u64, count: u32) -> Result<(), BlockError> {
        let (lba, count) = self.scale(lba, count);
        let mut out = vec![0u8; count as usize * LBA_SIZE];
        self.ftl.read(self.now_ns, lba, count, Some(&mut out))?;
        for (i, page) in out.chunks_exact(LBA_SIZE).enumerate() {
            let expected = self.model.current[lba as usize + i];
            assert!(
                page == page_of(expected).as_slice(),
                "lba {} lost tag {expected}",
                lba + i as u64
            );
        }
        Ok(())
    }

    /// A remap; the model follows the contract of `flashstack_block::Remap`: on success
    /// everything before it is durable and so is the remap; a power cut during it leaves
    /// the whole remap or none of it (checked by `recover`).
    fn remap(&mut self, extents: &[(u64, u64, u32)]) -> Result<(), BlockError> {
        let mut room = self.ftl.remap_lbas_max();
        let mut scaled = Vec::new();
        for &(src, dst, count) in extents {
            let (src, count) = self.scale(src, count);
            let (dst, count) = self.scale(dst, count);
            let count = count.min(room);
            if count == 0 {
                break;
            }
            room -= count;
            scaled.push(flashstack_block::RemapExtent { src, dst, count });
        }
        // Destination LBA and the source's tag, read before anything changes.
        let tags: Vec<(u64, u64)> = scaled
            .iter()
            .flat_map(|e| (0..e.count as u64).map(move |i| (e.dst + i, e.src + i)))
            .map(|(dst, src)| (dst, self.model.current[src as usize]))
            .collect();
        let pending = tags
            .iter()
            .map(|&(lba, tag)| (lba, tag, !self.model.possible[lba as usize].contains(&tag)))
            .collect();
        self.remap_in_flight = Some(pending);
        let result = self.ftl.remap_extents(self.now_ns, &scaled);
        if !matches!(result, Err(BlockError::PowerLoss)) {
            self.remap_in_flight = None;
        }
        let valid = flashstack_block::check_remap_extents(
            &scaled,
            self.ftl.capacity_lbas(),
            self.ftl.remap_lbas_max(),
        );
        let compressing = self.ftl.config().ftl.compression.is_some();
        match result {
            Ok(_) => {
                assert_eq!(valid, Ok(()), "the device accepted a bad remap");
                self.remaps_done += 1;
                self.model.flushed();
                for (lba, tag) in tags {
                    self.model.set(lba, tag);
                }
                self.model.flushed();
                Ok(())
            }
            Err(BlockError::PowerLoss) => {
                for &(lba, tag) in &tags {
                    self.model.possible[lba as usize].push(tag);
                }
                Err(BlockError::PowerLoss)
            }
            Err(BlockError::RemapOverlap { .. }) if valid.is_err() => Ok(()),
            Err(BlockError::Unsupported { .. }) if compressing => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// After recovery from a cut during a remap: its destination LBAs show the remap on
    /// all of them or on none.
    fn check_remap_atomic(&mut self) {
        let Some(pending) = self.remap_in_flight.take() else {
            return;
        };
        let seen: Vec<(u64, bool)> = pending
            .iter()
            .filter(|&&(_, _, tells)| tells)
            .map(|&(lba, tag, _)| (lba, self.model.current[lba as usize] == tag))
            .collect();
        let applied = seen.iter().filter(|&&(_, a)| a).count();
        assert!(
            applied == 0 || applied == seen.len(),
            "a power cut left a remap half done: {seen:?}"
        );
    }

    /// Power comes back: every LBA must hold one of the values it may hold.
    fn recover(&mut self) {
        self.now_ns += 1_000_000;
        self.ftl.power_cycle(self.now_ns).unwrap();
        self.ftl.check_invariants().unwrap();
        let lbas = self.ftl.capacity_lbas();
        let mut out = vec![0u8; LBA_SIZE];
        for lba in 0..lbas {
            self.now_ns += 1_000;
            self.ftl.read(self.now_ns, lba, 1, Some(&mut out)).unwrap();
            let newest = [self.model.current[lba as usize]];
            let allowed = match self.strict_cuts {
                true => &newest[..],
                false => &self.model.possible[lba as usize],
            };
            if allowed.len() == 1 {
                // Flushed and not written since: must read back exactly (checked below).
                self.tally.checked(LBA_SIZE as u64, 0);
            }
            let tag = tag_of(&out, allowed).unwrap_or_else(|| {
                panic!("after power cut lba {lba} holds none of {allowed:?} (durable first)")
            });
            self.model.current[lba as usize] = tag;
            self.model.possible[lba as usize] = vec![tag];
        }
        self.check_remap_atomic();
    }
}

fn run(config: DeviceConfig, ops: &[Op], seed: u64, allow_no_space: bool) -> Harness {
    run_checking_from(config, ops, seed, allow_no_space, 0)
}

fn run_checking_from(
    config: DeviceConfig,
    ops: &[Op],
    seed: u64,
    allow_no_space: bool,
    check_from: usize,
) -> Harness {
    let mut h = Harness::new(config, seed);
    h.allow_no_space = allow_no_space;
    h.check_from = check_from;
    run_harness(h, ops)
}

/// Runs `ops` on `h`, then shuts down cleanly and remounts: everything must survive.
fn run_harness(mut h: Harness, ops: &[Op]) -> Harness {
    for op in ops {
        if !h.step(op) {
            return h;
        }
    }
    // End with a clean shutdown and remount: everything must survive.
    h.ftl.nand_mut().disarm_power_cut();
    h.now_ns += 1;
    if !h.step(&Op::Flush) {
        return h;
    }
    h.now_ns += 10;
    h.recover();
    h
}

fn config_strategy() -> impl Strategy<Value = DeviceConfig> {
    (
        prop_oneof![Just(4096u32), Just(8192), Just(16384)],
        prop_oneof![Just(StreamMode::Single), Just(StreamMode::Temperature)],
        prop_oneof![
            Just(VictimPolicyKind::Greedy),
            Just(VictimPolicyKind::CostBenefit)
        ],
        // Sub-page slots: logical pages as multi-slot fragments.
        prop_oneof![3 => Just(4096u32), 1 => Just(1024), 1 => Just(512)],
        prop_oneof![
            3 => Just(None),
            1 => Just(Some(CompressionPolicyKind::Zftl)),
            1 => Just(Some(CompressionPolicyKind::Sc)),
            1 => Just(Some(CompressionPolicyKind::Ldc)),
            1 => Just(Some(CompressionPolicyKind::Opt)),
        ],
    )
        .prop_map(|(page, streams, policy, slot_bytes, compression)| {
            let mut config = tiny_config(page, streams, policy);
            config.ftl.slot_bytes = slot_bytes;
            if let Some(policy) = compression {
                config.ftl.slot_bytes = slot_bytes.min(1024);
                config.ftl.compression = Some(CompressionConfig::with_policy(policy));
                if policy == CompressionPolicyKind::Ldc {
                    config.ftl.gc.policy = VictimPolicyKind::CompressionAware;
                }
            }
            config
        })
}

/// Thousands of sequences in all: 1,500 fault-free (this test), 500 with injected flash
/// faults. Every power cut they fire (armed ones, which tear a NAND operation, and cuts
/// between requests) is recovered and checked, and counted by where it landed.
#[test]
fn reads_match_the_model_through_gc_trims_and_power_cuts() {
    let tally = RefCell::new(
        Exploration::new("ftl reads_match_the_model_through_gc_trims_and_power_cuts")
            .durable_by("flushed"),
    );
    proptest!(
        ProptestConfig { cases: 1_500, ..ProptestConfig::default() },
        |(
            config in config_strategy(),
            ops in prop::collection::vec(op_strategy(), 1..400),
            seed in any::<u64>(),
        )| {
            let h = run(config, &ops, seed, false);
            tally.borrow_mut().merge(&h.tally);
        }
    );
    let tally = tally.into_inner();
    tally.report();
    assert!(
        tally.noted("mid-GC") > 50
            && tally.noted("mid-buffer") > 50
            && tally.noted("mid-trim-log") > 50,
        "the cuts must land in GC, in partial buffers and in the trim log: {}",
        tally.line()
    );
}

/// The mapping-table cache (`cmt.rs`) under power cuts: a CMT of 2–12 entries over
/// translation pages of 8–64 entries forces evictions, batched translation-page programs,
/// translation-block GC and updates from data GC; after every cut and at the end, every
/// flushed LBA reads back intact (the harness checks each against the model).
#[test]
fn mapping_cache_keeps_everything_flushed_through_power_cuts() {
    let totals = RefCell::new([0u64; 5]);
    proptest!(
        ProptestConfig { cases: 300, ..ProptestConfig::default() },
        |(
            page in prop_oneof![Just(4096u32), Just(8192), Just(16384)],
            streams in prop_oneof![Just(StreamMode::Single), Just(StreamMode::Temperature)],
            policy in prop_oneof![Just(CmtPolicyKind::Lru), Just(CmtPolicyKind::SegmentedLru)],
            relocation_updates in prop_oneof![
                Just(RelocationUpdates::WriteThrough),
                Just(RelocationUpdates::Cached)
            ],
            entries in 2u64..12,
            tpage_entries in prop_oneof![Just(8u32), Just(32), Just(64)],
            ops in prop::collection::vec(op_strategy(), 1..400),
            seed in any::<u64>(),
        )| {
            let mut config = tiny_config(page, streams, VictimPolicyKind::Greedy);
            config.ftl.mapping_cache = MappingCacheConfig {
                sram_bytes: entries * 8,
                policy,
                entry_bytes: 8,
                relocation_updates,
                hpb: Default::default(),
            };
            let mut h = Harness::new(config, seed);
            h.ftl.shrink_translation_pages(tpage_entries);
            let h = run_harness(h, &ops);
            let c = h.ftl.counters();
            let mut t = totals.borrow_mut();
            for (total, n) in t.iter_mut().zip([
                c.mapping_programs,
                c.mapping_updates_uncached,
                c.translation_gc_cycles,
                c.power_cycles,
                c.mapping_updates_inserted,
            ]) {
                *total += n;
            }
        }
    );
    let [programs, uncached, translation_gc, cycles, inserted] = totals.into_inner();
    assert!(
        programs > 1_000
            && uncached > 100
            && translation_gc > 100
            && cycles > 300
            && inserted > 100,
        "the cache must evict, follow GC both ways, collect translation blocks and see \
         cuts: {programs} programs, {uncached} uncached updates, {inserted} inserted, \
         {translation_gc} translation GC, {cycles} power cycles"
    );
}

/// UFS HPB (`hpb.rs`) on a cached device under power cuts, trims, GC and wear levelling:
/// subregions of 4 entries activated after one miss and a host map of 4 subregions, so
/// loads and region drops happen all the time. Every read is checked
/// against the model, and every HPB hit asserts that the entries the host sent are the
/// device's mapping (a stale entry never reaches the data path).
#[test]
fn hpb_never_serves_a_stale_entry_through_gc_trims_and_power_cuts() {
    let totals = RefCell::new([0u64; 3]);
    proptest!(
        ProptestConfig { cases: 80, ..ProptestConfig::default() },
        |(
            page in prop_oneof![Just(4096u32), Just(16384)],
            entries in 2u64..12,
            version in 1u8..=2,
            ops in prop::collection::vec(op_strategy(), 1..400),
            seed in any::<u64>(),
        )| {
            let mut config = tiny_config(page, StreamMode::Single, VictimPolicyKind::Greedy);
            config.ftl.mapping_cache = MappingCacheConfig {
                sram_bytes: entries * 8,
                policy: CmtPolicyKind::SegmentedLru,
                entry_bytes: 8,
                relocation_updates: Default::default(),
                hpb: tiny_hpb(version),
            };
            let mut h = Harness::new(config, seed);
            h.ftl.shrink_translation_pages(8);
            let h = run_harness(h, &ops);
            let c = h.ftl.counters();
            let mut t = totals.borrow_mut();
            for (total, n) in t.iter_mut().zip([c.hpb_hits, c.hpb_stale, c.hpb_region_drops]) {
                *total += n;
            }
        }
    );
    // Stale entries are rare here (the harness reads random LBAs of the whole device);
    // the lockstep test below sees them by the hundred.
    let [hits, _stale, drops] = totals.into_inner();
    assert!(
        hits > 1_000 && drops > 100,
        "HPB must hit and drop regions: {hits} hits, {drops} regions dropped"
    );
}

/// HPB with 16 KiB subregions in 32 KiB regions, a host map of 4 subregions, activation
/// after one miss.
fn tiny_hpb(version: u8) -> HpbConfig {
    HpbConfig {
        host_map_bytes: 4 * 4 * crate::HPB_ENTRY_BYTES,
        region_bytes: 8 * 4096,
        subregion_bytes: 4 * 4096,
        version,
        activation_reads: 1,
    }
}

/// The same random writes, reads, trims and GC on a plain FTL and on a cached FTL with
/// HPB read back the same bytes, request by request, and HPB served many of the reads.
#[test]
fn hpb_reads_the_same_bytes_as_the_plain_ftl() {
    let plain = tiny_config(4096, StreamMode::Single, VictimPolicyKind::Greedy);
    let mut cached = plain.clone();
    cached.ftl.mapping_cache = MappingCacheConfig {
        sram_bytes: 4 * 8,
        policy: CmtPolicyKind::SegmentedLru,
        entry_bytes: 8,
        relocation_updates: Default::default(),
        hpb: tiny_hpb(2),
    };
    let mut a = Ftl::new(plain, true, 5).unwrap();
    let mut b = Ftl::new(cached, true, 5).unwrap();
    b.shrink_translation_pages(8);
    let lbas = a.capacity_lbas() * 3 / 4;
    let mut rng = flashstack_sim::Rng::new(11);
    let mut now = 0u64;
    for i in 0..6_000u64 {
        now += 50_000;
        // Reads and writes favour a hot eighth, so subregions are reused and go stale.
        let lba = match rng.chance(0.7) {
            true => rng.below(lbas / 8),
            false => rng.below(lbas - 4),
        };
        let count = 1 + rng.below(4) as u32;
        match rng.below(10) {
            0..=3 => {
                let bytes: Vec<u8> = (0..count as usize * LBA_SIZE)
                    .map(|k| (i as usize * 31 + k) as u8)
                    .collect();
                for ftl in [&mut a, &mut b] {
                    ftl.write(now, lba, Payload::Bytes(&bytes), Hints::default())
                        .unwrap();
                }
            }
            4 => {
                for ftl in [&mut a, &mut b] {
                    ftl.trim(now, lba, count).unwrap();
                }
            }
            _ => {
                let mut out = [
                    vec![0u8; count as usize * LBA_SIZE],
                    vec![1u8; count as usize * LBA_SIZE],
                ];
                let [oa, ob] = &mut out;
                a.read(now, lba, count, Some(oa)).unwrap();
                b.read(now, lba, count, Some(ob)).unwrap();
                assert!(oa == ob, "request {i}: lba {lba}+{count} differs");
            }
        }
    }
    b.check_invariants().unwrap();
    let c = b.counters();
    assert!(
        c.gc_cycles_foreground + c.gc_cycles_background > 50,
        "GC ran: {c:?}"
    );
    assert!(
        c.hpb_hits > 300 && c.hpb_stale > 50 && c.hpb_misses > 100,
        "{} hits, {} stale, {} misses",
        c.hpb_hits,
        c.hpb_stale,
        c.hpb_misses
    );
}

/// Everything observable about a device after a run: counters, latencies, when it goes
/// idle, every page's spare area and every LBA's bytes.
fn observe(h: &mut Harness) -> String {
    let ftl = &h.ftl;
    let l = ftl.latencies();
    let mut seen = format!(
        "{:?}\n{:?}\n{:?} {:?} {:?} {:?}\nbusy until {}\n",
        ftl.counters(),
        ftl.nand().counters(),
        l.read.summary(),
        l.write.summary(),
        l.trim.summary(),
        l.flush.summary(),
        ftl.busy_until_ns()
    );
    let g = ftl.config().nand.geometry.clone();
    for page in 0..g.pages() as u32 {
        if let Some(oob) = ftl.nand().oob(page) {
            seen += &format!("{page}: {:?} {} {}\n", oob.lpns, oob.seq, oob.flags);
        }
    }
    let mut out = vec![0u8; LBA_SIZE];
    for lba in 0..h.ftl.capacity_lbas() {
        h.now_ns += 1_000;
        h.ftl.read(h.now_ns, lba, 1, Some(&mut out)).unwrap();
        seen += &format!("{lba}={:x}\n", hash(&out));
    }
    seen
}

fn hash(bytes: &[u8]) -> u64 {
    bytes.chunks_exact(8).fold(0xcbf2_9ce4_8422_2325, |h, w| {
        (h ^ u64::from_le_bytes(w.try_into().unwrap())).wrapping_mul(0x0100_0000_01b3)
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// The fused paths for flash that cannot fail (one-slot pages, no faults, no armed
    /// power cut) give exactly what the general paths give. A power cut armed too far
    /// ahead to ever fire sends the second device down the general paths.
    #[test]
    fn fast_paths_match_the_general_paths(
        policy in prop_oneof![Just(VictimPolicyKind::Greedy), Just(VictimPolicyKind::CostBenefit)],
        ops in prop::collection::vec(op_strategy(), 1..400),
        seed in any::<u64>(),
    ) {
        let ops: Vec<Op> = ops
            .into_iter()
            .filter(|op| !matches!(op, Op::ArmPowerCut { .. } | Op::CutNow))
            .collect();
        let config = tiny_config(4096, StreamMode::Temperature, policy);
        let mut fast = run(config.clone(), &ops, seed, false);
        let mut general = run_general_paths(config, &ops, seed);
        prop_assert_eq!(observe(&mut fast), observe(&mut general));
    }
}

/// `run` with program and erase failures and read retries injected.
fn run_with_faults(
    mut config: DeviceConfig,
    ops: &[Op],
    seed: u64,
    program_fail_probability: f64,
) -> Harness {
    config.nand.faults = Faults {
        program_fail_probability,
        erase_fail_probability: 0.01,
        read_error_probability: 0.02,
    };
    run(config, ops, seed, true)
}

/// `run` forced down the general paths: a power cut armed too far ahead to ever fire.
fn run_general_paths(config: DeviceConfig, ops: &[Op], seed: u64) -> Harness {
    let mut general = Harness::new(config, seed);
    general.ftl.nand_mut().arm_power_cut(u64::MAX);
    assert!(!general.ftl.nand().is_infallible());
    for op in ops {
        general.step(op);
    }
    general.ftl.nand_mut().disarm_power_cut();
    general.now_ns += 1;
    general.step(&Op::Flush);
    general.now_ns += 10;
    general.recover();
    general
}

#[test]
fn injected_flash_faults_never_lose_acknowledged_data() {
    let tally = RefCell::new(
        Exploration::new("ftl injected_flash_faults_never_lose_acknowledged_data")
            .durable_by("flushed"),
    );
    proptest!(
        ProptestConfig { cases: 500, ..ProptestConfig::default() },
        |(
            config in config_strategy(),
            ops in prop::collection::vec(op_strategy(), 1..300),
            seed in any::<u64>(),
        )| {
            let h = run_with_faults(config, &ops, seed, 0.01);
            tally.borrow_mut().merge(&h.tally);
        }
    );
    tally.into_inner().report();
}

#[test]
fn long_random_run_with_heavy_gc() {
    use flashstack_sim::Rng;
    let mut tally = Exploration::new("ftl long_random_run_with_heavy_gc").durable_by("flushed");
    for page in [4096, 16384] {
        let config = tiny_config(page, StreamMode::Temperature, VictimPolicyKind::CostBenefit);
        let mut rng = Rng::new(page as u64);
        let ops: Vec<Op> = (0..5_000)
            .map(|_| match rng.below(100) {
                0..=69 => Op::Write {
                    lba: rng.below(10_000),
                    count: 1 + rng.below(4) as u32,
                    hot: rng.chance(0.8),
                },
                70..=84 => Op::Read {
                    lba: rng.below(10_000),
                    count: 1 + rng.below(4) as u32,
                },
                85..=89 => Op::Trim {
                    lba: rng.below(10_000),
                    count: 1 + rng.below(4) as u32,
                },
                90..=97 => Op::Flush,
                98 => Op::Idle,
                _ => Op::ArmPowerCut {
                    after_device_writes: 1 + rng.below(50),
                },
            })
            .collect();
        let h = run(config, &ops, 7, false);
        tally.merge(&h.tally);
        let c = h.ftl.counters();
        // The run must have exercised what it claims to test.
        assert!(c.gc_cycles_foreground > 100, "{c:?}");
        assert!(c.gc_cycles_background > 0, "{c:?}");
        assert!(c.power_cycles > 20, "{c:?}");
        assert!(c.trim_record_pages > 0, "{c:?}");
        assert!(c.wl_cycles > 0, "{c:?}");
    }
    tally.report();
}

#[test]
fn long_random_run_with_compression() {
    use crate::predictor::PredictorSample;
    use flashstack_sim::Rng;
    let mut tally = Exploration::new("ftl long_random_run_with_compression").durable_by("flushed");
    let mut fixed_ldc_error = None;
    for (policy, sample) in [
        (CompressionPolicyKind::Ldc, PredictorSample::Fixed),
        (CompressionPolicyKind::Zftl, PredictorSample::Fixed),
        (CompressionPolicyKind::Ldc, PredictorSample::PerPage),
    ] {
        let mut config = tiny_config(8192, StreamMode::Single, VictimPolicyKind::CompressionAware);
        config.ftl.slot_bytes = 512;
        config.ftl.compression = Some(CompressionConfig {
            predictor_sample: sample,
            ..CompressionConfig::with_policy(policy)
        });
        // One plane of 64 blocks, little spare: eleven open frontiers (compressed + ten
        // ratio groups) and live data that GC must move.
        config.nand.geometry.channels = 1;
        config.nand.geometry.planes_per_die = 1;
        config.nand.geometry.blocks_per_plane = 64;
        config.ftl.overprovisioning_ratio = 0.05;
        let mut rng = Rng::new(11);
        let ops: Vec<Op> = (0..4_000)
            .map(|_| match rng.below(100) {
                0..=74 => Op::Write {
                    lba: rng.below(10_000),
                    count: 1 + rng.below(3) as u32,
                    hot: true,
                },
                75..=89 => Op::Read {
                    lba: rng.below(10_000),
                    count: 1 + rng.below(4) as u32,
                },
                90..=91 => Op::Trim {
                    lba: rng.below(10_000),
                    count: 1,
                },
                92..=97 => Op::Flush,
                _ => Op::ArmPowerCut {
                    after_device_writes: 1 + rng.below(50),
                },
            })
            .collect();
        let h = run(config, &ops, 3, false);
        tally.merge(&h.tally);
        let c = h.ftl.counters();
        assert!(c.pages_compressed_host > 1_000, "{policy:?} {c:?}");
        assert!(c.gc_cycles_foreground > 50, "{policy:?} {c:?}");
        assert!(c.power_cycles > 5, "{policy:?} {c:?}");
        if policy == CompressionPolicyKind::Ldc {
            assert!(c.pages_compressed_gc > 0, "{c:?}");
            assert!(c.straddled_fragments > 0, "{c:?}");
            // The sampling option reaches the predictor: other bytes, other errors.
            match sample {
                PredictorSample::Fixed => fixed_ldc_error = Some(c.prediction_error_permille_sum),
                PredictorSample::PerPage => {
                    assert_ne!(Some(c.prediction_error_permille_sum), fixed_ldc_error)
                }
            }
        }
    }
    tally.report();
}

/// A power cut at every NAND operation (program or erase) of a GC-heavy stretch on an LDC
/// device whose GC straddles fragments across pages: the cut is armed at operation 700 of
/// the workload and tears its 1st, 2nd, ... 399th NAND operation from there, one run each
/// (`FLASHSTACK_CRASH_SCALE` widens the window). Each recovery must keep every flushed
/// write. The 700 operations before the cut are the same in every run: their invariants
/// are checked in the first run only.
#[test]
fn power_cut_at_every_point_of_straddling_gc() {
    let mut config = tiny_config(4096, StreamMode::Single, VictimPolicyKind::CompressionAware);
    config.ftl.slot_bytes = 512;
    config.ftl.compression = Some(CompressionConfig::with_policy(CompressionPolicyKind::Ldc));
    config.nand.geometry.channels = 1;
    config.nand.geometry.planes_per_die = 1;
    config.nand.geometry.blocks_per_plane = 40;
    config.ftl.overprovisioning_ratio = 0.05;
    let mut rng = flashstack_sim::Rng::new(5);
    const CUT_AT_OP: usize = 700;
    let ops: Vec<Op> = (0..1_100)
        .map(|i| {
            if i % 10 == 9 {
                Op::Flush
            } else {
                Op::Write {
                    lba: rng.below(10_000),
                    count: 1,
                    hot: true,
                }
            }
        })
        .collect();
    let mut straddles = 0;
    let mut tally =
        Exploration::new("ftl power_cut_at_every_point_of_straddling_gc").durable_by("flushed");
    let window = 400 * explore::scale();
    for cut in 1..window {
        let mut ops_with_cut = ops.clone();
        ops_with_cut.insert(
            CUT_AT_OP,
            Op::ArmPowerCut {
                after_device_writes: cut,
            },
        );
        let check_from = if cut == 1 { 0 } else { CUT_AT_OP };
        let h = run_checking_from(config.clone(), &ops_with_cut, 1, false, check_from);
        straddles += h.ftl.counters().straddled_fragments;
        // The cuts of the default window all fire; a wider one may run past the end.
        assert!(
            h.tally.cut_points() == 1 || cut >= 400,
            "the cut armed {cut} NAND operations after op {CUT_AT_OP} did not fire"
        );
        tally.merge(&h.tally);
    }
    tally.report();
    assert!(
        straddles > 100,
        "the sweep must cut around straddling GC: {straddles}"
    );
    assert!(tally.noted("mid-GC") > 50, "{}", tally.line());
}

#[test]
fn out_of_range_and_bad_buffers_are_errors_not_panics() {
    let mut ftl = Ftl::new(
        tiny_config(4096, StreamMode::Single, VictimPolicyKind::Greedy),
        false,
        1,
    )
    .unwrap();
    let cap = ftl.capacity_lbas();
    let e = ftl.write(0, cap, Payload::Unstored { lba_count: 1 }, Hints::default());
    assert!(matches!(e, Err(BlockError::OutOfRange { .. })));
    let e = ftl.write(0, 0, Payload::Bytes(&[0u8; 100]), Hints::default());
    assert!(matches!(e, Err(BlockError::Misaligned { len: 100 })));
    let mut small = [0u8; 10];
    let e = ftl.read(0, 0, 1, Some(&mut small));
    assert!(matches!(e, Err(BlockError::BadBuffer { .. })));
    let mut page = [0u8; 4096];
    let e = ftl.read(0, 0, 1, Some(&mut page));
    assert!(matches!(e, Err(BlockError::ContentsNotStored)));
}

/// 3,000 seeded operations over 10,000 LBAs: mostly writes, then reads, trims, flushes,
/// idle gaps and armed power cuts (the mix of the fingerprint and die-rule tests).
fn mixed_ops(seed: u64) -> Vec<Op> {
    let mut rng = flashstack_sim::Rng::new(seed);
    (0..3_000)
        .map(|_| match rng.below(100) {
            0..=59 => Op::Write {
                lba: rng.below(10_000),
                count: 1 + rng.below(4) as u32,
                hot: rng.chance(0.8),
            },
            60..=74 => Op::Read {
                lba: rng.below(10_000),
                count: 1 + rng.below(4) as u32,
            },
            75..=89 => Op::Trim {
                lba: rng.below(10_000),
                count: 1 + rng.below(8) as u32,
            },
            90..=96 => Op::Flush,
            97 => Op::Idle,
            _ => Op::ArmPowerCut {
                after_device_writes: 1 + rng.below(50),
            },
        })
        .collect()
}

/// Golden fingerprint of runs with trims, GC, wear levelling and power cuts on three
/// geometries: counters and a hash of everything `observe` shows but the FTL counters'
/// own line (new counters may be added without changing it): NAND counters, latencies,
/// every page's spare area, every LBA's bytes. Pinned before the mapping seam and REMAP
/// moved the mapping, the trim log and recovery: they must not change it. A change here
/// changes published figures: update only with a reason in the commit message.
#[test]
fn golden_fingerprint_of_trims_gc_and_power_cuts() {
    let mut out = String::new();
    for (page, slot) in [(4096u32, 4096u32), (16384, 4096), (8192, 1024)] {
        let mut config = tiny_config(page, StreamMode::Temperature, VictimPolicyKind::CostBenefit);
        config.ftl.slot_bytes = slot;
        let ops = mixed_ops(page as u64 + slot as u64);
        let mut h = run(config, &ops, 7, false);
        let c = h.ftl.counters().clone();
        let seen = observe(&mut h);
        let rest: String = seen.lines().skip(1).collect::<Vec<_>>().join("\n");
        out += &format!(
            "{page}/{slot}: progs {} erases_gc {} trimpages {} gc {} {} wl {} pc {} obs {:x}\n",
            c.page_programs,
            c.erases_gc,
            c.trim_record_pages,
            c.gc_cycles_foreground,
            c.gc_cycles_background,
            c.wl_cycles,
            c.power_cycles,
            hash(rest.as_bytes())
        );
    }
    assert_eq!(
        out,
        "4096/4096: progs 5961 erases_gc 894 trimpages 260 gc 642 259 wl 4 pc 40 obs 3dabdbcf3dcd7fe2\n\
         16384/4096: progs 2201 erases_gc 357 trimpages 180 gc 186 180 wl 1 pc 25 obs a9d8a7bd282a85c3\n\
         8192/1024: progs 3951 erases_gc 693 trimpages 221 gc 514 201 wl 0 pc 48 obs f02a3a8119750c7a\n"
    );
}

/// One command per die with multi-plane joins and interval channels under trims, GC,
/// wear levelling and power cuts: every read matches the model, the invariants hold
/// after every step, the device remounts intact, and the same seed gives the same run.
#[test]
fn die_rules_and_interval_channels_survive_trims_gc_and_power_cuts() {
    use flashstack_nand::{ChannelModel, DieRules};
    for (page, slot) in [(4096u32, 4096u32), (16384, 4096), (8192, 1024)] {
        let mut config = tiny_config(page, StreamMode::Temperature, VictimPolicyKind::CostBenefit);
        config.ftl.slot_bytes = slot;
        config.nand.die_rules = DieRules::OneCommandPerDie;
        config.nand.timing.channel_model = ChannelModel::Intervals;
        let ops = mixed_ops(page as u64 + slot as u64);
        let mut a = run(config.clone(), &ops, 7, false);
        let mut b = run(config, &ops, 7, false);
        assert!(a.ftl.counters().power_cycles > 0);
        assert_eq!(observe(&mut a), observe(&mut b), "{page}/{slot}");
    }
}

/// The translation pages whose dirty entries a cut lost are written again at recovery
/// (their flash copies are stale), and only those.
#[test]
fn recovery_rewrites_the_translation_pages_a_cut_left_stale() {
    let mut config = tiny_config(4096, StreamMode::Single, VictimPolicyKind::Greedy);
    config.ftl.mapping_cache = MappingCacheConfig {
        sram_bytes: 64 * 8,
        policy: CmtPolicyKind::SegmentedLru,
        entry_bytes: 8,
        relocation_updates: Default::default(),
        hpb: Default::default(),
    };
    let mut ftl = Ftl::new(config, false, 1).unwrap();
    ftl.shrink_translation_pages(8);
    let payload = Payload::Unstored { lba_count: 1 };
    // Dirty entries in translation pages 0, 2 and 5 (two in page 2).
    for lba in [1u64, 17, 18, 41] {
        ftl.write(0, lba, payload, Hints::default()).unwrap();
    }
    ftl.flush(0).unwrap();
    assert_eq!(ftl.counters().mapping_programs, 0, "all still cached");
    ftl.nand_mut().cut_power();
    ftl.power_cycle(1_000_000_000).unwrap();
    assert_eq!(ftl.counters().mapping_programs, 3);
    ftl.check_invariants().unwrap();
    for lba in [1u64, 17, 18, 41] {
        assert!(ftl.is_mapped(lba), "lba {lba} lost");
    }
}

/// What a device config says the host can address is what the FTL built from it exports,
/// also where the frontiers a compressing device holds back (one per compression-ratio
/// log) bound the capacity rather than over-provisioning.
#[test]
fn the_config_and_the_ftl_agree_on_user_capacity() {
    for policy in CompressionPolicyKind::ALL {
        for blocks_per_plane in [48, 4_138] {
            let mut config = crate::presets::ldc_emmc_with(policy);
            config.nand.geometry.blocks_per_plane = blocks_per_plane;
            let said = config.user_capacity_bytes().unwrap();
            let ftl = Ftl::new(config, true, 1).unwrap();
            assert_eq!(
                said,
                ftl.user_capacity_bytes(),
                "{policy:?}, {blocks_per_plane} blocks per plane"
            );
        }
    }
}

/// A super-page device (`ftl.allocation = "super-page"`) of 2 or 4 planes per die, with
/// one command per die or independent planes, under random writes (FUA too), reads,
/// trims, flushes, remaps and power cuts, with and without injected flash faults: every
/// read matches the model (what a flush acknowledged survives every cut, staged pages
/// included) and the invariants hold after every step.
#[test]
fn super_page_allocation_keeps_everything_flushed_through_power_cuts() {
    use flashstack_nand::{ChannelModel, DieRules};
    let tally = RefCell::new(
        Exploration::new("ftl super_page_allocation_keeps_everything_flushed_through_power_cuts")
            .durable_by("flushed"),
    );
    // Wear-levelling cycles, relocated pages that had to leave their cursor's plane, and
    // super-block GC cycles.
    let relocation = RefCell::new((0u64, 0u64, 0u64));
    proptest!(
        ProptestConfig { cases: 400, ..ProptestConfig::default() },
        |(
            page in prop_oneof![Just(4096u32), Just(8192), Just(16384)],
            planes in prop_oneof![Just(2u32), Just(4)],
            strict in any::<bool>(),
            eager_wear_levelling in any::<bool>(),
            faults in prop_oneof![3 => Just(0.0f64), 1 => Just(0.01)],
            streams in prop_oneof![Just(StreamMode::Single), Just(StreamMode::Temperature)],
            collect in prop_oneof![3 => Just(GcCollect::SuperBlock), 1 => Just(GcCollect::Plane)],
            ops in prop::collection::vec(op_strategy(), 1..400),
            seed in any::<u64>(),
        )| {
            let mut config = tiny_config(page, streams, VictimPolicyKind::Greedy);
            config.ftl.allocation = Allocation::SuperPage;
            config.ftl.gc.collect = collect;
            if eager_wear_levelling {
                // Wear levelling checked after every erase and run at the least
                // unevenness, so its relocations (held like GC's) run within a few hundred
                // operations.
                config.ftl.wear.static_threshold = Some(1);
                config.ftl.wear.check_interval_erases = 1;
            }
            config.nand.geometry.planes_per_die = planes;
            config.nand.geometry.blocks_per_plane = 32 / planes;
            if strict {
                config.nand.die_rules = DieRules::OneCommandPerDie;
                config.nand.timing.channel_model = ChannelModel::Intervals;
            }
            let h = if faults > 0.0 {
                run_with_faults(config, &ops, seed, faults)
            } else {
                run(config, &ops, seed, false)
            };
            tally.borrow_mut().merge(&h.tally);
            let mut r = relocation.borrow_mut();
            r.0 += h.ftl.counters().wl_cycles;
            r.1 += h.ftl.counters().relocation_plane_fallbacks;
            r.2 += h.ftl.counters().gc_super_blocks;
        }
    );
    let tally = tally.into_inner();
    tally.report();
    let (wl_cycles, fallbacks, super_blocks) = relocation.into_inner();
    println!(
        "{wl_cycles} wear-levelling cycles, {fallbacks} relocated pages off their plane, \
         {super_blocks} super-block GC cycles"
    );
    assert!(
        tally.noted("mid-buffer") > 50
            && tally.noted("mid-GC") > 20
            && tally.noted("mid-GC-held") > 0
            && tally.noted("mid-super-block") > 0
            && wl_cycles > 0
            && fallbacks > 0
            && super_blocks > 0,
        "the cuts must land in partial super-pages, in GC and in GC's held pages; wear \
         levelling must run, relocations must meet a plane without room, super-block GC \
         must run and be cut: {}, {wl_cycles} wear-levelling cycles, {fallbacks} pages off \
         their plane, {super_blocks} super-block GC cycles",
        tally.line()
    );
}

/// Sequential host writes on a die of 4 planes with one command per die: with super-page
/// allocation the pages of a die's planes go to the NAND together and join one
/// multi-plane program (program commands about a quarter of page programs: 268 of
/// 1,024, 252 of them multi-plane); page by page, each
/// program has started before the next page is full, and almost none join.
#[test]
fn super_pages_form_multi_plane_programs_on_a_four_plane_die() {
    use flashstack_nand::{ChannelModel, DieRules};
    let mut figures = Vec::new();
    for allocation in [Allocation::Page, Allocation::SuperPage] {
        let mut config = tiny_config(16384, StreamMode::Single, VictimPolicyKind::Greedy);
        config.nand.geometry.planes_per_die = 4;
        config.nand.geometry.blocks_per_plane = 16;
        config.nand.die_rules = DieRules::OneCommandPerDie;
        config.nand.timing.channel_model = ChannelModel::Intervals;
        config.ftl.allocation = allocation;
        let mut ftl = Ftl::new(config, false, 1).unwrap();
        let mut now_ns = 0;
        for i in 0..1024u64 {
            let done = ftl
                .write(
                    now_ns,
                    i * 4 % 2048,
                    Payload::Unstored { lba_count: 4 },
                    Hints::default(),
                )
                .unwrap();
            now_ns = done.complete_ns;
        }
        ftl.flush(now_ns).unwrap();
        let d = ftl.nand().die_command_counters();
        let programs = ftl.nand().counters().page_programs;
        figures.push((
            programs,
            programs - d.plane_joins_program,
            d.multi_plane_programs,
        ));
    }
    let (page, super_page) = (figures[0], figures[1]);
    assert_eq!(page.0, super_page.0, "same pages programmed: {figures:?}");
    assert!(page.1 * 10 > page.0 * 9, "page by page: {figures:?}");
    assert!(
        super_page.2 > 0 && super_page.1 * 10 <= super_page.0 * 3,
        "super-pages: {figures:?}"
    );
}

/// Super-block GC on a die of 4 planes: one cycle collects a half-valid victim on each
/// plane, erases all four, and each victim's data lands on its own plane's pages (only
/// the difference between the victims' valid counts may cross planes), where moving the
/// same victims one after another through the die's stream sends three quarters of every
/// victim to the other planes.
#[test]
fn super_block_gc_keeps_each_victims_data_on_its_plane() {
    use crate::gc::Trigger;
    use flashstack_nand::{ChannelModel, DieRules};
    let mut figures = Vec::new();
    for together in [true, false] {
        let mut config = tiny_config(4096, StreamMode::Single, VictimPolicyKind::Greedy);
        config.nand.geometry.channels = 1;
        config.nand.geometry.planes_per_die = 4;
        config.nand.die_rules = DieRules::OneCommandPerDie;
        config.nand.timing.channel_model = ChannelModel::Intervals;
        config.ftl.allocation = Allocation::SuperPage;
        config.ftl.gc.collect = GcCollect::SuperBlock;
        config.ftl.wear.static_threshold = None;
        let mut ftl = Ftl::new(config, false, 1).unwrap();
        let lbas = ftl.capacity_lbas() / 2;
        let mut now_ns = 0;
        for lba in 0..lbas {
            let one = Payload::Unstored { lba_count: 1 };
            now_ns = ftl
                .write(now_ns, lba, one, Hints::default())
                .unwrap()
                .complete_ns;
        }
        for lba in (0..lbas).step_by(8) {
            now_ns = ftl.trim(now_ns, lba, 4).unwrap().complete_ns;
        }
        now_ns = ftl.flush(now_ns).unwrap().complete_ns;
        // One slot per page: slot numbers are page numbers.
        let unit_of = |ftl: &Ftl, lba: u64| {
            let slot = ftl.mapping.l2p.at(lba as usize);
            ftl.nand().unit_of_block(ftl.nand().block_of_page(slot))
        };
        let before: Vec<(u64, u32, u32)> = (0..lbas)
            .filter(|&lba| ftl.mapping.l2p.at(lba as usize) != crate::UNMAPPED)
            .map(|lba| {
                let slot = ftl.mapping.l2p.at(lba as usize);
                (lba, ftl.nand().block_of_page(slot), unit_of(&ftl, lba))
            })
            .collect();
        let erases = ftl.nand().counters().block_erases;
        let victims: Vec<u32> = match together {
            true => {
                let blocks_before: Vec<_> = ftl.blocks.state.clone();
                assert_eq!(
                    ftl.gc_super_block(0, now_ns, Trigger::Foreground).unwrap(),
                    4
                );
                (0..blocks_before.len() as u32)
                    .filter(|&b| {
                        blocks_before[b as usize] == BlockState::Sealed
                            && ftl.blocks.state[b as usize] == BlockState::Free
                    })
                    .collect()
            }
            false => {
                // The same four blocks, one after another.
                let victims: Vec<u32> = (0..4)
                    .filter_map(|u| {
                        ftl.nand()
                            .blocks_of_unit(u)
                            .filter(|&b| {
                                ftl.blocks.state[b as usize] == BlockState::Sealed
                                    && ftl.blocks.valid_slots[b as usize] > 0
                            })
                            .min_by_key(|&b| (ftl.blocks.valid_slots[b as usize], b))
                    })
                    .collect();
                for &v in &victims {
                    ftl.relocate_block(v, Cause::Gc, now_ns).unwrap();
                }
                ftl.make_durable(now_ns).unwrap();
                victims
            }
        };
        let moved: Vec<(u32, u32)> = before
            .iter()
            .filter(|&&(_, block, _)| victims.contains(&block))
            .map(|&(lba, _, unit)| (unit, unit_of(&ftl, lba)))
            .collect();
        let off_plane = moved.iter().filter(|(from, to)| from != to).count();
        figures.push((
            together,
            victims.len(),
            moved.len(),
            off_plane,
            ftl.nand().counters().block_erases - erases,
            ftl.counters().gc_super_blocks,
        ));
        ftl.check_invariants().unwrap();
    }
    println!(
        "(together, victims, moved, off their plane, erases, super-block cycles): {figures:?}"
    );
    let (together, apart) = (figures[0], figures[1]);
    assert_eq!(
        (together.1, together.4, together.5),
        (4, 4, 1),
        "{figures:?}"
    );
    assert!(together.2 >= 16, "GC had work: {figures:?}");
    assert_eq!(
        together.3, 0,
        "equal victims: nothing crosses planes: {figures:?}"
    );
    assert!(apart.3 * 2 > apart.2, "one after another: {figures:?}");
}

/// GC on a die of 4 planes with one command per die: page by page, every move goes to
/// the victim plane's frontier and is a program command of its own; with super-page
/// allocation the die's relocation stream writes its 4 planes at one page offset and
/// holds the pages until each plane has one, so the moves join as multi-plane programs
/// (5 half-valid victims, 20 moves: 20 program commands page by page, 5 multi-plane
/// commands of 4 planes with super-pages).
#[test]
fn gc_moves_form_multi_plane_programs_on_a_four_plane_die() {
    use flashstack_nand::{ChannelModel, DieRules};
    let mut figures = Vec::new();
    for allocation in [Allocation::Page, Allocation::SuperPage] {
        let mut config = tiny_config(4096, StreamMode::Single, VictimPolicyKind::Greedy);
        config.nand.geometry.channels = 1;
        config.nand.geometry.planes_per_die = 4;
        config.nand.die_rules = DieRules::OneCommandPerDie;
        config.nand.timing.channel_model = ChannelModel::Intervals;
        config.ftl.allocation = allocation;
        config.ftl.wear.static_threshold = None;
        let mut ftl = Ftl::new(config, false, 1).unwrap();
        let lbas = ftl.capacity_lbas() / 2;
        let mut now_ns = 0;
        for lba in 0..lbas {
            let one = Payload::Unstored { lba_count: 1 };
            now_ns = ftl
                .write(now_ns, lba, one, Hints::default())
                .unwrap()
                .complete_ns;
        }
        // Pages go to the planes in turn: every other group of 4 LBAs trimmed leaves each
        // plane's blocks half valid.
        for lba in (0..lbas).step_by(8) {
            now_ns = ftl.trim(now_ns, lba, 4).unwrap().complete_ns;
        }
        now_ns = ftl.flush(now_ns).unwrap().complete_ns;
        let d = ftl.nand().die_command_counters();
        let before = (
            ftl.nand().counters().page_programs,
            d.plane_joins_program,
            d.multi_plane_programs,
            ftl.counters().program_slots_gc,
        );
        // Collect every sealed block of plane 0 that holds data.
        let victims: Vec<u32> = ftl
            .nand()
            .blocks_of_unit(0)
            .filter(|&b| {
                ftl.blocks.state[b as usize] == BlockState::Sealed
                    && ftl.blocks.valid_slots[b as usize] > 0
            })
            .collect();
        for &victim in &victims {
            ftl.relocate_block(victim, Cause::Gc, now_ns).unwrap();
        }
        ftl.make_durable(now_ns).unwrap();
        let d = ftl.nand().die_command_counters();
        let programs = ftl.nand().counters().page_programs - before.0;
        let joins = d.plane_joins_program - before.1;
        figures.push((
            victims.len() as u64,
            ftl.counters().program_slots_gc - before.3,
            programs,
            programs - joins,
            d.multi_plane_programs - before.2,
        ));
    }
    println!("(victims, moves, programs, program commands, multi-plane): {figures:?}");
    let (page, super_page) = (figures[0], figures[1]);
    assert!(page.0 >= 4 && page.1 >= 16, "GC had work: {figures:?}");
    assert_eq!(page.1, super_page.1, "same moves: {figures:?}");
    assert_eq!(
        (page.2, page.3, page.4),
        (page.1, page.1, 0),
        "one command per move"
    );
    assert!(
        super_page.2 <= super_page.1 + 4
            && super_page.4 > 0
            && super_page.3 * 10 <= super_page.2 * 3,
        "multi-plane GC programs: {figures:?}"
    );
}

/// Super-page allocation refuses what it does not implement, naming `ftl.allocation`.
#[test]
fn super_page_allocation_refuses_what_it_does_not_implement() {
    let base = || {
        let mut c = tiny_config(16384, StreamMode::Single, VictimPolicyKind::Greedy);
        c.ftl.allocation = Allocation::SuperPage;
        c
    };
    assert!(base().validate().is_ok());
    let mut compressed = base();
    compressed.ftl.slot_bytes = 1024;
    compressed.ftl.compression = Some(CompressionConfig::with_policy(CompressionPolicyKind::Zftl));
    let mut buffered = base();
    buffered.ftl.write_buffer.capacity_bytes = 1 << 20;
    let mut page_unit = base();
    page_unit.ftl.mapping_unit_bytes = 16384;
    for (what, config) in [
        ("compression", compressed),
        ("write buffer", buffered),
        ("mapping unit", page_unit),
    ] {
        let e = config.validate().expect_err(what);
        assert_eq!(e.field, "ftl.allocation", "{what}: {e:?}");
        assert!(e.reason.contains("ftl.allocation = \"page\""), "{e:?}");
    }
    struct Zeros;
    impl crate::PageSource for Zeros {
        fn fill(&self, _lba: u64, _version: u32, out: &mut [u8]) {
            out.fill(0);
        }
    }
    let mut ftl = Ftl::new(base(), true, 1).unwrap();
    let e = ftl
        .set_page_source(Box::new(Zeros), false)
        .expect_err("pages by reference");
    assert_eq!(e.field, "ftl.allocation");
}
