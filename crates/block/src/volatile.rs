//! A volatile write cache in front of any [`BlockDevice`]: the power-loss physics of an
//! eMMC or UFS device with its cache enabled, as a wrapper that every layer above the block
//! interface (F2FS, the page cache, the whole stack) can be crash-tested on.

use std::collections::BTreeMap;

use flashstack_sim::{Nanos, Rng};
use serde::{Deserialize, Serialize};

use crate::{
    check_range, check_remap_extents, remap_below, BlockDevice, BlockError, Completion, Hints,
    Payload, Remap, RemapExtent, LBA_SIZE,
};

/// The cache's size and the seed of its choices.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VolatileCacheConfig {
    /// Most 4 KiB versions the cache holds before it destages one to the device below;
    /// 0 is no cache at all (write-through: every request goes straight down).
    pub capacity_lbas: u32,
    /// Seeds every choice the cache makes: which entry to destage when full, and what
    /// survives a power loss.
    pub seed: u64,
}

/// What the cache did since it was built.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct VolatileCacheCounters {
    /// LBAs written or trimmed into the cache (acknowledged, not yet durable).
    pub cached_lbas: u64,
    /// LBAs written down to the device below (when full, or at a flush).
    pub destaged_lbas: u64,
    pub flushes: u64,
    pub power_losses: u64,
    /// LBAs still cached at a power loss whose (one chosen) version reached the device.
    pub survived_lbas: u64,
    /// LBAs still cached at a power loss that kept their older content.
    pub lost_lbas: u64,
    /// Writes with [`Hints::fua`] passed straight down (not cached), and the LBAs they
    /// carried.
    #[serde(skip_serializing_if = "is_zero")]
    pub fua_writes: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub fua_lbas: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What one power loss did to the cached LBAs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PowerLoss {
    /// LBAs with at least one acknowledged, unflushed version when power failed.
    pub pending_lbas: u64,
    /// Of those, LBAs where one of the versions reached the device below.
    pub survived_lbas: u64,
    /// Of those, LBAs that kept their older content.
    pub lost_lbas: u64,
}

/// One acknowledged version of an LBA: its bytes (`None`: trimmed) and the hints it came
/// with, passed on when it is destaged.
#[derive(Clone, Debug)]
struct Version {
    data: Option<Box<[u8]>>,
    hints: Hints,
}

/// A block device with a volatile write cache in front of `D`.
///
/// Physics: a write or trim is acknowledged once it is in the cache (it completes at its
/// arrival time) and is readable at once; the cache writes entries down to `D` in an order
/// of its own: one chosen at random when it holds more than `capacity_lbas` versions, all
/// of them (in LBA order) at a `flush`, which completes when `D`'s flush does. Reads see the
/// newest version of every LBA. A write with [`Hints::fua`] (force unit access) is not
/// cached: it goes straight down with its hint and completes when `D` has it durably; the
/// versions of its LBAs cached before it are dropped, as it supersedes them.
///
/// What survives power loss (what real eMMC and UFS caches allow):
/// - everything written or trimmed before the last completed `flush` (as far as `D`
///   keeps what it was given: an FTL below keeps flushed data, a RAM disk keeps all);
/// - every completed FUA write (as far as `D` honours FUA), unless a later write to the
///   same LBA is cached and itself survives;
/// - of the writes and trims acknowledged since, any subset, persisted in any order:
///   after [`lose_power`](VolatileCache::lose_power) each such LBA holds its content
///   before them or any one of the versions written to it since the flush, independently
///   of every other LBA (a multi-LBA request may be torn at 4 KiB granularity). The
///   choice is drawn from the seed: per power loss a keep probability out of
///   {0, ¼, ½, ¾, 1}, per LBA whether it survives and which version, and the order in
///   which the survivors reach `D` (which matters for a `D` that may itself lose power).
///
/// A request that fails with [`BlockError::PowerLoss`] may have partly reached the cache:
/// the request an armed cut tears has all its LBAs cached as candidates. Until
/// `lose_power` every request fails with `PowerLoss`.
///
/// With `capacity_lbas = 0` the cache is off: requests go straight to `D` (an armed cut
/// still counts them and tears one), so a stack can carry the wrapper at no cost.
pub struct VolatileCache<D> {
    inner: D,
    config: VolatileCacheConfig,
    rng: Rng,
    /// Acknowledged versions per LBA, oldest first.
    pending: BTreeMap<u64, Vec<Version>>,
    /// Versions in `pending`, the figure bounded by `capacity_lbas`.
    versions: usize,
    /// Write or trim requests until the armed cut tears one (1: the next).
    cut_in: Option<u64>,
    powered: bool,
    counters: VolatileCacheCounters,
    /// The device below's [`Remap::remap_lbas_max`], learnt when `as_remap` offers REMAP.
    remap_lbas_max: u32,
}

impl<D: BlockDevice> VolatileCache<D> {
    pub fn new(inner: D, config: VolatileCacheConfig) -> Self {
        let rng = Rng::new(config.seed);
        VolatileCache {
            inner,
            config,
            rng,
            pending: BTreeMap::new(),
            versions: 0,
            cut_in: None,
            powered: true,
            counters: VolatileCacheCounters::default(),
            remap_lbas_max: 0,
        }
    }

    /// A wrapper that passes every request straight down (`capacity_lbas = 0`).
    pub fn write_through(inner: D) -> Self {
        Self::new(
            inner,
            VolatileCacheConfig {
                capacity_lbas: 0,
                seed: 0,
            },
        )
    }

    pub fn config(&self) -> &VolatileCacheConfig {
        &self.config
    }

    /// Changes the cache's size and seed (a device's cache-enable setting, or a new run of
    /// choices); what no longer fits is written down first.
    pub fn set_config(
        &mut self,
        arrival_ns: Nanos,
        config: VolatileCacheConfig,
    ) -> Result<(), BlockError> {
        self.rng = Rng::new(config.seed);
        self.config = config;
        self.make_room(arrival_ns).map(drop)
    }

    pub fn counters(&self) -> &VolatileCacheCounters {
        &self.counters
    }

    pub fn inner(&self) -> &D {
        &self.inner
    }

    pub fn inner_mut(&mut self) -> &mut D {
        &mut self.inner
    }

    /// The device below, dropping whatever the cache still holds (as unplugging it would).
    pub fn into_inner(self) -> D {
        self.inner
    }

    /// LBAs with acknowledged versions not yet written down.
    pub fn pending_lbas(&self) -> usize {
        self.pending.len()
    }

    pub fn is_powered(&self) -> bool {
        self.powered
    }

    /// Arms a power cut: the `requests`-th write or trim from now (1: the next) is torn
    /// and fails, and so does every request after it until [`lose_power`].
    ///
    /// [`lose_power`]: VolatileCache::lose_power
    pub fn arm_power_cut(&mut self, requests: u64) {
        assert!(requests >= 1, "a power cut must tear some request");
        self.cut_in = Some(requests);
    }

    pub fn disarm_power_cut(&mut self) {
        self.cut_in = None;
    }

    /// Power fails now, between requests.
    pub fn cut_power(&mut self) {
        self.powered = false;
        self.cut_in = None;
    }

    /// The power loss itself (cutting power first if it is still on): every cached LBA
    /// keeps its old content or takes one of its cached versions, as the type's doc says,
    /// the survivors written down in a random order. The cache is then empty and powered
    /// again; the device below is left as the survivors left it (power it down and up
    /// yourself if it has volatile state of its own). Survivors stop at the first request
    /// the device below refuses for power loss: it failed too, and the rest are lost.
    pub fn lose_power(&mut self, arrival_ns: Nanos) -> Result<PowerLoss, BlockError> {
        self.cut_power();
        let keep = self.rng.below(5) as f64 / 4.0;
        let pending = std::mem::take(&mut self.pending);
        self.versions = 0;
        let pending_lbas = pending.len() as u64;
        let mut survivors: Vec<(u64, Version)> = Vec::new();
        for (lba, mut versions) in pending {
            if self.rng.chance(keep) {
                let pick = self.rng.below(versions.len() as u64) as usize;
                survivors.push((lba, versions.swap_remove(pick)));
            }
        }
        self.shuffle(&mut survivors);
        let mut survived_lbas = 0;
        for (lba, version) in &survivors {
            match self.write_down(arrival_ns, *lba, 1, version) {
                Ok(_) => survived_lbas += 1,
                Err(BlockError::PowerLoss) => break,
                Err(e) => return Err(e),
            }
        }
        let loss = PowerLoss {
            pending_lbas,
            survived_lbas,
            lost_lbas: pending_lbas - survived_lbas,
        };
        self.counters.power_losses += 1;
        self.counters.survived_lbas += loss.survived_lbas;
        self.counters.lost_lbas += loss.lost_lbas;
        self.powered = true;
        Ok(loss)
    }

    /// Fisher-Yates with the cache's generator.
    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.rng.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }

    fn check_powered(&self) -> Result<(), BlockError> {
        if self.powered {
            Ok(())
        } else {
            Err(BlockError::PowerLoss)
        }
    }

    /// Counts a write or trim against an armed cut; true when this one is torn.
    fn tick_cut(&mut self) -> bool {
        match self.cut_in.as_mut() {
            Some(1) => {
                self.cut_power();
                true
            }
            Some(n) => {
                *n -= 1;
                false
            }
            None => false,
        }
    }

    fn stash(&mut self, lba: u64, version: Version) {
        self.pending.entry(lba).or_default().push(version);
        self.versions += 1;
        self.counters.cached_lbas += 1;
    }

    /// Writes `count` LBAs from `lba` holding `version` (its bytes cover all of them) to the
    /// device below.
    fn write_down(
        &mut self,
        arrival_ns: Nanos,
        lba: u64,
        count: u32,
        version: &Version,
    ) -> Result<Completion, BlockError> {
        let done = match &version.data {
            Some(bytes) => {
                self.inner
                    .write(arrival_ns, lba, Payload::Bytes(bytes), version.hints)?
            }
            None => self.inner.trim(arrival_ns, lba, count)?,
        };
        self.counters.destaged_lbas += count as u64;
        Ok(done)
    }

    /// Destages randomly chosen LBAs (their newest version) while the cache holds more
    /// versions than it may. Returns when the last destage completed (or `arrival_ns`).
    fn make_room(&mut self, arrival_ns: Nanos) -> Result<Nanos, BlockError> {
        let mut end = arrival_ns;
        while self.versions > self.config.capacity_lbas as usize {
            let nth = self.rng.below(self.pending.len() as u64) as usize;
            let lba = *self.pending.keys().nth(nth).expect("a cached LBA");
            end = end.max(self.destage(arrival_ns, lba, 1)?);
        }
        Ok(end)
    }

    /// Writes the newest version of each LBA in `lba..lba + count` (all cached, all with
    /// the same kind of version) down as one request and forgets their versions.
    fn destage(&mut self, arrival_ns: Nanos, lba: u64, count: u32) -> Result<Nanos, BlockError> {
        let newest = |this: &Self, l: u64| this.pending[&l].last().expect("a version").clone();
        let first = newest(self, lba);
        let version = match first.data {
            Some(_) => {
                let mut bytes = Vec::with_capacity(count as usize * LBA_SIZE);
                for l in lba..lba + count as u64 {
                    let v = newest(self, l);
                    bytes.extend_from_slice(v.data.as_deref().expect("a run of writes"));
                }
                Version {
                    data: Some(bytes.into_boxed_slice()),
                    hints: first.hints,
                }
            }
            None => first,
        };
        let result = self.write_down(arrival_ns, lba, count, &version);
        let done = self.note_power(result)?;
        for l in lba..lba + count as u64 {
            let versions = self.pending.remove(&l).expect("a cached LBA");
            self.versions -= versions.len();
        }
        Ok(done.complete_ns)
    }

    /// Destages everything, in LBA order, consecutive LBAs of one kind and the same hints
    /// as one request each.
    fn destage_all(&mut self, arrival_ns: Nanos) -> Result<Nanos, BlockError> {
        let mut end = arrival_ns;
        while let Some((&lba, _)) = self.pending.first_key_value() {
            let kind = |this: &Self, l: u64| {
                this.pending
                    .get(&l)
                    .and_then(|v| v.last())
                    .map(|v| (v.data.is_some(), v.hints))
            };
            let first = kind(self, lba);
            let mut count = 1u32;
            while count < RUN_LBAS_MAX && kind(self, lba + count as u64) == first {
                count += 1;
            }
            end = end.max(self.destage(arrival_ns, lba, count)?);
        }
        Ok(end)
    }

    /// A FUA write: its LBAs' cached versions are superseded (dropped first, so that a
    /// power cut during the write below leaves each LBA its durable content before them
    /// or the FUA bytes, never an older cached version written after), then the write goes
    /// down with its hint.
    fn write_fua(
        &mut self,
        arrival_ns: Nanos,
        lba: u64,
        payload: Payload<'_>,
        hints: Hints,
    ) -> Result<Completion, BlockError> {
        let count = payload.lba_count();
        let superseded: Vec<u64> = self
            .pending
            .range(lba..lba + count as u64)
            .map(|(&l, _)| l)
            .collect();
        for l in superseded {
            let versions = self.pending.remove(&l).expect("listed above");
            self.versions -= versions.len();
        }
        self.counters.fua_writes += 1;
        self.counters.fua_lbas += count as u64;
        let result = self.inner.write(arrival_ns, lba, payload, hints);
        self.note_power(result)
    }

    /// A device below that lost power takes this one with it (one power supply).
    fn note_power<T>(&mut self, result: Result<T, BlockError>) -> Result<T, BlockError> {
        if matches!(result, Err(BlockError::PowerLoss)) {
            self.cut_power();
        }
        result
    }

    fn done(start_ns: Nanos, complete_ns: Nanos) -> Completion {
        Completion {
            start_ns,
            complete_ns: complete_ns.max(start_ns),
        }
    }
}

/// Longest run of LBAs destaged as one request.
const RUN_LBAS_MAX: u32 = 256;

impl<D: BlockDevice> BlockDevice for VolatileCache<D> {
    fn capacity_lbas(&self) -> u64 {
        self.inner.capacity_lbas()
    }

    fn write(
        &mut self,
        arrival_ns: Nanos,
        lba: u64,
        payload: Payload<'_>,
        hints: Hints,
    ) -> Result<Completion, BlockError> {
        self.check_powered()?;
        if let Payload::Bytes(bytes) = payload {
            if bytes.len() % LBA_SIZE != 0 {
                return Err(BlockError::Misaligned { len: bytes.len() });
            }
        }
        check_range(lba, payload.lba_count(), self.capacity_lbas())?;
        let torn = self.tick_cut();
        if self.config.capacity_lbas == 0 && !torn {
            let result = self.inner.write(arrival_ns, lba, payload, hints);
            return self.note_power(result);
        }
        if hints.fua && !torn {
            return self.write_fua(arrival_ns, lba, payload, hints);
        }
        let Payload::Bytes(bytes) = payload else {
            return Err(if torn {
                BlockError::PowerLoss
            } else {
                BlockError::ContentsNotStored
            });
        };
        for (i, block) in bytes.chunks_exact(LBA_SIZE).enumerate() {
            let data = Some(block.to_vec().into_boxed_slice());
            self.stash(lba + i as u64, Version { data, hints });
        }
        if torn {
            return Err(BlockError::PowerLoss);
        }
        let end = self.make_room(arrival_ns)?;
        Ok(Self::done(arrival_ns, end))
    }

    fn read(
        &mut self,
        arrival_ns: Nanos,
        lba: u64,
        count: u32,
        out: Option<&mut [u8]>,
    ) -> Result<Completion, BlockError> {
        self.check_powered()?;
        let end = lba.saturating_add(count as u64);
        let Some(out) = out else {
            let result = self.inner.read(arrival_ns, lba, count, None);
            return self.note_power(result);
        };
        let result = self.inner.read(arrival_ns, lba, count, Some(&mut *out));
        let done = self.note_power(result)?;
        for (&l, versions) in self.pending.range(lba..end) {
            let at = (l - lba) as usize * LBA_SIZE;
            let dst = &mut out[at..at + LBA_SIZE];
            match &versions.last().expect("a version").data {
                Some(bytes) => dst.copy_from_slice(bytes),
                None => dst.fill(0),
            }
        }
        Ok(done)
    }

    fn trim(&mut self, arrival_ns: Nanos, lba: u64, count: u32) -> Result<Completion, BlockError> {
        self.check_powered()?;
        check_range(lba, count, self.capacity_lbas())?;
        let torn = self.tick_cut();
        if self.config.capacity_lbas == 0 && !torn {
            let result = self.inner.trim(arrival_ns, lba, count);
            return self.note_power(result);
        }
        for l in lba..lba + count as u64 {
            let hints = Hints::default();
            self.stash(l, Version { data: None, hints });
        }
        if torn {
            return Err(BlockError::PowerLoss);
        }
        let end = self.make_room(arrival_ns)?;
        Ok(Self::done(arrival_ns, end))
    }

    fn flush(&mut self, arrival_ns: Nanos) -> Result<Completion, BlockError> {
        self.check_powered()?;
        let end = self.destage_all(arrival_ns)?;
        self.counters.flushes += 1;
        let result = self.inner.flush(end);
        let done = self.note_power(result)?;
        Ok(Self::done(arrival_ns, done.complete_ns))
    }

    /// Offered when the device below can remap; see the [`Remap`] impl for the ordering.
    fn as_remap(&mut self) -> Option<&mut dyn Remap> {
        self.remap_lbas_max = self.inner.as_remap()?.remap_lbas_max();
        Some(self)
    }

    fn physical_free_bytes(&self) -> Option<u64> {
        self.inner.physical_free_bytes()
    }

    fn physical_budget_bytes(&self) -> Option<u64> {
        self.inner.physical_budget_bytes()
    }
}

/// REMAP through the cache, for a device below that has it.
///
/// Ordering: the remap first destages the whole cache (every buffered write and trim, in
/// LBA order, as a flush does), then hands the extents to the device below. Destaging only
/// the source and destination ranges would not do: a remap promises that everything
/// written or trimmed before it is durable when it returns, and the device below keeps
/// that promise only for what it has been given. So a remap through the cache costs what a
/// flush costs plus the remap, and afterwards the cache is empty; a destination LBA
/// written before the remap can never reappear over the remapped data after a power loss.
///
/// A remap counts as one request against an armed power cut: the torn remap fails with
/// [`BlockError::PowerLoss`] before anything is destaged or remapped (none of it happens,
/// as the trait allows), and the cached versions stay candidates for
/// [`VolatileCache::lose_power`].
impl<D: BlockDevice> Remap for VolatileCache<D> {
    fn remap_lbas_max(&self) -> u32 {
        // Learnt by `as_remap`, the only way to reach this impl: `&self` cannot ask the
        // device below (its `as_remap` takes `&mut`).
        self.remap_lbas_max
    }

    fn remap_extents(
        &mut self,
        arrival_ns: Nanos,
        extents: &[RemapExtent],
    ) -> Result<Completion, BlockError> {
        self.check_powered()?;
        self.remap_lbas_max = remap_below(&mut self.inner, "write cache")?.remap_lbas_max();
        check_remap_extents(extents, self.capacity_lbas(), self.remap_lbas_max)?;
        if self.tick_cut() {
            return Err(BlockError::PowerLoss);
        }
        let end = self.destage_all(arrival_ns)?;
        let result = remap_below(&mut self.inner, "write cache")?.remap_extents(end, extents);
        let done = self.note_power(result)?;
        Ok(Self::done(arrival_ns, done.complete_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A RAM disk that keeps every write (no volatile state of its own) and counts requests.
    struct Ram {
        blocks: Vec<[u8; LBA_SIZE]>,
        writes: u64,
        flushes: u64,
    }

    impl Ram {
        fn new(lbas: usize) -> Ram {
            Ram {
                blocks: vec![[0; LBA_SIZE]; lbas],
                writes: 0,
                flushes: 0,
            }
        }
    }

    impl BlockDevice for Ram {
        fn capacity_lbas(&self) -> u64 {
            self.blocks.len() as u64
        }
        fn write(
            &mut self,
            t: Nanos,
            lba: u64,
            p: Payload<'_>,
            _: Hints,
        ) -> Result<Completion, BlockError> {
            let Payload::Bytes(bytes) = p else {
                return Err(BlockError::ContentsNotStored);
            };
            check_range(lba, p.lba_count(), self.capacity_lbas())?;
            for (i, b) in bytes.chunks_exact(LBA_SIZE).enumerate() {
                self.blocks[lba as usize + i].copy_from_slice(b);
            }
            self.writes += 1;
            Ok(Completion {
                start_ns: t,
                complete_ns: t + 10,
            })
        }
        fn read(
            &mut self,
            t: Nanos,
            lba: u64,
            count: u32,
            out: Option<&mut [u8]>,
        ) -> Result<Completion, BlockError> {
            check_range(lba, count, self.capacity_lbas())?;
            if let Some(out) = out {
                for (i, dst) in out.chunks_exact_mut(LBA_SIZE).enumerate() {
                    dst.copy_from_slice(&self.blocks[lba as usize + i]);
                }
            }
            Ok(Completion {
                start_ns: t,
                complete_ns: t + 1,
            })
        }
        fn trim(&mut self, t: Nanos, lba: u64, count: u32) -> Result<Completion, BlockError> {
            check_range(lba, count, self.capacity_lbas())?;
            for l in lba..lba + count as u64 {
                self.blocks[l as usize] = [0; LBA_SIZE];
            }
            Ok(Completion {
                start_ns: t,
                complete_ns: t + 1,
            })
        }
        fn flush(&mut self, t: Nanos) -> Result<Completion, BlockError> {
            self.flushes += 1;
            Ok(Completion {
                start_ns: t,
                complete_ns: t + 100,
            })
        }
    }

    /// The RAM disk's REMAP: a copy (a RAM disk has no mapping to change), counted.
    struct RemapRam(Ram, u64);

    impl BlockDevice for RemapRam {
        fn capacity_lbas(&self) -> u64 {
            self.0.capacity_lbas()
        }
        fn write(
            &mut self,
            t: Nanos,
            lba: u64,
            p: Payload<'_>,
            h: Hints,
        ) -> Result<Completion, BlockError> {
            self.0.write(t, lba, p, h)
        }
        fn read(
            &mut self,
            t: Nanos,
            lba: u64,
            count: u32,
            out: Option<&mut [u8]>,
        ) -> Result<Completion, BlockError> {
            self.0.read(t, lba, count, out)
        }
        fn trim(&mut self, t: Nanos, lba: u64, count: u32) -> Result<Completion, BlockError> {
            self.0.trim(t, lba, count)
        }
        fn flush(&mut self, t: Nanos) -> Result<Completion, BlockError> {
            self.0.flush(t)
        }
        fn as_remap(&mut self) -> Option<&mut dyn Remap> {
            Some(self)
        }
    }

    impl Remap for RemapRam {
        fn remap_lbas_max(&self) -> u32 {
            4
        }
        fn remap_extents(
            &mut self,
            t: Nanos,
            extents: &[RemapExtent],
        ) -> Result<Completion, BlockError> {
            check_remap_extents(extents, self.capacity_lbas(), 4)?;
            for e in extents {
                for i in 0..e.count as usize {
                    self.0.blocks[e.dst as usize + i] = self.0.blocks[e.src as usize + i];
                }
            }
            self.1 += 1;
            Ok(Completion {
                start_ns: t,
                complete_ns: t + 1_000,
            })
        }
    }

    fn remap_cache(capacity_lbas: u32, seed: u64) -> VolatileCache<RemapRam> {
        let config = VolatileCacheConfig {
            capacity_lbas,
            seed,
        };
        VolatileCache::new(RemapRam(Ram::new(16), 0), config)
    }

    #[test]
    fn remap_is_offered_only_over_a_device_that_has_it() {
        assert!(cache(8, 1).as_remap().is_none());
        assert_eq!(remap_cache(8, 1).as_remap().unwrap().remap_lbas_max(), 4);
    }

    /// Buffered writes to the source and the destination are destaged before the remap:
    /// the device below remaps the new source data, the cache is empty afterwards, and no
    /// power loss after the remap brings the destination's older write back.
    #[test]
    fn remap_through_the_cache_destages_first_and_survives_power_loss() {
        for seed in 0..20 {
            let mut dev = remap_cache(8, seed);
            dev.write(0, 0, Payload::Bytes(&page(7)), Hints::default())
                .unwrap();
            dev.write(1, 9, Payload::Bytes(&page(3)), Hints::default())
                .unwrap();
            let remap = dev.as_remap().expect("the RAM disk remaps");
            let done = remap.remap(2, 0, 9, 1).unwrap();
            assert_eq!(
                done.complete_ns, 1_012,
                "the remap waits for the destage (10 ns)"
            );
            assert_eq!(dev.inner().1, 1, "one remap reached the device");
            assert_eq!(
                dev.inner().0.blocks[9][0],
                7,
                "the remap saw the buffered source"
            );
            assert_eq!(dev.pending_lbas(), 0);
            dev.lose_power(3).unwrap();
            assert_eq!(tag_at(&mut dev, 9), 7, "seed {seed}");
        }
    }

    #[test]
    fn a_torn_remap_remaps_nothing() {
        let mut dev = remap_cache(8, 1);
        dev.write(0, 0, Payload::Bytes(&page(7)), Hints::default())
            .unwrap();
        dev.arm_power_cut(1);
        let remap = dev.as_remap().unwrap();
        assert_eq!(remap.remap(1, 0, 9, 1), Err(BlockError::PowerLoss));
        assert_eq!(dev.inner().1, 0);
        assert_eq!(dev.pending_lbas(), 1, "the write is still a candidate");
        let too_long = [RemapExtent {
            src: 0,
            dst: 8,
            count: 5,
        }];
        dev.lose_power(2).unwrap();
        let remap = dev.as_remap().unwrap();
        assert!(matches!(
            remap.remap_extents(3, &too_long),
            Err(BlockError::RemapTooLong { max: 4, .. })
        ));
    }

    fn page(tag: u8) -> Vec<u8> {
        vec![tag; LBA_SIZE]
    }

    fn cache(capacity_lbas: u32, seed: u64) -> VolatileCache<Ram> {
        VolatileCache::new(
            Ram::new(16),
            VolatileCacheConfig {
                capacity_lbas,
                seed,
            },
        )
    }

    fn tag_at<D: BlockDevice>(dev: &mut VolatileCache<D>, lba: u64) -> u8 {
        let mut out = page(0);
        dev.read(0, lba, 1, Some(&mut out)).unwrap();
        assert!(out.iter().all(|&b| b == out[0]), "a torn 4 KiB block");
        out[0]
    }

    fn write(dev: &mut VolatileCache<Ram>, lba: u64, tag: u8) {
        dev.write(0, lba, Payload::Bytes(&page(tag)), Hints::default())
            .unwrap();
    }

    /// FUA against a reference model, over random sequences of writes (a quarter FUA, some
    /// two LBAs long), flushes, armed cuts and power losses: after every power loss each
    /// LBA holds its durable content (last flushed or FUA-written) or one of the versions
    /// acknowledged since; a completed FUA write is durable at once; reads before a loss
    /// always see the newest version.
    #[test]
    fn fua_writes_are_durable_when_they_complete() {
        let mut fua_seen = 0;
        for seed in 0..300u64 {
            let mut rng = Rng::new(seed ^ 0xF0A);
            let mut dev = cache(1 + rng.below(6) as u32, seed);
            // Per LBA: durable tag, and the tags acknowledged since it became durable.
            let mut durable = [0u8; 16];
            let mut since: [Vec<u8>; 16] = Default::default();
            let mut newest = [0u8; 16];
            for step in 0..60u8 {
                let tag = step + 1;
                match rng.below(10) {
                    0 => {
                        dev.flush(0).unwrap();
                        for l in 0..16 {
                            durable[l] = newest[l];
                            since[l].clear();
                        }
                    }
                    1 => {
                        dev.arm_power_cut(1 + rng.below(3));
                    }
                    2 => {
                        dev.cut_power();
                        dev.lose_power(0).unwrap();
                        for l in 0..16 {
                            let got = tag_at(&mut dev, l as u64);
                            assert!(
                                got == durable[l] || since[l].contains(&got),
                                "seed {seed} step {step}: lba {l} holds {got}, durable \
                                 {} or one of {:?}",
                                durable[l],
                                since[l]
                            );
                            durable[l] = got;
                            newest[l] = got;
                            since[l].clear();
                        }
                    }
                    _ => {
                        let lba = rng.below(15);
                        let count = 1 + rng.below(2);
                        let fua = rng.below(4) == 0;
                        let bytes: Vec<u8> = (0..count).flat_map(|_| page(tag)).collect();
                        let hints = Hints {
                            fua,
                            ..Hints::default()
                        };
                        match dev.write(0, lba, Payload::Bytes(&bytes), hints) {
                            Ok(_) => {
                                for l in lba..lba + count {
                                    let l = l as usize;
                                    newest[l] = tag;
                                    if fua {
                                        durable[l] = tag;
                                        since[l].clear();
                                    } else {
                                        since[l].push(tag);
                                    }
                                }
                                fua_seen += u32::from(fua);
                            }
                            Err(BlockError::PowerLoss) => {
                                // A torn request: any of its LBAs may hold it.
                                for l in lba..lba + count {
                                    since[l as usize].push(tag);
                                }
                                dev.lose_power(0).unwrap();
                                for l in 0..16 {
                                    let got = tag_at(&mut dev, l as u64);
                                    assert!(
                                        got == durable[l] || since[l].contains(&got),
                                        "seed {seed} step {step}: torn, lba {l} holds {got}"
                                    );
                                    durable[l] = got;
                                    newest[l] = got;
                                    since[l].clear();
                                }
                            }
                            Err(e) => panic!("seed {seed} step {step}: {e}"),
                        }
                    }
                }
                if dev.is_powered() {
                    for (l, &want) in newest.iter().enumerate() {
                        assert_eq!(tag_at(&mut dev, l as u64), want, "seed {seed}");
                    }
                }
            }
        }
        assert!(fua_seen > 1000, "{fua_seen}");
    }

    /// A FUA write bypasses the cache and drops the versions it supersedes; a flush after it
    /// has nothing of its LBAs to write.
    #[test]
    fn a_fua_write_goes_straight_down() {
        let mut dev = cache(8, 1);
        write(&mut dev, 3, 1);
        write(&mut dev, 4, 2);
        let fua = Hints {
            fua: true,
            ..Hints::default()
        };
        dev.write(0, 3, Payload::Bytes(&page(9)), fua).unwrap();
        assert_eq!(dev.pending_lbas(), 1, "lba 4 stays cached");
        assert_eq!(dev.inner().blocks[3][0], 9, "on the device below at once");
        let c = dev.counters().clone();
        assert_eq!((c.fua_writes, c.fua_lbas, c.destaged_lbas), (1, 1, 0));
        dev.lose_power(0).unwrap();
        assert_eq!(tag_at(&mut dev, 3), 9);
    }

    /// The doc's promise, over many seeds: flushed writes always survive; each unflushed
    /// LBA ends with its flushed content or one of the versions written since; and the
    /// outcomes include every shape a strict prefix cannot give (a later write kept while
    /// an earlier one is lost, an older version kept over a newer one).
    #[test]
    fn power_loss_keeps_flushed_writes_and_any_subset_of_the_rest() {
        let (mut later_without_earlier, mut older_over_newer, mut all_lost, mut all_kept) =
            (0, 0, 0, 0);
        for seed in 0..400 {
            let mut dev = cache(64, seed);
            write(&mut dev, 0, 1);
            write(&mut dev, 1, 1);
            dev.flush(0).unwrap();
            write(&mut dev, 0, 2); // unflushed, in order: 0←2, 1←3, 1←4, 2←5
            write(&mut dev, 1, 3);
            write(&mut dev, 1, 4);
            write(&mut dev, 2, 5);
            assert_eq!(
                [
                    tag_at(&mut dev, 0),
                    tag_at(&mut dev, 1),
                    tag_at(&mut dev, 2)
                ],
                [2, 4, 5]
            );
            let loss = dev.lose_power(0).unwrap();
            assert_eq!(loss.pending_lbas, 3);
            let got = [
                tag_at(&mut dev, 0),
                tag_at(&mut dev, 1),
                tag_at(&mut dev, 2),
            ];
            assert!([1, 2].contains(&got[0]), "seed {seed}: {got:?}");
            assert!([1, 3, 4].contains(&got[1]), "seed {seed}: {got:?}");
            assert!([0, 5].contains(&got[2]), "seed {seed}: {got:?}");
            later_without_earlier += u32::from(got[2] == 5 && got[0] == 1);
            older_over_newer += u32::from(got[1] == 3);
            all_lost += u32::from(got == [1, 1, 0]);
            all_kept += u32::from(got == [2, 4, 5]);
            assert_eq!(dev.pending_lbas(), 0);
            assert!(dev.is_powered());
        }
        assert!(later_without_earlier > 10, "{later_without_earlier}");
        assert!(older_over_newer > 10, "{older_over_newer}");
        assert!(all_lost > 10 && all_kept > 10, "{all_lost} {all_kept}");
    }

    #[test]
    fn the_same_seed_loses_the_same_writes() {
        let run = |seed| {
            let mut dev = cache(4, seed);
            for i in 0..12u8 {
                write(&mut dev, (i % 7) as u64, i + 1);
            }
            dev.trim(0, 3, 2).unwrap();
            dev.lose_power(0).unwrap();
            (0..8).map(|l| tag_at(&mut dev, l)).collect::<Vec<u8>>()
        };
        assert_eq!(run(9), run(9));
        assert!((0..20).any(|s| run(s) != run(9)), "the seed chooses");
    }

    #[test]
    fn reads_see_the_newest_version_and_trims_through_destaging() {
        let mut dev = cache(3, 1);
        for i in 0..10u8 {
            write(&mut dev, (i % 5) as u64, i + 1);
            assert!(dev.versions <= 3, "bounded");
        }
        dev.trim(0, 4, 1).unwrap();
        let expect = [6, 7, 8, 9, 0];
        for (lba, &tag) in expect.iter().enumerate() {
            assert_eq!(tag_at(&mut dev, lba as u64), tag);
        }
        assert!(dev.counters().destaged_lbas > 0);
        let flushes = dev.inner().flushes;
        dev.flush(0).unwrap();
        assert_eq!(dev.inner().flushes, flushes + 1);
        assert_eq!(dev.pending_lbas(), 0);
        dev.lose_power(0).unwrap();
        for (lba, &tag) in expect.iter().enumerate() {
            assert_eq!(tag_at(&mut dev, lba as u64), tag, "flushed: survives");
        }
    }

    #[test]
    fn a_flush_writes_runs_down_as_single_requests() {
        let mut dev = cache(100, 1);
        let bytes: Vec<u8> = (0..8).flat_map(|t| page(t + 1)).collect();
        dev.write(0, 4, Payload::Bytes(&bytes), Hints::default())
            .unwrap();
        assert_eq!(dev.inner().writes, 0, "cached");
        let done = dev.flush(5).unwrap();
        assert_eq!(dev.inner().writes, 1, "one run of 8 LBAs");
        assert_eq!(
            done.complete_ns,
            5 + 10 + 100,
            "the write down, then the flush"
        );
    }

    #[test]
    fn an_armed_cut_tears_the_nth_request_and_refuses_the_rest() {
        let mut dev = cache(100, 3);
        write(&mut dev, 0, 1);
        dev.flush(0).unwrap();
        dev.arm_power_cut(2);
        write(&mut dev, 1, 2);
        let e = dev.write(0, 2, Payload::Bytes(&page(3)), Hints::default());
        assert_eq!(e, Err(BlockError::PowerLoss));
        assert!(!dev.is_powered());
        assert_eq!(dev.read(0, 0, 1, None), Err(BlockError::PowerLoss));
        assert_eq!(dev.flush(0), Err(BlockError::PowerLoss));
        let loss = dev.lose_power(0).unwrap();
        assert_eq!(loss.pending_lbas, 2, "the torn request is a candidate too");
        assert_eq!(tag_at(&mut dev, 0), 1);
    }

    #[test]
    fn write_through_passes_every_request_down() {
        let mut dev = VolatileCache::write_through(Ram::new(8));
        dev.write(0, 1, Payload::Bytes(&page(7)), Hints::default())
            .unwrap();
        assert_eq!(dev.inner().writes, 1);
        assert_eq!(dev.lose_power(0).unwrap().pending_lbas, 0);
        assert_eq!(tag_at(&mut dev, 1), 7, "already down: survives");
        dev.arm_power_cut(1);
        let e = dev.write(0, 2, Payload::Bytes(&page(8)), Hints::default());
        assert_eq!(e, Err(BlockError::PowerLoss));
        assert_eq!(
            dev.inner().writes,
            1,
            "the torn request never went down whole"
        );
        dev.lose_power(0).unwrap();
        assert!([0, 8].contains(&tag_at(&mut dev, 2)));
        assert!(matches!(
            dev.write(0, 8, Payload::Bytes(&page(1)), Hints::default()),
            Err(BlockError::OutOfRange { .. })
        ));
    }
}
