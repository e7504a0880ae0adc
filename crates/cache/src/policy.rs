//! When and what to write back: pure decisions. The [`PageCache`](crate::PageCache) carries
//! them out.
//!
//! The seam is [`WritebackPolicy`]. The default, [`LinuxPolicy`], follows the kernel's
//! mm/page-writeback.c and fs/fs-writeback.c behaviour. MobiFS's versioned cache transactions
//! plug in here later: a MobiFS policy answers [`FsyncDecision::Defer`] to fsync (the data
//! stays in memory as a closed transaction version), keeps the flusher idle while the dirty
//! data fits its staleness budget, and asks for write-back of whole transactions at predicted
//! idle times. The versioning itself (copy-on-write of a dirty page when a transaction is
//! closed) will be a mechanism in the cache driven by further decisions on this trait.

use flashstack_sim::Nanos;
use serde::{Deserialize, Serialize};

use crate::{CacheConfig, Ino};

/// What a policy sees of the cache's dirty state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirtyView {
    /// The time of the decision (the flusher's or the writer's).
    pub now_ns: Nanos,
    pub dirty_bytes: u64,
    /// The inode dirty the longest and when it became dirty (the kernel's `dirtied_when`).
    pub oldest_dirty: Option<(Nanos, Ino)>,
}

/// Why pages were written back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WritebackReason {
    /// The flusher, dirty data above the background threshold.
    Background,
    /// The flusher, dirty data older than the expiry time.
    Expiry,
    /// fsync or fdatasync.
    Fsync,
    /// A writer above the dirty limit writes back before it continues.
    Throttle,
    /// The cache is full of dirty pages and a page must be freed.
    Pressure,
    /// sync or unmount.
    Sync,
}

impl WritebackReason {
    pub const ALL: [WritebackReason; 6] = [
        WritebackReason::Background,
        WritebackReason::Expiry,
        WritebackReason::Fsync,
        WritebackReason::Throttle,
        WritebackReason::Pressure,
        WritebackReason::Sync,
    ];

    pub fn name(self) -> &'static str {
        match self {
            WritebackReason::Background => "background",
            WritebackReason::Expiry => "expiry",
            WritebackReason::Fsync => "fsync",
            WritebackReason::Throttle => "throttle",
            WritebackReason::Pressure => "pressure",
            WritebackReason::Sync => "sync",
        }
    }
}

/// What the flusher does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlusherDecision {
    /// Write back one batch of `ino`'s dirty pages (in page-index order) now.
    WriteBack { ino: Ino, reason: WritebackReason },
    /// Nothing is due before this time.
    SleepUntil(Nanos),
    /// Nothing is dirty.
    Idle,
}

/// What a writer does after dirtying pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriterDecision {
    Proceed,
    /// Write back one batch of `ino` itself (the time is charged to the writer).
    Throttle {
        ino: Ino,
    },
}

/// What fsync / fdatasync does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FsyncDecision {
    /// Write the file's dirty pages back, then call the file system's barrier.
    WriteBackAndSync,
    /// Return at once; the data stays in memory (MobiFS). Nothing becomes durable.
    Defer,
}

/// The policy seam: when and what to flush.
pub trait WritebackPolicy {
    fn flusher(&self, view: &DirtyView) -> FlusherDecision;
    fn writer(&self, view: &DirtyView) -> WriterDecision;
    fn fsync(&self, ino: Ino, data_only: bool) -> FsyncDecision;
}

/// The Linux-like default, holding the thresholds from a [`CacheConfig`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinuxPolicy {
    pub dirty_background_bytes: u64,
    pub dirty_limit_bytes: u64,
    pub dirty_expire_ns: Nanos,
    pub dirty_writeback_interval_ns: Nanos,
}

impl LinuxPolicy {
    pub fn new(config: &CacheConfig) -> Self {
        Self {
            dirty_background_bytes: config.dirty_background_bytes(),
            dirty_limit_bytes: config.dirty_limit_bytes(),
            dirty_expire_ns: config.dirty_expire_ns,
            dirty_writeback_interval_ns: config.dirty_writeback_interval_ns,
        }
    }
}

impl WritebackPolicy for LinuxPolicy {
    fn flusher(&self, view: &DirtyView) -> FlusherDecision {
        linux_flusher_decision(self, view)
    }

    fn writer(&self, view: &DirtyView) -> WriterDecision {
        linux_writer_decision(self, view)
    }

    fn fsync(&self, ino: Ino, data_only: bool) -> FsyncDecision {
        linux_fsync_decision(ino, data_only)
    }
}

/// The flusher thread: above the background threshold it writes back the longest-dirty inode
/// at once; otherwise, at each periodic wake-up (multiples of the interval), it writes back
/// inodes dirty for at least the expiry time. So a page dirtied at `t` is written back by
/// `t + expire + interval` at the latest.
pub fn linux_flusher_decision(policy: &LinuxPolicy, view: &DirtyView) -> FlusherDecision {
    let Some((dirtied_ns, ino)) = view.oldest_dirty else {
        return FlusherDecision::Idle;
    };
    if view.dirty_bytes > policy.dirty_background_bytes {
        return FlusherDecision::WriteBack {
            ino,
            reason: WritebackReason::Background,
        };
    }
    let interval_ns = policy.dirty_writeback_interval_ns;
    let last_wakeup_ns = view.now_ns / interval_ns * interval_ns;
    let due_ns = dirtied_ns.saturating_add(policy.dirty_expire_ns);
    if due_ns <= last_wakeup_ns {
        FlusherDecision::WriteBack {
            ino,
            reason: WritebackReason::Expiry,
        }
    } else {
        FlusherDecision::SleepUntil(due_ns.div_ceil(interval_ns).saturating_mul(interval_ns))
    }
}

/// A writer above the dirty limit writes back the longest-dirty inode itself (the kernel
/// pauses it in balance_dirty_pages while the flusher works; the cost to the writer is alike).
pub fn linux_writer_decision(policy: &LinuxPolicy, view: &DirtyView) -> WriterDecision {
    match view.oldest_dirty {
        Some((_, ino)) if view.dirty_bytes > policy.dirty_limit_bytes => {
            WriterDecision::Throttle { ino }
        }
        _ => WriterDecision::Proceed,
    }
}

/// POSIX fsync: always write back and reach the barrier.
pub fn linux_fsync_decision(_ino: Ino, _data_only: bool) -> FsyncDecision {
    FsyncDecision::WriteBackAndSync
}
