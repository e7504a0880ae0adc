//! The page-version store: versions of a file's pages held apart from the cache's page
//! table, with the size they belong to. Atomic-write staging keeps one per file in an
//! atomic write (the pages a commit hands down); MobiFS's transactions keep one per file
//! of each transaction (the copy-on-write versions a checkpoint writes). Both read the
//! bytes a truncate cut as zeros and cut their own pages the same way.

use std::collections::BTreeMap;

use crate::{Page, PAGE_SIZE_BYTES};

const PAGE_BYTES: u64 = PAGE_SIZE_BYTES as u64;

/// Versions of one file's pages and the file's size in that version.
#[derive(Clone, Debug)]
pub(crate) struct FileVersion {
    /// Page index → the version's content (pages not here are the cache's or below).
    pub pages: BTreeMap<u64, Box<Page>>,
    pub size_bytes: u64,
    /// The smallest size the file had since `begin_size_bytes`: from here on, pages the
    /// version does not hold read as zeros (a truncate cut them).
    pub low_water_bytes: u64,
    /// The size when the version began.
    pub begin_size_bytes: u64,
}

impl FileVersion {
    /// A version of a file of `size_bytes`, holding no page yet.
    pub fn begin(size_bytes: u64) -> Self {
        Self {
            pages: BTreeMap::new(),
            size_bytes,
            low_water_bytes: size_bytes,
            begin_size_bytes: size_bytes,
        }
    }

    /// Whether page `page_index` lies wholly in the range a truncate cut.
    pub fn is_cut(&self, page_index: u64) -> bool {
        page_index * PAGE_BYTES >= self.low_water_bytes
    }

    /// Zeroes what a truncate cut of `data`, the content of page `page_index`.
    pub fn zero_cut_tail(&self, page_index: u64, data: &mut Page) {
        let tail = self.low_water_bytes.saturating_sub(page_index * PAGE_BYTES);
        if tail < PAGE_BYTES {
            data[tail as usize..].fill(0);
        }
    }

    /// A truncate to `size_bytes`: pages past it go, the tail of the last one is zeroed.
    /// Returns the dropped page buffers.
    pub fn cut(&mut self, size_bytes: u64) -> Vec<Box<Page>> {
        let keep_pages = size_bytes.div_ceil(PAGE_BYTES);
        let dropped = self.pages.split_off(&keep_pages).into_values().collect();
        let tail = (size_bytes % PAGE_BYTES) as usize;
        if tail != 0 {
            if let Some(page) = self.pages.get_mut(&(keep_pages - 1)) {
                page[tail..].fill(0);
            }
        }
        self.size_bytes = size_bytes;
        self.low_water_bytes = self.low_water_bytes.min(size_bytes);
        dropped
    }
}
