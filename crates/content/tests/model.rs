//! The model's contract: determinism, seed sensitivity, class assignment by region and the
//! mix syntax.

use flashstack_content::PAGE_SIZE;
use flashstack_content::{
    ContentClass, ContentConfig, ContentError, ContentMix, ContentModel, Zone,
};

fn page(model: &ContentModel, lba: u64, version: u32) -> Vec<u8> {
    let mut out = vec![0u8; PAGE_SIZE];
    model.fill(lba, version, &mut out);
    out
}

fn uniform_mix() -> ContentMix {
    "zeros:1,sqlite:1,sqlite-index:1,text:1,exec:1,media:1,meta:1"
        .parse()
        .unwrap()
}

#[test]
fn same_seed_same_bytes_across_models() {
    let a = ContentModel::new(7, uniform_mix())
        .with_region_lbas(4)
        .unwrap();
    let b = ContentModel::new(7, uniform_mix())
        .with_region_lbas(4)
        .unwrap();
    for lba in 0..200 {
        for version in [0, 1, 2, 63, 64, 65, 1000] {
            assert_eq!(
                page(&a, lba, version),
                page(&b, lba, version),
                "lba {lba} v{version}"
            );
        }
    }
}

#[test]
fn output_does_not_depend_on_the_buffer_it_overwrites() {
    let m = ContentModel::new(3, uniform_mix())
        .with_region_lbas(2)
        .unwrap();
    for lba in 0..100 {
        for class in ContentClass::ALL {
            let mut clean = vec![0u8; PAGE_SIZE];
            let mut dirty = vec![0xA5u8; PAGE_SIZE];
            m.fill_class(class, lba, 3, &mut clean);
            m.fill_class(class, lba, 3, &mut dirty);
            assert_eq!(clean, dirty, "{class} lba {lba}");
        }
    }
}

#[test]
fn different_seeds_give_different_bytes() {
    let a = ContentModel::new(1, ContentMix::default());
    let b = ContentModel::new(2, ContentMix::default());
    for class in ContentClass::ALL {
        if class == ContentClass::Zeros {
            continue;
        }
        let mut pa = vec![0u8; PAGE_SIZE];
        let mut pb = vec![0u8; PAGE_SIZE];
        let differing = (0..50)
            .filter(|&lba| {
                a.fill_class(class, lba, 0, &mut pa);
                b.fill_class(class, lba, 0, &mut pb);
                pa != pb
            })
            .count();
        assert_eq!(differing, 50, "{class}");
    }
    let classes_a: Vec<_> = (0..64).map(|r| a.class_of(r * 256)).collect();
    let classes_b: Vec<_> = (0..64).map(|r| b.class_of(r * 256)).collect();
    assert_ne!(classes_a, classes_b);
}

#[test]
fn versions_and_lbas_differ() {
    let m = ContentModel::new(9, ContentMix::only(ContentClass::SqliteTable));
    assert_ne!(page(&m, 10, 0), page(&m, 11, 0));
    let changed = (1..20)
        .filter(|&v| page(&m, 10, v) != page(&m, 10, v - 1))
        .count();
    assert!(
        changed >= 15,
        "only {changed} of 19 updates changed the page"
    );
}

#[test]
fn class_is_constant_within_a_region() {
    let m = ContentModel::new(5, ContentMix::default())
        .with_region_lbas(64)
        .unwrap();
    for region in 0..500u64 {
        let class = m.class_of(region * 64);
        for lba in region * 64..(region + 1) * 64 {
            assert_eq!(m.class_of(lba), class, "lba {lba}");
        }
    }
}

#[test]
fn class_shares_follow_the_weights_over_100k_regions() {
    let mix: ContentMix = "sqlite:40,text:10,media:30,exec:10,meta:5,zeros:5"
        .parse()
        .unwrap();
    let m = ContentModel::new(12, mix.clone());
    let regions = 100_000u64;
    let mut counts = [0u64; ContentClass::ALL.len()];
    for region in 0..regions {
        let class = m.class_of(region * m.region_lbas());
        counts[ContentClass::ALL.iter().position(|&c| c == class).unwrap()] += 1;
    }
    for (i, class) in ContentClass::ALL.into_iter().enumerate() {
        let got = counts[i] as f64 / regions as f64;
        let want = mix.share(class);
        // 100k draws: one standard deviation is at most 0.16 pp.
        assert!(
            (got - want).abs() < 0.01,
            "{class}: share {got:.4}, weight {want:.4}"
        );
    }
    assert_eq!(counts[2], 0, "sqlite-index has no weight");
}

#[test]
fn mix_errors_name_the_entry() {
    let err = "sqlite:40,sqlite:x".parse::<ContentMix>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "content mix: 'sqlite:x': weight must be a whole number"
    );
    assert_eq!(
        "media:0,text:0".parse::<ContentMix>(),
        Err(ContentError::AllZero)
    );
    let err = "sqlite:40,video:3"
        .parse::<ContentMix>()
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("content mix: 'video:3': unknown class 'video'"),
        "{err}"
    );
}

#[test]
fn config_defaults_are_the_documented_ones() {
    let config = ContentConfig::default();
    assert_eq!(config.region_lbas, 256);
    assert_eq!(config.change_ratio, 0.138);
    assert_eq!(config.mix.to_string(), ContentMix::DEFAULT_SPEC);
    let m = ContentModel::from_config(1, &config).unwrap();
    assert_eq!(
        (m.seed(), m.region_lbas(), m.change_ratio()),
        (1, 256, 0.138)
    );
}

/// FNV-1a over the bytes of a fixed set of pages.
fn fingerprint(model: &ContentModel) -> u64 {
    let mut h = 0xCBF2_9CE4_8422_2325u64;
    for lba in 0..64 {
        for version in 0..3 {
            for b in page(model, lba * 97, version) {
                h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01B3);
            }
        }
    }
    h
}

#[test]
fn content_stream_is_pinned() {
    // Golden value: downstream golden counters (compressed bytes, delta sizes) depend on
    // these bytes. If a generator change is intended, update it and say so in the commit.
    let m = ContentModel::new(1, uniform_mix())
        .with_region_lbas(8)
        .unwrap();
    assert_eq!(
        fingerprint(&m),
        GOLDEN_FINGERPRINT,
        "got {:#018X}",
        fingerprint(&m)
    );
}

const GOLDEN_FINGERPRINT: u64 = 0x0F38_3DAB_0016_6A71;

fn zoned(seed: u64) -> ContentModel {
    ContentModel::new(seed, "text:1".parse().unwrap())
        .with_zones(vec![
            Zone::new(0..1000, ContentMix::only(ContentClass::Metadata)),
            Zone::new(1000..3000, "sqlite:3,sqlite-index:1".parse().unwrap()),
            // Overlaps the first two zones: they win where they overlap it.
            Zone::new(500..8000, ContentMix::only(ContentClass::Media)),
        ])
        .unwrap()
}

#[test]
fn zones_give_their_lbas_their_own_mix() {
    let m = zoned(4);
    for lba in [0, 1, 499, 500, 999] {
        assert_eq!(m.class_of(lba), ContentClass::Metadata, "lba {lba}");
    }
    for lba in (1000..3000).step_by(37) {
        let class = m.class_of(lba);
        assert!(
            matches!(class, ContentClass::SqliteTable | ContentClass::SqliteIndex),
            "lba {lba}: {class}"
        );
    }
    for lba in [3000, 5000, 7999] {
        assert_eq!(m.class_of(lba), ContentClass::Media, "lba {lba}");
    }
    for lba in [8000, 1 << 40] {
        assert_eq!(
            m.class_of(lba),
            ContentClass::Text,
            "outside every zone: lba {lba}"
        );
    }
    assert_eq!(m.zones().len(), 3);
    assert_eq!(m.mix_of(8000).to_string(), "text:1");
}

#[test]
fn zone_classes_follow_the_zone_weights_per_region() {
    // 4,000 regions of 256 LBAs in one zone: the shares follow its weights.
    let m = zoned(5)
        .with_zones(vec![Zone::new(
            0..4000 * 256,
            "sqlite:3,sqlite-index:1".parse().unwrap(),
        )])
        .unwrap();
    let index = (0..4000u64)
        .filter(|r| m.class_of(r * 256 + 17) == ContentClass::SqliteIndex)
        .count();
    let share = index as f64 / 4000.0;
    assert!((share - 0.25).abs() < 0.03, "sqlite-index share {share}");
    for region in 0..100u64 {
        let class = m.class_of(region * 256);
        assert!((region * 256..(region + 1) * 256).all(|lba| m.class_of(lba) == class));
    }
}

#[test]
fn pages_in_a_zone_are_the_bytes_of_their_class() {
    let m = zoned(6);
    for lba in [3, 1500, 4000, 9000] {
        let mut via_zone = vec![0u8; PAGE_SIZE];
        let mut direct = vec![0u8; PAGE_SIZE];
        m.fill(lba, 2, &mut via_zone);
        m.fill_class(m.class_of(lba), lba, 2, &mut direct);
        assert_eq!(via_zone, direct, "lba {lba}");
    }
}

#[test]
fn no_zones_keeps_the_zone_less_classes() {
    let plain = ContentModel::new(8, ContentMix::default());
    let empty = ContentModel::new(8, ContentMix::default())
        .with_zones(Vec::new())
        .unwrap();
    for lba in (0..1 << 20).step_by(4099) {
        assert_eq!(plain.class_of(lba), empty.class_of(lba));
    }
}

#[test]
fn config_zones_deserialise_with_a_default_and_reject_empty_ranges() {
    let config: ContentConfig = serde_json::from_str(r#"{"mix": "text:1"}"#).unwrap();
    assert!(config.zones.is_empty());
    assert!(!serde_json::to_string(&config).unwrap().contains("zones"));
    let text = r#"{"zones": [{"start_lba": 0, "end_lba": 8, "mix": "media:1"}]}"#;
    let config: ContentConfig = serde_json::from_str(text).unwrap();
    let m = ContentModel::from_config(1, &config).unwrap();
    assert_eq!(m.class_of(7), ContentClass::Media);
    let bad = r#"{"zones": [{"start_lba": 9, "end_lba": 8, "mix": "media:1"}]}"#;
    let config: ContentConfig = serde_json::from_str(bad).unwrap();
    assert_eq!(
        ContentModel::from_config(1, &config)
            .unwrap_err()
            .to_string(),
        "content zone 0: LBA range 9..8 is empty (start must be below end)"
    );
}
