//! [`ImageBacked`]: a block device whose durable state is mirrored into an image file, so
//! that a mount killed at any moment leaves on disk exactly what the device had made
//! durable. Writes and trims are held in memory until the device's next `flush` completes,
//! then written to the file and synced: the file never holds data the device could still
//! lose, and never misses data the device has promised to keep.
//!
//! The mirror reads nothing back through the device, so it changes no simulated time or
//! counter.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Seek, SeekFrom, Write};

use flashstack_block::{BlockDevice, BlockError, Completion, Hints, Payload, LBA_SIZE};
use flashstack_sim::Nanos;

/// A device and its image file. Blocks written since the last flush are kept until then
/// (`None` for a trimmed block, which the image gets as zeros).
pub struct ImageBacked<D: BlockDevice> {
    inner: D,
    file: File,
    pending: BTreeMap<u64, Option<Box<[u8]>>>,
    /// The first error writing the image; reported by every later flush.
    failed: Option<String>,
}

impl<D: BlockDevice> ImageBacked<D> {
    /// `file` must already hold the device's current contents (or be about to receive them
    /// through writes to this device).
    pub fn new(inner: D, file: File) -> Self {
        ImageBacked {
            inner,
            file,
            pending: BTreeMap::new(),
            failed: None,
        }
    }

    pub fn inner(&self) -> &D {
        &self.inner
    }

    pub fn into_inner(self) -> D {
        self.inner
    }

    fn mirror(&mut self) -> std::io::Result<()> {
        let zeros = [0u8; LBA_SIZE];
        for (lba, block) in std::mem::take(&mut self.pending) {
            self.file.seek(SeekFrom::Start(lba * LBA_SIZE as u64))?;
            self.file.write_all(block.as_deref().unwrap_or(&zeros))?;
        }
        self.file.sync_data()
    }
}

impl<D: BlockDevice> BlockDevice for ImageBacked<D> {
    fn capacity_lbas(&self) -> u64 {
        self.inner.capacity_lbas()
    }

    fn write(
        &mut self,
        arrival_ns: Nanos,
        lba: u64,
        payload: Payload<'_>,
        hints: Hints,
    ) -> Result<Completion, BlockError> {
        let bytes = match payload {
            Payload::Bytes(bytes) => bytes,
            // Without contents there is nothing to mirror: refuse rather than lie.
            Payload::Unstored { .. } => return Err(BlockError::ContentsNotStored),
        };
        let done = self.inner.write(arrival_ns, lba, payload, hints)?;
        for (i, block) in bytes.chunks_exact(LBA_SIZE).enumerate() {
            self.pending.insert(lba + i as u64, Some(block.into()));
        }
        Ok(done)
    }

    fn read(
        &mut self,
        arrival_ns: Nanos,
        lba: u64,
        count: u32,
        out: Option<&mut [u8]>,
    ) -> Result<Completion, BlockError> {
        self.inner.read(arrival_ns, lba, count, out)
    }

    fn trim(&mut self, arrival_ns: Nanos, lba: u64, count: u32) -> Result<Completion, BlockError> {
        let done = self.inner.trim(arrival_ns, lba, count)?;
        for l in lba..lba + count as u64 {
            self.pending.insert(l, None);
        }
        Ok(done)
    }

    fn flush(&mut self, arrival_ns: Nanos) -> Result<Completion, BlockError> {
        let done = self.inner.flush(arrival_ns)?;
        if self.failed.is_none() {
            if let Err(e) = self.mirror() {
                self.failed = Some(e.to_string());
            }
        }
        match &self.failed {
            Some(reason) => Err(BlockError::Unreadable {
                reason: format!("the image file cannot be written: {reason}"),
            }),
            None => Ok(done),
        }
    }
}
