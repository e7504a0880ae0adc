//! Classes with a continuous compressibility spectrum, from the formats phones write:
//! SQLite pages carrying BLOBs, JPEG/PNG/WebP files, ARM64 ELF and dex code, and logs and
//! caches full of tokens. Each has a per-file property (BLOB share, image flatness,
//! section mix, token density) and a per-page draw around it, so LZO1X-1 ratios spread
//! over the whole 0.2–1.0 range instead of clustering per class (LDC's Fig. 2–3 bands:
//! high < 0.25, medium 0.25–0.65, low 0.65–0.95, minimal > 0.95).
//!
//! The fixed structure of a page (where BLOBs, tokens and sections sit, and what
//! incompressible bytes they hold) depends on (seed, lba) only; the structured part under
//! it (rows, text) changes with the version as its base class does, and images and code,
//! replaced whole by apps, change completely with every version.

use flashstack_sim::Rng;

use super::{exec, sqlite, text, PageCtx};
use crate::hash::hash;
use crate::PAGE_SIZE;

const LAYOUT_SALT: u64 = 0x5BEC_7A1A_70C1_F00D;
const FILE_SALT: u64 = 0xF11E_5BEC_0DD5_EED5;

/// A uniform draw in `0..1` from a key.
fn unit(key: u64, salt: u64) -> f64 {
    (hash(key, salt) >> 11) as f64 / (1u64 << 53) as f64
}

/// The per-file value `lo..hi` shaped by `power` (> 1 leans towards `lo`), plus a per-page
/// jitter of ± `jitter`, clamped to `0..=1`.
fn share(ctx: &PageCtx, lo: f64, hi: f64, power: f64, jitter: f64) -> f64 {
    let file = lo + (hi - lo) * unit(ctx.region_key, FILE_SALT).powf(power);
    let page = (unit(ctx.key, FILE_SALT) - 0.5) * 2.0 * jitter;
    (file + page).clamp(0.0, 1.0)
}

/// A generator for the page's fixed layout (independent of the version).
fn layout_rng(ctx: &PageCtx) -> Rng {
    Rng::new(hash(ctx.key ^ LAYOUT_SALT, 0))
}

/// Overwrites about `fraction` of `out[from..]` with spans of `span_lo..span_hi` bytes
/// produced by `put`, skipping spans that fall on zeroed free space (`keep_zeros`).
fn splice(
    out: &mut [u8],
    from: usize,
    fraction: f64,
    (span_lo, span_hi): (u64, u64),
    keep_zeros: bool,
    rng: &mut Rng,
    mut put: impl FnMut(&mut [u8], &mut Rng),
) {
    let mut at = from;
    while at < out.len() {
        let len = (span_lo + rng.below(span_hi - span_lo)) as usize;
        let end = (at + len).min(out.len());
        let free = keep_zeros && out[at] == 0 && out[end - 1] == 0;
        if rng.chance(fraction) && !free {
            put(&mut out[at..end], rng);
        }
        at = end;
    }
}

// ---------------------------------------------------------------------------------------
// SQLite pages with BLOBs

/// A SQLite table leaf whose rows carry BLOB columns (serialized feed stories, protobuf
/// caches, thumbnails, encrypted tokens): per file 0–85% of the cell bytes are such
/// payload (most files few), ±15% per page; free space stays zeroed.
pub(crate) fn fill_sqlite_blob(ctx: &PageCtx, out: &mut [u8]) {
    sqlite::fill_table(ctx, out);
    let blob = share(ctx, 0.0, 0.85, 1.5, 0.15);
    let mut rng = layout_rng(ctx);
    // Past the page header and the start of the cell pointer array.
    splice(out, 64, blob, (48, 480), true, &mut rng, protobuf);
}

/// Protobuf-like bytes: field tags and lengths among packed random payload.
fn protobuf(span: &mut [u8], rng: &mut Rng) {
    rng.fill_bytes(span);
    let mut i = 0;
    while i + 2 < span.len() {
        span[i] = [0x0A, 0x12, 0x1A, 0x08, 0x10, 0x22][rng.below(6) as usize];
        span[i + 1] = (rng.below(120) + 2) as u8;
        i += 2 + span[i + 1] as usize;
    }
}

// ---------------------------------------------------------------------------------------
// Images

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum ImageFormat {
    Jpeg,
    Png,
    Webp,
}

fn image_format(ctx: &PageCtx) -> ImageFormat {
    match hash(ctx.region_key, 0x1FE6) % 20 {
        0..=11 => ImageFormat::Jpeg,
        12..=14 => ImageFormat::Png,
        _ => ImageFormat::Webp,
    }
}

/// An image file's page: the header of its format on the file's first page (EXIF and
/// quantisation and Huffman tables, PNG chunks, a RIFF/VP8 header), then entropy-coded
/// data. JPEG data carries byte stuffing (0xFF 0x00) and restart markers, and a share of
/// "flat" MCUs (sky, walls, screenshots' backgrounds) that code to the same few bytes:
/// per file 0–45%, most files near 0 (photos are detailed).
pub(crate) fn fill_image(ctx: &PageCtx, out: &mut [u8]) {
    let mut rng = ctx.version_rng();
    let format = image_format(ctx);
    rng.fill_bytes(out);
    let flat = match format {
        ImageFormat::Jpeg => share(ctx, 0.0, 0.45, 3.0, 0.08),
        // Deflate and VP8 code flat areas away themselves: their output stays random.
        ImageFormat::Png | ImageFormat::Webp => share(ctx, 0.0, 0.06, 3.0, 0.02),
    };
    let pattern = hash(ctx.region_key, 0xF1A7).to_le_bytes();
    let pattern_len = 2 + (ctx.region_key % 5) as usize;
    splice(out, 0, flat, (32, 400), false, &mut rng, |span, rng| {
        for (i, b) in span.iter_mut().enumerate() {
            *b = pattern[i % pattern_len];
        }
        // A coefficient now and then breaks the run.
        if span.len() > 8 {
            let at = rng.below(span.len() as u64) as usize;
            span[at] = rng.next_u64() as u8;
        }
    });
    if format == ImageFormat::Jpeg {
        jpeg_stuffing(out, ctx.region_key);
    }
    if ctx.page_in_region == 0 {
        let mut layout = layout_rng(ctx);
        let header_len = match format {
            ImageFormat::Jpeg => jpeg_header(out, &mut layout),
            ImageFormat::Png => png_header(out, &mut layout),
            ImageFormat::Webp => webp_header(out, &mut layout),
        };
        debug_assert!(header_len <= PAGE_SIZE);
    }
}

/// Entropy-coded JPEG data never holds 0xFF except as a marker: a 0xFF byte of data is
/// followed by 0x00, and restart markers (0xFFD0–D7) come every few hundred bytes.
fn jpeg_stuffing(out: &mut [u8], region_key: u64) {
    let interval = 200 + (region_key % 600) as usize;
    let mut rst = 0u8;
    for i in 0..out.len() - 1 {
        if out[i] == 0xFF {
            out[i + 1] = 0x00;
        } else if i % interval == interval - 1 {
            out[i] = 0xFF;
            out[i + 1] = 0xD0 + rst;
            rst = (rst + 1) & 7;
        }
    }
}

/// Writes `bytes` at `at`, returning the position after them (truncated at the page end).
fn put(out: &mut [u8], at: usize, bytes: &[u8]) -> usize {
    let n = bytes.len().min(out.len().saturating_sub(at));
    out[at..at + n].copy_from_slice(&bytes[..n]);
    at + n
}

/// SOI, APP1 with an EXIF TIFF directory (12-byte entries, camera strings, zero padding),
/// two quantisation tables, SOF0, four Huffman tables and SOS. Returns its length.
fn jpeg_header(out: &mut [u8], rng: &mut Rng) -> usize {
    let mut at = put(out, 0, &[0xFF, 0xD8, 0xFF, 0xE1, 0x06, 0x00]);
    at = put(out, at, b"Exif\0\0II*\0\x08\0\0\0");
    let entries = 10 + rng.below(12) as usize;
    at = put(out, at, &(entries as u16).to_le_bytes());
    for tag in 0..entries {
        // tag, type, count, value/offset
        let mut e = [0u8; 12];
        e[..2].copy_from_slice(&(0x010F + tag as u16 * 3).to_le_bytes());
        e[2] = [2u8, 3, 4, 5][rng.below(4) as usize];
        e[4] = 1 + rng.below(20) as u8;
        e[8..12].copy_from_slice(&((rng.below(4096) as u32) & !1).to_le_bytes());
        at = put(out, at, &e);
    }
    at = put(out, at, b"LGE\0Nexus 5\0HDR+ 1.0.1\0");
    at = put(out, at, &[0u8; 160]);
    for table in 0..2u8 {
        at = put(out, at, &[0xFF, 0xDB, 0x00, 0x43, table]);
        // A quality-scaled table rises from the DC corner.
        let q = 2 + rng.below(6) as u8;
        for k in 0..64u8 {
            at = put(out, at, &[q + k / 3 + table * 2]);
        }
    }
    at = put(
        out,
        at,
        &[0xFF, 0xC0, 0x00, 0x11, 0x08, 0x0C, 0x30, 0x10, 0x40, 0x03],
    );
    at = put(
        out,
        at,
        &[0x01, 0x22, 0x00, 0x02, 0x11, 0x01, 0x03, 0x11, 0x01],
    );
    for (class, symbols) in [(0x00u8, 12usize), (0x10, 162), (0x01, 12), (0x11, 162)] {
        at = put(out, at, &[0xFF, 0xC4, 0x00, (19 + symbols) as u8, class]);
        let mut counts = [0u8; 16];
        let mut left = symbols;
        for c in counts.iter_mut().skip(1) {
            let n = left.min(1 + rng.below(16) as usize);
            *c = n as u8;
            left -= n;
        }
        counts[15] += left as u8;
        at = put(out, at, &counts);
        for s in 0..symbols {
            // Symbols (run, size) in their standard order.
            at = put(out, at, &[((s * 17) % 251) as u8]);
        }
    }
    put(
        out,
        at,
        &[
            0xFF, 0xDA, 0x00, 0x0C, 0x03, 0x01, 0x00, 0x02, 0x11, 0x03, 0x11, 0x00, 0x3F, 0x00,
        ],
    )
}

/// Signature, IHDR, an sRGB and a text chunk, then the IDAT chunk's zlib stream.
fn png_header(out: &mut [u8], rng: &mut Rng) -> usize {
    let mut at = put(out, 0, b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR");
    at = put(out, at, &(64 + rng.below(2000) as u32).to_be_bytes());
    at = put(out, at, &(64 + rng.below(2000) as u32).to_be_bytes());
    at = put(out, at, &[8, 6, 0, 0, 0]);
    at = put(out, at, &(rng.next_u64() as u32).to_be_bytes());
    at = put(out, at, b"\0\0\0\x01sRGB\0\xae\xce\x1c\xe9");
    at = put(out, at, b"\0\0\0\x19tEXtSoftware\0Android Skia\0");
    at = put(out, at, &(rng.next_u64() as u32).to_be_bytes());
    put(out, at, b"\0\x01\0\0IDATx\x9c")
}

/// RIFF, VP8X with an EXIF flag, then the VP8 key frame header.
fn webp_header(out: &mut [u8], rng: &mut Rng) -> usize {
    let mut at = put(out, 0, b"RIFF");
    at = put(out, at, &(8000 + rng.below(200_000) as u32).to_le_bytes());
    at = put(out, at, b"WEBPVP8X\x0a\0\0\0\x08\0\0\0");
    at = put(
        out,
        at,
        &(rng.next_u64() as u32 & 0xFFFF).to_le_bytes()[..3],
    );
    at = put(
        out,
        at,
        &(rng.next_u64() as u32 & 0xFFFF).to_le_bytes()[..3],
    );
    at = put(out, at, b"VP8 ");
    at = put(out, at, &(7000 + rng.below(200_000) as u32).to_le_bytes());
    put(out, at, &[0x30, 0x01, 0x00, 0x9D, 0x01, 0x2A])
}

// ---------------------------------------------------------------------------------------
// Code: ARM64 ELF shared objects, oat files and dex

#[derive(Clone, Copy)]
enum Section {
    /// AArch64 instructions (the `exec` generator).
    Text,
    /// `.rela.dyn`: 24-byte relocations at consecutive addresses.
    Rela,
    /// `.dynsym`: 24-byte symbols with ascending addresses.
    Dynsym,
    /// `.dynstr`, `.rodata`, dex string data: identifiers and messages.
    Strings,
    /// Dalvik bytecode: 16-bit units from a skewed opcode set.
    DexCode,
    /// Compressed assets, hash tables, packed data: incompressible.
    Packed,
}

/// Per-file section weights (relative), by file kind: a shared object, an oat file, a dex.
fn code_weights(ctx: &PageCtx) -> [(Section, u32); 6] {
    use Section::*;
    let w = |i: u64| 1 + (hash(ctx.region_key, 0xC0DE + i) % 8) as u32;
    match hash(ctx.region_key, 0xC0DE) % 10 {
        0..=4 => [
            (Text, 30 + 4 * w(1)),
            (Rela, w(2)),
            (Dynsym, w(3)),
            (Strings, 2 * w(4)),
            (DexCode, 0),
            (Packed, 2 * w(5)),
        ],
        5..=6 => [
            (Text, 20 + 4 * w(1)),
            (Rela, 2 * w(2)),
            (Dynsym, 0),
            (Strings, 2 * w(4)),
            (DexCode, 2 * w(6)),
            (Packed, w(5)),
        ],
        _ => [
            (Text, 0),
            (Rela, 0),
            (Dynsym, 0),
            (Strings, 4 + 2 * w(4)),
            (DexCode, 12 + 3 * w(6)),
            (Packed, w(5)),
        ],
    }
}

fn pick_section(weights: &[(Section, u32); 6], rng: &mut Rng) -> Section {
    let total: u32 = weights.iter().map(|w| w.1).sum();
    let mut point = rng.below(u64::from(total)) as u32;
    for &(s, w) in weights {
        if point < w {
            return s;
        }
        point -= w;
    }
    weights[0].0
}

/// A code file's page: runs of 256 B–3 KiB from its sections, so that a page straddles
/// sections as in a real file. Updates replace the whole page.
pub(crate) fn fill_code(ctx: &PageCtx, out: &mut [u8]) {
    let mut text = [0u8; PAGE_SIZE];
    exec::fill(ctx, &mut text);
    let weights = code_weights(ctx);
    let mut rng = ctx.version_rng();
    let base = hash(ctx.key, 0xBA5E) & 0x00FF_FFF0;
    let mut at = 0;
    while at < out.len() {
        let end = (at + 256 + rng.below(2816) as usize).min(out.len());
        let span = &mut out[at..end];
        match pick_section(&weights, &mut rng) {
            Section::Text => span.copy_from_slice(&text[at..end]),
            Section::Rela => table(
                span,
                24,
                |i, e, r| {
                    e[..8].copy_from_slice(&(base + 8 * i as u64).to_le_bytes());
                    e[8..16].copy_from_slice(&0x403u64.to_le_bytes());
                    e[16..].copy_from_slice(&(base + 4 * r.below(1 << 16)).to_le_bytes());
                },
                &mut rng,
            ),
            Section::Dynsym => table(
                span,
                24,
                |i, e, r| {
                    e[..4].copy_from_slice(&(base as u32 / 16 + 23 * i as u32).to_le_bytes());
                    e[4..8].copy_from_slice(&[0x12, 0, 0x0B, 0]);
                    e[8..16]
                        .copy_from_slice(&(base + 96 * i as u64 + 4 * r.below(16)).to_le_bytes());
                    e[16..].copy_from_slice(&(4 * r.below(200)).to_le_bytes());
                },
                &mut rng,
            ),
            Section::Strings => strings(span, ctx, &mut rng),
            Section::DexCode => dex_code(span, &mut rng),
            Section::Packed => rng.fill_bytes(span),
        }
        at = end;
    }
}

/// Fixed-size entries (cut at the span's end).
fn table(
    span: &mut [u8],
    size: usize,
    mut entry: impl FnMut(usize, &mut [u8], &mut Rng),
    rng: &mut Rng,
) {
    let mut e = vec![0u8; size];
    for (i, chunk) in span.chunks_mut(size).enumerate() {
        entry(i, &mut e, rng);
        chunk.copy_from_slice(&e[..chunk.len()]);
    }
}

/// NUL-separated identifiers and messages, as the text class writes them.
fn strings(span: &mut [u8], ctx: &PageCtx, rng: &mut Rng) {
    let mut page = [0u8; PAGE_SIZE];
    text::fill(ctx, &mut page);
    let from = rng.below((PAGE_SIZE - span.len()) as u64 + 1) as usize;
    span.copy_from_slice(&page[from..from + span.len()]);
    for b in span.iter_mut() {
        if *b == b' ' || *b == b'\n' || *b == b'"' {
            *b = 0;
        }
    }
}

/// Common Dalvik opcodes (const/4, move-result-object, iget-object, invoke-virtual,
/// invoke-direct, return-void, const-string, if-eqz, new-instance, iput-object,
/// invoke-static, move-result) with their usual operand shapes.
const DEX_OPS: [u8; 16] = [
    0x12, 0x0C, 0x54, 0x6E, 0x6E, 0x6E, 0x70, 0x0E, 0x1A, 0x38, 0x22, 0x5B, 0x71, 0x0A, 0x6E, 0x54,
];

fn dex_code(span: &mut [u8], rng: &mut Rng) {
    // An odd span ends in half a code unit: zero, never the caller's stale bytes.
    span.fill(0);
    let methods = rng.below(4000) as u16;
    let mut i = 0;
    while i + 1 < span.len() {
        let op = DEX_OPS[rng.below(16) as usize];
        span[i] = op;
        span[i + 1] = (rng.below(6) as u8) << 4 | rng.below(4) as u8;
        i += 2;
        // invoke, field, string and type ops carry a 16-bit index (then registers).
        if matches!(op, 0x6E | 0x70 | 0x71 | 0x54 | 0x5B | 0x1A | 0x22) && i + 3 < span.len() {
            let idx = methods.wrapping_add(rng.below(300) as u16);
            span[i..i + 2].copy_from_slice(&idx.to_le_bytes());
            span[i + 2] = rng.below(8) as u8;
            span[i + 3] = 0;
            i += 4;
        }
    }
}

// ---------------------------------------------------------------------------------------
// Logs and caches

/// Logs, JSON and XML caches with their tokens: per file 0–70% of the bytes are base64
/// (auth tokens, inline thumbnails), hex digests or UUIDs (uniform), ±10% per page.
pub(crate) fn fill_log(ctx: &PageCtx, out: &mut [u8]) {
    text::fill(ctx, out);
    let density = share(ctx, 0.0, 0.7, 1.0, 0.1);
    let mut rng = layout_rng(ctx);
    splice(out, 0, density, (24, 320), false, &mut rng, token);
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const HEX: &[u8; 16] = b"0123456789abcdef";

fn token(span: &mut [u8], rng: &mut Rng) {
    let hex = rng.chance(0.35);
    let mut r = 0u64;
    for (i, b) in span.iter_mut().enumerate() {
        if i % 10 == 0 {
            r = rng.next_u64();
        }
        *b = if hex {
            HEX[(r & 15) as usize]
        } else {
            BASE64[(r & 63) as usize]
        };
        r >>= 6;
    }
    if let Some(last) = span.len().checked_sub(1) {
        span[0] = b'"';
        span[last] = b'"';
    }
}
