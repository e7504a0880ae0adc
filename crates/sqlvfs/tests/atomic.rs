//! SQLite's batch atomic write through the VFS on the in-memory file system with atomic
//! writes on (`MemFsConfig::atomic_write`): the build has it, rollback-journal commits
//! become `BEGIN/COMMIT_ATOMIC_WRITE` with no journal file, whole transactions survive
//! power cuts, and with the option off nothing changes.

use flashstack_sqlvfs::{
    CallOp, FileApi, FileError, JournalMode, MemFs, MemFsConfig, OpenFlags, SimDb, SimVfs,
    SqliteConfig,
};

const DB: &str = "/app.db";

fn memfs(seed: u64, atomic_write: bool) -> MemFs {
    MemFs::new(
        seed,
        MemFsConfig {
            atomic_write,
            ..MemFsConfig::default()
        },
    )
}

fn transaction(txn: usize) -> String {
    let rows: String = (0..8)
        .map(|r| {
            format!(
                "INSERT INTO t (txn, v) VALUES ({txn}, '{r} {}');",
                "q".repeat(900)
            )
        })
        .collect();
    format!("BEGIN; {rows} UPDATE meta SET n = n + 1; COMMIT;")
}

fn setup(db: &SimDb) {
    db.execute_batch(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, txn INTEGER, v TEXT); \
         CREATE TABLE meta (n INTEGER); INSERT INTO meta VALUES (0);",
    )
    .unwrap();
}

#[test]
fn the_bundled_sqlite_is_built_with_batch_atomic_write() {
    let vfs = SimVfs::register(Box::new(memfs(1, false)), 1, 5_000).unwrap();
    let db = SimDb::open(&vfs, DB, &SqliteConfig::sqlite()).unwrap();
    let options: Vec<String> = db
        .prepare("PRAGMA compile_options")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(
        options.iter().any(|o| o == "ENABLE_BATCH_ATOMIC_WRITE"),
        "{options:?}"
    );
}

#[test]
fn rollback_journal_commits_become_atomic_writes_only_when_offered() {
    for mode in [
        JournalMode::Delete,
        JournalMode::Truncate,
        JournalMode::Persist,
    ] {
        for atomic in [false, true] {
            let fs = memfs(3, atomic);
            let vfs = SimVfs::register(Box::new(fs.clone()), 3, 5_000).unwrap();
            let cfg = SqliteConfig::sqlite().with_journal_mode(mode);
            let db = SimDb::open(&vfs, DB, &cfg).unwrap();
            setup(&db);
            fs.clear_log();
            for txn in 0..10 {
                db.execute_batch(&transaction(txn)).unwrap();
            }
            let log = fs.log();
            // Journal writes, syncs, truncates and deletes. (SQLite still looks for a hot
            // journal at each transaction: it exists after the first transaction of an
            // empty database, which cannot be batched, in TRUNCATE and PERSIST modes.)
            let journal = log
                .iter()
                .filter(|c| {
                    c.path.ends_with("-journal")
                        && matches!(
                            c.op,
                            CallOp::Write
                                | CallOp::Truncate
                                | CallOp::Fsync
                                | CallOp::Fdatasync
                                | CallOp::Delete
                        )
                })
                .count();
            let commits = log.iter().filter(|c| c.op == CallOp::AtomicCommit).count();
            if atomic {
                assert_eq!((journal, commits), (0, 10), "{mode:?}");
            } else {
                assert!(journal >= 30, "{mode:?}: {journal} journal calls");
                assert_eq!(commits, 0, "{mode:?}");
            }
            let ok: String = db
                .query_row("PRAGMA integrity_check", [], |r| r.get(0))
                .unwrap();
            assert_eq!(ok, "ok");
        }
    }
}

/// A cut at every call of a run: every transaction whose COMMIT returned survives, and
/// none survives in part.
#[test]
fn power_cuts_keep_whole_transactions() {
    let cfg = SqliteConfig::sqlite();
    let mut fired = 0;
    for cut_at in (3..400).step_by(7) {
        let fs = memfs(cut_at as u64, true);
        let committed = {
            let vfs = SimVfs::register(Box::new(fs.clone()), 5, 5_000).unwrap();
            let db = SimDb::open(&vfs, DB, &cfg).unwrap();
            setup(&db);
            db.execute_batch(&transaction(0)).unwrap();
            fs.arm_power_cut(fs.log_len() + cut_at);
            let mut committed = 1i64;
            for txn in 1..40 {
                if db.execute_batch(&transaction(txn)).is_err() {
                    break;
                }
                committed += 1;
            }
            committed
        };
        if fs.powered() {
            continue;
        }
        fired += 1;
        fs.power_on();
        let vfs = SimVfs::register(Box::new(fs.clone()), 6, 5_000).unwrap();
        let db = SimDb::open(&vfs, DB, &cfg).unwrap();
        let ok: String = db
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ok, "ok", "cut at {cut_at}");
        let (rows, txns, n): (i64, i64, i64) = db
            .query_row(
                "SELECT COUNT(*), COUNT(DISTINCT txn), (SELECT n FROM meta) FROM t",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        assert_eq!((rows, n), (txns * 8, txns), "cut at {cut_at}");
        assert!(
            txns == committed || txns == committed + 1,
            "cut at {cut_at}: {txns} of {committed} committed"
        );
    }
    assert!(fired > 20, "{fired} cuts fired");
}

#[test]
fn abort_restores_what_the_file_held_at_begin() {
    let mut fs = memfs(1, true);
    let create = OpenFlags {
        create: true,
        ..OpenFlags::default()
    };
    let (f, t) = fs.open(0, "/f", create).unwrap();
    let t = fs.write_at(t, f, 0, &[1u8; 10_000]).unwrap();
    let t = fs.atomic_begin(t, f).unwrap();
    let t = fs.write_at(t, f, 5_000, &[2u8; 10_000]).unwrap();
    let t = fs.truncate(t, f, 3_000).unwrap();
    let t = fs.write_at(t, f, 4_000, &[3u8; 100]).unwrap();
    let t = fs.atomic_abort(t, f).unwrap();
    assert_eq!(fs.contents("/f").unwrap(), vec![1u8; 10_000]);
    // The last close aborts too.
    let t = fs.atomic_begin(t, f).unwrap();
    let t = fs.write_at(t, f, 0, &[5u8; 20_000]).unwrap();
    let t = fs.close(t, f).unwrap();
    assert_eq!(fs.contents("/f").unwrap(), vec![1u8; 10_000]);
    let (f, t) = fs.open(t, "/f", OpenFlags::default()).unwrap();
    let t = fs.atomic_begin(t, f).unwrap();
    let t = fs.write_at(t, f, 0, &[4u8; 100]).unwrap();
    fs.atomic_commit(t, f).unwrap();
    fs.power_cut();
    fs.power_on();
    let mut expect = vec![1u8; 10_000];
    expect[..100].fill(4);
    assert_eq!(fs.contents("/f").unwrap(), expect);
    let mut off = memfs(1, false);
    let (f, t) = off.open(0, "/g", create).unwrap();
    assert!(!off.atomic_write_supported());
    assert!(matches!(
        off.atomic_begin(t, f),
        Err(FileError::Unsupported(_))
    ));
}
