//! The read-write file system: operations, remount, and fsck.f2fs on the result.

mod common;

use common::*;
use flashstack_f2fs::{mkfs, F2fs, FileKind, FsError, MemDevice, MkfsOptions};

fn fresh(bytes: u64, opts: &MkfsOptions) -> F2fs<MemDevice> {
    let mut dev = MemDevice::new(bytes);
    mkfs(&mut dev, opts).unwrap();
    F2fs::mount(dev).unwrap()
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

#[test]
fn files_and_directories_survive_unmount_and_pass_fsck() {
    let mut fs = fresh(128 * MIB, &MkfsOptions::default());
    let small = fs.create("/hello.txt").unwrap();
    fs.write(small, 0, b"hello world").unwrap();
    fs.mkdir("/dir").unwrap();
    let big = fs.create("/dir/big.bin").unwrap();
    let data = pattern(3 * 4096 + 100, 7);
    fs.write(big, 0, &data).unwrap();
    let sparse = fs.create("/dir/sparse").unwrap();
    fs.write(sparse, 5_000_000_000, b"far").unwrap();
    fs.write(sparse, 4096 * 900, b"mid").unwrap();
    let dev = fs.unmount().unwrap();
    check_image(&dev, "basic");
    let mut fs = F2fs::mount(dev).unwrap();
    let ino = fs.lookup("/hello.txt").unwrap();
    assert_eq!(fs.read(ino, 0, 100).unwrap(), b"hello world");
    let ino = fs.lookup("/dir/big.bin").unwrap();
    assert!(fs.read(ino, 0, 1 << 20).unwrap() == data);
    let ino = fs.lookup("/dir/sparse").unwrap();
    assert_eq!(fs.read(ino, 5_000_000_000, 10).unwrap(), b"far");
    assert_eq!(fs.read(ino, 4096 * 900, 3).unwrap(), b"mid");
    assert_eq!(fs.read(ino, 4096 * 901, 3).unwrap(), vec![0; 3]);
    let names: Vec<String> = fs
        .readdir("/")
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, ["dir", "hello.txt"]);
    fs.truncate(ino, 10).unwrap();
    fs.unlink("/hello.txt").unwrap();
    assert_eq!(fs.rmdir("/dir").unwrap_err().errno(), 39, "ENOTEMPTY");
    let dev = fs.unmount().unwrap();
    check_image(&dev, "after-truncate");
}

#[test]
fn many_entries_leave_inline_dentries_and_pass_fsck() {
    let mut fs = fresh(128 * MIB, &android_like());
    fs.mkdir("/d").unwrap();
    for i in 0..600 {
        let ino = fs
            .create(&format!("/d/file-with-a-longer-name-{i}.db"))
            .unwrap();
        if i % 50 == 0 {
            fs.write(ino, 0, &pattern(5000, i as u8)).unwrap();
        }
    }
    for i in (0..600).step_by(3) {
        fs.unlink(&format!("/d/file-with-a-longer-name-{i}.db"))
            .unwrap();
    }
    fs.rename("/d/file-with-a-longer-name-1.db", "/moved.mp4")
        .unwrap();
    fs.link("/moved.mp4", "/d/again").unwrap();
    assert!(!fs.stat("/d").unwrap().inline_dentry);
    assert_eq!(fs.readdir("/d").unwrap().len(), 400);
    assert_eq!(fs.stat("/moved.mp4").unwrap().links, 2);
    assert_eq!(fs.stat("/d").unwrap().kind, FileKind::Dir);
    let dev = fs.unmount().unwrap();
    check_image(&dev, "many-entries");
    let mut fs = F2fs::mount(dev).unwrap();
    assert_eq!(fs.readdir("/d").unwrap().len(), 400);
    assert!(matches!(
        fs.lookup("/d/file-with-a-longer-name-0.db"),
        Err(FsError::NotFound(_))
    ));
    let ino = fs.lookup("/d/file-with-a-longer-name-100.db").unwrap();
    assert_eq!(fs.read(ino, 0, 9000).unwrap(), pattern(5000, 100));
}

/// Shrunk from the model proptest: growing an inline file past the inline area by
/// truncate must convert it, or fsck finds an inline inode with a huge size.
#[test]
fn regression_truncate_grows_an_inline_file_past_its_area() {
    let mut fs = fresh(128 * MIB, &MkfsOptions::default());
    let ino = fs.create("/h.mp4").unwrap();
    fs.sync().unwrap();
    fs.truncate(ino, 4096 * 3100).unwrap();
    assert!(!fs.stat_ino(ino).unwrap().inline_data);
    let dev = fs.unmount().unwrap();
    check_image(&dev, "truncate-grow-inline");
}

/// Overwriting a file on a small volume forces foreground cleaning; the data survives it
/// and a remount, and the image stays consistent.
#[test]
fn cleaning_keeps_data_and_consistency() {
    let mut fs = fresh(64 * MIB, &MkfsOptions::default());
    let ino = fs.create("/data.bin").unwrap();
    let pages = 1500u64;
    let mut expect = vec![0u8; pages as usize * 4096];
    for round in 0..12u64 {
        for i in 0..pages {
            let index = (i * 7 + round * 13) % pages;
            if (index + round).is_multiple_of(3) {
                continue;
            }
            let page = pattern(4096, (index as u8) ^ (round as u8));
            fs.write(ino, index * 4096, &page).unwrap();
            expect[index as usize * 4096..(index as usize + 1) * 4096].copy_from_slice(&page);
        }
    }
    let m = fs.metrics().clone();
    eprintln!("cleaning run: {m:?}");
    assert!(m.gc_cycles > 0, "cleaning ran: {m:?}");
    assert!(m.gc_data_blocks > 0);
    assert!(fs.read(ino, 0, expect.len()).unwrap() == expect);
    let dev = fs.unmount().unwrap();
    check_image(&dev, "cleaning");
    let mut fs = F2fs::mount(dev).unwrap();
    assert!(fs.read(ino, 0, expect.len()).unwrap() == expect);
}

/// A power cut right after fsync: the file comes back by roll-forward recovery, without
/// the fsync having written a checkpoint.
#[test]
fn fsync_survives_a_power_cut_by_roll_forward() {
    let mut fs = fresh(128 * MIB, &MkfsOptions::default());
    fs.mkdir("/dir").unwrap();
    let old = fs.create("/dir/old.txt").unwrap();
    fs.write(old, 0, &pattern(9000, 1)).unwrap();
    fs.sync().unwrap();
    let cps = fs.metrics().checkpoints;
    // Overwrite and append to a checkpointed file, and create a new one (inline).
    fs.write(old, 4096, &pattern(6000, 2)).unwrap();
    fs.fsync(old).unwrap();
    let new = fs.create("/dir/new.db").unwrap();
    fs.write(new, 0, b"fresh row").unwrap();
    fs.fsync(new).unwrap();
    let big = fs.create("/dir/big.bin").unwrap();
    fs.write(big, 4096 * 1000, &pattern(5000, 3)).unwrap();
    fs.fsync(big).unwrap();
    assert_eq!(
        fs.metrics().checkpoints,
        cps,
        "fsync took the roll-forward path"
    );
    // Not fsync'd: lost at the cut.
    let lost = fs.create("/dir/lost").unwrap();
    fs.write(lost, 0, b"x").unwrap();
    let snapshot = fs.device().clone();
    drop(fs);
    check_image(&snapshot, "fsync-before-recovery");
    let mut fs = F2fs::mount(snapshot).unwrap();
    assert_eq!(fs.recovered_inodes(), 3);
    let mut want = pattern(9000, 1);
    want.resize(4096 + 6000, 0);
    want[4096..].copy_from_slice(&pattern(6000, 2));
    let old = fs.lookup("/dir/old.txt").unwrap();
    assert!(fs.read(old, 0, 1 << 20).unwrap() == want, "old.txt content");
    let new = fs.lookup("/dir/new.db").unwrap();
    assert_eq!(fs.read(new, 0, 100).unwrap(), b"fresh row");
    let big = fs.lookup("/dir/big.bin").unwrap();
    assert!(
        fs.read(big, 4096 * 1000, 5000).unwrap() == pattern(5000, 3),
        "big.bin content"
    );
    assert_eq!(fs.stat_ino(big).unwrap().size_bytes, 4096 * 1000 + 5000);
    assert!(matches!(fs.lookup("/dir/lost"), Err(FsError::NotFound(_))));
    let dev = fs.unmount().unwrap();
    check_image(&dev, "fsync-after-recovery");
}

/// A new file in a directory not yet checkpointed cannot be replayed (its parent is not
/// on disk): fsync checkpoints instead, as the kernel does (`CP_NODE_NEED_CP`).
#[test]
fn fsync_in_a_new_directory_checkpoints() {
    let mut fs = fresh(128 * MIB, &MkfsOptions::default());
    fs.mkdir("/fresh").unwrap();
    let ino = fs.create("/fresh/f").unwrap();
    fs.write(ino, 0, b"data").unwrap();
    let cps = fs.metrics().checkpoints;
    fs.fsync(ino).unwrap();
    assert_eq!(fs.metrics().checkpoints, cps + 1);
    let snapshot = fs.device().clone();
    let mut fs = F2fs::mount(snapshot).unwrap();
    let ino = fs.lookup("/fresh/f").unwrap();
    assert_eq!(fs.read(ino, 0, 10).unwrap(), b"data");
}

/// Images made by the real mkfs.f2fs (default and Android-like) mount read-write, take
/// files, and still pass fsck.f2fs; dump.f2fs-free check: our own remount reads them back.
#[test]
fn mkfs_f2fs_images_mount_read_write() {
    let Some(mkfs_bin) = tool("mkfs.f2fs") else {
        return;
    };
    for (name, args) in [("default", &[][..]), ("android", &ANDROID_LIKE_ARGS[..])] {
        let dir = TempDir::new(&format!("rw-mkfs-{name}"));
        let image = dir.file("image");
        mkfs_f2fs(&mkfs_bin, &image, 256 * MIB, args);
        let mut fs = F2fs::mount(MemDevice::import(&image).unwrap()).unwrap();
        fs.mkdir("/data").unwrap();
        let db = fs.create("/data/app.db").unwrap();
        fs.write(db, 0, &pattern(20_000, 9)).unwrap();
        fs.fsync(db).unwrap();
        let photo = fs.create("/data/photo.jpg").unwrap();
        fs.write(photo, 0, &pattern(50_000, 4)).unwrap();
        let dev = fs.unmount().unwrap();
        check_image(&dev, &format!("mkfs.f2fs {name} image after writes"));
        let mut fs = F2fs::mount(dev).unwrap();
        let db = fs.lookup("/data/app.db").unwrap();
        assert!(fs.read(db, 0, 1 << 20).unwrap() == pattern(20_000, 9));
    }
}

/// The six logs get the kernel's temperatures: `.db` data hot, media cold, other files
/// warm, directory data hot; file nodes warm, directory nodes hot, indirect nodes cold.
#[test]
fn blocks_go_to_the_logs_by_temperature() {
    let mut fs = fresh(128 * MIB, &MkfsOptions::default());
    let before = fs.metrics().per_log_blocks;
    let db = fs.create("/a.db").unwrap();
    fs.write(db, 0, &pattern(8192, 1)).unwrap();
    let mp4 = fs.create("/clip.mp4").unwrap();
    fs.write(mp4, 0, &pattern(8192, 2)).unwrap();
    let txt = fs.create("/notes.txt").unwrap();
    fs.write(txt, 0, &pattern(8192, 3)).unwrap();
    fs.write(txt, 4096 * 3000, b"deep").unwrap();
    let after = fs.metrics().per_log_blocks;
    let delta: Vec<u64> = (0..6).map(|i| after[i] - before[i]).collect();
    // Each new name rewrites the root's dentry block (hot); the empty inline files
    // convert without writing a page.
    assert_eq!(delta[..3], [2 + 3, 2 + 1, 2], "hot/warm/cold data");
    fs.sync().unwrap();
    let after_sync = fs.metrics().per_log_blocks;
    assert_eq!(after_sync[5] - after[5], 1, "one indirect node, cold");
    assert_eq!(
        after_sync[4] - after[4],
        3 + 1,
        "three file inodes and a direct node, warm"
    );
    assert_eq!(after_sync[3] - after[3], 1, "the root inode, hot");
}

/// Blocks written by kind for the primitive operations (printed with --nocapture; the
/// table in docs/f2fs.md comes from here), pinned so a change in write behaviour shows.
/// Writes go through `write_pages_hinted` as a page cache's writeback issues them (an
/// fsync's writeback says so and how many pages were dirty); mount options are the
/// kernel defaults (`IPU_FSYNC`, `min_fsync_blocks` 8, `min_hot_blocks` 16).
#[test]
fn primitive_operation_costs() {
    use flashstack_f2fs::{Metrics, WriteHint};
    type Row = [u64; 8];
    fn delta(a: &Metrics, b: &Metrics) -> Row {
        [
            b.data_blocks - a.data_blocks,
            b.ipu_data_blocks - a.ipu_data_blocks,
            b.node_blocks - a.node_blocks,
            b.checkpoint_blocks - a.checkpoint_blocks,
            b.nat_blocks - a.nat_blocks,
            b.sit_blocks - a.sit_blocks,
            b.ssa_blocks - a.ssa_blocks,
            b.checkpoints - a.checkpoints,
        ]
    }
    fn writeback(fs: &mut F2fs<MemDevice>, ino: u32, first: u64, pages: u64, fsync: bool) {
        let page = [0x5a; 4096];
        let refs: Vec<&[u8; 4096]> = (0..pages).map(|_| &page).collect();
        let size = fs
            .stat_ino(ino)
            .unwrap()
            .size_bytes
            .max((first + pages) * 4096);
        let hint = WriteHint {
            inode_dirty_pages: pages,
            fsync,
        };
        fs.write_pages_hinted(ino, first, &refs, size, hint)
            .unwrap();
        if fsync {
            fs.fsync(ino).unwrap();
        }
    }
    let mut fs = fresh(128 * MIB, &MkfsOptions::default());
    fs.mkdir("/d").unwrap();
    let small = fs.create("/d/small").unwrap();
    fs.write(small, 0, &pattern(3 * 4096, 1)).unwrap();
    let big = fs.create("/d/big").unwrap();
    fs.write(big, 0, &pattern(40 * 4096, 1)).unwrap();
    fs.sync().unwrap();
    let mut rows: Vec<Row> = Vec::new();
    let mut measure = |name: &str, fs: &mut F2fs<MemDevice>, f: &dyn Fn(&mut F2fs<MemDevice>)| {
        let before = fs.metrics().clone();
        f(fs);
        let d = delta(&before, fs.metrics());
        eprintln!(
            "{name:<36} data {} in-place {} node {} cp {} nat {} sit {} ssa {} checkpoints {}",
            d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]
        );
        rows.push(d);
    };
    measure("4 KiB overwrite + fsync", &mut fs, &|fs| {
        writeback(fs, small, 1, 1, true)
    });
    measure("4 KiB append + fsync", &mut fs, &|fs| {
        writeback(fs, small, 3, 1, true)
    });
    measure("4 KiB overwrite, background writeback", &mut fs, &|fs| {
        writeback(fs, small, 0, 1, false)
    });
    measure("20-page overwrite + fsync", &mut fs, &|fs| {
        writeback(fs, big, 0, 20, true)
    });
    measure("create + 100 B write + fsync", &mut fs, &|fs| {
        let ino = fs.create("/d/new").unwrap();
        fs.write(ino, 0, &pattern(100, 4)).unwrap();
        fs.fsync(ino).unwrap();
    });
    measure("unlink", &mut fs, &|fs| fs.unlink("/d/new").unwrap());
    measure("checkpoint (sync)", &mut fs, &|fs| fs.sync().unwrap());
    measure("checkpoint, nothing dirty", &mut fs, &|fs| {
        fs.sync().unwrap()
    });
    measure("write, then idle 70 s", &mut fs, &|fs| {
        writeback(fs, small, 0, 1, false);
        let until = fs.now_ns() + 70_000_000_000;
        fs.idle(until).unwrap();
    });
    assert_eq!(
        rows[0],
        [0, 1, 1, 0, 0, 0, 0, 0],
        "overwrite: data in place (IPU_FSYNC) + inode with the fsync mark"
    );
    assert_eq!(
        rows[1],
        [1, 0, 1, 0, 0, 0, 0, 0],
        "append: new data + inode"
    );
    assert_eq!(
        rows[2],
        [1, 0, 0, 0, 0, 0, 0, 0],
        "background writeback: out of place, no node yet"
    );
    assert_eq!(
        rows[3],
        [20, 0, 1, 0, 0, 0, 0, 0],
        "more than min_fsync_blocks dirty: out of place + the inode"
    );
    // The parent is an inline directory: its dentry is rebuilt from the dentry mark.
    assert_eq!(
        rows[4],
        [0, 0, 1, 0, 0, 0, 0, 0],
        "create: the inline inode only"
    );
    // Unlinking a file fsync'd since the checkpoint checkpoints (no resurrection).
    assert_eq!(rows[5][7], 1, "unlink of an fsync'd file");
    assert_eq!(
        rows[7],
        [0, 0, 0, 5, 0, 0, 0, 1],
        "an idle checkpoint: the pack only"
    );
    assert_eq!(
        rows[8],
        [1, 0, 1, 5, 0, 0, 0, 1],
        "cp_interval: one periodic checkpoint, writing the inode"
    );
}

/// A file unlinked while open stays readable through its inode, rides in the
/// checkpoint's orphan list, and is freed at the next mount after a power cut (or at its
/// last close).
#[test]
fn open_unlinked_files_are_orphans() {
    let mut fs = fresh(128 * MIB, &MkfsOptions::default());
    let ino = fs.create("/tmp.bin").unwrap();
    fs.write(ino, 0, &pattern(20_000, 5)).unwrap();
    assert_eq!(fs.open("/tmp.bin").unwrap(), ino);
    fs.unlink("/tmp.bin").unwrap();
    assert!(matches!(fs.lookup("/tmp.bin"), Err(FsError::NotFound(_))));
    assert!(fs.read(ino, 0, 20_000).unwrap() == pattern(20_000, 5));
    fs.sync().unwrap();
    let snapshot = fs.device().clone();
    check_image(&snapshot, "orphan-in-checkpoint");
    fs.close(ino).unwrap();
    let dev = fs.unmount().unwrap();
    check_image(&dev, "orphan-closed");
    // The power-cut copy still lists the orphan: mount frees it.
    let fs = F2fs::mount(snapshot).unwrap();
    let dev = fs.unmount().unwrap();
    check_image(&dev, "orphan-freed-at-mount");
    assert_eq!(FsError::NotFound("x".into()).errno(), 2);
    assert_eq!(FsError::NoSpace.errno(), 28);
}

mod corrupt {
    use super::*;
    use flashstack_block::{BlockDevice, Hints, Payload};
    use flashstack_f2fs::{F2fsError, MountOptions, Verify};
    use proptest::prelude::*;

    /// A small populated image, built once, and what its files hold.
    fn populated() -> (MemDevice, Vec<(String, Vec<u8>)>) {
        let mut fs = fresh(64 * MIB, &MkfsOptions::default());
        fs.mkdir("/d").unwrap();
        let mut files = Vec::new();
        for i in 0..40 {
            let path = format!("/d/file-{i}");
            let ino = fs.create(&path).unwrap();
            let data = pattern(300 * (i + 1), i as u8);
            fs.write(ino, 0, &data).unwrap();
            files.push((path, data));
        }
        let big = fs.create("/big").unwrap();
        fs.write(big, 4096 * 2000, b"x").unwrap();
        let mut sparse = vec![0u8; 4096 * 2000];
        sparse.push(b'x');
        files.push(("/big".to_string(), sparse));
        (fs.unmount().unwrap(), files)
    }

    /// Per file, the bytes of the image nothing checks (see `unprotected_bytes`).
    fn unprotected(
        dev: &MemDevice,
        files: &[(String, Vec<u8>)],
    ) -> Vec<(u64, Vec<std::ops::Range<usize>>)> {
        let s = common::surgery::Surgery::new(dev.clone());
        let mut fs = F2fs::mount(dev.clone()).unwrap();
        files
            .iter()
            .map(|(path, _)| s.unprotected_bytes(fs.lookup(path).unwrap()))
            .collect()
    }

    /// Walks everything and writes a little with the cheap checks only; any error is
    /// fine, a panic is not.
    fn exercise(dev: MemDevice) {
        let Ok(mut fs) = F2fs::mount(dev) else {
            return;
        };
        for path in ["/", "/d"] {
            let Ok(entries) = fs.readdir(path) else {
                continue;
            };
            for e in entries.into_iter().take(50) {
                let _ = fs.stat_ino(e.ino);
                let _ = fs.read(e.ino, 0, 1 << 16);
                let _ = fs.write(e.ino, 100, b"poke");
            }
        }
        let _ = fs.read(3, 0, 10);
        let _ = fs.create("/new");
        let _ = fs.rename("/d", "/e");
        let _ = fs.unlink("/big");
        let _ = fs.sync();
        let _ = fs.unmount();
    }

    /// The corruption is detected: every file read as `flashstack fs cat` reads it
    /// (read-write with the full verification, else read-only) gives its original bytes
    /// or an error, and every error is accounted for: it is a corruption naming the
    /// structure, or the mount named one (a name lost with its dentry is not found).
    fn assert_detected(dev: &MemDevice, files: &[(String, Vec<u8>)], hits: &[(u64, usize)]) {
        let opts = |read_only| MountOptions {
            verify: Verify::Full,
            read_only,
            ..MountOptions::default()
        };
        let mounted = match F2fs::mount_opts(dev.clone(), opts(false)) {
            Err(FsError::Device(F2fsError::Corrupt(_))) => {
                F2fs::mount_opts(dev.clone(), opts(true))
            }
            other => other,
        };
        let Ok(mut fs) = mounted else {
            return; // refused even read-only (superblock, checkpoint or root unusable)
        };
        let version = |dev: &MemDevice| {
            flashstack_f2fs::mount(&mut dev.clone()).map(|m| m.checkpoint.checkpoint_ver)
        };
        if version(dev).ok() != version(&populated().0).ok() {
            // The last pack is broken: the previous checkpoint's state is mounted (as
            // after a torn checkpoint write), where these files need not exist.
            return;
        }
        let named = !fs.warnings().is_empty();
        let (clean, _) = populated();
        let exempt = unprotected(&clean, files);
        for ((path, want), (lba, ranges)) in files.iter().zip(exempt) {
            let got = fs
                .lookup(path)
                .and_then(|ino| fs.read(ino, 0, want.len() + 10));
            let written = hits
                .iter()
                .any(|&(l, o)| l == lba && ranges.iter().any(|r| r.contains(&o)));
            match got {
                Ok(_) if written => {} // its size or inline bytes were overwritten
                Ok(got) => prop_assert_eq_bytes(path, &got, want),
                Err(FsError::Device(F2fsError::Corrupt(c))) => {
                    assert!(!c.to_string().is_empty());
                }
                Err(e) => assert!(named, "{path}: {e}, and the mount named no inconsistency"),
            }
        }
        assert!(matches!(fs.create("/new"), Err(FsError::ReadOnly(_))) || !fs.is_read_only());
    }

    fn prop_assert_eq_bytes(path: &str, got: &[u8], want: &[u8]) {
        assert!(
            got == want,
            "{path}: read {} wrong bytes with success",
            got.len()
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Random bytes of random metadata and node blocks overwritten: reads return
        /// the original bytes or an error naming what is wrong (never other bytes), and
        /// using the image with the cheap checks never panics.
        #[test]
        fn corrupt_images_never_panic(
            hits in prop::collection::vec((any::<prop::sample::Index>(), 0usize..4096, any::<u8>()), 1..40)
        ) {
            let (mut dev, files) = populated();
            // Metadata and node blocks only: data blocks have no checksum in F2FS.
            let s = common::surgery::Surgery::new(dev.clone());
            let main = s.sb.main_blkaddr as u64;
            let lbas: Vec<u64> = dev
                .stored_lbas()
                .filter(|&l| l < main || s.sit_entry(((l - main) / 512) as u32).seg_type() >= 3)
                .collect();
            let mut written = Vec::new();
            for (which, offset, value) in hits {
                let lba = lbas[which.index(lbas.len())];
                let mut block = dev.block(lba).unwrap().to_vec();
                block[offset] = value;
                dev.write(0, lba, Payload::Bytes(&block), Hints::default()).unwrap();
                written.push((lba, offset));
            }
            assert_detected(&dev, &files, &written);
            exercise(dev);
        }
    }
}

/// dump.f2fs (the real f2fs-tools) reads back what we wrote, byte for byte: an inline
/// file, a multi-block file and a sparse file reaching a direct node. With extra_attr
/// (Android-like) the inline file is left out: f2fs-tools 1.15 reads inline data at the
/// fixed `INLINE_DATA_OFFSET` (i_addr[1]) while the kernel skips the extra attributes.
#[test]
fn dump_f2fs_reads_our_files_back() {
    let Some(dump_bin) = tool("dump.f2fs") else {
        return;
    };
    dump_and_compare(&dump_bin, &MkfsOptions::default(), "dump-default", true);
    dump_and_compare(&dump_bin, &android_like(), "dump-android", false);
}

fn dump_and_compare(dump_bin: &std::path::Path, opts: &MkfsOptions, test: &str, inline: bool) {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut fs = fresh(128 * MIB, opts);
    let mut files = Vec::new();
    for (name, offset, len, seed) in [
        ("small.txt", 0u64, 1000usize, 1u8),
        ("photo.jpg", 0, 70_000, 2),
        ("sparse.db", 4096 * 1000, 9000, 3),
    ] {
        if name == "small.txt" && !inline {
            continue;
        }
        let ino = fs.create(&format!("/{name}")).unwrap();
        fs.write(ino, offset, &pattern(len, seed)).unwrap();
        let mut want = vec![0u8; offset as usize];
        want.extend(pattern(len, seed));
        files.push((ino, name, want));
    }
    let dev = fs.unmount().unwrap();
    let dir = TempDir::new(test);
    let image = dir.file("image");
    dev.export(&image).unwrap();
    for (ino, name, want) in files {
        let mut child = Command::new(dump_bin)
            .arg("-i")
            .arg(ino.to_string())
            .arg(&image)
            .current_dir(dir.file(""))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // dump.f2fs asks whether to write the file into ./lost_found.
        child.stdin.take().unwrap().write_all(b"y\n").unwrap();
        assert!(child.wait().unwrap().success());
        let got = std::fs::read(dir.file("lost_found").join(name)).unwrap();
        assert!(
            got == want,
            "{test} {name}: dump.f2fs read {} bytes",
            got.len()
        );
    }
}

#[test]
fn hinted_page_writes_set_the_size_and_read_back() {
    use flashstack_f2fs::WriteHint;
    let mut fs = fresh(128 * MIB, &MkfsOptions::default());
    let ino = fs.create("/pages").unwrap();
    let pages: Vec<[u8; 4096]> = (0..3u8).map(|i| [i + 1; 4096]).collect();
    let refs: Vec<&[u8; 4096]> = pages.iter().collect();
    let hint = WriteHint {
        inode_dirty_pages: 3,
        fsync: false,
    };
    fs.write_pages_hinted(ino, 2, &refs, 2 * 4096 + 2 * 4096 + 10, hint)
        .unwrap();
    assert_eq!(fs.stat_ino(ino).unwrap().size_bytes, 4 * 4096 + 10);
    fs.write_pages_hinted(ino, 0, &refs[..1], 100, hint)
        .unwrap();
    assert_eq!(fs.stat_ino(ino).unwrap().size_bytes, 4 * 4096 + 10);
    let data = fs.read(ino, 0, 1 << 20).unwrap();
    assert_eq!(data.len(), 4 * 4096 + 10);
    assert!(data[..4096].iter().all(|&b| b == 1));
    assert!(data[4096..8192].iter().all(|&b| b == 0));
    assert!(data[8192..12288].iter().all(|&b| b == 1));
    assert!(data[16384..].iter().all(|&b| b == 3));
    let small = fs.create("/small").unwrap();
    fs.write_pages_hinted(small, 0, &refs[1..2], 50, hint)
        .unwrap();
    assert_eq!(fs.read(small, 0, 100).unwrap(), vec![2; 50]);
    let before = fs.now_ns();
    fs.idle(before + 1_000_000_000).unwrap();
    assert!(fs.now_ns() >= before + 1_000_000_000);
    check_image(&fs.unmount().unwrap(), "hinted");
}
