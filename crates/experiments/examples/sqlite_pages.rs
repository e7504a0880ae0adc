//! The SQLite classes' compressibility, persona pages against synthetic ones:
//! `cargo run --release -p flashstack-experiments --example sqlite_pages [-- build]`.
//! Per class, the LZ4 and LZO1X-1 ratio (compressed bytes / 4096) of 2,000 pages drawn as
//! the content model serves them (LBAs 0.., version 1), as p10/p50/p90 and a histogram in
//! steps of 0.1; LDC's predictor's mean absolute error against the LZO ratio; then how far
//! successive versions of one LBA differ. `build` only builds
//! the corpus (for timing its cost as a whole process).
use std::sync::Arc;

use flashstack_apps::corpus::{sqlite_corpus, CorpusOptions};
use flashstack_codec::{Codec, Lz4, Lzo1x1};
use flashstack_content::{ContentClass, ContentMix, ContentModel, PAGE_SIZE};

const PAGES: u64 = 2_000;

fn main() {
    let corpus = Arc::new(sqlite_corpus(&CorpusOptions::default()).expect("corpus builds"));
    if std::env::args().any(|a| a == "build") {
        println!("{corpus:?}");
        return;
    }
    println!("corpus: {} ({} KiB)", corpus.name(), corpus.bytes() / 1024);
    for class in [
        ContentClass::SqliteTable,
        ContentClass::SqliteIndex,
        ContentClass::SqliteBlob,
    ] {
        println!(
            "{class}: {} chains, {} pages",
            corpus.chains(class),
            corpus.pages(class)
        );
        for (source, real) in [("persona", true), ("synthetic", false)] {
            let mut model = ContentModel::new(1, ContentMix::only(class));
            if real {
                model = model.with_corpus(Arc::clone(&corpus));
            }
            for (codec_name, codec) in [
                ("lz4", &mut Lz4::default() as &mut dyn Codec),
                ("lzo", &mut Lzo1x1::default()),
            ] {
                let (mut page, mut out) = (vec![0u8; PAGE_SIZE], Vec::new());
                let mut ratios: Vec<f64> = (0..PAGES)
                    .map(|lba| {
                        model.fill(lba, 1, &mut page);
                        codec.compress(&page, &mut out) as f64 / PAGE_SIZE as f64
                    })
                    .collect();
                ratios.sort_by(f64::total_cmp);
                let q = |p: usize| ratios[(ratios.len() - 1) * p / 100];
                let mean = ratios.iter().sum::<f64>() / ratios.len() as f64;
                let mut bins = [0usize; 11];
                for r in &ratios {
                    bins[((r * 10.0) as usize).min(10)] += 1;
                }
                let hist: Vec<String> = bins
                    .iter()
                    .map(|&n| format!("{:>3.0}", n as f64 * 100.0 / ratios.len() as f64))
                    .collect();
                println!(
                    "  {source:<9} {codec_name}  mean {mean:.3}  p10 {:.3}  p50 {:.3}  p90 {:.3}  \
                     % per 0.1: {}",
                    q(10),
                    q(50),
                    q(90),
                    hist.join(" ")
                );
            }
            // The FTL's compressibility predictor (fixed sample) against LZO1X-1.
            let (mut page, mut out, mut lzo) =
                (vec![0u8; PAGE_SIZE], Vec::new(), Lzo1x1::default());
            let mut error = 0.0;
            for lba in 0..PAGES {
                model.fill(lba, 1, &mut page);
                let actual = lzo.compress(&page, &mut out) as f64 / PAGE_SIZE as f64;
                let predicted = flashstack_ftl::predictor::predict_permille(&page) as f64 / 1000.0;
                error += (predicted - actual.min(1.0)).abs();
            }
            println!(
                "  {source:<9} predictor: mean absolute error {:.3} against the LZO ratio",
                error / PAGES as f64
            );
            // Bytes that differ between versions 1 and 2 of an LBA.
            let (mut a, mut b) = (vec![0u8; PAGE_SIZE], vec![0u8; PAGE_SIZE]);
            let mut differ = 0usize;
            for lba in 0..PAGES {
                model.fill(lba, 1, &mut a);
                model.fill(lba, 2, &mut b);
                differ += a.iter().zip(&b).filter(|(x, y)| x != y).count();
            }
            println!(
                "  {source:<9} versions 1 -> 2 differ in {:.1}% of their bytes",
                differ as f64 * 100.0 / (PAGES as f64 * PAGE_SIZE as f64)
            );
        }
    }
}
