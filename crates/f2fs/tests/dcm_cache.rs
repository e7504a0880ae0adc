//! DCM keeps the decoded meta page of each pseudo file with the cached page itself
//! (`fs/delta/dcm.rs`): these tests make a stale decoding show. Random sequences of
//! updates (to DCM and inline), whole-page rewrites, truncations, extensions, checkpoints,
//! idle time (background GC moving the pseudo files' blocks, BGRes restoring files),
//! remounts and power cuts (roll-forward, with and without the full verification at
//! mount) are run against a model of the files' bytes; after every step every page reads
//! back as the model says and the cache agrees with a fresh decode and with flash.

use flashstack_f2fs::{
    mkfs, DeltaConfig, DeltaMode, F2fs, F2fsConfig, MemDevice, MkfsOptions, MountOptions, Verify,
    WriteHint,
};

const MIB: u64 = 1 << 20;
const SEC: u64 = 1_000_000_000;

/// The checks read every page after every step, which HCluster's published centroids
/// would soon class read-hot (no DCM at all): these class a file read-cold/write-hot
/// until about 1,000 read calls since mount, so files go to DCM, later leave the class
/// (BGRes restores them, DCM refuses them), and come back after a remount.
const CENTROIDS_TENTHS: [[u32; 2]; 4] = [[100_000, 0], [0, 0], [0, 20_000], [100_000, 100_000]];

fn config(mode: DeltaMode, cache_pages: usize) -> F2fsConfig {
    F2fsConfig {
        delta: DeltaConfig {
            dcm_cache_pages: cache_pages,
            hcluster_centroids_tenths: CENTROIDS_TENTHS,
            ..DeltaConfig::with_mode(mode)
        },
        ..F2fsConfig::default()
    }
}

fn full_check(config: F2fsConfig) -> MountOptions {
    MountOptions {
        verify: Verify::Full,
        config,
        ..MountOptions::default()
    }
}

/// A seeded xorshift: the sequences are the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A page of text-like bytes (compressible, distinct per page and generation).
fn page(index: u64, generation: u64) -> Vec<u8> {
    (0..4096u64)
        .map(|i| b"row,value;"[(i % 10) as usize] ^ ((i * 31 + index * 7 + generation) % 5) as u8)
        .collect()
}

/// Page `index` written whole through the page cache's path (one dirty page), fsync'd.
fn write_page(fs: &mut F2fs<MemDevice>, ino: u32, model: &mut [Vec<u8>], index: u64) {
    let bytes: [u8; 4096] = model[index as usize].as_slice().try_into().unwrap();
    let size = model.len() as u64 * 4096;
    let hint = WriteHint {
        inode_dirty_pages: 1,
        fsync: true,
    };
    fs.write_pages_hinted(ino, index, &[&bytes], size, hint)
        .unwrap();
    fs.fsync(ino).unwrap();
}

/// `len` bytes at `at` of page `index` changed (a small update: a delta), fsync'd.
fn update(
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
    write_page(fs, ino, model, index);
}

fn check(fs: &mut F2fs<MemDevice>, files: &[(u32, Vec<Vec<u8>>)], what: &str) {
    fs.check_dcm_cache()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    for (ino, model) in files {
        let size = fs.stat_ino(*ino).unwrap().size_bytes;
        assert_eq!(size, model.len() as u64 * 4096, "{what}: size of {ino}");
        for (i, p) in model.iter().enumerate() {
            let got = fs.read_page(*ino, i as u64).unwrap();
            assert!(got[..] == p[..], "{what}: inode {ino} page {i}");
        }
    }
    // Reading loaded pages: the cache is checked again with them in it.
    fs.check_dcm_cache()
        .unwrap_or_else(|e| panic!("{what}, after the reads: {e}"));
}

/// One random sequence; returns (DCM stores, files restored by BGRes, power cuts, data
/// blocks GC moved) so the caller can see the sequences reached what they are meant to
/// exercise.
fn run(mode: DeltaMode, cache_pages: usize, seed: u64, steps: usize) -> [u64; 4] {
    let cfg = config(mode, cache_pages);
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut dev = MemDevice::new(64 * MIB);
    mkfs(&mut dev, &MkfsOptions::default()).unwrap();
    let mut fs = F2fs::mount_with(dev, 0, cfg.clone()).unwrap();
    let mut files = Vec::new();
    for (k, name) in ["/a.db", "/b.db"].into_iter().enumerate() {
        let ino = fs.create(name).unwrap();
        let pages = 12 + 4 * k as u64;
        let model: Vec<Vec<u8>> = (0..pages).map(|i| page(i, 0)).collect();
        fs.write(ino, 0, &model.concat()).unwrap();
        files.push((ino, model));
    }
    fs.sync().unwrap();
    let (mut stores, mut restored, mut cuts, mut moved) = (0, 0, 0, 0);
    for step in 0..steps {
        let f = rng.below(files.len() as u64) as usize;
        let (ino, model) = &mut files[f];
        let ino = *ino;
        let pages = model.len() as u64;
        let op = rng.below(100);
        let what = format!("{mode:?}, {cache_pages} cached pages, seed {seed}, step {step}");
        match op {
            // Updates too large to inline: DCM.
            0..=44 => {
                let index = rng.below(pages.min(8));
                let at = rng.below(3000) as usize;
                update(&mut fs, ino, model, index, at, 300, step as u8);
            }
            // Small updates: inline (DCI) where the mode has it.
            45..=54 => {
                let index = rng.below(pages);
                let at = rng.below(4000) as usize;
                update(&mut fs, ino, model, index, at, 20, step as u8);
            }
            // A whole new page: its delta goes.
            55..=61 => {
                let index = rng.below(pages);
                model[index as usize] = page(index, step as u64 + 1);
                write_page(&mut fs, ino, model, index);
            }
            // Truncation cuts deltas off.
            62..=67 => {
                let keep = 6 + rng.below(pages.saturating_sub(6).max(1));
                model.truncate(keep as usize);
                fs.truncate(ino, keep * 4096).unwrap();
                fs.fsync(ino).unwrap();
            }
            // Growing again (new pages, written and fsync'd).
            68..=71 => {
                let from = model.len() as u64;
                for i in from..(from + 1 + rng.below(4)).min(20) {
                    model.push(page(i, step as u64));
                    write_page(&mut fs, ino, model, i);
                }
            }
            72..=76 => fs.sync().unwrap(),
            // Idle: background GC (moves the pseudo files' blocks) and BGRes.
            77..=83 => {
                let now = fs.now_ns();
                fs.idle(now + 120 * SEC).unwrap();
            }
            // Remount.
            84..=88 => {
                stores += fs.metrics().delta.dcm_stores;
                restored += fs.metrics().delta.bgres_restored_files;
                moved += fs.metrics().gc_data_blocks;
                let dev = fs.unmount().unwrap();
                fs = F2fs::mount_with(dev, 0, cfg.clone()).unwrap();
            }
            // Power cut, roll-forward.
            89..=94 => {
                cuts += 1;
                stores += fs.metrics().delta.dcm_stores;
                restored += fs.metrics().delta.bgres_restored_files;
                moved += fs.metrics().gc_data_blocks;
                let dev = fs.into_device();
                fs = F2fs::mount_with(dev, 0, cfg.clone()).unwrap();
            }
            // Power cut, the full verification (reading every pseudo file) before the
            // roll-forward.
            _ => {
                cuts += 1;
                stores += fs.metrics().delta.dcm_stores;
                restored += fs.metrics().delta.bgres_restored_files;
                moved += fs.metrics().gc_data_blocks;
                let dev = fs.into_device();
                fs = F2fs::mount_opts(dev, full_check(cfg.clone()))
                    .unwrap_or_else(|e| panic!("{what}: the full verification refused: {e}"));
            }
        }
        check(&mut fs, &files, &what);
    }
    stores += fs.metrics().delta.dcm_stores;
    restored += fs.metrics().delta.bgres_restored_files;
    moved += fs.metrics().gc_data_blocks;
    // Restoring every delta gives back the same bytes, and a clean walk.
    fs.restore_deltas().unwrap();
    check(&mut fs, &files, "after restore_deltas");
    let dev = fs.unmount().unwrap();
    let mut fs = F2fs::mount_opts(dev, full_check(cfg)).unwrap();
    check(&mut fs, &files, "after restore_deltas and a remount");
    [stores, restored, cuts, moved]
}

#[test]
fn random_sequences_never_read_a_stale_meta_page() {
    let mut totals = Vec::new();
    for mode in [DeltaMode::Dc, DeltaMode::Medfs, DeltaMode::Dcm] {
        for cache_pages in [512, 3] {
            for seed in 1..=3 {
                totals.push((mode, cache_pages, run(mode, cache_pages, seed, 200)));
            }
        }
    }
    // The sequences did what they are for: deltas went to DCM in every mode, BGRes
    // restored files where HCluster is on, power cuts happened, and GC moved blocks.
    for mode in [DeltaMode::Dc, DeltaMode::Medfs, DeltaMode::Dcm] {
        let of_mode = totals.iter().filter(|t| t.0 == mode);
        let sum = |k: usize| -> u64 { of_mode.clone().map(|t| t.2[k]).sum() };
        let (stores, restored, cuts, moved) = (sum(0), sum(1), sum(2), sum(3));
        assert!(stores > 50, "{mode:?}: {totals:?}");
        assert!(cuts > 5, "{mode:?}: {totals:?}");
        assert!(moved > 0, "{mode:?}: GC moved nothing: {totals:?}");
        if mode != DeltaMode::Dc {
            assert!(restored > 0, "{mode:?}: {totals:?}");
        }
    }
}

/// The case a decoded-meta cache is most likely to get wrong: the full verification at
/// mount reads (and caches) the checkpointed meta page, then roll-forward replays a newer
/// one from the fsync'd chain. Reads after the mount must see the newer deltas.
#[test]
fn the_full_verification_before_roll_forward_leaves_no_stale_meta_page() {
    let cfg = config(DeltaMode::Dc, 512);
    let mut dev = MemDevice::new(64 * MIB);
    mkfs(&mut dev, &MkfsOptions::default()).unwrap();
    let mut fs = F2fs::mount_with(dev, 0, cfg.clone()).unwrap();
    let ino = fs.create("/a.db").unwrap();
    let mut model: Vec<Vec<u8>> = (0..12).map(|i| page(i, 0)).collect();
    fs.write(ino, 0, &model.concat()).unwrap();
    fs.sync().unwrap();
    for k in 0..6u64 {
        update(&mut fs, ino, &mut model, k, 100, 300, k as u8);
    }
    fs.sync().unwrap();
    let checkpointed = fs.dcm_deltas(ino).unwrap();
    assert_eq!(checkpointed.len(), 6, "{checkpointed:?}");
    // After the checkpoint: new deltas (one more page, and page 0's replaced).
    update(&mut fs, ino, &mut model, 6, 900, 300, 60);
    update(&mut fs, ino, &mut model, 0, 2000, 300, 61);
    let fsynced = fs.dcm_deltas(ino).unwrap();
    assert_eq!(fsynced.len(), 7);
    let dev = fs.into_device();
    let mut fs = F2fs::mount_opts(dev, full_check(cfg)).unwrap();
    assert!(fs.recovered_inodes() >= 1);
    fs.check_dcm_cache().unwrap();
    assert_eq!(fs.dcm_deltas(ino).unwrap(), fsynced);
    for (i, p) in model.iter().enumerate() {
        assert!(
            fs.read_page(ino, i as u64).unwrap()[..] == p[..],
            "page {i}"
        );
    }
}
