//! A device saved and built again: what survives power loss (the flash array and the trim
//! records written into it) in portable form. Everything else (mapping, valid counts,
//! free pools) is rebuilt from the spare areas by [`Ftl::power_cycle`], as at a mount.

use std::collections::BTreeMap;

use flashstack_block::Completion;
use flashstack_nand::{oob_flags, ConfigError, Nand, NandParts};
use flashstack_sim::Nanos;

use crate::{DeviceConfig, Ftl};

/// The durable state of a device ([`Ftl::to_parts`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceParts {
    pub nand: NandParts,
    /// Trim-record pages: the page and the logical pages it trims.
    pub trim_log: Vec<(u32, Vec<u32>)>,
}

impl Ftl {
    /// The device's durable state. Refused while anything is only volatile (a partly
    /// filled write buffer, trims not yet logged): flush first, as a clean shutdown does.
    pub fn to_parts(&self) -> Result<DeviceParts, ConfigError> {
        if self.streams.iter().any(|s| s.filled > 0) || !self.pending_trims.is_empty() {
            return Err(ConfigError::new(
                "state",
                "the device holds data not yet on flash; flush it before saving",
            ));
        }
        Ok(DeviceParts {
            nand: self.nand.to_parts(),
            trim_log: self
                .trim_log
                .iter()
                .map(|(&page, lpns)| (page, lpns.to_vec()))
                .collect(),
        })
    }

    /// A device of `config` holding `parts`, mounted at `now_ns`: the array is rebuilt and
    /// checked ([`Nand::from_parts`]), the trim records are checked against it, then the
    /// mapping, valid counts and free pools are rebuilt by an OOB scan
    /// ([`Ftl::power_cycle`]). Returns the device and the scan's span.
    pub fn from_parts(
        config: DeviceConfig,
        parts: DeviceParts,
        seed: u64,
        now_ns: Nanos,
    ) -> Result<(Ftl, Completion), ConfigError> {
        config.validate()?;
        let nand = Nand::from_parts(config.nand.clone(), config.ftl.slot_bytes, seed, parts.nand)?;
        let mut ftl = Ftl::with_nand(config, nand)?;
        ftl.trim_log = check_trim_log(&ftl, parts.trim_log)?;
        let done = ftl
            .power_cycle(now_ns)
            .map_err(|e| ConfigError::new("state", e.to_string()))?;
        Ok((ftl, done))
    }

    /// The mapping: per logical page, the first physical slot holding it (`u32::MAX`:
    /// unmapped).
    pub fn mapping(&self) -> &[u32] {
        &self.l2p
    }

    /// Valid slots per flash block.
    pub fn valid_slots_per_block(&self) -> &[u32] {
        &self.blocks.valid_slots
    }

    /// Slots a flash block holds.
    pub fn slots_per_block(&self) -> u32 {
        self.pages_per_block * self.slots_per_page
    }
}

fn check_trim_log(
    ftl: &Ftl,
    log: Vec<(u32, Vec<u32>)>,
) -> Result<BTreeMap<u32, Box<[u32]>>, ConfigError> {
    let bad = |reason: String| ConfigError::new("state.trim_log", reason);
    let mut out = BTreeMap::new();
    for (page, lpns) in log {
        let flags = ftl.nand.oob(page).map(|o| o.flags).unwrap_or(0);
        if flags & oob_flags::TRIM_RECORD == 0 || flags & oob_flags::CORRUPT != 0 {
            return Err(bad(format!("page {page} is not a trim-record page")));
        }
        if let Some(&lpn) = lpns.iter().find(|&&l| l as u64 >= ftl.user_lbas) {
            return Err(bad(format!(
                "page {page} trims logical page {lpn}, beyond the device"
            )));
        }
        if out.insert(page, lpns.into_boxed_slice()).is_some() {
            return Err(bad(format!("page {page} is listed twice")));
        }
    }
    Ok(out)
}
