//! Where everything lives on the device: the ext4 metadata and journal, each app's code,
//! databases, journals, files and caches, and the rest of the user's data. One layout per
//! capacity serves every workload, so an app's files sit at the same LBAs whether it runs
//! alone or within the multi-app workload.

use std::ops::Range;

use super::profile::{
    AppendArea, Profile, DB_JOURNAL_MIX, DB_JOURNAL_PAGES, DB_MIX, EXEC_MIX, FS_JOURNAL_MIX,
    FS_META_MIX, PROFILES, TEXT_MIX, USER_MIX,
};
use super::{BuiltinError, ZoneSpec};

/// Share of the capacity holding existing data before a run (an assumption: the paper does
/// not say how full its device was; `reproduce ldc` uses the same 85%).
pub(crate) const SNAPSHOT_FILL: f64 = 0.85;
/// Share of the capacity the apps' files may take at most; beyond it they shrink, so that
/// on small devices the user's other data still dominates the snapshot, as on a phone.
const APPS_SHARE_MAX: f64 = 0.3;
/// ext4 on Android (make_ext4fs): 256-byte inodes, one per 16 KiB, so inode tables take
/// 1/64 of the partition; the journal is also 1/64, between 1,024 and 32,768 blocks.
const FS_FRACTION_DIVISOR: u64 = 64;
const JOURNAL_BLOCKS_MIN: u64 = 1_024;
const JOURNAL_BLOCKS_MAX: u64 = 32_768;
/// Smallest zones, so that every request of the profiles fits the zone it targets.
const ZONE_MIN: u64 = 256;
const DB_MIN: u64 = 64;
const STREAM_MIN: u64 = 1_024;

#[derive(Clone, Debug)]
pub(crate) struct DbLayout {
    pub data: Range<u64>,
    pub journal: Range<u64>,
    pub blobs: Option<Range<u64>>,
}

#[derive(Clone, Debug)]
pub(crate) struct AppLayout {
    pub exec: Range<u64>,
    pub files: Range<u64>,
    pub dbs: Vec<DbLayout>,
    pub streams: Vec<Range<u64>>,
    /// The metadata blocks of the block group holding the app's files: where its
    /// checkpoints mostly land.
    pub meta_window: Range<u64>,
    pub zones: Vec<ZoneSpec>,
}

#[derive(Clone, Debug)]
pub(crate) struct Layout {
    pub fs_meta: Range<u64>,
    pub fs_journal: Range<u64>,
    pub apps: Vec<AppLayout>,
    pub fs_zones: Vec<ZoneSpec>,
    /// The rest of the existing data, if the apps leave room for any.
    pub user: Option<ZoneSpec>,
}

/// Hands out consecutive LBA ranges.
struct Cursor {
    next: u64,
}

impl Cursor {
    fn take(&mut self, lbas: u64) -> Range<u64> {
        let start = self.next;
        self.next += lbas;
        start..self.next
    }
}

impl Layout {
    /// The layout of a device of `capacity_lbas` 4 KiB blocks.
    pub(crate) fn new(capacity_lbas: u64) -> Result<Layout, BuiltinError> {
        let fs_part = capacity_lbas / FS_FRACTION_DIVISOR;
        let journal = fs_part.clamp(JOURNAL_BLOCKS_MIN, JOURNAL_BLOCKS_MAX);
        let meta = fs_part.max(ZONE_MIN);
        let nominal: u64 = PROFILES.iter().map(nominal_lbas).sum();
        let room = (capacity_lbas as f64 * APPS_SHARE_MAX) as u64;
        let scale = (room.saturating_sub(meta + journal) as f64 / nominal as f64).min(1.0);
        let mut cursor = Cursor { next: 0 };
        let fs_meta = cursor.take(meta);
        let fs_journal = cursor.take(journal);
        let fs_zones = vec![
            zone("fs.meta", fs_meta.clone(), FS_META_MIX),
            zone("fs.journal", fs_journal.clone(), FS_JOURNAL_MIX),
        ];
        let apps: Vec<AppLayout> = PROFILES
            .iter()
            .enumerate()
            .map(|(i, p)| app_layout(p, i, scale, &fs_meta, &mut cursor))
            .collect();
        let used = cursor.next;
        let fill = (capacity_lbas as f64 * SNAPSHOT_FILL) as u64;
        if used > fill {
            return Err(BuiltinError::CapacityTooSmall {
                capacity_bytes: capacity_lbas * 4096,
                needed_bytes: (used as f64 / SNAPSHOT_FILL) as u64 * 4096,
            });
        }
        let user = (used < fill).then(|| zone("user.data", used..fill, USER_MIX));
        Ok(Layout {
            fs_meta,
            fs_journal,
            apps,
            fs_zones,
            user,
        })
    }

    /// Every zone of the device, in LBA order: what the snapshot lays down.
    pub(crate) fn all_zones(&self) -> Vec<ZoneSpec> {
        let mut zones = self.fs_zones.clone();
        zones.extend(self.apps.iter().flat_map(|a| a.zones.iter().cloned()));
        zones.extend(self.user.iter().cloned());
        zones
    }
}

fn zone(name: &str, lbas: Range<u64>, mix: &str) -> ZoneSpec {
    ZoneSpec {
        name: name.to_string(),
        lbas,
        mix: mix.to_string(),
    }
}

/// Sum of the nominal zone sizes of one app (journals are fixed and not counted).
fn nominal_lbas(p: &Profile) -> u64 {
    let dbs: u64 = p
        .dbs
        .iter()
        .map(|d| {
            let blobs = match d.append_area {
                AppendArea::Blobs { pages, .. } => pages,
                AppendArea::Tail => 0,
            };
            u64::from(d.pages + blobs)
        })
        .sum();
    let streams: u64 = p.streams.iter().map(|s| u64::from(s.pages)).sum();
    u64::from(p.exec_pages + p.files_pages) + dbs + streams
}

fn scaled(pages: u32, scale: f64, min: u64) -> u64 {
    ((f64::from(pages) * scale) as u64).max(min)
}

/// Code, databases with their journals, small files, then the file streams.
fn app_layout(
    p: &Profile,
    index: usize,
    scale: f64,
    fs_meta: &Range<u64>,
    cursor: &mut Cursor,
) -> AppLayout {
    let prefix = p.app.abbrev();
    let mut zones = Vec::new();
    let mut place = |name: String, lbas: u64, mix: &str, zones: &mut Vec<ZoneSpec>| {
        let range = cursor.take(lbas);
        zones.push(zone(&name, range.clone(), mix));
        range
    };
    let exec = place(
        format!("{prefix}.code"),
        scaled(p.exec_pages, scale, ZONE_MIN),
        EXEC_MIX,
        &mut zones,
    );
    let dbs = p
        .dbs
        .iter()
        .map(|d| {
            let data_lbas = scaled(d.pages, scale, DB_MIN);
            let data = place(
                format!("{prefix}.{}", d.name),
                data_lbas,
                DB_MIX,
                &mut zones,
            );
            let journal = place(
                format!("{prefix}.{}-journal", d.name),
                u64::from(DB_JOURNAL_PAGES),
                DB_JOURNAL_MIX,
                &mut zones,
            );
            let blobs = match d.append_area {
                AppendArea::Blobs { pages, mix } => Some(place(
                    format!("{prefix}.{}-blobs", d.name),
                    scaled(pages, scale, STREAM_MIN),
                    mix,
                    &mut zones,
                )),
                AppendArea::Tail => None,
            };
            DbLayout {
                data,
                journal,
                blobs,
            }
        })
        .collect();
    let files = place(
        format!("{prefix}.files"),
        scaled(p.files_pages, scale, ZONE_MIN),
        TEXT_MIX,
        &mut zones,
    );
    let streams = p
        .streams
        .iter()
        .map(|s| {
            let largest = s.file_pages.iter().map(|&(v, _)| v).max().unwrap_or(1);
            let min = STREAM_MIN.max(4 * u64::from(largest));
            let lbas = scaled(s.pages, scale, min);
            place(format!("{prefix}.{}", s.name), lbas, s.mix, &mut zones)
        })
        .collect();
    AppLayout {
        exec,
        files,
        dbs,
        streams,
        meta_window: meta_window(fs_meta, index),
        zones,
    }
}

/// One 256-block window of the metadata zone per app, spread over the zone.
fn meta_window(fs_meta: &Range<u64>, index: usize) -> Range<u64> {
    let len = fs_meta.end - fs_meta.start;
    let window = ZONE_MIN.min(len);
    let slots = PROFILES.len() as u64;
    let start = fs_meta.start + (len - window) * index as u64 / slots;
    start..start + window
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(layout: &Layout, capacity: u64) {
        let zones = layout.all_zones();
        for pair in zones.windows(2) {
            assert_eq!(pair[0].lbas.end, pair[1].lbas.start, "{pair:?}");
        }
        assert_eq!(zones[0].lbas.start, 0);
        let end = zones.last().unwrap().lbas.end;
        assert!(end <= capacity, "{end} > {capacity}");
        assert!(zones.iter().all(|z| !z.lbas.is_empty()));
    }

    #[test]
    fn zones_tile_the_snapshot_without_gaps_at_every_size() {
        for capacity in [1u64 << 16, 1 << 18, 1 << 20, 1 << 22] {
            let layout = Layout::new(capacity).unwrap();
            check(&layout, capacity);
            assert_eq!(
                layout.all_zones().last().unwrap().lbas.end,
                (capacity as f64 * SNAPSHOT_FILL) as u64
            );
        }
    }

    #[test]
    fn journal_follows_make_ext4fs() {
        assert_eq!(
            Layout::new(1 << 22).unwrap().fs_journal.end,
            (1 << 16) + 32_768
        );
        let small = Layout::new(1 << 16).unwrap();
        assert_eq!(small.fs_journal.end - small.fs_journal.start, 1_024);
    }

    #[test]
    fn a_tiny_device_is_a_clear_error() {
        let err = Layout::new(4_096).unwrap_err();
        assert!(err.to_string().contains("too small"), "{err}");
    }
}
