//! The Node Address Table: node id → block address, 9-byte entries, 455 per block
//! (`struct f2fs_nat_entry`).

use crate::codec::{zero_block, Block, Reader, Writer};
use crate::consts::*;

/// Where a node lives and which inode owns it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NatEntry {
    pub version: u8,
    pub ino: u32,
    pub block_addr: u32,
}

impl NatEntry {
    pub fn decode(r: &mut Reader) -> NatEntry {
        NatEntry {
            version: r.u8(),
            ino: r.u32(),
            block_addr: r.u32(),
        }
    }

    pub fn encode(&self, w: &mut Writer) {
        w.u8(self.version);
        w.u32(self.ino);
        w.u32(self.block_addr);
    }
}

/// A block of the NAT area: entries for nids `index*455 .. index*455+455`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NatBlock {
    pub entries: Vec<NatEntry>,
}

impl NatBlock {
    pub fn decode(block: &Block) -> NatBlock {
        let mut r = Reader::new(block);
        NatBlock {
            entries: (0..NAT_ENTRY_PER_BLOCK)
                .map(|_| NatEntry::decode(&mut r))
                .collect(),
        }
    }

    pub fn encode(&self) -> Box<Block> {
        let mut block = zero_block();
        let mut w = Writer::new(&mut block[..]);
        for i in 0..NAT_ENTRY_PER_BLOCK as usize {
            self.entries
                .get(i)
                .copied()
                .unwrap_or_default()
                .encode(&mut w);
        }
        block
    }

    /// A block of empty entries.
    pub fn empty() -> NatBlock {
        NatBlock {
            entries: vec![NatEntry::default(); NAT_ENTRY_PER_BLOCK as usize],
        }
    }
}

/// NAT block holding `nid`, and the entry's index inside it (`NAT_BLOCK_OFFSET`).
pub fn nat_position(nid: u32) -> (u32, usize) {
    (
        nid / NAT_ENTRY_PER_BLOCK,
        (nid % NAT_ENTRY_PER_BLOCK) as usize,
    )
}

/// Block address of NAT block `index` in copy 0 or 1: the copies of each NAT segment sit
/// side by side, so segment `s` of copy `c` is segment `2s + c` of the area
/// (`current_nat_addr` in f2fs-tools `fsck/mount.c`).
pub fn nat_block_addr(nat_blkaddr: u32, index: u32, second_copy: bool) -> u64 {
    let seg = (index >> LOG_BLOCKS_PER_SEG) as u64;
    let off = (index & (BLOCKS_PER_SEG - 1)) as u64;
    let copy = if second_copy {
        BLOCKS_PER_SEG as u64
    } else {
        0
    };
    nat_blkaddr as u64 + (seg << (LOG_BLOCKS_PER_SEG + 1)) + off + copy
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_layout() {
        let mut b = NatBlock::empty();
        b.entries[3] = NatEntry {
            version: 0,
            ino: 3,
            block_addr: 0x1234,
        };
        let raw = b.encode();
        assert_eq!(&raw[27..36], &[0, 3, 0, 0, 0, 0x34, 0x12, 0, 0]);
        assert_eq!(NatBlock::decode(&raw), b);
        assert_eq!(NAT_ENTRY_PER_BLOCK, 455);
        assert_eq!(nat_position(456), (1, 1));
        assert_eq!(nat_block_addr(1000, 513, true), 1000 + 1024 + 1 + 512);
    }
}
