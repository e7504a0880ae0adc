//! Golden figures of the NAND's parallelism options on a small copy of MQSim's
//! configuration: interval-booked channels (`nand.timing.channel_model`) and one command
//! per die with multi-plane commands (`nand.die_rules`, `nand.multi_plane`). Flash work
//! (programs, erases, GC moves) is the same under every option on this workload; only
//! when operations run moves, so latency is what the goldens pin. A change here changes
//! published figures: update the numbers only with a reason in the commit message.

use flashstack_block::{BlockDevice, Hints, Payload};
use flashstack_ftl::{presets, DeviceConfig, Ftl};
use flashstack_nand::{ChannelModel, DieRules};
use flashstack_sim::Rng;

#[derive(Debug, PartialEq, Eq)]
struct Golden {
    write_ns_mean: u64,
    write_ns_p99: u64,
    write_ns_max: u64,
    page_programs: u64,
    block_erases: u64,
    gc_slots: u64,
    program_commands: u64,
    multi_plane_programs: u64,
    multi_plane_reads: u64,
    multi_plane_erases: u64,
}

/// `mqsim-default` with 32 blocks of 64 pages per plane (2 GiB of flash): filled to 90 %
/// in 128 KiB writes, then 200,000 random 4 KiB overwrites, one every 20 µs (faster than the
/// dies program, so GC runs in the foreground and requests queue).
fn run(channel_model: ChannelModel, die_rules: DieRules, multi_plane: bool) -> Golden {
    let mut device: DeviceConfig = presets::mqsim_default();
    device.nand.geometry.blocks_per_plane = 32;
    device.nand.geometry.pages_per_block = 64;
    device.ftl.gc.foreground_free_blocks = 4;
    device.ftl.gc.background_free_blocks = 4;
    device.nand.timing.channel_model = channel_model;
    device.nand.die_rules = die_rules;
    device.nand.multi_plane = multi_plane;
    let mut ftl = Ftl::new(device, false, 42).unwrap();
    let filled = ftl.capacity_lbas() * 9 / 10;
    let mut now = 0;
    let mut lba = 0;
    while lba < filled {
        let count = 32.min(filled - lba) as u32;
        let unstored = Payload::Unstored { lba_count: count };
        now = ftl
            .write(now, lba, unstored, Hints::default())
            .unwrap()
            .complete_ns;
        lba += count as u64;
    }
    ftl.reset_measurement();
    let mut rng = Rng::new(7);
    for _ in 0..200_000 {
        now += 20_000;
        let unstored = Payload::Unstored { lba_count: 1 };
        ftl.write(now, rng.below(filled), unstored, Hints::default())
            .unwrap();
    }
    ftl.check_invariants().unwrap();
    let w = ftl.latencies().write.summary();
    let c = ftl.counters();
    let n = ftl.nand().counters();
    let d = ftl.nand().die_command_counters();
    Golden {
        write_ns_mean: w.latency_ns_mean,
        write_ns_p99: w.latency_ns_p99,
        write_ns_max: w.latency_ns_max,
        page_programs: n.page_programs,
        block_erases: n.block_erases,
        gc_slots: c.program_slots_gc,
        program_commands: n.page_programs - d.plane_joins_program,
        multi_plane_programs: d.multi_plane_programs,
        multi_plane_reads: d.multi_plane_reads,
        multi_plane_erases: d.multi_plane_erases,
    }
}

#[test]
fn parallelism_options_move_latency_not_flash_work() {
    use ChannelModel::{BusyUntil, Intervals};
    use DieRules::{IndependentPlanes, OneCommandPerDie};
    let old = run(BusyUntil, IndependentPlanes, true);
    let gaps = run(Intervals, IndependentPlanes, true);
    let strict = run(Intervals, OneCommandPerDie, true);
    let single = run(Intervals, OneCommandPerDie, false);
    for g in [&old, &gaps, &strict, &single] {
        println!("{g:?}");
    }
    // The same run twice gives the same figures.
    assert_eq!(strict, run(Intervals, OneCommandPerDie, true));
    // Flash work does not depend on when operations run here (foreground GC only).
    let work = |g: &Golden| (g.page_programs, g.block_erases, g.gc_slots);
    assert!([&gaps, &strict, &single]
        .iter()
        .all(|g| work(g) == work(&old)));
    let work = Golden {
        write_ns_mean: 0,
        write_ns_p99: 0,
        write_ns_max: 0,
        page_programs: 232_702,
        block_erases: 2_990,
        gc_slots: 263_870,
        program_commands: 232_702,
        multi_plane_programs: 0,
        multi_plane_reads: 0,
        multi_plane_erases: 0,
    };
    // One busy-until time per channel: every plane's GC cycles booked at once hold the
    // channel, and the planes of a channel run their GC one after another.
    assert_eq!(
        old,
        Golden {
            write_ns_mean: 4_888_450_860,
            write_ns_p99: 14_965_276_671,
            write_ns_max: 15_074_328_575,
            ..work
        }
    );
    // Interval channels: the other planes' transfers use the gaps.
    assert_eq!(
        gaps,
        Golden {
            write_ns_mean: 20_698_348,
            write_ns_p99: 165_675_007,
            write_ns_max: 258_605_055,
            ..work
        }
    );
    // One command per die: the two planes of a die take turns, except when a program on
    // the other plane at the same page offset joins (10 % of program commands here).
    assert_eq!(
        strict,
        Golden {
            write_ns_mean: 196_275_924,
            write_ns_p99: 534_773_759,
            write_ns_max: 642_777_087,
            program_commands: 208_810,
            multi_plane_programs: 23_892,
            ..work
        }
    );
    assert_eq!(
        single,
        Golden {
            write_ns_mean: 262_466_673,
            write_ns_p99: 717_225_983,
            write_ns_max: 853_540_863,
            ..work
        }
    );
    assert!(old.write_ns_mean > gaps.write_ns_mean);
    assert!(
        single.write_ns_mean > strict.write_ns_mean && strict.write_ns_mean > gaps.write_ns_mean
    );
}

/// The same workload under independent plane reads (`independent-plane-reads`: reads of a
/// die's planes overlap at any page offset, programs and erases stay die-wide and join as
/// multi-plane commands as under one command per die). It has no host reads, and each of
/// GC's reads is chained behind the die-wide program before it, so no two reads of a die
/// are ever in flight together: every figure equals one command per die's, to the
/// nanosecond (reads that do overlap: `crates/nand/tests/golden_die_rules.rs`).
#[test]
fn independent_plane_reads_equal_one_command_per_die_without_concurrent_reads() {
    let plane_reads = run(
        ChannelModel::Intervals,
        DieRules::IndependentPlaneReads,
        true,
    );
    println!("{plane_reads:?}");
    assert_eq!(
        plane_reads,
        Golden {
            write_ns_mean: 196_275_924,
            write_ns_p99: 534_773_759,
            write_ns_max: 642_777_087,
            page_programs: 232_702,
            block_erases: 2_990,
            gc_slots: 263_870,
            program_commands: 208_810,
            multi_plane_programs: 23_892,
            multi_plane_reads: 0,
            multi_plane_erases: 0,
        }
    );
}
