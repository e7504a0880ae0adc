//! The LDC paper's evaluation (§6): PM, zFTL, SC, LDC and OPT on the seven workloads of
//! Table 4, reported as Fig. 8 (pages compressed, erases, GC overhead), Fig. 9 (write,
//! read and worst-case latency) and Fig. 10 (LDC's write-latency gain across controller
//! clocks).
//!
//! Workloads: the built-in `ldc:*` workloads of `flashstack-trace` (Table 4's request
//! counts and write ratios exact, volumes to the page; SQLite, journal, cache and photo
//! traffic in their own content zones; `docs/ldc-workloads.md`). Before each run the
//! workload's existing data is laid down from its snapshot zones (85% of the device, the
//! §4.1 mix), policy-neutrally by default (stored raw with its predicted ratio, as the
//! paper initialises it), and aged by random overwrites. Each workload is replayed three
//! times, as in the paper. GC runs on demand and in idle time (`presets::ldc_emmc_with`).
//! `docs/ldc-reproduction.md` lists every modelling choice.

use flashstack_codec::{Codec, Lzo1x1};
use std::sync::{Arc, OnceLock};

use flashstack_content::{ContentClass, ContentConfig, ContentModel, PageCorpus, PAGE_SIZE};
use flashstack_ftl::compression::{CompressionPolicyKind, GcStraddleScope, RawStreams};
use flashstack_ftl::presets;
use flashstack_replay::{
    content_zones, LayDown, NoProgress, OutOfRange, Progress, Replayer, RunConfig,
    DEFAULT_SNAPSHOT_AGING,
};
use flashstack_report::{ReportOptions, RunReport};
use flashstack_trace::builtin::{
    back_to_back, Builtin, BuiltinWorkload, LdcApp, LDC_PASSES, REPEAT_GAP_NS,
};
use flashstack_trace::RequestKind;
use serde::Serialize;
use thiserror::Error;

use crate::paper::{Headline, PaperFigure};

/// Share of the user capacity the existing data takes (an assumption of the built-in
/// workloads; the paper does not say how full its 16 GiB device was).
pub const SNAPSHOT_UTILIZATION: f64 = 0.85;
/// Controller clocks of Fig. 10.
pub const CLOCKS_MHZ: [u32; 5] = [140, 170, 200, 230, 260];

#[derive(Clone, Debug)]
pub struct LdcOptions {
    /// 256 MiB device and one eighth of every workload: under a minute.
    pub quick: bool,
    pub seed: u64,
    /// Share of the existing data overwritten at random before each run
    /// ([`SNAPSHOT_AGING`] by default).
    pub aging: f64,
    /// How the existing data and its aging reach the device (policy-neutral by default).
    pub lay_down: LayDown,
    /// Share of the user capacity the existing data takes ([`SNAPSHOT_UTILIZATION`] by
    /// default): the user's data zone ends there.
    pub fill: f64,
    /// Runs executed at once, on their own threads (at least 1). Each run is independent
    /// and seeded alone, and results are kept in run order, so the figures are the same
    /// for any value; each run holds its device's contents in memory (the full run's
    /// 16 GiB device keeps pages by reference, about 2 GB a run).
    pub jobs: usize,
    /// Which host log raw pages join on the compressing policies (`by-ratio` by default,
    /// the paper's grouping; `one` is an ablation, `docs/ldc-reproduction.md`).
    pub raw_streams: RawStreams,
    /// Which policies' GC packs compressed fragments across pages (`ca-gc` by default).
    pub gc_straddle_scope: GcStraddleScope,
    /// The device's user capacity in GiB (`None`: the paper's 16 GiB, quick 256 MiB).
    pub device_gib: Option<u32>,
    /// Keep written pages as references to the content model instead of their bytes
    /// (same figures, a fraction of the memory: docs/ldc-reproduction.md). Implied on a
    /// device over 4 GiB ([`keeps_pages_by_reference`]).
    pub by_reference: bool,
    /// Where the SQLite classes' page bytes come from (the personas' real databases by
    /// default; docs/ldc-workloads.md).
    pub sqlite_pages: SqlitePages,
}

/// Where the pages of the SQLite classes (`sqlite`, `sqlite-index`, `sqlite-blob`) come
/// from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SqlitePages {
    /// Real table and index pages of the LDC personas' databases, captured as they ran
    /// ([`persona_corpus`]); BLOB pages stay generated.
    #[default]
    Persona,
    /// The content model's synthetic b-tree leaves.
    Synthetic,
}

impl SqlitePages {
    pub fn name(self) -> &'static str {
        match self {
            SqlitePages::Persona => "persona",
            SqlitePages::Synthetic => "synthetic",
        }
    }

    pub fn is_default(&self) -> bool {
        *self == SqlitePages::default()
    }
}

impl std::str::FromStr for SqlitePages {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "persona" => Ok(SqlitePages::Persona),
            "synthetic" => Ok(SqlitePages::Synthetic),
            other => Err(format!("'{other}': expected `persona` or `synthetic`")),
        }
    }
}

/// The corpus of real SQLite pages the LDC workloads use: the six LDC personas' databases
/// (`flashstack_apps::corpus`, default options: seed 1, at most 1,024 pages per class).
/// Built once per process (about a second; docs/ldc-workloads.md) and shared by every run.
pub fn persona_corpus() -> Result<Arc<PageCorpus>, LdcError> {
    static CORPUS: OnceLock<Result<Arc<PageCorpus>, String>> = OnceLock::new();
    CORPUS
        .get_or_init(|| {
            // Table and index pages only: the personas' only BLOBs that spill to overflow
            // pages are Google Earth's map tiles (incompressible), which would stand for
            // every app's serialized stories and protobuf caches; `sqlite-blob` stays
            // generated (docs/ldc-workloads.md).
            flashstack_apps::corpus::sqlite_corpus(&flashstack_apps::corpus::CorpusOptions {
                classes: vec![ContentClass::SqliteTable, ContentClass::SqliteIndex],
                ..Default::default()
            })
            .map(Arc::new)
            .map_err(|e| e.to_string())
        })
        .clone()
        .map_err(|message| LdcError::Workload {
            app: "sqlite pages",
            message,
        })
}

/// The corpus `options` ask for, if any.
fn corpus_of(options: &LdcOptions) -> Result<Option<Arc<PageCorpus>>, LdcError> {
    match options.sqlite_pages {
        SqlitePages::Persona => persona_corpus().map(Some),
        SqlitePages::Synthetic => Ok(None),
    }
}

impl Default for LdcOptions {
    /// The full reproduction as `flashstack reproduce ldc` runs it: seed 1, the snapshot's
    /// fill and aging, laid down policy-neutral, one run at a time, the paper's device.
    fn default() -> LdcOptions {
        LdcOptions {
            quick: false,
            seed: 1,
            aging: SNAPSHOT_AGING,
            lay_down: LayDown::Neutral,
            fill: SNAPSHOT_UTILIZATION,
            jobs: 1,
            raw_streams: RawStreams::default(),
            gc_straddle_scope: GcStraddleScope::default(),
            device_gib: None,
            by_reference: false,
            sqlite_pages: SqlitePages::default(),
        }
    }
}

/// Table 4's app by its abbreviation (`FB`, `TW`, `ME`, `GE`, `CH`, `CA`, `MA`; any case).
pub fn app_by_abbrev(name: &str) -> Option<LdcApp> {
    LdcApp::ALL
        .into_iter()
        .find(|&a| abbrev(a).eq_ignore_ascii_case(name))
}

#[derive(Debug, Error)]
pub enum LdcError {
    #[error("{policy} on {app}: {source}")]
    Run {
        policy: &'static str,
        app: &'static str,
        #[source]
        source: Box<LdcError>,
    },
    #[error("{0}")]
    Replay(#[from] flashstack_replay::ReplayError),
    #[error("workload {app}: {message}")]
    Workload { app: &'static str, message: String },
    #[error("--fill {fill}: {reason}")]
    Fill { fill: f64, reason: String },
}

/// The figures of one (policy, app) run.
#[derive(Clone, Debug, Serialize)]
pub struct Figures {
    pub policy: &'static str,
    pub app: &'static str,
    pub clock_mhz: u32,
    pub page_programs: u64,
    pub block_erases: u64,
    pub gc_migrated_bytes: u64,
    /// Fig. 8(c)'s GC overhead as time: block erases plus page migration (the relocation
    /// reads and the programs of the migrated data), at the device's t_r, t_w and erase
    /// time, whether it ran on demand or in idle time.
    pub gc_time_ns: u64,
    pub gc_cycles_foreground: u64,
    pub gc_cycles_background: u64,
    pub pages_compressed: u64,
    pub pages_compressed_host: u64,
    /// Pages caGC compressed while migrating them, in any GC cycle.
    pub pages_compressed_gc: u64,
    /// Of those, in GC cycles started in idle time.
    pub pages_compressed_gc_background: u64,
    pub write_latency_ns_mean: u64,
    pub write_latency_ns_max: u64,
    pub read_latency_ns_mean: u64,
    pub read_latency_ns_max: u64,
    /// Fig. 9(c): the worst latency of any request, read or write.
    pub latency_ns_max: u64,
    pub host_write_bytes: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct LdcResults {
    pub quick: bool,
    pub aging: f64,
    /// Share of the user capacity the existing data takes.
    pub fill: f64,
    pub lay_down: LayDown,
    #[serde(skip_serializing_if = "RawStreams::is_default")]
    pub raw_streams: RawStreams,
    #[serde(skip_serializing_if = "GcStraddleScope::is_default")]
    pub gc_straddle_scope: GcStraddleScope,
    #[serde(skip_serializing_if = "SqlitePages::is_default")]
    pub sqlite_pages: SqlitePages,
    pub device_bytes: u64,
    /// LZO1X-1 ratios of a sample of the existing data and of each app's written pages
    /// (the paper's Fig. 2 and 3).
    pub spectra: Vec<Spectrum>,
    pub runs: Vec<Figures>,
    /// The paper's stated figures beside ours (changes as fractions: −0.505 = −50.5%).
    pub headlines: Vec<Headline>,
}

fn blocks_per_plane(options: &LdcOptions) -> u32 {
    // 256 MiB quick, the paper's 16 GiB full by default. Each size is its user capacity
    // plus the preset's 1% over-provisioning, in 256 KiB blocks.
    match (options.device_gib, options.quick) {
        (Some(gib), _) => (gib as u64 * 4096 * 101).div_ceil(100) as u32,
        (None, true) => 1_035,
        (None, false) => (FULL_DEVICE_GIB as u64 * 4096 * 101).div_ceil(100) as u32,
    }
}

/// The full run's device: the paper's capacity (§6.1, "the capacity of the simulated flash
/// storage was 16GB").
pub const FULL_DEVICE_GIB: u32 = 16;

/// Whether a run keeps its pages by reference: when asked, and always on a device over
/// 4 GiB, whose existing data (85% of it) would take as much memory as bytes. The figures
/// are the same either way (`pages_by_reference_change_no_figure`).
pub fn keeps_pages_by_reference(options: &LdcOptions) -> bool {
    let user_gib = match (options.device_gib, options.quick) {
        (Some(gib), _) => gib,
        (None, true) => 0,
        (None, false) => FULL_DEVICE_GIB,
    };
    options.by_reference || user_gib > 4
}

/// Share of the existing data overwritten at random before a run.
pub const SNAPSHOT_AGING: f64 = DEFAULT_SNAPSHOT_AGING;

/// Table 4's abbreviation of an app, upper case as the paper prints it.
fn abbrev(app: LdcApp) -> &'static str {
    match app {
        LdcApp::Facebook => "FB",
        LdcApp::Twitter => "TW",
        LdcApp::Messenger => "ME",
        LdcApp::GoogleEarth => "GE",
        LdcApp::Chrome => "CH",
        LdcApp::Camera => "CA",
        LdcApp::Multiple => "MA",
    }
}

/// One policy on one app at one controller clock, on the device `options` describe (the
/// runs `reproduce` makes; public for ablations on a single app).
pub fn run_one(
    policy: CompressionPolicyKind,
    app: LdcApp,
    clock_mhz: u32,
    options: &LdcOptions,
) -> Result<Figures, LdcError> {
    run_device(policy, app, clock_mhz, options, false).map(|(_, figures)| figures)
}

/// `run_one`, returning the device too; `verify`: with pages by reference, compare every
/// referenced slot's bytes when programmed.
fn run_device(
    policy: CompressionPolicyKind,
    app: LdcApp,
    clock_mhz: u32,
    options: &LdcOptions,
    verify: bool,
) -> Result<(Replayer, Figures), LdcError> {
    let mut device = presets::ldc_emmc_with(policy);
    device.nand.geometry.blocks_per_plane = blocks_per_plane(options);
    if let Some(c) = device.ftl.compression.as_mut() {
        c.controller.clock_mhz = clock_mhz;
        c.raw_streams = options.raw_streams;
        c.gc_straddle_scope = options.gc_straddle_scope;
    }
    // Every policy replays the same workload, generated for PM's capacity. On the quick
    // device a compressing policy holds back ten more blocks per plane for its logs by
    // ratio (about 1% less capacity); the workload's LBAs stay below that (a request past
    // a device's end fails the run: `OutOfRange::Error`).
    let mut reference = presets::ldc_emmc_with(CompressionPolicyKind::Pm);
    reference.nand.geometry = device.nand.geometry.clone();
    let capacity = reference
        .user_capacity_bytes()
        .map_err(|e| workload_error(app, e))?;
    let workload = workload_at_fill(app, capacity, options)?;
    let content = ContentConfig {
        zones: content_zones(&workload.content_zones())?,
        ..ContentConfig::default()
    };
    let config = RunConfig {
        device,
        seed: options.seed,
        store_contents: true,
        content,
        precondition: None,
        out_of_range: OutOfRange::Error,
        verify_reads: false,
        report: ReportOptions::default(),
        workload_name: abbrev(app).to_string(),
    };
    let mut replayer = Replayer::new(config)?;
    if let Some(corpus) = corpus_of(options)? {
        replayer.use_page_corpus(corpus)?;
    }
    if keeps_pages_by_reference(options) {
        replayer.keep_pages_by_reference(verify)?;
    }
    replayer.set_snapshot_lay_down(options.lay_down);
    replayer.initialise_snapshot(&content_zones(&workload.snapshot)?, &mut NoProgress)?;
    replayer.age_snapshot(options.aging, &mut NoProgress)?;
    replayer.prepare(&mut NoProgress)?;
    // Quick: the first eighth of a pass (the existing data is laid down in full).
    let pass_len = match options.quick {
        true => (workload.requests.len() / 8)
            .max(100)
            .min(workload.requests.len()),
        false => workload.requests.len(),
    };
    let pass = &workload.requests[..pass_len];
    let total = pass.len() as u64 * LDC_PASSES as u64;
    let requests = back_to_back(pass.iter().copied(), LDC_PASSES, REPEAT_GAP_NS);
    replayer.replay(requests, Some(total), &mut NoProgress)?;
    let gc_time = GcTime::of(replayer.ftl.config());
    let figures = figures(policy, app, clock_mhz, &replayer.report(), gc_time);
    Ok((replayer, figures))
}

/// The built-in workload with its existing data ending at `options.fill` of the capacity:
/// the user's data zone (the snapshot's last) grows or shrinks; the apps' files and ext4's
/// metadata stay where they are.
fn workload_at_fill(
    app: LdcApp,
    capacity_bytes: u64,
    options: &LdcOptions,
) -> Result<BuiltinWorkload, LdcError> {
    check_fill(options.fill)?;
    let mut workload = Builtin::Ldc(app)
        .generate(capacity_bytes, options.seed)
        .map_err(|e| workload_error(app, e))?;
    let fill_error = |reason: String| LdcError::Fill {
        fill: options.fill,
        reason,
    };
    let end = (capacity_bytes / PAGE_SIZE as u64) as f64 * options.fill;
    let end = end as u64;
    let user = workload
        .snapshot
        .iter()
        .position(|z| z.name == USER_ZONE)
        .ok_or_else(|| fill_error(format!("the workload has no '{USER_ZONE}' zone")))?;
    let start = workload.snapshot[user].lbas.start;
    if end < start {
        return Err(fill_error(format!(
            "the apps' files and ext4's metadata alone take {:.1}% of this {} MiB device",
            start as f64 * 100.0 * PAGE_SIZE as f64 / capacity_bytes as f64,
            capacity_bytes >> 20
        )));
    }
    if end == start {
        workload.snapshot.remove(user);
    } else {
        workload.snapshot[user].lbas.end = end;
    }
    Ok(workload)
}

/// The zone of the user's own data (photos, videos, other apps), last in the snapshot.
const USER_ZONE: &str = "user.data";

/// A fill must be a share of the user capacity above 0 and at most 1.
pub fn check_fill(fill: f64) -> Result<(), LdcError> {
    if fill.is_finite() && fill > 0.0 && fill <= 1.0 {
        Ok(())
    } else {
        Err(LdcError::Fill {
            fill,
            reason: "must be above 0 and at most 1 (a share of the user capacity)".into(),
        })
    }
}

fn workload_error(app: LdcApp, e: impl std::fmt::Display) -> LdcError {
    LdcError::Workload {
        app: abbrev(app),
        message: e.to_string(),
    }
}

fn in_run(policy: CompressionPolicyKind, app: LdcApp, e: LdcError) -> LdcError {
    LdcError::Run {
        policy: policy.name(),
        app: abbrev(app),
        source: Box::new(e),
    }
}

/// What GC's work costs on the device: Fig. 8(c)'s "block erase time and page migration
/// time".
#[derive(Clone, Copy, Debug)]
struct GcTime {
    read_ns: u64,
    write_ns: u64,
    erase_ns: u64,
    page_bytes: u64,
}

impl GcTime {
    fn of(device: &flashstack_ftl::DeviceConfig) -> GcTime {
        let t = &device.nand.timing;
        GcTime {
            read_ns: t.read_ns + t.transfer_ns_per_page,
            write_ns: t.program_ns + t.transfer_ns_per_page,
            erase_ns: t.erase_ns,
            page_bytes: device.nand.geometry.page_size_bytes as u64,
        }
    }

    /// Erases, relocation reads and the pages the migrated bytes fill. Static wear
    /// levelling is off on the LDC presets, so every erase is GC's.
    fn of_run(self, r: &RunReport) -> u64 {
        r.nand.block_erases * self.erase_ns
            + r.gc.relocation_page_reads * self.read_ns
            + r.gc.migrated_bytes.div_ceil(self.page_bytes) * self.write_ns
    }
}

fn figures(
    policy: CompressionPolicyKind,
    app: LdcApp,
    clock_mhz: u32,
    r: &RunReport,
    gc_time: GcTime,
) -> Figures {
    let write = &r.latency["write"];
    let read = &r.latency["read"];
    let c = &r.compression;
    Figures {
        policy: policy.name(),
        app: abbrev(app),
        clock_mhz,
        page_programs: r.nand.page_programs,
        block_erases: r.nand.block_erases,
        gc_migrated_bytes: r.gc.migrated_bytes,
        gc_time_ns: gc_time.of_run(r),
        gc_cycles_foreground: r.gc.foreground_cycles,
        gc_cycles_background: r.gc.background_cycles,
        pages_compressed: c.pages_compressed_host + c.pages_compressed_gc,
        pages_compressed_host: c.pages_compressed_host,
        pages_compressed_gc: c.pages_compressed_gc,
        pages_compressed_gc_background: c.pages_compressed_gc_background,
        write_latency_ns_mean: write.latency_ns_mean,
        write_latency_ns_max: write.latency_ns_max,
        read_latency_ns_mean: read.latency_ns_mean,
        read_latency_ns_max: read.latency_ns_max,
        latency_ns_max: write.latency_ns_max.max(read.latency_ns_max),
        host_write_bytes: r.host.write_bytes,
    }
}

/// Runs `jobs` on `options.jobs` threads, each taking the next job in order; returns
/// the results in job order, so the outcome does not depend on scheduling.
fn run_all(
    jobs: &[(CompressionPolicyKind, LdcApp, u32)],
    options: &LdcOptions,
    progress: &mut dyn Progress,
) -> Vec<Result<Figures, LdcError>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;
    let next = AtomicUsize::new(0);
    let (done_tx, done_rx) = mpsc::channel::<(usize, Result<Figures, LdcError>)>();
    let mut results: Vec<Option<Result<Figures, LdcError>>> = jobs.iter().map(|_| None).collect();
    std::thread::scope(|scope| {
        for _ in 0..options.jobs.clamp(1, jobs.len().max(1)) {
            let done_tx = done_tx.clone();
            let next = &next;
            scope.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(policy, app, clock)) = jobs.get(i) else {
                    break;
                };
                if done_tx
                    .send((i, run_one(policy, app, clock, options)))
                    .is_err()
                {
                    break;
                }
            });
        }
        drop(done_tx);
        let mut finished = 0;
        for (i, result) in done_rx {
            results[i] = Some(result);
            finished += 1;
            progress.advance(finished);
        }
    });
    // A worker that panicked has already failed the scope above, so every slot is filled.
    results
        .into_iter()
        .map(|r| r.expect("every job reports"))
        .collect()
}

/// Runs every policy on every app at 200 MHz, then LDC on MA across Fig. 10's other
/// clocks. `progress` sees one step per finished run.
pub fn reproduce(
    options: &LdcOptions,
    progress: &mut dyn Progress,
) -> Result<LdcResults, LdcError> {
    use CompressionPolicyKind::*;
    let mut jobs: Vec<(CompressionPolicyKind, LdcApp, u32)> = Vec::new();
    for app in LdcApp::ALL {
        for policy in [Pm, Zftl, Sc, Ldc, Opt] {
            jobs.push((policy, app, 200));
        }
    }
    for clock in CLOCKS_MHZ.into_iter().filter(|&c| c != 200) {
        jobs.push((Ldc, LdcApp::Multiple, clock));
    }
    check_fill(options.fill)?;
    let spectra = spectra(options)?;
    progress.phase("reproduce ldc", Some(jobs.len() as u64));
    let results = run_all(&jobs, options, progress);
    let mut runs = Vec::with_capacity(jobs.len());
    for (&(policy, app, _), result) in jobs.iter().zip(results) {
        runs.push(result.map_err(|e| in_run(policy, app, e))?);
    }
    let device_bytes = blocks_per_plane(options) as u64 * 64 * 4096;
    let mut results = LdcResults {
        quick: options.quick,
        aging: options.aging,
        fill: options.fill,
        lay_down: options.lay_down,
        raw_streams: options.raw_streams,
        gc_straddle_scope: options.gc_straddle_scope,
        sqlite_pages: options.sqlite_pages,
        device_bytes,
        spectra,
        runs,
        headlines: Vec::new(),
    };
    results.headlines = results.headline_rows();
    Ok(results)
}

/// A mean over the apps whose ratio is defined (its base is not zero), and how many.
#[derive(Clone, Copy, Debug)]
struct Mean {
    value: f64,
    apps: usize,
}

impl LdcResults {
    fn get(&self, policy: &str, app: &str, clock: u32) -> &Figures {
        self.runs
            .iter()
            .find(|f| f.policy == policy && f.app == app && f.clock_mhz == clock)
            .expect("every combination was run")
    }

    /// `metric(policy) / metric(base)` per app at 200 MHz (NaN where the base is zero: an
    /// app with no erases has no erase ratio), and their mean over the apps that have one.
    fn normalised(
        &self,
        policy: &str,
        base: &str,
        metric: fn(&Figures) -> u64,
    ) -> (Vec<f64>, Mean) {
        let per_app: Vec<f64> = LdcApp::ALL
            .iter()
            .map(|&a| {
                let b = metric(self.get(base, abbrev(a), 200)) as f64;
                if b == 0.0 {
                    f64::NAN
                } else {
                    metric(self.get(policy, abbrev(a), 200)) as f64 / b
                }
            })
            .collect();
        let finite: Vec<f64> = per_app.iter().copied().filter(|v| v.is_finite()).collect();
        let value = match finite.len() {
            0 => f64::NAN,
            n => finite.iter().sum::<f64>() / n as f64,
        };
        let mean = Mean {
            value,
            apps: finite.len(),
        };
        (per_app, mean)
    }

    fn table(
        &self,
        title: &str,
        policies: &[&str],
        base: &str,
        metric: fn(&Figures) -> u64,
    ) -> String {
        let mut out = format!("{title}\n{:<8}", "");
        for a in LdcApp::ALL {
            out.push_str(&format!("{:>7}", abbrev(a)));
        }
        out.push_str(&format!("{:>8}  over\n", "mean"));
        let apps = LdcApp::ALL.len();
        for p in policies {
            let (per_app, mean) = self.normalised(p, base, metric);
            out.push_str(&format!("{p:<8}"));
            for v in per_app {
                out.push_str(&if v.is_finite() {
                    format!("{v:>7.3}")
                } else {
                    format!("{:>7}", "n/a")
                });
            }
            out.push_str(&if mean.value.is_finite() {
                format!("{:>8.3}", mean.value)
            } else {
                format!("{:>8}", "n/a")
            });
            out.push_str(&format!("  {}/{apps} apps\n", mean.apps));
        }
        out
    }

    /// Where GC ran and where pages were compressed, per policy summed over the apps at
    /// 200 MHz: on demand (the host waits) or in idle time.
    fn gc_paths(&self) -> String {
        let mut out = format!(
            "GC cycles and pages compressed, all apps (fg = on demand, bg = idle time)\n\
             {:<8}{:>10}{:>10}{:>12}{:>10}{:>10}{:>12}\n",
            "", "GC fg", "GC bg", "host", "caGC fg", "caGC bg", "GC time ms"
        );
        for p in ["PM", "zFTL", "SC", "LDC", "OPT"] {
            let runs = || {
                self.runs
                    .iter()
                    .filter(move |f| f.policy == p && f.clock_mhz == 200)
            };
            let sum = |m: fn(&Figures) -> u64| runs().map(m).sum::<u64>();
            let gc = sum(|f| f.pages_compressed_gc);
            let bg = sum(|f| f.pages_compressed_gc_background);
            out.push_str(&format!(
                "{p:<8}{:>10}{:>10}{:>12}{:>10}{:>10}{:>12.1}\n",
                sum(|f| f.gc_cycles_foreground),
                sum(|f| f.gc_cycles_background),
                sum(|f| f.pages_compressed_host),
                gc - bg,
                bg,
                sum(|f| f.gc_time_ns) as f64 / 1e6
            ));
        }
        out
    }

    /// Fig. 8–10 as tables, with the paper's stated figures beside ours.
    pub fn render(&self) -> String {
        let mut out = String::new();
        out.push_str(&format!(
            "LDC reproduction ({}; device {} MiB, workloads replayed 3x)\n\
             device state: fill {:.0}% (existing data), aging {:.0}% of it overwritten at \
             random, laid down {}\n\
             SQLite pages: {}\n\
             GC: on demand at {} free blocks, in idle time (after {} ms) up to {}\n\n",
            if self.quick {
                "quick: 1/8 of every workload"
            } else {
                "full workloads"
            },
            self.device_bytes >> 20,
            self.fill * 100.0,
            self.aging * 100.0,
            self.lay_down.name(),
            match self.sqlite_pages {
                SqlitePages::Persona => {
                    "tables and indexes from the LDC personas' real databases, BLOB pages \
                     generated (--sqlite-pages persona)"
                }
                SqlitePages::Synthetic => "synthetic b-tree leaves (--sqlite-pages synthetic)",
            },
            presets::LDC_FOREGROUND_FREE_BLOCKS,
            presets::LDC_IDLE_THRESHOLD_NS / 1_000_000,
            presets::LDC_BACKGROUND_FREE_BLOCKS,
        ));
        if self.raw_streams == RawStreams::One {
            out.push_str("raw pages: one host log for every policy (--raw-streams one)\n\n");
        }
        if self.gc_straddle_scope == GcStraddleScope::EveryPolicy {
            out.push_str(
                "GC packing: every policy's GC lets compressed fragments straddle \
                 (--gc-straddle-scope every-policy)\n\n",
            );
        }
        out.push_str(&self.table(
            "Fig. 8(a) pages compressed, normalised to zFTL",
            &["SC", "LDC", "OPT"],
            "zFTL",
            |f| f.pages_compressed,
        ));
        out.push('\n');
        out.push_str(&self.table(
            "Fig. 8(b) block erases, normalised to PM",
            &["zFTL", "SC", "LDC", "OPT"],
            "PM",
            |f| f.block_erases,
        ));
        out.push('\n');
        out.push_str(&self.table(
            "Fig. 8(c) GC overhead (time: erases + page migration), normalised to PM",
            &["zFTL", "SC", "LDC", "OPT"],
            "PM",
            |f| f.gc_time_ns,
        ));
        out.push('\n');
        out.push_str(&self.table(
            "GC bytes migrated, normalised to PM",
            &["zFTL", "SC", "LDC", "OPT"],
            "PM",
            |f| f.gc_migrated_bytes,
        ));
        out.push('\n');
        out.push_str(&self.table(
            "Fig. 9(a) mean write latency, normalised to PM",
            &["zFTL", "SC", "LDC", "OPT"],
            "PM",
            |f| f.write_latency_ns_mean,
        ));
        out.push('\n');
        out.push_str(&self.table(
            "Fig. 9(b) mean read latency, normalised to PM",
            &["zFTL", "SC", "LDC", "OPT"],
            "PM",
            |f| f.read_latency_ns_mean,
        ));
        out.push('\n');
        out.push_str(&self.table(
            "Fig. 9(c) worst-case latency (reads and writes), normalised to PM",
            &["zFTL", "SC", "LDC", "OPT"],
            "PM",
            |f| f.latency_ns_max,
        ));
        out.push('\n');
        out.push_str(&self.gc_paths());
        out.push('\n');
        out.push_str(&render_spectra(&self.spectra));
        out.push('\n');
        out.push_str(&self.fig10());
        out.push('\n');
        out.push_str(&self.headline());
        out
    }

    fn fig10(&self) -> String {
        let pm = self.get("PM", "MA", 200).write_latency_ns_mean as f64;
        let mut out =
            String::from("Fig. 10 LDC write-latency reduction vs PM on MA, by controller clock\n");
        for clock in CLOCKS_MHZ {
            let ldc = self.get("LDC", "MA", clock).write_latency_ns_mean as f64;
            out.push_str(&format!(
                "  {clock:>3} MHz  {:>6.1}%\n",
                (1.0 - ldc / pm) * 100.0
            ));
        }
        out
    }

    /// The paper's stated figures (§6.2, abstract) and ours: each a change of the mean
    /// over the apps where it is defined.
    const HEADLINES: [(&'static str, &'static str, &'static str, f64, Metric); 5] = [
        ("LDC erases vs PM", "LDC", "PM", -0.505, Metric::Erases),
        (
            "LDC write latency vs zFTL",
            "LDC",
            "zFTL",
            -0.104,
            Metric::WriteLatency,
        ),
        ("LDC erases vs zFTL", "LDC", "zFTL", 0.04, Metric::Erases),
        (
            "SC write latency vs PM",
            "SC",
            "PM",
            -0.172,
            Metric::WriteLatency,
        ),
        (
            "LDC write latency vs PM",
            "LDC",
            "PM",
            -0.18,
            Metric::WriteLatency,
        ),
    ];

    fn headline_rows(&self) -> Vec<Headline> {
        Self::HEADLINES
            .iter()
            .map(|&(figure, policy, base, paper, metric)| {
                let mean = self.normalised(policy, base, metric.get()).1;
                Headline::new(figure, paper, mean.value - 1.0, "change")
            })
            .collect()
    }

    fn headline(&self) -> String {
        let mut out = format!(
            "{:<28}{:>10}{:>10}{:>10}  mean over\n",
            "headline", "paper", "ours", "diff pp"
        );
        let apps = LdcApp::ALL.len();
        for (h, &(_, policy, base, _, metric)) in self.headlines.iter().zip(&Self::HEADLINES) {
            let over = self.normalised(policy, base, metric.get()).1.apps;
            let gap = h
                .gap()
                .filter(|g| g.is_finite())
                .map_or("n/a".to_string(), |g| format!("{g:.1}"));
            out.push_str(&format!(
                "{:<28}{:>10}{:>10}{gap:>10}  {over}/{apps} apps\n",
                h.figure,
                h.format(h.paper),
                h.format(h.ours),
            ));
        }
        out
    }
}

/// Where the LDC document explains the gaps.
const LDC_GAPS: &str =
    "docs/ldc-reproduction.md#why-the-figures-differ-gaps-over-10-pp-in-the-default-run";

impl LdcResults {
    /// Fig. 8(b), 9(a) and 10 redrawn from our runs beside the paper's values. The paper
    /// prints its per-app bars only as images; its text (§6.2, seed
    /// `shared/seeds/ldc-tecs2017.md`) gives averages and one per-app value (zFTL's write
    /// latency on GE), drawn as reference lines and a paper bar. Fig. 8(a), 8(c), 9(b) and
    /// 9(c) state no number at all and stay in the terminal tables.
    pub fn paper_figures(&self) -> Vec<PaperFigure> {
        let apps: Vec<String> = LdcApp::ALL.iter().map(|&a| abbrev(a).to_string()).collect();
        let policies = ["zFTL", "SC", "LDC", "OPT"];
        let mut erases = PaperFigure::bars(
            "Fig. 8(b)",
            "Fig. 8(b) block erases, normalised to PM",
            "erases / PM's",
            apps.clone(),
        );
        for p in policies {
            erases = erases.ours(p, self.normalised(p, "PM", |f| f.block_erases).0);
        }
        let ldc_erases = self.normalised("LDC", "PM", |f| f.block_erases).1.value;
        let erases = erases
            .reference("paper: LDC mean 0.495 (−50.5%)", 0.495, ldc_erases)
            .caption(
                "The paper prints Fig. 8(b) only as an image; its text (§6.2.2 and the \
                 abstract) states LDC's mean, −50.5% erases against PM: a reference line, set \
                 beside our LDC mean over the apps.",
                LDC_GAPS,
            );
        let mut latency = PaperFigure::bars(
            "Fig. 9(a)",
            "Fig. 9(a) mean write latency, normalised to PM",
            "write latency / PM's",
            apps.clone(),
        );
        for p in policies {
            latency = latency.ours(p, self.normalised(p, "PM", |f| f.write_latency_ns_mean).0);
        }
        let mean = |p: &str| {
            self.normalised(p, "PM", |f| f.write_latency_ns_mean)
                .1
                .value
        };
        let ge = apps
            .iter()
            .map(|a| if a == "GE" { 1.04 } else { f64::NAN })
            .collect();
        let latency = latency
            .paper("paper: zFTL", ge)
            .reference("paper: SC mean 0.828 (−17.2%)", 0.828, mean("SC"))
            .reference("paper: LDC mean 0.820 (−18.0%)", 0.820, mean("LDC"))
            .caption(
                "The paper prints Fig. 9(a) only as an image; its text (§6.2.4) states \
                 zFTL's latency on GE (+4% against PM: the one paper bar) and SC's and LDC's \
                 means (−17.2%, −18.0%): reference lines beside our means over the apps.",
                LDC_GAPS,
            );
        let clocks: Vec<f64> = CLOCKS_MHZ.iter().map(|&c| c as f64).collect();
        let pm = self.get("PM", "MA", 200).write_latency_ns_mean as f64;
        let reduction = CLOCKS_MHZ
            .iter()
            .map(|&c| (1.0 - self.get("LDC", "MA", c).write_latency_ns_mean as f64 / pm) * 100.0)
            .collect();
        let clock = PaperFigure::lines(
            "Fig. 10",
            "Fig. 10 LDC write-latency reduction vs PM on MA, by controller clock",
            "controller clock (MHz)",
            "write-latency reduction (%)",
            &clocks,
        )
        .ours("LDC on MA", reduction)
        .reference(
            "paper: LDC mean over the apps at 200 MHz, 18.0%",
            18.0,
            (1.0 - mean("LDC")) * 100.0,
        )
        .caption(
            "The paper prints Fig. 10 only as an image and states no per-clock number (§6.2.5: \
             the reduction grows with the clock and saturates); its 200 MHz average over the \
             apps (−18.0%, §6.2.4) is the reference line.",
            LDC_GAPS,
        );
        vec![erases, latency, clock]
    }
}

/// The metric a headline compares.
#[derive(Clone, Copy, Debug)]
enum Metric {
    Erases,
    WriteLatency,
}

impl Metric {
    fn get(self) -> fn(&Figures) -> u64 {
        match self {
            Metric::Erases => |f| f.block_erases,
            Metric::WriteLatency => |f| f.write_latency_ns_mean,
        }
    }
}

/// Bins of a compressibility histogram: LZO1X-1 ratio in steps of 0.05 (the last bin
/// also holds ratios above 1, incompressible pages plus the codec's overhead).
pub const SPECTRUM_BINS: usize = 20;
/// Pages sampled for each histogram, evenly spread over what it describes.
const SPECTRUM_SAMPLE_PAGES: u64 = 2_000;

/// The LZO1X-1 ratios of a sample of pages, as the paper's Fig. 2 (a volume snapshot) and
/// Fig. 3 (an app's write traffic) report them.
#[derive(Clone, Debug, Serialize)]
pub struct Spectrum {
    /// `snapshot` or the app's abbreviation.
    pub name: String,
    pub pages: u64,
    /// Pages per 0.05 of ratio: bin `i` holds `i/20 ≤ ratio < (i+1)/20`.
    pub bins: [u64; SPECTRUM_BINS],
}

impl Spectrum {
    /// Shares of the paper's bands: high (< 0.25), medium (0.25–0.65), low (0.65–0.95),
    /// minimal (≥ 0.95).
    pub fn bands(&self) -> [f64; 4] {
        let sum = |r: std::ops::Range<usize>| self.bins[r].iter().sum::<u64>() as f64;
        let n = self.pages.max(1) as f64;
        [
            sum(0..5) / n,
            sum(5..13) / n,
            sum(13..19) / n,
            sum(19..20) / n,
        ]
    }

    fn of(name: &str, model: &ContentModel, lbas: &[(u64, u32)]) -> Spectrum {
        let stride = (lbas.len() as u64).div_ceil(SPECTRUM_SAMPLE_PAGES).max(1) as usize;
        let mut codec = Lzo1x1::default();
        let (mut page, mut out) = (vec![0u8; PAGE_SIZE], Vec::new());
        let mut bins = [0u64; SPECTRUM_BINS];
        let mut pages = 0;
        for &(lba, version) in lbas.iter().step_by(stride) {
            model.fill(lba, version, &mut page);
            let ratio = codec.compress(&page, &mut out) as f64 / PAGE_SIZE as f64;
            bins[((ratio * SPECTRUM_BINS as f64) as usize).min(SPECTRUM_BINS - 1)] += 1;
            pages += 1;
        }
        Spectrum {
            name: name.to_string(),
            pages,
            bins,
        }
    }
}

/// The content model a run of `workload` uses.
fn content_model(
    workload: &BuiltinWorkload,
    options: &LdcOptions,
) -> Result<ContentModel, LdcError> {
    let config = ContentConfig {
        zones: content_zones(&workload.content_zones())?,
        ..ContentConfig::default()
    };
    let model =
        ContentModel::from_config(options.seed, &config).map_err(|e| LdcError::Workload {
            app: "content",
            message: e.to_string(),
        })?;
    Ok(match corpus_of(options)? {
        Some(corpus) => model.with_corpus(corpus),
        None => model,
    })
}

/// The compressibility of the existing data (MA's snapshot, the same for every app) and of
/// each app's written pages (each page as written the first time in the run).
pub fn spectra(options: &LdcOptions) -> Result<Vec<Spectrum>, LdcError> {
    let mut device = presets::ldc_emmc_with(CompressionPolicyKind::Pm);
    device.nand.geometry.blocks_per_plane = blocks_per_plane(options);
    let capacity = device
        .user_capacity_bytes()
        .map_err(|e| workload_error(LdcApp::Multiple, e))?;
    let mut out = Vec::new();
    for app in LdcApp::ALL {
        let workload = workload_at_fill(app, capacity, options)?;
        let model = content_model(&workload, options)?;
        if app == LdcApp::Multiple {
            let snapshot: Vec<(u64, u32)> = workload
                .snapshot
                .iter()
                .flat_map(|z| z.lbas.clone())
                .map(|lba| (lba, 0))
                .collect();
            out.insert(0, Spectrum::of("snapshot", &model, &snapshot));
        }
        let written: Vec<(u64, u32)> = workload
            .requests
            .iter()
            .filter(|r| r.kind == RequestKind::Write)
            .flat_map(|r| r.offset_bytes / 4096..(r.offset_bytes + r.len_bytes) / 4096)
            .map(|lba| (lba, 1))
            .collect();
        out.push(Spectrum::of(abbrev(app), &model, &written));
    }
    Ok(out)
}

/// The histograms as text: band shares per row, then the 0.05 bins of the snapshot and of
/// MA's writes as bars.
fn render_spectra(spectra: &[Spectrum]) -> String {
    let mut out = String::from(
        "Content compressibility (LZO1X-1, sampled pages; Fig. 2 bands: high < 0.25, \
         medium < 0.65, low < 0.95, minimal)\n",
    );
    out.push_str(&format!(
        "{:<10}{:>8}{:>8}{:>8}{:>8}{:>8}\n",
        "", "pages", "high", "medium", "low", "minimal"
    ));
    for s in spectra {
        let b = s.bands();
        out.push_str(&format!(
            "{:<10}{:>8}{:>7.1}%{:>7.1}%{:>7.1}%{:>7.1}%\n",
            s.name,
            s.pages,
            b[0] * 100.0,
            b[1] * 100.0,
            b[2] * 100.0,
            b[3] * 100.0
        ));
    }
    for s in spectra
        .iter()
        .filter(|s| s.name == "snapshot" || s.name == "MA")
    {
        out.push_str(&format!(
            "histogram, {} (% of pages per 0.05 of ratio)\n",
            s.name
        ));
        for (i, &n) in s.bins.iter().enumerate() {
            let share = n as f64 * 100.0 / s.pages.max(1) as f64;
            out.push_str(&format!(
                "  {:.2}-{:<5}{:>6.1}% {}\n",
                i as f64 / 20.0,
                if i + 1 == SPECTRUM_BINS {
                    "".to_string()
                } else {
                    format!("{:.2}", (i + 1) as f64 / 20.0)
                },
                share,
                "#".repeat((share / 2.0).round() as usize)
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The full-size LDC run on FB, which once stopped with "GC cannot keep up" while the
    /// existing data was aged: with §5.3's narrow straddling rule, GC copied blocks of
    /// page-aligned compressed fragments into as many pages as it freed
    /// (docs/ldc-reproduction.md, "The full run once failed"). The small, fast check of
    /// the mechanism is `flashstack_ftl`'s
    /// `gc_packs_page_aligned_compressed_pages_without_internal_fragmentation`; this one is
    /// ignored for its size (the 4 GiB device it failed on, about 35 s in release): `cargo test --release -p
    /// flashstack-experiments --lib full_size_ldc_on_fb -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn full_size_ldc_on_fb() {
        let options = LdcOptions {
            quick: false,
            seed: 1,
            device_gib: Some(4),
            ..quick()
        };
        let f = run_one(CompressionPolicyKind::Ldc, LdcApp::Facebook, 200, &options);
        assert!(f.is_ok(), "{:?}", f.err());
    }

    /// Pages kept by reference change nothing the device does: on the quick device every
    /// policy's figures and FTL and NAND counters equal those of the run storing bytes,
    /// every referenced slot regenerated its programmed bytes exactly (checked byte for
    /// byte as it was programmed), and every LBA reads back the same bytes from both.
    #[test]
    fn pages_by_reference_change_no_figure() {
        use flashstack_block::BlockDevice;
        use CompressionPolicyKind::*;
        let app = LdcApp::Messenger;
        let by_reference = LdcOptions {
            by_reference: true,
            ..quick()
        };
        for policy in [Pm, Zftl, Sc, Ldc, Opt] {
            let (mut stored, f_stored) = run_device(policy, app, 200, &quick(), false).unwrap();
            let (mut kept, f_kept) = run_device(policy, app, 200, &by_reference, true).unwrap();
            assert_eq!(format!("{f_kept:?}"), format!("{f_stored:?}"), "{policy:?}");
            assert_eq!(kept.ftl.counters(), stored.ftl.counters(), "{policy:?}");
            assert_eq!(
                format!("{:?}", kept.ftl.nand().counters()),
                format!("{:?}", stored.ftl.nand().counters()),
                "{policy:?}"
            );
            // Program what the controller still buffers, on both devices alike.
            let mut now = 1u64 << 50;
            stored.ftl.flush(now).unwrap();
            now = kept.ftl.flush(now).unwrap().complete_ns;
            let (references, fragments, mismatches) = kept.pages_by_reference();
            assert_eq!(mismatches, 0, "{policy:?}");
            assert_eq!(stored.pages_by_reference(), (0, 0, 0));
            // Compressed fragments are kept by reference: the host's (less the few
            // superseded while still buffered, which are programmed as padding) and, on
            // LDC, caGC's (also those it compressed in idle time while the existing data
            // was aged, before the measurement's counters start).
            let host = f_stored.pages_compressed_host;
            match policy {
                Pm => assert_eq!(fragments, 0),
                Ldc => {
                    assert!(f_stored.pages_compressed_gc > 0, "caGC compressed nothing");
                    assert!(
                        fragments > host + f_stored.pages_compressed_gc,
                        "{fragments}"
                    );
                }
                _ => assert!(
                    fragments <= host && fragments * 100 >= host * 98,
                    "{policy:?}: {fragments} of {host}"
                ),
            }
            let lbas = kept.ftl.capacity_lbas();
            // Most of the device's data is the content model's (the rest: zero pages).
            assert!(references > lbas / 2, "{policy:?}: {references} of {lbas}");
            let (mut a, mut b) = (vec![0u8; 64 * 4096], vec![1u8; 64 * 4096]);
            for lba in (0..lbas).step_by(64) {
                let count = (lbas - lba).min(64) as u32;
                let bytes = count as usize * 4096;
                let done = stored.ftl.read(now, lba, count, Some(&mut a[..bytes]));
                kept.ftl
                    .read(now, lba, count, Some(&mut b[..bytes]))
                    .unwrap();
                now = done.unwrap().complete_ns;
                assert!(a[..bytes] == b[..bytes], "{policy:?}: LBAs from {lba}");
            }
        }
    }

    /// The full run is the paper's 16 GiB device, which only fits in memory by reference;
    /// smaller devices store bytes unless asked.
    #[test]
    fn the_full_device_is_the_papers_and_keeps_pages_by_reference() {
        let full = LdcOptions {
            quick: false,
            ..quick()
        };
        assert_eq!(blocks_per_plane(&full), 66_192);
        assert!(keeps_pages_by_reference(&full));
        assert!(!keeps_pages_by_reference(&quick()));
        let four = LdcOptions {
            device_gib: Some(4),
            ..full.clone()
        };
        assert_eq!(blocks_per_plane(&four), 16_548);
        assert!(!keeps_pages_by_reference(&four));
        let asked = LdcOptions {
            by_reference: true,
            ..four
        };
        assert!(keeps_pages_by_reference(&asked));
    }

    fn quick() -> LdcOptions {
        LdcOptions {
            quick: true,
            seed: 3,
            lay_down: LayDown::default(),
            ..LdcOptions::default()
        }
    }

    #[test]
    fn apps_by_abbreviation() {
        assert_eq!(app_by_abbrev("fb"), Some(LdcApp::Facebook));
        assert_eq!(app_by_abbrev("MA"), Some(LdcApp::Multiple));
        assert_eq!(app_by_abbrev("XX"), None);
    }

    fn fake(policy: &'static str, app: &'static str, erases: u64, latency_ns: u64) -> Figures {
        Figures {
            policy,
            app,
            clock_mhz: 200,
            page_programs: 0,
            block_erases: erases,
            gc_migrated_bytes: 0,
            gc_time_ns: 0,
            gc_cycles_foreground: 0,
            gc_cycles_background: 0,
            pages_compressed: 0,
            pages_compressed_host: 0,
            pages_compressed_gc: 0,
            pages_compressed_gc_background: 0,
            write_latency_ns_mean: latency_ns,
            write_latency_ns_max: latency_ns,
            read_latency_ns_mean: latency_ns,
            read_latency_ns_max: latency_ns,
            latency_ns_max: latency_ns,
            host_write_bytes: 0,
        }
    }

    #[test]
    fn an_app_without_erases_shows_n_a_and_the_mean_says_over_how_many_apps() {
        let mut runs = Vec::new();
        for (i, app) in LdcApp::ALL.into_iter().enumerate() {
            let a = abbrev(app);
            // PM erases nothing in FB: its erase ratio is undefined.
            let pm_erases = if i == 0 { 0 } else { 100 };
            runs.push(fake("PM", a, pm_erases, 1000));
            for p in ["zFTL", "SC", "LDC", "OPT"] {
                runs.push(fake(p, a, 50, 900));
            }
        }
        for clock in CLOCKS_MHZ.into_iter().filter(|&c| c != 200) {
            runs.push(Figures {
                clock_mhz: clock,
                ..fake("LDC", "MA", 50, 900)
            });
        }
        let mut r = LdcResults {
            quick: true,
            aging: 0.5,
            fill: SNAPSHOT_UTILIZATION,
            lay_down: LayDown::Neutral,
            raw_streams: RawStreams::default(),
            gc_straddle_scope: GcStraddleScope::default(),
            sqlite_pages: SqlitePages::default(),
            device_bytes: 1 << 28,
            spectra: Vec::new(),
            runs,
            headlines: Vec::new(),
        };
        r.headlines = r.headline_rows();
        let erases = r.table("erases", &["LDC"], "PM", |f| f.block_erases);
        let row = erases.lines().find(|l| l.starts_with("LDC")).unwrap();
        assert!(row.contains("n/a") && row.ends_with("6/7 apps"), "{row}");
        let latency = r.table("latency", &["LDC"], "PM", |f| f.write_latency_ns_mean);
        assert!(latency.contains("7/7 apps"), "{latency}");
        let h = &r.headlines[0];
        assert_eq!(h.figure, "LDC erases vs PM");
        assert!((h.ours + 0.5).abs() < 1e-9, "{h:?}");
        let text = r.render();
        assert!(text.contains("laid down policy-neutral") && text.contains("fill 85%"));
        let json = serde_json::to_string(&r).unwrap();
        assert!(json.contains("\"headlines\""), "{json}");
        // Fig. 8(b), 9(a), 10 redrawn: FB's erase ratio is undefined (NaN, no bar), the
        // paper's LDC mean beside ours (0.5 over the six apps with erases).
        let figures = r.paper_figures();
        let names: Vec<&str> = figures.iter().map(|f| f.figure.as_str()).collect();
        assert_eq!(names, ["Fig. 8(b)", "Fig. 9(a)", "Fig. 10"]);
        let ldc = figures[0].series.iter().find(|s| s.name == "LDC").unwrap();
        assert!(
            ldc.values[0].is_nan() && (ldc.values[1] - 0.5).abs() < 1e-9,
            "{ldc:?}"
        );
        let reference = &figures[0].references[0];
        assert_eq!(reference.paper, 0.495);
        assert!((reference.ours - 0.5).abs() < 1e-9);
        let ge = &figures[1]
            .series
            .iter()
            .find(|s| s.origin == "paper")
            .unwrap()
            .values;
        assert_eq!(ge.iter().filter(|v| v.is_finite()).count(), 1);
        assert_eq!(figures[2].categories.len(), CLOCKS_MHZ.len());
    }

    #[test]
    fn content_spreads_through_the_low_band() {
        // Issue 18 item 3: with the older, nearly bimodal classes the write traffic held
        // almost no pages between 0.65 and 0.95 (MA: none of its sample), so zFTL never
        // paid its latency penalty. Now every 0.05 step of that band holds pages, in the
        // existing data (Fig. 2) and in the write traffic (Fig. 3).
        let spectra = spectra(&quick()).unwrap();
        assert_eq!(spectra.len(), 1 + LdcApp::ALL.len());
        for s in spectra
            .iter()
            .filter(|s| s.name == "snapshot" || s.name == "MA")
        {
            let low = s.bands()[2];
            assert!(low >= 0.08, "{}: {:.1}% low", s.name, low * 100.0);
            for bin in 13..19 {
                let share = s.bins[bin] as f64 / s.pages as f64;
                assert!(share >= 0.005, "{}: bin {bin} holds {share:.4}", s.name);
            }
        }
        // §4.1: 84–91% of a phone's volume is of low or minimal compressibility.
        let b = spectra[0].bands();
        assert!((0.75..=0.91).contains(&(b[2] + b[3])), "snapshot {b:?}");
    }

    #[test]
    fn fill_moves_the_end_of_the_existing_data_and_rejects_impossible_fills() {
        let capacity = 1_035 * 64 * 4096;
        let at =
            |fill| workload_at_fill(LdcApp::Facebook, capacity, &LdcOptions { fill, ..quick() });
        let end = |fill| at(fill).unwrap().snapshot.last().unwrap().lbas.end;
        assert_eq!(end(0.6), (capacity / 4096) * 6 / 10);
        assert_eq!(end(1.0), capacity / 4096);
        let zones = at(0.6).unwrap().zones;
        assert_eq!(zones, at(0.85).unwrap().zones, "the apps' files stay put");
        let err = at(0.2).unwrap_err().to_string();
        assert!(
            err.starts_with("--fill 0.2: the apps' files and ext4's metadata alone take"),
            "{err}"
        );
        for bad in [0.0, -0.5, 1.01, f64::NAN, f64::INFINITY] {
            let err = check_fill(bad).unwrap_err().to_string();
            assert!(err.contains("must be above 0 and at most 1"), "{err}");
        }
    }

    #[test]
    fn compression_cuts_programs_and_runs_are_deterministic() {
        let me = LdcApp::Messenger;
        let pm = run_one(CompressionPolicyKind::Pm, me, 200, &quick()).unwrap();
        let opt = run_one(CompressionPolicyKind::Opt, me, 200, &quick()).unwrap();
        // Compression cuts what the host path programs. (Total programs: with the
        // policy-neutral lay-down and idle-time GC, OPT's GC moves 9% more bytes than PM's
        // on this short ME run, so its total is higher; docs/ldc-reproduction.md lists it
        // as unexplained. Through the policy it is lower, as checked below.)
        assert!(opt.pages_compressed_host > 0, "{opt:?}");
        let through = LdcOptions {
            lay_down: LayDown::ThroughPolicy,
            ..quick()
        };
        let pm_through = run_one(CompressionPolicyKind::Pm, me, 200, &through).unwrap();
        let opt_through = run_one(CompressionPolicyKind::Opt, me, 200, &through).unwrap();
        assert!(
            opt_through.page_programs < pm_through.page_programs,
            "{opt_through:?} vs {pm_through:?}"
        );
        assert!(pm.latency_ns_max >= pm.read_latency_ns_max.max(pm.write_latency_ns_max));
        assert_eq!(pm.host_write_bytes, opt.host_write_bytes);
        let again = run_one(CompressionPolicyKind::Pm, me, 200, &quick()).unwrap();
        assert_eq!(format!("{pm:?}"), format!("{again:?}"));
        // On two threads: the same figures, in job order.
        let jobs = [
            (CompressionPolicyKind::Opt, me, 200),
            (CompressionPolicyKind::Pm, me, 200),
        ];
        let options = LdcOptions { jobs: 2, ..quick() };
        let parallel: Vec<Figures> = run_all(&jobs, &options, &mut NoProgress)
            .into_iter()
            .map(Result::unwrap)
            .collect();
        assert_eq!(format!("{parallel:?}"), format!("{:?}", [opt, pm]));
    }
}
