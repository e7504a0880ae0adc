//! Slack space recycling: a small volume filled to high utilisation and overwritten at
//! random, so free segments run short while many segments are dirty. The logs must then
//! fill the holes of dirty segments (SSR), never a block freed since the last checkpoint;
//! data reads back byte-exact, fsync'd data survives power cuts by roll-forward, and
//! fsck.f2fs accepts the images (checkpoints recording logs in SSR mode included).

mod common;

use common::*;
use flashstack_f2fs::consts::ALLOC_SSR;
use flashstack_f2fs::{mkfs, mount, F2fs, F2fsConfig, MemDevice, MkfsOptions, WriteHint};

const WARM_DATA: usize = 1;
const WARM_NODE: usize = 4;

/// The content of page `index` of file `file` at `version`: every byte depends on all
/// three, so a stale or misplaced block never passes for the right one.
fn page(file: usize, index: u64, version: u32) -> [u8; 4096] {
    let mut x = ((file as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15))
        ^ ((index + 1).wrapping_mul(0xC2B2_AE3D_27D4_EB4F))
        ^ ((version as u64 + 1).wrapping_mul(0x1656_67B1_9E37_79F9));
    std::array::from_fn(|_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x as u8
    })
}

/// A deterministic xorshift for the choice of pages.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Files, the version of every page now and as durable.
struct Volume {
    fs: F2fs<MemDevice>,
    cfg: F2fsConfig,
    inos: Vec<u32>,
    /// Pages per file.
    sizes: Vec<u64>,
    now: Vec<Vec<u32>>,
    durable: Vec<Vec<u32>>,
    checkpoints: u64,
    rng: Rng,
}

impl Volume {
    /// Files of `sizes` pages on a fresh `bytes` volume, then a checkpoint.
    fn fill(bytes: u64, sizes: Vec<u64>, cfg: F2fsConfig) -> Volume {
        let mut dev = MemDevice::new(bytes);
        mkfs(&mut dev, &MkfsOptions::default()).unwrap();
        let fs = F2fs::mount_with(dev, 0, cfg.clone()).unwrap();
        let now: Vec<Vec<u32>> = sizes.iter().map(|&n| vec![0; n as usize]).collect();
        let mut v = Volume {
            fs,
            cfg,
            inos: Vec::new(),
            sizes: sizes.clone(),
            durable: now.clone(),
            now,
            checkpoints: 0,
            rng: Rng(0x5eed_1234_abcd_0001),
        };
        for (f, &pages) in sizes.iter().enumerate() {
            let ino = v.fs.create(&format!("/f{f}")).unwrap();
            v.inos.push(ino);
            // 32 pages per write: warm data, no hint, out of place.
            for first in (0..pages).step_by(32) {
                let n = 32.min(pages - first);
                let bytes: Vec<u8> = (first..first + n).flat_map(|i| page(f, i, 0)).collect();
                v.fs.write(ino, first * 4096, &bytes).unwrap();
            }
        }
        v.sync();
        v
    }

    /// Notes a checkpoint taken inside an operation (cleaning, thresholds).
    fn settle(&mut self) {
        let cps = self.fs.metrics().checkpoints;
        if cps != self.checkpoints {
            self.checkpoints = cps;
            self.durable = self.now.clone();
        }
    }

    fn sync(&mut self) {
        self.fs.sync().unwrap();
        self.settle();
        self.durable = self.now.clone();
    }

    /// Overwrites one random page of files `files` out of place (a background
    /// writeback).
    fn overwrite_random(&mut self, files: std::ops::Range<usize>) {
        let f = files.start + self.rng.below(files.len() as u64) as usize;
        let i = self.rng.below(self.sizes[f]);
        self.now[f][i as usize] += 1;
        let p = page(f, i, self.now[f][i as usize]);
        self.fs.write(self.inos[f], i * 4096, &p).unwrap();
        self.settle();
    }

    /// Overwrites `n` consecutive pages of file `f` as an fsync's writeback (more than
    /// `min_fsync_blocks` dirty pages: out of place), then fsyncs it.
    fn fsync_run(&mut self, f: usize, first: u64, n: u64) {
        let mut pages = Vec::new();
        for i in first..first + n {
            self.now[f][i as usize] += 1;
            pages.push(page(f, i, self.now[f][i as usize]));
        }
        let refs: Vec<&[u8; 4096]> = pages.iter().collect();
        // More dirty pages than `min_fsync_blocks` (no in-place update) and than
        // `min_hot_blocks` (the warm data log).
        let hint = WriteHint {
            inode_dirty_pages: 20,
            fsync: true,
        };
        let size = self.sizes[f] * 4096;
        self.fs
            .write_pages_hinted(self.inos[f], first, &refs, size, hint)
            .unwrap();
        self.settle();
        self.fs.fsync(self.inos[f]).unwrap();
        self.settle();
        self.durable[f] = self.now[f].clone();
    }

    /// Unmounts, runs fsck on the image, remounts and checks every file.
    fn finish(mut self, what: &str) {
        let dev = std::mem::replace(&mut self.fs, dummy_fs(MemDevice::new(4096)))
            .unmount()
            .unwrap();
        check_image(&dev, what);
        self.fs = F2fs::mount_with(dev, 0, self.cfg.clone()).unwrap();
        let now = self.now.clone();
        self.check(&now, what);
    }

    /// Every page of every file against `versions`.
    fn check(&mut self, versions: &[Vec<u32>], what: &str) {
        for (f, &ino) in self.inos.clone().iter().enumerate() {
            for i in 0..self.sizes[f] {
                let got = self.fs.read_page(ino, i).unwrap();
                let want = page(f, i, versions[f][i as usize]);
                let found = (0..64).find(|&v| page(f, i, v)[..] == got[..]);
                assert!(
                    got[..] == want[..],
                    "{what}: file {f} page {i} is not version {} but {found:?} (recovered {})",
                    versions[f][i as usize],
                    self.fs.recovered_inodes()
                );
            }
        }
    }

    /// A power cut (the device kept as it is), fsck on the crash image, remount with
    /// roll-forward; the files must be exactly what was durable.
    fn power_cut(&mut self, what: &str) -> usize {
        let placeholder = MemDevice::new(4096 * 8);
        let fs = std::mem::replace(&mut self.fs, dummy_fs(placeholder));
        let mut dev = fs.into_device();
        check_image(&dev, &format!("{what}: crash image"));
        let ssr_logs = ssr_logs_in_checkpoint(&mut dev);
        self.fs = F2fs::mount_with(dev, 0, self.cfg.clone()).unwrap();
        // Recovery's own checkpoint: the durable state is what is checked now.
        self.checkpoints = self.fs.metrics().checkpoints;
        let durable = self.durable.clone();
        self.check(&durable, &format!("{what}: after recovery"));
        self.now = durable;
        ssr_logs
    }
}

/// A mounted file system on a throwaway device (only to move the real one out).
fn dummy_fs(_dev: MemDevice) -> F2fs<MemDevice> {
    let mut dev = MemDevice::new(64 * MIB);
    mkfs(&mut dev, &MkfsOptions::default()).unwrap();
    F2fs::mount(dev).unwrap()
}

/// Logs the current checkpoint of an image records in SSR mode.
fn ssr_logs_in_checkpoint(dev: &mut MemDevice) -> usize {
    let m = mount(dev).unwrap();
    m.checkpoint
        .alloc_type
        .iter()
        .filter(|&&t| t == ALLOC_SSR)
        .count()
}

/// Random overwrites on a 128 MiB volume at 80 % utilisation, a checkpoint every 2,000:
/// free segments fall to the SSR threshold with most segments dirty, and the data logs
/// recycle them. Then rounds of checkpointed and un-synced overwrites, fsyncs and power
/// cuts: what was fsync'd comes back by roll-forward, what was only written comes back as
/// checkpointed (so SSR never reused a block the checkpoint still needed).
#[test]
fn ssr_recycles_dirty_data_segments_and_keeps_fsynced_data() {
    let files = 16;
    let mut v = Volume::fill(128 * MIB, vec![800; files], F2fsConfig::default());
    for _ in 0..8 {
        for _ in 0..2000 {
            v.overwrite_random(0..files);
        }
        v.sync();
    }
    let m = v.fs.metrics().clone();
    assert!(m.ssr_blocks_per_log[WARM_DATA] > 5000, "{m:?}");
    assert!(m.ssr_segments > 20, "{m:?}");
    // SSR fills holes instead of taking free segments: no cleaning was needed.
    assert_eq!(m.gc_cycles, 0, "{m:?}");
    let now = v.now.clone();
    v.check(&now, "after SSR overwrites");

    let (mut recovered, mut ssr_logs) = (0, 0);
    for cut in 0..4 {
        for _ in 0..1000 {
            v.overwrite_random(0..files);
        }
        v.sync();
        for _ in 0..300 {
            v.overwrite_random(0..files);
        }
        for k in 0..4 {
            let f = (cut * 4 + k) % files;
            v.fsync_run(f, (cut * 100 + k * 20) as u64, 20);
        }
        for _ in 0..200 {
            v.overwrite_random(0..files);
        }
        ssr_logs += v.power_cut(&format!("data cut {cut}"));
        recovered += v.fs.recovered_inodes();
    }
    assert_eq!(recovered, 16);
    assert!(
        ssr_logs >= 2,
        "checkpoints at the cuts had {ssr_logs} logs in SSR mode"
    );
    v.finish("data SSR, unmounted");
}

/// Many small files (a data block and an inode each) next to large ones: overwriting
/// them dirties inodes, so node segments get holes too and the node logs recycle them;
/// fsyncs then put the warm node chain into the holes of a recycled segment, and
/// roll-forward must follow it across them after a power cut.
#[test]
fn ssr_in_node_logs_keeps_the_fsync_chain() {
    let (big, small) = (8, 1500);
    let mut sizes = vec![900; big];
    sizes.extend(vec![2; small]);
    let mut v = Volume::fill(128 * MIB, sizes, F2fsConfig::default());
    let files = big + small;
    for _ in 0..12 {
        for _ in 0..1000 {
            v.overwrite_random(0..big);
            v.overwrite_random(big..files);
        }
        v.sync();
    }
    let m = v.fs.metrics().clone();
    eprintln!("{m:?}");
    assert!(m.ssr_blocks_per_log[WARM_NODE] > 0, "{m:?}");
    let now = v.now.clone();
    v.check(&now, "after SSR overwrites");

    let (mut recovered, mut chain_by_ssr) = (0, 0);
    for cut in 0..4 {
        for _ in 0..1000 {
            v.overwrite_random(0..big);
            v.overwrite_random(big..files);
        }
        v.sync();
        let before = v.fs.metrics().ssr_blocks_per_log[WARM_NODE];
        for k in 0..40 {
            let f = big + (cut * 97 + k * 31) % small;
            v.fsync_run(f, 0, 2);
            v.overwrite_random(big..files);
        }
        chain_by_ssr += v.fs.metrics().ssr_blocks_per_log[WARM_NODE] - before;
        v.power_cut(&format!("node cut {cut}"));
        recovered += v.fs.recovered_inodes();
    }
    eprintln!("recovered {recovered}, fsync chain blocks written by SSR {chain_by_ssr}");
    assert!(recovered > 100);
    assert!(chain_by_ssr > 0);
    v.finish("node SSR, unmounted");
}

/// `mode=lfs` (and `ssr = false`): the same traffic never recycles a segment by SSR;
/// cleaning makes the room instead.
#[test]
fn lfs_mode_and_the_switch_disable_ssr() {
    let no_ssr = F2fsConfig {
        ssr: false,
        ..F2fsConfig::default()
    };
    for cfg in [F2fsConfig::pure_lfs(), no_ssr] {
        let files = 16;
        let mut v = Volume::fill(128 * MIB, vec![800; files], cfg);
        for _ in 0..4 {
            for _ in 0..2000 {
                v.overwrite_random(0..files);
            }
            v.sync();
        }
        let m = v.fs.metrics().clone();
        assert_eq!(m.ssr_blocks(), 0, "{m:?}");
        assert_eq!(m.ssr_segments, 0, "{m:?}");
        assert!(m.gc_cycles > 0, "{m:?}");
        let now = v.now.clone();
        v.check(&now, "LFS");
    }
}
