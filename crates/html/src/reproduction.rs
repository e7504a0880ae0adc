//! Reproductions of the seed papers: each paper's headline figures beside ours, as a table
//! with the gap and the document that explains it, and as bars (paper, ours) per figure;
//! then the reproduction's own terminal tables and its whole JSON, so nothing it measured
//! is left out of the report.

use serde_json::Value;

use crate::page::{escape, plots, table};
use crate::plot;
use crate::HtmlError;

/// One seed paper's reproduction.
pub struct Reproduction {
    /// Short name, as `reproduce NAME` takes it (`mobifs`).
    pub name: String,
    /// The paper, as its output names it (`MobiFS (USENIX ATC '15)`).
    pub title: String,
    /// The document that explains each gap (`docs/mobifs-reproduction.md`).
    pub doc: String,
    /// What the terminal showed.
    pub text: String,
    /// The reproduction's JSON; its `headlines` array holds the figures set beside the
    /// paper's, each `{figure, paper, ours, kind}` (`paper` null where the paper states no
    /// number).
    pub json: Value,
}

/// One headline figure as the report reads it from the JSON.
struct Figure {
    figure: String,
    paper: Option<f64>,
    ours: Option<f64>,
    kind: String,
}

fn figures(r: &Reproduction) -> Vec<Figure> {
    let Some(rows) = r.json.get("headlines").and_then(Value::as_array) else {
        return Vec::new();
    };
    rows.iter()
        .map(|row| Figure {
            figure: row["figure"].as_str().unwrap_or("?").to_string(),
            paper: row["paper"].as_f64().filter(|v| v.is_finite()),
            ours: row["ours"].as_f64().filter(|v| v.is_finite()),
            kind: row["kind"].as_str().unwrap_or("").to_string(),
        })
        .collect()
}

/// A value as a table cell; changes are fractions (−0.53 = −53 %).
fn cell(value: Option<f64>, kind: &str) -> String {
    match (value, kind) {
        (None, _) => "n/a".into(),
        (Some(v), "change") => format!("{:+.1}%", v * 100.0),
        (Some(v), "ratio") => format!("{v:.2}x"),
        (Some(v), unit) => format!("{v:.3} {unit}"),
    }
}

/// Ours minus the paper's, in percentage points for changes and as a relative difference
/// otherwise.
fn gap(f: &Figure) -> String {
    match (f.paper, f.ours, f.kind.as_str()) {
        (Some(p), Some(o), "change") => format!("{:+.1} pp", (o - p) * 100.0),
        (Some(p), Some(o), _) if p != 0.0 => format!("{:+.1}%", (o / p - 1.0) * 100.0),
        _ => "—".into(),
    }
}

/// The summary table of every reproduction's headline figures.
pub(crate) fn summary(reproductions: &[Reproduction]) -> String {
    let header = [
        "paper",
        "#",
        "figure",
        "paper's",
        "ours",
        "gap",
        "explained in",
    ]
    .map(String::from)
    .to_vec();
    let mut rows = Vec::new();
    for r in reproductions {
        for (i, f) in figures(r).iter().enumerate() {
            rows.push(vec![
                r.title.clone(),
                (i + 1).to_string(),
                f.figure.clone(),
                cell(f.paper, &f.kind),
                cell(f.ours, &f.kind),
                gap(f),
                r.doc.clone(),
            ]);
        }
    }
    format!(
        "<h2 id=\"summary\">Summary: the papers' figures and ours</h2>\n<p class=\"note\">A \
         gap is ours minus the paper's (percentage points for changes). Each document named \
         explains every gap over ten points; no model was tuned to meet a paper's figure.</p>\n{}",
        table(&header, &rows)
    )
}

/// One reproduction's section: its figures as bars (one plot per kind of figure), its
/// terminal output and its JSON.
pub(crate) fn section(r: &Reproduction) -> Result<String, HtmlError> {
    let all = figures(r);
    let mut out = format!(
        "<h2 id=\"{}\">{}</h2>\n<p class=\"note\">Gaps are explained in <code>{}</code>.</p>\n",
        escape(&r.name),
        escape(&r.title),
        escape(&r.doc)
    );
    let mut kinds: Vec<&str> = all.iter().map(|f| f.kind.as_str()).collect();
    kinds.dedup();
    kinds.sort_unstable();
    kinds.dedup();
    let mut items = Vec::new();
    for kind in kinds {
        let (numbers, values): (Vec<String>, Vec<Vec<f64>>) = all
            .iter()
            .enumerate()
            .filter(|(_, f)| f.kind == kind && f.ours.is_some())
            .map(|(i, f)| {
                let scale = if kind == "change" { 100.0 } else { 1.0 };
                let v = |x: Option<f64>| x.map_or(0.0, |x| x * scale);
                ((i + 1).to_string(), vec![v(f.paper), v(f.ours)])
            })
            .unzip();
        if numbers.is_empty() {
            continue;
        }
        let unit = match kind {
            "change" => "change (%)",
            "ratio" => "ratio (x)",
            unit => unit,
        };
        let name = format!("{}: {unit}", r.name);
        let columns = ["paper".to_string(), "ours".to_string()];
        let title = format!("{}: the paper's figures and ours, by #", r.name);
        items.push((name, plot::bars(&title, unit, &numbers, &columns, &values)?));
    }
    out.push_str(&plots(&items));
    out.push_str(&format!(
        "<details open><summary>terminal output</summary>\n<pre>{}</pre>\n</details>\n\
         <details><summary>JSON</summary>\n<pre>{}</pre>\n</details>\n",
        escape(&r.text),
        escape(&serde_json::to_string_pretty(&r.json).unwrap_or_default())
    ));
    Ok(out)
}
