//! Superblock feature bits and their mkfs.f2fs `-O` names.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::consts::*;

/// The `feature` word of the superblock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Features(pub u32);

/// `-O` names as f2fs-tools 1.15 spells them (`feature_table` in `include/f2fs_fs.h`), plus
/// the bits only the kernel sets.
const NAMES: [(&str, u32); 15] = [
    ("encrypt", FEATURE_ENCRYPT),
    ("blkzoned", FEATURE_BLKZONED),
    ("atomic_write", FEATURE_ATOMIC_WRITE),
    ("extra_attr", FEATURE_EXTRA_ATTR),
    ("project_quota", FEATURE_PRJQUOTA),
    ("inode_checksum", FEATURE_INODE_CHKSUM),
    ("flexible_inline_xattr", FEATURE_FLEXIBLE_INLINE_XATTR),
    ("quota", FEATURE_QUOTA_INO),
    ("inode_crtime", FEATURE_INODE_CRTIME),
    ("lost_found", FEATURE_LOST_FOUND),
    ("verity", FEATURE_VERITY),
    ("sb_checksum", FEATURE_SB_CHKSUM),
    ("casefold", FEATURE_CASEFOLD),
    ("compression", FEATURE_COMPRESSION),
    ("ro", FEATURE_RO),
];

/// Features that live in extra inode attributes: mkfs.f2fs refuses them without
/// `extra_attr` (`mkfs/f2fs_format_main.c`, option checks).
pub const NEEDS_EXTRA_ATTR: u32 = FEATURE_PRJQUOTA
    | FEATURE_INODE_CHKSUM
    | FEATURE_FLEXIBLE_INLINE_XATTR
    | FEATURE_INODE_CRTIME
    | FEATURE_COMPRESSION;

impl Features {
    pub const NONE: Features = Features(0);

    pub fn contains(self, bits: u32) -> bool {
        self.0 & bits == bits
    }

    pub fn with(self, bits: u32) -> Features {
        Features(self.0 | bits)
    }

    /// Parses a comma-separated `-O` list such as `extra_attr,inode_checksum`.
    pub fn parse(list: &str) -> Result<Features, String> {
        list.split(',')
            .map(str::trim)
            .filter(|name| !name.is_empty())
            .try_fold(Features::NONE, |acc, name| {
                Self::bit_of(name)
                    .map(|bit| acc.with(bit))
                    .ok_or_else(|| format!("unknown feature '{name}'"))
            })
    }

    fn bit_of(name: &str) -> Option<u32> {
        NAMES.iter().find(|(n, _)| *n == name).map(|(_, bit)| *bit)
    }

    /// Names of the set bits, in bit order; unknown bits as hex.
    pub fn names(self) -> Vec<String> {
        let mut out: Vec<String> = NAMES
            .iter()
            .filter(|(_, bit)| self.contains(*bit))
            .map(|(name, _)| name.to_string())
            .collect();
        let known = NAMES.iter().fold(0, |acc, (_, bit)| acc | bit);
        if self.0 & !known != 0 {
            out.push(format!("{:#x}", self.0 & !known));
        }
        out
    }
}

impl fmt::Display for Features {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.names().join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_android_like_list() {
        let f = Features::parse("extra_attr,inode_checksum,sb_checksum,compression").unwrap();
        assert_eq!(f.0, 0x2828, "the bits fsck.f2fs prints for this list");
        assert_eq!(
            f.to_string(),
            "extra_attr,inode_checksum,sb_checksum,compression"
        );
        assert!(Features::parse("nonsense").is_err());
        assert_eq!(Features::parse("").unwrap(), Features::NONE);
    }
}
