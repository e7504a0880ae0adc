//! Bad input gives an error naming the file, the line and the field, never a panic and never
//! a silently dropped line. Each case plants one bad line in otherwise good text.

use std::io::Cursor;
use std::path::Path;

use flashstack_trace::{parse_file, parse_reader, ParseOptions, TraceError, TraceFormat};

/// Parses `text` and returns `(line, field, message)` of the expected parse error.
fn parse_error(format: TraceFormat, text: &str) -> (u64, &'static str, String) {
    match parse_reader(
        "t.trace",
        Cursor::new(text),
        format,
        &ParseOptions::default(),
    ) {
        Err(TraceError::Parse {
            file,
            line,
            field,
            message,
        }) => {
            assert_eq!(file, "t.trace");
            (line, field, message)
        }
        other => panic!("expected a parse error, got {other:?}"),
    }
}

#[test]
fn the_message_names_file_line_and_field() {
    let text = "0 0 8 8 0\n1 0 8 8 0\n\n2 0 8 abc 0\n";
    let error = parse_reader(
        "trace.csv",
        Cursor::new(text),
        TraceFormat::Mqsim,
        &Default::default(),
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "trace.csv:4: field 'size': 'abc' is not a number"
    );
}

#[test]
fn mqsim_bad_lines() {
    let cases = [
        ("0 0 8 8 0\n0 0 8 8 5\n", 2, "type"),
        ("0 0 8 8 0\n# c\n-3 0 8 8 0\n", 3, "arrival_time"),
        ("0 0 -8 8 0\n", 1, "start_sector"),
        ("0 0 8 8\n", 1, "type"),
        ("0 0 8 8 0 9\n", 1, "line"),
        ("0 0 36028797018963968 1 0\n", 1, "start_sector"),
    ];
    for (text, line, field) in cases {
        let (got_line, got_field, _) = parse_error(TraceFormat::Mqsim, text);
        assert_eq!((got_line, got_field), (line, field), "{text:?}");
    }
}

#[test]
fn disksim_bad_lines() {
    let cases = [
        ("0.5 0 8 8 1\n1.5 0 8 8 xyz\n", 2, "flags"),
        ("-0.5 0 8 8 1\n", 1, "time_ms"),
        ("inf 0 8 8 1\n", 1, "time_ms"),
        ("0.5 0 8 -8 1\n", 1, "bcount"),
    ];
    for (text, line, field) in cases {
        let (got_line, got_field, _) = parse_error(TraceFormat::Disksim, text);
        assert_eq!((got_line, got_field), (line, field), "{text:?}");
    }
    let (_, _, message) = parse_error(TraceFormat::Disksim, "-0.5 0 8 8 1\n");
    assert_eq!(message, "'-0.5' must not be negative");
}

#[test]
fn msr_bad_lines() {
    let header = "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n";
    let good = "128166372003061629,hm,0,Write,7014609920,24576,41286\n";
    let cases = [
        (format!("{header}{good}1,hm,0,Erase,0,512,1\n"), 3, "type"),
        (format!("{header}1,hm,0,Read,0,-512,1\n"), 2, "size"),
        (format!("{good}1,hm,0,Read,0x10,512,1\n"), 2, "offset"),
        (format!("{good}1,hm\n"), 2, "disk_number"),
    ];
    for (text, line, field) in cases {
        let (got_line, got_field, _) = parse_error(TraceFormat::Msr, &text);
        assert_eq!((got_line, got_field), (line, field), "{text:?}");
    }
}

#[test]
fn blkparse_bad_event_lines() {
    let good = "  8,0  0  1  0.000000000  12  D  W 8 + 8 [app]\n";
    let cases = [
        (
            format!("{good}  8,0  0  2  0.1  12  D  W 8 + x [app]\n"),
            2,
            "nsectors",
        ),
        (
            format!("{good}  8,0  0  2  zero  12  D  W 8 + 8 [app]\n"),
            2,
            "time",
        ),
        (
            format!("{good}  8,0  0  2  0.1  12  D  W zz + 8 [app]\n"),
            2,
            "sector",
        ),
        (
            format!("{good}  8,0  0  2  0.1  12  D  w 8 + 8 [app]\n"),
            2,
            "rwbs",
        ),
        (format!("CPU0 (8,0):\n{good}  8,0  x\n"), 3, "cpu"),
    ];
    for (text, line, field) in cases {
        let (got_line, got_field, _) = parse_error(TraceFormat::Blkparse, &text);
        assert_eq!((got_line, got_field), (line, field), "{text:?}");
    }
}

#[test]
fn pixel_bad_lines() {
    let header = "proces,device,rw_flag,sector,size,timestamp\n";
    let good = "app,sda,W,8,8,1.5\n";
    let cases = [
        (format!("{header}{good}app,sda,T,8,8,1.6\n"), 3, "rw_flag"),
        (format!("{header}app,sda,R,8,8,-1.6\n"), 2, "timestamp"),
        (format!("{header}app,sda,R,8,8,NaN\n"), 2, "timestamp"),
        (format!("{header}app,sda,R,-8,8,1.6\n"), 2, "sector"),
        (
            format!("{good}proces,device,rw_flag,size,sector,timestamp\n"),
            2,
            "header",
        ),
        (format!("{good}R,8,8,1.6\n"), 2, "device"),
    ];
    for (text, line, field) in cases {
        let (got_line, got_field, _) = parse_error(TraceFormat::Pixel, &text);
        assert_eq!((got_line, got_field), (line, field), "{text:?}");
    }
}

#[test]
fn a_trace_without_requests_is_an_error() {
    let text = "proces,device,rw_flag,sector,size,timestamp\napp,sda,W,8,0,1.5\n";
    let result = parse_reader(
        "x.csv",
        Cursor::new(text),
        TraceFormat::Pixel,
        &Default::default(),
    );
    let error = result.unwrap_err();
    assert!(
        matches!(&error, TraceError::Empty { file } if file == "x.csv"),
        "{error}"
    );
    let empty = parse_reader(
        "e",
        Cursor::new(""),
        TraceFormat::Mqsim,
        &Default::default(),
    );
    assert!(matches!(empty, Err(TraceError::Empty { .. })));
}

#[test]
fn file_errors_name_the_file() {
    let missing = Path::new("/nonexistent/dir/trace.csv");
    let error = parse_file(missing, Some(TraceFormat::Msr), &ParseOptions::default()).unwrap_err();
    assert!(matches!(error, TraceError::Io { .. }));
    assert!(
        error.to_string().contains("/nonexistent/dir/trace.csv"),
        "{error}"
    );

    let dir = flashstack_testkit::scratch_dir("flashstack-trace");
    let prose = dir.join("notes.txt");
    std::fs::write(&prose, "these are not\nthe lines you are looking for\n").unwrap();
    let error = parse_file(&prose, None, &ParseOptions::default()).unwrap_err();
    assert!(matches!(&error, TraceError::UnknownFormat { file } if file.ends_with("notes.txt")));
    assert!(
        error
            .to_string()
            .contains("notes.txt: cannot tell the trace format"),
        "{error}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn invalid_utf8_is_not_an_io_error() {
    let mut text = b"proces,device,rw_flag,sector,size,timestamp\n".to_vec();
    text.extend_from_slice(b"app\xff\xfe,sda,W,8,8,1.5\n");
    let trace = parse_reader("u", &text[..], TraceFormat::Pixel, &Default::default()).unwrap();
    assert_eq!(trace.processes, ["app\u{fffd}\u{fffd}"]);
}
