//! COCO's on-demand space allocation (`fs/ondemand.rs`) on a compressing SSD: the user
//! capacity grows with the flash compression saved, so ENOSPC comes later than on the same
//! drive exporting only its flash with F2FS's OP at the threshold; the flash kept free
//! stays at the threshold; no fsync'd byte is lost, across a power cut too; and data that
//! turns incompressible gets a clean ENOSPC, never a lost write.

mod common;

use flashstack_block::BlockDevice;
use flashstack_f2fs::{
    mkfs_timed, op_bytes, F2fs, F2fsConfig, FsError, MkfsOptions, OnDemandConfig,
};
use flashstack_ftl::compression::CompressionPolicyKind;
use flashstack_ftl::{presets, Ftl};

const FILE_BYTES: usize = 1 << 20;
const ENOSPC: i32 = 28;
const MIB: u64 = 1 << 20;

/// Pages zlib compresses about 3:1 (a third random, the rest one phrase).
fn compressible(seed: u64) -> Vec<u8> {
    let n = common::incompressible(seed, FILE_BYTES);
    (0..FILE_BYTES)
        .map(|i| {
            if i % 4096 < 1300 {
                n[i]
            } else {
                b"abcdefgh"[i % 8]
            }
        })
        .collect()
}

/// The inline-compressing `csd3000` on 256 MiB of flash, exporting `factor` × its budget.
fn csd(factor: f64) -> Ftl {
    let mut config = presets::csd3000_with(CompressionPolicyKind::Inline, 1);
    config.nand.geometry.pages_per_block = 32;
    config.nand.geometry.blocks_per_plane = 64;
    config.ftl.exported_capacity_factor = factor;
    Ftl::new(config, true, 7).unwrap()
}

fn ondemand() -> F2fsConfig {
    F2fsConfig {
        ondemand: OnDemandConfig {
            enabled: true,
            ..OnDemandConfig::default()
        },
        ..F2fsConfig::default()
    }
}

/// Writes 1 MiB files from `make(n)`, each fsync'd, until one fails; the error and the
/// synced files' numbers.
fn fill(fs: &mut F2fs<Ftl>, make: impl Fn(u64) -> Vec<u8>) -> (FsError, Vec<u64>) {
    let mut synced = Vec::new();
    loop {
        let n = synced.len() as u64 + 1;
        let data = make(n);
        let result = fs.create(&format!("/f{n}")).and_then(|ino| {
            fs.write(ino, 0, &data)?;
            fs.fsync(ino)
        });
        match result {
            Ok(()) => synced.push(n),
            Err(e) => return (e, synced),
        }
        assert!(synced.len() < 4096, "never ran out of space");
    }
}

fn check_all(fs: &mut F2fs<Ftl>, synced: &[u64], make: impl Fn(u64) -> Vec<u8>, when: &str) {
    for &n in synced {
        let ino = fs.lookup(&format!("/f{n}")).unwrap();
        assert!(
            fs.read(ino, 0, FILE_BYTES).unwrap() == make(n),
            "file {n} {when}"
        );
    }
}

#[test]
fn ondemand_exposes_saved_space_keeps_op_at_the_threshold_and_loses_nothing() {
    // Without it: the drive exports only its flash, F2FS keeps 15 % OP.
    let mut ftl = csd(1.0);
    let opts = MkfsOptions {
        overprovision: Some(15.0),
        ..MkfsOptions::default()
    };
    let (_, t0) = mkfs_timed(&mut ftl, &opts).unwrap();
    let mut fs = F2fs::mount_at(ftl, t0).unwrap();
    let (error, fixed) = fill(&mut fs, compressible);
    assert_eq!(error.errno(), ENOSPC, "{error}");

    // With it: the drive exports four times its flash (so that F2FS's logical space is
    // not what runs out), F2FS exposes what compression saves.
    let mut ftl = csd(4.0);
    let (_, t0) = mkfs_timed(&mut ftl, &MkfsOptions::default()).unwrap();
    let mut fs = F2fs::mount_with(ftl, t0, ondemand()).unwrap();
    let budget = fs.device().physical_budget_bytes().unwrap();
    let start_user = fs.block_usage().user_blocks;
    assert!(
        start_user * 4096 <= budget * 85 / 100,
        "at mount, users get the flash less the threshold: {start_user} blocks of {budget} B"
    );
    let (error, grown) = fill(&mut fs, compressible);
    assert_eq!(error.errno(), ENOSPC, "{error}");
    assert!(
        matches!(error, FsError::NoSpace),
        "F2FS refuses, not the device: {error:?}"
    );
    eprintln!(
        "ENOSPC after {} MiB with on-demand allocation, {} MiB without; {:?}",
        grown.len(),
        fixed.len(),
        fs.ondemand_metrics()
    );
    assert!(
        grown.len() * 2 > fixed.len() * 3,
        "ENOSPC later: {} files against {}",
        grown.len(),
        fixed.len()
    );
    let metrics = fs.ondemand_metrics();
    assert!(
        metrics.grows > 0 && metrics.blocks_exposed > 0,
        "{metrics:?}"
    );
    // OP at the threshold: the flash neither data nor the users' remaining capacity can
    // take is 15 % of the budget, give or take one step of the policy.
    let state = fs.space_state().unwrap();
    assert!(state.user_blocks < state.max_user_blocks, "{state:?}");
    let op = op_bytes(&state, state.user_blocks);
    let (keep, step) = (budget as i128 * 150 / 1000, 4 * 2 * MIB as i128);
    assert!(
        (keep - step..=keep + step).contains(&op),
        "OP {op} B against {keep} B kept: {state:?}"
    );
    check_all(&mut fs, &grown, compressible, "before the power cut");
    let user = fs.block_usage().user_blocks;

    // A power cut: the grown capacity was checkpointed, every fsync'd file is back.
    let mut ftl = fs.into_device();
    let done = ftl.power_cycle(1 << 50).unwrap();
    let mut fs = F2fs::mount_opts(
        ftl,
        flashstack_f2fs::MountOptions {
            start_ns: done.complete_ns,
            config: ondemand(),
            ..Default::default()
        },
    )
    .unwrap();
    check_all(&mut fs, &grown, compressible, "after the power cut");
    let after = fs.block_usage().user_blocks;
    assert!(after.abs_diff(user) < 4 * 512, "{after} against {user}");

    // The data turns incompressible: overwrites fail cleanly with ENOSPC once the flash
    // cannot take them; every file holds either its old or its new contents.
    let mut rewritten = Vec::new();
    for &n in &grown {
        let ino = fs.lookup(&format!("/f{n}")).unwrap();
        match fs
            .write(ino, 0, &common::incompressible(n, FILE_BYTES))
            .and_then(|_| fs.fsync(ino))
        {
            Ok(()) => rewritten.push(n),
            Err(e) => {
                assert_eq!(e.errno(), ENOSPC, "{e}");
                break;
            }
        }
    }
    assert!(rewritten.len() < grown.len(), "the flash ran out");
    for &n in &grown {
        let ino = fs.lookup(&format!("/f{n}")).unwrap();
        let data = fs.read(ino, 0, FILE_BYTES).unwrap();
        let expect = if rewritten.contains(&n) {
            common::incompressible(n, FILE_BYTES)
        } else {
            compressible(n)
        };
        assert!(
            data == expect,
            "file {n} after the incompressible overwrites"
        );
    }
    // fsck.f2fs accepts the image whose user capacity on-demand allocation moved.
    let ftl = fs.unmount().unwrap();
    fsck_device(ftl, "on-demand image after growth, a cut and ENOSPC");
}

/// Exports the logical device (sparse) and asserts `fsck.f2fs -f` finds it clean.
fn fsck_device(mut ftl: Ftl, what: &str) {
    use std::io::{Seek, SeekFrom, Write};
    let Some(bin) = common::tool("fsck.f2fs") else {
        return;
    };
    let dir = common::TempDir::new("ondemand-fsck");
    let image = dir.file("image");
    let mut file = std::fs::File::create(&image).unwrap();
    let lbas = ftl.capacity_lbas();
    file.set_len(lbas * 4096).unwrap();
    let mut block = vec![0u8; 4096];
    let now = ftl.busy_until_ns();
    for lba in 0..lbas {
        ftl.read(now, lba, 1, Some(&mut block)).unwrap();
        if block.iter().any(|&b| b != 0) {
            file.seek(SeekFrom::Start(lba * 4096)).unwrap();
            file.write_all(&block).unwrap();
        }
    }
    drop(file);
    common::assert_clean(&common::fsck(&bin, &image), what);
}

/// Off (the default), the capacity is mkfs's and never moves.
#[test]
fn without_ondemand_the_capacity_is_mkfs_s() {
    let mut ftl = csd(2.0);
    let (_, t0) = mkfs_timed(&mut ftl, &MkfsOptions::default()).unwrap();
    let mut fs = F2fs::mount_at(ftl, t0).unwrap();
    let user = fs.block_usage().user_blocks;
    let ino = fs.create("/a").unwrap();
    fs.write(ino, 0, &compressible(1)).unwrap();
    fs.fsync(ino).unwrap();
    assert_eq!(fs.block_usage().user_blocks, user);
    assert_eq!(fs.ondemand_metrics(), Default::default());
}
