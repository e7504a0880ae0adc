//! Every persona by name.

use serde::Serialize;

use crate::error::AppError;
use crate::ldc;
use crate::medfs::{self, MedfsTask};
use crate::persona::{Persona, UserOp};
use crate::task::TaskPersona;

/// Think time between two tasks of an app's whole sequence (ms).
const BETWEEN_TASKS_MS: u32 = 30_000;

/// A catalogue entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CatalogEntry {
    pub name: String,
    pub description: String,
    pub calibration: String,
}

/// The apps of the MedFS table, in its order.
const MEDFS_APPS: [&str; 7] = [
    "gmail", "polish", "spotify", "telegram", "twitter", "wechat", "zoom",
];

/// Names and descriptions of every persona: each MedFS task (`app:task`), each MedFS
/// app's tasks in sequence (`app`), the LDC scenarios and the multi-app `mix`.
pub fn catalog() -> Vec<CatalogEntry> {
    names()
        .into_iter()
        .filter_map(|n| persona(&n).ok())
        .map(|p| CatalogEntry {
            name: p.name(),
            description: p.description(),
            calibration: p.calibration(),
        })
        .collect()
}

fn names() -> Vec<String> {
    let mut v: Vec<String> = medfs::tasks().iter().map(|t| t.key.to_owned()).collect();
    v.extend(MEDFS_APPS.iter().map(|a| (*a).to_owned()));
    v.extend(
        [
            "facebook",
            "twitter:feeds",
            "messenger",
            "google-earth",
            "chrome",
            "camera",
            "mix",
            "bench:fs-write",
            "bench:sqlite",
        ]
        .iter()
        .map(|s| (*s).to_owned()),
    );
    v
}

/// The persona called `name`; an unknown name is an error listing the known ones.
pub fn persona(name: &str) -> Result<Box<dyn Persona>, AppError> {
    let tasks = medfs::tasks();
    if let Some(t) = tasks.iter().find(|t| t.key == name) {
        return Ok(Box::new(t.persona()));
    }
    if MEDFS_APPS.contains(&name) {
        let mine: Vec<&MedfsTask> = tasks.iter().filter(|t| t.app.name == name).collect();
        return Ok(Box::new(app_sequence(name, &mine)));
    }
    let p: Box<dyn Persona> = match name {
        "facebook" => Box::new(ldc::facebook()),
        "twitter:feeds" => Box::new(ldc::twitter_feeds()),
        "messenger" => Box::new(ldc::messenger()),
        "google-earth" => Box::new(ldc::google_earth()),
        "chrome" => Box::new(ldc::chrome()),
        "camera" => Box::new(ldc::camera()),
        "mix" => Box::new(ldc::mix()),
        "bench:fs-write" => Box::new(crate::bench::FsWriteBench::default()),
        "bench:sqlite" => Box::new(crate::bench::SqliteBench::default()),
        _ => {
            return Err(AppError::UnknownPersona {
                name: name.to_owned(),
                known: names().join(", "),
            })
        }
    };
    Ok(p)
}

/// An app's MedFS tasks one after the other, on one installation.
fn app_sequence(name: &str, tasks: &[&MedfsTask]) -> TaskPersona {
    let first = tasks[0].persona();
    let mut ops: Vec<UserOp> = Vec::new();
    for t in tasks {
        let mut task_ops = t.mix.ops(t.op);
        if let Some(last) = task_ops.last_mut() {
            last.think_ms = last.think_ms.max(BETWEEN_TASKS_MS);
        }
        ops.extend(task_ops);
    }
    let list: Vec<&str> = tasks.iter().map(|t| t.row.task).collect();
    TaskPersona {
        name: name.to_owned(),
        description: format!("{}: {}", tasks[0].row.app, list.join(", ")),
        calibration: format!(
            "each task calibrated to its MedFS table row ({} rows)",
            tasks.len()
        ),
        ops,
        target: None,
        ..first
    }
}
