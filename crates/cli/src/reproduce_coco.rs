//! `flashstack reproduce coco`: the COCO seed's figures beside ours
//! (`flashstack_experiments::coco`, `docs/coco-reproduction.md`).

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;

#[derive(Args)]
pub struct CocoArgs {
    /// A 256 MiB drive and a smaller file set (well under a minute).
    #[arg(long)]
    quick: bool,
    /// Also write every figure as JSON.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Seed of every random choice; the same seed gives the same figures.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

pub fn run(args: CocoArgs) -> Result<()> {
    use flashstack_experiments::coco::{render, reproduce, CocoOptions};
    let options = CocoOptions {
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
