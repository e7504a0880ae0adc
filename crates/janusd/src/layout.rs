//! A file's logical layout: extents (runs of consecutive block addresses of consecutive
//! pages), the degree of fragmentation (DoF), and what kind of file and whose it is, from
//! its path (as Android lays its files out).
//!
//! DoF = extents ÷ ideal extents (Ji et al., HotStorage '16; Janusd, ATC '17). The ideal
//! is ⌈blocks ÷ 128 MiB⌉: 128 MiB is ext4's largest extent, the measure's original
//! setting. F2FS has no smaller bound of its own: a log lays a file down across as many
//! consecutive free segments as there are (`longest_free_run_blocks` reports how many
//! there are now), so a file under 128 MiB is ideally one extent and its DoF is its
//! extent count. The same definition is used by `phone info` (crates/phone).

/// Blocks of the largest ideal extent (128 MiB of 4 KiB blocks).
pub const IDEAL_EXTENT_BLOCKS: u64 = 32_768;

/// Extents of a block-address list: runs of consecutive addresses (holes — address 0 or
/// `NEW_ADDR` — break runs and count nothing). Returns (blocks, extents).
pub fn extents_of(addrs: &[u32]) -> (u64, u64) {
    let (mut blocks, mut extents) = (0u64, 0u64);
    let mut prev: Option<u32> = None;
    for &a in addrs {
        if a == 0 || a == u32::MAX {
            prev = None;
            continue;
        }
        blocks += 1;
        if prev.is_none_or(|p| p.wrapping_add(1) != a) {
            extents += 1;
        }
        prev = Some(a);
    }
    (blocks, extents)
}

/// The extents themselves, as (first address, length) in page order.
pub fn extent_list(addrs: &[u32]) -> Vec<(u64, u32)> {
    let mut out: Vec<(u64, u32)> = Vec::new();
    let mut prev: Option<u32> = None;
    for &a in addrs {
        if a == 0 || a == u32::MAX {
            prev = None;
            continue;
        }
        match (prev, out.last_mut()) {
            (Some(p), Some(last)) if p.wrapping_add(1) == a => last.1 += 1,
            _ => out.push((a as u64, 1)),
        }
        prev = Some(a);
    }
    out
}

/// Ideal extents of a file of `blocks` blocks (at least 1).
pub fn ideal_extents(blocks: u64) -> u64 {
    blocks.div_ceil(IDEAL_EXTENT_BLOCKS).max(1)
}

/// Extents ÷ ideal extents (1.0: as contiguous as it can be).
pub fn dof(blocks: u64, extents: u64) -> f64 {
    extents as f64 / ideal_extents(blocks) as f64
}

/// The distribution of a group of files' DoFs.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DofStats {
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub max: f64,
    /// Share of files with DoF above 1.
    pub fragmented_share: f64,
}

impl DofStats {
    /// Of `dofs` (any order; all zero when empty).
    pub fn of(mut dofs: Vec<f64>) -> DofStats {
        if dofs.is_empty() {
            return DofStats::default();
        }
        dofs.sort_by(f64::total_cmp);
        let n = dofs.len() as f64;
        let pick = |q: f64| dofs[((dofs.len() - 1) as f64 * q).round() as usize];
        DofStats {
            mean: dofs.iter().sum::<f64>() / n,
            p50: pick(0.5),
            p90: pick(0.9),
            max: dofs[dofs.len() - 1],
            fragmented_share: dofs.iter().filter(|&&d| d > 1.0).count() as f64 / n,
        }
    }
}

/// The kind of a file, from its path (as a phone lays its files out).
pub fn class_of(path: &str) -> &'static str {
    let name = path.rsplit('/').next().unwrap_or(path);
    if path.starts_with("/data/app/") {
        return match name.rsplit_once('.').map(|(_, e)| e) {
            Some("apk") => "apk",
            Some("so") => "native-lib",
            _ => "odex",
        };
    }
    if path.starts_with("/data/media/") {
        return media_class(path, name);
    }
    if path.contains("/databases/") {
        return if name.ends_with("-journal") || name.ends_with("-wal") || name.ends_with("-shm") {
            "db-journal"
        } else {
            "database"
        };
    }
    if path.contains("/shared_prefs/") {
        return "prefs";
    }
    if path.contains("/cache/") || path.contains("/Cache/") {
        return "cache";
    }
    "app-file"
}

fn media_class(path: &str, name: &str) -> &'static str {
    if path.contains("/DCIM/") && name.ends_with(".mp4") {
        "video"
    } else if path.contains("/DCIM/") || path.contains("/Screenshots/") {
        "photo"
    } else if path.contains("/Download/") {
        "download"
    } else {
        "messaging-media"
    }
}

/// The app a file belongs to: the package of `/data/data/PKG/…` or `/data/app/PKG-N/…`;
/// `user-media` for `/data/media/…` (the user's, shared by every app); `other` else.
pub fn app_of(path: &str) -> String {
    if let Some(rest) = path.strip_prefix("/data/data/") {
        return rest.split('/').next().unwrap_or("other").to_string();
    }
    if let Some(rest) = path.strip_prefix("/data/app/") {
        let dir = rest.split('/').next().unwrap_or("other");
        // Android names an installation directory PKG-N (N the install's suffix).
        return match dir.rsplit_once('-') {
            Some((pkg, _)) if !pkg.is_empty() => pkg.to_string(),
            _ => dir.to_string(),
        };
    }
    if path.starts_with("/data/media/") {
        return "user-media".to_string();
    }
    "other".to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extents_count_runs_and_skip_holes() {
        assert_eq!(extents_of(&[]), (0, 0));
        assert_eq!(extents_of(&[10, 11, 12]), (3, 1));
        assert_eq!(extents_of(&[10, 12, 13, 0, 14]), (4, 3));
        assert_eq!(extents_of(&[5, 4]), (2, 2));
        assert_eq!(
            extent_list(&[10, 12, 13, 0, 14]),
            vec![(10, 1), (12, 2), (14, 1)]
        );
        assert_eq!(extent_list(&[7, 8, u32::MAX, 9]), vec![(7, 2), (9, 1)]);
        assert_eq!(dof(65_536, 4), 2.0);
        assert_eq!(dof(1, 3), 3.0);
    }

    #[test]
    fn classes_and_apps_follow_the_android_layout() {
        assert_eq!(class_of("/data/app/com.a-1/base.apk"), "apk");
        assert_eq!(class_of("/data/app/com.a-1/oat/arm64/base.odex"), "odex");
        assert_eq!(
            class_of("/data/app/com.a-1/lib/arm64/lib0.so"),
            "native-lib"
        );
        assert_eq!(class_of("/data/data/com.a/databases/x.db"), "database");
        assert_eq!(
            class_of("/data/data/com.a/databases/x.db-wal"),
            "db-journal"
        );
        assert_eq!(class_of("/data/data/com.a/shared_prefs/p.xml"), "prefs");
        assert_eq!(class_of("/data/data/com.a/cache/http/1.0"), "cache");
        assert_eq!(class_of("/data/media/0/DCIM/Camera/VID_1.mp4"), "video");
        assert_eq!(class_of("/data/media/0/DCIM/Camera/IMG_1.jpg"), "photo");
        assert_eq!(class_of("/data/media/0/Download/f.pdf"), "download");
        assert_eq!(app_of("/data/data/com.a/databases/x.db"), "com.a");
        assert_eq!(
            app_of("/data/app/com.face-book-2/base.apk"),
            "com.face-book"
        );
        assert_eq!(app_of("/data/media/0/DCIM/x.jpg"), "user-media");
        assert_eq!(app_of("/x"), "other");
    }
}
