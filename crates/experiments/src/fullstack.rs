//! Workloads on whole-stack configurations: an app persona or a file-level trace runs on
//! the page cache over F2FS over the FTL and NAND, and every layer's figures come back in
//! one report, one column per configuration.
//!
//! Measurement window: a persona's setup (the app installed and used before) runs
//! unmeasured, then the stack syncs (every dirty page written, a checkpoint) and every
//! layer's counters restart. After the task the stack idles for the cache's dirty expiry
//! plus one flusher period, so the task's dirty pages reach flash as they would on a phone
//! left alone, and F2FS's idle work (background cleaning, the periodic checkpoint) runs;
//! then the figures are taken. A trace starts on a freshly formatted stack.
//!
//! Starting state ([`Start`]): a factory-new phone (an empty F2FS on a fresh device), or a
//! used phone ([`flashstack_phone::PhoneImage`]: a full, fragmented F2FS over a worn
//! device). On a used phone a persona whose apps the phone holds skips its setup and runs
//! its task on the apps' aged data; other personas install their apps first.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use flashstack_apps::{
    run_with_hook, AppError, OpReport, Persona, PersonaReport, ReplayOptions, ReplayReport,
    RunOptions,
};
use flashstack_cache::CacheMetrics;
use flashstack_energy::{Activity, PhoneEnergy, PhoneEnergyConfig};
use flashstack_phone::PhoneImage;
use flashstack_report::{render_columns, ReportOptions, RunInfo, RunReport};
use flashstack_sim::units::{format_bytes, format_count, format_ns};
use flashstack_sim::Nanos;
use flashstack_sqlvfs::FileApi;
use flashstack_stack::timeline::Timeline;
use flashstack_stack::{OpMetrics, SharedStack, Stack, StackConfig};
use flashstack_trace::{BlockTraceWriter, RecordError, RecordFormat, RecordSummary};
use flashstack_workload::{FileTrace, TraceSummary};
use serde::Serialize;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum FullStackError {
    #[error("stack '{stack}': {message}")]
    Stack { stack: String, message: String },
    /// The persona or trace failed (the message carries the workload error's whole chain).
    #[error("stack '{stack}': {message}")]
    Workload { stack: String, message: String },
    /// The block trace asked for ([`FullStackOptions::record_block`]) cannot be written.
    #[error("stack '{stack}': {source}")]
    Record { stack: String, source: RecordError },
}

/// Where and how to record the block requests of the measured window.
#[derive(Clone, Debug)]
pub struct RecordBlock {
    pub path: PathBuf,
    pub format: RecordFormat,
}

/// What runs on the stack.
pub enum StackWorkload<'a> {
    /// An app persona: unmeasured setup, then its task.
    Persona(&'a dyn Persona),
    /// A file-level trace, replayed from an empty file system.
    Trace { name: String, trace: &'a FileTrace },
}

impl StackWorkload<'_> {
    pub fn name(&self) -> String {
        match self {
            StackWorkload::Persona(p) => p.name(),
            StackWorkload::Trace { name, .. } => name.clone(),
        }
    }
}

/// The state a run starts from.
#[derive(Clone, Debug, Default)]
pub enum Start {
    /// A factory-new phone: F2FS freshly made on a fresh device.
    #[default]
    Fresh,
    /// A used phone (its device must fit the stack's: same flash array and capacity).
    Phone(Arc<PhoneImage>),
}

impl Start {
    /// One line for the report's header.
    pub fn describe(&self) -> String {
        match self {
            Start::Fresh => "factory-new phone (empty F2FS, fresh device)".to_string(),
            Start::Phone(image) => image.header.summary(),
        }
    }
}

/// Options of a whole-stack run.
#[derive(Clone, Debug)]
pub struct FullStackOptions {
    pub seed: u64,
    /// Drive writes per day assumed by the lifetime projection (default: measured).
    pub dwpd: Option<f64>,
    /// Record the persona's task: its trace's summary goes into the report.
    pub record: bool,
    /// With `record`, also keep the trace itself (and the bytes of its writes), returned
    /// beside the report; off, the summary is built as the task runs and no trace is held.
    pub keep_trace: bool,
    /// A trace replay stops at the first operation it cannot honour instead of counting
    /// it (`ReplayReport::unhonoured`).
    pub strict: bool,
    /// The phone the run starts from.
    pub start: Start,
    /// Write the F2FS image (the logical device, sparse) here after the run.
    pub image_out: Option<PathBuf>,
    /// The phone whose energy is reported; `None`: by the stack's device
    /// ([`phone_for_device`]).
    pub phone: Option<PhoneEnergyConfig>,
    /// Check every read of the workload against what it wrote or read before
    /// (`flashstack_sqlvfs::Checked`, which changes neither timing nor state): a wrong
    /// byte stops the run with the file, offset and byte.
    pub check_reads: bool,
    /// Drop the page cache's clean pages after the sync that starts the measured task
    /// (`sync; echo 3 > drop_caches`): the task's first reads reach flash, as a cold app
    /// launch's do. Off: the task finds what its setup left cached.
    pub cold_start: bool,
    /// Record every request F2FS sends the device during the measured window (the task
    /// and the settling after it, what the device's host counters count) as a block
    /// trace. Changes no figure.
    pub record_block: Option<RecordBlock>,
}

/// The phone energy preset matching a device: `ufs31` for UFS devices, else the seed's
/// eMMC phone (`i9260`).
pub fn phone_for_device(device_name: &str) -> PhoneEnergyConfig {
    if device_name.contains("ufs") {
        PhoneEnergyConfig::ufs31()
    } else {
        PhoneEnergyConfig::i9260()
    }
}

impl Default for FullStackOptions {
    fn default() -> Self {
        Self {
            seed: 1,
            dwpd: None,
            record: true,
            keep_trace: true,
            strict: false,
            start: Start::Fresh,
            image_out: None,
            phone: None,
            check_reads: false,
            cold_start: false,
            record_block: None,
        }
    }
}

/// Every layer's figures of one run.
#[derive(Clone, Debug, Serialize)]
pub struct StackRun {
    /// The configuration's name (the column header).
    pub stack: String,
    pub workload: String,
    /// The state the run started from (fill, age, free segments, fragmentation).
    pub start: String,
    /// User-perceived latency per user operation (personas).
    pub user_ops: Vec<OpReport>,
    /// The persona's own report: operations, commits, phases, the trace's MedFS columns.
    pub persona: Option<PersonaReport>,
    /// What a trace replay did.
    pub replay: Option<ReplayReport>,
    /// File-API calls reaching the stack: counts, bytes, latency percentiles.
    pub file_ops: BTreeMap<String, OpMetrics>,
    /// Blocks F2FS wrote by kind, fsyncs, checkpoints, cleaning.
    pub fs: flashstack_f2fs::Metrics,
    pub cache: CacheMetrics,
    /// Write amplification and free space over the run's simulated time.
    pub timeline: Timeline,
    /// The device's figures: host requests as F2FS issued them, NAND, WA, GC, latency,
    /// energy, lifetime.
    pub device: RunReport,
    /// The whole phone's energy per layer (screen, CPU, DRAM, storage device, NAND) over
    /// the measured window (`docs/energy.md`).
    pub energy: PhoneEnergy,
}

/// A run's report, and the recorded task when asked for.
pub struct StackRunOutput {
    pub run: StackRun,
    pub trace: Option<FileTrace>,
    /// Reads checked against the model, with [`FullStackOptions::check_reads`].
    pub reads_checked: Option<u64>,
    /// What the block trace holds, with [`FullStackOptions::record_block`].
    pub block_trace: Option<RecordSummary>,
}

/// Runs `workload` on a new stack built from `config`.
pub fn run(
    config: &StackConfig,
    workload: &StackWorkload,
    options: &FullStackOptions,
) -> Result<StackRunOutput, FullStackError> {
    let stack_err = |message: String| FullStackError::Stack {
        stack: config.name.clone(),
        message,
    };
    let mut config = config.clone();
    config.seed = options.seed;
    let record_err = |source| FullStackError::Record {
        stack: config.name.clone(),
        source,
    };
    // Created before the stack is built, so that a path that cannot be written fails
    // before any simulated work.
    let recorder = match &options.record_block {
        Some(r) => Some(Arc::new(Mutex::new(
            BlockTraceWriter::create(&r.path, r.format, 0).map_err(record_err)?,
        ))),
        None => None,
    };
    let (stack, skip_setup) = start_stack(&config, workload, options).map_err(stack_err)?;
    let shared = SharedStack::new(stack);
    let workload_err = |e: AppError| FullStackError::Workload {
        stack: config.name.clone(),
        message: e.to_string(),
    };
    let checked = Arc::new(AtomicU64::new(0));
    let (persona, replayed, trace) = match workload {
        StackWorkload::Persona(p) => {
            let (report, trace) =
                run_persona(&shared, *p, options, skip_setup, &checked, &recorder)
                    .map_err(workload_err)?;
            (Some(report), None, trace)
        }
        StackWorkload::Trace { trace, .. } => {
            let report =
                replay_trace(&shared, trace, options, &checked, &recorder).map_err(workload_err)?;
            (None, Some(report), None)
        }
    };
    let reads_checked = options.check_reads.then(|| checked.load(Ordering::Relaxed));
    let mut stack = shared.lock();
    settle(&mut stack).map_err(|e| stack_err(format!("settling after the run: {e}")))?;
    stack.sample_timeline();
    let block_trace = match &recorder {
        Some(writer) => {
            stack
                .record_block_requests(None)
                .map_err(|e| stack_err(format!("ending the block trace: {e}")))?;
            let summary = writer.lock().unwrap_or_else(|p| p.into_inner()).finish();
            Some(summary.map_err(record_err)?)
        }
        None => None,
    };
    let metrics = stack
        .metrics()
        .ok_or_else(|| stack_err("powered off".into()))?;
    let ftl = stack.device().expect("a stack with metrics has a device");
    let info = RunInfo {
        device: config.name.clone(),
        gc_policy: ftl.policy_name().to_string(),
        workload: workload.name(),
        seed: options.seed,
        contents_stored: true,
        user_capacity_bytes: ftl.user_capacity_bytes(),
        raw_capacity_bytes: ftl.config().nand.geometry.raw_bytes(),
        precondition: match workload {
            StackWorkload::Persona(_) if skip_setup => {
                Some("the persona's apps as the used phone holds them, synced".into())
            }
            StackWorkload::Persona(_) => Some("the persona's app setup, synced".into()),
            StackWorkload::Trace { .. } => {
                Some("the directories and files the trace found on the phone, synced".into())
            }
        },
    };
    let device = RunReport::from_device(ftl, info, &ReportOptions { dwpd: options.dwpd });
    let phone = options
        .phone
        .clone()
        .unwrap_or_else(|| phone_for_device(&config.device.name));
    let energy = phone_energy(&stack, &metrics, &phone, device.energy.total_mj);
    if let Some(path) = &options.image_out {
        write_image(&mut stack, path).map_err(stack_err)?;
    }
    let run = StackRun {
        stack: config.name.clone(),
        workload: workload.name(),
        start: options.start.describe(),
        user_ops: persona.as_ref().map(|p| p.ops.clone()).unwrap_or_default(),
        persona,
        replay: replayed,
        file_ops: metrics.ops,
        fs: metrics.f2fs,
        cache: metrics.cache,
        timeline: metrics.timeline,
        device,
        energy,
    };
    Ok(StackRunOutput {
        run,
        trace,
        reads_checked,
        block_trace,
    })
}

/// The stack the run starts on, and whether the persona's apps are already on it.
fn start_stack(
    config: &StackConfig,
    workload: &StackWorkload,
    options: &FullStackOptions,
) -> Result<(Stack, bool), String> {
    let image = match &options.start {
        Start::Fresh => {
            return Ok((
                Stack::new(config.clone()).map_err(|e| e.to_string())?,
                false,
            ))
        }
        Start::Phone(image) => image,
    };
    let header = image.header.clone();
    let image = Arc::try_unwrap(Arc::clone(image)).unwrap_or_else(|shared| (*shared).clone());
    let mut stack = image
        .into_stack(Some(config), options.seed)
        .map_err(|e| e.to_string())?;
    let skip_setup = match workload {
        StackWorkload::Persona(p) => {
            flashstack_phone::prepare_persona(&mut stack, &header, &p.apps())
                .map_err(|e| e.to_string())?
        }
        StackWorkload::Trace { .. } => false,
    };
    Ok((stack, skip_setup))
}

/// The phone's energy over the measured window: the device's busy periods, the stack's
/// standby intervals, inputs and held pages, and the CPU time of the file calls (each
/// charged `cpu_ns_per_file_call`, and the cache's copy of every page moved).
fn phone_energy(
    stack: &Stack,
    metrics: &flashstack_stack::StackMetrics,
    phone: &PhoneEnergyConfig,
    nand_mj: f64,
) -> PhoneEnergy {
    let end_ns = stack.now_ns();
    let inputs = stack.energy_inputs(end_ns);
    let calls: u64 = metrics.ops.values().map(|o| o.count).sum();
    let bytes: u64 = metrics.ops.values().map(|o| o.bytes).sum();
    let memcpy_ns = bytes.div_ceil(4096) * stack.config().cache.memcpy_ns_per_page;
    let busy = stack
        .device()
        .map_or(&[][..], |ftl| ftl.activity().periods());
    let activity = Activity {
        start_ns: inputs.start_ns,
        end_ns,
        device_busy: busy,
        standby: &inputs.standby,
        cpu_active_ns: calls * phone.cpu_ns_per_file_call + memcpy_ns,
        inputs: inputs.inputs,
        extra_page_ns: inputs.extra_page_ns,
        nand_mj,
    };
    flashstack_energy::account(phone, &activity)
}

/// The logical device (the F2FS image) after a checkpoint, as a sparse file.
fn write_image(stack: &mut Stack, path: &std::path::Path) -> Result<(), String> {
    let now = stack.now_ns();
    stack
        .sync_all(now)
        .map_err(|e| format!("checkpoint before writing the image: {e}"))?;
    stack
        .write_image(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(())
}

fn run_persona(
    shared: &SharedStack,
    persona: &dyn Persona,
    options: &FullStackOptions,
    skip_setup: bool,
    reads_checked: &Arc<AtomicU64>,
    recorder: &Recorder,
) -> Result<(PersonaReport, Option<FileTrace>), AppError> {
    let run_options = RunOptions {
        record: options.record,
        recorder: flashstack_apps::RecorderConfig {
            keep_ops: options.keep_trace,
            ..flashstack_apps::RecorderConfig::default()
        },
        skip_setup,
        // A cold start is a cold app too: its process restarts and reopens its databases.
        restart_app: options.cold_start,
        ..RunOptions::default()
    };
    let mut start_measuring = sync_and_restart(shared, options.cold_start, recorder.clone());
    let api: Box<dyn FileApi> = if options.check_reads {
        let checked =
            flashstack_sqlvfs::Checked::with_counter(shared.clone(), reads_checked.clone());
        Box::new(checked)
    } else {
        Box::new(shared.clone())
    };
    let out = run_with_hook(
        persona,
        api,
        options.seed,
        &run_options,
        &mut start_measuring,
    );
    match out.error {
        Some(e) => Err(e),
        None => Ok((out.report, out.trace)),
    }
}

/// Lays down what the trace found on the phone (its directories, the files that existed
/// before it), syncs it, restarts the counters, then replays the trace.
fn replay_trace(
    shared: &SharedStack,
    trace: &FileTrace,
    options: &FullStackOptions,
    reads_checked: &Arc<AtomicU64>,
    recorder: &Recorder,
) -> Result<ReplayReport, AppError> {
    // The data was on flash before the capture: its reads must reach the device.
    let mut start_measuring = sync_and_restart(shared, true, recorder.clone());
    let mut api: Box<dyn FileApi> = if options.check_reads {
        let checked =
            flashstack_sqlvfs::Checked::with_counter(shared.clone(), reads_checked.clone());
        Box::new(checked)
    } else {
        Box::new(shared.clone())
    };
    let replay_options = ReplayOptions {
        start_ns: shared.lock().now_ns(),
        strict: options.strict,
    };
    flashstack_apps::replay_with(
        trace,
        api.as_mut(),
        options.seed,
        &replay_options,
        &mut start_measuring,
    )
}

/// The block trace being recorded, shared between the stack's device and the run.
type Recorder = Option<Arc<Mutex<BlockTraceWriter>>>;

/// The start of a measurement: the stack syncs (every dirty page written, a checkpoint),
/// with `drop_caches` drops its clean pages, restarts every layer's counters and, with a
/// `recorder`, starts recording the device's requests (times from the sync's end).
fn sync_and_restart(
    shared: &SharedStack,
    drop_caches: bool,
    recorder: Recorder,
) -> impl FnMut(Nanos) -> Result<Nanos, AppError> {
    let shared = shared.clone();
    move |now: Nanos| {
        let mut stack = shared.lock();
        let end = stack
            .sync_all(now)
            .map_err(|e| AppError::file("sync_all", "/", e))?;
        if drop_caches {
            stack
                .drop_caches()
                .map_err(|e| AppError::file("drop_caches", "/", e))?;
        }
        stack
            .reset_measurement()
            .map_err(|e| AppError::file("reset", "/", e))?;
        if let Some(writer) = &recorder {
            writer
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .set_origin(end);
            stack
                .record_block_requests(Some(Box::new(writer.clone())))
                .map_err(|e| AppError::file("record", "/", e))?;
        }
        Ok(end)
    }
}

/// Idles past the cache's dirty expiry plus one flusher period: what a phone left alone
/// writes back.
fn settle(stack: &mut Stack) -> Result<Nanos, flashstack_sqlvfs::FileError> {
    let cache = &stack.config().cache;
    let settle_ns = cache.dirty_expire_ns + cache.dirty_writeback_interval_ns;
    let until = stack.now_ns().saturating_add(settle_ns);
    stack.idle_until(until)
}

/// `none`, or each kind the replay could not honour with its count.
fn unhonoured_cell(report: &ReplayReport) -> String {
    if report.unhonoured.is_empty() {
        return "none".into();
    }
    let kinds: Vec<String> = report
        .unhonoured
        .iter()
        .map(|(kind, n)| format!("{kind} ×{}", format_count(*n)))
        .collect();
    kinds.join(", ")
}

fn op_cell(run: &StackRun, name: &str, pick: fn(&OpReport) -> Nanos) -> String {
    run.user_ops
        .iter()
        .find(|o| o.name == name)
        .map_or("-".into(), |o| format_ns(pick(o)))
}

/// One column per run: user operations, the file API, F2FS, the cache, then the device's
/// table.
pub fn render(runs: &[StackRun]) -> String {
    let headers: Vec<String> = runs.iter().map(|r| r.stack.clone()).collect();
    let mut rows: Vec<(String, Vec<String>)> = Vec::new();
    let mut row = |label: String, f: &dyn Fn(&StackRun) -> String| {
        rows.push((label, runs.iter().map(f).collect()));
    };
    let mut op_names: Vec<String> = runs
        .iter()
        .flat_map(|r| r.user_ops.iter().map(|o| o.name.clone()))
        .collect();
    op_names.sort();
    op_names.dedup();
    for name in &op_names {
        let count = runs
            .iter()
            .find_map(|r| r.user_ops.iter().find(|o| &o.name == name))
            .map_or(0, |o| o.latency.count);
        row(format!("user op '{name}' ×{count} p50"), &|r| {
            op_cell(r, name, |o| o.latency.latency_ns_p50)
        });
        row("  p99 / max".into(), &|r| {
            format!(
                "{} / {}",
                op_cell(r, name, |o| o.latency.latency_ns_p99),
                op_cell(r, name, |o| o.latency.latency_ns_max)
            )
        });
    }
    row("app writes (trace)".into(), &|r| {
        r.persona
            .as_ref()
            .and_then(|p| p.trace.as_ref())
            .map_or("-".into(), trace_cell)
    });
    if runs.iter().any(|r| r.replay.is_some()) {
        row("trace: found on the phone".into(), &|r| {
            r.replay.as_ref().map_or("-".into(), |p| {
                format!(
                    "{} files ({}), {} dirs",
                    format_count(p.preexisting_files),
                    format_bytes(p.preexisting_bytes),
                    format_count(p.directories_made)
                )
            })
        });
        row("trace: not honoured".into(), &|r| {
            r.replay.as_ref().map_or("-".into(), unhonoured_cell)
        });
    }
    for op in ["write", "read", "fsync", "fdatasync"] {
        row(
            format!("file {op} calls / p99"),
            &|r| match r.file_ops.get(op) {
                Some(m) => format!(
                    "{} / {}",
                    format_count(m.count),
                    format_ns(m.latency.latency_ns_p99)
                ),
                None => "-".into(),
            },
        );
    }
    row("F2FS blocks written".into(), &|r| {
        format_count(r.fs.total_blocks())
    });
    row("  data / in place / node".into(), &|r| {
        format!(
            "{} / {} / {}",
            format_count(r.fs.data_blocks),
            format_count(r.fs.ipu_data_blocks),
            format_count(r.fs.node_blocks)
        )
    });
    row("  checkpoint / NAT / SIT / SSA".into(), &|r| {
        format!(
            "{} / {} / {} / {}",
            format_count(r.fs.checkpoint_blocks),
            format_count(r.fs.nat_blocks),
            format_count(r.fs.sit_blocks),
            format_count(r.fs.ssa_blocks)
        )
    });
    row("  cleaning moved data / node".into(), &|r| {
        format!(
            "{} / {}",
            format_count(r.fs.gc_data_blocks),
            format_count(r.fs.gc_node_blocks)
        )
    });
    row("  written by SSR (segments)".into(), &|r| {
        format!(
            "{} ({})",
            format_count(r.fs.ssr_blocks()),
            format_count(r.fs.ssr_segments)
        )
    });
    row("F2FS fsyncs / checkpoints".into(), &|r| {
        format!(
            "{} / {}",
            format_count(r.fs.fsyncs),
            format_count(r.fs.checkpoints)
        )
    });
    row("F2FS cleaning fg / bg".into(), &|r| {
        format!(
            "{} / {}",
            format_count(r.fs.gc_cycles - r.fs.bg_gc_cycles),
            format_count(r.fs.bg_gc_cycles)
        )
    });
    row("cache pages written back".into(), &|r| {
        format_count(r.cache.pages_written_back_total())
    });
    row("cache read hits / misses".into(), &|r| {
        format!(
            "{} / {}",
            format_count(r.cache.read_hits),
            format_count(r.cache.read_misses)
        )
    });
    energy_rows(runs, &mut rows);
    let mut out = format!("workload: {}\n", runs.first().map_or("", |r| &r.workload));
    for r in runs {
        out.push_str(&format!("start ({}): {}\n", r.stack, r.start));
    }
    out.push_str(&render_columns(&headers, &rows));
    out.push_str("device (the block requests F2FS issued):\n");
    let devices: Vec<RunReport> = runs.iter().map(|r| r.device.clone()).collect();
    let table = flashstack_report::render_table(&devices);
    // The workload line is already printed above.
    out.push_str(table.split_once('\n').map_or(&table[..], |(_, rest)| rest));
    out
}

/// The whole phone's energy per layer (the device table below keeps the NAND's own).
fn energy_rows(runs: &[StackRun], rows: &mut Vec<(String, Vec<String>)>) {
    let mut row = |label: &str, f: &dyn Fn(&PhoneEnergy) -> String| {
        rows.push((
            label.to_string(),
            runs.iter().map(|r| f(&r.energy)).collect(),
        ));
    };
    row("energy (phone)", &|e| {
        format!("{:.1} mJ ({})", e.total_mj, e.phone)
    });
    row("  screen / CPU / DRAM", &|e| {
        format!(
            "{:.1} / {:.1} / {:.1} mJ",
            e.screen_mj,
            e.cpu_active_mj + e.cpu_idle_mj + e.cpu_standby_mj,
            e.dram_refresh_mj + e.dram_extra_pages_mj
        )
    });
    row("  CPU active / idle / standby", &|e| {
        format!(
            "{:.1} / {:.1} / {:.1} mJ",
            e.cpu_active_mj, e.cpu_idle_mj, e.cpu_standby_mj
        )
    });
    row("  DRAM extra pages", &|e| {
        format!("{:.3} mJ", e.dram_extra_pages_mj)
    });
    row("  device (storage + NAND)", &|e| {
        format!(
            "{:.1} mJ ({:.1} + {:.1})",
            e.device_mj,
            e.device_mj - e.nand_mj,
            e.nand_mj
        )
    });
    row("  storage active/idle/sleep/wake", &|e| {
        format!(
            "{:.1} / {:.1} / {:.2} / {:.2} mJ",
            e.storage_active_mj, e.storage_idle_mj, e.storage_sleep_mj, e.storage_wakeup_mj
        )
    });
    row("  screen on / standby", &|e| {
        format!("{:.1} / {:.1} s", e.screen_on_s, e.standby_s)
    });
}

fn trace_cell(t: &TraceSummary) -> String {
    format!(
        "{}, UR {:.1}%, UD {:.1}%",
        format_bytes(t.write_bytes),
        t.update_ratio.unwrap_or(0.0) * 100.0,
        t.update_difference.unwrap_or(0.0) * 100.0
    )
}
