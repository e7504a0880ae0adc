//! The one-line workload spec users type after `--synthetic`, e.g.
//! `zipf:0.99,count=50000,size=4k:70/16k:20/128k:10,iat=exp:200us`.

use std::fmt;
use std::str::FromStr;

use flashstack_sim::units::{parse_duration_ns, parse_size, GIB, KIB, MIB, TIB};
use thiserror::Error;

use crate::fields::Decimal;

/// Where requests land in the footprint.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pattern {
    /// Each kind streams through the footprint from its start, wrapping at the end.
    Sequential,
    /// Every aligned position is equally likely.
    Uniform,
    /// Page `k` in popularity order is hit with probability ∝ `k^-theta`; popular pages are
    /// scattered over the footprint by a fixed keyed permutation.
    Zipf { theta: f64 },
    /// `hot_access_fraction` of the requests go to the first `hot_space_fraction` of the
    /// footprint, the rest to the remainder (both uniformly).
    HotCold {
        hot_space_fraction: f64,
        hot_access_fraction: f64,
    },
}

/// Request sizes and their relative weights. Kept short (at most [`SIZE_ENTRIES_MAX`]):
/// sampling scans the list.
#[derive(Clone, Debug, PartialEq)]
pub struct SizeDistribution {
    entries: Vec<(u64, f64)>,
}

/// Most entries a [`SizeDistribution`] may have.
pub const SIZE_ENTRIES_MAX: usize = 64;

impl SizeDistribution {
    /// Every request is `bytes` long.
    pub fn fixed(bytes: u64) -> Self {
        SizeDistribution {
            entries: vec![(bytes, 1.0)],
        }
    }

    /// `(bytes, weight)` pairs; checked by [`SyntheticSpec::validate`].
    pub fn weighted(entries: Vec<(u64, f64)>) -> Self {
        SizeDistribution { entries }
    }

    pub fn entries(&self) -> &[(u64, f64)] {
        &self.entries
    }

    pub fn max_bytes(&self) -> u64 {
        self.entries
            .iter()
            .map(|&(bytes, _)| bytes)
            .max()
            .unwrap_or(0)
    }

    fn check(&self) -> Result<(), String> {
        if self.entries.is_empty() || self.entries.len() > SIZE_ENTRIES_MAX {
            return Err(format!("must list 1 to {SIZE_ENTRIES_MAX} sizes"));
        }
        if self.entries.iter().any(|&(bytes, _)| bytes == 0) {
            return Err("has a size of 0 bytes".into());
        }
        if self
            .entries
            .iter()
            .any(|&(_, w)| !(w.is_finite() && w > 0.0))
        {
            return Err("has a weight that is not a positive number".into());
        }
        Ok(())
    }
}

/// Time between consecutive arrivals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interarrival {
    Fixed(u64),
    /// Poisson arrivals with this mean gap.
    Exponential {
        mean_ns: u64,
    },
    /// Every request arrives at time 0: the replayer issues each one as soon as it can.
    Back2Back,
}

/// A synthetic workload. Parse one from text with `str::parse` (the grammar is on the
/// `FromStr` impl and in the crate docs) or build it in code and check it with
/// [`SyntheticSpec::validate`].
///
/// `count` counts reads, writes and trims; flushes requested by `flush_every` come on top.
#[derive(Clone, Debug, PartialEq)]
pub struct SyntheticSpec {
    pub pattern: Pattern,
    pub count: u64,
    pub read_fraction: f64,
    pub trim_fraction: f64,
    /// A flush after every N writes.
    pub flush_every: Option<u64>,
    pub sizes: SizeDistribution,
    pub interarrival: Interarrival,
    /// Bytes of the device the workload touches, from offset 0; `None` is the whole device.
    pub footprint_bytes: Option<u64>,
    /// Every offset is a multiple of this (a power of two).
    pub align_bytes: u64,
}

impl Default for SyntheticSpec {
    /// Uniform 4 KiB writes, 100 000 of them, back to back over the whole device: the plain
    /// write-stress workload most experiments start from.
    fn default() -> Self {
        SyntheticSpec {
            pattern: Pattern::Uniform,
            count: 100_000,
            read_fraction: 0.0,
            trim_fraction: 0.0,
            flush_every: None,
            sizes: SizeDistribution::fixed(4096),
            interarrival: Interarrival::Back2Back,
            footprint_bytes: None,
            align_bytes: 4096,
        }
    }
}

/// Why a synthetic spec was refused. Every message starts with `synthetic spec:` and names
/// the key and the value at fault.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum SpecError {
    #[error("synthetic spec: key '{key}': '{value}' {reason}")]
    BadValue {
        key: String,
        value: String,
        reason: String,
    },
    #[error("synthetic spec: unknown key '{key}' (known: {})", KEYS.join(", "))]
    UnknownKey { key: String },
    #[error("synthetic spec: key '{key}' is given twice")]
    DuplicateKey { key: String },
    #[error("synthetic spec: '{token}' is neither a pattern nor key=value")]
    NotKeyValue { token: String },
    #[error(
        "synthetic spec: unknown pattern '{pattern}' \
         (known: seq, uniform, zipf[:theta], hotcold[:hot_space:hot_access])"
    )]
    UnknownPattern { pattern: String },
    #[error("synthetic spec: two patterns given, '{first}' and '{second}'")]
    TwoPatterns { first: String, second: String },
}

impl SpecError {
    pub(crate) fn bad(key: &str, value: impl fmt::Display, reason: impl Into<String>) -> Self {
        SpecError::BadValue {
            key: key.to_string(),
            value: value.to_string(),
            reason: reason.into(),
        }
    }
}

const KEYS: [&str; 8] = [
    "count",
    "read",
    "trim",
    "flush",
    "size",
    "iat",
    "footprint",
    "align",
];

/// Theta beyond this sends nearly every access to one page; it is refused as a likely typo.
const THETA_MAX: f64 = 10.0;

impl FromStr for SyntheticSpec {
    type Err = SpecError;

    /// `PATTERN[,key=value...]` with keys `count` (`1000000`, `1e6`), `read` and `trim`
    /// (fractions), `flush` (writes per flush, 0 for none), `size` (`4k` or
    /// `4k:70/16k:20/128k:10`), `iat` (`1ms`, `fixed:1ms`, `exp:200us`, `b2b`), `footprint`
    /// and `align` (sizes). Patterns: `seq`, `uniform`, `zipf[:theta]` (0.99),
    /// `hotcold[:hot_space:hot_access]` (0.2:0.8). Unset keys keep [`SyntheticSpec::default`].
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let mut spec = SyntheticSpec::default();
        let mut seen: Vec<&str> = Vec::new();
        let mut pattern_token: Option<&str> = None;
        for token in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let Some((key, value)) = token.split_once('=') else {
                if let Some(first) = pattern_token {
                    let (first, second) = (first.to_string(), token.to_string());
                    return Err(SpecError::TwoPatterns { first, second });
                }
                spec.pattern = parse_pattern(token)?;
                pattern_token = Some(token);
                continue;
            };
            let (key, value) = (key.trim(), value.trim());
            if seen.contains(&key) {
                return Err(SpecError::DuplicateKey { key: key.into() });
            }
            apply_key(&mut spec, key, value)?;
            seen.push(key);
        }
        spec.validate()?;
        Ok(spec)
    }
}

fn parse_pattern(token: &str) -> Result<Pattern, SpecError> {
    let (name, args) = token.split_once(':').unwrap_or((token, ""));
    let name = name.trim().to_ascii_lowercase();
    let no_args = |pattern| match args {
        "" => Ok(pattern),
        _ => Err(SpecError::bad(
            &name,
            args,
            "is not expected: this pattern takes no parameter",
        )),
    };
    match name.as_str() {
        "seq" | "sequential" => no_args(Pattern::Sequential),
        "uniform" | "random" | "rand" => no_args(Pattern::Uniform),
        "zipf" => Ok(Pattern::Zipf {
            theta: if args.is_empty() {
                0.99
            } else {
                parse_number("zipf", args)?
            },
        }),
        "hotcold" => parse_hotcold(args),
        _ => Err(SpecError::UnknownPattern {
            pattern: token.to_string(),
        }),
    }
}

fn parse_hotcold(args: &str) -> Result<Pattern, SpecError> {
    if args.is_empty() {
        return Ok(Pattern::HotCold {
            hot_space_fraction: 0.2,
            hot_access_fraction: 0.8,
        });
    }
    let Some((space, access)) = args.split_once(':') else {
        return Err(SpecError::bad(
            "hotcold",
            args,
            "must be HOT_SPACE:HOT_ACCESS, e.g. 0.2:0.8",
        ));
    };
    Ok(Pattern::HotCold {
        hot_space_fraction: parse_number("hotcold", space)?,
        hot_access_fraction: parse_number("hotcold", access)?,
    })
}

fn parse_number(key: &str, text: &str) -> Result<f64, SpecError> {
    match text.trim().parse::<f64>() {
        Ok(value) if value.is_finite() => Ok(value),
        _ => Err(SpecError::bad(key, text, "is not a number")),
    }
}

/// A number from 0 to 1; errors quote the text as typed.
fn parse_fraction(key: &str, text: &str) -> Result<f64, SpecError> {
    let value = parse_number(key, text)?;
    check_fraction(key, value).map_err(|_| SpecError::bad(key, text, "must be between 0 and 1"))?;
    Ok(value)
}

/// A whole number written as digits (with optional `_`) or in scientific notation (`1e6`).
fn parse_count(text: &str) -> Option<u64> {
    let digits: String = text.chars().filter(|&c| c != '_').collect();
    Decimal::parse(digits.as_bytes())?.exact_integer()
}

fn apply_key(spec: &mut SyntheticSpec, key: &str, value: &str) -> Result<(), SpecError> {
    let bad = |reason: &str| SpecError::bad(key, value, reason);
    match key {
        "count" => {
            spec.count = parse_count(value).ok_or_else(|| bad("is not a whole number"))?;
            if spec.count == 0 {
                return Err(bad("must be at least 1"));
            }
        }
        "read" => spec.read_fraction = parse_fraction(key, value)?,
        "trim" => spec.trim_fraction = parse_fraction(key, value)?,
        "flush" => {
            let every = parse_count(value).ok_or_else(|| bad("is not a whole number of writes"))?;
            spec.flush_every = (every > 0).then_some(every);
        }
        "size" => spec.sizes = parse_sizes(value)?,
        "iat" => spec.interarrival = parse_interarrival(value).ok_or_else(|| bad(IAT_HELP))?,
        "footprint" => {
            spec.footprint_bytes = Some(parse_size(value).map_err(|_| bad("is not a size"))?);
        }
        "align" => spec.align_bytes = parse_size(value).map_err(|_| bad("is not a size"))?,
        _ => return Err(SpecError::UnknownKey { key: key.into() }),
    }
    Ok(())
}

const IAT_HELP: &str = "is not an interarrival time (examples: 1ms, fixed:1ms, exp:200us, b2b)";

fn parse_sizes(value: &str) -> Result<SizeDistribution, SpecError> {
    let mut entries = Vec::new();
    for entry in value.split('/') {
        let (size, weight) = entry.split_once(':').unwrap_or((entry, "1"));
        let bytes = parse_size(size).map_err(|_| {
            SpecError::bad(
                "size",
                value,
                format!("has '{}', which is not a size", size.trim()),
            )
        })?;
        let weight = weight.trim().parse::<f64>().map_err(|_| {
            SpecError::bad(
                "size",
                value,
                format!("has weight '{}', not a number", weight.trim()),
            )
        })?;
        entries.push((bytes, weight));
        if entries.len() > SIZE_ENTRIES_MAX {
            break;
        }
    }
    let sizes = SizeDistribution { entries };
    sizes
        .check()
        .map_err(|reason| SpecError::bad("size", value, reason))?;
    Ok(sizes)
}

fn parse_interarrival(value: &str) -> Option<Interarrival> {
    let lower = value.to_ascii_lowercase();
    match lower.split_once(':') {
        None if lower == "b2b" || lower == "back2back" => Some(Interarrival::Back2Back),
        None => parse_duration_ns(&lower).ok().map(Interarrival::Fixed),
        Some(("fixed", gap)) => parse_duration_ns(gap).ok().map(Interarrival::Fixed),
        Some(("exp", mean)) => {
            let mean_ns = parse_duration_ns(mean).ok()?;
            Some(Interarrival::Exponential { mean_ns })
        }
        Some(_) => None,
    }
}

impl SyntheticSpec {
    /// Checks every field and the relations between them, naming the key at fault.
    pub fn validate(&self) -> Result<(), SpecError> {
        if self.count == 0 {
            return Err(SpecError::bad("count", 0, "must be at least 1"));
        }
        check_fraction("read", self.read_fraction)?;
        check_fraction("trim", self.trim_fraction)?;
        if self.read_fraction + self.trim_fraction > 1.0 {
            let reason = format!(
                "makes read + trim exceed 1 (read is {})",
                self.read_fraction
            );
            return Err(SpecError::bad("trim", self.trim_fraction, reason));
        }
        if self.flush_every == Some(0) {
            return Err(SpecError::bad("flush", 0, "must be at least 1 (or unset)"));
        }
        self.check_pattern()?;
        let sizes = self.sizes.to_string();
        self.sizes
            .check()
            .map_err(|reason| SpecError::bad("size", sizes, reason))?;
        if !self.align_bytes.is_power_of_two() {
            return Err(SpecError::bad(
                "align",
                self.align_bytes,
                "must be a power of two",
            ));
        }
        if self.footprint_bytes == Some(0) {
            return Err(SpecError::bad("footprint", 0, "must be above 0"));
        }
        Ok(())
    }

    fn check_pattern(&self) -> Result<(), SpecError> {
        match self.pattern {
            Pattern::Sequential | Pattern::Uniform => Ok(()),
            Pattern::Zipf { theta } if theta > 0.0 && theta <= THETA_MAX => Ok(()),
            Pattern::Zipf { theta } => Err(SpecError::bad(
                "zipf",
                theta,
                format!("must be above 0 and at most {THETA_MAX}"),
            )),
            Pattern::HotCold {
                hot_space_fraction: space,
                hot_access_fraction: access,
            } => {
                if !(space > 0.0 && space < 1.0) {
                    let reason = "hot space fraction must be above 0 and below 1";
                    return Err(SpecError::bad(
                        "hotcold",
                        format!("{space}:{access}"),
                        reason,
                    ));
                }
                let reason = "hot access fraction must be between 0 and 1";
                check_fraction("hotcold", access)
                    .map_err(|_| SpecError::bad("hotcold", format!("{space}:{access}"), reason))
            }
        }
    }
}

fn check_fraction(key: &str, value: f64) -> Result<(), SpecError> {
    if (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(SpecError::bad(key, value, "must be between 0 and 1"))
    }
}

/// A size in the largest binary unit that divides it (`16KiB`, `4GiB`, `1000`).
pub(crate) fn size_text(bytes: u64) -> String {
    const UNITS: [(u64, &str); 4] = [(TIB, "TiB"), (GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")];
    for (unit, name) in UNITS {
        if bytes >= unit && bytes.is_multiple_of(unit) {
            return format!("{}{name}", bytes / unit);
        }
    }
    bytes.to_string()
}

/// A duration in the largest unit that divides it (`200us`, `1s`).
fn duration_text(ns: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")];
    for (unit, name) in UNITS {
        if ns >= unit && ns.is_multiple_of(unit) {
            return format!("{}{name}", ns / unit);
        }
    }
    format!("{ns}ns")
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Pattern::Sequential => f.write_str("seq"),
            Pattern::Uniform => f.write_str("uniform"),
            Pattern::Zipf { theta } => write!(f, "zipf:{theta}"),
            Pattern::HotCold {
                hot_space_fraction,
                hot_access_fraction,
            } => write!(f, "hotcold:{hot_space_fraction}:{hot_access_fraction}"),
        }
    }
}

impl fmt::Display for SizeDistribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, &(bytes, weight)) in self.entries.iter().enumerate() {
            let separator = if index == 0 { "" } else { "/" };
            write!(f, "{separator}{}", size_text(bytes))?;
            if self.entries.len() > 1 {
                write!(f, ":{weight}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Display for Interarrival {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Interarrival::Fixed(gap_ns) => write!(f, "fixed:{}", duration_text(gap_ns)),
            Interarrival::Exponential { mean_ns } => write!(f, "exp:{}", duration_text(mean_ns)),
            Interarrival::Back2Back => f.write_str("b2b"),
        }
    }
}

impl fmt::Display for SyntheticSpec {
    /// The canonical spec string: parsing it gives back an equal spec.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{},count={},read={},trim={}",
            self.pattern, self.count, self.read_fraction, self.trim_fraction
        )?;
        if let Some(every) = self.flush_every {
            write!(f, ",flush={every}")?;
        }
        write!(f, ",size={},iat={}", self.sizes, self.interarrival)?;
        if let Some(footprint) = self.footprint_bytes {
            write!(f, ",footprint={}", size_text(footprint))?;
        }
        write!(f, ",align={}", size_text(self.align_bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_sizes_print_in_round_units() {
        assert_eq!(duration_text(200_000), "200us");
        assert_eq!(duration_text(1_500_000), "1500us");
        assert_eq!(duration_text(7), "7ns");
        assert_eq!(duration_text(0), "0ns");
        assert_eq!(size_text(16 * KIB), "16KiB");
        assert_eq!(size_text(4 * GIB), "4GiB");
        assert_eq!(size_text(1536), "1536");
    }

    #[test]
    fn interarrival_forms() {
        assert_eq!(parse_interarrival("b2b"), Some(Interarrival::Back2Back));
        assert_eq!(
            parse_interarrival("1ms"),
            Some(Interarrival::Fixed(1_000_000))
        );
        assert_eq!(
            parse_interarrival("fixed:5us"),
            Some(Interarrival::Fixed(5_000))
        );
        let exp = Some(Interarrival::Exponential { mean_ns: 200_000 });
        assert_eq!(parse_interarrival("exp:200us"), exp);
        assert_eq!(parse_interarrival("poisson:1ms"), None);
        assert_eq!(parse_interarrival("soon"), None);
    }
}
