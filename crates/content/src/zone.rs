//! Content zones: parts of the LBA space that carry their own [`ContentMix`].
//!
//! A phone's data partition is not one uniform mix: the file system's metadata and journal
//! sit in one place, an app's SQLite databases in another, its image cache in a third, and
//! the user's photos and installed apps fill most of the rest. Zones let a workload say so.
//! An LBA takes its class from the first zone (in list order) that contains it, and from the
//! model's global mix when no zone does. Within a zone, classes are still assigned per
//! region, with the same hash as the global mix, so an LBA keeps its class across rewrites.

use std::collections::BTreeSet;
use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::{ContentError, ContentMix};

/// One zone: the LBAs `start_lba..end_lba` (4 KiB blocks, end exclusive) and their mix.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Zone {
    pub start_lba: u64,
    pub end_lba: u64,
    pub mix: ContentMix,
}

impl Zone {
    pub fn new(lbas: Range<u64>, mix: ContentMix) -> Self {
        Zone {
            start_lba: lbas.start,
            end_lba: lbas.end,
            mix,
        }
    }

    pub fn lbas(&self) -> Range<u64> {
        self.start_lba..self.end_lba
    }

    pub fn len_lbas(&self) -> u64 {
        self.end_lba.saturating_sub(self.start_lba)
    }
}

/// A maximal LBA run that one zone owns after precedence is resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Segment {
    start: u64,
    end: u64,
    zone: usize,
}

/// The zones of a model, resolved once into disjoint, sorted segments so that a lookup is
/// a binary search whatever the overlaps in the list.
#[derive(Clone, Debug, Default)]
pub(crate) struct ZoneIndex {
    zones: Vec<Zone>,
    segments: Vec<Segment>,
}

impl ZoneIndex {
    /// Checks every zone (non-empty) and resolves overlaps: the earlier zone wins.
    pub(crate) fn new(zones: Vec<Zone>) -> Result<Self, ContentError> {
        if let Some((index, zone)) = zones.iter().enumerate().find(|(_, z)| z.len_lbas() == 0) {
            return Err(ContentError::EmptyZone {
                index,
                start_lba: zone.start_lba,
                end_lba: zone.end_lba,
            });
        }
        let segments = resolve(&zones);
        Ok(ZoneIndex { zones, segments })
    }

    pub(crate) fn zones(&self) -> &[Zone] {
        &self.zones
    }

    /// The mix of the zone that owns `lba`, if any.
    #[inline]
    pub(crate) fn mix_at(&self, lba: u64) -> Option<&ContentMix> {
        let i = self.segments.partition_point(|s| s.end <= lba);
        let segment = self.segments.get(i)?;
        (segment.start <= lba).then(|| &self.zones[segment.zone].mix)
    }
}

/// A sweep over the zone boundaries: between two consecutive boundaries the owner is the
/// lowest-numbered zone still open. O(n log n) in the number of zones.
fn resolve(zones: &[Zone]) -> Vec<Segment> {
    // (position, opens?, zone); closes sort before opens at the same position.
    let mut events: Vec<(u64, bool, usize)> = zones
        .iter()
        .enumerate()
        .flat_map(|(i, z)| [(z.start_lba, true, i), (z.end_lba, false, i)])
        .collect();
    events.sort_unstable();
    let mut open = BTreeSet::new();
    let mut segments: Vec<Segment> = Vec::new();
    let mut at = 0;
    for (position, opens, zone) in events {
        if let Some(&owner) = open.first() {
            push_segment(&mut segments, at, position, owner);
        }
        if opens {
            open.insert(zone);
        } else {
            open.remove(&zone);
        }
        at = position;
    }
    segments
}

/// Appends `start..end` owned by `zone`, merging it into the previous segment when the two
/// touch and share the owner.
fn push_segment(segments: &mut Vec<Segment>, start: u64, end: u64, zone: usize) {
    if start >= end {
        return;
    }
    match segments.last_mut() {
        Some(last) if last.end == start && last.zone == zone => last.end = end,
        _ => segments.push(Segment { start, end, zone }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ContentClass;

    fn zone(lbas: Range<u64>, class: ContentClass) -> Zone {
        Zone::new(lbas, ContentMix::only(class))
    }

    fn owner(index: &ZoneIndex, lba: u64) -> Option<ContentClass> {
        index.mix_at(lba).map(|m| m.weights()[0].0)
    }

    #[test]
    fn disjoint_zones_resolve_to_themselves() {
        let index = ZoneIndex::new(vec![
            zone(10..20, ContentClass::Media),
            zone(0..5, ContentClass::Text),
        ])
        .unwrap();
        assert_eq!(owner(&index, 0), Some(ContentClass::Text));
        assert_eq!(owner(&index, 4), Some(ContentClass::Text));
        assert_eq!(owner(&index, 5), None);
        assert_eq!(owner(&index, 9), None);
        assert_eq!(owner(&index, 10), Some(ContentClass::Media));
        assert_eq!(owner(&index, 19), Some(ContentClass::Media));
        assert_eq!(owner(&index, 20), None);
        assert_eq!(owner(&index, u64::MAX), None);
    }

    #[test]
    fn earlier_zones_win_overlaps() {
        let index = ZoneIndex::new(vec![
            zone(10..20, ContentClass::Media),
            zone(0..100, ContentClass::Executable),
            zone(15..30, ContentClass::Text),
        ])
        .unwrap();
        let expect = |lba, class| assert_eq!(owner(&index, lba), Some(class), "lba {lba}");
        expect(0, ContentClass::Executable);
        expect(9, ContentClass::Executable);
        expect(10, ContentClass::Media);
        expect(19, ContentClass::Media);
        expect(20, ContentClass::Executable);
        expect(29, ContentClass::Executable);
        expect(99, ContentClass::Executable);
        assert_eq!(owner(&index, 100), None);
        assert_eq!(index.segments.len(), 3, "{:?}", index.segments);
    }

    #[test]
    fn touching_runs_of_one_zone_merge() {
        let index = ZoneIndex::new(vec![
            zone(0..10, ContentClass::Media),
            zone(10..20, ContentClass::Media),
            zone(5..15, ContentClass::Text),
        ])
        .unwrap();
        assert_eq!(index.segments.len(), 2);
        assert_eq!(owner(&index, 12), Some(ContentClass::Media));
    }

    #[test]
    fn empty_zones_are_rejected_by_position() {
        let err = ZoneIndex::new(vec![
            zone(0..10, ContentClass::Media),
            zone(7..7, ContentClass::Text),
        ])
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "content zone 1: LBA range 7..7 is empty (start must be below end)"
        );
    }
}
