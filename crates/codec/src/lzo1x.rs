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
pub(crate) const HASH_MUL: u32 = 0x1824_429d;

/// Largest distance of the short `LLLDDDSS` match (M2) and its longest length.
pub(crate) const M2_MAX_DISTANCE: usize = 2048;
pub(crate) const M2_MAX_LEN: usize = 8;
/// Largest distance of the `001LLLLL` match (M3); lengths up to 33 fit in its opcode.
pub(crate) const M3_MAX_DISTANCE: usize = 16384;
pub(crate) const M3_MAX_LEN: usize = 33;
/// Largest distance of the `0001BLLL` match (M4); lengths up to 9 fit in its opcode.
const M4_MAX_DISTANCE: usize = 49151;
pub(crate) const M4_MAX_LEN: usize = 9;
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
///
/// Inputs shorter than 65,534 bytes (`NARROW_BELOW`; every page) use a table of 16-bit
/// entries: 32 KiB of cache instead of 64 KiB for the table load of every probe. Its base
/// wraps after about 16 pages, when the table is cleared. Larger inputs use a table of 32-bit entries, made on
/// first use.
pub struct Lzo1x1 {
    /// A fixed-size array, so that indexing it with a 14-bit hash needs no bounds check.
    narrow: Box<[u16; HASH_SIZE]>,
    /// Added to positions of the current input in `narrow`; every entry below it is stale.
    narrow_base: u16,
    wide: Option<Box<[u32; HASH_SIZE]>>,
    /// `narrow_base` for `wide`.
    wide_base: u32,
    /// Inputs shorter than this use `narrow` (tests lower it to reach `wide`).
    narrow_below: usize,
}

/// Inputs shorter than this fit the 16-bit table (`base + n` must stay below 2^16).
const NARROW_BELOW: usize = (u16::MAX - 1) as usize;

impl Lzo1x1 {
    pub fn new() -> Self {
        Lzo1x1 {
            narrow: zeroed_table(),
            narrow_base: 1,
            wide: None,
            wide_base: 1,
            narrow_below: NARROW_BELOW,
        }
    }
}

fn zeroed_table<T: Copy + Default>() -> Box<[T; HASH_SIZE]> {
    let table: Box<[T]> = vec![T::default(); HASH_SIZE].into_boxed_slice();
    table.try_into().ok().expect("HASH_SIZE entries")
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

/// A hash-table entry: `base + position`, kept modulo 2^bits.
trait Slot: Copy + Default {
    const MAX: u32;
    /// Whether every position of an input this table takes can be stored (the 16-bit
    /// table takes inputs shorter than 65,534 bytes only), so that the probe loop need not
    /// ask.
    const STORES_ALL: bool;
    fn pack(value: u32) -> Self;
    fn value(self) -> u32;
}

impl Slot for u16 {
    const MAX: u32 = u16::MAX as u32;
    const STORES_ALL: bool = true;
    #[inline(always)]
    fn pack(value: u32) -> Self {
        value as u16
    }
    #[inline(always)]
    fn value(self) -> u32 {
        u32::from(self)
    }
}

impl Slot for u32 {
    const MAX: u32 = u32::MAX;
    const STORES_ALL: bool = false;
    #[inline(always)]
    fn pack(value: u32) -> Self {
        value
    }
    #[inline(always)]
    fn value(self) -> u32 {
        self
    }
}

/// The 4 bytes at `at`, which the caller has checked lie inside `input`
/// (`at + 4 <= input.len()`).
#[inline(always)]
pub(crate) unsafe fn read_u32_unchecked(input: &[u8], at: usize) -> u32 {
    debug_assert!(at + 4 <= input.len());
    // SAFETY: the caller guarantees the 4 bytes are in bounds; no alignment is needed.
    u32::from_le(unsafe { input.as_ptr().add(at).cast::<u32>().read_unaligned() })
}

/// How far the bytes at `earlier` and `later` agree (`earlier < later`), given that the
/// first `known` do, up to the end of the input. Compares 64 bytes a step (zero runs,
/// most of a page delta, give long matches), then words, then bytes.
#[inline(always)]
fn match_len(input: &[u8], earlier: usize, later: usize, known: usize) -> usize {
    let n = input.len();
    let mut len = known;
    debug_assert!(earlier < later);
    let p = input.as_ptr();
    while later + len + 64 <= n {
        // SAFETY: `later + len + 64 <= n` and `earlier < later`: both blocks lie inside
        // `input`.
        let equal = unsafe { equal_mask64(p.add(earlier + len), p.add(later + len)) };
        if equal != u64::MAX {
            return len + (!equal).trailing_zeros() as usize;
        }
        len += 64;
    }
    while later + len + 8 <= n {
        // SAFETY: `later + len + 8 <= n` and `earlier < later`: both words lie inside
        // `input`; `read_unaligned` needs no alignment.
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
    while later + len < n && input[earlier + len] == input[later + len] {
        len += 1;
    }
    len
}

/// Bit `i` set when byte `i` of the 64 at `a` equals byte `i` of the 64 at `b`.
///
/// # Safety
/// Both 64-byte ranges must be readable.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) unsafe fn equal_mask64(a: *const u8, b: *const u8) -> u64 {
    use std::arch::x86_64::{__m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8};
    // SSE2, which every x86-64 processor has: four 16-byte compares, one bit per byte.
    let mut mask = 0u64;
    for k in 0..4 {
        // SAFETY: the caller guarantees 64 readable bytes at each; unaligned loads.
        let (x, y) = unsafe {
            (
                _mm_loadu_si128(a.add(16 * k).cast::<__m128i>()),
                _mm_loadu_si128(b.add(16 * k).cast::<__m128i>()),
            )
        };
        // SAFETY: SSE2 is part of the x86-64 baseline.
        let bits = unsafe { _mm_movemask_epi8(_mm_cmpeq_epi8(x, y)) } as u16;
        mask |= u64::from(bits) << (16 * k);
    }
    mask
}

/// Bit `i` set when byte `i` of the 64 at `a` equals byte `i` of the 64 at `b`.
///
/// # Safety
/// Both 64-byte ranges must be readable.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(crate) unsafe fn equal_mask64(a: *const u8, b: *const u8) -> u64 {
    let mut mask = 0u64;
    for k in 0..64 {
        // SAFETY: the caller guarantees 64 readable bytes at each.
        let same = unsafe { *a.add(k) == *b.add(k) };
        mask |= u64::from(same) << k;
    }
    mask
}

#[inline(always)]
fn hash(key: u32) -> usize {
    (key.wrapping_mul(HASH_MUL) >> (32 - HASH_BITS)) as usize
}

/// Bytes an instruction may write past its end: literal runs of up to 32 bytes are
/// copied as two 16-byte blocks, and a length extension of up to 16 zero bytes is written
/// as one 16-byte block; the excess is overwritten by what follows or left past the end.
const SINK_SLACK: usize = 32;

/// Length extensions (zero bytes worth 255 each, then the remainder) of at most this many
/// zero bytes are written without a loop; a 4 KiB page's longest has 16.
const EXTENSION_BLOCK: usize = 16;

/// The compressed stream being written into a `Vec`'s buffer: `at` bytes are written, the
/// `Vec`'s length is set once, at the end. Each instruction first makes room for its
/// largest size, so the writes themselves need no checks.
///
/// Where the instruction's form depends on a length, the bytes of every form are written
/// and the length chooses how many count (conditional moves rather than branches: a
/// page delta alternates literal runs and matches of every size, so such branches were
/// mispredicted about half the time).
struct Sink<'a> {
    out: &'a mut Vec<u8>,
    at: usize,
}

impl<'a> Sink<'a> {
    fn new(out: &'a mut Vec<u8>, expected: usize) -> Self {
        out.clear();
        out.reserve(expected + SINK_SLACK);
        Sink { out, at: 0 }
    }

    /// Makes room for `bytes` more bytes after the `at` written.
    #[inline(always)]
    fn room(&mut self, bytes: usize) {
        if self.out.capacity() - self.at < bytes {
            self.grow(bytes);
        }
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self, bytes: usize) {
        // SAFETY: the first `at` bytes of the buffer are written (initialised).
        unsafe { self.out.set_len(self.at) };
        self.out.reserve(bytes);
        // SAFETY: the length goes back to zero, which is always valid.
        unsafe { self.out.set_len(0) };
    }

    /// Writes `b` at `at + offset` without counting it.
    #[inline(always)]
    fn put(&mut self, offset: usize, b: u8) {
        debug_assert!(self.at + offset < self.out.capacity());
        // SAFETY: `room` reserved every byte of the instruction being written.
        unsafe { self.out.as_mut_ptr().add(self.at + offset).write(b) };
    }

    #[inline(always)]
    fn byte(&mut self, b: u8) {
        self.put(0, b);
        self.at += 1;
    }

    /// Writes the length extension of `value` (at least 1) at `at + offset` without
    /// counting it; returns its size. `room` must have reserved `offset` bytes plus
    /// `value / 255 + EXTENSION_BLOCK + 1`.
    #[inline(always)]
    fn extension_at(&mut self, offset: usize, value: usize) -> usize {
        // `zeros` zero bytes worth 255 each, then the remainder, 1–255: as the loop
        // `while value > 255 { push(0); value -= 255 }; push(value)` writes it.
        let zeros = (value - 1) / 255;
        let last = (value - 255 * zeros) as u8;
        if zeros <= EXTENSION_BLOCK {
            // SAFETY: `room` reserved `offset + EXTENSION_BLOCK + 1` bytes after `at`.
            unsafe {
                let dst = self.out.as_mut_ptr().add(self.at + offset);
                std::ptr::write_bytes(dst, 0, EXTENSION_BLOCK);
            }
        } else {
            for k in 0..zeros {
                self.put(offset + k, 0);
            }
        }
        self.put(offset + zeros, last);
        zeros + 1
    }

    /// Appends a length too large for an opcode's field (see [`Sink::extension_at`]).
    #[inline(always)]
    fn extension(&mut self, value: usize) {
        self.at += self.extension_at(0, value);
    }

    /// Appends the literal run `input[start..end]`. At the start of the stream (nothing
    /// written yet) a run of up to 238 has the first byte's own form; otherwise the
    /// previous instruction was a match, whose `SS` bits (in the byte two before its end)
    /// carry runs of 1–3, a run of 4–18 has one opcode byte and a longer one an opcode
    /// and a length extension.
    #[inline(always)]
    fn literals(&mut self, input: &[u8], start: usize, end: usize) {
        let n = end - start;
        // Header (at most 2 + n / 255 bytes, written as up to 2 + EXTENSION_BLOCK), the
        // literals, and a block copy's excess.
        self.room(n + n / 255 + 2 + EXTENSION_BLOCK + SINK_SLACK);
        let header = if self.at == 0 {
            if n == 0 {
                return;
            }
            if n <= 238 {
                self.put(0, 17 + n as u8);
                1
            } else {
                self.put(0, 0);
                1 + self.extension_at(1, n - 18)
            }
        } else {
            // Every form written, the run's length choosing: 0–3 go into the previous
            // match's `SS` bits (0 changes nothing), 4–18 take one opcode byte `n - 3`,
            // longer ones an opcode 0 and the extension of `n - 18`.
            let ss = if n <= 3 { n as u8 } else { 0 };
            // SAFETY: not at the start, so the previous match's opcode and at least one
            // more byte were written: `at >= 2`.
            unsafe { *self.out.as_mut_ptr().add(self.at - 2) |= ss };
            self.put(0, if n <= 18 { n.wrapping_sub(3) as u8 } else { 0 });
            let extension = self.extension_at(1, n.saturating_sub(18).max(1));
            if n <= 3 {
                0
            } else if n <= 18 {
                1
            } else {
                1 + extension
            }
        };
        self.at += header;
        debug_assert!(start <= end && end <= input.len());
        // A pointer into the whole input (not the sub-slice): the 32-byte copy below may
        // read past `end`, still inside `input`.
        // SAFETY: `start <= input.len()`.
        let src = unsafe { input.as_ptr().add(start) };
        // SAFETY: `room` reserved `n + SINK_SLACK` bytes after the header; the source is
        // `input[start..end]`, read as two 16-byte blocks only when 32 bytes from `start`
        // lie inside `input`.
        unsafe {
            let dst = self.out.as_mut_ptr().add(self.at);
            if n <= 32 && start + 32 <= input.len() {
                std::ptr::copy_nonoverlapping(src, dst, 16);
                std::ptr::copy_nonoverlapping(src.add(16), dst.add(16), 16);
            } else {
                std::ptr::copy_nonoverlapping(src, dst, n);
            }
        }
        self.at += n;
    }

    /// Appends a match of `len` (≥ 3) bytes `distance` (1–49151) back, its `SS` bits
    /// zero. The shortest form the length and distance fit.
    #[inline(always)]
    fn matched(&mut self, len: usize, distance: usize) {
        // Opcode, length extension (as a block), two distance bytes.
        self.room(len / 255 + EXTENSION_BLOCK + 4);
        if len <= M2_MAX_LEN && distance <= M2_MAX_DISTANCE {
            let d = distance - 1;
            self.byte((((len - 1) << 5) | ((d & 7) << 2)) as u8);
            self.byte((d >> 3) as u8);
            return;
        }
        let word = if distance <= M3_MAX_DISTANCE {
            // Both forms written: a length up to 33 in the opcode, a longer one as the
            // extension of `len - 33` after an opcode with a zero length field.
            let short = len <= M3_MAX_LEN;
            self.put(0, 0x20 | if short { (len - 2) as u8 } else { 0 });
            let extension = self.extension_at(1, len.saturating_sub(M3_MAX_LEN).max(1));
            self.at += 1 + if short { 0 } else { extension };
            (distance - 1) << 2
        } else {
            let d = distance - M3_MAX_DISTANCE;
            let high = ((d >> 11) & 8) as u8;
            if len <= M4_MAX_LEN {
                self.byte(0x10 | high | (len - 2) as u8);
            } else {
                self.byte(0x10 | high);
                self.extension(len - M4_MAX_LEN);
            }
            (d & 0x3fff) << 2
        };
        self.byte(word as u8);
        self.byte((word >> 8) as u8);
    }

    /// Appends the end marker and sets the `Vec`'s length.
    fn finish(mut self) {
        self.room(END_MARKER.len());
        for b in END_MARKER {
            self.byte(b);
        }
        // SAFETY: the first `at` bytes are written, and `room` kept them in capacity.
        unsafe { self.out.set_len(self.at) };
    }
}

impl Lzo1x1 {
    /// Starts the next input at `base` in the 32-bit table, cleared, which every input
    /// then uses (tests of the 32-bit wrap).
    #[cfg(test)]
    pub(crate) fn set_base_for_test(&mut self, base: u32) {
        self.wide.get_or_insert_with(zeroed_table).fill(0);
        self.wide_base = base;
        self.narrow_below = 0;
    }

    /// Starts the next input at `base` in the 16-bit table, cleared (tests of its wrap).
    #[cfg(test)]
    pub(crate) fn set_narrow_base_for_test(&mut self, base: u16) {
        self.narrow.fill(0);
        self.narrow_base = base;
    }

    /// Compresses `input` into `out` (replacing its contents); returns the length.
    pub fn compress_into(&mut self, input: &[u8], out: &mut Vec<u8>) -> usize {
        let n = input.len();
        let mut sink = Sink::new(out, max_compressed_len(n));
        if n < self.narrow_below {
            let mut base = u32::from(self.narrow_base);
            if n <= M4_MAX_DISTANCE + 1 {
                // Every distance within the input fits the longest match form.
                encode::<u16, false>(&mut self.narrow, &mut base, input, &mut sink);
            } else {
                encode::<u16, true>(&mut self.narrow, &mut base, input, &mut sink);
            }
            self.narrow_base = base as u16;
        } else {
            let table = self.wide.get_or_insert_with(zeroed_table);
            encode::<u32, true>(table, &mut self.wide_base, input, &mut sink);
        }
        sink.finish();
        out.len()
    }
}

/// The greedy pass over `input` with `table`, whose entries are `*base + position` for
/// this input and stale below `*base`; moves `*base` past the input (clearing the table
/// when it wraps). `FAR`: whether the input is long enough for a candidate to lie beyond
/// the longest match distance.
#[inline(always)]
fn encode<S: Slot, const FAR: bool>(
    table: &mut [S; HASH_SIZE],
    base: &mut u32,
    input: &[u8],
    out: &mut Sink<'_>,
) {
    let n = input.len();
    // Positions are stored as `base + position` in `S`: start over (clear the table)
    // when this input would not fit above the current base.
    let room = (S::MAX - *base) as usize;
    if n >= room {
        table.fill(S::default());
        *base = 1;
    }
    let b = *base;
    // Positions from here on cannot be stored (32-bit table: inputs over 4 GiB): they
    // stay literals.
    let storable = (S::MAX - b) as usize;

    let mut literal_start = 0;
    if n >= MIN_INPUT_FOR_MATCHES {
        let mut ip = 0;
        // A 4-byte key must be readable at every probed position.
        let last_probe = n - MIN_MATCH;
        'probe: while ip <= last_probe {
            // No match: step faster the longer the current literal run (LZO's skip
            // heuristic for incompressible data), `1 + (ip - literal_start) / 32`. The
            // step is constant up to the next multiple of 32 past `literal_start`, so
            // the inner loop adds a constant: the position's dependency chain is then
            // one addition per probe instead of a subtraction, a shift and two additions.
            let run = ip - literal_start;
            let step = 1 + (run >> 5);
            let segment_end = (literal_start + (run | 31) + 1).min(last_probe + 1);
            loop {
                // SAFETY: `ip <= last_probe = n - 4`.
                let key = unsafe { read_u32_unchecked(input, ip) };
                let slot = hash(key);
                let stored = table[slot].value();
                if S::STORES_ALL || ip < storable {
                    table[slot] = S::pack(b + ip as u32);
                }
                // Entries of earlier inputs (and cleared ones) lie below `base`, those of
                // this input at or above it: one comparison tells them apart, and an entry
                // of this input holds an earlier probe's position (it is read before this
                // probe's store).
                let candidate = stored.wrapping_sub(b) as usize;
                let distance = ip.wrapping_sub(candidate);
                if stored >= b
                    // Always so (see above), but tested: the read below relies on it, and
                    // this runs only for entries of this input, a few per page.
                    && candidate < ip
                    && (!FAR || distance <= M4_MAX_DISTANCE)
                    // SAFETY: `candidate < ip <= n - 4`.
                    && unsafe { read_u32_unchecked(input, candidate) } == key
                {
                    let len = match_len(input, candidate, ip, MIN_MATCH);
                    out.literals(input, literal_start, ip);
                    out.matched(len, distance);
                    ip += len;
                    literal_start = ip;
                    continue 'probe;
                }
                ip += step;
                if ip >= segment_end {
                    continue 'probe;
                }
            }
        }
    }
    out.literals(input, literal_start, n);
    *base = match u32::try_from(n)
        .ok()
        .and_then(|n| b.checked_add(n))
        .and_then(|b| b.checked_add(1))
        .filter(|&next| next <= S::MAX)
    {
        Some(next) => next,
        None => {
            table.fill(S::default());
            1
        }
    };
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
