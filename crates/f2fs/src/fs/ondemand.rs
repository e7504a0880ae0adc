//! COCO's on-demand space allocation: expose to users part of the flash that compression
//! saved, keeping F2FS's over-provisioning at the knee beyond which more of it brings
//! nothing (the seed measured 15 %).
//!
//! Where it lives: F2FS's user capacity (`user_block_count` of the checkpoint), not the
//! device's exported capacity. The seed reads "the space saved by compression" from the
//! CSD's actual usage, keeps its thresholds as host globals and changes no CSD hardware:
//! the drive keeps exporting its (thin-provisioned) logical capacity and F2FS, formatted
//! over all of it, decides how much of it users may fill. The over-provisioning kept is
//! counted in flash: the part of the device's physical budget that neither live data nor
//! the users' remaining capacity (each block at its uncompressed size, the worst case)
//! can take. Compression — F2FS's own (blocks saved are never written) or the device's
//! (fragments smaller than pages) — shows up as flash used below F2FS's used blocks, so
//! that over-provisioning grows with it; the policy hands the growth beyond the threshold
//! to users. If data turns less compressible the capacity shrinks back (never below
//! the blocks in use): a write the flash could not take still gets a clean ENOSPC from
//! `device_space.rs`.
//!
//! [`ondemand_user_blocks`] is the policy (a pure function returning the capacity to
//! set); [`F2fs::ondemand_adjust`] the mechanism, run after every operation and at mount,
//! which sets the capacity and writes a checkpoint at once so that no block beyond a
//! capacity the image does not record is ever used (roll-forward recovery could not
//! account for it).

use flashstack_block::BlockDevice;
use serde::{Deserialize, Serialize};

use super::{F2fs, FsError};
use crate::consts::{BLOCKS_PER_SEG, BLOCK_SIZE};

/// On-demand space allocation's named parameters (`[fs.mount.ondemand]`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OnDemandConfig {
    pub enabled: bool,
    /// The OP size growth threshold: the share of the flash (‰) kept as
    /// over-provisioning; saved space beyond it goes to users. The seed's offline analysis
    /// found 15 %; `flashstack reproduce coco` sweeps OP on our own stack for its knee.
    pub op_growth_threshold_permille: u32,
    /// The capacity changes only by at least this many segments (each change costs a
    /// checkpoint).
    pub step_segments: u32,
}

impl Default for OnDemandConfig {
    fn default() -> OnDemandConfig {
        OnDemandConfig {
            enabled: false,
            op_growth_threshold_permille: 150,
            step_segments: 4,
        }
    }
}

impl OnDemandConfig {
    /// Off with the default parameters (not written to a stack file then, so older
    /// files and golden configurations are unchanged).
    pub fn is_off(&self) -> bool {
        *self == OnDemandConfig::default()
    }
}

/// What the policy looks at, in 4 KiB blocks and bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpaceState {
    /// Flash the device lets live data take ([`BlockDevice::physical_budget_bytes`]).
    pub budget_bytes: u64,
    /// Flash live data takes now.
    pub physical_used_bytes: u64,
    /// Blocks F2FS counts in use (valid, reserved and dirty nodes).
    pub used_blocks: u64,
    /// The user capacity now.
    pub user_blocks: u64,
    /// The most users may ever get: what mkfs gave them.
    pub max_user_blocks: u64,
}

/// Flash (bytes) kept as over-provisioning with `user_blocks` of capacity: the budget
/// less the flash in use less the users' remaining capacity at its uncompressed size.
pub fn op_bytes(s: &SpaceState, user_blocks: u64) -> i128 {
    let remaining = user_blocks.saturating_sub(s.used_blocks) as i128 * BLOCK_SIZE as i128;
    s.budget_bytes as i128 - s.physical_used_bytes as i128 - remaining
}

/// The policy: the user capacity that keeps `op_growth_threshold_permille` of the flash
/// as over-provisioning, or `None` to keep the current one (the change would be under
/// `step_segments`, or nothing can change).
pub fn ondemand_user_blocks(cfg: &OnDemandConfig, s: &SpaceState) -> Option<u64> {
    let keep = s.budget_bytes * cfg.op_growth_threshold_permille.min(1000) as u64 / 1000;
    let room_blocks = s
        .budget_bytes
        .saturating_sub(keep)
        .saturating_sub(s.physical_used_bytes)
        / BLOCK_SIZE as u64;
    let target = (s.used_blocks + room_blocks)
        .min(s.max_user_blocks)
        .max(s.used_blocks)
        .max(1);
    let step = cfg.step_segments.max(1) as u64 * BLOCKS_PER_SEG as u64;
    (target.abs_diff(s.user_blocks) >= step).then_some(target)
}

/// What the mechanism did in this mount.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OnDemandMetrics {
    pub grows: u64,
    pub shrinks: u64,
    /// Blocks handed to users by growths, in all.
    pub blocks_exposed: u64,
}

impl<D: BlockDevice> F2fs<D> {
    /// The mechanism: asks the policy and, when it says so, sets the user capacity and
    /// writes a checkpoint recording it. Does nothing unless `[ondemand]` is on and the
    /// device reports its flash (a device whose flash backs every LBA saves nothing).
    pub(crate) fn ondemand_adjust(&mut self) -> Result<(), FsError> {
        if !self.cfg.ondemand.enabled || self.read_only {
            return Ok(());
        }
        let Some(state) = self.space_state() else {
            return Ok(());
        };
        let Some(target) = ondemand_user_blocks(&self.cfg.ondemand, &state) else {
            return Ok(());
        };
        if target > state.user_blocks {
            self.ondemand.grows += 1;
            self.ondemand.blocks_exposed += target - state.user_blocks;
        } else {
            self.ondemand.shrinks += 1;
        }
        // Recorded by the checkpoint it writes (changing `self.cp` first would give node
        // footers written on the way a version no checkpoint has).
        self.user_blocks_next = Some(target);
        self.checkpoint(false)
    }

    /// The space the on-demand policy looks at; `None` on a device that does not report
    /// its flash.
    pub fn space_state(&self) -> Option<SpaceState> {
        let budget = self.dev.physical_budget_bytes()?;
        let free = self.dev.physical_free_bytes()?;
        let main = self.sb.segment_count_main as u64;
        let ovp = (self.cp.overprov_segment_count as u64).min(main);
        Some(SpaceState {
            budget_bytes: budget,
            physical_used_bytes: budget.saturating_sub(free),
            used_blocks: self.used_blocks() + self.dirty_nodes.len() as u64,
            user_blocks: self.cp.user_block_count,
            max_user_blocks: ((main - ovp) * BLOCKS_PER_SEG as u64).max(1),
        })
    }

    /// On-demand allocation's counters for this mount.
    pub fn ondemand_metrics(&self) -> OnDemandMetrics {
        self.ondemand
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn state(used_blocks: u64, physical_used_bytes: u64, user_blocks: u64) -> SpaceState {
        SpaceState {
            budget_bytes: 1000 * MIB,
            physical_used_bytes,
            used_blocks,
            user_blocks,
            max_user_blocks: 2000 * MIB / 4096,
        }
    }

    #[test]
    fn an_empty_drive_exposes_its_flash_less_the_threshold() {
        let c = OnDemandConfig::default();
        let s = state(0, 0, 2000 * MIB / 4096);
        let target = ondemand_user_blocks(&c, &s).unwrap();
        assert_eq!(target, 850 * MIB / 4096);
        assert_eq!(op_bytes(&s, target), 150 * MIB as i128);
    }

    #[test]
    fn saved_space_beyond_the_threshold_goes_to_users() {
        let c = OnDemandConfig::default();
        // 400 MiB stored in 200 MiB of flash: 200 MiB saved, all of it exposed.
        let s = state(400 * MIB / 4096, 200 * MIB, 850 * MIB / 4096);
        let target = ondemand_user_blocks(&c, &s).unwrap();
        assert_eq!(target, 1050 * MIB / 4096);
        assert_eq!(op_bytes(&s, target), 150 * MIB as i128);
        // Incompressible data: nothing saved, the capacity stays.
        let s = state(400 * MIB / 4096, 400 * MIB, 850 * MIB / 4096);
        assert_eq!(ondemand_user_blocks(&c, &s), None);
    }

    #[test]
    fn small_changes_wait_and_the_capacity_never_drops_below_use() {
        let c = OnDemandConfig::default();
        let step = 4 * 512;
        let s = state(0, 0, 850 * MIB / 4096 + step - 1);
        assert_eq!(ondemand_user_blocks(&c, &s), None);
        // More in use than the flash can take at the threshold: capacity = use.
        let s = state(900 * MIB / 4096, 900 * MIB, 1000 * MIB / 4096);
        assert_eq!(ondemand_user_blocks(&c, &s), Some(900 * MIB / 4096));
        // Never past what mkfs gave users.
        let s = state(1800 * MIB / 4096, 100 * MIB, 1000 * MIB / 4096);
        assert_eq!(ondemand_user_blocks(&c, &s), Some(2000 * MIB / 4096));
    }
}
