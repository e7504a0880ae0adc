//! `flashstack reproduce medfs`: the MedFS seed's figures beside ours
//! (`flashstack_experiments::medfs`, `docs/medfs-reproduction.md`).

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;

#[derive(Args)]
pub struct MedfsArgs {
    /// One short task per app instead of each app's whole task sequence (about a minute).
    #[arg(long)]
    quick: bool,
    /// Also write every figure as JSON.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Seed of every random choice; the same seed gives the same figures.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The stack preset every scheme runs on (the paper's phone: ufs31).
    #[arg(long, default_value = "ufs31")]
    stack: String,
    /// Print each run as it starts (to stderr).
    #[arg(long)]
    verbose: bool,
}

pub fn run(args: MedfsArgs) -> Result<()> {
    use flashstack_experiments::medfs::{render, reproduce, MedfsOptions};
    let options = MedfsOptions {
        quick: args.quick,
        seed: args.seed,
        stack: args.stack,
    };
    let verbose = args.verbose;
    let results = reproduce(&options, &mut |app, scheme| {
        if verbose {
            eprintln!("{app} under {scheme}");
        }
    })?;
    print!("{}", render(&results));
    if let Some(path) = args.json {
        std::fs::write(&path, serde_json::to_string_pretty(&results)? + "\n")
            .with_context(|| format!("{}", path.display()))?;
    }
    Ok(())
}
