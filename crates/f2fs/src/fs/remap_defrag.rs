//! janusdL, Janusd's logical defragmenter: a file's data blocks get a contiguous run of
//! new addresses from the allocator, the device is asked to REMAP the old addresses onto
//! the new ones (its mapping table changes; no data is read or written by the host or
//! programmed by the device), the node pointers and the segment accounting follow, and a
//! checkpoint makes it the file system's state. The old addresses are then discarded.
//!
//! Step by step ([`F2fs::defrag_by_remap`]):
//! 1. Plan: every valid data block of the file in page order, each given the next block of
//!    the cold data log (as GC-moved data is), so consecutive pages get consecutive
//!    addresses while the log stays in one segment. The log switches segment as GC's does
//!    (a new free segment, or SSR when free space is low: then the new run has holes, as
//!    the kernel's defragment ioctl would have too).
//! 2. Remap: the runs of pages whose old and new addresses are both consecutive, packed
//!    into as few device REMAP requests as fit (`remap_lbas_max` LBAs each, every request
//!    atomic). REMAP leaves the old addresses mapped on the device (shared), so the last
//!    checkpoint's pointers still read the right data.
//! 3. Point: node pointers to the new addresses (nodes dirtied), old blocks invalidated in
//!    the SIT (the new ones were validated by the allocation, with the pages' age kept).
//! 4. Checkpoint: the new pointers become the durable state.
//! 5. Discard the old addresses (nothing durable points at them any more): the device
//!    drops their references, and the slots stay live through the new addresses.
//!
//! Crash safety: a power cut before step 4 completes leaves the previous checkpoint, whose
//! pointers name the old addresses, still mapped to the same data (REMAP shares, never
//! moves); the new addresses are free in that checkpoint. After step 4 the new pointers
//! are durable and the remaps are durable (each REMAP is durable when it returns). A cut
//! in step 5 leaves some old addresses mapped but free in the SIT: space the device holds
//! until F2FS reuses or discards them, never data.

use flashstack_block::{BlockDevice, BlockError, RemapExtent};

use super::data::Dnode;
use super::{word, F2fs, FsError};
use crate::consts::*;
use crate::layout::CURSEG_COLD_DATA;
use crate::summary::Summary;

/// What one janusdL pass over a file did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct RemapDefragReport {
    /// Data blocks given new addresses by REMAP (no data copied).
    pub blocks_remapped: u64,
    /// REMAP requests issued (each atomic, up to the device's `remap_lbas_max` LBAs).
    pub remap_requests: u64,
    /// Runs of consecutive old and new addresses they carried.
    pub remap_extents: u64,
    /// Extents (runs of consecutive addresses) of the file before and after.
    pub extents_before: u64,
    pub extents_after: u64,
}

/// One page of the plan: where its address word is, its old and new address.
#[derive(Clone, Copy, Debug)]
struct Move {
    nid: u32,
    word: usize,
    old: u32,
    new: u32,
}

impl<D: BlockDevice> F2fs<D> {
    /// janusdL on file `ino` (see the module doc): its data blocks get contiguous new
    /// addresses by device REMAP, no data copied; ends with a checkpoint. The file's
    /// pages must be on the device (the page cache above flushed them: this layer holds
    /// no dirty data pages). Errors: the device has no REMAP ([`FsError::Unsupported`]),
    /// not a regular file ([`FsError::Invalid`]), read-only mount, no space for the new
    /// run ([`FsError::NoSpace`]), device errors. A file already in one extent, empty or
    /// inline is left alone (a report of zero blocks).
    pub fn defrag_by_remap(&mut self, ino: u32) -> Result<RemapDefragReport, FsError> {
        self.writable("defragment")?;
        let max = match self.dev.as_remap() {
            Some(remap) => remap.remap_lbas_max(),
            None => {
                return Err(FsError::Unsupported(
                    "logical defragmentation needs a device with REMAP".into(),
                ))
            }
        };
        if self.stat_ino(ino)?.kind != super::FileKind::File {
            return Err(FsError::Invalid(format!(
                "inode {ino} is not a regular file"
            )));
        }
        // Cleaning first: it may move this file's blocks, so the plan comes after it.
        self.ensure_space()?;
        let before = self.file_block_addrs(ino)?;
        let mut report = RemapDefragReport {
            extents_before: extents(&before),
            ..RemapDefragReport::default()
        };
        if report.extents_before <= 1 {
            report.extents_after = report.extents_before;
            return Ok(report);
        }
        let moves = self.plan_moves(ino, &before)?;
        (report.remap_requests, report.remap_extents) = self.issue_remaps(&moves, max)?;
        self.point_at(ino, &moves)?;
        self.checkpoint(false)?;
        self.discard_old(&moves, max)?;
        report.blocks_remapped = moves.len() as u64;
        report.extents_after = extents(&self.file_block_addrs(ino)?);
        Ok(report)
    }

    /// Step 1: a new address for every valid data block, in page order.
    fn plan_moves(&mut self, ino: u32, addrs: &[u32]) -> Result<Vec<Move>, FsError> {
        let free_blocks = self.segs.free_segments() as u64 * BLOCKS_PER_SEG as u64;
        let valid = addrs.iter().filter(|&&a| self.segs.is_valid(a)).count() as u64;
        if valid + BLOCKS_PER_SEG as u64 > free_blocks {
            return Err(FsError::NoSpace);
        }
        let mut moves = Vec::with_capacity(valid as usize);
        for (index, &old) in addrs.iter().enumerate() {
            if !self.segs.is_valid(old) {
                continue; // A hole, a reservation, or data outside the main area.
            }
            let d = self
                .dnode(ino, index as u64, false)?
                .ok_or_else(|| super::corrupt(format!("inode {ino} page {index}: no node")))?;
            if word(self.node(d.nid)?, d.word) != old {
                return Err(super::corrupt(format!(
                    "inode {ino} page {index}: node {} does not point at block {old}",
                    d.nid
                )));
            }
            let sum = Summary {
                nid: d.nid,
                version: 0,
                ofs_in_node: d.ofs_in_node,
            };
            let written_secs = self
                .segs
                .segno_of(old)
                .map_or(0, |(s, _)| self.segs.info[s as usize].mtime);
            let new = self.alloc_block_aged(CURSEG_COLD_DATA, sum, written_secs)?;
            self.metrics.per_log_blocks[CURSEG_COLD_DATA] += 1;
            moves.push(Move {
                nid: d.nid,
                word: d.word,
                old,
                new,
            });
        }
        Ok(moves)
    }

    /// Step 2: the runs of consecutive old and new addresses, as few REMAP requests as
    /// fit (`max` LBAs each; each request atomic on its own).
    fn issue_remaps(&mut self, moves: &[Move], max: u32) -> Result<(u64, u64), FsError> {
        let runs = runs(moves, max, |m| (m.old, m.new));
        let (mut requests, mut batch, mut lbas) = (0, Vec::new(), 0);
        for (k, &(old, new, count)) in runs.iter().enumerate() {
            batch.push(RemapExtent {
                src: old as u64,
                dst: new as u64,
                count,
            });
            lbas += count;
            let full = runs.get(k + 1).is_none_or(|next| lbas + next.2 > max);
            if full {
                let remap = self.dev.as_remap().expect("checked before planning");
                let done = remap
                    .remap_extents(self.now_ns, &batch)
                    .map_err(crate::F2fsError::from)?;
                self.now_ns = done.complete_ns;
                requests += 1;
                batch.clear();
                lbas = 0;
            }
        }
        Ok((requests, runs.len() as u64))
    }

    /// Step 3: node pointers and the SIT follow, through the data path's one address
    /// setter (`pagemap::set_addr`: the old block invalidated, the node dirtied).
    fn point_at(&mut self, ino: u32, moves: &[Move]) -> Result<(), FsError> {
        for m in moves {
            let d = Dnode {
                nid: m.nid,
                word: m.word,
                ofs_in_node: 0,
            };
            self.set_addr(ino, d, m.new)?;
            self.forget_base(m.new);
        }
        Ok(())
    }

    /// Step 5: the old addresses are free in the durable state: discard them.
    fn discard_old(&mut self, moves: &[Move], max: u32) -> Result<(), FsError> {
        let mut old: Vec<(u32, u32)> = moves.iter().map(|m| (m.old, m.old)).collect();
        old.sort_unstable();
        for (start, _, count) in runs_of(&old, max) {
            if self.segs.is_valid(start) {
                continue; // Reused meanwhile (cannot happen in one pass; kept safe).
            }
            let done = self
                .dev
                .trim(self.now_ns, start as u64, count)
                .map_err(|e: BlockError| crate::F2fsError::from(e))?;
            self.now_ns = done.complete_ns;
            self.metrics.discarded_blocks += count as u64;
        }
        Ok(())
    }
}

/// Runs of moves whose two addresses both step by one, at most `max` long.
fn runs(moves: &[Move], max: u32, key: impl Fn(&Move) -> (u32, u32)) -> Vec<(u32, u32, u32)> {
    let pairs: Vec<(u32, u32)> = moves.iter().map(key).collect();
    runs_of(&pairs, max)
}

fn runs_of(pairs: &[(u32, u32)], max: u32) -> Vec<(u32, u32, u32)> {
    let mut out: Vec<(u32, u32, u32)> = Vec::new();
    for &(a, b) in pairs {
        match out.last_mut() {
            Some((a0, b0, n)) if *n < max && *a0 + *n == a && *b0 + *n == b => {
                *n += 1;
            }
            _ => out.push((a, b, 1)),
        }
    }
    out
}

/// Runs of consecutive valid addresses (holes and reservations end a run).
fn extents(addrs: &[u32]) -> u64 {
    let mut count = 0;
    let mut previous: Option<u32> = None;
    for &a in addrs {
        let valid = a != NULL_ADDR && a != NEW_ADDR;
        if valid && previous.is_none_or(|p| p + 1 != a) {
            count += 1;
        }
        previous = valid.then_some(a);
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_need_both_addresses_consecutive() {
        let pairs = [
            (10, 100),
            (11, 101),
            (12, 102),
            (20, 103),
            (21, 104),
            (22, 200),
        ];
        assert_eq!(
            runs_of(&pairs, 8),
            vec![(10, 100, 3), (20, 103, 2), (22, 200, 1)]
        );
        assert_eq!(runs_of(&pairs[..3], 2), vec![(10, 100, 2), (12, 102, 1)]);
    }

    #[test]
    fn extents_count_runs_and_skip_holes() {
        assert_eq!(extents(&[5, 6, 7, 0, 9, 10, 20]), 3);
        assert_eq!(extents(&[]), 0);
        assert_eq!(extents(&[0, 0]), 0);
    }
}
