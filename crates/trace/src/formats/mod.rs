//! One line parser per format. Each is a pure function of one line: no parser keeps state
//! between lines, which makes format detection (try every parser on the first lines) and
//! fuzzing simple.

mod blkparse;
mod disksim;
mod mqsim;
mod msr;
mod pixel;

use flashstack_block::RequestKind;

use crate::fields::FieldError;
use crate::{ParseOptions, TraceFormat, SECTOR_BYTES};

/// What one line turned out to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LineOutcome<'a> {
    Request(RawRequest<'a>),
    /// A read, write or trim of zero bytes.
    ZeroLength,
    Skip(Skip),
}

/// Why a line was skipped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Skip {
    Blank,
    Comment,
    Header,
    /// A well-formed event of the format that is not a request we keep (another blkparse
    /// action, a passthrough command, a request without data). It still shows the format.
    OtherEvent,
    /// A line the format does not describe but tolerates (the blkparse summary block).
    NotIo,
}

/// A request with an absolute time in nanoseconds, before interning its process name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RawRequest<'a> {
    pub time_ns: u64,
    pub kind: RequestKind,
    pub offset_bytes: u64,
    pub len_bytes: u64,
    pub process: ProcessKey<'a>,
}

/// Where a request's process name comes from; turned into a name only when first seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ProcessKey<'a> {
    /// A name taken from the line as is.
    Name(&'a [u8]),
    /// A device number, named `dev<N>`.
    Device(u64),
    /// MSR's host name and disk number, named `<host>_<disk>`.
    HostDisk(&'a [u8], u64),
    /// A process id, named `pid <N>`.
    Pid(u64),
}

/// Parses one line (without its line terminator) in `format`.
pub(crate) fn parse_line<'a>(
    format: TraceFormat,
    line: &'a [u8],
    opts: &ParseOptions,
) -> Result<LineOutcome<'a>, FieldError> {
    let line = line.trim_ascii();
    if line.is_empty() {
        return Ok(LineOutcome::Skip(Skip::Blank));
    }
    if line[0] == b'#' {
        return Ok(LineOutcome::Skip(Skip::Comment));
    }
    match format {
        TraceFormat::Mqsim => mqsim::parse(line, opts.mqsim_time_unit),
        TraceFormat::Disksim => disksim::parse(line),
        TraceFormat::Msr => msr::parse(line),
        TraceFormat::Blkparse => blkparse::parse(line, opts.blkparse_action),
        TraceFormat::Pixel => pixel::parse(line),
    }
}

/// Converts a sector address and count to bytes, checking that the request ends inside the
/// 64-bit byte space.
pub(crate) fn sector_range(
    sector: u64,
    sectors: u64,
    (sector_field, size_field): (&'static str, &'static str),
) -> Result<(u64, u64), FieldError> {
    let offset = sector.checked_mul(SECTOR_BYTES).ok_or_else(|| {
        FieldError::new(
            sector_field,
            format!("sector {sector} is beyond 2^64 bytes"),
        )
    })?;
    let len = sectors.checked_mul(SECTOR_BYTES).ok_or_else(|| {
        FieldError::new(size_field, format!("{sectors} sectors exceed 2^64 bytes"))
    })?;
    check_end(offset, len, size_field)?;
    Ok((offset, len))
}

/// Checks that `offset + len` does not overflow.
pub(crate) fn check_end(offset: u64, len: u64, size_field: &'static str) -> Result<(), FieldError> {
    match offset.checked_add(len) {
        Some(_) => Ok(()),
        None => Err(FieldError::new(
            size_field,
            format!("a request of {len} bytes at byte {offset} ends beyond 2^64 bytes"),
        )),
    }
}

/// The outcome for a parsed request: zero-length reads, writes and trims are skipped.
pub(crate) fn request(raw: RawRequest<'_>) -> LineOutcome<'_> {
    if raw.len_bytes == 0 && raw.kind != RequestKind::Flush {
        LineOutcome::ZeroLength
    } else {
        LineOutcome::Request(raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_and_comment_lines_are_skipped_in_every_format() {
        let opts = ParseOptions::default();
        for format in TraceFormat::ALL {
            let blank = parse_line(format, b"  \t\r", &opts);
            assert_eq!(blank, Ok(LineOutcome::Skip(Skip::Blank)), "{format}");
            let comment = parse_line(format, b"  # note", &opts);
            assert_eq!(comment, Ok(LineOutcome::Skip(Skip::Comment)), "{format}");
        }
    }

    #[test]
    fn sector_ranges_overflow_cleanly() {
        let fields = ("sector", "size");
        assert_eq!(sector_range(2, 8, fields), Ok((1024, 4096)));
        assert_eq!(
            sector_range(u64::MAX, 1, fields).unwrap_err().field,
            "sector"
        );
        assert_eq!(sector_range(0, u64::MAX, fields).unwrap_err().field, "size");
        let max_sector = u64::MAX / SECTOR_BYTES;
        assert_eq!(
            sector_range(max_sector, 1, fields).unwrap_err().field,
            "size"
        );
    }
}
