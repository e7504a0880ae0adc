//! Writes seed corpora for the F2FS fuzz targets: real images made by our mkfs and
//! written as `flashstack fs put` writes them, in the targets' input form (see
//! `fuzz_targets/f2fs/image.rs`). Run from `fuzz/`:
//!
//! ```sh
//! cargo run --example f2fs_seeds            # writes corpus/f2fs_{read,put,mount}/*
//! ```
//!
//! Data blocks of regular files are left out (zeros), which keeps inputs near 100–200 KiB:
//! the metadata, node blocks and dentry blocks are what the targets exercise.

#[path = "../fuzz_targets/f2fs/image.rs"]
mod image;
#[path = "../../crates/f2fs/tests/common/surgery.rs"]
#[allow(dead_code)]
mod surgery;

use surgery::Surgery;

use flashstack_f2fs::consts::FEATURE_INODE_CHKSUM;
use flashstack_f2fs::{mkfs, F2fs, Features, MemDevice, MkfsOptions, XattrMode};

fn fresh(opts: &MkfsOptions) -> F2fs<MemDevice> {
    let mut dev = MemDevice::new(image::DEVICE_BYTES);
    mkfs(&mut dev, opts).expect("mkfs");
    F2fs::mount(dev).expect("mount")
}

fn put(fs: &mut F2fs<MemDevice>, path: &str, data: &[u8]) {
    let ino = fs.create(path).expect("create");
    fs.write(ino, 0, data).expect("write");
}

/// The issue's image: a few files, one of 2 MiB, each in its own mount.
fn issue_image() -> MemDevice {
    let mut dev = fresh(&MkfsOptions::default()).unmount().expect("unmount");
    for (path, len) in [
        ("/small.txt", 6),
        ("/mid.bin", 100_000),
        ("/two.bin", 2 << 20),
    ] {
        let mut fs = F2fs::mount(dev).expect("mount");
        put(&mut fs, path, &vec![0x42; len]);
        dev = fs.unmount().expect("unmount");
    }
    dev
}

/// A hashed directory (50 long names overflow the inline dentries), a sparse file
/// reaching an indirect node, a symlink.
fn tree_image() -> MemDevice {
    let mut fs = fresh(&MkfsOptions::default());
    fs.mkdir("/many").expect("mkdir");
    for i in 0..50 {
        let name = format!("/many/a-rather-long-name-of-forty-bytes-{i:04}");
        put(&mut fs, &name, format!("{i}").as_bytes());
    }
    let ino = fs.create("/sparse.db").expect("create");
    fs.write(ino, 4096 * 5000, b"far").expect("write");
    fs.symlink("/link", b"/many/a-rather-long-name-of-forty-bytes-0001")
        .expect("symlink");
    fs.unmount().expect("unmount")
}

/// Android-like features (inode checksums, extra attributes, flexible inline xattrs),
/// with xattrs; and a power cut after fsyncs, so mount replays a roll-forward chain.
fn android_crash_image() -> MemDevice {
    let features =
        Features::parse("extra_attr,inode_checksum,sb_checksum,compression").expect("features");
    assert!(features.contains(FEATURE_INODE_CHKSUM));
    let mut fs = fresh(&MkfsOptions {
        features,
        ..MkfsOptions::default()
    });
    put(&mut fs, "/app.db", &[7; 9000]);
    let ino = fs.lookup("/app.db").expect("lookup");
    fs.setxattr(ino, b"user.tag", b"seed", XattrMode::Set)
        .expect("setxattr");
    fs.sync().expect("sync");
    fs.write(ino, 9000, &[8; 5000]).expect("write");
    fs.fsync(ino).expect("fsync");
    put(&mut fs, "/late.txt", b"fsync'd after the checkpoint");
    let late = fs.lookup("/late.txt").expect("lookup");
    fs.fsync(late).expect("fsync");
    fs.into_device()
}

fn main() -> std::io::Result<()> {
    let images = [
        ("issue", issue_image()),
        ("tree", tree_image()),
        ("android-crash", android_crash_image()),
    ];
    for target in ["f2fs_read", "f2fs_put", "f2fs_mount"] {
        let dir = std::path::Path::new("corpus").join(target);
        std::fs::create_dir_all(&dir)?;
        for (name, dev) in &images {
            let s = Surgery::new(dev.clone());
            let main = s.sb.main_blkaddr as u64;
            // Everything but the blocks of warm and cold data segments (file data).
            let bytes = image::encode(dev, |lba| {
                lba < main || !matches!(s.sit_entry(((lba - main) / 512) as u32).seg_type(), 1 | 2)
            });
            std::fs::write(dir.join(name), &bytes)?;
            println!("{}: {} bytes", dir.join(name).display(), bytes.len());
        }
    }
    Ok(())
}
