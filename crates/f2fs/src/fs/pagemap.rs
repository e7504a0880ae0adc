//! The addressing and codec layer of file data (`../shared/seams.md` §1): the one place
//! that says what is stored for a page of a file and the one place that changes a page's
//! address word. Every data path comes here:
//!
//! | caller | entry | what it does |
//! |---|---|---|
//! | read (`read_at`, directories, merges) | [`F2fs::load_page`] | [`resolve`](F2fs::resolve), then decode what is stored |
//! | write (writeback, directories, atomic commits) | [`F2fs::store_page`], [`F2fs::store_page_out_of_place`] | encode: a delta, in place, or a new block |
//! | cleaning (`gc.rs`, `move_data`) | [`F2fs::relocate_block`] | the block's owner slot from its summary, the block moved |
//! | roll-forward (`fsync.rs`) | [`F2fs::replay_addr`] | a slot pointed at a block the fsync'd node names |
//! | truncation, fallocate, directory holes | [`F2fs::drop_addr`], [`F2fs::set_addr`] | a slot cleared or reserved |
//!
//! Steps of a page's life on the layer:
//!
//! 1. **Encoding of the inode** ([`F2fs::encoding`]): plain pages (each page its own
//!    block), F2FS compression's clusters (`F2FS_COMPR_FL` on a regular file: reads and
//!    writes go to `cluster.rs`, which stages a cluster's pages and writes it as a unit),
//!    or an encoding this writer cannot keep (encryption): reads, writes and truncation
//!    of such an inode are refused with `Unsupported` naming the inode before anything
//!    changes.
//! 2. **Resolution** ([`F2fs::resolve`]): (inode, page index) → [`Stored`]: inline bytes,
//!    a hole, a reservation (`NEW_ADDR`), a block, or a block plus a MedFS delta in the
//!    inode (`delta/`). A compressed cluster's `COMPRESS_ADDR` resolves to
//!    [`Stored::Compressed`]; in a file without the flag that is corrupt (refused).
//! 3. **Decode** (read): zeros for a hole or reservation; the block read (and checked
//!    against the main area); the delta applied on top.
//! 4. **Encode** (write): MedFS first (a delta in the inode, no block); else in place when
//!    the policy allows; else a new block of the log, the old one released.
//! 5. **Address words** ([`F2fs::set_addr`]): every change of a slot passes here and keeps
//!    the counts the checkpoint writes consistent: `i_blocks` (+1 when a hole gets a block
//!    or a reservation, −1 when a slot is cleared), the SIT (the old block invalidated),
//!    and reservations (`NEW_ADDR` counted as used until written or released).
//!
//! Contract (what every caller may rely on, and every new encoding must keep):
//!
//! - **Ordering**: a slot is pointed at a block only after the block's bytes were handed
//!   to the device (`store_page_out_of_place`, `relocate_block` write, then `set_addr`);
//!   roll-forward points slots only at blocks the fsync'd chain names. A durable node
//!   therefore never names a block that was not written before it.
//! - **Durability**: `set_addr` changes only the in-memory node (marked dirty); the change
//!   is durable with the next checkpoint, or with the fsync that writes that node. The
//!   old block is invalidated at once but reused only after the next checkpoint (SSR
//!   skips blocks of the checkpoint's valid map, an emptied segment turns pre-free), so
//!   the last durable state's blocks survive until then.
//! - **Refusal before change**: an encoding this writer cannot keep fails its operation
//!   before any slot, node or count changes.
//! - **Time**: decode charges the device read of what is stored plus the codec's host
//!   CPU time (a delta's `apply_ns`; `flashstack_codec::cost` for page codecs); encode
//!   charges the device write and the codec's time. Resolution itself charges nothing
//!   beyond the node reads the address lookup needs.
//!
//! A new page encoding (F2FS compression next) is a variant of [`Stored`] and one module
//! called from here, not an edit in each of the five callers.

use flashstack_block::BlockDevice;

use super::data::{Dnode, Writeback, ADDR_WORD};
use super::{corrupt, put_word, word, BlockKind, F2fs, FsError};
use crate::codec::{le32_at, zero_block, Block};
use crate::consts::*;
use crate::node::NodeFooter;
use crate::summary::Summary;

/// `F2FS_COMPR_FL` of `i_flags`: a file of compressed clusters.
pub(crate) const COMPR_FL: u32 = 0x0000_0004;
/// `FADVISE_ENCRYPT_BIT` of `i_advise`: a file whose blocks hold ciphertext.
pub(crate) const FADVISE_ENCRYPT: u8 = 0x04;
/// Byte offsets of `i_advise` and `i_flags` in an inode block.
const OFF_ADVISE: usize = 2;
const OFF_FLAGS: usize = 80;

/// How an inode's pages are encoded on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Encoding {
    /// Each page its own block (a MedFS delta may sit on top of it: [`Stored::Delta`]).
    Plain,
    /// `F2FS_COMPR_FL` on a regular file: clusters of compressed pages (`cluster.rs`).
    Compressed,
    /// `FADVISE_ENCRYPT_BIT`: blocks hold ciphertext (not built).
    Encrypted,
}

impl Encoding {
    /// The refusal of an encoding this writer does not handle yet.
    fn refusal(self, ino: u32) -> Option<FsError> {
        let what = match self {
            Encoding::Plain | Encoding::Compressed => return None,
            Encoding::Encrypted => "encrypted (F2FS encryption is not supported)",
        };
        Some(FsError::Unsupported(format!("inode {ino} is {what}")))
    }
}

/// What is stored for one page of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stored {
    /// No block: the page reads as zeros.
    Hole,
    /// Reserved by fallocate (`NEW_ADDR`), never written: zeros.
    Reserved,
    /// Page 0 of an inline-data inode: the bytes are in the inode.
    Inline,
    /// A plain block at this address.
    Block(u32),
    /// A base block plus the page's MedFS delta in the inode's zone (`delta/`).
    Delta(u32),
    /// A slot holding `COMPRESS_ADDR` (a compressed cluster's first page).
    Compressed,
}

impl<D: BlockDevice> F2fs<D> {
    /// The inode's page encoding, from `i_flags` and `i_advise`.
    pub(crate) fn encoding(&mut self, ino: u32) -> Result<Encoding, FsError> {
        let node = self.inode_node(ino)?;
        let regular = u16::from_le_bytes([node[0], node[1]]) & S_IFMT == S_IFREG;
        // A directory's flag is only inherited by what is created in it.
        if le32_at(&node[..], OFF_FLAGS) & COMPR_FL != 0 && regular {
            return Ok(Encoding::Compressed);
        }
        if node[OFF_ADVISE] & FADVISE_ENCRYPT != 0 {
            return Ok(Encoding::Encrypted);
        }
        Ok(Encoding::Plain)
    }

    /// Refuses (before anything changes) an inode whose pages this writer cannot encode
    /// or decode.
    pub(crate) fn check_encoding(&mut self, ino: u32) -> Result<(), FsError> {
        match self.encoding(ino)?.refusal(ino) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Refuses (before anything changes) an inode whose address slots this writer
    /// cannot change one by one: a compressed file's clusters (encrypted blocks are
    /// plain addresses, so truncating or deleting such a file is fine).
    pub(crate) fn check_addressing(&mut self, ino: u32) -> Result<(), FsError> {
        match self.encoding(ino)? {
            Encoding::Compressed => Err(FsError::Unsupported(format!(
                "inode {ino} is compressed: fallocate of its clusters is not built"
            ))),
            _ => Ok(()),
        }
    }

    /// What is stored for page `index` of `ino`.
    pub(crate) fn resolve(&mut self, ino: u32, index: u64) -> Result<Stored, FsError> {
        if self.has_inline(ino, F2FS_INLINE_DATA)? {
            return Ok(match index {
                0 => Stored::Inline,
                _ => Stored::Hole,
            });
        }
        Ok(match self.block_addr(ino, index)? {
            NULL_ADDR => Stored::Hole,
            NEW_ADDR => Stored::Reserved,
            COMPRESS_ADDR => Stored::Compressed,
            addr if self.has_delta(ino, index)? => Stored::Delta(addr),
            addr => Stored::Block(addr),
        })
    }

    /// Reads page `index` of a file (zeros for a hole).
    pub(crate) fn load_page(&mut self, ino: u32, index: u64) -> Result<Box<Block>, FsError> {
        if self.encoding(ino)? == Encoding::Compressed {
            if let Some(page) = self.load_cluster_page(ino, index)? {
                return Ok(page);
            }
        }
        let stored = self.resolve(ino, index)?;
        if stored != Stored::Inline {
            // Even a hole: in a compressed cluster a `NEW_ADDR` slot is not zeros.
            self.check_encoding(ino)?;
        }
        let (addr, delta) = match stored {
            Stored::Hole | Stored::Reserved => return Ok(zero_block()),
            Stored::Inline => return self.inline_page(ino),
            Stored::Block(addr) => (addr, false),
            Stored::Delta(addr) => (addr, true),
            Stored::Compressed => {
                return Err(corrupt(format!(
                    "inode {ino} page {index}: COMPRESS_ADDR in a file without F2FS_COMPR_FL"
                )))
            }
        };
        self.check_data_addr(ino, index, addr)?;
        let mut page = self.read_block(addr as u64)?;
        self.note_block_read(addr, &page);
        if delta {
            self.apply_delta(ino, index, &mut page)?;
        }
        Ok(page)
    }

    /// The inline bytes of an inline-data inode as a page.
    fn inline_page(&mut self, ino: u32) -> Result<Box<Block>, FsError> {
        let mut page = zero_block();
        let geo = self.geometry(ino)?;
        let start = geo.inline_start();
        let src = self.node(ino)?;
        page[..geo.inline_bytes].copy_from_slice(&src[start..start + geo.inline_bytes]);
        Ok(page)
    }

    /// Writes page `index` of a file: as a MedFS delta when that is on and admits it; in
    /// place over its existing block when the policy allows (the address, the node and
    /// the SIT stay as they are); else out of place to the plan's log.
    pub(crate) fn store_page(
        &mut self,
        ino: u32,
        index: u64,
        page: &Block,
        wb: Writeback,
    ) -> Result<u32, FsError> {
        if self.cfg.fpc.enabled {
            self.fpc_first_write(ino, index, &page[..])?;
        }
        self.dcm_note_page_write(ino, index);
        if self.encoding(ino)? == Encoding::Compressed {
            self.stage_cluster_page(ino, index, page)?;
            return Ok(NEW_ADDR);
        }
        self.check_encoding(ino)?;
        if self.cfg.delta.enabled() && self.try_store_delta(ino, index, page)? {
            return self.block_addr(ino, index);
        }
        if let Some(addr) = self.try_in_place(ino, index, page, wb)? {
            return Ok(addr);
        }
        self.store_page_out_of_place(ino, index, page, wb.log)
    }

    /// Writes page `index` to a new block of `log`, whatever the in-place policy says
    /// (atomic writes never overwrite a block the last durable state points to).
    pub(crate) fn store_page_out_of_place(
        &mut self,
        ino: u32,
        index: u64,
        page: &Block,
        log: usize,
    ) -> Result<u32, FsError> {
        self.store_page_out_of_place_as(ino, index, page, log, false)
    }

    /// [`F2fs::store_page_out_of_place`]; `pseudo`: the page is a DCM pseudo file's
    /// (`dcm_flush`), which never has a delta to drop nor is one's base.
    pub(crate) fn store_page_out_of_place_as(
        &mut self,
        ino: u32,
        index: u64,
        page: &Block,
        log: usize,
        pseudo: bool,
    ) -> Result<u32, FsError> {
        self.ensure_space()?;
        // The new block is the page's base: a delta against the old one no longer holds.
        if !pseudo {
            self.drop_delta(ino, index)?;
        }
        let d = self
            .dnode(ino, index, true)?
            .ok_or_else(|| corrupt("node path vanished"))?;
        self.check_raw_cluster(ino, index)?;
        let sum = Summary {
            nid: d.nid,
            version: 0,
            ofs_in_node: d.ofs_in_node,
        };
        let addr = self.alloc_block(log, sum)?;
        let temp = Some(super::log_temperature(log));
        let marked = self.facs_on_device(ino);
        self.delta_state.writing_pseudo = pseudo;
        let written =
            self.write_blocks_marked(addr as u64, &page[..], temp, BlockKind::Data, marked);
        self.delta_state.writing_pseudo = false;
        written?;
        self.metrics.per_log_blocks[log] += 1;
        // A written block is invalidated; a reservation is used up (still counted).
        self.set_addr(ino, d, addr)?;
        Ok(addr)
    }

    /// The in-place update (`f2fs_inplace_write_data`), if the page has a valid block
    /// and the policy says so; returns the address written.
    fn try_in_place(
        &mut self,
        ino: u32,
        index: u64,
        page: &Block,
        wb: Writeback,
    ) -> Result<Option<u32>, FsError> {
        let Some(d) = self.dnode(ino, index, false)? else {
            return Ok(None);
        };
        let old = self.slot_addr(d)?;
        if !self.segs.is_valid(old) || !self.in_place_ok(ino, wb.need_ipu)? {
            return Ok(None);
        }
        self.drop_delta(ino, index)?;
        let temp = Some(super::log_temperature(wb.log));
        let marked = self.facs_on_device(ino);
        self.write_blocks_marked(old as u64, &page[..], temp, BlockKind::DataInPlace, marked)?;
        Ok(Some(old))
    }

    /// The address in a slot.
    pub(crate) fn slot_addr(&mut self, d: Dnode) -> Result<u32, FsError> {
        Ok(word(self.node(d.nid)?, d.word))
    }

    /// Points slot `d` of `ino` at `new` and keeps the counts consistent: a hole that
    /// gets a block or a reservation adds to `i_blocks`, a cleared slot takes one away;
    /// the old block is invalidated (a reservation released); `NEW_ADDR` counts as a
    /// reservation, and so does a compressed cluster's `COMPRESS_ADDR` (both count in
    /// `valid_block_count`, as `fsck.f2fs` counts them). Returns the old address.
    pub(crate) fn set_addr(&mut self, ino: u32, d: Dnode, new: u32) -> Result<u32, FsError> {
        let old = self.slot_addr(d)?;
        if old == new {
            return Ok(old);
        }
        if (old == COMPRESS_ADDR || new == COMPRESS_ADDR)
            && self.encoding(ino)? != Encoding::Compressed
        {
            // A stray `COMPRESS_ADDR` is never dropped (nor written) silently.
            return Err(FsError::Unsupported(format!(
                "inode {ino} is not compressed but a slot holds or would hold COMPRESS_ADDR"
            )));
        }
        put_word(self.node(d.nid)?, d.word, new);
        self.dirty_nodes.insert(d.nid);
        if new == NEW_ADDR || new == COMPRESS_ADDR {
            self.reserved_blocks += 1;
        }
        if old != NULL_ADDR {
            self.release_addr(old);
        }
        match (old == NULL_ADDR, new == NULL_ADDR) {
            (true, false) => self.add_blocks(ino, 1)?,
            (false, true) => self.add_blocks(ino, -1)?,
            _ => {}
        }
        Ok(old)
    }

    /// Clears one address word of node `nid` (word index `at`), invalidating the block.
    pub(crate) fn drop_addr(&mut self, ino: u32, nid: u32, at: usize) -> Result<(), FsError> {
        let d = Dnode {
            nid,
            word: at,
            ofs_in_node: 0,
        };
        self.set_addr(ino, d, NULL_ADDR).map(drop)
    }

    /// Cleaning: moves the valid data block `blkaddr`, owned per its summary `sum`, to a
    /// new block of `log` (aged as the segment it leaves) and points its owner's slot at
    /// it. A page's MedFS delta is keyed by page, so it stays with its moved base; a
    /// block of a kernel-written compressed cluster moves as bytes (each of its blocks has
    /// its own slot, the cluster's `COMPRESS_ADDR` slot none).
    pub(crate) fn relocate_block(
        &mut self,
        sum: Summary,
        blkaddr: u32,
        log: usize,
    ) -> Result<u32, FsError> {
        let footer = NodeFooter::decode(self.node(sum.nid)?);
        let at = if footer.offset() == 0 {
            ADDR_WORD + self.geometry(sum.nid)?.extra + sum.ofs_in_node as usize
        } else {
            sum.ofs_in_node as usize
        };
        let d = Dnode {
            nid: sum.nid,
            word: at,
            ofs_in_node: sum.ofs_in_node,
        };
        if self.slot_addr(d)? != blkaddr {
            return Err(corrupt(format!(
                "cleaning: block {blkaddr} is valid but node {} does not point at it",
                sum.nid
            )));
        }
        let page = self.read_block(blkaddr as u64)?;
        let written_secs = self
            .segs
            .segno_of(blkaddr)
            .map_or(0, |(s, _)| self.segs.info[s as usize].mtime);
        let addr = self.alloc_block_aged(log, sum, written_secs)?;
        let temp = Some(super::log_temperature(log));
        let marked = self.facs_on_device(footer.ino);
        self.write_blocks_marked(addr as u64, &page[..], temp, BlockKind::GcData, marked)?;
        self.metrics.per_log_blocks[log] += 1;
        self.set_addr(footer.ino, d, addr)?;
        Ok(addr)
    }

    /// Roll-forward: points block `index` of `ino` at `dest` (`do_recover_data`): the
    /// block becomes valid again with its summary naming the recovered owner; `NULL_ADDR`
    /// clears the slot, `NEW_ADDR` reserves it.
    pub(crate) fn replay_addr(&mut self, ino: u32, index: u64, dest: u32) -> Result<(), FsError> {
        let src = self.block_addr(ino, index)?;
        if src == dest {
            return Ok(());
        }
        if dest == NULL_ADDR {
            if let Some(d) = self.dnode(ino, index, false)? {
                self.set_addr(ino, d, NULL_ADDR)?;
            }
            return Ok(());
        }
        if dest != NEW_ADDR
            && dest != COMPRESS_ADDR
            && (!self.in_main(dest) || self.segs.is_valid(dest))
        {
            return Err(corrupt(format!(
                "replay: inode {ino} block {index} at {dest}"
            )));
        }
        let d = self
            .dnode(ino, index, true)?
            .ok_or_else(|| corrupt("replay: node path vanished"))?;
        if self.in_main(dest) {
            let sum = Summary {
                nid: d.nid,
                version: 0,
                ofs_in_node: d.ofs_in_node,
            };
            let log = self.data_log(ino)?;
            self.segs.revalidate(dest, log as u8);
            self.set_summary(dest, sum)?;
        }
        self.set_addr(ino, d, dest).map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_and_compressed_pages_are_kept_encrypted_refused() {
        assert!(Encoding::Plain.refusal(7).is_none());
        assert!(Encoding::Compressed.refusal(7).is_none());
        let msg = Encoding::Encrypted.refusal(7).expect("refused").to_string();
        assert!(msg.contains("inode 7"), "{msg}");
    }
}
