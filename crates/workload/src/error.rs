//! The error type of file-level traces. Every variant names the file, and a bad line names
//! its number (from 1) and the field at fault.

use std::io;
use std::path::PathBuf;

use thiserror::Error;

/// Why a file-level trace (ours or an imported one) could not be read.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum FileTraceError {
    /// The file could not be opened, read or written.
    #[error("cannot read or write {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A line has a bad field, or an operation the fd state machine refuses.
    #[error("{file}:{line}: field '{field}': {message}")]
    Parse {
        file: String,
        line: u64,
        field: &'static str,
        message: String,
    },
}

/// A bad field before the caller adds the file name and the line number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    pub field: &'static str,
    pub message: String,
}

impl FieldError {
    pub fn new(field: &'static str, message: impl Into<String>) -> Self {
        FieldError {
            field,
            message: message.into(),
        }
    }

    /// `'<text>' <reason>`, the shape of every message about a value.
    pub fn value(field: &'static str, text: &str, reason: &str) -> Self {
        FieldError::new(field, format!("{} {reason}", quoted(text)))
    }

    pub fn missing(field: &'static str) -> Self {
        FieldError::new(field, "missing (the line ends before it)")
    }

    pub(crate) fn at(self, file: &str, line: u64) -> FileTraceError {
        FileTraceError::Parse {
            file: file.to_string(),
            line,
            field: self.field,
            message: self.message,
        }
    }
}

/// Longest value quoted in an error message; longer ones are cut with `...`.
const QUOTE_MAX_CHARS: usize = 40;

/// The value in single quotes, control characters escaped and cut to a readable length.
pub(crate) fn quoted(text: &str) -> String {
    flashstack_sim::text::quoted(text.as_bytes(), QUOTE_MAX_CHARS)
}

/// A non-negative decimal integer (digits only).
pub(crate) fn parse_u64(text: &str, field: &'static str) -> Result<u64, FieldError> {
    if text.is_empty() {
        return Err(FieldError::new(field, "is empty"));
    }
    let mut value: u64 = 0;
    for byte in text.bytes() {
        let digit = byte.wrapping_sub(b'0');
        if digit > 9 {
            let reason = if text.starts_with('-') {
                "must not be negative"
            } else {
                "is not a whole number"
            };
            return Err(FieldError::value(field, text, reason));
        }
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(digit)))
            .ok_or_else(|| FieldError::value(field, text, "is too large"))?;
    }
    Ok(value)
}

/// A non-negative integer that must fit a `u32` (fds, thread ids).
pub(crate) fn parse_u32(text: &str, field: &'static str) -> Result<u32, FieldError> {
    let value = parse_u64(text, field)?;
    u32::try_from(value).map_err(|_| FieldError::value(field, text, "is too large (max 2^32-1)"))
}
