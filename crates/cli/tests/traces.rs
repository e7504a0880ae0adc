//! Captured block traces (the Pixel CSV) run as captured: the checks before the run, the
//! trace section of the report and JSON (issue 20, items 1–5). Each trace is written here,
//! a few lines long, to reproduce one artefact of the public phone traces.

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
    flashstack_testkit::scratch_dir("flashstack-traces").join(name)
}

/// A Pixel CSV trace of `rows` (`process,device,rw,sector,size,seconds`).
fn pixel(name: &str, rows: &str) -> PathBuf {
    let path = temp(name);
    std::fs::write(
        &path,
        format!("proces,device,rw_flag,sector,size,timestamp\n{rows}"),
    )
    .unwrap();
    path
}

const DEVICE: &str = "ldc-emmc+nand.geometry.blocks_per_plane=64";

/// Runs `trace` on the small device with `extra` options; returns the table and the JSON.
fn run(trace: &Path, extra: &[&str]) -> (String, Value) {
    let json = temp(&format!(
        "{}.json",
        trace.file_name().unwrap().to_string_lossy()
    ));
    let mut args = vec![
        "run",
        "--quiet",
        "--device",
        DEVICE,
        "--trace",
        trace.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend(extra);
    let out = flashstack(&args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let value: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let report = match value {
        Value::Array(mut runs) => runs.remove(0),
        other => other,
    };
    (String::from_utf8(out.stdout).unwrap(), report)
}

/// Item 1: a trace of a bigger phone fails before preconditioning, and says which presets
/// would hold it and that --wrap folds it in.
#[test]
fn an_address_beyond_the_device_is_refused_before_preconditioning_with_presets_that_fit() {
    // Sector 2^26 is byte 32 GiB: beyond the 13 MiB test device and the 16 GiB default.
    let trace = pixel(
        "far.csv",
        "app,sda,W,8,8,1.0\napp,sda,W,67108864,8,1.5\napp,sda,R,8,8,2.0\n",
    );
    let args = [
        "run",
        "--quiet",
        "--device",
        DEVICE,
        "--precondition",
        "0.9",
        "--trace",
        trace.to_str().unwrap(),
    ];
    let out = flashstack(&args);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("checked before preconditioning"), "{err}");
    assert!(err.contains("request 1"), "{err}");
    assert!(err.contains("--device ") && err.contains("--wrap"), "{err}");
    // Only presets at least as big as the trace's reach are offered.
    assert!(!err.contains("ldc-emmc ("), "{err}");
    let mut wrapped = args.to_vec();
    wrapped.push("--wrap");
    let out = flashstack(&wrapped);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Items 2 and 3: a write logged by a kernel thread and the app is one request, the app
/// rewriting its block is two; a three-day idle gap and a request out of order are said,
/// with counts, in the table and the JSON.
#[test]
fn duplicates_rewrites_idle_gaps_and_reordering_are_reported() {
    let trace = pixel(
        "artefacts.csv",
        "com.example.app,sda,W,800,8,100.000\n\
         kworker/u16:3,sda,W,800,8,100.002\n\
         com.example.app,sda,W,1600,8,100.010\n\
         com.example.app,sda,W,1600,8,100.013\n\
         com.example.app,sda,R,800,8,100.012\n\
         com.example.app,sda,W,2400,8,359300.0\n",
    );
    let (table, json) = run(&trace, &["--no-precondition"]);
    let t = &json["trace"];
    assert_eq!(t["reordered"], 1, "{t}");
    assert_eq!(t["idle_gaps"]["count"], 1, "{t}");
    assert_eq!(t["idle_gaps"]["compressed"], false, "{t}");
    assert!(table.contains("1 arrived out of order"), "{table}");
    assert!(table.contains("kept as captured"), "{table}");

    let (table, json) = run(&trace, &["--no-precondition", "--clean"]);
    let t = &json["trace"];
    assert_eq!(t["duplicates_dropped"], 1, "{t}");
    assert_eq!(t["rewrites_kept"], 1, "{t}");
    assert_eq!(t["requests"], 5, "{t}");
    assert_eq!(t["idle_gaps"]["compressed"], true, "{t}");
    assert_eq!(
        t["idle_gaps"]["longest_ns"],
        (359_300_000_000_000u64 - 100_013_000_000),
        "{t}"
    );
    assert!(table.contains("each cut to 10.000 s"), "{table}");
    assert!(
        table.contains("1 requests logged twice by two processes dropped"),
        "{table}"
    );
    // Simulated time: 13 ms of requests and one gap cut to 10 s.
    let seconds = json["simulated_seconds"].as_f64().unwrap();
    assert!(seconds < 11.0, "{seconds}");
}

/// Item 4: who wrote what, with bytes and latencies, most bytes first.
#[test]
fn the_report_breaks_requests_down_by_process() {
    let trace = pixel(
        "processes.csv",
        "com.example.video,sda,W,0,256,1.0\n\
         com.example.video,sda,W,256,256,1.1\n\
         f2fs_gc,sda,W,4096,8,1.2\n\
         com.example.video,sda,R,0,8,1.3\n\
         logd,sda,W,8192,16,1.4\n",
    );
    let (table, json) = run(&trace, &["--no-precondition", "--processes", "2"]);
    let processes = json["trace"]["processes"].as_array().unwrap();
    let names: Vec<&str> = processes
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["com.example.video", "logd", "(other)"]);
    let video = &processes[0];
    assert_eq!(video["write_requests"], 2);
    assert_eq!(video["write_bytes"], 2 * 128 * 1024);
    assert_eq!(video["read_requests"], 1);
    assert_eq!(video["latency"]["write"]["count"], 2);
    assert_eq!(processes[2]["write_bytes"], 4096);
    assert!(
        table.contains("processes on") && table.contains("com.example.video"),
        "{table}"
    );
}

/// Item 5: data the trace reads without writing is on the phone; the replay writes it
/// before measuring, so the reads cost NAND reads (and without it, nothing).
#[test]
fn reads_of_data_the_trace_never_wrote_hit_flash() {
    let trace = pixel(
        "cold-reads.csv",
        "app,sda,W,0,8,1.0\napp,sda,R,2048,2048,1.1\napp,sda,R,0,8,1.2\n",
    );
    let (table, json) = run(&trace, &["--no-precondition"]);
    let existing = &json["trace"]["existing_reads"];
    assert_eq!(existing["lbas_read_unwritten"], 256, "{existing}");
    assert_eq!(existing["lbas_laid_down"], 256, "{existing}");
    let nand_reads = json["nand"]["page_reads"].as_u64().unwrap();
    assert!(nand_reads >= 256 / 4, "{nand_reads} NAND reads");
    assert!(table.contains("so every such read hits flash"), "{table}");

    let (_, json) = run(&trace, &["--no-precondition", "--no-read-footprint"]);
    let cold = json["nand"]["page_reads"].as_u64().unwrap();
    assert!(cold < nand_reads / 10, "{cold} against {nand_reads}");
}

/// A MobiGen script of an app's SQLite files (issue 20, items 6, 7 and 9): the database
/// directory opened read-only and fsynced, a stand-in file that existed before the
/// capture created again with O_EXCL, a journal unlinked that the capture never saw
/// created (and unlinked again), an rmdir MobiGen has no call for.
const MOBIGEN: &str = "\
1 50 open /data/data O_WRONLY|O_CREAT|O_TRUNC|O_LARGEFILE 30
1 60 pread 30 0 8192
1 70 close 30 0
1 100 open \"/data/data/com.example/databases/app.db\" O_RDONLY|O_LARGEFILE 33
1 110 pread 33 4096 4096
1 120 close 33 0
1 200 open data/data O_RDWR|O_CREAT|O_EXCL|O_LARGEFILE 30
1 300 pwrite 30 0 4096
1 400 fsync 30 0
1 500 open \"/data/data/com.example/databases\" O_RDONLY|O_LARGEFILE 31
1 600 fsync 31 0
1 700 close 31 0
1 800 close 30 0
1 900 unlink \"/data/data/com.example/databases/app.db-journal\" 0
1 950 unlink \"/data/data/com.example/databases/app.db-journal\" 0
";

fn imported_mobigen() -> PathBuf {
    let (script, fst) = (temp("app.mobigen"), temp("app.fst"));
    std::fs::write(&script, MOBIGEN).unwrap();
    let out = flashstack(&[
        "trace",
        "import",
        "--from",
        "mobigen",
        script.to_str().unwrap(),
        fst.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stderr).unwrap();
    assert!(text.contains("1 directory opens"), "{text}");
    fst
}

/// Runs a file-level trace on the default stack; the JSON of its one run.
fn run_stack(fst: &Path, extra: &[&str]) -> Result<(String, Value), String> {
    let json = temp("stack.json");
    let mut args = vec![
        "run",
        "--quiet",
        "--workload",
        fst.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend(extra);
    let out = flashstack(&args);
    if !out.status.success() {
        return Err(String::from_utf8(out.stderr).unwrap());
    }
    let value: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let run = match value {
        Value::Array(mut runs) => runs.remove(0),
        other => other,
    };
    Ok((String::from_utf8(out.stdout).unwrap(), run))
}

#[test]
fn a_mobigen_trace_replays_as_captured_and_counts_what_it_cannot_honour() {
    let fst = imported_mobigen();
    let text = std::fs::read_to_string(&fst).unwrap();
    assert!(
        text.contains("open 31 /data/data/com.example/databases rdonly|directory"),
        "{text}"
    );
    let (table, run) = run_stack(&fst, &[]).unwrap();
    let replay = &run["replay"];
    // The stand-in (8 KiB read), the database (read to 8 KiB) and the journal.
    assert_eq!(replay["preexisting_files"], 3, "{replay}");
    assert_eq!(replay["preexisting_bytes"], 16384, "{replay}");
    let unhonoured = &replay["unhonoured"];
    assert_eq!(
        unhonoured["exclusive create of an existing file"], 1,
        "{replay}"
    );
    assert_eq!(unhonoured["unlink of a missing file"], 1, "{replay}");
    assert_eq!(replay["skipped"], 1, "{replay}");
    assert!(
        table.contains("exclusive create of an existing file ×1"),
        "{table}"
    );
    // The existing files were on flash: their reads miss the cache.
    // Three pages: 0–8 KiB of the stand-in, 4–8 KiB of the database.
    assert_eq!(run["cache"]["read_misses"], 3, "{}", run["cache"]);
    assert!(run["device"]["nand"]["page_reads"].as_u64().unwrap() >= 2);

    let err = run_stack(&fst, &["--strict"]).unwrap_err();
    assert!(
        err.contains("operation 7 (open)") && err.contains("exclusive create of an existing file"),
        "{err}"
    );
}

/// An strace capture whose stat shows a file's size (16 KiB) but whose reads touch only
/// its first page: the replay lays down the size the stat returned, not the reads' reach.
#[test]
fn an_strace_stat_size_sizes_a_file_that_existed_before_the_capture() {
    let (capture, fst) = (temp("stat.strace"), temp("stat.fst"));
    std::fs::write(
        &capture,
        "7 10:00:00.000100 newfstatat(AT_FDCWD, \"/data/app/x.db\", {st_mode=S_IFREG|0660, st_size=16384, ...}, 0) = 0\n\
         7 10:00:00.000200 openat(AT_FDCWD, \"/data/app/x.db\", O_RDWR|O_CLOEXEC) = 3\n\
         7 10:00:00.000300 pread64(3, \"\", 4096, 0) = 4096\n\
         7 10:00:00.000400 close(3) = 0\n",
    )
    .unwrap();
    let out = flashstack(&[
        "trace",
        "import",
        "--from",
        "strace",
        capture.to_str().unwrap(),
        fst.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&fst).unwrap();
    assert!(text.contains("stat /data/app/x.db size=16384"), "{text}");
    // A fresh phone: what is laid down does not depend on the phone's age.
    let (_, run) = run_stack(&fst, &["--fresh"]).unwrap();
    assert_eq!(run["replay"]["preexisting_files"], 1, "{}", run["replay"]);
    assert_eq!(
        run["replay"]["preexisting_bytes"], 16384,
        "{}",
        run["replay"]
    );
}

/// `--precondition-trace`: the install trace's writes (1 MiB at LBA 0, and a read of data
/// nobody wrote) before a run trace that reads that 1 MiB and writes one block.
const INSTALL: &str = "installer,sda,W,0,2048,5.0\n\
                       installer,sda,R,8192,8,5.1\n\
                       installer,sda,W,4096,8,5.2\n";
const AFTER_INSTALL: &str = "app,sda,R,0,2048,1.0\napp,sda,W,16384,8,1.1\n";

/// Issue 19 item 5: the install trace runs before the measurement and counts in no
/// figure, yet the run trace's reads find its data on flash (none is laid down for them).
#[test]
fn an_install_trace_preconditions_the_device_and_counts_in_no_figure() {
    let install = pixel("install.csv", INSTALL);
    let trace = pixel("after-install.csv", AFTER_INSTALL);
    let install_arg = install.to_str().unwrap();
    let (table, json) = run(&trace, &["--precondition-trace", install_arg, "--verify"]);
    // Host figures are the run trace's alone.
    assert_eq!(json["host"]["write_requests"], 1, "{}", json["host"]);
    assert_eq!(json["host"]["write_bytes"], 4096, "{}", json["host"]);
    assert_eq!(json["host"]["read_bytes"], 1 << 20, "{}", json["host"]);
    assert_eq!(json["nand"]["page_programs"], 1, "{}", json["nand"]);
    // The 1 MiB the run trace reads was written by the install: nothing laid down, and
    // the reads (checked byte for byte by --verify) hit flash.
    let existing = &json["trace"]["existing_reads"];
    assert_eq!(existing["lbas_read_unwritten"], 256, "{existing}");
    assert_eq!(existing["lbas_laid_down"], 0, "{existing}");
    assert!(json["nand"]["page_reads"].as_u64().unwrap() >= 256 / 4);
    assert!(table.contains("all of it held data already"), "{table}");
    // No fill by default with an install trace; the report says what ran.
    let said = json["run"]["precondition"].as_str().unwrap();
    assert!(said.starts_with("replayed "), "{said}");
    assert!(said.contains("install.csv (3 requests: 1.00 MiB written, 4.00 KiB read"));
    // The breakdown by process holds the run trace's processes only.
    let processes = json["trace"]["processes"].as_array().unwrap();
    assert_eq!(processes.len(), 1, "{processes:?}");
    assert_eq!(processes[0]["name"], "app");

    // Without it, the same reads are laid down before the measurement.
    let (_, json) = run(&trace, &["--no-precondition"]);
    assert_eq!(json["trace"]["existing_reads"]["lbas_laid_down"], 256);

    // With --precondition F too, the fill runs first, then the install trace.
    let (_, json) = run(
        &trace,
        &["--precondition-trace", install_arg, "--precondition", "0.3"],
    );
    let said = json["run"]["precondition"].as_str().unwrap();
    assert!(
        said.starts_with("filled 30%") && said.contains("; then replayed "),
        "{said}"
    );
    assert_eq!(json["host"]["write_bytes"], 4096);
    assert_eq!(json["trace"]["existing_reads"]["lbas_laid_down"], 0);
}

/// The install trace's writes are on the device: on a 13 MiB device an install that
/// writes 12 MiB twice leaves the run trace's rewrites to garbage collection, where an
/// empty device takes them without an erase.
#[test]
fn an_install_trace_leaves_its_data_on_the_device() {
    let mut rows = String::new();
    for pass in 0..2 {
        for chunk in 0..48u64 {
            let at = 1.0 + f64::from(pass) + chunk as f64 * 0.01;
            rows += &format!("installer,sda,W,{},512,{at:.2}\n", chunk * 512);
        }
    }
    let install = pixel("big-install.csv", &rows);
    let mut rows = String::new();
    for i in 0..64u64 {
        // 4 KiB rewrites scattered over the installed 12 MiB.
        let sector = (i * 7919 % 3072) * 8;
        rows += &format!("app,sda,W,{sector},8,{:.3}\n", 1.0 + i as f64 * 0.001);
    }
    let trace = pixel("rewrites.csv", &rows);
    let (_, installed) = run(&trace, &["--precondition-trace", install.to_str().unwrap()]);
    let (_, empty) = run(&trace, &["--no-precondition"]);
    for json in [&installed, &empty] {
        assert_eq!(json["host"]["write_bytes"], 64 * 4096, "{}", json["host"]);
    }
    assert_eq!(empty["nand"]["block_erases"], 0, "{}", empty["nand"]);
    let erases = installed["nand"]["block_erases"].as_u64().unwrap();
    assert!(erases > 0, "{}", installed["nand"]);
}

/// An install trace beyond the device is refused before anything runs, naming the file
/// and the request; without --trace the flag is refused with what it needs.
#[test]
fn a_precondition_trace_that_cannot_run_is_refused_with_its_file() {
    let far = pixel(
        "far-install.csv",
        "installer,sda,W,8,8,1.0\ninstaller,sda,W,67108864,8,1.5\n",
    );
    let trace = pixel("after-far.csv", AFTER_INSTALL);
    let far_arg = far.to_str().unwrap();
    let out = flashstack(&[
        "run",
        "--quiet",
        "--device",
        DEVICE,
        "--trace",
        trace.to_str().unwrap(),
        "--precondition-trace",
        far_arg,
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains(&format!("the precondition trace {far_arg} addresses")),
        "{err}"
    );
    assert!(err.contains("request 1 (write of 4096 bytes"), "{err}");
    assert!(err.contains("checked before preconditioning"), "{err}");

    let out = flashstack(&[
        "run",
        "--quiet",
        "--device",
        DEVICE,
        "--precondition-trace",
        far_arg,
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("--precondition-trace") && err.contains("needs --trace"),
        "{err}"
    );
    for other in [["--synthetic", "default"], ["--workload", "ldc:fb"]] {
        let mut args = vec!["run", "--quiet", "--precondition-trace", far_arg];
        args.extend(other);
        let out = flashstack(&args);
        assert!(!out.status.success());
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains("cannot be used with"), "{err}");
    }
}

/// Same seed, same bytes, with an install trace on two devices side by side.
#[test]
fn a_precondition_trace_run_is_deterministic() {
    let install = pixel("install-det.csv", INSTALL);
    let trace = pixel("after-det.csv", AFTER_INSTALL);
    let compare = format!("{DEVICE},{DEVICE}+ftl.gc.policy=cost-benefit");
    let args = [
        "--precondition-trace",
        install.to_str().unwrap(),
        "--precondition",
        "0.4",
        "--compare",
        compare.as_str(),
        "--seed",
        "7",
    ];
    let (first_table, first) = run(&trace, &args);
    let (second_table, second) = run(&trace, &args);
    assert_eq!(first_table, second_table);
    assert_eq!(first.to_string(), second.to_string());
}

/// A small copy of `ufs31` (16 KiB pages, 8 planes, 3 GiB of flash).
const SMALL_UFS: &str = "ufs31+nand.geometry.blocks_per_plane=96+nand.geometry.pages_per_block=256";

/// An app reading 64 files of 1 MiB it never writes (128 KiB requests, in order) and
/// writing 32 others whole, 128 KiB at a time, all inside the preconditioned 69 %.
fn sequential_files() -> PathBuf {
    let mut rows = String::new();
    let mut t = 1.0;
    let mut row = |rw: &str, sector: u64| {
        rows.push_str(&format!("app,sda,{rw},{sector},256,{t:.6}\n"));
        t += 0.001;
    };
    for file in 0..64u64 {
        // Sectors of 512 bytes: a file every 4 MiB from 8 MiB, the written ones 2 MiB on.
        let read = (8 + 4 * file) * 2048;
        for k in 0..8 {
            row("R", read + k * 256);
        }
        if file < 32 {
            let written = (10 + 4 * file) * 2048;
            for k in 0..8 {
                row("W", written + k * 256);
            }
        }
    }
    pixel("sequential-files.csv", &rows)
}

/// Runs the sequential-file trace on the small `ufs31`, preconditioned to 69 % with the
/// aging `shape`; returns the table, the JSON and flash pages read per host read.
fn run_shaped(shape: &str) -> (String, Value, f64) {
    let trace = sequential_files();
    let json = temp(&format!("sequential-files-{shape}.json"));
    let args = [
        "run",
        "--quiet",
        "--device",
        SMALL_UFS,
        "--trace",
        trace.to_str().unwrap(),
        // 69 %: 491,765 LBAs, which ends mid-page (whole regions are filled instead).
        "--precondition",
        "0.69",
        "--aging-max",
        "4",
        "--precondition-shape",
        shape,
        "--json",
        json.to_str().unwrap(),
    ];
    let out = flashstack(&args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let report = match report {
        Value::Array(mut runs) => runs.remove(0),
        other => other,
    };
    // Host reads' pages: every page read but GC's relocation reads.
    let pages = report["nand"]["page_reads"].as_u64().unwrap()
        - report["gc"]["relocation_page_reads"].as_u64().unwrap();
    let reads = report["host"]["read_requests"].as_u64().unwrap();
    assert_eq!(reads, 512);
    let per_read = pages as f64 / reads as f64;
    (String::from_utf8(out.stdout).unwrap(), report, per_read)
}

/// Issue 19 item 5: aging with the workload's own shape keeps files it writes in 128 KiB
/// requests in 128 KiB runs on flash, so each 128 KiB read touches 8 pages of 16 KiB, where
/// uniform 4 KiB aging scatters them over several times as many; both reach GC's steady
/// state; the same seed gives the same bytes.
#[test]
fn workload_shaped_aging_keeps_large_reads_in_few_flash_pages() {
    let (_, uniform, uniform_pages) = run_shaped("uniform-4k");
    let (table, shaped, shaped_pages) = run_shaped("workload");
    println!(
        "flash pages per 128 KiB read: uniform-4k {uniform_pages:.2}, workload {shaped_pages:.2}"
    );
    // 128 KiB / 16 KiB = 8 pages, the files' reads are aligned.
    assert!(shaped_pages <= 8.5, "{shaped_pages}");
    assert!(
        uniform_pages >= 2.0 * shaped_pages,
        "{uniform_pages} vs {shaped_pages}"
    );
    for (name, report) in [("uniform-4k", &uniform), ("workload", &shaped)] {
        let line = report["run"]["precondition"].as_str().unwrap();
        assert!(line.contains("to steady state"), "{name}: {line}");
        // The data the trace reads was all there after preconditioning.
        assert_eq!(
            report["trace"]["existing_reads"]["lbas_laid_down"], 0,
            "{name}"
        );
    }
    let line = shaped["run"]["precondition"].as_str().unwrap();
    assert!(line.contains("workload-shaped writes"), "{line}");
    assert!(
        uniform["run"]["precondition"]
            .as_str()
            .unwrap()
            .contains("random writes"),
        "{uniform}"
    );
    let (again, shaped_again, _) = run_shaped("workload");
    assert_eq!(table, again);
    assert_eq!(shaped, shaped_again);
}

/// Workload-shaped aging is refused, saying why, where there is no aging to shape or the
/// method cannot take a shape.
#[test]
fn workload_shaped_aging_is_refused_where_it_cannot_apply() {
    let trace = sequential_files();
    for (extra, expected) in [
        (vec!["--precondition-method", "construct"], "use replay"),
        (vec!["--no-precondition"], "does not age"),
    ] {
        let mut args = vec![
            "run",
            "--quiet",
            "--device",
            SMALL_UFS,
            "--trace",
            trace.to_str().unwrap(),
            "--precondition-shape",
            "workload",
        ];
        args.extend(extra);
        let out = flashstack(&args);
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(
            err.contains("--precondition-shape workload") && err.contains(expected),
            "{err}"
        );
    }
}
