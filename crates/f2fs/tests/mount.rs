//! Mounting our own images, and what mount says about damaged ones.

mod common;

use common::*;
use flashstack_block::{BlockDevice, Hints, Payload};
use flashstack_f2fs::checkpoint::Checkpoint;
use flashstack_f2fs::consts::*;
use flashstack_f2fs::mkfs::MKFS_FAKE_SEED_CP_VER;
use flashstack_f2fs::{
    mkfs, mount, read_superblock, Corruption, F2fsError, Layout, MemDevice, MkfsOptions,
};
use proptest::prelude::*;

fn formatted(opts: &MkfsOptions) -> (MemDevice, Layout) {
    let mut dev = MemDevice::new(64 * MIB);
    let layout = mkfs(&mut dev, opts).unwrap();
    (dev, layout)
}

/// Applies `edit` to the block at `lba` in place.
fn patch(dev: &mut MemDevice, lba: u64, edit: impl FnOnce(&mut [u8])) {
    let mut block = dev.block(lba).map(|b| b.to_vec()).unwrap_or(vec![0; 4096]);
    edit(&mut block);
    dev.write(0, lba, Payload::Bytes(&block), Hints::default())
        .unwrap();
}

#[test]
fn our_image_mounts_with_what_mkfs_wrote() {
    let (mut dev, layout) = formatted(&MkfsOptions::default());
    let m = mount(&mut dev).unwrap();
    assert_eq!((m.superblock_copy, m.cp_pack), (0, 1));
    assert_eq!(m.checkpoint.checkpoint_ver, MKFS_FAKE_SEED_CP_VER);
    assert_eq!(m.superblock.main_blkaddr, layout.main_blkaddr);
    assert_eq!(m.superblock.segment_count_main, layout.segment_count_main);
    assert_eq!(m.checkpoint.user_block_count, layout.user_block_count);
    assert_eq!(
        m.root_blkaddr,
        layout.curseg_blkaddr(3),
        "root in the hot node log"
    );
    assert_eq!(m.root.size, 4096);
    assert_eq!(m.root_entries.len(), 2);
    assert_eq!(m.data_summaries[0].len(), 1, "the root's dentry block");
    assert_eq!(m.node_summaries[0].entries[0].nid, ROOT_INO);
    assert!(m.orphans.is_empty());
    assert_eq!(m.superblock.version_string(), "flashstack");
}

#[test]
fn android_like_image_mounts_and_checks_its_checksums() {
    let (mut dev, _) = formatted(&android_like());
    let m = mount(&mut dev).unwrap();
    assert!(m
        .superblock
        .feature
        .contains(FEATURE_SB_CHKSUM | FEATURE_INODE_CHKSUM));
    assert_eq!(m.superblock.checksum_offset, SB_CHKSUM_OFFSET);
    let root = m.root_blkaddr as u64;
    // A flipped bit in the root inode's name area breaks only the inode checksum.
    patch(&mut dev, root, |b| b[100] ^= 1);
    let err = mount(&mut dev).unwrap_err();
    assert!(
        matches!(
            err,
            F2fsError::Corrupt(Corruption::InodeChecksum { ino: 3, .. })
        ),
        "{err}"
    );
}

#[test]
fn a_bad_first_superblock_falls_back_to_the_second() {
    let (mut dev, _) = formatted(&MkfsOptions::default());
    patch(&mut dev, 0, |b| b[1024] ^= 0xff);
    let (_, copy) = read_superblock(&mut dev).unwrap();
    assert_eq!(copy, 1);
    assert_eq!(mount(&mut dev).unwrap().superblock_copy, 1);
    patch(&mut dev, 1, |b| b[1024 + 20] = 10); // log_blocks_per_seg
    let err = mount(&mut dev).unwrap_err();
    let F2fsError::NoValidSuperblock { first, second } = &err else {
        panic!("{err}");
    };
    assert!(matches!(
        **first,
        Corruption::SuperblockMagic { copy: 0, .. }
    ));
    assert!(
        matches!(
            **second,
            Corruption::SuperblockField {
                copy: 1,
                field: "log_blocks_per_seg",
                ..
            }
        ),
        "{second}"
    );
    assert!(err.to_string().contains("log_blocks_per_seg"), "{err}");
}

#[test]
fn superblock_checksum_is_enforced() {
    let (mut dev, _) = formatted(&android_like());
    for copy in [0, 1] {
        patch(&mut dev, copy, |b| b[1024 + 1200] ^= 1); // inside the extension list
    }
    let err = mount(&mut dev).unwrap_err();
    let F2fsError::NoValidSuperblock { first, .. } = &err else {
        panic!("{err}");
    };
    assert!(
        matches!(**first, Corruption::SuperblockChecksum { copy: 0, .. }),
        "{err}"
    );
}

#[test]
fn a_torn_first_pack_falls_back_to_the_second() {
    let (mut dev, layout) = formatted(&MkfsOptions::default());
    let start = layout.cp_blkaddr as u64;
    // Footer with another version: a checkpoint that was cut off before its footer.
    let mut cp = Checkpoint::decode(dev.block(start).unwrap());
    cp.checkpoint_ver += 1;
    let footer = start + cp.cp_pack_total_block_count as u64 - 1;
    dev.write(
        0,
        footer,
        Payload::Bytes(&cp.encode()[..]),
        Hints::default(),
    )
    .unwrap();
    let m = mount(&mut dev).unwrap();
    assert_eq!((m.cp_pack, m.checkpoint.checkpoint_ver), (2, 0));
    assert_eq!(
        m.root_entries.len(),
        2,
        "the root is found through the NAT area"
    );
    // Now break pack 2's CRC as well.
    patch(&mut dev, start + 512, |b| b[40] ^= 1);
    let err = mount(&mut dev).unwrap_err();
    let F2fsError::NoValidCheckpoint { first, second } = &err else {
        panic!("{err}");
    };
    assert!(
        matches!(**first, Corruption::CheckpointVersionMismatch { .. }),
        "{first}"
    );
    assert!(
        matches!(**second, Corruption::CheckpointChecksum { .. }),
        "{second}"
    );
}

#[test]
fn the_newer_pack_wins() {
    let (mut dev, layout) = formatted(&MkfsOptions::default());
    let start = layout.cp_blkaddr as u64;
    let mut cp = Checkpoint::decode(dev.block(start).unwrap());
    cp.checkpoint_ver += 1;
    let total = cp.cp_pack_total_block_count as u64;
    // Copy pack 1 (summaries included) into pack 2 with a newer version.
    for i in 0..total {
        let mut block = dev
            .block(start + i)
            .map(|b| b.to_vec())
            .unwrap_or(vec![0; 4096]);
        if i == 0 || i == total - 1 {
            block = cp.encode().to_vec();
        }
        dev.write(0, start + 512 + i, Payload::Bytes(&block), Hints::default())
            .unwrap();
    }
    let m = mount(&mut dev).unwrap();
    assert_eq!(
        (m.cp_pack, m.checkpoint.checkpoint_ver),
        (2, MKFS_FAKE_SEED_CP_VER + 1)
    );
}

#[test]
fn checkpoint_rules_name_the_field() {
    let (mut dev, layout) = formatted(&MkfsOptions::default());
    let start = layout.cp_blkaddr as u64;
    let mut cp = Checkpoint::decode(dev.block(start).unwrap());
    cp.cur_data_segno[1] = layout.segment_count_main;
    for at in [start, start + cp.cp_pack_total_block_count as u64 - 1] {
        dev.write(0, at, Payload::Bytes(&cp.encode()[..]), Hints::default())
            .unwrap();
    }
    let err = mount(&mut dev).unwrap_err();
    assert!(
        matches!(
            err,
            F2fsError::Corrupt(Corruption::CheckpointField {
                field: "cur_data_segno",
                ..
            })
        ),
        "{err}"
    );
}

#[test]
fn a_root_outside_the_main_area_is_refused() {
    let (mut dev, layout) = formatted(&MkfsOptions::default());
    // The NAT journal entry of the root (nid 3) lives in the compact summary: its block
    // address is bytes 2 + 4 + 1 + 4 .. of the first journal.
    let sum = layout.cp_blkaddr as u64 + 1;
    patch(&mut dev, sum, |b| {
        b[11..15].copy_from_slice(&7u32.to_le_bytes())
    });
    let err = mount(&mut dev).unwrap_err();
    assert!(
        matches!(
            err,
            F2fsError::Corrupt(Corruption::Node {
                nid: 3,
                field: "nat.block_addr",
                ..
            })
        ),
        "{err}"
    );
}

#[test]
fn a_truncated_image_is_refused() {
    let (dev, _) = formatted(&MkfsOptions::default());
    let mut small = MemDevice::new(32 * MIB);
    let capacity = small.capacity_lbas();
    for lba in dev.stored_lbas().filter(|&l| l < capacity) {
        let block = dev.block(lba).unwrap();
        small
            .write(0, lba, Payload::Bytes(&block[..]), Hints::default())
            .unwrap();
    }
    let err = mount(&mut small).unwrap_err();
    assert!(err.to_string().contains("block_count"), "{err}");
}

#[test]
fn image_files_round_trip() {
    let (dev, _) = formatted(&android_like());
    let dir = TempDir::new("round-trip");
    let path = dir.file("image");
    dev.export(&path).unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 64 * MIB);
    let back = MemDevice::import(&path).unwrap();
    assert!(differing_blocks(&dev, &back).is_empty());
    std::fs::write(&path, [0u8; 5000]).unwrap();
    assert!(matches!(
        MemDevice::import(&path),
        Err(F2fsError::ImageSize { len: 5000, .. })
    ));
    assert!(matches!(
        MemDevice::import(&dir.file("missing")),
        Err(F2fsError::Io { .. })
    ));
}

/// Damaged blocks for the no-panic property: (which written block, byte offset, xor mask)
/// triples, plus the option of zeroing a whole block.
fn damage() -> impl Strategy<Value = Vec<(usize, usize, u8, bool)>> {
    prop::collection::vec(
        (
            0usize..64,
            0usize..4096,
            1u8..=255,
            prop::bool::weighted(0.05),
        ),
        1..12,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Flipping bytes anywhere mkfs wrote (superblocks, checkpoints, summaries, NAT, root
    /// inode, dentry block) never makes mount panic: it mounts or returns a typed error.
    #[test]
    fn damaged_images_never_panic(android in any::<bool>(), edits in damage()) {
        let opts = if android { android_like() } else { MkfsOptions::default() };
        let (mut dev, _) = formatted(&opts);
        let written: Vec<u64> = dev.stored_lbas().collect();
        for (pick, offset, mask, zero) in edits {
            let lba = written[pick % written.len()];
            patch(&mut dev, lba, |b| if zero { b.fill(0) } else { b[offset] ^= mask });
        }
        match mount(&mut dev) {
            Ok(m) => prop_assert!(m.root.is_dir()),
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }
}

/// A checksum-protected block with one field replaced and its CRC recomputed, so the edit
/// reaches the checks behind the CRC.
fn reseal_checkpoint(dev: &mut MemDevice, start: u64, footer: u64, word: usize, value: u32) {
    let mut raw = *dev.block(start).unwrap();
    raw[word * 4..word * 4 + 4].copy_from_slice(&value.to_le_bytes());
    let cp = Checkpoint::decode(&raw);
    for at in [start, footer] {
        dev.write(0, at, Payload::Bytes(&cp.encode()[..]), Hints::default())
            .unwrap();
    }
}

/// Values that sit on the edges the checks care about.
fn field_value() -> impl Strategy<Value = u32> {
    prop_oneof![
        0u32..1100,
        Just(u32::MAX),
        Just(u32::MAX - 1),
        Just(1 << 31),
        any::<u32>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Any superblock word or checkpoint header word (CRC kept valid) may hold any value:
    /// mount still only ever returns Ok or a typed error.
    #[test]
    fn resealed_field_edits_never_panic(
        sb_edits in prop::collection::vec((0usize..767, field_value()), 0..4),
        cp_edits in prop::collection::vec((0usize..48, field_value()), 0..4),
    ) {
        let (mut dev, layout) = formatted(&MkfsOptions::default());
        for (word, value) in sb_edits {
            for copy in [0, 1] {
                let at = 1024 + word * 4;
                patch(&mut dev, copy, |b| b[at..at + 4].copy_from_slice(&value.to_le_bytes()));
            }
        }
        let start = layout.cp_blkaddr as u64;
        let footer = start + 5 + layout.cp_payload as u64;
        for (word, value) in cp_edits {
            reseal_checkpoint(&mut dev, start, footer, word, value);
        }
        match mount(&mut dev) {
            Ok(m) => prop_assert!(m.root.is_dir()),
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }
}
