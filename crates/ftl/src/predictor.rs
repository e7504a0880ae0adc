//! LDC's compressibility predictor (§5.1): the byte entropy of a 10% sample of the page,
//! computed with integers only, mapped to a compression ratio by a table fitted offline.
//!
//! - Sample: 410 of the 4,096 bytes ([`PredictorSample`]): by default at fixed
//!   pseudo-random offsets (the same for every page, so the cost is a few hundred loads and
//!   no random-number generation on the controller), or at offsets drawn afresh for each
//!   logical page (`per-page`, the paper's "randomly sampling 10%" read literally).
//! - Entropy: H = log2(n) − (1/n) Σ c·log2(c) over the sample's byte counts c, with log2
//!   taken from a 1,000-entry table in fixed point (the paper's Log Lookup Table).
//! - Ratio: an 81-entry table indexed by entropy in steps of 0.1 bit (0.0 to 8.0), the
//!   paper's Cr Lookup Table, produced by `cargo run --release -p flashstack-ftl --example
//!   fit_predictor` on real files (see `docs/predictor.md`).

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

pub use crate::predictor_table::RATIO_PERMILLE_BY_DECIBIT;

/// Which 10% of a page the predictor reads (`ftl.compression.predictor_sample`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PredictorSample {
    /// The same 410 offsets, spread over the page, for every page.
    #[default]
    Fixed,
    /// 410 distinct offsets drawn for each logical page from a generator keyed by its
    /// LPN: a page rewritten at the same address is sampled at the same offsets, so a
    /// run does not depend on the order of unrelated writes.
    PerPage,
}

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

/// Byte counts of the sample `mode` takes of a page (`key`: the page's LPN).
pub fn sample_counts(page: &[u8], mode: PredictorSample, key: u64) -> [u16; 256] {
    let mut counts = [0u16; 256];
    match mode {
        PredictorSample::Fixed => {
            for &offset in sample_offsets() {
                counts[page[offset as usize] as usize] += 1;
            }
        }
        PredictorSample::PerPage => {
            for_each_random_offset(key, |offset| counts[page[offset] as usize] += 1);
        }
    }
    counts
}

/// Calls `visit` with `SAMPLE_BYTES` distinct offsets below 4,096 drawn by rejection
/// from a SplitMix64 stream seeded with `key` (five 12-bit draws per 64-bit word; about
/// 5% of draws repeat an offset and are redrawn).
fn for_each_random_offset(key: u64, mut visit: impl FnMut(usize)) {
    let mut taken = [0u64; 64];
    let mut state = key ^ 0x5DEE_CE66_D1CE_4E5B;
    let mut drawn = 0;
    while drawn < SAMPLE_BYTES {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        for draw in 0..5 {
            let offset = ((z >> (12 * draw)) & 0xFFF) as usize;
            let (word, bit) = (offset / 64, offset % 64);
            if drawn < SAMPLE_BYTES && taken[word] & (1 << bit) == 0 {
                taken[word] |= 1 << bit;
                visit(offset);
                drawn += 1;
            }
        }
    }
}

/// Sampled entropy in bits × SCALE, integers only (fixed offsets).
pub fn sampled_entropy_fixed(page: &[u8]) -> u64 {
    sampled_entropy_fixed_with(page, PredictorSample::Fixed, 0)
}

/// Sampled entropy in bits × SCALE, integers only, with the sample `mode` takes.
pub fn sampled_entropy_fixed_with(page: &[u8], mode: PredictorSample, key: u64) -> u64 {
    entropy_of_counts(&sample_counts(page, mode, key), SAMPLE_BYTES as u64)
}

/// Entropy of the same sample in floating point: what the integer arithmetic
/// approximates (the paper measured its integer error at under 1.7%).
pub fn sampled_entropy_exact_bits(page: &[u8], mode: PredictorSample, key: u64) -> f64 {
    let n = SAMPLE_BYTES as f64;
    sample_counts(page, mode, key)
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| -(c as f64 / n) * (c as f64 / n).log2())
        .sum()
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

/// The predicted compression ratio of a 4 KiB page, in permille (fixed offsets).
pub fn predict_permille(page: &[u8]) -> u64 {
    predict_permille_with(page, PredictorSample::Fixed, 0)
}

/// The predicted compression ratio of a 4 KiB page at LPN `key`, in permille.
pub fn predict_permille_with(page: &[u8], mode: PredictorSample, key: u64) -> u64 {
    let entropy = sampled_entropy_fixed_with(page, mode, key);
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

/// Sampled entropy in bits (integer arithmetic) with the sample `mode` takes.
pub fn sampled_entropy_bits_with(page: &[u8], mode: PredictorSample, key: u64) -> f64 {
    sampled_entropy_fixed_with(page, mode, key) as f64 / SCALE as f64
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
    fn per_page_samples_are_distinct_offsets_that_differ_between_pages() {
        let mut seen = Vec::new();
        for_each_random_offset(42, |o| seen.push(o));
        assert_eq!(seen.len(), SAMPLE_BYTES);
        let mut sorted = seen.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), SAMPLE_BYTES, "offsets repeat");
        assert!(sorted.iter().all(|&o| o < 4096));
        // Spread over the page: every quarter gets a share near a quarter of the sample.
        for quarter in 0..4 {
            let n = sorted.iter().filter(|&&o| o / 1024 == quarter).count();
            assert!((60..=150).contains(&n), "quarter {quarter}: {n}");
        }
        let mut other = Vec::new();
        for_each_random_offset(43, |o| other.push(o));
        assert_ne!(seen, other, "two LPNs sampled at the same offsets");
        let mut again = Vec::new();
        for_each_random_offset(42, |o| again.push(o));
        assert_eq!(seen, again, "not deterministic");
    }

    #[test]
    fn per_page_sampling_sees_what_fixed_offsets_miss() {
        // A page whose bytes vary only where the fixed sample never looks: the fixed
        // sample sees a constant page, per-page samples (almost always) do not.
        let fixed: std::collections::BTreeSet<u16> = sample_offsets().iter().copied().collect();
        let page: Vec<u8> = (0..4096u16)
            .map(|i| {
                if fixed.contains(&i) {
                    0
                } else {
                    (i % 251) as u8
                }
            })
            .collect();
        assert_eq!(sampled_entropy_fixed(&page), 0);
        let h = sampled_entropy_bits_with(&page, PredictorSample::PerPage, 7);
        assert!(h > 6.0, "{h}");
    }

    #[test]
    fn predictions_are_monotone_in_entropy() {
        assert!(RATIO_PERMILLE_BY_DECIBIT.windows(2).all(|w| w[0] <= w[1]));
        assert!(predict_permille(&[0u8; 4096]) < 100);
    }
}
