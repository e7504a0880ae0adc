//! User-interaction timelines: the touches, scroll steps, keys and screen-off periods a
//! user makes around a persona's user operations, placed in virtual time by those
//! operations and drawn from the run's seed (a PRNG of their own, so the persona's file
//! calls are the same with or without them). MobiFS's idle prediction watches them
//! (`docs/mobifs.md`); the phone's energy model charges the screen and the CPU for them
//! (`docs/energy.md`).
//!
//! Before each user operation, in the gap since the previous one ended:
//! - the operation's **style** comes from its name: composing (`send`, `post`, `type`,
//!   `write`, `search`, `characters`) types keys ending at the operation's start; reading
//!   (`watch`, `browse`, `read`, `scroll`, `feed`, `view`) scrolls through the last
//!   `reading_max_ns` of the gap; anything else is a tap;
//! - a **touch** starts the operation;
//! - the **screen goes off** `screen_timeout_ns` after the last input when nothing
//!   happens for that long, and on again at the next input.

use flashstack_sim::{Nanos, Rng, NS_PER_MS, NS_PER_SEC};
use flashstack_sqlvfs::UserInput;
use serde::Serialize;

/// The timeline's parameters (assumed; `docs/energy.md` says why each).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct InteractionConfig {
    /// The screen goes off after this long without input (an OEM default; AOSP's
    /// `def_screen_off_timeout` is 60 s).
    pub screen_timeout_ns: Nanos,
    /// Mean time between two keys (about 200 characters a minute on a touch keyboard).
    pub key_interval_ns: Nanos,
    /// Keys typed for a composing operation whose name gives no count.
    pub keys_default: u32,
    /// Mean time between two scroll steps while reading.
    pub scroll_interval_ns: Nanos,
    /// Reading lasts at most this long before an operation.
    pub reading_max_ns: Nanos,
}

impl Default for InteractionConfig {
    fn default() -> Self {
        Self {
            screen_timeout_ns: 30 * NS_PER_SEC,
            key_interval_ns: 300 * NS_PER_MS,
            keys_default: 20,
            scroll_interval_ns: 2 * NS_PER_SEC,
            reading_max_ns: 60 * NS_PER_SEC,
        }
    }
}

/// How the user leads up to an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// Typing `keys` keys.
    Compose {
        keys: u32,
    },
    Read,
    Tap,
}

/// The style an operation's name suggests.
pub fn style_of(name: &str, config: &InteractionConfig) -> Style {
    let lower = name.to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| lower.contains(w));
    if has(&[
        "send",
        "post",
        "type",
        "write",
        "search",
        "characters",
        "compose",
    ]) {
        let keys = lower
            .split_whitespace()
            .find_map(|w| w.parse::<u32>().ok())
            .filter(|_| lower.contains("character"))
            .unwrap_or(config.keys_default);
        Style::Compose { keys }
    } else if has(&["watch", "browse", "read", "scroll", "feed", "view"]) {
        Style::Read
    } else {
        Style::Tap
    }
}

/// `mean` ± 50 %, from `rng`.
fn jittered(rng: &mut Rng, mean: Nanos) -> Nanos {
    let half = mean / 2;
    half + rng.below(mean.max(1))
}

/// The inputs leading up to an operation of `style` starting at `op_start`, the previous
/// one having ended at `gap_start`; in time order, the touch starting it last.
fn inputs_in_gap(
    rng: &mut Rng,
    style: Style,
    gap_start: Nanos,
    op_start: Nanos,
    config: &InteractionConfig,
) -> Vec<(Nanos, UserInput)> {
    let mut out = Vec::new();
    match style {
        Style::Compose { keys } => {
            let mut t = op_start;
            for _ in 0..keys {
                t = t.saturating_sub(jittered(rng, config.key_interval_ns));
                if t <= gap_start {
                    break;
                }
                out.push((t, UserInput::Key));
            }
            out.reverse();
        }
        Style::Read => {
            let from = gap_start.max(op_start.saturating_sub(config.reading_max_ns));
            let mut t = from + jittered(rng, config.scroll_interval_ns);
            while t < op_start {
                out.push((t, UserInput::Scroll));
                t += jittered(rng, config.scroll_interval_ns);
            }
        }
        Style::Tap => {}
    }
    out.push((op_start, UserInput::Touch));
    out
}

/// Inserts screen-off and screen-on where inputs are `screen_timeout_ns` apart or more
/// (the user's last input before the gap at `last_input`).
fn with_screen(
    last_input: Nanos,
    inputs: Vec<(Nanos, UserInput)>,
    config: &InteractionConfig,
) -> Vec<(Nanos, UserInput)> {
    let mut out = Vec::with_capacity(inputs.len() + 2);
    let mut last = last_input;
    for (t, input) in inputs {
        if t.saturating_sub(last) >= config.screen_timeout_ns {
            out.push((last + config.screen_timeout_ns, UserInput::ScreenOff));
            out.push((t, UserInput::ScreenOn));
        }
        out.push((t, input));
        last = t;
    }
    out
}

/// The user's side of a run: a PRNG of its own and when the last input was.
#[derive(Clone, Debug)]
pub struct Interaction {
    rng: Rng,
    config: InteractionConfig,
    last_input_ns: Option<Nanos>,
    counts: InteractionCounts,
}

/// How many of each input a run made (reported beside its user operations).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct InteractionCounts {
    pub touches: u64,
    pub scrolls: u64,
    pub keys: u64,
    pub screen_offs: u64,
}

impl Interaction {
    pub fn new(seed: u64, config: InteractionConfig) -> Self {
        Self {
            rng: Rng::new(seed ^ 0x1a7e_4ac7_0000_0001),
            config,
            last_input_ns: None,
            counts: InteractionCounts::default(),
        }
    }

    /// The inputs before the operation `name` starting at `op_start` (the previous one
    /// ended at `gap_start`), in time order.
    pub fn before_op(
        &mut self,
        name: &str,
        gap_start: Nanos,
        op_start: Nanos,
    ) -> Vec<(Nanos, UserInput)> {
        let style = style_of(name, &self.config);
        let gap_start = gap_start.max(self.last_input_ns.unwrap_or(gap_start));
        let inputs = inputs_in_gap(&mut self.rng, style, gap_start, op_start, &self.config);
        let out = with_screen(gap_start, inputs, &self.config);
        self.count(&out);
        self.last_input_ns = Some(op_start);
        out
    }

    /// The user puts the phone down after the last operation ended at `end`: the screen
    /// goes off after the timeout.
    pub fn put_down(&mut self, end: Nanos) -> Vec<(Nanos, UserInput)> {
        let out = vec![(end + self.config.screen_timeout_ns, UserInput::ScreenOff)];
        self.count(&out);
        out
    }

    fn count(&mut self, inputs: &[(Nanos, UserInput)]) {
        for (_, input) in inputs {
            match input {
                UserInput::Touch => self.counts.touches += 1,
                UserInput::Scroll => self.counts.scrolls += 1,
                UserInput::Key => self.counts.keys += 1,
                UserInput::ScreenOff => self.counts.screen_offs += 1,
                UserInput::ScreenOn => {}
            }
        }
    }

    pub fn counts(&self) -> InteractionCounts {
        self.counts
    }

    /// Forgets the counts (after the setup phase).
    pub fn reset_counts(&mut self) {
        self.counts = InteractionCounts::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Nanos = NS_PER_SEC;

    #[test]
    fn styles_from_names() {
        let c = InteractionConfig::default();
        assert_eq!(
            style_of("send 100 characters", &c),
            Style::Compose { keys: 100 }
        );
        assert_eq!(style_of("post", &c), Style::Compose { keys: 20 });
        assert_eq!(style_of("watch news 5 min", &c), Style::Read);
        assert_eq!(style_of("launch app", &c), Style::Tap);
    }

    #[test]
    fn typing_ends_at_the_touch_and_long_gaps_turn_the_screen_off() {
        let mut i = Interaction::new(7, InteractionConfig::default());
        let got = i.before_op("send 10 characters", 0, 100 * S);
        let kinds: Vec<UserInput> = got.iter().map(|(_, k)| *k).collect();
        assert_eq!(kinds[0], UserInput::ScreenOff);
        assert_eq!(got[0].0, 30 * S);
        assert_eq!(kinds[1], UserInput::ScreenOn);
        assert_eq!(kinds.iter().filter(|k| **k == UserInput::Key).count(), 10);
        assert_eq!(*got.last().unwrap(), (100 * S, UserInput::Touch));
        assert!(got.windows(2).all(|w| w[0].0 <= w[1].0), "time order");
        // A short gap: no screen-off; reading scrolls fill it.
        let got = i.before_op("read feed", 101 * S, 110 * S);
        assert!(got.iter().all(|(_, k)| *k != UserInput::ScreenOff));
        assert!(got.iter().any(|(_, k)| *k == UserInput::Scroll));
        assert_eq!(i.counts().screen_offs, 1);
    }

    #[test]
    fn same_seed_same_timeline() {
        let run = |seed| {
            let mut i = Interaction::new(seed, InteractionConfig::default());
            let mut all = i.before_op("send 50 characters", 0, 40 * S);
            all.extend(i.before_op("watch news", 41 * S, 200 * S));
            all
        };
        assert_eq!(run(3), run(3));
        assert_ne!(run(3), run(4));
    }
}
