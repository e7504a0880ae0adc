//! LZ4 block format through `lz4_flex`, with a reused hash table.

use lz4_flex::block::{self, CompressTable};

use crate::{Codec, CodecError};

const NAME: &str = "lz4";

/// LZ4 block format (no frame, no stored length), `lz4_flex`'s safe decoder.
pub struct Lz4 {
    table: CompressTable,
}

impl Lz4 {
    pub fn new() -> Self {
        Lz4 {
            table: CompressTable::default(),
        }
    }
}

impl Default for Lz4 {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Lz4 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Lz4")
    }
}

impl Codec for Lz4 {
    fn name(&self) -> &'static str {
        NAME
    }

    fn compress(&mut self, input: &[u8], out: &mut Vec<u8>) -> usize {
        out.clear();
        out.resize(block::get_maximum_output_size(input.len()), 0);
        // The output holds the format's worst case, the only failure lz4_flex reports.
        let len = block::compress_into_with_table(input, out, &mut self.table).unwrap_or(0);
        out.truncate(len);
        len
    }

    fn decompress(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        expected_len: usize,
    ) -> Result<(), CodecError> {
        out.clear();
        out.resize(expected_len, 0);
        let written = block::decompress_into(input, out).map_err(|e| CodecError::Corrupt {
            codec: NAME,
            reason: e.to_string(),
        })?;
        if written != expected_len {
            return Err(CodecError::LengthMismatch {
                codec: NAME,
                actual: written,
                expected: expected_len,
            });
        }
        Ok(())
    }
}
