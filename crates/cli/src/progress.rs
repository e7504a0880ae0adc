//! A progress bar on a terminal, shown only once a phase has run for a second.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use flashstack_replay::Progress;
use indicatif::{ProgressBar, ProgressStyle};

pub struct Bar {
    enabled: bool,
    label: String,
    total: Option<u64>,
    started: Instant,
    bar: Option<ProgressBar>,
}

impl Bar {
    pub fn new(quiet: bool) -> Self {
        Bar {
            enabled: !quiet && std::io::stderr().is_terminal(),
            label: String::new(),
            total: None,
            started: Instant::now(),
            bar: None,
        }
    }

    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Progress for Bar {
    fn phase(&mut self, name: &str, total: Option<u64>) {
        self.finish();
        self.label = name.to_string();
        self.total = total;
        self.started = Instant::now();
    }

    fn advance(&mut self, done: u64) {
        if !self.enabled {
            return;
        }
        if self.bar.is_none() && self.started.elapsed() > Duration::from_secs(1) {
            let bar = match self.total {
                Some(total) => ProgressBar::new(total),
                None => ProgressBar::no_length(),
            };
            let style = ProgressStyle::with_template(
                "{msg:>22} [{bar:40}] {pos}/{len} ({per_sec}, eta {eta})",
            )
            .expect("static template")
            .progress_chars("=> ");
            bar.set_style(style);
            bar.set_message(self.label.clone());
            // The bar appears a second into the phase: start its rate estimate from here.
            bar.set_position(done);
            bar.reset_eta();
            self.bar = Some(bar);
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
