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
