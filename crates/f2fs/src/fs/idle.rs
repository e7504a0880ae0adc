//! Background work in idle time: the GC thread (`gc_thread_func`) waking on its adaptive
//! sleep to clean one section by cost-benefit when the device has been idle, and
//! checkpoints forced by `f2fs_balance_fs_bg` (thresholds, and the `cp_interval` timer
//! once idle). Everything runs inside [`F2fs::idle`], the caller's statement that no
//! request arrives before a given time; wakes that fell outside such a window found the
//! file system busy.

use flashstack_block::BlockDevice;
use flashstack_sim::Nanos;

use super::policy::{self, CheckpointQuery, CheckpointReason, F2fsConfig};
use super::{F2fs, FsError};
use crate::consts::*;

/// Wakes of the GC thread handled per `idle` call at most (a safety bound: a quiescent
/// file system skips ahead long before).
const MAX_WAKES_PER_IDLE: u32 = 100_000;
/// The shortest step between two background events, whatever the configuration says.
const MIN_STEP_NS: Nanos = 1_000_000;

/// When things happened, for the idle-time decisions.
#[derive(Clone, Debug)]
pub(crate) struct BackgroundClock {
    mount_ns: Nanos,
    /// Checkpointed `elapsed_time` at mount (seconds).
    mount_elapsed_secs: u64,
    /// End of the last file operation (`REQ_TIME`).
    pub last_request_ns: Nanos,
    /// End of the last checkpoint (`CP_TIME`).
    pub last_checkpoint_ns: Nanos,
    pub gc_sleep_ns: Nanos,
    pub gc_next_wake_ns: Nanos,
    /// Oldest SIT mtime seen (`sit_i->min_mtime`).
    pub min_mtime: u64,
    /// Where the next background victim search starts (`last_victim[GC_CB]`).
    pub last_victim: u32,
}

impl BackgroundClock {
    pub fn new(now_ns: Nanos, elapsed_secs: u64, cfg: &F2fsConfig) -> BackgroundClock {
        BackgroundClock {
            mount_ns: now_ns,
            mount_elapsed_secs: elapsed_secs,
            last_request_ns: now_ns,
            last_checkpoint_ns: now_ns,
            gc_sleep_ns: cfg.gc_min_sleep_ns,
            gc_next_wake_ns: now_ns.saturating_add(cfg.gc_min_sleep_ns.max(MIN_STEP_NS)),
            min_mtime: 0,
            last_victim: 0,
        }
    }

    /// `get_mtime`: seconds of file-system life at `now_ns`.
    pub fn mtime_secs(&self, now_ns: Nanos) -> u64 {
        self.mount_elapsed_secs + now_ns.saturating_sub(self.mount_ns) / 1_000_000_000
    }
}

/// What happens next in an idle period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    GcWake,
    Checkpoint,
}

impl<D: BlockDevice> F2fs<D> {
    /// The device is idle until `until_ns`: the GC thread's wakes and the periodic
    /// checkpoint that fall in the window run (see the module doc); the clock ends at
    /// `until_ns`, or later if the work took longer (requests are never preempted).
    pub fn idle(&mut self, until_ns: Nanos) -> Result<(), FsError> {
        self.skip_busy_wakes();
        let mut wakes = 0;
        while let Some((at, event)) = self.next_event(until_ns) {
            self.advance_to(at);
            match event {
                Event::Checkpoint => self.background_checkpoint()?,
                Event::GcWake => {
                    wakes += 1;
                    if !self.gc_thread_wake()? || wakes >= MAX_WAKES_PER_IDLE {
                        self.skip_wakes_until(until_ns);
                    }
                }
            }
        }
        self.advance_to(until_ns);
        Ok(())
    }

    /// The earliest background event at or before `until_ns`.
    fn next_event(&self, until_ns: Nanos) -> Option<(Nanos, Event)> {
        let cp = self.fs_dirty().then(|| {
            let at = policy::checkpoint_due_at_ns(
                self.clock.last_checkpoint_ns,
                self.clock.last_request_ns,
                &self.cfg,
            );
            (at, Event::Checkpoint)
        });
        let gc = self
            .cfg
            .bg_gc
            .then_some((self.clock.gc_next_wake_ns, Event::GcWake));
        [cp, gc]
            .into_iter()
            .flatten()
            .filter(|&(at, _)| at <= until_ns)
            .min_by_key(|&(at, e)| (at, e == Event::GcWake))
    }

    /// Wakes due while requests were running found the device busy: each lengthens the
    /// sleep (`increase_sleep_time`), which settles within a few wakes, so the rest are
    /// skipped in one step.
    fn skip_busy_wakes(&mut self) {
        for _ in 0..3 {
            if self.clock.gc_next_wake_ns >= self.now_ns {
                return;
            }
            self.clock.gc_sleep_ns = policy::increase_sleep(self.clock.gc_sleep_ns, &self.cfg);
            self.clock.gc_next_wake_ns += self.clock.gc_sleep_ns.max(MIN_STEP_NS);
        }
        self.skip_wakes_until(self.now_ns);
    }

    /// Moves the next wake past `t` on the current sleep (wakes that change nothing).
    fn skip_wakes_until(&mut self, t: Nanos) {
        let step = self.clock.gc_sleep_ns.max(MIN_STEP_NS);
        let next = self.clock.gc_next_wake_ns;
        if next <= t {
            self.clock.gc_next_wake_ns = next + ((t - next) / step + 1) * step;
        }
    }

    /// One wake of the GC thread; returns whether anything may still change on later
    /// wakes of this idle period (false: no victim and nothing dirty).
    fn gc_thread_wake(&mut self) -> Result<bool, FsError> {
        let idle_ns = self.now_ns.saturating_sub(self.clock.last_request_ns);
        if idle_ns < self.cfg.idle_interval_ns {
            self.clock.gc_sleep_ns = policy::increase_sleep(self.clock.gc_sleep_ns, &self.cfg);
            self.schedule_wake();
            return Ok(true);
        }
        let enough_invalid = self.enough_invalid_blocks();
        let found = self.background_gc()?;
        // MedFS's BGRes runs after each background-GC pass (`delta/dcm.rs`).
        self.bgres()?;
        // FPC's background re-packing, in the same idle time (`fs/fpc.rs`).
        self.fpc_repack()?;
        self.clock.gc_sleep_ns =
            policy::next_gc_sleep(self.clock.gc_sleep_ns, enough_invalid, found, &self.cfg);
        self.balance_fs_bg(true)?;
        self.schedule_wake();
        Ok(found || self.fs_dirty())
    }

    fn schedule_wake(&mut self) {
        self.clock.gc_next_wake_ns = self.now_ns + self.clock.gc_sleep_ns.max(MIN_STEP_NS);
    }

    fn enough_invalid_blocks(&self) -> bool {
        policy::has_enough_invalid_blocks(
            self.cp.user_block_count,
            self.segs.valid_blocks,
            self.segs.free_segments() as u64,
            self.cp.overprov_segment_count as u64,
            BLOCKS_PER_SEG as u64,
        )
    }

    /// The periodic checkpoint (and any threshold one) in idle time.
    fn background_checkpoint(&mut self) -> Result<(), FsError> {
        self.balance_fs_bg(true)?;
        if self.fs_dirty() && policy::checkpoint_due(&self.checkpoint_query(), &self.cfg).is_none()
        {
            // Not due after all (a rounding of the clock): retry at the next step.
            self.advance_to(self.now_ns + MIN_STEP_NS);
        }
        Ok(())
    }

    /// `f2fs_balance_fs_bg`: a checkpoint when a threshold is crossed or, in idle time,
    /// when the interval is over.
    pub(crate) fn balance_fs_bg(&mut self, idle: bool) -> Result<(), FsError> {
        let q = self.checkpoint_query();
        let reason: Option<CheckpointReason> = if idle {
            policy::checkpoint_due(&q, &self.cfg)
        } else {
            policy::checkpoint_threshold(&q, &self.cfg)
        };
        if reason.is_some() {
            self.checkpoint(false)?;
            self.metrics.bg_checkpoints += 1;
        }
        Ok(())
    }

    fn checkpoint_query(&self) -> CheckpointQuery {
        CheckpointQuery {
            dirty: self.fs_dirty(),
            dirty_nat_entries: self.nat.dirty_nids.len() as u64,
            max_nid: self.nat.nat_blocks as u64 * NAT_ENTRY_PER_BLOCK as u64,
            prefree_segments: self.segs.prefree.len() as u64,
            main_segments: self.segs.info.len() as u64,
            dirty_node_blocks: self.dirty_nodes.len() as u64,
            blocks_per_seg: BLOCKS_PER_SEG as u64,
            since_checkpoint_ns: self.now_ns.saturating_sub(self.clock.last_checkpoint_ns),
            since_request_ns: self.now_ns.saturating_sub(self.clock.last_request_ns),
        }
    }

    /// Something a checkpoint would write (`SBI_IS_DIRTY`).
    pub(crate) fn fs_dirty(&self) -> bool {
        !self.dirty_nodes.is_empty()
            || !self.nat.dirty_nids.is_empty()
            || !self.segs.dirty.is_empty()
            || !self.segs.prefree.is_empty()
    }
}
