//! [`MountBacking`]: the page cache's [`Backing`] under a mount, F2FS's [`F2fsBacking`] with
//! Linux's rule for writeback errors.
//!
//! A program that wrote into the page cache has already been told its write succeeded;
//! when writing those pages back fails (no space left, a device error), Linux marks the
//! pages clean, keeps the error on the file (`mapping_set_error`, errseq) and reports it to
//! the next `fsync` of that file (and to `syncfs`). This wrapper does the same: a failed
//! `write_pages` drops the run (the cache then marks it clean, its data lost) and records
//! the error for the inode; the mount's core reports it at the inode's next fsync or at
//! sync. Without this a failed writeback would leave the pages dirty and every later cache
//! call would retry it and fail, so one full file system would wedge the whole mount.

use std::collections::BTreeMap;

use flashstack_block::BlockDevice;
use flashstack_cache::{Backing, BackingError, Ino, Page, WritebackHint};
use flashstack_f2fs::{F2fs, FsError as F2fsFsError};
use flashstack_sim::Nanos;
use flashstack_stack::F2fsBacking;

/// A writeback failure kept for the file's next fsync.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WritebackError {
    /// F2FS had no free block for the data.
    NoSpace,
    /// Anything else (a device error); the text says what.
    Io(String),
}

/// [`F2fsBacking`] that keeps writeback errors per inode instead of failing the cache.
pub struct MountBacking<D: BlockDevice> {
    inner: F2fsBacking<D>,
    /// Errors not yet reported, by inode (the first one wins, as errseq reports one).
    errors: BTreeMap<Ino, WritebackError>,
    /// Pages whose writeback failed (their data is lost), over the mount's life.
    pages_lost: u64,
    /// A writeback ran out of space and nothing has been freed since.
    out_of_space: bool,
}

impl<D: BlockDevice> MountBacking<D> {
    pub fn new(fs: F2fs<D>) -> Self {
        MountBacking {
            inner: F2fsBacking::new(fs),
            errors: BTreeMap::new(),
            pages_lost: 0,
            out_of_space: false,
        }
    }

    pub fn fs(&self) -> &F2fs<D> {
        self.inner.fs()
    }

    pub fn fs_mut(&mut self) -> &mut F2fs<D> {
        self.inner.fs_mut()
    }

    pub fn into_fs(self) -> F2fs<D> {
        self.inner.into_fs()
    }

    /// The error kept for `ino`, if any, now reported (and forgotten).
    pub fn take_error(&mut self, ino: Ino) -> Option<WritebackError> {
        self.errors.remove(&ino)
    }

    /// Every error kept, now reported (`sync`): the first by inode number.
    pub fn take_any_error(&mut self) -> Option<WritebackError> {
        let first = self.errors.values().next().cloned();
        self.errors.clear();
        first
    }

    /// The inode is gone: an error kept for it has nobody left to report to.
    pub fn forget(&mut self, ino: Ino) {
        self.errors.remove(&ino);
    }

    pub fn pages_lost(&self) -> u64 {
        self.pages_lost
    }

    /// Whether a writeback ran out of space since space was last freed.
    pub fn out_of_space(&self) -> bool {
        self.out_of_space
    }

    /// Space was freed (a file deleted or shrunk): writes may extend files again.
    pub fn space_freed(&mut self) {
        self.out_of_space = false;
    }

    /// Records a failed writeback of `pages` pages of `ino`; returns the time to go on at.
    fn failed(&mut self, now_ns: Nanos, ino: Ino, pages: usize, error: BackingError) -> Nanos {
        let kept = match &error {
            BackingError::Io { reason, .. } if *reason == F2fsFsError::NoSpace.to_string() => {
                self.out_of_space = true;
                WritebackError::NoSpace
            }
            other => WritebackError::Io(other.to_string()),
        };
        self.errors.entry(ino).or_insert(kept);
        self.pages_lost += pages as u64;
        now_ns.max(self.inner.fs().now_ns())
    }
}

impl<D: BlockDevice> Backing for MountBacking<D> {
    fn read_page(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        page_index: u64,
        page: &mut Page,
    ) -> Result<Nanos, BackingError> {
        self.inner.read_page(now_ns, ino, page_index, page)
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
        match self
            .inner
            .write_pages(now_ns, ino, first_page_index, pages, file_size_bytes, sync)
        {
            Ok(done) => Ok(done),
            Err(e) => Ok(self.failed(now_ns, ino, pages.len(), e)),
        }
    }

    fn write_pages_hinted(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        first_page_index: u64,
        pages: &[&Page],
        file_size_bytes: u64,
        hint: WritebackHint,
    ) -> Result<Nanos, BackingError> {
        match self.inner.write_pages_hinted(
            now_ns,
            ino,
            first_page_index,
            pages,
            file_size_bytes,
            hint,
        ) {
            Ok(done) => Ok(done),
            Err(e) => Ok(self.failed(now_ns, ino, pages.len(), e)),
        }
    }

    fn fsync(&mut self, now_ns: Nanos, ino: Ino, data_only: bool) -> Result<Nanos, BackingError> {
        self.inner.fsync(now_ns, ino, data_only)
    }

    fn sync_all(&mut self, now_ns: Nanos) -> Result<Nanos, BackingError> {
        self.inner.sync_all(now_ns)
    }

    fn truncate(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        size_bytes: u64,
    ) -> Result<Nanos, BackingError> {
        self.inner.truncate(now_ns, ino, size_bytes)
    }

    fn unlink(&mut self, now_ns: Nanos, ino: Ino) -> Result<Nanos, BackingError> {
        self.inner.unlink(now_ns, ino)
    }

    fn file_size(&mut self, now_ns: Nanos, ino: Ino) -> Result<(u64, Nanos), BackingError> {
        self.inner.file_size(now_ns, ino)
    }
}
