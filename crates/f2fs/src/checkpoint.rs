//! `struct f2fs_checkpoint` (the header and footer block of a checkpoint pack), orphan
//! blocks and the NAT bits mkfs leaves at the end of the first CP segment.

use crate::codec::{le32_at, put_le32_at, test_bit_msb, zero_block, Block, Reader, Writer};
use crate::consts::*;
use crate::crc::{crc32, f2fs_crc32};
use crate::error::Corruption;

/// A checkpoint block, field for field. Everything from byte 192 on (the SIT/NAT version
/// bitmaps, and the CRC word wherever `checksum_offset` puts it) is kept in `tail`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    pub checkpoint_ver: u64,
    pub user_block_count: u64,
    pub valid_block_count: u64,
    pub rsvd_segment_count: u32,
    pub overprov_segment_count: u32,
    pub free_segment_count: u32,
    pub cur_node_segno: [u32; MAX_ACTIVE_NODE_LOGS],
    pub cur_node_blkoff: [u16; MAX_ACTIVE_NODE_LOGS],
    pub cur_data_segno: [u32; MAX_ACTIVE_DATA_LOGS],
    pub cur_data_blkoff: [u16; MAX_ACTIVE_DATA_LOGS],
    pub ckpt_flags: u32,
    pub cp_pack_total_block_count: u32,
    pub cp_pack_start_sum: u32,
    pub valid_node_count: u32,
    pub valid_inode_count: u32,
    pub next_free_nid: u32,
    pub sit_ver_bitmap_bytesize: u32,
    pub nat_ver_bitmap_bytesize: u32,
    pub checksum_offset: u32,
    pub elapsed_time: u64,
    pub alloc_type: [u8; MAX_ACTIVE_LOGS],
    /// Bytes 192..4096 of the block.
    pub tail: Vec<u8>,
}

impl Default for Checkpoint {
    fn default() -> Self {
        Checkpoint {
            checkpoint_ver: 0,
            user_block_count: 0,
            valid_block_count: 0,
            rsvd_segment_count: 0,
            overprov_segment_count: 0,
            free_segment_count: 0,
            cur_node_segno: [NULL_SEGNO; MAX_ACTIVE_NODE_LOGS],
            cur_node_blkoff: [0; MAX_ACTIVE_NODE_LOGS],
            cur_data_segno: [NULL_SEGNO; MAX_ACTIVE_DATA_LOGS],
            cur_data_blkoff: [0; MAX_ACTIVE_DATA_LOGS],
            ckpt_flags: 0,
            cp_pack_total_block_count: 0,
            cp_pack_start_sum: 0,
            valid_node_count: 0,
            valid_inode_count: 0,
            next_free_nid: 0,
            sit_ver_bitmap_bytesize: 0,
            nat_ver_bitmap_bytesize: 0,
            checksum_offset: CP_CHKSUM_OFFSET,
            elapsed_time: 0,
            alloc_type: [0; MAX_ACTIVE_LOGS],
            tail: vec![0; BLOCK_SIZE - CP_BITMAP_OFFSET],
        }
    }
}

impl Checkpoint {
    pub fn decode(block: &Block) -> Checkpoint {
        let mut r = Reader::new(block);
        let mut cp = Checkpoint {
            checkpoint_ver: r.u64(),
            user_block_count: r.u64(),
            valid_block_count: r.u64(),
            rsvd_segment_count: r.u32(),
            overprov_segment_count: r.u32(),
            free_segment_count: r.u32(),
            ..Checkpoint::default()
        };
        cp.cur_node_segno = std::array::from_fn(|_| r.u32());
        cp.cur_node_blkoff = std::array::from_fn(|_| r.u16());
        cp.cur_data_segno = std::array::from_fn(|_| r.u32());
        cp.cur_data_blkoff = std::array::from_fn(|_| r.u16());
        cp.decode_counts(&mut r);
        cp.alloc_type = r.fixed();
        cp.tail = r.vec(BLOCK_SIZE - CP_BITMAP_OFFSET);
        cp
    }

    fn decode_counts(&mut self, r: &mut Reader) {
        self.ckpt_flags = r.u32();
        self.cp_pack_total_block_count = r.u32();
        self.cp_pack_start_sum = r.u32();
        self.valid_node_count = r.u32();
        self.valid_inode_count = r.u32();
        self.next_free_nid = r.u32();
        self.sit_ver_bitmap_bytesize = r.u32();
        self.nat_ver_bitmap_bytesize = r.u32();
        self.checksum_offset = r.u32();
        self.elapsed_time = r.u64();
    }

    /// Encodes the block with its CRC stored at `checksum_offset` (f2fs-tools
    /// `f2fs_checkpoint_chksum`: CRC of the bytes before the offset, continued over the
    /// bytes after the CRC word when the offset is not the last word).
    pub fn encode(&self) -> Box<Block> {
        let mut block = self.encode_fields();
        if let Some(crc) = checksum_of(&block, self.checksum_offset) {
            put_le32_at(&mut block[..], self.checksum_offset as usize, crc);
        }
        block
    }

    fn encode_fields(&self) -> Box<Block> {
        let mut block = zero_block();
        let mut w = Writer::new(&mut block[..]);
        w.u64(self.checkpoint_ver);
        w.u64(self.user_block_count);
        w.u64(self.valid_block_count);
        w.u32(self.rsvd_segment_count);
        w.u32(self.overprov_segment_count);
        w.u32(self.free_segment_count);
        w.u32s(&self.cur_node_segno, MAX_ACTIVE_NODE_LOGS);
        self.cur_node_blkoff.iter().for_each(|&v| w.u16(v));
        w.u32s(&self.cur_data_segno, MAX_ACTIVE_DATA_LOGS);
        self.cur_data_blkoff.iter().for_each(|&v| w.u16(v));
        for v in [
            self.ckpt_flags,
            self.cp_pack_total_block_count,
            self.cp_pack_start_sum,
            self.valid_node_count,
            self.valid_inode_count,
            self.next_free_nid,
            self.sit_ver_bitmap_bytesize,
            self.nat_ver_bitmap_bytesize,
            self.checksum_offset,
        ] {
            w.u32(v);
        }
        w.u64(self.elapsed_time);
        w.bytes(&self.alloc_type);
        debug_assert_eq!(w.pos(), CP_BITMAP_OFFSET);
        w.padded(&self.tail, BLOCK_SIZE - CP_BITMAP_OFFSET);
        block
    }

    /// Checks the CRC of a checkpoint block read from `blkaddr`.
    pub fn verify(block: &Block, blkaddr: u64) -> Result<Checkpoint, Corruption> {
        let cp = Checkpoint::decode(block);
        let offset = cp.checksum_offset;
        let computed = checksum_of(block, offset)
            .ok_or(Corruption::CheckpointChecksumOffset { blkaddr, offset })?;
        let stored = le32_at(block, offset as usize);
        if stored != computed {
            return Err(Corruption::CheckpointChecksum {
                blkaddr,
                stored,
                computed,
            });
        }
        Ok(cp)
    }

    /// The stored CRC word.
    pub fn crc(&self) -> u32 {
        le32_at(&self.encode()[..], self.checksum_offset as usize)
    }

    /// `get_cp_crc`: the version in the low half and the CRC in the high half; NAT bits and
    /// roll-forward node footers carry this value.
    pub fn crc_version(&self) -> u64 {
        self.checkpoint_ver | ((self.crc() as u64) << 32)
    }

    pub fn has_flag(&self, flag: u32) -> bool {
        self.ckpt_flags & flag != 0
    }

    /// The NAT version bitmap (`__bitmap_ptr(NAT_BITMAP)`): bit n set means NAT block n is
    /// current in its second copy.
    pub fn nat_version_bitmap(&self, cp_payload: u32) -> Vec<u8> {
        let len = self.nat_ver_bitmap_bytesize as usize;
        let start = if self.has_flag(CP_LARGE_NAT_BITMAP_FLAG) {
            self.large_bitmap_skip()
        } else if cp_payload > 0 {
            0
        } else {
            self.sit_ver_bitmap_bytesize as usize
        };
        bitmap_slice(&self.tail, start, len)
    }

    /// The SIT version bitmap; with a CP payload it lives in the payload blocks instead.
    pub fn sit_version_bitmap(&self, payload: &[u8]) -> Vec<u8> {
        let len = self.sit_ver_bitmap_bytesize as usize;
        if self.has_flag(CP_LARGE_NAT_BITMAP_FLAG) {
            let start = self.large_bitmap_skip() + self.nat_ver_bitmap_bytesize as usize;
            bitmap_slice(&self.tail, start, len)
        } else if !payload.is_empty() {
            bitmap_slice(payload, 0, len)
        } else {
            bitmap_slice(&self.tail, 0, len)
        }
    }

    /// With a large NAT bitmap the CRC word sits at byte 192, ahead of the bitmaps.
    fn large_bitmap_skip(&self) -> usize {
        if self.checksum_offset as usize == CP_BITMAP_OFFSET {
            4
        } else {
            0
        }
    }
}

/// CRC of a checkpoint block for a given CRC position, or `None` when the position is
/// outside `CP_MIN_CHKSUM_OFFSET..=CP_CHKSUM_OFFSET`.
fn checksum_of(block: &Block, offset: u32) -> Option<u32> {
    let ofs = offset as usize;
    if !(CP_BITMAP_OFFSET..=CP_CHKSUM_OFFSET as usize).contains(&ofs) {
        return None;
    }
    let head = f2fs_crc32(&block[..ofs]);
    if ofs < CP_CHKSUM_OFFSET as usize {
        return Some(crc32(head, &block[ofs + 4..]));
    }
    Some(head)
}

/// `len` bytes from `start`, zero-padded where the source is short (a corrupt size field
/// must not index out of bounds).
fn bitmap_slice(src: &[u8], start: usize, len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len.min(MAX_BITMAP_BYTES)];
    let avail = src.get(start..).unwrap_or(&[]);
    let n = avail.len().min(out.len());
    out[..n].copy_from_slice(&avail[..n]);
    out
}

/// Upper bound for any version bitmap (`MAX_SIT_BITMAP_SIZE` is 19072 bytes); caps what a
/// corrupt size field can make us allocate.
const MAX_BITMAP_BYTES: usize = 1 << 16;

/// Whether NAT block `index` is current in its second copy.
pub fn nat_block_in_second_copy(bitmap: &[u8], index: u32) -> bool {
    test_bit_msb(bitmap, index as usize)
}

/// An orphan block (`struct f2fs_orphan_block`): inodes unlinked while still open.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OrphanBlock {
    pub inos: Vec<u32>,
    pub blk_addr: u16,
    pub blk_count: u16,
    pub entry_count: u32,
    pub check_sum: u32,
}

impl OrphanBlock {
    pub fn decode(block: &Block) -> OrphanBlock {
        let mut r = Reader::new(block);
        let inos = r.u32s(ORPHANS_PER_BLOCK);
        let _reserved = r.u32();
        OrphanBlock {
            inos,
            blk_addr: r.u16(),
            blk_count: r.u16(),
            entry_count: r.u32(),
            check_sum: r.u32(),
        }
    }

    pub fn encode(&self) -> Box<Block> {
        let mut block = zero_block();
        let mut w = Writer::new(&mut block[..]);
        w.u32s(&self.inos, ORPHANS_PER_BLOCK);
        w.u32(0);
        w.u16(self.blk_addr);
        w.u16(self.blk_count);
        w.u32(self.entry_count);
        w.u32(self.check_sum);
        block
    }

    /// The orphan inode numbers this block holds (at most `entry_count`, at most 1020).
    pub fn live_inos(&self) -> &[u32] {
        let n = (self.entry_count as usize).min(self.inos.len());
        &self.inos[..n]
    }
}

/// Bytes of `crc_version` ahead of the NAT bits.
const NAT_BITS_HEADER: usize = 8;

/// NAT bits: the checkpoint's `crc_version`, then one "full" and one "empty" bit per NAT
/// block (little-endian bit order), stored in the last blocks of the CP segment so a clean
/// mount can find free nids without reading the NAT (f2fs-tools `write_nat_bits`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NatBits {
    pub crc_version: u64,
    pub full: Vec<u8>,
    pub empty: Vec<u8>,
}

impl NatBits {
    /// Bytes per bitmap and blocks for the whole record, for a given `segment_count_nat`
    /// (both NAT copies): one bit per NAT block of one copy (f2fs-tools writes this as
    /// `segment_count_nat << 5`), two bitmaps behind the 8-byte `crc_version`.
    pub fn size(segment_count_nat: u32) -> (usize, u32) {
        let blocks_per_copy = segment_count_nat as usize / 2 * BLOCKS_PER_SEG as usize;
        let bytes = blocks_per_copy / 8;
        (bytes, Self::blocks_for(bytes) as u32)
    }

    fn blocks_for(bitmap_bytes: usize) -> usize {
        (NAT_BITS_HEADER + 2 * bitmap_bytes).div_ceil(BLOCK_SIZE)
    }

    pub fn encode(&self) -> Vec<u8> {
        let bytes = self.full.len();
        let mut out = vec![0u8; Self::blocks_for(bytes) * BLOCK_SIZE];
        let mut w = Writer::new(&mut out);
        w.u64(self.crc_version);
        w.bytes(&self.full);
        w.padded(&self.empty, bytes);
        out
    }

    pub fn decode(raw: &[u8], bytes: usize) -> NatBits {
        let mut r = Reader::new(raw);
        NatBits {
            crc_version: r.u64(),
            full: r.vec(bytes),
            empty: r.vec(bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Checkpoint {
        Checkpoint {
            checkpoint_ver: 0x6b8b_4567,
            ckpt_flags: CP_UMOUNT_FLAG | CP_COMPACT_SUM_FLAG,
            sit_ver_bitmap_bytesize: 64,
            nat_ver_bitmap_bytesize: 64,
            elapsed_time: 9,
            ..Checkpoint::default()
        }
    }

    #[test]
    fn field_offsets_and_crc() {
        let cp = sample();
        let raw = cp.encode();
        assert_eq!(&raw[132..136], &5u32.to_le_bytes(), "ckpt_flags");
        assert_eq!(
            &raw[164..168],
            &CP_CHKSUM_OFFSET.to_le_bytes(),
            "checksum_offset"
        );
        assert_eq!(&raw[168..176], &9u64.to_le_bytes(), "elapsed_time");
        assert_eq!(
            &raw[36..40],
            &NULL_SEGNO.to_le_bytes(),
            "unused cur_node_segno"
        );
        // The decoded tail carries the CRC word; re-encoding reproduces the block.
        let back = Checkpoint::verify(&raw, 512).unwrap();
        assert!(back.encode()[..] == raw[..]);
        assert_eq!(back.checkpoint_ver, cp.checkpoint_ver);
        assert_eq!(cp.crc_version() & 0xffff_ffff, 0x6b8b_4567);
        assert_eq!((cp.crc_version() >> 32) as u32, le32_at(&raw[..], 4092));
        let mut bad = *raw;
        bad[20] ^= 1;
        assert!(matches!(
            Checkpoint::verify(&bad, 512),
            Err(Corruption::CheckpointChecksum { blkaddr: 512, .. })
        ));
        put_le32_at(&mut bad[..], 164, 10);
        assert!(matches!(
            Checkpoint::verify(&bad, 7),
            Err(Corruption::CheckpointChecksumOffset { offset: 10, .. })
        ));
    }

    #[test]
    fn crc_at_the_bitmap_start_covers_the_rest() {
        let mut cp = sample();
        cp.checksum_offset = CP_BITMAP_OFFSET as u32;
        cp.tail[100] = 0x5a;
        let raw = cp.encode();
        assert!(Checkpoint::verify(&raw, 0).is_ok());
        let mut bad = *raw;
        bad[4000] ^= 1;
        assert!(
            Checkpoint::verify(&bad, 0).is_err(),
            "bytes after the CRC are covered"
        );
    }

    #[test]
    fn version_bitmaps_sit_where_the_kernel_looks() {
        let mut cp = sample();
        cp.tail[0] = 0x80; // SIT bitmap first...
        cp.tail[64] = 0x40; // ...then the NAT bitmap.
        assert_eq!(cp.sit_version_bitmap(&[])[0], 0x80);
        let nat = cp.nat_version_bitmap(0);
        assert!(nat_block_in_second_copy(&nat, 1) && !nat_block_in_second_copy(&nat, 0));
        // With a CP payload the SIT bitmap moves out and the NAT bitmap starts the tail.
        assert_eq!(cp.nat_version_bitmap(1)[0], 0x80);
        assert_eq!(cp.sit_version_bitmap(&[0x11; 64])[0], 0x11);
        // A large NAT bitmap comes first, after the CRC word at byte 192.
        cp.ckpt_flags |= CP_LARGE_NAT_BITMAP_FLAG;
        cp.checksum_offset = CP_BITMAP_OFFSET as u32;
        cp.tail[4] = 0x22;
        assert_eq!(cp.nat_version_bitmap(0)[0], 0x22);
        assert_eq!(cp.sit_version_bitmap(&[])[0], cp.tail[4 + 64]);
    }

    #[test]
    fn orphans_and_nat_bits_round_trip() {
        let o = OrphanBlock {
            inos: vec![10, 11, 12],
            blk_addr: 1,
            blk_count: 1,
            entry_count: 2,
            check_sum: 0,
        };
        let back = OrphanBlock::decode(&o.encode());
        assert_eq!(back.live_inos(), &[10, 11]);
        assert_eq!(&back.encode()[4084..4088], &[1, 0, 1, 0]);
        let (bytes, blocks) = NatBits::size(2);
        assert_eq!((bytes, blocks), (64, 1));
        let bits = NatBits {
            crc_version: 0x1234,
            full: vec![0; bytes],
            empty: vec![0xfe; bytes],
        };
        let raw = bits.encode();
        assert_eq!(raw.len(), BLOCK_SIZE);
        assert_eq!(raw[8 + 64], 0xfe, "empty bits follow the full bits");
        assert_eq!(NatBits::decode(&raw, bytes), bits);
    }
}
