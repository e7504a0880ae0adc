//! `flashstack reproduce coco`: the COCO seed's figures beside ours
//! (`flashstack_experiments::coco`, `docs/coco-reproduction.md`).

use anyhow::Result;
use clap::Args;
use flashstack_html::Reproduction;

use crate::reproduce::Outputs;

#[derive(Args)]
pub struct CocoArgs {
    /// A 256 MiB drive and a smaller file set (well under a minute).
    #[arg(long)]
    pub quick: bool,
    #[command(flatten)]
    pub outputs: Outputs,
    /// Seed of every random choice; the same seed gives the same figures.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// The evaluation, with its terminal report.
pub fn reproduction(args: &CocoArgs) -> Result<Reproduction> {
    use flashstack_experiments::coco::{render, reproduce, CocoOptions};
    let options = CocoOptions {
        quick: args.quick,
        seed: args.seed,
        coco_op_threshold_permille: None,
    };
    let spinner = crate::progress::Spinner::start(
        false,
        "COCO: the OP sweep, then five schemes on the four filebench personalities",
    );
    let results = reproduce(&options);
    spinner.finish();
    let results = results?;
    crate::reproduce::reproduction(
        "coco",
        "COCO (HotStorage '23)",
        render(&results),
        &results,
        None,
    )
}
