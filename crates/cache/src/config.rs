//! The page cache's one configuration struct and its presets.

use flashstack_sim::{Nanos, NS_PER_SEC};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::{ReadaheadConfig, PAGE_SIZE_BYTES};

#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ConfigError {
    #[error("invalid configuration: field '{field}': {reason}")]
    Invalid { field: &'static str, reason: String },
    #[error("unknown cache preset '{0}' (known: linux, phone-4gib, tiny)")]
    UnknownPreset(String),
}

/// Page cache configuration. Defaults are the Linux kernel's writeback tunables
/// (mm/page-writeback.c) on a phone-sized memory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CacheConfig {
    /// Memory the dirty ratios are taken of. The kernel takes them of *available* memory
    /// (free + reclaimable pages); this model uses one fixed figure.
    pub memory_bytes: u64,
    /// Capacity of the cache (clean + dirty pages); beyond it clean pages are evicted and, if
    /// none is clean, dirty pages are written back first (pressure).
    pub cache_bytes_max: u64,
    /// Background writeback starts above this share of memory (kernel
    /// `vm.dirty_background_ratio`, default 10).
    pub dirty_background_ratio_percent: u8,
    /// Writers are throttled (write back themselves) above this share (kernel
    /// `vm.dirty_ratio`, default 20).
    pub dirty_ratio_percent: u8,
    /// Dirty data older than this is written back by the flusher (kernel
    /// `vm.dirty_expire_centisecs` = 3000, i.e. 30 s).
    pub dirty_expire_ns: Nanos,
    /// The flusher wakes up this often (kernel `vm.dirty_writeback_centisecs` = 500, 5 s).
    pub dirty_writeback_interval_ns: Nanos,
    /// Pages one writeback decision writes at most (in contiguous runs). Assumed; same order
    /// as the kernel's writeback chunk of a few MiB.
    pub writeback_batch_pages_max: u32,
    /// CPU cost of copying one 4 KiB page between user buffer and cache. Assumed: about
    /// 8 GB/s memcpy on a phone core.
    pub memcpy_ns_per_page: Nanos,
    /// CPU cost of entering the cache (system call and lookup). Assumed.
    pub call_overhead_ns: Nanos,
    /// The writeback policy: `linux` (the default) or `mobifs` (versioned cache
    /// transactions, `docs/mobifs.md`).
    #[serde(skip_serializing_if = "PolicyName::is_linux")]
    pub policy: PolicyName,
    /// MobiFS's options (used with `policy = "mobifs"`).
    #[serde(skip_serializing_if = "MobifsConfig::is_default")]
    pub mobifs: MobifsConfig,
    /// Readahead (`docs/cache.md`, "Readahead"): `off` (the default) or `linux`.
    #[serde(skip_serializing_if = "ReadaheadConfig::is_default")]
    pub readahead: ReadaheadConfig,
}

/// The page cache's writeback policies by name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PolicyName {
    /// Linux's writeback (ratios, 30 s expiry, fsync writes back and syncs).
    #[default]
    Linux,
    /// MobiFS: fsync seals a transaction in memory; checkpoints persist them.
    Mobifs,
}

impl PolicyName {
    fn is_linux(&self) -> bool {
        *self == PolicyName::Linux
    }
}

/// MobiFS's options (`docs/mobifs.md`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MobifsConfig {
    /// The hard staleness bound: a sealed transaction is persisted at most this long
    /// after its seal, so a power cut loses at most this many seconds of sealed data.
    /// Default 30 s, Linux's `dirty_expire` (what Linux risks of unsynced data); the
    /// seed names no figure.
    pub staleness_bound_ns: Nanos,
    /// How long before the bound a checkpoint starts (its budget on the device). A
    /// checkpoint that ends past the bound is counted (`staleness_bound_overruns`).
    pub checkpoint_reserve_ns: Nanos,
    /// When to checkpoint: `bound` (as late as the bound allows) or `interval`.
    pub checkpoint: crate::CheckpointTiming,
    /// The period of `checkpoint = "interval"`.
    pub checkpoint_interval_ns: Nanos,
    /// What closes a transaction (ready to checkpoint): `ecurve` (the seed's trade-off
    /// point; the default) or `every-sync` (each sync call closes one).
    pub seal: crate::SealPolicy,
    /// The adaptive policies' parameters (`seal = "ecurve"`, `checkpoint = "idle"`;
    /// `crate::adaptive`).
    #[serde(skip_serializing_if = "is_default_adaptive")]
    pub adaptive: crate::adaptive::AdaptiveConfig,
}

fn is_default_adaptive(config: &crate::adaptive::AdaptiveConfig) -> bool {
    *config == crate::adaptive::AdaptiveConfig::default()
}

impl Default for MobifsConfig {
    fn default() -> Self {
        Self {
            staleness_bound_ns: 30 * NS_PER_SEC,
            checkpoint_reserve_ns: 2 * NS_PER_SEC,
            checkpoint: crate::CheckpointTiming::Bound,
            checkpoint_interval_ns: 5 * NS_PER_SEC,
            seal: crate::SealPolicy::default(),
            adaptive: crate::adaptive::AdaptiveConfig::default(),
        }
    }
}

impl MobifsConfig {
    fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

impl Default for CacheConfig {
    fn default() -> Self {
        Self::phone_4gib()
    }
}

impl CacheConfig {
    /// Kernel defaults on a 4 GiB phone with up to 2 GiB of page cache.
    pub fn phone_4gib() -> Self {
        Self {
            memory_bytes: 4 << 30,
            cache_bytes_max: 2 << 30,
            dirty_background_ratio_percent: 10,
            dirty_ratio_percent: 20,
            dirty_expire_ns: 30 * NS_PER_SEC,
            dirty_writeback_interval_ns: 5 * NS_PER_SEC,
            writeback_batch_pages_max: 1024,
            memcpy_ns_per_page: 500,
            call_overhead_ns: 1_000,
            policy: PolicyName::Linux,
            mobifs: MobifsConfig::default(),
            readahead: ReadaheadConfig::default(),
        }
    }

    /// A tiny cache for tests: 100 KiB of memory (background above 10 KiB, limit 20 KiB),
    /// 8 pages of cache, kernel timing.
    pub fn tiny() -> Self {
        Self {
            memory_bytes: 100 << 10,
            cache_bytes_max: 8 * PAGE_SIZE_BYTES as u64,
            writeback_batch_pages_max: 2,
            ..Self::phone_4gib()
        }
    }

    /// A named preset: `linux` / `phone-4gib` (the same), `tiny`.
    pub fn preset(name: &str) -> Result<Self, ConfigError> {
        match name {
            "linux" | "phone-4gib" => Ok(Self::phone_4gib()),
            "tiny" => Ok(Self::tiny()),
            other => Err(ConfigError::UnknownPreset(other.to_string())),
        }
    }

    pub fn cache_pages_max(&self) -> u64 {
        self.cache_bytes_max / PAGE_SIZE_BYTES as u64
    }

    pub fn dirty_background_bytes(&self) -> u64 {
        self.memory_bytes / 100 * u64::from(self.dirty_background_ratio_percent)
    }

    pub fn dirty_limit_bytes(&self) -> u64 {
        self.memory_bytes / 100 * u64::from(self.dirty_ratio_percent)
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |field, reason: &str| {
            Err(ConfigError::Invalid {
                field,
                reason: reason.to_string(),
            })
        };
        if self.cache_pages_max() < 2 {
            return invalid("cache_bytes_max", "must hold at least two 4 KiB pages");
        }
        if self.dirty_ratio_percent == 0 || self.dirty_ratio_percent > 100 {
            return invalid("dirty_ratio_percent", "must be 1..=100");
        }
        if self.dirty_background_ratio_percent >= self.dirty_ratio_percent {
            return invalid(
                "dirty_background_ratio_percent",
                "must be below dirty_ratio_percent",
            );
        }
        if self.dirty_writeback_interval_ns == 0 {
            return invalid("dirty_writeback_interval_ns", "must be positive");
        }
        if self.writeback_batch_pages_max == 0 {
            return invalid("writeback_batch_pages_max", "must be positive");
        }
        let ra = &self.readahead;
        if !ra.max_kib.is_multiple_of(4) || ra.max_kib == 0 || ra.max_kib > 512 {
            return invalid(
                "readahead.max_kib",
                "must be a positive multiple of 4 KiB, at most 512 (one block request)",
            );
        }
        let m = &self.mobifs;
        if m.checkpoint_reserve_ns == 0 || m.checkpoint_reserve_ns >= m.staleness_bound_ns {
            return invalid(
                "mobifs.checkpoint_reserve_ns",
                "must be positive and below mobifs.staleness_bound_ns",
            );
        }
        if m.checkpoint_interval_ns == 0 {
            return invalid("mobifs.checkpoint_interval_ns", "must be positive");
        }
        if m.adaptive.sample_interval_ns == 0 {
            return invalid("mobifs.adaptive.sample_interval_ns", "must be positive");
        }
        Ok(())
    }
}
