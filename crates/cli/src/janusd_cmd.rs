//! `flashstack reproduce janusd`: Janusd's evaluation on aged phones
//! (`flashstack_experiments::janusd`, `docs/janusd-reproduction.md`).

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use flashstack_experiments::janusd::{reproduce, JanusdOptions};

#[derive(Args)]
pub struct JanusdArgs {
    /// A small phone (3.4 GiB ufs31 array, 60 % full after 2 days) and a 6-day recurrence
    /// with a pass every 2 days: about a minute.
    #[arg(long)]
    quick: bool,
    /// Also write every figure as JSON.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Seed of the phone's aging; the same seed gives the same figures.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Days between the periodic passes of the recurrence runs (default 14, the seed's
    /// "every two weeks"; 2 with --quick).
    #[arg(long, value_name = "DAYS")]
    period_days: Option<u32>,
}

pub fn reproduce_janusd(args: JanusdArgs) -> Result<()> {
    if args.period_days == Some(0) {
        bail!("--period-days 0: must be at least 1");
    }
    let options = JanusdOptions {
        quick: args.quick,
        seed: args.seed,
        period_days: args.period_days,
    };
    let results = reproduce(&options, &mut |step| eprintln!("janusd: {step}"))?;
    print!("{}", results.render());
    if let Some(path) = args.json {
        std::fs::write(&path, serde_json::to_string_pretty(&results)? + "\n")?;
    }
    Ok(())
}
