//! F2FS compression (F2FSC) on the addressing layer (`pagemap.rs`), in the kernel's
//! on-disk format: a regular file with `F2FS_COMPR_FL` is cut into clusters of
//! 2^`i_log_cluster_size` pages; a cluster that compresses well enough to save a block is
//! stored as `COMPRESS_ADDR` in its first slot, the compressed blocks (the 24-byte header
//! of `crate::compress`, then the codec's bytes) in the next slots and `NEW_ADDR` in the
//! slots it saved; any other cluster is stored raw, one block per page.
//!
//! Mechanism only; the decisions are pure functions at the bottom
//! ([`compresses_at_create`], [`cluster_may_compress`]). Writes of a compressed file are
//! staged per cluster for the length of one file operation ([`ClusterStage`]): a
//! writeback that hands over a cluster's pages one by one writes the cluster once, as the
//! kernel's `f2fs_write_multi_pages` does with the pages of the page cache.
//!
//! Accounting, as the kernel keeps it and `fsck.f2fs` checks it: `COMPRESS_ADDR` and each
//! `NEW_ADDR` slot count in `i_blocks` and in the checkpoint's `valid_block_count` (as a
//! reservation, no block in the SIT), so compression saves writes, not free space;
//! `i_compr_blocks` is the number of `COMPRESS_ADDR` and `NEW_ADDR` slots of the file's
//! compressed clusters (`cluster pages − compressed blocks` per cluster).

use std::collections::BTreeMap;

use flashstack_block::BlockDevice;
use flashstack_codec::cost::{page_cost, Cpu};
use flashstack_codec::CodecKind;
use serde::{Deserialize, Serialize};

use super::data::{Dnode, OFF_SIZE};
use super::pagemap::COMPR_FL;
use super::{corrupt, BlockKind, F2fs, FsError};
use crate::codec::{zero_block, Block};
use crate::compress::{self, Algorithm, MAX_LOG_CLUSTER_SIZE, MIN_LOG_CLUSTER_SIZE};
use crate::consts::*;
use crate::layout::CURSEG_COLD_DATA;
use crate::node::{ExtraAttr, Inode};
use crate::summary::Summary;

/// `i_compress_flag` bit 0: the cluster headers carry a checksum (`COMPRESS_CHKSUM`).
pub(crate) const COMPRESS_CHKSUM_FLAG: u16 = 1;
/// Byte offsets of the compression extra attributes in an inode block.
pub(crate) const OFF_COMPR_BLOCKS: usize = 384;
const OFF_COMPRESS_ALGORITHM: usize = 392;
const OFF_LOG_CLUSTER_SIZE: usize = 393;
const OFF_COMPRESS_FLAG: usize = 394;
const OFF_FLAGS: usize = 80;

/// `compress_algorithm=` of the mount options we build (LZO-RLE is decoded nowhere here).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CompressAlgorithm {
    Lzo,
    /// The kernel's default when the feature is on.
    #[default]
    Lz4,
    Zstd,
}

impl CompressAlgorithm {
    fn on_disk(self) -> Algorithm {
        match self {
            CompressAlgorithm::Lzo => Algorithm::Lzo,
            CompressAlgorithm::Lz4 => Algorithm::Lz4,
            CompressAlgorithm::Zstd => Algorithm::Zstd,
        }
    }
}

/// `compress_mode=`: `fs` compresses at writeback; `user` only when asked
/// ([`F2fs::compress_file`], the kernel's `F2FS_IOC_COMPRESS_FILE`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CompressMode {
    #[default]
    Fs,
    User,
}

/// F2FS compression's mount options (`[fs.mount.compress]`; off by default). Needs the
/// superblock features `extra_attr` and `compression` (refused at mount otherwise).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CompressConfig {
    pub enabled: bool,
    pub algorithm: CompressAlgorithm,
    /// `compress_log_size`: clusters of 2^n pages (2..=8; default 2, 16 KiB).
    pub log_cluster_size: u8,
    /// `compress_extension`: new files whose name ends so are compressed; `*` is every
    /// file. Files of the hot list (`.db`) never are, as in the kernel.
    pub extensions: Vec<String>,
    pub mode: CompressMode,
    /// `compress_chksum`: a CRC of the compressed bytes in each cluster header.
    pub chksum: bool,
    /// The host CPU whose cited per-page codec cost (`flashstack_codec::cost`) is charged.
    pub cpu: Cpu,
    /// A stated per-page cost when `cpu` has no cited figure for the codec (ns).
    pub compress_ns_per_page: Option<u64>,
    pub decompress_ns_per_page: Option<u64>,
}

impl Default for CompressConfig {
    fn default() -> CompressConfig {
        CompressConfig {
            enabled: false,
            algorithm: CompressAlgorithm::Lz4,
            log_cluster_size: MIN_LOG_CLUSTER_SIZE,
            extensions: Vec::new(),
            mode: CompressMode::Fs,
            chksum: false,
            cpu: Cpu::DesktopI9_9900K,
            compress_ns_per_page: None,
            decompress_ns_per_page: None,
        }
    }
}

impl CompressConfig {
    /// The `f2fsc` preset: lz4 (the kernel's default codec), 4-page clusters, and the
    /// extensions of files a phone writes once and reads many times that compress
    /// (text, logs, code, documents); media is already compressed and `.db` files are
    /// rewritten in place page by page, which a cluster format turns into read-modify-
    /// write (`docs/f2fs.md`, "Compression").
    pub fn phone() -> CompressConfig {
        let exts = [
            "txt", "log", "json", "xml", "html", "js", "css", "so", "dex", "odex", "vdex", "apk",
            "csv", "md",
        ];
        CompressConfig {
            enabled: true,
            extensions: exts.iter().map(|s| s.to_string()).collect(),
            ..CompressConfig::default()
        }
    }

    /// Every file compressed (`compress_extension=*`).
    pub fn all_files() -> CompressConfig {
        CompressConfig {
            enabled: true,
            extensions: vec!["*".into()],
            ..CompressConfig::default()
        }
    }

    /// Checks the options against themselves and the cost table.
    pub fn validate(&self) -> Result<(), FsError> {
        if !self.enabled {
            return Ok(());
        }
        if !(MIN_LOG_CLUSTER_SIZE..=MAX_LOG_CLUSTER_SIZE).contains(&self.log_cluster_size) {
            return Err(FsError::Invalid(format!(
                "compress.log_cluster_size {} is outside {MIN_LOG_CLUSTER_SIZE}..={MAX_LOG_CLUSTER_SIZE}",
                self.log_cluster_size
            )));
        }
        self.page_cost().map(drop)
    }

    pub(crate) fn codec(&self) -> CodecKind {
        self.algorithm
            .on_disk()
            .codec()
            .expect("lzo, lz4 and zstd have codecs")
    }

    /// Host CPU ns per page of the configured codec.
    pub(crate) fn page_cost(&self) -> Result<(u64, u64), FsError> {
        self.page_cost_of(self.codec())
    }

    /// Host CPU ns per page (compress, decompress) of `kind`: stated figures first, else
    /// the table.
    fn page_cost_of(&self, kind: CodecKind) -> Result<(u64, u64), FsError> {
        let cited = page_cost(self.cpu, kind);
        let c = self.compress_ns_per_page.or(cited.map(|c| c.compress_ns));
        let d = self
            .decompress_ns_per_page
            .or(cited.map(|c| c.decompress_ns));
        match (c, d) {
            (Some(c), Some(d)) => Ok((c, d)),
            _ => Err(FsError::Invalid(format!(
                "compress: no cited cost for {kind:?} on {:?}; set compress_ns_per_page and decompress_ns_per_page",
                self.cpu
            ))),
        }
    }
}

/// Counters of the compression layer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CompressMetrics {
    /// Clusters written compressed / written raw (a compressed file's clusters).
    pub clusters_compressed: u64,
    pub clusters_raw: u64,
    /// Data blocks written for compressed clusters and the blocks that saved.
    pub compressed_blocks_written: u64,
    pub blocks_saved: u64,
    /// Clusters read and decompressed.
    pub clusters_decompressed: u64,
}

/// Pages of one cluster written during the current operation, not yet on the device.
#[derive(Debug)]
pub(crate) struct ClusterStage {
    ino: u32,
    cluster: u64,
    pages: BTreeMap<u64, Box<Block>>,
}

/// `set_compress_new_inode`: a new regular file (or directory) is compressed when its
/// parent directory has the flag, or its name matches the extension list; never a file
/// of the hot list (`.db`), whatever the rest says.
pub(crate) fn compresses_at_create(
    cfg: &CompressConfig,
    parent_compressed: bool,
    name: &str,
    hot: bool,
) -> bool {
    if !cfg.enabled || hot {
        return false;
    }
    parent_compressed
        || cfg
            .extensions
            .iter()
            .any(|e| e == "*" || super::has_extension(name.as_bytes(), e, false))
}

/// `cluster_may_compress`: only a cluster all of whose pages start inside the file (a
/// page being written counts as inside: its write grows the size past its start).
pub(crate) fn cluster_may_compress(
    size_bytes: u64,
    last_staged_index: Option<u64>,
    first: u64,
    pages: u64,
) -> bool {
    let last = first + pages - 1;
    let size_pages = size_bytes.div_ceil(BLOCK_SIZE as u64);
    let covered = last_staged_index.map_or(size_pages, |i| size_pages.max(i + 1));
    covered > last
}

/// The full check's view of a compressed file's clusters (`fsck.f2fs`'s rules): a
/// `COMPRESS_ADDR` at a cluster's first page and the `NEW_ADDR` slots after it in the
/// cluster count as reserved blocks and in `i_compr_blocks`.
pub(crate) struct ClusterCount {
    pages: Option<u64>,
    head: Option<u64>,
    count: u64,
}

impl ClusterCount {
    pub fn of(inode: &Inode) -> ClusterCount {
        let pages = (inode.is_reg() && inode.flags & COMPR_FL != 0)
            .then(|| {
                inode
                    .extra()
                    .map(|e| 1u64 << e.log_cluster_size.min(MAX_LOG_CLUSTER_SIZE))
            })
            .flatten();
        ClusterCount {
            pages,
            head: None,
            count: 0,
        }
    }

    /// Whether the slot at `index` holding `addr` is a reservation (no block in the SIT).
    pub fn reserves(&mut self, index: u64, addr: u32) -> bool {
        match (addr, self.pages) {
            (NEW_ADDR, Some(p)) => {
                if self.head.is_some_and(|h| index - h < p) {
                    self.count += 1;
                }
                true
            }
            (NEW_ADDR, None) => true,
            (COMPRESS_ADDR, Some(p)) if index.is_multiple_of(p) => {
                self.head = Some(index);
                self.count += 1;
                true
            }
            _ => false,
        }
    }

    pub fn compr_blocks(&self) -> Option<u64> {
        self.pages.map(|_| self.count)
    }
}

/// The last cluster a read of several pages decompressed ([`F2fs::cluster_page`]).
#[derive(Default)]
pub(crate) struct ClusterMemo {
    cluster: Option<u64>,
    pages: Option<Vec<u8>>,
}

/// The cluster of a compressed inode, from its extra attributes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ClusterShape {
    pub algorithm: u8,
    pub log: u8,
    pub chksum: bool,
}

impl ClusterShape {
    pub fn pages(&self) -> u64 {
        1 << self.log
    }

    /// The codec of `i_compress_algorithm` (LZO-RLE and unknown values have none here).
    fn codec(&self, ino: u32) -> Result<CodecKind, FsError> {
        Algorithm::from_disk(self.algorithm)
            .and_then(Algorithm::codec)
            .ok_or_else(|| {
                FsError::Unsupported(format!(
                    "inode {ino}: i_compress_algorithm {} has no codec here",
                    self.algorithm
                ))
            })
    }
}

impl<D: BlockDevice> F2fs<D> {
    /// Mount: compression options need the `extra_attr` and `compression` features (the
    /// kernel refuses them otherwise) and a cost for the codec.
    pub(crate) fn check_compress_options(&self) -> Result<(), FsError> {
        let c = &self.cfg.compress;
        if !c.enabled {
            return Ok(());
        }
        c.validate()?;
        let need = FEATURE_EXTRA_ATTR | FEATURE_COMPRESSION;
        if !self.sb.feature.contains(need) {
            return Err(FsError::Invalid(
                "compress.enabled needs the superblock features extra_attr and compression (mkfs -O extra_attr,compression)".into(),
            ));
        }
        Ok(())
    }

    /// Sets the compression flag and attributes on a new inode when the options say so.
    pub(crate) fn compress_new_inode(&mut self, inode: &mut Inode, parent: u32, name: &str) {
        let kind = inode.mode & S_IFMT;
        if !(kind == S_IFREG || kind == S_IFDIR) || !self.sb.feature.contains(FEATURE_COMPRESSION) {
            return;
        }
        let parent_compressed = self
            .inode_node(parent)
            .is_ok_and(|n| crate::codec::le32_at(&n[..], OFF_FLAGS) & COMPR_FL != 0);
        let hot = inode.advise & super::data::FADVISE_HOT != 0;
        // FPC's file policy (`fpc.rs`) may compress what the extension rule does not.
        let by_fpc = kind == S_IFREG
            && self.cfg.compress.enabled
            && self.cfg.fpc.enabled
            && self.fpc_at_create(inode.footer.ino, name);
        if !by_fpc && !compresses_at_create(&self.cfg.compress, parent_compressed, name, hot) {
            return;
        }
        self.set_compress_context(inode);
    }

    /// `set_compress_context`: the flag, the algorithm, the cluster size and the
    /// checksum bit; a compressed file keeps no inline data.
    fn set_compress_context(&self, inode: &mut Inode) {
        let Some(mut extra) = inode.extra() else {
            return;
        };
        let c = &self.cfg.compress;
        extra.compress_algorithm = c.algorithm.on_disk() as u8;
        extra.log_cluster_size = c.log_cluster_size;
        extra.padding = if c.chksum { COMPRESS_CHKSUM_FLAG } else { 0 };
        inode.set_extra(&ExtraAttr { ..extra });
        inode.flags |= COMPR_FL;
        if inode.mode & S_IFMT == S_IFREG {
            inode.inline &= !F2FS_INLINE_DATA;
        }
    }

    /// `chattr +c`: marks an empty regular file or a directory compressed (the kernel
    /// refuses a file with data: `f2fs_setflags_common`).
    pub fn set_compressed(&mut self, ino: u32) -> Result<(), FsError> {
        if !self.sb.feature.contains(FEATURE_COMPRESSION) || !self.cfg.compress.enabled {
            return Err(FsError::Unsupported(format!(
                "inode {ino}: compression is not on (feature and compress.enabled)"
            )));
        }
        let mut inode = Inode::decode(self.node(ino)?);
        let kind = inode.mode & S_IFMT;
        if kind == S_IFREG && (inode.size > 0 || inode.inline & F2FS_DATA_EXIST != 0) {
            return Err(FsError::Invalid(format!(
                "inode {ino}: only an empty file can be made compressed"
            )));
        }
        if kind != S_IFREG && kind != S_IFDIR {
            return Err(FsError::Invalid(format!(
                "inode {ino}: not a file or directory"
            )));
        }
        self.set_compress_context(&mut inode);
        self.put_node(ino, inode.encode());
        self.dirty_nodes.insert(ino);
        Ok(())
    }

    /// FPC's conversion (`fpc.rs`, [`F2fs::fpc_convert`], which checks the file first):
    /// the compression context set on a raw regular file that has blocks, which
    /// `chattr +c` refuses. Its clusters are all raw then, which the format allows.
    pub(crate) fn set_compress_context_in_place(&mut self, ino: u32) -> Result<(), FsError> {
        let mut inode = Inode::decode(self.node(ino)?);
        self.set_compress_context(&mut inode);
        self.put_node(ino, inode.encode());
        self.dirty_nodes.insert(ino);
        Ok(())
    }

    /// FPC's conversion of a file whose pages move to other slots (`fpc.rs`,
    /// [`F2fs::fpc_convert`]): `ino`, just given the compression context and no blocks,
    /// gets its pages back from `old` (the address each page had, which nothing reuses
    /// or discards before the next checkpoint), cluster by cluster: compressed where the
    /// cluster lies wholly inside the file and that saves a block, else its written pages
    /// raw. A hole stays a hole unless its cluster is compressed (then it is zeros inside
    /// the compressed cluster, as `compress_file` packs one).
    pub(crate) fn relay_compressed(&mut self, ino: u32, old: &[u32]) -> Result<(), FsError> {
        let shape = self.cluster_shape(ino)?;
        let per = shape.pages() as usize;
        let size = self.inode_u64(ino, OFF_SIZE)?;
        let whole = size.div_ceil(BLOCK_SIZE as u64) >> shape.log;
        for (c, addrs) in (0u64..).zip(old.chunks(per)) {
            let first = c << shape.log;
            let mut pages = BTreeMap::new();
            for (index, &addr) in (first..).zip(addrs) {
                if addr != NULL_ADDR {
                    pages.insert(index, self.read_block(u64::from(addr))?);
                }
            }
            if pages.is_empty() {
                continue;
            }
            if c < whole {
                let mut data = vec![0u8; per * BLOCK_SIZE];
                for (&index, page) in &pages {
                    let at = (index - first) as usize * BLOCK_SIZE;
                    data[at..at + BLOCK_SIZE].copy_from_slice(&page[..]);
                }
                if let Some(blocks) = self.pack_cluster(ino, c, shape, &data)? {
                    self.write_compressed(ino, c, shape, &blocks)?;
                    continue;
                }
            }
            self.write_raw_pages(ino, pages)?;
        }
        Ok(())
    }

    /// The cluster shape of a compressed regular file.
    pub(crate) fn cluster_shape(&mut self, ino: u32) -> Result<ClusterShape, FsError> {
        let node = self.inode_node(ino)?;
        let shape = ClusterShape {
            algorithm: node[OFF_COMPRESS_ALGORITHM],
            log: node[OFF_LOG_CLUSTER_SIZE],
            chksum: u16::from_le_bytes([node[OFF_COMPRESS_FLAG], node[OFF_COMPRESS_FLAG + 1]])
                & COMPRESS_CHKSUM_FLAG
                != 0,
        };
        if !(MIN_LOG_CLUSTER_SIZE..=MAX_LOG_CLUSTER_SIZE).contains(&shape.log) {
            return Err(corrupt(format!(
                "inode {ino}: i_log_cluster_size {} is outside {MIN_LOG_CLUSTER_SIZE}..={MAX_LOG_CLUSTER_SIZE}",
                shape.log
            )));
        }
        Ok(shape)
    }

    /// Reads page `index` of a compressed file: the staged page, a page of a compressed
    /// cluster (decompressed), or `None` for a raw cluster (the plain path reads it).
    pub(crate) fn load_cluster_page(
        &mut self,
        ino: u32,
        index: u64,
    ) -> Result<Option<Box<Block>>, FsError> {
        if let Some(p) = self.staged_page(ino, index) {
            return Ok(Some(p));
        }
        let shape = self.cluster_shape(ino)?;
        let mut memo = ClusterMemo::default();
        self.cluster_page(ino, index, shape, &mut memo)
    }

    /// Page `index` as the operation in progress staged it, if it did.
    fn staged_page(&self, ino: u32, index: u64) -> Option<Box<Block>> {
        let s = self.cluster_stage.as_ref().filter(|s| s.ino == ino)?;
        s.pages.get(&index).cloned()
    }

    /// Page `index` of a compressed cluster, or `None` when its cluster is raw. `memo`
    /// keeps the last cluster decompressed, so a read of several pages decompresses
    /// (and pays for) each cluster once, as the kernel's readahead does.
    pub(crate) fn cluster_page(
        &mut self,
        ino: u32,
        index: u64,
        shape: ClusterShape,
        memo: &mut ClusterMemo,
    ) -> Result<Option<Box<Block>>, FsError> {
        if let Some(p) = self.staged_page(ino, index) {
            return Ok(Some(p));
        }
        let cluster = index >> shape.log;
        if memo.cluster != Some(cluster) {
            memo.pages = self.read_compressed_cluster(ino, cluster, shape)?;
            memo.cluster = Some(cluster);
        }
        let Some(pages) = &memo.pages else {
            return Ok(None);
        };
        let at = (index - (cluster << shape.log)) as usize * BLOCK_SIZE;
        let mut page = zero_block();
        page.copy_from_slice(&pages[at..at + BLOCK_SIZE]);
        Ok(Some(page))
    }

    /// The slots of a cluster (`None` where the node path does not exist).
    fn cluster_slots(
        &mut self,
        ino: u32,
        cluster: u64,
        shape: ClusterShape,
        create: bool,
    ) -> Result<Vec<Option<Dnode>>, FsError> {
        let first = cluster << shape.log;
        (first..first + shape.pages())
            .map(|i| self.dnode(ino, i, create))
            .collect()
    }

    /// A compressed cluster's pages (decompressed), or `None` for a raw one.
    fn read_compressed_cluster(
        &mut self,
        ino: u32,
        cluster: u64,
        shape: ClusterShape,
    ) -> Result<Option<Vec<u8>>, FsError> {
        let slots = self.cluster_slots(ino, cluster, shape, false)?;
        let addrs = slots
            .iter()
            .map(|d| d.map_or(Ok(NULL_ADDR), |d| self.slot_addr(d)))
            .collect::<Result<Vec<u32>, FsError>>()?;
        if addrs[0] != COMPRESS_ADDR {
            return Ok(None);
        }
        let bad = |why: String| {
            corrupt(format!(
                "inode {ino} cluster {cluster} (pages {}..{}): {why}",
                cluster << shape.log,
                (cluster + 1) << shape.log
            ))
        };
        let blocks: Vec<u32> = addrs[1..]
            .iter()
            .copied()
            .take_while(|&a| a != NEW_ADDR && a != NULL_ADDR)
            .collect();
        if blocks.is_empty() || blocks.len() as u64 >= shape.pages() {
            return Err(bad(format!("{} compressed blocks", blocks.len())));
        }
        let mut bytes = Vec::with_capacity(blocks.len() * BLOCK_SIZE);
        for (i, &addr) in blocks.iter().enumerate() {
            self.check_data_addr(ino, (cluster << shape.log) + 1 + i as u64, addr)?;
            let b = self.read_block(addr as u64)?;
            self.note_block_read(addr, &b);
            bytes.extend_from_slice(&b[..]);
        }
        let (_, decompress_ns) = self.cfg.compress.page_cost_of(shape.codec(ino)?)?;
        self.now_ns += decompress_ns * shape.pages();
        self.compress_metrics.clusters_decompressed += 1;
        let pages = shape.pages() as usize;
        compress::decompress_cluster(shape.algorithm, &bytes, pages, shape.chksum)
            .map(Some)
            .map_err(|e| bad(e.to_string()))
    }

    /// Stages page `index` of a compressed file; a page of another cluster first writes
    /// the staged one.
    pub(crate) fn stage_cluster_page(
        &mut self,
        ino: u32,
        index: u64,
        page: &Block,
    ) -> Result<(), FsError> {
        let shape = self.cluster_shape(ino)?;
        shape.codec(ino)?;
        let cluster = index >> shape.log;
        if self
            .cluster_stage
            .as_ref()
            .is_some_and(|s| s.ino != ino || s.cluster != cluster)
        {
            self.flush_cluster_stage()?;
        }
        let stage = self.cluster_stage.get_or_insert_with(|| ClusterStage {
            ino,
            cluster,
            pages: BTreeMap::new(),
        });
        let mut copy = zero_block();
        copy.copy_from_slice(&page[..]);
        stage.pages.insert(index, copy);
        Ok(())
    }

    /// Drops what a failed operation staged.
    pub(crate) fn drop_cluster_stage(&mut self) {
        self.cluster_stage = None;
    }

    /// Writes the staged cluster: compressed when it may and saves a block, else raw.
    pub(crate) fn flush_cluster_stage(&mut self) -> Result<(), FsError> {
        let Some(stage) = self.cluster_stage.take() else {
            return Ok(());
        };
        let ino = stage.ino;
        let shape = self.cluster_shape(ino)?;
        let first = stage.cluster << shape.log;
        let old = self.read_compressed_cluster(ino, stage.cluster, shape)?;
        let size = self.inode_u64(ino, OFF_SIZE)?;
        let last_staged = stage.pages.keys().next_back().copied();
        let may = self.cfg.compress.mode == CompressMode::Fs
            && cluster_may_compress(size, last_staged, first, shape.pages());
        if !may && old.is_none() {
            // A raw cluster stays raw: only its written pages change.
            return self.write_raw_pages(ino, stage.pages);
        }
        let data = self.cluster_bytes(ino, first, shape, &stage, old.as_deref())?;
        let packed = match may {
            true => self.pack_cluster(ino, stage.cluster, shape, &data)?,
            false => None,
        };
        match (packed, old.is_some()) {
            (Some(blocks), _) => self.write_compressed(ino, stage.cluster, shape, &blocks),
            // Raw before and raw now: only the written pages change.
            (None, false) => self.write_raw_pages(ino, stage.pages),
            (None, true) => self.decompress_in_place(ino, stage.cluster, shape, &data),
        }
    }

    /// The whole cluster's bytes: staged pages over the old contents.
    fn cluster_bytes(
        &mut self,
        ino: u32,
        first: u64,
        shape: ClusterShape,
        stage: &ClusterStage,
        old: Option<&[u8]>,
    ) -> Result<Vec<u8>, FsError> {
        let mut data = vec![0u8; shape.pages() as usize * BLOCK_SIZE];
        for (i, chunk) in data.chunks_mut(BLOCK_SIZE).enumerate() {
            let index = first + i as u64;
            if let Some(p) = stage.pages.get(&index) {
                chunk.copy_from_slice(&p[..]);
            } else if let Some(old) = old {
                chunk.copy_from_slice(&old[i * BLOCK_SIZE..(i + 1) * BLOCK_SIZE]);
            } else if self.block_addr(ino, index)? != NULL_ADDR {
                chunk.copy_from_slice(&self.load_page(ino, index)?[..]);
            }
        }
        Ok(data)
    }

    /// Compresses a cluster's bytes (host CPU time charged): the blocks to store, or
    /// `None` when that would not save a block.
    fn pack_cluster(
        &mut self,
        ino: u32,
        cluster: u64,
        shape: ClusterShape,
        data: &[u8],
    ) -> Result<Option<Vec<u8>>, FsError> {
        // The inode's own algorithm (the mount option only chooses it for new files).
        let kind = shape.codec(ino)?;
        let (compress_ns, _) = self.cfg.compress.page_cost_of(kind)?;
        self.now_ns += compress_ns * shape.pages();
        compress::compress_cluster(kind, data, shape.chksum)
            .map_err(|e| corrupt(format!("inode {ino} cluster {cluster}: {e}")))
    }

    /// A compressed cluster written raw again (it no longer compresses, or no longer
    /// fills the file): its slots cleared, then the pages inside the file written.
    fn decompress_in_place(
        &mut self,
        ino: u32,
        cluster: u64,
        shape: ClusterShape,
        data: &[u8],
    ) -> Result<(), FsError> {
        let first = cluster << shape.log;
        let size = self.inode_u64(ino, OFF_SIZE)?;
        let mut pages = BTreeMap::new();
        for (i, chunk) in data.chunks(BLOCK_SIZE).enumerate() {
            let index = first + i as u64;
            if index * (BLOCK_SIZE as u64) < size || chunk.iter().any(|&b| b != 0) {
                let mut p = zero_block();
                p.copy_from_slice(chunk);
                pages.insert(index, p);
            }
        }
        self.clear_cluster(ino, cluster, shape)?;
        self.write_raw_pages(ino, pages)
    }

    /// Writes pages as plain blocks of a raw cluster, out of place (`f2fs_write_raw_pages`).
    fn write_raw_pages(
        &mut self,
        ino: u32,
        pages: BTreeMap<u64, Box<Block>>,
    ) -> Result<(), FsError> {
        if pages.is_empty() {
            return Ok(());
        }
        let log = self.data_log(ino)?;
        self.compress_metrics.clusters_raw += 1;
        for (index, page) in pages {
            self.store_page_out_of_place(ino, index, &page, log)?;
        }
        Ok(())
    }

    /// Clears every slot of a cluster (its blocks invalidated, counts kept).
    pub(crate) fn clear_cluster(
        &mut self,
        ino: u32,
        cluster: u64,
        shape: ClusterShape,
    ) -> Result<(), FsError> {
        let before = self.cluster_compr_slots(ino, cluster, shape)?;
        for d in self
            .cluster_slots(ino, cluster, shape, false)?
            .into_iter()
            .flatten()
        {
            self.set_addr(ino, d, NULL_ADDR)?;
        }
        self.add_compr_blocks(ino, -(before as i64))
    }

    /// `COMPRESS_ADDR` and `NEW_ADDR` slots of a compressed cluster (0 for a raw one):
    /// its share of `i_compr_blocks`.
    fn cluster_compr_slots(
        &mut self,
        ino: u32,
        cluster: u64,
        shape: ClusterShape,
    ) -> Result<u64, FsError> {
        let slots = self.cluster_slots(ino, cluster, shape, false)?;
        let mut addrs = Vec::with_capacity(slots.len());
        for d in slots {
            addrs.push(d.map_or(Ok(NULL_ADDR), |d| self.slot_addr(d))?);
        }
        if addrs[0] != COMPRESS_ADDR {
            return Ok(0);
        }
        Ok(addrs
            .iter()
            .filter(|&&a| a == COMPRESS_ADDR || a == NEW_ADDR)
            .count() as u64)
    }

    fn add_compr_blocks(&mut self, ino: u32, delta: i64) -> Result<(), FsError> {
        if delta == 0 {
            return Ok(());
        }
        let v = self.inode_u64(ino, OFF_COMPR_BLOCKS)?;
        self.set_inode_u64(ino, OFF_COMPR_BLOCKS, v.saturating_add_signed(delta))
    }

    /// `f2fs_write_compressed_pages`: the compressed blocks to new blocks of the cold
    /// data log, then the slots: `COMPRESS_ADDR`, the blocks, `NEW_ADDR` for the rest.
    fn write_compressed(
        &mut self,
        ino: u32,
        cluster: u64,
        shape: ClusterShape,
        blocks: &[u8],
    ) -> Result<(), FsError> {
        self.ensure_space()?;
        let before = self.cluster_compr_slots(ino, cluster, shape)?;
        let slots: Vec<Dnode> = self
            .cluster_slots(ino, cluster, shape, true)?
            .into_iter()
            .map(|d| d.ok_or_else(|| corrupt("node path vanished")))
            .collect::<Result<_, _>>()?;
        let n = blocks.len() / BLOCK_SIZE;
        let log = CURSEG_COLD_DATA;
        let temp = Some(super::log_temperature(log));
        let mut new = Vec::with_capacity(n);
        for (i, chunk) in blocks.chunks(BLOCK_SIZE).enumerate() {
            let d = slots[i + 1];
            let sum = Summary {
                nid: d.nid,
                version: 0,
                ofs_in_node: d.ofs_in_node,
            };
            let addr = self.alloc_block(log, sum)?;
            self.write_blocks(addr as u64, chunk, temp, BlockKind::Data)?;
            self.metrics.per_log_blocks[log] += 1;
            new.push(addr);
        }
        // Ordering: the blocks were handed to the device before any slot names them.
        self.set_addr(ino, slots[0], COMPRESS_ADDR)?;
        for (i, &d) in slots[1..].iter().enumerate() {
            let addr = new.get(i).copied().unwrap_or(NEW_ADDR);
            self.set_addr(ino, d, addr)?;
        }
        let after = shape.pages() - n as u64;
        self.add_compr_blocks(ino, after as i64 - before as i64)?;
        let m = &mut self.compress_metrics;
        m.clusters_compressed += 1;
        m.compressed_blocks_written += n as u64;
        m.blocks_saved += shape.pages() - n as u64;
        Ok(())
    }

    /// Truncation of a compressed file from page `from`: a compressed cluster cut inside
    /// is decompressed, cleared and its kept pages written again (raw: it no longer
    /// fills the file); whole clusters past `from` are cleared as a unit.
    pub(crate) fn truncate_clusters_from(&mut self, ino: u32, from: u64) -> Result<(), FsError> {
        self.flush_cluster_stage()?;
        let shape = self.cluster_shape(ino)?;
        let cluster = from >> shape.log;
        let first = cluster << shape.log;
        if from > first {
            if let Some(old) = self.read_compressed_cluster(ino, cluster, shape)? {
                self.clear_cluster(ino, cluster, shape)?;
                let log = self.data_log(ino)?;
                for i in 0..(from - first) as usize {
                    let mut p = zero_block();
                    p.copy_from_slice(&old[i * BLOCK_SIZE..(i + 1) * BLOCK_SIZE]);
                    self.store_page_out_of_place(ino, first + i as u64, &p, log)?;
                }
            }
        }
        // Every compressed cluster wholly past `from`: i_compr_blocks loses its slots.
        let size = self.inode_u64(ino, OFF_SIZE)?;
        let end = size.div_ceil(BLOCK_SIZE as u64).max(from);
        let mut c = from.div_ceil(shape.pages());
        while c << shape.log < end {
            let n = self.cluster_compr_slots(ino, c, shape)?;
            self.add_compr_blocks(ino, -(n as i64))?;
            c += 1;
        }
        Ok(())
    }

    /// `F2FS_IOC_COMPRESS_FILE` (`compress_mode=user`): rewrites every full cluster of
    /// the file compressed where that saves a block.
    pub fn compress_file(&mut self, ino: u32) -> Result<(), FsError> {
        self.check_file(ino)?;
        if self.encoding(ino)? != super::pagemap::Encoding::Compressed {
            return Err(FsError::Invalid(format!("inode {ino} is not compressed")));
        }
        self.balanced("compress_file", |fs| {
            let shape = fs.cluster_shape(ino)?;
            let size = fs.inode_u64(ino, OFF_SIZE)?;
            let clusters = size.div_ceil(BLOCK_SIZE as u64) >> shape.log;
            for c in 0..clusters {
                let first = c << shape.log;
                let old = fs.read_compressed_cluster(ino, c, shape)?;
                if old.is_some() {
                    continue;
                }
                let stage = ClusterStage {
                    ino,
                    cluster: c,
                    pages: BTreeMap::new(),
                };
                let data = fs.cluster_bytes(ino, first, shape, &stage, None)?;
                if let Some(blocks) = fs.pack_cluster(ino, c, shape, &data)? {
                    fs.clear_cluster(ino, c, shape)?;
                    fs.write_compressed(ino, c, shape, &blocks)?;
                }
            }
            Ok(())
        })
    }

    /// The compression layer's counters.
    pub fn compress_metrics(&self) -> CompressMetrics {
        self.compress_metrics
    }

    /// `i_compr_blocks` of an inode (0 without the attribute).
    pub fn compr_blocks(&mut self, ino: u32) -> Result<u64, FsError> {
        let node = self.inode_node(ino)?;
        Ok(super::le64_at(node, OFF_COMPR_BLOCKS))
    }

    /// Whether page `index`'s slot is a cluster's `COMPRESS_ADDR` head (for checkers).
    pub(crate) fn is_cluster_head(&mut self, ino: u32, index: u64) -> Result<bool, FsError> {
        Ok(self.block_addr(ino, index)? == COMPRESS_ADDR)
    }

    /// Refuses a plain write into a compressed cluster's slots (defrag, atomic commits):
    /// only the cluster code changes a compressed cluster.
    pub(crate) fn check_raw_cluster(&mut self, ino: u32, index: u64) -> Result<(), FsError> {
        if self.encoding(ino)? != super::pagemap::Encoding::Compressed {
            return Ok(());
        }
        let shape = self.cluster_shape(ino)?;
        let head = index & !(shape.pages() - 1);
        if self.is_cluster_head(ino, head)? {
            return Err(FsError::Unsupported(format!(
                "inode {ino} page {index}: a compressed cluster is rewritten as a unit"
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creation_rule_follows_the_kernel() {
        let cfg = CompressConfig::phone();
        assert!(compresses_at_create(&cfg, false, "a.txt", false));
        assert!(!compresses_at_create(&cfg, false, "a.jpg", false));
        assert!(compresses_at_create(&cfg, true, "a.jpg", false));
        assert!(
            !compresses_at_create(&cfg, true, "a.db", true),
            "hot files never"
        );
        let all = CompressConfig::all_files();
        assert!(compresses_at_create(&all, false, "x", false));
        assert!(!compresses_at_create(
            &CompressConfig::default(),
            true,
            "a.txt",
            false
        ));
    }

    #[test]
    fn only_clusters_inside_the_file_compress() {
        // 4-page cluster at pages 4..8.
        assert!(!cluster_may_compress(0, Some(6), 4, 4));
        assert!(cluster_may_compress(0, Some(7), 4, 4));
        assert!(cluster_may_compress(7 * 4096 + 1, None, 4, 4));
        assert!(!cluster_may_compress(7 * 4096, None, 4, 4));
    }

    #[test]
    fn config_round_trips_and_validates() {
        let cfg = CompressConfig::phone();
        let json = serde_json::to_string(&cfg).unwrap();
        assert_eq!(serde_json::from_str::<CompressConfig>(&json).unwrap(), cfg);
        cfg.validate().unwrap();
        let bad = CompressConfig {
            log_cluster_size: 9,
            ..CompressConfig::phone()
        };
        assert!(bad
            .validate()
            .unwrap_err()
            .to_string()
            .contains("log_cluster_size"));
        let sd = CompressConfig {
            cpu: Cpu::Snapdragon865,
            ..CompressConfig::phone()
        };
        assert!(sd.validate().is_err(), "no cited lz4 figure on the SD865");
    }
}
