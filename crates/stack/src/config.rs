//! One struct holding every layer's configuration, with TOML and named presets.

use flashstack_cache::CacheConfig;
use flashstack_f2fs::{DeltaMode, F2fsConfig};
use flashstack_ftl::DeviceConfig;
use serde::{Deserialize, Serialize};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("unknown stack preset '{0}' (known: default, ldc-emmc, ufs31, medfs, dci, dcm, f2fs-dc, mobifs, f2fsc, fpc)")]
    UnknownPreset(String),
    #[error("{file}: {reason}")]
    Parse { file: String, reason: String },
    #[error("cache: {0}")]
    Cache(String),
}

/// F2FS options a stack config may set: the format (the rest are mkfs's deterministic
/// defaults) and the mount options and tunables (kernel defaults unless given).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FsConfig {
    /// Overprovision ratio in percent; `None` lets mkfs pick.
    pub overprovision_percent: Option<f64>,
    /// Mount options (`mode=lfs`, `ipu_policy`, `background_gc`, `cp_interval`, ...).
    pub mount: F2fsConfig,
    /// Offer F2FS's atomic writes to SQLite (`fs.atomic_write=true`): the VFS then reports
    /// `SQLITE_IOCAP_BATCH_ATOMIC` and SQLite (built with
    /// `SQLITE_ENABLE_BATCH_ATOMIC_WRITE`, as Android builds it) commits rollback-journal
    /// transactions with one atomic write instead of a journal. Android does this on F2FS;
    /// off by default so that the calibrated figures stay those of a journal.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub atomic_write: bool,
}

/// The whole stack: device, file system, page cache, seed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StackConfig {
    pub name: String,
    pub seed: u64,
    pub device: DeviceConfig,
    #[serde(default)]
    pub fs: FsConfig,
    pub cache: CacheConfig,
    /// A call arriving this long after the previous one first lets idle work run.
    pub idle_gap_ns: u64,
}

impl StackConfig {
    /// The named presets and what each is (each has the page cache of a 4 GiB phone and
    /// F2FS with kernel-default mount options).
    pub const PRESETS: [(&'static str, &'static str); 10] = [
        (
            "default",
            "the whole stack `run` uses: F2FS and a phone page cache on the LDC paper's eMMC",
        ),
        ("ldc-emmc", "the same stack, named after its device"),
        (
            "ufs31",
            "F2FS and a phone page cache on a 128 GiB UFS 3.1 device",
        ),
        (
            "medfs",
            "`default` with MedFS, inline deltas and delta-chunk maintenance (fs.mount.delta.mode = medfs; docs/medfs.md)",
        ),
        (
            "dci",
            "`default` with MedFS's inline deltas only (fs.mount.delta.mode = dci)",
        ),
        (
            "dcm",
            "`default` with MedFS's delta-chunk maintenance only (fs.mount.delta.mode = dcm)",
        ),
        (
            "f2fs-dc",
            "`default` with conventional delta compression in the data area (fs.mount.delta.mode = dc)",
        ),
        (
            "mobifs",
            "`default` with MobiFS's cache transactions (cache.policy = mobifs; fsync not durable on return; docs/mobifs.md)",
        ),
        (
            "f2fsc",
            "`default` with F2FS compression: lz4, 4-page clusters, text/code/app file types, never .db (fs.mount.compress; docs/f2fs.md)",
        ),
        (
            "fpc",
            "`default` with FPC: F2FS compression (lz4, 4-page clusters) of write-mostly files by name (.db, journals, WAL, logs) and of others whose first page compresses, and idle-time re-packing of scattered files read since their last write (fs.mount.fpc; docs/medfs.md)",
        ),
    ];

    /// A named preset: `default` (the ldc-emmc device, a phone page cache), `ldc-emmc`,
    /// `ufs31`, `medfs` (`default` with MedFS: DCI + DCM), its parts `dci` and `dcm`, the
    /// `f2fs-dc` baseline, `mobifs` (`default` with MobiFS's versioned cache transactions),
    /// `f2fsc` (`default` with F2FS compression), `fpc` (`default` with FPC's file policy
    /// over F2FS compression).
    pub fn preset(name: &str) -> Result<Self, ConfigError> {
        let device_name = match name {
            "default" | "ldc-emmc" | "medfs" | "dci" | "dcm" | "f2fs-dc" | "mobifs" | "f2fsc"
            | "fpc" => "ldc-emmc",
            "ufs31" => "ufs31",
            other => return Err(ConfigError::UnknownPreset(other.to_string())),
        };
        let device = flashstack_ftl::presets::preset(device_name)
            .ok_or_else(|| ConfigError::UnknownPreset(device_name.to_string()))?;
        let mut fs = FsConfig::default();
        let delta_mode = match name {
            "medfs" => Some(DeltaMode::Medfs),
            "dci" => Some(DeltaMode::Dci),
            "dcm" => Some(DeltaMode::Dcm),
            "f2fs-dc" => Some(DeltaMode::Dc),
            _ => None,
        };
        if let Some(mode) = delta_mode {
            fs.mount.delta = flashstack_f2fs::DeltaConfig::with_mode(mode);
        }
        if name == "f2fsc" {
            fs.mount.compress = flashstack_f2fs::CompressConfig::phone();
        }
        if name == "fpc" {
            fs.mount = fs.mount.with_fpc();
        }
        let mut cache = CacheConfig::phone_4gib();
        if name == "mobifs" {
            cache.policy = flashstack_cache::PolicyName::Mobifs;
        }
        Ok(Self {
            name: name.to_string(),
            seed: 1,
            device,
            fs,
            cache,
            idle_gap_ns: 1_000_000_000,
        })
    }

    pub fn from_toml_str(text: &str, file: &str) -> Result<Self, ConfigError> {
        let config: Self = toml::from_str(text).map_err(|e| ConfigError::Parse {
            file: file.to_string(),
            reason: e.to_string(),
        })?;
        config
            .cache
            .validate()
            .map_err(|e| ConfigError::Cache(e.to_string()))?;
        Ok(config)
    }

    pub fn from_toml_file(path: &std::path::Path) -> Result<Self, ConfigError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Parse {
            file: name.clone(),
            reason: e.to_string(),
        })?;
        Self::from_toml_str(&text, &name)
    }

    /// The techniques this configuration turns on, by name (what builds the stack:
    /// `fs.mount.delta` → MedFS's inline deltas in F2FS, `cache.policy = "mobifs"` →
    /// MobiFS's transactions in the page cache, `fs.atomic_write` → SQLite's batch atomic
    /// writes). Empty for the baseline.
    pub fn techniques(&self) -> Vec<&'static str> {
        let mut on = Vec::new();
        if self.fs.mount.delta != flashstack_f2fs::DeltaConfig::default() {
            on.push("medfs");
        }
        if self.cache.policy == flashstack_cache::PolicyName::Mobifs {
            on.push("mobifs");
        }
        if self.fs.atomic_write {
            on.push("atomic-write");
        }
        if self.fs.mount.fpc.enabled {
            on.push("fpc");
        } else if self.fs.mount.compress.enabled {
            on.push("f2fsc");
        }
        on
    }

    pub fn to_toml_string(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }
}
