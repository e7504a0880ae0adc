//! UFS Host Performance Booster (HPB, JEDEC JESD220-3 "HPB 1.0", JESD220-3A "HPB 2.0"):
//! the host keeps a copy of part of the device's L2P table in its own DRAM and sends the
//! physical address with each read it covers, so the device skips its own lookup (a
//! mapping-cache miss would read a translation page from flash). It only matters on a
//! device that does not hold its whole table ([`crate::cmt`]); `ftl.mapping_cache.hpb` is
//! refused without a mapping cache, and off (`host_map_bytes = 0`) by default.
//!
//! Step by step (device control mode, the mode the Linux driver calls "device control"):
//! 1. The logical space is cut into regions, each cut into subregions (sizes
//!    `512 B × 2^n`, from the device's geometry descriptor). The host holds the entries
//!    of *active* subregions (8 bytes per 4 KiB block), as many as its memory budget
//!    takes; it activates and drops whole subregions, never single entries.
//! 2. A read of at most `max_blocks` blocks (HPB 1.0: one 4 KiB block; HPB 2.0: up to
//!    255) whose blocks all lie in active subregions goes out as an HPB READ carrying the
//!    host's entries. The device uses them without a lookup when they are still valid: a
//!    **hit**. An entry the device has changed since the host loaded it (an overwrite, a
//!    trim, GC or wear levelling moving the page, a remap) is **stale**: the device knows
//!    it from a dirty bit it keeps per entry of every active subregion (SRAM: one bit
//!    per entry), ignores the host's address and translates as usual, and asks the host
//!    to reload that subregion. Reads of inactive subregions are **misses**.
//! 3. Activation is the device's choice (its response to a read names up to two
//!    subregions to activate): here a region's misses are counted, and when they reach
//!    `activation_reads` the subregion of the read that reached it is recommended. The host then reads the subregion's map with HPB READ BUFFER: the device
//!    reads the translation pages that hold it on their dies and the map crosses the host
//!    link; neither delays the read that triggered it. With the budget full, the host
//!    first drops its least recently used region (every active subregion of it).
//! 4. A power cut or reset drops the host's map (the device answers with a reset
//!    notice); it is rebuilt from misses.
//!
//! The model keeps the host's entries (a snapshot of the L2P at load time) and asserts on
//! every hit that the entry it used equals the device's mapping: a dirty bit that was
//! not set would fail that assertion rather than return another page's data.

use std::collections::BTreeMap;

use flashstack_nand::UnitOp;
use flashstack_sim::Nanos;

use crate::config::HpbConfig;
use crate::{Ftl, FtlError};

/// Bytes of one host-side HPB entry (a physical page number and the device's check bits).
pub const HPB_ENTRY_BYTES: u64 = 8;
/// Logical bytes one entry covers.
const HPB_BLOCK_BYTES: u64 = 4096;
/// Bound on the device's table of per-region miss counts (SRAM; 4 bytes each, 64 KiB):
/// one per region up to 512 GiB of 32 MiB regions. Beyond it every count is halved and
/// the zeros dropped, as the Linux driver normalises its per-region read counters.
const MISS_COUNTS_MAX: usize = 16_384;

/// What the host can do with one read (pure decision from the host's map).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HpbLookup {
    /// Too long for an HPB READ, or HPB off: an ordinary read, not counted.
    NotEligible,
    /// Some block lies in a subregion the host does not hold.
    Miss,
    /// The host holds every entry, and the device changed at least one since it was loaded.
    Stale,
    /// The host holds every entry and all are valid: the device skips its lookup.
    Hit,
}

#[derive(Debug)]
struct Subregion {
    /// The host's entries: the device's mapping when the subregion was loaded.
    slots: Vec<u32>,
    /// The device's dirty bits: entries changed since.
    dirty: Vec<u64>,
}

impl Subregion {
    fn is_dirty(&self, i: usize) -> bool {
        self.dirty[i / 64] & (1 << (i % 64)) != 0
    }
}

#[derive(Debug)]
struct Region {
    stamp: u64,
    subregions: BTreeMap<u32, Subregion>,
}

/// The host's HPB map and the device's HPB state of one device.
#[derive(Debug)]
pub(crate) struct Hpb {
    entries_per_subregion: u32,
    subregions_per_region: u32,
    /// Subregions the host memory budget holds.
    subregions_max: usize,
    max_blocks: u32,
    activation_reads: u32,
    regions: BTreeMap<u32, Region>,
    lru: BTreeMap<u64, u32>,
    clock: u64,
    active: usize,
    misses: BTreeMap<u32, u32>,
}

impl Hpb {
    pub(crate) fn new(config: &HpbConfig) -> Option<Hpb> {
        if config.is_off() {
            return None;
        }
        let entries_per_subregion = (config.subregion_bytes / HPB_BLOCK_BYTES) as u32;
        Some(Hpb {
            entries_per_subregion,
            subregions_per_region: (config.region_bytes / config.subregion_bytes) as u32,
            subregions_max: config.subregions_max() as usize,
            max_blocks: config.max_blocks(),
            activation_reads: config.activation_reads,
            regions: BTreeMap::new(),
            lru: BTreeMap::new(),
            clock: 0,
            active: 0,
            misses: BTreeMap::new(),
        })
    }

    fn locate(&self, lpn: u32) -> (u32, u32, usize) {
        let subregion = lpn / self.entries_per_subregion;
        let index = (lpn % self.entries_per_subregion) as usize;
        (subregion / self.subregions_per_region, subregion, index)
    }

    fn subregion(&self, lpn: u32) -> Option<(&Subregion, usize)> {
        let (region, subregion, index) = self.locate(lpn);
        let s = self.regions.get(&region)?.subregions.get(&subregion)?;
        Some((s, index))
    }

    /// Step 2: what the host's map says about a read of `count` blocks from `lpn`.
    pub(crate) fn lookup(&self, lpn: u32, count: u32) -> HpbLookup {
        if count == 0 || count > self.max_blocks {
            return HpbLookup::NotEligible;
        }
        let mut stale = false;
        for l in lpn..lpn + count {
            match self.subregion(l) {
                None => return HpbLookup::Miss,
                Some((s, i)) => stale |= s.is_dirty(i),
            }
        }
        match stale {
            true => HpbLookup::Stale,
            false => HpbLookup::Hit,
        }
    }

    /// The host's entry for `lpn` (only asked after a hit).
    fn entry(&self, lpn: u32) -> u32 {
        let (s, i) = self.subregion(lpn).expect("an active subregion");
        s.slots[i]
    }

    /// The regions of `lpn..lpn + count` were used: most recent in the host's LRU.
    fn touch(&mut self, lpn: u32, count: u32) {
        let first = self.locate(lpn).0;
        let last = self.locate(lpn + count - 1).0;
        for region in first..=last {
            self.clock += 1;
            if let Some(r) = self.regions.get_mut(&region) {
                self.lru.remove(&r.stamp);
                r.stamp = self.clock;
                self.lru.insert(self.clock, region);
            }
        }
    }

    /// The device changed `lpn`'s mapping: the host's entry, if it holds one, is stale.
    pub(crate) fn mark(&mut self, lpn: u32) {
        let (region, subregion, index) = self.locate(lpn);
        let Some(s) = self
            .regions
            .get_mut(&region)
            .and_then(|r| r.subregions.get_mut(&subregion))
        else {
            return;
        };
        s.dirty[index / 64] |= 1 << (index % 64);
    }

    /// Step 3: counts a miss on the region of every subregion of the read the host does
    /// not hold (counted per region, as the Linux driver counts reads); when a region
    /// reaches `activation_reads`, its missed subregions are recommended and its count
    /// starts again.
    fn note_miss(&mut self, lpn: u32, count: u32) -> Vec<u32> {
        let first = lpn / self.entries_per_subregion;
        let last = (lpn + count - 1) / self.entries_per_subregion;
        let mut activate = Vec::new();
        for subregion in first..=last {
            let region = subregion / self.subregions_per_region;
            let held = self
                .regions
                .get(&region)
                .is_some_and(|r| r.subregions.contains_key(&subregion));
            if held {
                continue;
            }
            let n = self.misses.entry(region).or_insert(0);
            *n += 1;
            if *n >= self.activation_reads {
                self.misses.remove(&region);
                activate.push(subregion);
            }
        }
        if self.misses.len() > MISS_COUNTS_MAX {
            self.misses.retain(|_, n| {
                *n /= 2;
                *n > 0
            });
        }
        activate
    }

    /// Drops the least recently used region other than `keep`; returns how many
    /// subregions it held (0 if there was none to drop).
    fn drop_lru_region(&mut self, keep: u32) -> usize {
        let Some((&stamp, &region)) = self.lru.iter().find(|&(_, &r)| r != keep) else {
            return 0;
        };
        self.lru.remove(&stamp);
        let r = self
            .regions
            .remove(&region)
            .expect("listed regions are active");
        self.active -= r.subregions.len();
        r.subregions.len()
    }

    /// Installs `subregion` with the host's new `slots` (a load or a reload); returns the
    /// regions dropped to make room.
    fn install(&mut self, subregion: u32, slots: Vec<u32>) -> u64 {
        let region = subregion / self.subregions_per_region;
        let reload = self
            .regions
            .get(&region)
            .is_some_and(|r| r.subregions.contains_key(&subregion));
        let mut dropped = 0;
        while !reload && self.active + 1 > self.subregions_max {
            if self.drop_lru_region(region) == 0 {
                return dropped;
            }
            dropped += 1;
        }
        self.clock += 1;
        let stamp = self.clock;
        let r = self.regions.entry(region).or_insert(Region {
            stamp,
            subregions: BTreeMap::new(),
        });
        self.lru.remove(&r.stamp);
        r.stamp = stamp;
        self.lru.insert(stamp, region);
        let dirty = vec![0; slots.len().div_ceil(64)];
        if r.subregions
            .insert(subregion, Subregion { slots, dirty })
            .is_none()
        {
            self.active += 1;
        }
        dropped
    }

    /// Step 4: the device was reset; the host's map is gone.
    pub(crate) fn reset(&mut self) {
        self.regions.clear();
        self.lru.clear();
        self.active = 0;
        self.misses.clear();
    }

    /// Subregions a stale read touched (reloaded after it).
    fn stale_subregions(&self, lpn: u32, count: u32) -> Vec<u32> {
        (lpn..lpn + count)
            .filter(|&l| self.subregion(l).is_some_and(|(s, i)| s.is_dirty(i)))
            .map(|l| l / self.entries_per_subregion)
            .fold(Vec::new(), |mut v, s| {
                if v.last() != Some(&s) {
                    v.push(s);
                }
                v
            })
    }
}

impl Ftl {
    fn hpb_ref(&self) -> Option<&Hpb> {
        self.mapping_cache.as_ref().and_then(|c| c.hpb.as_ref())
    }

    fn hpb_mut(&mut self) -> Option<&mut Hpb> {
        self.mapping_cache.as_mut().and_then(|c| c.hpb.as_mut())
    }

    /// The device changed the mapping of `lpn` (write, trim, GC, wear levelling, remap,
    /// a failed program moving a buffer): a host entry for it becomes stale.
    pub(crate) fn hpb_mark(&mut self, lpn: u32) {
        if let Some(hpb) = self.hpb_mut() {
            hpb.mark(lpn);
        }
    }

    /// Step 2 for a host read: what the host's map offers, counted. On a hit the entries
    /// the host sent are checked against the device's mapping (they must be equal: the
    /// device found no dirty bit).
    pub(crate) fn hpb_lookup(&mut self, lpn: u32, count: u32) -> HpbLookup {
        let Some(hpb) = self.hpb_ref() else {
            return HpbLookup::NotEligible;
        };
        let outcome = hpb.lookup(lpn, count);
        match outcome {
            HpbLookup::NotEligible => {}
            HpbLookup::Miss => self.counters.hpb_misses += 1,
            HpbLookup::Stale => self.counters.hpb_stale += 1,
            HpbLookup::Hit => {
                for l in lpn..lpn + count {
                    let sent = hpb.entry(l);
                    let mapped = self.mapping.l2p.at(l as usize);
                    assert_eq!(
                        sent, mapped,
                        "HPB: lpn {l}: the host sent slot {sent}, the device maps {mapped}, \
                         and no dirty bit said so"
                    );
                }
                self.counters.hpb_hits += 1;
                self.hpb_mut().expect("on").touch(lpn, count);
            }
        }
        outcome
    }

    /// Step 3 after a read completed at `done_ns`: the subregions the device recommends
    /// (activation after misses, reload after a stale entry) are loaded by the host.
    pub(crate) fn hpb_respond(
        &mut self,
        lpn: u32,
        count: u32,
        outcome: HpbLookup,
        done_ns: Nanos,
    ) -> Result<(), FtlError> {
        let load = match (outcome, self.hpb_mut()) {
            (HpbLookup::Miss, Some(hpb)) => hpb.note_miss(lpn, count),
            (HpbLookup::Stale, Some(hpb)) => hpb.stale_subregions(lpn, count),
            _ => return Ok(()),
        };
        for subregion in load {
            self.hpb_load(subregion, done_ns)?;
        }
        Ok(())
    }

    /// HPB READ BUFFER of one subregion: the translation pages holding its entries are
    /// read on their dies and the map crosses the host link; the host installs it.
    fn hpb_load(&mut self, subregion: u32, now_ns: Nanos) -> Result<(), FtlError> {
        let Some(cache) = self.mapping_cache.as_ref() else {
            return Ok(());
        };
        let per = cache.hpb.as_ref().expect("on").entries_per_subregion;
        let first = subregion * per;
        let end = (first + per).min(self.user_lbas as u32);
        if first >= end {
            return Ok(());
        }
        for unit in cache.translation_units(first..end) {
            self.nand.occupy_unit(unit, UnitOp::Read, now_ns)?;
            self.counters.hpb_map_reads += 1;
        }
        // The map's transfer is booked from now, not from the end of those reads: the
        // link is a single busy-until resource, and a booking in the future would hold
        // back every host transfer before it.
        let map_bytes = (end - first) as u64 * HPB_ENTRY_BYTES;
        let link_ns = self.config.host.link_ns_per_4k * map_bytes.div_ceil(4096);
        self.host_link.reserve(now_ns, link_ns);
        let slots: Vec<u32> = (first..end)
            .map(|l| self.mapping.l2p.at(l as usize))
            .collect();
        let hpb = self.hpb_mut().expect("on");
        let dropped = hpb.install(subregion, slots);
        self.counters.hpb_loads += 1;
        self.counters.hpb_region_drops += dropped;
        Ok(())
    }

    /// Full check: every entry the host holds without a dirty bit is the device's mapping.
    pub(crate) fn check_hpb(&self) -> Result<(), String> {
        let Some(hpb) = self.hpb_ref() else {
            return Ok(());
        };
        let mut active = 0;
        for r in hpb.regions.values() {
            for (&subregion, s) in &r.subregions {
                active += 1;
                for (i, &slot) in s.slots.iter().enumerate() {
                    let lpn = subregion * hpb.entries_per_subregion + i as u32;
                    let mapped = self.mapping.l2p.at(lpn as usize);
                    if !s.is_dirty(i) && slot != mapped {
                        return Err(format!(
                            "HPB: lpn {lpn}: host entry {slot}, device {mapped}, not dirty"
                        ));
                    }
                }
            }
        }
        if active != hpb.active || active > hpb.subregions_max {
            return Err(format!(
                "HPB: {active} active subregions, counted {}, budget {}",
                hpb.active, hpb.subregions_max
            ));
        }
        Ok(())
    }
}
