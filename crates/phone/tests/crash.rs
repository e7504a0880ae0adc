//! Power cuts while a phone ages: after recovery (FTL scan, F2FS roll-forward) every file
//! whose last change was a whole, fsync'd write (packages, pictures, downloads) reads back
//! exactly, the personas' databases pass `integrity_check`, and fsck.f2fs is clean.

mod common;

use common::{assert_fsck_clean, check_persona_databases, small_stack};
use flashstack_phone::{Aging, AgingSpec, Fidelity, PhoneError};
use flashstack_sim::Rng;
use flashstack_sqlvfs::{FileApi, OpenFlags};
use flashstack_stack::SharedStack;

/// NAND programs and erases so far (what an armed cut counts).
fn nand_writes(shared: &SharedStack) -> u64 {
    let s = shared.lock();
    let n = s.device().expect("powered").nand().counters();
    n.page_programs + n.block_erases
}

fn read_all(shared: &SharedStack, path: &str) -> Option<Vec<u8>> {
    let mut api = shared.clone();
    let now = shared.lock().now_ns();
    let (id, t) = api.open(now, path, OpenFlags::default()).ok()?;
    let (size, t) = api.size(t, id).unwrap();
    let mut data = vec![0u8; size as usize];
    let (n, t) = api.read_at(t, id, 0, &mut data).unwrap();
    assert_eq!(n as u64, size, "{path}: short read");
    api.close(t, id).unwrap();
    Some(data)
}

#[test]
fn a_power_cut_while_aging_keeps_every_fsynced_file() {
    let spec = AgingSpec::new(0.7, 4, 3, Fidelity::Fast);
    let config = small_stack();
    // A full run counts the NAND writes to cut among.
    let mut probe = Aging::new(&config, &spec).unwrap();
    let start = nand_writes(&probe.stack());
    probe.run(&mut |_, _| {}).unwrap();
    let total = nand_writes(&probe.stack()) - start;
    let mut rng = Rng::new(
        std::env::var("PROPTEST_RNG_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(13),
    );
    let mut checked_files = 0;
    for round in 0..3 {
        let at = 1 + rng.below(total);
        let mut aging = Aging::new(&config, &spec).unwrap();
        let shared = aging.stack();
        shared.lock().arm_power_cut(at).unwrap();
        let result = aging.run(&mut |_, _| {});
        assert!(
            shared.lock().is_powered_off(),
            "cut at {at} of {total} did not land"
        );
        match result {
            Err(PhoneError::File { .. } | PhoneError::App { .. } | PhoneError::Stack(_)) => {}
            other => panic!("cut at {at}: aging ended with {:?}", other.err()),
        }
        let durable = aging.durable_files();
        shared
            .lock()
            .recover()
            .unwrap_or_else(|e| panic!("cut at NAND write {at} of {total}: recovery: {e}"));
        for (path, expected) in &durable {
            let Some(found) = read_all(&shared, path) else {
                panic!("cut at {at} of {total}: {path} (fsync'd) is gone");
            };
            assert!(
                found == *expected,
                "cut at {at} of {total}: {path}: {} bytes read, {} fsync'd, contents differ",
                found.len(),
                expected.len()
            );
            checked_files += 1;
        }
        // The personas' apps are set up on the first day; a cut before that leaves some
        // of their databases unborn.
        if durable.iter().any(|(p, _)| p.contains("/DCIM/")) {
            check_persona_databases(&shared);
        }
        if round == 0 {
            assert_fsck_clean(&mut shared.lock(), &format!("aging-cut-{at}"));
        }
    }
    println!("power cuts while aging: 3 cut points, {checked_files} fsync'd files checked");
    assert!(checked_files > 20, "only {checked_files} files checked");
}
