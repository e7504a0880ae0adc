//! MQSim / SSDSim ASCII: `arrival_time devno start_sector size_sectors type`.
//!
//! MQSim reads the time with `strtoll`, so only integers are accepted; `type` is 0 for a
//! write and 1 for a read. Exactly five fields: a sixth means the file is something else
//! (DiskSim lines may carry extra columns), which keeps format detection honest.

use flashstack_block::RequestKind;

use super::{request, sector_range, LineOutcome, ProcessKey, RawRequest};
use crate::fields::{parse_u64, FieldError, Words};
use crate::TimeUnit;

pub(super) fn parse(line: &[u8], unit: TimeUnit) -> Result<LineOutcome<'_>, FieldError> {
    match parse_plain(line, unit) {
        Some(outcome) => Ok(outcome),
        None => parse_checked(line, unit),
    }
}

/// The common line in one pass: five fields of 1 to 19 digits, the last one digit, and
/// nothing else. Anything else (`None`) goes to [`parse_checked`], which gives the same
/// answer for these lines and names the field of every error.
#[inline]
fn parse_plain(line: &[u8], unit: TimeUnit) -> Option<LineOutcome<'static>> {
    let mut values = [0u64; 5];
    let mut at = 0;
    for (i, value) in values.iter_mut().enumerate() {
        while at < line.len() && line[at].is_ascii_whitespace() {
            at += 1;
        }
        let start = at;
        let mut number: u64 = 0;
        while at < line.len() && line[at].is_ascii_digit() {
            number = number
                .wrapping_mul(10)
                .wrapping_add(u64::from(line[at] - b'0'));
            at += 1;
        }
        let digits = at - start;
        let max_digits = if i == 4 { 1 } else { 19 };
        if digits == 0 || digits > max_digits {
            return None;
        }
        if at < line.len() && !line[at].is_ascii_whitespace() {
            return None;
        }
        *value = number;
    }
    if line[at..].iter().any(|b| !b.is_ascii_whitespace()) {
        return None;
    }
    let [time, device, sector, sectors, kind] = values;
    let kind = match kind {
        0 => RequestKind::Write,
        1 => RequestKind::Read,
        _ => return None,
    };
    let (offset_bytes, len_bytes) = sector_range(sector, sectors, ("start_sector", "size")).ok()?;
    Some(request(RawRequest {
        time_ns: to_ns(time, unit)?,
        kind,
        offset_bytes,
        len_bytes,
        process: ProcessKey::Device(device),
    }))
}

/// Every line, field by field, with an error naming the first bad field.
fn parse_checked(line: &[u8], unit: TimeUnit) -> Result<LineOutcome<'_>, FieldError> {
    let mut words = Words::new(line);
    let time_text = words.field("arrival_time")?;
    let time = parse_u64(time_text, "arrival_time")?;
    let device = parse_u64(words.field("device")?, "device")?;
    let sector = parse_u64(words.field("start_sector")?, "start_sector")?;
    let sectors = parse_u64(words.field("size")?, "size")?;
    let kind = match words.field("type")? {
        b"0" => RequestKind::Write,
        b"1" => RequestKind::Read,
        other => {
            return Err(FieldError::value(
                "type",
                other,
                "is not 0 (write) or 1 (read)",
            ))
        }
    };
    if let Some(extra) = words.next() {
        return Err(FieldError::value(
            "line",
            extra,
            "follows the 5 MQSim fields",
        ));
    }
    let (offset_bytes, len_bytes) = sector_range(sector, sectors, ("start_sector", "size"))?;
    Ok(request(RawRequest {
        time_ns: to_ns(time, unit).ok_or_else(|| {
            FieldError::value("arrival_time", time_text, "is too large in nanoseconds")
        })?,
        kind,
        offset_bytes,
        len_bytes,
        process: ProcessKey::Device(device),
    }))
}

/// Converts a time in `unit` to nanoseconds (picoseconds round to the nearest ns).
fn to_ns(time: u64, unit: TimeUnit) -> Option<u64> {
    match unit {
        TimeUnit::Ps => Some(time / 1000 + u64::from(time % 1000 >= 500)),
        TimeUnit::Ns => Some(time),
        TimeUnit::Us => time.checked_mul(1000),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_and_a_read() {
        let Ok(LineOutcome::Request(write)) = parse(b"1500 0 8 8 0", TimeUnit::Ns) else {
            panic!("not a request");
        };
        assert_eq!(
            (
                write.time_ns,
                write.kind,
                write.offset_bytes,
                write.len_bytes
            ),
            (1500, RequestKind::Write, 4096, 4096)
        );
        let Ok(LineOutcome::Request(read)) = parse(b"2500\t1  16\t1 1", TimeUnit::Us) else {
            panic!("not a request");
        };
        assert_eq!(read.time_ns, 2_500_000);
        assert_eq!(read.kind, RequestKind::Read);
        assert_eq!(read.process, ProcessKey::Device(1));
    }

    /// The one-pass parser answers exactly as the field-by-field one, or leaves the line
    /// to it.
    #[test]
    fn plain_lines_parse_as_checked_ones() {
        let lines: [&[u8]; 16] = [
            b"1500 0 8 8 0",
            b"2500\t1  16\t1 1",
            b" 7 3 0 1 1 ",
            b"1 0 8 0 0",
            b"9999999999999999999 0 8 8 0",
            b"18446744073709551615 0 8 8 0",
            b"1 0 36028797018963967 1 0",
            b"1 0 36028797018963968 1 0",
            b"1 0 8 8 2",
            b"1 0 8 8 01",
            b"1 0 8 8",
            b"1 0 8 8 0 7",
            b"1.5 0 8 8 0",
            b"1 0 -8 8 0",
            b"1 0 8 8 0x",
            b"",
        ];
        for line in lines {
            for unit in [TimeUnit::Ps, TimeUnit::Ns, TimeUnit::Us] {
                let checked = parse_checked(line, unit);
                if let Some(plain) = parse_plain(line, unit) {
                    assert_eq!(Ok(plain), checked, "{}", String::from_utf8_lossy(line));
                }
            }
        }
        assert!(parse_plain(b"1500 0 8 8 0", TimeUnit::Ns).is_some());
        assert!(parse_plain(b"2500\t1  16\t1 1", TimeUnit::Us).is_some());
        assert!(parse_plain(b"18446744073709551615 0 8 8 0", TimeUnit::Ns).is_none());
        assert!(parse_plain(b"99999999999999999 0 8 8 0", TimeUnit::Us).is_none());
    }

    #[test]
    fn picoseconds_round_to_nearest() {
        assert_eq!(to_ns(1499, TimeUnit::Ps), Some(1));
        assert_eq!(to_ns(1500, TimeUnit::Ps), Some(2));
        assert_eq!(to_ns(u64::MAX, TimeUnit::Ps), Some(u64::MAX / 1000 + 1));
        assert_eq!(to_ns(u64::MAX, TimeUnit::Us), None);
    }

    #[test]
    fn bad_fields_are_named() {
        let field = |line: &[u8]| parse(line, TimeUnit::Ns).unwrap_err().field;
        assert_eq!(field(b"1.5 0 8 8 0"), "arrival_time");
        assert_eq!(field(b"1 x 8 8 0"), "device");
        assert_eq!(field(b"1 0 -8 8 0"), "start_sector");
        assert_eq!(field(b"1 0 8 abc 0"), "size");
        assert_eq!(field(b"1 0 8 8 2"), "type");
        assert_eq!(field(b"1 0 8 8"), "type");
        assert_eq!(field(b"1 0 8 8 0 7"), "line");
        assert_eq!(
            parse(b"1 0 8 0 0", TimeUnit::Ns),
            Ok(LineOutcome::ZeroLength)
        );
    }
}
