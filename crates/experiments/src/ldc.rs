//! The LDC paper's evaluation (§6): PM, zFTL, SC, LDC and OPT on the seven workloads of
//! Table 4, reported as Fig. 8 (pages compressed, erases, GC overhead), Fig. 9 (write,
//! read and worst-case latency) and Fig. 10 (LDC's write-latency gain across controller
//! clocks).
//!
//! Workloads: the built-in `ldc:*` workloads of `flashstack-trace` (Table 4's request
//! counts and write ratios exact, volumes to the page; SQLite, journal, cache and photo
//! traffic in their own content zones; `docs/ldc-workloads.md`). Before each run the
//! workload's existing data is laid down from its snapshot zones (85% of the device, the
//! §4.1 mix) and aged by random overwrites. Each workload is replayed three times, as in
//! the paper. `docs/ldc-reproduction.md` lists every modelling choice.

use flashstack_content::ContentConfig;
use flashstack_ftl::compression::CompressionPolicyKind;
use flashstack_ftl::presets;
use flashstack_replay::{
    content_zones, NoProgress, OutOfRange, Progress, Replayer, RunConfig, DEFAULT_SNAPSHOT_AGING,
};
use flashstack_report::{ReportOptions, RunReport};
use flashstack_trace::builtin::{back_to_back, Builtin, LdcApp, LDC_PASSES, REPEAT_GAP_NS};
use serde::Serialize;
use thiserror::Error;

use crate::paper::Headline;

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
    /// Runs executed at once, on their own threads (at least 1). Each run is independent
    /// and seeded alone, and results are kept in run order, so the figures are the same
    /// for any value; a full run holds its 4 GiB device's contents in memory.
    pub jobs: usize,
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
    pub pages_compressed: u64,
    pub write_latency_ns_mean: u64,
    pub write_latency_ns_max: u64,
    pub read_latency_ns_mean: u64,
    pub host_write_bytes: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct LdcResults {
    pub quick: bool,
    pub aging: f64,
    pub device_bytes: u64,
    pub runs: Vec<Figures>,
}

fn blocks_per_plane(quick: bool) -> u32 {
    // 256 MiB quick, 4 GiB full; the paper's 16 GiB would hold 14 GiB of existing data in
    // memory with contents stored.
    if quick {
        1_035
    } else {
        16_548
    }
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

fn run_one(
    policy: CompressionPolicyKind,
    app: LdcApp,
    clock_mhz: u32,
    options: &LdcOptions,
) -> Result<Figures, LdcError> {
    let mut device = presets::ldc_emmc_with(policy);
    device.nand.geometry.blocks_per_plane = blocks_per_plane(options.quick);
    if let Some(c) = device.ftl.compression.as_mut() {
        c.controller.clock_mhz = clock_mhz;
    }
    let capacity = device
        .user_capacity_bytes()
        .map_err(|e| workload_error(app, e))?;
    let workload = Builtin::Ldc(app)
        .generate(capacity, options.seed)
        .map_err(|e| workload_error(app, e))?;
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
    Ok(figures(policy, app, clock_mhz, &replayer.report()))
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

fn figures(policy: CompressionPolicyKind, app: LdcApp, clock_mhz: u32, r: &RunReport) -> Figures {
    let write = &r.latency["write"];
    Figures {
        policy: policy.name(),
        app: abbrev(app),
        clock_mhz,
        page_programs: r.nand.page_programs,
        block_erases: r.nand.block_erases,
        gc_migrated_bytes: r.gc.migrated_bytes,
        pages_compressed: r.compression.pages_compressed_host + r.compression.pages_compressed_gc,
        write_latency_ns_mean: write.latency_ns_mean,
        write_latency_ns_max: write.latency_ns_max,
        read_latency_ns_mean: r.latency["read"].latency_ns_mean,
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
    progress.phase("reproduce ldc", Some(jobs.len() as u64));
    let results = run_all(&jobs, options, progress);
    let mut runs = Vec::with_capacity(jobs.len());
    for (&(policy, app, _), result) in jobs.iter().zip(results) {
        runs.push(result.map_err(|e| in_run(policy, app, e))?);
    }
    let device_bytes = blocks_per_plane(options.quick) as u64 * 64 * 4096;
    Ok(LdcResults {
        quick: options.quick,
        aging: options.aging,
        device_bytes,
        runs,
    })
}

impl LdcResults {
    fn get(&self, policy: &str, app: &str, clock: u32) -> &Figures {
        self.runs
            .iter()
            .find(|f| f.policy == policy && f.app == app && f.clock_mhz == clock)
            .expect("every combination was run")
    }

    /// `metric(policy) / metric(base)` per app at 200 MHz, and their mean.
    fn normalised(&self, policy: &str, base: &str, metric: fn(&Figures) -> u64) -> (Vec<f64>, f64) {
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
        let mean = match finite.len() {
            0 => f64::NAN,
            n => finite.iter().sum::<f64>() / n as f64,
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
        out.push_str(&format!("{:>8}\n", "mean"));
        for p in policies {
            let (per_app, mean) = self.normalised(p, base, metric);
            out.push_str(&format!("{p:<8}"));
            for v in per_app {
                out.push_str(&if v.is_finite() {
                    format!("{v:>7.3}")
                } else {
                    format!("{:>7}", "-")
                });
            }
            out.push_str(&if mean.is_finite() {
                format!("{mean:>8.3}\n")
            } else {
                format!("{:>8}\n", "-")
            });
        }
        out
    }

    /// Fig. 8–10 as tables, with the paper's stated figures beside ours.
    pub fn render(&self) -> String {
        let mut out = String::new();
        out.push_str(&format!(
            "LDC reproduction ({}; device {} MiB, existing data {:.0}% aged by {:.0}% \
             random overwrites, workloads replayed 3x)\n\n",
            if self.quick {
                "quick: 1/8 of every workload"
            } else {
                "full workloads"
            },
            self.device_bytes >> 20,
            SNAPSHOT_UTILIZATION * 100.0,
            self.aging * 100.0
        ));
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
            "Fig. 8(c) GC overhead (bytes migrated), normalised to PM",
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
            "Fig. 9(c) worst-case write latency, normalised to PM",
            &["zFTL", "SC", "LDC", "OPT"],
            "PM",
            |f| f.write_latency_ns_max,
        ));
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

    /// The paper's headline figures beside ours (means over apps, as signed changes).
    pub fn headlines(&self) -> Vec<Headline> {
        let change =
            |p: &str, base: &str, m: fn(&Figures) -> u64| self.normalised(p, base, m).1 - 1.0;
        let erases = |f: &Figures| f.block_erases;
        let wlat = |f: &Figures| f.write_latency_ns_mean;
        vec![
            Headline::new(
                "LDC erases vs PM",
                -0.505,
                change("LDC", "PM", erases),
                "change",
            ),
            Headline::new(
                "LDC write latency vs zFTL",
                -0.104,
                change("LDC", "zFTL", wlat),
                "change",
            ),
            Headline::new(
                "LDC erases vs zFTL",
                0.04,
                change("LDC", "zFTL", erases),
                "change",
            ),
            Headline::new(
                "SC write latency vs PM",
                -0.172,
                change("SC", "PM", wlat),
                "change",
            ),
            Headline::new(
                "LDC write latency vs PM",
                -0.18,
                change("LDC", "PM", wlat),
                "change",
            ),
        ]
    }

    fn headline(&self) -> String {
        let mut out = format!(
            "{:<28}{:>10}{:>10}{:>10}\n",
            "headline (mean over apps)", "paper", "ours", "diff pp"
        );
        for h in self.headlines() {
            let (paper, ours) = (h.paper * 100.0, h.ours * 100.0);
            out.push_str(&format!(
                "{:<28}{paper:>9.1}%{ours:>9.1}%{:>10.1}\n",
                h.figure,
                ours - paper
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quick() -> LdcOptions {
        LdcOptions {
            quick: true,
            seed: 3,
            aging: SNAPSHOT_AGING,
            jobs: 1,
        }
    }

    #[test]
    fn compression_cuts_programs_and_runs_are_deterministic() {
        let me = LdcApp::Messenger;
        let pm = run_one(CompressionPolicyKind::Pm, me, 200, &quick()).unwrap();
        let opt = run_one(CompressionPolicyKind::Opt, me, 200, &quick()).unwrap();
        assert!(opt.page_programs < pm.page_programs, "{opt:?} vs {pm:?}");
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
