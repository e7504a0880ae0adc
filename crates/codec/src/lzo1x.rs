//! LZO1X-1: the greedy single-pass LZO1X encoder and a bounds-checked LZO1X decoder,
//! written from the stream format described in the crate documentation.
//!
//! The encoder emits three match forms (called M2, M3 and M4 after their distance ranges)
//! and literal runs; the decoder also accepts the two short `0000` match forms (M1) that
//! other LZO1X encoders produce.

use crate::{Codec, CodecError};

const NAME: &str = "lzo1x-1";

/// Hash table size: 2^14 entries, as LZO1X-1 uses.
const HASH_BITS: u32 = 14;
const HASH_SIZE: usize = 1 << HASH_BITS;
/// Multiplier of the 4-byte hash (the one LZO1X-1 uses).
const HASH_MUL: u32 = 0x1824_429d;

/// Largest distance of the short `LLLDDDSS` match (M2) and its longest length.
const M2_MAX_DISTANCE: usize = 2048;
const M2_MAX_LEN: usize = 8;
/// Largest distance of the `001LLLLL` match (M3); lengths up to 33 fit in its opcode.
const M3_MAX_DISTANCE: usize = 16384;
const M3_MAX_LEN: usize = 33;
/// Largest distance of the `0001BLLL` match (M4); lengths up to 9 fit in its opcode.
const M4_MAX_DISTANCE: usize = 49151;
const M4_MAX_LEN: usize = 9;
/// Minimum match length the encoder looks for (a 4-byte hash key).
const MIN_MATCH: usize = 4;
/// Inputs shorter than this are stored as one literal run.
const MIN_INPUT_FOR_MATCHES: usize = 16;
/// The end-of-stream instruction: an M4 match of distance 16384.
pub const END_MARKER: [u8; 3] = [0x11, 0x00, 0x00];

/// The largest compressed size of `len` input bytes: incompressible input costs one
/// literal-run header per 255 bytes or so, plus the end marker.
pub fn max_compressed_len(len: usize) -> usize {
    len + len / 16 + 64 + 3
}

/// LZO1X-1 compressor and decompressor (`lzo1x-1`).
///
/// Owns its 2^14-entry hash table. Entries are stored as `base + position`; `base` moves
/// past each input, so entries from an earlier call are recognisably stale and the table
/// need not be cleared per page. The output depends on nothing but the input.
pub struct Lzo1x1 {
    /// A fixed-size array, so that indexing it with a 14-bit hash needs no bounds check.
    table: Box<[u32; HASH_SIZE]>,
    /// Added to positions of the current input; every stored entry below it is stale.
    base: u32,
}

impl Lzo1x1 {
    pub fn new() -> Self {
        let table: Box<[u32]> = vec![0; HASH_SIZE].into_boxed_slice();
        Lzo1x1 {
            table: table.try_into().expect("HASH_SIZE entries"),
            base: 1,
        }
    }
}

impl Default for Lzo1x1 {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Lzo1x1 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Lzo1x1")
    }
}

#[inline(always)]
fn read_u32(input: &[u8], at: usize) -> u32 {
    // One bounds check for the word rather than one per byte.
    let bytes: [u8; 4] = input[at..at + 4].try_into().expect("4 bytes");
    u32::from_le_bytes(bytes)
}

/// How far the bytes at `earlier` and `later` agree (`earlier < later`), given that the
/// first `known` do, up to the end of the input. Compares a word at a time.
#[inline(always)]
fn match_len(input: &[u8], earlier: usize, later: usize, known: usize) -> usize {
    let n = input.len();
    let mut len = known;
    debug_assert!(earlier < later);
    while later + len + 8 <= n {
        // SAFETY: `later + len + 8 <= n` (the loop test) and `earlier < later`, so both
        // 8-byte reads lie inside `input`; `read_unaligned` needs no alignment.
        let (x, y) = unsafe {
            let p = input.as_ptr();
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
    while later + len < n && input[earlier + len] == input[later + len] {
        len += 1;
    }
    len
}

#[inline(always)]
fn hash(key: u32) -> usize {
    (key.wrapping_mul(HASH_MUL) >> (32 - HASH_BITS)) as usize
}

/// Appends a length too large for an opcode's field: zero bytes worth 255 each, then the
/// remainder (1–255). `value` is at least 1.
fn push_extension(out: &mut Vec<u8>, mut value: usize) {
    while value > 255 {
        out.push(0);
        value -= 255;
    }
    out.push(value as u8);
}

/// Appends a literal run of `literals`. `stream_start` says whether nothing has been
/// written yet; otherwise the previous instruction was a match, whose `SS` bits (in the
/// byte two before its end) carry runs of 1–3.
fn push_literals(out: &mut Vec<u8>, literals: &[u8], stream_start: bool) {
    let n = literals.len();
    if n == 0 {
        return;
    }
    if stream_start && n <= 238 {
        out.push(17 + n as u8);
    } else if n <= 3 {
        // Not at the start, so at least the previous match's opcode and one more byte
        // were written.
        let at = out.len() - 2;
        out[at] |= n as u8;
    } else if n <= 18 {
        out.push((n - 3) as u8);
    } else {
        out.push(0);
        push_extension(out, n - 18);
    }
    out.extend_from_slice(literals);
}

/// Appends a match of `len` (≥ 3) bytes `distance` (1–49151) back, its `SS` bits zero.
fn push_match(out: &mut Vec<u8>, len: usize, distance: usize) {
    if len <= M2_MAX_LEN && distance <= M2_MAX_DISTANCE {
        let d = distance - 1;
        out.push((((len - 1) << 5) | ((d & 7) << 2)) as u8);
        out.push((d >> 3) as u8);
        return;
    }
    let word = if distance <= M3_MAX_DISTANCE {
        if len <= M3_MAX_LEN {
            out.push(0x20 | (len - 2) as u8);
        } else {
            out.push(0x20);
            push_extension(out, len - M3_MAX_LEN);
        }
        (distance - 1) << 2
    } else {
        let d = distance - M3_MAX_DISTANCE;
        let high = ((d >> 11) & 8) as u8;
        if len <= M4_MAX_LEN {
            out.push(0x10 | high | (len - 2) as u8);
        } else {
            out.push(0x10 | high);
            push_extension(out, len - M4_MAX_LEN);
        }
        (d & 0x3fff) << 2
    };
    out.push(word as u8);
    out.push((word >> 8) as u8);
}

impl Lzo1x1 {
    /// Starts the next input at `base` (tests of the 32-bit wrap).
    #[cfg(test)]
    pub(crate) fn set_base_for_test(&mut self, base: u32) {
        self.base = base;
    }

    /// Compresses `input` into `out` (replacing its contents); returns the length.
    pub fn compress_into(&mut self, input: &[u8], out: &mut Vec<u8>) -> usize {
        let n = input.len();
        out.clear();
        out.reserve(max_compressed_len(n));
        // Positions are stored as `base + position` in 32 bits: start over (clear the
        // table) when this input would not fit above the current base.
        let room = (u32::MAX - self.base) as usize;
        if n >= room {
            self.table.fill(0);
            self.base = 1;
        }
        let base = self.base;
        // Positions from here on cannot be stored (inputs over 4 GiB): they stay literals.
        let storable = (u32::MAX - base) as usize;

        let mut literal_start = 0;
        if n >= MIN_INPUT_FOR_MATCHES {
            let mut ip = 0;
            // A 4-byte key must be readable at every probed position.
            let last_probe = n - MIN_MATCH;
            let table = &mut *self.table;
            while ip <= last_probe {
                let key = read_u32(input, ip);
                let slot = hash(key);
                let stored = table[slot];
                if ip < storable {
                    table[slot] = base + ip as u32;
                }
                // A stale entry (below `base`) wraps to at least `2^32 - base`, which is
                // above every position of this input (`n < u32::MAX - base`), so the one
                // `candidate < ip` test rejects it too.
                let candidate = stored.wrapping_sub(base) as usize;
                if candidate >= ip
                    || ip - candidate > M4_MAX_DISTANCE
                    || read_u32(input, candidate) != key
                {
                    // No match: step faster the longer the current literal run (LZO's
                    // skip heuristic for incompressible data).
                    ip += 1 + ((ip - literal_start) >> 5);
                    continue;
                }
                let len = match_len(input, candidate, ip, MIN_MATCH);
                push_literals(out, &input[literal_start..ip], out.is_empty());
                push_match(out, len, ip - candidate);
                ip += len;
                literal_start = ip;
            }
        }
        push_literals(out, &input[literal_start..], out.is_empty());
        out.extend_from_slice(&END_MARKER);
        self.base = match u32::try_from(n)
            .ok()
            .and_then(|n| base.checked_add(n))
            .and_then(|b| b.checked_add(1))
        {
            Some(next) => next,
            None => {
                self.table.fill(0);
                1
            }
        };
        out.len()
    }
}

/// A cursor over compressed input that names the offset of whatever is missing.
struct Input<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Input<'_> {
    #[inline(always)]
    fn byte(&mut self) -> Result<u8, CodecError> {
        match self.bytes.get(self.at) {
            Some(&b) => {
                self.at += 1;
                Ok(b)
            }
            None => Err(CodecError::Truncated {
                codec: NAME,
                offset: self.at,
            }),
        }
    }

    #[inline(always)]
    fn le16(&mut self) -> Result<usize, CodecError> {
        let lo = self.byte()? as usize;
        let hi = self.byte()? as usize;
        Ok(lo | (hi << 8))
    }

    /// Reads a length extension: zero bytes worth 255 each, then a non-zero byte.
    fn extension(&mut self) -> Result<usize, CodecError> {
        let mut value = 0usize;
        loop {
            let b = self.byte()?;
            if b != 0 {
                return Ok(value.saturating_add(b as usize));
            }
            value = value.saturating_add(255);
        }
    }

    #[inline(always)]
    fn take(&mut self, n: usize) -> Result<&[u8], CodecError> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        match end {
            Some(end) => {
                let s = &self.bytes[self.at..end];
                self.at = end;
                Ok(s)
            }
            None => Err(CodecError::Truncated {
                codec: NAME,
                offset: self.bytes.len(),
            }),
        }
    }
}

/// Bytes of slack after the expected output, so that short copies can move whole 8-byte
/// words and trim the excess later.
const SLACK: usize = 16;

/// The output being decoded: `buf` is `expected + SLACK` bytes long, `op` bytes of it are
/// decoded. Every copy checks that it ends within `expected`.
struct Output<'a> {
    buf: &'a mut [u8],
    op: usize,
    expected: usize,
}

impl Output<'_> {
    /// Copies `n` literals from `input`.
    #[inline(always)]
    fn literals(
        &mut self,
        input: &mut Input<'_>,
        n: usize,
        opcode_at: usize,
    ) -> Result<(), CodecError> {
        if n > self.expected - self.op {
            return Err(CodecError::OutputOverrun {
                codec: NAME,
                offset: opcode_at,
                expected: self.expected,
            });
        }
        let at = input.at;
        if n <= 8 && at + 8 <= input.bytes.len() {
            // One word: the bytes past `n` land in the slack or are overwritten next.
            self.buf[self.op..self.op + 8].copy_from_slice(&input.bytes[at..at + 8]);
            input.at += n;
        } else {
            let src = input.take(n)?;
            self.buf[self.op..self.op + n].copy_from_slice(src);
        }
        self.op += n;
        Ok(())
    }

    /// Copies a match of `len` bytes from `distance` back.
    #[inline(always)]
    fn copy_match(
        &mut self,
        distance: usize,
        len: usize,
        opcode_at: usize,
    ) -> Result<(), CodecError> {
        let op = self.op;
        if distance > op {
            return Err(CodecError::DistanceTooFar {
                codec: NAME,
                offset: opcode_at,
                distance,
                decoded: op,
            });
        }
        if len > self.expected - op {
            return Err(CodecError::OutputOverrun {
                codec: NAME,
                offset: opcode_at,
                expected: self.expected,
            });
        }
        let src = op - distance;
        if distance >= 8 {
            // Word by word: each word is read from bytes already decoded (distance ≥ 8),
            // and the last one ends at most 7 bytes past `expected`, inside the slack.
            let mut k = 0;
            while k < len {
                let mut word = [0u8; 8];
                word.copy_from_slice(&self.buf[src + k..src + k + 8]);
                self.buf[op + k..op + k + 8].copy_from_slice(&word);
                k += 8;
            }
        } else if len <= 32 {
            for k in 0..len {
                self.buf[op + k] = self.buf[src + k];
            }
        } else {
            // A long overlapping match repeats the last `distance` bytes: everything from
            // `src` on is periodic with that period, so copy spans as long as what is
            // already there, doubling each time.
            let mut copied = 0;
            while copied < len {
                let span = (op + copied - src).min(len - copied);
                self.buf.copy_within(src..src + span, op + copied);
                copied += span;
            }
        }
        self.op += len;
        Ok(())
    }
}

/// Decompresses an LZO1X stream into `out` (replacing its contents), which must come to
/// exactly `expected` bytes. Safe on any input: every failure is a [`CodecError`].
pub fn decompress_into(input: &[u8], out: &mut Vec<u8>, expected: usize) -> Result<(), CodecError> {
    out.clear();
    // No byte of an LZO1X stream yields more than 255 bytes of output (a zero byte of a
    // length extension), so a larger `expected` cannot be met: fail before allocating.
    if expected > input.len().saturating_mul(256).saturating_add(64) {
        return Err(CodecError::Truncated {
            codec: NAME,
            offset: input.len(),
        });
    }
    out.resize(expected.saturating_add(SLACK), 0);
    let result = decode(input, out, expected);
    match result {
        Ok(decoded) => {
            out.truncate(decoded);
            Ok(())
        }
        Err(e) => {
            out.clear();
            Err(e)
        }
    }
}

/// Decodes into `buf` (`expected + SLACK` bytes); returns the decoded length, which is
/// `expected` on success.
fn decode(input: &[u8], buf: &mut [u8], expected: usize) -> Result<usize, CodecError> {
    let mut inp = Input {
        bytes: input,
        at: 0,
    };
    let mut out = Output {
        buf,
        op: 0,
        expected,
    };
    // How many literals the previous instruction copied: 0, 1–3, or 4 for "4 or more".
    let mut state: usize = 0;

    let first = inp.byte()?;
    if first > 17 {
        let n = (first - 17) as usize;
        out.literals(&mut inp, n, 0)?;
        state = n.min(4);
    } else {
        inp.at = 0;
    }

    loop {
        let opcode_at = inp.at;
        let t = inp.byte()? as usize;
        let (len, distance, ss);
        if t < 16 {
            match state {
                0 => {
                    let n = if t == 0 {
                        inp.extension()?.saturating_add(18)
                    } else {
                        t + 3
                    };
                    out.literals(&mut inp, n, opcode_at)?;
                    state = 4;
                    continue;
                }
                1..=3 => {
                    let h = inp.byte()? as usize;
                    len = 2;
                    distance = 1 + (t >> 2) + (h << 2);
                }
                _ => {
                    let h = inp.byte()? as usize;
                    len = 3;
                    distance = 1 + M2_MAX_DISTANCE + (t >> 2) + (h << 2);
                }
            }
            ss = t & 3;
        } else if t >= 64 {
            let h = inp.byte()? as usize;
            len = (t >> 5) + 1;
            distance = 1 + ((t >> 2) & 7) + (h << 3);
            ss = t & 3;
        } else if t >= 32 {
            let l = t & 31;
            len = if l == 0 {
                inp.extension()?.saturating_add(M3_MAX_LEN)
            } else {
                l + 2
            };
            let word = inp.le16()?;
            distance = 1 + (word >> 2);
            ss = word & 3;
        } else {
            let l = t & 7;
            len = if l == 0 {
                inp.extension()?.saturating_add(M4_MAX_LEN)
            } else {
                l + 2
            };
            let word = inp.le16()?;
            let d = ((t & 8) << 11) + (word >> 2);
            if d == 0 {
                // Distance 16384 in this form is the end marker, canonically 11 00 00.
                if t != 0x11 || word != 0 {
                    return Err(CodecError::BadEndMarker {
                        codec: NAME,
                        offset: opcode_at,
                    });
                }
                break;
            }
            distance = M3_MAX_DISTANCE + d;
            ss = word & 3;
        }
        out.copy_match(distance, len, opcode_at)?;
        if ss > 0 {
            out.literals(&mut inp, ss, opcode_at)?;
        }
        state = ss;
    }

    if inp.at < input.len() {
        return Err(CodecError::TrailingInput {
            codec: NAME,
            offset: inp.at,
            extra: input.len() - inp.at,
        });
    }
    if out.op != expected {
        return Err(CodecError::LengthMismatch {
            codec: NAME,
            actual: out.op,
            expected,
        });
    }
    Ok(out.op)
}

impl Codec for Lzo1x1 {
    fn name(&self) -> &'static str {
        NAME
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
