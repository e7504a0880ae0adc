//! Typed errors: corrupt compressed input and bad codec names.

use thiserror::Error;

/// Why compressed input could not be decompressed. Offsets are byte positions in the
/// compressed input; `codec` is the codec's configuration name.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum CodecError {
    /// The input ended inside an instruction or before the end marker.
    #[error("{codec}: compressed input ends early (needed a byte at offset {offset})")]
    Truncated { codec: &'static str, offset: usize },
    /// A match refers further back than the output decoded so far.
    #[error(
        "{codec}: the match at input offset {offset} reaches {distance} bytes back, \
         but only {decoded} bytes are decoded"
    )]
    DistanceTooFar {
        codec: &'static str,
        offset: usize,
        distance: usize,
        decoded: usize,
    },
    /// The input would decode to more than the expected length.
    #[error("{codec}: output exceeds the expected {expected} bytes (at input offset {offset})")]
    OutputOverrun {
        codec: &'static str,
        offset: usize,
        expected: usize,
    },
    /// The input decoded completely, to a different length than expected.
    #[error("{codec}: decoded {actual} bytes, expected {expected}")]
    LengthMismatch {
        codec: &'static str,
        actual: usize,
        expected: usize,
    },
    /// An instruction that can only be an end marker is not the canonical one.
    #[error("{codec}: malformed end marker at input offset {offset}")]
    BadEndMarker { codec: &'static str, offset: usize },
    /// Bytes follow the end of the compressed data.
    #[error("{codec}: {extra} bytes follow the end marker (at input offset {offset})")]
    TrailingInput {
        codec: &'static str,
        offset: usize,
        extra: usize,
    },
    /// A library could not set up its working state.
    #[error("{codec}: cannot initialise: {reason}")]
    Init { codec: &'static str, reason: String },
    /// A library decoder rejected the input; `reason` is its message.
    #[error("{codec}: corrupt input: {reason}")]
    Corrupt { codec: &'static str, reason: String },
}

/// Why a string is not a codec configuration (see [`crate::CodecKind`]).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ParseCodecError {
    #[error(
        "unknown codec `{0}` (expected one of: lz4, lzo1x-1, zstd[:level], zlib[:level], none)"
    )]
    Unknown(String),
    #[error("codec `{0}` takes no level")]
    LevelNotAccepted(String),
    #[error("bad {codec} level `{level}` (expected an integer in {min}..={max})")]
    BadLevel {
        codec: &'static str,
        level: String,
        min: i64,
        max: i64,
    },
}
