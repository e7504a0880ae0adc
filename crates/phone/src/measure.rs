//! The state of a phone, measured: utilisation and free segments of F2FS, the
//! fragmentation of its files (extents per file and the degree of fragmentation, DoF =
//! extents ÷ ideal extents, as Janusd defines it), and the device's valid-page and
//! erase-count distributions.
//!
//! An extent is a run of consecutive block addresses of a file's consecutive pages. The
//! ideal number of extents is ⌈size / 128 MiB⌉, the bound of ext4's largest extent, the
//! measure's original setting (Ji et al., HotStorage '16; Janusd, ATC '17): F2FS's own
//! extents have no smaller bound, so a file of under 128 MiB is ideally one extent and
//! its DoF is its number of extents.

use std::collections::BTreeMap;

use flashstack_f2fs::{F2fs, FileKind, FsError};
use flashstack_ftl::Ftl;
use serde::{Deserialize, Serialize};

pub use flashstack_janusd::{class_of, extents_of};

/// One regular file's layout.
#[derive(Clone, Debug, PartialEq)]
pub struct FileLayout {
    pub path: String,
    pub blocks: u64,
    pub extents: u64,
}

impl FileLayout {
    /// Extents ÷ ideal extents (1.0: as contiguous as it can be).
    pub fn dof(&self) -> f64 {
        flashstack_janusd::dof(self.blocks, self.extents)
    }
}

/// Fragmentation of one class of files.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClassFragmentation {
    pub files: u64,
    pub blocks: u64,
    pub extents_mean: f64,
    pub dof_mean: f64,
    pub dof_p50: f64,
    pub dof_p90: f64,
    pub dof_max: f64,
    /// Share of files with DoF above 1.
    pub fragmented_share: f64,
}

impl ClassFragmentation {
    fn of(files: &[&FileLayout]) -> ClassFragmentation {
        if files.is_empty() {
            return ClassFragmentation::default();
        }
        let n = files.len() as f64;
        let d = flashstack_janusd::DofStats::of(files.iter().map(|f| f.dof()).collect());
        ClassFragmentation {
            files: files.len() as u64,
            blocks: files.iter().map(|f| f.blocks).sum(),
            extents_mean: files.iter().map(|f| f.extents as f64).sum::<f64>() / n,
            dof_mean: d.mean,
            dof_p50: d.p50,
            dof_p90: d.p90,
            dof_max: d.max,
            fragmented_share: d.fragmented_share,
        }
    }
}

/// The file system's state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FsState {
    /// Valid blocks ÷ user blocks.
    pub utilization: f64,
    pub valid_blocks: u64,
    pub user_blocks: u64,
    pub free_segments: u32,
    pub main_segments: u32,
    pub files: u64,
    pub directories: u64,
    /// Mean DoF over every file holding blocks.
    pub dof_mean: f64,
    pub extents_per_file_mean: f64,
    /// Per class of file (see [`class_of`]).
    pub classes: BTreeMap<String, ClassFragmentation>,
}

/// The device's state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceState {
    /// Flash blocks by share of valid slots: bucket i counts blocks with a valid share in
    /// [i/10, (i+1)/10) (bucket 10: completely valid).
    pub valid_share_histogram: Vec<u64>,
    pub blocks_free: u64,
    pub erase_count_min: u32,
    pub erase_count_mean: f64,
    pub erase_count_max: u32,
    /// Blocks by erase count (index = count, the last bucket gathers the rest).
    pub erase_count_histogram: Vec<u64>,
    /// Mapped LBAs ÷ user LBAs.
    pub mapped_share: f64,
    /// Flash pages programmed while aging ÷ raw pages.
    pub turnover: f64,
    /// Programs ÷ host writes while aging.
    pub write_amplification: f64,
}

/// Walks every file of the file system (sync the stack first).
pub fn file_layouts<D: flashstack_block::BlockDevice>(
    fs: &mut F2fs<D>,
) -> Result<(Vec<FileLayout>, u64), FsError> {
    let mut files = Vec::new();
    let mut dirs = 0u64;
    let mut stack = vec![("/".to_string(), fs.lookup("/")?)];
    while let Some((path, ino)) = stack.pop() {
        dirs += 1;
        for e in fs.readdir_ino(ino)? {
            let child = if path == "/" {
                format!("/{}", e.name)
            } else {
                format!("{path}/{}", e.name)
            };
            match e.kind {
                FileKind::Dir => stack.push((child, e.ino)),
                FileKind::File => {
                    let (blocks, extents) = extents_of(&fs.file_block_addrs(e.ino)?);
                    files.push(FileLayout {
                        path: child,
                        blocks,
                        extents,
                    });
                }
                _ => {}
            }
        }
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok((files, dirs))
}

/// The file system's state from its files and space.
pub fn fs_state<D: flashstack_block::BlockDevice>(fs: &mut F2fs<D>) -> Result<FsState, FsError> {
    let usage = fs.block_usage();
    let (files, dirs) = file_layouts(fs)?;
    let with_blocks: Vec<&FileLayout> = files.iter().filter(|f| f.blocks > 0).collect();
    let mut by_class: BTreeMap<&str, Vec<&FileLayout>> = BTreeMap::new();
    for f in &with_blocks {
        by_class.entry(class_of(&f.path)).or_default().push(f);
    }
    let all = ClassFragmentation::of(&with_blocks);
    Ok(FsState {
        utilization: usage.valid_blocks as f64 / usage.user_blocks.max(1) as f64,
        valid_blocks: usage.valid_blocks,
        user_blocks: usage.user_blocks,
        free_segments: usage.free_segments,
        main_segments: usage.main_segments,
        files: files.len() as u64,
        directories: dirs,
        dof_mean: all.dof_mean,
        extents_per_file_mean: all.extents_mean,
        classes: by_class
            .into_iter()
            .map(|(k, v)| (k.to_string(), ClassFragmentation::of(&v)))
            .collect(),
    })
}

/// The device's state.
pub fn device_state(ftl: &Ftl) -> DeviceState {
    let per_block = ftl.slots_per_block() as u64;
    let nand = ftl.nand();
    let blocks = nand.erase_counts().len();
    let mut valid = vec![0u64; 11];
    let mut free = 0;
    for (b, &v) in ftl.valid_slots_per_block().iter().enumerate() {
        if nand.is_bad(b as u32) {
            continue;
        }
        if nand.programmed_pages(b as u32) == 0 {
            free += 1;
            continue;
        }
        valid[(v as u64 * 10 / per_block.max(1)).min(10) as usize] += 1;
    }
    let erases = nand.erase_counts();
    let max = erases.iter().copied().max().unwrap_or(0);
    let mut hist = vec![0u64; (max as usize + 1).min(64)];
    let last = hist.len() - 1;
    for &e in erases {
        hist[(e as usize).min(last)] += 1;
    }
    let c = ftl.counters();
    let user_lbas = ftl.user_capacity_bytes() / 4096;
    let mapped = ftl.mapping().iter().filter(|&s| s != u32::MAX).count() as u64;
    DeviceState {
        valid_share_histogram: valid,
        blocks_free: free,
        erase_count_min: erases.iter().copied().min().unwrap_or(0),
        erase_count_mean: erases.iter().map(|&e| e as f64).sum::<f64>() / blocks.max(1) as f64,
        erase_count_max: max,
        erase_count_histogram: hist,
        mapped_share: mapped as f64 / user_lbas.max(1) as f64,
        turnover: c.page_programs as f64 / ftl.config().nand.geometry.pages().max(1) as f64,
        write_amplification: write_amplification(
            c.page_programs,
            ftl.config().nand.geometry.page_size_bytes,
            c.host_write_lbas,
        ),
    }
}

/// Flash bytes programmed ÷ host bytes written: each program writes a whole flash page,
/// whatever the mapping's slot size (counting 512-byte slots as 4 KiB LBAs made a PM
/// device's WA read 8× too high).
fn write_amplification(page_programs: u64, page_size_bytes: u32, host_write_lbas: u64) -> f64 {
    page_programs as f64 * page_size_bytes as f64 / 4096.0 / host_write_lbas.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_amplification_counts_flash_pages_not_slots() {
        // 100 programs of 4 KiB pages for 100 host LBAs, whatever the slot size.
        assert_eq!(write_amplification(100, 4096, 100), 1.0);
        // 16 KiB pages hold four LBAs each.
        assert_eq!(write_amplification(100, 16_384, 400), 1.0);
    }

    #[test]
    fn dof_is_extents_over_ideal_extents() {
        let f = FileLayout {
            path: "x".into(),
            blocks: 65_536,
            extents: 4,
        };
        assert_eq!(f.dof(), 2.0);
    }
}
