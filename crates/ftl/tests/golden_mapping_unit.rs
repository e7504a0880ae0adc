//! Golden counters of the page-sized mapping unit (`ftl.mapping_unit_bytes`, `unit.rs`):
//! `mqsim-page` shrunk to 2 channels × 2 dies, a fixed seed and workload (random 4 KiB
//! writes, reads and single-LBA trims, then a power cycle) give exact programs, erases,
//! read-modify-write reads, GC and padding; the same workload with 4 KiB mapping is the
//! baseline the unit is compared to. Update the numbers only with a reason in the commit
//! message.

use flashstack_block::{BlockDevice, Hints, Payload};
use flashstack_ftl::{presets, DeviceConfig, Ftl};
use flashstack_sim::Rng;

#[derive(Debug, PartialEq, Eq)]
struct Golden {
    page_programs: u64,
    block_erases: u64,
    gc_cycles: u64,
    rmw_reads: u64,
    slots_host: u64,
    slots_rmw: u64,
    slots_gc: u64,
    slots_padding: u64,
    relocation_reads: u64,
    mapped_after_cut: u64,
}

/// `mqsim-page` with 2 × 2 dies of 64 blocks of 32 pages (64 MiB of flash), mapping unit
/// `unit_bytes`.
fn device(unit_bytes: u32) -> DeviceConfig {
    let mut d = presets::preset("mqsim-page").unwrap();
    let g = &mut d.nand.geometry;
    (
        g.channels,
        g.dies_per_channel,
        g.blocks_per_plane,
        g.pages_per_block,
    ) = (2, 2, 64, 32);
    d.ftl.gc.foreground_free_blocks = 4;
    d.ftl.gc.background_free_blocks = 4;
    d.ftl.mapping_unit_bytes = unit_bytes;
    d
}

/// 60,000 requests over the first 80 % of the capacity, one every 200 µs: 75 % 4 KiB
/// writes at random LBAs, 20 % 4 KiB reads, 5 % single-LBA trims; then a flush and a
/// power cycle. Counts only: none depends on timing (the device is never idle long
/// enough for background GC).
fn run(device: DeviceConfig) -> Golden {
    let mut ftl = Ftl::new(device, false, 42).unwrap();
    let span = ftl.capacity_lbas() * 8 / 10;
    let mut rng = Rng::new(19);
    let mut now = 0;
    for _ in 0..60_000u64 {
        now += 200_000;
        let lba = rng.below(span);
        let pick = rng.below(100);
        if pick < 75 {
            let payload = Payload::Unstored { lba_count: 1 };
            ftl.write(now, lba, payload, Hints::default()).unwrap();
        } else if pick < 95 {
            ftl.read(now, lba, 1, None).unwrap();
        } else {
            ftl.trim(now, lba, 1).unwrap();
        }
    }
    ftl.flush(now + 1).unwrap();
    ftl.check_invariants().unwrap();
    let c = ftl.counters().clone();
    let mapped = ftl.mapped_lbas();
    ftl.power_cycle(now + 1_000_000_000).unwrap();
    ftl.check_invariants().unwrap();
    assert_eq!(ftl.mapped_lbas(), mapped, "a flushed device recovers whole");
    Golden {
        page_programs: c.page_programs,
        block_erases: c.erases_gc + c.erases_wl,
        gc_cycles: c.gc_cycles_foreground + c.gc_cycles_background,
        rmw_reads: c.rmw_reads,
        slots_host: c.program_slots_host,
        slots_rmw: c.program_slots_rmw,
        slots_gc: c.program_slots_gc,
        slots_padding: c.program_slots_padding,
        relocation_reads: c.page_reads_relocation,
        mapped_after_cut: ftl.mapped_lbas(),
    }
}

#[test]
fn page_sized_mapping_unit_golden_counters() {
    let page = run(device(8192));
    let slot = run(device(4096));
    println!("8 KiB unit: {page:?}\n4 KiB unit: {slot:?}");
    assert_eq!(
        page,
        Golden {
            page_programs: 67_831,
            block_erases: 1643,
            gc_cycles: 1643,
            rmw_reads: 24_251,
            slots_host: 45_029,
            slots_rmw: 24_251,
            slots_gc: 32_634,
            slots_padding: 33_418,
            relocation_reads: 22_637,
            mapped_after_cut: 19_109,
        }
    );
    assert_eq!(
        slot,
        Golden {
            page_programs: 25_535,
            block_erases: 320,
            gc_cycles: 320,
            rmw_reads: 0,
            slots_host: 45_026,
            slots_rmw: 0,
            slots_gc: 5784,
            slots_padding: 162,
            relocation_reads: 4990,
            mapped_after_cut: 19_109,
        }
    );
    // What the unit costs: every 4 KiB write programs a whole page, and GC moves units.
    assert!(page.page_programs > slot.page_programs * 3 / 2);
    assert_eq!(slot.rmw_reads, 0);
}

/// The fresh full-size `mqsim-page` under 20,000 random 4 KiB writes over 12 GiB (the
/// shape of the MQSim comparison in `docs/validation.md`): every write programs a page,
/// and reads the other half of it when that half was written before.
#[test]
fn fresh_mqsim_page_programs_a_page_per_4k_write() {
    let mut ftl = Ftl::new(presets::preset("mqsim-page").unwrap(), false, 42).unwrap();
    let span = (12u64 << 30) / 4096;
    let mut rng = Rng::new(7);
    let mut now = 0;
    for _ in 0..20_000 {
        now += 100_000;
        let payload = Payload::Unstored { lba_count: 1 };
        ftl.write(now, rng.below(span), payload, Hints::default())
            .unwrap();
    }
    let c = ftl.counters();
    let got = (c.page_programs, c.rmw_reads, c.program_slots_padding);
    // 64 reads: about 20,000² ÷ 2 ÷ 3,145,728 (the chance that a write's other half was
    // written before, summed); the rest of those pages is padding.
    assert_eq!(got, (20_000, 64, 19_936), "{c:?}");
}
