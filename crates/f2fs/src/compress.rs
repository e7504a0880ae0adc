//! F2FS compression's cluster format (the kernel's `struct compress_data`; facts from
//! `../shared/reference/f2fs-and-libraries.md` §5), as pure functions: a cluster of
//! 2^`log_cluster_size` pages is compressed as one buffer; the blocks that hold it start
//! with a 24-byte header (`clen`: compressed bytes, `chksum`: CRC of them or 0, four
//! reserved words), then the codec's bytes; the cluster is kept compressed only when that
//! saves at least one block.
//!
//! This is the building block the file system's addressing layer (`fs/pagemap.rs`)
//! will call for F2FS compression; it is not wired into reads or writes yet
//! (`docs/f2fs.md`, "Compression").

use flashstack_codec::{CodecError, CodecKind};

use crate::consts::BLOCK_SIZE;

/// `COMPRESS_HEADER_SIZE`: `clen`, `chksum` and four reserved words.
pub const COMPRESS_HEADER_BYTES: usize = 24;
/// `i_log_cluster_size` bounds: 4 pages (the default and minimum) to 256.
pub const MIN_LOG_CLUSTER_SIZE: u8 = 2;
pub const MAX_LOG_CLUSTER_SIZE: u8 = 8;

/// `i_compress_algorithm` values (`COMPRESS_LZO`, `COMPRESS_LZ4`, `COMPRESS_ZSTD`,
/// `COMPRESS_LZORLE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    Lzo = 0,
    Lz4 = 1,
    Zstd = 2,
    LzoRle = 3,
}

impl Algorithm {
    pub fn from_disk(v: u8) -> Option<Algorithm> {
        [Self::Lzo, Self::Lz4, Self::Zstd, Self::LzoRle]
            .into_iter()
            .find(|a| *a as u8 == v)
    }

    /// Our codec for it; LZO-RLE has none here.
    pub fn codec(self) -> Option<CodecKind> {
        match self {
            // The kernel's F2FS calls Linux's `lzo1x_1_compress`.
            Algorithm::Lzo => Some(CodecKind::Lzo1x1Linux),
            Algorithm::Lz4 => Some(CodecKind::Lz4),
            Algorithm::Zstd => Some(CodecKind::Zstd {
                level: F2FS_ZSTD_DEFAULT_LEVEL,
            }),
            Algorithm::LzoRle => None,
        }
    }
}

/// `F2FS_ZSTD_DEFAULT_CLEVEL`.
pub const F2FS_ZSTD_DEFAULT_LEVEL: i32 = 1;

/// Why a cluster's stored bytes do not decode.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ClusterError {
    #[error("clen {clen} does not fit the {blocks} compressed blocks of the cluster")]
    BadLength { clen: u32, blocks: usize },
    #[error("chksum {stored:#x} but the compressed bytes give {computed:#x}")]
    BadChecksum { stored: u32, computed: u32 },
    #[error("algorithm {0} has no codec here")]
    NoCodec(u8),
    #[error("{0}")]
    Codec(#[from] CodecError),
}

/// The most compressed bytes a cluster of `pages` pages may keep: it must save a block.
pub fn max_clen(pages: usize) -> usize {
    (BLOCK_SIZE * pages.saturating_sub(1)).saturating_sub(COMPRESS_HEADER_BYTES)
}

/// Compresses a whole cluster (`data` is `pages × 4 KiB`): the bytes of its compressed
/// blocks (header, codec bytes, zero padding to whole blocks), or `None` when that would
/// not save a block (the cluster is then written raw). With `chksum`, the header carries
/// `f2fs_crc32` of the compressed bytes (the `compress_chksum` mount option; the kernel
/// seeds it with `F2FS_SUPER_MAGIC`, as [`crate::crc::f2fs_crc32`] does), else 0.
pub fn compress_cluster(
    kind: CodecKind,
    data: &[u8],
    chksum: bool,
) -> Result<Option<Vec<u8>>, CodecError> {
    assert!(
        data.len().is_multiple_of(BLOCK_SIZE) && !data.is_empty(),
        "a cluster is whole pages"
    );
    let mut codec = kind.build()?;
    let mut cdata = Vec::new();
    codec.compress(data, &mut cdata);
    if cdata.len() > max_clen(data.len() / BLOCK_SIZE) {
        return Ok(None);
    }
    let stored = COMPRESS_HEADER_BYTES + cdata.len();
    let mut out = vec![0u8; stored.div_ceil(BLOCK_SIZE) * BLOCK_SIZE];
    out[0..4].copy_from_slice(&(cdata.len() as u32).to_le_bytes());
    let sum = if chksum {
        crate::crc::f2fs_crc32(&cdata)
    } else {
        0
    };
    out[4..8].copy_from_slice(&sum.to_le_bytes());
    out[COMPRESS_HEADER_BYTES..stored].copy_from_slice(&cdata);
    Ok(Some(out))
}

/// Decodes a compressed cluster from its blocks' bytes into `pages × 4 KiB`; checks
/// `clen` against the blocks and, with `chksum` (the inode's `COMPRESS_CHKSUM` flag),
/// the checksum.
pub fn decompress_cluster(
    algorithm: u8,
    blocks: &[u8],
    pages: usize,
    chksum: bool,
) -> Result<Vec<u8>, ClusterError> {
    let n = blocks.len() / BLOCK_SIZE;
    if blocks.len() < COMPRESS_HEADER_BYTES {
        return Err(ClusterError::BadLength { clen: 0, blocks: n });
    }
    let word = |at: usize| {
        u32::from_le_bytes([blocks[at], blocks[at + 1], blocks[at + 2], blocks[at + 3]])
    };
    let clen = word(0);
    let end = COMPRESS_HEADER_BYTES.saturating_add(clen as usize);
    if end > blocks.len() || clen as usize > max_clen(pages) {
        return Err(ClusterError::BadLength { clen, blocks: n });
    }
    let cdata = &blocks[COMPRESS_HEADER_BYTES..end];
    let stored = word(4);
    if chksum {
        let computed = crate::crc::f2fs_crc32(cdata);
        if computed != stored {
            return Err(ClusterError::BadChecksum { stored, computed });
        }
    }
    let kind = Algorithm::from_disk(algorithm)
        .and_then(Algorithm::codec)
        .ok_or(ClusterError::NoCodec(algorithm))?;
    let mut out = Vec::new();
    kind.build()?
        .decompress(cdata, &mut out, pages * BLOCK_SIZE)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_cluster(pages: usize) -> Vec<u8> {
        let words = ["alpha ", "beta ", "flash ", "stack ", "delta "];
        let mut out = Vec::new();
        let mut i = 7usize;
        while out.len() < pages * BLOCK_SIZE {
            i = i.wrapping_mul(2_654_435_761).wrapping_add(1);
            out.extend_from_slice(words[(i >> 16) % words.len()].as_bytes());
        }
        out.truncate(pages * BLOCK_SIZE);
        out
    }

    #[test]
    fn clusters_round_trip_with_each_codec_and_save_a_block() {
        for alg in [Algorithm::Lzo, Algorithm::Lz4, Algorithm::Zstd] {
            for log in [MIN_LOG_CLUSTER_SIZE, 4] {
                let pages = 1 << log;
                let data = text_cluster(pages);
                for chksum in [false, true] {
                    let kind = alg.codec().unwrap();
                    let blocks = compress_cluster(kind, &data, chksum).unwrap().unwrap();
                    assert!(blocks.len() < data.len(), "{alg:?} saves a block");
                    assert!(blocks.len().is_multiple_of(BLOCK_SIZE));
                    let back = decompress_cluster(alg as u8, &blocks, pages, chksum).unwrap();
                    assert!(back == data, "{alg:?} log {log} chksum {chksum}");
                }
            }
        }
    }

    #[test]
    fn incompressible_clusters_stay_raw() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let data: Vec<u8> = (0..4 * BLOCK_SIZE)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        assert_eq!(
            compress_cluster(CodecKind::Lz4, &data, false).unwrap(),
            None
        );
        assert_eq!(max_clen(4), 3 * BLOCK_SIZE - 24);
    }

    #[test]
    fn corrupt_headers_are_errors_not_panics() {
        let data = text_cluster(4);
        let mut blocks = compress_cluster(CodecKind::Lz4, &data, true)
            .unwrap()
            .unwrap();
        let mut bad_sum = blocks.clone();
        bad_sum[COMPRESS_HEADER_BYTES] ^= 1;
        assert!(matches!(
            decompress_cluster(1, &bad_sum, 4, true),
            Err(ClusterError::BadChecksum { .. })
        ));
        blocks[0..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(
            decompress_cluster(1, &blocks, 4, true),
            Err(ClusterError::BadLength { .. })
        ));
        assert_eq!(
            decompress_cluster(
                3,
                &compress_cluster(CodecKind::Lz4, &data, false)
                    .unwrap()
                    .unwrap(),
                4,
                false
            ),
            Err(ClusterError::NoCodec(3))
        );
        assert!(decompress_cluster(1, &[0u8; 8], 4, false).is_err());
        assert!(decompress_cluster(1, &[], 4, false).is_err());
    }
}
