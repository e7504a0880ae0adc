//! What is verified when an image is loaded and when its structures are used.
//!
//! **At mount** (always; only what mount reads anyway, so no extra device I/O): every SIT
//! entry (area copies and journal: valid count against its bitmap, at most 512, a log
//! type), the SIT totals against the checkpoint (node blocks equal `valid_node_count`, all
//! blocks at most `valid_block_count`, which may also count reserved `NEW_ADDR` blocks,
//! at most `user_block_count`), the six current segments (distinct, `alloc_type`, SIT
//! type, no valid block at or past an LFS log's offset, `sanity_check_curseg`), the NAT
//! journal (node ids in range, no duplicate, addresses of valid node blocks), the SIT
//! journal (segments in range, no duplicate) and the orphan list (node ids in range, no
//! duplicate; at eviction the inode must have no link left).
//!
//! **On access** (always; no extra I/O either): a NAT block as it is read (every entry
//! not superseded by the journal: a valid block of a node segment, an owner); a node
//! block as it is read (its address a valid block of a node segment, its footer naming
//! the node id and owner the NAT gives, an inode at tree offset 0 and nothing else there);
//! an inode as it is read ([`inode_sanity`]: checksum, file type, inline flags and size
//! against the inline capacity, extra attribute and inline xattr sizes, size limit, the
//! extent); a node reached through its parent (owner and tree offset as the path says);
//! a data address before its block is read (in the main area, valid in the SIT, in a data
//! segment; `NEW_ADDR` reads as zeros).
//!
//! **With [`Verify::Full`]** the whole tree is walked at mount as well (`check.rs`): what
//! the checks above cannot see without reading every node (blocks referenced twice or
//! whose SIT bit is clear, SSA owners, unreachable NAT entries, leaked blocks, link and
//! block counts, dentry hashes and positions). See `docs/f2fs.md`, "Verification".

use flashstack_block::BlockDevice;
use flashstack_sim::Nanos;

use super::data::MAX_FILE_BYTES;
use super::{F2fs, F2fsConfig, FsError};
use crate::checkpoint::Checkpoint;
use crate::codec::{test_bit_msb, Block};
use crate::consts::*;
use crate::error::Corruption;
use crate::mount::Mounted;
use crate::nat::{NatBlock, NatEntry};
use crate::node::{checksum_fits, checksum_seed, inode_checksum, Inode, NodeFooter, NodeKind};
use crate::sit::SitEntry;
use crate::superblock::Superblock;

/// How much of an image [`F2fs::mount_opts`] verifies before using it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Verify {
    /// The checks at mount and on access (see the module docs): bounded by what mount
    /// reads anyway. What a simulated stack uses on the images it made itself.
    #[default]
    Mount,
    /// Also walk every node tree and directory from the root before anything is written
    /// (an fsck-like pass reading every node, dentry block, NAT block and the SSA of every
    /// segment in use). For images that come from outside (`flashstack fs`, `mount --image`).
    Full,
}

/// How [`F2fs::mount_opts`] mounts an image.
#[derive(Clone, Debug, Default)]
pub struct MountOptions {
    /// Virtual time of the first request.
    pub start_ns: Nanos,
    /// Mount options and tunables.
    pub config: F2fsConfig,
    pub verify: Verify,
    /// Never write to the device: no orphan eviction, no roll-forward recovery (the kernel's
    /// `ro,norecovery`); every change is refused with [`FsError::ReadOnly`]. Inconsistencies
    /// that only endanger writes (space accounting, leaked or unreachable blocks) become
    /// [`F2fs::warnings`]; an inode the checks found inconsistent cannot be read
    /// ([`Finding::inode`]), everything else can.
    pub read_only: bool,
}

/// One inconsistency found while loading an image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The inode whose data or entries cannot be trusted (access to it fails), if the
    /// inconsistency is confined to one.
    pub inode: Option<u32>,
    pub corruption: Corruption,
}

/// Findings kept at most (the count of the rest is kept).
const FINDINGS_MAX: usize = 64;

/// What the checks found; in a read-write mount the first one refuses the image.
#[derive(Clone, Debug, Default)]
pub(crate) struct Findings {
    pub list: Vec<Finding>,
    /// Findings beyond [`FINDINGS_MAX`].
    pub more: u64,
}

impl Findings {
    pub fn add(&mut self, inode: Option<u32>, corruption: Corruption) {
        if self.list.len() < FINDINGS_MAX {
            self.list.push(Finding { inode, corruption });
        } else {
            self.more += 1;
        }
    }

    pub fn add_result(&mut self, inode: Option<u32>, r: Result<(), Corruption>) {
        if let Err(c) = r {
            self.add(inode, c);
        }
    }
}

/// `check_block_count`: one raw SIT entry (area or journal).
pub(crate) fn check_sit_entry(segno: u32, e: &SitEntry) -> Result<(), Corruption> {
    let sit = |field, value: u64, rule: String| Corruption::Sit {
        segno,
        field,
        value,
        rule,
    };
    let count = e.valid_blocks() as u32;
    if count > BLOCKS_PER_SEG {
        return Err(sit(
            "valid_blocks",
            count as u64,
            "must be at most 512".into(),
        ));
    }
    let bits = e.bitmap_count();
    if count != bits {
        let rule = format!("the validity bitmap has {bits} bits set");
        return Err(sit("valid_blocks", count as u64, rule));
    }
    if e.seg_type() as usize >= NR_CURSEG_TYPE {
        let rule = "must be 0..=5 (one of the six logs)".to_string();
        return Err(sit("type", e.seg_type() as u64, rule));
    }
    Ok(())
}

/// File types an inode's mode may hold (`S_IFREG`, `S_IFDIR`, `S_IFLNK`, `S_IFCHR`,
/// `S_IFBLK`, `S_IFIFO`, `S_IFSOCK`).
const FILE_TYPES: [u16; 7] = [
    0o100000, 0o040000, 0o120000, 0o020000, 0o060000, 0o010000, 0o140000,
];
use super::pagemap::{COMPR_FL, FADVISE_ENCRYPT};
/// `F2FS_MIN_EXTRA_ATTR_SIZE`: `i_extra_isize` and `i_inline_xattr_size`.
const MIN_EXTRA_ATTR_SIZE: u16 = 4;
/// `MAX_INLINE_XATTR_SIZE` in words.
const MAX_INLINE_XATTR_WORDS: u16 =
    (ADDRS_PER_INODE - TOTAL_EXTRA_ATTR_SIZE as usize / 4 - INLINE_RESERVED_ADDRS as usize - 1)
        as u16;

/// The kernel's `sanity_check_inode` and fsck's inode checks that bear on reading: an
/// inode block read from `blkaddr` is inode `ino` of a plausible shape.
pub(crate) fn inode_sanity(
    sb: &Superblock,
    ino: u32,
    blkaddr: u32,
    block: &Block,
) -> Result<(), Corruption> {
    let inode = Inode::decode(block);
    let err = |field, value: u64, rule: String| Corruption::Inode {
        ino,
        blkaddr: blkaddr as u64,
        field,
        value,
        rule,
    };
    if sb.feature.contains(FEATURE_INODE_CHKSUM) && checksum_fits(&inode) {
        let stored = inode.extra().map_or(0, |e| e.inode_checksum);
        let computed = inode_checksum(block, checksum_seed(&sb.uuid));
        if stored != computed {
            return Err(Corruption::InodeChecksum {
                ino,
                blkaddr: blkaddr as u64,
                stored,
                computed,
            });
        }
    }
    if !FILE_TYPES.contains(&(inode.mode & S_IFMT)) {
        return Err(err("i_mode", inode.mode as u64, "no file type".into()));
    }
    check_extra(sb, &inode).map_err(|(f, v, r)| err(f, v, r))?;
    check_inline(sb, &inode).map_err(|(f, v, r)| err(f, v, r))?;
    check_flags(sb, &inode).map_err(|(f, v, r)| err(f, v, r))?;
    check_extent(sb, &inode).map_err(|(f, v, r)| err(f, v, r))
}

type Broken = (&'static str, u64, String);

/// Extra attribute and inline xattr sizes, which place the addresses.
fn check_extra(sb: &Superblock, inode: &Inode) -> Result<(), Broken> {
    let Some(extra) = inode.extra() else {
        return Ok(());
    };
    if !sb.feature.contains(FEATURE_EXTRA_ATTR) {
        let rule = "F2FS_EXTRA_ATTR set, but the volume has no extra_attr feature";
        return Err(("i_inline", inode.inline as u64, rule.into()));
    }
    let size = extra.extra_isize;
    if !(MIN_EXTRA_ATTR_SIZE..=TOTAL_EXTRA_ATTR_SIZE).contains(&size) || size % 4 != 0 {
        let rule =
            format!("must be a multiple of 4 in {MIN_EXTRA_ATTR_SIZE}..={TOTAL_EXTRA_ATTR_SIZE}");
        return Err(("i_extra_isize", size as u64, rule));
    }
    let xattr = extra.inline_xattr_size;
    let flexible = sb.feature.contains(FEATURE_FLEXIBLE_INLINE_XATTR);
    if flexible
        && inode.inline & F2FS_INLINE_XATTR != 0
        && !(1..=MAX_INLINE_XATTR_WORDS).contains(&xattr)
    {
        let rule = format!("must be 1..={MAX_INLINE_XATTR_WORDS} words");
        return Err(("i_inline_xattr_size", xattr as u64, rule));
    }
    Ok(())
}

/// Inline flags against the file type, and an inline file's size against the room.
fn check_inline(sb: &Superblock, inode: &Inode) -> Result<(), Broken> {
    let fmt = inode.mode & S_IFMT;
    let flags = inode.inline;
    let data = flags & F2FS_INLINE_DATA != 0;
    let dentry = flags & F2FS_INLINE_DENTRY != 0;
    if (data && !(fmt == S_IFREG || fmt == S_IFLNK)) || (dentry && fmt != S_IFDIR) {
        let rule = "inline data only on files and symlinks, inline dentries only on directories";
        return Err(("i_inline", flags as u64, rule.into()));
    }
    let flexible = sb.feature.contains(FEATURE_FLEXIBLE_INLINE_XATTR);
    let addrs =
        ADDRS_PER_INODE.saturating_sub(inode.extra_words() + inode.inline_xattr_words(flexible));
    if addrs < 2 {
        let rule = "extra attributes and inline xattrs leave no room for addresses";
        return Err(("i_inline_xattr_size", addrs as u64, rule.into()));
    }
    if inode.size > MAX_FILE_BYTES {
        return Err((
            "i_size",
            inode.size,
            format!("must be at most {MAX_FILE_BYTES}"),
        ));
    }
    let inline_bytes = 4 * (addrs as u64 - INLINE_RESERVED_ADDRS as u64);
    if data && inode.size > inline_bytes {
        let rule = format!("an inline file holds at most {inline_bytes} bytes");
        return Err(("i_size", inode.size, rule));
    }
    if fmt == S_IFLNK && inode.size >= BLOCK_SIZE as u64 {
        return Err((
            "i_size",
            inode.size,
            "a symlink target is at most 4095 bytes".into(),
        ));
    }
    Ok(())
}

/// Compression and encryption flags: refused unless the volume has the feature (then the
/// read path refuses the inode as unsupported).
fn check_flags(sb: &Superblock, inode: &Inode) -> Result<(), Broken> {
    if inode.flags & COMPR_FL != 0 && !sb.feature.contains(FEATURE_COMPRESSION) {
        let rule = "compressed, but the volume has no compression feature";
        return Err(("i_flags", inode.flags as u64, rule.into()));
    }
    if inode.advise & FADVISE_ENCRYPT != 0 && !sb.feature.contains(FEATURE_ENCRYPT) {
        let rule = "encrypted, but the volume has no encrypt feature";
        return Err(("i_advise", inode.advise as u64, rule.into()));
    }
    Ok(())
}

/// `sanity_check_extent_cache`: the cached extent, if any, lies in the main area.
fn check_extent(sb: &Superblock, inode: &Inode) -> Result<(), Broken> {
    let ext = inode.ext;
    if ext.len == 0 {
        return Ok(());
    }
    let main_end = sb.main_blkaddr as u64 + ((sb.segment_count_main as u64) << LOG_BLOCKS_PER_SEG);
    let last = ext.blk_addr as u64 + ext.len as u64 - 1;
    if (ext.blk_addr as u64) < sb.main_blkaddr as u64 || last >= main_end {
        let rule = format!("extent of {} blocks must lie in the main area", ext.len);
        return Err(("i_ext.blk_addr", ext.blk_addr as u64, rule));
    }
    Ok(())
}

impl<D: BlockDevice> F2fs<D> {
    /// Whether the device may be written (not a read-only mount).
    pub(crate) fn writable(&self, what: &str) -> Result<(), FsError> {
        if self.read_only {
            return Err(FsError::ReadOnly(what.to_string()));
        }
        Ok(())
    }

    /// Where a node block may be: a valid block of a node segment.
    fn node_addr_rule(&self, addr: u32) -> Result<(), String> {
        self.block_rule(addr, true)
    }

    /// A block of the main area, valid in the SIT, in a segment of the right class.
    pub(crate) fn block_rule(&self, addr: u32, node: bool) -> Result<(), String> {
        let Some((segno, off)) = self.segs.segno_of(addr) else {
            let end = self.sb.main_blkaddr as u64
                + ((self.sb.segment_count_main as u64) << LOG_BLOCKS_PER_SEG);
            return Err(format!(
                "outside the main area {}..{end}",
                self.sb.main_blkaddr
            ));
        };
        let seg = &self.segs.info[segno as usize];
        if !test_bit_msb(&seg.map, off as usize) {
            return Err(format!(
                "its SIT bit is clear (segment {segno}, block {off})"
            ));
        }
        let is_node = seg.seg_type as usize >= NR_CURSEG_DATA_TYPE;
        if is_node != node {
            let (want, found) = if node {
                ("node", "data")
            } else {
                ("data", "node")
            };
            return Err(format!(
                "segment {segno} is a {found} segment (SIT type {}), not a {want} one",
                seg.seg_type
            ));
        }
        Ok(())
    }

    /// A NAT entry as stored: free, or a valid node block with an owner. Node ids 1 and
    /// 2 (the node and meta inodes) hold the placeholder address 1 mkfs writes (nothing
    /// reads them; fsck.f2fs requires it).
    pub(crate) fn check_nat_entry(&self, nid: u32, e: &NatEntry) -> Result<(), Corruption> {
        let nat = |field, value: u64, rule: String| Corruption::Nat {
            nid,
            field,
            value,
            rule,
        };
        if nid == NODE_INO || nid == META_INO {
            if e.block_addr != 1 {
                let rule = "the node and meta inodes' entries hold address 1".to_string();
                return Err(nat("block_addr", e.block_addr as u64, rule));
            }
            return Ok(());
        }
        if e.block_addr == NULL_ADDR {
            return Ok(());
        }
        if nid == 0 {
            return Err(nat(
                "block_addr",
                e.block_addr as u64,
                "node id 0 is never used".into(),
            ));
        }
        if e.ino == 0 {
            return Err(nat("ino", 0, "a node in use must name its inode".into()));
        }
        self.node_addr_rule(e.block_addr)
            .map_err(|rule| nat("block_addr", e.block_addr as u64, rule))
    }

    /// A NAT block just read from the NAT area: every entry the journal does not supersede.
    pub(crate) fn check_nat_block(&self, index: u32, block: &NatBlock) -> Result<(), Corruption> {
        for (slot, e) in block.entries.iter().enumerate() {
            let nid = index * NAT_ENTRY_PER_BLOCK + slot as u32;
            if !self.nat.journal.contains_key(&nid) {
                self.check_nat_entry(nid, e)?;
            }
        }
        Ok(())
    }

    /// Where node `nid` is, before it is read: a valid block of a node segment.
    pub(crate) fn check_node_addr(&self, nid: u32, entry: &NatEntry) -> Result<(), Corruption> {
        if entry.block_addr == NULL_ADDR {
            return Err(Corruption::NatEntryMissing { nid });
        }
        self.node_addr_rule(entry.block_addr)
            .map_err(|rule| Corruption::Node {
                nid,
                blkaddr: entry.block_addr as u64,
                field: "nat.block_addr",
                value: entry.block_addr as u64,
                rule,
            })
    }

    /// A node block read through the NAT: its footer names the node and the owner the
    /// NAT gives, an inode sits at tree offset 0 and nothing else does, an inode is sane.
    pub(crate) fn check_node_footer(
        &self,
        nid: u32,
        entry: &NatEntry,
        block: &Block,
    ) -> Result<(), Corruption> {
        let addr = entry.block_addr;
        let node = |field, value: u64, rule: String| Corruption::Node {
            nid,
            blkaddr: addr as u64,
            field,
            value,
            rule,
        };
        let f = NodeFooter::decode(block);
        if f.nid != nid {
            return Err(node("footer.nid", f.nid as u64, format!("must be {nid}")));
        }
        if f.ino != entry.ino {
            let rule = format!("must be {}, the owner the NAT names", entry.ino);
            return Err(node("footer.ino", f.ino as u64, rule));
        }
        let is_inode = nid == entry.ino;
        if is_inode != (f.kind() == NodeKind::Inode) {
            let rule = if is_inode {
                "an inode is at tree offset 0"
            } else {
                "only an inode is at tree offset 0"
            };
            return Err(node("footer.offset", f.offset() as u64, rule.into()));
        }
        if is_inode {
            inode_sanity(&self.sb, nid, addr, block)?;
        }
        Ok(())
    }

    /// A SIT journal entry: a segment of the main area, listed once, a sane entry.
    pub(crate) fn check_sit_journal_entry(
        &self,
        j: &crate::summary::SitJournalEntry,
        main: usize,
    ) -> Result<(), Corruption> {
        let bad = |rule: &str| Corruption::Sit {
            segno: j.segno,
            field: "segno",
            value: j.segno as u64,
            rule: format!("in the SIT journal: {rule}"),
        };
        if j.segno as usize >= main {
            return Err(bad(&format!("beyond the {main} main segments")));
        }
        if self.segs.journal.contains(&j.segno) {
            return Err(bad("listed twice"));
        }
        check_sit_entry(j.segno, &j.entry)
    }

    /// A data address about to be read as block `index` of `ino`.
    pub(crate) fn check_data_addr(
        &self,
        ino: u32,
        index: u64,
        addr: u32,
    ) -> Result<(), Corruption> {
        self.block_rule(addr, false)
            .map_err(|rule| Corruption::DataAddress {
                ino,
                index,
                blkaddr: addr as u64,
                rule,
            })
    }

    /// The node `ino` as an inode: a node at tree offset 0 owned by itself (a dentry or an
    /// orphan entry may name any node id), and not quarantined by the checks at mount.
    pub(crate) fn inode_node(&mut self, ino: u32) -> Result<&mut Box<Block>, FsError> {
        if let Some(c) = self.quarantine.get(&ino) {
            return Err(c.clone().into());
        }
        let block = self.node(ino)?;
        let f = NodeFooter::decode(block);
        if f.ino == ino && f.offset() == 0 {
            return Ok(block);
        }
        Err(Corruption::Node {
            nid: ino,
            blkaddr: 0,
            field: "footer.ino",
            value: f.ino as u64,
            rule: format!(
                "not an inode: node at offset {} of inode {}",
                f.offset(),
                f.ino
            ),
        }
        .into())
    }

    /// The checks of what mount read (SIT totals, current segments, journals, orphans);
    /// SIT entries were checked as they were loaded.
    pub(crate) fn mount_checks(&mut self, m: &Mounted) {
        let mut found = Findings::default();
        self.check_totals(&mut found);
        self.check_cursegs(&mut found);
        self.check_nat_journal(m, &mut found);
        self.check_orphan_list(&m.orphans, &mut found);
        self.findings.list.extend(found.list);
        self.findings.more += found.more;
    }

    fn cp_field(&self, field: &'static str, value: u64, rule: String) -> Corruption {
        Corruption::CheckpointField {
            blkaddr: self.pack_start(self.cp_pack),
            field,
            value,
            rule,
        }
    }

    /// `build_sit_entries`: node blocks in the SIT are the checkpoint's node count; all
    /// valid blocks fit its block count (which may include reserved `NEW_ADDR` blocks,
    /// not in the SIT), which fits the user blocks.
    fn check_totals(&self, found: &mut Findings) {
        let cp: &Checkpoint = &self.cp;
        let node: u64 = self
            .segs
            .info
            .iter()
            .filter(|s| s.seg_type as usize >= NR_CURSEG_DATA_TYPE)
            .map(|s| s.valid_blocks as u64)
            .sum();
        if node != cp.valid_node_count as u64 {
            found.add(
                None,
                Corruption::Count {
                    what: "valid node blocks",
                    recorded: cp.valid_node_count as u64,
                    found: node,
                    counted_in: "SIT's node segments",
                },
            );
        }
        let all = self.segs.valid_blocks;
        if all > cp.valid_block_count {
            found.add(
                None,
                Corruption::Count {
                    what: "valid blocks",
                    recorded: cp.valid_block_count,
                    found: all,
                    counted_in: "SIT (more than recorded)",
                },
            );
        }
        if cp.valid_block_count > cp.user_block_count {
            let rule = format!("must be at most user_block_count {}", cp.user_block_count);
            found.add(
                None,
                self.cp_field("valid_block_count", cp.valid_block_count, rule),
            );
        }
        if cp.valid_inode_count > cp.valid_node_count {
            let rule = format!("must be at most valid_node_count {}", cp.valid_node_count);
            found.add(
                None,
                self.cp_field("valid_inode_count", cp.valid_inode_count as u64, rule),
            );
        }
    }

    /// `sanity_check_curseg` and the distinct-segments rule of `sanity_check_ckpt`.
    fn check_cursegs(&self, found: &mut Findings) {
        const NAMES: [&str; NR_CURSEG_TYPE] = [
            "hot data",
            "warm data",
            "cold data",
            "hot node",
            "warm node",
            "cold node",
        ];
        for (log, l) in self.segs.logs.iter().enumerate() {
            let bad = |rule: String| Corruption::CurrentSegment {
                log: NAMES[log],
                segno: l.segno,
                rule,
            };
            if let Some(other) = (0..log).find(|&o| self.segs.logs[o].segno == l.segno) {
                found.add(
                    None,
                    bad(format!(
                        "also the current segment of the {} log",
                        NAMES[other]
                    )),
                );
                continue;
            }
            let alloc = self.cp.alloc_type[log];
            if alloc != ALLOC_LFS && alloc != ALLOC_SSR {
                found.add(
                    None,
                    bad(format!("alloc_type {alloc} is neither LFS (0) nor SSR (1)")),
                );
            }
            let seg = &self.segs.info[l.segno as usize];
            if seg.valid_blocks > 0 && seg.seg_type as usize != log {
                found.add(
                    None,
                    bad(format!("its SIT type is {}, not {log}", seg.seg_type)),
                );
            }
            let first = l.blkoff as u32;
            let last = if l.ssr { first + 1 } else { BLOCKS_PER_SEG };
            if let Some(off) = (first..last).find(|&o| test_bit_msb(&seg.map, o as usize)) {
                found.add(
                    None,
                    bad(format!(
                        "block {off} is valid in the SIT, but the log writes next at {first}"
                    )),
                );
            }
        }
    }

    /// NAT journal entries: node ids in range, each once, addresses of valid nodes.
    fn check_nat_journal(&self, m: &Mounted, found: &mut Findings) {
        let mut seen = std::collections::BTreeSet::new();
        for j in &m.nat_journal {
            let bad = |field, value: u64, rule: &str| Corruption::Nat {
                nid: j.nid,
                field,
                value,
                rule: format!("in the NAT journal: {rule}"),
            };
            if j.nid >= self.max_nid() {
                found.add(None, bad("nid", j.nid as u64, "beyond the NAT"));
            } else if !seen.insert(j.nid) {
                found.add(None, bad("nid", j.nid as u64, "listed twice"));
            } else {
                found.add_result(None, self.check_nat_entry(j.nid, &j.entry));
            }
        }
    }

    /// Orphan entries: node ids in range, each once.
    fn check_orphan_list(&self, orphans: &[u32], found: &mut Findings) {
        let mut seen = std::collections::BTreeSet::new();
        for &ino in orphans {
            let rule = if ino <= ROOT_INO || ino >= self.max_nid() {
                "not a node id of a file"
            } else if !seen.insert(ino) {
                "listed twice"
            } else {
                continue;
            };
            found.add(
                None,
                Corruption::Orphan {
                    ino,
                    rule: rule.into(),
                },
            );
        }
    }

    /// One past the largest node id the NAT holds.
    pub(crate) fn max_nid(&self) -> u32 {
        self.nat.nat_blocks.saturating_mul(NAT_ENTRY_PER_BLOCK)
    }

    /// An orphan about to be freed must have no link left (the list names a live file
    /// otherwise, and freeing it would destroy it).
    pub(crate) fn check_orphan_inode(&mut self, ino: u32) -> Result<(), FsError> {
        let links = Inode::decode(self.inode_node(ino)?).links;
        if links != 0 {
            return Err(Corruption::Orphan {
                ino,
                rule: format!("has {links} links: only an unlinked inode can be an orphan"),
            }
            .into());
        }
        Ok(())
    }

    /// A read-only mount does not replay the roll-forward chain (that writes): counts the
    /// inodes whose fsync'd data it leaves out ([`F2fs::skipped_recovery`]).
    pub(crate) fn note_skipped_recovery(&mut self) -> Result<(), FsError> {
        let chain = self.read_chain()?;
        // The inodes roll-forward would replay (a DCM pseudo file only with its owner).
        self.skipped_recovery = super::fsync::replayable_fsyncs(&chain).len();
        Ok(())
    }

    /// Inodes with data fsync'd after the checkpoint that this read-only mount shows as
    /// of the checkpoint (roll-forward recovery writes, so it did not run).
    pub fn skipped_recovery(&self) -> usize {
        self.skipped_recovery
    }
}
