//! SQLite configuration (journal mode, synchronous, page size, WAL checkpointing) with presets.

use serde::{Deserialize, Serialize};

/// SQLite's journal modes covered by the VFS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JournalMode {
    /// Rollback journal deleted at commit.
    Delete,
    /// Rollback journal truncated to zero at commit.
    Truncate,
    /// Rollback journal kept; its header zeroed at commit.
    Persist,
    /// Write-ahead log, run with `locking_mode = EXCLUSIVE` (no shared-memory file).
    Wal,
}

impl JournalMode {
    /// The PRAGMA value.
    pub fn as_sql(self) -> &'static str {
        match self {
            Self::Delete => "DELETE",
            Self::Truncate => "TRUNCATE",
            Self::Persist => "PERSIST",
            Self::Wal => "WAL",
        }
    }
}

/// `PRAGMA synchronous` levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Synchronous {
    /// No syncs.
    Off,
    /// Syncs at critical moments only (in WAL: only around checkpoints).
    Normal,
    /// Syncs at every commit.
    Full,
    /// FULL plus a directory sync after deleting a rollback journal (DELETE mode).
    Extra,
}

impl Synchronous {
    /// The PRAGMA value.
    pub fn as_sql(self) -> &'static str {
        match self {
            Self::Off => "OFF",
            Self::Normal => "NORMAL",
            Self::Full => "FULL",
            Self::Extra => "EXTRA",
        }
    }
}

/// How a database connection is configured (applied as PRAGMAs at open).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SqliteConfig {
    /// Journal mode.
    pub journal_mode: JournalMode,
    /// `synchronous` when the journal mode is a rollback journal.
    pub synchronous: Synchronous,
    /// `synchronous` when the journal mode is WAL.
    pub wal_synchronous: Synchronous,
    /// Page size of new databases.
    pub page_size_bytes: u32,
    /// WAL auto-checkpoint threshold in pages.
    pub wal_autocheckpoint_pages: u32,
    /// Largest journal or WAL kept after a commit or checkpoint (-1: no limit).
    pub journal_size_limit_bytes: i64,
}

impl Default for SqliteConfig {
    fn default() -> Self {
        Self::android()
    }
}

impl SqliteConfig {
    /// Names of the presets accepted by [`preset`](Self::preset).
    pub const PRESETS: [&'static str; 4] = ["android", "android-wal", "android-recent", "sqlite"];

    /// Android's framework defaults (`SQLiteGlobal` and `config.xml` of AOSP 4.1, see
    /// `docs/sqlite.md`): journal mode PERSIST, synchronous FULL (also in WAL), page size
    /// 4096 (the block size of `/data`), WAL auto-checkpoint 100 pages, journal size limit
    /// 524288 bytes.
    pub fn android() -> Self {
        Self {
            journal_mode: JournalMode::Persist,
            synchronous: Synchronous::Full,
            wal_synchronous: Synchronous::Full,
            page_size_bytes: 4096,
            wal_autocheckpoint_pages: 100,
            journal_size_limit_bytes: 524_288,
        }
    }

    /// Android's defaults for a database opened with write-ahead logging enabled, and
    /// Android 9+'s "compatibility WAL" (WAL, one connection) for apps that choose no
    /// journal mode (source.android.com/docs/core/perf/compatibility-wal).
    pub fn android_wal() -> Self {
        Self {
            journal_mode: JournalMode::Wal,
            ..Self::android()
        }
    }

    /// Later AOSP releases as recalled (not verified against a source here): journal mode
    /// TRUNCATE, WAL (compatibility WAL) with synchronous NORMAL.
    pub fn android_recent() -> Self {
        Self {
            journal_mode: JournalMode::Truncate,
            wal_synchronous: Synchronous::Normal,
            ..Self::android()
        }
    }

    /// SQLite's own compile-time defaults: DELETE, FULL, 4096-byte pages, checkpoint at
    /// 1000 pages, no journal size limit.
    pub fn sqlite() -> Self {
        Self {
            journal_mode: JournalMode::Delete,
            synchronous: Synchronous::Full,
            wal_synchronous: Synchronous::Full,
            page_size_bytes: 4096,
            wal_autocheckpoint_pages: 1000,
            journal_size_limit_bytes: -1,
        }
    }

    /// A preset by name (see [`PRESETS`](Self::PRESETS)).
    pub fn preset(name: &str) -> Option<Self> {
        match name {
            "android" => Some(Self::android()),
            "android-wal" => Some(Self::android_wal()),
            "android-recent" => Some(Self::android_recent()),
            "sqlite" => Some(Self::sqlite()),
            _ => None,
        }
    }

    /// The same configuration with another journal mode.
    pub fn with_journal_mode(mut self, mode: JournalMode) -> Self {
        self.journal_mode = mode;
        self
    }

    /// The same configuration with `synchronous` set for both rollback and WAL modes.
    pub fn with_synchronous(mut self, sync: Synchronous) -> Self {
        self.synchronous = sync;
        self.wal_synchronous = sync;
        self
    }

    /// The PRAGMAs that apply this configuration, in order.
    pub fn pragmas(&self) -> Vec<String> {
        let mut v = vec![format!("PRAGMA page_size = {}", self.page_size_bytes)];
        let sync = if self.journal_mode == JournalMode::Wal {
            // No shared memory: WAL needs the exclusive locking mode, set before the
            // journal mode so that SQLite keeps the wal-index in heap memory.
            v.push("PRAGMA locking_mode = EXCLUSIVE".to_owned());
            self.wal_synchronous
        } else {
            self.synchronous
        };
        v.push(format!(
            "PRAGMA journal_mode = {}",
            self.journal_mode.as_sql()
        ));
        v.push(format!("PRAGMA synchronous = {}", sync.as_sql()));
        v.push(format!(
            "PRAGMA wal_autocheckpoint = {}",
            self.wal_autocheckpoint_pages
        ));
        v.push(format!(
            "PRAGMA journal_size_limit = {}",
            self.journal_size_limit_bytes
        ));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_round_trip_and_default_is_android() {
        assert_eq!(SqliteConfig::default(), SqliteConfig::android());
        for name in SqliteConfig::PRESETS {
            let c = SqliteConfig::preset(name).unwrap();
            let json = serde_json::to_string(&c).unwrap();
            assert_eq!(serde_json::from_str::<SqliteConfig>(&json).unwrap(), c);
        }
        assert!(SqliteConfig::preset("nope").is_none());
        let a = SqliteConfig::android();
        assert_eq!(
            (
                a.journal_mode,
                a.synchronous,
                a.page_size_bytes,
                a.wal_autocheckpoint_pages
            ),
            (JournalMode::Persist, Synchronous::Full, 4096, 100)
        );
    }

    #[test]
    fn wal_sets_exclusive_locking_before_the_journal_mode() {
        let p = SqliteConfig::android_wal().pragmas();
        let lock = p
            .iter()
            .position(|s| s.contains("locking_mode = EXCLUSIVE"));
        let wal = p.iter().position(|s| s.contains("journal_mode = WAL"));
        assert!(lock.unwrap() < wal.unwrap());
        assert!(!SqliteConfig::android()
            .pragmas()
            .iter()
            .any(|s| s.contains("locking_mode")));
    }
}
