//! Every number of the on-disk format, each named after its kernel or f2fs-tools
//! counterpart. Sources: Linux `include/linux/f2fs_fs.h` (v6.12) and f2fs-tools 1.15.0
//! `include/f2fs_fs.h` (the two agree on every value here); mkfs-only values name
//! `mkfs/f2fs_format.c`.

/// `F2FS_BLKSIZE`: the only block size F2FS supports, equal to the block interface's LBA.
pub const BLOCK_SIZE: usize = 4096;
/// `F2FS_BLKSIZE_BITS`.
pub const LOG_BLOCK_SIZE: u32 = 12;
/// `F2FS_SUPER_MAGIC`: also the seed of every CRC32 in the format.
pub const F2FS_SUPER_MAGIC: u32 = 0xF2F5_2010;
/// `F2FS_MAJOR_VERSION` / `F2FS_MINOR_VERSION` as f2fs-tools writes them.
pub const F2FS_MAJOR_VERSION: u16 = 1;
pub const F2FS_MINOR_VERSION: u16 = 15;
/// `F2FS_SUPER_OFFSET`: byte offset of each superblock copy inside blocks 0 and 1.
pub const SUPER_OFFSET: usize = 1024;
/// `sizeof(struct f2fs_super_block)`.
pub const SUPER_SIZE: usize = 3072;
/// `SB_CHKSUM_OFFSET`: where the superblock CRC lives (sb_checksum feature).
pub const SB_CHKSUM_OFFSET: u32 = 3068;
/// `F2FS_MIN_LOG_SECTOR_SIZE` / `F2FS_MAX_LOG_SECTOR_SIZE`.
pub const MIN_LOG_SECTOR_SIZE: u32 = 9;
pub const MAX_LOG_SECTOR_SIZE: u32 = 12;
/// `DEFAULT_SECTOR_SIZE`: what mkfs.f2fs uses for image files.
pub const DEFAULT_SECTOR_SIZE: u32 = 512;

/// `DEFAULT_BLOCKS_PER_SEGMENT` (log 9): the 2 MiB segment.
pub const BLOCKS_PER_SEG: u32 = 512;
pub const LOG_BLOCKS_PER_SEG: u32 = 9;
/// mkfs defaults `segs_per_sec = 1`, `secs_per_zone = 1` (f2fs-tools `lib/libf2fs.c`).
pub const SEGS_PER_SEC: u32 = 1;
pub const SECS_PER_ZONE: u32 = 1;
/// `F2FS_MIN_SEGMENTS`: SB + 2 × (CP + SIT + NAT) + SSA + MAIN.
pub const MIN_SEGMENTS: u32 = 9;
/// `F2FS_MAX_SEGMENT`: 32-bit block addresses cap a volume at 16 TiB.
pub const MAX_SEGMENTS: u32 = 16 * 1024 * 1024 / 2;
/// `F2FS_NUMBER_OF_CHECKPOINT_PACK` / `F2FS_CP_PACKS`.
pub const CP_PACKS: u32 = 2;
/// `NR_CURSEG_TYPE`: hot/warm/cold × data/node.
pub const NR_CURSEG_TYPE: usize = 6;
pub const NR_CURSEG_DATA_TYPE: usize = 3;
pub const NR_CURSEG_NODE_TYPE: usize = 3;
/// `MAX_ACTIVE_NODE_LOGS` / `MAX_ACTIVE_DATA_LOGS` / `MAX_ACTIVE_LOGS`: on-disk array sizes.
pub const MAX_ACTIVE_NODE_LOGS: usize = 8;
pub const MAX_ACTIVE_DATA_LOGS: usize = 8;
pub const MAX_ACTIVE_LOGS: usize = 16;
/// Checkpoint `alloc_type` values (`enum { LFS = 0, SSR }`, kernel `fs/f2fs/segment.h`):
/// a log appends to a clean segment, or fills holes of a dirty one.
pub const ALLOC_LFS: u8 = 0;
pub const ALLOC_SSR: u8 = 1;
/// `NULL_SEGNO`: an unused current-segment slot in the checkpoint.
pub const NULL_SEGNO: u32 = u32::MAX;

/// `F2FS_ROOT_INO`, `F2FS_NODE_INO`, `F2FS_META_INO` as mkfs assigns them.
pub const NODE_INO: u32 = 1;
pub const META_INO: u32 = 2;
pub const ROOT_INO: u32 = 3;
/// `F2FS_MAX_QUOTAS`.
pub const MAX_QUOTAS: usize = 3;
/// `MAX_VOLUME_NAME` (UTF-16 units), `VERSION_LEN`, `MAX_PATH_LEN`, `MAX_DEVICES`.
pub const MAX_VOLUME_NAME: usize = 512;
pub const VERSION_LEN: usize = 256;
pub const MAX_PATH_LEN: usize = 64;
pub const MAX_DEVICES: usize = 8;
/// `F2FS_MAX_EXTENSION`, `F2FS_EXTENSION_LEN`.
pub const MAX_EXTENSION: usize = 64;
pub const EXTENSION_LEN: usize = 8;
/// Bytes of `reserved[]` at the end of the superblock (f2fs-tools 1.15 layout; the kernel
/// carves `s_stop_reason` and `s_errors` out of its start).
pub const SB_RESERVED_LEN: usize = 306;

/// Checkpoint: `CP_CHKSUM_OFFSET` (default CRC position) and `CP_BITMAP_OFFSET`
/// (`offsetof(struct f2fs_checkpoint, sit_nat_version_bitmap)`, also `CP_MIN_CHKSUM_OFFSET`).
pub const CP_CHKSUM_OFFSET: u32 = 4092;
pub const CP_BITMAP_OFFSET: usize = 192;
/// `MIN_NAT_BITMAP_SIZE`, `MAX_BITMAP_SIZE_IN_CKPT`, `MAX_SIT_BITMAP_SIZE_IN_CKPT`.
pub const MIN_NAT_BITMAP_SIZE: u32 = 64;
pub const MAX_BITMAP_SIZE_IN_CKPT: u32 = CP_CHKSUM_OFFSET - CP_BITMAP_OFFSET as u32;
pub const MAX_SIT_BITMAP_SIZE_IN_CKPT: u32 = MAX_BITMAP_SIZE_IN_CKPT - MIN_NAT_BITMAP_SIZE;
/// Checkpoint flags (`CP_*_FLAG`).
pub const CP_UMOUNT_FLAG: u32 = 0x0001;
pub const CP_ORPHAN_PRESENT_FLAG: u32 = 0x0002;
pub const CP_COMPACT_SUM_FLAG: u32 = 0x0004;
pub const CP_ERROR_FLAG: u32 = 0x0008;
pub const CP_FSCK_FLAG: u32 = 0x0010;
pub const CP_FASTBOOT_FLAG: u32 = 0x0020;
pub const CP_CRC_RECOVERY_FLAG: u32 = 0x0040;
pub const CP_NAT_BITS_FLAG: u32 = 0x0080;
pub const CP_TRIMMED_FLAG: u32 = 0x0100;
pub const CP_NOCRC_RECOVERY_FLAG: u32 = 0x0200;
pub const CP_LARGE_NAT_BITMAP_FLAG: u32 = 0x0400;
pub const CP_QUOTA_NEED_FSCK_FLAG: u32 = 0x0800;
pub const CP_DISABLED_FLAG: u32 = 0x1000;
pub const CP_RESIZEFS_FLAG: u32 = 0x4000;
/// `F2FS_ORPHANS_PER_BLOCK`.
pub const ORPHANS_PER_BLOCK: usize = 1020;

/// Node layout: `DEF_ADDRS_PER_INODE`, `DEF_ADDRS_PER_BLOCK`, `NIDS_PER_BLOCK`, the five
/// `i_nid` slots, `F2FS_NAME_LEN`, `sizeof(struct node_footer)`.
pub const ADDRS_PER_INODE: usize = 923;
pub const ADDRS_PER_BLOCK: usize = 1018;
pub const NIDS_PER_BLOCK: usize = 1018;
pub const INODE_NIDS: usize = 5;
pub const NAME_LEN: usize = 255;
pub const NODE_FOOTER_SIZE: usize = 24;
/// `offsetof(struct f2fs_inode, i_addr)` and `offsetof(struct f2fs_inode, i_extra_end) -
/// offsetof(struct f2fs_inode, i_extra_isize)` (`F2FS_TOTAL_EXTRA_ATTR_SIZE`).
pub const INODE_ADDR_OFFSET: usize = 360;
pub const TOTAL_EXTRA_ATTR_SIZE: u16 = 36;
/// Byte offset of `i_inode_checksum` inside the inode (covered by the inode CRC as zero).
pub const INODE_CHECKSUM_OFFSET: usize = 368;
/// `DEFAULT_INLINE_XATTR_ADDRS`: 200 bytes of inline xattrs.
pub const DEFAULT_INLINE_XATTR_ADDRS: u32 = 50;
/// `DEF_INLINE_RESERVED_SIZE` (in address slots).
pub const INLINE_RESERVED_ADDRS: u32 = 1;
/// `i_inline` bits (`F2FS_INLINE_*`, `F2FS_EXTRA_ATTR`, ...).
pub const F2FS_INLINE_XATTR: u8 = 0x01;
pub const F2FS_INLINE_DATA: u8 = 0x02;
pub const F2FS_INLINE_DENTRY: u8 = 0x04;
pub const F2FS_DATA_EXIST: u8 = 0x08;
pub const F2FS_INLINE_DOTS: u8 = 0x10;
pub const F2FS_EXTRA_ATTR: u8 = 0x20;
pub const F2FS_PIN_FILE: u8 = 0x40;
pub const F2FS_COMPRESS_RELEASED: u8 = 0x80;
/// Node footer flag bits (`COLD_BIT_SHIFT`, `FSYNC_BIT_SHIFT`, `DENT_BIT_SHIFT`,
/// `OFFSET_BIT_SHIFT`).
pub const COLD_BIT_SHIFT: u32 = 0;
pub const FSYNC_BIT_SHIFT: u32 = 1;
pub const DENT_BIT_SHIFT: u32 = 2;
pub const OFFSET_BIT_SHIFT: u32 = 3;
/// Block addresses with a special meaning (`NULL_ADDR`, `NEW_ADDR`, `COMPRESS_ADDR`).
pub const NULL_ADDR: u32 = 0;
pub const NEW_ADDR: u32 = u32::MAX;
pub const COMPRESS_ADDR: u32 = u32::MAX - 1;

/// NAT: `sizeof(struct f2fs_nat_entry)` and `NAT_ENTRY_PER_BLOCK`.
pub const NAT_ENTRY_SIZE: usize = 9;
pub const NAT_ENTRY_PER_BLOCK: u32 = (BLOCK_SIZE / NAT_ENTRY_SIZE) as u32;
/// SIT: `SIT_VBLOCK_MAP_SIZE`, `sizeof(struct f2fs_sit_entry)`, `SIT_ENTRY_PER_BLOCK`,
/// `SIT_VBLOCKS_SHIFT`.
pub const SIT_VBLOCK_MAP_SIZE: usize = 64;
pub const SIT_ENTRY_SIZE: usize = 74;
pub const SIT_ENTRY_PER_BLOCK: u32 = (BLOCK_SIZE / SIT_ENTRY_SIZE) as u32;
pub const SIT_VBLOCKS_SHIFT: u32 = 10;
pub const SIT_VBLOCKS_MASK: u16 = (1 << SIT_VBLOCKS_SHIFT) - 1;

/// SSA: `ENTRIES_IN_SUM`, `SUMMARY_SIZE`, `SUM_FOOTER_SIZE`, `SUM_JOURNAL_SIZE`.
pub const ENTRIES_IN_SUM: usize = 512;
pub const SUMMARY_SIZE: usize = 7;
pub const SUM_FOOTER_SIZE: usize = 5;
pub const SUM_ENTRIES_SIZE: usize = SUMMARY_SIZE * ENTRIES_IN_SUM;
pub const SUM_JOURNAL_SIZE: usize = BLOCK_SIZE - SUM_FOOTER_SIZE - SUM_ENTRIES_SIZE;
/// `SUM_TYPE_DATA` / `SUM_TYPE_NODE` (summary footer `entry_type`).
pub const SUM_TYPE_DATA: u8 = 0;
pub const SUM_TYPE_NODE: u8 = 1;
/// Journal entries: `sizeof(struct nat_journal_entry)`, `NAT_JOURNAL_ENTRIES`,
/// `sizeof(struct sit_journal_entry)`, `SIT_JOURNAL_ENTRIES`.
pub const NAT_JOURNAL_ENTRY_SIZE: usize = 4 + NAT_ENTRY_SIZE;
pub const NAT_JOURNAL_ENTRIES: usize = (SUM_JOURNAL_SIZE - 2) / NAT_JOURNAL_ENTRY_SIZE;
pub const SIT_JOURNAL_ENTRY_SIZE: usize = 4 + SIT_ENTRY_SIZE;
pub const SIT_JOURNAL_ENTRIES: usize = (SUM_JOURNAL_SIZE - 2) / SIT_JOURNAL_ENTRY_SIZE;

/// Dentry block: `NR_DENTRY_IN_BLOCK`, `SIZE_OF_DIR_ENTRY`, `F2FS_SLOT_LEN`,
/// `SIZE_OF_DENTRY_BITMAP`, `SIZE_OF_RESERVED`.
pub const NR_DENTRY_IN_BLOCK: usize = 214;
pub const SIZE_OF_DIR_ENTRY: usize = 11;
pub const SLOT_LEN: usize = 8;
pub const SIZE_OF_DENTRY_BITMAP: usize = NR_DENTRY_IN_BLOCK.div_ceil(8);
pub const SIZE_OF_DENTRY_RESERVED: usize =
    BLOCK_SIZE - ((SIZE_OF_DIR_ENTRY + SLOT_LEN) * NR_DENTRY_IN_BLOCK + SIZE_OF_DENTRY_BITMAP);
/// `enum FILE_TYPE`: the values a dentry's `file_type` holds.
pub const FT_UNKNOWN: u8 = 0;
pub const FT_REG_FILE: u8 = 1;
pub const FT_DIR: u8 = 2;
pub const FT_CHRDEV: u8 = 3;
pub const FT_BLKDEV: u8 = 4;
pub const FT_FIFO: u8 = 5;
pub const FT_SOCK: u8 = 6;
pub const FT_SYMLINK: u8 = 7;
/// `S_IFMT` / `S_IFDIR` / `S_IFREG` bits of `i_mode`.
pub const S_IFMT: u16 = 0o170000;
pub const S_IFDIR: u16 = 0o040000;
pub const S_IFREG: u16 = 0o100000;
pub const S_IFLNK: u16 = 0o120000;
/// The special files: character and block devices, FIFOs, sockets.
pub const S_IFCHR: u16 = 0o020000;
pub const S_IFBLK: u16 = 0o060000;
pub const S_IFIFO: u16 = 0o010000;
pub const S_IFSOCK: u16 = 0o140000;
/// Set-group-ID: on a directory, new entries take its group (and new directories the bit).
pub const S_ISGID: u16 = 0o2000;

/// Superblock feature bits (`F2FS_FEATURE_*`).
pub const FEATURE_ENCRYPT: u32 = 0x0001;
pub const FEATURE_BLKZONED: u32 = 0x0002;
pub const FEATURE_ATOMIC_WRITE: u32 = 0x0004;
pub const FEATURE_EXTRA_ATTR: u32 = 0x0008;
pub const FEATURE_PRJQUOTA: u32 = 0x0010;
pub const FEATURE_INODE_CHKSUM: u32 = 0x0020;
pub const FEATURE_FLEXIBLE_INLINE_XATTR: u32 = 0x0040;
pub const FEATURE_QUOTA_INO: u32 = 0x0080;
pub const FEATURE_INODE_CRTIME: u32 = 0x0100;
pub const FEATURE_LOST_FOUND: u32 = 0x0200;
pub const FEATURE_VERITY: u32 = 0x0400;
pub const FEATURE_SB_CHKSUM: u32 = 0x0800;
pub const FEATURE_CASEFOLD: u32 = 0x1000;
pub const FEATURE_COMPRESSION: u32 = 0x2000;
pub const FEATURE_RO: u32 = 0x4000;
/// `F2FS_ENC_UTF8_12_1`: the only casefolding encoding.
pub const ENC_UTF8_12_1: u16 = 1;
