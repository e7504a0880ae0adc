//! The policies with their kernel defaults and their mechanisms: the hot-data rule at
//! writeback, in-place updates with roll-forward recovery, background cleaning and
//! checkpoints in idle time, checked with fsck.f2fs on crash images.

mod common;

use common::*;
use flashstack_f2fs::{mkfs, F2fs, F2fsConfig, MemDevice, MkfsOptions, WriteHint};

const SEC: u64 = 1_000_000_000;
const HOT_DATA: usize = 0;
const WARM_DATA: usize = 1;
const COLD_DATA: usize = 2;

fn fresh(bytes: u64, cfg: F2fsConfig) -> F2fs<MemDevice> {
    let mut dev = MemDevice::new(bytes);
    mkfs(&mut dev, &MkfsOptions::default()).unwrap();
    F2fs::mount_with(dev, 0, cfg).unwrap()
}

fn page(seed: u8) -> [u8; 4096] {
    std::array::from_fn(|i| (i as u8).wrapping_mul(29) ^ seed)
}

/// Writes `n` pages from `first` as a writeback with `dirty` dirty pages.
fn writeback(fs: &mut F2fs<MemDevice>, ino: u32, first: u64, n: u64, seed: u8, hint: WriteHint) {
    let pages: Vec<[u8; 4096]> = (0..n).map(|i| page(seed ^ i as u8)).collect();
    let refs: Vec<&[u8; 4096]> = pages.iter().collect();
    let size = fs.stat_ino(ino).unwrap().size_bytes.max((first + n) * 4096);
    fs.write_pages_hinted(ino, first, &refs, size, hint)
        .unwrap();
}

fn hint(dirty: u64, fsync: bool) -> WriteHint {
    WriteHint {
        inode_dirty_pages: dirty,
        fsync,
    }
}

/// The device block holding exactly `content`, if one does.
fn find_block(dev: &MemDevice, content: &[u8; 4096]) -> Option<u64> {
    dev.stored_lbas()
        .find(|&lba| dev.block(lba).is_some_and(|b| b[..] == content[..]))
}

#[test]
fn writeback_with_few_dirty_pages_is_hot() {
    let mut fs = fresh(128 * MIB, F2fsConfig::default());
    let txt = fs.create("/notes.txt").unwrap();
    let clip = fs.create("/clip.mp4").unwrap();
    let db = fs.create("/app.db").unwrap();
    let logs = |fs: &F2fs<MemDevice>| fs.metrics().per_log_blocks;
    let cases = [
        (txt, 16, HOT_DATA, "≤ 16 dirty pages: FI_HOT_DATA"),
        (txt, 17, WARM_DATA, "more: warm"),
        (clip, 1, COLD_DATA, "a cold file stays cold"),
        (db, 40, HOT_DATA, "a hot file stays hot"),
    ];
    for (i, (ino, dirty, log, why)) in cases.into_iter().enumerate() {
        let before = logs(&fs);
        writeback(&mut fs, ino, 100 * i as u64, 1, 1, hint(dirty, false));
        let after = logs(&fs);
        assert_eq!(after[log] - before[log], 1, "{why}");
    }
}

/// An fsync of a small overwrite updates the data block in place: same device address,
/// new content; the inode goes out of place with the fsync mark, and a power cut right
/// after it recovers by roll-forward, with fsck.f2fs happy before and after.
#[test]
fn in_place_fsync_survives_a_power_cut() {
    let mut fs = fresh(128 * MIB, F2fsConfig::default());
    let ino = fs.create("/log.bin").unwrap();
    writeback(&mut fs, ino, 0, 4, 10, hint(4, false));
    fs.sync().unwrap();
    let old = page(10 ^ 2);
    let at = find_block(fs.device(), &old).expect("page 2 on the device");
    let before = fs.metrics().clone();
    writeback(&mut fs, ino, 2, 1, 77, hint(1, true));
    fs.fsync(ino).unwrap();
    let m = fs.metrics();
    assert_eq!(m.ipu_data_blocks - before.ipu_data_blocks, 1);
    assert_eq!(m.data_blocks, before.data_blocks, "nothing out of place");
    assert_eq!(
        m.checkpoints, before.checkpoints,
        "roll-forward, no checkpoint"
    );
    let new = page(77);
    assert_eq!(fs.device().block(at).map(|b| b[..] == new[..]), Some(true));
    let crash = fs.into_device();
    check_image(&crash, "in-place fsync before recovery");
    let mut fs = F2fs::mount(crash).unwrap();
    assert_eq!(fs.recovered_inodes(), 1);
    assert!(fs.read(ino, 2 * 4096, 4096).unwrap() == new);
    assert!(fs.read(ino, 4096, 4096).unwrap()[..] == page(10 ^ 1)[..]);
    check_image(&fs.unmount().unwrap(), "in-place fsync after recovery");
}

/// More dirty pages than `min_fsync_blocks`, or LFS mode: out of place.
#[test]
fn in_place_updates_follow_the_policy() {
    for (cfg, dirty, in_place) in [
        (F2fsConfig::default(), 8, true),
        (F2fsConfig::default(), 9, false),
        (F2fsConfig::pure_lfs(), 1, false),
    ] {
        let mut fs = fresh(128 * MIB, cfg.clone());
        let ino = fs.create("/f").unwrap();
        writeback(&mut fs, ino, 0, 2, 1, hint(2, false));
        let before = fs.metrics().ipu_data_blocks;
        writeback(&mut fs, ino, 0, 1, 2, hint(dirty, true));
        let got = fs.metrics().ipu_data_blocks - before;
        assert_eq!(got, u64::from(in_place), "{cfg:?} with {dirty} dirty pages");
        // A new block is never written in place.
        writeback(&mut fs, ino, 5, 1, 3, hint(1, true));
        assert_eq!(fs.metrics().ipu_data_blocks - before, got);
    }
}

/// Files overwritten so that old segments hold a few valid blocks each.
fn fragmented(cfg: F2fsConfig) -> (F2fs<MemDevice>, Vec<(u32, Vec<u8>)>) {
    let mut fs = fresh(128 * MIB, cfg);
    let mut files = Vec::new();
    for f in 0..3u8 {
        let ino = fs.create(&format!("/f{f}")).unwrap();
        let data: Vec<u8> = (0..600 * 4096).map(|i| (i as u8) ^ f).collect();
        fs.write(ino, 0, &data).unwrap();
        files.push((ino, data));
    }
    fs.sync().unwrap();
    // Overwrite most of each file: its old segments keep a few valid blocks.
    for (ino, data) in &mut files {
        for index in (0..600u64).filter(|i| i % 10 != 0) {
            let new = [index as u8 ^ 0xa5; 4096];
            fs.write(*ino, index * 4096, &new).unwrap();
            data[index as usize * 4096..(index as usize + 1) * 4096].copy_from_slice(&new);
        }
    }
    fs.sync().unwrap();
    (fs, files)
}

fn assert_files(fs: &mut F2fs<MemDevice>, files: &[(u32, Vec<u8>)], what: &str) {
    for (ino, data) in files {
        assert!(fs.read(*ino, 0, data.len()).unwrap() == *data, "{what}");
    }
}

/// One idle GC wake cleans one section by cost-benefit, moving its valid blocks to the
/// cold data log; the victim is reusable only after the next checkpoint, and a power cut
/// before it loses nothing.
#[test]
fn idle_time_cleans_one_section_per_wake_into_the_cold_log() {
    let cfg = F2fsConfig {
        cp_interval_ns: 3600 * SEC,
        ..F2fsConfig::default()
    };
    let (mut fs, files) = fragmented(cfg);
    let before = fs.metrics().clone();
    let free_before = fs.free_segments();
    let start = fs.now_ns();
    // Not idle long enough for a wake: nothing.
    fs.idle(start + 4 * SEC).unwrap();
    assert_eq!(fs.metrics().gc_cycles, before.gc_cycles);
    // The first wake (30 s after mount) finds the device idle: one section.
    fs.idle(start + 40 * SEC).unwrap();
    let m = fs.metrics().clone();
    assert_eq!(m.bg_gc_cycles - before.bg_gc_cycles, 1, "{m:?}");
    let moved = m.gc_data_blocks - before.gc_data_blocks;
    assert!(moved > 0 && moved < 512);
    assert_eq!(
        m.per_log_blocks[COLD_DATA] - before.per_log_blocks[COLD_DATA],
        moved
    );
    assert_eq!(
        m.checkpoints, before.checkpoints,
        "background cleaning does not checkpoint"
    );
    assert!(
        fs.free_segments() <= free_before,
        "the victim is pre-free, not free, until a checkpoint"
    );
    assert_files(&mut fs, &files, "after background cleaning");
    let crash = fs.device().clone();
    fs.sync().unwrap();
    assert_eq!(
        fs.free_segments(),
        free_before + 1,
        "the victim is free after it"
    );
    check_image(&crash, "background cleaning, power cut before a checkpoint");
    let mut again = F2fs::mount(crash).unwrap();
    assert_files(
        &mut again,
        &files,
        "after a power cut following background cleaning",
    );
    // A long idle period cleans on each wake (every 30–60 s), not all at once.
    let (gc, now) = (fs.metrics().bg_gc_cycles, fs.now_ns());
    fs.idle(now + 300 * SEC).unwrap();
    let cleaned = fs.metrics().bg_gc_cycles - gc;
    assert!((2..=10).contains(&cleaned), "{cleaned} sections in 5 min");
    assert_files(&mut fs, &files, "after a long idle period");
    check_image(&fs.unmount().unwrap(), "after background cleaning");
}

#[test]
fn background_cleaning_can_be_switched_off() {
    let cfg = F2fsConfig {
        bg_gc: false,
        ..F2fsConfig::default()
    };
    let (mut fs, _) = fragmented(cfg);
    let now = fs.now_ns();
    fs.idle(now + 600 * SEC).unwrap();
    assert_eq!(fs.metrics().bg_gc_cycles, 0);
}

/// `cp_interval`: a checkpoint 60 s after the last one, once 5 s passed without a
/// request; never while requests keep coming, never when nothing is dirty.
#[test]
fn periodic_checkpoints_wait_for_the_interval_and_idleness() {
    let cfg = F2fsConfig {
        bg_gc: false,
        ..F2fsConfig::default()
    };
    let mut fs = fresh(128 * MIB, cfg);
    let ino = fs.create("/f").unwrap();
    fs.sync().unwrap();
    let cps = |fs: &F2fs<MemDevice>| fs.metrics().checkpoints;
    let base = cps(&fs);
    let t0 = fs.now_ns();
    // A write every 3 s for 2 minutes: never idle for 5 s.
    for i in 1..=40u64 {
        fs.advance_to(t0 + i * 3 * SEC);
        fs.write(ino, 0, &[i as u8; 100]).unwrap();
        let now = fs.now_ns();
        fs.idle(now + 3 * SEC - 1).unwrap();
    }
    assert_eq!(cps(&fs), base, "busy: no periodic checkpoint");
    // The last write was 3 s ago.
    let now = fs.now_ns();
    fs.idle(now + SEC).unwrap();
    assert_eq!(cps(&fs), base, "idle for only 4 s");
    fs.idle(now + 3 * SEC).unwrap();
    assert_eq!(cps(&fs), base + 1, "interval over and idle: one checkpoint");
    assert_eq!(fs.metrics().bg_checkpoints, 1);
    let now = fs.now_ns();
    fs.idle(now + 3600 * SEC).unwrap();
    assert_eq!(cps(&fs), base + 1, "nothing dirty: no more checkpoints");
    // A power cut after the periodic checkpoint keeps the last write.
    let mut fs = F2fs::mount(fs.into_device()).unwrap();
    assert_eq!(fs.read(ino, 0, 100).unwrap(), vec![40; 100]);
}

/// `excess_prefree_segs`: more than 5 % of the main segments pre-free forces a
/// checkpoint after the operation.
#[test]
fn many_prefree_segments_force_a_checkpoint() {
    let cfg = F2fsConfig {
        bg_gc: false,
        ..F2fsConfig::default()
    };
    let mut fs = fresh(128 * MIB, cfg);
    let main = fs.superblock().segment_count_main as u64;
    let files = (main * 5 / 100 + 2) as usize;
    let inos: Vec<u32> = (0..files)
        .map(|i| {
            let ino = fs.create(&format!("/big{i}")).unwrap();
            fs.write(ino, 0, &vec![i as u8; 512 * 4096]).unwrap();
            ino
        })
        .collect();
    fs.sync().unwrap();
    let before = fs.metrics().clone();
    for i in 0..files {
        fs.unlink(&format!("/big{i}")).unwrap();
    }
    let m = fs.metrics();
    assert!(m.bg_checkpoints > before.bg_checkpoints, "{m:?}");
    let _ = inos;
    check_image(&fs.unmount().unwrap(), "after prefree checkpoints");
}
