//! The page cache between workloads and the file system.
//!
//! Files are cached in 4 KiB pages keyed by (inode, page index). Writes dirty pages (reading
//! the page from below first when a partial write hits an uncached page); a flusher writes
//! dirty pages back by the Linux rules (background threshold, dirty limit, 30 s expiry checked
//! every 5 s), fsync writes a file's dirty pages and then reaches the file system's barrier,
//! and clean pages are evicted least recently used first. When and what to flush is decided by
//! a [`WritebackPolicy`] (pure decisions); the [`PageCache`] carries them out. The file
//! system below is the [`Backing`] trait. See `docs/cache.md`.

pub mod adaptive;
mod backing;
mod cache;
mod config;
mod policy;
pub mod readahead;
mod span;
mod versions;

#[cfg(test)]
mod mobifs_tests;
#[cfg(test)]
mod readahead_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod writeback_error_tests;

pub use backing::{
    Backing, BackingCall, BackingError, BatchCommit, MemBacking, MemBackingCosts, WritebackHint,
};
pub use cache::{CacheError, CacheMetrics, CallKind, CallLatency, PageCache, TxMetrics};
pub use config::{CacheConfig, ConfigError, MobifsConfig, PolicyName};
pub use policy::{
    linux_flusher_decision, linux_fsync_decision, linux_writer_decision,
    mobifs_checkpoint_decision, mobifs_close_decision, AppId, CachePolicy, CheckpointReason,
    CheckpointScope, CheckpointTiming, CloseDecision, CloseReason, CloseView, DirtyView,
    FlusherDecision, FsyncDecision, LinuxPolicy, MobifsPolicy, SealPolicy, TxView, WritebackPolicy,
    WritebackReason, WriterDecision,
};
pub use readahead::{MmapPolicy, ReadaheadConfig, ReadaheadPolicy};

/// Size of a cache page in bytes (the kernel's PAGE_SIZE on ARM64 phones, F2FS's block).
pub const PAGE_SIZE_BYTES: usize = 4096;

/// One page of bytes.
pub type Page = [u8; PAGE_SIZE_BYTES];

/// An inode number (the file system's name for a file).
pub type Ino = u64;
