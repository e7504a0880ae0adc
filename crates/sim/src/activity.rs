//! When a device was busy: its request intervals merged into busy periods, so that a
//! power-state model can later charge the gaps between them (idle, sleep, wake-ups) for
//! any timeout. Pure bookkeeping over virtual time.

use crate::Nanos;

/// Most busy periods kept before neighbours are merged (the table's bound). At the bound
/// every pair of neighbouring periods becomes one (the gap between them counted busy),
/// and [`ActivityLog::coarsenings`] says how often that happened.
pub const BUSY_PERIODS_MAX: usize = 1 << 20;

/// Busy periods of one device since `start_ns`, in time order, never overlapping.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ActivityLog {
    start_ns: Nanos,
    periods: Vec<(Nanos, Nanos)>,
    coarsenings: u32,
}

impl ActivityLog {
    /// An empty log whose first gap starts at `start_ns`.
    pub fn new(start_ns: Nanos) -> Self {
        Self {
            start_ns,
            periods: Vec::new(),
            coarsenings: 0,
        }
    }

    /// The device worked from `start_ns` to `end_ns`. Work starting before the last
    /// period ends extends it; work starting before the log's start is cut to it.
    pub fn note(&mut self, start_ns: Nanos, end_ns: Nanos) {
        let start_ns = start_ns.max(self.start_ns);
        if end_ns <= start_ns {
            return;
        }
        if let Some(last) = self.periods.last_mut() {
            if start_ns <= last.1 {
                last.1 = last.1.max(end_ns);
                return;
            }
        }
        if self.periods.len() >= BUSY_PERIODS_MAX {
            self.coarsen();
        }
        self.periods.push((start_ns, end_ns));
    }

    fn coarsen(&mut self) {
        let merged: Vec<(Nanos, Nanos)> = self
            .periods
            .chunks(2)
            .map(|pair| (pair[0].0, pair[pair.len() - 1].1))
            .collect();
        self.periods = merged;
        self.coarsenings += 1;
    }

    pub fn start_ns(&self) -> Nanos {
        self.start_ns
    }

    /// The busy periods, in time order.
    pub fn periods(&self) -> &[(Nanos, Nanos)] {
        &self.periods
    }

    /// How often the table reached its bound and neighbours were merged.
    pub fn coarsenings(&self) -> u32 {
        self.coarsenings
    }

    /// Total busy time.
    pub fn busy_ns(&self) -> Nanos {
        self.periods.iter().map(|(s, e)| e - s).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_work_merges_and_gaps_stay() {
        let mut log = ActivityLog::new(100);
        log.note(50, 120); // cut to the start
        log.note(110, 150);
        log.note(200, 210);
        log.note(205, 260);
        log.note(300, 300); // empty
        assert_eq!(log.periods(), &[(100, 150), (200, 260)]);
        assert_eq!(log.busy_ns(), 110);
    }

    #[test]
    fn the_bound_merges_neighbours() {
        let mut log = ActivityLog::new(0);
        for i in 0..(BUSY_PERIODS_MAX as u64 + 1) {
            log.note(i * 10, i * 10 + 1);
        }
        assert_eq!(log.coarsenings(), 1);
        assert_eq!(log.periods().len(), BUSY_PERIODS_MAX / 2 + 1);
        assert_eq!(log.periods()[0], (0, 11));
    }
}
