//! Writing to a device whose exported capacity is larger than its flash (a compressing
//! SSD, `flashstack_ftl::csd`): the file system can have free blocks the flash cannot
//! hold. Before a write, F2FS asks the device how much flash is left and fails with
//! ENOSPC when the write (at its uncompressed size, the worst case) would eat into the
//! flash kept for the file system's own metadata — node blocks, NAT/SIT and checkpoint
//! packs a later fsync, checkpoint or roll-forward mount must still write. Without the
//! reserve the device itself refuses the write, and a file system that cannot write its
//! checkpoint cannot even be mounted again.

use flashstack_block::BlockDevice;

use super::{F2fs, FsError};

/// Flash kept for metadata, in segments of 2 MiB: one per log F2FS writes (six) plus two
/// for checkpoint packs and NAT/SIT copies.
pub const DEVICE_METADATA_RESERVE_SEGMENTS: u64 = 8;
const SEGMENT_BYTES: u64 = 2 << 20;

/// Whether a write of `bytes` leaves the metadata reserve of flash intact.
pub fn device_space_allows(free_bytes: u64, bytes: u64) -> bool {
    free_bytes >= bytes.saturating_add(DEVICE_METADATA_RESERVE_SEGMENTS * SEGMENT_BYTES)
}

impl<D: BlockDevice> F2fs<D> {
    /// Fails with [`FsError::NoSpace`] when the device reports too little flash left for
    /// `bytes` of data plus the metadata reserve; devices that back every LBA pass.
    pub(crate) fn device_space_for(&self, bytes: u64) -> Result<(), FsError> {
        match self.dev.physical_free_bytes() {
            Some(free) if !device_space_allows(free, bytes) => Err(FsError::NoSpace),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reserve_is_kept() {
        let reserve = DEVICE_METADATA_RESERVE_SEGMENTS * SEGMENT_BYTES;
        assert!(device_space_allows(reserve + 4096, 4096));
        assert!(!device_space_allows(reserve + 4095, 4096));
        assert!(!device_space_allows(0, 0));
    }
}
