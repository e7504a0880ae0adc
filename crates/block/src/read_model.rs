//! The block layer's read path above a device: how many requests a read becomes and what
//! the host pays per request.
//!
//! A read of consecutive file pages is cut into block requests at every break in their
//! block addresses (a request covers consecutive LBAs only: an extent boundary) and at
//! the largest request (`max_request_bytes`). The host CPU spends
//! `host_overhead_ns_per_request` on each (the file system's read path, the block layer,
//! the SCSI/UFS driver, the completion interrupt), one request after another on one core,
//! with at most `in_flight_max` outstanding; the device then charges its own command
//! overhead, senses each flash page on its plane (pages on different planes in parallel,
//! on one plane one after the other) and moves the data over its link. So a fragmented
//! file pays more requests × host time, more requests × command time, and lost
//! parallelism where its pages collide. `docs/janusd.md` gives the calibration.

use std::collections::VecDeque;

use flashstack_sim::Nanos;
use serde::{Deserialize, Serialize};

use crate::{BlockDevice, BlockError, LBA_SIZE};

/// The host side of a read: the block layer's request size limit, the host's time per
/// request and how many requests a reader keeps in flight. Serde/TOML.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReadModel {
    /// Largest block request (`max_sectors_kb`): 512 KiB, ufshcd's limit of 1,024
    /// sectors in the Android kernels of the Janusd era.
    pub max_request_bytes: u64,
    /// Host CPU time per block request: 10 µs, the Linux block I/O stack's kernel time
    /// per interrupt-driven 4 KiB request (Yang, Minturn and Hady, "When Poll Is Better
    /// than Interrupt", FAST '12: ≈ 9 µs on a 2.93 GHz core), rounded up.
    pub host_overhead_ns_per_request: Nanos,
    /// Requests the reader keeps in flight: 32 for readahead of a whole file (issued
    /// asynchronously, bounded by the UFS queue's 32 slots), 1 for a reader that waits for
    /// each read before the next (SQLite's page reads).
    pub in_flight_max: u32,
}

impl Default for ReadModel {
    fn default() -> Self {
        ReadModel {
            max_request_bytes: 512 * 1024,
            host_overhead_ns_per_request: 10_000,
            in_flight_max: 32,
        }
    }
}

impl ReadModel {
    /// Largest request in 4 KiB blocks (at least one).
    pub fn max_request_blocks(&self) -> u32 {
        (self.max_request_bytes / LBA_SIZE as u64).clamp(1, u32::MAX as u64) as u32
    }

    /// Cuts runs of consecutive LBAs (first, count) into requests no larger than the
    /// largest request, in order.
    pub fn split(&self, runs: &[(u64, u32)]) -> Vec<(u64, u32)> {
        let max = self.max_request_blocks();
        let mut out = Vec::with_capacity(runs.len());
        for &(start, len) in runs {
            let mut at = 0u32;
            while at < len {
                let n = (len - at).min(max);
                out.push((start + at as u64, n));
                at += n;
            }
        }
        out
    }
}

/// Runs of consecutive LBAs in `lbas` (in order): where each next LBA is not the previous
/// plus one, a new run starts.
pub fn runs_of(lbas: &[u64]) -> Vec<(u64, u32)> {
    let mut out: Vec<(u64, u32)> = Vec::new();
    let mut prev: Option<u64> = None;
    for &a in lbas {
        match (prev, out.last_mut()) {
            (Some(p), Some(last)) if p + 1 == a && last.1 < u32::MAX => last.1 += 1,
            _ => out.push((a, 1)),
        }
        prev = Some(a);
    }
    out
}

/// A timed read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadTiming {
    pub requests: u64,
    pub lbas: u64,
    /// From the first request's submission to the last completion.
    pub elapsed_ns: Nanos,
    /// Of which the host CPU spent on requests (`requests × host overhead`).
    pub host_ns: Nanos,
}

/// Issues `requests` to `dev` from `start_ns` as the host would (each after its host
/// overhead, back to back on one core, at most `in_flight_max` outstanding; with a window
/// of 1 each waits for the previous completion) and times them. With `out` (exactly the
/// requests' LBAs × 4 KiB) the contents are copied out in request order.
pub fn timed_read<D: BlockDevice + ?Sized>(
    dev: &mut D,
    start_ns: Nanos,
    requests: &[(u64, u32)],
    model: &ReadModel,
    mut out: Option<&mut [u8]>,
) -> Result<ReadTiming, BlockError> {
    let window = model.in_flight_max.max(1) as usize;
    // Completion times of the requests in flight, oldest first (bounded by `window`).
    let mut in_flight = VecDeque::with_capacity(window);
    let mut submit_ns = start_ns;
    let mut done_ns = start_ns;
    let mut lbas = 0u64;
    for &(lba, count) in requests {
        if in_flight.len() == window {
            let oldest: Nanos = in_flight.pop_front().expect("window is at least 1");
            submit_ns = submit_ns.max(oldest);
        }
        submit_ns += model.host_overhead_ns_per_request;
        let at = lbas as usize * LBA_SIZE;
        let buf = out
            .as_deref_mut()
            .map(|o| &mut o[at..at + count as usize * LBA_SIZE]);
        let c = dev.read(submit_ns, lba, count, buf)?;
        in_flight.push_back(c.complete_ns);
        done_ns = done_ns.max(c.complete_ns);
        lbas += count as u64;
    }
    Ok(ReadTiming {
        requests: requests.len() as u64,
        lbas,
        elapsed_ns: done_ns.max(submit_ns) - start_ns,
        host_ns: requests.len() as u64 * model.host_overhead_ns_per_request,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_split_at_breaks_and_the_size_limit() {
        let m = ReadModel {
            max_request_bytes: 8192,
            ..ReadModel::default()
        };
        assert_eq!(m.max_request_blocks(), 2);
        let runs = runs_of(&[10, 11, 12, 20, 21]);
        assert_eq!(runs, vec![(10, 3), (20, 2)]);
        assert_eq!(m.split(&runs), vec![(10, 2), (12, 1), (20, 2)]);
    }
}
