//! App personas on the whole stack (page cache, F2FS, FTL, NAND) with NAND power cuts at
//! random operations: after recovery (FTL scan, F2FS roll-forward) every database passes
//! `PRAGMA integrity_check`, every transaction whose COMMIT returned (synchronous=FULL)
//! is present, and the image passes `fsck.f2fs -f`.

use flashstack_apps::{persona, run_with, RunOptions, RunOutput};
use flashstack_sim::Rng;
use flashstack_sqlvfs::{FileApi, SimDb, SimVfs};
use flashstack_stack::{SharedStack, Stack, StackConfig};

/// A 1 GiB eMMC (the default stack's device with fewer blocks), so images stay small.
fn stack() -> Stack {
    stack_with(false)
}

/// As [`stack`], with F2FS atomic writes offered to SQLite (`fs.atomic_write`) or not.
fn stack_with(atomic_write: bool) -> Stack {
    let mut config = StackConfig::preset("default").unwrap();
    config.device.nand.geometry.blocks_per_plane = 4096;
    config.fs.atomic_write = atomic_write;
    Stack::new(config).unwrap()
}

fn run_on(name: &str, shared: &SharedStack, seed: u64) -> RunOutput {
    let p = persona(name).expect("known persona");
    let options = RunOptions {
        record: false,
        ..RunOptions::default()
    };
    run_with(p.as_ref(), Box::new(shared.clone()), seed, &options)
}

/// Programs and erases: what an armed power cut counts (it tears one of them).
fn nand_writes(stack: &Stack) -> u64 {
    let n = stack.device().expect("powered").nand().counters();
    n.page_programs + n.block_erases
}

/// Reopens every database of the run (SQLite's own recovery runs here) and checks
/// integrity and the witnesses of committed transactions.
fn check_databases(shared: &SharedStack, out: &RunOutput) -> Result<(), String> {
    let vfs = SimVfs::register(Box::new(shared.clone()), 3, 1_000).map_err(|e| e.to_string())?;
    for (path, config) in &out.databases {
        let now = shared.lock().now_ns();
        let (exists, _) = shared
            .clone()
            .exists(now, path)
            .map_err(|e| e.to_string())?;
        if !exists {
            if out.witnesses.iter().any(|w| &w.db_path == path) {
                return Err(format!(
                    "{path} lost although a transaction on it committed"
                ));
            }
            continue;
        }
        let db = SimDb::open(&vfs, path, config).map_err(|e| format!("{path}: {e}"))?;
        let check: String = db
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .map_err(|e| format!("{path}: {e}"))?;
        if check != "ok" {
            return Err(format!("{path}: integrity_check: {check}"));
        }
        for w in out.witnesses.iter().filter(|w| &w.db_path == path) {
            let max: Option<i64> = db
                .query_row(&format!("SELECT max(rowid) FROM {}", w.table), [], |r| {
                    r.get(0)
                })
                .map_err(|e| format!("{path} {}: {e}", w.table))?;
            if max.unwrap_or(0) < w.rowid_min {
                return Err(format!(
                    "{path} {}: max rowid {max:?} < {} committed before the cut",
                    w.table, w.rowid_min
                ));
            }
        }
        db.close().map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn assert_fsck_clean(stack: &mut Stack, what: &str) {
    let name = format!("{}.img", what.replace([':', ' ', '/'], "-"));
    let image = flashstack_testkit::scratch_dir("flashstack-personas").join(name);
    stack.write_image(&image).unwrap();
    flashstack_testkit::assert_fsck_clean(&image, what);
    let _ = std::fs::remove_file(&image);
}

#[test]
fn personas_survive_power_cuts_on_the_whole_stack() {
    let seed: u64 = std::env::var("PROPTEST_RNG_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let mut rng = Rng::new(seed);
    for name in ["gmail:send-text", "telegram:send-image", "wechat:launch"] {
        // A full run gives the number of NAND operations to cut among.
        let probe = SharedStack::new(stack());
        let start_ops = nand_writes(&probe.lock());
        let full = run_on(name, &probe, 7);
        assert!(full.error.is_none(), "{name}: {:?}", full.error);
        check_databases(&probe, &full).unwrap_or_else(|e| panic!("{name} uncut: {e}"));
        let total = nand_writes(&probe.lock()) - start_ops;
        let mut cuts = 0;
        for round in 0..4 {
            let at = 1 + rng.below(total);
            let shared = SharedStack::new(stack());
            shared.lock().arm_power_cut(at).unwrap();
            let out = run_on(name, &shared, 7);
            let powered_off = shared.lock().is_powered_off();
            match (&out.error, powered_off) {
                // The cut fell after the run's last operation: nothing to check.
                (None, false) => continue,
                (Some(e), false) => panic!("{name}: failed without a power cut: {e}"),
                // Torn during the run, or during work the run did not wait for (the app's
                // closing checkpoint): either way recovery must keep every commit.
                (_, true) => {}
            }
            cuts += 1;
            shared
                .lock()
                .recover()
                .unwrap_or_else(|e| panic!("{name} cut at NAND write {at}: recovery: {e}"));
            check_databases(&shared, &out)
                .unwrap_or_else(|e| panic!("{name} cut at NAND write {at} of {total}: {e}"));
            if round == 0 {
                let mut s = shared.lock();
                let now = s.now_ns();
                s.unmount(now).unwrap();
                assert_fsck_clean(&mut s, &format!("{name}-cut-{at}"));
            }
        }
        assert!(cuts >= 3, "{name}: only {cuts} of 4 cuts landed");
    }
}

/// A persona whose databases use a rollback journal (PERSIST), on a stack offering atomic
/// writes: SQLite commits by batch atomic write, and cuts at random NAND operations keep
/// every committed transaction, integrity and a clean fsck.
#[test]
fn a_persona_with_batch_atomic_writes_survives_power_cuts() {
    let name = "gmail:send-text";
    let mut rng = Rng::new(21);
    let probe = SharedStack::new(stack_with(true));
    let start_ops = nand_writes(&probe.lock());
    let full = run_on(name, &probe, 7);
    assert!(full.error.is_none(), "{:?}", full.error);
    let atomic = probe.lock().metrics().unwrap().f2fs.atomic_commits;
    assert!(atomic > 20, "{atomic} atomic commits");
    check_databases(&probe, &full).unwrap_or_else(|e| panic!("uncut: {e}"));
    let total = nand_writes(&probe.lock()) - start_ops;
    let mut cuts = 0;
    for round in 0..4 {
        let at = 1 + rng.below(total);
        let shared = SharedStack::new(stack_with(true));
        shared.lock().arm_power_cut(at).unwrap();
        let out = run_on(name, &shared, 7);
        if !shared.lock().is_powered_off() {
            assert!(out.error.is_none(), "failed without a power cut");
            continue;
        }
        cuts += 1;
        shared.lock().recover().unwrap();
        check_databases(&shared, &out)
            .unwrap_or_else(|e| panic!("cut at NAND write {at} of {total}: {e}"));
        if round < 2 {
            let mut s = shared.lock();
            let now = s.now_ns();
            s.unmount(now).unwrap();
            assert_fsck_clean(&mut s, &format!("atomic-cut-{at}"));
        }
    }
    assert!(cuts >= 3, "only {cuts} of 4 cuts landed");
}

/// Personas on F2FS compression of every file (`compress_extension=*`) with a page cache
/// too small to hold their databases, so SQLite's reads come back through F2FS's
/// readahead over compressed clusters; every read is checked against what was written
/// (`flashstack_sqlvfs::Checked`). A regression: readahead returned a compressed
/// cluster's stored bytes as pages, which aging reported as "database disk image is
/// malformed".
#[test]
fn personas_read_what_they_wrote_under_f2fs_compression_of_every_file() {
    let mut config = StackConfig::preset("default").unwrap();
    config.device.nand.geometry.blocks_per_plane = 4096;
    config.fs.mount.compress = flashstack_f2fs::CompressConfig::all_files();
    config.cache.cache_bytes_max = 256 << 10;
    let shared = SharedStack::new(Stack::new(config).unwrap());
    for (i, name) in ["messenger", "gmail:send-text"].into_iter().enumerate() {
        let p = persona(name).expect("known persona");
        let api = flashstack_sqlvfs::Checked::new(shared.clone());
        let reads = api.reads_checked();
        let options = RunOptions {
            record: false,
            ..RunOptions::default()
        };
        let out = run_with(p.as_ref(), Box::new(api), 5 + i as u64, &options);
        assert!(out.error.is_none(), "{name}: {:?}", out.error);
        let reads = reads.load(std::sync::atomic::Ordering::Relaxed);
        assert!(reads > 100, "{name}: {reads} reads checked");
    }
    let m = shared.lock().with_fs(|fs| fs.compress_metrics()).unwrap();
    assert!(m.clusters_compressed > 100, "{m:?}");
    assert!(
        m.clusters_decompressed > 100,
        "reads reached compressed clusters: {m:?}"
    );
}
