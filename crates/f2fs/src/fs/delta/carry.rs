//! DCM made durable at the owner's fsync without writing the pseudo inode (ours: the
//! published source writes the meta and compact pages and leaves its pseudo file to the
//! next checkpoint, so an fsync'd DCM delta does not survive a power cut there).
//!
//! The physics: a pseudo file's pages are written out of place like any file's data, so
//! every write gives a page a new block, which only the pseudo inode names. Writing that
//! inode at each fsync of the owner is a node block per fsync (most of what DCM wrote
//! beyond the source's rule: zoom's run wrote 17,534 of them). Instead the owner's
//! fsync-marked inode **carries** the new addresses, in a private entry of its inline
//! xattr area ([`xattr::PRIVATE_INDEX`], name `dcm`):
//!
//! | bytes | field |
//! |---|---|
//! | 0..4 | the pseudo file's inode number (LE), the owner's `meta_id` |
//! | 4..8 | the pseudo file's size in pages (LE) |
//! | 8.. | per page written since the last carrier: page index, block address (LE u32 each) |
//!
//! Roll-forward replays a carried entry when it replays the owner's copy, in chain order,
//! as addresses of the pseudo file: so the owner's fsync mark is the one commit point of
//! its nodes and its deltas (base < delta < inode), and a cut before it leaves both as
//! checkpointed. The pages go to the device, and a flush, before the inode that names
//! them. The pseudo inode itself stays dirty until the checkpoint.
//!
//! What survives power loss: the checkpointed pseudo file, plus every carried address of
//! an owner's copy that roll-forward replays (only copies in the chain after the current
//! checkpoint are replayed, by their footers' checkpoint version). Any other write of an
//! inode drops the entry (`F2fs::write_node_carrying`), so a later copy never repeats an
//! older one; an owner left clean after its carrier keeps the entry in its checkpointed
//! block, unused (the kernel would see an xattr of an unknown index taking inline room;
//! `restore_deltas` rewrites every owner). The calls of `xattr.rs` never show or keep it.
//! An inode whose xattrs continue in an xattr node never carries. When the entry does not
//! fit the inline area (other xattrs, too many pages since the last carrier) the pseudo
//! inode is written fsync-marked ahead of the owner's nodes instead, as before
//! (`replayable_fsyncs`).

use flashstack_block::BlockDevice;

use super::dcm::MEDFS_DCM_FL;
use super::OFF_FLAGS;
use crate::codec::{le32_at, Block};
use crate::consts::*;
use crate::fs::data::OFF_SIZE;
use crate::fs::{xattr, BlockKind, F2fs, FsError};

/// The private entry's name.
pub(crate) const CARRY_NAME: &[u8] = b"dcm";

/// A decoded carried entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Carried {
    pub pseudo: u32,
    pub pages: u32,
    /// (page index, block address), in page order.
    pub addrs: Vec<(u32, u32)>,
}

impl Carried {
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(8 + 8 * self.addrs.len());
        v.extend_from_slice(&self.pseudo.to_le_bytes());
        v.extend_from_slice(&self.pages.to_le_bytes());
        for (page, addr) in &self.addrs {
            v.extend_from_slice(&page.to_le_bytes());
            v.extend_from_slice(&addr.to_le_bytes());
        }
        v
    }

    /// The entry, checked: a whole number of pairs, every page inside the file.
    pub fn decode(v: &[u8]) -> Result<Carried, String> {
        if v.len() < 8 || !v.len().is_multiple_of(8) {
            return Err(format!("carried DCM entry of {} bytes", v.len()));
        }
        let pseudo = le32_at(v, 0);
        let pages = le32_at(v, 4);
        let addrs: Vec<(u32, u32)> = v[8..]
            .chunks_exact(8)
            .map(|c| (le32_at(c, 0), le32_at(c, 4)))
            .collect();
        // The meta page and at most 255 compact pages.
        if pages == 0 || pages > 256 {
            return Err(format!(
                "carried DCM entry for a pseudo file of {pages} pages"
            ));
        }
        if let Some((page, _)) = addrs.iter().find(|(p, _)| *p >= pages) {
            return Err(format!(
                "carried DCM page {page} of a pseudo file of {pages} pages"
            ));
        }
        Ok(Carried {
            pseudo,
            pages,
            addrs,
        })
    }
}

impl<D: BlockDevice> F2fs<D> {
    /// The owner's fsync, before its own nodes: the pseudo file's dirty pages are
    /// written and flushed; returns the pseudo file and the entry the owner's inode is to
    /// carry (the caller forgets the pages carried once that inode is written: a failed
    /// fsync carries them next time), or writes the pseudo inode fsync-marked ahead of the
    /// owner's nodes when the entry does not fit (then nothing is carried).
    pub(crate) fn dcm_before_fsync(
        &mut self,
        owner: u32,
    ) -> Result<Option<(u32, Vec<u8>)>, FsError> {
        let Some(pseudo) = self.dcm_pseudo_of(owner)? else {
            return Ok(None);
        };
        self.dcm_flush(pseudo)?;
        let Some(pages) = self.since_cp.dcm_uncarried.get(&pseudo).cloned() else {
            return Ok(None);
        };
        let mut addrs = Vec::with_capacity(pages.len());
        for page in pages {
            addrs.push((page, self.block_addr(pseudo, u64::from(page))?));
        }
        let size = self.inode_u64(pseudo, OFF_SIZE)?;
        let carried = Carried {
            pseudo,
            pages: size.div_ceil(BLOCK_SIZE as u64) as u32,
            addrs,
        };
        let value = carried.encode();
        // The pages are durable before any node that names them.
        self.flush_device()?;
        if self.carry_fits(owner, &value)? {
            self.metrics.delta.dcm_carried_fsyncs += 1;
            return Ok(Some((pseudo, value)));
        }
        self.metrics.delta.dcm_pseudo_fsyncs += 1;
        self.write_node(pseudo, BlockKind::Node, 1 << FSYNC_BIT_SHIFT)?;
        self.since_cp.dcm_uncarried.remove(&pseudo);
        self.since_cp.fsynced.insert(pseudo);
        Ok(None)
    }

    /// Whether the owner's inode, written now, would have room for `value` (never for
    /// an inode whose xattrs continue in an xattr node, nor one whose list does not parse).
    fn carry_fits(&mut self, owner: u32, value: &[u8]) -> Result<bool, FsError> {
        let flexible = self.sb.feature.contains(FEATURE_FLEXIBLE_INLINE_XATTR);
        let mut probe: Box<Block> = self.node(owner)?.clone();
        xattr::strip_private(owner, &mut probe, flexible);
        Ok(xattr::carry_private(owner, &mut probe, flexible, CARRY_NAME, value).unwrap_or(false))
    }

    /// Puts the carried entry into a block about to be written as `ino`'s inode (any
    /// private entry it had goes first; `value` none writes it with none).
    pub(crate) fn seal_carried(
        &self,
        ino: u32,
        block: &mut Block,
        value: Option<&[u8]>,
    ) -> Result<(), FsError> {
        let flexible = self.sb.feature.contains(FEATURE_FLEXIBLE_INLINE_XATTR);
        xattr::strip_private(ino, block, flexible);
        if let Some(v) = value {
            if !xattr::carry_private(ino, block, flexible, CARRY_NAME, v)? {
                return Err(crate::fs::corrupt(format!(
                    "inode {ino}: the carried DCM entry no longer fits"
                )));
            }
        }
        Ok(())
    }

    /// Roll-forward of an owner's fsync'd copy: the addresses it carries become the
    /// pseudo file's (in chain order with every other replayed node). The copy's inode
    /// fields are already the owner's (`replay_inode`), so its `meta_id` is checked here.
    pub(crate) fn replay_carried(&mut self, owner: u32, block: &Block) -> Result<(), FsError> {
        // Only an owner's copy carries an entry: no other inode's xattrs are parsed.
        if le32_at(&block[..], OFF_FLAGS) & MEDFS_DCM_FL == 0 {
            return Ok(());
        }
        let flexible = self.sb.feature.contains(FEATURE_FLEXIBLE_INLINE_XATTR);
        let value = match xattr::private_value(owner, block, flexible, CARRY_NAME) {
            Ok(Some(v)) => v,
            Ok(None) => return Ok(()),
            Err(e) => {
                let rule = format!("the fsync'd copy's inline xattrs: {e}");
                return Err(self.dcm_corruption(owner, 0, rule));
            }
        };
        let carried = match Carried::decode(&value) {
            Ok(c) => c,
            Err(rule) => return Err(self.dcm_corruption(owner, 0, rule)),
        };
        let names = self.dcm_pseudo_of(owner)? == Some(carried.pseudo);
        if !names {
            let rule = format!(
                "the fsync'd copy carries addresses of inode {}, not its pseudo file",
                carried.pseudo
            );
            return Err(self.dcm_corruption(owner, u64::from(carried.pseudo), rule));
        }
        for (page, addr) in &carried.addrs {
            if let Err(e) = self.replay_addr(carried.pseudo, u64::from(*page), *addr) {
                let rule = format!("carried page {page} at block {addr}: {e}");
                return Err(self.dcm_corruption(owner, u64::from(carried.pseudo), rule));
            }
        }
        let size = u64::from(carried.pages) * BLOCK_SIZE as u64;
        if size > self.inode_u64(carried.pseudo, OFF_SIZE)? {
            self.set_inode_u64(carried.pseudo, OFF_SIZE, size)?;
        }
        self.metrics.delta.dcm_carried_replayed += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_carried_entry_round_trips_and_refuses_pages_past_the_file() {
        let c = Carried {
            pseudo: 9,
            pages: 3,
            addrs: vec![(0, 4100), (2, 4200)],
        };
        assert_eq!(Carried::decode(&c.encode()), Ok(c.clone()));
        let mut past = c.clone();
        past.pages = 2;
        assert!(Carried::decode(&past.encode()).is_err());
        past.pages = 257;
        assert!(Carried::decode(&past.encode()).is_err());
        assert!(Carried::decode(&c.encode()[..12]).is_err());
        assert!(Carried::decode(&[0; 4]).is_err());
    }
}
