//! zstd through the `zstd` crate's bulk API, one compression and one decompression context
//! reused across pages.

use zstd::bulk::{Compressor, Decompressor};

use crate::{Codec, CodecError};

const NAME: &str = "zstd";

/// zstd frames (content size recorded, no checksum) at a fixed level.
pub struct Zstd {
    level: i32,
    compressor: Compressor<'static>,
    decompressor: Decompressor<'static>,
}

impl Zstd {
    /// The smallest and largest level accepted (zstd's regular levels).
    pub const LEVELS: std::ops::RangeInclusive<i32> = 1..=22;

    /// A zstd codec at `level` (1–22). Fails only if zstd cannot create its contexts.
    pub fn new(level: i32) -> Result<Self, CodecError> {
        let init = |e: std::io::Error| CodecError::Init {
            codec: NAME,
            reason: e.to_string(),
        };
        Ok(Zstd {
            level,
            compressor: Compressor::new(level).map_err(init)?,
            decompressor: Decompressor::new().map_err(init)?,
        })
    }

    pub fn level(&self) -> i32 {
        self.level
    }
}

impl std::fmt::Debug for Zstd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Zstd").field("level", &self.level).finish()
    }
}

impl Codec for Zstd {
    fn name(&self) -> &'static str {
        NAME
    }

    fn compress(&mut self, input: &[u8], out: &mut Vec<u8>) -> usize {
        out.clear();
        out.reserve(zstd::zstd_safe::compress_bound(input.len()));
        // With compress_bound bytes of room zstd cannot run out of space; on any other
        // failure (none is known for valid contexts) the output is left empty.
        if self.compressor.compress_to_buffer(input, out).is_err() {
            out.clear();
        }
        out.len()
    }

    fn decompress(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        expected_len: usize,
    ) -> Result<(), CodecError> {
        out.clear();
        out.reserve(expected_len);
        self.decompressor
            .decompress_to_buffer(input, out)
            .map_err(|e| CodecError::Corrupt {
                codec: NAME,
                reason: e.to_string(),
            })?;
        if out.len() != expected_len {
            return Err(CodecError::LengthMismatch {
                codec: NAME,
                actual: out.len(),
                expected: expected_len,
            });
        }
        Ok(())
    }
}
