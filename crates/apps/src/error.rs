//! The crate's one error type.

use flashstack_sqlvfs::{FileError, SqlVfsError};
use thiserror::Error;

/// Errors of personas, the runner, the recorder and trace replay.
#[derive(Debug, Error)]
pub enum AppError {
    /// A file call of the persona itself (not SQLite's) failed.
    #[error("file call '{call}' on '{path}' failed: {source}")]
    File {
        /// Which call (`open`, `write_at`, ...).
        call: &'static str,
        /// The file it named.
        path: String,
        #[source]
        source: FileError,
    },
    /// SQLite reported an error (an I/O error below it shows up here as SQLITE_IOERR).
    #[error("SQLite: {0}")]
    Sql(#[from] rusqlite::Error),
    /// Registering the VFS or opening a database failed.
    #[error(transparent)]
    Vfs(#[from] SqlVfsError),
    /// No persona has this name.
    #[error("unknown persona '{name}'; known personas: {known}")]
    UnknownPersona {
        /// The name asked for.
        name: String,
        /// Every known name, comma-separated.
        known: String,
    },
    /// A recorded trace could not be analysed (it breaks the fd state machine).
    #[error("trace analysis: {0}")]
    Analyze(String),
    /// Replaying operation `index` (1-based) of a trace failed.
    #[error("replay of trace operation {index} ({op}): {message}")]
    Replay {
        /// 1-based position in the trace.
        index: usize,
        /// The operation's keyword.
        op: &'static str,
        /// What went wrong.
        message: String,
    },
    /// A corpus of real pages could not be made from what the personas wrote.
    #[error("page corpus: {0}")]
    Corpus(String),
    /// A persona's own bookkeeping table is full (a bound, not a bug).
    #[error("table '{table}' is full ({limit} entries)")]
    TableFull {
        /// Which table.
        table: &'static str,
        /// Its limit.
        limit: usize,
    },
}

impl AppError {
    /// Wraps a file error with the call and path it came from.
    pub fn file(call: &'static str, path: &str, source: FileError) -> Self {
        AppError::File {
            call,
            path: path.to_owned(),
            source,
        }
    }

    /// Whether the file system below ran out of space (the persona's own call, or SQLite's
    /// `SQLITE_FULL`, which the VFS reports for it).
    pub fn is_no_space(&self) -> bool {
        match self {
            AppError::File { source, .. } => matches!(source, FileError::NoSpace(_)),
            AppError::Sql(e) | AppError::Vfs(SqlVfsError::Sqlite(e)) => {
                e.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull)
            }
            _ => false,
        }
    }

    /// Whether the error is (or wraps) a power loss of the file system below.
    pub fn is_power_loss(&self) -> bool {
        match self {
            AppError::File { source, .. } => *source == FileError::PowerLost,
            AppError::Sql(e) | AppError::Vfs(SqlVfsError::Sqlite(e)) => matches!(
                e.sqlite_error_code(),
                Some(rusqlite::ErrorCode::SystemIoFailure)
                    | Some(rusqlite::ErrorCode::CannotOpen)
                    | Some(rusqlite::ErrorCode::DiskFull)
            ),
            _ => false,
        }
    }
}
