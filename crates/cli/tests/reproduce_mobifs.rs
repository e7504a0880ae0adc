//! The whole-stack report carries the phone's energy per layer (MobiFS's reproduction
//! itself is checked by tests/reproduce_all.rs, through `reproduce all`).

use std::path::PathBuf;
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
fn whole_stack_reports_carry_the_phone_energy_per_layer() {
    let json = flashstack_testkit::scratch_dir("flashstack-mobifs").join("run.json");
    let text = flashstack(&[
        "run",
        "--quiet",
        "--fresh",
        "--workload",
        "bench:sqlite",
        "--compare",
        "default,mobifs",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(text.contains("energy (phone)"), "{text}");
    assert!(
        text.contains("energy (NAND)"),
        "the NAND's own rows stay: {text}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let runs = v.as_array().expect("one entry per stack");
    for run in runs {
        let e = &run["energy"];
        let parts = [
            "screen_mj",
            "cpu_active_mj",
            "cpu_idle_mj",
            "cpu_standby_mj",
            "dram_refresh_mj",
            "dram_extra_pages_mj",
            "device_mj",
        ];
        let sum: f64 = parts.iter().map(|p| number(e, &[p])).sum();
        assert!((sum - number(e, &["total_mj"])).abs() < 1e-6 * sum.max(1.0));
        assert_eq!(
            number(e, &["nand_mj"]),
            number(run, &["device", "energy", "total_mj"])
        );
    }
    // Fewer device bytes under MobiFS means less storage energy on this benchmark.
    assert!(
        number(&runs[1]["energy"], &["device_mj"]) < number(&runs[0]["energy"], &["device_mj"])
    );
}
