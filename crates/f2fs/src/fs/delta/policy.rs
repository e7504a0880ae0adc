//! MedFS's delta-chunk inlining (DCI) decisions as pure functions, with the published
//! source's constants as defaults (`../shared/reference/seed-systems.md` §A: `f2fs_write_end`,
//! `innode_data_replacement`, `f2fs_delta_get_node_path`). The mechanism in
//! [`super`] gathers the inputs and carries the answers out.

use serde::{Deserialize, Serialize};

use flashstack_sim::Nanos;

/// Which delta-compression scheme the file system runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeltaMode {
    /// Stock F2FS (the paper's F2FS-NODC).
    #[default]
    Off,
    /// Delta-chunk inlining only (the paper's "DCI"): deltas of small updates in the
    /// inode's `i_addr` tail; what does not fit is written as a normal page.
    Dci,
    /// Delta-chunk maintenance only (the paper's "DCM-only"): no inline deltas; deltas
    /// under `dcm_max_bytes` of read-cold/write-hot files (HCluster) go to the file's
    /// hidden pseudo file of compact pages; BGRes restores in idle time.
    Dcm,
    /// MedFS (DCI + DCM): inline first; what is not inlined (and what DCI evicts) goes
    /// to DCM as in `dcm`.
    Medfs,
    /// F2FS-DC, conventional delta compression: every admissible delta (under
    /// `dcm_max_bytes`, file over `dcm_min_file_blocks`) is kept in the data area, in
    /// the same pseudo file of compact pages as DCM, with no inline deltas, no HCluster
    /// admission and no BGRes (`docs/medfs.md`).
    Dc,
}

impl DeltaMode {
    /// Deltas may be inlined in the inode (DCI).
    pub fn inline_on(self) -> bool {
        matches!(self, DeltaMode::Dci | DeltaMode::Medfs)
    }

    /// Deltas may go to the pseudo file's compact pages (DCM or F2FS-DC).
    pub fn dcm_on(self) -> bool {
        matches!(self, DeltaMode::Dcm | DeltaMode::Medfs | DeltaMode::Dc)
    }

    /// HCluster admits files to DCM and BGRes restores them (DCM, MedFS; not F2FS-DC).
    pub fn hcluster_on(self) -> bool {
        matches!(self, DeltaMode::Dcm | DeltaMode::Medfs)
    }
}

/// The DCI options (`[fs.mount.delta]`), MedFS's published constants by default.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DeltaConfig {
    pub mode: DeltaMode,
    /// A delta is inlined only if its compressed size is below this (`c_size` is one
    /// byte: the paper's "delta < 256 B").
    pub inline_max_bytes: usize,
    /// Replacement margin (`innode_data_replacement`): with no room, a new delta evicts the
    /// largest inline one if it is at least this much smaller (the source's 81 B, the
    /// break-even of the paper's benefit/overhead rule, which is not published exactly).
    pub replace_margin_bytes: usize,
    /// Files of at least this many pages take no inline delta (`size_thred` = 852 pages).
    pub file_max_pages: u64,
    /// Words of `i_addr` shared by data pointers and the delta zone (852: the source's
    /// `852*4` budget, 20 words short of the 872-word inline area).
    pub inline_budget_words: usize,
    /// At most this many inline deltas per inode (the source's arrays hold 75).
    pub inline_max_deltas: usize,
    /// Host CPU time to make one delta (XOR + LZO1X-1 of a 4 KiB page): 7.4 µs, the
    /// paper's measurement on the Snapdragon 865 (`flashstack_codec::cost`, the table
    /// every host-side codec cost comes from).
    pub create_ns: Nanos,
    /// Host CPU time to apply one delta on a read (LZO1X-1 decompression + XOR): 8.3 µs.
    pub apply_ns: Nanos,
    /// Base pages kept in memory (ours): the kernel makes a delta in `write_end`, with the
    /// page in the page cache, rebuilding the flash base as `page ⊕ delta` without I/O.
    /// Here F2FS sees the new page only at writeback, so it keeps the last content of up
    /// to this many recently written or read data blocks; a miss reads the base from
    /// flash. 4,096 pages (16 MiB) by default; 0 always reads.
    pub base_cache_pages: usize,
    /// DCM takes a delta only below this many bytes (the source's `clen < 819`, about
    /// 4096 / 5: "5 pages to 1").
    pub dcm_max_bytes: usize,
    /// DCM takes deltas only of files with more than this many blocks (the source's
    /// `inode->i_blocks > 5`; the unit there is not recorded, here it is the on-disk
    /// `i_blocks`, 4 KiB blocks including the inode).
    pub dcm_min_file_blocks: u64,
    /// Compact pages per pseudo file at most (the source's 255; beyond, normal writes).
    pub dcm_max_compact_pages: usize,
    /// BGRes restores a DCM file holding fewer deltas than this (`main_compress_num < 5`).
    pub bgres_min_deltas: usize,
    /// Pseudo-file pages (meta and compact) kept in memory, clean or dirty (ours: the
    /// kernel keeps them in the page cache; `docs/medfs.md`). Dirty ones are written at
    /// the owner's fsync, at a checkpoint, or when this bound is passed.
    pub dcm_cache_pages: usize,
    /// Host CPU time of one HCluster classification (the paper's ≈ 1.2 µs).
    pub hcluster_ns: Nanos,
    /// HCluster's initial centroids in tenths of a call, `[writes, reads]` in label
    /// order (read-cold/write-cold, read-cold/write-hot, read-hot/write-cold,
    /// read-hot/write-hot): the source's (5.9, 2.9), (46.2, 5.5), (3.5, 31.1),
    /// (33.3, 30.8).
    pub hcluster_centroids_tenths: [[u32; 2]; 4],
    /// Diagnostic (changes no figure): when not empty, every computed delta's page pair
    /// is appended to this host file for `scripts/medfs-delta-anatomy.py` (record:
    /// inode, page index, whether the page already had a delta against the same base,
    /// our delta's length, as u32 LE; the file's name in 64 bytes; base; new page).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub pairs_dump: String,
}

impl Default for DeltaConfig {
    fn default() -> DeltaConfig {
        DeltaConfig {
            mode: DeltaMode::Off,
            inline_max_bytes: 256,
            replace_margin_bytes: 81,
            file_max_pages: 852,
            inline_budget_words: 852,
            inline_max_deltas: 75,
            // The shared codec cost table's row for the seed's phone.
            create_ns: flashstack_codec::cost::SD865_LZO_DELTA.compress_ns,
            apply_ns: flashstack_codec::cost::SD865_LZO_DELTA.decompress_ns,
            base_cache_pages: 4096,
            dcm_max_bytes: 819,
            dcm_min_file_blocks: 5,
            dcm_max_compact_pages: 255,
            bgres_min_deltas: 5,
            dcm_cache_pages: 512,
            hcluster_ns: 1_200,
            hcluster_centroids_tenths: super::hcluster::INITIAL_CENTROIDS_TENTHS,
            pairs_dump: String::new(),
        }
    }
}

impl DeltaConfig {
    /// MedFS's DCI with the seed's defaults.
    pub fn dci() -> DeltaConfig {
        DeltaConfig {
            mode: DeltaMode::Dci,
            ..DeltaConfig::default()
        }
    }

    /// The given scheme with the seed's defaults.
    pub fn with_mode(mode: DeltaMode) -> DeltaConfig {
        DeltaConfig {
            mode,
            ..DeltaConfig::default()
        }
    }

    pub fn enabled(&self) -> bool {
        self.mode != DeltaMode::Off
    }
}

/// What `f2fs_write_end` knows when a delta was not inlined (`f2fs_store_delta_in_main`).
#[derive(Clone, Copy, Debug, Default)]
pub struct DcmQuery {
    /// Compressed size of the delta.
    pub delta_bytes: usize,
    /// On-disk `i_blocks` of the file.
    pub file_blocks: u64,
    /// The file's HCluster class is read-cold/write-hot (ignored when `check_hotness`
    /// is false).
    pub read_cold_write_hot: bool,
    /// `type = 0` (a new delta: HCluster decides) or `type = 1` (a delta DCI evicts:
    /// no HCluster check).
    pub check_hotness: bool,
}

/// Whether a delta may go to DCM at all (before a compact page is chosen).
pub fn dcm_admit(q: &DcmQuery, cfg: &DeltaConfig) -> bool {
    let hot_ok = !q.check_hotness || !cfg.mode.hcluster_on() || q.read_cold_write_hot;
    cfg.mode.dcm_on()
        && q.delta_bytes < cfg.dcm_max_bytes
        && q.file_blocks > cfg.dcm_min_file_blocks
        && hot_ok
}

/// Where a DCM delta of `record_bytes` (delta + its 2-byte size) goes: the first compact
/// page with `FS > record_bytes` (`free_bytes` in page order), else a new page while
/// there are fewer than `dcm_max_compact_pages`, else none (a normal write).
pub fn dcm_place(free_bytes: &[usize], record_bytes: usize, cfg: &DeltaConfig) -> DcmPlace {
    match free_bytes.iter().position(|&f| f > record_bytes) {
        Some(i) => DcmPlace::Page(i),
        None if free_bytes.len() < cfg.dcm_max_compact_pages => DcmPlace::NewPage,
        None => DcmPlace::Full,
    }
}

/// [`dcm_place`]'s answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DcmPlace {
    /// The n-th compact page (in meta-page order).
    Page(usize),
    NewPage,
    Full,
}

/// BGRes's decision for one DCM file: restore it (fold every delta into its base and
/// destroy the pseudo file) when it left the read-cold/write-hot class (HCluster modes)
/// or holds fewer than `bgres_min_deltas` deltas.
pub fn bgres_restore(read_cold_write_hot: bool, deltas: usize, cfg: &DeltaConfig) -> bool {
    cfg.mode.hcluster_on() && (!read_cold_write_hot || deltas < cfg.bgres_min_deltas)
}

/// What `f2fs_write_end` checks before it makes a delta at all.
#[derive(Clone, Copy, Debug, Default)]
pub struct DeltaCandidate {
    /// The page has a valid block on flash (not a hole, not `NEW_ADDR`): the base.
    pub has_base: bool,
    /// The file is a regular, non-inline file (directories and inline files never).
    pub regular_file: bool,
    /// Pages the file spans after this write.
    pub file_pages: u64,
    /// In-file page index of the update.
    pub index: u64,
    /// Data address slots of the inode (`ADDRS_PER_INODE` of this inode).
    pub inode_slots: usize,
}

/// Whether an update of a page may take the delta path (the source's admission, before
/// compression): an update of an existing page of a file under `file_max_pages` whose
/// pointer lies in the inode itself. Atomic commits never ask (they write out of place).
pub fn delta_candidate(c: &DeltaCandidate, cfg: &DeltaConfig) -> bool {
    let base = cfg.enabled() && c.has_base && c.regular_file;
    // DCM keys deltas by page index alone: any page of the file may take one.
    base && (cfg.mode.dcm_on() || inline_candidate(c, cfg))
}

/// The DCI part of the admission: the file under `file_max_pages` and the page's
/// pointer within the inode's budget.
pub fn inline_candidate(c: &DeltaCandidate, cfg: &DeltaConfig) -> bool {
    let budget = cfg.inline_budget_words.min(c.inode_slots) as u64;
    cfg.mode.inline_on()
        && c.file_pages < cfg.file_max_pages
        && c.file_pages <= budget
        && c.index < budget
}

/// The inline zone of one inode, as the replacement rule sees it.
#[derive(Clone, Copy, Debug, Default)]
pub struct ZoneRoom {
    /// Compressed size of the new delta.
    pub delta_bytes: usize,
    /// Free bytes for records (the source's `left`, with this page's old delta removed).
    pub free_bytes: usize,
    /// Inline deltas already held (this page's old one removed).
    pub deltas: usize,
    /// Size of the largest inline delta, if any.
    pub largest_bytes: Option<usize>,
}

/// What to do with a new delta.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeltaDecision {
    /// Store it inline: no data block is written, the inode is dirtied.
    Inline,
    /// Evict the largest inline delta (merged into its base, which is written out of
    /// place), then store this one.
    ReplaceLargest,
    /// Write the page as a normal out-of-place block (its old delta, if any, is dropped).
    Write,
}

/// Bytes a record takes in the zone: page index (2 B), `c_size` (1 B), the delta.
pub const RECORD_HEADER_BYTES: usize = 3;

/// `f2fs_write_end`'s insert test and `innode_data_replacement`: inline if the delta is
/// under `inline_max_bytes` and `left > clen + 3`; else, with inline deltas present and
/// the new delta under `inline_max_bytes − margin`, replace the largest one when the new
/// delta is smaller than it by more than the margin; else a normal write.
pub fn delta_decision(z: &ZoneRoom, cfg: &DeltaConfig) -> DeltaDecision {
    if z.delta_bytes >= cfg.inline_max_bytes {
        return DeltaDecision::Write;
    }
    let fits = z.free_bytes > z.delta_bytes + RECORD_HEADER_BYTES;
    if fits && z.deltas < cfg.inline_max_deltas {
        return DeltaDecision::Inline;
    }
    let small = z.delta_bytes + cfg.replace_margin_bytes < cfg.inline_max_bytes;
    match z.largest_bytes {
        Some(max) if small && z.delta_bytes + cfg.replace_margin_bytes < max => {
            DeltaDecision::ReplaceLargest
        }
        _ => DeltaDecision::Write,
    }
}

/// How many of the oldest inline deltas a file's growth evicts (`f2fs_retrieve_delta`,
/// FIFO on append): enough that the zone no longer covers slot `index`. `zone_bytes`
/// gives each record's size in age order (oldest first) after the fixed header. A slot
/// beyond the budget or the inode (the file needs a direct node or leaves DCI) evicts
/// all (`f2fs_retrieve_inode_delta`).
pub fn growth_evictions(
    record_bytes: &[usize],
    header_bytes: usize,
    index: u64,
    inode_slots: usize,
    cfg: &DeltaConfig,
) -> usize {
    let budget = cfg.inline_budget_words.min(inode_slots) as u64;
    if index >= budget {
        return record_bytes.len();
    }
    // Slots [0, index] must stay clear of the zone at the tail of the inode's slots.
    let room = (inode_slots as u64 - (index + 1)) as usize * 4;
    let mut zone: usize = header_bytes + record_bytes.iter().sum::<usize>();
    let mut evicted = 0;
    while zone > room && evicted < record_bytes.len() {
        zone -= record_bytes[evicted];
        evicted += 1;
    }
    if evicted == record_bytes.len() {
        record_bytes.len()
    } else {
        evicted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn room(delta: usize, free: usize, n: usize, largest: Option<usize>) -> ZoneRoom {
        ZoneRoom {
            delta_bytes: delta,
            free_bytes: free,
            deltas: n,
            largest_bytes: largest,
        }
    }

    #[test]
    fn small_deltas_go_inline_while_they_fit() {
        let cfg = DeltaConfig::dci();
        assert_eq!(
            delta_decision(&room(100, 104, 0, None), &cfg),
            DeltaDecision::Inline
        );
        // `left > clen + 3` is strict.
        assert_eq!(
            delta_decision(&room(100, 103, 0, None), &cfg),
            DeltaDecision::Write
        );
        assert_eq!(
            delta_decision(&room(255, 4000, 0, None), &cfg),
            DeltaDecision::Inline
        );
        assert_eq!(
            delta_decision(&room(256, 4000, 0, None), &cfg),
            DeltaDecision::Write
        );
        assert_eq!(
            delta_decision(&room(10, 4000, 75, Some(10)), &cfg),
            DeltaDecision::Write
        );
    }

    #[test]
    fn replacement_needs_the_margin() {
        let cfg = DeltaConfig::dci();
        // 100 + 81 = 181 < 200: replace; 120 + 81 = 201: not.
        assert_eq!(
            delta_decision(&room(100, 0, 3, Some(200)), &cfg),
            DeltaDecision::ReplaceLargest
        );
        assert_eq!(
            delta_decision(&room(120, 0, 3, Some(200)), &cfg),
            DeltaDecision::Write
        );
        // The new delta itself must be under 256 − 81 = 175.
        assert_eq!(
            delta_decision(&room(175, 0, 3, Some(255)), &cfg),
            DeltaDecision::Write
        );
        assert_eq!(
            delta_decision(&room(174, 0, 3, Some(256)), &cfg),
            DeltaDecision::ReplaceLargest
        );
        assert_eq!(
            delta_decision(&room(10, 0, 0, None), &cfg),
            DeltaDecision::Write
        );
    }

    #[test]
    fn candidates_are_updates_of_small_files() {
        let cfg = DeltaConfig::dci();
        let c = DeltaCandidate {
            has_base: true,
            regular_file: true,
            file_pages: 10,
            index: 3,
            inode_slots: 873,
        };
        assert!(delta_candidate(&c, &cfg));
        assert!(!delta_candidate(&c, &DeltaConfig::default()));
        assert!(!delta_candidate(
            &DeltaCandidate {
                has_base: false,
                ..c
            },
            &cfg
        ));
        assert!(!delta_candidate(
            &DeltaCandidate {
                regular_file: false,
                ..c
            },
            &cfg
        ));
        assert!(!delta_candidate(
            &DeltaCandidate {
                file_pages: 852,
                ..c
            },
            &cfg
        ));
        assert!(delta_candidate(
            &DeltaCandidate {
                file_pages: 851,
                index: 850,
                ..c
            },
            &cfg
        ));
    }

    #[test]
    fn growth_evicts_oldest_first_until_the_slot_is_clear() {
        let cfg = DeltaConfig::dci();
        // 873 slots; records of 103, 53, 23 bytes after a 5-byte header: 184 bytes, 46 words.
        let recs = [103, 53, 23];
        assert_eq!(growth_evictions(&recs, 5, 826, 873, &cfg), 0);
        // Slot 827 leaves 45 words (180 B): the oldest (103 B) goes.
        assert_eq!(growth_evictions(&recs, 5, 827, 873, &cfg), 1);
        // Slot 851 leaves 21 words (84 B): the 81 B left after the oldest fit.
        assert_eq!(growth_evictions(&recs, 5, 851, 873, &cfg), 1);
        assert_eq!(growth_evictions(&recs, 5, 852, 873, &cfg), 3);
        assert_eq!(growth_evictions(&[], 5, 900, 873, &cfg), 0);
    }
}
