//! Configuration specifications, one whole-stack run as a point, and parameter sweeps:
//! the library behind `flashstack run`'s stack resolution, `flashstack sweep SPEC.toml`
//! and the Python bindings (`crates/python`), so the three never disagree
//! (docs/python.md).

pub mod grid;
pub mod point;
pub mod spec;
pub mod sweep;

pub use grid::{Grid, GridError};
pub use point::{run_point, Point, PointError, RunEnv};
pub use spec::{error_chain, SpecError};
pub use sweep::{run_points, run_with_retries, table, Outcome, Table};
