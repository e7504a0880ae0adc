//! `flashstack_content::ratio` pages compress by the ratio they were asked for, under
//! the codec the CSD uses (zlib level 6): within 10 % for ratios 1–4.

use flashstack_codec::CodecKind;
use flashstack_content::ratio::fill_for_ratio;

#[test]
fn pages_hit_the_requested_zlib_ratio() {
    let mut zlib = CodecKind::Zlib { level: 6 }.build().unwrap();
    let mut page = vec![0u8; 4096];
    let mut out = Vec::new();
    for tenths in 10..=40 {
        let wanted = tenths as f64 / 10.0;
        let mut sum = 0.0;
        for seed in 0..20 {
            fill_for_ratio(seed, wanted, &mut page);
            let len = zlib.compress(&page, &mut out);
            sum += 4096.0 / len.min(4096) as f64;
        }
        let got = sum / 20.0;
        assert!(
            (got - wanted).abs() <= wanted * 0.10,
            "asked {wanted}, got {got:.3}"
        );
    }
}
