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
mod sections;

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
    #[error("a report needs at least one column")]
    NoColumns,
}

/// The report as one HTML document.
pub fn render(report: &Report) -> Result<String, HtmlError> {
    if report.columns.is_empty() {
        return Err(HtmlError::NoColumns);
    }
    let mut body = String::new();
    body.push_str(&sections::summary(report.columns));
    body.push_str(&sections::latency(report.columns)?);
    body.push_str(&sections::over_time(report.columns)?);
    body.push_str(&sections::bytes_by_layer(report.columns)?);
    body.push_str(&sections::wear(report.columns)?);
    body.push_str(&sections::energy(report.columns)?);
    body.push_str(&sections::configuration(report.columns));
    Ok(page::document(report.title, report.command, &body))
}

#[cfg(test)]
mod tests;
