//! O(1) Zipf sampling and a keyed scatter of ranks over pages.

use flashstack_sim::Rng;

/// Zipf sampler over ranks `1..=n` with `P(k) ∝ k^-theta`, by rejection-inversion
/// (Hörmann & Derflinger 1996, as in Apache Commons' `RejectionInversionZipfSampler`): O(1)
/// time per sample and O(1) memory for any `n`, where a cumulative table would need `n`
/// entries (a 128 GiB device has 33 M pages).
#[derive(Clone, Debug)]
pub(crate) struct Zipf {
    n: f64,
    exponent: f64,
    h_integral_x1: f64,
    h_integral_n: f64,
    s: f64,
}

impl Zipf {
    /// `n ≥ 1`, `exponent > 0` and finite (checked by the spec parser).
    pub fn new(n: u64, exponent: f64) -> Self {
        let mut zipf = Zipf {
            n: n as f64,
            exponent,
            h_integral_x1: 0.0,
            h_integral_n: 0.0,
            s: 0.0,
        };
        zipf.h_integral_x1 = zipf.h_integral(1.5) - 1.0;
        zipf.h_integral_n = zipf.h_integral(zipf.n + 0.5);
        zipf.s = 2.0 - zipf.h_integral_inverse(zipf.h_integral(2.5) - zipf.h(2.0));
        zipf
    }

    /// A rank in `1..=n`, 1 the most frequent. Rejection-inversion accepts most draws at the
    /// first try; the loop is capped all the same, keeping the last candidate rank after 64
    /// rejections (which never happens in practice) so that time per sample is bounded.
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        let mut k = 1.0;
        for _ in 0..64 {
            let u = self.h_integral_n + rng.unit_f64() * (self.h_integral_x1 - self.h_integral_n);
            let x = self.h_integral_inverse(u);
            k = (x + 0.5).floor().clamp(1.0, self.n);
            if k - x <= self.s || u >= self.h_integral(k + 0.5) - self.h(k) {
                break;
            }
        }
        k as u64
    }

    fn h(&self, x: f64) -> f64 {
        (-self.exponent * x.ln()).exp()
    }

    fn h_integral(&self, x: f64) -> f64 {
        let log_x = x.ln();
        helper2((1.0 - self.exponent) * log_x) * log_x
    }

    fn h_integral_inverse(&self, x: f64) -> f64 {
        let t = (x * (1.0 - self.exponent)).max(-1.0);
        (helper1(t) * x).exp()
    }
}

/// `ln(1 + x) / x`, accurate near 0.
fn helper1(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// `(e^x - 1) / x`, accurate near 0.
fn helper2(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))
    }
}

/// A keyed bijection of `0..n`, so that the hottest Zipf ranks land on pages spread over the
/// footprint instead of the first pages. Rounds of xor, odd multiply and xor-shift are each
/// a bijection on `bits`-bit values (`2^bits ≥ n`); values that land at or above `n` are
/// mapped again (cycle walking), which stays inside `0..n` because a permutation's cycle
/// through a value below `n` returns to it. Since `2^bits < 2n`, fewer than two rounds are
/// needed on average.
#[derive(Clone, Debug)]
pub(crate) struct Scatter {
    n: u64,
    mask: u64,
    shift: u32,
    keys: [(u64, u64); 3],
}

impl Scatter {
    pub fn new(n: u64, rng: &mut Rng) -> Self {
        let bits = if n <= 1 {
            0
        } else {
            64 - (n - 1).leading_zeros()
        };
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        let keys = [(); 3].map(|_| (rng.next_u64(), rng.next_u64() | 1));
        Scatter {
            n: n.max(1),
            mask,
            shift: bits.div_ceil(2).max(1),
            keys,
        }
    }

    pub fn apply(&self, index: u64) -> u64 {
        let mut value = index & self.mask;
        loop {
            value = self.round(value);
            if value < self.n {
                return value;
            }
        }
    }

    fn round(&self, mut value: u64) -> u64 {
        for (xor, multiplier) in self.keys {
            value = (value ^ xor) & self.mask;
            value = value.wrapping_mul(multiplier) & self.mask;
            value ^= value >> self.shift;
        }
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scatter_is_a_permutation() {
        for n in [1u64, 2, 3, 7, 8, 9, 100, 1000, 4097] {
            let scatter = Scatter::new(n, &mut Rng::new(n));
            let mut seen = vec![false; n as usize];
            for index in 0..n {
                let page = scatter.apply(index);
                assert!(page < n);
                assert!(!seen[page as usize], "n={n}: {page} twice");
                seen[page as usize] = true;
            }
        }
    }

    #[test]
    fn zipf_frequencies_follow_the_law() {
        let zipf = Zipf::new(1000, 1.0);
        let mut rng = Rng::new(3);
        let mut counts = vec![0u64; 1001];
        let draws = 200_000;
        for _ in 0..draws {
            let k = zipf.sample(&mut rng);
            assert!((1..=1000).contains(&k));
            counts[k as usize] += 1;
        }
        // P(1) = 1 / H(1000) = 0.1336; P(2) = P(1) / 2.
        let p1 = counts[1] as f64 / draws as f64;
        let p2 = counts[2] as f64 / draws as f64;
        assert!((p1 - 0.1336).abs() < 0.005, "p1 = {p1}");
        assert!((p2 - 0.0668).abs() < 0.004, "p2 = {p2}");
    }

    #[test]
    fn zipf_edge_cases_stay_in_range() {
        let mut rng = Rng::new(1);
        for (n, theta) in [
            (1u64, 0.99),
            (2, 0.5),
            (3, 5.0),
            (u64::MAX >> 12, 0.99),
            (10, 1e-3),
        ] {
            let zipf = Zipf::new(n, theta);
            for _ in 0..1000 {
                let k = zipf.sample(&mut rng);
                assert!(k >= 1 && k <= n, "n={n} theta={theta}: {k}");
            }
        }
    }
}
