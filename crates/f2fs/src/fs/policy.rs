//! Policies: what the page cache tells the file system at writeback, the mount options
//! that tune behaviour ([`F2fsConfig`], kernel defaults), and the named decisions
//! (temperature, in-place update, victim cost, GC thread sleep, checkpoint triggers, SSR)
//! as pure functions. The mechanisms in the other modules gather the inputs and carry the
//! answers out. Kernel citations are to Linux v6.12 `fs/f2fs/`.

use serde::{Deserialize, Serialize};

use flashstack_sim::Nanos;

use crate::consts::NR_CURSEG_DATA_TYPE as NR_DATA_LOGS;
use crate::layout::{CURSEG_COLD_DATA, CURSEG_HOT_DATA, CURSEG_WARM_DATA, CURSEG_WARM_NODE};

const SEC_NS: Nanos = 1_000_000_000;

/// What the page cache knows when it writes a file's pages back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteHint {
    /// Dirty pages the inode has in the page cache at this writeback (the kernel's
    /// `get_dirty_pages(inode)`).
    pub inode_dirty_pages: u64,
    /// The writeback comes from fsync/fdatasync (`f2fs_do_sync_file`).
    pub fsync: bool,
}

/// The `ipu_policy` bits (`segment.h`, `F2FS_IPU_*`): when an overwrite of an existing
/// block may go in place. All false is `F2FS_IPU_DISABLE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct IpuPolicy {
    /// `F2FS_IPU_FORCE`: every eligible overwrite.
    pub force: bool,
    /// `F2FS_IPU_SSR`: while SSR is needed.
    pub ssr: bool,
    /// `F2FS_IPU_UTIL`: while utilisation exceeds `min_ipu_util_percent`.
    pub util: bool,
    /// `F2FS_IPU_SSR_UTIL`: both of the above.
    pub ssr_util: bool,
    /// `F2FS_IPU_FSYNC`: writeback of an fsync with at most `min_fsync_blocks` dirty
    /// pages (the kernel default, `segment.c` `f2fs_build_segment_manager`).
    pub fsync: bool,
}

impl IpuPolicy {
    /// `BIT(F2FS_IPU_FSYNC)`, the default on volumes above 16 GB.
    pub const KERNEL_DEFAULT: IpuPolicy = IpuPolicy {
        force: false,
        ssr: false,
        util: false,
        ssr_util: false,
        fsync: true,
    };
    /// `F2FS_IPU_DISABLE`.
    pub const OFF: IpuPolicy = IpuPolicy {
        force: false,
        ssr: false,
        util: false,
        ssr_util: false,
        fsync: false,
    };
}

impl Default for IpuPolicy {
    fn default() -> IpuPolicy {
        IpuPolicy::KERNEL_DEFAULT
    }
}

/// Mount options and tunables, with the kernel's defaults (`F2fsConfig::default()`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct F2fsConfig {
    /// `mode=lfs`: every write out of place (no IPU at all, no SSR). Default `adaptive`.
    pub lfs_mode: bool,
    pub ipu_policy: IpuPolicy,
    /// `min_fsync_blocks` (8): the dirty-page bound for `F2FS_IPU_FSYNC`.
    pub min_fsync_blocks: u64,
    /// `min_ipu_util` (70 %).
    pub min_ipu_util_percent: u64,
    /// `min_hot_blocks` (`DEF_MIN_HOT_BLOCKS` 16): a writeback of at most this many dirty
    /// pages marks the file hot (`FI_HOT_DATA`, `data.c` `f2fs_write_cache_pages`).
    pub hot_data_dirty_pages_max: u64,
    /// `cp_interval` (`DEF_CP_INTERVAL`, 60 s): a checkpoint is due this long after the
    /// last one, taken once the file system is idle.
    pub cp_interval_ns: Nanos,
    /// `idle_interval` (`DEF_IDLE_INTERVAL`, 5 s): no request for this long is idle
    /// (`is_idle`, `f2fs_time_over` of `REQ_TIME`/`GC_TIME`).
    pub idle_interval_ns: Nanos,
    /// `background_gc=on` (default) or `off`.
    pub bg_gc: bool,
    /// GC thread sleeps (`gc.h`: `DEF_GC_THREAD_MIN/MAX/NOGC_SLEEP_TIME`).
    pub gc_min_sleep_ns: Nanos,
    pub gc_max_sleep_ns: Nanos,
    pub gc_no_gc_sleep_ns: Nanos,
    /// `DEF_DIRTY_NAT_RATIO_THRESHOLD` (10 % of the node ids dirty forces a checkpoint).
    pub dirty_nat_ratio_percent: u64,
    /// `DEF_MAX_RECLAIM_PREFREE_SEGMENTS` ratio (5 % of main segments pre-free forces a
    /// checkpoint; capped at 4096 segments).
    pub prefree_ratio_percent: u64,
    /// Slack space recycling when free sections run short (`f2fs_need_SSR`): a full log
    /// takes a dirty segment and fills its holes. Off in LFS mode; the kernel has no other
    /// switch for it (this one is ours, to measure what SSR changes).
    pub ssr: bool,
    /// `discard` (on, as the kernel sets it on a device that supports discard): segments a
    /// checkpoint frees are trimmed on the device. Off (`nodiscard`), the device learns
    /// that an LBA is free only when it is written again, so its GC keeps moving the
    /// stale pages of freed segments (`docs/ldc-reproduction.md`, "Under the whole
    /// stack").
    #[serde(skip_serializing_if = "is_true")]
    pub discard: bool,
    /// MedFS's delta compression (`[delta]`, off by default; `docs/medfs.md`).
    pub delta: super::DeltaConfig,
    /// F2FS compression (`[compress]`, off by default; `fs/cluster.rs`).
    pub compress: super::CompressConfig,
    /// FPC's file policy over F2FS compression (`[fpc]`, off by default; `fs/fpc.rs`).
    #[serde(skip_serializing_if = "super::FpcConfig::is_off")]
    pub fpc: super::FpcConfig,
    /// COCO's compression scheduling (`[facs]`, off by default; `fs/facs.rs`).
    pub facs: super::FacsConfig,
    /// COCO's on-demand space allocation (`[ondemand]`, off by default; `fs/ondemand.rs`).
    #[serde(skip_serializing_if = "super::OnDemandConfig::is_off")]
    pub ondemand: super::OnDemandConfig,
    /// The block layer's read path under F2FS (`[read]`): requests split at extent
    /// boundaries and at 512 KiB, 10 µs of host time per request, 32 in flight
    /// ([`F2fs::read_pages`](super::F2fs::read_pages); `docs/janusd.md`).
    pub read: flashstack_block::ReadModel,
}

impl Default for F2fsConfig {
    fn default() -> F2fsConfig {
        F2fsConfig {
            lfs_mode: false,
            ipu_policy: IpuPolicy::KERNEL_DEFAULT,
            min_fsync_blocks: 8,
            min_ipu_util_percent: 70,
            hot_data_dirty_pages_max: 16,
            cp_interval_ns: 60 * SEC_NS,
            idle_interval_ns: 5 * SEC_NS,
            bg_gc: true,
            gc_min_sleep_ns: 30 * SEC_NS,
            gc_max_sleep_ns: 60 * SEC_NS,
            gc_no_gc_sleep_ns: 300 * SEC_NS,
            dirty_nat_ratio_percent: 10,
            prefree_ratio_percent: 5,
            ssr: true,
            discard: true,
            delta: super::DeltaConfig::default(),
            compress: super::CompressConfig::default(),
            fpc: super::FpcConfig::default(),
            facs: super::FacsConfig::default(),
            ondemand: super::OnDemandConfig::default(),
            read: flashstack_block::ReadModel::default(),
        }
    }
}

fn is_true(b: &bool) -> bool {
    *b
}

impl F2fsConfig {
    /// `mode=lfs`: pure log-structured writes, no in-place update, no SSR.
    pub fn pure_lfs() -> F2fsConfig {
        F2fsConfig {
            lfs_mode: true,
            ipu_policy: IpuPolicy::OFF,
            ssr: false,
            ..F2fsConfig::default()
        }
    }

    /// These options with FPC's file policy over F2FS compression (the `fpc` stack preset):
    /// lz4 in 4-page clusters, no extension list (FPC's policy decides), `FpcConfig::phone`.
    pub fn with_fpc(self) -> F2fsConfig {
        F2fsConfig {
            compress: super::CompressConfig {
                enabled: true,
                ..super::CompressConfig::default()
            },
            fpc: super::FpcConfig::phone(),
            ..self
        }
    }

    /// What the write path of the version before these policies did: pure LFS, no
    /// background work.
    pub fn legacy() -> F2fsConfig {
        F2fsConfig {
            bg_gc: false,
            ..F2fsConfig::pure_lfs()
        }
    }
}

// ----- temperature -----

/// What decides a data block's log (`__get_segment_type_6`).
#[derive(Clone, Copy, Debug, Default)]
pub struct DataTemperature {
    /// The block is moved by cleaning.
    pub gc_moving: bool,
    /// `file_is_cold`: the name matched the cold (media) extension list.
    pub cold_file: bool,
    /// `file_is_hot`: the name matched the hot extension list.
    pub hot_file: bool,
    /// `FI_HOT_DATA`: few dirty pages at writeback, or an inline conversion.
    pub hot_data: bool,
    /// Directory data (dentry blocks).
    pub dir: bool,
}

/// `FI_HOT_DATA` from a writeback hint (`data.c` `f2fs_write_cache_pages`: at most
/// `min_hot_blocks` dirty pages).
pub fn hot_data_at_writeback(hint: &WriteHint, cfg: &F2fsConfig) -> bool {
    hint.inode_dirty_pages <= cfg.hot_data_dirty_pages_max
}

/// The data log, in the kernel's order: GC-moved cold, then cold files, then hot files
/// and `FI_HOT_DATA`, else warm. Directory dentry blocks count as hot data (they reach
/// writeback with few dirty pages, which is how the kernel makes them hot).
pub fn data_log(t: DataTemperature) -> usize {
    if t.gc_moving || t.cold_file {
        CURSEG_COLD_DATA
    } else if t.hot_file || t.hot_data || t.dir {
        CURSEG_HOT_DATA
    } else {
        CURSEG_WARM_DATA
    }
}

// ----- in-place update -----

/// What `need_inplace_update` (`data.c`) looks at for one data page.
#[derive(Clone, Copy, Debug, Default)]
pub struct IpuQuery {
    /// The page already has a valid block (`__is_valid_data_blkaddr(old_blkaddr)`).
    pub has_block: bool,
    pub dir: bool,
    pub gc_moving: bool,
    pub cold_file: bool,
    /// `FI_NEED_IPU`: set by the fsync path (see [`need_ipu_for_fsync`]).
    pub need_ipu: bool,
    pub ssr_needed: bool,
    pub utilization_percent: u64,
}

/// `FI_NEED_IPU` (`file.c` `f2fs_do_sync_file`): an fsync writeback with at most
/// `min_fsync_blocks` dirty pages.
pub fn need_ipu_for_fsync(hint: &WriteHint, cfg: &F2fsConfig) -> bool {
    hint.fsync && hint.inode_dirty_pages <= cfg.min_fsync_blocks
}

/// Whether an overwrite goes in place: never without an existing block; never when
/// `f2fs_should_update_outplace` holds (LFS mode, directories, GC moves); always for cold
/// files ("overwrite to avoid fragmentation"); else `check_inplace_update_policy`.
pub fn update_in_place(q: &IpuQuery, cfg: &F2fsConfig) -> bool {
    if !q.has_block || cfg.lfs_mode || q.dir || q.gc_moving {
        return false;
    }
    q.cold_file || ipu_policy_allows(q, cfg)
}

/// `check_inplace_update_policy`, bit by bit.
fn ipu_policy_allows(q: &IpuQuery, cfg: &F2fsConfig) -> bool {
    let p = &cfg.ipu_policy;
    let busy = q.utilization_percent > cfg.min_ipu_util_percent;
    p.force
        || (p.ssr && q.ssr_needed)
        || (p.util && busy)
        || (p.ssr_util && q.ssr_needed && busy)
        || (p.fsync && q.need_ipu)
}

// ----- cleaning -----

/// One candidate segment for cost-benefit selection.
#[derive(Clone, Copy, Debug)]
pub struct VictimInfo {
    pub segno: u32,
    pub valid_blocks: u32,
    /// SIT `mtime` (seconds).
    pub mtime: u64,
}

/// `get_cb_cost` (`gc.c`): lower is better. `u` is the utilisation in percent, `age`
/// 0–100 with 100 the oldest between `min_mtime` and `max_mtime`; the cost is
/// `UINT_MAX − 100·(100−u)·age/(100+u)`.
pub fn cb_cost(v: &VictimInfo, blocks_per_seg: u32, min_mtime: u64, max_mtime: u64) -> u32 {
    let u = (v.valid_blocks as u64 * 100 / blocks_per_seg.max(1) as u64).min(100);
    let (lo, hi) = (min_mtime.min(v.mtime), max_mtime.max(v.mtime));
    let age = if hi == lo {
        0
    } else {
        100 - 100 * (v.mtime - lo) / (hi - lo)
    };
    u32::MAX - (100 * (100 - u) * age / (100 + u)) as u32
}

/// The background victim: the lowest cost-benefit cost, ties to the lowest segment.
pub fn pick_cb_victim(
    candidates: &[VictimInfo],
    blocks_per_seg: u32,
    min_mtime: u64,
    max_mtime: u64,
) -> Option<u32> {
    candidates
        .iter()
        .map(|v| (cb_cost(v, blocks_per_seg, min_mtime, max_mtime), v.segno))
        .min()
        .map(|(_, s)| s)
}

/// `has_enough_invalid_blocks` (`gc.h`): reclaimable user blocks above 40 % of the user
/// blocks while free user blocks (beyond over-provisioning) are under 40 % of them.
pub fn has_enough_invalid_blocks(
    user_blocks: u64,
    valid_blocks: u64,
    free_segments: u64,
    ovp_segments: u64,
    blocks_per_seg: u64,
) -> bool {
    const LIMIT_INVALID_BLOCK: u64 = 40;
    const LIMIT_FREE_BLOCK: u64 = 40;
    let reclaimable = user_blocks.saturating_sub(valid_blocks);
    let free_user = free_segments.saturating_sub(ovp_segments) * blocks_per_seg;
    reclaimable > user_blocks * LIMIT_INVALID_BLOCK / 100
        && free_user < reclaimable * LIMIT_FREE_BLOCK / 100
}

/// The GC thread's next sleep after an idle wake (`gc_thread_func`): shorter while
/// invalid blocks pile up (`decrease_sleep_time`), longer otherwise
/// (`increase_sleep_time`); `no_gc_sleep` after a wake that found no victim, back to
/// `min_sleep` after one that found one.
pub fn next_gc_sleep(
    current_ns: Nanos,
    enough_invalid: bool,
    found_victim: bool,
    cfg: &F2fsConfig,
) -> Nanos {
    let adjusted = if enough_invalid {
        decrease_sleep(current_ns, cfg)
    } else {
        increase_sleep(current_ns, cfg)
    };
    if !found_victim {
        cfg.gc_no_gc_sleep_ns
    } else if adjusted == cfg.gc_no_gc_sleep_ns {
        cfg.gc_min_sleep_ns
    } else {
        adjusted
    }
}

/// `increase_sleep_time`; also what a wake that found the device busy does.
pub fn increase_sleep(current_ns: Nanos, cfg: &F2fsConfig) -> Nanos {
    if current_ns == cfg.gc_no_gc_sleep_ns {
        return current_ns;
    }
    (current_ns + cfg.gc_min_sleep_ns).min(cfg.gc_max_sleep_ns)
}

fn decrease_sleep(current_ns: Nanos, cfg: &F2fsConfig) -> Nanos {
    let from = if current_ns == cfg.gc_no_gc_sleep_ns {
        cfg.gc_max_sleep_ns
    } else {
        current_ns
    };
    if from.saturating_sub(cfg.gc_min_sleep_ns) < cfg.gc_min_sleep_ns {
        cfg.gc_min_sleep_ns
    } else {
        from - cfg.gc_min_sleep_ns
    }
}

// ----- checkpoints -----

/// What `f2fs_balance_fs_bg` (`segment.c`) weighs before forcing a checkpoint.
#[derive(Clone, Copy, Debug, Default)]
pub struct CheckpointQuery {
    /// Anything to write (`SBI_IS_DIRTY`); a clean file system skips the checkpoint.
    pub dirty: bool,
    pub dirty_nat_entries: u64,
    /// Node ids the NAT can hold (`max_nid`).
    pub max_nid: u64,
    pub prefree_segments: u64,
    pub main_segments: u64,
    /// Dirty node blocks in memory.
    pub dirty_node_blocks: u64,
    pub blocks_per_seg: u64,
    pub since_checkpoint_ns: Nanos,
    pub since_request_ns: Nanos,
}

/// Why a checkpoint is forced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum CheckpointReason {
    /// `excess_dirty_nats` (`node.h`).
    DirtyNats,
    /// `excess_prefree_segs` (`segment.h`).
    PrefreeSegments,
    /// `excess_dirty_threshold` for node pages (`segment.c`).
    DirtyNodes,
    /// `cp_interval` over while idle (`f2fs_time_over(CP_TIME)`).
    Interval,
}

/// The threshold triggers, checked whenever the kernel's `f2fs_balance_fs_bg` would
/// run (after operations here, as node writeback calls it).
pub fn checkpoint_threshold(q: &CheckpointQuery, cfg: &F2fsConfig) -> Option<CheckpointReason> {
    // `DEFAULT_DIRTY_THRESHOLD` (4 segments) × factor 2, the factor outside a checkpoint.
    const DIRTY_NODE_SEGMENTS: u64 = 4 * 2;
    const MAX_RECLAIM_PREFREE_SEGMENTS: u64 = 4096;
    if !q.dirty {
        return None;
    }
    let prefree_limit =
        (q.main_segments * cfg.prefree_ratio_percent / 100).min(MAX_RECLAIM_PREFREE_SEGMENTS);
    if q.dirty_nat_entries >= q.max_nid * cfg.dirty_nat_ratio_percent / 100 {
        Some(CheckpointReason::DirtyNats)
    } else if q.prefree_segments > prefree_limit {
        Some(CheckpointReason::PrefreeSegments)
    } else if q.dirty_node_blocks > DIRTY_NODE_SEGMENTS * q.blocks_per_seg {
        Some(CheckpointReason::DirtyNodes)
    } else {
        None
    }
}

/// The periodic checkpoint: dirty, `cp_interval` since the last one, and idle.
pub fn checkpoint_due(q: &CheckpointQuery, cfg: &F2fsConfig) -> Option<CheckpointReason> {
    checkpoint_threshold(q, cfg).or_else(|| {
        (q.dirty
            && q.since_checkpoint_ns >= cfg.cp_interval_ns
            && q.since_request_ns >= cfg.idle_interval_ns)
            .then_some(CheckpointReason::Interval)
    })
}

/// When the periodic checkpoint falls due, given when the last checkpoint and the last
/// request ended: both intervals must have passed.
pub fn checkpoint_due_at_ns(last_cp_ns: Nanos, last_request_ns: Nanos, cfg: &F2fsConfig) -> Nanos {
    last_cp_ns
        .saturating_add(cfg.cp_interval_ns)
        .max(last_request_ns.saturating_add(cfg.idle_interval_ns))
}

// ----- SSR -----

/// `f2fs_need_SSR` (`segment.h`): not LFS, and free sections at or under what dirty
/// nodes and dentries need plus the SSR minimum (`min_ssr_sections`, the reserved count)
/// plus the reserve.
pub fn need_ssr(
    free_sections: u64,
    node_sections: u64,
    dent_sections: u64,
    reserved_sections: u64,
    cfg: &F2fsConfig,
) -> bool {
    cfg.ssr
        && !cfg.lfs_mode
        && free_sections <= node_sections + 2 * dent_sections + 2 * reserved_sections
}

/// Whether a log that just filled takes a dirty segment by SSR rather than a free one
/// (`need_new_seg`, `segment.c`): never the warm node log while checkpoints lack
/// `CP_CRC_RECOVERY_FLAG` (roll-forward could then mistake a stale node left in a hole
/// for part of the fsync chain); otherwise whenever SSR is needed. (The kernel's
/// `is_next_segment_free` test never holds with one segment per section.)
pub fn use_ssr(log: usize, ssr_needed: bool, crc_recovery: bool) -> bool {
    ssr_needed && (crc_recovery || log != CURSEG_WARM_NODE)
}

/// A dirty segment (some but not all blocks valid, not a log's current segment) as SSR
/// victim selection sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SsrCandidate {
    pub segno: u32,
    /// SIT type (`se->type`: the log that last wrote it).
    pub seg_type: u8,
    /// Blocks valid in the checkpointed map or written since (`ckpt_valid_blocks`): the
    /// SSR cost. Only blocks clear in both maps may be reused.
    pub ckpt_valid_blocks: u32,
    /// The segment foreground cleaning is emptying (`cur_victim_sec`): searched, never
    /// taken.
    pub gc_victim: bool,
}

/// What SSR victim selection looks at: the log, its dirty candidates in segment order,
/// and the greedy search cursor (`last_victim[GC_GREEDY]`).
#[derive(Clone, Debug)]
pub struct SsrState<'a> {
    pub log: usize,
    /// Dirty segments of every type, ascending by segment number.
    pub candidates: &'a [SsrCandidate],
    pub last_victim: u32,
    pub main_segments: u32,
    pub blocks_per_seg: u32,
}

/// The SSR decision: the segment to recycle (if any) and the search cursor afterwards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SsrChoice {
    pub segno: Option<u32>,
    pub last_victim: u32,
}

/// `DEF_MAX_VICTIM_SEARCH`: dirty segments one SSR search looks at at most (a BG_GC
/// search, so capped).
pub const SSR_MAX_SEARCH: usize = 4096;

/// The types `get_ssr_segment` (`segment.c`) tries, in order: the log's own, then the
/// other types of its class (data or node), from cold down for warm and cold logs, from
/// hot up for hot ones.
pub fn ssr_type_order(log: usize) -> Vec<usize> {
    let (first, count) = if log >= NR_DATA_LOGS {
        (NR_DATA_LOGS, NR_DATA_LOGS)
    } else {
        (0, NR_DATA_LOGS)
    };
    let hot = log == first;
    let mut order = vec![log];
    let others: Vec<usize> = if hot {
        (first..first + count).collect()
    } else {
        (first..first + count).rev().collect()
    };
    order.extend(others.into_iter().filter(|&t| t != log));
    order
}

/// SSR victim selection (`get_ssr_segment` with `f2fs_get_victim(.., BG_GC, type, SSR)`,
/// `gc.c`): for each type of [`ssr_type_order`], the greedy search over that type's dirty
/// segments from the cursor, wrapping once, at most [`SSR_MAX_SEARCH`] of them; the cost
/// is `ckpt_valid_blocks`, the first lowest wins, and a segment costing a whole segment
/// (no block free in both maps) is never taken. The cursor moves as the kernel moves it.
pub fn ssr_victim(state: &SsrState) -> SsrChoice {
    let mut last_victim = state.last_victim;
    for t in ssr_type_order(state.log) {
        let (segno, cursor) = greedy_ssr_search(state, t as u8, last_victim);
        last_victim = cursor;
        if segno.is_some() {
            return SsrChoice { segno, last_victim };
        }
    }
    SsrChoice {
        segno: None,
        last_victim,
    }
}

/// One `get_victim_by_default` in SSR mode for segments of type `seg_type`.
fn greedy_ssr_search(state: &SsrState, seg_type: u8, last_victim: u32) -> (Option<u32>, u32) {
    let of_type: Vec<&SsrCandidate> = state
        .candidates
        .iter()
        .filter(|c| c.seg_type == seg_type)
        .collect();
    let max_search = of_type.len().min(SSR_MAX_SEARCH);
    if max_search == 0 {
        return (None, last_victim);
    }
    let start = of_type.partition_point(|c| c.segno < last_victim);
    let mut best: Option<(u32, u32)> = None;
    let mut cursor = last_victim;
    for (n, i) in (start..of_type.len()).chain(0..start).enumerate() {
        let c = of_type[i];
        if !c.gc_victim && c.ckpt_valid_blocks < best.map_or(state.blocks_per_seg, |b| b.0) {
            best = Some((c.ckpt_valid_blocks, c.segno));
        }
        if n + 1 >= max_search {
            let wrapped = i < start;
            let next = if wrapped && c.segno <= last_victim {
                last_victim + 1
            } else {
                c.segno + 1
            };
            cursor = next % state.main_segments.max(1);
            break;
        }
    }
    (best.map(|b| b.1), cursor)
}

/// Seconds after which `relatime` updates atime even if the file did not change
/// (`relatime_need_update` in `fs/inode.c`: a day).
pub const RELATIME_MAX_AGE_SECS: i64 = 24 * 60 * 60;

/// `relatime` (the kernel's default atime policy): a read updates atime only if atime is
/// not newer than mtime or ctime (so "read since the last change" stays answerable), or
/// is a day old.
pub fn atime_due(
    atime: super::Timestamp,
    mtime: super::Timestamp,
    ctime: super::Timestamp,
    now: super::Timestamp,
) -> bool {
    atime <= mtime || atime <= ctime || now.secs.saturating_sub(atime.secs) >= RELATIME_MAX_AGE_SECS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temperature_follows_the_kernel_order() {
        let cold_small = DataTemperature {
            cold_file: true,
            hot_data: true,
            ..Default::default()
        };
        assert_eq!(data_log(cold_small), CURSEG_COLD_DATA);
        let small = DataTemperature {
            hot_data: true,
            ..Default::default()
        };
        assert_eq!(data_log(small), CURSEG_HOT_DATA);
        assert_eq!(data_log(DataTemperature::default()), CURSEG_WARM_DATA);
        let cfg = F2fsConfig::default();
        let hint = |n| WriteHint {
            inode_dirty_pages: n,
            fsync: false,
        };
        assert!(hot_data_at_writeback(&hint(16), &cfg));
        assert!(!hot_data_at_writeback(&hint(17), &cfg));
    }

    #[test]
    fn ipu_needs_a_block_and_the_fsync_bound() {
        let cfg = F2fsConfig::default();
        let fsync = |n| WriteHint {
            inode_dirty_pages: n,
            fsync: true,
        };
        let q = |need_ipu, has_block| IpuQuery {
            has_block,
            need_ipu,
            ..Default::default()
        };
        assert!(need_ipu_for_fsync(&fsync(8), &cfg));
        assert!(!need_ipu_for_fsync(&fsync(9), &cfg));
        assert!(update_in_place(&q(true, true), &cfg));
        assert!(!update_in_place(&q(true, false), &cfg));
        assert!(!update_in_place(&q(false, true), &cfg));
        assert!(!update_in_place(&q(true, true), &F2fsConfig::pure_lfs()));
        let cold = IpuQuery {
            has_block: true,
            cold_file: true,
            ..Default::default()
        };
        assert!(update_in_place(&cold, &cfg));
        let util = F2fsConfig {
            ipu_policy: IpuPolicy {
                util: true,
                ..IpuPolicy::OFF
            },
            ..cfg
        };
        let busy = IpuQuery {
            has_block: true,
            utilization_percent: 71,
            ..Default::default()
        };
        assert!(update_in_place(&busy, &util));
    }

    #[test]
    fn cost_benefit_prefers_old_and_empty() {
        let v = |segno, valid_blocks, mtime| VictimInfo {
            segno,
            valid_blocks,
            mtime,
        };
        // Same utilisation: the older wins; same age: the emptier wins.
        assert_eq!(
            pick_cb_victim(&[v(1, 100, 50), v(2, 100, 10)], 512, 0, 100),
            Some(2)
        );
        assert_eq!(
            pick_cb_victim(&[v(1, 300, 10), v(2, 100, 10)], 512, 0, 100),
            Some(2)
        );
        // A young empty-ish segment loses to an old half-full one.
        assert_eq!(
            pick_cb_victim(&[v(1, 50, 100), v(2, 256, 0)], 512, 0, 100),
            Some(2)
        );
        assert_eq!(cb_cost(&v(1, 512, 0), 512, 0, 100), u32::MAX);
    }

    #[test]
    fn gc_sleep_adapts_between_the_bounds() {
        let cfg = F2fsConfig::default();
        let s = |n: u64| n * SEC_NS;
        assert_eq!(next_gc_sleep(s(30), false, true, &cfg), s(60));
        assert_eq!(next_gc_sleep(s(60), false, true, &cfg), s(60));
        assert_eq!(next_gc_sleep(s(60), true, true, &cfg), s(30));
        assert_eq!(next_gc_sleep(s(30), true, true, &cfg), s(30));
        assert_eq!(next_gc_sleep(s(30), true, false, &cfg), s(300));
        assert_eq!(next_gc_sleep(s(300), false, true, &cfg), s(30));
        assert_eq!(next_gc_sleep(s(300), true, true, &cfg), s(30));
    }

    #[test]
    fn checkpoints_by_threshold_and_interval() {
        let cfg = F2fsConfig::default();
        let base = CheckpointQuery {
            dirty: true,
            max_nid: 1000,
            main_segments: 100,
            blocks_per_seg: 512,
            ..Default::default()
        };
        assert_eq!(checkpoint_due(&base, &cfg), None);
        let nats = CheckpointQuery {
            dirty_nat_entries: 100,
            ..base
        };
        assert_eq!(
            checkpoint_due(&nats, &cfg),
            Some(CheckpointReason::DirtyNats)
        );
        let prefree = CheckpointQuery {
            prefree_segments: 6,
            ..base
        };
        assert_eq!(
            checkpoint_due(&prefree, &cfg),
            Some(CheckpointReason::PrefreeSegments)
        );
        let old = CheckpointQuery {
            since_checkpoint_ns: 60 * SEC_NS,
            since_request_ns: 5 * SEC_NS,
            ..base
        };
        assert_eq!(checkpoint_due(&old, &cfg), Some(CheckpointReason::Interval));
        let busy = CheckpointQuery {
            since_request_ns: SEC_NS,
            ..old
        };
        assert_eq!(checkpoint_due(&busy, &cfg), None);
        let clean = CheckpointQuery {
            dirty: false,
            ..old
        };
        assert_eq!(checkpoint_due(&clean, &cfg), None);
        assert_eq!(checkpoint_due_at_ns(0, 100 * SEC_NS, &cfg), 105 * SEC_NS);
    }

    #[test]
    fn background_gc_and_ssr_conditions() {
        // 1000 user blocks, 100 valid: 900 reclaimable (> 400); free beyond OP must be
        // under 360 blocks.
        assert!(has_enough_invalid_blocks(1000, 100, 2, 1, 256));
        assert!(!has_enough_invalid_blocks(1000, 100, 4, 1, 256));
        assert!(!has_enough_invalid_blocks(1000, 700, 1, 1, 256));
        let cfg = F2fsConfig::default();
        assert!(need_ssr(10, 1, 0, 5, &cfg));
        assert!(!need_ssr(12, 1, 0, 5, &cfg));
        assert!(!need_ssr(10, 1, 0, 5, &F2fsConfig::pure_lfs()));
        let off = F2fsConfig {
            ssr: false,
            ..F2fsConfig::default()
        };
        assert!(!need_ssr(10, 1, 0, 5, &off));
    }

    #[test]
    fn ssr_tries_the_logs_own_type_then_its_class() {
        assert_eq!(ssr_type_order(0), vec![0, 1, 2]);
        assert_eq!(ssr_type_order(1), vec![1, 2, 0]);
        assert_eq!(ssr_type_order(2), vec![2, 1, 0]);
        assert_eq!(ssr_type_order(3), vec![3, 4, 5]);
        assert_eq!(ssr_type_order(4), vec![4, 5, 3]);
        assert_eq!(ssr_type_order(5), vec![5, 4, 3]);
        assert!(use_ssr(CURSEG_WARM_NODE, true, true));
        assert!(!use_ssr(CURSEG_WARM_NODE, true, false));
        assert!(use_ssr(CURSEG_WARM_DATA, true, false));
        assert!(!use_ssr(CURSEG_WARM_DATA, false, true));
    }

    fn cand(segno: u32, seg_type: u8, ckpt_valid_blocks: u32) -> SsrCandidate {
        SsrCandidate {
            segno,
            seg_type,
            ckpt_valid_blocks,
            gc_victim: false,
        }
    }

    fn state(log: usize, candidates: &[SsrCandidate], last_victim: u32) -> SsrState<'_> {
        SsrState {
            log,
            candidates,
            last_victim,
            main_segments: 100,
            blocks_per_seg: 512,
        }
    }

    #[test]
    fn ssr_victim_is_greedy_on_checkpointed_valid_blocks() {
        let c = [
            cand(3, 1, 400),
            cand(7, 1, 100),
            cand(9, 2, 10),
            cand(12, 1, 100),
            cand(20, 1, 512),
        ];
        // Fewest checkpointed-valid blocks of the log's own type; the first of equals
        // from the cursor; the cursor ends after the last searched.
        let pick = ssr_victim(&state(1, &c, 0));
        assert_eq!(
            pick,
            SsrChoice {
                segno: Some(7),
                last_victim: 21
            }
        );
        let pick = ssr_victim(&state(1, &c, 10));
        assert_eq!(
            pick,
            SsrChoice {
                segno: Some(12),
                last_victim: 11
            }
        );
        // The cleaning victim is searched but never taken.
        let mut v = c;
        v[1].gc_victim = true;
        assert_eq!(ssr_victim(&state(1, &v, 0)).segno, Some(12));
        // No hole of the own type: another type of the class (cold for warm data).
        let full = [cand(3, 1, 512), cand(9, 2, 10), cand(11, 0, 5)];
        assert_eq!(ssr_victim(&state(1, &full, 0)).segno, Some(9));
        assert_eq!(ssr_victim(&state(0, &full, 0)).segno, Some(11));
        // Never a node segment for a data log, nor one without a free block.
        let nodes = [cand(4, 3, 1), cand(5, 1, 512)];
        assert_eq!(ssr_victim(&state(1, &nodes, 0)).segno, None);
        assert_eq!(ssr_victim(&state(4, &nodes, 0)).segno, Some(4));
        assert_eq!(
            ssr_victim(&state(2, &[], 42)),
            SsrChoice {
                segno: None,
                last_victim: 42
            }
        );
    }

    #[test]
    fn config_defaults_round_trip_through_serde() {
        let cfg = F2fsConfig::default();
        let json = serde_json::to_string(&cfg).unwrap();
        let back: F2fsConfig = serde_json::from_str(&json).unwrap();
        assert_eq!(back, cfg);
        let partial: F2fsConfig = serde_json::from_str(r#"{"lfs_mode": true}"#).unwrap();
        assert!(partial.lfs_mode && partial.bg_gc);
    }

    #[test]
    fn relatime_updates_after_a_change_or_a_day() {
        use super::super::Timestamp;
        let t = |secs| Timestamp { secs, nsec: 0 };
        assert!(atime_due(t(10), t(10), t(5), t(11)), "atime == mtime");
        assert!(
            !atime_due(t(11), t(10), t(10), t(12)),
            "read since the change"
        );
        assert!(atime_due(t(11), t(10), t(12), t(13)), "ctime moved past it");
        assert!(atime_due(
            t(11),
            t(10),
            t(10),
            t(11 + RELATIME_MAX_AGE_SECS)
        ));
    }
}
