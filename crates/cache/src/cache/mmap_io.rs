//! Faults on mapped files: carries out `crate::readahead::read_around_decision`. With
//! `cache.readahead.mmap = off` a fault is exactly a one-page `read` (the model before
//! faults had their own path). With `read-around`, a fault on an uncached page reads the
//! window centred on it: its missing pages are issued in runs, in page order, at the
//! fault's time, and the fault waits only for the run holding its page (the others are
//! read-ahead pages, used later or counted as waste); a fault on a cached page carrying a
//! marker issues the next window and does not wait for it.
//!
//! A fault costs what a 4 KiB read of a cached page costs (`call_overhead_ns`, the trap
//! and the page-table update, plus `memcpy_ns_per_page`) [assumed: so that comparing the
//! two policies compares their I/O alone].

use flashstack_sim::Nanos;

use super::{CacheError, CallKind, PageCache, PAGE_BYTES};
use crate::readahead::{read_around_decision, Fault, MmapPolicy};
use crate::{Backing, Ino, WritebackPolicy};

impl<B: Backing, P: WritebackPolicy> PageCache<B, P> {
    /// A fault on a mapping of `ino` at `offset_bytes`, reading `buf.len()` bytes of that
    /// page into `buf` (at most to the page's end); returns the bytes read (0 past the end
    /// of the file, where the kernel would raise SIGBUS) and the time the page is mapped.
    pub fn fault(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        offset_bytes: u64,
        buf: &mut [u8],
    ) -> Result<(usize, Nanos), CacheError> {
        if self.config.readahead.mmap == MmapPolicy::Off {
            // A read's I/O, but no read system call (`Backing::note_call` is not told).
            return self.read_uncounted(now_ns, ino, offset_bytes, buf);
        }
        let in_page = offset_bytes % PAGE_BYTES;
        if in_page + buf.len() as u64 > PAGE_BYTES {
            return Err(CacheError::FaultSpansPages {
                ino,
                offset_bytes,
                length_bytes: buf.len() as u64,
            });
        }
        self.enter(now_ns)?;
        if self.atomic.contains_key(&ino) {
            return self.read_staged(now_ns, ino, offset_bytes, buf);
        }
        let page_index = offset_bytes / PAGE_BYTES;
        let mut t = now_ns + self.config.call_overhead_ns;
        let (size_bytes, t_size) = self.ensure_file(t, ino)?;
        t = t_size;
        let eof_page = size_bytes.div_ceil(PAGE_BYTES);
        if page_index >= eof_page {
            self.forget_file_if_unused(ino);
            self.record(CallKind::Read, now_ns, t);
            return Ok((0, t));
        }
        self.metrics.mmap_faults += 1;
        let ra_pages = self.ra_max_pages();
        let state = self.ra_states.get(&ino).copied().unwrap_or_default();
        if self.pages.contains_key(&(ino, page_index)) {
            self.metrics.read_hits += 1;
            self.touch(ino, page_index);
            let marker = self.ra_marks.remove(&(ino, page_index));
            let next_missing = if marker {
                self.next_missing(ino, page_index, eof_page, ra_pages)
            } else {
                0
            };
            let fault = Fault::Cached {
                marker,
                next_missing,
            };
            let decision = read_around_decision(&state, page_index, fault, ra_pages);
            self.ra_state_mut(ino).mmap_miss = decision.mmap_miss;
            if let Some(window) = decision.window {
                self.ra_state_mut(ino).window = Some(window);
                // A window wholly past the end of the file reads nothing and is not counted.
                if window.start < eof_page {
                    self.metrics.readahead_async_windows += 1;
                    self.metrics.mmap_async_windows += 1;
                    self.read_window(t, ino, window, eof_page, None)?;
                }
            }
            if self.ra_pending.contains_key(&(ino, page_index)) {
                self.metrics.mmap_readahead_hits += 1;
            }
            t = self.ra_use(t, ino, page_index);
        } else {
            self.metrics.read_misses += 1;
            self.metrics.mmap_major_faults += 1;
            let decision = read_around_decision(&state, page_index, Fault::Miss, ra_pages);
            self.ra_state_mut(ino).mmap_miss = decision.mmap_miss;
            if decision.backed_off {
                self.metrics.mmap_backoffs += 1;
            }
            t = match decision.window {
                Some(window) => {
                    self.ra_state_mut(ino).window = Some(window);
                    self.metrics.mmap_windows += 1;
                    self.read_window(t, ino, window, eof_page, Some(page_index))?
                }
                None => self.load_page(t, ino, page_index, true)?,
            };
        }
        // A window may have evicted the faulting page (a small cache under pressure).
        if !self.pages.contains_key(&(ino, page_index)) {
            self.metrics.read_misses += 1;
            t = self.load_page(t, ino, page_index, true)?;
        }
        let n = buf.len().min((size_bytes - offset_bytes) as usize);
        let start = in_page as usize;
        buf[..n].copy_from_slice(&self.page_mut(ino, page_index).data[start..start + n]);
        t += self.config.memcpy_ns_per_page;
        self.forget_file_if_unused(ino);
        self.record(CallKind::Read, now_ns, t);
        Ok((n, t))
    }

    /// The file's mmap miss counter (tests).
    #[cfg(test)]
    pub(crate) fn ra_state_mmap_miss(&self, ino: Ino) -> u32 {
        self.ra_states.get(&ino).map_or(0, |s| s.mmap_miss)
    }
}
