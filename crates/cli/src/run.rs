//! `flashstack run`: one column per device configuration, same input.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use flashstack_content::ContentMix;
use flashstack_replay::{
    AgingShape, BlockOptions, PreconditionMethod, Replayer, RunConfig, DEFAULT_AGING_MAX,
    DEFAULT_PRECONDITION,
};
use flashstack_report::{render_csv, render_json, render_table, RunReport};
use flashstack_trace::builtin::{back_to_back, Builtin, BuiltinWorkload, REPEAT_GAP_NS};
use flashstack_trace::{
    clean, parse_file, synthetic, CleanOptions, ParseOptions, SyntheticSpec, Trace, TraceFormat,
};

use crate::progress::Bar;
use crate::stackrun;
use crate::{compare, device};

/// The workload `flashstack run` uses when given none (shared with sweeps).
pub use flashstack_replay::DEFAULT_SYNTHETIC;
pub const DEFAULT_DEVICE: &str = "ldc-emmc";
/// `--precondition-method`.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub(crate) enum PreconditionMethodArg {
    Replay,
    Construct,
}

/// `--precondition-shape`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum AgingShapeArg {
    #[value(name = "uniform-4k")]
    Uniform4k,
    Workload,
}

#[derive(Args, Clone, Debug, Default)]
pub struct TraceInput {
    /// Trace format (default: detected from the first lines).
    #[arg(long, value_name = "mqsim|disksim|msr|blkparse|pixel")]
    pub format: Option<TraceFormat>,
    /// Time unit of MQSim traces.
    #[arg(long, value_name = "ns|us|ps")]
    pub time_unit: Option<flashstack_trace::TimeUnit>,
    /// Drop requests logged twice by two processes within 10 ms (keeping a process's own
    /// rewrites) and shorten idle gaps over 10 s (the known artefacts of the Pixel mobile
    /// traces); reports how much it dropped and kept.
    #[arg(long)]
    pub clean: bool,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Device preset, TOML file, or either with +key=value overrides (`flashstack
    /// presets`); with a persona or file-level trace also a stack preset or stack spec.
    #[arg(long, value_name = "PRESET|FILE.toml")]
    pub(crate) device: Option<String>,
    /// Compare configurations side by side, one column each: comma-separated device (or,
    /// with a persona or file-level trace, stack) specifications.
    #[arg(long, value_name = "SPEC,SPEC,...", value_delimiter = ',')]
    pub(crate) compare: Vec<String>,
    /// Block trace to replay.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["synthetic", "workload"])]
    pub(crate) trace: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) input: TraceInput,
    /// Block traces: replay this install-time trace (same --format and --time-unit as
    /// --trace) on the device before the measurement, counted in no figure; mobile trace
    /// sets ship one beside each run trace. It replaces the default fill preconditioning:
    /// with --precondition F also given, the device is filled and aged first, then the
    /// install trace replays.
    #[arg(long, value_name = "FILE",
          conflicts_with_all = ["image", "workload", "synthetic", "no_precondition"])]
    pub(crate) precondition_trace: Option<PathBuf>,
    /// Synthetic block workload, e.g. "uniform,count=1e6,read=0.3,size=4k"; "default" is
    /// the phone-like mix `run` uses with block-level options and no workload.
    #[arg(long, value_name = "SPEC", conflicts_with = "workload")]
    pub(crate) synthetic: Option<String>,
    /// A built-in block workload (ldc:fb, ...: lays down its own existing data instead of
    /// preconditioning), an app persona (gmail:send-image, mix, ...) or a file-level trace
    /// (FILE.fst); personas and file traces run on the whole stack (page cache, F2FS, FTL,
    /// NAND). List: `flashstack workload list`.
    #[arg(long, value_name = "NAME|FILE")]
    pub(crate) workload: Option<String>,
    /// The stack a persona or file trace runs on: a preset (default, ldc-emmc, ufs31) or a
    /// stack TOML file; --device/--compare then swap its device.
    #[arg(long, value_name = "PRESET|FILE.toml")]
    pub(crate) stack: Option<String>,
    /// Write the persona's recorded task as a file-level trace (first configuration).
    #[arg(long, value_name = "FILE")]
    pub(crate) record: Option<PathBuf>,
    /// Write every request the stack's F2FS sends the device during the measured task
    /// (and the settling after it) as a block trace, with virtual arrival times (first
    /// configuration); `--trace FILE` replays it. See --record-block-format.
    #[arg(long, value_name = "FILE")]
    pub(crate) record_block: Option<PathBuf>,
    /// Format of --record-block: `mqsim` (reads and writes, times in ns: replay with
    /// `--format mqsim --time-unit ns`; discards and flushes are counted as dropped) or
    /// `blkparse` (reads, writes, discards and flushes).
    #[arg(
        long,
        value_name = "mqsim|blkparse",
        default_value = "mqsim",
        requires = "record_block"
    )]
    pub(crate) record_block_format: flashstack_trace::RecordFormat,
    /// File-level traces: stop at the first operation the replay cannot honour (an
    /// unlink of a file that is not there, a hard link, …) instead of counting it by kind
    /// and carrying on.
    #[arg(long)]
    pub(crate) strict: bool,
    /// Start personas and file traces from this used phone (`flashstack phone age`)
    /// instead of the stack's built-in aged phone; without --stack, on the stack the phone
    /// was made on.
    #[arg(long, value_name = "FILE.phone", conflicts_with = "fresh")]
    pub(crate) phone: Option<PathBuf>,
    /// Start personas and file traces from a factory-new phone (an empty F2FS on a fresh
    /// device) instead of the built-in aged phone.
    #[arg(long)]
    pub(crate) fresh: bool,
    /// Personas and file-level traces: check every read against what the workload wrote
    /// or read before, and stop at the first wrong byte naming the file, offset and byte.
    /// Changes no figure (the checker makes no I/O of its own). Block workloads: --verify.
    #[arg(long)]
    pub(crate) check_reads: bool,
    /// Personas: drop the page cache (after the sync) before the measured task, so its
    /// first reads reach flash — a cold app launch (`sync; echo 3 > drop_caches`).
    #[arg(long)]
    pub(crate) cold_start: bool,
    /// Replay the workload N times back to back (the LDC paper replays each 3 times).
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) repeat: u32,
    /// Seed of every random choice (workload, content, preconditioning); the same command
    /// and seed print the same bytes.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Override a device field on every device (repeatable), e.g. ftl.gc.policy=cost-benefit.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub(crate) overrides: Vec<String>,
    /// Fill to this fraction of the user capacity and age to steady state before measuring
    /// [default: 0.5].
    #[arg(long, value_name = "FRACTION")]
    pub(crate) precondition: Option<f64>,
    /// Upper bound on aging writes, as a multiple of the filled LBAs.
    #[arg(long, value_name = "FACTOR", default_value_t = DEFAULT_AGING_MAX)]
    pub(crate) aging_max: f64,
    /// How preconditioning reaches the steady state: `replay` random overwrites (the
    /// default), or `construct` it directly (the steady state of uniform random
    /// overwrites laid out on flash, then settled with short windows of writes; much
    /// faster on large devices; addresses-only page-mapped devices).
    #[arg(long, value_name = "METHOD", default_value = "replay")]
    pub(crate) precondition_method: PreconditionMethodArg,
    /// What preconditioning's aging writes look like: `uniform-4k` random overwrites (the
    /// default), or `workload`: aligned extents of the trace's or synthetic workload's own
    /// write sizes, in the regions it writes them, so files it writes in large requests
    /// stay in large runs on flash (docs/validation.md, "Workload-shaped aging"; replay
    /// method only).
    #[arg(long, value_name = "SHAPE", default_value = "uniform-4k")]
    pub(crate) precondition_shape: AgingShapeArg,
    /// Measure from an empty device (no preconditioning, no existing data).
    #[arg(long, conflicts_with = "precondition")]
    pub(crate) no_precondition: bool,
    /// Start from a logical device image (raw, 4 KiB blocks; e.g. from --image-out or
    /// `flashstack fs mkfs`): its non-zero blocks are the existing data, in place of
    /// preconditioning (implies --contents).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["precondition", "workload", "no_precondition"])]
    pub(crate) image: Option<PathBuf>,
    /// Write the logical device image after the run (implies --contents). With several
    /// devices, device N writes FILE with "-N" before its extension.
    #[arg(long, value_name = "FILE")]
    pub(crate) image_out: Option<PathBuf>,
    /// Store page contents (memory = bytes written) with bytes from the content model.
    #[arg(long)]
    pub(crate) contents: bool,
    /// Content classes and weights, e.g. "sqlite:40,text:10,media:50" (implies --contents).
    #[arg(long, value_name = "MIX")]
    pub(crate) content_mix: Option<ContentMix>,
    /// Read back every host read and compare it with what was written (implies --contents).
    #[arg(long)]
    pub(crate) verify: bool,
    /// Fold addresses beyond the device into it instead of failing.
    #[arg(long)]
    pub(crate) wrap: bool,
    /// Block traces: do not lay down the data the trace reads without ever writing it
    /// (by default it is written before the measurement, so such reads hit flash).
    #[arg(long)]
    pub(crate) no_read_footprint: bool,
    /// Block traces: processes listed by name in the report, most bytes first (the rest
    /// are summed as "(other)") [default: 10].
    #[arg(long, value_name = "N")]
    pub(crate) processes: Option<usize>,
    /// Drive writes per day to assume in the lifetime projection (default: measured).
    #[arg(long)]
    pub(crate) dwpd: Option<f64>,
    /// Also write the figures as JSON (one object per run; "-" for standard output).
    #[arg(long, value_name = "FILE")]
    pub(crate) json: Option<PathBuf>,
    /// Also write the figures as CSV (a header and one row per run, dotted column names;
    /// "-" for standard output).
    #[arg(long, value_name = "FILE")]
    pub(crate) csv: Option<PathBuf>,
    /// Also write a self-contained HTML report with plots (latency CDFs, bytes per layer,
    /// erase histogram, energy) and every column's configuration (docs/reports.md).
    #[arg(long, value_name = "FILE")]
    pub(crate) html: Option<PathBuf>,
    /// No progress bar and no progress lines.
    #[arg(long, short)]
    pub(crate) quiet: bool,
}

pub fn load_trace(path: &Path, input: &TraceInput) -> Result<Trace> {
    let mut options = ParseOptions::default();
    if let Some(unit) = input.time_unit {
        options.mqsim_time_unit = unit;
    }
    let mut trace = parse_file(path, input.format, &options)?;
    if trace.requests.is_empty() {
        bail!(
            "{}: no requests in the trace ({})",
            path.display(),
            trace.parse_report
        );
    }
    if input.clean {
        let report = clean(&mut trace, &CleanOptions::default());
        eprintln!("{}: cleaned: {report}", path.display());
    }
    Ok(trace)
}

fn device_specs(args: &RunArgs) -> Vec<String> {
    let mut specs: Vec<String> = args.device.iter().cloned().collect();
    specs.extend(args.compare.iter().cloned());
    if specs.is_empty() {
        specs.push(DEFAULT_DEVICE.to_string());
    }
    specs
}

fn run_config(args: &RunArgs, spec: &str, workload_name: &str) -> Result<RunConfig> {
    let mut device = device::resolve(spec)?;
    if !args.overrides.is_empty() {
        let overrides: Vec<&str> = args.overrides.iter().map(String::as_str).collect();
        let name = device.name.clone();
        device = device::apply_overrides(&device, &overrides)?;
        device.name = format!("{name}+{}", args.overrides.join("+"));
    }
    if args.precondition_shape == AgingShapeArg::Workload {
        let why = if args.workload.is_some() {
            Some("a built-in workload lays down and ages its own existing data")
        } else if args.image.is_some() {
            Some("--image starts from the image's data, not preconditioning")
        } else if args.no_precondition {
            Some("--no-precondition does not age the device")
        } else if args.precondition_trace.is_some() && args.precondition.is_none() {
            Some("the install trace preconditions by itself (add --precondition F to fill and age first)")
        } else if matches!(args.precondition_method, PreconditionMethodArg::Construct) {
            Some("--precondition-method construct lays out the steady state of uniform 4 KiB overwrites; use replay")
        } else {
            None
        };
        if let Some(why) = why {
            bail!("--precondition-shape workload: {why}");
        }
    }
    if args.workload.is_some() && args.precondition.is_some() {
        bail!(
            "--precondition: a built-in workload lays down its own existing data; \
             use --no-precondition to start from an empty device"
        );
    }
    let options = BlockOptions {
        seed: args.seed,
        precondition: args.precondition,
        aging_max: args.aging_max,
        method: match args.precondition_method {
            PreconditionMethodArg::Replay => PreconditionMethod::Replay,
            PreconditionMethodArg::Construct => PreconditionMethod::Construct,
        },
        shape: match args.precondition_shape {
            AgingShapeArg::Uniform4k => AgingShape::Uniform4k,
            AgingShapeArg::Workload => AgingShape::Workload,
        },
        // An install trace preconditions by itself unless a fill is asked for too.
        no_precondition: args.no_precondition
            || (args.precondition_trace.is_some() && args.precondition.is_none()),
        store_contents: args.contents
            || args.verify
            || args.content_mix.is_some()
            || args.image.is_some()
            || args.image_out.is_some(),
        content_mix: args.content_mix.clone(),
        wrap: args.wrap,
        verify: args.verify,
        dwpd: args.dwpd,
    };
    let fraction = args.precondition.unwrap_or(DEFAULT_PRECONDITION);
    if !(0.0..=1.0).contains(&fraction) {
        bail!("--precondition {fraction}: must be a fraction between 0 and 1");
    }
    let from_scratch = args.workload.is_none() && args.image.is_none();
    let config = options.run_config(device, workload_name, from_scratch);
    if let (true, Some(p)) = (options.store_contents, &config.precondition) {
        check_memory_for(&config.device, p.utilization, contents_flag(args))?;
    }
    Ok(config)
}

/// With contents stored, preconditioning keeps the bytes of every filled page in memory.
/// Refuses up front, naming the sizes and the ways out, when that cannot fit in this
/// machine's available memory (instead of being killed by the kernel midway). Host
/// memory decides only whether a run starts, never a result.
pub(crate) fn check_memory_for_contents(
    device: &flashstack_ftl::DeviceConfig,
    utilization: f64,
) -> Result<()> {
    check_memory_for(device, utilization, "--contents")
}

/// The option that made a block-level run store page contents: `--image-out`, `--image`,
/// `--verify` and `--content-mix` turn it on without saying so.
fn contents_flag(args: &RunArgs) -> &'static str {
    [
        (args.contents, "--contents"),
        (args.image_out.is_some(), "--image-out"),
        (args.image.is_some(), "--image"),
        (args.verify, "--verify"),
        (args.content_mix.is_some(), "--content-mix"),
    ]
    .into_iter()
    .find_map(|(set, flag)| set.then_some(flag))
    .unwrap_or("--contents")
}

/// [`check_memory_for_contents`] naming the option `flag` that asked for contents.
fn check_memory_for(
    device: &flashstack_ftl::DeviceConfig,
    utilization: f64,
    flag: &str,
) -> Result<()> {
    let Some(available) = available_memory_bytes() else {
        return Ok(());
    };
    let capacity = device.user_capacity_bytes()?;
    let needed = (capacity as f64 * utilization) as u64;
    if let Some(refusal) = memory_refusal(flag, &device.name, utilization, needed, available) {
        bail!("{refusal}");
    }
    Ok(())
}

/// The refusal when `needed` bytes of contents exceed `available`, naming what asked
/// for them and every way out.
fn memory_refusal(
    flag: &str,
    device: &str,
    utilization: f64,
    needed: u64,
    available: u64,
) -> Option<String> {
    if needed <= available {
        return None;
    }
    let why = match flag {
        "--contents" => "--contents stores page contents".to_string(),
        "--image-out" => "--image-out needs page contents (the image holds the bytes), \
                          so the run stores them"
            .to_string(),
        other => format!("{other} needs page contents, so the run stores them"),
    };
    let drop = if flag == "--contents" {
        "leave out --contents".to_string()
    } else {
        format!("leave out {flag}")
    };
    Some(format!(
        "{why}: preconditioning {:.0}% of '{device}' would keep {:.1} GiB of them in memory, \
         more than the {:.1} GiB available; fill less (--precondition 0.1), start empty \
         (--no-precondition), use a smaller device (e.g. +nand.geometry.blocks_per_plane=N), \
         or {drop}",
        utilization * 100.0,
        needed as f64 / GIB,
        available as f64 / GIB
    ))
}

const GIB: f64 = (1u64 << 30) as f64;

/// `MemAvailable` from /proc/meminfo (Linux); `None` where unknown.
fn available_memory_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// What `flashstack run` replays.
enum Input {
    Trace(Trace),
    Synthetic(SyntheticSpec),
    Builtin(Builtin),
}

impl Input {
    fn from_args(args: &RunArgs) -> Result<(Input, String)> {
        if let Some(path) = &args.trace {
            let trace = load_trace(path, &args.input)?;
            let name = format!("{} ({})", trace.name, trace.format);
            return Ok((Input::Trace(trace), name));
        }
        if let Some(builtin) = args.workload.as_deref().map(str::parse::<Builtin>) {
            let builtin = builtin.map_err(|e| anyhow!("--workload: {e}"))?;
            return Ok((Input::Builtin(builtin), builtin.to_string()));
        }
        let text = match args.synthetic.as_deref() {
            None | Some("default") => DEFAULT_SYNTHETIC.to_string(),
            Some(spec) => spec.to_string(),
        };
        let spec = text.parse().map_err(|e| anyhow!("--synthetic: {e}"))?;
        Ok((Input::Synthetic(spec), text))
    }
}

pub fn run(args: RunArgs) -> Result<()> {
    if args.precondition_trace.is_some() && args.trace.is_none() {
        bail!(
            "--precondition-trace replays an install-time trace before a block trace's \
             measurement: it needs --trace RUN_TRACE"
        );
    }
    if let Some(name) = stackrun::whole_stack_workload(&args) {
        return stackrun::run(&args, &name);
    }
    if args.stack.is_some() || args.record.is_some() || args.record_block.is_some() {
        bail!(
            "--stack, --record and --record-block apply to personas and file-level traces \
             (--workload)"
        );
    }
    if args.check_reads {
        bail!("--check-reads applies to personas and file-level traces; block workloads check reads with --verify");
    }
    if args.phone.is_some() || args.fresh {
        bail!(
            "--phone and --fresh apply to personas and file-level traces (--workload); block \
             workloads start from --precondition, --image or a built-in workload's own data"
        );
    }
    let (input, mut workload_name) = Input::from_args(&args)?;
    let install = match &args.precondition_trace {
        Some(path) => Some((path.as_path(), load_trace(path, &args.input)?)),
        None => None,
    };
    if args.repeat > 1 {
        workload_name = format!("{workload_name} x{}", args.repeat);
    }
    let mut reports = Vec::new();
    let mut devices = Vec::new();
    let specs = device_specs(&args);
    for (index, spec_name) in specs.iter().enumerate() {
        let config = run_config(&args, spec_name, &workload_name)?;
        devices.push(config.device.clone());
        let image_out = args
            .image_out
            .as_deref()
            .map(|path| numbered(path, index, specs.len()));
        let report = run_one(
            config,
            &input,
            install.as_ref(),
            &args,
            image_out.as_deref(),
        )
        .with_context(|| format!("device '{spec_name}'"))?;
        reports.push(report);
    }
    print!("{}", render_table(&reports));
    let columns: Vec<_> = (specs.iter().zip(&devices).zip(&reports))
        .map(|((name, config), report)| compare::Column {
            name,
            config,
            report,
        })
        .collect();
    print!("{}", compare::no_effect_notes(&columns));
    if let Some(path) = &args.json {
        write_output(path, &render_json(&reports))?;
    }
    if let Some(path) = &args.csv {
        write_output(path, &render_csv(&reports))?;
    }
    if let Some(path) = &args.html {
        let columns = (specs.iter().zip(&devices).zip(&reports))
            .map(|((name, config), report)| crate::html::column(name, config, report, args.seed))
            .collect::<Result<Vec<_>>>()?;
        crate::html::write(path, &format!("{workload_name} on the device"), &columns)?;
    }
    Ok(())
}

/// `FILE` for a single device; `FILE-N.ext` (N from 1) for device N of several.
pub(crate) fn numbered(path: &Path, index: usize, devices: usize) -> PathBuf {
    if devices == 1 {
        return path.to_path_buf();
    }
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    let name = match path.extension() {
        Some(ext) => format!("{stem}-{}.{}", index + 1, ext.to_string_lossy()),
        None => format!("{stem}-{}", index + 1),
    };
    path.with_file_name(name)
}

pub(crate) fn write_output(path: &Path, text: &str) -> Result<()> {
    if path == Path::new("-") {
        print!("{text}");
        return Ok(());
    }
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// An install-time trace (`--precondition-trace`) and the file it came from.
type InstallTrace<'a> = (&'a Path, Trace);

fn run_one(
    config: RunConfig,
    input: &Input,
    install: Option<&InstallTrace>,
    args: &RunArgs,
    image_out: Option<&Path>,
) -> Result<RunReport> {
    let mut bar = Bar::new(args.quiet);
    let passes = args.repeat;
    let mut replayer = match input {
        Input::Builtin(builtin) => {
            let (mut replayer, workload) = start_builtin(config, *builtin, args, &mut bar)?;
            let total = workload.requests.len() as u64 * u64::from(passes);
            replayer.replay(workload.passes(passes), Some(total), &mut bar)?;
            replayer
        }
        Input::Trace(trace) => {
            let mut replayer = prepared(config, args, &mut bar, Some((trace, install)), None)?;
            let requests = back_to_back(trace.requests.iter().copied(), passes, REPEAT_GAP_NS);
            let total = trace.requests.len() as u64 * u64::from(passes);
            replayer.replay(requests, Some(total), &mut bar)?;
            replayer
        }
        Input::Synthetic(spec) => {
            let mut replayer = prepared(config, args, &mut bar, None, Some(spec))?;
            let source = synthetic(spec, replayer.capacity_bytes(), args.seed)
                .map_err(|e| anyhow!("--synthetic: {e}"))?;
            let requests = back_to_back(source, passes, REPEAT_GAP_NS);
            let total = spec.count * u64::from(passes);
            replayer.replay(requests, Some(total), &mut bar)?;
            replayer
        }
    };
    bar.finish();
    if replayer.wrapped_requests > 0 && !args.quiet {
        eprintln!(
            "note: {} requests were folded into the device (--wrap)",
            replayer.wrapped_requests
        );
    }
    let mut report = replayer.report();
    if let Input::Trace(trace) = input {
        report.trace = Some(replayer.trace_figures(trace));
    }
    if let Some(path) = image_out {
        let blocks = replayer.export_image(path)?;
        if !args.quiet {
            eprintln!(
                "{}: image written to {} ({blocks} non-zero blocks)",
                replayer.ftl.config().name,
                path.display()
            );
        }
    }
    Ok(report)
}

/// A replayer, started from `--image` or preconditioned as configured, ready to measure;
/// for a block trace (with its install trace, if any), checked and planned first
/// (`blocktrace::before_prepare`).
fn prepared(
    config: RunConfig,
    args: &RunArgs,
    bar: &mut Bar,
    trace: Option<(&Trace, Option<&InstallTrace>)>,
    spec: Option<&SyntheticSpec>,
) -> Result<Replayer> {
    let quiet = args.quiet;
    let shaped = config
        .precondition
        .as_ref()
        .is_some_and(|p| p.shape == AgingShape::Workload);
    let mut replayer = Replayer::new(config)?;
    if shaped {
        // The aging takes its shape from the very requests the run will measure.
        match (trace, spec) {
            (Some((trace, _)), _) => replayer.shape_aging_on(trace.requests.iter().copied()),
            (None, Some(spec)) => {
                let source = synthetic(spec, replayer.capacity_bytes(), args.seed)
                    .map_err(|e| anyhow!("--synthetic: {e}"))?;
                replayer.shape_aging_on(source);
            }
            (None, None) => {}
        }
    }
    if let Some((trace, install)) = trace {
        crate::blocktrace::before_prepare(&mut replayer, trace, args)?;
        if let Some((path, install)) = install {
            crate::blocktrace::precondition_with(&mut replayer, path, install)?;
        }
    }
    if let Some(path) = &args.image {
        let report = replayer.load_image(path, bar)?;
        bar.finish();
        if !quiet {
            eprintln!("{}: {report}", replayer.ftl.config().name);
        }
    }
    replayer.prepare(bar)?;
    bar.finish();
    if let Some(p) = replayer.precondition_summary() {
        if !quiet {
            eprintln!("{}: precondition: {p}", replayer.ftl.config().name);
        }
    }
    Ok(replayer)
}

/// The built-in workload's replayer (`flashstack_replay::start_builtin`: its existing
/// data laid down and aged unless `--no-precondition`), measuring.
fn start_builtin(
    config: RunConfig,
    builtin: Builtin,
    args: &RunArgs,
    bar: &mut Bar,
) -> Result<(Replayer, BuiltinWorkload)> {
    let lay_down = !args.no_precondition;
    let (mut replayer, workload) =
        flashstack_replay::start_builtin(config, builtin, lay_down, bar)?;
    if lay_down {
        bar.finish();
        if !args.quiet {
            eprintln!("{}: {}", replayer.ftl.config().name, replayer.snapshot);
        }
    }
    replayer.prepare(bar)?;
    Ok((replayer, workload))
}

#[cfg(test)]
mod memory_tests {
    use super::memory_refusal;

    #[test]
    fn a_refusal_names_the_option_that_asked_for_contents() {
        assert!(memory_refusal("--image-out", "ldc-emmc", 0.5, 8 << 30, 9 << 30).is_none());
        let text = memory_refusal("--image-out", "ldc-emmc", 0.5, 8 << 30, 2 << 30).unwrap();
        assert!(
            text.starts_with("--image-out needs page contents"),
            "{text}"
        );
        assert!(text.contains("--no-precondition") && text.contains("--precondition 0.1"));
        assert!(
            text.contains("8.0 GiB") && text.contains("2.0 GiB"),
            "{text}"
        );
        let text = memory_refusal("--contents", "x", 0.9, 5 << 30, 1 << 30).unwrap();
        assert!(text.contains("leave out --contents"), "{text}");
    }
}
