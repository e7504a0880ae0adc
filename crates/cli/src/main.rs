//! The `flashstack` command line: a thin layer that maps flags onto the configuration
//! structs of the library crates, runs them, and prints their reports.

mod bench;
mod device;
mod filetrace;
mod fs;
mod mount;
mod phone;
mod progress;
mod run;
mod stackrun;
mod workload;

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "flashstack",
    version,
    about = "Emulate a phone's storage stack and measure \
    what a technique does to its flash: write stress, erases, lifetime, latency, energy."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per process: the size of the largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Replay a block trace or a synthetic workload on one or more devices.
    Run(run::RunArgs),
    /// List the built-in device presets, or print one as TOML.
    Presets(PresetArgs),
    /// Measure replay speed and memory (wall clock).
    Bench(bench::BenchArgs),
    /// Mount the emulated stack with FUSE (block-file mode: --block).
    Mount(mount::MountArgs),
    /// Reproduce a seed paper's evaluation, with the paper's figures beside ours.
    Reproduce {
        #[command(subcommand)]
        paper: ReproduceCommand,
    },
    /// Work with block traces.
    Trace {
        #[command(subcommand)]
        command: TraceCommand,
    },
    /// The built-in workloads.
    Workload {
        #[command(subcommand)]
        command: WorkloadCommand,
    },
    /// F2FS image files: mkfs, ls, cat, stat, put.
    Fs {
        #[command(subcommand)]
        command: fs::FsCommand,
    },
    /// Used phones: make one (months of use on a whole stack), describe one.
    Phone {
        #[command(subcommand)]
        command: phone::PhoneCommand,
    },
}

#[derive(Subcommand)]
enum WorkloadCommand {
    /// The built-in workloads, the paper's figures beside the generated stream's.
    List(workload::ListArgs),
    /// The MedFS table's columns for a file-level trace: volume, small-file share, update
    /// ratio and difference, syncs, file types.
    Analyze(filetrace::AnalyzeArgs),
}

#[derive(Args)]
struct PresetArgs {
    /// Print this preset as a TOML file to start your own device from.
    #[arg(long, value_name = "NAME")]
    toml: Option<String>,
}

#[derive(Subcommand)]
enum ReproduceCommand {
    /// LDC (TECS 2017): PM, zFTL, SC, LDC and OPT on the seven Table 4 workloads.
    Ldc(ReproduceArgs),
}

#[derive(Args)]
struct ReproduceArgs {
    /// A 256 MiB device and one eighth of every workload (under a minute).
    #[arg(long)]
    quick: bool,
    /// Also write every run's figures as JSON.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Share of the existing data overwritten at random before each run (how worn-in the
    /// phone is; sets how hard GC works during the workloads).
    #[arg(long, value_name = "FRACTION", default_value_t = flashstack_experiments::ldc::SNAPSHOT_AGING)]
    aging: f64,
    /// Runs at once, one thread each (the figures are the same for any value). Default:
    /// every core with --quick (256 MiB per run); 1 for the full runs, each of which holds
    /// a 4 GiB device's contents in memory (about 4.5 GiB).
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
}

#[derive(Subcommand)]
enum TraceCommand {
    /// Counts, sizes, footprint and mix of a trace.
    Inspect(InspectArgs),
    /// Convert a MobiGen script or strace output into a file-level trace.
    Import(filetrace::ImportArgs),
}

#[derive(Args)]
struct InspectArgs {
    file: PathBuf,
    #[command(flatten)]
    input: run::TraceInput,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run::run(args),
        Command::Presets(args) => presets(args),
        Command::Bench(args) => bench::bench(args),
        Command::Mount(args) => mount::mount(args),
        Command::Reproduce {
            paper: ReproduceCommand::Ldc(args),
        } => reproduce_ldc(args),
        Command::Trace {
            command: TraceCommand::Inspect(args),
        } => inspect(args),
        Command::Workload {
            command: WorkloadCommand::List(args),
        } => workload::list(args),
        Command::Trace {
            command: TraceCommand::Import(args),
        } => filetrace::import(args),
        Command::Workload {
            command: WorkloadCommand::Analyze(args),
        } => filetrace::analyze_file(args),
        Command::Fs { command } => fs::fs(command),
        Command::Phone { command } => phone::phone(command),
    };
    if let Err(error) = result {
        eprintln!("error: {error:#}");
        std::process::exit(1);
    }
}

fn presets(args: PresetArgs) -> Result<()> {
    if let Some(name) = args.toml {
        let config = device::resolve(&name)?;
        print!("{}", config.to_toml());
        return Ok(());
    }
    println!(
        "{:<15} {:>10} {:>6} {:>6} {:>8} {:>8} {:>9} {:>3}  description",
        "preset", "user", "page", "OP", "tR", "tPROG", "tBERS", "QD"
    );
    for (name, description) in flashstack_ftl::presets::PRESETS {
        let c = flashstack_ftl::presets::preset(name).expect("listed presets exist");
        let t = &c.nand.timing;
        println!(
            "{:<15} {:>10} {:>5}K {:>5.1}% {:>6}us {:>6}us {:>7}us {:>3}  {}",
            name,
            flashstack_sim::units::format_bytes(c.user_capacity_bytes()?),
            c.nand.geometry.page_size_bytes / 1024,
            c.ftl.overprovisioning_ratio * 100.0,
            t.read_ns / 1000,
            t.program_ns / 1000,
            t.erase_ns / 1000,
            c.host.queue_depth,
            description
        );
    }
    Ok(())
}

fn reproduce_ldc(args: ReproduceArgs) -> Result<()> {
    use flashstack_experiments::ldc::{reproduce, LdcOptions};
    if !(0.0..=4.0).contains(&args.aging) {
        anyhow::bail!("--aging {}: must be between 0 and 4", args.aging);
    }
    let options = LdcOptions {
        quick: args.quick,
        seed: args.seed,
        aging: args.aging,
        jobs: match args.jobs {
            Some(0) => anyhow::bail!("--jobs 0: must be at least 1"),
            Some(n) => n,
            None if args.quick => std::thread::available_parallelism().map_or(1, |n| n.get()),
            None => 1,
        },
    };
    let mut bar = progress::Bar::new(false);
    let results = reproduce(&options, &mut bar)?;
    bar.finish();
    print!("{}", results.render());
    if let Some(path) = args.json {
        std::fs::write(&path, serde_json::to_string_pretty(&results)? + "\n")?;
    }
    Ok(())
}

fn inspect(args: InspectArgs) -> Result<()> {
    let trace = run::load_trace(&args.file, &args.input)?;
    let summary = flashstack_trace::inspect_trace(&trace);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        println!("{}: {} trace", args.file.display(), trace.format);
        println!("{}", trace.parse_report);
        print!("{summary}");
    }
    Ok(())
}
