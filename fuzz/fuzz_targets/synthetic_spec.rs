//! Feeds arbitrary text to the synthetic spec parser; a spec that parses is also run (at most
//! 1000 requests) on a small device, and every request must stay inside the footprint.
#![no_main]

use flashstack_trace::{synthetic, SyntheticSpec};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(mut spec) = text.parse::<SyntheticSpec>() else {
        return;
    };
    spec.count = spec.count.min(1000);
    if let Ok(source) = synthetic(&spec, 1 << 30, 1) {
        let footprint = source.footprint_bytes();
        for request in source {
            assert!(request.offset_bytes + request.len_bytes <= footprint);
        }
    }
});
