//! LDC's compressibility predictor (§5.1): the byte entropy of a 10% sample of the page,
//! computed with integers only, mapped to a compression ratio by a table fitted offline.
//!
//! - Sample: 410 of the 4,096 bytes at fixed pseudo-random offsets (the same for every page,
//!   so the cost is a few hundred loads and no random-number generation on the controller).
//! - Entropy: H = log2(n) − (1/n) Σ c·log2(c) over the sample's byte counts c, with log2
//!   taken from a 1,000-entry table in fixed point (the paper's Log Lookup Table).
//! - Ratio: an 81-entry table indexed by entropy in steps of 0.1 bit (0.0 to 8.0), the
//!   paper's Cr Lookup Table, produced by `cargo run --release -p flashstack-ftl --example
//!   fit_predictor` on real files (see `docs/predictor.md`).

use std::sync::OnceLock;

use crate::predictor_table::RATIO_PERMILLE_BY_DECIBIT;

/// Bytes sampled per 4 KiB page (10%).
pub const SAMPLE_BYTES: usize = 410;
/// Fixed-point scale of logarithms and entropy.
const SCALE: u64 = 1 << 16;

/// log2(c) × SCALE for c in 0..=1000 (entry 0 unused).
fn log_table() -> &'static [u32; 1001] {
    static TABLE: OnceLock<[u32; 1001]> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = [0u32; 1001];
        for (c, entry) in t.iter_mut().enumerate().skip(1) {
            *entry = ((c as f64).log2() * SCALE as f64).round() as u32;
        }
        t
    })
}

/// Offsets of the sampled bytes: a fixed permutation prefix, spread over the whole page.
fn sample_offsets() -> &'static [u16; SAMPLE_BYTES] {
    static OFFSETS: OnceLock<[u16; SAMPLE_BYTES]> = OnceLock::new();
    OFFSETS.get_or_init(|| {
        let mut offsets = [0u16; SAMPLE_BYTES];
        // Odd multiplier modulo 4096 visits every offset once; take the first 410.
        for (i, o) in offsets.iter_mut().enumerate() {
            *o = ((i as u32).wrapping_mul(2_654_435_761) % 4096) as u16;
        }
        offsets.sort_unstable();
        offsets
    })
}

/// Sampled entropy in bits × SCALE, integers only.
pub fn sampled_entropy_fixed(page: &[u8]) -> u64 {
    let mut counts = [0u16; 256];
    for &offset in sample_offsets() {
        counts[page[offset as usize] as usize] += 1;
    }
    entropy_of_counts(&counts, SAMPLE_BYTES as u64)
}

fn entropy_of_counts(counts: &[u16; 256], n: u64) -> u64 {
    let log = log_table();
    let sum: u64 = counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| c as u64 * log[c as usize] as u64)
        .sum();
    (log[n as usize] as u64).saturating_sub(sum / n)
}

/// Exact entropy of the whole page, in bits (floating point; for measuring the predictor).
pub fn full_entropy_bits(page: &[u8]) -> f64 {
    let mut counts = [0u32; 256];
    for &b in page {
        counts[b as usize] += 1;
    }
    let n = page.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = c as f64 / n;
            -p * p.log2()
        })
        .sum()
}

/// The predicted compression ratio of a 4 KiB page, in permille.
pub fn predict_permille(page: &[u8]) -> u64 {
    let entropy = sampled_entropy_fixed(page);
    let decibits = ((entropy * 10 + SCALE / 2) / SCALE).min(80) as usize;
    RATIO_PERMILLE_BY_DECIBIT[decibits] as u64
}

/// The entropy in decibits the table is indexed by (for the fitting tool).
pub fn decibits_of(entropy_bits: f64) -> usize {
    ((entropy_bits * 10.0).round() as usize).min(80)
}

/// Sampled entropy in bits as a float (for reports).
pub fn sampled_entropy_bits(page: &[u8]) -> f64 {
    sampled_entropy_fixed(page) as f64 / SCALE as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entropy_of_extremes() {
        assert_eq!(sampled_entropy_fixed(&[7u8; 4096]), 0);
        let page: Vec<u8> = (0..4096).map(|i| (i % 256) as u8).collect();
        // 410 samples of 256 values can reach at most log2(410) ≈ 8.68 > 8 bits; a uniform
        // page samples close to 8.
        let h = sampled_entropy_bits(&page);
        assert!((7.0..=8.7).contains(&h), "{h}");
        assert!((full_entropy_bits(&page) - 8.0).abs() < 1e-9);
    }

    #[test]
    fn integer_entropy_tracks_the_float_one_on_the_sample() {
        // Two-valued sample: exactly 1 bit.
        let page: Vec<u8> = (0..4096).map(|i| if i % 2 == 0 { 1 } else { 2 }).collect();
        let mut counts = [0u16; 256];
        for &o in sample_offsets() {
            counts[page[o as usize] as usize] += 1;
        }
        let fixed = entropy_of_counts(&counts, SAMPLE_BYTES as u64) as f64 / SCALE as f64;
        let n = SAMPLE_BYTES as f64;
        let exact: f64 = counts
            .iter()
            .filter(|&&c| c > 0)
            .map(|&c| -(c as f64 / n) * (c as f64 / n).log2())
            .sum();
        assert!((fixed - exact).abs() < 0.001, "{fixed} vs {exact}");
    }

    #[test]
    fn offsets_are_distinct_and_in_range() {
        let o = sample_offsets();
        assert!(o.windows(2).all(|w| w[0] < w[1]));
        assert!(*o.last().unwrap() < 4096);
    }

    #[test]
    fn predictions_are_monotone_in_entropy() {
        assert!(RATIO_PERMILLE_BY_DECIBIT.windows(2).all(|w| w[0] <= w[1]));
        assert!(predict_permille(&[0u8; 4096]) < 100);
    }
}
