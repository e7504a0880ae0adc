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
    /// and quantities; `None` when the paper states no number.
    pub fn gap(&self) -> Option<f64> {
        if !self.paper.is_finite() {
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
