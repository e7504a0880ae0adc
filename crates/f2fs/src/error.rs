//! Typed errors. Every corruption names the structure, the copy or pack, the field and the
//! rule it broke, so a failed mount says what is wrong with the image.

use std::path::PathBuf;

use flashstack_block::BlockError;
use thiserror::Error;

/// Why an image or a device cannot be used.
///
/// Each message includes its cause's, and no variant reports a `source()`: a caller that
/// prints the chain (anyhow's `{:#}`) prints every message once.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum F2fsError {
    #[error("block device: {0}")]
    Device(BlockError),
    #[error("image file {}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("image file {} is {len} bytes, not a whole number of 4096-byte blocks", path.display())]
    ImageSize { path: PathBuf, len: u64 },
    #[error("a {bytes}-byte device is too small for F2FS: {reason}")]
    DeviceTooSmall { bytes: u64, reason: String },
    #[error("mkfs option '{name}': {reason}")]
    InvalidOption { name: &'static str, reason: String },
    /// Both copies are bad (boxed: the error type stays small on the success path).
    #[error("no valid superblock: block 0: {first}; block 1: {second}")]
    NoValidSuperblock {
        first: Box<Corruption>,
        second: Box<Corruption>,
    },
    #[error("no valid checkpoint pack: pack 1: {first}; pack 2: {second}")]
    NoValidCheckpoint {
        first: Box<Corruption>,
        second: Box<Corruption>,
    },
    #[error("corrupt image: {0}")]
    Corrupt(Corruption),
}

impl From<BlockError> for F2fsError {
    fn from(e: BlockError) -> Self {
        F2fsError::Device(e)
    }
}

impl From<Corruption> for F2fsError {
    fn from(c: Corruption) -> Self {
        F2fsError::Corrupt(c)
    }
}

/// One broken rule of the on-disk format.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Corruption {
    #[error("superblock copy {copy}: magic {found:#010x}, expected 0xf2f52010")]
    SuperblockMagic { copy: u8, found: u32 },
    #[error("superblock copy {copy}: CRC {stored:#010x} stored, {computed:#010x} computed")]
    SuperblockChecksum {
        copy: u8,
        stored: u32,
        computed: u32,
    },
    #[error("superblock copy {copy}: field '{field}' = {value}: {rule}")]
    SuperblockField {
        copy: u8,
        field: &'static str,
        value: u64,
        rule: String,
    },
    #[error("checkpoint at block {blkaddr}: CRC offset {offset} is outside 192..=4092")]
    CheckpointChecksumOffset { blkaddr: u64, offset: u32 },
    #[error("checkpoint at block {blkaddr}: CRC {stored:#010x} stored, {computed:#010x} computed")]
    CheckpointChecksum {
        blkaddr: u64,
        stored: u32,
        computed: u32,
    },
    #[error(
        "checkpoint pack at block {blkaddr}: header version {header} but footer version {footer}"
    )]
    CheckpointVersionMismatch {
        blkaddr: u64,
        header: u64,
        footer: u64,
    },
    #[error("checkpoint pack at block {blkaddr}: field '{field}' = {value}: {rule}")]
    CheckpointField {
        blkaddr: u64,
        field: &'static str,
        value: u64,
        rule: String,
    },
    #[error("summary block {blkaddr}: {reason}")]
    Summary { blkaddr: u64, reason: String },
    #[error("node {nid}: no NAT entry (NAT journal and NAT block hold nothing for it)")]
    NatEntryMissing { nid: u32 },
    #[error("node {nid} at block {blkaddr}: field '{field}' = {value}: {rule}")]
    Node {
        nid: u32,
        blkaddr: u64,
        field: &'static str,
        value: u64,
        rule: String,
    },
    #[error(
        "inode {ino} at block {blkaddr}: CRC {stored:#010x} stored, {computed:#010x} computed"
    )]
    InodeChecksum {
        ino: u32,
        blkaddr: u64,
        stored: u32,
        computed: u32,
    },
    #[error("SIT entry of segment {segno}: field '{field}' = {value}: {rule}")]
    Sit {
        segno: u32,
        field: &'static str,
        value: u64,
        rule: String,
    },
    #[error("NAT entry of node {nid}: field '{field}' = {value}: {rule}")]
    Nat {
        nid: u32,
        field: &'static str,
        value: u64,
        rule: String,
    },
    #[error("inode {ino} at block {blkaddr}: field '{field}' = {value}: {rule}")]
    Inode {
        ino: u32,
        blkaddr: u64,
        field: &'static str,
        value: u64,
        rule: String,
    },
    #[error("inode {ino}, file block {index}: address {blkaddr}: {rule}")]
    DataAddress {
        ino: u32,
        index: u64,
        blkaddr: u64,
        rule: String,
    },
    #[error("SSA entry of block {blkaddr} (segment {segno}): {rule}")]
    Ssa {
        segno: u32,
        blkaddr: u64,
        rule: String,
    },
    #[error("directory {dir}, entry '{name}' (slot {slot}): {rule}")]
    Dentry {
        dir: u32,
        slot: usize,
        name: String,
        rule: String,
    },
    #[error("current {log} log: segment {segno}: {rule}")]
    CurrentSegment {
        log: &'static str,
        segno: u32,
        rule: String,
    },
    #[error("orphan list: inode {ino}: {rule}")]
    Orphan { ino: u32, rule: String },
    #[error("{what}: the checkpoint records {recorded}, {found} found in the {counted_in}")]
    Count {
        what: &'static str,
        recorded: u64,
        found: u64,
        counted_in: &'static str,
    },
    #[error("segment {segno}: the SIT marks {marked} blocks valid, {referenced} are referenced by the node trees{detail}")]
    Unreferenced {
        segno: u32,
        marked: u32,
        referenced: u32,
        detail: String,
    },
}
