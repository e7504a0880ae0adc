//! One self-contained HTML file of a run's results, every column side by side: the
//! configuration that repeats each column, latency CDFs per request kind and per user
//! operation, the erase-count histogram with the lifetime formula's inputs, where each
//! written byte came from per layer, and energy. Plots are inline SVG (plotters), so the
//! file needs no network and no script; the same results give the same bytes.
//!
//! The input is each column's JSON report (what `--json` writes), so the report shows
//! whatever the run measured and any layer that adds figures to the JSON can be drawn here
//! without a second data path.

mod page;
mod plot;
mod reproduction;
mod sections;

pub use reproduction::Reproduction;

use serde_json::Value;

/// One column of the report: a stack (or device) and what its run measured.
pub struct Column {
    /// The column's name as the terminal table shows it (e.g. `default`, `medfs`).
    pub name: String,
    /// The exact configuration that repeats the run (the stack's TOML with its seed).
    pub config_toml: String,
    /// The run's JSON report.
    pub json: Value,
}

/// A whole report.
pub struct Report<'a> {
    pub title: &'a str,
    /// The command line that produced it.
    pub command: &'a str,
    pub columns: &'a [Column],
}

#[derive(Debug, thiserror::Error)]
pub enum HtmlError {
    #[error("drawing a plot: {0}")]
    Plot(String),
    #[error("a report needs at least one column or reproduction")]
    NoColumns,
}

/// The report as one HTML document.
pub fn render(report: &Report) -> Result<String, HtmlError> {
    if report.columns.is_empty() {
        return Err(HtmlError::NoColumns);
    }
    let body = columns_body(report.columns)?;
    Ok(page::document(report.title, report.command, &body))
}

/// A report of reproductions: the summary table of every paper's figures beside ours, a
/// section per paper, then (when given) runs side by side as [`render`] draws them, under
/// their own heading.
pub struct ReproductionReport<'a> {
    pub title: &'a str,
    pub command: &'a str,
    pub reproductions: &'a [Reproduction],
    /// Runs shown after the reproductions (`reproduce all`'s composed stack); may be empty.
    pub columns: &'a [Column],
    /// What the runs are, shown above them.
    pub columns_heading: &'a str,
    /// A table of the runs as the terminal shows it (preformatted), shown under the heading.
    pub columns_note: &'a str,
}

/// The reproductions' report as one HTML document.
pub fn render_reproductions(report: &ReproductionReport) -> Result<String, HtmlError> {
    if report.reproductions.is_empty() && report.columns.is_empty() {
        return Err(HtmlError::NoColumns);
    }
    let mut body = reproduction::summary(report.reproductions);
    for r in report.reproductions {
        body.push_str(&reproduction::section(r)?);
    }
    if !report.columns.is_empty() {
        body.push_str(&format!(
            "<h2 id=\"runs\">{}</h2>\n",
            page::escape(report.columns_heading)
        ));
        if !report.columns_note.is_empty() {
            body.push_str(&format!(
                "<pre>{}</pre>\n",
                page::escape(report.columns_note.trim_matches('\n'))
            ));
        }
        body.push_str(&columns_body(report.columns)?);
    }
    Ok(page::document(report.title, report.command, &body))
}

/// Every section of runs side by side.
fn columns_body(columns: &[Column]) -> Result<String, HtmlError> {
    let mut body = String::new();
    body.push_str(&sections::summary(columns));
    body.push_str(&sections::latency(columns)?);
    body.push_str(&sections::over_time(columns)?);
    body.push_str(&sections::bytes_by_layer(columns)?);
    body.push_str(&sections::wear(columns)?);
    body.push_str(&sections::energy(columns)?);
    body.push_str(&sections::configuration(columns));
    Ok(body)
}

#[cfg(test)]
mod tests;
