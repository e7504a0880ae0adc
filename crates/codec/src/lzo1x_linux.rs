//! LZO1X-1 as the Linux kernel compresses it (`lib/lzo`, the compressor every in-kernel
//! user calls: F2FS, zram, and MedFS's deltas), written here from the kernel's algorithm
//! and checked byte for byte against it (`docs/codecs.md`, "The kernel's LZO1X-1").
//!
//! Same stream format as [`crate::Lzo1x1`] (and the same decoder), different choices, each
//! of which changes compressed sizes:
//!
//! * a dictionary of 2^13 16-bit positions (16 KiB), cleared for every input: an empty
//!   entry names position 0 of the input, which is compared like any other candidate
//!   (a zero page's first four bytes are zero, so a zero run early in a delta can match
//!   them from far away);
//! * the first probe is at position 5 of the input (in a later chunk, at the chunk's
//!   position 1 to 4, past the literals carried into it) and probing stops 20 bytes
//!   before the chunk's end (those bytes, and whatever follows the last match, end the
//!   stream as literals); "position 0" is the chunk's start;
//! * a match is extended 8 bytes a step and stops growing once it reaches that 20-byte
//!   tail;
//! * the first literal run of a stream uses the ordinary `0000LLLL` form; only a stream
//!   that is a single literal run opens with the `17 + n` first byte;
//! * inputs longer than 49,152 bytes are compressed in chunks of that size, each with a
//!   fresh dictionary, the literals left at a chunk's end carried into the next one.

use crate::lzo1x::{
    decompress_into, equal_mask64, max_compressed_len, read_u32_unchecked as read_u32, END_MARKER,
    HASH_MUL, M2_MAX_DISTANCE, M2_MAX_LEN, M3_MAX_DISTANCE, M3_MAX_LEN, M4_MAX_LEN,
};
use crate::{Codec, CodecError};

/// 2^13 entries of 16 bits (`D_BITS` of the kernel's LZO).
const DICT_BITS: u32 = 13;
const DICT_SIZE: usize = 1 << DICT_BITS;
/// Bytes at the end of a chunk that are never probed.
const TAIL: usize = 20;
/// Longest chunk: every distance inside it fits the longest match form.
const CHUNK: usize = 49_152;

/// The kernel's LZO1X-1 compressor. Its dictionary entries are kept as `base + position`
/// so that clearing it per input costs nothing: an entry below `base` is empty (position
/// 0). `base` moves past each chunk; the table is zeroed when it would wrap.
pub struct Lzo1x1Linux {
    dict: Box<[u16; DICT_SIZE]>,
    base: u16,
}

impl Default for Lzo1x1Linux {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Lzo1x1Linux {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Lzo1x1Linux")
    }
}

impl Lzo1x1Linux {
    pub fn new() -> Self {
        Lzo1x1Linux {
            dict: Box::new([0u16; DICT_SIZE]),
            base: 1,
        }
    }

    /// Compresses `input` into `out` (cleared first); returns the compressed length.
    pub fn compress_into(&mut self, input: &[u8], out: &mut Vec<u8>) -> usize {
        let n = input.len();
        out.clear();
        out.reserve(max_compressed_len(n));
        let mut at = 0;
        // Literals not yet written, ending at `at`.
        let mut pending = 0;
        while n - at > TAIL {
            let len = (n - at).min(CHUNK);
            pending = self.chunk(&input[..at + len], at, pending, out);
            at += len;
        }
        let pending = pending + (n - at);
        if pending > 0 {
            let first = out.is_empty() && pending <= 238;
            match first {
                true => out.push(17 + pending as u8),
                false => literal_header(out, pending),
            }
            out.extend_from_slice(&input[n - pending..]);
        }
        out.extend_from_slice(&END_MARKER);
        out.len()
    }

    /// Compresses the chunk `input[start..]` with `carried` literals before it still to
    /// be written; returns the literals left to write at its end (carried ones included
    /// when the chunk found no match).
    fn chunk(&mut self, input: &[u8], start: usize, carried: usize, out: &mut Vec<u8>) -> usize {
        let len = input.len() - start;
        if usize::from(self.base) + len >= usize::from(u16::MAX) {
            self.dict.fill(0);
            self.base = 1;
        }
        let base = self.base;
        let probe_end = input.len() - TAIL;
        // Where the literals not yet written begin.
        let mut literals = start - carried;
        // Where the current literal run's probing started (the step grows with it).
        let mut run = start;
        let mut ip = start + 4usize.saturating_sub(carried);
        'chunk: loop {
            // Probe for a match, the step `1 + (ip - run) / 32`: constant up to the next
            // multiple of 32 past `run`, so a segment of probes adds one constant.
            let mut candidate = 'probe: loop {
                let step = 1 + ((ip - run) >> 5);
                let segment_end = run + 32 * step;
                loop {
                    ip += step;
                    if ip >= probe_end {
                        break 'chunk;
                    }
                    if let Some(c) = self.probe(input, start, base, ip) {
                        break 'probe c;
                    }
                    if ip >= segment_end {
                        continue 'probe;
                    }
                }
            };
            // Matches, each followed by a probe right after it (no step).
            loop {
                if ip > literals {
                    literal_header(out, ip - literals);
                    out.extend_from_slice(&input[literals..ip]);
                }
                let len = extend(input, candidate, ip, probe_end);
                push_match(out, len, ip - candidate);
                ip += len;
                literals = ip;
                run = ip;
                if ip >= probe_end {
                    break 'chunk;
                }
                match self.probe(input, start, base, ip) {
                    Some(c) => candidate = c,
                    None => break,
                }
            }
        }
        // Fits: `base + len` is below 2^16 - 1 (checked above).
        self.base = base + len as u16 + 1;
        input.len() - literals
    }

    /// Looks `ip` up in the dictionary and records it there; the candidate if its four
    /// bytes equal those at `ip`. `ip` is below the chunk's probe end.
    #[inline(always)]
    fn probe(&mut self, input: &[u8], start: usize, base: u16, ip: usize) -> Option<usize> {
        debug_assert!(ip + TAIL < input.len());
        // SAFETY: `ip` is below `len - 20`: four bytes are readable there.
        let key = unsafe { read_u32(input, ip) };
        let slot = (key.wrapping_mul(HASH_MUL) >> (32 - DICT_BITS)) as usize;
        let entry = self.dict[slot];
        self.dict[slot] = base + (ip - start) as u16;
        // An entry below `base` is empty: position 0 of the chunk.
        let candidate = start + usize::from(entry.saturating_sub(base));
        // SAFETY: `candidate <= ip`, whose four bytes are readable.
        (unsafe { read_u32(input, candidate) } == key).then_some(candidate)
    }
}

impl Codec for Lzo1x1Linux {
    fn name(&self) -> &'static str {
        "lzo1x-1-linux"
    }

    fn compress(&mut self, input: &[u8], out: &mut Vec<u8>) -> usize {
        self.compress_into(input, out)
    }

    fn decompress(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        expected_len: usize,
    ) -> Result<(), CodecError> {
        decompress_into(input, out, expected_len)
    }
}

/// Length of the match of `later` against `earlier` (`earlier < later`), whose first 4
/// bytes agree. The kernel extends 8 bytes a step and stops at the step that reaches
/// `probe_end` even if more bytes agree: so the length is the first differing byte, but
/// at most the first `4 + 8k` (`k >= 1`) that reaches `probe_end`. Compared 64 bytes a
/// step here, then 8. Every byte read lies before `probe_end + 12`, inside the 20-byte
/// tail.
#[inline(always)]
fn extend(input: &[u8], earlier: usize, later: usize, probe_end: usize) -> usize {
    let room = probe_end - later;
    let bound = 4 + 8 * (room.saturating_sub(4).div_ceil(8)).max(1);
    assert!(later + bound <= input.len() && earlier < later);
    let p = input.as_ptr();
    let mut len = 4;
    while len + 64 <= bound {
        // SAFETY: `later + bound <= input.len()` (asserted) and `earlier < later`.
        let equal = unsafe { equal_mask64(p.add(earlier + len), p.add(later + len)) };
        if equal != u64::MAX {
            return len + (!equal).trailing_zeros() as usize;
        }
        len += 64;
    }
    while len < bound {
        // SAFETY: `len + 8 <= bound` (`bound - 4` and `len - 4` are multiples of 8).
        let (x, y) = unsafe {
            (
                p.add(earlier + len).cast::<u64>().read_unaligned(),
                p.add(later + len).cast::<u64>().read_unaligned(),
            )
        };
        let diff = u64::from_le(x) ^ u64::from_le(y);
        if diff != 0 {
            // Little-endian: the lowest set bit is in the first differing byte.
            return len + (diff.trailing_zeros() / 8) as usize;
        }
        len += 8;
    }
    bound
}

/// The header of a literal run of `n` (≥ 1) bytes after a match: 1–3 in the match's `SS`
/// bits, 4–18 one opcode byte, longer an opcode and a length extension.
fn literal_header(out: &mut Vec<u8>, n: usize) {
    if n <= 3 {
        let at = out.len() - 2;
        out[at] |= n as u8;
    } else if n <= 18 {
        out.push((n - 3) as u8);
    } else {
        out.push(0);
        push_extension(out, n - 18);
    }
}

/// Zero bytes worth 255 each, then the remainder (1–255).
fn push_extension(out: &mut Vec<u8>, mut value: usize) {
    while value > 255 {
        out.push(0);
        value -= 255;
    }
    out.push(value as u8);
}

/// A match of `len` bytes `distance` back, in the shortest form both fit.
fn push_match(out: &mut Vec<u8>, len: usize, distance: usize) {
    if len <= M2_MAX_LEN && distance <= M2_MAX_DISTANCE {
        let d = distance - 1;
        out.push((((len - 1) << 5) | ((d & 7) << 2)) as u8);
        out.push((d >> 3) as u8);
        return;
    }
    let word = if distance <= M3_MAX_DISTANCE {
        match len <= M3_MAX_LEN {
            true => out.push(0x20 | (len - 2) as u8),
            false => {
                out.push(0x20);
                push_extension(out, len - M3_MAX_LEN);
            }
        }
        (distance - 1) << 2
    } else {
        let d = distance - M3_MAX_DISTANCE;
        let high = ((d >> 11) & 8) as u8;
        match len <= M4_MAX_LEN {
            true => out.push(0x10 | high | (len - 2) as u8),
            false => {
                out.push(0x10 | high);
                push_extension(out, len - M4_MAX_LEN);
            }
        }
        (d & 0x3fff) << 2
    };
    out.push(word as u8);
    out.push((word >> 8) as u8);
}

/// [`tests`]: FNV-1a of the golden inputs' streams as Linux's compressor wrote them.
#[cfg(test)]
const GOLDEN_DIGEST: u64 = 0x1cd2_8af9_4771_9826;
/// A 100-byte zero input as Linux's compressor writes it.
#[cfg(test)]
const ZERO_100: &[u8] = &[
    0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x20, 0x2b, 0x10, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x11,
    0x00, 0x00,
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Inputs whose compressed bytes were compared with the kernel's compressor (built from
    /// Linux's `lib/lzo` outside this repository; `docs/codecs.md`): lengths around the
    /// 20-byte tail and the 49,152-byte chunk, zero, random, sparse (a page delta's shape)
    /// and few-symbol inputs, from one xorshift stream.
    fn golden_inputs() -> Vec<Vec<u8>> {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let lens = (0..=64).chain([
            255, 4093, 4096, 4097, 49_152, 49_153, 49_172, 49_173, 100_000,
        ]);
        let mut inputs = Vec::new();
        for len in lens {
            inputs.push(vec![0u8; len]);
            inputs.push((0..len).map(|_| next() as u8).collect());
            let mut sparse = vec![0u8; len];
            for _ in 0..(next() % 60) {
                let at = (next() as usize) % len.max(1);
                let span = 1 + (next() as usize) % 80;
                for b in sparse.iter_mut().skip(at).take(span) {
                    *b = next() as u8;
                }
            }
            inputs.push(sparse);
            inputs.push(
                (0..len)
                    .map(|_| [0, 0, 0, 1, 2, 255][(next() % 6) as usize])
                    .collect(),
            );
        }
        // Long-distance (M4) matches: a random block repeated 16–48 KiB later, and the
        // same across a chunk boundary.
        for (block, gap) in [(20_000, 0), (4_096, 30_000), (300, 45_000), (9_000, 40_000)] {
            let first: Vec<u8> = (0..block).map(|_| next() as u8).collect();
            let mut input = first.clone();
            input.extend((0..gap).map(|_| next() as u8));
            input.extend_from_slice(&first);
            input.extend((0..100).map(|_| next() as u8));
            inputs.push(input);
        }
        inputs
    }

    /// FNV-1a over every compressed stream, each preceded by its length.
    fn digest(inputs: &[Vec<u8>]) -> u64 {
        let mut enc = Lzo1x1Linux::new();
        let (mut out, mut back) = (Vec::new(), Vec::new());
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        for input in inputs {
            enc.compress_into(input, &mut out);
            decompress_into(&out, &mut back, input.len()).expect("decodes");
            assert!(back == *input, "round trip of {} bytes", input.len());
            let len = (out.len() as u32).to_le_bytes();
            for &b in len.iter().chain(out.iter()) {
                h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
            }
        }
        h
    }

    /// Writes the golden inputs (each a little-endian `u32` length and its bytes) to the
    /// file `FLASHSTACK_LZO_GOLDEN_INPUTS` names, to compress them with another LZO1X-1
    /// compressor: `cargo test -p flashstack-codec dump_golden_inputs -- --ignored`.
    #[test]
    #[ignore]
    fn dump_golden_inputs() {
        let path = std::env::var("FLASHSTACK_LZO_GOLDEN_INPUTS").expect("a path to write");
        let mut bytes = Vec::new();
        for input in golden_inputs() {
            bytes.extend_from_slice(&(input.len() as u32).to_le_bytes());
            bytes.extend_from_slice(&input);
        }
        std::fs::write(path, bytes).expect("written");
    }

    #[test]
    fn the_kernels_bytes_for_the_golden_inputs() {
        assert_eq!(digest(&golden_inputs()), GOLDEN_DIGEST);
    }

    /// The same streams from one encoder reused across inputs and from a fresh one each:
    /// the dictionary's `base` stands in for clearing it, through its wrap.
    #[test]
    fn a_reused_encoder_emits_what_a_fresh_one_does() {
        let inputs = golden_inputs();
        let mut reused = Lzo1x1Linux::new();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for round in 0..3 {
            for input in &inputs {
                reused.compress_into(input, &mut a);
                Lzo1x1Linux::new().compress_into(input, &mut b);
                assert!(a == b, "round {round}, {} bytes", input.len());
            }
        }
    }

    /// A zero page: five literals (positions 0–4 are never probed), then one match
    /// from position 0 that stops at the step reaching the 20-byte tail, then the tail.
    #[test]
    fn a_zero_page_as_the_kernel_writes_it() {
        let mut out = Vec::new();
        Lzo1x1Linux::new().compress_into(&[0u8; 100], &mut out);
        assert_eq!(out, ZERO_100);
    }

    /// Positions 1–4 are never dictionary entries, and an empty entry names position 0:
    /// four bytes of position 2 repeated at 20 are not found (one literal run, 68 bytes
    /// as the kernel writes it), four of position 0 are (a 4-byte match from 20 back,
    /// which costs a byte more here: 69).
    #[test]
    fn only_position_zero_of_the_first_five_is_a_candidate() {
        let mut enc = Lzo1x1Linux::new();
        let mut out = Vec::new();
        let distinct: Vec<u8> = (0..64u8)
            .map(|i| i.wrapping_mul(37).wrapping_add(11))
            .collect();
        let mut at_two = distinct.clone();
        at_two.copy_within(2..6, 20);
        enc.compress_into(&at_two, &mut out);
        assert_eq!((out.len(), out[0]), (68, 17 + 64), "one literal run");
        let mut at_zero = distinct;
        at_zero.copy_within(0..4, 20);
        enc.compress_into(&at_zero, &mut out);
        // 20 literals (`0`, extension 2), then the match's M2 opcode: 4 bytes, 20 back.
        assert_eq!((out.len(), &out[..2]), (69, &[0u8, 2][..]));
        assert_eq!(
            out[22],
            ((4 - 1) << 5 | (19 & 7) << 2) as u8,
            "match from position 0"
        );
    }
}
