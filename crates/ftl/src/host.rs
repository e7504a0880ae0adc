//! The host request queue: `depth` requests may be in service at once.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use flashstack_sim::Nanos;

/// Completion times of the requests holding the queue's slots (a min-heap). A new request
/// takes the slot that frees first and starts no earlier than that; O(log depth).
#[derive(Clone, Debug)]
pub(crate) struct HostQueue {
    slots: BinaryHeap<Reverse<Nanos>>,
    depth: usize,
    last_completion_ns: Nanos,
}

/// A request admitted to the queue; give it back with its completion time.
#[must_use]
pub(crate) struct QueueSlot(());

impl HostQueue {
    pub fn new(depth: u32) -> Self {
        assert!(depth >= 1);
        let mut q = HostQueue {
            slots: BinaryHeap::with_capacity(depth as usize),
            depth: depth as usize,
            last_completion_ns: 0,
        };
        q.reset(0);
        q
    }

    /// Takes the earliest-free slot; returns it and the time the request may start.
    #[inline]
    pub fn admit(&mut self, arrival_ns: Nanos) -> (QueueSlot, Nanos) {
        // A request that failed never gave its slot back; the queue then serialises.
        let free_ns = self
            .slots
            .pop()
            .map_or(self.last_completion_ns, |Reverse(t)| t);
        (QueueSlot(()), arrival_ns.max(free_ns))
    }

    #[inline]
    pub fn complete(&mut self, _slot: QueueSlot, complete_ns: Nanos) {
        self.slots.push(Reverse(complete_ns));
        self.last_completion_ns = self.last_completion_ns.max(complete_ns);
    }

    pub fn last_completion_ns(&self) -> Nanos {
        self.last_completion_ns
    }

    /// After a power cycle nothing is in flight.
    pub fn reset(&mut self, now_ns: Nanos) {
        self.slots.clear();
        self.slots
            .extend(std::iter::repeat_n(Reverse(now_ns), self.depth));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_one_serialises() {
        let mut q = HostQueue::new(1);
        let (slot, start) = q.admit(10);
        assert_eq!(start, 10);
        q.complete(slot, 100);
        assert_eq!(q.admit(20).1, 100);
    }

    #[test]
    fn deeper_queue_overlaps() {
        let mut q = HostQueue::new(2);
        let (a, _) = q.admit(0);
        q.complete(a, 100);
        let (b, start) = q.admit(5);
        assert_eq!(start, 5);
        q.complete(b, 50);
        assert_eq!(q.admit(6).1, 50);
    }
}
