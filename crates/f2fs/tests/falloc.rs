//! fallocate in F2FS's core: reservations (`NEW_ADDR`) counted in `i_blocks` and the
//! checkpoint's `valid_block_count`, hole punching that frees blocks, zero ranges, all
//! checked against a byte model, across remounts and fsync + power cut (roll-forward), and
//! judged by fsck.f2fs.

mod common;

use common::*;
use flashstack_f2fs::{mkfs, F2fs, FallocMode, FsError, MemDevice, MkfsOptions};
use proptest::prelude::*;

const B: u64 = 4096;

fn fresh(bytes: u64) -> F2fs<MemDevice> {
    let mut dev = MemDevice::new(bytes);
    mkfs(&mut dev, &MkfsOptions::default()).unwrap();
    F2fs::mount(dev).unwrap()
}

fn blocks(fs: &mut F2fs<MemDevice>, ino: u32) -> u64 {
    fs.stat_ino(ino).unwrap().blocks
}

fn contents(fs: &mut F2fs<MemDevice>, ino: u32) -> Vec<u8> {
    let size = fs.stat_ino(ino).unwrap().size_bytes;
    fs.read(ino, 0, size as usize).unwrap()
}

#[test]
fn reserve_punch_and_zero_as_f2fs_does() {
    let mut fs = fresh(128 * MIB);
    let f = fs.create("/f").unwrap();
    let data: Vec<u8> = (0..10 * B).map(|i| (i % 251) as u8 + 1).collect();
    fs.write(f, 0, &data).unwrap();
    assert_eq!(blocks(&mut fs, f), 11, "10 data blocks and the inode");
    // Keep-size reservation past the end: 5 blocks counted, size unchanged.
    fs.fallocate(f, FallocMode::Allocate { keep_size: true }, 10 * B, 5 * B)
        .unwrap();
    assert_eq!(
        (blocks(&mut fs, f), fs.stat_ino(f).unwrap().size_bytes),
        (16, 10 * B)
    );
    // Mode 0 over written blocks and past them: only the holes are reserved, size grows.
    fs.fallocate(f, FallocMode::Allocate { keep_size: false }, 8 * B, 10 * B)
        .unwrap();
    assert_eq!(
        (blocks(&mut fs, f), fs.stat_ino(f).unwrap().size_bytes),
        (19, 18 * B)
    );
    let mut model = data.clone();
    model.resize(18 * B as usize, 0);
    assert_eq!(contents(&mut fs, f), model, "reserved blocks read as zeros");
    // Punch [1.5 blocks, 4.5 blocks): the edges zeroed, blocks 2 and 3 freed.
    fs.fallocate(f, FallocMode::PunchHole, 3 * B / 2, 3 * B)
        .unwrap();
    model[(3 * B / 2) as usize..(9 * B / 2) as usize].fill(0);
    assert_eq!(contents(&mut fs, f), model);
    assert_eq!(blocks(&mut fs, f), 17);
    // Zero range over written blocks 5..8 and a punched one: all reserved, none freed.
    fs.fallocate(f, FallocMode::ZeroRange { keep_size: true }, 3 * B, 5 * B)
        .unwrap();
    model[(3 * B) as usize..(8 * B) as usize].fill(0);
    assert_eq!(contents(&mut fs, f), model);
    assert_eq!(blocks(&mut fs, f), 18, "block 3 reserved again");
    // A write into a reservation takes a real block, the count stays.
    fs.write(f, 12 * B + 10, b"into a reservation").unwrap();
    model[(12 * B + 10) as usize..(12 * B + 28) as usize].copy_from_slice(b"into a reservation");
    assert_eq!(blocks(&mut fs, f), 18);
    assert_eq!(contents(&mut fs, f), model);
    let dev = fs.unmount().unwrap();
    check_image(&dev, "falloc scenario");
    let mut fs = F2fs::mount(dev).unwrap();
    assert_eq!(contents(&mut fs, f), model);
    assert_eq!(blocks(&mut fs, f), 18);
    // Freed with the file: the reservations go with it.
    fs.unlink("/f").unwrap();
    check_image(&fs.unmount().unwrap(), "falloc after unlink");
}

#[test]
fn an_inline_file_is_converted_and_enospc_changes_nothing() {
    let mut fs = fresh(64 * MIB);
    let f = fs.create("/small").unwrap();
    fs.write(f, 0, b"inline").unwrap();
    assert!(fs.stat_ino(f).unwrap().inline_data);
    fs.fallocate(f, FallocMode::Allocate { keep_size: true }, 0, 2 * B)
        .unwrap();
    let s = fs.stat_ino(f).unwrap();
    assert!(!s.inline_data);
    assert_eq!((s.blocks, s.size_bytes), (3, 6));
    assert_eq!(fs.read(f, 0, 100).unwrap(), b"inline");
    let before = fs.stat_ino(f).unwrap();
    let e = fs
        .fallocate(f, FallocMode::Allocate { keep_size: false }, 0, 1 << 30)
        .unwrap_err();
    assert!(matches!(e, FsError::NoSpace), "{e}");
    assert_eq!(
        fs.stat_ino(f).unwrap(),
        before,
        "nothing reserved, size kept"
    );
    assert_eq!(
        fs.fallocate(f, FallocMode::PunchHole, 0, 0)
            .unwrap_err()
            .errno(),
        22,
        "EINVAL for len 0"
    );
    check_image(&fs.unmount().unwrap(), "falloc inline and enospc");
}

/// Reservations and punched holes are replayed by roll-forward after an fsync and a cut.
#[test]
fn fallocated_files_survive_fsync_and_a_power_cut() {
    let mut fs = fresh(128 * MIB);
    let f = fs.create("/db-wal").unwrap();
    fs.write(f, 0, &vec![9u8; (4 * B) as usize]).unwrap();
    fs.sync().unwrap();
    fs.fallocate(f, FallocMode::Allocate { keep_size: false }, 4 * B, 60 * B)
        .unwrap();
    fs.fallocate(f, FallocMode::PunchHole, B, B).unwrap();
    fs.fsync(f).unwrap();
    let want = (contents(&mut fs, f), blocks(&mut fs, f));
    // The cut: the device as it is, no unmount.
    let crashed = fs.device().clone();
    check_image(&crashed, "falloc crash image");
    let mut fs = F2fs::mount(crashed).unwrap();
    assert_eq!(fs.recovered_inodes(), 1);
    let f = fs.lookup("/db-wal").unwrap();
    assert_eq!((contents(&mut fs, f), blocks(&mut fs, f)), want);
    check_image(&fs.unmount().unwrap(), "falloc after roll-forward");
}

#[derive(Clone, Debug)]
enum Op {
    Write {
        offset: u64,
        len: u64,
        byte: u8,
    },
    Falloc {
        mode: FallocMode,
        offset: u64,
        len: u64,
    },
    Truncate {
        size: u64,
    },
    Fsync,
    Remount,
}

fn op() -> impl Strategy<Value = Op> {
    // Offsets within 40 blocks, unaligned, so edges and whole blocks both occur.
    let span = (0..40 * B, 1..12 * B);
    let mode = prop_oneof![
        any::<bool>().prop_map(|keep_size| FallocMode::Allocate { keep_size }),
        Just(FallocMode::PunchHole),
        any::<bool>().prop_map(|keep_size| FallocMode::ZeroRange { keep_size }),
    ];
    prop_oneof![
        3 => (span.clone(), 1..255u8).prop_map(|((offset, len), byte)| Op::Write { offset, len, byte }),
        4 => (span, mode).prop_map(|((offset, len), mode)| Op::Falloc { mode, offset, len }),
        1 => (0..50 * B).prop_map(|size| Op::Truncate { size }),
        1 => Just(Op::Fsync),
        1 => Just(Op::Remount),
    ]
}

/// What the file must hold after `op`.
fn apply(model: &mut Vec<u8>, op: &Op) {
    match *op {
        Op::Write { offset, len, byte } => {
            let end = (offset + len) as usize;
            if model.len() < end {
                model.resize(end, 0);
            }
            model[offset as usize..end].fill(byte);
        }
        Op::Falloc { mode, offset, len } => {
            let end = (offset + len) as usize;
            let zeroes = !matches!(mode, FallocMode::Allocate { .. });
            if zeroes {
                let stop = end.min(model.len());
                if (offset as usize) < stop {
                    model[offset as usize..stop].fill(0);
                }
            }
            let grows = matches!(
                mode,
                FallocMode::Allocate { keep_size: false }
                    | FallocMode::ZeroRange { keep_size: false }
            );
            if grows && model.len() < end {
                model.resize(end, 0);
            }
        }
        Op::Truncate { size } => model.resize(size as usize, 0),
        Op::Fsync | Op::Remount => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Random writes, fallocates of every mode, truncates, fsyncs and remounts on one
    /// file: its bytes always match the model, and fsck.f2fs accepts the final image
    /// (`i_blocks` and `valid_block_count` agree with the reservations left).
    #[test]
    fn fallocate_matches_a_byte_model(ops in proptest::collection::vec(op(), 1..25)) {
        let mut fs = fresh(64 * MIB);
        let mut f = fs.create("/f").unwrap();
        let mut model = Vec::new();
        for op in &ops {
            match *op {
                Op::Write { offset, len, byte } => {
                    fs.write(f, offset, &vec![byte; len as usize]).unwrap()
                }
                Op::Falloc { mode, offset, len } => fs.fallocate(f, mode, offset, len).unwrap(),
                Op::Truncate { size } => fs.truncate(f, size).unwrap(),
                Op::Fsync => fs.fsync(f).unwrap(),
                Op::Remount => {
                    fs = F2fs::mount(fs.unmount().unwrap()).unwrap();
                    f = fs.lookup("/f").unwrap();
                }
            }
            apply(&mut model, op);
            prop_assert_eq!(contents(&mut fs, f), model.clone(), "after {:?}", op);
        }
        check_image(&fs.unmount().unwrap(), "falloc model");
    }
}
