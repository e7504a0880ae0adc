//! Recorded block traces read back through the parsers: every request a format carries
//! comes back with its kind, address, length and time; the rest are counted as dropped.

use flashstack_block::{BlockRequest, RemapExtent, RequestKind, RequestSink};
use flashstack_trace::{
    parse_file, BlockTraceWriter, ParseOptions, RecordError, RecordFormat, TraceFormat,
};

fn requests() -> Vec<BlockRequest> {
    let r = |arrival_ns, kind, lba, lba_count, fua| BlockRequest {
        arrival_ns,
        kind,
        lba,
        lba_count,
        fua,
    };
    vec![
        r(1_000, RequestKind::Write, 10, 2, false),
        r(1_500, RequestKind::Read, 3, 1, false),
        r(2_000, RequestKind::Trim, 40, 8, false),
        r(2_000, RequestKind::Flush, 0, 0, false),
        r(3_000_000_123, RequestKind::Write, 7, 64, true),
    ]
}

fn write(
    format: RecordFormat,
    name: &str,
) -> (std::path::PathBuf, flashstack_trace::RecordSummary) {
    let dir = flashstack_testkit::scratch_dir("flashstack-trace-record");
    let path = dir.join(name);
    let mut writer = BlockTraceWriter::create(&path, format, 500).unwrap();
    for r in requests() {
        writer.request(&r);
    }
    writer.remap(
        4_000,
        &[RemapExtent {
            src: 1,
            dst: 9,
            count: 1,
        }],
    );
    let summary = writer.finish().unwrap();
    (path, summary)
}

#[test]
fn mqsim_keeps_reads_and_writes_and_counts_the_rest() {
    let (path, summary) = write(RecordFormat::Mqsim, "r.mqsim");
    assert_eq!(summary.requests(), 3);
    assert_eq!(summary.writes.bytes, 66 * 4096);
    assert_eq!(summary.fua_dropped, 1);
    let line = summary.dropped_line().unwrap();
    assert!(
        line.contains("1 trim") && line.contains("1 flush") && line.contains("1 remap"),
        "{line}"
    );
    let trace = parse_file(&path, Some(TraceFormat::Mqsim), &ParseOptions::default()).unwrap();
    let got: Vec<_> = trace
        .requests
        .iter()
        .map(|r| (r.arrival_ns, r.kind, r.offset_bytes, r.len_bytes))
        .collect();
    // Times from the first request (the parser's origin).
    assert_eq!(
        got,
        [
            (0, RequestKind::Write, 10 * 4096, 2 * 4096),
            (500, RequestKind::Read, 3 * 4096, 4096),
            (2_999_999_123, RequestKind::Write, 7 * 4096, 64 * 4096),
        ]
    );
}

#[test]
fn blkparse_keeps_discards_and_flushes() {
    let (path, summary) = write(RecordFormat::Blkparse, "r.blk");
    assert_eq!(summary.requests(), 5);
    assert_eq!(summary.fua_dropped, 0);
    assert_eq!(summary.dropped, [("remap".to_string(), 1)]);
    let trace = parse_file(&path, Some(TraceFormat::Blkparse), &ParseOptions::default()).unwrap();
    let got: Vec<_> = trace
        .requests
        .iter()
        .map(|r| (r.arrival_ns, r.kind, r.offset_bytes, r.len_bytes))
        .collect();
    assert_eq!(
        got,
        [
            (0, RequestKind::Write, 10 * 4096, 2 * 4096),
            (500, RequestKind::Read, 3 * 4096, 4096),
            (1_000, RequestKind::Trim, 40 * 4096, 8 * 4096),
            (1_000, RequestKind::Flush, 0, 0),
            (2_999_999_123, RequestKind::Write, 7 * 4096, 64 * 4096),
        ]
    );
}

#[test]
fn write_errors_name_the_file() {
    let dir = flashstack_testkit::scratch_dir("flashstack-trace-record");
    let missing = dir.join("missing").join("x.trace");
    match BlockTraceWriter::create(&missing, RecordFormat::Mqsim, 0) {
        Err(e @ RecordError::Create { .. }) => {
            assert!(
                e.to_string().contains(&missing.display().to_string()),
                "{e}"
            )
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("created a file in a missing directory"),
    }
    // A device that takes no bytes: the error comes at the end, naming it.
    let full = std::path::Path::new("/dev/full");
    if !full.exists() {
        return;
    }
    let mut writer = BlockTraceWriter::create(full, RecordFormat::Mqsim, 0).unwrap();
    for _ in 0..10_000 {
        for r in requests() {
            writer.request(&r);
        }
    }
    let e = writer.finish().unwrap_err();
    assert!(matches!(e, RecordError::Write { .. }));
    assert!(
        e.to_string()
            .contains("cannot write the block trace /dev/full"),
        "{e}"
    );
}

#[test]
fn requests_before_the_origin_are_counted_and_written_at_time_zero() {
    let dir = flashstack_testkit::scratch_dir("flashstack-trace-record");
    let path = dir.join("early.mqsim");
    let mut writer = BlockTraceWriter::create(&path, RecordFormat::Mqsim, 5_000).unwrap();
    for r in requests() {
        writer.request(&r);
    }
    let summary = writer.finish().unwrap();
    // Four of the five arrive before 5,000 ns; the trim and flush are not carried.
    assert_eq!(summary.before_origin, 2);
    let line = summary.before_origin_line().unwrap();
    assert!(line.starts_with("2 requests arrived before"), "{line}");
    let text = std::fs::read_to_string(&path).unwrap();
    let times: Vec<&str> = text.lines().map(|l| l.split(' ').next().unwrap()).collect();
    assert_eq!(times, ["0", "0", "2999995123"]);
    let json = serde_json::to_string(&summary).unwrap();
    assert!(json.contains("\"before_origin\":2"), "{json}");
}
