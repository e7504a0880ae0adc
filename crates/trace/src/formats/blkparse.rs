//! blkparse default text output:
//! `maj,min cpu seq time pid action rwbs [sector + nsectors] [process]`.
//!
//! A line whose first field is `maj,min` is an event line and is parsed strictly; any other
//! line (the per-CPU and total summary blkparse prints at the end, `CPU0 (8,0):`,
//! ` Reads Queued: ...`) is skipped as not I/O. Of the event lines only the chosen action is
//! kept. Lines without `sector + nsectors` carry no data (flushes print `D FN [proc]`);
//! passthrough commands print a byte count and a CDB instead and are skipped.

use flashstack_block::RequestKind;

use super::{request, sector_range, LineOutcome, ProcessKey, RawRequest, Skip};
use crate::fields::{parse_scaled, parse_u64, FieldError, Words};
use crate::BlkparseAction;

/// Seconds to nanoseconds: a factor of 10^9.
const SECONDS_SCALE: i32 = 9;

pub(super) fn parse(line: &[u8], action: BlkparseAction) -> Result<LineOutcome<'_>, FieldError> {
    let mut words = Words::new(line);
    let Some(event) = parse_event(&mut words)? else {
        return Ok(LineOutcome::Skip(Skip::NotIo));
    };
    if event.action != action.letter() {
        return Ok(LineOutcome::Skip(Skip::OtherEvent));
    }
    let (time_ns, pid) = (event.time_ns, event.pid);
    let rwbs = words.field("rwbs")?;
    if !rwbs.iter().all(u8::is_ascii_uppercase) {
        return Err(FieldError::value(
            "rwbs",
            rwbs,
            "is not an rwbs flag string",
        ));
    }
    let (range, tail) = match data_range(&mut words)? {
        Data::Range(offset, len, tail) => (Some((offset, len)), tail),
        Data::None(tail) => (None, tail),
        Data::Passthrough => return Ok(LineOutcome::Skip(Skip::OtherEvent)),
    };
    // `F` without data is a flush (`FN`, or an empty preflush write `FWS`); `F` on a write
    // with data is a preflush or FUA write and stays a write.
    let flush = rwbs.contains(&b'F') && range.is_none_or(|(_, len)| len == 0);
    let (kind, offset_bytes, len_bytes) = match (flush, kind_of(rwbs), range) {
        (true, _, _) => (RequestKind::Flush, 0, 0),
        (false, Some(kind), Some((offset, len))) => (kind, offset, len),
        _ => return Ok(LineOutcome::Skip(Skip::OtherEvent)),
    };
    let process = match (action, bracketed(tail)) {
        (BlkparseAction::Complete, _) | (_, None) => ProcessKey::Pid(pid),
        (_, Some(name)) => ProcessKey::Name(name),
    };
    Ok(request(RawRequest {
        time_ns,
        kind,
        offset_bytes,
        len_bytes,
        process,
    }))
}

/// The fields every event line starts with.
struct Event<'a> {
    time_ns: u64,
    pid: u64,
    action: &'a [u8],
}

/// Parses `maj,min cpu seq time pid action`; `None` if the line is not an event line.
fn parse_event<'a>(words: &mut Words<'a>) -> Result<Option<Event<'a>>, FieldError> {
    if !is_device(words.field("device")?) {
        return Ok(None);
    }
    parse_u64(words.field("cpu")?, "cpu")?;
    parse_u64(words.field("sequence")?, "sequence")?;
    let time_ns = parse_scaled(words.field("time")?, SECONDS_SCALE, "time")?;
    let pid = parse_u64(words.field("pid")?, "pid")?;
    let action = words.field("action")?;
    Ok(Some(Event {
        time_ns,
        pid,
        action,
    }))
}

/// `maj,min` with both parts decimal.
fn is_device(field: &[u8]) -> bool {
    let Some(comma) = field.iter().position(|&b| b == b',') else {
        return false;
    };
    let (major, minor) = (&field[..comma], &field[comma + 1..]);
    let digits = |part: &[u8]| !part.is_empty() && part.iter().all(u8::is_ascii_digit);
    digits(major) && digits(minor)
}

/// The data request kind the rwbs letters stand for; `None` if they name none (`N`, `FN`).
fn kind_of(rwbs: &[u8]) -> Option<RequestKind> {
    let has = |letter| rwbs.contains(&letter);
    if has(b'D') || has(b'E') {
        Some(RequestKind::Trim)
    } else if has(b'W') {
        Some(RequestKind::Write)
    } else if has(b'R') {
        Some(RequestKind::Read)
    } else {
        None
    }
}

/// What follows the rwbs field.
enum Data<'a> {
    /// `sector + nsectors`, in bytes, and the rest of the line.
    Range(u64, u64, &'a [u8]),
    /// Nothing or directly the `[process]`: a request without data.
    None(&'a [u8]),
    /// A passthrough command: byte count and CDB in parentheses.
    Passthrough,
}

fn data_range<'a>(words: &mut Words<'a>) -> Result<Data<'a>, FieldError> {
    let before = words.remainder();
    let Some(sector_text) = words.next() else {
        return Ok(Data::None(before));
    };
    if sector_text.starts_with(b"[") {
        return Ok(Data::None(before));
    }
    if words.next() != Some(&b"+"[..]) {
        return Ok(Data::Passthrough);
    }
    let sector = parse_u64(sector_text, "sector")?;
    let sectors = parse_u64(words.field("nsectors")?, "nsectors")?;
    let (offset, len) = sector_range(sector, sectors, ("sector", "nsectors"))?;
    Ok(Data::Range(offset, len, words.remainder()))
}

/// The text between the first `[` and the last `]`: command names may contain spaces.
fn bracketed(tail: &[u8]) -> Option<&[u8]> {
    let open = tail.iter().position(|&b| b == b'[')?;
    let close = tail.iter().rposition(|&b| b == b']')?;
    (close > open).then(|| &tail[open + 1..close])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dispatch(line: &[u8]) -> Result<LineOutcome<'_>, FieldError> {
        parse(line, BlkparseAction::Dispatch)
    }

    fn req(line: &[u8]) -> RawRequest<'_> {
        match dispatch(line) {
            Ok(LineOutcome::Request(request)) => request,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn dispatched_write() {
        let write =
            req(b"  8,0    3       11     0.000061840  2345  D  WS 2048 + 8 [kworker/u16:2]");
        assert_eq!(write.time_ns, 61_840);
        assert_eq!(write.kind, RequestKind::Write);
        assert_eq!((write.offset_bytes, write.len_bytes), (1_048_576, 4096));
        assert_eq!(write.process, ProcessKey::Name(b"kworker/u16:2"));
    }

    #[test]
    fn kinds_from_rwbs() {
        assert_eq!(
            req(b"8,0 0 1 1.0 1 D RA 8 + 8 [app]").kind,
            RequestKind::Read
        );
        assert_eq!(
            req(b"8,0 0 1 1.0 1 D DS 8 + 8 [app]").kind,
            RequestKind::Trim
        );
        assert_eq!(
            req(b"8,0 0 1 1.0 1 D WFS 8 + 8 [app]").kind,
            RequestKind::Write
        );
        let flush = req(b"8,0 0 1 1.0 1 D FN [kworker/0:1H]");
        assert_eq!(
            (flush.kind, flush.offset_bytes, flush.len_bytes),
            (RequestKind::Flush, 0, 0)
        );
        assert_eq!(
            req(b"8,0 0 1 1.0 1 D FWS 0 + 0 [jbd2]").kind,
            RequestKind::Flush
        );
        assert_eq!(req(b"8,0 0 1 1.0 77 D FWS").process, ProcessKey::Pid(77));
        assert_eq!(req(b"8,0 0 1 1.0 77 D FWS").kind, RequestKind::Flush);
        assert_eq!(
            dispatch(b"8,0 0 1 1.0 1 D R [a]"),
            Ok(LineOutcome::Skip(Skip::OtherEvent))
        );
        assert_eq!(
            dispatch(b"8,0 0 1 1.0 1 D WS 8 + 0 [a]"),
            Ok(LineOutcome::ZeroLength)
        );
    }

    #[test]
    fn other_lines_are_skipped() {
        let other = Ok(LineOutcome::Skip(Skip::OtherEvent));
        assert_eq!(dispatch(b"8,0 0 1 1.0 1 Q WS 8 + 8 [app]"), other);
        assert_eq!(dispatch(b"8,0 0 1 1.0 1 D N 0 (12 01 00) [sg_inq]"), other);
        assert_eq!(
            dispatch(b"8,0 0 1 1.0 1 D R 255 (12 01 00) [sg_inq]"),
            other
        );
        assert_eq!(dispatch(b"8,0 0 0 1.0 0 m N cfq1234 insert_request"), other);
        let not_io = Ok(LineOutcome::Skip(Skip::NotIo));
        for line in [
            &b"CPU0 (8,0):"[..],
            b" Reads Queued:  12,  48KiB",
            b"Total (8,0):",
        ] {
            assert_eq!(dispatch(line), not_io);
        }
    }

    #[test]
    fn completions_use_the_pid() {
        let line = b"8,0 1 9 0.5 0 C WS 2048 + 8 [0]";
        let Ok(LineOutcome::Request(done)) = parse(line, BlkparseAction::Complete) else {
            panic!("not a request");
        };
        assert_eq!(done.process, ProcessKey::Pid(0));
    }

    #[test]
    fn bad_fields_of_event_lines_are_errors() {
        let field = |line: &[u8]| dispatch(line).unwrap_err().field;
        assert_eq!(field(b"8,0 x 1 1.0 1 D W 8 + 8 [a]"), "cpu");
        assert_eq!(field(b"8,0 0 1 -1.0 1 D W 8 + 8 [a]"), "time");
        assert_eq!(field(b"8,0 0 1 1.0 1 D W x + 8 [a]"), "sector");
        assert_eq!(field(b"8,0 0 1 1.0 1 D W 8 + -8 [a]"), "nsectors");
        assert_eq!(field(b"8,0 0 1 1.0 1 D W 8 +"), "nsectors");
        assert_eq!(field(b"8,0 0 1 1.0 1 D w2 8 + 8"), "rwbs");
        assert_eq!(field(b"8,0 0 1 1.0"), "pid");
    }

    #[test]
    fn process_names_with_spaces() {
        let read = req(b"259,0 0 1 1.0 1 D R 8 + 8 [Web Content]");
        assert_eq!(read.process, ProcessKey::Name(b"Web Content"));
    }
}
