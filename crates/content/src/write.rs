//! Fast, allocation-free writing of page bytes: vocabulary tokens in fixed-width slots,
//! decimal digits, SQLite varints and big-endian integers, and cheap small random draws.

use crate::hash::{mix64, GOLDEN};

/// Width of a vocabulary slot. Tokens are copied as whole slots (two 16-byte moves, no
/// length-dependent `memcpy`) and the cursor then advances by the token's true length;
/// the bytes past it are garbage that the next write overwrites.
pub(crate) const TOK_WIDTH: usize = 32;

#[derive(Clone, Copy)]
pub(crate) struct Tok {
    bytes: [u8; TOK_WIDTH],
    len: u8,
}

impl Tok {
    const EMPTY: Tok = Tok {
        bytes: [0; TOK_WIDTH],
        len: 0,
    };

    /// The token followed by one space.
    pub(crate) const fn with_space(mut self) -> Tok {
        assert!((self.len as usize) < TOK_WIDTH, "no room for a space");
        self.bytes[self.len as usize] = b' ';
        self.len += 1;
        self
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        usize::from(self.len)
    }
}

/// A token from a string; the vocabulary tables are built from these at compile time.
pub(crate) const fn tok(s: &str) -> Tok {
    let src = s.as_bytes();
    assert!(
        src.len() <= TOK_WIDTH,
        "vocabulary token longer than its slot"
    );
    let mut bytes = [0u8; TOK_WIDTH];
    let mut i = 0;
    while i < src.len() {
        bytes[i] = src[i];
        i += 1;
    }
    Tok {
        bytes,
        len: src.len() as u8,
    }
}

pub(crate) const fn toks<const N: usize>(src: [&str; N]) -> [Tok; N] {
    let mut out = [Tok::EMPTY; N];
    let mut i = 0;
    while i < N {
        out[i] = tok(src[i]);
        i += 1;
    }
    out
}

/// Like [`toks`], with ASCII letters lower-cased.
pub(crate) const fn toks_lower<const N: usize>(src: [&str; N]) -> [Tok; N] {
    let mut out = toks(src);
    let mut i = 0;
    while i < N {
        let mut j = 0;
        while j < TOK_WIDTH {
            out[i].bytes[j] = out[i].bytes[j].to_ascii_lowercase();
            j += 1;
        }
        i += 1;
    }
    out
}

/// Two decimal digits per entry, so numbers are written two digits per step.
static DIGIT_PAIRS: [[u8; 2]; 100] = {
    let mut out = [[0u8; 2]; 100];
    let mut i = 0;
    while i < 100 {
        out[i] = [b'0' + (i / 10) as u8, b'0' + (i % 10) as u8];
        i += 1;
    }
    out
};

/// A cursor over a page. Fixed-size block writes store up to a block's worth of bytes
/// past the value; generators write units in ascending order so a later write covers
/// them, and at the end of the buffer a block shrinks to the exact bytes that fit. Bytes
/// that fall outside the buffer are dropped (the cursor still advances), so no input can
/// make generation panic.
pub(crate) struct Writer<'a> {
    buf: &'a mut [u8],
    pub(crate) pos: usize,
}

impl<'a> Writer<'a> {
    pub(crate) fn new(buf: &'a mut [u8], pos: usize) -> Self {
        Writer { buf, pos }
    }

    #[inline]
    pub(crate) fn tok(&mut self, t: &Tok) {
        self.slot(&t.bytes, t.len());
    }

    /// The first `len` bytes of `src`, copied as a whole fixed-size block when it fits
    /// (a few vector moves instead of a variable-length `memcpy`).
    #[inline]
    pub(crate) fn slot<const N: usize>(&mut self, src: &[u8; N], len: usize) {
        let rest = self.buf.get_mut(self.pos..).unwrap_or_default();
        // An array assignment compiles to fixed moves; `copy_from_slice` here did not.
        if let Some(dst) = rest.first_chunk_mut::<N>() {
            *dst = *src;
        } else if let Some(dst) = self.buf.get_mut(self.pos..) {
            let n = dst.len().min(len);
            dst[..n].copy_from_slice(&src[..n]);
        }
        self.pos += len;
    }

    #[inline]
    pub(crate) fn byte(&mut self, b: u8) {
        if let Some(dst) = self.buf.get_mut(self.pos) {
            *dst = b;
        }
        self.pos += 1;
    }

    #[inline]
    pub(crate) fn bytes(&mut self, src: &[u8]) {
        if let Some(dst) = self.buf.get_mut(self.pos..self.pos + src.len()) {
            dst.copy_from_slice(src);
        }
        self.pos += src.len();
    }

    /// `n` as exactly `width` decimal digits (zero-padded; higher digits are dropped).
    #[inline]
    pub(crate) fn digits(&mut self, mut n: u64, width: usize) {
        let end = self.pos + width;
        if let Some(dst) = self.buf.get_mut(self.pos..end) {
            let mut i = width;
            while i >= 2 {
                let pair = DIGIT_PAIRS[(n % 100) as usize];
                dst[i - 2..i].copy_from_slice(&pair);
                n /= 100;
                i -= 2;
            }
            if i == 1 {
                dst[0] = b'0' + (n % 10) as u8;
            }
        }
        self.pos = end;
    }

    /// `n` in decimal without leading zeros.
    #[inline]
    pub(crate) fn decimal(&mut self, n: u64) {
        self.digits(n, decimal_len(n));
    }

    /// A SQLite varint (big-endian base-128, at most 9 bytes; the 9th carries 8 bits).
    #[inline]
    pub(crate) fn varint(&mut self, v: u64) {
        // Page-level values (sizes, serial types, rowids) nearly always fit two bytes.
        match v {
            0..=0x7F => self.byte(v as u8),
            0x80..=0x3FFF => self.slot(&[(v >> 7) as u8 | 0x80, v as u8 & 0x7F], 2),
            _ => self.varint_long(v),
        }
    }

    #[cold]
    fn varint_long(&mut self, v: u64) {
        let len = varint_len(v);
        let mut tmp = [0u8; 9];
        if len == 9 {
            tmp[8] = v as u8;
            let mut rest = v >> 8;
            for b in tmp[..8].iter_mut().rev() {
                *b = (rest as u8 & 0x7F) | 0x80;
                rest >>= 7;
            }
        } else {
            let mut rest = v;
            for (i, b) in tmp[..len].iter_mut().rev().enumerate() {
                *b = (rest as u8 & 0x7F) | if i == 0 { 0 } else { 0x80 };
                rest >>= 7;
            }
        }
        self.bytes(&tmp[..len]);
    }

    /// The low `n ≤ 8` bytes of `v`, big-endian (SQLite integers). Like tokens, this
    /// stores 8 bytes (zeros after the value) and advances by `n`.
    #[inline]
    pub(crate) fn be(&mut self, v: u64, n: usize) {
        let word = v.checked_shl(64 - 8 * n as u32).unwrap_or(0);
        self.word8(word.to_be_bytes(), n);
    }

    /// The low `n ≤ 8` bytes of `v`, little-endian (Linux on-disk structures); stores 8
    /// bytes (zeros after the value) and advances by `n`.
    #[inline]
    pub(crate) fn le(&mut self, v: u64, n: usize) {
        let word = v & u64::MAX.checked_shr(64 - 8 * n as u32).unwrap_or(0);
        self.word8(word.to_le_bytes(), n);
    }

    #[inline]
    fn word8(&mut self, bytes: [u8; 8], n: usize) {
        self.slot(&bytes, n);
    }

    /// `width ≤ 8` uniform random decimal digits from the bytes of `r` (each byte scaled
    /// onto 0–9 in parallel), for numbers whose value nothing reads: phone numbers, ids.
    #[inline]
    pub(crate) fn random_digits(&mut self, r: u64, width: usize) {
        const LANES: u64 = 0x00FF_00FF_00FF_00FF;
        // Each 16-bit lane holds one byte b; (b·10) >> 8 is its digit, with no carry
        // between lanes since 255·10 < 2^16.
        let even = (((r & LANES) * 10) >> 8) & LANES;
        let odd = ((((r >> 8) & LANES) * 10) >> 8) & LANES;
        let ascii = (even | odd << 8) + 0x3030_3030_3030_3030;
        self.slot(&ascii.to_le_bytes(), width.min(8));
    }
}

pub(crate) fn decimal_len(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
}

/// Bytes of a SQLite varint for `v`.
pub(crate) fn varint_len(v: u64) -> usize {
    match v {
        0..=0x7F => 1,
        0x80..=0x3FFF => 2,
        _ if v >> 56 != 0 => 9,
        _ => (64 - v.leading_zeros() as usize).div_ceil(7),
    }
}

/// The random draws of one unit: a SplitMix64 stream (the generator that seeds
/// `flashstack_sim::Rng`) cut into 16-bit fields.
///
/// A unit draws a few dozen small values, so seeding cost dominates: SplitMix starts from
/// the unit's hash as is, where xoshiro256** would first need four SplitMix rounds. Bulk
/// page-wide streams (media, code) use `flashstack_sim::Rng` itself.
pub(crate) struct Draw {
    state: u64,
    pool: u64,
    left: u32,
}

impl Draw {
    pub(crate) fn new(seed: u64) -> Self {
        Draw {
            state: seed,
            pool: 0,
            left: 0,
        }
    }

    #[inline]
    fn bits16(&mut self) -> u32 {
        if self.left == 0 {
            self.pool = self.u64();
            self.left = 4;
        }
        let v = (self.pool & 0xFFFF) as u32;
        self.pool >>= 16;
        self.left -= 1;
        v
    }

    /// Uniform in `0..n` for `n ≤ 65536` (16-bit multiply-shift; the bias is irrelevant
    /// for synthetic content).
    #[inline]
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.bits16() as usize * n) >> 16
    }

    /// True with probability `percent`/100.
    #[inline]
    pub(crate) fn percent(&mut self, percent: u32) -> bool {
        self.bits16() * 100 < percent << 16
    }

    /// Uniform in `lo..=hi` for spans up to 65536.
    #[inline]
    pub(crate) fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    /// A full 64-bit draw.
    #[inline]
    pub(crate) fn u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN);
        mix64(self.state)
    }

    /// A token from `table`.
    #[inline]
    pub(crate) fn pick<'t>(&mut self, table: &'t [Tok]) -> &'t Tok {
        &table[self.below(table.len())]
    }

    /// A token with a skewed (roughly Zipf-like) choice: the first eighth of the table is
    /// drawn half the time, as a few words dominate real text.
    #[inline]
    pub(crate) fn pick_skewed<'t>(&mut self, table: &'t [Tok]) -> &'t Tok {
        let r = self.bits16() as usize;
        let n = if r & 1 == 0 {
            table.len().div_ceil(8)
        } else {
            table.len()
        };
        &table[((r >> 1) * n) >> 15]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(f: impl FnOnce(&mut Writer)) -> Vec<u8> {
        let mut buf = [0u8; 64];
        let mut w = Writer::new(&mut buf, 0);
        f(&mut w);
        let n = w.pos;
        buf[..n].to_vec()
    }

    #[test]
    fn varints_match_sqlite_encoding() {
        assert_eq!(written(|w| w.varint(0x7F)), [0x7F]);
        assert_eq!(written(|w| w.varint(0x80)), [0x81, 0x00]);
        assert_eq!(written(|w| w.varint(300)), [0x82, 0x2C]);
        assert_eq!(written(|w| w.varint(0x3FFF)), [0xFF, 0x7F]);
        assert_eq!(written(|w| w.varint(0x4000)), [0x81, 0x80, 0x00]);
        let nine = written(|w| w.varint(u64::MAX));
        assert_eq!(nine, [0xFF; 9]);
        for v in [
            0,
            1,
            127,
            128,
            16383,
            16384,
            1 << 40,
            (1 << 56) - 1,
            1 << 56,
        ] {
            assert_eq!(written(|w| w.varint(v)).len(), varint_len(v), "{v}");
        }
    }

    #[test]
    fn digits_and_tokens() {
        assert_eq!(written(|w| w.digits(42, 5)), b"00042");
        assert_eq!(written(|w| w.decimal(1_718_369_696_789)), b"1718369696789");
        assert_eq!(written(|w| w.decimal(0)), b"0");
        assert_eq!(written(|w| w.be(0x0102_0304, 3)), [2, 3, 4]);
        assert_eq!(written(|w| w.le(0x0102_0304, 3)), [4, 3, 2]);
        assert_eq!(written(|w| w.be(0xFFFF_FFFF_FFFF_FFFF, 0)), [0u8; 0]);
        assert_eq!(written(|w| w.le(u64::MAX, 8)), [0xFF; 8]);
        assert_eq!(written(|w| w.decimal(7)), b"7");
        let t = tok("hello");
        assert_eq!(written(|w| w.tok(&t)), b"hello");
        assert_eq!(&t.bytes[..t.len()], b"hello");
    }

    #[test]
    fn fixed_width_writes_leave_zeros_after_the_value() {
        let mut buf = [0xAAu8; 16];
        let mut w = Writer::new(&mut buf, 0);
        w.le(u64::MAX, 2);
        w.be(0x0102, 2);
        assert_eq!(w.pos, 4);
        assert_eq!(buf[..12], [0xFF, 0xFF, 1, 2, 0, 0, 0, 0, 0, 0, 0xAA, 0xAA]);
        let mut tail = [0u8; 5];
        let mut w = Writer::new(&mut tail, 2);
        w.be(0x0A0B_0C0D, 4);
        assert_eq!(tail, [0, 0, 0x0A, 0x0B, 0x0C]);
    }

    #[test]
    fn random_digits_are_digits_and_cover_0_to_9() {
        let mut seen = [false; 10];
        let mut d = Draw::new(9);
        for _ in 0..200 {
            let out = written(|w| w.random_digits(d.u64(), 8));
            assert_eq!(out.len(), 8);
            for b in out {
                assert!(b.is_ascii_digit());
                seen[usize::from(b - b'0')] = true;
            }
        }
        assert!(seen.iter().all(|&s| s));
        assert_eq!(written(|w| w.random_digits(0, 3)), b"000");
    }

    #[test]
    fn writes_past_the_end_are_dropped_not_panics() {
        let mut buf = [0u8; 8];
        let mut w = Writer::new(&mut buf, 6);
        w.tok(&tok("abcdef"));
        w.digits(123456, 6);
        w.bytes(b"xyz");
        w.byte(1);
        assert_eq!(w.pos, 6 + 6 + 6 + 3 + 1);
    }

    #[test]
    fn draws_stay_in_range() {
        let mut d = Draw::new(3);
        let table = toks(["a", "b", "c"]);
        for _ in 0..1000 {
            assert!(d.below(7) < 7);
            let r = d.range(3, 5);
            assert!((3..=5).contains(&r));
            let _ = d.pick_skewed(&table);
        }
    }
}
