//! `flashstack reproduce medfs --quick --json F`: every figure is printed and in the JSON,
//! every scheme ran every workload, MedFS and DCI store deltas on every workload (each
//! updates its files: neither is silently off), DCM over them, and DCI writes less than
//! stock F2FS.

use std::path::PathBuf;
use std::process::Command;

fn number(v: &serde_json::Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is not a number: {v}"))
}

#[test]
fn quick_reproduction_has_every_figure_and_medfs_stores_deltas() {
    let json = flashstack_testkit::scratch_dir("flashstack-medfs").join("medfs.json");
    let html = json.with_extension("html");
    let out = Command::new(env!("CARGO_BIN_EXE_flashstack"))
        .args(["reproduce", "medfs", "--quick", "--json"])
        .arg(&json)
        .arg("--html")
        .arg(&html)
        .env(
            "FLASHSTACK_CACHE_DIR",
            PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("phones"),
        )
        .output()
        .expect("the binary runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for figure in [
        "write traffic",
        "lifespan, 1/(1 - reduction)",
        "lifespan, LIFETIME formula",
        "write I/O latency",
        "read I/O latency",
        "user-perceived latency",
        "app launch time",
        "energy",
        "ablation: write traffic, fpc",
        "page-cache hit rate",
        "delta sizes",
    ] {
        assert!(text.contains(figure), "no '{figure}' in:\n{text}");
    }
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let apps = v["apps"].as_array().unwrap().len();
    let runs = v["runs"].as_array().unwrap();
    let schemes = v["schemes"].as_array().unwrap();
    assert_eq!(runs.len(), apps * schemes.len());
    for run in runs {
        let stored = number(run, "deltas_inline") + number(run, "deltas_dcm");
        match run["scheme"].as_str().unwrap() {
            "f2fs-nodc" | "fpc" => assert_eq!(stored, 0.0, "{run}"),
            // Every quick workload updates pages it wrote before (DCM alone may refuse
            // all of a short task's deltas: HCluster needs write-hot files).
            "medfs" | "dci" => assert!(stored > 0.0, "no delta stored: {run}"),
            _ => {}
        }
    }
    let medfs: f64 = runs
        .iter()
        .filter(|r| r["scheme"] == "medfs")
        .map(|r| number(r, "deltas_inline") + number(r, "deltas_dcm"))
        .sum();
    assert!(medfs > 1000.0, "MedFS stored only {medfs} deltas");
    let dcm: f64 = runs
        .iter()
        .filter(|r| r["scheme"] == "dcm")
        .map(|r| number(r, "deltas_dcm"))
        .sum();
    assert!(dcm > 1000.0, "DCM stored only {dcm} deltas");
    let dci = schemes.iter().find(|s| s["scheme"] == "dci").unwrap();
    assert!(number(dci, "device_bytes_change") < 0.0, "{dci}");
    assert!(v["headlines"].as_array().unwrap().len() >= 19);
    paper_figures(&html);
}

/// The HTML report redraws the paper's figures, each with ours and the paper's values:
/// per-app write traffic (Telegram's bar, the mean), the ablation's write reduction and hit
/// rate per scheme, per-app I/O latency; nothing from the network.
fn paper_figures(html: &std::path::Path) {
    let text = std::fs::read_to_string(html).unwrap();
    let _ = std::fs::remove_file(html);
    flashstack_testkit::report::assert_offline(&text);
    let figures = flashstack_testkit::report::paper_figures(&text);
    let found: Vec<(usize, usize)> = figures.iter().map(|f| (f.ours, f.paper)).collect();
    // Five schemes beside Telegram's bar and the mean; one series beside five and three
    // schemes; write and read beside Telegram's two bars and two means.
    assert_eq!(found, [(5, 2), (1, 5), (1, 3), (2, 4)], "{figures:?}");
}

#[test]
fn reproduce_medfs_refuses_a_stack_it_cannot_build() {
    let out = Command::new(env!("CARGO_BIN_EXE_flashstack"))
        .args([
            "reproduce",
            "medfs",
            "--quick",
            "--stack",
            "ufs31+nand.die_rules=sideways",
        ])
        .output()
        .expect("the binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("--stack") && stderr.contains("nand.die_rules"),
        "{stderr}"
    );
}
