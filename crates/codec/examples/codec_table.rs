//! Speed and ratio of every codec on 4 KiB pages of each content class, as a Markdown
//! table (docs/codecs.md):
//!
//! ```sh
//! cargo run --release -p flashstack-codec --example codec_table [-- --pages 256 --secs 0.3]
//! cargo run --release -p flashstack-codec --example codec_table -- --file FILE [--codecs lzo1x-1,lz4]
//! ```
//!
//! Per codec and class: `--pages` distinct pages (default 256, i.e. 1 MiB) from the content
//! model (seed 1, successive LBAs, a mix of versions), compressed one page per call with
//! one warm codec, repeated until `--secs` of wall time (default 0.3 s) has passed, then
//! decompressed the same way. MB/s is 10^6 bytes of *uncompressed* data per second in both
//! directions; the ratio is compressed ÷ uncompressed bytes (LDC's Cr, lower is better),
//! averaged over the pages. `--file FILE` measures the first `--pages` whole 4 KiB blocks
//! of a file instead of the content classes (to compare with other tools on the same
//! bytes); `--codecs` picks the codecs (comma-separated configuration strings).

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
    let file = match args.iter().position(|a| a == "--file") {
        None => None,
        Some(i) => match args.get(i + 1).map(std::fs::read) {
            Some(Ok(bytes)) => Some((args[i + 1].clone(), bytes)),
            _ => {
                eprintln!("codec_table: --file needs a readable file");
                std::process::exit(2);
            }
        },
    };
    let codecs: Vec<String> = match args.iter().position(|a| a == "--codecs") {
        None => CODECS.iter().map(|s| s.to_string()).collect(),
        Some(i) => args
            .get(i + 1)
            .map(|v| v.split(',').map(str::to_string).collect())
            .unwrap_or_default(),
    };
    // (label, pages) per row group: the file's blocks, or each content class.
    let inputs: Vec<(String, Vec<Vec<u8>>)> = match &file {
        Some((name, bytes)) => vec![(
            name.clone(),
            bytes
                .chunks_exact(PAGE_SIZE)
                .take(pages)
                .map(<[u8]>::to_vec)
                .collect(),
        )],
        None => ContentClass::ALL
            .iter()
            .map(|&class| {
                let pages = (0..pages as u64)
                    .map(|lba| {
                        let mut page = vec![0u8; PAGE_SIZE];
                        model.fill_class(class, lba, (lba % 3) as u32, &mut page);
                        page
                    })
                    .collect();
                (class.name().to_string(), pages)
            })
            .collect(),
    };
    if inputs.iter().any(|(_, p)| p.is_empty()) {
        eprintln!("codec_table: no whole 4 KiB block to measure");
        std::process::exit(2);
    }

    println!("| codec | class | compress MB/s | decompress MB/s | mean ratio |");
    println!("|---|---|--:|--:|--:|");
    for spec in &codecs {
        let kind: CodecKind = match spec.parse() {
            Ok(k) => k,
            Err(e) => {
                eprintln!("codec_table: {e}");
                std::process::exit(2);
            }
        };
        let mut codec = match kind.build() {
            Ok(c) => c,
            Err(e) => {
                eprintln!("codec_table: {e}");
                std::process::exit(1);
            }
        };
        for (label, input) in &inputs {
            let pages = input.len();
            let mut packed: Vec<Vec<u8>> = vec![Vec::new(); pages];
            let mut ratio_sum = 0.0;
            for (page, out) in input.iter().zip(packed.iter_mut()) {
                ratio_sum += codec.compress(page, out) as f64 / PAGE_SIZE as f64;
            }
            let total = pages * PAGE_SIZE;
            let mut out = Vec::with_capacity(2 * PAGE_SIZE);
            let compress = throughput(total, min, || {
                for page in input {
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
                "| {spec} | {label} | {compress:.0} | {decompress:.0} | {:.3} |",
                ratio_sum / pages as f64
            );
        }
    }
}
