//! LDC under the whole stack (`reproduce ldc --stack`): the paper's five FTL compression
//! policies (PM, zFTL, SC, LDC, OPT; devices `ldc-emmc-{pm,zftl,sc,ldc,opt}`) each under
//! the page cache, F2FS and the personas' real SQLite traffic (the LDC paper's six-app
//! mix, `flashstack run`'s default workload), all starting from one aged phone.
//!
//! The starting state is policy-neutral: the phone is aged once on the default stack with
//! the `ldc-emmc-pm` device (PM compresses nothing, so every page the phone holds is
//! stored raw) and that same phone is loaded into each policy's device. Existing data thus
//! starts byte-for-byte identical, uncompressed, in every column, as the LDC paper
//! initialises its devices (§6.1: existing data has a compressibility, not a compressed
//! form); only what the mix writes and what GC migrates shows each policy's choices. On
//! load the device rebuilds Cr(B) from the pages it holds (`Ftl::from_parts`), so caGC's
//! Eq. 4 sees the phone's raw data as compressible as it is. Aging once per policy was not
//! chosen: five phones would differ in their files (F2FS's cleaning and the FTL's GC take
//! other turns under each policy), and each compressing policy would start with months of
//! its own compressed writes, the block-level `--lay-down through-policy` regime that issue
//! 18 moved away from. `docs/ldc-reproduction.md`, "Under the whole stack".

use std::sync::Arc;

use flashstack_apps::ldc::MixPersona;
use flashstack_apps::UserOp;
use flashstack_ftl::compression::CompressionPolicyKind;
use flashstack_ftl::{presets, DeviceConfig};
use flashstack_phone::{AgingSpec, Fidelity, PhoneImage};
use flashstack_report::RunReport;
use flashstack_stack::StackConfig;
use serde::Serialize;
use thiserror::Error;

use crate::fullstack::{self, FullStackOptions, StackWorkload, Start};
use crate::paper::Headline;

/// The five policies, in the paper's order.
pub const POLICIES: [CompressionPolicyKind; 5] = [
    CompressionPolicyKind::Pm,
    CompressionPolicyKind::Zftl,
    CompressionPolicyKind::Sc,
    CompressionPolicyKind::Ldc,
    CompressionPolicyKind::Opt,
];

/// Blocks per plane of the quick device: 1 GiB of user capacity (the full run keeps the
/// preset's 16 GiB). At this size every policy exports the same capacity (the 1%
/// over-provisioning, not the compressing policies' eleven open frontiers, bounds it).
pub const QUICK_BLOCKS_PER_PLANE: u32 = 4_138;
/// Days the quick phone is aged (the full run: the built-in phone's 90).
pub const QUICK_DAYS: u32 = 10;
/// The quick run's share of the mix: each app's operations run an eighth as often.
pub const QUICK_SHARE: u32 = 8;

#[derive(Clone, Debug)]
pub struct LdcStackOptions {
    /// A 1 GiB phone aged 10 days, and an eighth of the mix.
    pub quick: bool,
    pub seed: u64,
}

#[derive(Debug, Error)]
pub enum LdcStackError {
    #[error("{policy}: {message}")]
    Run {
        policy: &'static str,
        message: String,
    },
    #[error("the aged phone: {0}")]
    Phone(String),
}

/// The stack a policy runs on: the default stack (page cache, F2FS) over the policy's
/// LDC device, resized for `quick`.
pub fn stack_config(policy: CompressionPolicyKind, quick: bool) -> StackConfig {
    let mut config = StackConfig::preset("default").expect("the default stack preset exists");
    config.device = device(policy, quick);
    config.name = format!("default+{}", config.device.name);
    config
}

fn device(policy: CompressionPolicyKind, quick: bool) -> DeviceConfig {
    let mut device = presets::ldc_emmc_with(policy);
    if quick {
        device.nand.geometry.blocks_per_plane = QUICK_BLOCKS_PER_PLANE;
    }
    device
}

/// The stack the shared phone is aged on: PM's (every page it writes stays raw). With
/// `discard` off F2FS is mounted `nodiscard` (for the aging and so for every run from the
/// phone): segments it frees are not trimmed, so the device's blocks keep stale pages its
/// GC must move, the state in which caGC's compression during GC has work.
pub fn phone_stack(quick: bool, discard: bool) -> StackConfig {
    let mut config = stack_config(CompressionPolicyKind::Pm, quick);
    config.fs.mount.discard = discard;
    if !discard {
        config.name.push_str("+fs.mount.discard=false");
    }
    config
}

/// How the shared phone is aged: the built-in phone's specification (80% full after 90
/// days), or 10 days for `quick`; the run's seed either way.
pub fn aging_spec(quick: bool, seed: u64) -> AgingSpec {
    let days = if quick { QUICK_DAYS } else { 90 };
    AgingSpec::new(0.8, days, seed, Fidelity::Fast)
}

/// The six-app mix (`flashstack run`'s default persona), or every operation's repetitions
/// divided by `share` (rounded up).
pub fn mix(share: u32) -> MixPersona {
    let mut mix = flashstack_apps::ldc::mix();
    if share > 1 {
        for app in &mut mix.apps {
            app.ops = app
                .ops
                .iter()
                .map(|o| UserOp {
                    repeat: o.repeat.div_ceil(share),
                    ..o.clone()
                })
                .collect();
        }
    }
    mix
}

/// One policy's figures over the mix.
#[derive(Clone, Debug, Serialize)]
pub struct StackFigures {
    pub policy: &'static str,
    pub device: String,
    /// Bytes F2FS wrote to the device (the same for every policy up to F2FS's cleaning and
    /// timing: the FTL's choices do not reach the file system).
    pub host_write_bytes: u64,
    pub page_programs: u64,
    pub block_erases: u64,
    /// NAND program bytes ÷ host write bytes.
    pub write_amplification: f64,
    pub gc_migrated_bytes: u64,
    pub gc_cycles_foreground: u64,
    pub gc_cycles_background: u64,
    pub pages_compressed_host: u64,
    /// Pages caGC compressed while migrating them (any GC cycle).
    pub pages_compressed_gc: u64,
    pub pages_compressed_gc_background: u64,
    /// The device's write requests (as F2FS issued them).
    pub write_latency_ns_mean: u64,
    pub write_latency_ns_p99: u64,
    pub write_latency_ns_max: u64,
    pub read_latency_ns_mean: u64,
    /// The worst request, read or write.
    pub latency_ns_max: u64,
}

impl StackFigures {
    fn of(policy: CompressionPolicyKind, r: &RunReport) -> StackFigures {
        let write = &r.latency["write"];
        let read = &r.latency["read"];
        let c = &r.compression;
        StackFigures {
            policy: policy.name(),
            device: r.run.device.clone(),
            host_write_bytes: r.host.write_bytes,
            page_programs: r.nand.page_programs,
            block_erases: r.nand.block_erases,
            write_amplification: r.write_amplification.total,
            gc_migrated_bytes: r.gc.migrated_bytes,
            gc_cycles_foreground: r.gc.foreground_cycles,
            gc_cycles_background: r.gc.background_cycles,
            pages_compressed_host: c.pages_compressed_host,
            pages_compressed_gc: c.pages_compressed_gc,
            pages_compressed_gc_background: c.pages_compressed_gc_background,
            write_latency_ns_mean: write.latency_ns_mean,
            write_latency_ns_p99: write.latency_ns_p99,
            write_latency_ns_max: write.latency_ns_max,
            read_latency_ns_mean: read.latency_ns_mean,
            latency_ns_max: write.latency_ns_max.max(read.latency_ns_max),
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct LdcStackResults {
    pub quick: bool,
    pub seed: u64,
    /// The persona run (`mix`, or `mix/8` quick).
    pub workload: String,
    /// The shared phone: what it holds and how it was made.
    pub start: String,
    pub device_user_bytes: u64,
    /// F2FS's `discard` mount option (the phone's, which every run keeps).
    #[serde(skip_serializing_if = "is_true")]
    pub fs_discard: bool,
    pub runs: Vec<StackFigures>,
    /// The block-level table's comparisons on this run, the paper's figure beside each.
    pub headlines: Vec<Headline>,
}

/// The comparisons drawn, as the block-level table draws them: (figure, policy, base,
/// the paper's change, metric). The paper's figures are means over its seven workloads;
/// ours here is one run of the mix.
type Comparison = (
    &'static str,
    &'static str,
    &'static str,
    f64,
    fn(&StackFigures) -> u64,
);
const COMPARISONS: [Comparison; 8] = [
    ("LDC erases vs PM", "LDC", "PM", -0.505, |f| f.block_erases),
    ("LDC write latency vs zFTL", "LDC", "zFTL", -0.104, |f| {
        f.write_latency_ns_mean
    }),
    ("LDC erases vs zFTL", "LDC", "zFTL", 0.04, |f| {
        f.block_erases
    }),
    ("SC write latency vs PM", "SC", "PM", -0.172, |f| {
        f.write_latency_ns_mean
    }),
    ("LDC write latency vs PM", "LDC", "PM", -0.18, |f| {
        f.write_latency_ns_mean
    }),
    ("SC erases vs PM", "SC", "PM", f64::NAN, |f| f.block_erases),
    ("LDC programs vs PM", "LDC", "PM", f64::NAN, |f| {
        f.page_programs
    }),
    ("OPT programs vs PM", "OPT", "PM", f64::NAN, |f| {
        f.page_programs
    }),
];

/// Runs the mix (`mix/QUICK_SHARE` quick) under every policy, each from `phone` (aged on
/// [`phone_stack`]). `progress(policy)` before each run.
pub fn run(
    phone: Arc<PhoneImage>,
    options: &LdcStackOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<LdcStackResults, LdcStackError> {
    let share = if options.quick { QUICK_SHARE } else { 1 };
    run_with(phone, options, &mix(share), progress)
}

/// [`run`] with another slice of the mix (the tests' smaller one).
pub fn run_with(
    phone: Arc<PhoneImage>,
    options: &LdcStackOptions,
    persona: &MixPersona,
    progress: &mut dyn FnMut(&str),
) -> Result<LdcStackResults, LdcStackError> {
    let phone_device = &phone.header.stack.device;
    if phone_device.ftl.compression.as_ref().map(|c| c.policy) != Some(CompressionPolicyKind::Pm) {
        return Err(LdcStackError::Phone(format!(
            "made on device '{}': the shared phone must be aged under PM (ldc-emmc-pm), so \
             that its existing data is stored raw for every policy",
            phone_device.name
        )));
    }
    let start = format!(
        "{}; aged on {} (seed {}), loaded into each policy's device",
        phone.header.summary(),
        phone_device.name,
        phone.header.spec.seed
    );
    let mut runs = Vec::new();
    let mut device_user_bytes = 0;
    for policy in POLICIES {
        progress(policy.name());
        let mut config = phone.header.stack.clone();
        config.device = device_like(policy, phone_device);
        config.name = format!("default+{}", config.device.name);
        let run_options = FullStackOptions {
            seed: options.seed,
            record: false,
            start: Start::Phone(Arc::clone(&phone)),
            ..FullStackOptions::default()
        };
        let out = fullstack::run(&config, &StackWorkload::Persona(persona), &run_options).map_err(
            |e| LdcStackError::Run {
                policy: policy.name(),
                message: e.to_string(),
            },
        )?;
        device_user_bytes = out.run.device.run.user_capacity_bytes;
        runs.push(StackFigures::of(policy, &out.run.device));
    }
    let mut results = LdcStackResults {
        quick: options.quick,
        seed: options.seed,
        workload: persona_name(persona),
        start,
        device_user_bytes,
        fs_discard: phone.header.stack.fs.mount.discard,
        runs,
        headlines: Vec::new(),
    };
    results.headlines = COMPARISONS
        .iter()
        .map(|&(figure, policy, base, paper, metric)| {
            Headline::new(
                figure,
                paper,
                results.change(policy, base, metric),
                "change",
            )
        })
        .collect();
    Ok(results)
}

fn is_true(b: &bool) -> bool {
    *b
}

/// `policy`'s device on the phone's geometry (the phone may be resized, e.g. quick).
fn device_like(policy: CompressionPolicyKind, phone: &DeviceConfig) -> DeviceConfig {
    let mut device = presets::ldc_emmc_with(policy);
    device.nand.geometry = phone.nand.geometry.clone();
    device
}

fn persona_name(mix: &MixPersona) -> String {
    let full = flashstack_apps::ldc::mix();
    let ops = |m: &MixPersona| -> u64 {
        m.apps
            .iter()
            .flat_map(|a| a.ops.iter())
            .map(|o| o.repeat as u64)
            .sum()
    };
    match ops(mix) == ops(&full) {
        true => "mix".into(),
        false => format!("mix ({} of {} operations)", ops(mix), ops(&full)),
    }
}

impl LdcStackResults {
    pub fn get(&self, policy: &str) -> &StackFigures {
        self.runs
            .iter()
            .find(|f| f.policy == policy)
            .expect("every policy was run")
    }

    /// `metric(policy) / metric(base) − 1`; NaN when the base is zero.
    fn change(&self, policy: &str, base: &str, metric: fn(&StackFigures) -> u64) -> f64 {
        let b = metric(self.get(base)) as f64;
        match b == 0.0 {
            true => f64::NAN,
            false => metric(self.get(policy)) as f64 / b - 1.0,
        }
    }

    /// The table: one row per policy, then the comparisons.
    pub fn render(&self) -> String {
        let ms = |ns: u64| ns as f64 / 1e6;
        let mut out = format!(
            "LDC under the whole stack ({}; page cache + F2FS over ldc-emmc-{{pm,zftl,sc,ldc,opt}}, \
             {} MiB user capacity, seed {})\n\
             workload: the personas' {} (real SQLite through the page cache and F2FS)\n\
             start: {}\n\
             existing data: laid down policy-neutral: the same phone, aged under PM, so every \
             page it holds starts uncompressed under every policy; Cr(B) rebuilt from it on load\n\
             F2FS: {}\n\
             GC: on demand at {} free blocks, in idle time (after {} ms) up to {}\n\n",
            if self.quick { "quick" } else { "full" },
            self.device_user_bytes >> 20,
            self.seed,
            self.workload,
            self.start,
            if self.fs_discard {
                "discard (segments a checkpoint frees are trimmed)"
            } else {
                "nodiscard (freed segments stay valid on the device until rewritten)"
            },
            presets::LDC_FOREGROUND_FREE_BLOCKS,
            presets::LDC_IDLE_THRESHOLD_NS / 1_000_000,
            presets::LDC_BACKGROUND_FREE_BLOCKS,
        );
        out.push_str(&format!(
            "{:<6}{:>10}{:>10}{:>8}{:>8}{:>8}{:>9}{:>9}{:>9}{:>7}{:>7}{:>9}{:>9}\n",
            "",
            "host MiB",
            "programs",
            "erases",
            "WA",
            "wr ms",
            "wr p99",
            "wr max",
            "GC MiB",
            "GC fg",
            "GC bg",
            "cmp host",
            "cmp GC",
        ));
        for f in &self.runs {
            out.push_str(&format!(
                "{:<6}{:>10.1}{:>10}{:>8}{:>8.3}{:>8.2}{:>9.2}{:>9.1}{:>9.1}{:>7}{:>7}{:>9}{:>9}\n",
                f.policy,
                f.host_write_bytes as f64 / (1 << 20) as f64,
                f.page_programs,
                f.block_erases,
                f.write_amplification,
                ms(f.write_latency_ns_mean),
                ms(f.write_latency_ns_p99),
                ms(f.write_latency_ns_max),
                f.gc_migrated_bytes as f64 / (1 << 20) as f64,
                f.gc_cycles_foreground,
                f.gc_cycles_background,
                f.pages_compressed_host,
                f.pages_compressed_gc,
            ));
        }
        out.push_str(
            "(wr: the device's write requests, ms; GC fg/bg: cycles on demand / in idle time; \
             cmp: pages compressed on the host path / by caGC)\n\n",
        );
        out.push_str(&crate::paper::headline_table(&self.headlines, 28, "stack"));
        out.push_str(
            "(the paper's figures are means over its seven block traces; ours here are one run \
             of the mix; the block-level tables give ours as the paper measures them)\n",
        );
        out
    }
}
