//! Running a grid's points and gathering them into one table: a column per parameter, an
//! `error` column (empty unless the point failed after its retries), then every scalar
//! figure of the run (`flashstack_report::flatten_json_values`). A failed point is kept
//! as a row with its error; the sweep goes on.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use flashstack_report::{cell_text, csv_cell, flatten_json_values};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::grid::Grid;
use crate::point::{run_point, Point, RunEnv};
use crate::spec::error_chain;

/// What became of one point: its report as JSON, or the error of its last attempt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub point: Point,
    pub report: Option<Value>,
    pub error: Option<String>,
    pub attempts: u32,
}

/// Runs one point up to `1 + retries` times, keeping the first success or the last error.
pub fn run_with_retries(point: &Point, env: &RunEnv, retries: u32) -> Outcome {
    let mut attempts = 0;
    loop {
        attempts += 1;
        match run_point(point, env) {
            Ok(run) => {
                return Outcome {
                    point: point.clone(),
                    report: Some(serde_json::to_value(&run).expect("reports serialise")),
                    error: None,
                    attempts,
                }
            }
            Err(e) if attempts > retries => {
                return Outcome {
                    point: point.clone(),
                    report: None,
                    error: Some(error_chain(&e)),
                    attempts,
                }
            }
            Err(_) => {}
        }
    }
}

/// Runs `points` on `jobs` threads (each point a deterministic run: the table is the same
/// for any `jobs`), calling `done(finished, total, outcome)` on this thread as each ends.
pub fn run_points(
    points: &[Point],
    env: &RunEnv,
    jobs: usize,
    retries: u32,
    done: &mut dyn FnMut(usize, usize, &Outcome),
) -> Vec<Outcome> {
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel::<(usize, Outcome)>();
    let mut slots: Vec<Option<Outcome>> = vec![None; points.len()];
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, points.len().max(1)) {
            let tx = tx.clone();
            let next = &next;
            scope.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(point) = points.get(i) else { break };
                if tx.send((i, run_with_retries(point, env, retries))).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        for (finished, (i, outcome)) in rx.iter().enumerate() {
            done(finished + 1, points.len(), &outcome);
            slots[i] = Some(outcome);
        }
    });
    slots
        .into_iter()
        .map(|o| o.expect("every point reports once"))
        .collect()
}

/// The sweep's table: `columns` names each cell of every row.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Table {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
}

/// The table of `outcomes` (in the grid's point order): parameters, `error`, figures
/// (the report's `stack`, `workload` and `start` as `run.stack`, ...). The
/// figures' columns are the first successful report's; a later report's extra figure
/// (a persona with more operations) adds a column, empty in the rows without it.
pub fn table(grid: &Grid, outcomes: &[Outcome]) -> Table {
    let mut columns = grid.columns();
    columns.push("error".to_string());
    let params = columns.len();
    let mut cells: Vec<Vec<(String, Value)>> = Vec::new();
    for outcome in outcomes {
        // A figure named like a parameter (the report's own `stack`, `workload`, `start`
        // text) is kept as `run.NAME`.
        let figures: Vec<(String, Value)> = outcome
            .report
            .as_ref()
            .map(flatten_json_values)
            .unwrap_or_default()
            .into_iter()
            .map(|(key, v)| match columns[..params].contains(&key) {
                true => (format!("run.{key}"), v),
                false => (key, v),
            })
            .collect();
        for (key, _) in &figures {
            if !columns[params..].contains(key) {
                columns.push(key.clone());
            }
        }
        let mut row = parameter_cells(grid, &outcome.point);
        row.push((
            "error".to_string(),
            outcome.error.clone().map_or(Value::Null, Value::String),
        ));
        row.extend(figures);
        cells.push(row);
    }
    let rows = cells
        .into_iter()
        .map(|row| {
            columns
                .iter()
                .map(|c| {
                    row.iter()
                        .find(|(k, _)| k == c)
                        .map_or(Value::Null, |(_, v)| v.clone())
                })
                .collect()
        })
        .collect();
    Table { columns, rows }
}

/// A point's parameter cells, named as [`Grid::columns`] names them.
fn parameter_cells(grid: &Grid, point: &Point) -> Vec<(String, Value)> {
    let target = match &point.device {
        Some(device) => ("device".to_string(), Value::String(device.clone())),
        None => ("stack".to_string(), Value::String(point.stack.clone())),
    };
    let mut cells = vec![
        (
            "workload".to_string(),
            Value::String(point.workload.clone()),
        ),
        target,
    ];
    for ((key, _), entry) in grid.overrides.iter().zip(&point.overrides) {
        let raw = entry.split_once('=').map_or("", |(_, v)| v);
        cells.push((key.clone(), scalar(raw)));
    }
    cells.push(match point.device {
        Some(_) => ("contents".to_string(), Value::Bool(point.contents)),
        None => ("start".to_string(), Value::String(point.start.clone())),
    });
    cells.push(("seed".to_string(), Value::from(point.seed)));
    cells
}

/// An override's value as the typed cell TOML would read it (number, boolean, text).
fn scalar(raw: &str) -> Value {
    match format!("v = {raw}").parse::<toml::Table>() {
        Ok(t) => match &t["v"] {
            toml::Value::Integer(n) => Value::from(*n),
            toml::Value::Float(f) => Value::from(*f),
            toml::Value::Boolean(b) => Value::Bool(*b),
            _ => Value::String(raw.to_string()),
        },
        Err(_) => Value::String(raw.to_string()),
    }
}

impl Table {
    pub fn to_csv(&self) -> String {
        let mut out = self
            .columns
            .iter()
            .map(|c| csv_cell(c))
            .collect::<Vec<_>>()
            .join(",");
        out.push('\n');
        for row in &self.rows {
            let cells: Vec<String> = row.iter().map(|v| csv_cell(&cell_text(v))).collect();
            out.push_str(&cells.join(","));
            out.push('\n');
        }
        out
    }

    /// `{"columns": [...], "rows": [[...], ...]}`, pretty-printed.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("tables serialise");
        text.push('\n');
        text
    }

    /// The rows whose point failed.
    pub fn failed(&self) -> usize {
        let error = self.columns.iter().position(|c| c == "error");
        self.rows
            .iter()
            .filter(|r| error.is_some_and(|i| !r[i].is_null()))
            .count()
    }
}
