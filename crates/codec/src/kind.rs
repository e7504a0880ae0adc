//! Codec configuration strings: `lz4`, `lzo1x-1`, `zstd:L`, `zlib:L`, `none`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::{Codec, CodecError, Lz4, Lzo1x1, Lzo1x1Linux, ParseCodecError, Stored, Zlib, Zstd};

/// Which codec, with its level: the configuration form of a [`Codec`].
///
/// Parsed from and printed as `lz4`, `lzo1x-1`, `zstd:L` (1–22; `zstd` alone is level 3,
/// zstd's default), `zlib:L` (0–9; `zlib` alone is level 6, zlib's default) and `none`.
/// Serde uses the same strings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum CodecKind {
    /// No compression: output = input.
    None,
    /// LZ4 block format.
    Lz4,
    /// LZO1X-1 (this crate's [`Lzo1x1`]).
    Lzo1x1,
    /// LZO1X-1 as Linux's `lib/lzo` writes it ([`Lzo1x1Linux`]): what the kernel's F2FS
    /// compresses `lzo` clusters with.
    Lzo1x1Linux,
    /// zstd at a level.
    Zstd { level: i32 },
    /// zlib at a level.
    Zlib { level: u32 },
}

impl CodecKind {
    pub const ZSTD_DEFAULT_LEVEL: i32 = 3;
    pub const ZLIB_DEFAULT_LEVEL: u32 = 6;

    /// Builds a codec with fresh working state. Fails only if a library cannot allocate
    /// its context (zstd).
    pub fn build(self) -> Result<Box<dyn Codec>, CodecError> {
        Ok(match self {
            CodecKind::None => Box::new(Stored),
            CodecKind::Lz4 => Box::new(Lz4::new()),
            CodecKind::Lzo1x1 => Box::new(Lzo1x1::new()),
            CodecKind::Lzo1x1Linux => Box::new(Lzo1x1Linux::new()),
            CodecKind::Zstd { level } => Box::new(Zstd::new(level)?),
            CodecKind::Zlib { level } => Box::new(Zlib::new(level)),
        })
    }

    /// The codec's family name, without level (`zstd` for `zstd:19`).
    pub fn name(self) -> &'static str {
        match self {
            CodecKind::None => "none",
            CodecKind::Lz4 => "lz4",
            CodecKind::Lzo1x1 => "lzo1x-1",
            CodecKind::Lzo1x1Linux => "lzo1x-1-linux",
            CodecKind::Zstd { .. } => "zstd",
            CodecKind::Zlib { .. } => "zlib",
        }
    }
}

impl Default for CodecKind {
    /// LZO1X-1, the codec of the LDC paper's measurements.
    fn default() -> Self {
        CodecKind::Lzo1x1
    }
}

impl fmt::Display for CodecKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CodecKind::Zstd { level } => write!(f, "zstd:{level}"),
            CodecKind::Zlib { level } => write!(f, "zlib:{level}"),
            other => f.write_str(other.name()),
        }
    }
}

fn parse_level<T: FromStr + PartialOrd + Into<i64> + Copy>(
    codec: &'static str,
    text: &str,
    min: T,
    max: T,
) -> Result<T, ParseCodecError> {
    let bad = || ParseCodecError::BadLevel {
        codec,
        level: text.to_string(),
        min: min.into(),
        max: max.into(),
    };
    let level: T = text.trim().parse().map_err(|_| bad())?;
    if level < min || level > max {
        return Err(bad());
    }
    Ok(level)
}

impl FromStr for CodecKind {
    type Err = ParseCodecError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let (name, level) = match s.split_once(':') {
            Some((name, level)) => (name.trim(), Some(level)),
            None => (s, None),
        };
        let lower = name.to_ascii_lowercase();
        let plain = |kind: CodecKind| match level {
            Some(_) => Err(ParseCodecError::LevelNotAccepted(s.to_string())),
            None => Ok(kind),
        };
        match lower.as_str() {
            "none" => plain(CodecKind::None),
            "lz4" => plain(CodecKind::Lz4),
            "lzo1x-1" | "lzo1x_1" | "lzo" => plain(CodecKind::Lzo1x1),
            "lzo1x-1-linux" => plain(CodecKind::Lzo1x1Linux),
            "zstd" => Ok(CodecKind::Zstd {
                level: match level {
                    Some(l) => parse_level("zstd", l, *Zstd::LEVELS.start(), *Zstd::LEVELS.end())?,
                    None => Self::ZSTD_DEFAULT_LEVEL,
                },
            }),
            "zlib" => Ok(CodecKind::Zlib {
                level: match level {
                    Some(l) => parse_level("zlib", l, *Zlib::LEVELS.start(), *Zlib::LEVELS.end())?,
                    None => Self::ZLIB_DEFAULT_LEVEL,
                },
            }),
            _ => Err(ParseCodecError::Unknown(s.to_string())),
        }
    }
}

impl TryFrom<String> for CodecKind {
    type Error = ParseCodecError;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<CodecKind> for String {
    fn from(kind: CodecKind) -> String {
        kind.to_string()
    }
}
