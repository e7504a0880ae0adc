//! The file-level trace format: golden samples, round trips, error positions, importers
//! and the analysis.

use std::path::PathBuf;

use flashstack_content::ContentClass;
use flashstack_workload::text::{self, parse_str, to_text};
use flashstack_workload::{analyze, mobigen, strace, Data, FileOp, FileTrace, OpKind};

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn read(name: &str) -> String {
    std::fs::read_to_string(data(name)).unwrap()
}

#[test]
fn sample_round_trips_byte_for_byte() {
    let source = read("sample.fst");
    let trace = text::read_file(&data("sample.fst")).unwrap();
    assert_eq!(trace.ops.len(), 40);
    let written = to_text(&trace);
    // The sample is canonical apart from its comments: the writer gives back its lines.
    let canonical: String = source
        .lines()
        .filter(|l| !l.starts_with("# ") && *l != "#")
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(written, canonical);
    let again = parse_str(&written, "written").unwrap();
    assert_eq!(again, trace);
    assert_eq!(to_text(&again), written);
}

#[test]
fn sample_ops_decode_as_written() {
    let trace = text::read_file(&data("sample.fst")).unwrap();
    let find = |time_ns: u64| trace.ops.iter().find(|op| op.time_ns == time_ns).unwrap();
    assert_eq!(
        find(14000).kind,
        OpKind::Pwrite {
            fd: 3,
            offset_bytes: 4096,
            len_bytes: 4096,
            data: Data::Class {
                class: ContentClass::SqliteTable,
                change_ratio: Some(0.125)
            }
        }
    );
    assert_eq!(
        find(21000).kind,
        OpKind::Write {
            fd: 5,
            len_bytes: 16,
            data: Data::Bytes(b"<?xml version=\"1".to_vec())
        }
    );
    match &find(30000).kind {
        OpKind::Open { path, flags, .. } => {
            assert_eq!(path, "/sdcard/Pictures/cache entry.jpg");
            assert_eq!(flags.to_string(), "wronly|creat|excl");
        }
        other => panic!("{other:?}"),
    }
}

fn error_of(body: &str) -> String {
    let text = format!("{}\n{body}", text::HEADER);
    parse_str(&text, "t.fst").unwrap_err().to_string()
}

#[test]
fn errors_name_file_line_and_field() {
    let cases = [
        (
            "5 1 write 3 10 unknown",
            "t.fst:2: field 'fd': 3 is not open",
        ),
        (
            "5 1 open 3 /a rdwr|creat\n4 1 close 3",
            "t.fst:3: field 'time': 4 ns is earlier than the line before (5 ns); times never decrease",
        ),
        (
            "0 1 open 3 /a rdwr\n0 1 open 3 /b rdwr",
            "t.fst:3: field 'fd': 3 is already open (close it first)",
        ),
        (
            "0 1 open 3 /a creat",
            "t.fst:2: field 'flags': 'creat' is not an access mode (rdonly, wronly or rdwr first)",
        ),
        (
            "0 1 open 3 /a rdwr|trunc|creat",
            "t.fst:2: field 'flags': 'creat' out of order or repeated (order: creat|excl|trunc|append|directory)",
        ),
        (
            "0 1 open 3 /a rdwr\n# c\n\n1 1 write 3 3 hex:0102",
            "t.fst:5: field 'data': carries 2 bytes but the length is 3",
        ),
        (
            "0 1 open 3 /a rdwr\n1 1 write 3 3 sqlite:1.5",
            "t.fst:3: field 'data': 'sqlite:1.5' has a change ratio that is not in [0, 1]",
        ),
        ("0 1 frob 3", "t.fst:2: field 'op': 'frob' is not an operation"),
        ("0 1 close", "t.fst:2: field 'fd': missing (the line ends before it)"),
        ("0 1 sync now", "t.fst:2: field 'end': 'now' is one field too many for 'sync'"),
        ("-1 1 sync", "t.fst:2: field 'time': '-1' must not be negative"),
        ("0 x sync", "t.fst:2: field 'thread': 'x' is not a whole number"),
        ("0 1 unlink /a%2", "t.fst:2: field 'path': '/a%2' has a '%' not followed by two hex digits"),
        ("0 1 open 3 /a rdwr\n1 1 write 3 1 hex:0g", "t.fst:3: field 'data': hex data has a non-hex character at digit 2"),
        ("0 1 stat /a 4096", "t.fst:2: field 'size': '4096' is not size=BYTES"),
        ("0 1 stat /a size=-1", "t.fst:2: field 'size': '-1' must not be negative"),
        ("0 1 stat /a size=1 x", "t.fst:2: field 'end': 'x' is one field too many for 'stat'"),
        ("0 1 open 3 /a rdwr\n1 1 write 3 1 SQLite", "t.fst:3: field 'data': 'SQLite' spells the class 'sqlite' differently"),
    ];
    for (body, expected) in cases {
        let message = error_of(body);
        assert!(
            message.starts_with(expected),
            "{body:?}\n got: {message}\nwant: {expected}"
        );
    }
    let header = parse_str("#flashstack-filetrace 2\n", "v.fst")
        .unwrap_err()
        .to_string();
    assert_eq!(
        header,
        "v.fst:1: field 'header': format version '2' is not supported (this build reads \
         '#flashstack-filetrace 1')"
    );
    let empty = parse_str("", "e.fst").unwrap_err().to_string();
    assert!(
        empty.starts_with("e.fst:1: field 'header': the file is empty"),
        "{empty}"
    );
}

#[test]
fn mobigen_sample_imports_to_its_golden_trace() {
    let (trace, report) =
        mobigen::import(read("sample.mobigen").as_bytes(), "sample.mobigen").unwrap();
    assert_eq!(to_text(&trace), read("sample.mobigen.fst"));
    assert_eq!(report.lines, 23);
    assert_eq!(report.ops, 21);
    assert_eq!(report.stand_in_opens, 1);
    assert_eq!(report.failed_calls.get("open"), Some(&1));
    assert_eq!(report.failed_calls.get("access"), Some(&1));
    assert_eq!(report.ignored_calls.get("getdents"), Some(&1));
    // Each thread keeps its order; the threads are merged by time.
    let times: Vec<u64> = trace.ops.iter().map(|op| op.time_ns).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]));
    let summary = analyze(&trace).unwrap();
    assert_eq!(summary.write_bytes, 8 + 4 * 4096);
    assert_eq!(summary.fsync_count, 2);
    assert_eq!(summary.fdatasync_count, 1);
    // fd 36 existed before the capture (MobiGen's added open); fd 77 was never opened.
    assert_eq!(summary.preexisting_write_bytes, 8 + 4096);
    // fd 41 was created in the trace: its rewrite of page 0 is the one other update.
    assert_eq!(summary.update_bytes, 8 + 4096 + 4096);
}

#[test]
fn mobigen_errors_name_the_line() {
    let error = mobigen::import(
        "1 0 open /data/data O_RDWR 3\n1 x write 3 4\n".as_bytes(),
        "m",
    )
    .unwrap_err()
    .to_string();
    assert_eq!(error, "m:2: field 'time': 'x' is not a whole number");
    let error = mobigen::import("1 5 pwrite 3\n".as_bytes(), "m")
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        "m:1: field 'offset': missing (the line ends before it)"
    );
}

#[test]
fn strace_sample_imports_to_its_golden_trace() {
    let (trace, report) =
        strace::import(read("sample.strace").as_bytes(), "sample.strace").unwrap();
    assert_eq!(to_text(&trace), read("sample.strace.fst"));
    assert_eq!(report.failed_calls.get("openat"), Some(&1));
    assert_eq!(report.unknown_fd_calls, 1); // write(1, …): stdout
                                            // The unfinished write took its start time, and the stream stays in time order.
    let resumed = trace.ops.iter().find(|op| op.time_ns == 700_000).unwrap();
    assert!(matches!(
        resumed.kind,
        OpKind::Write {
            fd: 3,
            len_bytes: 4096,
            data: Data::Class {
                class: ContentClass::SqliteTable,
                ..
            }
        }
    ));
    // Stats of regular files keep the size strace decoded.
    assert!(trace.ops.iter().any(|op| matches!(
        &op.kind,
        OpKind::Stat { path, size_bytes: Some(8000) } if path == "/tmp/fs-sample/photo.jpg"
    )));
    let summary = analyze(&trace).unwrap();
    assert_eq!(summary.fsync_count, 1);
    assert_eq!(summary.fdatasync_count, 1);
    assert_eq!(summary.sync_count, 1);
    // The rewrite of the database header, and the 3 bytes written through the dup'd fd.
    assert_eq!(summary.update_bytes, 4096 + 3);
}

#[test]
fn strace_time_of_day_wraps_at_midnight() {
    let text = "1 23:59:59.999000 sync() = 0\n1 00:00:00.001000 sync() = 0\n";
    let (trace, _) = strace::import(text.as_bytes(), "s").unwrap();
    let times: Vec<u64> = trace.ops.iter().map(|op| op.time_ns).collect();
    assert_eq!(times, [0, 2_000_000]);
}

#[test]
fn strace_full_strings_are_captured_bytes() {
    let text = "7 10:00:00.000001 open(\"/x\", O_WRONLY|O_CREAT, 0600) = 3\n\
                7 10:00:00.000002 write(3, \"a\\tb\\n\\0\\377\", 6) = 6\n\
                7 10:00:00.000003 write(3, \"abcdef\"..., 100) = 100\n\
                7 10:00:00.000004 write(3, \"\\1\\2\\3\\4\"..., 100) = 100\n";
    let (trace, _) = strace::import(text.as_bytes(), "s").unwrap();
    let data: Vec<&Data> = trace
        .ops
        .iter()
        .filter_map(|op| match &op.kind {
            OpKind::Write { data, .. } => Some(data),
            _ => None,
        })
        .collect();
    assert_eq!(data[0], &Data::Bytes(b"a\tb\n\0\xff".to_vec()));
    assert_eq!(
        data[1],
        &Data::Class {
            class: ContentClass::Text,
            change_ratio: None
        }
    );
    assert_eq!(data[2], &Data::Unknown);
}

#[test]
fn strace_errors_name_the_line() {
    let error = strace::import(
        "1 10:00:00.0 sync() = 0\n1 noon sync() = 0\n".as_bytes(),
        "s",
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.starts_with("s:2: field 'time': 'noon' is not a time of day"),
        "{error}"
    );
    let error = strace::import("10:00:00.0 write(3, \"x\", 1 = 1\n".as_bytes(), "s")
        .unwrap_err()
        .to_string();
    assert!(error.starts_with("s:1: field 'call':"), "{error}");
}

#[test]
fn analysis_of_the_sample_matches_its_golden_table() {
    let trace = text::read_file(&data("sample.fst")).unwrap();
    let summary = analyze(&trace).unwrap();
    assert_eq!(summary.write_ops, 10);
    assert_eq!(summary.write_bytes, 82_532);
    assert_eq!(summary.small_write_share, Some(1.0));
    // Updates: the database page rewritten at 14000 ns (4096 bytes) and the 4 bytes
    // rewritten in state.xml; the appends to log.txt and all first writes are new data.
    assert_eq!(summary.update_bytes, 4100);
    // UD: the declared 0.125 and the measured 4 of 4 bytes changed.
    assert_eq!(summary.update_difference, Some(0.5625));
    assert_eq!(summary.ud_measured_updates, 1);
    assert_eq!(summary.ud_declared_updates, 1);
    assert_eq!(
        (
            summary.fsync_count,
            summary.fdatasync_count,
            summary.sync_count
        ),
        (3, 1, 1)
    );
    assert_eq!(summary.render(), read("sample.analyze.txt"));
    let json = serde_json::to_value(&summary).unwrap();
    assert_eq!(json["by_type"][0]["file_type"], "sqlite-db");
}

#[test]
fn small_files_stop_at_923_pages() {
    let mut ops = vec![FileOp {
        time_ns: 0,
        tid: 1,
        kind: OpKind::Open {
            fd: 3,
            path: "/big.bin".into(),
            flags: flashstack_workload::OpenFlags::RDWR_CREATE,
        },
    }];
    let limit = flashstack_workload::analyze::SMALL_FILE_MAX_BYTES;
    ops.push(FileOp {
        time_ns: 1,
        tid: 1,
        kind: OpKind::Pwrite {
            fd: 3,
            offset_bytes: limit - 1,
            len_bytes: 1,
            data: Data::Unknown,
        },
    });
    let small = analyze(&FileTrace { ops: ops.clone() }).unwrap();
    assert_eq!(small.small_write_share, Some(1.0));
    ops.push(FileOp {
        time_ns: 2,
        tid: 1,
        kind: OpKind::Pwrite {
            fd: 3,
            offset_bytes: limit,
            len_bytes: 1,
            data: Data::Unknown,
        },
    });
    let large = analyze(&FileTrace { ops }).unwrap();
    assert_eq!(large.small_write_share, Some(0.0));
}

/// A real program under strace: sqlite3 writes a database with its rollback journal.
#[test]
fn real_strace_of_sqlite3() {
    let have = |tool: &str| {
        let flag = if tool == "sqlite3" { "-version" } else { "-V" };
        std::process::Command::new(tool)
            .arg(flag)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    for tool in ["strace", "sqlite3"] {
        if !have(tool) {
            flashstack_testkit::skip(
                "strace sqlite3",
                &format!("{tool} is missing (scripts/test installs it, as root)"),
            );
            return;
        }
    }
    let dir = flashstack_testkit::scratch_dir("flashstack-strace");
    let db = dir.join("app.db");
    let out = dir.join("trace.txt");
    let status = std::process::Command::new("strace")
        .args(["-f", "-tt", "-e", "trace=desc,file", "-s", "64", "-o"])
        .arg(&out)
        .arg("sqlite3")
        .arg(&db)
        .arg(
            "PRAGMA journal_mode=DELETE; CREATE TABLE t(x TEXT); \
             INSERT INTO t VALUES ('hello'); UPDATE t SET x = 'world';",
        )
        .output()
        .unwrap();
    if !status.status.success() {
        // ptrace may be refused in a sandbox.
        let message = String::from_utf8_lossy(&status.stderr).into_owned();
        let _ = std::fs::remove_dir_all(&dir);
        flashstack_testkit::skip("strace sqlite3", &format!("strace failed: {message}"));
        return;
    }
    let text = std::fs::read_to_string(&out).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let (trace, report) = strace::import(text.as_bytes(), "trace.txt").unwrap();
    let summary = analyze(&trace).unwrap();
    let row = |name: &str| {
        summary
            .by_type
            .iter()
            .find(|r| r.file_type.name() == name)
            .unwrap_or_else(|| panic!("no {name} writes: {}\n{report}", summary.render()))
    };
    assert!(row("sqlite-db").write_bytes >= 4096, "{}", summary.render());
    assert!(row("sqlite-journal").write_ops >= 1, "{}", summary.render());
    assert!(summary.fsync_count + summary.fdatasync_count >= 2);
    assert!(summary.update_bytes > 0, "{}", summary.render());
    // The imported trace survives its own format.
    let written = to_text(&trace);
    assert_eq!(parse_str(&written, "w").unwrap(), trace);
}

/// Bytes emptied by `O_TRUNC` are not compared with what is written afterwards.
#[test]
fn truncating_open_forgets_captured_bytes() {
    let text = format!(
        "{}\n0 1 open 3 /f rdwr|creat\n1 1 write 3 2 hex:0102\n2 1 close 3\n\
         3 1 open 3 /f wronly|trunc\n4 1 write 3 2 hex:0102\n5 1 pwrite 3 0 2 hex:0109\n",
        text::HEADER
    );
    let summary = analyze(&parse_str(&text, "t").unwrap()).unwrap();
    // Only the last write is an update: one of its two bytes changed.
    assert_eq!(summary.update_bytes, 2);
    assert_eq!(summary.ud_measured_updates, 1);
    assert_eq!(summary.update_difference, Some(0.5));
}

/// `strace -y` prints fds with their paths, in arguments and results.
#[test]
fn strace_y_fd_paths_are_read() {
    let text =
        "10:00:00.000001 openat(AT_FDCWD</root>, \"/d/x.db\", O_RDWR|O_CREAT, 0644) = 3</d/x.db>\n\
                10:00:00.000002 pwrite64(3</d/x.db>, \"ab\", 2, 0) = 2\n\
                10:00:00.000003 fsync(3</d/x.db>) = 0\n";
    let (trace, report) = strace::import(text.as_bytes(), "s").unwrap();
    assert_eq!(report.ops, 3, "{report}");
    assert_eq!(
        to_text(&trace),
        format!(
            "{}\n0 0 open 3 /d/x.db rdwr|creat\n1000 0 pwrite 3 0 2 hex:6162\n2000 0 fsync 3\n",
            text::HEADER
        )
    );
}

/// Issue 20, item 8: a MobiGen import keeps no data and cuts writable paths. The classes
/// come from the paths that remain, stand-ins are typed `unknown` rather than `other`,
/// and the analysis says which columns it cannot give and why.
#[test]
fn a_mobigen_analysis_types_what_it_can_and_says_what_it_cannot() {
    let script = "\
1 10 open data/data O_RDWR|O_CREAT|O_LARGEFILE 30
1 20 pwrite 30 0 4096
1 30 fsync 30 0
1 40 open \"/data/data/com.example/shared_prefs/settings.xml\" O_RDONLY 31
1 50 read 31 512
1 60 close 31 0
1 70 open /data/data O_WRONLY|O_CREAT|O_TRUNC|O_LARGEFILE 32
1 80 pwrite 32 8192 4096
";
    let (trace, report) = mobigen::import(script.as_bytes(), "m").unwrap();
    assert_eq!(report.directory_opens, 0);
    let summary = analyze(&trace).unwrap();
    let types: Vec<&str> = summary.by_type.iter().map(|r| r.file_type.name()).collect();
    assert_eq!(types, ["unknown"]);
    let columns: Vec<&str> = summary.not_computable.iter().map(|n| n.column).collect();
    assert_eq!(columns, ["UD", "Small, by file type", "UR"]);
    let table = summary.render();
    assert!(
        table.contains("cannot compute UD: update writes: 1, none with its bytes"),
        "{table}"
    );
    assert!(
        table.contains("MobiGen cuts a writable open's path"),
        "{table}"
    );

    use flashstack_workload::FileType;
    for (path, expected) in [
        ("/data/data/a/shared_prefs/x.xml", FileType::Prefs),
        ("/data/data/a/shared_prefs/x.xml.bak", FileType::Prefs),
        ("/data/data/a/cache/img_17", FileType::Cache),
        ("/data/data/a/code_cache/x.prof", FileType::Cache),
        ("/data/data/a/cache/photo.jpg", FileType::Media),
        ("/data/data/a/databases/m.db-wal", FileType::SqliteWal),
        ("/data/data/mobigen-fd30", FileType::Unknown),
        ("/mobigen/fd7", FileType::Unknown),
        ("/data/data/a/files/blob", FileType::Other),
    ] {
        assert_eq!(FileType::of(path), expected, "{path}");
    }
}
