//! The trace summary counts what a hand-checked request list contains, and prints it.

use std::path::PathBuf;

use flashstack_trace::{
    inspect, inspect_trace, parse_file, ParseOptions, RequestKind, TraceFormat, TraceRequest,
};

use RequestKind::{Flush, Read, Trim, Write};

fn req(arrival_ns: u64, kind: RequestKind, offset: u64, len: u64, process: u32) -> TraceRequest {
    TraceRequest {
        arrival_ns,
        kind,
        offset_bytes: offset,
        len_bytes: len,
        hints: Default::default(),
        process,
    }
}

#[test]
fn counts_of_a_small_list() {
    let requests = [
        req(0, Write, 0, 8192, 0),      // LBAs 0-1
        req(10, Write, 8192, 4096, 0),  // LBA 2, sequential
        req(20, Read, 4096, 4096, 1),   // LBA 1
        req(30, Read, 8192, 16_384, 1), // LBAs 2-5, sequential after the last read
        req(40, Flush, 0, 0, 0),
        req(50, Trim, 1 << 20, 1 << 20, 2), // not in the footprint
        req(60, Write, 100, 300_000, 2),    // LBAs 0-73 (unaligned), > 256K
    ];
    let summary = inspect(requests);
    assert_eq!(summary.requests, 7);
    let kinds: Vec<(RequestKind, u64, u64, u64)> = summary
        .kinds
        .iter()
        .map(|k| (k.kind, k.requests, k.bytes, k.mean_size_bytes))
        .collect();
    assert_eq!(
        kinds,
        [
            (Read, 2, 20_480, 10_240),
            (Write, 3, 312_288, 104_096),
            (Trim, 1, 1 << 20, 1 << 20),
            (Flush, 1, 0, 0),
        ]
    );
    let buckets: Vec<u64> = summary.size_histogram.iter().map(|b| b.requests).collect();
    assert_eq!(buckets, [2, 1, 1, 0, 0, 0, 0, 2]);
    assert_eq!(summary.footprint_lbas_read, 5);
    assert_eq!(summary.footprint_lbas_written, 74);
    assert_eq!(summary.footprint_lbas_total, 74);
    assert_eq!(summary.offset_bytes_max, 1 << 20);
    assert_eq!(summary.end_bytes_max, 2 << 20);
    assert_eq!(summary.duration_ns, 60);
    assert!((summary.write_share_requests - 0.6).abs() < 1e-9);
    assert!((summary.write_share_bytes - 312_288.0 / 332_768.0).abs() < 1e-9);
    assert!((summary.sequential_share - 2.0 / 6.0).abs() < 1e-9);
    assert_eq!(summary.distinct_processes, 3);
    let top: Vec<(u32, u64)> = summary
        .top_processes
        .iter()
        .map(|p| (p.process, p.requests))
        .collect();
    assert_eq!(top, [(0, 3), (1, 2), (2, 2)]);
}

#[test]
fn empty_input_gives_zeros() {
    let summary = inspect(std::iter::empty::<TraceRequest>());
    assert_eq!(summary.requests, 0);
    assert_eq!(summary.footprint_lbas_total, 0);
    assert_eq!(summary.write_share_requests, 0.0);
    assert!(summary.to_string().contains("0 requests over 0ns"));
}

#[test]
fn a_parsed_trace_prints_and_serializes() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/sample-pixel.csv");
    let trace = parse_file(&path, Some(TraceFormat::Pixel), &ParseOptions::default()).unwrap();
    let summary = inspect_trace(&trace);
    assert_eq!(summary.top_processes[0].name, "com.whatsapp");
    assert_eq!(summary.top_processes[0].requests, 6);
    let text = summary.to_string();
    for expected in [
        "15 requests over 1h 1m",
        "com.whatsapp",
        "≤4K",
        "write share",
        "footprint",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in\n{text}");
    }
    let json = serde_json::to_value(&summary).unwrap();
    assert_eq!(json["requests"], 15);
    assert_eq!(json["kinds"][1]["kind"], "write");
    assert_eq!(json["size_histogram"][0]["label"], "≤4K");
}
