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
//! Background re-packing (`repack`, FPC's "background compression packs randomly-read
//! file blocks together"): F2FS counts the read calls of every file since its last write
//! (a bounded table); in idle time, after each background-GC pass, [`repack_decision`]
//! picks files read at least `repack_min_reads` times since their last write whose blocks
//! lie in at least `repack_min_extents` separate runs of addresses, and the mechanism
//! rewrites them: a raw file's written pages in page order to consecutive new blocks
//! ([`F2fs::defrag_copy`]), a compressed file's raw clusters compressed
//! ([`F2fs::compress_file`]). Both write out of place through the normal path, so the old
//! blocks stay valid until a checkpoint or fsync names the new ones: a power cut inside
//! loses nothing.
//!
//! Raw → compressed conversion (`repack_convert`, FPC's background compression of
//! read-mostly files stored raw: executables it never saw created, files whose trial was
//! skipped or whose first page did not compress): a raw file the re-packing would rewrite
//! is first given a background trial (a page of it read and compressed, charged); if it
//! passes, the file is converted in place ([`F2fs::fpc_convert`]) instead of rewritten raw.
//! The conversion rests on a property of F2FS's format: a compressed file may hold raw
//! clusters (a cluster whose first slot is a block address, not `COMPRESS_ADDR`, is read
//! as plain pages), so a raw file whose inode gains the compression context is, byte for
//! byte, a valid compressed file whose clusters are all raw. The kernel refuses
//! `chattr +c` on a file with blocks for the sake of pages already in its page cache, not
//! of its format; FPC converts inside the file system. Order: the inode's new flag is made
//! durable by a checkpoint before any cluster is compressed, so no durable state ever
//! holds a compressed cluster under an inode without the flag; then the raw clusters are
//! compressed out of place as above ([`F2fs::compress_file`]). A file whose pages would
//! change slots under the compressed layout (past the inode's first 912 slots, or with
//! node blocks) is re-laid instead ([`F2fs::fpc_convert_relaid`]): in one operation
//! between two checkpoints it gives up its blocks, takes the compression context while
//! empty and gets its pages back from the old blocks in the compressed layout, which
//! also moves every page's summary entry the way a fresh write does.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use flashstack_block::BlockDevice;

use super::{F2fs, FsError};
use crate::consts::{BLOCK_SIZE, COMPRESS_ADDR, NEW_ADDR, NULL_ADDR};

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
    /// Background re-packing of files read since their last write (module doc).
    pub repack: bool,
    /// A file is re-packed only after at least this many read calls since its last
    /// write [assumed: 2, a launch that read it and one more that would benefit].
    pub repack_min_reads: u32,
    /// ... and only if its blocks lie in at least this many separate address runs
    /// [assumed: 2; a file in one run is already packed].
    pub repack_min_extents: u64,
    /// Files re-packed per background-GC wake at most (bounds idle work per wake).
    pub repack_files_per_wake: usize,
    /// Files whose reads are counted at most (a bounded table; a file first read while
    /// it is full is not counted).
    pub repack_tracked_files_max: usize,
    /// Raw → compressed conversion (module doc): a raw file picked for re-packing whose
    /// background trial passes is made compressed in place and its clusters compressed,
    /// instead of being rewritten raw.
    pub repack_convert: bool,
}

impl Default for FpcConfig {
    fn default() -> FpcConfig {
        FpcConfig {
            enabled: false,
            write_mostly: Vec::new(),
            incompressible: Vec::new(),
            trial_max_permille: 750,
            pending_trials_max: 4096,
            repack: false,
            repack_min_reads: 2,
            repack_min_extents: 2,
            repack_files_per_wake: 4,
            repack_tracked_files_max: 4096,
            repack_convert: false,
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
            repack: true,
            repack_convert: true,
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

/// What the re-packing policy sees of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RepackView {
    /// Read calls since the file was last written.
    pub reads: u32,
    /// Pages with a block.
    pub written_pages: u64,
    /// Runs of consecutive block addresses those pages form, in page order.
    pub extents: u64,
    /// Whether the file is compressed (clusters) or raw.
    pub compressed: bool,
    /// A raw file only: the result of its background trial (a page of it compressed to
    /// `trial_max_permille` of a page or less), `None` when no trial was run (conversion
    /// off, the file cannot be converted, or its name says it is already compressed).
    pub convert_trial: Option<bool>,
}

/// What the re-packing policy decides for one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RepackDecision {
    /// Leave it.
    Keep,
    /// Rewrite its pages in page order to consecutive blocks (a raw file).
    Rewrite,
    /// Compress its raw clusters (a compressed file).
    Recompress,
    /// Make the raw file compressed in place, then compress its clusters.
    Convert,
}

/// FPC's background re-packing policy (pure): a file read since its last write, whose
/// blocks are scattered, is re-packed.
pub fn repack_decision(cfg: &FpcConfig, v: &RepackView) -> RepackDecision {
    if !cfg.repack
        || v.reads < cfg.repack_min_reads
        || v.written_pages < 2
        || v.extents < cfg.repack_min_extents
    {
        RepackDecision::Keep
    } else if v.compressed {
        RepackDecision::Recompress
    } else if cfg.repack_convert && v.convert_trial == Some(true) {
        RepackDecision::Convert
    } else {
        RepackDecision::Rewrite
    }
}

/// Runs of consecutive addresses among the written pages of `addrs` (in page order;
/// holes, reserved pages and compressed-cluster markers are skipped).
pub fn extents_of(addrs: &[u32]) -> u64 {
    let mut runs = 0;
    let mut prev: Option<u32> = None;
    for &a in addrs {
        if matches!(a, NULL_ADDR | NEW_ADDR | COMPRESS_ADDR) {
            continue;
        }
        if prev.is_none_or(|p| p.checked_add(1) != Some(a)) {
            runs += 1;
        }
        prev = Some(a);
    }
    runs
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

/// The background re-packing's counters (`fs.fpc_repack` in the JSON, part of the
/// measured phase's [`super::Metrics`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RepackMetrics {
    /// Files rewritten (raw) or recompressed (compressed).
    pub rewritten_files: u64,
    pub recompressed_files: u64,
    /// Raw files given a background trial, and those converted to compressed
    /// (`repack_convert`; their clusters count in `clusters_compressed`).
    pub convert_trials: u64,
    pub converted_files: u64,
    /// Of the conversions, those that re-laid the file (its pages past the compressed
    /// inode's slots: [`F2fs::fpc_convert`]).
    pub relaid_files: u64,
    /// Data pages rewritten, and clusters compressed, doing so.
    pub pages_written: u64,
    pub clusters_compressed: u64,
    /// Re-packs refused for want of free blocks, and reads not counted (table full).
    pub no_space: u64,
    pub untracked: u64,
}

impl RepackMetrics {
    pub fn is_empty(&self) -> bool {
        *self == RepackMetrics::default()
    }
}

/// The files awaiting their trial.
#[derive(Debug, Default)]
pub(crate) struct FpcState {
    pending: BTreeSet<u32>,
    /// Read calls per file since its last write (re-packing's input).
    reads: BTreeMap<u32, u32>,
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

    /// Every read or write call on a file: a write forgets its reads, a read counts.
    pub(crate) fn fpc_note_call(&mut self, ino: u32, write: bool) {
        if !(self.cfg.fpc.enabled && self.cfg.fpc.repack) {
            return;
        }
        let reads = &mut self.fpc.reads;
        if write {
            reads.remove(&ino);
        } else if let Some(n) = reads.get_mut(&ino) {
            *n = n.saturating_add(1);
        } else if reads.len() < self.cfg.fpc.repack_tracked_files_max {
            reads.insert(ino, 1);
        } else {
            self.metrics.fpc_repack.untracked += 1;
        }
    }

    /// The background re-packing (idle time, after a background-GC pass): the first
    /// `repack_files_per_wake` files the policy picks, in inode order.
    pub(crate) fn fpc_repack(&mut self) -> Result<(), FsError> {
        if !(self.cfg.fpc.enabled && self.cfg.fpc.repack) || self.read_only {
            return Ok(());
        }
        let tracked: Vec<(u32, u32)> = self.fpc.reads.iter().map(|(&i, &n)| (i, n)).collect();
        let mut done = 0;
        for (ino, reads) in tracked {
            if done >= self.cfg.fpc.repack_files_per_wake {
                break;
            }
            let Some(mut view) = self.repack_view(ino, reads)? else {
                self.fpc.reads.remove(&ino);
                continue;
            };
            let mut decision = repack_decision(&self.cfg.fpc, &view);
            // A raw file about to be rewritten raw: the trial that may convert it instead
            // (run only now, as it costs a read and a compression).
            if decision == RepackDecision::Rewrite && self.cfg.fpc.repack_convert {
                view.convert_trial = self.convert_trial(ino)?;
                decision = repack_decision(&self.cfg.fpc, &view);
            }
            match decision {
                RepackDecision::Keep => continue,
                RepackDecision::Rewrite => match self.defrag_copy(ino) {
                    Ok(out) => {
                        self.metrics.fpc_repack.rewritten_files += 1;
                        self.metrics.fpc_repack.pages_written += out.pages_written;
                    }
                    Err(FsError::NoSpace) => self.metrics.fpc_repack.no_space += 1,
                    Err(e) => return Err(e),
                },
                RepackDecision::Recompress => {
                    let before = self.compress_metrics().clusters_compressed;
                    self.compress_file(ino)?;
                    let packed = self.compress_metrics().clusters_compressed - before;
                    self.metrics.fpc_repack.recompressed_files += 1;
                    self.metrics.fpc_repack.clusters_compressed += packed;
                }
                RepackDecision::Convert => {
                    let before = self.compress_metrics().clusters_compressed;
                    match self.fpc_convert(ino) {
                        Ok(()) => {
                            let packed = self.compress_metrics().clusters_compressed - before;
                            self.metrics.fpc_repack.converted_files += 1;
                            self.metrics.fpc_repack.clusters_compressed += packed;
                        }
                        // Refused before anything changed (a failure inside leaves
                        // the file system read-only: stop).
                        Err(FsError::NoSpace) if !self.read_only => {
                            self.metrics.fpc_repack.no_space += 1
                        }
                        Err(e) => return Err(e),
                    }
                }
            }
            // Re-packed (or refused): counted again only after its next write.
            self.fpc.reads.remove(&ino);
            done += 1;
        }
        Ok(())
    }

    /// What [`repack_decision`] sees of `ino`; `None` if it is no longer a regular file.
    fn repack_view(&mut self, ino: u32, reads: u32) -> Result<Option<RepackView>, FsError> {
        if self.check_file(ino).is_err() || self.stat_ino(ino)?.kind != super::FileKind::File {
            return Ok(None);
        }
        let addrs = self.file_block_addrs(ino)?;
        let written_pages = addrs
            .iter()
            .filter(|&&a| !matches!(a, NULL_ADDR | NEW_ADDR | COMPRESS_ADDR))
            .count() as u64;
        let compressed = self.encoding(ino)? == super::pagemap::Encoding::Compressed;
        Ok(Some(RepackView {
            reads,
            written_pages,
            extents: extents_of(&addrs),
            compressed,
            convert_trial: None,
        }))
    }

    /// Why raw file `ino` cannot be converted to compressed, if it cannot: compression
    /// off, not a plain regular file, data inline, MedFS deltas or a DCM pseudo file,
    /// reserved (fallocated) blocks, no room for the compression context in the inode, or
    /// less than one whole cluster (only whole clusters are compressed).
    pub(crate) fn convert_refusal(&mut self, ino: u32) -> Result<Option<&'static str>, FsError> {
        use super::delta::{MEDFS_DCM_FL, MEDFS_DELTA_FL, MEDFS_PSEUDO_FL, OFF_FLAGS};
        if !self.sb.feature.contains(crate::consts::FEATURE_COMPRESSION)
            || !self.cfg.compress.enabled
        {
            return Ok(Some("compression is not on"));
        }
        let node = self.node(ino)?;
        let inode = crate::node::Inode::decode(node);
        let flags = crate::codec::le32_at(&node[..], OFF_FLAGS);
        if !inode.is_reg() || self.encoding(ino)? != super::pagemap::Encoding::Plain {
            return Ok(Some("not a plain regular file"));
        }
        if inode.inline & (crate::consts::F2FS_INLINE_DATA | crate::consts::F2FS_DATA_EXIST) != 0 {
            return Ok(Some("its data is inline"));
        }
        if flags & (MEDFS_DELTA_FL | MEDFS_DCM_FL | MEDFS_PSEUDO_FL) != 0 {
            return Ok(Some("it holds MedFS deltas"));
        }
        if inode.extra().is_none() {
            return Ok(Some(
                "its inode has no extra attributes for the compression context",
            ));
        }
        let pages = inode.size.div_ceil(BLOCK_SIZE as u64);
        if pages >> self.cfg.compress.log_cluster_size == 0 {
            return Ok(Some("it holds no whole cluster"));
        }
        if self
            .file_block_addrs(ino)?
            .iter()
            .any(|&a| a == NEW_ADDR || a == COMPRESS_ADDR)
        {
            return Ok(Some("it holds reserved blocks"));
        }
        Ok(None)
    }

    /// Whether raw file `ino`'s pages keep their address slots once the inode has the
    /// compression context. A compressed file's inode holds its addresses aligned down
    /// to a cluster (914 → 912 with 4-page clusters) and so do its direct nodes
    /// (1018 → 1016), so a raw file's pages keep their slots only if all of them lie in
    /// the inode's first aligned slots and it has no node blocks (files up to 912 pages,
    /// 3.56 MiB). Such a file converts in place; any other is re-laid
    /// ([`F2fs::fpc_convert_relaid`]).
    fn keeps_slots_when_compressed(&mut self, ino: u32) -> Result<bool, FsError> {
        let pages = self
            .inode_u64(ino, super::data::OFF_SIZE)?
            .div_ceil(BLOCK_SIZE as u64);
        let geo = self.geometry(ino)?;
        let cluster = 1usize << self.cfg.compress.log_cluster_size;
        let aligned = geo.addrs - geo.addrs % cluster;
        let node = self.node(ino)?;
        let word = |w: usize| crate::codec::le32_at(&node[..], 4 * w);
        let first = super::data::ADDR_WORD + geo.extra;
        let slots_past = (first + aligned..first + geo.addrs).any(|w| word(w) != NULL_ADDR);
        let nids = (0..crate::consts::INODE_NIDS).any(|k| word(super::data::NID_WORD + k) != 0);
        Ok(pages <= aligned as u64 && !slots_past && !nids)
    }

    /// The background trial of raw file `ino` (`None` when it cannot be converted or its
    /// name says it is already compressed): its first written page, read from flash and
    /// compressed with the mount's codec, each charged; passes as the creation trial does.
    fn convert_trial(&mut self, ino: u32) -> Result<Option<bool>, FsError> {
        if self.convert_refusal(ino)?.is_some() {
            return Ok(None);
        }
        let node = self.node(ino)?;
        let len = (crate::codec::le32_at(&node[..], super::delta::OFF_NAMELEN) as usize)
            .min(crate::consts::NAME_LEN);
        let name = String::from_utf8_lossy(&node[super::delta::OFF_NAME..][..len]).into_owned();
        if classify(&self.cfg.fpc, &name) == FpcClass::Incompressible {
            return Ok(None);
        }
        let Some(&addr) = self
            .file_block_addrs(ino)?
            .iter()
            .find(|&&a| !matches!(a, NULL_ADDR | NEW_ADDR | COMPRESS_ADDR))
        else {
            return Ok(None);
        };
        let page = self.read_block(u64::from(addr))?;
        let kind = self.cfg.compress.codec();
        let (compress_ns, _) = self.cfg.compress.page_cost()?;
        self.now_ns += compress_ns;
        let mut codec = kind
            .build()
            .map_err(|e| FsError::Invalid(format!("fpc conversion trial: {e}")))?;
        let mut out = Vec::new();
        codec.compress(&page[..], &mut out);
        self.metrics.fpc_repack.convert_trials += 1;
        Ok(Some(trial_passes(&self.cfg.fpc, out.len())))
    }

    /// FPC's raw → compressed conversion of `ino` (module doc): the compression context
    /// set on the inode in place (every cluster still raw, a valid compressed file), made
    /// durable by a checkpoint, then the raw clusters compressed out of place; a file
    /// whose pages would not keep their slots is re-laid instead
    /// (`F2fs::fpc_convert_relaid`). Refuses a file `F2fs::convert_refusal` names,
    /// before anything changes.
    pub fn fpc_convert(&mut self, ino: u32) -> Result<(), FsError> {
        self.check_file(ino)?;
        if let Some(why) = self.convert_refusal(ino)? {
            return Err(FsError::Invalid(format!(
                "inode {ino}: cannot be converted to compressed: {why}"
            )));
        }
        self.writable("fpc_convert")?;
        if !self.keeps_slots_when_compressed(ino)? {
            return self.fpc_convert_relaid(ino);
        }
        self.set_compress_context_in_place(ino)?;
        if self.encoding(ino)? != super::pagemap::Encoding::Compressed {
            return Err(super::corrupt(format!(
                "inode {ino}: the compression context did not take"
            )));
        }
        // The flag durable before any compressed cluster (module doc).
        self.checkpoint(false)?;
        self.compress_file(ino)
    }

    /// The conversion of a raw file whose pages move to other slots under the compressed
    /// layout (module doc): a checkpoint, so that the durable state is the raw file as it
    /// is; then, in one operation (cleaning runs only between operations, so no
    /// checkpoint falls inside), the file lets go of its blocks, gets the compression
    /// context while empty (as `chattr +c` allows), and its pages are written back from
    /// their old blocks in the compressed layout ([`F2fs::relay_compressed`]); then a
    /// checkpoint. Until that checkpoint the old blocks are neither reused (a block valid
    /// at the last checkpoint is never taken before the next) nor discarded (prefree
    /// segments are discarded at a checkpoint), so a power cut anywhere in between finds
    /// the raw file of the first checkpoint. Refused with [`FsError::NoSpace`] before
    /// anything changes when the free segments above the reserve, or the user blocks,
    /// could not take the re-laid file at its largest ([`relaid_blocks_max`]; the old
    /// blocks come free only at the end). An error inside the operation makes the file
    /// system read-only, so that no checkpoint records a file short of its pages.
    fn fpc_convert_relaid(&mut self, ino: u32) -> Result<(), FsError> {
        let old = self.file_block_addrs(ino)?;
        let blocks = relaid_blocks_max(&old, self.cfg.compress.log_cluster_size);
        let segs = blocks.div_ceil(crate::consts::BLOCKS_PER_SEG as u64) + 2;
        let free = u64::from(self.segs.free_segments());
        if free < u64::from(self.cp.rsvd_segment_count) + segs
            || self.used_blocks() + blocks > self.cp.user_block_count
        {
            return Err(FsError::NoSpace);
        }
        self.device_space_for(blocks * BLOCK_SIZE as u64)?;
        let size = self.inode_u64(ino, super::data::OFF_SIZE)?;
        self.checkpoint(false)?;
        let relaid = self.balanced("fpc_convert", |fs| {
            fs.set_size(ino, 0)?;
            fs.set_compress_context_in_place(ino)?;
            fs.set_size(ino, size)?;
            fs.relay_compressed(ino, &old)
        });
        if let Err(e) = relaid {
            // The file may lack pages it gave up: only the last checkpoint holds it
            // whole, and no later one may be written (the kernel stops checkpoints
            // after such an error too). The check above should make this unreachable
            // short of a device error.
            self.read_only = true;
            return Err(e);
        }
        self.checkpoint(false)?;
        self.metrics.fpc_repack.relaid_files += 1;
        Ok(())
    }

    pub fn fpc_metrics(&self) -> FpcMetrics {
        self.fpc.metrics
    }
}

/// Blocks FPC's re-laid conversion may take at most, counted as the file system counts
/// them (`used_blocks`) and as they land in segments: each whole cluster with a written
/// page takes all its slots (a compressed one counts its `COMPRESS_ADDR` and `NEW_ADDR`
/// slots as used, holes included, and its payload may outnumber the written pages; a raw
/// one takes at most its slots), the last partial cluster its written pages, and the new
/// address tree a direct node per 1,016 slots, an indirect one per 1,018 of those, the
/// inode: about 2 node blocks per 1,016 pages, plus 4. `old`: the file's addresses by
/// page.
fn relaid_blocks_max(old: &[u32], log_cluster_size: u8) -> u64 {
    let per = 1usize << log_cluster_size;
    let whole = old.len() / per;
    let written = |c: &[u32]| c.iter().filter(|&&a| a != NULL_ADDR).count() as u64;
    let clusters: u64 = old[..whole * per]
        .chunks(per)
        .map(|c| if written(c) > 0 { per as u64 } else { 0 })
        .sum();
    clusters + written(&old[whole * per..]) + 2 * (old.len() as u64).div_ceil(1016) + 4
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
    fn relaid_blocks_count_every_slot_of_a_cluster_with_data() {
        let n = NULL_ADDR;
        // Two whole clusters (one with a single page, one empty), a tail of 2 pages.
        let old = [7, n, n, n, n, n, n, n, 9, n];
        assert_eq!(relaid_blocks_max(&old, 2), 4 + 1 + 2 + 4);
        // A sparse file past the inode's slots: one page per cluster, 4 blocks each.
        let sparse: Vec<u32> = (0..4_000u32)
            .map(|i| if i % 4 == 0 { 100 + i } else { n })
            .collect();
        assert_eq!(relaid_blocks_max(&sparse, 2), 4_000 + 2 * 4 + 4);
    }

    #[test]
    fn extents_count_address_runs() {
        assert_eq!(extents_of(&[]), 0);
        assert_eq!(extents_of(&[10, 11, 12]), 1);
        assert_eq!(extents_of(&[10, NULL_ADDR, 11, 30, 31, NEW_ADDR]), 2);
        assert_eq!(extents_of(&[12, 11, 10]), 3);
        assert_eq!(extents_of(&[u32::MAX - 2, 5]), 2);
    }

    #[test]
    fn repack_policy() {
        let c = FpcConfig::phone();
        let v = RepackView {
            reads: 2,
            written_pages: 8,
            extents: 3,
            compressed: false,
            convert_trial: None,
        };
        assert_eq!(repack_decision(&c, &v), RepackDecision::Rewrite);
        // A raw file converts only after a trial that passed, and only with conversion on.
        let passed = RepackView {
            convert_trial: Some(true),
            ..v
        };
        assert_eq!(repack_decision(&c, &passed), RepackDecision::Convert);
        let failed = RepackView {
            convert_trial: Some(false),
            ..v
        };
        assert_eq!(repack_decision(&c, &failed), RepackDecision::Rewrite);
        let no_convert = FpcConfig {
            repack_convert: false,
            ..c.clone()
        };
        assert_eq!(
            repack_decision(&no_convert, &passed),
            RepackDecision::Rewrite
        );
        let comp = RepackView {
            compressed: true,
            ..v
        };
        assert_eq!(repack_decision(&c, &comp), RepackDecision::Recompress);
        let once = RepackView { reads: 1, ..v };
        assert_eq!(repack_decision(&c, &once), RepackDecision::Keep);
        let packed = RepackView { extents: 1, ..v };
        assert_eq!(repack_decision(&c, &packed), RepackDecision::Keep);
        let off = FpcConfig { repack: false, ..c };
        assert_eq!(repack_decision(&off, &v), RepackDecision::Keep);
    }

    #[test]
    fn trial_threshold() {
        let c = FpcConfig::phone();
        assert!(trial_passes(&c, 3072));
        assert!(!trial_passes(&c, 3073));
    }
}
