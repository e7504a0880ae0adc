//! Janusd's evaluation (Hahn et al., ATC '17; `../shared/seeds/janusd-slides.md`): on an
//! aged phone, per app, app launch and the seed's interactive scenarios before and after
//! each defragmenter (copy — what e4defrag and F2FS's defragment ioctl do —, janusdP,
//! janusdL, janusd), what each pass cost (data copied, NAND programs and erases, the
//! share of the flash's rated life), and how fast fragmentation comes back with further
//! use under a periodic idle-time defragmentation ([`PeriodicDefrag`]).
//!
//! Every read goes through the whole stack (page cache → F2FS → block requests split at
//! extent boundaries, host time per request → the FTL → NAND planes), so launch times pay
//! for fragmentation for the reasons `docs/janusd.md` gives. `docs/janusd-reproduction.md`
//! lists every modelling choice and explains each gap to the paper.

use std::collections::BTreeMap;

use flashstack_cache::{MmapPolicy, ReadaheadConfig};
use flashstack_janusd::{
    defragment, measure, DefragMode, DefragOptions, DefragReport, FragReport, JanusdPolicy,
    Mechanisms, PeriodicDefrag, ReadModel, RemapDefrag,
};
use flashstack_phone::{Aging, AgingSpec, Fidelity, PhoneImage};
use flashstack_sim::Nanos;
use flashstack_sqlvfs::{FileApi, OpenFlags};
use flashstack_stack::{Stack, StackConfig};
use serde::Serialize;
use thiserror::Error;

use crate::paper::{Headline, PaperFigure};

/// Directories every defragmentation pass covers: the apps' packages (APK, odex,
/// libraries) and their data (databases, preferences, caches). User media are left out:
/// the seed's launch and scenarios read none of it, and a copying pass over gigabytes of
/// photos would only add to the baseline's cost.
pub const DEFRAG_PATHS: [&str; 2] = ["/data/app", "/data/data"];
/// Size of one read call of [`Reader::Windows`]: 128 KiB, Linux's default readahead
/// window (`read_ahead_kb`), what a sequential reader's page reads become below.
pub const READ_CALL_BYTES: usize = 128 * 1024;
/// Size of one read call of [`Reader::Pages`]: one 4 KiB page (a SQLite page read, a
/// fault on a page of mapped code).
pub const PAGE_CALL_BYTES: usize = 4096;

/// How launches and scenarios read their files (`--reader`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reader {
    /// Page by page (4 KiB calls) through the page cache's Linux readahead
    /// (`cache.readahead = linux`, 128 KiB windows): how a phone's SQLite and mapped code
    /// read. The default.
    #[default]
    Pages,
    /// Page by page with readahead off: every page a request the reader waits for (the
    /// worst case: `POSIX_FADV_RANDOM`, or a device with `read_ahead_kb = 0`).
    PagesNoReadahead,
    /// 128 KiB calls with readahead off: each call stands for one readahead window, read
    /// synchronously (the model before the page cache had readahead).
    Windows,
}

impl Reader {
    pub const NAMES: [&'static str; 3] = ["pages", "pages-no-readahead", "windows"];

    pub fn name(self) -> &'static str {
        match self {
            Reader::Pages => "pages",
            Reader::PagesNoReadahead => "pages-no-readahead",
            Reader::Windows => "windows",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        [Reader::Pages, Reader::PagesNoReadahead, Reader::Windows]
            .into_iter()
            .find(|r| r.name() == name)
    }

    /// One line for the report.
    pub fn describe(self) -> &'static str {
        match self {
            Reader::Pages => "pages (4 KiB calls, Linux readahead: 128 KiB windows)",
            Reader::PagesNoReadahead => "pages-no-readahead (4 KiB calls, each page waited for)",
            Reader::Windows => "windows (128 KiB calls, readahead off)",
        }
    }

    fn call_bytes(self) -> usize {
        match self {
            Reader::Windows => READ_CALL_BYTES,
            _ => PAGE_CALL_BYTES,
        }
    }

    fn readahead(self) -> ReadaheadConfig {
        match self {
            Reader::Pages => ReadaheadConfig::linux(),
            _ => ReadaheadConfig::default(),
        }
    }
}
/// Most of one file a launch or scenario reads [assumed: a launch maps code and opens
/// databases, it does not read a 100 MB odex whole].
pub const FILE_READ_MAX_BYTES: u64 = 8 << 20;
/// Bytes read from the end of an APK: its zip central directory [assumed: 64 KiB].
pub const APK_TAIL_BYTES: u64 = 64 * 1024;

/// What the run does.
#[derive(Clone, Debug)]
pub struct JanusdOptions {
    /// A small phone (3.4 GiB raw ufs31 array, 60 % full after 2 days) and a 6-day
    /// recurrence with a pass every 2 days: about 20 s.
    pub quick: bool,
    pub seed: u64,
    /// Days between periodic passes in the recurrence runs (default: the seed's 14; 2
    /// with `--quick`).
    pub period_days: Option<u32>,
    /// How launches and scenarios read (default: page by page with Linux's readahead).
    pub reader: Reader,
    /// How launches fault on mapped code (`cache.readahead.mmap`, `--mmap`): `off` (the
    /// default) reads it with `reader` like any file; `read-around` faults it page by
    /// page through the kernel's read-around.
    pub mmap: MmapPolicy,
    /// The order a launch touches mapped code in (`--code-order`).
    pub code_order: CodeOrder,
    /// The stack the phone is made on (default: the `ufs31` preset); its array is cut to
    /// the phone's size (blocks per plane), every other field is kept.
    pub stack: Option<StackConfig>,
}

/// The order a launch touches the pages of mapped code (`--code-order`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CodeOrder {
    /// From the start to the end of each span (the default, and the model before faults).
    #[default]
    Sequential,
    /// 64 KiB pieces (the kernel's `fault_around_bytes`: what one fault maps of cached
    /// code) in a fixed scattered order ([`scattered_pieces`]), pages within a piece in
    /// order [assumed: code runs in clusters, and a launch jumps between them].
    Scattered,
}

impl CodeOrder {
    pub const NAMES: [&'static str; 2] = ["sequential", "scattered"];

    pub fn name(self) -> &'static str {
        match self {
            CodeOrder::Sequential => "sequential",
            CodeOrder::Scattered => "scattered",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        [CodeOrder::Sequential, CodeOrder::Scattered]
            .into_iter()
            .find(|o| o.name() == name)
    }

    fn is_sequential(&self) -> bool {
        *self == CodeOrder::Sequential
    }
}

#[derive(Debug, Error)]
pub enum JanusdRunError {
    #[error("aging the phone: {0}")]
    Phone(#[from] flashstack_phone::PhoneError),
    #[error("{what}: {reason}")]
    Stack { what: String, reason: String },
    #[error("defragmenting ({mode}) {path}: {source}")]
    Defrag {
        mode: &'static str,
        path: String,
        #[source]
        source: Box<flashstack_janusd::JanusdError>,
    },
}

fn stack_err(
    what: impl Into<String>,
) -> impl FnOnce(flashstack_sqlvfs::FileError) -> JanusdRunError {
    let what = what.into();
    move |e| JanusdRunError::Stack {
        what,
        reason: e.to_string(),
    }
}

/// One of the seed's six scenarios, on the app of our phone that plays it.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Scenario {
    pub name: &'static str,
    /// What the user does after the launch (the seed's Table).
    pub action: &'static str,
    /// The package that plays it (`None`: chosen from the population, see [`stand_in`]).
    pub package: Option<&'static str>,
    /// Kinds of file (`flashstack_janusd::class_of`) the scenario reads.
    pub reads: &'static [&'static str],
}

/// The seed's scenarios. Gmail has no persona of its own: the population app with the
/// most database bytes stands in (an email client is a database); the game is Google
/// Earth (large assets and a tile cache), the heaviest persona.
pub const SCENARIOS: [Scenario; 6] = [
    Scenario {
        name: "Chrome",
        action: "view web pages",
        package: Some("com.android.chrome"),
        reads: &["cache", "database"],
    },
    Scenario {
        name: "Messenger",
        action: "view chat records",
        package: Some("com.facebook.orca"),
        reads: &["database", "messaging-media"],
    },
    Scenario {
        name: "Gmail",
        action: "view emails",
        package: None,
        reads: &["database", "db-journal"],
    },
    Scenario {
        name: "Facebook",
        action: "view news",
        package: Some("com.facebook.katana"),
        reads: &["database", "cache"],
    },
    Scenario {
        name: "Twitter",
        action: "view news",
        package: Some("com.twitter.android"),
        reads: &["database", "cache"],
    },
    Scenario {
        name: "Game",
        action: "play",
        package: Some("com.google.earth"),
        reads: &["app-file", "cache"],
    },
];

/// Kinds of file a launch reads, in the order an app reads them: the APK (central
/// directory, resources), the compiled code, native libraries, preferences
/// (`Application.onCreate`), then the databases the first activity opens.
pub const LAUNCH_ORDER: [&str; 5] = ["apk", "odex", "native-lib", "prefs", "database"];
/// Kinds of file a launch maps rather than reads: the APK (the zip's central directory,
/// `resources.arsc`, uncompressed dex are mapped), the compiled code (odex/vdex) and the
/// native libraries (mapped by the dynamic linker).
pub const MAPPED_CLASSES: [&str; 3] = ["apk", "odex", "native-lib"];

/// Reads done and what they took.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Io {
    pub files: u64,
    pub bytes: u64,
    pub elapsed_ns: Nanos,
    /// Block requests F2FS issued for them.
    pub requests: u64,
    /// Pages the page cache read ahead during them, and how many of those were read
    /// (the rest is readahead's waste; `Reader::Pages` only).
    pub readahead_pages: u64,
    pub readahead_hits: u64,
    /// Faults on mapped code (`--mmap read-around` only; not serialized when zero): all,
    /// major (page not cached), read-around windows and the pages they read beyond the
    /// faulting one, faults that found their page read ahead, and major faults backed off
    /// by the mapping's miss counter.
    #[serde(skip_serializing_if = "is_zero")]
    pub faults: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub major_faults: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub fault_windows: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub fault_window_pages: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub fault_readahead_hits: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub fault_backoffs: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl Io {
    pub fn mib_per_s(&self) -> f64 {
        if self.elapsed_ns == 0 {
            return 0.0;
        }
        self.bytes as f64 / (1 << 20) as f64 / (self.elapsed_ns as f64 / 1e9)
    }
}

/// One scenario on one phone state.
#[derive(Clone, Debug, Serialize)]
pub struct AppFigures {
    pub scenario: &'static str,
    pub package: String,
    /// Mean DoF of the files the launch and the scenario read.
    pub dof_mean: f64,
    /// Their blocks, and the distinct flash pages holding them.
    pub blocks: u64,
    pub flash_pages: u64,
    /// Flash senses reading them whole needs even as one extent each
    /// (`PhysicalFrag::flash_reads`).
    pub flash_reads: u64,
    /// Block-weighted mean window collision ratio of the files read.
    pub window_collision_ratio: f64,
    pub launch: Io,
    pub launch_ms: f64,
    pub scenario_io: Io,
    pub scenario_mib_per_s: f64,
}

/// What one defragmentation pass (over [`DEFRAG_PATHS`]) cost.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PassCost {
    pub files_copied: u64,
    pub files_remapped: u64,
    /// User data read and written again by copies.
    pub bytes_copied: u64,
    pub blocks_remapped: u64,
    pub fs_blocks_written: u64,
    pub nand_page_programs: u64,
    pub nand_erases: u64,
    /// NAND pages programmed ÷ (pages × rated P/E cycles): the share of the flash's rated
    /// life one pass uses.
    pub life_share_per_pass: f64,
    /// The same for a year of passes at the seed's period (every 14 days).
    pub life_share_per_year: f64,
}

impl PassCost {
    fn add(&mut self, r: &DefragReport) {
        self.files_copied += r.files_copied;
        self.files_remapped += r.files_remapped;
        self.bytes_copied += r.cost.bytes_written;
        self.blocks_remapped += r.cost.blocks_remapped;
        self.fs_blocks_written += r.cost.fs_blocks_written;
        self.nand_page_programs += r.cost.nand_page_programs.unwrap_or(0);
        self.nand_erases += r.cost.nand_erases.unwrap_or(0);
    }

    fn set_life(&mut self, device: &Device) {
        self.life_share_per_pass = self.nand_page_programs as f64 / device.rated_page_programs;
        self.life_share_per_year =
            self.life_share_per_pass * 365.0 / PeriodicDefrag::SEED_PERIOD_DAYS as f64;
    }
}

/// The phone after one defragmenter (or none).
#[derive(Clone, Debug, Serialize)]
pub struct ModeFigures {
    /// `none`, `copy`, `P`, `L`, `janusd`.
    pub mode: &'static str,
    pub cost: Option<PassCost>,
    /// Mean DoF of every file under [`DEFRAG_PATHS`].
    pub dof_mean: f64,
    pub block_ios: u64,
    pub block_ios_ideal: u64,
    pub apps: Vec<AppFigures>,
    pub launch_ms_mean: f64,
    pub scenario_mib_per_s_mean: f64,
    /// Flash pages holding the files the apps read ÷ the fewest that could hold them
    /// (1: dense; 4 on a 16 KiB page: every 4 KiB block in a page of its own).
    pub flash_page_spread: f64,
    /// Flash senses a read of those files needs ÷ the fewest (1: each page sensed once;
    /// janusdL leaves this as it was, a copy brings it to 1).
    pub flash_read_spread: f64,
    /// Mean over the files read (weighted by blocks) of their collision ratio within
    /// each 128 KiB window (`PhysicalFrag::window_collision_ratio`): what a reader that
    /// waits for each window loses in plane parallelism.
    pub window_collision_ratio: f64,
}

/// One measurement during the recurrence runs (at the end of a day, before that day's
/// pass if one is due).
#[derive(Clone, Debug, Serialize)]
pub struct RecurrencePoint {
    pub day: u32,
    pub dof_mean: f64,
    pub launch_ms_mean: f64,
    /// Launch time per MiB launched (the apps' databases grow with use, so launch time
    /// alone mixes growth with fragmentation).
    pub launch_ms_per_mib: f64,
}

/// Further use with a periodic defragmentation policy (or none).
#[derive(Clone, Debug, Serialize)]
pub struct Recurrence {
    pub policy: String,
    pub period_days: u32,
    pub passes: u32,
    pub points: Vec<RecurrencePoint>,
    /// Every pass's cost summed.
    pub cost: PassCost,
    /// Mean DoF right after the passes, and how much it grew per day of use until the
    /// next (`None` without passes).
    pub dof_after_pass_mean: Option<f64>,
    pub dof_regrowth_per_day: Option<f64>,
}

/// The device, for the lifetime figures.
#[derive(Clone, Debug, Serialize)]
pub struct Device {
    pub name: String,
    pub planes: u32,
    pub pages: u64,
    pub page_size_bytes: u32,
    pub pe_cycles_max: u32,
    /// pages × rated P/E cycles.
    pub rated_page_programs: f64,
}

/// A figure of the seed's beside ours.
#[derive(Clone, Debug, Serialize)]
pub struct PaperRow {
    pub figure: &'static str,
    pub paper: &'static str,
    pub ours: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct JanusdResults {
    pub quick: bool,
    pub seed: u64,
    /// How launches and scenarios read ([`Reader`]).
    pub reader: Reader,
    /// How launches fault on mapped code (not serialized when `off`).
    #[serde(skip_serializing_if = "MmapPolicy::is_off")]
    pub mmap: MmapPolicy,
    /// The order launches touch mapped code in (not serialized when sequential).
    #[serde(skip_serializing_if = "CodeOrder::is_sequential")]
    pub code_order: CodeOrder,
    /// The aged phone every mode starts from.
    pub phone: String,
    pub device: Device,
    pub modes: Vec<ModeFigures>,
    pub recurrence: Vec<Recurrence>,
    pub paper: Vec<PaperRow>,
    /// The figures with a number on both sides, for `reproduce all` and the HTML report.
    pub headlines: Vec<Headline>,
}

/// The phone: ufs31's array (2 dies × 4 planes, 16 KiB pages), or the stack given,
/// cut to size.
fn phone_setup(o: &JanusdOptions) -> (StackConfig, AgingSpec, u32) {
    let mut config = match &o.stack {
        Some(stack) => stack.clone(),
        None => StackConfig::preset("ufs31").expect("a built-in preset"),
    };
    let (blocks_per_plane, fill, days, recurrence_days) = match o.quick {
        true => (24, 0.6, 2, 6),
        false => (114, 0.8, 90, 56),
    };
    config.device.nand.geometry.blocks_per_plane = blocks_per_plane;
    config.seed = o.seed;
    let spec = AgingSpec::new(fill, days, o.seed, Fidelity::Fast);
    (config, spec, recurrence_days)
}

fn device_of(config: &StackConfig) -> Device {
    let nand = &config.device.nand;
    let pages = nand.geometry.pages();
    // A stack given by specification (`ufs31+nand...`, `medfs`) is named in full.
    let name = if config.name == config.device.name
        || config.name.starts_with(&format!("{}+", config.device.name))
    {
        config.name.clone()
    } else {
        format!("{} ({})", config.name, config.device.name)
    };
    Device {
        name,
        planes: nand.geometry.channels
            * nand.geometry.dies_per_channel
            * nand.geometry.planes_per_die,
        pages,
        page_size_bytes: nand.geometry.page_size_bytes,
        pe_cycles_max: nand.endurance.pe_cycles_max,
        rated_page_programs: pages as f64 * nand.endurance.pe_cycles_max as f64,
    }
}

/// Runs the whole evaluation.
pub fn reproduce(
    o: &JanusdOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<JanusdResults, JanusdRunError> {
    let (config, spec, recurrence_days) = phone_setup(o);
    let device = device_of(&config);
    progress("aging the phone");
    let image = flashstack_phone::build(&config, &spec, &mut |_, _| {})?;
    let phone = image.header.summary();
    let mut modes = Vec::new();
    for mode in [
        None,
        Some(DefragMode::Copy),
        Some(DefragMode::Physical),
        Some(DefragMode::Logical),
        Some(DefragMode::Janusd),
    ] {
        progress(&format!(
            "defragmenter {}",
            mode.map_or("none", |m| m.name())
        ));
        modes.push(run_mode(image.clone(), o.seed, mode, &device, o.how())?);
    }
    let period = o.period_days.unwrap_or(if o.quick {
        2
    } else {
        PeriodicDefrag::SEED_PERIOD_DAYS
    });
    let mut rec_spec = spec.clone();
    rec_spec.days = recurrence_days;
    let mut recurrence = Vec::new();
    for mode in [None, Some(DefragMode::Copy), Some(DefragMode::Janusd)] {
        let policy = mode.map(|m| PeriodicDefrag::new(m, period, &DEFRAG_PATHS));
        progress(&format!(
            "recurrence {}",
            policy.as_ref().map_or("none", |p| p.name.as_str())
        ));
        recurrence.push(run_recurrence(
            &config,
            &rec_spec,
            policy,
            period,
            &device,
            o.how(),
        )?);
    }
    let paper = paper_rows(&modes, &recurrence);
    let headlines = headlines(&modes);
    Ok(JanusdResults {
        quick: o.quick,
        seed: o.seed,
        reader: o.reader,
        mmap: o.mmap,
        code_order: o.code_order,
        phone,
        device,
        modes,
        recurrence,
        paper,
        headlines,
    })
}

/// One defragmenter on a copy of the aged phone: the pass, then every scenario.
fn run_mode(
    image: PhoneImage,
    seed: u64,
    mode: Option<DefragMode>,
    device: &Device,
    how: How,
) -> Result<ModeFigures, JanusdRunError> {
    let mut stack = image.into_stack(None, seed)?;
    let cost = match mode {
        Some(m) => Some(defrag_pass(&mut stack, m, &DEFRAG_PATHS, device)?),
        None => None,
    };
    let frag = frag_of(&mut stack)?;
    let apps = run_scenarios(&mut stack, &frag, how)?;
    let per_page = (device.page_size_bytes as u64 / 4096).max(1);
    let dense: u64 = apps.iter().map(|a| a.blocks.div_ceil(per_page)).sum();
    let flash_pages: u64 = apps.iter().map(|a| a.flash_pages).sum();
    let flash_reads: u64 = apps.iter().map(|a| a.flash_reads).sum();
    let all: Vec<&flashstack_janusd::FileFrag> = frag.iter().flat_map(|r| &r.files).collect();
    let n = all.len().max(1) as f64;
    Ok(ModeFigures {
        mode: mode.map_or("none", |m| m.name()),
        cost,
        dof_mean: all.iter().map(|f| f.dof).sum::<f64>() / n,
        block_ios: all.iter().map(|f| f.block_ios).sum(),
        block_ios_ideal: all.iter().map(|f| f.block_ios_ideal).sum(),
        launch_ms_mean: mean(apps.iter().map(|a| a.launch_ms)),
        scenario_mib_per_s_mean: mean(apps.iter().map(|a| a.scenario_mib_per_s)),
        flash_page_spread: flash_pages as f64 / dense.max(1) as f64,
        flash_read_spread: flash_reads as f64 / dense.max(1) as f64,
        window_collision_ratio: {
            let w: f64 = apps
                .iter()
                .map(|a| a.window_collision_ratio * a.blocks as f64)
                .sum();
            w / apps.iter().map(|a| a.blocks).sum::<u64>().max(1) as f64
        },
        apps,
    })
}

fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    if n == 0 {
        0.0
    } else {
        s / n as f64
    }
}

/// One pass of `mode` over `paths` in idle time (the cache synced first), with janusdL's
/// REMAP available; its cost summed over the paths.
fn defrag_pass(
    stack: &mut Stack,
    mode: DefragMode,
    paths: &[&str],
    device: &Device,
) -> Result<PassCost, JanusdRunError> {
    let now = stack.now_ns();
    stack
        .sync_all(now)
        .map_err(stack_err("sync before defragmenting"))?;
    let mut cost = PassCost::default();
    for path in paths {
        let opts = DefragOptions {
            mode,
            policy: JanusdPolicy::default(),
            model: ReadModel::default(),
            path: path.to_string(),
        };
        let mut remap = RemapDefrag;
        let report = stack
            .with_fs(|fs| {
                let mech = Mechanisms {
                    logical: Some(&mut remap),
                };
                defragment(fs, &opts, mech)
            })
            .map_err(stack_err("defragmenting"))?
            .map_err(|source| JanusdRunError::Defrag {
                mode: mode.name(),
                path: path.to_string(),
                source: Box::new(source),
            })?;
        cost.add(&report);
    }
    cost.set_life(device);
    Ok(cost)
}

/// The fragmentation of every file under [`DEFRAG_PATHS`].
fn frag_of(stack: &mut Stack) -> Result<Vec<FragReport>, JanusdRunError> {
    let model = ReadModel::default();
    DEFRAG_PATHS
        .iter()
        .map(|p| {
            stack
                .with_fs(|fs| measure(fs, p, &model))
                .map_err(stack_err("measuring"))?
                .map_err(|source| JanusdRunError::Defrag {
                    mode: "measure",
                    path: p.to_string(),
                    source: Box::new(source),
                })
        })
        .collect()
}

/// The package playing `s` on this phone.
pub fn stand_in(s: &Scenario, frag: &[FragReport]) -> Option<String> {
    if let Some(p) = s.package {
        return frag
            .iter()
            .any(|r| r.by_app.contains_key(p))
            .then(|| p.to_string());
    }
    // The population app (not a persona's) with the most database blocks.
    let mut db_blocks: BTreeMap<String, u64> = BTreeMap::new();
    for f in frag.iter().flat_map(|r| &r.files) {
        if f.class == "database" && f.app.starts_with("com.flashstack.") {
            *db_blocks.entry(f.app.clone()).or_default() += f.blocks;
        }
    }
    db_blocks
        .into_iter()
        .max_by_key(|(app, b)| (*b, std::cmp::Reverse(app.clone())))
        .map(|(app, _)| app)
}

/// A read of part of a file: (path, offset, length, whether the launch maps it).
type Span = (String, u64, u64, bool);

/// How launches and scenarios read: the reader, faults on mapped code, and their order.
#[derive(Clone, Copy, Debug)]
struct How {
    reader: Reader,
    mmap: MmapPolicy,
    code_order: CodeOrder,
}

impl JanusdOptions {
    fn how(&self) -> How {
        How {
            reader: self.reader,
            mmap: self.mmap,
            code_order: self.code_order,
        }
    }
}

/// Pieces of one touch of mapped code, in [`CODE_CHUNK_BYTES`] (the last may be short).
pub const CODE_CHUNK_BYTES: u64 = 64 * 1024;

/// The span `offset..offset + len` as [`CODE_CHUNK_BYTES`] pieces in a fixed scattered
/// order: the first piece first (a header: the ELF or zip header), then every piece once,
/// `stride` pieces apart modulo their number, with `stride` the first number from 3/8 of
/// it that shares no factor with it (a jump of about a third of the file each time).
pub fn scattered_pieces(offset: u64, len: u64) -> Vec<(u64, u64)> {
    let n = len.div_ceil(CODE_CHUNK_BYTES);
    let gcd = |mut a: u64, mut b: u64| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    let stride = (n * 3 / 8..)
        .find(|&s| s > 0 && gcd(s, n) == 1)
        .unwrap_or(1);
    (0..n)
        .map(|k| {
            let i = (k * stride) % n.max(1);
            let from = offset + i * CODE_CHUNK_BYTES;
            (from, (from + CODE_CHUNK_BYTES).min(offset + len))
        })
        .collect()
}

/// What a launch of `package` reads, in launch order.
pub fn launch_reads(package: &str, frag: &[FragReport]) -> Vec<Span> {
    let mut out = Vec::new();
    for class in LAUNCH_ORDER {
        for f in files_of(package, class, frag) {
            let size = f.blocks * 4096;
            let mapped = MAPPED_CLASSES.contains(&class);
            if class == "apk" {
                let tail = APK_TAIL_BYTES.min(size);
                out.push((f.path.clone(), size - tail, tail, mapped));
                out.push((
                    f.path.clone(),
                    0,
                    (size - tail).min(FILE_READ_MAX_BYTES),
                    mapped,
                ));
            } else {
                out.push((f.path.clone(), 0, size.min(FILE_READ_MAX_BYTES), mapped));
            }
        }
    }
    out.retain(|s| s.2 > 0);
    out
}

fn files_of<'a>(
    package: &'a str,
    class: &'a str,
    frag: &'a [FragReport],
) -> impl Iterator<Item = &'a flashstack_janusd::FileFrag> {
    frag.iter()
        .flat_map(|r| &r.files)
        .filter(move |f| f.app == package && f.class == class)
}

/// What the scenario after the launch reads.
pub fn scenario_reads(s: &Scenario, package: &str, frag: &[FragReport]) -> Vec<Span> {
    s.reads
        .iter()
        .flat_map(|class| files_of(package, class, frag))
        .map(|f| {
            (
                f.path.clone(),
                0,
                (f.blocks * 4096).min(FILE_READ_MAX_BYTES),
                false,
            )
        })
        .filter(|s| s.2 > 0)
        .collect()
}

fn run_scenarios(
    stack: &mut Stack,
    frag: &[FragReport],
    how: How,
) -> Result<Vec<AppFigures>, JanusdRunError> {
    let mut apps = Vec::new();
    for s in &SCENARIOS {
        let Some(package) = stand_in(s, frag) else {
            continue;
        };
        let launch_spans = launch_reads(&package, frag);
        let scenario_spans = scenario_reads(s, &package, frag);
        let read_paths: Vec<&String> = launch_spans
            .iter()
            .chain(&scenario_spans)
            .map(|s| &s.0)
            .collect();
        let read_files: Vec<&flashstack_janusd::FileFrag> = frag
            .iter()
            .flat_map(|r| &r.files)
            .filter(|f| read_paths.contains(&&f.path))
            .collect();
        let dofs = read_files.iter().map(|f| f.dof);
        let blocks: u64 = read_files.iter().map(|f| f.blocks).sum();
        let phys = || read_files.iter().filter_map(|f| f.physical.as_ref());
        let flash_pages = phys().map(|p| p.flash_pages).sum();
        let flash_reads = phys().map(|p| p.flash_reads).sum();
        let weighted: f64 = read_files
            .iter()
            .filter_map(|f| Some(f.physical.as_ref()?.window_collision_ratio * f.blocks as f64))
            .sum();
        let window_collision_ratio = weighted / blocks.max(1) as f64;
        let launch = cold_reads(stack, &launch_spans, how)?;
        let scenario_io = cold_reads(stack, &scenario_spans, how)?;
        apps.push(AppFigures {
            scenario: s.name,
            package,
            dof_mean: mean(dofs),
            blocks,
            flash_pages,
            flash_reads,
            window_collision_ratio,
            launch_ms: launch.elapsed_ns as f64 / 1e6,
            scenario_mib_per_s: scenario_io.mib_per_s(),
            launch,
            scenario_io,
        });
    }
    Ok(apps)
}

/// A cold start: the page cache dropped, the device idle, then `spans` read in order by
/// `how`'s reader (mapped spans faulted page by page under `read-around`). Readahead is
/// the reader's for these reads only (aging and defragmentation run with the stack's own
/// setting, off).
fn cold_reads(stack: &mut Stack, spans: &[Span], how: How) -> Result<Io, JanusdRunError> {
    stack.drop_caches().map_err(stack_err("dropping caches"))?;
    let before = stack.config().cache.readahead.clone();
    let readahead = ReadaheadConfig {
        mmap: how.mmap,
        ..how.reader.readahead()
    };
    stack
        .set_readahead(readahead)
        .map_err(stack_err("readahead"))?;
    let io = reads(stack, spans, how);
    stack
        .set_readahead(before)
        .map_err(stack_err("readahead"))?;
    io
}

fn reads(stack: &mut Stack, spans: &[Span], how: How) -> Result<Io, JanusdRunError> {
    let call_bytes = how.reader.call_bytes();
    let faults = !how.mmap.is_off();
    // From an idle device: after whatever F2FS did last (its clock may lead the stack's).
    let fs_now = stack
        .with_fs(|fs| fs.now_ns())
        .map_err(stack_err("clock"))?;
    let t0 = stack
        .idle_until(fs_now.max(stack.now_ns()) + 1_000_000)
        .map_err(stack_err("idle"))?;
    let requests_before = read_requests(stack)?;
    let ra_before = readahead_counts(stack);
    let mm_before = fault_counts(stack);
    let mut t = t0;
    let mut buf = vec![0u8; call_bytes.max(PAGE_CALL_BYTES)];
    let mut io = Io::default();
    for (path, offset, len, mapped) in spans {
        let (h, t1) = stack
            .open(t, path, OpenFlags::default())
            .map_err(stack_err(format!("opening {path}")))?;
        t = t1;
        let fault = faults && *mapped;
        let step = if fault { PAGE_CALL_BYTES } else { call_bytes };
        let pieces = match (*mapped, how.code_order) {
            (true, CodeOrder::Scattered) => scattered_pieces(*offset, *len),
            _ => vec![(*offset, offset + len)],
        };
        for (from, to) in pieces {
            let mut at = from;
            while at < to {
                let n = ((to - at) as usize).min(step);
                let (got, t1) = match fault {
                    // A fault maps one page; the launch touches every page of the span.
                    true => stack.fault_at(t, h, at, &mut buf[..n]),
                    false => stack.read_at(t, h, at, &mut buf[..n]),
                }
                .map_err(stack_err(format!("reading {path}")))?;
                t = t1;
                io.bytes += got as u64;
                if got < n {
                    break;
                }
                at += n as u64;
            }
        }
        t = stack
            .close(t, h)
            .map_err(stack_err(format!("closing {path}")))?;
        io.files += 1;
    }
    io.elapsed_ns = t - t0;
    io.requests = read_requests(stack)? - requests_before;
    let ra_after = readahead_counts(stack);
    io.readahead_pages = ra_after.0 - ra_before.0;
    io.readahead_hits = ra_after.1 - ra_before.1;
    let mm = fault_counts(stack);
    io.faults = mm[0] - mm_before[0];
    io.major_faults = mm[1] - mm_before[1];
    io.fault_windows = mm[2] - mm_before[2];
    io.fault_window_pages = mm[3] - mm_before[3];
    io.fault_readahead_hits = mm[4] - mm_before[4];
    io.fault_backoffs = mm[5] - mm_before[5];
    Ok(io)
}

/// The page cache's fault counters so far: faults, major faults, read-around windows and
/// pages, faults on read-ahead pages, back-offs.
fn fault_counts(stack: &Stack) -> [u64; 6] {
    stack.metrics().map_or([0; 6], |m| {
        let c = &m.cache;
        [
            c.mmap_faults,
            c.mmap_major_faults,
            c.mmap_windows,
            c.mmap_window_pages,
            c.mmap_readahead_hits,
            c.mmap_backoffs,
        ]
    })
}

/// The page cache's pages read ahead and readahead hits so far.
fn readahead_counts(stack: &Stack) -> (u64, u64) {
    stack.metrics().map_or((0, 0), |m| {
        (m.cache.readahead_pages, m.cache.readahead_hits)
    })
}

fn read_requests(stack: &mut Stack) -> Result<u64, JanusdRunError> {
    stack
        .with_fs(|fs| fs.metrics().read_requests)
        .map_err(stack_err("metrics"))
}

/// A phone aged from new for `spec.days` days with `policy` run in the idle time at the
/// end of each day it is due; measured at the end of every sampled day.
fn run_recurrence(
    config: &StackConfig,
    spec: &AgingSpec,
    policy: Option<PeriodicDefrag>,
    period: u32,
    device: &Device,
    how: How,
) -> Result<Recurrence, JanusdRunError> {
    let mut aging = Aging::new(config, spec)?;
    aging.set_up()?;
    let sample_every = (period / 2).max(1);
    let mut last_pass = None;
    let mut points = Vec::new();
    let mut cost = PassCost::default();
    let mut after_pass = Vec::new();
    let mut regrowth = Vec::new();
    for day in 0..spec.days {
        aging.day(day)?;
        let due = policy.as_ref().is_some_and(|p| p.due(day, last_pass));
        if (day + 1) % sample_every == 0 || due {
            let shared = aging.stack();
            let mut stack = shared.lock();
            let (dof, launch_ms, ms_per_mib) = sample(&mut stack, how)?;
            points.push(RecurrencePoint {
                day: day + 1,
                dof_mean: dof,
                launch_ms_mean: launch_ms,
                launch_ms_per_mib: ms_per_mib,
            });
            if let (Some(p), true) = (&policy, due) {
                if let (Some(last), Some(&after)) = (last_pass, after_pass.last()) {
                    regrowth.push((dof - after) / (day - last) as f64);
                }
                let paths: Vec<&str> = p.paths.iter().map(String::as_str).collect();
                let c = defrag_pass(&mut stack, p.mode, &paths, device)?;
                add_cost(&mut cost, &c);
                after_pass.push(sample(&mut stack, how)?.0);
                last_pass = Some(day);
            }
        }
    }
    cost.set_life(device);
    Ok(Recurrence {
        policy: policy
            .as_ref()
            .map_or("none".to_string(), |p| p.name.clone()),
        period_days: period,
        passes: after_pass.len() as u32,
        points,
        cost,
        dof_after_pass_mean: (!after_pass.is_empty()).then(|| mean(after_pass.iter().copied())),
        dof_regrowth_per_day: (!regrowth.is_empty()).then(|| mean(regrowth.iter().copied())),
    })
}

fn add_cost(sum: &mut PassCost, c: &PassCost) {
    sum.files_copied += c.files_copied;
    sum.files_remapped += c.files_remapped;
    sum.bytes_copied += c.bytes_copied;
    sum.blocks_remapped += c.blocks_remapped;
    sum.fs_blocks_written += c.fs_blocks_written;
    sum.nand_page_programs += c.nand_page_programs;
    sum.nand_erases += c.nand_erases;
}

/// Mean DoF of the apps' files, the mean cold launch time of the scenarios' apps and
/// their launch time per MiB read.
fn sample(stack: &mut Stack, how: How) -> Result<(f64, f64, f64), JanusdRunError> {
    let frag = frag_of(stack)?;
    let dof = mean(frag.iter().flat_map(|r| &r.files).map(|f| f.dof));
    let mut launches = Vec::new();
    let (mut ns, mut bytes) = (0u64, 0u64);
    for s in &SCENARIOS {
        if let Some(package) = stand_in(s, &frag) {
            let io = cold_reads(stack, &launch_reads(&package, &frag), how)?;
            launches.push(io.elapsed_ns as f64 / 1e6);
            ns += io.elapsed_ns;
            bytes += io.bytes;
        }
    }
    let ms_per_mib = ns as f64 / 1e6 / (bytes.max(1) as f64 / (1 << 20) as f64);
    Ok((dof, mean(launches.into_iter()), ms_per_mib))
}

fn find<'a>(modes: &'a [ModeFigures], name: &str) -> Option<&'a ModeFigures> {
    modes.iter().find(|m| m.mode == name)
}

const JANUSD_GAPS: &str = "docs/janusd-reproduction.md#why-the-figures-differ";

impl JanusdResults {
    /// The seed's figures redrawn beside ours: launch time per scenario and mode, the data
    /// each defragmenter copied, and each scenario's DoF. The seed
    /// (`shared/seeds/janusd-slides.md`, conclusion) states two averages and no per-app
    /// value: reference lines; it gives no DoF number at all.
    pub fn paper_figures(&self) -> Vec<PaperFigure> {
        let Some(none) = find(&self.modes, "none") else {
            return Vec::new();
        };
        let scenarios: Vec<String> = none.apps.iter().map(|a| a.scenario.to_string()).collect();
        let defrag: Vec<&ModeFigures> = self.modes.iter().filter(|m| m.mode != "none").collect();
        let per_scenario = |m: &ModeFigures, f: fn(&AppFigures) -> f64, relative: bool| {
            none.apps
                .iter()
                .map(|b| match m.apps.iter().find(|a| a.scenario == b.scenario) {
                    Some(a) if !relative => f(a),
                    Some(a) if f(b) > 0.0 => (f(a) / f(b) - 1.0) * 100.0,
                    _ => f64::NAN,
                })
                .collect::<Vec<f64>>()
        };
        let mut launch = PaperFigure::bars(
            "app launch (slides' conclusion)",
            "App launch time per scenario, change vs no defragmentation",
            "change (%)",
            scenarios.clone(),
        );
        let mut dof = PaperFigure::bars(
            "DoF (degree of fragmentation)",
            "Mean DoF of each scenario's files after each defragmenter",
            "DoF (1 = contiguous)",
            scenarios,
        )
        .ours("none", per_scenario(none, |a| a.dof_mean, false));
        for m in &defrag {
            launch = launch.ours(m.mode, per_scenario(m, |a| a.launch_ms, true));
            dof = dof.ours(m.mode, per_scenario(m, |a| a.dof_mean, false));
        }
        let ours_launch =
            find(&self.modes, "janusd").map_or(f64::NAN, |j| mean_change(none, j, |a| a.launch_ms));
        let launch = launch
            .reference("paper: janusd −32% (mean)", -32.0, ours_launch)
            .caption(
                "The seed states only the mean (\"improved application launching times by 32% \
                 on average\"): a reference line beside our janusd mean over the scenarios.",
                JANUSD_GAPS,
            );
        let dof = dof.caption(
            "The paper states no DoF number (the seed gives none): our side only; DoF 1 is \
             a contiguous file.",
            JANUSD_GAPS,
        );
        let copied = |m: &ModeFigures| m.cost.as_ref().map_or(0, |c| c.bytes_copied) as f64;
        let copy = find(&self.modes, "copy").map_or(0.0, copied);
        let change = |m: &ModeFigures| match copy {
            0.0 => f64::NAN,
            c => (copied(m) / c - 1.0) * 100.0,
        };
        let ours_copied = find(&self.modes, "janusd").map_or(f64::NAN, change);
        let copies = PaperFigure::bars(
            "data copies (slides' conclusion)",
            "Data copied by each defragmenter, change vs the copying defragmenter",
            "change (%)",
            defrag.iter().map(|m| m.mode.to_string()).collect(),
        )
        .ours("ours", defrag.iter().map(|m| change(m)).collect())
        .reference("paper: janusd −99.99% (mean)", -99.99, ours_copied)
        .caption(
            "The seed states only the mean (\"reduced the amount of data copies by 99.99% \
             on average\"): a reference line.",
            JANUSD_GAPS,
        );
        vec![launch, copies, dof]
    }
}

/// Per app, `f(after) / f(before) - 1`, averaged, in percent.
fn mean_change(before: &ModeFigures, after: &ModeFigures, f: impl Fn(&AppFigures) -> f64) -> f64 {
    let changes = before.apps.iter().filter_map(|b| {
        let a = after.apps.iter().find(|a| a.scenario == b.scenario)?;
        (f(b) > 0.0).then(|| (f(a) / f(b) - 1.0) * 100.0)
    });
    mean(changes)
}

/// The seed's numbers against ours, as signed changes; NaN where ours cannot be computed
/// (the copying defragmenter copied nothing) or the seed gives no number.
fn headlines(modes: &[ModeFigures]) -> Vec<Headline> {
    let (Some(none), Some(copy), Some(l), Some(j)) = (
        find(modes, "none"),
        find(modes, "copy"),
        find(modes, "L"),
        find(modes, "janusd"),
    ) else {
        return Vec::new();
    };
    let launch = |m: &ModeFigures| mean_change(none, m, |a| a.launch_ms) / 100.0;
    let tput = |m: &ModeFigures| mean_change(none, m, |a| a.scenario_mib_per_s) / 100.0;
    let copied = |m: &ModeFigures| m.cost.as_ref().map_or(0, |c| c.bytes_copied) as f64;
    let copied_change = match copied(copy) {
        0.0 => f64::NAN,
        c => copied(j) / c - 1.0,
    };
    vec![
        Headline::new("launch time, janusd vs. none", -0.32, launch(j), "change"),
        Headline::new(
            "launch time, janusdL vs. none",
            f64::NAN,
            launch(l),
            "change",
        ),
        Headline::new(
            "launch time, copy vs. none",
            f64::NAN,
            launch(copy),
            "change",
        ),
        Headline::new(
            "data copied, janusd vs. copy",
            -0.9999,
            copied_change,
            "change",
        ),
        Headline::new(
            "scenario throughput, janusd vs. none",
            f64::NAN,
            tput(j),
            "change",
        ),
        Headline::new(
            "scenario throughput, copy vs. none",
            f64::NAN,
            tput(copy),
            "change",
        ),
    ]
}

fn paper_rows(modes: &[ModeFigures], recurrence: &[Recurrence]) -> Vec<PaperRow> {
    let mut rows = Vec::new();
    let (Some(none), Some(copy), Some(l), Some(j)) = (
        find(modes, "none"),
        find(modes, "copy"),
        find(modes, "L"),
        find(modes, "janusd"),
    ) else {
        return rows;
    };
    let launch = |m: &ModeFigures| mean_change(none, m, |a| a.launch_ms);
    rows.push(PaperRow {
        figure: "launch time, janusd vs. no defragmentation (mean over apps)",
        paper: "-32 %",
        ours: format!(
            "{:+.1} % (janusdL {:+.1} %, copy {:+.1} %)",
            launch(j),
            launch(l),
            launch(copy)
        ),
    });
    let copied = |m: &ModeFigures| m.cost.as_ref().map_or(0, |c| c.bytes_copied) as f64;
    let less = |m: &ModeFigures| {
        if copied(copy) == 0.0 {
            "n/a (copy copied nothing)".to_string()
        } else {
            format!("{:+.2} %", (copied(m) / copied(copy) - 1.0) * 100.0)
        }
    };
    rows.push(PaperRow {
        figure: "data copied, janusd vs. the copying defragmenter",
        paper: "-99.99 %",
        ours: format!("{} (janusdL {})", less(j), less(l)),
    });
    let tput = |m: &ModeFigures| mean_change(none, m, |a| a.scenario_mib_per_s);
    rows.push(PaperRow {
        figure: "I/O throughput gain of the scenarios, janusd vs. copy (e4defrag)",
        paper: "at least e4defrag's",
        ours: format!(
            "janusd {:+.1} %, copy {:+.1} %, janusdL {:+.1} %",
            tput(j),
            tput(copy),
            tput(l)
        ),
    });
    let programs = |m: &ModeFigures| m.cost.as_ref().map_or(0, |c| c.nand_page_programs);
    let life = |m: &ModeFigures| {
        m.cost
            .as_ref()
            .map_or(0.0, |c| c.life_share_per_year * 100.0)
    };
    rows.push(PaperRow {
        figure:
            "lifetime: NAND pages programmed by one pass (share of rated life per year at 14 days)",
        paper: "janusd: no lifetime cost",
        ours: format!(
            "janusd {} ({:.4} %), janusdL {} ({:.4} %), copy {} ({:.4} %)",
            programs(j),
            life(j),
            programs(l),
            life(l),
            programs(copy),
            life(copy)
        ),
    });
    let regrow: Vec<String> = recurrence
        .iter()
        .filter_map(|r| {
            r.dof_regrowth_per_day
                .map(|g| format!("{} {g:+.3}/day", r.policy))
        })
        .collect();
    rows.push(PaperRow {
        figure: "fragmentation recurs after a pass (mean DoF regrowth per day of use)",
        paper: "degrades again even with a pass every 2 weeks",
        ours: if regrow.is_empty() {
            "no second pass".into()
        } else {
            regrow.join(", ")
        },
    });
    rows
}

impl JanusdResults {
    /// The terminal report.
    pub fn render(&self) -> String {
        let mut s = format!(
            "Janusd (ATC '17) on {}{}\ndevice {}: {} planes, rated {} P/E cycles\nreads: {}\n\n",
            self.phone,
            if self.quick { " [--quick]" } else { "" },
            self.device.name,
            self.device.planes,
            self.device.pe_cycles_max,
            {
                let mut how = self.reader.describe().to_string();
                if !self.mmap.is_off() {
                    how += "; mapped code (APK, odex, libraries) faulted page by page, mmap read-around (128 KiB centred on each major fault)";
                }
                if !self.code_order.is_sequential() {
                    how += "; mapped code touched in 64 KiB pieces in a scattered order";
                }
                how
            }
        );
        s += &format!(
            "{:<8} {:>7} {:>8} {:>8} {:>7} {:>7} {:>7} {:>10} {:>10} {:>9} {:>8} {:>10} {:>10}\n",
            "mode",
            "DoF",
            "I/Os",
            "ideal",
            "pages",
            "senses",
            "window",
            "launch ms",
            "scen MiB/s",
            "copied",
            "remapped",
            "NAND pgms",
            "erases"
        );
        for m in &self.modes {
            let c = m.cost.clone().unwrap_or_default();
            s += &format!(
                "{:<8} {:>7.2} {:>8} {:>8} {:>7.2} {:>7.2} {:>7.2} {:>10.2} {:>10.1} {:>8.1}M {:>8} {:>10} {:>10}\n",
                m.mode,
                m.dof_mean,
                m.block_ios,
                m.block_ios_ideal,
                m.flash_page_spread,
                m.flash_read_spread,
                m.window_collision_ratio,
                m.launch_ms_mean,
                m.scenario_mib_per_s_mean,
                c.bytes_copied as f64 / (1 << 20) as f64,
                c.blocks_remapped,
                c.nand_page_programs,
                c.nand_erases
            );
        }
        s += "\nlaunches, all apps: block requests, pages read ahead (of which read)\n";
        for m in &self.modes {
            let sum = |f: fn(&Io) -> u64| m.apps.iter().map(|a| f(&a.launch)).sum::<u64>();
            s += &format!(
                "{:<8} {:>8} {:>9} ({})\n",
                m.mode,
                sum(|io| io.requests),
                sum(|io| io.readahead_pages),
                sum(|io| io.readahead_hits)
            );
        }
        if !self.mmap.is_off() {
            s += "\nlaunches, all apps: faults (major), read-around windows, their pages, faults on pages read ahead, back-offs\n";
            for m in &self.modes {
                let sum = |f: fn(&Io) -> u64| m.apps.iter().map(|a| f(&a.launch)).sum::<u64>();
                s += &format!(
                    "{:<8} {:>8} ({}) {:>7} {:>9} {:>9} {:>5}\n",
                    m.mode,
                    sum(|io| io.faults),
                    sum(|io| io.major_faults),
                    sum(|io| io.fault_windows),
                    sum(|io| io.fault_window_pages),
                    sum(|io| io.fault_readahead_hits),
                    sum(|io| io.fault_backoffs)
                );
            }
        }
        s += "\nper app: launch ms (DoF of the files read) / scenario MiB/s (cold)\n";
        s += &format!("{:<10} {:<28}", "scenario", "package");
        for m in &self.modes {
            s += &format!(" {:>22}", m.mode);
        }
        s += "\n";
        if let Some(first) = self.modes.first() {
            for (i, a) in first.apps.iter().enumerate() {
                s += &format!("{:<10} {:<28}", a.scenario, a.package);
                for m in &self.modes {
                    if let Some(x) = m.apps.get(i) {
                        s += &format!(
                            " {:>8.2} ({:>5.1}) {:>6.1}",
                            x.launch_ms, x.dof_mean, x.scenario_mib_per_s
                        );
                    }
                }
                s += "\n";
            }
        }
        s += "\nrecurrence (day: mean DoF / launch ms per MiB read)\n";
        for r in &self.recurrence {
            s += &format!("{:<20}", r.policy);
            for p in &r.points {
                s += &format!(" d{}: {:.2}/{:.2}", p.day, p.dof_mean, p.launch_ms_per_mib);
            }
            s += &format!(
                "  [{} passes, {:.1} MiB copied, {} NAND pages]\n",
                r.passes,
                r.cost.bytes_copied as f64 / (1 << 20) as f64,
                r.cost.nand_page_programs
            );
        }
        s += "\nthe seed's figures beside ours\n";
        for row in &self.paper {
            s += &format!(
                "  {}\n    paper: {}\n    ours:  {}\n",
                row.figure, row.paper, row.ours
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(stack: Option<StackConfig>) -> JanusdOptions {
        JanusdOptions {
            quick: true,
            seed: 1,
            period_days: None,
            reader: Reader::default(),
            mmap: MmapPolicy::default(),
            code_order: CodeOrder::default(),
            stack,
        }
    }

    /// `--stack` reaches the phone: its device, cut to the phone's size, and its name.
    #[test]
    fn the_phone_is_made_on_the_stack_given() {
        let rule = |c: &StackConfig| c.device.nand.die_rules.name();
        let (config, _, _) = phone_setup(&options(None));
        assert_eq!(rule(&config), "one-command-per-die");
        assert_eq!(device_of(&config).name, "ufs31");
        let mut stack = StackConfig::preset("ufs31").unwrap();
        stack.name = "ufs31+nand.die_rules=independent-planes".into();
        stack.device.nand.die_rules = Default::default();
        stack.device.nand.geometry.blocks_per_plane = 7;
        let (config, _, _) = phone_setup(&options(Some(stack)));
        assert_eq!(rule(&config), "independent-planes");
        assert_eq!(config.device.nand.geometry.blocks_per_plane, 24);
        assert_eq!(
            device_of(&config).name,
            "ufs31+nand.die_rules=independent-planes"
        );
        let (config, _, _) = phone_setup(&options(Some(StackConfig::preset("medfs").unwrap())));
        assert_eq!(device_of(&config).name, "medfs (ldc-emmc)");
    }
}
