//! F2FS's CRC32: the reflected IEEE polynomial (`CRCPOLY_LE`, 0xEDB88320) run from a seed
//! with no final inversion (f2fs-tools `lib/libf2fs.c` `f2fs_cal_crc32`; the kernel's
//! `f2fs_crc32` is `crc32_le` likewise). Checkpoints and superblocks seed it with
//! `F2FS_SUPER_MAGIC`; inode checksums seed it with the CRC of the volume UUID.

use crate::consts::F2FS_SUPER_MAGIC;

/// `CRCPOLY_LE`.
const CRC_POLY_LE: u32 = 0xEDB8_8320;

/// Byte-at-a-time lookup table, built at compile time.
const TABLE: [u32; 256] = build_table();

const fn build_table() -> [u32; 256] {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u32;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ CRC_POLY_LE
            } else {
                crc >> 1
            };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
}

/// Slicing-by-8 tables: `SLICES[k][b]` is the CRC of byte `b` followed by `k` zero bytes,
/// so eight bytes fold in with eight independent lookups instead of eight dependent ones
/// (checkpoints and inodes are checksummed over nearly 4 KiB at every write).
const SLICES: [[u32; 256]; 8] = build_slices();

const fn build_slices() -> [[u32; 256]; 8] {
    let mut slices = [TABLE; 8];
    let mut k = 1;
    while k < 8 {
        let mut i = 0;
        while i < 256 {
            let prev = slices[k - 1][i];
            slices[k][i] = (prev >> 8) ^ TABLE[(prev & 0xff) as usize];
            i += 1;
        }
        k += 1;
    }
    slices
}

/// Continues a CRC over `data` starting from `seed`.
pub fn crc32(seed: u32, data: &[u8]) -> u32 {
    let mut crc = seed;
    let mut words = data.chunks_exact(8);
    for w in &mut words {
        let lo = crc ^ u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
        crc = SLICES[7][(lo & 0xff) as usize]
            ^ SLICES[6][((lo >> 8) & 0xff) as usize]
            ^ SLICES[5][((lo >> 16) & 0xff) as usize]
            ^ SLICES[4][(lo >> 24) as usize]
            ^ SLICES[3][w[4] as usize]
            ^ SLICES[2][w[5] as usize]
            ^ SLICES[1][w[6] as usize]
            ^ SLICES[0][w[7] as usize];
    }
    words.remainder().iter().fold(crc, |crc, &b| {
        TABLE[((crc ^ b as u32) & 0xff) as usize] ^ (crc >> 8)
    })
}

/// The CRC metadata blocks carry: seeded with `F2FS_SUPER_MAGIC`.
pub fn f2fs_crc32(data: &[u8]) -> u32 {
    crc32(F2FS_SUPER_MAGIC, data)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bit-serial reference, the textbook definition, to pin the table.
    fn slow(mut crc: u32, data: &[u8]) -> u32 {
        for &b in data {
            crc ^= b as u32;
            for _ in 0..8 {
                crc = (crc >> 1) ^ if crc & 1 != 0 { CRC_POLY_LE } else { 0 };
            }
        }
        crc
    }

    #[test]
    fn table_matches_bit_serial_definition() {
        let data: Vec<u8> = (0..=255u8).chain(0..100).collect();
        for seed in [0, !0, F2FS_SUPER_MAGIC, 0x1234_5678] {
            assert_eq!(crc32(seed, &data), slow(seed, &data));
        }
    }

    #[test]
    fn slicing_by_8_matches_bit_serial_definition_at_every_length_and_alignment() {
        let data: Vec<u8> = (0..300u32).map(|i| (i * 167 + 13) as u8).collect();
        for start in 0..8 {
            for end in start..data.len() {
                let part = &data[start..end];
                assert_eq!(crc32(0x1234_5678, part), slow(0x1234_5678, part));
            }
        }
    }

    #[test]
    fn standard_check_value() {
        // With the usual pre/post inversion this is the CRC-32 check value of "123456789".
        assert_eq!(!crc32(!0, b"123456789"), 0xCBF4_3926);
    }
}
