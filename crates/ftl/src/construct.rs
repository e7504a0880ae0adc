//! Preconditioning by construction (issue 19 item 5): the steady state that uniform random
//! 4 KiB overwrites reach under garbage collection, laid out on flash directly instead of
//! being reached by replaying several times the filled capacity in random writes.
//!
//! The model (a log of sealed blocks, oldest reclaimed first): a logical page written when
//! the log head was `d` slots back has since seen `d / WA` host writes, each hitting it
//! with probability `1 / U` (`U` filled logical pages), so it is still valid with
//! probability `exp(-d / (WA U))`. The oldest block, `T` slots back (every sealed slot), is
//! the victim; its valid fraction `alpha` gives `WA = 1 / (1 - alpha)`, hence
//! `alpha = exp(-(T / U) (1 - alpha))`. Blocks are laid out from newest to oldest with
//! valid counts following that decay (summing to exactly `U`), the surviving slots of each
//! block at random positions (a uniform random subset, Floyd's algorithm), the logical
//! pages in a random order; the dead slots are padding (nothing the GC would move, and
//! nothing recovery would map). Every plane keeps only the blocks the FTL holds back
//! (frontiers and the foreground-GC reserve) free, so GC starts within the first blocks
//! written. The flash is then mounted by one pass over its spare areas
//! ([`Ftl::mount_single_copies`]), which builds the same mapping, valid counts, free pools
//! and GC order as the recovery scan of a power-up would ([`Ftl::power_cycle`]; tested in
//! `tests_construct`) without its cost: that scan compares every copy's statement against
//! the mapping, while here each logical page has one copy. Greedy GC on uniform traffic
//! ends up a little better than this oldest-first log, so the first measured writes see a
//! slightly different write amplification than a replay-aged device (stated and tested in
//! the replay crate, `constructed_steady_state_matches_replay_aging`).

use flashstack_block::BlockDevice;
use flashstack_nand::{oob_flags, ConfigError, Nand, NandParts, NO_LPN};
use flashstack_sim::memory::zeroed_table;
use flashstack_sim::{Nanos, Rng};

use crate::Ftl;

/// What a constructed steady state holds.
#[derive(Clone, Debug, PartialEq)]
pub struct ConstructedState {
    pub filled_lbas: u64,
    /// Blocks holding data (the rest are free).
    pub sealed_blocks: u64,
    /// Valid fraction of the oldest blocks, the GC's victims.
    pub victim_valid_fraction: f64,
    /// The model's steady-state write amplification, `1 / (1 - victim_valid_fraction)`
    /// per mapping unit written, in flash bytes per host byte of 4 KiB writes: with a
    /// page-sized unit each 4 KiB write programs a whole unit, so that many times more.
    pub model_write_amplification: f64,
}

impl Ftl {
    /// A device like this fresh one holding logical pages `0..filled` in the steady state
    /// of uniform random overwrites (module doc), mounted at `now_ns`. Refused on a device
    /// that has been written, one storing contents, compressing, or mapping other than
    /// one 4 KiB slot per logical page, and for a fill the flash cannot hold.
    pub fn constructed_steady_state(
        &self,
        filled: u64,
        seed: u64,
        now_ns: Nanos,
    ) -> Result<(Ftl, ConstructedState), ConfigError> {
        let (parts, first_seq, state) = self.constructed_flash(filled, seed)?;
        let config = self.config.clone();
        // Laid out here, so neither checked page by page nor its sequence numbers written
        // out (the tests rebuild the same flash through the checked `Nand::from_parts`).
        let nand = Nand::from_consecutive_parts(
            config.nand.clone(),
            config.ftl.slot_bytes,
            seed,
            parts,
            first_seq,
        )?;
        let mut ftl = Ftl::with_nand(config, nand)?;
        ftl.mount_single_copies(now_ns);
        debug_assert_eq!(ftl.mapped_lbas(), filled);
        Ok((ftl, state))
    }

    /// The flash of [`Ftl::constructed_steady_state`], before it is mounted, every page's
    /// sequence number written out.
    #[cfg(test)]
    pub(crate) fn constructed_layout(
        &self,
        filled: u64,
        seed: u64,
    ) -> Result<(NandParts, ConstructedState), ConfigError> {
        let (mut parts, first_seq, state) = self.constructed_flash(filled, seed)?;
        let ppb = self.config.nand.geometry.pages_per_block as usize;
        for (block, &first) in first_seq.iter().enumerate() {
            if first != 0 {
                for (i, seq) in parts.page_seq[block * ppb..(block + 1) * ppb]
                    .iter_mut()
                    .enumerate()
                {
                    *seq = first + i as u64;
                }
            }
        }
        Ok((parts, state))
    }

    /// The flash of [`Ftl::constructed_steady_state`] and, per block, the sequence number
    /// of its first page (0 for an erased block); the pages' own numbers are left zero.
    fn constructed_flash(
        &self,
        filled: u64,
        seed: u64,
    ) -> Result<(NandParts, Vec<u64>, ConstructedState), ConfigError> {
        let refuse = |reason: &str| Err(ConfigError::new("precondition", reason.to_string()));
        if self.nand.counters().page_programs != 0 || self.mapped_lbas() != 0 {
            return refuse("construction needs a fresh device");
        }
        if self.nand.stores_contents() || self.compression_active() || self.slots_per_lpn != 1 {
            return refuse(
                "construction lays down addresses only, one 4 KiB slot per logical page: \
                 not with stored contents, compression or sub-4 KiB slots (use replay)",
            );
        }
        if filled == 0 || filled > self.capacity_lbas() {
            return refuse("the fill must be between 1 LBA and the user capacity");
        }
        let g = self.config.nand.geometry.clone();
        let held_back = self.config.ftl.gc.foreground_free_blocks + self.host_streams + 2;
        let sealed_per_unit = g.blocks_per_plane.saturating_sub(held_back);
        // The model's elements are mapping units: 4 KiB slots, or whole pages when the
        // mapping unit is the page (each unit written whole, its page holding it alone).
        let group = self.unit_lpns as u64;
        let slots_per_block = (g.pages_per_block * self.slots_per_page) as u64 / group;
        let filled_units = filled.div_ceil(group);
        let sealed = sealed_per_unit as u64 * g.units() as u64;
        let ring_slots = sealed * slots_per_block;
        if ring_slots <= filled_units {
            return refuse("the fill leaves no slot free for garbage collection");
        }
        let ratio = ring_slots as f64 / filled_units as f64;
        let alpha = victim_valid_fraction(ratio);
        let valid = valid_counts(filled_units, sealed, slots_per_block, ratio, alpha);
        let (parts, first_seq) = self.constructed_parts(sealed_per_unit, &valid, filled, seed);
        Ok((
            parts,
            first_seq,
            ConstructedState {
                filled_lbas: filled,
                sealed_blocks: sealed,
                victim_valid_fraction: alpha,
                model_write_amplification: group as f64 / (1.0 - alpha),
            },
        ))
    }

    /// The flash state: age position `j` (0 newest) is block `j / units` of plane
    /// `j % units`, so every plane holds the same mix of ages; sequence numbers grow from
    /// the oldest block to the newest, page by page.
    fn constructed_parts(
        &self,
        sealed_per_unit: u32,
        valid: &[u64],
        filled: u64,
        seed: u64,
    ) -> (NandParts, Vec<u64>) {
        let g = &self.config.nand.geometry;
        let (units, ppb, spp) = (g.units() as u64, g.pages_per_block, self.slots_per_page);
        let blocks = g.blocks() as usize;
        let pages = g.pages() as usize;
        let mut write_ptr = vec![0u16; blocks];
        // Written in address order, so 4 KiB pages cost no TLB misses; advising huge pages
        // measured slower (the kernel's compaction for them outweighs what they save).
        let mut page_flags = zeroed_table::<u8>(pages);
        // Zero pages never touched: the sequence numbers are implicit, per block.
        let page_seq = zeroed_table::<u64>(pages);
        let mut first_seq = vec![0u64; blocks];
        let mut slot_lpn = zeroed_table::<u32>(pages * spp as usize);
        let mut rng = Rng::new(seed ^ 0xC057_1C7E);
        let group = self.unit_lpns as u64;
        let mut order = AffinePermutation::new(filled.div_ceil(group), &mut rng);
        let (mut seq, mut next) = (1u64, 0u64);
        let cap = (ppb * spp) as u64 / group;
        let mut drawn = vec![0u64; (cap as usize).div_ceil(64)];
        for j in (0..valid.len() as u64).rev() {
            let block = (j % units) as u32 * g.blocks_per_plane + (j / units) as u32;
            debug_assert!(j / units < sealed_per_unit as u64);
            write_ptr[block as usize] = ppb as u16;
            let first_page = (block * ppb) as usize;
            page_flags[first_page..first_page + ppb as usize].fill(oob_flags::PROGRAMMED);
            first_seq[block as usize] = seq;
            seq += ppb as u64;
            // Exactly `valid[j]` slots at random positions: the valid or the dead ones
            // drawn, whichever are fewer (one draw each), then the block is written
            // without a branch per slot.
            let v = valid[j as usize];
            let draw_valid = v <= cap - v;
            random_subset(
                &mut rng,
                cap,
                if draw_valid { v } else { cap - v },
                &mut drawn,
            );
            let first_slot = first_page * spp as usize;
            if group > 1 {
                // Page-sized mapping units: a valid unit fills its page, sub-unit `h` in
                // slot `h` (those beyond the fill are padding).
                let pages = slot_lpn[first_slot..first_slot + (cap * group) as usize]
                    .chunks_exact_mut(group as usize);
                for (k, page) in pages.enumerate() {
                    let is_valid = ((drawn[k / 64] >> (k % 64)) & 1 == 1) == draw_valid;
                    for (h, lpn) in page.iter_mut().enumerate() {
                        let l = order.current * group + h as u64;
                        *lpn = if is_valid && l < filled {
                            l as u32
                        } else {
                            NO_LPN
                        };
                    }
                    order.advance_if(is_valid);
                }
                next += v;
                continue;
            }
            for (k, lpn) in slot_lpn[first_slot..first_slot + cap as usize]
                .iter_mut()
                .enumerate()
            {
                let is_valid = ((drawn[k / 64] >> (k % 64)) & 1 == 1) == draw_valid;
                *lpn = if is_valid {
                    order.current as u32
                } else {
                    NO_LPN
                };
                order.advance_if(is_valid);
            }
            next += v;
        }
        // The blocks held back stay erased: no logical page in their spare areas.
        let block_slots = (ppb * spp) as usize;
        for (block, &written) in write_ptr.iter().enumerate() {
            if written == 0 {
                let first_slot = block * block_slots;
                slot_lpn[first_slot..first_slot + block_slots].fill(NO_LPN);
            }
        }
        assert_eq!(
            next,
            filled.div_ceil(group),
            "every filled mapping unit placed once"
        );
        let parts = NandParts {
            erase_count: vec![0; blocks],
            write_ptr,
            bad: vec![false; blocks],
            failing: vec![false; blocks],
            page_flags,
            page_seq,
            slot_lpn,
            frames: None,
            dedup: false,
        };
        (parts, first_seq)
    }
}

/// The non-trivial root in (0, 1) of `alpha = exp(-ratio (1 - alpha))` (`ratio` > 1).
pub(crate) fn victim_valid_fraction(ratio: f64) -> f64 {
    assert!(ratio > 1.0);
    let f = |a: f64| a - (-ratio * (1.0 - a)).exp();
    let (mut lo, mut hi) = (0.0f64, 1.0 - 1e-12);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if f(mid) < 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// Valid slots per age position (0 newest): the integral of the decay over each block,
/// rounded cumulatively so the counts sum to exactly `filled`.
pub(crate) fn valid_counts(
    filled: u64,
    sealed: u64,
    slots_per_block: u64,
    ratio: f64,
    alpha: f64,
) -> Vec<u64> {
    let k = (1.0 - alpha) * ratio;
    let cumulative = |x: f64| {
        let c = filled as f64 * (1.0 - (-k * x).exp()) / (1.0 - alpha);
        (c.round() as u64).min(filled)
    };
    let mut counts = Vec::with_capacity(sealed as usize);
    let mut before = 0;
    for j in 0..sealed {
        let upto = if j + 1 == sealed {
            filled
        } else {
            cumulative((j + 1) as f64 / sealed as f64)
        };
        counts.push((upto - before).min(slots_per_block));
        before += counts[j as usize];
    }
    // Rounding may leave a few pages over: the newest blocks have room.
    let mut missing = filled - counts.iter().sum::<u64>();
    for c in counts.iter_mut() {
        let add = missing.min(slots_per_block - *c);
        *c += add;
        missing -= add;
    }
    assert_eq!(missing, 0, "the sealed blocks hold the fill");
    counts
}

/// `i -> (a i + b) mod n` with `a` coprime to `n`: a random order of `0..n` in O(1) memory,
/// visited in order of `i` (one addition per step; `n` = 1 has `a` = 0).
struct AffinePermutation {
    n: u64,
    a: u64,
    /// The value at the current `i`.
    current: u64,
}

impl AffinePermutation {
    fn new(n: u64, rng: &mut Rng) -> Self {
        let gcd = |mut x: u64, mut y: u64| {
            while y != 0 {
                (x, y) = (y, x % y);
            }
            x
        };
        let mut a = (n as f64 * 0.618_033_988_7) as u64 + rng.below(n.max(2) / 2 + 1);
        while gcd(a % n.max(1), n) != 1 && n > 1 {
            a += 1;
        }
        AffinePermutation {
            n,
            a: a % n.max(1),
            current: rng.below(n.max(1)),
        }
    }

    /// Moves on to `i + 1` if `step`, without a branch (the slots of a block take valid
    /// and dead turns at random).
    #[inline]
    fn advance_if(&mut self, step: bool) {
        // `current < n` and `a < n`: the sum wraps at most once.
        self.current += self.a * step as u64;
        if self.current >= self.n {
            self.current -= self.n;
        }
    }
}

/// Sets `count` distinct bits of `bits[..]` among the first `n`, uniformly at random, with
/// `count` draws (Floyd's algorithm, Bentley & Floyd, CACM 1987); clears the rest first.
pub(crate) fn random_subset(rng: &mut Rng, n: u64, count: u64, bits: &mut [u64]) {
    debug_assert!(count <= n && n as usize <= bits.len() * 64);
    bits.fill(0);
    let is_set = |bits: &[u64], i: u64| (bits[(i / 64) as usize] >> (i % 64)) & 1 == 1;
    for top in n - count..n {
        let t = rng.below(top + 1);
        let pick = if is_set(bits, t) { top } else { t };
        bits[(pick / 64) as usize] |= 1 << (pick % 64);
    }
}
