//! Errors of measuring and defragmenting.

use flashstack_block::BlockError;
use flashstack_f2fs::FsError;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum JanusdError {
    #[error(transparent)]
    Fs(#[from] FsError),
    #[error("{path}: reading it through the device: {source}")]
    Read { path: String, source: BlockError },
    #[error("{path}: defragmenting it: {source}")]
    Defrag { path: String, source: FsError },
    #[error(
        "--mode {mode} needs {capability}, which is not available yet; modes copy and P \
         work today"
    )]
    MissingCapability {
        mode: &'static str,
        capability: &'static str,
    },
    #[error(
        "--mode {mode} chooses files by where their pages sit on the flash, which a plain \
         image does not record: run it on a phone (--phone FILE)"
    )]
    NeedsPlacement { mode: &'static str },
}
