//! F2FS compression (F2FSC) in the kernel's format: round trips through our own mount,
//! fsck.f2fs on the images, the accounting fsck.f2fs checks (`i_blocks`,
//! `valid_block_count`) and the one it only repairs (`i_compr_blocks`), corrupt clusters,
//! truncation inside a cluster, cleaning, and images from mkfs.f2fs.

mod common;

use common::surgery::pattern;
use common::*;
use flashstack_f2fs::{mkfs, CompressAlgorithm, CompressConfig, F2fs, F2fsConfig, MemDevice};

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

/// Reads every file back through both read paths: `read` (a page at a time) and
/// `read_pages` (the page cache's readahead: many pages, one request per extent).
fn read_all(fs: &mut F2fs<MemDevice>, files: &[(String, Vec<u8>)], what: &str) {
    for (path, data) in files {
        let ino = fs.lookup(path).unwrap();
        let back = fs.read(ino, 0, data.len() + 10).unwrap();
        assert!(back == *data, "{what}: {path} reads back different bytes");
        let pages = data.len().div_ceil(4096);
        let mut ahead: Vec<u8> = fs
            .read_pages(ino, 0, pages)
            .unwrap()
            .iter()
            .flat_map(|p| p.iter().copied())
            .collect();
        ahead.truncate(data.len());
        assert!(
            ahead == *data,
            "{what}: {path} reads back different bytes by read_pages"
        );
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

/// Readahead over compressed clusters (a regression: `read_pages` took the compressed
/// blocks in a cluster's slots for pages and handed them to SQLite, which aging under
/// `compress_extension=*` reported as "database disk image is malformed"). From every
/// start, mid-cluster ones included, across compressed, raw and partly rewritten
/// clusters, the pages match, and each compressed cluster is decompressed once per read.
#[test]
fn readahead_decompresses_each_compressed_cluster_once() {
    let mut fs = fresh(cfg(CompressAlgorithm::Lz4, 2, false));
    let mut data = text(4096 * 24, 7);
    // Clusters 2 and 3 raw (noise), the rest compressed; then a page of cluster 1 rewritten.
    data[4096 * 8..4096 * 16].copy_from_slice(&pattern(4096 * 8, 5));
    let ino = fs.create("/db").unwrap();
    fs.write(ino, 0, &data).unwrap();
    data[4096 * 5..4096 * 5 + 300].copy_from_slice(&[0x5A; 300]);
    fs.write(ino, 4096 * 5, &[0x5A; 300]).unwrap();
    assert!(fs.compr_blocks(ino).unwrap() > 0);
    for first in 0..24u64 {
        for count in [1usize, 3, 9, 24] {
            let count = count.min(24 - first as usize);
            let before = fs.compress_metrics().clusters_decompressed;
            let got: Vec<u8> = fs
                .read_pages(ino, first, count)
                .unwrap()
                .iter()
                .flat_map(|p| p.iter().copied())
                .collect();
            let at = first as usize * 4096;
            assert!(
                got == data[at..at + count * 4096],
                "read_pages({first}, {count}) differs from what was written"
            );
            let clusters = (first / 4..=(first + count as u64 - 1) / 4)
                .filter(|c| !(2..4).contains(c))
                .count() as u64;
            let decompressed = fs.compress_metrics().clusters_decompressed - before;
            assert_eq!(decompressed, clusters, "read_pages({first}, {count})");
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
        fs.write(
            keep,
            (round % 64) * 4096,
            &data[(round % 64) as usize * 4096..][..4096],
        )
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

/// Past the inode's addresses a compressed file's direct nodes hold 1016 addresses (for
/// 4-page clusters; 1008 for 16), not 1018 (`addrs_per_block`): a file through the
/// inode, both direct nodes and into the indirect ones round-trips and passes fsck.f2fs,
/// which walks it with the aligned count. Truncation frees it back.
#[test]
fn large_compressed_files_use_aligned_direct_nodes() {
    for log in [2, 4] {
        let mut fs = fresh(cfg(CompressAlgorithm::Lz4, log, false));
        let ino = fs.create("/big.txt").unwrap();
        let data = text(3200 * 4096 + 77, 13);
        fs.write(ino, 0, &data).unwrap();
        assert!(fs.read(ino, 0, data.len()).unwrap() == data);
        fs.sync().unwrap();
        let dev = fs.unmount().unwrap();
        check_image(&dev, &format!("large compressed file log {log}"));
        fsck_repair_fixes_nothing(&dev, "large compressed file");
        let mut fs = F2fs::mount_with(dev, 0, cfg(CompressAlgorithm::Lz4, log, false)).unwrap();
        assert!(fs.read(ino, 0, data.len()).unwrap() == data);
        fs.truncate(ino, 1000 * 4096 + 5).unwrap();
        assert!(fs.read(ino, 0, data.len()).unwrap() == data[..1000 * 4096 + 5]);
        let dev = fs.unmount().unwrap();
        check_image(&dev, &format!("large compressed file truncated, log {log}"));
    }
}

/// What the installed `dump.f2fs` makes of a compressed file: it writes each slot's block
/// as it is. Printed, so the documentation's statement can be checked on another
/// f2fs-tools version (`--nocapture`).
#[test]
fn dump_f2fs_on_compressed_files() {
    let Some(bin) = tool("dump.f2fs") else { return };
    let mut fs = fresh(cfg(CompressAlgorithm::Lz4, 2, false));
    let data = text(6 * 4096 + 123, 11);
    let ino = fs.create("/notes.txt").unwrap();
    fs.write(ino, 0, &data).unwrap();
    let raw = pattern(3 * 4096, 12);
    let rino = fs.create("/random.bin").unwrap();
    fs.write(rino, 0, &raw).unwrap();
    let dev = fs.unmount().unwrap();
    let dir = TempDir::new("dump-compressed");
    let image = dir.file("image");
    dev.export(&image).unwrap();
    let dump = |ino: u32, name: &str| -> Vec<u8> {
        use std::io::Write;
        let mut child = std::process::Command::new(&bin)
            .args(["-i", &format!("0x{ino:x}")])
            .arg(&image)
            .current_dir(dir.file(""))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(b"y\n").unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "dump.f2fs failed");
        std::fs::read(dir.file("lost_found").join(name)).unwrap_or_default()
    };
    let back = dump(rino, "random.bin");
    assert!(
        back == raw,
        "a raw-cluster file of a compressed image dumps exact"
    );
    let back = dump(ino, "notes.txt");
    println!(
        "dump.f2fs {}: compressed file of {} bytes dumped as {} bytes; byte-exact: {}",
        tool_version(&bin),
        data.len(),
        back.len(),
        back == data
    );
    // It dumps each slot's block where the page would be: zeros for `COMPRESS_ADDR` and
    // `NEW_ADDR`, the compressed blocks in between. Decompressing those blocks per
    // cluster must give the file back: the layout is the one the tools read.
    let s = common::surgery::Surgery::new(dev);
    let inode = s.inode(ino);
    let slots = &inode.addr[inode.extra_words()..];
    let mut rebuilt = Vec::new();
    for c in 0..data.len().div_ceil(4 * 4096) {
        let page = |i: usize| {
            let start = (i * 4096).min(back.len());
            back[start..((i + 1) * 4096).min(back.len())].to_vec()
        };
        if slots[4 * c] == u32::MAX - 1 {
            assert!(
                page(4 * c).iter().all(|&b| b == 0),
                "COMPRESS_ADDR dumps zeros"
            );
            let n = (1..4)
                .take_while(|&i| slots[4 * c + i] < u32::MAX - 1)
                .count();
            let blocks: Vec<u8> = (1..=n).flat_map(|i| page(4 * c + i)).collect();
            let pages = flashstack_f2fs::compress::decompress_cluster(1, &blocks, 4, false)
                .expect("the dumped compressed blocks decompress");
            rebuilt.extend_from_slice(&pages);
        } else {
            (0..4).for_each(|i| rebuilt.extend_from_slice(&page(4 * c + i)));
        }
    }
    rebuilt.truncate(data.len());
    let first_diff = rebuilt.iter().zip(&data).position(|(a, b)| a != b);
    assert!(
        rebuilt == data,
        "dump.f2fs's blocks, decompressed, are the file: {} vs {} bytes, first difference at {first_diff:?}",
        rebuilt.len(),
        data.len()
    );
}

/// An image from `mkfs.f2fs -O extra_attr,compression` mounts with compression on, takes
/// compressed files (each algorithm), reads them back and passes fsck.f2fs again.
#[test]
fn mkfs_f2fs_images_take_compressed_writes() {
    let Some(mkfs_bin) = tool("mkfs.f2fs") else {
        return;
    };
    for args in [
        &["-O", "extra_attr,compression"][..],
        &["-O", "extra_attr,inode_checksum,sb_checksum,compression"][..],
    ] {
        let dir = TempDir::new(&format!("mkfs-compress-{}", args[1].len()));
        let image = dir.file("image");
        mkfs_f2fs(&mkfs_bin, &image, 256 * MIB, args);
        let mut fs = F2fs::mount_with(
            MemDevice::import(&image).unwrap(),
            0,
            cfg(CompressAlgorithm::Lz4, 2, true),
        )
        .unwrap();
        let mut files = write_mix(&mut fs);
        for (i, alg) in ALGS.into_iter().enumerate() {
            // Each algorithm from its own mount; a directory flagged for compression.
            fs = F2fs::mount_with(fs.unmount().unwrap(), 0, cfg(alg, 2, i == 1)).unwrap();
            let d = fs.mkdir(&format!("/d{i}")).unwrap();
            fs.set_compressed(d).unwrap();
            let path = format!("/d{i}/f.dat");
            let ino = fs.create(&path).unwrap();
            let data = text(50_000 + i * 999, 20 + i as u64);
            fs.write(ino, 0, &data).unwrap();
            files.push((path, data));
        }
        assert!(fs.compress_metrics().clusters_compressed > 0);
        read_all(&mut fs, &files, "mkfs.f2fs image");
        let dev = fs.unmount().unwrap();
        check_image(
            &dev,
            &format!("mkfs.f2fs {} with compressed files", args[1]),
        );
        fsck_repair_fixes_nothing(&dev, "mkfs.f2fs image");
        let mut fs = F2fs::mount(dev).unwrap();
        read_all(&mut fs, &files, "mkfs.f2fs image remounted");
    }
}
