//! The one page-range walk: a byte range of a file cut at page boundaries. Every call that
//! moves bytes between a caller's buffer and cached pages (write, read, and their staged
//! forms) walks a range with [`page_spans`].

use crate::PAGE_SIZE_BYTES;

const PAGE_BYTES: u64 = PAGE_SIZE_BYTES as u64;

/// The part of one page a byte range covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PageSpan {
    pub page_index: u64,
    /// Byte range within the page.
    pub start: usize,
    pub end: usize,
    /// Where the span starts in the caller's buffer.
    pub buf_start: usize,
}

impl PageSpan {
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    /// The buffer range of the span.
    pub fn buf_range(&self) -> std::ops::Range<usize> {
        self.buf_start..self.buf_start + self.len()
    }

    /// The file offset just past the span.
    pub fn end_bytes(&self) -> u64 {
        self.page_index * PAGE_BYTES + self.end as u64
    }

    /// Whether the span covers its whole page.
    pub fn is_full_page(&self) -> bool {
        self.start == 0 && self.end == PAGE_SIZE_BYTES
    }
}

/// The spans of the byte range `offset_bytes..end_bytes`, in page order (empty if
/// `end_bytes <= offset_bytes`).
pub(crate) fn page_spans(offset_bytes: u64, end_bytes: u64) -> impl Iterator<Item = PageSpan> {
    let mut position = offset_bytes;
    std::iter::from_fn(move || {
        if position >= end_bytes {
            return None;
        }
        let page_index = position / PAGE_BYTES;
        let start = (position % PAGE_BYTES) as usize;
        let end = (end_bytes - page_index * PAGE_BYTES).min(PAGE_BYTES) as usize;
        let span = PageSpan {
            page_index,
            start,
            end,
            buf_start: (position - offset_bytes) as usize,
        };
        position = span.end_bytes();
        Some(span)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_cover_the_range_exactly() {
        let spans: Vec<PageSpan> = page_spans(4000, 8200).collect();
        assert_eq!(spans.len(), 3);
        assert_eq!(
            (spans[0].page_index, spans[0].start, spans[0].end),
            (0, 4000, 4096)
        );
        assert_eq!(
            (spans[1].page_index, spans[1].start, spans[1].end),
            (1, 0, 4096)
        );
        assert!(spans[1].is_full_page());
        assert_eq!(
            (spans[2].page_index, spans[2].end, spans[2].buf_start),
            (2, 8, 4192)
        );
        assert_eq!(spans.iter().map(PageSpan::len).sum::<usize>(), 4200);
        assert_eq!(page_spans(10, 10).count(), 0);
    }
}
