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
    /// A MobiFS checkpoint of sealed transactions (`docs/mobifs.md`).
    Checkpoint,
}

impl WritebackReason {
    pub const ALL: [WritebackReason; 7] = [
        WritebackReason::Background,
        WritebackReason::Expiry,
        WritebackReason::Fsync,
        WritebackReason::Throttle,
        WritebackReason::Pressure,
        WritebackReason::Sync,
        WritebackReason::Checkpoint,
    ];

    pub fn name(self) -> &'static str {
        match self {
            WritebackReason::Background => "background",
            WritebackReason::Expiry => "expiry",
            WritebackReason::Fsync => "fsync",
            WritebackReason::Throttle => "throttle",
            WritebackReason::Pressure => "pressure",
            WritebackReason::Sync => "sync",
            WritebackReason::Checkpoint => "checkpoint",
        }
    }
}

/// What the flusher does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlusherDecision {
    /// Write back one batch of `ino`'s dirty pages (in page-index order) now.
    WriteBack { ino: Ino, reason: WritebackReason },
    /// Persist these sealed transactions in one atomic checkpoint (MobiFS).
    Checkpoint {
        scope: CheckpointScope,
        reason: CheckpointReason,
    },
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
    /// Return at once; the data stays in memory. Nothing becomes durable.
    Defer,
    /// Seal the app's open transaction in memory and return at memory speed (MobiFS):
    /// durable at a later checkpoint, within the staleness bound.
    Seal,
}

/// Which sealed transactions a checkpoint persists: always a prefix of each app's, and
/// only transactions already closed (with `seal = "every-sync"` every seal closes one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckpointScope {
    /// Every app's closed transactions as of now.
    AllSealed,
    /// One app's sealed transactions up to and including sequence number `through_seq`.
    App { app: AppId, through_seq: u64 },
}

/// Why a checkpoint runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckpointReason {
    /// The staleness bound is near for the oldest sealed transaction.
    Staleness,
    /// The fixed interval passed (`checkpoint = "interval"`).
    Interval,
    /// The cache is full of dirty pages and versions.
    Pressure,
    /// sync(2) or unmount.
    Sync,
    /// A predicted user-idle interval, or the screen going off (`checkpoint = "idle"`).
    Idle,
}

/// An app: the owner of a set of files whose transactions are independent of other apps'.
pub type AppId = u32;

/// What a checkpoint policy sees of the cache's transactions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxView {
    pub now_ns: Nanos,
    /// When the oldest sealed transaction not yet persisted was sealed.
    pub oldest_sealed_ns: Option<Nanos>,
    pub sealed_transactions: u64,
    /// Pages resident (the page table and the versions held for transactions).
    pub resident_pages: u64,
    pub resident_pages_max: u64,
    /// What the user-interaction state machine allows now (`checkpoint = "idle"`).
    pub idle: crate::adaptive::IdleCheckpoint,
}

/// What closes an app's transaction, making it ready to checkpoint (`cache.mobifs.seal`).
/// Every sync call seals a *version* of the app's files in memory (a crash-consistent
/// point: the app's state at that call); the seal policy decides which versions form one
/// transaction, closed at its last version.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SealPolicy {
    /// Every sync call closes the transaction it seals (one version per transaction).
    EverySync,
    /// The e-curve's trade-off point (`crate::adaptive`): the versions sealed since the
    /// last close stay open, coalescing, until the curve `coalesced bytes / staleness`
    /// peaks; the transaction then closes at its last version. The staleness bound
    /// closes it at the latest when its oldest version is `bound − reserve` old.
    #[default]
    Ecurve,
}

/// What the close policy sees of one app's transaction.
#[derive(Clone, Copy, Debug)]
pub struct CloseView<'a> {
    pub now_ns: Nanos,
    /// When the oldest version sealed and not yet closed was sealed (`None`: nothing to
    /// close).
    pub oldest_unclosed_ns: Option<Nanos>,
    /// The transaction's e-curve as sampled so far (`seal = "ecurve"`).
    pub curve: &'a crate::adaptive::ECurve,
}

/// Why a transaction closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseReason {
    /// `seal = "every-sync"`: the sync call that sealed it.
    Sync,
    /// The e-curve peaked.
    Peak,
    /// Its oldest version would otherwise outlive the staleness bound.
    Bound,
}

/// The close policy's decision for one app.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseDecision {
    KeepOpen,
    Close(CloseReason),
}

/// Closes the app's sealed versions: at once with `EverySync`; with `Ecurve` when the
/// oldest is `bound − reserve` old (so the checkpoint it is then due for still ends
/// within the bound), or when the e-curve has peaked. Nothing sealed: keep open.
pub fn mobifs_close_decision(policy: &MobifsPolicy, view: &CloseView<'_>) -> CloseDecision {
    let Some(oldest_ns) = view.oldest_unclosed_ns else {
        return CloseDecision::KeepOpen;
    };
    if policy.seal == SealPolicy::EverySync {
        return CloseDecision::Close(CloseReason::Sync);
    }
    let margin_ns = policy
        .staleness_bound_ns
        .saturating_sub(policy.checkpoint_reserve_ns);
    if oldest_ns.saturating_add(margin_ns) <= view.now_ns {
        return CloseDecision::Close(CloseReason::Bound);
    }
    match crate::adaptive::tradeoff_decision(view.curve, &policy.adaptive) {
        crate::adaptive::TradeoffDecision::Close => CloseDecision::Close(CloseReason::Peak),
        crate::adaptive::TradeoffDecision::KeepOpen => CloseDecision::KeepOpen,
    }
}

/// The policy seam: when and what to flush.
pub trait WritebackPolicy {
    fn flusher(&self, view: &DirtyView) -> FlusherDecision;
    fn writer(&self, view: &DirtyView) -> WriterDecision;
    fn fsync(&self, ino: Ino, data_only: bool) -> FsyncDecision;

    /// Whether the cache keeps versioned transactions (MobiFS): dirty pages belong to
    /// their app's open transaction, and only checkpoints write them down.
    fn transactional(&self) -> bool {
        false
    }

    /// The flusher of a transactional cache: when to checkpoint what (asked instead of
    /// [`flusher`](Self::flusher)).
    fn checkpoint(&self, view: &TxView) -> FlusherDecision {
        let _ = view;
        FlusherDecision::Idle
    }

    /// Whether an app's sealed versions close now (a transactional cache asks after each
    /// seal, at each e-curve sample and at the bound's deadline).
    fn close(&self, view: &CloseView<'_>) -> CloseDecision {
        match view.oldest_unclosed_ns {
            Some(_) => CloseDecision::Close(CloseReason::Sync),
            None => CloseDecision::KeepOpen,
        }
    }
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

/// When MobiFS checkpoints (the named timing policies; item 2's e-curve and idle
/// prediction will be another).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckpointTiming {
    /// As late as the staleness bound allows: when the oldest sealed transaction is
    /// `staleness_bound_ns - checkpoint_reserve_ns` old (the most coalescing).
    #[default]
    Bound,
    /// At every multiple of `checkpoint_interval_ns` with anything sealed, and never later
    /// than the bound allows.
    Interval,
    /// In predicted user-idle intervals (`crate::adaptive`: the interaction state machine
    /// and the idle predictor), before the screen goes off, never in standby unless the
    /// bound forces it.
    Idle,
}

/// MobiFS: fsync seals a version of the app's files in memory; the seal policy closes
/// transactions of versions; checkpoints persist every app's closed transactions at times
/// the timing policy picks, within the staleness bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MobifsPolicy {
    pub timing: CheckpointTiming,
    pub seal: SealPolicy,
    pub staleness_bound_ns: Nanos,
    pub checkpoint_reserve_ns: Nanos,
    pub checkpoint_interval_ns: Nanos,
    /// The peak detector's parameters (`seal = "ecurve"`).
    pub adaptive: crate::adaptive::AdaptiveConfig,
}

impl MobifsPolicy {
    pub fn new(config: &crate::MobifsConfig) -> Self {
        Self {
            timing: config.checkpoint,
            seal: config.seal,
            staleness_bound_ns: config.staleness_bound_ns,
            checkpoint_reserve_ns: config.checkpoint_reserve_ns,
            checkpoint_interval_ns: config.checkpoint_interval_ns,
            adaptive: config.adaptive,
        }
    }
}

impl WritebackPolicy for MobifsPolicy {
    fn flusher(&self, _view: &DirtyView) -> FlusherDecision {
        FlusherDecision::Idle
    }

    fn writer(&self, _view: &DirtyView) -> WriterDecision {
        WriterDecision::Proceed
    }

    fn fsync(&self, _ino: Ino, _data_only: bool) -> FsyncDecision {
        FsyncDecision::Seal
    }

    fn transactional(&self) -> bool {
        true
    }

    fn checkpoint(&self, view: &TxView) -> FlusherDecision {
        mobifs_checkpoint_decision(self, view)
    }

    fn close(&self, view: &CloseView<'_>) -> CloseDecision {
        mobifs_close_decision(self, view)
    }
}

/// The checkpoint timing: the bound's deadline (seal time + bound − reserve) always; with
/// `Interval`, also the next multiple of the interval.
pub fn mobifs_checkpoint_decision(policy: &MobifsPolicy, view: &TxView) -> FlusherDecision {
    let Some(sealed_ns) = view.oldest_sealed_ns else {
        return FlusherDecision::Idle;
    };
    let margin_ns = policy
        .staleness_bound_ns
        .saturating_sub(policy.checkpoint_reserve_ns);
    let mut due_ns = sealed_ns.saturating_add(margin_ns);
    let mut reason = CheckpointReason::Staleness;
    if policy.timing == CheckpointTiming::Idle {
        match view.idle {
            crate::adaptive::IdleCheckpoint::Now if due_ns > view.now_ns => {
                return FlusherDecision::Checkpoint {
                    scope: CheckpointScope::AllSealed,
                    reason: CheckpointReason::Idle,
                };
            }
            // Look again when τ passes (the bound's deadline, if sooner, below).
            crate::adaptive::IdleCheckpoint::Wait(Some(t))
                if t < due_ns && due_ns > view.now_ns =>
            {
                return FlusherDecision::SleepUntil(t.max(view.now_ns.saturating_add(1)));
            }
            _ => {}
        }
    }
    if policy.timing == CheckpointTiming::Interval {
        let interval_ns = policy.checkpoint_interval_ns.max(1);
        let tick_ns = sealed_ns.div_ceil(interval_ns).saturating_mul(interval_ns);
        if tick_ns < due_ns {
            due_ns = tick_ns;
            reason = CheckpointReason::Interval;
        }
    }
    if due_ns <= view.now_ns {
        FlusherDecision::Checkpoint {
            scope: CheckpointScope::AllSealed,
            reason,
        }
    } else {
        FlusherDecision::SleepUntil(due_ns)
    }
}

/// The policy a [`CacheConfig`] names (`policy = "linux"` or `"mobifs"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CachePolicy {
    Linux(LinuxPolicy),
    Mobifs(MobifsPolicy),
}

impl CachePolicy {
    pub fn new(config: &CacheConfig) -> Self {
        match config.policy {
            crate::PolicyName::Linux => CachePolicy::Linux(LinuxPolicy::new(config)),
            crate::PolicyName::Mobifs => CachePolicy::Mobifs(MobifsPolicy::new(&config.mobifs)),
        }
    }
}

impl WritebackPolicy for CachePolicy {
    fn flusher(&self, view: &DirtyView) -> FlusherDecision {
        match self {
            CachePolicy::Linux(p) => p.flusher(view),
            CachePolicy::Mobifs(p) => p.flusher(view),
        }
    }

    fn writer(&self, view: &DirtyView) -> WriterDecision {
        match self {
            CachePolicy::Linux(p) => p.writer(view),
            CachePolicy::Mobifs(p) => p.writer(view),
        }
    }

    fn fsync(&self, ino: Ino, data_only: bool) -> FsyncDecision {
        match self {
            CachePolicy::Linux(p) => p.fsync(ino, data_only),
            CachePolicy::Mobifs(p) => p.fsync(ino, data_only),
        }
    }

    fn transactional(&self) -> bool {
        matches!(self, CachePolicy::Mobifs(_))
    }

    fn checkpoint(&self, view: &TxView) -> FlusherDecision {
        match self {
            CachePolicy::Linux(p) => p.checkpoint(view),
            CachePolicy::Mobifs(p) => p.checkpoint(view),
        }
    }

    fn close(&self, view: &CloseView<'_>) -> CloseDecision {
        match self {
            CachePolicy::Linux(p) => p.close(view),
            CachePolicy::Mobifs(p) => p.close(view),
        }
    }
}
