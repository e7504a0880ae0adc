//! File-system metadata and journal blocks: ext4-style inode tables and allocation
//! bitmaps. Both are mostly zeros around small structured records, which is why LDC found
//! Ext4 journal and metadata writes highly compressible.
//!
//! A page is 32 units of 128 bytes (one ext2/ext4 base inode each, or a 1024-bit stretch
//! of a bitmap). A touched unit is re-drawn: an inode may be allocated, freed or
//! re-stamped, a bitmap stretch may gain or lose allocated blocks.

use super::PageCtx;
use crate::write::{Draw, Writer};
use crate::PAGE_SIZE;

const UNIT: usize = 128;
const UNITS: usize = PAGE_SIZE / UNIT;

/// Mean bytes of a 128-byte unit that differ when it is re-drawn (allocation flips,
/// timestamps, sizes and extents; moving bitmap frontiers). Measured; the
/// `calibration_constants_match_measurement` test fails if they drift.
const INODE_UNIT_DIFF: f64 = 22.5;
const BITMAP_UNIT_DIFF: f64 = 45.5;

/// `EXT4_EXTENTS_FL`: the inode maps its data with an extent tree.
const EXTENTS_FLAG: u64 = 0x8_0000;
const EXTENT_MAGIC: u64 = 0xF30A;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    InodeTable,
    Bitmap,
}

impl Kind {
    /// Inode tables outnumber bitmaps: a bitmap block covers 32 768 blocks, an inode-table
    /// block only 16 files.
    fn draw(layout: &mut Draw) -> Self {
        if layout.percent(70) {
            Kind::InodeTable
        } else {
            Kind::Bitmap
        }
    }
}

/// Per-page values shared by its inodes: the owning app and where its data sits.
struct PageVals {
    uid: u64,
    time_s: u64,
    first_block: u64,
}

pub(crate) fn fill(ctx: &PageCtx, page: &mut [u8]) {
    page.fill(0); // free inodes and gaps
    let mut layout = ctx.layout_draw();
    let kind = Kind::draw(&mut layout);
    let unit_diff = match kind {
        Kind::InodeTable => INODE_UNIT_DIFF,
        Kind::Bitmap => BITMAP_UNIT_DIFF,
    };
    let schedule = ctx.schedule(UNITS as f64 * unit_diff);
    let vals = PageVals {
        uid: 10_000 + layout.below(200) as u64,
        time_s: ctx.page_epoch_ms() / 1000,
        first_block: 0x8000 + (layout.u64() & 0x3F_FFFF),
    };
    for unit in 0..UNITS {
        let mut d = ctx.unit_draw(unit, schedule.last_touch(unit));
        let mut w = Writer::new(page, unit * UNIT);
        match kind {
            Kind::InodeTable => inode(&mut w, &mut d, &vals, unit),
            Kind::Bitmap => bitmap(&mut w, &mut d),
        }
    }
}

/// An ext4 inode's first 128 bytes (`struct ext4_inode`), or zeros if it is free.
fn inode(w: &mut Writer, d: &mut Draw, vals: &PageVals, unit: usize) {
    // Most inode slots of a block are free: a block holds 16 (256-byte) or 32 slots and
    // app directories are sparse.
    if d.percent(60) {
        return;
    }
    let dir = d.percent(15);
    let size = if dir {
        4096
    } else {
        d.below(1 << 16) as u64 * (1 + d.below(64) as u64)
    };
    let blocks = size.div_ceil(4096).max(1);
    let mtime = vals.time_s + d.below(1 << 16) as u64 * 32;
    w.le(if dir { 0x41F9 } else { 0x81B0 }, 2); // drwxrwx--x / -rw-rw----
    w.le(vals.uid, 2);
    w.le(size, 4);
    w.le(mtime + d.below(600) as u64, 4); // atime
    w.le(mtime, 4); // ctime
    w.le(mtime, 4); // mtime
    w.le(0, 4); // dtime
    w.le(vals.uid, 2); // gid
    w.le(if dir { 2 } else { 1 }, 2); // links
    w.le(blocks * 8, 4); // 512-byte sectors
    w.le(EXTENTS_FLAG, 4);
    w.le(d.below(8) as u64, 4); // i_version
                                // Extent header: magic, 1 entry, room for 4, depth 0, generation 0.
    w.le(EXTENT_MAGIC, 2);
    w.le(1, 2);
    w.le(4, 2);
    w.le(0, 6);
    // One extent: logical block 0, length, physical start.
    w.le(0, 4);
    w.le(blocks, 2);
    w.le(0, 2);
    w.le(vals.first_block + unit as u64 * 64 + d.below(64) as u64, 4);
    w.pos += 36; // unused extent slots
    w.le(d.u64(), 4); // i_generation
    w.pos += 20; // file ACL, size_high, fragment address, osd2 high words
    w.le(d.u64(), 2); // checksum_lo (metadata_csum)
}

/// A stretch of a block bitmap: a run of allocated blocks, a partly used byte, free space
/// with a few stray allocations.
fn bitmap(w: &mut Writer, d: &mut Draw) {
    let start = w.pos;
    let full = d.below(UNIT + 1);
    for _ in 0..full {
        w.byte(0xFF);
    }
    if full < UNIT {
        w.byte((1u8 << d.below(8)).wrapping_sub(1));
        for _ in 0..d.below(3) {
            w.pos = start + d.range(full, UNIT - 1);
            w.byte(1 << d.below(8));
        }
    }
}

#[cfg(test)]
pub(super) fn group_of(ctx: &PageCtx) -> usize {
    Kind::draw(&mut ctx.layout_draw()) as usize
}
