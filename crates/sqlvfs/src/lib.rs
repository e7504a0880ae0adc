//! Real SQLite (bundled, via rusqlite) running through a custom VFS that maps SQLite's
//! file calls onto a flashstack file API ([`FileApi`]) in simulated time.
//!
//! - [`FileApi`]: the seam to the file system below (page cache over F2FS later); its
//!   doc comment states what survives power loss.
//! - [`MemFs`]: an in-memory `FileApi` that logs every call and simulates power cuts.
//! - [`SimVfs`]: one registered SQLite VFS per instance (unique name), with its own
//!   virtual clock, seeded randomness and a per-call CPU cost for SQLite itself.
//! - [`SimDb`]: a connection on a `SimVfs`, configured from a [`SqliteConfig`] (Android's
//!   defaults by default; see `docs/sqlite.md`).

mod api;
mod checked;
mod config;
mod memfs;
mod rng;
mod vfs;

pub use api::{FileApi, FileError, FileId, Nanos, OpenFlags, UserInput};
pub use checked::Checked;
pub use config::{JournalMode, SqliteConfig, Synchronous};
pub use memfs::{CallOp, CallRecord, MemFs, MemFsConfig};
pub use rng::SplitMix64;
pub use vfs::{SimDb, SimVfs, EPOCH_UNIX_MS};

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
pub enum SqlVfsError {
    /// `sqlite3_vfs_register` failed with this code.
    #[error("registering the VFS failed (SQLite code {0})")]
    Register(i32),
    /// SQLite reported an error.
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
}
