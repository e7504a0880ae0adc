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

/// Runs a command that must succeed and returns its standard output.
fn output_of(args: &[&str]) -> String {
    let out = flashstack(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("output is UTF-8")
}

/// Runs a command that must fail and returns its standard error.
fn error_of(args: &[&str]) -> String {
    let out = flashstack(args);
    assert!(!out.status.success(), "{args:?} succeeded");
    String::from_utf8(out.stderr).expect("errors are UTF-8")
}

fn temp(name: &str) -> PathBuf {
    flashstack_testkit::scratch_dir("flashstack-cli").join(name)
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
    // Recording changes no figure: the recorder's probes of which files exist are its
    // own instrumentation, not the app's I/O.
    let unrecorded = temp("persona-unrecorded.json");
    let out = flashstack(&[
        "run",
        "--quiet",
        "--workload",
        "gmail:launch",
        "--fresh",
        "--compare",
        "ldc-emmc-pm,ldc-emmc-ldc",
        "--json",
        unrecorded.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    assert_eq!(out.stdout, outputs[0].0);
    assert_eq!(std::fs::read(&unrecorded).unwrap(), outputs[0].1);
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
        err.contains("--contents stores page contents") && err.contains("GiB available"),
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

/// Runs the binary with standard output a pipe whose reading end is already closed.
fn into_closed_pipe(args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    Command::new(env!("CARGO_BIN_EXE_flashstack"))
        .args(args)
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("the binary runs")
}

/// `flashstack fs ls IMG / | head -1`: every command that prints stops quietly when its
/// reader goes away (killed by SIGPIPE as `cat` is, or exit 0), never with a panic or
/// an error message.
#[test]
fn every_printing_command_exits_quietly_on_a_closed_pipe() {
    use std::os::unix::process::ExitStatusExt;
    let image = temp("pipe.img");
    let file = temp("pipe.txt");
    std::fs::write(&file, "x".repeat(100_000)).unwrap();
    let (img, host) = (image.to_str().unwrap(), file.to_str().unwrap());
    assert!(flashstack(&["fs", "mkfs", img, "--size", "64MiB"])
        .status
        .success());
    assert!(flashstack(&["fs", "put", img, host, "/d/f.txt"])
        .status
        .success());
    let trace = temp("pipe.csv");
    std::fs::write(
        &trace,
        "proces,device,rw_flag,sector,size,timestamp\napp,sda,W,8,8,1.0\napp,sda,R,8,8,1.5\n",
    )
    .unwrap();
    let tr = trace.to_str().unwrap();
    let commands: &[&[&str]] = &[
        &["--help"],
        &["run", "--help"],
        &["presets"],
        &["presets", "--toml", "ufs31"],
        &["presets", "--toml", "default"],
        &["workload", "list"],
        &["workload", "analyze", "gmail:launch"],
        &["trace", "inspect", tr],
        &["run", "--quiet", "--trace", tr, "--no-precondition"],
        &[
            "run",
            "--quiet",
            "--trace",
            tr,
            "--no-precondition",
            "--json",
            "-",
        ],
        &["run", "--quiet", "--fresh", "--workload", "gmail:launch"],
        &["fs", "mkfs", img, "--size", "64MiB"],
        &["fs", "put", img, host, "/d/f.txt"],
        &["fs", "ls", img, "/"],
        &["fs", "cat", img, "/d/f.txt"],
        &["fs", "stat", img, "/d"],
    ];
    for args in commands {
        let out = into_closed_pipe(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let quiet = out.status.success() || out.status.signal() == Some(libc_sigpipe());
        assert!(
            quiet && stderr.is_empty(),
            "{args:?}: {:?}, stderr: {stderr}",
            out.status
        );
    }
}

/// SIGPIPE's number on Linux.
fn libc_sigpipe() -> i32 {
    13
}

/// A cause that an error message already embeds is not printed again.
#[test]
fn error_chains_print_each_cause_once() {
    let missing = temp("missing.img");
    let err = error_of(&["fs", "ls", missing.to_str().unwrap(), "/"]);
    assert_eq!(err.matches("os error 2").count(), 1, "{err}");
    // Both superblock copies broken: the reason once.
    let image = temp("nosb.img");
    assert!(
        flashstack(&["fs", "mkfs", image.to_str().unwrap(), "--size", "64MiB"])
            .status
            .success()
    );
    let mut bytes = std::fs::read(&image).unwrap();
    bytes[1024..1028].copy_from_slice(b"junk");
    bytes[4096 + 1024..4096 + 1028].copy_from_slice(b"junk");
    std::fs::write(&image, &bytes).unwrap();
    let err = error_of(&["fs", "ls", image.to_str().unwrap(), "/"]);
    assert!(err.contains("superblock"), "{err}");
    assert_eq!(err.matches("superblock copy 1").count(), 1, "{err}");
}

#[test]
fn a_missing_file_trace_is_reported_as_a_missing_file() {
    let err = error_of(&["run", "--quiet", "--workload", "no-such-dir/x.fst"]);
    assert!(
        err.contains("x.fst: no such file") && !err.contains("unknown persona"),
        "{err}"
    );
}

/// A binary file read as a text trace: the message quotes the line escaped and cut, so
/// no raw bytes reach the terminal.
#[test]
fn binary_input_is_escaped_in_errors() {
    let path = temp("binary.trace");
    let bytes: Vec<u8> = (0..4096u32).map(|i| (i * 151 % 256) as u8).collect();
    std::fs::write(&path, bytes).unwrap();
    let trace = path.to_str().unwrap();
    let err = error_of(&["run", "--quiet", "--trace", trace, "--format", "mqsim"]);
    assert!(err.contains("binary.trace:1"), "{err}");
    assert!(
        err.trim_end().chars().all(|c| !c.is_control()) && err.len() < 400,
        "{err:?}"
    );
}

/// A device override with a bad value names the override, its field and the accepted
/// values, not a line of a TOML text the user never wrote.
#[test]
fn bad_override_values_are_named() {
    for args in [
        &[
            "run",
            "--quiet",
            "--device",
            "ldc-emmc+ftl.gc.policy=banana",
        ][..],
        &[
            "run",
            "--quiet",
            "--synthetic",
            "default",
            "--set",
            "ftl.gc.policy=banana",
        ],
        &[
            "run",
            "--quiet",
            "--compare",
            "default,ldc-emmc+ftl.gc.policy=banana",
        ],
    ] {
        let err = error_of(args);
        assert!(
            err.contains("override 'ftl.gc.policy=banana'")
                && err.contains("`greedy`, `cost-benefit`, `compression-aware`")
                && !err.contains("line")
                && err.lines().count() == 1,
            "{args:?}: {err}"
        );
    }
}

/// Two columns that differ in a knob but not in any figure get a note naming the knob and
/// why it did nothing; columns whose figures differ get none.
#[test]
fn a_knob_without_effect_is_pointed_out() {
    let text = output_of(&[
        "run",
        "--quiet",
        "--workload",
        "gmail:launch",
        // A factory-new phone, whose device erases no block in this task.
        "--fresh",
        "--compare",
        "ldc-emmc,ldc-emmc+ftl.gc.policy=cost-benefit",
    ]);
    assert!(
        text.contains("gave identical figures: device.ftl.gc.policy")
            && text.contains("erased no block"),
        "{text}"
    );
    let small = "ldc-emmc+nand.geometry.blocks_per_plane=512";
    let text = output_of(&[
        "run",
        "--quiet",
        "--synthetic",
        "uniform,count=20000,size=4k",
        "--precondition",
        "0.9",
        "--compare",
        &format!("{small},{small}+ftl.gc.policy=cost-benefit"),
    ]);
    assert!(!text.contains("note:"), "{text}");
}

/// Why a recorded task replayed on the same stack writes fewer F2FS blocks than the run
/// that recorded it (docs/file-traces.md): the run's measurement also covers the app
/// closing its databases after the task, which the trace leaves out (in WAL mode the
/// close checkpoints the log into the database: one read from the -wal file and one write
/// into the database per page). Less those writes, the data blocks agree.
#[test]
fn a_recorded_task_replays_to_the_runs_data_blocks_less_the_app_close() {
    let (run_json, trace, replay_json) = (temp("tr.json"), temp("tr.fst"), temp("trr.json"));
    // Both on factory-new phones: the trace then starts from what the run started from.
    let out = flashstack(&[
        "run",
        "--quiet",
        "--fresh",
        "--workload",
        "telegram:receive-text",
        "--record",
        trace.to_str().unwrap(),
        "--json",
        run_json.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let out = flashstack(&[
        "run",
        "--quiet",
        "--fresh",
        "--workload",
        trace.to_str().unwrap(),
        "--json",
        replay_json.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let load = |p: &PathBuf| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
    };
    let (run, replay) = (load(&run_json), load(&replay_json));
    let count = |r: &serde_json::Value, op: &str| r["file_ops"][op]["count"].as_u64().unwrap();
    let text = std::fs::read_to_string(&trace).unwrap();
    let traced_writes = text.lines().filter(|l| l.contains(" pwrite ")).count() as u64;
    assert!(
        !text.lines().any(|l| l.contains(" pread ")),
        "the task reads nothing"
    );
    assert_eq!(count(&replay, "write"), traced_writes);
    // The close: as many reads (from the log) as writes beyond the trace's.
    let close_writes = count(&run, "write") - traced_writes;
    assert!(close_writes > 100, "{close_writes}");
    assert_eq!(count(&run, "read"), close_writes);
    let data = |r: &serde_json::Value| r["fs"]["data_blocks"].as_u64().unwrap();
    let expected = data(&run) - close_writes;
    assert!(
        data(&replay).abs_diff(expected) <= expected / 100 + 1,
        "replay {} vs run {} less the close's {close_writes}",
        data(&replay),
        data(&run)
    );
}

/// Standard error that is not a terminal (a log, CI) still shows progress: one line per
/// finished phase, each ending its line.
#[test]
fn progress_without_a_terminal_is_a_line_per_phase() {
    let out = flashstack(&[
        "run",
        "--device",
        "ldc-emmc+nand.geometry.blocks_per_plane=512",
        "--synthetic",
        "uniform,count=5000,size=4k",
    ]);
    assert!(out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    for phase in ["precondition: fill: ", "precondition: age: ", "replay: "] {
        assert!(
            err.lines()
                .any(|l| l.starts_with(phase) && l.ends_with(" s")),
            "{phase}: {err}"
        );
    }
    assert!(err.ends_with('\n'), "{err:?}");
    let out = flashstack(&["run", "--fresh", "--workload", "gmail:launch"]);
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.lines()
            .any(|l| l.starts_with("gmail:launch on default: ")),
        "{err}"
    );
}

/// `flashstack fs restore-deltas IMG`: an image whose inodes hold MedFS inline deltas and
/// DCM deltas in a pseudo file (made here through the library) comes back as stock F2FS:
/// same bytes, no pseudo file, fsck.f2fs clean; a second run merges nothing. A corrupt
/// image is refused and left as it was.
#[test]
fn fs_restore_deltas_folds_inline_deltas_back() {
    use flashstack_f2fs::{mkfs, DeltaConfig, DeltaMode, F2fs, F2fsConfig, MemDevice, MkfsOptions};
    let image = temp("deltas.img");
    let img = image.to_str().unwrap();
    let mut dev = MemDevice::new(64 << 20);
    mkfs(&mut dev, &MkfsOptions::default()).unwrap();
    let cfg = F2fsConfig {
        delta: DeltaConfig::with_mode(DeltaMode::Medfs),
        ..F2fsConfig::default()
    };
    let mut fs = F2fs::mount_with(dev, 0, cfg).unwrap();
    let ino = fs.create("/app.db").unwrap();
    let mut want: Vec<u8> = (0..5 * 4096u32).map(|i| (i % 251) as u8).collect();
    fs.write(ino, 0, &want).unwrap();
    fs.sync().unwrap();
    for page in [1u64, 3] {
        let at = page as usize * 4096 + 100;
        want[at..at + 20].fill(0xEE);
        fs.write(ino, at as u64, &[0xEE; 20]).unwrap();
    }
    assert_eq!(fs.inline_deltas(ino).unwrap().len(), 2);
    // 40 write calls of 300 bytes (too large to inline), no read: HCluster classes the
    // file read-cold/write-hot after about 26, and its later deltas go to DCM.
    let hot = fs.create("/hot.db").unwrap();
    let mut hot_want: Vec<u8> = (0..8 * 4096u32).map(|i| (i % 241) as u8).collect();
    fs.write(hot, 0, &hot_want).unwrap();
    fs.sync().unwrap();
    for k in 0..40usize {
        let at = (k % 8) * 4096 + (k * 13) % 3000;
        let bytes: Vec<u8> = (0..300)
            .map(|i| (i as u8).wrapping_mul(37) ^ k as u8)
            .collect();
        hot_want[at..at + 300].copy_from_slice(&bytes);
        fs.write(hot, at as u64, &bytes).unwrap();
    }
    let dcm = fs.dcm_deltas(hot).unwrap().len();
    assert!(dcm >= 5, "{dcm} DCM deltas");
    // Some of the hot file's deltas may be small enough to inline.
    let all = 2 + dcm + fs.inline_deltas(hot).unwrap().len();
    fs.unmount().unwrap().export(&image).unwrap();
    let out = flashstack(&["fs", "restore-deltas", img]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        stdout.contains(&format!("{all} deltas (inline and DCM) folded")),
        "{stdout}"
    );
    let again = flashstack(&["fs", "restore-deltas", img]);
    assert!(String::from_utf8_lossy(&again.stdout).contains(" 0 deltas"));
    let mut fs = F2fs::mount(MemDevice::import(&image).unwrap()).unwrap();
    assert_eq!(fs.inline_deltas(ino).unwrap(), vec![]);
    assert_eq!(fs.dcm_pseudo_file(hot).unwrap(), None);
    assert!(fs.read(ino, 0, want.len()).unwrap() == want);
    assert!(fs.read(hot, 0, hot_want.len()).unwrap() == hot_want);
    let fsck = [
        "/usr/sbin/fsck.f2fs",
        "/sbin/fsck.f2fs",
        "/usr/bin/fsck.f2fs",
    ]
    .into_iter()
    .find(|p| std::path::Path::new(p).is_file());
    match fsck {
        None => flashstack_testkit::skip("check the image with fsck.f2fs", "f2fs-tools is missing"),
        Some(fsck) => {
            let out = Command::new(fsck)
                .arg("-f")
                .arg(&image)
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                text.contains("[FSCK] other corrupted bugs")
                    && !text.contains("[Fail]")
                    && !text.contains("[ASSERT]"),
                "{text}"
            );
        }
    }
    // Not an image: an error naming the file, nothing written.
    let junk = temp("junk.img");
    std::fs::write(&junk, vec![7u8; 1 << 20]).unwrap();
    let out = flashstack(&["fs", "restore-deltas", junk.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("junk.img"));
    assert_eq!(std::fs::read(&junk).unwrap(), vec![7u8; 1 << 20]);
}
