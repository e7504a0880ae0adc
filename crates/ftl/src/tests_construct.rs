//! Preconditioning by construction: the tables the constructor builds directly equal what
//! the recovery scan builds from the same flash, and the two devices then behave alike.

use flashstack_block::{BlockDevice, Hints, Payload};
use flashstack_sim::Rng;

use crate::blocks::BlockState;
use crate::config::*;
use crate::tests::tiny_config;
use crate::{presets, DeviceParts, Ftl};

/// Devices to construct: tiny ones with 4 KiB and 8 KiB pages (FIFO and least-worn free
/// pools, one and three write streams, greedy and cost-benefit GC), a small copy of
/// `mqsim-default`, and a small `ufs31-dftl` (mapping cache: translation pages placed at
/// mount).
fn devices() -> Vec<DeviceConfig> {
    let mut fifo = tiny_config(4096, StreamMode::Single, VictimPolicyKind::Greedy);
    fifo.ftl.wear.dynamic = false;
    let three = tiny_config(8192, StreamMode::Temperature, VictimPolicyKind::CostBenefit);
    let mut mqsim = presets::mqsim_default();
    mqsim.nand.geometry.blocks_per_plane = 24;
    mqsim.ftl.gc.foreground_free_blocks = 4;
    mqsim.ftl.gc.background_free_blocks = 4;
    let mut dftl = presets::ufs31_dftl();
    dftl.nand.geometry.blocks_per_plane = 24;
    dftl.ftl.mapping_cache.sram_bytes = 16 << 10;
    vec![fifo, three, mqsim, dftl]
}

/// The mapping, valid counts, block states, per die the GC candidate order and the free
/// pool's order, and the next sequence number.
type Tables = (Vec<u32>, Vec<u32>, Vec<BlockState>, Vec<Vec<u32>>, u64);

/// Everything the mount builds that later decisions read, in comparable form ([`Tables`]);
/// reading the free pools drains them.
fn mounted_tables(ftl: &mut Ftl) -> Tables {
    let dies = ftl.units;
    let mut order = Vec::new();
    for die in 0..dies {
        let mut visited = Vec::new();
        ftl.blocks.fewest_valid(die, u32::MAX, |b| visited.push(b));
        let mut free = Vec::new();
        while let Some(b) = ftl.blocks.pop_free(die) {
            free.push(b);
        }
        order.push(visited);
        order.push(free);
    }
    assert!(ftl.mapping.nothing_shared() && ftl.copies.is_none());
    (
        ftl.mapping.l2p.to_vec(),
        ftl.blocks.valid_slots.clone(),
        ftl.blocks.state.clone(),
        order,
        ftl.seq,
    )
}

#[test]
fn constructed_mount_equals_the_recovery_scan_of_the_same_flash() {
    for config in devices() {
        let name = config.name.clone();
        let fresh = Ftl::new(config.clone(), false, 7).unwrap();
        for fill in [0.3, 0.7, 0.9] {
            let filled = (fresh.capacity_lbas() as f64 * fill) as u64;
            let (parts, _) = fresh.constructed_layout(filled, 7).unwrap();
            let (scanned, _) = Ftl::from_parts(
                config.clone(),
                DeviceParts {
                    nand: parts.clone(),
                    trim_log: Vec::new(),
                    bind_log: Vec::new(),
                },
                7,
                5_000,
            )
            .unwrap();
            let (direct, state) = fresh.constructed_steady_state(filled, 7, 5_000).unwrap();
            assert_eq!(state.filled_lbas, filled);
            assert_eq!(direct.to_parts().unwrap().nand, parts, "{name}: the flash");
            direct.check_invariants().unwrap();
            let mut pair = [scanned, direct];
            // The same overwrites on both: GC, wear levelling and (on the DFTL device)
            // mapping traffic decide alike, so the flash ends up identical.
            let mut rng = Rng::new(3);
            let writes = fresh.capacity_lbas();
            let lbas: Vec<u64> = (0..writes).map(|_| rng.below(filled)).collect();
            for ftl in pair.iter_mut() {
                ftl.reset_measurement();
                for &lba in &lbas {
                    let now = ftl.busy_until_ns();
                    let payload = Payload::Unstored { lba_count: 1 };
                    ftl.write(now, lba, payload, Hints::default()).unwrap();
                }
                ftl.check_invariants().unwrap();
            }
            let [scanned, direct] = &mut pair;
            let what = format!("{name} at {fill}");
            assert_eq!(
                direct.nand().counters().block_erases,
                scanned.nand().counters().block_erases,
                "{what}"
            );
            assert!(direct.nand().counters().block_erases > 0, "{what}: GC ran");
            assert_eq!(
                direct.nand().counters().page_programs,
                scanned.nand().counters().page_programs,
                "{what}"
            );
            let (d, s) = (direct.counters(), scanned.counters());
            assert_eq!(
                (d.program_slots_gc, d.gc_cycles_foreground, d.erases_wl),
                (s.program_slots_gc, s.gc_cycles_foreground, s.erases_wl),
                "{what}"
            );
            assert_eq!(
                (d.mapping_reads, d.mapping_programs, d.cmt_misses),
                (s.mapping_reads, s.mapping_programs, s.cmt_misses),
                "{what}"
            );
            assert_eq!(direct.to_parts(), scanned.to_parts(), "{what}: the flash");
            assert!(
                mounted_tables(direct) == mounted_tables(scanned),
                "{what}: the tables"
            );
        }
    }
}

/// The tables themselves, straight after mounting (before any write could hide a
/// difference the two happen to repair alike).
#[test]
fn constructed_tables_equal_the_scanned_ones_at_mount() {
    for config in devices() {
        let fresh = Ftl::new(config.clone(), false, 9).unwrap();
        let filled = fresh.capacity_lbas() * 3 / 4;
        let (parts, _) = fresh.constructed_layout(filled, 9).unwrap();
        let device = DeviceParts {
            nand: parts,
            trim_log: Vec::new(),
            bind_log: Vec::new(),
        };
        let (mut scanned, _) = Ftl::from_parts(config.clone(), device, 9, 0).unwrap();
        let (mut direct, _) = fresh.constructed_steady_state(filled, 9, 0).unwrap();
        assert_eq!(direct.blocks.live_slots(), filled);
        assert_eq!(direct.mapped_lbas(), filled);
        let tables = mounted_tables(&mut direct);
        assert!(tables == mounted_tables(&mut scanned), "{}", config.name);
        // Every logical page of the fill is mapped, none beyond it.
        assert!(tables.0[..filled as usize].iter().all(|&s| s != u32::MAX));
        assert!(tables.0[filled as usize..].iter().all(|&s| s == u32::MAX));
    }
}

/// Floyd's sampling sets exactly the bits asked for, each position about equally often.
#[test]
fn random_subset_draws_exactly_count_positions_uniformly() {
    let mut rng = Rng::new(5);
    let mut bits = [u64::MAX; 8];
    let mut hits = [0u32; 500];
    for _ in 0..2_000 {
        crate::construct::random_subset(&mut rng, 500, 200, &mut bits);
        let ones: u32 = bits.iter().map(|w| w.count_ones()).sum();
        assert_eq!(ones, 200);
        for (i, h) in hits.iter_mut().enumerate() {
            *h += ((bits[i / 64] >> (i % 64)) & 1) as u32;
        }
    }
    // Expected 800 per position (2,000 × 200 / 500), standard deviation ~22.
    assert!(hits.iter().all(|&h| (650..=950).contains(&h)), "{hits:?}");
}
