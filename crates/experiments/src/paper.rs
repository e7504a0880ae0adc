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
