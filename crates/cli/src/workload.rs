//! `flashstack workload list`: the built-in workloads with the paper's figures beside the
//! generated stream's.

use anyhow::Result;
use clap::Args;
use flashstack_ftl::presets;
use flashstack_sim::units::{format_bytes, format_count};
use flashstack_trace::builtin::Builtin;

use crate::run::DEFAULT_DEVICE;

#[derive(Args)]
pub struct ListArgs {
    /// Seed of the generated block workloads whose figures are shown.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

pub fn list(args: ListArgs) -> Result<()> {
    let device = presets::preset(DEFAULT_DEVICE).expect("the default device is a preset");
    let capacity = device.user_capacity_bytes()?;
    println!(
        "Built-in workloads: the paper's figures / the generated stream (seed {}, {} {}; \
         MB = 10^6 bytes).",
        args.seed,
        DEFAULT_DEVICE,
        format_bytes(capacity)
    );
    println!(
        "{:<8} {:<13} {:>17} {:>16} {:>17} {:>9}",
        "name", "app", "requests", "write ratio", "volume (MB)", "<= 8 KiB"
    );
    for builtin in Builtin::ALL {
        let workload = builtin.generate(capacity, args.seed)?;
        let paper = builtin.paper();
        let ours = workload.figures();
        println!(
            "{:<8} {:<13} {:>8} / {:>6} {:>6}% / {:>5.2}% {:>7.1} / {:>7.1} {:>8.1}%",
            builtin.to_string(),
            workload.app.name(),
            format_count(paper.requests),
            format_count(ours.requests),
            paper.write_percent,
            ours.write_percent(),
            paper.volume_mb(),
            ours.volume_mb(),
            ours.small_write_percent()
        );
    }
    println!(
        "Each is one pass; `run --workload NAME --repeat 3` replays it three times, as the \
         paper (and `reproduce ldc`) does."
    );
    println!();
    println!(
        "App personas (whole stack: real SQLite and app files over page cache, F2FS, FTL, \
         NAND; `run --workload NAME`, `workload analyze NAME`):"
    );
    let entries = flashstack_apps::catalog();
    let width = entries.iter().map(|e| e.name.len()).max().unwrap_or(0);
    for e in entries {
        println!("{:<width$}  {}", e.name, e.description);
        println!("{:<width$}    calibrated to: {}", "", e.calibration);
    }
    println!();
    println!(
        "filebench personalities of COCO's table (whole stack, `run --workload \
         filebench:NAME`; content compresses by a Zipfian per-file zlib ratio):"
    );
    for p in flashstack_workload::filebench::Personality::ALL {
        let s = p.spec();
        println!(
            "filebench:{:<10}  {:?}, {}–{} KiB, R:W {}:{}, ratio {}–{}",
            p.name(),
            s.pattern,
            s.io_bytes_min / 1024,
            s.io_bytes_max / 1024,
            s.read_parts,
            s.write_parts,
            s.ratio_min,
            s.ratio_max
        );
    }
    Ok(())
}
