//! The `flashstack` command line: a thin layer that maps flags onto the configuration
//! structs of the library crates, runs them, and prints their reports.

mod bench;
mod blocktrace;
mod compare;
mod device;
mod filetrace;
mod frag;
mod fs;
mod html;
mod janusd_cmd;
mod mount;
mod phone;
mod progress;
mod reproduce;
mod reproduce_all;
mod reproduce_coco;
mod reproduce_medfs;
mod reproduce_mobifs;
mod run;
mod stackrun;
mod sweep;
mod workload;

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Parser, Subcommand};
use flashstack_stack::StackConfig;

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
    /// Run a workload on one or more configurations side by side: by default the app
    /// persona mix on the whole default stack; also any persona or file-level trace on
    /// whole stacks (--workload), block traces (--trace), synthetic (--synthetic) and
    /// built-in block workloads (--workload ldc:*) on devices.
    Run(run::RunArgs),
    /// Sweep a grid of parameters (workloads × stacks × overrides × starts × seeds): each
    /// point a whole-stack run, the results one CSV/JSON table with a column per parameter.
    Sweep(sweep::SweepArgs),
    /// List the built-in device and stack presets, or print one as TOML.
    Presets(PresetArgs),
    /// Measure replay speed and memory (wall clock).
    Bench(bench::BenchArgs),
    /// Mount the emulated stack with FUSE (block-file mode: --block).
    Mount(mount::MountArgs),
    /// Reproduce a seed paper's evaluation, with the paper's figures beside ours.
    Reproduce {
        #[command(subcommand)]
        paper: reproduce::ReproduceCommand,
    },
    /// Traces: inspect a block trace; import MobiGen or strace output as a file-level
    /// trace.
    Trace {
        #[command(subcommand)]
        command: TraceCommand,
    },
    /// Workloads: list the built-in block workloads and app personas; analyse a persona
    /// or a file-level trace (the MedFS table's columns).
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
    /// The built-in block workloads (the paper's figures beside the generated stream's)
    /// and the app personas.
    List(workload::ListArgs),
    /// The MedFS table's columns for a file-level trace: volume, small-file share, update
    /// ratio and difference, syncs, file types.
    Analyze(filetrace::AnalyzeArgs),
}

#[derive(Args)]
struct PresetArgs {
    /// Print this preset as a TOML file to start your own from: the device preset NAME,
    /// or the stack preset NAME if no device has that name (`default`).
    #[arg(long, value_name = "NAME")]
    toml: Option<String>,
    /// With --toml: print the stack preset NAME (ldc-emmc and ufs31 name both a device and
    /// a stack).
    #[arg(long, requires = "toml")]
    stack: bool,
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
    /// The block trace to summarise (format detected from its first lines, or --format).
    file: PathBuf,
    #[command(flatten)]
    input: run::TraceInput,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// Large zeroed tables as fresh mappings (a device's tables are mostly never written):
/// see `FreshZeroedTables`.
#[global_allocator]
static ALLOCATOR: flashstack_sim::memory::FreshZeroedTables =
    flashstack_sim::memory::FreshZeroedTables;

fn main() {
    exit_quietly_on_closed_pipe();
    flashstack_sim::memory::tune_allocator();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run::run(args),
        Command::Sweep(args) => sweep::sweep(args),
        Command::Presets(args) => presets(args),
        Command::Bench(args) => bench::bench(args),
        Command::Mount(args) => mount::mount(args),
        Command::Reproduce { paper } => reproduce::run(paper),
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
        eprintln!("error: {}", error_text(&error));
        std::process::exit(1);
    }
}

/// A command whose output goes to a pipe that closed early (`flashstack fs ls IMG / |
/// head -1`) stops at once without a word, as `cat` and `ls` do. Rust starts programs
/// with SIGPIPE ignored, so every `print!` to a closed pipe would panic ("failed printing
/// to stdout") and every `write` would return an error; restoring the default disposition
/// once, here, covers every command and every way of printing. Child processes are
/// unaffected (the standard library resets SIGPIPE for them anyway).
fn exit_quietly_on_closed_pipe() {
    // SAFETY: called first thing in `main`, before any thread exists; `signal` with the
    // default disposition touches no memory of ours.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// The error and its causes, joined by ": ". A cause whose text the level above already
/// ends with is left out: many error types embed their source in their own message (`cannot
/// read {path}: {source}`) and also return it as `source()`, and anyhow's `{:#}` would
/// print such a cause twice ("No such file or directory (os error 2): No such file or
/// directory (os error 2)"). This is the one place the binary prints an error chain.
fn error_text(error: &anyhow::Error) -> String {
    let mut text = String::new();
    let mut above = String::new();
    for cause in error.chain() {
        let message = cause.to_string();
        if message.is_empty() || above.ends_with(&message) {
            above = message;
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&message);
        above = message;
    }
    text
}

fn presets(args: PresetArgs) -> Result<()> {
    if let Some(name) = args.toml {
        let is_device = flashstack_ftl::presets::preset(&name).is_some();
        if args.stack || (!is_device && StackConfig::preset(&name).is_ok()) {
            print!("{}", StackConfig::preset(&name)?.to_toml_string());
        } else {
            print!("{}", device::resolve(&name)?.to_toml());
        }
        return Ok(());
    }
    device_presets()?;
    println!();
    stack_presets()
}

fn device_presets() -> Result<()> {
    println!("Devices (--device, --compare; `presets --toml NAME` prints one as TOML):");
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

fn stack_presets() -> Result<()> {
    println!(
        "Stacks: page cache, F2FS and a device (--stack, and --device/--compare with \
         personas and file-level traces; `presets --toml NAME --stack` prints one):"
    );
    println!("{:<15} {:<15} description", "stack", "device");
    for (name, description) in StackConfig::PRESETS {
        let config = StackConfig::preset(name)?;
        println!("{name:<15} {:<15} {description}", config.device.name);
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

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    /// Every subcommand says what it does and every argument, positional or flag, says
    /// what it takes: `--help` is the first thing a new user reads.
    #[test]
    fn every_subcommand_and_argument_has_help() {
        let mut missing = Vec::new();
        let mut command = Cli::command();
        command.build();
        walk(&command, "flashstack", &mut missing);
        assert!(missing.is_empty(), "no help text: {missing:#?}");
    }

    fn walk(command: &clap::Command, path: &str, missing: &mut Vec<String>) {
        if command.get_about().is_none() {
            missing.push(path.to_string());
        }
        for arg in command.get_arguments() {
            let id = arg.get_id().as_str();
            if matches!(id, "help" | "version") {
                continue;
            }
            if arg.get_help().is_none() && arg.get_long_help().is_none() {
                missing.push(format!("{path} {id}"));
            }
        }
        for sub in command.get_subcommands() {
            if sub.get_name() != "help" {
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
    }

    #[test]
    fn error_chains_print_each_cause_once() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "No such file");
        // A message that embeds its source, as `cannot read {path}: {source}` does.
        #[derive(Debug)]
        struct Embeds(std::io::Error);
        impl std::fmt::Display for Embeds {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "cannot read x.img: {}", self.0)
            }
        }
        impl std::error::Error for Embeds {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let error = anyhow::Error::new(Embeds(io)).context("mounting x.img");
        assert_eq!(
            error_text(&error),
            "mounting x.img: cannot read x.img: No such file"
        );
        // A source the message does not embed is still shown.
        let plain = anyhow::anyhow!("inner").context("outer");
        assert_eq!(error_text(&plain), "outer: inner");
    }
}
