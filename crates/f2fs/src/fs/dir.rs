//! Directories: inline dentries in the inode for small ones, multi-level hash tables of
//! dentry blocks for the rest (level n: 2^n buckets of 2 blocks, 4 from level 32;
//! `f2fs_find_entry` / `f2fs_add_regular_entry` in the kernel's `fs/f2fs/dir.c`).

use flashstack_block::BlockDevice;

use super::data::{OFF_DEPTH, OFF_SIZE};
use super::hash::dentry_hash;
use super::{corrupt, F2fs, FsError};
use crate::codec::{clear_bit_le, le32_at, put_le32_at, set_bit_le, test_bit_le, zero_block};
use crate::consts::*;
use crate::layout::CURSEG_HOT_DATA;

/// `MAX_DIR_HASH_DEPTH`.
const MAX_DIR_HASH_DEPTH: u32 = 63;
/// `MAX_DIR_BUCKETS`.
const MAX_DIR_BUCKETS: u64 = 1 << ((MAX_DIR_HASH_DEPTH / 2) - 1);
/// Byte offset of `i_dir_level` in the inode.
const OFF_DIR_LEVEL: usize = 347;

/// The shape of a dentry area: a block (214 slots) or an inode's inline area.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Area {
    pub slots: usize,
    bitmap: usize,
    reserved: usize,
}

pub(crate) const BLOCK_AREA: Area = Area {
    slots: NR_DENTRY_IN_BLOCK,
    bitmap: SIZE_OF_DENTRY_BITMAP,
    reserved: SIZE_OF_DENTRY_RESERVED,
};

/// One live entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Found {
    pub slot: usize,
    pub ino: u32,
    pub file_type: u8,
    pub name: Vec<u8>,
    /// The stored hash and name length (checked by the full verification).
    pub hash: u32,
    pub name_len: usize,
}

impl Area {
    /// `NR_INLINE_DENTRY` and friends for an inline area of `bytes` bytes.
    pub fn inline(bytes: usize) -> Area {
        let slots = bytes * 8 / ((SIZE_OF_DIR_ENTRY + SLOT_LEN) * 8 + 1);
        let bitmap = slots.div_ceil(8);
        Area {
            slots,
            bitmap,
            reserved: bytes - ((SIZE_OF_DIR_ENTRY + SLOT_LEN) * slots + bitmap),
        }
    }

    fn dentry(&self, slot: usize) -> usize {
        self.bitmap + self.reserved + SIZE_OF_DIR_ENTRY * slot
    }

    fn name(&self, slot: usize) -> usize {
        self.bitmap + self.reserved + SIZE_OF_DIR_ENTRY * self.slots + SLOT_LEN * slot
    }

    pub fn entries(&self, buf: &[u8]) -> Vec<Found> {
        let mut out = Vec::new();
        self.walk(buf, |slot, name| {
            out.push(self.found(buf, slot, name));
            false
        });
        out
    }

    /// Visits each live entry (its slot and name) in slot order until `visit` returns
    /// true; returns that entry's slot.
    fn walk(&self, buf: &[u8], mut visit: impl FnMut(usize, &[u8]) -> bool) -> Option<usize> {
        let mut slot = 0;
        while slot < self.slots {
            if !test_bit_le(&buf[..self.bitmap], slot) {
                slot += 1;
                continue;
            }
            let d = self.dentry(slot);
            let name_len = u16::from_le_bytes([buf[d + 8], buf[d + 9]]) as usize;
            let used = name_len.div_ceil(SLOT_LEN).max(1);
            let avail = (self.slots - slot) * SLOT_LEN;
            let n = name_len.min(avail);
            if visit(slot, &buf[self.name(slot)..self.name(slot) + n]) {
                return Some(slot);
            }
            slot += used;
        }
        None
    }

    fn found(&self, buf: &[u8], slot: usize, name: &[u8]) -> Found {
        let d = self.dentry(slot);
        Found {
            slot,
            ino: le32_at(buf, d + 4),
            file_type: buf[d + 10],
            name: name.to_vec(),
            hash: le32_at(buf, d),
            name_len: u16::from_le_bytes([buf[d + 8], buf[d + 9]]) as usize,
        }
    }

    /// The entry called `name` (compared in place: a lookup allocates nothing until it
    /// finds it).
    pub fn find(&self, buf: &[u8], name: &[u8]) -> Option<Found> {
        let slot = self.walk(buf, |_, n| n == name)?;
        Some(self.found(buf, slot, name))
    }

    /// First run of `count` free slots.
    pub fn room(&self, buf: &[u8], count: usize) -> Option<usize> {
        let mut run = 0;
        for slot in 0..self.slots {
            if test_bit_le(&buf[..self.bitmap], slot) {
                run = 0;
                continue;
            }
            run += 1;
            if run == count {
                return Some(slot + 1 - count);
            }
        }
        None
    }

    pub fn put(&self, buf: &mut [u8], slot: usize, ino: u32, name: &[u8], file_type: u8) {
        let d = self.dentry(slot);
        put_le32_at(buf, d, dentry_hash(name));
        put_le32_at(buf, d + 4, ino);
        buf[d + 8..d + 10].copy_from_slice(&(name.len() as u16).to_le_bytes());
        buf[d + 10] = file_type;
        let at = self.name(slot);
        let slots = name.len().div_ceil(SLOT_LEN).max(1);
        buf[at..at + slots * SLOT_LEN].fill(0);
        buf[at..at + name.len()].copy_from_slice(name);
        for s in slot..slot + slots {
            set_bit_le(&mut buf[..self.bitmap], s);
        }
    }

    pub fn set_ino(&self, buf: &mut [u8], slot: usize, ino: u32, file_type: u8) {
        let d = self.dentry(slot);
        put_le32_at(buf, d + 4, ino);
        buf[d + 10] = file_type;
    }

    pub fn remove(&self, buf: &mut [u8], found: &Found) {
        let slots = found.name.len().div_ceil(SLOT_LEN).max(1);
        for s in found.slot..(found.slot + slots).min(self.slots) {
            clear_bit_le(&mut buf[..self.bitmap], s);
        }
    }

    pub fn is_empty(&self, buf: &[u8]) -> bool {
        buf[..self.bitmap].iter().all(|&b| b == 0)
    }

    /// Copies every live slot to the same slot of `dst` (inline → block 0).
    pub fn copy_slots(&self, src: &[u8], dst_area: &Area, dst: &mut [u8]) {
        for slot in 0..self.slots.min(dst_area.slots) {
            if !test_bit_le(&src[..self.bitmap], slot) {
                continue;
            }
            let (s, d) = (self.dentry(slot), dst_area.dentry(slot));
            dst[d..d + SIZE_OF_DIR_ENTRY].copy_from_slice(&src[s..s + SIZE_OF_DIR_ENTRY]);
            let (s, d) = (self.name(slot), dst_area.name(slot));
            dst[d..d + SLOT_LEN].copy_from_slice(&src[s..s + SLOT_LEN]);
            set_bit_le(&mut dst[..dst_area.bitmap], slot);
        }
    }
}

/// Buckets at a level (`dir_buckets`).
fn dir_buckets(level: u32, dir_level: u32) -> u64 {
    if level + dir_level < MAX_DIR_HASH_DEPTH / 2 {
        1 << (level + dir_level)
    } else {
        MAX_DIR_BUCKETS
    }
}

/// Blocks per bucket at a level (`bucket_blocks`).
fn bucket_blocks(level: u32) -> u64 {
    if level < MAX_DIR_HASH_DEPTH / 2 {
        2
    } else {
        4
    }
}

/// First block of bucket `bucket` at `level` (`dir_block_index`).
fn dir_block_index(level: u32, dir_level: u32, bucket: u64) -> u64 {
    let before: u64 = (0..level)
        .map(|i| dir_buckets(i, dir_level) * bucket_blocks(i))
        .sum();
    before + bucket * bucket_blocks(level)
}

/// The hash level and bucket of dentry block `index` of a directory with `dir_level`,
/// and the buckets at that level (an entry there must hash to that bucket), or `None`
/// past the last level.
pub(crate) fn block_bucket(index: u64, dir_level: u32) -> Option<(u32, u64, u64)> {
    let mut start = 0u64;
    for level in 0..MAX_DIR_HASH_DEPTH {
        let buckets = dir_buckets(level, dir_level);
        let blocks = buckets * bucket_blocks(level);
        if index < start + blocks {
            return Some((level, (index - start) / bucket_blocks(level), buckets));
        }
        start += blocks;
    }
    None
}

/// Where an entry lives.
#[derive(Clone, Debug)]
pub(crate) enum Place {
    Inline(Found),
    Block(u64, Found),
}

impl Place {
    pub fn found(&self) -> &Found {
        match self {
            Place::Inline(f) | Place::Block(_, f) => f,
        }
    }
}

impl<D: BlockDevice> F2fs<D> {
    fn inline_area(&mut self, dir: u32) -> Result<(Area, usize), FsError> {
        let geo = self.geometry(dir)?;
        Ok((Area::inline(geo.inline_bytes), geo.inline_start()))
    }

    fn dir_shape(&mut self, dir: u32) -> Result<(u32, u32), FsError> {
        let depth = le32_at(&self.node(dir)?[..], OFF_DEPTH).min(MAX_DIR_HASH_DEPTH);
        let level = self.node(dir)?[OFF_DIR_LEVEL] as u32;
        Ok((depth, level))
    }

    /// Finds `name` in directory `dir`.
    pub(crate) fn find_entry(&mut self, dir: u32, name: &[u8]) -> Result<Option<Place>, FsError> {
        if self.has_inline(dir, F2FS_INLINE_DENTRY)? {
            let (area, start) = self.inline_area(dir)?;
            let node = self.node(dir)?;
            return Ok(area.find(&node[start..], name).map(Place::Inline));
        }
        let hash = dentry_hash(name) as u64;
        let (depth, dir_level) = self.dir_shape(dir)?;
        for level in 0..depth {
            let first = dir_block_index(level, dir_level, hash % dir_buckets(level, dir_level));
            for index in first..first + bucket_blocks(level) {
                if self.block_addr(dir, index)? == NULL_ADDR {
                    continue;
                }
                let page = self.load_page(dir, index)?;
                if let Some(f) = BLOCK_AREA.find(&page[..], name) {
                    return Ok(Some(Place::Block(index, f)));
                }
            }
        }
        Ok(None)
    }

    /// Every entry of `dir`, "." and ".." included.
    pub(crate) fn dir_entries(&mut self, dir: u32) -> Result<Vec<Found>, FsError> {
        if self.has_inline(dir, F2FS_INLINE_DENTRY)? {
            let (area, start) = self.inline_area(dir)?;
            let node = self.node(dir)?;
            return Ok(area.entries(&node[start..]));
        }
        let blocks = self.inode_u64(dir, OFF_SIZE)?.div_ceil(BLOCK_SIZE as u64);
        let mut out = Vec::new();
        // Only the blocks the node tree maps: a corrupt size costs nothing.
        self.visit_tree(dir, blocks, &mut |fs, item| {
            if let super::check::TreeItem::Data { index, .. } = item {
                let page = fs.load_page(dir, index)?;
                out.extend(BLOCK_AREA.entries(&page[..]));
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// Adds an entry (the caller checked it is absent).
    pub(crate) fn add_entry(
        &mut self,
        dir: u32,
        name: &[u8],
        ino: u32,
        file_type: u8,
    ) -> Result<(), FsError> {
        let slots = name.len().div_ceil(SLOT_LEN).max(1);
        if self.has_inline(dir, F2FS_INLINE_DENTRY)? {
            let (area, start) = self.inline_area(dir)?;
            let node = self.node(dir)?;
            if let Some(slot) = area.room(&node[start..], slots) {
                area.put(&mut node[start..], slot, ino, name, file_type);
                self.dirty_nodes.insert(dir);
                return self.touch(dir);
            }
            self.convert_inline_dir(dir, area, start)?;
        }
        self.add_hashed(dir, name, ino, file_type, slots)?;
        self.touch(dir)
    }

    fn add_hashed(
        &mut self,
        dir: u32,
        name: &[u8],
        ino: u32,
        file_type: u8,
        slots: usize,
    ) -> Result<(), FsError> {
        let hash = dentry_hash(name) as u64;
        let (mut depth, dir_level) = self.dir_shape(dir)?;
        for level in 0..MAX_DIR_HASH_DEPTH {
            if level >= depth {
                depth = level + 1;
                let node = self.node(dir)?;
                put_le32_at(&mut node[..], OFF_DEPTH, depth);
                self.dirty_nodes.insert(dir);
            }
            let first = dir_block_index(level, dir_level, hash % dir_buckets(level, dir_level));
            for index in first..first + bucket_blocks(level) {
                let mut page = self.load_page(dir, index)?;
                let Some(slot) = BLOCK_AREA.room(&page[..], slots) else {
                    continue;
                };
                BLOCK_AREA.put(&mut page[..], slot, ino, name, file_type);
                self.store_page(
                    dir,
                    index,
                    &page,
                    super::data::Writeback::out_of_place(CURSEG_HOT_DATA),
                )?;
                return self.grow_size(dir, (index + 1) * BLOCK_SIZE as u64);
            }
        }
        Err(FsError::NoSpace)
    }

    /// Moves inline dentries to block 0 (`f2fs_move_inline_dirents`).
    fn convert_inline_dir(&mut self, dir: u32, area: Area, start: usize) -> Result<(), FsError> {
        let mut page = zero_block();
        let src = self.node(dir)?[start..].to_vec();
        area.copy_slots(&src, &BLOCK_AREA, &mut page[..]);
        self.clear_inline_area(dir, F2FS_INLINE_DENTRY)?;
        put_le32_at(&mut self.node(dir)?[..], OFF_DEPTH, 1);
        self.set_inode_u64(dir, OFF_SIZE, 0)?;
        self.metrics.inline_conversions += 1;
        self.store_page(
            dir,
            0,
            &page,
            super::data::Writeback::out_of_place(CURSEG_HOT_DATA),
        )?;
        self.grow_size(dir, BLOCK_SIZE as u64)
    }

    /// Applies `edit` to the entry at `place` and writes it back; a dentry block left
    /// empty is punched out (`f2fs_delete_entry`).
    pub(crate) fn edit_entry(
        &mut self,
        dir: u32,
        place: &Place,
        edit: impl FnOnce(&Area, &mut [u8], &Found),
    ) -> Result<(), FsError> {
        match place {
            Place::Inline(f) => {
                let (area, start) = self.inline_area(dir)?;
                let node = self.node(dir)?;
                edit(&area, &mut node[start..], f);
                self.dirty_nodes.insert(dir);
            }
            Place::Block(index, f) => {
                let mut page = self.load_page(dir, *index)?;
                edit(&BLOCK_AREA, &mut page[..], f);
                if BLOCK_AREA.is_empty(&page[..]) {
                    self.punch_block(dir, *index)?;
                } else {
                    self.store_page(
                        dir,
                        *index,
                        &page,
                        super::data::Writeback::out_of_place(CURSEG_HOT_DATA),
                    )?;
                }
            }
        }
        self.touch(dir)
    }

    fn punch_block(&mut self, dir: u32, index: u64) -> Result<(), FsError> {
        let d = self
            .dnode(dir, index, false)?
            .ok_or_else(|| corrupt(format!("directory {dir}: block {index} has no node")))?;
        self.set_addr(dir, d, NULL_ADDR)?;
        // Dirty even when the slot was empty already (the node is rewritten either way).
        self.dirty_nodes.insert(d.nid);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_area_sizes_match_the_kernel_table() {
        let a = Area::inline(3488);
        assert_eq!((a.slots, a.bitmap, a.reserved), (182, 23, 7));
        let b = Area::inline(3452);
        assert_eq!(b.slots, 180);
    }

    #[test]
    fn hash_levels() {
        assert_eq!(dir_block_index(0, 0, 0), 0);
        assert_eq!(dir_block_index(1, 0, 1), 2 + 2);
        assert_eq!(dir_block_index(2, 0, 0), 2 + 4);
    }
}
