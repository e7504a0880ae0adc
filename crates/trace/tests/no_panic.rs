//! Arbitrary input never panics a parser, the detector, the spec parser, the cleaner or the
//! summary; parsers that succeed uphold their invariants (sorted, relative times, every line
//! accounted for, no zero-length data request, requests inside the 64-bit byte space).

use std::io::Cursor;

use flashstack_trace::{
    clean, detect_format, inspect, parse_reader, synthetic, CleanOptions, ParseOptions,
    RequestKind, SyntheticSpec, Trace, TraceFormat, TraceRequest,
};
use proptest::prelude::*;

fn check_invariants(trace: &Trace) {
    let report = &trace.parse_report;
    let accounted = report.requests_kept + report.lines_skipped() + report.zero_length_skipped;
    assert_eq!(report.lines_read, accounted);
    assert_eq!(report.requests_kept, trace.requests.len() as u64);
    assert_eq!(trace.requests.first().map(|r| r.arrival_ns), Some(0));
    assert!(trace.requests.is_sorted_by_key(|r| r.arrival_ns));
    for request in &trace.requests {
        assert!((request.process as usize) < trace.processes.len());
        assert!(request
            .offset_bytes
            .checked_add(request.len_bytes)
            .is_some());
        assert_eq!(request.len_bytes == 0, request.kind == RequestKind::Flush);
    }
}

fn parse_all_formats(bytes: &[u8]) {
    for format in TraceFormat::ALL {
        let result = parse_reader("fuzz", Cursor::new(bytes), format, &ParseOptions::default());
        if let Ok(mut trace) = result {
            check_invariants(&trace);
            let _ = inspect(&trace.requests);
            clean(&mut trace, &CleanOptions::default());
        }
    }
}

/// Lines that look almost like each format, with random fields, so that the parsers get
/// past their first checks.
fn line_like_a_trace() -> impl Strategy<Value = String> {
    let field = prop_oneof![
        "[0-9]{1,25}",
        "-?[0-9]{0,6}\\.[0-9]{0,12}(e-?[0-9]{1,4})?",
        "[RWDFSNMA]{1,4}",
        "[a-z/:._]{0,12}",
        Just("+".to_string()),
        Just("8,0".to_string()),
        Just("[kworker/0:1]".to_string()),
        "0x[0-9a-fA-F]{0,18}",
        ".{0,3}",
    ];
    (
        prop::collection::vec(field, 0..12),
        prop_oneof![Just(" "), Just(","), Just("\t")],
    )
        .prop_map(|(fields, separator)| fields.join(separator))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        parse_all_formats(&bytes);
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<&str> = text.lines().collect();
        let _ = detect_format(&lines);
        let _ = text.parse::<SyntheticSpec>();
    }

    #[test]
    fn near_miss_lines_never_panic(lines in prop::collection::vec(line_like_a_trace(), 0..20)) {
        let text = lines.join("\n");
        parse_all_formats(text.as_bytes());
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let _ = detect_format(&refs);
    }

    #[test]
    fn near_miss_specs_never_panic(
        pattern in prop_oneof![
            Just("seq"), Just("uniform"), Just("zipf"), Just("zipf:0.5"), Just("hotcold:0.3:0.6"),
        ],
        keys in prop::collection::vec(
            (
                prop_oneof![
                    Just("count"), Just("read"), Just("trim"), Just("flush"), Just("size"),
                    Just("iat"), Just("footprint"), Just("align"),
                ],
                prop_oneof![
                    "[0-9]{1,4}", "0\\.[0-9]{1,3}", "[0-9]{1,3}[kmg]", "exp:[0-9]{1,3}us",
                    "[0-9]k:[0-9]/[0-9]{2}k:[0-9]", ".{0,4}",
                ],
            ),
            0..6,
        ),
        capacity in 0u64..(1 << 32),
        seed in any::<u64>(),
    ) {
        let mut text = pattern.to_string();
        for (key, value) in &keys {
            text.push_str(&format!(",{key}={value}"));
        }
        if let Ok(mut spec) = text.parse::<SyntheticSpec>() {
            spec.count = spec.count.min(200);
            if let Ok(source) = synthetic(&spec, capacity, seed) {
                let footprint = source.footprint_bytes();
                for request in source {
                    prop_assert!(request.offset_bytes + request.len_bytes <= footprint);
                    prop_assert_eq!(request.offset_bytes % spec.align_bytes, 0);
                }
            }
        }
    }

    #[test]
    fn clean_and_inspect_accept_any_requests(
        raw in prop::collection::vec(
            (any::<u64>(), 0u8..4, any::<u64>(), any::<u64>(), 0u32..5),
            0..200,
        ),
        window in prop::option::of(0u64..1_000_000),
        gap in prop::option::of(0u64..1_000_000),
    ) {
        let requests: Vec<TraceRequest> = raw
            .iter()
            .map(|&(arrival_ns, kind, offset_bytes, len_bytes, process)| TraceRequest {
                arrival_ns: arrival_ns >> 20,
                kind: RequestKind::ALL[kind as usize],
                offset_bytes,
                len_bytes,
                hints: Default::default(),
                process,
            })
            .collect();
        let summary = inspect(&requests);
        prop_assert_eq!(summary.requests, requests.len() as u64);
        let _ = summary.to_string();
        let mut trace = Trace {
            name: "p".into(),
            format: TraceFormat::Mqsim,
            requests,
            processes: Vec::new(),
            parse_report: Default::default(),
            clean_report: None,
        };
        let report = clean(&mut trace, &CleanOptions { dedup_window_ns: window, max_gap_ns: gap });
        prop_assert_eq!(report.requests_after, trace.requests.len() as u64);
        prop_assert!(trace.requests.is_sorted_by_key(|r| r.arrival_ns));
        if let Some(gap) = gap {
            for pair in trace.requests.windows(2) {
                prop_assert!(pair[1].arrival_ns - pair[0].arrival_ns <= gap);
            }
        }
    }
}
