//! What reading a file costs: the block layer's requests and the host's time per request.
//!
//! A whole-file read (readahead of the file, or an app's reads issued back to back) is
//! cut into block requests at every extent boundary (a request covers consecutive LBAs
//! only) and at the block layer's largest request (`max_request_bytes`). The host CPU
//! spends `host_overhead_ns_per_request` on each (the file system's read path, the block
//! layer, the SCSI/UFS driver, the completion interrupt), one request after another on
//! one core; the device then charges its own per-command overhead
//! (`host.controller_overhead_ns`), reads each flash page on its plane (pages of one
//! request on different planes in parallel; pages on one plane one after the other) and
//! moves the data over the host link, serving up to `host.queue_depth` requests at once.
//! So a fragmented file pays (1) more requests × host overhead, (2) more requests × the
//! device's command overhead, and (3) lost parallelism where its pages collide on a
//! plane. `docs/janusd.md` gives the calibration on `ufs31` and each term's share.

use flashstack_block::{BlockDevice, BlockError};
use flashstack_sim::Nanos;
use serde::{Deserialize, Serialize};

use crate::layout::extent_list;

/// The host side of a read: the block layer's request size limit and the host's time
/// per request. One config for the block layer, serde/TOML.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
        (self.max_request_bytes / flashstack_block::LBA_SIZE as u64).clamp(1, u32::MAX as u64)
            as u32
    }

    /// The block requests a whole-file read of `addrs` (page order) issues: (LBA, count),
    /// split at extent boundaries and at the largest request.
    pub fn requests(&self, addrs: &[u32]) -> Vec<(u64, u32)> {
        let max = self.max_request_blocks();
        let mut out = Vec::new();
        for (start, len) in extent_list(addrs) {
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

/// A timed whole-file read.
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
/// of 1 each waits for the previous completion) and times them. Contents are not copied out.
pub fn timed_read<D: BlockDevice + ?Sized>(
    dev: &mut D,
    start_ns: Nanos,
    requests: &[(u64, u32)],
    model: &ReadModel,
) -> Result<ReadTiming, BlockError> {
    let window = model.in_flight_max.max(1) as usize;
    // Completion times of the requests in flight, oldest first (bounded by `window`).
    let mut in_flight = std::collections::VecDeque::with_capacity(window);
    let mut submit_ns = start_ns;
    let mut done_ns = start_ns;
    let mut lbas = 0u64;
    for &(lba, count) in requests {
        if in_flight.len() == window {
            let oldest: Nanos = in_flight.pop_front().expect("window is at least 1");
            submit_ns = submit_ns.max(oldest);
        }
        submit_ns += model.host_overhead_ns_per_request;
        let c = dev.read(submit_ns, lba, count, None)?;
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
    fn requests_split_at_extents_and_the_size_limit() {
        let m = ReadModel {
            max_request_bytes: 8192,
            ..ReadModel::default()
        };
        assert_eq!(m.max_request_blocks(), 2);
        assert_eq!(
            m.requests(&[10, 11, 12, 20, 0, 21]),
            vec![(10, 2), (12, 1), (20, 1), (21, 1)]
        );
        assert_eq!(
            ReadModel::default()
                .requests(&(100..300).collect::<Vec<_>>())
                .len(),
            2
        );
    }
}
