//! File-level traces: `trace import --from mobigen|strace IN OUT` and
//! `workload analyze FILE` (the MedFS table's columns). The format is in
//! `docs/file-traces.md`.

use std::io::{BufReader, BufWriter, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use flashstack_workload::{analyze, mobigen, strace, text};

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ImportFormat {
    /// MobiGen syscall scripts (`thread time_us syscall args…`), as Mobibench replays.
    Mobigen,
    /// `strace -f -tt -e trace=desc,file` output (`-ttt`, `-T`, `-y` also read).
    Strace,
}

#[derive(Args)]
pub struct ImportArgs {
    /// The input's format.
    #[arg(long = "from", value_enum)]
    from: ImportFormat,
    /// The trace to import.
    input: PathBuf,
    /// Where to write the file-level trace.
    output: PathBuf,
}

#[derive(Args)]
pub struct AnalyzeArgs {
    /// A file-level trace (`#flashstack-filetrace 1`) or a persona's name (its task is
    /// run and recorded; `workload list` names them).
    file: PathBuf,
    /// Seed of a persona's run.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Run a persona on a file system with atomic writes, so that SQLite commits
    /// rollback-journal transactions by batch atomic write (as Android on F2FS).
    #[arg(long)]
    atomic_write: bool,
}

pub fn import(args: ImportArgs) -> Result<()> {
    let file = std::fs::File::open(&args.input)
        .with_context(|| format!("cannot open {}", args.input.display()))?;
    let name = args.input.display().to_string();
    let input = BufReader::new(file);
    let (trace, report) = match args.from {
        ImportFormat::Mobigen => mobigen::import(input, &name)?,
        ImportFormat::Strace => strace::import(input, &name)?,
    };
    let out = std::fs::File::create(&args.output)
        .with_context(|| format!("cannot create {}", args.output.display()))?;
    let mut out = BufWriter::new(out);
    text::write_trace(&mut out, &trace)
        .and_then(|()| out.flush())
        .with_context(|| format!("cannot write {}", args.output.display()))?;
    eprintln!("{name}: {report}");
    Ok(())
}

pub fn analyze_file(args: AnalyzeArgs) -> Result<()> {
    let name = args.file.to_string_lossy().into_owned();
    let (trace, what) = if !args.file.exists() && flashstack_apps::persona(&name).is_ok() {
        (
            persona_trace(&name, args.seed, args.atomic_write)?,
            "persona task, recorded",
        )
    } else {
        (text::read_file(&args.file)?, "file-level trace")
    };
    let summary = analyze(&trace).map_err(|e| {
        anyhow::anyhow!(
            "{}: field '{}': {}",
            args.file.display(),
            e.field,
            e.message
        )
    })?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        println!("{}: {what}", args.file.display());
        print!("{}", summary.render());
    }
    Ok(())
}

/// A persona's task as recorded on the in-memory file system: the app's file calls do not
/// depend on the file system below, only their times do (and, with `atomic_write`,
/// whether SQLite may replace its journal by an atomic write).
fn persona_trace(
    name: &str,
    seed: u64,
    atomic_write: bool,
) -> Result<flashstack_workload::FileTrace> {
    let persona = flashstack_apps::persona(name)?;
    let config = flashstack_sqlvfs::MemFsConfig {
        atomic_write,
        ..flashstack_sqlvfs::MemFsConfig::default()
    };
    let fs = flashstack_sqlvfs::MemFs::new(seed, config);
    let out = flashstack_apps::run_with(
        persona.as_ref(),
        Box::new(fs),
        seed,
        &flashstack_apps::RunOptions::default(),
    );
    if let Some(e) = out.error {
        anyhow::bail!("persona '{name}': {e}");
    }
    out.trace
        .ok_or_else(|| anyhow::anyhow!("persona '{name}': nothing recorded"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../workload/tests/data")
            .join(name)
    }

    #[test]
    fn import_writes_the_golden_trace_and_analyze_reads_it() {
        let out = std::env::temp_dir().join(format!("fs-import-{}.fst", std::process::id()));
        import(ImportArgs {
            from: ImportFormat::Mobigen,
            input: sample("sample.mobigen"),
            output: out.clone(),
        })
        .unwrap();
        let written = std::fs::read_to_string(&out).unwrap();
        assert_eq!(
            written,
            std::fs::read_to_string(sample("sample.mobigen.fst")).unwrap()
        );
        analyze_file(AnalyzeArgs {
            file: out.clone(),
            json: true,
            seed: 1,
            atomic_write: false,
        })
        .unwrap();
        std::fs::remove_file(&out).unwrap();
        let missing = analyze_file(AnalyzeArgs {
            file: sample("no-such-file.fst"),
            json: false,
            seed: 1,
            atomic_write: false,
        })
        .unwrap_err();
        assert!(format!("{missing:#}").contains("no-such-file.fst"));
    }
}
