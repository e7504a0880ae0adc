//! One point: a persona or file-level trace on one whole stack from one starting phone,
//! with one seed; or a block-level workload (a built-in `ldc:*` or a synthetic spec) on
//! one device. `flashstack run --workload W --stack S --seed N [--fresh]` (or `--device D
//! --workload ldc:APP | --synthetic SPEC`) and a sweep's point go through the same calls
//! (workload loading, stack or device resolution, start, run), so a point's report is
//! byte-identical to the CLI's JSON for the same arguments.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use flashstack_experiments::fullstack::{
    self, FullStackError, FullStackOptions, StackRun, StackWorkload, Start,
};
use flashstack_ftl::DeviceConfig;
use flashstack_phone::{
    builtin_spec, cached_aged, AgingSpec, PhoneCache, PhoneError, PhoneImage, Provenance,
};
use flashstack_replay::{run_block, BlockInput, NoProgress, ReplayError};
use flashstack_report::RunReport;
use flashstack_stack::StackConfig;
use flashstack_workload::{text, FileTrace};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::spec::{error_chain, resolve, resolve_stack, SpecError};

#[derive(Debug, Error)]
pub enum PointError {
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// The workload names no persona and no readable file-level trace.
    #[error("{0}")]
    Workload(String),
    #[error("--phone and --fresh: choose one starting state")]
    TwoStarts,
    /// The `--phone` file (or a sweep's `start = "FILE.phone"`) could not be used.
    #[error("--phone")]
    PhoneFile(#[source] PhoneError),
    #[error(transparent)]
    Phone(#[from] PhoneError),
    #[error("the built-in aged phone of stack '{stack}'")]
    BuiltIn {
        stack: String,
        #[source]
        source: PhoneError,
    },
    /// The start of stack `stack` failed.
    #[error("stack '{stack}'")]
    Start {
        stack: String,
        #[source]
        source: Box<PointError>,
    },
    #[error(transparent)]
    Run(#[from] FullStackError),
    /// A block-level point's run failed.
    #[error("device '{device}'")]
    Block {
        device: String,
        #[source]
        source: ReplayError,
    },
}

/// A persona or a file-level trace, loaded.
pub enum Loaded {
    Persona(Box<dyn flashstack_apps::Persona>),
    Trace(String, FileTrace),
}

impl Loaded {
    /// A file-level trace if `name` is a file, a filebench personality
    /// (`filebench:NAME`, generated from `seed`), else a persona of that name.
    pub fn load(name: &str, seed: u64) -> Result<Loaded, PointError> {
        if let Some(personality) = name.strip_prefix("filebench:") {
            use flashstack_workload::filebench::{generate, FilebenchConfig, Personality};
            let p = Personality::from_name(personality).ok_or_else(|| {
                PointError::Workload(format!(
                    "--workload {name}: no such filebench personality (known: {})",
                    Personality::ALL.map(|p| p.name()).join(", ")
                ))
            })?;
            let trace = generate(p, &FilebenchConfig::default(), seed);
            return Ok(Loaded::Trace(name.to_string(), trace));
        }
        let path = Path::new(name);
        if path.is_file() {
            let trace = text::read_file(path).map_err(|e| PointError::Workload(error_chain(&e)))?;
            return Ok(Loaded::Trace(name.to_string(), trace));
        }
        let refusal = match flashstack_apps::persona(name) {
            Ok(persona) => return Ok(Loaded::Persona(persona)),
            // Persona names have no '/' or '.': this one names a file.
            Err(_) if path.exists() => {
                format!("--workload {name}: not a file-level trace (a directory or special file)")
            }
            Err(_) if name.contains(['/', '.']) => format!(
                "--workload {name}: no such file, and not a persona (`flashstack workload \
                 list`); `flashstack run --workload PERSONA --record {name}` writes a \
                 file-level trace"
            ),
            Err(e) => format!("--workload: {e} (or a block workload ldc:*, or a .fst file)"),
        };
        Err(PointError::Workload(refusal))
    }

    pub fn workload(&self) -> StackWorkload<'_> {
        match self {
            Loaded::Persona(p) => StackWorkload::Persona(p.as_ref()),
            Loaded::Trace(name, trace) => StackWorkload::Trace {
                name: name.clone(),
                trace,
            },
        }
    }
}

/// Where a whole-stack run starts: a phone file, a factory-new phone, or the built-in
/// aged phone of each stack.
pub enum StartChoice {
    Fresh,
    File(Arc<PhoneImage>),
    BuiltIn,
}

impl StartChoice {
    pub fn from_args(phone: Option<&Path>, fresh: bool) -> Result<StartChoice, PointError> {
        match (phone, fresh) {
            (Some(_), true) => Err(PointError::TwoStarts),
            (Some(path), false) => Ok(StartChoice::File(Arc::new(
                PhoneImage::load(path).map_err(PointError::PhoneFile)?,
            ))),
            (None, true) => Ok(StartChoice::Fresh),
            (None, false) => Ok(StartChoice::BuiltIn),
        }
    }

    /// The stack a phone file was made on (a run without a stack uses it).
    pub fn phone_stack(&self) -> Option<&StackConfig> {
        match self {
            StartChoice::File(image) => Some(&image.header.stack),
            StartChoice::Fresh | StartChoice::BuiltIn => None,
        }
    }

    /// The start for one stack; `builtin` makes (or finds) the stack's built-in phone.
    pub fn start_for<E: From<PhoneError>>(
        &self,
        config: &StackConfig,
        builtin: impl FnOnce(&StackConfig) -> Result<PhoneImage, E>,
    ) -> Result<Start, E> {
        match self {
            StartChoice::Fresh => Ok(Start::Fresh),
            StartChoice::File(image) => {
                image.check_compatible(config)?;
                Ok(Start::Phone(Arc::clone(image)))
            }
            StartChoice::BuiltIn => builtin(config).map(|i| Start::Phone(Arc::new(i))),
        }
    }
}

/// The built-in aged phone of `config` from `cache`, or built now; `building` is told
/// where it will be kept before a build, `progress` the day of aging.
pub fn builtin_phone(
    config: &StackConfig,
    cache: &PhoneCache,
    building: &mut dyn FnMut(&Path),
    progress: &mut dyn FnMut(u32, u32),
) -> Result<(PhoneImage, Provenance), PointError> {
    aged_phone(config, &builtin_spec(), cache, building, progress)
}

/// The phone `spec` ages on `config`, from `cache` or built now, as [`builtin_phone`].
pub fn aged_phone(
    config: &StackConfig,
    spec: &AgingSpec,
    cache: &PhoneCache,
    building: &mut dyn FnMut(&Path),
    progress: &mut dyn FnMut(u32, u32),
) -> Result<(PhoneImage, Provenance), PointError> {
    cached_aged(config, spec, cache, building, progress).map_err(|source| PointError::BuiltIn {
        stack: config.name.clone(),
        source,
    })
}

/// A hash of the file at `path` (a program's executable, the Python extension): phones
/// a changed program builds never mix with those of an older one in the cache.
pub fn build_id_of(path: &Path) -> String {
    use std::io::Read;
    let Ok(mut file) = std::fs::File::open(path) else {
        return String::new();
    };
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    let mut buf = vec![0u8; 1 << 20];
    while let Ok(n) = file.read(&mut buf) {
        if n == 0 {
            break;
        }
        for chunk in buf[..n].chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            h = (h ^ u64::from_le_bytes(w))
                .wrapping_mul(0x0100_0000_01B3)
                .rotate_left(17);
        }
    }
    format!("{h:016x}")
}

/// What a point starts from, as a sweep names it.
pub const START_FRESH: &str = "fresh";
pub const START_BUILTIN: &str = "builtin";

/// One run of a sweep: `flashstack run --workload {workload} --stack
/// {stack}+{overrides...} --seed {seed}` with `--fresh` (start "fresh"), `--phone FILE`
/// (start a file) or neither (start "builtin"); or, when `device` is set, the block-level
/// `flashstack run --device {device}+{overrides...} --workload ldc:APP | --synthetic SPEC
/// --seed {seed}`, with `--contents` if `contents` (`stack` and `start` unused).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub workload: String,
    #[serde(default)]
    pub stack: String,
    pub seed: u64,
    /// `key=value` overrides of the stack's (or the device's) fields, in order.
    #[serde(default)]
    pub overrides: Vec<String>,
    #[serde(default = "default_start")]
    pub start: String,
    /// A device specification: the point is a block-level run on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// A block-level point's device stores page contents (`run --contents`; compressing
    /// devices need them).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub contents: bool,
}

fn default_start() -> String {
    START_BUILTIN.to_string()
}

impl Point {
    /// The stack specification with the overrides, as `run --stack` takes it.
    pub fn stack_spec(&self) -> String {
        with_overrides(&self.stack, &self.overrides)
    }

    /// The device specification with the overrides, as `run --device` takes it (a
    /// block-level point).
    pub fn device_spec(&self) -> Option<String> {
        self.device
            .as_deref()
            .map(|d| with_overrides(d, &self.overrides))
    }

    /// What the point runs on, as its progress line names it.
    pub fn target(&self) -> String {
        self.device_spec().unwrap_or_else(|| self.stack_spec())
    }

    /// A block-level point's device configuration (no run).
    pub fn device_config(&self) -> Option<Result<DeviceConfig, SpecError>> {
        self.device_spec().map(|spec| resolve(&spec))
    }

    /// The stack's configuration (no run).
    pub fn config(&self) -> Result<StackConfig, SpecError> {
        resolve_stack(
            &self.stack_spec(),
            &StackConfig::preset("default").expect("preset"),
        )
    }

    fn start_choice(&self) -> Result<StartChoice, PointError> {
        match self.start.as_str() {
            START_FRESH => Ok(StartChoice::Fresh),
            START_BUILTIN => Ok(StartChoice::BuiltIn),
            path => StartChoice::from_args(Some(Path::new(path)), false),
        }
    }
}

fn with_overrides(base: &str, overrides: &[String]) -> String {
    std::iter::once(base)
        .chain(overrides.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join("+")
}

/// Where points keep the built-in phones they start from. The build id (a hash of the
/// program's file, tens of MB) is computed on the first built-in start only: a fresh
/// start costs nothing.
#[derive(Debug, Default)]
pub struct RunEnv {
    dir: Option<PathBuf>,
    max_bytes: Option<u64>,
    program: Option<PathBuf>,
    build_id: std::sync::OnceLock<String>,
}

impl RunEnv {
    /// The cache the CLI uses (`FLASHSTACK_CACHE_DIR`, else the user's cache directory),
    /// phones identified by the file at `program` (the executable or the extension).
    pub fn with_default_cache(program: Option<&PathBuf>) -> RunEnv {
        RunEnv {
            dir: flashstack_phone::default_cache_dir(),
            max_bytes: flashstack_phone::default_cache_max_bytes(),
            program: program.cloned(),
            build_id: std::sync::OnceLock::new(),
        }
    }

    /// The phone cache, its build id computed on first use.
    pub fn phones(&self) -> PhoneCache {
        let build_id = self
            .build_id
            .get_or_init(|| self.program.as_deref().map(build_id_of).unwrap_or_default());
        PhoneCache {
            dir: self.dir.clone(),
            build_id: build_id.clone(),
            max_bytes: self.max_bytes,
        }
    }
}

/// A point's report: a whole-stack run or a block-level one, serialised as the CLI's
/// `run --json` writes each.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum PointRun {
    Stack(Box<StackRun>),
    Block(Box<RunReport>),
}

/// Runs one point: the same calls, in the same order, as `flashstack run` for one stack
/// (or one device).
pub fn run_point(point: &Point, env: &RunEnv) -> Result<PointRun, PointError> {
    // A sweep or a Python session runs many points in one process: each point keeps its
    // phones from pruning only while it runs.
    let _pins = flashstack_phone::builtin::PinScope::begin();
    if let Some(config) = point.device_config() {
        let (input, name) = BlockInput::from_name(&point.workload).map_err(PointError::Workload)?;
        let config = config?;
        let device = point.device_spec().unwrap_or_default();
        let report = run_block(
            config,
            &input,
            &name,
            point.seed,
            point.contents,
            &mut NoProgress,
        )
        .map_err(|source| PointError::Block { device, source })?;
        return Ok(PointRun::Block(Box::new(report)));
    }
    run_stack_point(point, env).map(|run| PointRun::Stack(Box::new(run)))
}

fn run_stack_point(point: &Point, env: &RunEnv) -> Result<StackRun, PointError> {
    let loaded = Loaded::load(&point.workload, point.seed)?;
    let starts = point.start_choice()?;
    let config = point.config()?;
    let start = starts
        .start_for(&config, |c| {
            builtin_phone(c, &env.phones(), &mut |_| {}, &mut |_, _| {}).map(|(image, _)| image)
        })
        .map_err(|source| PointError::Start {
            stack: config.name.clone(),
            source: Box::new(source),
        })?;
    let options = FullStackOptions {
        seed: point.seed,
        dwpd: None,
        record: true,
        keep_trace: false,
        strict: false,
        start,
        image_out: None,
        phone: None,
        check_reads: false,
        cold_start: false,
        record_block: None,
    };
    Ok(fullstack::run(&config, &loaded.workload(), &options)?.run)
}
