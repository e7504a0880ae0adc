//! Logical device images: a raw file holding the device's LBAs in order (4 KiB each), as
//! `dd` would read them from the block interface. `flashstack run --image FILE` starts a run
//! from one (its non-zero blocks become the device's existing data, in place of
//! preconditioning); `--image-out FILE` writes one after the run. An image written by a
//! run over F2FS is an F2FS image that `fsck.f2fs` and `flashstack fs` can open.
//!
//! All-zero blocks are not written to the device (they read back as zeros either way, as
//! after a TRIM) and are left as holes in the images written, so images of a mostly empty
//! 16 GiB device stay small on disk.

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use flashstack_block::{BlockDevice, Hints, Payload, LBA_SIZE};

use crate::{Progress, ReplayError, Replayer};

/// LBAs moved per device request when loading or saving an image.
const CHUNK_LBAS: usize = 256;
/// Version of an LBA whose bytes came from an image: the content model cannot regenerate
/// them, so `--verify` accepts whatever the device returns for it until it is rewritten.
pub(crate) const IMAGE_VERSION: u32 = u32::MAX;

/// What loading an image did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImageReport {
    pub image_bytes: u64,
    /// Non-zero blocks written to the device.
    pub lbas_written: u64,
}

impl std::fmt::Display for ImageReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "image: {} bytes, {} non-zero blocks written to the device",
            self.image_bytes, self.lbas_written
        )
    }
}

fn image_error(path: &Path, message: impl Into<String>) -> ReplayError {
    ReplayError::Image {
        path: PathBuf::from(path),
        message: message.into(),
    }
}

/// First LBAs of the CHUNK_LBAS-aligned chunks of an image that hold data, ascending.
fn data_chunks(file: &File, path: &Path, lbas: u64) -> Result<Vec<u64>, ReplayError> {
    let ranges = flashstack_sim::sparse::data_ranges(file)
        .map_err(|e| image_error(path, format!("cannot find its data: {e}")))?;
    let chunk_bytes = (CHUNK_LBAS * LBA_SIZE) as u64;
    let mut chunks: Vec<u64> = Vec::new();
    for (start, end) in ranges {
        let first = start / chunk_bytes;
        let last = end.div_ceil(chunk_bytes);
        for c in first..last {
            let lba = c * CHUNK_LBAS as u64;
            if lba < lbas && chunks.last().is_none_or(|&l| l < lba) {
                chunks.push(lba);
            }
        }
    }
    Ok(chunks)
}

fn is_zero(block: &[u8]) -> bool {
    block.iter().all(|&b| b == 0)
}

impl Replayer {
    /// Writes the non-zero blocks of the image at `path` to the device, as existing data
    /// (call before [`prepare`](Self::prepare); needs stored contents).
    pub fn load_image(
        &mut self,
        path: &Path,
        progress: &mut dyn Progress,
    ) -> Result<ImageReport, ReplayError> {
        if self.prepared {
            return Err(ReplayError::SnapshotAfterPrepare);
        }
        if !self.config.store_contents {
            return Err(image_error(path, "an image needs stored page contents"));
        }
        let file = File::open(path).map_err(|e| image_error(path, format!("cannot open: {e}")))?;
        let image_bytes = file
            .metadata()
            .map_err(|e| image_error(path, format!("cannot read its size: {e}")))?
            .len();
        self.check_image_size(path, image_bytes)?;
        let lbas = image_bytes / LBA_SIZE as u64;
        progress.phase("image", Some(lbas));
        let mut chunk = vec![0u8; CHUNK_LBAS * LBA_SIZE];
        let mut report = ImageReport {
            image_bytes,
            lbas_written: 0,
        };
        // Only the chunks a sparse file holds data in are read (the holes are zero blocks,
        // which write nothing); the chunks stay at multiples of CHUNK_LBAS, so the device
        // sees the same requests as from a read of the whole file.
        for lba in data_chunks(&file, path, lbas)? {
            let count = (CHUNK_LBAS as u64).min(lbas - lba) as usize;
            let bytes = &mut chunk[..count * LBA_SIZE];
            file.read_exact_at(bytes, lba * LBA_SIZE as u64)
                .map_err(|e| {
                    image_error(path, format!("read failed at byte {}: {e}", lba * 4096))
                })?;
            report.lbas_written += self.write_image_chunk(lba, bytes)?;
            progress.advance(lba + count as u64);
        }
        progress.advance(lbas);
        Ok(report)
    }

    fn check_image_size(&self, path: &Path, image_bytes: u64) -> Result<(), ReplayError> {
        if !image_bytes.is_multiple_of(LBA_SIZE as u64) {
            return Err(image_error(
                path,
                format!("{image_bytes} bytes is not a whole number of 4096-byte blocks"),
            ));
        }
        let capacity = self.ftl.capacity_lbas() * LBA_SIZE as u64;
        if image_bytes > capacity {
            return Err(image_error(
                path,
                format!("{image_bytes} bytes does not fit the device's {capacity} bytes"),
            ));
        }
        Ok(())
    }

    /// Writes each run of non-zero blocks of `bytes` (starting at `first_lba`).
    fn write_image_chunk(&mut self, first_lba: u64, bytes: &[u8]) -> Result<u64, ReplayError> {
        let blocks: Vec<&[u8]> = bytes.chunks_exact(LBA_SIZE).collect();
        let mut written = 0;
        let mut i = 0;
        while i < blocks.len() {
            if is_zero(blocks[i]) {
                i += 1;
                continue;
            }
            let start = i;
            while i < blocks.len() && !is_zero(blocks[i]) {
                i += 1;
            }
            let lba = first_lba + start as u64;
            let payload = Payload::Bytes(&bytes[start * LBA_SIZE..i * LBA_SIZE]);
            let now = self.ftl.busy_until_ns();
            self.ftl
                .write(now, lba, payload, Hints::default())
                .map_err(ReplayError::Snapshot)?;
            self.versions[lba as usize..first_lba as usize + i].fill(IMAGE_VERSION);
            written += (i - start) as u64;
        }
        Ok(written)
    }

    /// Writes the device's logical contents to `path` (whole capacity; zero blocks as
    /// holes). Reads go through the device after the measurement, so take the report
    /// first. Returns the non-zero blocks written.
    pub fn export_image(&mut self, path: &Path) -> Result<u64, ReplayError> {
        if !self.config.store_contents {
            return Err(image_error(
                path,
                "writing an image needs stored page contents (--contents)",
            ));
        }
        let lbas = self.ftl.capacity_lbas();
        let mut file =
            File::create(path).map_err(|e| image_error(path, format!("cannot create: {e}")))?;
        let io = |e: std::io::Error| image_error(path, format!("write failed: {e}"));
        file.set_len(lbas * LBA_SIZE as u64).map_err(io)?;
        let mut chunk = vec![0u8; CHUNK_LBAS * LBA_SIZE];
        let mut written = 0;
        let mut lba = 0;
        while lba < lbas {
            let count = (CHUNK_LBAS as u64).min(lbas - lba) as u32;
            let bytes = &mut chunk[..count as usize * LBA_SIZE];
            let now = self.ftl.busy_until_ns();
            self.ftl
                .read(now, lba, count, Some(bytes))
                .map_err(|source| ReplayError::Device { index: 0, source })?;
            for (i, block) in bytes.chunks_exact(LBA_SIZE).enumerate() {
                if is_zero(block) {
                    continue;
                }
                let offset = (lba + i as u64) * LBA_SIZE as u64;
                file.seek(SeekFrom::Start(offset)).map_err(io)?;
                file.write_all(block).map_err(io)?;
                written += 1;
            }
            lba += count as u64;
        }
        file.sync_all().map_err(io)?;
        Ok(written)
    }
}
