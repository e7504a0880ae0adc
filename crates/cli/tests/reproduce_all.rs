//! `flashstack reproduce all --quick --only mobifs,composed`: MobiFS's reproduction with
//! every figure in the JSON (MobiFS flushes less than the baseline, the staleness stays
//! within the bound), the techniques alone and composed on one stack with the interaction
//! table, the summary of the paper's figures beside ours, and the HTML report of it all,
//! opened in headless Chromium (`flashstack_testkit::browser`).

use std::path::{Path, PathBuf};
use std::process::Command;

fn flashstack(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_flashstack"))
        .args(args)
        .env(
            "FLASHSTACK_CACHE_DIR",
            PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("phones"),
        )
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

fn number(v: &serde_json::Value, path: &[&str]) -> f64 {
    let mut at = v;
    for key in path {
        at = &at[*key];
    }
    at.as_f64()
        .unwrap_or_else(|| panic!("{path:?} is not a number: {at}"))
}

#[test]
fn quick_mobifs_and_composed_stacks_with_summary_json_and_html() {
    let dir = flashstack_testkit::scratch_dir("flashstack-reproduce-all");
    let (json, html) = (dir.join("all.json"), dir.join("all.html"));
    let text = flashstack(&[
        "reproduce",
        "all",
        "--quick",
        "--only",
        "mobifs,composed",
        "--json",
        json.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    for figure in [
        "flushed data",
        "device energy",
        "FS write",
        "DB transactions",
        "user-operation delay",
        "staleness",
        "the techniques alone and composed",
        "interaction",
        "summary: the papers' figures and ours",
    ] {
        assert!(text.contains(figure), "no '{figure}' in:\n{text}");
    }
    let all: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    mobifs_figures(&all["reproductions"]["mobifs"]);
    composed(&all["composed"]);
    report(&html);
}

fn mobifs_figures(v: &serde_json::Value) {
    let flushed = v["flushed"].as_array().expect("flushed per app");
    assert_eq!(flushed.len(), 10);
    let base: f64 = flushed.iter().map(|f| number(f, &["baseline_bytes"])).sum();
    let mobifs: f64 = flushed.iter().map(|f| number(f, &["mobifs_bytes"])).sum();
    assert!(
        mobifs < base,
        "MobiFS flushed {mobifs} B, baseline {base} B"
    );
    assert!(number(v, &["flushed_change_geomean"]) < 0.0);
    assert_eq!(v["device_energy"].as_array().unwrap().len(), 3);
    assert!(number(v, &["fs_write", "ratio"]) > 0.0);
    assert!(number(v, &["db", "ratio"]) > 0.0);
    assert!(number(v, &["user_op_delay_change"]).is_finite());
    assert_eq!(v["headlines"].as_array().unwrap().len(), 5);
    let stale = &v["staleness"][1];
    assert_eq!(stale["policy"], "mobifs");
    assert!(number(stale, &["max_s"]) <= number(stale, &["bound_s"]));
    assert!(number(stale, &["p99_s"]) <= number(stale, &["max_s"]) + 0.001);
    assert_eq!(number(stale, &["bound_overruns"]), 0.0);
}

/// Five columns and FACS beside them, each technique really on (a composed stack that silently dropped one
/// would write as much as that technique's absence does).
fn composed(runs: &serde_json::Value) {
    let runs = runs.as_array().expect("one entry per stack");
    let names: Vec<&str> = runs.iter().map(|r| r["stack"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["stock", "MedFS", "MobiFS", "LDC", "composed", "FACS"]
    );
    let host = |i: usize| number(&runs[i]["report"], &["device", "host", "write_bytes"]);
    let programs = |i: usize| number(&runs[i]["report"], &["device", "nand", "page_programs"]);
    assert!(host(1) < host(0), "MedFS writes less to the device");
    assert!(host(2) < host(0), "MobiFS writes less to the device");
    assert!(programs(3) < programs(0), "LDC programs fewer pages");
    for i in 1..4 {
        assert!(
            programs(4) < programs(i),
            "composed programs fewer than column {i}"
        );
    }
    // COCO's FACS beside them: the device obeys the status bit, and F2FS compresses the
    // files FACS gives the host, whose fsyncs each need a checkpoint (as the kernel's do).
    let facs = &runs[5]["report"];
    assert_eq!(facs["device"]["compression"]["policy"], "CSD-hinted");
    let checkpoints = |r: &serde_json::Value| number(r, &["fs", "checkpoints"]);
    assert!(
        checkpoints(facs) > 2.0 * checkpoints(&runs[0]["report"]),
        "F2FSC's fsyncs checkpoint"
    );
}

fn report(html: &Path) {
    let text = std::fs::read_to_string(html).unwrap();
    assert!(text.len() < 2_000_000, "{} bytes", text.len());
    assert!(text.contains("<h2 id=\"summary\">"));
    assert!(text.contains("<h2 id=\"mobifs\">MobiFS (USENIX ATC &#39;15)</h2>"));
    assert!(text.contains("<h2 id=\"runs\">"));
    assert_eq!(
        text.matches("<td>docs/mobifs-reproduction.md</td>").count(),
        5
    );
    // MobiFS's figures redrawn, ours beside the slides' values: flushed data and energy
    // (MobiFS and its idle-time variant beside the mean), throughput, delay.
    flashstack_testkit::report::assert_offline(&text);
    let paper = flashstack_testkit::report::paper_figures(&text);
    let found: Vec<(usize, usize)> = paper.iter().map(|f| (f.ours, f.paper)).collect();
    assert_eq!(found, [(2, 1), (2, 1), (1, 2), (1, 1)], "{paper:?}");
    let figures = text.matches("<figure data-plot=").count();
    assert!(figures >= 16, "{figures} plots");
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("reproduce-all.png");
    flashstack_testkit::browser::check_plots_render(html, figures, &shot);
}
