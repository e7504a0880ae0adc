//! Typed errors. Every corruption names the structure, the copy or pack, the field and the
//! rule it broke, so a failed mount says what is wrong with the image.

use std::path::PathBuf;

use flashstack_block::BlockError;
use thiserror::Error;

/// Why an image or a device cannot be used.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum F2fsError {
    #[error("block device: {0}")]
    Device(#[from] BlockError),
    #[error("image file {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
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
    Corrupt(#[from] Corruption),
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
}
