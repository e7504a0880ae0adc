//! The node-tree walk, and the full verification of [`super::Verify::Full`] built on it:
//! an fsck-like pass over the checkpointed state before anything is written.
//!
//! 1. Every NAT block (the current copy, the journal over it): each entry in use points
//!    at a valid block of a node segment and names an owner.
//! 2. From the root (and each orphan), every reachable inode, its node tree and xattr
//!    node, and for directories every dentry: each node is where its NAT entry says,
//!    with the footer its parent implies; each block (node or data) lies in the main
//!    area, is valid in the SIT, sits in a segment of its class, is referenced once, and
//!    its SSA entry names its owner (node id, and offset and version for data); `i_blocks`
//!    equals the blocks counted; dentries have a sane name length, the hash of their name, the bucket that hash
//!    selects, a valid file type matching the inode's mode, and dots naming the directory
//!    and its parent.
//! 3. Afterwards: link counts (files: one per dentry; directories: two plus one per
//!    subdirectory; orphans: none), every NAT entry in use reached, the checkpoint's node
//!    and inode counts, and per segment as many referenced blocks as the SIT marks valid.
//!
//! Cost: one read per NAT block, node block, dentry block and SSA block of a segment in
//! use (SSA blocks are cached 64 at a time); memory one bit per main-area block plus a
//! few words per node. Findings name the structure and, when one inode's data or entries
//! are concerned, that inode (a read-only mount then refuses access to it).

use std::collections::BTreeMap;

use flashstack_block::BlockDevice;

use super::data::{ADDR_WORD, NID_WORD};
use super::dir::{block_bucket, Area, Found, BLOCK_AREA};
use super::hash::dentry_hash;
use super::{word, F2fs, FsError};
use crate::codec::{set_bit_msb, test_bit_msb};
use crate::consts::*;
use crate::error::{Corruption, F2fsError};
use crate::nat::{nat_block_addr, NatBlock};
use crate::node::{Inode, NodeFooter, XATTR_NODE_OFFSET};
use crate::summary::{Summary, SummaryBlock};

const PER_BLOCK: u64 = ADDRS_PER_BLOCK as u64;
/// SSA blocks kept while walking.
const SSA_CACHE_MAX: usize = 64;
/// `F2FS_FT_MAX`: dentry file types are 1..=7.
const FT_MAX: u8 = 8;

/// What the tree walk meets: a node below the inode, or a data address (`NEW_ADDR`
/// included) with the node and slot holding it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum TreeItem {
    Node {
        nid: u32,
        addr: u32,
    },
    Data {
        index: u64,
        addr: u32,
        nid: u32,
        ofs_in_node: u16,
    },
}

type Visitor<'a, D> = dyn FnMut(&mut F2fs<D>, TreeItem) -> Result<(), FsError> + 'a;

impl<D: BlockDevice> F2fs<D> {
    /// Visits inode `ino`'s node tree in file order: every node below the inode (checked
    /// to belong to `ino` at the tree offset its place implies) and every non-null data
    /// address of a file block below `end`. Subtrees starting at `end` or later are not
    /// read.
    pub(crate) fn visit_tree(
        &mut self,
        ino: u32,
        end: u64,
        f: &mut Visitor<'_, D>,
    ) -> Result<(), FsError> {
        let geo = self.geometry(ino)?;
        // A MedFS delta zone's slots hold no addresses (`delta/`).
        let pointers = self.zone_start_slot(ino, &geo)?.unwrap_or(geo.addrs);
        let words: Vec<u32> = {
            let node = self.inode_node(ino)?;
            (0..geo.addrs)
                .map(|i| word(node, ADDR_WORD + geo.extra + i))
                .chain((0..INODE_NIDS).map(|k| word(node, NID_WORD + k)))
                .collect()
        };
        for (i, &addr) in words[..pointers].iter().enumerate() {
            if (i as u64) < end && addr != NULL_ADDR {
                let ofs_in_node = i as u16;
                f(
                    self,
                    TreeItem::Data {
                        index: i as u64,
                        addr,
                        nid: ino,
                        ofs_in_node,
                    },
                )?;
            }
        }
        let (n, a) = (PER_BLOCK, geo.per_block as u64);
        let base = geo.addrs as u64;
        // (first file block, tree offset, level: 0 direct, 1 indirect, 2 double indirect)
        let tops = [
            (base, 1, 0),
            (base + a, 2, 0),
            (base + 2 * a, 3, 1),
            (base + 2 * a + a * n, 4 + n as u32, 1),
            (base + 2 * a + 2 * a * n, 5 + 2 * n as u32, 2),
        ];
        for (k, (first, offset, level)) in tops.into_iter().enumerate() {
            let nid = words[geo.addrs + k];
            if nid != 0 && first < end {
                let at = Subtree {
                    ino,
                    nid,
                    offset,
                    level,
                    first,
                    parent: ino,
                    per_block: a,
                };
                self.visit_node(at, end, f)?;
            }
        }
        Ok(())
    }

    fn visit_node(&mut self, at: Subtree, end: u64, f: &mut Visitor<'_, D>) -> Result<(), FsError> {
        let footer = NodeFooter::decode(self.node(at.nid)?);
        if footer.ino != at.ino || footer.offset() != at.offset {
            return Err(at.misplaced(footer).into());
        }
        let addr = self.nat_get(at.nid)?.block_addr;
        f(self, TreeItem::Node { nid: at.nid, addr })?;
        let words: Vec<u32> = {
            let node = self.node(at.nid)?;
            (0..ADDRS_PER_BLOCK).map(|i| word(node, i)).collect()
        };
        let span = super::data::subtree_span(at.level, at.per_block);
        for (i, &w) in words.iter().enumerate() {
            let first = at.first + i as u64 * span;
            if first >= end || w == NULL_ADDR {
                continue;
            }
            if at.level == 0 {
                let item = TreeItem::Data {
                    index: first,
                    addr: w,
                    nid: at.nid,
                    ofs_in_node: i as u16,
                };
                f(self, item)?;
                continue;
            }
            // Children of an indirect node at offset o sit at o + 1 + i; those of the
            // double indirect node at o + 1 + i * (n + 1) (`get_node_path`).
            let step = if at.level == 2 {
                PER_BLOCK as u32 + 1
            } else {
                1
            };
            let child = Subtree {
                ino: at.ino,
                nid: w,
                offset: at.offset + 1 + i as u32 * step,
                level: at.level - 1,
                first,
                parent: at.nid,
                per_block: at.per_block,
            };
            self.visit_node(child, end, f)?;
        }
        Ok(())
    }

    /// The full verification (module docs): findings go to `self.findings`, inodes they
    /// concern to the quarantine. A read-write mount stops at the first.
    pub(crate) fn check_tree(&mut self, orphans: &[u32]) -> Result<(), FsError> {
        let mut w = Walk::new(self);
        self.scan_nat(&mut w)?;
        w.push(ROOT_INO, ROOT_INO, FT_DIR);
        for &ino in orphans {
            w.push(ino, 0, 0);
            w.seen.entry(ino).or_default().orphan = true;
        }
        while let Some(job) = w.stack.pop() {
            if w.stop(self) {
                break;
            }
            if let Err(e) = self.walk_inode(&mut w, job) {
                w.finding(self, Some(job.ino), e)?;
            }
            // Clean nodes read by the walk are not kept (nothing is dirty yet).
            if self.dirty_nodes.is_empty() {
                self.nodes.clear();
            }
            self.nat.shrink();
        }
        if !w.stop(self) {
            self.check_links(&w);
            self.check_reached(&w);
            self.check_segment_counts(&w);
        }
        Ok(())
    }

    /// Step 1: every NAT block of the current copy, journal entries over it.
    fn scan_nat(&mut self, w: &mut Walk) -> Result<(), FsError> {
        for index in 0..self.nat.nat_blocks {
            let second = crate::checkpoint::nat_block_in_second_copy(&self.nat_bitmap, index);
            let addr = nat_block_addr(self.sb.nat_blkaddr, index, second);
            let mut block = NatBlock::decode(&*self.read_block(addr)?);
            self.nat.overlay_journal(index, &mut block);
            for (slot, e) in block.entries.iter().enumerate() {
                let nid = index * NAT_ENTRY_PER_BLOCK + slot as u32;
                if let Err(c) = self.check_nat_entry(nid, e) {
                    self.findings.add(None, c);
                    continue;
                }
                if e.block_addr == NULL_ADDR || nid == NODE_INO || nid == META_INO {
                    continue;
                }
                w.nat_used.push((nid, e.block_addr));
            }
        }
        Ok(())
    }

    /// Step 2 for one inode: the inode, its tree, its xattr node, its dentries.
    fn walk_inode(&mut self, w: &mut Walk, job: Job) -> Result<(), FsError> {
        let ino = job.ino;
        let block = self.inode_node(ino)?.clone();
        let inode = Inode::decode(&block);
        let addr = self.nat_get(ino)?.block_addr;
        w.mark(self, Owner::Node(ino), ino, addr)?;
        w.reach(ino);
        w.inodes += 1;
        if let Some(seen) = w.seen.get_mut(&ino) {
            seen.i_links = Some(inode.links);
            seen.is_dir = inode.is_dir();
        }
        if job.file_type != 0 && job.file_type != file_type_of(inode.mode) {
            return Err(Corruption::Inode {
                ino,
                blkaddr: addr as u64,
                field: "i_mode",
                value: inode.mode as u64,
                rule: format!(
                    "the dentry in directory {} says file type {}",
                    job.parent, job.file_type
                ),
            }
            .into());
        }
        let mut tree = TreeCount {
            blocks: 1,
            dentry_blocks: Vec::new(),
            compr_blocks: None,
        };
        let inline = inode.inline & (F2FS_INLINE_DATA | F2FS_INLINE_DENTRY) != 0;
        // A device node keeps its device number where a file's first addresses would be;
        // special files own no data block.
        if !inline && !super::attr::is_special(inode.mode) {
            self.walk_tree(w, ino, &inode, &mut tree)?;
        }
        if inode.xattr_nid != 0 {
            self.walk_xattr_node(w, ino, inode.xattr_nid)?;
            tree.blocks += 1;
        }
        check_counts(ino, addr, &inode, &tree)?;
        // A MedFS DCM owner leads to its pseudo file (one link, no dentry: `delta/dcm.rs`).
        if let Some(pseudo) = self.check_dcm(ino, inode.is_reg())? {
            w.named(self, ino, pseudo, FT_REG_FILE)?;
        }
        if inode.is_dir() {
            self.walk_dentries(w, ino, job.parent, &inode, &tree.dentry_blocks)?;
        }
        Ok(())
    }

    fn walk_tree(
        &mut self,
        w: &mut Walk,
        ino: u32,
        inode: &Inode,
        tree: &mut TreeCount,
    ) -> Result<(), FsError> {
        // Blocks past `i_size` are not refused: neither the kernel nor fsck.f2fs does, and
        // a write that fails for space leaves some here (the kernel truncates them).
        let is_dir = inode.is_dir();
        let mut clusters = super::cluster::ClusterCount::of(inode);
        // The zone's records are checked here; `visit_tree` skips its slots.
        self.check_delta_zone(ino, inode.is_reg())?;
        self.visit_tree(ino, u64::MAX, &mut |fs, item| {
            tree.blocks += 1;
            match item {
                TreeItem::Node { nid, addr } => {
                    w.reach(nid);
                    w.mark(fs, Owner::Node(nid), ino, addr)
                }
                TreeItem::Data {
                    index,
                    addr,
                    nid,
                    ofs_in_node,
                } => {
                    // Reserved by fallocate, or a compressed cluster's `COMPRESS_ADDR` and
                    // saved slots: counted in `valid_block_count`, not in the SIT.
                    if clusters.reserves(index, addr) {
                        w.reserved += 1;
                        return Ok(());
                    }
                    fs.check_data_addr(ino, index, addr)?;
                    w.mark(
                        fs,
                        Owner::Data {
                            nid,
                            ofs_in_node,
                            index,
                        },
                        ino,
                        addr,
                    )?;
                    if is_dir {
                        tree.dentry_blocks.push((index, addr));
                    }
                    Ok(())
                }
            }
        })?;
        tree.compr_blocks = clusters.compr_blocks();
        Ok(())
    }

    fn walk_xattr_node(&mut self, w: &mut Walk, ino: u32, nid: u32) -> Result<(), FsError> {
        let footer = NodeFooter::decode(self.node(nid)?);
        if footer.ino != ino || footer.offset() != XATTR_NODE_OFFSET {
            let at = Subtree {
                ino,
                nid,
                offset: XATTR_NODE_OFFSET,
                level: 0,
                first: 0,
                parent: ino,
                per_block: ADDRS_PER_BLOCK as u64,
            };
            return Err(at.misplaced(footer).into());
        }
        let addr = self.nat_get(nid)?.block_addr;
        w.reach(nid);
        w.mark(self, Owner::Node(nid), ino, addr)
    }

    /// Every dentry of directory `dir`: checked, and the inodes they name queued.
    fn walk_dentries(
        &mut self,
        w: &mut Walk,
        dir: u32,
        parent: u32,
        inode: &Inode,
        blocks: &[(u64, u32)],
    ) -> Result<(), FsError> {
        let mut entries: Vec<(Option<u64>, Found)> = Vec::new();
        if inode.inline & F2FS_INLINE_DENTRY != 0 {
            let geo = self.geometry(dir)?;
            let node = self.inode_node(dir)?;
            let area = Area::inline(geo.inline_bytes);
            let found = area.entries(&node[geo.inline_start()..]);
            entries.extend(found.into_iter().map(|f| (None, f)));
        } else {
            for &(index, addr) in blocks {
                let page = self.read_block(addr as u64)?;
                let found = BLOCK_AREA.entries(&page[..]);
                entries.extend(found.into_iter().map(|f| (Some(index), f)));
            }
        }
        let shape = DirShape {
            dir,
            parent,
            depth: inode.current_depth,
            dir_level: inode.dir_level as u32,
            implicit_dots: inode.inline & F2FS_INLINE_DOTS != 0,
        };
        let children = shape.check(&entries).map_err(FsError::from)?;
        for (ino, file_type) in children {
            w.named(self, dir, ino, file_type)?;
        }
        Ok(())
    }

    /// Links: files one per dentry (orphans none), directories two plus subdirectories.
    fn check_links(&mut self, w: &Walk) {
        for (&ino, seen) in &w.seen {
            let expected = if seen.orphan {
                seen.dentries
            } else if seen.is_dir {
                2 + seen.subdirs
            } else {
                seen.dentries
            };
            let Some(links) = seen.i_links else {
                continue;
            };
            if links != expected {
                let c = Corruption::Inode {
                    ino,
                    blkaddr: 0,
                    field: "i_links",
                    value: links as u64,
                    rule: format!(
                        "{expected} found ({} dentries, {} subdirectories)",
                        seen.dentries, seen.subdirs
                    ),
                };
                self.findings.add(Some(ino), c.clone());
                self.quarantine.entry(ino).or_insert(c);
            }
        }
    }

    /// Every NAT entry in use reached, and the checkpoint's counts.
    fn check_reached(&mut self, w: &Walk) {
        for &(nid, addr) in &w.nat_used {
            if !w.reached_nid(nid) {
                self.findings.add(
                    None,
                    Corruption::Nat {
                        nid,
                        field: "block_addr",
                        value: addr as u64,
                        rule:
                            "unreachable: no directory entry, node tree or orphan entry leads to it"
                                .into(),
                    },
                );
            }
        }
        let cp = &self.cp;
        let counts = [
            (
                "valid nodes",
                cp.valid_node_count as u64,
                w.nodes,
                "node trees",
            ),
            (
                "valid inodes",
                cp.valid_inode_count as u64,
                w.inodes,
                "directory tree",
            ),
            // fsck.f2fs's rule: the checkpoint counts every valid block plus every block
            // reserved by fallocate, exactly. The mount takes the difference between the
            // checkpoint and the SIT as the reservations; here it is checked.
            (
                "valid blocks",
                cp.valid_block_count,
                self.segs.valid_blocks + w.reserved,
                "SIT plus fallocate reservations (NEW_ADDR) in node trees",
            ),
        ];
        for (what, recorded, found, counted_in) in counts {
            if recorded != found {
                self.findings.add(
                    None,
                    Corruption::Count {
                        what,
                        recorded,
                        found,
                        counted_in,
                    },
                );
            }
        }
    }

    /// Per segment, as many blocks referenced as the SIT marks valid.
    fn check_segment_counts(&mut self, w: &Walk) {
        for (segno, seg) in self.segs.info.iter().enumerate() {
            let referenced = w.per_segment[segno] as u32;
            let marked = seg.valid_blocks as u32;
            if referenced != marked {
                let first = (0..BLOCKS_PER_SEG).find(|&o| {
                    test_bit_msb(&seg.map, o as usize)
                        && !test_bit_msb(
                            &w.referenced,
                            (segno as u32 * BLOCKS_PER_SEG + o) as usize,
                        )
                });
                let detail = first.map_or(String::new(), |o| {
                    format!(
                        " (block {} is valid but nothing points at it)",
                        self.sb.main_blkaddr + segno as u32 * BLOCKS_PER_SEG + o
                    )
                });
                self.findings.add(
                    None,
                    Corruption::Unreferenced {
                        segno: segno as u32,
                        marked,
                        referenced,
                        detail,
                    },
                );
            }
        }
    }

    /// The SSA entry of a main-area block, and whether its summary block is of node
    /// blocks: a current log's in-memory summary, or the segment's SSA block.
    fn summary_entry(
        &mut self,
        cache: &mut BTreeMap<u32, (Vec<Summary>, u8)>,
        segno: u32,
        off: u32,
    ) -> Result<(Summary, bool), FsError> {
        if let Some(log) = self.segs.logs.iter().find(|l| l.segno == segno) {
            return Ok((
                log.sum.entries[off as usize],
                log.sum.entry_type == SUM_TYPE_NODE,
            ));
        }
        if !cache.contains_key(&segno) {
            if cache.len() >= SSA_CACHE_MAX {
                cache.clear();
            }
            let at = self.sb.ssa_blkaddr as u64 + segno as u64;
            let block = SummaryBlock::decode(&*self.read_block(at)?);
            cache.insert(segno, (block.entries, block.entry_type));
        }
        let (entries, entry_type) = &cache[&segno];
        Ok((entries[off as usize], *entry_type == SUM_TYPE_NODE))
    }
}

/// A node's place in its inode's tree, as the path to it implies.
#[derive(Clone, Copy, Debug)]
struct Subtree {
    ino: u32,
    nid: u32,
    offset: u32,
    level: u32,
    first: u64,
    parent: u32,
    /// `ADDRS_PER_BLOCK` of the file (aligned to a cluster when compressed).
    per_block: u64,
}

impl Subtree {
    fn misplaced(&self, f: NodeFooter) -> Corruption {
        let (field, value) = if f.ino != self.ino {
            ("footer.ino", f.ino as u64)
        } else {
            ("footer.offset", f.offset() as u64)
        };
        Corruption::Node {
            nid: self.nid,
            blkaddr: 0,
            field,
            value,
            rule: format!(
                "node {} of inode {} names it at tree offset {}",
                self.parent, self.ino, self.offset
            ),
        }
    }
}

/// Blocks counted for `i_blocks`, and a directory's dentry blocks.
struct TreeCount {
    blocks: u64,
    /// `COMPRESS_ADDR` and `NEW_ADDR` slots of compressed clusters (`i_compr_blocks`).
    compr_blocks: Option<u64>,
    dentry_blocks: Vec<(u64, u32)>,
}

fn check_counts(ino: u32, addr: u32, inode: &Inode, tree: &TreeCount) -> Result<(), Corruption> {
    let err = |field, value: u64, rule: String| Corruption::Inode {
        ino,
        blkaddr: addr as u64,
        field,
        value,
        rule,
    };
    if inode.blocks != tree.blocks {
        return Err(err(
            "i_blocks",
            inode.blocks,
            format!(
                "{} blocks found (the inode, its nodes and data)",
                tree.blocks
            ),
        ));
    }
    let recorded = inode.extra().map_or(0, |e| e.compr_blocks);
    if let Some(found) = tree.compr_blocks.filter(|&f| f != recorded) {
        return Err(err(
            "i_compr_blocks",
            recorded,
            format!("{found} COMPRESS_ADDR and NEW_ADDR slots in compressed clusters"),
        ));
    }
    Ok(())
}

/// The dentry file type of an inode mode (`fs_umode_to_ftype`).
fn file_type_of(mode: u16) -> u8 {
    match mode & S_IFMT {
        0o100000 => 1,
        0o040000 => 2,
        0o020000 => 3,
        0o060000 => 4,
        0o010000 => 5,
        0o140000 => 6,
        0o120000 => 7,
        _ => 0,
    }
}

/// What a directory's entries must agree with.
struct DirShape {
    dir: u32,
    parent: u32,
    depth: u32,
    dir_level: u32,
    implicit_dots: bool,
}

impl DirShape {
    /// Checks every entry; returns the inodes named (dots excluded) with their types.
    fn check(&self, entries: &[(Option<u64>, Found)]) -> Result<Vec<(u32, u8)>, Corruption> {
        let mut dots = [0u32; 2];
        let mut out = Vec::new();
        for (block, e) in entries {
            let name = String::from_utf8_lossy(&e.name).into_owned();
            let bad = |rule: String| Corruption::Dentry {
                dir: self.dir,
                slot: e.slot,
                name: name.clone(),
                rule,
            };
            self.check_entry(*block, e).map_err(bad)?;
            let dot = match e.name.as_slice() {
                b"." => Some((0, self.dir)),
                b".." => Some((1, self.parent)),
                _ => None,
            };
            if let Some((which, want)) = dot {
                if e.ino != want {
                    return Err(bad(format!("names inode {}, must name {want}", e.ino)));
                }
                dots[which] += 1;
                continue;
            }
            out.push((e.ino, e.file_type));
        }
        if !self.implicit_dots && dots != [1, 1] {
            let c = Corruption::Dentry {
                dir: self.dir,
                slot: 0,
                name: ".".into(),
                rule: format!(
                    "{} '.' and {} '..' entries, one of each expected",
                    dots[0], dots[1]
                ),
            };
            return Err(c);
        }
        Ok(out)
    }

    fn check_entry(&self, block: Option<u64>, e: &Found) -> Result<(), String> {
        if e.name_len == 0 || e.name_len > NAME_LEN || e.name.len() != e.name_len {
            return Err(format!(
                "name length {} (1..=255, within the slots)",
                e.name_len
            ));
        }
        if e.file_type == 0 || e.file_type >= FT_MAX {
            return Err(format!("file type {}", e.file_type));
        }
        if e.ino == 0 {
            return Err("inode 0".into());
        }
        let hash = dentry_hash(&e.name);
        if e.hash != hash {
            return Err(format!(
                "hash {:#010x} stored, {hash:#010x} computed",
                e.hash
            ));
        }
        let Some(index) = block else {
            return Ok(());
        };
        let Some((level, bucket, buckets)) = block_bucket(index, self.dir_level) else {
            return Err(format!("dentry block {index} is past the last hash level"));
        };
        if level >= self.depth {
            return Err(format!(
                "dentry block {index} is at level {level}, the directory's depth is {}",
                self.depth
            ));
        }
        if e.name != b"." && e.name != b".." && hash as u64 % buckets != bucket {
            return Err(format!(
                "in bucket {bucket} of level {level}, but its hash selects bucket {}",
                hash as u64 % buckets
            ));
        }
        Ok(())
    }
}

/// A queued inode and how it was named.
#[derive(Clone, Copy, Debug)]
struct Job {
    ino: u32,
    parent: u32,
    /// The dentry's file type (0: an orphan or the root's own entry is not checked).
    file_type: u8,
}

/// What the walk knows of an inode.
#[derive(Clone, Debug, Default)]
struct Seen {
    dentries: u32,
    subdirs: u32,
    /// `i_links`, once the inode was read.
    i_links: Option<u32>,
    is_dir: bool,
    /// Listed as an orphan: no link expected.
    orphan: bool,
}

/// Who points at a block.
#[derive(Clone, Copy, Debug)]
enum Owner {
    Node(u32),
    Data {
        nid: u32,
        ofs_in_node: u16,
        index: u64,
    },
}

/// The walk's state.
struct Walk {
    stack: Vec<Job>,
    seen: BTreeMap<u32, Seen>,
    /// NAT entries in use: (node id, address), in node-id order.
    nat_used: Vec<(u32, u32)>,
    /// One bit per node id reached.
    reached: Vec<u8>,
    /// One bit per main-area block referenced.
    referenced: Vec<u8>,
    per_segment: Vec<u16>,
    ssa: BTreeMap<u32, (Vec<Summary>, u8)>,
    nodes: u64,
    inodes: u64,
    /// Data addresses reserved by fallocate (`NEW_ADDR`).
    reserved: u64,
}

impl Walk {
    fn new<D: BlockDevice>(fs: &F2fs<D>) -> Walk {
        let main_blocks = fs.segs.info.len() * BLOCKS_PER_SEG as usize;
        Walk {
            stack: Vec::new(),
            seen: BTreeMap::new(),
            nat_used: Vec::new(),
            reached: vec![0; (fs.max_nid() as usize).div_ceil(8)],
            referenced: vec![0; main_blocks.div_ceil(8)],
            per_segment: vec![0; fs.segs.info.len()],
            ssa: BTreeMap::new(),
            nodes: 0,
            inodes: 0,
            reserved: 0,
        }
    }

    /// A read-write mount stops at the first finding.
    fn stop<D: BlockDevice>(&self, fs: &F2fs<D>) -> bool {
        !fs.read_only && !fs.findings.list.is_empty()
    }

    fn push(&mut self, ino: u32, parent: u32, file_type: u8) {
        self.seen.entry(ino).or_default();
        self.stack.push(Job {
            ino,
            parent,
            file_type,
        });
    }

    /// A dentry of `dir` names `ino`.
    fn named<D: BlockDevice>(
        &mut self,
        fs: &mut F2fs<D>,
        dir: u32,
        ino: u32,
        file_type: u8,
    ) -> Result<(), FsError> {
        if file_type == FT_DIR {
            self.seen.entry(dir).or_default().subdirs += 1;
        }
        let first = !self.seen.contains_key(&ino);
        let seen = self.seen.entry(ino).or_default();
        seen.dentries += 1;
        if first {
            self.push(ino, dir, file_type);
            return Ok(());
        }
        if file_type == FT_DIR || seen.is_dir {
            let c = Corruption::Dentry {
                dir,
                slot: 0,
                name: format!("inode {ino}"),
                rule: "a directory named twice".into(),
            };
            return self.finding(fs, Some(ino), c.into());
        }
        Ok(())
    }

    fn reach(&mut self, nid: u32) {
        if (nid as usize) < self.reached.len() * 8 {
            set_bit_msb(&mut self.reached, nid as usize);
        }
        self.nodes += 1;
    }

    fn reached_nid(&self, nid: u32) -> bool {
        test_bit_msb(&self.reached, nid as usize)
    }

    /// A block referenced by `owner` (of inode `ino`): once only, and its SSA entry names
    /// that owner. (Its range, SIT bit and segment class were checked as it was read.)
    fn mark<D: BlockDevice>(
        &mut self,
        fs: &mut F2fs<D>,
        owner: Owner,
        ino: u32,
        addr: u32,
    ) -> Result<(), FsError> {
        let Some((segno, off)) = fs.segs.segno_of(addr) else {
            return Ok(());
        };
        let bit = (segno * BLOCKS_PER_SEG + off) as usize;
        let ssa_err = |rule: String| Corruption::Ssa {
            segno,
            blkaddr: addr as u64,
            rule,
        };
        if test_bit_msb(&self.referenced, bit) {
            return Err(ssa_err(format!(
                "referenced twice, again by {owner:?} of inode {ino}"
            ))
            .into());
        }
        set_bit_msb(&mut self.referenced, bit);
        self.per_segment[segno as usize] += 1;
        let (sum, node_summary) = fs.summary_entry(&mut self.ssa, segno, off)?;
        let is_node = matches!(owner, Owner::Node(_));
        if node_summary != is_node {
            let kind = if node_summary { "node" } else { "data" };
            return Err(ssa_err(format!("the segment's summary block is of {kind} blocks")).into());
        }
        match owner {
            Owner::Node(nid) if sum.nid != nid => Err(ssa_err(format!(
                "names node {}, but node {nid} is stored there",
                sum.nid
            ))
            .into()),
            Owner::Data {
                nid,
                ofs_in_node,
                index,
            } => {
                // fsck.f2fs also compares the version with the owner node's NAT entry.
                let version = fs.nat_get(nid)?.version;
                if sum.nid == nid && sum.ofs_in_node == ofs_in_node && sum.version == version {
                    return Ok(());
                }
                Err(ssa_err(format!(
                    "names node {} offset {} version {}, but file block {index} of inode {ino} \
                     (node {nid} offset {ofs_in_node} version {version}) points here",
                    sum.nid, sum.ofs_in_node, sum.version
                ))
                .into())
            }
            _ => Ok(()),
        }
    }

    /// Records what an inode's walk ran into; device errors end the walk.
    fn finding<D: BlockDevice>(
        &mut self,
        fs: &mut F2fs<D>,
        ino: Option<u32>,
        e: FsError,
    ) -> Result<(), FsError> {
        let c = match e {
            FsError::Device(F2fsError::Corrupt(c)) => c,
            other => return Err(other),
        };
        fs.findings.add(ino, c.clone());
        if let Some(ino) = ino {
            fs.quarantine.entry(ino).or_insert(c);
        }
        Ok(())
    }
}
