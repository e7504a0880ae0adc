//! POSIX semantics of the mount's core without FUSE: modes, owners and times (stored in
//! F2FS's inode, times from the virtual clock), special files, and fallocate through the
//! page cache, checked against a byte model across writebacks and remounts.

use flashstack_cache::CacheConfig;
use flashstack_f2fs::{mkfs, F2fs, MkfsOptions, Timestamp, SIMULATION_EPOCH_SECS};
use flashstack_ftl::{presets, Ftl};
use flashstack_fuse::{
    Attr, F2fsTree, FallocMode, Fallocate, InodeFs, Kind, NewAttr, SetAttr, TimeSet,
};
use proptest::prelude::*;

fn fresh() -> F2fsTree<Ftl> {
    let mut device = presets::ldc_emmc();
    device.nand.geometry.blocks_per_plane = 256;
    let mut ftl = Ftl::new(device, true, 7).expect("valid device");
    mkfs(&mut ftl, &MkfsOptions::default()).expect("mkfs");
    let fs = F2fs::mount(ftl).expect("mounts");
    F2fsTree::new(fs, CacheConfig::phone_4gib()).expect("valid cache")
}

/// Unmounts cleanly (cache written back, checkpoint) and mounts again.
fn remount(tree: F2fsTree<Ftl>) -> F2fsTree<Ftl> {
    let at = tree.now_ns();
    let ftl = tree.into_inner().unwrap().unmount().unwrap();
    let fs = F2fs::mount_at(ftl, at).expect("remounts");
    F2fsTree::new(fs, CacheConfig::phone_4gib()).expect("valid cache")
}

fn user(perm: u16, uid: u32) -> NewAttr {
    NewAttr {
        perm,
        uid,
        gid: uid + 1,
    }
}

/// Times are the simulation's: the epoch plus virtual time.
fn virtual_time(t: Timestamp) -> u64 {
    ((t.secs - SIMULATION_EPOCH_SECS) as u64) * 1_000_000_000 + t.nsec as u64
}

fn read_all(tree: &mut F2fsTree<Ftl>, ino: u64) -> Vec<u8> {
    let size = tree.getattr(ino).unwrap().size as usize;
    let mut out = vec![0u8; size];
    assert_eq!(tree.read(ino, 0, &mut out).unwrap(), size);
    out
}

#[test]
fn modes_owners_and_times_live_in_the_core() {
    let mut tree = fresh();
    let root = tree.root();
    let dir = tree.mkdir(root, b"bin", user(0o750, 1000)).unwrap();
    assert_eq!(
        (dir.kind, dir.perm, dir.uid, dir.gid),
        (Kind::Dir, 0o750, 1000, 1001)
    );
    let made = tree.create(dir.ino, b"run.sh", user(0o755, 1000)).unwrap();
    let ino = made.ino;
    assert_eq!((made.perm, made.uid, made.gid), (0o755, 1000, 1001));
    assert_eq!(made.atime, made.mtime);
    assert_eq!(
        tree.getattr(dir.ino).unwrap().mtime,
        made.ctime,
        "dir mtime on create"
    );
    // A write moves mtime and ctime at the write (not at writeback); the virtual clock
    // gives the time.
    tree.write(ino, 0, b"#!/bin/sh\necho hi\n").unwrap();
    let written = tree.getattr(ino).unwrap();
    assert!(written.mtime > made.mtime && written.ctime == written.mtime);
    assert!(virtual_time(written.mtime) <= tree.now_ns());
    tree.sync().unwrap();
    assert_eq!(
        tree.getattr(ino).unwrap().mtime,
        written.mtime,
        "writeback keeps mtime"
    );
    let mut buf = [0u8; 4];
    tree.read(ino, 0, &mut buf).unwrap();
    let read = tree.getattr(ino).unwrap();
    assert!(read.atime > written.mtime, "relatime: read after a change");
    // chmod, chown, utimensat (UTIME_NOW for atime, a time for mtime).
    let past = Timestamp {
        secs: 86_400,
        nsec: 5,
    };
    let set = SetAttr {
        perm: Some(0o700),
        uid: Some(0),
        gid: Some(0),
        atime: Some(TimeSet::Now),
        mtime: Some(TimeSet::At(past)),
    };
    let after = tree.setattr(ino, &set).unwrap();
    assert_eq!(
        (after.perm, after.uid, after.gid, after.mtime),
        (0o700, 0, 0, past)
    );
    assert!(after.ctime > read.atime && after.atime == after.ctime);
    let only_mode = SetAttr {
        perm: Some(0o711),
        ..SetAttr::default()
    };
    assert_eq!(
        tree.setattr(ino, &only_mode).unwrap().mtime,
        past,
        "chmod: mtime kept"
    );
    let before: Attr = tree.getattr(ino).unwrap();
    let mut tree = remount(tree);
    let back = tree.getattr(ino).unwrap();
    assert_eq!(
        (back.perm, back.uid, back.mtime, back.ctime, back.atime),
        (
            before.perm,
            before.uid,
            before.mtime,
            before.ctime,
            before.atime
        )
    );
}

#[test]
fn special_files_live_in_the_core() {
    let mut tree = fresh();
    let root = tree.root();
    let rdev = (3 & 0xff) | (1 << 8); // makedev(1, 3): /dev/null
    let made = [
        (b"pipe".as_slice(), Kind::Fifo, 0),
        (b"sock", Kind::Socket, 0),
        (b"null", Kind::CharDevice, rdev),
        (b"disk", Kind::BlockDevice, (1 & 0xff) | (8 << 8)),
    ];
    for (name, kind, rdev) in made {
        let a = tree.mknod(root, name, kind, user(0o640, 42), rdev).unwrap();
        assert_eq!(
            (a.kind, a.perm, a.uid, a.rdev, a.size),
            (kind, 0o640, 42, rdev, 0)
        );
    }
    let mut tree = remount(tree);
    let kinds: Vec<Kind> = tree
        .readdir(root)
        .unwrap()
        .into_iter()
        .map(|e| e.1)
        .collect();
    assert_eq!(
        kinds,
        [
            Kind::BlockDevice,
            Kind::CharDevice,
            Kind::Fifo,
            Kind::Socket
        ]
    );
    assert_eq!(tree.lookup(root, b"null").unwrap().rdev, rdev);
    let pipe = tree.lookup(root, b"pipe").unwrap().ino;
    assert!(matches!(
        tree.link(pipe, root, b"pipe2"),
        Err(flashstack_fuse::FsError::NotPermitted(_))
    ));
    assert!(tree
        .mknod(root, b"l", Kind::Symlink, user(0o777, 0), 0)
        .is_err());
}

/// fallocate through the cache: dirty pages in a punched range are dropped unwritten,
/// the edges zeroed in the cache, a growth not yet written back survives the punch.
#[test]
fn fallocate_sees_the_cache() {
    let mut tree = fresh();
    let root = tree.root();
    let ino = tree.create(root, b"f", user(0o644, 0)).unwrap().ino;
    tree.write(ino, 0, &[7u8; 40_000]).unwrap();
    // Nothing written back yet: the punch must take the cache's pages.
    let punch = Fallocate {
        mode: FallocMode::PunchHole,
        offset: 1000,
        len: 20_000,
    };
    tree.fallocate(ino, punch).unwrap();
    let mut want = vec![7u8; 40_000];
    want[1000..21_000].fill(0);
    assert_eq!(read_all(&mut tree, ino), want);
    assert_eq!(tree.getattr(ino).unwrap().size, 40_000);
    let grow = Fallocate {
        mode: FallocMode::Allocate { keep_size: false },
        offset: 39_000,
        len: 100_000,
    };
    tree.fallocate(ino, grow).unwrap();
    want.resize(139_000, 0);
    assert_eq!(read_all(&mut tree, ino), want);
    let blocks = tree.getattr(ino).unwrap().blocks;
    assert_eq!(
        blocks,
        139_000u64.div_ceil(4096) * 8,
        "st_blocks: at least the size"
    );
    // Reserved past the end (KEEP_SIZE): counted, the size kept.
    let past = Fallocate {
        mode: FallocMode::Allocate { keep_size: true },
        offset: 139_000,
        len: 10 * 4096,
    };
    tree.fallocate(ino, past).unwrap();
    let a = tree.getattr(ino).unwrap();
    assert!(a.size == 139_000 && a.blocks > blocks, "{a:?}");
    let mut tree = remount(tree);
    assert_eq!(read_all(&mut tree, ino), want);
    // Blocks 0 and 5..=33 written or reserved, 1..=4 punched, 34..=43 reserved past the
    // end: 40 blocks.
    assert_eq!(tree.getattr(ino).unwrap().blocks, 40 * 8);
    // A file whose only growth is in pages a punch drops: the size stays.
    let g = tree.create(root, b"g", user(0o644, 0)).unwrap().ino;
    tree.write(g, 100 * 4096, &[1u8; 3 * 4096]).unwrap();
    let all = Fallocate {
        mode: FallocMode::PunchHole,
        offset: 100 * 4096,
        len: 3 * 4096,
    };
    tree.fallocate(g, all).unwrap();
    assert_eq!(tree.getattr(g).unwrap().size, 103 * 4096);
    assert_eq!(read_all(&mut tree, g), vec![0u8; 103 * 4096]);
}

#[derive(Clone, Debug)]
enum Op {
    Write { offset: u64, len: u64, byte: u8 },
    Falloc(Fallocate),
    Truncate(u64),
    Fsync,
    Sync,
    Remount,
}

fn op() -> impl Strategy<Value = Op> {
    let span = (0..120_000u64, 1..40_000u64);
    let mode = prop_oneof![
        any::<bool>().prop_map(|keep_size| FallocMode::Allocate { keep_size }),
        Just(FallocMode::PunchHole),
        any::<bool>().prop_map(|keep_size| FallocMode::ZeroRange { keep_size }),
    ];
    prop_oneof![
        4 => (span.clone(), 1..255u8).prop_map(|((offset, len), byte)| Op::Write { offset, len, byte }),
        4 => (span, mode).prop_map(|((offset, len), mode)| Op::Falloc(Fallocate { mode, offset, len })),
        1 => (0..150_000u64).prop_map(Op::Truncate),
        1 => Just(Op::Fsync),
        1 => Just(Op::Sync),
        1 => Just(Op::Remount),
    ]
}

fn apply(model: &mut Vec<u8>, op: &Op) {
    match op {
        Op::Write { offset, len, byte } => {
            let end = (offset + len) as usize;
            if model.len() < end {
                model.resize(end, 0);
            }
            model[*offset as usize..end].fill(*byte);
        }
        Op::Falloc(Fallocate { mode, offset, len }) => {
            let end = (offset + len) as usize;
            if !matches!(mode, FallocMode::Allocate { .. }) {
                let stop = end.min(model.len());
                if (*offset as usize) < stop {
                    model[*offset as usize..stop].fill(0);
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
        Op::Truncate(size) => model.resize(*size as usize, 0),
        Op::Fsync | Op::Sync | Op::Remount => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// Writes (held in the cache), fallocates of every mode, truncates, fsyncs, syncs and
    /// remounts: the file always reads as the model says, size included.
    #[test]
    fn fallocate_through_the_cache_matches_a_byte_model(
        ops in proptest::collection::vec(op(), 1..20)
    ) {
        let mut tree = fresh();
        let root = tree.root();
        let ino = tree.create(root, b"f", user(0o644, 0)).unwrap().ino;
        let mut model = Vec::new();
        for op in &ops {
            match op {
                Op::Write { offset, len, byte } => {
                    tree.write(ino, *offset, &vec![*byte; *len as usize]).unwrap();
                }
                Op::Falloc(how) => tree.fallocate(ino, *how).unwrap(),
                Op::Truncate(size) => {
                    tree.set_size(ino, *size).unwrap();
                }
                Op::Fsync => tree.fsync(ino, false).unwrap(),
                Op::Sync => tree.sync().unwrap(),
                Op::Remount => tree = remount(tree),
            }
            apply(&mut model, op);
            prop_assert_eq!(read_all(&mut tree, ino), model.clone(), "after {:?}", op);
        }
    }
}
