//! One file system, two users: SQLite's VFS and the persona's own file calls.

use std::sync::{Arc, Mutex, MutexGuard};

use flashstack_sqlvfs::{FileApi, FileError, FileId, Nanos, OpenFlags};

/// A cloneable handle to one [`FileApi`]: every clone issues its calls to the same file
/// system, so SQLite (through `SimVfs`, which owns a boxed clone) and the persona's
/// preferences, caches and logs share files, handles and virtual time costs.
///
/// Calls are serialised by the mutex; a simulation is single-threaded, so it is never
/// contended, and a poisoned lock (a panic elsewhere) is recovered rather than spread.
#[derive(Debug)]
pub struct Shared<F> {
    inner: Arc<Mutex<F>>,
}

impl<F> Clone for Shared<F> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<F: FileApi> Shared<F> {
    /// Wraps `api`.
    pub fn new(api: F) -> Self {
        Self {
            inner: Arc::new(Mutex::new(api)),
        }
    }

    /// Locks the file system for direct access (e.g. a recorder's trace).
    pub fn lock(&self) -> MutexGuard<'_, F> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` on the file system.
    pub fn with<T>(&self, f: impl FnOnce(&mut F) -> T) -> T {
        f(&mut self.lock())
    }
}

impl<F: FileApi> FileApi for Shared<F> {
    fn user_input(&mut self, now: Nanos, input: flashstack_sqlvfs::UserInput) {
        self.lock().user_input(now, input);
    }
    fn open(
        &mut self,
        now: Nanos,
        path: &str,
        flags: OpenFlags,
    ) -> Result<(FileId, Nanos), FileError> {
        self.lock().open(now, path, flags)
    }
    fn close(&mut self, now: Nanos, file: FileId) -> Result<Nanos, FileError> {
        self.lock().close(now, file)
    }
    fn read_at(
        &mut self,
        now: Nanos,
        file: FileId,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<(usize, Nanos), FileError> {
        self.lock().read_at(now, file, offset, buf)
    }
    fn write_at(
        &mut self,
        now: Nanos,
        file: FileId,
        offset: u64,
        data: &[u8],
    ) -> Result<Nanos, FileError> {
        self.lock().write_at(now, file, offset, data)
    }
    fn truncate(&mut self, now: Nanos, file: FileId, size_bytes: u64) -> Result<Nanos, FileError> {
        self.lock().truncate(now, file, size_bytes)
    }
    fn size(&mut self, now: Nanos, file: FileId) -> Result<(u64, Nanos), FileError> {
        self.lock().size(now, file)
    }
    fn sync(&mut self, now: Nanos, file: FileId, data_only: bool) -> Result<Nanos, FileError> {
        self.lock().sync(now, file, data_only)
    }
    fn delete(&mut self, now: Nanos, path: &str, sync_dir: bool) -> Result<Nanos, FileError> {
        self.lock().delete(now, path, sync_dir)
    }
    fn exists(&mut self, now: Nanos, path: &str) -> Result<(bool, Nanos), FileError> {
        self.lock().exists(now, path)
    }
    fn rename(&mut self, now: Nanos, from: &str, to: &str) -> Result<Nanos, FileError> {
        self.lock().rename(now, from, to)
    }
    fn mkdir(&mut self, now: Nanos, path: &str) -> Result<Nanos, FileError> {
        self.lock().mkdir(now, path)
    }
    fn sync_dir(&mut self, now: Nanos, path: &str) -> Result<Nanos, FileError> {
        self.lock().sync_dir(now, path)
    }
    fn atomic_write_supported(&mut self) -> bool {
        self.lock().atomic_write_supported()
    }
    fn atomic_begin(&mut self, now: Nanos, file: FileId) -> Result<Nanos, FileError> {
        self.lock().atomic_begin(now, file)
    }
    fn atomic_commit(&mut self, now: Nanos, file: FileId) -> Result<Nanos, FileError> {
        self.lock().atomic_commit(now, file)
    }
    fn atomic_abort(&mut self, now: Nanos, file: FileId) -> Result<Nanos, FileError> {
        self.lock().atomic_abort(now, file)
    }
}
