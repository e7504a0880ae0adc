//! zlib (deflate with the zlib wrapper) through `flate2` on the pure-Rust `zlib-rs` backend,
//! one deflate and one inflate stream reset between pages.

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

use crate::{Codec, CodecError};

const NAME: &str = "zlib";

/// zlib streams (RFC 1950 wrapper around RFC 1951 deflate) at a fixed level.
pub struct Zlib {
    level: u32,
    deflate: Compress,
    inflate: Decompress,
}

impl Zlib {
    /// The levels accepted (0 stores, 9 compresses hardest).
    pub const LEVELS: std::ops::RangeInclusive<u32> = 0..=9;

    pub fn new(level: u32) -> Self {
        Zlib {
            level,
            deflate: Compress::new(Compression::new(level), true),
            inflate: Decompress::new(true),
        }
    }

    pub fn level(&self) -> u32 {
        self.level
    }

    /// An upper bound of the zlib stream for `len` input bytes (zlib's `compressBound`
    /// formula plus slack).
    fn bound(len: usize) -> usize {
        len + (len >> 12) + (len >> 14) + (len >> 25) + 64
    }
}

impl std::fmt::Debug for Zlib {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Zlib").field("level", &self.level).finish()
    }
}

impl Codec for Zlib {
    fn name(&self) -> &'static str {
        NAME
    }

    fn compress(&mut self, input: &[u8], out: &mut Vec<u8>) -> usize {
        out.clear();
        self.deflate.reset();
        let mut consumed = 0;
        loop {
            out.reserve(Self::bound(input.len() - consumed));
            let before = self.deflate.total_in();
            let written = out.len();
            match self
                .deflate
                .compress_vec(&input[consumed..], out, FlushCompress::Finish)
            {
                Ok(Status::StreamEnd) => break,
                // Out of room (not expected with the bound above): grow and continue, as
                // long as deflate makes progress.
                Ok(_) if self.deflate.total_in() > before || out.len() > written => {
                    consumed += (self.deflate.total_in() - before) as usize;
                }
                Ok(_) | Err(_) => {
                    out.clear();
                    break;
                }
            }
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
        self.inflate.reset(true);
        let status = self
            .inflate
            .decompress_vec(input, out, FlushDecompress::Finish)
            .map_err(|e| CodecError::Corrupt {
                codec: NAME,
                reason: e.to_string(),
            })?;
        let consumed = self.inflate.total_in() as usize;
        match status {
            Status::StreamEnd => {
                if consumed < input.len() {
                    return Err(CodecError::TrailingInput {
                        codec: NAME,
                        offset: consumed,
                        extra: input.len() - consumed,
                    });
                }
                if out.len() != expected_len {
                    return Err(CodecError::LengthMismatch {
                        codec: NAME,
                        actual: out.len(),
                        expected: expected_len,
                    });
                }
                Ok(())
            }
            _ if out.len() >= expected_len && consumed < input.len() => {
                Err(CodecError::OutputOverrun {
                    codec: NAME,
                    offset: consumed,
                    expected: expected_len,
                })
            }
            _ => Err(CodecError::Truncated {
                codec: NAME,
                offset: input.len(),
            }),
        }
    }
}
