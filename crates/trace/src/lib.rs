//! Block traces in, block requests out: ingest of five public trace formats, cleaning of known
//! capture artefacts, seeded synthetic workloads, and a one-screen summary of any of them.
//!
//! Every request that leaves this crate is a [`TraceRequest`]: an arrival time in nanoseconds
//! relative to the first request of the trace, a [`RequestKind`], a byte offset and a byte
//! length. Whatever unit a format counts in is converted here, once, so that no layer above
//! has to know where a trace came from.
//!
//! # Formats and units
//!
//! - `mqsim` (also SSDSim): `arrival_time devno start_sector size_sectors type`, separated
//!   by whitespace; `type` 0 = write, 1 = read. Times are integers in the unit set by
//!   [`ParseOptions::mqsim_time_unit`] (ns by default; ps, us); addresses and sizes count
//!   512 B sectors.
//! - `disksim`: `time_ms devno blkno bcount flags [ignored...]`, separated by whitespace;
//!   `flags` is hexadecimal with bit 0 set for a read. Times are decimal milliseconds;
//!   addresses and sizes count 512 B blocks.
//! - `msr` (MSR Cambridge, SNIA IOTTA): CSV `Timestamp,Hostname,DiskNumber,Type,Offset,Size,
//!   ResponseTime` (response time optional); `Type` is Read or Write in any case. Times are
//!   Windows FILETIMEs (100 ns ticks); offsets and sizes are bytes.
//! - `blkparse` (its default text output): `maj,min cpu seq time pid action rwbs sector +
//!   nsectors [process]`. Times are seconds with 9 decimals; addresses and sizes count 512 B
//!   sectors.
//! - `pixel` (Pixel 6a mobile traces): CSV `proces,device,rw_flag,sector,size,timestamp`;
//!   `rw_flag` is R or W. Times are decimal seconds; addresses and sizes count 512 B sectors.
//!
//! Decimal times are parsed exactly (no floating point), so a timestamp such as
//! `1.000000001` seconds keeps its last nanosecond.
//!
//! What each format's [`Trace::processes`] entry holds: MQSim and DiskSim have no process, so
//! the device is used (`dev0`); MSR uses `hostname_disk` (`hm_0`, as the files are named);
//! blkparse uses the bracketed command name, or `pid N` when the line has none (completions);
//! Pixel uses its `proces` column.
//!
//! blkparse prints one line per event in a request's life (queue, get, insert, dispatch,
//! complete...). Only one action is kept, dispatch (`D`) by default, so that each request is
//! counted once; see [`BlkparseAction`]. The `rwbs` letters map to kinds as follows: `D`
//! (discard) and `E` (secure erase) make a trim, then `W` a write, then `R` a read; a line with
//! `F` and no sectors is a flush (a write with `F`, FUA or preflush, stays a plain write).
//!
//! # Conventions every parser follows
//!
//! - Blank lines and lines starting with `#` are skipped; so are header rows (MSR, Pixel) and,
//!   for blkparse, other actions and the summary block printed at the end. All are counted in
//!   the [`ParseReport`], so a user can check that nothing was lost silently.
//! - Reads, writes and trims of length zero are skipped and counted.
//! - Arrival times are made relative to the earliest request, and requests that arrive out of
//!   order are stably sorted (and counted).
//! - A line that is meant to be a request but has a bad field is an error naming the file, the
//!   line and the field; parsers never panic on input.
//!
//! # Beyond parsing
//!
//! - [`clean`] drops requests logged twice by two processes (keeping a process's own
//!   rewrites) and shortens implausible idle gaps (both known artefacts of the Pixel 6a
//!   traces); [`idle_gaps`] measures the gaps without changing anything.
//! - [`SyntheticSpec`] and [`synthetic`] generate sequential, uniform, Zipf and hot/cold
//!   workloads from a one-line spec, deterministically from a seed.
//! - [`inspect`] summarises any stream of requests ([`TraceSummary`]).
//! - [`builtin`] generates the built-in workloads: the LDC paper's seven Table 4 app
//!   workloads, matched to its counts, write ratios and volumes, with their content zones
//!   and the existing data to lay down first.
//!
//! # Synthetic spec grammar
//!
//! `PATTERN[,key=value...]`, for example `zipf:0.99,count=50000,size=4k:70/16k:20/128k:10,
//! iat=exp:200us` or `hotcold:0.2:0.8,count=1e6,read=0,footprint=4GiB,flush=32`.
//!
//! - `seq`, `uniform`, `zipf[:theta]` or `hotcold[:hot_space:hot_access]`: the address
//!   [`Pattern`]; `uniform` if absent, theta 0.99 and 0.2:0.8 if not given.
//! - `count=N`: reads + writes + trims (`1e6` allowed); flushes come on top. Default 100000.
//! - `read=F`, `trim=F`: fractions of the requests, the rest being writes. Default 0 and 0.
//! - `flush=N`: a flush after every N writes (0: none). Default none.
//! - `size=S` or `size=S:W/S:W...`: request sizes, with weights. Default `4k`.
//! - `iat=D`, `iat=fixed:D`, `iat=exp:MEAN` or `iat=b2b`: time between arrivals. Default
//!   `b2b` (every request at time 0, issued as fast as the replayer can).
//! - `footprint=S`: bytes addressed, from offset 0. Default the whole device.
//! - `align=S`: offsets are multiples of this power of two. Default `4k`.
//!
//! Sizes take binary suffixes (`4k` = 4096); durations take `ns`, `us`, `ms`, `s`.

pub mod builtin;
mod clean;
mod error;
mod fields;
mod formats;
mod human;
mod ingest;
mod inspect;
mod record;
mod synthetic;

use std::fmt;
use std::str::FromStr;

pub use flashstack_block::{Hints, RequestKind, Temperature};
use serde::{Deserialize, Serialize};

pub use clean::{clean, idle_gaps, CleanOptions, CleanReport, IdleGaps, IDLE_GAP_NS};
pub use error::TraceError;
pub use ingest::{detect_format, parse_file, parse_reader, DETECT_LINES, MAX_LINE_BYTES};
pub use inspect::{
    inspect, inspect_trace, KindSummary, ProcessCount, SizeBucket, TraceSummary, SIZE_BUCKETS,
    TOP_PROCESSES,
};
pub use record::{BlockTraceWriter, KindCount, RecordError, RecordFormat, RecordSummary};
pub use synthetic::{
    synthetic, Interarrival, Pattern, SizeDistribution, SpecError, SyntheticSource, SyntheticSpec,
    SIZE_ENTRIES_MAX,
};

/// Bytes in one sector, the address unit of MQSim, DiskSim, blkparse and Pixel traces.
pub const SECTOR_BYTES: u64 = 512;

/// One block request of a trace, in the units every flashstack layer uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceRequest {
    /// When the request reaches the device, relative to the first request of the trace.
    pub arrival_ns: u64,
    pub kind: RequestKind,
    /// First byte addressed; 0 for a flush.
    pub offset_bytes: u64,
    /// Bytes addressed; 0 for a flush and never 0 for anything else.
    pub len_bytes: u64,
    /// Placement hints. No public trace format carries any, so parsers leave the default.
    pub hints: Hints,
    /// Index into [`Trace::processes`] (for synthetic requests, always 0).
    pub process: u32,
}

/// A parsed trace: its requests in arrival order plus what the parser saw on the way.
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    /// The file stem (or the name given to [`parse_reader`]), used in reports.
    pub name: String,
    pub format: TraceFormat,
    /// Sorted by `arrival_ns` (stable: requests with equal times keep file order); the first
    /// arrives at 0.
    pub requests: Vec<TraceRequest>,
    /// Distinct process (or device) names in order of first appearance.
    pub processes: Vec<String>,
    pub parse_report: ParseReport,
    /// What [`clean`] changed, if the trace was cleaned.
    pub clean_report: Option<CleanReport>,
}

impl Trace {
    /// Time from the first to the last arrival.
    pub fn duration_ns(&self) -> u64 {
        match (self.requests.first(), self.requests.last()) {
            (Some(first), Some(last)) => last.arrival_ns.saturating_sub(first.arrival_ns),
            _ => 0,
        }
    }

    /// The name of `request.process`, or `"?"` for an index the trace does not know.
    pub fn process_name(&self, request: &TraceRequest) -> &str {
        self.processes
            .get(request.process as usize)
            .map_or("?", String::as_str)
    }
}

/// What a parser did with every line, so that users can see that nothing was dropped silently
/// (a frequent complaint about peer simulators).
///
/// Invariant: `lines_read` is the sum of every other line counter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ParseReport {
    pub lines_read: u64,
    pub requests_kept: u64,
    /// Empty lines and `#` comments.
    pub lines_blank_or_comment: u64,
    /// CSV header rows (MSR, Pixel).
    pub lines_header: u64,
    /// Lines that are not requests: other blkparse actions, passthrough commands, the summary
    /// blkparse prints at the end.
    pub lines_not_io: u64,
    /// Reads, writes and trims of zero bytes.
    pub zero_length_skipped: u64,
    /// Requests that arrived earlier than a request before them in the file (they were moved
    /// by the stable sort).
    pub reordered: u64,
}

impl ParseReport {
    /// Every line that did not become a request.
    pub fn lines_skipped(&self) -> u64 {
        self.lines_blank_or_comment + self.lines_header + self.lines_not_io
    }
}

impl fmt::Display for ParseReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} lines: {} requests kept, {} blank or comment, {} header, {} not I/O, \
             {} zero-length skipped, {} reordered",
            human::count(self.lines_read),
            human::count(self.requests_kept),
            human::count(self.lines_blank_or_comment),
            human::count(self.lines_header),
            human::count(self.lines_not_io),
            human::count(self.zero_length_skipped),
            human::count(self.reordered),
        )
    }
}

/// The trace formats this crate reads. The names are the ones users type (`--format msr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TraceFormat {
    Mqsim,
    Disksim,
    Msr,
    Blkparse,
    Pixel,
}

impl TraceFormat {
    pub const ALL: [TraceFormat; 5] = [
        TraceFormat::Mqsim,
        TraceFormat::Disksim,
        TraceFormat::Msr,
        TraceFormat::Blkparse,
        TraceFormat::Pixel,
    ];

    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Mqsim => "mqsim",
            TraceFormat::Disksim => "disksim",
            TraceFormat::Msr => "msr",
            TraceFormat::Blkparse => "blkparse",
            TraceFormat::Pixel => "pixel",
        }
    }
}

impl fmt::Display for TraceFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for TraceFormat {
    type Err = String;

    /// Accepts the names printed by `Display` in any case, plus `ssdsim` for `mqsim` (the two
    /// simulators share the layout).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let lower = text.trim().to_ascii_lowercase();
        if lower == "ssdsim" {
            return Ok(TraceFormat::Mqsim);
        }
        TraceFormat::ALL
            .into_iter()
            .find(|format| format.name() == lower)
            .ok_or_else(|| {
                format!(
                    "unknown trace format '{text}' (known: mqsim, disksim, msr, blkparse, pixel)"
                )
            })
    }
}

/// The unit of MQSim arrival times. MQSim itself lets the user choose, and a wrong guess
/// scales the whole timeline by 1000 (MQSim issue #74), so the unit is always explicit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TimeUnit {
    Ps,
    #[default]
    Ns,
    Us,
}

impl FromStr for TimeUnit {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim() {
            "ps" => Ok(TimeUnit::Ps),
            "ns" => Ok(TimeUnit::Ns),
            "us" | "µs" => Ok(TimeUnit::Us),
            _ => Err(format!("unknown time unit '{text}' (known: ps, ns, us)")),
        }
    }
}

/// Which blkparse event stands for a request. Each request appears once per action, so
/// keeping exactly one avoids counting it several times.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BlkparseAction {
    /// `Q`: the request entered the block layer (what the application asked for, before
    /// merging).
    Queue,
    /// `D`: the request was issued to the device driver (what the device saw).
    #[default]
    Dispatch,
    /// `C`: the request completed (arrival is then the completion time).
    Complete,
}

impl BlkparseAction {
    fn letter(self) -> &'static [u8] {
        match self {
            BlkparseAction::Queue => b"Q",
            BlkparseAction::Dispatch => b"D",
            BlkparseAction::Complete => b"C",
        }
    }
}

/// Choices a format leaves open. The defaults fit the common case of each format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParseOptions {
    pub mqsim_time_unit: TimeUnit,
    pub blkparse_action: BlkparseAction,
}
