//! The Segment Information Table: one 74-byte entry per segment (`struct f2fs_sit_entry`),
//! 55 per block.

use crate::codec::{set_bit_msb, test_bit_msb, zero_block, Block, Reader, Writer};
use crate::consts::*;

/// Valid-block count, log type, validity bitmap and age of one segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SitEntry {
    /// Bits 15..10: the log type (`CURSEG_*`); bits 9..0: valid blocks.
    pub vblocks: u16,
    /// One bit per block of the segment, MSB first.
    pub valid_map: [u8; SIT_VBLOCK_MAP_SIZE],
    /// Segment age for cost-benefit cleaning.
    pub mtime: u64,
}

impl Default for SitEntry {
    fn default() -> Self {
        SitEntry {
            vblocks: 0,
            valid_map: [0; SIT_VBLOCK_MAP_SIZE],
            mtime: 0,
        }
    }
}

impl SitEntry {
    /// An entry for a segment of log `seg_type` whose first `valid` blocks are in use.
    pub fn with_leading_blocks(seg_type: u8, valid: u16) -> SitEntry {
        let mut entry = SitEntry {
            vblocks: ((seg_type as u16) << SIT_VBLOCKS_SHIFT) | (valid & SIT_VBLOCKS_MASK),
            ..SitEntry::default()
        };
        for blk in 0..valid as usize {
            set_bit_msb(&mut entry.valid_map, blk);
        }
        entry
    }

    pub fn valid_blocks(&self) -> u16 {
        self.vblocks & SIT_VBLOCKS_MASK
    }

    pub fn seg_type(&self) -> u8 {
        (self.vblocks >> SIT_VBLOCKS_SHIFT) as u8
    }

    pub fn is_valid(&self, blkoff: u32) -> bool {
        test_bit_msb(&self.valid_map, blkoff as usize)
    }

    /// Valid blocks counted from the bitmap (must equal `valid_blocks()` when consistent).
    pub fn bitmap_count(&self) -> u32 {
        self.valid_map.iter().map(|b| b.count_ones()).sum()
    }

    pub fn decode(r: &mut Reader) -> SitEntry {
        SitEntry {
            vblocks: r.u16(),
            valid_map: r.fixed(),
            mtime: r.u64(),
        }
    }

    pub fn encode(&self, w: &mut Writer) {
        w.u16(self.vblocks);
        w.bytes(&self.valid_map);
        w.u64(self.mtime);
    }
}

/// A block of the SIT area.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SitBlock {
    pub entries: Vec<SitEntry>,
}

impl SitBlock {
    pub fn decode(block: &Block) -> SitBlock {
        let mut r = Reader::new(block);
        SitBlock {
            entries: (0..SIT_ENTRY_PER_BLOCK)
                .map(|_| SitEntry::decode(&mut r))
                .collect(),
        }
    }

    pub fn encode(&self) -> Box<Block> {
        let mut block = zero_block();
        let mut w = Writer::new(&mut block[..]);
        for i in 0..SIT_ENTRY_PER_BLOCK as usize {
            self.entries
                .get(i)
                .cloned()
                .unwrap_or_default()
                .encode(&mut w);
        }
        block
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_round_trip_and_fields() {
        let e = SitEntry::with_leading_blocks(3, 2);
        assert_eq!(e.vblocks, (3 << 10) | 2);
        assert_eq!(e.valid_map[0], 0xC0, "MSB-first bitmap");
        assert_eq!(
            (e.seg_type(), e.valid_blocks(), e.bitmap_count()),
            (3, 2, 2)
        );
        let block = SitBlock {
            entries: vec![SitEntry::default(), e.clone()],
        };
        let raw = block.encode();
        assert_eq!(&raw[74..76], &[2, 12], "second entry starts at byte 74");
        assert_eq!(SitBlock::decode(&raw).entries[1], e);
        assert_eq!(SIT_ENTRY_PER_BLOCK, 55);
    }
}
