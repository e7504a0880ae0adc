//! Parsing and printing of sizes and durations as users write them ("16GiB", "4k", "1.5ms").

use thiserror::Error;

pub const KIB: u64 = 1024;
pub const MIB: u64 = 1024 * KIB;
pub const GIB: u64 = 1024 * MIB;
pub const TIB: u64 = 1024 * GIB;

#[derive(Debug, Error, PartialEq)]
pub enum UnitError {
    #[error("'{0}' is not a size (examples: 4096, 4k, 16KiB, 1.5GiB)")]
    BadSize(String),
    #[error("'{0}' is not a duration (examples: 25us, 1.5ms, 2s, 300ns)")]
    BadDuration(String),
}

fn split_number(text: &str) -> Option<(f64, &str)> {
    let text = text.trim();
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(text.len());
    let number: String = text[..end].chars().filter(|&c| c != '_').collect();
    let value: f64 = number.parse().ok()?;
    if !value.is_finite() || value < 0.0 {
        return None;
    }
    Some((value, text[end..].trim()))
}

/// Parses a byte size. Suffixes k/K/KiB/KB are all binary (1024): storage people mean
/// pages and blocks, and a decimal kilobyte never lines up with a 4 KiB page.
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    let bad = || UnitError::BadSize(text.to_string());
    let (value, suffix) = split_number(text).ok_or_else(bad)?;
    let multiplier = match suffix.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => KIB,
        "m" | "mb" | "mib" => MIB,
        "g" | "gb" | "gib" => GIB,
        "t" | "tb" | "tib" => TIB,
        _ => return Err(bad()),
    };
    let bytes = value * multiplier as f64;
    if bytes > u64::MAX as f64 || bytes.fract() != 0.0 {
        return Err(bad());
    }
    Ok(bytes as u64)
}

/// Parses a duration into nanoseconds.
pub fn parse_duration_ns(text: &str) -> Result<u64, UnitError> {
    let bad = || UnitError::BadDuration(text.to_string());
    let (value, suffix) = split_number(text).ok_or_else(bad)?;
    let multiplier = match suffix {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" | "" => 1e9,
        "min" => 60e9,
        "h" => 3600e9,
        _ => return Err(bad()),
    };
    let ns = (value * multiplier).round();
    if ns > u64::MAX as f64 {
        return Err(bad());
    }
    Ok(ns as u64)
}

/// Formats an integer with thousands separators (`1,234,567`).
pub fn format_count(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// Formats bytes with a binary suffix, three significant digits.
pub fn format_bytes(bytes: u64) -> String {
    const NAMES: [(u64, &str); 4] = [(TIB, "TiB"), (GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")];
    for (unit, name) in NAMES {
        if bytes >= unit {
            return format!("{:.2} {}", bytes as f64 / unit as f64, name);
        }
    }
    format!("{bytes} B")
}

/// Formats nanoseconds with the largest unit that keeps the number at least 1.
pub fn format_ns(ns: u64) -> String {
    if ns >= crate::NS_PER_SEC {
        format!("{:.3} s", ns as f64 / 1e9)
    } else if ns >= crate::NS_PER_MS {
        format!("{:.3} ms", ns as f64 / 1e6)
    } else if ns >= crate::NS_PER_US {
        format!("{:.1} us", ns as f64 / 1e3)
    } else {
        format!("{ns} ns")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("16GiB"), Ok(16 * GIB));
        assert_eq!(parse_size("1.5 MiB"), Ok(1536 * KIB));
        assert!(parse_size("12 parsecs").is_err());
        assert!(parse_size("").is_err());
        assert!(parse_size("0.3").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ns("25us"), Ok(25_000));
        assert_eq!(parse_duration_ns("1.5ms"), Ok(1_500_000));
        assert_eq!(parse_duration_ns("2s"), Ok(2_000_000_000));
        assert!(parse_duration_ns("soon").is_err());
    }
}
