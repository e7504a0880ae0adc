//! The read-write file system: [`F2fs`] mounts an image (ours or mkfs.f2fs's), keeps the
//! NAT, SIT and node blocks it touches in memory, writes every main-area block out of
//! place through one of six logs with its temperature hint, and makes a consistent state
//! durable with a checkpoint (sync, unmount) that `fsck.f2fs` accepts.
//!
//! Data blocks go to the device when a file is written; node blocks (inodes, direct and
//! indirect nodes) stay dirty in memory until the next checkpoint writes them, as the
//! kernel's node writeback does. See `docs/f2fs.md` for the write path step by step.

mod atomic;
mod attr;
mod batch;
mod check;
mod ckpt;
mod cluster;
mod data;
mod defrag;
mod delta;
mod device_space;
mod dir;
mod error;
mod extents;
mod facs;
mod falloc;
mod fpc;
mod fsync;
mod gc;
mod hash;
mod idle;
mod metrics;
mod nat;
mod nodecache;
mod ondemand;
mod ops;
mod pagemap;
pub mod policy;
mod readpages;
mod remap_defrag;
mod seg;
mod symlink;
mod verify;
mod xattr;

use std::collections::{BTreeMap, BTreeSet};

use flashstack_block::{BlockDevice, Hints, Payload, Temperature};
use flashstack_sim::{LatencyHistogram, LatencySummary, Nanos};

pub use attr::{
    is_special, InodeClock, NewInode, SetAttr, TimeSet, Timestamp, VirtualClock,
    SIMULATION_EPOCH_SECS,
};
pub use batch::BatchFile;
pub use cluster::{CompressAlgorithm, CompressConfig, CompressMetrics, CompressMode};
pub use defrag::CopyDefragOutcome;
pub use delta::policy::{DeltaConfig, DeltaMode};
pub use delta::{DeltaMetrics, MEDFS_DCM_FL, MEDFS_DELTA_FL, MEDFS_PSEUDO_FL};
pub use error::FsError;
pub use extents::BlockUsage;
pub use facs::{facs_decide, sample_ratio_permille, CompressSide, FacsConfig, FacsHotList};
pub use falloc::FallocMode;
pub use fpc::{
    extents_of as fpc_extents, repack_decision as fpc_repack_decision, FpcClass, FpcConfig,
    FpcMetrics, RepackDecision as FpcRepackDecision, RepackMetrics as FpcRepackMetrics,
    RepackView as FpcRepackView,
};
pub use hash::{dentry_hash, has_extension};
pub use metrics::{BlockKind, Metrics};
pub use ondemand::{ondemand_user_blocks, op_bytes, OnDemandConfig, OnDemandMetrics, SpaceState};
pub use ops::{DirEntryInfo, FileKind, Stat};
pub use policy::{F2fsConfig, IpuPolicy, WriteHint};
pub use remap_defrag::RemapDefragReport;
pub use symlink::SYMLINK_TARGET_MAX;
pub use verify::{Finding, MountOptions, Verify};
pub use xattr::{XattrMode, XATTR_MAGIC};

use crate::checkpoint::Checkpoint;
use crate::codec::{le32_at, put_le32_at, zero_block, Block, Reader};
use crate::consts::*;
use crate::error::Corruption;
use crate::layout::*;
use crate::mount::mount_at;
use crate::nat::{nat_block_addr, nat_position, NatBlock, NatEntry};
use crate::node::{checksum_seed, inode_checksum, InodeLayout, NodeFooter, NodeKind};
use crate::sit::SitBlock;
use crate::summary::{Summary, SummaryBlock};
use crate::superblock::Superblock;
use error::corrupt;
use nat::NatTable;
use seg::{Log, SegInfo, Segs};

/// Clean node blocks kept in memory at most.
const NODE_CACHE_MAX: usize = 4096;

/// A mounted, writable F2FS over a block device.
pub struct F2fs<D: BlockDevice> {
    dev: D,
    now_ns: Nanos,
    sb: Superblock,
    /// The last checkpoint written (or found at mount).
    cp: Checkpoint,
    /// Pack (1 or 2) holding `cp`.
    cp_pack: u8,
    /// What node footers carry under `cp` (its version, with its CRC when
    /// `CP_CRC_RECOVERY_FLAG` is set): computed once per checkpoint, not per node write.
    cp_node_version: u64,
    sit_bitmap: Vec<u8>,
    nat_bitmap: Vec<u8>,
    segs: Segs,
    nat: NatTable,
    nodes: nodecache::NodeCache,
    /// The block a node write replaced in `nodes`, reused for the next one's copy.
    node_spare: Option<Box<Block>>,
    dirty_nodes: BTreeSet<u32>,
    /// FACS's decision per file (`facs.rs`); empty unless `[facs]` is on.
    facs: BTreeMap<u32, facs::CompressSide>,
    /// On-demand space allocation's counters (`ondemand.rs`).
    ondemand: ondemand::OnDemandMetrics,
    /// A user capacity the next checkpoint records (`ondemand.rs`): the checkpoint in
    /// memory stays the one on disk until then, as the node footers' version needs.
    user_blocks_next: Option<u64>,
    /// Inodes whose node block holds time changes that did not make it dirty
    /// (`lazytime`, see `attr.rs`): written with the inode, or at sync and unmount.
    lazy_times: BTreeSet<u32>,
    /// Where inode times come from.
    inode_clock: Box<dyn InodeClock>,
    valid_node_count: u32,
    valid_inode_count: u32,
    /// Data addresses reserved by fallocate (`NEW_ADDR`): counted in the checkpoint's
    /// `valid_block_count` and in `i_blocks`, with no block in the SIT.
    reserved_blocks: u64,
    /// Inodes unlinked while open: freed on the last close, or at the next mount.
    orphans: BTreeSet<u32>,
    open_counts: BTreeMap<u32, u32>,
    cold_exts: Vec<String>,
    hot_exts: Vec<String>,
    chksum_seed: Option<u32>,
    generation: u32,
    metrics: Metrics,
    /// Set while cleaning, so moves do not start another pass.
    in_gc: bool,
    /// Cleaning moved data blocks since the last device flush. An fsync then flushes
    /// before it writes its nodes: otherwise, with a volatile write cache, its fsync-marked
    /// node (pointing at the moved copies) could reach the disk without them, and roll-
    /// forward after a cut would replace durable data with whatever the new blocks held.
    gc_moved_unflushed: bool,
    since_cp: fsync::SinceCheckpoint,
    /// Inodes replayed by roll-forward recovery at mount.
    recovered_inodes: usize,
    /// Set while roll-forward replays the chain: the blocks after the checkpointed log
    /// positions hold the fsync'd data and nodes, so no log may take a block.
    rolling_forward: bool,
    /// Virtual latency per file operation.
    op_latency: BTreeMap<&'static str, LatencyHistogram>,
    /// F2FS compression: the cluster being written by the current operation.
    cluster_stage: Option<cluster::ClusterStage>,
    compress_metrics: cluster::CompressMetrics,
    /// FPC's file policy: the files awaiting their first-page trial.
    fpc: fpc::FpcState,
    cfg: F2fsConfig,
    /// Background timing: requests, checkpoints and the GC thread.
    clock: idle::BackgroundClock,
    /// MedFS's delta path (`delta.rs`).
    delta_state: delta::DeltaState,
    /// Mounted read-only: nothing is ever written to the device.
    read_only: bool,
    /// What the checks at mount found (a read-only mount keeps going with them).
    findings: verify::Findings,
    /// Inodes a read-only mount found inconsistent: any access to them fails with this.
    quarantine: BTreeMap<u32, Corruption>,
    /// Inodes with fsync'd data a read-only mount did not replay.
    skipped_recovery: usize,
}

/// Temperature of each log, for the block-interface hint.
fn log_temperature(log: usize) -> Temperature {
    match log {
        CURSEG_HOT_DATA | CURSEG_HOT_NODE => Temperature::Hot,
        CURSEG_WARM_DATA | CURSEG_WARM_NODE => Temperature::Warm,
        _ => Temperature::Cold,
    }
}

impl<D: BlockDevice> F2fs<D> {
    /// Mounts read-write, with the first request at virtual time 0.
    pub fn mount(dev: D) -> Result<F2fs<D>, FsError> {
        F2fs::mount_at(dev, 0)
    }

    /// Mounts read-write with the first request arriving at `start_ns`, with the
    /// kernel's default options.
    pub fn mount_at(dev: D, start_ns: Nanos) -> Result<F2fs<D>, FsError> {
        F2fs::mount_with(dev, start_ns, F2fsConfig::default())
    }

    /// Mounts read-write with the given options (policies and tunables) and the checks
    /// of [`Verify::Mount`].
    pub fn mount_with(dev: D, start_ns: Nanos, cfg: F2fsConfig) -> Result<F2fs<D>, FsError> {
        let opts = MountOptions {
            start_ns,
            config: cfg,
            ..MountOptions::default()
        };
        F2fs::mount_opts(dev, opts)
    }

    /// Mounts with the given verification, read-write or read-only. A read-write mount
    /// refuses an image any check finds inconsistent, with an error naming the structure
    /// ([`crate::Corruption`]); a read-only one keeps going where reads stay safe (see
    /// [`MountOptions::read_only`] and [`F2fs::warnings`]).
    pub fn mount_opts(mut dev: D, opts: MountOptions) -> Result<F2fs<D>, FsError> {
        let (m, now_ns) = mount_at(&mut dev, opts.start_ns)?;
        let cfg = opts.config;
        let sb = m.superblock.clone();
        let cp = m.checkpoint.clone();
        let (cold_exts, hot_exts) = sb.extensions();
        let chksum_seed = sb
            .feature
            .contains(FEATURE_INODE_CHKSUM)
            .then(|| checksum_seed(&sb.uuid));
        let mut fs = F2fs {
            dev,
            now_ns,
            sit_bitmap: Vec::new(),
            nat_bitmap: cp.nat_version_bitmap(sb.cp_payload),
            segs: empty_segs(&sb),
            nat: NatTable {
                nat_blocks: (sb.segment_count_nat / 2) << LOG_BLOCKS_PER_SEG,
                ..NatTable::default()
            },
            nodes: nodecache::NodeCache::default(),
            node_spare: None,
            dirty_nodes: BTreeSet::new(),
            facs: BTreeMap::new(),
            ondemand: Default::default(),
            user_blocks_next: None,
            lazy_times: BTreeSet::new(),
            inode_clock: Box::new(VirtualClock::default()),
            valid_node_count: cp.valid_node_count,
            valid_inode_count: cp.valid_inode_count,
            reserved_blocks: 0,
            orphans: BTreeSet::new(),
            open_counts: BTreeMap::new(),
            cold_exts,
            hot_exts,
            chksum_seed,
            generation: 0,
            metrics: Metrics::default(),
            in_gc: false,
            gc_moved_unflushed: false,
            since_cp: Default::default(),
            recovered_inodes: 0,
            rolling_forward: false,
            op_latency: BTreeMap::new(),
            cluster_stage: None,
            compress_metrics: cluster::CompressMetrics::default(),
            fpc: Default::default(),
            clock: idle::BackgroundClock::new(now_ns, m.checkpoint.elapsed_time, &cfg),
            cfg,
            delta_state: Default::default(),
            cp_pack: m.cp_pack,
            cp_node_version: node_version_of(&cp),
            sb,
            cp,
            read_only: opts.read_only,
            findings: verify::Findings::default(),
            quarantine: BTreeMap::new(),
            skipped_recovery: 0,
        };
        if !fs.read_only {
            check_supported(&fs.sb, &fs.cp)?;
        }
        fs.check_compress_options()?;
        fs.segs.now_secs = fs.cp.elapsed_time;
        fs.load_sit_bitmap()?;
        fs.load_sit(&m.sit_journal)?;
        // `valid_block_count` counts fallocate's reservations too; the SIT does not.
        fs.reserved_blocks = fs.cp.valid_block_count.saturating_sub(fs.segs.valid_blocks);
        fs.clock.min_mtime = fs.segs.info.iter().map(|s| s.mtime).min().unwrap_or(0);
        fs.load_logs(&m.data_summaries, &m.node_summaries);
        if !fs.cp.has_flag(CP_UMOUNT_FLAG) {
            fs.restore_node_summaries()?;
        }
        fs.nat.journal = m.nat_journal.iter().map(|j| (j.nid, j.entry)).collect();
        fs.mount_checks(&m);
        fs.refuse_if_inconsistent()?;
        if opts.verify == Verify::Full {
            fs.check_tree(&m.orphans)?;
            fs.refuse_if_inconsistent()?;
        }
        if fs.read_only {
            fs.note_skipped_recovery()?;
            return Ok(fs);
        }
        for ino in m.orphans {
            fs.check_orphan_inode(ino)?;
            fs.evict_inode(ino)?;
        }
        fs.recovered_inodes = fs.recover()?;
        fs.ondemand_adjust()?;
        Ok(fs)
    }

    /// A read-write mount refuses an image with the first inconsistency found.
    fn refuse_if_inconsistent(&mut self) -> Result<(), FsError> {
        match self.findings.list.first() {
            Some(f) if !self.read_only => Err(f.corruption.clone().into()),
            _ => Ok(()),
        }
    }

    /// What the checks at mount found and a read-only mount tolerated (at most 64; see
    /// [`F2fs::warnings_dropped`]). Empty for a read-write mount, which refuses instead.
    pub fn warnings(&self) -> &[Finding] {
        &self.findings.list
    }

    /// Findings beyond those [`F2fs::warnings`] lists.
    pub fn warnings_dropped(&self) -> u64 {
        self.findings.more
    }

    /// Whether this mount is read-only.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    fn load_sit_bitmap(&mut self) -> Result<(), FsError> {
        let payload_blocks = self.sb.cp_payload as u64;
        let start = self.pack_start(self.cp_pack);
        let mut payload = Vec::new();
        for i in 0..payload_blocks {
            payload.extend_from_slice(&self.read_block(start + 1 + i)?[..]);
        }
        self.sit_bitmap = self.cp.sit_version_bitmap(&payload);
        Ok(())
    }

    fn load_sit(&mut self, journal: &[crate::summary::SitJournalEntry]) -> Result<(), FsError> {
        let main = self.sb.segment_count_main as usize;
        let blocks = (main as u32).div_ceil(SIT_ENTRY_PER_BLOCK);
        let mut info = Vec::with_capacity(main);
        for index in 0..blocks {
            let block = SitBlock::decode(&*self.read_block(self.sit_addr(index, None))?);
            for (i, e) in block.entries.iter().enumerate() {
                let segno = index * SIT_ENTRY_PER_BLOCK + i as u32;
                if (segno as usize) < main {
                    let r = verify::check_sit_entry(segno, e);
                    self.findings.add_result(None, r);
                }
            }
            info.extend(block.entries.iter().map(SegInfo::from_entry));
        }
        info.truncate(main);
        for j in journal {
            let r = self.check_sit_journal_entry(j, main);
            self.findings.add_result(None, r);
            if let Some(slot) = info.get_mut(j.segno as usize) {
                *slot = SegInfo::from_entry(&j.entry);
                self.segs.journal.insert(j.segno);
            }
        }
        self.segs.set_info(info);
        Ok(())
    }

    fn load_logs(&mut self, data: &[Vec<Summary>; 3], node: &[SummaryBlock]) {
        let cp = &self.cp;
        let mut logs = Vec::with_capacity(NR_CURSEG_TYPE);
        for (i, sums) in data.iter().enumerate() {
            let mut sum = SummaryBlock::new(SUM_TYPE_DATA);
            sum.entries[..sums.len()].copy_from_slice(sums);
            logs.push(Log {
                segno: cp.cur_data_segno[i],
                blkoff: cp.cur_data_blkoff[i],
                sum,
                ssr: cp.alloc_type[i] == ALLOC_SSR,
            });
        }
        for i in 0..NR_CURSEG_NODE_TYPE {
            let mut sum = node
                .get(i)
                .cloned()
                .unwrap_or_else(|| SummaryBlock::new(SUM_TYPE_NODE));
            sum.journal = Default::default();
            sum.entry_type = SUM_TYPE_NODE;
            logs.push(Log {
                segno: cp.cur_node_segno[i],
                blkoff: cp.cur_node_blkoff[i],
                sum,
                ssr: cp.alloc_type[NR_CURSEG_DATA_TYPE + i] == ALLOC_SSR,
            });
        }
        for l in &mut logs[..NR_CURSEG_DATA_TYPE] {
            l.sum.journal = Default::default();
        }
        self.segs.logs = logs;
        self.segs.free_changed();
    }

    /// After a checkpoint other than an unmount the node logs' summaries are nowhere on
    /// disk: they are rebuilt from the footers of the blocks written so far
    /// (`restore_node_summary`), as the kernel and fsck.f2fs do; for a log in SSR mode,
    /// of every valid block of its segment (the holes it filled are anywhere).
    fn restore_node_summaries(&mut self) -> Result<(), FsError> {
        for log in NR_CURSEG_DATA_TYPE..NR_CURSEG_TYPE {
            let (segno, blkoff) = (self.segs.logs[log].segno, self.segs.logs[log].blkoff);
            let base = self.sb.main_blkaddr + segno * BLOCKS_PER_SEG;
            let offsets: Vec<u32> = if self.segs.logs[log].ssr {
                (0..BLOCKS_PER_SEG)
                    .filter(|&off| self.segs.is_valid(base + off))
                    .collect()
            } else {
                (0..blkoff as u32).collect()
            };
            for off in offsets {
                let footer = NodeFooter::decode(&*self.read_block((base + off) as u64)?);
                self.segs.logs[log].sum.entries[off as usize] = Summary {
                    nid: footer.nid,
                    version: 0,
                    ofs_in_node: 0,
                };
            }
        }
        Ok(())
    }

    /// Writes a checkpoint marked as an unmount (lazily updated times included) and
    /// returns the device (a read-only mount writes nothing).
    pub fn unmount(mut self) -> Result<D, FsError> {
        if !self.read_only {
            self.flush_lazy_times();
            self.checkpoint(true)?;
        }
        Ok(self.dev)
    }

    /// The device, for inspection (e.g. to snapshot a `MemDevice`).
    pub fn device(&self) -> &D {
        &self.dev
    }

    /// The device, mutably (for fault injection in tests: arm a power cut, ...).
    pub fn device_mut(&mut self) -> &mut D {
        &mut self.dev
    }

    /// Gives the device back without writing anything (a power cut).
    pub fn into_device(self) -> D {
        self.dev
    }

    /// Inodes roll-forward recovery replayed when this mount began.
    pub fn recovered_inodes(&self) -> usize {
        self.recovered_inodes
    }

    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Starts a measurement phase: counters and per-operation latencies restart; the file
    /// system's state is kept.
    pub fn reset_metrics(&mut self) {
        self.metrics = Metrics::default();
        self.op_latency.clear();
    }

    /// Virtual time after the last request completed.
    pub fn now_ns(&self) -> Nanos {
        self.now_ns
    }

    /// Moves the clock forward to `now_ns` (an operation arriving later than the last
    /// one completed); never backwards.
    pub fn advance_to(&mut self, now_ns: Nanos) {
        self.now_ns = self.now_ns.max(now_ns);
        self.sync_mtime_clock();
    }

    /// SIT `mtime`s count seconds of file-system life (`get_mtime`): the checkpointed
    /// elapsed time at mount plus the virtual time since.
    fn sync_mtime_clock(&mut self) {
        self.segs.now_secs = self.clock.mtime_secs(self.now_ns);
    }

    /// The options this file system was mounted with.
    pub fn config(&self) -> &F2fsConfig {
        &self.cfg
    }

    /// Latency percentiles per file operation ("create", "write", "fsync", ...).
    pub fn op_latency(&self) -> BTreeMap<&'static str, LatencySummary> {
        self.op_latency
            .iter()
            .map(|(k, h)| (*k, h.summary()))
            .collect()
    }

    pub fn superblock(&self) -> &Superblock {
        &self.sb
    }

    /// Free main-area segments (not current, not waiting for a checkpoint).
    pub fn free_segments(&self) -> u32 {
        self.segs.free_segments()
    }

    // ----- block I/O -----

    fn read_block(&mut self, blkaddr: u64) -> Result<Box<Block>, FsError> {
        let mut block = zero_block();
        let done = self
            .dev
            .read(self.now_ns, blkaddr, 1, Some(&mut block[..]))
            .map_err(crate::F2fsError::from)?;
        self.now_ns = done.complete_ns;
        self.metrics.blocks_read += 1;
        Ok(block)
    }

    fn write_blocks(
        &mut self,
        blkaddr: u64,
        data: &[u8],
        temp: Option<Temperature>,
        kind: BlockKind,
    ) -> Result<(), FsError> {
        self.write_blocks_marked(blkaddr, data, temp, kind, false)
    }

    /// `write_blocks` with FACS's status bit (`compress_on_device`) set or not.
    fn write_blocks_marked(
        &mut self,
        blkaddr: u64,
        data: &[u8],
        temp: Option<Temperature>,
        kind: BlockKind,
        compress_on_device: bool,
    ) -> Result<(), FsError> {
        self.writable("write")?;
        let hints = Hints {
            temperature: temp,
            compress_on_device,
            ..Hints::default()
        };
        let done = self
            .dev
            .write(self.now_ns, blkaddr, Payload::Bytes(data), hints)
            .map_err(crate::F2fsError::from)?;
        self.now_ns = done.complete_ns;
        self.sync_mtime_clock();
        self.metrics.count(kind, (data.len() / BLOCK_SIZE) as u64);
        let data_block = matches!(
            kind,
            BlockKind::Data | BlockKind::DataInPlace | BlockKind::GcData
        );
        self.note_block_written(blkaddr, data, data_block);
        Ok(())
    }

    fn flush_device(&mut self) -> Result<(), FsError> {
        self.writable("flush")?;
        let done = self
            .dev
            .flush(self.now_ns)
            .map_err(crate::F2fsError::from)?;
        self.now_ns = done.complete_ns;
        self.gc_moved_unflushed = false;
        Ok(())
    }

    fn pack_start(&self, pack: u8) -> u64 {
        self.sb.cp_blkaddr as u64 + if pack == 2 { BLOCKS_PER_SEG as u64 } else { 0 }
    }

    /// Address of SIT block `index` in the copy the bitmap names (or the given copy).
    fn sit_addr(&self, index: u32, second: Option<bool>) -> u64 {
        let second =
            second.unwrap_or_else(|| crate::codec::test_bit_msb(&self.sit_bitmap, index as usize));
        let copy_blocks = ((self.sb.segment_count_sit / 2) << LOG_BLOCKS_PER_SEG) as u64;
        self.sb.sit_blkaddr as u64 + index as u64 + if second { copy_blocks } else { 0 }
    }

    fn in_main(&self, blkaddr: u32) -> bool {
        self.segs.segno_of(blkaddr).is_some()
    }

    // ----- NAT -----

    fn nat_load(&mut self, nid: u32) -> Result<(), FsError> {
        let (index, _) = nat_position(nid);
        if index >= self.nat.nat_blocks {
            return Err(corrupt(format!("node id {nid} is beyond the NAT")));
        }
        if self.nat.blocks.contains_key(&index) {
            return Ok(());
        }
        let second = crate::checkpoint::nat_block_in_second_copy(&self.nat_bitmap, index);
        let addr = nat_block_addr(self.sb.nat_blkaddr, index, second);
        let mut block = NatBlock::decode(&*self.read_block(addr)?);
        if !self.read_only {
            // Written back whole at a checkpoint: a bad entry must not be carried on.
            self.check_nat_block(index, &block)?;
        }
        self.nat.overlay_journal(index, &mut block);
        self.nat.blocks.insert(index, block);
        Ok(())
    }

    fn nat_get(&mut self, nid: u32) -> Result<NatEntry, FsError> {
        self.nat_load(nid)?;
        Ok(self.nat.get(nid).unwrap_or_default())
    }

    fn nat_set(&mut self, nid: u32, entry: NatEntry) -> Result<(), FsError> {
        self.nat_load(nid)?;
        self.nat.set(nid, entry);
        Ok(())
    }

    /// A free node id (`f2fs_alloc_nid`), scanning NAT blocks as needed.
    fn alloc_nid(&mut self) -> Result<u32, FsError> {
        let mut scanned = 0;
        while self.nat.free.is_empty() && scanned < self.nat.nat_blocks {
            let index = self.nat.scan_block;
            self.nat_load(index * NAT_ENTRY_PER_BLOCK)?;
            self.nat.collect_free(index);
            self.nat.scan_block = (index + 1) % self.nat.nat_blocks;
            scanned += 1;
        }
        let nid = self.nat.free.pop_first().ok_or(FsError::NoSpace)?;
        self.nat.taken.insert(nid);
        Ok(nid)
    }

    // ----- nodes -----

    /// The node block `nid` (cached, or read through the NAT and checked: its address
    /// before the read, its footer after).
    fn node(&mut self, nid: u32) -> Result<&mut Box<Block>, FsError> {
        if !self.nodes.contains_key(&nid) {
            if nid >= self.max_nid() {
                return Err(Corruption::NatEntryMissing { nid }.into());
            }
            let entry = self.nat_get(nid)?;
            self.check_node_addr(nid, &entry)?;
            let block = self.read_block(entry.block_addr as u64)?;
            self.check_node_footer(nid, &entry, &block)?;
            self.nodes.insert(nid, block);
        }
        Ok(self.nodes.get_mut(&nid).expect("cached above"))
    }

    /// Replaces a node block and marks it dirty.
    fn put_node(&mut self, nid: u32, block: Box<Block>) {
        self.nodes.insert(nid, block);
        self.dirty_nodes.insert(nid);
    }

    /// Creates a node `nid` of inode `ino` at tree offset `offset`; the cold bit marks
    /// nodes of non-directories (`set_cold_node`).
    fn new_node(&mut self, nid: u32, ino: u32, offset: u32, cold: bool) -> Result<(), FsError> {
        let mut block = zero_block();
        NodeFooter {
            nid,
            ino,
            flag: (offset << OFFSET_BIT_SHIFT) | u32::from(cold) << COLD_BIT_SHIFT,
            cp_ver: 0,
            next_blkaddr: 0,
        }
        .encode(&mut block);
        self.nat_set(
            nid,
            NatEntry {
                version: 0,
                ino,
                block_addr: NEW_ADDR,
            },
        )?;
        self.nat.taken.remove(&nid);
        self.valid_node_count += 1;
        self.since_cp.new_nodes.insert(nid);
        self.put_node(nid, block);
        Ok(())
    }

    /// Releases a node: its block becomes invalid and its id reusable after the next
    /// checkpoint.
    fn free_node(&mut self, nid: u32) -> Result<(), FsError> {
        let entry = self.nat_get(nid)?;
        if self.in_main(entry.block_addr) {
            self.segs.invalidate(entry.block_addr);
        }
        self.nat_set(nid, NatEntry::default())?;
        self.nodes.remove(&nid);
        self.dirty_nodes.remove(&nid);
        self.lazy_times.remove(&nid);
        self.nat.released.insert(nid);
        self.valid_node_count = self.valid_node_count.saturating_sub(1);
        Ok(())
    }

    /// The log a node goes to (`__get_segment_type_6`): indirect nodes cold, direct nodes
    /// and inodes of files warm, of directories hot.
    fn node_log(footer: &NodeFooter) -> usize {
        match footer.kind() {
            NodeKind::Indirect => CURSEG_COLD_NODE,
            _ if footer.is_cold() => CURSEG_WARM_NODE,
            _ => CURSEG_HOT_NODE,
        }
    }

    /// Writes one dirty node out of place: a new block in its log, the footer's
    /// checkpoint version and next-block chain, the inode checksum, then the NAT entry.
    fn write_node(&mut self, nid: u32, kind: BlockKind, marks: u32) -> Result<(), FsError> {
        self.write_node_carrying(nid, kind, marks, None)
    }

    /// [`F2fs::write_node`]; an inode carries the MedFS DCM entry `carry`, if given, and
    /// never a stale one (`delta/carry.rs`).
    fn write_node_carrying(
        &mut self,
        nid: u32,
        kind: BlockKind,
        marks: u32,
        carry: Option<&[u8]>,
    ) -> Result<(), FsError> {
        let Some(cached) = self.nodes.get(&nid) else {
            return Ok(());
        };
        // Copied into the block the last node write replaced (no allocation per write).
        let mut block = match self.node_spare.take() {
            Some(mut spare) => {
                spare.copy_from_slice(&cached[..]);
                spare
            }
            None => Box::new(*cached),
        };
        let mut footer = NodeFooter::decode(&block);
        if footer.kind() == NodeKind::Inode {
            self.seal_carried(nid, &mut block, carry)?;
        }
        let log = Self::node_log(&footer);
        let summary = Summary {
            nid,
            version: 0,
            ofs_in_node: 0,
        };
        let addr = self.alloc_block(log, summary)?;
        footer.flag = (footer.flag & !(1 << FSYNC_BIT_SHIFT | 1 << DENT_BIT_SHIFT)) | marks;
        footer.cp_ver = self.cp_version_for_nodes();
        footer.next_blkaddr = self.segs.next_blkaddr(log);
        footer.encode(&mut block);
        self.seal_inode_checksum(&mut block);
        self.write_blocks(addr as u64, &block[..], Some(log_temperature(log)), kind)?;
        self.metrics.per_log_blocks[log] += 1;
        let old = self.nat_get(nid)?;
        if self.in_main(old.block_addr) {
            self.segs.invalidate(old.block_addr);
        }
        self.nat_set(
            nid,
            NatEntry {
                version: old.version,
                ino: footer.ino,
                block_addr: addr,
            },
        )?;
        self.node_spare = self.nodes.insert(nid, block);
        self.dirty_nodes.remove(&nid);
        self.lazy_times.remove(&nid);
        Ok(())
    }

    /// What node footers carry: the current checkpoint's version, with its CRC in the
    /// high half under `CP_CRC_RECOVERY_FLAG`.
    fn cp_version_for_nodes(&self) -> u64 {
        debug_assert_eq!(self.cp_node_version, node_version_of(&self.cp));
        self.cp_node_version
    }

    /// Makes `cp` the current checkpoint (written, or found at mount).
    pub(crate) fn set_checkpoint(&mut self, cp: Checkpoint, pack: u8) {
        self.cp_node_version = node_version_of(&cp);
        self.cp = cp;
        self.cp_pack = pack;
    }

    fn seal_inode_checksum(&self, block: &mut Block) {
        let Some(seed) = self.chksum_seed else {
            return;
        };
        if NodeFooter::decode(block).offset() != 0 || !InodeLayout::read(block).checksum_fits() {
            return;
        }
        let crc = inode_checksum(block, seed);
        put_le32_at(&mut block[..], INODE_CHECKSUM_OFFSET, crc);
    }

    /// Takes a block in `log`, moving the log to a new segment when it fills (the old
    /// segment's summary goes to the SSA).
    fn alloc_block(&mut self, log: usize, sum: Summary) -> Result<u32, FsError> {
        self.alloc_block_aged(log, sum, 0)
    }

    /// [`F2fs::alloc_block`] for data first written at `written_secs` (0: now), so a
    /// moved block keeps its age in the SIT mtime.
    fn alloc_block_aged(
        &mut self,
        log: usize,
        sum: Summary,
        written_secs: u64,
    ) -> Result<u32, FsError> {
        if self.rolling_forward {
            // A bug, not a corrupt image: the block would overwrite fsync'd data or
            // nodes not replayed yet. Refuse rather than lose them.
            return Err(corrupt(format!(
                "roll-forward: log {log} would take a block before moving past the fsync'd chain"
            )));
        }
        if !self.segs.has_room(log) {
            self.advance_log(log)?;
        }
        let by_ssr = self.segs.logs[log].ssr;
        let addr = self.segs.alloc_aged(log, sum, written_secs);
        if by_ssr {
            self.metrics.ssr_blocks_per_log[log] += 1;
        }
        if !self.segs.has_room(log) {
            // Best effort now: with no free segment the next allocation retries.
            let _ = self.advance_log(log);
        }
        Ok(addr)
    }

    /// Moves a full log on (`f2fs_allocate_data_block` when the segment is full): to a
    /// dirty segment by SSR when [`F2fs::ssr_segment`] finds one (`change_curseg`), else
    /// to the lowest free segment (`new_curseg`). The old segment's summary goes to the
    /// SSA.
    fn advance_log(&mut self, log: usize) -> Result<(), FsError> {
        if let Some(victim) = self.ssr_segment(log) {
            // `change_curseg` takes the victim's summary entries from the SSA, so the
            // entries of its valid blocks survive when the log writes it back.
            let ssa = self.sb.ssa_blkaddr as u64;
            let entries = SummaryBlock::decode(&*self.read_block(ssa + victim as u64)?).entries;
            let (segno, sum) = self.segs.change_to_ssr(log, victim, entries);
            self.metrics.ssr_segments += 1;
            return self.write_blocks(ssa + segno as u64, &sum.encode()[..], None, BlockKind::Ssa);
        }
        let (segno, sum) = self.segs.take_full(log).ok_or(FsError::NoSpace)?;
        let at = self.sb.ssa_blkaddr as u64 + segno as u64;
        self.write_blocks(at, &sum.encode()[..], None, BlockKind::Ssa)
    }

    /// The dirty segment log `log` recycles by SSR, if SSR is due and the policy finds
    /// one ([`policy::use_ssr`], [`policy::ssr_victim`]); the search cursor moves.
    fn ssr_segment(&mut self, log: usize) -> Option<u32> {
        let crc = self.cp.has_flag(CP_CRC_RECOVERY_FLAG);
        if !policy::use_ssr(log, self.ssr_needed(), crc) {
            return None;
        }
        let candidates = self.segs.ssr_candidates();
        let choice = policy::ssr_victim(&policy::SsrState {
            log,
            candidates: &candidates,
            last_victim: self.segs.ssr_last_victim,
            main_segments: self.segs.info.len() as u32,
            blocks_per_seg: BLOCKS_PER_SEG,
        });
        self.segs.ssr_last_victim = choice.last_victim;
        choice.segno
    }

    fn shrink_caches(&mut self) {
        let excess = self.nodes.len().saturating_sub(NODE_CACHE_MAX);
        let victims: Vec<u32> = self
            .nodes
            .keys()
            .copied()
            .filter(|n| !self.dirty_nodes.contains(n) && !self.lazy_times.contains(n))
            .take(excess)
            .collect();
        for v in victims {
            self.nodes.remove(&v);
        }
        self.nat.shrink();
    }
}

/// What node footers carry under checkpoint `cp`.
fn node_version_of(cp: &Checkpoint) -> u64 {
    if cp.has_flag(CP_CRC_RECOVERY_FLAG) {
        cp.crc_version()
    } else {
        cp.checkpoint_ver
    }
}

/// Refuses images whose features this writer cannot keep consistent.
fn check_supported(sb: &Superblock, cp: &Checkpoint) -> Result<(), FsError> {
    let refused = [
        (FEATURE_BLKZONED, "blkzoned"),
        (FEATURE_QUOTA_INO, "quota"),
        (FEATURE_CASEFOLD, "casefold"),
        (FEATURE_RO, "ro"),
        (FEATURE_LOST_FOUND, "lost_found"),
    ];
    if let Some((_, name)) = refused.iter().find(|(bit, _)| sb.feature.contains(*bit)) {
        return Err(FsError::Unsupported(format!("feature {name}")));
    }
    if sb.segs_per_sec != 1 {
        return Err(FsError::Unsupported("sections of several segments".into()));
    }
    if cp.has_flag(CP_LARGE_NAT_BITMAP_FLAG) {
        return Err(FsError::Unsupported("large NAT bitmap".into()));
    }
    Ok(())
}

fn empty_segs(sb: &Superblock) -> Segs {
    Segs {
        main_blkaddr: sb.main_blkaddr,
        info: Vec::new(),
        dirty: BTreeSet::new(),
        journal: BTreeSet::new(),
        prefree: BTreeSet::new(),
        valid_blocks: 0,
        logs: Vec::new(),
        now_secs: 0,
        gc_victim: None,
        ssr_last_victim: 0,
        free_count: Default::default(),
        zero_valid: 0,
    }
}

/// Raw little-endian field access on node blocks.
pub(crate) fn le64_at(block: &Block, pos: usize) -> u64 {
    Reader::at(block, pos).u64()
}

pub(crate) fn put_le64_at(block: &mut Block, pos: usize, v: u64) {
    crate::codec::Writer::at(&mut block[..], pos).u64(v);
}

pub(crate) fn word(block: &Block, index: usize) -> u32 {
    le32_at(block, index * 4)
}

pub(crate) fn put_word(block: &mut Block, index: usize, v: u32) {
    put_le32_at(&mut block[..], index * 4, v);
}
