//! Images written by flashstack's mkfs, judged by the real `fsck.f2fs -f`.

mod common;

use common::*;
use flashstack_f2fs::{mkfs, Features, MemDevice, MkfsOptions};

/// Formats an in-memory device, exports it and asserts fsck.f2fs finds nothing wrong.
fn format_and_check(test: &str, bytes: u64, opts: &MkfsOptions) {
    let Some(fsck_bin) = tool("fsck.f2fs") else {
        return;
    };
    let dir = TempDir::new(test);
    let image = dir.file("image");
    let mut dev = MemDevice::new(bytes);
    mkfs(&mut dev, opts).unwrap_or_else(|e| panic!("{test}: mkfs failed: {e}"));
    dev.export(&image).unwrap();
    let report = fsck(&fsck_bin, &image);
    assert_clean(
        &report,
        &format!("{test} ({bytes} bytes, {:?})", opts.features),
    );
}

#[test]
fn default_images_of_several_sizes_pass_fsck() {
    // 16 GiB is written sparsely: only the blocks mkfs writes are stored and exported.
    for (name, bytes) in [
        ("64m", 64 * MIB),
        ("256m", 256 * MIB),
        ("1g", GIB),
        ("16g", 16 * GIB),
    ] {
        format_and_check(&format!("default-{name}"), bytes, &MkfsOptions::default());
    }
}

#[test]
fn android_like_images_pass_fsck() {
    for sector_size in [512, 4096] {
        let opts = MkfsOptions {
            sector_size,
            ..android_like()
        };
        format_and_check(&format!("android-{sector_size}"), 256 * MIB, &opts);
        format_and_check(&format!("android-4g-{sector_size}"), 4 * GIB, &opts);
    }
}

#[test]
fn every_supported_feature_and_option_passes_fsck() {
    let features = [
        "encrypt",
        "verity",
        "casefold",
        "extra_attr",
        "extra_attr,flexible_inline_xattr",
        "extra_attr,inode_crtime",
        "extra_attr,inode_checksum,inode_crtime,flexible_inline_xattr,compression,sb_checksum",
    ];
    for (i, list) in features.iter().enumerate() {
        let opts = MkfsOptions {
            features: Features::parse(list).unwrap(),
            ..MkfsOptions::default()
        };
        format_and_check(&format!("feature-{i}"), 128 * MIB, &opts);
    }
    let others = MkfsOptions {
        label: "phone-data".into(),
        overprovision: Some(5.0),
        discard: false,
        root_uid: 1000,
        root_gid: 1000,
        timestamp: 1_700_000_000,
        ..MkfsOptions::default()
    };
    format_and_check("options", 512 * MIB, &others);
}

/// The judge must be able to say no: a checkpoint (with a correct CRC) that claims one
/// valid block too many must fail fsck, or the passing tests above would prove nothing.
#[test]
fn fsck_rejects_a_checkpoint_that_lies() {
    use flashstack_block::{BlockDevice, Hints, Payload};
    use flashstack_f2fs::checkpoint::Checkpoint;

    let Some(fsck_bin) = tool("fsck.f2fs") else {
        return;
    };
    let mut dev = MemDevice::new(64 * MIB);
    let layout = mkfs(&mut dev, &MkfsOptions::default()).unwrap();
    let start = layout.cp_blkaddr as u64;
    let mut cp = Checkpoint::decode(dev.block(start).unwrap());
    cp.valid_block_count += 1;
    let block = cp.encode();
    for at in [start, start + cp.cp_pack_total_block_count as u64 - 1] {
        dev.write(0, at, Payload::Bytes(&block[..]), Hints::default())
            .unwrap();
    }
    let dir = TempDir::new("lying-cp");
    let image = dir.file("image");
    dev.export(&image).unwrap();
    let report = fsck(&fsck_bin, &image);
    assert!(
        report
            .output
            .lines()
            .any(|l| l.starts_with("[FSCK] valid_block_count") && l.contains("[Fail]")),
        "fsck.f2fs did not notice:\n{}",
        report.output
    );
}
