//! Already-compressed media: JPEG/MP4 payload is entropy-coded, so its bytes are modelled
//! as uniform random. The first page of a file starts with a JPEG SOI/APP0 (JFIF) header.
//! Every version is new content: apps rewrite media files, they do not patch them.

use super::PageCtx;

/// SOI, APP0 marker and length, "JFIF\0", version 1.1, no density units, 1×1, no thumbnail.
const JFIF_HEADER: [u8; 20] = [
    0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, b'J', b'F', b'I', b'F', 0x00, 0x01, 0x01, 0x00, 0x00, 0x01,
    0x00, 0x01, 0x00, 0x00,
];

pub(crate) fn fill(ctx: &PageCtx, out: &mut [u8]) {
    ctx.version_rng().fill_bytes(out);
    if ctx.page_in_region == 0 {
        out[..JFIF_HEADER.len()].copy_from_slice(&JFIF_HEADER);
    }
}
