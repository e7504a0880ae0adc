//! Image surgery for the corruption tests: find and edit the current copy of a SIT entry,
//! a NAT entry, an inode or a checkpoint field of an image in a `MemDevice`, the way a
//! hostile or broken tool would (journals included, checksums resealed where asked).

use flashstack_block::{BlockDevice, Hints, Payload};
use flashstack_f2fs::checkpoint::{nat_block_in_second_copy, Checkpoint};
use flashstack_f2fs::codec::{test_bit_msb, Block};
use flashstack_f2fs::consts::*;
use flashstack_f2fs::nat::{nat_block_addr, nat_position, NatBlock, NatEntry};
use flashstack_f2fs::node::{checksum_seed, Inode};
use flashstack_f2fs::sit::{SitBlock, SitEntry};
use flashstack_f2fs::summary::{Journal, SummaryBlock};
use flashstack_f2fs::{MemDevice, Superblock};

/// An image opened for editing: its superblock, current checkpoint pack and where the
/// pack's summary blocks (with the NAT and SIT journals) are.
pub struct Surgery {
    pub dev: MemDevice,
    pub sb: Superblock,
    pub cp: Checkpoint,
    pub pack_start: u64,
}

impl Surgery {
    pub fn new(mut dev: MemDevice) -> Surgery {
        let m = flashstack_f2fs::mount(&mut dev).expect("a mountable image to operate on");
        let pack_start = m.superblock.cp_blkaddr as u64
            + if m.cp_pack == 2 {
                BLOCKS_PER_SEG as u64
            } else {
                0
            };
        assert!(
            !m.checkpoint.has_flag(CP_COMPACT_SUM_FLAG),
            "surgery handles normal summaries only"
        );
        Surgery {
            dev,
            sb: m.superblock,
            cp: m.checkpoint,
            pack_start,
        }
    }

    pub fn block(&self, lba: u64) -> Box<Block> {
        let mut b = Box::new([0u8; BLOCK_SIZE]);
        if let Some(src) = self.dev.block(lba) {
            b.copy_from_slice(src);
        }
        b
    }

    pub fn put(&mut self, lba: u64, block: &Block) {
        self.dev
            .write(0, lba, Payload::Bytes(&block[..]), Hints::default())
            .unwrap();
    }

    pub fn edit_block(&mut self, lba: u64, edit: impl FnOnce(&mut Block)) {
        let mut b = self.block(lba);
        edit(&mut b);
        self.put(lba, &b);
    }

    /// Address of data summary block `log` (0 hot, 1 warm, 2 cold) in the current pack.
    fn data_summary_addr(&self, log: usize) -> u64 {
        let base = if self.cp.has_flag(CP_UMOUNT_FLAG) {
            NR_CURSEG_TYPE
        } else {
            NR_CURSEG_DATA_TYPE
        } as u64;
        self.pack_start + self.cp.cp_pack_total_block_count as u64 - (base + 1) + log as u64
    }

    fn edit_journal(&mut self, log: usize, edit: impl FnOnce(&mut Journal)) {
        let at = self.data_summary_addr(log);
        let mut sum = SummaryBlock::decode(&self.block(at));
        edit(&mut sum.journal);
        self.put(at, &sum.encode());
    }

    fn journal(&self, log: usize) -> Journal {
        SummaryBlock::decode(&self.block(self.data_summary_addr(log))).journal
    }

    fn sit_payload(&self) -> Vec<u8> {
        (0..self.sb.cp_payload as u64)
            .flat_map(|i| self.block(self.pack_start + 1 + i).to_vec())
            .collect()
    }

    /// SIT area addresses of block `index`: (current copy, other copy).
    fn sit_addrs(&self, index: u32) -> (u64, u64) {
        let bitmap = self.cp.sit_version_bitmap(&self.sit_payload());
        let copy_blocks = ((self.sb.segment_count_sit / 2) << LOG_BLOCKS_PER_SEG) as u64;
        let first = self.sb.sit_blkaddr as u64 + index as u64;
        if test_bit_msb(&bitmap, index as usize) {
            (first + copy_blocks, first)
        } else {
            (first, first + copy_blocks)
        }
    }

    /// The SIT entry the mount uses for `segno` (journal first).
    pub fn sit_entry(&self, segno: u32) -> SitEntry {
        let journal = self.journal(CURSEG_COLD_DATA_INDEX).sit_entries().unwrap();
        if let Some(j) = journal.iter().find(|j| j.segno == segno) {
            return j.entry.clone();
        }
        let (current, _) = self.sit_addrs(segno / SIT_ENTRY_PER_BLOCK);
        SitBlock::decode(&self.block(current)).entries[(segno % SIT_ENTRY_PER_BLOCK) as usize]
            .clone()
    }

    /// Edits `segno`'s SIT entry everywhere it is stored: both SIT copies and the journal.
    pub fn edit_sit(&mut self, segno: u32, edit: impl Fn(&mut SitEntry)) {
        let index = segno / SIT_ENTRY_PER_BLOCK;
        let slot = (segno % SIT_ENTRY_PER_BLOCK) as usize;
        let (a, b) = self.sit_addrs(index);
        for at in [a, b] {
            let mut block = SitBlock::decode(&self.block(at));
            edit(&mut block.entries[slot]);
            self.put(at, &block.encode());
        }
        self.edit_journal(CURSEG_COLD_DATA_INDEX, |j| {
            let mut entries = j.sit_entries().unwrap();
            for e in entries.iter_mut().filter(|e| e.segno == segno) {
                edit(&mut e.entry);
            }
            *j = Journal::sit(&entries);
        });
    }

    /// Issue 12, item 1: zeroes 16 bytes of `segno`'s SIT bitmap around block offset
    /// `off` (everywhere the entry is stored) and lowers its valid count to match, so the
    /// blocks there look free. Returns how many valid bits were cleared.
    pub fn zero_sit_bits(&mut self, segno: u32, off: u32) -> u32 {
        let byte = ((off / 8) as usize).min(64 - 16);
        let bits: u32 = self.sit_entry(segno).valid_map[byte..byte + 16]
            .iter()
            .map(|b| b.count_ones())
            .sum();
        self.edit_sit(segno, |e| {
            e.valid_map[byte..byte + 16].fill(0);
            e.vblocks -= bits as u16;
        });
        bits
    }

    fn nat_addr(&self, nid: u32) -> u64 {
        let (index, _) = nat_position(nid);
        let bitmap = self.cp.nat_version_bitmap(self.sb.cp_payload);
        let second = nat_block_in_second_copy(&bitmap, index);
        nat_block_addr(self.sb.nat_blkaddr, index, second)
    }

    /// The NAT entry the mount uses for `nid` (journal first).
    pub fn nat_entry(&self, nid: u32) -> NatEntry {
        let journal = self.journal(CURSEG_HOT_DATA_INDEX).nat_entries().unwrap();
        if let Some(j) = journal.iter().find(|j| j.nid == nid) {
            return j.entry;
        }
        NatBlock::decode(&self.block(self.nat_addr(nid))).entries[nat_position(nid).1]
    }

    /// Sets `nid`'s NAT entry in the current NAT copy and, if it is there, in the journal.
    pub fn set_nat(&mut self, nid: u32, entry: NatEntry) {
        let at = self.nat_addr(nid);
        let mut block = NatBlock::decode(&self.block(at));
        block.entries[nat_position(nid).1] = entry;
        self.put(at, &block.encode());
        self.edit_journal(CURSEG_HOT_DATA_INDEX, |j| {
            let mut entries = j.nat_entries().unwrap();
            for e in entries.iter_mut().filter(|e| e.nid == nid) {
                e.entry = entry;
            }
            *j = Journal::nat(&entries);
        });
    }

    /// Block address of node `nid`.
    pub fn node_addr(&self, nid: u32) -> u64 {
        self.nat_entry(nid).block_addr as u64
    }

    pub fn inode(&self, ino: u32) -> Inode {
        Inode::decode(&self.block(self.node_addr(ino)))
    }

    /// Rewrites inode `ino` in place, resealing its checksum when the image has them
    /// (so only the edited field is wrong).
    pub fn edit_inode(&mut self, ino: u32, edit: impl FnOnce(&mut Inode)) {
        let at = self.node_addr(ino);
        let mut inode = self.inode(ino);
        edit(&mut inode);
        if self.sb.feature.contains(FEATURE_INODE_CHKSUM) {
            inode.seal_checksum(checksum_seed(&self.sb.uuid));
        }
        self.put(at, &inode.encode());
    }

    /// Rewrites the current checkpoint's header and footer with `edit` applied and the
    /// CRC recomputed (a consistent-looking pack with a wrong field).
    pub fn edit_checkpoint(&mut self, edit: impl FnOnce(&mut Checkpoint)) {
        edit(&mut self.cp);
        let sealed = self.cp.encode();
        let footer = self.pack_start + self.cp.cp_pack_total_block_count as u64 - 1;
        self.put(self.pack_start, &sealed);
        self.put(footer, &sealed);
    }

    /// Where a file's bytes are stored with nothing to check them by (F2FS has no data
    /// checksums; an inode's are optional): its inode block's address and, unless the
    /// image has inode checksums, the byte ranges of `i_size` and of its inline data.
    /// A flip there changes the file as a write would.
    pub fn unprotected_bytes(&self, ino: u32) -> (u64, Vec<std::ops::Range<usize>>) {
        let at = self.node_addr(ino);
        if self.sb.feature.contains(FEATURE_INODE_CHKSUM) {
            return (at, Vec::new());
        }
        let inode = self.inode(ino);
        let i_size = 16..24;
        let mut ranges = Vec::new();
        ranges.push(i_size);
        if inode.inline & F2FS_INLINE_DATA != 0 {
            let start = INODE_ADDR_OFFSET + 4 * (inode.extra_words() + 1);
            ranges.push(start..start + inode.size as usize);
        }
        (at, ranges)
    }

    pub fn into_dev(self) -> MemDevice {
        self.dev
    }
}

const CURSEG_HOT_DATA_INDEX: usize = 0;
const CURSEG_COLD_DATA_INDEX: usize = 2;

/// Deterministic bytes that look random (xorshift), so a block from the wrong place
/// never equals the right one by chance.
pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}
