//! F2FS compression (F2FSC) in the kernel's format: round trips through our own mount,
//! fsck.f2fs on the images, the accounting fsck.f2fs checks (`i_blocks`,
//! `valid_block_count`) and the one it only repairs (`i_compr_blocks`), corrupt clusters,
//! truncation inside a cluster, cleaning, and images from mkfs.f2fs.

mod common;

use common::surgery::pattern;
use common::*;
use flashstack_f2fs::{
    mkfs, CompressAlgorithm, CompressConfig, F2fs, F2fsConfig, FsError, MemDevice,
};

const ALGS: [CompressAlgorithm; 3] = [
    CompressAlgorithm::Lz4,
    CompressAlgorithm::Lzo,
    CompressAlgorithm::Zstd,
];

fn cfg(alg: CompressAlgorithm, log: u8, chksum: bool) -> F2fsConfig {
    F2fsConfig {
        compress: CompressConfig {
            algorithm: alg,
            log_cluster_size: log,
            chksum,
            ..CompressConfig::all_files()
        },
        ..F2fsConfig::default()
    }
}

fn fresh(c: F2fsConfig) -> F2fs<MemDevice> {
    let mut dev = MemDevice::new(128 * MIB);
    // The features Android formats with; mkfs's default extension lists (`db` hot).
    let opts = flashstack_f2fs::MkfsOptions {
        features: android_like().features,
        ..flashstack_f2fs::MkfsOptions::default()
    };
    mkfs(&mut dev, &opts).unwrap();
    F2fs::mount_with(dev, 0, c).unwrap()
}

/// Text-like bytes that compress about 3:1 with lz4.
fn text(len: usize, seed: u64) -> Vec<u8> {
    let words = [
        "flash ", "stack ", "cluster ", "page ", "node ", "segment ", "log ",
    ];
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut out = Vec::with_capacity(len + 16);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(words[(x % words.len() as u64) as usize].as_bytes());
    }
    out.truncate(len);
    out
}

/// Writes a compressible file, an incompressible one and one ending mid-cluster.
fn write_mix(fs: &mut F2fs<MemDevice>) -> Vec<(String, Vec<u8>)> {
    let files = vec![
        ("/notes.txt".to_string(), text(200_000, 1)),
        ("/random.bin".to_string(), pattern(70_000, 2)),
        ("/tail.log".to_string(), text(4096 * 5 + 100, 3)),
    ];
    for (path, data) in &files {
        let ino = fs.create(path).unwrap();
        fs.write(ino, 0, data).unwrap();
    }
    files
}

fn read_all(fs: &mut F2fs<MemDevice>, files: &[(String, Vec<u8>)], what: &str) {
    for (path, data) in files {
        let ino = fs.lookup(path).unwrap();
        let back = fs.read(ino, 0, data.len() + 10).unwrap();
        assert!(back == *data, "{what}: {path} reads back different bytes");
    }
}

#[test]
fn compressed_files_round_trip_and_pass_fsck() {
    for alg in ALGS {
        for (log, chksum) in [(2, false), (2, true), (4, false)] {
            let what = format!("{alg:?} log {log} chksum {chksum}");
            let mut fs = fresh(cfg(alg, log, chksum));
            let files = write_mix(&mut fs);
            let m = fs.compress_metrics();
            assert!(m.clusters_compressed > 0, "{what}: {m:?}");
            assert!(m.blocks_saved > 0, "{what}: {m:?}");
            read_all(&mut fs, &files, &what);
            let txt = fs.lookup("/notes.txt").unwrap();
            assert!(fs.compr_blocks(txt).unwrap() > 0, "{what}: i_compr_blocks");
            let rnd = fs.lookup("/random.bin").unwrap();
            assert_eq!(fs.compr_blocks(rnd).unwrap(), 0, "{what}: random stays raw");
            let dev = fs.unmount().unwrap();
            check_image(&dev, &format!("compressed {what}"));
            let mut fs = F2fs::mount_with(dev, 0, cfg(alg, log, chksum)).unwrap();
            read_all(&mut fs, &files, &format!("{what} after remount"));
            // Without the mount option the files still read: the format is in the inode.
            let dev = fs.unmount().unwrap();
            let mut plain = F2fs::mount(dev).unwrap();
            read_all(
                &mut plain,
                &files,
                &format!("{what} mounted without compress"),
            );
        }
    }
}

/// `i_blocks` counts every slot of a compressed cluster (`COMPRESS_ADDR`, its blocks,
/// `NEW_ADDR`), `i_compr_blocks` the `COMPRESS_ADDR` and `NEW_ADDR` slots: fsck.f2fs
/// checks the first and only repairs the second (`-y`), so the repair run must fix nothing.
#[test]
fn cluster_accounting_matches_what_fsck_counts() {
    let mut fs = fresh(cfg(CompressAlgorithm::Lz4, 2, false));
    let ino = fs.create("/a.txt").unwrap();
    fs.write(ino, 0, &vec![b'a'; 4 * 4096]).unwrap();
    // One cluster of four equal pages: one compressed block, three saved slots.
    assert_eq!(fs.compr_blocks(ino).unwrap(), 3);
    assert_eq!(fs.stat_ino(ino).unwrap().blocks, 4 + 1, "4 slots + inode");
    // Rewriting a page rewrites the cluster out of place.
    fs.write(ino, 4096, &text(4096, 9)).unwrap();
    let c = fs.compr_blocks(ino).unwrap();
    assert!((1..=3).contains(&c), "{c}");
    fs.sync().unwrap();
    let dev = fs.unmount().unwrap();
    check_image(&dev, "accounting");
    fsck_repair_fixes_nothing(&dev, "accounting");
}

/// `fsck.f2fs -f -y` on a copy: it repairs `i_compr_blocks` silently unless asked to fix.
fn fsck_repair_fixes_nothing(dev: &MemDevice, what: &str) {
    let Some(bin) = tool("fsck.f2fs") else { return };
    let dir = TempDir::new(&format!("repair-{}", what.replace(' ', "-")));
    let image = dir.file("image");
    dev.export(&image).unwrap();
    let out = std::process::Command::new(bin)
        .args(["-f", "-y"])
        .arg(&image)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.contains("[FIX]"),
        "{what}: fsck.f2fs -y fixed:\n{text}"
    );
}

#[test]
fn a_corrupt_cluster_is_an_error_naming_inode_and_cluster() {
    let mut fs = fresh(cfg(CompressAlgorithm::Lz4, 2, true));
    let ino = fs.create("/a.txt").unwrap();
    fs.write(ino, 0, &text(8 * 4096, 4)).unwrap();
    fs.sync().unwrap();
    let mut s = common::surgery::Surgery::new(fs.unmount().unwrap());
    let inode = s.inode(ino);
    let extra = inode.extra_words();
    // Cluster 1 is pages 4..8: COMPRESS_ADDR, then its first compressed block at page 5.
    assert_eq!(inode.addr[extra + 4], u32::MAX - 1, "COMPRESS_ADDR");
    let addr = inode.addr[extra + 5];
    s.edit_block(addr as u64, |b| b[100] ^= 0xff);
    let dev = s.into_dev();
    let mut fs = F2fs::mount_with(dev, 0, cfg(CompressAlgorithm::Lz4, 2, true)).unwrap();
    assert!(fs.read(ino, 0, 4096).is_ok(), "cluster 0 is intact");
    let err = fs.read(ino, 4 * 4096, 4096).unwrap_err().to_string();
    assert!(err.contains(&format!("inode {ino} cluster 1")), "{err}");
}

#[test]
fn truncation_inside_a_compressed_cluster_keeps_the_rest() {
    let mut fs = fresh(cfg(CompressAlgorithm::Zstd, 2, false));
    let ino = fs.create("/a.txt").unwrap();
    let data = text(13 * 4096, 5);
    fs.write(ino, 0, &data[..12 * 4096]).unwrap();
    for size in [11 * 4096 + 7, 9 * 4096, 6 * 4096 - 1, 4096, 0] {
        fs.truncate(ino, size as u64).unwrap();
        let back = fs.read(ino, 0, data.len()).unwrap();
        assert!(back == data[..size], "truncate to {size}");
        // Grow it again by a page, then cut back: the cluster is rewritten each time.
        fs.write(ino, size as u64, &data[size..size + 4096])
            .unwrap();
        fs.truncate(ino, size as u64).unwrap();
    }
    fs.write(ino, 0, &data).unwrap();
    assert!(fs.read(ino, 0, data.len()).unwrap() == data);
    let dev = fs.unmount().unwrap();
    check_image(&dev, "truncated compressed file");
    fsck_repair_fixes_nothing(&dev, "truncated");
}

/// Cleaning moves a compressed cluster's blocks; the file reads the same afterwards.
#[test]
fn cleaning_moves_compressed_clusters() {
    let mut fs = fresh(cfg(CompressAlgorithm::Lz4, 2, true));
    let keep = fs.create("/keep.txt").unwrap();
    let data = text(64 * 4096, 6);
    fs.write(keep, 0, &data).unwrap();
    // Churn other files so that segments holding /keep.txt's clusters get cleaned.
    // Small text files interleaved with /keep.txt's rewrites share its segments.
    for round in 0..400u64 {
        let ino = fs.create(&format!("/churn{round}.txt")).unwrap();
        fs.write(ino, 0, &pattern(256 * 1024, round)).unwrap();
        fs.write(keep, (round % 64) * 4096, &data[(round % 64) as usize * 4096..][..4096])
            .unwrap();
        if round >= 100 {
            fs.unlink(&format!("/churn{}.txt", round - 100)).unwrap();
        }
        if round % 50 == 0 {
            fs.sync().unwrap();
        }
    }
    // Idle time: background cleaning picks dirty sections (the cold log holds the
    // compressed blocks the rewrites of /keep.txt left invalid).
    let now = fs.now_ns();
    fs.idle(now + 900 * 1_000_000_000).unwrap();
    assert!(fs.metrics().gc_data_blocks > 0, "cleaning moved data");
    assert!(fs.read(keep, 0, data.len()).unwrap() == data);
    let dev = fs.unmount().unwrap();
    check_image(&dev, "after cleaning");
    fsck_repair_fixes_nothing(&dev, "after cleaning");
}

#[test]
fn compression_needs_the_superblock_feature() {
    let mut dev = MemDevice::new(128 * MIB);
    mkfs(&mut dev, &flashstack_f2fs::MkfsOptions::default()).unwrap();
    let err = F2fs::mount_with(dev, 0, cfg(CompressAlgorithm::Lz4, 2, false))
        .err()
        .expect("refused")
        .to_string();
    assert!(err.contains("compression"), "{err}");
}

#[test]
fn only_named_extensions_and_flagged_directories_compress() {
    let c = F2fsConfig {
        compress: CompressConfig::phone(),
        ..F2fsConfig::default()
    };
    let mut fs = fresh(c);
    let data = text(16 * 4096, 7);
    // `db` is on mkfs's hot list: hot files are never compressed.
    for path in ["/a.txt", "/b.jpg", "/c.db"] {
        let ino = fs.create(path).unwrap();
        fs.write(ino, 0, &data).unwrap();
    }
    let compr = |fs: &mut F2fs<MemDevice>, p: &str| {
        let ino = fs.lookup(p).unwrap();
        fs.compr_blocks(ino).unwrap()
    };
    assert!(compr(&mut fs, "/a.txt") > 0);
    assert_eq!(compr(&mut fs, "/b.jpg"), 0);
    assert_eq!(compr(&mut fs, "/c.db"), 0);
    let dir = fs.mkdir("/docs").unwrap();
    fs.set_compressed(dir).unwrap();
    let ino = fs.create("/docs/d.jpg").unwrap();
    fs.write(ino, 0, &data).unwrap();
    assert!(
        compr(&mut fs, "/docs/d.jpg") > 0,
        "inherited from the directory"
    );
    let hot = fs.create("/docs/e.db").unwrap();
    fs.write(hot, 0, &data).unwrap();
    assert_eq!(compr(&mut fs, "/docs/e.db"), 0, "hot files never");
    let dev = fs.unmount().unwrap();
    check_image(&dev, "extensions");
}

#[test]
fn fsync_of_a_compressed_file_checkpoints() {
    let mut fs = fresh(cfg(CompressAlgorithm::Lz4, 2, false));
    let ino = fs.create("/a.txt").unwrap();
    fs.write(ino, 0, &text(40_000, 8)).unwrap();
    let cps = fs.metrics().checkpoints;
    fs.fsync(ino).unwrap();
    assert_eq!(fs.metrics().checkpoints, cps + 1, "CP_COMPRESSED");
}

#[test]
fn user_mode_compresses_only_when_asked() {
    let mut c = cfg(CompressAlgorithm::Lz4, 2, false);
    c.compress.mode = flashstack_f2fs::CompressMode::User;
    let mut fs = fresh(c);
    let ino = fs.create("/a.txt").unwrap();
    let data = text(40_000, 9);
    fs.write(ino, 0, &data).unwrap();
    assert_eq!(fs.compr_blocks(ino).unwrap(), 0);
    fs.compress_file(ino).unwrap();
    assert!(fs.compr_blocks(ino).unwrap() > 0);
    assert!(fs.read(ino, 0, data.len()).unwrap() == data);
    let dev = fs.unmount().unwrap();
    check_image(&dev, "user mode");
}

#[test]
fn writes_past_the_inode_addresses_are_refused_not_corrupted() {
    let mut fs = fresh(cfg(CompressAlgorithm::Lz4, 2, false));
    let ino = fs.create("/big.txt").unwrap();
    let err = fs.write(ino, 4096 * 2000, b"x").unwrap_err();
    assert!(matches!(err, FsError::TooLarge(_)), "{err}");
}
