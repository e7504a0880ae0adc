//! Simulated time, `busy_until` resources, the one seeded PRNG, latency histograms and units.
//!
//! Nothing in this crate reads the wall clock or the operating system's randomness: every
//! figure a flashstack run prints is a function of its inputs and its seed.

pub mod activity;
pub mod divisor;
pub mod histogram;
pub mod intervals;
pub mod memory;
pub mod resource;
pub mod rng;
pub mod sparse;
pub mod text;
pub mod timeline;
pub mod units;

pub use activity::ActivityLog;
pub use divisor::Divisor;
pub use histogram::{LatencyHistogram, LatencySummary, CDF_QUANTILES};
pub use intervals::IntervalResource;
pub use resource::Resource;
pub use rng::Rng;

/// Virtual time in nanoseconds since the start of a run.
pub type Nanos = u64;

pub const NS_PER_US: u64 = 1_000;
pub const NS_PER_MS: u64 = 1_000_000;
pub const NS_PER_SEC: u64 = 1_000_000_000;
