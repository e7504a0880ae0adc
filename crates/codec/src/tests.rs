//! Unit tests: configuration strings, round trips, known LZO1X streams from the reference
//! library, error offsets, determinism, and a no-panic property for every decoder.

use proptest::prelude::*;

use crate::lzo1x::{self, END_MARKER};
use crate::{Codec, CodecError, CodecKind, Lzo1x1, ParseCodecError};

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn all_kinds() -> Vec<CodecKind> {
    [
        "none", "lz4", "lzo1x-1", "zstd:1", "zstd:19", "zlib:1", "zlib:9",
    ]
    .iter()
    .map(|s| s.parse().unwrap())
    .collect()
}

/// Text-like bytes with repeats at every distance class the encoder uses.
fn sample(len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len);
    let mut x: u32 = 12345;
    while v.len() < len {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        let word =
            ["page ", "block ", "erase ", "flash ", "the ", "of ", "\n"][(x >> 16) as usize % 7];
        v.extend_from_slice(word.as_bytes());
        if (x >> 8).is_multiple_of(13) {
            v.push((x >> 3) as u8);
        }
    }
    v.truncate(len);
    v
}

#[test]
fn kinds_parse_and_print() {
    assert_eq!("lz4".parse::<CodecKind>().unwrap(), CodecKind::Lz4);
    assert_eq!("LZO1X-1".parse::<CodecKind>().unwrap(), CodecKind::Lzo1x1);
    assert_eq!(
        "zstd".parse::<CodecKind>().unwrap(),
        CodecKind::Zstd { level: 3 }
    );
    assert_eq!(
        "zstd:19".parse::<CodecKind>().unwrap(),
        CodecKind::Zstd { level: 19 }
    );
    assert_eq!(
        "zlib".parse::<CodecKind>().unwrap(),
        CodecKind::Zlib { level: 6 }
    );
    assert_eq!(
        " zlib : 9 ".parse::<CodecKind>().unwrap(),
        CodecKind::Zlib { level: 9 }
    );
    assert_eq!("none".parse::<CodecKind>().unwrap(), CodecKind::None);
    for kind in all_kinds() {
        assert_eq!(kind.to_string().parse::<CodecKind>().unwrap(), kind);
    }
    assert_eq!(CodecKind::default(), CodecKind::Lzo1x1);
}

#[test]
fn bad_kinds_are_typed_errors() {
    assert!(matches!(
        "lzma".parse::<CodecKind>(),
        Err(ParseCodecError::Unknown(_))
    ));
    assert!(matches!(
        "lz4:3".parse::<CodecKind>(),
        Err(ParseCodecError::LevelNotAccepted(_))
    ));
    assert!(matches!(
        "zstd:23".parse::<CodecKind>(),
        Err(ParseCodecError::BadLevel {
            codec: "zstd",
            max: 22,
            ..
        })
    ));
    assert!(matches!(
        "zlib:x".parse::<CodecKind>(),
        Err(ParseCodecError::BadLevel { .. })
    ));
    assert!(matches!(
        "zlib:-1".parse::<CodecKind>(),
        Err(ParseCodecError::BadLevel { .. })
    ));
    let msg = "zstd:0".parse::<CodecKind>().unwrap_err().to_string();
    assert!(msg.contains("zstd") && msg.contains("1..=22"), "{msg}");
}

#[test]
fn kinds_round_trip_through_serde() {
    let kind = CodecKind::Zstd { level: 7 };
    let json = serde_json::to_string(&kind).unwrap();
    assert_eq!(json, "\"zstd:7\"");
    assert_eq!(serde_json::from_str::<CodecKind>(&json).unwrap(), kind);
    assert!(serde_json::from_str::<CodecKind>("\"lzo2\"").is_err());
}

#[test]
fn every_codec_round_trips_and_compresses_text() {
    for kind in all_kinds() {
        let mut codec = kind.build().unwrap();
        let mut packed = Vec::new();
        let mut unpacked = Vec::new();
        for len in [0, 1, 3, 17, 100, 4096, 70_000] {
            let input = sample(len);
            let n = codec.compress(&input, &mut packed);
            assert_eq!(n, packed.len());
            codec
                .decompress(&packed, &mut unpacked, len)
                .unwrap_or_else(|e| panic!("{kind} {len}: {e}"));
            assert_eq!(unpacked, input, "{kind} len {len}");
            if len >= 4096 && kind != CodecKind::None {
                assert!(n < len / 2, "{kind} compressed {len} text bytes to {n}");
            }
        }
    }
}

#[test]
fn wrong_expected_length_is_an_error_for_every_codec() {
    let input = sample(4096);
    for kind in all_kinds() {
        let mut codec = kind.build().unwrap();
        let mut packed = Vec::new();
        let mut out = Vec::new();
        codec.compress(&input, &mut packed);
        assert!(
            codec.decompress(&packed, &mut out, 4095).is_err(),
            "{kind} short"
        );
        assert!(
            codec.decompress(&packed, &mut out, 4097).is_err(),
            "{kind} long"
        );
        codec.decompress(&packed, &mut out, 4096).unwrap();
        assert_eq!(out, input);
    }
}

#[test]
fn lzo_decodes_streams_of_the_reference_library() {
    // lzo.compress(data, 1, False) from python3-lzo (liblzo2 2.10), checked in.
    let cases: [(&[u8], &str); 4] = [
        (b"", "110000"),
        (b"a", "1261110000"),
        (b"hello hello hello hello world", "2e68656c6c6f2068656c6c6f2068656c6c6f2068656c6c6f20776f726c64110000"),
        (
            b"abcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcdabcd",
            "05616263646162636420631c0000026162636461626364616263646162636461626364110000",
        ),
    ];
    let mut out = Vec::new();
    for (plain, stream) in cases {
        lzo1x::decompress_into(&hex(stream), &mut out, plain.len()).unwrap();
        assert_eq!(out, plain);
    }
    // 5,000 zeros: a 5-byte literal run, then one long M3 match of distance 1.
    let stream = hex("02000000000020000000000000000000000000000000000000006610000c000000000000000000000000000000110000");
    lzo1x::decompress_into(&stream, &mut out, 5000).unwrap();
    assert_eq!(out, vec![0u8; 5000]);
}

#[test]
fn lzo_stream_shapes() {
    let mut lzo = Lzo1x1::new();
    let mut packed = Vec::new();
    // Empty input: only the end marker.
    lzo.compress(&[], &mut packed);
    assert_eq!(packed, END_MARKER);
    // Short input: one first-byte literal run (17 + n), then the end marker.
    lzo.compress(b"abc", &mut packed);
    assert_eq!(packed, [20, b'a', b'b', b'c', 0x11, 0, 0]);
    // A long run of one byte: a few literals and one long match.
    lzo.compress(&[7u8; 4096], &mut packed);
    assert!(packed.len() < 40, "{} bytes", packed.len());
    // Incompressible input grows by at most the documented bound.
    let noise: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let n = lzo.compress(&noise, &mut packed);
    assert!(n <= lzo1x::max_compressed_len(4096), "{n}");
}

#[test]
fn lzo_uses_every_match_form() {
    // Distances above 2,048 (M3) and above 16,384 (M4) and long lengths (extensions).
    let unit = sample(20_000);
    let mut input = unit.clone();
    input.extend_from_slice(&unit[..6000]);
    input.extend_from_slice(&[9u8; 1000]);
    input.extend_from_slice(&unit[3000..9000]);
    let mut lzo = Lzo1x1::new();
    let mut packed = Vec::new();
    let mut out = Vec::new();
    lzo.compress(&input, &mut packed);
    lzo.decompress(&packed, &mut out, input.len()).unwrap();
    assert_eq!(out, input);
    let m4 = packed
        .iter()
        .filter(|&&b| (0x10..0x20).contains(&b))
        .count();
    assert!(m4 >= 2, "expected M4 opcodes among {} bytes", packed.len());
}

#[test]
fn lzo_output_does_not_depend_on_earlier_pages() {
    let a = sample(4096);
    let b: Vec<u8> = sample(8192)[4096..].to_vec();
    let mut warm = Lzo1x1::new();
    let mut first = Vec::new();
    let mut second = Vec::new();
    warm.compress(&a, &mut first);
    warm.compress(&b, &mut first);
    Lzo1x1::new().compress(&b, &mut second);
    assert_eq!(first, second);
}

#[test]
fn lzo_errors_name_codec_and_offset() {
    let mut out = Vec::new();
    let err = |bytes: &[u8], expected: usize| {
        let mut out = Vec::new();
        lzo1x::decompress_into(bytes, &mut out, expected).unwrap_err()
    };
    assert_eq!(
        err(&[], 0),
        CodecError::Truncated {
            codec: "lzo1x-1",
            offset: 0
        }
    );
    // A 3-literal first run cut short.
    assert_eq!(
        err(&[20, b'a'], 3),
        CodecError::Truncated {
            codec: "lzo1x-1",
            offset: 2
        }
    );
    // A match before any output (an opening byte up to 17 is an instruction, above 17 a
    // literal run): M4, distance 16,385.
    assert_eq!(
        err(&[0x11, 0x04, 0x00, 0x11, 0, 0], 3),
        CodecError::DistanceTooFar {
            codec: "lzo1x-1",
            offset: 0,
            distance: 16385,
            decoded: 0
        }
    );
    // An M2 match 2 back after one literal.
    assert_eq!(
        err(&[18, b'a', 0x44, 0x00, 0x11, 0, 0], 4),
        CodecError::DistanceTooFar {
            codec: "lzo1x-1",
            offset: 2,
            distance: 2,
            decoded: 1
        }
    );
    // Literals beyond the expected length.
    assert_eq!(
        err(&[21, 1, 2, 3, 4, 0x11, 0, 0], 3),
        CodecError::OutputOverrun {
            codec: "lzo1x-1",
            offset: 0,
            expected: 3
        }
    );
    // Bytes after the end marker.
    assert_eq!(
        err(&[18, 1, 0x11, 0, 0, 9], 1),
        CodecError::TrailingInput {
            codec: "lzo1x-1",
            offset: 5,
            extra: 1
        }
    );
    // A non-canonical end marker.
    assert_eq!(
        err(&[18, 1, 0x12, 0, 0], 1),
        CodecError::BadEndMarker {
            codec: "lzo1x-1",
            offset: 2
        }
    );
    // Decoding to fewer bytes than expected.
    assert_eq!(
        err(&[18, 1, 0x11, 0, 0], 2),
        CodecError::LengthMismatch {
            codec: "lzo1x-1",
            actual: 1,
            expected: 2
        }
    );
    // An expected length no stream of this size can reach fails before allocating it.
    assert_eq!(
        err(&[0x11, 0, 0], usize::MAX),
        CodecError::Truncated {
            codec: "lzo1x-1",
            offset: 3
        }
    );
    let msg = err(&[20, b'a'], 3).to_string();
    assert!(msg.contains("lzo1x-1") && msg.contains("offset 2"), "{msg}");
    // The decoder accepts the M1 forms the encoder never writes: after 1 literal, a 2-byte
    // match 1 back; after a 4-literal run, a 3-byte match 2,049 back is out of range here.
    lzo1x::decompress_into(&[18, b'x', 0x00, 0x00, 0x11, 0, 0], &mut out, 3).unwrap();
    assert_eq!(out, b"xxx");
}

#[test]
fn every_decoder_rejects_truncation() {
    let input = sample(4096);
    for kind in all_kinds() {
        if kind == CodecKind::None {
            continue;
        }
        let mut codec = kind.build().unwrap();
        let mut packed = Vec::new();
        let mut out = Vec::new();
        codec.compress(&input, &mut packed);
        for cut in [0, 1, packed.len() / 2, packed.len() - 1] {
            assert!(
                codec.decompress(&packed[..cut], &mut out, 4096).is_err(),
                "{kind} cut {cut}"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn decoders_never_panic_on_arbitrary_bytes(
        bytes in proptest::collection::vec(any::<u8>(), 0..600),
        expected in 0usize..5000,
    ) {
        let mut out = Vec::new();
        for kind in all_kinds() {
            let mut codec = kind.build().unwrap();
            let _ = codec.decompress(&bytes, &mut out, expected);
        }
    }

    #[test]
    fn lzo_decoder_never_panics_on_damaged_streams(
        seed in 0usize..4096,
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
    ) {
        let input = sample(seed + 100);
        let mut packed = Vec::new();
        Lzo1x1::new().compress(&input, &mut packed);
        for (at, value) in flips {
            let i = at.index(packed.len());
            packed[i] = value;
        }
        let mut out = Vec::new();
        if lzo1x::decompress_into(&packed, &mut out, input.len()).is_ok() {
            prop_assert_eq!(out.len(), input.len());
        }
    }

    #[test]
    fn lzo_round_trips_arbitrary_bytes(
        bytes in proptest::collection::vec(prop_oneof![Just(0u8), Just(1u8), any::<u8>()], 0..3000),
    ) {
        let mut lzo = Lzo1x1::new();
        let mut packed = Vec::new();
        let mut out = Vec::new();
        lzo.compress(&bytes, &mut packed);
        prop_assert!(packed.len() <= lzo1x::max_compressed_len(bytes.len()));
        lzo.decompress(&packed, &mut out, bytes.len()).unwrap();
        prop_assert_eq!(out, bytes);
    }
}

// The tuned LZO1X-1 encoder against the reference copy: identical bytes on every input,
// across consecutive calls on one encoder (the hash table persists) and near the wrap of
// the table's 32-bit positions.

/// Compresses each input with one warm tuned encoder and one warm reference encoder, and
/// checks both streams agree byte for byte (and decode back).
fn assert_same_as_reference(inputs: &[Vec<u8>], base: Option<u32>) {
    let mut tuned = Lzo1x1::new();
    let mut reference = crate::lzo1x_reference::Reference::new();
    if let Some(b) = base {
        tuned.set_base_for_test(b);
        reference.set_base_for_test(b);
    }
    assert_same_with(&mut tuned, &mut reference, inputs);
}

/// [`assert_same_as_reference`] with given (warm) encoders.
fn assert_same_with(
    tuned: &mut Lzo1x1,
    reference: &mut crate::lzo1x_reference::Reference,
    inputs: &[Vec<u8>],
) {
    let (mut a, mut b, mut out) = (Vec::new(), Vec::new(), Vec::new());
    for (i, input) in inputs.iter().enumerate() {
        let na = tuned.compress_into(input, &mut a);
        let nb = reference.compress_into(input, &mut b);
        assert_eq!(na, nb, "input {i} ({} bytes): lengths differ", input.len());
        assert_eq!(a, b, "input {i} ({} bytes): streams differ", input.len());
        lzo1x::decompress_into(&a, &mut out, input.len()).unwrap();
        assert_eq!(&out, input, "input {i}: round trip");
    }
}

/// A small deterministic generator for the fixed cases below.
fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// A delta-like page: zeros with `runs` changed spans of random bytes.
fn delta_page(seed: u64, len: usize, runs: usize, max_run: usize) -> Vec<u8> {
    let mut s = seed | 1;
    let mut page = vec![0u8; len];
    for _ in 0..runs {
        let at = (xorshift(&mut s) as usize) % len.max(1);
        let run = 1 + (xorshift(&mut s) as usize) % max_run;
        for byte in page.iter_mut().skip(at).take(run) {
            *byte = xorshift(&mut s) as u8;
        }
    }
    page
}

#[test]
fn lzo_tuned_matches_reference_on_fixed_cases() {
    let mut inputs: Vec<Vec<u8>> = Vec::new();
    for len in 0..80 {
        inputs.push(vec![0u8; len]);
        inputs.push(sample(len));
        inputs.push(delta_page(len as u64 + 7, len, 3, 5));
    }
    for len in [4096, 4095, 4097, 4093, 8191, 20_000, 65_536, 70_001] {
        inputs.push(vec![0u8; len]);
        inputs.push(vec![0xffu8; len]);
        inputs.push(sample(len));
        let mut s = len as u64;
        inputs.push((0..len).map(|_| xorshift(&mut s) as u8).collect());
        for runs in [1, 4, 16, 64, 256] {
            inputs.push(delta_page(len as u64 * 31 + runs as u64, len, runs, 120));
        }
    }
    // The XOR of a text page with an edited copy of itself.
    for seed in 0..40u64 {
        let old = sample(4096 + seed as usize * 13)[seed as usize * 13..].to_vec();
        let mut new = old.clone();
        let mut s = seed + 99;
        for _ in 0..(1 + seed % 12) {
            let at = (xorshift(&mut s) as usize) % 4096;
            let run = 1 + (xorshift(&mut s) as usize) % 300;
            for byte in new.iter_mut().skip(at).take(run) {
                *byte = xorshift(&mut s) as u8 % 64 + 32;
            }
        }
        inputs.push(old.iter().zip(&new).map(|(a, b)| a ^ b).collect());
    }
    // One warm encoder over all of them, then again in reverse order.
    assert_same_as_reference(&inputs, None);
    inputs.reverse();
    assert_same_as_reference(&inputs, None);
    // Near the wrap of 32-bit positions: the table is cleared mid-sequence.
    let pages: Vec<Vec<u8>> = (0..6).map(|i| delta_page(i, 4096, 20, 200)).collect();
    for gap in [1u32, 4096, 4097, 5000, 9000, 70_000] {
        assert_same_as_reference(&pages, Some(u32::MAX - gap));
    }
    let big = vec![sample(70_001), sample(100)];
    assert_same_as_reference(&big, Some(u32::MAX - 70_000));
}

/// A page delta as MedFS makes them (the XOR of a page and its base): zeros with `runs`
/// spans of nonzero bytes, some of them at the very start and end of the input, and
/// zero gaps of 1–3 bytes inside spans (no 4-byte zero key there).
fn sparse_xor_page(seed: u64, len: usize, runs: usize) -> Vec<u8> {
    let mut s = seed | 1;
    let mut page = vec![0u8; len];
    if len == 0 {
        return page;
    }
    for r in 0..runs {
        let at = match r {
            0 => 0,
            1 => len.saturating_sub(1 + (xorshift(&mut s) as usize) % 8),
            _ => (xorshift(&mut s) as usize) % len,
        };
        let run = 1 + (xorshift(&mut s) as usize) % 40;
        for (k, byte) in page.iter_mut().skip(at).take(run).enumerate() {
            let v = xorshift(&mut s);
            // Mostly nonzero, with short zero gaps and repeated values.
            *byte = match v % 8 {
                0 => 0,
                1 => 0x20,
                _ => (v >> 8) as u8 | (k as u8 & 1),
            };
        }
    }
    page
}

#[test]
fn lzo_tuned_matches_reference_on_sparse_xor_pages() {
    let mut inputs: Vec<Vec<u8>> = Vec::new();
    for seed in 0..300u64 {
        let len = match seed % 6 {
            0 => 4096,
            1 => 4095,
            2 => 4097,
            3 => 4096 - (seed as usize % 64),
            4 => 8192,
            _ => 4096 + (seed as usize % 64),
        };
        inputs.push(sparse_xor_page(seed, len, (seed as usize * 7) % 90));
    }
    // One warm encoder over all of them: about 300 pages cross the 16-bit table's wrap
    // about 20 times.
    assert_same_as_reference(&inputs, None);
}

#[test]
fn lzo_tuned_matches_reference_across_the_16_bit_wrap() {
    let pages: Vec<Vec<u8>> = (0..8u64)
        .map(|i| sparse_xor_page(i + 11, 4096, 30))
        .collect();
    // Started close below the wrap: the table is cleared before or after one of them.
    for gap in [1u16, 2, 3, 4095, 4096, 4097, 4098, 8193, 10_000] {
        let mut tuned = Lzo1x1::new();
        tuned.set_narrow_base_for_test(u16::MAX - gap);
        let mut reference = crate::lzo1x_reference::Reference::new();
        assert_same_with(&mut tuned, &mut reference, &pages);
    }
    // Sizes around the 16-bit table's limit, and the two tables taking turns.
    let mut inputs = Vec::new();
    for len in [
        65_532usize,
        65_533,
        65_534,
        65_535,
        65_536,
        100,
        4096,
        70_000,
        4096,
    ] {
        inputs.push(sparse_xor_page(len as u64, len, 200));
        inputs.push(sample(len));
    }
    assert_same_as_reference(&inputs, None);
    let mut tuned = Lzo1x1::new();
    tuned.set_narrow_base_for_test(u16::MAX - 70);
    let mut reference = crate::lzo1x_reference::Reference::new();
    assert_same_with(&mut tuned, &mut reference, &inputs);
}

/// Bytes with many zeros and runs of repeated and random values (as in page deltas).
fn delta_like_bytes(max_len: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(
        prop_oneof![
            6 => (1usize..400).prop_map(|n| vec![0u8; n]),
            2 => proptest::collection::vec(any::<u8>(), 1..64),
            1 => (1usize..40, any::<u8>()).prop_map(|(n, b)| vec![b; n]),
            1 => proptest::collection::vec(prop_oneof![Just(0u8), Just(1u8), Just(0x20u8)], 1..64),
        ],
        0..max_len,
    )
    .prop_map(|chunks| chunks.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn lzo_tuned_matches_reference_on_random_inputs(
        inputs in proptest::collection::vec(
            prop_oneof![
                3 => delta_like_bytes(40),
                1 => proptest::collection::vec(any::<u8>(), 0..5000),
                1 => proptest::collection::vec(prop_oneof![Just(0u8), Just(1u8), any::<u8>()], 0..3000),
                1 => proptest::collection::vec(any::<u8>(), 0..64),
            ],
            1..5,
        ),
    ) {
        assert_same_as_reference(&inputs, None);
    }

    #[test]
    fn lzo_tuned_matches_reference_on_sparse_pages(
        pages in proptest::collection::vec(
            (any::<u64>(), 0usize..120, prop_oneof![Just(4096usize), 4000usize..4200, 0usize..300]),
            1..6,
        ),
    ) {
        let inputs: Vec<Vec<u8>> = pages
            .iter()
            .map(|&(seed, runs, len)| sparse_xor_page(seed, len, runs))
            .collect();
        assert_same_as_reference(&inputs, None);
    }

    #[test]
    fn lzo_tuned_matches_reference_on_xor_of_similar_pages(
        seed in 0usize..2000,
        edits in proptest::collection::vec((0usize..4096, 1usize..600, any::<u8>()), 1..24),
    ) {
        let old = sample(4096 + seed)[seed..].to_vec();
        let mut new = old.clone();
        for (at, run, v) in edits {
            for (k, byte) in new.iter_mut().skip(at).take(run).enumerate() {
                *byte = v.wrapping_add((k as u8).wrapping_mul(v | 1));
            }
        }
        let xor: Vec<u8> = old.iter().zip(&new).map(|(a, b)| a ^ b).collect();
        assert_same_as_reference(&[xor, new, old], None);
    }
}
