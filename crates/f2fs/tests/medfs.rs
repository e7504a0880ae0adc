//! MedFS's delta-chunk inlining (DCI) on our F2FS: a small update of a page with a block
//! writes no data block (the delta rides in the inode), reads rebuild the page, the zone
//! fills and replaces its largest delta, a growing file evicts the oldest deltas, deltas
//! survive fsync + power cut by roll-forward, corrupt zones are refused naming the inode,
//! and `restore_deltas` gives an image fsck.f2fs accepts (one with deltas it does not).

mod common;

use common::*;
use flashstack_block::{BlockDevice, Hints, Payload};
use flashstack_f2fs::{
    mkfs, Corruption, DeltaConfig, F2fs, F2fsConfig, F2fsError, FsError, MemDevice, MkfsOptions,
    MountOptions, Verify, WriteHint, MEDFS_DELTA_FL,
};

fn dci() -> F2fsConfig {
    F2fsConfig {
        delta: DeltaConfig::dci(),
        ..F2fsConfig::default()
    }
}

fn fresh(cfg: F2fsConfig) -> F2fs<MemDevice> {
    let mut dev = MemDevice::new(128 * MIB);
    mkfs(&mut dev, &MkfsOptions::default()).unwrap();
    F2fs::mount_with(dev, 0, cfg).unwrap()
}

/// A page of text-like bytes (compressible, distinct per page).
fn page(index: u64) -> Vec<u8> {
    (0..4096u64)
        .map(|i| b"row,value;"[(i % 10) as usize] ^ ((i * 31 + index * 7) % 5) as u8)
        .collect()
}

/// A file of `pages` pages, checkpointed.
fn file_with(fs: &mut F2fs<MemDevice>, name: &str, pages: u64) -> (u32, Vec<Vec<u8>>) {
    let ino = fs.create(name).unwrap();
    let content: Vec<Vec<u8>> = (0..pages).map(page).collect();
    fs.write(ino, 0, &content.concat()).unwrap();
    fs.sync().unwrap();
    (ino, content)
}

/// Overwrites `len` bytes at byte `at` of page `index` through the page cache's path (one
/// dirty page, from fsync) and fsyncs, keeping `model` in step.
fn small_update(
    fs: &mut F2fs<MemDevice>,
    ino: u32,
    model: &mut [Vec<u8>],
    index: u64,
    at: usize,
    len: usize,
    seed: u8,
) {
    let p = &mut model[index as usize];
    for (k, b) in p[at..at + len].iter_mut().enumerate() {
        *b = (k as u8).wrapping_mul(37) ^ seed;
    }
    let page: [u8; 4096] = p.as_slice().try_into().unwrap();
    let size = model.len() as u64 * 4096;
    let hint = WriteHint {
        inode_dirty_pages: 1,
        fsync: true,
    };
    fs.write_pages_hinted(ino, index, &[&page], size, hint)
        .unwrap();
    fs.fsync(ino).unwrap();
}

fn assert_reads(fs: &mut F2fs<MemDevice>, ino: u32, model: &[Vec<u8>], what: &str) {
    for (i, p) in model.iter().enumerate() {
        assert_eq!(
            &fs.read_page(ino, i as u64).unwrap()[..],
            &p[..],
            "{what}: page {i}"
        );
    }
}

#[test]
fn a_small_update_writes_no_data_block() {
    let mut counts = Vec::new();
    for cfg in [F2fsConfig::default(), dci()] {
        let mut fs = fresh(cfg);
        let (ino, mut model) = file_with(&mut fs, "/app.db", 8);
        fs.reset_metrics();
        small_update(&mut fs, ino, &mut model, 3, 100, 60, 1);
        let m = fs.metrics().clone();
        counts.push((
            m.data_blocks,
            m.ipu_data_blocks,
            m.node_blocks,
            m.delta.inline_stores,
        ));
        assert_reads(&mut fs, ino, &model, "after the update");
    }
    // Stock: the page in place (IPU_FSYNC) + the inode; DCI: the inode only.
    assert_eq!(counts, [(0, 1, 1, 0), (0, 0, 1, 1)]);
}

#[test]
fn deltas_survive_fsync_and_a_power_cut_then_restore_gives_a_stock_image() {
    let mut fs = fresh(dci());
    let (ino, mut model) = file_with(&mut fs, "/app.db", 12);
    for (k, index) in [1u64, 4, 7, 4, 11].into_iter().enumerate() {
        small_update(&mut fs, ino, &mut model, index, 40 * k, 90, k as u8);
    }
    let held = fs.inline_deltas(ino).unwrap();
    assert_eq!(held.iter().map(|d| d.0).collect::<Vec<_>>(), [1, 7, 4, 11]);
    // Power cut: no checkpoint since the file was written; roll-forward replays the
    // fsync'd inode, its zone included. Mounted with delta compression off, the deltas
    // still read back (the format says they are there).
    let dev = fs.into_device();
    let mut fs = F2fs::mount(dev).unwrap();
    assert_eq!(fs.recovered_inodes(), 1);
    assert_eq!(fs.inline_deltas(ino).unwrap(), held);
    assert_reads(&mut fs, ino, &model, "after roll-forward");
    let with_deltas = fs.unmount().unwrap();
    let report = fsck_report(&with_deltas, "with-deltas");
    let mut fs = F2fs::mount(with_deltas).unwrap();
    assert_eq!(fs.restore_deltas().unwrap(), 4);
    assert_eq!(fs.inline_deltas(ino).unwrap(), vec![]);
    assert_reads(&mut fs, ino, &model, "after restore");
    let dev = fs.unmount().unwrap();
    check_image(&dev, "an image whose deltas were restored");
    // fsck.f2fs reads the zone's bytes as block addresses: that is why restore exists.
    if let Some(report) = report {
        assert!(
            report.output.contains("blkaddress is not valid"),
            "fsck.f2fs accepted an inline delta zone:\n{}",
            report.output
        );
    }
}

/// fsck.f2fs's report on a copy of the image (`None` without f2fs-tools).
fn fsck_report(dev: &MemDevice, name: &str) -> Option<FsckReport> {
    let bin = tool("fsck.f2fs")?;
    let dir = TempDir::new(&format!("medfs-{name}"));
    let image = dir.file("image");
    dev.export(&image).unwrap();
    Some(fsck(&bin, &image))
}

#[test]
fn a_full_zone_replaces_its_largest_delta_or_writes_the_page() {
    let mut fs = fresh(dci());
    let (ino, mut model) = file_with(&mut fs, "/big.db", 60);
    // 40 deltas of ~200 B fill the ~3.2 KB zone.
    for index in 0..40u64 {
        small_update(&mut fs, ino, &mut model, index, 8, 190, index as u8);
    }
    let m = fs.metrics().delta.clone();
    assert!(m.inline_stores >= 10 && m.fallback_writes > 0, "{m:?}");
    // Tiny updates of other pages: once one no longer fits, it evicts the largest
    // inline delta (merged into its base, written out of place) and takes its room.
    let mut full = Vec::new();
    for index in 40..60u64 {
        full = fs.inline_deltas(ino).unwrap();
        small_update(&mut fs, ino, &mut model, index, 0, 4, 9);
        if fs.metrics().delta.replacements > 0 {
            break;
        }
    }
    let largest = full.iter().map(|d| d.1).max().unwrap();
    let m2 = fs.metrics().delta.clone();
    assert_eq!(m2.replacements, 1, "{m2:?}");
    assert_eq!(m2.merges, m.merges + 1);
    let after = fs.inline_deltas(ino).unwrap();
    let victim = full.iter().find(|d| d.1 == largest).unwrap();
    assert!(!after.contains(victim), "{victim:?} still inline");
    assert_eq!(after.len(), full.len());
    assert_reads(&mut fs, ino, &model, "after replacement");
    let dev = fs.into_device();
    let mut fs = F2fs::mount_with(dev, 0, dci()).unwrap();
    assert_reads(&mut fs, ino, &model, "after a power cut");
}

#[test]
fn growth_into_the_zone_evicts_the_oldest_deltas() {
    let mut fs = fresh(dci());
    // 780 pages leave 287 bytes of the budget: four deltas of 40-50 B (the kernel's
    // LZO1X-1 ends every stream with 20 literal bytes, here zeros).
    let (ino, mut model) = file_with(&mut fs, "/grow.db", 780);
    for (k, index) in [5u64, 6, 7, 8].into_iter().enumerate() {
        small_update(&mut fs, ino, &mut model, index, 0, 12, k as u8);
    }
    assert_eq!(fs.inline_deltas(ino).unwrap().len(), 4);
    // Appending pages up to 820 needs slots the zone covers: the oldest go first.
    for index in 780..820u64 {
        let p = page(index);
        model.push(p.clone());
        let arr: [u8; 4096] = p.try_into().unwrap();
        fs.write_page(ino, index, &arr, 4096).unwrap();
    }
    let left: Vec<u64> = fs.inline_deltas(ino).unwrap().iter().map(|d| d.0).collect();
    assert!(!left.is_empty() && left.len() < 4, "{left:?}");
    assert_eq!(
        left,
        [8u64, 7, 6, 5][..left.len()]
            .iter()
            .rev()
            .copied()
            .collect::<Vec<_>>()
    );
    assert_reads(&mut fs, ino, &model, "after growth");
    // Past the inode's pointers (a direct node): every delta goes.
    model.resize(901, vec![0; 4096]);
    model[900] = page(900);
    let arr: [u8; 4096] = page(900).try_into().unwrap();
    fs.write_page(ino, 900, &arr, 4096).unwrap();
    assert_eq!(fs.inline_deltas(ino).unwrap(), vec![]);
    assert_reads(&mut fs, ino, &model, "after leaving DCI");
    fs.sync().unwrap();
    check_image(&fs.unmount().unwrap(), "a file that grew out of DCI");
}

#[test]
fn truncation_drops_the_deltas_it_cuts_off() {
    let mut fs = fresh(dci());
    let (ino, mut model) = file_with(&mut fs, "/t.db", 10);
    for index in [2u64, 8, 9] {
        small_update(&mut fs, ino, &mut model, index, 0, 50, 3);
    }
    fs.truncate(ino, 5 * 4096).unwrap();
    model.truncate(5);
    assert_eq!(
        fs.inline_deltas(ino)
            .unwrap()
            .iter()
            .map(|d| d.0)
            .collect::<Vec<_>>(),
        [2]
    );
    assert_reads(&mut fs, ino, &model, "after truncate");
    fs.unlink("/t.db").unwrap();
    check_image(&fs.unmount().unwrap(), "after unlinking a file with deltas");
}

#[test]
fn a_corrupt_zone_is_refused_naming_the_inode() {
    let mut fs = fresh(dci());
    let (ino, mut model) = file_with(&mut fs, "/c.db", 4);
    small_update(&mut fs, ino, &mut model, 1, 0, 50, 3);
    fs.sync().unwrap();
    let mut dev = fs.unmount().unwrap();
    // Break `delta_inline_size` in every copy of the inode block holding a zone (the
    // zone ends at the last address slot: 360 + 4 × 873).
    break_inode_copies(&mut dev, ino, ZONE_END - 2, 0xFF);
    break_inode_copies(&mut dev, ino, ZONE_END - 3, 0x0F);
    let mut fs = F2fs::mount(dev).unwrap();
    let err = fs.read_page(ino, 1).unwrap_err().to_string();
    assert!(
        err.contains(&format!("inode {ino}")) && err.contains("delta"),
        "{err}"
    );
}

/// An atomic commit writes its pages out of place (never as deltas): a page holding a
/// delta gets a new base, and the delta must go with the old one.
#[test]
fn an_atomic_commit_over_a_delta_replaces_it() {
    let mut fs = fresh(dci());
    let (ino, mut model) = file_with(&mut fs, "/a.db", 6);
    small_update(&mut fs, ino, &mut model, 2, 10, 40, 1);
    assert_eq!(fs.inline_deltas(ino).unwrap().len(), 1);
    model[2] = page(77);
    let new: [u8; 4096] = model[2].as_slice().try_into().unwrap();
    fs.commit_atomic_write(ino, &[(2, &new)], 6 * 4096).unwrap();
    assert_eq!(fs.inline_deltas(ino).unwrap(), vec![]);
    assert_reads(&mut fs, ino, &model, "after the atomic commit");
    let dev = fs.into_device();
    let mut fs = F2fs::mount_with(dev, 0, dci()).unwrap();
    assert_reads(&mut fs, ino, &model, "after a power cut");
}

fn full_check(config: F2fsConfig) -> MountOptions {
    MountOptions {
        verify: Verify::Full,
        config,
        ..MountOptions::default()
    }
}

/// The full verification (what `mount --image` and the `fs` commands run) walks only the
/// address slots before a delta zone and checks the zone itself: an image with deltas,
/// saved to a file and loaded again, passes it and reads back exactly, checkpointed as
/// well as after a power cut (roll-forward). Seen failing with the walk reading every
/// slot: the zone's bytes were refused as data addresses.
#[test]
fn an_image_with_deltas_passes_the_full_verification() {
    let mut fs = fresh(dci());
    let (a, mut model_a) = file_with(&mut fs, "/a.db", 12);
    let (b, mut model_b) = file_with(&mut fs, "/b.db", 3);
    for (k, index) in [1u64, 4, 7, 4, 11].into_iter().enumerate() {
        small_update(&mut fs, a, &mut model_a, index, 40 * k, 90, k as u8);
    }
    small_update(&mut fs, b, &mut model_b, 2, 100, 60, 9);
    fs.sync().unwrap();
    small_update(&mut fs, a, &mut model_a, 9, 7, 70, 11);
    let held = fs.inline_deltas(a).unwrap();
    assert_eq!(held.len(), 5, "{held:?}");
    let dev = fs.into_device();
    for (what, dev) in [
        ("after a power cut", dev.clone()),
        ("checkpointed", {
            let fs = F2fs::mount_with(dev, 0, dci()).unwrap();
            fs.unmount().unwrap()
        }),
    ] {
        let dir = TempDir::new("medfs-full");
        let image = dir.file("image");
        dev.export(&image).unwrap();
        drop(dev);
        let loaded = MemDevice::import(&image).unwrap();
        let mut fs = F2fs::mount_opts(loaded, full_check(dci()))
            .unwrap_or_else(|e| panic!("{what}: the full verification refused: {e}"));
        assert!(fs.warnings().is_empty(), "{what}: {:?}", fs.warnings());
        assert_eq!(fs.inline_deltas(a).unwrap(), held, "{what}");
        assert_reads(&mut fs, a, &model_a, what);
        assert_reads(&mut fs, b, &model_b, what);
        // And read-only, as `mount --image --read-only` does.
        let dev = fs.unmount().unwrap();
        let opts = MountOptions {
            read_only: true,
            ..full_check(F2fsConfig::default())
        };
        let mut fs = F2fs::mount_opts(dev, opts).unwrap();
        assert!(
            fs.warnings().is_empty(),
            "{what} read-only: {:?}",
            fs.warnings()
        );
        assert_reads(&mut fs, a, &model_a, what);
    }
}

/// A damaged zone header fails the full verification with a corruption naming the
/// inode (a read-write mount is refused; a read-only one quarantines just that file).
#[test]
fn a_damaged_zone_header_fails_the_full_verification_naming_the_inode() {
    let mut fs = fresh(dci());
    let (ino, mut model) = file_with(&mut fs, "/c.db", 4);
    let (other, other_model) = file_with(&mut fs, "/d.db", 2);
    small_update(&mut fs, ino, &mut model, 1, 0, 50, 3);
    fs.sync().unwrap();
    let mut dev = fs.unmount().unwrap();
    for (what, at, value) in [
        ("delta_num", ZONE_END - 1, 7u8),
        ("delta_inline_size", ZONE_END - 3, 0x0F),
    ] {
        let mut bad = dev.clone();
        break_inode_copies(&mut bad, ino, at, value);
        let err = match F2fs::mount_opts(bad.clone(), full_check(dci())) {
            Ok(_) => panic!("{what}: a damaged zone passed the full verification"),
            Err(e) => e,
        };
        assert!(
            matches!(err, FsError::Device(F2fsError::Corrupt(Corruption::Inode { ino: i, .. })) if i == ino),
            "{what}: {err}"
        );
        let msg = err.to_string();
        assert!(
            msg.contains(&format!("inode {ino}")) && msg.contains("delta zone"),
            "{what}: {msg}"
        );
        let opts = MountOptions {
            read_only: true,
            ..full_check(dci())
        };
        let mut fs = F2fs::mount_opts(bad, opts).unwrap();
        assert!(fs.read_page(ino, 0).is_err(), "{what}: quarantined");
        assert_reads(&mut fs, other, &other_model, what);
    }
    // A record whose page has no base block: the zone names page 40, whose slot is empty.
    let zone_rec = ZONE_END - 5;
    break_inode_copies(&mut dev, ino, zone_rec - 1, 40);
    let err = F2fs::mount_opts(dev, full_check(dci()))
        .err()
        .expect("refused");
    assert!(err.to_string().contains("no base block"), "{err}");
}

/// Byte offset of the end of a default inode's address slots, where the zone ends.
const ZONE_END: usize = 360 + 4 * 873;

/// Writes `value` at byte `at` of every stored copy of inode `ino` holding a zone.
fn break_inode_copies(dev: &mut MemDevice, ino: u32, at: usize, value: u8) {
    break_copies(dev, ino, MEDFS_DELTA_FL, at, value)
}

/// Writes `value` at byte `at` of every stored copy of inode `ino` with `flag` set.
fn break_copies(dev: &mut MemDevice, ino: u32, flag: u32, at: usize, value: u8) {
    let copies: Vec<u64> = dev
        .stored_lbas()
        .filter(|&l| {
            let b = dev.block(l).unwrap();
            let nid = u32::from_le_bytes(b[4072..4076].try_into().unwrap());
            let flags = u32::from_le_bytes(b[80..84].try_into().unwrap());
            nid == ino && flags & flag != 0
        })
        .collect();
    assert!(!copies.is_empty());
    for lba in copies {
        let mut block = dev.block(lba).unwrap().to_vec();
        block[at] = value;
        dev.write(0, lba, Payload::Bytes(&block), Hints::default())
            .unwrap();
    }
}

fn with_mode(mode: flashstack_f2fs::DeltaMode) -> F2fsConfig {
    F2fsConfig {
        delta: DeltaConfig::with_mode(mode),
        ..F2fsConfig::default()
    }
}

/// A DCM file: `updates` small updates (one write call each, no read call: HCluster's
/// published centroids class the file read-cold/write-hot from about 26 writes on) of
/// 300 bytes to pages 0..8, too large to inline, fsync'd one by one.
fn dcm_file(fs: &mut F2fs<MemDevice>, updates: u64) -> (u32, Vec<Vec<u8>>) {
    let (ino, mut model) = file_with(fs, "/dcm.db", 12);
    for k in 0..updates {
        small_update(
            fs,
            ino,
            &mut model,
            k % 8,
            (k as usize * 13) % 3000,
            300,
            k as u8,
        );
    }
    (ino, model)
}

/// DCM under the published HCluster centroids: the first updates (too few writes: the
/// file is read-cold/write-cold) are written as pages, later ones go to the pseudo file;
/// they survive a power cut (the owner's fsync'd inode carries the pseudo file's
/// addresses), pass our
/// full verification, make fsck.f2fs complain (the pseudo file has no dentry), and
/// `restore_deltas` folds them and removes the pseudo file: fsck.f2fs is then clean.
#[test]
fn dcm_deltas_survive_a_power_cut_and_restore_gives_a_stock_image() {
    let mut fs = fresh(with_mode(flashstack_f2fs::DeltaMode::Dcm));
    let (ino, model) = dcm_file(&mut fs, 40);
    let m = fs.metrics().delta.clone();
    assert!(
        m.dcm_not_hot > 10,
        "HCluster classed early updates cold: {m:?}"
    );
    assert!(m.dcm_stores > 5, "{m:?}");
    let held = fs.dcm_deltas(ino).unwrap();
    assert!(held.len() >= 5, "{held:?}");
    let pseudo = fs.dcm_pseudo_file(ino).unwrap().expect("a pseudo file");
    assert_reads(&mut fs, ino, &model, "with DCM deltas");
    let dev = fs.into_device();
    // Mounted with delta compression off: the format says where the deltas are.
    let mut fs = F2fs::mount(dev).unwrap();
    assert!(fs.recovered_inodes() >= 1);
    assert_eq!(fs.dcm_deltas(ino).unwrap(), held);
    assert_reads(&mut fs, ino, &model, "after roll-forward");
    let with_deltas = fs.unmount().unwrap();
    let mut fs = F2fs::mount_opts(with_deltas.clone(), full_check(F2fsConfig::default()))
        .unwrap_or_else(|e| panic!("the full verification refused DCM: {e}"));
    assert_reads(&mut fs, ino, &model, "after the full verification");
    drop(fs);
    // fsck.f2fs finds the pseudo file unreachable: that is why restore removes it.
    if let Some(report) = fsck_report(&with_deltas, "with-dcm") {
        eprintln!("{}", report.output);
        assert!(
            report.output.contains(&format!("{pseudo:#x}")),
            "fsck.f2fs did not see the pseudo file {pseudo}:\n{}",
            report.output
        );
    }
    let mut fs = F2fs::mount(with_deltas).unwrap();
    assert_eq!(fs.restore_deltas().unwrap(), held.len() as u64);
    assert_eq!(fs.dcm_pseudo_file(ino).unwrap(), None);
    assert_reads(&mut fs, ino, &model, "after restore");
    let dev = fs.unmount().unwrap();
    check_image(&dev, "an image whose DCM deltas were restored");
    let dir = TempDir::new("dcm-restored");
    let image = dir.file("image");
    dev.export(&image).unwrap();
    flashstack_testkit::assert_fsck_clean(&image, "an image whose DCM deltas were restored");
}

/// MedFS (DCI + DCM): a delta too large to inline goes to DCM, a small one inline, and
/// unlinking the file frees its pseudo file (our walk and fsck.f2fs find no leak).
#[test]
fn medfs_keeps_small_deltas_inline_and_large_ones_in_dcm() {
    let mut fs = fresh(with_mode(flashstack_f2fs::DeltaMode::Medfs));
    let (ino, mut model) = dcm_file(&mut fs, 40);
    small_update(&mut fs, ino, &mut model, 10, 5, 20, 99);
    let m = fs.metrics().delta.clone();
    assert!(m.inline_stores >= 1 && m.dcm_stores > 5, "{m:?}");
    assert!(!fs.inline_deltas(ino).unwrap().is_empty());
    assert!(!fs.dcm_deltas(ino).unwrap().is_empty());
    assert_reads(&mut fs, ino, &model, "medfs");
    fs.unlink("/dcm.db").unwrap();
    check_image(
        &fs.unmount().unwrap(),
        "after unlinking a file with DCM deltas",
    );
}

/// A damaged carried DCM entry (an owner's fsync'd inode naming its pseudo file's new
/// pages, `delta/carry.rs`) fails roll-forward with an error naming the owner, never a
/// panic or a pseudo file pointed at the wrong blocks.
#[test]
fn a_corrupt_carried_dcm_entry_fails_recovery_naming_the_inode() {
    let mut fs = fresh(with_mode(flashstack_f2fs::DeltaMode::Dcm));
    let (ino, _) = dcm_file(&mut fs, 40);
    assert!(
        fs.metrics().delta.dcm_carried_fsyncs > 5,
        "{:?}",
        fs.metrics().delta
    );
    let mut dev = fs.into_device();
    let mut broken = 0;
    for lba in dev.stored_lbas().collect::<Vec<_>>() {
        let mut block = dev.block(lba).unwrap().to_vec();
        let nid = u32::from_le_bytes(block[4072..4076].try_into().unwrap());
        // The private xattr entry: index 0x6d, name length 3, value size, "dcm".
        let entry = block[..4072]
            .windows(7)
            .position(|w| w[0] == 0x6d && w[1] == 3 && &w[4..7] == b"dcm");
        let (true, Some(at)) = (nid == ino, entry) else {
            continue;
        };
        // The pseudo file's page count (value bytes 4..8) set to 0: every carried page
        // lies past it.
        block[at + 11..at + 15].fill(0);
        dev.write(0, lba, Payload::Bytes(&block), Hints::default())
            .unwrap();
        broken += 1;
    }
    assert!(broken > 0, "no copy of inode {ino} carries a DCM entry");
    let err = match F2fs::mount(dev) {
        Ok(_) => panic!("roll-forward accepted a damaged carried DCM entry"),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains(&format!("inode {ino}")) && err.contains("DCM"),
        "{err}"
    );
}

/// Damaged DCM structures are errors naming the owner inode, never a panic or wrong
/// data: a `meta_id` naming no inode, and a meta page whose compact-page count is too
/// large (the full verification refuses both; plain reads fail).
#[test]
fn a_corrupt_dcm_structure_is_an_error_naming_the_inode() {
    let mut fs = fresh(with_mode(flashstack_f2fs::DeltaMode::Dcm));
    let (ino, _) = dcm_file(&mut fs, 40);
    let page = fs.dcm_deltas(ino).unwrap()[0].0;
    let pseudo = fs.dcm_pseudo_file(ino).unwrap().unwrap();
    fs.sync().unwrap();
    let meta_addr = fs.file_block_addrs(pseudo).unwrap()[0];
    let dev = fs.unmount().unwrap();
    // meta_id (i_current_depth, byte 72) pointing nowhere.
    let mut bad_id = dev.clone();
    break_copies(&mut bad_id, ino, flashstack_f2fs::MEDFS_DCM_FL, 72, 0x7F);
    // The meta page claims 200 compact pages.
    let mut bad_meta = dev.clone();
    let mut block = bad_meta.block(u64::from(meta_addr)).unwrap().to_vec();
    block[0] = 200;
    bad_meta
        .write(
            0,
            u64::from(meta_addr),
            Payload::Bytes(&block),
            Hints::default(),
        )
        .unwrap();
    for (what, bad) in [("meta_id", bad_id), ("meta page", bad_meta)] {
        let mut fs = F2fs::mount(bad.clone()).unwrap();
        let err = fs.read_page(ino, page).unwrap_err().to_string();
        assert!(
            err.contains(&format!("inode {ino}")) && err.contains("DCM"),
            "{what}: {err}"
        );
        let err = match F2fs::mount_opts(bad, full_check(F2fsConfig::default())) {
            Ok(_) => panic!("{what}: a damaged DCM structure passed the full verification"),
            Err(e) => e.to_string(),
        };
        assert!(
            err.contains(&format!("inode {ino}")) && err.contains("DCM"),
            "{what}: {err}"
        );
    }
}
