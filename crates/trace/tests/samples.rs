//! Each hand-written sample in `testdata/` parses to exactly the requests written out below,
//! with the line counts of its report; and each sample's format is detected from its lines.
//! The expected values were worked out by hand from the files, not printed by the parser.

use std::path::PathBuf;

use flashstack_trace::{
    detect_format, parse_file, BlkparseAction, ParseOptions, ParseReport, RequestKind, TimeUnit,
    Trace, TraceFormat, TraceRequest,
};

use RequestKind::{Flush, Read, Trim, Write};

fn sample(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(name)
}

fn parse(name: &str, format: Option<TraceFormat>) -> Trace {
    parse_file(&sample(name), format, &ParseOptions::default())
        .unwrap_or_else(|error| panic!("{name}: {error}"))
}

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

fn check_report(report: &ParseReport) {
    let accounted = report.requests_kept + report.lines_skipped() + report.zero_length_skipped;
    assert_eq!(report.lines_read, accounted, "{report:?}");
}

#[test]
fn mqsim_sample() {
    let trace = parse("sample.mqsim", Some(TraceFormat::Mqsim));
    assert_eq!(trace.name, "sample");
    assert_eq!(trace.format, TraceFormat::Mqsim);
    assert_eq!(trace.processes, ["dev0", "dev1"]);
    let expected = [
        req(0, Write, 1015832 * 512, 4096, 0),
        req(11_800, Write, 1015840 * 512, 4096, 0),
        req(51_450, Read, 2097152 * 512, 8192, 0),
        req(53_700, Write, 524288 * 512, 4096, 0), // out of order in the file
        req(59_700, Read, 2097168 * 512, 8192, 0),
        req(269_150, Read, 60 * 512, 4096, 0),
        req(448_700, Write, 123456 * 512, 32768, 1),
        req(449_900, Write, 123520 * 512, 32768, 1),
        req(1_148_700, Write, 1015848 * 512, 4096, 0),
        req(1_148_700, Write, 1015856 * 512, 4096, 0),
        req(2_398_825, Read, 3 * 512, 512, 0),
    ];
    assert_eq!(trace.requests, expected);
    let report = trace.parse_report;
    assert_eq!(report.lines_read, 13);
    assert_eq!(report.requests_kept, 11);
    assert_eq!(report.lines_blank_or_comment, 1);
    assert_eq!(report.zero_length_skipped, 1);
    assert_eq!(report.reordered, 1);
    check_report(&report);
}

#[test]
fn mqsim_time_units() {
    let opts = |unit| ParseOptions {
        mqsim_time_unit: unit,
        ..ParseOptions::default()
    };
    let path = sample("sample.mqsim");
    let us = parse_file(&path, Some(TraceFormat::Mqsim), &opts(TimeUnit::Us)).unwrap();
    assert_eq!(us.requests[1].arrival_ns, 11_800_000);
    let ps = parse_file(&path, Some(TraceFormat::Mqsim), &opts(TimeUnit::Ps)).unwrap();
    assert_eq!(ps.requests[1].arrival_ns, 12); // 11.8 ns rounds to 12
}

#[test]
fn disksim_sample() {
    let trace = parse("sample.disksim", Some(TraceFormat::Disksim));
    assert_eq!(trace.processes, ["dev0", "dev1", "dev2"]);
    let expected = [
        req(0, Read, 4168 * 512, 4096, 0),
        req(552_021, Read, 4176 * 512, 4096, 0),
        req(1_237_500, Write, 98304 * 512, 8192, 0),
        req(1_237_500, Write, 98320 * 512, 8192, 0),
        req(2_000_001, Write, 5000 * 512, 65536, 1),
        req(3_104_870, Read, 4168 * 512, 4096, 0),
        req(10_500_000, Write, 200 * 512, 4096, 0),
        req(15_999_999, Write, 77 * 512, 512, 2),
    ];
    assert_eq!(trace.requests, expected);
    let report = trace.parse_report;
    assert_eq!((report.lines_read, report.requests_kept), (9, 8));
    assert_eq!((report.zero_length_skipped, report.reordered), (1, 0));
    check_report(&report);
}

#[test]
fn msr_sample() {
    let trace = parse("sample-msr.csv", Some(TraceFormat::Msr));
    assert_eq!(trace.name, "sample-msr");
    assert_eq!(trace.processes, ["hm_0", "hm_1", "prxy_0"]);
    let expected = [
        req(0, Write, 7_014_609_920, 24_576, 0),
        req(1_332_052_600, Write, 1_317_441_536, 8192, 0),
        req(2_332_061_600, Write, 2_436_440_064, 4096, 0),
        req(3_317_901_000, Read, 3_154_132_992, 32_768, 0),
        req(3_318_520_000, Read, 3_154_165_760, 32_768, 1),
        req(4_293_837_000, Read, 8192, 512, 0), // out of order in the file
        req(4_294_186_600, Write, 1_317_449_728, 8192, 0),
        req(6_348_018_200, Write, 2_405_376, 4096, 2),
    ];
    assert_eq!(trace.requests, expected);
    let report = trace.parse_report;
    assert_eq!(
        (report.lines_read, report.requests_kept, report.lines_header),
        (10, 8, 1)
    );
    assert_eq!((report.zero_length_skipped, report.reordered), (1, 1));
    check_report(&report);
}

#[test]
fn blkparse_sample() {
    let trace = parse("sample.blkparse", Some(TraceFormat::Blkparse));
    let names = [
        "kworker/u16:1",
        "sqlite3",
        "jbd2/sda1-8",
        "fstrim",
        "Web Content",
    ];
    assert_eq!(trace.processes, names);
    let first = 11_813; // the first D line's time
    let expected = [
        req(0, Write, 3_255_808 * 512, 4096, 0),
        req(3_146_880 - first, Read, 1_058_816 * 512, 16_384, 1),
        req(3_401_120 - first, Read, 2048 * 512, 4096, 1),
        req(10_001_245 - first, Flush, 0, 0, 2),
        req(10_250_000 - first, Write, 4_194_304 * 512, 8192, 2),
        req(20_000_000 - first, Trim, 8_388_608 * 512, 1_048_576, 3),
        req(31_000_000 - first, Read, 1_058_848 * 512, 131_072, 4),
    ];
    assert_eq!(trace.requests, expected);
    let report = trace.parse_report;
    assert_eq!((report.lines_read, report.requests_kept), (29, 7));
    assert_eq!(
        (report.lines_blank_or_comment, report.lines_not_io),
        (1, 20)
    );
    assert_eq!(report.zero_length_skipped, 1);
    check_report(&report);
}

#[test]
fn blkparse_other_actions() {
    let path = sample("sample.blkparse");
    let opts = |action| ParseOptions {
        blkparse_action: action,
        ..ParseOptions::default()
    };
    let queued = parse_file(&path, None, &opts(BlkparseAction::Queue)).unwrap();
    let kinds: Vec<RequestKind> = queued.requests.iter().map(|r| r.kind).collect();
    assert_eq!(kinds, [Write, Read, Flush]);
    let completed = parse_file(&path, None, &opts(BlkparseAction::Complete)).unwrap();
    assert_eq!(completed.requests.len(), 2);
    assert_eq!(completed.processes, ["pid 0"]);
    assert_eq!(completed.requests[1].arrival_ns, 3_590_310 - 198_412);
}

#[test]
fn pixel_sample() {
    let trace = parse("sample-pixel.csv", Some(TraceFormat::Pixel));
    let names = [
        "com.whatsapp",
        "kworker/u16:3",
        "f2fs_ckpt",
        "android.hardware.camera",
        "com.google.android.gms",
    ];
    assert_eq!(trace.processes, names);
    assert_eq!(trace.requests, pixel_expected());
    let report = trace.parse_report;
    assert_eq!(
        (report.lines_read, report.requests_kept, report.lines_header),
        (17, 15, 1)
    );
    assert_eq!((report.zero_length_skipped, report.reordered), (1, 0));
    check_report(&report);
}

/// The Pixel sample's requests; times are relative to 44186.012345 s.
pub fn pixel_expected() -> Vec<TraceRequest> {
    vec![
        req(0, Write, 46_137_344 * 512, 4096, 0),
        req(3_656_000, Write, 46_137_344 * 512, 4096, 1),
        req(7_655_000, Read, 20_971_520 * 512, 16_384, 0),
        req(9_155_000, Write, 46_137_352 * 512, 8192, 0),
        req(9_655_000, Read, 46_137_344 * 512, 4096, 0),
        req(17_555_000, Write, 46_137_352 * 512, 8192, 2),
        req(17_655_000, Write, 46_137_344 * 512, 4096, 0),
        req(64_487_655_000, Write, 60_817_408 * 512, 131_072, 3),
        req(64_490_655_000, Write, 60_817_664 * 512, 131_072, 3),
        req(64_494_655_000, Write, 60_817_664 * 512, 131_072, 1),
        req(64_495_655_000, Write, 60_817_664 * 512, 65_536, 3),
        req(64_587_655_000, Read, 8_396_800 * 512, 4096, 4),
        req(3_664_587_755_000, Read, 8_396_808 * 512, 4096, 4),
        req(3_664_597_755_000, Write, 102_400 * 512, 4096, 4),
        req(3_664_602_655_000, Write, 46_137_344 * 512, 4096, 0),
    ]
}

#[test]
fn every_sample_is_detected() {
    let samples = [
        ("sample.mqsim", TraceFormat::Mqsim),
        ("sample.disksim", TraceFormat::Disksim),
        ("sample-msr.csv", TraceFormat::Msr),
        ("sample.blkparse", TraceFormat::Blkparse),
        ("sample-pixel.csv", TraceFormat::Pixel),
    ];
    for (name, format) in samples {
        let text = std::fs::read_to_string(sample(name)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(detect_format(&lines), Some(format), "{name}");
        assert_eq!(
            detect_format(&lines[..2]),
            Some(format),
            "{name}, two lines"
        );
        let detected = parse(name, None);
        assert_eq!(detected, parse(name, Some(format)), "{name}");
    }
}

#[test]
fn detection_refuses_what_it_cannot_tell() {
    assert_eq!(detect_format(&[]), None);
    assert_eq!(detect_format(&["", "# only a comment"]), None);
    assert_eq!(detect_format(&["hello world", "this is prose"]), None);
    assert_eq!(
        detect_format(&["CPU0 (8,0):", " Reads Queued: 1, 4KiB"]),
        None
    );
    // Whole-millisecond DiskSim lines are indistinguishable from MQSim; MQSim wins.
    assert_eq!(detect_format(&["0 0 8 8 1"]), Some(TraceFormat::Mqsim));
    assert_eq!(
        detect_format(&["0 0 8 8 1", "0.5 0 8 8 1"]),
        Some(TraceFormat::Disksim)
    );
    assert_eq!(detect_format(&["0 0 8 8 1f"]), Some(TraceFormat::Disksim));
}

#[test]
fn format_names_round_trip() {
    for format in TraceFormat::ALL {
        assert_eq!(format.to_string().parse::<TraceFormat>(), Ok(format));
    }
    assert_eq!("SSDSim".parse::<TraceFormat>(), Ok(TraceFormat::Mqsim));
    assert!("csv".parse::<TraceFormat>().is_err());
    assert_eq!("us".parse::<TimeUnit>(), Ok(TimeUnit::Us));
    assert!("ms".parse::<TimeUnit>().is_err());
}
