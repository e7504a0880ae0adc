//! F2FS on a compressing SSD whose exported capacity is larger than its flash
//! (`flashstack_ftl::csd`): filled with incompressible data, the device runs out of flash
//! before the file system runs out of blocks. Every write up to then is intact, the
//! failing write reports ENOSPC (not EIO, not a panic), and after a power cut every
//! fsync'd byte comes back.

mod common;

use flashstack_block::{BlockDevice, LBA_SIZE};
use flashstack_f2fs::{
    mkfs_timed, CompressConfig, CompressSide, F2fs, F2fsConfig, FacsConfig, FacsHotList,
    MkfsOptions, WriteHint,
};
use flashstack_ftl::compression::CompressionPolicyKind;
use flashstack_ftl::{presets, Ftl};

const FILE_BYTES: usize = 1 << 20;
const ENOSPC: i32 = 28;

/// The `csd3000` preset on 256 MiB of flash (64 blocks of 512 KiB per die).
fn small_csd() -> Ftl {
    let mut config = presets::csd3000_with(CompressionPolicyKind::Inline, 1);
    config.nand.geometry.pages_per_block = 32;
    config.nand.geometry.blocks_per_plane = 64;
    Ftl::new(config, true, 11).unwrap()
}

#[test]
fn incompressible_data_fills_the_flash_with_a_clear_enospc_and_no_loss() {
    let mut ftl = small_csd();
    let usage = ftl.physical_usage();
    let raw_flash = 8u64 * 64 * 32 * 16_384;
    assert!(
        ftl.capacity_lbas() * LBA_SIZE as u64 > raw_flash,
        "the device exports more than its flash: {usage:?}"
    );
    let (_, formatted_ns) = mkfs_timed(&mut ftl, &MkfsOptions::default()).unwrap();
    let mut fs = F2fs::mount_at(ftl, formatted_ns).unwrap();
    let (fs_total, fs_free) = fs.capacity_blocks();
    let mut synced: Vec<(u32, u64)> = Vec::new();
    let error = loop {
        let seed = synced.len() as u64 + 1;
        let path = format!("/f{seed}");
        let result = fs.create(&path).and_then(|ino| {
            fs.write(ino, 0, &common::incompressible(seed, FILE_BYTES))?;
            fs.fsync(ino)?;
            Ok(ino)
        });
        match result {
            Ok(ino) => synced.push((ino, seed)),
            Err(e) => break e,
        }
        assert!(synced.len() < 4096, "never ran out of space");
    };
    assert_eq!(error.errno(), ENOSPC, "{error}");
    assert!(
        matches!(error, flashstack_f2fs::FsError::NoSpace),
        "the file system refuses before the device must: {error:?}"
    );
    let written = synced.len() as u64 * FILE_BYTES as u64;
    assert!(
        written < fs_free * LBA_SIZE as u64,
        "the file system still had room ({fs_free} of {fs_total} blocks free at the start, \
         {written} bytes written): the device's flash ran out first"
    );
    let usage = fs.device().physical_usage();
    assert!(usage.used_bytes <= usage.budget_bytes, "{usage:?}");
    assert!(
        usage.used_bytes * 10 >= usage.budget_bytes * 9,
        "the flash was nearly full when writes failed: {usage:?}"
    );
    assert!(written * 2 >= usage.budget_bytes, "{written} {usage:?}");
    for &(ino, seed) in &synced {
        assert!(
            fs.read(ino, 0, FILE_BYTES).unwrap() == common::incompressible(seed, FILE_BYTES),
            "file {seed} before the power cut"
        );
    }

    // A power cut, then mount: every fsync'd file is intact.
    let mut ftl = fs.into_device();
    let recovered = ftl.power_cycle(1 << 50).unwrap();
    let mut fs = F2fs::mount_at(ftl, recovered.complete_ns).unwrap();
    for &(_, seed) in &synced {
        let ino = fs.lookup(&format!("/f{seed}")).unwrap();
        assert!(
            fs.read(ino, 0, FILE_BYTES).unwrap() == common::incompressible(seed, FILE_BYTES),
            "file {seed} after the power cut"
        );
    }
    // Deleting frees flash: the device takes writes again once the space is discarded.
    eprintln!(
        "{} MiB of incompressible files fit; usage {:?}",
        written >> 20,
        fs.device().physical_usage()
    );
}

#[test]
fn compressible_data_stores_more_than_the_flash() {
    let mut ftl = small_csd();
    let (_, formatted_ns) = mkfs_timed(&mut ftl, &MkfsOptions::default()).unwrap();
    let mut fs = F2fs::mount_at(ftl, formatted_ns).unwrap();
    // Text-like pages that zlib shrinks about 4×.
    let page: Vec<u8> = (0..FILE_BYTES)
        .map(|i| b"the quick brown fox jumps over "[i % 31] ^ ((i / 4096) as u8 & 1))
        .collect();
    let target = fs.device().physical_usage().budget_bytes * 6 / 5;
    let mut files = 0u64;
    for n in 0..target / FILE_BYTES as u64 + 1 {
        let ino = fs.create(&format!("/t{n}")).unwrap();
        fs.write(ino, 0, &page).unwrap();
        fs.fsync(ino).unwrap();
        files += 1;
    }
    let usage = fs.device().physical_usage();
    assert!(
        files * FILE_BYTES as u64 > usage.budget_bytes,
        "more logical data than the flash budget: {usage:?}"
    );
    assert!(usage.space_saving_ratio() > 2.0, "{usage:?}");
    let t7 = fs.lookup("/t7").unwrap();
    assert!(fs.read(t7, 0, FILE_BYTES).unwrap() == page);
}

/// Pages that zlib compresses about 3:1 (a third random, the rest one repeated phrase).
fn third_random(seed: u64, len: usize) -> Vec<u8> {
    let noise = common::incompressible(seed, len);
    (0..len)
        .map(|i| {
            if i % 4096 < 1300 {
                noise[i]
            } else {
                b"abcdefgh"[i % 8]
            }
        })
        .collect()
}

/// A fresh Android-like F2FS on a small `csd3000-hinted` (32 pages per block, 64 blocks
/// per plane), mounted with `cfg`.
fn mount_on_hinted_csd(cfg: F2fsConfig) -> F2fs<Ftl> {
    let mut config = presets::csd3000_with(CompressionPolicyKind::Hinted, 1);
    config.nand.geometry.pages_per_block = 32;
    config.nand.geometry.blocks_per_plane = 64;
    let mut ftl = Ftl::new(config, true, 5).unwrap();
    let opts = MkfsOptions {
        features: common::android_like().features,
        ..MkfsOptions::default()
    };
    let (_, formatted_ns) = mkfs_timed(&mut ftl, &opts).unwrap();
    F2fs::mount_with(ftl, formatted_ns, cfg).unwrap()
}

/// FACS on the hinted CSD: a cold (media-extension) file that compresses 3:1 goes to the
/// device (its writes carry the status bit, so the device compresses exactly its pages),
/// a warm one to F2FSC, an incompressible cold one to nobody; all read back.
#[test]
fn facs_sends_cold_compressible_files_to_the_device() {
    let cfg = F2fsConfig {
        compress: CompressConfig {
            enabled: true,
            ..CompressConfig::default()
        },
        facs: FacsConfig {
            enabled: true,
            ..FacsConfig::default()
        },
        ..F2fsConfig::default()
    };
    let mut fs = mount_on_hinted_csd(cfg);
    let before = fs.device().counters().pages_compressed_host;
    let files = [
        (
            "/movie.mkv",
            third_random(1, 64 * 4096),
            CompressSide::Device,
        ),
        ("/notes.txt", third_random(2, 64 * 4096), CompressSide::Host),
        (
            "/noise.mkv",
            common::incompressible(3, 64 * 4096),
            CompressSide::None,
        ),
    ];
    for (path, data, _) in &files {
        let ino = fs.create(path).unwrap();
        fs.write(ino, 0, data).unwrap();
        fs.fsync(ino).unwrap();
    }
    for (path, data, side) in &files {
        let ino = fs.lookup(path).unwrap();
        assert_eq!(fs.facs_side(ino), Some(*side), "{path}");
        assert!(fs.read(ino, 0, data.len()).unwrap() == *data, "{path}");
    }
    let device_pages = fs.device().counters().pages_compressed_host - before;
    assert_eq!(
        device_pages, 64,
        "only the device-side file's pages: {device_pages}"
    );
    assert!(fs.compress_metrics().clusters_compressed > 0);
}

/// Why FACS writes more than host-only F2FSC on the phone personas with `.db` databases
/// (docs/coco-reproduction.md): F2FS's creation rule never compresses a file of the hot
/// extension list, even with `*`, but FACS marks a compressible file that is not cold
/// compressed at its first write (as `chattr +c`, which the hot list does not stop).
#[test]
fn facs_compresses_hot_databases_that_the_creation_rule_leaves_alone() {
    let db = third_random(4, 16 * 4096);
    let mut compressed = Vec::new();
    for facs in [false, true] {
        let cfg = F2fsConfig {
            compress: CompressConfig {
                enabled: true,
                extensions: if facs { Vec::new() } else { vec!["*".into()] },
                ..CompressConfig::default()
            },
            facs: FacsConfig {
                enabled: facs,
                ..FacsConfig::default()
            },
            ..F2fsConfig::default()
        };
        let mut fs = mount_on_hinted_csd(cfg);
        let ino = fs.create("/app.db").unwrap();
        fs.write(ino, 0, &db).unwrap();
        fs.fsync(ino).unwrap();
        assert!(fs.read(ino, 0, db.len()).unwrap() == db);
        if facs {
            assert_eq!(fs.facs_side(ino), Some(CompressSide::Host));
        }
        compressed.push(fs.compr_blocks(ino).unwrap());
    }
    assert_eq!(compressed[0], 0, "host-only: the hot .db is not compressed");
    assert!(compressed[1] > 0, "FACS: the host compresses it");
}

/// FACS with `hot_list = "honour"` keeps the hot `.db` uncompressed, as F2FS's creation
/// rule does, so a page-sized fsync'd update of it goes in place with roll-forward and
/// no checkpoint; with the seed's rule (`ignore`) the same update rewrites the cluster
/// out of place and the fsync checkpoints (docs/coco-reproduction.md).
#[test]
fn facs_honouring_the_hot_list_leaves_hot_databases_uncompressed_and_in_place() {
    let pages: Vec<Box<[u8; 4096]>> = (0..16)
        .map(|i| {
            let p = third_random(20 + i, 4096);
            Box::new(std::array::from_fn(|j| p[j]))
        })
        .collect();
    let update: Box<[u8; 4096]> = Box::new(std::array::from_fn(|j| third_random(99, 4096)[j]));
    for hot_list in [FacsHotList::Ignore, FacsHotList::Honour] {
        let cfg = F2fsConfig {
            compress: CompressConfig {
                enabled: true,
                ..CompressConfig::default()
            },
            facs: FacsConfig {
                enabled: true,
                hot_list,
                ..FacsConfig::default()
            },
            ..F2fsConfig::default()
        };
        let mut fs = mount_on_hinted_csd(cfg);
        let ino = fs.create("/app.db").unwrap();
        let refs: Vec<&[u8; 4096]> = pages.iter().map(|p| &**p).collect();
        let hint = |dirty, fsync| WriteHint {
            inode_dirty_pages: dirty,
            fsync,
        };
        fs.write_pages_hinted(ino, 0, &refs, 16 * 4096, hint(16, true))
            .unwrap();
        fs.fsync(ino).unwrap();
        let before = fs.metrics().clone();
        fs.write_pages_hinted(ino, 2, &[&*update], 16 * 4096, hint(1, true))
            .unwrap();
        fs.fsync(ino).unwrap();
        let m = fs.metrics().clone();
        let in_place = m.ipu_data_blocks - before.ipu_data_blocks;
        let out_of_place = m.data_blocks - before.data_blocks;
        let checkpoints = m.checkpoints - before.checkpoints;
        let mut expected = pages
            .iter()
            .flat_map(|p| p.iter().copied())
            .collect::<Vec<u8>>();
        expected[2 * 4096..3 * 4096].copy_from_slice(&update[..]);
        assert!(
            fs.read(ino, 0, 16 * 4096).unwrap() == expected,
            "{hot_list:?}"
        );
        match hot_list {
            FacsHotList::Honour => {
                assert_eq!(fs.facs_side(ino), Some(CompressSide::None));
                assert_eq!(fs.compr_blocks(ino).unwrap(), 0, "stays uncompressed");
                assert_eq!(in_place, 1, "the update goes in place");
                assert_eq!(out_of_place, 0, "nothing out of place");
                assert_eq!(checkpoints, 0, "roll-forward, no checkpoint");
            }
            FacsHotList::Ignore => {
                assert_eq!(fs.facs_side(ino), Some(CompressSide::Host));
                assert!(fs.compr_blocks(ino).unwrap() > 0, "the host compresses it");
                assert_eq!(in_place, 0, "a compressed file never updates in place");
                assert!(out_of_place > 0, "the cluster is rewritten out of place");
                assert!(checkpoints >= 1, "a compressed file's fsync checkpoints");
            }
        }
    }
}
