//! Byte-level field splitting and number parsing for the line parsers.
//!
//! Parsers work on `&[u8]` slices of a reused line buffer: no allocation happens per line
//! unless a line is bad (the error message is the only `String` built). Numbers are parsed
//! exactly; decimals go through [`Decimal`] rather than `f64`, so `44186.012345678` seconds
//! is exactly 44 186 012 345 678 ns.

/// A bad field, before the caller adds the file name and line number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FieldError {
    pub field: &'static str,
    pub message: String,
}

impl FieldError {
    pub fn new(field: &'static str, message: impl Into<String>) -> Self {
        FieldError {
            field,
            message: message.into(),
        }
    }

    /// `'<text>' <reason>`, the shape of every message about a value.
    pub fn value(field: &'static str, text: &[u8], reason: &str) -> Self {
        FieldError::new(field, format!("{} {reason}", quoted(text)))
    }

    pub fn missing(field: &'static str) -> Self {
        FieldError::new(field, "missing (the line ends before it)")
    }
}

/// Longest value quoted in an error message; longer ones are cut with `...`.
const QUOTE_MAX_CHARS: usize = 40;

/// The value in single quotes, escaped (a binary file's bytes reach no terminal) and cut
/// to a readable length.
pub(crate) fn quoted(text: &[u8]) -> String {
    flashstack_sim::text::quoted(text, QUOTE_MAX_CHARS)
}

/// Whitespace-separated fields (runs of spaces and tabs count as one separator).
pub(crate) struct Words<'a> {
    rest: &'a [u8],
}

impl<'a> Words<'a> {
    pub fn new(line: &'a [u8]) -> Self {
        Words { rest: line }
    }

    /// The next field, or an error naming the missing `field`.
    pub fn field(&mut self, field: &'static str) -> Result<&'a [u8], FieldError> {
        self.next().ok_or_else(|| FieldError::missing(field))
    }

    /// What is left of the line after the fields taken so far.
    pub fn remainder(&self) -> &'a [u8] {
        self.rest
    }
}

impl<'a> Iterator for Words<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let start = self.rest.iter().position(|b| !b.is_ascii_whitespace())?;
        let rest = &self.rest[start..];
        let end = rest
            .iter()
            .position(u8::is_ascii_whitespace)
            .unwrap_or(rest.len());
        self.rest = &rest[end..];
        Some(&rest[..end])
    }
}

/// Comma-separated fields, each trimmed of surrounding whitespace. Quoting is not supported:
/// none of the supported CSV formats quote their fields.
pub(crate) struct CsvFields<'a> {
    rest: Option<&'a [u8]>,
}

impl<'a> CsvFields<'a> {
    pub fn new(line: &'a [u8]) -> Self {
        CsvFields { rest: Some(line) }
    }

    /// The next field, or an error naming the missing `field`.
    pub fn field(&mut self, field: &'static str) -> Result<&'a [u8], FieldError> {
        self.next().ok_or_else(|| FieldError::missing(field))
    }
}

impl<'a> Iterator for CsvFields<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let rest = self.rest?;
        match rest.iter().position(|&b| b == b',') {
            Some(comma) => {
                self.rest = Some(&rest[comma + 1..]);
                Some(rest[..comma].trim_ascii())
            }
            None => {
                self.rest = None;
                Some(rest.trim_ascii())
            }
        }
    }
}

/// Why `text` is not a non-negative number: a leading minus gets its own message, since a
/// negative size or address is a different mistake from a typo.
fn not_a_number(field: &'static str, text: &[u8]) -> FieldError {
    let negative = text.len() > 1 && text[0] == b'-' && matches!(text[1], b'0'..=b'9' | b'.');
    if negative {
        FieldError::value(field, text, "must not be negative")
    } else if text.is_empty() {
        FieldError::new(field, "is empty")
    } else {
        FieldError::value(field, text, "is not a number")
    }
}

/// A non-negative decimal integer (digits only).
#[inline]
pub(crate) fn parse_u64(text: &[u8], field: &'static str) -> Result<u64, FieldError> {
    if text.is_empty() {
        return Err(not_a_number(field, text));
    }
    // Up to 19 digits cannot overflow (u64::MAX has 20): no check per digit.
    if text.len() <= 19 {
        let mut value: u64 = 0;
        let mut bad = false;
        for &byte in text {
            let digit = byte.wrapping_sub(b'0');
            bad |= digit > 9;
            value = value.wrapping_mul(10).wrapping_add(u64::from(digit));
        }
        if bad {
            return Err(not_a_number(field, text));
        }
        return Ok(value);
    }
    parse_u64_long(text, field)
}

/// [`parse_u64`] of 20 digits or more, checked for overflow.
#[cold]
fn parse_u64_long(text: &[u8], field: &'static str) -> Result<u64, FieldError> {
    let mut value: u64 = 0;
    for &byte in text {
        let digit = byte.wrapping_sub(b'0');
        if digit > 9 {
            return Err(not_a_number(field, text));
        }
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(digit)))
            .ok_or_else(|| FieldError::value(field, text, "is too large"))?;
    }
    Ok(value)
}

/// A hexadecimal integer with or without a `0x` prefix (DiskSim writes flags without one).
pub(crate) fn parse_hex(text: &[u8], field: &'static str) -> Result<u64, FieldError> {
    let digits = text
        .strip_prefix(b"0x")
        .or_else(|| text.strip_prefix(b"0X"))
        .unwrap_or(text);
    if digits.is_empty() {
        return Err(FieldError::value(
            field,
            text,
            "is not a hexadecimal number",
        ));
    }
    let mut value: u64 = 0;
    for &byte in digits {
        let digit = match byte {
            b'0'..=b'9' => byte - b'0',
            b'a'..=b'f' => byte - b'a' + 10,
            b'A'..=b'F' => byte - b'A' + 10,
            _ => {
                return Err(FieldError::value(
                    field,
                    text,
                    "is not a hexadecimal number",
                ))
            }
        };
        if value >> 60 != 0 {
            return Err(FieldError::value(field, text, "is too large"));
        }
        value = value << 4 | u64::from(digit);
    }
    Ok(value)
}

/// A non-negative decimal number held exactly: `mantissa × 10^exponent`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Decimal {
    mantissa: u128,
    exponent: i32,
}

/// Mantissas stop growing at this value; later integer digits raise the exponent, later
/// fraction digits are dropped (38 significant digits are far beyond any trace's precision).
const MANTISSA_MAX: u128 = 10u128.pow(37);

/// Exponents beyond this are rejected: no trace value is that large or that small.
const EXPONENT_LIMIT: i32 = 400;

impl Decimal {
    /// Parses `digits[.digits][(e|E)[+-]digits]`; `None` if `text` is anything else
    /// (including `nan`, `inf` and negative numbers).
    pub fn parse(text: &[u8]) -> Option<Decimal> {
        let (number, exponent) = match text.iter().position(|&b| b == b'e' || b == b'E') {
            Some(at) => (&text[..at], parse_exponent(&text[at + 1..])?),
            None => (text, 0),
        };
        let (integer, fraction) = match number.iter().position(|&b| b == b'.') {
            Some(dot) => (&number[..dot], &number[dot + 1..]),
            None => (number, &number[number.len()..]),
        };
        if integer.is_empty() && fraction.is_empty() {
            return None;
        }
        let mut decimal = Decimal {
            mantissa: 0,
            exponent,
        };
        for &byte in integer {
            decimal.push_digit(byte, false)?;
        }
        for &byte in fraction {
            decimal.push_digit(byte, true)?;
        }
        Some(decimal)
    }

    fn push_digit(&mut self, byte: u8, in_fraction: bool) -> Option<()> {
        let digit = byte.wrapping_sub(b'0');
        if digit > 9 {
            return None;
        }
        if self.mantissa < MANTISSA_MAX {
            self.mantissa = self.mantissa * 10 + u128::from(digit);
            if in_fraction {
                self.exponent -= 1;
            }
        } else if !in_fraction {
            self.exponent += 1;
        }
        Some(())
    }

    /// `self × 10^scale`, rounded half up to an integer; `None` if it does not fit a `u64`.
    pub fn scaled(self, scale: i32) -> Option<u64> {
        if self.mantissa == 0 {
            return Some(0);
        }
        let exponent = self.exponent + scale;
        if exponent >= 0 {
            let factor = 10u128.checked_pow(u32::try_from(exponent).ok()?)?;
            return u64::try_from(self.mantissa.checked_mul(factor)?).ok();
        }
        let Some(divisor) = 10u128.checked_pow(exponent.unsigned_abs()) else {
            return Some(0); // smaller than 10^-38: rounds to zero
        };
        let quotient = self.mantissa / divisor;
        let round_up = (self.mantissa % divisor) * 2 >= divisor;
        u64::try_from(quotient + u128::from(round_up)).ok()
    }

    /// The value if it is a whole number that fits a `u64`.
    pub fn exact_integer(self) -> Option<u64> {
        if self.exponent >= 0 || self.mantissa == 0 {
            return self.scaled(0);
        }
        let divisor = 10u128.checked_pow(self.exponent.unsigned_abs())?;
        if !self.mantissa.is_multiple_of(divisor) {
            return None;
        }
        u64::try_from(self.mantissa / divisor).ok()
    }
}

fn parse_exponent(text: &[u8]) -> Option<i32> {
    let (negative, digits) = match text.first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() || digits.len() > 4 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let value = digits
        .iter()
        .fold(0i32, |acc, &b| acc * 10 + i32::from(b - b'0'));
    if value > EXPONENT_LIMIT {
        return None;
    }
    Some(if negative { -value } else { value })
}

/// A non-negative decimal value in some unit, returned as an integer count of a unit
/// `10^-scale` times as large (`scale` 9 turns seconds into nanoseconds), rounded to nearest.
pub(crate) fn parse_scaled(
    text: &[u8],
    scale: i32,
    field: &'static str,
) -> Result<u64, FieldError> {
    let decimal = Decimal::parse(text).ok_or_else(|| not_a_number(field, text))?;
    decimal
        .scaled(scale)
        .ok_or_else(|| FieldError::value(field, text, "is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scaled(text: &str, scale: i32) -> Option<u64> {
        Decimal::parse(text.as_bytes())?.scaled(scale)
    }

    #[test]
    fn integers() {
        assert_eq!(parse_u64(b"0", "f"), Ok(0));
        assert_eq!(parse_u64(b"18446744073709551615", "f"), Ok(u64::MAX));
        // 19 digits take the unchecked path, 20 the checked one.
        assert_eq!(
            parse_u64(b"9999999999999999999", "f"),
            Ok(9_999_999_999_999_999_999)
        );
        assert_eq!(
            parse_u64(b"999999999999999999x", "f").unwrap_err().message,
            "'999999999999999999x' is not a number"
        );
        assert_eq!(
            parse_u64(b"0000000000000000000042", "f"),
            Ok(42),
            "leading zeros are digits like any other"
        );
        let err = parse_u64(b"18446744073709551616", "f").unwrap_err();
        assert_eq!(err.message, "'18446744073709551616' is too large");
        assert_eq!(
            parse_u64(b"abc", "size").unwrap_err().message,
            "'abc' is not a number"
        );
        assert_eq!(
            parse_u64(b"-4", "size").unwrap_err().message,
            "'-4' must not be negative"
        );
        assert_eq!(parse_u64(b"", "size").unwrap_err().message, "is empty");
        assert!(parse_u64(b"+4", "f").is_err());
        assert!(parse_u64(b"4.0", "f").is_err());
    }

    #[test]
    fn hex() {
        assert_eq!(parse_hex(b"1", "f"), Ok(1));
        assert_eq!(parse_hex(b"0x1F", "f"), Ok(31));
        assert_eq!(parse_hex(b"ffffffffffffffff", "f"), Ok(u64::MAX));
        assert!(parse_hex(b"1ffffffffffffffff", "f").is_err());
        assert!(parse_hex(b"0x", "f").is_err());
        assert!(parse_hex(b"g", "f").is_err());
    }

    #[test]
    fn decimals_are_exact() {
        assert_eq!(scaled("44186.012345678", 9), Some(44_186_012_345_678));
        assert_eq!(scaled("1.000000001", 9), Some(1_000_000_001));
        assert_eq!(scaled("0.0005", 3), Some(1)); // half rounds up
        assert_eq!(scaled("0.0004", 3), Some(0));
        assert_eq!(scaled("12", 6), Some(12_000_000));
        assert_eq!(scaled(".5", 1), Some(5));
        assert_eq!(scaled("5.", 1), Some(50));
        assert_eq!(scaled("1.5e3", 0), Some(1500));
        assert_eq!(scaled("1e-3", 9), Some(1_000_000));
        assert_eq!(scaled("18446744073709551615", 0), Some(u64::MAX));
        assert_eq!(scaled("18446744073709551616", 0), None);
        assert_eq!(scaled("1e400", 0), None);
        assert_eq!(scaled("1e-400", 0), Some(0));
        assert_eq!(scaled("0e400", 0), Some(0));
        let long = "1".repeat(60);
        assert_eq!(scaled(&long, -50), Some(1_111_111_111));
        for bad in [
            "", ".", "nan", "inf", "-1", "1.2.3", "1e", "1e+", "e5", "1x", "1e99999",
        ] {
            assert_eq!(Decimal::parse(bad.as_bytes()), None, "{bad}");
        }
    }

    #[test]
    fn exact_integers() {
        let exact = |t: &str| Decimal::parse(t.as_bytes()).and_then(Decimal::exact_integer);
        assert_eq!(exact("1e6"), Some(1_000_000));
        assert_eq!(exact("1000000"), Some(1_000_000));
        assert_eq!(exact("2.50e1"), Some(25));
        assert_eq!(exact("1.5"), None);
        assert_eq!(exact("1e-1"), None);
    }

    #[test]
    fn splitting() {
        let words: Vec<&[u8]> = Words::new(b"  a \t bb  c ").collect();
        assert_eq!(words, [&b"a"[..], b"bb", b"c"]);
        let csv: Vec<&[u8]> = CsvFields::new(b"a, b ,,c").collect();
        assert_eq!(csv, [&b"a"[..], b"b", b"", b"c"]);
        let mut words = Words::new(b"x y [proc name]");
        assert_eq!(words.field("a"), Ok(&b"x"[..]));
        assert_eq!(words.field("b"), Ok(&b"y"[..]));
        assert_eq!(words.remainder(), b" [proc name]");
    }

    #[test]
    fn long_values_are_cut_in_messages() {
        let long = vec![b'x'; 100];
        assert_eq!(quoted(&long), format!("'{}...'", "x".repeat(40)));
    }
}
