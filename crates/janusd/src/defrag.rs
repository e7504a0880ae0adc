//! The defragmenters: measure, decide per file ([`crate::policy::choose`]), carry the
//! decision out with a mechanism, checkpoint, measure again and count what it cost.
//!
//! Mechanisms: copy ([`F2fs::defrag_copy`], the baseline's and janusdP's) and remap
//! (janusdL's), which plugs in through [`LogicalDefrag`]: a mode that may remap is
//! refused, naming the missing capability, unless one is given.

use flashstack_f2fs::{F2fs, FsError, Metrics};
use flashstack_ftl::FtlCounters;
use serde::{Deserialize, Serialize};

use crate::error::JanusdError;
use crate::frag::{measure, FragReport, GroupFrag};
use crate::placement::FragDevice;
use crate::policy::{choose, Action, DefragMode, JanusdPolicy};
use crate::read::ReadModel;

/// What the REMAP capability is called in errors.
pub const REMAP_CAPABILITY: &str = "REMAP (janusdL: a device under F2FS whose FTL remaps; \
     a plain image has none: use --phone)";

/// What remapping one file did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemapOutcome {
    /// Blocks whose mapping moved to the new contiguous range.
    pub blocks_remapped: u64,
}

/// janusdL's mechanism: give a file's blocks a contiguous free LBA range by REMAP inside
/// the FTL (no user-data programs) and point the file's nodes at the new addresses,
/// durably when it returns.
pub trait LogicalDefrag<D: flashstack_block::BlockDevice> {
    fn remap_file(&mut self, fs: &mut F2fs<D>, ino: u32) -> Result<RemapOutcome, FsError>;
}

/// janusdL as F2FS carries it out ([`F2fs::defrag_by_remap`]): the new run allocated in
/// the cold data log, one REMAP request per `remap_lbas_max` LBAs, the nodes re-pointed,
/// a checkpoint, then the old addresses discarded. It checkpoints per file because the
/// old addresses may be trimmed only once the new pointers are durable.
#[derive(Clone, Copy, Debug, Default)]
pub struct RemapDefrag;

impl<D: flashstack_block::BlockDevice> LogicalDefrag<D> for RemapDefrag {
    fn remap_file(&mut self, fs: &mut F2fs<D>, ino: u32) -> Result<RemapOutcome, FsError> {
        let report = fs.defrag_by_remap(ino)?;
        Ok(RemapOutcome {
            blocks_remapped: report.blocks_remapped,
        })
    }
}

/// The mechanisms a defragmenter may use beyond copying.
pub struct Mechanisms<'a, D: flashstack_block::BlockDevice> {
    pub logical: Option<&'a mut dyn LogicalDefrag<D>>,
}

impl<D: flashstack_block::BlockDevice> Default for Mechanisms<'_, D> {
    fn default() -> Self {
        Mechanisms { logical: None }
    }
}

/// What to defragment, and how.
#[derive(Clone, Debug)]
pub struct DefragOptions {
    pub mode: DefragMode,
    pub policy: JanusdPolicy,
    pub model: ReadModel,
    /// A file or a directory tree.
    pub path: String,
}

/// One file's result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FileOutcome {
    pub path: String,
    pub action: Action,
    pub dof_before: f64,
    pub dof_after: f64,
    pub collision_ratio_before: Option<f64>,
    pub collision_ratio_after: Option<f64>,
    pub read_ns_before: Option<u64>,
    pub read_ns_after: Option<u64>,
}

/// What a defragmentation pass cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DefragCost {
    /// User data the mechanisms read and wrote again (copies).
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub blocks_remapped: u64,
    /// Every block F2FS wrote (data, nodes, checkpoint, NAT/SIT/SSA, cleaning).
    pub fs_blocks_written: u64,
    /// On the device (`None` for a plain image): flash pages programmed and blocks erased.
    pub nand_page_programs: Option<u64>,
    pub nand_erases: Option<u64>,
}

/// A defragmentation pass.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DefragReport {
    pub mode: DefragMode,
    pub policy: JanusdPolicy,
    pub path: String,
    pub files_considered: u64,
    pub files_copied: u64,
    pub files_remapped: u64,
    pub cost: DefragCost,
    pub before: GroupFrag,
    pub after: GroupFrag,
    /// Files acted on.
    pub files: Vec<FileOutcome>,
}

/// Runs one defragmentation pass over `opts.path` and checkpoints.
pub fn defragment<D: FragDevice>(
    fs: &mut F2fs<D>,
    opts: &DefragOptions,
    mech: Mechanisms<'_, D>,
) -> Result<DefragReport, JanusdError> {
    let mode = opts.mode;
    if mode.may_remap() && mech.logical.is_none() {
        return Err(JanusdError::MissingCapability {
            mode: mode.name(),
            capability: REMAP_CAPABILITY,
        });
    }
    if mode.needs_placement() && fs.device().ftl().is_none() {
        return Err(JanusdError::NeedsPlacement { mode: mode.name() });
    }
    let before = measure(fs, &opts.path, &opts.model)?;
    let fs_before = fs.metrics().clone();
    let dev_before = fs.device().ftl().map(|f| f.counters().clone());
    let mut logical = mech.logical;
    let mut cost = DefragCost::default();
    let mut acted = Vec::new();
    for f in &before.files {
        let action = choose(mode, f, &opts.policy);
        let failed = |source| JanusdError::Defrag {
            path: f.path.clone(),
            source,
        };
        match action {
            Action::Skip => continue,
            Action::Copy => {
                let o = fs.defrag_copy(f.ino).map_err(failed)?;
                cost.bytes_read += o.pages_read * 4096;
                cost.bytes_written += o.pages_written * 4096;
            }
            Action::Remap => {
                let m = logical.as_deref_mut().expect("checked above");
                cost.blocks_remapped += m.remap_file(fs, f.ino).map_err(failed)?.blocks_remapped;
            }
        }
        acted.push((f.path.clone(), action));
    }
    fs.sync()?;
    fill_cost(
        &mut cost,
        &fs_before,
        fs.metrics(),
        dev_before,
        fs.device().ftl().map(|f| f.counters()),
    );
    let after = measure(fs, &opts.path, &opts.model)?;
    Ok(report(opts, &before, &after, acted, cost))
}

fn fill_cost(
    cost: &mut DefragCost,
    fs_before: &Metrics,
    fs_after: &Metrics,
    dev_before: Option<FtlCounters>,
    dev_after: Option<&FtlCounters>,
) {
    cost.fs_blocks_written = fs_blocks(fs_after) - fs_blocks(fs_before);
    if let (Some(b), Some(a)) = (dev_before, dev_after) {
        cost.nand_page_programs = Some(a.page_programs - b.page_programs);
        cost.nand_erases = Some(a.erases_gc + a.erases_wl - b.erases_gc - b.erases_wl);
    }
}

fn fs_blocks(m: &Metrics) -> u64 {
    m.data_blocks
        + m.node_blocks
        + m.checkpoint_blocks
        + m.nat_blocks
        + m.sit_blocks
        + m.ssa_blocks
        + m.gc_data_blocks
        + m.gc_node_blocks
        + m.ipu_data_blocks
}

fn report(
    opts: &DefragOptions,
    before: &FragReport,
    after: &FragReport,
    acted: Vec<(String, Action)>,
    cost: DefragCost,
) -> DefragReport {
    let find = |r: &FragReport, p: &str| r.files.iter().find(|f| f.path == p).cloned();
    let files: Vec<FileOutcome> = acted
        .into_iter()
        .filter_map(|(path, action)| {
            let (b, a) = (find(before, &path)?, find(after, &path)?);
            Some(FileOutcome {
                path,
                action,
                dof_before: b.dof,
                dof_after: a.dof,
                collision_ratio_before: b.physical.map(|p| p.collision_ratio),
                collision_ratio_after: a.physical.map(|p| p.collision_ratio),
                read_ns_before: b.read_ns,
                read_ns_after: a.read_ns,
            })
        })
        .collect();
    DefragReport {
        mode: opts.mode,
        policy: opts.policy.clone(),
        path: opts.path.clone(),
        files_considered: before.files.len() as u64,
        files_copied: files.iter().filter(|f| f.action == Action::Copy).count() as u64,
        files_remapped: files.iter().filter(|f| f.action == Action::Remap).count() as u64,
        cost,
        before: before.all.clone(),
        after: after.all.clone(),
        files,
    }
}
