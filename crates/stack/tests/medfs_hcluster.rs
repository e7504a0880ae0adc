//! MedFS's HCluster sees the whole stack's reads (issue 14): the page cache loads pages
//! through `F2fs::read_pages`, and every such call is one of the file's read calls, the
//! feature HCluster clusters on. A file written often and then read often only through
//! the page cache must leave the read-cold/write-hot class DCM admits.

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
    // 48 fsync'd updates: write calls reach F2FS as writebacks, near the
    // read-cold/write-hot centroid (46.2 writes, 5.5 reads).
    for k in 0..48u32 {
        let page = vec![k as u8; PAGES * 4096];
        t = s.write_at(t, h, 0, &page).unwrap();
        t = s.sync(t, h, false).unwrap();
    }
    t = s.close(t, h).unwrap();
    let ino = s.with_fs(|fs| fs.lookup("/state.bin").unwrap()).unwrap();
    let (writes, reads) = s.with_fs(|fs| fs.hcluster_calls(ino)).unwrap();
    assert!(
        writes >= 48,
        "{writes} write calls counted for 48 fsync'd updates"
    );
    assert_eq!(reads, 0, "nothing read yet");
    assert!(s
        .with_fs(|fs| fs.hcluster_read_cold_write_hot(ino))
        .unwrap());

    // 40 cold whole-file reads, each a page-cache miss reaching F2FS.
    let mut misses = 0;
    for _ in 0..40 {
        s.drop_caches().unwrap();
        let (h, t1) = s.open(t, "/state.bin", OpenFlags::default()).unwrap();
        let mut buf = vec![0u8; PAGES * 4096];
        let (n, t2) = s.read_at(t1, h, 0, &mut buf).unwrap();
        assert_eq!(n, buf.len());
        assert!(buf.iter().all(|&b| b == 47), "the last update reads back");
        t = s.close(t2, h).unwrap();
        misses += 1;
    }
    let (_, reads) = s.with_fs(|fs| fs.hcluster_calls(ino)).unwrap();
    assert!(
        reads >= misses,
        "{reads} read calls counted for {misses} cold reads through the page cache"
    );
    assert!(
        !s.with_fs(|fs| fs.hcluster_read_cold_write_hot(ino))
            .unwrap(),
        "a file read {reads} times is not read-cold"
    );
}
