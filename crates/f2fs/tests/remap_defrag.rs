//! janusdL (`F2fs::defrag_by_remap`) on F2FS over the emulated FTL: a fragmented file
//! becomes one extent with no user data written by F2FS or programmed by the device (only
//! REMAPs and metadata), reads back exactly before and after a remount, the other file is
//! untouched, and the image read back out of the flash passes fsck.f2fs.

mod common;

use common::*;
use flashstack_block::explore::{lost_bytes, Exploration};
use flashstack_block::{
    BlockDevice, BlockError, Completion, Hints, Payload, Remap, RemapExtent, LBA_SIZE,
};
use flashstack_f2fs::{mkfs_timed, F2fs, FsError, MemDevice, MkfsOptions};
use flashstack_ftl::{presets, DeviceConfig, Ftl};

/// `ufs31` shrunk to 24 blocks per plane (768 MiB raw, a few hundred MiB for F2FS).
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

/// Two files written a page at a time, alternately, each page fsync'd: F2FS's logs lay
/// their blocks interleaved, so each file has as many extents as pages.
fn fragmented(pages: usize) -> (F2fs<Ftl>, u32, u32, Vec<u8>, Vec<u8>) {
    let mut ftl = Ftl::new(small_ufs(), true, 3).unwrap();
    let (_, formatted_ns) = mkfs_timed(&mut ftl, &MkfsOptions::default()).unwrap();
    let mut fs = F2fs::mount_at(ftl, formatted_ns).unwrap();
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
    fs.sync().unwrap();
    (fs, a, b, a_bytes, b_bytes)
}

#[test]
fn janusd_l_defragments_without_writing_user_data() {
    let pages = 200;
    let (mut fs, a, b, a_bytes, b_bytes) = fragmented(pages);
    let before = fs.metrics().clone();
    let device_before = fs.device().counters().clone();
    let report = fs.defrag_by_remap(a).unwrap();
    eprintln!("janusdL: {report:?}");
    assert!(report.extents_before > 50, "{report:?}");
    assert_eq!(report.extents_after, 1, "{report:?}");
    assert_eq!(report.blocks_remapped, pages as u64);
    assert_eq!(report.remap_extents, 200, "every page was its own run");
    assert_eq!(report.remap_requests, 1, "one record page holds them all");
    let after = fs.metrics().clone();
    let device = fs.device().counters().clone();
    // No user data through F2FS: no data block written, moved or written in place.
    assert_eq!(after.data_blocks, before.data_blocks);
    assert_eq!(after.gc_data_blocks, before.gc_data_blocks);
    assert_eq!(after.ipu_data_blocks, before.ipu_data_blocks);
    // The device remapped every block and programmed no GC/host data beyond F2FS's
    // metadata (nodes, checkpoint, NAT/SIT/SSA): far fewer than the file's blocks.
    assert_eq!(
        device.host_remap_lbas - device_before.host_remap_lbas,
        pages as u64
    );
    let host_lbas = device.host_write_lbas - device_before.host_write_lbas;
    assert!(
        host_lbas < pages as u64 / 4,
        "metadata only: {host_lbas} LBAs written"
    );
    assert_eq!(device.program_slots_gc, device_before.program_slots_gc);
    eprintln!(
        "device: {} remap requests, {} record pages, {host_lbas} LBAs of metadata",
        device.host_remap_requests - device_before.host_remap_requests,
        device.remap_record_pages - device_before.remap_record_pages
    );
    assert_eq!(fs.read(a, 0, pages * 4096).unwrap(), a_bytes);
    assert_eq!(fs.read(b, 0, pages * 4096).unwrap(), b_bytes);

    let ftl = fs.unmount().unwrap();
    let mut fs = F2fs::mount(ftl).unwrap();
    assert_eq!(fs.read(a, 0, pages * 4096).unwrap(), a_bytes);
    assert_eq!(fs.read(b, 0, pages * 4096).unwrap(), b_bytes);
    let mut ftl = fs.unmount().unwrap();
    ftl.check_invariants().unwrap();
    fsck_the_flash(&mut ftl, "after janusdL");
}

/// A power cut right after the REMAPs and before the checkpoint: the previous checkpoint
/// still reads the file exactly (the old addresses still map to the data).
#[test]
fn a_cut_before_janusd_l_checkpoints_keeps_the_old_layout() {
    let pages = 64;
    let (fs, a, _, a_bytes, _) = fragmented(pages);
    let mut ftl = fs.into_device();
    let capacity = ftl.capacity_lbas();
    // Replay the remaps janusdL would issue without its checkpoint: remap every block of
    // the file onto a free range at the end of the device, then cut power.
    let mut fs = F2fs::mount(ftl).unwrap();
    let addrs = fs.file_block_addrs(a).unwrap();
    ftl = fs.into_device();
    let base = capacity - 4096;
    for (i, &addr) in addrs.iter().enumerate() {
        ftl.remap(0, addr as u64, base + i as u64, 1).unwrap();
    }
    ftl.nand_mut().cut_power();
    ftl.power_cycle(1).unwrap();
    let mut fs = F2fs::mount(ftl).unwrap();
    assert_eq!(fs.read(a, 0, pages * 4096).unwrap(), a_bytes);
    let mut ftl = fs.unmount().unwrap();
    fsck_the_flash(&mut ftl, "after a cut before janusdL's checkpoint");
}

#[test]
fn janusd_l_needs_a_device_with_remap() {
    let mut dev = MemDevice::new(256 << 20);
    let (_, t) = mkfs_timed(&mut dev, &MkfsOptions::default()).unwrap();
    let mut fs = F2fs::mount_at(dev, t).unwrap();
    let f = fs.create("/f").unwrap();
    fs.write(f, 0, &[1u8; 8192]).unwrap();
    assert!(matches!(
        fs.defrag_by_remap(f),
        Err(FsError::Unsupported(_))
    ));
}

/// Every mapped LBA of the FTL into a RAM disk, exported, judged by fsck.f2fs.
fn fsck_the_flash(ftl: &mut Ftl, what: &str) {
    let Some(fsck_bin) = tool("fsck.f2fs") else {
        return;
    };
    let capacity = ftl.capacity_lbas();
    let mut copy = MemDevice::new(capacity * LBA_SIZE as u64);
    let mut buf = vec![0u8; LBA_SIZE];
    let mapped: Vec<u64> = (0..capacity).filter(|&l| ftl.is_mapped(l)).collect();
    for lba in mapped {
        ftl.read(0, lba, 1, Some(&mut buf)).unwrap();
        copy.write(0, lba, Payload::Bytes(&buf), Hints::default())
            .unwrap();
    }
    let dir = TempDir::new(&format!("remap-defrag-{}", what.len()));
    let image = dir.file("image");
    copy.export(&image).unwrap();
    assert_clean(&fsck(&fsck_bin, &image), what);
}

/// The FTL with a power cut before its `n`-th request (write, trim, flush or remap).
struct CutBeforeRequest {
    ftl: Ftl,
    left: u64,
}

impl CutBeforeRequest {
    fn tick(&mut self) {
        self.left = self.left.saturating_sub(1);
        if self.left == 0 {
            self.ftl.nand_mut().cut_power();
        }
    }
}

impl BlockDevice for CutBeforeRequest {
    fn capacity_lbas(&self) -> u64 {
        self.ftl.capacity_lbas()
    }
    fn write(
        &mut self,
        at: u64,
        lba: u64,
        payload: Payload<'_>,
        hints: Hints,
    ) -> Result<Completion, BlockError> {
        self.tick();
        self.ftl.write(at, lba, payload, hints)
    }
    fn read(
        &mut self,
        at: u64,
        lba: u64,
        count: u32,
        out: Option<&mut [u8]>,
    ) -> Result<Completion, BlockError> {
        self.ftl.read(at, lba, count, out)
    }
    fn trim(&mut self, at: u64, lba: u64, count: u32) -> Result<Completion, BlockError> {
        self.tick();
        self.ftl.trim(at, lba, count)
    }
    fn flush(&mut self, at: u64) -> Result<Completion, BlockError> {
        self.tick();
        self.ftl.flush(at)
    }
    fn as_remap(&mut self) -> Option<&mut dyn Remap> {
        Some(self)
    }
}

impl Remap for CutBeforeRequest {
    fn remap_lbas_max(&self) -> u32 {
        self.ftl.remap_lbas_max()
    }
    fn remap_extents(
        &mut self,
        at: u64,
        extents: &[RemapExtent],
    ) -> Result<Completion, BlockError> {
        self.tick();
        self.ftl.remap_extents(at, extents)
    }
}

/// A power cut at every device request of a janusdL pass (before the remap, between the
/// checkpoint's writes and flushes, between the discards), and at every NAND operation of
/// it (tearing the remap's record page, the checkpoint's pages, the discards' records),
/// one run each from the same saved device: after recovery both files read back exactly
/// (they were synced before the pass), whichever layout the cut left; fsck.f2fs on every
/// 8th recovered image and on the last of each sweep.
#[test]
fn power_cut_at_every_point_of_a_janusd_l_pass() {
    let pages = 64;
    let (fs, a, b, a_bytes, b_bytes) = fragmented(pages);
    let parts = fs.unmount().unwrap().to_parts().unwrap();
    let mut tally = Exploration::new("f2fs janusd_l_cut_sweep").durable_by("synced");
    for by_request in [true, false] {
        let mut cuts_here = 0;
        for cut in 1..400u64 {
            let (mut ftl, done) = Ftl::from_parts(small_ufs(), parts.clone(), 3, 0).unwrap();
            if !by_request {
                ftl.nand_mut().arm_power_cut(cut);
            }
            let mut fs = F2fs::mount_at(
                CutBeforeRequest {
                    ftl,
                    left: if by_request { cut } else { u64::MAX },
                },
                done.complete_ns,
            )
            .unwrap();
            let result = fs.defrag_by_remap(a);
            let mut ftl = fs.into_device().ftl;
            let finished = result.is_ok();
            if !finished {
                assert!(!ftl.nand().is_powered(), "cut {cut}: {result:?}");
                tally.cut();
                cuts_here += 1;
            }
            ftl.nand_mut().disarm_power_cut();
            ftl.power_cycle(1 << 40).unwrap();
            ftl.check_invariants().unwrap();
            let mut fs = F2fs::mount(ftl).unwrap();
            let (got_a, got_b) = (
                fs.read(a, 0, pages * 4096).unwrap(),
                fs.read(b, 0, pages * 4096).unwrap(),
            );
            tally.checked(
                2 * (pages * 4096) as u64,
                lost_bytes(&a_bytes, &got_a) + lost_bytes(&b_bytes, &got_b),
            );
            assert!(
                got_a == a_bytes && got_b == b_bytes,
                "cut {cut} (by request: {by_request})"
            );
            let mut ftl = fs.unmount().unwrap();
            if cut % 8 == 0 || finished {
                fsck_the_flash(
                    &mut ftl,
                    &format!("after cut {cut}, by request {by_request}"),
                );
            }
            if finished {
                break;
            }
        }
        assert!(
            cuts_here > 3,
            "the pass must have points to cut: {cuts_here}"
        );
    }
    tally.report();
}
