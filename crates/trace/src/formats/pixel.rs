//! Pixel 6a mobile CSV: `proces,device,rw_flag,sector,size,timestamp` (the header really
//! says `proces`; `process` is accepted too).
//!
//! Sector and size count 512-byte sectors; the timestamp is in seconds with a fraction.
//! Fields are taken from the right, so a process name that contains a comma still parses.

use flashstack_block::RequestKind;

use super::{request, sector_range, LineOutcome, ProcessKey, RawRequest, Skip};
use crate::fields::{parse_scaled, parse_u64, CsvFields, FieldError};

/// Seconds to nanoseconds: a factor of 10^9.
const SECONDS_SCALE: i32 = 9;

/// Column names after the first, as the header must list them.
const HEADER_TAIL: [&[u8]; 5] = [b"device", b"rw_flag", b"sector", b"size", b"timestamp"];

pub(super) fn parse(line: &[u8]) -> Result<LineOutcome<'_>, FieldError> {
    if is_header(line) {
        return check_header(line);
    }
    let mut fields = line.rsplitn(6, |&b| b == b',').map(<[u8]>::trim_ascii);
    let mut take = |field| fields.next().ok_or_else(|| FieldError::missing(field));
    let timestamp = take("timestamp")?;
    let size = take("size")?;
    let sector = take("sector")?;
    let rw_flag = take("rw_flag")?;
    let _device = take("device")?;
    let process = take("process")?;
    let time_ns = parse_scaled(timestamp, SECONDS_SCALE, "timestamp")?;
    let sectors = parse_u64(size, "size")?;
    let sector = parse_u64(sector, "sector")?;
    let kind = parse_flag(rw_flag)?;
    let (offset_bytes, len_bytes) = sector_range(sector, sectors, ("sector", "size"))?;
    Ok(request(RawRequest {
        time_ns,
        kind,
        offset_bytes,
        len_bytes,
        process: ProcessKey::Name(process),
    }))
}

fn is_header(line: &[u8]) -> bool {
    let first = CsvFields::new(line).next().unwrap_or_default();
    first.eq_ignore_ascii_case(b"proces") || first.eq_ignore_ascii_case(b"process")
}

/// A header must list the columns in the expected order: the parser does not reorder them.
fn check_header(line: &[u8]) -> Result<LineOutcome<'_>, FieldError> {
    let mut names = CsvFields::new(line).skip(1);
    let matches = HEADER_TAIL.iter().all(|expected| {
        names
            .next()
            .is_some_and(|name| name.eq_ignore_ascii_case(expected))
    });
    if matches && names.next().is_none() {
        Ok(LineOutcome::Skip(Skip::Header))
    } else {
        Err(FieldError::value(
            "header",
            line,
            "is not the expected header proces,device,rw_flag,sector,size,timestamp",
        ))
    }
}

fn parse_flag(text: &[u8]) -> Result<RequestKind, FieldError> {
    match text {
        b"R" | b"r" => Ok(RequestKind::Read),
        b"W" | b"w" => Ok(RequestKind::Write),
        _ => Err(FieldError::value("rw_flag", text, "is not R or W")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_from_an_app() {
        let line = b"com.whatsapp,sda,W,1234568,16,44186.012345";
        let Ok(LineOutcome::Request(write)) = parse(line) else {
            panic!("not a request");
        };
        assert_eq!(write.time_ns, 44_186_012_345_000);
        assert_eq!(write.kind, RequestKind::Write);
        assert_eq!((write.offset_bytes, write.len_bytes), (1234568 * 512, 8192));
        assert_eq!(write.process, ProcessKey::Name(b"com.whatsapp"));
    }

    #[test]
    fn commas_in_process_names_survive() {
        let Ok(LineOutcome::Request(read)) = parse(b"odd,name,sda,R,8,8,1.5") else {
            panic!("not a request");
        };
        assert_eq!(read.process, ProcessKey::Name(b"odd,name"));
    }

    #[test]
    fn headers() {
        let ok = [
            &b"proces,device,rw_flag,sector,size,timestamp"[..],
            b"Process, Device,RW_FLAG,sector,size,timestamp",
        ];
        for header in ok {
            assert_eq!(parse(header), Ok(LineOutcome::Skip(Skip::Header)));
        }
        let reordered = b"proces,device,rw_flag,size,sector,timestamp";
        assert_eq!(parse(reordered).unwrap_err().field, "header");
        assert_eq!(parse(b"proces,device").unwrap_err().field, "header");
    }

    #[test]
    fn bad_fields_are_named() {
        let field = |line: &[u8]| parse(line).unwrap_err().field;
        assert_eq!(field(b"app,sda,X,8,8,1.5"), "rw_flag");
        assert_eq!(field(b"app,sda,R,8,8,-1.5"), "timestamp");
        assert_eq!(field(b"app,sda,R,8,8,inf"), "timestamp");
        assert_eq!(field(b"app,sda,R,-8,8,1.5"), "sector");
        assert_eq!(field(b"app,sda,R,8,eight,1.5"), "size");
        assert_eq!(field(b"sda,R,8,8,1.5"), "process");
    }
}
