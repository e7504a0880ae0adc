//! Where every area goes for a device of a given size, following mkfs.f2fs 1.15
//! (`f2fs_prepare_super_block`, `get_best_overprovision` and the reserved/overprovision
//! arithmetic of `f2fs_write_check_point_pack` in f2fs-tools `mkfs/f2fs_format.c` and
//! `include/f2fs_fs.h`), for one device with 1-segment sections and zones.
//!
//! Note: f2fs-tools 1.16 changed the reserved-segment formula (it dropped the factor 2),
//! so its images of the same size reserve fewer segments; 1.15 is what Debian ships and
//! what the tests compare against byte for byte.

use serde::Serialize;

use crate::consts::*;
use crate::error::F2fsError;

/// Log indices (`CURSEG_*`): the order of `Layout::cursegs` and of SIT log types.
pub const CURSEG_HOT_DATA: usize = 0;
pub const CURSEG_WARM_DATA: usize = 1;
pub const CURSEG_COLD_DATA: usize = 2;
pub const CURSEG_HOT_NODE: usize = 3;
pub const CURSEG_WARM_NODE: usize = 4;
pub const CURSEG_COLD_NODE: usize = 5;

/// The geometry of a freshly formatted volume. Block addresses are 4 KiB device blocks;
/// segment numbers (`cursegs`) count from the start of the main area.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Layout {
    pub sector_size: u32,
    /// Blocks of the device (`block_count` in the superblock).
    pub block_count: u64,
    pub segment0_blkaddr: u32,
    pub segment_count: u32,
    pub segment_count_ckpt: u32,
    pub segment_count_sit: u32,
    pub segment_count_nat: u32,
    pub segment_count_ssa: u32,
    pub segment_count_main: u32,
    pub section_count: u32,
    pub cp_blkaddr: u32,
    pub sit_blkaddr: u32,
    pub nat_blkaddr: u32,
    pub ssa_blkaddr: u32,
    pub main_blkaddr: u32,
    /// Extra CP blocks holding the SIT version bitmap when it outgrows the CP block.
    pub cp_payload: u32,
    /// Size of one SIT / NAT version bitmap in the checkpoint.
    pub sit_bitmap_bytes: u32,
    pub nat_bitmap_bytes: u32,
    /// Overprovision ratio in percent (given, or mkfs's best for this size).
    pub overprovision: f64,
    /// Segments kept free for cleaning (`rsvd_segment_count`).
    pub reserved_segments: u32,
    /// Segments hidden from users, reserved ones included (`overprov_segment_count`).
    pub overprov_segments: u32,
    /// Free main-area segments once the six logs have each taken one.
    pub free_segments: u32,
    pub user_block_count: u64,
    /// First segment of each log, indexed by `CURSEG_*`.
    pub cursegs: [u32; NR_CURSEG_TYPE],
}

/// Bytes the superblock zone takes before segment 0: two superblock blocks rounded up to
/// a zone (`zone_align_start_offset` with start sector 0).
const ZONE_BYTES: u64 = BLOCK_SIZE as u64 * BLOCKS_PER_SEG as u64;

/// `MAX_SIT_BITMAP_SIZE`: the SIT version bitmap of the largest possible volume.
const MAX_SIT_BITMAP_SIZE: u32 = MAX_SEGMENTS
    .div_ceil(SIT_ENTRY_PER_BLOCK)
    .div_ceil(BLOCKS_PER_SEG)
    * BLOCKS_PER_SEG
    / 8;

impl Layout {
    /// Lays out a device of `bytes` bytes with `sector_size`-byte sectors (512 as mkfs.f2fs
    /// uses for image files, or 4096), with an overprovision ratio in percent (None: the
    /// ratio mkfs.f2fs picks).
    pub fn compute(
        bytes: u64,
        sector_size: u32,
        overprovision: Option<f64>,
    ) -> Result<Layout, F2fsError> {
        check_sector_size(sector_size)?;
        let too_small = |reason: &str| F2fsError::DeviceTooSmall {
            bytes,
            reason: reason.to_string(),
        };
        let segments = bytes.saturating_sub(ZONE_BYTES) / ZONE_BYTES;
        if bytes < ZONE_BYTES || segments < MIN_SEGMENTS as u64 {
            return Err(too_small(
                "fewer than 9 segments of 2 MiB after the superblock zone",
            ));
        }
        let segment_count = segments.min(MAX_SEGMENTS as u64) as u32;
        let mut layout = Layout::areas(bytes, sector_size, segment_count);
        if layout.section_count <= NR_CURSEG_TYPE as u32 {
            return Err(too_small("the main area needs more than 6 sections"));
        }
        layout.set_overprovision(overprovision)?;
        layout.cursegs = initial_cursegs(layout.section_count);
        Ok(layout)
    }

    /// Sizes and start addresses of the CP, SIT, NAT, SSA and main areas.
    fn areas(bytes: u64, sector_size: u32, segment_count: u32) -> Layout {
        let segment0 = (ZONE_BYTES / BLOCK_SIZE as u64) as u32;
        let sit_segs = segment_count
            .div_ceil(SIT_ENTRY_PER_BLOCK)
            .div_ceil(BLOCKS_PER_SEG);
        let segment_count_sit = sit_segs * 2;
        let after_sit = segment_count - CP_PACKS - segment_count_sit;
        let (nat_segs, cp_payload, sit_bitmap_bytes) = nat_and_payload(after_sit, sit_segs);
        let segment_count_nat = nat_segs * 2;
        let main_and_ssa = after_sit.saturating_sub(segment_count_nat);
        // One summary block per remaining segment, plus one.
        let segment_count_ssa = (main_and_ssa + 1).div_ceil(BLOCKS_PER_SEG);
        let meta = CP_PACKS + segment_count_sit + segment_count_nat + segment_count_ssa;
        let at = |segs: u32| segment0 + segs * BLOCKS_PER_SEG;
        let main_segments = segment_count.saturating_sub(meta);
        Layout {
            sector_size,
            block_count: bytes / BLOCK_SIZE as u64,
            segment0_blkaddr: segment0,
            segment_count,
            segment_count_ckpt: CP_PACKS,
            segment_count_sit,
            segment_count_nat,
            segment_count_ssa,
            segment_count_main: main_segments,
            section_count: main_segments / SEGS_PER_SEC,
            cp_blkaddr: segment0,
            sit_blkaddr: at(CP_PACKS),
            nat_blkaddr: at(CP_PACKS + segment_count_sit),
            ssa_blkaddr: at(CP_PACKS + segment_count_sit + segment_count_nat),
            main_blkaddr: at(meta),
            cp_payload,
            sit_bitmap_bytes,
            nat_bitmap_bytes: (nat_segs << LOG_BLOCKS_PER_SEG) / 8,
            overprovision: 0.0,
            reserved_segments: 0,
            overprov_segments: 0,
            free_segments: 0,
            user_block_count: 0,
            cursegs: [0; NR_CURSEG_TYPE],
        }
    }

    /// Reserved and overprovision segments and what is left for users.
    fn set_overprovision(&mut self, requested: Option<f64>) -> Result<(), F2fsError> {
        let main = self.segment_count_main;
        let ovp = match requested {
            Some(r) if r > 0.0 && r < 100.0 => r,
            Some(r) => {
                return Err(F2fsError::InvalidOption {
                    name: "overprovision",
                    reason: format!("{r}% is not in (0, 100)"),
                })
            }
            None => best_overprovision(main),
        };
        let reserved = reserved_segments(ovp);
        let too_small = |reason: String| F2fsError::DeviceTooSmall {
            bytes: self.block_count * BLOCK_SIZE as u64,
            reason,
        };
        if ovp <= 0.0 || main - (NR_CURSEG_TYPE as u32) < reserved {
            let why = format!("{main} main segments cannot hold {reserved} reserved + 6 logs");
            return Err(too_small(why));
        }
        // Truncations as mkfs's double → __le32 assignments make them.
        let overprov = ((main - reserved) as f64 * ovp / 100.0) as u32 + reserved;
        if main <= overprov {
            let why = format!("{overprov} overprovision segments leave none of {main} for users");
            return Err(too_small(why));
        }
        self.overprovision = ovp;
        self.reserved_segments = reserved;
        self.overprov_segments = overprov;
        self.free_segments = main - NR_CURSEG_TYPE as u32;
        self.user_block_count = (main - overprov) as u64 * BLOCKS_PER_SEG as u64;
        Ok(())
    }

    /// Blocks of the NAT bits record at the end of the CP segment, if it fits after a pack
    /// of `pack_blocks` blocks (`CP_NAT_BITS_FLAG`).
    pub fn nat_bits_blocks(&self, pack_blocks: u32) -> Option<u32> {
        let (_, blocks) = crate::checkpoint::NatBits::size(self.segment_count_nat);
        (pack_blocks <= BLOCKS_PER_SEG - blocks).then_some(blocks)
    }

    /// First block of main-area segment `segno`.
    pub fn seg_blkaddr(&self, segno: u32) -> u32 {
        self.main_blkaddr + segno * BLOCKS_PER_SEG
    }

    /// First block of log `curseg`'s current segment.
    pub fn curseg_blkaddr(&self, curseg: usize) -> u32 {
        self.seg_blkaddr(self.cursegs[curseg])
    }
}

fn check_sector_size(sector_size: u32) -> Result<(), F2fsError> {
    let ok = sector_size.is_power_of_two()
        && (1 << MIN_LOG_SECTOR_SIZE..=1 << MAX_LOG_SECTOR_SIZE).contains(&sector_size);
    if ok {
        return Ok(());
    }
    Err(F2fsError::InvalidOption {
        name: "sector_size",
        reason: format!("{sector_size} is not 512, 1024, 2048 or 4096"),
    })
}

/// NAT segments per copy, CP payload blocks and SIT bitmap bytes. The NAT is sized for
/// every block after the SIT but capped so both version bitmaps fit in the CP block; a SIT
/// bitmap too large for it moves to payload blocks and the NAT gets the whole block.
fn nat_and_payload(blocks_after_sit_in_segs: u32, sit_segs: u32) -> (u32, u32, u32) {
    let blocks = blocks_after_sit_in_segs as u64 * BLOCKS_PER_SEG as u64;
    let wanted = blocks
        .div_ceil(NAT_ENTRY_PER_BLOCK as u64)
        .div_ceil(BLOCKS_PER_SEG as u64);
    let sit_bitmap = (sit_segs << LOG_BLOCKS_PER_SEG) / 8;
    let sit_in_ckpt = sit_bitmap.min(MAX_SIT_BITMAP_SIZE);
    let (nat_room, payload) = if sit_in_ckpt > MAX_SIT_BITMAP_SIZE_IN_CKPT {
        let payload = (sit_in_ckpt as usize).div_ceil(BLOCK_SIZE) as u32;
        (MAX_BITMAP_SIZE_IN_CKPT, payload)
    } else {
        (MAX_BITMAP_SIZE_IN_CKPT - sit_in_ckpt, 0)
    };
    let max_nat_segs = (nat_room * 8) >> LOG_BLOCKS_PER_SEG;
    (wanted.min(max_nat_segs as u64) as u32, payload, sit_bitmap)
}

/// `2 × (100/ovp + 1) + 6` segments per section, truncated as mkfs 1.15 stores it.
fn reserved_segments(ovp: f64) -> u32 {
    ((2.0 * (100.0 / ovp + 1.0) + NR_CURSEG_TYPE as f64) * SEGS_PER_SEC as f64) as u32
}

/// The ratio that leaves users the most space (`get_best_overprovision`): 10–95 % in 5 %
/// steps below 256 main segments, else 0.01–10 % in 0.01 % steps. The float arithmetic
/// is mkfs's, step for step, so the chosen ratio is bit-identical.
fn best_overprovision(main_segments: u32) -> f64 {
    let (mut candidate, end, step) = if main_segments < 256 {
        (10.0, 95.0, 5.0)
    } else {
        (0.01, 10.0, 0.01)
    };
    let main = main_segments as f64;
    let (mut best, mut best_space) = (0.0, 0.0);
    while candidate <= end {
        let reserved = (2.0 * (100.0 / candidate + 1.0) + NR_CURSEG_TYPE as f64) * 1.0;
        let ovp = (main - reserved) * candidate / 100.0;
        let space = main - reserved - ovp;
        if best_space < space {
            best_space = space;
            best = candidate;
        }
        candidate += step;
    }
    best
}

/// mkfs's default log placement: node logs in the first three segments, hot data next,
/// cold data from a quarter and warm data from half of the main area; all six reassigned
/// to 0..5 if any two collide (`verify_cur_segs`).
fn initial_cursegs(zones: u32) -> [u32; NR_CURSEG_TYPE] {
    let mut c = [0u32; NR_CURSEG_TYPE];
    c[CURSEG_HOT_NODE] = 0;
    c[CURSEG_WARM_NODE] = 1;
    c[CURSEG_COLD_NODE] = 2;
    c[CURSEG_HOT_DATA] = 3;
    c[CURSEG_COLD_DATA] = ((zones >> 2) - 1).max(c[CURSEG_HOT_DATA] + 1);
    c[CURSEG_WARM_DATA] = ((zones >> 1) - 1).max(c[CURSEG_COLD_DATA] + 1);
    let collide = (0..NR_CURSEG_TYPE).any(|i| (i + 1..NR_CURSEG_TYPE).any(|j| c[i] == c[j]));
    if collide {
        c = std::array::from_fn(|i| i as u32);
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    /// Ratio, overprovision and reserved segments mkfs.f2fs 1.15.0 printed for image files
    /// of these sizes ("Info: Overprovision ratio/segments").
    #[test]
    fn matches_mkfs_f2fs_1_15_choices() {
        let cases = [
            (64 * MIB, 35.0, 16, 13),
            (100 * MIB, 25.0, 22, 16),
            (256 * MIB, 15.0, 35, 21),
            (512 * MIB, 10.0, 50, 28),
            (1024 * MIB, 6.36, 68, 39),
            (4096 * MIB, 3.15, 132, 71),
            (16384 * MIB, 1.57, 260, 135),
            (65536 * MIB, 0.78, 516, 264),
        ];
        for (bytes, ovp, overprov, reserved) in cases {
            let l = Layout::compute(bytes, 512, None).unwrap();
            assert!(
                (l.overprovision - ovp).abs() < 0.004,
                "{bytes}: {}",
                l.overprovision
            );
            assert_eq!(
                (l.overprov_segments, l.reserved_segments),
                (overprov, reserved)
            );
        }
    }

    #[test]
    fn areas_tile_the_device() {
        let l = Layout::compute(64 * MIB, 512, None).unwrap();
        assert_eq!((l.segment0_blkaddr, l.segment_count), (512, 31));
        assert_eq!(
            (
                l.segment_count_sit,
                l.segment_count_nat,
                l.segment_count_ssa
            ),
            (2, 2, 1)
        );
        assert_eq!(l.main_blkaddr, 512 + 7 * 512);
        assert_eq!(l.segment_count_main, 24);
        assert_eq!(l.cursegs, [3, 11, 5, 0, 1, 2]);
        assert_eq!(l.user_block_count, (24 - 16) * 512);
    }

    #[test]
    fn too_small_devices_are_refused() {
        assert!(matches!(
            Layout::compute(40 * MIB, 512, None),
            Err(F2fsError::DeviceTooSmall { .. })
        ));
        assert!(matches!(
            Layout::compute(10 * MIB, 512, None),
            Err(F2fsError::DeviceTooSmall { .. })
        ));
        assert!(matches!(
            Layout::compute(64 * MIB, 1000, None),
            Err(F2fsError::InvalidOption { .. })
        ));
    }

    #[test]
    fn huge_sit_bitmaps_move_to_cp_payload() {
        // 4 TiB: 2,097,151 segments → 38,131 SIT blocks → 75 SIT segments per copy, whose
        // 4,800-byte bitmap no longer fits next to a 64-byte NAT bitmap.
        let l = Layout::compute(4 << 40, 4096, None).unwrap();
        assert_eq!(l.sit_bitmap_bytes, 75 * 512 / 8);
        assert_eq!(l.cp_payload, 2);
        assert_eq!(l.nat_bitmap_bytes, 60 * 512 / 8);
    }
}
