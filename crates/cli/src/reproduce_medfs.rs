//! `flashstack reproduce medfs`: the MedFS seed's figures beside ours
//! (`flashstack_experiments::medfs`, `docs/medfs-reproduction.md`).

use anyhow::{Context, Result};
use clap::Args;
use flashstack_html::Reproduction;

use crate::reproduce::Outputs;

#[derive(Args)]
pub struct MedfsArgs {
    /// One short task per app instead of each app's whole task sequence (about a minute).
    #[arg(long)]
    pub quick: bool,
    #[command(flatten)]
    pub outputs: Outputs,
    /// Seed of every random choice; the same seed gives the same figures.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The stack every scheme runs on: a stack preset (the paper's phone: ufs31) or a
    /// stack specification (`ufs31+nand.die_rules=independent-planes`, a TOML file).
    #[arg(long, default_value = "ufs31")]
    pub stack: String,
    /// Print each run as it starts (to stderr).
    #[arg(long)]
    pub verbose: bool,
}

/// The evaluation, with its terminal report.
pub fn reproduction(args: &MedfsArgs) -> Result<Reproduction> {
    use flashstack_experiments::medfs::{render, reproduce, MedfsOptions};
    // A preset by name (the figures of record); anything else through the specification.
    let base = match flashstack_stack::StackConfig::preset(&args.stack) {
        Ok(_) => None,
        Err(_) => Some(
            crate::stackrun::resolve_stack(
                &args.stack,
                &flashstack_stack::StackConfig::preset("ufs31")?,
            )
            .with_context(|| format!("--stack {}", args.stack))?,
        ),
    };
    let options = MedfsOptions {
        quick: args.quick,
        seed: args.seed,
        stack: args.stack.clone(),
        base,
    };
    let verbose = args.verbose;
    let results = reproduce(&options, &mut |app, scheme| {
        if verbose {
            eprintln!("{app} under {scheme}");
        }
    })?;
    crate::reproduce::reproduction(
        "medfs",
        "MedFS (USENIX FAST '25)",
        render(&results),
        &results,
        results.paper_figures(),
    )
}
