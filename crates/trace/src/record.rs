//! Writing block traces: [`BlockTraceWriter`] turns the requests a device served (a
//! [`RequestSink`] at the block-device seam, `flashstack_block::BlockRecorder`) into a
//! trace file that this crate's parsers read back. It streams: memory stays bounded
//! whatever the trace's length.
//!
//! What each format carries:
//! - `mqsim`: reads and writes only (`time_ns 0 sector sectors type`, type 0 write, 1
//!   read). Trims, flushes and remaps are counted as dropped; a FUA write is kept as a
//!   plain write and its FUA flag counted as dropped.
//! - `blkparse`: reads (`R`), writes (`W`, `WF` with FUA), discards (`D`) and flushes
//!   (`FN`, no sectors), one dispatch (`D`) line each; remaps are counted as dropped. The
//!   parser reads a FUA write back as a plain write (it keeps no hints).
//!
//! Times are virtual nanoseconds from the origin given to the writer (the start of the
//! measurement), so the same run writes the same bytes.

use std::fmt;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use flashstack_block::{BlockRequest, RemapExtent, RequestKind, RequestSink, LBA_SIZE};
use flashstack_sim::Nanos;
use serde::Serialize;
use thiserror::Error;

/// Sectors (512 B) in one LBA.
const SECTORS_PER_LBA: u64 = LBA_SIZE as u64 / crate::SECTOR_BYTES;

/// The formats a recorded block trace can be written in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RecordFormat {
    /// MQSim ASCII, times in ns (read back with `--format mqsim --time-unit ns`).
    #[default]
    Mqsim,
    /// blkparse's default text output, dispatch events.
    Blkparse,
}

impl RecordFormat {
    pub fn name(self) -> &'static str {
        match self {
            RecordFormat::Mqsim => "mqsim",
            RecordFormat::Blkparse => "blkparse",
        }
    }

    /// Whether the format carries requests of `kind`.
    pub fn carries(self, kind: RequestKind) -> bool {
        match self {
            RecordFormat::Mqsim => matches!(kind, RequestKind::Read | RequestKind::Write),
            RecordFormat::Blkparse => true,
        }
    }
}

impl fmt::Display for RecordFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for RecordFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "mqsim" => Ok(RecordFormat::Mqsim),
            "blkparse" => Ok(RecordFormat::Blkparse),
            other => Err(format!(
                "unknown block trace format '{other}' to record: mqsim or blkparse"
            )),
        }
    }
}

#[derive(Debug, Error)]
pub enum RecordError {
    #[error("cannot create the block trace {}: {source}", path.display())]
    Create { path: PathBuf, source: io::Error },
    #[error("cannot write the block trace {}: {source}", path.display())]
    Write { path: PathBuf, source: io::Error },
}

/// Requests and bytes of one kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct KindCount {
    pub requests: u64,
    pub bytes: u64,
}

impl KindCount {
    fn add(&mut self, bytes: u64) {
        self.requests += 1;
        self.bytes += bytes;
    }
}

/// What a recording wrote and what its format could not carry.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RecordSummary {
    pub format: RecordFormat,
    pub reads: KindCount,
    pub writes: KindCount,
    pub trims: KindCount,
    pub flushes: u64,
    /// Requests the format cannot carry, by kind (`trim`, `flush`, `remap`).
    pub dropped: Vec<(String, u64)>,
    /// FUA writes written as plain writes (mqsim).
    pub fua_dropped: u64,
    /// Requests that arrived before the recording's origin, written at time 0. None
    /// should: the origin is the end of the sync that starts the recording.
    #[serde(skip_serializing_if = "is_zero")]
    pub before_origin: u64,
}

impl RecordSummary {
    /// Requests written to the file.
    pub fn requests(&self) -> u64 {
        self.reads.requests + self.writes.requests + self.trims.requests + self.flushes
    }

    fn drop_one(&mut self, kind: &str) {
        match self.dropped.iter_mut().find(|(k, _)| k == kind) {
            Some((_, n)) => *n += 1,
            None => self.dropped.push((kind.to_string(), 1)),
        }
    }

    /// One line on what the format dropped, if it dropped anything.
    pub fn dropped_line(&self) -> Option<String> {
        let mut parts: Vec<String> = self
            .dropped
            .iter()
            .map(|(kind, n)| format!("{n} {kind}"))
            .collect();
        if self.fua_dropped > 0 {
            parts.push(format!(
                "the FUA flag of {} writes (kept as plain writes)",
                self.fua_dropped
            ));
        }
        (!parts.is_empty()).then(|| {
            format!(
                "the {} format cannot carry them: dropped {}",
                self.format,
                parts.join(", ")
            )
        })
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl RecordSummary {
    /// One line on requests written at time 0 because they arrived before the origin.
    pub fn before_origin_line(&self) -> Option<String> {
        (self.before_origin > 0).then(|| {
            let n = self.before_origin;
            let (what, was) = if n == 1 {
                ("request", "was")
            } else {
                ("requests", "were")
            };
            format!("{n} {what} arrived before the recording's start and {was} written at time 0")
        })
    }
}

impl fmt::Display for RecordSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} requests ({} reads, {} B; {} writes, {} B",
            self.requests(),
            self.reads.requests,
            self.reads.bytes,
            self.writes.requests,
            self.writes.bytes
        )?;
        if self.format.carries(RequestKind::Trim) {
            write!(
                f,
                "; {} discards, {} B; {} flushes",
                self.trims.requests, self.trims.bytes, self.flushes
            )?;
        }
        write!(f, ")")
    }
}

/// Streams served requests to a trace file in a [`RecordFormat`].
pub struct BlockTraceWriter {
    out: BufWriter<File>,
    path: PathBuf,
    origin_ns: Nanos,
    /// blkparse's per-event sequence number.
    sequence: u64,
    summary: RecordSummary,
    /// The first write error; later requests are only counted.
    error: Option<io::Error>,
}

impl BlockTraceWriter {
    /// Creates (or truncates) `path`; times are written from `origin_ns`.
    pub fn create(
        path: &Path,
        format: RecordFormat,
        origin_ns: Nanos,
    ) -> Result<Self, RecordError> {
        let file = File::create(path).map_err(|source| RecordError::Create {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(Self {
            out: BufWriter::new(file),
            path: path.to_path_buf(),
            origin_ns,
            sequence: 0,
            summary: RecordSummary {
                format,
                ..RecordSummary::default()
            },
            error: None,
        })
    }

    /// Times are written relative to `origin_ns` from now on.
    pub fn set_origin(&mut self, origin_ns: Nanos) {
        self.origin_ns = origin_ns;
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn summary(&self) -> &RecordSummary {
        &self.summary
    }

    /// Flushes the file; the first error met while writing, if any, naming the file.
    pub fn finish(&mut self) -> Result<RecordSummary, RecordError> {
        let flushed = self.out.flush();
        let error = self.error.take().map_or(flushed.err(), Some);
        match error {
            Some(source) => Err(RecordError::Write {
                path: self.path.clone(),
                source,
            }),
            None => Ok(self.summary.clone()),
        }
    }

    fn line(&mut self, request: &BlockRequest) -> io::Result<()> {
        let time_ns = request.arrival_ns.saturating_sub(self.origin_ns);
        let sector = request.lba * SECTORS_PER_LBA;
        let sectors = u64::from(request.lba_count) * SECTORS_PER_LBA;
        match self.summary.format {
            RecordFormat::Mqsim => {
                let kind = if request.kind == RequestKind::Read {
                    1
                } else {
                    0
                };
                writeln!(self.out, "{time_ns} 0 {sector} {sectors} {kind}")
            }
            RecordFormat::Blkparse => {
                self.sequence += 1;
                let (secs, nanos) = (time_ns / 1_000_000_000, time_ns % 1_000_000_000);
                let head = format!("259,0 0 {} {secs}.{nanos:09} 0 D", self.sequence);
                let rwbs = match (request.kind, request.fua) {
                    (RequestKind::Read, _) => "R",
                    (RequestKind::Write, false) => "W",
                    (RequestKind::Write, true) => "WF",
                    (RequestKind::Trim, _) => "D",
                    (RequestKind::Flush, _) => return writeln!(self.out, "{head} FN [f2fs]"),
                };
                writeln!(self.out, "{head} {rwbs} {sector} + {sectors} [f2fs]")
            }
        }
    }
}

impl RequestSink for BlockTraceWriter {
    fn request(&mut self, request: &BlockRequest) {
        let bytes = u64::from(request.lba_count) * LBA_SIZE as u64;
        if !self.summary.format.carries(request.kind) {
            self.summary.drop_one(request.kind.name());
            return;
        }
        match request.kind {
            RequestKind::Read => self.summary.reads.add(bytes),
            RequestKind::Write => self.summary.writes.add(bytes),
            RequestKind::Trim => self.summary.trims.add(bytes),
            RequestKind::Flush => self.summary.flushes += 1,
        }
        if request.arrival_ns < self.origin_ns {
            self.summary.before_origin += 1;
        }
        if request.fua && self.summary.format == RecordFormat::Mqsim {
            self.summary.fua_dropped += 1;
        }
        if self.error.is_none() {
            if let Err(e) = self.line(request) {
                self.error = Some(e);
            }
        }
    }

    fn remap(&mut self, _arrival_ns: Nanos, _extents: &[RemapExtent]) {
        self.summary.drop_one("remap");
    }
}
