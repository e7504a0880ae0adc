//! Quoting untrusted input in messages.

/// `text` in single quotes for an error message: bytes that are not valid UTF-8 become
/// `\xNN`, control characters their escapes (`\t`, `\u{1b}`), and anything longer than
/// `max_chars` is cut with `...`. A message about a binary file given as a text trace thus
/// stays one short printable line, and a terminal never receives raw control bytes from
/// it.
pub fn quoted(text: &[u8], max_chars: usize) -> String {
    let mut out = String::from("'");
    let mut shown = 0;
    for chunk in text.utf8_chunks() {
        for c in chunk.valid().chars() {
            if shown == max_chars {
                out.push_str("...'");
                return out;
            }
            if c.is_control() {
                out.extend(c.escape_default());
            } else {
                out.push(c);
            }
            shown += 1;
        }
        for byte in chunk.invalid() {
            if shown == max_chars {
                out.push_str("...'");
                return out;
            }
            out.push_str(&format!("\\x{byte:02x}"));
            shown += 1;
        }
    }
    out.push('\'');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_escapes_and_cuts() {
        assert_eq!(quoted(b"size", 40), "'size'");
        assert_eq!(quoted("héllo".as_bytes(), 40), "'héllo'");
        assert_eq!(quoted(b"a\tb\x1b[2J", 40), "'a\\tb\\u{1b}[2J'");
        assert_eq!(quoted(b"\xff\xfeok", 40), "'\\xff\\xfeok'");
        assert_eq!(quoted(b"abcdef", 3), "'abc...'");
        let shown = quoted(&[0x9b; 100], 40);
        assert!(shown.is_ascii() && shown.len() < 200, "{shown}");
    }
}
