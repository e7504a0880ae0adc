//! A block device seen as one byte-addressed file.

use flashstack_block::{BlockDevice, BlockError, Hints, Payload, LBA_SIZE};
use flashstack_sim::Nanos;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum BlockFileError {
    #[error("{len} bytes at offset {offset} go beyond the device's {size_bytes} bytes")]
    BeyondEnd {
        offset: u64,
        len: u64,
        size_bytes: u64,
    },
    #[error("device: {0}")]
    Device(#[from] BlockError),
}

/// What the file saw, in requests and bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlockFileCounters {
    pub reads: u64,
    pub writes: u64,
    pub syncs: u64,
    pub discards: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub discard_bytes: u64,
    /// Writes that covered part of a 4 KiB block, which the file read first to merge.
    pub partial_block_merges: u64,
}

/// An emulated device as a file of `capacity × 4 KiB` bytes. Writes reach the device as
/// whole blocks (partial blocks are read, merged and written back); every call arrives
/// when the previous one completed.
pub struct BlockFile<D: BlockDevice> {
    device: D,
    now_ns: Nanos,
    counters: BlockFileCounters,
    scratch: Vec<u8>,
}

/// Largest span moved in one device request (larger calls are split).
const REQUEST_LBAS_MAX: u64 = 256;

impl<D: BlockDevice> BlockFile<D> {
    pub fn new(device: D) -> Self {
        BlockFile {
            device,
            now_ns: 0,
            counters: BlockFileCounters::default(),
            scratch: Vec::new(),
        }
    }

    pub fn size_bytes(&self) -> u64 {
        self.device.capacity_lbas() * LBA_SIZE as u64
    }

    pub fn now_ns(&self) -> Nanos {
        self.now_ns
    }

    pub fn counters(&self) -> &BlockFileCounters {
        &self.counters
    }

    pub fn device(&self) -> &D {
        &self.device
    }

    pub fn device_mut(&mut self) -> &mut D {
        &mut self.device
    }

    pub fn into_inner(self) -> D {
        self.device
    }

    /// Reads into `out` from `offset`; returns the bytes read (short at the end).
    pub fn read_at(&mut self, offset: u64, out: &mut [u8]) -> Result<usize, BlockFileError> {
        let size = self.size_bytes();
        if offset >= size || out.is_empty() {
            return Ok(0);
        }
        let len = out.len().min((size - offset) as usize);
        let (first, last) = lba_span(offset, len as u64);
        let mut lba = first;
        while lba <= last {
            let count = (last - lba + 1).min(REQUEST_LBAS_MAX);
            self.scratch.resize(count as usize * LBA_SIZE, 0);
            let done = self
                .device
                .read(self.now_ns, lba, count as u32, Some(&mut self.scratch))?;
            self.now_ns = done.complete_ns;
            copy_overlap(&self.scratch, lba, offset, &mut out[..len]);
            lba += count;
        }
        self.counters.reads += 1;
        self.counters.read_bytes += len as u64;
        Ok(len)
    }

    /// Writes `data` at `offset` (all of it, or an error: the file never grows).
    pub fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<usize, BlockFileError> {
        self.check_span(offset, data.len() as u64)?;
        if data.is_empty() {
            return Ok(0);
        }
        let (first, last) = lba_span(offset, data.len() as u64);
        let mut lba = first;
        while lba <= last {
            let count = (last - lba + 1).min(REQUEST_LBAS_MAX);
            self.write_blocks(lba, count, offset, data)?;
            lba += count;
        }
        self.counters.writes += 1;
        self.counters.write_bytes += data.len() as u64;
        Ok(data.len())
    }

    /// Writes blocks `lba..lba+count`, merging the parts of `data` (at `offset`) into
    /// the edge blocks it covers only partly.
    fn write_blocks(
        &mut self,
        lba: u64,
        count: u64,
        offset: u64,
        data: &[u8],
    ) -> Result<(), BlockFileError> {
        let start = lba * LBA_SIZE as u64;
        let end = start + count * LBA_SIZE as u64;
        let covered = offset <= start && offset + data.len() as u64 >= end;
        let mut buffer = std::mem::take(&mut self.scratch);
        buffer.resize(count as usize * LBA_SIZE, 0);
        if !covered {
            // Only the edge blocks can be partial; reading the span is the simple way.
            let done = self
                .device
                .read(self.now_ns, lba, count as u32, Some(&mut buffer))?;
            self.now_ns = done.complete_ns;
            self.counters.partial_block_merges += 1;
        }
        let from = start.max(offset);
        let to = end.min(offset + data.len() as u64);
        buffer[(from - start) as usize..(to - start) as usize]
            .copy_from_slice(&data[(from - offset) as usize..(to - offset) as usize]);
        let result = self
            .device
            .write(self.now_ns, lba, Payload::Bytes(&buffer), Hints::default());
        self.scratch = buffer;
        self.now_ns = result?.complete_ns;
        Ok(())
    }

    /// Makes everything written so far durable (fsync, a flush request from the kernel).
    pub fn sync(&mut self) -> Result<(), BlockFileError> {
        self.now_ns = self.device.flush(self.now_ns)?.complete_ns;
        self.counters.syncs += 1;
        Ok(())
    }

    /// Discards `len` bytes at `offset`: whole blocks are trimmed, partial edge blocks are
    /// zeroed, so the range reads as zeros afterwards either way (hole punching).
    pub fn discard(&mut self, offset: u64, len: u64) -> Result<(), BlockFileError> {
        self.check_span(offset, len)?;
        if len == 0 {
            return Ok(());
        }
        let block = LBA_SIZE as u64;
        let first_whole = offset.div_ceil(block);
        let end_whole = (offset + len) / block;
        if first_whole >= end_whole {
            return self.zero(offset, len);
        }
        self.zero(offset, first_whole * block - offset)?;
        let mut lba = first_whole;
        while lba < end_whole {
            let count = (end_whole - lba).min(u32::MAX as u64) as u32;
            self.now_ns = self.device.trim(self.now_ns, lba, count)?.complete_ns;
            lba += count as u64;
        }
        self.zero(end_whole * block, offset + len - end_whole * block)?;
        self.counters.discards += 1;
        self.counters.discard_bytes += len;
        Ok(())
    }

    fn zero(&mut self, offset: u64, len: u64) -> Result<(), BlockFileError> {
        if len == 0 {
            return Ok(());
        }
        let zeros = vec![0u8; len as usize];
        let (writes, bytes) = (self.counters.writes, self.counters.write_bytes);
        self.write_at(offset, &zeros)?;
        // Zeroing is part of the discard, not a write the file system asked for.
        self.counters.writes = writes;
        self.counters.write_bytes = bytes;
        Ok(())
    }

    fn check_span(&self, offset: u64, len: u64) -> Result<(), BlockFileError> {
        let size_bytes = self.size_bytes();
        match offset.checked_add(len) {
            Some(end) if end <= size_bytes => Ok(()),
            _ => Err(BlockFileError::BeyondEnd {
                offset,
                len,
                size_bytes,
            }),
        }
    }
}

/// First and last LBA a non-empty byte span touches.
fn lba_span(offset: u64, len: u64) -> (u64, u64) {
    let block = LBA_SIZE as u64;
    (offset / block, (offset + len - 1) / block)
}

/// Copies the part of `blocks` (starting at `lba`) that overlaps `out` (at `offset`).
fn copy_overlap(blocks: &[u8], lba: u64, offset: u64, out: &mut [u8]) {
    let start = lba * LBA_SIZE as u64;
    let end = start + blocks.len() as u64;
    let from = start.max(offset);
    let to = end.min(offset + out.len() as u64);
    if from < to {
        out[(from - offset) as usize..(to - offset) as usize]
            .copy_from_slice(&blocks[(from - start) as usize..(to - start) as usize]);
    }
}
