//! `flashstack sweep SPEC.toml`: the cartesian product of a grid of parameters, each point
//! a whole-stack run (or, with `device`, a block-level one), gathered into one table (a column per parameter). The grid, the
//! points and the table are `flashstack_sweep`'s, which the Python package calls too.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;
use flashstack_sweep::{run_points, table, Grid, RunEnv};

use crate::run::write_output;

#[derive(Args, Debug)]
pub struct SweepArgs {
    /// The grid: workload, stack (or device), seed, start and an [overrides] table of
    /// stack (or device) fields, each a value or a list (docs/python.md).
    spec: PathBuf,
    /// Write the table as CSV ("-" for standard output, the default when neither --csv
    /// nor --json is given).
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Write the table as JSON: {"columns": [...], "rows": [[...], ...]}.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Points run at once, one thread each (the table is the same for any value).
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..))]
    jobs: u32,
    /// Attempts after a point's first failure before its row records the error.
    #[arg(long, value_name = "N", default_value_t = 1)]
    retries: u32,
    /// Print only the grid's errors, no progress lines.
    #[arg(long, short)]
    quiet: bool,
}

pub fn sweep(args: SweepArgs) -> Result<()> {
    let origin = args.spec.display().to_string();
    let text =
        std::fs::read_to_string(&args.spec).with_context(|| format!("cannot read {origin}"))?;
    let grid = Grid::from_toml_str(&text, &origin)?;
    let points = grid.points();
    let env = RunEnv::with_default_cache(std::env::current_exe().ok().as_ref());
    let quiet = args.quiet;
    let outcomes = run_points(
        &points,
        &env,
        args.jobs as usize,
        args.retries,
        &mut |done, total, outcome| {
            if !quiet {
                let p = &outcome.point;
                let status = outcome.error.as_deref().unwrap_or("ok");
                let from = match p.device {
                    Some(_) => String::new(),
                    None => format!(" from {}", p.start),
                };
                eprintln!(
                    "[{done}/{total}] {} on {}{from} seed {}: {status}",
                    p.workload,
                    p.target(),
                    p.seed
                );
            }
        },
    );
    let table = table(&grid, &outcomes);
    let stdout = PathBuf::from("-");
    let csv = match (&args.csv, &args.json) {
        (None, None) => Some(&stdout),
        (csv, _) => csv.as_ref(),
    };
    if let Some(path) = csv {
        write_output(path, &table.to_csv())?;
    }
    if let Some(path) = &args.json {
        write_output(path, &table.to_json())?;
    }
    let failed = table.failed();
    if failed > 0 {
        bail!(
            "{failed} of {} points failed (their rows carry the error)",
            points.len()
        );
    }
    Ok(())
}
