//! The durable log of mapping records: statements about the mapping that the spare areas
//! of data pages cannot make. Two kinds exist:
//!
//! - **trim** `lpn`: from this record's sequence number on, `lpn` is unmapped;
//! - **bind** `lpn → slot`: from this record's sequence number on, `lpn` refers to the data
//!   in `slot`, whose OOB names another logical page (a REMAP, or GC re-pointing the other
//!   referrers of a shared slot it moved).
//!
//! Records are written into record pages (OOB flag `TRIM_RECORD`, no data slots) of the
//! metadata stream; their payload is page content: it survives power loss and goes when
//! the page's block is erased. Recovery orders every statement about a logical page (data
//! copies by their page's sequence number, records by their record page's) and keeps the
//! newest (`recovery.rs`). Before a record page's block is erased, the records it holds
//! that are still the only durable statement of the current mapping are written again
//! (`requeue_records` in `gc.rs`): trims that still hide an older copy, binds that still
//! hold.

use flashstack_nand::{oob_flags, FlashMedium, NandError, PageOob, NO_LPN};
use flashstack_sim::Nanos;

use crate::stream::PROGRAM_ATTEMPTS_MAX;
use crate::{Ftl, FtlError, UNMAPPED};

/// Bytes a trim entry takes in a record page (a logical page number).
const TRIM_ENTRY_BYTES: usize = 4;
/// Bytes a bind entry takes (a logical page and a slot number).
const BIND_ENTRY_BYTES: usize = 8;

/// The payload of one record page.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct RecordPage {
    /// Logical pages unmapped by this record.
    pub(crate) trims: Box<[u32]>,
    /// (logical page, slot) bindings made by this record.
    pub(crate) binds: Box<[(u32, u32)]>,
}

/// What a record page was written for (which counter it goes to).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RecordKind {
    Trim,
    Remap,
}

impl Ftl {
    pub(crate) fn trim_entries_per_page(&self) -> usize {
        self.config.nand.geometry.page_size_bytes as usize / TRIM_ENTRY_BYTES
    }

    /// Bind entries (and so LBAs of one remap) one record page holds.
    pub(crate) fn bind_entries_per_page(&self) -> usize {
        self.config.nand.geometry.page_size_bytes as usize / BIND_ENTRY_BYTES
    }

    /// Writes pending trims as record pages. Entries whose logical page was written
    /// again meanwhile are dropped: the newer data must win.
    pub(crate) fn write_trim_records(&mut self, now_ns: Nanos) -> Result<Nanos, FtlError> {
        let mut entries = std::mem::take(&mut self.pending_trims);
        entries.retain(|&lpn| self.mapping.l2p.at(lpn as usize) == UNMAPPED);
        entries.sort_unstable();
        entries.dedup();
        let mut done_ns = now_ns;
        for chunk in entries.chunks(self.trim_entries_per_page()) {
            let page = RecordPage {
                trims: chunk.into(),
                binds: Box::default(),
            };
            done_ns = done_ns.max(self.program_record_page(page, RecordKind::Trim, now_ns)?);
        }
        Ok(done_ns)
    }

    /// Writes pending binds (GC re-pointed the aliases of a slot it moved, or a record page
    /// about to be erased held them) with each logical page's current slot. Called after
    /// the write buffers are programmed, so every slot named is on flash. Pages unmapped
    /// since are dropped: their trim is pending or logged.
    pub(crate) fn write_bind_records(&mut self, now_ns: Nanos) -> Result<Nanos, FtlError> {
        let mut lpns = std::mem::take(&mut self.pending_binds);
        lpns.sort_unstable();
        lpns.dedup();
        let entries: Vec<(u32, u32)> = lpns
            .into_iter()
            .map(|lpn| (lpn, self.mapping.l2p.at(lpn as usize)))
            .filter(|&(_, slot)| slot != UNMAPPED)
            .collect();
        let mut done_ns = now_ns;
        for chunk in entries.chunks(self.bind_entries_per_page()) {
            let page = RecordPage {
                trims: Box::default(),
                binds: chunk.into(),
            };
            done_ns = done_ns.max(self.program_record_page(page, RecordKind::Remap, now_ns)?);
        }
        Ok(done_ns)
    }

    /// Record pages go to an open metadata block with room, else to the unit with the most
    /// free blocks, so logging never takes the last free block of a busy unit.
    fn meta_unit(&self) -> u32 {
        let meta = &self.streams[self.meta_stream()];
        let open = (0..self.units).find(
            |&u| matches!(meta.active[u as usize], Some(f) if f.next_page < self.pages_per_block),
        );
        open.unwrap_or_else(|| {
            (0..self.units)
                .max_by_key(|&u| (self.blocks.free_count(u), std::cmp::Reverse(u)))
                .expect("at least one unit")
        })
    }

    /// Programs one record page (no GC: the metadata stream allocates without it, so the
    /// mapping a caller read before this call still holds after it). Returns when the
    /// record is durable.
    pub(crate) fn program_record_page(
        &mut self,
        records: RecordPage,
        kind: RecordKind,
        now_ns: Nanos,
    ) -> Result<Nanos, FtlError> {
        let bytes = records.trims.len() * TRIM_ENTRY_BYTES + records.binds.len() * BIND_ENTRY_BYTES;
        assert!(bytes <= self.config.nand.geometry.page_size_bytes as usize);
        let stream = self.meta_stream();
        let lpns = [NO_LPN; flashstack_nand::MAX_SLOTS_PER_PAGE as usize];
        for _ in 0..PROGRAM_ATTEMPTS_MAX {
            let unit = self.meta_unit();
            self.streams[stream].pinned_die = Some(unit);
            let page = self.allocate_page(stream, false, now_ns)?;
            let oob = PageOob {
                lpns: &lpns[..self.slots_per_page as usize],
                seq: self.seq,
                flags: oob_flags::TRIM_RECORD,
            };
            self.seq += 1;
            self.counters.page_programs += 1;
            self.counters.program_slots_meta += self.slots_per_page as u64;
            match self.nand.program(page, oob, None, now_ns) {
                Ok(timing) => {
                    match kind {
                        RecordKind::Trim => self.counters.trim_record_pages += 1,
                        RecordKind::Remap => self.counters.remap_record_pages += 1,
                    }
                    if let Some(copies) = self.copies.as_mut() {
                        for &(lpn, _) in records.binds.iter() {
                            copies[lpn as usize] += 1;
                        }
                    }
                    self.records.insert(page, records);
                    self.note_programmed(page, timing.end_ns);
                    return Ok(timing.end_ns);
                }
                Err(NandError::ProgramFailed { block }) => {
                    self.counters.program_failures += 1;
                    self.retire_frontier(stream, block);
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(FtlError::NoSpace("repeated program failures".into()))
    }

    /// Records of a page about to be erased that are still the only durable statement
    /// of the current mapping go back to the pending lists; they are logged again before
    /// the erase.
    pub(crate) fn requeue_records(&mut self, page: u32) {
        let Some(records) = self.records.get(&page) else {
            return;
        };
        for &lpn in records.trims.iter() {
            let older_copies = self.copies.as_ref().map_or(1, |c| c[lpn as usize]);
            if self.mapping.l2p.at(lpn as usize) == UNMAPPED && older_copies > 0 {
                self.pending_trims.push(lpn);
            }
        }
        for &(lpn, slot) in records.binds.iter() {
            if self.mapping.l2p.at(lpn as usize) == slot {
                self.pending_binds.push(lpn);
            }
        }
    }

    /// Drops the record page `page` (its block is being erased), and the copies its
    /// binds counted.
    pub(crate) fn forget_record_page(&mut self, page: u32) {
        let Some(records) = self.records.remove(&page) else {
            return;
        };
        if let Some(copies) = self.copies.as_mut() {
            for &(lpn, _) in records.binds.iter() {
                copies[lpn as usize] -= 1;
            }
        }
    }
}
