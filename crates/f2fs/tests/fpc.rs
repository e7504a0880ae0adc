//! FPC's file policy over F2FS compression (`fs/fpc.rs`): which new files it compresses
//! (write-mostly names from creation, even `.db`; never media; others by the trial of
//! their first page), round trips through remounts, and fsck.f2fs on the image.

mod common;

use common::surgery::pattern;
use common::*;
use flashstack_f2fs::{mkfs, F2fs, F2fsConfig, MemDevice};

fn fresh(c: F2fsConfig) -> F2fs<MemDevice> {
    let mut dev = MemDevice::new(128 * MIB);
    let opts = flashstack_f2fs::MkfsOptions {
        features: android_like().features,
        ..flashstack_f2fs::MkfsOptions::default()
    };
    mkfs(&mut dev, &opts).unwrap();
    F2fs::mount_with(dev, 0, c).unwrap()
}

/// Bytes that compress well (a repeated record with a counter).
fn records(len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 64);
    let mut i = 0u64;
    while out.len() < len {
        out.extend_from_slice(format!("row {i:08} status=ok flags=0000 ").as_bytes());
        i += 1;
    }
    out.truncate(len);
    out
}

#[test]
fn fpc_compresses_write_mostly_and_trial_passing_files_only() {
    let mut fs = fresh(F2fsConfig::default().with_fpc());
    let text = records(16 * 4096);
    let noise = pattern(16 * 4096, 9);
    let files: Vec<(&str, &Vec<u8>, bool)> = vec![
        // Write-mostly by name: compressed from creation, `.db` included.
        ("/mail.db", &text, true),
        ("/mail.db-journal", &text, true),
        ("/app.log", &text, true),
        // Media: never.
        ("/photo.jpg", &text, false),
        // No known ending: the first page's trial decides.
        ("/state.bin", &text, true),
        ("/blob.bin", &noise, false),
    ];
    for (path, data, _) in &files {
        let ino = fs.create(path).unwrap();
        fs.write(ino, 0, data).unwrap();
    }
    for (path, _, compressed) in &files {
        let ino = fs.lookup(path).unwrap();
        let n = fs.compr_blocks(ino).unwrap();
        assert_eq!(n > 0, *compressed, "{path}: i_compr_blocks {n}");
    }
    let m = fs.fpc_metrics();
    assert_eq!(m.write_mostly_files, 3, "{m:?}");
    assert_eq!(m.incompressible_files, 1, "{m:?}");
    assert_eq!((m.trials, m.trials_passed), (2, 1), "{m:?}");
    // Updates of a compressed database's pages read back after a remount.
    let db = fs.lookup("/mail.db").unwrap();
    let mut want = text.clone();
    for page in [1u64, 6, 13] {
        let at = page as usize * 4096 + 100;
        want[at..at + 40].copy_from_slice(&[0xAB; 40]);
        fs.write(db, at as u64, &[0xAB; 40]).unwrap();
    }
    fs.fsync(db).unwrap();
    let dev = fs.unmount().unwrap();
    check_image(&dev, "fpc");
    let mut fs = F2fs::mount_with(dev, 0, F2fsConfig::default().with_fpc()).unwrap();
    let back = fs.read(db, 0, want.len()).unwrap();
    assert!(back == want, "mail.db reads back different bytes");
    for (path, data, _) in &files[1..] {
        let ino = fs.lookup(path).unwrap();
        assert!(fs.read(ino, 0, data.len()).unwrap() == **data, "{path}");
    }
}

/// A file whose first write lands past page 0 (or that already holds data) is never
/// made compressed behind its back: its trial is skipped.
#[test]
fn fpc_skips_the_trial_of_a_file_written_elsewhere_first() {
    let mut fs = fresh(F2fsConfig::default().with_fpc());
    let ino = fs.create("/sparse.bin").unwrap();
    fs.write(ino, 8 * 4096, &records(4096)).unwrap();
    fs.write(ino, 0, &records(4096)).unwrap();
    assert_eq!(fs.compr_blocks(ino).unwrap(), 0);
    let m = fs.fpc_metrics();
    assert_eq!((m.trials, m.trials_skipped), (0, 1), "{m:?}");
}

/// FPC's background re-packing (`fs/fpc.rs`): a file written in pieces between another
/// file's writes lies in many address runs; read twice (a launch, then another), it is
/// rewritten in page order during idle time, after which reading it whole takes one
/// request where it took one per run, its bytes unchanged, across a remount. Not re-packed
/// with `repack` off, nor after a single read.
#[test]
fn fpc_repacks_scattered_files_read_since_their_last_write_in_idle_time() {
    let run = |repack: bool, reads: usize| {
        let mut c = F2fsConfig::default().with_fpc();
        c.fpc.repack = repack;
        let mut fs = fresh(c);
        // No known ending and incompressible: FPC leaves both raw (the trial fails).
        let lib = fs.create("/libapp.bin").unwrap();
        let other = fs.create("/other.bin").unwrap();
        let data = pattern(16 * 4096, 3);
        for k in 0..16u64 {
            let at = (k * 4096) as usize;
            fs.write(lib, k * 4096, &data[at..at + 4096]).unwrap();
            fs.fsync(lib).unwrap();
            fs.write(other, k * 4096, &pattern(4096, k + 100)).unwrap();
            fs.fsync(other).unwrap();
        }
        let runs_before = flashstack_f2fs::fpc_extents(&fs.file_block_addrs(lib).unwrap());
        for _ in 0..reads {
            fs.read(lib, 0, data.len()).unwrap();
        }
        let until = fs.now_ns() + 70 * 1_000_000_000;
        fs.idle(until).unwrap();
        fs.sync().unwrap();
        let fs = F2fs::mount_with(fs.into_device(), 0, F2fsConfig::default().with_fpc());
        let mut fs = fs.unwrap();
        let lib = fs.lookup("/libapp.bin").unwrap();
        let requests = fs.metrics().read_requests;
        let pages = fs.read_pages(lib, 0, 16).unwrap();
        let requests = fs.metrics().read_requests - requests;
        let got: Vec<u8> = pages.iter().flat_map(|p| p.iter().copied()).collect();
        assert_eq!(got, data, "re-packing changed the file's bytes");
        let runs_after = flashstack_f2fs::fpc_extents(&fs.file_block_addrs(lib).unwrap());
        (runs_before, runs_after, requests)
    };
    let (before, after, requests) = run(true, 2);
    println!("re-packed: {before} address runs -> {after}, whole read in {requests} requests");
    assert_eq!(before, 16, "the setup must scatter the file");
    assert_eq!((after, requests), (1, 1));
    let (_, after, requests) = run(false, 2);
    println!("repack off: {after} address runs, whole read in {requests} requests");
    assert_eq!((after, requests), (16, 16));
    let (_, after, _) = run(true, 1);
    assert_eq!(after, 16, "re-packed after a single read");
}

/// FPC's raw → compressed conversion (`fs/fpc.rs`, `repack_convert`): a compressible file
/// FPC left raw (its first write landed past page 0, so its creation trial was skipped),
/// scattered and then read twice, is converted in idle time (the compression context set
/// in place, its raw clusters compressed) instead of rewritten raw; its bytes are
/// unchanged across a remount and fsck.f2fs passes the image. With conversion off it is
/// rewritten raw; an incompressible file's background trial fails and it stays raw.
#[test]
fn fpc_converts_a_raw_compressible_file_read_since_its_last_write() {
    let run = |convert: bool, data: &[u8]| {
        let mut c = F2fsConfig::default().with_fpc();
        c.fpc.repack_convert = convert;
        let mut fs = fresh(c.clone());
        let lib = fs.create("/libapp.so").unwrap();
        let other = fs.create("/other.bin").unwrap();
        // Last page first: the creation trial is skipped, so the file stays raw.
        for k in (0..16u64).rev() {
            let at = (k * 4096) as usize;
            fs.write(lib, k * 4096, &data[at..at + 4096]).unwrap();
            fs.fsync(lib).unwrap();
            fs.write(other, k * 4096, &pattern(4096, k + 100)).unwrap();
            fs.fsync(other).unwrap();
        }
        assert_eq!(
            fs.compr_blocks(lib).unwrap(),
            0,
            "the setup must leave it raw"
        );
        for _ in 0..2 {
            fs.read(lib, 0, data.len()).unwrap();
        }
        let until = fs.now_ns() + 70 * 1_000_000_000;
        fs.idle(until).unwrap();
        let m = fs.metrics().fpc_repack;
        let dev = fs.unmount().unwrap();
        check_image(&dev, "fpc-convert");
        let mut fs = F2fs::mount_with(dev, 0, c).unwrap();
        let lib = fs.lookup("/libapp.so").unwrap();
        let back = fs.read(lib, 0, data.len()).unwrap();
        assert!(back == data, "conversion changed the file's bytes");
        (m, fs.compr_blocks(lib).unwrap())
    };
    let text = records(16 * 4096);
    let (m, compr) = run(true, &text);
    println!("converted: {m:?}, i_compr_blocks {compr}");
    assert_eq!((m.convert_trials, m.converted_files), (1, 1), "{m:?}");
    assert_eq!(m.rewritten_files, 0, "{m:?}");
    assert!(m.clusters_compressed > 0 && compr > 0, "{m:?}, {compr}");
    let (m, compr) = run(false, &text);
    assert_eq!(
        (m.convert_trials, m.converted_files, m.rewritten_files),
        (0, 0, 1)
    );
    assert_eq!(compr, 0);
    let (m, compr) = run(true, &pattern(16 * 4096, 3));
    assert_eq!(
        (m.convert_trials, m.converted_files, m.rewritten_files),
        (1, 0, 1)
    );
    assert_eq!(compr, 0);
}

/// A file whose pages would not keep their address slots under a compressed inode (past
/// its first 912 slots, here into direct and indirect nodes, with holes and a partial
/// last cluster) is converted by re-laying it: its old blocks given up, its pages written
/// back in the compressed layout. It reads back unchanged before and after a remount, its
/// whole clusters are compressed, and fsck.f2fs passes the image; a file that fits is
/// still converted in place.
#[test]
fn fpc_converts_a_file_past_the_compressed_inode_slots_by_relaying_it() {
    let mut fs = fresh(F2fsConfig::default().with_fpc());
    let big = fs.create("/big.so").unwrap();
    let pages = 3_001u64;
    let mut data = records(pages as usize * 4096 - 100);
    // Holes: a whole cluster (pages 1000..1004) and part of one (2001).
    for hole in [1000u64, 1001, 1002, 1003, 2001] {
        let at = hole as usize * 4096;
        data[at..at + 4096].fill(0);
    }
    let write = |fs: &mut F2fs<MemDevice>, from: u64, to: u64| {
        let (a, b) = (from as usize * 4096, (to as usize * 4096).min(data.len()));
        fs.write(big, from * 4096, &data[a..b]).unwrap();
    };
    // Page 1 first (the creation trial is skipped: the file stays raw), around the holes.
    write(&mut fs, 1, 1000);
    write(&mut fs, 1004, 2001);
    write(&mut fs, 2002, pages);
    write(&mut fs, 0, 1);
    fs.sync().unwrap();
    assert_eq!(
        fs.compr_blocks(big).unwrap(),
        0,
        "the setup must leave it raw"
    );
    let before = fs.compress_metrics().clusters_compressed;
    fs.fpc_convert(big).unwrap();
    let packed = fs.compress_metrics().clusters_compressed - before;
    let m = fs.metrics().fpc_repack;
    println!("re-laid: {packed} clusters compressed, {m:?}");
    assert_eq!(m.relaid_files, 1);
    // Every whole cluster of written pages compresses (the data is repetitive records).
    assert!(packed >= 740, "only {packed} clusters compressed");
    assert!(fs.compr_blocks(big).unwrap() > 0);
    assert!(fs.read(big, 0, data.len()).unwrap() == data);
    // The same data in a file that fits converts in place.
    let small = fs.create("/small.so").unwrap();
    fs.write(small, 4096, &data[4096..64 * 4096]).unwrap();
    fs.write(small, 0, &data[..4096]).unwrap();
    fs.fpc_convert(small).unwrap();
    assert_eq!(
        fs.metrics().fpc_repack.relaid_files,
        1,
        "a fitting file re-laid"
    );
    assert!(fs.compr_blocks(small).unwrap() > 0);
    assert!(fs.read(small, 0, 64 * 4096).unwrap() == data[..64 * 4096]);
    let dev = fs.unmount().unwrap();
    check_image(&dev, "fpc-convert-relaid");
    let mut fs = F2fs::mount_with(dev, 0, F2fsConfig::default().with_fpc()).unwrap();
    let big = fs.lookup("/big.so").unwrap();
    assert!(
        fs.read(big, 0, data.len()).unwrap() == data,
        "changed across a remount"
    );

    // The same file picked by the background re-packing: read twice, then idle time.
    let mut fs = fresh(F2fsConfig::default().with_fpc());
    let big = fs.create("/big.so").unwrap();
    write(&mut fs, 1, 1000);
    write(&mut fs, 1004, 2001);
    write(&mut fs, 2002, pages);
    write(&mut fs, 0, 1);
    fs.sync().unwrap();
    for _ in 0..2 {
        fs.read(big, 0, data.len()).unwrap();
    }
    let until = fs.now_ns() + 70 * 1_000_000_000;
    fs.idle(until).unwrap();
    let m = fs.metrics().fpc_repack;
    assert_eq!(
        (m.convert_trials, m.converted_files, m.relaid_files),
        (1, 1, 1),
        "{m:?}"
    );
    assert!(m.clusters_compressed >= 740, "{m:?}");
    assert!(fs.read(big, 0, data.len()).unwrap() == data);
    check_image(&fs.unmount().unwrap(), "fpc-convert-relaid-idle");
}

/// A sparse file past the compressed inode's slots (one incompressible page per cluster)
/// needs more blocks re-laid than it holds: each cluster with data takes all its slots
/// once compressed (its `COMPRESS_ADDR` and `NEW_ADDR` slots count as used, and one
/// incompressible page with three holes packs into two blocks). With free space between
/// what it holds and what it would take, the conversion is refused before anything
/// changes (the file stays raw and readable, the file system writable, the image clean);
/// with room, it converts.
#[test]
fn fpc_relaid_conversion_refuses_a_sparse_file_it_could_not_finish() {
    let mut fs = fresh(F2fsConfig::default().with_fpc());
    let sparse = fs.create("/sparse.so").unwrap();
    let clusters = 3_000u64;
    let page = |c: u64| incompressible(c, 4096);
    for c in (0..clusters).rev() {
        fs.write(sparse, (4 * c + 1) * 4096, &page(c)).unwrap();
    }
    fs.sync().unwrap();
    // Fill the volume, then free 32 MiB (8,192 blocks): more than the 3,000 pages, less
    // than the ~12,000 blocks the re-laid file would take.
    let fill = fs.create("/fill.bin").unwrap();
    let chunk = incompressible(99, 1 << 20);
    let mut at = 0u64;
    while fs.write(fill, at, &chunk).is_ok() {
        at += chunk.len() as u64;
    }
    fs.truncate(fill, at.saturating_sub(32 << 20)).unwrap();
    fs.sync().unwrap();
    let err = fs.fpc_convert(sparse).unwrap_err();
    assert!(matches!(err, flashstack_f2fs::FsError::NoSpace), "{err}");
    assert!(!fs.is_read_only());
    assert_eq!(fs.compr_blocks(sparse).unwrap(), 0);
    let check = |fs: &mut F2fs<MemDevice>| {
        for c in [0, 1, 1_500, clusters - 1] {
            let got = fs.read(sparse, (4 * c + 1) * 4096, 4096).unwrap();
            assert!(got == page(c), "cluster {c}'s page changed");
        }
    };
    check(&mut fs);
    fs.unlink("/fill.bin").unwrap();
    fs.sync().unwrap();
    fs.fpc_convert(sparse).unwrap();
    assert!(fs.compr_blocks(sparse).unwrap() > 0);
    check(&mut fs);
    let dev = fs.unmount().unwrap();
    check_image(&dev, "fpc-relaid-sparse");
}
