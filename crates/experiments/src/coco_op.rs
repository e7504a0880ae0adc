//! COCO's OP sweep on our own stack: F2FS's over-provisioning ratio against throughput
//! under random overwrites of a nearly full file system, and the knee beyond which more
//! OP brings nothing (the seed: performance peaks at 15 %). The knee found here is what
//! the COCO scheme of `reproduce coco` uses as on-demand allocation's growth threshold —
//! the seed's "offline analysis" — rather than the paper's 15 %.
//!
//! Each point: the engine-off `csd3000` drive (an ordinary SSD exporting its flash) of
//! the run's scale, mkfs with `-o` the requested ratio, files of 4 MiB written until F2FS's
//! valid blocks reach [`FILL_PERMILLE`] of the user capacity, then 16 KiB random
//! overwrites (the fileserver personality's size) of 1.5 × the user capacity, an fsync
//! every 16 writes; the
//! throughput is the overwrite bytes over their virtual time. The knee is reported in
//! mkfs's ratio (the share of the main area beyond F2FS's reserved segments hidden from
//! users); the image's own OP (`1 − user blocks ÷ main-area blocks`) is listed beside it:
//! the reserved segments are part of it and, on a small volume, dominate it.

use flashstack_f2fs::{mkfs_timed, F2fs, F2fsConfig, MkfsOptions};
use flashstack_ftl::Ftl;
use serde::Serialize;

use crate::coco::{device, CocoError};

/// How full of valid blocks the user capacity is before the overwrites.
pub const FILL_PERMILLE: u64 = 900;
/// A point is at the knee when its throughput is within this share of the best.
pub const KNEE_TOLERANCE: f64 = 0.05;

/// One OP ratio's run.
#[derive(Clone, Debug, Serialize)]
pub struct OpPoint {
    /// mkfs's `-o`.
    pub requested_op_pct: f64,
    /// The image's over-provisioning: main-area blocks users cannot fill.
    pub op_pct: f64,
    pub throughput_mb_s: f64,
    /// Flash bytes programmed ÷ bytes overwritten (F2FS's cleaning and the device's).
    pub waf: f64,
    pub user_mib: u64,
}

/// The knee: the smallest OP whose throughput is within `tolerance` of the best of the
/// sweep (a pure function of `(op_pct, throughput)` points, in any order). `None` for no
/// points or no positive throughput.
pub fn knee_op_pct(points: &[(f64, f64)], tolerance: f64) -> Option<f64> {
    let best = points.iter().map(|p| p.1).fold(f64::NAN, f64::max);
    if best.is_nan() || best <= 0.0 {
        return None;
    }
    points
        .iter()
        .filter(|p| p.1 >= best * (1.0 - tolerance))
        .map(|p| p.0)
        .min_by(f64::total_cmp)
}

/// Bytes overwritten per point, as a multiple (‰) of the user capacity: enough for the
/// free space of the largest OP to be used up and cleaning to reach its steady state.
pub const OVERWRITE_PERMILLE: u64 = 1_500;

/// The requested ratios and the flash of the drive (MiB).
fn plan(quick: bool) -> (&'static [f64], u32) {
    if quick {
        (&[10.0, 15.0, 20.0, 30.0, 40.0], 256)
    } else {
        (&[5.0, 10.0, 15.0, 20.0, 25.0, 30.0, 40.0, 50.0], 1024)
    }
}

fn err(op: f64, e: impl ToString) -> CocoError {
    CocoError::Run {
        scheme: format!("F2FS with {op}% OP"),
        workload: "OP sweep".into(),
        message: e.to_string(),
    }
}

/// 64-bit xorshift: the overwrite offsets.
fn next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// Runs one OP ratio.
pub fn op_point(requested_op_pct: f64, quick: bool, seed: u64) -> Result<OpPoint, CocoError> {
    const FILE_BYTES: u64 = 4 << 20;
    const IO_BYTES: usize = 16 << 10;
    let (_, flash_mib) = plan(quick);
    let op = requested_op_pct;
    let mut ftl = Ftl::new(device("F2FS", flash_mib), true, seed).map_err(|e| err(op, e))?;
    let mkfs = MkfsOptions {
        overprovision: Some(requested_op_pct),
        ..MkfsOptions::default()
    };
    let (_, t0) = mkfs_timed(&mut ftl, &mkfs).map_err(|e| err(op, e))?;
    let mut fs = F2fs::mount_with(ftl, t0, F2fsConfig::default()).map_err(|e| err(op, e))?;
    let usage = fs.block_usage();
    let main_blocks = usage.main_segments as u64 * 512;
    let fill_blocks = usage.user_blocks * FILL_PERMILLE / 1000;
    let mut payload = vec![0u8; FILE_BYTES as usize];
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    payload
        .chunks_mut(8)
        .for_each(|c| c.copy_from_slice(&next(&mut x).to_le_bytes()));
    let mut files = Vec::new();
    while fs.block_usage().valid_blocks + FILE_BYTES / 4096 <= fill_blocks {
        let ino = fs
            .create(&format!("/op/f{}", files.len()))
            .or_else(|_| {
                fs.mkdir("/op")?;
                fs.create("/op/f0")
            })
            .map_err(|e| err(op, e))?;
        fs.write(ino, 0, &payload).map_err(|e| err(op, e))?;
        fs.fsync(ino).map_err(|e| err(op, e))?;
        files.push(ino);
    }
    if files.is_empty() {
        return Err(err(op, "the user capacity holds no file"));
    }
    let overwrites = usage.user_blocks * 4096 * OVERWRITE_PERMILLE / 1000 / IO_BYTES as u64;
    let start_ns = fs.now_ns();
    let programs0 = fs.device().counters().page_programs;
    let slots = FILE_BYTES / IO_BYTES as u64;
    for i in 0..overwrites {
        let r = next(&mut x);
        let ino = files[(r % files.len() as u64) as usize];
        let offset = (r >> 20) % slots * IO_BYTES as u64;
        let at = (i as usize * 4096) % (payload.len() - IO_BYTES);
        fs.write(ino, offset, &payload[at..at + IO_BYTES])
            .map_err(|e| err(op, format!("overwrite {i}: {e}")))?;
        if i % 16 == 15 {
            fs.fsync(ino).map_err(|e| err(op, e))?;
        }
    }
    let run_ns = fs.now_ns().saturating_sub(start_ns).max(1);
    let bytes = overwrites * IO_BYTES as u64;
    let page_bytes = fs.device().config().nand.geometry.page_size_bytes as u64;
    let programmed = (fs.device().counters().page_programs - programs0) * page_bytes;
    Ok(OpPoint {
        requested_op_pct,
        op_pct: (1.0 - usage.user_blocks as f64 / main_blocks as f64) * 100.0,
        throughput_mb_s: bytes as f64 / 1e6 / (run_ns as f64 * 1e-9),
        waf: programmed as f64 / bytes as f64,
        user_mib: (usage.user_blocks * 4096) >> 20,
    })
}

/// The sweep, in the order of the requested ratios.
pub fn op_sweep(quick: bool, seed: u64) -> Result<Vec<OpPoint>, CocoError> {
    let (ratios, _) = plan(quick);
    ratios.iter().map(|&op| op_point(op, quick, seed)).collect()
}

/// The sweep's knee (see [`knee_op_pct`]) in mkfs's ratio, the OP size the seed varied:
/// the image's own OP also counts the reserved segments F2FS's cleaning starts at, which
/// are no headroom (at 5 % on 256 MiB they are 48 of 106 segments and every write cleans).
pub fn knee(points: &[OpPoint]) -> Option<f64> {
    let pairs: Vec<(f64, f64)> = points
        .iter()
        .map(|p| (p.requested_op_pct, p.throughput_mb_s))
        .collect();
    knee_op_pct(&pairs, KNEE_TOLERANCE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_knee_is_the_smallest_op_near_the_best() {
        // Rising to a plateau from 15 %: the knee is 15 %.
        let plateau = [
            (5.0, 40.0),
            (10.0, 70.0),
            (15.0, 96.0),
            (20.0, 99.0),
            (30.0, 100.0),
        ];
        assert_eq!(knee_op_pct(&plateau, 0.05), Some(15.0));
        // Order does not matter; a tighter tolerance moves it right.
        let mut shuffled = plateau;
        shuffled.reverse();
        assert_eq!(knee_op_pct(&shuffled, 0.05), Some(15.0));
        assert_eq!(knee_op_pct(&shuffled, 0.02), Some(20.0));
        // Flat: the smallest OP already gives everything.
        assert_eq!(knee_op_pct(&[(2.0, 50.0), (40.0, 50.0)], 0.05), Some(2.0));
        // A peak then a fall (more OP, less cache for data): still the first near the peak.
        assert_eq!(
            knee_op_pct(&[(5.0, 10.0), (15.0, 100.0), (30.0, 80.0)], 0.05),
            Some(15.0)
        );
        assert_eq!(knee_op_pct(&[], 0.05), None);
        assert_eq!(knee_op_pct(&[(5.0, 0.0)], 0.05), None);
        assert_eq!(knee_op_pct(&[(5.0, f64::NAN), (9.0, 3.0)], 0.05), Some(9.0));
    }
}
