//! `flashstack run --workload PERSONA|FILE.fst`: a persona or a file-level trace on whole
//! stacks (page cache, F2FS, FTL, NAND), one column per stack configuration.

use std::path::Path;

use anyhow::{bail, Context, Result};
use flashstack_experiments::fullstack::{self, FullStackOptions, RecordBlock, StackRun};
use flashstack_report::{render_csv, render_json};
use flashstack_stack::StackConfig;
use flashstack_sweep::point::Loaded;
use flashstack_trace::builtin::Builtin;
use flashstack_workload::{text, FileTrace};

use crate::phone::StartChoice;
use crate::progress::Spinner;
use crate::run::{numbered, write_output, AgingShapeArg, PreconditionMethodArg, RunArgs};
use crate::{compare, device};
use flashstack_replay::DEFAULT_AGING_MAX;

/// Whether `--workload NAME` names a block-level workload (`ldc:*`) rather than a persona
/// or a file-level trace.
pub fn is_block_workload(name: &str) -> bool {
    name.parse::<Builtin>().is_ok()
        || (name.to_ascii_lowercase().starts_with("ldc:") && !Path::new(name).exists())
}

pub use flashstack_sweep::spec::resolve_stack;

/// The persona the whole-stack run uses when `run` is given no workload.
pub const DEFAULT_PERSONA: &str = "mix";

/// The persona or file trace `run` runs on whole stacks, if it does: `--workload` naming
/// one, or no workload at all and no block-level option (then [`DEFAULT_PERSONA`]).
pub fn whole_stack_workload(args: &RunArgs) -> Option<String> {
    if let Some(name) = &args.workload {
        return (!is_block_workload(name)).then(|| name.clone());
    }
    let block_input = args.trace.is_some() || args.synthetic.is_some();
    (!block_input && block_options(args).is_empty()).then(|| DEFAULT_PERSONA.to_string())
}

/// The block-level options given (flags only block-level workloads take).
fn block_options(args: &RunArgs) -> Vec<&'static str> {
    let given = [
        ("--precondition", args.precondition.is_some()),
        ("--no-precondition", args.no_precondition),
        ("--precondition-trace", args.precondition_trace.is_some()),
        (
            "--precondition-method",
            matches!(args.precondition_method, PreconditionMethodArg::Construct),
        ),
        (
            "--precondition-shape",
            args.precondition_shape != AgingShapeArg::Uniform4k,
        ),
        ("--aging-max", args.aging_max != DEFAULT_AGING_MAX),
        ("--image", args.image.is_some()),
        ("--contents", args.contents),
        ("--content-mix", args.content_mix.is_some()),
        ("--verify", args.verify),
        ("--wrap", args.wrap),
        ("--no-read-footprint", args.no_read_footprint),
        ("--processes", args.processes.is_some()),
        ("--repeat", args.repeat > 1),
    ];
    given
        .iter()
        .filter(|(_, set)| *set)
        .map(|(flag, _)| *flag)
        .collect()
}

fn refuse_block_options(args: &RunArgs) -> Result<()> {
    if let Some(flag) = block_options(args).first() {
        bail!(
            "{flag} applies to block-level workloads; personas and file-level traces run \
             on the whole stack from an app's setup or an empty file system"
        );
    }
    Ok(())
}

/// The stacks to run: `--stack` (default `default`), or one per `--device`/`--compare`
/// specification, each with the `--set` overrides on its device.
/// The stacks to run: `--stack` (else the `--phone`'s own stack, else `default`), or one
/// per `--device`/`--compare` spec resolved against it, each with the `--set` overrides.
fn stacks(args: &RunArgs, phone: Option<&StackConfig>) -> Result<Vec<StackConfig>> {
    let base = match (args.stack.as_deref(), phone) {
        (Some(name), _) => resolve_stack(name, &StackConfig::preset("default")?)
            .with_context(|| format!("--stack {name}"))?,
        (None, Some(stack)) => stack.clone(),
        (None, None) => StackConfig::preset("default")?,
    };
    let mut specs: Vec<&str> = args.device.iter().map(String::as_str).collect();
    specs.extend(args.compare.iter().map(String::as_str));
    let mut configs = Vec::new();
    if specs.is_empty() {
        configs.push(base.clone());
    }
    for spec in specs {
        configs.push(resolve_stack(spec, &base)?);
    }
    if !args.overrides.is_empty() {
        let overrides: Vec<&str> = args.overrides.iter().map(String::as_str).collect();
        for config in &mut configs {
            config.device = device::apply_overrides(&config.device, &overrides)?;
            config.name = format!("{}+{}", config.name, args.overrides.join("+"));
        }
    }
    Ok(configs)
}

pub fn run(args: &RunArgs, name: &str) -> Result<()> {
    refuse_block_options(args)?;
    if let Some(path) = &args.record_block {
        // Fails now, not after the phone has loaded (minutes on a large stack); the run
        // creates the file again (truncating this empty one) when its measurement starts.
        flashstack_trace::BlockTraceWriter::create(path, args.record_block_format, 0)?;
    }
    let loaded = Loaded::load(name, args.seed)?;
    let workload = loaded.workload();
    let starts = StartChoice::from_args(args.phone.as_deref(), args.fresh)?;
    let configs = stacks(args, starts.phone_stack())?;
    let mut runs: Vec<StackRun> = Vec::new();
    for (i, config) in configs.iter().enumerate() {
        let options = FullStackOptions {
            seed: args.seed,
            dwpd: args.dwpd,
            record: true,
            // The trace is kept only to be written out (`--record`); the report's summary
            // of it is built as the task runs.
            keep_trace: args.record.is_some(),
            strict: args.strict,
            start: starts
                .start_for(config, |c| crate::phone::builtin_phone(c, args.quiet))
                .with_context(|| format!("stack '{}'", config.name))?,
            image_out: args
                .image_out
                .as_deref()
                .map(|path| numbered(path, i, configs.len())),
            phone: None,
            check_reads: args.check_reads,
            cold_start: args.cold_start,
            record_block: match (&args.record_block, i) {
                (Some(path), 0) => Some(RecordBlock {
                    path: path.clone(),
                    format: args.record_block_format,
                }),
                _ => None,
            },
        };
        let spinner = Spinner::start(
            args.quiet,
            &format!("{} on {}", workload.name(), config.name),
        );
        let out = fullstack::run(config, &workload, &options);
        spinner.finish();
        let out = out?;
        if i == 0 {
            if let (Some(path), Some(trace)) = (&args.record, &out.trace) {
                write_trace(path, trace)?;
            }
        }
        if let Some(summary) = &out.block_trace {
            for line in [summary.dropped_line(), summary.before_origin_line()]
                .into_iter()
                .flatten()
            {
                eprintln!("{}: block trace: {line}", config.name);
            }
            if !args.quiet {
                let path = args.record_block.as_deref().unwrap_or(Path::new("-"));
                eprintln!(
                    "{}: block trace written to {}: {summary}",
                    config.name,
                    path.display()
                );
            }
        }
        if let (Some(reads), false) = (out.reads_checked, args.quiet) {
            eprintln!("{}: {reads} reads checked, all as written", config.name);
        }
        if let (Some(path), false) = (&options.image_out, args.quiet) {
            eprintln!("{}: F2FS image written to {}", config.name, path.display());
        }
        runs.push(out.run);
    }
    print!("{}", fullstack::render(&runs));
    let columns: Vec<_> = (configs.iter().zip(&runs))
        .map(|(config, run)| compare::Column {
            name: &config.name,
            config,
            report: run,
        })
        .collect();
    print!("{}", compare::no_effect_notes(&columns));
    if let Some(path) = &args.json {
        write_output(path, &render_json(&runs))?;
    }
    if let Some(path) = &args.csv {
        write_output(path, &render_csv(&runs))?;
    }
    if let Some(path) = &args.html {
        let columns = (configs.iter().zip(&runs))
            .map(|(config, run)| crate::html::column(&config.name, config, run, args.seed))
            .collect::<Result<Vec<_>>>()?;
        crate::html::write(path, &format!("{} on the stack", workload.name()), &columns)?;
    }
    Ok(())
}

fn write_trace(path: &Path, trace: &FileTrace) -> Result<()> {
    let file =
        std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut out = std::io::BufWriter::new(file);
    text::write_trace(&mut out, trace)
        .and_then(|()| std::io::Write::flush(&mut out))
        .with_context(|| format!("cannot write {}", path.display()))
}
