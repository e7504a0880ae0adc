//! Counters of what the file system wrote, by kind and by log, and of the operations that
//! shape write traffic.

use serde::Serialize;

use crate::consts::NR_CURSEG_TYPE;

/// What a written block was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockKind {
    Data,
    /// A data block overwritten in place (IPU).
    DataInPlace,
    Node,
    Checkpoint,
    Nat,
    Sit,
    Ssa,
    GcData,
    GcNode,
}

/// Blocks written by kind and per log (`CURSEG_*` order: hot/warm/cold data, then
/// hot/warm/cold node), plus operation counts. Inline writes change only the inode, so
/// they are counted as operations (`inline_writes`), and the inode shows up as a node.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Metrics {
    pub data_blocks: u64,
    pub node_blocks: u64,
    pub checkpoint_blocks: u64,
    pub nat_blocks: u64,
    pub sit_blocks: u64,
    pub ssa_blocks: u64,
    pub gc_data_blocks: u64,
    pub gc_node_blocks: u64,
    /// Data blocks overwritten in place (not in `data_blocks` nor in any log).
    pub ipu_data_blocks: u64,
    pub per_log_blocks: [u64; NR_CURSEG_TYPE],
    /// Of the blocks each log took (`per_log_blocks`), those written by SSR into the
    /// holes of a dirty segment (slack space recycling).
    pub ssr_blocks_per_log: [u64; NR_CURSEG_TYPE],
    /// Segments a log took by SSR (`change_curseg`; the kernel's `seg_count[SSR]`).
    pub ssr_segments: u64,
    pub inline_writes: u64,
    pub inline_conversions: u64,
    pub fsyncs: u64,
    /// Of `fsyncs`, atomic-write commits ([`F2fs::commit_atomic_write`](super::F2fs::commit_atomic_write)).
    #[serde(skip_serializing_if = "is_zero")]
    pub atomic_commits: u64,
    pub checkpoints: u64,
    /// Segments cleaned, in the foreground and by the background thread.
    pub gc_cycles: u64,
    /// Of `gc_cycles`, segments cleaned by the background thread in idle time.
    pub bg_gc_cycles: u64,
    /// Of `checkpoints`, those forced by a threshold or the periodic interval.
    pub bg_checkpoints: u64,
    /// Blocks discarded (TRIM) once their segment was freed by a checkpoint.
    pub discarded_blocks: u64,
    pub blocks_read: u64,
    /// Block requests the data reads of `read_pages` became (split at extent boundaries
    /// and at the largest request; `docs/janusd.md`).
    #[serde(skip_serializing_if = "is_zero")]
    pub read_requests: u64,
    /// MedFS's delta path (absent from the JSON while delta compression is off).
    #[serde(skip_serializing_if = "super::DeltaMetrics::is_empty")]
    pub delta: super::DeltaMetrics,
    /// FPC's background re-packing (absent while it did nothing).
    #[serde(skip_serializing_if = "super::fpc::RepackMetrics::is_empty")]
    pub fpc_repack: super::fpc::RepackMetrics,
}

impl Metrics {
    pub(crate) fn count(&mut self, kind: BlockKind, blocks: u64) {
        let slot = match kind {
            BlockKind::Data => &mut self.data_blocks,
            BlockKind::DataInPlace => &mut self.ipu_data_blocks,
            BlockKind::Node => &mut self.node_blocks,
            BlockKind::Checkpoint => &mut self.checkpoint_blocks,
            BlockKind::Nat => &mut self.nat_blocks,
            BlockKind::Sit => &mut self.sit_blocks,
            BlockKind::Ssa => &mut self.ssa_blocks,
            BlockKind::GcData => &mut self.gc_data_blocks,
            BlockKind::GcNode => &mut self.gc_node_blocks,
        };
        *slot += blocks;
    }

    /// Blocks written by SSR, all logs.
    pub fn ssr_blocks(&self) -> u64 {
        self.ssr_blocks_per_log.iter().sum()
    }

    /// Every block written to the device.
    pub fn total_blocks(&self) -> u64 {
        self.data_blocks
            + self.node_blocks
            + self.checkpoint_blocks
            + self.nat_blocks
            + self.sit_blocks
            + self.ssa_blocks
            + self.gc_data_blocks
            + self.gc_node_blocks
            + self.ipu_data_blocks
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
