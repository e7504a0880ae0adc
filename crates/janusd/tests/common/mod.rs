//! What the janusd tests share: a small ufs31 and files laid out on purpose.
#![allow(dead_code)]

use flashstack_block::LBA_SIZE;
use flashstack_f2fs::{mkfs, F2fs, MkfsOptions};
use flashstack_ftl::{presets, Ftl};

pub const PAGES: u32 = 512;

/// ufs31 with 40 blocks of 192 pages per plane (960 MiB raw).
pub fn small_ufs31() -> Ftl {
    small_ufs31_with(|_| {})
}

/// [`small_ufs31`] with a change to its configuration.
pub fn small_ufs31_with(change: impl FnOnce(&mut flashstack_ftl::DeviceConfig)) -> Ftl {
    let mut config = presets::ufs31();
    change(&mut config);
    config.nand.geometry.blocks_per_plane = 40;
    config.nand.geometry.pages_per_block = 192;
    Ftl::new(config, true, 3).unwrap()
}

pub fn fresh_fs() -> F2fs<Ftl> {
    fs_on(small_ufs31())
}

pub fn fs_on(mut ftl: Ftl) -> F2fs<Ftl> {
    mkfs(&mut ftl, &MkfsOptions::default()).unwrap();
    F2fs::mount_at(ftl, 0).unwrap()
}

pub fn page(file: u8, i: u32) -> Vec<u8> {
    let mut p = vec![file; LBA_SIZE];
    p[..4].copy_from_slice(&i.to_le_bytes());
    p
}

/// Writes `PAGES` pages of `/a`, after every `a_run` of its pages `fill_run` pages of a
/// filler file, then removes the filler: `/a` is left in pieces.
pub fn interleaved(fs: &mut F2fs<Ftl>, a_run: u32, fill_run: u32) {
    fs.mkdir("/data").unwrap();
    let a = fs.create("/data/a.db").unwrap();
    let b = fs.create("/data/filler.db").unwrap();
    let mut fill_at = 0u64;
    for i in 0..PAGES {
        fs.write(a, i as u64 * LBA_SIZE as u64, &page(1, i))
            .unwrap();
        if (i + 1) % a_run == 0 {
            for _ in 0..fill_run {
                fs.write(b, fill_at * LBA_SIZE as u64, &page(2, fill_at as u32))
                    .unwrap();
                fill_at += 1;
            }
        }
    }
    fs.sync().unwrap();
    fs.unlink("/data/filler.db").unwrap();
    fs.sync().unwrap();
}

pub fn contiguous(fs: &mut F2fs<Ftl>) {
    fs.mkdir("/data").unwrap();
    let a = fs.create("/data/a.db").unwrap();
    for i in 0..PAGES {
        fs.write(a, i as u64 * LBA_SIZE as u64, &page(1, i))
            .unwrap();
    }
    fs.sync().unwrap();
}
