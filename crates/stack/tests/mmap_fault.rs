//! Faults on a mapped file through the whole stack (`Stack::fault_at`,
//! `cache.readahead.mmap`): with `off` a fault is exactly a 4 KiB `read_at` (same bytes,
//! same completion time, same block requests); with `read-around` a launch that touches
//! a 2 MiB library in jumps reads the same bytes in fewer requests and less time.

use flashstack_cache::{MmapPolicy, ReadaheadConfig};
use flashstack_sqlvfs::{FileApi, OpenFlags};
use flashstack_stack::{Stack, StackConfig};

const PAGES: u64 = 512;

fn stack(mmap: MmapPolicy) -> (Stack, Vec<u8>) {
    let mut config = StackConfig::preset("ufs31").unwrap();
    config.device.nand.geometry.blocks_per_plane = 40;
    config.device.nand.geometry.pages_per_block = 192;
    config.cache.readahead = ReadaheadConfig {
        mmap,
        ..ReadaheadConfig::linux()
    };
    let mut s = Stack::new(config).unwrap();
    let data: Vec<u8> = (0..PAGES * 4096)
        .map(|i| (i as u8).wrapping_mul(29) ^ (i >> 12) as u8)
        .collect();
    s.with_fs(|fs| {
        let f = fs.create("/lib.so").unwrap();
        fs.write(f, 0, &data).unwrap();
        fs.sync().unwrap();
    })
    .unwrap();
    (s, data)
}

/// Touches every page of `/lib.so` cold, in 16-page pieces visited 7 pieces apart (32
/// pieces), by faults or 4 KiB reads: the time taken, the block requests, and the bytes.
fn touch(s: &mut Stack, faults: bool) -> (u64, u64, Vec<u8>) {
    s.drop_caches().unwrap();
    let fs_now = s.with_fs(|fs| fs.now_ns()).unwrap();
    let t0 = s
        .idle_until(fs_now.max(s.now_ns()) + 1_000_000_000)
        .unwrap();
    let before = s.with_fs(|fs| fs.metrics().read_requests).unwrap();
    let (h, mut t) = s.open(t0, "/lib.so", OpenFlags::default()).unwrap();
    let mut out = vec![0u8; (PAGES * 4096) as usize];
    let pieces = PAGES / 16;
    for k in 0..pieces {
        let piece = (k * 7) % pieces;
        for page in piece * 16..piece * 16 + 16 {
            let at = page * 4096;
            let buf = &mut out[at as usize..(at + 4096) as usize];
            let (n, done) = match faults {
                true => s.fault_at(t, h, at, buf),
                false => s.read_at(t, h, at, buf),
            }
            .unwrap();
            assert_eq!(n, 4096);
            t = done;
        }
    }
    let t = s.close(t, h).unwrap();
    let requests = s.with_fs(|fs| fs.metrics().read_requests).unwrap() - before;
    (t - t0, requests, out)
}

#[test]
fn mmap_off_faults_are_reads_and_read_around_reads_the_jumps_in_windows() {
    let (mut reads, data) = stack(MmapPolicy::Off);
    let by_read = touch(&mut reads, false);
    let (mut off, _) = stack(MmapPolicy::Off);
    let by_fault_off = touch(&mut off, true);
    assert!(by_read.2 == data && by_fault_off.2 == data, "bytes differ");
    assert_eq!(
        (by_fault_off.0, by_fault_off.1),
        (by_read.0, by_read.1),
        "off: a fault is a 4 KiB read"
    );
    let (mut around, _) = stack(MmapPolicy::ReadAround);
    let by_fault = touch(&mut around, true);
    assert!(by_fault.2 == data, "bytes differ under read-around");
    let m = around.metrics().unwrap().cache.clone();
    println!(
        "2 MiB touched in 64 KiB jumps: reads {} requests {:.3} ms; read-around {} requests {:.3} ms ({} major faults, {} windows)",
        by_read.1,
        by_read.0 as f64 / 1e6,
        by_fault.1,
        by_fault.0 as f64 / 1e6,
        m.mmap_major_faults,
        m.mmap_windows
    );
    assert_eq!(m.mmap_faults, PAGES);
    assert!(m.mmap_windows > 0 && m.mmap_windows == m.mmap_major_faults);
    assert!(by_fault.1 < by_read.1, "read-around makes fewer requests");
    assert!(by_fault.0 < by_read.0, "and takes less time");
}
