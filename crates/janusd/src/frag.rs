//! Fragmentation measured per file and aggregated per kind of file and per app.
//!
//! Per file: extents and DoF ([`crate::layout`]), the block requests a whole-file read
//! needs ([`crate::read::requests`]), and — when the device underneath is known — where its
//! flash pages sit: how many parallel units (planes) and dies they use, and the *unit
//! depth*, the most pages of the file on one plane, against its ideal ⌈pages ÷ planes⌉.
//! `collision_ratio` = depth ÷ ideal depth (1: spread as well as it can be); the pages
//! above the ideal on each plane are `collided_pages`. With the device known, each file
//! is also read through the device model and timed ([`crate::read`]).

use std::collections::BTreeMap;

use flashstack_f2fs::{F2fs, FileKind, FsError};
use flashstack_sim::Nanos;
use serde::{Deserialize, Serialize};

use crate::error::JanusdError;
use crate::layout::{app_of, class_of, dof, extents_of, ideal_extents, DofStats};
use crate::placement::{FragDevice, Placement};
use crate::read::{timed_read, ReadModel};

/// Where one file's flash pages sit.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PhysicalFrag {
    /// Distinct flash pages holding the file's blocks.
    pub flash_pages: u64,
    /// Flash senses a whole-file read needs even when its LBAs are one extent: runs of
    /// the file's blocks (in page order) that follow each other within one flash page.
    /// A file written in many small pieces over time has its blocks in pages shared
    /// out of order, so a sequential read senses the same page again and again; only a
    /// copy that rewrites it in order brings this down to `flash_pages` (janusdL cannot).
    #[serde(default)]
    pub flash_reads: u64,
    /// The collision ratio within each window of [`WINDOW_BLOCKS`] blocks (128 KiB, a
    /// readahead window), averaged over the windows: a reader that waits for each window
    /// loses parallelism when a window's pages share planes, even where the whole file is
    /// spread evenly (its whole-file `collision_ratio` near 1).
    #[serde(default)]
    pub window_collision_ratio: f64,
    pub units_used: u32,
    /// Most flash pages of the file on one plane.
    pub unit_depth: u64,
    /// ⌈flash pages ÷ planes⌉.
    pub unit_depth_ideal: u64,
    /// `unit_depth ÷ unit_depth_ideal` (1.0: no collision beyond what the file's size
    /// forces).
    pub collision_ratio: f64,
    /// Pages above the ideal depth, summed over planes.
    pub collided_pages: u64,
    pub dies_used: u32,
    /// Most flash pages of the file on one die.
    pub die_depth: u64,
}

/// One regular file's fragmentation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FileFrag {
    pub path: String,
    pub class: String,
    pub app: String,
    pub ino: u32,
    /// Written blocks (holes not counted).
    pub blocks: u64,
    pub extents: u64,
    pub ideal_extents: u64,
    pub dof: f64,
    /// Block requests a whole-file read needs.
    pub block_ios: u64,
    /// Block requests the file would need laid out contiguously.
    pub block_ios_ideal: u64,
    /// `None` without a device (a plain image).
    pub physical: Option<PhysicalFrag>,
    /// A whole-file read through the device model (`None` without a device).
    pub read_ns: Option<Nanos>,
}

impl FileFrag {
    /// From the file's block addresses (page order).
    pub fn of(path: &str, ino: u32, addrs: &[u32], model: &ReadModel) -> FileFrag {
        let (blocks, extents) = extents_of(addrs);
        FileFrag {
            path: path.to_string(),
            class: class_of(path).to_string(),
            app: app_of(path),
            ino,
            blocks,
            extents,
            ideal_extents: ideal_extents(blocks),
            dof: dof(blocks, extents),
            block_ios: crate::read::requests(model, addrs).len() as u64,
            block_ios_ideal: blocks.div_ceil(model.max_request_blocks() as u64),
            physical: None,
            read_ns: None,
        }
    }
}

/// Where `addrs` sit on the device.
pub fn physical_of(addrs: &[u32], placement: &Placement<'_>) -> PhysicalFrag {
    let mut pages: Vec<_> = addrs
        .iter()
        .filter(|&&a| a != 0 && a != u32::MAX)
        .filter_map(|&a| placement.locate(a as u64))
        .collect();
    let flash_reads = flash_reads(&pages);
    let window_collision_ratio = window_collisions(&pages, placement.units);
    pages.sort_unstable();
    pages.dedup_by_key(|p| p.flash_page);
    let mut per_unit = vec![0u64; placement.units as usize];
    let mut per_die = vec![0u64; placement.dies as usize];
    for p in &pages {
        per_unit[p.unit as usize] += 1;
        per_die[p.die as usize] += 1;
    }
    let flash_pages = pages.len() as u64;
    let ideal = flash_pages.div_ceil(placement.units as u64).max(1);
    let depth = per_unit.iter().copied().max().unwrap_or(0);
    PhysicalFrag {
        flash_pages,
        flash_reads,
        window_collision_ratio,
        units_used: per_unit.iter().filter(|&&n| n > 0).count() as u32,
        unit_depth: depth,
        unit_depth_ideal: ideal,
        collision_ratio: if flash_pages == 0 {
            1.0
        } else {
            depth as f64 / ideal as f64
        },
        collided_pages: per_unit.iter().map(|&n| n.saturating_sub(ideal)).sum(),
        dies_used: per_die.iter().filter(|&&n| n > 0).count() as u32,
        die_depth: per_die.iter().copied().max().unwrap_or(0),
    }
}

/// Senses of a read of `locs` (page order): a new one wherever a block is not in the
/// previous block's flash page at a later slot.
fn flash_reads(locs: &[crate::placement::PhysLoc]) -> u64 {
    let mut reads = 0;
    let mut prev: Option<&crate::placement::PhysLoc> = None;
    for l in locs {
        if !prev.is_some_and(|p| p.flash_page == l.flash_page && p.slot < l.slot) {
            reads += 1;
        }
        prev = Some(l);
    }
    reads
}

/// Blocks of one read window (128 KiB: Linux's default readahead).
pub const WINDOW_BLOCKS: usize = 32;

/// Mean over windows of [`WINDOW_BLOCKS`] blocks (page order) of the window's deepest
/// plane ÷ ⌈its flash pages ÷ planes⌉ (1.0 for an empty list).
fn window_collisions(locs: &[crate::placement::PhysLoc], units: u32) -> f64 {
    let ratios: Vec<f64> = locs
        .chunks(WINDOW_BLOCKS)
        .map(|w| {
            let mut pages: Vec<(u32, u32)> = w.iter().map(|l| (l.unit, l.flash_page)).collect();
            pages.sort_unstable();
            pages.dedup();
            let mut depth = std::collections::BTreeMap::<u32, u64>::new();
            for (unit, _) in &pages {
                *depth.entry(*unit).or_default() += 1;
            }
            let ideal = (pages.len() as u64).div_ceil(units.max(1) as u64).max(1);
            *depth.values().max().unwrap_or(&0) as f64 / ideal as f64
        })
        .collect();
    if ratios.is_empty() {
        1.0
    } else {
        ratios.iter().sum::<f64>() / ratios.len() as f64
    }
}

/// Figures of a group of files.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupFrag {
    pub files: u64,
    pub blocks: u64,
    pub extents_mean: f64,
    pub dof_mean: f64,
    pub dof_p50: f64,
    pub dof_p90: f64,
    pub dof_max: f64,
    /// Share of files with DoF above 1.
    pub fragmented_share: f64,
    pub block_ios: u64,
    pub block_ios_ideal: u64,
    /// Mean collision ratio and the share of files with a ratio of 2 or more (`None`
    /// without a device).
    pub collision_ratio_mean: Option<f64>,
    pub colliding_share: Option<f64>,
    /// Sum of whole-file read times (`None` without a device).
    pub read_ns: Option<Nanos>,
}

impl GroupFrag {
    pub fn of(files: &[&FileFrag]) -> GroupFrag {
        if files.is_empty() {
            return GroupFrag::default();
        }
        let n = files.len() as f64;
        let d = DofStats::of(files.iter().map(|f| f.dof).collect());
        let phys: Vec<&PhysicalFrag> = files.iter().filter_map(|f| f.physical.as_ref()).collect();
        let with_phys = !phys.is_empty();
        GroupFrag {
            files: files.len() as u64,
            blocks: files.iter().map(|f| f.blocks).sum(),
            extents_mean: files.iter().map(|f| f.extents as f64).sum::<f64>() / n,
            dof_mean: d.mean,
            dof_p50: d.p50,
            dof_p90: d.p90,
            dof_max: d.max,
            fragmented_share: d.fragmented_share,
            block_ios: files.iter().map(|f| f.block_ios).sum(),
            block_ios_ideal: files.iter().map(|f| f.block_ios_ideal).sum(),
            collision_ratio_mean: with_phys
                .then(|| phys.iter().map(|p| p.collision_ratio).sum::<f64>() / phys.len() as f64),
            colliding_share: with_phys.then(|| {
                phys.iter().filter(|p| p.collision_ratio >= 2.0).count() as f64 / phys.len() as f64
            }),
            read_ns: files.iter().map(|f| f.read_ns).sum(),
        }
    }
}

/// The fragmentation of a file system's files (under a path).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FragReport {
    /// The path measured (a file or a directory tree).
    pub path: String,
    pub model: ReadModel,
    /// Parallel units (planes) and dies of the device (`None`: a plain image).
    pub units: Option<u32>,
    pub dies: Option<u32>,
    /// The longest run of free segments, in blocks: the largest extent F2FS could lay
    /// down now.
    pub longest_free_run_blocks: u64,
    pub all: GroupFrag,
    pub by_class: BTreeMap<String, GroupFrag>,
    pub by_app: BTreeMap<String, GroupFrag>,
    /// Every file holding blocks, by path.
    pub files: Vec<FileFrag>,
}

/// Regular files under `path` (the file itself if it is one): (path, ino), by path.
pub fn regular_files<D: flashstack_block::BlockDevice>(
    fs: &mut F2fs<D>,
    path: &str,
) -> Result<Vec<(String, u32)>, FsError> {
    let ino = fs.lookup(path)?;
    let mut files = Vec::new();
    match fs.stat_ino(ino)?.kind {
        FileKind::File => files.push((path.to_string(), ino)),
        FileKind::Dir => walk(fs, path, ino, &mut files)?,
        _ => {}
    }
    files.sort();
    Ok(files)
}

fn walk<D: flashstack_block::BlockDevice>(
    fs: &mut F2fs<D>,
    root: &str,
    ino: u32,
    files: &mut Vec<(String, u32)>,
) -> Result<(), FsError> {
    let mut stack = vec![(root.trim_end_matches('/').to_string(), ino)];
    while let Some((dir, ino)) = stack.pop() {
        for e in fs.readdir_ino(ino)? {
            let child = format!("{dir}/{}", e.name);
            match e.kind {
                FileKind::Dir => stack.push((child, e.ino)),
                FileKind::File => files.push((child, e.ino)),
                _ => {}
            }
        }
    }
    Ok(())
}

/// Measures every file under `path`: layouts from F2FS, placement and read times from the
/// device when it has an FTL. Reads are timed from the moment the device goes idle, one
/// file after another (no idle gap, so no background GC starts between them); they move
/// the device's and the file system's clocks and the read counters but change no data.
pub fn measure<D: FragDevice>(
    fs: &mut F2fs<D>,
    path: &str,
    model: &ReadModel,
) -> Result<FragReport, JanusdError> {
    let mut files = Vec::new();
    for (p, ino) in regular_files(fs, path)? {
        let addrs = fs.file_block_addrs(ino)?;
        let mut f = FileFrag::of(&p, ino, &addrs, model);
        if f.blocks == 0 {
            continue;
        }
        if let Some(ftl) = fs.device().ftl() {
            f.physical = Some(physical_of(&addrs, &Placement::of(ftl)));
        }
        let now = fs.now_ns();
        if let Some(ftl) = fs.device_mut().ftl_mut() {
            let start = ftl.busy_until_ns().max(ftl.last_arrival_ns()).max(now);
            let t = timed_read(ftl, start, &crate::read::requests(model, &addrs), model).map_err(
                |source| JanusdError::Read {
                    path: p.clone(),
                    source,
                },
            )?;
            f.read_ns = Some(t.elapsed_ns);
            let idle = ftl.busy_until_ns();
            // The file system's next request must not arrive before the reads did.
            fs.advance_to(idle);
        }
        files.push(f);
    }
    let (units, dies) = match fs.device().ftl() {
        Some(ftl) => {
            let p = Placement::of(ftl);
            (Some(p.units), Some(p.dies))
        }
        None => (None, None),
    };
    Ok(FragReport {
        path: path.to_string(),
        model: model.clone(),
        units,
        dies,
        longest_free_run_blocks: fs.longest_free_run_blocks(),
        all: GroupFrag::of(&files.iter().collect::<Vec<_>>()),
        by_class: group_by(&files, |f| f.class.clone()),
        by_app: group_by(&files, |f| f.app.clone()),
        files,
    })
}

fn group_by(files: &[FileFrag], key: impl Fn(&FileFrag) -> String) -> BTreeMap<String, GroupFrag> {
    let mut groups: BTreeMap<String, Vec<&FileFrag>> = BTreeMap::new();
    for f in files {
        groups.entry(key(f)).or_default().push(f);
    }
    groups
        .into_iter()
        .map(|(k, v)| (k, GroupFrag::of(&v)))
        .collect()
}
