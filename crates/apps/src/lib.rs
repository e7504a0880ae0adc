//! App personas: deterministic programs of user operations ("launch app", "send 100
//! characters", "receive 1 image") that drive real SQLite (through `flashstack-sqlvfs`)
//! and the app's other files (preferences, caches, media, logs) over one shared
//! [`FileApi`](flashstack_sqlvfs::FileApi) and one virtual clock, calibrated to published
//! mobile I/O studies (the MedFS workload table, the LDC paper's application scenarios).
//!
//! * [`run`] / [`run_with`]: setup (unrecorded), the task (recorded as a file-level trace
//!   by [`Recorder`]), a [`PersonaReport`] with per-operation latency percentiles and the
//!   trace's MedFS columns (`flashstack_workload::analyze`).
//! * [`catalog`] and [`persona`]: every persona by name.
//! * [`replay()`]: a file-level trace replayed onto any `FileApi`.
//!
//! `docs/personas.md` lists the personas, their calibration targets and measured values.

pub mod bench;
mod catalog;
pub mod corpus;
mod ctx;
mod error;
mod files;
pub mod interaction;
pub mod ldc;
pub mod medfs;
mod mix;
pub mod persona;
mod recorder;
mod replay;
mod runner;
mod schema;
mod shared;
mod task;
mod text;

pub use catalog::{catalog, persona, CatalogEntry};
pub use ctx::{Ctx, Witness, DATABASES_MAX};
pub use error::AppError;
pub use medfs::MedfsTask;
pub use mix::{Mix, SqlWork};
pub use persona::{AppSpec, DbSpec, Journal, MedfsRow, Persona, Step, UserOp};
pub use recorder::{BoxedApi, Recorder, RecorderConfig, Recording};
pub use replay::{replay, replay_at, replay_with, ReplayOptions, ReplayReport};
pub use runner::{run, run_with, run_with_hook, OpReport, PersonaReport, RunOptions, RunOutput};
pub use schema::Kind;
pub use shared::Shared;
pub use task::{run_ops, TaskPersona};
