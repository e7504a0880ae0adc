//! Feeds arbitrary bytes to the mobigen importer: it may return an error (naming file, line and
//! field), never panic. An imported trace is also analysed and must survive a text round trip.
#![no_main]

use std::io::Cursor;

use flashstack_workload::{analyze, mobigen, text};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok((trace, _report)) = mobigen::import(Cursor::new(data), "fuzz") {
        let _ = analyze(&trace);
        let again = text::parse_str(&text::to_text(&trace), "fuzz-again")
            .expect("an imported trace writes as valid text");
        assert_eq!(again, trace, "parse(write(t)) == t");
    }
});
