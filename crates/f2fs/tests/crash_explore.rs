//! Crash exploration of F2FS on a device with a volatile write cache
//! (`flashstack_block::VolatileCache` over a RAM disk): at a power cut, writes acknowledged
//! since the last flush are lost in any subset and persist in any order, as on a real
//! eMMC or UFS device with its cache on. The RAM-disk tests elsewhere (`rw_model.rs`,
//! `roll_forward.rs`) keep a strict prefix of the writes, so an F2FS that forgot a flush
//! would pass them; here it fails (docs/testing.md, "Crash exploration").
//!
//! A seeded random workload over a few files (writes, truncates, fsyncs, renames,
//! unlinks, syncs, idle periods with background cleaning and checkpoints) runs with a
//! power cut armed at a random write or trim request; when it fires, the cache loses
//! power, F2FS mounts what reached the disk (roll-forward recovery) and every promise is
//! checked against a reference model:
//! - a file whose last change was a completed fsync reads back exactly, under its name;
//! - after a completed checkpoint (sync, a checkpointing fsync, an idle period's
//!   background checkpoint) every name exists or not exactly as then, with its content;
//! - a name an unfinished operation touched may show any state, but reads without error.
//!
//! Then the workload goes on from what was recovered, with the next cut armed. A sample of
//! the recovered images goes through `fsck.f2fs -f` (one in 150) or our own full
//! verification (`Verify::Full`, one in 10).
//!
//! To look into a failure (with `--nocapture`): `F2FS_CRASH_TRACE=1` prints every
//! operation and cut; `F2FS_CRASH_FSCK_FROM=N` runs fsck.f2fs on every image from cut N;
//! `F2FS_CRASH_DUMP=PATH` writes the image that broke a promise; `F2FS_CRASH_CACHE_LBAS=0`
//! turns the cache off (write-through: only the torn request may be lost), to see whether
//! a failure needs the reordering. `FLASHSTACK_CRASH_SCALE=N` explores N times as many cuts.

mod common;

use std::collections::BTreeMap;
use std::rc::Rc;

use common::*;
use flashstack_block::explore::{self, lost_bytes, Exploration};
use flashstack_block::{BlockDevice, VolatileCache, VolatileCacheConfig};
use flashstack_f2fs::{
    mkfs, F2fs, F2fsConfig, FsError, IpuPolicy, MemDevice, MkfsOptions, WriteHint,
};
use flashstack_sim::{Rng, NS_PER_SEC};

type Dev = VolatileCache<MemDevice>;

/// The files of the workload; `/d` is made (and checkpointed) first.
const NAMES: [&str; 6] = ["/a", "/b", "/c.db", "/d/e", "/d/f.mp4", "/d/g"];

/// A power cut is armed this many write or trim requests ahead, at most.
const CUT_WITHIN_REQUESTS: u64 = 40;

/// Cut points per test in a CI run (times `FLASHSTACK_CRASH_SCALE`).
const CUTS_PER_TEST: u64 = 1_000;

/// One recovered image in this many goes through fsck.f2fs (it takes tens of ms).
const FSCK_EVERY_CUTS: u64 = 150;

/// One recovered image in this many goes through our own full verification (a few ms):
/// sampling fsck alone let a recovery bug that showed at every fsync after an inline
/// conversion go unseen until cut 1,199 (docs/testing.md, "Bugs it found").
const WALK_EVERY_CUTS: u64 = 10;

#[derive(Clone, Copy, Debug)]
enum Op {
    Write {
        file: usize,
        offset: u64,
        len: usize,
        seed: u8,
    },
    Truncate {
        file: usize,
        size: u64,
    },
    Fsync(usize),
    Rename(usize, usize),
    Unlink(usize),
    Sync,
    Idle {
        secs: u64,
    },
}

impl Op {
    /// An operation; `small_writes` of them are small overwrites (1–256 bytes within a
    /// page of the first twelve), MedFS's case.
    fn draw(rng: &mut Rng, small_writes: u64) -> Op {
        let file = rng.below(NAMES.len() as u64) as usize;
        // Drawn only when asked, so the other setups keep their random streams.
        if small_writes > 0 && rng.below(100) < small_writes {
            return Op::Write {
                file,
                offset: rng.below(12) * 4096 + rng.below(3840),
                len: 1 + rng.below(256) as usize,
                seed: rng.below(256) as u8,
            };
        }
        match rng.below(100) {
            0..=39 => Op::Write {
                file,
                // Inline data, the inode's own addresses, a direct node's.
                offset: [0, 100, 4096, 3 * 4096 + 17, 95 * 4096][rng.below(5) as usize],
                len: 1 + rng.below(20_000) as usize,
                seed: rng.below(256) as u8,
            },
            40..=46 => Op::Truncate {
                file,
                size: [0, 10, 4096, 5000, 3 * 4096][rng.below(5) as usize],
            },
            47..=74 => Op::Fsync(file),
            75..=81 => Op::Rename(file, rng.below(NAMES.len() as u64) as usize),
            82..=87 => Op::Unlink(file),
            88..=94 => Op::Sync,
            // Past a GC wake, past the periodic checkpoint.
            _ => Op::Idle {
                secs: [40, 70][rng.below(2) as usize],
            },
        }
    }

    /// Names whose state this operation changes.
    fn touches(&self) -> Vec<usize> {
        match *self {
            Op::Write { file, .. } | Op::Truncate { file, .. } | Op::Unlink(file) => vec![file],
            Op::Rename(a, b) => vec![a, b],
            Op::Fsync(_) | Op::Sync | Op::Idle { .. } => vec![],
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Op::Write { .. } => "mid-write",
            Op::Truncate { .. } => "mid-truncate",
            Op::Fsync(_) => "mid-fsync",
            Op::Rename(..) => "mid-rename",
            Op::Unlink(_) => "mid-unlink",
            Op::Sync => "mid-sync",
            Op::Idle { .. } => "mid-idle",
        }
    }
}

/// `F2FS_CRASH_TRACE=1` prints every operation (with `--nocapture`), to see what led to a
/// failure.
fn trace() -> bool {
    std::env::var_os("F2FS_CRASH_TRACE").is_some()
}

fn bytes(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(7) ^ seed ^ (i >> 9) as u8)
        .collect()
}

/// What a test explores: the mount options and the write cache's size.
struct Setup {
    name: &'static str,
    fs: F2fsConfig,
    cache_lbas: u32,
    seed: u64,
    volume_bytes: u64,
    /// Percent of operations that are small overwrites (MedFS's case; 0 elsewhere).
    small_writes: u64,
}

struct Explorer {
    setup: Setup,
    fs: Option<F2fs<Dev>>,
    rng: Rng,
    /// Every name's content now (absent: no such file). Shared with `promised` until
    /// written (files run to megabytes; a checkpoint promises all of them).
    current: BTreeMap<usize, Rc<Vec<u8>>>,
    /// Names whose state is promised to survive a power cut: `Some(content)` or `None`
    /// (must not exist). A name missing here may show any state.
    promised: BTreeMap<usize, Option<Rc<Vec<u8>>>>,
    tally: Exploration,
    /// Deltas stored inline over all sessions (MedFS).
    deltas_stored: u64,
    /// Deltas stored in DCM pseudo files, and files BGRes restored (MedFS's DCM).
    dcm_stored: u64,
    bgres_restored: u64,
    /// MedFS DCM entries carried by an owner's fsync'd inode that recovery replayed.
    carried_replayed: u64,
    /// Clusters written compressed, over every mount (F2FSC's case).
    clusters_compressed: u64,
    /// Files FPC's background re-packing rewrote or recompressed, over every mount.
    fpc_repacked: u64,
    /// Of those, raw files converted to compressed (`repack_convert`).
    fpc_converted: u64,
}

impl Explorer {
    fn new(setup: Setup) -> Explorer {
        let mut dev = MemDevice::new(setup.volume_bytes);
        let mut opts = MkfsOptions::default();
        if setup.fs.compress.enabled {
            opts.features = flashstack_f2fs::Features::parse("extra_attr,compression").unwrap();
        }
        mkfs(&mut dev, &opts).unwrap();
        let mut rng = Rng::new(setup.seed);
        let cache = cache_config(setup.cache_lbas, &mut rng);
        let mut fs = F2fs::mount_with(VolatileCache::new(dev, cache), 0, setup.fs.clone())
            .expect("mount a fresh image");
        fs.mkdir("/d").unwrap();
        fs.sync().unwrap();
        Explorer {
            tally: Exploration::new(&format!("f2fs crash_explore {}", setup.name)),
            setup,
            fs: Some(fs),
            rng,
            current: BTreeMap::new(),
            promised: (0..NAMES.len()).map(|f| (f, None)).collect(),
            deltas_stored: 0,
            dcm_stored: 0,
            bgres_restored: 0,
            carried_replayed: 0,
            clusters_compressed: 0,
            fpc_repacked: 0,
            fpc_converted: 0,
        }
    }

    fn fs(&mut self) -> &mut F2fs<Dev> {
        self.fs.as_mut().expect("mounted")
    }

    /// Runs the workload until `cuts` power cuts have been explored.
    fn explore(&mut self, cuts: u64) {
        let mut op_index = 0u64;
        while self.tally.cut_points() < cuts {
            let ahead = 1 + self.rng.below(CUT_WITHIN_REQUESTS);
            self.fs().device_mut().arm_power_cut(ahead);
            loop {
                let op = Op::draw(&mut self.rng, self.setup.small_writes);
                op_index += 1;
                if trace() {
                    let fs = self.fs();
                    println!(
                        "op {op_index} {op:?} (checkpoints {}, pending {})",
                        fs.metrics().checkpoints,
                        fs.device().pending_lbas()
                    );
                }
                if let Err(e) = self.apply(op) {
                    assert!(
                        !self.fs().device().is_powered(),
                        "op {op_index} {op:?} failed without a power cut: {e}"
                    );
                    self.recover(op, op_index);
                    break;
                }
            }
        }
    }

    /// Runs `op` on F2FS and the model; an error is the armed cut firing.
    fn apply(&mut self, op: Op) -> Result<(), FsError> {
        for name in op.touches() {
            self.promised.remove(&name);
        }
        let checkpoints = self.fs().metrics().checkpoints;
        self.run(op)?;
        if self.fs().metrics().checkpoints != checkpoints {
            // A checkpoint covered every name but those the operation changed after it.
            let touched = op.touches();
            for f in 0..NAMES.len() {
                if !touched.contains(&f) {
                    self.promised.insert(f, self.current.get(&f).cloned());
                }
            }
        } else if let Op::Fsync(f) = op {
            if let Some(content) = self.current.get(&f) {
                self.promised.insert(f, Some(content.clone()));
            }
        }
        Ok(())
    }

    fn run(&mut self, op: Op) -> Result<(), FsError> {
        match op {
            Op::Write {
                file,
                offset,
                len,
                seed,
            } => {
                if !self.current.contains_key(&file) {
                    self.fs().create(NAMES[file])?;
                    self.current.insert(file, Rc::default());
                }
                let ino = self.fs().lookup(NAMES[file])?;
                let data = bytes(len, seed);
                self.fs().write(ino, offset, &data)?;
                let content = Rc::make_mut(self.current.get_mut(&file).unwrap());
                let end = offset as usize + len;
                if content.len() < end {
                    content.resize(end, 0);
                }
                content[offset as usize..end].copy_from_slice(&data);
            }
            Op::Truncate { file, size } => {
                if self.current.contains_key(&file) {
                    let ino = self.fs().lookup(NAMES[file])?;
                    self.fs().truncate(ino, size)?;
                    Rc::make_mut(self.current.get_mut(&file).unwrap()).resize(size as usize, 0);
                }
            }
            Op::Fsync(file) => {
                if self.current.contains_key(&file) {
                    let ino = self.fs().lookup(NAMES[file])?;
                    self.fs().fsync(ino)?;
                }
            }
            Op::Rename(a, b) => {
                if a != b && self.current.contains_key(&a) {
                    self.fs().rename(NAMES[a], NAMES[b])?;
                    let moved = self.current.remove(&a).unwrap();
                    self.current.insert(b, moved);
                }
            }
            Op::Unlink(file) => {
                if self.current.remove(&file).is_some() {
                    self.fs().unlink(NAMES[file])?;
                }
            }
            Op::Sync => self.fs().sync()?,
            Op::Idle { secs } => {
                let until = self.fs().now_ns() + secs * NS_PER_SEC;
                self.fs().idle(until)?;
            }
        }
        Ok(())
    }

    /// The cut fired during `op`: the cache loses power, F2FS mounts what reached the disk,
    /// every promise is checked, and what was found becomes the model.
    fn recover(&mut self, op: Op, op_index: u64) {
        let fs = self.fs.take().expect("mounted");
        self.deltas_stored += fs.metrics().delta.inline_stores;
        self.dcm_stored += fs.metrics().delta.dcm_stores;
        self.bgres_restored += fs.metrics().delta.bgres_restored_files;
        self.carried_replayed += fs.metrics().delta.dcm_carried_replayed;
        self.clusters_compressed += fs.compress_metrics().clusters_compressed;
        let m = fs.metrics().fpc_repack;
        self.fpc_repacked += m.rewritten_files + m.recompressed_files + m.converted_files;
        self.fpc_converted += m.converted_files;
        if trace() {
            println!(
                "metrics at the cut: {:?}; free segments {}",
                fs.metrics(),
                fs.free_segments()
            );
        }
        let now_ns = fs.now_ns();
        let mut dev = fs.into_device();
        let loss = dev.lose_power(now_ns).unwrap();
        self.tally.cut();
        self.tally.note(op.kind(), 1);
        self.tally.note("unflushed LBAs lost", loss.lost_lbas);
        self.tally.note("unflushed LBAs kept", loss.survived_lbas);
        if trace() {
            println!(
                "cut during {op:?}: {loss:?}; promised {:?}",
                self.promised
                    .iter()
                    .map(|(f, p)| (NAMES[*f], p.as_ref().map(|c| c.len())))
                    .collect::<Vec<_>>()
            );
        }
        let cut = self.tally.cut_points();
        let cache = cache_config(self.setup.cache_lbas, &mut self.rng);
        let dev = VolatileCache::new(dev.into_inner(), cache);
        let start_ns = now_ns + NS_PER_SEC;
        let fs = F2fs::mount_with(dev, start_ns, self.setup.fs.clone())
            .unwrap_or_else(|e| panic!("cut {cut} (op {op_index}, {op:?}): recovery failed: {e}"));
        self.fs = Some(fs);
        self.check(&format!("cut {cut} (op {op_index}, {op:?})"));
        let fsck_from = std::env::var("F2FS_CRASH_FSCK_FROM")
            .ok()
            .and_then(|v| v.parse::<u64>().ok());
        if cut.is_multiple_of(FSCK_EVERY_CUTS) || fsck_from.is_some_and(|from| cut >= from) {
            self.fs().device_mut().flush(start_ns).unwrap();
            let mut image = self.fs().device().inner().clone();
            if self.setup.fs.delta.enabled() {
                // fsck.f2fs reads inline delta zones as block addresses: fold them first.
                let mut copy = F2fs::mount_with(image, start_ns, self.setup.fs.clone()).unwrap();
                copy.restore_deltas().unwrap();
                image = copy.unmount().unwrap();
            }
            check_image(&image, &format!("{}-cut-{cut}", self.setup.name));
        } else if cut.is_multiple_of(WALK_EVERY_CUTS) {
            self.fs().device_mut().flush(start_ns).unwrap();
            let image = self.fs().device().inner().clone();
            assert_walk_clean(&image, &format!("{}-cut-{cut}", self.setup.name));
        }
    }

    /// Every promised name is as promised; every other name reads without error. The
    /// state found is durable from now on.
    fn check(&mut self, what: &str) {
        let mut found = BTreeMap::new();
        for (f, name) in NAMES.iter().enumerate() {
            let content = match self.fs().lookup(name) {
                Ok(ino) => {
                    let size = self.fs().stat_ino(ino).unwrap().size_bytes;
                    let data = self
                        .fs()
                        .read(ino, 0, size as usize)
                        .unwrap_or_else(|e| panic!("{what}: {name} unreadable: {e}"));
                    assert_eq!(data.len() as u64, size, "{what}: {name} short read");
                    Some(data)
                }
                Err(FsError::NotFound(_)) => None,
                Err(e) => panic!("{what}: lookup {name}: {e}"),
            };
            if let Some(promise) = self.promised.get(&f) {
                let want = promise.as_deref().map_or(&[][..], Vec::as_slice);
                let got = content.as_deref().unwrap_or_default();
                let lost = lost_bytes(want, got);
                self.tally.checked(want.len() as u64, lost);
                let first = want.iter().zip(got).position(|(a, b)| a != b);
                if lost > 0 {
                    if let Some(path) = std::env::var_os("F2FS_CRASH_DUMP") {
                        self.fs
                            .as_ref()
                            .unwrap()
                            .device()
                            .inner()
                            .export(path.as_ref())
                            .unwrap();
                    }
                }
                assert!(
                    lost == 0 && promise.is_some() == content.is_some(),
                    "{what}: {name} was promised {} and holds {} ({lost} of its bytes lost, \
                     the first at offset {first:?})",
                    describe(promise.as_deref().map(Vec::as_slice)),
                    describe(content.as_deref()),
                );
            }
            let content = content.map(Rc::new);
            if let Some(c) = &content {
                found.insert(f, c.clone());
            }
            self.promised.insert(f, content);
        }
        self.current = found;
    }
}

fn describe(content: Option<&[u8]>) -> String {
    match content {
        None => "no file".into(),
        Some(c) => format!("{} bytes", c.len()),
    }
}

fn cache_config(capacity_lbas: u32, rng: &mut Rng) -> VolatileCacheConfig {
    let capacity_lbas = std::env::var("F2FS_CRASH_CACHE_LBAS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(capacity_lbas);
    VolatileCacheConfig {
        capacity_lbas,
        seed: rng.next_u64(),
    }
}

fn explore_with(setup: Setup) {
    explore_cuts(setup, CUTS_PER_TEST * explore::scale());
}

fn explore_cuts(setup: Setup, cuts: u64) {
    let mut explorer = Explorer::new(setup);
    explorer.explore(cuts);
    explorer.tally.report();
    assert_eq!(explorer.tally.lost_bytes(), 0);
    for kind in ["mid-write", "mid-fsync", "mid-sync", "mid-rename"] {
        assert!(
            explorer.tally.noted(kind) > 20,
            "the cuts must land in every kind of operation: {}",
            explorer.tally.line()
        );
    }
}

/// The kernel's defaults (in-place updates for small fsync writebacks and cold files) and
/// a write cache of 1 MiB (random destaging when full reorders writes while powered too).
fn default_setup() -> Setup {
    Setup {
        name: "default",
        fs: F2fsConfig::default(),
        cache_lbas: 256,
        seed: 0xC0FFEE,
        volume_bytes: 64 * MIB,
        small_writes: 0,
    }
}

#[test]
fn volatile_cache_cuts_under_default_options() {
    explore_with(default_setup());
}

/// Pure LFS (nothing in place) and a cache large enough to hold everything between
/// flushes. 128 MiB: on 64 MiB (28 main segments, 14 of them reserved) this workload keeps
/// the free segments at the reserve, and a cut with 5 left made the recovery fail for
/// want of a fresh segment per log (docs/testing.md, "Found and not yet fixed").
#[test]
fn volatile_cache_cuts_under_pure_lfs() {
    explore_with(Setup {
        name: "lfs",
        fs: F2fsConfig::pure_lfs(),
        cache_lbas: 16_384,
        seed: 0xF2F5,
        volume_bytes: 128 * MIB,
        small_writes: 0,
    });
}

/// MedFS's inline deltas (`fs.mount.delta.mode = dci`) with a third of the operations
/// small overwrites: deltas stored, replaced and evicted, fsync'd inodes carrying zones
/// through roll-forward, all with unflushed writes lost or reordered at every cut. Every
/// fsync'd byte must come back; sampled images pass fsck.f2fs once their deltas are
/// folded back (`restore_deltas`).
#[test]
fn volatile_cache_cuts_under_medfs() {
    let setup = Setup {
        name: "medfs",
        fs: F2fsConfig {
            delta: flashstack_f2fs::DeltaConfig::dci(),
            ..F2fsConfig::default()
        },
        cache_lbas: 256,
        seed: 0xDE17A,
        volume_bytes: 64 * MIB,
        small_writes: 35,
    };
    let mut explorer = Explorer::new(setup);
    explorer.explore(CUTS_PER_TEST * explore::scale());
    explorer.tally.report();
    assert_eq!(explorer.tally.lost_bytes(), 0);
    let stored = explorer.deltas_stored;
    println!("medfs: {stored} deltas stored inline");
    assert!(stored > 300, "only {stored} deltas stored inline");
}

/// F2FS compression on every file but `.db` (lz4, 4-page clusters, checksums): clusters
/// written compressed, rewritten out of place, cut inside and truncated, with unflushed
/// writes lost or reordered at every cut. Every fsync'd byte must come back (an fsync of a
/// compressed file checkpoints, `CP_COMPRESSED`); sampled images pass fsck.f2fs.
#[test]
fn volatile_cache_cuts_under_f2fsc() {
    let setup = Setup {
        name: "f2fsc",
        fs: F2fsConfig {
            compress: flashstack_f2fs::CompressConfig {
                chksum: true,
                ..flashstack_f2fs::CompressConfig::all_files()
            },
            ..F2fsConfig::default()
        },
        cache_lbas: 256,
        seed: 0xC0C0,
        volume_bytes: 64 * MIB,
        small_writes: 20,
    };
    let mut explorer = Explorer::new(setup);
    explorer.explore(CUTS_PER_TEST * explore::scale());
    explorer.tally.report();
    assert_eq!(explorer.tally.lost_bytes(), 0);
    let n = explorer.clusters_compressed + explorer.fs().compress_metrics().clusters_compressed;
    println!("f2fsc: {n} clusters written compressed");
    assert!(n > 100, "only {n} clusters written compressed");
}

/// FPC's file policy over F2FS compression (`fs/fpc.rs`): the test's files have no
/// extension, so each is decided by the trial of its first page, which sets the
/// compression flag inside the write that brings that page. Cuts land before, inside and
/// after those writes, and inside the background re-packing of idle time (a file read
/// once since its last write, here: the explorer reads every file after each cut, and
/// the random writes scatter them), which rewrites raw files, recompresses compressed
/// ones and converts raw files whose background trial passes to compressed (the flag
/// set in place, a checkpoint, the clusters compressed). Every fsync'd byte must come
/// back, compressed, re-packed, converted or not.
#[test]
fn volatile_cache_cuts_under_fpc() {
    let mut fs = F2fsConfig::default().with_fpc();
    fs.fpc.repack_min_reads = 1;
    let setup = Setup {
        name: "fpc",
        fs,
        cache_lbas: 256,
        seed: 0xF9C,
        volume_bytes: 64 * MIB,
        small_writes: 20,
    };
    let mut explorer = Explorer::new(setup);
    explorer.explore(CUTS_PER_TEST * explore::scale());
    explorer.tally.report();
    assert_eq!(explorer.tally.lost_bytes(), 0);
    let n = explorer.clusters_compressed + explorer.fs().compress_metrics().clusters_compressed;
    let m = explorer.fs().metrics().fpc_repack;
    let repacked = explorer.fpc_repacked + m.rewritten_files + m.recompressed_files;
    let converted = explorer.fpc_converted + m.converted_files;
    let repacked = repacked + m.converted_files;
    println!(
        "fpc: {n} clusters written compressed, {repacked} files re-packed in idle time, \
         {converted} of them converted from raw to compressed"
    );
    assert!(n > 0, "FPC compressed nothing: its trials never passed");
    assert!(repacked > 20, "only {repacked} files re-packed");
    assert!(
        converted > 0,
        "no raw file was converted: cuts never met a conversion"
    );
}

/// Regression (found by the exploration above, shrunk by hand): an in-place write that
/// reached the disk while the size it grew the file to did not (power lost before any
/// fsync or checkpoint) leaves bytes past the durable end in the file's last block.
/// Growing the file later (truncate up, a write further on, a page-cache writeback of a
/// later page) used to show them where zeros belong; so did reading that page.
#[test]
fn growing_a_file_after_a_cut_shows_zeros_past_its_old_end() {
    let force = F2fsConfig {
        ipu_policy: IpuPolicy {
            force: true,
            ..IpuPolicy::OFF
        },
        ..F2fsConfig::default()
    };
    let mut dev = MemDevice::new(64 * MIB);
    mkfs(&mut dev, &MkfsOptions::default()).unwrap();
    let mut fs = F2fs::mount_with(dev, 0, force.clone()).unwrap();
    let ino = fs.create("/f").unwrap();
    fs.write(ino, 0, &[1; 5000]).unwrap();
    fs.sync().unwrap();
    fs.write(ino, 5000, &[2; 3000]).unwrap();
    assert!(
        fs.metrics().ipu_data_blocks > 0,
        "page 1 rewritten in place"
    );
    // The cut: the RAM disk keeps every write; the durable size is still 5000.
    let crash = fs.into_device();
    type Grow = fn(&mut F2fs<MemDevice>, u32);
    let ways: [(&str, Grow); 4] = [
        ("truncate up", |fs, ino| fs.truncate(ino, 8192).unwrap()),
        ("write further on", |fs, ino| {
            fs.write(ino, 20_000, b"x").unwrap()
        }),
        ("write inside the last page", |fs, ino| {
            fs.write(ino, 7000, b"y").unwrap()
        }),
        ("writeback of a later page", |fs, ino| {
            let page = [3u8; 4096];
            let hint = WriteHint {
                inode_dirty_pages: 1,
                fsync: false,
            };
            fs.write_pages_hinted(ino, 3, &[&page], 4 * 4096, hint)
                .unwrap()
        }),
    ];
    for (what, grow) in ways {
        let mut fs = F2fs::mount_with(crash.clone(), 0, force.clone()).unwrap();
        let ino = fs.lookup("/f").unwrap();
        assert_eq!(fs.stat_ino(ino).unwrap().size_bytes, 5000);
        let page = fs.read_page(ino, 1).unwrap();
        assert!(
            page[5000 - 4096..].iter().all(|&b| b == 0),
            "read_page past the end"
        );
        grow(&mut fs, ino);
        let got = fs.read(ino, 5000, 2000).unwrap();
        assert!(
            got.iter().all(|&b| b == 0),
            "{what}: the bytes past the old end must read as zeros"
        );
        // And so they stay, on disk: after an unmount and a mount too.
        let mut fs = F2fs::mount_with(fs.unmount().unwrap(), 0, force.clone()).unwrap();
        let ino = fs.lookup("/f").unwrap();
        assert!(
            fs.read(ino, 5000, 2000).unwrap().iter().all(|&b| b == 0),
            "{what}"
        );
    }
}

/// MedFS with DCM (`fs.mount.delta.mode = medfs`): the small overwrites of the test
/// above, with deltas that do not fit inline (or that DCI evicts) going to pseudo files
/// of compact pages, fsync'd ahead of their owners, and BGRes restoring files in idle
/// time, all with unflushed writes lost or reordered at every cut. HCluster's centroids
/// class every file read-cold/write-hot (the explorer reads every file after every cut,
/// which the published centroids would class read-hot). Every fsync'd byte must come
/// back; fails if DCM stored too few deltas.
#[test]
fn volatile_cache_cuts_under_medfs_with_dcm() {
    let all_write_hot = [
        [2_000_000_000, 0],
        [0, 0],
        [0, 2_000_000_000],
        [2_000_000_000, 2_000_000_000],
    ];
    let setup = Setup {
        name: "medfs-dcm",
        fs: F2fsConfig {
            delta: flashstack_f2fs::DeltaConfig {
                hcluster_centroids_tenths: all_write_hot,
                ..flashstack_f2fs::DeltaConfig::with_mode(flashstack_f2fs::DeltaMode::Medfs)
            },
            ..F2fsConfig::default()
        },
        cache_lbas: 256,
        seed: 0xDC3,
        volume_bytes: 64 * MIB,
        small_writes: 35,
    };
    let mut explorer = Explorer::new(setup);
    explorer.explore(CUTS_PER_TEST * explore::scale());
    explorer.tally.report();
    assert_eq!(explorer.tally.lost_bytes(), 0);
    let (inline, dcm) = (explorer.deltas_stored, explorer.dcm_stored);
    println!(
        "medfs-dcm: {inline} deltas stored inline, {dcm} in DCM, {} files restored by BGRes, {} carried DCM entries replayed",
        explorer.bgres_restored, explorer.carried_replayed
    );
    assert!(dcm > 100, "only {dcm} deltas stored in DCM");
}

/// DCM's carried addresses (`delta/carry.rs`) under a volatile cache: a DCM store and the
/// owner's fsync, with the power lost at each of its requests and the cache keeping any
/// subset of what was not flushed (40 draws per cut point). The page reads back as before
/// the update or after it, and after it once the fsync returned. Without the flush ahead
/// of the owner's inode the inode could survive without the pseudo-file pages it names.
#[test]
fn dcm_carried_fsync_cuts_with_a_volatile_cache() {
    let cfg = F2fsConfig {
        delta: flashstack_f2fs::DeltaConfig {
            hcluster_centroids_tenths: [
                [2_000_000_000, 0],
                [0, 0],
                [0, 2_000_000_000],
                [2_000_000_000, 2_000_000_000],
            ],
            ..flashstack_f2fs::DeltaConfig::with_mode(flashstack_f2fs::DeltaMode::Dcm)
        },
        ..F2fsConfig::default()
    };
    let page_of = |index: u64, seed: u8| -> Vec<u8> {
        (0..4096u32)
            .map(|i| (i as u8).wrapping_mul(31) ^ seed ^ index as u8)
            .collect()
    };
    // An owner with a checkpointed pseudo file and one carrier in the chain.
    let mut dev = MemDevice::new(64 * MIB);
    mkfs(&mut dev, &MkfsOptions::default()).unwrap();
    let mut fs = F2fs::mount_with(dev, 0, cfg.clone()).unwrap();
    let ino = fs.create("/f").unwrap();
    let mut model: Vec<Vec<u8>> = (0..12).map(|i| page_of(i, 1)).collect();
    fs.write(ino, 0, &model.concat()).unwrap();
    fs.sync().unwrap();
    let update = |fs: &mut F2fs<Dev>, model: &mut [Vec<u8>], index: u64, seed: u8| {
        let p = &mut model[index as usize];
        for (k, b) in p[100..400].iter_mut().enumerate() {
            *b = (k as u8).wrapping_mul(37) ^ seed;
        }
        let page: [u8; 4096] = p.as_slice().try_into().unwrap();
        let hint = WriteHint {
            inode_dirty_pages: 1,
            fsync: true,
        };
        fs.write_pages_hinted(ino, index, &[&page], 12 * 4096, hint)?;
        fs.fsync(ino)
    };
    let start = {
        let dev = VolatileCache::new(
            fs.unmount().unwrap(),
            VolatileCacheConfig {
                capacity_lbas: 0,
                seed: 0,
            },
        );
        let mut fs = F2fs::mount_with(dev, 0, cfg.clone()).unwrap();
        update(&mut fs, &mut model, 2, 7).unwrap(); // creates the pseudo file: checkpoint
        update(&mut fs, &mut model, 3, 8).unwrap(); // carried
        assert_eq!(fs.metrics().delta.dcm_carried_fsyncs, 1);
        fs.into_device().into_inner()
    };
    let before = model.clone();
    let mut after;
    let mut rng = Rng::new(0xCA22);
    let (mut cuts, mut replayed) = (0u64, 0u64);
    for ahead in 1..=8u64 {
        for _ in 0..40 {
            let cache = VolatileCacheConfig {
                capacity_lbas: 256,
                seed: rng.next_u64(),
            };
            let mut fs =
                F2fs::mount_with(VolatileCache::new(start.clone(), cache), 0, cfg.clone()).unwrap();
            fs.device_mut().arm_power_cut(ahead);
            after = before.clone();
            let done = update(&mut fs, &mut after, 5, 9).is_ok();
            let now_ns = fs.now_ns();
            // Power lost where the cut fell, or right after the fsync returned.
            let mut dev = fs.into_device();
            dev.lose_power(now_ns).unwrap();
            let mut fs = F2fs::mount_with(dev.into_inner(), now_ns + NS_PER_SEC, cfg.clone())
                .unwrap_or_else(|e| panic!("cut at request {ahead}: recovery failed: {e}"));
            replayed += fs.metrics().delta.dcm_carried_replayed;
            let got = fs.read(ino, 5 * 4096, 4096).unwrap();
            let ok = got == after[5] || (!done && got == before[5]);
            assert!(
                ok,
                "cut at request {ahead} (fsync returned: {done}): page 5 is neither version"
            );
            for i in (0..12).filter(|&i| i != 5) {
                let same = fs.read(ino, i * 4096, 4096).unwrap() == before[i as usize];
                assert!(same, "cut at request {ahead}: page {i} changed");
            }
            cuts += 1;
        }
    }
    println!("dcm carried fsync: {cuts} cuts, {replayed} carried entries replayed");
    assert!(replayed >= 80, "only {replayed} carried entries replayed");
}

/// FPC's conversion of a file past the compressed inode's address slots re-lays it (its
/// old blocks given up, its pages written back in the compressed layout, a checkpoint
/// before and after): a power cut at every one of its write requests, with a volatile
/// cache losing any unflushed subset, and after it returned. The file must read back unchanged whatever the cut (raw as before,
/// or converted), and so must another file's page fsync'd just before; every fourth
/// recovered image goes through our full verification, every 40th through fsck.f2fs.
#[test]
fn fpc_relaid_conversion_cuts_with_a_volatile_cache() {
    let cfg = F2fsConfig::default().with_fpc();
    let pages = 1_100usize;
    let data: Vec<u8> = (0..pages * 4096)
        .map(|i| [b'r', b'o', b'w', b' ', (i / 4096) as u8, b'\n'][i % 6])
        .collect();
    let mut dev = MemDevice::new(128 * MIB);
    mkfs(&mut dev, &android_like()).unwrap();
    let mut fs = F2fs::mount_with(dev, 0, cfg.clone()).unwrap();
    let big = fs.create("/big.so").unwrap();
    // Page 1 first: the creation trial is skipped and the file stays raw.
    fs.write(big, 4096, &data[4096..]).unwrap();
    fs.write(big, 0, &data[..4096]).unwrap();
    let other = fs.create("/other").unwrap();
    fs.write(other, 0, &bytes(8192, 1)).unwrap();
    fs.sync().unwrap();
    // Durable by fsync alone (roll-forward) when the conversion's first checkpoint is cut.
    fs.write(other, 4096, &bytes(4096, 2)).unwrap();
    fs.fsync(other).unwrap();
    let other_now = [bytes(4096, 1), bytes(4096, 2)].concat();
    let start = fs.into_device();
    let mut rng = Rng::new(0xF9C2);
    let (mut cuts, mut converted) = (0u64, 0u64);
    let mut ahead = 1u64;
    loop {
        let cache = cache_config(256, &mut rng);
        let mut fs =
            F2fs::mount_with(VolatileCache::new(start.clone(), cache), 0, cfg.clone()).unwrap();
        fs.device_mut().arm_power_cut(ahead);
        let done = fs.fpc_convert(big).is_ok();
        let uncut = done && fs.device_mut().is_powered();
        assert!(
            done || !fs.device_mut().is_powered(),
            "failed without a cut"
        );
        assert_eq!(fs.metrics().fpc_repack.relaid_files, u64::from(done));
        let now_ns = fs.now_ns();
        let mut dev = fs.into_device();
        dev.lose_power(now_ns).unwrap();
        let media = dev.into_inner();
        let what = format!("cut at request {ahead} of the re-laid conversion");
        let mut fs = F2fs::mount_with(media.clone(), now_ns + NS_PER_SEC, cfg.clone())
            .unwrap_or_else(|e| panic!("{what}: recovery failed: {e}"));
        assert!(
            fs.read(big, 0, data.len()).unwrap() == data,
            "{what}: the file changed"
        );
        assert!(
            fs.read(other, 0, 8192).unwrap() == other_now,
            "{what}: fsync'd page lost"
        );
        let compressed = fs.compr_blocks(big).unwrap() > 0;
        assert!(
            compressed || !uncut,
            "{what}: the finished conversion did not last"
        );
        converted += u64::from(compressed);
        drop(fs);
        if cuts % 4 == 0 || uncut {
            assert_walk_clean(&media, &what);
        }
        if cuts % 40 == 0 || uncut {
            check_image(&media, &what);
        }
        cuts += 1;
        if uncut {
            break;
        }
        ahead += 1;
    }
    println!("fpc re-laid conversion: {cuts} cuts up to request {ahead}, {converted} converted");
    assert!(ahead > 200, "the conversion wrote only {ahead} requests");
    assert!(cuts > converted, "every cut found the file converted");
}
