//! Node blocks: inodes (`struct f2fs_inode`), direct and indirect nodes, and the 24-byte
//! footer every node block ends with (`struct node_footer`).

use crate::codec::{zero_block, Block, Reader, Writer};
use crate::consts::*;
use crate::crc::crc32;

/// Byte offset of the footer in a node block.
const FOOTER_OFFSET: usize = BLOCK_SIZE - NODE_FOOTER_SIZE;
/// `XATTR_NODE_OFFSET`: the footer offset of an xattr node.
pub const XATTR_NODE_OFFSET: u32 = (u32::MAX << OFFSET_BIT_SHIFT) >> OFFSET_BIT_SHIFT;

/// The tail of every node block.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeFooter {
    pub nid: u32,
    pub ino: u32,
    /// Cold/fsync/dentry marks in bits 0..2, the node's offset in its inode's tree above.
    pub flag: u32,
    /// Checkpoint version (with the CP CRC in the high half under `CP_CRC_RECOVERY_FLAG`):
    /// roll-forward recovery only follows nodes written after the current checkpoint.
    pub cp_ver: u64,
    /// Next block of the same log, chaining fsync'd nodes for roll-forward recovery.
    pub next_blkaddr: u32,
}

impl NodeFooter {
    pub fn decode(block: &Block) -> NodeFooter {
        let mut r = Reader::at(block, FOOTER_OFFSET);
        NodeFooter {
            nid: r.u32(),
            ino: r.u32(),
            flag: r.u32(),
            cp_ver: r.u64(),
            next_blkaddr: r.u32(),
        }
    }

    pub fn encode(&self, block: &mut Block) {
        let mut w = Writer::at(&mut block[..], FOOTER_OFFSET);
        w.u32(self.nid);
        w.u32(self.ino);
        w.u32(self.flag);
        w.u64(self.cp_ver);
        w.u32(self.next_blkaddr);
    }

    /// The node's position in its inode's tree (0 = the inode itself).
    pub fn offset(&self) -> u32 {
        self.flag >> OFFSET_BIT_SHIFT
    }

    pub fn is_cold(&self) -> bool {
        self.flag & (1 << COLD_BIT_SHIFT) != 0
    }

    pub fn is_fsync(&self) -> bool {
        self.flag & (1 << FSYNC_BIT_SHIFT) != 0
    }

    pub fn is_dent(&self) -> bool {
        self.flag & (1 << DENT_BIT_SHIFT) != 0
    }

    /// What kind of node this footer describes (kernel `IS_INODE`, `IS_DNODE`,
    /// `f2fs_has_xattr_block` in `fs/f2fs/node.h`).
    pub fn kind(&self) -> NodeKind {
        let ofs = self.offset();
        let n = NIDS_PER_BLOCK as u32;
        if ofs == 0 {
            return NodeKind::Inode;
        }
        if ofs == XATTR_NODE_OFFSET {
            return NodeKind::Xattr;
        }
        if ofs == 3 || ofs == 4 + n || ofs == 5 + 2 * n {
            return NodeKind::Indirect;
        }
        if ofs >= 6 + 2 * n && (ofs - (6 + 2 * n)).is_multiple_of(n + 1) {
            return NodeKind::Indirect;
        }
        NodeKind::Direct
    }
}

/// The four kinds of node block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    Inode,
    Direct,
    Indirect,
    Xattr,
}

/// `struct f2fs_extent`: the one cached extent of an inode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Extent {
    pub fofs: u32,
    pub blk_addr: u32,
    pub len: u32,
}

/// The extra attributes that overlay the start of `i_addr` when `F2FS_EXTRA_ATTR` is set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExtraAttr {
    pub extra_isize: u16,
    pub inline_xattr_size: u16,
    pub projid: u32,
    pub inode_checksum: u32,
    pub crtime: u64,
    pub crtime_nsec: u32,
    pub compr_blocks: u64,
    pub compress_algorithm: u8,
    pub log_cluster_size: u8,
    pub padding: u16,
}

impl ExtraAttr {
    fn decode(raw: &[u8]) -> ExtraAttr {
        let mut r = Reader::new(raw);
        ExtraAttr {
            extra_isize: r.u16(),
            inline_xattr_size: r.u16(),
            projid: r.u32(),
            inode_checksum: r.u32(),
            crtime: r.u64(),
            crtime_nsec: r.u32(),
            compr_blocks: r.u64(),
            compress_algorithm: r.u8(),
            log_cluster_size: r.u8(),
            padding: r.u16(),
        }
    }

    fn encode(&self) -> [u8; TOTAL_EXTRA_ATTR_SIZE as usize] {
        let mut out = [0u8; TOTAL_EXTRA_ATTR_SIZE as usize];
        let mut w = Writer::new(&mut out);
        w.u16(self.extra_isize);
        w.u16(self.inline_xattr_size);
        w.u32(self.projid);
        w.u32(self.inode_checksum);
        w.u64(self.crtime);
        w.u32(self.crtime_nsec);
        w.u64(self.compr_blocks);
        w.u8(self.compress_algorithm);
        w.u8(self.log_cluster_size);
        w.u16(self.padding);
        out
    }
}

/// An inode block. `addr` holds the 923 raw `i_addr` words; with extra attributes their
/// first `extra_isize / 4` words are the attributes, not addresses (see [`Inode::extra`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inode {
    pub mode: u16,
    pub advise: u8,
    pub inline: u8,
    pub uid: u32,
    pub gid: u32,
    pub links: u32,
    pub size: u64,
    /// Blocks in use, counting the inode block itself.
    pub blocks: u64,
    pub atime: u64,
    pub ctime: u64,
    pub mtime: u64,
    pub atime_nsec: u32,
    pub ctime_nsec: u32,
    pub mtime_nsec: u32,
    pub generation: u32,
    /// `i_current_depth` for directories (`i_gc_failures` for regular files).
    pub current_depth: u32,
    pub xattr_nid: u32,
    pub flags: u32,
    pub pino: u32,
    pub namelen: u32,
    pub name: Vec<u8>,
    pub dir_level: u8,
    pub ext: Extent,
    pub addr: Vec<u32>,
    pub nid: [u32; INODE_NIDS],
    pub footer: NodeFooter,
}

impl Default for Inode {
    fn default() -> Self {
        Inode {
            mode: 0,
            advise: 0,
            inline: 0,
            uid: 0,
            gid: 0,
            links: 0,
            size: 0,
            blocks: 0,
            atime: 0,
            ctime: 0,
            mtime: 0,
            atime_nsec: 0,
            ctime_nsec: 0,
            mtime_nsec: 0,
            generation: 0,
            current_depth: 0,
            xattr_nid: 0,
            flags: 0,
            pino: 0,
            namelen: 0,
            name: vec![0; NAME_LEN],
            dir_level: 0,
            ext: Extent::default(),
            addr: vec![0; ADDRS_PER_INODE],
            nid: [0; INODE_NIDS],
            footer: NodeFooter::default(),
        }
    }
}

impl Inode {
    pub fn decode(block: &Block) -> Inode {
        let mut r = Reader::new(block);
        // One literal, fields in on-disk order (a struct expression evaluates its fields
        // in the order written): no default inode's vectors allocated only to be dropped.
        Inode {
            mode: r.u16(),
            advise: r.u8(),
            inline: r.u8(),
            uid: r.u32(),
            gid: r.u32(),
            links: r.u32(),
            size: r.u64(),
            blocks: r.u64(),
            atime: r.u64(),
            ctime: r.u64(),
            mtime: r.u64(),
            atime_nsec: r.u32(),
            ctime_nsec: r.u32(),
            mtime_nsec: r.u32(),
            generation: r.u32(),
            current_depth: r.u32(),
            xattr_nid: r.u32(),
            flags: r.u32(),
            pino: r.u32(),
            namelen: r.u32(),
            name: r.vec(NAME_LEN),
            dir_level: r.u8(),
            ext: Extent {
                fofs: r.u32(),
                blk_addr: r.u32(),
                len: r.u32(),
            },
            addr: r.u32s(ADDRS_PER_INODE),
            nid: std::array::from_fn(|_| r.u32()),
            footer: NodeFooter::decode(block),
        }
    }

    /// Encodes the block as it is (the checksum word is whatever `addr` holds; see
    /// [`Inode::seal_checksum`]).
    pub fn encode(&self) -> Box<Block> {
        let mut block = zero_block();
        let mut w = Writer::new(&mut block[..]);
        w.u16(self.mode);
        w.u8(self.advise);
        w.u8(self.inline);
        for v in [self.uid, self.gid, self.links] {
            w.u32(v);
        }
        for v in [self.size, self.blocks, self.atime, self.ctime, self.mtime] {
            w.u64(v);
        }
        for v in [
            self.atime_nsec,
            self.ctime_nsec,
            self.mtime_nsec,
            self.generation,
            self.current_depth,
            self.xattr_nid,
            self.flags,
            self.pino,
            self.namelen,
        ] {
            w.u32(v);
        }
        w.padded(&self.name, NAME_LEN);
        w.u8(self.dir_level);
        for v in [self.ext.fofs, self.ext.blk_addr, self.ext.len] {
            w.u32(v);
        }
        debug_assert_eq!(w.pos(), INODE_ADDR_OFFSET);
        w.u32s(&self.addr, ADDRS_PER_INODE);
        w.u32s(&self.nid, INODE_NIDS);
        self.footer.encode(&mut block);
        block
    }

    pub fn is_dir(&self) -> bool {
        self.mode & S_IFMT == S_IFDIR
    }

    pub fn is_reg(&self) -> bool {
        self.mode & S_IFMT == S_IFREG
    }

    pub fn has_extra_attr(&self) -> bool {
        self.inline & F2FS_EXTRA_ATTR != 0
    }

    /// The extra attributes, when the inode has them.
    pub fn extra(&self) -> Option<ExtraAttr> {
        self.has_extra_attr()
            .then(|| ExtraAttr::decode(&self.addr_bytes(TOTAL_EXTRA_ATTR_SIZE as usize)))
    }

    /// Stores extra attributes over the first `i_addr` words and sets `F2FS_EXTRA_ATTR`.
    pub fn set_extra(&mut self, extra: &ExtraAttr) {
        self.inline |= F2FS_EXTRA_ATTR;
        let raw = extra.encode();
        for (i, word) in raw.chunks_exact(4).enumerate() {
            if let Some(slot) = self.addr.get_mut(i) {
                *slot = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
            }
        }
    }

    fn addr_bytes(&self, len: usize) -> Vec<u8> {
        let mut out: Vec<u8> = self.addr.iter().flat_map(|a| a.to_le_bytes()).collect();
        out.resize(len.max(out.len()), 0);
        out.truncate(len);
        out
    }

    /// `i_addr` words the extra attributes take (`get_extra_isize`), at most all of them.
    pub fn extra_words(&self) -> usize {
        self.extra()
            .map_or(0, |e| (e.extra_isize as usize / 4).min(ADDRS_PER_INODE))
    }

    /// `i_addr` words reserved for inline xattrs (f2fs-tools `get_inline_xattr_addrs`).
    pub fn inline_xattr_words(&self, flexible_inline_xattr: bool) -> usize {
        let words = if flexible_inline_xattr {
            self.extra().map_or(0, |e| e.inline_xattr_size as u32)
        } else if self.inline & (F2FS_INLINE_XATTR | F2FS_INLINE_DENTRY) != 0 {
            DEFAULT_INLINE_XATTR_ADDRS
        } else {
            0
        };
        (words as usize).min(ADDRS_PER_INODE)
    }

    /// The data block addresses held in the inode itself.
    pub fn data_addrs(&self, flexible_inline_xattr: bool) -> &[u32] {
        let start = self.extra_words();
        let end = ADDRS_PER_INODE - self.inline_xattr_words(flexible_inline_xattr);
        self.addr.get(start..end.max(start)).unwrap_or(&[])
    }

    /// The file name stored for recovery (`i_name[..i_namelen]`).
    pub fn file_name(&self) -> &[u8] {
        let n = (self.namelen as usize).min(self.name.len());
        &self.name[..n]
    }

    /// Computes the inode checksum and stores it in the extra attributes.
    pub fn seal_checksum(&mut self, chksum_seed: u32) {
        let crc = inode_checksum(&self.encode(), chksum_seed);
        if let Some(mut extra) = self.extra() {
            extra.inode_checksum = crc;
            self.set_extra(&extra);
        }
    }
}

/// Seed of inode checksums: the CRC of the volume UUID (`s_chksum_seed`).
pub fn checksum_seed(uuid: &[u8; 16]) -> u32 {
    crc32(!0, uuid)
}

/// The inode checksum of a node block (kernel `f2fs_inode_chksum`): CRC over the inode
/// number and generation, then the whole block with the checksum word taken as zero.
pub fn inode_checksum(block: &Block, chksum_seed: u32) -> u32 {
    let footer = NodeFooter::decode(block);
    let generation = Reader::at(block, GENERATION_OFFSET).u32();
    let seed = crc32(chksum_seed, &footer.ino.to_le_bytes());
    let seed = crc32(seed, &generation.to_le_bytes());
    let crc = crc32(seed, &block[..INODE_CHECKSUM_OFFSET]);
    let crc = crc32(crc, &[0; 4]);
    crc32(crc, &block[INODE_CHECKSUM_OFFSET + 4..])
}

/// `offsetof(struct f2fs_inode, i_generation)`.
const GENERATION_OFFSET: usize = 68;

/// Whether the checksum word is inside the extra attributes the inode declares
/// (`F2FS_FITS_IN_INODE(.., i_inode_checksum)`); only then is a checksum stored.
/// The fields of an inode block that place its `i_addr` words, read in place (the write
/// path needs them for every page; [`Inode::decode`] copies the whole block).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InodeLayout {
    pub inline: u8,
    /// `i_extra_isize` when `F2FS_EXTRA_ATTR` is set.
    pub extra_isize: Option<u16>,
    pub inline_xattr_size: u16,
}

impl InodeLayout {
    pub fn read(block: &Block) -> InodeLayout {
        let inline = block[3];
        let word = |at: usize| u16::from_le_bytes([block[at], block[at + 1]]);
        let extra = inline & F2FS_EXTRA_ATTR != 0;
        InodeLayout {
            inline,
            extra_isize: extra.then(|| word(INODE_ADDR_OFFSET)),
            inline_xattr_size: if extra {
                word(INODE_ADDR_OFFSET + 2)
            } else {
                0
            },
        }
    }

    /// As [`Inode::extra_words`].
    pub fn extra_words(&self) -> usize {
        self.extra_isize
            .map_or(0, |e| (e as usize / 4).min(ADDRS_PER_INODE))
    }

    /// As [`Inode::inline_xattr_words`].
    pub fn inline_xattr_words(&self, flexible_inline_xattr: bool) -> usize {
        let words = if flexible_inline_xattr {
            if self.extra_isize.is_some() {
                self.inline_xattr_size as u32
            } else {
                0
            }
        } else if self.inline & (F2FS_INLINE_XATTR | F2FS_INLINE_DENTRY) != 0 {
            DEFAULT_INLINE_XATTR_ADDRS
        } else {
            0
        };
        (words as usize).min(ADDRS_PER_INODE)
    }

    /// As [`checksum_fits`].
    pub fn checksum_fits(&self) -> bool {
        self.extra_isize
            .is_some_and(|e| e as usize >= INODE_CHECKSUM_OFFSET - INODE_ADDR_OFFSET + 4)
    }
}

pub fn checksum_fits(inode: &Inode) -> bool {
    inode
        .extra()
        .is_some_and(|e| e.extra_isize as usize >= INODE_CHECKSUM_OFFSET - INODE_ADDR_OFFSET + 4)
}

/// A direct node: 1018 data block addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirectNode {
    pub addrs: Vec<u32>,
    pub footer: NodeFooter,
}

/// An indirect node: 1018 node ids.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndirectNode {
    pub nids: Vec<u32>,
    pub footer: NodeFooter,
}

impl DirectNode {
    pub fn decode(block: &Block) -> DirectNode {
        DirectNode {
            addrs: Reader::new(block).u32s(ADDRS_PER_BLOCK),
            footer: NodeFooter::decode(block),
        }
    }

    pub fn encode(&self) -> Box<Block> {
        encode_words(&self.addrs, ADDRS_PER_BLOCK, &self.footer)
    }
}

impl IndirectNode {
    pub fn decode(block: &Block) -> IndirectNode {
        IndirectNode {
            nids: Reader::new(block).u32s(NIDS_PER_BLOCK),
            footer: NodeFooter::decode(block),
        }
    }

    pub fn encode(&self) -> Box<Block> {
        encode_words(&self.nids, NIDS_PER_BLOCK, &self.footer)
    }
}

fn encode_words(words: &[u32], len: usize, footer: &NodeFooter) -> Box<Block> {
    let mut block = zero_block();
    Writer::new(&mut block[..]).u32s(words, len);
    footer.encode(&mut block);
    block
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inode_field_offsets() {
        let mut inode = Inode {
            mode: 0o40755,
            generation: 0x0102_0304,
            ..Inode::default()
        };
        inode.addr[0] = 0xAABB_CCDD;
        inode.nid[4] = 7;
        inode.footer = NodeFooter {
            nid: 3,
            ino: 3,
            flag: 0,
            cp_ver: 1,
            next_blkaddr: 9,
        };
        let raw = inode.encode();
        assert_eq!(&raw[0..2], &0x41edu16.to_le_bytes());
        assert_eq!(&raw[68..72], &[4, 3, 2, 1], "i_generation at 68");
        assert_eq!(
            &raw[360..364],
            &0xAABB_CCDDu32.to_le_bytes(),
            "i_addr at 360"
        );
        assert_eq!(&raw[4068..4072], &[7, 0, 0, 0], "i_nid[4] ends at 4072");
        assert_eq!(&raw[4072..4076], &[3, 0, 0, 0], "footer nid at 4072");
        assert_eq!(&raw[4092..4096], &[9, 0, 0, 0], "next_blkaddr at 4092");
        assert_eq!(Inode::decode(&raw), inode);
    }

    #[test]
    fn extra_attrs_overlay_the_address_array() {
        let mut inode = Inode::default();
        inode.set_extra(&ExtraAttr {
            extra_isize: 36,
            crtime: 5,
            ..ExtraAttr::default()
        });
        assert_eq!(inode.extra_words(), 9);
        assert_eq!(inode.data_addrs(false).len(), ADDRS_PER_INODE - 9);
        assert!(checksum_fits(&inode));
        inode.seal_checksum(checksum_seed(&[1; 16]));
        let raw = inode.encode();
        let stored = Reader::at(&raw[..], INODE_CHECKSUM_OFFSET).u32();
        assert_eq!(stored, inode_checksum(&raw, checksum_seed(&[1; 16])));
        assert_ne!(stored, 0);
    }

    #[test]
    fn node_kinds_follow_the_tree_offsets() {
        let kind = |ofs: u32| {
            NodeFooter {
                flag: ofs << OFFSET_BIT_SHIFT,
                ..NodeFooter::default()
            }
            .kind()
        };
        assert_eq!(kind(0), NodeKind::Inode);
        assert_eq!((kind(1), kind(2)), (NodeKind::Direct, NodeKind::Direct));
        assert_eq!(kind(3), NodeKind::Indirect);
        assert_eq!(kind(4), NodeKind::Direct);
        assert_eq!(kind(4 + 1018), NodeKind::Indirect);
        assert_eq!(kind(5 + 2 * 1018), NodeKind::Indirect);
        assert_eq!(kind(6 + 2 * 1018), NodeKind::Indirect);
        assert_eq!(kind(7 + 2 * 1018), NodeKind::Direct);
        assert_eq!(kind(XATTR_NODE_OFFSET), NodeKind::Xattr);
    }
}
