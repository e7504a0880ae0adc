//! `flashstack sweep SPEC.toml`: a point's row holds exactly the figures `run --json`
//! gives for the same arguments, the table is the same for any `--jobs`, a failed point
//! is a row with its error, and a bad grid fails before any point runs, naming the file
//! and the key.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn flashstack(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flashstack"))
        .args(args)
        .env(
            "FLASHSTACK_CACHE_DIR",
            PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("phones"),
        )
        .output()
        .expect("the binary runs")
}

fn dir() -> PathBuf {
    flashstack_testkit::scratch_dir("flashstack-sweep")
}

/// Tiny points: a launch on a small device, from a factory-new phone (about 0.1 s each).
const SMALL: &str = "\"device.nand.geometry.blocks_per_plane\" = 512";

fn write_grid(name: &str, text: &str) -> PathBuf {
    let path = dir().join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn sweep_json(grid: &Path, extra: &[&str]) -> (Output, Value) {
    let json = grid.with_extension(format!("{}.json", extra.len()));
    let _ = std::fs::remove_file(&json);
    let mut args = vec![
        "sweep",
        grid.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend(extra);
    let out = flashstack(&args);
    let table = std::fs::read_to_string(&json)
        .map(|t| serde_json::from_str(&t).unwrap())
        .unwrap_or(Value::Null);
    (out, table)
}

fn column(table: &Value, name: &str) -> usize {
    table["columns"]
        .as_array()
        .unwrap()
        .iter()
        .position(|c| c == name)
        .unwrap_or_else(|| panic!("no column {name}"))
}

#[test]
fn a_point_is_the_run_of_the_same_arguments_and_jobs_change_nothing() {
    let grid = write_grid(
        "eight.toml",
        &format!(
            "workload = [\"gmail:launch\", \"polish:launch\"]\nstack = [\"default\", \"mobifs\"]\n\
             seed = [1, 7]\nstart = \"fresh\"\n[overrides]\n{SMALL}\n"
        ),
    );
    let (out, table) = sweep_json(&grid, &["--jobs", "1", "-q"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = table["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 8);
    let (out2, table2) = sweep_json(&grid, &["--jobs", "3", "-q", "--retries", "0"]);
    assert!(out2.status.success());
    assert_eq!(table, table2, "--jobs changed the table");

    // Row 6 (polish:launch, mobifs, seed 7) against `run` with the same arguments.
    let row = &rows[7];
    assert_eq!(row[column(&table, "workload")], "polish:launch");
    assert_eq!(row[column(&table, "stack")], "mobifs");
    assert_eq!(row[column(&table, "seed")], 7);
    assert_eq!(
        row[column(&table, "device.nand.geometry.blocks_per_plane")],
        512
    );
    assert!(row[column(&table, "error")].is_null());
    let run_json = dir().join("run.json");
    let out = flashstack(&[
        "run",
        "-q",
        "--workload",
        "polish:launch",
        "--stack",
        "mobifs+device.nand.geometry.blocks_per_plane=512",
        "--seed",
        "7",
        "--fresh",
        "--json",
        run_json.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&run_json).unwrap()).unwrap();
    let figures = flashstack_report::flatten_json_values(&report);
    assert!(figures.len() > 100, "{}", figures.len());
    for (key, value) in figures {
        let name = match key.as_str() {
            "stack" | "workload" | "start" => format!("run.{key}"),
            _ => key.clone(),
        };
        assert_eq!(row[column(&table, &name)], value, "{key}");
    }
    // Seeds matter: the same point with another seed differs somewhere.
    let figures_of = |r: &Value| r.as_array().unwrap()[6..].to_vec();
    assert_ne!(figures_of(&rows[6]), figures_of(&rows[7]));
}

/// A block-level grid (`device` in place of `stack`): the LDC paper's PM and LDC
/// policies × a built-in LDC workload and a synthetic one, contents stored; each row is
/// `run --device D+k=v --workload ldc:APP | --synthetic SPEC --contents --seed N --json`
/// figure for figure.
#[test]
fn a_block_level_point_is_the_run_of_the_same_arguments() {
    let grid = write_grid(
        "block.toml",
        "workload = [\"ldc:tw\", \"synthetic:uniform,count=3000,read=0.3\"]\n\
         device = [\"ldc-emmc-pm\", \"ldc-emmc-ldc\"]\nseed = [1, 2]\ncontents = true\n\
         [overrides]\n\"nand.geometry.blocks_per_plane\" = 512\n",
    );
    let (out, table) = sweep_json(&grid, &["--jobs", "2"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("ldc:tw on ldc-emmc-ldc+nand.geometry.blocks_per_plane=512 seed 2: ok"),
        "{stderr}"
    );
    let columns: Vec<&str> = table["columns"].as_array().unwrap()[..6]
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(
        columns,
        [
            "workload",
            "device",
            "nand.geometry.blocks_per_plane",
            "contents",
            "seed",
            "error"
        ]
    );
    let rows = table["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 8);
    // The policies differ: LDC compresses, PM does not (ldc:tw, seed 1).
    let compressed = column(&table, "compression.pages_compressed_host");
    assert_eq!(rows[0][compressed], 0);
    assert!(
        rows[2][compressed].as_u64().unwrap() > 0,
        "{}",
        rows[2][compressed]
    );
    for (row, workload, flag, device, seed) in [
        (3, "ldc:tw", "--workload", "ldc-emmc-ldc", "2"),
        (
            5,
            "uniform,count=3000,read=0.3",
            "--synthetic",
            "ldc-emmc-pm",
            "2",
        ),
    ] {
        let row = &rows[row];
        assert!(row[column(&table, "error")].is_null());
        assert_eq!(row[column(&table, "device")], device);
        let run_json = dir().join(format!("block-{}-{seed}.json", &flag[2..]));
        let spec = format!("{device}+nand.geometry.blocks_per_plane=512");
        let out = flashstack(&[
            "run",
            "-q",
            "--device",
            &spec,
            flag,
            workload,
            "--contents",
            "--seed",
            seed,
            "--json",
            run_json.to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = std::fs::read_to_string(&run_json).unwrap();
        let report: Value = serde_json::from_str(&text).unwrap();
        let figures = flashstack_report::flatten_json_values(&report);
        assert!(figures.len() > 50, "{}", figures.len());
        for (key, value) in figures {
            let name = match key.as_str() {
                "device" | "workload" | "seed" | "contents" => format!("run.{key}"),
                _ => key.clone(),
            };
            assert_eq!(
                row[column(&table, &name)],
                value,
                "{workload} {device}: {key}"
            );
        }
    }
}

#[test]
fn a_failed_point_is_a_row_with_its_error_and_the_sweep_goes_on() {
    // 64 blocks per plane resolve but are too small for mkfs: the point fails when run.
    let grid = write_grid(
        "fails.toml",
        "workload = \"gmail:launch\"\nstart = \"fresh\"\n[overrides]\n\
         \"device.nand.geometry.blocks_per_plane\" = [64, 512]\n",
    );
    let (out, table) = sweep_json(&grid, &["-q", "--retries", "1"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("1 of 2 points failed"), "{stderr}");
    let rows = table["rows"].as_array().unwrap();
    let error = column(&table, "error");
    let message = rows[0][error].as_str().unwrap();
    assert!(message.contains("too small for F2FS"), "{message}");
    assert!(rows[1][error].is_null());
    assert!(
        rows[1][column(&table, "device.nand.page_programs")]
            .as_u64()
            .unwrap()
            > 0
    );
}

/// Each bad grid is refused before any point runs (no progress line, no table written)
/// with the file and the key in the message.
#[test]
fn a_bad_grid_fails_before_any_point_runs_naming_file_and_key() {
    let cases = [
        ("workloads = \"gmail:launch\"\n", "workloads: unknown parameter"),
        ("workload = \"gmail:nope\"\n", "workload = \"gmail:nope\": --workload"),
        ("workload = \"zoom\"\nstack = \"nostack\"\n", "stack = \"nostack\": unknown device 'nostack'"),
        ("workload = \"zoom\"\nseed = [1, -2]\n", "seed: -2: must be a non-negative integer"),
        ("workload = \"zoom\"\nstart = \"stale\"\n", "start = \"stale\": neither"),
        ("workload = \"zoom\"\nstack = []\n", "stack: an empty list"),
        (
            "workload = \"zoom\"\n[overrides]\n\"cache.nonsense\" = 1\n",
            "overrides.\"cache.nonsense\" = \"1\": override 'cache.nonsense=1': no field 'cache.nonsense'",
        ),
        (
            "workload = \"zoom\"\n[overrides]\n\"device.ftl.gc.policy\" = [\"greedy\", \"banana\"]\n",
            "overrides.\"device.ftl.gc.policy\" = \"banana\": override 'device.ftl.gc.policy=banana': field 'device.ftl.gc.policy': unknown variant `banana`",
        ),
        ("workload = [\"zoom\"\n", "(file):"),
        (
            "workload = \"ldc:fb\"\ndevice = \"ldc-emmc\"\nstack = \"default\"\n",
            "device: a grid has stack (whole-stack points) or device (block-level points), not both",
        ),
        (
            "workload = \"ldc:fb\"\ndevice = \"ldc-emmc\"\nstart = \"fresh\"\n",
            "start: block-level points (device) have no start",
        ),
        (
            "workload = \"gmail:launch\"\ndevice = \"ldc-emmc\"\n",
            "workload = \"gmail:launch\": unknown workload 'gmail:launch'",
        ),
        (
            "workload = \"synthetic:uniform,count=-1\"\ndevice = \"ldc-emmc\"\n",
            "workload = \"synthetic:uniform,count=-1\": synthetic:",
        ),
        (
            "workload = \"ldc:fb\"\ndevice = [\"ldc-emmc-pm\", \"ldc-emmc-ldc\"]\n",
            "point ldc-emmc-ldc: the device compresses pages, which needs their contents: add contents = true",
        ),
        (
            "workload = \"zoom\"\ncontents = true\n",
            "contents: applies to block-level points",
        ),
        (
            "workload = \"ldc:fb\"\ndevice = \"ldc-emmc\"\ncontents = \"yes\"\n",
            "contents: \"yes\": must be true or false",
        ),
        (
            "workload = \"ldc:fb\"\ndevice = [\"ldc-emmc\", \"nodevice\"]\n",
            "device = \"nodevice\": unknown device 'nodevice'",
        ),
        (
            "workload = \"ldc:fb\"\ndevice = \"ldc-emmc\"\n[overrides]\n\"ftl.gc.policy\" = \"banana\"\n",
            "overrides.\"ftl.gc.policy\" = \"banana\": override 'ftl.gc.policy=banana'",
        ),
    ];
    for (i, (text, expected)) in cases.iter().enumerate() {
        let grid = write_grid(&format!("bad{i}.toml"), text);
        let (out, table) = sweep_json(&grid, &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{text}");
        assert!(
            stderr.starts_with(&format!("error: {}: ", grid.display()))
                && stderr.contains(expected),
            "{text}: {stderr}"
        );
        assert!(!stderr.contains("[1/"), "a point ran: {stderr}");
        assert!(table.is_null(), "a table was written for {text}");
    }
}
