//! Speed and ratio of every codec on 4 KiB pages of each content class, as a Markdown
//! table (docs/codecs.md):
//!
//! ```sh
//! cargo run --release -p flashstack-codec --example codec_table [-- --pages 256 --secs 0.3]
//! ```
//!
//! Per codec and class: `--pages` distinct pages (default 256, i.e. 1 MiB) from the content
//! model (seed 1, successive LBAs, a mix of versions), compressed one page per call with
//! one warm codec, repeated until `--secs` of wall time (default 0.3 s) has passed, then
//! decompressed the same way. MB/s is 10^6 bytes of *uncompressed* data per second in both
//! directions; the ratio is compressed ÷ uncompressed bytes (LDC's Cr, lower is better),
//! averaged over the pages.

use std::hint::black_box;
use std::time::{Duration, Instant};

use flashstack_codec::CodecKind;
use flashstack_content::{ContentClass, ContentMix, ContentModel, PAGE_SIZE};

const CODECS: [&str; 7] = [
    "lz4", "lzo1x-1", "zstd:1", "zstd:3", "zstd:9", "zlib:1", "zlib:6",
];

fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> Result<T, String> {
    match args.iter().position(|a| a == name) {
        None => Ok(default),
        Some(i) => args
            .get(i + 1)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("{name} needs a number")),
    }
}

/// Runs `pass` (one pass over all pages) until `min` has passed; returns MB/s.
fn throughput(bytes_per_pass: usize, min: Duration, mut pass: impl FnMut()) -> f64 {
    pass(); // warm-up
    let start = Instant::now();
    let mut passes = 0u64;
    while start.elapsed() < min || passes == 0 {
        pass();
        passes += 1;
    }
    (passes as f64 * bytes_per_pass as f64) / start.elapsed().as_secs_f64() / 1e6
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (pages, secs) = match (
        arg(&args, "--pages", 256usize),
        arg(&args, "--secs", 0.3f64),
    ) {
        (Ok(p), Ok(s)) if p > 0 && s > 0.0 => (p, s),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("codec_table: {e}");
            std::process::exit(2);
        }
        _ => {
            eprintln!("codec_table: --pages and --secs must be positive");
            std::process::exit(2);
        }
    };
    let min = Duration::from_secs_f64(secs);
    let model = ContentModel::new(1, ContentMix::default());

    println!("| codec | class | compress MB/s | decompress MB/s | mean ratio |");
    println!("|---|---|--:|--:|--:|");
    for spec in CODECS {
        let kind: CodecKind = spec.parse().expect("valid codec names");
        let mut codec = match kind.build() {
            Ok(c) => c,
            Err(e) => {
                eprintln!("codec_table: {e}");
                std::process::exit(1);
            }
        };
        for class in ContentClass::ALL {
            let input: Vec<Vec<u8>> = (0..pages as u64)
                .map(|lba| {
                    let mut page = vec![0u8; PAGE_SIZE];
                    model.fill_class(class, lba, (lba % 3) as u32, &mut page);
                    page
                })
                .collect();
            let mut packed: Vec<Vec<u8>> = vec![Vec::new(); pages];
            let mut ratio_sum = 0.0;
            for (page, out) in input.iter().zip(packed.iter_mut()) {
                ratio_sum += codec.compress(page, out) as f64 / PAGE_SIZE as f64;
            }
            let total = pages * PAGE_SIZE;
            let mut out = Vec::with_capacity(2 * PAGE_SIZE);
            let compress = throughput(total, min, || {
                for page in &input {
                    black_box(codec.compress(page, &mut out));
                }
            });
            let mut failed = None;
            let decompress = throughput(total, min, || {
                for p in &packed {
                    if let Err(e) = codec.decompress(p, &mut out, PAGE_SIZE) {
                        failed = Some(e);
                    }
                    black_box(&out);
                }
            });
            if let Some(e) = failed {
                eprintln!("codec_table: {spec} cannot decode its own output: {e}");
                std::process::exit(1);
            }
            println!(
                "| {spec} | {} | {compress:.0} | {decompress:.0} | {:.3} |",
                class.name(),
                ratio_sum / pages as f64
            );
        }
    }
}
