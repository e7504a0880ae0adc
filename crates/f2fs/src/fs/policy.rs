//! Policies: what the page cache tells the file system at writeback, and the named,
//! configurable decisions (temperature, in-place update, cleaning, checkpoints) the
//! mechanisms in the other modules carry out.

use serde::{Deserialize, Serialize};

/// What the page cache knows when it writes a file's pages back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteHint {
    /// Dirty pages the inode has in the page cache at this writeback (the kernel's
    /// `get_dirty_pages(inode)`).
    pub inode_dirty_pages: u64,
    /// The writeback comes from fsync/fdatasync (`FI_NEED_IPU`-style fsync path).
    pub fsync: bool,
}
