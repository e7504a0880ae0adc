//! F2FS images as fuzz inputs, and what the targets do with them.
//!
//! An input is a run of records, each a block address (u32, little-endian) and the 4096
//! bytes stored there; every other block of the 64 MiB device is zero (a short last
//! record is zero-padded, an address past the device wraps). `fuzz/examples/f2fs_seeds.rs`
//! writes real images in this form (our mkfs, then files as `flashstack fs put` writes
//! them), so the fuzzer starts from consistent images and mutates their bytes.

#![allow(dead_code)]

use flashstack_block::{BlockDevice, Hints, Payload};
use flashstack_f2fs::{F2fs, F2fsError, FsError, MemDevice, MountOptions, Verify};

pub const DEVICE_BYTES: u64 = 64 << 20;
const BLOCK: usize = 4096;
const RECORD: usize = 4 + BLOCK;

/// The device an input describes.
pub fn decode(data: &[u8]) -> MemDevice {
    let mut dev = MemDevice::new(DEVICE_BYTES);
    let blocks = DEVICE_BYTES / BLOCK as u64;
    for record in data.chunks(RECORD) {
        let mut raw = [0u8; RECORD];
        raw[..record.len()].copy_from_slice(record);
        let lba = u32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]) as u64 % blocks;
        dev.write(0, lba, Payload::Bytes(&raw[4..]), Hints::default())
            .expect("an in-range write to memory");
    }
    dev
}

/// The records of `dev`'s stored blocks that `keep` selects.
pub fn encode(dev: &MemDevice, keep: impl Fn(u64) -> bool) -> Vec<u8> {
    let mut out = Vec::new();
    for lba in dev.stored_lbas().filter(|&l| keep(l)) {
        out.extend_from_slice(&(lba as u32).to_le_bytes());
        out.extend_from_slice(dev.block(lba).expect("stored"));
    }
    out
}

fn full(read_only: bool) -> MountOptions {
    MountOptions {
        verify: Verify::Full,
        read_only,
        ..MountOptions::default()
    }
}

/// `flashstack fs cat`'s mount: read-write verified, else read-only verified.
pub fn open_for_reading(dev: &MemDevice) -> Option<F2fs<MemDevice>> {
    match F2fs::mount_opts(dev.clone(), full(false)) {
        Ok(fs) => Some(fs),
        Err(FsError::Device(F2fsError::Corrupt(_))) => {
            F2fs::mount_opts(dev.clone(), full(true)).ok()
        }
        Err(_) => None,
    }
}

/// `flashstack fs put`'s mount: read-write, verified.
pub fn open_for_writing(dev: MemDevice) -> Option<F2fs<MemDevice>> {
    open_for_writing_checked(dev).ok()
}

/// As [`open_for_writing`], with the refusal.
pub fn open_for_writing_checked(dev: MemDevice) -> Result<F2fs<MemDevice>, FsError> {
    F2fs::mount_opts(dev, full(false))
}

/// Entries listed at most, bytes read per file at most (a corrupt size may be huge).
const ENTRIES_MAX: usize = 300;
const READ_MAX: usize = 256 << 10;

/// `fs ls -R`, `fs stat` and `fs cat` of everything (bounded); errors are fine.
pub fn read_everything(fs: &mut F2fs<MemDevice>) {
    let mut dirs = vec!["/".to_string()];
    let mut seen = 0;
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = fs.readdir(&dir) else {
            continue;
        };
        for e in entries {
            seen += 1;
            if seen > ENTRIES_MAX {
                return;
            }
            let path = format!("{}/{}", dir.trim_end_matches('/'), e.name);
            let _ = fs.stat(&path);
            let _ = fs.listxattr(e.ino);
            match fs.stat_ino(e.ino).map(|s| s.kind) {
                Ok(flashstack_f2fs::FileKind::Dir) => dirs.push(path),
                Ok(flashstack_f2fs::FileKind::Symlink) => {
                    let _ = fs.readlink_ino(e.ino);
                }
                _ => {
                    let _ = fs.read(e.ino, 0, READ_MAX);
                }
            }
        }
    }
}
