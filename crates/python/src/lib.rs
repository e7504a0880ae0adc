//! `flashstack._native`: the few calls the Python package (`python/flashstack`) makes into
//! the Rust crates. Everything a run or a sweep does is `flashstack_sweep`'s, the code
//! `flashstack run` and `flashstack sweep` call; values cross as JSON text so that a
//! point's report is the CLI's JSON byte for byte. Runs release the GIL.
//!
//! Empty without the `python` feature (Cargo.toml says why).
#![cfg(feature = "python")]

use flashstack_sweep::grid::Grid;
use flashstack_sweep::point::{run_point, Point, RunEnv};
use flashstack_sweep::sweep::{table, Outcome};
use flashstack_sweep::{error_chain, GridError as SweepGridError};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;

create_exception!(
    _native,
    FlashstackError,
    PyException,
    "A run or a specification failed; the message is the CLI's."
);
create_exception!(
    _native,
    GridError,
    PyValueError,
    "A sweep's grid names an unknown parameter or value; nothing ran."
);

fn point_of(point_json: &str) -> PyResult<Point> {
    serde_json::from_str(point_json).map_err(|e| PyValueError::new_err(format!("not a point: {e}")))
}

fn grid_of(grid_json: &str, origin: &str) -> PyResult<Grid> {
    Grid::from_json_str(grid_json, origin)
        .map_err(|e: SweepGridError| GridError::new_err(e.to_string()))
}

/// The environment of runs from Python: the CLI's phone cache, phones identified by this
/// extension's file (passed in by the package); made once per process, so its build id
/// (a hash of the extension) is computed at most once.
fn env(extension_path: Option<String>) -> &'static RunEnv {
    static ENV: std::sync::OnceLock<RunEnv> = std::sync::OnceLock::new();
    ENV.get_or_init(|| {
        RunEnv::with_default_cache(extension_path.map(std::path::PathBuf::from).as_ref())
    })
}

/// Runs one point (JSON of `flashstack_sweep::Point`) and returns its report as the CLI's
/// `run --json` writes it.
#[pyfunction]
#[pyo3(signature = (point_json, extension_path=None))]
fn run_json(py: Python<'_>, point_json: &str, extension_path: Option<String>) -> PyResult<String> {
    let point = point_of(point_json)?;
    let env = env(extension_path);
    let run = py
        .detach(|| run_point(&point, env))
        .map_err(|e| FlashstackError::new_err(error_chain(&e)))?;
    Ok(flashstack_report::render_json(&[run]))
}

/// The grid's points as JSON texts, in order; a bad grid raises `GridError` naming the
/// origin and the key before anything runs.
#[pyfunction]
fn expand(grid_json: &str, origin: &str) -> PyResult<Vec<String>> {
    let grid = grid_of(grid_json, origin)?;
    Ok(grid
        .points()
        .iter()
        .map(|p| serde_json::to_string(p).expect("points serialise"))
        .collect())
}

/// The sweep's table (`{"columns": [...], "rows": [...]}`) from each point's report JSON
/// or error, in the grid's order: the same table `flashstack sweep --json` writes.
#[pyfunction]
fn table_json(
    grid_json: &str,
    origin: &str,
    points: Vec<String>,
    reports: Vec<Option<String>>,
    errors: Vec<Option<String>>,
    attempts: Vec<u32>,
) -> PyResult<String> {
    let grid = grid_of(grid_json, origin)?;
    let mut outcomes = Vec::with_capacity(points.len());
    for (((point, report), error), attempts) in points.iter().zip(reports).zip(errors).zip(attempts)
    {
        let report = report
            .map(|text| serde_json::from_str(&text))
            .transpose()
            .map_err(|e| PyValueError::new_err(format!("not a report: {e}")))?;
        outcomes.push(Outcome {
            point: point_of(point)?,
            report,
            error,
            attempts,
        });
    }
    Ok(table(&grid, &outcomes).to_json())
}

/// (name, description) of every stack preset.
#[pyfunction]
fn stack_presets() -> Vec<(String, String)> {
    flashstack_stack::StackConfig::PRESETS
        .iter()
        .map(|(n, d)| (n.to_string(), d.to_string()))
        .collect()
}

/// (name, description) of every device preset.
#[pyfunction]
fn device_presets() -> Vec<(String, String)> {
    flashstack_ftl::presets::PRESETS
        .iter()
        .map(|(n, d)| (n.to_string(), d.to_string()))
        .collect()
}

/// (name, description, calibration) of every app persona.
#[pyfunction]
fn personas() -> Vec<(String, String, String)> {
    flashstack_apps::catalog()
        .into_iter()
        .map(|e| (e.name, e.description, e.calibration))
        .collect()
}

/// A stack specification's configuration as TOML (raises `FlashstackError` with the CLI's
/// message if it does not resolve).
#[pyfunction]
fn stack_toml(spec: &str) -> PyResult<String> {
    let base = flashstack_stack::StackConfig::preset("default").expect("preset");
    flashstack_sweep::spec::resolve_stack(spec, &base)
        .map(|c| c.to_toml_string())
        .map_err(|e| FlashstackError::new_err(error_chain(&e)))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("FlashstackError", m.py().get_type::<FlashstackError>())?;
    m.add("GridError", m.py().get_type::<GridError>())?;
    m.add_function(wrap_pyfunction!(run_json, m)?)?;
    m.add_function(wrap_pyfunction!(expand, m)?)?;
    m.add_function(wrap_pyfunction!(table_json, m)?)?;
    m.add_function(wrap_pyfunction!(stack_presets, m)?)?;
    m.add_function(wrap_pyfunction!(device_presets, m)?)?;
    m.add_function(wrap_pyfunction!(personas, m)?)?;
    m.add_function(wrap_pyfunction!(stack_toml, m)?)?;
    Ok(())
}
