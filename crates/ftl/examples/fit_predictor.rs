//! Fits LDC's entropy → compression-ratio table on real files and writes
//! `crates/ftl/src/predictor_table.rs`; measures the predictor out of sample and draws the
//! paper's Fig. 5 (entropy against 1/Cr).
//!
//! ```sh
//! python3 scripts/predictor-corpus.py /tmp/corpus       # real SQLite databases
//! cargo run --release -p flashstack-ftl --example fit_predictor -- \
//!     --out crates/ftl/src/predictor_table.rs \
//!     /tmp/corpus /usr/lib/x86_64-linux-gnu /usr/lib/python3.11 /usr/share/icons /usr/share/doc
//! scripts/predictor-phone-corpus.sh /tmp/phone-corpus    # a flashstack phone's files
//! cargo run --release -p flashstack-ftl --example fit_predictor -- \
//!     --evaluate --holdout --fig5 docs/predictor-fig5.svg /tmp/phone-corpus
//! ```
//!
//! Every file under the given paths is cut into 4 KiB blocks (at most 1,024 per file, evenly
//! spaced, so no single large file dominates). For each block the predictor's sampled
//! entropy picks a 0.1-bit bin and the codec gives the actual ratio. A bin's value is the
//! mean ratio of its blocks; empty bins are interpolated, and the table is made monotone
//! (pool-adjacent-violators) because compressibility only worsens as entropy grows.
//!
//! Options: `--sample fixed|per-page` (which 10% of a block is read; per-page keys each
//! block's draw by its index in the corpus), `--evaluate` (report the shipped table's
//! errors on the corpus instead of writing a table), `--holdout` (fit on the files at even
//! positions of the sorted list, report on the odd ones), `--fig5 FILE` (the plot, SVG).

use std::path::{Path, PathBuf};

use flashstack_codec::{Codec, Lzo1x1};
use flashstack_ftl::predictor::{
    decibits_of, full_entropy_bits, sampled_entropy_bits_with, sampled_entropy_exact_bits,
    PredictorSample, RATIO_PERMILLE_BY_DECIBIT,
};

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

/// One 4 KiB block of the corpus and what the predictor makes of it.
struct Sample {
    /// Position of its file in the sorted list (the holdout split).
    file: usize,
    /// Entropy bin of the sampled entropy (integer arithmetic): the table's index.
    bin: usize,
    ratio: f64,
    /// Entropy of the whole block, of the sample in floating point, of the sample in the
    /// predictor's integer arithmetic (bits).
    full: f64,
    sampled_exact: f64,
    sampled_int: f64,
}

/// Host time of predicting vs compressing the same blocks (the paper reports ≈ 1.8% on
/// its controller; only the ratio is comparable).
fn cost_fraction(files: &[PathBuf], mode: PredictorSample) -> f64 {
    let mut blocks: Vec<Vec<u8>> = Vec::new();
    for file in files.iter().take(2_000) {
        if let Ok(bytes) = std::fs::read(file) {
            blocks.extend(bytes.chunks_exact(BLOCK).take(4).map(|b| b.to_vec()));
        }
    }
    let started = std::time::Instant::now();
    let mut sink = 0u64;
    for (key, b) in blocks.iter().enumerate() {
        sink += flashstack_ftl::predictor::predict_permille_with(b, mode, key as u64);
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

fn samples(files: &[PathBuf], mode: PredictorSample) -> Vec<Sample> {
    let mut out = Vec::new();
    let mut codec = Lzo1x1::new();
    let mut compressed = Vec::new();
    for (file_index, file) in files.iter().enumerate() {
        let Ok(bytes) = std::fs::read(file) else {
            continue;
        };
        let blocks = bytes.len() / BLOCK;
        if blocks == 0 {
            continue;
        }
        let step = blocks.div_ceil(BLOCKS_PER_FILE_MAX);
        for b in (0..blocks).step_by(step) {
            let block = &bytes[b * BLOCK..(b + 1) * BLOCK];
            let key = out.len() as u64;
            let sampled_int = sampled_entropy_bits_with(block, mode, key);
            out.push(Sample {
                file: file_index,
                bin: decibits_of(sampled_int),
                ratio: lzo_ratio(&mut codec, &mut compressed, block),
                full: full_entropy_bits(block),
                sampled_exact: sampled_entropy_exact_bits(block, mode, key),
                sampled_int,
            });
            if out.len() >= BLOCKS_MAX {
                return out;
            }
        }
    }
    out
}

/// Mean per bin, interpolated where empty, then made non-decreasing.
fn fit(samples: &[&Sample]) -> ([f64; 81], [usize; 81]) {
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

fn permille_of(table: &[f64; 81]) -> Vec<u16> {
    table
        .iter()
        .map(|&r| (r * 1000.0).round().min(1000.0) as u16)
        .collect()
}

/// The predictor's errors on a set of blocks for a given table.
struct Errors {
    blocks: usize,
    /// Mean relative error of the sample's entropy (floating point) against the block's.
    sampling: f64,
    /// Mean relative error of the integer arithmetic against the same sample in floating
    /// point (the paper: < 1.7%).
    integer: f64,
    /// Both together: the predictor's entropy against the block's (the paper: < 5%).
    overall: f64,
    /// Mean absolute error of the predicted ratio.
    ratio_mae: f64,
    /// Share of blocks whose prediction falls on the other side of 0.95 (zFTL's and SC's
    /// threshold of "worth compressing") from the actual ratio.
    wrong_side: f64,
}

fn relative(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        (a - b).abs() / b
    } else {
        0.0
    }
}

fn errors(samples: &[&Sample], permille: &[u16]) -> Errors {
    let n = samples.len().max(1) as f64;
    let mean = |f: &dyn Fn(&Sample) -> f64| samples.iter().map(|s| f(s)).sum::<f64>() / n;
    let predicted = |s: &Sample| permille[s.bin] as f64 / 1000.0;
    Errors {
        blocks: samples.len(),
        sampling: mean(&|s| relative(s.sampled_exact, s.full)),
        integer: mean(&|s| relative(s.sampled_int, s.sampled_exact)),
        overall: mean(&|s| relative(s.sampled_int, s.full)),
        ratio_mae: mean(&|s| (predicted(s) - s.ratio).abs()),
        wrong_side: mean(&|s| ((predicted(s) <= 0.95) != (s.ratio <= 0.95)) as u8 as f64),
    }
}

fn print_errors(label: &str, e: &Errors) {
    println!(
        "{label}: {} blocks; entropy error: sampling {:.2}%, integer math {:.4}%, overall {:.2}%; \
         ratio MAE {:.3}; wrong side of 0.95: {:.1}%",
        e.blocks,
        e.sampling * 100.0,
        e.integer * 100.0,
        e.overall * 100.0,
        e.ratio_mae,
        e.wrong_side * 100.0
    );
}

struct Options {
    out: Option<String>,
    fig5: Option<String>,
    mode: PredictorSample,
    evaluate: bool,
    holdout: bool,
    paths: Vec<PathBuf>,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        out: None,
        fig5: None,
        mode: PredictorSample::Fixed,
        evaluate: false,
        holdout: false,
        paths: Vec::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--out" => o.out = Some(value()?),
            "--fig5" => o.fig5 = Some(value()?),
            "--sample" => {
                o.mode = match value()?.as_str() {
                    "fixed" => PredictorSample::Fixed,
                    "per-page" => PredictorSample::PerPage,
                    other => return Err(format!("--sample: unknown '{other}' (fixed, per-page)")),
                }
            }
            "--evaluate" => o.evaluate = true,
            "--holdout" => o.holdout = true,
            flag if flag.starts_with("--") => return Err(format!("unknown option {flag}")),
            path => o.paths.push(PathBuf::from(path)),
        }
    }
    if o.paths.is_empty() {
        return Err("no corpus paths".into());
    }
    Ok(o)
}

fn main() {
    let o = options().unwrap_or_else(|e| {
        eprintln!("fit_predictor: {e}\nusage: fit_predictor [--out FILE] [--fig5 FILE.svg] [--sample fixed|per-page] [--evaluate] [--holdout] PATH...");
        std::process::exit(2);
    });
    let mut files = Vec::new();
    for p in &o.paths {
        files_under(p, &mut files);
    }
    let samples = samples(&files, o.mode);
    let all: Vec<&Sample> = samples.iter().collect();
    let shipped: Vec<u16> = RATIO_PERMILLE_BY_DECIBIT.to_vec();
    println!(
        "corpus: {} files, {} blocks, sample {:?}",
        files.len(),
        samples.len(),
        o.mode
    );
    if o.evaluate {
        print_errors("shipped table, whole corpus", &errors(&all, &shipped));
    }
    if o.holdout {
        let (fit_half, test_half): (Vec<&Sample>, Vec<&Sample>) =
            all.iter().partition(|s| s.file % 2 == 0);
        let (table, _) = fit(&fit_half);
        let permille = permille_of(&table);
        print_errors(
            "refit on even files, in sample",
            &errors(&fit_half, &permille),
        );
        print_errors(
            "refit on even files, odd files (out of sample)",
            &errors(&test_half, &permille),
        );
        print_errors("shipped table, odd files", &errors(&test_half, &shipped));
    }
    println!(
        "prediction time / compression time (host, LZO1X-1): {:.1}%",
        cost_fraction(&files, o.mode) * 100.0
    );
    if let Some(path) = &o.fig5 {
        let svg = fig5::draw(&all, &shipped).expect("draw Fig. 5");
        std::fs::write(path, svg).expect("write the plot");
        println!("Fig. 5: {path}");
    }
    if o.evaluate {
        return;
    }
    let (table, count) = fit(&all);
    let permille = permille_of(&table);
    let e = errors(&all, &permille);
    print_errors("fitted table, whole corpus (in sample)", &e);
    let text = render(
        &permille,
        &count,
        samples.len(),
        &o.paths,
        e.overall,
        e.ratio_mae,
    );
    match &o.out {
        Some(p) => std::fs::write(p, text).expect("write the table"),
        None => print!("{text}"),
    }
}

/// Fig. 5 of the paper: each block's entropy against the inverse of its compression
/// ratio, with the table's prediction as a line.
mod fig5 {
    use plotters::prelude::*;

    use super::Sample;

    /// Points drawn at most (evenly spaced through the corpus) to keep the file small.
    const POINTS_MAX: usize = 2_000;
    /// 1/Cr axis top: blocks that compress better are drawn at the top edge.
    const INVERSE_MAX: f64 = 20.0;

    pub fn draw(samples: &[&Sample], permille: &[u16]) -> Result<String, String> {
        let err = |e: &dyn std::fmt::Display| e.to_string();
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (720, 480)).into_drawing_area();
            root.fill(&WHITE).map_err(|e| err(&e))?;
            let mut chart = ChartBuilder::on(&root)
                .caption(
                    format!(
                        "Entropy and 1/Cr (LZO1X-1) of {} blocks of 4 KiB",
                        samples.len()
                    ),
                    ("sans-serif", 16),
                )
                .margin(10)
                .x_label_area_size(36)
                .y_label_area_size(44)
                .build_cartesian_2d(0f64..8f64, 1f64..INVERSE_MAX)
                .map_err(|e| err(&e))?;
            chart
                .configure_mesh()
                .x_desc("entropy of the block (bits per byte)")
                .y_desc("1 / compression ratio")
                .light_line_style(WHITE)
                .draw()
                .map_err(|e| err(&e))?;
            let step = samples.len().div_ceil(POINTS_MAX).max(1);
            let dot = BLUE.mix(0.25).filled();
            let points = samples.iter().step_by(step).map(|s| {
                let inverse = (1.0 / s.ratio.max(1e-3)).min(INVERSE_MAX);
                Circle::new((s.full, inverse), 2, dot)
            });
            chart.draw_series(points).map_err(|e| err(&e))?;
            let line = permille.iter().enumerate().map(|(decibits, &p)| {
                let inverse = (1000.0 / (p.max(1) as f64)).min(INVERSE_MAX);
                (decibits as f64 / 10.0, inverse)
            });
            chart
                .draw_series(LineSeries::new(line, RED.stroke_width(2)))
                .map_err(|e| err(&e))?
                .label("the predictor's table (sampled entropy → 1/Cr)")
                .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], RED.stroke_width(2)));
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .draw()
                .map_err(|e| err(&e))?;
            root.present().map_err(|e| err(&e))?;
        }
        Ok(svg)
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
