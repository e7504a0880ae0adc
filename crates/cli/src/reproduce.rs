//! `flashstack reproduce PAPER`: each seed paper's evaluation with the paper's figures
//! beside ours, as terminal tables, JSON (`--json`) and an HTML report (`--html`). Every
//! reproduction is computed into a [`Reproduction`] (its text, its JSON with the headline
//! figures) so that `reproduce all` gathers them without knowing each seed.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use flashstack_experiments::paper::PaperFigure;
use flashstack_html::Reproduction;
use serde::Serialize;

use crate::{
    janusd_cmd, progress, reproduce_all, reproduce_coco, reproduce_medfs, reproduce_mobifs,
};

#[derive(Subcommand)]
pub enum ReproduceCommand {
    /// LDC (TECS 2017): PM, zFTL, SC, LDC and OPT on the seven Table 4 workloads
    /// (`--stack`: also under the whole stack, the persona mix on an aged phone).
    Ldc(LdcArgs),
    /// Janusd (ATC 2017): copy, janusdP, janusdL and janusd on an aged phone; app launch,
    /// scenarios, cost and recurrence.
    Janusd(janusd_cmd::JanusdArgs),
    /// MobiFS (ATC 2015): stock page cache + fsync against versioned cache transactions.
    Mobifs(reproduce_mobifs::MobifsArgs),
    /// MedFS (FAST 2025): F2FS-NODC, F2FS-DC, DCI, DCM, MedFS and FPC on the seven apps'
    /// personas; write traffic, lifespan, latencies, energy, hit rates, delta sizes.
    Medfs(reproduce_medfs::MedfsArgs),
    /// COCO (HotStorage 2023): F2FS, F2FSC, the CSD alone and FACS on the four filebench
    /// personalities; throughput, device power, WAF, temperature.
    Coco(reproduce_coco::CocoArgs),
    /// Every reproduction in turn, a summary of every paper's figures beside ours, and the
    /// techniques alone and composed on one stack over the persona mix.
    All(reproduce_all::AllArgs),
}

/// Where a reproduction's results go besides the terminal.
#[derive(Args, Clone, Default)]
pub struct Outputs {
    /// Also write every figure as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also write a self-contained HTML report: the paper's figures beside ours, as a
    /// table with the gaps and as plots, with every table the terminal shows.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

#[derive(Args)]
pub struct LdcArgs {
    /// A 256 MiB device and one eighth of every workload (under a minute).
    #[arg(long)]
    pub quick: bool,
    #[command(flatten)]
    pub outputs: Outputs,
    /// Seed of every random choice (workload generation, content, aging); the same seed
    /// gives the same figures.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Share of the existing data overwritten at random before each run (how worn-in the
    /// phone is; sets how hard GC works during the workloads).
    #[arg(long, value_name = "FRACTION", default_value_t = flashstack_experiments::ldc::SNAPSHOT_AGING)]
    pub aging: f64,
    /// Share of the user capacity the existing data takes (the paper does not say how full
    /// its device was): the user's data grows or shrinks; the apps' files stay.
    #[arg(long, value_name = "F", default_value_t = flashstack_experiments::ldc::SNAPSHOT_UTILIZATION)]
    pub fill: f64,
    /// How the existing data (and its aging) is written: `neutral` stores it raw for every
    /// policy, as the paper initialises it; `through-policy` writes it through the policy
    /// under test, so compressing policies start with it already compressed.
    #[arg(long, value_name = "MODE", default_value = "neutral", value_parser = parse_lay_down)]
    pub lay_down: flashstack_replay::LayDown,
    /// Which host log the compressing policies' raw pages join: `by-ratio` (the paper's
    /// grouping: SC and LDC keep one log per 0.1 of predicted ratio) or `one` (an ablation).
    #[arg(long, value_name = "MODE", default_value = "by-ratio", value_parser = parse_raw_streams)]
    pub raw_streams: flashstack_ftl::compression::RawStreams,
    /// Which policies' GC packs compressed fragments across flash pages: `ca-gc` (LDC's
    /// only, the paper) or `every-policy` (an ablation).
    #[arg(long, value_name = "SCOPE", default_value = "ca-gc", value_parser = parse_gc_straddle_scope)]
    pub gc_straddle_scope: flashstack_ftl::compression::GcStraddleScope,
    /// Runs at once, one thread each (the figures are the same for any value). Default:
    /// every core with --quick (256 MiB per run); 1 for the full runs, each of which holds
    /// its 16 GiB device's state in memory (about 2 GB, pages kept by reference).
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// The device's user capacity in GiB (default 16, the paper's; with --quick 256 MiB).
    /// Above 4 it implies --by-reference: stored bytes would take about as much memory as
    /// the existing data (85% of the device).
    #[arg(long, value_name = "GIB", value_parser = clap::value_parser!(u32).range(1..=64))]
    pub device_gib: Option<u32>,
    /// Keep the pages a run writes as references to the content model (LBA, version,
    /// stored form) and regenerate their bytes when read, instead of storing them: the
    /// same figures in a fraction of the memory (implied above 4 GiB).
    #[arg(long)]
    pub by_reference: bool,
    /// Where the SQLite classes' page bytes come from: `persona` (real pages of the six
    /// LDC personas' databases, captured as they ran: tables, indexes, overflow pages) or
    /// `synthetic` (the content model's generated b-tree leaves).
    #[arg(long, value_name = "SOURCE", default_value = "persona")]
    pub sqlite_pages: flashstack_experiments::ldc::SqlitePages,
    /// Also run the five policies under the whole stack (page cache, F2FS, the personas'
    /// six-app mix with real SQLite) from one aged phone, aged under PM so that its data
    /// starts uncompressed under every policy; printed as an extra table. The phone is
    /// built on first use and cached (16 GiB, 90 days; --quick: 1 GiB, 10 days, and an
    /// eighth of the mix).
    #[arg(long)]
    pub stack: bool,
    /// Only the whole-stack table (--stack without the block-level runs).
    #[arg(long)]
    pub stack_only: bool,
    /// The whole-stack runs with F2FS mounted `nodiscard`, the phone aged so too (its own
    /// cached phone): freed segments are not trimmed, so the device's GC moves their stale
    /// pages, where caGC's compression during GC has work.
    #[arg(long)]
    pub fs_nodiscard: bool,
}

pub fn run(command: ReproduceCommand) -> Result<()> {
    let (reproduction, outputs) = match command {
        ReproduceCommand::Ldc(args) => (ldc(&args)?, args.outputs),
        ReproduceCommand::Janusd(args) => (janusd_cmd::reproduction(&args)?, args.outputs),
        ReproduceCommand::Mobifs(args) => (reproduce_mobifs::reproduction(&args)?, args.outputs),
        ReproduceCommand::Medfs(args) => (reproduce_medfs::reproduction(&args)?, args.outputs),
        ReproduceCommand::Coco(args) => (reproduce_coco::reproduction(&args)?, args.outputs),
        ReproduceCommand::All(args) => return reproduce_all::run(&args),
    };
    print!("{}", reproduction.text);
    write_outputs(&outputs, std::slice::from_ref(&reproduction), &[], ("", ""))
}

/// `--json` (one reproduction's JSON, or every one's under its name) and `--html`.
pub fn write_outputs(
    outputs: &Outputs,
    reproductions: &[Reproduction],
    columns: &[flashstack_html::Column],
    (columns_heading, columns_note): (&str, &str),
) -> Result<()> {
    if let Some(path) = &outputs.json {
        let json = match reproductions {
            [one] if columns.is_empty() => one.json.clone(),
            _ => reproduce_all::json(reproductions, columns),
        };
        write(path, &(serde_json::to_string_pretty(&json)? + "\n"))?;
    }
    if let Some(path) = &outputs.html {
        let title = match reproductions {
            [one] if columns.is_empty() => format!("{} on flashstack", one.title),
            _ => "The seed papers on flashstack".to_string(),
        };
        let html = crate::html::reproductions(
            &title,
            reproductions,
            columns,
            columns_heading,
            columns_note,
        )?;
        write(path, &html)?;
    }
    Ok(())
}

fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// A reproduction from its results, with the paper's figures redrawn from them added to
/// their JSON as `figures` (what the HTML report plots beside the paper's values).
pub fn reproduction(
    name: &str,
    title: &str,
    text: String,
    results: &impl Serialize,
    figures: Vec<PaperFigure>,
) -> Result<Reproduction> {
    let mut json = serde_json::to_value(results).context("the results as JSON")?;
    if let Some(map) = json.as_object_mut() {
        map.insert("figures".into(), serde_json::to_value(figures)?);
    }
    Ok(Reproduction {
        name: name.into(),
        title: title.into(),
        doc: format!("docs/{name}-reproduction.md"),
        text,
        json,
    })
}

pub fn ldc(args: &LdcArgs) -> Result<Reproduction> {
    use flashstack_experiments::ldc::{reproduce, LdcOptions};
    if !(0.0..=4.0).contains(&args.aging) {
        anyhow::bail!("--aging {}: must be between 0 and 4", args.aging);
    }
    flashstack_experiments::ldc::check_fill(args.fill)?;
    if args.fs_nodiscard && !(args.stack || args.stack_only) {
        anyhow::bail!(
            "--fs-nodiscard sets the whole-stack runs' F2FS (the block-level runs have no file \
             system); add --stack or --stack-only"
        );
    }
    if args.stack_only {
        use flashstack_experiments::ldc::{SNAPSHOT_AGING, SNAPSHOT_UTILIZATION};
        let block_level = [
            ("--fill", args.fill != SNAPSHOT_UTILIZATION),
            ("--aging", args.aging != SNAPSHOT_AGING),
            (
                "--lay-down",
                args.lay_down != flashstack_replay::LayDown::Neutral,
            ),
            ("--raw-streams", !args.raw_streams.is_default()),
            ("--gc-straddle-scope", !args.gc_straddle_scope.is_default()),
            ("--jobs", args.jobs.is_some()),
            ("--device-gib", args.device_gib.is_some()),
            ("--by-reference", args.by_reference),
            ("--sqlite-pages", !args.sqlite_pages.is_default()),
        ];
        if let Some((flag, _)) = block_level.iter().find(|(_, given)| *given) {
            anyhow::bail!(
                "{flag} sets the block-level runs, which --stack-only leaves out (the whole \
                 stack starts from its aged phone); use --stack to run both"
            );
        }
    }
    let options = LdcOptions {
        fill: args.fill,
        quick: args.quick,
        seed: args.seed,
        aging: args.aging,
        lay_down: args.lay_down,
        raw_streams: args.raw_streams,
        gc_straddle_scope: args.gc_straddle_scope,
        device_gib: args.device_gib,
        // Implied above 4 GiB (`keeps_pages_by_reference`).
        by_reference: args.by_reference,
        sqlite_pages: args.sqlite_pages,
        jobs: match args.jobs {
            Some(0) => anyhow::bail!("--jobs 0: must be at least 1"),
            Some(n) => n,
            None if args.quick => std::thread::available_parallelism().map_or(1, |n| n.get()),
            None => 1,
        },
    };
    let stack = match args.stack || args.stack_only {
        true => Some(ldc_stack(args)?),
        false => None,
    };
    if args.stack_only {
        let stack = stack.expect("run above");
        return reproduction(
            "ldc",
            "LDC (ACM TECS 2017) under the whole stack",
            stack.render(),
            &serde_json::json!({ "stack": stack }),
            Vec::new(),
        );
    }
    let mut bar = progress::Bar::new(false);
    let results = reproduce(&options, &mut bar)?;
    bar.finish();
    let mut text = results.render();
    let mut json = serde_json::to_value(&results)?;
    if let Some(stack) = &stack {
        text.push('\n');
        text.push_str(&stack.render());
        if let Some(map) = json.as_object_mut() {
            map.insert("stack".into(), serde_json::to_value(stack)?);
        }
    }
    reproduction(
        "ldc",
        "LDC (ACM TECS 2017)",
        text,
        &json,
        results.paper_figures(),
    )
}

/// The five policies under the whole stack, from the shared phone aged under PM (from the
/// phone cache, or built now).
fn ldc_stack(args: &LdcArgs) -> Result<flashstack_experiments::ldc_stack::LdcStackResults> {
    use flashstack_experiments::ldc_stack::{self, LdcStackOptions};
    let config = ldc_stack::phone_stack(args.quick, !args.fs_nodiscard);
    let spec = ldc_stack::aging_spec(args.quick, args.seed);
    let phone = crate::phone::aged_phone(&config, &spec, false)
        .context("the aged phone of reproduce ldc --stack")?;
    let options = LdcStackOptions {
        quick: args.quick,
        seed: args.seed,
    };
    let results = ldc_stack::run(std::sync::Arc::new(phone), &options, &mut |policy| {
        eprintln!("reproduce ldc --stack: {policy} under the whole stack")
    })?;
    Ok(results)
}

fn parse_raw_streams(s: &str) -> Result<flashstack_ftl::compression::RawStreams, String> {
    use flashstack_ftl::compression::RawStreams;
    match s {
        "by-ratio" => Ok(RawStreams::ByRatio),
        "one" => Ok(RawStreams::One),
        _ => Err(format!("`{s}`: expected `by-ratio` or `one`")),
    }
}

fn parse_gc_straddle_scope(
    s: &str,
) -> Result<flashstack_ftl::compression::GcStraddleScope, String> {
    use flashstack_ftl::compression::GcStraddleScope;
    match s {
        "ca-gc" => Ok(GcStraddleScope::CaGc),
        "every-policy" => Ok(GcStraddleScope::EveryPolicy),
        _ => Err(format!("`{s}`: expected `ca-gc` or `every-policy`")),
    }
}

fn parse_lay_down(s: &str) -> Result<flashstack_replay::LayDown, String> {
    use flashstack_replay::LayDown;
    match s {
        "neutral" => Ok(LayDown::Neutral),
        "through-policy" => Ok(LayDown::ThroughPolicy),
        _ => Err(format!("'{s}': expected neutral or through-policy")),
    }
}
