//! Block I/O in file-system blocks over the block interface, with the virtual clock of a
//! single-threaded caller: each request arrives when the previous one completed.

use flashstack_block::{BlockDevice, Hints, Payload, Temperature, LBA_SIZE};
use flashstack_sim::Nanos;

use crate::codec::{zero_block, Block};
use crate::error::F2fsError;

/// Largest trim sent in one request.
const MAX_TRIM_LBAS: u64 = 1 << 30;

pub struct Io<'a, D: BlockDevice + ?Sized> {
    dev: &'a mut D,
    now: Nanos,
}

impl<'a, D: BlockDevice + ?Sized> Io<'a, D> {
    pub fn new(dev: &'a mut D, start_ns: Nanos) -> Self {
        Io { dev, now: start_ns }
    }

    pub fn now(&self) -> Nanos {
        self.now
    }

    pub fn capacity_blocks(&self) -> u64 {
        self.dev.capacity_lbas()
    }

    pub fn read_block(&mut self, blkaddr: u64) -> Result<Box<Block>, F2fsError> {
        let mut block = zero_block();
        let done = self.dev.read(self.now, blkaddr, 1, Some(&mut block[..]))?;
        self.now = done.complete_ns;
        Ok(block)
    }

    /// Writes whole blocks starting at `blkaddr`.
    pub fn write(&mut self, blkaddr: u64, data: &[u8], hints: Hints) -> Result<(), F2fsError> {
        debug_assert_eq!(data.len() % LBA_SIZE, 0);
        let done = self
            .dev
            .write(self.now, blkaddr, Payload::Bytes(data), hints)?;
        self.now = done.complete_ns;
        Ok(())
    }

    /// Discards `count` blocks from `blkaddr`, in requests the interface can carry.
    pub fn trim(&mut self, blkaddr: u64, count: u64) -> Result<(), F2fsError> {
        let mut start = blkaddr;
        let end = blkaddr + count;
        while start < end {
            let n = (end - start).min(MAX_TRIM_LBAS) as u32;
            self.now = self.dev.trim(self.now, start, n)?.complete_ns;
            start += n as u64;
        }
        Ok(())
    }

    pub fn flush(&mut self) -> Result<(), F2fsError> {
        self.now = self.dev.flush(self.now)?.complete_ns;
        Ok(())
    }
}

/// Hints for a block of a main-area log (metadata areas carry none, as the kernel sends
/// no lifetime hint for them).
pub fn log_hints(temperature: Temperature) -> Hints {
    Hints {
        temperature: Some(temperature),
        ..Hints::default()
    }
}
