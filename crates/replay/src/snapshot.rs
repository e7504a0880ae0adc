//! Existing data: the files a phone holds before a workload runs, written once from their
//! zones' content mixes, then optionally aged by random overwrites.
//!
//! The LDC paper initialises "the compression ratio of existing data in flash storage ...
//! based on the compressibility distribution" of its volume snapshots (§6.1) before each
//! run. Laying the data down once leaves every block fully valid, which no phone in use
//! has; aging overwrites a share of it at random so that, as on a used phone, valid data is
//! spread over partly invalid blocks and garbage collection has data to move.

use std::fmt;
use std::ops::Range;

use flashstack_block::{BlockDevice, Hints};
use flashstack_content::{ContentMix, Zone};
use flashstack_sim::Rng;
use flashstack_trace::builtin::ZoneSpec;

use crate::{Progress, ReplayError, Replayer};

/// Share of the existing data overwritten at random by [`Replayer::age_snapshot`] in
/// `flashstack run --workload` (and in `reproduce ldc`).
pub const DEFAULT_SNAPSHOT_AGING: f64 = 0.5;
/// LBAs per write when laying the data down (a large sequential copy).
const CHUNK_LBAS: u64 = 32;
const AGING_SALT: u64 = 0x5A97_0A6E_D5A7_A6E5;

/// Content-model zones for a built-in workload's zone specs (`BuiltinWorkload::zones`,
/// `snapshot` or `content_zones()`); a bad mix names its zone.
pub fn content_zones(specs: &[ZoneSpec]) -> Result<Vec<Zone>, ReplayError> {
    specs
        .iter()
        .map(|z| {
            let mix: ContentMix = z
                .mix
                .parse()
                .map_err(|e| ReplayError::Content(format!("zone {}: {e}", z.name)))?;
            Ok(Zone::new(z.lbas.clone(), mix))
        })
        .collect()
}

/// How existing data (and its aging) reaches a compressing device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LayDown {
    /// Stored uncompressed whatever the device's policy, each page tagged with its
    /// predicted ratio: the same starting state for every policy, as the LDC paper
    /// initialises "the compression ratio of existing data" from its snapshots (§6.1), so
    /// that only what happens during the run shows a policy's choices (caGC may compress
    /// this data when GC migrates it; SC and zFTL never do).
    #[default]
    Neutral,
    /// Written through the policy under test, as if the device had stored it all along
    /// (large sequential writes let Eq. 2 compress even executables).
    ThroughPolicy,
}

impl LayDown {
    pub fn name(self) -> &'static str {
        match self {
            LayDown::Neutral => "policy-neutral (stored raw)",
            LayDown::ThroughPolicy => "through the policy under test",
        }
    }
}

/// What laying down the existing data did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SnapshotReport {
    /// How the data was laid down (set it before with
    /// [`Replayer::set_snapshot_lay_down`]).
    pub lay_down: LayDown,
    pub zones: usize,
    pub lbas_written: u64,
    /// Share of the user capacity the existing data takes.
    pub utilization: f64,
    pub aging_writes: u64,
}

impl fmt::Display for SnapshotReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "existing data: {} LBAs in {} zones ({:.0}% of the device), aged with {} random \
             overwrites, laid down {}",
            self.lbas_written,
            self.zones,
            self.utilization * 100.0,
            self.aging_writes,
            self.lay_down.name()
        )
    }
}

impl Replayer {
    /// How [`initialise_snapshot`](Self::initialise_snapshot) and
    /// [`age_snapshot`](Self::age_snapshot) write (default [`LayDown::Neutral`]).
    pub fn set_snapshot_lay_down(&mut self, lay_down: LayDown) {
        self.snapshot.lay_down = lay_down;
    }

    /// Runs `f` with host writes stored raw if the lay-down is policy-neutral.
    fn laying_down<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        let raw = self.snapshot.lay_down == LayDown::Neutral;
        self.ftl.set_raw_host_writes(raw);
        let result = f(self);
        self.ftl.set_raw_host_writes(false);
        result
    }

    /// Writes every LBA of `zones` once, with content from each zone's mix, before the
    /// measurement starts (call it before [`prepare`](Self::prepare)).
    ///
    /// The zones are added to the content model after the configured ones
    /// (`RunConfig::content.zones`), which win where both cover an LBA, so later rewrites
    /// and `--verify` see the same classes.
    pub fn initialise_snapshot(
        &mut self,
        zones: &[Zone],
        progress: &mut dyn Progress,
    ) -> Result<&SnapshotReport, ReplayError> {
        if self.prepared {
            return Err(ReplayError::SnapshotAfterPrepare);
        }
        let capacity = self.ftl.capacity_lbas();
        if let Some((index, zone)) = zones.iter().enumerate().find(|(_, z)| z.end_lba > capacity) {
            return Err(ReplayError::SnapshotBeyondCapacity {
                index,
                lbas: zone.lbas(),
                capacity_lbas: capacity,
            });
        }
        let mut all = self.content.zones().to_vec();
        all.extend(zones.iter().cloned());
        self.content = self
            .content
            .clone()
            .with_zones(all)
            .map_err(|e| ReplayError::Content(e.to_string()))?;
        let total: u64 = zones.iter().map(Zone::len_lbas).sum();
        progress.phase("existing data", Some(total));
        let mut written = 0;
        for zone in zones {
            self.laying_down(|r| r.lay_down(zone.lbas(), &mut written, progress))?;
            self.snapshot_ranges.push(zone.lbas());
        }
        self.snapshot.zones += zones.len();
        self.snapshot.lbas_written += written;
        self.snapshot.utilization = self.snapshot.lbas_written as f64 / capacity as f64;
        Ok(&self.snapshot)
    }

    /// Writes every LBA of `lbas` once, in chunks, counting them in `written`.
    pub(crate) fn lay_down(
        &mut self,
        lbas: Range<u64>,
        written: &mut u64,
        progress: &mut dyn Progress,
    ) -> Result<(), ReplayError> {
        let mut lba = lbas.start;
        while lba < lbas.end {
            let count = CHUNK_LBAS.min(lbas.end - lba);
            let now = self.ftl.busy_until_ns();
            self.write(now, lba, count as u32, Hints::default())
                .map_err(ReplayError::Snapshot)?;
            lba += count;
            *written += count;
            if written.is_multiple_of(CHUNK_LBAS * 1024) {
                progress.advance(*written);
            }
        }
        Ok(())
    }

    /// Overwrites `fraction` × the existing data's LBAs, one at a time at uniformly random
    /// places among them (new versions of the same content classes). Returns the writes.
    pub fn age_snapshot(
        &mut self,
        fraction: f64,
        progress: &mut dyn Progress,
    ) -> Result<u64, ReplayError> {
        if self.prepared {
            return Err(ReplayError::SnapshotAfterPrepare);
        }
        let total: u64 = self.snapshot_ranges.iter().map(|r| r.end - r.start).sum();
        let writes = (total as f64 * fraction.max(0.0)) as u64;
        if writes == 0 {
            return Ok(0);
        }
        // Cumulative LBA counts, to map a uniform index onto the ranges.
        let mut ends = Vec::with_capacity(self.snapshot_ranges.len());
        let mut sum = 0;
        for r in &self.snapshot_ranges {
            sum += r.end - r.start;
            ends.push(sum);
        }
        progress.phase("existing data: age", Some(writes));
        self.laying_down(|r| r.age(total, &ends, writes, progress))?;
        self.snapshot.aging_writes += writes;
        Ok(writes)
    }

    /// `writes` single-LBA overwrites at uniformly random places among the existing data's
    /// `total` LBAs (`ends`: cumulative LBA counts of its ranges).
    fn age(
        &mut self,
        total: u64,
        ends: &[u64],
        writes: u64,
        progress: &mut dyn Progress,
    ) -> Result<(), ReplayError> {
        let mut rng = Rng::new(self.config.seed ^ AGING_SALT);
        for done in 1..=writes {
            let index = rng.below(total);
            let range = ends.partition_point(|&end| end <= index);
            let before = if range == 0 { 0 } else { ends[range - 1] };
            let lba = self.snapshot_ranges[range].start + (index - before);
            let now = self.ftl.busy_until_ns();
            self.write(now, lba, 1, Hints::default())
                .map_err(ReplayError::Snapshot)?;
            if done.is_multiple_of(65_536) {
                progress.advance(done);
            }
        }
        Ok(())
    }
}
