//! Extended attributes in the inline xattr area: set, get, list, replace, remove, the
//! flags, ENOSPC when the area is full, remount, fsync + power cut (roll-forward), and
//! fsck.f2fs on the images.

mod common;

use common::*;
use flashstack_f2fs::{mkfs, F2fs, FsError, MemDevice, MkfsOptions, XattrMode};

fn fresh(opts: &MkfsOptions) -> F2fs<MemDevice> {
    let mut dev = MemDevice::new(128 * MIB);
    mkfs(&mut dev, opts).unwrap();
    F2fs::mount(dev).unwrap()
}

fn names(fs: &mut F2fs<MemDevice>, ino: u32) -> Vec<String> {
    fs.listxattr(ino)
        .unwrap()
        .into_iter()
        .map(|n| String::from_utf8(n).unwrap())
        .collect()
}

#[test]
fn xattrs_are_set_listed_replaced_removed_and_pass_fsck() {
    for (name, opts) in [
        ("default", MkfsOptions::default()),
        ("android", android_like()),
    ] {
        let mut fs = fresh(&opts);
        let f = fs.create("/f").unwrap();
        fs.write(f, 0, b"inline data beside the xattrs").unwrap();
        let big = fs.create("/big").unwrap();
        fs.write(big, 0, &vec![7u8; 20_000]).unwrap();
        let d = fs.mkdir("/d").unwrap();
        let link = fs.symlink("/link", b"f").unwrap();
        for ino in [f, big, d, link] {
            fs.setxattr(ino, b"user.a", b"1", XattrMode::Set).unwrap();
            fs.setxattr(ino, b"trusted.b", b"two", XattrMode::Set)
                .unwrap();
            fs.setxattr(
                ino,
                b"security.selinux",
                b"u:object_r:app_data_file:s0\0",
                XattrMode::Set,
            )
            .unwrap();
        }
        assert_eq!(
            names(&mut fs, f),
            ["user.a", "trusted.b", "security.selinux"]
        );
        assert_eq!(fs.getxattr(d, b"trusted.b").unwrap(), b"two");
        // Flags and errors (errno as the kernel's).
        let e = fs
            .setxattr(f, b"user.a", b"x", XattrMode::Create)
            .unwrap_err();
        assert_eq!(e.errno(), 17, "EEXIST");
        let e = fs
            .setxattr(f, b"user.none", b"x", XattrMode::Replace)
            .unwrap_err();
        assert_eq!(e.errno(), 61, "ENODATA");
        assert_eq!(fs.getxattr(f, b"user.none").unwrap_err().errno(), 61);
        assert_eq!(fs.removexattr(f, b"user.none").unwrap_err().errno(), 61);
        assert_eq!(
            fs.setxattr(f, b"system.x", b"", XattrMode::Set)
                .unwrap_err()
                .errno(),
            95,
            "EOPNOTSUPP"
        );
        // Replace moves the entry to the end; an empty value is a value.
        fs.setxattr(f, b"user.a", b"", XattrMode::Replace).unwrap();
        assert_eq!(fs.getxattr(f, b"user.a").unwrap(), b"");
        assert_eq!(
            names(&mut fs, f),
            ["trusted.b", "security.selinux", "user.a"]
        );
        fs.removexattr(big, b"trusted.b").unwrap();
        // The 200-byte inline area fills: ENOSPC, nothing changed.
        let mut filled = 0;
        let err = loop {
            match fs.setxattr(
                big,
                format!("user.k{filled}").as_bytes(),
                &[9u8; 20],
                XattrMode::Set,
            ) {
                Ok(()) => filled += 1,
                Err(e) => break e,
            }
            assert!(filled < 100);
        };
        assert!(matches!(err, FsError::NoSpace), "{err:?}");
        assert!(filled >= 2, "{filled}");
        assert_eq!(fs.listxattr(big).unwrap().len(), 2 + filled);
        // Data and the directory still work beside full xattrs.
        assert_eq!(
            fs.read(f, 0, 100).unwrap(),
            b"inline data beside the xattrs"
        );
        for i in 0..40 {
            fs.create(&format!("/d/file-{i}")).unwrap();
        }
        assert_eq!(fs.getxattr(d, b"user.a").unwrap(), b"1");
        let dev = fs.unmount().unwrap();
        check_image(&dev, &format!("xattrs-{name}"));
        let mut fs = F2fs::mount(dev).unwrap();
        assert_eq!(
            names(&mut fs, f),
            ["trusted.b", "security.selinux", "user.a"]
        );
        assert_eq!(fs.getxattr(link, b"trusted.b").unwrap(), b"two");
        assert_eq!(
            fs.getxattr(big, format!("user.k{}", filled - 1).as_bytes())
                .unwrap(),
            [9u8; 20]
        );
        assert_eq!(fs.read(big, 0, 20_000).unwrap(), vec![7u8; 20_000]);
        for ino in [f, big, d, link] {
            for n in fs.listxattr(ino).unwrap() {
                fs.removexattr(ino, &n).unwrap();
            }
            assert!(fs.listxattr(ino).unwrap().is_empty());
        }
        fs.unlink("/f").unwrap();
        let dev = fs.unmount().unwrap();
        check_image(&dev, &format!("xattrs-removed-{name}"));
    }
}

/// An xattr set then fsync'd survives a power cut (roll-forward copies the inline xattr
/// area of the fsync'd inode); one set after the fsync does not.
#[test]
fn fsynced_xattrs_survive_a_power_cut() {
    let mut fs = fresh(&android_like());
    let small = fs.create("/small").unwrap();
    let big = fs.create("/big").unwrap();
    fs.sync().unwrap();
    fs.write(small, 0, b"tiny").unwrap();
    fs.write(big, 0, &vec![1u8; 10_000]).unwrap();
    for ino in [small, big] {
        fs.setxattr(ino, b"user.kept", b"yes", XattrMode::Set)
            .unwrap();
        fs.fsync(ino).unwrap();
        fs.setxattr(ino, b"user.lost", b"no", XattrMode::Set)
            .unwrap();
    }
    let dev = fs.into_device();
    check_image(&dev, "xattr-cut");
    let mut fs = F2fs::mount(dev).unwrap();
    for ino in [small, big] {
        assert_eq!(fs.getxattr(ino, b"user.kept").unwrap(), b"yes");
        assert!(fs.getxattr(ino, b"user.lost").is_err());
    }
    assert_eq!(fs.read(big, 0, 10_000).unwrap(), vec![1u8; 10_000]);
    let dev = fs.unmount().unwrap();
    check_image(&dev, "xattr-recovered");
}
