//! Golden figures of the three die rules (`nand.die_rules`) on one small fixed workload at
//! the NAND alone: a `ufs31`-shaped array (2 channels, one 4-plane die each, 16 KiB TLC
//! pages, interval channels) whose first blocks hold data, then seeded random 4 KiB reads of
//! that data (any plane, any page offset: a fragmented file's reads) mixed with single-page
//! programs and the erases that recycle their blocks. The flash work is the same under every
//! rule; when it runs is not. A change here changes published figures: update the numbers
//! only with a reason in the commit message.

use flashstack_nand::{
    ChannelModel, DieRules, Endurance, Energy, Faults, FlashMedium, Geometry, Nand, NandConfig,
    PageOob, PageTypeTiming, Timing,
};
use flashstack_sim::{Nanos, Rng};

const PLANES: u32 = 4;
const DIES: u32 = 2;
const BLOCKS_PER_PLANE: u32 = 6;
const PAGES_PER_BLOCK: u32 = 48;
/// Blocks 0..DATA_BLOCKS of every plane hold the data that is read.
const DATA_BLOCKS: u32 = 4;

#[derive(Debug, PartialEq, Eq)]
struct Golden {
    read_ns_mean: Nanos,
    read_ns_p99: Nanos,
    read_ns_max: Nanos,
    program_ns_mean: Nanos,
    program_ns_max: Nanos,
    /// When the last operation ends, from the start of the mixed phase.
    makespan_ns: Nanos,
    page_reads: u64,
    page_programs: u64,
    block_erases: u64,
    multi_plane_programs: u64,
    multi_plane_reads: u64,
    multi_plane_erases: u64,
}

fn config(die_rules: DieRules) -> NandConfig {
    NandConfig {
        geometry: Geometry {
            channels: DIES,
            dies_per_channel: 1,
            planes_per_die: PLANES,
            blocks_per_plane: BLOCKS_PER_PLANE,
            pages_per_block: PAGES_PER_BLOCK,
            page_size_bytes: 16_384,
            oob_size_bytes: 64,
        },
        // `ufs31`'s timing.
        timing: Timing {
            read_ns: 50_000,
            program_ns: 500_000,
            erase_ns: 3_500_000,
            transfer_ns_per_page: 11_700,
            page_types: Some(PageTypeTiming {
                read_ns: [35_000, 48_000, 66_000],
                program_ns: [500_000, 500_000, 500_000],
            }),
            channel_model: ChannelModel::Intervals,
        },
        energy: Energy {
            read_nj: 1,
            program_nj: 1,
            erase_nj: 1,
            transfer_nj_per_page: 1,
            idle_uw: 1,
        },
        endurance: Endurance {
            pe_cycles_max: 3_000,
            retire_at_limit: true,
        },
        faults: Faults::default(),
        die_rules,
        multi_plane: true,
    }
}

fn block(die: u32, plane: u32, index: u32) -> u32 {
    (die * PLANES + plane) * BLOCKS_PER_PLANE + index
}

fn p99(mut values: Vec<Nanos>) -> Nanos {
    values.sort_unstable();
    values[(values.len() * 99).div_ceil(100) - 1]
}

fn run(die_rules: DieRules) -> Golden {
    let mut nand = Nand::new(config(die_rules), false, 1).unwrap();
    let mut seq = 0u64;
    let mut program = |nand: &mut Nand, page: u32, ready_ns: Nanos| {
        seq += 1;
        let lpns = [seq as u32; 4];
        let oob = PageOob {
            lpns: &lpns,
            seq,
            flags: 0,
        };
        nand.program(page, oob, None, ready_ns).unwrap()
    };
    // The data, a super-page at a time (every plane of a die at one offset, ready at
    // once), so that under the die-wide rules it goes in as multi-plane programs.
    for index in 0..DATA_BLOCKS {
        for offset in 0..PAGES_PER_BLOCK {
            for die in 0..DIES {
                for plane in 0..PLANES {
                    let page = block(die, plane, index) * PAGES_PER_BLOCK + offset;
                    program(&mut nand, page, 0);
                }
            }
        }
    }
    let start_ns = nand.idle_at_ns();
    nand.reset_counters();
    // Then 8,000 operations, one every 0-120 µs: nine in ten a 4 KiB read of a random
    // data page, one in ten a program of the next page of a random plane's open block
    // (blocks DATA_BLOCKS.. in turn, erased before reuse). The dies are busy about half
    // the time under independent plane reads, most of it under one command per die.
    let mut rng = Rng::new(19);
    let mut open = vec![(DATA_BLOCKS, 0u32); (DIES * PLANES) as usize];
    let (mut reads, mut programs) = (Vec::new(), Vec::new());
    let mut now = start_ns;
    for _ in 0..8_000 {
        now += rng.below(120_000);
        let die = rng.below(DIES as u64) as u32;
        let plane = rng.below(PLANES as u64) as u32;
        if rng.below(10) < 9 {
            let b = block(die, plane, rng.below(DATA_BLOCKS as u64) as u32);
            let page = b * PAGES_PER_BLOCK + rng.below(PAGES_PER_BLOCK as u64) as u32;
            let slot = rng.below(4) as u32;
            let t = nand.read(page, slot..slot + 1, None, now).unwrap().timing;
            reads.push(t.end_ns - now);
        } else {
            let (index, offset) = &mut open[(die * PLANES + plane) as usize];
            if *offset == 0 && nand.programmed_pages(block(die, plane, *index)) > 0 {
                nand.erase(block(die, plane, *index), now).unwrap();
            }
            let page = block(die, plane, *index) * PAGES_PER_BLOCK + *offset;
            let t = program(&mut nand, page, now);
            programs.push(t.end_ns - now);
            *offset += 1;
            if *offset == PAGES_PER_BLOCK {
                *offset = 0;
                *index = if *index + 1 == BLOCKS_PER_PLANE {
                    DATA_BLOCKS
                } else {
                    *index + 1
                };
            }
        }
    }
    let n = nand.counters().clone();
    let d = nand.die_command_counters().clone();
    Golden {
        read_ns_mean: reads.iter().sum::<Nanos>() / reads.len() as Nanos,
        read_ns_p99: p99(reads.clone()),
        read_ns_max: reads.iter().copied().max().unwrap(),
        program_ns_mean: programs.iter().sum::<Nanos>() / programs.len() as Nanos,
        program_ns_max: programs.iter().copied().max().unwrap(),
        makespan_ns: nand.idle_at_ns() - start_ns,
        page_reads: n.page_reads,
        page_programs: n.page_programs,
        block_erases: n.block_erases,
        multi_plane_programs: d.multi_plane_programs,
        multi_plane_reads: d.multi_plane_reads,
        multi_plane_erases: d.multi_plane_erases,
    }
}

#[test]
fn three_die_rules_on_one_fixed_workload() {
    let planes = run(DieRules::IndependentPlanes);
    let strict = run(DieRules::OneCommandPerDie);
    let plane_reads = run(DieRules::IndependentPlaneReads);
    for g in [&planes, &strict, &plane_reads] {
        println!("{g:?}");
    }
    assert_eq!(plane_reads, run(DieRules::IndependentPlaneReads));
    let work = |g: &Golden| (g.page_reads, g.page_programs, g.block_erases);
    assert_eq!(work(&planes), work(&strict));
    assert_eq!(work(&planes), work(&plane_reads));
    let work = Golden {
        read_ns_mean: 0,
        read_ns_p99: 0,
        read_ns_max: 0,
        program_ns_mean: 0,
        program_ns_max: 0,
        makespan_ns: 0,
        page_reads: 7_176,
        page_programs: 824,
        block_erases: 8,
        multi_plane_programs: 0,
        multi_plane_reads: 0,
        multi_plane_erases: 0,
    };
    // Every plane on its own timeline: a read waits only for its plane and the channel.
    assert_eq!(
        planes,
        Golden {
            read_ns_mean: 112_252,
            read_ns_p99: 913_948,
            read_ns_max: 3_927_468,
            program_ns_mean: 605_985,
            program_ns_max: 4_189_821,
            makespan_ns: 479_287_628,
            ..work
        }
    );
    // One command per die: a read also waits for reads of the die's other planes unless
    // it is at their page offset (80 multi-plane reads of 7,176).
    assert_eq!(
        strict,
        Golden {
            read_ns_mean: 1_011_583,
            read_ns_p99: 7_528_453,
            read_ns_max: 9_779_441,
            program_ns_mean: 1_466_442,
            program_ns_max: 9_870_051,
            makespan_ns: 487_139_034,
            multi_plane_programs: 3,
            multi_plane_reads: 80,
            ..work
        }
    );
    // Independent plane reads: reads of a die's planes overlap; a read waits for a
    // program or erase of its die, and a program for every plane's reads.
    assert_eq!(
        plane_reads,
        Golden {
            read_ns_mean: 542_124,
            read_ns_p99: 4_974_622,
            read_ns_max: 7_072_266,
            program_ns_mean: 1_047_768,
            program_ns_max: 7_162_876,
            makespan_ns: 483_427_359,
            multi_plane_programs: 2,
            ..work
        }
    );
    // Reads: independent planes <= independent plane reads (they also wait for programs
    // and erases of their die) < one command per die (they also wait for reads of the
    // die's other planes).
    assert!(planes.read_ns_mean <= plane_reads.read_ns_mean);
    assert!(plane_reads.read_ns_mean < strict.read_ns_mean);
}
