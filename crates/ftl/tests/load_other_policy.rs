//! A device's saved state loaded under another compression policy: a phone aged on
//! `ldc-emmc-pm` (every page stored raw) starts `reproduce ldc --stack`'s zFTL, SC, LDC
//! and OPT columns. The load must keep the mapping, the valid counts and the bytes, give
//! caGC's Eq. 4 each block's Cr(B) from the data it holds, and let later GC compress the
//! loaded raw pages it migrates under LDC.

use flashstack_block::{BlockDevice, Hints, Payload};
use flashstack_content::{ContentMix, ContentModel};
use flashstack_ftl::compression::CompressionPolicyKind;
use flashstack_ftl::{presets, DeviceConfig, Ftl};
use flashstack_sim::Rng;

const IDLE_NS: u64 = 1_000_000_000;

fn small(policy: CompressionPolicyKind) -> DeviceConfig {
    let mut device = presets::ldc_emmc_with(policy);
    // 550 MiB: large enough that every policy exports the same capacity (the 1%
    // over-provisioning, not the compressing policies' eleven open frontiers, bounds it).
    device.nand.geometry.blocks_per_plane = 2_200;
    device
}

fn write(ftl: &mut Ftl, now: u64, lba: u64, model: &ContentModel, version: u32) -> u64 {
    let mut page = vec![0u8; 4096];
    model.fill(lba, version, &mut page);
    ftl.write(now, lba, Payload::Bytes(&page), Hints::default())
        .unwrap()
        .complete_ns
}

/// Cold SQLite pages (compressible) on the first half, media (incompressible) on the
/// rest, written and partly overwritten under PM, flushed and saved.
fn aged_under_pm() -> (Ftl, u64, ContentModel, ContentModel) {
    let mut ftl = Ftl::new(small(CompressionPolicyKind::Pm), true, 1).unwrap();
    let cold = ContentModel::new(5, "sqlite:1".parse::<ContentMix>().unwrap());
    let media = ContentModel::new(6, "media:1".parse::<ContentMix>().unwrap());
    let filled = ftl.capacity_lbas() * 85 / 100;
    let half = filled / 2;
    let mut now = 0;
    for lba in 0..filled {
        let model = if lba < half { &cold } else { &media };
        now = write(&mut ftl, now, lba, model, 0);
    }
    let mut rng = Rng::new(4);
    for _ in 0..filled / 2 {
        let lba = rng.below(filled);
        let model = if lba < half { &cold } else { &media };
        now = write(&mut ftl, now, lba, model, 1);
    }
    ftl.flush(now).unwrap();
    (ftl, now, cold, media)
}

#[test]
fn a_pm_device_loads_under_ldc_with_its_mapping_and_gc_then_compresses_it() {
    let (pm, now, cold, media) = aged_under_pm();
    let filled = pm.capacity_lbas() * 85 / 100;
    let half = filled / 2;
    let parts = pm.to_parts().unwrap();
    let lbas = pm.mapping().len();
    assert_eq!(
        small(CompressionPolicyKind::Ldc)
            .user_capacity_bytes()
            .unwrap(),
        lbas as u64 * 4096
    );
    let saved_mapping: Vec<u32> = (0..lbas).map(|i| pm.mapping().at(i)).collect();
    let saved_valid = pm.valid_slots_per_block().to_vec();

    // Under PM itself nothing tracks Cr(B); under LDC every block has it back.
    let (reloaded_pm, _) =
        Ftl::from_parts(small(CompressionPolicyKind::Pm), parts.clone(), 1, now).unwrap();
    let (mut ldc, _) =
        Ftl::from_parts(small(CompressionPolicyKind::Ldc), parts, 1, now + 1).unwrap();
    ldc.check_invariants().unwrap();
    let mapping: Vec<u32> = (0..lbas).map(|i| ldc.mapping().at(i)).collect();
    let differs = (0..saved_mapping.len()).find(|&i| mapping[i] != saved_mapping[i]);
    assert_eq!(
        differs.map(|i| (i, saved_mapping[i], mapping[i])),
        None,
        "(logical page, saved slot, loaded slot)"
    );
    assert!(
        ldc.valid_slots_per_block() == &saved_valid[..],
        "valid counts differ"
    );
    let blocks = saved_valid.len() as u32;
    let ratios: Vec<u32> = (0..blocks)
        .map(|b| ldc.block_ratio_permille_of(b))
        .collect();
    assert!((0..blocks).all(|b| reloaded_pm.block_ratio_permille_of(b) == 1000));
    // SQLite pages predict well under 1000‰, media near it (the overwrites mixed both
    // into the later blocks).
    let block_of = |lba: u64| (ldc.mapping().at(lba as usize) / (64 * 8)) as usize;
    let (sqlite, jpeg) = (ratios[block_of(0)], ratios[block_of(filled - 1)]);
    assert!(
        sqlite < 600 && jpeg > sqlite + 100,
        "Cr(B): a block of SQLite pages {sqlite}‰, a block with media {jpeg}‰"
    );

    // Hot media overwrites in bursts with idle gaps: GC migrates the loaded SQLite pages
    // and caGC compresses them.
    let mut rng = Rng::new(7);
    let mut t = now + IDLE_NS;
    for i in 0..60_000u32 {
        t += 500_000;
        if i % 128 == 127 {
            t += IDLE_NS;
        }
        let lba = half + rng.below(filled - half);
        t = t.max(write(&mut ldc, t, lba, &media, 2 + i));
    }
    ldc.check_invariants().unwrap();
    let c = ldc.counters();
    assert!(c.pages_compressed_gc > 0, "caGC compressed nothing: {c:?}");
    assert_eq!(
        c.pages_compressed_host, 0,
        "media is never worth compressing"
    );
    // The loaded cold pages read back as written (version 1 if overwritten, else 0).
    let mut page = vec![0u8; 4096];
    let mut expect = vec![0u8; 4096];
    for lba in (0..half).step_by(37) {
        ldc.read(t, lba, 1, Some(&mut page)).unwrap();
        cold.fill(lba, 1, &mut expect);
        if page != expect {
            cold.fill(lba, 0, &mut expect);
        }
        assert_eq!(page, expect, "lba {lba}");
    }
}
