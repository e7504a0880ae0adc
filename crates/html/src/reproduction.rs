//! Reproductions of the seed papers: each paper's headline figures beside ours, as a table
//! with the gap and the document that explains it, and as bars (paper, ours) per figure;
//! then each paper figure redrawn from our measurements beside the paper's values (its
//! JSON's `figures`, `flashstack_experiments::paper::PaperFigure`) with the gap and where
//! it is explained, then the reproduction's own terminal tables and its whole JSON, so
//! nothing it measured is left out of the report.

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
    out.push_str(&paper_figures(r)?);
    out.push_str(&format!(
        "<details open><summary>terminal output</summary>\n<pre>{}</pre>\n</details>\n\
         <details><summary>JSON</summary>\n<pre>{}</pre>\n</details>\n",
        escape(&r.text),
        escape(&serde_json::to_string_pretty(&r.json).unwrap_or_default())
    ));
    Ok(out)
}

/// One paper figure as the report reads it from the JSON (`figures`).
struct PaperPlot {
    figure: String,
    title: String,
    lines: bool,
    x_desc: String,
    y_desc: String,
    categories: Vec<String>,
    /// (name, the paper's?, a value per category; NaN where none)
    series: Vec<(String, bool, Vec<f64>)>,
    /// (label, vertical?, the paper's, ours)
    references: Vec<(String, bool, f64, f64)>,
    caption: String,
    explained: String,
}

fn text(v: &Value, key: &str) -> String {
    v[key].as_str().unwrap_or("").to_string()
}

/// A number from the JSON; null (a NaN written out) is NaN.
fn number(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

fn paper_plots(r: &Reproduction) -> Vec<PaperPlot> {
    let Some(rows) = r.json.get("figures").and_then(Value::as_array) else {
        return Vec::new();
    };
    let list = |v: &Value| v.as_array().cloned().unwrap_or_default();
    rows.iter()
        .map(|f| PaperPlot {
            figure: text(f, "figure"),
            title: text(f, "title"),
            lines: f["style"] == "lines",
            x_desc: text(f, "x_desc"),
            y_desc: text(f, "y_desc"),
            categories: list(&f["categories"])
                .iter()
                .map(|c| c.as_str().unwrap_or("?").to_string())
                .collect(),
            series: list(&f["series"])
                .iter()
                .map(|s| {
                    let values = list(&s["values"]).iter().map(number).collect();
                    (text(s, "name"), s["origin"] == "paper", values)
                })
                .collect(),
            references: list(&f["references"])
                .iter()
                .map(|x| {
                    (
                        text(x, "label"),
                        x["axis"] == "x",
                        number(&x["paper"]),
                        number(&x["ours"]),
                    )
                })
                .collect(),
            caption: text(f, "caption"),
            explained: text(f, "explained"),
        })
        .collect()
}

/// The ours series a paper series sits beside: `paper: X` beside `X`, `paper` beside
/// `ours`.
fn counterpart(paper_name: &str) -> &str {
    match paper_name.strip_prefix("paper: ") {
        Some(name) => name,
        None => "ours",
    }
}

fn number_cell(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.3}")
    } else {
        "n/a".into()
    }
}

/// Ours minus the paper's in the figure's unit, and relative where it means something.
fn difference(paper: f64, ours: f64) -> String {
    if !(paper.is_finite() && ours.is_finite()) {
        return "—".into();
    }
    let d = ours - paper;
    if paper != 0.0 && paper.signum() == ours.signum() {
        format!("{d:+.3} ({:+.1}%)", (ours / paper - 1.0) * 100.0)
    } else {
        format!("{d:+.3}")
    }
}

/// Each value the paper gives in a figure beside ours: per category of a paper series,
/// then per reference line.
fn gaps(p: &PaperPlot) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for (name, _, paper) in p.series.iter().filter(|s| s.1) {
        let ours = p
            .series
            .iter()
            .find(|s| !s.1 && s.0 == counterpart(name))
            .map(|s| &s.2);
        for (i, v) in paper.iter().enumerate().filter(|(_, v)| v.is_finite()) {
            let o = ours.and_then(|o| o.get(i).copied()).unwrap_or(f64::NAN);
            rows.push(vec![
                format!(
                    "{} ({})",
                    p.categories.get(i).map_or("?", |c| c.as_str()),
                    counterpart(name)
                ),
                number_cell(*v),
                number_cell(o),
                difference(*v, o),
            ]);
        }
    }
    for (label, _, paper, ours) in &p.references {
        rows.push(vec![
            label.clone(),
            number_cell(*paper),
            number_cell(*ours),
            difference(*paper, *ours),
        ]);
    }
    rows
}

/// The paper figures of one reproduction: each a plot (ours in full colour, the paper's
/// values lighter and outlined or dashed, its headlines as dashed black lines), its
/// caption, the gaps and the document that explains them.
fn paper_figures(r: &Reproduction) -> Result<String, HtmlError> {
    let all = paper_plots(r);
    if all.is_empty() {
        return Ok(String::new());
    }
    let mut out = String::from(
        "<h3>The paper's figures redrawn: ours beside the paper's</h3>\n<div class=\"plots\">\n",
    );
    for (i, p) in all.iter().enumerate() {
        let svg = paper_svg(p)?;
        let header = ["paper's value", "paper", "ours", "gap (ours − paper)"]
            .map(String::from)
            .to_vec();
        let gaps = gaps(p);
        let gap_table = if gaps.is_empty() {
            String::new()
        } else {
            table(&header, &gaps)
        };
        out.push_str(&format!(
            "<figure data-plot=\"{name}: {fig}\" data-paper-figure id=\"{name}-figure-{n}\" \
             data-ours=\"{ours}\" data-paper=\"{paper}\">\n{svg}\n\
             <figcaption><b>{fig}</b> ({title}). {caption} Gap explained in <code>{explained}</code>.\n\
             {gap_table}</figcaption>\n</figure>\n",
            name = escape(&r.name),
            fig = escape(&p.figure),
            n = i + 1,
            ours = p.series.iter().filter(|s| !s.1).count(),
            paper = paper_values(p),
            svg = svg.trim(),
            title = escape(&p.title),
            caption = escape(&p.caption),
            explained = escape(&p.explained),
        ));
    }
    out.push_str("</div>\n");
    Ok(out)
}

/// How many values of the paper a figure draws: paper bars or points, and reference lines.
fn paper_values(p: &PaperPlot) -> usize {
    let points = p.series.iter().filter(|s| s.1).flat_map(|s| &s.2);
    let lines = p.references.iter().map(|r| &r.2);
    points.chain(lines).filter(|v| v.is_finite()).count()
}

/// A paper figure's plot: grouped bars, or lines over numeric categories.
fn paper_svg(p: &PaperPlot) -> Result<String, HtmlError> {
    // A paper series takes the colour of the series it sits beside.
    let colour_of = |name: &str, paper: bool, own: usize| {
        let ours = p
            .series
            .iter()
            .filter(|s| !s.1)
            .position(|s| s.0 == counterpart(name));
        match (paper, ours) {
            (true, Some(c)) => c,
            _ => own,
        }
    };
    let mut own = 0;
    let looks: Vec<(String, plot::Look)> = p
        .series
        .iter()
        .map(|(name, paper, _)| {
            let colour = colour_of(name, *paper, own);
            if !paper {
                own += 1;
            }
            (
                name.clone(),
                plot::Look {
                    colour,
                    paper: *paper,
                },
            )
        })
        .collect();
    let references: Vec<plot::RefLine> = p
        .references
        .iter()
        .map(|(label, vertical, paper, _)| plot::RefLine {
            label,
            value: *paper,
            vertical: *vertical,
        })
        .collect();
    if p.lines {
        let x: Vec<f64> = p
            .categories
            .iter()
            .map(|c| c.parse().unwrap_or(f64::NAN))
            .collect();
        let series: Vec<plot::Series> = p
            .series
            .iter()
            .zip(&looks)
            .map(|((name, _, values), (_, look))| plot::Series {
                column: look.colour,
                name,
                points: x.iter().copied().zip(values.iter().copied()).collect(),
            })
            .collect();
        let paper: Vec<bool> = looks.iter().map(|l| l.1.paper).collect();
        return plot::lines_with(
            &p.title,
            (&p.x_desc, &p.y_desc),
            &series,
            &paper,
            &references,
        );
    }
    let values: Vec<Vec<f64>> = (0..p.categories.len())
        .map(|i| {
            p.series
                .iter()
                .map(|s| s.2.get(i).copied().unwrap_or(f64::NAN))
                .collect()
        })
        .collect();
    plot::bars_with(
        &p.title,
        &p.y_desc,
        &p.categories,
        &looks,
        &values,
        &references,
    )
}
