//! A run's state over simulated time: write amplification so far and free space in F2FS
//! (whole-stack runs) and on the device, sampled as the run's virtual clock passes fixed
//! intervals (reports plot them; the JSON carries them). Bounded: when the table fills, every other
//! sample is dropped and the interval doubles, so a run of any length keeps at most
//! [`SAMPLES_MAX`] samples at one interval.

use crate::Nanos;
use serde::Serialize;

/// The first sampling interval: one second of simulated time.
pub const INTERVAL_NS_START: Nanos = 1_000_000_000;
/// Samples kept at most (then the interval doubles).
pub const SAMPLES_MAX: usize = 1024;

/// The stack at one moment, counted from the start of the measurement.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Sample {
    /// Simulated time since the measurement started.
    pub t_ns: Nanos,
    /// 4 KiB blocks the host wrote to the device so far.
    pub host_write_blocks: u64,
    /// NAND pages programmed so far (host, GC, wear levelling, padding, metadata).
    pub nand_page_programs: u64,
    /// `nand_page_programs / host_write_blocks` (1 before any write).
    pub write_amplification: f64,
    /// F2FS's free segments (none in a device-only run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fs_free_segments: Option<u32>,
    /// The device's free (erased) blocks over all dies.
    pub device_free_blocks: u64,
}

/// What the stack measures at a sample.
#[derive(Clone, Copy, Debug)]
pub struct Probe {
    pub host_write_blocks: u64,
    pub nand_page_programs: u64,
    pub fs_free_segments: Option<u32>,
    pub device_free_blocks: u64,
}

/// The samples of one measurement.
#[derive(Clone, Debug, Serialize)]
pub struct Timeline {
    pub interval_ns: Nanos,
    #[serde(skip)]
    start_ns: Nanos,
    #[serde(skip)]
    next_ns: Nanos,
    pub samples: Vec<Sample>,
}

impl Timeline {
    /// An empty timeline whose measurement starts at `start_ns`.
    pub fn starting_at(start_ns: Nanos) -> Timeline {
        Timeline {
            interval_ns: INTERVAL_NS_START,
            start_ns,
            next_ns: start_ns,
            samples: Vec::new(),
        }
    }

    /// Whether the clock at `now_ns` has reached the next sample.
    #[inline]
    pub fn due(&self, now_ns: Nanos) -> bool {
        now_ns >= self.next_ns
    }

    /// Records the stack's state at `now_ns` (call when [`due`](Self::due), or to close
    /// the measurement); one sample per interval however far the clock jumped, and a
    /// second sample at the same time replaces the first.
    pub fn record(&mut self, now_ns: Nanos, probe: Probe) {
        let wa = match probe.host_write_blocks {
            0 => 1.0,
            host => probe.nand_page_programs as f64 / host as f64,
        };
        let t_ns = now_ns - self.start_ns;
        if self.samples.last().is_some_and(|s| s.t_ns == t_ns) {
            self.samples.pop();
        }
        self.samples.push(Sample {
            t_ns,
            host_write_blocks: probe.host_write_blocks,
            nand_page_programs: probe.nand_page_programs,
            write_amplification: wa,
            fs_free_segments: probe.fs_free_segments,
            device_free_blocks: probe.device_free_blocks,
        });
        if self.samples.len() >= SAMPLES_MAX {
            self.decimate();
        }
        let elapsed = now_ns - self.start_ns;
        self.next_ns = self.start_ns + (elapsed / self.interval_ns + 1) * self.interval_ns;
    }

    /// Keeps every other sample and doubles the interval.
    fn decimate(&mut self) {
        let mut i = 0;
        self.samples.retain(|_| {
            i += 1;
            i % 2 == 1
        });
        self.interval_ns *= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(host: u64) -> Probe {
        Probe {
            host_write_blocks: host,
            nand_page_programs: host * 2,
            fs_free_segments: Some(10),
            device_free_blocks: 5,
        }
    }

    #[test]
    fn one_sample_per_interval_and_bounded() {
        let mut t = Timeline::starting_at(500);
        assert!(t.due(500));
        t.record(500, probe(0));
        assert_eq!(t.samples[0].write_amplification, 1.0);
        assert!(!t.due(500 + INTERVAL_NS_START - 1) && t.due(500 + INTERVAL_NS_START));
        // A jump over many intervals gives one sample, and the next is on the grid.
        t.record(500 + 7 * INTERVAL_NS_START + 3, probe(4));
        assert_eq!(t.samples[1].t_ns, 7 * INTERVAL_NS_START + 3);
        assert_eq!(t.samples[1].write_amplification, 2.0);
        assert!(!t.due(500 + 8 * INTERVAL_NS_START - 1) && t.due(500 + 8 * INTERVAL_NS_START));
        let mut now = 500 + 8 * INTERVAL_NS_START;
        for _ in 0..10 * SAMPLES_MAX {
            if t.due(now) {
                t.record(now, probe(1));
            }
            now += INTERVAL_NS_START / 3;
        }
        assert!(t.samples.len() < SAMPLES_MAX);
        assert!(t.interval_ns > INTERVAL_NS_START);
        assert!(t.samples.windows(2).all(|w| w[0].t_ns < w[1].t_ns));
    }
}
