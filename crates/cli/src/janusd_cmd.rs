//! `flashstack reproduce janusd`: Janusd's evaluation on aged phones
//! (`flashstack_experiments::janusd`, `docs/janusd-reproduction.md`).

use anyhow::{bail, Context, Result};
use clap::Args;
use flashstack_cache::MmapPolicy;
use flashstack_experiments::janusd::{reproduce, CodeOrder, JanusdOptions, Reader};
use flashstack_html::Reproduction;
use flashstack_stack::StackConfig;

use crate::reproduce::Outputs;

#[derive(Args)]
pub struct JanusdArgs {
    /// A small phone (3.4 GiB ufs31 array, 60 % full after 2 days) and a 6-day recurrence
    /// with a pass every 2 days: about 20 s.
    #[arg(long)]
    pub quick: bool,
    #[command(flatten)]
    pub outputs: Outputs,
    /// Seed of the phone's aging; the same seed gives the same figures.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Days between the periodic passes of the recurrence runs (default 14, the seed's
    /// "every two weeks"; 2 with --quick).
    #[arg(long, value_name = "DAYS")]
    pub period_days: Option<u32>,
    /// How launches and scenarios read: `pages` (4 KiB calls through Linux's readahead,
    /// the default), `pages-no-readahead`, or `windows` (128 KiB calls, readahead off).
    #[arg(long, default_value = "pages", value_name = "READER")]
    pub reader: String,
    /// How launches fault on mapped code (APK, odex, native libraries): `off` (read like
    /// any file by --reader, the default) or `read-around` (faulted page by page through
    /// the kernel's mmap read-around, `cache.readahead.mmap`).
    #[arg(long, default_value = "off", value_name = "POLICY")]
    pub mmap: String,
    /// The order a launch touches mapped code in: `sequential` (each span from start to
    /// end, the default) or `scattered` (64 KiB pieces in a fixed jumping order).
    #[arg(long, default_value = "sequential", value_name = "ORDER")]
    pub code_order: String,
    /// The stack the phone is made on: `ufs31` (the default) or a stack specification
    /// (`ufs31+nand.die_rules=independent-planes`); its array is cut to the phone's size
    /// (`nand.geometry.blocks_per_plane` is replaced: 24 with --quick, 114 without).
    #[arg(long, value_name = "SPEC")]
    pub stack: Option<String>,
}

/// The evaluation, with its terminal report.
pub fn reproduction(args: &JanusdArgs) -> Result<Reproduction> {
    if args.period_days == Some(0) {
        bail!("--period-days 0: must be at least 1");
    }
    let Some(reader) = Reader::parse(&args.reader) else {
        bail!(
            "--reader {}: unknown (known: {})",
            args.reader,
            Reader::NAMES.join(", ")
        );
    };
    let Some(mmap) = MmapPolicy::parse(&args.mmap) else {
        bail!(
            "--mmap {}: unknown (known: {})",
            args.mmap,
            MmapPolicy::NAMES.join(", ")
        );
    };
    let Some(code_order) = CodeOrder::parse(&args.code_order) else {
        bail!(
            "--code-order {}: unknown (known: {})",
            args.code_order,
            CodeOrder::NAMES.join(", ")
        );
    };
    let stack = match &args.stack {
        Some(spec) => Some(
            crate::stackrun::resolve_stack(spec, &StackConfig::preset("ufs31")?)
                .with_context(|| format!("--stack {spec}"))?,
        ),
        None => None,
    };
    let options = JanusdOptions {
        stack,
        reader,
        mmap,
        code_order,
        quick: args.quick,
        seed: args.seed,
        period_days: args.period_days,
    };
    let results = reproduce(&options, &mut |step| eprintln!("janusd: {step}"))?;
    crate::reproduce::reproduction(
        "janusd",
        "Janusd (USENIX ATC '17)",
        results.render(),
        &results,
        results.paper_figures(),
    )
}
