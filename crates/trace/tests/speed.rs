//! Parsing speed, by format (target: more than 2 million lines per second). Ignored by
//! default because timings depend on the machine; run with
//! `cargo test -p flashstack-trace --release --test speed -- --ignored --nocapture`.

use std::fmt::Write;
use std::time::Instant;

use flashstack_trace::{parse_reader, ParseOptions, TraceFormat};

const LINES: u64 = 1_000_000;

fn line(format: TraceFormat, index: u64, out: &mut String) {
    let sector = index * 8 % 100_000_000;
    let kind = index.is_multiple_of(3);
    let _ = match format {
        TraceFormat::Mqsim => writeln!(out, "{} 0 {sector} 8 {}", index * 1000, u8::from(kind)),
        TraceFormat::Disksim => writeln!(
            out,
            "{}.{:06} 0 {sector} 8 {}",
            index,
            index % 1000,
            u8::from(kind)
        ),
        TraceFormat::Msr => writeln!(
            out,
            "{},hm,0,{},{},4096,1234",
            128_166_372_003_061_629 + index * 1000,
            if kind { "Read" } else { "Write" },
            sector * 512
        ),
        TraceFormat::Blkparse => writeln!(
            out,
            "  8,0    3 {index:8} {:5}.{:09} 1922  D  {} {sector} + 8 [kworker/u16:1]",
            index / 1000,
            index % 1000 * 1000,
            if kind { "R" } else { "WS" }
        ),
        TraceFormat::Pixel => writeln!(
            out,
            "com.example.app{},sda,{},{sector},8,{}.{:06}",
            index % 4,
            if kind { "R" } else { "W" },
            44_186 + index / 1000,
            index % 1000 * 1000
        ),
    };
}

#[test]
#[ignore]
fn lines_per_second() {
    for format in TraceFormat::ALL {
        let mut text = String::with_capacity(LINES as usize * 80);
        for index in 0..LINES {
            line(format, index, &mut text);
        }
        let start = Instant::now();
        let trace =
            parse_reader("speed", text.as_bytes(), format, &ParseOptions::default()).unwrap();
        let seconds = start.elapsed().as_secs_f64();
        assert_eq!(trace.requests.len() as u64, LINES);
        let rate = LINES as f64 / seconds / 1e6;
        println!("{format:>9}: {rate:.1} M lines/s ({} MB)", text.len() >> 20);
    }
}
