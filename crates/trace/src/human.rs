//! Numbers as people read them in reports: `12,345`, `5h 2m`, `8.1%`.

/// Formats an integer with thousands separators.
pub(crate) fn count(value: u64) -> String {
    flashstack_sim::units::format_count(value)
}

/// Formats a duration with its two largest units (`2d 5h`, `5h 2m`, `3m 20s`) or, below a
/// minute, one unit with a decimal (`1.5s`, `12.0ms`).
pub(crate) fn duration(ns: u64) -> String {
    const SEC: u64 = 1_000_000_000;
    let secs = ns / SEC;
    if secs >= 86_400 {
        format!("{}d {}h", secs / 86_400, secs % 86_400 / 3600)
    } else if secs >= 3600 {
        format!("{}h {}m", secs / 3600, secs % 3600 / 60)
    } else if secs >= 60 {
        format!("{}m {}s", secs / 60, secs % 60)
    } else if ns >= SEC {
        format!("{:.1}s", ns as f64 / 1e9)
    } else if ns >= 1_000_000 {
        format!("{:.1}ms", ns as f64 / 1e6)
    } else if ns >= 1_000 {
        format!("{:.1}us", ns as f64 / 1e3)
    } else {
        format!("{ns}ns")
    }
}

/// `part` as a percentage of `whole`, 0 when `whole` is 0.
pub(crate) fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// Chooses `singular` or `plural` for `value`.
pub(crate) fn plural(value: u64, singular: &'static str, plural: &'static str) -> &'static str {
    if value == 1 {
        singular
    } else {
        plural
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_get_separators() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1000), "1,000");
        assert_eq!(count(12_345), "12,345");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(count(u64::MAX), "18,446,744,073,709,551,615");
    }

    #[test]
    fn durations_use_two_units() {
        assert_eq!(
            duration(5 * 3600 * 1_000_000_000 + 2 * 60 * 1_000_000_000),
            "5h 2m"
        );
        assert_eq!(duration(200 * 1_000_000_000), "3m 20s");
        assert_eq!(duration((2 * 86_400 + 5 * 3600) * 1_000_000_000), "2d 5h");
        assert_eq!(duration(1_500_000_000), "1.5s");
        assert_eq!(duration(12_000_000), "12.0ms");
        assert_eq!(duration(2_500), "2.5us");
        assert_eq!(duration(7), "7ns");
    }
}
