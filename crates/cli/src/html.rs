//! `--html FILE`: the run's JSON reports and configurations handed to `flashstack-html`.

use std::path::Path;

use anyhow::{Context, Result};
use flashstack_html::{render, Column, Report};
use serde::Serialize;

/// One column: its name, its configuration as TOML with the seed the run used, its report.
pub(crate) fn column(
    name: &str,
    config: &impl Serialize,
    report: &impl Serialize,
    seed: u64,
) -> Result<Column> {
    let toml = toml::to_string(config).with_context(|| format!("'{name}': configuration"))?;
    Ok(Column {
        name: name.to_string(),
        config_toml: format!("# run with --seed {seed}\n{toml}"),
        json: serde_json::to_value(report).with_context(|| format!("'{name}': report"))?,
    })
}

/// Renders the report and writes it to `path`.
pub(crate) fn write(path: &Path, title: &str, columns: &[Column]) -> Result<()> {
    // The binary as `flashstack`, wherever it was run from.
    let args: Vec<String> = std::env::args().skip(1).collect();
    let command = format!("flashstack {}", args.join(" "));
    let html = render(&Report {
        title,
        command: &command,
        columns,
    })
    .context("the HTML report")?;
    std::fs::write(path, html).with_context(|| format!("cannot write {}", path.display()))
}

/// The reproductions' report (and runs after them, when given), as HTML.
pub(crate) fn reproductions(
    title: &str,
    reproductions: &[flashstack_html::Reproduction],
    columns: &[Column],
    columns_heading: &str,
    columns_note: &str,
) -> Result<String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let command = format!("flashstack {}", args.join(" "));
    flashstack_html::render_reproductions(&flashstack_html::ReproductionReport {
        title,
        command: &command,
        reproductions,
        columns,
        columns_heading,
        columns_note,
    })
    .context("the HTML report")
}
