//! The node blocks F2FS keeps in memory, by node id.

use std::collections::{BTreeSet, HashMap};

use super::delta::AddrHash;
use crate::codec::Block;

/// Cached node blocks by id. Every inode field and address lookup asks for a node,
/// a dozen times per page write on the delta path, so lookups go to a hash map; the ids
/// are also kept in order for the one walk over them (`F2fs::shrink_caches`, which drops
/// the lowest clean ids first), so no hash-map order ever reaches a result. The ordered
/// set changes only when an id enters or leaves the cache, not when its block is
/// replaced.
#[derive(Default)]
pub(super) struct NodeCache {
    blocks: HashMap<u32, Box<Block>, AddrHash>,
    ids: BTreeSet<u32>,
}

impl NodeCache {
    pub(super) fn contains_key(&self, nid: &u32) -> bool {
        self.blocks.contains_key(nid)
    }

    pub(super) fn get(&self, nid: &u32) -> Option<&Block> {
        self.blocks.get(nid).map(|b| &**b)
    }

    pub(super) fn get_mut(&mut self, nid: &u32) -> Option<&mut Box<Block>> {
        self.blocks.get_mut(nid)
    }

    pub(super) fn insert(&mut self, nid: u32, block: Box<Block>) -> Option<Box<Block>> {
        let old = self.blocks.insert(nid, block);
        if old.is_none() {
            self.ids.insert(nid);
        }
        old
    }

    pub(super) fn remove(&mut self, nid: &u32) -> Option<Box<Block>> {
        let old = self.blocks.remove(nid);
        if old.is_some() {
            self.ids.remove(nid);
        }
        old
    }

    pub(super) fn len(&self) -> usize {
        self.blocks.len()
    }

    /// The cached ids, lowest first.
    pub(super) fn keys(&self) -> impl Iterator<Item = &u32> + '_ {
        self.ids.iter()
    }

    pub(super) fn clear(&mut self) {
        self.blocks.clear();
        self.ids.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::zero_block;

    /// The cache answers as an ordered map of the same operations does.
    #[test]
    fn node_cache_keeps_what_an_ordered_map_keeps() {
        let mut cache = NodeCache::default();
        let mut model: std::collections::BTreeMap<u32, u8> = Default::default();
        let mut s: u64 = 0x2545_f491_4f6c_dd1d;
        for step in 0..20_000u32 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let nid = (s % 300) as u32;
            match s >> 60 {
                0..=7 => {
                    let mut b = zero_block();
                    b[0] = step as u8;
                    let had = cache.insert(nid, b).is_some();
                    assert_eq!(had, model.insert(nid, step as u8).is_some());
                }
                8..=11 => {
                    let had = cache.remove(&nid).map(|b| b[0]);
                    assert_eq!(had, model.remove(&nid));
                }
                12 if step % 1000 == 0 => {
                    cache.clear();
                    model.clear();
                }
                _ => {
                    assert_eq!(cache.get(&nid).map(|b| b[0]), model.get(&nid).copied());
                    assert_eq!(cache.contains_key(&nid), model.contains_key(&nid));
                    if let Some(b) = cache.get_mut(&nid) {
                        b[0] = b[0].wrapping_add(1);
                        *model.get_mut(&nid).unwrap() = b[0];
                    }
                }
            }
            assert_eq!(cache.len(), model.len());
        }
        let ids: Vec<u32> = cache.keys().copied().collect();
        assert_eq!(ids, model.keys().copied().collect::<Vec<_>>());
    }
}
