//! Page contents for block traces that carry none.
//!
//! Public mobile block traces record where and when an app wrote, never what. Compression,
//! deduplication and delta encoding need bytes, so this crate makes them up —
//! deterministically from the run's seed, with per-class compressibility and realistic
//! updates, and fast enough to produce a page for every write the replay engine issues.
//!
//! # The model
//!
//! * **Classes by region.** The LBA space is cut into regions of `region_lbas` LBAs
//!   (default 256 = 1 MiB, a file-sized extent). A hash of (seed, region) picks each
//!   region's [`ContentClass`] from the [`ContentMix`] weights, so an LBA keeps its class
//!   across rewrites, and a region also keeps one file format (one SQLite schema, one text
//!   format). The default mix follows Ji et al.'s write-traffic study (see [`ContentMix`]).
//! * **Zones.** Optionally, [`Zone`]s give LBA ranges their own mix (the file system's
//!   journal, an app's databases, its image cache, the user's photos), because a phone's
//!   partition is laid out by purpose, not mixed uniformly. An LBA takes its class from the
//!   first zone that contains it, else from the global mix; with no zones the model is
//!   exactly the zone-less one (same classes, same bytes).
//! * **Units and versions.** A structured page is a fixed layout (cells, lines, inode slots)
//!   that depends on (seed, lba) only, filled with *units*. The `version` of an LBA counts
//!   its rewrites. Version 0 draws every unit; at version `v ≥ 1` each unit is *touched*
//!   with a probability chosen so that, on average, a fraction `change_ratio` of the
//!   page's bytes differs from version `v − 1`. A unit shows the content drawn for its
//!   latest touch, so any version of any page is computed in O(page) time from
//!   (seed, lba, version) alone, without the previous bytes (the backward scan is bounded
//!   because every unit is also rewritten once per 64 versions; those forced rewrites
//!   count towards the ratio).
//! * **Change ratio.** The default, 0.138, is MedFS's measurement: updated file content
//!   differs from the original by 13.8% on average, and 77.1% of app write traffic is
//!   updates (MedFS, <https://jingwei87.github.io/2025/04/02/medfs.html>; summarised in
//!   `shared/reference/seed-systems.md`). Structured classes (SQLite,
//!   text, metadata) follow it; media and executables are rewritten wholesale, as apps
//!   replace such files rather than patch them; zeros stay zeros. A class whose rewritten
//!   units differ in fewer bytes than the ratio asks for touches every unit and stays
//!   below it: SQLite table and text pages reach about 0.68, index pages about 0.2 (only
//!   key suffixes, timestamps and rowids change) and metadata about 0.23 (mostly zeros).
//!
//! # Class targets
//!
//! LZ4 ratio = `lz4_flex::compress_prepend_size` output / 4096, averaged over 400 pages
//! (LDC's bands: high < 0.25, medium 0.25–0.65, low 0.65–0.95, minimal > 0.95). The
//! `realism` tests hold each class to its target; every schema and format is also held
//! to its class's band on its own.
//!
//! | class | content | target | measured |
//! |---|---|---|---|
//! | `zeros` | all zero | ≈ 0.01 | 0.008 |
//! | `sqlite` | table leaf (0x0D): rows of an app database | 0.35–0.6 | 0.50 |
//! | `sqlite-index` | index leaf (0x0A), shared key prefixes | 0.3–0.55 | 0.43 |
//! | `text` | JSON lines, shared-prefs XML, logcat | 0.3–0.5 | 0.43 |
//! | `exec` | AArch64-like code | 0.65–0.85 | 0.75 |
//! | `media` | uniform random, JFIF header on a file's first page | ≥ 0.99 | 1.005 |
//! | `meta` | ext4 inode tables and block bitmaps | 0.05–0.25 | 0.16 |

//!
//! The classes above cluster: almost no page of theirs falls between LZO ratios 0.65 and
//! 0.95. Four more classes (module `gen::spectrum`, used by the LDC workloads' zones; no
//! older class changed) spread their pages over the whole range, from a per-file property
//! and a per-page draw around it (LZ4 10th / 50th / 90th percentile, 400 pages):
//!
//! | class | content | p10 / p50 / p90 |
//! |---|---|---|
//! | `sqlite-blob` | table leaves whose rows carry BLOBs (protobuf, thumbnails): 0–85% per file | 0.49 / 0.64 / 0.87 |
//! | `image` | JPEG (EXIF, DQT, DHT headers; byte stuffing, restart markers; flat areas 0–45%), PNG, WebP | 0.83 / 1.00 / 1.00 |
//! | `code` | ARM64 ELF / oat / dex: code, relocations, symbols, strings, packed data | 0.62 / 0.77 / 0.95 |
//! | `log` | logs, JSON and XML with base64 tokens, digests, UUIDs: 0–70% per file | 0.44 / 0.61 / 0.85 |
//!
//! SQLite table pages carry a header, a cell pointer array and records with varint
//! headers (messages, browser history or contacts rows: names, e-mails, phone numbers,
//! URLs, integers, timestamps and text from small vocabularies), 2–30% zeroed free space.
//!
//! # Real pages
//!
//! [`ContentModel::with_corpus`] serves the classes a [`PageCorpus`] holds from real pages
//! (captured version chains of real files, laid end to end: an LBA starts at a ring
//! position drawn from (seed, lba) and version `v` is `v` pages on) instead of the
//! generator, and leaves every other class as it was. The LDC workloads use it for the
//! three SQLite classes, with pages of the personas' real databases
//! (`flashstack_apps::corpus`, `docs/ldc-workloads.md`); this crate does not build corpora.
//!
//! # Speed
//!
//! The replay engine asks for a page per written LBA, so generation must outrun the
//! compressors that consume it (targets: ≥ 2 GB/s for incompressible classes, ≥ 1 GB/s for
//! structured ones, on one core). Hence: no allocation per page; vocabularies are
//! compile-time tables of fixed-width slots copied whole (no variable-length `memcpy`);
//! layouts live in small stack arrays; word and instruction choices are table arithmetic
//! rather than unpredictable branches; each unit draws from a SplitMix64 stream that starts
//! from its hash, while whole-page streams (media, code) use `flashstack_sim::Rng`
//! (xoshiro256**). The `content` bench reports [`ContentModel::fill`] throughput per class.

mod class;
mod corpus;
mod error;
mod gen;
mod hash;
pub mod ratio;
mod vocab;
mod write;
mod zone;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use class::{ContentClass, ContentMix};
pub use corpus::{PageChain, PageCorpus};
pub use error::{ContentError, MixEntryError};
pub use zone::Zone;

use gen::PageCtx;
use hash::hash;
use zone::ZoneIndex;

/// Bytes in a page: one logical block (`flashstack_block::LBA_SIZE`).
pub const PAGE_SIZE: usize = 4096;

/// Settings of the content model, as they appear in an experiment file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ContentConfig {
    /// Which classes the regions get, e.g. `"sqlite:40,text:10,media:50"`.
    pub mix: ContentMix,
    /// LBAs per region (one class and one file format per region).
    pub region_lbas: u64,
    /// Mean fraction of a structured page's bytes that differ between consecutive
    /// versions.
    pub change_ratio: f64,
    /// LBA ranges with their own mix; the first zone containing an LBA wins, and LBAs in
    /// no zone use `mix`. Empty by default.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub zones: Vec<Zone>,
}

impl ContentConfig {
    pub const DEFAULT_REGION_LBAS: u64 = 256;
    /// MedFS: updated file content differs from the original by 13.8% on average.
    pub const DEFAULT_CHANGE_RATIO: f64 = 0.138;
}

impl Default for ContentConfig {
    fn default() -> Self {
        ContentConfig {
            mix: ContentMix::default(),
            region_lbas: Self::DEFAULT_REGION_LBAS,
            change_ratio: Self::DEFAULT_CHANGE_RATIO,
            zones: Vec::new(),
        }
    }
}

/// Salt of the region-to-class hash.
const CLASS_SALT: u64 = 0xC1A5_5C1A_55C1_A55C;
/// Salt of per-region (file) keys.
const REGION_SALT: u64 = 0x7E61_0A5E_ED00_F11E;

/// The content model of one run: a pure function from (lba, version) to page bytes.
#[derive(Clone, Debug)]
pub struct ContentModel {
    seed: u64,
    mix: ContentMix,
    region_lbas: u64,
    change_ratio: f64,
    zones: ZoneIndex,
    /// Real pages that replace the generator for the classes they hold.
    corpus: Option<Arc<PageCorpus>>,
}

impl ContentModel {
    /// A model with the default region size and change ratio.
    pub fn new(seed: u64, mix: ContentMix) -> Self {
        ContentModel {
            seed,
            mix,
            region_lbas: ContentConfig::DEFAULT_REGION_LBAS,
            change_ratio: ContentConfig::DEFAULT_CHANGE_RATIO,
            zones: ZoneIndex::default(),
            corpus: None,
        }
    }

    /// Serves the pages of every class `corpus` holds from it (see [`PageCorpus`]) rather
    /// than from the generator; other classes are unchanged. The bytes remain a pure
    /// function of (seed, lba, version) for a given corpus.
    pub fn with_corpus(mut self, corpus: Arc<PageCorpus>) -> Self {
        self.corpus = Some(corpus);
        self
    }

    /// The corpus of real pages in use, if any.
    pub fn corpus(&self) -> Option<&Arc<PageCorpus>> {
        self.corpus.as_ref()
    }

    /// A model from settings, rejecting an empty region, a ratio outside `0..=1` or an
    /// empty zone.
    pub fn from_config(seed: u64, config: &ContentConfig) -> Result<Self, ContentError> {
        ContentModel::new(seed, config.mix.clone())
            .with_region_lbas(config.region_lbas)?
            .with_change_ratio(config.change_ratio)?
            .with_zones(config.zones.clone())
    }

    /// Replaces the zones (see [`Zone`]): in list order, the first zone containing an LBA
    /// gives its mix. Fails on an empty zone, naming its position.
    pub fn with_zones(mut self, zones: Vec<Zone>) -> Result<Self, ContentError> {
        self.zones = ZoneIndex::new(zones)?;
        Ok(self)
    }

    /// The zones, in the order given (earlier zones win overlaps).
    pub fn zones(&self) -> &[Zone] {
        self.zones.zones()
    }

    pub fn with_region_lbas(mut self, region_lbas: u64) -> Result<Self, ContentError> {
        if region_lbas == 0 {
            return Err(ContentError::ZeroRegion);
        }
        self.region_lbas = region_lbas;
        Ok(self)
    }

    pub fn with_change_ratio(mut self, change_ratio: f64) -> Result<Self, ContentError> {
        if !(0.0..=1.0).contains(&change_ratio) {
            return Err(ContentError::ChangeRatio(change_ratio));
        }
        self.change_ratio = change_ratio;
        Ok(self)
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    pub fn mix(&self) -> &ContentMix {
        &self.mix
    }

    pub fn region_lbas(&self) -> u64 {
        self.region_lbas
    }

    pub fn change_ratio(&self) -> f64 {
        self.change_ratio
    }

    /// The mix that governs `lba`: its zone's, or the global one outside every zone.
    pub fn mix_of(&self, lba: u64) -> &ContentMix {
        self.zones.mix_at(lba).unwrap_or(&self.mix)
    }

    /// The class of `lba`: fixed per region, drawn against the weights of the mix of the
    /// zone holding `lba` (the global mix outside every zone).
    pub fn class_of(&self, lba: u64) -> ContentClass {
        self.mix_of(lba)
            .pick(hash(self.seed ^ CLASS_SALT, lba / self.region_lbas))
    }

    /// The bytes of `version` of `lba` (version 0 is its first write).
    ///
    /// # Panics
    ///
    /// If `out` is not exactly [`PAGE_SIZE`] bytes (a caller bug, not an input error).
    pub fn fill(&self, lba: u64, version: u32, out: &mut [u8]) {
        self.fill_class(self.class_of(lba), lba, version, out);
    }

    /// Like [`fill`](Self::fill) with the class given rather than looked up: the same
    /// (seed, class, lba, version) always gives the same bytes.
    ///
    /// # Panics
    ///
    /// If `out` is not exactly [`PAGE_SIZE`] bytes.
    pub fn fill_class(&self, class: ContentClass, lba: u64, version: u32, out: &mut [u8]) {
        assert_eq!(
            out.len(),
            PAGE_SIZE,
            "ContentModel::fill: a page is {PAGE_SIZE} bytes"
        );
        if let Some(corpus) = &self.corpus {
            if corpus.fill(class, self.seed, lba, version, out) {
                return;
            }
        }
        let ctx = self.page_ctx(class, lba, version);
        // Every generator defines every byte of `out`, whatever it held before.
        match class {
            ContentClass::Zeros => out.fill(0),
            ContentClass::Media => gen::media::fill(&ctx, out),
            ContentClass::Executable => gen::exec::fill(&ctx, out),
            ContentClass::SqliteTable => gen::sqlite::fill_table(&ctx, out),
            ContentClass::SqliteIndex => gen::sqlite::fill_index(&ctx, out),
            ContentClass::Text => gen::text::fill(&ctx, out),
            ContentClass::Metadata => gen::meta::fill(&ctx, out),
            ContentClass::SqliteBlob => gen::spectrum::fill_sqlite_blob(&ctx, out),
            ContentClass::Image => gen::spectrum::fill_image(&ctx, out),
            ContentClass::Code => gen::spectrum::fill_code(&ctx, out),
            ContentClass::Log => gen::spectrum::fill_log(&ctx, out),
        }
    }

    /// Turns `page`, holding what [`fill_class`](Self::fill_class) gives for (`class`,
    /// `lba`, `prev_version`) under a change ratio of `prev_change_ratio` (this model
    /// otherwise), into the bytes of `version`: the same bytes as `fill_class`, for less
    /// work where the class allows it (text pages rewrite only the lines that differ;
    /// other classes are filled whole).
    ///
    /// # Panics
    ///
    /// If `page` is not exactly [`PAGE_SIZE`] bytes.
    pub fn refill_class(
        &self,
        class: ContentClass,
        lba: u64,
        prev_version: u32,
        prev_change_ratio: f64,
        version: u32,
        page: &mut [u8],
    ) {
        let from_corpus = self.corpus.as_ref().is_some_and(|c| c.pages(class) > 0);
        if class != ContentClass::Text || from_corpus {
            return self.fill_class(class, lba, version, page);
        }
        assert_eq!(
            page.len(),
            PAGE_SIZE,
            "ContentModel::refill_class: a page is {PAGE_SIZE} bytes"
        );
        let mut prev = self.page_ctx(class, lba, prev_version);
        prev.change_ratio = prev_change_ratio;
        gen::text::refill(&prev, &self.page_ctx(class, lba, version), page);
    }

    fn page_ctx(&self, class: ContentClass, lba: u64, version: u32) -> PageCtx {
        let class_seed = self.seed ^ class.salt();
        PageCtx {
            key: hash(class_seed, lba),
            region_key: hash(class_seed ^ REGION_SALT, lba / self.region_lbas),
            page_in_region: lba % self.region_lbas,
            version,
            change_ratio: self.change_ratio,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_validation_names_the_field() {
        let bad = ContentConfig {
            region_lbas: 0,
            ..ContentConfig::default()
        };
        let err = ContentModel::from_config(1, &bad).unwrap_err();
        assert_eq!(
            err.to_string(),
            "content model: region_lbas must be at least 1"
        );
        for ratio in [-0.1, 1.5, f64::NAN] {
            let bad = ContentConfig {
                change_ratio: ratio,
                ..ContentConfig::default()
            };
            assert!(matches!(
                ContentModel::from_config(1, &bad),
                Err(ContentError::ChangeRatio(_))
            ));
        }
    }

    #[test]
    #[should_panic(expected = "a page is 4096 bytes")]
    fn wrong_buffer_size_is_a_clear_panic() {
        ContentModel::new(1, ContentMix::default()).fill(0, 0, &mut [0u8; 512]);
    }

    /// Refilling a page from any earlier (or later) version and change ratio gives the
    /// bytes a full fill gives, for every text format, whether few lines or all change.
    #[test]
    fn refill_matches_a_full_fill() {
        let ratios = [0.0, 0.01, 0.1, 0.3, 1.0];
        for seed in [1u64, 77] {
            for (r, &ratio) in ratios.iter().enumerate() {
                let model = ContentModel::new(seed, ContentMix::only(ContentClass::Text))
                    .with_change_ratio(ratio)
                    .unwrap();
                for lba in 0..24u64 {
                    let mut page = [0u8; PAGE_SIZE];
                    let mut prev_version = 0u32;
                    let mut prev_ratio = ratios[(r + lba as usize) % 5];
                    let text = ContentMix::only(ContentClass::Text);
                    let model_prev = ContentModel::new(seed, text)
                        .with_change_ratio(prev_ratio)
                        .unwrap();
                    model_prev.fill_class(ContentClass::Text, lba, 0, &mut page);
                    for version in [1u32, 2, 3, 9, 10, 70, 71, 40, 41, 200, 0, 5] {
                        model.refill_class(
                            ContentClass::Text,
                            lba,
                            prev_version,
                            prev_ratio,
                            version,
                            &mut page,
                        );
                        let mut full = [0u8; PAGE_SIZE];
                        model.fill_class(ContentClass::Text, lba, version, &mut full);
                        assert!(
                            page == full,
                            "seed {seed} ratio {ratio} lba {lba}: {prev_version} -> {version}"
                        );
                        (prev_version, prev_ratio) = (version, ratio);
                    }
                }
            }
        }
    }
}
