//! The part of a run report that only a replayed block trace has: what the capture held
//! (requests out of order, idle gaps, requests logged twice), what was done about it, the
//! existing data laid down for reads of data the trace never wrote, and a breakdown by
//! process (who issued what, and how long it waited).

use std::collections::BTreeMap;

use flashstack_sim::units::{format_bytes, format_count as count, format_ns};
use flashstack_sim::LatencySummary;
use serde::Serialize;

use crate::{render_columns, HostFigures, RunReport};

/// The name under which the processes beyond the listed ones are summed.
pub const OTHER_PROCESSES: &str = "(other)";

/// What a block trace held and what was done with it before the replay.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TraceFigures {
    pub format: String,
    /// Requests the parser kept (after `--clean`, if given).
    pub requests: u64,
    /// Requests that arrived earlier than a request before them in the file: the replay
    /// serves them in arrival order (a stable sort), so they were moved.
    pub reordered: u64,
    pub idle_gaps: IdleGapFigures,
    /// Whether `--clean` ran; the next three figures are zero without it.
    pub cleaned: bool,
    /// Requests logged twice under two process names, dropped by `--clean`.
    pub duplicates_dropped: u64,
    pub duplicate_bytes_dropped: u64,
    /// Writes of the same extent by the same process within the window: kept.
    pub rewrites_kept: u64,
    pub existing_reads: ExistingReadFigures,
    /// The processes with the most bytes, most first, then [`OTHER_PROCESSES`] if any are
    /// left out.
    pub processes: Vec<ProcessFigures>,
}

/// Idle gaps longer than a threshold, and whether they were compressed.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct IdleGapFigures {
    pub threshold_ns: u64,
    /// Gaps between consecutive arrivals longer than the threshold, in the trace as
    /// captured.
    pub count: u64,
    pub longest_ns: u64,
    pub total_ns: u64,
    /// Whether each was cut to the threshold (`--clean`).
    pub compressed: bool,
    /// Time taken out by the cuts.
    pub time_removed_ns: u64,
}

/// Reads of data the trace never wrote: a phone holds that data, a fresh emulated device
/// does not (its unmapped LBAs read as zeros without touching flash).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ExistingReadFigures {
    /// Whether such data was laid down before the run (off with `--no-read-footprint` or
    /// `--image`).
    pub enabled: bool,
    /// LBAs the trace reads before (or without) writing them.
    pub lbas_read_unwritten: u64,
    /// Of those, LBAs that held no data on the device and were written before the
    /// measurement started, with bytes from the content model.
    pub lbas_laid_down: u64,
}

/// What one process (or all the rest) asked of the device and how long it waited.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ProcessFigures {
    pub name: String,
    /// Requests and bytes per kind (bytes of whole 4 KiB LBAs, as the host figures count
    /// them); flattened into the process's JSON object.
    #[serde(flatten)]
    pub requests: HostFigures,
    /// Per request kind with requests: read, write, trim, flush.
    pub latency: BTreeMap<String, LatencySummary>,
}

impl ProcessFigures {
    pub fn bytes(&self) -> u64 {
        let r = &self.requests;
        r.read_bytes + r.write_bytes + r.trim_bytes
    }
}

/// The trace section of each run that has one: a few lines on the input, then a table of
/// its processes. Empty when no run replayed a block trace.
pub fn render_trace_notes(reports: &[RunReport]) -> String {
    let mut out = String::new();
    let mut input_said = false;
    for report in reports {
        let Some(trace) = &report.trace else {
            continue;
        };
        // The input is the same for every device; say it once.
        if !input_said {
            out.push_str(&input_lines(trace));
            input_said = true;
        }
        out.push_str(&existing_reads_line(trace, &report.run.device));
        out.push_str(&process_table(trace, &report.run.device));
    }
    out
}

fn input_lines(t: &TraceFigures) -> String {
    let mut out = format!("trace: {} format, {} requests", t.format, count(t.requests));
    if t.reordered > 0 {
        out.push_str(&format!(
            "; {} arrived out of order and were moved into arrival order",
            count(t.reordered)
        ));
    }
    out.push('\n');
    let g = &t.idle_gaps;
    if g.count > 0 {
        out.push_str(&format!(
            "idle gaps: {} longer than {} (longest {}, {} in all), ",
            count(g.count),
            format_ns(g.threshold_ns),
            format_ns(g.longest_ns),
            format_ns(g.total_ns),
        ));
        if g.compressed {
            out.push_str(&format!(
                "each cut to {} (--clean), removing {}\n",
                format_ns(g.threshold_ns),
                format_ns(g.time_removed_ns)
            ));
        } else {
            out.push_str(
                "kept as captured: background work runs in them and DWPD counts them \
                 (--clean cuts them)\n",
            );
        }
    }
    if t.cleaned {
        out.push_str(&format!(
            "duplicates: {} requests logged twice by two processes dropped ({}); {} \
             rewrites by the same process kept\n",
            count(t.duplicates_dropped),
            format_bytes(t.duplicate_bytes_dropped),
            count(t.rewrites_kept)
        ));
    }
    out
}

fn existing_reads_line(t: &TraceFigures, device: &str) -> String {
    let e = &t.existing_reads;
    if e.lbas_read_unwritten == 0 {
        return String::new();
    }
    let read = format_bytes(e.lbas_read_unwritten * 4096);
    if !e.enabled {
        return format!(
            "existing data on {device}: the trace reads {read} it never writes; not laid \
             down, so reads of it that find no data cost no flash read\n"
        );
    }
    if e.lbas_laid_down == 0 {
        return format!(
            "existing data on {device}: the trace reads {read} it never writes; all of it \
             held data already, so every such read hits flash\n"
        );
    }
    format!(
        "existing data on {device}: the trace reads {read} it never writes; {} of it held no \
         data and was written before the run (bytes from the content model), so every such \
         read hits flash (--no-read-footprint: not written)\n",
        format_bytes(e.lbas_laid_down * 4096)
    )
}

fn process_table(t: &TraceFigures, device: &str) -> String {
    if t.processes.is_empty() {
        return String::new();
    }
    let headers: Vec<String> = [
        "reads",
        "writes",
        "trims / flushes",
        "read p50 / p99",
        "write p50 / p99",
        "latency max",
    ]
    .map(String::from)
    .to_vec();
    let rows: Vec<(String, Vec<String>)> = t
        .processes
        .iter()
        .map(|p| (short_name(&p.name), process_cells(p)))
        .collect();
    format!(
        "processes on {device} (most bytes first):\n{}",
        render_columns(&headers, &rows)
    )
}

fn process_cells(p: &ProcessFigures) -> Vec<String> {
    let latency = |kind: &str, pick: fn(&LatencySummary) -> u64| match p.latency.get(kind) {
        Some(s) if s.count > 0 => format_ns(pick(s)),
        _ => "-".to_string(),
    };
    let max = p
        .latency
        .values()
        .filter(|s| s.count > 0)
        .map(|s| s.latency_ns_max)
        .max()
        .map_or("-".to_string(), format_ns);
    let r = &p.requests;
    vec![
        format!(
            "{} ({})",
            count(r.read_requests),
            format_bytes(r.read_bytes)
        ),
        format!(
            "{} ({})",
            count(r.write_requests),
            format_bytes(r.write_bytes)
        ),
        format!("{} / {}", count(r.trim_requests), count(r.flush_requests)),
        format!(
            "{} / {}",
            latency("read", |s| s.latency_ns_p50),
            latency("read", |s| s.latency_ns_p99)
        ),
        format!(
            "{} / {}",
            latency("write", |s| s.latency_ns_p50),
            latency("write", |s| s.latency_ns_p99)
        ),
        max,
    ]
}

/// A process name cut to fit the label column (the JSON keeps it whole).
fn short_name(name: &str) -> String {
    const MAX_CHARS: usize = 32;
    if name.chars().count() > MAX_CHARS {
        format!(
            "  {}…",
            name.chars().take(MAX_CHARS - 1).collect::<String>()
        )
    } else {
        format!("  {name}")
    }
}
