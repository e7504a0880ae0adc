//! Thin FUSE adapters over flashstack's core.
//!
//! File-system mode ([`TreeFs`]) mounts any [`InodeFs`] core: [`F2fsTree`], the page cache
//! over F2FS over an emulated device (the stack the app personas use), or [`MemTree`], the
//! in-memory reference the adapter is tested against.
//!
//! Block-file mode ([`DiskTree`]) exposes an emulated device as a single file, `disk.img`,
//! so that `losetup`, `mkfs.ext4` (or btrfs, xfs) and `mount` put a real kernel file system
//! on the emulated FTL and NAND, and the FTL techniques are measured under that file
//! system's traffic. All semantics live in [`BlockFile`], which is tested without FUSE; the
//! adapter only decodes requests, calls it, and maps its errors to errno in one place
//! ([`errno`]).
//!
//! # Virtual time
//!
//! FUSE requests carry no timestamps that could be replayed deterministically, so virtual
//! time follows the requests' order: each request arrives when the previous one completed
//! (a closed loop with one request outstanding, as an eMMC host serves them) and real time
//! between requests is ignored. The same sequence of requests therefore always gives the
//! same figures, whatever the machine's speed. The one exception is a mount with MobiFS's
//! transactions, whose staleness bound is in the user's seconds: there the clock also
//! follows the real time since the mount ([`RequestClock`], supplied by the binary) and a
//! timer lets due checkpoints run between requests ([`InodeFs::tick`]).

mod blockfile;
pub mod errno;
mod f2fs_tree;
mod fs;
mod image;
mod memtree;
mod record;
pub mod tree;
mod tree_metrics;
mod treefs;

pub use blockfile::{BlockFile, BlockFileCounters, BlockFileError};
pub use f2fs_tree::{F2fsTree, MountCache, RequestClock};
pub use flashstack_sim::sparse::data_ranges;
pub use fs::{DiskTree, DISK_FILE_NAME};
pub use image::{punch_hole, ImageBacked};
pub use memtree::MemTree;
pub use record::{RecordStats, Recording, OPEN_HANDLES_MAX, PATHS_MAX};
pub use tree::{
    Attr, FallocMode, Fallocate, FsError, FsStats, Ino, InodeFs, Kind, NewAttr, OpenHow, SetAttr,
    TimeSet, Timestamp, XattrSet,
};
pub use tree_metrics::F2fsTreeMetrics;
pub use treefs::TreeFs;
