//! `flashstack run --workload PERSONA|FILE.fst`: a persona or a file-level trace on whole
//! stacks (page cache, F2FS, FTL, NAND), one column per stack configuration.

use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use flashstack_experiments::fullstack::{self, FullStackOptions, StackRun, StackWorkload};
use flashstack_report::{render_csv, render_json};
use flashstack_stack::StackConfig;
use flashstack_trace::builtin::Builtin;
use flashstack_workload::{text, FileTrace};

use crate::phone::StartChoice;
use crate::progress::Spinner;
use crate::run::{numbered, write_output, RunArgs};
use crate::{compare, device};

/// Whether `--workload NAME` names a block-level workload (`ldc:*`) rather than a persona
/// or a file-level trace.
pub fn is_block_workload(name: &str) -> bool {
    name.parse::<Builtin>().is_ok()
        || (name.to_ascii_lowercase().starts_with("ldc:") && !Path::new(name).exists())
}

/// The stack a specification names: a stack preset or stack TOML file, either followed by
/// `+key=value` overrides of the stack's fields (`default+fs.mount.lfs_mode=true`,
/// `ufs31+cache.dirty_ratio_percent=40`, `default+device.ftl.gc.policy=cost-benefit`); or
/// a device specification (preset, device TOML, `+key=value` overrides of device fields)
/// put under `base`.
pub fn resolve_stack(spec: &str, base: &StackConfig) -> Result<StackConfig> {
    let (head, overrides) = match spec.split_once('+') {
        Some((head, rest)) => (head, rest.split('+').collect::<Vec<_>>()),
        None => (spec, Vec::new()),
    };
    // `ldc-emmc` and `ufs31` name both a stack and a device: overrides of device fields
    // (`ufs31+nand.geometry...`) mean the device under the default stack.
    let stack_keys = overrides.iter().all(|o| {
        let key = o.split(['.', '=']).next().unwrap_or_default();
        matches!(key, "device" | "fs" | "cache" | "idle_gap_ns" | "seed")
    });
    let base_stack = if stack_keys { stack_base(head)? } else { None };
    let Some(mut config) = base_stack else {
        let device = device::resolve(spec)?;
        return Ok(StackConfig {
            name: spec.to_string(),
            device,
            ..base.clone()
        });
    };
    if !overrides.is_empty() {
        let text = device::override_toml(&config, &overrides)
            .with_context(|| format!("stack '{spec}'"))?;
        let name = format!("{}+{}", config.name, overrides.join("+"));
        config = StackConfig::from_toml_str(&text, spec).map_err(|e| anyhow!("{e}"))?;
        config.name = name;
    }
    Ok(config)
}

/// A stack preset or a stack TOML file (one with a `[device]` table); `None` if `head`
/// names neither.
fn stack_base(head: &str) -> Result<Option<StackConfig>> {
    if let Ok(config) = StackConfig::preset(head) {
        return Ok(Some(config));
    }
    let path = Path::new(head);
    if !(path.extension().is_some_and(|e| e == "toml") && path.exists()) {
        return Ok(None);
    }
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let is_stack = text
        .lines()
        .any(|l| l.trim() == "[device]" || l.trim_start().starts_with("[device."));
    if !is_stack {
        return Ok(None);
    }
    StackConfig::from_toml_str(&text, head)
        .map(Some)
        .map_err(|e| anyhow!("{e}"))
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

enum Loaded {
    Persona(Box<dyn flashstack_apps::Persona>),
    Trace(String, FileTrace),
}

fn load(name: &str, seed: u64) -> Result<Loaded> {
    if let Some(personality) = name.strip_prefix("filebench:") {
        use flashstack_workload::filebench::{generate, FilebenchConfig, Personality};
        let p = Personality::from_name(personality).ok_or_else(|| {
            anyhow::anyhow!(
                "--workload {name}: no such filebench personality (known: {})",
                Personality::ALL.map(|p| p.name()).join(", ")
            )
        })?;
        return Ok(Loaded::Trace(
            name.to_string(),
            generate(p, &FilebenchConfig::default(), seed),
        ));
    }
    let path = Path::new(name);
    if path.is_file() {
        let trace = text::read_file(path)?;
        return Ok(Loaded::Trace(name.to_string(), trace));
    }
    match flashstack_apps::persona(name) {
        Ok(persona) => Ok(Loaded::Persona(persona)),
        // Persona names have no '/' or '.': this one names a file.
        Err(_) if path.exists() => {
            bail!("--workload {name}: not a file-level trace (a directory or special file)")
        }
        Err(_) if name.contains(['/', '.']) => bail!(
            "--workload {name}: no such file, and not a persona (`flashstack workload list`); \
             `flashstack run --workload PERSONA --record {name}` writes a file-level trace"
        ),
        Err(e) => bail!("--workload: {e} (or a block workload ldc:*, or a .fst file)"),
    }
}

pub fn run(args: &RunArgs, name: &str) -> Result<()> {
    refuse_block_options(args)?;
    let loaded = load(name, args.seed)?;
    let workload = match &loaded {
        Loaded::Persona(p) => StackWorkload::Persona(p.as_ref()),
        Loaded::Trace(name, trace) => StackWorkload::Trace {
            name: name.clone(),
            trace,
        },
    };
    let starts = StartChoice::from_args(args.phone.as_deref(), args.fresh)?;
    let configs = stacks(args, starts.phone_stack())?;
    let mut runs: Vec<StackRun> = Vec::new();
    for (i, config) in configs.iter().enumerate() {
        let options = FullStackOptions {
            seed: args.seed,
            dwpd: args.dwpd,
            record: true,
            strict: args.strict,
            start: starts
                .start_for(config, args.quiet)
                .with_context(|| format!("stack '{}'", config.name))?,
            image_out: args
                .image_out
                .as_deref()
                .map(|path| numbered(path, i, configs.len())),
            phone: None,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stack_specs_resolve_presets_overrides_and_devices() {
        let base = StackConfig::preset("default").unwrap();
        let lfs = resolve_stack("default+fs.mount.lfs_mode=true", &base).unwrap();
        assert!(lfs.fs.mount.lfs_mode);
        assert_eq!(lfs.name, "default+fs.mount.lfs_mode=true");
        // Device fields under a name that is both a stack and a device preset.
        let small = resolve_stack("ufs31+nand.geometry.blocks_per_plane=64", &base).unwrap();
        assert_eq!(small.device.nand.geometry.blocks_per_plane, 64);
        assert_eq!(small.cache, base.cache);
        // A device preset alone goes under the base stack.
        let pm = resolve_stack("ldc-emmc-pm", &base).unwrap();
        assert_eq!(pm.fs, base.fs);
        assert!(pm.device.ftl.compression.is_some());
        let err = resolve_stack("default+cache.nonsense=1", &base).unwrap_err();
        assert!(
            format!("{err:#}").contains("no field 'cache.nonsense'"),
            "{err:#}"
        );
        assert!(resolve_stack("no-such-thing", &base).is_err());
    }
}
