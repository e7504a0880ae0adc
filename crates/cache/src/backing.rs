//! The seam below the page cache: what the cache asks of a file system, and an in-memory file
//! system for tests that records every call and can lose power.

use std::collections::BTreeMap;

use flashstack_sim::Nanos;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::{Ino, Page, WritebackReason, PAGE_SIZE_BYTES};

/// Errors a file system below the cache reports.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum BackingError {
    #[error("file system is powered off")]
    PoweredOff,
    #[error("inode {ino}: no space left on the file system")]
    NoSpace { ino: Ino },
    #[error("inode {ino}: {reason}")]
    Io { ino: Ino, reason: String },
}

impl BackingError {
    /// The file system lost power: nothing can be written until it is recovered, so the
    /// cache keeps its dirty pages and fails the call (this is not a writeback error that
    /// a later fsync reports; see [`PageCache`](crate::PageCache)).
    pub fn is_power_loss(&self) -> bool {
        matches!(self, BackingError::PoweredOff)
    }
}

/// The file system below the page cache.
///
/// Physics: the cache talks to the file system in whole 4 KiB pages ([`PAGE_SIZE_BYTES`]),
/// addressed by inode number and page index within the file (byte offset / 4096). Every call
/// takes the virtual time at which it is issued (`now_ns`) and returns the virtual time at
/// which it completes; the cache never reads a clock.
///
/// Durability contract (what survives power loss):
/// - [`write_pages`](Backing::write_pages) hands pages to the file system. They are readable
///   from it at once but are **volatile** (they may be lost, or for a real F2FS may survive
///   only as far as its checkpoints and roll-forward reach) until a barrier.
/// - [`fsync`](Backing::fsync) (`data_only = false`) is the barrier: when it returns, every
///   page of that inode handed down earlier, its size and its metadata survive power loss.
///   `fdatasync` (`data_only = true`) makes the data and the size durable; other metadata may
///   be lost. [`sync_all`](Backing::sync_all) is the barrier for every inode, unlinks included.
/// - [`truncate`](Backing::truncate) and [`unlink`](Backing::unlink) take effect at once for
///   readers and become durable at the next barrier that covers them.
/// - Bytes of a page beyond the file size, and pages never written (holes), read as zeros.
///
/// The `sync` flag on `write_pages` says the caller waits for the write (fsync, sync,
/// unmount); `false` is asynchronous writeback (the kernel's `WB_SYNC_NONE`), which a file
/// system may schedule differently. It does not by itself make the pages durable.
pub trait Backing {
    /// A read (`write` false) or write system call on `ino` reached the cache, hit or
    /// miss: what the kernel counts per inode in `__vfs_read` / `__vfs_write`. A file
    /// system that classes files by their calls (MedFS's HCluster) counts them here; by
    /// default nothing. No time passes and nothing is written.
    fn note_call(&mut self, ino: Ino, write: bool) {
        let _ = (ino, write);
    }

    /// Reads page `page_index` of `ino` into `page`. Zeros beyond the file's size or in holes;
    /// an unknown inode reads as an empty file.
    fn read_page(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        page_index: u64,
        page: &mut Page,
    ) -> Result<Nanos, BackingError>;

    /// Reads consecutive pages from `first_page_index` into `pages`, as one read of a
    /// range: a file system may issue them as few block requests as their addresses allow
    /// (F2FS does: a fragmented file pays for each piece). By default, page by page.
    fn read_pages(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        first_page_index: u64,
        pages: &mut [Box<Page>],
    ) -> Result<Nanos, BackingError> {
        let mut t = now_ns;
        for (k, page) in pages.iter_mut().enumerate() {
            t = self.read_page(t, ino, first_page_index + k as u64, page)?;
        }
        Ok(t)
    }

    /// Writes `pages` at consecutive page indices starting at `first_page_index`, and sets
    /// the file's size to `file_size_bytes` (the cache's view of it). Creates the inode if
    /// it does not exist.
    fn write_pages(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        first_page_index: u64,
        pages: &[&Page],
        file_size_bytes: u64,
        sync: bool,
    ) -> Result<Nanos, BackingError>;

    /// As [`write_pages`](Backing::write_pages), with what the cache knows about this
    /// writeback. A file system whose placement depends on it overrides this (F2FS: a
    /// writeback of at most 16 dirty pages marks the file's data hot, and an fsync's
    /// writeback of few pages may update in place); the default ignores the hint. Same
    /// durability as `write_pages`: volatile until a barrier.
    fn write_pages_hinted(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        first_page_index: u64,
        pages: &[&Page],
        file_size_bytes: u64,
        hint: WritebackHint,
    ) -> Result<Nanos, BackingError> {
        self.write_pages(
            now_ns,
            ino,
            first_page_index,
            pages,
            file_size_bytes,
            hint.sync,
        )
    }

    /// The barrier for one inode (`data_only` for fdatasync).
    fn fsync(&mut self, now_ns: Nanos, ino: Ino, data_only: bool) -> Result<Nanos, BackingError>;

    /// The barrier for the whole file system (sync, unmount).
    fn sync_all(&mut self, now_ns: Nanos) -> Result<Nanos, BackingError>;

    /// Commits an atomic write: `pages` (page index and content, ascending) and the size
    /// `file_size_bytes` become durable **all or nothing** — after a power cut either
    /// every one of them is there or the file is as its last barrier left it. A barrier
    /// for the inode, as `fsync`. The default fails: a file system without atomic writes
    /// (the cache then reports the error, and SQLite falls back to its journal).
    fn commit_atomic(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        pages: &[(u64, &Page)],
        file_size_bytes: u64,
    ) -> Result<Nanos, BackingError> {
        let _ = (now_ns, pages, file_size_bytes);
        Err(BackingError::Io {
            ino,
            reason: "atomic writes not supported".into(),
        })
    }

    /// Commits several files at once, **all or nothing** (MobiFS's checkpoint): after a
    /// power cut either every file of `files` is as given or every one is as the last
    /// barrier left it. Each file is first cut to its `cut_bytes` (pages from there not
    /// in `pages` read as zeros), then gets `pages` and `size_bytes`. A barrier for those
    /// files. The default fails: a file system without it (MobiFS cannot run there).
    fn commit_batch(
        &mut self,
        now_ns: Nanos,
        files: &[BatchCommit<'_>],
    ) -> Result<Nanos, BackingError> {
        let _ = now_ns;
        Err(BackingError::Io {
            ino: files.first().map_or(0, |f| f.ino),
            reason: "batch atomic commits not supported".into(),
        })
    }

    /// Sets the file's size (shrinking drops data beyond it; growing adds a hole).
    fn truncate(&mut self, now_ns: Nanos, ino: Ino, size_bytes: u64)
        -> Result<Nanos, BackingError>;

    /// Removes the inode.
    fn unlink(&mut self, now_ns: Nanos, ino: Ino) -> Result<Nanos, BackingError>;

    /// The file's size as the file system knows it (0 for an unknown inode) and the
    /// completion time of the query.
    fn file_size(&mut self, now_ns: Nanos, ino: Ino) -> Result<(u64, Nanos), BackingError>;
}

/// One file of a [`Backing::commit_batch`].
#[derive(Clone, Debug)]
pub struct BatchCommit<'a> {
    pub ino: Ino,
    /// Page index and content, ascending.
    pub pages: Vec<(u64, &'a Page)>,
    pub size_bytes: u64,
    /// The smallest size since the last barrier (a truncate); the page holding a partial
    /// cut is among `pages`.
    pub cut_bytes: u64,
}

/// What the cache tells the file system about one writeback (one contiguous run of pages).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WritebackHint {
    /// Why the pages are written back.
    pub reason: WritebackReason,
    /// The caller waits for the write (the `sync` flag of `write_pages`).
    pub sync: bool,
    /// Dirty pages the inode had in the cache when this writeback of it began (the
    /// kernel's `get_dirty_pages(inode)` at `f2fs_write_cache_pages`), all runs included.
    pub inode_dirty_pages: u64,
}

impl WritebackHint {
    /// The writeback comes from fsync or fdatasync of this inode.
    pub fn is_fsync(&self) -> bool {
        self.reason == WritebackReason::Fsync
    }
}

/// One call the cache made, as [`MemBacking`] records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum BackingCall {
    ReadPage {
        at_ns: Nanos,
        ino: Ino,
        page_index: u64,
    },
    WritePages {
        at_ns: Nanos,
        ino: Ino,
        first_page_index: u64,
        page_count: u64,
        file_size_bytes: u64,
        sync: bool,
    },
    Fsync {
        at_ns: Nanos,
        ino: Ino,
        data_only: bool,
    },
    SyncAll {
        at_ns: Nanos,
    },
    CommitBatch {
        at_ns: Nanos,
        files: u64,
        pages: u64,
    },
    Truncate {
        at_ns: Nanos,
        ino: Ino,
        size_bytes: u64,
    },
    Unlink {
        at_ns: Nanos,
        ino: Ino,
    },
    FileSize {
        at_ns: Nanos,
        ino: Ino,
    },
}

/// Service times of the in-memory file system (fixed, no queueing).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemBackingCosts {
    pub read_ns_per_page: Nanos,
    pub write_ns_per_page: Nanos,
    pub fsync_ns: Nanos,
    pub metadata_ns: Nanos,
}

impl Default for MemBackingCosts {
    /// Round eMMC-like figures (a 4 KiB read about 100 µs, a program about 200 µs per page,
    /// a flush about 1 ms); the cache's tests only need them non-zero.
    fn default() -> Self {
        Self {
            read_ns_per_page: 100_000,
            write_ns_per_page: 200_000,
            fsync_ns: 1_000_000,
            metadata_ns: 10_000,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct MemFile {
    size_bytes: u64,
    pages: BTreeMap<u64, Box<Page>>,
}

impl MemFile {
    fn set_size(&mut self, size_bytes: u64) {
        let keep_pages = size_bytes.div_ceil(PAGE_SIZE_BYTES as u64);
        self.pages.retain(|&index, _| index < keep_pages);
        let tail = (size_bytes % PAGE_SIZE_BYTES as u64) as usize;
        if tail != 0 {
            if let Some(page) = self.pages.get_mut(&(keep_pages - 1)) {
                page[tail..].fill(0);
            }
        }
        self.size_bytes = size_bytes;
    }

    /// The file's bytes (for tests).
    fn bytes(&self) -> Vec<u8> {
        let mut out = vec![0u8; self.size_bytes as usize];
        for (&index, page) in &self.pages {
            let start = index as usize * PAGE_SIZE_BYTES;
            if start >= out.len() {
                break;
            }
            let end = (start + PAGE_SIZE_BYTES).min(out.len());
            out[start..end].copy_from_slice(&page[..end - start]);
        }
        out
    }
}

/// An in-memory file system for tests: a volatile view (what readers see) and a durable view
/// (what survives [`power_loss`](MemBacking::power_loss)); barriers copy volatile to durable.
/// It records every call in order (unbounded: a test double, not for long runs).
#[derive(Clone, Debug, Default)]
pub struct MemBacking {
    pub costs: MemBackingCosts,
    volatile: BTreeMap<Ino, MemFile>,
    durable: BTreeMap<Ino, MemFile>,
    calls: Vec<BackingCall>,
    powered_off: bool,
    /// Writes of these inodes fail with the error (a full or failing device, on demand).
    failing_writes: BTreeMap<Ino, BackingError>,
}

impl MemBacking {
    pub fn new(costs: MemBackingCosts) -> Self {
        Self {
            costs,
            ..Self::default()
        }
    }

    /// Every call so far, in order.
    pub fn calls(&self) -> &[BackingCall] {
        &self.calls
    }

    /// Power loss: everything not made durable by a barrier is lost. The file system refuses
    /// calls until [`power_on`](MemBacking::power_on).
    pub fn power_loss(&mut self) {
        self.volatile = self.durable.clone();
        self.powered_off = true;
    }

    pub fn power_on(&mut self) {
        self.powered_off = false;
    }

    /// The bytes readers would see now (`None` if the inode does not exist).
    pub fn volatile_bytes(&self, ino: Ino) -> Option<Vec<u8>> {
        self.volatile.get(&ino).map(MemFile::bytes)
    }

    /// The bytes that would survive power loss now.
    pub fn durable_bytes(&self, ino: Ino) -> Option<Vec<u8>> {
        self.durable.get(&ino).map(MemFile::bytes)
    }

    /// From now on every `write_pages` of `ino` fails with `error` (the call is recorded,
    /// nothing is written); `None` makes its writes succeed again.
    pub fn fail_writes(&mut self, ino: Ino, error: Option<BackingError>) {
        match error {
            Some(error) => self.failing_writes.insert(ino, error),
            None => self.failing_writes.remove(&ino),
        };
    }

    fn check_power(&self) -> Result<(), BackingError> {
        if self.powered_off {
            Err(BackingError::PoweredOff)
        } else {
            Ok(())
        }
    }
}

impl Backing for MemBacking {
    fn read_page(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        page_index: u64,
        page: &mut Page,
    ) -> Result<Nanos, BackingError> {
        self.check_power()?;
        self.calls.push(BackingCall::ReadPage {
            at_ns: now_ns,
            ino,
            page_index,
        });
        match self
            .volatile
            .get(&ino)
            .and_then(|file| file.pages.get(&page_index))
        {
            Some(stored) => page.copy_from_slice(&stored[..]),
            None => page.fill(0),
        }
        Ok(now_ns + self.costs.read_ns_per_page)
    }

    fn write_pages(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        first_page_index: u64,
        pages: &[&Page],
        file_size_bytes: u64,
        sync: bool,
    ) -> Result<Nanos, BackingError> {
        self.check_power()?;
        self.calls.push(BackingCall::WritePages {
            at_ns: now_ns,
            ino,
            first_page_index,
            page_count: pages.len() as u64,
            file_size_bytes,
            sync,
        });
        if let Some(error) = self.failing_writes.get(&ino) {
            return Err(error.clone());
        }
        let file = self.volatile.entry(ino).or_default();
        for (offset, page) in pages.iter().enumerate() {
            file.pages
                .insert(first_page_index + offset as u64, Box::new(**page));
        }
        file.set_size(file_size_bytes);
        Ok(now_ns + self.costs.write_ns_per_page * pages.len() as u64)
    }

    /// Every page, then the barrier: power is cut only between calls, so one call is
    /// all or nothing.
    fn commit_atomic(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        pages: &[(u64, &Page)],
        file_size_bytes: u64,
    ) -> Result<Nanos, BackingError> {
        let mut t = now_ns;
        for &(index, page) in pages {
            t = self.write_pages(t, ino, index, &[page], file_size_bytes, true)?;
        }
        if pages.is_empty() {
            t = self.truncate(t, ino, file_size_bytes)?;
        }
        self.fsync(t, ino, false)
    }

    /// One call, so all or nothing (power is cut only between calls); the barrier of the
    /// batch's files.
    fn commit_batch(
        &mut self,
        now_ns: Nanos,
        files: &[BatchCommit<'_>],
    ) -> Result<Nanos, BackingError> {
        self.check_power()?;
        let pages: u64 = files.iter().map(|f| f.pages.len() as u64).sum();
        self.calls.push(BackingCall::CommitBatch {
            at_ns: now_ns,
            files: files.len() as u64,
            pages,
        });
        if let Some(error) = files.iter().find_map(|f| self.failing_writes.get(&f.ino)) {
            return Err(error.clone());
        }
        for commit in files {
            let file = self.volatile.entry(commit.ino).or_default();
            file.set_size(commit.cut_bytes.min(file.size_bytes));
            for &(index, page) in &commit.pages {
                file.pages.insert(index, Box::new(*page));
            }
            file.set_size(commit.size_bytes);
            self.durable.insert(commit.ino, file.clone());
        }
        Ok(now_ns + self.costs.write_ns_per_page * pages + self.costs.fsync_ns)
    }

    fn fsync(&mut self, now_ns: Nanos, ino: Ino, data_only: bool) -> Result<Nanos, BackingError> {
        self.check_power()?;
        self.calls.push(BackingCall::Fsync {
            at_ns: now_ns,
            ino,
            data_only,
        });
        match self.volatile.get(&ino) {
            Some(file) => {
                self.durable.insert(ino, file.clone());
            }
            None => {
                self.durable.remove(&ino);
            }
        }
        Ok(now_ns + self.costs.fsync_ns)
    }

    fn sync_all(&mut self, now_ns: Nanos) -> Result<Nanos, BackingError> {
        self.check_power()?;
        self.calls.push(BackingCall::SyncAll { at_ns: now_ns });
        self.durable = self.volatile.clone();
        Ok(now_ns + self.costs.fsync_ns)
    }

    fn truncate(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        size_bytes: u64,
    ) -> Result<Nanos, BackingError> {
        self.check_power()?;
        self.calls.push(BackingCall::Truncate {
            at_ns: now_ns,
            ino,
            size_bytes,
        });
        self.volatile.entry(ino).or_default().set_size(size_bytes);
        Ok(now_ns + self.costs.metadata_ns)
    }

    fn unlink(&mut self, now_ns: Nanos, ino: Ino) -> Result<Nanos, BackingError> {
        self.check_power()?;
        self.calls.push(BackingCall::Unlink { at_ns: now_ns, ino });
        self.volatile.remove(&ino);
        Ok(now_ns + self.costs.metadata_ns)
    }

    fn file_size(&mut self, now_ns: Nanos, ino: Ino) -> Result<(u64, Nanos), BackingError> {
        self.check_power()?;
        self.calls
            .push(BackingCall::FileSize { at_ns: now_ns, ino });
        let size_bytes = self.volatile.get(&ino).map_or(0, |file| file.size_bytes);
        Ok((size_bytes, now_ns + self.costs.metadata_ns))
    }
}
