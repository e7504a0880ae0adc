//! Running a persona on any file system: setup (unrecorded), the recorded task, the report.

use std::collections::BTreeMap;

use flashstack_sim::{LatencySummary, Nanos, NS_PER_SEC};
use flashstack_sqlvfs::{FileApi, SimVfs, SqliteConfig};
use flashstack_workload::{FileTrace, TraceSummary};
use serde::Serialize;

use crate::ctx::{Ctx, Witness};
use crate::error::AppError;
use crate::interaction::InteractionCounts;
use crate::persona::{MedfsRow, Persona};
use crate::recorder::{BoxedApi, Recorder, RecorderConfig, Recording};
use crate::shared::Shared;

/// How a run is carried out.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunOptions {
    /// Record the task phase as a file-level trace (and analyse it in the report).
    pub record: bool,
    /// Limits of the recorder.
    pub recorder: RecorderConfig,
    /// SQLite's own CPU cost charged before each of its file calls.
    pub sqlite_cpu_ns_per_call: Nanos,
    /// The app's CPU cost charged before each of its own file calls.
    pub app_cpu_ns_per_call: Nanos,
    /// Skip the setup phase (the file system already holds the app's data).
    pub skip_setup: bool,
    /// Run the setup phase only (e.g. to lay down the state a trace starts from).
    pub setup_only: bool,
    /// First value of the run's counter of unique file names (media, temporary files), so
    /// that several runs on one installation create distinct files.
    pub seq_start: u64,
    /// A cold start: the app's process is stopped after the setup (its databases closed)
    /// and started again when the task begins, so the task opens them with SQLite's page
    /// cache empty (`task_start` drops the file system's caches in between).
    pub restart_app: bool,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            record: true,
            recorder: RecorderConfig::default(),
            sqlite_cpu_ns_per_call: 20_000,
            app_cpu_ns_per_call: 10_000,
            skip_setup: false,
            setup_only: false,
            seq_start: 0,
            restart_app: false,
        }
    }
}

/// Latency of one kind of user operation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OpReport {
    /// The operation ("launch app", "send 100 characters", ...).
    pub name: String,
    /// Percentiles over its occurrences (virtual ns).
    #[serde(flatten)]
    pub latency: LatencySummary,
}

/// What a run produced.
#[derive(Clone, Debug, Serialize)]
pub struct PersonaReport {
    /// Persona name.
    pub persona: String,
    /// The seed.
    pub seed: u64,
    /// User operations performed in the task phase.
    pub user_ops: u64,
    /// SQLite transactions committed (setup and task).
    pub commits: u64,
    /// Virtual time the setup phase took.
    pub setup_ns: Nanos,
    /// Virtual time the task phase took (think time included).
    pub task_ns: Nanos,
    /// Latency per user operation of the task phase, by name.
    pub ops: Vec<OpReport>,
    /// The recorded trace's MedFS columns and file-type breakdown (when recording).
    pub trace: Option<TraceSummary>,
    /// The published row the persona is calibrated to, if any.
    pub target: Option<MedfsRow>,
    /// The user's inputs around the task's operations (`crate::interaction`).
    pub interaction: InteractionCounts,
}

impl PersonaReport {
    /// Simulated app-hours of the task phase.
    pub fn task_hours(&self) -> f64 {
        self.task_ns as f64 / (3600.0 * NS_PER_SEC as f64)
    }
}

/// Everything a run leaves behind, also when it failed (e.g. at a power cut).
#[derive(Debug)]
pub struct RunOutput {
    /// The report (partial if `error` is set).
    pub report: PersonaReport,
    /// The recorded trace of the task phase (what was recorded before any failure), when
    /// kept ([`RecorderConfig::keep_ops`]).
    pub trace: Option<FileTrace>,
    /// Why the run stopped early.
    pub error: Option<AppError>,
    /// Per table written, the newest rowid a returned COMMIT made durable.
    pub witnesses: Vec<Witness>,
    /// Every database file the persona opened, with the configuration it was opened with
    /// (to reopen it after a power cut).
    pub databases: Vec<(String, SqliteConfig)>,
}

/// Runs `persona` on `api` with default options; errors if the run fails.
pub fn run(
    persona: &dyn Persona,
    api: Box<dyn FileApi>,
    seed: u64,
) -> Result<PersonaReport, AppError> {
    let out = run_with(persona, api, seed, &RunOptions::default());
    match out.error {
        Some(e) => Err(e),
        None => Ok(out.report),
    }
}

/// Runs `persona` on `api`: setup (unrecorded), then the task, recorded if asked.
pub fn run_with(
    persona: &dyn Persona,
    api: Box<dyn FileApi>,
    seed: u64,
    options: &RunOptions,
) -> RunOutput {
    run_with_hook(persona, api, seed, options, &mut Ok)
}

/// [`run_with`], calling `task_start` with the virtual time between the setup and the
/// task (a stack settles and starts its measurement there); the task starts at the time
/// it returns (never earlier). An error from it stops the run.
pub fn run_with_hook(
    persona: &dyn Persona,
    api: Box<dyn FileApi>,
    seed: u64,
    options: &RunOptions,
    task_start: &mut dyn FnMut(Nanos) -> Result<Nanos, AppError>,
) -> RunOutput {
    let fs = Shared::new(Recorder::new(BoxedApi(api), options.recorder));
    let mut report = PersonaReport {
        persona: persona.name(),
        seed,
        user_ops: 0,
        commits: 0,
        setup_ns: 0,
        task_ns: 0,
        ops: Vec::new(),
        trace: None,
        target: persona.target(),
        interaction: InteractionCounts::default(),
    };
    let vfs = match SimVfs::register(
        Box::new(fs.clone()),
        seed ^ 0x5eed_5117,
        options.sqlite_cpu_ns_per_call,
    ) {
        Ok(v) => v,
        Err(e) => return failed(report, e.into()),
    };
    let mut ctx = Ctx::new(vfs, fs.clone(), seed, options.app_cpu_ns_per_call);
    ctx.set_seq(options.seq_start);
    let (recording, error) = phases(persona, &mut ctx, options, &mut report, task_start);
    let (trace, summary) = match recording {
        Some(r) => (r.trace, Some(r.summary)),
        None => (None, None),
    };
    if let Some(summary) = summary {
        match summary {
            Ok(summary) => report.trace = Some(summary),
            Err(e) => {
                return finish(
                    report,
                    &ctx,
                    trace,
                    Some(error.unwrap_or(AppError::Analyze(format!("{}: {}", e.field, e.message)))),
                )
            }
        }
    }
    finish(report, &ctx, trace, error)
}

fn phases(
    persona: &dyn Persona,
    ctx: &mut Ctx,
    options: &RunOptions,
    report: &mut PersonaReport,
    task_start: &mut dyn FnMut(Nanos) -> Result<Nanos, AppError>,
) -> (Option<Recording>, Option<AppError>) {
    if !options.skip_setup {
        if let Err(e) = persona.setup(ctx) {
            return (None, Some(e));
        }
    }
    report.setup_ns = ctx.now();
    ctx.reset_ops();
    if options.setup_only {
        return (None, ctx.close_app().err());
    }
    let stopped = match options.restart_app {
        true => match ctx.stop_app() {
            Ok(app) => app,
            Err(e) => return (None, Some(e)),
        },
        false => None,
    };
    match task_start(ctx.now()) {
        Ok(t) => ctx.think(t.saturating_sub(ctx.now())),
        Err(e) => return (None, Some(e)),
    }
    let start = ctx.now();
    if options.record {
        if let Err(e) = ctx.fs().with(|r| r.start(start)) {
            return (None, Some(AppError::file("record", "-", e)));
        }
    }
    // The launched process opens its databases first, inside the measured task.
    let result = match stopped {
        Some(app) => ctx.reopen_app(app).and_then(|()| persona.run(ctx)),
        None => persona.run(ctx),
    };
    report.task_ns = ctx.now() - start;
    ctx.put_down();
    let recording = options.record.then(|| ctx.fs().with(|r| r.stop()));
    // The app closes its databases after the task, outside the recorded window: the
    // studies trace the task, not the app's shutdown (in WAL mode a close checkpoints
    // the whole log into the database).
    let result = result.and_then(|()| ctx.close_app());
    (recording, result.err())
}

fn finish(
    mut report: PersonaReport,
    ctx: &Ctx,
    trace: Option<FileTrace>,
    error: Option<AppError>,
) -> RunOutput {
    report.user_ops = ctx.user_ops();
    report.commits = ctx.commits();
    report.interaction = ctx.interaction_counts();
    let by_name: BTreeMap<_, _> = ctx.latencies().iter().collect();
    report.ops = by_name
        .into_iter()
        .map(|(name, h)| OpReport {
            name: name.clone(),
            latency: h.summary(),
        })
        .collect();
    RunOutput {
        report,
        trace,
        error,
        witnesses: ctx.witnesses(),
        databases: ctx.databases().to_vec(),
    }
}

fn failed(report: PersonaReport, error: AppError) -> RunOutput {
    RunOutput {
        report,
        trace: None,
        error: Some(error),
        witnesses: Vec::new(),
        databases: Vec::new(),
    }
}
