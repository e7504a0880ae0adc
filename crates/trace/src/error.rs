//! The one error type of trace ingest. Every variant names the file, so that a user running a
//! batch of traces knows which one to fix.

use std::io;
use std::path::PathBuf;

use thiserror::Error;

/// Why a trace could not be read.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum TraceError {
    /// The file could not be opened or read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A line meant to be a request has a bad field. `line` counts from 1.
    #[error("{file}:{line}: field '{field}': {message}")]
    Parse {
        file: String,
        line: u64,
        field: &'static str,
        message: String,
    },
    /// The format was not given and the first lines match none of the known ones.
    #[error(
        "{file}: cannot tell the trace format from its first lines; name it \
         (mqsim, disksim, msr, blkparse or pixel)"
    )]
    UnknownFormat { file: String },
    /// The file parsed but holds no request (every line was skipped or zero-length).
    #[error("{file}: no requests found (every line was blank, a header, not I/O or zero-length)")]
    Empty { file: String },
}
