//! F2FS atomic writes through the whole stack (`fs.atomic_write = true`): SQLite's batch
//! atomic write replaces the rollback journal, commits survive power cuts all or nothing,
//! an abort leaves the old content, and the images pass `fsck.f2fs -f`.

mod common;
use common::assert_fsck_clean;

use flashstack_sqlvfs::{FileApi, FileError, JournalMode, OpenFlags, SimDb, SimVfs, SqliteConfig};
use flashstack_stack::{SharedStack, Stack, StackConfig};

const CREATE: OpenFlags = OpenFlags {
    create: true,
    exclusive: false,
    read_only: false,
    delete_on_close: false,
};

fn stack(atomic: bool) -> Stack {
    let mut config = StackConfig::preset("default").unwrap();
    config.fs.atomic_write = atomic;
    // 256 MiB: room for every test here, and each fsck reads a small image.
    config.device.nand.geometry.blocks_per_plane = 1024;
    Stack::new(config).unwrap()
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

fn delete_mode() -> SqliteConfig {
    SqliteConfig::sqlite().with_journal_mode(JournalMode::Delete)
}

/// One transaction: ten rows tagged with the transaction number, and a counter row
/// rewritten in place (an update of an existing page).
fn transaction(txn: usize) -> String {
    let rows: String = (0..10)
        .map(|r| {
            format!(
                "INSERT INTO t (txn, v) VALUES ({txn}, '{r} {}');",
                "z".repeat(700)
            )
        })
        .collect();
    format!("BEGIN; {rows} UPDATE meta SET n = n + 1; COMMIT;")
}

/// The tables, then 1400 pages of filler: the database outgrows the 923 addresses an
/// F2FS inode holds, so a transaction's new pages are mapped by a direct node while the
/// first pages (the counter) stay in the inode, and its commit writes a chain of two
/// nodes (the one case where the fsync mark on the last node matters).
fn create_schema(db: &SimDb) {
    db.execute_batch(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, txn INTEGER, v TEXT); \
         CREATE INDEX t_txn ON t (txn); \
         CREATE TABLE meta (n INTEGER); INSERT INTO meta VALUES (0); \
         CREATE TABLE filler (b BLOB); \
         WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1400) \
         INSERT INTO filler SELECT zeroblob(3000) FROM c;",
    )
    .unwrap();
}

#[test]
fn sqlite_commits_with_atomic_writes_and_no_journal() {
    for atomic in [false, true] {
        let shared = SharedStack::new(stack(atomic));
        let vfs = SimVfs::register(Box::new(shared.clone()), 7, 20_000).unwrap();
        let db = SimDb::open(&vfs, "/app.db", &delete_mode()).unwrap();
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
        create_schema(&db);
        shared.lock().reset_measurement().unwrap();
        for txn in 0..20 {
            db.execute_batch(&transaction(txn)).unwrap();
        }
        let ok: String = db
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ok, "ok");
        let m = shared.lock().metrics().unwrap();
        let count = |op: &str| m.ops.get(op).map_or(0, |o| o.count);
        if atomic {
            // Every commit is one atomic write; no journal is created or deleted.
            assert_eq!(count("atomic_commit"), 20);
            assert_eq!(count("delete"), 0);
            assert_eq!(count("fsync"), 20, "the pager's sync after the commit");
            assert_eq!(m.f2fs.atomic_commits, 20);
        } else {
            assert_eq!(count("atomic_commit"), 0);
            assert_eq!(count("delete"), 20);
        }
        let mut s = shared.lock();
        let t = s.now_ns();
        assert!(!s.exists(t, "/app.db-journal").unwrap().0);
        drop(s);
        db.close().unwrap();
        let mut s = shared.lock();
        s.power_cut();
        s.recover().unwrap();
        assert_fsck_clean(&mut s, &format!("clean-{atomic}"));
    }
}

/// Power cut at many NAND operations while transactions commit by atomic writes: after
/// recovery every transaction whose COMMIT returned is there, none in part, the database
/// passes integrity_check, and the image passes fsck.f2fs.
#[test]
fn power_cuts_during_atomic_commits_keep_whole_transactions() {
    let cfg = delete_mode();
    for (k, cut_after) in [3u64, 11, 29, 47, 90, 171, 301].into_iter().enumerate() {
        let shared = SharedStack::new(stack(true));
        let committed = {
            let vfs = SimVfs::register(Box::new(shared.clone()), 7 + k as u64, 20_000).unwrap();
            let db = SimDb::open(&vfs, "/app.db", &cfg).unwrap();
            create_schema(&db);
            db.execute_batch(&transaction(0)).unwrap();
            shared.lock().sync_all(vfs.now_ns()).unwrap();
            shared.lock().arm_power_cut(cut_after).unwrap();
            let mut committed = 1usize;
            for txn in 1..60 {
                if db.execute_batch(&transaction(txn)).is_err() {
                    break;
                }
                committed += 1;
            }
            committed
        };
        assert!(committed < 60, "cut after {cut_after} never fired");
        let mut s = shared.lock();
        s.power_cut();
        s.recover().unwrap();
        drop(s);
        let vfs = SimVfs::register(Box::new(shared.clone()), 100 + k as u64, 20_000).unwrap();
        vfs.advance_to(shared.lock().now_ns());
        let db = SimDb::open(&vfs, "/app.db", &cfg).unwrap();
        let ok: String = db
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ok, "ok", "cut after {cut_after}");
        let (rows, txns, n): (i64, i64, i64) = db
            .query_row(
                "SELECT COUNT(*), COUNT(DISTINCT txn), (SELECT n FROM meta) FROM t",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        let partial: i64 = db
            .query_row(
                "SELECT COUNT(*) FROM (SELECT txn FROM t GROUP BY txn HAVING COUNT(*) <> 10)",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(partial, 0, "cut after {cut_after}: a partial transaction");
        assert_eq!((rows, n), (txns * 10, txns), "cut after {cut_after}");
        let c = committed as i64;
        assert!(
            txns == c || txns == c + 1,
            "cut after {cut_after}: {txns} transactions, {committed} committed"
        );
        db.close().unwrap();
        drop(vfs);
        assert_fsck_clean(&mut shared.lock(), &format!("cut-{cut_after}"));
    }
}

#[test]
fn abort_leaves_the_old_content_and_a_cut_before_commit_too() {
    let mut s = stack(true);
    let old: Vec<u8> = (0..3 * 4096 + 100).map(|i| (i % 251) as u8).collect();
    let (f, t) = s.open(s.now_ns(), "/f", CREATE).unwrap();
    let t = s.write_at(t, f, 0, &old).unwrap();
    let t = s.sync(t, f, false).unwrap();
    // Begin, overwrite, grow, shrink: visible to reads, then aborted.
    let t = s.atomic_begin(t, f).unwrap();
    let t = s.write_at(t, f, 4000, &[7u8; 9000]).unwrap();
    let t = s.truncate(t, f, 5000).unwrap();
    let t = s.write_at(t, f, 20_000, b"tail").unwrap();
    let (size, t) = s.size(t, f).unwrap();
    assert_eq!(size, 20_004);
    let mut buf = vec![0u8; 20_004];
    let (n, t) = s.read_at(t, f, 0, &mut buf).unwrap();
    assert_eq!(n, 20_004);
    assert_eq!(&buf[..4000], &old[..4000]);
    assert!(buf[4000..5000].iter().all(|&b| b == 7));
    assert!(buf[5000..20_000].iter().all(|&b| b == 0));
    assert_eq!(&buf[20_000..], b"tail");
    let t = s.atomic_abort(t, f).unwrap();
    let (size, t) = s.size(t, f).unwrap();
    assert_eq!(size, old.len() as u64);
    s.close(t, f).unwrap();
    assert_eq!(read_all(&mut s, "/f"), old);

    // A commit: the new content, also after a cut.
    let (f, t) = s.open(s.now_ns(), "/f", OpenFlags::default()).unwrap();
    let t = s.atomic_begin(t, f).unwrap();
    let t = s.write_at(t, f, 100, &[9u8; 5000]).unwrap();
    let t = s.atomic_commit(t, f).unwrap();
    let mut new = old.clone();
    new[100..5100].fill(9);
    // Staged, then the last close: aborted (F2FS's release).
    let t = s.atomic_begin(t, f).unwrap();
    let t = s.write_at(t, f, 0, &[2u8; 12_000]).unwrap();
    s.close(t, f).unwrap();
    assert_eq!(read_all(&mut s, "/f"), new);
    // Staged but never committed: lost at the cut.
    let (f, t) = s.open(s.now_ns(), "/f", OpenFlags::default()).unwrap();
    let t = s.atomic_begin(t, f).unwrap();
    s.write_at(t, f, 0, &[1u8; 12_000]).unwrap();
    s.power_cut();
    s.recover().unwrap();
    assert_eq!(read_all(&mut s, "/f"), new);
    assert_fsck_clean(&mut s, "abort");
}

#[test]
fn without_the_option_atomic_writes_are_unsupported() {
    let mut s = stack(false);
    assert!(!s.atomic_write_supported());
    let (f, t) = s.open(s.now_ns(), "/f", CREATE).unwrap();
    assert!(matches!(
        s.atomic_begin(t, f),
        Err(FileError::Unsupported(_))
    ));
}
