//! What reading a file costs. The model itself is the block layer's
//! ([`flashstack_block::read_model`]), the same one the stack's own read path uses
//! (`F2fs::read_pages`): requests split at extent boundaries and at the largest request,
//! host time per request, the device's own model for command overhead and plane
//! parallelism. `docs/janusd.md` gives the calibration on `ufs31` and each term's share.

pub use flashstack_block::{ReadModel, ReadTiming};

use flashstack_block::{BlockDevice, BlockError};
use flashstack_sim::Nanos;

use crate::layout::extent_list;

/// The block requests a whole-file read of `addrs` (page order) issues: (LBA, count),
/// split at extent boundaries and at the largest request.
pub fn requests(model: &ReadModel, addrs: &[u32]) -> Vec<(u64, u32)> {
    model.split(&extent_list(addrs))
}

/// Issues `requests` as the host would and times them; contents are not copied out.
pub fn timed_read<D: BlockDevice + ?Sized>(
    dev: &mut D,
    start_ns: Nanos,
    requests: &[(u64, u32)],
    model: &ReadModel,
) -> Result<ReadTiming, BlockError> {
    flashstack_block::timed_read(dev, start_ns, requests, model, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_split_at_extents_and_the_size_limit() {
        let m = ReadModel {
            max_request_bytes: 8192,
            ..ReadModel::default()
        };
        assert_eq!(
            requests(&m, &[10, 11, 12, 20, 0, 21]),
            vec![(10, 2), (12, 1), (20, 1), (21, 1)]
        );
        assert_eq!(
            requests(&ReadModel::default(), &(100..300).collect::<Vec<_>>()).len(),
            2
        );
    }
}
