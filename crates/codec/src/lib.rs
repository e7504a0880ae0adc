//! Page compressors for the storage stack: LZ4, LZO1X-1, zstd, zlib and a pass-through.
//!
//! Every layer that compresses (the FTL's in-device compression after the LDC paper, F2FS
//! cluster compression, MedFS's compressed baseline) works on 4 KiB pages, millions of times
//! per run. So a [`Codec`] owns its working state (hash tables, library contexts) and writes
//! into a caller's `Vec`: once the buffers have grown to a page's size, compressing or
//! decompressing a page allocates nothing. Build one with [`CodecKind::build`] (or
//! [`new_codec`]) from a configuration string such as `lz4`, `lzo1x-1`, `zstd:3` or
//! `zlib:6`.
//!
//! | kind | implementation | why it is here |
//! |---|---|---|
//! | `lz4` | `lz4_flex` block format (no frame) | the fast baseline of the content model |
//! | `lzo1x-1` | [`Lzo1x1`], written in this crate | what LDC (Ji et al., TECS 2017) and Linux zram/UBIFS use; the paper's Cr figures are LZO ratios |
//! | (MedFS's deltas) | [`Lzo1x1Linux`], written in this crate | the same format as Linux's `lib/lzo` writes it, byte for byte (`docs/codecs.md`) |
//! | `zstd:L` | the `zstd` crate's bulk API, one reused context | the modern ratio/speed trade-off |
//! | `zlib:L` | `flate2` on the pure-Rust `zlib-rs` backend | F2FS and classic deflate |
//! | `none` | a copy | the uncompressed baseline |
//!
//! Decompressors are *safe* in the LZO sense: every read of the compressed input and every
//! write and back-reference into the output is bounds-checked, and any malformed input ends
//! in a [`CodecError`] naming the codec (and, for LZO1X, the byte offset; the library
//! decoders give their own message), never a panic (a proptest feeds arbitrary bytes to
//! each of them). A decompressor is told the exact uncompressed length, as the FTL's
//! mapping knows it, and treats anything else as corruption.
//!
//! # The LZO1X bitstream
//!
//! The project is MIT/Apache-2.0, so it cannot link the GPL LZO library or its Rust ports.
//! [`Lzo1x1`] is written here from the stream format, and a test checks it both ways against
//! the reference library (through `python3-lzo`). The format, as this crate reads and writes
//! it:
//!
//! A stream is a sequence of *instructions*, each opening with one opcode byte, and ends
//! with an end marker. An instruction is either a *literal run* (bytes copied from the
//! stream) or a *match* (bytes copied from earlier output, `distance` bytes back, possibly
//! overlapping the bytes being written so that short patterns repeat). There is no header,
//! no checksum and no stored length: the container (here, the FTL's mapping) records the
//! uncompressed size.
//!
//! Literals are cheap to interleave with matches: the two low bits of every match
//! instruction (the `SS` bits below) give the number of literals, 0 to 3, that follow it
//! directly, with no opcode of their own. Longer runs of literals get an opcode. Hence the
//! decoder keeps a *state*: how many literals the previous instruction copied — none, 1 to 3
//! (from the `SS` bits), or 4 and more (a literal-run instruction). Opcodes 16–255 mean the
//! same thing in every state; opcodes 0–15 change meaning with it.
//!
//! | opcode (bits) | state | meaning |
//! |---|---|---|
//! | `0000LLLL` | none | literal run of `L + 3` bytes (4–18); `L = 0`: long run, `18 + ext` bytes |
//! | `0000DDSS` + `H` | 1–3 | 2-byte match, distance `1 + D + 4·H` (1–1024) |
//! | `0000DDSS` + `H` | ≥ 4 | 3-byte match, distance `2049 + D + 4·H` (2049–3072) |
//! | `0001BLLL` [ext] `lo hi` | any | match of `L + 2` bytes (`L = 0`: `9 + ext`), distance `16384 + 16384·B + D` (16385–49151) |
//! | `001LLLLL` [ext] `lo hi` | any | match of `L + 2` bytes (`L = 0`: `33 + ext`), distance `1 + D` (1–16384) |
//! | `LLLDDDSS` + `H` (LLL ≥ 2) | any | short match of `LLL + 1` bytes (3–8), distance `1 + D + 8·H` (1–2048) |
//!
//! * `H` is the byte after the opcode. For the two long forms, `lo hi` is a little-endian
//!   16-bit word whose two low bits are `SS` and whose upper 14 bits are `D`.
//! * `ext` encodes a length too large for the opcode's field: a run of zero bytes, each
//!   worth 255, then one non-zero byte worth its value. A length field of 0 announces it.
//! * After any match, `SS` (0–3) literals follow; the state becomes `SS`.
//! * The first byte of a stream has one extra form: a value `17 + n` above 17 is a literal
//!   run of `n` bytes (1–238), after which the state is `n` (capped at "4 or more"). This is
//!   how a stream that starts with 1–3 literals, which no other opcode can express, begins.
//!   A first byte of 17 or less is an ordinary instruction in state "none" (the reference
//!   encoder sometimes opens with a `0000LLLL` run instead).
//! * The end marker is the long-distance match form with `B = 0` and `D = 0` (a distance
//!   of exactly 16384, which that form never otherwise encodes: such matches use
//!   `001LLLLL`). Encoders write it as `0x11 0x00 0x00`, the only form this decoder
//!   accepts. Nothing may follow it. An empty input compresses to the end marker alone.
//!
//! The LZO1X-1 compressor is the fastest of the family's encoders: a single greedy pass
//! with a hash table of 2^14 recent positions keyed by the next four bytes, no lazy
//! matching, and a probe step that grows with the length of the current literal run (so
//! incompressible data is skipped quickly). A match takes the shortest form its length and
//! distance fit. It never emits the 2- and 3-byte `0000` matches (the decoder accepts
//! them). Its streams are not byte-identical to the reference library's, which uses the
//! same format with different heuristics; `docs/codecs.md` compares the sizes.
//!
//! # Ratios
//!
//! As in the LDC paper, a compression ratio is `compressed bytes / uncompressed bytes`
//! (LDC's `Cr`; lower is better). `examples/codec_table.rs` prints ratio and speed per codec
//! and content class; `benches/codecs.rs` measures the same with criterion;
//! `docs/codecs.md` has the figures.

pub mod cost;
mod error;
mod kind;
mod lz4;
pub mod lzo1x;
mod lzo1x_linux;
mod stored;
mod zlib;
mod zstd_codec;

pub use error::{CodecError, ParseCodecError};
pub use kind::CodecKind;
pub use lz4::Lz4;
pub use lzo1x::Lzo1x1;
pub use lzo1x_linux::Lzo1x1Linux;
pub use stored::Stored;
pub use zlib::Zlib;
pub use zstd_codec::Zstd;

/// A page compressor with its working state.
///
/// Implementations keep their scratch state (hash tables, library contexts) between calls
/// and write into the caller's buffer, so that in steady state — `out` already as large as
/// a compressed or decompressed page — a call allocates nothing. A codec is a pure function
/// of its input: the bytes it produces never depend on earlier calls.
pub trait Codec: Send {
    /// The codec's configuration name, as [`CodecKind`] parses it (`"lz4"`, `"zstd"`, ...).
    fn name(&self) -> &'static str;

    /// Compresses `input` into `out`, replacing its contents, and returns the compressed
    /// length (`out.len()`). Never fails: incompressible input comes out slightly larger.
    fn compress(&mut self, input: &[u8], out: &mut Vec<u8>) -> usize;

    /// Decompresses `input` into `out`, replacing its contents with exactly `expected_len`
    /// bytes. Corrupt input, input that decodes to any other length, and bytes after the
    /// end of the compressed data are errors; `out` is then left in an unspecified state.
    /// `out` may be grown to `expected_len` before decoding starts, so pass the length the
    /// container recorded, never one read from untrusted bytes.
    fn decompress(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        expected_len: usize,
    ) -> Result<(), CodecError>;
}

/// Builds a codec of the given kind (the same as [`CodecKind::build`]).
pub fn new_codec(kind: CodecKind) -> Result<Box<dyn Codec>, CodecError> {
    kind.build()
}

#[cfg(test)]
mod lzo1x_reference;
#[cfg(test)]
mod tests;
