//! Payloads: message text from a small vocabulary, names, addresses, JSON and XML.
//!
//! Real app data repeats a limited set of words, names and keys, which is what makes it
//! compressible; the vocabularies here are small for the same reason. Media bytes are not
//! text: they come from `flashstack_content`'s media class (incompressible).

use flashstack_sim::Rng;

const WORDS: [&str; 96] = [
    "the", "to", "and", "a", "of", "is", "in", "for", "you", "it", "on", "that", "with", "be",
    "this", "at", "are", "have", "not", "was", "ok", "will", "can", "we", "see", "just", "now",
    "get", "new", "time", "all", "from", "today", "tomorrow", "meeting", "thanks", "great",
    "sounds", "good", "call", "me", "later", "home", "work", "lunch", "dinner", "photo", "video",
    "link", "check", "out", "love", "it", "haha", "yes", "no", "maybe", "please", "send", "the",
    "file", "when", "where", "what", "how", "why", "soon", "here", "there", "weekend", "plans",
    "party", "game", "news", "update", "release", "project", "team", "review", "deadline",
    "report", "travel", "flight", "hotel", "ticket", "music", "song", "album", "playlist",
    "friend", "city", "family", "birthday", "happy", "coffee", "morning",
];

const FIRST: [&str; 24] = [
    "Alice", "Bob", "Carol", "David", "Emma", "Frank", "Grace", "Henry", "Ivy", "Jack", "Kate",
    "Liam", "Mia", "Noah", "Olivia", "Paul", "Quinn", "Ruby", "Sam", "Tina", "Umar", "Vera", "Wei",
    "Yuki",
];

const LAST: [&str; 16] = [
    "Smith", "Chen", "Garcia", "Kim", "Muller", "Rossi", "Silva", "Tanaka", "Nguyen", "Ivanov",
    "Khan", "Lopez", "Wang", "Brown", "Costa", "Novak",
];

const HOSTS: [&str; 8] = [
    "gmail.com",
    "example.com",
    "mail.example.org",
    "outlook.com",
    "yahoo.com",
    "company.com",
    "university.edu",
    "icloud.com",
];

/// A word of [`WORDS`] in a fixed 16-byte slot with its length, so a sentence copies
/// whole slots (two vector moves) instead of calling `memcpy` for a few bytes.
const SLOT: usize = 16;
static WORD_SLOTS: [([u8; SLOT], usize); WORDS.len()] = {
    let mut out = [([0u8; SLOT], 0usize); WORDS.len()];
    let mut i = 0;
    while i < WORDS.len() {
        let w = WORDS[i].as_bytes();
        assert!(w.len() < SLOT, "a word longer than its slot");
        let mut j = 0;
        while j < w.len() {
            out[i].0[j] = w[j];
            j += 1;
        }
        out[i].1 = w.len();
        i += 1;
    }
    out
};

/// About `len` bytes of words separated by spaces, starting with a capital letter.
pub fn sentence(rng: &mut Rng, len: usize) -> String {
    // Room for the last word's whole slot and its leading space past `len`.
    let mut buf = vec![0u8; len + SLOT + 1];
    let mut pos = 0;
    while pos < len {
        if pos > 0 {
            buf[pos] = b' ';
            pos += 1;
        }
        let (word, n) = &WORD_SLOTS[rng.below(WORDS.len() as u64) as usize];
        buf[pos..pos + SLOT].copy_from_slice(word);
        pos += n;
    }
    buf.truncate(len);
    buf[..len.min(1)].make_ascii_uppercase();
    String::from_utf8(buf).expect("the words are ASCII")
}

/// A person's display name.
pub fn name(rng: &mut Rng) -> String {
    format!(
        "{} {}",
        FIRST[rng.below(FIRST.len() as u64) as usize],
        LAST[rng.below(LAST.len() as u64) as usize]
    )
}

/// An e-mail address for `id`.
pub fn email(rng: &mut Rng, id: u64) -> String {
    let first = FIRST[(id % FIRST.len() as u64) as usize].to_ascii_lowercase();
    format!(
        "{first}.{id}@{}",
        HOSTS[rng.below(HOSTS.len() as u64) as usize]
    )
}

/// A phone number for `id`.
pub fn phone(id: u64) -> String {
    format!("+1555{:07}", id % 10_000_000)
}

/// A URL on one of a few hosts.
pub fn url(rng: &mut Rng, kind: &str, id: u64) -> String {
    let host = ["cdn", "img", "api", "static"][rng.below(4) as usize];
    format!(
        "https://{host}.example.net/{kind}/{id:x}?v={}",
        rng.below(1000)
    )
}

/// A JSON object of about `len` bytes, as apps keep server responses (posts, tweets).
pub fn json(rng: &mut Rng, id: u64, len: usize) -> String {
    let mut s = format!(
        "{{\"id\":{id},\"user\":{{\"name\":\"{}\",\"verified\":{}}},\"text\":\"",
        name(rng),
        rng.chance(0.1)
    );
    let body = len.saturating_sub(s.len() + 48).max(8);
    s.push_str(&sentence(rng, body));
    s.push_str(&format!(
        "\",\"likes\":{},\"shares\":{},\"lang\":\"en\"}}",
        rng.below(5000),
        rng.below(300)
    ));
    s
}

/// A shared-preferences XML document with `entries` entries (Android's format).
pub fn prefs_xml(rng: &mut Rng, entries: usize, version: u64) -> String {
    let mut s = String::from("<?xml version='1.0' encoding='utf-8' standalone='yes' ?>\n<map>\n");
    for i in 0..entries {
        match i % 4 {
            0 => s.push_str(&format!(
                "    <long name=\"last_sync_{i}\" value=\"{}\" />\n",
                1_767_225_600_000u64 + version * 1000 + rng.below(1000)
            )),
            1 => s.push_str(&format!(
                "    <boolean name=\"flag_{i}\" value=\"{}\" />\n",
                rng.chance(0.5)
            )),
            2 => s.push_str(&format!(
                "    <int name=\"counter_{i}\" value=\"{}\" />\n",
                rng.below(100_000)
            )),
            _ => s.push_str(&format!(
                "    <string name=\"token_{i}\">{:016x}{:016x}</string>\n",
                rng.next_u64(),
                rng.next_u64()
            )),
        }
    }
    s.push_str("</map>\n");
    s
}

/// One log line (logcat-like) of about `len` bytes at virtual time `now_ns`.
pub fn log_line(rng: &mut Rng, now_ns: u64, len: usize) -> String {
    let ms = now_ns / 1_000_000;
    let mut s = format!(
        "{:02}:{:02}:{:02}.{:03} {:5} {:5} I {}: ",
        (ms / 3_600_000) % 24,
        (ms / 60_000) % 60,
        (ms / 1000) % 60,
        ms % 1000,
        1000 + rng.below(9000),
        1000 + rng.below(9000),
        ["Sync", "Net", "Db", "Ui", "Push"][rng.below(5) as usize]
    );
    let rest = len.saturating_sub(s.len() + 1).max(4);
    s.push_str(&sentence(rng, rest));
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_have_the_asked_size_and_depend_on_the_seed_only() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        assert_eq!(sentence(&mut a, 100).len(), 100);
        assert_eq!(sentence(&mut b, 100).len(), 100);
        assert_eq!(json(&mut a, 1, 400), json(&mut b, 1, 400));
        let j = json(&mut a, 2, 400);
        assert!((380..=440).contains(&j.len()), "{}", j.len());
        let x = prefs_xml(&mut a, 20, 1);
        assert!(x.starts_with("<?xml") && x.ends_with("</map>\n"));
        assert!(log_line(&mut a, 5_000_000_000, 120).len() >= 100);
    }

    /// The slot-copying `sentence` gives the bytes and draws of the plain word-by-word form.
    #[test]
    fn sentence_matches_the_word_by_word_form() {
        fn reference(rng: &mut Rng, len: usize) -> String {
            let mut s = String::new();
            while s.len() < len {
                if !s.is_empty() {
                    s.push(' ');
                }
                s.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
            }
            s.truncate(len.max(1));
            if let Some(first) = s.get_mut(0..1) {
                first.make_ascii_uppercase();
            }
            s
        }
        for seed in 0..20 {
            let (mut a, mut b) = (Rng::new(seed), Rng::new(seed));
            for len in (0..70).chain([100, 257, 1000, 4096]) {
                assert_eq!(sentence(&mut a, len), reference(&mut b, len), "len {len}");
            }
            assert_eq!(a.next_u64(), b.next_u64());
        }
    }
}
