//! What the FTL counts. Slot counters are in 4 KiB units; every programmed page is split
//! among the causes below, so their sum is always `page_programs × slots_per_page`.

use serde::Serialize;

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FtlCounters {
    pub host_read_requests: u64,
    pub host_write_requests: u64,
    pub host_trim_requests: u64,
    pub host_flush_requests: u64,
    pub host_read_lbas: u64,
    pub host_write_lbas: u64,
    pub host_trim_lbas: u64,
    /// Slots programmed with host data.
    pub program_slots_host: u64,
    /// Slots programmed by garbage collection moving valid data.
    pub program_slots_gc: u64,
    /// Slots programmed by static wear levelling moving cold data.
    pub program_slots_wl: u64,
    /// Slots a read-modify-write copied: the sub-units of a page-sized mapping unit a host
    /// write left alone, read from flash and programmed again with it (`unit.rs`).
    #[serde(skip_serializing_if = "is_zero")]
    pub program_slots_rmw: u64,
    /// Slots programmed empty: padding of partial pages at flush/erase, and data superseded
    /// while it waited in the write buffer.
    pub program_slots_padding: u64,
    /// Slots of pages holding mapping records (trims, remaps: FTL metadata).
    pub program_slots_meta: u64,
    pub page_programs: u64,
    /// Pages read to serve host reads.
    pub page_reads_host: u64,
    /// Pages read by GC and wear levelling to move valid data.
    pub page_reads_relocation: u64,
    /// Flash reads of the rest of a page-sized mapping unit before a host write updating
    /// part of it (read-modify-write, `unit.rs`); zero and left out of JSON with 4 KiB
    /// mapping.
    #[serde(skip_serializing_if = "is_zero")]
    pub rmw_reads: u64,
    /// Host LBAs served from the controller's write buffer.
    pub buffer_read_hits: u64,
    /// Host LBAs read while unmapped (never written or trimmed): zeros, no flash access.
    pub unmapped_read_lbas: u64,
    pub gc_cycles_foreground: u64,
    pub gc_cycles_background: u64,
    pub wl_cycles: u64,
    pub erases_gc: u64,
    pub erases_wl: u64,
    pub blocks_retired: u64,
    pub program_failures: u64,
    /// Record pages written for trims.
    pub trim_record_pages: u64,
    /// Remap requests served, and the LBAs they remapped (no user data programmed).
    pub host_remap_requests: u64,
    pub host_remap_lbas: u64,
    /// Record pages written for remaps and for re-pointing the sharers of slots GC moved
    /// (the whole flash cost of REMAP besides the flush it implies).
    pub remap_record_pages: u64,
    /// Shared slots (referred to by several logical pages) GC or wear levelling moved: each
    /// once, with every referrer re-pointed.
    pub shared_slots_moved: u64,
    /// Host pages stored compressed.
    pub pages_compressed_host: u64,
    /// Uncompressed pages GC compressed while migrating them (caGC).
    pub pages_compressed_gc: u64,
    /// Of those, the pages compressed by GC cycles started in idle time (background caGC,
    /// off the host's timeline).
    pub pages_compressed_gc_background: u64,
    /// Fragments GC wrote across a page boundary (caGC, low compressibility).
    pub straddled_fragments: u64,
    /// Super-page allocation: pages GC or wear levelling put on another plane of the die
    /// than their cursor's, whose frontier was full and free pool empty (`stream.rs`).
    #[serde(skip_serializing_if = "is_zero")]
    pub relocation_plane_fallbacks: u64,
    /// Super-block GC (`ftl.gc.collect`): cycles that collected victims on the planes of a
    /// die together; each victim also counts as a GC cycle (`gc.rs`).
    #[serde(skip_serializing_if = "is_zero")]
    pub gc_super_blocks: u64,
    /// Codec output of every compressed page (without fragment header or padding).
    pub compressed_bytes: u64,
    /// Host pages whose predicted ratio could be checked against the codec's actual one.
    pub predictions_checked: u64,
    /// Sum of |predicted − actual| ratio (permille) over those pages.
    pub prediction_error_permille_sum: u64,
    /// Mapping-table cache (`cmt.rs`; all zero and left out of JSON while it is off):
    /// host lookups that found their entry in SRAM, and those that did not.
    #[serde(skip_serializing_if = "is_zero")]
    pub cmt_hits: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub cmt_misses: u64,
    /// Translation pages read from flash (misses, and read-modify-writes for GC and trims).
    #[serde(skip_serializing_if = "is_zero")]
    pub mapping_reads: u64,
    /// Translation pages programmed (dirty evictions, updates, translation GC excluded).
    #[serde(skip_serializing_if = "is_zero")]
    pub mapping_programs: u64,
    /// Of the programs, translation pages updated for entries not in the cache (GC, wear
    /// levelling and trims moving or dropping data).
    #[serde(skip_serializing_if = "is_zero")]
    pub mapping_updates_uncached: u64,
    /// Entries of GC, wear levelling and trims that entered the cache as dirty instead
    /// (`relocation_updates = "cached"`).
    #[serde(skip_serializing_if = "is_zero")]
    pub mapping_updates_inserted: u64,
    /// Of the reads: for host misses, and for dirty evictions (the entries of the page
    /// not in SRAM); the rest are GC, wear-levelling and trim updates.
    #[serde(skip_serializing_if = "is_zero")]
    pub mapping_reads_miss: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub mapping_reads_evict: u64,
    /// Virtual time the translation updates of GC, wear levelling and trims took, from
    /// their batch's start to its last program: summed and the longest batch.
    #[serde(skip_serializing_if = "is_zero")]
    pub mapping_update_ns_total: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub mapping_update_ns_max: u64,
    /// Translation-block GC: cycles (each erases one translation block) and pages moved.
    #[serde(skip_serializing_if = "is_zero")]
    pub translation_gc_cycles: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub translation_gc_moves: u64,
    /// UFS HPB (`hpb.rs`; zero and left out of JSON while off): host reads whose entries
    /// were all valid (no device lookup), that carried a stale entry (translated as usual),
    /// and that fell outside the host's map; subregion maps loaded (activations and
    /// reloads), regions the host dropped for room, and translation pages read for loads.
    #[serde(skip_serializing_if = "is_zero")]
    pub hpb_hits: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub hpb_stale: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub hpb_misses: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub hpb_loads: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub hpb_region_drops: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub hpb_map_reads: u64,
    /// Controller write buffer (`wbuf.rs`; zero and left out of JSON while off): writes
    /// that waited for room (a full buffer), how long (summed over them, and the longest),
    /// LBAs destaged to flash, FUA writes, LBAs a power cut lost from the buffer and LBAs a
    /// protected buffer programmed in its hold-up time.
    #[serde(skip_serializing_if = "is_zero")]
    pub write_buffer_full_waits: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub write_buffer_wait_ns_total: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub write_buffer_wait_ns_max: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub write_buffer_destaged_lbas: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub write_buffer_fua_writes: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub write_buffer_lost_lbas: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub write_buffer_hold_up_lbas: u64,
    pub power_cycles: u64,
    /// Virtual time the last recovery (mount) scan took.
    pub recovery_ns_last: u64,
}

impl FtlCounters {
    /// `n` data slots programmed for `cause`.
    #[inline]
    pub(crate) fn add_data_slots(&mut self, cause: crate::Cause, n: u64) {
        match cause {
            crate::Cause::Host => self.program_slots_host += n,
            crate::Cause::Gc => self.program_slots_gc += n,
            crate::Cause::WearLevel => self.program_slots_wl += n,
            crate::Cause::Rmw => self.program_slots_rmw += n,
        }
    }
}

impl FtlCounters {
    /// Total programmed slots; equals `page_programs × slots_per_page`.
    pub fn program_slots_total(&self) -> u64 {
        self.program_slots_host
            + self.program_slots_gc
            + self.program_slots_wl
            + self.program_slots_rmw
            + self.program_slots_padding
            + self.program_slots_meta
    }
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}

impl FtlCounters {
    /// Share of host mapping lookups served from SRAM (1 when the cache is off or idle).
    pub fn cmt_hit_rate(&self) -> f64 {
        match self.cmt_hits + self.cmt_misses {
            0 => 1.0,
            n => self.cmt_hits as f64 / n as f64,
        }
    }
}
