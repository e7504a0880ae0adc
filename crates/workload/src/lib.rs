//! Mobile app workloads above the file system. For now: **file-level traces**.
//!
//! A file-level trace is one file operation per line — virtual time, thread, operation,
//! fd or path, offset, length and, for writes, what was written (a content class with an
//! optional change ratio, or the captured bytes). `docs/file-traces.md` is the format's
//! specification. This crate holds:
//!
//! * [`FileOp`] / [`FileTrace`], the in-memory form, and [`Resolver`], the fd state
//!   machine (which path each fd names, its position, what the trace shows of each file's
//!   size);
//! * [`text`]: the streaming [`Reader`](text::Reader) (errors name file, line and field)
//!   and the writer; `parse(write(t)) == t`;
//! * importers for the MobiGen syscall-trace format ([`mobigen`]) and for
//!   `strace -f -tt` output ([`strace`]);
//! * [`analyze`]: the MedFS table's columns (volume, small-file share, update ratio, update
//!   difference) with sync counts and a file-type breakdown.

pub mod analyze;
mod dirs;
mod error;
pub mod filebench;
mod import;
pub mod mobigen;
mod op;
mod preexisting;
mod resolve;
pub mod strace;
pub mod text;

pub use analyze::{analyze, Analyzer, ColumnNote, FileType, TraceSummary};
pub use dirs::{directory_paths, mark_directory_opens};
pub use error::{FieldError, FileTraceError};
pub use import::{class_for_path, class_for_prefix, ImportReport};
pub use op::{
    Access, Data, EncodedPath, FileOp, FileTrace, OpKind, OpenFlags, INLINE_DATA_MAX_BYTES,
    OP_LEN_MAX_BYTES,
};
pub use preexisting::{preexisting_files, PreexistingFile};
pub use resolve::{Effect, FileMeta, Resolver, FILES_MAX, OPEN_FDS_MAX};
