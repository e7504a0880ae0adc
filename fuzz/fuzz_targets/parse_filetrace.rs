//! Feeds arbitrary bytes to the file-level trace reader: it may return an error (naming file,
//! line and field), never panic. A parsed trace is also analysed and written back, and the
//! written text must parse to the same trace.
#![no_main]

use flashstack_workload::{analyze, text};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(body) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(trace) = text::parse_str(body, "fuzz") {
        let _ = analyze(&trace);
        let again = text::parse_str(&text::to_text(&trace), "fuzz-again")
            .expect("a written trace parses");
        assert_eq!(again, trace, "parse(write(t)) == t");
    }
});
