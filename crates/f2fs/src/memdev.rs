//! An in-memory [`BlockDevice`] for tests and image tools, and raw image import/export.
//!
//! Only blocks holding a non-zero byte are stored (a zero block is the same as an unwritten
//! one), so a 16 GiB volume costs memory only for what F2FS wrote to it. Every request
//! completes at its arrival time: this device has no timing model.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

use flashstack_block::{
    check_range, BlockDevice, BlockError, Completion, Hints, Payload, LBA_SIZE,
};
use flashstack_sim::Nanos;

use crate::codec::Block;
use crate::error::F2fsError;

/// A sparse RAM disk of 4 KiB LBAs.
#[derive(Clone, Debug, Default)]
pub struct MemDevice {
    capacity_lbas: u64,
    blocks: BTreeMap<u64, Box<Block>>,
}

/// Bytes read from an image file per call when importing.
const IMPORT_CHUNK: usize = 1 << 20;

impl MemDevice {
    /// A zeroed device of `bytes` bytes (rounded down to whole LBAs).
    pub fn new(bytes: u64) -> MemDevice {
        MemDevice {
            capacity_lbas: bytes / LBA_SIZE as u64,
            blocks: BTreeMap::new(),
        }
    }

    /// Blocks currently holding non-zero data.
    pub fn stored_blocks(&self) -> usize {
        self.blocks.len()
    }

    /// LBAs holding non-zero data, in ascending order.
    pub fn stored_lbas(&self) -> impl Iterator<Item = u64> + '_ {
        self.blocks.keys().copied()
    }

    /// The contents of `lba`, if it holds anything but zeros.
    pub fn block(&self, lba: u64) -> Option<&Block> {
        self.blocks.get(&lba).map(|b| &**b)
    }

    /// Reads a raw image file (its size must be a whole number of 4 KiB blocks). Only the
    /// parts of a sparse file that hold data are read: its holes are zero blocks.
    pub fn import(path: &Path) -> Result<MemDevice, F2fsError> {
        let io = |error| F2fsError::Io {
            path: path.to_path_buf(),
            error,
        };
        let file = File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        if len % LBA_SIZE as u64 != 0 {
            return Err(F2fsError::ImageSize {
                path: path.to_path_buf(),
                len,
            });
        }
        let mut dev = MemDevice::new(len);
        let mut chunk = vec![0u8; IMPORT_CHUNK];
        let lba_bytes = LBA_SIZE as u64;
        for (start, end) in flashstack_sim::sparse::data_ranges(&file).map_err(io)? {
            let mut at = start / lba_bytes * lba_bytes;
            let end = end.div_ceil(lba_bytes) * lba_bytes;
            while at < end.min(len) {
                let want = ((end.min(len) - at) as usize).min(IMPORT_CHUNK);
                file.read_exact_at(&mut chunk[..want], at).map_err(io)?;
                for (i, block) in chunk[..want].chunks_exact(LBA_SIZE).enumerate() {
                    dev.store(at / lba_bytes + i as u64, block);
                }
                at += want as u64;
            }
        }
        Ok(dev)
    }

    /// Writes the device as a raw image file; unwritten blocks become holes. An existing
    /// file is replaced atomically: the image is written whole to a temporary file beside
    /// it, synced, and renamed over it (keeping its permissions), so a failure leaves the
    /// old file as it was.
    pub fn export(&self, path: &Path) -> Result<(), F2fsError> {
        let target = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let name = target
            .file_name()
            .map_or_else(Default::default, |n| n.to_os_string());
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(&name);
        tmp_name.push(format!(".tmp-{}", std::process::id()));
        let tmp = target.with_file_name(tmp_name);
        let io = |error| F2fsError::Io {
            path: path.to_path_buf(),
            error,
        };
        let written = self.write_image(&tmp).and_then(|()| {
            if let Ok(meta) = std::fs::metadata(&target) {
                std::fs::set_permissions(&tmp, meta.permissions())?;
            }
            std::fs::rename(&tmp, &target)
        });
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written.map_err(io)
    }

    fn write_image(&self, path: &Path) -> std::io::Result<()> {
        let mut file = File::create(path)?;
        file.set_len(self.capacity_lbas * LBA_SIZE as u64)?;
        for (&lba, block) in &self.blocks {
            file.seek(SeekFrom::Start(lba * LBA_SIZE as u64))?;
            file.write_all(&block[..])?;
        }
        file.sync_all()
    }

    fn store(&mut self, lba: u64, data: &[u8]) {
        if data.iter().all(|&b| b == 0) {
            self.blocks.remove(&lba);
            return;
        }
        let mut block = Box::new([0u8; LBA_SIZE]);
        block.copy_from_slice(data);
        self.blocks.insert(lba, block);
    }

    fn done(arrival_ns: Nanos) -> Completion {
        Completion {
            start_ns: arrival_ns,
            complete_ns: arrival_ns,
        }
    }
}

impl BlockDevice for MemDevice {
    fn capacity_lbas(&self) -> u64 {
        self.capacity_lbas
    }

    fn write(
        &mut self,
        arrival_ns: Nanos,
        lba: u64,
        payload: Payload<'_>,
        _hints: Hints,
    ) -> Result<Completion, BlockError> {
        let Payload::Bytes(bytes) = payload else {
            return Err(BlockError::ContentsNotStored);
        };
        if bytes.len() % LBA_SIZE != 0 {
            return Err(BlockError::Misaligned { len: bytes.len() });
        }
        check_range(lba, payload.lba_count(), self.capacity_lbas)?;
        for (i, block) in bytes.chunks_exact(LBA_SIZE).enumerate() {
            self.store(lba + i as u64, block);
        }
        Ok(Self::done(arrival_ns))
    }

    fn read(
        &mut self,
        arrival_ns: Nanos,
        lba: u64,
        count: u32,
        out: Option<&mut [u8]>,
    ) -> Result<Completion, BlockError> {
        check_range(lba, count, self.capacity_lbas)?;
        if let Some(out) = out {
            if out.len() != count as usize * LBA_SIZE {
                return Err(BlockError::BadBuffer {
                    len: out.len(),
                    count,
                });
            }
            for (i, dst) in out.chunks_exact_mut(LBA_SIZE).enumerate() {
                match self.blocks.get(&(lba + i as u64)) {
                    Some(block) => dst.copy_from_slice(&block[..]),
                    None => dst.fill(0),
                }
            }
        }
        Ok(Self::done(arrival_ns))
    }

    fn trim(&mut self, arrival_ns: Nanos, lba: u64, count: u32) -> Result<Completion, BlockError> {
        check_range(lba, count, self.capacity_lbas)?;
        let doomed: Vec<u64> = self
            .blocks
            .range(lba..lba + count as u64)
            .map(|(&k, _)| k)
            .collect();
        for k in doomed {
            self.blocks.remove(&k);
        }
        Ok(Self::done(arrival_ns))
    }

    fn flush(&mut self, arrival_ns: Nanos) -> Result<Completion, BlockError> {
        Ok(Self::done(arrival_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_storage_and_zero_reads() {
        let mut dev = MemDevice::new(16 * LBA_SIZE as u64);
        let mut data = vec![0u8; 2 * LBA_SIZE];
        data[5] = 1;
        dev.write(0, 3, Payload::Bytes(&data), Hints::default())
            .unwrap();
        assert_eq!(dev.stored_blocks(), 1, "the all-zero block is not stored");
        let mut out = vec![0xffu8; 3 * LBA_SIZE];
        dev.read(0, 2, 3, Some(&mut out)).unwrap();
        assert_eq!(out[LBA_SIZE + 5], 1);
        assert_eq!(out.iter().filter(|&&b| b != 0).count(), 1);
        dev.trim(0, 0, 16).unwrap();
        assert_eq!(dev.stored_blocks(), 0);
        assert!(dev.read(0, 15, 2, None).is_err());
    }
}
