//! The assembled stack: a page cache ([`flashstack_cache::PageCache`]) over F2FS
//! ([`flashstack_f2fs::F2fs`]) over the FTL and NAND, behind [`flashstack_sqlvfs::FileApi`].
//!
//! Time rule: every call carries the virtual time it is issued at; each layer is advanced to
//! that time, runs the operation, and hands its completion time back up.

mod backing;
mod config;
pub mod energy_log;
pub mod image_ftl;
mod stack;
/// The stack's state over simulated time (shared with the device-only replay).
pub use flashstack_sim::timeline;

pub use backing::F2fsBacking;
pub use config::{ConfigError, StackConfig};
pub use stack::{app_name, Device, OpMetrics, SharedStack, Stack, StackError, StackMetrics};
