//! The shape of preconditioning's aging writes: which LBAs the next overwrite covers.
//!
//! `uniform-4k` overwrites one 4 KiB LBA drawn uniformly from the filled ones, the steady
//! state of uniform random traffic. It also scatters every file: after it, the 32 LBAs of a
//! 128 KiB extent were each rewritten at a different time and sit in 32 different flash
//! pages, where a phone that writes the file whole holds it in 128 KiB / page size pages.
//!
//! `workload` ages with the workload's own write shape (docs/validation.md,
//! "Workload-shaped aging"). The device's LBAs are cut into 1 MiB regions; each region has
//! a grain, the power-of-two size (4 KiB to 1 MiB) in which it is written. Regions the
//! workload touches take the grain it writes there most (by LBAs; regions it only reads,
//! the grain it reads them in); the other filled regions draw one, in address order from
//! the seeded PRNG, with the probability the touched regions have it (the workload's
//! footprint by grain). An aging write draws a grain with the probability the workload's
//! writes have it (by requests of that grain), a region of that grain uniformly among the
//! filled ones, and an aligned extent of the grain inside it, and rewrites it whole: a file
//! written in 128 KiB requests is rewritten 128 KiB at a time, aligned, and stays in
//! 128 KiB runs on flash; a database written in 4 KiB pages is rewritten 4 KiB at a time.
//! Grains the workload never writes are never rewritten (cold data, read-only files).
//!
//! [`next_write`] is the policy: a pure function of the plan and the PRNG.

use std::collections::BTreeMap;

use flashstack_block::{RequestKind, LBA_SIZE};
use flashstack_sim::Rng;
use flashstack_trace::TraceRequest;

/// LBAs per region, and the largest grain (1 MiB).
pub const REGION_LBAS: u64 = 256;
/// Grains are 2^0 .. 2^8 LBAs (4 KiB .. 1 MiB).
const GRAINS: usize = 9;
const LAYOUT_SALT: u64 = 0x5AA9_E0F1_1E5E_ED01;

/// How preconditioning chooses its aging writes (`--precondition-shape`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, Hash,
)]
#[serde(rename_all = "kebab-case")]
pub enum AgingShape {
    /// One 4 KiB LBA at a time, uniformly among the filled ones.
    #[default]
    #[serde(rename = "uniform-4k")]
    Uniform4k,
    /// Aligned extents of the workload's own write sizes where it writes them (module doc).
    Workload,
}

impl AgingShape {
    pub fn name(self) -> &'static str {
        match self {
            AgingShape::Uniform4k => "uniform-4k",
            AgingShape::Workload => "workload",
        }
    }
}

/// Grain index of a request of `lbas` LBAs: the largest power of two not above it, at most
/// a region.
fn grain_of(lbas: u64) -> usize {
    let lbas = lbas.clamp(1, REGION_LBAS);
    (63 - lbas.leading_zeros()) as usize
}

/// What a workload's requests say about its writes: the sizes and where they go.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WorkloadShape {
    /// Write requests per grain (a write longer than a region counts once per MiB, rounded
    /// up).
    pub write_requests: [u64; GRAINS],
    /// The grain of each region the workload touches (by region index).
    pub region_grain: BTreeMap<u64, u8>,
}

impl WorkloadShape {
    /// The shape of `requests` on a device of `capacity_lbas` LBAs (requests beyond it are
    /// folded in, as `--wrap` would, so that their sizes still count).
    pub fn from_requests(
        requests: impl IntoIterator<Item = TraceRequest>,
        capacity_lbas: u64,
    ) -> WorkloadShape {
        // LBAs per (region, grain), written and read.
        let mut written: BTreeMap<u64, [u64; GRAINS]> = BTreeMap::new();
        let mut read: BTreeMap<u64, [u64; GRAINS]> = BTreeMap::new();
        let mut shape = WorkloadShape::default();
        let lba_size = LBA_SIZE as u64;
        for r in requests {
            let into = match r.kind {
                RequestKind::Write => &mut written,
                RequestKind::Read => &mut read,
                _ => continue,
            };
            if r.len_bytes == 0 || capacity_lbas == 0 {
                continue;
            }
            let first = (r.offset_bytes / lba_size) % capacity_lbas;
            let end = r
                .offset_bytes
                .saturating_add(r.len_bytes)
                .div_ceil(lba_size);
            let lbas = (end - r.offset_bytes / lba_size).min(capacity_lbas - first);
            let grain = grain_of(lbas);
            if r.kind == RequestKind::Write {
                shape.write_requests[grain] += lbas.div_ceil(REGION_LBAS);
            }
            let mut lba = first;
            while lba < first + lbas {
                let region = lba / REGION_LBAS;
                let piece = ((region + 1) * REGION_LBAS).min(first + lbas) - lba;
                into.entry(region).or_default()[grain] += piece;
                lba += piece;
            }
        }
        // The grain with the most LBAs (ties: the larger); writes decide over reads.
        let dominant =
            |lbas: &[u64; GRAINS]| (0..GRAINS).max_by_key(|&g| (lbas[g], g)).expect("grains") as u8;
        for (&region, lbas) in &read {
            shape.region_grain.insert(region, dominant(lbas));
        }
        for (&region, lbas) in &written {
            shape.region_grain.insert(region, dominant(lbas));
        }
        shape
    }

    /// Regions touched per grain: the workload's footprint by grain.
    fn footprint(&self) -> [u64; GRAINS] {
        let mut regions = [0; GRAINS];
        for &g in self.region_grain.values() {
            regions[g as usize] += 1;
        }
        regions
    }

    /// The aging plan over the first `filled` LBAs: every whole region in them gets a grain.
    pub fn plan(&self, filled: u64, seed: u64) -> Result<WorkloadPlan, String> {
        let footprint = self.footprint();
        let footprint_total: u64 = footprint.iter().sum();
        if footprint_total == 0 {
            return Err("the workload reads and writes nothing to shape aging on".into());
        }
        let regions = filled / REGION_LBAS;
        if regions == 0 {
            return Err(format!(
                "workload-shaped aging needs at least one filled region of {} KiB",
                REGION_LBAS * LBA_SIZE as u64 / 1024
            ));
        }
        let mut rng = Rng::new(seed ^ LAYOUT_SALT);
        let mut by_grain: [Vec<u32>; GRAINS] = Default::default();
        for region in 0..regions {
            let grain = match self.region_grain.get(&region) {
                Some(&g) => g as usize,
                None => pick(&footprint, rng.below(footprint_total)),
            };
            by_grain[grain].push(region as u32);
        }
        // Requests per grain, for grains that have regions to rewrite. A workload that
        // writes nothing there (reads only) ages its data in the grains it holds it in.
        let mut weights = [0u64; GRAINS];
        for g in 0..GRAINS {
            if !by_grain[g].is_empty() {
                weights[g] = self.write_requests[g];
            }
        }
        if weights.iter().all(|&w| w == 0) {
            for g in 0..GRAINS {
                weights[g] = by_grain[g].len() as u64;
            }
        }
        Ok(WorkloadPlan {
            by_grain,
            weights,
            total: weights.iter().sum(),
        })
    }
}

/// The index `x` falls in when `weights` are laid end to end (`x` < their sum).
fn pick(weights: &[u64; GRAINS], mut x: u64) -> usize {
    for (g, &w) in weights.iter().enumerate() {
        if x < w {
            return g;
        }
        x -= w;
    }
    unreachable!("x is below the sum of the weights")
}

/// Workload-shaped aging over a filled range: the regions of each grain and the weight of
/// each grain among the aging writes.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadPlan {
    by_grain: [Vec<u32>; GRAINS],
    weights: [u64; GRAINS],
    total: u64,
}

impl WorkloadPlan {
    /// Filled regions per grain, 4 KiB first.
    pub fn regions_per_grain(&self) -> [u64; GRAINS] {
        std::array::from_fn(|g| self.by_grain[g].len() as u64)
    }
}

/// Where aging writes go.
#[derive(Clone, Debug, PartialEq)]
pub enum AgingPlan {
    /// `filled` LBAs, one at a time.
    Uniform4k {
        filled: u64,
    },
    Workload(Box<WorkloadPlan>),
}

/// The policy: the next aging write `(lba, count)` under `plan`, drawn from `rng`.
/// `Uniform4k` draws exactly what preconditioning always drew (one `below(filled)`).
pub fn next_write(plan: &AgingPlan, rng: &mut Rng) -> (u64, u32) {
    match plan {
        AgingPlan::Uniform4k { filled } => (rng.below(*filled), 1),
        AgingPlan::Workload(p) => {
            let grain = pick(&p.weights, rng.below(p.total));
            let regions = &p.by_grain[grain];
            let region = u64::from(regions[rng.below(regions.len() as u64) as usize]);
            let lbas = 1u64 << grain;
            let extent = rng.below(REGION_LBAS / lbas);
            (region * REGION_LBAS + extent * lbas, lbas as u32)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(kind: RequestKind, lba: u64, lbas: u64) -> TraceRequest {
        TraceRequest {
            arrival_ns: 0,
            kind,
            offset_bytes: lba * 4096,
            len_bytes: lbas * 4096,
            hints: Default::default(),
            process: 0,
        }
    }

    #[test]
    fn grains_follow_where_the_workload_writes_and_reads() {
        let requests = vec![
            req(RequestKind::Write, 0, 32),
            req(RequestKind::Write, 32, 32),
            req(RequestKind::Write, 256, 1),
            req(RequestKind::Read, 512, 64),
            // 2 MiB: two regions of 1 MiB.
            req(RequestKind::Write, 1024, 512),
        ];
        let shape = WorkloadShape::from_requests(requests, 1 << 20);
        assert_eq!(shape.write_requests[5], 2);
        assert_eq!(shape.write_requests[0], 1);
        assert_eq!(shape.write_requests[8], 2);
        let grains: Vec<_> = shape.region_grain.iter().map(|(&r, &g)| (r, g)).collect();
        assert_eq!(grains, vec![(0, 5), (1, 0), (2, 6), (4, 8), (5, 8)]);
        let plan = shape.plan(8 * REGION_LBAS, 1).unwrap();
        assert_eq!(plan.regions_per_grain().iter().sum::<u64>(), 8);
        // The read-only grain (64 LBAs) is never rewritten.
        let plan = AgingPlan::Workload(Box::new(plan));
        let mut rng = Rng::new(3);
        for _ in 0..1000 {
            let (lba, count) = next_write(&plan, &mut rng);
            assert!([1, 32, 256].contains(&count), "{count}");
            assert_eq!(lba % u64::from(count), 0, "aligned");
            assert!(lba + u64::from(count) <= 8 * REGION_LBAS);
        }
    }

    #[test]
    fn a_workload_without_requests_is_refused_and_shapes_are_named() {
        let shape = WorkloadShape::from_requests(Vec::new(), 1 << 20);
        assert!(shape.plan(1 << 16, 1).is_err());
        let json = serde_json::to_string(&AgingShape::Uniform4k).unwrap();
        assert_eq!(json, "\"uniform-4k\"");
        let back: AgingShape = serde_json::from_str("\"workload\"").unwrap();
        assert_eq!(back, AgingShape::Workload);
    }
}
