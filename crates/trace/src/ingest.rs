//! The line loop shared by every format: read a line into a reused buffer, hand it to the
//! format's parser, intern the process name, collect the request; then make times relative
//! and sort.

use std::collections::HashMap;
use std::fs::File;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::{self, BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::Path;

use crate::fields::FieldError;
use crate::formats::{self, LineOutcome, ProcessKey, RawRequest, Skip};
use crate::{ParseOptions, ParseReport, Trace, TraceError, TraceFormat, TraceRequest};

/// Longest line accepted (bytes, without the line terminator). Real trace lines are under
/// 200 bytes; the limit keeps a file without newlines from being read into memory whole.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// How many lines [`parse_file`] reads to detect a format.
pub const DETECT_LINES: usize = 32;

/// Reads and parses a trace file. With `format` `None` the format is detected from the first
/// [`DETECT_LINES`] lines, and an undetectable file is an error naming it. Errors name the
/// file as given; the trace is named after the file stem.
pub fn parse_file(
    path: &Path,
    format: Option<TraceFormat>,
    opts: &ParseOptions,
) -> Result<Trace, TraceError> {
    let io_error = |source| TraceError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file_name = path.display().to_string();
    let mut reader = BufReader::with_capacity(1 << 16, File::open(path).map_err(io_error)?);
    let format = match format {
        Some(format) => format,
        None => {
            let format = sniff(&mut reader, &file_name)?;
            reader.seek(SeekFrom::Start(0)).map_err(io_error)?;
            format
        }
    };
    let mut trace = parse_reader(&file_name, reader, format, opts)?;
    if let Some(stem) = path.file_stem() {
        trace.name = stem.to_string_lossy().into_owned();
    }
    Ok(trace)
}

/// Detects the format from the first lines of a file.
fn sniff(reader: &mut impl BufRead, file_name: &str) -> Result<TraceFormat, TraceError> {
    let mut lines = Vec::with_capacity(DETECT_LINES);
    let mut buffer = Vec::new();
    while lines.len() < DETECT_LINES {
        buffer.clear();
        let read = read_line(reader, &mut buffer).map_err(|source| TraceError::Io {
            path: file_name.into(),
            source,
        })?;
        if read == 0 {
            break;
        }
        lines.push(String::from_utf8_lossy(strip_terminator(&buffer)).into_owned());
    }
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    detect_format(&refs).ok_or_else(|| TraceError::UnknownFormat {
        file: file_name.to_string(),
    })
}

/// Guesses the format of a trace from its first lines (without line terminators).
///
/// A format fits when every line parses under it without error and at least half of the
/// lines that are not blank or comments show it (a request, a header, a known event). The
/// formats are tried in the order Pixel, MSR, blkparse, MQSim, DiskSim; MQSim comes before
/// DiskSim because a DiskSim file with whole-millisecond times, flags 0/1 and exactly five
/// columns cannot be told from MQSim (real DiskSim traces print decimals).
pub fn detect_format(first_lines: &[&str]) -> Option<TraceFormat> {
    const ORDER: [TraceFormat; 5] = [
        TraceFormat::Pixel,
        TraceFormat::Msr,
        TraceFormat::Blkparse,
        TraceFormat::Mqsim,
        TraceFormat::Disksim,
    ];
    ORDER.into_iter().find(|&format| fits(format, first_lines))
}

fn fits(format: TraceFormat, lines: &[&str]) -> bool {
    let opts = ParseOptions::default();
    let (mut evidence, mut data_lines) = (0usize, 0usize);
    for line in lines {
        match formats::parse_line(format, line.as_bytes(), &opts) {
            Err(_) => return false,
            Ok(LineOutcome::Skip(Skip::Blank | Skip::Comment)) => {}
            Ok(LineOutcome::Skip(Skip::NotIo)) => data_lines += 1,
            Ok(_) => {
                evidence += 1;
                data_lines += 1;
            }
        }
    }
    evidence > 0 && evidence * 2 >= data_lines
}

/// Parses a whole trace from `reader` in `format`. `name` is used in error messages and as
/// the trace's name.
pub fn parse_reader(
    name: &str,
    mut reader: impl BufRead,
    format: TraceFormat,
    opts: &ParseOptions,
) -> Result<Trace, TraceError> {
    let mut builder = TraceBuilder::default();
    let mut line = Vec::with_capacity(256);
    let mut line_number = 0u64;
    loop {
        line.clear();
        let read = read_line(&mut reader, &mut line).map_err(|source| TraceError::Io {
            path: name.into(),
            source,
        })?;
        if read == 0 {
            break;
        }
        line_number += 1;
        let at = |error: FieldError| TraceError::Parse {
            file: name.to_string(),
            line: line_number,
            field: error.field,
            message: error.message,
        };
        if line.len() > MAX_LINE_BYTES && !line.ends_with(b"\n") {
            let message = format!("is longer than {MAX_LINE_BYTES} bytes");
            return Err(at(FieldError::new("line", message)));
        }
        let outcome = formats::parse_line(format, strip_terminator(&line), opts).map_err(at)?;
        builder.record(outcome).map_err(at)?;
    }
    builder.finish(name, format)
}

/// Reads one line (terminator included) into `buffer`, at most `MAX_LINE_BYTES + 1` bytes.
/// A plain scan for the newline: trace lines are short, and a general search's setup
/// cost more than the search.
fn read_line(reader: &mut impl BufRead, buffer: &mut Vec<u8>) -> io::Result<usize> {
    let limit = MAX_LINE_BYTES + 1;
    let mut total = 0;
    loop {
        let available = match reader.fill_buf() {
            Ok(available) => available,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let window = &available[..available.len().min(limit - total)];
        let (found, used) = match window.iter().position(|&b| b == b'\n') {
            Some(at) => (true, at + 1),
            None => (false, window.len()),
        };
        buffer.extend_from_slice(&window[..used]);
        reader.consume(used);
        total += used;
        if found || used == 0 || total == limit {
            return Ok(total);
        }
    }
}

fn strip_terminator(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Collects requests and counts lines.
#[derive(Default)]
struct TraceBuilder {
    requests: Vec<TraceRequest>,
    processes: Interner,
    report: ParseReport,
}

impl TraceBuilder {
    fn record(&mut self, outcome: LineOutcome<'_>) -> Result<(), FieldError> {
        let report = &mut self.report;
        report.lines_read += 1;
        match outcome {
            LineOutcome::Request(raw) => self.push(raw)?,
            LineOutcome::ZeroLength => report.zero_length_skipped += 1,
            LineOutcome::Skip(Skip::Blank | Skip::Comment) => report.lines_blank_or_comment += 1,
            LineOutcome::Skip(Skip::Header) => report.lines_header += 1,
            LineOutcome::Skip(Skip::OtherEvent | Skip::NotIo) => report.lines_not_io += 1,
        }
        Ok(())
    }

    fn push(&mut self, raw: RawRequest<'_>) -> Result<(), FieldError> {
        let process = self.processes.intern(raw.process)?;
        self.requests.push(TraceRequest {
            arrival_ns: raw.time_ns,
            kind: raw.kind,
            offset_bytes: raw.offset_bytes,
            len_bytes: raw.len_bytes,
            hints: Default::default(),
            process,
        });
        self.report.requests_kept += 1;
        Ok(())
    }

    fn finish(mut self, name: &str, format: TraceFormat) -> Result<Trace, TraceError> {
        if self.requests.is_empty() {
            return Err(TraceError::Empty {
                file: name.to_string(),
            });
        }
        self.report.reordered = make_relative_and_sort(&mut self.requests);
        Ok(Trace {
            name: name.to_string(),
            format,
            requests: self.requests,
            processes: self.processes.names,
            parse_report: self.report,
            clean_report: None,
        })
    }
}

/// Subtracts the earliest arrival from every request and stably sorts by arrival. Returns how
/// many requests arrived earlier than some request before them.
pub(crate) fn make_relative_and_sort(requests: &mut [TraceRequest]) -> u64 {
    let Some(first_ns) = requests.iter().map(|r| r.arrival_ns).min() else {
        return 0;
    };
    let mut reordered = 0;
    let mut latest_ns = 0;
    for request in requests.iter_mut() {
        request.arrival_ns -= first_ns;
        if request.arrival_ns < latest_ns {
            reordered += 1;
        } else {
            latest_ns = request.arrival_ns;
        }
    }
    if reordered > 0 {
        requests.sort_by_key(|r| r.arrival_ns);
    }
    reordered
}

/// Maps process names to dense indices in order of first appearance. Runs of lines from one
/// process (the common case) hit the one-entry cache and skip hashing; a run of one device
/// or pid number also skips writing its name.
#[derive(Default)]
struct Interner {
    ids: HashMap<Box<[u8]>, u32, BuildHasherDefault<NameHasher>>,
    names: Vec<String>,
    key: Vec<u8>,
    last: Option<(Vec<u8>, u32)>,
    /// The last numbered key (a device or a pid) and its id.
    last_numbered: Option<(ProcessKey<'static>, u32)>,
}

impl Interner {
    fn intern(&mut self, process: ProcessKey<'_>) -> Result<u32, FieldError> {
        let numbered = match process {
            ProcessKey::Device(n) => Some(ProcessKey::Device(n)),
            ProcessKey::Pid(n) => Some(ProcessKey::Pid(n)),
            ProcessKey::Name(_) | ProcessKey::HostDisk(..) => None,
        };
        if let (Some(key), Some((last, id))) = (numbered, self.last_numbered) {
            if key == last {
                return Ok(id);
            }
        }
        let id = self.intern_name(process)?;
        if let Some(key) = numbered {
            self.last_numbered = Some((key, id));
        }
        Ok(id)
    }

    fn intern_name(&mut self, process: ProcessKey<'_>) -> Result<u32, FieldError> {
        self.key.clear();
        write_key(&mut self.key, process);
        if let Some((last_key, id)) = &self.last {
            if *last_key == self.key {
                return Ok(*id);
            }
        }
        let id = match self.ids.get(self.key.as_slice()) {
            Some(&id) => id,
            None => self.insert()?,
        };
        let last = self.last.get_or_insert_with(|| (Vec::new(), id));
        last.0.clear();
        last.0.extend_from_slice(&self.key);
        last.1 = id;
        Ok(id)
    }

    fn insert(&mut self) -> Result<u32, FieldError> {
        let id = u32::try_from(self.names.len())
            .map_err(|_| FieldError::new("process", "more than 2^32 distinct processes"))?;
        let name = if self.key.is_empty() {
            "(none)".to_string()
        } else {
            String::from_utf8_lossy(&self.key).into_owned()
        };
        self.names.push(name);
        self.ids.insert(self.key.clone().into_boxed_slice(), id);
        Ok(id)
    }
}

/// A fast multiplicative hash for short process names (the FxHash step). The default
/// SipHash guards against hash flooding, which does not matter for a local trace file, and
/// costs a third of the parse time of a Pixel trace whose processes interleave. The map is
/// never iterated, so the hash cannot change any result.
#[derive(Default)]
struct NameHasher {
    hash: u64,
}

impl NameHasher {
    const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(Self::SEED);
    }
}

impl Hasher for NameHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let mut tail = [0u8; 8];
        let rest = chunks.remainder();
        tail[..rest.len()].copy_from_slice(rest);
        self.add(u64::from_le_bytes(tail) ^ (rest.len() as u64) << 56);
    }

    fn finish(&self) -> u64 {
        self.hash
    }
}

/// Writes the display name of a process key (`dev0`, `hm_0`, `pid 12`, or the name).
fn write_key(out: &mut Vec<u8>, process: ProcessKey<'_>) {
    // Writing to a Vec cannot fail.
    let _ = match process {
        ProcessKey::Name(name) => out.write_all(name),
        ProcessKey::Device(device) => write!(out, "dev{device}"),
        ProcessKey::HostDisk(host, disk) => {
            out.extend_from_slice(host);
            write!(out, "_{disk}")
        }
        ProcessKey::Pid(pid) => write!(out, "pid {pid}"),
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use flashstack_block::RequestKind;

    fn at(arrival_ns: u64) -> TraceRequest {
        TraceRequest {
            arrival_ns,
            kind: RequestKind::Read,
            offset_bytes: arrival_ns,
            len_bytes: 512,
            hints: Default::default(),
            process: 0,
        }
    }

    #[test]
    fn relative_and_stably_sorted() {
        let mut requests = vec![at(105), at(100), at(110), at(102), at(110)];
        requests[4].offset_bytes = 1;
        assert_eq!(make_relative_and_sort(&mut requests), 2);
        let times: Vec<u64> = requests.iter().map(|r| r.arrival_ns).collect();
        assert_eq!(times, [0, 2, 5, 10, 10]);
        assert_eq!(requests[3].offset_bytes, 110, "equal times keep file order");
        assert_eq!(requests[4].offset_bytes, 1);
    }

    #[test]
    fn interning_is_by_first_appearance() {
        let mut interner = Interner::default();
        let keys = [
            ProcessKey::Name(b"b"),
            ProcessKey::Name(b"a"),
            ProcessKey::Name(b"b"),
            ProcessKey::Device(3),
            ProcessKey::HostDisk(b"hm", 1),
            ProcessKey::Pid(7),
            ProcessKey::Name(b""),
            ProcessKey::Name(b"a"),
        ];
        let ids: Vec<u32> = keys.iter().map(|&k| interner.intern(k).unwrap()).collect();
        assert_eq!(ids, [0, 1, 0, 2, 3, 4, 5, 1]);
        assert_eq!(
            interner.names,
            ["b", "a", "dev3", "hm_1", "pid 7", "(none)"]
        );
        // Runs of one number, and a name equal to a number's.
        let keys = [
            ProcessKey::Device(3),
            ProcessKey::Device(3),
            ProcessKey::Pid(3),
            ProcessKey::Device(3),
            ProcessKey::Name(b"pid 3"),
            ProcessKey::Device(8),
            ProcessKey::Pid(7),
        ];
        let ids: Vec<u32> = keys.iter().map(|&k| interner.intern(k).unwrap()).collect();
        assert_eq!(ids, [2, 2, 6, 2, 6, 7, 4]);
        assert_eq!(
            interner.names,
            ["b", "a", "dev3", "hm_1", "pid 7", "(none)", "pid 3", "dev8"]
        );
    }

    /// The line reader splits as `read_until` under a `take` of the line limit does,
    /// whatever the buffer's size.
    #[test]
    fn lines_read_as_read_until_reads_them() {
        let mut text = b"1 0 8 8 0\r\n\n22 0 8 8 1\n".to_vec();
        text.extend(vec![b'7'; MAX_LINE_BYTES]);
        text.push(b'\n');
        text.extend(vec![b'8'; MAX_LINE_BYTES + 5]);
        text.extend(b"\nlast");
        let split = |capacity: usize, plain: bool| {
            let mut reader = BufReader::with_capacity(capacity, &text[..]);
            let mut lines = Vec::new();
            loop {
                let mut line = Vec::new();
                let read = if plain {
                    read_line(&mut reader, &mut line).unwrap()
                } else {
                    use std::io::Read;
                    let limit = MAX_LINE_BYTES as u64 + 1;
                    reader
                        .by_ref()
                        .take(limit)
                        .read_until(b'\n', &mut line)
                        .unwrap()
                };
                assert_eq!(read, line.len());
                if read == 0 {
                    return lines;
                }
                lines.push(line);
            }
        };
        let expected = split(1 << 16, false);
        assert_eq!(expected.len(), 7);
        for capacity in [1, 3, 64, 1 << 16, 1 << 20] {
            assert_eq!(split(capacity, true), expected, "buffer of {capacity}");
        }
    }

    #[test]
    fn overlong_lines_are_refused() {
        let mut text = vec![b'1'; MAX_LINE_BYTES + 10];
        text.push(b'\n');
        let error = parse_reader("big", &text[..], TraceFormat::Mqsim, &Default::default());
        assert!(
            matches!(
                error,
                Err(TraceError::Parse {
                    line: 1,
                    field: "line",
                    ..
                })
            ),
            "{error:?}"
        );
    }
}
