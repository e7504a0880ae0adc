//! Cleaning the Pixel sample drops exactly the three duplicates planted in it (lines 3, 7 and
//! 11 of the file) and shortens exactly its two planted idle gaps (64.47 s and 3600.0001 s).
//! Near-duplicates that differ in kind, length or fall outside the window must survive.

use std::path::PathBuf;

use flashstack_trace::{
    clean, parse_file, CleanOptions, CleanReport, ParseOptions, Trace, TraceFormat,
};

fn pixel_sample() -> Trace {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/sample-pixel.csv");
    parse_file(&path, Some(TraceFormat::Pixel), &ParseOptions::default()).unwrap()
}

#[test]
fn planted_duplicates_and_gaps_are_removed() {
    let original = pixel_sample();
    let mut trace = original.clone();
    let report = clean(&mut trace, &CleanOptions::default());
    assert_eq!(
        report,
        CleanReport {
            duplicates_dropped: 3,
            duplicate_bytes_dropped: 4096 + 8192 + 131_072,
            rewrites_kept: 0,
            other_repeats_kept: 0,
            gaps_shortened: 2,
            longest_gap_ns: 3_600_000_100_000,
            time_removed_ns: 54_470_000_000 + 3_590_000_100_000,
            requests_before: 15,
            requests_after: 12,
        }
    );
    // Requests 1, 5 and 9 (0-based) of the parsed sample are the duplicates.
    let kept: Vec<_> = original
        .requests
        .iter()
        .enumerate()
        .filter(|(index, _)| ![1, 5, 9].contains(index))
        .map(|(_, request)| (request.kind, request.offset_bytes, request.len_bytes))
        .collect();
    let got: Vec<_> = trace
        .requests
        .iter()
        .map(|request| (request.kind, request.offset_bytes, request.len_bytes))
        .collect();
    assert_eq!(got, kept);
    let times: Vec<u64> = trace.requests.iter().map(|r| r.arrival_ns).collect();
    let expected_times = [
        0,
        7_655_000,
        9_155_000,
        9_655_000,
        17_655_000,
        10_017_655_000, // after the first gap, cut to 10 s
        10_020_655_000,
        10_025_655_000,
        10_117_655_000,
        20_117_655_000, // after the second gap, cut to 10 s
        20_127_655_000,
        20_132_555_000,
    ];
    assert_eq!(times, expected_times);
    assert_eq!(
        report.to_string(),
        "dropped 3 requests logged twice by two processes (20.0%), kept 0 rewrites by the \
         same process, shortened 2 idle gaps (longest 1h 0m) removing 1h 0m"
    );
}

#[test]
fn each_step_can_be_turned_off() {
    let original = pixel_sample();
    let mut trace = original.clone();
    let report = clean(&mut trace, &CleanOptions::none());
    assert_eq!((report.duplicates_dropped, report.gaps_shortened), (0, 0));
    assert_eq!(trace.requests, original.requests);

    let mut trace = original.clone();
    let only_dedup = CleanOptions {
        max_gap_ns: None,
        ..CleanOptions::default()
    };
    let report = clean(&mut trace, &only_dedup);
    assert_eq!((report.duplicates_dropped, report.gaps_shortened), (3, 0));
    assert_eq!(trace.duration_ns(), original.duration_ns());

    let mut trace = original;
    let narrow = CleanOptions {
        dedup_window_ns: Some(3_656_000),
        max_gap_ns: Some(u64::MAX),
    };
    let report = clean(&mut trace, &narrow);
    assert_eq!(
        report.duplicates_dropped, 1,
        "only the 3.656 ms duplicate is inside"
    );
}

#[test]
fn cleaning_twice_changes_nothing_more() {
    let mut trace = pixel_sample();
    clean(&mut trace, &CleanOptions::default());
    let once = trace.clone();
    let report = clean(&mut trace, &CleanOptions::default());
    assert_eq!((report.duplicates_dropped, report.gaps_shortened), (0, 0));
    assert_eq!(trace.requests, once.requests);
}

fn pixel(csv: &str) -> Trace {
    let text = format!("proces,device,rw_flag,sector,size,timestamp\n{csv}");
    flashstack_trace::parse_reader(
        "synthetic",
        text.as_bytes(),
        TraceFormat::Pixel,
        &ParseOptions::default(),
    )
    .unwrap()
}

/// The same write logged by the kernel's worker and by the app 2 ms apart is one request;
/// the app writing its journal block again 3 ms later is two. Only the first is dropped,
/// and the report counts both.
#[test]
fn a_duplicate_of_two_processes_is_dropped_and_a_rewrite_kept() {
    let mut trace = pixel(
        "com.example.app,sda,W,800,8,100.000\n\
         kworker/u16:3,sda,W,800,8,100.002\n\
         com.example.app,sda,W,1600,8,100.010\n\
         com.example.app,sda,W,1600,8,100.013\n",
    );
    let report = clean(&mut trace, &CleanOptions::default());
    assert_eq!(report.duplicates_dropped, 1);
    assert_eq!(report.rewrites_kept, 1);
    let kept: Vec<(u64, &str)> = trace
        .requests
        .iter()
        .map(|r| (r.offset_bytes / 512, trace.process_name(r)))
        .collect();
    assert_eq!(
        kept,
        [
            (800, "com.example.app"),
            (1600, "com.example.app"),
            (1600, "com.example.app")
        ]
    );
    assert_eq!(trace.clean_report, Some(report));
    assert!(report
        .to_string()
        .contains("kept 1 rewrite by the same process"));
}

/// A trace spanning days: the gap is measured as found, and cleaning says how long the
/// longest was.
#[test]
fn a_days_long_idle_gap_is_measured_and_compressed() {
    let mut trace = pixel(
        "app,sda,W,8,8,1000.0\n\
         app,sda,W,16,8,1000.5\n\
         app,sda,R,8,8,260200.5\n",
    );
    let gaps = flashstack_trace::idle_gaps(&trace.requests, flashstack_trace::IDLE_GAP_NS);
    assert_eq!((gaps.count, gaps.longest_ns), (1, 259_200_000_000_000));
    let report = clean(&mut trace, &CleanOptions::default());
    assert_eq!(report.gaps_shortened, 1);
    assert_eq!(report.longest_gap_ns, 259_200_000_000_000);
    assert_eq!(trace.duration_ns(), 10_500_000_000);
    assert!(report.to_string().contains("(longest 3d 0h)"), "{report}");
}
