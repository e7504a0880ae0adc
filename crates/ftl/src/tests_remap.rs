//! REMAP against the reference model: random writes, trims, remaps, GC and power cuts
//! (armed to tear any NAND operation, or between requests), recovery checked after each
//! cut (every flushed value kept, every interrupted remap all-or-nothing), invariants
//! checked after every step; plus the cost contract (no user data programmed), GC moving
//! a shared slot once, the fast paths with remaps, a cut at every NAND operation of a
//! remap-heavy stretch, and bad input.

use std::cell::RefCell;

use flashstack_block::explore::{self, Exploration};
use flashstack_block::{BlockDevice, BlockError, Hints, Payload, Remap, LBA_SIZE};
use proptest::prelude::*;

use super::{
    observe, page_of, run, run_checking_from, run_general_paths, run_with_faults, tiny_config, Op,
};
use crate::compression::CompressionPolicyKind;
use crate::config::*;
use crate::{Cause, Ftl};

fn remap_op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        35 => (0u64..10_000, 1u32..6, any::<bool>())
            .prop_map(|(lba, count, hot)| Op::Write { lba, count, hot }),
        12 => (0u64..10_000, 1u32..6).prop_map(|(lba, count)| Op::Read { lba, count }),
        10 => (0u64..10_000, 1u32..8).prop_map(|(lba, count)| Op::Trim { lba, count }),
        8 => (0u64..10_000, 0u64..10_000, 1u32..12)
            .prop_map(|(src, dst, count)| Op::Remap { src, dst, count }),
        4 => prop::collection::vec((0u64..10_000, 0u64..10_000, 1u32..5), 2..5)
            .prop_map(Op::RemapExtents),
        6 => Just(Op::Flush),
        3 => Just(Op::Idle),
        4 => (1u64..40).prop_map(|after_device_writes| Op::ArmPowerCut { after_device_writes }),
        1 => Just(Op::CutNow),
    ]
}

/// Uncompressed devices of several page and slot sizes (remap's domain), and now and then
/// a compressing one, which must refuse remaps with a typed error.
fn remap_config_strategy() -> impl Strategy<Value = DeviceConfig> {
    (
        prop_oneof![Just(4096u32), Just(8192), Just(16384)],
        prop_oneof![Just(StreamMode::Single), Just(StreamMode::Temperature)],
        prop_oneof![
            Just(VictimPolicyKind::Greedy),
            Just(VictimPolicyKind::CostBenefit)
        ],
        prop_oneof![3 => Just(4096u32), 1 => Just(1024)],
        prop_oneof![9 => Just(false), 1 => Just(true)],
    )
        .prop_map(|(page, streams, policy, slot_bytes, compress)| {
            let mut config = tiny_config(page, streams, policy);
            config.ftl.slot_bytes = slot_bytes;
            if compress {
                config.ftl.slot_bytes = 1024;
                config.ftl.compression =
                    Some(CompressionConfig::with_policy(CompressionPolicyKind::Zftl));
            }
            config
        })
}

/// 400 sequences of up to 400 operations.
#[test]
fn remaps_match_the_model_through_gc_trims_and_power_cuts() {
    let tally = RefCell::new(
        Exploration::new("ftl remaps_match_the_model_through_gc_trims_and_power_cuts")
            .durable_by("flushed"),
    );
    let remaps = RefCell::new(0u64);
    let shared_moves = RefCell::new(0u64);
    proptest!(
        ProptestConfig { cases: 400, ..ProptestConfig::default() },
        |(
            config in remap_config_strategy(),
            ops in prop::collection::vec(remap_op_strategy(), 1..400),
            seed in any::<u64>(),
        )| {
            let h = run(config, &ops, seed, false);
            tally.borrow_mut().merge(&h.tally);
            *remaps.borrow_mut() += h.remaps_done;
            *shared_moves.borrow_mut() += h.ftl.counters().shared_slots_moved;
        }
    );
    let tally = tally.into_inner();
    tally.report();
    assert!(remaps.into_inner() > 5_000, "the sequences must remap");
    let shared_moves = shared_moves.into_inner();
    assert!(
        shared_moves > 200,
        "GC must move shared slots: {shared_moves}"
    );
    assert!(
        tally.noted("mid-remap") > 50 && tally.noted("mid-GC") > 15,
        "the cuts must land in remaps and in GC: {}",
        tally.line()
    );
}

/// Remaps with injected program, erase and read faults: a failed program moves a page
/// buffer (shared slots and all) to another page; nothing acknowledged is lost.
#[test]
fn remaps_survive_injected_flash_faults() {
    let tally = RefCell::new(
        Exploration::new("ftl remaps_survive_injected_flash_faults").durable_by("flushed"),
    );
    proptest!(
        ProptestConfig { cases: 150, ..ProptestConfig::default() },
        |(
            config in remap_config_strategy(),
            ops in prop::collection::vec(remap_op_strategy(), 1..300),
            seed in any::<u64>(),
        )| {
            let h = run_with_faults(config, &ops, seed, 0.02);
            tally.borrow_mut().merge(&h.tally);
        }
    );
    tally.into_inner().report();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]

    /// With remaps in the sequence (and so shared slots), the fused paths for flash that
    /// cannot fail still give exactly what the general paths give.
    #[test]
    fn fast_paths_match_the_general_paths_with_remaps(
        ops in prop::collection::vec(remap_op_strategy(), 1..300),
        seed in any::<u64>(),
    ) {
        let ops: Vec<Op> = ops
            .into_iter()
            .filter(|op| !matches!(op, Op::ArmPowerCut { .. } | Op::CutNow))
            .collect();
        let config = tiny_config(4096, StreamMode::Temperature, VictimPolicyKind::Greedy);
        let mut fast = run(config.clone(), &ops, seed, false);
        let mut general = run_general_paths(config, &ops, seed);
        prop_assert_eq!(observe(&mut fast), observe(&mut general));
    }
}

fn write_tags(ftl: &mut Ftl, now_ns: u64, lba: u64, tags: std::ops::Range<u64>) {
    let bytes: Vec<u8> = tags.flat_map(page_of).collect();
    ftl.write(now_ns, lba, Payload::Bytes(&bytes), Hints::default())
        .unwrap();
}

fn read_lba(ftl: &mut Ftl, now_ns: u64, lba: u64) -> Vec<u8> {
    let mut out = vec![0u8; LBA_SIZE];
    ftl.read(now_ns, lba, 1, Some(&mut out)).unwrap();
    out
}

/// The cost contract: a remap of flushed data programs one record page and no data slot,
/// and its destination reads the source's bytes, also after a power cycle.
#[test]
fn a_remap_programs_no_user_data() {
    let config = tiny_config(4096, StreamMode::Single, VictimPolicyKind::Greedy);
    let mut ftl = Ftl::new(config, true, 1).unwrap();
    write_tags(&mut ftl, 0, 0, 1..17);
    ftl.flush(1_000).unwrap();
    let before = ftl.counters().clone();
    ftl.remap(2_000, 0, 40, 16).unwrap();
    let after = ftl.counters().clone();
    assert_eq!(after.page_programs - before.page_programs, 1, "{after:?}");
    assert_eq!(after.remap_record_pages - before.remap_record_pages, 1);
    assert_eq!(after.program_slots_host, before.program_slots_host);
    assert_eq!(after.program_slots_gc, before.program_slots_gc);
    assert_eq!(after.program_slots_wl, before.program_slots_wl);
    assert_eq!((after.host_remap_requests, after.host_remap_lbas), (1, 16));
    assert_eq!(ftl.nand().counters().page_programs, after.page_programs);
    ftl.check_invariants().unwrap();
    ftl.power_cycle(3_000).unwrap();
    ftl.check_invariants().unwrap();
    for i in 0..16u64 {
        assert_eq!(read_lba(&mut ftl, 4_000, 40 + i), page_of(1 + i));
        assert_eq!(read_lba(&mut ftl, 4_000, i), page_of(1 + i), "src is kept");
    }
}

/// A slot three logical pages share is moved once by GC, and all three follow it; the
/// sharing survives a power cycle.
#[test]
fn gc_moves_a_shared_slot_once_for_all_its_referrers() {
    let mut config = tiny_config(4096, StreamMode::Single, VictimPolicyKind::Greedy);
    config.nand.geometry.channels = 1;
    config.nand.geometry.planes_per_die = 1;
    config.nand.geometry.blocks_per_plane = 40;
    let mut ftl = Ftl::new(config, true, 1).unwrap();
    // One block of 8 one-slot pages on one stream.
    write_tags(&mut ftl, 0, 0, 1..9);
    ftl.flush(1_000).unwrap();
    ftl.remap(2_000, 0, 100, 8).unwrap();
    ftl.remap(3_000, 100, 200, 8).unwrap();
    ftl.trim(3_500, 0, 2).unwrap(); // Two slots now held by aliases only.
    let block = ftl.block_of_slot(ftl.mapping.l2p.at(100));
    assert_eq!(ftl.valid_slots_per_block()[block as usize], 8);
    let gc_slots = ftl.counters().program_slots_gc;
    ftl.relocate_block(block, Cause::Gc, 4_000).unwrap();
    ftl.make_durable(5_000).unwrap();
    assert_eq!(
        ftl.counters().program_slots_gc - gc_slots,
        8,
        "one move per slot"
    );
    assert_eq!(ftl.valid_slots_per_block()[block as usize], 0);
    ftl.check_invariants().unwrap();
    let check = |ftl: &mut Ftl| {
        for i in 0..8u64 {
            let want = page_of(1 + i);
            assert_eq!(read_lba(ftl, 9_000, 100 + i), want);
            assert_eq!(read_lba(ftl, 9_000, 200 + i), want);
            let src = if i < 2 { page_of(0) } else { want };
            assert_eq!(read_lba(ftl, 9_000, i), src);
            assert_eq!(
                ftl.mapping.l2p.at(100 + i as usize),
                ftl.mapping.l2p.at(200 + i as usize)
            );
        }
    };
    check(&mut ftl);
    ftl.power_cycle(10_000).unwrap();
    ftl.check_invariants().unwrap();
    check(&mut ftl);
}

/// Janusd's pattern (write, remap to a new range, trim the old one, overwrite) on a small
/// device kept under GC pressure, with a power cut at every NAND operation of a stretch
/// of it, one run per cut: every flushed value kept, every remap all-or-nothing.
#[test]
fn power_cut_at_every_point_of_remaps_under_gc() {
    let mut config = tiny_config(4096, StreamMode::Temperature, VictimPolicyKind::Greedy);
    config.nand.geometry.channels = 1;
    config.nand.geometry.blocks_per_plane = 24;
    let mut rng = flashstack_sim::Rng::new(3);
    const CUT_AT_OP: usize = 500;
    let ops: Vec<Op> = (0..700)
        .map(|i| match i % 10 {
            1 | 3 | 6 => Op::Remap {
                src: rng.below(10_000),
                dst: rng.below(10_000),
                count: 1 + rng.below(6) as u32,
            },
            4 | 7 => Op::Trim {
                lba: rng.below(10_000),
                count: 1 + rng.below(6) as u32,
            },
            9 => Op::Flush,
            _ => Op::Write {
                lba: rng.below(10_000),
                count: 1 + rng.below(3) as u32,
                hot: rng.chance(0.5),
            },
        })
        .collect();
    let mut tally =
        Exploration::new("ftl power_cut_at_every_point_of_remaps_under_gc").durable_by("flushed");
    let window = 200 * explore::scale();
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
        assert!(
            h.tally.cut_points() == 1 || cut >= 200,
            "the cut armed {cut} NAND operations after op {CUT_AT_OP} did not fire"
        );
        tally.merge(&h.tally);
    }
    tally.report();
    assert!(tally.noted("mid-remap") > 20, "{}", tally.line());
    assert!(tally.noted("mid-GC") > 10, "{}", tally.line());
}

#[test]
fn bad_remaps_are_typed_errors_and_change_nothing() {
    let config = tiny_config(4096, StreamMode::Single, VictimPolicyKind::Greedy);
    let mut ftl = Ftl::new(config, true, 1).unwrap();
    let cap = ftl.capacity_lbas();
    let max = ftl.remap_lbas_max();
    write_tags(&mut ftl, 0, 0, 1..5);
    let programs = ftl.counters().page_programs;
    let cases = [
        (ftl.remap(1, 0, cap - 1, 2), "out of range"),
        (ftl.remap(1, 0, 2, 4), "overlap"),
        (ftl.remap(1, 10, 10, 1), "same range"),
        (ftl.remap(1, 0, cap / 2, max + 1), "too long"),
        (ftl.remap(1, 0, 8, 0), "empty"),
        (ftl.remap(1, u64::MAX, 0, 1), "overflow"),
    ];
    for (result, what) in cases {
        assert!(
            matches!(
                result,
                Err(BlockError::OutOfRange { .. }
                    | BlockError::RemapOverlap { .. }
                    | BlockError::RemapTooLong { .. }
                    | BlockError::Empty)
            ),
            "{what}: {result:?}"
        );
    }
    assert_eq!(
        ftl.counters().page_programs,
        programs,
        "refused remaps program nothing"
    );
    assert_eq!(ftl.counters().host_remap_requests, 0);
    ftl.check_invariants().unwrap();

    let mut config = tiny_config(4096, StreamMode::Single, VictimPolicyKind::Greedy);
    config.ftl.slot_bytes = 1024;
    config.ftl.compression = Some(CompressionConfig::with_policy(CompressionPolicyKind::Zftl));
    let mut ftl = Ftl::new(config, true, 1).unwrap();
    assert!(matches!(
        ftl.remap(1, 0, 8, 2),
        Err(BlockError::Unsupported { .. })
    ));
    assert!(ftl.as_remap().is_some());
}

/// A shared slot GC moved into a partly filled page buffer whose owner is overwritten
/// before the page is programmed (wear levelling can leave such a buffer): the page names
/// a sharer instead (never the overwritten owner), and the sharer keeps its data through
/// a power cycle. With `program_fail_probability`, the buffer's program may fail and move
/// the buffer, shared slots and all, to another page.
fn buffered_shared_slot(program_fail_probability: f64, seed: u64) -> Ftl {
    let mut config = tiny_config(16384, StreamMode::Single, VictimPolicyKind::Greedy);
    config.nand.geometry.channels = 1;
    config.nand.geometry.planes_per_die = 1;
    config.nand.geometry.blocks_per_plane = 40;
    config.nand.faults.program_fail_probability = program_fail_probability;
    let mut ftl = Ftl::new(config, true, seed).unwrap();
    write_tags(&mut ftl, 0, 0, 1..5); // One page of four slots.
    ftl.flush(1_000).unwrap();
    ftl.remap(2_000, 0, 100, 2).unwrap();
    ftl.trim(3_000, 2, 2).unwrap();
    let block = ftl.block_of_slot(ftl.mapping.l2p.at(0));
    ftl.relocate_block(block, Cause::WearLevel, 4_000).unwrap();
    let moved = ftl.mapping.l2p.at(100);
    assert!(
        ftl.nand().oob(ftl.page_of_slot(moved)).is_none(),
        "still buffered"
    );
    write_tags(&mut ftl, 5_000, 0, 50..51); // The owner moves on.
    ftl.flush(6_000).unwrap();
    ftl.check_invariants().unwrap();
    assert_eq!(
        ftl.slot_owner(ftl.mapping.l2p.at(100)),
        Some(100),
        "the page names the sharer"
    );
    for now in [7_000, 9_000] {
        assert_eq!(read_lba(&mut ftl, now, 100), page_of(1));
        assert_eq!(read_lba(&mut ftl, now, 101), page_of(2));
        assert_eq!(read_lba(&mut ftl, now, 0), page_of(50));
        ftl.power_cycle(now + 1_000).unwrap();
        ftl.check_invariants().unwrap();
    }
    ftl
}

#[test]
fn a_buffered_shared_slot_outlives_its_overwritten_owner() {
    buffered_shared_slot(0.0, 1);
}

#[test]
fn a_failed_program_moves_a_buffered_shared_slot_with_its_sharers() {
    let failures: u64 = (0..40)
        .map(|seed| buffered_shared_slot(0.3, seed).counters().program_failures)
        .sum();
    assert!(failures > 10, "programs must fail: {failures}");
}

/// Remap records survive a save and rebuild of the device (`to_parts` / `from_parts`), and
/// a saved bind naming a page or slot beyond the device is refused, naming the field.
#[test]
fn remap_records_round_trip_through_device_parts() {
    let config = tiny_config(4096, StreamMode::Single, VictimPolicyKind::Greedy);
    let mut ftl = Ftl::new(config.clone(), true, 1).unwrap();
    write_tags(&mut ftl, 0, 0, 1..9);
    ftl.remap(1_000, 0, 50, 8).unwrap();
    ftl.trim(2_000, 0, 8).unwrap();
    ftl.flush(3_000).unwrap();
    let parts = ftl.to_parts().unwrap();
    assert_eq!(
        parts.bind_log.iter().map(|(_, b)| b.len()).sum::<usize>(),
        8
    );
    let (mut rebuilt, _) = Ftl::from_parts(config.clone(), parts.clone(), 1, 4_000).unwrap();
    rebuilt.check_invariants().unwrap();
    for i in 0..8u64 {
        assert_eq!(read_lba(&mut rebuilt, 5_000, 50 + i), page_of(1 + i));
        assert_eq!(read_lba(&mut rebuilt, 5_000, i), page_of(0));
    }
    let mut bad = parts;
    bad.bind_log[0].1[0].0 = u32::MAX - 1;
    let e = Ftl::from_parts(config, bad, 1, 4_000).err().unwrap();
    assert!(e.to_string().contains("bind_log"), "{e}");
}
