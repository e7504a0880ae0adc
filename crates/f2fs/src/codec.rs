//! Little-endian field cursors. Every on-disk structure is encoded and decoded field by
//! field through these, in declaration order, so a layout is readable straight from the
//! code and no structure is ever reinterpreted from raw memory.
//!
//! Decoders only ever run over buffers whose length the caller has fixed (a 4 KiB block or
//! a slice of one), and every read is bounds-checked: running past the end yields zeros
//! and marks the reader as overrun, which the caller turns into a typed error. Corrupt
//! images therefore can never make a decoder panic.

use crate::consts::BLOCK_SIZE;

/// One 4 KiB block.
pub type Block = [u8; BLOCK_SIZE];

/// A zeroed block on the heap (blocks are too large to pass around on the stack freely).
pub fn zero_block() -> Box<Block> {
    Box::new([0u8; BLOCK_SIZE])
}

/// Sequential little-endian reader.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    overrun: bool,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader {
            buf,
            pos: 0,
            overrun: false,
        }
    }

    /// Starts reading at `pos` bytes into `buf`.
    pub fn at(buf: &'a [u8], pos: usize) -> Self {
        Reader {
            buf,
            pos,
            overrun: false,
        }
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    /// True when some read ran past the end of the buffer.
    pub fn overrun(&self) -> bool {
        self.overrun
    }

    /// The next `n` bytes, or zeros (and the overrun mark) past the end.
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        const ZEROS: [u8; BLOCK_SIZE] = [0; BLOCK_SIZE];
        let end = self.pos.saturating_add(n);
        match self.buf.get(self.pos..end) {
            Some(slice) => {
                self.pos = end;
                slice
            }
            None => {
                self.overrun = true;
                self.pos = self.buf.len();
                &ZEROS[..n.min(BLOCK_SIZE)]
            }
        }
    }

    fn array<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        let src = self.bytes(N);
        let len = src.len().min(N);
        out[..len].copy_from_slice(&src[..len]);
        out
    }

    pub fn u8(&mut self) -> u8 {
        self.array::<1>()[0]
    }

    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.array())
    }

    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.array())
    }

    pub fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.array())
    }

    pub fn vec(&mut self, n: usize) -> Vec<u8> {
        let mut out = self.bytes(n).to_vec();
        out.resize(n, 0);
        out
    }

    pub fn u32s(&mut self, n: usize) -> Vec<u32> {
        // One bounds check for the run (zeros past the end, as `u32` gives).
        let mut out: Vec<u32> = self
            .bytes(4 * n)
            .chunks_exact(4)
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
            .collect();
        out.resize(n, 0);
        out
    }

    pub fn fixed<const N: usize>(&mut self) -> [u8; N] {
        self.array()
    }
}

/// Sequential little-endian writer over a caller-sized buffer. Writes past the end are
/// dropped and marked, so an encoder bug shows up in tests (`assert!(!w.overrun())`)
/// instead of corrupting a neighbouring field.
pub struct Writer<'a> {
    buf: &'a mut [u8],
    pos: usize,
    overrun: bool,
}

impl<'a> Writer<'a> {
    pub fn new(buf: &'a mut [u8]) -> Self {
        Writer {
            buf,
            pos: 0,
            overrun: false,
        }
    }

    pub fn at(buf: &'a mut [u8], pos: usize) -> Self {
        Writer {
            buf,
            pos,
            overrun: false,
        }
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn overrun(&self) -> bool {
        self.overrun
    }

    /// Writes `src`, padded with zeros or cut to exactly `len` bytes.
    pub fn padded(&mut self, src: &[u8], len: usize) {
        let end = self.pos.saturating_add(len);
        match self.buf.get_mut(self.pos..end) {
            Some(dst) => {
                let n = src.len().min(len);
                dst[..n].copy_from_slice(&src[..n]);
                dst[n..].fill(0);
                self.pos = end;
            }
            None => {
                self.overrun = true;
                self.pos = self.buf.len();
            }
        }
    }

    pub fn bytes(&mut self, src: &[u8]) {
        self.padded(src, src.len());
    }

    pub fn u8(&mut self, v: u8) {
        self.bytes(&[v]);
    }

    pub fn u16(&mut self, v: u16) {
        self.bytes(&v.to_le_bytes());
    }

    pub fn u32(&mut self, v: u32) {
        self.bytes(&v.to_le_bytes());
    }

    pub fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }

    pub fn u32s(&mut self, values: &[u32], len: usize) {
        for i in 0..len {
            self.u32(values.get(i).copied().unwrap_or(0));
        }
    }
}

/// Reads a little-endian `u32` at a fixed offset (zero if out of range).
pub fn le32_at(buf: &[u8], pos: usize) -> u32 {
    Reader::at(buf, pos).u32()
}

/// Writes a little-endian `u32` at a fixed offset (ignored if out of range).
pub fn put_le32_at(buf: &mut [u8], pos: usize, v: u32) {
    Writer::at(buf, pos).u32(v);
}

/// Bit `nr` of a bitmap in F2FS's "MSB first" order (`f2fs_test_bit`): bit 0 is the top
/// bit of byte 0. SIT validity maps and the checkpoint version bitmaps use this order.
pub fn test_bit_msb(map: &[u8], nr: usize) -> bool {
    map.get(nr / 8).is_some_and(|b| b & (0x80 >> (nr % 8)) != 0)
}

/// Sets bit `nr` in "MSB first" order (`f2fs_set_bit`).
pub fn set_bit_msb(map: &mut [u8], nr: usize) {
    if let Some(b) = map.get_mut(nr / 8) {
        *b |= 0x80 >> (nr % 8);
    }
}

/// Bit `nr` in little-endian order (`test_bit_le`): dentry bitmaps and NAT bits use it.
pub fn test_bit_le(map: &[u8], nr: usize) -> bool {
    map.get(nr / 8).is_some_and(|b| b & (1 << (nr % 8)) != 0)
}

/// Sets bit `nr` in little-endian order (`test_and_set_bit_le`).
pub fn set_bit_le(map: &mut [u8], nr: usize) {
    if let Some(b) = map.get_mut(nr / 8) {
        *b |= 1 << (nr % 8);
    }
}

/// Clears bit `nr` in little-endian order (`test_and_clear_bit_le`).
pub fn clear_bit_le(map: &mut [u8], nr: usize) {
    if let Some(b) = map.get_mut(nr / 8) {
        *b &= !(1 << (nr % 8));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reader_never_panics_past_the_end() {
        let buf = [1u8, 2, 3];
        let mut r = Reader::new(&buf);
        assert_eq!(r.u16(), 0x0201);
        assert!(!r.overrun());
        assert_eq!(r.u32(), 0, "a read that does not fit yields zeros");
        assert!(r.overrun());
        assert_eq!(r.u64(), 0);
    }

    #[test]
    fn writer_pads_and_marks_overrun() {
        let mut buf = [0xffu8; 6];
        let mut w = Writer::new(&mut buf);
        w.padded(b"ab", 4);
        w.u32(7);
        assert!(w.overrun());
        assert_eq!(&buf[..4], b"ab\0\0");
    }

    #[test]
    fn bit_orders() {
        let mut map = [0u8; 2];
        set_bit_msb(&mut map, 0);
        set_bit_msb(&mut map, 9);
        assert_eq!(map, [0x80, 0x40]);
        assert!(test_bit_msb(&map, 9) && !test_bit_msb(&map, 8));
        let mut le = [0u8; 2];
        set_bit_le(&mut le, 0);
        set_bit_le(&mut le, 9);
        assert_eq!(le, [0x01, 0x02]);
        clear_bit_le(&mut le, 0);
        assert!(!test_bit_le(&le, 0) && test_bit_le(&le, 9));
    }
}
