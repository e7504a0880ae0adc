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
    /// A file-level trace (`#flashstack-filetrace 1`).
    file: PathBuf,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
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
    let trace = text::read_file(&args.file)?;
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
        println!("{}: file-level trace", args.file.display());
        print!("{}", summary.render());
    }
    Ok(())
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
        })
        .unwrap();
        std::fs::remove_file(&out).unwrap();
        let missing = analyze_file(AnalyzeArgs {
            file: sample("no-such-file.fst"),
            json: false,
        })
        .unwrap_err();
        assert!(format!("{missing:#}").contains("no-such-file.fst"));
    }
}
