//! What a captured block trace adds to a replay: a check that it fits the device before
//! anything runs, the data it reads without ever writing (which a phone holds and a fresh
//! device does not), a breakdown by process, and the report section that says all of it
//! together with what the capture held (requests out of order, idle gaps, duplicates).

use std::ops::Range;

use flashstack_block::{BlockDevice, RequestKind, LBA_SIZE};
use flashstack_report::{
    ExistingReadFigures, HostFigures, IdleGapFigures, ProcessFigures, TraceFigures, OTHER_PROCESSES,
};
use flashstack_sim::LatencyHistogram;
use flashstack_trace::{idle_gaps, Trace, TraceRequest, IDLE_GAP_NS};

use crate::{Progress, ReplayError, Replayer};

/// Most processes a report lists by name (the rest are summed as [`OTHER_PROCESSES`]).
pub const PROCESSES_LISTED_MAX: usize = 1_000;

/// Per-process counters of the measured replay: one slot per listed process, plus one for
/// the rest.
pub(crate) struct ProcessStats {
    /// Slot of each process index of the trace.
    slot_of: Vec<u32>,
    slots: Vec<ProcessSlot>,
}

struct ProcessSlot {
    name: String,
    /// Requests and 4 KiB LBAs per kind, indexed like `RequestKind::ALL`.
    requests: [u64; 4],
    lbas: [u64; 4],
    latency: [LatencyHistogram; 4],
}

impl ProcessSlot {
    fn new(name: String) -> Self {
        ProcessSlot {
            name,
            requests: [0; 4],
            lbas: [0; 4],
            latency: std::array::from_fn(|_| LatencyHistogram::new()),
        }
    }

    fn figures(&self) -> ProcessFigures {
        let latency = RequestKind::ALL
            .iter()
            .zip(&self.latency)
            .zip(&self.requests)
            .filter(|(_, &n)| n > 0)
            .map(|((kind, h), _)| (kind.name().to_string(), h.summary()))
            .collect();
        let bytes = |i: usize| self.lbas[i] * LBA_SIZE as u64;
        ProcessFigures {
            name: self.name.clone(),
            requests: HostFigures {
                read_requests: self.requests[0],
                write_requests: self.requests[1],
                trim_requests: self.requests[2],
                flush_requests: self.requests[3],
                read_bytes: bytes(0),
                write_bytes: bytes(1),
                trim_bytes: bytes(2),
            },
            latency,
        }
    }
}

fn kind_index(kind: RequestKind) -> usize {
    RequestKind::ALL
        .iter()
        .position(|&k| k == kind)
        .expect("every kind is in ALL")
}

impl ProcessStats {
    /// Slots for the `listed` processes of `trace` with the most bytes (ties: more
    /// requests first, then first seen first), and one for the rest if any is left out.
    /// Processes without a request (all theirs dropped by cleaning) are not listed.
    fn new(trace: &Trace, listed: usize) -> ProcessStats {
        let processes = trace.processes.len().max(1);
        let (mut bytes, mut requests) = (vec![0u64; processes], vec![0u64; processes]);
        for r in &trace.requests {
            if let Some(b) = bytes.get_mut(r.process as usize) {
                *b = b.saturating_add(r.len_bytes);
                requests[r.process as usize] += 1;
            }
        }
        let mut order: Vec<usize> = (0..processes).filter(|&p| requests[p] > 0).collect();
        order.sort_by(|&a, &b| {
            (bytes[b], requests[b])
                .cmp(&(bytes[a], requests[a]))
                .then(a.cmp(&b))
        });
        let listed = listed.min(PROCESSES_LISTED_MAX).min(order.len());
        let other = listed as u32;
        let mut slot_of = vec![other; processes];
        let mut slots = Vec::with_capacity(listed + 1);
        for (slot, &process) in order[..listed].iter().enumerate() {
            slot_of[process] = slot as u32;
            let name = trace.processes.get(process).map_or("?", String::as_str);
            slots.push(ProcessSlot::new(name.to_string()));
        }
        if listed < order.len() {
            slots.push(ProcessSlot::new(OTHER_PROCESSES.to_string()));
        }
        ProcessStats { slot_of, slots }
    }

    pub(crate) fn record(&mut self, request: &TraceRequest, lbas: u64, latency_ns: u64) {
        // A process the table does not know goes with the rest (the last slot).
        let other = self.slots.len().saturating_sub(1) as u32;
        let slot = self
            .slot_of
            .get(request.process as usize)
            .copied()
            .unwrap_or(other);
        let Some(slot) = self.slots.get_mut(slot as usize) else {
            return;
        };
        let i = kind_index(request.kind);
        slot.requests[i] += 1;
        slot.lbas[i] += lbas;
        slot.latency[i].record(latency_ns);
    }
}

/// The LBAs a trace reads before writing them, and what was done about them.
pub(crate) struct ExistingReads {
    /// Runs of such LBAs, in address order.
    ranges: Vec<Range<u64>>,
    lbas: u64,
    enabled: bool,
    laid_down: u64,
}

/// A bit per LBA.
struct LbaBits {
    words: Vec<u64>,
    /// One bit per [`LBA_BITS_CHUNK`] words: set once any of them was set, so [`runs`]
    /// passes over the rest without reading them (the words start as untouched zero
    /// pages, and reading one faults it in).
    touched: Vec<u64>,
}

/// Words of [`LbaBits`] per bit of its touched map (4 KiB of words).
const LBA_BITS_CHUNK: usize = 512;

impl LbaBits {
    fn new(lbas: u64) -> Self {
        let words = lbas.div_ceil(64) as usize;
        LbaBits {
            words: vec![0; words],
            touched: vec![0; words.div_ceil(LBA_BITS_CHUNK * 64)],
        }
    }
    fn get(&self, lba: u64) -> bool {
        self.words[(lba / 64) as usize] & (1 << (lba % 64)) != 0
    }
    fn set(&mut self, lba: u64) {
        let word = (lba / 64) as usize;
        self.words[word] |= 1 << (lba % 64);
        let chunk = word / LBA_BITS_CHUNK;
        self.touched[chunk / 64] |= 1 << (chunk % 64);
    }
    /// The indices and values of the words that may hold set bits, in order.
    fn touched_words(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        let chunks = self.words.len().div_ceil(LBA_BITS_CHUNK);
        (0..chunks)
            .filter(|&c| self.touched[c / 64] & (1 << (c % 64)) != 0)
            .flat_map(move |c| {
                let range = c * LBA_BITS_CHUNK..((c + 1) * LBA_BITS_CHUNK).min(self.words.len());
                range.map(move |w| (w, self.words[w]))
            })
    }
}

impl Replayer {
    /// The first request of `requests` that addresses LBAs beyond the device (unless the
    /// run folds them in, `OutOfRange::Wrap`), with its index. A cheap pass, meant to run
    /// before preconditioning so that a trace that cannot run fails at once.
    pub fn first_beyond(&self, requests: &[TraceRequest]) -> Option<(u64, TraceRequest)> {
        requests
            .iter()
            .enumerate()
            .find(|(_, r)| r.len_bytes > 0 && self.resolve_range(r).is_none())
            .map(|(i, r)| (i as u64, *r))
    }

    /// Counts the measured replay per process of `trace`: the `listed` processes with the
    /// most bytes by name, the rest together ([`Replayer::trace_figures`] reports them).
    pub fn track_processes(&mut self, trace: &Trace, listed: usize) {
        self.processes = Some(ProcessStats::new(trace, listed));
    }

    /// Finds the LBAs `requests` read before writing (or trimming) them. With `lay_down`,
    /// [`prepare`](Self::prepare) writes every one of them that holds no data after
    /// preconditioning, with bytes from the content model, before the measurement
    /// starts: the data the phone held when the trace was captured. Without it they are
    /// only counted. Memory: two bits per LBA of the device while planning.
    pub fn plan_existing_reads(&mut self, requests: &[TraceRequest], lay_down: bool) {
        let capacity = self.ftl.capacity_lbas();
        let mut written = LbaBits::new(capacity);
        let mut read_first = LbaBits::new(capacity);
        for request in requests {
            if request.kind == RequestKind::Flush || request.len_bytes == 0 {
                continue;
            }
            let Some((first, count, _)) = self.resolve_range(request) else {
                continue;
            };
            for lba in first..first + u64::from(count) {
                match request.kind {
                    RequestKind::Read if !written.get(lba) => read_first.set(lba),
                    RequestKind::Read => {}
                    _ => written.set(lba),
                }
            }
        }
        let ranges = runs(&read_first, capacity);
        let lbas = ranges.iter().map(|r| r.end - r.start).sum();
        self.existing_reads = Some(ExistingReads {
            ranges,
            lbas,
            enabled: lay_down,
            laid_down: 0,
        });
    }

    /// Writes the planned existing data that holds no data yet (called by `prepare`).
    pub(crate) fn lay_down_existing_reads(
        &mut self,
        progress: &mut dyn Progress,
    ) -> Result<(), ReplayError> {
        let Some(plan) = self.existing_reads.take() else {
            return Ok(());
        };
        let mut laid_down = 0;
        if plan.enabled {
            progress.phase("existing data for reads", Some(plan.lbas));
            for range in &plan.ranges {
                for unmapped in self.unmapped_runs(range.clone()) {
                    self.lay_down(unmapped, &mut laid_down, progress)?;
                }
            }
        }
        self.existing_reads = Some(ExistingReads { laid_down, ..plan });
        Ok(())
    }

    /// The runs of `range` whose LBAs hold no data.
    fn unmapped_runs(&self, range: Range<u64>) -> Vec<Range<u64>> {
        let mut out: Vec<Range<u64>> = Vec::new();
        for lba in range {
            if self.ftl.is_mapped(lba) {
                continue;
            }
            match out.last_mut() {
                Some(run) if run.end == lba => run.end += 1,
                _ => out.push(lba..lba + 1),
            }
        }
        out
    }

    /// The trace section of the report: `trace` as replayed (after any cleaning), what
    /// the capture held, the existing data for reads and the per-process breakdown.
    pub fn trace_figures(&self, trace: &Trace) -> TraceFigures {
        let clean = trace.clean_report.unwrap_or_default();
        let cleaned = trace.clean_report.is_some();
        // Gaps as captured: what cleaning cut, or what is still there.
        let found = idle_gaps(&trace.requests, IDLE_GAP_NS);
        let idle = if clean.gaps_shortened > 0 {
            IdleGapFigures {
                threshold_ns: IDLE_GAP_NS,
                count: clean.gaps_shortened,
                longest_ns: clean.longest_gap_ns,
                total_ns: clean.time_removed_ns + clean.gaps_shortened * IDLE_GAP_NS,
                compressed: true,
                time_removed_ns: clean.time_removed_ns,
            }
        } else {
            IdleGapFigures {
                threshold_ns: IDLE_GAP_NS,
                count: found.count,
                longest_ns: found.longest_ns,
                total_ns: found.total_ns,
                compressed: false,
                time_removed_ns: 0,
            }
        };
        let existing_reads =
            self.existing_reads
                .as_ref()
                .map_or_else(ExistingReadFigures::default, |e| ExistingReadFigures {
                    enabled: e.enabled,
                    lbas_read_unwritten: e.lbas,
                    lbas_laid_down: e.laid_down,
                });
        TraceFigures {
            format: trace.format.to_string(),
            requests: trace.requests.len() as u64,
            reordered: trace.parse_report.reordered,
            idle_gaps: idle,
            cleaned,
            duplicates_dropped: clean.duplicates_dropped,
            duplicate_bytes_dropped: clean.duplicate_bytes_dropped,
            rewrites_kept: clean.rewrites_kept,
            existing_reads,
            processes: self.processes.as_ref().map_or_else(Vec::new, |p| {
                p.slots.iter().map(ProcessSlot::figures).collect()
            }),
        }
    }
}

/// The runs of set bits among the first `lbas`.
fn runs(bits: &LbaBits, lbas: u64) -> Vec<Range<u64>> {
    let mut out: Vec<Range<u64>> = Vec::new();
    for (word_index, word) in bits.touched_words() {
        if word == 0 {
            continue;
        }
        for bit in 0..64 {
            let lba = word_index as u64 * 64 + bit;
            if lba >= lbas || word & (1 << bit) == 0 {
                continue;
            }
            match out.last_mut() {
                Some(run) if run.end == lba => run.end += 1,
                _ => out.push(lba..lba + 1),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The runs over the touched words equal the runs over every bit.
    #[test]
    fn runs_pass_over_untouched_words_only() {
        let lbas = 3 * 64 * LBA_BITS_CHUNK as u64 + 70;
        let mut bits = LbaBits::new(lbas);
        let set = [
            0u64,
            1,
            2,
            63,
            64,
            65,
            32_767,
            32_768,
            32_769,
            98_000,
            lbas - 1,
        ];
        for &lba in &set {
            bits.set(lba);
        }
        let mut expected: Vec<Range<u64>> = Vec::new();
        for lba in (0..lbas).filter(|&l| bits.get(l)) {
            match expected.last_mut() {
                Some(run) if run.end == lba => run.end += 1,
                _ => expected.push(lba..lba + 1),
            }
        }
        assert_eq!(expected.len(), 5);
        assert_eq!(runs(&bits, lbas), expected);
        assert_eq!(runs(&bits, lbas - 1).last(), Some(&(98_000..98_001)));
    }
}
