//! [`ImageBacked`]: a block device whose durable state is mirrored into an image file, so
//! that a mount killed at any moment leaves on disk exactly what the device had made
//! durable. Writes and trims are held in memory until the device's next `flush` completes,
//! then written to the file and synced: the file never holds data the device could still
//! lose, and never misses data the device has promised to keep.
//!
//! The image stays sparse: a trimmed range becomes a hole in the file (`fallocate`
//! `PUNCH_HOLE`), never a run of written zeros, so mkfs's discard of a 16 GiB device costs
//! one system call, not 16 GB of disk; a written block of zeros becomes a hole too (mkfs
//! zeroes the NAT and SIT areas). [`data_ranges`](flashstack_sim::sparse::data_ranges) finds the parts of an image
//! that hold data, so loading one reads only those.
//!
//! The mirror reads nothing back through the device, so it changes no simulated time or
//! counter.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;

use flashstack_block::{
    remap_below, BlockDevice, BlockError, Completion, Hints, Payload, Remap, RemapExtent, LBA_SIZE,
};
use flashstack_sim::Nanos;

/// Blocks written since the last flush, and trimmed ranges, waiting for the next one.
#[derive(Default)]
struct Pending {
    /// LBA → the block's bytes. Every write here is newer than every trim covering it
    /// (a trim drops the writes it covers), so trims are applied first at the flush.
    writes: BTreeMap<u64, Box<[u8]>>,
    /// Trimmed LBA ranges, start → end (exclusive), disjoint and not touching.
    trims: BTreeMap<u64, u64>,
}

impl Pending {
    /// A block of zeros is kept as a hole: the image stores only what the device holds.
    fn write(&mut self, lba: u64, block: &[u8]) {
        if block.iter().all(|&b| b == 0) {
            self.trim(lba, lba + 1);
        } else {
            self.writes.insert(lba, block.into());
        }
    }

    fn trim(&mut self, start: u64, end: u64) {
        let superseded: Vec<u64> = self.writes.range(start..end).map(|(&l, _)| l).collect();
        for lba in superseded {
            self.writes.remove(&lba);
        }
        let (mut start, mut end) = (start, end);
        // Merge with every range that overlaps or touches [start, end).
        if let Some((&s, &e)) = self.trims.range(..=start).next_back() {
            if e >= start {
                start = s;
                end = end.max(e);
            }
        }
        let absorbed: Vec<(u64, u64)> = self
            .trims
            .range(start..=end)
            .map(|(&s, &e)| (s, e))
            .collect();
        for (s, e) in absorbed {
            self.trims.remove(&s);
            end = end.max(e);
        }
        self.trims.insert(start, end);
    }

    /// What the image will hold at `lba` once mirrored: a pending write, zeros for a
    /// pending trim, else the file's bytes (zeros past its end).
    fn block(&self, file: &File, lba: u64) -> std::io::Result<Box<[u8]>> {
        if let Some(bytes) = self.writes.get(&lba) {
            return Ok(bytes.clone());
        }
        let mut out = vec![0u8; LBA_SIZE].into_boxed_slice();
        let trimmed = matches!(self.trims.range(..=lba).next_back(), Some((_, &e)) if e > lba);
        if !trimmed {
            let mut at = 0;
            while at < LBA_SIZE {
                match file.read_at(&mut out[at..], lba * LBA_SIZE as u64 + at as u64)? {
                    0 => break,
                    n => at += n,
                }
            }
        }
        Ok(out)
    }

    fn is_empty(&self) -> bool {
        self.writes.is_empty() && self.trims.is_empty()
    }
}

/// A device and its image file. Blocks written since the last flush are kept until then.
pub struct ImageBacked<D: BlockDevice> {
    inner: D,
    file: File,
    pending: Pending,
    /// While paused, flushes keep everything pending (see [`ImageBacked::paused`]).
    paused: bool,
    /// The first error writing the image; reported by every later flush.
    failed: Option<String>,
    /// The device below's [`Remap::remap_lbas_max`], learnt when `as_remap` offers REMAP.
    remap_lbas_max: u32,
}

impl<D: BlockDevice> ImageBacked<D> {
    /// `file` must already hold the device's current contents (or be about to receive them
    /// through writes to this device).
    pub fn new(inner: D, file: File) -> Self {
        ImageBacked {
            inner,
            file,
            pending: Pending::default(),
            paused: false,
            failed: None,
            remap_lbas_max: 0,
        }
    }

    /// As [`ImageBacked::new`], but the image is not written until [`ImageBacked::resume`]:
    /// a mount that fails (a file system refused, say) leaves its input image untouched.
    pub fn paused(inner: D, file: File) -> Self {
        ImageBacked {
            paused: true,
            ..ImageBacked::new(inner, file)
        }
    }

    /// Starts mirroring: what earlier flushes made durable goes to the image now.
    pub fn resume(&mut self) -> std::io::Result<()> {
        self.paused = false;
        self.mirror()
    }

    pub fn inner(&self) -> &D {
        &self.inner
    }

    pub fn into_inner(self) -> D {
        self.inner
    }

    /// After the device made everything durable (a flush, a remap): the mirror follows,
    /// unless paused; the first failure is reported by this and every later call.
    fn mirror_now(&mut self) -> Result<(), BlockError> {
        if self.failed.is_none() && !self.paused {
            if let Err(e) = self.mirror() {
                self.failed = Some(e.to_string());
            }
        }
        match &self.failed {
            Some(reason) => Err(BlockError::Unreadable {
                reason: format!("the image file cannot be written: {reason}"),
            }),
            None => Ok(()),
        }
    }

    fn mirror(&mut self) -> std::io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(&mut self.pending);
        let block = LBA_SIZE as u64;
        for (start, end) in pending.trims {
            punch_hole(&self.file, start * block, (end - start) * block)?;
        }
        // Consecutive blocks go down in one write.
        let mut run: Vec<u8> = Vec::new();
        let mut run_start = 0u64;
        for (lba, bytes) in pending.writes {
            if !run.is_empty() && lba != run_start + (run.len() / LBA_SIZE) as u64 {
                self.file.write_all_at(&run, run_start * block)?;
                run.clear();
            }
            if run.is_empty() {
                run_start = lba;
            }
            run.extend_from_slice(&bytes);
        }
        if !run.is_empty() {
            self.file.write_all_at(&run, run_start * block)?;
        }
        self.file.sync_data()
    }
}

/// Makes `len` bytes at `offset` of `file` read as zeros without storing them (a hole);
/// where the file system cannot punch holes, zeros are written instead.
pub fn punch_hole(file: &File, offset: u64, len: u64) -> std::io::Result<()> {
    if len == 0 {
        return Ok(());
    }
    let mode = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
    // SAFETY: a plain system call on a descriptor `file` owns; no memory is passed.
    let rc = unsafe { libc::fallocate(file.as_raw_fd(), mode, offset as i64, len as i64) };
    if rc == 0 {
        return Ok(());
    }
    let error = std::io::Error::last_os_error();
    if error.raw_os_error() != Some(libc::EOPNOTSUPP) {
        return Err(error);
    }
    let zeros = vec![0u8; 1 << 20];
    let mut done = 0u64;
    while done < len {
        let n = (len - done).min(zeros.len() as u64) as usize;
        file.write_all_at(&zeros[..n], offset + done)?;
        done += n as u64;
    }
    Ok(())
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
            self.pending.write(lba + i as u64, block);
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
        self.pending.trim(lba, lba + count as u64);
        Ok(done)
    }

    fn flush(&mut self, arrival_ns: Nanos) -> Result<Completion, BlockError> {
        let done = self.inner.flush(arrival_ns)?;
        self.mirror_now()?;
        Ok(done)
    }

    /// Offered when the device below can remap; see the [`Remap`] impl.
    fn as_remap(&mut self) -> Option<&mut dyn Remap> {
        self.remap_lbas_max = self.inner.as_remap()?.remap_lbas_max();
        Some(self)
    }
}

/// REMAP through the mirror, for a device below that has it.
///
/// The image holds contents, not mappings: after a remap each destination LBA must hold
/// the bytes its source held. Those bytes are taken from the mirror itself (the pending
/// writes and trims over the file, never read back through the device, so no simulated
/// time or counter changes) before the device is asked, and become pending writes (or
/// holes) of the destinations once it has remapped. A remap is durable when it returns
/// and includes a flush, so the mirror is then written and synced as at a flush (unless
/// paused). A refused remap changes neither the device nor the image.
impl<D: BlockDevice> Remap for ImageBacked<D> {
    fn remap_lbas_max(&self) -> u32 {
        // Learnt by `as_remap` (`&self` cannot ask the device below).
        self.remap_lbas_max
    }

    fn remap_extents(
        &mut self,
        arrival_ns: Nanos,
        extents: &[RemapExtent],
    ) -> Result<Completion, BlockError> {
        let unreadable = |e: std::io::Error| BlockError::Unreadable {
            reason: format!("the image file cannot be read for a remap: {e}"),
        };
        let capacity = self.inner.capacity_lbas();
        let max = remap_below(&mut self.inner, "image mirror")?.remap_lbas_max();
        flashstack_block::check_remap_extents(extents, capacity, max)?;
        let mut moved = Vec::new();
        for e in extents {
            for i in 0..e.count as u64 {
                let bytes = self
                    .pending
                    .block(&self.file, e.src + i)
                    .map_err(unreadable)?;
                moved.push((e.dst + i, bytes));
            }
        }
        let done =
            remap_below(&mut self.inner, "image mirror")?.remap_extents(arrival_ns, extents)?;
        for (lba, bytes) in moved {
            self.pending.write(lba, &bytes);
        }
        self.mirror_now()?;
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trims_merge_and_drop_the_writes_they_cover() {
        let mut p = Pending::default();
        p.write(5, &[1; LBA_SIZE]);
        p.write(20, &[2; LBA_SIZE]);
        p.trim(0, 10);
        p.trim(10, 12);
        p.trim(30, 40);
        p.trim(11, 31);
        assert_eq!(p.trims.iter().collect::<Vec<_>>(), vec![(&0, &40)]);
        assert!(
            p.writes.is_empty(),
            "both writes were trimmed after being written"
        );
        p.write(7, &[3; LBA_SIZE]);
        assert_eq!(p.writes.len(), 1, "a write after the trim survives it");
        p.write(50, &[0; LBA_SIZE]);
        assert_eq!(p.writes.len(), 1, "a block of zeros is a hole");
        assert_eq!(p.trims.get(&50), Some(&51));
    }
}
