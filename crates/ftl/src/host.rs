//! The host request queue: `depth` requests may be in service at once.

use flashstack_sim::Nanos;

/// Completion times of the requests holding the queue's slots. A new request takes the
/// slot that frees first and starts no earlier than that.
#[derive(Clone, Debug)]
pub(crate) struct HostQueue {
    slots: Vec<Nanos>,
    last_completion_ns: Nanos,
}

impl HostQueue {
    pub fn new(depth: u32) -> Self {
        assert!(depth >= 1);
        HostQueue {
            slots: vec![0; depth as usize],
            last_completion_ns: 0,
        }
    }

    /// Returns the slot index and the time the request may start.
    #[inline]
    pub fn admit(&self, arrival_ns: Nanos) -> (usize, Nanos) {
        let (index, free_ns) = self
            .slots
            .iter()
            .copied()
            .enumerate()
            .min_by_key(|&(i, t)| (t, i))
            .expect("depth >= 1");
        (index, arrival_ns.max(free_ns))
    }

    #[inline]
    pub fn complete(&mut self, index: usize, complete_ns: Nanos) {
        self.slots[index] = complete_ns;
        self.last_completion_ns = self.last_completion_ns.max(complete_ns);
    }

    pub fn last_completion_ns(&self) -> Nanos {
        self.last_completion_ns
    }

    /// After a power cycle nothing is in flight.
    pub fn reset(&mut self, now_ns: Nanos) {
        self.slots.fill(now_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_one_serialises() {
        let mut q = HostQueue::new(1);
        let (i, start) = q.admit(10);
        assert_eq!(start, 10);
        q.complete(i, 100);
        assert_eq!(q.admit(20).1, 100);
    }

    #[test]
    fn deeper_queue_overlaps() {
        let mut q = HostQueue::new(2);
        let (i, _) = q.admit(0);
        q.complete(i, 100);
        let (j, start) = q.admit(5);
        assert_eq!(start, 5);
        q.complete(j, 50);
        assert_eq!(q.admit(6).1, 50);
    }
}
