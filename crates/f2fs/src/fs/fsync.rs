//! The fsync path (`f2fs_do_sync_file`): a file's dirty direct nodes and inode go to the
//! warm node log, the last one carrying the fsync mark (and the dentry mark for a file
//! created since the last checkpoint), then a device flush; no checkpoint. Where roll-
//! forward could not rebuild the state (the kernel's `cp_reason`s, and a few cases this
//! version keeps simple) a checkpoint is taken instead.
//!
//! Roll-forward recovery (`f2fs_recover_fsync_data`) runs at every mount: it follows the warm node log's chain of nodes written after
//! that checkpoint (their footer carries its version and CRC), and replays every inode
//! with an fsync-marked node: inode fields, inline data and each data address of its
//! direct nodes (and a MedFS DCM owner's carried pseudo-file addresses,
//! `delta/carry.rs`), without taking a block in any log; then every log moves to a fresh
//! segment, new files get their dentry (which may write a dentry block), and it
//! checkpoints.

use std::collections::{BTreeMap, BTreeSet};

use flashstack_block::BlockDevice;

use super::data::{ADDR_WORD, NID_WORD, OFF_BLOCKS, OFF_SIZE};
use super::{corrupt, put_word, word, BlockKind, F2fs, FsError};
use crate::codec::Block;
use crate::consts::*;
use crate::layout::*;
use crate::node::{Inode, NodeFooter, NodeKind};
use crate::summary::{Summary, SummaryBlock};

/// What the current session changed since the last checkpoint that decides between
/// roll-forward and a checkpoint at fsync.
#[derive(Clone, Debug, Default)]
pub(crate) struct SinceCheckpoint {
    /// Nodes allocated (a parent among them is not on disk yet: `CP_NODE_NEED_CP`).
    pub new_nodes: BTreeSet<u32>,
    /// Inodes renamed (`CP_WRONG_PINO`), linked or unlinked, or shrunk by truncate.
    pub moved_or_shrunk: BTreeSet<u32>,
    /// Directories that lost a name (a new file's dentry could collide on replay).
    pub dirs_lost_names: BTreeSet<u32>,
    /// Inodes fsync'd by roll-forward (unlinking or renaming one checkpoints).
    pub fsynced: BTreeSet<u32>,
    /// MedFS DCM: pages of each pseudo file written since the checkpoint that no owner's
    /// fsync has carried yet (`delta/carry.rs`).
    pub dcm_uncarried: BTreeMap<u32, BTreeSet<u32>>,
}

impl<D: BlockDevice> F2fs<D> {
    /// Makes a file's data and metadata durable (see the module doc); times changed
    /// lazily make the inode dirty first (`vfs_fsync_range` does so for `I_DIRTY_TIME`).
    pub fn fsync(&mut self, ino: u32) -> Result<(), FsError> {
        self.timed("fsync", |fs| {
            if fs.lazy_times.remove(&ino) {
                fs.dirty_nodes.insert(ino);
            }
            fs.fsync_op(ino)
        })
    }

    pub(crate) fn fsync_op(&mut self, ino: u32) -> Result<(), FsError> {
        self.metrics.fsyncs += 1;
        if self.fsync_needs_checkpoint(ino)? || self.dcm_fsync_needs_checkpoint(ino)? {
            return self.checkpoint(false);
        }
        // MedFS DCM: the pseudo file's pages go ahead of the nodes, and the inode carries
        // their addresses (`delta/carry.rs`).
        let carried = self.dcm_before_fsync(ino)?;
        let mut nids: Vec<u32> = self
            .dirty_nodes
            .iter()
            .copied()
            .filter(|&n| n != ino)
            .collect();
        nids.retain(|&n| {
            self.nodes.get(&n).is_some_and(|b| {
                let f = NodeFooter::decode(b);
                f.ino == ino && f.kind() == NodeKind::Direct
            })
        });
        if carried.is_some() || self.dirty_nodes.contains(&ino) || nids.is_empty() {
            self.dirty_nodes.insert(ino);
            nids.push(ino);
        }
        if self.gc_moved_unflushed {
            // A flush ahead of the nodes (a PREFLUSH on their writes): cleaning's copies
            // are durable before any node that points at them can be.
            self.flush_device()?;
        }
        let dent = self.since_cp.new_nodes.contains(&ino);
        let last = nids.len() - 1;
        for (i, nid) in nids.into_iter().enumerate() {
            let marks = if i == last {
                1 << FSYNC_BIT_SHIFT | u32::from(dent) << DENT_BIT_SHIFT
            } else {
                0
            };
            let carry = carried.as_ref().filter(|_| nid == ino).map(|c| &c.1[..]);
            self.write_node_carrying(nid, BlockKind::Node, marks, carry)?;
        }
        if let Some((pseudo, _)) = carried {
            self.since_cp.dcm_uncarried.remove(&pseudo);
        }
        self.since_cp.fsynced.insert(ino);
        self.flush_device()
    }

    /// As [`F2fs::fsync`], but times changed lazily do not make the inode dirty (the
    /// kernel's fdatasync leaves `I_DIRTY_TIME` alone); the inode is still written when
    /// nothing else of the file is (as `fsync_op` always writes one node).
    pub fn fdatasync(&mut self, ino: u32) -> Result<(), FsError> {
        self.timed("fsync", |fs| fs.fsync_op(ino))
    }

    /// The cases where replaying the warm node chain could not rebuild the file.
    fn fsync_needs_checkpoint(&mut self, ino: u32) -> Result<bool, FsError> {
        // Four fields read in place: every fsync asks, and decoding the whole inode (its
        // 923 address slots) was most of the cost.
        let node = self.node(ino)?;
        let regular = u16::from_le_bytes([node[0], node[1]]) & S_IFMT == S_IFREG;
        let links = crate::codec::le32_at(&node[..], super::data::OFF_LINKS);
        let flags = crate::codec::le32_at(&node[..], super::delta::OFF_FLAGS);
        let pino = crate::codec::le32_at(&node[..], super::delta::OFF_PINO);
        let s = &self.since_cp;
        let new = s.new_nodes.contains(&ino);
        // `CP_COMPRESSED`: roll-forward does not replay a compressed file's clusters.
        let compressed = flags & super::pagemap::COMPR_FL != 0;
        Ok(!regular
            || compressed
            || links != 1
            || s.moved_or_shrunk.contains(&ino)
            || s.new_nodes.contains(&pino)
            || (new && s.dirs_lost_names.contains(&pino)))
    }

    /// Checkpoints after a namespace change to an inode fsync'd since the last one, so
    /// replay never resurrects or duplicates it.
    pub(crate) fn settle_fsynced(&mut self, ino: u32) -> Result<(), FsError> {
        if self.since_cp.fsynced.contains(&ino) {
            self.checkpoint(false)?;
        }
        Ok(())
    }

    /// Roll-forward recovery; returns the number of inodes replayed.
    pub(crate) fn recover(&mut self) -> Result<usize, FsError> {
        // Also after an unmount checkpoint: a later session may have fsync'd and lost
        // power before checkpointing.
        let chain = self.read_chain()?;
        let last_fsync = replayable_fsyncs(&chain);
        if last_fsync.is_empty() {
            return Ok(0);
        }
        self.nat.taken.extend(last_fsync.keys().copied());
        for ino in last_fsync.keys() {
            self.nat_load(*ino)?;
        }
        let replayed: Vec<(&Block, NodeFooter)> = chain
            .iter()
            .enumerate()
            .map(|(i, (_, block))| (&**block, NodeFooter::decode(block), i))
            .filter(|(_, f, i)| last_fsync.get(&f.ino).is_some_and(|&last| *i <= last))
            .map(|(b, f, _)| (b, f))
            .collect();
        // The fsync'd data and nodes lie right after the checkpointed log positions (or in
        // segments the checkpoint still counts as free), exactly where the next block of
        // each log would go. So nothing may take a block in any log until every address
        // the chain names is valid again and the logs have moved past them: the kernel
        // only dirties pages while it replays and writes them at its closing checkpoint,
        // after `f2fs_allocate_new_segments`. Here dentry blocks are written at once, so
        // the new files' dentries are added after the move.
        self.dcm_forget_for_replay()?;
        self.rolling_forward = true;
        let replay = self.replay_addresses(&replayed);
        self.rolling_forward = false;
        let dentries = replay?;
        self.dcm_forget_for_replay()?;
        for (ino, zone) in std::mem::take(&mut self.delta_state.replay_zones) {
            self.install_zone(ino, &zone)?;
        }
        for log in 0..NR_CURSEG_TYPE {
            self.move_log_to_fresh_segment(log)?;
        }
        for (ino, inode) in &dentries {
            self.replay_dentry(*ino, inode)?;
        }
        self.checkpoint(false)?;
        Ok(last_fsync.len())
    }

    /// Replays inode fields and data addresses of the chain's fsync'd nodes without
    /// taking a block in any log; returns the new files whose dentry is to be recovered
    /// (the last dentry-marked copy of each inode, `last_dentry`, in chain order).
    fn replay_addresses(
        &mut self,
        replayed: &[(&Block, NodeFooter)],
    ) -> Result<Vec<(u32, Inode)>, FsError> {
        let mut dentries: Vec<(u32, Inode)> = Vec::new();
        // Inodes first (new ones must exist before their direct nodes), then addresses.
        for (block, f) in replayed {
            if f.kind() == NodeKind::Inode && self.replay_inode(block, f)? {
                dentries.retain(|(ino, _)| *ino != f.ino);
                dentries.push((f.ino, Inode::decode(block)));
            }
        }
        for (block, f) in replayed {
            self.replay_node(block, f)?;
        }
        Ok(dentries)
    }

    /// The warm node log's chain of nodes written after the current checkpoint.
    pub(super) fn read_chain(&mut self) -> Result<Vec<(u32, Box<Block>)>, FsError> {
        let version = self.cp_version_for_nodes();
        let mut addr = self.segs.next_blkaddr(CURSEG_WARM_NODE);
        let limit = self.segs.info.len() * BLOCKS_PER_SEG as usize;
        let mut chain = Vec::new();
        let mut seen = BTreeSet::new();
        while chain.len() < limit && self.in_main(addr) && seen.insert(addr) {
            let block = self.read_block(addr as u64)?;
            let f = NodeFooter::decode(&block);
            if f.cp_ver != version || f.nid == 0 {
                break;
            }
            let next = f.next_blkaddr;
            chain.push((addr, block));
            addr = next;
        }
        Ok(chain)
    }

    fn replay_node(&mut self, block: &Block, f: &NodeFooter) -> Result<(), FsError> {
        let ino = f.ino;
        if self.nat_get(ino)?.block_addr == NULL_ADDR {
            return Ok(());
        }
        if f.kind() == NodeKind::Inode {
            let inode = Inode::decode(block);
            if inode.inline & (F2FS_INLINE_DATA | F2FS_INLINE_DENTRY) != 0 {
                return Ok(());
            }
            let geo = self.geometry(ino)?;
            // Slots of the copy's delta zone hold no pointers: the file has no page there.
            let zone = self.zone_of_copy(ino, block, &geo)?;
            let pointers = geo.addrs - zone.map_or(0, |z| z.words());
            for i in 0..geo.addrs {
                let dest = match i < pointers {
                    true => word(block, ADDR_WORD + geo.extra + i),
                    false => NULL_ADDR,
                };
                self.replay_addr(ino, i as u64, dest)?;
            }
            return self.replay_carried(ino, block);
        }
        if f.kind() != NodeKind::Direct {
            return Ok(());
        }
        let base = start_block_of_node(f.offset(), self.geometry(ino)?.addrs);
        for i in 0..ADDRS_PER_BLOCK {
            self.replay_addr(ino, base + i as u64, word(block, i))?;
        }
        Ok(())
    }

    /// Inode fields from the fsync'd copy; the address tree stays the checkpointed one
    /// (addresses are replayed one by one). A new inode is created; returns whether its
    /// dentry is to be recovered (the copy carries the dentry mark), which the caller
    /// does once the logs have moved (adding a name may write a dentry block).
    fn replay_inode(&mut self, block: &Block, f: &NodeFooter) -> Result<bool, FsError> {
        let ino = f.ino;
        let exists = self.nat_get(ino)?.block_addr != NULL_ADDR;
        if !exists && !f.is_dent() {
            // Without its dentry a new inode would be unreachable: nothing to replay.
            return Ok(false);
        }
        if !exists {
            self.new_node(ino, ino, 0, f.is_cold())?;
            self.valid_inode_count += 1;
        }
        let mut current = self.node(ino)?.clone();
        let mut merged: Box<Block> = Box::new(*block);
        let fsynced = Inode::decode(block);
        let inline = fsynced.inline & (F2FS_INLINE_DATA | F2FS_INLINE_DENTRY) != 0;
        self.delta_state.replay_zones.remove(&ino);
        // Converted from inline data since the checkpoint: the checkpointed address slots
        // hold the inline bytes, not addresses. They start empty, as for a new inode
        // (`f2fs_recover_inline_data` truncates the inline area).
        let was_inline = Inode::decode(&current).inline & F2FS_INLINE_DATA != 0;
        if !inline {
            // Delta zones are no pointers: the current one goes, the copy's comes back
            // once the addresses are replayed (`install_zone`).
            let geo = self.geometry_of(ino, block)?;
            if let Some(zone) = self.zone_of_copy(ino, block, &geo)? {
                self.delta_state.replay_zones.insert(ino, zone);
            }
            // (A file that was inline has no zone: its slots are not copied below.)
            if exists && !was_inline {
                let cur_geo = self.geometry_of(ino, &current)?;
                self.strip_zone(ino, &mut current, &cur_geo)?;
            }
            super::delta::clear_zone_flag(&mut merged);
            let start = INODE_ADDR_OFFSET;
            let geo_words = ADDRS_PER_INODE + INODE_NIDS;
            if exists && !was_inline {
                merged[start..start + 4 * geo_words]
                    .copy_from_slice(&current[start..start + 4 * geo_words]);
                // The inline xattrs are the fsync'd copy's (`recover_inline_xattr`).
                let flexible = self.sb.feature.contains(FEATURE_FLEXIBLE_INLINE_XATTR);
                let xattr = 4 * fsynced.inline_xattr_words(flexible);
                let at = start + 4 * ADDRS_PER_INODE - xattr;
                merged[at..at + xattr].copy_from_slice(&block[at..at + xattr]);
            } else {
                let flexible = self.sb.feature.contains(FEATURE_FLEXIBLE_INLINE_XATTR);
                let extra = fsynced.extra_words();
                let addrs =
                    ADDRS_PER_INODE.saturating_sub(extra + fsynced.inline_xattr_words(flexible));
                merged[start + 4 * extra..start + 4 * (extra + addrs)].fill(0);
                for k in 0..INODE_NIDS {
                    put_word(&mut merged, NID_WORD + k, 0);
                }
            }
        }
        let blocks = if exists {
            super::le64_at(&current, OFF_BLOCKS)
        } else {
            1
        };
        super::put_le64_at(&mut merged, OFF_BLOCKS, blocks);
        NodeFooter {
            cp_ver: 0,
            next_blkaddr: 0,
            flag: f.flag & !(1 << FSYNC_BIT_SHIFT | 1 << DENT_BIT_SHIFT),
            ..*f
        }
        .encode(&mut merged);
        self.put_node(ino, merged);
        if !inline {
            let size = super::le64_at(block, OFF_SIZE);
            self.free_blocks_from(ino, size.div_ceil(BLOCK_SIZE as u64))?;
        }
        Ok(f.is_dent())
    }

    fn replay_dentry(&mut self, ino: u32, inode: &Inode) -> Result<(), FsError> {
        let name = inode.file_name().to_vec();
        let parent = inode.pino;
        if name.is_empty() || self.nat_get(parent)?.block_addr == NULL_ADDR {
            return Err(corrupt(format!(
                "replay: inode {ino} has no usable name/parent"
            )));
        }
        if self.find_entry(parent, &name)?.is_none() {
            self.add_entry(parent, &name, ino, FT_REG_FILE)?;
        }
        Ok(())
    }

    /// Rewrites one SSA entry (in a current log's summary, or in the SSA block).
    pub(super) fn set_summary(&mut self, blkaddr: u32, sum: Summary) -> Result<(), FsError> {
        let (segno, off) = self
            .segs
            .segno_of(blkaddr)
            .ok_or_else(|| corrupt("summary outside the main area"))?;
        if let Some(log) = self.segs.logs.iter_mut().find(|l| l.segno == segno) {
            log.sum.entries[off as usize] = sum;
            return Ok(());
        }
        let at = self.sb.ssa_blkaddr as u64 + segno as u64;
        let mut block = SummaryBlock::decode(&*self.read_block(at)?);
        block.entries[off as usize] = sum;
        block.entry_type = SUM_TYPE_DATA;
        self.write_blocks(at, &block.encode()[..], None, BlockKind::Ssa)
    }

    /// Moves a log to a fresh segment (`f2fs_allocate_new_segments`), so nothing written
    /// after recovery can land on blocks the replayed chain left behind.
    fn move_log_to_fresh_segment(&mut self, log: usize) -> Result<(), FsError> {
        let (segno, sum) = self.segs.switch(log).ok_or(FsError::NoSpace)?;
        let at = self.sb.ssa_blkaddr as u64 + segno as u64;
        self.write_blocks(at, &sum.encode()[..], None, BlockKind::Ssa)
    }
}

/// For each inode with an fsync-marked node in `chain`, the index of the last such node
/// to replay. A MedFS DCM pseudo file's copy (fsync-marked ahead of its owner's nodes by
/// the owner's fsync, `dcm_before_fsync`, when the owner's inode has no room to carry its
/// addresses) counts only if the owner's fsync mark follows
/// it: a cut between the two leaves the owner checkpointed, and its deltas must stay the
/// checkpointed ones too (the fsync did not complete, and a delta may have been made
/// against a base the checkpointed owner does not point at).
pub(super) fn replayable_fsyncs(chain: &[(u32, Box<Block>)]) -> BTreeMap<u32, usize> {
    use super::delta::{MEDFS_PSEUDO_FL, OFF_FLAGS, OFF_PINO};
    use crate::codec::le32_at;
    let mut last_fsync: BTreeMap<u32, usize> = BTreeMap::new();
    // By owner: its pseudo file's fsync'd copies waiting for its mark (pseudo, index).
    let mut waiting: BTreeMap<u32, Vec<(u32, usize)>> = BTreeMap::new();
    for (i, (_, block)) in chain.iter().enumerate() {
        let f = NodeFooter::decode(block);
        if !f.is_fsync() {
            continue;
        }
        if f.kind() == NodeKind::Inode && le32_at(&block[..], OFF_FLAGS) & MEDFS_PSEUDO_FL != 0 {
            let owner = le32_at(&block[..], OFF_PINO);
            waiting.entry(owner).or_default().push((f.ino, i));
            continue;
        }
        last_fsync.insert(f.ino, i);
        for (pseudo, at) in waiting.remove(&f.ino).unwrap_or_default() {
            last_fsync.insert(pseudo, at);
        }
    }
    last_fsync
}

/// First file block a direct node at tree offset `offset` maps (`start_bidx_of_node`).
fn start_block_of_node(offset: u32, addrs_per_inode: usize) -> u64 {
    let n = NIDS_PER_BLOCK as u64;
    let ofs = offset as u64;
    let indirect_blocks = 2 * n + 4;
    let index = if ofs <= 2 {
        ofs.saturating_sub(1)
    } else if ofs <= indirect_blocks {
        ofs - 2 - (ofs - 4) / (n + 1)
    } else {
        ofs - 5 - (ofs - indirect_blocks - 3) / (n + 1)
    };
    index * ADDRS_PER_BLOCK as u64 + addrs_per_inode as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::data::node_path;
    use crate::fs::WriteHint;
    use crate::{mkfs, MemDevice, MkfsOptions};

    /// A block replayed into a log's current segment that was still empty at the
    /// checkpoint (recovery had just moved the logs) leaves the segment typed as that
    /// log, not as the file's temperature after the cut (`FI_HOT_DATA` is not on disk).
    #[test]
    fn replay_into_an_empty_current_segment_keeps_its_type() {
        let mut dev = MemDevice::new(128 << 20);
        mkfs(&mut dev, &MkfsOptions::default()).unwrap();
        let mut fs = F2fs::mount(dev).unwrap();
        let ino = fs.create("/a").unwrap();
        fs.sync().unwrap();
        let cold = WriteHint {
            inode_dirty_pages: 100,
            fsync: true,
        };
        fs.write_pages_hinted(ino, 0, &[&[7; BLOCK_SIZE]], 4096, cold)
            .unwrap();
        fs.fsync(ino).unwrap();
        let mut fs = F2fs::mount(fs.device().clone()).unwrap();
        assert_eq!(fs.recovered_inodes(), 1);
        let hot_seg = fs.segs.logs[CURSEG_HOT_DATA].segno;
        assert_eq!(fs.segs.info[hot_seg as usize].valid_blocks, 0);
        let hot = WriteHint {
            inode_dirty_pages: 1,
            fsync: true,
        };
        fs.write_pages_hinted(ino, 1, &[&[9; BLOCK_SIZE]], 8192, hot)
            .unwrap();
        fs.fsync(ino).unwrap();
        let addr = fs.block_addr(ino, 1).unwrap();
        assert_eq!(fs.segs.segno_of(addr).unwrap().0, hot_seg);
        let mut fs = F2fs::mount(fs.device().clone()).unwrap();
        assert_eq!(fs.recovered_inodes(), 1);
        assert_eq!(fs.block_addr(ino, 1).unwrap(), addr);
        let seg = &fs.segs.info[hot_seg as usize];
        assert_eq!(
            (seg.valid_blocks, seg.seg_type as usize),
            (1, CURSEG_HOT_DATA)
        );
        assert_eq!(&fs.read(ino, 4096, 4096).unwrap()[..], &[9; BLOCK_SIZE][..]);
    }

    #[test]
    fn start_blocks_agree_with_node_paths() {
        let addrs = 873;
        for block in [
            873u64, 1890, 2909, 5000, 1_039_232, 1_039_233, 2_075_557, 2_100_000,
        ] {
            let p = node_path(block, addrs, ADDRS_PER_BLOCK).unwrap();
            let offset = p.levels.last().unwrap().1;
            assert_eq!(
                start_block_of_node(offset, addrs) + p.leaf as u64,
                block,
                "{block}"
            );
        }
    }
}
