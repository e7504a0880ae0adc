//! Pages that a DEFLATE codec (zlib) compresses by a requested ratio, for workloads that
//! state their compressibility as a number (COCO's filebench table: "compression ratio
//! 2–3") rather than as a kind of content.
//!
//! A page is a run of pseudo-random bytes (incompressible: DEFLATE stores them as
//! literals, 8 bits and a little) followed by a repeated phrase (a few bits per 258-byte
//! match). zlib's output is then about the random run plus a small fixed cost, so the run
//! is `page / ratio − FIXED_COST_BYTES`. `crates/codec/tests/ratio_content.rs` checks the
//! result against the real codec for ratios 1–4.
//!
//! Ratios are original ÷ compressed (2.0 = half the size), as the seed states them.

/// zlib's output beyond the random run: header, Huffman tables, the matches of the
/// repeated tail, the checksum (measured at level 6 on 4 KiB pages: 30–60 bytes).
const FIXED_COST_BYTES: usize = 40;

/// The repeated tail's phrase (any fixed bytes do).
const PHRASE: &[u8; 32] = b"flashstack compressible phrase. ";

/// Fills `out` (one page, typically 4 KiB) with bytes zlib compresses about `ratio`:1;
/// the random run is drawn from `seed`. Ratios at or below 1 give an incompressible page.
pub fn fill_for_ratio(seed: u64, ratio: f64, out: &mut [u8]) {
    let random_len = random_run_bytes(out.len(), ratio);
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    for chunk in out[..random_len].chunks_mut(8) {
        // splitmix64: a fresh 8 bytes per step.
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
    }
    for (i, b) in out[random_len..].iter_mut().enumerate() {
        *b = PHRASE[i % PHRASE.len()];
    }
}

/// Bytes of the random run in a page of `page_bytes` for `ratio`.
pub fn random_run_bytes(page_bytes: usize, ratio: f64) -> usize {
    if !(ratio.is_finite() && ratio > 1.0) {
        return page_bytes;
    }
    let wanted = (page_bytes as f64 / ratio) as usize;
    wanted.saturating_sub(FIXED_COST_BYTES).min(page_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_shaped() {
        let mut a = vec![0u8; 4096];
        let mut b = vec![0u8; 4096];
        fill_for_ratio(7, 2.0, &mut a);
        fill_for_ratio(7, 2.0, &mut b);
        assert_eq!(a, b);
        fill_for_ratio(8, 2.0, &mut b);
        assert_ne!(a, b);
        assert_eq!(random_run_bytes(4096, 2.0), 2048 - FIXED_COST_BYTES);
        assert_eq!(random_run_bytes(4096, 0.5), 4096);
        assert_eq!(random_run_bytes(4096, f64::NAN), 4096);
        assert_eq!(&a[4095], &PHRASE[(4095 - random_run_bytes(4096, 2.0)) % 32]);
    }
}
