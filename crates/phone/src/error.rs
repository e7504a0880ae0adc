//! Errors of aging, measuring, saving and loading a phone.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum PhoneError {
    /// A file call failed while the phone was being used.
    #[error("{op} {path}: {source}")]
    File {
        op: &'static str,
        path: String,
        #[source]
        source: flashstack_sqlvfs::FileError,
    },
    /// A persona (or an archetype's session) failed; `no_space`: because the file system
    /// ran out of space.
    #[error("{app}: {message}")]
    App {
        app: String,
        message: String,
        no_space: bool,
    },
    #[error("stack: {0}")]
    Stack(String),
    /// The device could not be saved or rebuilt.
    #[error("device: {0}")]
    Device(String),
    /// An impossible aging specification.
    #[error("{field}: {reason}")]
    Spec { field: &'static str, reason: String },
    /// A phone file that is not one, is damaged, or is of another version; names the file
    /// and what is wrong with it.
    #[error("{path}: {what}")]
    Format { path: String, what: String },
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The phone was made for another device than the stack it is started on.
    #[error("{0}")]
    Incompatible(String),
}

impl PhoneError {
    /// Whether the file system ran out of space (ENOSPC) under a file call or an app.
    pub fn is_no_space(&self) -> bool {
        match self {
            PhoneError::File { source, .. } => {
                matches!(source, flashstack_sqlvfs::FileError::NoSpace(_))
            }
            PhoneError::App { no_space, .. } => *no_space,
            _ => false,
        }
    }
}
