//! Progress on standard error. On a terminal a bar shows once a phase has run for a
//! second; elsewhere (a log file, CI) nothing animates. Either way every phase ends with
//! one line saying what finished and how long it took, so a log shows where the time went
//! and the terminal is left on a fresh line. `--quiet` shows nothing.
//!
//! Wall-clock time appears only here, on standard error: no figure of a run depends on it.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use flashstack_replay::Progress;
use flashstack_sim::units::format_count;
use indicatif::{ProgressBar, ProgressState, ProgressStyle};

/// How progress is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Off,
    /// One line per finished phase (standard error is not a terminal).
    Lines,
    /// A bar while a phase runs, then its line.
    Terminal,
}

impl Mode {
    fn detect(quiet: bool) -> Mode {
        if quiet {
            Mode::Off
        } else if std::io::stderr().is_terminal() {
            Mode::Terminal
        } else {
            Mode::Lines
        }
    }
}

pub struct Bar {
    mode: Mode,
    /// The running phase's name; empty when none runs.
    label: String,
    total: Option<u64>,
    started: Instant,
    bar: Option<ProgressBar>,
}

impl Bar {
    pub fn new(quiet: bool) -> Self {
        Bar {
            mode: Mode::detect(quiet),
            label: String::new(),
            total: None,
            started: Instant::now(),
            bar: None,
        }
    }

    /// Ends the running phase (if any) with its line.
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        if self.label.is_empty() {
            return;
        }
        let label = std::mem::take(&mut self.label);
        if self.mode != Mode::Off {
            eprintln!("{}", phase_line(&label, self.started.elapsed()));
        }
    }

    fn show(&mut self, done: u64) {
        let bar = match self.total {
            Some(total) => ProgressBar::new(total),
            None => ProgressBar::no_length(),
        };
        // The bar appears a second into the phase, already at `done`: its rate counts
        // from here (indicatif's own estimate, seeded with that jump, read in the
        // billions per second).
        let style = ProgressStyle::with_template(
            "{msg:>22} [{bar:40}] {pos}/{len} ({rate}/s, {left} left)",
        )
        .expect("static template")
        .with_key(
            "rate",
            move |s: &ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{}", format_count(rate_per_s(s, done) as u64));
            },
        )
        .with_key(
            "left",
            move |s: &ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{}", time_left(s, done));
            },
        )
        .progress_chars("=> ");
        bar.set_style(style);
        bar.set_message(self.label.clone());
        bar.set_position(done);
        self.bar = Some(bar);
    }
}

/// Items per second since the bar appeared at position `start`.
fn rate_per_s(state: &ProgressState, start: u64) -> f64 {
    let seconds = state.elapsed().as_secs_f64();
    if seconds <= 0.0 {
        return 0.0;
    }
    state.pos().saturating_sub(start) as f64 / seconds
}

fn time_left(state: &ProgressState, start: u64) -> String {
    let rate = rate_per_s(state, start);
    match state.len() {
        Some(len) if rate > 0.0 => {
            let seconds = len.saturating_sub(state.pos()) as f64 / rate;
            format_seconds(Duration::from_secs_f64(seconds.min(1e7)))
        }
        _ => "?".into(),
    }
}

fn format_seconds(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, s % 3600 / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// The line a finished phase leaves: `precondition: fill: 2.3 s`.
fn phase_line(label: &str, elapsed: Duration) -> String {
    format!("{label}: {}", format_seconds(elapsed))
}

impl Progress for Bar {
    fn phase(&mut self, name: &str, total: Option<u64>) {
        self.finish();
        self.label = name.to_string();
        self.total = total;
        self.started = Instant::now();
    }

    fn advance(&mut self, done: u64) {
        if self.mode != Mode::Terminal {
            return;
        }
        if self.bar.is_none() && self.started.elapsed() > Duration::from_secs(1) {
            self.show(done);
        }
        if let Some(bar) = &self.bar {
            bar.set_position(done);
        }
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.finish();
    }
}

/// A step that reports no progress of its own (a whole-stack run): a spinner on a
/// terminal, and its line when it ends.
pub struct Spinner {
    mode: Mode,
    message: String,
    started: Instant,
    spinner: Option<ProgressBar>,
}

impl Spinner {
    pub fn start(quiet: bool, message: &str) -> Spinner {
        let mode = Mode::detect(quiet);
        let spinner = (mode == Mode::Terminal).then(|| {
            let s = ProgressBar::new_spinner();
            if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} ({elapsed})") {
                s.set_style(style);
            }
            s.set_message(message.to_string());
            s.enable_steady_tick(Duration::from_millis(200));
            s
        });
        Spinner {
            mode,
            message: message.to_string(),
            started: Instant::now(),
            spinner,
        }
    }

    pub fn finish(self) {
        if let Some(s) = &self.spinner {
            s.finish_and_clear();
        }
        if self.mode != Mode::Off {
            eprintln!("{}", phase_line(&self.message, self.started.elapsed()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phase_lines_read_as_durations() {
        assert_eq!(
            phase_line("replay", Duration::from_millis(2_340)),
            "replay: 2.3 s"
        );
        assert_eq!(
            phase_line("precondition: age", Duration::from_secs(75)),
            "precondition: age: 1m15s"
        );
        assert_eq!(format_seconds(Duration::from_secs(3_720)), "1h02m");
    }
}
