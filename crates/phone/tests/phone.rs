//! A used phone: built deterministically, saved and loaded exactly, checked by fsck.f2fs
//! and SQLite, and a damaged or wrong file refused with the place named.

mod common;

use std::path::PathBuf;
use std::sync::OnceLock;

use common::{assert_fsck_clean, check_persona_databases, small_stack};
use flashstack_phone::measure::{device_state, fs_state};
use flashstack_phone::{build, AgingSpec, Fidelity, PhoneError, PhoneImage};
use flashstack_stack::{SharedStack, StackConfig};
use proptest::prelude::*;

fn spec(seed: u64) -> AgingSpec {
    AgingSpec::new(0.8, 8, seed, Fidelity::Fast)
}

/// The phone most tests share (built once per test binary).
fn phone() -> &'static PhoneImage {
    static PHONE: OnceLock<PhoneImage> = OnceLock::new();
    PHONE.get_or_init(|| build(&small_stack(), &spec(1), &mut |_, _| {}).expect("aging"))
}

/// Its file, saved once.
fn phone_file() -> &'static PathBuf {
    static FILE: OnceLock<PathBuf> = OnceLock::new();
    FILE.get_or_init(|| {
        let path = temp("shared.phone");
        phone().save(&path).unwrap();
        path
    })
}

fn temp(name: &str) -> PathBuf {
    flashstack_testkit::scratch_dir("flashstack-phone-test").join(name)
}

#[test]
fn the_phone_is_what_was_asked_for() {
    let h = &phone().header;
    assert!(
        (h.fs.utilization - 0.8).abs() < 0.01,
        "fill {}",
        h.fs.utilization
    );
    assert_eq!(h.spec.days, 8);
    assert!(h.fs.free_segments > 0 && h.fs.free_segments < h.fs.main_segments);
    // A used phone: its databases are fragmented, its device has erased blocks.
    let db = &h.fs.classes["database"];
    assert!(db.files > 0 && db.dof_mean > 1.5, "{db:?}");
    assert!(h.device.erase_count_max > 0, "{:?}", h.device);
    assert!(h.device.turnover >= 1.0, "{:?}", h.device);
    assert_eq!(h.persona_apps.len(), 6);
    assert!(h.counts.app_sessions > 0 && h.counts.photos > 0 && h.counts.app_updates > 0);
}

#[test]
fn same_seed_same_phone_file_and_another_seed_another_phone() {
    let again = build(&small_stack(), &spec(1), &mut |_, _| {}).unwrap();
    let path = temp("again.phone");
    again.save(&path).unwrap();
    let a = std::fs::read(phone_file()).unwrap();
    let b = std::fs::read(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    assert!(a == b, "two builds with seed 1 differ");
    let other = build(&small_stack(), &spec(2), &mut |_, _| {}).unwrap();
    assert_ne!(other.mapping, phone().mapping);
}

#[test]
fn a_saved_phone_loads_exactly_and_measures_the_same() {
    let loaded = PhoneImage::load(phone_file()).unwrap();
    let p = phone();
    assert_eq!(loaded.header, p.header);
    assert!(
        loaded.device == p.device,
        "device state differs after a round trip"
    );
    assert_eq!(loaded.mapping, p.mapping);
    assert_eq!(loaded.valid, p.valid);
    let mut stack = loaded.into_stack(None, 1).unwrap();
    let ftl = stack.device().unwrap();
    let device = device_state(ftl);
    assert_eq!(
        device.valid_share_histogram,
        p.header.device.valid_share_histogram
    );
    assert_eq!(
        device.erase_count_histogram,
        p.header.device.erase_count_histogram
    );
    let fs = stack.with_fs(fs_state).unwrap().unwrap();
    assert_eq!(fs.classes, p.header.fs.classes);
    assert_eq!(fs.valid_blocks, p.header.fs.valid_blocks);
    assert_eq!(fs.files, p.header.fs.files);
}

#[test]
fn the_aged_image_passes_fsck_and_the_personas_databases_are_intact() {
    let stack = phone().clone().into_stack(None, 1).unwrap();
    let shared = SharedStack::new(stack);
    let checked = check_persona_databases(&shared);
    assert!(checked >= 12, "{checked} databases");
    assert_fsck_clean(&mut shared.lock(), "aged");
}

#[test]
fn a_phone_is_refused_on_a_stack_with_another_device() {
    let ufs = StackConfig::preset("ufs31").unwrap();
    let Err(err) = phone().clone().into_stack(Some(&ufs), 1) else {
        panic!("a phone of another device was started");
    };
    let text = err.to_string();
    assert!(matches!(err, PhoneError::Incompatible(_)), "{text}");
    assert!(
        text.contains("ldc-emmc") && text.contains("ufs31"),
        "{text}"
    );
    // Another FTL policy over the same flash is fine.
    let mut greedy = small_stack();
    greedy.device.ftl.gc.policy = flashstack_ftl::VictimPolicyKind::CostBenefit;
    phone().clone().into_stack(Some(&greedy), 1).unwrap();
}

fn load_err(bytes: &[u8], name: &str) -> String {
    let path = temp(name);
    std::fs::write(&path, bytes).unwrap();
    let result = PhoneImage::load(&path);
    let _ = std::fs::remove_file(&path);
    match result {
        Ok(_) => panic!("{name}: a damaged file was loaded"),
        Err(e) => e.to_string(),
    }
}

/// Where each section's payload starts and ends (after the magic and version).
fn sections(bytes: &[u8]) -> Vec<(String, usize, usize)> {
    let mut at = 20;
    let mut out = Vec::new();
    while at + 16 <= bytes.len() {
        let tag: String = bytes[at..at + 8]
            .iter()
            .take_while(|&&b| b != 0)
            .map(|&b| b as char)
            .collect();
        let len = u64::from_le_bytes(bytes[at + 8..at + 16].try_into().unwrap()) as usize;
        out.push((tag, at + 16, at + 16 + len));
        at += 16 + len + 8;
    }
    out
}

#[test]
fn damaged_and_wrong_files_are_refused_naming_what_is_wrong() {
    let good = std::fs::read(phone_file()).unwrap();
    let text = load_err(b"", "empty.phone");
    assert!(
        text.contains("empty.phone") && text.contains("not a phone file"),
        "{text}"
    );
    let text = load_err(b"hello, this is not a phone at all", "text.phone");
    assert!(text.contains("wrong magic"), "{text}");
    let mut v3 = good.clone();
    v3[16..20].copy_from_slice(&3u32.to_le_bytes());
    let text = load_err(&v3, "v3.phone");
    assert!(
        text.contains("format version 3") && text.contains("versions 1 and 2"),
        "{text}"
    );
    let text = load_err(&good[..good.len() / 2], "half.phone");
    assert!(text.contains("truncated"), "{text}");
    let found = sections(&good);
    let names: Vec<&str> = found.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(
        names,
        [
            "HEADER", "BLOCKS", "PAGES", "LPNS", "FRAMEMAP", "FRAMES", "TRIMLOG", "BINDLOG",
            "MAPPING", "VALID", "END"
        ]
    );
    for (name, start, end) in found.iter().filter(|s| s.2 > s.1) {
        let mut bad = good.clone();
        bad[(start + end) / 2] ^= 0x40;
        let text = load_err(&bad, "flipped.phone");
        assert!(
            text.contains(&format!("section {name}")) && text.contains("damaged"),
            "{name}: {text}"
        );
    }
}

/// A file of format version 1 (no `BINDLOG` section) still loads, as the same phone.
#[test]
fn a_version_1_file_still_loads() {
    let good = std::fs::read(phone_file()).unwrap();
    let binds = sections(&good)
        .into_iter()
        .find(|s| s.0 == "BINDLOG")
        .unwrap();
    let mut v1 = good[..binds.1 - 16].to_vec();
    v1.extend_from_slice(&good[binds.2 + 8..]);
    v1[16..20].copy_from_slice(&1u32.to_le_bytes());
    let path = temp("v1.phone");
    std::fs::write(&path, &v1).unwrap();
    let loaded = PhoneImage::load(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    assert!(loaded.device == phone().device && loaded.mapping == phone().mapping);
}

/// A phone whose device holds remap records (janusdL ran on it) saves, loads with the
/// same records and mapping, and serves the remapped file's bytes after the reload.
#[test]
fn a_phone_with_remap_records_round_trips() {
    let p = phone();
    let mut stack = p.clone().into_stack(None, 1).unwrap();
    let pages = 32;
    let want: Vec<u8> = (0..pages * 4096)
        .map(|i| (i / 4096 * 7 + i % 251) as u8)
        .collect();
    let (report, ino) = stack
        .with_fs(|fs| {
            let a = fs.create("/remapped").unwrap();
            let b = fs.create("/between").unwrap();
            for i in 0..pages {
                let at = i * 4096;
                fs.write(a, at as u64, &want[at..at + 4096]).unwrap();
                fs.fsync(a).unwrap();
                fs.write(b, at as u64, &[9; 4096]).unwrap();
                fs.fsync(b).unwrap();
            }
            (fs.defrag_by_remap(a).unwrap(), a)
        })
        .unwrap();
    assert!(report.blocks_remapped > 0, "{report:?}");
    let h = &p.header;
    let saved =
        PhoneImage::capture(stack, &h.spec, h.counts.clone(), h.persona_apps.clone()).unwrap();
    assert!(
        !saved.device.bind_log.is_empty(),
        "the device holds remap records"
    );
    let path = temp("remapped.phone");
    saved.save(&path).unwrap();
    let loaded = PhoneImage::load(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    assert!(
        loaded.device == saved.device,
        "the device parts differ after the reload"
    );
    assert_eq!(loaded.mapping, saved.mapping);
    let mut stack = loaded.into_stack(None, 1).unwrap();
    let got = stack
        .with_fs(|fs| fs.read(ino, 0, pages * 4096).unwrap())
        .unwrap();
    assert!(got == want, "the remapped file reads back");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Any single flipped byte or truncation is refused (no panic, no silent load).
    #[test]
    fn any_flip_or_cut_is_refused(at in 0.0f64..1.0, bit in 0u8..8, cut in proptest::bool::ANY) {
        let good = std::fs::read(phone_file()).unwrap();
        let i = ((good.len() - 1) as f64 * at) as usize;
        let bad = if cut {
            good[..i].to_vec()
        } else {
            let mut b = good.clone();
            b[i] ^= 1 << bit;
            b
        };
        let path = temp(&format!("prop-{i}-{bit}-{cut}.phone"));
        std::fs::write(&path, &bad).unwrap();
        let result = PhoneImage::load(&path);
        let _ = std::fs::remove_file(&path);
        prop_assert!(result.is_err(), "byte {} of {} ({}) loaded", i, good.len(), if cut { "cut" } else { "flip" });
    }
}

#[test]
fn a_failed_save_leaves_the_existing_file_untouched() {
    let dir = temp("readonly-dir");
    std::fs::create_dir_all(&dir).unwrap();
    let target = dir.join("x.phone");
    std::fs::write(&target, b"old").unwrap();
    // A directory where the temporary file would go makes the save fail.
    let tmp = target.with_extension(format!("tmp{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    assert!(phone().save(&target).is_err());
    assert_eq!(std::fs::read(&target).unwrap(), b"old");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `cached_aged` (how `reproduce coco --quick` gets its lighter aged phones) keeps a phone
/// per aging specification in the built-in phone's cache: the spec asked for is the one
/// built, a second call loads it, and another spec is another phone.
#[test]
fn the_phone_cache_keeps_one_phone_per_aging_spec() {
    use flashstack_phone::{cached_aged, PhoneCache, Provenance};
    let dir = flashstack_testkit::scratch_dir("flashstack-phone-cache-spec");
    let _ = std::fs::remove_dir_all(&dir);
    let cache = PhoneCache {
        dir: Some(dir.clone()),
        build_id: "test".into(),
        max_bytes: None,
    };
    let light = AgingSpec::new(0.5, 1, 1, Fidelity::Fast);
    let get =
        |spec: &AgingSpec| cached_aged(&small_stack(), spec, &cache, &mut |_| {}, &mut |_, _| {});
    let (first, built) = get(&light).unwrap();
    assert_eq!(first.header.spec, light, "the phone of the spec asked for");
    let Provenance::Built { saved: Some(path) } = built else {
        panic!("built and saved: {built:?}");
    };
    let (again, loaded) = get(&light).unwrap();
    assert_eq!(loaded, Provenance::Loaded(path.clone()));
    assert_eq!(again.header.spec, light);
    let mut reseeded = light.clone();
    reseeded.seed = 2;
    let (other, provenance) = get(&reseeded).unwrap();
    assert_eq!(other.header.spec, reseeded);
    assert!(
        matches!(&provenance, Provenance::Built { saved: Some(p) } if *p != path),
        "another spec, another phone: {provenance:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
