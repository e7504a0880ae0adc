//! `mkfs`: writes a fresh F2FS through the block interface, block for block what
//! mkfs.f2fs 1.15 writes (f2fs-tools `mkfs/f2fs_format.c`, `f2fs_format_device`): the SIT
//! and NAT areas zeroed, a root directory (inode in the hot node log, one dentry block in
//! the hot data log), NAT block 0, two checkpoint packs and two superblocks. With the same
//! UUID, timestamp, checkpoint version and version string the image is byte-identical to
//! `mkfs.f2fs -r -T TIME -U UUID` (tests/mkfs_f2fs.rs checks this).

use flashstack_block::{BlockDevice, Hints, Temperature, LBA_SIZE};
use flashstack_sim::Nanos;

use crate::checkpoint::{Checkpoint, NatBits};
use crate::codec::{clear_bit_le, zero_block};
use crate::consts::*;
use crate::dentry::DentryBlock;
use crate::error::F2fsError;
use crate::features::{Features, NEEDS_EXTRA_ATTR};
use crate::io::{log_hints, Io};
use crate::layout::*;
use crate::nat::{NatBlock, NatEntry};
use crate::node::{checksum_seed, ExtraAttr, Inode, NodeFooter};
use crate::sit::SitEntry;
use crate::summary::*;
use crate::superblock::{DeviceEntry, Superblock};

/// What to format. The defaults are deterministic (no clock, no randomness) and match
/// `mkfs.f2fs -r -T 0` on a file except for the UUID and version string.
#[derive(Clone, Debug, PartialEq)]
pub struct MkfsOptions {
    /// Logical sector size: 512 as mkfs.f2fs sees an image file, 4096 for UFS/eMMC.
    pub sector_size: u32,
    /// Overprovision ratio in percent; `None` picks mkfs.f2fs's best ratio for the size.
    pub overprovision: Option<f64>,
    pub features: Features,
    /// Extensions added to the cold (multimedia) list after mkfs's defaults (`-e`).
    pub cold_extensions: Vec<String>,
    /// Extensions added to the hot list after mkfs's defaults (`-E`).
    pub hot_extensions: Vec<String>,
    pub label: String,
    pub uuid: [u8; 16],
    /// Seconds since the epoch for the root inode's times (`-T`).
    pub timestamp: u64,
    /// Version of the first checkpoint pack; 0x6b8b4567 is what `mkfs.f2fs -r` (glibc
    /// `srand(0); rand() | 1`) writes.
    pub checkpoint_ver: u64,
    /// Stored as the superblock's `version` and `init_version` (mkfs stores the kernel's).
    pub version: String,
    pub root_uid: u32,
    pub root_gid: u32,
    /// Discard the whole device first and mark the checkpoint trimmed (mkfs `-t 1`).
    pub discard: bool,
    /// Virtual time of the first request.
    pub start_ns: Nanos,
}

impl Default for MkfsOptions {
    fn default() -> Self {
        MkfsOptions {
            sector_size: DEFAULT_SECTOR_SIZE,
            overprovision: None,
            features: Features::NONE,
            cold_extensions: Vec::new(),
            hot_extensions: Vec::new(),
            label: String::new(),
            uuid: DEFAULT_UUID,
            timestamp: 0,
            checkpoint_ver: MKFS_FAKE_SEED_CP_VER,
            version: "flashstack".to_string(),
            root_uid: 0,
            root_gid: 0,
            discard: true,
            start_ns: 0,
        }
    }
}

/// A fixed, valid version-4 UUID, so default images are reproducible.
const DEFAULT_UUID: [u8; 16] = [
    0x66, 0x6c, 0x61, 0x73, 0x68, 0x73, 0x74, 0x61, 0x63, 0x6b, 0x2d, 0x66, 0x32, 0x66, 0x73, 0x31,
];
/// `rand() | 1` after glibc `srand(0)`, as `mkfs.f2fs -r` stores it.
pub const MKFS_FAKE_SEED_CP_VER: u64 = 0x6b8b_4567;

/// mkfs.f2fs's default cold (multimedia) extensions (`media_ext_lists`).
const MEDIA_EXTENSIONS: [&str; 36] = [
    "mp", "wm", "og", "jp", "avi", "m4v", "m4p", "mkv", "mov", "webm", "wav", "m4a", "3gp", "opus",
    "flac", "gif", "png", "svg", "webp", "jar", "deb", "iso", "gz", "xz", "zst", "pdf", "pyc",
    "ttc", "ttf", "exe", "apk", "cnt", "exo", "odex", "vdex", "so",
];
/// mkfs.f2fs's default hot extensions (`hot_ext_lists`, non-Android build).
const HOT_EXTENSIONS: [&str; 4] = ["db", "vmdk", "vdi", "qcow2"];

/// Features this mkfs can format: the ones that only change the superblock and the root
/// inode. Quota files, lost+found, zoned and read-only layouts are not written yet.
const SUPPORTED_FEATURES: u32 = FEATURE_ENCRYPT
    | FEATURE_EXTRA_ATTR
    | FEATURE_INODE_CHKSUM
    | FEATURE_FLEXIBLE_INLINE_XATTR
    | FEATURE_INODE_CRTIME
    | FEATURE_VERITY
    | FEATURE_SB_CHKSUM
    | FEATURE_CASEFOLD
    | FEATURE_COMPRESSION;

/// `VERSION_NAME_LEN`: the version string's room before the 4-byte timestamp fsck keeps.
const MAX_VERSION_STRING: usize = VERSION_LEN - 4;

/// Formats `dev` and returns the layout written.
pub fn mkfs<D: BlockDevice + ?Sized>(dev: &mut D, opts: &MkfsOptions) -> Result<Layout, F2fsError> {
    mkfs_timed(dev, opts).map(|(layout, _)| layout)
}

/// As [`mkfs`], also returning the virtual time the final flush completed.
pub fn mkfs_timed<D: BlockDevice + ?Sized>(
    dev: &mut D,
    opts: &MkfsOptions,
) -> Result<(Layout, Nanos), F2fsError> {
    check_options(opts)?;
    let bytes = dev.capacity_lbas() * LBA_SIZE as u64;
    let layout = Layout::compute(bytes, opts.sector_size, opts.overprovision)?;
    let image = Image::build(&layout, opts)?;
    let mut io = Io::new(dev, opts.start_ns);
    image.write(&layout, opts, &mut io)?;
    Ok((layout, io.now()))
}

fn check_options(opts: &MkfsOptions) -> Result<(), F2fsError> {
    let invalid = |name, reason: String| Err(F2fsError::InvalidOption { name, reason });
    let f = opts.features;
    if f.0 & !SUPPORTED_FEATURES != 0 {
        let names = Features(f.0 & !SUPPORTED_FEATURES);
        return invalid("features", format!("not supported yet: {names}"));
    }
    if f.0 & NEEDS_EXTRA_ATTR != 0 && !f.contains(FEATURE_EXTRA_ATTR) {
        let names = Features(f.0 & NEEDS_EXTRA_ATTR);
        return invalid("features", format!("{names} need extra_attr"));
    }
    if opts.label.encode_utf16().count() >= MAX_VOLUME_NAME {
        return invalid(
            "label",
            format!("longer than {} UTF-16 units", MAX_VOLUME_NAME - 1),
        );
    }
    if opts.version.len() > MAX_VERSION_STRING {
        return invalid("version", format!("longer than {MAX_VERSION_STRING} bytes"));
    }
    Ok(())
}

/// Every block mkfs writes, built before any I/O.
struct Image {
    superblock: Superblock,
    cp1: Checkpoint,
    cp2: Checkpoint,
    root_inode: Inode,
    root_dentry: DentryBlock,
    nat_block: NatBlock,
    data_summaries: CompactSummaries,
    node_summaries: [SummaryBlock; NR_CURSEG_NODE_TYPE],
    nat_bits: Option<NatBits>,
}

impl Image {
    fn build(layout: &Layout, opts: &MkfsOptions) -> Result<Image, F2fsError> {
        let superblock = build_superblock(layout, opts)?;
        let cp1 = build_checkpoint(layout, opts, opts.checkpoint_ver);
        // The second pack starts at version 0 so the first one wins at mount.
        let cp2 = build_checkpoint(layout, opts, 0);
        let nat_bits = layout
            .nat_bits_blocks(cp1.cp_pack_total_block_count)
            .map(|_| build_nat_bits(layout, &cp1));
        Ok(Image {
            root_inode: build_root_inode(layout, opts),
            root_dentry: DentryBlock::with_dots(ROOT_INO, ROOT_INO),
            nat_block: build_nat_block(layout),
            data_summaries: build_data_summaries(layout),
            node_summaries: build_node_summaries(),
            superblock,
            cp1,
            cp2,
            nat_bits,
        })
    }

    /// The writes, in mkfs.f2fs's order, then a flush (mkfs fsyncs the device at exit).
    fn write<D: BlockDevice + ?Sized>(
        &self,
        layout: &Layout,
        opts: &MkfsOptions,
        io: &mut Io<D>,
    ) -> Result<(), F2fsError> {
        if opts.discard {
            io.trim(0, io.capacity_blocks())?;
        }
        zero_tables(layout, io)?;
        let hot_node = layout.curseg_blkaddr(CURSEG_HOT_NODE) as u64;
        io.write(
            hot_node,
            &self.root_inode.encode()[..],
            log_hints(Temperature::Hot),
        )?;
        // A stale node chain in the warm node log could be replayed by roll-forward
        // recovery; mkfs zeroes its first block (`f2fs_discard_obsolete_dnode`).
        let warm_node = layout.curseg_blkaddr(CURSEG_WARM_NODE) as u64;
        io.write(warm_node, &zero_block()[..], log_hints(Temperature::Warm))?;
        io.write(
            layout.nat_blkaddr as u64,
            &self.nat_block.encode()[..],
            Hints::default(),
        )?;
        let hot_data = layout.curseg_blkaddr(CURSEG_HOT_DATA) as u64;
        io.write(
            hot_data,
            &self.root_dentry.encode()[..],
            log_hints(Temperature::Hot),
        )?;
        self.write_checkpoints(layout, io)?;
        let sb = self.superblock.to_block();
        io.write(0, &sb[..], Hints::default())?;
        io.write(1, &sb[..], Hints::default())?;
        io.flush()
    }

    fn write_checkpoints<D: BlockDevice + ?Sized>(
        &self,
        layout: &Layout,
        io: &mut Io<D>,
    ) -> Result<(), F2fsError> {
        let mut pack = Vec::new();
        pack.extend_from_slice(&self.cp1.encode()[..]);
        pack.resize(pack.len() + layout.cp_payload as usize * BLOCK_SIZE, 0);
        for block in self.data_summaries.encode() {
            pack.extend_from_slice(&block[..]);
        }
        for sum in &self.node_summaries {
            pack.extend_from_slice(&sum.encode()[..]);
        }
        pack.extend_from_slice(&self.cp1.encode()[..]);
        let cp_start = layout.cp_blkaddr as u64;
        io.write(cp_start, &pack, Hints::default())?;
        if let Some(bits) = &self.nat_bits {
            let raw = bits.encode();
            let at = cp_start + BLOCKS_PER_SEG as u64 - (raw.len() / BLOCK_SIZE) as u64;
            io.write(at, &raw, Hints::default())?;
        }
        self.write_second_pack(layout, io)
    }

    /// Pack 2 gets only its header, payload and footer: a version-0 pack is never chosen,
    /// so mkfs writes no summaries into it.
    fn write_second_pack<D: BlockDevice + ?Sized>(
        &self,
        layout: &Layout,
        io: &mut Io<D>,
    ) -> Result<(), F2fsError> {
        let start = layout.cp_blkaddr as u64 + BLOCKS_PER_SEG as u64;
        let header = self.cp2.encode();
        let mut head = header.to_vec();
        head.resize(head.len() + layout.cp_payload as usize * BLOCK_SIZE, 0);
        io.write(start, &head, Hints::default())?;
        let footer_at = start + self.cp2.cp_pack_total_block_count as u64 - 1;
        io.write(footer_at, &header[..], Hints::default())
    }
}

/// Zeroes the first copy of every SIT and NAT segment, as mkfs does (the second copies are
/// only read once a version bitmap bit points at them).
fn zero_tables<D: BlockDevice + ?Sized>(layout: &Layout, io: &mut Io<D>) -> Result<(), F2fsError> {
    let zeros = vec![0u8; BLOCKS_PER_SEG as usize * BLOCK_SIZE];
    let seg = BLOCKS_PER_SEG as u64;
    for i in 0..(layout.segment_count_sit / 2) as u64 {
        io.write(
            layout.sit_blkaddr as u64 + i * seg,
            &zeros,
            Hints::default(),
        )?;
    }
    for i in 0..(layout.segment_count_nat / 2) as u64 {
        io.write(
            layout.nat_blkaddr as u64 + 2 * i * seg,
            &zeros,
            Hints::default(),
        )?;
    }
    Ok(())
}

fn build_superblock(layout: &Layout, opts: &MkfsOptions) -> Result<Superblock, F2fsError> {
    let (ext_list, cold_count, hot_count) = extension_list(opts);
    let version = opts.version.as_bytes().to_vec();
    let mut sb = Superblock {
        magic: F2FS_SUPER_MAGIC,
        major_ver: F2FS_MAJOR_VERSION,
        minor_ver: F2FS_MINOR_VERSION,
        log_sectorsize: opts.sector_size.trailing_zeros(),
        log_sectors_per_block: LOG_BLOCK_SIZE - opts.sector_size.trailing_zeros(),
        log_blocksize: LOG_BLOCK_SIZE,
        log_blocks_per_seg: LOG_BLOCKS_PER_SEG,
        segs_per_sec: SEGS_PER_SEC,
        secs_per_zone: SECS_PER_ZONE,
        block_count: layout.block_count,
        uuid: opts.uuid,
        volume_name: opts.label.encode_utf16().collect(),
        extension_count: cold_count,
        extension_list: ext_list,
        hot_ext_count: hot_count,
        cp_payload: layout.cp_payload,
        init_version: version.clone(),
        version,
        feature: opts.features,
        devices: vec![DeviceEntry::default(); MAX_DEVICES],
        reserved: vec![0; SB_RESERVED_LEN],
        ..Superblock::default()
    };
    set_areas(&mut sb, layout);
    if opts.features.contains(FEATURE_CASEFOLD) {
        sb.s_encoding = ENC_UTF8_12_1;
    }
    sb.seal();
    sb.check(0).map_err(F2fsError::Corrupt)?;
    Ok(sb)
}

fn set_areas(sb: &mut Superblock, l: &Layout) {
    sb.section_count = l.section_count;
    sb.segment_count = l.segment_count;
    sb.segment_count_ckpt = l.segment_count_ckpt;
    sb.segment_count_sit = l.segment_count_sit;
    sb.segment_count_nat = l.segment_count_nat;
    sb.segment_count_ssa = l.segment_count_ssa;
    sb.segment_count_main = l.segment_count_main;
    sb.segment0_blkaddr = l.segment0_blkaddr;
    sb.cp_blkaddr = l.cp_blkaddr;
    sb.sit_blkaddr = l.sit_blkaddr;
    sb.nat_blkaddr = l.nat_blkaddr;
    sb.ssa_blkaddr = l.ssa_blkaddr;
    sb.main_blkaddr = l.main_blkaddr;
    sb.root_ino = ROOT_INO;
    sb.node_ino = NODE_INO;
    sb.meta_ino = META_INO;
}

/// The 64-slot extension table (`cure_extension_list`): default cold names, user cold
/// names not already present, default hot names, user hot names not already present.
/// Names of 8 bytes or more are skipped, as mkfs does.
fn extension_list(opts: &MkfsOptions) -> (Vec<[u8; EXTENSION_LEN]>, u32, u8) {
    let mut list: Vec<[u8; EXTENSION_LEN]> = Vec::new();
    append_extensions(&mut list, &MEDIA_EXTENSIONS, &opts.cold_extensions);
    let cold_count = list.len();
    append_extensions(&mut list, &HOT_EXTENSIONS, &opts.hot_extensions);
    let hot_count = list.len() - cold_count;
    list.resize(MAX_EXTENSION, [0; EXTENSION_LEN]);
    (list, cold_count as u32, hot_count as u8)
}

fn append_extensions(list: &mut Vec<[u8; EXTENSION_LEN]>, defaults: &[&str], user: &[String]) {
    list.extend(defaults.iter().map(|e| ext_slot(e)));
    for name in user
        .iter()
        .filter(|n| !n.is_empty() && n.len() < EXTENSION_LEN)
    {
        let slot = ext_slot(name);
        if list.len() < MAX_EXTENSION && !list.contains(&slot) {
            list.push(slot);
        }
    }
}

fn ext_slot(name: &str) -> [u8; EXTENSION_LEN] {
    let mut slot = [0u8; EXTENSION_LEN];
    let n = name.len().min(EXTENSION_LEN);
    slot[..n].copy_from_slice(&name.as_bytes()[..n]);
    slot
}

fn build_checkpoint(layout: &Layout, opts: &MkfsOptions, version: u64) -> Checkpoint {
    let mut cp = Checkpoint {
        checkpoint_ver: version,
        user_block_count: layout.user_block_count,
        // The root inode and its dentry block.
        valid_block_count: 2,
        rsvd_segment_count: layout.reserved_segments,
        overprov_segment_count: layout.overprov_segments,
        free_segment_count: layout.free_segments,
        ckpt_flags: CP_UMOUNT_FLAG | CP_COMPACT_SUM_FLAG,
        // Header + compact data summary + 3 node summaries + footer, plus payload.
        cp_pack_total_block_count: 6 + layout.cp_payload,
        cp_pack_start_sum: 1 + layout.cp_payload,
        valid_node_count: 1,
        valid_inode_count: 1,
        next_free_nid: ROOT_INO + 1,
        sit_ver_bitmap_bytesize: layout.sit_bitmap_bytes,
        nat_ver_bitmap_bytesize: layout.nat_bitmap_bytes,
        checksum_offset: CP_CHKSUM_OFFSET,
        ..Checkpoint::default()
    };
    for i in 0..NR_CURSEG_NODE_TYPE {
        cp.cur_node_segno[i] = layout.cursegs[CURSEG_HOT_NODE + i];
        cp.cur_data_segno[i] = layout.cursegs[CURSEG_HOT_DATA + i];
    }
    cp.cur_node_blkoff[0] = 1;
    cp.cur_data_blkoff[0] = 1;
    if layout
        .nat_bits_blocks(cp.cp_pack_total_block_count)
        .is_some()
    {
        cp.ckpt_flags |= CP_NAT_BITS_FLAG;
    }
    if opts.discard {
        cp.ckpt_flags |= CP_TRIMMED_FLAG;
    }
    cp
}

/// NAT bits for a NAT whose only used block is block 0 (nids 0..455): no block full,
/// every block but the first empty.
fn build_nat_bits(layout: &Layout, cp: &Checkpoint) -> NatBits {
    let (bytes, _) = NatBits::size(layout.segment_count_nat);
    let mut empty = vec![0xffu8; bytes];
    clear_bit_le(&mut empty, 0);
    NatBits {
        crc_version: cp.crc_version(),
        full: vec![0; bytes],
        empty,
    }
}

/// `calc_extra_isize`: how much of the extra-attribute area the enabled features need.
pub(crate) fn extra_isize(features: Features) -> u16 {
    let wanted = [
        (FEATURE_COMPRESSION, TOTAL_EXTRA_ATTR_SIZE),
        (FEATURE_INODE_CRTIME, 24), // up to i_compr_blocks
        (FEATURE_INODE_CHKSUM, 12), // up to i_crtime
        (FEATURE_PRJQUOTA, 8),      // up to i_inode_checksum
    ];
    wanted
        .iter()
        .find(|(bit, _)| features.contains(*bit))
        .map_or(4, |(_, size)| *size) // up to i_projid
}

fn build_root_inode(layout: &Layout, opts: &MkfsOptions) -> Inode {
    let ts = opts.timestamp;
    let mut inode = Inode {
        mode: S_IFDIR | 0o755,
        links: 2,
        uid: opts.root_uid,
        gid: opts.root_gid,
        size: BLOCK_SIZE as u64,
        blocks: 2,
        atime: ts,
        ctime: ts,
        mtime: ts,
        current_depth: 1,
        footer: NodeFooter {
            nid: ROOT_INO,
            ino: ROOT_INO,
            flag: 0,
            cp_ver: 1,
            next_blkaddr: layout.curseg_blkaddr(CURSEG_HOT_NODE) + 1,
        },
        ..Inode::default()
    };
    let features = opts.features;
    if features.contains(FEATURE_EXTRA_ATTR) {
        let crtime = if features.contains(FEATURE_INODE_CRTIME) {
            ts
        } else {
            0
        };
        inode.set_extra(&ExtraAttr {
            extra_isize: extra_isize(features),
            crtime,
            ..ExtraAttr::default()
        });
    }
    let slot = inode.extra_words();
    inode.addr[slot] = layout.curseg_blkaddr(CURSEG_HOT_DATA);
    if features.contains(FEATURE_INODE_CHKSUM) {
        inode.seal_checksum(checksum_seed(&opts.uuid));
    }
    inode
}

/// NAT block 0: the node and meta inodes (address 1 by convention) and the root inode.
fn build_nat_block(layout: &Layout) -> NatBlock {
    let mut block = NatBlock::empty();
    for ino in [NODE_INO, META_INO] {
        block.entries[ino as usize] = NatEntry {
            version: 0,
            ino,
            block_addr: 1,
        };
    }
    block.entries[ROOT_INO as usize] = root_nat_entry(layout);
    block
}

fn root_nat_entry(layout: &Layout) -> NatEntry {
    NatEntry {
        version: 0,
        ino: ROOT_INO,
        block_addr: layout.curseg_blkaddr(CURSEG_HOT_NODE),
    }
}

/// The compact data summary: the root's NAT entry in the NAT journal, the six logs' SIT
/// entries in the SIT journal, and the hot data log's one summary (the root's dentry).
fn build_data_summaries(layout: &Layout) -> CompactSummaries {
    let nat = [NatJournalEntry {
        nid: ROOT_INO,
        entry: root_nat_entry(layout),
    }];
    let sit_order = [
        CURSEG_HOT_NODE,
        CURSEG_WARM_NODE,
        CURSEG_COLD_NODE,
        CURSEG_HOT_DATA,
        CURSEG_WARM_DATA,
        CURSEG_COLD_DATA,
    ];
    let sit: Vec<SitJournalEntry> = sit_order
        .iter()
        .map(|&log| {
            let used = u16::from(log == CURSEG_HOT_NODE || log == CURSEG_HOT_DATA);
            SitJournalEntry {
                segno: layout.cursegs[log],
                entry: SitEntry::with_leading_blocks(log as u8, used),
            }
        })
        .collect();
    let root_dentry = Summary {
        nid: ROOT_INO,
        version: 0,
        ofs_in_node: 0,
    };
    CompactSummaries {
        nat_journal: Journal::nat(&nat),
        sit_journal: Journal::sit(&sit),
        data: [vec![root_dentry], Vec::new(), Vec::new()],
    }
}

/// Node summaries of the hot, warm and cold node logs: only the root inode so far.
fn build_node_summaries() -> [SummaryBlock; NR_CURSEG_NODE_TYPE] {
    let mut hot = SummaryBlock::new(SUM_TYPE_NODE);
    hot.entries[0] = Summary {
        nid: ROOT_INO,
        version: 0,
        ofs_in_node: 0,
    };
    [
        hot,
        SummaryBlock::new(SUM_TYPE_NODE),
        SummaryBlock::new(SUM_TYPE_NODE),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extension_table_follows_mkfs() {
        let opts = MkfsOptions {
            cold_extensions: vec!["db".into(), "toolongname".into(), "mp".into()],
            hot_extensions: vec!["mp4".into()],
            ..MkfsOptions::default()
        };
        let (list, cold, hot) = extension_list(&opts);
        // "db" is not yet in the table while cold names are added, so it lands there too;
        // "mp" already is; "toolongname" is skipped.
        assert_eq!((cold, hot), (37, 5));
        assert_eq!(&list[36][..3], b"db\0");
        assert_eq!(&list[41][..4], b"mp4\0");
    }

    #[test]
    fn extra_isize_per_feature() {
        let f = |s: &str| extra_isize(Features::parse(s).unwrap());
        assert_eq!(f("extra_attr"), 4);
        assert_eq!(f("extra_attr,project_quota"), 8);
        assert_eq!(f("extra_attr,inode_checksum"), 12);
        assert_eq!(f("extra_attr,inode_crtime,inode_checksum"), 24);
        assert_eq!(f("extra_attr,compression"), 36);
    }

    #[test]
    fn rejects_what_it_cannot_format() {
        let mut dev = crate::MemDevice::new(64 << 20);
        for list in ["quota", "lost_found", "inode_checksum"] {
            let opts = MkfsOptions {
                features: Features::parse(list).unwrap(),
                ..MkfsOptions::default()
            };
            let err = mkfs(&mut dev, &opts).unwrap_err();
            assert!(
                matches!(err, F2fsError::InvalidOption { .. }),
                "{list}: {err}"
            );
        }
        let opts = MkfsOptions {
            label: "x".repeat(600),
            ..MkfsOptions::default()
        };
        assert!(mkfs(&mut dev, &opts).is_err());
        assert_eq!(
            dev.stored_blocks(),
            0,
            "nothing written on a refused format"
        );
    }
}
