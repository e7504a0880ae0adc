//! The figure every reproduction sets beside the paper's: one row of "figure, paper, ours".
//! Shared by every `reproduce` command so that `reproduce all` and the HTML report can
//! gather them without knowing each seed.

use serde::Serialize;

/// One headline figure: the paper's value and ours, as a signed change (−0.53 = −53 %),
/// a ratio (18.8×) or a plain quantity. `kind` says which: `"change"`, `"ratio"`, or a
/// unit name (`"ms"`, `"%"`...). `paper` is NaN where the paper states no number.
#[derive(Clone, Debug, Serialize)]
pub struct Headline {
    pub figure: String,
    pub paper: f64,
    pub ours: f64,
    pub kind: String,
}

impl Headline {
    pub fn new(figure: &str, paper: f64, ours: f64, kind: &str) -> Self {
        Headline {
            figure: figure.into(),
            paper,
            ours,
            kind: kind.into(),
        }
    }

    /// The gap in percentage points for changes, and as a relative difference for ratios
    /// and quantities; `None` when the paper states no number or ours was not measured.
    pub fn gap(&self) -> Option<f64> {
        if !self.paper.is_finite() || !self.ours.is_finite() {
            return None;
        }
        Some(match self.kind.as_str() {
            "change" => (self.ours - self.paper) * 100.0,
            _ if self.paper != 0.0 => (self.ours / self.paper - 1.0) * 100.0,
            _ => return None,
        })
    }

    /// The value as a table cell: "−53.0%", "18.8x", "12.3 ms".
    pub fn format(&self, value: f64) -> String {
        if !value.is_finite() {
            return "n/a".into();
        }
        match self.kind.as_str() {
            "change" => format!("{:+.1}%", value * 100.0),
            "ratio" => format!("{value:.1}x"),
            unit => format!("{value:.3} {unit}"),
        }
    }
}

/// The headline figures as a text table: a header naming the columns (`ours_label` for
/// ours) and one row per figure, the figure's name left-aligned in `figure_width`.
pub fn headline_table(headlines: &[Headline], figure_width: usize, ours_label: &str) -> String {
    let mut out = format!(
        "{:<figure_width$} {:>10} {:>10}\n",
        "figure", "paper", ours_label
    );
    for h in headlines {
        out.push_str(&format!(
            "{:<figure_width$} {:>10} {:>10}\n",
            h.figure,
            h.format(h.paper),
            h.format(h.ours)
        ));
    }
    out
}

/// A paper's figure redrawn from our measurements, with the paper's values beside ours:
/// per category where the paper prints them (`series` of origin `paper`, NaN where it
/// prints none), and as reference lines where it states only a headline (`references`).
/// The HTML report draws it; the terminal tables stay the textual form.
#[derive(Clone, Debug, Serialize)]
pub struct PaperFigure {
    /// The paper's figure or table it redraws, as the paper numbers it (`Fig. 8(b)`).
    pub figure: String,
    pub title: String,
    /// `bars` (one group per category) or `lines` (categories are numeric x values).
    pub style: &'static str,
    pub x_desc: String,
    pub y_desc: String,
    pub categories: Vec<String>,
    pub series: Vec<FigureSeries>,
    pub references: Vec<Reference>,
    /// Where the paper's values come from (figure, table or text, and the seed file) and,
    /// when the paper prints no per-category numbers, that it states only a headline.
    pub caption: String,
    /// The document and section that explain the gap (`docs/ldc-reproduction.md#...`).
    pub explained: String,
}

/// One series of a [`PaperFigure`]: a value per category (NaN: none).
#[derive(Clone, Debug, Serialize)]
pub struct FigureSeries {
    pub name: String,
    /// `ours` or `paper`.
    pub origin: &'static str,
    pub values: Vec<f64>,
}

/// A headline the paper states for the whole figure, drawn as a line across it (`axis`
/// `y`: a value; `x`: a position on a numeric x axis), with our comparable figure.
#[derive(Clone, Debug, Serialize)]
pub struct Reference {
    pub label: String,
    pub axis: &'static str,
    pub paper: f64,
    pub ours: f64,
}

impl PaperFigure {
    pub fn bars(figure: &str, title: &str, y_desc: &str, categories: Vec<String>) -> Self {
        PaperFigure {
            figure: figure.into(),
            title: title.into(),
            style: "bars",
            x_desc: String::new(),
            y_desc: y_desc.into(),
            categories,
            series: Vec::new(),
            references: Vec::new(),
            caption: String::new(),
            explained: String::new(),
        }
    }

    pub fn lines(figure: &str, title: &str, x_desc: &str, y_desc: &str, x: &[f64]) -> Self {
        PaperFigure {
            style: "lines",
            x_desc: x_desc.into(),
            ..Self::bars(
                figure,
                title,
                y_desc,
                x.iter().map(|v| format!("{v}")).collect(),
            )
        }
    }

    pub fn ours(mut self, name: &str, values: Vec<f64>) -> Self {
        self.series.push(FigureSeries {
            name: name.into(),
            origin: "ours",
            values,
        });
        self
    }

    /// The paper's values per category (NaN where it prints none).
    pub fn paper(mut self, name: &str, values: Vec<f64>) -> Self {
        self.series.push(FigureSeries {
            name: name.into(),
            origin: "paper",
            values,
        });
        self
    }

    /// A headline value of the paper across the figure, with ours to set beside it.
    pub fn reference(mut self, label: &str, paper: f64, ours: f64) -> Self {
        self.references.push(Reference {
            label: label.into(),
            axis: "y",
            paper,
            ours,
        });
        self
    }

    /// A headline position on the x axis (a knee), with ours.
    pub fn x_reference(mut self, label: &str, paper: f64, ours: f64) -> Self {
        self.references.push(Reference {
            label: label.into(),
            axis: "x",
            paper,
            ours,
        });
        self
    }

    pub fn caption(mut self, caption: &str, explained: &str) -> Self {
        self.caption = caption.into();
        self.explained = explained.into();
        self
    }
}

#[cfg(test)]
mod tests {
    use super::Headline;

    #[test]
    fn gaps_are_points_for_changes_relative_otherwise_and_absent_without_both_numbers() {
        let change = Headline::new("writes", -0.551, -0.113, "change");
        assert!((change.gap().unwrap() - 43.8).abs() < 1e-9);
        assert_eq!(change.format(change.ours), "-11.3%");
        let ratio = Headline::new("tx/s", 11.2, 3.7, "ratio");
        assert!((ratio.gap().unwrap() + 66.964).abs() < 0.001);
        assert_eq!(Headline::new("knee", 15.0, f64::NAN, "%").gap(), None);
        assert_eq!(Headline::new("x", f64::NAN, 1.0, "ms").gap(), None);
        assert_eq!(
            Headline::new("knee", 15.0, f64::NAN, "%").format(f64::NAN),
            "n/a"
        );
    }
}
