//! Symlinks: made, read, renamed and removed through the file API, surviving remount and
//! power cuts, and judged by fsck.f2fs; a symlink made by f2fs-tools (sload.f2fs) is read.

mod common;

use std::process::{Command, Stdio};

use common::*;
use flashstack_f2fs::{mkfs, F2fs, FileKind, FsError, MemDevice, MkfsOptions, SYMLINK_TARGET_MAX};

fn fresh(bytes: u64, opts: &MkfsOptions) -> F2fs<MemDevice> {
    let mut dev = MemDevice::new(bytes);
    mkfs(&mut dev, opts).unwrap();
    F2fs::mount(dev).unwrap()
}

/// A target longer than the inline area (about 3.4 KiB): stored in data block 0.
fn long_target() -> Vec<u8> {
    let mut t = b"/".to_vec();
    while t.len() < SYMLINK_TARGET_MAX - 20 {
        t.extend_from_slice(b"a-long-directory/");
    }
    t
}

#[test]
fn symlinks_are_made_read_renamed_removed_and_pass_fsck() {
    for (name, opts) in [
        ("default", MkfsOptions::default()),
        ("android", android_like()),
    ] {
        let mut fs = fresh(128 * MIB, &opts);
        fs.mkdir("/d").unwrap();
        let f = fs.create("/d/file").unwrap();
        fs.write(f, 0, b"data").unwrap();
        let short = fs.symlink("/d/short", b"file").unwrap();
        let long = fs.symlink("/long", &long_target()).unwrap();
        let dangling = fs.symlink("/dangling", b"../nowhere").unwrap();
        let s = fs.stat_ino(short).unwrap();
        assert_eq!(s.kind, FileKind::Symlink);
        assert_eq!(s.mode, 0o120777);
        assert_eq!((s.links, s.size_bytes), (1, 4));
        assert!(s.inline_data, "a short target stays in the inode");
        let l = fs.stat_ino(long).unwrap();
        assert!(!l.inline_data, "a long target takes a data block");
        assert_eq!(l.size_bytes, long_target().len() as u64);
        assert_eq!(fs.readlink("/d/short").unwrap(), b"file");
        assert_eq!(fs.readlink_ino(long).unwrap(), long_target());
        let kinds: Vec<(String, FileKind)> = fs
            .readdir("/d")
            .unwrap()
            .into_iter()
            .map(|e| (e.name, e.kind))
            .collect();
        assert_eq!(
            kinds,
            [
                ("file".to_string(), FileKind::File),
                ("short".to_string(), FileKind::Symlink)
            ]
        );
        // Errors: an existing name, an empty or too long target, readlink of a file,
        // data calls on a symlink, a hard link to one.
        assert!(matches!(
            fs.symlink("/d/file", b"x"),
            Err(FsError::Exists(_))
        ));
        assert!(matches!(fs.symlink("/e", b""), Err(FsError::NotFound(_))));
        let too_long = vec![b'x'; SYMLINK_TARGET_MAX + 1];
        assert!(matches!(
            fs.symlink("/e", &too_long),
            Err(FsError::NameTooLong(_))
        ));
        assert!(fs.readlink("/d/file").is_err());
        assert!(fs.write(short, 0, b"x").is_err());
        assert!(fs.truncate(short, 0).is_err());
        assert!(matches!(
            fs.link("/d/short", "/d/hard"),
            Err(FsError::Unsupported(_))
        ));
        let dev = fs.unmount().unwrap();
        check_image(&dev, &format!("symlinks-{name}"));
        // After remount: rename (over another symlink), unlink, the rest intact.
        let mut fs = F2fs::mount(dev).unwrap();
        assert_eq!(fs.readlink("/long").unwrap(), long_target());
        fs.rename("/d/short", "/moved").unwrap();
        fs.rename("/moved", "/dangling").unwrap();
        assert_eq!(fs.readlink("/dangling").unwrap(), b"file");
        assert!(
            fs.stat_ino(dangling).is_err(),
            "the replaced symlink is freed"
        );
        fs.unlink("/long").unwrap();
        let names: Vec<String> = fs
            .readdir("/")
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names, ["d", "dangling"]);
        let dev = fs.unmount().unwrap();
        check_image(&dev, &format!("symlinks-after-rename-{name}"));
        let mut fs = F2fs::mount(dev).unwrap();
        assert_eq!(fs.readlink("/dangling").unwrap(), b"file");
        assert_eq!(fs.lookup("/long").unwrap_err().errno(), 2);
    }
}

/// Many symlinks (inline and not) fill directories past their inline dentries; after a
/// checkpoint and a power cut every one is there; fsck agrees.
#[test]
fn many_symlinks_survive_a_power_cut_after_a_checkpoint() {
    let mut fs = fresh(128 * MIB, &android_like());
    fs.mkdir("/links").unwrap();
    for i in 0..300 {
        let target = if i % 37 == 0 {
            long_target()
        } else {
            format!("../target-{i}").into_bytes()
        };
        fs.symlink(&format!("/links/link-{i}"), &target).unwrap();
    }
    fs.sync().unwrap();
    // Made after the checkpoint and never synced: gone after the cut.
    fs.symlink("/links/late", b"late").unwrap();
    let dev = fs.into_device();
    check_image(&dev, "many-symlinks-cut");
    let mut fs = F2fs::mount(dev).unwrap();
    assert_eq!(fs.readdir("/links").unwrap().len(), 300);
    assert!(fs.lookup("/links/late").is_err());
    for i in (0..300).step_by(7) {
        let want = if i % 37 == 0 {
            long_target()
        } else {
            format!("../target-{i}").into_bytes()
        };
        assert_eq!(fs.readlink(&format!("/links/link-{i}")).unwrap(), want);
    }
    for i in (0..300).step_by(2) {
        fs.unlink(&format!("/links/link-{i}")).unwrap();
    }
    let dev = fs.unmount().unwrap();
    check_image(&dev, "many-symlinks-half-removed");
}

/// A symlink written by f2fs-tools (`sload.f2fs` copying a directory with one) reads back
/// here, and one written here is shown by `dump.f2fs` as a symlink inode.
#[test]
fn symlinks_agree_with_f2fs_tools() {
    let (Some(mkfs_bin), Some(sload), Some(dump)) =
        (tool("mkfs.f2fs"), tool("sload.f2fs"), tool("dump.f2fs"))
    else {
        return;
    };
    let dir = TempDir::new("symlink-tools");
    let src = dir.file("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("file"), b"hello").unwrap();
    std::os::unix::fs::symlink("file", src.join("link")).unwrap();
    let image = dir.file("image");
    mkfs_f2fs(&mkfs_bin, &image, 64 * MIB, &[]);
    let out = Command::new(&sload)
        .arg("-f")
        .arg(&src)
        .arg(&image)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "sload.f2fs failed: {out:?}");
    let mut fs = F2fs::mount(MemDevice::import(&image).unwrap()).unwrap();
    assert_eq!(fs.readlink("/link").unwrap(), b"file");
    assert_eq!(fs.stat("/link").unwrap().kind, FileKind::Symlink);
    let ino = fs.symlink("/mine", b"link").unwrap();
    let dev = fs.unmount().unwrap();
    check_image(&dev, "sload-image-plus-symlink");
    let ours = dir.file("ours");
    dev.export(&ours).unwrap();
    let out = Command::new(&dump)
        .arg("-i")
        .arg(format!("{ino:#x}"))
        .arg(&ours)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let mode = text
        .lines()
        .find(|l| l.contains("i_mode"))
        .unwrap_or_else(|| panic!("dump.f2fs shows no i_mode:\n{text}"));
    assert!(mode.contains("41471"), "mode S_IFLNK|0777 (0xa1ff): {mode}");
}
