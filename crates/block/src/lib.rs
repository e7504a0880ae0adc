//! The block interface: read / write / trim / flush of 4 KiB logical blocks (LBAs) with real
//! bytes and placement hints. The FTL implements it; trace replay and the file system use it.

pub mod explore;
pub mod read_model;
pub mod record;
pub mod volatile;

pub use read_model::{runs_of, timed_read, ReadModel, ReadTiming};
pub use record::{BlockRecorder, BlockRequest, RequestSink};
pub use volatile::{PowerLoss, VolatileCache, VolatileCacheConfig, VolatileCacheCounters};

use flashstack_sim::Nanos;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Size of one logical block address in bytes. Every layer above the FTL addresses storage
/// in these units.
pub const LBA_SIZE: usize = 4096;

/// Data temperature as the host sees it (F2FS's hot/warm/cold logs, UFS's stream hints).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Temperature {
    Hot,
    Warm,
    Cold,
}

/// Placement hints that travel with a write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Hints {
    pub temperature: Option<Temperature>,
    /// A host-assigned stream (UFS/NVMe multi-stream). Devices without streams ignore it.
    pub stream_id: Option<u8>,
    /// Reserved for compressing devices: the host asks the device to compress this data.
    pub compress_on_device: bool,
    /// Force unit access: the write is durable when it completes (it bypasses, or is
    /// destaged from, any volatile write buffer of the device), as SCSI/UFS FUA.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fua: bool,
}

/// The kinds of request the interface carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RequestKind {
    Read,
    Write,
    Trim,
    Flush,
}

impl RequestKind {
    pub const ALL: [RequestKind; 4] = [
        RequestKind::Read,
        RequestKind::Write,
        RequestKind::Trim,
        RequestKind::Flush,
    ];

    pub fn name(self) -> &'static str {
        match self {
            RequestKind::Read => "read",
            RequestKind::Write => "write",
            RequestKind::Trim => "trim",
            RequestKind::Flush => "flush",
        }
    }
}

/// The bytes of a write. `Unstored` carries only the number of LBAs: the device updates its
/// mapping and counters but keeps no contents (the fast, address-only mode of peer
/// simulators). Contents-aware techniques need `Bytes`.
#[derive(Clone, Copy, Debug)]
pub enum Payload<'a> {
    /// Exactly `count × LBA_SIZE` bytes.
    Bytes(&'a [u8]),
    Unstored {
        lba_count: u32,
    },
}

impl Payload<'_> {
    pub fn lba_count(&self) -> u32 {
        match self {
            Payload::Bytes(bytes) => (bytes.len() / LBA_SIZE) as u32,
            Payload::Unstored { lba_count } => *lba_count,
        }
    }
}

/// When a request started being served and when it completed, in virtual time.
/// Latency is `complete_ns − arrival_ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    pub start_ns: Nanos,
    pub complete_ns: Nanos,
}

#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BlockError {
    #[error("LBA range {lba}..{} is beyond the device's {capacity_lbas} LBAs", lba + *count as u64)]
    OutOfRange {
        lba: u64,
        count: u32,
        capacity_lbas: u64,
    },
    #[error("a request must cover at least one LBA")]
    Empty,
    #[error("write payload of {len} bytes is not a whole number of {LBA_SIZE}-byte LBAs")]
    Misaligned { len: usize },
    #[error("read buffer of {len} bytes does not match {count} LBAs")]
    BadBuffer { len: usize, count: u32 },
    #[error("the device lost power; it must be power-cycled (recovered) before further use")]
    PowerLoss,
    #[error("the device has no free space left: {reason}")]
    NoSpace { reason: String },
    #[error(
        "the device stores no contents; reads with a buffer need a device built with contents"
    )]
    ContentsNotStored,
    #[error("stored data cannot be read back: {reason}")]
    Unreadable { reason: String },
    #[error(
        "remap of {count} LBAs from {src} to {dst}: the ranges overlap; remap between \
         disjoint ranges"
    )]
    RemapOverlap { src: u64, dst: u64, count: u32 },
    #[error("remap of {count} LBAs exceeds the device's {max} LBAs per remap; split it")]
    RemapTooLong { count: u32, max: u32 },
    #[error("the device does not support {operation}: {reason}")]
    Unsupported {
        operation: &'static str,
        reason: String,
    },
}

/// A block device as the host sees it.
///
/// Physics and durability: a completed write is readable at once, but survives a power cut
/// only once a later `flush` has completed; a completed `trim` makes the range read as zeros
/// and is durable after the next `flush` too. Requests are served in call order; `arrival_ns`
/// must not decrease from call to call.
pub trait BlockDevice {
    /// Number of addressable LBAs.
    fn capacity_lbas(&self) -> u64;

    fn write(
        &mut self,
        arrival_ns: Nanos,
        lba: u64,
        payload: Payload<'_>,
        hints: Hints,
    ) -> Result<Completion, BlockError>;

    /// Reads `count` LBAs; with `out` (exactly `count × LBA_SIZE` bytes) the contents are
    /// copied out. Unwritten and trimmed LBAs read as zeros.
    fn read(
        &mut self,
        arrival_ns: Nanos,
        lba: u64,
        count: u32,
        out: Option<&mut [u8]>,
    ) -> Result<Completion, BlockError>;

    fn trim(&mut self, arrival_ns: Nanos, lba: u64, count: u32) -> Result<Completion, BlockError>;

    /// Makes every completed write and trim durable.
    fn flush(&mut self, arrival_ns: Nanos) -> Result<Completion, BlockError>;

    /// The device's REMAP capability, if it has one ([`Remap`]). Devices without it (and
    /// wrappers that do not pass it through) keep this default.
    fn as_remap(&mut self) -> Option<&mut dyn Remap> {
        None
    }

    /// Flash still free for host data, for a device whose exported capacity is larger
    /// than its flash (a compressing SSD): a file system checks it before writing so that
    /// it fails with ENOSPC while it can still write its own metadata. `None` (the
    /// default) for devices whose flash backs every exported LBA.
    fn physical_free_bytes(&self) -> Option<u64> {
        None
    }

    /// The flash the device lets live host data take in all (its physical budget), for
    /// the same devices as [`BlockDevice::physical_free_bytes`]; budget − free is the flash
    /// live data really takes. `None` (the default) elsewhere.
    fn physical_budget_bytes(&self) -> Option<u64> {
        None
    }
}

/// An optional capability: moving data between LBA ranges by changing the device's
/// mapping table, without copying the data (Janusd's logical defragmentation, SHARE-style
/// commands of research SSDs). A device offers it through [`BlockDevice::as_remap`].
///
/// Semantics: a remap of extents `(src, dst, count)` makes each `dst + i` read what
/// `src + i` reads at the moment of the call (zeros if `src + i` is unmapped, in which case
/// `dst + i` becomes unmapped as by a trim). `src` is left as it is: both ranges then share
/// the same flash slots until either side is overwritten or trimmed, and the device keeps
/// a reference count per slot so that the data lives while any LBA refers to it. A caller
/// that wants a move (Janusd: the old blocks are freed by the file system) trims `src`
/// afterwards; the trim only drops references, it never touches the shared data.
///
/// Physics (time cost): a remap programs no user data. It costs the controller's command
/// overhead, a flush of the device's write buffers (so that every source slot is on flash
/// and can be named in a durable record), and the program of one mapping-record page that
/// names every destination LBA and the slot it now refers to. Garbage collection later
/// moves a shared slot once and re-points every LBA that refers to it.
///
/// Durability and atomicity: when a remap returns, it is durable (its record is on flash),
/// and so is everything written or trimmed before it (the flush). A power cut during the
/// call leaves either the whole remap, every extent of it, or none of it: one record page
/// carries all of it, which bounds the LBAs of one call by [`Remap::remap_lbas_max`].
///
/// Errors (never panics; a refused remap changes nothing): a range beyond the device
/// ([`BlockError::OutOfRange`]), no extent or an empty one ([`BlockError::Empty`]), a
/// destination LBA named twice or inside a source range ([`BlockError::RemapOverlap`]),
/// more than `remap_lbas_max` LBAs ([`BlockError::RemapTooLong`]), a device state in which
/// it cannot remap ([`BlockError::Unsupported`]), and power loss.
pub trait Remap {
    /// The most LBAs one call may remap (one mapping-record page).
    fn remap_lbas_max(&self) -> u32;

    /// Makes `dst..dst+count` refer to what `src..src+count` holds; see the trait's doc.
    fn remap(
        &mut self,
        arrival_ns: Nanos,
        src: u64,
        dst: u64,
        count: u32,
    ) -> Result<Completion, BlockError> {
        self.remap_extents(arrival_ns, &[RemapExtent { src, dst, count }])
    }

    /// Several extents in one atomic call (one record page): what a defragmenter issues
    /// for a fragmented file, whose blocks move in many short runs.
    fn remap_extents(
        &mut self,
        arrival_ns: Nanos,
        extents: &[RemapExtent],
    ) -> Result<Completion, BlockError>;
}

/// The REMAP of `dev`, the device a wrapper wraps, or the error the wrapper (`wrapper`
/// names it) returns when that device has none.
pub fn remap_below<'a, D: BlockDevice + ?Sized>(
    dev: &'a mut D,
    wrapper: &str,
) -> Result<&'a mut dyn Remap, BlockError> {
    dev.as_remap().ok_or_else(|| BlockError::Unsupported {
        operation: "remap",
        reason: format!("the device below the {wrapper} has no REMAP"),
    })
}

/// One extent of a remap: `count` LBAs from `src` onto `dst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RemapExtent {
    pub src: u64,
    pub dst: u64,
    pub count: u32,
}

/// Checks that `lba..lba+count` is a non-empty range inside a device of `capacity_lbas`.
pub fn check_range(lba: u64, count: u32, capacity_lbas: u64) -> Result<(), BlockError> {
    if count == 0 {
        return Err(BlockError::Empty);
    }
    match lba.checked_add(count as u64) {
        Some(end) if end <= capacity_lbas => Ok(()),
        _ => Err(BlockError::OutOfRange {
            lba,
            count,
            capacity_lbas,
        }),
    }
}

/// Checks a single-extent remap request (see [`check_remap_extents`]).
pub fn check_remap(
    src: u64,
    dst: u64,
    count: u32,
    capacity_lbas: u64,
    max: u32,
) -> Result<(), BlockError> {
    check_remap_extents(&[RemapExtent { src, dst, count }], capacity_lbas, max)
}

/// Checks a remap request: at least one extent, each non-empty and inside the device, at
/// most `max` LBAs in all, and no destination LBA named twice or inside a source range.
pub fn check_remap_extents(
    extents: &[RemapExtent],
    capacity_lbas: u64,
    max: u32,
) -> Result<(), BlockError> {
    if extents.is_empty() {
        return Err(BlockError::Empty);
    }
    let mut total: u64 = 0;
    for e in extents {
        check_range(e.src, e.count, capacity_lbas)?;
        check_range(e.dst, e.count, capacity_lbas)?;
        total += e.count as u64;
    }
    if total > max as u64 {
        return Err(BlockError::RemapTooLong {
            count: total.min(u32::MAX as u64) as u32,
            max,
        });
    }
    let mut dsts: Vec<&RemapExtent> = extents.iter().collect();
    dsts.sort_unstable_by_key(|e| e.dst);
    let overlap = |e: &RemapExtent| BlockError::RemapOverlap {
        src: e.src,
        dst: e.dst,
        count: e.count,
    };
    for pair in dsts.windows(2) {
        if pair[0].dst + pair[0].count as u64 > pair[1].dst {
            return Err(overlap(pair[1]));
        }
    }
    for e in extents {
        // The last destination extent starting before this source range ends.
        let end = e.src + e.count as u64;
        let i = dsts.partition_point(|d| d.dst < end);
        if i > 0 && dsts[i - 1].dst + dsts[i - 1].count as u64 > e.src {
            return Err(overlap(e));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_checks() {
        assert_eq!(check_range(0, 1, 1), Ok(()));
        assert!(matches!(
            check_range(0, 2, 1),
            Err(BlockError::OutOfRange { .. })
        ));
        assert_eq!(check_range(3, 0, 10), Err(BlockError::Empty));
        assert!(check_range(u64::MAX, 2, u64::MAX).is_err());
    }

    #[test]
    fn remap_checks() {
        assert_eq!(check_remap(0, 4, 4, 8, 4), Ok(()));
        assert_eq!(
            check_remap(0, 3, 4, 8, 4),
            Err(BlockError::RemapOverlap {
                src: 0,
                dst: 3,
                count: 4
            })
        );
        assert!(matches!(
            check_remap(0, 5, 4, 8, 4),
            Err(BlockError::OutOfRange { .. })
        ));
        assert_eq!(
            check_remap(0, 8, 5, 16, 4),
            Err(BlockError::RemapTooLong { count: 5, max: 4 })
        );
        assert_eq!(check_remap(0, 8, 0, 16, 4), Err(BlockError::Empty));
        assert!(check_remap(u64::MAX - 1, 0, 4, u64::MAX, 8).is_err());
    }

    #[test]
    fn remap_extent_checks() {
        let e = |src, dst, count| RemapExtent { src, dst, count };
        assert_eq!(
            check_remap_extents(&[e(0, 10, 2), e(5, 20, 2)], 32, 8),
            Ok(())
        );
        // A destination inside another extent's source range.
        assert!(matches!(
            check_remap_extents(&[e(0, 10, 2), e(10, 20, 2)], 32, 8),
            Err(BlockError::RemapOverlap { .. })
        ));
        // Two destinations overlapping.
        assert!(matches!(
            check_remap_extents(&[e(0, 10, 2), e(4, 11, 2)], 32, 8),
            Err(BlockError::RemapOverlap { .. })
        ));
        assert_eq!(
            check_remap_extents(&[e(0, 10, 5), e(5, 20, 4)], 32, 8),
            Err(BlockError::RemapTooLong { count: 9, max: 8 })
        );
        assert_eq!(check_remap_extents(&[], 32, 8), Err(BlockError::Empty));
        assert_eq!(
            check_remap_extents(&[e(0, 10, 1), e(1, 11, 0)], 32, 8),
            Err(BlockError::Empty)
        );
    }
}
