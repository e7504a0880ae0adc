//! Atomic writes ([`F2fs::commit_atomic_write`]) cut at every block the commit writes: the
//! remounted file system (roll-forward recovery) holds either every page of the commit or
//! none, and passes fsck.f2fs.
//!
//! The file is larger than the 923 addresses of its inode, so the commit's pages are
//! mapped by the inode and by a direct node, and the fsync chain has two nodes: recovery
//! must not replay the first without the second (the fsync mark is on the last only).

mod common;

use common::*;
use flashstack_block::{BlockDevice, BlockError, Completion, Hints, Payload};
use flashstack_f2fs::{mkfs, F2fs, MemDevice, MkfsOptions, WriteHint};
use flashstack_sim::Nanos;

/// A device that logs every block written while `logging` is on, in order.
#[derive(Clone)]
struct Logged {
    dev: MemDevice,
    logging: bool,
    log: Vec<(u64, Vec<u8>)>,
}

impl BlockDevice for Logged {
    fn capacity_lbas(&self) -> u64 {
        self.dev.capacity_lbas()
    }
    fn write(
        &mut self,
        arrival_ns: Nanos,
        lba: u64,
        payload: Payload<'_>,
        hints: Hints,
    ) -> Result<Completion, BlockError> {
        if let (true, Payload::Bytes(bytes)) = (self.logging, &payload) {
            for (i, block) in bytes.chunks_exact(4096).enumerate() {
                self.log.push((lba + i as u64, block.to_vec()));
            }
        }
        self.dev.write(arrival_ns, lba, payload, hints)
    }
    fn read(
        &mut self,
        arrival_ns: Nanos,
        lba: u64,
        count: u32,
        out: Option<&mut [u8]>,
    ) -> Result<Completion, BlockError> {
        self.dev.read(arrival_ns, lba, count, out)
    }
    fn trim(&mut self, arrival_ns: Nanos, lba: u64, count: u32) -> Result<Completion, BlockError> {
        self.dev.trim(arrival_ns, lba, count)
    }
    fn flush(&mut self, arrival_ns: Nanos) -> Result<Completion, BlockError> {
        self.dev.flush(arrival_ns)
    }
}

const OLD_PAGES: u64 = 1100;

fn page(tag: u8, index: u64) -> [u8; 4096] {
    std::array::from_fn(|i| tag ^ (index as u8).wrapping_mul(7) ^ (i as u8).wrapping_mul(13))
}

fn read_page<D: BlockDevice>(fs: &mut F2fs<D>, ino: u32, index: u64) -> Vec<u8> {
    fs.read(ino, index * 4096, 4096).unwrap()
}

#[test]
fn a_cut_anywhere_in_an_atomic_commit_keeps_all_or_nothing() {
    let mut dev = MemDevice::new(256 << 20);
    mkfs(&mut dev, &MkfsOptions::default()).unwrap();
    let dev = Logged {
        dev,
        logging: false,
        log: Vec::new(),
    };
    let mut fs = F2fs::mount(dev).unwrap();
    let ino = fs.create("/db").unwrap();
    let old: Vec<[u8; 4096]> = (0..OLD_PAGES).map(|i| page(1, i)).collect();
    let refs: Vec<&[u8; 4096]> = old.iter().collect();
    let hint = WriteHint {
        inode_dirty_pages: OLD_PAGES,
        fsync: false,
    };
    fs.write_pages_hinted(ino, 0, &refs, OLD_PAGES * 4096, hint)
        .unwrap();
    fs.fsync(ino).unwrap();
    // A non-atomic fsync after the checkpoint too: recovery has an earlier mark of the
    // same inode to stop at.
    fs.sync().unwrap();
    fs.write_pages_hinted(ino, 3, &[&page(2, 3)], OLD_PAGES * 4096, hint)
        .unwrap();
    fs.fsync(ino).unwrap();
    let mut before = old.clone();
    before[3] = page(2, 3);

    let base = fs.device().dev.clone();
    fs.device_mut().logging = true;
    let touched = [0u64, 1, 500, 1000, 1050, OLD_PAGES, OLD_PAGES + 1];
    let new: Vec<[u8; 4096]> = touched.iter().map(|&i| page(9, i)).collect();
    let pages: Vec<(u64, &[u8; 4096])> = touched.iter().copied().zip(new.iter()).collect();
    let new_size = (OLD_PAGES + 2) * 4096;
    fs.commit_atomic_write(ino, &pages, new_size).unwrap();
    assert_eq!(fs.metrics().atomic_commits, 1);
    let log = std::mem::take(&mut fs.device_mut().log);
    assert!(log.len() >= touched.len() + 2, "{} blocks", log.len());

    let fsck_tool = tool("fsck.f2fs");
    let dir = TempDir::new("atomic");
    for k in 0..=log.len() {
        let mut image = base.clone();
        for (lba, block) in &log[..k] {
            image
                .write(0, *lba, Payload::Bytes(block), Hints::default())
                .unwrap();
        }
        let mut fs = F2fs::mount(image).unwrap();
        let ino = fs.lookup("/db").unwrap();
        let size = fs.stat_ino(ino).unwrap().size_bytes;
        let committed = size == new_size;
        if !committed {
            assert_eq!(size, OLD_PAGES * 4096, "cut after {k} blocks");
        }
        for (j, &index) in touched.iter().enumerate() {
            let expect: Vec<u8> = if committed {
                new[j].to_vec()
            } else if index < OLD_PAGES {
                before[index as usize].to_vec()
            } else {
                Vec::new()
            };
            assert!(
                read_page(&mut fs, ino, index) == expect,
                "cut after {k} of {} blocks: page {index} is neither all old nor all new \
                 (committed: {committed})",
                log.len()
            );
        }
        for index in [2u64, 3, 999, 1099] {
            assert_eq!(
                read_page(&mut fs, ino, index),
                before[index as usize].to_vec()
            );
        }
        if k == log.len() {
            assert!(
                committed,
                "the whole commit on the device must be recovered"
            );
        }
        if let Some(fsck_tool) = &fsck_tool {
            if k == 0 || k == log.len() || k % 3 == 1 {
                let path = dir.file(&format!("cut{k}.img"));
                fs.unmount().unwrap().export(&path).unwrap();
                assert_clean(&fsck(fsck_tool, &path), &format!("cut after {k} blocks"));
            }
        }
    }
}
