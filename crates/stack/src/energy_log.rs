//! What the phone's energy model (`flashstack_energy`) needs from a stack beyond the
//! device's busy periods: the user's inputs, the screen's standby intervals, and the
//! pages the cache held beyond the baseline over time. Bookkeeping only: nothing here
//! changes what the stack does.

use flashstack_sim::Nanos;
use flashstack_sqlvfs::UserInput;

/// Most standby intervals kept; later ones merge into the last (the bound of the table).
const STANDBY_INTERVALS_MAX: usize = 1 << 16;

#[derive(Clone, Debug, Default)]
pub struct EnergyLog {
    start_ns: Nanos,
    inputs: u64,
    standby: Vec<(Nanos, Nanos)>,
    screen_off_since: Option<Nanos>,
    /// Dirty pages and transaction versions at the last sample, and when it was taken.
    held_pages: u64,
    sampled_ns: Nanos,
    extra_page_ns: u128,
}

/// The log's figures up to a time: what `flashstack_energy::Activity` takes.
#[derive(Clone, Debug, Default)]
pub struct EnergyInputs {
    pub start_ns: Nanos,
    pub inputs: u64,
    pub standby: Vec<(Nanos, Nanos)>,
    pub extra_page_ns: u128,
}

impl EnergyLog {
    pub fn new(start_ns: Nanos, held_pages: u64) -> Self {
        Self {
            start_ns,
            held_pages,
            sampled_ns: start_ns,
            ..Self::default()
        }
    }

    /// The cache holds `held_pages` from `now` on (the count since the last sample held
    /// until now).
    pub fn sample(&mut self, now: Nanos, held_pages: u64) {
        if now > self.sampled_ns {
            self.extra_page_ns += u128::from(self.held_pages) * u128::from(now - self.sampled_ns);
            self.sampled_ns = now;
        }
        self.held_pages = held_pages;
    }

    pub fn input(&mut self, now: Nanos, input: UserInput) {
        match input {
            UserInput::ScreenOff => {
                self.screen_off_since.get_or_insert(now.max(self.start_ns));
            }
            UserInput::ScreenOn => self.screen_on(now),
            UserInput::Touch | UserInput::Scroll | UserInput::Key => {
                self.screen_on(now);
                self.inputs += 1;
            }
        }
    }

    fn screen_on(&mut self, now: Nanos) {
        let Some(since) = self.screen_off_since.take() else {
            return;
        };
        if now <= since {
            return;
        }
        let full = self.standby.len() >= STANDBY_INTERVALS_MAX;
        match self.standby.last_mut() {
            Some(last) if full || since <= last.1 => {
                last.1 = last.1.max(now);
            }
            _ => self.standby.push((since, now)),
        }
    }

    /// The figures up to `end_ns` (a screen still off counts as off until then).
    pub fn inputs_until(&self, end_ns: Nanos) -> EnergyInputs {
        let mut standby = self.standby.clone();
        if let Some(since) = self.screen_off_since {
            if end_ns > since {
                standby.push((since, end_ns));
            }
        }
        let tail_ns = end_ns.saturating_sub(self.sampled_ns);
        EnergyInputs {
            start_ns: self.start_ns,
            inputs: self.inputs,
            standby,
            extra_page_ns: self.extra_page_ns + u128::from(self.held_pages) * u128::from(tail_ns),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standby_intervals_and_page_time() {
        let mut log = EnergyLog::new(100, 2);
        log.sample(200, 5); // 2 pages for 100 ns
        log.input(300, UserInput::ScreenOff);
        log.input(350, UserInput::ScreenOff); // already off
        log.input(500, UserInput::Touch);
        log.input(600, UserInput::Key);
        log.input(900, UserInput::ScreenOff);
        let got = log.inputs_until(1000);
        assert_eq!(got.standby, vec![(300, 500), (900, 1000)]);
        assert_eq!(got.inputs, 2);
        assert_eq!(got.extra_page_ns, 200 + 5 * 800);
    }
}
