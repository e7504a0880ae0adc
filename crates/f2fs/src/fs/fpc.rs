//! FPC (FAST '21, "Pattern-Guided File Compression", `shared/reference/seed-systems.md` §B)
//! as a file policy over F2FS compression (`cluster.rs`): it only decides which new files
//! are compressed; the clusters, their on-disk format, reads and writes are F2FS's own.
//!
//! Foreground compression of write-mostly files: a new file whose name says it is
//! written more than read (SQLite databases and their journals, logs, state files) is
//! compressed from its creation, even a `.db` of the hot list (which stock F2FS never
//! compresses); a file whose name says it is already compressed (media, archives) never
//! is; any other file is decided by a trial: its first page is compressed when it is first
//! written, and the file is compressed if that page shrinks to `trial_max_permille` of a
//! page or less (FPC's "trial-compress the first page and extrapolate").
//!
//! Not built: FPC's background re-packing of the blocks an app reads at launch (docs/medfs.md,
//! "FPC").

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use flashstack_block::BlockDevice;

use super::{F2fs, FsError};
use crate::consts::BLOCK_SIZE;

/// `[fs.mount.fpc]` (off by default). Needs `[fs.mount.compress]` on: FPC uses its codec,
/// cluster size and cost model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FpcConfig {
    pub enabled: bool,
    /// Name endings of write-mostly files (compressed from creation). Matched at the end
    /// of the name after a `.` or a `-` (`x.db`, `x.db-journal`, `x.db-wal`).
    pub write_mostly: Vec<String>,
    /// Name endings of files that are already compressed (never compressed).
    pub incompressible: Vec<String>,
    /// A trial passes when the first page compresses to at most this many thousandths of
    /// a page [assumed: 750 ‰, a cluster of 4 pages then saves a block].
    pub trial_max_permille: u32,
    /// Files awaiting their trial at most (a bounded table; a file created while it is
    /// full is not compressed).
    pub pending_trials_max: usize,
}

impl Default for FpcConfig {
    fn default() -> FpcConfig {
        FpcConfig {
            enabled: false,
            write_mostly: Vec::new(),
            incompressible: Vec::new(),
            trial_max_permille: 750,
            pending_trials_max: 4096,
        }
    }
}

impl FpcConfig {
    /// The `fpc` preset's lists: the write-mostly files the MedFS and FPC studies name
    /// (SQLite databases, their rollback journals and WALs, logs) and media and archive
    /// types as incompressible.
    pub fn phone() -> FpcConfig {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect();
        FpcConfig {
            enabled: true,
            write_mostly: s(&["db", "journal", "wal", "log"]),
            incompressible: s(&[
                "jpg", "jpeg", "png", "gif", "webp", "heic", "mp4", "mkv", "webm", "3gp", "mp3",
                "ogg", "opus", "aac", "m4a", "amr", "zip", "gz", "apk",
            ]),
            ..FpcConfig::default()
        }
    }

    pub fn is_off(&self) -> bool {
        *self == FpcConfig::default()
    }
}

/// What FPC decides for a new file from its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FpcClass {
    /// Write-mostly: compressed from creation.
    WriteMostly,
    /// Already compressed: never.
    Incompressible,
    /// Decided by the first page's trial.
    Trial,
}

fn ends_with(name: &str, ending: &str) -> bool {
    let (n, e) = (name.as_bytes(), ending.as_bytes());
    n.len() > e.len()
        && n[n.len() - e.len()..].eq_ignore_ascii_case(e)
        && matches!(n[n.len() - e.len() - 1], b'.' | b'-')
}

/// The class of a new file named `name` (pure).
pub fn classify(cfg: &FpcConfig, name: &str) -> FpcClass {
    if cfg.incompressible.iter().any(|e| ends_with(name, e)) {
        FpcClass::Incompressible
    } else if cfg.write_mostly.iter().any(|e| ends_with(name, e)) {
        FpcClass::WriteMostly
    } else {
        FpcClass::Trial
    }
}

/// Whether a first page that compressed to `compressed_bytes` makes its file compressed
/// (pure).
pub fn trial_passes(cfg: &FpcConfig, compressed_bytes: usize) -> bool {
    compressed_bytes * 1000 <= cfg.trial_max_permille as usize * BLOCK_SIZE
}

/// FPC's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FpcMetrics {
    /// Files compressed from creation (write-mostly by name).
    pub write_mostly_files: u64,
    /// Files left raw by name (incompressible).
    pub incompressible_files: u64,
    /// First-page trials run, and those that made their file compressed.
    pub trials: u64,
    pub trials_passed: u64,
    /// Files not compressed because the trial table was full, or because data reached
    /// them before the trial (inline data converted, a write past page 0).
    pub trials_skipped: u64,
}

/// The files awaiting their trial.
#[derive(Debug, Default)]
pub(crate) struct FpcState {
    pending: BTreeSet<u32>,
    pub metrics: FpcMetrics,
}

impl<D: BlockDevice> F2fs<D> {
    /// At creation of a regular file: whether FPC makes it compressed now (the caller
    /// sets the compression context); a trial file is remembered.
    pub(crate) fn fpc_at_create(&mut self, ino: u32, name: &str) -> bool {
        let cfg = &self.cfg.fpc;
        self.fpc.pending.remove(&ino);
        match classify(cfg, name) {
            FpcClass::WriteMostly => {
                self.fpc.metrics.write_mostly_files += 1;
                true
            }
            FpcClass::Incompressible => {
                self.fpc.metrics.incompressible_files += 1;
                false
            }
            FpcClass::Trial if self.fpc.pending.len() < cfg.pending_trials_max => {
                self.fpc.pending.insert(ino);
                false
            }
            FpcClass::Trial => {
                self.fpc.metrics.trials_skipped += 1;
                false
            }
        }
    }

    /// Before the first page of a trial file reaches F2FS: the trial, charged the codec's
    /// per-page compression time; a pass makes the (still empty) file compressed.
    pub(crate) fn fpc_first_write(
        &mut self,
        ino: u32,
        index: u64,
        page: &[u8],
    ) -> Result<(), FsError> {
        if !self.fpc.pending.remove(&ino) {
            return Ok(());
        }
        let size = self.inode_u64(ino, super::data::OFF_SIZE)?;
        if index != 0 || size != 0 {
            self.fpc.metrics.trials_skipped += 1;
            return Ok(());
        }
        let kind = self.cfg.compress.codec();
        let (compress_ns, _) = self.cfg.compress.page_cost()?;
        self.now_ns += compress_ns;
        let mut codec = kind
            .build()
            .map_err(|e| FsError::Invalid(format!("fpc trial: {e}")))?;
        let mut out = Vec::new();
        codec.compress(page, &mut out);
        self.fpc.metrics.trials += 1;
        if trial_passes(&self.cfg.fpc, out.len()) && self.set_compressed(ino).is_ok() {
            self.fpc.metrics.trials_passed += 1;
        }
        Ok(())
    }

    pub fn fpc_metrics(&self) -> FpcMetrics {
        self.fpc.metrics
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_by_name() {
        let c = FpcConfig::phone();
        assert_eq!(classify(&c, "cache4.db"), FpcClass::WriteMostly);
        assert_eq!(classify(&c, "cache4.db-wal"), FpcClass::WriteMostly);
        assert_eq!(classify(&c, "mail.db-journal"), FpcClass::WriteMostly);
        assert_eq!(classify(&c, "gmail.log"), FpcClass::WriteMostly);
        assert_eq!(classify(&c, "IMG_1.JPG"), FpcClass::Incompressible);
        assert_eq!(classify(&c, "sync_state.bin"), FpcClass::Trial);
        // A name that is only the ending is not of that type.
        assert_eq!(classify(&c, "db"), FpcClass::Trial);
        assert_eq!(classify(&c, "catalog"), FpcClass::Trial);
    }

    #[test]
    fn trial_threshold() {
        let c = FpcConfig::phone();
        assert!(trial_passes(&c, 3072));
        assert!(!trial_passes(&c, 3073));
    }
}
