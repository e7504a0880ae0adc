//! LDC's GC as the paper describes it (§5.3): on the LDC presets (`ldc-emmc-pm` … `-opt`),
//! garbage collection runs in idle time, and under LDC the compression-aware collector (caGC) compresses the
//! uncompressed data it migrates there, off the host's timeline.

use flashstack_block::{BlockDevice, Hints, Payload};
use flashstack_content::{ContentMix, ContentModel};
use flashstack_ftl::compression::CompressionPolicyKind;
use flashstack_ftl::{presets, DeviceConfig, Ftl};
use flashstack_sim::Rng;

/// Idle gap between bursts: well over the preset's 100 ms idle threshold.
const IDLE_NS: u64 = 1_000_000_000;

fn small(mut device: DeviceConfig) -> DeviceConfig {
    device.nand.geometry.blocks_per_plane = 256; // 64 MiB
    device
}

#[test]
fn background_gc_runs_on_the_ldc_preset_under_idle_gaps() {
    let device = presets::ldc_emmc_with(CompressionPolicyKind::Pm);
    let mut ftl = Ftl::new(small(device), false, 1).unwrap();
    let filled = ftl.capacity_lbas() * 85 / 100;
    let mut now = 0;
    for lba in (0..filled).step_by(32) {
        let count = 32.min(filled - lba) as u32;
        let payload = Payload::Unstored { lba_count: count };
        now = ftl
            .write(now, lba, payload, Hints::default())
            .unwrap()
            .complete_ns;
    }
    ftl.reset_measurement();
    let mut rng = Rng::new(3);
    for i in 0..40_000u64 {
        now += 500_000;
        if i % 256 == 255 {
            now += IDLE_NS;
        }
        let payload = Payload::Unstored { lba_count: 1 };
        ftl.write(now, rng.below(filled), payload, Hints::default())
            .unwrap();
    }
    ftl.check_invariants().unwrap();
    let c = ftl.counters();
    assert!(c.gc_cycles_background > 0, "no idle-time GC: {c:?}");
    // Idle time does most of the work: bursts of 256 writes fit in the 64-block pool.
    assert!(
        c.gc_cycles_background > c.gc_cycles_foreground,
        "foreground {} vs background {}",
        c.gc_cycles_foreground,
        c.gc_cycles_background
    );
}

/// Compressible cold data (SQLite pages) laid down raw as existing data and aged, then hot
/// incompressible writes in bursts with idle gaps: GC must migrate cold data, and LDC
/// compresses it while doing so, in the background.
fn cold_compressible(policy: CompressionPolicyKind) -> flashstack_ftl::FtlCounters {
    let mut ftl = Ftl::new(small(presets::ldc_emmc_with(policy)), true, 1).unwrap();
    let cold: ContentModel = ContentModel::new(5, "sqlite:1".parse::<ContentMix>().unwrap());
    let hot: ContentModel = ContentModel::new(6, "media:1".parse::<ContentMix>().unwrap());
    let filled = ftl.capacity_lbas() * 85 / 100;
    let hot_lbas = filled / 10;
    let mut page = vec![0u8; 4096];
    let mut now = 0;
    let mut write = |ftl: &mut Ftl, now: u64, lba: u64, model: &ContentModel, version: u32| {
        model.fill(lba, version, &mut page);
        ftl.write(now, lba, Payload::Bytes(&page), Hints::default())
            .unwrap()
            .complete_ns
    };
    ftl.set_raw_host_writes(true);
    for lba in 0..filled {
        now = write(&mut ftl, now, lba, &cold, 0);
    }
    let mut rng = Rng::new(4);
    for _ in 0..filled / 2 {
        let lba = hot_lbas + rng.below(filled - hot_lbas);
        now = write(&mut ftl, now, lba, &cold, 1);
    }
    ftl.set_raw_host_writes(false);
    ftl.reset_measurement();
    for i in 0..20_000u32 {
        now += 500_000;
        if i % 128 == 127 {
            now += IDLE_NS;
        }
        write(&mut ftl, now, rng.below(hot_lbas), &hot, 2 + i);
    }
    ftl.check_invariants().unwrap();
    ftl.counters().clone()
}

#[test]
fn cagc_compresses_cold_data_it_migrates_in_the_background() {
    let ldc = cold_compressible(CompressionPolicyKind::Ldc);
    assert_eq!(
        ldc.pages_compressed_host, 0,
        "media is never worth compressing"
    );
    assert!(ldc.gc_cycles_background > 0, "{ldc:?}");
    assert!(
        ldc.pages_compressed_gc > 0,
        "caGC compressed nothing: {ldc:?}"
    );
    assert!(
        ldc.pages_compressed_gc_background > 0,
        "caGC compressed nothing in idle time: {ldc:?}"
    );
    // SC has no caGC: the same run compresses nothing during GC.
    let sc = cold_compressible(CompressionPolicyKind::Sc);
    assert_eq!(sc.pages_compressed_gc, 0, "{sc:?}");
}
