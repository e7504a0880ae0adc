//! `flashstack run --workload PERSONA|FILE.fst`: a persona or a file-level trace on whole
//! stacks (page cache, F2FS, FTL, NAND), one column per stack configuration.

use std::io::IsTerminal;
use std::path::Path;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use flashstack_experiments::fullstack::{self, FullStackOptions, StackRun, StackWorkload};
use flashstack_report::{render_csv, render_json};
use flashstack_stack::StackConfig;
use flashstack_trace::builtin::Builtin;
use flashstack_workload::{text, FileTrace};
use indicatif::{ProgressBar, ProgressStyle};

use crate::device;
use crate::run::{write_output, RunArgs};

/// Whether `--workload NAME` names a block-level workload (`ldc:*`) rather than a persona
/// or a file-level trace.
pub fn is_block_workload(name: &str) -> bool {
    name.parse::<Builtin>().is_ok()
        || (name.to_ascii_lowercase().starts_with("ldc:") && !Path::new(name).exists())
}

/// The stack a specification names: a stack preset, a stack TOML file, or a device
/// specification (preset, device TOML, `+key=value` overrides) put under `base`.
pub fn resolve_stack(spec: &str, base: &StackConfig) -> Result<StackConfig> {
    if let Ok(config) = StackConfig::preset(spec) {
        return Ok(config);
    }
    let path = Path::new(spec);
    if path.extension().is_some_and(|e| e == "toml") && path.exists() {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        if text
            .lines()
            .any(|l| l.trim() == "[device]" || l.trim_start().starts_with("[device."))
        {
            return StackConfig::from_toml_str(&text, spec).map_err(|e| anyhow!("{e}"));
        }
    }
    let device = device::resolve(spec)?;
    Ok(StackConfig {
        name: spec.to_string(),
        device,
        ..base.clone()
    })
}

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
        ("--image", args.image.is_some()),
        ("--image-out", args.image_out.is_some()),
        ("--contents", args.contents),
        ("--content-mix", args.content_mix.is_some()),
        ("--verify", args.verify),
        ("--wrap", args.wrap),
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
fn stacks(args: &RunArgs) -> Result<Vec<StackConfig>> {
    let base_name = args.stack.as_deref().unwrap_or("default");
    let base = resolve_stack(base_name, &StackConfig::preset("default")?)
        .with_context(|| format!("--stack {base_name}"))?;
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

enum Loaded {
    Persona(Box<dyn flashstack_apps::Persona>),
    Trace(String, FileTrace),
}

fn load(name: &str) -> Result<Loaded> {
    let path = Path::new(name);
    if path.is_file() {
        let trace = text::read_file(path)?;
        return Ok(Loaded::Trace(name.to_string(), trace));
    }
    flashstack_apps::persona(name)
        .map(Loaded::Persona)
        .map_err(|e| anyhow!("--workload: {e} (or a block workload ldc:*, or a .fst file)"))
}

pub fn run(args: &RunArgs, name: &str) -> Result<()> {
    refuse_block_options(args)?;
    let loaded = load(name)?;
    let workload = match &loaded {
        Loaded::Persona(p) => StackWorkload::Persona(p.as_ref()),
        Loaded::Trace(name, trace) => StackWorkload::Trace {
            name: name.clone(),
            trace,
        },
    };
    let options = FullStackOptions {
        seed: args.seed,
        dwpd: args.dwpd,
        record: true,
    };
    let mut runs: Vec<StackRun> = Vec::new();
    for (i, config) in stacks(args)?.iter().enumerate() {
        let spinner = spinner(
            args.quiet,
            &format!("{} on {}", workload.name(), config.name),
        );
        let out = fullstack::run(config, &workload, &options);
        if let Some(s) = spinner {
            s.finish_and_clear();
        }
        let out = out?;
        if i == 0 {
            if let (Some(path), Some(trace)) = (&args.record, &out.trace) {
                write_trace(path, trace)?;
            }
        }
        runs.push(out.run);
    }
    print!("{}", fullstack::render(&runs));
    if let Some(path) = &args.json {
        write_output(path, &render_json(&runs))?;
    }
    if let Some(path) = &args.csv {
        write_output(path, &render_csv(&runs))?;
    }
    Ok(())
}

fn spinner(quiet: bool, message: &str) -> Option<ProgressBar> {
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let s = ProgressBar::new_spinner();
    s.set_style(ProgressStyle::with_template("{spinner} {msg} ({elapsed})").ok()?);
    s.set_message(message.to_string());
    s.enable_steady_tick(Duration::from_millis(200));
    Some(s)
}

fn write_trace(path: &Path, trace: &FileTrace) -> Result<()> {
    let file =
        std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut out = std::io::BufWriter::new(file);
    text::write_trace(&mut out, trace)
        .and_then(|()| std::io::Write::flush(&mut out))
        .with_context(|| format!("cannot write {}", path.display()))
}
