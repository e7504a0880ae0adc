//! Division of `u32`s by a divisor fixed at construction (a geometry dimension) without
//! the hardware divide, which costs tens of cycles on some CPUs and sits on the
//! simulator's hottest paths (slot → page → block → plane → channel). Exact for every
//! `u32` dividend: a power of two is a shift; anything else multiplies by ⌈2⁶⁴ / d⌉ and
//! keeps the high 64 bits (Lemire, Kaser and Kurz, "Faster remainder by direct
//! computation", 2019: exact for 32-bit dividends with a 64-bit multiplier).

/// A fixed divisor `d ≥ 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Divisor {
    d: u32,
    /// ⌈2⁶⁴ / d⌉ when `d` is not a power of two; 0 when `shift` applies.
    multiplier: u64,
    shift: u32,
}

impl Divisor {
    /// Panics if `d` is 0.
    pub const fn new(d: u32) -> Divisor {
        assert!(d > 0, "division by zero");
        if d.is_power_of_two() {
            Divisor {
                d,
                multiplier: 0,
                shift: d.trailing_zeros(),
            }
        } else {
            Divisor {
                d,
                multiplier: u64::MAX / d as u64 + 1,
                shift: 0,
            }
        }
    }

    #[inline]
    pub const fn get(self) -> u32 {
        self.d
    }

    /// `n / d`.
    #[inline(always)]
    pub const fn div(self, n: u32) -> u32 {
        if self.multiplier == 0 {
            n >> self.shift
        } else {
            ((self.multiplier as u128 * n as u128) >> 64) as u32
        }
    }

    /// `n % d`.
    #[inline(always)]
    pub const fn rem(self, n: u32) -> u32 {
        n - self.div(n) * self.d
    }

    /// `(n / d, n % d)`.
    #[inline(always)]
    pub const fn div_rem(self, n: u32) -> (u32, u32) {
        let q = self.div(n);
        (q, n - q * self.d)
    }
}

#[cfg(test)]
mod tests {
    use super::Divisor;
    use crate::Rng;

    #[test]
    fn exact_for_edge_and_random_dividends() {
        let divisors = [
            1u32,
            2,
            3,
            5,
            7,
            64,
            100,
            16_548,
            65_536,
            1_000_003,
            u32::MAX / 2,
            u32::MAX - 1,
            u32::MAX,
        ];
        let mut rng = Rng::new(7);
        for &d in &divisors {
            let f = Divisor::new(d);
            let check = |n: u32| {
                assert_eq!(f.div(n), n / d, "{n} / {d}");
                assert_eq!(f.rem(n), n % d, "{n} % {d}");
            };
            for n in [0, 1, d - 1, d, d.wrapping_add(1), u32::MAX - 1, u32::MAX] {
                check(n);
            }
            for k in 1..64u32 {
                check(d.wrapping_mul(k));
                check(d.wrapping_mul(k).wrapping_sub(1));
            }
            for _ in 0..100_000 {
                check(rng.next_u64() as u32);
            }
        }
        for d in 1..1_000u32 {
            let f = Divisor::new(d);
            for n in (0..10_000u32).chain(u32::MAX - 2_000..=u32::MAX) {
                assert_eq!(f.div(n), n / d, "{n} / {d}");
            }
        }
    }
}
