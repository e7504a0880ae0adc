//! `flashstack reproduce mobifs`: the MobiFS seed's figures beside ours
//! (`flashstack_experiments::mobifs`, `docs/mobifs-reproduction.md`).

use anyhow::Result;
use clap::Args;
use flashstack_html::Reproduction;

use crate::reproduce::Outputs;

#[derive(Args)]
pub struct MobifsArgs {
    /// Smaller benchmarks (about a minute in all).
    #[arg(long)]
    pub quick: bool,
    #[command(flatten)]
    pub outputs: Outputs,
    /// Seed of every random choice; the same seed gives the same figures.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// The evaluation, with its terminal report.
pub fn reproduction(args: &MobifsArgs) -> Result<Reproduction> {
    use flashstack_experiments::mobifs::{render, reproduce, MobifsOptions};
    let options = MobifsOptions {
        quick: args.quick,
        seed: args.seed,
    };
    let spinner = crate::progress::Spinner::start(
        false,
        "MobiFS: ten apps, three energy runs and two benchmarks under each policy",
    );
    let results = reproduce(&options);
    spinner.finish();
    let results = results?;
    crate::reproduce::reproduction(
        "mobifs",
        "MobiFS (USENIX ATC '15)",
        render(&results),
        &results,
        results.paper_figures(),
    )
}
