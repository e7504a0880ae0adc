//! Latency distributions (hdrhistogram, 3 significant digits, 1 ns to 1 hour).

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::Nanos;

const HIGHEST_TRACKABLE_NS: u64 = 3_600 * crate::NS_PER_SEC;

/// A latency histogram in nanoseconds. Values above one hour are clamped (and counted in
/// `clamped_count`) rather than dropped, so no request disappears from the figures.
#[derive(Clone, Debug)]
pub struct LatencyHistogram {
    /// Built at the first value: its counts take about 340 KiB, zeroed when allocated,
    /// and a stack makes many histograms that never see a value (per operation kind,
    /// per measurement).
    histogram: Option<Box<Histogram<u64>>>,
    clamped_count: u64,
    sum_ns: u128,
}

/// The percentiles every report prints.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LatencySummary {
    pub count: u64,
    pub latency_ns_mean: u64,
    pub latency_ns_p50: u64,
    pub latency_ns_p90: u64,
    pub latency_ns_p99: u64,
    pub latency_ns_p999: u64,
    pub latency_ns_max: u64,
    /// The distribution as `[quantile, latency_ns]` points at [`CDF_QUANTILES`] (empty
    /// when nothing was recorded): enough to draw a CDF, small enough for every report.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cdf: Vec<(f64, u64)>,
}

/// The quantiles a summary's CDF is sampled at: dense in the tail, where storage latency
/// distributions differ.
pub const CDF_QUANTILES: [f64; 21] = [
    0.0, 0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.97, 0.99, 0.995, 0.999,
    0.9995, 0.9999, 0.99999, 1.0,
];

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    pub fn new() -> Self {
        LatencyHistogram {
            histogram: None,
            clamped_count: 0,
            sum_ns: 0,
        }
    }

    fn histogram_mut(&mut self) -> &mut Histogram<u64> {
        self.histogram.get_or_insert_with(|| {
            Box::new(
                Histogram::new_with_bounds(1, HIGHEST_TRACKABLE_NS, 3)
                    .expect("static histogram bounds are valid"),
            )
        })
    }

    #[inline]
    pub fn record(&mut self, latency_ns: Nanos) {
        // Zero is recorded as zero: a request with nothing to wait for (a flush with
        // nothing buffered on a device without command overhead) must not read as 1 ns.
        let value = latency_ns.min(HIGHEST_TRACKABLE_NS);
        if value != latency_ns {
            self.clamped_count += 1;
        }
        self.sum_ns += latency_ns as u128;
        self.histogram_mut()
            .record(value)
            .expect("value is clamped into the trackable range");
    }

    pub fn count(&self) -> u64 {
        self.histogram.as_ref().map_or(0, |h| h.len())
    }

    pub fn clamped_count(&self) -> u64 {
        self.clamped_count
    }

    pub fn merge(&mut self, other: &LatencyHistogram) {
        if let Some(theirs) = other.histogram.as_deref() {
            self.histogram_mut()
                .add(theirs)
                .expect("histograms share bounds");
        }
        self.clamped_count += other.clamped_count;
        self.sum_ns += other.sum_ns;
    }

    pub fn summary(&self) -> LatencySummary {
        let Some(histogram) = self.histogram.as_deref() else {
            return LatencySummary::default();
        };
        let count = histogram.len();
        if count == 0 {
            return LatencySummary::default();
        }
        let q = |quantile: f64| histogram.value_at_quantile(quantile);
        LatencySummary {
            count,
            latency_ns_mean: (self.sum_ns / count as u128) as u64,
            latency_ns_p50: q(0.50),
            latency_ns_p90: q(0.90),
            latency_ns_p99: q(0.99),
            latency_ns_p999: q(0.999),
            latency_ns_max: histogram.max(),
            cdf: CDF_QUANTILES.iter().map(|&p| (p, q(p))).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_known_distribution() {
        let mut h = LatencyHistogram::new();
        for v in 1..=1000u64 {
            h.record(v * 1000);
        }
        let s = h.summary();
        assert_eq!(s.count, 1000);
        assert_eq!(s.latency_ns_mean, 500_500);
        // 3 significant digits: within 0.1%.
        assert!((s.latency_ns_p50 as i64 - 500_000).abs() <= 500);
        assert!((s.latency_ns_p99 as i64 - 990_000).abs() <= 1_000);
        assert!((s.latency_ns_max as i64 - 1_000_000).abs() <= 1_000);
    }

    #[test]
    fn the_cdf_rises_from_the_minimum_to_the_maximum() {
        let mut h = LatencyHistogram::new();
        for v in 1..=1000u64 {
            h.record(v * 1000);
        }
        let s = h.summary();
        assert_eq!(s.cdf.len(), CDF_QUANTILES.len());
        assert_eq!(s.cdf.first(), Some(&(0.0, 1000)));
        assert_eq!(s.cdf.last().map(|p| p.1), Some(s.latency_ns_max));
        assert!(s
            .cdf
            .windows(2)
            .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
        assert_eq!(s.cdf[7], (0.5, s.latency_ns_p50));
        assert!(LatencyHistogram::new().summary().cdf.is_empty());
    }

    #[test]
    fn zero_is_recorded_as_zero() {
        let mut h = LatencyHistogram::new();
        h.record(0);
        h.record(0);
        let s = h.summary();
        assert_eq!((s.count, s.latency_ns_p99, s.latency_ns_max), (2, 0, 0));
        assert_eq!(h.clamped_count(), 0);
    }

    #[test]
    fn huge_values_are_clamped_not_lost() {
        let mut h = LatencyHistogram::new();
        h.record(u64::MAX / 4);
        assert_eq!(h.count(), 1);
        assert_eq!(h.clamped_count(), 1);
    }

    #[test]
    fn merging_into_and_from_empty_histograms() {
        let mut h = LatencyHistogram::new();
        for v in 1..=100u64 {
            h.record(v * 10);
        }
        let mut into_empty = LatencyHistogram::new();
        into_empty.merge(&h);
        assert_eq!(into_empty.summary(), h.summary());
        let before = h.summary();
        h.merge(&LatencyHistogram::new());
        assert_eq!(h.summary(), before);
        assert_eq!(LatencyHistogram::new().count(), 0);
    }
}
