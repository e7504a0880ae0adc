//! A device saved and built again: what survives power loss (the flash array and the
//! mapping records written into it) in portable form. Everything else (mapping, valid counts,
//! free pools) is rebuilt from the spare areas by [`Ftl::power_cycle`], as at a mount.

use std::collections::BTreeMap;

use flashstack_block::Completion;
use flashstack_nand::{oob_flags, ConfigError, Nand, NandParts};
use flashstack_sim::Nanos;

use crate::records::RecordPage;
use crate::{DeviceConfig, Ftl};

/// The durable state of a device ([`Ftl::to_parts`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceParts {
    pub nand: NandParts,
    /// Record pages holding trims: the page and the logical pages it trims.
    pub trim_log: Vec<(u32, Vec<u32>)>,
    /// Record pages holding binds (remaps): the page and its (logical page, slot) pairs.
    /// A page may appear here and in `trim_log` (a remap whose source was partly
    /// unmapped); pages of neither list are record pages without entries.
    pub bind_log: Vec<(u32, Vec<(u32, u32)>)>,
}

impl Ftl {
    /// The device's durable state. Refused while anything is only volatile (a partly
    /// filled write buffer, trims not yet logged): flush first, as a clean shutdown does.
    pub fn to_parts(&self) -> Result<DeviceParts, ConfigError> {
        let pending = !self.pending_trims.is_empty() || !self.pending_binds.is_empty();
        let buffered = self.write_buffer_lbas().is_some_and(|n| n > 0);
        let staged = self
            .streams
            .iter()
            .any(|s| s.filled > 0 || !s.staged.is_empty());
        if staged || pending || buffered {
            return Err(ConfigError::new(
                "state",
                "the device holds data not yet on flash; flush it before saving",
            ));
        }
        Ok(DeviceParts {
            nand: self.nand.to_parts(),
            trim_log: self
                .records
                .iter()
                .filter(|(_, r)| !r.trims.is_empty())
                .map(|(&page, r)| (page, r.trims.to_vec()))
                .collect(),
            bind_log: self
                .records
                .iter()
                .filter(|(_, r)| !r.binds.is_empty())
                .map(|(&page, r)| (page, r.binds.to_vec()))
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
        ftl.records = check_record_log(&ftl, parts.trim_log, parts.bind_log)?;
        let done = ftl
            .power_cycle(now_ns)
            .map_err(|e| ConfigError::new("state", e.to_string()))?;
        // The saved state may come from a device under another compression policy (a
        // phone aged under PM loaded into an LDC device): Cr(B) is rebuilt from the data.
        ftl.rebuild_block_ratios();
        Ok((ftl, done))
    }

    /// The mapping: per logical page, the first physical slot holding it (`u32::MAX`:
    /// unmapped). Entries are read with `get` / `at` / `iter` (the table is stored
    /// complemented so unwritten parts take no memory).
    pub fn mapping(&self) -> &flashstack_sim::memory::LazyTable {
        &self.mapping.l2p
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

/// The record pages of `parts`, checked against the flash: each is a record page, names
/// logical pages and slots inside the device, and appears at most once per list.
fn check_record_log(
    ftl: &Ftl,
    trims: Vec<(u32, Vec<u32>)>,
    binds: Vec<(u32, Vec<(u32, u32)>)>,
) -> Result<BTreeMap<u32, RecordPage>, ConfigError> {
    let bad = |field: &str, reason: String| ConfigError::new(field, reason);
    let is_record_page = |page: u32| {
        let flags = ftl.nand.oob(page).map(|o| o.flags).unwrap_or(0);
        flags & oob_flags::TRIM_RECORD != 0 && flags & oob_flags::CORRUPT == 0
    };
    let slots = ftl.config.nand.geometry.pages() * ftl.slots_per_page as u64;
    let mut out: BTreeMap<u32, RecordPage> = BTreeMap::new();
    for (page, lpns) in trims {
        let field = "state.trim_log";
        if !is_record_page(page) {
            return Err(bad(field, format!("page {page} is not a record page")));
        }
        if let Some(&lpn) = lpns.iter().find(|&&l| l as u64 >= ftl.user_lbas) {
            return Err(bad(
                field,
                format!("page {page} trims logical page {lpn}, beyond the device"),
            ));
        }
        let entry = out.entry(page).or_default();
        if !entry.trims.is_empty() {
            return Err(bad(field, format!("page {page} is listed twice")));
        }
        entry.trims = lpns.into_boxed_slice();
    }
    for (page, pairs) in binds {
        let field = "state.bind_log";
        if !is_record_page(page) {
            return Err(bad(field, format!("page {page} is not a record page")));
        }
        let beyond = |&(l, s): &(u32, u32)| l as u64 >= ftl.user_lbas || s as u64 >= slots;
        if let Some((lpn, slot)) = pairs.iter().find(|p| beyond(p)) {
            return Err(bad(
                field,
                format!("page {page} binds logical page {lpn} to slot {slot}, beyond the device"),
            ));
        }
        let entry = out.entry(page).or_default();
        if !entry.binds.is_empty() {
            return Err(bad(field, format!("page {page} is listed twice")));
        }
        entry.binds = pairs.into_boxed_slice();
    }
    Ok(out)
}
