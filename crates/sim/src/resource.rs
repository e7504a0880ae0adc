//! A resource that serves one operation at a time: a NAND die, a channel bus, a controller CPU.

use crate::Nanos;

/// One server with a `busy_until` time. An operation starts at `max(ready, busy_until)` and
/// holds the resource for its modelled cost; this gives queueing, parallelism across
/// resources and latency tails without an event queue.
#[derive(Clone, Debug, Default)]
pub struct Resource {
    busy_until_ns: Nanos,
    busy_total_ns: Nanos,
}

impl Resource {
    /// Occupies the resource for `duration_ns` starting no earlier than `ready_ns`.
    /// Returns `(start_ns, end_ns)`.
    #[inline]
    pub fn reserve(&mut self, ready_ns: Nanos, duration_ns: Nanos) -> (Nanos, Nanos) {
        let start_ns = ready_ns.max(self.busy_until_ns);
        let end_ns = start_ns + duration_ns;
        self.busy_until_ns = end_ns;
        self.busy_total_ns += duration_ns;
        (start_ns, end_ns)
    }

    /// The time at which the resource is next free.
    #[inline]
    pub fn busy_until_ns(&self) -> Nanos {
        self.busy_until_ns
    }

    /// Total time the resource has been busy since the start of the run.
    pub fn busy_total_ns(&self) -> Nanos {
        self.busy_total_ns
    }

    /// Forgets accumulated busy time (used when a measurement phase starts) but keeps
    /// `busy_until`, since work in flight still occupies the resource.
    pub fn reset_busy_total(&mut self) {
        self.busy_total_ns = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_queue_behind_each_other() {
        let mut die = Resource::default();
        assert_eq!(die.reserve(10, 5), (10, 15));
        assert_eq!(die.reserve(12, 5), (15, 20));
        assert_eq!(die.reserve(40, 1), (40, 41));
        assert_eq!(die.busy_total_ns(), 11);
    }
}
