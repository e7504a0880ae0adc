use super::*;

fn small_config(page_size_bytes: u32) -> NandConfig {
    NandConfig {
        geometry: Geometry {
            channels: 2,
            dies_per_channel: 1,
            planes_per_die: 1,
            blocks_per_plane: 4,
            pages_per_block: 4,
            page_size_bytes,
            oob_size_bytes: 64,
        },
        timing: Timing {
            read_ns: 25_000,
            program_ns: 200_000,
            erase_ns: 1_500_000,
            transfer_ns_per_page: 100_000,
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
            pe_cycles_max: 3,
            retire_at_limit: true,
        },
        faults: Faults::default(),
        die_rules: Default::default(),
        multi_plane: true,
    }
}

fn oob(lpns: &[u32], seq: u64) -> PageOob<'_> {
    PageOob {
        lpns,
        seq,
        flags: 0,
    }
}

#[test]
fn program_read_round_trip_with_timing() {
    let mut nand = Nand::new(small_config(8192), true, 1).unwrap();
    let mut data = vec![0u8; 8192];
    data[..4096].fill(0xAB);
    data[4096..].fill(0xCD);
    let t = nand
        .program(0, oob(&[7, NO_LPN], 1), Some(&data), 0)
        .unwrap();
    // Transfer then program on an idle die.
    assert_eq!(
        t,
        OpTiming {
            start_ns: 0,
            end_ns: 300_000
        }
    );
    let mut out = vec![0u8; 4096];
    let r = nand.read(0, 0..1, Some(&mut out), 0).unwrap();
    assert!(out.iter().all(|&b| b == 0xAB));
    // The read waits for the die, senses (25 us) and moves half a page (50 us).
    assert_eq!(r.timing.end_ns, 300_000 + 25_000 + 50_000);
    // The padding slot stored nothing.
    nand.read(0, 1..2, Some(&mut out), 0).unwrap();
    assert!(out.iter().all(|&b| b == 0));
    assert_eq!(nand.oob(0).unwrap().lpns, &[7, NO_LPN]);
    assert_eq!(nand.stored_slots(), 1);
}

#[test]
fn dies_on_different_channels_work_in_parallel() {
    let mut nand = Nand::new(small_config(4096), false, 1).unwrap();
    // Block 0 is on die 0 (channel 0), block 4 on die 1 (channel 1).
    let a = nand.program(0, oob(&[1], 1), None, 0).unwrap();
    let b = nand
        .program(nand.first_page(4), oob(&[2], 2), None, 0)
        .unwrap();
    assert_eq!(a.end_ns, b.end_ns);
    // A second program on die 0 queues behind the first.
    let c = nand.program(1, oob(&[3], 3), None, 0).unwrap();
    assert_eq!(c.end_ns, 600_000);
}

#[test]
#[should_panic(expected = "out-of-order")]
fn out_of_order_program_is_refused() {
    let mut nand = Nand::new(small_config(4096), false, 1).unwrap();
    nand.program(1, oob(&[1], 1), None, 0).unwrap();
}

#[test]
#[should_panic(expected = "out-of-order or repeated")]
fn rewrite_without_erase_is_refused() {
    let mut nand = Nand::new(small_config(4096), false, 1).unwrap();
    nand.program(0, oob(&[1], 1), None, 0).unwrap();
    nand.erase(0, 0).unwrap();
    nand.program(0, oob(&[1], 2), None, 0).unwrap();
    nand.program(0, oob(&[1], 3), None, 0).unwrap();
}

#[test]
fn erase_frees_stored_bytes_and_wears_the_block() {
    let mut nand = Nand::new(small_config(4096), true, 1).unwrap();
    let data = vec![9u8; 4096];
    for page in 0..4 {
        nand.program(page, oob(&[page], page as u64), Some(&data), 0)
            .unwrap();
    }
    assert_eq!(nand.stored_slots(), 4);
    nand.erase(0, 0).unwrap();
    assert_eq!(nand.stored_slots(), 0);
    assert_eq!(nand.erase_count(0), 1);
    assert!(nand.oob(0).is_none());
}

#[test]
fn endurance_limit_retires_the_block() {
    let mut nand = Nand::new(small_config(4096), false, 1).unwrap();
    for _ in 0..3 {
        nand.erase(0, 0).unwrap();
    }
    assert_eq!(nand.erase(0, 0), Err(NandError::EraseFailed { block: 0 }));
    assert!(nand.is_bad(0));
}

#[test]
fn power_cut_tears_the_armed_operation_only() {
    let mut nand = Nand::new(small_config(4096), true, 1).unwrap();
    let data = vec![1u8; 4096];
    nand.arm_power_cut(2);
    nand.program(0, oob(&[10], 1), Some(&data), 0).unwrap();
    assert_eq!(
        nand.program(1, oob(&[11], 2), Some(&data), 0),
        Err(NandError::PowerLoss)
    );
    assert_eq!(nand.read(0, 0..1, None, 0), Err(NandError::PowerLoss));
    nand.power_on(0);
    assert_eq!(nand.oob(0).unwrap().lpns, &[10]);
    assert_ne!(nand.oob(1).unwrap().flags & oob_flags::CORRUPT, 0);
    // The next page of the block is still programmable in order.
    nand.program(2, oob(&[12], 3), Some(&data), 0).unwrap();
}

#[test]
fn injected_program_failures_are_reported() {
    let mut config = small_config(4096);
    config.faults.program_fail_probability = 1.0;
    let mut nand = Nand::new(config, false, 1).unwrap();
    assert_eq!(
        nand.program(0, oob(&[1], 1), None, 0),
        Err(NandError::ProgramFailed { block: 0 })
    );
    assert_eq!(nand.counters().program_failures, 1);
}

#[test]
fn impossible_geometry_names_the_field() {
    let mut config = small_config(4096);
    config.geometry.page_size_bytes = 6000;
    let err = Nand::new(config, false, 1).err().unwrap();
    assert_eq!(err.field, "geometry.page_size_bytes");
    let mut config = small_config(4096);
    config.geometry.dies_per_channel = 0;
    assert_eq!(
        Nand::new(config, false, 1).err().unwrap().field,
        "geometry.dies_per_channel"
    );
}

#[test]
fn tlc_page_types_change_latency() {
    let mut config = small_config(4096);
    config.timing.page_types = Some(PageTypeTiming {
        read_ns: [10, 20, 30],
        program_ns: [100, 200, 300],
    });
    config.timing.transfer_ns_per_page = 0;
    let mut nand = Nand::new(config, false, 1).unwrap();
    let mut last = 0;
    let mut durations = vec![];
    for page in 0..3 {
        let t = nand.program(page, oob(&[page], 1), None, 0).unwrap();
        durations.push(t.end_ns - last);
        last = t.end_ns;
    }
    assert_eq!(durations, vec![100, 200, 300]);
}

/// The spare-area tables start as untouched zero pages: what an unprogrammed page holds
/// never shows, neither through a torn program on a never-erased block nor in the saved
/// state (which names no logical page there, and builds the same array again).
#[test]
fn lazily_built_spare_areas_read_as_erased() {
    let config = small_config(8192);
    let mut nand = Nand::new(config.clone(), false, 1).unwrap();
    let parts = nand.to_parts();
    assert!(parts.slot_lpn.iter().all(|&l| l == NO_LPN));
    Nand::from_parts(config.clone(), SLOT_SIZE, 1, parts).unwrap();
    nand.arm_power_cut(1);
    let lpns = vec![7; nand.slots_per_page() as usize];
    let oob = PageOob {
        lpns: &lpns,
        seq: 1,
        flags: 0,
    };
    assert_eq!(nand.program(0, oob, None, 0), Err(NandError::PowerLoss));
    let torn = nand.oob(0).expect("a torn page reads as programmed");
    assert!(torn.lpns.iter().all(|&l| l == NO_LPN), "{:?}", torn.lpns);
    nand.power_on(0);
    let parts = nand.to_parts();
    assert!(parts.slot_lpn.iter().all(|&l| l == NO_LPN));
    Nand::from_parts(config, SLOT_SIZE, 1, parts).unwrap();
}

/// Sequence numbers implicit per block (a constructed device) read, save and change as the
/// same numbers stored page by page; a block not full, or storing its own, is refused.
#[test]
fn consecutive_sequence_numbers_read_as_stored() {
    let config = small_config(4096);
    let mut stored = Nand::new(config.clone(), false, 1).unwrap();
    // Blocks 1 and 6 full, numbered from 10 and 20; block 3 half programmed.
    for (block, first) in [(1u32, 10u64), (6, 20)] {
        for i in 0..4 {
            let page = block * 4 + i;
            stored
                .program(page, oob(&[page], first + i as u64), None, 0)
                .unwrap();
        }
    }
    for page in 12..14 {
        stored
            .program(page, oob(&[page], 30 + page as u64), None, 0)
            .unwrap();
    }
    let parts = stored.to_parts();
    let mut sparse = parts.clone();
    let mut first_seq = vec![0u64; 8];
    for (block, first) in [(1usize, 10u64), (6, 20)] {
        sparse.page_seq[block * 4..block * 4 + 4].fill(0);
        first_seq[block] = first;
    }
    let mut implicit = Nand::from_consecutive_parts(
        config.clone(),
        SLOT_SIZE,
        1,
        sparse.clone(),
        first_seq.clone(),
    )
    .unwrap();
    assert_eq!(implicit.to_parts(), parts);
    let mut rebuilt = Nand::from_parts(config.clone(), SLOT_SIZE, 1, parts).unwrap();
    for page in 0..32 {
        assert_eq!(implicit.oob(page), rebuilt.oob(page), "page {page}");
    }
    // An erase and a new program change the same numbers on both.
    for nand in [&mut implicit, &mut rebuilt] {
        nand.erase(1, 0).unwrap();
        nand.program(4, oob(&[4], 99), None, 0).unwrap();
    }
    assert_eq!(implicit.to_parts(), rebuilt.to_parts());
    assert_eq!(implicit.oob(25).unwrap().seq, 21);
    // Block 3 is not full: its numbers cannot be implicit.
    let mut bad = first_seq.clone();
    bad[3] = 40;
    let e = Nand::from_consecutive_parts(config.clone(), SLOT_SIZE, 1, sparse.clone(), bad)
        .err()
        .unwrap();
    assert!(e.to_string().contains("first_seq"), "{e}");
    let e = Nand::from_consecutive_parts(config, SLOT_SIZE, 1, sparse, vec![0; 3])
        .err()
        .unwrap();
    assert!(e.to_string().contains("first_seq"), "{e}");
}

/// One channel, two dies of two planes; blocks of 4 pages, 4 blocks per plane: blocks 0-3
/// are die 0 plane 0, 4-7 die 0 plane 1, 8-11 die 1 plane 0, 12-15 die 1 plane 1.
/// 10 µs per page transfer, 25 µs read, 200 µs program, 1.5 ms erase.
fn two_plane_config(die_rules: DieRules, channel_model: ChannelModel) -> NandConfig {
    let mut config = small_config(4096);
    config.geometry.channels = 1;
    config.geometry.dies_per_channel = 2;
    config.geometry.planes_per_die = 2;
    config.timing.transfer_ns_per_page = 10_000;
    config.timing.channel_model = channel_model;
    config.die_rules = die_rules;
    config
}

fn page_of(block: u32, index: u32) -> u32 {
    block * 4 + index
}

fn strict() -> Nand {
    let config = two_plane_config(DieRules::OneCommandPerDie, ChannelModel::Intervals);
    Nand::new(config, false, 1).unwrap()
}

fn span(t: OpTiming) -> (Nanos, Nanos) {
    (t.start_ns, t.end_ns)
}

#[test]
fn programs_on_two_planes_at_one_page_offset_run_as_one_multi_plane_command() {
    let mut nand = strict();
    let a = nand.program(page_of(0, 0), oob(&[1], 1), None, 0).unwrap();
    // Plane 1 of the same die, same page offset, ready while plane 0's data moves: its data
    // follows on the channel and both program together.
    let b = nand
        .program(page_of(4, 0), oob(&[2], 2), None, 5_000)
        .unwrap();
    assert_eq!(span(a), (0, 210_000));
    assert_eq!(span(b), (10_000, 220_000));
    let c = nand.die_command_counters();
    assert_eq!((c.multi_plane_programs, c.plane_joins_program), (1, 1));
    // The die is busy until the joined program ends.
    assert_eq!(nand.unit_busy_until_ns(0), 220_000);
    assert_eq!(nand.unit_busy_until_ns(1), 220_000);
}

#[test]
fn programs_at_different_page_offsets_serialise_on_their_die() {
    let mut nand = strict();
    nand.program(page_of(0, 0), oob(&[1], 1), None, 0).unwrap();
    let a = nand.program(page_of(0, 1), oob(&[2], 2), None, 0).unwrap();
    assert_eq!(span(a), (210_000, 420_000));
    // Offset 0 on plane 1 does not match the die's command (offset 1): it waits.
    let b = nand.program(page_of(4, 0), oob(&[3], 3), None, 0).unwrap();
    assert_eq!(span(b), (420_000, 630_000));
    // The other die on the channel is free: only its transfer waits for the channel's gap.
    let d = nand.program(page_of(8, 0), oob(&[4], 4), None, 0).unwrap();
    assert_eq!(span(d), (10_000, 220_000));
    assert_eq!(nand.die_command_counters().multi_plane_programs, 0);

    // With independent planes plane 1 would have run beside plane 0.
    let config = two_plane_config(DieRules::IndependentPlanes, ChannelModel::Intervals);
    let mut free = Nand::new(config, false, 1).unwrap();
    free.program(page_of(0, 0), oob(&[1], 1), None, 0).unwrap();
    free.program(page_of(0, 1), oob(&[2], 2), None, 0).unwrap();
    let b = free.program(page_of(4, 0), oob(&[3], 3), None, 0).unwrap();
    assert_eq!(span(b), (10_000, 220_000));
}

#[test]
fn a_late_or_repeated_plane_does_not_join() {
    let mut nand = strict();
    nand.program(page_of(0, 0), oob(&[1], 1), None, 0).unwrap();
    // Ready after the command's program started (10 µs): a command of its own.
    let late = nand
        .program(page_of(4, 0), oob(&[2], 2), None, 11_000)
        .unwrap();
    assert_eq!(span(late), (210_000, 420_000));
    // Multi-plane off: the same two programs serialise.
    let mut config = two_plane_config(DieRules::OneCommandPerDie, ChannelModel::Intervals);
    config.multi_plane = false;
    let mut off = Nand::new(config, false, 1).unwrap();
    off.program(page_of(0, 0), oob(&[1], 1), None, 0).unwrap();
    let b = off.program(page_of(4, 0), oob(&[2], 2), None, 0).unwrap();
    assert_eq!(span(b), (210_000, 420_000));
    assert_eq!(off.die_command_counters().plane_joins_program, 0);
}

#[test]
fn multi_plane_reads_sense_together_and_move_their_data_in_turn() {
    let mut nand = strict();
    nand.program(page_of(0, 0), oob(&[1], 1), None, 0).unwrap();
    nand.program(page_of(4, 0), oob(&[2], 2), None, 0).unwrap();
    let a = nand.read(page_of(0, 0), 0..1, None, 1_000_000).unwrap();
    let b = nand.read(page_of(4, 0), 0..1, None, 1_000_000).unwrap();
    assert_eq!(span(a.timing), (1_000_000, 1_035_000));
    assert_eq!(span(b.timing), (1_000_000, 1_045_000));
    // Another offset: after the die's command.
    nand.program(page_of(4, 1), oob(&[3], 3), None, 2_000_000)
        .unwrap();
    let c = nand.read(page_of(0, 0), 0..1, None, 3_000_000).unwrap();
    let d = nand.read(page_of(4, 1), 0..1, None, 3_000_000).unwrap();
    assert_eq!(span(c.timing), (3_000_000, 3_035_000));
    assert_eq!(span(d.timing), (3_035_000, 3_070_000));
    let n = nand.die_command_counters();
    assert_eq!((n.multi_plane_reads, n.plane_joins_read), (1, 1));
}

#[test]
fn multi_plane_erases_run_together() {
    let mut nand = strict();
    let a = nand.erase(0, 0).unwrap();
    let b = nand.erase(5, 0).unwrap();
    // The other die erases at the same time on its own.
    let c = nand.erase(8, 0).unwrap();
    assert_eq!(span(a), (0, 1_500_000));
    assert_eq!(span(b), (0, 1_500_000));
    assert_eq!(span(c), (0, 1_500_000));
    // The same plane twice: the second waits.
    let d = nand.erase(1, 0).unwrap();
    assert_eq!(span(d), (1_500_000, 3_000_000));
    assert_eq!(nand.die_command_counters().multi_plane_erases, 1);
}

#[test]
fn a_burst_booked_at_once_leaves_its_channel_gaps_to_other_dies() {
    // Die 0 plane 0 copies three pages in a chain (read, then program), as a GC cycle
    // books them; then die 1 programs a page ready at time 0.
    let burst = |model: ChannelModel| {
        let config = two_plane_config(DieRules::IndependentPlanes, model);
        let mut nand = Nand::new(config, false, 1).unwrap();
        for (k, page) in [page_of(0, 0), page_of(0, 1), page_of(0, 2)]
            .into_iter()
            .enumerate()
        {
            nand.program(page, oob(&[k as u32], k as u64 + 1), None, 0)
                .unwrap();
        }
        let mut t = 700_000;
        for k in 0..3 {
            let r = nand.read(page_of(0, k), 0..1, None, t).unwrap();
            t = nand
                .program(
                    page_of(1, k),
                    oob(&[k], 10 + k as u64),
                    None,
                    r.timing.end_ns,
                )
                .unwrap()
                .end_ns;
        }
        let other = nand
            .program(page_of(8, 0), oob(&[9], 20), None, 700_000)
            .unwrap();
        (t, span(other))
    };
    let (chain_end, other) = burst(ChannelModel::BusyUntil);
    // The whole chain's last transfer is booked before the other die's: it waits ~0.7 ms.
    assert_eq!(chain_end, 700_000 + 3 * 245_000);
    assert_eq!(other, (chain_end - 200_000, chain_end + 10_000));
    let (chain_end, other) = burst(ChannelModel::Intervals);
    // The channel is idle during the first sense: the other die's transfer goes there.
    assert_eq!(chain_end, 700_000 + 3 * 245_000);
    assert_eq!(other, (700_000, 910_000));
}

fn plane_reads() -> Nand {
    let config = two_plane_config(DieRules::IndependentPlaneReads, ChannelModel::Intervals);
    Nand::new(config, false, 1).unwrap()
}

#[test]
fn independent_plane_reads_overlap_at_any_page_offset() {
    // Plane 0 holds offset 0, plane 1 offsets 0 and 1; then both planes read, ready at once,
    // at different offsets.
    let reads = |mut nand: Nand| {
        nand.program(page_of(0, 0), oob(&[1], 1), None, 0).unwrap();
        nand.program(page_of(4, 0), oob(&[2], 2), None, 0).unwrap();
        nand.program(page_of(4, 1), oob(&[3], 3), None, 0).unwrap();
        let a = nand.read(page_of(0, 0), 0..1, None, 1_000_000).unwrap();
        let b = nand.read(page_of(4, 1), 0..1, None, 1_000_000).unwrap();
        let n = nand.die_command_counters().clone();
        (span(a.timing), span(b.timing), n.plane_joins_read)
    };
    // Both sense at once; plane 1's data waits only for the channel.
    assert_eq!(
        reads(plane_reads()),
        ((1_000_000, 1_035_000), (1_000_000, 1_045_000), 0)
    );
    // One command per die: plane 1's read (another offset) waits for plane 0's.
    assert_eq!(
        reads(strict()),
        ((1_000_000, 1_035_000), (1_035_000, 1_070_000), 0)
    );
    // Independent planes: as independent plane reads.
    let config = two_plane_config(DieRules::IndependentPlanes, ChannelModel::Intervals);
    assert_eq!(
        reads(Nand::new(config, false, 1).unwrap()),
        ((1_000_000, 1_035_000), (1_000_000, 1_045_000), 0)
    );
    // Reads at one offset do not form multi-plane commands (they need not).
    let mut nand = plane_reads();
    nand.program(page_of(0, 0), oob(&[1], 1), None, 0).unwrap();
    nand.program(page_of(4, 0), oob(&[2], 2), None, 0).unwrap();
    nand.read(page_of(0, 0), 0..1, None, 1_000_000).unwrap();
    nand.read(page_of(4, 0), 0..1, None, 1_000_000).unwrap();
    assert_eq!(nand.die_command_counters().multi_plane_reads, 0);
}

#[test]
fn under_independent_plane_reads_a_read_waits_for_a_program_or_erase_of_its_die() {
    let mut nand = plane_reads();
    nand.program(page_of(4, 0), oob(&[1], 1), None, 0).unwrap();
    // A program on plane 0: data in from 1 ms, programmed by 1.21 ms.
    let p = nand
        .program(page_of(0, 0), oob(&[2], 2), None, 1_000_000)
        .unwrap();
    assert_eq!(span(p), (1_000_000, 1_210_000));
    // A read on plane 1, ready during the program: no suspend, it waits for the end.
    let r = nand.read(page_of(4, 0), 0..1, None, 1_005_000).unwrap();
    assert_eq!(span(r.timing), (1_210_000, 1_245_000));
    // The die's other planes report the program as their own busy time.
    assert_eq!(nand.unit_busy_until_ns(0), 1_245_000);
    assert_eq!(nand.unit_busy_until_ns(1), 1_245_000);
    // The other die on the channel is not held.
    assert_eq!(nand.unit_busy_until_ns(2), 0);
    // An erase on plane 0 holds plane 1 too.
    let e = nand.erase(1, 2_000_000).unwrap();
    assert_eq!(span(e), (2_000_000, 3_500_000));
    let r = nand.read(page_of(4, 0), 0..1, None, 2_000_000).unwrap();
    assert_eq!(span(r.timing), (3_500_000, 3_535_000));

    // Independent planes: the read runs beside the program (its data after the program's).
    let config = two_plane_config(DieRules::IndependentPlanes, ChannelModel::Intervals);
    let mut free = Nand::new(config, false, 1).unwrap();
    free.program(page_of(4, 0), oob(&[1], 1), None, 0).unwrap();
    free.program(page_of(0, 0), oob(&[2], 2), None, 1_000_000)
        .unwrap();
    let r = free.read(page_of(4, 0), 0..1, None, 1_005_000).unwrap();
    assert_eq!(span(r.timing), (1_005_000, 1_040_000));
}

#[test]
fn under_independent_plane_reads_a_program_waits_for_reads_on_other_planes() {
    let mut nand = plane_reads();
    nand.program(page_of(0, 0), oob(&[1], 1), None, 0).unwrap();
    nand.program(page_of(4, 0), oob(&[2], 2), None, 0).unwrap();
    // Plane 1 reads from 1 ms to 1.035 ms; a program on plane 0 ready at 1 ms waits for it.
    let r = nand.read(page_of(4, 0), 0..1, None, 1_000_000).unwrap();
    assert_eq!(span(r.timing), (1_000_000, 1_035_000));
    let p = nand
        .program(page_of(0, 1), oob(&[3], 3), None, 1_000_000)
        .unwrap();
    assert_eq!(span(p), (1_035_000, 1_245_000));
    // So does an erase after reads on both planes.
    let a = nand.read(page_of(0, 0), 0..1, None, 2_000_000).unwrap();
    let b = nand.read(page_of(4, 0), 0..1, None, 2_000_000).unwrap();
    assert_eq!(span(a.timing), (2_000_000, 2_035_000));
    assert_eq!(span(b.timing), (2_000_000, 2_045_000));
    let e = nand.erase(2, 2_000_000).unwrap();
    assert_eq!(span(e), (2_045_000, 3_545_000));

    // Independent planes: the program's data goes in the channel's first gap.
    let config = two_plane_config(DieRules::IndependentPlanes, ChannelModel::Intervals);
    let mut free = Nand::new(config, false, 1).unwrap();
    free.program(page_of(0, 0), oob(&[1], 1), None, 0).unwrap();
    free.program(page_of(4, 0), oob(&[2], 2), None, 0).unwrap();
    free.read(page_of(4, 0), 0..1, None, 1_000_000).unwrap();
    let p = free
        .program(page_of(0, 1), oob(&[3], 3), None, 1_000_000)
        .unwrap();
    assert_eq!(span(p), (1_000_000, 1_210_000));
}

#[test]
fn under_independent_plane_reads_programs_and_erases_still_join_as_multi_plane() {
    let mut nand = plane_reads();
    let a = nand.program(page_of(0, 0), oob(&[1], 1), None, 0).unwrap();
    let b = nand
        .program(page_of(4, 0), oob(&[2], 2), None, 5_000)
        .unwrap();
    // As under one command per die (`programs_on_two_planes_at_one_page_offset_...`).
    assert_eq!(span(a), (0, 210_000));
    assert_eq!(span(b), (10_000, 220_000));
    assert_eq!(nand.unit_busy_until_ns(0), 220_000);
    // A read between two programs at one offset ends the command: the second waits.
    nand.program(page_of(0, 1), oob(&[3], 3), None, 1_000_000)
        .unwrap();
    nand.read(page_of(0, 0), 0..1, None, 1_000_000).unwrap();
    let c = nand
        .program(page_of(4, 1), oob(&[4], 4), None, 1_000_000)
        .unwrap();
    assert_eq!(span(c), (1_245_000, 1_455_000));
    let n = nand.die_command_counters();
    assert_eq!((n.multi_plane_programs, n.plane_joins_program), (1, 1));
    // Erases of the die's two planes run together; the same plane twice does not.
    let e0 = nand.erase(2, 2_000_000).unwrap();
    let e1 = nand.erase(6, 2_000_000).unwrap();
    let e2 = nand.erase(3, 2_000_000).unwrap();
    assert_eq!(span(e0), (2_000_000, 3_500_000));
    assert_eq!(span(e1), (2_000_000, 3_500_000));
    assert_eq!(span(e2), (3_500_000, 5_000_000));
    assert_eq!(nand.die_command_counters().multi_plane_erases, 1);
    // Multi-plane off: the second program waits for the first.
    let mut config = two_plane_config(DieRules::IndependentPlaneReads, ChannelModel::Intervals);
    config.multi_plane = false;
    let mut off = Nand::new(config, false, 1).unwrap();
    off.program(page_of(0, 0), oob(&[1], 1), None, 0).unwrap();
    let b = off.program(page_of(4, 0), oob(&[2], 2), None, 0).unwrap();
    assert_eq!(span(b), (210_000, 420_000));
}

#[test]
fn die_rules_parse_from_their_names() {
    for rule in [
        DieRules::IndependentPlanes,
        DieRules::OneCommandPerDie,
        DieRules::IndependentPlaneReads,
    ] {
        let value: DieRules = serde::Deserialize::deserialize(serde::de::value::StrDeserializer::<
            serde::de::value::Error,
        >::new(rule.name()))
        .unwrap();
        assert_eq!(value, rule);
    }
}

/// Seeded random reads, programs and erases on one channel of two 4-plane dies under
/// independent plane reads: every operation starts at or after its ready time; reads of one
/// plane never overlap; no read overlaps a program or erase of its die; without multi-plane
/// commands no two programs or erases of a die overlap either.
#[test]
fn independent_plane_reads_keep_programs_and_erases_die_wide() {
    for multi_plane in [false, true] {
        let mut config = small_config(4096);
        config.geometry.channels = 1;
        config.geometry.dies_per_channel = 2;
        config.geometry.planes_per_die = 4;
        config.geometry.blocks_per_plane = 2;
        config.geometry.pages_per_block = 8;
        config.endurance.pe_cycles_max = 100_000;
        config.timing.transfer_ns_per_page = 10_000;
        config.timing.channel_model = ChannelModel::Intervals;
        config.die_rules = DieRules::IndependentPlaneReads;
        config.multi_plane = multi_plane;
        let blocks = config.geometry.blocks();
        let per_block = config.geometry.pages_per_block;
        let mut nand = Nand::new(config, false, 1).unwrap();
        let mut rng = flashstack_sim::Rng::new(11);
        let mut written = vec![0u32; blocks as usize];
        // (die, plane, is_read, start, end)
        let mut ops: Vec<(u32, u32, bool, Nanos, Nanos)> = Vec::new();
        let mut now = 0;
        let mut seq = 1;
        for _ in 0..3_000 {
            now += rng.below(40_000);
            let block = rng.below(blocks as u64) as u32;
            let unit = block / 2;
            let (die, plane) = (unit / 4, unit % 4);
            let w = written[block as usize];
            let t = if w > 0 && rng.chance(0.6) {
                let page = block * per_block + rng.below(w as u64) as u32;
                ops.push((die, plane, true, 0, 0));
                nand.read(page, 0..1, None, now).unwrap().timing
            } else if w < per_block {
                written[block as usize] += 1;
                seq += 1;
                ops.push((die, plane, false, 0, 0));
                nand.program(block * per_block + w, oob(&[seq as u32], seq), None, now)
                    .unwrap()
            } else {
                written[block as usize] = 0;
                ops.push((die, plane, false, 0, 0));
                nand.erase(block, now).unwrap()
            };
            assert!(t.start_ns >= now && t.end_ns > t.start_ns);
            let last = ops.last_mut().unwrap();
            (last.3, last.4) = (t.start_ns, t.end_ns);
        }
        let overlap = |a: &(u32, u32, bool, Nanos, Nanos), b: &(u32, u32, bool, Nanos, Nanos)| {
            a.3 < b.4 && b.3 < a.4
        };
        let mut die_wide_pairs = 0;
        for (i, a) in ops.iter().enumerate() {
            for b in &ops[i + 1..] {
                if a.0 != b.0 || !overlap(a, b) {
                    continue;
                }
                match (a.2, b.2) {
                    (true, true) => assert_ne!(a.1, b.1, "reads of one plane overlap: {a:?} {b:?}"),
                    (false, false) => {
                        assert!(multi_plane, "die-wide operations overlap: {a:?} {b:?}");
                        die_wide_pairs += 1;
                    }
                    _ => panic!("a read overlaps a program or erase of its die: {a:?} {b:?}"),
                }
            }
        }
        // Reads of different planes did overlap (the rule's point), and with multi-plane
        // commands some programs or erases joined.
        let reads_overlapping = ops.iter().enumerate().any(|(i, a)| {
            ops[i + 1..]
                .iter()
                .any(|b| a.2 && b.2 && a.0 == b.0 && a.1 != b.1 && overlap(a, b))
        });
        assert!(reads_overlapping);
        assert_eq!(multi_plane, die_wide_pairs > 0, "{die_wide_pairs}");
    }
}
