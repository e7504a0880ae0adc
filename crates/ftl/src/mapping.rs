//! The mapping seam: logical page → physical slot, fragment lengths, and reference counts
//! of slots that more than one logical page refers to (after a REMAP).
//!
//! Ownership. Every programmed data slot names one logical page in its spare area (OOB):
//! its *owner*. Before REMAP existed, a slot was live exactly when its owner still mapped
//! to it, and that was the whole of GC's liveness test. A remap makes other logical pages
//! (*aliases*) refer to the same slot, so the mapping keeps, for every slot that has an
//! alias, the list of aliases and whether the owner still maps to it. The reference count
//! of a slot is `owner maps to it` + `aliases`; a slot is live while it is above zero, and
//! its block's valid count includes it once, however many logical pages share it.
//!
//! Cost. The table of shared slots is empty until the first remap; while it is empty every
//! operation takes the pre-REMAP path (one `is_empty` test), so runs without remaps give
//! byte-identical results.
//!
//! Invariants (checked in full by [`Mapping::check`], preconditions asserted always):
//! - a shared entry has at least one alias, its aliases are ascending and distinct, each
//!   maps to the entry's slot, and its `owner` flag says whether the slot's OOB owner maps
//!   to it;
//! - every mapped logical page that is not its slot's owner is listed as an alias.

use std::collections::BTreeMap;

use flashstack_sim::memory::LazyTable;

use crate::UNMAPPED;

/// Who besides its owner refers to a slot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SlotRefs {
    /// Whether the logical page the slot's OOB names still maps to it.
    pub(crate) owner: bool,
    /// Other logical pages mapped to the slot (by remaps), ascending.
    pub(crate) aliases: Vec<u32>,
}

impl SlotRefs {
    fn count(&self) -> usize {
        self.owner as usize + self.aliases.len()
    }
}

/// A released mapping: the slot and fragment length `lpn` referred to, and whether that
/// was the slot's last reference (its data is dead, its block's valid count drops).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Released {
    pub(crate) slot: u32,
    pub(crate) len: u32,
    pub(crate) last: bool,
}

/// L2P, fragment lengths and shared-slot reference counts.
pub(crate) struct Mapping {
    /// First slot of each logical page's fragment.
    pub(crate) l2p: LazyTable,
    /// Fragment length in slots per logical page; absent when every fragment is one slot.
    pub(crate) lengths: Option<Vec<u8>>,
    /// Slots with at least one alias; bounded by the number of logical pages.
    shared: BTreeMap<u32, SlotRefs>,
}

impl Mapping {
    pub(crate) fn new(l2p: LazyTable, lengths: Option<Vec<u8>>) -> Mapping {
        Mapping {
            l2p,
            lengths,
            shared: BTreeMap::new(),
        }
    }

    /// Forgets every mapping (recovery rebuilds them).
    pub(crate) fn clear(&mut self) {
        self.l2p.clear();
        self.shared.clear();
    }

    /// Slots the fragment of `lpn` takes (it must be mapped).
    #[inline]
    pub(crate) fn len_of(&self, lpn: u32) -> u32 {
        match &self.lengths {
            Some(lengths) => lengths[lpn as usize] as u32,
            None => 1,
        }
    }

    #[inline]
    pub(crate) fn set_len(&mut self, lpn: u32, len: u32) {
        match self.lengths.as_mut() {
            Some(lengths) => lengths[lpn as usize] = len as u8,
            None => debug_assert_eq!(len, 1),
        }
    }

    /// Whether no slot is shared (no remap is in effect): the pre-REMAP fast paths apply.
    #[inline]
    pub(crate) fn nothing_shared(&self) -> bool {
        self.shared.is_empty()
    }

    /// Whether `slot` has aliases.
    pub(crate) fn is_shared(&self, slot: u32) -> bool {
        !self.shared.is_empty() && self.shared.contains_key(&slot)
    }

    /// Unmaps `lpn`; returns what it referred to, if anything.
    pub(crate) fn release(&mut self, lpn: u32) -> Option<Released> {
        let slot = self.l2p.replace(lpn as usize, UNMAPPED);
        if slot == UNMAPPED {
            return None;
        }
        let len = self.len_of(lpn);
        let last = match self.shared.get_mut(&slot) {
            None => true,
            Some(refs) => {
                match refs.aliases.binary_search(&lpn) {
                    Ok(i) => {
                        refs.aliases.remove(i);
                    }
                    Err(_) => {
                        assert!(refs.owner, "lpn {lpn} released slot {slot} it did not own");
                        refs.owner = false;
                    }
                }
                let (count, no_alias) = (refs.count(), refs.aliases.is_empty());
                if no_alias {
                    self.shared.remove(&slot);
                }
                count == 0
            }
        };
        Some(Released { slot, len, last })
    }

    /// Maps unmapped `lpn` to a fresh `slot` whose OOB will name it (a write or a move).
    #[inline]
    pub(crate) fn bind_owner(&mut self, lpn: u32, slot: u32, len: u32) {
        debug_assert_eq!(self.l2p.at(lpn as usize), UNMAPPED);
        debug_assert!(!self.is_shared(slot), "slot {slot} is shared already");
        self.l2p.set(lpn as usize, slot);
        self.set_len(lpn, len);
    }

    /// Maps unmapped `lpn` to the existing `slot` whose OOB names `owner` (a remap, or GC
    /// re-pointing the other referrers of a slot it moved). Returns whether this is the
    /// slot's first reference (its block gains a valid slot).
    pub(crate) fn bind(&mut self, lpn: u32, slot: u32, len: u32, owner: u32) -> bool {
        assert_eq!(
            self.l2p.at(lpn as usize),
            UNMAPPED,
            "lpn {lpn} must be released before it is bound"
        );
        let owner_maps = self.l2p.get(owner as usize) == Some(slot);
        self.l2p.set(lpn as usize, slot);
        self.set_len(lpn, len);
        if lpn == owner {
            // Back to the slot its OOB names (remapped away and back): an owner again.
            return match self.shared.get_mut(&slot) {
                Some(refs) => {
                    assert!(!refs.owner, "slot {slot}: owner {lpn} bound twice");
                    refs.owner = true;
                    refs.count() == 1
                }
                None => true,
            };
        }
        let refs = self.shared.entry(slot).or_insert(SlotRefs {
            owner: owner_maps,
            aliases: Vec::new(),
        });
        if let Err(i) = refs.aliases.binary_search(&lpn) {
            refs.aliases.insert(i, lpn);
        }
        refs.count() == 1
    }

    /// The logical pages referring to `slot` besides `owner` (its aliases), or none.
    pub(crate) fn aliases(&self, slot: u32) -> &[u32] {
        match self.shared.get(&slot) {
            Some(refs) => &refs.aliases,
            None => &[],
        }
    }

    /// A slot about to be programmed whose OOB owner `owner` no longer maps to it: its
    /// first alias becomes the owner the OOB names (no stale copy may name a page that
    /// maps elsewhere, durability rule 2). Returns the new owner, or `None` when the
    /// slot has no alias (it is padding).
    pub(crate) fn promote_alias(&mut self, slot: u32) -> Option<u32> {
        let refs = self.shared.get_mut(&slot)?;
        debug_assert!(!refs.owner);
        let lpn = refs.aliases.remove(0);
        refs.owner = true;
        if refs.aliases.is_empty() {
            self.shared.remove(&slot);
        }
        Some(lpn)
    }

    /// Moves every reference of `old` (whose OOB names `owner`) to `new` (a retargeted
    /// buffer slot). Returns whether anything referred to `old`, and its aliases.
    pub(crate) fn rekey(&mut self, old: u32, new: u32, owner: u32) -> (bool, Vec<u32>) {
        let owned = self.l2p.get(owner as usize) == Some(old);
        if owned {
            self.l2p.set(owner as usize, new);
        }
        let Some(refs) = self.shared.remove(&old) else {
            return (owned, Vec::new());
        };
        for &lpn in &refs.aliases {
            self.l2p.set(lpn as usize, new);
        }
        let aliases = refs.aliases.clone();
        self.shared.insert(new, refs);
        (true, aliases)
    }

    /// Rebuilds the shared-slot table from the mapping after recovery: `owner_of(slot)`
    /// names the page a slot's OOB names.
    pub(crate) fn rebuild_shared(&mut self, owner_of: impl Fn(u32) -> u32) {
        self.shared.clear();
        for lpn in 0..self.l2p.len() as u32 {
            let slot = self.l2p.at(lpn as usize);
            if slot == UNMAPPED || owner_of(slot) == lpn {
                continue;
            }
            let owner = owner_of(slot);
            let owner_maps = self.l2p.get(owner as usize) == Some(slot);
            let refs = self.shared.entry(slot).or_insert(SlotRefs {
                owner: owner_maps,
                aliases: Vec::new(),
            });
            refs.aliases.push(lpn);
        }
    }

    /// Whether `lpn`'s slot is counted in its block's valid slots through `lpn`: owners
    /// count their slot, and an alias counts it only when it is the slot's first alias and
    /// the owner no longer maps to it.
    pub(crate) fn counts_valid(&self, lpn: u32) -> bool {
        let slot = self.l2p.at(lpn as usize);
        match self.shared.get(&slot) {
            Some(refs) if refs.aliases.binary_search(&lpn).is_ok() => {
                !refs.owner && refs.aliases[0] == lpn
            }
            _ => true,
        }
    }

    /// Full check of the invariants in the module doc; `owner_of(slot)` names the page a
    /// slot's OOB (or buffer) names.
    pub(crate) fn check(&self, owner_of: impl Fn(u32) -> Option<u32>) -> Result<(), String> {
        for (&slot, refs) in &self.shared {
            if refs.aliases.is_empty() || !refs.aliases.windows(2).all(|w| w[0] < w[1]) {
                return Err(format!("shared slot {slot}: aliases {:?}", refs.aliases));
            }
            if let Some(&lpn) = refs
                .aliases
                .iter()
                .find(|&&l| self.l2p.at(l as usize) != slot)
            {
                return Err(format!("shared slot {slot}: alias {lpn} maps elsewhere"));
            }
            let owner_maps = owner_of(slot).is_some_and(|o| self.l2p.get(o as usize) == Some(slot));
            if owner_maps != refs.owner {
                return Err(format!(
                    "shared slot {slot}: owner flag {} but owner maps there: {owner_maps}",
                    refs.owner
                ));
            }
        }
        for (lpn, slot) in self.l2p.iter().enumerate() {
            let lpn = lpn as u32;
            if slot == UNMAPPED || owner_of(slot) == Some(lpn) {
                continue;
            }
            let listed = self
                .shared
                .get(&slot)
                .is_some_and(|r| r.aliases.binary_search(&lpn).is_ok());
            if !listed {
                return Err(format!(
                    "lpn {lpn} maps to slot {slot}, which names {:?}, but is no alias",
                    owner_of(slot)
                ));
            }
        }
        Ok(())
    }
}
