//! A calibrated task: the steps of one user operation, with the counts that make its
//! recorded trace match a published row.

use serde::Serialize;

use crate::persona::{Step, UserOp};

/// SQLite activity on one database during an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SqlWork {
    /// Which of the app's databases.
    pub db: u8,
    /// Transactions of each kind (insert, update) per operation.
    pub txns: u32,
    /// Rows inserted per insert transaction (0: none).
    pub rows: u32,
    /// Bytes of text per inserted row.
    pub body: u32,
    /// Rows whose flags or counters an update transaction changes (0: none).
    pub touch: u32,
}

/// What one user operation does, in counts: SQLite work, new media, temporary files,
/// preferences commits, log lines and in-place patches of the app's state file.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Mix {
    /// Times the user repeats the operation in the task.
    pub repeat: u32,
    /// Think time after each repetition (ms).
    pub think_ms: u32,
    pub sql: Vec<SqlWork>,
    /// New media files per operation and KiB each.
    pub media_files: u32,
    pub media_kib: u32,
    /// Temporary file per operation (KiB; 0: none).
    pub temp_kib: u32,
    /// Preferences commits per operation.
    pub prefs: u32,
    /// Log bytes appended per operation.
    pub log_bytes: u32,
    /// State-file patches per operation, KiB each, bytes changed per thousand.
    pub patch_writes: u32,
    pub patch_kib: u32,
    pub patch_permille: u32,
    /// Recent media files read back (shown) per operation.
    pub show: u32,
}

impl Mix {
    /// The operation, named `name`, and its repetitions.
    pub fn ops(&self, name: &'static str) -> Vec<UserOp> {
        let mut steps = Vec::new();
        for w in &self.sql {
            if w.rows > 0 && w.txns > 0 {
                steps.push(Step::Read { db: w.db, rows: 20 });
                steps.push(Step::Add {
                    db: w.db,
                    txns: w.txns,
                    rows: w.rows,
                    body: w.body,
                });
            }
            if w.touch > 0 && w.txns > 0 {
                steps.push(Step::Touch {
                    db: w.db,
                    txns: w.txns,
                    rows: w.touch,
                });
            }
        }
        if self.show > 0 {
            steps.push(Step::ShowMedia { files: self.show });
        }
        if self.media_files > 0 && self.media_kib > 0 {
            steps.push(Step::Media {
                files: self.media_files,
                kib: self.media_kib,
                fsync: false,
            });
        }
        if self.temp_kib > 0 {
            steps.push(Step::Temp {
                files: 1,
                kib: self.temp_kib,
            });
        }
        if self.prefs > 0 {
            steps.push(Step::Prefs {
                file: 0,
                writes: self.prefs,
            });
        }
        if self.log_bytes > 0 {
            steps.push(Step::Log {
                bytes: self.log_bytes,
            });
        }
        if self.patch_writes > 0 && self.patch_kib > 0 {
            steps.push(Step::State {
                writes: self.patch_writes,
                kib: self.patch_kib,
                change_permille: self.patch_permille,
            });
        }
        vec![UserOp {
            name,
            steps,
            repeat: self.repeat.max(1),
            think_ms: self.think_ms,
        }]
    }

    /// The tunable counts as one vector (for calibration searches).
    pub fn knobs(&self) -> Vec<u32> {
        let mut k = vec![
            self.repeat,
            self.media_files,
            self.media_kib,
            self.temp_kib,
            self.prefs,
            self.log_bytes,
            self.patch_writes,
            self.patch_kib,
            self.patch_permille,
        ];
        for w in &self.sql {
            k.extend_from_slice(&[w.txns, w.rows, w.body, w.touch]);
        }
        k
    }

    /// The same mix with the counts of `k` (as [`knobs`](Self::knobs) orders them).
    pub fn with_knobs(&self, k: &[u32]) -> Mix {
        let mut m = self.clone();
        let get = |i: usize| k.get(i).copied().unwrap_or(0);
        m.repeat = get(0).max(1);
        m.media_files = get(1);
        m.media_kib = get(2);
        m.temp_kib = get(3);
        m.prefs = get(4);
        m.log_bytes = get(5);
        m.patch_writes = get(6);
        m.patch_kib = get(7);
        m.patch_permille = get(8).min(1000);
        for (i, w) in m.sql.iter_mut().enumerate() {
            w.txns = get(9 + 4 * i);
            w.rows = get(10 + 4 * i);
            w.body = get(11 + 4 * i);
            w.touch = get(12 + 4 * i);
        }
        m
    }
}
