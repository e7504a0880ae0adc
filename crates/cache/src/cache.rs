//! The page cache mechanism: page table, dirty tracking, LRU of clean pages, the flusher in
//! virtual time, and the file calls.

mod mmap_io;
mod readahead_io;
mod txn;

use std::collections::{BTreeMap, BTreeSet};

use flashstack_sim::Nanos;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::policy::{
    CheckpointReason, CheckpointScope, DirtyView, FlusherDecision, FsyncDecision, WriterDecision,
};
use crate::readahead::ReadaheadState;
use crate::span::page_spans;
use crate::versions::FileVersion;
use crate::{
    Backing, BackingError, CacheConfig, CachePolicy, ConfigError, Ino, Page, ReadaheadPolicy,
    WritebackHint, WritebackPolicy, WritebackReason, PAGE_SIZE_BYTES,
};

pub use txn::TxMetrics;

const PAGE_BYTES: u64 = PAGE_SIZE_BYTES as u64;

#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum CacheError {
    #[error(transparent)]
    Backing(#[from] BackingError),
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// An earlier writeback of the file's dirty pages failed, so their data is lost (Linux's
    /// `mapping_set_error`). Reported once to the file, by its next fsync or fdatasync, like
    /// the kernel's errseq; `sync_all` reports failures no fsync has reported yet. The call
    /// itself ran to completion at `done_ns`.
    #[error("inode {ino}: an earlier writeback failed: {error}")]
    Writeback {
        ino: Ino,
        error: BackingError,
        done_ns: Nanos,
    },
    #[error("time went backwards: called at {now_ns} ns after a call at {last_ns} ns")]
    TimeWentBackwards { now_ns: Nanos, last_ns: Nanos },
    #[error("inode {ino}: byte range at {offset_bytes} of {length_bytes} bytes overflows")]
    RangeOverflow {
        ino: Ino,
        offset_bytes: u64,
        length_bytes: u64,
    },
    /// A fault maps one page: the bytes asked for must lie within it.
    #[error(
        "inode {ino}: a fault at {offset_bytes} of {length_bytes} bytes spans more than one page"
    )]
    FaultSpansPages {
        ino: Ino,
        offset_bytes: u64,
        length_bytes: u64,
    },
}

/// The cache calls whose latency is measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CallKind {
    Read,
    Write,
    Truncate,
    Unlink,
    Fsync,
    Fdatasync,
    Sync,
    AtomicBegin,
    AtomicCommit,
    AtomicAbort,
}

/// Latency of one kind of call in virtual time (completion − issue).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallLatency {
    pub count: u64,
    pub total_ns: u64,
    pub max_ns: u64,
}

impl CallLatency {
    fn record(&mut self, latency_ns: Nanos) {
        self.count += 1;
        self.total_ns += latency_ns;
        self.max_ns = self.max_ns.max(latency_ns);
    }

    pub fn mean_ns(&self) -> u64 {
        self.total_ns.checked_div(self.count).unwrap_or(0)
    }
}

/// Counters of one cache over its life.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheMetrics {
    pub dirty_bytes_high_water: u64,
    pub pages_written_back: BTreeMap<WritebackReason, u64>,
    /// `write_pages` calls (contiguous runs) issued to the file system.
    pub write_back_calls: u64,
    pub read_hits: u64,
    pub read_misses: u64,
    /// Pages read from below because a partial write hit an uncached page.
    pub read_modify_write_reads: u64,
    pub evictions: u64,
    /// Dirty pages dropped by a crash.
    pub dirty_pages_lost: u64,
    /// Writeback calls the file system failed (not counting power loss): their pages were
    /// marked clean and the error kept for the file's next fsync.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub writeback_errors: u64,
    /// Dirty pages whose writeback failed (their data is lost).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub writeback_pages_lost: u64,
    pub latency: BTreeMap<CallKind, CallLatency>,
    /// MobiFS's transactions (`docs/mobifs.md`); serialized only when used.
    #[serde(default, skip_serializing_if = "TxMetrics::is_empty")]
    pub transactions: TxMetrics,
    /// Readahead (`cache.readahead`; serialized only when used): windows decided (a
    /// synchronous one on a miss, an asynchronous one when a read reached a marker).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub readahead_sync_windows: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub readahead_async_windows: u64,
    /// Pages read below beyond what the reads asked for.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub readahead_pages: u64,
    /// Pages read ahead that a later read or write used.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub readahead_hits: u64,
    /// Pages read ahead that left the cache unused (evicted, dropped, truncated, crash):
    /// the readahead waste.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub readahead_waste: u64,
    /// Time readers waited for read-ahead pages still in flight.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub readahead_wait_ns: u64,
    /// Faults on mapped pages under `cache.readahead.mmap = read-around` (serialized only
    /// when used; with `off` a fault is a read and counted as one): all of them, and those
    /// that found their page uncached (major faults).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub mmap_faults: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub mmap_major_faults: u64,
    /// Read-around windows (one per major fault that was not backed off) and the pages they
    /// read beyond the faulting one (also counted in `readahead_pages`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub mmap_windows: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub mmap_window_pages: u64,
    /// Asynchronous windows a fault on a marker page started (also in
    /// `readahead_async_windows`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub mmap_async_windows: u64,
    /// Faults that found their page read ahead (also in `readahead_hits`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub mmap_readahead_hits: u64,
    /// Major faults that read only their page because the mapping missed too often (the
    /// kernel's `mmap_miss` back-off).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub mmap_backoffs: u64,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

impl CacheMetrics {
    pub fn pages_written_back_total(&self) -> u64 {
        self.pages_written_back.values().sum()
    }
}

#[derive(Clone, Debug)]
struct CachedPage {
    data: Box<Page>,
    dirty: bool,
    lru_seq: u64,
}

#[derive(Clone, Debug, Default)]
struct FileState {
    size_bytes: u64,
    dirty_pages: BTreeSet<u64>,
    /// When the inode went from clean to dirty (the kernel's `dirtied_when`).
    dirtied_ns: Option<Nanos>,
}

/// The page cache over a file system `B`, with writeback decided by `P`.
pub struct PageCache<B: Backing, P: WritebackPolicy = CachePolicy> {
    config: CacheConfig,
    policy: P,
    backing: B,
    pages: BTreeMap<(Ino, u64), CachedPage>,
    /// Clean pages by last use; the first is evicted first.
    clean_lru: BTreeMap<u64, (Ino, u64)>,
    lru_clock: u64,
    /// Files with cached pages or dirty state (dropped when neither remains).
    files: BTreeMap<Ino, FileState>,
    /// Dirty inodes by (dirtied_ns, ino): the longest-dirty first.
    dirty_inodes: BTreeSet<(Nanos, Ino)>,
    dirty_page_count: u64,
    last_call_ns: Nanos,
    /// The flusher's own clock: busy with writeback until this time.
    flusher_ns: Nanos,
    metrics: CacheMetrics,
    errors: WritebackErrors,
    /// Files in an atomic write (see [`PageCache::atomic_begin`]): their staged pages and
    /// size, held from writeback (the kernel keeps them in the COW inode's pages until
    /// commit).
    atomic: BTreeMap<Ino, FileVersion>,
    /// Page buffers of dropped pages, reused for new ones (allocating zeroed memory for
    /// every page of a large file costs more than the rest of caching it). Memory only.
    spare_pages: Vec<Box<Page>>,
    /// MobiFS's versioned transactions, when the policy is transactional.
    tx: Option<txn::Transactions>,
    /// Readahead state per inode (bounded: [`RA_STATES_MAX`]).
    ra_states: BTreeMap<Ino, ReadaheadState>,
    /// Pages read ahead and not used yet, with the time their read completes.
    ra_pending: BTreeMap<(Ino, u64), Nanos>,
    /// Pages carrying a window's marker (the kernel's `PG_readahead`).
    ra_marks: BTreeSet<(Ino, u64)>,
}

/// Most files whose readahead state is kept; beyond it the lowest inode's is forgotten
/// (it then starts again as a new reader would).
const RA_STATES_MAX: usize = 4096;

/// Most page buffers kept for reuse (16 MiB).
const SPARE_PAGES_MAX: usize = 4096;
/// Most pages one read hands below at once: 512 KiB, the block layer's largest request
/// (a bigger read is several such calls, as the kernel's readahead windows are).
const READ_BATCH_PAGES_MAX: u64 = 128;

/// Writeback errors as Linux keeps them: per file (the mapping's `wb_err`, reported to the
/// file's next fsync, once) and for the whole file system (the superblock's `s_wb_err`,
/// reported to the next sync). Simplification: sync reports only failures that no fsync
/// has reported yet, so one failure is never reported twice to the same program.
#[derive(Clone, Debug, Default)]
struct WritebackErrors {
    /// Not yet reported to an fsync of the file: the latest error, as errseq keeps.
    by_file: BTreeMap<Ino, BackingError>,
    /// Not yet reported to `sync_all` nor to an fsync of the file.
    for_sync: BTreeMap<Ino, BackingError>,
    /// Every error so far (errseq's counter) and the latest.
    seen: u64,
    latest: Option<(Ino, BackingError)>,
}

impl<B: Backing> PageCache<B, CachePolicy> {
    /// A cache with the policy its configuration names (`policy`: Linux by default).
    pub fn new(config: CacheConfig, backing: B) -> Result<Self, CacheError> {
        let policy = CachePolicy::new(&config);
        Self::with_policy(config, policy, backing)
    }
}

impl<B: Backing, P: WritebackPolicy> PageCache<B, P> {
    pub fn with_policy(config: CacheConfig, policy: P, backing: B) -> Result<Self, CacheError> {
        config.validate()?;
        let tx = policy.transactional().then(txn::Transactions::default);
        Ok(Self {
            config,
            policy,
            backing,
            pages: BTreeMap::new(),
            clean_lru: BTreeMap::new(),
            lru_clock: 0,
            files: BTreeMap::new(),
            dirty_inodes: BTreeSet::new(),
            dirty_page_count: 0,
            last_call_ns: 0,
            flusher_ns: 0,
            metrics: CacheMetrics::default(),
            errors: WritebackErrors::default(),
            atomic: BTreeMap::new(),
            spare_pages: Vec::new(),
            tx,
            ra_states: BTreeMap::new(),
            ra_pending: BTreeMap::new(),
            ra_marks: BTreeSet::new(),
        })
    }

    /// A zeroed page buffer, reused when one is spare.
    fn zeroed_page(&mut self) -> Box<Page> {
        match self.spare_pages.pop() {
            Some(mut page) => {
                page.fill(0);
                page
            }
            None => Box::new([0u8; PAGE_SIZE_BYTES]),
        }
    }

    fn recycle(&mut self, page: Box<Page>) {
        if self.spare_pages.len() < SPARE_PAGES_MAX {
            self.spare_pages.push(page);
        }
    }

    pub fn config(&self) -> &CacheConfig {
        &self.config
    }

    pub fn metrics(&self) -> &CacheMetrics {
        &self.metrics
    }

    /// Switches readahead (`cache.readahead`) from now on: what earlier windows read stays
    /// cached; the files' readahead state starts afresh.
    pub fn set_readahead(&mut self, readahead: crate::ReadaheadConfig) -> Result<(), CacheError> {
        let config = CacheConfig {
            readahead,
            ..self.config.clone()
        };
        config.validate()?;
        self.config = config;
        self.ra_states.clear();
        self.ra_marks.clear();
        Ok(())
    }

    /// Starts a measurement phase: counters restart, cached pages are kept.
    pub fn reset_metrics(&mut self) {
        self.metrics = CacheMetrics::default();
    }

    pub fn backing(&self) -> &B {
        &self.backing
    }

    pub fn backing_mut(&mut self) -> &mut B {
        &mut self.backing
    }

    /// Gives the file system below back (after a crash, to remount it).
    pub fn into_backing(self) -> B {
        self.backing
    }

    pub fn dirty_bytes(&self) -> u64 {
        self.dirty_page_count * PAGE_BYTES
    }

    pub fn cached_pages(&self) -> u64 {
        self.pages.len() as u64
    }

    /// Whether page `page_index` of `ino` is cached.
    pub fn is_cached(&self, ino: Ino, page_index: u64) -> bool {
        self.pages.contains_key(&(ino, page_index))
    }

    /// Whether page `page_index` of `ino` is cached and dirty.
    pub fn is_dirty(&self, ino: Ino, page_index: u64) -> bool {
        self.pages
            .get(&(ino, page_index))
            .is_some_and(|page| page.dirty)
    }

    /// How many writebacks have failed so far (never reset, errseq's counter), and the latest
    /// failure: which file, and why. A caller that acts on failures (the mount refuses to
    /// grow files after the file system ran out of space) compares the count with the one
    /// it saw last.
    pub fn writeback_errors_seen(&self) -> (u64, Option<&(Ino, BackingError)>) {
        (self.errors.seen, self.errors.latest.as_ref())
    }

    /// Whether a writeback error of `ino` awaits its next fsync.
    pub fn has_writeback_error(&self, ino: Ino) -> bool {
        self.errors.by_file.contains_key(&ino)
    }

    /// Lets virtual time pass to `now_ns`: the flusher runs in the gap.
    pub fn advance_to(&mut self, now_ns: Nanos) -> Result<(), CacheError> {
        self.enter(now_ns)
    }

    /// Writes `data` at `offset_bytes`; returns the completion time.
    pub fn write(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        offset_bytes: u64,
        data: &[u8],
    ) -> Result<Nanos, CacheError> {
        self.enter(now_ns)?;
        self.backing.note_call(ino, true);
        if self.atomic.contains_key(&ino) {
            return self.write_staged(now_ns, ino, offset_bytes, data);
        }
        let end_bytes = write_end(ino, offset_bytes, data.len() as u64)?;
        let mut t = now_ns + self.config.call_overhead_ns;
        let (size_bytes, t_size) = self.ensure_file(t, ino)?;
        t = t_size;
        if self.tx.is_some() {
            let pages = page_spans(offset_bytes, end_bytes).count() as u64;
            t = self.tx_reserve(t, ino, pages)?;
            self.tx_touch_file(ino);
        }
        for span in page_spans(offset_bytes, end_bytes) {
            let page_index = span.page_index;
            let beyond_eof = page_index * PAGE_BYTES >= size_bytes;
            let read_below = !span.is_full_page() && !beyond_eof;
            if read_below && !self.pages.contains_key(&(ino, page_index)) {
                self.metrics.read_modify_write_reads += 1;
            }
            t = self.before_modify(t, ino, page_index)?;
            t = self.load_page(t, ino, page_index, read_below)?;
            self.page_mut(ino, page_index).data[span.start..span.end]
                .copy_from_slice(&data[span.buf_range()]);
            self.mark_dirty(now_ns, ino, page_index);
            self.tx_note_write(now_ns, ino, page_index, (span.end - span.start) as u64);
            t += self.config.memcpy_ns_per_page;
            let position = span.end_bytes();
            // The size grows page by page, so pressure writeback of this file's earlier pages
            // during this write hands the file system a size that covers them.
            let file = self
                .files
                .get_mut(&ino)
                .expect("file state exists after ensure_file");
            file.size_bytes = file.size_bytes.max(position);
        }
        self.metrics.dirty_bytes_high_water =
            self.metrics.dirty_bytes_high_water.max(self.dirty_bytes());
        // The flusher is kicked at once (asynchronously); a writer above the limit pays.
        self.run_flusher(now_ns)?;
        let mut rounds = 0u64;
        while let WriterDecision::Throttle { ino: victim } = self.policy.writer(&self.view(t)) {
            t = self.write_back_batch(t, victim, WritebackReason::Throttle, false)?;
            rounds += 1;
            assert!(
                rounds <= self.config.cache_pages_max() + 1,
                "throttling must make progress"
            );
        }
        self.forget_file_if_unused(ino);
        self.record(CallKind::Write, now_ns, t);
        Ok(t)
    }

    /// Reads into `buf` from `offset_bytes`; returns the bytes read (short at end of file)
    /// and the completion time.
    pub fn read(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        offset_bytes: u64,
        buf: &mut [u8],
    ) -> Result<(usize, Nanos), CacheError> {
        self.enter(now_ns)?;
        self.backing.note_call(ino, false);
        self.read_uncounted(now_ns, ino, offset_bytes, buf)
    }

    /// [`PageCache::read`] without reporting a system call (a fault on a mapping is
    /// none).
    pub(crate) fn read_uncounted(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        offset_bytes: u64,
        buf: &mut [u8],
    ) -> Result<(usize, Nanos), CacheError> {
        self.enter(now_ns)?;
        if self.atomic.contains_key(&ino) {
            return self.read_staged(now_ns, ino, offset_bytes, buf);
        }
        let mut t = now_ns + self.config.call_overhead_ns;
        let (size_bytes, t_size) = self.ensure_file(t, ino)?;
        t = t_size;
        let end_bytes = offset_bytes
            .saturating_add(buf.len() as u64)
            .min(size_bytes);
        // Pages read below by this call (misses even once resident).
        let mut loaded_end = 0u64;
        let last_page = end_bytes.div_ceil(PAGE_BYTES);
        let readahead = self.config.readahead.policy == ReadaheadPolicy::Linux;
        for span in page_spans(offset_bytes, end_bytes) {
            let page_index = span.page_index;
            if page_index < loaded_end {
                self.metrics.read_misses += 1;
            } else if self.pages.contains_key(&(ino, page_index)) {
                self.metrics.read_hits += 1;
                self.touch(ino, page_index);
                if readahead {
                    t = self.readahead_on_hit(t, ino, page_index, last_page, size_bytes)?;
                }
                t = self.ra_use(t, ino, page_index);
            } else {
                self.metrics.read_misses += 1;
                (t, loaded_end) = match readahead {
                    true => self.readahead_on_miss(t, ino, page_index, last_page, size_bytes)?,
                    false => self.load_run(t, ino, page_index, last_page)?,
                };
            }
            // An asynchronous window may have evicted a page this call loaded (a small
            // cache under pressure): it is read again.
            if readahead && !self.pages.contains_key(&(ino, page_index)) {
                self.metrics.read_misses += 1;
                t = self.load_page(t, ino, page_index, true)?;
            }
            buf[span.buf_range()]
                .copy_from_slice(&self.page_mut(ino, page_index).data[span.start..span.end]);
            t += self.config.memcpy_ns_per_page;
            if readahead {
                self.ra_state_mut(ino).prev_page = Some(page_index);
            }
        }
        self.forget_file_if_unused(ino);
        self.record(CallKind::Read, now_ns, t);
        Ok((end_bytes.saturating_sub(offset_bytes) as usize, t))
    }

    /// The file's size as the cache sees it (including unwritten-back extensions).
    pub fn file_size(&mut self, now_ns: Nanos, ino: Ino) -> Result<(u64, Nanos), CacheError> {
        self.enter(now_ns)?;
        if let Some(staged) = self.atomic.get(&ino) {
            return Ok((staged.size_bytes, now_ns + self.config.call_overhead_ns));
        }
        let result = self.ensure_file(now_ns + self.config.call_overhead_ns, ino)?;
        self.forget_file_if_unused(ino);
        Ok(result)
    }

    /// Sets the file's size: pages beyond it are dropped (dirty or not), the tail of the
    /// last page is zeroed, and the file system is told at once.
    pub fn truncate(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        size_bytes: u64,
    ) -> Result<Nanos, CacheError> {
        self.enter(now_ns)?;
        if self.atomic.contains_key(&ino) {
            return self.truncate_staged(now_ns, ino, size_bytes);
        }
        if self.tx.is_some() {
            return self.truncate_tx(now_ns, ino, size_bytes);
        }
        let mut t = now_ns + self.config.call_overhead_ns;
        t = self.ensure_file(t, ino)?.1;
        let keep_pages = size_bytes.div_ceil(PAGE_BYTES);
        for page_index in self.cached_from(ino, keep_pages) {
            self.drop_page(ino, page_index);
        }
        let tail = (size_bytes % PAGE_BYTES) as usize;
        if tail != 0 {
            if let Some(page) = self.pages.get_mut(&(ino, keep_pages - 1)) {
                page.data[tail..].fill(0);
            }
        }
        self.files
            .get_mut(&ino)
            .expect("file state exists")
            .size_bytes = size_bytes;
        t = self.backing.truncate(t, ino, size_bytes)?;
        self.forget_file_if_unused(ino);
        self.record(CallKind::Truncate, now_ns, t);
        Ok(t)
    }

    /// Drops the cached pages `first_page..end_page` of `ino`, dirty or clean, without
    /// writing them back (`truncate_pagecache_range`): the file system below is about to
    /// free or zero those blocks (fallocate's hole punch and zero range). The size stays.
    /// A file in an atomic write is left alone (its staged pages are the commit's).
    pub fn discard_pages(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        first_page: u64,
        end_page: u64,
    ) -> Result<Nanos, CacheError> {
        self.enter(now_ns)?;
        let t = now_ns + self.config.call_overhead_ns;
        if self.atomic.contains_key(&ino) || end_page <= first_page {
            return Ok(t);
        }
        let doomed: Vec<u64> = self
            .pages
            .range((ino, first_page)..(ino, end_page))
            .map(|(&(_, page_index), _)| page_index)
            .collect();
        for page_index in doomed {
            self.drop_page_keeping_versions(ino, page_index);
        }
        self.forget_file_if_unused(ino);
        Ok(t)
    }

    /// Removes the file: its pages are dropped without writeback.
    pub fn unlink(&mut self, now_ns: Nanos, ino: Ino) -> Result<Nanos, CacheError> {
        self.enter(now_ns)?;
        self.atomic.remove(&ino);
        self.tx_forget_file(ino);
        let t = now_ns + self.config.call_overhead_ns;
        let doomed: Vec<u64> = self
            .pages
            .range((ino, 0)..=(ino, u64::MAX))
            .map(|(&(_, page_index), _)| page_index)
            .collect();
        for page_index in doomed {
            self.drop_page(ino, page_index);
        }
        self.files.remove(&ino);
        self.ra_states.remove(&ino);
        // Nobody is left to report the file's error to (sync still reports it).
        self.errors.by_file.remove(&ino);
        let t = self.backing.unlink(t, ino)?;
        self.record(CallKind::Unlink, now_ns, t);
        Ok(t)
    }

    pub fn fsync(&mut self, now_ns: Nanos, ino: Ino) -> Result<Nanos, CacheError> {
        self.sync_file(now_ns, ino, false)
    }

    pub fn fdatasync(&mut self, now_ns: Nanos, ino: Ino) -> Result<Nanos, CacheError> {
        self.sync_file(now_ns, ino, true)
    }

    /// sync(2) / unmount: every dirty page is written back, then the file system's barrier.
    /// A writeback failure since the last `sync_all` that no fsync has reported is reported
    /// here, once, as [`CacheError::Writeback`] (syncfs and the superblock's errseq; the
    /// lowest inode's if several); the files' own errors stay for their next fsync.
    pub fn sync_all(&mut self, now_ns: Nanos) -> Result<Nanos, CacheError> {
        self.enter(now_ns)?;
        let mut t = now_ns + self.config.call_overhead_ns;
        if self.tx.is_some() {
            self.seal_all(t);
            t = self.checkpoint(t, CheckpointScope::AllSealed, CheckpointReason::Sync)?;
        }
        while let Some(&(_, ino)) = self.dirty_inodes.first() {
            t = self.write_back_file(t, ino, WritebackReason::Sync)?;
        }
        t = self.backing.sync_all(t)?;
        self.record(CallKind::Sync, now_ns, t);
        let unreported = std::mem::take(&mut self.errors.for_sync);
        match unreported.into_iter().next() {
            Some((ino, error)) => Err(CacheError::Writeback {
                ino,
                error,
                done_ns: t,
            }),
            None => Ok(t),
        }
    }

    /// Power loss above the file system: every cached page is gone, dirty ones unwritten.
    /// Returns the number of dirty pages lost. (Call the file system's own power loss too.)
    pub fn crash(&mut self) -> u64 {
        let lost = self.dirty_page_count;
        self.metrics.dirty_pages_lost += lost;
        self.pages.clear();
        self.clean_lru.clear();
        self.files.clear();
        self.metrics.readahead_waste += self.ra_pending.len() as u64;
        self.ra_pending.clear();
        self.ra_marks.clear();
        self.ra_states.clear();
        self.dirty_inodes.clear();
        self.dirty_page_count = 0;
        self.flusher_ns = self.last_call_ns;
        // Kept in memory only, like the kernel's errseq.
        self.errors.by_file.clear();
        self.errors.for_sync.clear();
        self.atomic.clear();
        self.tx_crash();
        lost
    }

    /// Drops every clean page (Linux's `echo 1 > /proc/sys/vm/drop_caches`); dirty and
    /// staged pages stay. Returns how many were dropped. Not counted as evictions.
    pub fn drop_clean_pages(&mut self) -> u64 {
        let clean = std::mem::take(&mut self.clean_lru);
        for &(ino, page_index) in clean.values() {
            self.pages.remove(&(ino, page_index));
            self.ra_forget(ino, page_index);
        }
        let inos: BTreeSet<Ino> = clean.values().map(|&(ino, _)| ino).collect();
        for ino in inos {
            self.forget_file_if_unused(ino);
        }
        clean.len() as u64
    }

    /// The files the cache holds pages or state of (cached or dirty pages, a
    /// transaction's pins): what a `drop_caches` cannot make the kernel evict.
    pub fn held_files(&self) -> impl Iterator<Item = Ino> + '_ {
        self.files.keys().copied()
    }

    /// Starts an atomic write of `ino` (`F2FS_IOC_START_ATOMIC_WRITE`): its dirty pages
    /// are written back first (not made durable), then its writes and truncates are
    /// staged — read back by this cache, never written back — until
    /// [`atomic_commit`](Self::atomic_commit) hands them down in one
    /// [`Backing::commit_atomic`], or [`atomic_abort`](Self::atomic_abort) (or a crash)
    /// drops them. Staged pages are held outside the cache's page limit. A second begin
    /// keeps the staged pages.
    pub fn atomic_begin(&mut self, now_ns: Nanos, ino: Ino) -> Result<Nanos, CacheError> {
        self.enter(now_ns)?;
        let mut t = now_ns + self.config.call_overhead_ns;
        if self.tx.is_some() {
            return Err(CacheError::Backing(BackingError::Io {
                ino,
                reason: "atomic writes are not offered with MobiFS's transactions".into(),
            }));
        }
        if !self.atomic.contains_key(&ino) {
            t = self.write_back_file(t, ino, WritebackReason::Sync)?;
            let (size_bytes, done) = self.ensure_file(t, ino)?;
            t = done;
            self.forget_file_if_unused(ino);
            self.atomic.insert(ino, FileVersion::begin(size_bytes));
        }
        self.record(CallKind::AtomicBegin, now_ns, t);
        Ok(t)
    }

    /// Commits the atomic write of `ino` (`F2FS_IOC_COMMIT_ATOMIC_WRITE`): the staged
    /// pages and size go down in one [`Backing::commit_atomic`] (durable all or nothing,
    /// an fsync), then stay cached as clean pages. On an error they are dropped. Ends the
    /// atomic write either way.
    pub fn atomic_commit(&mut self, now_ns: Nanos, ino: Ino) -> Result<Nanos, CacheError> {
        self.enter(now_ns)?;
        let mut t = now_ns + self.config.call_overhead_ns;
        let Some(mut staged) = self.atomic.remove(&ino) else {
            return Err(CacheError::Backing(BackingError::Io {
                ino,
                reason: "no atomic write in progress".into(),
            }));
        };
        // Pages a truncate cut and a later growth brought back are zeros: written as such,
        // so that the blocks below are replaced with the rest.
        let regrown = staged.low_water_bytes.div_ceil(PAGE_BYTES)
            ..staged
                .size_bytes
                .min(staged.begin_size_bytes)
                .div_ceil(PAGE_BYTES);
        for page_index in regrown {
            staged
                .pages
                .entry(page_index)
                .or_insert_with(|| Box::new([0u8; PAGE_SIZE_BYTES]));
        }
        let pages: Vec<(u64, &Page)> = staged
            .pages
            .iter()
            .map(|(&index, page)| (index, &**page))
            .collect();
        t = self
            .backing
            .commit_atomic(t, ino, &pages, staged.size_bytes)?;
        *self
            .metrics
            .pages_written_back
            .entry(WritebackReason::Fsync)
            .or_default() += pages.len() as u64;
        self.metrics.write_back_calls += 1;
        // The committed state is now the file's: cached pages a truncate cut go, staged
        // pages replace (or join) the cached ones as clean pages.
        let cut_from = staged.low_water_bytes.div_ceil(PAGE_BYTES);
        let stale: Vec<u64> = self
            .pages
            .range((ino, cut_from)..=(ino, u64::MAX))
            .map(|(&(_, page_index), _)| page_index)
            .filter(|page_index| !staged.pages.contains_key(page_index))
            .collect();
        for page_index in stale {
            self.drop_page(ino, page_index);
        }
        t = self.ensure_file(t, ino)?.1;
        self.files
            .get_mut(&ino)
            .expect("file state exists after ensure_file")
            .size_bytes = staged.size_bytes;
        for (page_index, data) in staged.pages {
            if let Some(page) = self.pages.get_mut(&(ino, page_index)) {
                page.data = data;
                self.touch(ino, page_index);
                continue;
            }
            t = self.make_room(t, ino)?;
            self.insert_clean(ino, page_index, data);
        }
        self.forget_file_if_unused(ino);
        self.record(CallKind::AtomicCommit, now_ns, t);
        Ok(t)
    }

    /// Drops the staged pages of `ino` and ends its atomic write
    /// (`F2FS_IOC_ABORT_ATOMIC_WRITE`): the file reads as it was at `atomic_begin`.
    pub fn atomic_abort(&mut self, now_ns: Nanos, ino: Ino) -> Result<Nanos, CacheError> {
        self.enter(now_ns)?;
        let t = now_ns + self.config.call_overhead_ns;
        self.atomic.remove(&ino);
        self.record(CallKind::AtomicAbort, now_ns, t);
        Ok(t)
    }

    /// Whether `ino` is in an atomic write.
    pub fn is_atomic(&self, ino: Ino) -> bool {
        self.atomic.contains_key(&ino)
    }

    /// The content of page `page_index` as the atomic write of `ino` sees it, staged
    /// (copied from the cache or read from below on first touch unless `overwrite`).
    fn staged_page(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        page_index: u64,
        overwrite: bool,
    ) -> Result<Nanos, CacheError> {
        let staged = self.atomic.get(&ino).expect("atomic write in progress");
        if staged.pages.contains_key(&page_index) {
            return Ok(now_ns);
        }
        let cut = staged.is_cut(page_index);
        let mut t = now_ns;
        let mut data: Box<Page> = Box::new([0u8; PAGE_SIZE_BYTES]);
        if !cut && !overwrite {
            if let Some(page) = self.pages.get(&(ino, page_index)) {
                data.copy_from_slice(&page.data[..]);
            } else {
                self.metrics.read_modify_write_reads += 1;
                t = self.backing.read_page(t, ino, page_index, &mut data)?;
            }
            staged.zero_cut_tail(page_index, &mut data);
        }
        self.atomic
            .get_mut(&ino)
            .expect("atomic write in progress")
            .pages
            .insert(page_index, data);
        Ok(t)
    }

    fn write_staged(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        offset_bytes: u64,
        data: &[u8],
    ) -> Result<Nanos, CacheError> {
        let end_bytes = write_end(ino, offset_bytes, data.len() as u64)?;
        let mut t = now_ns + self.config.call_overhead_ns;
        for span in page_spans(offset_bytes, end_bytes) {
            let page_index = span.page_index;
            let size_bytes = self.atomic[&ino].size_bytes;
            let overwrite = span.is_full_page() || page_index * PAGE_BYTES >= size_bytes;
            t = self.staged_page(t, ino, page_index, overwrite)?;
            let staged = self.atomic.get_mut(&ino).expect("atomic write in progress");
            staged.pages.get_mut(&page_index).expect("page staged")[span.start..span.end]
                .copy_from_slice(&data[span.buf_range()]);
            t += self.config.memcpy_ns_per_page;
            staged.size_bytes = staged.size_bytes.max(span.end_bytes());
        }
        self.record(CallKind::Write, now_ns, t);
        Ok(t)
    }

    fn read_staged(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        offset_bytes: u64,
        buf: &mut [u8],
    ) -> Result<(usize, Nanos), CacheError> {
        let mut t = now_ns + self.config.call_overhead_ns;
        let size_bytes = self.atomic[&ino].size_bytes;
        let end_bytes = offset_bytes
            .saturating_add(buf.len() as u64)
            .min(size_bytes);
        for span in page_spans(offset_bytes, end_bytes) {
            let (page_index, in_page_start, in_page_end) = (span.page_index, span.start, span.end);
            let target = &mut buf[span.buf_range()];
            let staged = &self.atomic[&ino];
            if let Some(page) = staged.pages.get(&page_index) {
                target.copy_from_slice(&page[in_page_start..in_page_end]);
            } else if staged.is_cut(page_index) {
                target.fill(0);
            } else {
                if self.pages.contains_key(&(ino, page_index)) {
                    self.metrics.read_hits += 1;
                    self.touch(ino, page_index);
                } else {
                    self.metrics.read_misses += 1;
                    t = self.ensure_file(t, ino)?.1;
                    t = self.load_page(t, ino, page_index, true)?;
                }
                target.copy_from_slice(
                    &self.page_mut(ino, page_index).data[in_page_start..in_page_end],
                );
                // Bytes a truncate during the atomic write cut read as zeros.
                let low_water = self.atomic[&ino].low_water_bytes;
                let cut = low_water.saturating_sub(page_index * PAGE_BYTES) as usize;
                if cut < in_page_end {
                    let from = cut.max(in_page_start) - in_page_start;
                    target[from..].fill(0);
                }
            }
            t += self.config.memcpy_ns_per_page;
        }
        self.forget_file_if_unused(ino);
        self.record(CallKind::Read, now_ns, t);
        Ok((end_bytes.saturating_sub(offset_bytes) as usize, t))
    }

    fn truncate_staged(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        size_bytes: u64,
    ) -> Result<Nanos, CacheError> {
        let mut t = now_ns + self.config.call_overhead_ns;
        let keep_pages = size_bytes.div_ceil(PAGE_BYTES);
        let tail = (size_bytes % PAGE_BYTES) as usize;
        if tail != 0 && size_bytes < self.atomic[&ino].size_bytes {
            t = self.staged_page(t, ino, keep_pages - 1, false)?;
        }
        let staged = self.atomic.get_mut(&ino).expect("atomic write in progress");
        drop(staged.cut(size_bytes));
        self.record(CallKind::Truncate, now_ns, t);
        Ok(t)
    }

    fn sync_file(&mut self, now_ns: Nanos, ino: Ino, data_only: bool) -> Result<Nanos, CacheError> {
        self.enter(now_ns)?;
        let mut t = now_ns + self.config.call_overhead_ns;
        match self.policy.fsync(ino, data_only) {
            FsyncDecision::WriteBackAndSync => {
                t = self.write_back_file(t, ino, WritebackReason::Fsync)?;
                t = self.backing.fsync(t, ino, data_only)?;
            }
            FsyncDecision::Seal => self.seal(now_ns, self.owner(ino), false),
            FsyncDecision::Defer => {}
        }
        let kind = if data_only {
            CallKind::Fdatasync
        } else {
            CallKind::Fsync
        };
        self.record(kind, now_ns, t);
        // Every fsync checks the file's error, whoever's writeback failed (this one's, the
        // flusher's, a throttled writer's): `file_check_and_advance_wb_err`.
        self.errors.for_sync.remove(&ino);
        match self.errors.by_file.remove(&ino) {
            Some(error) => Err(CacheError::Writeback {
                ino,
                error,
                done_ns: t,
            }),
            None => Ok(t),
        }
    }

    fn enter(&mut self, now_ns: Nanos) -> Result<(), CacheError> {
        if now_ns < self.last_call_ns {
            return Err(CacheError::TimeWentBackwards {
                now_ns,
                last_ns: self.last_call_ns,
            });
        }
        self.last_call_ns = now_ns;
        self.run_flusher(now_ns)
    }

    fn view(&self, now_ns: Nanos) -> DirtyView {
        DirtyView {
            now_ns,
            dirty_bytes: self.dirty_bytes(),
            oldest_dirty: self.dirty_inodes.first().copied(),
        }
    }

    /// The flusher works in its own virtual time up to `now_ns`: each decision is taken at the
    /// flusher's clock, and writeback moves that clock by the file system's service time.
    fn run_flusher(&mut self, now_ns: Nanos) -> Result<(), CacheError> {
        while self.flusher_ns <= now_ns {
            self.tx_seal_events(self.flusher_ns);
            let decision = match self.tx.is_some() {
                true => self.policy.checkpoint(&self.tx_view(self.flusher_ns)),
                false => self.policy.flusher(&self.view(self.flusher_ns)),
            };
            match decision {
                FlusherDecision::Checkpoint { scope, reason } => {
                    let done_ns = self.checkpoint(self.flusher_ns, scope, reason)?;
                    self.flusher_ns = done_ns.max(self.flusher_ns + 1);
                }
                FlusherDecision::WriteBack { ino, reason } => {
                    let done_ns = self.write_back_batch(self.flusher_ns, ino, reason, false)?;
                    // A zero-cost file system still moves the flusher forward.
                    self.flusher_ns = done_ns.max(self.flusher_ns + 1);
                }
                FlusherDecision::SleepUntil(_) | FlusherDecision::Idle => {
                    let wake_ns = match decision {
                        FlusherDecision::SleepUntil(wake_ns) => Some(wake_ns),
                        _ => None,
                    };
                    // The seal policy's next event (an e-curve sample, a bound deadline)
                    // wakes the flusher too.
                    let wake_ns = wake_ns
                        .into_iter()
                        .chain(self.tx_next_seal_event_ns())
                        .min();
                    match wake_ns {
                        Some(wake_ns) if wake_ns <= now_ns => {
                            debug_assert!(wake_ns >= self.flusher_ns, "the flusher sleeps forward");
                            self.flusher_ns = wake_ns.max(self.flusher_ns + 1);
                        }
                        _ => {
                            self.flusher_ns = now_ns;
                            break;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// A waited-for writeback of every dirty page of `ino` (fsync, sync), batch by batch.
    /// The kernel does this in one `writepages` call, so every batch carries the dirty-page
    /// count the file had when it began.
    fn write_back_file(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        reason: WritebackReason,
    ) -> Result<Nanos, CacheError> {
        let mut t = now_ns;
        let dirty_at_start = self
            .files
            .get(&ino)
            .map_or(0, |f| f.dirty_pages.len() as u64);
        while self
            .files
            .get(&ino)
            .is_some_and(|file| !file.dirty_pages.is_empty())
        {
            t = self.write_back_pages(t, ino, reason, true, Some(dirty_at_start))?;
        }
        Ok(t)
    }

    /// One asynchronous-style batch (flusher, throttle, pressure): the hint counts the
    /// file's dirty pages now.
    fn write_back_batch(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        reason: WritebackReason,
        sync: bool,
    ) -> Result<Nanos, CacheError> {
        self.write_back_pages(now_ns, ino, reason, sync, None)
    }

    /// Writes back up to one batch of `ino`'s dirty pages in page-index order, one
    /// `write_pages_hinted` call per contiguous run. Returns the completion time.
    fn write_back_pages(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        reason: WritebackReason,
        sync: bool,
        inode_dirty_pages: Option<u64>,
    ) -> Result<Nanos, CacheError> {
        let Some(file) = self.files.get(&ino) else {
            return Ok(now_ns);
        };
        let size_bytes = file.size_bytes;
        let hint = WritebackHint {
            reason,
            sync,
            inode_dirty_pages: inode_dirty_pages.unwrap_or(file.dirty_pages.len() as u64),
        };
        let batch: Vec<u64> = file
            .dirty_pages
            .iter()
            .take(self.config.writeback_batch_pages_max as usize)
            .copied()
            .collect();
        let mut t = now_ns;
        let mut run_start = 0;
        while run_start < batch.len() {
            let mut run_end = run_start + 1;
            while run_end < batch.len() && batch[run_end] == batch[run_end - 1] + 1 {
                run_end += 1;
            }
            let run = &batch[run_start..run_end];
            let pages: Vec<&Page> = run
                .iter()
                .map(|&index| &*self.pages[&(ino, index)].data)
                .collect();
            let written = self
                .backing
                .write_pages_hinted(t, ino, run[0], &pages, size_bytes, hint);
            self.metrics.write_back_calls += 1;
            match written {
                Ok(done) => {
                    t = done;
                    *self.metrics.pages_written_back.entry(reason).or_default() += run.len() as u64;
                }
                // Nothing can be written until power returns: the pages stay dirty.
                Err(error) if error.is_power_loss() => return Err(error.into()),
                // Linux marks the pages clean (their data is lost) and keeps the error for
                // the file's next fsync; retrying would wedge every later call on them.
                Err(error) => self.writeback_failed(ino, run.len() as u64, error),
            }
            run_start = run_end;
        }
        for page_index in batch {
            self.mark_clean(ino, page_index);
        }
        Ok(t)
    }

    /// A writeback of `pages` pages of `ino` failed with `error` (their data is lost).
    fn writeback_failed(&mut self, ino: Ino, pages: u64, error: BackingError) {
        self.metrics.writeback_errors += 1;
        self.metrics.writeback_pages_lost += pages;
        self.errors.seen += 1;
        self.errors.latest = Some((ino, error.clone()));
        self.errors.for_sync.insert(ino, error.clone());
        self.errors.by_file.insert(ino, error);
    }

    /// The file's state, fetching its size from below on first use.
    fn ensure_file(&mut self, now_ns: Nanos, ino: Ino) -> Result<(u64, Nanos), CacheError> {
        if let Some(file) = self.files.get(&ino) {
            return Ok((file.size_bytes, now_ns));
        }
        let (size_bytes, done_ns) = self.backing.file_size(now_ns, ino)?;
        self.files.insert(
            ino,
            FileState {
                size_bytes,
                ..FileState::default()
            },
        );
        Ok((size_bytes, done_ns))
    }

    /// Makes page `page_index` of `ino` resident (reading it from below if `read_below`,
    /// else zeroed); returns the time it is ready.
    fn load_page(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        page_index: u64,
        read_below: bool,
    ) -> Result<Nanos, CacheError> {
        if self.pages.contains_key(&(ino, page_index)) {
            self.touch(ino, page_index);
            return Ok(self.ra_use(now_ns, ino, page_index));
        }
        let mut t = self.make_room(now_ns, ino)?;
        let mut data = self.zeroed_page();
        if read_below && self.tx_reads_below(ino, page_index) {
            t = self.backing.read_page(t, ino, page_index, &mut data)?;
            self.tx_zero_cut_tail(ino, page_index, &mut data);
        }
        self.insert_clean(ino, page_index, data);
        Ok(t)
    }

    /// Makes the missing pages from `first` resident, up to the next resident page, `end`
    /// or the read batch, reading them below in one call (so the file system can issue
    /// them as few requests as their layout allows); returns the time they are ready and
    /// the index past the last one.
    fn load_run(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        first: u64,
        end: u64,
    ) -> Result<(Nanos, u64), CacheError> {
        let batch = (self.config.cache_pages_max() / 4).clamp(1, READ_BATCH_PAGES_MAX);
        let mut run_end = first + 1;
        while run_end < end
            && run_end - first < batch
            && !self.pages.contains_key(&(ino, run_end))
            && self.tx_reads_below(ino, run_end)
        {
            run_end += 1;
        }
        if run_end == first + 1 || !self.tx_reads_below(ino, first) {
            return Ok((self.load_page(now_ns, ino, first, true)?, first + 1));
        }
        let mut t = self.make_room_for(now_ns, ino, run_end - first)?;
        let mut pages: Vec<Box<Page>> = (first..run_end).map(|_| self.zeroed_page()).collect();
        t = self.backing.read_pages(t, ino, first, &mut pages)?;
        for (index, mut data) in (first..run_end).zip(pages) {
            self.tx_zero_cut_tail(ino, index, &mut data);
            self.insert_clean(ino, index, data);
        }
        Ok((t, run_end))
    }

    /// Caches a clean page as the most recently used (room already made).
    fn insert_clean(&mut self, ino: Ino, page_index: u64, data: Box<Page>) {
        self.lru_clock += 1;
        self.pages.insert(
            (ino, page_index),
            CachedPage {
                data,
                dirty: false,
                lru_seq: self.lru_clock,
            },
        );
        self.clean_lru.insert(self.lru_clock, (ino, page_index));
    }

    /// Frees a slot if the cache is full: the least recently used clean page, or if every
    /// page is dirty, writeback of the longest-dirty inode first (pressure).
    /// The state of `in_use` is kept even if its last page goes.
    fn make_room(&mut self, now_ns: Nanos, in_use: Ino) -> Result<Nanos, CacheError> {
        self.make_room_for(now_ns, in_use, 1)
    }

    /// Frees slots until `pages` more fit (page table and transaction versions count).
    fn make_room_for(
        &mut self,
        now_ns: Nanos,
        in_use: Ino,
        pages: u64,
    ) -> Result<Nanos, CacheError> {
        let mut t = now_ns;
        while self.resident_pages() + pages > self.config.cache_pages_max() {
            if let Some((_, (ino, page_index))) = self.clean_lru.pop_first() {
                if let Some(page) = self.pages.remove(&(ino, page_index)) {
                    self.recycle(page.data);
                }
                self.ra_forget(ino, page_index);
                self.metrics.evictions += 1;
                if ino != in_use {
                    self.forget_file_if_unused(ino);
                }
                continue;
            }
            if self.tx.is_some() {
                t = self.tx_relieve(t, in_use)?;
                continue;
            }
            let &(_, ino) = self
                .dirty_inodes
                .first()
                .expect("a full cache with no clean page has dirty pages");
            t = self.write_back_batch(t, ino, WritebackReason::Pressure, false)?;
        }
        Ok(t)
    }

    fn page_mut(&mut self, ino: Ino, page_index: u64) -> &mut CachedPage {
        self.pages
            .get_mut(&(ino, page_index))
            .expect("page is resident")
    }

    fn touch(&mut self, ino: Ino, page_index: u64) {
        self.lru_clock += 1;
        let clock = self.lru_clock;
        let page = self
            .pages
            .get_mut(&(ino, page_index))
            .expect("page is resident");
        if !page.dirty {
            self.clean_lru.remove(&page.lru_seq);
            self.clean_lru.insert(clock, (ino, page_index));
        }
        page.lru_seq = clock;
    }

    fn mark_dirty(&mut self, now_ns: Nanos, ino: Ino, page_index: u64) {
        let page = self
            .pages
            .get_mut(&(ino, page_index))
            .expect("page is resident");
        if page.dirty {
            return;
        }
        page.dirty = true;
        self.clean_lru.remove(&page.lru_seq);
        self.dirty_page_count += 1;
        let file = self.files.get_mut(&ino).expect("file state exists");
        file.dirty_pages.insert(page_index);
        if file.dirtied_ns.is_none() {
            file.dirtied_ns = Some(now_ns);
            self.dirty_inodes.insert((now_ns, ino));
        }
    }

    fn mark_clean(&mut self, ino: Ino, page_index: u64) {
        let Some(page) = self.pages.get_mut(&(ino, page_index)) else {
            return;
        };
        if !page.dirty {
            return;
        }
        page.dirty = false;
        self.clean_lru.insert(page.lru_seq, (ino, page_index));
        self.forget_dirty(ino, page_index);
    }

    fn drop_page(&mut self, ino: Ino, page_index: u64) {
        self.ra_forget(ino, page_index);
        if let Some(page) = self.pages.remove(&(ino, page_index)) {
            if page.dirty {
                self.forget_dirty(ino, page_index);
            } else {
                self.clean_lru.remove(&page.lru_seq);
            }
            self.recycle(page.data);
        }
    }

    /// The cached page indices of `ino` from `first_page` on.
    fn cached_from(&self, ino: Ino, first_page: u64) -> Vec<u64> {
        self.pages
            .range((ino, first_page)..=(ino, u64::MAX))
            .map(|(&(_, page_index), _)| page_index)
            .collect()
    }

    /// Drops a page; a sealed transaction's version of it is copied there first.
    fn drop_page_keeping_versions(&mut self, ino: Ino, page_index: u64) {
        let frozen = self
            .tx
            .as_ref()
            .is_some_and(|tx| tx.is_frozen(ino, page_index));
        if frozen {
            self.copy_frozen(ino, page_index);
        }
        self.drop_page(ino, page_index);
    }

    fn forget_dirty(&mut self, ino: Ino, page_index: u64) {
        self.dirty_page_count -= 1;
        let file = self.files.get_mut(&ino).expect("file state exists");
        file.dirty_pages.remove(&page_index);
        if file.dirty_pages.is_empty() {
            let dirtied_ns = file
                .dirtied_ns
                .take()
                .expect("a dirty inode has dirtied_ns");
            self.dirty_inodes.remove(&(dirtied_ns, ino));
        }
    }

    /// Drops the file's state when it has no page and no dirty state: its size then equals
    /// the file system's, which is asked again on next use.
    fn forget_file_if_unused(&mut self, ino: Ino) {
        let unused = self
            .files
            .get(&ino)
            .is_some_and(|file| file.dirty_pages.is_empty())
            && self
                .pages
                .range((ino, 0)..=(ino, u64::MAX))
                .next()
                .is_none()
            && !self.tx_pins(ino);
        if unused {
            self.files.remove(&ino);
        }
    }

    fn record(&mut self, kind: CallKind, issued_ns: Nanos, done_ns: Nanos) {
        self.metrics
            .latency
            .entry(kind)
            .or_default()
            .record(done_ns - issued_ns);
    }
}

/// The end of a write of `length_bytes` at `offset_bytes`, or the overflow as an error.
fn write_end(ino: Ino, offset_bytes: u64, length_bytes: u64) -> Result<u64, CacheError> {
    offset_bytes
        .checked_add(length_bytes)
        .ok_or(CacheError::RangeOverflow {
            ino,
            offset_bytes,
            length_bytes,
        })
}
