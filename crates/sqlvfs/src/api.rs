//! The seam between SQLite's VFS and the file system below it.

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Virtual time in nanoseconds.
pub type Nanos = u64;

/// A handle to an open file, returned by [`FileApi::open`]. Handles are never reused
/// within one file system instance.
pub type FileId = u64;

/// How to open a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct OpenFlags {
    /// Create the file if it does not exist.
    pub create: bool,
    /// With `create`: fail if the file already exists.
    pub exclusive: bool,
    /// Open for reading only.
    pub read_only: bool,
    /// Remove the name when the last handle is closed (SQLite's temporary files).
    pub delete_on_close: bool,
}

/// Errors of a [`FileApi`].
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FileError {
    /// No file has this name.
    #[error("file '{0}' not found")]
    NotFound(String),
    /// `create` + `exclusive` and the name exists.
    #[error("file '{0}' already exists")]
    AlreadyExists(String),
    /// The handle is not open.
    #[error("bad file handle {0}")]
    BadHandle(FileId),
    /// Write or truncate on a read-only handle.
    #[error("file handle {0} is read-only")]
    ReadOnly(FileId),
    /// The file would exceed the file system's size limit.
    #[error("file '{path}' would grow to {size_bytes} bytes, the limit is {limit_bytes}")]
    TooLarge {
        /// File name.
        path: String,
        /// Size the operation asked for.
        size_bytes: u64,
        /// Largest allowed size.
        limit_bytes: u64,
    },
    /// A table of the file system is full (open handles, files, call log).
    #[error("table '{table}' is full ({limit} entries)")]
    TableFull {
        /// Which table.
        table: &'static str,
        /// Its limit.
        limit: usize,
    },
    /// ENOSPC (SQLite's `SQLITE_FULL`): the file system had no free block (or node) for
    /// the call, or, from a sync, for an earlier writeback of the file, whose pages are
    /// then lost (the kernel reports that failure to fsync with the same errno). The
    /// text says which.
    #[error("{0}: no space left on the file system")]
    NoSpace(String),
    /// The power is off: every call fails until the device is powered on again.
    #[error("power lost")]
    PowerLost,
    /// The file system does not implement the call (e.g. atomic writes); SQLite then
    /// takes its ordinary path.
    #[error("not supported: {0}")]
    Unsupported(&'static str),
    /// Anything else the file system below reports.
    #[error("I/O error: {0}")]
    Io(String),
}

/// What the phone's user does, as a storage stack may see it: inputs in virtual time,
/// and the screen going off (standby) and on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum UserInput {
    Touch,
    Scroll,
    Key,
    ScreenOff,
    ScreenOn,
}

/// The file operations SQLite needs, in simulated time.
///
/// Every call takes the virtual time `now` at which it is issued and returns the virtual
/// time at which it completes (never earlier than `now`). Implementations: the in-memory
/// [`crate::MemFs`] for tests, and (later) the page cache over F2FS.
///
/// # What survives power loss
///
/// - File contents written with [`write_at`](Self::write_at) and sizes set with
///   [`truncate`](Self::truncate) are durable once a later [`sync`](Self::sync) of the
///   same file has completed. Before that they may be lost, kept, or kept in part (in any
///   order: a page cache writes pages back when it likes). A write never appears torn
///   below the granularity the implementation documents.
/// - `sync(data_only = false)` (fsync) makes the file's data and all its metadata durable;
///   `sync(data_only = true)` (fdatasync) makes its data and the metadata needed to read
///   it back (the size) durable, but may leave e.g. timestamps volatile.
/// - Namespace changes (a file created by [`open`](Self::open), a name removed by
///   [`delete`](Self::delete), [`rename`](Self::rename), [`mkdir`](Self::mkdir)) are
///   durable after the next completed `sync` of any file, or at once for
///   `delete(.., sync_dir = true)`. A journaling file system gives this through its
///   metadata commit; F2FS does not (its fsync rolls forward only the synced file's own
///   dentry), so the assembled stack (`flashstack-stack`) keeps the promise the way F2FS
///   itself does when roll-forward cannot cover a change: that `sync` writes a
///   checkpoint. Before that, any subset of the unsynced namespace changes may be lost
///   (F2FS checkpoints them all at once, so in practice all or none since the last
///   checkpoint).
/// - Atomic writes (F2FS's `F2FS_IOC_START_ATOMIC_WRITE` / `COMMIT` / `ABORT`, which
///   Android's SQLite uses for `SQLITE_IOCAP_BATCH_ATOMIC`): after
///   [`atomic_begin`](Self::atomic_begin) the file's writes and truncates are staged —
///   visible to reads through the API, never written back — until
///   [`atomic_commit`](Self::atomic_commit) makes all of them durable at once (it includes
///   an fsync of the file): after a power cut either every staged change is there or none
///   is. [`atomic_abort`](Self::atomic_abort), or a power cut before the commit completes,
///   drops them and leaves the content the file had at `atomic_begin`; so does the last
///   close of the file (as F2FS's release aborts an atomic write). Implementations
///   without atomic writes keep the default methods, which fail with
///   [`FileError::Unsupported`] (the VFS then never advertises them).
/// - Locks are not part of this trait: the VFS serves a single connection in a single
///   process, so SQLite's locks are kept in the VFS and never reach the file system.
pub trait FileApi: Send {
    /// The phone's user did something at `now` (see [`UserInput`]): what a storage
    /// policy may watch (MobiFS's idle prediction) and the energy model counts. Changes no
    /// file; the default ignores it.
    fn user_input(&mut self, now: Nanos, input: UserInput) {
        let _ = (now, input);
    }
    /// Opens (or creates) the file `path`.
    fn open(
        &mut self,
        now: Nanos,
        path: &str,
        flags: OpenFlags,
    ) -> Result<(FileId, Nanos), FileError>;
    /// Closes a handle. Unsynced data stays in the (volatile) cache.
    fn close(&mut self, now: Nanos, file: FileId) -> Result<Nanos, FileError>;
    /// Reads up to `buf.len()` bytes at `offset`; returns the bytes read (short at end of file).
    fn read_at(
        &mut self,
        now: Nanos,
        file: FileId,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<(usize, Nanos), FileError>;
    /// Writes `data` at `offset`, growing the file (with zeros in any gap) if needed.
    fn write_at(
        &mut self,
        now: Nanos,
        file: FileId,
        offset: u64,
        data: &[u8],
    ) -> Result<Nanos, FileError>;
    /// Sets the file size (shrinks or grows with zeros).
    fn truncate(&mut self, now: Nanos, file: FileId, size_bytes: u64) -> Result<Nanos, FileError>;
    /// The current file size.
    fn size(&mut self, now: Nanos, file: FileId) -> Result<(u64, Nanos), FileError>;
    /// fsync (`data_only = false`) or fdatasync (`data_only = true`); see the trait's doc.
    fn sync(&mut self, now: Nanos, file: FileId, data_only: bool) -> Result<Nanos, FileError>;
    /// Removes the name `path`; open handles keep the file until closed. `sync_dir` asks
    /// for the removal to be durable when the call returns.
    fn delete(&mut self, now: Nanos, path: &str, sync_dir: bool) -> Result<Nanos, FileError>;
    /// Whether a file named `path` exists.
    fn exists(&mut self, now: Nanos, path: &str) -> Result<(bool, Nanos), FileError>;
    /// Renames `from` to `to`, atomically replacing any file named `to` (POSIX `rename`).
    /// A namespace change: durable as the trait's doc says, and all or nothing across a
    /// power cut (after it, exactly one of the two names refers to the file).
    fn rename(&mut self, now: Nanos, from: &str, to: &str) -> Result<Nanos, FileError>;
    /// Creates the directory `path` (its parent must exist on file systems with
    /// directories; a flat file system only records it). `AlreadyExists` if it exists.
    fn mkdir(&mut self, now: Nanos, path: &str) -> Result<Nanos, FileError>;
    /// fsync of the directory `path` (what SQLite does after creating or deleting a
    /// journal): the names changed in it become durable. The default does nothing, which
    /// is right for a file system whose namespace changes are durable at once.
    fn sync_dir(&mut self, now: Nanos, path: &str) -> Result<Nanos, FileError> {
        let _ = path;
        Ok(now)
    }
    /// Whether [`atomic_begin`](Self::atomic_begin) is available (F2FS's
    /// `F2FS_IOC_GET_FEATURES` reporting `F2FS_FEATURE_ATOMIC_WRITE`): the VFS reports
    /// `SQLITE_IOCAP_BATCH_ATOMIC` only then.
    fn atomic_write_supported(&mut self) -> bool {
        false
    }
    /// Starts an atomic write on `file` (see the trait's doc). Earlier unsynced writes of
    /// the file are not part of it.
    fn atomic_begin(&mut self, now: Nanos, file: FileId) -> Result<Nanos, FileError> {
        let _ = (now, file);
        Err(FileError::Unsupported("atomic writes"))
    }
    /// Makes every change staged since [`atomic_begin`](Self::atomic_begin) durable, all
    /// or nothing, and ends the atomic write. On an error the changes are dropped.
    fn atomic_commit(&mut self, now: Nanos, file: FileId) -> Result<Nanos, FileError> {
        let _ = (now, file);
        Err(FileError::Unsupported("atomic writes"))
    }
    /// Drops every change staged since [`atomic_begin`](Self::atomic_begin) and ends the
    /// atomic write.
    fn atomic_abort(&mut self, now: Nanos, file: FileId) -> Result<Nanos, FileError> {
        let _ = (now, file);
        Err(FileError::Unsupported("atomic writes"))
    }
}
