//! A resource that books intervals: a later reservation may use an idle gap left before
//! earlier bookings (a channel bus shared by dies whose operations are reserved out of time
//! order).

use std::collections::VecDeque;

use crate::Nanos;

/// Booked intervals past this many are folded into the floor (treated as busy), oldest
/// first, whatever the caller's pruning hints say: a bound on memory for resources whose
/// callers cannot prune (for example a channel one of whose dies stays idle for ever).
/// Results are those of an unbounded list until a resource holds this many.
pub const INTERVALS_MAX: usize = 1 << 16;

/// One server whose busy time is a sorted list of disjoint, non-touching `[start, end)`
/// intervals after a `floor` before which it counts as busy. A reservation starts at the
/// earliest time at or after its ready time where the server is idle for its whole
/// duration, so work reserved later in program order fills gaps earlier in virtual time.
/// Deterministic: the result depends only on the sequence of calls.
#[derive(Clone, Debug, Default)]
pub struct IntervalResource {
    /// Nothing may start before this (pruned history counts as busy).
    floor_ns: Nanos,
    intervals: VecDeque<(Nanos, Nanos)>,
    busy_total_ns: Nanos,
}

impl IntervalResource {
    /// Where a reservation of `duration_ns` ready at `ready_ns` would start, without
    /// booking it.
    #[inline]
    pub fn earliest_start_ns(&self, ready_ns: Nanos, duration_ns: Nanos) -> Nanos {
        self.find(ready_ns, duration_ns).0
    }

    /// The earliest feasible start and the index of the first interval after it.
    #[inline]
    fn find(&self, ready_ns: Nanos, duration_ns: Nanos) -> (Nanos, usize) {
        let mut start_ns = ready_ns.max(self.floor_ns);
        let len = self.intervals.len();
        // The common case: ready after everything booked.
        match self.intervals.back() {
            None => return (start_ns, 0),
            Some(&(_, end)) if end <= start_ns => return (start_ns, len),
            _ => {}
        }
        // Intervals are disjoint and sorted, so their ends are sorted too: the first one
        // that ends after `start_ns` is the first that can be in the way.
        let mut i = self.intervals.partition_point(|&(_, end)| end <= start_ns);
        while i < len {
            let (s, e) = self.intervals[i];
            if s >= start_ns + duration_ns && (duration_ns > 0 || s > start_ns) {
                break;
            }
            start_ns = start_ns.max(e);
            i += 1;
        }
        (start_ns, i)
    }

    /// Occupies the resource for `duration_ns` at the earliest idle time at or after
    /// `ready_ns`. Returns `(start_ns, end_ns)`.
    #[inline]
    pub fn reserve(&mut self, ready_ns: Nanos, duration_ns: Nanos) -> (Nanos, Nanos) {
        let (start_ns, i) = self.find(ready_ns, duration_ns);
        let end_ns = start_ns + duration_ns;
        self.busy_total_ns += duration_ns;
        if duration_ns == 0 {
            return (start_ns, end_ns);
        }
        // Insert before index `i`, merging with touching neighbours.
        let joins_prev = i > 0 && self.intervals[i - 1].1 == start_ns;
        let joins_next = i < self.intervals.len() && self.intervals[i].0 == end_ns;
        match (joins_prev, joins_next) {
            (true, true) => {
                let next_end = self.intervals[i].1;
                self.intervals[i - 1].1 = next_end;
                self.intervals.remove(i);
            }
            (true, false) => self.intervals[i - 1].1 = end_ns,
            (false, true) => self.intervals[i].0 = start_ns,
            (false, false) => {
                if i == self.intervals.len() {
                    self.intervals.push_back((start_ns, end_ns));
                } else {
                    self.intervals.insert(i, (start_ns, end_ns));
                }
                if self.intervals.len() > INTERVALS_MAX {
                    self.fold_oldest();
                }
            }
        }
        (start_ns, end_ns)
    }

    /// Forgets the bookings that end at or before `t_ns`. Only valid when no later
    /// reservation is ready before `t_ns` (the caller's guarantee); one that is anyway
    /// starts no earlier than the latest end forgotten, as if the history were busy.
    pub fn forget_before(&mut self, t_ns: Nanos) {
        while let Some(&(_, end)) = self.intervals.front() {
            if end > t_ns {
                break;
            }
            self.floor_ns = self.floor_ns.max(end);
            self.intervals.pop_front();
        }
    }

    fn fold_oldest(&mut self) {
        // Half at once, so folding is amortised over many reservations.
        let drop = self.intervals.len() / 2;
        for _ in 0..drop {
            if let Some((_, end)) = self.intervals.pop_front() {
                self.floor_ns = self.floor_ns.max(end);
            }
        }
    }

    /// The end of the latest booking: when the resource is idle for good.
    #[inline]
    pub fn busy_until_ns(&self) -> Nanos {
        self.intervals.back().map_or(self.floor_ns, |&(_, end)| end)
    }

    /// Booked intervals held (after merging touching ones).
    #[inline]
    pub fn len(&self) -> usize {
        self.intervals.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.intervals.is_empty()
    }

    /// Total time the resource has been busy since the start of the run.
    pub fn busy_total_ns(&self) -> Nanos {
        self.busy_total_ns
    }

    /// Forgets accumulated busy time but keeps the bookings (work in flight).
    pub fn reset_busy_total(&mut self) {
        self.busy_total_ns = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Rng;

    /// The reference: every booking kept in a plain list, every start found by trying
    /// each candidate (the ready time and every booked end) in increasing order.
    #[derive(Default)]
    struct Reference {
        booked: Vec<(Nanos, Nanos)>,
    }

    impl Reference {
        fn free(&self, start: Nanos, duration: Nanos) -> bool {
            let end = start + duration;
            self.booked.iter().all(|&(s, e)| {
                if duration == 0 {
                    !(s <= start && start < e)
                } else {
                    end <= s || e <= start
                }
            })
        }
        fn reserve(&mut self, ready: Nanos, duration: Nanos) -> (Nanos, Nanos) {
            let mut candidates: Vec<Nanos> = std::iter::once(ready)
                .chain(self.booked.iter().map(|&(_, e)| e).filter(|&e| e > ready))
                .collect();
            candidates.sort_unstable();
            let start = candidates
                .into_iter()
                .find(|&c| self.free(c, duration))
                .expect("after the last booking everything is free");
            if duration > 0 {
                self.booked.push((start, start + duration));
            }
            (start, start + duration)
        }
    }

    #[test]
    fn a_later_reservation_fills_an_earlier_gap() {
        let mut bus = IntervalResource::default();
        assert_eq!(bus.reserve(0, 10), (0, 10));
        assert_eq!(bus.reserve(100, 10), (100, 110));
        // Fits between the two.
        assert_eq!(bus.reserve(5, 20), (10, 30));
        // Too long for the gap left (30..100): goes after the last.
        assert_eq!(bus.reserve(20, 80), (110, 190));
        assert_eq!(bus.reserve(20, 70), (30, 100));
        // 0..30 and 30..100 and 100..190 merged into one interval.
        assert_eq!(bus.len(), 1);
        assert_eq!(bus.busy_until_ns(), 190);
        assert_eq!(bus.busy_total_ns(), 190);
    }

    #[test]
    fn matches_the_brute_force_reference() {
        for seed in 0..40 {
            let mut rng = Rng::new(seed);
            let mut bus = IntervalResource::default();
            let mut reference = Reference::default();
            let mut now = 0;
            for step in 0..600 {
                // Ready times wander forward with jumps back, like operations of several
                // dies reserved one die's burst at a time.
                now += rng.below(40);
                let ready = now.saturating_sub(rng.below(300));
                let duration = match rng.below(10) {
                    0 => 0,
                    1..=6 => 1 + rng.below(25),
                    _ => 1 + rng.below(120),
                };
                let got = bus.reserve(ready, duration);
                let want = reference.reserve(ready, duration);
                assert_eq!(
                    got, want,
                    "seed {seed} step {step}: ready {ready} +{duration}"
                );
                assert!(got.0 >= ready);
            }
            let total: Nanos = reference.booked.iter().map(|&(s, e)| e - s).sum();
            assert_eq!(bus.busy_total_ns(), total);
            // No overlaps among the reference's bookings (what the list merged).
            let mut sorted = reference.booked.clone();
            sorted.sort_unstable();
            assert!(sorted.windows(2).all(|w| w[0].1 <= w[1].0));
        }
    }

    #[test]
    fn forgetting_history_below_every_future_ready_time_changes_nothing() {
        for seed in 0..20 {
            let mut rng = Rng::new(100 + seed);
            let mut pruned = IntervalResource::default();
            let mut full = IntervalResource::default();
            let mut now = 0;
            for _ in 0..2000 {
                now += rng.below(30);
                // Every ready time is at or after `now - 200`.
                let ready = now.saturating_sub(rng.below(200));
                let duration = 1 + rng.below(20);
                assert_eq!(
                    pruned.reserve(ready, duration),
                    full.reserve(ready, duration)
                );
                pruned.forget_before(now.saturating_sub(200));
            }
            assert!(pruned.len() < full.len());
            assert_eq!(pruned.busy_until_ns(), full.busy_until_ns());
        }
    }

    #[test]
    fn a_reservation_ready_before_the_floor_waits_for_it() {
        let mut bus = IntervalResource::default();
        bus.reserve(0, 10);
        bus.reserve(50, 10);
        bus.forget_before(20);
        // The gap 10..50 is after the floor (10) and still usable.
        assert_eq!(bus.reserve(0, 5), (10, 15));
        bus.forget_before(60);
        assert!(bus.is_empty());
        assert_eq!(bus.reserve(0, 5), (60, 65));
    }

    #[test]
    fn past_the_cap_the_oldest_half_counts_as_busy() {
        let mut bus = IntervalResource::default();
        let n = INTERVALS_MAX as u64 + 1;
        for i in 0..n {
            bus.reserve(i * 10, 5);
        }
        assert_eq!(bus.len(), INTERVALS_MAX / 2 + 1);
        // The gaps of the folded half are gone; the first gap kept is used.
        let floor = (INTERVALS_MAX as u64 / 2 - 1) * 10 + 5;
        assert_eq!(bus.reserve(0, 5), (floor, floor + 5));
        assert_eq!(bus.busy_until_ns(), (n - 1) * 10 + 5);
    }

    #[test]
    fn zero_length_reservations_book_nothing() {
        let mut bus = IntervalResource::default();
        bus.reserve(10, 10);
        assert_eq!(bus.reserve(12, 0), (20, 20));
        assert_eq!(bus.reserve(5, 0), (5, 5));
        assert_eq!(bus.len(), 1);
    }
}
