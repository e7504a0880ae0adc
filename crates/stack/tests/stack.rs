//! The assembled stack end to end: round trips, fsync durability across a power cut,
//! SQLite, determinism.

use flashstack_sqlvfs::{FileApi, FileError, OpenFlags, SimDb, SimVfs, SqliteConfig};
use flashstack_stack::{SharedStack, Stack, StackConfig};

const CREATE: OpenFlags = OpenFlags {
    create: true,
    exclusive: false,
    read_only: false,
    delete_on_close: false,
};

fn stack() -> Stack {
    Stack::new(StackConfig::preset("default").unwrap()).unwrap()
}

fn read_all(s: &mut Stack, path: &str) -> Vec<u8> {
    let (f, t) = s.open(s.now_ns(), path, OpenFlags::default()).unwrap();
    let (size, t) = s.size(t, f).unwrap();
    let mut buf = vec![0u8; size as usize];
    let (n, t) = s.read_at(t, f, 0, &mut buf).unwrap();
    assert_eq!(n as u64, size);
    s.close(t, f).unwrap();
    buf
}

#[test]
fn write_read_sparse_truncate_rename_delete() {
    let mut s = stack();
    s.mkdir(0, "/d").unwrap();
    let (f, t) = s.open(0, "/d/a", CREATE).unwrap();
    let t = s.write_at(t, f, 10_000, b"hello").unwrap();
    let t = s.write_at(t, f, 0, &[7u8; 5000]).unwrap();
    let t = s.truncate(t, f, 10_003).unwrap();
    let t = s.close(t, f).unwrap();
    let t = s.rename(t, "/d/a", "/d/b").unwrap();
    let mut want = vec![0u8; 10_003];
    want[..5000].fill(7);
    want[10_000..].copy_from_slice(b"hel");
    assert_eq!(read_all(&mut s, "/d/b"), want);
    let (gone, _) = s.exists(t, "/d/a").unwrap();
    assert!(!gone);
    s.delete(s.now_ns(), "/d/b", true).unwrap();
    assert!(!s.exists(s.now_ns(), "/d/b").unwrap().0);
}

#[test]
fn fsynced_file_survives_power_cut_unsynced_one_may_not() {
    let mut s = stack();
    let (f, t) = s.open(0, "/synced", CREATE).unwrap();
    let t = s.write_at(t, f, 0, &[0xab; 20_000]).unwrap();
    let t = s.sync(t, f, false).unwrap();
    let (g, t) = s.open(t, "/volatile", CREATE).unwrap();
    s.write_at(t, g, 0, &[1; 8192]).unwrap();
    s.power_cut();
    assert!(s.is_powered_off());
    s.recover().unwrap();
    assert_eq!(read_all(&mut s, "/synced"), vec![0xab; 20_000]);
    let image = std::env::temp_dir().join(format!("flashstack-stack-{}.img", std::process::id()));
    let blocks = s.write_image(&image).unwrap();
    let _ = std::fs::remove_file(&image);
    assert!(
        blocks > 5,
        "the image holds the superblock, checkpoint and the file"
    );
}

#[test]
fn armed_cuts_keep_every_fsync() {
    for cut_after in [1u64, 5, 17, 40, 90] {
        let mut s = stack();
        let mut synced: Vec<(String, Vec<u8>)> = Vec::new();
        s.arm_power_cut(cut_after).unwrap();
        let mut t = 0;
        for i in 0..30u32 {
            let path = format!("/f{i}");
            let data = vec![i as u8 + 1; 3000 + i as usize * 700];
            let step = (|| {
                let (f, t1) = s.open(t, &path, CREATE)?;
                let t2 = s.write_at(t1, f, 0, &data)?;
                let t3 = s.sync(t2, f, false)?;
                s.close(t3, f)
            })();
            match step {
                Ok(t4) => {
                    t = t4;
                    synced.push((path, data));
                }
                Err(_) => break,
            }
        }
        s.power_cut();
        s.recover().unwrap();
        for (path, data) in &synced {
            assert_eq!(
                &read_all(&mut s, path),
                data,
                "cut after {cut_after}: {path}"
            );
        }
    }
}

#[test]
fn sqlite_integrity_and_committed_rows_survive_a_cut() {
    let shared = SharedStack::new(stack());
    let cfg = SqliteConfig::android();
    let committed = {
        let vfs = SimVfs::register(Box::new(shared.clone()), 7, 20_000).unwrap();
        let db = SimDb::open(&vfs, "/app.db", &cfg).unwrap();
        db.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
            .unwrap();
        for txn in 0..20 {
            db.execute_batch("BEGIN").unwrap();
            for r in 0..20 {
                db.execute(
                    "INSERT INTO t (v) VALUES (?1)",
                    [format!("row {txn}/{r} {}", "x".repeat(100))],
                )
                .unwrap();
            }
            db.execute_batch("COMMIT").unwrap();
        }
        let ok: String = db
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ok, "ok");
        shared.lock().power_cut();
        400i64
    };
    shared.lock().recover().unwrap();
    let vfs = SimVfs::register(Box::new(shared.clone()), 8, 20_000).unwrap();
    vfs.advance_to(shared.lock().now_ns());
    let db = SimDb::open(&vfs, "/app.db", &cfg).unwrap();
    let ok: String = db
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
    let rows: i64 = db
        .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rows, committed);
}

fn workload_json() -> String {
    let mut s = stack();
    let mut t = 0;
    for i in 0..20u32 {
        let (f, t1) = s.open(t, &format!("/w{}", i % 5), CREATE).unwrap();
        let t2 = s
            .write_at(t1, f, (i as u64 * 5000) % 50_000, &[i as u8; 6000])
            .unwrap();
        let t3 = if i % 3 == 0 {
            s.sync(t2, f, i % 2 == 0).unwrap()
        } else {
            t2
        };
        t = s.close(t3, f).unwrap() + 2_000_000_000;
    }
    // 25 dirty pages at once: more than the 16 of the hot rule, so warm data.
    let (f, t1) = s.open(t, "/big", CREATE).unwrap();
    let t2 = s.write_at(t1, f, 0, &[0xb1; 25 * 4096]).unwrap();
    let t3 = s.sync(t2, f, false).unwrap();
    let t = s.close(t3, f).unwrap();
    // Two minutes of think time: the flusher's expiry writeback, then F2FS's idle work.
    let t = s.idle_until(t + 120_000_000_000).unwrap();
    s.sync_all(t).unwrap();
    serde_json::to_string(&s.metrics().unwrap()).unwrap()
}

#[test]
fn same_seed_same_metrics_bytes() {
    assert_eq!(workload_json(), workload_json());
}

#[test]
fn table_names_every_op() {
    let mut s = stack();
    let (f, t) = s.open(0, "/x", CREATE).unwrap();
    let t = s.write_at(t, f, 0, b"abc").unwrap();
    s.sync(t, f, false).unwrap();
    let table = s.metrics().unwrap().render_table();
    for op in ["open", "write", "fsync", "f2fs:", "ftl:"] {
        assert!(table.contains(op), "{op} missing:\n{table}");
    }
}

#[test]
fn config_toml_round_trip_and_errors() {
    let c = StackConfig::preset("default").unwrap();
    let text = c.to_toml_string();
    assert_eq!(StackConfig::from_toml_str(&text, "x.toml").unwrap(), c);
    let err = StackConfig::from_toml_str("name = 3", "bad.toml").unwrap_err();
    assert!(err.to_string().contains("bad.toml"), "{err}");
    assert!(StackConfig::preset("nope").is_err());
}

/// Golden counters: the fixed workload of `workload_json` gives exactly these F2FS blocks
/// by kind and NAND programs/erases. The cache's writeback hint is visible here: small
/// files (at most 16 dirty pages) land in the hot data log, the 25-page file in the warm
/// one, small fsync'd overwrites go in place (`ipu_data_blocks`), and the two idle
/// minutes give one background checkpoint. A change here is a change in modelled behaviour:
/// update the figures only with a reason in the commit message.
#[test]
fn golden_counters() {
    let json: serde_json::Value = serde_json::from_str(&workload_json()).unwrap();
    let f = &json["f2fs"];
    let d = &json["ftl"];
    let got = [
        ("data_blocks", f["data_blocks"].as_u64().unwrap()),
        ("node_blocks", f["node_blocks"].as_u64().unwrap()),
        (
            "checkpoint_blocks",
            f["checkpoint_blocks"].as_u64().unwrap(),
        ),
        ("ipu_data_blocks", f["ipu_data_blocks"].as_u64().unwrap()),
        (
            "hot_data_log_blocks",
            f["per_log_blocks"][0].as_u64().unwrap(),
        ),
        (
            "warm_data_log_blocks",
            f["per_log_blocks"][1].as_u64().unwrap(),
        ),
        ("fsyncs", f["fsyncs"].as_u64().unwrap()),
        ("checkpoints", f["checkpoints"].as_u64().unwrap()),
        ("bg_checkpoints", f["bg_checkpoints"].as_u64().unwrap()),
        ("host_write_lbas", d["host_write_lbas"].as_u64().unwrap()),
        ("page_programs", d["page_programs"].as_u64().unwrap()),
        ("erases_gc", d["erases_gc"].as_u64().unwrap()),
    ];
    println!("{got:?}");
    assert_eq!(got, GOLDEN);
}

const GOLDEN: [(&str, u64); 12] = [
    ("data_blocks", 69),
    ("node_blocks", 18),
    ("checkpoint_blocks", 30),
    ("ipu_data_blocks", 5),
    ("hot_data_log_blocks", 44),
    ("warm_data_log_blocks", 25),
    ("fsyncs", 8),
    ("checkpoints", 6),
    ("bg_checkpoints", 1),
    ("host_write_lbas", 9870),
    ("page_programs", 9870),
    ("erases_gc", 0),
];

/// SQLite (Android preset) with power cut at several NAND operations: after recovery the
/// database passes integrity_check and holds every transaction whose COMMIT returned, plus
/// at most the one in flight.
#[test]
fn sqlite_cut_at_random_points_keeps_every_commit() {
    let cfg = SqliteConfig::android();
    for cut_after in [20u64, 100, 250] {
        let shared = SharedStack::new(stack());
        let committed = {
            let vfs = SimVfs::register(Box::new(shared.clone()), 7, 20_000).unwrap();
            let db = SimDb::open(&vfs, "/app.db", &cfg).unwrap();
            db.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
                .unwrap();
            shared.lock().arm_power_cut(cut_after).unwrap();
            let mut committed = 0i64;
            for txn in 0..40 {
                let batch = format!(
                    "BEGIN; {} COMMIT;",
                    (0..10)
                        .map(|r| format!(
                            "INSERT INTO t (v) VALUES ('{txn}/{r} {}');",
                            "y".repeat(200)
                        ))
                        .collect::<String>()
                );
                if db.execute_batch(&batch).is_err() {
                    break;
                }
                committed += 10;
            }
            committed
        };
        assert!(committed < 400, "cut after {cut_after} never fired");
        shared.lock().power_cut();
        shared.lock().recover().unwrap();
        let vfs = SimVfs::register(Box::new(shared.clone()), 8, 20_000).unwrap();
        vfs.advance_to(shared.lock().now_ns());
        let db = SimDb::open(&vfs, "/app.db", &cfg).unwrap();
        let ok: String = db
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ok, "ok", "cut after {cut_after}");
        let rows: i64 = db
            .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert!(
            rows == committed || rows == committed + 10,
            "cut after {cut_after}: {rows} rows, {committed} committed"
        );
    }
}

/// A full file system under the personas' stack: a writeback F2FS cannot place fails,
/// the data is lost, and the file's next sync reports it once (the page cache's rule, as
/// Linux's errseq); nothing is wedged: after shrinking and deleting, writes work again.
#[test]
fn a_full_file_system_reports_the_writeback_error_at_the_next_sync_once() {
    let mut config = StackConfig::preset("default").unwrap();
    config.device.nand.geometry.blocks_per_plane = 1024;
    let mut s = Stack::new(config).unwrap();
    let (f, mut t) = s.open(0, "/big", CREATE).unwrap();
    let chunk = vec![0x5au8; 1 << 20];
    let mut offset = 0u64;
    let error = loop {
        t = s.write_at(t, f, offset, &chunk).unwrap();
        offset += chunk.len() as u64;
        match s.sync(t, f, true) {
            Ok(done) => t = done,
            Err(e) => break e,
        }
        assert!(offset < 1 << 30, "the device is far smaller");
    };
    // ENOSPC, typed (SQLite's SQLITE_FULL), as the kernel's fsync reports it.
    assert!(matches!(error, FileError::NoSpace(_)), "{error}");
    assert!(error.to_string().contains("no space"), "{error}");
    let cache = s.metrics().unwrap().cache;
    assert!(cache.writeback_errors > 0 && cache.writeback_pages_lost > 0);
    // Reported once: the next sync of the file has nothing to report.
    let t = s.sync(s.now_ns(), f, true).unwrap();
    let t = s.truncate(t, f, 0).unwrap();
    let t = s.close(t, f).unwrap();
    let t = s.delete(t, "/big", true).unwrap();
    let (g, t) = s.open(t, "/again", CREATE).unwrap();
    let t = s.write_at(t, g, 0, &chunk).unwrap();
    let t = s.sync(t, g, false).unwrap();
    s.close(t, g).unwrap();
    assert_eq!(read_all(&mut s, "/again"), chunk);
}
