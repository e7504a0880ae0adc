//! `run --record-block`: the block requests a persona's whole-stack run sends its device,
//! written as a block trace that `run --trace` reads back. The trace holds exactly what
//! the device's host counters count, replays to the same host bytes, and is the same
//! bytes for the same seed.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn flashstack(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flashstack"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn temp(name: &str) -> PathBuf {
    flashstack_testkit::scratch_dir("flashstack-record-block").join(name)
}

const PERSONA: &str = "gmail:send-text";
const STACK: &str = "ufs31";

fn ok(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{stderr}");
    stderr
}

/// Runs the persona recording `trace` in `format`; returns the device's host counters
/// (the run's JSON) and stderr.
fn record(trace: &Path, format: &str, seed: &str) -> (Value, String) {
    let json = trace.with_extension("json");
    let out = flashstack(&[
        "run",
        "--quiet",
        "--fresh",
        "--workload",
        PERSONA,
        "--stack",
        STACK,
        "--seed",
        seed,
        "--record-block",
        trace.to_str().unwrap(),
        "--record-block-format",
        format,
        "--json",
        json.to_str().unwrap(),
    ]);
    let stderr = ok(&out);
    let run: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    (run["device"]["host"].clone(), stderr)
}

/// Replays `trace` on the stack's device from empty; its host counters.
fn replay(trace: &Path, format: &[&str]) -> Value {
    let json = trace.with_extension("replay.json");
    let mut args = vec!["run", "--quiet", "--trace", trace.to_str().unwrap()];
    args.extend_from_slice(format);
    args.extend_from_slice(&[
        "--device",
        STACK,
        "--no-precondition",
        "--json",
        json.to_str().unwrap(),
    ]);
    ok(&flashstack(&args));
    let run: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let run = run.as_array().map_or(run.clone(), |runs| runs[0].clone());
    run["host"].clone()
}

/// Requests and bytes per MQSim type (0 write, 1 read) in the trace's text.
fn mqsim_counts(text: &str) -> [(u64, u64); 2] {
    let mut counts = [(0, 0); 2];
    let mut last_time = 0u64;
    for line in text.lines() {
        let f: Vec<u64> = line.split(' ').map(|w| w.parse().unwrap()).collect();
        assert_eq!(f.len(), 5, "{line}");
        assert!(f[0] >= last_time, "arrival times in order: {line}");
        last_time = f[0];
        counts[f[4] as usize].0 += 1;
        counts[f[4] as usize].1 += f[3] * 512;
    }
    counts
}

fn n(v: &Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or_else(|| panic!("{key} in {v}"))
}

#[test]
fn an_mqsim_trace_holds_the_host_counters_and_replays_to_the_same_bytes() {
    let trace = temp("send-text-mqsim.trace");
    let (host, stderr) = record(&trace, "mqsim", "7");
    let text = std::fs::read_to_string(&trace).unwrap();
    let [(writes, write_bytes), (reads, read_bytes)] = mqsim_counts(&text);
    assert!(writes > 100 && reads > 10, "{writes} writes, {reads} reads");
    assert_eq!(writes, n(&host, "write_requests"));
    assert_eq!(write_bytes, n(&host, "write_bytes"));
    assert_eq!(reads, n(&host, "read_requests"));
    assert_eq!(read_bytes, n(&host, "read_bytes"));
    // The format carries no flush: each is counted on stderr, none lost silently.
    let flushes = n(&host, "flush_requests");
    assert!(flushes > 0);
    assert!(
        stderr.contains(&format!("dropped {flushes} flush")),
        "{stderr}"
    );
    let replayed = replay(&trace, &["--format", "mqsim", "--time-unit", "ns"]);
    for key in [
        "write_requests",
        "write_bytes",
        "read_requests",
        "read_bytes",
    ] {
        assert_eq!(n(&replayed, key), n(&host, key), "{key}");
    }
}

#[test]
fn a_blkparse_trace_carries_flushes_too() {
    let trace = temp("send-text-blkparse.blktrace");
    let (host, stderr) = record(&trace, "blkparse", "7");
    assert!(!stderr.contains("dropped"), "{stderr}");
    let text = std::fs::read_to_string(&trace).unwrap();
    let flushes = text.lines().filter(|l| l.ends_with(" FN [f2fs]")).count() as u64;
    assert_eq!(flushes, n(&host, "flush_requests"));
    let replayed = replay(&trace, &["--format", "blkparse"]);
    for key in [
        "write_requests",
        "write_bytes",
        "read_requests",
        "read_bytes",
        "trim_requests",
        "trim_bytes",
        "flush_requests",
    ] {
        assert_eq!(n(&replayed, key), n(&host, key), "{key}");
    }
}

#[test]
fn the_same_seed_records_the_same_bytes() {
    let (a, b, c) = (temp("a.trace"), temp("b.trace"), temp("c.trace"));
    record(&a, "mqsim", "3");
    record(&b, "mqsim", "3");
    record(&c, "mqsim", "4");
    let (a, b, c) = (
        std::fs::read(a).unwrap(),
        std::fs::read(b).unwrap(),
        std::fs::read(c).unwrap(),
    );
    assert!(!a.is_empty());
    assert_eq!(a, b);
    assert_ne!(a, c, "another seed, another task");
}

/// Recording changes no figure: the run's JSON is the same bytes without --record-block.
#[test]
fn recording_changes_no_figure() {
    let trace = temp("figures.trace");
    record(&trace, "blkparse", "5");
    let recorded = std::fs::read(trace.with_extension("json")).unwrap();
    let json = temp("figures-unrecorded.json");
    ok(&flashstack(&[
        "run",
        "--quiet",
        "--fresh",
        "--workload",
        PERSONA,
        "--stack",
        STACK,
        "--seed",
        "5",
        "--json",
        json.to_str().unwrap(),
    ]));
    assert_eq!(std::fs::read(&json).unwrap(), recorded);
}

#[test]
fn an_unwritable_path_is_a_clear_error() {
    // The persona recorded to `to`, nothing else asked.
    let recording_to = |to: &str| {
        flashstack(&[
            "run",
            "--quiet",
            "--fresh",
            "--workload",
            PERSONA,
            "--stack",
            STACK,
            "--record-block",
            to,
        ])
    };
    let path = temp("no-such-dir").join("x.trace");
    let out = recording_to(path.to_str().unwrap());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        stderr.contains(&format!("cannot create the block trace {}", path.display())),
        "{stderr}"
    );
    // A file that takes no bytes: the run stops at the end, naming it.
    if Path::new("/dev/full").exists() {
        let out = recording_to("/dev/full");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(
            stderr.contains("cannot write the block trace /dev/full"),
            "{stderr}"
        );
    }
    // Block-level runs have no stack to record.
    let out = flashstack(&[
        "run",
        "--quiet",
        "--synthetic",
        "uniform,count=10",
        "--record-block",
        path.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--record-block apply to personas"));
}
