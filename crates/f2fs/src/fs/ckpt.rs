//! Checkpoints (`f2fs_write_checkpoint`): dirty nodes to their logs, dirty NAT and SIT
//! blocks to their other copies (flipping the version bitmap bits), the current node
//! summaries to the SSA, then a new pack in the other CP segment, header and payload and
//! summaries first, a flush, and the footer last, so a torn pack is never taken.

use flashstack_block::BlockDevice;

use super::{BlockKind, F2fs, FsError};
use crate::checkpoint::{Checkpoint, OrphanBlock};
use crate::codec::{set_bit_msb, test_bit_msb, Block};
use crate::consts::*;
use crate::layout::{CURSEG_COLD_DATA, CURSEG_HOT_DATA};
use crate::nat::nat_block_addr;
use crate::sit::SitBlock;
use crate::summary::{Journal, NatJournalEntry, SitJournalEntry, SummaryBlock};

impl<D: BlockDevice> F2fs<D> {
    /// Writes a checkpoint; `unmount` marks it clean (`CP_UMOUNT_FLAG`, node summaries
    /// in the pack).
    pub(crate) fn checkpoint(&mut self, unmount: bool) -> Result<(), FsError> {
        // MedFS DCM: pseudo-file pages before the nodes that point at them.
        self.dcm_flush_all()?;
        self.flush_nodes()?;
        self.flush_nat()?;
        self.flush_sit()?;
        self.write_pack(unmount)?;
        self.discard_prefree()?;
        self.since_cp = Default::default();
        let released = std::mem::take(&mut self.nat.released);
        self.nat.free.extend(released);
        self.metrics.checkpoints += 1;
        self.clock.last_checkpoint_ns = self.now_ns;
        self.shrink_caches();
        Ok(())
    }

    /// Segments emptied before this checkpoint are free now; they are discarded (TRIM on
    /// the block interface), as the kernel does after a checkpoint with `discard` on.
    fn discard_prefree(&mut self) -> Result<(), FsError> {
        let freed = std::mem::take(&mut self.segs.prefree);
        self.segs.free_changed();
        if !self.cfg.discard {
            return Ok(());
        }
        for segno in freed {
            let start = self.sb.main_blkaddr as u64 + segno as u64 * BLOCKS_PER_SEG as u64;
            let done = self
                .dev
                .trim(self.now_ns, start, BLOCKS_PER_SEG)
                .map_err(crate::F2fsError::from)?;
            self.now_ns = done.complete_ns;
            self.metrics.discarded_blocks += BLOCKS_PER_SEG as u64;
        }
        Ok(())
    }

    fn flush_nodes(&mut self) -> Result<(), FsError> {
        let dirty: Vec<u32> = self.dirty_nodes.iter().copied().collect();
        for nid in dirty {
            self.write_node(nid, BlockKind::Node, 0)?;
        }
        Ok(())
    }

    /// Dirty NAT entries go to the journal while it has room for them besides what it
    /// holds (`__has_cursum_space`); otherwise the journal is emptied into the area and
    /// every block with a changed entry is written to its other copy.
    fn flush_nat(&mut self) -> Result<(), FsError> {
        let dirty = std::mem::take(&mut self.nat.dirty_nids);
        let dirty_blocks = std::mem::take(&mut self.nat.dirty);
        if self.nat.journal.len() + dirty.len() <= NAT_JOURNAL_ENTRIES {
            for nid in dirty {
                let entry = self.nat_get(nid)?;
                self.nat.journal.insert(nid, entry);
            }
            return Ok(());
        }
        let mut blocks: std::collections::BTreeSet<u32> = dirty_blocks;
        blocks.extend(
            self.nat
                .journal
                .keys()
                .map(|&nid| nid / NAT_ENTRY_PER_BLOCK),
        );
        for index in blocks {
            self.nat_load(index * NAT_ENTRY_PER_BLOCK)?;
            let raw = self.nat.blocks[&index].encode();
            let second = !crate::checkpoint::nat_block_in_second_copy(&self.nat_bitmap, index);
            let addr = nat_block_addr(self.sb.nat_blkaddr, index, second);
            self.write_blocks(addr, &raw[..], None, BlockKind::Nat)?;
            flip_bit(&mut self.nat_bitmap, index as usize);
        }
        self.nat.journal.clear();
        Ok(())
    }

    /// As for the NAT: dirty SIT entries ride in the journal while it has room (6), else
    /// every SIT block with a changed entry goes to its other copy.
    fn flush_sit(&mut self) -> Result<(), FsError> {
        let dirty = std::mem::take(&mut self.segs.dirty);
        // What this checkpoint records becomes the checkpointed map: blocks freed before
        // it are free for SSR once it is written (nothing allocates until then).
        for &segno in &dirty {
            self.segs.info[segno as usize].checkpointed();
        }
        if self.segs.journal.len() + dirty.len() <= SIT_JOURNAL_ENTRIES {
            self.segs.journal.extend(dirty);
            return Ok(());
        }
        let segs = std::mem::take(&mut self.segs.journal);
        let blocks: std::collections::BTreeSet<u32> = dirty
            .union(&segs)
            .map(|s| s / SIT_ENTRY_PER_BLOCK)
            .collect();
        for index in blocks {
            let first = (index * SIT_ENTRY_PER_BLOCK) as usize;
            let last = (first + SIT_ENTRY_PER_BLOCK as usize).min(self.segs.info.len());
            let block = SitBlock {
                entries: self.segs.info[first..last]
                    .iter()
                    .map(|s| s.to_entry())
                    .collect(),
            };
            let second = !test_bit_msb(&self.sit_bitmap, index as usize);
            let addr = self.sit_addr(index, Some(second));
            self.write_blocks(addr, &block.encode()[..], None, BlockKind::Sit)?;
            flip_bit(&mut self.sit_bitmap, index as usize);
        }
        Ok(())
    }

    fn write_pack(&mut self, unmount: bool) -> Result<(), FsError> {
        let cp = self.next_checkpoint(unmount);
        let pack = if self.cp_pack == 1 { 2 } else { 1 };
        let start = self.pack_start(pack);
        let mut body: Vec<u8> = Vec::new();
        body.extend_from_slice(&cp.encode()[..]);
        body.extend_from_slice(&self.sit_payload());
        for block in self.orphan_blocks() {
            body.extend_from_slice(&block[..]);
        }
        for log in 0..NR_CURSEG_DATA_TYPE {
            body.extend_from_slice(&self.pack_summary(log)[..]);
        }
        if unmount {
            for log in NR_CURSEG_DATA_TYPE..NR_CURSEG_TYPE {
                body.extend_from_slice(&self.pack_summary(log)[..]);
            }
        }
        self.write_blocks(start, &body, None, BlockKind::Checkpoint)?;
        self.flush_device()?;
        let footer_at = start + cp.cp_pack_total_block_count as u64 - 1;
        self.write_blocks(footer_at, &cp.encode()[..], None, BlockKind::Checkpoint)?;
        self.flush_device()?;
        self.set_checkpoint(cp, pack);
        self.user_blocks_next = None;
        Ok(())
    }

    fn pack_summary(&self, log: usize) -> Box<Block> {
        let mut sum: SummaryBlock = self.segs.logs[log].sum.clone();
        // The hot data summary carries the NAT journal, the cold data one the SIT journal.
        sum.journal = match log {
            CURSEG_HOT_DATA => Journal::nat(
                &self
                    .nat
                    .journal
                    .iter()
                    .map(|(&nid, &entry)| NatJournalEntry { nid, entry })
                    .collect::<Vec<_>>(),
            ),
            CURSEG_COLD_DATA => Journal::sit(
                &self
                    .segs
                    .journal
                    .iter()
                    .map(|&segno| SitJournalEntry {
                        segno,
                        entry: self.segs.info[segno as usize].to_entry(),
                    })
                    .collect::<Vec<_>>(),
            ),
            _ => Default::default(),
        };
        sum.encode()
    }

    fn orphan_blocks(&self) -> Vec<Box<Block>> {
        let inos: Vec<u32> = self.orphans.iter().copied().collect();
        let chunks: Vec<&[u32]> = inos.chunks(ORPHANS_PER_BLOCK).collect();
        let count = chunks.len() as u16;
        chunks
            .iter()
            .enumerate()
            .map(|(i, chunk)| {
                OrphanBlock {
                    inos: chunk.to_vec(),
                    blk_addr: i as u16 + 1,
                    blk_count: count,
                    entry_count: chunk.len() as u32,
                    check_sum: 0,
                }
                .encode()
            })
            .collect()
    }

    /// The SIT version bitmap in CP payload blocks (large volumes only).
    fn sit_payload(&self) -> Vec<u8> {
        let blocks = self.sb.cp_payload as usize;
        let mut out = vec![0u8; blocks * BLOCK_SIZE];
        if blocks > 0 {
            let n = self.sit_bitmap.len().min(out.len());
            out[..n].copy_from_slice(&self.sit_bitmap[..n]);
        }
        out
    }

    fn next_checkpoint(&self, unmount: bool) -> Checkpoint {
        let mut cp = self.cp.clone();
        let orphan_blocks = self.orphans.len().div_ceil(ORPHANS_PER_BLOCK) as u32;
        cp.checkpoint_ver = self.cp.checkpoint_ver.wrapping_add(1);
        if let Some(user_blocks) = self.user_blocks_next {
            cp.user_block_count = user_blocks;
        }
        cp.valid_block_count = self.used_blocks();
        cp.free_segment_count = self.segs.empty_segments();
        for i in 0..NR_CURSEG_DATA_TYPE {
            let (d, n) = (&self.segs.logs[i], &self.segs.logs[i + NR_CURSEG_DATA_TYPE]);
            cp.cur_data_segno[i] = d.segno;
            cp.cur_data_blkoff[i] = d.blkoff;
            cp.cur_node_segno[i] = n.segno;
            cp.cur_node_blkoff[i] = n.blkoff;
        }
        cp.alloc_type = [ALLOC_LFS; MAX_ACTIVE_LOGS];
        for (log, l) in self.segs.logs.iter().enumerate() {
            if l.ssr {
                cp.alloc_type[log] = ALLOC_SSR;
            }
        }
        cp.ckpt_flags = CP_CRC_RECOVERY_FLAG
            | if unmount { CP_UMOUNT_FLAG } else { 0 }
            | if orphan_blocks > 0 {
                CP_ORPHAN_PRESENT_FLAG
            } else {
                0
            };
        let summaries = if unmount {
            NR_CURSEG_TYPE
        } else {
            NR_CURSEG_DATA_TYPE
        } as u32;
        cp.cp_pack_start_sum = 1 + self.sb.cp_payload + orphan_blocks;
        cp.cp_pack_total_block_count = cp.cp_pack_start_sum + summaries + 1;
        cp.valid_node_count = self.valid_node_count;
        cp.valid_inode_count = self.valid_inode_count;
        cp.next_free_nid = self.nat.free.first().copied().unwrap_or(cp.next_free_nid);
        cp.elapsed_time = cp.elapsed_time.max(self.clock.mtime_secs(self.now_ns));
        cp.checksum_offset = CP_CHKSUM_OFFSET;
        cp.tail = self.bitmap_tail();
        cp
    }

    /// Bytes 192.. of the CP block: the SIT bitmap (unless in the payload), then the NAT
    /// bitmap.
    fn bitmap_tail(&self) -> Vec<u8> {
        // Room up to the CRC word; mount checked both sizes against the geometry, the
        // bounds only keep an inconsistent image from panicking.
        let room = CP_CHKSUM_OFFSET as usize - CP_BITMAP_OFFSET;
        let mut tail = vec![0u8; BLOCK_SIZE - CP_BITMAP_OFFSET];
        let mut at = 0;
        if self.sb.cp_payload == 0 {
            let n = self.sit_bitmap.len().min(room);
            tail[..n].copy_from_slice(&self.sit_bitmap[..n]);
            at = n;
        }
        let n = self.nat_bitmap.len().min(room - at);
        tail[at..at + n].copy_from_slice(&self.nat_bitmap[..n]);
        tail
    }
}

fn flip_bit(map: &mut [u8], nr: usize) {
    if test_bit_msb(map, nr) {
        if let Some(b) = map.get_mut(nr / 8) {
            *b &= !(0x80 >> (nr % 8));
        }
    } else {
        set_bit_msb(map, nr);
    }
}
