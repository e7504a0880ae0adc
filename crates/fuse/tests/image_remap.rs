//! REMAP through [`ImageBacked`], the mirror `flashstack mount` puts over its FTL: a remap
//! reaches the image file as the destination's new contents (at once, or at `resume` when
//! paused), and janusdL on F2FS mounted over the mirror leaves an image that mounts from
//! the file alone, reads back exactly, holds the file in one extent and passes fsck.f2fs.

use std::fs::File;
use std::os::unix::fs::FileExt;

use flashstack_block::{BlockDevice, Hints, Payload, LBA_SIZE};
use flashstack_f2fs::{mkfs_timed, F2fs, MemDevice, MkfsOptions};
use flashstack_ftl::{presets, DeviceConfig, Ftl};
use flashstack_fuse::ImageBacked;

fn small_ufs() -> DeviceConfig {
    let mut config = presets::ufs31();
    config.nand.geometry.blocks_per_plane = 24;
    config.nand.geometry.pages_per_block = 256;
    config
}

fn pattern(len: usize, seed: u64) -> Vec<u8> {
    (0..len)
        .map(|i| ((i as u64).wrapping_mul(seed | 1) >> 3) as u8 ^ seed as u8)
        .collect()
}

fn image(name: &str, ftl: &Ftl) -> (std::path::PathBuf, File) {
    let path = flashstack_testkit::scratch_dir("flashstack-image-remap").join(name);
    let file = File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    file.set_len(ftl.capacity_lbas() * LBA_SIZE as u64).unwrap();
    (path, file)
}

fn block_of(file: &File, lba: u64) -> Vec<u8> {
    let mut out = vec![0u8; LBA_SIZE];
    file.read_exact_at(&mut out, lba * LBA_SIZE as u64).unwrap();
    out
}

#[test]
fn a_remap_reaches_the_image_file_now_or_at_resume() {
    for paused in [false, true] {
        let ftl = Ftl::new(small_ufs(), true, 1).unwrap();
        let (path, file) = image(&format!("direct-{paused}.img"), &ftl);
        let mirror = file.try_clone().unwrap();
        let mut dev = if paused {
            ImageBacked::paused(ftl, file)
        } else {
            ImageBacked::new(ftl, file)
        };
        let (src, zero_src) = (pattern(2 * LBA_SIZE, 3), vec![0u8; LBA_SIZE]);
        dev.write(0, 10, Payload::Bytes(&src), Hints::default())
            .unwrap();
        dev.write(
            1,
            40,
            Payload::Bytes(&pattern(LBA_SIZE, 9)),
            Hints::default(),
        )
        .unwrap();
        dev.write(
            2,
            20,
            Payload::Bytes(&pattern(3 * LBA_SIZE, 5)),
            Hints::default(),
        )
        .unwrap();
        // Not flushed: the remap itself must make the source's writes reach the image.
        let remap = dev.as_remap().expect("the FTL remaps through the mirror");
        remap.remap(3, 10, 20, 2).unwrap();
        remap.remap(4, 30, 22, 1).unwrap(); // an unmapped source: the destination reads zeros
        let want = |f: &File| {
            assert_eq!(block_of(f, 20), &src[..LBA_SIZE]);
            assert_eq!(block_of(f, 21), &src[LBA_SIZE..]);
            assert_eq!(block_of(f, 22), zero_src);
            assert_eq!(block_of(f, 40), pattern(LBA_SIZE, 9));
        };
        if paused {
            assert_eq!(
                block_of(&mirror, 20),
                zero_src,
                "paused: nothing written yet"
            );
            dev.resume().unwrap();
        }
        want(&mirror);
        let _ = std::fs::remove_file(path);
    }
}

#[test]
fn janusd_l_through_the_mirror_leaves_a_good_image() {
    let mut ftl = Ftl::new(small_ufs(), true, 3).unwrap();
    let (path, file) = image("janusd-l.img", &ftl);
    let (_, formatted_ns) = mkfs_timed(&mut ftl, &MkfsOptions::default()).unwrap();
    // The image file starts as the formatted device's contents, as `flashstack mount`
    // loads it before mirroring.
    let mut out = vec![0u8; LBA_SIZE];
    for lba in 0..ftl.capacity_lbas() {
        ftl.read(formatted_ns, lba, 1, Some(&mut out)).unwrap();
        if out.iter().any(|&b| b != 0) {
            file.write_all_at(&out, lba * LBA_SIZE as u64).unwrap();
        }
    }
    let mut fs = F2fs::mount_at(ImageBacked::new(ftl, file), formatted_ns).unwrap();
    let pages = 64;
    let (a_bytes, b_bytes) = (pattern(pages * 4096, 7), pattern(pages * 4096, 11));
    let a = fs.create("/a.db").unwrap();
    let b = fs.create("/b.db").unwrap();
    for i in 0..pages {
        let at = i * 4096;
        fs.write(a, at as u64, &a_bytes[at..at + 4096]).unwrap();
        fs.fsync(a).unwrap();
        fs.write(b, at as u64, &b_bytes[at..at + 4096]).unwrap();
        fs.fsync(b).unwrap();
    }
    let report = fs.defrag_by_remap(a).unwrap();
    assert!(report.extents_before > 20, "{report:?}");
    assert_eq!(report.extents_after, 1, "{report:?}");
    let backed = fs.unmount().unwrap();
    assert_eq!(backed.inner().counters().host_remap_lbas, pages as u64);
    drop(backed);
    let mut fs = F2fs::mount(MemDevice::import(&path).unwrap()).unwrap();
    assert_eq!(fs.read(a, 0, pages * 4096).unwrap(), a_bytes);
    assert_eq!(fs.read(b, 0, pages * 4096).unwrap(), b_bytes);
    let addrs = fs.file_block_addrs(a).unwrap();
    assert!(
        addrs.windows(2).all(|w| w[1] == w[0] + 1),
        "one extent in the image"
    );
    drop(fs);
    flashstack_testkit::assert_fsck_clean(&path, "janusdL through ImageBacked");
    let _ = std::fs::remove_file(path);
}
