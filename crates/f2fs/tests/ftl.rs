//! mkfs through the emulated FTL (the LDC paper's 16 GiB eMMC, page contents stored): the
//! bytes that come back out of the flash model are a valid F2FS, identical to what the
//! in-memory device holds, and the format took simulated flash time.

mod common;

use std::collections::BTreeSet;

use common::*;
use flashstack_block::{BlockDevice, BlockError, Completion, Hints, Payload, LBA_SIZE};
use flashstack_f2fs::{mkfs, mkfs_timed, mount_at, F2fs, MemDevice, MkfsOptions};
use flashstack_ftl::{presets, Ftl};
use flashstack_sim::Nanos;

/// Passes requests through and remembers which LBAs were written.
struct Recording<'a, D: BlockDevice> {
    inner: &'a mut D,
    written: BTreeSet<u64>,
}

impl<D: BlockDevice> BlockDevice for Recording<'_, D> {
    fn capacity_lbas(&self) -> u64 {
        self.inner.capacity_lbas()
    }

    fn write(
        &mut self,
        arrival_ns: Nanos,
        lba: u64,
        payload: Payload<'_>,
        hints: Hints,
    ) -> Result<Completion, BlockError> {
        self.written.extend(lba..lba + payload.lba_count() as u64);
        self.inner.write(arrival_ns, lba, payload, hints)
    }

    fn read(
        &mut self,
        arrival_ns: Nanos,
        lba: u64,
        count: u32,
        out: Option<&mut [u8]>,
    ) -> Result<Completion, BlockError> {
        self.inner.read(arrival_ns, lba, count, out)
    }

    fn trim(&mut self, arrival_ns: Nanos, lba: u64, count: u32) -> Result<Completion, BlockError> {
        self.inner.trim(arrival_ns, lba, count)
    }

    fn flush(&mut self, arrival_ns: Nanos) -> Result<Completion, BlockError> {
        self.inner.flush(arrival_ns)
    }
}

#[test]
fn mkfs_on_the_emulated_emmc() {
    let mut ftl = Ftl::new(presets::ldc_emmc(), true, 7).unwrap();
    let capacity = ftl.capacity_lbas();
    let mut rec = Recording {
        inner: &mut ftl,
        written: BTreeSet::new(),
    };
    let (layout, end_ns) = mkfs_timed(&mut rec, &MkfsOptions::default()).unwrap();
    let written = rec.written;
    assert!(end_ns > 0, "programming flash takes simulated time");
    eprintln!(
        "mkfs on ldc-emmc: {} LBAs written, {end_ns} ns",
        written.len()
    );
    assert!(ftl.counters().host_write_lbas > 0);

    // Read back what mkfs wrote, through the FTL, into a RAM disk.
    let mut copy = MemDevice::new(capacity * LBA_SIZE as u64);
    let mut buf = vec![0u8; LBA_SIZE];
    for &lba in &written {
        ftl.read(end_ns, lba, 1, Some(&mut buf)).unwrap();
        copy.write(0, lba, Payload::Bytes(&buf), Hints::default())
            .unwrap();
    }
    let mut reference = MemDevice::new(capacity * LBA_SIZE as u64);
    assert_eq!(
        mkfs(&mut reference, &MkfsOptions::default()).unwrap(),
        layout
    );
    assert!(differing_blocks(&copy, &reference).is_empty());

    let (m, mounted_ns) = mount_at(&mut ftl, end_ns).unwrap();
    assert_eq!(m.root_entries.len(), 2);
    assert!(mounted_ns > end_ns, "mount reads take flash time too");
    if let Some(fsck_bin) = tool("fsck.f2fs") {
        let dir = TempDir::new("ftl");
        let image = dir.file("image");
        copy.export(&image).unwrap();
        assert_clean(&fsck(&fsck_bin, &image), "the image read back from the FTL");
    }
}

/// The read-write file system on the emulated eMMC: files written, fsync'd and
/// checkpointed through the FTL come back after a remount, the writes carried temperature
/// hints to the FTL's streams, took flash time, and the image read back out of the flash
/// passes fsck.f2fs.
#[test]
fn file_system_on_the_emulated_emmc() {
    let mut ftl = Ftl::new(presets::ldc_emmc(), true, 7).unwrap();
    let capacity = ftl.capacity_lbas();
    let mut rec = Recording {
        inner: &mut ftl,
        written: BTreeSet::new(),
    };
    let (_, formatted_ns) = mkfs_timed(&mut rec, &MkfsOptions::default()).unwrap();
    let mut fs = F2fs::mount_at(rec, formatted_ns).unwrap();
    fs.mkdir("/app").unwrap();
    let db = fs.create("/app/main.db").unwrap();
    let rows: Vec<u8> = (0..64 * 1024).map(|i| (i % 251) as u8).collect();
    fs.write(db, 0, &rows).unwrap();
    fs.fsync(db).unwrap();
    let photo = fs.create("/app/photo.jpg").unwrap();
    fs.write(photo, 0, &rows[..40_000]).unwrap();
    let m = fs.metrics().clone();
    let latency = fs.op_latency();
    eprintln!("virtual latency per operation on ldc-emmc: {latency:?}");
    assert!(latency["fsync"].latency_ns_max > 0, "fsync waits for flash");
    let rec = fs.unmount().unwrap();
    let mut written = rec.written;
    eprintln!("f2fs on ldc-emmc: {m:?}");
    assert!(
        m.data_blocks >= 16 + 10,
        "the database and the photo went to flash"
    );
    assert!(ftl.counters().host_write_lbas > 0);

    let mut fs = F2fs::mount(Recording {
        inner: &mut ftl,
        written: BTreeSet::new(),
    })
    .unwrap();
    let db = fs.lookup("/app/main.db").unwrap();
    assert!(fs.read(db, 0, 1 << 20).unwrap() == rows);
    written.extend(fs.unmount().unwrap().written);

    let mut copy = MemDevice::new(capacity * LBA_SIZE as u64);
    let mut buf = vec![0u8; LBA_SIZE];
    for &lba in &written {
        ftl.read(0, lba, 1, Some(&mut buf)).unwrap();
        copy.write(0, lba, Payload::Bytes(&buf), Hints::default())
            .unwrap();
    }
    if let Some(fsck_bin) = tool("fsck.f2fs") {
        let dir = TempDir::new("ftl-rw");
        let image = dir.file("image");
        copy.export(&image).unwrap();
        assert_clean(
            &fsck(&fsck_bin, &image),
            "the file system read back from the FTL",
        );
    }
}

/// `discard` (the default) trims the segments a checkpoint frees; `nodiscard` leaves them
/// for the device to find out about when their LBAs are written again: no trim reaches the
/// FTL, its valid pages include the deleted file's, and the file system stays sound (the
/// data written after reads back after a remount; fsck.f2fs passes the image).
#[test]
fn nodiscard_leaves_freed_segments_valid_on_the_device() {
    let run = |discard: bool| {
        let mut ftl = Ftl::new(presets::ldc_emmc(), true, 7).unwrap();
        let capacity = ftl.capacity_lbas();
        let (_, formatted_ns) = mkfs_timed(&mut ftl, &MkfsOptions::default()).unwrap();
        let cfg = flashstack_f2fs::F2fsConfig {
            discard,
            ..Default::default()
        };
        let mut fs = F2fs::mount_with(ftl, formatted_ns, cfg).unwrap();
        let big = fs.create("/big").unwrap();
        let bytes: Vec<u8> = (0..8 << 20).map(|i: u32| (i % 253) as u8).collect();
        fs.write(big, 0, &bytes).unwrap();
        fs.sync().unwrap();
        fs.unlink("/big").unwrap();
        fs.sync().unwrap();
        let kept = fs.create("/kept").unwrap();
        fs.write(kept, 0, &bytes[..1 << 20]).unwrap();
        fs.sync().unwrap();
        let discarded = fs.metrics().discarded_blocks;
        let mut ftl = fs.unmount().unwrap();
        let trims = ftl.counters().host_trim_requests;
        let valid = ftl.mapped_lbas();
        let mut fs = F2fs::mount(ftl).unwrap();
        let kept = fs.lookup("/kept").unwrap();
        assert!(fs.read(kept, 0, 1 << 20).unwrap() == bytes[..1 << 20]);
        ftl = fs.unmount().unwrap();
        let mut copy = MemDevice::new(capacity * LBA_SIZE as u64);
        let mut buf = vec![0u8; LBA_SIZE];
        for lba in 0..capacity {
            ftl.read(0, lba, 1, Some(&mut buf)).unwrap();
            if buf.iter().any(|&b| b != 0) {
                copy.write(0, lba, Payload::Bytes(&buf), Hints::default())
                    .unwrap();
            }
        }
        check_image(&copy, if discard { "discard" } else { "nodiscard" });
        (discarded, trims, valid)
    };
    let (discarded, trims, valid_on) = run(true);
    assert!(discarded >= 4 * 512 && trims >= 5, "{discarded} {trims}");
    let (discarded, trims, valid_off) = run(false);
    // mkfs discards the whole device either way (`MkfsOptions::discard`).
    assert_eq!((discarded, trims), (0, 1));
    assert!(
        valid_off >= valid_on + 4 * 512,
        "the deleted file's 8 MiB stay valid on the device: {valid_off} vs {valid_on}"
    );
}
