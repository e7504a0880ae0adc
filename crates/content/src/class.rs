//! Content classes and the weighted mix that assigns them to regions of the LBA space.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::{ContentError, MixEntryError};

/// What kind of file a page belongs to. The class fixes the page's structure, its
/// compressibility and how it changes on update; see the crate documentation for the
/// LZ4 ratio each class targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ContentClass {
    /// Never-written or trimmed-then-zeroed space, preallocated file tails.
    #[serde(rename = "zeros")]
    Zeros,
    /// A SQLite table b-tree leaf page (type 0x0D): rows of text, integers and timestamps.
    #[serde(rename = "sqlite")]
    SqliteTable,
    /// A SQLite index b-tree leaf page (type 0x0A): sorted keys with shared prefixes.
    #[serde(rename = "sqlite-index")]
    SqliteIndex,
    /// Line-oriented text: JSON records, shared-preferences XML, logcat lines.
    #[serde(rename = "text")]
    Text,
    /// Machine code and similar binaries (dex/so/oat).
    #[serde(rename = "exec")]
    Executable,
    /// Already-compressed media (JPEG, MP4, image caches): incompressible.
    #[serde(rename = "media")]
    Media,
    /// File-system metadata and journal blocks: inode tables and allocation bitmaps.
    #[serde(rename = "meta")]
    Metadata,
    /// A SQLite table leaf whose rows carry BLOBs (serialized stories, protobuf caches,
    /// thumbnails): a per-file BLOB share spreads pages from medium to minimal
    /// compressibility.
    #[serde(rename = "sqlite-blob")]
    SqliteBlob,
    /// JPEG, PNG and WebP files: their format's headers on a file's first page, then
    /// entropy-coded data, with per-file flat areas (mostly minimal, some low).
    #[serde(rename = "image")]
    Image,
    /// ARM64 ELF shared objects, oat files and dex: sections of code, relocations, symbols,
    /// strings and packed data mixed per file (medium to minimal).
    #[serde(rename = "code")]
    Code,
    /// Logs, JSON and XML caches carrying base64 tokens, digests and UUIDs at a per-file
    /// density (medium to low).
    #[serde(rename = "log")]
    Log,
}

impl ContentClass {
    pub const ALL: [ContentClass; 11] = [
        ContentClass::Zeros,
        ContentClass::SqliteTable,
        ContentClass::SqliteIndex,
        ContentClass::Text,
        ContentClass::Executable,
        ContentClass::Media,
        ContentClass::Metadata,
        ContentClass::SqliteBlob,
        ContentClass::Image,
        ContentClass::Code,
        ContentClass::Log,
    ];

    /// The classes of a continuous compressibility spectrum (`gen::spectrum`), used by the
    /// LDC workloads; the others keep their bytes of before they were added.
    pub const SPECTRUM: [ContentClass; 4] = [
        ContentClass::SqliteBlob,
        ContentClass::Image,
        ContentClass::Code,
        ContentClass::Log,
    ];

    /// The short names accepted by `FromStr`, for error messages.
    pub(crate) const NAMES_LIST: &'static str =
        "zeros, sqlite, sqlite-index, text, exec, media, meta, sqlite-blob, image, code, log";

    pub fn name(self) -> &'static str {
        match self {
            ContentClass::Zeros => "zeros",
            ContentClass::SqliteTable => "sqlite",
            ContentClass::SqliteIndex => "sqlite-index",
            ContentClass::Text => "text",
            ContentClass::Executable => "exec",
            ContentClass::Media => "media",
            ContentClass::Metadata => "meta",
            ContentClass::SqliteBlob => "sqlite-blob",
            ContentClass::Image => "image",
            ContentClass::Code => "code",
            ContentClass::Log => "log",
        }
    }

    /// A per-class constant folded into page keys, so that the same LBA filled as two
    /// different classes draws from unrelated streams.
    pub(crate) fn salt(self) -> u64 {
        (self as u64 + 1).wrapping_mul(0xD6E8_FEB8_6659_FD93)
    }
}

impl fmt::Display for ContentClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ContentClass {
    type Err = ContentError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        ContentClass::ALL
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| ContentError::UnknownClass(s.to_string()))
    }
}

/// Relative weights of the content classes: the share of regions (and so, for uniform
/// traffic, of written pages) that each class receives.
///
/// Written as `class:weight` pairs, e.g. `"sqlite:40,text:10,media:30,exec:10,meta:5,zeros:5"`.
/// Weights are whole numbers; a class may appear at most once; at least one weight must be
/// positive.
///
/// The default, `sqlite:30,sqlite-index:6,meta:8,text:4,zeros:2,exec:10,media:40`, follows the
/// write-traffic study of Ji et al., "Lightweight Data Compression for Mobile Flash Storage"
/// (ACM TECS 16(5s), 2017), Section 4.2 and Fig. 3: across Facebook, Twitter, Messenger,
/// Google Earth and Chrome, about half of the pages written (46% for Facebook, "about one
/// half" for Google Earth and Chrome) were of high or medium compressibility, and that half
/// came from SQLite files (.db, -journal, -wal) and Ext4 journal/metadata blocks. The other
/// half was of low or minimal compressibility: image caches, JPEGs and map tiles (media)
/// and, among "others", executables. So the compressible classes (SQLite table and index
/// pages, metadata, text, zeros) get 50 and media plus executables get 50; SQLite dominates
/// the compressible half because its synchronous commits amplify its traffic (ibid., and
/// Jeong et al.'s "journaling of journal").
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ContentMix {
    weights: Vec<(ContentClass, u32)>,
    total: u64,
}

impl ContentMix {
    pub const DEFAULT_SPEC: &'static str =
        "sqlite:30,sqlite-index:6,meta:8,text:4,zeros:2,exec:10,media:40";

    /// A mix from explicit weights. Fails if a class appears twice or every weight is zero.
    pub fn new(weights: Vec<(ContentClass, u32)>) -> Result<Self, ContentError> {
        if weights.is_empty() {
            return Err(ContentError::EmptyMix);
        }
        for (i, (class, weight)) in weights.iter().enumerate() {
            if weights[..i].iter().any(|(c, _)| c == class) {
                return Err(ContentError::MixEntry {
                    entry: format!("{class}:{weight}"),
                    reason: MixEntryError::Duplicate,
                });
            }
        }
        let total = weights.iter().map(|&(_, w)| u64::from(w)).sum();
        if total == 0 {
            return Err(ContentError::AllZero);
        }
        Ok(ContentMix { weights, total })
    }

    /// A mix of one class only.
    pub fn only(class: ContentClass) -> Self {
        ContentMix {
            weights: vec![(class, 1)],
            total: 1,
        }
    }

    pub fn weights(&self) -> &[(ContentClass, u32)] {
        &self.weights
    }

    /// The fraction of regions that `class` receives, in `0..=1`.
    pub fn share(&self, class: ContentClass) -> f64 {
        let weight = self
            .weights
            .iter()
            .find(|(c, _)| *c == class)
            .map_or(0, |&(_, w)| w);
        weight as f64 / self.total as f64
    }

    /// The class that a uniform 64-bit hash selects: the hash is scaled onto `0..total` and
    /// looked up in the cumulative weights.
    pub(crate) fn pick(&self, hash: u64) -> ContentClass {
        let mut point = ((u128::from(hash) * u128::from(self.total)) >> 64) as u64;
        for &(class, weight) in &self.weights {
            if point < u64::from(weight) {
                return class;
            }
            point -= u64::from(weight);
        }
        // Unreachable while `point < total`; the first class is a harmless answer.
        self.weights[0].0
    }
}

impl Default for ContentMix {
    fn default() -> Self {
        let weights = vec![
            (ContentClass::SqliteTable, 30),
            (ContentClass::SqliteIndex, 6),
            (ContentClass::Metadata, 8),
            (ContentClass::Text, 4),
            (ContentClass::Zeros, 2),
            (ContentClass::Executable, 10),
            (ContentClass::Media, 40),
        ];
        let total = weights.iter().map(|&(_, w)| u64::from(w)).sum();
        ContentMix { weights, total }
    }
}

impl fmt::Display for ContentMix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (class, weight)) in self.weights.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{class}:{weight}")?;
        }
        Ok(())
    }
}

fn parse_entry(entry: &str) -> Result<(ContentClass, u32), ContentError> {
    let fail = |reason| ContentError::MixEntry {
        entry: entry.to_string(),
        reason,
    };
    let (name, weight) = entry
        .split_once(':')
        .ok_or_else(|| fail(MixEntryError::MissingColon))?;
    let class = ContentClass::from_str(name)
        .map_err(|_| fail(MixEntryError::UnknownClass(name.trim().to_string())))?;
    let weight = weight.trim();
    if weight.is_empty() || !weight.bytes().all(|b| b.is_ascii_digit()) {
        return Err(fail(MixEntryError::NotWhole));
    }
    let weight = weight.parse().map_err(|_| fail(MixEntryError::TooLarge))?;
    Ok((class, weight))
}

impl FromStr for ContentMix {
    type Err = ContentError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.trim().is_empty() {
            return Err(ContentError::EmptyMix);
        }
        let weights = s
            .split(',')
            .map(|entry| parse_entry(entry.trim()))
            .collect::<Result<Vec<_>, _>>()?;
        ContentMix::new(weights)
    }
}

impl TryFrom<String> for ContentMix {
    type Error = ContentError;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<ContentMix> for String {
    fn from(mix: ContentMix) -> String {
        mix.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for class in ContentClass::ALL {
            assert_eq!(class.name().parse::<ContentClass>(), Ok(class));
            assert_eq!(class.to_string(), class.name());
        }
        assert!("jpeg".parse::<ContentClass>().is_err());
    }

    #[test]
    fn mix_parses_and_displays() {
        let mix: ContentMix = "sqlite:40, text:10,media:30,exec:10,meta:5,zeros:5"
            .parse()
            .unwrap();
        assert_eq!(
            mix.to_string(),
            "sqlite:40,text:10,media:30,exec:10,meta:5,zeros:5"
        );
        assert!((mix.share(ContentClass::Media) - 0.3).abs() < 1e-12);
        assert_eq!(mix.share(ContentClass::SqliteIndex), 0.0);
    }

    #[test]
    fn default_mix_matches_its_spec_and_sums_to_100() {
        let mix = ContentMix::default();
        assert_eq!(mix.to_string(), ContentMix::DEFAULT_SPEC);
        assert_eq!(mix.total, 100);
        let compressible: u32 = mix
            .weights()
            .iter()
            .filter(|(c, _)| !matches!(c, ContentClass::Media | ContentClass::Executable))
            .map(|&(_, w)| w)
            .sum();
        assert_eq!(
            compressible, 50,
            "LDC Fig. 3: about half the write traffic compresses"
        );
    }

    fn err(spec: &str) -> String {
        spec.parse::<ContentMix>().unwrap_err().to_string()
    }

    #[test]
    fn parse_errors_name_the_bad_entry() {
        assert_eq!(
            err("text:10,sqlite:x"),
            "content mix: 'sqlite:x': weight must be a whole number"
        );
        assert_eq!(
            err("sqlite:-3"),
            "content mix: 'sqlite:-3': weight must be a whole number"
        );
        assert_eq!(
            err("sqlite:1.5"),
            "content mix: 'sqlite:1.5': weight must be a whole number"
        );
        assert_eq!(
            err("sqlite"),
            "content mix: 'sqlite': expected <class>:<weight>"
        );
        assert!(err("jpeg:3").starts_with("content mix: 'jpeg:3': unknown class 'jpeg'"));
        assert_eq!(
            err("text:1,text:2"),
            "content mix: 'text:2': class listed twice"
        );
        assert_eq!(
            err("text:99999999999"),
            "content mix: 'text:99999999999': weight must be at most 4294967295"
        );
        assert_eq!(
            err("text:1,,media:2"),
            "content mix: '': expected <class>:<weight>"
        );
    }

    #[test]
    fn all_zero_and_empty_are_rejected() {
        assert_eq!(
            "sqlite:0,media:0".parse::<ContentMix>(),
            Err(ContentError::AllZero)
        );
        assert_eq!(" ".parse::<ContentMix>(), Err(ContentError::EmptyMix));
        assert!("sqlite:0,media:1".parse::<ContentMix>().is_ok());
    }

    #[test]
    fn pick_covers_every_positive_weight_and_skips_zero_weights() {
        let mix: ContentMix = "text:1,zeros:0,media:1".parse().unwrap();
        assert_eq!(mix.pick(0), ContentClass::Text);
        assert_eq!(mix.pick(u64::MAX), ContentClass::Media);
        assert_eq!(mix.pick(1 << 63), ContentClass::Media);
        assert_eq!(mix.pick((1 << 63) - 1), ContentClass::Text);
    }
}
