//! The pass-through codec: "compressed" bytes are the page itself.

use crate::{Codec, CodecError};

/// Copies its input (`none`): the uncompressed baseline, ratio 1.
#[derive(Clone, Debug, Default)]
pub struct Stored;

impl Codec for Stored {
    fn name(&self) -> &'static str {
        "none"
    }

    fn compress(&mut self, input: &[u8], out: &mut Vec<u8>) -> usize {
        out.clear();
        out.extend_from_slice(input);
        out.len()
    }

    fn decompress(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        expected_len: usize,
    ) -> Result<(), CodecError> {
        if input.len() != expected_len {
            return Err(CodecError::LengthMismatch {
                codec: "none",
                actual: input.len(),
                expected: expected_len,
            });
        }
        out.clear();
        out.extend_from_slice(input);
        Ok(())
    }
}
