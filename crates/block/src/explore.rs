//! What a crash test explored, said in one line every test run shows.
//!
//! Crash tests (power cuts at many points of a workload, each recovery checked against a
//! reference model) end with [`Exploration::report`]: a line
//! `crash-explore: <test>: <N> cut points ..., <B> fsync'd bytes checked, 0 lost` written
//! straight to the process's standard output, past the test harness's capture, so that
//! `scripts/test` shows it (and totals it) for passing tests too.

use std::io::Write;

/// The environment variable that multiplies the cut points of the crash explorers
/// (default 1; `docs/testing.md`).
pub const SCALE_VAR: &str = "FLASHSTACK_CRASH_SCALE";

/// The exploration multiplier from [`SCALE_VAR`]: 1 when unset.
///
/// # Panics
/// On a value that is not a whole number from 1 to 1000, naming the variable: a typo
/// must not silently run the default exploration.
pub fn scale() -> u64 {
    match std::env::var(SCALE_VAR) {
        Err(_) => 1,
        Ok(text) => match text.trim().parse::<u64>() {
            Ok(n @ 1..=1000) => n,
            _ => panic!("{SCALE_VAR}={text:?}: expected a whole number from 1 to 1000"),
        },
    }
}

/// Bytes of `want` (what was promised durable) that `got` (what recovery shows) does not
/// hold: missing at the end, or different.
pub fn lost_bytes(want: &[u8], got: &[u8]) -> u64 {
    if want == got {
        return 0;
    }
    let differ = want.iter().zip(got).filter(|(a, b)| a != b).count();
    (differ + want.len().saturating_sub(got.len())) as u64
}

/// Tallies of one crash test.
#[derive(Clone, Debug, Default)]
pub struct Exploration {
    test: String,
    cut_points: u64,
    checked_bytes: u64,
    lost_bytes: u64,
    /// What the checked bytes were promised by: "fsync'd" (a file system), "flushed" (a
    /// block device).
    durable: String,
    /// Named sub-counts (where the cuts landed), in insertion order.
    notes: Vec<(String, u64)>,
}

impl Exploration {
    pub fn new(test: &str) -> Self {
        Exploration {
            test: test.to_string(),
            durable: "fsync'd".to_string(),
            ..Exploration::default()
        }
    }

    /// Names what made the checked bytes durable ("flushed" for a block device).
    pub fn durable_by(mut self, promise: &str) -> Self {
        self.durable = promise.to_string();
        self
    }

    /// One power cut whose recovery was checked.
    pub fn cut(&mut self) {
        self.cut_points += 1;
    }

    pub fn cut_points(&self) -> u64 {
        self.cut_points
    }

    /// Bytes promised durable (fsync'd, synced or flushed) that a recovery read back:
    /// `lost` of them differed.
    pub fn checked(&mut self, bytes: u64, lost: u64) {
        self.checked_bytes += bytes;
        self.lost_bytes += lost;
    }

    pub fn lost_bytes(&self) -> u64 {
        self.lost_bytes
    }

    /// Adds `n` to the named sub-count (say "mid-GC").
    pub fn note(&mut self, name: &str, n: u64) {
        match self.notes.iter_mut().find(|(k, _)| k == name) {
            Some((_, v)) => *v += n,
            None => self.notes.push((name.to_string(), n)),
        }
    }

    pub fn noted(&self, name: &str) -> u64 {
        self.notes
            .iter()
            .find(|(k, _)| k == name)
            .map_or(0, |(_, v)| *v)
    }

    /// Adds another tally's counts (tests that explore in several passes).
    pub fn merge(&mut self, other: &Exploration) {
        self.cut_points += other.cut_points;
        self.checked_bytes += other.checked_bytes;
        self.lost_bytes += other.lost_bytes;
        for (k, v) in &other.notes {
            self.note(k, *v);
        }
    }

    /// The one line (without a newline).
    pub fn line(&self) -> String {
        let notes: Vec<String> = self.notes.iter().map(|(k, v)| format!("{v} {k}")).collect();
        let notes = if notes.is_empty() {
            String::new()
        } else {
            format!(" ({})", notes.join(", "))
        };
        format!(
            "crash-explore: {}: {} cut points explored{notes}, {} {} bytes checked, {} lost",
            self.test, self.cut_points, self.checked_bytes, self.durable, self.lost_bytes
        )
    }

    /// Writes [`line`](Exploration::line) to standard output, bypassing the test
    /// harness's capture so it shows for passing tests.
    pub fn report(&self) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", self.line());
        let _ = out.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lost_bytes_counts_missing_and_different_bytes() {
        assert_eq!(lost_bytes(b"abcd", b"abcd"), 0);
        assert_eq!(lost_bytes(b"abcd", b"abXdef"), 1);
        assert_eq!(lost_bytes(b"abcd", b"ab"), 2);
        assert_eq!(lost_bytes(b"", b"xyz"), 0);
    }

    #[test]
    fn line_names_the_counts() {
        let mut e = Exploration::new("t");
        e.cut();
        e.cut();
        e.checked(4096, 0);
        e.note("mid-GC", 1);
        e.note("mid-GC", 2);
        assert_eq!(
            e.line(),
            "crash-explore: t: 2 cut points explored (3 mid-GC), 4096 fsync'd bytes checked, 0 lost"
        );
    }
}
