//! MedFS's delta-chunk maintenance (DCM; seed-systems.md §A "DCM", "BGRes"): deltas that
//! are not inlined (too large for the inode, no room, or evicted by DCI) go to a hidden
//! per-file **pseudo file**: page 0 is the meta page, pages 1..=N (N ≤ 255) are compact
//! pages packing deltas.
//!
//! On disk:
//!
//! - The owner (the file whose pages have DCM deltas) carries [`MEDFS_DCM_FL`] in
//!   `i_flags` and the pseudo file's inode number (the source's 4-byte `meta_id`) in
//!   `i_current_depth` (for a regular file the kernel's `i_gc_failures`, used only by
//!   pinned files; the source's place for `meta_id` is not recorded).
//! - The pseudo file is a regular inode with one link and no dentry, [`MEDFS_PSEUDO_FL`]
//!   in `i_flags` and `i_pino` naming the owner; our full verification reaches it from
//!   the owner. `fsck.f2fs` would call it unreachable: [`F2fs::restore_deltas`] removes
//!   every pseudo file.
//! - **Meta page**: byte 0 the number of compact pages (ours; the source's count field is
//!   not recorded), then per compact page `CN` (1 B, deltas in it), `FS` (2 B LE, free
//!   bytes), `PI` (4 B LE, its page index in the pseudo file), then `DO`: 4 B LE original
//!   page index per delta, in the order of the compact page's records.
//! - **Compact page**: records `[2 B LE size][delta bytes]` from byte 0, zeros after.
//!
//! A new delta for a page replaces its old one (the record is removed and the page
//! compacted), then goes to the first compact page with `FS > clen + 2`, else a new one
//! ([`policy::dcm_place`]). Pseudo-file pages are kept in a bounded in-memory cache (the
//! kernel's page cache for them); dirty ones are written out of place at the owner's
//! fsync (then a flush, and the owner's fsync-marked inode carries their new addresses:
//! `carry.rs`; the pseudo inode itself, fsync-marked ahead of the owner's nodes, only when
//! the entry does not fit), at every checkpoint (before its nodes), or when the cache is
//! over its bound. So every durable state pairs a durable pseudo file with the owner's
//! bases: base < delta < inode.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use flashstack_block::BlockDevice;
use flashstack_codec::lzo1x::decompress_into;

use super::hcluster::{self, Point};
use super::policy::{self, DcmPlace, DcmQuery};
use super::{OFF_FLAGS, OFF_PINO};
use crate::codec::{le32_at, put_le32_at, zero_block, Block};
use crate::consts::*;
use crate::fs::attr::NewInode;
use crate::fs::data::{OFF_BLOCKS, OFF_DEPTH, OFF_INLINE, OFF_SIZE};
use crate::fs::pagemap::Stored;
use crate::fs::{corrupt, F2fs, FsError};

/// `i_flags` bit of a file whose pages have deltas in a DCM pseudo file (ours).
pub const MEDFS_DCM_FL: u32 = 0x0200_0000;
/// `i_flags` bit of a DCM pseudo file (ours).
pub const MEDFS_PSEUDO_FL: u32 = 0x0400_0000;
/// Name kept in the pseudo inode (no directory names it).
const PSEUDO_NAME: &str = ".medfs-dcm";
/// Bytes of the meta page's count of compact pages.
const META_HEADER_BYTES: usize = 1;
/// `CN` + `FS` + `PI` of one compact page's meta entry.
const ENTRY_HEADER_BYTES: usize = 7;
/// A compact-page record's size field.
pub const SIZE_FIELD_BYTES: usize = 2;

/// One compact page as the meta page describes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompactEntry {
    /// `PI`: the compact page's page index in the pseudo file.
    pub pi: u32,
    /// `FS`: free bytes of the compact page.
    pub free: u16,
    /// `DO`: original page index of each delta, in record order.
    pub indices: Vec<u32>,
}

/// A decoded meta page.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Meta {
    pub pages: Vec<CompactEntry>,
}

impl Meta {
    pub fn encoded_bytes(&self) -> usize {
        META_HEADER_BYTES
            + self
                .pages
                .iter()
                .map(|e| ENTRY_HEADER_BYTES + 4 * e.indices.len())
                .sum::<usize>()
    }

    pub fn deltas(&self) -> usize {
        self.pages.iter().map(|e| e.indices.len()).sum()
    }

    /// (entry, position) of page `index`'s delta.
    pub fn find(&self, index: u64) -> Option<(usize, usize)> {
        self.pages.iter().enumerate().find_map(|(i, e)| {
            e.indices
                .iter()
                .position(|&o| u64::from(o) == index)
                .map(|p| (i, p))
        })
    }

    /// Every original page index, in meta order.
    pub fn indices(&self) -> Vec<u64> {
        self.pages
            .iter()
            .flat_map(|e| e.indices.iter().map(|&o| u64::from(o)))
            .collect()
    }

    pub fn encode(&self) -> Box<Block> {
        let mut b = zero_block();
        self.encode_into(&mut b);
        b
    }

    /// [`Meta::encode`] over `b`, whatever it held (every byte is written).
    pub fn encode_into(&self, b: &mut Block) {
        assert!(self.encoded_bytes() <= BLOCK_SIZE, "meta page overflows");
        b.fill(0);
        b[0] = self.pages.len() as u8;
        let mut p = META_HEADER_BYTES;
        for e in &self.pages {
            b[p] = e.indices.len() as u8;
            b[p + 1..p + 3].copy_from_slice(&e.free.to_le_bytes());
            b[p + 3..p + 7].copy_from_slice(&e.pi.to_le_bytes());
            p += ENTRY_HEADER_BYTES;
            for &o in &e.indices {
                b[p..p + 4].copy_from_slice(&o.to_le_bytes());
                p += 4;
            }
        }
    }

    /// Decodes and checks a meta page of a pseudo file of `file_pages` pages: at most
    /// `max_pages` compact pages, each `PI` a distinct page of the file after the meta
    /// page, `FS` within a page, no original page twice.
    pub fn decode(b: &[u8], max_pages: usize, file_pages: u64) -> Result<Meta, String> {
        let n = b[0] as usize;
        if n > max_pages {
            return Err(format!("{n} compact pages, more than {max_pages}"));
        }
        let mut meta = Meta::default();
        let mut seen_pi = BTreeSet::new();
        let mut seen = BTreeSet::new();
        let mut p = META_HEADER_BYTES;
        for k in 0..n {
            if p + ENTRY_HEADER_BYTES > b.len() {
                return Err(format!("entry {k} runs past the meta page"));
            }
            let cn = b[p] as usize;
            let free = u16::from_le_bytes([b[p + 1], b[p + 2]]);
            let pi = le32_at(b, p + 3);
            p += ENTRY_HEADER_BYTES;
            if pi == 0 || u64::from(pi) >= file_pages || !seen_pi.insert(pi) {
                return Err(format!(
                    "entry {k}: PI {pi} is not a distinct compact page of the pseudo file"
                ));
            }
            if usize::from(free) > BLOCK_SIZE || p + 4 * cn > b.len() {
                return Err(format!("entry {k}: FS {free} or CN {cn} out of range"));
            }
            let mut indices = Vec::with_capacity(cn);
            for _ in 0..cn {
                let o = le32_at(b, p);
                p += 4;
                if !seen.insert(o) {
                    return Err(format!("page {o} has two DCM deltas"));
                }
                indices.push(o);
            }
            meta.pages.push(CompactEntry { pi, free, indices });
        }
        Ok(meta)
    }
}

/// The `n` records of a compact page whose meta entry says `free` bytes are free.
pub fn decode_compact(page: &[u8], n: usize, free: u16) -> Result<Vec<Vec<u8>>, String> {
    let mut out = Vec::with_capacity(n);
    walk_compact(page, n, free, |_, r| out.push(page[r].to_vec()))?;
    Ok(out)
}

/// Checks the `n` records of a compact page whose meta entry says `free` bytes are free,
/// calling `each` with every record's number and the range of its delta bytes (after
/// its size field). What [`decode_compact`] checks, without copying a record.
fn walk_compact(
    page: &[u8],
    n: usize,
    free: u16,
    mut each: impl FnMut(usize, std::ops::Range<usize>),
) -> Result<(), String> {
    let mut p = 0;
    for k in 0..n {
        if p + SIZE_FIELD_BYTES > page.len() {
            return Err(format!("record {k} runs past the compact page"));
        }
        let len = u16::from_le_bytes([page[p], page[p + 1]]) as usize;
        p += SIZE_FIELD_BYTES;
        if len == 0 || p + len > page.len() {
            return Err(format!("record {k}: size {len} out of range"));
        }
        each(k, p..p + len);
        p += len;
    }
    if BLOCK_SIZE - p != usize::from(free) {
        return Err(format!(
            "FS {free} but the records leave {} bytes",
            BLOCK_SIZE - p
        ));
    }
    Ok(())
}

/// Puts record `delta` at byte `at` of a compact page (the end of its records) and zeros
/// the rest: the page [`encode_compact`] makes of its records and `delta`. Returns its
/// free bytes.
fn append_compact(page: &mut Block, at: usize, delta: &[u8]) -> u16 {
    let end = at + SIZE_FIELD_BYTES + delta.len();
    page[at..at + SIZE_FIELD_BYTES].copy_from_slice(&(delta.len() as u16).to_le_bytes());
    page[at + SIZE_FIELD_BYTES..end].copy_from_slice(delta);
    page[end..].fill(0);
    (BLOCK_SIZE - end) as u16
}

/// Takes the record whose delta bytes are `r` out of a compact page with `free` bytes
/// free: the records after it move down and the rest is zeroed, the page
/// [`encode_compact`] makes of the other records. Returns its free bytes.
fn remove_compact(page: &mut Block, r: std::ops::Range<usize>, free: u16) -> u16 {
    let start = r.start - SIZE_FIELD_BYTES;
    let used = BLOCK_SIZE - usize::from(free);
    let new_used = used - (r.end - start);
    page.copy_within(r.end..used, start);
    page[new_used..].fill(0);
    (BLOCK_SIZE - new_used) as u16
}

/// A compact page holding `records`, and its free bytes.
#[cfg(test)]
pub fn encode_compact(records: &[Vec<u8>]) -> (Box<Block>, u16) {
    let mut b = zero_block();
    let mut p = 0;
    for r in records {
        b[p..p + SIZE_FIELD_BYTES].copy_from_slice(&(r.len() as u16).to_le_bytes());
        p += SIZE_FIELD_BYTES;
        b[p..p + r.len()].copy_from_slice(r);
        p += r.len();
    }
    (b, (BLOCK_SIZE - p) as u16)
}

/// A pseudo-file page in DCM's page cache.
#[derive(Clone)]
struct CachedPage {
    age: u64,
    dirty: bool,
    bytes: Box<Block>,
    /// Page 0 only: `bytes` decoded by [`Meta::decode`], with the arguments it was
    /// checked against. It lives in the same entry as the bytes and is set only together
    /// with them (from the bytes read, or from the [`Meta`] the bytes were encoded from),
    /// so it is never older than the page it decodes: every change to a cached meta page
    /// goes through [`DcmState::touch`], which replaces both.
    decoded: Option<DecodedMeta>,
}

/// A decoded meta page and the pseudo file's size and page bound it was checked against
/// (a size or bound other than these is decoded again from the cached bytes).
#[derive(Clone)]
struct DecodedMeta {
    meta: Arc<Meta>,
    file_pages: u64,
    max_pages: usize,
}

impl DecodedMeta {
    fn fits(&self, file_pages: u64, max_pages: usize) -> bool {
        self.file_pages == file_pages && self.max_pages == max_pages
    }
}

/// DCM's memory: the pseudo-file page cache (with each cached meta page's decoding), the
/// files holding DCM deltas this session, the per-inode call counts HCluster clusters, and
/// the current centroids. It belongs to one mount ([`F2fs`] builds it empty): a remount
/// or the mount after a power cut starts from flash.
#[derive(Default)]
pub(crate) struct DcmState {
    /// (pseudo ino, page) → the page.
    cache: BTreeMap<(u32, u32), CachedPage>,
    ages: BTreeMap<u64, (u32, u32)>,
    next_age: u64,
    /// Owners with a pseudo file met this session (BGRes visits these).
    owners: BTreeSet<u32>,
    /// Per owner, HCluster's point when it last classified the file (a DCM store's
    /// admission), or when the file's first DCM delta came without a classification:
    /// the source's "feature snapshots stored for files that hold DCM deltas", which
    /// BGRes clusters. They outlive the in-memory inode, whose counts start over.
    snapshots: BTreeMap<u32, (u64, u64)>,
    /// (write calls, read calls) per inode since it was last brought into memory
    /// (HCluster's features; an entry goes when its inode is freed or evicted).
    counts: BTreeMap<u32, (u64, u64)>,
    centroids: Option<[Point; 4]>,
    /// HCluster counts the system calls the layer above reports, not calls into F2FS.
    calls_from_above: bool,
    /// The copy of a page [`F2fs::dcm_flush`] writes (kept: no allocation per write).
    flush_copy: Option<Box<Block>>,
}

impl DcmState {
    /// Puts `bytes` in the cache as page `key` (its decoding, for a meta page, is
    /// `decoded` or none), made the newest; a dirty page stays dirty.
    fn touch(
        &mut self,
        key: (u32, u32),
        dirty: bool,
        bytes: Box<Block>,
        decoded: Option<DecodedMeta>,
    ) {
        let age = self.next_age;
        self.next_age += 1;
        let was_dirty = match self.cache.remove(&key) {
            Some(old) => {
                self.ages.remove(&old.age);
                old.dirty
            }
            None => false,
        };
        let page = CachedPage {
            age,
            dirty: dirty || was_dirty,
            bytes,
            decoded,
        };
        self.cache.insert(key, page);
        self.ages.insert(age, key);
    }

    /// A cached page made the newest, its bytes and dirtiness kept: what `touch` with
    /// the page's own bytes does, without re-inserting them (a hit is the common case).
    fn refresh(&mut self, key: (u32, u32)) -> Option<&mut CachedPage> {
        let age = self.next_age;
        let entry = self.cache.get_mut(&key)?;
        self.ages.remove(&entry.age);
        entry.age = age;
        self.next_age += 1;
        self.ages.insert(age, key);
        Some(entry)
    }

    /// A cached page whose bytes were just changed in place, as `touch` with those
    /// bytes, dirty, makes it: the newest, dirty, no decoding (a compact page has none).
    fn mark_written(&mut self, key: (u32, u32)) {
        if let Some(entry) = self.refresh(key) {
            entry.dirty = true;
            entry.decoded = None;
        }
    }

    /// Drops every cached page of `pseudo` from page `from` on (its meta page too when
    /// `from` is 0), dirty or not.
    fn forget_from(&mut self, pseudo: u32, from: u32) {
        let keys: Vec<(u32, u32)> = self
            .cache
            .range((pseudo, from)..=(pseudo, u32::MAX))
            .map(|(k, _)| *k)
            .collect();
        for k in keys {
            if let Some(page) = self.cache.remove(&k) {
                self.ages.remove(&page.age);
            }
        }
    }

    fn forget_file(&mut self, pseudo: u32) {
        self.forget_from(pseudo, 0);
    }

    fn dirty_pages(&self, pseudo: u32) -> Vec<u32> {
        self.cache
            .range((pseudo, 0)..=(pseudo, u32::MAX))
            .filter(|(_, v)| v.dirty)
            .map(|(k, _)| k.1)
            .collect()
    }

    fn point(&self, ino: u32) -> Point {
        let (w, r) = self.counts.get(&ino).copied().unwrap_or_default();
        (w as f64, r as f64)
    }

    /// The point BGRes clusters `owner` by: its snapshot, else (an owner met from an
    /// earlier session, never classified since) its counts now.
    fn bgres_point(&self, owner: u32) -> Point {
        match self.snapshots.get(&owner) {
            Some(&(w, r)) => (w as f64, r as f64),
            None => self.point(owner),
        }
    }

    /// Records `owner`'s counts now as its snapshot (`always`: even over an older one).
    fn snapshot(&mut self, owner: u32, always: bool) {
        let now = self.counts.get(&owner).copied().unwrap_or_default();
        match always {
            true => {
                self.snapshots.insert(owner, now);
            }
            false => {
                self.snapshots.entry(owner).or_insert(now);
            }
        }
    }

    fn centroids(&self, cfg: &policy::DeltaConfig) -> [Point; 4] {
        self.centroids
            .unwrap_or_else(|| hcluster::from_tenths(&cfg.hcluster_centroids_tenths))
    }
}

impl<D: BlockDevice> F2fs<D> {
    /// A read or write call into the file system for `ino`: HCluster's features unless
    /// a layer above reports the system calls ([`F2fs::count_calls_from_above`]).
    pub(crate) fn note_file_call(&mut self, ino: u32, write: bool) {
        // FPC's background re-packing counts these calls in either case.
        self.fpc_note_call(ino, write);
        if !self.delta_state.dcm.calls_from_above {
            self.hcluster_count(ino, write);
        }
    }

    /// From now on HCluster counts the read and write system calls a layer above F2FS
    /// (the page cache) reports through [`F2fs::note_vfs_call`], hits in that layer
    /// included, as the source counts `__vfs_read` / `__vfs_write`; calls into F2FS
    /// (the cache's misses and writebacks) no longer count.
    pub fn count_calls_from_above(&mut self) {
        self.delta_state.dcm.calls_from_above = true;
    }

    /// Back to counting the calls into F2FS (the layer above is gone).
    pub fn count_own_calls(&mut self) {
        self.delta_state.dcm.calls_from_above = false;
    }

    /// A read or write system call on `ino`, reported by the layer above.
    pub fn note_vfs_call(&mut self, ino: u32, write: bool) {
        self.hcluster_count(ino, write);
    }

    fn hcluster_count(&mut self, ino: u32, write: bool) {
        if !self.cfg.delta.mode.hcluster_on() {
            return;
        }
        let c = self.delta_state.dcm.counts.entry(ino).or_default();
        match write {
            true => c.0 += 1,
            false => c.1 += 1,
        }
    }

    /// The kernel evicts the in-memory inodes nothing holds (`echo 2` or `3 >
    /// /proc/sys/vm/drop_caches` after their pages went), and the source keeps
    /// HCluster's call counts in the in-memory inode: they start over when the file is
    /// next opened. So here every inode's counts go unless it is open or in `held` (the
    /// inodes the layer above still keeps pages or state of: dirty pages pin an inode),
    /// or dirty here. BGRes keeps clustering the file by its snapshot.
    pub fn evict_unheld_inodes(&mut self, held: &BTreeSet<u32>) {
        let open = &self.open_counts;
        // A dirty inode is not evicted (the kernel writes it back first).
        let (dirty, lazy) = (&self.dirty_nodes, &self.lazy_times);
        let counts = &mut self.delta_state.dcm.counts;
        let before = counts.len();
        counts.retain(|ino, _| {
            open.contains_key(ino)
                || held.contains(ino)
                || dirty.contains(ino)
                || lazy.contains(ino)
        });
        self.metrics.delta.hcluster_counts_evicted += (before - counts.len()) as u64;
    }

    /// HCluster's point of `ino`: (write calls, read calls) since its inode was last brought
    /// into memory, zeros when HCluster is off or the file saw no call since.
    pub fn hcluster_calls(&self, ino: u32) -> (u64, u64) {
        self.delta_state
            .dcm
            .counts
            .get(&ino)
            .copied()
            .unwrap_or_default()
    }

    /// Whether HCluster, with its current centroids, classes `ino` read-cold/write-hot
    /// (the only class DCM admits).
    pub fn hcluster_read_cold_write_hot(&self, ino: u32) -> bool {
        let dcm = &self.delta_state.dcm;
        hcluster::read_cold_write_hot(dcm.point(ino), &dcm.centroids(&self.cfg.delta))
    }

    fn has_dcm(&mut self, ino: u32) -> Result<bool, FsError> {
        Ok(le32_at(&self.node(ino)?[..], OFF_FLAGS) & MEDFS_DCM_FL != 0)
    }

    pub(crate) fn dcm_corruption(&mut self, ino: u32, value: u64, rule: String) -> FsError {
        let field = "i_current_depth (MedFS DCM pseudo file)";
        self.delta_corruption(ino, field, value, format!("DCM: {rule}"))
    }

    /// The owner's pseudo file (checked: an inode in use, flagged as a pseudo file of
    /// this owner), if it has one.
    pub(crate) fn dcm_pseudo_of(&mut self, owner: u32) -> Result<Option<u32>, FsError> {
        let node = self.node(owner)?;
        if le32_at(&node[..], OFF_FLAGS) & MEDFS_DCM_FL == 0 {
            return Ok(None);
        }
        let id = le32_at(&node[..], OFF_DEPTH);
        let in_use = id != 0
            && id != owner
            && id < self.max_nid()
            && self.nat_get(id).is_ok_and(|e| e.block_addr != NULL_ADDR);
        if !in_use {
            let rule = "meta_id names no inode in use".to_string();
            return Err(self.dcm_corruption(owner, u64::from(id), rule));
        }
        let node = self.node(id)?;
        // `i_pino` read in place: decoding the whole inode (its 923 address slots) for
        // one word was most of this function's cost.
        let ok = le32_at(&node[..], OFF_FLAGS) & MEDFS_PSEUDO_FL != 0
            && le32_at(&node[..], OFF_PINO) == owner
            && crate::node::NodeFooter::decode(node).ino == id;
        if !ok {
            let rule = format!("inode {id} is not this file's pseudo file");
            return Err(self.dcm_corruption(owner, u64::from(id), rule));
        }
        self.delta_state.dcm.owners.insert(owner);
        Ok(Some(id))
    }

    /// Page `page` of a pseudo file, from the cache or read (charged, counted).
    fn dcm_read_page(&mut self, pseudo: u32, page: u32) -> Result<Box<Block>, FsError> {
        self.dcm_cache_page(pseudo, page)?;
        Ok(self.dcm_cached_mut((pseudo, page)).clone())
    }

    /// Makes page `page` of a pseudo file the cache's newest, read on a miss (charged,
    /// counted): [`F2fs::dcm_read_page`] without copying the page out.
    fn dcm_cache_page(&mut self, pseudo: u32, page: u32) -> Result<(), FsError> {
        if self.delta_state.dcm.refresh((pseudo, page)).is_some() {
            return Ok(());
        }
        self.metrics.delta.dcm_page_reads += 1;
        let b = self.load_page(pseudo, u64::from(page))?;
        self.delta_state.dcm.touch((pseudo, page), false, b, None);
        // The page just put is the newest, so the trim (which keeps at least two
        // pages) does not drop it.
        self.dcm_trim()
    }

    /// The bytes of a page [`F2fs::dcm_cache_page`] has just cached.
    fn dcm_cached_mut(&mut self, key: (u32, u32)) -> &mut Box<Block> {
        &mut self
            .delta_state
            .dcm
            .cache
            .get_mut(&key)
            .expect("cached by dcm_cache_page")
            .bytes
    }

    /// Checks compact page `e` of `pseudo` (cached by the caller), returning the range of
    /// record `pos`'s delta bytes if asked for.
    fn dcm_check_compact(
        &mut self,
        owner: u32,
        pseudo: u32,
        e: (u32, usize, u16),
        pos: Option<usize>,
    ) -> Result<Option<std::ops::Range<usize>>, FsError> {
        let (pi, n, free) = e;
        let mut found = None;
        let page = self.dcm_cached_mut((pseudo, pi));
        match walk_compact(&page[..], n, free, |k, r| {
            if Some(k) == pos {
                found = Some(r)
            }
        }) {
            Ok(()) => Ok(found),
            Err(rule) => {
                let rule = format!("compact page {pi}: {rule}");
                Err(self.dcm_corruption(owner, u64::from(pseudo), rule))
            }
        }
    }

    /// The decoded meta page `meta` of `pseudo`, to be changed and written back with
    /// [`F2fs::dcm_write_meta`]: the cache's share of the decoding is dropped (the bytes
    /// stay; a load before the write would decode them again), so that a decoding no
    /// one else holds is taken as it is rather than cloned (one allocation per compact
    /// page).
    fn dcm_own_meta(&mut self, pseudo: u32, meta: Arc<Meta>) -> Meta {
        if let Some(page) = self.delta_state.dcm.cache.get_mut(&(pseudo, 0)) {
            page.decoded = None;
        }
        Arc::try_unwrap(meta).unwrap_or_else(|shared| Meta::clone(&shared))
    }

    /// Writes compact page `page` (not the meta page: [`F2fs::dcm_write_meta`]) to the
    /// cache, dirty.
    fn dcm_write_page(&mut self, pseudo: u32, page: u32, b: Box<Block>) -> Result<(), FsError> {
        debug_assert_ne!(page, 0, "the meta page is written by dcm_write_meta");
        self.delta_state.dcm.touch((pseudo, page), true, b, None);
        self.dcm_trim()
    }

    /// The pseudo file's size in pages and the bound on compact pages: what a meta page
    /// is checked against.
    fn dcm_meta_bounds(&mut self, pseudo: u32) -> Result<(u64, usize), FsError> {
        let size_pages = self
            .inode_u64(pseudo, OFF_SIZE)?
            .div_ceil(BLOCK_SIZE as u64);
        Ok((size_pages, self.cfg.delta.dcm_max_compact_pages.max(255)))
    }

    /// Writes the meta page (encoded from `meta`) to the cache, dirty, with `meta` as its
    /// decoding: the cache owns the decoded page from here on, and the next load uses it
    /// without decoding the bytes again.
    fn dcm_write_meta(&mut self, pseudo: u32, meta: Meta) -> Result<(), FsError> {
        let (file_pages, max_pages) = self.dcm_meta_bounds(pseudo)?;
        let decoded = DecodedMeta {
            meta: Arc::new(meta),
            file_pages,
            max_pages,
        };
        let st = &mut self.delta_state.dcm;
        match st.refresh((pseudo, 0)) {
            // Encoded over the cached page (no 4 KiB allocation per DCM change): the
            // newest, dirty, with this decoding, as `touch` with new bytes makes it.
            Some(entry) => {
                decoded.meta.encode_into(&mut entry.bytes);
                entry.dirty = true;
                entry.decoded = Some(decoded);
            }
            None => {
                let bytes = decoded.meta.encode();
                st.touch((pseudo, 0), true, bytes, Some(decoded));
            }
        }
        debug_assert!(
            self.delta_state
                .dcm
                .cache
                .get(&(pseudo, 0))
                .is_some_and(|e| {
                    let d = e.decoded.as_ref().expect("just set");
                    Meta::decode(&e.bytes[..], max_pages, file_pages).as_ref() == Ok(&*d.meta)
                }),
            "a meta page DCM writes decodes to what it was encoded from"
        );
        self.dcm_trim()
    }

    /// Keeps the cache within its bound: the oldest page goes (its file's dirty pages
    /// written first if it is dirty).
    fn dcm_trim(&mut self) -> Result<(), FsError> {
        let cap = self.cfg.delta.dcm_cache_pages.max(2);
        while self.delta_state.dcm.cache.len() > cap {
            let Some((&age, &key)) = self.delta_state.dcm.ages.iter().next() else {
                break;
            };
            if self
                .delta_state
                .dcm
                .cache
                .get(&key)
                .is_some_and(|v| v.dirty)
            {
                self.dcm_flush(key.0)?;
            }
            self.delta_state.dcm.ages.remove(&age);
            self.delta_state.dcm.cache.remove(&key);
        }
        Ok(())
    }

    /// The owner's pseudo file and its meta page, decoded and checked. The decoding is
    /// kept with the cached meta page: a hit costs no decode, and a changed pseudo-file
    /// size or compact-page bound decodes the cached bytes again.
    fn dcm_load(&mut self, owner: u32) -> Result<Option<(u32, Arc<Meta>)>, FsError> {
        let Some(pseudo) = self.dcm_pseudo_of(owner)? else {
            return Ok(None);
        };
        let (file_pages, max_pages) = self.dcm_meta_bounds(pseudo)?;
        let decoded = |bytes: &Block| {
            Meta::decode(&bytes[..], max_pages, file_pages).map(|meta| DecodedMeta {
                meta: Arc::new(meta),
                file_pages,
                max_pages,
            })
        };
        let result = match self.delta_state.dcm.refresh((pseudo, 0)) {
            Some(entry) => match &entry.decoded {
                Some(d) if d.fits(file_pages, max_pages) => Ok(d.clone()),
                _ => {
                    let d = decoded(&entry.bytes);
                    entry.decoded = d.as_ref().ok().cloned();
                    d
                }
            },
            None => {
                self.metrics.delta.dcm_page_reads += 1;
                let bytes = self.load_page(pseudo, 0)?;
                let d = decoded(&bytes);
                let keep = d.as_ref().ok().cloned();
                self.delta_state.dcm.touch((pseudo, 0), false, bytes, keep);
                self.dcm_trim()?;
                d
            }
        };
        match result {
            Ok(d) => Ok(Some((pseudo, d.meta))),
            Err(rule) => Err(self.dcm_corruption(owner, u64::from(pseudo), rule)),
        }
    }

    /// The records of compact page `e`, checked.
    fn dcm_records(
        &mut self,
        owner: u32,
        pseudo: u32,
        e: &CompactEntry,
    ) -> Result<Vec<Vec<u8>>, FsError> {
        let page = self.dcm_read_page(pseudo, e.pi)?;
        decode_compact(&page[..], e.indices.len(), e.free).map_err(|rule| {
            let rule = format!("compact page {}: {rule}", e.pi);
            self.dcm_corruption(owner, u64::from(pseudo), rule)
        })
    }

    /// Page `index`'s DCM delta, if it has one.
    pub(crate) fn dcm_delta(&mut self, owner: u32, index: u64) -> Result<Option<Vec<u8>>, FsError> {
        let Some((pseudo, meta)) = self.dcm_load(owner)? else {
            return Ok(None);
        };
        let Some((i, pos)) = meta.find(index) else {
            return Ok(None);
        };
        let mut records = self.dcm_records(owner, pseudo, &meta.pages[i])?;
        Ok(Some(records.swap_remove(pos)))
    }

    /// Whether page `index` has a DCM delta.
    pub(crate) fn dcm_has(&mut self, owner: u32, index: u64) -> Result<bool, FsError> {
        Ok(match self.dcm_load(owner)? {
            Some((_, meta)) => meta.find(index).is_some(),
            None => false,
        })
    }

    /// Removes page `index`'s DCM delta (the compact page compacted); returns whether
    /// there was one.
    pub(crate) fn dcm_remove(&mut self, owner: u32, index: u64) -> Result<bool, FsError> {
        let Some((pseudo, meta)) = self.dcm_load(owner)? else {
            return Ok(false);
        };
        let Some((i, pos)) = meta.find(index) else {
            return Ok(false);
        };
        // The record goes from the cached page in place, the records after it move
        // down and the rest is zeroed: the page `encode_compact` makes of the others.
        let e = &meta.pages[i];
        let (pi, free) = (e.pi, e.free);
        self.dcm_cache_page(pseudo, pi)?;
        let r = self
            .dcm_check_compact(owner, pseudo, (pi, e.indices.len(), free), Some(pos))?
            .expect("a record for every index");
        let free = remove_compact(self.dcm_cached_mut((pseudo, pi)), r, free);
        self.delta_state.dcm.mark_written((pseudo, pi));
        self.dcm_trim()?;
        let mut meta = self.dcm_own_meta(pseudo, meta);
        let e = &mut meta.pages[i];
        e.indices.remove(pos);
        e.free = free;
        self.dcm_write_meta(pseudo, meta)?;
        Ok(true)
    }

    /// Drops the DCM deltas of pages from `from` on (truncation). Not while rolling
    /// forward: the pseudo file may not be replayed yet, and a delta past the end of a
    /// file is never applied (a page written there later drops it).
    pub(crate) fn dcm_drop_from(&mut self, owner: u32, from: u64) -> Result<u64, FsError> {
        // A truncated pseudo file (only eviction truncates one) keeps no cached page past
        // its new end.
        let cut = u32::try_from(from).unwrap_or(u32::MAX);
        self.delta_state.dcm.forget_from(owner, cut);
        if self.rolling_forward || !self.has_dcm(owner)? {
            return Ok(0);
        }
        let Some((_, meta)) = self.dcm_load(owner)? else {
            return Ok(0);
        };
        let mut dropped = 0;
        for index in meta.indices().into_iter().filter(|&i| i >= from) {
            dropped += u64::from(self.dcm_remove(owner, index)?);
        }
        Ok(dropped)
    }

    /// HCluster's class of `ino` now: read-cold/write-hot? (charges the classification)
    fn dcm_read_cold_write_hot(&mut self, ino: u32) -> bool {
        self.now_ns += self.cfg.delta.hcluster_ns;
        let st = &mut self.delta_state.dcm;
        st.snapshot(ino, true);
        hcluster::read_cold_write_hot(st.point(ino), &st.centroids(&self.cfg.delta))
    }

    /// `f2fs_store_delta_in_main`: stores page `index`'s delta in the owner's pseudo file
    /// when [`policy::dcm_admit`] and [`policy::dcm_place`] allow; returns whether it did.
    /// `check_hotness` is false for a delta DCI evicts (the source's `type = 1`).
    pub(crate) fn dcm_store(
        &mut self,
        owner: u32,
        index: u64,
        delta: &[u8],
        check_hotness: bool,
    ) -> Result<bool, FsError> {
        let hot = check_hotness && self.cfg.delta.mode.hcluster_on();
        let q = DcmQuery {
            delta_bytes: delta.len(),
            file_blocks: self.inode_u64(owner, OFF_BLOCKS)?,
            read_cold_write_hot: hot && self.dcm_read_cold_write_hot(owner),
            check_hotness,
        };
        if !policy::dcm_admit(&q, &self.cfg.delta) || index > u64::from(u32::MAX) {
            if hot && !q.read_cold_write_hot {
                self.metrics.delta.dcm_not_hot += 1;
            }
            return Ok(false);
        }
        // An older delta of the page goes first. The caller has usually just removed it:
        // the meta page is loaded once to see (a load only makes the meta page the
        // cache's newest, as the removal's own load would).
        let mut loaded = self.dcm_load(owner)?;
        if loaded
            .as_ref()
            .is_some_and(|(_, m)| m.find(index).is_some())
        {
            drop(loaded);
            self.dcm_remove(owner, index)?;
            loaded = self.dcm_load(owner)?;
        }
        let (frees, encoded_bytes) = match &loaded {
            Some((_, m)) => (
                m.pages.iter().map(|e| usize::from(e.free)).collect(),
                m.encoded_bytes(),
            ),
            None => (Vec::new(), Meta::default().encoded_bytes()),
        };
        let place = policy::dcm_place(&frees, SIZE_FIELD_BYTES + delta.len(), &self.cfg.delta);
        let meta_grows = 4 + if place == DcmPlace::NewPage {
            ENTRY_HEADER_BYTES
        } else {
            0
        };
        if place == DcmPlace::Full || encoded_bytes + meta_grows > BLOCK_SIZE {
            self.metrics.delta.dcm_full += 1;
            return Ok(false);
        }
        let (pseudo, mut meta) = match loaded {
            Some((p, m)) => (p, self.dcm_own_meta(p, m)),
            None => (self.dcm_create(owner)?, Meta::default()),
        };
        let i = match place {
            DcmPlace::Page(i) => {
                // Appended to the cached page in place: the page `encode_compact` makes
                // of its records and this one.
                let e = &meta.pages[i];
                let (pi, free) = (e.pi, e.free);
                self.dcm_cache_page(pseudo, pi)?;
                self.dcm_check_compact(owner, pseudo, (pi, e.indices.len(), free), None)?;
                let at = BLOCK_SIZE - usize::from(free);
                let free = append_compact(self.dcm_cached_mut((pseudo, pi)), at, delta);
                self.delta_state.dcm.mark_written((pseudo, pi));
                self.dcm_trim()?;
                meta.pages[i].free = free;
                i
            }
            _ => {
                let pi = meta.pages.len() as u32 + 1;
                let size = u64::from(pi + 1) * BLOCK_SIZE as u64;
                self.set_inode_u64(pseudo, OFF_SIZE, size)?;
                let mut page = zero_block();
                let free = append_compact(&mut page, 0, delta);
                meta.pages.push(CompactEntry {
                    pi,
                    free,
                    indices: Vec::new(),
                });
                self.dcm_write_page(pseudo, pi, page)?;
                meta.pages.len() - 1
            }
        };
        meta.pages[i].indices.push(index as u32);
        self.dcm_write_meta(pseudo, meta)?;
        self.metrics.delta.dcm_stores += 1;
        // A first delta stored without a classification (DCI's eviction) still gives
        // the file a point for BGRes.
        self.delta_state.dcm.snapshot(owner, false);
        Ok(true)
    }

    /// Makes the owner's pseudo file: a regular inode with no dentry and no inline data,
    /// an empty meta page (in the cache, dirty), the owner pointing at it.
    fn dcm_create(&mut self, owner: u32) -> Result<u32, FsError> {
        let pseudo = self.new_inode_as(owner, PSEUDO_NAME, &NewInode::root_owned(S_IFREG))?;
        // Nothing cached under a new inode's number (eviction forgets; this makes sure).
        self.delta_state.dcm.forget_file(pseudo);
        let node = self.node(pseudo)?;
        node[OFF_INLINE] &= !F2FS_INLINE_DATA;
        let flags = le32_at(&node[..], OFF_FLAGS);
        put_le32_at(&mut node[..], OFF_FLAGS, flags | MEDFS_PSEUDO_FL);
        self.set_inode_u64(pseudo, OFF_SIZE, BLOCK_SIZE as u64)?;
        let node = self.node(owner)?;
        let flags = le32_at(&node[..], OFF_FLAGS);
        put_le32_at(&mut node[..], OFF_FLAGS, flags | MEDFS_DCM_FL);
        put_le32_at(&mut node[..], OFF_DEPTH, pseudo);
        self.dirty_nodes.insert(owner);
        self.dirty_nodes.insert(pseudo);
        self.dcm_write_meta(pseudo, Meta::default())?;
        self.delta_state.dcm.owners.insert(owner);
        self.metrics.delta.dcm_files_created += 1;
        Ok(pseudo)
    }

    /// Removes the owner's pseudo file (its deltas must be folded or dropped) and the
    /// owner's pointer to it. The owner's next fsync checkpoints: a roll-forward of the
    /// owner without its pseudo file would leave the checkpointed pseudo file unreachable.
    fn dcm_destroy(&mut self, owner: u32) -> Result<(), FsError> {
        let Some(pseudo) = self.dcm_pseudo_of(owner)? else {
            return Ok(());
        };
        self.delta_state.dcm.forget_file(pseudo);
        self.since_cp.dcm_uncarried.remove(&pseudo);
        self.evict_inode(pseudo)?;
        let node = self.node(owner)?;
        let flags = le32_at(&node[..], OFF_FLAGS);
        put_le32_at(&mut node[..], OFF_FLAGS, flags & !MEDFS_DCM_FL);
        put_le32_at(&mut node[..], OFF_DEPTH, 0);
        self.dirty_nodes.insert(owner);
        self.since_cp.moved_or_shrunk.insert(owner);
        self.delta_state.dcm.owners.remove(&owner);
        self.delta_state.dcm.snapshots.remove(&owner);
        Ok(())
    }

    /// Folds every DCM delta of `owner` into its base (written out of place) and removes
    /// the pseudo file; returns the deltas folded.
    pub(crate) fn dcm_restore_file(&mut self, owner: u32) -> Result<u64, FsError> {
        let mut folded = 0;
        // Folding writes pages, which never moves an inline delta here (a page with a
        // base has its slot before the zone); the loop only makes sure.
        for _ in 0..4 {
            let Some((_, meta)) = self.dcm_load(owner)? else {
                return Ok(folded);
            };
            let mut any = false;
            for index in meta.indices() {
                if !matches!(self.resolve(owner, index)?, Stored::Delta(_)) {
                    continue;
                }
                let page = self.load_page(owner, index)?;
                let log = self.data_log(owner)?;
                // Drops the delta (DCM or inline) of this page: the new block is its base.
                self.store_page_out_of_place(owner, index, &page, log)?;
                folded += 1;
                any = true;
            }
            if !any {
                break;
            }
        }
        self.dcm_destroy(owner)?;
        self.metrics.delta.merges += folded;
        Ok(folded)
    }

    /// An inode is being freed: its pseudo file goes with it, and if it is a pseudo file,
    /// its cached pages (an inode later given the same number starts with none).
    pub(crate) fn dcm_on_evict(&mut self, ino: u32) -> Result<(), FsError> {
        self.delta_state.dcm.counts.remove(&ino);
        self.delta_state.dcm.snapshots.remove(&ino);
        self.delta_state.dcm.forget_file(ino);
        if self.has_dcm(ino)? {
            self.dcm_destroy(ino)?;
        }
        Ok(())
    }

    /// Writes a pseudo file's dirty pages (out of place, as a file's writeback).
    pub(crate) fn dcm_flush(&mut self, pseudo: u32) -> Result<(), FsError> {
        for page in self.delta_state.dcm.dirty_pages(pseudo) {
            let Some(cached) = self.delta_state.dcm.cache.get(&(pseudo, page)) else {
                continue;
            };
            let mut b = self
                .delta_state
                .dcm
                .flush_copy
                .take()
                .unwrap_or_else(zero_block);
            b.copy_from_slice(&cached.bytes[..]);
            let log = self.data_log(pseudo)?;
            let written = self.store_page_out_of_place_as(pseudo, u64::from(page), &b, log, true);
            self.delta_state.dcm.flush_copy = Some(b);
            written?;
            self.metrics.delta.dcm_page_writes += 1;
            // Durable at the next checkpoint, or carried by the owner's next fsync.
            self.since_cp
                .dcm_uncarried
                .entry(pseudo)
                .or_default()
                .insert(page);
            if let Some(v) = self.delta_state.dcm.cache.get_mut(&(pseudo, page)) {
                v.dirty = false;
            }
        }
        Ok(())
    }

    /// Page `index` of `ino` is being written by a path other than DCM's own writeback
    /// (a pseudo file is written only by [`F2fs::dcm_flush`], but its inode number is
    /// open to the by-inode calls): a cached copy of it, and with page 0 its decoding,
    /// would be older than flash, so it goes.
    pub(crate) fn dcm_note_page_write(&mut self, ino: u32, index: u64) {
        let st = &mut self.delta_state.dcm;
        if st.cache.is_empty() {
            return;
        }
        if let Ok(page) = u32::try_from(index) {
            if let Some(old) = st.cache.remove(&(ino, page)) {
                st.ages.remove(&old.age);
            }
        }
    }

    /// Roll-forward is about to replay (or has replayed) the fsync'd nodes, which may
    /// give a pseudo file's pages other blocks than the ones cached pages were read from
    /// (the full verification at mount reads them before recovery): every cached page
    /// goes. None can be dirty here (nothing writes DCM before recovery); one that were
    /// would be lost, so that is refused.
    pub(crate) fn dcm_forget_for_replay(&mut self) -> Result<(), FsError> {
        let st = &mut self.delta_state.dcm;
        if let Some((&(pseudo, page), _)) = st.cache.iter().find(|(_, v)| v.dirty) {
            return Err(corrupt(format!(
                "roll-forward: DCM page {page} of pseudo file {pseudo} is dirty before recovery"
            )));
        }
        st.cache.clear();
        st.ages.clear();
        Ok(())
    }

    /// A checkpoint is about to write the nodes: every dirty pseudo-file page first.
    pub(crate) fn dcm_flush_all(&mut self) -> Result<(), FsError> {
        let pseudos: BTreeSet<u32> = self
            .delta_state
            .dcm
            .cache
            .iter()
            .filter(|(_, v)| v.dirty)
            .map(|(k, _)| k.0)
            .collect();
        for p in pseudos {
            self.dcm_flush(p)?;
        }
        Ok(())
    }

    /// The owner's fsync cannot roll forward a pseudo file created since the checkpoint
    /// (it has no dentry to be recovered by): a checkpoint then.
    pub(crate) fn dcm_fsync_needs_checkpoint(&mut self, owner: u32) -> Result<bool, FsError> {
        Ok(match self.dcm_pseudo_of(owner)? {
            Some(p) => self.since_cp.new_nodes.contains(&p),
            None => false,
        })
    }

    /// BGRes (`f2fs_kmeans_bgres` and the restoration after a background-GC pass):
    /// re-clusters the files holding DCM deltas from their call counts, then restores
    /// every one that left the read-cold/write-hot class or holds fewer than
    /// `bgres_min_deltas` deltas ([`policy::bgres_restore`]). Returns the files restored.
    pub(crate) fn bgres(&mut self) -> Result<u64, FsError> {
        if !self.cfg.delta.mode.hcluster_on() || self.delta_state.dcm.owners.is_empty() {
            return Ok(0);
        }
        self.metrics.delta.bgres_runs += 1;
        let owners: Vec<u32> = self.delta_state.dcm.owners.iter().copied().collect();
        let st = &mut self.delta_state.dcm;
        let points: Vec<Point> = owners.iter().map(|&o| st.bgres_point(o)).collect();
        let centroids = hcluster::kmeans(&points, st.centroids(&self.cfg.delta));
        st.centroids = Some(centroids);
        let mut restored = 0;
        for (owner, p) in owners.into_iter().zip(points) {
            let Some((_, meta)) = self.dcm_load(owner)? else {
                self.delta_state.dcm.owners.remove(&owner);
                self.delta_state.dcm.snapshots.remove(&owner);
                continue;
            };
            let hot = hcluster::read_cold_write_hot(p, &centroids);
            if policy::bgres_restore(hot, meta.deltas(), &self.cfg.delta) {
                let n = self.dcm_restore_file(owner)?;
                self.metrics.delta.bgres_restored_deltas += n;
                restored += 1;
            }
        }
        self.metrics.delta.bgres_restored_files += restored;
        Ok(restored)
    }

    /// The DCM deltas of `ino`: (page index, compressed bytes), in meta order.
    pub fn dcm_deltas(&mut self, ino: u32) -> Result<Vec<(u64, usize)>, FsError> {
        let Some((pseudo, meta)) = self.dcm_load(ino)? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for e in &meta.pages {
            let records = self.dcm_records(ino, pseudo, e)?;
            out.extend(
                e.indices
                    .iter()
                    .zip(records)
                    .map(|(&o, r)| (u64::from(o), r.len())),
            );
        }
        Ok(out)
    }

    /// Checks DCM's page cache against what it caches: every cached meta page's decoding
    /// equals a fresh decode of its bytes (against the same size and bound), and every
    /// clean cached page equals the page read from flash now (a dirty one is newer than
    /// flash by design). Returns the pages checked. For tests: the reads are charged
    /// like any other.
    pub fn check_dcm_cache(&mut self) -> Result<usize, FsError> {
        let pages: Vec<((u32, u32), CachedPage)> = self
            .delta_state
            .dcm
            .cache
            .iter()
            .map(|(k, v)| (*k, v.clone()))
            .collect();
        let bad = |what: String| corrupt(format!("DCM page cache: {what}"));
        for ((pseudo, page), cached) in &pages {
            let (bytes, dirty) = (&cached.bytes, cached.dirty);
            if let Some(d) = &cached.decoded {
                if *page != 0 {
                    return Err(bad(format!("page {page} of {pseudo} has a meta decoding")));
                }
                let fresh = Meta::decode(&bytes[..], d.max_pages, d.file_pages);
                if fresh.as_ref() != Ok(&*d.meta) {
                    return Err(bad(format!(
                        "the meta page of {pseudo} decodes to {fresh:?}, cached {:?}",
                        d.meta
                    )));
                }
            }
            if !dirty {
                let flash = self.load_page(*pseudo, u64::from(*page))?;
                if flash[..] != bytes[..] {
                    return Err(bad(format!(
                        "clean page {page} of {pseudo} differs from flash"
                    )));
                }
            }
        }
        Ok(pages.len())
    }

    /// The owner's pseudo-file inode number, if it has one.
    pub fn dcm_pseudo_file(&mut self, ino: u32) -> Result<Option<u32>, FsError> {
        self.dcm_pseudo_of(ino)
    }

    /// The full walk's check of a file's DCM structures: the pseudo file is an inode in
    /// use naming this owner, the meta page and every compact page decode consistently,
    /// and every delta decompresses to a page. Returns the pseudo file (the walk goes on
    /// into it as a file with one link).
    pub(crate) fn check_dcm(&mut self, owner: u32, regular: bool) -> Result<Option<u32>, FsError> {
        if !self.has_dcm(owner)? {
            return Ok(None);
        }
        if !regular {
            let rule = "only a regular file holds DCM deltas".to_string();
            return Err(self.dcm_corruption(owner, u64::from(MEDFS_DCM_FL), rule));
        }
        let Some((pseudo, meta)) = self.dcm_load(owner)? else {
            return Ok(None);
        };
        let mut out = Vec::with_capacity(BLOCK_SIZE);
        for e in &meta.pages {
            for (o, r) in e.indices.iter().zip(self.dcm_records(owner, pseudo, e)?) {
                out.clear();
                if decompress_into(&r, &mut out, BLOCK_SIZE).is_err() || out.len() != BLOCK_SIZE {
                    let rule = format!("the delta of page {o} does not decompress to a page");
                    return Err(self.dcm_corruption(owner, u64::from(*o), rule));
                }
            }
        }
        Ok(Some(pseudo))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_and_compact_pages_round_trip() {
        let recs = vec![vec![1u8; 10], vec![2u8; 300]];
        let (page, free) = encode_compact(&recs);
        assert_eq!(usize::from(free), BLOCK_SIZE - 314);
        assert_eq!(decode_compact(&page[..], 2, free).unwrap(), recs);
        assert!(decode_compact(&page[..], 2, free + 1).is_err());
        assert!(decode_compact(&page[..], 3, free).is_err());
        let meta = Meta {
            pages: vec![
                CompactEntry {
                    pi: 1,
                    free,
                    indices: vec![7, 900_000],
                },
                CompactEntry {
                    pi: 2,
                    free: 4096,
                    indices: vec![],
                },
            ],
        };
        assert_eq!(meta.encoded_bytes(), 1 + 7 + 8 + 7);
        let b = meta.encode();
        assert_eq!(Meta::decode(&b[..], 255, 3).unwrap(), meta);
        // Encoded over an old page (as DCM rewrites its cached meta page): the same bytes.
        let mut over = zero_block();
        over.iter_mut()
            .enumerate()
            .for_each(|(i, x)| *x = (i * 7 + 3) as u8);
        meta.encode_into(&mut over);
        assert_eq!(over, b);
        // PI past the file, a page twice, too many pages: refused.
        assert!(Meta::decode(&b[..], 255, 2).is_err());
        let mut twice = meta.clone();
        twice.pages[1].indices.push(7);
        assert!(Meta::decode(&twice.encode()[..], 255, 3).is_err());
        assert!(Meta::decode(&b[..], 1, 3).is_err());
        assert_eq!(meta.find(900_000), Some((0, 1)));
        assert_eq!(meta.indices(), vec![7, 900_000]);
    }

    /// Appending a record to a compact page and taking one out in place give the pages
    /// `encode_compact` makes of the records after the change, whatever lies past the
    /// records (a page read from flash is checked only up to them).
    #[test]
    fn compact_pages_change_in_place_as_encoded() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for _ in 0..2_000 {
            let mut recs: Vec<Vec<u8>> = Vec::new();
            let mut used = 0;
            for _ in 0..next(8) {
                let len = 1 + next(700) as usize;
                if used + SIZE_FIELD_BYTES + len > BLOCK_SIZE {
                    break;
                }
                used += SIZE_FIELD_BYTES + len;
                recs.push((0..len).map(|_| next(256) as u8).collect());
            }
            let (mut page, free) = encode_compact(&recs);
            // Junk past the records is not carried over.
            let end = BLOCK_SIZE - usize::from(free);
            for b in &mut page[end..] {
                *b = next(256) as u8;
            }
            let mut ranges = Vec::new();
            walk_compact(&page[..], recs.len(), free, |_, r| ranges.push(r)).unwrap();
            if !recs.is_empty() && next(2) == 0 {
                let pos = next(recs.len() as u64) as usize;
                let mut changed = page.clone();
                let got = remove_compact(&mut changed, ranges[pos].clone(), free);
                recs.remove(pos);
                let (want, want_free) = encode_compact(&recs);
                assert_eq!((changed, got), (want, want_free));
            } else {
                let len = 1 + next(300) as usize;
                if end + SIZE_FIELD_BYTES + len > BLOCK_SIZE {
                    continue;
                }
                let d: Vec<u8> = (0..len).map(|_| next(256) as u8).collect();
                let mut changed = page.clone();
                let got = append_compact(&mut changed, end, &d);
                recs.push(d);
                let (want, want_free) = encode_compact(&recs);
                assert_eq!((changed, got), (want, want_free));
            }
        }
    }
}
