//! MobiFS's adaptive policies (issue 16 item 2), as pure decisions over small states:
//!
//! 1. **The trade-off point** ([`ECurve`], [`tradeoff_decision`]): while an app's
//!    transaction is open, its e-curve `e = coalesced bytes / staleness` is sampled; a
//!    linear regression over the last `window_samples` samples, kept incrementally (sums
//!    added and removed as samples enter and leave the window), gives the curve's
//!    gradient. When the gradient, having been above `gradient_threshold`, falls to it or
//!    below, e has peaked: closing the transaction now keeps staleness low without giving
//!    up coalescing still to come ("reduce staleness unless the otherwise increases energy
//!    efficiency"). The decision only closes the transaction, making it ready to
//!    checkpoint.
//! 2. **When to checkpoint** ([`InteractionMachine`], [`predict_idle_ns`],
//!    [`idle_checkpoint_decision`]): user inputs (event *u*) are spaced by short intervals
//!    while the user interacts and long ones when they pause. After `m` short thresholds
//!    pass without input (event τ, at `m × t_s`), the machine is in an idle interval whose
//!    length is predicted from the last `m` idle intervals (last-min: their minimum,
//!    pessimistic, fewest conflicts with the user's next input; last-average: their mean,
//!    longer windows, more conflicts). A checkpoint runs there when the prediction leaves
//!    room for it. After `t_l` without input (event δ) the user has left: the phone heads
//!    for standby, and checkpoints never run in standby (the seed measured +129 % energy
//!    for standby-time flushing).
//!
//! **Unconfirmed semantics** (the seed's slides name the pieces, not their definitions):
//! what "coalesced data size" counts (here: bytes written into pages already in the open
//! transaction, i.e. writes absorbed); what staleness is sampled against (here: the age of
//! the transaction's oldest write); whether the gradient is of e against staleness or
//! against time (here: against staleness, which grows with time at slope 1 while the
//! transaction is open, so both coincide); what the intervals of the predictors are (here:
//! the lengths of idle intervals, from τ's reference input to the next input); the exact
//! meanings of τ and δ (here: τ when `m × t_s` passes since the last input, δ when `t_l`
//! passes); what happens when the bound and standby conflict (here: the hard bound wins,
//! counted).

use std::collections::VecDeque;

use flashstack_sim::{Nanos, NS_PER_MS, NS_PER_SEC};
use serde::{Deserialize, Serialize};

/// Parameters of the adaptive policies, each named as in the seed where it names one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AdaptiveConfig {
    /// Samples in the peak detector's regression window. Assumed: 8.
    pub window_samples: usize,
    /// The gradient of e (bytes/s per second of staleness) at or below which a rising
    /// e-curve has peaked; "not necessarily 0" in the seed. Assumed: 0.
    pub gradient_threshold_bytes_per_s2: i64,
    /// How often the e-curve is sampled while a transaction is open. Assumed: 1 s.
    pub sample_interval_ns: Nanos,
    /// `t_s`: the short threshold, the longest gap between two inputs of one burst of
    /// interaction. Assumed: 1 s (a touch keyboard's slowest keys, a reader's scrolls).
    pub t_s_ns: Nanos,
    /// `m`: idle intervals the predictors look back over, and the multiple of `t_s` after
    /// which an interval counts as idle (τ = m × t_s). Assumed: 3.
    pub m: u32,
    /// `t_l`: the long threshold; no input for this long means the user has left (δ).
    /// Assumed: 30 s, the screen timeout the interaction timelines use.
    pub t_l_ns: Nanos,
    /// The predictor of the next idle interval.
    pub predictor: IdlePredictor,
    /// A checkpoint's expected device time, the room a predicted idle interval must leave.
    /// Assumed: 200 ms.
    pub checkpoint_estimate_ns: Nanos,
}

impl Default for AdaptiveConfig {
    fn default() -> Self {
        Self {
            window_samples: 8,
            gradient_threshold_bytes_per_s2: 0,
            sample_interval_ns: NS_PER_SEC,
            t_s_ns: NS_PER_SEC,
            m: 3,
            t_l_ns: 30 * NS_PER_SEC,
            predictor: IdlePredictor::LastMin,
            checkpoint_estimate_ns: 200 * NS_PER_MS,
        }
    }
}

/// How the next idle interval is predicted from the last `m`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IdlePredictor {
    /// The shortest of the last `m`: pessimistic, fewest conflicts, smaller flushes.
    #[default]
    LastMin,
    /// Their mean: longer windows, larger flushes, more conflicts.
    LastAverage,
}

/// The next idle interval's length predicted from `history` (oldest first; the last `m`
/// are used); `None` before any interval was seen.
pub fn predict_idle_ns(history: &[Nanos], m: u32, predictor: IdlePredictor) -> Option<Nanos> {
    let last = &history[history.len().saturating_sub(m.max(1) as usize)..];
    match predictor {
        IdlePredictor::LastMin => last.iter().copied().min(),
        IdlePredictor::LastAverage => {
            (!last.is_empty()).then(|| last.iter().sum::<Nanos>() / last.len() as Nanos)
        }
    }
}

/// The e-curve of one open transaction and its windowed regression, kept incrementally.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ECurve {
    window: VecDeque<(f64, f64)>,
    sum_x: f64,
    sum_y: f64,
    sum_xy: f64,
    sum_xx: f64,
    /// The gradient was above the threshold since the transaction opened.
    rose: bool,
}

/// What the trade-off point decides for an open transaction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TradeoffDecision {
    /// Keep coalescing.
    KeepOpen,
    /// e peaked: close the transaction (ready to checkpoint).
    Close,
}

impl ECurve {
    /// Adds the sample at `staleness_ns` with `coalesced_bytes` absorbed so far, dropping
    /// the oldest beyond `window` samples.
    pub fn push(&mut self, staleness_ns: Nanos, coalesced_bytes: u64, window: usize) {
        let x = staleness_ns as f64 / NS_PER_SEC as f64;
        if x <= 0.0 {
            return;
        }
        let y = coalesced_bytes as f64 / x;
        self.add(x, y, 1.0);
        self.window.push_back((x, y));
        while self.window.len() > window.max(2) {
            let (ox, oy) = self.window.pop_front().expect("not empty");
            self.add(ox, oy, -1.0);
        }
    }

    fn add(&mut self, x: f64, y: f64, sign: f64) {
        self.sum_x += sign * x;
        self.sum_y += sign * y;
        self.sum_xy += sign * x * y;
        self.sum_xx += sign * x * x;
    }

    /// The least-squares slope over the window (`None` with fewer than two samples).
    pub fn gradient(&self) -> Option<f64> {
        let n = self.window.len() as f64;
        if n < 2.0 {
            return None;
        }
        let denominator = n * self.sum_xx - self.sum_x * self.sum_x;
        (denominator.abs() > f64::EPSILON)
            .then(|| (n * self.sum_xy - self.sum_x * self.sum_y) / denominator)
    }

    /// Notes whether the curve is rising (call after each push, before deciding).
    pub fn note_rise(&mut self, config: &AdaptiveConfig) {
        if self.window.len() >= config.window_samples.max(2)
            && self
                .gradient()
                .is_some_and(|g| g > config.gradient_threshold_bytes_per_s2 as f64)
        {
            self.rose = true;
        }
    }

    pub fn has_risen(&self) -> bool {
        self.rose
    }

    pub fn samples(&self) -> usize {
        self.window.len()
    }
}

/// The peak detector's decision: close once a full window's gradient, having risen above
/// the threshold, is at or below it.
pub fn tradeoff_decision(curve: &ECurve, config: &AdaptiveConfig) -> TradeoffDecision {
    let full = curve.samples() >= config.window_samples.max(2);
    match curve.gradient() {
        Some(g)
            if full && curve.has_risen() && g <= config.gradient_threshold_bytes_per_s2 as f64 =>
        {
            TradeoffDecision::Close
        }
        _ => TradeoffDecision::KeepOpen,
    }
}

/// The user-interaction state machine's states.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InteractionState {
    /// Inputs come within `t_s` of each other (or τ has not passed yet).
    #[default]
    Interactive,
    /// τ passed (`m × t_s` without input): an idle interval, predicted to last
    /// `predicted_ns` from the last input (`None` before any idle interval ended).
    Idle { predicted_ns: Option<Nanos> },
    /// δ passed (`t_l` without input), or the screen is off: no checkpoints.
    Away,
}

/// The machine: the last input, the screen, and the idle intervals seen.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InteractionMachine {
    last_input_ns: Option<Nanos>,
    screen_off: bool,
    /// Lengths of the last idle intervals (oldest first), at most `m`.
    idle_history: VecDeque<Nanos>,
}

/// Most idle intervals kept (the predictors use the last `m` ≤ this).
const IDLE_HISTORY_MAX: usize = 64;

impl InteractionMachine {
    /// Event u: a user input at `now`. An interval that had passed τ ends and is learnt.
    pub fn input(&mut self, now: Nanos, config: &AdaptiveConfig) {
        if let Some(last) = self.last_input_ns {
            let gap = now.saturating_sub(last);
            if gap >= tau_ns(config) {
                self.idle_history.push_back(gap);
                while self.idle_history.len() > IDLE_HISTORY_MAX.min(config.m.max(1) as usize) {
                    self.idle_history.pop_front();
                }
            }
        }
        self.last_input_ns = Some(now);
        self.screen_off = false;
    }

    pub fn screen(&mut self, on: bool) {
        self.screen_off = !on;
    }

    /// The state at `now` (events τ and δ are the passing of their times).
    pub fn state(&self, now: Nanos, config: &AdaptiveConfig) -> InteractionState {
        let Some(last) = self.last_input_ns else {
            return InteractionState::Interactive;
        };
        let quiet = now.saturating_sub(last);
        if self.screen_off || quiet >= config.t_l_ns {
            InteractionState::Away
        } else if quiet >= tau_ns(config) {
            let history: Vec<Nanos> = self.idle_history.iter().copied().collect();
            InteractionState::Idle {
                predicted_ns: predict_idle_ns(&history, config.m, config.predictor),
            }
        } else {
            InteractionState::Interactive
        }
    }

    pub fn last_input_ns(&self) -> Option<Nanos> {
        self.last_input_ns
    }
}

/// τ = m × t_s.
pub fn tau_ns(config: &AdaptiveConfig) -> Nanos {
    config.t_s_ns.saturating_mul(u64::from(config.m.max(1)))
}

/// A user input as the cache sees it (the stack maps the phone's touches, scrolls and
/// keys to `User`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    User,
    ScreenOff,
    ScreenOn,
}

/// Whether a checkpoint of closed transactions may run now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdleCheckpoint {
    /// In a predicted idle interval with room for it.
    Now,
    /// Not now; look again at this time (τ's time, or never while away: `None`).
    Wait(Option<Nanos>),
}

/// Checkpoint in an idle interval whose predicted end (last input + prediction) leaves
/// `checkpoint_estimate_ns`; with no prediction yet, in any idle interval; never while
/// interactive (wait for τ) nor away (standby).
pub fn idle_checkpoint_decision(
    machine: &InteractionMachine,
    now: Nanos,
    config: &AdaptiveConfig,
) -> IdleCheckpoint {
    match machine.state(now, config) {
        InteractionState::Interactive => IdleCheckpoint::Wait(
            machine
                .last_input_ns()
                .map(|last| last.saturating_add(tau_ns(config))),
        ),
        InteractionState::Away => IdleCheckpoint::Wait(None),
        InteractionState::Idle { predicted_ns } => {
            let last = machine.last_input_ns().unwrap_or(now);
            let room = match predicted_ns {
                Some(p) => last.saturating_add(p).saturating_sub(now),
                None => Nanos::MAX,
            };
            if room >= config.checkpoint_estimate_ns {
                IdleCheckpoint::Now
            } else {
                IdleCheckpoint::Wait(None)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Nanos = NS_PER_SEC;

    #[test]
    fn predictors_over_the_last_m() {
        let h = [10 * S, 4 * S, 8 * S, 6 * S];
        assert_eq!(predict_idle_ns(&h, 3, IdlePredictor::LastMin), Some(4 * S));
        assert_eq!(
            predict_idle_ns(&h, 3, IdlePredictor::LastAverage),
            Some(6 * S)
        );
        assert_eq!(predict_idle_ns(&h, 1, IdlePredictor::LastMin), Some(6 * S));
        assert_eq!(predict_idle_ns(&[], 3, IdlePredictor::LastAverage), None);
    }

    /// Coalescing that saturates: absorbed bytes grow like a rising curve that flattens,
    /// so e = absorbed / staleness rises, then falls: the detector closes near its peak.
    #[test]
    fn the_peak_closes_the_transaction_and_a_rise_is_needed() {
        let config = AdaptiveConfig {
            window_samples: 4,
            ..AdaptiveConfig::default()
        };
        let mut curve = ECurve::default();
        let mut closed_at = None;
        for t in 1..=60u64 {
            // Absorbed bytes: t² while t ≤ 10, then flat (e = t, then 100/t).
            let absorbed = t.min(10).pow(2) * 1000;
            curve.push(t * S, absorbed, config.window_samples);
            curve.note_rise(&config);
            if tradeoff_decision(&curve, &config) == TradeoffDecision::Close {
                closed_at = Some(t);
                break;
            }
        }
        let t = closed_at.expect("the peak is found");
        assert!((11..=14).contains(&t), "closed at {t} s, peak at 10 s");
        // A curve that only falls never closes (nothing to gain by waiting, nothing lost):
        // the bound does it.
        let mut falling = ECurve::default();
        for t in 1..=20u64 {
            falling.push(t * S, 1000, 4);
            falling.note_rise(&config);
            assert_eq!(
                tradeoff_decision(&falling, &config),
                TradeoffDecision::KeepOpen
            );
        }
    }

    #[test]
    fn incremental_regression_matches_a_fresh_fit() {
        let mut curve = ECurve::default();
        for t in 1..=20u64 {
            curve.push(t * S, t * t * 7 + 3, 5);
        }
        let mut fresh = ECurve::default();
        for t in 16..=20u64 {
            fresh.push(t * S, t * t * 7 + 3, 5);
        }
        let (a, b) = (curve.gradient().unwrap(), fresh.gradient().unwrap());
        assert!((a - b).abs() < 1e-6 * b.abs(), "{a} vs {b}");
    }

    #[test]
    fn the_machine_moves_through_interactive_idle_and_away() {
        let config = AdaptiveConfig::default(); // τ = 3 s, t_l = 30 s
        let mut m = InteractionMachine::default();
        m.input(0, &config);
        assert_eq!(m.state(S, &config), InteractionState::Interactive);
        assert_eq!(
            idle_checkpoint_decision(&m, S, &config),
            IdleCheckpoint::Wait(Some(3 * S))
        );
        // τ passed, no history yet: idle with no prediction, a checkpoint may run.
        assert_eq!(
            m.state(3 * S, &config),
            InteractionState::Idle { predicted_ns: None }
        );
        assert_eq!(
            idle_checkpoint_decision(&m, 3 * S, &config),
            IdleCheckpoint::Now
        );
        // Learn idle intervals of 5 s and 10 s: last-min predicts 5 s.
        m.input(5 * S, &config);
        m.input(15 * S, &config);
        assert_eq!(
            m.state(19 * S, &config),
            InteractionState::Idle {
                predicted_ns: Some(5 * S)
            }
        );
        // At 19.9 s the predicted end (20 s) leaves less than the estimate: wait.
        assert_eq!(
            idle_checkpoint_decision(&m, 19_900_000_000, &config),
            IdleCheckpoint::Wait(None)
        );
        assert_eq!(m.state(45 * S, &config), InteractionState::Away);
        m.input(46 * S, &config);
        m.screen(false);
        assert_eq!(m.state(47 * S, &config), InteractionState::Away);
        assert_eq!(
            idle_checkpoint_decision(&m, 50 * S, &config),
            IdleCheckpoint::Wait(None)
        );
    }
}
