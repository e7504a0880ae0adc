//! The Segment Summary Area: who owns each block of a segment (`struct f2fs_summary`, 7
//! bytes × 512), the NAT/SIT journals in the spare 507 bytes, and the "compact" form the
//! checkpoint uses to store the three data logs' summaries in one block.

use crate::codec::{zero_block, Block, Reader, Writer};
use crate::consts::*;
use crate::nat::NatEntry;
use crate::sit::SitEntry;

/// Owner of one block: the node holding its address (for data) or the node itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub nid: u32,
    pub version: u8,
    /// Index of the address inside the owning node (data blocks only).
    pub ofs_in_node: u16,
}

impl Summary {
    pub fn decode(r: &mut Reader) -> Summary {
        Summary {
            nid: r.u32(),
            version: r.u8(),
            ofs_in_node: r.u16(),
        }
    }

    pub fn encode(&self, w: &mut Writer) {
        w.u32(self.nid);
        w.u8(self.version);
        w.u16(self.ofs_in_node);
    }
}

/// A NAT update kept in the journal instead of the NAT area.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NatJournalEntry {
    pub nid: u32,
    pub entry: NatEntry,
}

/// A SIT update kept in the journal instead of the SIT area.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SitJournalEntry {
    pub segno: u32,
    pub entry: SitEntry,
}

/// The 507-byte journal (`struct f2fs_journal`): a count, then NAT entries, SIT entries or
/// extra info depending on which log's summary it belongs to (hot data: NAT, cold data:
/// SIT). The body is kept raw so any journal round-trips.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Journal {
    pub count: u16,
    pub body: Vec<u8>,
}

impl Default for Journal {
    fn default() -> Self {
        Journal {
            count: 0,
            body: vec![0; SUM_JOURNAL_SIZE - 2],
        }
    }
}

impl Journal {
    pub fn nat(entries: &[NatJournalEntry]) -> Journal {
        let mut j = Journal {
            count: entries.len() as u16,
            ..Journal::default()
        };
        let mut w = Writer::new(&mut j.body);
        for e in entries.iter().take(NAT_JOURNAL_ENTRIES) {
            w.u32(e.nid);
            e.entry.encode(&mut w);
        }
        j
    }

    pub fn sit(entries: &[SitJournalEntry]) -> Journal {
        let mut j = Journal {
            count: entries.len() as u16,
            ..Journal::default()
        };
        let mut w = Writer::new(&mut j.body);
        for e in entries.iter().take(SIT_JOURNAL_ENTRIES) {
            w.u32(e.segno);
            e.entry.encode(&mut w);
        }
        j
    }

    /// The NAT entries, or why the count is impossible.
    pub fn nat_entries(&self) -> Result<Vec<NatJournalEntry>, String> {
        let n = self.checked_count(NAT_JOURNAL_ENTRIES, "NAT")?;
        let mut r = Reader::new(&self.body);
        Ok((0..n)
            .map(|_| NatJournalEntry {
                nid: r.u32(),
                entry: NatEntry::decode(&mut r),
            })
            .collect())
    }

    pub fn sit_entries(&self) -> Result<Vec<SitJournalEntry>, String> {
        let n = self.checked_count(SIT_JOURNAL_ENTRIES, "SIT")?;
        let mut r = Reader::new(&self.body);
        Ok((0..n)
            .map(|_| SitJournalEntry {
                segno: r.u32(),
                entry: SitEntry::decode(&mut r),
            })
            .collect())
    }

    fn checked_count(&self, max: usize, kind: &str) -> Result<usize, String> {
        let n = self.count as usize;
        if n > max {
            return Err(format!(
                "{kind} journal holds {n} entries, at most {max} fit"
            ));
        }
        Ok(n)
    }

    pub fn decode(r: &mut Reader) -> Journal {
        Journal {
            count: r.u16(),
            body: r.vec(SUM_JOURNAL_SIZE - 2),
        }
    }

    pub fn encode(&self, w: &mut Writer) {
        w.u16(self.count);
        w.padded(&self.body, SUM_JOURNAL_SIZE - 2);
    }
}

/// A full summary block (`struct f2fs_summary_block`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SummaryBlock {
    pub entries: Vec<Summary>,
    pub journal: Journal,
    /// `SUM_TYPE_DATA` or `SUM_TYPE_NODE`.
    pub entry_type: u8,
    pub check_sum: u32,
}

impl SummaryBlock {
    /// An empty summary of the given type.
    pub fn new(entry_type: u8) -> SummaryBlock {
        SummaryBlock {
            entries: vec![Summary::default(); ENTRIES_IN_SUM],
            journal: Journal::default(),
            entry_type,
            check_sum: 0,
        }
    }

    pub fn decode(block: &Block) -> SummaryBlock {
        let mut r = Reader::new(block);
        SummaryBlock {
            entries: (0..ENTRIES_IN_SUM)
                .map(|_| Summary::decode(&mut r))
                .collect(),
            journal: Journal::decode(&mut r),
            entry_type: r.u8(),
            check_sum: r.u32(),
        }
    }

    pub fn encode(&self) -> Box<Block> {
        let mut block = zero_block();
        let mut w = Writer::new(&mut block[..]);
        for i in 0..ENTRIES_IN_SUM {
            self.entries
                .get(i)
                .copied()
                .unwrap_or_default()
                .encode(&mut w);
        }
        self.journal.encode(&mut w);
        w.u8(self.entry_type);
        w.u32(self.check_sum);
        block
    }
}

/// The three data logs' summaries packed behind the NAT and SIT journals
/// (`CP_COMPACT_SUM_FLAG`; f2fs-tools `read_compacted_summaries`): entries run on
/// from byte 1014 and continue in the next block once fewer than 7 bytes remain before the
/// 5-byte footer space.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompactSummaries {
    pub nat_journal: Journal,
    pub sit_journal: Journal,
    /// Summaries of the hot, warm and cold data logs, as many as each log's `blkoff`.
    pub data: [Vec<Summary>; NR_CURSEG_DATA_TYPE],
}

/// Where the compact entries start: after the two journals.
const COMPACT_ENTRIES_START: usize = 2 * SUM_JOURNAL_SIZE;

impl CompactSummaries {
    /// Blocks needed for `entries` data summaries (`f2fs_npages_for_summary_flush`).
    pub fn blocks_for(entries: usize) -> usize {
        let first = (BLOCK_SIZE - COMPACT_ENTRIES_START - SUM_FOOTER_SIZE) / SUMMARY_SIZE;
        let later = (BLOCK_SIZE - SUM_FOOTER_SIZE) / SUMMARY_SIZE;
        1 + entries.saturating_sub(first).div_ceil(later)
    }

    pub fn encode(&self) -> Vec<Box<Block>> {
        let total: usize = self.data.iter().map(Vec::len).sum();
        let mut blocks: Vec<Box<Block>> =
            (0..Self::blocks_for(total)).map(|_| zero_block()).collect();
        let mut w = Writer::new(&mut blocks[0][..]);
        self.nat_journal.encode(&mut w);
        self.sit_journal.encode(&mut w);
        let mut cursor = (0, COMPACT_ENTRIES_START);
        for s in self.data.iter().flatten() {
            if let Some(block) = blocks.get_mut(cursor.0) {
                s.encode(&mut Writer::at(&mut block[..], cursor.1));
            }
            cursor = next_compact_slot(cursor);
        }
        blocks
    }

    /// Decodes from the compact blocks, with `counts[i]` entries for data log `i`.
    pub fn decode(blocks: &[Block], counts: [usize; NR_CURSEG_DATA_TYPE]) -> CompactSummaries {
        let empty = [0u8; BLOCK_SIZE];
        let first = blocks.first().unwrap_or(&empty);
        let mut r = Reader::new(first);
        let mut out = CompactSummaries {
            nat_journal: Journal::decode(&mut r),
            sit_journal: Journal::decode(&mut r),
            data: Default::default(),
        };
        let mut cursor = (0, COMPACT_ENTRIES_START);
        for (log, &count) in counts.iter().enumerate() {
            for _ in 0..count.min(ENTRIES_IN_SUM) {
                let block = blocks.get(cursor.0).unwrap_or(&empty);
                out.data[log].push(Summary::decode(&mut Reader::at(block, cursor.1)));
                cursor = next_compact_slot(cursor);
            }
        }
        out
    }
}

fn next_compact_slot((block, offset): (usize, usize)) -> (usize, usize) {
    let next = offset + SUMMARY_SIZE;
    if next + SUMMARY_SIZE <= BLOCK_SIZE - SUM_FOOTER_SIZE {
        (block, next)
    } else {
        (block + 1, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_block_layout() {
        let mut b = SummaryBlock::new(SUM_TYPE_NODE);
        b.entries[0] = Summary {
            nid: 3,
            version: 0,
            ofs_in_node: 0,
        };
        let raw = b.encode();
        assert_eq!(raw[4091], SUM_TYPE_NODE, "footer entry_type at 4091");
        assert_eq!(&raw[..7], &[3, 0, 0, 0, 0, 0, 0]);
        assert_eq!(SummaryBlock::decode(&raw), b);
        assert_eq!((NAT_JOURNAL_ENTRIES, SIT_JOURNAL_ENTRIES), (38, 6));
    }

    #[test]
    fn compact_summaries_span_blocks() {
        assert_eq!(CompactSummaries::blocks_for(0), 1);
        assert_eq!(CompactSummaries::blocks_for(439), 1);
        assert_eq!(CompactSummaries::blocks_for(440), 2);
        assert_eq!(CompactSummaries::blocks_for(439 + 584 + 1), 3);
        let sum = |nid| Summary {
            nid,
            version: 1,
            ofs_in_node: 2,
        };
        let c = CompactSummaries {
            nat_journal: Journal::nat(&[NatJournalEntry {
                nid: 3,
                entry: NatEntry {
                    version: 0,
                    ino: 3,
                    block_addr: 99,
                },
            }]),
            sit_journal: Journal::sit(&[]),
            data: [
                (0..300).map(sum).collect(),
                (0..200).map(sum).collect(),
                vec![],
            ],
        };
        let blocks: Vec<Block> = c.encode().into_iter().map(|b| *b).collect();
        assert_eq!(blocks.len(), 2);
        assert_eq!(CompactSummaries::decode(&blocks, [300, 200, 0]), c);
        assert_eq!(c.nat_journal.nat_entries().unwrap()[0].entry.block_addr, 99);
    }
}
