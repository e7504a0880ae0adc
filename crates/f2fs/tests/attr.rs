//! Inode attributes (modes, owners, times), special files and fallocate in F2FS's core:
//! what each operation stores, across remounts and power cuts, judged by fsck.f2fs and
//! read back by dump.f2fs.

mod common;

use std::process::Command;

use common::*;
use flashstack_f2fs::consts::*;
use flashstack_f2fs::{
    mkfs, F2fs, FallocMode, FileKind, FsError, MemDevice, MkfsOptions, NewInode, SetAttr, Stat,
    TimeSet, Timestamp, SIMULATION_EPOCH_SECS,
};

const SEC: u64 = 1_000_000_000;

fn fresh(opts: &MkfsOptions) -> F2fs<MemDevice> {
    let mut dev = MemDevice::new(128 * MIB);
    mkfs(&mut dev, opts).unwrap();
    F2fs::mount(dev).unwrap()
}

/// The simulation's time at `ns` of virtual time.
fn at(ns: u64) -> Timestamp {
    Timestamp::from_secs_nanos(SIMULATION_EPOCH_SECS, ns)
}

fn node(mode: u16, uid: u32, gid: u32) -> NewInode {
    NewInode {
        mode,
        uid,
        gid,
        rdev: 0,
    }
}

/// `dump.f2fs -i INO` of the device: the inode's fields as f2fs-tools reads them.
fn dump_inode(dev: &MemDevice, ino: u32, what: &str) -> Option<String> {
    let bin = tool("dump.f2fs")?;
    let dir = TempDir::new(what);
    let image = dir.file("image");
    dev.export(&image).unwrap();
    let out = Command::new(bin)
        .args(["-i", &ino.to_string()])
        .arg(&image)
        .output()
        .unwrap();
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The value dump.f2fs prints for `field` (`i_mode [0x 81ed : 33261]` → 33261).
fn dumped(dump: &str, field: &str) -> u64 {
    let line = dump
        .lines()
        .find(|l| l.split_whitespace().next() == Some(field))
        .unwrap_or_else(|| panic!("{field} not in:\n{dump}"));
    let value = line
        .rsplit(':')
        .next()
        .unwrap()
        .trim()
        .trim_end_matches(']');
    value.trim().parse().unwrap()
}

#[test]
fn modes_owners_and_times_are_stored_and_survive_remount() {
    for (name, opts) in [
        ("default", MkfsOptions::default()),
        ("android", android_like()),
    ] {
        let mut fs = fresh(&opts);
        fs.advance_to(5 * SEC);
        let script = fs
            .mknod("/script.sh", &node(S_IFREG | 0o755, 1000, 1000))
            .unwrap();
        let private = fs.mknod("/private", &node(S_IFDIR | 0o700, 0, 0)).unwrap();
        let s = fs.stat_ino(script).unwrap();
        assert_eq!((s.mode, s.uid, s.gid), (S_IFREG | 0o755, 1000, 1000));
        assert_eq!(
            (s.atime, s.mtime, s.ctime),
            (at(5 * SEC), at(5 * SEC), at(5 * SEC))
        );
        assert_eq!(fs.stat_ino(private).unwrap().mode, S_IFDIR | 0o700);
        // chmod + chown + utimensat, then ctime alone moves on a chmod.
        fs.advance_to(7 * SEC);
        let past = Timestamp {
            secs: 1_000_000_000,
            nsec: 123,
        };
        fs.setattr(
            script,
            &SetAttr {
                perm: Some(0o4750),
                uid: Some(2000),
                gid: Some(3000),
                atime: Some(TimeSet::At(past)),
                mtime: Some(TimeSet::Now),
            },
        )
        .unwrap();
        fs.advance_to(9 * SEC);
        fs.setattr(
            private,
            &SetAttr {
                perm: Some(0o750),
                ..SetAttr::default()
            },
        )
        .unwrap();
        let want_script = |s: &Stat| {
            assert_eq!((s.mode, s.uid, s.gid), (S_IFREG | 0o4750, 2000, 3000));
            assert_eq!(
                (s.atime, s.mtime, s.ctime),
                (past, at(7 * SEC), at(7 * SEC))
            );
        };
        want_script(&fs.stat_ino(script).unwrap());
        let p = fs.stat_ino(private).unwrap();
        assert_eq!(
            (p.mode, p.mtime, p.ctime),
            (S_IFDIR | 0o750, at(5 * SEC), at(9 * SEC))
        );
        let dev = fs.unmount().unwrap();
        check_image(&dev, &format!("attr modes {name}"));
        if let Some(dump) = dump_inode(&dev, script, &format!("attr-dump-{name}")) {
            assert_eq!(dumped(&dump, "i_mode"), (S_IFREG | 0o4750) as u64);
            assert_eq!(dumped(&dump, "i_uid"), 2000);
            assert_eq!(dumped(&dump, "i_gid"), 3000);
            assert_eq!(dumped(&dump, "i_atime"), 1_000_000_000);
            assert_eq!(dumped(&dump, "i_atime_nsec"), 123);
            assert_eq!(dumped(&dump, "i_mtime"), (SIMULATION_EPOCH_SECS + 7) as u64);
        }
        let mut fs = F2fs::mount(dev).unwrap();
        want_script(&fs.stat_ino(script).unwrap());
        assert_eq!(fs.stat("/private").unwrap().mode, S_IFDIR | 0o750);
    }
}

/// Who changes which time, as POSIX and the kernel say (see `fs/attr.rs`).
#[test]
fn times_follow_posix() {
    let mut fs = fresh(&MkfsOptions::default());
    let d = fs.mkdir("/d").unwrap();
    let e = fs.mkdir("/e").unwrap();
    fs.advance_to(10 * SEC);
    let f = fs.create("/d/f").unwrap();
    let times = |fs: &mut F2fs<MemDevice>, ino| {
        let s = fs.stat_ino(ino).unwrap();
        (s.atime, s.mtime, s.ctime)
    };
    let t10 = at(10 * SEC);
    assert_eq!(times(&mut fs, f), (t10, t10, t10), "create: all three");
    assert_eq!(times(&mut fs, d).1, t10, "create: the directory's mtime");
    fs.advance_to(20 * SEC);
    fs.write(f, 0, b"data").unwrap();
    assert_eq!(
        times(&mut fs, f),
        (t10, at(20 * SEC), at(20 * SEC)),
        "write"
    );
    fs.advance_to(30 * SEC);
    fs.read(f, 0, 4).unwrap();
    assert_eq!(
        times(&mut fs, f).0,
        at(30 * SEC),
        "read after a change: relatime updates"
    );
    fs.advance_to(40 * SEC);
    fs.read(f, 0, 4).unwrap();
    assert_eq!(
        times(&mut fs, f).0,
        at(30 * SEC),
        "read again: relatime keeps atime"
    );
    fs.advance_to(30 * SEC + 86_400 * SEC);
    fs.read(f, 0, 4).unwrap();
    assert_eq!(
        times(&mut fs, f).0,
        at(30 * SEC + 86_400 * SEC),
        "a day later: updated"
    );
    let t = |s: u64| at((86_430 + s) * SEC);
    fs.advance_to((86_430 + 1) * SEC);
    fs.truncate(f, 2).unwrap();
    assert_eq!(
        (times(&mut fs, f).1, times(&mut fs, f).2),
        (t(1), t(1)),
        "truncate"
    );
    fs.advance_to((86_430 + 2) * SEC);
    fs.link("/d/f", "/e/g").unwrap();
    assert_eq!(times(&mut fs, f).2, t(2), "link: ctime");
    assert_eq!(times(&mut fs, f).1, t(1), "link: not mtime");
    assert_eq!(
        (times(&mut fs, e).1, times(&mut fs, e).2),
        (t(2), t(2)),
        "link: dir"
    );
    fs.advance_to((86_430 + 3) * SEC);
    fs.rename("/e/g", "/d/h").unwrap();
    assert_eq!(times(&mut fs, f).2, t(3), "rename: ctime");
    assert_eq!(times(&mut fs, e).1, t(3), "rename: source dir");
    assert_eq!(times(&mut fs, d).1, t(3), "rename: target dir");
    fs.advance_to((86_430 + 4) * SEC);
    fs.unlink("/d/h").unwrap();
    assert_eq!(
        times(&mut fs, f).2,
        t(4),
        "unlink of one of two links: ctime"
    );
    fs.advance_to((86_430 + 5) * SEC);
    fs.setxattr(f, b"user.x", b"1", flashstack_f2fs::XattrMode::Set)
        .unwrap();
    assert_eq!(times(&mut fs, f).2, t(5), "setxattr: ctime");
    fs.advance_to((86_430 + 6) * SEC);
    fs.fallocate(f, FallocMode::Allocate { keep_size: true }, 0, 8192)
        .unwrap();
    assert_eq!(
        (times(&mut fs, f).1, times(&mut fs, f).2),
        (t(6), t(6)),
        "fallocate"
    );
    fs.advance_to((86_430 + 7) * SEC);
    fs.rmdir("/e").unwrap();
    let root = fs.lookup("/").unwrap();
    assert_eq!(times(&mut fs, root).1, t(7), "rmdir: the parent");
    check_image(&fs.unmount().unwrap(), "attr times");
}

/// Times a read or write changes are lazy (F2FS's default `lazytime`): a checkpoint of
/// F2FS's own leaves them in memory, fsync and sync write them, a power cut before loses
/// them.
#[test]
fn lazy_times_reach_the_disk_at_fsync_and_sync() {
    let mut fs = fresh(&MkfsOptions::default());
    let f = fs.create("/f").unwrap();
    fs.write(f, 0, b"x").unwrap();
    fs.sync().unwrap();
    let synced = fs.stat_ino(f).unwrap().mtime;
    let mtime_after_cut = |fs: &F2fs<MemDevice>| {
        let mut again = F2fs::mount(fs.device().clone()).unwrap();
        again.stat("/f").unwrap().mtime
    };
    fs.advance_to(50 * SEC);
    fs.mark_modified(f).unwrap();
    assert_eq!(
        fs.stat_ino(f).unwrap().mtime,
        at(50 * SEC),
        "visible at once"
    );
    fs.checkpoint_names().unwrap();
    assert_eq!(mtime_after_cut(&fs), synced, "not written by a checkpoint");
    fs.fdatasync(f).unwrap();
    fs.fsync(f).unwrap();
    assert_eq!(mtime_after_cut(&fs), at(50 * SEC), "fsync writes it");
    fs.advance_to(60 * SEC);
    fs.mark_modified(f).unwrap();
    fs.sync().unwrap();
    assert_eq!(mtime_after_cut(&fs), at(60 * SEC), "sync writes it");
    check_image(fs.device(), "attr lazy times");
}

#[test]
fn special_files_are_made_as_the_kernel_makes_them() {
    let makedev = |major: u32, minor: u32| (minor & 0xff) | (major << 8) | ((minor & !0xff) << 12);
    for (name, opts) in [
        ("default", MkfsOptions::default()),
        ("android", android_like()),
    ] {
        let mut fs = fresh(&opts);
        fs.mkdir("/dev").unwrap();
        let kinds = [
            ("fifo", S_IFIFO | 0o644, 0, FileKind::Fifo),
            ("sock", S_IFSOCK | 0o755, 0, FileKind::Socket),
            (
                "sda1",
                S_IFBLK | 0o660,
                makedev(8, 1),
                FileKind::BlockDevice,
            ),
            (
                "nvme",
                S_IFCHR | 0o600,
                makedev(259, 70_000),
                FileKind::CharDevice,
            ),
        ];
        let mut inos = vec![];
        for (file, mode, rdev, kind) in kinds {
            let new = NewInode {
                mode,
                uid: 7,
                gid: 8,
                rdev,
            };
            let ino = fs.mknod(&format!("/dev/{file}"), &new).unwrap();
            let s = fs.stat_ino(ino).unwrap();
            assert_eq!((s.kind, s.mode, s.rdev), (kind, mode, rdev), "{file}");
            assert_eq!((s.size_bytes, s.blocks, s.links), (0, 1, 1), "{file}");
            assert!(!s.inline_data);
            inos.push(ino);
        }
        let listed: Vec<(String, FileKind)> = fs
            .readdir("/dev")
            .unwrap()
            .into_iter()
            .map(|e| (e.name, e.kind))
            .collect();
        assert_eq!(listed.len(), 4);
        assert!(listed.contains(&("nvme".into(), FileKind::CharDevice)));
        // No data on a special file, and no second link (fsck.f2fs wants one).
        let fifo = inos[0];
        assert_eq!(fs.write(fifo, 0, b"x").unwrap_err().errno(), 22);
        assert_eq!(fs.read(fifo, 0, 1).unwrap_err().errno(), 22);
        assert_eq!(fs.truncate(fifo, 1).unwrap_err().errno(), 22);
        let e = fs.link("/dev/fifo", "/fifo2").unwrap_err();
        assert!(matches!(e, FsError::Unsupported(_)), "{e}");
        assert!(fs.mknod("/bad", &node(0o644, 0, 0)).is_err(), "no type");
        fs.rename("/dev/sock", "/sock").unwrap();
        fs.unlink("/dev/fifo").unwrap();
        let dev = fs.unmount().unwrap();
        check_image(&dev, &format!("attr special {name}"));
        if let Some(dump) = dump_inode(&dev, inos[2], &format!("attr-dev-{name}")) {
            assert_eq!(dumped(&dump, "i_mode"), (S_IFBLK | 0o660) as u64);
        }
        let mut fs = F2fs::mount(dev).unwrap();
        assert_eq!(fs.stat("/sock").unwrap().kind, FileKind::Socket);
        assert_eq!(fs.stat("/dev/nvme").unwrap().rdev, makedev(259, 70_000));
        assert_eq!(fs.stat("/dev/sda1").unwrap().rdev, makedev(8, 1));
        assert!(fs.lookup("/dev/fifo").is_err());
    }
}

/// A new entry in a set-group-ID directory takes its group; a new directory the bit too.
#[test]
fn setgid_directories_pass_on_their_group() {
    let mut fs = fresh(&MkfsOptions::default());
    fs.mknod("/shared", &node(S_IFDIR | S_ISGID | 0o775, 0, 50))
        .unwrap();
    let f = fs
        .mknod("/shared/f", &node(S_IFREG | 0o644, 1000, 1000))
        .unwrap();
    let d = fs
        .mknod("/shared/d", &node(S_IFDIR | 0o755, 1000, 1000))
        .unwrap();
    let (fs_f, fs_d) = (fs.stat_ino(f).unwrap(), fs.stat_ino(d).unwrap());
    assert_eq!((fs_f.uid, fs_f.gid, fs_f.mode), (1000, 50, S_IFREG | 0o644));
    assert_eq!((fs_d.gid, fs_d.mode), (50, S_IFDIR | S_ISGID | 0o755));
}
