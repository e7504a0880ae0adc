//! Feeds arbitrary bytes to the msr parser: it may return an error, never panic. A parsed
//! trace is also cleaned and summarised, which must not panic either.
#![no_main]

use std::io::Cursor;

use flashstack_trace::{clean, inspect, parse_reader, CleanOptions, ParseOptions, TraceFormat};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let format = TraceFormat::Msr;
    if let Ok(mut trace) = parse_reader("fuzz", Cursor::new(data), format, &ParseOptions::default())
    {
        let _ = inspect(&trace.requests);
        let _ = clean(&mut trace, &CleanOptions::default());
    }
});
