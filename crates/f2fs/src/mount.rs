//! Mount-time reading: pick a valid superblock copy, pick the newest valid checkpoint pack
//! (by version and CRC), load its summaries and journals, and find the root inode through
//! the NAT. Node addresses taken from the image are checked against the main area before
//! they are read (anything else out of range surfaces as a device error), and every failure
//! is a typed [`F2fsError`]; nothing here panics on a corrupt image.

use flashstack_block::BlockDevice;
use flashstack_sim::Nanos;

use crate::checkpoint::{nat_block_in_second_copy, Checkpoint, OrphanBlock};
use crate::codec::Block;
use crate::consts::*;
use crate::dentry::{DentryBlock, NamedEntry};
use crate::error::{Corruption, F2fsError};
use crate::io::Io;
use crate::nat::{nat_block_addr, nat_position, NatBlock, NatEntry};
use crate::node::{checksum_fits, checksum_seed, inode_checksum, Inode};
use crate::summary::*;
use crate::superblock::Superblock;

/// What a successful mount found.
#[derive(Clone, Debug)]
pub struct Mounted {
    pub superblock: Superblock,
    /// Which superblock copy was used (0 or 1).
    pub superblock_copy: u8,
    pub checkpoint: Checkpoint,
    /// Which checkpoint pack is current (1 or 2).
    pub cp_pack: u8,
    /// Inodes listed in the orphan blocks.
    pub orphans: Vec<u32>,
    pub nat_journal: Vec<NatJournalEntry>,
    pub sit_journal: Vec<SitJournalEntry>,
    /// Summaries of the hot, warm and cold data logs' current segments.
    pub data_summaries: [Vec<Summary>; NR_CURSEG_DATA_TYPE],
    /// Summary blocks of the hot, warm and cold node logs' current segments.
    pub node_summaries: Vec<SummaryBlock>,
    pub root: Inode,
    pub root_blkaddr: u32,
    /// Entries of the root directory's first dentry block (empty for an inline directory).
    pub root_entries: Vec<NamedEntry>,
}

/// Reads both superblock copies and returns the first valid one with its index.
pub fn read_superblock<D: BlockDevice + ?Sized>(
    dev: &mut D,
) -> Result<(Superblock, u8), F2fsError> {
    pick_superblock(&mut Io::new(dev, 0))
}

fn pick_superblock<D: BlockDevice + ?Sized>(io: &mut Io<D>) -> Result<(Superblock, u8), F2fsError> {
    let first = superblock_copy(io, 0)?;
    let first_err = match first {
        Ok(sb) => return Ok((sb, 0)),
        Err(e) => e,
    };
    match superblock_copy(io, 1)? {
        Ok(sb) => Ok((sb, 1)),
        Err(second) => Err(F2fsError::NoValidSuperblock {
            first: Box::new(first_err),
            second: Box::new(second),
        }),
    }
}

/// One copy: device errors are fatal, corruption is returned for the caller to weigh.
fn superblock_copy<D: BlockDevice + ?Sized>(
    io: &mut Io<D>,
    copy: u8,
) -> Result<Result<Superblock, Corruption>, F2fsError> {
    let block = io.read_block(copy as u64)?;
    let sb = match Superblock::from_block(&block, copy) {
        Ok(sb) => sb,
        Err(e) => return Ok(Err(e)),
    };
    if sb.block_count > io.capacity_blocks() {
        return Ok(Err(Corruption::SuperblockField {
            copy,
            field: "block_count",
            value: sb.block_count,
            rule: format!("exceeds the device's {} blocks", io.capacity_blocks()),
        }));
    }
    Ok(Ok(sb))
}

/// Mounts read-only: superblock, checkpoint, summaries, journals, root inode. Requests
/// arrive from virtual time 0; see [`mount_at`] for a device already in use.
pub fn mount<D: BlockDevice + ?Sized>(dev: &mut D) -> Result<Mounted, F2fsError> {
    mount_at(dev, 0).map(|(mounted, _)| mounted)
}

/// As [`mount`], with the first request arriving at `start_ns`; also returns the time the
/// last read completed.
pub fn mount_at<D: BlockDevice + ?Sized>(
    dev: &mut D,
    start_ns: Nanos,
) -> Result<(Mounted, Nanos), F2fsError> {
    let mut io = Io::new(dev, start_ns);
    let (superblock, superblock_copy) = pick_superblock(&mut io)?;
    let (pack, cp_pack) = pick_checkpoint(&mut io, &superblock)?;
    check_checkpoint(&superblock, &pack.cp, pack.start)?;
    let orphans = read_orphans(&mut io, &superblock, &pack)?;
    let sums = read_summaries(&mut io, &superblock, &pack)?;
    let nat_journal = journal_entries(&sums.nat_journal, pack.start, Journal::nat_entries)?;
    let sit_journal = journal_entries(&sums.sit_journal, pack.start, Journal::sit_entries)?;
    let ctx = Ctx {
        sb: &superblock,
        cp: &pack.cp,
        nat_journal: &nat_journal,
    };
    let (root, root_blkaddr) = read_inode(&mut io, &ctx, ROOT_INO)?;
    let root_entries = read_root_entries(&mut io, &ctx, &root, root_blkaddr)?;
    let mounted = Mounted {
        superblock,
        superblock_copy,
        checkpoint: pack.cp,
        cp_pack,
        orphans,
        nat_journal,
        sit_journal,
        data_summaries: sums.data,
        node_summaries: sums.node,
        root,
        root_blkaddr,
        root_entries,
    };
    Ok((mounted, io.now()))
}

/// A validated checkpoint pack.
struct Pack {
    cp: Checkpoint,
    start: u64,
}

fn pick_checkpoint<D: BlockDevice + ?Sized>(
    io: &mut Io<D>,
    sb: &Superblock,
) -> Result<(Pack, u8), F2fsError> {
    let first_start = sb.cp_blkaddr as u64;
    let second_start = first_start + BLOCKS_PER_SEG as u64;
    let first = validate_pack(io, first_start)?;
    let second = validate_pack(io, second_start)?;
    match (first, second) {
        (Ok(a), Ok(b)) if version_after(b.cp.checkpoint_ver, a.cp.checkpoint_ver) => Ok((b, 2)),
        (Ok(a), _) => Ok((a, 1)),
        (Err(_), Ok(b)) => Ok((b, 2)),
        (Err(first), Err(second)) => Err(F2fsError::NoValidCheckpoint {
            first: Box::new(first),
            second: Box::new(second),
        }),
    }
}

/// `ver_after`: versions compare as a wrapping sequence.
fn version_after(a: u64, b: u64) -> bool {
    (a.wrapping_sub(b) as i64) > 0
}

/// A pack is valid when its header and footer both pass their CRC and carry the same
/// version (f2fs-tools `validate_checkpoint`): a torn checkpoint write leaves them unequal.
fn validate_pack<D: BlockDevice + ?Sized>(
    io: &mut Io<D>,
    start: u64,
) -> Result<Result<Pack, Corruption>, F2fsError> {
    let header = match Checkpoint::verify(&*io.read_block(start)?, start) {
        Ok(cp) => cp,
        Err(e) => return Ok(Err(e)),
    };
    let total = header.cp_pack_total_block_count;
    if !(2..=BLOCKS_PER_SEG).contains(&total) {
        return Ok(Err(cp_field(
            start,
            "cp_pack_total_block_count",
            total,
            "must be 2..=512",
        )));
    }
    let footer_at = start + total as u64 - 1;
    let footer = match Checkpoint::verify(&*io.read_block(footer_at)?, footer_at) {
        Ok(cp) => cp,
        Err(e) => return Ok(Err(e)),
    };
    if footer.checkpoint_ver != header.checkpoint_ver {
        return Ok(Err(Corruption::CheckpointVersionMismatch {
            blkaddr: start,
            header: header.checkpoint_ver,
            footer: footer.checkpoint_ver,
        }));
    }
    Ok(Ok(Pack { cp: header, start }))
}

fn cp_field(blkaddr: u64, field: &'static str, value: u32, rule: &str) -> Corruption {
    Corruption::CheckpointField {
        blkaddr,
        field,
        value: value as u64,
        rule: rule.to_string(),
    }
}

/// A broken checkpoint rule: field, value, rule.
type Rule = (&'static str, u64, String);

fn rule_if(
    broken: bool,
    field: &'static str,
    value: u64,
    rule: impl FnOnce() -> String,
) -> Option<Rule> {
    broken.then(|| (field, value, rule()))
}

/// The consistency rules between checkpoint and superblock (`sanity_check_ckpt`).
fn check_checkpoint(sb: &Superblock, cp: &Checkpoint, start: u64) -> Result<(), Corruption> {
    if let Some((field, value, rule)) = space_rules(sb, cp).or_else(|| layout_rules(sb, cp)) {
        return Err(Corruption::CheckpointField {
            blkaddr: start,
            field,
            value,
            rule,
        });
    }
    check_cursegs(cp, sb.segment_count_main, start)
}

/// Metadata, reserved, overprovision and user space must fit the volume.
fn space_rules(sb: &Superblock, cp: &Checkpoint) -> Option<Rule> {
    let fsmeta = [
        sb.segment_count_ckpt,
        sb.segment_count_sit,
        sb.segment_count_nat,
        cp.rsvd_segment_count,
        sb.segment_count_ssa,
    ]
    .iter()
    .map(|&n| n as u64)
    .sum::<u64>();
    let main_blocks = (sb.segment_count_main as u64) << LOG_BLOCKS_PER_SEG;
    let rsvd = cp.rsvd_segment_count as u64;
    let user = cp.user_block_count;
    rule_if(
        fsmeta >= sb.segment_count as u64,
        "rsvd_segment_count",
        rsvd,
        || "metadata plus reserved segments must be fewer than segment_count".into(),
    )
    .or_else(|| {
        rule_if(rsvd == 0, "rsvd_segment_count", 0, || {
            "must not be 0".into()
        })
    })
    .or_else(|| {
        let ovp = cp.overprov_segment_count as u64;
        rule_if(ovp == 0, "overprov_segment_count", 0, || {
            "must not be 0".into()
        })
    })
    .or_else(|| {
        rule_if(
            user == 0 || user >= main_blocks,
            "user_block_count",
            user,
            || format!("must be 1..{main_blocks}"),
        )
    })
}

/// Version bitmap sizes and the summary position must match the superblock.
fn layout_rules(sb: &Superblock, cp: &Checkpoint) -> Option<Rule> {
    let sit_bytes = ((sb.segment_count_sit / 2) << LOG_BLOCKS_PER_SEG) / 8;
    let nat_bytes = ((sb.segment_count_nat / 2) << LOG_BLOCKS_PER_SEG) / 8;
    let (min_sum, max_sum) = (
        sb.cp_payload + 1,
        BLOCKS_PER_SEG - 1 - NR_CURSEG_TYPE as u32,
    );
    let start_sum = cp.cp_pack_start_sum;
    let sit = cp.sit_ver_bitmap_bytesize;
    let nat = cp.nat_ver_bitmap_bytesize;
    rule_if(
        sit != sit_bytes,
        "sit_ver_bitmap_bytesize",
        sit as u64,
        || format!("must be {sit_bytes}"),
    )
    .or_else(|| {
        rule_if(
            nat != nat_bytes,
            "nat_ver_bitmap_bytesize",
            nat as u64,
            || format!("must be {nat_bytes}"),
        )
    })
    .or_else(|| {
        let broken = !(min_sum..=max_sum).contains(&start_sum);
        rule_if(broken, "cp_pack_start_sum", start_sum as u64, || {
            format!("must be {min_sum}..={max_sum}")
        })
    })
}

fn check_cursegs(cp: &Checkpoint, main: u32, start: u64) -> Result<(), Corruption> {
    for i in 0..NR_CURSEG_NODE_TYPE {
        if cp.cur_node_segno[i] >= main || cp.cur_node_blkoff[i] as u32 >= BLOCKS_PER_SEG {
            let rule = format!("segment must be < {main}, offset < 512");
            return Err(cp_field(
                start,
                "cur_node_segno",
                cp.cur_node_segno[i],
                &rule,
            ));
        }
        if cp.cur_data_segno[i] >= main || cp.cur_data_blkoff[i] as u32 >= BLOCKS_PER_SEG {
            let rule = format!("segment must be < {main}, offset < 512");
            return Err(cp_field(
                start,
                "cur_data_segno",
                cp.cur_data_segno[i],
                &rule,
            ));
        }
    }
    Ok(())
}

fn read_orphans<D: BlockDevice + ?Sized>(
    io: &mut Io<D>,
    sb: &Superblock,
    pack: &Pack,
) -> Result<Vec<u32>, F2fsError> {
    if !pack.cp.has_flag(CP_ORPHAN_PRESENT_FLAG) {
        return Ok(Vec::new());
    }
    let first = pack.start + 1 + sb.cp_payload as u64;
    let end = pack.start + pack.cp.cp_pack_start_sum as u64;
    let mut inos = Vec::new();
    for blkaddr in first..end {
        inos.extend_from_slice(OrphanBlock::decode(&*io.read_block(blkaddr)?).live_inos());
    }
    Ok(inos)
}

/// The current logs' summaries and the two journals.
struct Summaries {
    nat_journal: Journal,
    sit_journal: Journal,
    data: [Vec<Summary>; NR_CURSEG_DATA_TYPE],
    node: Vec<SummaryBlock>,
}

fn read_summaries<D: BlockDevice + ?Sized>(
    io: &mut Io<D>,
    sb: &Superblock,
    pack: &Pack,
) -> Result<Summaries, F2fsError> {
    let cp = &pack.cp;
    let counts: [usize; NR_CURSEG_DATA_TYPE] = std::array::from_fn(|i| {
        // A log in SSR mode fills holes anywhere in its segment: all 512 entries count.
        if cp.alloc_type[i] == ALLOC_SSR {
            ENTRIES_IN_SUM
        } else {
            (cp.cur_data_blkoff[i] as usize).min(ENTRIES_IN_SUM)
        }
    });
    let sum_start = pack.start + cp.cp_pack_start_sum as u64;
    let mut sums = if cp.has_flag(CP_COMPACT_SUM_FLAG) {
        let n = CompactSummaries::blocks_for(counts.iter().sum());
        let blocks = read_run(io, sum_start, n)?;
        let c = CompactSummaries::decode(&blocks, counts);
        Summaries {
            nat_journal: c.nat_journal,
            sit_journal: c.sit_journal,
            data: c.data,
            node: Vec::new(),
        }
    } else {
        normal_data_summaries(io, pack, counts)?
    };
    sums.node = node_summaries(io, sb, pack)?;
    Ok(sums)
}

/// Data summaries as three full blocks, just before the node summaries on an unmount
/// checkpoint, else just before the footer (`sum_blk_addr`).
fn normal_data_summaries<D: BlockDevice + ?Sized>(
    io: &mut Io<D>,
    pack: &Pack,
    counts: [usize; NR_CURSEG_DATA_TYPE],
) -> Result<Summaries, F2fsError> {
    let base = if pack.cp.has_flag(CP_UMOUNT_FLAG) {
        NR_CURSEG_TYPE
    } else {
        NR_CURSEG_DATA_TYPE
    };
    let first = sum_block_addr(pack, base, 0)?;
    let blocks = read_run(io, first, NR_CURSEG_DATA_TYPE)?;
    let decoded: Vec<SummaryBlock> = blocks.iter().map(SummaryBlock::decode).collect();
    Ok(Summaries {
        nat_journal: decoded[0].journal.clone(),
        sit_journal: decoded[2].journal.clone(),
        data: std::array::from_fn(|i| decoded[i].entries[..counts[i]].to_vec()),
        node: Vec::new(),
    })
}

/// Node summaries live in the pack only on an unmount checkpoint; otherwise in the SSA.
fn node_summaries<D: BlockDevice + ?Sized>(
    io: &mut Io<D>,
    sb: &Superblock,
    pack: &Pack,
) -> Result<Vec<SummaryBlock>, F2fsError> {
    let addrs: Vec<u64> = if pack.cp.has_flag(CP_UMOUNT_FLAG) {
        let first = sum_block_addr(pack, NR_CURSEG_NODE_TYPE, 0)?;
        (0..NR_CURSEG_NODE_TYPE as u64).map(|i| first + i).collect()
    } else {
        let segs = &pack.cp.cur_node_segno[..NR_CURSEG_NODE_TYPE];
        segs.iter()
            .map(|&s| sb.ssa_blkaddr as u64 + s as u64)
            .collect()
    };
    addrs
        .into_iter()
        .map(|a| Ok(SummaryBlock::decode(&*io.read_block(a)?)))
        .collect()
}

/// `sum_blk_addr`: block `index` of the `base` summary blocks ending just before the footer.
fn sum_block_addr(pack: &Pack, base: usize, index: usize) -> Result<u64, Corruption> {
    let total = pack.cp.cp_pack_total_block_count as u64;
    let back = base as u64 + 1;
    if total < back + 1 {
        let rule = format!("too small to hold {base} summary blocks");
        return Err(cp_field(
            pack.start,
            "cp_pack_total_block_count",
            total as u32,
            &rule,
        ));
    }
    Ok(pack.start + total - back + index as u64)
}

fn read_run<D: BlockDevice + ?Sized>(
    io: &mut Io<D>,
    start: u64,
    count: usize,
) -> Result<Vec<Block>, F2fsError> {
    (0..count as u64)
        .map(|i| Ok(*io.read_block(start + i)?))
        .collect()
}

fn journal_entries<T>(
    journal: &Journal,
    blkaddr: u64,
    parse: impl Fn(&Journal) -> Result<Vec<T>, String>,
) -> Result<Vec<T>, Corruption> {
    parse(journal).map_err(|reason| Corruption::Summary { blkaddr, reason })
}

/// What node lookups need.
struct Ctx<'a> {
    sb: &'a Superblock,
    cp: &'a Checkpoint,
    nat_journal: &'a [NatJournalEntry],
}

/// The NAT entry of `nid`: the journal wins over the NAT area, whose current copy of each
/// block the checkpoint's NAT version bitmap selects.
fn nat_lookup<D: BlockDevice + ?Sized>(
    io: &mut Io<D>,
    ctx: &Ctx,
    nid: u32,
) -> Result<NatEntry, F2fsError> {
    if let Some(j) = ctx.nat_journal.iter().rev().find(|j| j.nid == nid) {
        return Ok(j.entry);
    }
    let (index, slot) = nat_position(nid);
    let nat_blocks = (ctx.sb.segment_count_nat / 2) << LOG_BLOCKS_PER_SEG;
    if index >= nat_blocks {
        return Err(Corruption::NatEntryMissing { nid }.into());
    }
    let bitmap = ctx.cp.nat_version_bitmap(ctx.sb.cp_payload);
    let second = nat_block_in_second_copy(&bitmap, index);
    let addr = nat_block_addr(ctx.sb.nat_blkaddr, index, second);
    let block = NatBlock::decode(&*io.read_block(addr)?);
    Ok(block.entries.get(slot).copied().unwrap_or_default())
}

/// Reads and checks the inode `ino`, returning it with its block address.
fn read_inode<D: BlockDevice + ?Sized>(
    io: &mut Io<D>,
    ctx: &Ctx,
    ino: u32,
) -> Result<(Inode, u32), F2fsError> {
    let entry = nat_lookup(io, ctx, ino)?;
    let node_err = |field, value: u64, rule: String| Corruption::Node {
        nid: ino,
        blkaddr: entry.block_addr as u64,
        field,
        value,
        rule,
    };
    check_main_addr(ctx.sb, entry.block_addr)
        .map_err(|rule| node_err("nat.block_addr", entry.block_addr as u64, rule))?;
    if entry.ino != ino {
        return Err(node_err("nat.ino", entry.ino as u64, format!("must be {ino}")).into());
    }
    let block = io.read_block(entry.block_addr as u64)?;
    let inode = Inode::decode(&block);
    let f = inode.footer;
    if f.nid != ino || f.ino != ino || f.offset() != 0 {
        let rule = format!("footer must name node {ino} of inode {ino} at offset 0");
        return Err(node_err("footer.nid", f.nid as u64, rule).into());
    }
    check_inode_checksum(ctx.sb, &inode, &block, entry.block_addr)?;
    Ok((inode, entry.block_addr))
}

/// The address must fall inside the main area.
fn check_main_addr(sb: &Superblock, blkaddr: u32) -> Result<(), String> {
    let end = sb.main_blkaddr as u64 + ((sb.segment_count_main as u64) << LOG_BLOCKS_PER_SEG);
    if (blkaddr as u64) < sb.main_blkaddr as u64 || blkaddr as u64 >= end {
        return Err(format!(
            "must be in the main area {}..{end}",
            sb.main_blkaddr
        ));
    }
    Ok(())
}

fn check_inode_checksum(
    sb: &Superblock,
    inode: &Inode,
    block: &Block,
    blkaddr: u32,
) -> Result<(), Corruption> {
    if !sb.feature.contains(FEATURE_INODE_CHKSUM) || !checksum_fits(inode) {
        return Ok(());
    }
    let stored = inode.extra().map_or(0, |e| e.inode_checksum);
    let computed = inode_checksum(block, checksum_seed(&sb.uuid));
    if stored != computed {
        return Err(Corruption::InodeChecksum {
            ino: inode.footer.ino,
            blkaddr: blkaddr as u64,
            stored,
            computed,
        });
    }
    Ok(())
}

/// The root must be a directory; its first dentry block is listed unless it is inline.
fn read_root_entries<D: BlockDevice + ?Sized>(
    io: &mut Io<D>,
    ctx: &Ctx,
    root: &Inode,
    root_blkaddr: u32,
) -> Result<Vec<NamedEntry>, F2fsError> {
    let err = |field, value: u64, rule: &str| Corruption::Node {
        nid: ROOT_INO,
        blkaddr: root_blkaddr as u64,
        field,
        value,
        rule: rule.to_string(),
    };
    if !root.is_dir() {
        return Err(err("i_mode", root.mode as u64, "the root must be a directory").into());
    }
    if root.inline & F2FS_INLINE_DENTRY != 0 {
        return Ok(Vec::new());
    }
    let flexible = ctx.sb.feature.contains(FEATURE_FLEXIBLE_INLINE_XATTR);
    let first = root
        .data_addrs(flexible)
        .first()
        .copied()
        .unwrap_or(NULL_ADDR);
    if first == NULL_ADDR || first == NEW_ADDR {
        return Ok(Vec::new());
    }
    check_main_addr(ctx.sb, first).map_err(|rule| err("i_addr[0]", first as u64, &rule))?;
    Ok(DentryBlock::decode(&*io.read_block(first as u64)?).live_entries())
}
