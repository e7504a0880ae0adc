//! Determinism, integrity, power cuts, replay and the catalogue.

use std::rc::Rc;

use flashstack_apps::{catalog, persona, replay, run_with, AppError, RunOptions, RunOutput};
use flashstack_sim::Rng;
use flashstack_sqlvfs::{MemFs, MemFsConfig, SimDb, SimVfs};
use flashstack_workload::text::to_text;

fn memfs(seed: u64) -> MemFs {
    MemFs::new(seed, MemFsConfig::default())
}

fn run_on(name: &str, fs: &MemFs, seed: u64, options: &RunOptions) -> RunOutput {
    let p = persona(name).expect("known persona");
    run_with(p.as_ref(), Box::new(fs.clone()), seed, options)
}

/// Every file's name and bytes.
fn snapshot(fs: &MemFs) -> Vec<(String, Vec<u8>)> {
    fs.file_names()
        .into_iter()
        .map(|n| {
            let bytes = fs.contents(&n).unwrap_or_default();
            (n, bytes)
        })
        .collect()
}

fn integrity(db: &SimDb) -> String {
    db.query_row("PRAGMA integrity_check", [], |r| r.get::<_, String>(0))
        .unwrap_or_else(|e| e.to_string())
}

/// Reopens every database of a run on `fs` (after a cut: recovery happens here) and
/// checks integrity and the witnesses of committed transactions.
fn check_recovered(fs: &MemFs, out: &RunOutput, seed: u64) -> Result<(), String> {
    let vfs = SimVfs::register(Box::new(fs.clone()), seed, 1_000).map_err(|e| e.to_string())?;
    for (path, config) in &out.databases {
        if !fs.file_names().contains(path) {
            // Never made durable: only possible if no transaction on it committed.
            if out.witnesses.iter().any(|w| &w.db_path == path) {
                return Err(format!(
                    "{path} lost although a transaction on it committed"
                ));
            }
            continue;
        }
        let db = SimDb::open(&vfs, path, config).map_err(|e| format!("{path}: {e}"))?;
        let check = integrity(&db);
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
                    "{path} {}: max rowid {:?} < {} committed before the cut",
                    w.table, max, w.rowid_min
                ));
            }
        }
        db.close().map_err(|e| e.to_string())?;
    }
    drop(vfs);
    Ok(())
}

#[test]
fn same_seed_gives_identical_files_and_trace_text() {
    for name in ["gmail:send-text", "telegram:receive-voice", "messenger"] {
        let run_once = |seed: u64| {
            let fs = memfs(3);
            let out = run_on(name, &fs, seed, &RunOptions::default());
            assert!(out.error.is_none(), "{name}: {:?}", out.error);
            (
                snapshot(&fs),
                to_text(out.trace.as_ref().expect("recorded")),
            )
        };
        let (files_a, trace_a) = run_once(11);
        let (files_b, trace_b) = run_once(11);
        assert!(files_a
            .iter()
            .any(|(n, _)| n.ends_with(".db") || n.ends_with("_db2")));
        assert_eq!(
            files_a, files_b,
            "{name}: files differ between identical runs"
        );
        assert_eq!(trace_a, trace_b, "{name}: trace text differs");
        assert!(trace_a.lines().count() > 50, "{name}: trace too short");
        let (_, trace_c) = run_once(12);
        assert_ne!(
            trace_a, trace_c,
            "{name}: another seed should change the trace"
        );
    }
}

#[test]
fn every_database_passes_integrity_check_after_a_run() {
    for name in [
        "gmail",
        "wechat:send-text",
        "facebook",
        "camera",
        "google-earth",
    ] {
        let fs = memfs(5);
        let out = run_on(name, &fs, 5, &RunOptions::default());
        assert!(out.error.is_none(), "{name}: {:?}", out.error);
        assert!(!out.databases.is_empty());
        check_recovered(&fs, &out, 5).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(out.report.ops.iter().all(|o| o.latency.count > 0));
    }
}

#[test]
fn power_cuts_keep_every_committed_transaction() {
    let seed: u64 = std::env::var("PROPTEST_RNG_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let mut rng = Rng::new(seed);
    let quiet = RunOptions {
        record: false,
        ..RunOptions::default()
    };
    for name in [
        "gmail:send-text",
        "telegram:send-image",
        "messenger",
        "wechat:launch",
    ] {
        let probe = memfs(1);
        let full = run_on(name, &probe, 7, &quiet);
        assert!(full.error.is_none(), "{name}: {:?}", full.error);
        let calls = probe.log_len() as u64;
        let mut lost_power = 0;
        for _ in 0..6 {
            let cut = 1 + rng.below(calls);
            let fs = memfs(rng.next_u64());
            fs.arm_power_cut(cut as usize);
            let out = run_on(name, &fs, 7, &quiet);
            let Some(error) = &out.error else {
                continue;
            };
            assert!(
                error.is_power_loss(),
                "{name} cut at {cut}: unexpected {error}"
            );
            lost_power += 1;
            fs.power_on();
            check_recovered(&fs, &out, 7)
                .unwrap_or_else(|e| panic!("{name} cut at call {cut} of {calls}: {e}"));
        }
        assert!(lost_power >= 4, "{name}: only {lost_power} cuts landed");
    }
}

#[test]
fn replayed_trace_gives_the_same_files() {
    for name in ["gmail:send-image", "facebook"] {
        // The original: setup, then the recorded task.
        let original = memfs(9);
        let out = run_on(name, &original, 4, &RunOptions::default());
        assert!(out.error.is_none(), "{name}: {:?}", out.error);
        let trace = out.trace.expect("recorded");
        // The same setup (deterministic) on a second file system, then the trace.
        let copy = memfs(9);
        let p = persona(name).expect("known");
        let setup = run_with(
            p.as_ref(),
            Box::new(copy.clone()),
            4,
            &RunOptions {
                record: false,
                setup_only: true,
                ..RunOptions::default()
            },
        );
        assert!(setup.error.is_none(), "{name}: {:?}", setup.error);
        let mut api = copy.clone();
        let r = replay(&trace, &mut api, 4).expect("replays");
        assert_eq!(r.ops as usize, trace.ops.len());
        let (a, b) = (snapshot(&original), snapshot(&copy));
        assert_eq!(a.len(), b.len(), "{name}: file lists differ");
        for ((na, ba), (nb, bb)) in a.iter().zip(&b) {
            assert_eq!(na, nb);
            assert!(ba == bb, "{name}: {na} differs after replay");
        }
    }
}

#[test]
fn replay_errors_name_the_operation() {
    let trace = flashstack_workload::text::parse_str(
        "#flashstack-filetrace 1\n0 1 open 3 /a rdwr|creat\n10 1 link /a /b\n",
        "t",
    )
    .expect("parses");
    // Counted by kind and skipped, by default.
    let mut fs = memfs(1);
    let report = replay(&trace, &mut fs, 1).expect("carries on");
    assert_eq!(report.unhonoured.get("hard link"), Some(&1));
    assert_eq!((report.ops, report.skipped), (2, 1));
    // An error naming the operation with `strict`.
    let mut fs = memfs(1);
    let strict = flashstack_apps::ReplayOptions {
        start_ns: 0,
        strict: true,
    };
    let e = flashstack_apps::replay_with(&trace, &mut fs, 1, &strict, &mut |now| Ok(now))
        .expect_err("links are not in the file API");
    let text = e.to_string();
    assert!(
        text.contains("operation 2") && text.contains("link") && text.contains("--strict"),
        "{text}"
    );
}

#[test]
fn catalogue_names_every_persona_and_unknown_names_list_them() {
    let c = catalog();
    for name in [
        "gmail:send-image",
        "telegram:receive-voice",
        "gmail",
        "facebook",
        "mix",
        "zoom:attend-5min",
    ] {
        assert!(c.iter().any(|e| e.name == name), "{name} missing");
    }
    assert!(c.len() >= 24 + 7 + 7);
    assert!(c
        .iter()
        .all(|e| !e.description.is_empty() && !e.calibration.is_empty()));
    let err = persona("gmail:fly").err().expect("unknown");
    match &err {
        AppError::UnknownPersona { known, .. } => assert!(known.contains("gmail:send-image")),
        other => panic!("{other}"),
    }
}

#[test]
fn report_has_latency_percentiles_per_operation() {
    let fs = memfs(2);
    let out = run_on("spotify:launch", &fs, 2, &RunOptions::default());
    assert!(out.error.is_none(), "{:?}", out.error);
    let r = &out.report;
    let launch = r
        .ops
        .iter()
        .find(|o| o.name == "launch app")
        .expect("launch op");
    assert!(launch.latency.count >= 1);
    assert!(launch.latency.latency_ns_p50 > 0);
    assert!(launch.latency.latency_ns_max >= launch.latency.latency_ns_p99);
    let json = serde_json::to_string(r).expect("serializes");
    assert!(json.contains("latency_ns_p99"));
    assert!(r.trace.as_ref().is_some_and(|t| t.write_bytes > 0));
    let _ = Rc::new(());
}

/// A recording analysed as it is made, without keeping the trace, reports what the kept
/// trace's analysis reports (twitter's task: captured bytes, updates, syncs, unlinks).
#[test]
fn a_recording_not_kept_reports_the_summary_of_the_kept_trace() {
    let keep = RunOptions::default();
    let mut lean = RunOptions::default();
    lean.recorder.keep_ops = false;
    let kept = run_on("twitter", &memfs(5), 5, &keep);
    let not_kept = run_on("twitter", &memfs(5), 5, &lean);
    let trace = kept.trace.as_ref().expect("kept");
    let summary = flashstack_workload::analyze(trace).expect("analysable");
    assert!(
        summary.ud_measured_updates > 0 && summary.fsync_count > 0,
        "{summary:?}"
    );
    assert_eq!(kept.report.trace.as_ref(), Some(&summary));
    assert_eq!(not_kept.report.trace.as_ref(), Some(&summary));
    assert!(not_kept.trace.is_none(), "no trace kept");
}
