//! The in-memory NAT: whole NAT blocks cached as they are read, the ones changed since the
//! last checkpoint marked dirty, and free node ids found by scanning.

use std::collections::{BTreeMap, BTreeSet};

use crate::consts::*;
use crate::nat::{nat_position, NatBlock, NatEntry};

/// Clean NAT blocks kept at most (dirty ones stay until the checkpoint writes them).
pub(crate) const NAT_CACHE_MAX_BLOCKS: usize = 256;
/// Free node ids kept at hand.
const FREE_NIDS_MAX: usize = 4096;

#[derive(Clone, Debug, Default)]
pub(crate) struct NatTable {
    pub blocks: BTreeMap<u32, NatBlock>,
    /// NAT blocks holding an entry changed since the last checkpoint.
    pub dirty: BTreeSet<u32>,
    /// Entries changed since the last checkpoint.
    pub dirty_nids: BTreeSet<u32>,
    /// Entries kept in the checkpoint's NAT journal instead of the NAT area (the area's
    /// copy of their block is stale; loads overlay these).
    pub journal: BTreeMap<u32, NatEntry>,
    /// Node ids known free.
    pub free: BTreeSet<u32>,
    /// Node ids released since the last checkpoint (reusable after it).
    pub released: BTreeSet<u32>,
    /// Node ids handed out but whose NAT entry may not show it yet.
    pub taken: BTreeSet<u32>,
    /// Next NAT block to scan for free ids.
    pub scan_block: u32,
    pub nat_blocks: u32,
}

impl NatTable {
    pub fn get(&self, nid: u32) -> Option<NatEntry> {
        let (block, slot) = nat_position(nid);
        self.blocks.get(&block).map(|b| b.entries[slot])
    }

    /// Sets an entry (its block must be cached).
    pub fn set(&mut self, nid: u32, entry: NatEntry) {
        let (block, slot) = nat_position(nid);
        if let Some(b) = self.blocks.get_mut(&block) {
            b.entries[slot] = entry;
            self.dirty.insert(block);
            self.dirty_nids.insert(nid);
        }
        if let Some(j) = self.journal.get_mut(&nid) {
            *j = entry;
        }
    }

    /// Applies journal entries to a block just read from the NAT area.
    pub fn overlay_journal(&self, index: u32, block: &mut NatBlock) {
        let first = index * NAT_ENTRY_PER_BLOCK;
        for (&nid, entry) in self.journal.range(first..first + NAT_ENTRY_PER_BLOCK) {
            block.entries[(nid - first) as usize] = *entry;
        }
    }

    /// Adds free ids from a freshly scanned block.
    pub fn collect_free(&mut self, index: u32) {
        let Some(block) = self.blocks.get(&index) else {
            return;
        };
        for (slot, e) in block.entries.iter().enumerate() {
            let nid = index * NAT_ENTRY_PER_BLOCK + slot as u32;
            // nid 0 is never used; ids up to the root's are reserved by mkfs.
            let usable = nid > ROOT_INO && e.block_addr == NULL_ADDR;
            if usable && !self.taken.contains(&nid) && !self.released.contains(&nid) {
                self.free.insert(nid);
            }
            if self.free.len() >= FREE_NIDS_MAX {
                break;
            }
        }
    }

    /// Drops clean cached blocks beyond the bound.
    pub fn shrink(&mut self) {
        let excess = self.blocks.len().saturating_sub(NAT_CACHE_MAX_BLOCKS);
        let victims: Vec<u32> = self
            .blocks
            .keys()
            .copied()
            .filter(|b| !self.dirty.contains(b))
            .take(excess)
            .collect();
        for v in victims {
            self.blocks.remove(&v);
        }
    }
}
