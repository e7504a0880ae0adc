//! Real SQLite through the VFS on the in-memory file system: journal modes, power cuts,
//! determinism and the fsync pattern.

use std::rc::Rc;

use flashstack_sqlvfs::{
    CallOp, FileApi, JournalMode, MemFs, MemFsConfig, SimDb, SimVfs, SplitMix64, SqliteConfig,
    Synchronous,
};
use rusqlite::params;

const DB: &str = "/data/data/com.example.messaging/databases/msg.db";
const MODES: [JournalMode; 4] = [
    JournalMode::Delete,
    JournalMode::Truncate,
    JournalMode::Persist,
    JournalMode::Wal,
];
const CPU_NS: u64 = 5_000;

/// The directories `DB` lives in (MemFs, like a real file system, creates files only in
/// existing directories).
fn with_db_dirs(fs: MemFs) -> MemFs {
    let mut api = fs.clone();
    let dir = DB.rsplit_once('/').map_or("", |(d, _)| d);
    let mut at = String::new();
    for part in dir.split('/').filter(|p| !p.is_empty()) {
        at = format!("{at}/{part}");
        api.mkdir(0, &at).unwrap();
    }
    fs
}

fn stack(fs_seed: u64, vfs_seed: u64) -> (MemFs, Rc<SimVfs>) {
    let fs = with_db_dirs(MemFs::new(fs_seed, MemFsConfig::default()));
    let vfs = SimVfs::register(Box::new(fs.clone()), vfs_seed, CPU_NS).unwrap();
    (fs, vfs)
}

fn config(mode: JournalMode, sync: Synchronous) -> SqliteConfig {
    SqliteConfig::android()
        .with_journal_mode(mode)
        .with_synchronous(sync)
}

fn schema(db: &SimDb) -> rusqlite::Result<()> {
    db.execute_batch(
        "BEGIN;
         CREATE TABLE IF NOT EXISTS contacts (
             id INTEGER PRIMARY KEY, name TEXT NOT NULL, phone TEXT, avatar BLOB);
         CREATE TABLE IF NOT EXISTS conversations (
             id INTEGER PRIMARY KEY, title TEXT NOT NULL, last_ts INTEGER NOT NULL DEFAULT 0,
             unread INTEGER NOT NULL DEFAULT 0);
         CREATE TABLE IF NOT EXISTS messages (
             id INTEGER PRIMARY KEY, conv_id INTEGER NOT NULL REFERENCES conversations(id),
             txn INTEGER NOT NULL, sender INTEGER NOT NULL REFERENCES contacts(id),
             body TEXT NOT NULL, ts INTEGER NOT NULL, status INTEGER NOT NULL);
         CREATE INDEX IF NOT EXISTS messages_conv_ts ON messages(conv_id, ts);
         CREATE INDEX IF NOT EXISTS messages_txn ON messages(txn);
         INSERT OR IGNORE INTO contacts (id, name, phone) VALUES
             (1, 'Ada', '+44 20 7946 0001'), (2, 'Grace', '+1 202 555 0102'),
             (3, 'Linus', '+358 9 555 0103'), (4, 'Me', '+49 30 555 0104');
         INSERT OR IGNORE INTO conversations (id, title) VALUES
             (1, 'Ada'), (2, 'Grace'), (3, 'Linus'), (4, 'Team');
         COMMIT;",
    )
}

const WORDS: [&str; 16] = [
    "ok", "see", "you", "at", "the", "station", "tomorrow", "lunch", "meeting", "moved", "to",
    "3pm", "thanks!", "call", "me", "later",
];

fn body(rng: &mut SplitMix64) -> String {
    let n = 3 + rng.next() % 25;
    let mut s = String::new();
    for i in 0..n {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(WORDS[(rng.next() % 16) as usize]);
    }
    s
}

/// One user transaction: `rows` messages into one conversation plus its summary update.
fn insert_txn(db: &SimDb, txn: u64, rows: u64, rng: &mut SplitMix64) -> rusqlite::Result<()> {
    let tx = db.unchecked_transaction()?;
    let conv = 1 + txn % 4;
    for r in 0..rows {
        let ts = 1_767_225_600_000 + (txn * 1000 + r) as i64;
        tx.execute(
            "INSERT INTO messages (conv_id, txn, sender, body, ts, status) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![conv as i64, txn as i64, (1 + rng.next() % 4) as i64, body(rng), ts, 1],
        )?;
    }
    tx.execute(
        "UPDATE conversations SET last_ts = ?1, unread = unread + ?2 WHERE id = ?3",
        params![(txn * 1000) as i64, rows as i64, conv as i64],
    )?;
    tx.commit()
}

fn integrity(db: &SimDb) -> String {
    db.query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap()
}

/// (distinct transactions, rows) and a check that every transaction is whole.
fn committed_txns(db: &SimDb, rows_per_txn: u64) -> (u64, u64) {
    let mut st = db
        .prepare("SELECT txn, COUNT(*) FROM messages GROUP BY txn ORDER BY txn")
        .unwrap();
    let groups: Vec<(i64, i64)> = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for (i, (txn, n)) in groups.iter().enumerate() {
        assert_eq!(*txn, i as i64, "transactions form a prefix");
        assert_eq!(*n as u64, rows_per_txn, "transaction {txn} is whole");
    }
    let rows = groups.iter().map(|g| g.1 as u64).sum();
    (groups.len() as u64, rows)
}

/// Opens, creates the schema and runs `txns` transactions; returns how many committed
/// before the first error (the power cut).
fn workload(vfs: &Rc<SimVfs>, cfg: &SqliteConfig, txns: u64, rows: u64) -> u64 {
    let Ok(db) = SimDb::open(vfs, DB, cfg) else {
        return 0;
    };
    if schema(&db).is_err() {
        return 0;
    }
    let mut rng = SplitMix64::new(7);
    for t in 0..txns {
        if insert_txn(&db, t, rows, &mut rng).is_err() {
            return t;
        }
    }
    txns
}

#[test]
fn thousands_of_rows_in_every_journal_mode() {
    for mode in MODES {
        for sync in [Synchronous::Full, Synchronous::Normal] {
            let (fs, vfs) = stack(1, 2);
            let cfg = config(mode, sync);
            let (txns, rows) = if sync == Synchronous::Full {
                (40, 50)
            } else {
                (10, 100)
            };
            {
                let db = SimDb::open(&vfs, DB, &cfg).unwrap();
                let jm: String = db
                    .query_row("PRAGMA journal_mode", [], |r| r.get(0))
                    .unwrap();
                assert_eq!(jm.to_uppercase(), mode.as_sql());
                let ps: i64 = db.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap();
                assert_eq!(ps, 4096);
                schema(&db).unwrap();
                let mut rng = SplitMix64::new(7);
                for t in 0..txns {
                    insert_txn(&db, t, rows, &mut rng).unwrap();
                }
                assert_eq!(integrity(&db), "ok");
                db.close().unwrap();
            }
            let t_before = vfs.now_ns();
            let db = SimDb::open(&vfs, DB, &cfg).unwrap();
            assert_eq!(integrity(&db), "ok");
            assert_eq!(committed_txns(&db, rows), (txns, txns * rows));
            let unread: i64 = db
                .query_row("SELECT SUM(unread) FROM conversations", [], |r| r.get(0))
                .unwrap();
            assert_eq!(unread as u64, txns * rows);
            // Virtual time moved and SQLite's clock comes from it (2026-01-01 + elapsed).
            let now: String = db
                .query_row("SELECT date('now')", [], |r| r.get(0))
                .unwrap();
            assert_eq!(now, "2026-01-01");
            assert!(vfs.now_ns() > t_before);
            let files = fs.file_names();
            match mode {
                JournalMode::Delete => assert_eq!(files, vec![DB.to_owned()]),
                JournalMode::Wal => assert!(files.contains(&format!("{DB}-wal"))),
                _ => assert!(files.contains(&format!("{DB}-journal"))),
            }
            assert!(fs.contents(DB).unwrap().len() >= 4096 * 10);
        }
    }
}

/// What recovery found after a power cut: the transactions present, or why the database
/// is not an intact prefix of whole transactions.
fn recovered(fs: &MemFs, cfg: &SqliteConfig, rows: u64) -> Result<u64, String> {
    let vfs = SimVfs::register(Box::new(fs.clone()), 4, CPU_NS).map_err(|e| e.to_string())?;
    let db = SimDb::open(&vfs, DB, cfg).map_err(|e| e.to_string())?;
    let ic: String = db
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .map_err(|e| e.to_string())?;
    if ic != "ok" {
        return Err(ic);
    }
    let tables: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE name = 'messages'",
            [],
            |r| r.get(0),
        )
        .map_err(|e| e.to_string())?;
    if tables == 0 {
        return Ok(0);
    }
    let mut st = db
        .prepare("SELECT txn, COUNT(*) FROM messages GROUP BY txn ORDER BY txn")
        .map_err(|e| e.to_string())?;
    let groups: Vec<(i64, i64)> = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .and_then(|m| m.collect())
        .map_err(|e| e.to_string())?;
    for (i, (txn, n)) in groups.iter().enumerate() {
        if *txn != i as i64 || *n as u64 != rows {
            return Err(format!("transaction {txn} has {n} rows at position {i}"));
        }
    }
    Ok(groups.len() as u64)
}

struct CutStats {
    cuts: u64,
    /// Cuts after which fewer transactions were present than had committed.
    lost: u64,
    /// Cuts after which the database was not an intact prefix of whole transactions.
    broken: u64,
    /// Cuts after which exactly the committed transactions were present.
    exact: u64,
}

/// Runs the workload once to count its calls, then `cuts` times with a power cut at a
/// seeded call, recovering after each.
fn cut_campaign(mode: JournalMode, sync: Synchronous, cuts: u64) -> CutStats {
    const TXNS: u64 = 12;
    const ROWS: u64 = 15;
    let cfg = config(mode, sync);
    let (fs, vfs) = stack(0, 3);
    assert_eq!(workload(&vfs, &cfg, TXNS, ROWS), TXNS);
    let calls = fs.log_len();
    let mut pick = SplitMix64::new(mode as u64 * 31 + sync as u64);
    let mut st = CutStats {
        cuts: 0,
        lost: 0,
        broken: 0,
        exact: 0,
    };
    for i in 0..cuts {
        let cut_at = 1 + (pick.next() % calls as u64) as usize;
        let (fs, vfs) = stack(1000 + i, 3);
        fs.arm_power_cut(cut_at);
        let committed = workload(&vfs, &cfg, TXNS, ROWS);
        drop(vfs);
        assert!(
            !fs.powered(),
            "{mode:?}: the cut at call {cut_at} of {calls} fired"
        );
        fs.power_on();
        st.cuts += 1;
        match recovered(&fs, &cfg, ROWS) {
            Ok(present) => {
                assert!(
                    present <= committed + 1,
                    "{mode:?}/{sync:?} cut at {cut_at}: {present} present, {committed} committed"
                );
                if present < committed {
                    st.lost += 1;
                }
                if present == committed {
                    st.exact += 1;
                }
            }
            Err(_) => st.broken += 1,
        }
    }
    st
}

/// Power cuts at 100 seeded points of the call log per configuration; after each,
/// recovery must give an intact database of whole transactions holding every transaction
/// whose COMMIT returned (synchronous FULL; DELETE needs EXTRA, see below).
#[test]
fn power_cuts_keep_committed_transactions() {
    for (mode, sync) in [
        (JournalMode::Delete, Synchronous::Extra),
        (JournalMode::Truncate, Synchronous::Full),
        (JournalMode::Persist, Synchronous::Full),
        (JournalMode::Wal, Synchronous::Full),
    ] {
        let st = cut_campaign(mode, sync, 100);
        assert_eq!((st.broken, st.lost), (0, 0), "{mode:?}/{sync:?}");
        assert!(st.exact > 50, "{mode:?}/{sync:?}: {} exact", st.exact);
    }
}

/// Where SQLite promises less, the model shows it: DELETE + FULL does not sync the
/// directory after unlinking the journal, so a cut can roll back the last commit (never
/// more); WAL + NORMAL can lose recent commits; with synchronous OFF, cuts corrupt.
#[test]
fn power_cuts_where_sqlite_promises_less() {
    let st = cut_campaign(JournalMode::Delete, Synchronous::Full, 100);
    assert_eq!(st.broken, 0);
    assert!(
        st.lost > 0,
        "DELETE/FULL: a cut rolled back the last commit"
    );
    let st = cut_campaign(JournalMode::Wal, Synchronous::Normal, 100);
    assert_eq!(st.broken, 0);
    assert!(st.lost > 0, "WAL/NORMAL: a cut lost committed transactions");
    let st = cut_campaign(JournalMode::Truncate, Synchronous::Off, 100);
    assert!(st.broken + st.lost > 0, "OFF: cuts must show damage");
}

/// FNV-1a, to compare file bytes without printing them.
fn digest(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325, |h, &x| {
        (h ^ u64::from(x)).wrapping_mul(0x100_0000_01b3)
    })
}

/// (file name, length, digest) of every file while the connection is still open, and the
/// call log as JSON.
fn run_once(mode: JournalMode, vfs_seed: u64) -> (Vec<(String, usize, u64)>, String) {
    let (fs, vfs) = stack(5, vfs_seed);
    let cfg = config(mode, Synchronous::Full);
    let db = SimDb::open(&vfs, DB, &cfg).unwrap();
    schema(&db).unwrap();
    let mut rng = SplitMix64::new(7);
    for t in 0..8 {
        insert_txn(&db, t, 30, &mut rng).unwrap();
    }
    let files = fs
        .file_names()
        .into_iter()
        .map(|n| {
            let c = fs.contents(&n).unwrap();
            (n, c.len(), digest(&c))
        })
        .collect();
    db.close().unwrap();
    (files, serde_json::to_string(&fs.log()).unwrap())
}

#[test]
fn same_seed_same_bytes_and_call_log() {
    for mode in MODES {
        let a = run_once(mode, 11);
        let b = run_once(mode, 11);
        assert_eq!(a.0, b.0, "{mode:?}: file bytes");
        assert_eq!(a.1, b.1, "{mode:?}: call log");
        let c = run_once(mode, 12);
        if matches!(mode, JournalMode::Persist | JournalMode::Wal) {
            // The seed reaches SQLite's randomness (journal nonce, WAL salts) ...
            assert_ne!(
                a.0, c.0,
                "{mode:?}: another seed changes the journal/WAL bytes"
            );
        }
        // ... but never the database file or the call pattern.
        assert_eq!(
            a.0[0], c.0[0],
            "{mode:?}: database bytes do not depend on the seed"
        );
        assert_eq!(a.1, c.1, "{mode:?}: call log does not depend on the seed");
    }
}

type Pattern = Vec<(CallOp, &'static str)>;

/// The durability calls of one committed transaction, as (op, file suffix).
fn commit_pattern(mode: JournalMode, sync: Synchronous) -> Vec<(CallOp, &'static str)> {
    let (fs, vfs) = stack(9, 9);
    let db = SimDb::open(&vfs, DB, &config(mode, sync)).unwrap();
    schema(&db).unwrap();
    let mut rng = SplitMix64::new(1);
    insert_txn(&db, 0, 5, &mut rng).unwrap();
    fs.clear_log();
    insert_txn(&db, 1, 5, &mut rng).unwrap();
    fs.log()
        .iter()
        .filter(|c| {
            matches!(
                c.op,
                CallOp::Fsync | CallOp::Fdatasync | CallOp::Delete | CallOp::Truncate
            )
        })
        .map(|c| {
            let file = if c.path.ends_with("-journal") {
                "journal"
            } else if c.path.ends_with("-wal") {
                "wal"
            } else {
                "db"
            };
            (c.op, file)
        })
        .collect()
}

#[test]
fn fsync_pattern_per_journal_mode() {
    use CallOp::*;
    let (j, db, jd) = ((Fsync, "journal"), (Fsync, "db"), (Fdatasync, "journal"));
    // Rollback journal, FULL, no SAFE_APPEND: the journal is synced, its header (record
    // count) written and synced again, then the database, then the commit point (unlink,
    // truncate + sync, or zeroed header + fdatasync). NORMAL syncs the journal once.
    let cases: [(JournalMode, Synchronous, Pattern); 8] = [
        (
            JournalMode::Delete,
            Synchronous::Full,
            vec![j, j, db, (Delete, "journal")],
        ),
        (
            JournalMode::Delete,
            Synchronous::Normal,
            vec![j, db, (Delete, "journal")],
        ),
        (
            JournalMode::Truncate,
            Synchronous::Full,
            vec![j, j, db, (Truncate, "journal"), j],
        ),
        (
            JournalMode::Truncate,
            Synchronous::Normal,
            vec![j, db, (Truncate, "journal")],
        ),
        (JournalMode::Persist, Synchronous::Full, vec![j, j, db, jd]),
        (JournalMode::Persist, Synchronous::Normal, vec![j, db, jd]),
        // WAL: FULL syncs the WAL at every commit; NORMAL only around checkpoints.
        (JournalMode::Wal, Synchronous::Full, vec![(Fsync, "wal")]),
        (JournalMode::Wal, Synchronous::Normal, vec![]),
    ];
    for (mode, sync, want) in cases {
        assert_eq!(commit_pattern(mode, sync), want, "{mode:?}/{sync:?}");
    }
}

/// A WAL checkpoint syncs the WAL, writes the pages back and syncs the database.
#[test]
fn wal_checkpoint_syncs_wal_then_db() {
    let (fs, vfs) = stack(9, 9);
    let db = SimDb::open(&vfs, DB, &config(JournalMode::Wal, Synchronous::Normal)).unwrap();
    schema(&db).unwrap();
    let mut rng = SplitMix64::new(1);
    insert_txn(&db, 0, 5, &mut rng).unwrap();
    fs.clear_log();
    db.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    let log = fs.log();
    let syncs: Vec<(CallOp, bool)> = log
        .iter()
        .filter(|c| matches!(c.op, CallOp::Fsync | CallOp::Fdatasync))
        .map(|c| (c.op, c.path.ends_with("-wal")))
        .collect();
    assert_eq!(
        syncs,
        vec![(CallOp::Fsync, true), (CallOp::Fsync, false)],
        "{log:?}"
    );
    assert!(log.iter().any(|c| c.op == CallOp::Write && c.path == DB));
}

/// File-system errors come back as SQLite errors (here SQLITE_FULL), never as a panic, and
/// the database stays usable and intact.
#[test]
fn file_system_errors_become_sqlite_errors() {
    let fs = with_db_dirs(MemFs::new(
        1,
        MemFsConfig {
            max_file_bytes: 64 * 1024,
            ..MemFsConfig::default()
        },
    ));
    let vfs = SimVfs::register(Box::new(fs.clone()), 1, CPU_NS).unwrap();
    let db = SimDb::open(&vfs, DB, &config(JournalMode::Truncate, Synchronous::Full)).unwrap();
    schema(&db).unwrap();
    let mut rng = SplitMix64::new(1);
    let mut failed = None;
    for t in 0..100 {
        if let Err(e) = insert_txn(&db, t, 20, &mut rng) {
            failed = Some(e);
            break;
        }
    }
    let e = failed.expect("a 64 KiB file limit stops the inserts");
    assert_eq!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DiskFull),
        "{e}"
    );
    assert_eq!(integrity(&db), "ok");
}

#[test]
fn vfs_instances_have_unique_names_and_separate_files() {
    let (fs_a, a) = stack(1, 1);
    let (fs_b, b) = stack(1, 1);
    assert_ne!(a.name(), b.name());
    let db = SimDb::open(&a, DB, &SqliteConfig::default()).unwrap();
    schema(&db).unwrap();
    db.close().unwrap();
    assert!(fs_a.contents(DB).is_some());
    assert!(fs_b.contents(DB).is_none());
    let db = SimDb::open(&b, DB, &SqliteConfig::default()).unwrap();
    let n: i64 = db
        .query_row("SELECT COUNT(*) FROM sqlite_master", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 0);
}
