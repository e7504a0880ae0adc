//! The inline delta zone's bytes (MedFS's DCI layout, seed-systems.md §A): the zone sits
//! at the tail of the inode's data-address slots (next to the inline xattrs) and grows
//! toward the head, where the data pointers are. Counted back from the zone's end:
//!
//! | from the end | size | field |
//! |---|---|---|
//! | 1 | 1 B | `delta_num`, records held |
//! | 2, 3 | 2 B | `delta_inline_size`, bytes of all records (low byte first) |
//! | 4, 5 | 2 B | `last_iaddr`, pages the file spanned when the zone was written |
//! | 6 … | per record | `[index lo][index hi][c_size][c_size bytes of delta]`, packed backward |
//!
//! Each record's delta bytes lie in address order just below its `c_size` byte. Records
//! are kept oldest first (the tail end), so FIFO eviction on append drops the oldest. The
//! byte order inside a record is ours (the source packs records backward; how it lays out
//! the delta bytes is not recorded); the offsets of the header are the source's.

use super::policy::RECORD_HEADER_BYTES;

/// Bytes of the zone header (`delta_num`, `delta_inline_size`, `last_iaddr`).
pub const ZONE_HEADER_BYTES: usize = 5;

/// One inline delta: the page it belongs to and its LZO1X-1 bytes (`new ⊕ base`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub index: u16,
    pub delta: Vec<u8>,
}

impl Record {
    pub fn zone_bytes(&self) -> usize {
        RECORD_HEADER_BYTES + self.delta.len()
    }
}

/// A decoded zone: records oldest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Zone {
    pub records: Vec<Record>,
    pub last_iaddr: u16,
}

impl Zone {
    /// Bytes of all records (`delta_inline_size`).
    pub fn record_bytes(&self) -> usize {
        self.records.iter().map(Record::zone_bytes).sum()
    }

    /// Bytes the zone takes at the tail of the slots, header included.
    pub fn bytes(&self) -> usize {
        ZONE_HEADER_BYTES + self.record_bytes()
    }

    /// Whole address slots the zone covers.
    pub fn words(&self) -> usize {
        self.bytes().div_ceil(4)
    }

    pub fn position(&self, index: u64) -> Option<usize> {
        self.records
            .iter()
            .position(|r| u64::from(r.index) == index)
    }

    /// Writes the zone at the tail of `slots` (the inode's data-address bytes), zeroing
    /// the padding up to its first whole slot. The caller has cleared the old zone.
    pub fn encode(&self, slots: &mut [u8]) {
        let end = slots.len();
        let size = self.record_bytes() as u16;
        slots[end - 1] = self.records.len() as u8;
        slots[end - 2] = size as u8;
        slots[end - 3] = (size >> 8) as u8;
        slots[end - 4] = self.last_iaddr as u8;
        slots[end - 5] = (self.last_iaddr >> 8) as u8;
        let mut p = end - ZONE_HEADER_BYTES;
        for r in &self.records {
            slots[p - 1] = r.index as u8;
            slots[p - 2] = (r.index >> 8) as u8;
            slots[p - 3] = r.delta.len() as u8;
            let start = p - RECORD_HEADER_BYTES - r.delta.len();
            slots[start..p - RECORD_HEADER_BYTES].copy_from_slice(&r.delta);
            p = start;
        }
        slots[end - 4 * self.words()..p].fill(0);
    }

    /// Reads the zone at the tail of `slots`, checking every length against the space;
    /// `Err` says what is wrong (the caller names the inode).
    pub fn decode(slots: &[u8]) -> Result<Zone, String> {
        let mut records = Vec::new();
        let last_iaddr = walk(slots, |index, delta| {
            records.push(Record {
                index,
                delta: delta.to_vec(),
            })
        })?;
        Ok(Zone {
            records,
            last_iaddr,
        })
    }

    /// What a delta decision needs of the zone at the tail of `slots`, and where page
    /// `index`'s record is, checked as [`Zone::decode`] checks, without copying a record.
    pub fn summary(slots: &[u8], index: u64) -> Result<Summary, String> {
        let mut s = Summary::default();
        walk(slots, |i, delta| {
            if u64::from(i) == index {
                s.position = Some(s.records);
            }
            s.records += 1;
            s.record_bytes += RECORD_HEADER_BYTES + delta.len();
            s.largest_bytes = s.largest_bytes.max(Some(delta.len()));
        })?;
        Ok(s)
    }
}

/// A zone as [`Zone::summary`] gives it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub records: usize,
    /// `delta_inline_size`.
    pub record_bytes: usize,
    pub largest_bytes: Option<usize>,
    /// The asked-for page's record, oldest first.
    pub position: Option<usize>,
}

impl Summary {
    /// Whole address slots the zone covers (none without records, as a zone that is
    /// not there).
    pub fn words(&self) -> usize {
        match self.records {
            0 => 0,
            _ => (ZONE_HEADER_BYTES + self.record_bytes).div_ceil(4),
        }
    }
}

/// Walks the zone at the tail of `slots`, checking every length against the space and
/// that no page has two records, calling `each` with every record's page and delta
/// bytes, oldest first; returns `last_iaddr`.
fn walk(slots: &[u8], mut each: impl FnMut(u16, &[u8])) -> Result<u16, String> {
    let end = slots.len();
    if end < ZONE_HEADER_BYTES {
        return Err("no room for the zone header".into());
    }
    let count = slots[end - 1] as usize;
    let size = u16::from_le_bytes([slots[end - 2], slots[end - 3]]) as usize;
    let last_iaddr = u16::from_le_bytes([slots[end - 4], slots[end - 5]]);
    if ZONE_HEADER_BYTES + size > end {
        return Err(format!(
            "delta_inline_size {size} exceeds the address slots"
        ));
    }
    // `delta_num` is one byte: at most 255 records.
    let mut seen = [0u16; 256];
    let floor = end - ZONE_HEADER_BYTES - size;
    let mut p = end - ZONE_HEADER_BYTES;
    for k in 0..count {
        if p < floor + RECORD_HEADER_BYTES {
            return Err(format!("record {k} runs past delta_inline_size {size}"));
        }
        let index = u16::from_le_bytes([slots[p - 1], slots[p - 2]]);
        let len = slots[p - 3] as usize;
        if len == 0 || p - RECORD_HEADER_BYTES < floor + len {
            return Err(format!(
                "record {k} (page {index}): length {len} does not fit"
            ));
        }
        if seen[..k].contains(&index) {
            return Err(format!("two deltas for page {index}"));
        }
        seen[k] = index;
        let start = p - RECORD_HEADER_BYTES - len;
        each(index, &slots[start..p - RECORD_HEADER_BYTES]);
        p = start;
    }
    if p != floor {
        return Err(format!(
            "{count} records take {} bytes, delta_inline_size says {size}",
            end - ZONE_HEADER_BYTES - p
        ));
    }
    Ok(last_iaddr)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn zone(records: &[(u16, usize)]) -> Zone {
        Zone {
            records: records
                .iter()
                .map(|&(index, len)| Record {
                    index,
                    delta: (0..len).map(|i| (i * 7 + index as usize) as u8).collect(),
                })
                .collect(),
            last_iaddr: 12,
        }
    }

    #[test]
    fn header_offsets_are_the_sources() {
        let mut slots = vec![0u8; 3492];
        zone(&[(3, 2)]).encode(&mut slots);
        assert_eq!(slots[3491], 1); // delta_num
        assert_eq!((slots[3490], slots[3489]), (5, 0)); // 3 + 2 bytes
        assert_eq!((slots[3488], slots[3487]), (12, 0)); // last_iaddr
        assert_eq!((slots[3486], slots[3485], slots[3484]), (3, 0, 2));
        assert_eq!(&slots[3482..3484], &[3, 10]);
        // 10 bytes: 3 whole slots; the padding below the record is zero.
        assert_eq!(zone(&[(3, 2)]).words(), 3);
        assert!(slots[..3482].iter().all(|&b| b == 0));
    }

    #[test]
    fn corrupt_zones_are_refused_with_a_reason() {
        let mut slots = vec![0u8; 64];
        zone(&[(1, 4), (2, 4)]).encode(&mut slots);
        let mut bad = slots.clone();
        bad[63] = 3; // one record more than the size holds
        assert!(Zone::decode(&bad).unwrap_err().contains("record 2"));
        let mut bad = slots.clone();
        bad[62] = 200; // size beyond the slots
        assert!(Zone::decode(&bad).unwrap_err().contains("exceeds"));
        let mut bad = slots.clone();
        bad[58 - 7] = 1; // second record names page 1 again
        assert!(Zone::decode(&bad).unwrap_err().contains("two deltas"));
        assert_eq!(Zone::summary(&bad, 5), Err(Zone::decode(&bad).unwrap_err()));
    }

    proptest! {
        #[test]
        fn zones_round_trip(recs in proptest::collection::btree_map(0u16..900, 1usize..256, 0..12)) {
            let z = zone(&recs.into_iter().collect::<Vec<_>>());
            let mut slots = vec![0xAAu8; 3492];
            let tail = 3492 - 4 * z.words();
            slots[tail..].fill(0);
            z.encode(&mut slots);
            prop_assert_eq!(Zone::decode(&slots).unwrap(), z.clone());
            prop_assert!(slots[..tail].iter().all(|&b| b == 0xAA));
            // The summary says what the decoded zone says, for a page with a record
            // and one without.
            for index in z.records.iter().map(|r| u64::from(r.index)).take(1).chain([900]) {
                let s = Zone::summary(&slots, index).unwrap();
                prop_assert_eq!(s.records, z.records.len());
                prop_assert_eq!(s.record_bytes, z.record_bytes());
                prop_assert_eq!(s.largest_bytes, z.records.iter().map(|r| r.delta.len()).max());
                prop_assert_eq!(s.position, z.position(index));
                prop_assert_eq!(s.words(), if z.records.is_empty() { 0 } else { z.words() });
            }
        }
    }
}
