//! A compressing SSD (CSD, the ScaleFlux CSD 3000 class that COCO ran on): a hardware
//! engine compresses on the write path and decompresses on the read path, compressed pages
//! are variable-length fragments in the same mapping LDC uses (`compress.rs`,
//! [`crate::mapping::Mapping`]'s fragment lengths), and the exported logical capacity is
//! larger than the flash behind it.
//!
//! Decoupling logical from physical space means a host can address more than the flash
//! holds. The device therefore keeps a *physical budget* — the capacity an ordinary device
//! of this geometry and over-provisioning would export, so garbage collection always keeps
//! its reserve — and refuses a write whose fragments would take live data past it, with
//! [`FtlError::NoSpace`] before anything is mapped: the logical page keeps its previous
//! contents, and the file system sees ENOSPC (`flashstack_f2fs::FsError::errno`).
//!
//! The decisions are pure functions here; `compress.rs` and `write.rs` carry them out.

use serde::{Deserialize, Serialize};

use crate::compression::CompressionPolicyKind;
use crate::{Ftl, FtlError, UNMAPPED};

/// Most logical capacity a device may export per byte of physical budget (ScaleFlux
/// sells CSD 3000 drives formatted at up to 4× their flash; beyond that a 4 KiB page would
/// have to compress below 1 KiB on average).
pub const EXPORTED_CAPACITY_FACTOR_MAX: f64 = 4.0;

/// Whether a page of a write is left uncompressed because the policy compresses only
/// what the host asked for and this write did not ask (FACS scheduled it elsewhere).
pub fn hinted_skip(policy: CompressionPolicyKind, hinted: bool) -> bool {
    policy == CompressionPolicyKind::Hinted && !hinted
}

/// Logical pages exported for a physical budget of `budget_lbas` 4 KiB pages.
pub fn exported_lbas(budget_lbas: u64, factor: f64) -> u64 {
    ((budget_lbas as f64) * factor).floor() as u64
}

/// Whether a fragment of `incoming_slots` fits when it replaces one of `released_slots`
/// and `live_slots` of the `budget_slots` already hold live data.
pub fn admits(
    live_slots: u64,
    budget_slots: u64,
    incoming_slots: u64,
    released_slots: u64,
) -> bool {
    live_slots.saturating_sub(released_slots) + incoming_slots <= budget_slots
}

/// The physical space a device's data really takes, against what it exports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhysicalUsage {
    /// Logical capacity the host sees.
    pub exported_bytes: u64,
    /// Flash the device lets live data take (exported capacity of a non-compressing
    /// device of the same geometry).
    pub budget_bytes: u64,
    /// Flash taken by live data (whole slots, compressed fragments at their stored size).
    pub used_bytes: u64,
    /// Logical pages mapped, × 4 KiB: what the host has stored.
    pub logical_used_bytes: u64,
}

impl PhysicalUsage {
    /// Logical bytes stored per physical byte used (1.0 when nothing is stored).
    pub fn space_saving_ratio(&self) -> f64 {
        if self.used_bytes == 0 {
            1.0
        } else {
            self.logical_used_bytes as f64 / self.used_bytes as f64
        }
    }
}

impl Ftl {
    /// Refuses a host write of `incoming_slots` to `lpn` that would take live data past
    /// the physical budget; only a device exporting more than its budget checks.
    pub(crate) fn admit_physical(&self, lpn: u32, incoming_slots: u32) -> Result<(), FtlError> {
        if self.user_lbas <= self.budget_lbas {
            return Ok(());
        }
        let slot = self.mapping.l2p.at(lpn as usize);
        let released = if slot == UNMAPPED || self.mapping.is_shared(slot) {
            0
        } else {
            self.mapping.len_of(lpn) as u64
        };
        let budget_slots = self.budget_lbas * self.slots_per_lpn as u64;
        let live = self.blocks.live_slots();
        if admits(live, budget_slots, incoming_slots as u64, released) {
            return Ok(());
        }
        Err(FtlError::NoSpace(format!(
            "physical flash full: live data takes {live} of {budget_slots} slots of {} bytes \
             and LBA {lpn} needs {incoming_slots} more; the exported capacity ({} LBAs) \
             assumes compressible data",
            self.slot_bytes, self.user_lbas
        )))
    }

    /// Flash left for live data when the device exports more than its flash.
    pub(crate) fn physical_free(&self) -> Option<u64> {
        (self.user_lbas > self.budget_lbas).then(|| {
            let budget = self.budget_lbas * flashstack_block::LBA_SIZE as u64;
            budget.saturating_sub(self.blocks.live_slots() * self.slot_bytes as u64)
        })
    }

    /// The physical space live data takes, against the exported capacity.
    pub fn physical_usage(&self) -> PhysicalUsage {
        let mapped = self
            .mapping
            .l2p
            .iter()
            .filter(|&slot| slot != UNMAPPED)
            .count() as u64;
        PhysicalUsage {
            exported_bytes: self.user_lbas * flashstack_block::LBA_SIZE as u64,
            budget_bytes: self.budget_lbas * flashstack_block::LBA_SIZE as u64,
            used_bytes: self.blocks.live_slots() * self.slot_bytes as u64,
            logical_used_bytes: mapped * flashstack_block::LBA_SIZE as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admission_counts_the_released_fragment() {
        assert!(admits(90, 100, 10, 0));
        assert!(!admits(91, 100, 10, 0));
        // Overwriting a page of 8 slots with one of 8 slots never needs more space.
        assert!(admits(100, 100, 8, 8));
        assert!(!admits(100, 100, 8, 7));
        assert!(admits(0, 0, 0, 0));
    }

    #[test]
    fn only_unhinted_writes_skip_under_the_hinted_policy() {
        assert!(hinted_skip(CompressionPolicyKind::Hinted, false));
        assert!(!hinted_skip(CompressionPolicyKind::Hinted, true));
        assert!(!hinted_skip(CompressionPolicyKind::Inline, false));
        assert_eq!(exported_lbas(1000, 2.0), 2000);
        assert_eq!(exported_lbas(1000, 1.0), 1000);
    }

    fn small(policy: CompressionPolicyKind) -> Ftl {
        let mut config = crate::presets::csd3000_with(policy, 1);
        config.nand.geometry.pages_per_block = 32;
        config.nand.geometry.blocks_per_plane = 64;
        Ftl::new(config, true, 3).unwrap()
    }

    #[test]
    fn the_engine_compresses_on_write_and_read_and_usage_shows_it() {
        use flashstack_block::{BlockDevice, Hints, Payload};
        let page: Vec<u8> = (0..4096u32).map(|i| (i % 13) as u8).collect();
        for (policy, hinted, compressed) in [
            (CompressionPolicyKind::Inline, false, true),
            (CompressionPolicyKind::Hinted, false, false),
            (CompressionPolicyKind::Hinted, true, true),
        ] {
            let mut ftl = small(policy);
            let hints = Hints {
                compress_on_device: hinted,
                ..Hints::default()
            };
            for lba in 0..64 {
                ftl.write(0, lba, Payload::Bytes(&page), hints).unwrap();
            }
            ftl.flush(0).unwrap();
            let usage = ftl.physical_usage();
            assert_eq!(usage.logical_used_bytes, 64 * 4096);
            assert_eq!(
                ftl.counters().pages_compressed_host,
                if compressed { 64 } else { 0 },
                "{policy:?} hinted={hinted}"
            );
            assert_eq!(usage.space_saving_ratio() > 4.0, compressed, "{usage:?}");
            let mut back = vec![0u8; 4096];
            ftl.read(1 << 30, 17, 1, Some(&mut back)).unwrap();
            assert_eq!(back, page);
            assert!(ftl.capacity_lbas() > ftl.budget_lbas);
        }
    }
}
