//! The directory-entry hash (`f2fs_dentry_hash`, kernel `fs/f2fs/hash.c`): the legacy TEA
//! transform over the name in 16-byte chunks, seeded with the MD4 initial values; "." and
//! ".." hash to 0. The kernel's mask with `F2FS_HASH_COL_BIT` (bit 63) does not touch the
//! 32-bit result.
//!
//! Also the file-temperature rule for new files from the superblock's extension lists
//! (kernel `set_file_temperature`, `fs/f2fs/namei.c`).

const DELTA: u32 = 0x9E37_79B9;

fn tea_transform(buf: &mut [u32; 4], input: &[u32; 4]) {
    let (mut sum, mut b0, mut b1) = (0u32, buf[0], buf[1]);
    let [a, b, c, d] = *input;
    for _ in 0..16 {
        sum = sum.wrapping_add(DELTA);
        b0 = b0.wrapping_add(
            (b1 << 4).wrapping_add(a) ^ b1.wrapping_add(sum) ^ (b1 >> 5).wrapping_add(b),
        );
        b1 = b1.wrapping_add(
            (b0 << 4).wrapping_add(c) ^ b0.wrapping_add(sum) ^ (b0 >> 5).wrapping_add(d),
        );
    }
    buf[0] = buf[0].wrapping_add(b0);
    buf[1] = buf[1].wrapping_add(b1);
}

/// Packs up to 16 bytes of `msg` (whose remaining length is `len`) into four words,
/// padding with a pattern derived from the length (`str2hashbuf`).
fn str_to_hashbuf(msg: &[u8], len: usize) -> [u32; 4] {
    let mut pad = (len as u32) | ((len as u32) << 8);
    pad |= pad << 16;
    let mut out = [pad; 4];
    let take = len.min(16).min(msg.len());
    let mut val = pad;
    let mut word = 0;
    for (i, &byte) in msg[..take].iter().enumerate() {
        if i % 4 == 0 {
            val = pad;
        }
        val = (byte as u32).wrapping_add(val << 8);
        if i % 4 == 3 {
            out[word] = val;
            word += 1;
            val = pad;
        }
    }
    if word < 4 && !take.is_multiple_of(4) {
        out[word] = val;
    }
    out
}

/// `f2fs_dentry_hash` of a name.
pub fn dentry_hash(name: &[u8]) -> u32 {
    if name == b"." || name == b".." {
        return 0;
    }
    let mut buf = [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476];
    let mut rest = name;
    loop {
        let input = str_to_hashbuf(rest, rest.len());
        tea_transform(&mut buf, &input);
        if rest.len() <= 16 {
            break;
        }
        rest = &rest[16..];
    }
    buf[0]
}

/// Whether `name` carries `ext` as an extension: with `anywhere`, after any dot (so "mp"
/// matches "a.mp4" and "a.mp3.tmp", the cold-list rule); otherwise as the exact last
/// extension (the hot-list rule). Case-insensitive, as the kernel compares.
pub fn has_extension(name: &[u8], ext: &str, anywhere: bool) -> bool {
    let ext = ext.as_bytes();
    if ext.is_empty() || name.len() < ext.len() + 2 {
        return false;
    }
    if !anywhere {
        let dot = name.len() - ext.len() - 1;
        return name[dot] == b'.' && name[dot + 1..].eq_ignore_ascii_case(ext);
    }
    (1..name.len() - ext.len())
        .any(|i| name[i] == b'.' && name[i + 1..i + 1 + ext.len()].eq_ignore_ascii_case(ext))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dots_hash_to_zero_and_names_differ() {
        assert_eq!(dentry_hash(b"."), 0);
        assert_eq!(dentry_hash(b".."), 0);
        assert_ne!(dentry_hash(b"a"), dentry_hash(b"b"));
        let long = [b'x'; 40];
        assert_ne!(dentry_hash(&long), dentry_hash(&long[..39]));
    }

    #[test]
    fn extension_rules() {
        assert!(has_extension(b"movie.mp4", "mp", true));
        assert!(has_extension(b"a.JPG", "jp", true));
        assert!(!has_extension(b"mp4", "mp", true));
        assert!(has_extension(b"x.db", "db", false));
        assert!(!has_extension(b"x.dbx", "db", false));
        assert!(!has_extension(b"db", "db", false));
    }
}
