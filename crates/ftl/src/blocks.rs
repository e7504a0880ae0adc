//! The FTL's per-block table: state, valid-slot counts, and the indexes GC and allocation
//! need in O(1): sealed blocks bucketed by valid count, free blocks pooled per die.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use flashstack_sim::{Divisor, Nanos};

const NIL: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockState {
    /// Erased and in its die's free pool.
    Free,
    /// A frontier is programming it.
    Open,
    /// Fully (or, after recovery, partly) programmed; a GC candidate.
    Sealed,
    /// Chosen by GC or wear levelling; its data is being moved out. Out of the candidate
    /// buckets, so each moved slot costs no bucket update.
    Collecting,
    /// A program failed or a read needed a retry: its data is to be moved and the block
    /// retired rather than erased.
    Retiring,
    /// Retired; never used again.
    Bad,
}

/// Free blocks of one die. Dynamic wear levelling takes the least-worn block first.
#[derive(Debug)]
enum FreePool {
    Fifo(VecDeque<u32>),
    LeastWorn(BinaryHeap<Reverse<(u32, u32)>>),
}

impl FreePool {
    fn len(&self) -> usize {
        match self {
            FreePool::Fifo(q) => q.len(),
            FreePool::LeastWorn(h) => h.len(),
        }
    }
}

pub struct BlockTable {
    pub state: Vec<BlockState>,
    pub valid_slots: Vec<u32>,
    /// Sum of `valid_slots`: the physical space live data takes.
    live_slots: u64,
    pub last_write_ns: Vec<Nanos>,
    blocks_per_die: u32,
    per_die: Divisor,
    capacity_slots: u32,
    // Sealed blocks of each die in doubly linked lists, one per valid count.
    bucket_head: Vec<u32>,
    next: Vec<u32>,
    prev: Vec<u32>,
    lowest_bucket: Vec<u32>,
    free: Vec<FreePool>,
}

impl BlockTable {
    pub fn new(dies: u32, blocks_per_die: u32, capacity_slots: u32, least_worn: bool) -> Self {
        let blocks = (dies * blocks_per_die) as usize;
        let buckets = (capacity_slots + 1) as usize;
        let free = (0..dies)
            .map(|_| {
                if least_worn {
                    FreePool::LeastWorn(BinaryHeap::new())
                } else {
                    FreePool::Fifo(VecDeque::new())
                }
            })
            .collect();
        BlockTable {
            state: vec![BlockState::Free; blocks],
            valid_slots: vec![0; blocks],
            live_slots: 0,
            last_write_ns: vec![0; blocks],
            blocks_per_die,
            per_die: Divisor::new(blocks_per_die),
            capacity_slots,
            bucket_head: vec![NIL; dies as usize * buckets],
            next: vec![NIL; blocks],
            prev: vec![NIL; blocks],
            lowest_bucket: vec![capacity_slots + 1; dies as usize],
            free,
        }
    }

    /// Cache hints for the entries an update of `block` touches.
    #[inline]
    pub fn prefetch(&self, block: u32) {
        let b = block as usize;
        crate::prefetch_line(&self.valid_slots[b]);
        crate::prefetch_line(&self.state[b]);
        crate::prefetch_line(&self.next[b]);
        crate::prefetch_line(&self.prev[b]);
    }

    pub fn capacity_slots(&self) -> u32 {
        self.capacity_slots
    }

    fn die(&self, block: u32) -> usize {
        self.per_die.div(block) as usize
    }

    fn head_index(&self, die: usize, valid: u32) -> usize {
        die * (self.capacity_slots as usize + 1) + valid as usize
    }

    fn link(&mut self, block: u32) {
        let die = self.die(block);
        let valid = self.valid_slots[block as usize];
        let h = self.head_index(die, valid);
        let old = self.bucket_head[h];
        self.next[block as usize] = old;
        self.prev[block as usize] = NIL;
        if old != NIL {
            self.prev[old as usize] = block;
        }
        self.bucket_head[h] = block;
        if valid < self.lowest_bucket[die] {
            self.lowest_bucket[die] = valid;
        }
    }

    fn unlink(&mut self, block: u32) {
        let die = self.die(block);
        let valid = self.valid_slots[block as usize];
        let (p, n) = (self.prev[block as usize], self.next[block as usize]);
        if p != NIL {
            self.next[p as usize] = n;
        } else {
            let h = self.head_index(die, valid);
            debug_assert_eq!(self.bucket_head[h], block);
            self.bucket_head[h] = n;
        }
        if n != NIL {
            self.prev[n as usize] = p;
        }
        self.next[block as usize] = NIL;
        self.prev[block as usize] = NIL;
    }

    /// Valid slots over every block.
    #[inline]
    pub fn live_slots(&self) -> u64 {
        self.live_slots
    }

    /// `n` more valid slots in `block` (a fragment was written or relocated into it).
    #[inline]
    pub fn add_valid(&mut self, block: u32, n: u32) {
        let sealed = self.state[block as usize] == BlockState::Sealed;
        if sealed {
            self.unlink(block);
        }
        self.valid_slots[block as usize] += n;
        self.live_slots += n as u64;
        assert!(self.valid_slots[block as usize] <= self.capacity_slots);
        if sealed {
            self.link(block);
        }
    }

    /// A fragment of `n` valid slots of `block` was superseded or trimmed.
    #[inline]
    pub fn remove_valid(&mut self, block: u32, n: u32) {
        let sealed = self.state[block as usize] == BlockState::Sealed;
        if sealed {
            self.unlink(block);
        }
        assert!(
            self.valid_slots[block as usize] >= n,
            "valid count underflow in {block}"
        );
        self.valid_slots[block as usize] -= n;
        self.live_slots -= n as u64;
        if sealed {
            self.link(block);
        }
    }

    pub fn set_state(&mut self, block: u32, state: BlockState) {
        let old = self.state[block as usize];
        if old == BlockState::Sealed {
            self.unlink(block);
        }
        self.state[block as usize] = state;
        if state == BlockState::Sealed {
            self.link(block);
        }
    }

    /// A new table's blocks all into the free pools, never erased: what `push_free` of
    /// each block in order does, built a die at a time (blocks pushed in order already
    /// form the heap, and a heap's pops follow its distinct keys whatever its layout).
    pub fn fill_free_pools(&mut self) {
        for die in 0..self.free.len() {
            let first = die as u32 * self.blocks_per_die;
            let blocks = first..first + self.blocks_per_die;
            debug_assert!(blocks
                .clone()
                .all(|b| self.state[b as usize] == BlockState::Free));
            match &mut self.free[die] {
                FreePool::Fifo(q) => {
                    assert!(q.is_empty(), "free pools filled twice");
                    q.extend(blocks);
                }
                FreePool::LeastWorn(h) => {
                    assert!(h.is_empty(), "free pools filled twice");
                    *h = BinaryHeap::from(blocks.map(|b| Reverse((0, b))).collect::<Vec<_>>());
                }
            }
        }
    }

    pub fn push_free(&mut self, block: u32, erase_count: u32) {
        debug_assert_eq!(self.valid_slots[block as usize], 0);
        self.set_state(block, BlockState::Free);
        let die = self.die(block);
        match &mut self.free[die] {
            FreePool::Fifo(q) => q.push_back(block),
            FreePool::LeastWorn(h) => h.push(Reverse((erase_count, block))),
        }
    }

    pub fn pop_free(&mut self, die: u32) -> Option<u32> {
        let block = match &mut self.free[die as usize] {
            FreePool::Fifo(q) => q.pop_front(),
            FreePool::LeastWorn(h) => h.pop().map(|Reverse((_, b))| b),
        }?;
        debug_assert_eq!(self.state[block as usize], BlockState::Free);
        self.state[block as usize] = BlockState::Open;
        Some(block)
    }

    pub fn free_count(&self, die: u32) -> u32 {
        self.free[die as usize].len() as u32
    }

    /// Visits sealed blocks of `die` fewest-valid first, up to `limit` of them.
    pub fn fewest_valid(&mut self, die: u32, limit: u32, mut visit: impl FnMut(u32)) {
        let die = die as usize;
        let mut seen = 0;
        let mut valid = self.lowest_bucket[die];
        let mut advanced_hint = false;
        while valid <= self.capacity_slots && seen < limit {
            let mut block = self.bucket_head[self.head_index(die, valid)];
            if block == NIL && !advanced_hint {
                // Nothing lives below the first non-empty bucket; remember that.
                self.lowest_bucket[die] = valid + 1;
            } else {
                advanced_hint = true;
            }
            while block != NIL && seen < limit {
                visit(block);
                seen += 1;
                block = self.next[block as usize];
            }
            valid += 1;
        }
    }

    /// Blocks of a die in a given state (linear; for checks and rare paths).
    pub fn count_in_state(&self, die: u32, state: BlockState) -> u32 {
        let start = (die * self.blocks_per_die) as usize;
        self.state[start..start + self.blocks_per_die as usize]
            .iter()
            .filter(|&&s| s == state)
            .count() as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Filling the pools at once leaves the same pools as pushing every block in order.
    #[test]
    fn filled_free_pools_pop_as_pushed_ones() {
        for least_worn in [false, true] {
            let mut pushed = BlockTable::new(3, 5, 16, least_worn);
            for block in 0..15 {
                pushed.push_free(block, 0);
            }
            let mut filled = BlockTable::new(3, 5, 16, least_worn);
            filled.fill_free_pools();
            for die in 0..3 {
                assert_eq!(filled.free_count(die), 5);
                // A block back with erases goes behind the rest in both.
                let (a, b) = (pushed.pop_free(die), filled.pop_free(die));
                assert_eq!(a, b);
                pushed.push_free(a.unwrap(), 1);
                filled.push_free(b.unwrap(), 1);
                let order = |t: &mut BlockTable| -> Vec<u32> {
                    std::iter::from_fn(|| t.pop_free(die)).collect()
                };
                assert_eq!(order(&mut pushed), order(&mut filled));
            }
        }
    }
}
