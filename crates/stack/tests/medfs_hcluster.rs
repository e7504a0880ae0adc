//! MedFS's HCluster counts the whole stack's system calls (issue 14), as the source counts
//! `__vfs_read` / `__vfs_write` per inode: the page cache reports every read and write
//! call, hit or miss (`Backing::note_call`), and calls into F2FS (misses, writebacks) no
//! longer count on their own. A file written often and then read often through the page
//! cache must leave the read-cold/write-hot class DCM admits. The counts live with the
//! in-memory inode: `drop_caches` evicts a closed file's, and they start over.

use flashstack_f2fs::{DeltaConfig, DeltaMode};
use flashstack_sqlvfs::{FileApi, OpenFlags};
use flashstack_stack::{Stack, StackConfig};

const PAGES: usize = 8;

fn medfs_stack() -> Stack {
    let mut config = StackConfig::preset("ufs31").unwrap();
    config.device.nand.geometry.blocks_per_plane = 40;
    config.device.nand.geometry.pages_per_block = 192;
    config.fs.mount.delta = DeltaConfig::with_mode(DeltaMode::Medfs);
    Stack::new(config).unwrap()
}

#[test]
fn reads_through_the_page_cache_reach_hcluster() {
    let mut s = medfs_stack();
    let create = OpenFlags {
        create: true,
        ..OpenFlags::default()
    };
    let (h, mut t) = s.open(s.now_ns(), "/state.bin", create).unwrap();
    // 48 fsync'd updates: 48 write calls, near the read-cold/write-hot centroid (46.2
    // writes, 5.5 reads).
    for k in 0..48u32 {
        let page = vec![k as u8; PAGES * 4096];
        t = s.write_at(t, h, 0, &page).unwrap();
        t = s.sync(t, h, false).unwrap();
    }
    t = s.close(t, h).unwrap();
    let ino = s.with_fs(|fs| fs.lookup("/state.bin").unwrap()).unwrap();
    let (writes, reads) = s.with_fs(|fs| fs.hcluster_calls(ino)).unwrap();
    assert_eq!(writes, 48, "write calls counted for 48 fsync'd updates");
    assert_eq!(reads, 0, "nothing read yet");
    assert!(s
        .with_fs(|fs| fs.hcluster_read_cold_write_hot(ino))
        .unwrap());

    // 40 whole-file reads: every other one cold (a miss reaching F2FS), the rest hits.
    // The file stays open across the drops, so its inode (and its counts) stays.
    let cache = |s: &Stack| {
        let m = s.metrics().unwrap().cache;
        (m.read_hits, m.read_misses)
    };
    let (hits0, misses0) = cache(&s);
    let (h, t1) = s.open(t, "/state.bin", OpenFlags::default()).unwrap();
    t = t1;
    for k in 0..40 {
        if k % 2 == 0 {
            s.drop_caches().unwrap();
        }
        let mut buf = vec![0u8; PAGES * 4096];
        let (n, t2) = s.read_at(t, h, 0, &mut buf).unwrap();
        assert_eq!(n, buf.len());
        assert!(buf.iter().all(|&b| b == 47), "the last update reads back");
        t = t2;
    }
    t = s.close(t, h).unwrap();
    let (hits, misses) = cache(&s);
    assert!(
        hits - hits0 >= 20 * PAGES as u64 && misses - misses0 >= 20 * PAGES as u64,
        "the reads were not half hits, half misses: {} hits, {} misses",
        hits - hits0,
        misses - misses0
    );
    let (writes, reads) = s.with_fs(|fs| fs.hcluster_calls(ino)).unwrap();
    assert_eq!(
        (writes, reads),
        (48, 40),
        "one count per call, hits included, misses not twice"
    );
    assert!(
        !s.with_fs(|fs| fs.hcluster_read_cold_write_hot(ino))
            .unwrap(),
        "a file read {reads} times is not read-cold"
    );

    // A fault on a mapping is no system call.
    let (h, t1) = s.open(t, "/state.bin", OpenFlags::default()).unwrap();
    let mut page = vec![0u8; 4096];
    let (_, t2) = s.fault_at(t1, h, 0, &mut page).unwrap();
    assert_eq!(s.with_fs(|fs| fs.hcluster_calls(ino)).unwrap(), (48, 40));
    t = s.close(t2, h).unwrap();

    // Closed, its pages dropped: `sync; echo 3 > drop_caches` evicts the inode, and
    // with it the counts (the source keeps them in the in-memory inode); the next read
    // starts over. A file still open keeps its counts through the same drop, and so
    // does a dirty inode (its read times not yet written: the drop without a sync).
    let (other, t1) = s.open(t, "/other.bin", create).unwrap();
    let t1 = s.write_at(t1, other, 0, &[7u8; 4096]).unwrap();
    let t1 = s.sync(t1, other, false).unwrap();
    let other_ino = s.with_fs(|fs| fs.lookup("/other.bin").unwrap()).unwrap();
    s.drop_caches().unwrap();
    assert_eq!(s.with_fs(|fs| fs.hcluster_calls(ino)).unwrap(), (48, 40));
    let t1 = s.sync_all(t1).unwrap();
    s.drop_caches().unwrap();
    assert_eq!(s.with_fs(|fs| fs.hcluster_calls(ino)).unwrap(), (0, 0));
    assert_eq!(
        s.with_fs(|fs| fs.hcluster_calls(other_ino)).unwrap(),
        (1, 0)
    );
    let evicted = s
        .with_fs(|fs| fs.metrics().delta.hcluster_counts_evicted)
        .unwrap();
    assert!(evicted >= 1, "{evicted} counts evicted");
    t = s.close(t1, other).unwrap();
    let (h, t1) = s.open(t, "/state.bin", OpenFlags::default()).unwrap();
    let (_, t2) = s.read_at(t1, h, 0, &mut page).unwrap();
    t = s.close(t2, h).unwrap();
    assert_eq!(s.with_fs(|fs| fs.hcluster_calls(ino)).unwrap(), (0, 1));

    // A read after a power cut and recovery counts from the new mount, again from above.
    s.power_cut();
    t = s.recover().unwrap().max(t);
    let (h, t1) = s.open(t, "/state.bin", OpenFlags::default()).unwrap();
    let (_, t2) = s.read_at(t1, h, 0, &mut page).unwrap();
    let (_, t3) = s.read_at(t2, h, 0, &mut page).unwrap();
    s.close(t3, h).unwrap();
    assert_eq!(
        s.with_fs(|fs| fs.hcluster_calls(ino)).unwrap(),
        (0, 2),
        "counted from the new mount, a miss and a hit once each"
    );
}

/// BGRes clusters the points HCluster last saw for each file holding DCM deltas (the
/// source's stored feature snapshots), not the in-memory inode's counts: a file whose
/// inode `drop_caches` evicted keeps its DCM deltas through the idle passes that follow,
/// instead of being restored because its counts started over at zero.
#[test]
fn bgres_clusters_snapshots_that_outlive_the_evicted_inode() {
    let mut config = StackConfig::preset("ufs31").unwrap();
    config.device.nand.geometry.blocks_per_plane = 40;
    config.device.nand.geometry.pages_per_block = 192;
    config.fs.mount.delta = DeltaConfig::with_mode(DeltaMode::Dcm);
    let mut s = Stack::new(config).unwrap();
    let create = OpenFlags {
        create: true,
        ..OpenFlags::default()
    };
    let (h, mut t) = s.open(s.now_ns(), "/log.db", create).unwrap();
    let mut pages: Vec<Vec<u8>> = (0..PAGES).map(|k| vec![k as u8 * 31; 4096]).collect();
    t = s.write_at(t, h, 0, &pages.concat()).unwrap();
    t = s.sync(t, h, false).unwrap();
    // Small fsync'd updates of every page, round after round: write-hot, read-cold.
    for round in 1..=8u8 {
        for (k, page) in pages.iter_mut().enumerate() {
            page[..16].fill(round ^ k as u8);
            t = s.write_at(t, h, (k * 4096) as u64, page).unwrap();
            t = s.sync(t, h, false).unwrap();
        }
    }
    t = s.close(t, h).unwrap();
    let ino = s.with_fs(|fs| fs.lookup("/log.db").unwrap()).unwrap();
    let before = s.with_fs(|fs| fs.dcm_deltas(ino).unwrap().len()).unwrap();
    assert!(
        before >= 5,
        "only {before} DCM deltas: the setup must reach DCM"
    );
    s.drop_caches().unwrap();
    assert_eq!(s.with_fs(|fs| fs.hcluster_calls(ino)).unwrap(), (0, 0));
    t = s.idle_until(t + 300 * 1_000_000_000).unwrap();
    let m = s.with_fs(|fs| fs.metrics().delta.clone()).unwrap();
    assert!(m.bgres_runs > 0, "no BGRes pass ran: {m:?}");
    assert_eq!(
        m.bgres_restored_files, 0,
        "restored on zeroed counts: {m:?}"
    );
    let after = s.with_fs(|fs| fs.dcm_deltas(ino).unwrap().len()).unwrap();
    assert_eq!(after, before);
    let (h, t1) = s.open(t, "/log.db", OpenFlags::default()).unwrap();
    let mut buf = vec![0u8; PAGES * 4096];
    s.read_at(t1, h, 0, &mut buf).unwrap();
    assert!(
        buf == pages.concat(),
        "the file reads back through its deltas"
    );
}
