//! A mapping unit as large as the flash page (`unit.rs`) against the reference model:
//! random 4 KiB writes, reads, trims and power cuts (armed ones tear the program of a
//! read-modify-write or of GC), with the placement rule checked after every step; the
//! read-modify-write itself, a trim of half a unit, a cut in the middle of an update, and
//! configurations that must be refused.

use std::cell::RefCell;

use super::*;
use crate::config::{DestagePolicyKind, WriteBufferConfig};

fn unit_config(page: u32, streams: StreamMode) -> DeviceConfig {
    let mut config = tiny_config(page, streams, VictimPolicyKind::Greedy);
    config.ftl.mapping_unit_bytes = page;
    config
}

/// Mostly single 4 KiB writes at random LBAs (the partial updates), some longer ones
/// (whole units, and units cut by the request's ends), reads, trims, flushes and cuts.
fn unit_op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        30 => (0u64..10_000, any::<bool>())
            .prop_map(|(lba, hot)| Op::Write { lba, count: 1, hot }),
        8 => (0u64..10_000, 2u32..6, any::<bool>())
            .prop_map(|(lba, count, hot)| Op::Write { lba, count, hot }),
        15 => (0u64..10_000, 1u32..6).prop_map(|(lba, count)| Op::Read { lba, count }),
        8 => (0u64..10_000, 1u32..4).prop_map(|(lba, count)| Op::Trim { lba, count }),
        6 => Just(Op::Flush),
        2 => Just(Op::Idle),
        4 => (1u64..40).prop_map(|after_device_writes| Op::ArmPowerCut { after_device_writes }),
        1 => Just(Op::CutNow),
        2 => (0u64..10_000, 1u32..4, any::<bool>())
            .prop_map(|(lba, count, hot)| Op::WriteFua { lba, count, hot }),
    ]
}

/// Random sequences on 8 and 16 KiB pages mapped a page at a time, sometimes over a
/// mapping cache or a write buffer: every read sees the newest data, after every power
/// cut each LBA holds its flushed value or a later one (never another LBA's, never a
/// half-updated unit's stale copy), and the placement rule holds throughout
/// (`check_invariants` after each step).
#[test]
fn page_units_keep_everything_flushed_through_rmw_gc_trims_and_power_cuts() {
    let totals = RefCell::new([0u64; 5]);
    let tally = RefCell::new(Exploration::new("ftl page-sized mapping unit").durable_by("flushed"));
    proptest!(
        ProptestConfig { cases: 600, ..ProptestConfig::default() },
        |(
            page in prop_oneof![3 => Just(8192u32), 1 => Just(16384)],
            streams in prop_oneof![Just(StreamMode::Single), Just(StreamMode::Temperature)],
            cached in prop::bool::weighted(0.25),
            buffered in prop::bool::weighted(0.25),
            ops in prop::collection::vec(unit_op_strategy(), 1..400),
            seed in any::<u64>(),
        )| {
            let mut config = unit_config(page, streams);
            if cached {
                config.ftl.mapping_cache.sram_bytes = 8 * 8;
            }
            if buffered {
                config.ftl.write_buffer = WriteBufferConfig {
                    capacity_bytes: 4 * page as u64,
                    destage: DestagePolicyKind::Fifo,
                    dram_ns_per_4k: 300,
                    power_loss_protected: false,
                };
            }
            let h = run(config, &ops, seed, false);
            tally.borrow_mut().merge(&h.tally);
            let c = h.ftl.counters();
            let mut t = totals.borrow_mut();
            for (total, n) in t.iter_mut().zip([
                c.rmw_reads,
                c.program_slots_rmw,
                c.gc_cycles_foreground + c.gc_cycles_background,
                c.power_cycles,
                c.host_trim_lbas,
            ]) {
                *total += n;
            }
        }
    );
    let t = totals.into_inner();
    println!("rmw reads, rmw slots, GC cycles, power cycles, trimmed LBAs: {t:?}");
    tally.into_inner().report();
    assert!(
        t.iter().all(|&n| n > 100),
        "the runs must exercise read-modify-writes, GC, cuts and trims: {t:?}"
    );
}

/// Program and erase failures and read retries with page-sized units: a failed program
/// moves the unit's page whole (same offsets), retired blocks' units move as pages, and
/// nothing acknowledged and flushed is lost.
#[test]
fn page_units_survive_injected_flash_faults() {
    let tally = RefCell::new(
        Exploration::new("ftl page-sized units with flash faults").durable_by("flushed"),
    );
    let failures = std::cell::Cell::new(0u64);
    proptest!(
        ProptestConfig { cases: 300, ..ProptestConfig::default() },
        |(
            page in prop_oneof![Just(8192u32), Just(16384)],
            ops in prop::collection::vec(unit_op_strategy(), 1..300),
            seed in any::<u64>(),
        )| {
            let h = run_with_faults(unit_config(page, StreamMode::Temperature), &ops, seed, 0.02);
            tally.borrow_mut().merge(&h.tally);
            failures.set(failures.get() + h.ftl.counters().program_failures);
        }
    );
    tally.into_inner().report();
    assert!(
        failures.get() > 50,
        "programs must fail: {}",
        failures.get()
    );
}

fn write_tag(ftl: &mut Ftl, now: u64, lba: u64, tag: u64) {
    ftl.write(now, lba, Payload::Bytes(&page_of(tag)), Hints::default())
        .unwrap();
}

fn read_tag(ftl: &mut Ftl, now: u64, lba: u64) -> Vec<u8> {
    let mut out = vec![0u8; LBA_SIZE];
    ftl.read(now, lba, 1, Some(&mut out)).unwrap();
    out
}

/// A 4 KiB write to half a unit reads the other half only if it holds data, and programs
/// the whole page either way; a trim of one half keeps the other readable and valid.
#[test]
fn a_partial_update_reads_the_rest_only_when_it_holds_data() {
    let mut ftl = Ftl::new(unit_config(8192, StreamMode::Single), true, 1).unwrap();
    let write = |ftl: &mut Ftl, now: u64, lba: u64, tag: u64| {
        let done = ftl
            .write(now, lba, Payload::Bytes(&page_of(tag)), Hints::default())
            .unwrap();
        done.complete_ns - now
    };
    let alone_ns = write(&mut ftl, 1_000, 10, 1);
    let c = ftl.counters().clone();
    assert_eq!(
        (c.page_programs, c.rmw_reads),
        (1, 0),
        "LBA 11 never written"
    );
    assert_eq!((c.program_slots_host, c.program_slots_padding), (1, 1));
    let rmw_ns = write(&mut ftl, 2_000_000, 11, 2);
    // The read of the other half comes first: tR (25 µs) and half a page over the channel
    // (25 µs) before the program.
    assert_eq!(rmw_ns, alone_ns + 50_000, "the update waits for its read");
    let c = ftl.counters().clone();
    assert_eq!(
        (c.page_programs, c.rmw_reads, c.program_slots_rmw),
        (2, 1, 1)
    );
    let page = |ftl: &Ftl, lba: usize| ftl.mapping.l2p.at(lba) / 2;
    assert_eq!(page(&ftl, 10), page(&ftl, 11), "one unit, one page");
    assert_eq!(read_tag(&mut ftl, 4_000_000, 10), page_of(1));
    assert_eq!(read_tag(&mut ftl, 4_000_000, 11), page_of(2));
    // Trim half: the other half stays mapped, in its page, counted valid.
    ftl.trim(5_000_000, 10, 1).unwrap();
    assert!(!ftl.is_mapped(10) && ftl.is_mapped(11));
    assert_eq!(read_tag(&mut ftl, 6_000_000, 11), page_of(2));
    ftl.check_invariants().unwrap();
    // Writing LBA 11 again reads nothing (its other half, 10, was trimmed); writing 10
    // then reads 11 and copies it.
    let reads = ftl.counters().rmw_reads;
    write_tag(&mut ftl, 7_000_000, 11, 3);
    assert_eq!(
        ftl.counters().rmw_reads,
        reads,
        "the trimmed half is not read"
    );
    write_tag(&mut ftl, 8_000_000, 10, 4);
    assert_eq!(ftl.counters().rmw_reads, reads + 1);
    ftl.flush(9_000_000).unwrap();
    ftl.power_cycle(10_000_000).unwrap();
    ftl.check_invariants().unwrap();
    assert_eq!(read_tag(&mut ftl, 20_000_000, 10), page_of(4));
    assert_eq!(read_tag(&mut ftl, 20_000_000, 11), page_of(3));
}

/// With a write buffer, a unit is destaged once with every half the buffer holds: a 4 KiB
/// write at LBA 1 then 16 KiB at LBAs 2..6 group as units {0,1} {2,3} {4,5}, not as the
/// FIFO's pages [1,2] [3,4] [5], which would program units 2 and 4 twice, the second
/// time reading the half programmed the first time.
#[test]
fn a_buffered_unit_is_destaged_once_with_its_buffered_mates() {
    let mut config = unit_config(8192, StreamMode::Single);
    config.ftl.write_buffer = WriteBufferConfig {
        capacity_bytes: 64 * 4096,
        destage: DestagePolicyKind::Fifo,
        dram_ns_per_4k: 300,
        power_loss_protected: false,
    };
    let mut ftl = Ftl::new(config, true, 1).unwrap();
    write_tag(&mut ftl, 1_000, 1, 1);
    let data: Vec<u8> = (2..6).flat_map(page_of).collect();
    ftl.write(2_000, 2, Payload::Bytes(&data), Hints::default())
        .unwrap();
    ftl.flush(3_000).unwrap();
    let c = ftl.counters().clone();
    assert_eq!(
        (c.page_programs, c.rmw_reads, c.program_slots_rmw),
        (3, 0, 0),
        "three units, each programmed once, nothing read back"
    );
    assert_eq!((c.program_slots_host, c.program_slots_padding), (5, 1));
    for lba in 1..6 {
        assert_eq!(read_tag(&mut ftl, 10_000_000, lba), page_of(lba));
    }
    ftl.check_invariants().unwrap();
}

/// A power cut that tears the program of an update loses nothing durable: the unit's old
/// page stays mapped until the new one is programmed, so after recovery both halves read
/// their flushed values.
#[test]
fn a_cut_during_a_read_modify_write_keeps_the_old_unit() {
    let mut ftl = Ftl::new(unit_config(8192, StreamMode::Single), true, 3).unwrap();
    write_tag(&mut ftl, 1_000, 20, 1);
    write_tag(&mut ftl, 2_000_000, 21, 2);
    ftl.flush(3_000_000).unwrap();
    // The next device write is the update's program: the cut tears it.
    ftl.nand_mut().arm_power_cut(1);
    let result = ftl.write(4_000_000, 20, Payload::Bytes(&page_of(3)), Hints::default());
    assert!(matches!(result, Err(BlockError::PowerLoss)), "{result:?}");
    assert!(matches!(ftl.nand().torn_op(), Some(TornOp::Program { .. })));
    ftl.power_cycle(5_000_000).unwrap();
    ftl.check_invariants().unwrap();
    assert_eq!(read_tag(&mut ftl, 6_000_000, 20), page_of(1));
    assert_eq!(read_tag(&mut ftl, 6_000_000, 21), page_of(2));
}

/// A trim not yet logged when the cut comes, while the rest of its unit was written
/// again since: recovery finds the trimmed half in the unit's older page and the rest in
/// the newer one, keeps the newer page's (the trim was the host's last word on the other
/// half) and logs the trim again, so the placement rule holds after recovery.
#[test]
fn recovery_keeps_a_unit_in_one_page() {
    let mut ftl = Ftl::new(unit_config(8192, StreamMode::Single), true, 5).unwrap();
    write_tag(&mut ftl, 1_000, 30, 1);
    write_tag(&mut ftl, 2_000_000, 31, 2);
    ftl.flush(3_000_000).unwrap();
    ftl.trim(4_000_000, 31, 1).unwrap();
    write_tag(&mut ftl, 5_000_000, 30, 3);
    assert!(!ftl.pending_trims.is_empty(), "the trim is not logged yet");
    ftl.nand_mut().cut_power();
    ftl.power_cycle(6_000_000).unwrap();
    ftl.check_invariants().unwrap();
    assert_eq!(read_tag(&mut ftl, 7_000_000, 30), page_of(3));
    assert!(!ftl.is_mapped(31), "the trimmed half stays trimmed");
    // The trim is logged again: a second cut finds the same.
    ftl.flush(8_000_000).unwrap();
    ftl.power_cycle(9_000_000).unwrap();
    ftl.check_invariants().unwrap();
    assert!(!ftl.is_mapped(31));
    assert_eq!(read_tag(&mut ftl, 10_000_000, 30), page_of(3));
}

/// The mapping cache keys its entries by unit: the two halves of a unit are one entry,
/// so the second half's lookup hits.
#[test]
fn a_cached_entry_covers_the_whole_unit() {
    let mut config = unit_config(8192, StreamMode::Single);
    config.ftl.mapping_cache.sram_bytes = 8 * 8;
    let mut ftl = Ftl::new(config, false, 7).unwrap();
    let unstored = Payload::Unstored { lba_count: 1 };
    ftl.write(1_000, 40, unstored, Hints::default()).unwrap();
    ftl.write(2_000_000, 41, unstored, Hints::default())
        .unwrap();
    let c = ftl.counters();
    assert_eq!((c.cmt_misses, c.cmt_hits), (1, 1));
}

/// Garbage collection moves a unit as one page: a victim holding units with one live
/// half each moves each to a page of its own, padded, never two units in one page.
#[test]
fn gc_moves_units_as_pages() {
    let mut ftl = Ftl::new(unit_config(8192, StreamMode::Single), false, 9).unwrap();
    let lbas = ftl.capacity_lbas();
    let mut rng = flashstack_sim::Rng::new(11);
    let mut now = 0;
    for i in 0..lbas * 6 {
        now += 300_000;
        let lba = rng.below(lbas);
        let payload = Payload::Unstored { lba_count: 1 };
        ftl.write(now, lba, payload, Hints::default()).unwrap();
        if i % 7 == 0 {
            ftl.trim(now + 1, rng.below(lbas), 1).unwrap();
        }
    }
    ftl.check_invariants().unwrap();
    let c = ftl.counters();
    assert!(c.program_slots_gc > 0 && c.rmw_reads > 0, "{c:?}");
    // Every GC page read moved one unit into one page of its own.
    assert!(c.program_slots_gc <= 2 * c.page_reads_relocation, "{c:?}");
}

/// Page-sized units on constructed preconditioning: each valid unit fills its page.
#[test]
fn construction_lays_out_whole_units() {
    let ftl = Ftl::new(unit_config(8192, StreamMode::Single), false, 13).unwrap();
    let filled = ftl.capacity_lbas() * 7 / 10;
    let (mut built, state) = ftl.constructed_steady_state(filled, 17, 0).unwrap();
    built.check_invariants().unwrap();
    assert_eq!(built.mapped_lbas(), filled);
    assert!(state.victim_valid_fraction > 0.0 && state.victim_valid_fraction < 1.0);
    // Overwrites run on the constructed device.
    let mut rng = flashstack_sim::Rng::new(19);
    for i in 0..filled * 2 {
        let payload = Payload::Unstored { lba_count: 1 };
        let lba = rng.below(filled);
        built
            .write(1_000_000 + i * 300_000, lba, payload, Hints::default())
            .unwrap();
    }
    built.check_invariants().unwrap();
    assert!(built.counters().erases_gc > 0);
}

/// What a page-sized unit cannot be combined with, and sizes that are neither 4 KiB nor
/// the page, are refused with the field and the reason.
#[test]
fn impossible_mapping_units_are_refused() {
    let refused = |config: DeviceConfig, words: &str| {
        let err = config.validate().unwrap_err();
        assert_eq!(err.field, "ftl.mapping_unit_bytes", "{err}");
        assert!(err.reason.contains(words), "{err}");
    };
    let mut c = unit_config(8192, StreamMode::Single);
    c.ftl.mapping_unit_bytes = 16384;
    refused(c, "or the flash page size (8192 bytes");
    let mut c = unit_config(4096, StreamMode::Single);
    c.ftl.mapping_unit_bytes = 8192;
    refused(c, "or the flash page size (4096 bytes");
    let mut c = unit_config(16384, StreamMode::Single);
    c.ftl.mapping_unit_bytes = 8192;
    refused(c, "must be 4096");
    let mut c = unit_config(8192, StreamMode::Single);
    c.ftl.slot_bytes = 1024;
    refused(c, "ftl.slot_bytes below 4096");
    let mut c = unit_config(8192, StreamMode::Single);
    c.ftl.slot_bytes = 1024;
    c.ftl.compression = Some(CompressionConfig::with_policy(CompressionPolicyKind::Zftl));
    refused(c, "not with ftl.compression");
    let mut c = unit_config(8192, StreamMode::Single);
    c.ftl.mapping_cache.sram_bytes = 64;
    c.ftl.mapping_cache.hpb.host_map_bytes = 1 << 20;
    refused(c, "HPB entries cover 4 KiB");
    // In a device file, the same words.
    let text = crate::presets::preset("mqsim-page").unwrap().to_toml();
    assert!(text.contains("mapping_unit_bytes = 8192"), "{text}");
    let bad = text.replace("mapping_unit_bytes = 8192", "mapping_unit_bytes = 12288");
    let err = DeviceConfig::from_toml(&bad).unwrap_err();
    assert_eq!(err.field, "ftl.mapping_unit_bytes", "{err}");
    // Remap and pages by reference: refused at use, with the reason.
    let mut ftl = Ftl::new(unit_config(8192, StreamMode::Single), true, 1).unwrap();
    write_tag(&mut ftl, 1_000, 0, 1);
    let extents = [flashstack_block::RemapExtent {
        src: 0,
        dst: 4,
        count: 1,
    }];
    match ftl.remap_extents(2_000_000, &extents) {
        Err(BlockError::Unsupported { reason, .. }) => {
            assert!(reason.contains("mapping_unit_bytes"), "{reason}")
        }
        other => panic!("remap with page-sized units: {other:?}"),
    }
    struct Zeros;
    impl crate::PageSource for Zeros {
        fn fill(&self, _: u64, _: u32, out: &mut [u8]) {
            out.fill(0);
        }
    }
    let err = ftl.set_page_source(Box::new(Zeros), false).unwrap_err();
    assert_eq!(err.field, "ftl.mapping_unit_bytes", "{err}");
    // 4 KiB mapping leaves the device file as it was: no new key.
    let text = crate::presets::mqsim_default().to_toml();
    assert!(!text.contains("mapping_unit_bytes"), "{text}");
}
