//! NAND configuration: geometry, timing, energy, endurance and faults. One struct per concern,
//! all serde-ready for TOML; `validate` names the offending field.

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Bytes in one mapping slot by default: the 4 KiB logical block of the block interface.
/// Compressing FTLs use smaller slots (down to 512-byte sectors) so that compressed pages
/// pack tightly; see [`crate::Nand::with_slot_bytes`].
pub const SLOT_SIZE: u32 = 4096;
/// Smallest slot: a 512-byte sector.
pub const MIN_SLOT_BYTES: u32 = 512;
/// Most slots a page can have (16 KiB of 512-byte sectors).
pub const MAX_SLOTS_PER_PAGE: u32 = 32;

#[derive(Debug, Error, Clone, PartialEq)]
#[error("invalid configuration: field '{field}': {reason}")]
pub struct ConfigError {
    pub field: String,
    pub reason: String,
}

impl ConfigError {
    pub fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        ConfigError {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

/// Physical organisation of the flash array.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Geometry {
    pub channels: u32,
    pub dies_per_channel: u32,
    pub planes_per_die: u32,
    pub blocks_per_plane: u32,
    pub pages_per_block: u32,
    /// 4096, 8192 or 16384.
    pub page_size_bytes: u32,
    /// Spare area per page; it holds the logical address, sequence number and flags.
    pub oob_size_bytes: u32,
}

/// Read/program latencies of the three page types of a TLC word line (LSB, CSB, MSB).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageTypeTiming {
    pub read_ns: [u64; 3],
    pub program_ns: [u64; 3],
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Timing {
    /// Array read into the page register (tR).
    pub read_ns: u64,
    /// Program from the page register (tPROG).
    pub program_ns: u64,
    /// Block erase (tBERS).
    pub erase_ns: u64,
    /// Moving one full page across the channel bus; partial pages pay pro rata.
    pub transfer_ns_per_page: u64,
    /// Optional per-page-type latencies; page `i` of a block has type `i % 3`. Overrides
    /// `read_ns` and `program_ns` when present.
    #[serde(default)]
    pub page_types: Option<PageTypeTiming>,
    /// How a channel bus is booked: `busy-until` (the default) or `intervals`.
    #[serde(default, skip_serializing_if = "ChannelModel::is_default")]
    pub channel_model: ChannelModel,
}

/// How a channel (and, under one command per die, a die) books its busy time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChannelModel {
    /// One busy-until time: an operation starts after everything booked before it, even
    /// when an earlier idle gap would hold it. Cheap, and pessimistic when a die's burst
    /// of operations (a GC cycle) is booked at once: the other dies on its channel wait
    /// behind the whole burst.
    #[default]
    BusyUntil,
    /// Booked intervals: an operation takes the earliest idle gap at or after its ready
    /// time that holds it, so bursts booked at once interleave on the channel as the
    /// dies' operations would.
    Intervals,
}

impl ChannelModel {
    pub fn is_default(&self) -> bool {
        *self == ChannelModel::default()
    }
    pub fn name(self) -> &'static str {
        match self {
            ChannelModel::BusyUntil => "busy-until",
            ChannelModel::Intervals => "intervals",
        }
    }
}

/// Which operations a die may run at once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DieRules {
    /// Every plane runs its own operations independently of its die's other planes (an
    /// optimistic approximation of independent-plane parts).
    #[default]
    IndependentPlanes,
    /// One command per die at a time, as ONFI parts and MQSim define it: operations on
    /// other planes of a busy die wait, unless they join its command as a multi-plane
    /// operation (`multi_plane`: same kind, same page offset in their blocks, other
    /// planes, and waiting when the command starts).
    OneCommandPerDie,
    /// Asynchronous independent plane reads (AIPR, as newer 3D NAND parts offer): a read
    /// occupies only its plane, so reads on different planes of a die overlap at any page
    /// offsets, each plane on its own timeline. Programs and erases stay die-wide as under
    /// `one-command-per-die`: one waits until every plane of its die is idle (reads in
    /// flight included) and then holds every plane, and other planes join it as a
    /// multi-plane program or erase on the same conditions (`multi_plane`). A read arriving
    /// while a program or erase runs on another plane of its die waits for it to end:
    /// program and erase suspend are not modelled. Reads never join a command (they need
    /// not).
    IndependentPlaneReads,
}

impl DieRules {
    pub fn is_default(&self) -> bool {
        *self == DieRules::default()
    }
    pub fn name(self) -> &'static str {
        match self {
            DieRules::IndependentPlanes => "independent-planes",
            DieRules::OneCommandPerDie => "one-command-per-die",
            DieRules::IndependentPlaneReads => "independent-plane-reads",
        }
    }
}

fn is_true(value: &bool) -> bool {
    *value
}

/// Energy per operation (nanojoules) and idle power (microwatts).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Energy {
    pub read_nj: u64,
    pub program_nj: u64,
    pub erase_nj: u64,
    pub transfer_nj_per_page: u64,
    pub idle_uw: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Endurance {
    /// Rated program/erase cycles per block.
    pub pe_cycles_max: u32,
    /// When true an erase of a block at its rated cycles fails and the block is retired.
    #[serde(default = "default_true")]
    pub retire_at_limit: bool,
}

fn default_true() -> bool {
    true
}

/// Injected faults. All probabilities default to zero: the device is perfect unless a test
/// or an experiment asks otherwise.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Faults {
    /// A page program reports failure; the block must be retired.
    pub program_fail_probability: f64,
    /// A block erase reports failure; the block is retired.
    pub erase_fail_probability: f64,
    /// A read needs a retry (extra tR) and flags its block as failing, so the FTL retires it
    /// after moving its data. The data itself is returned intact.
    pub read_error_probability: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NandConfig {
    pub geometry: Geometry,
    pub timing: Timing,
    pub energy: Energy,
    pub endurance: Endurance,
    #[serde(default)]
    pub faults: Faults,
    /// Whether a die's planes run independently, one command per die, or reads per plane
    /// and programs and erases per die.
    #[serde(default, skip_serializing_if = "DieRules::is_default")]
    pub die_rules: DieRules,
    /// Under `one-command-per-die`, whether qualifying operations on other planes join a
    /// die's command (multi-plane read, program, erase); under `independent-plane-reads`,
    /// programs and erases only. No effect on independent planes.
    #[serde(default = "default_true", skip_serializing_if = "is_true")]
    pub multi_plane: bool,
}

impl Geometry {
    pub fn dies(&self) -> u32 {
        self.channels * self.dies_per_channel
    }
    pub fn blocks_per_die(&self) -> u32 {
        self.planes_per_die * self.blocks_per_plane
    }
    /// Parallel units: planes, each with its own timeline.
    pub fn units(&self) -> u32 {
        self.dies() * self.planes_per_die
    }
    pub fn blocks(&self) -> u32 {
        self.dies() * self.blocks_per_die()
    }
    pub fn pages(&self) -> u64 {
        self.blocks() as u64 * self.pages_per_block as u64
    }
    pub fn slots_per_page(&self) -> u32 {
        self.page_size_bytes / SLOT_SIZE
    }
    pub fn slots(&self) -> u64 {
        self.pages() * self.slots_per_page() as u64
    }
    pub fn raw_bytes(&self) -> u64 {
        self.pages() * self.page_size_bytes as u64
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        let positive = [
            ("geometry.channels", self.channels),
            ("geometry.dies_per_channel", self.dies_per_channel),
            ("geometry.planes_per_die", self.planes_per_die),
            ("geometry.blocks_per_plane", self.blocks_per_plane),
            ("geometry.pages_per_block", self.pages_per_block),
        ];
        for (field, value) in positive {
            if value == 0 {
                return Err(ConfigError::new(field, "must be at least 1"));
            }
        }
        if ![4096, 8192, 16384].contains(&self.page_size_bytes) {
            return Err(ConfigError::new(
                "geometry.page_size_bytes",
                format!("{} is not 4096, 8192 or 16384", self.page_size_bytes),
            ));
        }
        if self.pages_per_block > 4096 {
            return Err(ConfigError::new("geometry.pages_per_block", "at most 4096"));
        }
        if self.oob_size_bytes < 16 {
            return Err(ConfigError::new(
                "geometry.oob_size_bytes",
                "at least 16 bytes are needed for the logical address, sequence number and flags",
            ));
        }
        // Physical slot addresses are u32 in the FTL's tables.
        let slots = (self.channels as u128)
            * self.dies_per_channel as u128
            * self.planes_per_die as u128
            * self.blocks_per_plane as u128
            * self.pages_per_block as u128
            * (self.page_size_bytes / SLOT_SIZE) as u128;
        if slots >= u32::MAX as u128 {
            return Err(ConfigError::new(
                "geometry",
                format!("{slots} 4 KiB slots exceed the 2^32-1 the mapping tables address"),
            ));
        }
        Ok(())
    }
}

impl NandConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.geometry.validate()?;
        let t = &self.timing;
        if t.program_ns == 0 || t.read_ns == 0 || t.erase_ns == 0 {
            return Err(ConfigError::new(
                "timing",
                "read, program and erase times must be > 0",
            ));
        }
        if self.die_rules != DieRules::IndependentPlanes && self.geometry.planes_per_die > 32 {
            return Err(ConfigError::new(
                "die_rules",
                format!("{} tracks at most 32 planes per die", self.die_rules.name()),
            ));
        }
        if self.endurance.pe_cycles_max == 0 {
            return Err(ConfigError::new(
                "endurance.pe_cycles_max",
                "must be at least 1",
            ));
        }
        let f = &self.faults;
        let probabilities = [
            (
                "faults.program_fail_probability",
                f.program_fail_probability,
            ),
            ("faults.erase_fail_probability", f.erase_fail_probability),
            ("faults.read_error_probability", f.read_error_probability),
        ];
        for (field, p) in probabilities {
            if !(0.0..=1.0).contains(&p) {
                return Err(ConfigError::new(field, format!("{p} is not a probability")));
            }
        }
        Ok(())
    }
}
