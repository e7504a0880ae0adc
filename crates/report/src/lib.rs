//! Run reports: every figure a flashstack run prints, computed from the device's counters,
//! and rendered as a terminal table, JSON or CSV (one row per run).

mod render;
mod trace;

use std::collections::BTreeMap;

use flashstack_ftl::Ftl;
use flashstack_sim::{LatencySummary, NS_PER_SEC};
use serde::Serialize;

pub use render::{
    cell_text, csv_cell, flatten_json, flatten_json_values, render_columns, render_csv,
    render_json, render_table,
};
pub use trace::{
    render_trace_notes, ExistingReadFigures, IdleGapFigures, ProcessFigures, TraceFigures,
    OTHER_PROCESSES,
};

/// What was run.
#[derive(Clone, Debug, Serialize)]
pub struct RunInfo {
    pub device: String,
    pub gc_policy: String,
    pub workload: String,
    pub seed: u64,
    pub contents_stored: bool,
    pub user_capacity_bytes: u64,
    pub raw_capacity_bytes: u64,
    /// Utilisation reached by preconditioning, if any.
    pub precondition: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct HostFigures {
    pub read_requests: u64,
    pub write_requests: u64,
    pub trim_requests: u64,
    pub flush_requests: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub trim_bytes: u64,
}

/// The host's REMAPs (Janusd's logical defragmentation) and what they cost the FTL;
/// all zero for a run without remaps (then the terminal table leaves them out).
#[derive(Clone, Debug, Default, Serialize)]
pub struct RemapFigures {
    pub requests: u64,
    pub lbas: u64,
    /// Mapping-record pages programmed for them.
    pub record_pages: u64,
    /// Slots shared by several LBAs that garbage collection moved (once each).
    pub shared_slots_moved: u64,
}

impl RemapFigures {
    pub fn is_zero(&self) -> bool {
        self.requests == 0
            && self.lbas == 0
            && self.record_pages == 0
            && self.shared_slots_moved == 0
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct NandFigures {
    pub page_programs: u64,
    pub page_reads: u64,
    pub block_erases: u64,
    pub program_bytes: u64,
    pub read_retries: u64,
    pub program_failures: u64,
    pub erase_failures: u64,
    pub blocks_retired: u64,
    /// Of the page reads: reads of the rest of a page-sized mapping unit before a partial
    /// host update (`ftl.mapping_unit_bytes`); left out while zero.
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub rmw_reads: u64,
}

fn is_zero_u64(x: &u64) -> bool {
    *x == 0
}

fn is_zero_f64(x: &f64) -> bool {
    *x == 0.0
}

/// Programmed bytes ÷ host-written bytes, and its split by cause (the parts sum to total).
#[derive(Clone, Debug, Serialize)]
pub struct WriteAmplification {
    pub total: f64,
    pub host: f64,
    pub gc: f64,
    pub wear_levelling: f64,
    /// The rest of page-sized mapping units copied by partial host updates (left out
    /// while zero).
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub read_modify_write: f64,
    pub padding: f64,
    pub metadata: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct GcFigures {
    pub policy: String,
    pub foreground_cycles: u64,
    pub background_cycles: u64,
    pub migrated_bytes: u64,
    pub wear_levelling_cycles: u64,
    pub wear_levelling_bytes: u64,
    pub relocation_page_reads: u64,
}

/// The FTL's mapping-table cache (DFTL): present only when the device has one.
#[derive(Clone, Debug, Serialize)]
pub struct MappingCacheFigures {
    pub sram_bytes: u64,
    pub policy: String,
    pub hits: u64,
    pub misses: u64,
    /// Host mapping lookups served from SRAM ÷ all host lookups.
    pub hit_rate: f64,
    /// Translation pages read from flash and programmed to it.
    pub mapping_reads: u64,
    pub mapping_programs: u64,
    /// Of the programs, updates for entries not cached (GC, wear levelling, trims).
    pub mapping_updates_uncached: u64,
    /// Entries of GC, wear levelling and trims that entered the cache as dirty instead
    /// (`relocation_updates = "cached"`; absent when none).
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub mapping_updates_inserted: u64,
    pub translation_gc_cycles: u64,
    pub translation_gc_moves: u64,
    /// Where the reads went: host misses and dirty evictions (the rest are GC, wear
    /// levelling and trim updates).
    pub mapping_reads_miss: u64,
    pub mapping_reads_evict: u64,
    /// Virtual time of the GC / wear-levelling / trim translation-update batches: summed
    /// and the longest one.
    pub mapping_update_ns_total: u64,
    pub mapping_update_ns_max: u64,
    /// UFS HPB (`ftl.mapping_cache.hpb`; zeros when off): host memory for entries, reads
    /// served from the host's entries, carrying a stale one, or not covered; subregion
    /// loads, regions dropped for room, translation pages read for loads.
    pub hpb_host_map_bytes: u64,
    pub hpb_hits: u64,
    pub hpb_stale: u64,
    pub hpb_misses: u64,
    pub hpb_loads: u64,
    pub hpb_region_drops: u64,
    pub hpb_map_reads: u64,
}

/// The controller write buffer (`ftl.write_buffer`): present only when the device has one.
#[derive(Clone, Debug, Serialize)]
pub struct WriteBufferFigures {
    pub capacity_bytes: u64,
    pub destage: String,
    pub power_loss_protected: bool,
    /// Host LBAs read from the buffer (and from partly filled page buffers).
    pub buffer_read_hits: u64,
    /// Host LBAs destaged to flash.
    pub destaged_lbas: u64,
    /// Writes that waited for room, and how long: summed and the longest.
    pub full_waits: u64,
    pub wait_ns_total: u64,
    pub wait_ns_max: u64,
    pub fua_writes: u64,
    /// LBAs power cuts took from the buffer, and LBAs a protected buffer saved.
    pub lost_lbas: u64,
    pub hold_up_lbas: u64,
    /// LBAs still buffered when the report was taken (not yet on flash).
    pub buffered_lbas: u64,
}

/// Die-level commands under `nand.die_rules = "one-command-per-die"` or
/// `"independent-plane-reads"` (absent with independent planes, where nothing joins):
/// commands per kind (a multi-plane command counts once), and of them those that ran on
/// two or more planes.
#[derive(Clone, Debug, Serialize)]
pub struct DieCommandFigures {
    pub channel_model: String,
    pub multi_plane: bool,
    pub read_commands: u64,
    pub program_commands: u64,
    pub erase_commands: u64,
    pub multi_plane_reads: u64,
    pub multi_plane_programs: u64,
    pub multi_plane_erases: u64,
}

/// Per-block lifetime erase counts over the whole device (good blocks).
#[derive(Clone, Debug, Serialize)]
pub struct EraseDistribution {
    pub blocks: u64,
    pub erase_count_min: u32,
    pub erase_count_mean: f64,
    pub erase_count_max: u32,
    pub erase_count_stddev: f64,
    /// (lowest erase count in bucket, blocks); ten equal-width buckets from min to max.
    pub histogram: Vec<(u32, u64)>,
}

/// In-device compression (zero everywhere on devices without it).
#[derive(Clone, Debug, Serialize)]
pub struct CompressionFigures {
    pub policy: String,
    pub pages_compressed_host: u64,
    pub pages_compressed_gc: u64,
    /// Of those, the pages compressed by GC cycles started in idle time (background caGC).
    pub pages_compressed_gc_background: u64,
    /// Codec output of the compressed pages.
    pub compressed_bytes: u64,
    /// Flash bytes that host data took when first written ÷ host bytes: the R_compress of
    /// the lifetime formula (1.0 when no host page was compressed).
    pub stored_ratio: f64,
    /// Mean |predicted − actual| ratio over the pages the predictor's choice let us check.
    pub prediction_error_mean: f64,
}

/// Energy by component, in millijoules.
#[derive(Clone, Debug, Serialize)]
pub struct EnergyFigures {
    pub read_mj: f64,
    pub program_mj: f64,
    pub erase_mj: f64,
    pub transfer_mj: f64,
    pub idle_mj: f64,
    pub total_mj: f64,
}

/// MedFS's lifetime formula, LIFETIME = PEC × (1 + OP) / (365 × DWPD × WA × R_compress),
/// with each input shown.
#[derive(Clone, Debug, Serialize)]
pub struct LifetimeFigures {
    /// Program/erase cycles a block endures (`nand.endurance.pe_cycles_max`).
    pub pe_cycles: u32,
    /// Over-provisioning ratio (`ftl.overprovisioning_ratio`).
    pub overprovisioning: f64,
    /// Host bytes written per day ÷ user capacity.
    pub dwpd: f64,
    /// "measured" (host writes over the simulated span) or "assumed" (given by the user).
    pub dwpd_source: String,
    /// Flash bytes programmed per byte *stored* (after compression): the report's write
    /// amplification ÷ `compression_ratio`, so that WA × R_compress is the report's write
    /// amplification (flash bytes per host byte).
    pub write_amplification: f64,
    /// R_compress: [`CompressionFigures::stored_ratio`].
    pub compression_ratio: f64,
    pub lifetime_years: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    pub run: RunInfo,
    pub simulated_seconds: f64,
    pub host: HostFigures,
    pub remap: RemapFigures,
    pub nand: NandFigures,
    pub write_amplification: WriteAmplification,
    pub gc: GcFigures,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mapping_cache: Option<MappingCacheFigures>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_buffer: Option<WriteBufferFigures>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub die_commands: Option<DieCommandFigures>,
    pub erase_distribution: EraseDistribution,
    pub latency: BTreeMap<String, LatencySummary>,
    pub compression: CompressionFigures,
    pub energy: EnergyFigures,
    pub lifetime: LifetimeFigures,
    /// What the block trace held and what was done to it before the replay, and who issued
    /// what (block traces only; absent for other workloads).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceFigures>,
    /// Write amplification and the device's free blocks over simulated time (block-level
    /// runs that asked for it; a whole-stack run keeps its own at the top of its report).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeline: Option<flashstack_sim::timeline::Timeline>,
}

/// Options for figures that need an outside assumption.
#[derive(Clone, Debug, Default)]
pub struct ReportOptions {
    /// Drive writes per day to assume for the lifetime projection; `None` measures it over
    /// the simulated span.
    pub dwpd: Option<f64>,
}

fn ratio(numerator: u64, denominator: u64) -> f64 {
    if denominator == 0 {
        0.0
    } else {
        numerator as f64 / denominator as f64
    }
}

impl RunReport {
    /// Builds the report of the measurement phase of `ftl`, ending at `end_ns`.
    pub fn from_device(ftl: &Ftl, run: RunInfo, options: &ReportOptions) -> RunReport {
        let c = ftl.counters();
        let n = ftl.nand().counters();
        let g = &ftl.config().nand.geometry;
        let span_ns = ftl.busy_until_ns().max(ftl.last_arrival_ns()) - ftl.measure_start_ns();
        let host_bytes = c.host_write_lbas * 4096;
        let slot_bytes = ftl.nand().slot_bytes() as u64;
        let slot = |slots: u64| ratio(slots * slot_bytes, host_bytes);
        let write_amplification = WriteAmplification {
            total: ratio(n.page_programs * g.page_size_bytes as u64, host_bytes),
            host: slot(c.program_slots_host),
            gc: slot(c.program_slots_gc),
            wear_levelling: slot(c.program_slots_wl),
            read_modify_write: slot(c.program_slots_rmw),
            padding: slot(c.program_slots_padding),
            metadata: slot(c.program_slots_meta),
        };
        // Without compressed host pages the ratio is 1 by definition (host slots ÷ host
        // bytes would read 0.999 when a write superseded another still in the buffer,
        // which is padding, not compression).
        let stored_ratio = match (host_bytes, c.pages_compressed_host) {
            (0, _) | (_, 0) => 1.0,
            _ => ratio(c.program_slots_host * slot_bytes, host_bytes),
        };
        let compression = CompressionFigures {
            policy: ftl
                .config()
                .ftl
                .compression
                .as_ref()
                .map_or("none".to_string(), |c| c.policy.name().to_string()),
            pages_compressed_host: c.pages_compressed_host,
            pages_compressed_gc: c.pages_compressed_gc,
            pages_compressed_gc_background: c.pages_compressed_gc_background,
            compressed_bytes: c.compressed_bytes,
            stored_ratio,
            prediction_error_mean: ratio(c.prediction_error_permille_sum, c.predictions_checked)
                / 1000.0,
        };
        let lifetime = lifetime(
            ftl,
            host_bytes,
            span_ns,
            &write_amplification,
            stored_ratio,
            options,
        );
        RunReport {
            simulated_seconds: span_ns as f64 / NS_PER_SEC as f64,
            host: HostFigures {
                read_requests: c.host_read_requests,
                write_requests: c.host_write_requests,
                trim_requests: c.host_trim_requests,
                flush_requests: c.host_flush_requests,
                read_bytes: c.host_read_lbas * 4096,
                write_bytes: host_bytes,
                trim_bytes: c.host_trim_lbas * 4096,
            },
            remap: RemapFigures {
                requests: c.host_remap_requests,
                lbas: c.host_remap_lbas,
                record_pages: c.remap_record_pages,
                shared_slots_moved: c.shared_slots_moved,
            },
            nand: NandFigures {
                page_programs: n.page_programs,
                page_reads: n.page_reads,
                block_erases: n.block_erases,
                program_bytes: n.page_programs * g.page_size_bytes as u64,
                read_retries: n.read_retries,
                program_failures: n.program_failures,
                erase_failures: n.erase_failures,
                blocks_retired: c.blocks_retired,
                rmw_reads: c.rmw_reads,
            },
            gc: GcFigures {
                policy: ftl.policy_name().to_string(),
                foreground_cycles: c.gc_cycles_foreground,
                background_cycles: c.gc_cycles_background,
                migrated_bytes: c.program_slots_gc * slot_bytes,
                wear_levelling_cycles: c.wl_cycles,
                wear_levelling_bytes: c.program_slots_wl * slot_bytes,
                relocation_page_reads: c.page_reads_relocation,
            },
            mapping_cache: mapping_cache(ftl),
            write_buffer: write_buffer(ftl),
            die_commands: die_commands(ftl),
            write_amplification,
            erase_distribution: erase_distribution(ftl),
            latency: latency(ftl),
            compression,
            energy: energy(ftl, span_ns),
            lifetime,
            run,
            trace: None,
            timeline: None,
        }
    }
}

fn mapping_cache(ftl: &Ftl) -> Option<MappingCacheFigures> {
    let config = &ftl.config().ftl.mapping_cache;
    if config.is_off() {
        return None;
    }
    let c = ftl.counters();
    Some(MappingCacheFigures {
        sram_bytes: config.sram_bytes,
        policy: serde_json::to_value(config.policy)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
        hits: c.cmt_hits,
        misses: c.cmt_misses,
        hit_rate: c.cmt_hit_rate(),
        mapping_reads: c.mapping_reads,
        mapping_programs: c.mapping_programs,
        mapping_updates_uncached: c.mapping_updates_uncached,
        mapping_updates_inserted: c.mapping_updates_inserted,
        translation_gc_cycles: c.translation_gc_cycles,
        translation_gc_moves: c.translation_gc_moves,
        mapping_reads_miss: c.mapping_reads_miss,
        mapping_reads_evict: c.mapping_reads_evict,
        mapping_update_ns_total: c.mapping_update_ns_total,
        mapping_update_ns_max: c.mapping_update_ns_max,
        hpb_host_map_bytes: config.hpb.host_map_bytes,
        hpb_hits: c.hpb_hits,
        hpb_stale: c.hpb_stale,
        hpb_misses: c.hpb_misses,
        hpb_loads: c.hpb_loads,
        hpb_region_drops: c.hpb_region_drops,
        hpb_map_reads: c.hpb_map_reads,
    })
}

fn die_commands(ftl: &Ftl) -> Option<DieCommandFigures> {
    use flashstack_nand::DieRules;
    let config = &ftl.config().nand;
    if config.die_rules == DieRules::IndependentPlanes {
        return None;
    }
    let n = ftl.nand().counters();
    let d = ftl.nand().die_command_counters();
    Some(DieCommandFigures {
        channel_model: config.timing.channel_model.name().to_string(),
        multi_plane: config.multi_plane,
        read_commands: n.page_reads - d.plane_joins_read,
        program_commands: n.page_programs - d.plane_joins_program,
        erase_commands: n.block_erases - d.plane_joins_erase,
        multi_plane_reads: d.multi_plane_reads,
        multi_plane_programs: d.multi_plane_programs,
        multi_plane_erases: d.multi_plane_erases,
    })
}

fn write_buffer(ftl: &Ftl) -> Option<WriteBufferFigures> {
    let config = &ftl.config().ftl.write_buffer;
    let buffered_lbas = ftl.write_buffer_lbas()?;
    let c = ftl.counters();
    Some(WriteBufferFigures {
        capacity_bytes: config.capacity_bytes,
        destage: serde_json::to_value(config.destage)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
        power_loss_protected: config.power_loss_protected,
        buffer_read_hits: c.buffer_read_hits,
        destaged_lbas: c.write_buffer_destaged_lbas,
        full_waits: c.write_buffer_full_waits,
        wait_ns_total: c.write_buffer_wait_ns_total,
        wait_ns_max: c.write_buffer_wait_ns_max,
        fua_writes: c.write_buffer_fua_writes,
        lost_lbas: c.write_buffer_lost_lbas,
        hold_up_lbas: c.write_buffer_hold_up_lbas,
        buffered_lbas,
    })
}

fn latency(ftl: &Ftl) -> BTreeMap<String, LatencySummary> {
    let l = ftl.latencies();
    [
        ("read", &l.read),
        ("write", &l.write),
        ("trim", &l.trim),
        ("flush", &l.flush),
    ]
    .into_iter()
    .map(|(name, h)| (name.to_string(), h.summary()))
    .collect()
}

fn erase_distribution(ftl: &Ftl) -> EraseDistribution {
    let nand = ftl.nand();
    let counts: Vec<u32> = (0..nand.erase_counts().len() as u32)
        .filter(|&b| !nand.is_bad(b))
        .map(|b| nand.erase_count(b))
        .collect();
    let blocks = counts.len() as u64;
    let min = counts.iter().copied().min().unwrap_or(0);
    let max = counts.iter().copied().max().unwrap_or(0);
    let mean = ratio(counts.iter().map(|&c| c as u64).sum(), blocks);
    let variance = counts
        .iter()
        .map(|&c| (c as f64 - mean).powi(2))
        .sum::<f64>()
        / blocks.max(1) as f64;
    let width = ((max - min) / 10).max(1);
    let mut histogram: Vec<(u32, u64)> = (0..10).map(|i| (min + i * width, 0)).collect();
    for &c in &counts {
        let bucket = (((c - min) / width) as usize).min(9);
        histogram[bucket].1 += 1;
    }
    histogram.retain(|&(lo, n)| n > 0 || lo <= max);
    EraseDistribution {
        blocks,
        erase_count_min: min,
        erase_count_mean: mean,
        erase_count_max: max,
        erase_count_stddev: variance.sqrt(),
        histogram,
    }
}

fn energy(ftl: &Ftl, span_ns: u64) -> EnergyFigures {
    let e = &ftl.config().nand.energy;
    let n = ftl.nand().counters();
    let g = &ftl.config().nand.geometry;
    let mj = |nj: f64| nj / 1e6;
    let read_mj = mj((n.page_reads + n.oob_reads) as f64 * e.read_nj as f64);
    let program_mj = mj(n.page_programs as f64 * e.program_nj as f64);
    let erase_mj = mj(n.block_erases as f64 * e.erase_nj as f64);
    let transfer_mj =
        mj(n.transfer_bytes as f64 / g.page_size_bytes as f64 * e.transfer_nj_per_page as f64);
    // Standby power of every die over the whole span (µW × ns = fJ).
    let idle_mj = e.idle_uw as f64 * g.dies() as f64 * span_ns as f64 / 1e12;
    EnergyFigures {
        read_mj,
        program_mj,
        erase_mj,
        transfer_mj,
        idle_mj,
        total_mj: read_mj + program_mj + erase_mj + transfer_mj + idle_mj,
    }
}

/// WA in the formula counts flash writes per byte of *stored* data, so that WA × R_compress
/// is flash bytes per host byte (the measured total).
fn lifetime(
    ftl: &Ftl,
    host_bytes: u64,
    span_ns: u64,
    wa: &WriteAmplification,
    compression_ratio: f64,
    options: &ReportOptions,
) -> LifetimeFigures {
    let write_amplification = if compression_ratio > 0.0 {
        wa.total / compression_ratio
    } else {
        wa.total
    };
    let config = ftl.config();
    let days = span_ns as f64 / (86_400.0 * NS_PER_SEC as f64);
    let (dwpd, dwpd_source) = match options.dwpd {
        Some(d) => (d, "assumed"),
        None => (
            ratio(host_bytes, ftl.user_capacity_bytes()) / days.max(f64::MIN_POSITIVE),
            "measured",
        ),
    };
    let pe_cycles = config.nand.endurance.pe_cycles_max;
    let overprovisioning = config.ftl.overprovisioning_ratio;
    let denominator = 365.0 * dwpd * write_amplification * compression_ratio;
    let lifetime_years = if denominator > 0.0 {
        pe_cycles as f64 * (1.0 + overprovisioning) / denominator
    } else {
        f64::INFINITY
    };
    LifetimeFigures {
        pe_cycles,
        overprovisioning,
        dwpd,
        dwpd_source: dwpd_source.to_string(),
        write_amplification,
        compression_ratio,
        lifetime_years,
    }
}
