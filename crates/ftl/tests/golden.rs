//! Golden counters: a fixed device, seed and workload give exact NAND programs, erases and
//! GC migrations per victim policy. A change here changes every published figure: update
//! the numbers only with a reason in the commit message.

use flashstack_block::{BlockDevice, Hints, Payload, Temperature};
use flashstack_ftl::{presets, DeviceConfig, Ftl, StreamMode, VictimPolicyKind};
use flashstack_sim::Rng;

#[derive(Debug, PartialEq, Eq)]
struct Golden {
    page_programs: u64,
    block_erases: u64,
    gc_slots: u64,
    gc_cycles: u64,
    padding_slots: u64,
}

/// Fill 90% sequentially, then 200,000 random 4 KiB writes over
/// the filled range with a flush every 64 writes and an idle second every 10,000.
fn run(device: DeviceConfig, hot_cold: bool) -> Golden {
    let mut ftl = Ftl::new(device, false, 42).unwrap();
    let filled = ftl.capacity_lbas() * 9 / 10;
    let mut now = 0;
    let mut lba = 0;
    while lba < filled {
        let count = 32.min(filled - lba) as u32;
        now = ftl
            .write(
                now,
                lba,
                Payload::Unstored { lba_count: count },
                Hints::default(),
            )
            .unwrap()
            .complete_ns;
        lba += count as u64;
    }
    ftl.reset_measurement();
    let mut rng = Rng::new(7);
    for i in 0..200_000u64 {
        now += 50_000;
        if i % 10_000 == 9_999 {
            now += 1_000_000_000;
        }
        // Hot/cold: 80% of writes go to the first 20% of the data.
        let lba = if hot_cold && rng.chance(0.8) {
            rng.below(filled / 5)
        } else {
            rng.below(filled)
        };
        let hints = Hints {
            temperature: Some(if lba < filled / 5 {
                Temperature::Hot
            } else {
                Temperature::Cold
            }),
            ..Hints::default()
        };
        ftl.write(now, lba, Payload::Unstored { lba_count: 1 }, hints)
            .unwrap();
        if i % 64 == 63 {
            ftl.flush(now).unwrap();
        }
    }
    ftl.check_invariants().unwrap();
    let c = ftl.counters();
    Golden {
        page_programs: c.page_programs,
        block_erases: ftl.nand().counters().block_erases,
        gc_slots: c.program_slots_gc,
        gc_cycles: c.gc_cycles_foreground + c.gc_cycles_background,
        padding_slots: c.program_slots_padding,
    }
}

fn ldc(policy: VictimPolicyKind) -> DeviceConfig {
    // 256 MiB of the LDC eMMC.
    let mut d = presets::ldc_emmc();
    d.nand.geometry.blocks_per_plane = 1024;
    d.ftl.gc.policy = policy;
    d
}

/// The UFS 3.1 preset shrunk to 256 MiB (32 blocks of 64 pages per plane): 16 KiB pages
/// holding four LBAs, eight planes, temperature streams.
fn ufs(policy: VictimPolicyKind) -> DeviceConfig {
    let mut d = presets::ufs31();
    d.nand.geometry.pages_per_block = 64;
    d.nand.geometry.blocks_per_plane = 32;
    d.ftl.gc.policy = policy;
    d.ftl.streams = StreamMode::Temperature;
    d
}

#[test]
fn greedy_uniform() {
    let got = run(ldc(VictimPolicyKind::Greedy), false);
    assert_eq!(got, GREEDY_UNIFORM, "{got:#?}");
}

#[test]
fn cost_benefit_uniform() {
    let got = run(ldc(VictimPolicyKind::CostBenefit), false);
    assert_eq!(got, COST_BENEFIT_UNIFORM, "{got:#?}");
}

#[test]
fn greedy_hot_cold_multi_plane() {
    let got = run(ufs(VictimPolicyKind::Greedy), true);
    assert_eq!(got, GREEDY_HOT_COLD_UFS, "{got:#?}");
}

#[test]
fn cost_benefit_hot_cold_multi_plane() {
    let got = run(ufs(VictimPolicyKind::CostBenefit), true);
    assert_eq!(got, COST_BENEFIT_HOT_COLD_UFS, "{got:#?}");
}

/// The hot/cold `ufs31` runs with idle GC topping planes up to 5 free blocks, a target it
/// reaches: page programs and erases page by page, with super-pages and one plane's victim
/// per GC cycle, and with super-block GC (the default), per policy. Super-block GC
/// programs and erases least: each plane gets back the block it gave, where one plane's
/// victim spread over the die takes the other planes' free blocks.
#[test]
fn super_block_gc_to_a_reachable_idle_target() {
    use flashstack_ftl::{Allocation, GcCollect};
    for (policy, expected) in [
        (
            VictimPolicyKind::Greedy,
            [(130_351, 1_991), (130_593, 2_004), (128_144, 1_968)],
        ),
        (
            VictimPolicyKind::CostBenefit,
            [(113_985, 1_735), (116_738, 1_788), (112_678, 1_728)],
        ),
    ] {
        let got: Vec<(u64, u64)> = [
            (Allocation::Page, GcCollect::Plane),
            (Allocation::SuperPage, GcCollect::Plane),
            (Allocation::SuperPage, GcCollect::SuperBlock),
        ]
        .into_iter()
        .map(|(allocation, collect)| {
            let mut d = ufs(policy);
            d.ftl.allocation = allocation;
            d.ftl.gc.collect = collect;
            d.ftl.gc.background_free_blocks = 5;
            let g = run(d, true);
            (g.page_programs, g.block_erases)
        })
        .collect();
        assert_eq!(got, expected, "{policy:?}");
    }
}

const GREEDY_UNIFORM: Golden = Golden {
    page_programs: 925_432,
    block_erases: 14_356,
    gc_slots: 725_432,
    gc_cycles: 14_356,
    padding_slots: 0,
};
const COST_BENEFIT_UNIFORM: Golden = Golden {
    page_programs: 938_229,
    block_erases: 14_556,
    gc_slots: 738_229,
    gc_cycles: 14_556,
    padding_slots: 0,
};
// The `ufs31` defaults: super-page allocation with super-block GC, idle victims at least
// 1/8 invalid. In the idle seconds GC tops each plane up towards 12 free blocks of 32,
// which it cannot reach, so it compacts blocks until the next write: 1,689 of 2,129
// victims (greedy) are collected in idle time (1,764 of 2,140 without the victim rule),
// against 105 of 1,980 page by page, where the slower device is still busy with its
// backlog when the idle second starts (`super_block_gc_to_a_reachable_idle_target`
// below: with a reachable target super-block GC programs less than page allocation).
const GREEDY_HOT_COLD_UFS: Golden = Golden {
    page_programs: 137_339,
    block_erases: 2_129,
    gc_slots: 338_928,
    gc_cycles: 2_129,
    padding_slots: 10_588,
};
// Cost-benefit beats greedy by 12% on this skewed workload with a reachable idle target
// (112,678 against 128,144 page programs); with the unreachable one its extra idle
// compaction costs more than its better victims gain.
const COST_BENEFIT_HOT_COLD_UFS: Golden = Golden {
    page_programs: 142_054,
    block_erases: 2_201,
    gc_slots: 357_716,
    gc_cycles: 2_201,
    padding_slots: 10_654,
};
