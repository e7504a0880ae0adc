//! DiskSim ASCII: `time_ms devno blkno bcount flags [more...]`.
//!
//! DiskSim reads the line with `sscanf("%lf %d %d %d %x")`: a decimal time in milliseconds,
//! 512-byte blocks and hexadecimal flags whose bit 0 marks a read. Trailing columns (some
//! converted traces append a response time) are ignored.

use flashstack_block::RequestKind;

use super::{request, sector_range, LineOutcome, ProcessKey, RawRequest};
use crate::fields::{parse_hex, parse_scaled, parse_u64, FieldError, Words};

/// Milliseconds to nanoseconds: a factor of 10^6.
const MS_SCALE: i32 = 6;

pub(super) fn parse(line: &[u8]) -> Result<LineOutcome<'_>, FieldError> {
    let mut words = Words::new(line);
    let time_ns = parse_scaled(words.field("time_ms")?, MS_SCALE, "time_ms")?;
    let device = parse_u64(words.field("device")?, "device")?;
    let block = parse_u64(words.field("block")?, "block")?;
    let blocks = parse_u64(words.field("bcount")?, "bcount")?;
    let flags = parse_hex(words.field("flags")?, "flags")?;
    let kind = if flags & 1 == 1 {
        RequestKind::Read
    } else {
        RequestKind::Write
    };
    let (offset_bytes, len_bytes) = sector_range(block, blocks, ("block", "bcount"))?;
    Ok(request(RawRequest {
        time_ns,
        kind,
        offset_bytes,
        len_bytes,
        process: ProcessKey::Device(device),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_milliseconds_and_hex_flags() {
        let Ok(LineOutcome::Request(read)) = parse(b"12.345678 2 100 16 0x11 0.2") else {
            panic!("not a request");
        };
        assert_eq!(read.time_ns, 12_345_678);
        assert_eq!(read.kind, RequestKind::Read);
        assert_eq!((read.offset_bytes, read.len_bytes), (51_200, 8192));
        assert_eq!(read.process, ProcessKey::Device(2));
        let Ok(LineOutcome::Request(write)) = parse(b"0.000000 0 0 8 a") else {
            panic!("not a request");
        };
        assert_eq!(write.kind, RequestKind::Write);
    }

    #[test]
    fn bad_fields_are_named() {
        let field = |line: &[u8]| parse(line).unwrap_err().field;
        assert_eq!(field(b"-1.0 0 0 8 0"), "time_ms");
        assert_eq!(field(b"nan 0 0 8 0"), "time_ms");
        assert_eq!(field(b"1.0 0 0 8 zz"), "flags");
        assert_eq!(field(b"1.0 0 0 8"), "flags");
        assert_eq!(field(b"1.0 0 x 8 0"), "block");
    }
}
