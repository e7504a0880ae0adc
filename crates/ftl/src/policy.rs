//! Pure decision functions: which block GC reclaims, which frontier a write joins.
//! Mechanisms in the FTL carry the decisions out.

use flashstack_block::{Hints, Temperature};
use flashstack_sim::Nanos;

use crate::config::{StreamMode, VictimPolicyKind};

/// What a victim policy sees of a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VictimCandidate {
    pub block: u32,
    pub valid_slots: u32,
    pub capacity_slots: u32,
    /// Invalid slots the block must hold for reclaiming it to free any space: the data GC
    /// moves is programmed in whole pages, padded at the end of the cycle, so without
    /// compression a victim with fewer invalid slots than a page gains no page and its
    /// cycle would be repeated for ever (one slot when moved data may shrink).
    pub min_invalid_slots: u32,
    /// When the block was last programmed.
    pub last_write_ns: Nanos,
    pub erase_count: u32,
    /// Cr(B) in permille: 1000 for blocks of compressed data, the mean predicted ratio of
    /// the uncompressed pages otherwise (LDC's caGC).
    pub ratio_permille: u32,
}

impl VictimCandidate {
    /// Whether reclaiming the block frees space: it holds at least `min_invalid_slots`
    /// invalid slots.
    #[inline]
    pub fn reclaimable(&self) -> bool {
        self.capacity_slots - self.valid_slots >= self.min_invalid_slots.max(1)
    }
}

/// A garbage-collection victim policy.
pub trait VictimPolicy {
    fn name(&self) -> &'static str;
    /// How many fewest-valid candidates the policy wants to see.
    fn window(&self, candidates_max: u32) -> u32;
    /// Index into `candidates` of the block to reclaim, or `None` if none is worth it.
    fn choose(&self, candidates: &[VictimCandidate], now_ns: Nanos) -> Option<usize>;
}

/// Fewest valid slots first; candidates arrive in that order, so the first reclaimable one.
#[derive(Clone, Copy, Debug, Default)]
pub struct Greedy;

impl VictimPolicy for Greedy {
    fn name(&self) -> &'static str {
        "greedy"
    }
    fn window(&self, _candidates_max: u32) -> u32 {
        1
    }
    fn choose(&self, candidates: &[VictimCandidate], _now_ns: Nanos) -> Option<usize> {
        candidates.iter().position(VictimCandidate::reclaimable)
    }
}

/// Cost-benefit: maximise (1 − u) × age / 2u, where u is the valid fraction. Computed in
/// integers: benefit/cost = (capacity − valid) × age / (2 × valid); compared by
/// cross-multiplication so no float rounding decides a tie. Ties go to the earlier candidate.
#[derive(Clone, Copy, Debug, Default)]
pub struct CostBenefit;

impl CostBenefit {
    /// Returns (numerator, denominator) of the score.
    fn score(c: &VictimCandidate, now_ns: Nanos) -> (u128, u128) {
        let age = now_ns.saturating_sub(c.last_write_ns) as u128 + 1;
        let free = (c.capacity_slots - c.valid_slots) as u128;
        (free * age, 2 * c.valid_slots as u128)
    }
}

impl VictimPolicy for CostBenefit {
    fn name(&self) -> &'static str {
        "cost-benefit"
    }
    fn window(&self, candidates_max: u32) -> u32 {
        candidates_max
    }
    fn choose(&self, candidates: &[VictimCandidate], now_ns: Nanos) -> Option<usize> {
        let mut best: Option<(usize, (u128, u128))> = None;
        for (i, c) in candidates.iter().enumerate() {
            if !c.reclaimable() {
                continue;
            }
            let score = Self::score(c, now_ns);
            if score.1 == 0 {
                return Some(i); // An all-invalid block is free space for an erase alone.
            }
            let better = match best {
                None => true,
                Some((_, (bn, bd))) => score.0 * bd > bn * score.1,
            };
            if better {
                best = Some((i, score));
            }
        }
        best.map(|(i, _)| i)
    }
}

/// LDC's compression-aware GC (Eq. 4): the lowest valid slots × Cr(B), so blocks whose
/// uncompressed data will shrink when migrated are cheap. Ties go to the earlier candidate.
#[derive(Clone, Copy, Debug, Default)]
pub struct CompressionAware;

impl VictimPolicy for CompressionAware {
    fn name(&self) -> &'static str {
        "compression-aware"
    }
    fn window(&self, candidates_max: u32) -> u32 {
        candidates_max
    }
    fn choose(&self, candidates: &[VictimCandidate], _now_ns: Nanos) -> Option<usize> {
        candidates
            .iter()
            .enumerate()
            .filter(|(_, c)| c.reclaimable())
            .min_by_key(|&(i, c)| {
                let score =
                    crate::compression::cagc_score(c.valid_slots as u64, c.ratio_permille as u64);
                (score, i)
            })
            .map(|(i, _)| i)
    }
}

/// The configured policy, dispatched statically.
#[derive(Clone, Copy, Debug)]
pub enum GcPolicy {
    Greedy(Greedy),
    CostBenefit(CostBenefit),
    CompressionAware(CompressionAware),
}

impl GcPolicy {
    pub fn new(kind: VictimPolicyKind) -> Self {
        match kind {
            VictimPolicyKind::Greedy => GcPolicy::Greedy(Greedy),
            VictimPolicyKind::CostBenefit => GcPolicy::CostBenefit(CostBenefit),
            VictimPolicyKind::CompressionAware => GcPolicy::CompressionAware(CompressionAware),
        }
    }
}

impl VictimPolicy for GcPolicy {
    fn name(&self) -> &'static str {
        match self {
            GcPolicy::Greedy(p) => p.name(),
            GcPolicy::CostBenefit(p) => p.name(),
            GcPolicy::CompressionAware(p) => p.name(),
        }
    }
    fn window(&self, candidates_max: u32) -> u32 {
        match self {
            GcPolicy::Greedy(p) => p.window(candidates_max),
            GcPolicy::CostBenefit(p) => p.window(candidates_max),
            GcPolicy::CompressionAware(p) => p.window(candidates_max),
        }
    }
    fn choose(&self, candidates: &[VictimCandidate], now_ns: Nanos) -> Option<usize> {
        match self {
            GcPolicy::Greedy(p) => p.choose(candidates, now_ns),
            GcPolicy::CostBenefit(p) => p.choose(candidates, now_ns),
            GcPolicy::CompressionAware(p) => p.choose(candidates, now_ns),
        }
    }
}

/// Super-block GC: the victims collected together on the planes of one die. `planes[p]`
/// holds plane p's candidates (as the policy's window gives them); each plane takes its own
/// choice under `policy`, and a plane with nothing reclaimable contributes no victim. When
/// `needed` names a plane (the one whose free pool set GC off) that has no victim itself,
/// nothing is collected: the others' moves would land on that plane's last free blocks
/// and give it nothing back. Returns, per plane, the index of its victim.
pub fn choose_super_block<P: VictimPolicy + ?Sized>(
    policy: &P,
    planes: &[&[VictimCandidate]],
    needed: Option<usize>,
    now_ns: Nanos,
) -> Vec<Option<usize>> {
    let choice: Vec<Option<usize>> = planes.iter().map(|c| policy.choose(c, now_ns)).collect();
    match needed {
        Some(p) if choice[p].is_none() => vec![None; planes.len()],
        _ => choice,
    }
}

/// Number of host frontiers a stream mode uses.
pub fn host_stream_count(mode: StreamMode, streams_max: u32) -> u32 {
    match mode {
        StreamMode::Single => 1,
        StreamMode::Temperature => 3,
        StreamMode::StreamId => streams_max,
    }
}

/// The host frontier a write joins.
pub fn stream_for(mode: StreamMode, streams_max: u32, hints: &Hints) -> u32 {
    match mode {
        StreamMode::Single => 0,
        StreamMode::Temperature => match hints.temperature {
            Some(Temperature::Hot) => 0,
            None | Some(Temperature::Warm) => 1,
            Some(Temperature::Cold) => 2,
        },
        StreamMode::StreamId => hints.stream_id.map_or(0, |id| id as u32 % streams_max),
    }
}

/// Static wear levelling: move the coldest block when the spread is too wide.
pub fn wear_level_needed(erase_min: u32, erase_max: u32, threshold: Option<u32>) -> bool {
    threshold.is_some_and(|t| erase_max - erase_min > t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(block: u32, valid: u32, last_write_ns: u64) -> VictimCandidate {
        VictimCandidate {
            block,
            valid_slots: valid,
            capacity_slots: 64,
            min_invalid_slots: 1,
            last_write_ns,
            erase_count: 0,
            ratio_permille: 1000,
        }
    }

    #[test]
    fn compression_aware_weighs_valid_data_by_ratio() {
        // Fig. 7 of the LDC paper: 8 valid pages at 0.7 (5.6) beat 6 compressed ones (6.0).
        let mut low = cand(3, 8, 0);
        low.ratio_permille = 700;
        let compressed = cand(1, 6, 0);
        assert_eq!(CompressionAware.choose(&[compressed, low], 0), Some(1));
        assert_eq!(CompressionAware.choose(&[cand(1, 64, 0)], 0), None);
    }

    #[test]
    fn greedy_takes_the_first_reclaimable() {
        let c = [cand(1, 64, 0), cand(2, 10, 0), cand(3, 5, 0)];
        assert_eq!(Greedy.choose(&c, 0), Some(1));
        assert_eq!(Greedy.choose(&[cand(1, 64, 0)], 0), None);
    }

    /// A block with fewer invalid slots than `min_invalid_slots` (less than a page) is no
    /// victim for any policy: moving it would free no page.
    #[test]
    fn no_policy_takes_a_block_that_frees_no_page() {
        let mut padded = cand(1, 61, 0);
        padded.min_invalid_slots = 4;
        let mut page = cand(2, 60, 0);
        page.min_invalid_slots = 4;
        assert_eq!(Greedy.choose(&[padded], 0), None);
        assert_eq!(CostBenefit.choose(&[padded], 1000), None);
        assert_eq!(CompressionAware.choose(&[padded], 0), None);
        assert_eq!(Greedy.choose(&[padded, page], 0), Some(1));
        assert_eq!(CostBenefit.choose(&[padded, page], 1000), Some(1));
        assert_eq!(CompressionAware.choose(&[padded, page], 0), Some(1));
        // One slot is enough where moved data may shrink.
        assert_eq!(Greedy.choose(&[cand(1, 63, 0)], 0), Some(0));
    }

    #[test]
    fn cost_benefit_prefers_old_cold_blocks() {
        // Block 2 has more valid data but is far older: (64-32)*1001/64 > (64-16)*11/32.
        let c = [cand(1, 16, 990), cand(2, 32, 0)];
        assert_eq!(CostBenefit.choose(&c, 1000), Some(1));
        // Same age: the emptier block wins.
        let c = [cand(1, 32, 0), cand(2, 16, 0)];
        assert_eq!(CostBenefit.choose(&c, 1000), Some(1));
        // An empty block is taken at once.
        let c = [cand(1, 1, 0), cand(2, 0, 999)];
        assert_eq!(CostBenefit.choose(&c, 1000), Some(1));
    }

    /// Each plane of the die gives its own best candidate under the policy (not the die's
    /// best blocks wherever they are); a plane without a reclaimable block gives none, and
    /// when that is the plane that needs space, nothing is collected.
    #[test]
    fn super_block_takes_each_planes_own_choice() {
        let p0 = [cand(10, 8, 0), cand(11, 9, 0)];
        let p1 = [cand(20, 40, 0)];
        let p2 = [cand(30, 64, 0)];
        let p3 = [cand(40, 30, 900), cand(41, 20, 0)];
        let planes: [&[VictimCandidate]; 4] = [&p0, &p1, &p2, &p3];
        assert_eq!(
            choose_super_block(&Greedy, &planes, Some(0), 1000),
            vec![Some(0), Some(0), None, Some(0)]
        );
        // Cost-benefit weighs age per plane: on plane 3 it takes the older block, listed
        // second ((64-20)*1001/40 against (64-30)*101/60).
        assert_eq!(
            choose_super_block(&CostBenefit, &planes, None, 1000),
            vec![Some(0), Some(0), None, Some(1)]
        );
        // The plane that ran out has nothing to give: no cycle.
        assert_eq!(
            choose_super_block(&Greedy, &planes, Some(2), 1000),
            vec![None; 4]
        );
        // Empty candidate lists are planes without sealed blocks.
        assert_eq!(
            choose_super_block(&Greedy, &[&[], &p1], Some(1), 0),
            vec![None, Some(0)]
        );
    }

    #[test]
    fn streams_follow_hints() {
        let hot = Hints {
            temperature: Some(Temperature::Hot),
            ..Hints::default()
        };
        assert_eq!(stream_for(StreamMode::Temperature, 8, &hot), 0);
        assert_eq!(stream_for(StreamMode::Temperature, 8, &Hints::default()), 1);
        assert_eq!(stream_for(StreamMode::Single, 8, &hot), 0);
        let s = Hints {
            stream_id: Some(11),
            ..Hints::default()
        };
        assert_eq!(stream_for(StreamMode::StreamId, 8, &s), 3);
    }

    #[test]
    fn wear_levelling_threshold() {
        assert!(!wear_level_needed(10, 20, None));
        assert!(!wear_level_needed(10, 20, Some(10)));
        assert!(wear_level_needed(10, 21, Some(10)));
    }
}
