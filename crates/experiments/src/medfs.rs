//! `flashstack reproduce medfs`: the MedFS seed's evaluation (FAST '25, slides in
//! `shared/seeds/medfs-slides.md`, details in `shared/reference/seed-systems.md` §A) on
//! flashstack, the paper's figures beside ours.
//!
//! The seven apps of the MedFS workload table (each app's calibrated tasks in sequence,
//! `flashstack_apps::persona("gmail")`, ...) run under each scheme on one stack (default
//! `ufs31`, the paper's 128 GB UFS 3.1 phone), each from a factory-new phone with the same
//! seed. The schemes are options of the same F2FS (`fs.mount.delta.mode`, `docs/medfs.md`):
//! F2FS-NODC (stock), F2FS-DC (deltas in the data area), DCI, DCM, MedFS (DCI + DCM), and
//! FPC (F2FS compression under FPC's file policy, `fs.mount.fpc`; its foreground part).
//!
//! Every change is per app against F2FS-NODC, then averaged over the apps (the paper's
//! "average"). Gaps of more than 10 points are explained in `docs/medfs-reproduction.md`;
//! no model is tuned towards the paper.

use flashstack_apps::Persona;
use flashstack_f2fs::{DeltaConfig, DeltaMode};
use flashstack_stack::StackConfig;
use serde::Serialize;

use crate::fullstack::{self, FullStackError, FullStackOptions, StackRun, StackWorkload};
pub use crate::paper::Headline;
use crate::paper::PaperFigure;

/// The seven apps, in the table's order.
pub const APPS: [&str; 7] = [
    "gmail", "polish", "spotify", "telegram", "twitter", "wechat", "zoom",
];

/// The quick run's workloads: one short task per app, so that `--quick` finishes in about
/// a minute. Zoom is left out: its only task (a 5-minute meeting) writes 207 MB.
pub const QUICK_TASKS: [&str; 6] = [
    "gmail:send-text",
    "polish:launch",
    "spotify:launch",
    "telegram:receive-text",
    "twitter:post-text",
    "wechat:send-text",
];

/// The schemes, the baseline first.
pub const SCHEMES: [&str; 6] = ["f2fs-nodc", "f2fs-dc", "dci", "dcm", "medfs", "fpc"];

/// The paper's write reduction per scheme (ablation, vs F2FS-NODC).
const PAPER_REDUCTION: [(&str, f64); 5] = [
    ("f2fs-dc", 0.109),
    ("dci", 0.379),
    ("dcm", 0.474),
    ("medfs", 0.551),
    ("fpc", 0.376),
];

/// The paper's page-cache hit rate per scheme (ablation).
const PAPER_HIT_RATE: [(&str, f64); 3] = [("dci", 0.780), ("dcm", 0.599), ("medfs", 0.716)];

fn paper_value(table: &[(&str, f64)], scheme: &str) -> f64 {
    table
        .iter()
        .find(|(s, _)| *s == scheme)
        .map_or(f64::NAN, |(_, v)| *v)
}

/// The delta mode of a scheme (`None`: not a delta scheme).
fn delta_mode(scheme: &str) -> Option<DeltaMode> {
    match scheme {
        "f2fs-nodc" => Some(DeltaMode::Off),
        "f2fs-dc" => Some(DeltaMode::Dc),
        "dci" => Some(DeltaMode::Dci),
        "dcm" => Some(DeltaMode::Dcm),
        "medfs" => Some(DeltaMode::Medfs),
        _ => None,
    }
}

/// The stack of a scheme: the stack preset `stack` with the scheme's file-system option.
pub fn scheme_config(stack: &str, scheme: &str) -> Result<StackConfig, FullStackError> {
    let base = StackConfig::preset(stack).map_err(|e| FullStackError::Stack {
        stack: format!("{stack}+{scheme}"),
        message: e.to_string(),
    })?;
    scheme_config_on(base, stack, scheme)
}

/// The stack of a scheme on `config` (a stack built from a specification named `stack`),
/// with the scheme's file-system option.
pub fn scheme_config_on(
    mut config: StackConfig,
    stack: &str,
    scheme: &str,
) -> Result<StackConfig, FullStackError> {
    let err = |message: String| FullStackError::Stack {
        stack: format!("{stack}+{scheme}"),
        message,
    };
    config.name = format!("{stack}+{scheme}");
    match delta_mode(scheme) {
        Some(mode) => config.fs.mount.delta = DeltaConfig::with_mode(mode),
        None if scheme == "fpc" => config.fs.mount = config.fs.mount.clone().with_fpc(),
        None => return Err(err(format!("unknown scheme (known: {SCHEMES:?})"))),
    }
    Ok(config)
}

#[derive(Clone, Debug)]
pub struct MedfsOptions {
    /// One short task per app instead of each app's whole task sequence.
    pub quick: bool,
    pub seed: u64,
    /// The stack preset (`ufs31`: the paper's phone), or the name of `base`.
    pub stack: String,
    /// The stack every scheme runs on when given by a specification rather than a preset.
    pub base: Option<StackConfig>,
}

impl Default for MedfsOptions {
    fn default() -> Self {
        Self {
            quick: false,
            seed: 1,
            stack: "ufs31".into(),
            base: None,
        }
    }
}

/// One app under one scheme.
#[derive(Clone, Debug, Serialize)]
pub struct AppRun {
    pub app: String,
    pub scheme: String,
    /// Blocks F2FS wrote (data, node, checkpoint, NAT/SIT/SSA, cleaning).
    pub f2fs_blocks: u64,
    /// Bytes F2FS issued to the device.
    pub device_write_bytes: u64,
    pub nand_page_programs: u64,
    /// The report's LIFETIME formula (PEC × (1 + OP) ÷ (365 × DWPD × WA × R)).
    pub lifetime_years: f64,
    /// Mean device write and read request latency (submission to completion).
    pub write_latency_us_mean: f64,
    pub read_latency_us_mean: f64,
    pub device_reads: u64,
    /// Mean latency of the app's user operations, of its instant-messaging operations
    /// (send/receive, Telegram and WeChat), and of its launches.
    pub upl_ms_mean: f64,
    pub im_ms_mean: Option<f64>,
    pub launch_ms_mean: Option<f64>,
    /// Storage device + NAND, and the whole phone.
    pub device_energy_mj: f64,
    pub phone_energy_mj: f64,
    pub cache_read_hits: u64,
    pub cache_read_misses: u64,
    /// Deltas computed, stored inline, stored in DCM; their mean size.
    pub deltas_computed: u64,
    pub deltas_inline: u64,
    pub deltas_dcm: u64,
    pub delta_bytes_mean: f64,
    /// DCM pseudo-file pages written and pseudo files created.
    pub dcm_page_writes: u64,
    pub dcm_files: u64,
}

impl AppRun {
    fn of(app: &str, scheme: &str, run: &StackRun) -> Self {
        let fs = &run.fs;
        let d = &fs.delta;
        let lat = |k: &str| {
            run.device
                .latency
                .get(k)
                .map_or(0.0, |l| l.latency_ns_mean as f64 / 1e3)
        };
        let ops = |keep: &dyn Fn(&str) -> bool| mean_ms(run, keep);
        AppRun {
            app: app.into(),
            scheme: scheme.into(),
            f2fs_blocks: fs.total_blocks(),
            device_write_bytes: run.device.host.write_bytes,
            nand_page_programs: run.device.nand.page_programs,
            lifetime_years: run.device.lifetime.lifetime_years,
            write_latency_us_mean: lat("write"),
            read_latency_us_mean: lat("read"),
            device_reads: run.device.host.read_requests,
            upl_ms_mean: ops(&|_| true).unwrap_or(0.0),
            im_ms_mean: if is_im_app(app) { ops(&is_im_op) } else { None },
            launch_ms_mean: ops(&|n| n == "launch app"),
            device_energy_mj: run.energy.device_mj,
            phone_energy_mj: run.energy.total_mj,
            cache_read_hits: run.cache.read_hits,
            cache_read_misses: run.cache.read_misses,
            deltas_computed: d.computed,
            deltas_inline: d.inline_stores,
            deltas_dcm: d.dcm_stores,
            delta_bytes_mean: d.delta_bytes_total as f64 / d.computed.max(1) as f64,
            dcm_page_writes: d.dcm_page_writes,
            dcm_files: d.dcm_files_created,
        }
    }

    pub fn deltas_stored(&self) -> u64 {
        self.deltas_inline + self.deltas_dcm
    }
}

/// The instant-messaging apps of the paper's IM scenario.
fn is_im_app(app: &str) -> bool {
    app.starts_with("telegram") || app.starts_with("wechat")
}

fn is_im_op(op: &str) -> bool {
    op.starts_with("send") || op.starts_with("receive")
}

/// Mean latency (ms) over the user operations `keep` selects; `None` when there are none.
fn mean_ms(run: &StackRun, keep: &dyn Fn(&str) -> bool) -> Option<f64> {
    let chosen = run.user_ops.iter().filter(|o| keep(&o.name));
    let (mut n, mut total) = (0u64, 0f64);
    for o in chosen {
        n += o.latency.count;
        total += o.latency.latency_ns_mean as f64 * o.latency.count as f64;
    }
    (n > 0).then(|| total / n as f64 / 1e6)
}

/// One scheme's figures, each a mean over the apps of the per-app change against
/// F2FS-NODC (−0.55 = −55 %).
#[derive(Clone, Debug, Serialize)]
pub struct SchemeSummary {
    pub scheme: String,
    pub f2fs_blocks_change: f64,
    pub device_bytes_change: f64,
    /// 1 / (1 − reduction of device bytes) − 1, as the paper derives its lifespan.
    pub lifespan_change_inverse: f64,
    /// The LIFETIME formula's years against the baseline's, mean over the apps.
    pub lifespan_change_formula: f64,
    pub write_latency_change: f64,
    pub read_latency_change: f64,
    pub upl_change: f64,
    pub im_upl_change: f64,
    pub launch_change: f64,
    pub device_energy_change: f64,
    pub phone_energy_change: f64,
    /// Page-cache read hits ÷ reads, pooled over the apps.
    pub cache_hit_rate: f64,
    pub deltas_stored: u64,
    pub delta_bytes_mean: f64,
    /// DCM's space: pseudo-file pages written (4 KiB each) over the apps.
    pub dcm_bytes_written: u64,
    pub dcm_files: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct MedfsReproduction {
    pub seed: u64,
    pub quick: bool,
    pub stack: String,
    pub apps: Vec<String>,
    pub runs: Vec<AppRun>,
    pub schemes: Vec<SchemeSummary>,
    /// Computed delta sizes under MedFS over every app, 32-byte buckets (`≥ 256` last).
    pub delta_size_buckets: [u64; 9],
    pub headlines: Vec<Headline>,
}

fn named(name: &str) -> Result<Box<dyn Persona>, FullStackError> {
    flashstack_apps::persona(name).map_err(|e| FullStackError::Workload {
        stack: "-".into(),
        message: e.to_string(),
    })
}

/// Whether a workload starts with a cold app launch: the page cache is dropped before
/// its task (the seed measures launch time after dropping caches). Every full app
/// sequence runs cold; of the quick tasks, the launches.
fn cold_start(workload: &str) -> bool {
    !workload.contains(':') || workload.ends_with(":launch")
}

fn run_one(
    config: &StackConfig,
    p: &dyn Persona,
    seed: u64,
    cold_start: bool,
) -> Result<StackRun, FullStackError> {
    let options = FullStackOptions {
        seed,
        cold_start,
        record: false,
        ..FullStackOptions::default()
    };
    Ok(fullstack::run(config, &StackWorkload::Persona(p), &options)?.run)
}

/// Runs every app under every scheme; `progress` hears each (app, scheme) as it starts.
pub fn reproduce(
    options: &MedfsOptions,
    progress: &mut dyn FnMut(&str, &str),
) -> Result<MedfsReproduction, FullStackError> {
    let apps: Vec<&str> = if options.quick {
        QUICK_TASKS.to_vec()
    } else {
        APPS.to_vec()
    };
    let mut runs = Vec::new();
    let mut buckets = [0u64; 9];
    for app in &apps {
        let p = named(app)?;
        for scheme in SCHEMES {
            progress(app, scheme);
            let config = match &options.base {
                Some(base) => scheme_config_on(base.clone(), &options.stack, scheme)?,
                None => scheme_config(&options.stack, scheme)?,
            };
            let run = run_one(&config, p.as_ref(), options.seed, cold_start(app))?;
            if scheme == "medfs" {
                for (b, n) in buckets.iter_mut().zip(run.fs.delta.delta_size_buckets) {
                    *b += n;
                }
            }
            runs.push(AppRun::of(app, scheme, &run));
        }
    }
    let schemes: Vec<SchemeSummary> = SCHEMES.iter().map(|s| summarize(&runs, s)).collect();
    let headlines = headlines(&runs, &schemes);
    Ok(MedfsReproduction {
        seed: options.seed,
        quick: options.quick,
        stack: options.stack.clone(),
        apps: apps.iter().map(|a| a.to_string()).collect(),
        runs,
        schemes,
        delta_size_buckets: buckets,
        headlines,
    })
}

fn change(baseline: f64, ours: f64) -> f64 {
    if baseline > 0.0 {
        ours / baseline - 1.0
    } else {
        0.0
    }
}

/// Mean over the apps of the change `pick` measures against the baseline; apps where
/// `pick` gives nothing (no IM operations, no launch) are left out.
fn mean_change(runs: &[AppRun], scheme: &str, pick: &dyn Fn(&AppRun) -> Option<f64>) -> f64 {
    let changes: Vec<f64> = runs
        .iter()
        .filter(|r| r.scheme == scheme)
        .filter_map(|r| {
            let base = runs
                .iter()
                .find(|b| b.app == r.app && b.scheme == SCHEMES[0])?;
            Some(change(pick(base)?, pick(r)?))
        })
        .collect();
    if changes.is_empty() {
        return f64::NAN;
    }
    changes.iter().sum::<f64>() / changes.len() as f64
}

fn summarize(runs: &[AppRun], scheme: &str) -> SchemeSummary {
    let mine: Vec<&AppRun> = runs.iter().filter(|r| r.scheme == scheme).collect();
    let mc = |pick: &dyn Fn(&AppRun) -> Option<f64>| mean_change(runs, scheme, pick);
    let device_bytes_change = mc(&|r| Some(r.device_write_bytes as f64));
    let hits: u64 = mine.iter().map(|r| r.cache_read_hits).sum();
    let reads: u64 = mine
        .iter()
        .map(|r| r.cache_read_hits + r.cache_read_misses)
        .sum();
    let computed: u64 = mine.iter().map(|r| r.deltas_computed).sum();
    let delta_bytes: f64 = mine
        .iter()
        .map(|r| r.delta_bytes_mean * r.deltas_computed as f64)
        .sum();
    SchemeSummary {
        scheme: scheme.into(),
        f2fs_blocks_change: mc(&|r| Some(r.f2fs_blocks as f64)),
        device_bytes_change,
        lifespan_change_inverse: 1.0 / (1.0 + device_bytes_change) - 1.0,
        lifespan_change_formula: mc(&|r| Some(r.lifetime_years)),
        write_latency_change: mc(&|r| Some(r.write_latency_us_mean)),
        read_latency_change: mc(&|r| (r.device_reads > 0).then_some(r.read_latency_us_mean)),
        upl_change: mc(&|r| Some(r.upl_ms_mean)),
        im_upl_change: mc(&|r| r.im_ms_mean),
        launch_change: mc(&|r| r.launch_ms_mean),
        device_energy_change: mc(&|r| Some(r.device_energy_mj)),
        phone_energy_change: mc(&|r| Some(r.phone_energy_mj)),
        cache_hit_rate: hits as f64 / reads.max(1) as f64,
        deltas_stored: mine.iter().map(|r| r.deltas_stored()).sum(),
        delta_bytes_mean: delta_bytes / computed.max(1) as f64,
        dcm_bytes_written: mine.iter().map(|r| r.dcm_page_writes * 4096).sum(),
        dcm_files: mine.iter().map(|r| r.dcm_files).sum(),
    }
}

fn headlines(runs: &[AppRun], schemes: &[SchemeSummary]) -> Vec<Headline> {
    let s = |name: &str| {
        schemes
            .iter()
            .find(|s| s.scheme == name)
            .expect("every scheme is summarized")
    };
    let m = s("medfs");
    let telegram = runs
        .iter()
        .filter(|r| r.scheme == "medfs" && r.app.starts_with("telegram"))
        .map(|r| {
            let base = runs
                .iter()
                .find(|b| b.app == r.app && b.scheme == SCHEMES[0])
                .expect("the baseline ran every app");
            change(base.device_write_bytes as f64, r.device_write_bytes as f64)
        })
        .next()
        .unwrap_or(f64::NAN);
    let mut h = vec![
        Headline::new(
            "write traffic (device bytes)",
            -0.551,
            m.device_bytes_change,
            "change",
        ),
        Headline::new(
            "write traffic (F2FS blocks)",
            -0.551,
            m.f2fs_blocks_change,
            "change",
        ),
        Headline::new("write traffic, Telegram", -0.648, telegram, "change"),
        Headline::new(
            "lifespan, 1/(1 - reduction)",
            1.227,
            m.lifespan_change_inverse,
            "change",
        ),
        Headline::new(
            "lifespan, LIFETIME formula",
            1.227,
            m.lifespan_change_formula,
            "change",
        ),
        Headline::new(
            "write I/O latency",
            -0.288,
            m.write_latency_change,
            "change",
        ),
        Headline::new("read I/O latency", -0.253, m.read_latency_change, "change"),
        Headline::new("user-perceived latency", -0.079, m.upl_change, "change"),
        Headline::new(
            "user-perceived latency, IM",
            -0.190,
            m.im_upl_change,
            "change",
        ),
        Headline::new("app launch time", 0.030, m.launch_change, "change"),
        Headline::new(
            "energy (storage device + NAND)",
            -0.092,
            m.device_energy_change,
            "change",
        ),
    ];
    for (scheme, paper) in PAPER_REDUCTION {
        if let Some(sum) = schemes.iter().find(|x| x.scheme == scheme) {
            h.push(Headline::new(
                &format!("ablation: write traffic, {scheme}"),
                -paper,
                sum.device_bytes_change,
                "change",
            ));
        }
    }
    for (scheme, _) in PAPER_HIT_RATE {
        h.push(Headline::new(
            &format!("page-cache hit rate, {scheme}"),
            paper_value(&PAPER_HIT_RATE, scheme) * 100.0,
            s(scheme).cache_hit_rate * 100.0,
            "%",
        ));
    }
    h
}

const MEDFS_GAPS: &str = "docs/medfs-reproduction.md#why-ours-differ-every-gap-over-10-points";

impl MedfsReproduction {
    /// Per-app change of `pick` under `scheme` against F2FS-NODC, in percent (NaN where
    /// either run lacks it).
    fn per_app(&self, scheme: &str, pick: fn(&AppRun) -> Option<f64>) -> Vec<f64> {
        let run = |app: &str, s: &str| self.runs.iter().find(|r| r.app == app && r.scheme == s);
        self.apps
            .iter()
            .map(|app| match (run(app, SCHEMES[0]), run(app, scheme)) {
                (Some(b), Some(r)) => match (pick(b), pick(r)) {
                    (Some(b), Some(r)) if b > 0.0 => change(b, r) * 100.0,
                    _ => f64::NAN,
                },
                _ => f64::NAN,
            })
            .collect()
    }

    /// Telegram's value where the paper states one, NaN for every other app.
    fn telegram_only(&self, value: f64) -> Vec<f64> {
        self.apps
            .iter()
            .map(|a| {
                if a.starts_with("telegram") {
                    value
                } else {
                    f64::NAN
                }
            })
            .collect()
    }

    /// The paper's figures redrawn beside ours: per-app write reduction, the ablation's
    /// write reduction and hit rate per scheme, and per-app I/O latency. The paper's
    /// per-app bars are images; its text (via the reading note in
    /// `shared/reference/seed-systems.md` § MedFS "Headline results") gives averages and
    /// Telegram's values, and the ablation table gives a value per scheme.
    pub fn paper_figures(&self) -> Vec<PaperFigure> {
        let schemes = &SCHEMES[1..];
        let summary = |s: &str| self.schemes.iter().find(|x| x.scheme == s);
        let bytes = |r: &AppRun| Some(r.device_write_bytes as f64);
        let mut writes = PaperFigure::bars(
            "write stress (Fig. \"Results of Write Stress Release\")",
            "Write traffic to the device per app, change vs F2FS-NODC",
            "change (%)",
            self.apps.clone(),
        );
        for s in schemes {
            writes = writes.ours(s, self.per_app(s, bytes));
        }
        let medfs_mean = summary("medfs").map_or(f64::NAN, |m| m.device_bytes_change * 100.0);
        let writes = writes
            .paper("paper: medfs", self.telegram_only(-64.8))
            .reference("paper: MedFS mean −55.1%", -55.1, medfs_mean)
            .caption(
                "The paper's per-app bars are an image; it states MedFS's mean (−55.1%) and \
                 its best app, Telegram (−64.8%): a reference line and one paper bar.",
                MEDFS_GAPS,
            );
        let ablation_schemes: Vec<String> =
            PAPER_REDUCTION.iter().map(|(s, _)| s.to_string()).collect();
        let ours_change = |s: &str| summary(s).map_or(f64::NAN, |m| m.device_bytes_change * 100.0);
        let ablation = PaperFigure::bars(
            "ablation table (write reduction)",
            "Write reduction per scheme, mean over the apps, vs F2FS-NODC",
            "change (%)",
            ablation_schemes.clone(),
        )
        .ours(
            "ours",
            ablation_schemes.iter().map(|s| ours_change(s)).collect(),
        )
        .paper(
            "paper",
            PAPER_REDUCTION.iter().map(|(_, v)| -v * 100.0).collect(),
        )
        .caption(
            "The paper's ablation table, a value per scheme.",
            MEDFS_GAPS,
        );
        let hit_schemes: Vec<String> = PAPER_HIT_RATE.iter().map(|(s, _)| s.to_string()).collect();
        let hits = PaperFigure::bars(
            "ablation table (page-cache hit rate)",
            "Page-cache hit rate per scheme",
            "hit rate (%)",
            hit_schemes.clone(),
        )
        .ours(
            "ours",
            hit_schemes
                .iter()
                .map(|s| summary(s).map_or(f64::NAN, |m| m.cache_hit_rate * 100.0))
                .collect(),
        )
        .paper(
            "paper",
            PAPER_HIT_RATE.iter().map(|(_, v)| v * 100.0).collect(),
        )
        .caption(
            "The paper's ablation table, a value per scheme.",
            MEDFS_GAPS,
        );
        let m = summary("medfs");
        let latency = PaperFigure::bars(
            "I/O latencies (Fig. \"I/O latencies\")",
            "MedFS's mean I/O latency per app, change vs F2FS-NODC",
            "change (%)",
            self.apps.clone(),
        )
        .ours(
            "write",
            self.per_app("medfs", |r| Some(r.write_latency_us_mean)),
        )
        .ours(
            "read",
            self.per_app("medfs", |r| Some(r.read_latency_us_mean)),
        )
        .paper("paper: write", self.telegram_only(-37.3))
        .paper("paper: read", self.telegram_only(-35.6))
        .reference(
            "paper: write mean −28.8%",
            -28.8,
            m.map_or(f64::NAN, |m| m.write_latency_change * 100.0),
        )
        .reference(
            "paper: read mean −25.3%",
            -25.3,
            m.map_or(f64::NAN, |m| m.read_latency_change * 100.0),
        )
        .caption(
            "The paper's per-app bars are an image; it states the means (write −28.8%, \
             read −25.3%) and Telegram's values (−37.3%, −35.6%).",
            MEDFS_GAPS,
        );
        vec![writes, ablation, hits, latency]
    }
}

fn pct(x: f64) -> String {
    if x.is_finite() {
        format!("{:+.1}%", x * 100.0)
    } else {
        "n/a".into()
    }
}

/// The terminal report.
pub fn render(r: &MedfsReproduction) -> String {
    let mut out = format!(
        "MedFS (FAST '25) on flashstack: {} apps x {} schemes on '{}', factory-new phone, \
         seed {}{}\n\n",
        r.apps.len(),
        r.schemes.len(),
        r.stack,
        r.seed,
        if r.quick {
            " (quick: one task per app)"
        } else {
            ""
        }
    );
    out.push_str(&crate::paper::headline_table(&r.headlines, 40, "ours"));
    out.push_str(
        "\nper scheme, mean over the apps of the change vs f2fs-nodc:\n\
         scheme      F2FS blk  dev bytes  lifespan  LIFETIME  wr lat   rd lat   UPL      IM UPL   launch   energy   hit%   deltas  mean B  DCM written\n",
    );
    for s in &r.schemes {
        out.push_str(&format!(
            "{:<10} {:>9} {:>10} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>6.1} {:>7} {:>7.1} {:>11}\n",
            s.scheme,
            pct(s.f2fs_blocks_change),
            pct(s.device_bytes_change),
            pct(s.lifespan_change_inverse),
            pct(s.lifespan_change_formula),
            pct(s.write_latency_change),
            pct(s.read_latency_change),
            pct(s.upl_change),
            pct(s.im_upl_change),
            pct(s.launch_change),
            pct(s.device_energy_change),
            s.cache_hit_rate * 100.0,
            s.deltas_stored,
            s.delta_bytes_mean,
            flashstack_sim::units::format_bytes(s.dcm_bytes_written),
        ));
    }
    out.push_str("\ndevice bytes written per app and scheme (change vs f2fs-nodc):\n");
    for app in &r.apps {
        out.push_str(&format!("  {app:<24}"));
        let base = r
            .runs
            .iter()
            .find(|x| &x.app == app && x.scheme == SCHEMES[0]);
        for run in r.runs.iter().filter(|x| &x.app == app) {
            let c = base.map_or(f64::NAN, |b| {
                change(b.device_write_bytes as f64, run.device_write_bytes as f64)
            });
            out.push_str(&format!(
                " {}={:>10} ({})",
                run.scheme,
                flashstack_sim::units::format_bytes(run.device_write_bytes),
                pct(c)
            ));
        }
        out.push('\n');
    }
    out.push_str("\nMedFS delta sizes (bytes, 32-byte buckets; last >= 256):");
    for n in r.delta_size_buckets {
        out.push_str(&format!(" {n}"));
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scheme on a stack given by specification keeps the stack's device and takes the
    /// scheme's file-system option; an unknown scheme is refused naming both.
    #[test]
    fn a_scheme_on_a_specified_stack_keeps_its_device() {
        let mut base = StackConfig::preset("ufs31").unwrap();
        base.device.nand.die_rules = Default::default();
        let spec = "ufs31+nand.die_rules=independent-planes";
        let config = scheme_config_on(base.clone(), spec, "medfs").unwrap();
        assert_eq!(config.device.nand.die_rules.name(), "independent-planes");
        assert_eq!(config.fs.mount.delta.mode, DeltaMode::Medfs);
        assert_eq!(config.name, format!("{spec}+medfs"));
        let preset = scheme_config("ufs31", "medfs").unwrap();
        assert_eq!(preset.device.nand.die_rules.name(), "one-command-per-die");
        let e = scheme_config_on(base, spec, "lzma")
            .unwrap_err()
            .to_string();
        assert!(e.contains(spec) && e.contains("lzma"), "{e}");
    }
}
