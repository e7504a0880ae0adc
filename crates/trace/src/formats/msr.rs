//! MSR Cambridge CSV: `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`.
//!
//! The timestamp is a Windows FILETIME (100 ns ticks since 1601); offsets and sizes are in
//! bytes. The original files have no header, but converted copies often do, so a row whose
//! first field is `Timestamp` is skipped as a header. The response time is ignored (it was
//! measured on the traced server, not on the emulated device).

use flashstack_block::RequestKind;

use super::{check_end, request, LineOutcome, ProcessKey, RawRequest, Skip};
use crate::fields::{parse_u64, CsvFields, FieldError};

/// Nanoseconds per FILETIME tick.
const NS_PER_TICK: u64 = 100;

pub(super) fn parse(line: &[u8]) -> Result<LineOutcome<'_>, FieldError> {
    let mut fields = CsvFields::new(line);
    let timestamp_text = fields.field("timestamp")?;
    if timestamp_text.eq_ignore_ascii_case(b"timestamp") {
        return Ok(LineOutcome::Skip(Skip::Header));
    }
    let ticks = parse_u64(timestamp_text, "timestamp")?;
    let time_ns = ticks
        .checked_mul(NS_PER_TICK)
        .ok_or_else(|| FieldError::value("timestamp", timestamp_text, "is too large"))?;
    let host = fields.field("hostname")?;
    let disk = parse_u64(fields.field("disk_number")?, "disk_number")?;
    let kind = parse_type(fields.field("type")?)?;
    let offset_bytes = parse_u64(fields.field("offset")?, "offset")?;
    let len_bytes = parse_u64(fields.field("size")?, "size")?;
    check_end(offset_bytes, len_bytes, "size")?;
    Ok(request(RawRequest {
        time_ns,
        kind,
        offset_bytes,
        len_bytes,
        process: ProcessKey::HostDisk(host, disk),
    }))
}

fn parse_type(text: &[u8]) -> Result<RequestKind, FieldError> {
    if text.eq_ignore_ascii_case(b"read") {
        Ok(RequestKind::Read)
    } else if text.eq_ignore_ascii_case(b"write") {
        Ok(RequestKind::Write)
    } else {
        Err(FieldError::value("type", text, "is not Read or Write"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_with_filetime() {
        let line = b"128166372003061629,hm,0,Write,7014609920,24576,41286";
        let Ok(LineOutcome::Request(write)) = parse(line) else {
            panic!("not a request");
        };
        assert_eq!(write.time_ns, 12_816_637_200_306_162_900);
        assert_eq!(write.kind, RequestKind::Write);
        assert_eq!(
            (write.offset_bytes, write.len_bytes),
            (7_014_609_920, 24_576)
        );
        assert_eq!(write.process, ProcessKey::HostDisk(b"hm", 0));
    }

    #[test]
    fn header_and_case() {
        let header = b"Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime";
        assert_eq!(parse(header), Ok(LineOutcome::Skip(Skip::Header)));
        let Ok(LineOutcome::Request(read)) = parse(b"1,src1,2,READ,0,512") else {
            panic!("not a request");
        };
        assert_eq!(read.kind, RequestKind::Read);
    }

    #[test]
    fn bad_fields_are_named() {
        let field = |line: &[u8]| parse(line).unwrap_err().field;
        assert_eq!(
            field(b"999999999999999999999,hm,0,Read,0,512,1"),
            "timestamp"
        );
        assert_eq!(field(b"184467440737095517,hm,0,Read,0,512,1"), "timestamp");
        assert_eq!(field(b"1,hm,x,Read,0,512,1"), "disk_number");
        assert_eq!(field(b"1,hm,0,Trim,0,512,1"), "type");
        assert_eq!(field(b"1,hm,0,Read,-5,512,1"), "offset");
        assert_eq!(field(b"1,hm,0,Read,0"), "size");
        assert_eq!(field(b"1,hm,0,Read,18446744073709551615,512"), "size");
    }
}
