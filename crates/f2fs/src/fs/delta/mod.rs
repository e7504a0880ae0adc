//! MedFS's delta-chunk inlining (DCI, FAST '25; `docs/medfs.md`): a small update of a
//! page that already has a block on flash is stored as a delta in the inode instead of a
//! new data block.
//!
//! 1. **Admission** ([`policy::delta_candidate`]): the page has a valid block (the
//!    *base*), the file is regular, not inline, under 852 pages, and the page's pointer
//!    lies in the inode. Atomic commits never come here (they write out of place).
//! 2. **Delta**: the base is read, and `delta = LZO1X-1(new ⊕ base)`. A page has at most
//!    one delta, always against its flash base: its old delta is removed first.
//! 3. **Decision** ([`policy::delta_decision`]): inline it (no data block is written; the
//!    inode is dirtied, and reaches the disk with the next fsync or checkpoint, as the
//!    inode would for mtime anyway); or evict the largest inline delta (merged into its
//!    base, written out of place) and inline this one; or write the page normally.
//! 4. **Reads** ([`F2fs::apply_delta`]) XOR the decompressed delta into the base.
//! 5. **Growth** ([`policy::growth_evictions`]): before a pointer is set in a slot the zone
//!    covers, the oldest deltas are merged into their bases (FIFO); a pointer past the
//!    budget or the inode evicts all.
//! 6. **Anything that replaces a page's block** (an out-of-place write, an in-place one, a
//!    truncation, fallocate) drops or merges that page's delta first, so a delta always
//!    belongs to the block its slot points at.
//!
//! Durability: the zone lives in the inode block, so it is durable exactly when the inode
//! is (checkpoint, or fsync by roll-forward, which replays the fsync'd copy's zone); the
//! base is never overwritten (in-place updates are off while DCI is on), and a merge writes
//! the merged page before the inode that drops the delta, so every durable inode names a
//! base and delta that rebuild the page.
//!
//! On disk the zone is not stock F2FS: an inode holding deltas carries
//! [`MEDFS_DELTA_FL`] in `i_flags`, and `fsck.f2fs` reads the zone's bytes as block
//! addresses. [`F2fs::restore_deltas`] folds every delta into its base, after which the
//! image is stock F2FS again.

mod carry;
pub mod dcm;
pub mod hcluster;
pub mod policy;
pub mod zone;

use flashstack_block::BlockDevice;
use flashstack_codec::lzo1x::decompress_into;
use flashstack_codec::Lzo1x1Linux;

use super::data::{geometry_from, Geometry, OFF_INLINE, OFF_SIZE};
use super::{corrupt, le64_at, F2fs, FsError};
use crate::codec::{le32_at, put_le32_at, zero_block, Block};
use crate::consts::*;
use crate::error::Corruption;
pub use dcm::{MEDFS_DCM_FL, MEDFS_PSEUDO_FL};
use policy::{DeltaCandidate, DeltaDecision, ZoneRoom};
use zone::{Record, Zone, ZONE_HEADER_BYTES};

/// Byte offset of `i_flags` in an inode block.
pub(crate) const OFF_FLAGS: usize = 80;
/// Byte offset of `i_pino` in an inode block.
pub(crate) const OFF_PINO: usize = 84;
/// Byte offsets of `i_namelen` and `i_name` in an inode block.
pub(crate) const OFF_NAMELEN: usize = 88;
pub(crate) const OFF_NAME: usize = 92;
/// `i_flags` bit of an inode whose address slots end in a delta zone. Ours: the MedFS
/// source's on-disk marker is not recorded; no F2FS or VFS flag uses this bit.
pub const MEDFS_DELTA_FL: u32 = 0x0100_0000;

/// Counters of the delta path (all zero with delta compression off).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DeltaMetrics {
    /// Deltas computed (updates that passed admission).
    pub computed: u64,
    /// Deltas stored inline (each saved a data block write).
    pub inline_stores: u64,
    /// Of those, stores that first evicted the largest inline delta.
    pub replacements: u64,
    /// Computed deltas written as a normal page instead (too large, or no room).
    pub fallback_writes: u64,
    /// Deltas merged into their base and written out (replacement, growth, fallocate,
    /// restore).
    pub merges: u64,
    /// Deltas dropped because their page was rewritten whole or truncated.
    pub dropped: u64,
    /// Deltas applied on reads.
    pub applied: u64,
    /// Bases read from flash to make a delta (missed the base cache).
    pub base_reads: u64,
    /// Sum of computed delta sizes in bytes (mean = this / `computed`).
    pub delta_bytes_total: u64,
    /// Computed delta sizes in 32-byte buckets: `[0, 32)`, ..., `[224, 256)`, `≥ 256`.
    pub delta_size_buckets: [u64; 9],
    /// Deltas stored in a DCM pseudo file (each saved a data block write; the pseudo
    /// file's pages are written in `dcm_page_writes`).
    pub dcm_stores: u64,
    /// Of those, deltas DCI evicted (moved to DCM instead of merged).
    pub dcm_evictions: u64,
    /// Deltas refused by DCM because HCluster did not class the file read-cold/write-hot.
    pub dcm_not_hot: u64,
    /// Deltas refused by DCM for want of room (255 compact pages, or a full meta page).
    pub dcm_full: u64,
    /// Pseudo files created.
    pub dcm_files_created: u64,
    /// DCM deltas applied on reads.
    pub dcm_applied: u64,
    /// Pseudo-file pages read from the device (meta and compact; cache misses).
    pub dcm_page_reads: u64,
    /// Pseudo-file pages written (meta and compact).
    pub dcm_page_writes: u64,
    /// Owners' fsyncs whose inode carried the pseudo file's new addresses
    /// (`delta/carry.rs`), and those that wrote the pseudo inode instead (no room).
    pub dcm_carried_fsyncs: u64,
    pub dcm_pseudo_fsyncs: u64,
    /// Carried entries replayed by roll-forward.
    pub dcm_carried_replayed: u64,
    /// BGRes passes (idle time, with DCM files present).
    pub bgres_runs: u64,
    /// Files BGRes restored, and the deltas it folded doing so.
    pub bgres_restored_files: u64,
    pub bgres_restored_deltas: u64,
    /// HCluster's call counts dropped with their inode, evicted from memory
    /// ([`F2fs::evict_unheld_inodes`]: `drop_caches`).
    pub hcluster_counts_evicted: u64,
}

impl DeltaMetrics {
    pub fn is_empty(&self) -> bool {
        *self == DeltaMetrics::default()
    }

    fn record_size(&mut self, bytes: usize) {
        self.computed += 1;
        self.delta_bytes_total += bytes as u64;
        self.delta_size_buckets[(bytes / 32).min(8)] += 1;
    }
}

/// Working state of the delta path: the compressor (its hash table is reused) and, during
/// roll-forward, the zones of the fsync'd inode copies, put back once addresses are
/// replayed.
#[derive(Default)]
pub(crate) struct DeltaState {
    lzo: Option<Lzo1x1Linux>,
    /// `make_delta`'s XOR of a page and its base (kept: one allocation per mount).
    xor: Option<Box<Block>>,
    lzo_out: Vec<u8>,
    pub replay_zones: std::collections::BTreeMap<u32, Zone>,
    bases: BaseCache,
    /// Set only across the device write of a pseudo file's page (DCM's writeback,
    /// [`F2fs::store_page_out_of_place_as`]): the block is never a delta's base
    /// (`delta_base` refuses pseudo files), so the base cache keeps its place in the age
    /// order but not its bytes.
    pub(crate) writing_pseudo: bool,
    pub dcm: dcm::DcmState,
}

impl DeltaState {
    /// Gives back the buffer [`F2fs::make_delta`] handed out, for the next delta.
    fn return_lzo_out(&mut self, delta: Vec<u8>) {
        if delta.capacity() > self.lzo_out.capacity() {
            self.lzo_out = delta;
        }
    }
}

/// The offset of the last nonzero byte of `bytes`, 64 bytes at a time from the end (an
/// OR of the chunk, which the compiler vectorises; a byte-at-a-time `rposition` was the
/// largest cost of `used_slots`, which scans mostly zeros at every delta decision).
fn last_nonzero_byte(bytes: &[u8]) -> Option<usize> {
    let mut end = bytes.len();
    while end >= 64 {
        let chunk = &bytes[end - 64..end];
        if chunk.iter().fold(0u8, |acc, &b| acc | b) != 0 {
            break;
        }
        end -= 64;
    }
    bytes[..end].iter().rposition(|&b| b != 0)
}

/// The content of recently written or read data blocks by address (see
/// [`policy::DeltaConfig::base_cache_pages`]): every write of a block replaces its entry
/// ([`F2fs::note_block_written`]), so an entry is always what the block holds. Oldest
/// entries go first. An entry keeps its place in the age order but not its bytes
/// ([`BaseCache::strip`]) when its block can no longer be a delta's base: a block DCM
/// writes for a pseudo file (no delta is made against a pseudo file's page; a third of the
/// blocks written) and a block released by the file that held it (rewritten elsewhere,
/// truncated, moved) until it is written again.
///
/// The bytes live in slots of an arena of 8 MiB chunks advised to use huge pages: the
/// cache fills its slots in order, so a chunk is faulted in 2 MiB at a time rather than as
/// a zeroed 4 KiB allocation per block (thousands of page faults in a persona's run).
/// A slot freed by a strip or a drop is reused first. Memory never changes results.
#[derive(Default)]
struct BaseCache {
    /// Block address → (age of its last put, slot of its content unless stripped).
    /// Looked up only, never iterated, so its order cannot reach a result; a hash map
    /// because every data block written or read puts (an ordered map's search was a
    /// tenth of what MedFS adds to a persona's run).
    by_addr: std::collections::HashMap<u32, (u64, Option<u32>), AddrHash>,
    /// (age, address) of every put, oldest first; an entry whose address has since been
    /// put again or forgotten is stale (its age is not the address's now) and skipped.
    /// The oldest live entry is the one to drop, as with an age-ordered map, at a
    /// fraction of the cost (a put was six map operations, most of its time).
    by_age: std::collections::VecDeque<(u64, u32)>,
    next: u64,
    /// The slots' bytes, [`ARENA_CHUNK_BLOCKS`] blocks a chunk.
    arena: Vec<Box<[u8]>>,
    /// Slots handed out so far (the next new one is this).
    slots_made: u32,
    /// Slots of stripped and dropped entries, for the next new ones.
    free: Vec<u32>,
}

/// The hasher of [`BaseCache::by_addr`]: a block address multiplied by a 64-bit odd
/// constant (Fibonacci hashing), its high half folded in. Addresses are not chosen by an
/// adversary, and SipHash's cost per put is what the map is there to avoid.
#[derive(Clone, Copy, Default)]
pub(super) struct AddrHasher(u64);

impl std::hash::Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }

    fn write_u64(&mut self, v: u64) {
        let h = (self.0 ^ v).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = h ^ (h >> 32);
    }
}

pub(super) type AddrHash = std::hash::BuildHasherDefault<AddrHasher>;

/// Blocks per chunk of [`BaseCache::arena`] (8 MiB: a fresh mapping the kernel can back
/// with huge pages; `flashstack_sim::memory::advise_dense` needs 8 MiB).
const ARENA_CHUNK_BLOCKS: usize = 2048;

impl BaseCache {
    /// Makes `block` the content of `addr`'s entry, the youngest; `None`: an entry
    /// without bytes (a pseudo file's page, see [`BaseCache::strip`]) that still takes
    /// its place in the age order, exactly as a put followed by a strip would.
    fn put(&mut self, addr: u32, block: Option<&[u8]>, cap: usize) {
        if cap == 0 {
            self.forget(addr);
            return;
        }
        let age = self.next;
        self.next += 1;
        let old = match self.by_addr.get_mut(&addr) {
            // Replaced in place: its old queue entry goes stale.
            Some(entry) => {
                entry.0 = age;
                Some(entry.1)
            }
            None => None,
        };
        match old {
            Some(Some(slot)) => match block {
                Some(block) => self.bytes_mut(slot).copy_from_slice(block),
                None => {
                    self.by_addr.insert(addr, (age, None));
                    self.free.push(slot);
                }
            },
            Some(None) => {
                if let Some(block) = block {
                    let slot = self.new_slot();
                    self.bytes_mut(slot).copy_from_slice(block);
                    self.by_addr.insert(addr, (age, Some(slot)));
                }
            }
            None => {
                // When full, the oldest entry goes first and lends its slot: the same
                // entry goes as when it is dropped after the insertion.
                if self.by_addr.len() >= cap {
                    if let Some(Some(slot)) = self.pop_oldest() {
                        self.free.push(slot);
                    }
                }
                let slot = block.map(|block| {
                    let slot = self.new_slot();
                    self.bytes_mut(slot).copy_from_slice(block);
                    slot
                });
                self.by_addr.insert(addr, (age, slot));
            }
        }
        self.by_age.push_back((age, addr));
        while self.by_addr.len() > cap {
            match self.pop_oldest() {
                Some(slot) => self.keep_free(slot),
                None => break,
            }
        }
        // Stale entries are bounded: past twice the live ones, only live ones stay.
        if self.by_age.len() > 2 * self.by_addr.len() + 64 {
            let live = &self.by_addr;
            self.by_age
                .retain(|&(age, addr)| live.get(&addr).is_some_and(|e| e.0 == age));
        }
    }

    /// A slot for new bytes: a freed one, else the next of the arena (a new chunk when
    /// the last is full).
    fn new_slot(&mut self) -> u32 {
        if let Some(slot) = self.free.pop() {
            return slot;
        }
        let slot = self.slots_made;
        if slot as usize == self.arena.len() * ARENA_CHUNK_BLOCKS {
            // Zeroed and untouched (`vec![0u8; n]` is a zeroed allocation, a fresh
            // mapping at this size), advised before the first touch.
            let chunk = vec![0u8; ARENA_CHUNK_BLOCKS * BLOCK_SIZE].into_boxed_slice();
            flashstack_sim::memory::advise_dense(&chunk[..]);
            self.arena.push(chunk);
        }
        self.slots_made += 1;
        slot
    }

    fn bytes(&self, slot: u32) -> &Block {
        let s = slot as usize;
        let at = (s % ARENA_CHUNK_BLOCKS) * BLOCK_SIZE;
        let bytes = &self.arena[s / ARENA_CHUNK_BLOCKS][at..at + BLOCK_SIZE];
        bytes.try_into().expect("a slot is one block")
    }

    fn bytes_mut(&mut self, slot: u32) -> &mut [u8] {
        let s = slot as usize;
        let at = (s % ARENA_CHUNK_BLOCKS) * BLOCK_SIZE;
        &mut self.arena[s / ARENA_CHUNK_BLOCKS][at..at + BLOCK_SIZE]
    }

    /// Drops the oldest live entry, returning its slot (`Some(None)`: it was stripped).
    fn pop_oldest(&mut self) -> Option<Option<u32>> {
        while let Some((age, addr)) = self.by_age.pop_front() {
            if let std::collections::hash_map::Entry::Occupied(e) = self.by_addr.entry(addr) {
                if e.get().0 == age {
                    return Some(e.remove().1);
                }
            }
        }
        None
    }

    fn forget(&mut self, addr: u32) {
        if let Some((_, slot)) = self.by_addr.remove(&addr) {
            self.keep_free(slot);
        }
    }

    fn keep_free(&mut self, slot: Option<u32>) {
        if let Some(slot) = slot {
            self.free.push(slot);
        }
    }

    /// Drops the bytes of `addr`'s entry, keeping its place: a miss from now on, which
    /// only a request for a base that is never made can notice.
    fn strip(&mut self, addr: u32) {
        if let Some(entry) = self.by_addr.get_mut(&addr) {
            let slot = entry.1.take();
            self.keep_free(slot);
        }
    }

    fn get(&self, addr: u32) -> Option<&Block> {
        let slot = self.by_addr.get(&addr)?.1?;
        Some(self.bytes(slot))
    }
}

/// Clears [`MEDFS_DELTA_FL`] in an inode block (roll-forward rebuilds zones itself).
pub(crate) fn clear_zone_flag(block: &mut Block) {
    let flags = le32_at(block, OFF_FLAGS);
    put_le32_at(&mut block[..], OFF_FLAGS, flags & !MEDFS_DELTA_FL);
}

/// Where an inode's address slots lie in its block.
fn slots_range(geo: &Geometry) -> std::ops::Range<usize> {
    let start = INODE_ADDR_OFFSET + 4 * geo.extra;
    start..start + 4 * geo.addrs
}

impl<D: BlockDevice> F2fs<D> {
    pub(crate) fn has_delta_zone(&mut self, ino: u32) -> Result<bool, FsError> {
        Ok(le32_at(&self.node(ino)?[..], OFF_FLAGS) & MEDFS_DELTA_FL != 0)
    }

    /// The first address slot the delta zone covers, if the inode has one (reads only
    /// the header: every address lookup asks).
    pub(crate) fn zone_start_slot(
        &mut self,
        ino: u32,
        geo: &Geometry,
    ) -> Result<Option<usize>, FsError> {
        if !self.has_delta_zone(ino)? {
            return Ok(None);
        }
        let end = slots_range(geo).end;
        let node = self.node(ino)?;
        let size = u16::from_le_bytes([node[end - 2], node[end - 3]]) as usize;
        let words = (ZONE_HEADER_BYTES + size).div_ceil(4);
        if words > geo.addrs {
            let rule = format!("delta_inline_size {size} exceeds the address slots");
            return Err(self.zone_corruption(ino, size as u64, rule));
        }
        Ok(Some(geo.addrs - words))
    }

    /// A malformed delta zone, as a corruption of the inode holding it (the full walk
    /// records it as a finding and quarantines the inode).
    fn zone_corruption(&mut self, ino: u32, value: u64, rule: String) -> FsError {
        let rule = format!("delta zone: {rule}");
        self.delta_corruption(ino, "i_addr (MedFS delta zone)", value, rule)
    }

    /// A malformed MedFS structure (`field`) of inode `ino`, as a corruption of that inode.
    fn delta_corruption(
        &mut self,
        ino: u32,
        field: &'static str,
        value: u64,
        rule: String,
    ) -> FsError {
        let blkaddr = self.nat_get(ino).map_or(0, |e| e.block_addr as u64);
        Corruption::Inode {
            ino,
            blkaddr,
            field,
            value,
            rule,
        }
        .into()
    }

    /// The full walk's check of a zone (`Verify::Full`): its header and every record lie
    /// within the address slots, no page has two deltas, and each delta's page is a
    /// regular file's page whose pointer sits in the inode before the zone and names a
    /// block (its base). Returns the first slot the zone covers (the walk reads the
    /// slots before it as addresses); the whole slot area without a zone.
    pub(crate) fn check_delta_zone(&mut self, ino: u32, regular: bool) -> Result<usize, FsError> {
        let geo = self.geometry(ino)?;
        let Some((_, zone)) = self.read_zone(ino)? else {
            return Ok(geo.addrs);
        };
        if !regular {
            let rule = "only a regular file holds deltas".to_string();
            return Err(self.zone_corruption(ino, u64::from(MEDFS_DELTA_FL), rule));
        }
        let start = geo.addrs - zone.words();
        for r in &zone.records {
            let index = usize::from(r.index);
            let base = match index < start {
                true => le32_at(&self.node(ino)?[..], slots_range(&geo).start + 4 * index),
                false => NULL_ADDR,
            };
            if base == NULL_ADDR || base == NEW_ADDR {
                let rule = format!("the delta of page {index} has no base block in the inode");
                return Err(self.zone_corruption(ino, index as u64, rule));
            }
        }
        Ok(start)
    }

    /// The inode's delta zone, decoded and checked (`None` without the flag).
    fn read_zone(&mut self, ino: u32) -> Result<Option<(Geometry, Zone)>, FsError> {
        if !self.has_delta_zone(ino)? {
            return Ok(None);
        }
        let flexible = self.sb.feature.contains(FEATURE_FLEXIBLE_INLINE_XATTR);
        let node = self.inode_node(ino)?;
        let geo = geometry_from(ino, node, flexible)?;
        let decoded = Zone::decode(&node[slots_range(&geo)]);
        match decoded {
            Ok(zone) => Ok(Some((geo, zone))),
            Err(rule) => {
                let flags = le32_at(&self.node(ino)?[..], OFF_FLAGS);
                Err(self.zone_corruption(ino, u64::from(flags), rule))
            }
        }
    }

    /// [`Zone::summary`] of the inode's zone for page `index` (`None` without the
    /// flag): what [`F2fs::read_zone`] checks, without copying the records.
    fn zone_summary(&mut self, ino: u32, index: u64) -> Result<Option<zone::Summary>, FsError> {
        if !self.has_delta_zone(ino)? {
            return Ok(None);
        }
        let flexible = self.sb.feature.contains(FEATURE_FLEXIBLE_INLINE_XATTR);
        let node = self.inode_node(ino)?;
        let geo = geometry_from(ino, node, flexible)?;
        let summary = Zone::summary(&node[slots_range(&geo)], index);
        match summary {
            Ok(s) => Ok(Some(s)),
            Err(rule) => {
                let flags = le32_at(&self.node(ino)?[..], OFF_FLAGS);
                Err(self.zone_corruption(ino, u64::from(flags), rule))
            }
        }
    }

    /// Replaces the zone (`old_words` slots at the tail) with `zone`; an empty zone clears
    /// the flag. The inode becomes dirty.
    fn write_zone(
        &mut self,
        ino: u32,
        geo: &Geometry,
        old_words: usize,
        zone: &Zone,
    ) -> Result<(), FsError> {
        let range = slots_range(geo);
        let node = self.node(ino)?;
        let slots = &mut node[range.clone()];
        let len = slots.len();
        slots[len - 4 * old_words..].fill(0);
        let flags = le32_at(&node[..], OFF_FLAGS);
        if zone.records.is_empty() {
            put_le32_at(&mut node[..], OFF_FLAGS, flags & !MEDFS_DELTA_FL);
        } else {
            let tail = len - 4 * zone.words();
            let clear = node[range.start + tail..range.end].iter().all(|&b| b == 0);
            if !clear {
                return Err(corrupt(format!(
                    "inode {ino}: delta zone of {} slots would cover data pointers",
                    zone.words()
                )));
            }
            zone.encode(&mut node[range]);
            put_le32_at(&mut node[..], OFF_FLAGS, flags | MEDFS_DELTA_FL);
        }
        self.dirty_nodes.insert(ino);
        Ok(())
    }

    /// Removes page `index`'s record, returning it.
    fn remove_record(&mut self, ino: u32, index: u64) -> Result<Option<Record>, FsError> {
        // Every delta made asks; most pages have no inline record: answered without
        // decoding the zone.
        if self
            .zone_summary(ino, index)?
            .is_none_or(|s| s.position.is_none())
        {
            return Ok(None);
        }
        let Some((geo, mut zone)) = self.read_zone(ino)? else {
            return Ok(None);
        };
        let Some(pos) = zone.position(index) else {
            return Ok(None);
        };
        let old_words = zone.words();
        let record = zone.records.remove(pos);
        self.write_zone(ino, &geo, old_words, &zone)?;
        Ok(Some(record))
    }

    /// Every block write passes here: a data block's content becomes its base-cache entry,
    /// anything else written at that address drops the entry.
    pub(crate) fn note_block_written(&mut self, addr: u64, data: &[u8], data_block: bool) {
        if !self.cfg.delta.enabled() {
            return;
        }
        let cap = self.cfg.delta.base_cache_pages;
        let pseudo = self.delta_state.writing_pseudo;
        for (k, chunk) in data.chunks(BLOCK_SIZE).enumerate() {
            let a = (addr + k as u64) as u32;
            match (data_block && chunk.len() == BLOCK_SIZE, pseudo) {
                (true, false) => self.delta_state.bases.put(a, Some(chunk), cap),
                (true, true) => self.delta_state.bases.put(a, None, cap),
                (false, _) => self.delta_state.bases.forget(a),
            }
        }
    }

    /// Block `addr` no longer holds a valid block (its page was rewritten elsewhere,
    /// truncated or moved): it cannot be a delta's base until it is written again, and
    /// that write replaces its entry, so its bytes need not be kept (see [`BaseCache`]).
    /// Blocks become valid again without a write only in roll-forward recovery, which
    /// revalidates blocks the mount never invalidated.
    pub(crate) fn note_block_released(&mut self, addr: u32) {
        if self.cfg.delta.enabled() {
            self.delta_state.bases.strip(addr);
        }
    }

    /// Block `addr` now holds other data without a write through this layer (a device
    /// REMAP onto it): any base cached for it is stale.
    pub(crate) fn forget_base(&mut self, addr: u32) {
        if self.cfg.delta.enabled() {
            self.delta_state.bases.forget(addr);
        }
    }

    /// A data block read from flash (a file's page, before its delta is applied).
    pub(crate) fn note_block_read(&mut self, addr: u32, block: &Block) {
        if self.cfg.delta.enabled() {
            let cap = self.cfg.delta.base_cache_pages;
            self.delta_state.bases.put(addr, Some(&block[..]), cap);
        }
    }

    /// Drops page `index`'s delta: its block is being replaced whole.
    pub(crate) fn drop_delta(&mut self, ino: u32, index: u64) -> Result<(), FsError> {
        if self.remove_record(ino, index)?.is_some() {
            self.metrics.delta.dropped += 1;
        }
        if self.dcm_remove(ino, index)? {
            self.metrics.delta.dropped += 1;
        }
        Ok(())
    }

    /// The delta path of a page write: `Ok(true)` when the update was stored as a delta
    /// (no data block written), `Ok(false)` when the page is to be written normally.
    pub(crate) fn try_store_delta(
        &mut self,
        ino: u32,
        index: u64,
        page: &Block,
    ) -> Result<bool, FsError> {
        let Some((base_addr, inline_ok)) = self.delta_base(ino, index)? else {
            return Ok(false);
        };
        let delta = self.make_delta(base_addr, page)?;
        // One delta per page, against the flash base: the old one goes, wherever it is.
        let had_inline = self.remove_record(ino, index)?.is_some();
        let had_dcm = self.dcm_remove(ino, index)?;
        self.dump_pair(
            ino,
            index,
            base_addr,
            page,
            had_inline || had_dcm,
            delta.len(),
        )?;
        let decision = match inline_ok {
            true => self.decide(ino, delta.len())?,
            false => DeltaDecision::Write,
        };
        match decision {
            DeltaDecision::Write => {
                // `f2fs_store_delta_in_main(type = 0)`: not inlined, no replacement.
                let stored =
                    self.cfg.delta.mode.dcm_on() && self.dcm_store(ino, index, &delta, true)?;
                self.delta_state.return_lzo_out(delta);
                if stored {
                    return Ok(true);
                }
                self.metrics.delta.fallback_writes += 1;
                return Ok(false);
            }
            DeltaDecision::ReplaceLargest => {
                self.evict_largest(ino)?;
                self.metrics.delta.replacements += 1;
                // The merge may have moved the zone's budget; check again.
                if self.decide(ino, delta.len())? != DeltaDecision::Inline {
                    self.delta_state.return_lzo_out(delta);
                    self.metrics.delta.fallback_writes += 1;
                    return Ok(false);
                }
            }
            DeltaDecision::Inline => {}
        }
        self.add_record(ino, index, delta)?;
        self.metrics.delta.inline_stores += 1;
        Ok(true)
    }

    /// The base block of an admissible update, if the page is one, and whether the
    /// delta may be inlined.
    fn delta_base(&mut self, ino: u32, index: u64) -> Result<Option<(u32, bool)>, FsError> {
        if !self.cfg.delta.enabled() {
            return Ok(None);
        }
        // Mode, inline flags, MedFS flags, geometry and size from one look at the inode
        // (each accessor looked it up again: this runs at every page write).
        let flexible = self.sb.feature.contains(FEATURE_FLEXIBLE_INLINE_XATTR);
        let node = self.inode_node(ino)?;
        let mode = u16::from_le_bytes([node[0], node[1]]);
        if mode & S_IFMT == S_IFDIR
            || node[OFF_INLINE] & (F2FS_INLINE_DATA | F2FS_INLINE_DENTRY) != 0
            // A DCM pseudo file's pages are written only by DCM (no delta of a delta).
            || le32_at(&node[..], OFF_FLAGS) & MEDFS_PSEUDO_FL != 0
        {
            return Ok(None);
        }
        let geo = geometry_from(ino, node, flexible)?;
        let size = le64_at(node, OFF_SIZE);
        let addr = self.block_addr(ino, index)?;
        let size_pages = size.div_ceil(BLOCK_SIZE as u64);
        let c = DeltaCandidate {
            has_base: self.segs.is_valid(addr),
            regular_file: true,
            file_pages: size_pages.max(index + 1),
            index,
            inode_slots: geo.addrs,
        };
        let inline_ok = policy::inline_candidate(&c, &self.cfg.delta);
        Ok(policy::delta_candidate(&c, &self.cfg.delta).then_some((addr, inline_ok)))
    }

    /// [`policy::DeltaConfig::pairs_dump`]: appends the page pair of a computed delta.
    fn dump_pair(
        &mut self,
        ino: u32,
        index: u64,
        base_addr: u32,
        page: &Block,
        restacked: bool,
        delta_bytes: usize,
    ) -> Result<(), FsError> {
        use std::io::Write;
        if self.cfg.delta.pairs_dump.is_empty() {
            return Ok(());
        }
        let base = match self.delta_state.bases.get(base_addr) {
            Some(b) => Box::new(*b),
            None => self.read_block(base_addr as u64)?,
        };
        let node = self.node(ino)?;
        let name_len = (le32_at(&node[..], OFF_NAMELEN) as usize).min(64);
        let mut rec = Vec::with_capacity(80 + 2 * BLOCK_SIZE);
        for v in [ino, index as u32, u32::from(restacked), delta_bytes as u32] {
            rec.extend_from_slice(&v.to_le_bytes());
        }
        rec.extend_from_slice(&node[OFF_NAME..OFF_NAME + name_len]);
        rec.resize(80, 0);
        rec.extend_from_slice(&base[..]);
        rec.extend_from_slice(&page[..]);
        let path = &self.cfg.delta.pairs_dump;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| f.write_all(&rec))
            .map_err(|e| FsError::Invalid(format!("fs.mount.delta.pairs_dump {path}: {e}")))
    }

    /// `LZO1X-1(new ⊕ base)`, charging the host CPU time.
    fn make_delta(&mut self, base_addr: u32, page: &Block) -> Result<Vec<u8>, FsError> {
        // The base is used where it lies (the base cache, else the block read), and the
        // XOR goes to a buffer kept for it: no 4 KiB copy or allocation per delta.
        let read = match self.delta_state.bases.get(base_addr) {
            Some(_) => None,
            None => {
                self.metrics.delta.base_reads += 1;
                let b = self.read_block(base_addr as u64)?;
                self.note_block_read(base_addr, &b);
                Some(b)
            }
        };
        let st = &mut self.delta_state;
        let base: &Block = match &read {
            Some(b) => b,
            None => st.bases.get(base_addr).expect("cached: looked up above"),
        };
        let xor = st.xor.get_or_insert_with(zero_block);
        for ((x, a), b) in xor.iter_mut().zip(page.iter()).zip(base.iter()) {
            *x = a ^ b;
        }
        // Compressed into the kept buffer (the encoder reserves its worst case, about
        // 4.4 KiB), which is handed out: most deltas are not inlined, and the caller
        // gives the buffer back ([`DeltaState::return_lzo_out`]); an inlined one keeps it.
        st.lzo
            .get_or_insert_with(Lzo1x1Linux::new)
            .compress_into(&xor[..], &mut st.lzo_out);
        let out = std::mem::take(&mut st.lzo_out);
        self.now_ns += self.cfg.delta.create_ns;
        self.metrics.delta.record_size(out.len());
        Ok(out)
    }

    /// [`policy::delta_decision`] for a delta of `bytes` against the inode's zone now.
    fn decide(&mut self, ino: u32, bytes: usize) -> Result<DeltaDecision, FsError> {
        let geo = self.geometry(ino)?;
        let zone = self.zone_summary(ino, u64::MAX)?.unwrap_or_default();
        let budget = 4 * self.cfg.delta.inline_budget_words.min(geo.addrs);
        let used = 4 * self.used_slots(ino, &geo, zone.words())? + 1 + zone.record_bytes;
        let room = ZoneRoom {
            delta_bytes: bytes,
            free_bytes: budget.saturating_sub(used),
            deltas: zone.records,
            largest_bytes: zone.largest_bytes,
        };
        Ok(policy::delta_decision(&room, &self.cfg.delta))
    }

    /// Slots the file's pointers need (`last_iaddr`): its pages, or past its highest
    /// non-empty slot below the zone (a reservation beyond the size).
    /// `zone_words`: the slots the zone covers, 0 without records.
    fn used_slots(
        &mut self,
        ino: u32,
        geo: &Geometry,
        zone_words: usize,
    ) -> Result<usize, FsError> {
        let node = self.inode_node(ino)?;
        let pages = le64_at(node, OFF_SIZE).div_ceil(BLOCK_SIZE as u64) as usize;
        let limit = geo.addrs - zone_words;
        // Only a non-empty slot at or past `pages` can raise the answer: scan those
        // slots from the top (this runs at every delta decision, over mostly zeros).
        let start = slots_range(geo).start;
        let from = pages.min(limit);
        let highest = last_nonzero_byte(&node[start + 4 * from..start + 4 * limit])
            .map_or(0, |at| from + at / 4 + 1);
        Ok(pages.max(highest))
    }

    fn add_record(&mut self, ino: u32, index: u64, delta: Vec<u8>) -> Result<(), FsError> {
        let geo = self.geometry(ino)?;
        let mut zone = self.read_zone(ino)?.map(|(_, z)| z).unwrap_or_default();
        let old_words = if zone.records.is_empty() {
            0
        } else {
            zone.words()
        };
        zone.last_iaddr = self.used_slots(ino, &geo, old_words)? as u16;
        zone.records.push(Record {
            index: index as u16,
            delta,
        });
        self.write_zone(ino, &geo, old_words, &zone)
    }

    /// Merges the largest inline delta into its base (the replacement's victim).
    fn evict_largest(&mut self, ino: u32) -> Result<(), FsError> {
        let Some((_, zone)) = self.read_zone(ino)? else {
            return Ok(());
        };
        let victim = zone
            .records
            .iter()
            .enumerate()
            .max_by_key(|(pos, r)| (r.delta.len(), std::cmp::Reverse(*pos)))
            .map(|(_, r)| u64::from(r.index));
        match victim {
            Some(index) => self.evict_delta(ino, index),
            None => Ok(()),
        }
    }

    /// An inline delta leaves the zone: to DCM when that is on and takes it (the
    /// source's `type = 1`, no HCluster check), else merged into its base. The DCM copy
    /// is made before the zone drops it, so a page never lacks its delta.
    fn evict_delta(&mut self, ino: u32, index: u64) -> Result<(), FsError> {
        if self.cfg.delta.mode.dcm_on() {
            let delta = self
                .read_zone(ino)?
                .and_then(|(_, z)| z.position(index).map(|p| z.records[p].delta.clone()));
            if let Some(delta) = delta {
                if self.dcm_store(ino, index, &delta, false)? {
                    self.remove_record(ino, index)?;
                    self.metrics.delta.dcm_evictions += 1;
                    return Ok(());
                }
            }
        }
        self.merge_delta(ino, index)
    }

    /// Folds page `index`'s delta into its base and writes the page out of place (the
    /// new block is the page's base; the inode drops the delta). Ordering: the merged
    /// block is written now, the inode later (fsync or checkpoint), so a cut in between
    /// leaves the old base and delta, which rebuild the same page.
    fn merge_delta(&mut self, ino: u32, index: u64) -> Result<(), FsError> {
        let page = self.load_page(ino, index)?;
        if self.remove_record(ino, index)?.is_none() {
            return Ok(());
        }
        let log = self.data_log(ino)?;
        self.store_page_out_of_place(ino, index, &page, log)?;
        self.metrics.delta.merges += 1;
        Ok(())
    }

    /// Whether page `index` has a delta, inline or in DCM (the addressing layer's
    /// [`Stored::Delta`](super::pagemap::Stored::Delta)).
    pub(crate) fn has_delta(&mut self, ino: u32, index: u64) -> Result<bool, FsError> {
        let inline = match self.read_zone(ino)? {
            Some((_, zone)) => zone.position(index).is_some(),
            None => false,
        };
        Ok(inline || self.dcm_has(ino, index)?)
    }

    /// XORs page `index`'s inline delta, if any, into `page` (its base, just read).
    pub(crate) fn apply_delta(
        &mut self,
        ino: u32,
        index: u64,
        page: &mut Block,
    ) -> Result<(), FsError> {
        let inline = self.read_zone(ino)?.and_then(|(_, zone)| {
            zone.position(index)
                .map(|pos| zone.records[pos].delta.clone())
        });
        let delta = match inline {
            Some(d) => d,
            None => match self.dcm_delta(ino, index)? {
                Some(d) => {
                    self.metrics.delta.dcm_applied += 1;
                    d
                }
                None => return Ok(()),
            },
        };
        let mut xor = Vec::with_capacity(BLOCK_SIZE);
        let bad = |e: String| corrupt(format!("inode {ino}: delta of page {index}: {e}"));
        decompress_into(&delta, &mut xor, BLOCK_SIZE).map_err(|e| bad(e.to_string()))?;
        if xor.len() != BLOCK_SIZE {
            return Err(bad(format!("decompresses to {} bytes", xor.len())));
        }
        for (p, x) in page.iter_mut().zip(&xor) {
            *p ^= x;
        }
        self.now_ns += self.cfg.delta.apply_ns;
        self.metrics.delta.applied += 1;
        Ok(())
    }

    /// Before a pointer goes into slot `index`: merges the oldest deltas until the zone no
    /// longer covers it ([`policy::growth_evictions`]).
    pub(crate) fn evict_for_slot(&mut self, ino: u32, index: u64) -> Result<(), FsError> {
        if !self.has_delta_zone(ino)? {
            return Ok(());
        }
        let geo = self.geometry(ino)?;
        let Some(start) = self.zone_start_slot(ino, &geo)? else {
            return Ok(());
        };
        if index < start as u64 && index < self.cfg.delta.inline_budget_words as u64 {
            return Ok(());
        }
        let Some((_, zone)) = self.read_zone(ino)? else {
            return Ok(());
        };
        let sizes: Vec<usize> = zone.records.iter().map(Record::zone_bytes).collect();
        let n =
            policy::growth_evictions(&sizes, ZONE_HEADER_BYTES, index, geo.addrs, &self.cfg.delta);
        for r in &zone.records[..n] {
            self.evict_delta(ino, u64::from(r.index))?;
        }
        Ok(())
    }

    /// Truncation: drops the deltas of pages from `from` on.
    pub(crate) fn drop_deltas_from(&mut self, ino: u32, from: u64) -> Result<(), FsError> {
        self.metrics.delta.dropped += self.dcm_drop_from(ino, from)?;
        let Some((geo, mut zone)) = self.read_zone(ino)? else {
            return Ok(());
        };
        let old_words = zone.words();
        let before = zone.records.len();
        zone.records.retain(|r| u64::from(r.index) < from);
        if zone.records.len() == before {
            return Ok(());
        }
        self.metrics.delta.dropped += (before - zone.records.len()) as u64;
        self.write_zone(ino, &geo, old_words, &zone)
    }

    /// Merges every delta of `ino` into its base (DCM's too; its pseudo file goes).
    pub(crate) fn merge_all_deltas(&mut self, ino: u32) -> Result<(), FsError> {
        self.dcm_restore_file(ino)?;
        let Some((_, zone)) = self.read_zone(ino)? else {
            return Ok(());
        };
        for r in &zone.records {
            self.merge_delta(ino, u64::from(r.index))?;
        }
        Ok(())
    }

    /// The inline deltas of `ino`: (page index, compressed bytes), oldest first.
    pub fn inline_deltas(&mut self, ino: u32) -> Result<Vec<(u64, usize)>, FsError> {
        let zone = self.read_zone(ino)?.map(|(_, z)| z).unwrap_or_default();
        Ok(zone
            .records
            .iter()
            .map(|r| (u64::from(r.index), r.delta.len()))
            .collect())
    }

    /// Folds every inline delta of every file reachable from the root into its base and
    /// checkpoints: the image is then stock F2FS (`fsck.f2fs` clean, `dump.f2fs` reads
    /// every file). Returns the deltas merged.
    pub fn restore_deltas(&mut self) -> Result<u64, FsError> {
        let before = self.metrics.delta.merges;
        let mut dirs = vec![ROOT_INO];
        while let Some(dir) = dirs.pop() {
            for e in self.readdir_ino(dir)? {
                match e.kind {
                    super::FileKind::Dir if e.name != "." && e.name != ".." => dirs.push(e.ino),
                    super::FileKind::File => self.merge_all_deltas(e.ino)?,
                    _ => {}
                }
            }
        }
        self.checkpoint(false)?;
        Ok(self.metrics.delta.merges - before)
    }

    /// Roll-forward: the zone of an fsync'd inode copy (checked), if it has one.
    pub(crate) fn zone_of_copy(
        &mut self,
        ino: u32,
        block: &Block,
        geo: &Geometry,
    ) -> Result<Option<Zone>, FsError> {
        if le32_at(block, OFF_FLAGS) & MEDFS_DELTA_FL == 0 {
            return Ok(None);
        }
        Zone::decode(&block[slots_range(geo)])
            .map(Some)
            .map_err(|e| corrupt(format!("inode {ino}: fsync'd delta zone: {e}")))
    }

    /// Roll-forward: clears the zone of a block being rebuilt (its bytes are no
    /// addresses) so that addresses can be replayed; the replayed copy's zone is put back
    /// by [`install_zone`](Self::install_zone) once they are.
    pub(crate) fn strip_zone(
        &mut self,
        ino: u32,
        block: &mut Block,
        geo: &Geometry,
    ) -> Result<(), FsError> {
        if le32_at(block, OFF_FLAGS) & MEDFS_DELTA_FL == 0 {
            return Ok(());
        }
        let range = slots_range(geo);
        let size = u16::from_le_bytes([block[range.end - 2], block[range.end - 3]]) as usize;
        let words = (ZONE_HEADER_BYTES + size).div_ceil(4);
        if words > geo.addrs {
            return Err(corrupt(format!(
                "inode {ino}: delta zone exceeds the address slots"
            )));
        }
        block[range.end - 4 * words..range.end].fill(0);
        clear_zone_flag(block);
        Ok(())
    }

    /// Roll-forward: puts a replayed inode's zone back.
    pub(crate) fn install_zone(&mut self, ino: u32, zone: &Zone) -> Result<(), FsError> {
        let geo = self.geometry(ino)?;
        self.write_zone(ino, &geo, 0, zone)
    }
}

#[cfg(test)]
mod tests {
    /// The base cache against the simplest model of it (a list in put order, the oldest
    /// dropped past the bound, a stripped entry keeping its place without bytes): the
    /// same addresses cached with the same bytes after every step of a random mix of
    /// puts (with bytes, and without as for a pseudo file's page), forgets, strips and
    /// bound changes.
    #[test]
    fn the_base_cache_keeps_what_an_ordered_list_keeps() {
        let mut cache = super::BaseCache::default();
        let mut model: Vec<(u32, Option<u8>)> = Vec::new();
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for step in 0..20_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let addr = (x % 61) as u32;
            let cap = if step < 15_000 {
                16
            } else {
                (x >> 40) as usize % 20
            };
            let fill = (step % 251) as u8;
            if x.is_multiple_of(7) {
                cache.forget(addr);
                model.retain(|e| e.0 != addr);
            } else if x.is_multiple_of(11) {
                cache.strip(addr);
                if let Some(e) = model.iter_mut().find(|e| e.0 == addr) {
                    e.1 = None;
                }
            } else {
                // One put in five is of a pseudo file's page (no bytes kept).
                let bytes = !x.is_multiple_of(5);
                let block = [fill; super::BLOCK_SIZE];
                cache.put(addr, bytes.then_some(&block[..]), cap);
                model.retain(|e| e.0 != addr);
                // A bound of 0 caches nothing new and drops only this address.
                if cap > 0 {
                    model.push((addr, bytes.then_some(fill)));
                    while model.len() > cap {
                        model.remove(0);
                    }
                }
            }
            for a in 0..61u32 {
                let want = model.iter().find(|e| e.0 == a).and_then(|e| e.1);
                let got = cache.get(a).map(|b| {
                    assert!(b.iter().all(|&v| v == b[0]), "step {step}");
                    b[0]
                });
                assert_eq!(got, want, "step {step}, address {a}");
            }
            assert!(
                cache.by_age.len() <= 2 * cache.by_addr.len() + 65,
                "step {step}"
            );
        }
    }

    #[test]
    fn last_nonzero_byte_matches_a_byte_scan() {
        for len in (0..40usize).chain([63, 64, 65, 127, 128, 129, 200, 3692]) {
            for at in 0..=len {
                let mut b = vec![0u8; len];
                if at < len {
                    b[at] = 7;
                }
                let want = b.iter().rposition(|&x| x != 0);
                assert_eq!(super::last_nonzero_byte(&b), want, "len {len} at {at}");
            }
        }
    }
}
