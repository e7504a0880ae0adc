//! F2FS, the Flash-Friendly File System, in its real on-disk format, written and read
//! through the block interface ([`flashstack_block::BlockDevice`]) so that it runs on the
//! emulated FTL, and judged by the real f2fs-tools (`fsck.f2fs`, `mkfs.f2fs`) in the tests.
//!
//! - The format: every on-disk structure with explicit little-endian encoding, [`mkfs()`]
//!   (block-identical to mkfs.f2fs 1.15), and a read-only [`mount()`] that validates an
//!   image and finds the root directory.
//! - The read-write file system, [`F2fs`] (module [`fs`]): mounts ours or mkfs.f2fs's
//!   images; files and directories by path or inode number (create, open/close, read,
//!   write, whole-page read/write, truncate, unlink with open-unlinked orphans, rename,
//!   link, mkdir, rmdir, readdir, stat), inline data and inline dentries, multi-level hash
//!   directories, direct/indirect node trees; six logs with the kernel's temperature rules
//!   and every block sent with its temperature hint; checkpoints on sync and unmount;
//!   fsync by roll-forward (fsync/dentry marks on the warm node chain, replayed at mount)
//!   or by checkpoint where the kernel forces one; in-place updates by the kernel's IPU
//!   policy; slack space recycling (SSR: a full log fills the holes of a dirty segment
//!   when free segments run short); foreground greedy cleaning, and in idle time
//!   ([`F2fs::idle`]) background cost-benefit cleaning and periodic checkpoints; the policies as pure functions
//!   ([`fs::policy`]) tuned by [`F2fsConfig`] (kernel defaults; [`F2fs::mount_with`]); page-
//!   cache writeback with [`WriteHint`]s; counters of
//!   blocks written by kind and per log ([`Metrics`]). Errors are [`FsError`], mapped to
//!   errno in one place ([`FsError::errno`]). `docs/f2fs.md` gives the write path step by
//!   step and what is not implemented.
//!
//! # On-disk layout
//!
//! The device is cut into 4 KiB blocks and 2 MiB segments (512 blocks). A section is one
//! segment and a zone one section, as mkfs.f2fs sets them by default. Everything before
//! the main area is metadata at fixed places; everything in it is written log-style.
//!
//! ```text
//!  byte 0                 2 MiB (block 512 = segment 0)
//!  │                      │
//!  ▼                      ▼
//! ┌──────┬──────┬────────┬────────┬────────┬────────────┬────────────┬───────┬────────────────┐
//! │ SB 0 │ SB 1 │ unused │ CP     │ CP     │ SIT        │ NAT        │ SSA   │ main area      │
//! │ blk 0│ blk 1│ (rest  │ pack 1 │ pack 2 │ copies A/B │ copies A/B │ 1 blk │ 2 MiB segments │
//! │ @1024│ @1024│ of the │ (1 seg)│ (1 seg)│ per seg.   │ per seg.   │ per   │ filled by six  │
//! │      │      │ zone)  │        │        │ pair       │ pair       │ main  │ logs: hot/warm/│
//! │      │      │        │        │        │            │            │ seg.  │ cold×node/data │
//! └──────┴──────┴────────┴────────┴────────┴────────────┴────────────┴───────┴────────────────┘
//!
//!  checkpoint pack (one segment each; the newer valid one is current):
//!  ┌────────┬─────────┬─────────┬──────────────────┬──────────────────┬────────┐   ┌────────┐
//!  │ header │ payload │ orphan  │ data summaries   │ node summaries   │ footer │ … │NAT bits│
//!  │ CRC'd  │ (large  │ inodes  │ (compact: NAT    │ (3 blocks, only  │ = copy │   │(end of │
//!  │ block  │  SIT    │ (if     │ journal, SIT     │ on an unmount    │ of the │   │segment)│
//!  │        │  bitmap)│  any)   │ journal, entries)│ checkpoint)      │ header │   │        │
//!  └────────┴─────────┴─────────┴──────────────────┴──────────────────┴────────┘   └────────┘
//!
//!  node block (inode, direct or indirect node), 4096 bytes:
//!  ┌──────────────────────────┬───────────────────────────────────┬─────────┬──────────────┐
//!  │ inode fields (360 B):    │ i_addr[923]: data block addresses │ i_nid[5]│ footer (24 B)│
//!  │ mode, size, times, name, │ (extra attributes overlay the     │ 2 direct│ nid, ino,    │
//!  │ extent, inline flags …   │  first words; inline data/dentries│ 2 indir.│ flag, cp_ver,│
//!  │                          │  and xattrs live here too)        │ 1 dind. │ next_blkaddr │
//!  ├──────────────────────────┴───────────────────────────────────┴─────────┤              │
//!  │ direct node: 1018 data block addresses / indirect node: 1018 node ids  │              │
//!  └────────────────────────────────────────────────────────────────────────┴──────────────┘
//! ```
//!
//! - The **superblock** fixes the geometry; both copies are identical.
//! - A **checkpoint** records a consistent state: counts, each log's current segment and
//!   offset, which SIT/NAT copy of each block is current (version bitmaps), and the
//!   summaries of the current segments. Header and footer carry the same version and a
//!   CRC32 seeded with `F2FS_SUPER_MAGIC`; a torn checkpoint fails one of them and the
//!   other pack is used.
//! - The **SIT** holds per-segment valid-block counts and bitmaps, the **NAT** maps node
//!   ids to block addresses (so a moved node only updates its NAT entry), and the **SSA**
//!   says which node owns each main-area block. Recent NAT/SIT changes ride in the
//!   checkpoint's journals instead of rewriting those areas.
//!
//! Sources for every constant are named in [`consts`].

pub mod checkpoint;
pub mod codec;
pub mod compress;
pub mod consts;
pub mod crc;
pub mod dentry;
pub mod error;
pub mod features;
pub mod fs;
mod io;
pub mod layout;
pub mod memdev;
pub mod mkfs;
pub mod mount;
pub mod nat;
pub mod node;
pub mod sit;
pub mod summary;
pub mod superblock;

pub use error::{Corruption, F2fsError};
pub use features::Features;
pub use fs::{
    facs_decide, fpc_extents, fpc_repack_decision, ondemand_user_blocks, op_bytes,
    sample_ratio_permille, BatchFile, BlockUsage, CompressAlgorithm, CompressConfig,
    CompressMetrics, CompressMode, CompressSide, CopyDefragOutcome, DeltaConfig, DeltaMetrics,
    DeltaMode, DirEntryInfo, F2fs, F2fsConfig, FacsConfig, FacsHotList, FallocMode, FileKind,
    Finding, FpcClass, FpcConfig, FpcMetrics, FpcRepackDecision, FpcRepackMetrics, FpcRepackView,
    FsError, InodeClock, IpuPolicy, Metrics, MountOptions, NewInode, OnDemandConfig,
    OnDemandMetrics, RemapDefragReport, SetAttr, SpaceState, Stat, TimeSet, Timestamp, Verify,
    VirtualClock, WriteHint, XattrMode, MEDFS_DCM_FL, MEDFS_DELTA_FL, MEDFS_PSEUDO_FL,
    SIMULATION_EPOCH_SECS, SYMLINK_TARGET_MAX,
};
pub use layout::Layout;
pub use memdev::MemDevice;
pub use mkfs::{mkfs, mkfs_timed, MkfsOptions};
pub use mount::{mount, mount_at, read_superblock, Mounted};
pub use superblock::Superblock;
