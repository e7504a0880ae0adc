//! Which files a defragmenter takes, and how: pure decisions from a file's measured
//! fragmentation ([`FileFrag`]) and a named, configurable policy.

use serde::{Deserialize, Serialize};

use crate::frag::FileFrag;

/// The defragmenters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DefragMode {
    /// The conventional baseline (F2FS's defragment ioctl, e4defrag): every logically
    /// fragmented file is read and written again contiguously.
    Copy,
    /// janusdP: copies only files whose pages collide on the same parallel unit.
    Physical,
    /// janusdL: remaps fragmented files' blocks to a contiguous LBA range inside the
    /// FTL (REMAP), no data copies.
    Logical,
    /// janusd: per file, P for colliding files, L for the other fragmented ones.
    Janusd,
}

impl DefragMode {
    pub fn name(self) -> &'static str {
        match self {
            DefragMode::Copy => "copy",
            DefragMode::Physical => "P",
            DefragMode::Logical => "L",
            DefragMode::Janusd => "janusd",
        }
    }

    /// Whether the mode may choose REMAP for a file.
    pub fn may_remap(self) -> bool {
        matches!(self, DefragMode::Logical | DefragMode::Janusd)
    }

    /// Whether the mode chooses by physical placement (needs the device's mapping).
    pub fn needs_placement(self) -> bool {
        matches!(self, DefragMode::Physical | DefragMode::Janusd)
    }
}

/// What to do with one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Skip,
    /// Read and write again (the copy mechanism).
    Copy,
    /// Remap in the FTL (the logical mechanism).
    Remap,
}

/// The thresholds janusd decides by (`[defrag]` in a config, serde/TOML).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct JanusdPolicy {
    /// A file with a DoF above this is logically fragmented (1.0: any file in more pieces
    /// than its ideal).
    pub dof_min: f64,
    /// A file whose unit depth is at least this many times its ideal collides: its reads
    /// lose at least half the device's parallelism.
    pub collision_ratio_min: f64,
    /// Files with fewer flash pages are never copied for collisions (a page or two on one
    /// plane is no loss worth a copy).
    pub flash_pages_min: u64,
}

impl Default for JanusdPolicy {
    fn default() -> Self {
        JanusdPolicy {
            dof_min: 1.0,
            collision_ratio_min: 2.0,
            flash_pages_min: 4,
        }
    }
}

/// Whether `f`'s pages collide on a parallel unit (false without placement).
pub fn collides(f: &FileFrag, p: &JanusdPolicy) -> bool {
    f.physical.as_ref().is_some_and(|ph| {
        ph.flash_pages >= p.flash_pages_min && ph.collision_ratio >= p.collision_ratio_min
    })
}

/// The decision for one file.
pub fn choose(mode: DefragMode, f: &FileFrag, p: &JanusdPolicy) -> Action {
    let fragmented = f.dof > p.dof_min;
    match mode {
        DefragMode::Copy if fragmented => Action::Copy,
        DefragMode::Physical if collides(f, p) => Action::Copy,
        DefragMode::Logical if fragmented => Action::Remap,
        DefragMode::Janusd if collides(f, p) => Action::Copy,
        DefragMode::Janusd if fragmented => Action::Remap,
        _ => Action::Skip,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frag::PhysicalFrag;
    use crate::read::ReadModel;

    fn file(extents: u32, ratio: f64) -> FileFrag {
        let addrs: Vec<u32> = (0..extents).map(|i| 100 + 2 * i).collect();
        let mut f = FileFrag::of(
            "/data/data/a/databases/x.db",
            5,
            &addrs,
            &ReadModel::default(),
        );
        f.physical = Some(PhysicalFrag {
            flash_pages: 8,
            collision_ratio: ratio,
            ..PhysicalFrag::default()
        });
        f
    }

    #[test]
    fn each_mode_takes_its_files() {
        let p = JanusdPolicy::default();
        let (contiguous, scattered, colliding) = (file(1, 1.0), file(6, 1.0), file(6, 4.0));
        assert_eq!(choose(DefragMode::Copy, &contiguous, &p), Action::Skip);
        assert_eq!(choose(DefragMode::Copy, &scattered, &p), Action::Copy);
        assert_eq!(choose(DefragMode::Physical, &scattered, &p), Action::Skip);
        assert_eq!(choose(DefragMode::Physical, &colliding, &p), Action::Copy);
        assert_eq!(choose(DefragMode::Logical, &colliding, &p), Action::Remap);
        assert_eq!(choose(DefragMode::Janusd, &scattered, &p), Action::Remap);
        assert_eq!(choose(DefragMode::Janusd, &colliding, &p), Action::Copy);
        assert_eq!(choose(DefragMode::Janusd, &contiguous, &p), Action::Skip);
        let mut few = colliding.clone();
        few.physical.as_mut().unwrap().flash_pages = 2;
        assert_eq!(choose(DefragMode::Physical, &few, &p), Action::Skip);
    }
}
