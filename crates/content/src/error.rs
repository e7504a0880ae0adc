//! Typed errors of the content model. Every message names the offending input.

use thiserror::Error;

/// Why one `class:weight` entry of a content mix was rejected.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum MixEntryError {
    #[error("expected <class>:<weight>")]
    MissingColon,
    #[error("unknown class '{0}' (expected one of {list})", list = crate::ContentClass::NAMES_LIST)]
    UnknownClass(String),
    #[error("weight must be a whole number")]
    NotWhole,
    #[error("weight must be at most {}", u32::MAX)]
    TooLarge,
    #[error("class listed twice")]
    Duplicate,
}

#[derive(Debug, Error, Clone, PartialEq)]
pub enum ContentError {
    #[error("content class: unknown class '{0}' (expected one of {list})", list = crate::ContentClass::NAMES_LIST)]
    UnknownClass(String),
    #[error("content mix: '{entry}': {reason}")]
    MixEntry {
        entry: String,
        reason: MixEntryError,
    },
    #[error("content mix: no entries (expected e.g. \"sqlite:40,text:10,media:50\")")]
    EmptyMix,
    #[error("content mix: all weights are zero; at least one class needs a positive weight")]
    AllZero,
    #[error("content model: region_lbas must be at least 1")]
    ZeroRegion,
    #[error("content model: change_ratio {0} must be a number within 0..=1")]
    ChangeRatio(f64),
    #[error(
        "content zone {index}: LBA range {start_lba}..{end_lba} is empty (start must be below end)"
    )]
    EmptyZone {
        index: usize,
        start_lba: u64,
        end_lba: u64,
    },
    #[error("page corpus: {place}: {reason}")]
    Corpus { place: String, reason: String },
}
