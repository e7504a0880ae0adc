//! Extended attributes in the kernel's on-disk format (`fs/f2fs/xattr.h`), kept in the
//! inode's inline xattr area only.
//!
//! The format: one list of entries behind a 24-byte header (`h_magic` = 0xF2F52011,
//! `h_refcount` = 1, 16 reserved bytes). An entry is `e_name_index` (u8), `e_name_len` (u8),
//! `e_value_size` (le16), the name without its namespace prefix, then the value, padded to
//! 4 bytes; the list ends at a zero word. The kernel keeps the list in the inode's inline
//! xattr area (the last `inline_xattr_size` words of `i_addr`, 200 bytes by default; the
//! inode has `F2FS_INLINE_XATTR`) and continues it in a separate xattr node
//! (`i_xattr_nid`, footer offset `XATTR_NODE_OFFSET`) when it outgrows the inline area.
//!
//! Here: set, get, list and remove in the inline area. A change that does not fit in it
//! fails with `NoSpace` (ENOSPC): no xattr node is ever made. An inode that already has an
//! xattr node (made by the kernel or by f2fs-tools) is read through both parts; changing
//! its attributes is refused (`Unsupported`). Namespaces: `user.` (index 1), `trusted.`
//! (4), `security.` (6), stored as given (no permission or SELinux semantics here); other
//! names are refused, entries of other indexes are kept but not listed, except
//! flashstack's private index ([`PRIVATE_INDEX`]), which the calls drop.
//!
//! Like the kernel, new entries are appended and a replaced one moves to the end; ctime
//! changes. The inode is dirty: the change is durable at the next checkpoint, or at the
//! file's fsync (roll-forward copies the inline xattr area, as `recover_inline_xattr`).

use flashstack_block::BlockDevice;

use super::data::OFF_XATTR_NID;
use super::{corrupt, F2fs, FsError};
use crate::codec::{le32_at, Block};
use crate::consts::*;

/// `F2FS_XATTR_MAGIC`.
pub const XATTR_MAGIC: u32 = 0xF2F5_2011;
/// `struct f2fs_xattr_header`: magic, refcount, 4 reserved words.
const HEADER_BYTES: usize = 24;
/// `struct f2fs_xattr_entry` before the name.
const ENTRY_HEADER_BYTES: usize = 4;
/// Bytes of an xattr node holding the list (`VALID_XATTR_BLOCK_SIZE`: all but the footer).
const XATTR_BLOCK_BYTES: usize = BLOCK_SIZE - 24;
/// Longest name suffix (`F2FS_NAME_LEN`; `e_name_len` is a byte).
const NAME_MAX: usize = 255;

/// The namespaces handled: prefix and `e_name_index`.
const NAMESPACES: [(&[u8], u8); 3] = [(b"user.", 1), (b"trusted.", 4), (b"security.", 6)];

/// What `setxattr` may do (`XATTR_CREATE`, `XATTR_REPLACE` or neither).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XattrMode {
    /// Create or replace.
    Set,
    /// Fail with `Exists` if the attribute exists.
    Create,
    /// Fail with `NoAttr` if it does not.
    Replace,
}

/// One entry: name index, name suffix, value.
type Entry = (u8, Vec<u8>, Vec<u8>);

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// `user.name` → (1, `name`).
fn split_name(name: &[u8]) -> Result<(u8, &[u8]), FsError> {
    let shown = || String::from_utf8_lossy(name).into_owned();
    let (index, suffix) = NAMESPACES
        .iter()
        .find_map(|(prefix, index)| name.strip_prefix(*prefix).map(|s| (*index, s)))
        .ok_or_else(|| FsError::Unsupported(format!("xattr namespace of '{}'", shown())))?;
    if suffix.is_empty() {
        return Err(FsError::Invalid(format!("xattr name '{}'", shown())));
    }
    if suffix.len() > NAME_MAX {
        return Err(FsError::NameTooLong(shown()));
    }
    Ok((index, suffix))
}

fn full_name(index: u8, suffix: &[u8]) -> Option<Vec<u8>> {
    let (prefix, _) = NAMESPACES.iter().find(|(_, i)| *i == index)?;
    Some([*prefix, suffix].concat())
}

/// The entries of a list (an all-zero area is an empty list).
fn parse(ino: u32, buf: &[u8]) -> Result<Vec<Entry>, FsError> {
    if buf.len() < HEADER_BYTES || le32_at(buf, 0) == 0 {
        return Ok(Vec::new());
    }
    if le32_at(buf, 0) != XATTR_MAGIC {
        return Err(corrupt(format!(
            "inode {ino}: xattr magic {:#x}",
            le32_at(buf, 0)
        )));
    }
    let mut entries = Vec::new();
    let mut pos = HEADER_BYTES;
    while pos + ENTRY_HEADER_BYTES <= buf.len() && le32_at(buf, pos) != 0 {
        let (index, name_len) = (buf[pos], buf[pos + 1] as usize);
        let value_len = u16::from_le_bytes([buf[pos + 2], buf[pos + 3]]) as usize;
        let name_at = pos + ENTRY_HEADER_BYTES;
        let end = name_at + name_len + value_len;
        if end > buf.len() {
            return Err(corrupt(format!(
                "inode {ino}: xattr entry at {pos} overruns"
            )));
        }
        entries.push((
            index,
            buf[name_at..name_at + name_len].to_vec(),
            buf[name_at + name_len..end].to_vec(),
        ));
        pos += align4(ENTRY_HEADER_BYTES + name_len + value_len);
    }
    Ok(entries)
}

/// `e_name_index` of flashstack's private entries (no kernel namespace uses it): MedFS's
/// DCM addresses carried by an fsync'd inode (`delta/carry.rs`). They are never listed,
/// read or kept by the calls below, and a node write drops them unless it carries one.
/// An inode whose list continues in an xattr node has none: the three functions below
/// leave it alone.
pub(crate) const PRIVATE_INDEX: u8 = 0x6d;

/// The inline xattr area of an inode block, read from its bytes: byte offset and length
/// (0 when the inode has none). As [`crate::node::Inode::inline_xattr_words`].
pub(crate) fn area_of(block: &Block, flexible: bool) -> (usize, usize) {
    let inline = block[super::data::OFF_INLINE];
    let words = if inline & F2FS_INLINE_XATTR == 0 {
        0
    } else if flexible {
        match inline & F2FS_EXTRA_ATTR != 0 {
            true => {
                u16::from_le_bytes([block[INODE_ADDR_OFFSET + 2], block[INODE_ADDR_OFFSET + 3]])
                    as usize
            }
            false => 0,
        }
    } else {
        DEFAULT_INLINE_XATTR_ADDRS as usize
    };
    let words = words.min(ADDRS_PER_INODE);
    (INODE_ADDR_OFFSET + 4 * (ADDRS_PER_INODE - words), 4 * words)
}

/// The value of the private entry `name` in an inode block's inline area, if it has one.
pub(crate) fn private_value(
    ino: u32,
    block: &Block,
    flexible: bool,
    name: &[u8],
) -> Result<Option<Vec<u8>>, FsError> {
    if le32_at(&block[..], OFF_XATTR_NID) != 0 {
        return Ok(None);
    }
    let (start, len) = area_of(block, flexible);
    Ok(parse(ino, &block[start..start + len])?
        .into_iter()
        .find(|(i, n, _)| *i == PRIVATE_INDEX && n == name)
        .map(|(_, _, v)| v))
}

/// Drops every private entry from an inode block's inline area (a no-op, reading one
/// word, for an inode without xattrs). A list that does not parse is left as it is.
pub(crate) fn strip_private(ino: u32, block: &mut Block, flexible: bool) {
    let (start, len) = area_of(block, flexible);
    if len < HEADER_BYTES
        || le32_at(&block[..], start) == 0
        || le32_at(&block[..], OFF_XATTR_NID) != 0
    {
        return;
    }
    let Ok(mut entries) = parse(ino, &block[start..start + len]) else {
        return;
    };
    let before = entries.len();
    entries.retain(|(i, _, _)| *i != PRIVATE_INDEX);
    if entries.len() == before {
        return;
    }
    // Fewer entries than a list that fitted: they fit.
    let bytes = match entries.is_empty() {
        true => Vec::new(),
        false => encode(&entries, len).expect("a shorter list fits"),
    };
    store_list(block, start, len, &bytes);
}

/// Adds the private entry `name` = `value` to an inode block's inline area (replacing
/// one of that name); false, and the block unchanged, when it does not fit.
pub(crate) fn carry_private(
    ino: u32,
    block: &mut Block,
    flexible: bool,
    name: &[u8],
    value: &[u8],
) -> Result<bool, FsError> {
    let (start, len) = area_of(block, flexible);
    if len == 0 || value.len() > u16::MAX as usize || le32_at(&block[..], OFF_XATTR_NID) != 0 {
        return Ok(false);
    }
    let mut entries = parse(ino, &block[start..start + len])?;
    entries.retain(|(i, n, _)| !(*i == PRIVATE_INDEX && n == name));
    entries.push((PRIVATE_INDEX, name.to_vec(), value.to_vec()));
    let Some(bytes) = encode(&entries, len) else {
        return Ok(false);
    };
    store_list(block, start, len, &bytes);
    Ok(true)
}

/// Writes an encoded list over the area (`bytes` empty: all zeros, as an inode that
/// never had xattrs).
fn store_list(block: &mut Block, start: usize, len: usize, bytes: &[u8]) {
    block[start..start + len].fill(0);
    block[start..start + bytes.len()].copy_from_slice(bytes);
}

/// The list as bytes (header, entries, the terminating zero word), if it fits `room`.
fn encode(entries: &[Entry], room: usize) -> Option<Vec<u8>> {
    let mut out = vec![0u8; HEADER_BYTES];
    out[0..4].copy_from_slice(&XATTR_MAGIC.to_le_bytes());
    out[4..8].copy_from_slice(&1u32.to_le_bytes());
    for (index, name, value) in entries {
        let start = out.len();
        out.push(*index);
        out.push(name.len() as u8);
        out.extend_from_slice(&(value.len() as u16).to_le_bytes());
        out.extend_from_slice(name);
        out.extend_from_slice(value);
        out.resize(
            start + align4(ENTRY_HEADER_BYTES + name.len() + value.len()),
            0,
        );
    }
    out.extend_from_slice(&[0u8; 4]);
    (out.len() <= room).then_some(out)
}

impl<D: BlockDevice> F2fs<D> {
    /// The inline xattr area of `ino`: byte offset in the inode block and length (0 when
    /// the inode has none).
    fn inline_xattr_area(&mut self, ino: u32) -> Result<(usize, usize), FsError> {
        let flexible = self.sb.feature.contains(FEATURE_FLEXIBLE_INLINE_XATTR);
        Ok(area_of(self.node(ino)?, flexible))
    }

    /// Every entry of `ino` (inline area, then its xattr node if it has one) and whether
    /// it has a node.
    fn xattr_entries(&mut self, ino: u32) -> Result<(Vec<Entry>, bool), FsError> {
        let (start, len) = self.inline_xattr_area(ino)?;
        let mut buf = self.node(ino)?[start..start + len].to_vec();
        let xnid = le32_at(&self.node(ino)?[..], OFF_XATTR_NID);
        if xnid != 0 {
            let block = self.node(xnid)?;
            buf.extend_from_slice(&block[..XATTR_BLOCK_BYTES]);
        }
        let mut entries = parse(ino, &buf)?;
        // Not the user's: dropped by the next node write anyway.
        entries.retain(|(i, _, _)| *i != PRIVATE_INDEX);
        Ok((entries, xnid != 0))
    }

    /// Sets attribute `name` (with its namespace prefix) of `ino` to `value`.
    pub fn setxattr(
        &mut self,
        ino: u32,
        name: &[u8],
        value: &[u8],
        mode: XattrMode,
    ) -> Result<(), FsError> {
        let (index, suffix) = split_name(name)?;
        self.timed("setxattr", |fs| {
            fs.writable("setxattr")?;
            let (mut entries, _) = fs.xattr_entries(ino)?;
            let found = entries
                .iter()
                .position(|(i, n, _)| *i == index && n == suffix);
            match (found, mode) {
                (Some(_), XattrMode::Create) => {
                    return Err(FsError::Exists(String::from_utf8_lossy(name).into()))
                }
                (None, XattrMode::Replace) => {
                    return Err(FsError::NoAttr(String::from_utf8_lossy(name).into()))
                }
                _ => {}
            }
            if value.len() > u16::MAX as usize {
                return Err(FsError::NoSpace);
            }
            if let Some(k) = found {
                entries.remove(k);
            }
            entries.push((index, suffix.to_vec(), value.to_vec()));
            fs.store_xattrs(ino, &entries)
        })
    }

    /// The value of attribute `name` of `ino` (`NoAttr` if it has none).
    pub fn getxattr(&mut self, ino: u32, name: &[u8]) -> Result<Vec<u8>, FsError> {
        let (index, suffix) = split_name(name)?;
        let (entries, _) = self.xattr_entries(ino)?;
        entries
            .into_iter()
            .find(|(i, n, _)| *i == index && n == suffix)
            .map(|(_, _, v)| v)
            .ok_or_else(|| FsError::NoAttr(String::from_utf8_lossy(name).into()))
    }

    /// The names of `ino`'s attributes, prefixes included, in list order.
    pub fn listxattr(&mut self, ino: u32) -> Result<Vec<Vec<u8>>, FsError> {
        let (entries, _) = self.xattr_entries(ino)?;
        Ok(entries
            .iter()
            .filter_map(|(i, n, _)| full_name(*i, n))
            .collect())
    }

    /// Removes attribute `name` of `ino` (`NoAttr` if it has none).
    pub fn removexattr(&mut self, ino: u32, name: &[u8]) -> Result<(), FsError> {
        let (index, suffix) = split_name(name)?;
        self.timed("removexattr", |fs| {
            fs.writable("removexattr")?;
            let (mut entries, _) = fs.xattr_entries(ino)?;
            let k = entries
                .iter()
                .position(|(i, n, _)| *i == index && n == suffix)
                .ok_or_else(|| FsError::NoAttr(String::from_utf8_lossy(name).into()))?;
            entries.remove(k);
            fs.store_xattrs(ino, &entries)
        })
    }

    /// Writes the list into the inline area (ENOSPC if it does not fit; refused for an
    /// inode with an xattr node) and updates ctime.
    fn store_xattrs(&mut self, ino: u32, entries: &[Entry]) -> Result<(), FsError> {
        if le32_at(&self.node(ino)?[..], OFF_XATTR_NID) != 0 {
            return Err(FsError::Unsupported(format!(
                "inode {ino}: changing xattrs kept in an xattr node"
            )));
        }
        let (start, len) = self.inline_xattr_area(ino)?;
        let bytes = encode(entries, len).ok_or(FsError::NoSpace)?;
        let node = self.node(ino)?;
        node[start..start + len].fill(0);
        node[start..start + bytes.len()].copy_from_slice(&bytes);
        self.stamp(ino, super::attr::Times::CHANGED, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_round_trips_and_ends_at_a_zero_word() {
        let entries: Vec<Entry> = vec![
            (1, b"a".to_vec(), b"xyz".to_vec()),
            (
                6,
                b"selinux".to_vec(),
                b"u:object_r:app_data_file:s0\0".to_vec(),
            ),
        ];
        let bytes = encode(&entries, 200).unwrap();
        assert_eq!(le32_at(&bytes, 0), XATTR_MAGIC);
        assert_eq!(le32_at(&bytes, 4), 1);
        // 24 + align4(4+1+3)=8 + align4(4+7+28)=40 + 4.
        assert_eq!(bytes.len(), 24 + 8 + 40 + 4);
        assert_eq!(&bytes[24..28], &[1, 1, 3, 0]);
        assert_eq!(parse(1, &bytes).unwrap(), entries);
        assert!(encode(&entries, 75).is_none());
        assert_eq!(parse(1, &[0u8; 200]).unwrap(), Vec::<Entry>::new());
        assert_eq!(split_name(b"user.x").unwrap(), (1, &b"x"[..]));
        assert!(matches!(
            split_name(b"system.x"),
            Err(FsError::Unsupported(_))
        ));
        assert!(matches!(split_name(b"user."), Err(FsError::Invalid(_))));
        assert_eq!(full_name(4, b"t").unwrap(), b"trusted.t");
    }
}
