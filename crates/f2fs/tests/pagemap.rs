//! The addressing and codec layer (`src/fs/pagemap.rs`): what it refuses. A file flagged
//! compressed (`F2FS_COMPR_FL`) whose cluster attributes are invalid, or a slot holding
//! `COMPRESS_ADDR` in a file not flagged compressed, is refused by every data path —
//! read, write, truncation, fallocate — with an error naming the inode, before anything
//! changes. (Compressed files themselves: `tests/compress.rs`.)

mod common;

use common::surgery::{pattern, Surgery};
use common::*;
use flashstack_f2fs::consts::COMPRESS_ADDR;
use flashstack_f2fs::{mkfs, F2fs, FallocMode, Features, FsError, MemDevice, MkfsOptions};

/// `F2FS_COMPR_FL` of `i_flags`.
const COMPR_FL: u32 = 0x4;

/// A 64 MiB image with `extra_attr,compression,inode_checksum` and two files of
/// three and a half pages.
fn image() -> (MemDevice, u32, u32, Vec<u8>) {
    let (dev, a, b, _, data) = image_with_sparse();
    (dev, a, b, data)
}

/// [`image`] and a third file whose first two pages are holes.
fn image_with_sparse() -> (MemDevice, u32, u32, u32, Vec<u8>) {
    let opts = MkfsOptions {
        features: Features::parse("extra_attr,inode_checksum,compression").unwrap(),
        ..MkfsOptions::default()
    };
    let mut dev = MemDevice::new(64 * MIB);
    mkfs(&mut dev, &opts).unwrap();
    let data = pattern(3 * 4096 + 100, 5);
    let mut fs = F2fs::mount(dev).unwrap();
    let a = fs.create("/a.bin").unwrap();
    let b = fs.create("/b.bin").unwrap();
    fs.write(a, 0, &data).unwrap();
    fs.write(b, 0, &data).unwrap();
    let c = fs.create("/c.bin").unwrap();
    fs.write(c, 8192, b"tail").unwrap();
    (fs.unmount().unwrap(), a, b, c, data)
}

/// Any error naming the inode (a corrupt attribute or a refusal).
fn assert_error(r: Result<impl std::fmt::Debug, FsError>, ino: u32, what: &str) {
    match r {
        Err(e) => {
            let m = e.to_string();
            assert!(m.contains(&format!("inode {ino}")), "{what}: {m}");
            println!("{what}: refused: {m}");
        }
        other => panic!("{what}: expected an error naming inode {ino}, got {other:?}"),
    }
}

fn assert_refused(r: Result<impl std::fmt::Debug, FsError>, ino: u32, what: &str) {
    match r {
        Err(FsError::Unsupported(m)) => {
            assert!(m.contains(&format!("inode {ino}")), "{what}: {m}");
            println!("{what}: refused: {m}");
        }
        other => panic!("{what}: expected a refusal naming inode {ino}, got {other:?}"),
    }
}

#[test]
fn flagged_files_with_no_cluster_size_are_refused_by_every_data_path_and_left_intact() {
    let (dev, a, b, c, data) = image_with_sparse();
    let mut s = Surgery::new(dev);
    s.edit_inode(a, |i| i.flags |= COMPR_FL);
    s.edit_inode(c, |i| i.flags |= COMPR_FL);
    let mut fs = F2fs::mount(s.into_dev()).expect("the compression feature alone mounts");
    // `i_log_cluster_size` 0 (the flag set without the attributes) is no cluster size.
    assert_error(fs.read(a, 0, 10), a, "read");
    // A hole of a compressed file is no proof of zeros (a cluster's saved pages are
    // `NEW_ADDR`): refused too.
    assert_error(fs.read(c, 0, 10), c, "read of a hole");
    assert_error(fs.write(a, 5, b"xyz"), a, "write");
    assert_error(fs.write(a, 40_000, b"xyz"), a, "append");
    assert_error(fs.truncate(a, 4096), a, "truncate");
    assert_refused(
        fs.fallocate(a, FallocMode::Allocate { keep_size: false }, 0, 65536),
        a,
        "fallocate",
    );
    // The plain file beside it is read and written as ever.
    assert_eq!(fs.read(b, 0, data.len()).unwrap(), data);
    fs.write(b, 1, b"ok").unwrap();
    let dev = fs.unmount().unwrap();
    // Nothing of the refused file changed: without the flag it reads back whole.
    let mut s = Surgery::new(dev);
    assert_eq!(s.inode(a).size, data.len() as u64);
    s.edit_inode(a, |i| i.flags &= !COMPR_FL);
    let dev = s.into_dev();
    check_image(&dev, "pagemap refusals");
    let mut fs = F2fs::mount(dev).unwrap();
    assert_eq!(fs.read(a, 0, data.len()).unwrap(), data);
}

/// A `COMPRESS_ADDR` word in a file not flagged compressed: reading the page is refused
/// as corrupt, and truncating past it refused before any slot is cleared (before the
/// seam, truncation dropped it silently and miscounted `i_blocks`).
#[test]
fn a_stray_compress_addr_is_never_dropped_silently() {
    let (dev, a, _, data) = image();
    let mut s = Surgery::new(dev);
    let blocks_before = s.inode(a).blocks;
    // Page 0's slot: the refusal comes before any slot is cleared.
    s.edit_inode(a, |i| {
        let extra = i.extra_words();
        i.addr[extra] = COMPRESS_ADDR;
    });
    let mut fs = F2fs::mount(s.into_dev()).unwrap();
    assert!(fs.read(a, 0, 10).is_err(), "page 0 is no block");
    assert_eq!(fs.read(a, 4096, 10).unwrap(), &data[4096..4106]);
    assert_refused(fs.truncate(a, 0), a, "truncate over COMPRESS_ADDR");
    let dev = fs.unmount().unwrap();
    let s = Surgery::new(dev);
    assert_eq!(s.inode(a).blocks, blocks_before, "i_blocks unchanged");
}
