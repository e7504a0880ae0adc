//! File data: the node tree that maps a file's block index to a block address (inode,
//! two direct, two indirect and one double-indirect node, `get_node_path` in the kernel's
//! `fs/f2fs/node.c`), inline data, out-of-place page writes and truncation.

use flashstack_block::BlockDevice;

use super::policy::{self, WriteHint};
use super::{corrupt, le64_at, put_le64_at, put_word, word, F2fs, FsError};
use crate::codec::{zero_block, Block};
use crate::consts::*;
use crate::layout::*;

/// Byte offsets of inode fields the write path updates in place.
pub(crate) const OFF_ADVISE: usize = 2;
pub(crate) const OFF_INLINE: usize = 3;
pub(crate) const OFF_LINKS: usize = 12;
pub(crate) const OFF_SIZE: usize = 16;
pub(crate) const OFF_BLOCKS: usize = 24;
pub(crate) const OFF_CTIME: usize = 40;
pub(crate) const OFF_MTIME: usize = 48;
pub(crate) const OFF_DEPTH: usize = 72;
pub(crate) const OFF_XATTR_NID: usize = 76;
/// Word index of `i_addr[0]` and of `i_nid[0]` in an inode block.
pub(crate) const ADDR_WORD: usize = INODE_ADDR_OFFSET / 4;
pub(crate) const NID_WORD: usize = ADDR_WORD + ADDRS_PER_INODE;
/// `FADVISE_COLD_BIT` / `FADVISE_HOT_BIT` of `i_advise`: the file's temperature from its
/// extension, set at create.
pub(crate) const FADVISE_COLD: u8 = 0x01;
pub(crate) const FADVISE_HOT: u8 = 0x20;

const PER_BLOCK: u64 = ADDRS_PER_BLOCK as u64;
/// Pages a long write takes between two chances for cleaning.
pub(crate) const BALANCE_EVERY_PAGES: u32 = 64;

/// How a file's pages are written back.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Writeback {
    pub log: usize,
    /// `FI_NEED_IPU`: the fsync path asked for in-place updates.
    pub need_ipu: bool,
}

impl Writeback {
    pub fn out_of_place(log: usize) -> Writeback {
        Writeback {
            log,
            need_ipu: false,
        }
    }
}

/// Where an inode's addresses and inline bytes are.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Geometry {
    /// `i_addr` words taken by extra attributes.
    pub extra: usize,
    /// Data addresses in the inode (`ADDRS_PER_INODE`).
    pub addrs: usize,
    /// Data addresses in a direct node (`ADDRS_PER_BLOCK`): 1018, aligned down to a
    /// cluster for a compressed file (`addrs_per_block`), as `addrs` is.
    pub per_block: usize,
    /// `MAX_INLINE_DATA`.
    pub inline_bytes: usize,
}

impl Geometry {
    /// Byte offset of the inline area (after the one reserved word).
    pub fn inline_start(&self) -> usize {
        INODE_ADDR_OFFSET + 4 * (self.extra + INLINE_RESERVED_ADDRS as usize)
    }
}

/// The path to a block's address: (slot in parent, node offset) for each node below the
/// inode, and the address's index in the last node (in the inode: after extra words).
pub(crate) struct NodePath {
    pub levels: Vec<(usize, u32)>,
    pub leaf: usize,
}

/// `get_node_path`: `addrs` data addresses in the inode, `per_block` in a direct node
/// (`ADDRS_PER_BLOCK`, aligned down to a cluster for a compressed file); indirect nodes
/// hold `NIDS_PER_BLOCK` children, and node offsets count in those.
pub(crate) fn node_path(block: u64, addrs: usize, per_block: usize) -> Result<NodePath, FsError> {
    let n = NIDS_PER_BLOCK as u64;
    let a = per_block as u64;
    let direct = addrs as u64;
    if block < direct {
        return Ok(NodePath {
            levels: vec![],
            leaf: block as usize,
        });
    }
    let mut b = block - direct;
    if b < a {
        return Ok(path(vec![(0, 1)], b));
    }
    b -= a;
    if b < a {
        return Ok(path(vec![(1, 2)], b));
    }
    b -= a;
    if b < a * n {
        let i = b / a;
        return Ok(path(vec![(2, 3), (i as usize, 4 + i as u32)], b % a));
    }
    b -= a * n;
    if b < a * n {
        let i = b / a;
        let base = 5 + n as u32;
        return Ok(path(
            vec![(3, 4 + n as u32), (i as usize, base + i as u32)],
            b % a,
        ));
    }
    b -= a * n;
    if b < a * n * n {
        let (i, j) = (b / (a * n), (b / a) % n);
        let ind = 6 + 2 * n as u32 + i as u32 * (n as u32 + 1);
        let levels = vec![
            (4, 5 + 2 * n as u32),
            (i as usize, ind),
            (j as usize, ind + 1 + j as u32),
        ];
        return Ok(path(levels, b % a));
    }
    Err(FsError::TooLarge(format!(
        "block {block} is beyond the node tree"
    )))
}

/// File blocks one slot of a node at `level` covers (0: a direct node's slot, one block;
/// 1: an indirect node's, a direct node; 2: a double indirect node's).
pub(crate) fn subtree_span(level: u32, per_block: u64) -> u64 {
    match level {
        0 => 1,
        l => per_block * (NIDS_PER_BLOCK as u64).pow(l - 1),
    }
}

fn path(levels: Vec<(usize, u32)>, leaf: u64) -> NodePath {
    NodePath {
        levels,
        leaf: leaf as usize,
    }
}

/// [`Inode::extra_words`] and [`Inode::inline_xattr_words`] read straight from the block's
/// bytes (every address lookup asks; decoding the whole inode each time was the hot spot).
pub(super) fn geometry_from(ino: u32, block: &Block, flexible: bool) -> Result<Geometry, FsError> {
    let inline = block[OFF_INLINE];
    let u16_at = |at: usize| u16::from_le_bytes([block[at], block[at + 1]]) as usize;
    let has_extra = inline & F2FS_EXTRA_ATTR != 0;
    let extra = if has_extra {
        (u16_at(INODE_ADDR_OFFSET) / 4).min(ADDRS_PER_INODE)
    } else {
        0
    };
    let xattr = if flexible {
        if has_extra {
            u16_at(INODE_ADDR_OFFSET + 2)
        } else {
            0
        }
    } else if inline & (F2FS_INLINE_XATTR | F2FS_INLINE_DENTRY) != 0 {
        DEFAULT_INLINE_XATTR_ADDRS as usize
    } else {
        0
    };
    let mut addrs = ADDRS_PER_INODE.saturating_sub(extra + xattr.min(ADDRS_PER_INODE));
    if addrs < 2 {
        return Err(corrupt(format!("inode {ino}: no room for addresses")));
    }
    let inline_bytes = 4 * (addrs - INLINE_RESERVED_ADDRS as usize);
    let mut per_block = ADDRS_PER_BLOCK;
    if let Some(cluster) = compressed_cluster_pages(block, has_extra) {
        addrs -= addrs % cluster;
        per_block -= per_block % cluster;
    }
    Ok(Geometry {
        extra,
        addrs,
        per_block,
        inline_bytes,
    })
}

/// The cluster size of a compressed regular file (`F2FS_COMPR_FL` with a valid
/// `i_log_cluster_size`), from the raw inode bytes.
fn compressed_cluster_pages(block: &Block, has_extra: bool) -> Option<usize> {
    let mode = u16::from_le_bytes([block[0], block[1]]);
    let flags = u32::from_le_bytes([block[80], block[81], block[82], block[83]]);
    let log = block[INODE_ADDR_OFFSET + 33];
    let compressed = has_extra && mode & S_IFMT == S_IFREG && flags & 0x4 != 0;
    (compressed && (2..=8).contains(&log)).then(|| 1usize << log)
}

/// The node holding a block's address: its id, the word index in it and `ofs_in_node`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Dnode {
    pub nid: u32,
    pub word: usize,
    pub ofs_in_node: u16,
}

/// Largest file size in bytes the node tree can address (with 923 inode addresses).
pub const MAX_FILE_BYTES: u64 = (ADDRS_PER_INODE as u64
    + 2 * PER_BLOCK
    + 2 * PER_BLOCK * PER_BLOCK
    + PER_BLOCK * PER_BLOCK * PER_BLOCK)
    * BLOCK_SIZE as u64;

impl<D: BlockDevice> F2fs<D> {
    pub(crate) fn geometry(&mut self, ino: u32) -> Result<Geometry, FsError> {
        let flexible = self.sb.feature.contains(FEATURE_FLEXIBLE_INLINE_XATTR);
        // `inode_node`: the footer check of an inode on access (cheap); the geometry is
        // read from the raw bytes, not a full decode (every address lookup asks).
        geometry_from(ino, self.inode_node(ino)?, flexible)
    }

    /// [`geometry`](Self::geometry) of an inode block that is not (yet) the cached one.
    pub(crate) fn geometry_of(&self, ino: u32, block: &Block) -> Result<Geometry, FsError> {
        let flexible = self.sb.feature.contains(FEATURE_FLEXIBLE_INLINE_XATTR);
        geometry_from(ino, block, flexible)
    }

    pub(crate) fn inode_u64(&mut self, ino: u32, off: usize) -> Result<u64, FsError> {
        Ok(le64_at(self.inode_node(ino)?, off))
    }

    pub(crate) fn set_inode_u64(&mut self, ino: u32, off: usize, v: u64) -> Result<(), FsError> {
        put_le64_at(self.inode_node(ino)?, off, v);
        self.dirty_nodes.insert(ino);
        Ok(())
    }

    pub(crate) fn inode_byte(&mut self, ino: u32, off: usize) -> Result<u8, FsError> {
        Ok(self.inode_node(ino)?[off])
    }

    pub(crate) fn add_blocks(&mut self, ino: u32, delta: i64) -> Result<(), FsError> {
        let v = self.inode_u64(ino, OFF_BLOCKS)?;
        self.set_inode_u64(ino, OFF_BLOCKS, v.saturating_add_signed(delta))
    }

    pub(crate) fn is_dir_inode(&mut self, ino: u32) -> Result<bool, FsError> {
        let node = self.inode_node(ino)?;
        let mode = u16::from_le_bytes([node[0], node[1]]);
        Ok(mode & S_IFMT == S_IFDIR)
    }

    pub(crate) fn has_inline(&mut self, ino: u32, flag: u8) -> Result<bool, FsError> {
        Ok(self.inode_byte(ino, OFF_INLINE)? & flag != 0)
    }

    /// How an inode's pages are written back: the log (`__get_segment_type_6`, see
    /// [`policy::data_log`]) from the extension-derived temperature and, with a page-cache
    /// hint, `FI_HOT_DATA`; and whether the fsync path asked for in-place updates.
    pub(crate) fn writeback_plan(
        &mut self,
        ino: u32,
        hint: Option<WriteHint>,
    ) -> Result<Writeback, FsError> {
        let advise = self.inode_byte(ino, OFF_ADVISE)?;
        let t = policy::DataTemperature {
            gc_moving: false,
            cold_file: advise & FADVISE_COLD != 0,
            hot_file: advise & FADVISE_HOT != 0,
            hot_data: hint.is_some_and(|h| policy::hot_data_at_writeback(&h, &self.cfg)),
            dir: self.is_dir_inode(ino)?,
        };
        Ok(Writeback {
            log: policy::data_log(t),
            need_ipu: hint.is_some_and(|h| policy::need_ipu_for_fsync(&h, &self.cfg)),
        })
    }

    /// The data log of a write without a page-cache hint.
    pub(crate) fn data_log(&mut self, ino: u32) -> Result<usize, FsError> {
        Ok(self.writeback_plan(ino, None)?.log)
    }

    /// Whether an overwrite of an existing block of `ino` goes in place
    /// ([`policy::update_in_place`]).
    pub(crate) fn in_place_ok(&mut self, ino: u32, need_ipu: bool) -> Result<bool, FsError> {
        if self.cfg.delta.enabled() {
            // MedFS: `need_inplace_update` is false, so the base on flash stays intact.
            return Ok(false);
        }
        let p = self.cfg.ipu_policy;
        let q = policy::IpuQuery {
            has_block: true,
            dir: self.is_dir_inode(ino)?,
            gc_moving: false,
            cold_file: self.inode_byte(ino, OFF_ADVISE)? & FADVISE_COLD != 0,
            need_ipu,
            // Counting free segments scans the SIT: only when a policy bit asks.
            ssr_needed: (p.ssr || p.ssr_util) && self.ssr_needed(),
            utilization_percent: self.utilization_percent(),
        };
        Ok(policy::update_in_place(&q, &self.cfg))
    }

    /// Finds (with `create`, builds) the node holding block `index`'s address.
    pub(crate) fn dnode(
        &mut self,
        ino: u32,
        index: u64,
        create: bool,
    ) -> Result<Option<Dnode>, FsError> {
        if create {
            // A pointer is about to be set: the delta zone must not cover its slot.
            self.evict_for_slot(ino, index)?;
        }
        let geo = self.geometry(ino)?;
        if let Some(start) = self.zone_start_slot(ino, &geo)? {
            // Slots the zone covers (and any path below the inode) hold no pointer.
            if index >= start as u64 {
                return Ok(None);
            }
        }
        let p = node_path(index, geo.addrs, geo.per_block)?;
        if p.levels.is_empty() {
            return Ok(Some(Dnode {
                nid: ino,
                word: ADDR_WORD + geo.extra + p.leaf,
                ofs_in_node: p.leaf as u16,
            }));
        }
        let cold = !self.is_dir_inode(ino)?;
        let mut parent = ino;
        for (depth, &(slot, offset)) in p.levels.iter().enumerate() {
            let at = if depth == 0 { NID_WORD + slot } else { slot };
            let mut child = word(self.node(parent)?, at);
            if child == 0 {
                if !create {
                    return Ok(None);
                }
                child = self.alloc_nid()?;
                self.new_node(child, ino, offset, cold)?;
                put_word(self.node(parent)?, at, child);
                self.dirty_nodes.insert(parent);
                self.add_blocks(ino, 1)?;
            }
            self.check_child(ino, parent, child, offset)?;
            parent = child;
        }
        Ok(Some(Dnode {
            nid: parent,
            word: p.leaf,
            ofs_in_node: p.leaf as u16,
        }))
    }

    pub(crate) fn block_addr(&mut self, ino: u32, index: u64) -> Result<u32, FsError> {
        match self.dnode(ino, index, false)? {
            Some(d) => Ok(word(self.node(d.nid)?, d.word)),
            None => Ok(NULL_ADDR),
        }
    }

    /// The node `child` that `parent` names at the tree offset `offset` of inode `ino`:
    /// its footer must say so (a node id in the wrong place reads another file's data).
    fn check_child(
        &mut self,
        ino: u32,
        parent: u32,
        child: u32,
        offset: u32,
    ) -> Result<(), FsError> {
        let f = crate::node::NodeFooter::decode(self.node(child)?);
        if f.ino == ino && f.offset() == offset {
            return Ok(());
        }
        let (field, value) = if f.ino != ino {
            ("footer.ino", f.ino as u64)
        } else {
            ("footer.offset", f.offset() as u64)
        };
        Err(crate::error::Corruption::Node {
            nid: child,
            blkaddr: 0,
            field,
            value,
            rule: format!("node {parent} of inode {ino} names it at tree offset {offset}"),
        }
        .into())
    }

    /// Moves inline data to block 0 (`f2fs_convert_inline_inode`); the converted page is
    /// written hot, as the kernel marks the inode `FI_HOT_DATA` for it.
    pub(crate) fn convert_inline_data(&mut self, ino: u32) -> Result<(), FsError> {
        let page = self.load_page(ino, 0)?;
        let size = self.inode_u64(ino, OFF_SIZE)?;
        self.clear_inline_area(ino, F2FS_INLINE_DATA | F2FS_DATA_EXIST)?;
        self.metrics.inline_conversions += 1;
        if size > 0 {
            self.store_page(ino, 0, &page, Writeback::out_of_place(CURSEG_HOT_DATA))?;
        }
        Ok(())
    }

    /// Clears inline flags and zeroes the inline area, which becomes address slots.
    pub(crate) fn clear_inline_area(&mut self, ino: u32, flags: u8) -> Result<(), FsError> {
        let geo = self.geometry(ino)?;
        let node = self.node(ino)?;
        node[OFF_INLINE] &= !flags;
        let start = INODE_ADDR_OFFSET + 4 * geo.extra;
        node[start..start + 4 * geo.addrs].fill(0);
        self.dirty_nodes.insert(ino);
        Ok(())
    }

    /// Writes `data` at byte `offset`.
    pub(crate) fn write_at(&mut self, ino: u32, offset: u64, data: &[u8]) -> Result<(), FsError> {
        let end = offset
            .checked_add(data.len() as u64)
            .filter(|&e| e <= MAX_FILE_BYTES)
            .ok_or_else(|| FsError::TooLarge(format!("write ending past {MAX_FILE_BYTES}")))?;
        if data.is_empty() {
            return Ok(());
        }
        if self.has_inline(ino, F2FS_INLINE_DATA)? {
            let geo = self.geometry(ino)?;
            if end <= geo.inline_bytes as u64 {
                return self.write_inline(ino, offset as usize, data, geo);
            }
            self.convert_inline_data(ino)?;
        }
        let (first, last) = (offset / BLOCK_SIZE as u64, (end - 1) / BLOCK_SIZE as u64);
        self.zero_post_eof(ino, end, |index| (first..=last).contains(&index))?;
        let wb = self.writeback_plan(ino, None)?;
        let mut pos = offset;
        let mut rest = data;
        let mut pages = 0u32;
        while !rest.is_empty() {
            // A long write lets cleaning run between batches of pages, as writeback does
            // (so only writes of up to 64 pages are atomic against checkpoints).
            if pages > 0 && pages.is_multiple_of(BALANCE_EVERY_PAGES) {
                self.balance()?;
            }
            pages += 1;
            let (index, within) = (pos / BLOCK_SIZE as u64, (pos % BLOCK_SIZE as u64) as usize);
            let n = (BLOCK_SIZE - within).min(rest.len());
            let mut page = if n == BLOCK_SIZE {
                zero_block()
            } else {
                self.load_file_page(ino, index)?
            };
            page[within..within + n].copy_from_slice(&rest[..n]);
            self.store_page(ino, index, &page, wb)?;
            pos += n as u64;
            rest = &rest[n..];
        }
        self.grow_size(ino, end)
    }

    fn write_inline(
        &mut self,
        ino: u32,
        offset: usize,
        data: &[u8],
        geo: super::data::Geometry,
    ) -> Result<(), FsError> {
        let start = geo.inline_start() + offset;
        let node = self.node(ino)?;
        node[start..start + data.len()].copy_from_slice(data);
        node[OFF_INLINE] |= F2FS_DATA_EXIST;
        self.dirty_nodes.insert(ino);
        self.metrics.inline_writes += 1;
        self.grow_size(ino, (offset + data.len()) as u64)
    }

    /// Before a file grows past its end, zeroes what the block of its last page holds past
    /// that end (the kernel's post-EOF zeroing): after a power cut, an in-place write may
    /// have left bytes there that the durable size does not cover, and a larger size would
    /// show them. `rewrites(index)` says the growing operation itself rewrites that page
    /// (from [`load_file_page`](Self::load_file_page), which zeroes them); otherwise this
    /// costs one read, and a write only when the bytes are not zero already.
    pub(crate) fn zero_post_eof(
        &mut self,
        ino: u32,
        new_size: u64,
        rewrites: impl Fn(u64) -> bool,
    ) -> Result<(), FsError> {
        let size = self.inode_u64(ino, OFF_SIZE)?;
        let bs = BLOCK_SIZE as u64;
        let (index, within) = (size / bs, (size % bs) as usize);
        if new_size <= size
            || within == 0
            || rewrites(index)
            || self.has_inline(ino, F2FS_INLINE_DATA)?
            || self.block_addr(ino, index)? == NULL_ADDR
        {
            return Ok(());
        }
        let mut page = self.load_page(ino, index)?;
        if page[within..].iter().all(|&b| b == 0) {
            return Ok(());
        }
        page[within..].fill(0);
        let wb = self.writeback_plan(ino, None)?;
        self.store_page(ino, index, &page, wb).map(drop)
    }

    /// [`load_page`](Self::load_page) of a regular file's data: bytes past the end of the
    /// file read as zeros whatever its block holds (see [`zero_post_eof`](Self::zero_post_eof)).
    pub(crate) fn load_file_page(&mut self, ino: u32, index: u64) -> Result<Box<Block>, FsError> {
        let mut page = self.load_page(ino, index)?;
        let size = self.inode_u64(ino, OFF_SIZE)?;
        let start = index.saturating_mul(BLOCK_SIZE as u64);
        if start.saturating_add(BLOCK_SIZE as u64) > size {
            let keep = size.saturating_sub(start) as usize;
            page[keep..].fill(0);
        }
        Ok(page)
    }

    /// Grows the size to `end` (never shrinks it); times are the caller's business (a
    /// writeback changes none).
    pub(crate) fn grow_size(&mut self, ino: u32, end: u64) -> Result<(), FsError> {
        let size = self.inode_u64(ino, OFF_SIZE)?;
        if end > size {
            self.set_inode_u64(ino, OFF_SIZE, end)?;
        }
        Ok(())
    }

    /// Sets mtime and ctime to now, making the inode dirty (what truncate and fallocate
    /// do to a file, and an entry change to its directory).
    pub fn touch(&mut self, ino: u32) -> Result<(), FsError> {
        self.stamp(ino, super::attr::Times::MODIFIED, false)
    }

    /// Reads up to `len` bytes at `offset`, stopping at the end of the file.
    pub(crate) fn read_at(
        &mut self,
        ino: u32,
        offset: u64,
        len: usize,
    ) -> Result<Vec<u8>, FsError> {
        let size = self.inode_u64(ino, OFF_SIZE)?;
        let end = size.min(offset.saturating_add(len as u64));
        let mut out = Vec::with_capacity(end.saturating_sub(offset) as usize);
        let mut pos = offset;
        while pos < end {
            let (index, within) = (pos / BLOCK_SIZE as u64, (pos % BLOCK_SIZE as u64) as usize);
            let n = ((BLOCK_SIZE - within) as u64).min(end - pos) as usize;
            let page = self.load_page(ino, index)?;
            out.extend_from_slice(&page[within..within + n]);
            pos += n as u64;
        }
        Ok(out)
    }

    /// Sets the size: blocks past it are freed and the tail of the last block zeroed.
    pub(crate) fn set_size(&mut self, ino: u32, size: u64) -> Result<(), FsError> {
        if size > MAX_FILE_BYTES {
            return Err(FsError::TooLarge(format!("size {size}")));
        }
        if self.has_inline(ino, F2FS_INLINE_DATA)? && size > self.geometry(ino)?.inline_bytes as u64
        {
            // Growing past the inline area converts, as `f2fs_setattr` does.
            self.convert_inline_data(ino)?;
        }
        let old = self.inode_u64(ino, OFF_SIZE)?;
        if size < old {
            self.since_cp.moved_or_shrunk.insert(ino);
            self.shrink_to(ino, size)?;
        }
        self.zero_post_eof(ino, size, |_| false)?;
        self.set_inode_u64(ino, OFF_SIZE, size)
    }

    fn shrink_to(&mut self, ino: u32, size: u64) -> Result<(), FsError> {
        if self.has_inline(ino, F2FS_INLINE_DATA)? {
            let geo = self.geometry(ino)?;
            let start = geo.inline_start();
            let node = self.node(ino)?;
            node[start + (size as usize).min(geo.inline_bytes)..start + geo.inline_bytes].fill(0);
            self.dirty_nodes.insert(ino);
            return Ok(());
        }
        let bs = BLOCK_SIZE as u64;
        self.free_blocks_from(ino, size.div_ceil(bs))?;
        let within = (size % bs) as usize;
        if within != 0 && self.block_addr(ino, size / bs)? != NULL_ADDR {
            let mut page = self.load_page(ino, size / bs)?;
            page[within..].fill(0);
            let wb = self.writeback_plan(ino, None)?;
            self.store_page(ino, size / bs, &page, wb)?;
        }
        Ok(())
    }

    /// Frees every data block from index `from` on, and the nodes left covering nothing.
    pub(crate) fn free_blocks_from(&mut self, ino: u32, from: u64) -> Result<(), FsError> {
        if self.encoding(ino)? == super::pagemap::Encoding::Compressed {
            self.truncate_clusters_from(ino, from)?;
        }
        self.drop_deltas_from(ino, from)?;
        let geo = self.geometry(ino)?;
        // The delta zone's slots hold no pointers.
        let slots = self.zone_start_slot(ino, &geo)?.unwrap_or(geo.addrs);
        for i in (from.min(slots as u64) as usize)..slots {
            let at = ADDR_WORD + geo.extra + i;
            self.drop_addr(ino, ino, at)?;
        }
        let (n, a) = (NIDS_PER_BLOCK as u64, geo.per_block as u64);
        let bases = [
            (geo.addrs as u64, 0),
            (geo.addrs as u64 + a, 0),
            (geo.addrs as u64 + 2 * a, 1),
            (geo.addrs as u64 + 2 * a + a * n, 1),
            (geo.addrs as u64 + 2 * a + 2 * a * n, 2),
        ];
        for (slot, (base, level)) in bases.into_iter().enumerate() {
            let nid = word(self.node(ino)?, NID_WORD + slot);
            if nid != 0 && self.truncate_node(ino, nid, (level, a), base, from)? {
                put_word(self.node(ino)?, NID_WORD + slot, 0);
                self.dirty_nodes.insert(ino);
            }
        }
        Ok(())
    }

    /// Truncates the subtree of `nid` (level 0: direct node, 1: indirect, 2: double
    /// indirect) covering file blocks from `base`; frees it when it lies wholly past
    /// `from`. Returns whether it was freed.
    fn truncate_node(
        &mut self,
        ino: u32,
        nid: u32,
        (level, per_block): (u32, u64),
        base: u64,
        from: u64,
    ) -> Result<bool, FsError> {
        let span = subtree_span(level, per_block);
        for i in 0..ADDRS_PER_BLOCK {
            let child_base = base + i as u64 * span;
            if child_base + span <= from {
                continue;
            }
            if level == 0 {
                self.drop_addr(ino, nid, i)?;
                continue;
            }
            let child = word(self.node(nid)?, i);
            if child != 0
                && self.truncate_node(ino, child, (level - 1, per_block), child_base, from)?
            {
                put_word(self.node(nid)?, i, 0);
                self.dirty_nodes.insert(nid);
            }
        }
        if base >= from {
            self.free_node(nid)?;
            self.add_blocks(ino, -1)?;
            return Ok(true);
        }
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::Inode;
    use proptest::prelude::*;

    proptest! {
        /// The raw-byte geometry equals the decoded inode's (`extra_words`,
        /// `inline_xattr_words`), whatever the flags and sizes.
        #[test]
        fn raw_geometry_matches_the_decoded_inode(
            inline in any::<u8>(),
            extra_isize in any::<u16>(),
            xattr_size in any::<u16>(),
            flexible in any::<bool>(),
        ) {
            let mut block = zero_block();
            block[OFF_INLINE] = inline;
            block[INODE_ADDR_OFFSET..INODE_ADDR_OFFSET + 2].copy_from_slice(&extra_isize.to_le_bytes());
            block[INODE_ADDR_OFFSET + 2..INODE_ADDR_OFFSET + 4].copy_from_slice(&xattr_size.to_le_bytes());
            let inode = Inode::decode(&block);
            let extra = inode.extra_words();
            let addrs = ADDRS_PER_INODE.saturating_sub(extra + inode.inline_xattr_words(flexible));
            match geometry_from(1, &block, flexible) {
                Ok(g) => prop_assert_eq!((g.extra, g.addrs), (extra, addrs)),
                Err(_) => prop_assert!(addrs < 2),
            }
        }
    }
}
