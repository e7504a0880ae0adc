//! Stateless hashing of (seed, lba, unit, version) and the update schedule of page units.

pub(crate) const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// The SplitMix64 finalizer: a bijection on u64 with full avalanche.
#[inline]
pub(crate) const fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Hash of a key and a value. `key` is itself a hash, so one finalizer round over
/// `key + x·φ` (SplitMix's own construction) is enough to decorrelate neighbouring `x`.
#[inline]
pub(crate) fn hash(key: u64, x: u64) -> u64 {
    mix64(key.wrapping_add(x.wrapping_mul(GOLDEN)))
}

/// The seed of one unit's content stream at one version: every unit of every version is
/// an independent stream, so any of them can be produced on its own.
#[inline]
pub(crate) fn unit_seed(key: u64, unit: usize, version: u32) -> u64 {
    hash(key, ((unit as u64) << 32) | u64::from(version))
}

/// Every unit is rewritten at least once per this many versions, at a per-unit offset.
/// This bounds the backward scan in [`Schedule::last_touch`] while keeping consecutive
/// versions exact: version `v` differs from `v − 1` precisely in the units touched at `v`.
pub(crate) const FORCED_PERIOD: u32 = 64;
const _: () = assert!(FORCED_PERIOD.is_power_of_two());

const FORCE_SALT: u64 = 0x5851_F42D_4C95_7F2D;
/// Touch decisions use their own key so that they are independent of the unit's content
/// seed (which hashes the same (unit, version) pair).
const TOUCH_SALT: u64 = 0x2545_F491_4F6C_DD1D;

/// Which version of each unit a page version shows. A unit is "touched" at version `u ≥ 1`
/// with probability `p` (a hash below a threshold) or when `u` is its forced slot; version
/// 0 touches every unit. The unit shows the content of its latest touch `≤ v`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Schedule {
    key: u64,
    version: u32,
    mode: Mode,
}

#[derive(Clone, Copy, Debug)]
enum Mode {
    /// Units never change after version 0 (change ratio 0).
    Frozen,
    /// Every version rewrites every unit.
    Always,
    Random {
        threshold: u64,
    },
}

impl Schedule {
    /// `touch_p` is the wanted probability that a unit differs between consecutive
    /// versions; the forced rewrites count towards it.
    pub(crate) fn new(key: u64, version: u32, touch_p: f64) -> Self {
        let forced = 1.0 / f64::from(FORCED_PERIOD);
        let mode = if touch_p <= 0.0 || touch_p.is_nan() {
            Mode::Frozen
        } else if touch_p >= 1.0 {
            Mode::Always
        } else {
            // p_total = p + (1 − p)/P  ⇒  p = (p_total − 1/P) / (1 − 1/P)
            let p = ((touch_p - forced) / (1.0 - forced)).max(0.0);
            // The float-to-int cast saturates, so p close to 1 cannot wrap.
            Mode::Random {
                threshold: (p * 18_446_744_073_709_551_616.0) as u64,
            }
        };
        Schedule { key, version, mode }
    }

    /// The version whose content `unit` shows at this schedule's version.
    #[inline]
    pub(crate) fn last_touch(&self, unit: usize) -> u32 {
        let v = self.version;
        let threshold = match self.mode {
            Mode::Frozen => return 0,
            Mode::Always => return v,
            Mode::Random { threshold } => threshold,
        };
        // The offset only staggers forced rewrites across units; a multiplicative spread
        // (top 6 bits of key + unit·φ) does that without a full hash.
        let offset = ((self.key ^ FORCE_SALT).wrapping_add((unit as u64).wrapping_mul(GOLDEN))
            >> (64 - FORCED_PERIOD.trailing_zeros())) as u32;
        // The latest u ≤ v with (u + offset) ≡ 0 (mod P); none if it would be below 0.
        let back = (v % FORCED_PERIOD + offset) % FORCED_PERIOD;
        let forced = v.saturating_sub(back);
        let touch_key = self.key ^ TOUCH_SALT;
        let mut u = v;
        while u > forced {
            if hash(touch_key, ((unit as u64) << 32) | u64::from(u)) < threshold {
                return u;
            }
            u -= 1;
        }
        forced
    }

    /// Whether this version rewrites `unit` (its [`last_touch`](Self::last_touch) is this
    /// version), in one hash: a unit's touches are fixed versions (drawn, forced, and 0),
    /// so a unit this version does not touch shows what it showed at the version before.
    #[inline]
    pub(crate) fn touches(&self, unit: usize) -> bool {
        let v = self.version;
        let threshold = match self.mode {
            Mode::Frozen => return v == 0,
            Mode::Always => return true,
            Mode::Random { threshold } => threshold,
        };
        let offset = ((self.key ^ FORCE_SALT).wrapping_add((unit as u64).wrapping_mul(GOLDEN))
            >> (64 - FORCED_PERIOD.trailing_zeros())) as u32;
        v == 0
            || (v % FORCED_PERIOD + offset).is_multiple_of(FORCED_PERIOD)
            || hash(self.key ^ TOUCH_SALT, ((unit as u64) << 32) | u64::from(v)) < threshold
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touched_fraction(p: f64) -> f64 {
        let mut changed = 0u64;
        let mut total = 0u64;
        for key in 0..50u64 {
            for v in 1..300u32 {
                let now = Schedule::new(key, v, p);
                let before = Schedule::new(key, v - 1, p);
                for unit in 0..16 {
                    total += 1;
                    changed += u64::from(now.last_touch(unit) != before.last_touch(unit));
                }
            }
        }
        changed as f64 / total as f64
    }

    #[test]
    fn touch_probability_includes_forced_rewrites() {
        for p in [0.02, 0.138, 0.5] {
            let got = touched_fraction(p);
            assert!((got - p).abs() < 0.01, "p={p}: measured {got}");
        }
    }

    #[test]
    fn frozen_and_always_modes() {
        assert_eq!(Schedule::new(1, 77, 0.0).last_touch(3), 0);
        assert_eq!(Schedule::new(1, 77, 1.0).last_touch(3), 77);
        assert_eq!(Schedule::new(1, 0, 0.3).last_touch(3), 0);
    }

    #[test]
    fn touch_is_consistent_between_versions() {
        // If a unit was not touched at v, it shows the same version at v and v − 1.
        for v in 1..500u32 {
            let now = Schedule::new(9, v, 0.1);
            let before = Schedule::new(9, v - 1, 0.1);
            for unit in 0..8 {
                let u = now.last_touch(unit);
                assert!(u <= v && v - u < FORCED_PERIOD || u == 0);
                if u != v {
                    assert_eq!(u, before.last_touch(unit));
                }
            }
        }
    }

    #[test]
    fn touches_is_last_touch_at_this_version() {
        for p in [0.0, 0.02, 0.3, 0.9, 1.0] {
            for key in 0..20u64 {
                for v in 0..200u32 {
                    let s = Schedule::new(key, v, p);
                    for unit in 0..40 {
                        assert_eq!(s.touches(unit), s.last_touch(unit) == v, "p {p} v {v}");
                    }
                }
            }
        }
    }
}
