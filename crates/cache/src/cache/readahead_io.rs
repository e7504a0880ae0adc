//! Readahead's mechanism: carries out the windows `crate::readahead` decides. A
//! synchronous window is read with the miss that triggered it (the reader waits for the
//! whole request); an asynchronous one is issued when a read reaches a marker page and
//! the reader goes on without waiting; it waits only if it later reaches a page whose
//! read has not completed. Read-ahead pages are ordinary clean pages (the page limit and
//! LRU eviction apply); the ones never used are counted as waste.

use flashstack_sim::Nanos;

use super::{PageCache, PAGE_BYTES, RA_STATES_MAX, READ_BATCH_PAGES_MAX};
use crate::readahead::{linux_decision, ReadaheadState, Trigger, Window};
use crate::{Backing, CacheError, Ino, WritebackPolicy};

impl<B: Backing, P: WritebackPolicy> PageCache<B, P> {
    /// The largest window this cache reads: the configured one, at most an eighth of the
    /// cache, so that a window grown ×2 at once still fits one read batch (a quarter).
    pub(super) fn ra_max_pages(&self) -> u64 {
        let cache_share = self.config.cache_pages_max() / 8;
        self.config
            .readahead
            .max_pages()
            .min(cache_share)
            .min(READ_BATCH_PAGES_MAX / 2)
    }

    pub(super) fn ra_state_mut(&mut self, ino: Ino) -> &mut ReadaheadState {
        if !self.ra_states.contains_key(&ino) && self.ra_states.len() >= RA_STATES_MAX {
            self.ra_states.pop_first();
        }
        self.ra_states.entry(ino).or_default()
    }

    /// A page is used: if it was read ahead, it is a readahead hit, and the user waits
    /// until its read completes.
    pub(super) fn ra_use(&mut self, now_ns: Nanos, ino: Ino, page_index: u64) -> Nanos {
        let Some(ready_ns) = self.ra_pending.remove(&(ino, page_index)) else {
            return now_ns;
        };
        self.metrics.readahead_hits += 1;
        if ready_ns > now_ns {
            self.metrics.readahead_wait_ns += ready_ns - now_ns;
        }
        now_ns.max(ready_ns)
    }

    /// A page leaves the cache: unused read-ahead is waste.
    pub(super) fn ra_forget(&mut self, ino: Ino, page_index: u64) {
        if self.ra_pending.remove(&(ino, page_index)).is_some() {
            self.metrics.readahead_waste += 1;
        }
        self.ra_marks.remove(&(ino, page_index));
    }

    /// A miss at `index` of a read ending at page `last_page`: the policy's synchronous
    /// window (or, for a random read, only the requested pages). Returns the time the
    /// pages are ready and the index past the run read from `index`.
    pub(super) fn readahead_on_miss(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        index: u64,
        last_page: u64,
        size_bytes: u64,
    ) -> Result<(Nanos, u64), CacheError> {
        let state = self.ra_states.get(&ino).copied().unwrap_or_default();
        let max_pages = self.ra_max_pages();
        let decision = linux_decision(&state, index, last_page - index, Trigger::Miss, max_pages);
        let Some(window) = decision else {
            return self.load_run(now_ns, ino, index, last_page);
        };
        self.ra_state_mut(ino).window = Some(window);
        self.metrics.readahead_sync_windows += 1;
        let eof_page = size_bytes.div_ceil(PAGE_BYTES);
        let end = window.end().max(last_page).min(eof_page).max(index + 1);
        let (done_ns, run_end) = self.load_run(now_ns, ino, index, end)?;
        for ahead in last_page.max(index + 1)..run_end {
            self.ra_pending.insert((ino, ahead), done_ns);
            self.metrics.readahead_pages += 1;
        }
        self.ra_mark(ino, window, index + 1, run_end);
        Ok((done_ns, run_end))
    }

    /// A read reached cached page `index`: if it carries a marker, the next window is
    /// issued now and not waited for. Returns the reader's time (unchanged).
    pub(super) fn readahead_on_hit(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        index: u64,
        last_page: u64,
        size_bytes: u64,
    ) -> Result<Nanos, CacheError> {
        if !self.ra_marks.remove(&(ino, index)) {
            return Ok(now_ns);
        }
        let max_pages = self.ra_max_pages();
        let eof_page = size_bytes.div_ceil(PAGE_BYTES);
        let next_missing = self.next_missing(ino, index, eof_page, max_pages);
        let state = self.ra_states.get(&ino).copied().unwrap_or_default();
        let req_pages = last_page.saturating_sub(index);
        let trigger = Trigger::Marker { next_missing };
        let Some(window) = linux_decision(&state, index, req_pages, trigger, max_pages) else {
            return Ok(now_ns);
        };
        self.ra_state_mut(ino).window = Some(window);
        self.metrics.readahead_async_windows += 1;
        // Issued at the reader's time; the reader does not wait for it.
        self.read_window(now_ns, ino, window, eof_page, None)?;
        Ok(now_ns)
    }

    /// The first uncached page after `index` within `max_pages`, or the end of that span.
    pub(super) fn next_missing(&self, ino: Ino, index: u64, eof_page: u64, max_pages: u64) -> u64 {
        let end = eof_page.min(index + 1 + max_pages);
        (index + 1..end)
            .find(|&p| !self.pages.contains_key(&(ino, p)))
            .unwrap_or(end)
    }

    /// Reads `window`'s missing pages (up to the end of the file) as runs issued at
    /// `now_ns`; every page but `waited` is read ahead. Returns when `waited`'s run is done
    /// (`now_ns` if none is waited for).
    pub(super) fn read_window(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        window: Window,
        eof_page: u64,
        waited: Option<u64>,
    ) -> Result<Nanos, CacheError> {
        let end = window.end().min(eof_page);
        let mut ready_ns = now_ns;
        let mut page = window.start;
        while page < end {
            if self.pages.contains_key(&(ino, page)) {
                page += 1;
                continue;
            }
            let (done_ns, run_end) = self.load_run(now_ns, ino, page, end)?;
            for p in page..run_end {
                if Some(p) == waited {
                    ready_ns = done_ns;
                    continue;
                }
                self.ra_pending.insert((ino, p), done_ns);
                self.metrics.readahead_pages += 1;
                if waited.is_some() {
                    self.metrics.mmap_window_pages += 1;
                }
            }
            page = run_end;
        }
        self.ra_mark(ino, window, window.start, end);
        Ok(ready_ns)
    }

    /// Puts the window's marker on its page if this window read it (`from..to`).
    pub(super) fn ra_mark(&mut self, ino: Ino, window: Window, from: u64, to: u64) {
        if let Some(marker) = window.marker() {
            if (from..to).contains(&marker) && self.pages.contains_key(&(ino, marker)) {
                self.ra_marks.insert((ino, marker));
            }
        }
    }
}
