//! `reproduce janusd --code-order scattered`: the launch touches every page of mapped code
//! exactly once, in 64 KiB pieces, the file's first piece first, then in jumps.

use flashstack_experiments::janusd::{scattered_pieces, CODE_CHUNK_BYTES};

#[test]
fn scattered_pieces_cover_the_span_once_and_jump() {
    for (offset, len) in [
        (0, CODE_CHUNK_BYTES),
        (0, 10 * CODE_CHUNK_BYTES),
        (4096, 24 * CODE_CHUNK_BYTES + 8192),
        (1 << 20, 1000 * CODE_CHUNK_BYTES),
    ] {
        let pieces = scattered_pieces(offset, len);
        assert_eq!(pieces[0].0, offset, "the header first");
        let mut sorted = pieces.clone();
        sorted.sort_unstable();
        // Sorted, the pieces tile the span with no gap or overlap.
        let mut at = offset;
        for &(from, to) in &sorted {
            assert_eq!(from, at, "span {offset}+{len}: {sorted:?}");
            assert!(to > from && to - from <= CODE_CHUNK_BYTES);
            at = to;
        }
        assert_eq!(at, offset + len);
        if pieces.len() >= 8 {
            // Consecutive pieces are far apart: no two neighbours in a row.
            let adjacent = pieces
                .windows(2)
                .filter(|w| w[1].0 == w[0].1 || w[0].0 == w[1].1)
                .count();
            assert_eq!(adjacent, 0, "{pieces:?}");
        }
    }
    assert!(scattered_pieces(0, 0).is_empty());
}
