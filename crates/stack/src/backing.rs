//! The cache's [`Backing`] over the project's F2FS.

use flashstack_block::{BlockDevice, BlockError};
use flashstack_cache::{
    Backing, BackingError, BatchCommit, Ino, Page, WritebackHint, PAGE_SIZE_BYTES,
};
use flashstack_f2fs::{BatchFile, F2fs, F2fsError, FsError, WriteHint};
use flashstack_sim::Nanos;

/// F2FS below the page cache. Each call advances F2FS's clock to `now_ns`, runs the
/// operation and returns F2FS's clock. Durability is F2FS's: written pages are volatile
/// until `fsync` (roll-forward) or a checkpoint (`sync_all`).
pub struct F2fsBacking<D: BlockDevice> {
    fs: F2fs<D>,
}

impl<D: BlockDevice> F2fsBacking<D> {
    /// F2FS below a page cache: HCluster counts the system calls the cache reports
    /// ([`Backing::note_call`]), no longer the calls into F2FS.
    pub fn new(mut fs: F2fs<D>) -> Self {
        fs.count_calls_from_above();
        Self { fs }
    }
    pub fn fs(&self) -> &F2fs<D> {
        &self.fs
    }
    pub fn fs_mut(&mut self) -> &mut F2fs<D> {
        &mut self.fs
    }
    /// F2FS without the cache above it: HCluster counts the calls into it again.
    pub fn into_fs(mut self) -> F2fs<D> {
        self.fs.count_own_calls();
        self.fs
    }

    fn timed<T>(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        op: impl FnOnce(&mut F2fs<D>, u32) -> Result<T, FsError>,
    ) -> Result<(T, Nanos), BackingError> {
        let ino32 = u32::try_from(ino).map_err(|_| BackingError::Io {
            ino,
            reason: "inode number exceeds 32 bits".into(),
        })?;
        self.fs.advance_to(now_ns);
        let value = op(&mut self.fs, ino32).map_err(|e| backing_error(ino, e))?;
        Ok((value, self.fs.now_ns().max(now_ns)))
    }
}

/// F2FS's errors as the cache sees them: a full file system and a device that lost power
/// by their kinds (the cache keeps the first as a writeback error for fsync and fails at
/// once on the second), the rest as text.
fn backing_error(ino: Ino, e: FsError) -> BackingError {
    match e {
        e if e.is_no_space() => BackingError::NoSpace { ino },
        FsError::Device(F2fsError::Device(BlockError::PowerLoss)) => BackingError::PoweredOff,
        other => BackingError::Io {
            ino,
            reason: other.to_string(),
        },
    }
}

impl<D: BlockDevice> Backing for F2fsBacking<D> {
    fn note_call(&mut self, ino: Ino, write: bool) {
        if let Ok(ino) = u32::try_from(ino) {
            self.fs.note_vfs_call(ino, write);
        }
    }

    fn read_page(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        page_index: u64,
        page: &mut Page,
    ) -> Result<Nanos, BackingError> {
        let (blocks, done) = self.timed(now_ns, ino, |fs, i| fs.read_pages(i, page_index, 1))?;
        page.copy_from_slice(&blocks[0][..PAGE_SIZE_BYTES]);
        Ok(done)
    }

    /// F2FS's [`F2fs::read_pages`]: the plain blocks in as few block requests as their
    /// addresses allow, each paying the host's time (`F2fsConfig::read`).
    fn read_pages(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        first_page_index: u64,
        pages: &mut [Box<Page>],
    ) -> Result<Nanos, BackingError> {
        let count = pages.len();
        let (blocks, done) = self.timed(now_ns, ino, |fs, i| {
            fs.read_pages(i, first_page_index, count)
        })?;
        for (page, block) in pages.iter_mut().zip(blocks) {
            page.copy_from_slice(&block[..PAGE_SIZE_BYTES]);
        }
        Ok(done)
    }

    fn write_pages(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        first_page_index: u64,
        pages: &[&Page],
        file_size_bytes: u64,
        _sync: bool,
    ) -> Result<Nanos, BackingError> {
        let ((), done) = self.timed(now_ns, ino, |fs, i| {
            for (k, page) in pages.iter().enumerate() {
                let index = first_page_index + k as u64;
                let start = index * PAGE_SIZE_BYTES as u64;
                let valid = file_size_bytes
                    .saturating_sub(start)
                    .min(PAGE_SIZE_BYTES as u64);
                fs.write_page(i, index, page, valid as usize)?;
            }
            // The cache's size is the truth: a hole past the last page grows the file.
            if fs.size_of_ino(i)? != file_size_bytes {
                fs.writeback_size(i, file_size_bytes)?;
            }
            Ok(())
        })?;
        Ok(done)
    }

    /// The cache's writeback with its hint, through F2FS's `write_pages_hinted`: the
    /// inode's dirty-page count drives the hot-data rule (at most 16 → hot log) and the
    /// fsync flag the in-place-update rule (`F2FS_IPU_FSYNC`).
    fn write_pages_hinted(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        first_page_index: u64,
        pages: &[&Page],
        file_size_bytes: u64,
        hint: WritebackHint,
    ) -> Result<Nanos, BackingError> {
        let fs_hint = WriteHint {
            inode_dirty_pages: hint.inode_dirty_pages,
            fsync: hint.is_fsync(),
        };
        let ((), done) = self.timed(now_ns, ino, |fs, i| {
            fs.write_pages_hinted(i, first_page_index, pages, file_size_bytes, fs_hint)?;
            // The cache's size is the truth: F2FS only grows to the end of the last page
            // written, so a size inside a hole past it (or a smaller one) is set here.
            if fs.size_of_ino(i)? != file_size_bytes {
                fs.writeback_size(i, file_size_bytes)?;
            }
            Ok(())
        })?;
        Ok(done)
    }

    fn fsync(&mut self, now_ns: Nanos, ino: Ino, data_only: bool) -> Result<Nanos, BackingError> {
        let ((), done) = self.timed(now_ns, ino, |fs, i| {
            if data_only {
                fs.fdatasync(i)
            } else {
                fs.fsync(i)
            }
        })?;
        Ok(done)
    }

    /// F2FS's atomic commit ([`F2fs::commit_atomic_write`]): new blocks for every page,
    /// then the fsync chain with the mark on its last node (all or nothing).
    fn commit_atomic(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        pages: &[(u64, &Page)],
        file_size_bytes: u64,
    ) -> Result<Nanos, BackingError> {
        let ((), done) = self.timed(now_ns, ino, |fs, i| {
            fs.commit_atomic_write(i, pages, file_size_bytes)
        })?;
        Ok(done)
    }

    /// F2FS's batch commit ([`F2fs::commit_atomic_batch`]): every page to a new block,
    /// then one checkpoint (all or nothing).
    fn commit_batch(
        &mut self,
        now_ns: Nanos,
        files: &[BatchCommit<'_>],
    ) -> Result<Nanos, BackingError> {
        let first = files.first().map_or(0, |f| f.ino);
        let mut batch = Vec::with_capacity(files.len());
        for f in files {
            let ino = u32::try_from(f.ino).map_err(|_| BackingError::Io {
                ino: f.ino,
                reason: "inode number exceeds 32 bits".into(),
            })?;
            batch.push(BatchFile {
                ino,
                pages: f.pages.clone(),
                size_bytes: f.size_bytes,
                cut_bytes: f.cut_bytes,
            });
        }
        let ((), done) = self.timed(now_ns, first, |fs, _| fs.commit_atomic_batch(&batch))?;
        Ok(done)
    }

    fn sync_all(&mut self, now_ns: Nanos) -> Result<Nanos, BackingError> {
        let ((), done) = self.timed(now_ns, 0, |fs, _| fs.sync())?;
        Ok(done)
    }

    fn truncate(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        size_bytes: u64,
    ) -> Result<Nanos, BackingError> {
        let ((), done) = self.timed(now_ns, ino, |fs, i| fs.truncate(i, size_bytes))?;
        Ok(done)
    }

    /// The name is removed by the stack (F2FS `unlink`), and the inode freed at its last
    /// close; nothing to do here.
    fn unlink(&mut self, now_ns: Nanos, _ino: Ino) -> Result<Nanos, BackingError> {
        Ok(now_ns.max(self.fs.now_ns()))
    }

    fn file_size(&mut self, now_ns: Nanos, ino: Ino) -> Result<(u64, Nanos), BackingError> {
        self.timed(now_ns, ino, |fs, i| Ok(fs.stat_ino(i)?.size_bytes))
    }
}
