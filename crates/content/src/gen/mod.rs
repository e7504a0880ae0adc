//! Page generators, one module per class, and what they share: the page context, the
//! update schedule hook and small text builders.

pub(crate) mod exec;
pub(crate) mod media;
pub(crate) mod meta;
pub(crate) mod spectrum;
pub(crate) mod sqlite;
pub(crate) mod text;

use flashstack_sim::Rng;

use crate::hash::{hash, unit_seed, Schedule};
use crate::vocab::{FIRST_LOWER, FIRST_NAMES, HOSTS, LAST_LOWER, LAST_NAMES, MAIL_DOMAINS};
use crate::vocab::{TEXT_PHRASES, TEXT_PIECES, URL_PATHS};
use crate::write::{Draw, Tok, Writer};
use crate::PAGE_SIZE;

/// The unit number reserved for a page's layout stream (unit numbers of content are far
/// smaller), so that layout draws never collide with a unit's content draws.
const LAYOUT_UNIT: usize = u32::MAX as usize;

/// Keeps whole-page streams apart from unit streams (which hash the same key).
const VERSION_SALT: u64 = 0x3C6E_F372_FE94_F82B;

/// 2015-01-01T00:00:00Z in Unix milliseconds: the earliest file a region can represent.
const EPOCH_2015_MS: u64 = 1_420_070_400_000;
const TEN_YEARS_MS: u64 = 10 * 365 * 86_400_000;

/// Everything a generator needs to know about the page it fills.
pub(crate) struct PageCtx {
    /// Hash of (seed, class, lba): the root of every draw for this page.
    pub key: u64,
    /// Hash of (seed, class, region): file-wide properties (schema, format, timestamps).
    pub region_key: u64,
    /// Position of the page inside its region (its file offset in pages).
    pub page_in_region: u64,
    pub version: u32,
    pub change_ratio: f64,
}

impl PageCtx {
    /// Draws that fix the page's structure; they never depend on the version, so the
    /// structure stays put across updates.
    pub(crate) fn layout_draw(&self) -> Draw {
        Draw::new(unit_seed(self.key, LAYOUT_UNIT, 0))
    }

    /// Draws for one unit's content as of the version at which it was last touched.
    pub(crate) fn unit_draw(&self, unit: usize, touched_at: u32) -> Draw {
        Draw::new(unit_seed(self.key, unit, touched_at))
    }

    /// A generator for the whole page at this version (classes rewritten wholesale).
    pub(crate) fn version_rng(&self) -> Rng {
        Rng::new(hash(self.key ^ VERSION_SALT, u64::from(self.version)))
    }

    /// The update schedule for a page whose units, if all rewritten, would differ from
    /// their previous content in `diff_bytes` bytes on average. Each unit is then touched
    /// with probability `change_ratio × PAGE_SIZE / diff_bytes`, so the expected fraction
    /// of changed bytes per version is the change ratio (capped at touching every unit).
    pub(crate) fn schedule(&self, diff_bytes: f64) -> Schedule {
        let p = if diff_bytes > 0.0 {
            self.change_ratio * PAGE_SIZE as f64 / diff_bytes
        } else {
            0.0
        };
        Schedule::new(self.key, self.version, p)
    }

    /// The creation time of the page's file, in Unix milliseconds (2015–2025).
    pub(crate) fn region_epoch_ms(&self) -> u64 {
        EPOCH_2015_MS + self.region_key % TEN_YEARS_MS
    }

    /// A time for this page: files grow over time, so later pages carry later stamps.
    pub(crate) fn page_epoch_ms(&self) -> u64 {
        self.region_epoch_ms() + self.page_in_region.wrapping_mul(3_600_000) % TEN_YEARS_MS
    }
}

/// Text until the cursor reaches `end`: template phrases (log messages, stock replies)
/// `phrase_percent` of the time, otherwise single words. The last piece may run past
/// `end`; the caller overwrites or truncates.
#[inline]
pub(crate) fn phrases_until(w: &mut Writer, d: &mut Draw, end: usize, phrase_percent: u32) {
    let threshold = phrase_percent * 256 / 100;
    while w.pos < end {
        let r = d.u64();
        w.tok(text_piece(r as u32, threshold));
        if w.pos >= end {
            break;
        }
        w.tok(text_piece((r >> 32) as u32, threshold));
    }
}

/// A text piece from 32 random bits: a phrase if the low 8 bits fall below `threshold`
/// (in 256ths), else a word, skewed the way [`Draw::pick_skewed`] skews them. Table
/// arithmetic rather than branches: a mispredicted branch per word would cost more than
/// writing the word.
#[inline]
fn text_piece(r: u32, threshold: u32) -> &'static Tok {
    const WORDS: u32 = (TEXT_PIECES.len() - TEXT_PHRASES) as u32;
    let phrase = ((r >> 8 & 0xFF) * TEXT_PHRASES as u32) >> 8;
    let span = if r >> 31 == 0 {
        WORDS.div_ceil(8)
    } else {
        WORDS
    };
    let word = TEXT_PHRASES as u32 + (((r >> 16 & 0x7FFF) * span) >> 15);
    let index = if (r & 0xFF) < threshold { phrase } else { word };
    &TEXT_PIECES[index as usize]
}

/// `first.last42@domain`, lower case.
pub(crate) fn email(w: &mut Writer, d: &mut Draw) {
    w.tok(d.pick(&FIRST_LOWER));
    w.byte(b'.');
    w.tok(d.pick(&LAST_LOWER));
    w.random_digits(d.u64(), d.below(3));
    w.tok(d.pick(&MAIL_DOMAINS));
}

/// `First Last`.
pub(crate) fn person(w: &mut Writer, d: &mut Draw) {
    w.tok(d.pick(&FIRST_NAMES));
    w.byte(b' ');
    w.tok(d.pick(&LAST_NAMES));
}

/// A mobile number with a shared operator prefix.
pub(crate) fn phone(w: &mut Writer, d: &mut Draw) {
    w.bytes(b"+86138");
    w.random_digits(d.u64(), 8);
}

/// `https://host/path/path?id=12345678`.
pub(crate) fn url(w: &mut Writer, d: &mut Draw) {
    w.bytes(b"https://");
    w.tok(d.pick(&HOSTS));
    w.byte(b'/');
    w.tok(d.pick(&URL_PATHS));
    w.byte(b'/');
    w.tok(d.pick(&URL_PATHS));
    w.bytes(b"?id=");
    w.random_digits(d.u64(), 8);
}

/// Per-format checks of the diff constants that turn the change ratio into a touch
/// probability: if a generator changes, these say which constant to re-measure.
#[cfg(test)]
mod calibration {
    use super::*;

    type Fill = fn(&PageCtx, &mut [u8]);

    fn ctx(lba: u64, version: u32) -> PageCtx {
        PageCtx {
            key: hash(0xCA1B, lba),
            region_key: hash(0xF11E, lba / 4),
            page_in_region: lba % 4,
            version,
            change_ratio: 0.138,
        }
    }

    fn page(fill: Fill, ctx: &PageCtx) -> [u8; PAGE_SIZE] {
        let mut page = [0; PAGE_SIZE];
        fill(ctx, &mut page);
        page
    }

    /// Mean fraction of changed bytes between consecutive versions, per group.
    fn measure(fill: Fill, group: fn(&PageCtx) -> usize) -> Vec<(usize, f64)> {
        let mut sums = vec![(0usize, 0.0f64); 4];
        for lba in 0..240 {
            let mut prev = page(fill, &ctx(lba, 0));
            for version in 1..12 {
                let c = ctx(lba, version);
                let now = page(fill, &c);
                let changed = prev[..PAGE_SIZE]
                    .iter()
                    .zip(&now[..PAGE_SIZE])
                    .filter(|(a, b)| a != b)
                    .count();
                let g = &mut sums[group(&c)];
                g.0 += 1;
                g.1 += changed as f64 / PAGE_SIZE as f64;
                prev = now;
            }
        }
        sums.into_iter()
            .map(|(n, s)| (n, s / n.max(1) as f64))
            .collect()
    }

    fn check(name: &str, fill: Fill, group: fn(&PageCtx) -> usize) {
        let groups = measure(fill, group);
        println!("{name}: {groups:?}");
        for (g, &(n, mean)) in groups.iter().enumerate() {
            if n > 0 {
                assert!(
                    (mean - 0.138).abs() < 0.02,
                    "{name} group {g}: change ratio {mean:.3}"
                );
            }
        }
    }

    /// Mean LZ4 ratio per group; each group must sit in its class's band (widened by
    /// 0.05), so no single schema or format is unrealistic on its own.
    fn check_lz4(name: &str, fill: Fill, group: fn(&PageCtx) -> usize, band: (f64, f64)) {
        let mut sums = [(0usize, 0.0f64); 4];
        for lba in 0..400 {
            let c = ctx(lba, (lba % 3) as u32);
            let p = page(fill, &c);
            let ratio = lz4_flex::compress_prepend_size(&p[..PAGE_SIZE]).len() as f64;
            let g = &mut sums[group(&c)];
            g.0 += 1;
            g.1 += ratio / PAGE_SIZE as f64;
        }
        let means: Vec<_> = sums
            .iter()
            .map(|&(n, s)| (n, s / n.max(1) as f64))
            .collect();
        println!("{name} lz4: {means:?}");
        for (g, &(n, mean)) in means.iter().enumerate() {
            if n > 0 {
                let ok = band.0 - 0.05 <= mean && mean <= band.1 + 0.05;
                assert!(ok, "{name} group {g}: LZ4 ratio {mean:.3}");
            }
        }
    }

    #[test]
    fn every_format_compresses_within_its_class_band() {
        check_lz4(
            "sqlite",
            sqlite::fill_table,
            sqlite::group_of_table,
            (0.35, 0.6),
        );
        check_lz4(
            "sqlite-index",
            sqlite::fill_index,
            sqlite::group_of_index,
            (0.3, 0.55),
        );
        check_lz4("text", text::fill, text::group_of, (0.3, 0.5));
        check_lz4("meta", meta::fill, meta::group_of, (0.05, 0.25));
    }

    #[test]
    fn calibration_constants_match_measurement() {
        check("sqlite", sqlite::fill_table, sqlite::group_of_table);
        check("sqlite-index", sqlite::fill_index, sqlite::group_of_index);
        check("text", text::fill, text::group_of);
        check("meta", meta::fill, meta::group_of);
    }
}
