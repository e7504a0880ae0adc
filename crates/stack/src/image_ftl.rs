//! An FTL under a plain image file, for what needs a device's own capabilities on one:
//! janusdL (`F2fs::defrag_by_remap`) needs REMAP, which a file of bytes cannot offer.
//!
//! `flashstack fs defrag IMG --mode L` builds the FTL rather than refusing: the result
//! written back to the image (the file in one extent, every byte unchanged) is what a
//! device with REMAP would leave, and the FTL's counters say what it cost (remap requests
//! and record pages against the copy mode's programmed data) on the same fresh device
//! the copy mode can be run on. The FTL starts empty and holds only the image: its wear,
//! garbage and mapping history are not the phone's (use a phone image for those).
//! Sequence: [`ftl_holding`], mount F2FS on it, `defrag_by_remap`, unmount,
//! [`image_of`], export.

use flashstack_block::{BlockDevice, BlockError, Hints, Payload, LBA_SIZE};
use flashstack_f2fs::MemDevice;
use flashstack_ftl::{DeviceConfig, Ftl};
use flashstack_sim::Nanos;

use crate::StackError;

/// Longest run of blocks loaded as one write.
const LOAD_RUN_LBAS: usize = 256;

/// A fresh FTL of `config` holding `image`'s blocks at the same LBAs, flushed, and the
/// virtual time the flush completed (when the first request may arrive). Refused, naming
/// both sizes, when the device is smaller than the image.
pub fn ftl_holding(
    image: &MemDevice,
    config: DeviceConfig,
    seed: u64,
) -> Result<(Ftl, Nanos), StackError> {
    let device = |e: String| StackError::Device(e);
    let mut ftl = Ftl::new(config, true, seed).map_err(|e| device(e.to_string()))?;
    if ftl.capacity_lbas() < image.capacity_lbas() {
        return Err(device(format!(
            "the image has {} blocks of 4 KiB, more than the {} the device '{}' holds; \
             choose a larger device",
            image.capacity_lbas(),
            ftl.capacity_lbas(),
            ftl.config().name
        )));
    }
    let lbas: Vec<u64> = image.stored_lbas().collect();
    let mut now = 0;
    let mut run: Vec<u8> = Vec::with_capacity(LOAD_RUN_LBAS * LBA_SIZE);
    let mut start = 0u64;
    for (i, &lba) in lbas.iter().enumerate() {
        if run.is_empty() {
            start = lba;
        }
        run.extend_from_slice(&image.block(lba).expect("a stored block")[..]);
        let ends = lbas.get(i + 1) != Some(&(lba + 1)) || run.len() == LOAD_RUN_LBAS * LBA_SIZE;
        if ends {
            let done = ftl.write(now, start, Payload::Bytes(&run), Hints::default());
            now = done
                .map_err(|e| device(format!("loading LBA {start}: {e}")))?
                .complete_ns;
            run.clear();
        }
    }
    let done = ftl.flush(now).map_err(|e| device(e.to_string()))?;
    Ok((ftl, done.complete_ns))
}

/// The first `capacity_lbas` LBAs of `dev` as an in-memory image (what [`ftl_holding`]
/// loaded, as F2FS and any remaps left it), read at `now_ns`.
pub fn image_of(
    dev: &mut impl BlockDevice,
    capacity_lbas: u64,
    now_ns: Nanos,
) -> Result<MemDevice, BlockError> {
    let mut image = MemDevice::new(capacity_lbas * LBA_SIZE as u64);
    let mut block = vec![0u8; LBA_SIZE];
    for lba in 0..capacity_lbas {
        dev.read(now_ns, lba, 1, Some(&mut block))?;
        if block.iter().any(|&b| b != 0) {
            image.write(now_ns, lba, Payload::Bytes(&block), Hints::default())?;
        }
    }
    Ok(image)
}
