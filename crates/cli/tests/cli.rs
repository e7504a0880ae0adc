//! End-to-end tests of the `flashstack` binary: determinism, the default run, bad input.

use std::path::PathBuf;
use std::process::{Command, Output};

fn flashstack(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flashstack"))
        .args(args)
        // Built-in aged phones are built into the target directory, not the user's cache.
        .env(
            "FLASHSTACK_CACHE_DIR",
            PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("phones"),
        )
        .output()
        .expect("the binary runs")
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("flashstack-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

const SMALL: &[&str] = &[
    "run",
    "--quiet",
    "--device",
    "ldc-emmc+nand.geometry.blocks_per_plane=2048",
    "--compare",
    "ufs31+nand.geometry.blocks_per_plane=16+nand.geometry.pages_per_block=128",
    "--synthetic",
    "zipf:0.9,count=20000,read=0.3,trim=0.02,size=4k:50/16k:40/64k:10,iat=exp:500us,flush=16",
    "--precondition",
    "0.8",
];

#[test]
fn same_command_twice_gives_byte_identical_json_and_csv() {
    let mut outputs = Vec::new();
    for run in 0..2 {
        let json = temp(&format!("run{run}.json"));
        let csv = temp(&format!("run{run}.csv"));
        let mut args = SMALL.to_vec();
        args.extend([
            "--json",
            json.to_str().unwrap(),
            "--csv",
            csv.to_str().unwrap(),
        ]);
        let out = flashstack(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        outputs.push((
            std::fs::read(&json).unwrap(),
            std::fs::read(&csv).unwrap(),
            out.stdout,
        ));
    }
    assert_eq!(outputs[0], outputs[1]);
    let json: serde_json::Value = serde_json::from_slice(&outputs[0].0).unwrap();
    let runs = json.as_array().expect("one entry per device");
    assert_eq!(runs.len(), 2);
    assert!(
        runs[0]["nand"]["block_erases"].as_u64().unwrap() > 0,
        "GC must be active"
    );
    let csv = String::from_utf8(outputs[0].1.clone()).unwrap();
    assert_eq!(csv.lines().count(), 3, "header and one row per run");
}

#[test]
fn default_run_works_without_arguments() {
    // The main job: the multi-app persona mix on the default whole stack.
    let out = flashstack(&["run", "--quiet"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("workload: mix"), "{table}");
    assert!(table.contains("user op 'take a picture'"), "{table}");
    assert!(table.contains("F2FS blocks written"), "{table}");
    assert!(table.contains("write amplification"), "{table}");
    // With a block-level option and no workload, the default synthetic block workload.
    let out = flashstack(&["run", "--quiet", "--no-precondition"]);
    assert!(out.status.success());
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("workload: hotcold:0.2:0.8"), "{table}");
}

#[test]
fn persona_runs_on_whole_stacks_deterministically() {
    let mut outputs = Vec::new();
    for run in 0..2 {
        let json = temp(&format!("persona{run}.json"));
        let trace = temp(&format!("persona{run}.fst"));
        let out = flashstack(&[
            "run",
            "--quiet",
            "--workload",
            "gmail:launch",
            // A factory-new phone on both: the same F2FS traffic on either device.
            "--fresh",
            "--compare",
            "ldc-emmc-pm,ldc-emmc-ldc",
            "--json",
            json.to_str().unwrap(),
            "--record",
            trace.to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        outputs.push((
            out.stdout,
            std::fs::read(&json).unwrap(),
            std::fs::read(&trace).unwrap(),
        ));
    }
    assert_eq!(outputs[0], outputs[1]);
    let json: serde_json::Value = serde_json::from_slice(&outputs[0].1).unwrap();
    let runs = json.as_array().expect("one entry per stack");
    assert_eq!(runs.len(), 2);
    let programs = |r: &serde_json::Value| r["device"]["nand"]["page_programs"].as_u64().unwrap();
    // Same file-system traffic, fewer programs with in-device compression.
    assert_eq!(runs[0]["fs"], runs[1]["fs"]);
    assert!(programs(&runs[1]) < programs(&runs[0]));
    assert_eq!(runs[0]["user_ops"][0]["name"], "launch app");
    // The recorded task replays on the whole stack as a file-level trace.
    let trace = temp("persona0.fst");
    let out = flashstack(&[
        "run",
        "--quiet",
        "--fresh",
        "--workload",
        trace.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("F2FS blocks written"), "{table}");
    // And analyses like the persona itself.
    let by_name = flashstack(&["workload", "analyze", "gmail:launch"]);
    let by_file = flashstack(&["workload", "analyze", trace.to_str().unwrap()]);
    assert!(by_name.status.success() && by_file.status.success());
    let vol = |o: &Output| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .find(|l| l.starts_with("Vol"))
            .map(str::to_string)
    };
    assert_eq!(vol(&by_name), vol(&by_file));
}

#[test]
fn persona_errors_are_clear() {
    let out = flashstack(&["run", "--quiet", "--workload", "gmail:fly"]);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("unknown persona 'gmail:fly'") && err.contains("gmail:launch"),
        "{err}"
    );
    let out = flashstack(&[
        "run",
        "--quiet",
        "--workload",
        "mix",
        "--precondition",
        "0.5",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("--precondition applies to block-level workloads"),
        "{err}"
    );
}

#[test]
fn malformed_trace_names_file_line_and_field() {
    let path = temp("bad.trace");
    std::fs::write(&path, "0 0 8 8 0\n1000 0 16 eight 1\n").unwrap();
    let out = flashstack(&[
        "run",
        "--quiet",
        "--trace",
        path.to_str().unwrap(),
        "--format",
        "mqsim",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("bad.trace:2"), "{err}");
    assert!(err.contains("size"), "{err}");
}

#[test]
fn impossible_geometry_and_beyond_capacity_are_clear_errors() {
    let out = flashstack(&[
        "run",
        "--quiet",
        "--device",
        "ldc-emmc+nand.geometry.page_size_bytes=5000",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("geometry.page_size_bytes"), "{err}");

    let path = temp("far.trace");
    std::fs::write(&path, "0 0 999999999999 8 0\n").unwrap();
    let args = [
        "run",
        "--quiet",
        "--no-precondition",
        "--trace",
        path.to_str().unwrap(),
    ];
    let out = flashstack(&args);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("request 0") && err.contains("--wrap"), "{err}");
    let mut wrapped = args.to_vec();
    wrapped.push("--wrap");
    assert!(flashstack(&wrapped).status.success());
}

#[test]
fn presets_list_and_toml_round_trip() {
    let out = flashstack(&["presets"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for name in ["ldc-emmc", "ufs31", "mqsim-default"] {
        assert!(text.contains(name), "{text}");
    }
    let out = flashstack(&["presets", "--toml", "ufs31"]);
    let path = temp("ufs.toml");
    std::fs::write(&path, &out.stdout).unwrap();
    let args = [
        "run",
        "--quiet",
        "--device",
        &format!("{}+nand.geometry.blocks_per_plane=16", path.display()),
        "--synthetic",
        "uniform,count=1000,size=4k",
        "--no-precondition",
    ];
    let out = flashstack(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn trace_inspect_summarises_a_trace() {
    let path = temp("inspect.csv");
    std::fs::write(
        &path,
        "proces,device,rw_flag,sector,size,timestamp\napp,sda,W,8,8,1.0\napp,sda,R,8,8,1.5\n",
    )
    .unwrap();
    let out = flashstack(&["trace", "inspect", path.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("pixel"), "{text}");
}

#[test]
fn compressing_devices_read_back_what_was_written() {
    // --verify compares every read with the content model's bytes: end to end through
    // prediction, compression, packing, caGC, straddling and decompression.
    for device in ["ldc-emmc-ldc", "ldc-emmc-zftl", "ldc-emmc-sc"] {
        let spec = format!("{device}+nand.geometry.blocks_per_plane=512");
        let out = flashstack(&[
            "run",
            "--quiet",
            "--device",
            &spec,
            "--verify",
            "--precondition",
            "0.8",
            "--synthetic",
            "hotcold:0.2:0.8,count=10000,read=0.4,trim=0.02,size=4k:60/16k:30/64k:10,iat=exp:1ms,flush=8",
        ]);
        assert!(
            out.status.success(),
            "{device}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let table = String::from_utf8(out.stdout).unwrap();
        assert!(table.contains("host +"), "{table}");
    }
    // Compression without contents is a clear configuration error.
    let out = flashstack(&[
        "run",
        "--quiet",
        "--device",
        "ldc-emmc-ldc",
        "--synthetic",
        "default",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("ftl.compression") && err.contains("--contents"),
        "{err}"
    );
}

#[test]
fn contents_beyond_available_memory_are_refused_up_front() {
    // About 470 GiB of contents exceeds any test machine's memory: a clear error at
    // once, not an out-of-memory kill midway through preconditioning.
    let out = flashstack(&[
        "run",
        "--quiet",
        "--device",
        "mqsim-default",
        "--contents",
        "--precondition",
        "1",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("--contents") && err.contains("GiB of memory available"),
        "{err}"
    );
}

const SMALL_EMMC: &str = "ldc-emmc+nand.geometry.blocks_per_plane=4096";

fn host_counts(json: &std::path::Path) -> (u64, u64) {
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(json).unwrap()).unwrap();
    // One run is written as an object, several as an array.
    let host = if json.is_array() {
        &json[0]["host"]
    } else {
        &json["host"]
    };
    (
        host["write_requests"].as_u64().unwrap(),
        host["read_requests"].as_u64().unwrap(),
    )
}

#[test]
fn builtin_workload_replays_its_table4_requests() {
    let json = temp("ldc-ca.json");
    let args = [
        "run",
        "--workload",
        "ldc:ca",
        "--quiet",
        "--device",
        SMALL_EMMC,
        "--json",
        json.to_str().unwrap(),
    ];
    let out = flashstack(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Camera: 2,301 requests, 96% writes (Table 4).
    assert_eq!(host_counts(&json), (2_209, 92));
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("ldc:ca"), "{table}");

    let mut twice = args.to_vec();
    twice.extend(["--repeat", "2", "--no-precondition"]);
    let out = flashstack(&twice);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(host_counts(&json), (2 * 2_209, 2 * 92));
}

#[test]
fn builtin_workload_errors_are_clear() {
    let out = flashstack(&["run", "--quiet", "--workload", "ldc:tiktok"]);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("unknown workload 'ldc:tiktok'") && err.contains("ldc:fb"),
        "{err}"
    );
    let out = flashstack(&[
        "run",
        "--quiet",
        "--workload",
        "ldc:fb",
        "--precondition",
        "0.5",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("existing data"), "{err}");
    let out = flashstack(&[
        "run",
        "--quiet",
        "--workload",
        "ldc:fb",
        "--device",
        "ldc-emmc+nand.geometry.blocks_per_plane=64",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("too small"), "{err}");
}

#[test]
fn workload_list_shows_paper_and_generated_figures() {
    let out = flashstack(&["workload", "list"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for row in [
        "ldc:fb   Facebook        17,428 / 17,428     90% / 90.00%   336.1 /   336.1",
        "ldc:ma   Multiple        67,955 / 67,955     88% / 88.00%  1034.2 /  1035.2",
    ] {
        assert!(text.contains(row), "{text}");
    }
    for name in ["ldc:tw", "ldc:me", "ldc:ge", "ldc:ch", "ldc:ca"] {
        assert!(text.contains(name), "{text}");
    }
}

/// A small device and a read-only workload: an image goes in, the same image comes out,
/// through every compression policy's mapping.
#[test]
fn image_in_image_out_round_trips_byte_exact() {
    let image = temp("in.img");
    // 16 MiB, 4 KiB blocks: a mix of zero blocks, text-like and random-like blocks.
    let mut bytes = vec![0u8; 16 << 20];
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for (i, block) in bytes.chunks_exact_mut(4096).enumerate() {
        match i % 5 {
            0 | 3 => {}
            1 => block.copy_from_slice(&[b"flashstack image ".as_slice(); 241].concat()[..4096]),
            _ => {
                for b in block.iter_mut() {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    *b = x as u8;
                }
            }
        }
    }
    std::fs::write(&image, &bytes).unwrap();
    for preset in ["ldc-emmc", "ldc-emmc-ldc"] {
        let out = temp("out.img");
        let spec = format!("{preset}+nand.geometry.blocks_per_plane=128");
        let run = flashstack(&[
            "run",
            "--quiet",
            "--device",
            &spec,
            "--synthetic",
            "uniform,count=2000,read=1.0,size=4k,footprint=16MiB",
            "--image",
            image.to_str().unwrap(),
            "--image-out",
            out.to_str().unwrap(),
        ]);
        assert!(
            run.status.success(),
            "{spec}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        let written = std::fs::read(&out).unwrap();
        assert!(written.len() >= bytes.len(), "{spec}");
        assert!(written[..bytes.len()] == bytes[..], "{spec}: image differs");
        assert!(written[bytes.len()..].iter().all(|&b| b == 0), "{spec}");
    }
}

#[test]
fn image_errors_name_the_file() {
    let odd = temp("odd.img");
    std::fs::write(&odd, vec![1u8; 5000]).unwrap();
    let run = flashstack(&["run", "--quiet", "--image", odd.to_str().unwrap()]);
    assert!(!run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("odd.img") && stderr.contains("4096"),
        "{stderr}"
    );
    let missing = temp("missing.img");
    let run = flashstack(&["run", "--quiet", "--image", missing.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        !run.status.success() && stderr.contains("missing.img"),
        "{stderr}"
    );
}
