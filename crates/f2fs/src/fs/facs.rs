//! COCO's feature-aware compression scheduling (FACS): for each file, which side
//! compresses its data — the compressing SSD below (`flashstack_ftl::csd`, told by the
//! status bit of each write), F2FS itself (F2FSC, `cluster.rs`), or nobody.
//!
//! The seed's rule: a file's *tag* comes from F2FS's hot/cold classification and its
//! compression ratio (CR) from its first three data blocks; when CR > T_c and the data is
//! cold, the CSD compresses it. The seed leaves the rest open; here (assumed): a file
//! whose sample barely compresses (CR ≤ `incompressible_ratio_max`) is compressed by
//! nobody, every other file by the host. COCO keeps the status bit in the top bit of the
//! LBA; flashstack's block interface carries it beside the LBA as
//! `Hints::compress_on_device`, set on every data write of a device-side file.
//!
//! F2FS's creation rule never compresses a file of the hot extension list (`.db`:
//! `set_compress_new_inode`), but the seed's rule knows no such list, so a compressible
//! SQLite database becomes a compressed file that never updates in place and checkpoints
//! on every fsync (docs/coco-reproduction.md). `hot_list = "honour"` is the variant
//! beside the seed's rule: a hot-list file the seed's rule would give the host is
//! compressed by nobody; `"ignore"` (the default) is the seed's rule.
//!
//! The decision is made once, at the first write that starts at the file's beginning
//! (the only time the first blocks are at hand and, for F2FSC, the file is still empty,
//! as `chattr +c` requires), and kept per inode for the mount.

use flashstack_block::{BlockDevice, Temperature};
use serde::{Deserialize, Serialize};

use super::{F2fs, FsError};
use crate::consts::BLOCK_SIZE;

/// FACS's named parameters (`[fs.mount.facs]`). Ratios are original ÷ compressed × 1000.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FacsConfig {
    pub enabled: bool,
    /// T_c: cold files compressing better than this go to the device (assumed 2.0:1; the
    /// seed names T_c but gives no value).
    pub ratio_threshold_permille: u32,
    /// Files compressing no better than this are compressed by nobody (assumed 1.1:1).
    pub incompressible_ratio_max_permille: u32,
    /// Data blocks sampled from the file's start (the seed: three).
    pub sample_blocks: u32,
    /// Whether the host side respects F2FS's hot extension list (not in the seed).
    pub hot_list: FacsHotList,
}

/// What FACS makes of a file on F2FS's hot extension list (`FADVISE_HOT`, `.db`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FacsHotList {
    /// The seed's rule: the list plays no part, a compressible hot-list file goes to
    /// the host like any other file that is not cold.
    #[default]
    Ignore,
    /// As F2FS's creation rule: the host never compresses a hot-list file (nobody does;
    /// the device side takes cold files only, and a hot-list file is never cold).
    Honour,
}

impl Default for FacsConfig {
    fn default() -> FacsConfig {
        FacsConfig {
            enabled: false,
            ratio_threshold_permille: 2_000,
            incompressible_ratio_max_permille: 1_100,
            sample_blocks: 3,
            hot_list: FacsHotList::Ignore,
        }
    }
}

/// Who compresses a file's data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CompressSide {
    /// The CSD's engine (status bit set on its writes).
    Device,
    /// F2FS's own compression (F2FSC).
    Host,
    None,
}

/// FACS: the side that compresses a file of temperature `temp` whose sample compresses
/// `ratio_permille`; `hot_listed` when its name is on F2FS's hot extension list.
pub fn facs_decide(
    config: &FacsConfig,
    temp: Temperature,
    ratio_permille: u32,
    hot_listed: bool,
) -> CompressSide {
    if ratio_permille <= config.incompressible_ratio_max_permille {
        CompressSide::None
    } else if temp == Temperature::Cold && ratio_permille > config.ratio_threshold_permille {
        CompressSide::Device
    } else if hot_listed && config.hot_list == FacsHotList::Honour {
        CompressSide::None
    } else {
        CompressSide::Host
    }
}

/// The zlib (level 6, the CSD's codec) ratio of `sample`, × 1000.
pub fn sample_ratio_permille(sample: &[u8]) -> u32 {
    if sample.is_empty() {
        return 1_000;
    }
    let mut codec = flashstack_codec::CodecKind::Zlib { level: 6 }
        .build()
        .expect("zlib needs no context allocation");
    let mut out = Vec::new();
    let len = codec.compress(sample, &mut out).max(1);
    (sample.len() as u64 * 1000 / len as u64).min(u32::MAX as u64) as u32
}

impl<D: BlockDevice> F2fs<D> {
    /// Decides the side of `ino` at its first write from offset 0 (`data` the bytes
    /// written there) and, for the host side, marks the file compressed.
    pub(crate) fn facs_on_write(
        &mut self,
        ino: u32,
        offset: u64,
        data: &[u8],
    ) -> Result<(), FsError> {
        if !self.cfg.facs.enabled || offset != 0 || data.is_empty() || self.facs.contains_key(&ino)
        {
            return Ok(());
        }
        let sample = &data[..data
            .len()
            .min(self.cfg.facs.sample_blocks as usize * BLOCK_SIZE)];
        let ratio = sample_ratio_permille(sample);
        let log = self.data_log(ino)?;
        let temp = super::log_temperature(log);
        let hot_listed =
            self.inode_byte(ino, super::data::OFF_ADVISE)? & super::data::FADVISE_HOT != 0;
        let mut side = facs_decide(&self.cfg.facs, temp, ratio, hot_listed);
        if side == CompressSide::Host && self.set_compressed(ino).is_err() {
            // F2FSC off, or the file already has data: nobody compresses.
            side = CompressSide::None;
        }
        if self.facs.len() < FACS_FILES_MAX {
            self.facs.insert(ino, side);
        }
        Ok(())
    }

    /// Whether `ino`'s data writes carry the status bit.
    pub(crate) fn facs_on_device(&self, ino: u32) -> bool {
        !self.facs.is_empty() && self.facs.get(&ino) == Some(&CompressSide::Device)
    }

    /// The side FACS chose for `ino`, if it has decided.
    pub fn facs_side(&self, ino: u32) -> Option<CompressSide> {
        self.facs.get(&ino).copied()
    }
}

/// Decisions kept per mount at most (files beyond are compressed by nobody).
pub const FACS_FILES_MAX: usize = 1 << 20;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cold_and_compressible_goes_to_the_device() {
        let c = FacsConfig::default();
        assert_eq!(
            facs_decide(&c, Temperature::Cold, 2_500, false),
            CompressSide::Device
        );
        assert_eq!(
            facs_decide(&c, Temperature::Cold, 2_000, false),
            CompressSide::Host
        );
        assert_eq!(
            facs_decide(&c, Temperature::Warm, 3_000, false),
            CompressSide::Host
        );
        assert_eq!(
            facs_decide(&c, Temperature::Hot, 3_000, false),
            CompressSide::Host
        );
        assert_eq!(
            facs_decide(&c, Temperature::Cold, 1_100, false),
            CompressSide::None
        );
        assert!(sample_ratio_permille(&[0u8; 3 * 4096]) > 50_000);
    }

    #[test]
    fn honouring_the_hot_list_keeps_hot_listed_files_from_the_host_only() {
        let ignore = FacsConfig::default();
        let honour = FacsConfig {
            hot_list: FacsHotList::Honour,
            ..FacsConfig::default()
        };
        // The seed's rule: the list changes nothing.
        assert_eq!(
            facs_decide(&ignore, Temperature::Hot, 3_000, true),
            CompressSide::Host
        );
        assert_eq!(
            facs_decide(&honour, Temperature::Hot, 3_000, true),
            CompressSide::None
        );
        // Files off the list, and the other sides, are as before.
        for (temp, ratio, side) in [
            (Temperature::Hot, 3_000, CompressSide::Host),
            (Temperature::Warm, 3_000, CompressSide::Host),
            (Temperature::Cold, 2_500, CompressSide::Device),
            (Temperature::Cold, 1_000, CompressSide::None),
        ] {
            assert_eq!(facs_decide(&honour, temp, ratio, false), side);
            assert_eq!(facs_decide(&ignore, temp, ratio, false), side);
        }
        let parsed: FacsConfig = serde_json::from_str(r#"{"hot_list": "honour"}"#).unwrap();
        assert_eq!(parsed, honour);
        let absent: FacsConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(
            absent.hot_list,
            FacsHotList::Ignore,
            "the seed's rule by default"
        );
        assert!(serde_json::from_str::<FacsConfig>(r#"{"hot_list": "sometimes"}"#).is_err());
        let mut x = 1u64;
        let noise: Vec<u8> = (0..12_288)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x >> 56) as u8
            })
            .collect();
        assert!(sample_ratio_permille(&noise) <= 1_000);
    }
}
