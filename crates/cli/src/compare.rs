//! A comparison whose columns differ in configuration but not in any figure: the knob
//! varied had no effect on this workload. Said under the table, with the likely reason
//! (a GC setting on a device that never erased a block), so two identical columns are not
//! read as "the policy makes no difference".

use flashstack_report::flatten_json;
use serde::Serialize;
use serde_json::Value;

/// One column of a comparison: its name, its configuration and its figures.
pub struct Column<'a, C: Serialize, R: Serialize> {
    pub name: &'a str,
    pub config: &'a C,
    pub report: &'a R,
}

/// A note for each pair of columns whose configurations differ but whose figures are
/// identical (names and other text aside); empty when every difference showed.
pub fn no_effect_notes<C: Serialize, R: Serialize>(columns: &[Column<'_, C, R>]) -> String {
    let flat: Vec<(Vec<(String, String)>, Value)> = columns
        .iter()
        .map(|c| {
            (
                flatten_json(&to_value(c.config)),
                figures(to_value(c.report)),
            )
        })
        .collect();
    let mut notes = String::new();
    for i in 0..columns.len() {
        for j in i + 1..columns.len() {
            if flat[i].1 != flat[j].1 {
                continue;
            }
            let keys = differing_keys(&flat[i].0, &flat[j].0);
            if keys.is_empty() {
                continue;
            }
            notes.push_str(&note(columns[i].name, columns[j].name, &keys, &flat[i].1));
        }
    }
    notes
}

fn to_value<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("configs and reports serialise")
}

/// The report's numbers only: names, policy names and other text differ between columns
/// by construction.
fn figures(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_string())
                .map(|(k, v)| (k, figures(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(figures).collect()),
        other => other,
    }
}

/// Dotted keys whose values differ (a key only one side has counts too), names and
/// descriptions left out.
fn differing_keys(a: &[(String, String)], b: &[(String, String)]) -> Vec<String> {
    let value = |side: &[(String, String)], key: &str| {
        side.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone())
    };
    let mut keys: Vec<String> = a
        .iter()
        .chain(b)
        .map(|(k, _)| k.clone())
        .filter(|k| {
            let last = k.rsplit('.').next().unwrap_or(k);
            !matches!(last, "name" | "description")
        })
        .filter(|k| value(a, k) != value(b, k))
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

/// The first number at a path ending in `suffix` (reports nest the device's figures at
/// different depths).
fn number(value: &Value, suffix: &str) -> Option<f64> {
    flatten_json(value)
        .iter()
        .find(|(k, _)| k == suffix || k.ends_with(&format!(".{suffix}")))
        .and_then(|(_, v)| v.parse().ok())
}

fn note(a: &str, b: &str, keys: &[String], figures: &Value) -> String {
    let shown: Vec<&str> = keys.iter().take(3).map(String::as_str).collect();
    let more = if keys.len() > 3 { ", ..." } else { "" };
    let mut text = format!(
        "note: '{a}' and '{b}' gave identical figures: {}{more} made no difference on \
         this workload",
        shown.join(", ")
    );
    let reason = reason(keys, figures);
    if !reason.is_empty() {
        text.push_str(&format!(" ({reason})"));
    }
    text.push_str(".\n");
    text
}

/// Why a knob may have had no effect, from what the run did not do.
fn reason(keys: &[String], figures: &Value) -> &'static str {
    let touches = |part: &str| keys.iter().any(|k| k.contains(part));
    let erases = number(figures, "nand.block_erases").unwrap_or(1.0);
    let cleaned = number(figures, "gc_cycles").unwrap_or(1.0);
    if (touches("ftl.gc.") || touches("ftl.wear.")) && erases == 0.0 {
        return "the device erased no block, so its garbage collection never ran: a run \
                that writes more than the device's free space exercises it, e.g. \
                --synthetic default, which preconditions the device first";
    }
    if touches("gc") && touches("fs.") && cleaned == 0.0 {
        return "F2FS never cleaned a segment";
    }
    ""
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn identical_figures_under_different_configs_get_a_note() {
        let greedy = json!({"name": "a", "ftl": {"gc": {"policy": "greedy"}}});
        let cb = json!({"name": "b", "ftl": {"gc": {"policy": "cost-benefit"}}});
        let idle = json!({"run": {"device": "a"}, "nand": {"block_erases": 0}});
        let idle_b = json!({"run": {"device": "b"}, "nand": {"block_erases": 0}});
        let busy = json!({"run": {"device": "b"}, "nand": {"block_erases": 7}});
        let col = |name, config, report| Column {
            name,
            config,
            report,
        };
        let notes = no_effect_notes(&[col("a", &greedy, &idle), col("b", &cb, &idle_b)]);
        assert!(
            notes.contains("'a' and 'b' gave identical figures: ftl.gc.policy")
                && notes.contains("erased no block"),
            "{notes}"
        );
        // Different figures, or the same configuration: nothing to say.
        assert!(no_effect_notes(&[col("a", &greedy, &idle), col("b", &cb, &busy)]).is_empty());
        assert!(
            no_effect_notes(&[col("a", &greedy, &idle), col("b", &greedy, &idle_b)]).is_empty()
        );
    }
}
