//! `flashstack reproduce mobifs`: the MobiFS seed's figures beside ours
//! (`flashstack_experiments::mobifs`, `docs/mobifs-reproduction.md`).

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;

#[derive(Args)]
pub struct MobifsArgs {
    /// Smaller benchmarks (about a minute in all).
    #[arg(long)]
    quick: bool,
    /// Also write every figure as JSON.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Seed of every random choice; the same seed gives the same figures.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

pub fn run(args: MobifsArgs) -> Result<()> {
    use flashstack_experiments::mobifs::{render, reproduce, MobifsOptions};
    let options = MobifsOptions {
        quick: args.quick,
        seed: args.seed,
    };
    let results = reproduce(&options)?;
    print!("{}", render(&results));
    if let Some(path) = args.json {
        std::fs::write(&path, serde_json::to_string_pretty(&results)? + "\n")
            .with_context(|| format!("{}", path.display()))?;
    }
    Ok(())
}
