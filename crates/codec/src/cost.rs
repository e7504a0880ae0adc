//! Host CPU time per 4 KiB page for each codec, in one table that every technique
//! charging compression on the host uses (MedFS's deltas, F2FS compression, FPC, COCO).
//!
//! The simulator never measures its own speed: a page compressed on the host costs the
//! time this table gives for the CPU the run models. Each row cites where its figure
//! comes from and the CPU it was measured on; a codec a CPU has no cited figure for gives
//! `None`, and the caller must make it a named, stated parameter instead of guessing.
//!
//! | CPU | codec | compress | decompress | source |
//! |---|---|---|---|---|
//! | [`Cpu::DesktopI9_9900K`] | lz4 | 740 MB/s | 4,530 MB/s | zstd README, lzbench on Silesia, Core i9-9900K, gcc 9.3 (lz4 1.9.2) |
//! | | lzo1x-1 | 690 MB/s | 820 MB/s | same table (lzo1x 2.10 -1) |
//! | | zstd -1 | 500 MB/s | 1,660 MB/s | same table (zstd 1.4.5 -1) |
//! | | zlib -1 | 90 MB/s | 400 MB/s | same table (zlib 1.2.11 -1) |
//! | [`Cpu::Snapdragon865`] | lzo1x-1 delta | 7.4 µs | 8.3 µs | MedFS (FAST '25) on the OnePlus 8T: XOR + LZO1X-1 of a page, and its inverse |
//!
//! The desktop figures are whole-file throughputs on the Silesia corpus, single thread
//! (`../shared/reference/f2fs-and-libraries.md` §6.1); per page they are `4096 B /
//! throughput`. At 4 KiB a call costs more per byte than on a whole file (the §6.2
//! measurement of the Rust crates is 2–3× slower), so these are lower bounds. Levels
//! other than the cited ones are charged the cited level's time.

use crate::CodecKind;

/// A host CPU with cited per-codec figures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cpu {
    /// Intel Core i9-9900K (desktop; the COCO seed's host class).
    DesktopI9_9900K,
    /// Qualcomm Snapdragon 865 (the OnePlus 8T of the MedFS seed).
    Snapdragon865,
}

/// Host CPU time of one 4 KiB page through a codec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageCost {
    pub compress_ns: u64,
    pub decompress_ns: u64,
}

const PAGE_BYTES: u64 = 4096;

/// Nanoseconds for one page at `mb_per_s` (10^6 bytes per second), rounded up.
const fn page_ns(mb_per_s: u64) -> u64 {
    (PAGE_BYTES * 1000).div_ceil(mb_per_s)
}

const fn from_throughput(compress_mb_s: u64, decompress_mb_s: u64) -> PageCost {
    PageCost {
        compress_ns: page_ns(compress_mb_s),
        decompress_ns: page_ns(decompress_mb_s),
    }
}

/// MedFS's delta on the Snapdragon 865: XOR with the base + LZO1X-1, and back.
pub const SD865_LZO_DELTA: PageCost = PageCost {
    compress_ns: 7_400,
    decompress_ns: 8_300,
};

/// The cited cost of one page through `kind` on `cpu`; `None` where no figure is cited
/// (and for `none`, which costs a copy the model does not charge).
pub fn page_cost(cpu: Cpu, kind: CodecKind) -> Option<PageCost> {
    match (cpu, kind) {
        (_, CodecKind::None) => None,
        (Cpu::DesktopI9_9900K, CodecKind::Lz4) => Some(from_throughput(740, 4_530)),
        (Cpu::DesktopI9_9900K, CodecKind::Lzo1x1 | CodecKind::Lzo1x1Linux) => {
            Some(from_throughput(690, 820))
        }
        (Cpu::DesktopI9_9900K, CodecKind::Zstd { .. }) => Some(from_throughput(500, 1_660)),
        (Cpu::DesktopI9_9900K, CodecKind::Zlib { .. }) => Some(from_throughput(90, 400)),
        (Cpu::Snapdragon865, CodecKind::Lzo1x1 | CodecKind::Lzo1x1Linux) => Some(SD865_LZO_DELTA),
        (Cpu::Snapdragon865, _) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_page_times_follow_the_cited_throughputs() {
        let lz4 = page_cost(Cpu::DesktopI9_9900K, CodecKind::Lz4).unwrap();
        // 4096 B at 740 MB/s = 5.535 µs; at 4,530 MB/s = 0.904 µs.
        assert_eq!((lz4.compress_ns, lz4.decompress_ns), (5_536, 905));
        let zstd = page_cost(Cpu::DesktopI9_9900K, CodecKind::Zstd { level: 1 }).unwrap();
        assert_eq!((zstd.compress_ns, zstd.decompress_ns), (8_192, 2_468));
        let lzo = page_cost(Cpu::DesktopI9_9900K, CodecKind::Lzo1x1).unwrap();
        assert!(
            lzo.decompress_ns > 5 * lz4.decompress_ns,
            "LZO decodes ~5x slower"
        );
        assert_eq!(
            page_cost(Cpu::Snapdragon865, CodecKind::Lzo1x1),
            Some(SD865_LZO_DELTA)
        );
        assert_eq!(page_cost(Cpu::Snapdragon865, CodecKind::Lz4), None);
        assert_eq!(page_cost(Cpu::DesktopI9_9900K, CodecKind::None), None);
    }
}
