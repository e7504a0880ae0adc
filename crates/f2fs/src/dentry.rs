//! Directory entry blocks (`struct f2fs_dentry_block`): a 27-byte validity bitmap, 3
//! reserved bytes, 214 eleven-byte entries and 214 eight-byte name slots. A name longer
//! than 8 bytes takes several consecutive slots, all marked in the bitmap.

use crate::codec::{set_bit_le, test_bit_le, zero_block, Block, Reader, Writer};
use crate::consts::*;

/// One directory entry (`struct f2fs_dir_entry`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DirEntry {
    pub hash_code: u32,
    pub ino: u32,
    pub name_len: u16,
    pub file_type: u8,
}

/// A live entry with its name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedEntry {
    pub slot: usize,
    pub entry: DirEntry,
    pub name: Vec<u8>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DentryBlock {
    pub bitmap: [u8; SIZE_OF_DENTRY_BITMAP],
    pub reserved: [u8; SIZE_OF_DENTRY_RESERVED],
    pub entries: Vec<DirEntry>,
    pub names: Vec<[u8; SLOT_LEN]>,
}

impl Default for DentryBlock {
    fn default() -> Self {
        DentryBlock {
            bitmap: [0; SIZE_OF_DENTRY_BITMAP],
            reserved: [0; SIZE_OF_DENTRY_RESERVED],
            entries: vec![DirEntry::default(); NR_DENTRY_IN_BLOCK],
            names: vec![[0; SLOT_LEN]; NR_DENTRY_IN_BLOCK],
        }
    }
}

impl DentryBlock {
    /// The first block of a new directory: "." and ".." with hash 0 (`F2FS_DOT_HASH`), as
    /// mkfs writes the root's (f2fs-tools `f2fs_add_default_dentry_root`).
    pub fn with_dots(ino: u32, parent: u32) -> DentryBlock {
        let mut block = DentryBlock::default();
        block.put(0, ino, b".", FT_DIR, 0);
        block.put(1, parent, b"..", FT_DIR, 0);
        block
    }

    /// Stores an entry at `slot`, spreading the name over as many slots as it needs.
    pub fn put(&mut self, slot: usize, ino: u32, name: &[u8], file_type: u8, hash: u32) {
        self.entries[slot] = DirEntry {
            hash_code: hash,
            ino,
            name_len: name.len() as u16,
            file_type,
        };
        for (i, chunk) in name.chunks(SLOT_LEN).enumerate() {
            let Some(dst) = self.names.get_mut(slot + i) else {
                break;
            };
            dst[..chunk.len()].copy_from_slice(chunk);
            set_bit_le(&mut self.bitmap, slot + i);
        }
    }

    /// Live entries: each bitmap bit that starts an entry, with its name (a corrupt
    /// `name_len` is cut at the end of the block).
    pub fn live_entries(&self) -> Vec<NamedEntry> {
        let mut out = Vec::new();
        let mut slot = 0;
        while slot < NR_DENTRY_IN_BLOCK {
            if !test_bit_le(&self.bitmap, slot) {
                slot += 1;
                continue;
            }
            let entry = self.entries[slot];
            let slots = (entry.name_len as usize).div_ceil(SLOT_LEN).max(1);
            let name: Vec<u8> = self.names[slot..(slot + slots).min(NR_DENTRY_IN_BLOCK)]
                .concat()
                .into_iter()
                .take(entry.name_len as usize)
                .collect();
            out.push(NamedEntry { slot, entry, name });
            slot += slots;
        }
        out
    }

    pub fn decode(block: &Block) -> DentryBlock {
        let mut r = Reader::new(block);
        let bitmap = r.fixed();
        let reserved = r.fixed();
        let entries = (0..NR_DENTRY_IN_BLOCK)
            .map(|_| DirEntry {
                hash_code: r.u32(),
                ino: r.u32(),
                name_len: r.u16(),
                file_type: r.u8(),
            })
            .collect();
        let names = (0..NR_DENTRY_IN_BLOCK).map(|_| r.fixed()).collect();
        DentryBlock {
            bitmap,
            reserved,
            entries,
            names,
        }
    }

    pub fn encode(&self) -> Box<Block> {
        let mut block = zero_block();
        let mut w = Writer::new(&mut block[..]);
        w.bytes(&self.bitmap);
        w.bytes(&self.reserved);
        for i in 0..NR_DENTRY_IN_BLOCK {
            let e = self.entries.get(i).copied().unwrap_or_default();
            w.u32(e.hash_code);
            w.u32(e.ino);
            w.u16(e.name_len);
            w.u8(e.file_type);
        }
        for i in 0..NR_DENTRY_IN_BLOCK {
            w.bytes(&self.names.get(i).copied().unwrap_or_default());
        }
        debug_assert!(!w.overrun() && w.pos() == BLOCK_SIZE);
        block
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dots_layout() {
        let b = DentryBlock::with_dots(3, 3);
        let raw = b.encode();
        assert_eq!(raw[0], 0b11, "bits 0 and 1, little-endian order");
        assert_eq!(
            &raw[30..41],
            &[0, 0, 0, 0, 3, 0, 0, 0, 1, 0, FT_DIR],
            "entry 0 at 30"
        );
        assert_eq!(&raw[2384..2386], b".\0", "names at 2384");
        assert_eq!(&raw[2392..2394], b"..");
        let back = DentryBlock::decode(&raw);
        assert_eq!(back, b);
        let names: Vec<Vec<u8>> = back.live_entries().into_iter().map(|e| e.name).collect();
        assert_eq!(names, vec![b".".to_vec(), b"..".to_vec()]);
    }

    #[test]
    fn long_names_take_several_slots() {
        let mut b = DentryBlock::default();
        b.put(2, 9, b"lost+found", FT_DIR, 0x1234);
        let live = b.live_entries();
        assert_eq!(live.len(), 1);
        assert_eq!(live[0].name, b"lost+found");
        assert_eq!(b.bitmap[0], 0b1100);
    }
}
