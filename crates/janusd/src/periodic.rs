//! Periodic idle-time defragmentation: the seed's phones are defragmented "every couple
//! of weeks" (Janusd's recurrence figure: performance degrades again even with a
//! defragmentation every two weeks). A named policy ([`PeriodicDefrag`]) with its period
//! a parameter, and a pure decision ([`PeriodicDefrag::due`]) a long run asks at each of
//! its idle times (the phone's nightly maintenance window); the caller carries it out
//! with [`crate::defragment`].

use serde::{Deserialize, Serialize};

use crate::policy::DefragMode;

/// Defragment with `mode` every `period_days` days of use, in idle time (`[periodic]`
/// in a config, serde/TOML).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PeriodicDefrag {
    /// The policy's name in reports (`"janusd-every-14d"`).
    pub name: String,
    pub mode: DefragMode,
    /// Days between passes (14: the seed's "every two weeks").
    pub period_days: u32,
    /// What each pass covers (files or directory trees; e.g. `/data/app` and
    /// `/data/data`: the apps' packages and their own files, where databases live).
    pub paths: Vec<String>,
}

impl PeriodicDefrag {
    /// The seed's schedule: every 14 days, over the apps' data.
    pub const SEED_PERIOD_DAYS: u32 = 14;

    pub fn new(mode: DefragMode, period_days: u32, paths: &[&str]) -> PeriodicDefrag {
        PeriodicDefrag {
            name: format!("{}-every-{period_days}d", mode.name()),
            mode,
            period_days,
            paths: paths.iter().map(|p| p.to_string()).collect(),
        }
    }

    /// Whether a pass is due in the idle time at the end of day `day` (counted from 0),
    /// the last pass having run at the end of `last_pass_day` (`None`: never). A period
    /// of 0 never runs.
    pub fn due(&self, day: u32, last_pass_day: Option<u32>) -> bool {
        if self.period_days == 0 {
            return false;
        }
        let since = match last_pass_day {
            Some(last) => day.saturating_sub(last),
            None => day + 1,
        };
        since >= self.period_days
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_every_period() {
        let p = PeriodicDefrag::new(DefragMode::Janusd, 14, &["/data/data"]);
        assert_eq!(p.name, "janusd-every-14d");
        let mut last = None;
        let mut passes = Vec::new();
        for day in 0..60 {
            if p.due(day, last) {
                passes.push(day);
                last = Some(day);
            }
        }
        assert_eq!(passes, vec![13, 27, 41, 55]);
        let never = PeriodicDefrag::new(DefragMode::Copy, 0, &["/"]);
        assert!(!(0..100).any(|d| never.due(d, None)));
    }
}
