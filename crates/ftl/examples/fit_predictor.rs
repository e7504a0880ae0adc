//! Fits LDC's entropy → compression-ratio table on real files and writes
//! `crates/ftl/src/predictor_table.rs`.
//!
//! ```sh
//! python3 scripts/predictor-corpus.py /tmp/corpus       # real SQLite databases
//! cargo run --release -p flashstack-ftl --example fit_predictor -- \
//!     --out crates/ftl/src/predictor_table.rs \
//!     /tmp/corpus /usr/lib/x86_64-linux-gnu /usr/lib/python3.11 /usr/share/icons /usr/share/doc
//! ```
//!
//! Every file under the given paths is cut into 4 KiB blocks (at most 1,024 per file, evenly
//! spaced, so no single large file dominates). For each block the predictor's sampled
//! entropy picks a 0.1-bit bin and the codec gives the actual ratio. A bin's value is the
//! mean ratio of its blocks; empty bins are interpolated, and the table is made monotone
//! (pool-adjacent-violators) because compressibility only worsens as entropy grows.

use std::path::{Path, PathBuf};

use flashstack_codec::{Codec, Lzo1x1};
use flashstack_ftl::predictor::{decibits_of, full_entropy_bits, sampled_entropy_bits};

const BLOCK: usize = 4096;
const BLOCKS_PER_FILE_MAX: usize = 1024;
const BLOCKS_MAX: usize = 400_000;

fn files_under(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_file() {
        out.push(path.to_path_buf());
        return;
    }
    let Ok(entries) = std::fs::read_dir(path) else {
        return;
    };
    let mut children: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    children.sort();
    for child in children {
        if child.is_symlink() {
            continue;
        }
        files_under(&child, out);
    }
}

/// LZO1X-1 (the paper's codec and the FTL's default) ratio of a block, at most 1.
fn lzo_ratio(codec: &mut Lzo1x1, out: &mut Vec<u8>, block: &[u8]) -> f64 {
    let len = codec.compress(block, out);
    (len as f64 / block.len() as f64).min(1.0)
}

struct Sample {
    bin: usize,
    ratio: f64,
    entropy_error: f64,
}

/// Host time of predicting vs compressing the same blocks (the paper reports ≈ 1.8% on
/// its controller; only the ratio is comparable).
fn cost_fraction(paths: &[PathBuf]) -> f64 {
    let mut files = Vec::new();
    for p in paths {
        files_under(p, &mut files);
    }
    let mut blocks: Vec<Vec<u8>> = Vec::new();
    for file in files.iter().take(2_000) {
        if let Ok(bytes) = std::fs::read(file) {
            blocks.extend(bytes.chunks_exact(BLOCK).take(4).map(|b| b.to_vec()));
        }
    }
    let started = std::time::Instant::now();
    let mut sink = 0u64;
    for b in &blocks {
        sink += flashstack_ftl::predictor::predict_permille(b);
    }
    let predict = started.elapsed().as_secs_f64();
    let mut codec = Lzo1x1::new();
    let mut out = Vec::new();
    let started = std::time::Instant::now();
    for b in &blocks {
        sink += codec.compress(b, &mut out) as u64;
    }
    let compress = started.elapsed().as_secs_f64();
    std::hint::black_box(sink);
    predict / compress
}

fn samples(paths: &[PathBuf]) -> Vec<Sample> {
    let mut files = Vec::new();
    for p in paths {
        files_under(p, &mut files);
    }
    let mut out = Vec::new();
    let mut codec = Lzo1x1::new();
    let mut compressed = Vec::new();
    for file in files {
        let Ok(bytes) = std::fs::read(&file) else {
            continue;
        };
        let blocks = bytes.len() / BLOCK;
        if blocks == 0 {
            continue;
        }
        let step = blocks.div_ceil(BLOCKS_PER_FILE_MAX);
        for b in (0..blocks).step_by(step) {
            let block = &bytes[b * BLOCK..(b + 1) * BLOCK];
            let sampled = sampled_entropy_bits(block);
            let full = full_entropy_bits(block);
            out.push(Sample {
                bin: decibits_of(sampled),
                ratio: lzo_ratio(&mut codec, &mut compressed, block),
                entropy_error: if full > 0.0 {
                    (sampled - full).abs() / full
                } else {
                    0.0
                },
            });
            if out.len() >= BLOCKS_MAX {
                return out;
            }
        }
    }
    out
}

/// Mean per bin, interpolated where empty, then made non-decreasing.
fn fit(samples: &[Sample]) -> ([f64; 81], [usize; 81]) {
    let mut sum = [0.0f64; 81];
    let mut count = [0usize; 81];
    for s in samples {
        sum[s.bin] += s.ratio;
        count[s.bin] += 1;
    }
    let mut table = [f64::NAN; 81];
    for i in 0..81 {
        if count[i] > 0 {
            table[i] = sum[i] / count[i] as f64;
        }
    }
    interpolate(&mut table);
    let weights: Vec<f64> = count.iter().map(|&c| c.max(1) as f64).collect();
    isotonic(&mut table, &weights);
    (table, count)
}

fn interpolate(table: &mut [f64; 81]) {
    let known: Vec<usize> = (0..81).filter(|&i| !table[i].is_nan()).collect();
    assert!(!known.is_empty(), "no samples");
    for i in 0..81 {
        if !table[i].is_nan() {
            continue;
        }
        let below = known.iter().rev().find(|&&k| k < i);
        let above = known.iter().find(|&&k| k > i);
        table[i] = match (below, above) {
            (Some(&b), Some(&a)) => {
                let t = (i - b) as f64 / (a - b) as f64;
                table[b] + t * (table[a] - table[b])
            }
            (Some(&b), None) => table[b].max(1.0_f64.min(table[b])),
            (None, Some(&a)) => table[a],
            (None, None) => unreachable!(),
        };
    }
}

/// Pool-adjacent-violators: the closest non-decreasing sequence (weighted).
fn isotonic(values: &mut [f64; 81], weights: &[f64]) {
    let mut blocks: Vec<(f64, f64, usize)> = Vec::new(); // (mean, weight, length)
    for i in 0..81 {
        blocks.push((values[i], weights[i], 1));
        while blocks.len() >= 2 && blocks[blocks.len() - 2].0 > blocks[blocks.len() - 1].0 {
            let (m2, w2, l2) = blocks.pop().unwrap();
            let (m1, w1, l1) = blocks.pop().unwrap();
            blocks.push(((m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2, l1 + l2));
        }
    }
    let mut i = 0;
    for (mean, _, len) in blocks {
        for v in values.iter_mut().skip(i).take(len) {
            *v = mean;
        }
        i += len;
    }
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut out_path = None;
    if let Some(i) = args.iter().position(|a| a == "--out") {
        out_path = args.get(i + 1).cloned();
        args.drain(i..=(i + 1).min(args.len() - 1));
    }
    let paths: Vec<PathBuf> = args.iter().map(PathBuf::from).collect();
    if paths.is_empty() {
        eprintln!("usage: fit_predictor [--out FILE] PATH...");
        std::process::exit(2);
    }
    let samples = samples(&paths);
    let (table, count) = fit(&samples);
    let permille: Vec<u16> = table
        .iter()
        .map(|&r| (r * 1000.0).round().min(1000.0) as u16)
        .collect();
    let mae: f64 = samples
        .iter()
        .map(|s| (permille[s.bin] as f64 / 1000.0 - s.ratio).abs())
        .sum::<f64>()
        / samples.len() as f64;
    let entropy_error = samples.iter().map(|s| s.entropy_error).sum::<f64>() / samples.len() as f64;
    println!("blocks: {}", samples.len());
    println!(
        "mean relative error of sampled vs full entropy: {:.2}%",
        entropy_error * 100.0
    );
    println!("mean absolute error of predicted vs actual ratio: {mae:.3}");
    println!(
        "prediction time / compression time (host, LZO1X-1): {:.1}%",
        cost_fraction(&paths) * 100.0
    );
    let text = render(&permille, &count, samples.len(), &paths, entropy_error, mae);
    match out_path {
        Some(p) => std::fs::write(&p, text).expect("write the table"),
        None => print!("{text}"),
    }
}

fn render(
    permille: &[u16],
    count: &[usize; 81],
    blocks: usize,
    paths: &[PathBuf],
    entropy_error: f64,
    mae: f64,
) -> String {
    let mut s = String::new();
    s.push_str("//! Entropy → compression ratio (permille), 0.1-bit steps from 0.0 to 8.0 bits.\n");
    s.push_str("//! Written by `cargo run --release -p flashstack-ftl --example fit_predictor`;\n");
    s.push_str("//! do not edit by hand. Codec: LZO1X-1 (flashstack-codec).\n");
    s.push_str(&format!("//! Fitted on {blocks} blocks of 4 KiB from:\n"));
    for p in paths {
        s.push_str(&format!("//!   {}\n", p.display()));
    }
    s.push_str(&format!(
        "//! Mean relative entropy error of the 10% sample: {:.2}%. Mean absolute ratio error: {:.3}.\n",
        entropy_error * 100.0,
        mae
    ));
    s.push_str("//! Blocks per bin: ");
    s.push_str(
        &count
            .iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(" "),
    );
    s.push_str("\n\n#[rustfmt::skip]\npub const RATIO_PERMILLE_BY_DECIBIT: [u16; 81] = [\n");
    for row in permille.chunks(9) {
        s.push_str("    ");
        s.push_str(
            &row.iter()
                .map(|v| format!("{v:4},"))
                .collect::<Vec<_>>()
                .join(" "),
        );
        s.push('\n');
    }
    s.push_str("];\n");
    s
}
