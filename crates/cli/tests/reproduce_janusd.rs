//! `flashstack reproduce janusd --quick` (the smoke test of the Janusd reproduction): it
//! runs, its JSON has every figure the reproduction promises (per mode DoF, launch time,
//! scenario throughput, data copied, NAND programs and erases, life share; the recurrence
//! runs; the paper's figures beside ours), and janusdL copied no user data while the
//! copying defragmenter did.

use std::process::Command;

use serde_json::Value;

#[test]
fn reproduce_janusd_quick_reports_every_figure_and_janusd_l_copies_nothing() {
    let dir = flashstack_testkit::scratch_dir("flashstack-janusd-repro");
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("janusd.json");
    let html = dir.join("janusd.html");
    let out = Command::new(env!("CARGO_BIN_EXE_flashstack"))
        .args(["reproduce", "janusd", "--quick", "--json"])
        .arg(&json)
        .arg("--html")
        .arg(&html)
        .output()
        .expect("the binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("the seed's figures beside ours"),
        "{stdout}"
    );
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    paper_figures(&html);
    assert_eq!(v["quick"], true);
    // Launches read page by page through the page cache's readahead (docs/cache.md).
    assert_eq!(v["reader"], "pages");
    let modes = v["modes"].as_array().unwrap();
    let names: Vec<&str> = modes.iter().map(|m| m["mode"].as_str().unwrap()).collect();
    assert_eq!(names, ["none", "copy", "P", "L", "janusd"]);
    let mode = |n: &str| modes.iter().find(|m| m["mode"] == n).unwrap();
    for m in modes {
        for field in [
            "dof_mean",
            "block_ios",
            "launch_ms_mean",
            "scenario_mib_per_s_mean",
        ] {
            assert!(m[field].is_number(), "{field} in {m}");
        }
        let apps = m["apps"].as_array().unwrap();
        assert!(apps.len() >= 5, "the seed's scenarios: {apps:?}");
        for a in apps {
            assert!(a["launch_ms"].as_f64().unwrap() > 0.0, "{a}");
            assert!(a["launch"]["requests"].as_u64().unwrap() > 0, "{a}");
            assert!(a["dof_mean"].is_number(), "{a}");
            let launch = &a["launch"];
            assert!(launch["readahead_pages"].as_u64().unwrap() > 0, "{a}");
            assert!(
                launch["readahead_hits"].as_u64() <= launch["readahead_pages"].as_u64(),
                "{a}"
            );
        }
    }
    for n in ["copy", "P", "L", "janusd"] {
        let c = &mode(n)["cost"];
        for field in [
            "bytes_copied",
            "blocks_remapped",
            "nand_page_programs",
            "nand_erases",
            "life_share_per_year",
        ] {
            assert!(c[field].is_number(), "{field} of {n}: {c}");
        }
    }
    let l = &mode("L")["cost"];
    assert_eq!(l["bytes_copied"], 0, "janusdL copied user data: {l}");
    assert_eq!(l["files_copied"], 0, "{l}");
    assert!(l["blocks_remapped"].as_u64().unwrap() > 0, "{l}");
    let copy = &mode("copy")["cost"];
    assert!(copy["bytes_copied"].as_u64().unwrap() > 0, "{copy}");
    // Mapping records only: far fewer NAND programs than the copies'.
    assert!(
        l["nand_page_programs"].as_u64().unwrap() * 4
            < copy["nand_page_programs"].as_u64().unwrap(),
        "{l} vs {copy}"
    );
    assert!(mode("L")["dof_mean"].as_f64() < mode("none")["dof_mean"].as_f64());
    let rec = v["recurrence"].as_array().unwrap();
    assert_eq!(rec.len(), 3);
    assert!(
        rec.iter().any(|r| r["passes"].as_u64().unwrap() >= 2),
        "{rec:?}"
    );
    let paper = v["paper"].as_array().unwrap();
    assert!(paper.len() >= 4);
    assert!(paper.iter().any(|r| r["paper"] == "-32 %"));
    assert!(paper.iter().any(|r| r["paper"] == "-99.99 %"));
}

/// An unknown reader is refused before any work, naming the known ones.
#[test]
fn reproduce_janusd_refuses_an_unknown_reader() {
    let out = Command::new(env!("CARGO_BIN_EXE_flashstack"))
        .args(["reproduce", "janusd", "--quick", "--reader", "mmap"])
        .output()
        .expect("the binary runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--reader mmap: unknown (known: pages, pages-no-readahead, windows)"),
        "{stderr}"
    );
}

/// The HTML report redraws the seed's figures: launch time and data copied beside the
/// seed's averages, DoF ours only (the seed states none); nothing from the network.
fn paper_figures(html: &std::path::Path) {
    let text = std::fs::read_to_string(html).unwrap();
    let _ = std::fs::remove_file(html);
    flashstack_testkit::report::assert_offline(&text);
    let figures = flashstack_testkit::report::paper_figures(&text);
    let names: Vec<&str> = figures.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "janusd: app launch (slides' conclusion)",
            "janusd: data copies (slides' conclusion)",
            "janusd: DoF (degree of fragmentation)"
        ]
    );
    // Every defragmenter's launch beside the seed's −32%; DoF has none of the seed's.
    assert_eq!((figures[0].ours, figures[0].paper), (4, 1));
    assert!(figures[2].paper == 0 && figures[2].paper_states_none);
}

/// An unknown `--mmap` or `--code-order` is refused naming the option and the known values.
#[test]
fn reproduce_janusd_refuses_an_unknown_mmap_policy_or_code_order() {
    for (flag, value, known) in [
        ("--mmap", "sideways", "off, read-around"),
        ("--code-order", "backwards", "sequential, scattered"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_flashstack"))
            .args(["reproduce", "janusd", "--quick", flag, value])
            .output()
            .expect("the binary runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(
            stderr.contains(&format!("{flag} {value}: unknown (known: {known})")),
            "{stderr}"
        );
    }
}

#[test]
fn reproduce_janusd_refuses_a_stack_it_cannot_build() {
    for (spec, names) in [
        ("ufs31+nand.die_rules=sideways", "nand.die_rules"),
        ("no-such-stack", "no-such-stack"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_flashstack"))
            .args(["reproduce", "janusd", "--quick", "--stack", spec])
            .output()
            .expect("the binary runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{spec}: {stderr}");
        assert!(
            stderr.contains("--stack") && stderr.contains(names),
            "{spec}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}
