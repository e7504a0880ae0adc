//! Janusd's measurements and defragmenters (Hahn et al., "Improving File System
//! Performance of Mobile Storage Systems Using a Decoupled Defragmenter", ATC '17).
//!
//! - [`layout`]: extents, the degree of fragmentation (DoF), kind of file and app from a
//!   path.
//! - [`placement`]: where a logical block sits on the flash (plane, die, page), read
//!   through the FTL's read-only accessors.
//! - [`read`]: what a whole-file read costs — requests split at extent boundaries and at
//!   the block layer's largest request, host time per request, the device's own model
//!   for command overhead and plane parallelism.
//! - [`frag`]: all of it per file, per kind of file and per app (`flashstack fs frag`).
//! - [`policy`]: the defragmenters' pure per-file decisions ([`DefragMode`], [`choose`]).
//! - [`periodic`]: the periodic idle-time defragmentation policy (every N days).
//! - [`defrag`]: the pass that carries them out (copy now; janusdL's REMAP plugs in
//!   through [`LogicalDefrag`]) and counts data copied, NAND programs and erases, DoF
//!   before and after (`flashstack fs defrag`).
//!
//! `docs/janusd.md` gives the definitions, the read-cost calibration and its sources.

pub mod defrag;
mod error;
pub mod frag;
pub mod layout;
pub mod periodic;
pub mod placement;
pub mod policy;
pub mod read;

pub use defrag::{
    defragment, DefragCost, DefragOptions, DefragReport, FileOutcome, LogicalDefrag, Mechanisms,
    RemapDefrag, RemapOutcome, REMAP_CAPABILITY,
};
pub use error::JanusdError;
pub use frag::{measure, physical_of, FileFrag, FragReport, GroupFrag, PhysicalFrag};
pub use layout::{app_of, class_of, dof, extents_of, ideal_extents, DofStats, IDEAL_EXTENT_BLOCKS};
pub use periodic::PeriodicDefrag;
pub use placement::{FragDevice, PhysLoc, Placement};
pub use policy::{choose, collides, Action, DefragMode, JanusdPolicy};
pub use read::{requests, timed_read, ReadModel, ReadTiming};
