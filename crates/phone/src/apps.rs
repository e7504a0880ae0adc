//! The apps of the population. Each is an instance of an *archetype*: one of the
//! catalogue's personas (its databases, preferences, media and the user operations of its
//! task). The realistic path runs the archetype's own task on the instance (real SQLite);
//! the fast path replays the task's page-level footprint ([`Footprint`]) without SQLite.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Mutex, OnceLock};

use flashstack_apps::{ldc, medfs, AppSpec, Journal, Step, TaskPersona, UserOp};
use serde::Serialize;

/// Share of an archetype's task one daily session of a population app performs: a task
/// is a 5-minute scenario, app sessions last about a minute [assumed].
pub const SESSION_SHARE: f64 = 0.2;

/// The archetypes: the LDC scenarios and the lighter MedFS tasks (the heavy ones, with
/// hundreds of fsync'd patches per operation or 200 MB meetings, would dominate).
pub fn archetypes() -> Vec<TaskPersona> {
    let mut v = vec![
        ldc::facebook(),
        ldc::messenger(),
        ldc::chrome(),
        ldc::twitter_feeds(),
        ldc::google_earth(),
        ldc::camera(),
    ];
    for task in medfs::tasks() {
        if matches!(
            task.key,
            "telegram:receive-text" | "wechat:receive-text" | "spotify:launch"
        ) {
            v.push(task.persona());
        }
    }
    v
}

/// What one session of an archetype writes, page by page, for the fast path.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Footprint {
    /// Per database: (transactions, bytes added per transaction) of inserts.
    pub inserts: Vec<(u32, u64)>,
    /// Per database: transactions updating rows in place.
    pub updates: Vec<u32>,
    pub media_files: u32,
    pub media_bytes: u64,
    pub temp_bytes: u64,
    pub prefs_commits: u32,
    pub log_bytes: u64,
    /// In-place patches of the state file: (count, bytes each).
    pub state_patches: (u32, u64),
}

impl Footprint {
    /// The footprint of `ops` scaled by `share` (at least one repetition of each).
    pub fn of(ops: &[UserOp], dbs: usize, share: f64) -> Footprint {
        let mut f = Footprint {
            inserts: vec![(0, 0); dbs],
            updates: vec![0; dbs],
            ..Footprint::default()
        };
        for op in ops {
            let reps = scaled(op.repeat.max(1), share);
            for step in &op.steps {
                f.add_step(*step, reps);
            }
        }
        for ins in &mut f.inserts {
            if ins.0 > 0 {
                ins.1 /= ins.0 as u64;
            }
        }
        f
    }

    fn add_step(&mut self, step: Step, reps: u32) {
        match step {
            Step::Add {
                db,
                txns,
                rows,
                body,
            } => {
                if let Some(ins) = self.inserts.get_mut(db as usize) {
                    ins.0 += txns * reps;
                    // Bytes accumulate here; divided by the transactions at the end.
                    ins.1 += (txns * reps) as u64 * rows as u64 * (body as u64 + ROW_OVERHEAD);
                }
            }
            Step::Touch { db, txns, .. } => {
                if let Some(u) = self.updates.get_mut(db as usize) {
                    *u += txns.max(1) * reps;
                }
            }
            Step::Evict { db, .. } => {
                if let Some(u) = self.updates.get_mut(db as usize) {
                    *u += reps;
                }
            }
            Step::Media { files, kib, .. } => {
                self.media_files += files * reps;
                self.media_bytes += (files * reps) as u64 * kib as u64 * 1024;
            }
            Step::Temp { files, kib } => self.temp_bytes += (files * reps * kib) as u64 * 1024,
            Step::Prefs { writes, .. } => self.prefs_commits += writes * reps,
            Step::Log { bytes } => self.log_bytes += (bytes * reps) as u64,
            Step::State { writes, kib, .. } => {
                self.state_patches.0 += writes * reps;
                self.state_patches.1 = self.state_patches.1.max(kib as u64 * 1024);
            }
            Step::Read { .. } | Step::ShowMedia { .. } | Step::Wait { .. } => {}
        }
    }
}

/// Bytes a row takes beyond its body (keys, timestamps, cell header) [assumed].
pub const ROW_OVERHEAD: u64 = 64;

fn scaled(repeat: u32, share: f64) -> u32 {
    ((repeat as f64 * share).round() as u32).max(1)
}

/// An archetype's task reduced to one session.
pub fn session_ops(ops: &[UserOp], share: f64) -> Vec<UserOp> {
    ops.iter()
        .map(|o| UserOp {
            repeat: scaled(o.repeat.max(1), share),
            ..o.clone()
        })
        .collect()
}

/// Initial size in bytes of each of the archetype's databases (its setup rows).
pub fn initial_db_bytes(app: &AppSpec) -> Vec<u64> {
    app.dbs
        .iter()
        .map(|d| d.setup_rows * (d.body_bytes as u64 + ROW_OVERHEAD))
        .collect()
}

/// Whether the archetype's database `i` runs in WAL mode.
pub fn db_is_wal(app: &AppSpec, i: usize) -> bool {
    let journal = app.dbs[i].journal.unwrap_or(app.journal);
    matches!(journal, Journal::Wal | Journal::WalNormal)
}

/// The archetype's app under another package: a population app of the realistic path.
/// Specs are interned by package, so a package leaks one spec for the process's life
/// (a bounded number: package names come from a fixed pattern).
pub fn instance_spec(archetype: &'static AppSpec, package: &str) -> &'static AppSpec {
    static SPECS: OnceLock<Mutex<BTreeMap<String, &'static AppSpec>>> = OnceLock::new();
    let mut specs = SPECS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    let key = format!("{}/{package}", archetype.name);
    if let Some(spec) = specs.get(&key) {
        return spec;
    }
    let package: &'static str = Box::leak(package.to_string().into_boxed_str());
    let spec: &'static AppSpec = Box::leak(Box::new(AppSpec {
        name: package,
        package,
        ..*archetype
    }));
    specs.insert(key, spec);
    spec
}

/// One installed app of the population.
#[derive(Clone, Debug)]
pub struct App {
    pub id: u32,
    pub package: String,
    /// Index into [`archetypes`].
    pub archetype: usize,
    /// A persona's own app (its real package and databases).
    pub persona: bool,
    pub version: u32,
    pub apk_bytes: u64,
    pub odex_bytes: u64,
    pub lib_bytes: Vec<u64>,
    pub cache_quota: u64,
    /// Cached files, oldest first, and their total.
    pub cache_files: VecDeque<(String, u64)>,
    pub cache_bytes: u64,
    /// Fast path: pages of each database file and of its journal or WAL.
    pub db_pages: Vec<u64>,
    pub wal_pages: Vec<u64>,
    /// Realistic path: the app's setup has run.
    pub set_up: bool,
    /// Counter of unique names (cache files, media).
    pub seq: u64,
    /// Sessions run so far.
    pub sessions: u64,
    /// The day of the last session that ran the archetype's real task.
    pub last_real_day: Option<u32>,
}

impl App {
    /// The package directory; two names alternate from version to version, as the
    /// installer writes the new version beside the old one before removing it.
    pub fn code_dir(&self) -> String {
        format!("/data/app/{}-{}", self.package, 1 + self.version % 2)
    }
    pub fn data_dir(&self) -> String {
        format!("/data/data/{}", self.package)
    }
    pub fn next_name(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }
}
