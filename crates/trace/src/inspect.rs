//! A one-screen summary of a request stream (`flashstack trace inspect FILE`): what the
//! workload asks of a device before any emulation runs.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::fmt;

use flashstack_block::{RequestKind, LBA_SIZE};
use flashstack_sim::units::format_bytes;
use serde::Serialize;

use crate::{human, Trace, TraceRequest};

/// Size histogram buckets: label and largest size in the bucket (`None`: no limit).
pub const SIZE_BUCKETS: [(&str, Option<u64>); 8] = [
    ("≤4K", Some(4 << 10)),
    ("≤8K", Some(8 << 10)),
    ("≤16K", Some(16 << 10)),
    ("≤32K", Some(32 << 10)),
    ("≤64K", Some(64 << 10)),
    ("≤128K", Some(128 << 10)),
    ("≤256K", Some(256 << 10)),
    (">256K", None),
];

/// How many processes [`TraceSummary::top_processes`] lists.
pub const TOP_PROCESSES: usize = 10;

/// Requests and bytes of one kind.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KindSummary {
    pub kind: RequestKind,
    pub requests: u64,
    pub bytes: u64,
    /// `bytes / requests`, rounded down; 0 without requests.
    pub mean_size_bytes: u64,
}

/// One bar of the size histogram.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SizeBucket {
    pub label: &'static str,
    pub max_bytes: Option<u64>,
    pub requests: u64,
}

/// Requests issued by one process.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProcessCount {
    pub process: u32,
    /// Empty when the summary was made from requests alone ([`inspect`]).
    pub name: String,
    pub requests: u64,
}

/// What [`inspect`] found. "Data requests" are reads, writes and trims (flushes address
/// nothing).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TraceSummary {
    pub requests: u64,
    /// Read, write, trim, flush, in that order, all present.
    pub kinds: Vec<KindSummary>,
    /// Data requests by length.
    pub size_histogram: Vec<SizeBucket>,
    /// Distinct 4 KiB LBAs read.
    pub footprint_lbas_read: u64,
    /// Distinct 4 KiB LBAs written.
    pub footprint_lbas_written: u64,
    /// Distinct 4 KiB LBAs read or written (trims are not counted: they free space).
    pub footprint_lbas_total: u64,
    /// Largest start offset of a data request.
    pub offset_bytes_max: u64,
    /// Largest end (`offset + len`) of a data request: the device must be at least this big.
    pub end_bytes_max: u64,
    /// First to last arrival.
    pub duration_ns: u64,
    /// Writes among reads and writes, by count.
    pub write_share_requests: f64,
    /// Writes among reads and writes, by bytes.
    pub write_share_bytes: f64,
    /// Data requests starting where the previous request of the same kind ended.
    pub sequential_share: f64,
    pub distinct_processes: u64,
    /// The busiest processes, most requests first (ties: lower index first).
    pub top_processes: Vec<ProcessCount>,
}

/// Summarises a stream of requests in one pass. Memory is one `(start, end)` LBA range per
/// non-contiguous data request plus one counter per process, so huge requests cost no more
/// than small ones.
pub fn inspect<R: Borrow<TraceRequest>>(requests: impl IntoIterator<Item = R>) -> TraceSummary {
    let mut builder = SummaryBuilder::default();
    for request in requests {
        builder.add(request.borrow());
    }
    builder.finish()
}

/// [`inspect`] with process names filled in from the trace.
pub fn inspect_trace(trace: &Trace) -> TraceSummary {
    let mut summary = inspect(&trace.requests);
    for process in &mut summary.top_processes {
        if let Some(name) = trace.processes.get(process.process as usize) {
            process.name.clone_from(name);
        }
    }
    summary
}

#[derive(Default)]
struct SummaryBuilder {
    requests: u64,
    /// `(requests, bytes)` per kind, indexed like `RequestKind::ALL`.
    kinds: [(u64, u64); 4],
    buckets: [u64; SIZE_BUCKETS.len()],
    read_lbas: LbaRanges,
    written_lbas: LbaRanges,
    offset_max: u64,
    end_max: u64,
    time_range: Option<(u64, u64)>,
    data_requests: u64,
    sequential: u64,
    previous_end: [Option<u64>; 4],
    per_process: HashMap<u32, u64>,
}

fn kind_index(kind: RequestKind) -> usize {
    match kind {
        RequestKind::Read => 0,
        RequestKind::Write => 1,
        RequestKind::Trim => 2,
        RequestKind::Flush => 3,
    }
}

impl SummaryBuilder {
    fn add(&mut self, request: &TraceRequest) {
        self.requests += 1;
        let index = kind_index(request.kind);
        let (count, bytes) = &mut self.kinds[index];
        *count += 1;
        *bytes = bytes.saturating_add(request.len_bytes);
        let time = request.arrival_ns;
        self.time_range = Some(match self.time_range {
            Some((first, last)) => (first.min(time), last.max(time)),
            None => (time, time),
        });
        *self.per_process.entry(request.process).or_default() += 1;
        if request.kind != RequestKind::Flush {
            self.add_data(request, index);
        }
    }

    fn add_data(&mut self, request: &TraceRequest, index: usize) {
        let end = request.offset_bytes.saturating_add(request.len_bytes);
        self.data_requests += 1;
        let bucket = SIZE_BUCKETS
            .iter()
            .position(|&(_, max)| max.is_none_or(|max| request.len_bytes <= max))
            .unwrap_or(SIZE_BUCKETS.len() - 1);
        self.buckets[bucket] += 1;
        self.offset_max = self.offset_max.max(request.offset_bytes);
        self.end_max = self.end_max.max(end);
        if self.previous_end[index] == Some(request.offset_bytes) {
            self.sequential += 1;
        }
        self.previous_end[index] = Some(end);
        let lbas = (
            request.offset_bytes / LBA_SIZE as u64,
            end.div_ceil(LBA_SIZE as u64),
        );
        match request.kind {
            RequestKind::Read => self.read_lbas.push(lbas),
            RequestKind::Write => self.written_lbas.push(lbas),
            _ => {}
        }
    }

    fn finish(self) -> TraceSummary {
        let [reads, writes, ..] = self.kinds;
        let footprint_lbas_read = self.read_lbas.clone().union_len();
        let footprint_lbas_written = self.written_lbas.clone().union_len();
        let mut all = self.read_lbas;
        all.ranges.extend(self.written_lbas.ranges);
        TraceSummary {
            requests: self.requests,
            kinds: kind_summaries(&self.kinds),
            size_histogram: size_histogram(&self.buckets),
            footprint_lbas_read,
            footprint_lbas_written,
            footprint_lbas_total: all.union_len(),
            offset_bytes_max: self.offset_max,
            end_bytes_max: self.end_max,
            duration_ns: self.time_range.map_or(0, |(first, last)| last - first),
            write_share_requests: share(writes.0, reads.0 + writes.0),
            write_share_bytes: share(writes.1, reads.1.saturating_add(writes.1)),
            sequential_share: share(self.sequential, self.data_requests),
            distinct_processes: self.per_process.len() as u64,
            top_processes: top_processes(&self.per_process),
        }
    }
}

fn share(part: u64, whole: u64) -> f64 {
    human::percent(part, whole) / 100.0
}

fn kind_summaries(kinds: &[(u64, u64); 4]) -> Vec<KindSummary> {
    RequestKind::ALL
        .iter()
        .zip(kinds)
        .map(|(&kind, &(requests, bytes))| KindSummary {
            kind,
            requests,
            bytes,
            mean_size_bytes: bytes.checked_div(requests).unwrap_or(0),
        })
        .collect()
}

fn size_histogram(buckets: &[u64; SIZE_BUCKETS.len()]) -> Vec<SizeBucket> {
    SIZE_BUCKETS
        .iter()
        .zip(buckets)
        .map(|(&(label, max_bytes), &requests)| SizeBucket {
            label,
            max_bytes,
            requests,
        })
        .collect()
}

/// The busiest processes; the sort key is total, so the hash map's order cannot show.
fn top_processes(per_process: &HashMap<u32, u64>) -> Vec<ProcessCount> {
    let mut counts: Vec<(u32, u64)> = per_process.iter().map(|(&p, &n)| (p, n)).collect();
    counts.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    counts
        .into_iter()
        .take(TOP_PROCESSES)
        .map(|(process, requests)| ProcessCount {
            process,
            name: String::new(),
            requests,
        })
        .collect()
}

/// Half-open LBA ranges; a range that continues the previous one extends it, so sequential
/// streams stay small.
#[derive(Clone, Default)]
struct LbaRanges {
    ranges: Vec<(u64, u64)>,
}

impl LbaRanges {
    fn push(&mut self, (start, end): (u64, u64)) {
        if let Some(last) = self.ranges.last_mut() {
            if start >= last.0 && start <= last.1 {
                last.1 = last.1.max(end);
                return;
            }
        }
        self.ranges.push((start, end));
    }

    /// Number of LBAs covered by the union of all ranges.
    fn union_len(mut self) -> u64 {
        self.ranges.sort_unstable();
        let mut total = 0;
        let mut current: Option<(u64, u64)> = None;
        for (start, end) in self.ranges {
            current = match current {
                Some((s, e)) if start <= e => Some((s, e.max(end))),
                Some((s, e)) => {
                    total += e - s;
                    Some((start, end))
                }
                None => Some((start, end)),
            };
        }
        total + current.map_or(0, |(s, e)| e - s)
    }
}

impl fmt::Display for TraceSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} requests over {}",
            human::count(self.requests),
            human::duration(self.duration_ns)
        )?;
        self.fmt_kinds(f)?;
        self.fmt_sizes(f)?;
        self.fmt_footprint(f)?;
        self.fmt_processes(f)
    }
}

/// Width of the label column of the summary table.
const LABEL_WIDTH: usize = 14;

impl TraceSummary {
    fn fmt_kinds(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f)?;
        let header = ("kind", "requests", "share", "bytes", "mean size");
        writeln!(
            f,
            "{:<LABEL_WIDTH$}{:>14}{:>8}{:>14}{:>12}",
            header.0, header.1, header.2, header.3, header.4
        )?;
        for kind in &self.kinds {
            writeln!(
                f,
                "{:<LABEL_WIDTH$}{:>14}{:>7.1}%{:>14}{:>12}",
                kind.kind.name(),
                human::count(kind.requests),
                human::percent(kind.requests, self.requests),
                format_bytes(kind.bytes),
                format_bytes(kind.mean_size_bytes),
            )?;
        }
        Ok(())
    }

    fn fmt_sizes(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f)?;
        write!(f, "{:<LABEL_WIDTH$}", "size")?;
        for bucket in &self.size_histogram {
            write!(f, "{:>9}", bucket.label)?;
        }
        writeln!(f)?;
        write!(f, "{:<LABEL_WIDTH$}", "requests")?;
        for bucket in &self.size_histogram {
            write!(f, "{:>9}", human::count(bucket.requests))?;
        }
        writeln!(f)
    }

    fn fmt_footprint(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lbas = |count: u64| {
            let bytes = count.saturating_mul(LBA_SIZE as u64);
            format!("{} ({} LBAs)", format_bytes(bytes), human::count(count))
        };
        writeln!(f)?;
        writeln!(
            f,
            "{:<LABEL_WIDTH$}read {}",
            "footprint",
            lbas(self.footprint_lbas_read)
        )?;
        writeln!(
            f,
            "{:<LABEL_WIDTH$}written {}",
            "",
            lbas(self.footprint_lbas_written)
        )?;
        writeln!(
            f,
            "{:<LABEL_WIDTH$}total {}",
            "",
            lbas(self.footprint_lbas_total)
        )?;
        writeln!(
            f,
            "{:<LABEL_WIDTH$}{} (highest offset {})",
            "device needs",
            format_bytes(self.end_bytes_max),
            format_bytes(self.offset_bytes_max)
        )?;
        writeln!(
            f,
            "{:<LABEL_WIDTH$}{:.1}% of requests, {:.1}% of bytes (of reads and writes)",
            "write share",
            self.write_share_requests * 100.0,
            self.write_share_bytes * 100.0
        )?;
        writeln!(
            f,
            "{:<LABEL_WIDTH$}{:.1}% of data requests",
            "sequential",
            self.sequential_share * 100.0
        )
    }

    fn fmt_processes(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f)?;
        writeln!(
            f,
            "{:<LABEL_WIDTH$}{} distinct, top {}:",
            "processes",
            human::count(self.distinct_processes),
            self.top_processes.len()
        )?;
        for process in &self.top_processes {
            let name = match process.name.as_str() {
                "" => format!("#{}", process.process),
                name => name.to_string(),
            };
            writeln!(
                f,
                "  {name:<30}{:>14}{:>7.1}%",
                human::count(process.requests),
                human::percent(process.requests, self.requests)
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lba_union_merges_overlaps_and_adjacency() {
        let mut ranges = LbaRanges::default();
        for range in [(10, 20), (15, 25), (0, 5), (5, 6), (30, 31), (24, 30)] {
            ranges.push(range);
        }
        assert_eq!(ranges.union_len(), 6 + 21);
        assert_eq!(LbaRanges::default().union_len(), 0);
    }
}
