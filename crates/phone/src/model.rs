//! The population of a used Android phone and the rates at which months of use change it.
//! Every figure names its source; `[assumed]` marks a modelling choice no published
//! measurement pins down (docs/aging.md lists them all, with the measured result).

use flashstack_sim::Rng;
use serde::{Deserialize, Serialize};

const MIB: f64 = 1024.0 * 1024.0;
const KIB: f64 = 1024.0;

/// A log-normal size: `median` bytes, `sigma` the standard deviation of its logarithm
/// (file sizes are close to log-normal: Agrawal et al., "A five-year study of
/// file-system metadata", FAST '07), clamped to `[min, max]`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SizeDist {
    pub median_bytes: f64,
    pub sigma: f64,
    pub min_bytes: u64,
    pub max_bytes: u64,
}

impl SizeDist {
    pub const fn new(median_bytes: f64, sigma: f64, min_bytes: u64, max_bytes: u64) -> Self {
        SizeDist {
            median_bytes,
            sigma,
            min_bytes,
            max_bytes,
        }
    }

    /// One size, in bytes.
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        let z = standard_normal(rng);
        let bytes = self.median_bytes * (self.sigma * z).exp();
        (bytes as u64).clamp(self.min_bytes, self.max_bytes)
    }

    /// The distribution's mean, before clamping.
    pub fn mean_bytes(&self) -> f64 {
        self.median_bytes * (self.sigma * self.sigma / 2.0).exp()
    }
}

/// A standard normal deviate (Box–Muller).
fn standard_normal(rng: &mut Rng) -> f64 {
    let u1 = rng.unit_f64().max(f64::MIN_POSITIVE);
    let u2 = rng.unit_f64();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// A Poisson count with mean `mean` (Knuth's method; means here are small).
pub fn poisson(rng: &mut Rng, mean: f64) -> u32 {
    if mean <= 0.0 {
        return 0;
    }
    if mean > 30.0 {
        // Normal approximation for large means.
        let v = mean + mean.sqrt() * standard_normal(rng);
        return v.round().max(0.0) as u32;
    }
    let limit = (-mean).exp();
    let (mut k, mut p) = (0u32, 1.0);
    loop {
        p *= rng.unit_f64();
        if p <= limit {
            return k;
        }
        k += 1;
    }
}

/// The population and its rates of change.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PopulationModel {
    /// Apps installed by the user on a phone in use: App Annie, "Spotlight on Consumer
    /// App Usage" (2017): 60–90 installed, about 30 used a month, 9 a day. Scaled down
    /// on small phones so that apps take at most `apps_share` of the capacity.
    pub apps_installed: u32,
    /// Share of the capacity the installed apps (code and data) may take at the start
    /// [assumed].
    pub apps_share: f64,
    /// Distinct apps used a day (App Annie 2017: 9).
    pub apps_used_per_day: f64,
    /// Popularity of apps: the i-th most used app is used in proportion to
    /// 1/(i+1)^zipf [assumed: the usage studies report a few apps taking most of the
    /// time, Nielsen 2015 and App Annie 2017].
    pub app_popularity_zipf: f64,
    /// Mean days between two updates of an app (Play auto-update) [assumed].
    pub app_update_days: f64,
    /// New apps installed a day; as many old ones uninstalled, so the count stays about
    /// constant [assumed; Localytics 2016: most downloaded apps are abandoned within
    /// three months].
    pub app_installs_per_day: f64,
    /// `base.apk`: Google Play (Tolomei, "Shrinking APKs, growing installs", 2017): the
    /// average APK grew fivefold since 2012 (about 6 MB then, Google 2015); median
    /// 15 MiB, mean about 25 MiB.
    pub apk: SizeDist,
    /// The ART-compiled code (`oat/arm64/base.odex` + `.vdex`) as a share of the APK
    /// [assumed].
    pub odex_ratio: f64,
    /// Share of apps with native libraries (`lib/arm64/*.so`) [assumed] and the size of
    /// each library.
    pub native_lib_share: f64,
    pub native_lib: SizeDist,
    /// Cache quota of an app: its cache directory is trimmed back (oldest files first,
    /// as `DiskLruCache` does) to 3/4 of it once it is exceeded [assumed].
    pub cache_quota: SizeDist,
    /// One cached object (image, HTTP response) [assumed].
    pub cache_file: SizeDist,
    /// Cached objects an app session writes [assumed].
    pub cache_files_per_session: f64,
    /// Camera pictures a day. OnePoll for Mixbook (2023): the average camera roll holds
    /// 2,795 photos, taken on six occasions a day. The fill controller scales this rate
    /// so that the phone reaches its target fill on the last day.
    pub photos_per_day: f64,
    /// A 12-megapixel JPEG [assumed from camera output sizes].
    pub photo: SizeDist,
    /// Share of camera items that are videos, and a video's size [assumed].
    pub video_share: f64,
    pub video: SizeDist,
    /// Share of pictures and videos the user deletes again (bursts, failed shots), and
    /// after how many days on average [assumed].
    pub media_delete_share: f64,
    pub media_delete_days: f64,
    /// Screenshots a day and their size [assumed].
    pub screenshots_per_day: f64,
    pub screenshot: SizeDist,
    /// Received messaging media (images, voice notes) a day and their size [assumed].
    pub messaging_media_per_day: f64,
    pub messaging_media: SizeDist,
    /// Downloads a day (documents, archives), their size, the share later deleted and
    /// after how many days [assumed].
    pub downloads_per_day: f64,
    pub download: SizeDist,
    pub download_delete_share: f64,
    pub download_delete_days: f64,
    /// The device's total writes, as a multiple of its raw flash, by the end of aging: past
    /// 1.0 every new write is paid by an erase (steady state). App updates and cache
    /// traffic are scaled up to reach it [assumed: the real write volume of 90 days,
    /// several times the capacity, is too slow to simulate in full].
    pub device_turnover: f64,
}

impl Default for PopulationModel {
    fn default() -> Self {
        PopulationModel {
            apps_installed: 60,
            apps_share: 0.3,
            apps_used_per_day: 9.0,
            app_popularity_zipf: 1.0,
            app_update_days: 21.0,
            app_installs_per_day: 0.1,
            apk: SizeDist::new(15.0 * MIB, 1.0, 1 << 20, 150 << 20),
            odex_ratio: 0.5,
            native_lib_share: 0.4,
            native_lib: SizeDist::new(2.0 * MIB, 1.0, 64 << 10, 40 << 20),
            cache_quota: SizeDist::new(24.0 * MIB, 0.8, 4 << 20, 250 << 20),
            cache_file: SizeDist::new(40.0 * KIB, 1.2, 1 << 10, 4 << 20),
            cache_files_per_session: 12.0,
            photos_per_day: 20.0,
            photo: SizeDist::new(3.0 * MIB, 0.35, 500 << 10, 12 << 20),
            video_share: 0.05,
            video: SizeDist::new(40.0 * MIB, 0.9, 2 << 20, 1 << 30),
            media_delete_share: 0.15,
            media_delete_days: 7.0,
            screenshots_per_day: 1.0,
            screenshot: SizeDist::new(600.0 * KIB, 0.5, 50 << 10, 4 << 20),
            messaging_media_per_day: 12.0,
            messaging_media: SizeDist::new(120.0 * KIB, 1.0, 4 << 10, 8 << 20),
            downloads_per_day: 0.4,
            download: SizeDist::new(2.0 * MIB, 1.5, 16 << 10, 500 << 20),
            download_delete_share: 0.5,
            download_delete_days: 14.0,
            device_turnover: 1.25,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samplers_have_their_stated_centre() {
        let mut rng = Rng::new(7);
        let d = SizeDist::new(1e6, 1.0, 1, u64::MAX);
        let mut v: Vec<u64> = (0..20_000).map(|_| d.sample(&mut rng)).collect();
        v.sort_unstable();
        let median = v[v.len() / 2] as f64;
        assert!((median / 1e6 - 1.0).abs() < 0.05, "median {median}");
        let mean = (0..20_000)
            .map(|_| poisson(&mut rng, 4.0) as f64)
            .sum::<f64>()
            / 20_000.0;
        assert!((mean - 4.0).abs() < 0.1, "poisson mean {mean}");
    }
}
