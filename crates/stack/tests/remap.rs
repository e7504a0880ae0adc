//! janusdL (`F2fs::defrag_by_remap`) on the assembled stack: its device is the FTL behind
//! the volatile write cache, which passes REMAP through (destaging first), so a fragmented
//! file becomes one extent with no user data written, reads back through the stack and
//! passes fsck.f2fs.

mod common;

use common::{assert_fsck_clean, try_read_all};
use flashstack_block::VolatileCacheConfig;
use flashstack_stack::{Stack, StackConfig};

fn pattern(len: usize, seed: u64) -> Vec<u8> {
    (0..len)
        .map(|i| ((i as u64).wrapping_mul(seed | 1) >> 3) as u8 ^ seed as u8)
        .collect()
}

/// Two files of `pages` pages written a page at a time, alternately, each page fsync'd (so
/// F2FS lays them interleaved): their inodes and contents.
fn interleaved<D: flashstack_block::BlockDevice>(
    fs: &mut flashstack_f2fs::F2fs<D>,
    pages: usize,
) -> (u32, u32, Vec<u8>, Vec<u8>) {
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
    (a, b, a_bytes, b_bytes)
}

fn defrag_on_the_stack(cache_lbas: u32) {
    let mut s = Stack::new(StackConfig::preset("default").unwrap()).unwrap();
    let config = VolatileCacheConfig {
        capacity_lbas: cache_lbas,
        seed: 5,
    };
    s.set_volatile_cache(config).unwrap();
    let pages = 96;
    let (report, a_bytes, b_bytes) = s
        .with_fs(|fs| {
            let (a, _, a_bytes, b_bytes) = interleaved(fs, pages);
            let data_before = fs.metrics().data_blocks;
            let report = fs.defrag_by_remap(a).unwrap();
            assert_eq!(
                fs.metrics().data_blocks,
                data_before,
                "no user data written"
            );
            (report, a_bytes, b_bytes)
        })
        .unwrap();
    assert!(report.extents_before > 20, "{report:?}");
    assert_eq!(report.extents_after, 1, "{report:?}");
    assert_eq!(report.blocks_remapped, pages as u64, "{report:?}");
    let device = s.device().unwrap().counters();
    assert_eq!(device.host_remap_lbas, pages as u64);
    assert_eq!(try_read_all(&mut s, "/a.db").unwrap(), a_bytes);
    assert_eq!(try_read_all(&mut s, "/b.db").unwrap(), b_bytes);
    assert_fsck_clean(&mut s, &format!("janusd-l-cache-{cache_lbas}"));
}

#[test]
fn janusd_l_runs_on_the_stack_write_through() {
    defrag_on_the_stack(0);
}

#[test]
fn janusd_l_runs_on_the_stack_behind_a_volatile_cache() {
    defrag_on_the_stack(256);
}

/// `fs defrag --mode L` on a plain image: an FTL built under it
/// (`image_ftl::ftl_holding`), janusdL on F2FS mounted there, the result read back
/// (`image_ftl::image_of`): the image mounts alone, reads back exactly, holds the file in
/// one extent; a device smaller than the image is refused, naming both sizes.
#[test]
fn janusd_l_on_an_image_through_an_ftl_built_under_it() {
    use flashstack_block::BlockDevice;
    use flashstack_f2fs::{mkfs, F2fs, MemDevice, MkfsOptions};
    use flashstack_stack::image_ftl::{ftl_holding, image_of};
    let device = StackConfig::preset("default").unwrap().device;
    let mut mem = MemDevice::new(256 << 20);
    mkfs(&mut mem, &MkfsOptions::default()).unwrap();
    let mut fs = F2fs::mount(mem).unwrap();
    let pages = 48;
    let (a, b, a_bytes, b_bytes) = interleaved(&mut fs, pages);
    let mem = fs.unmount().unwrap();
    let capacity = mem.capacity_lbas();
    let (ftl, start_ns) = ftl_holding(&mem, device.clone(), 1).unwrap();
    let mut fs = F2fs::mount_at(ftl, start_ns).unwrap();
    let report = fs.defrag_by_remap(a).unwrap();
    assert_eq!(report.extents_after, 1, "{report:?}");
    let mut ftl = fs.unmount().unwrap();
    assert_eq!(ftl.counters().host_remap_lbas, pages as u64);
    let image = image_of(&mut ftl, capacity, 0).unwrap();
    let mut fs = F2fs::mount(image).unwrap();
    assert_eq!(fs.read(a, 0, pages * 4096).unwrap(), a_bytes);
    assert_eq!(fs.read(b, 0, pages * 4096).unwrap(), b_bytes);
    let addrs = fs.file_block_addrs(a).unwrap();
    assert!(addrs.windows(2).all(|w| w[1] == w[0] + 1), "{addrs:?}");

    let huge = MemDevice::new(1 << 50);
    let e = ftl_holding(&huge, device, 1).err().expect("too small");
    assert!(e.to_string().contains("more than the"), "{e}");
}
