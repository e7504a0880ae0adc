//! Roll-forward recovery of new files fsync'd one after another with no checkpoint in
//! between, their data in the hot data log (a writeback of at most 16 dirty pages) or the
//! warm one: every file comes back byte-exact with its name, and the recovered image
//! passes fsck.f2fs.
//!
//! Regression: recovery used to add the new files' dentries while it replayed the chain,
//! and a dentry block is directory data, written at once to the hot data log at its
//! checkpointed position: right on top of the fsync'd hot data not replayed yet. The mount
//! failed ("replay: inode 4 block 0 at ...") or, when the last dentry block did not land
//! on a data block, silently returned a file holding dentry bytes.

mod common;

use std::collections::BTreeMap;

use common::*;
use flashstack_block::BlockDevice;
use flashstack_f2fs::{mkfs, F2fs, MemDevice, MkfsOptions, WriteHint};
use flashstack_ftl::{presets, Ftl};

const HOT_DATA: usize = 0;
const WARM_DATA: usize = 1;
const PAGES: u64 = 3;

/// Path → content every fsync'd file must have after a power cut.
type Expect = BTreeMap<String, Vec<u8>>;

fn page(round: usize, file: usize, index: u64) -> [u8; 4096] {
    let seed = (round * 64 + file * 8) as u8 ^ index as u8;
    std::array::from_fn(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 8) as u8)
}

fn hint(hot: bool) -> WriteHint {
    WriteHint {
        // The kernel's rule: at most 16 dirty pages at writeback make the file hot.
        inode_dirty_pages: if hot { PAGES } else { 100 },
        fsync: true,
    }
}

/// Creates `files` new files in the root, writes `PAGES` pages to each as one fsync
/// writeback and fsyncs it, with no checkpoint in between; then, when `grow` names
/// files recovered earlier, appends one page to each of them and fsyncs it too.
fn fsync_round<D: BlockDevice>(
    fs: &mut F2fs<D>,
    round: usize,
    files: usize,
    hot: bool,
    grow: &[String],
    expect: &mut Expect,
) {
    let cps = fs.metrics().checkpoints;
    let log = if hot { HOT_DATA } else { WARM_DATA };
    let log_blocks = fs.metrics().per_log_blocks[log];
    for i in 0..files {
        let path = format!("/r{round}f{i}");
        let ino = fs.create(&path).unwrap();
        let pages: Vec<[u8; 4096]> = (0..PAGES).map(|k| page(round, i, k)).collect();
        let refs: Vec<&[u8; 4096]> = pages.iter().collect();
        fs.write_pages_hinted(ino, 0, &refs, PAGES * 4096, hint(hot))
            .unwrap();
        fs.fsync(ino).unwrap();
        expect.insert(path, pages.concat());
    }
    for (j, path) in grow.iter().enumerate() {
        let ino = fs.lookup(path).unwrap();
        let content = expect.get_mut(path).unwrap();
        let index = content.len() as u64 / 4096;
        let p = page(round, 100 + j, index);
        let size = (index + 1) * 4096;
        // One dirty page: hot, and out of place (the page has no block yet).
        let one = WriteHint {
            inode_dirty_pages: 1,
            fsync: true,
        };
        fs.write_pages_hinted(ino, index, &[&p], size, one).unwrap();
        fs.fsync(ino).unwrap();
        content.extend_from_slice(&p);
    }
    assert_eq!(
        fs.metrics().checkpoints,
        cps,
        "every fsync took the roll-forward path"
    );
    assert!(
        fs.metrics().per_log_blocks[log] >= log_blocks + files as u64 * PAGES,
        "the data went to the {} data log",
        if hot { "hot" } else { "warm" }
    );
}

/// Every file is found by name and reads back byte-exact.
fn check_files<D: BlockDevice>(fs: &mut F2fs<D>, expect: &Expect, what: &str) {
    for (path, content) in expect {
        let ino = fs
            .lookup(path)
            .unwrap_or_else(|e| panic!("{what}: {path} lost its name: {e}"));
        assert_eq!(
            fs.stat_ino(ino).unwrap().size_bytes,
            content.len() as u64,
            "{what}: size of {path}"
        );
        let got = fs.read(ino, 0, content.len() + 4096).unwrap();
        assert!(got == *content, "{what}: content of {path}");
    }
}

/// Two rounds on a RAM disk (a power cut keeps exactly what was written): new files
/// fsync'd, cut, recovered; then more new files and appends to recovered ones (now in the
/// fresh segments recovery moved the logs to), cut, recovered again. fsck.f2fs on the
/// crash images and on the recovered ones.
#[test]
fn new_files_fsynced_in_a_row_survive_power_cuts() {
    for hot in [true, false] {
        for files in 1..=6 {
            let what = format!("{}-{files}", if hot { "hot" } else { "warm" });
            let mut dev = MemDevice::new(128 * MIB);
            mkfs(&mut dev, &MkfsOptions::default()).unwrap();
            let mut fs = F2fs::mount(dev).unwrap();
            let mut expect = Expect::new();
            fsync_round(&mut fs, 0, files, hot, &[], &mut expect);
            let crash = fs.device().clone();
            drop(fs);
            check_image(&crash, &format!("{what}-crash-1"));
            let mut fs =
                F2fs::mount(crash).unwrap_or_else(|e| panic!("{what}: first recovery failed: {e}"));
            assert_eq!(fs.recovered_inodes(), files, "{what}");
            check_files(&mut fs, &expect, &format!("{what}, first recovery"));
            check_image(fs.device(), &format!("{what}-recovered-1"));

            let grow: Vec<String> = expect.keys().take(2).cloned().collect();
            fsync_round(&mut fs, 1, files, hot, &grow, &mut expect);
            let crash = fs.device().clone();
            drop(fs);
            check_image(&crash, &format!("{what}-crash-2"));
            let mut fs = F2fs::mount(crash)
                .unwrap_or_else(|e| panic!("{what}: second recovery failed: {e}"));
            assert_eq!(fs.recovered_inodes(), files + grow.len(), "{what}");
            check_files(&mut fs, &expect, &format!("{what}, second recovery"));
            check_image(fs.device(), &format!("{what}-recovered-2"));
            let dev = fs.unmount().unwrap();
            check_image(&dev, &format!("{what}-unmounted"));
            let mut fs = F2fs::mount(dev).unwrap();
            assert_eq!(fs.recovered_inodes(), 0);
            check_files(&mut fs, &expect, &format!("{what}, after unmount"));
        }
    }
}

fn small_ftl(blocks_per_plane: u32) -> Ftl {
    let mut device = presets::ldc_emmc();
    device.nand.geometry.blocks_per_plane = blocks_per_plane;
    Ftl::new(device, true, 7).expect("valid device")
}

/// Cuts the NAND's power under the file system, power-cycles the FTL (OOB scan) and
/// mounts again with roll-forward recovery.
fn cut_and_remount(fs: F2fs<Ftl>, what: &str) -> F2fs<Ftl> {
    let mut ftl = fs.into_device();
    ftl.nand_mut().cut_power();
    let at = ftl.busy_until_ns();
    let done = ftl.power_cycle(at).unwrap();
    F2fs::mount_at(ftl, done.complete_ns)
        .unwrap_or_else(|e| panic!("{what}: recovery on the FTL failed: {e}"))
}

/// The same on the emulated eMMC, through a real power cut of the NAND.
#[test]
fn new_files_fsynced_in_a_row_survive_a_nand_power_cut() {
    for hot in [true, false] {
        for files in 1..=6 {
            let what = format!("ftl {}-{files}", if hot { "hot" } else { "warm" });
            let mut ftl = small_ftl(1024);
            mkfs(&mut ftl, &MkfsOptions::default()).unwrap();
            let mut fs = F2fs::mount(ftl).unwrap();
            let mut expect = Expect::new();
            fsync_round(&mut fs, 0, files, hot, &[], &mut expect);
            let mut fs = cut_and_remount(fs, &what);
            assert_eq!(fs.recovered_inodes(), files, "{what}");
            check_files(&mut fs, &expect, &format!("{what}, first recovery"));
            let grow: Vec<String> = expect.keys().take(2).cloned().collect();
            fsync_round(&mut fs, 1, files, hot, &grow, &mut expect);
            let mut fs = cut_and_remount(fs, &what);
            assert_eq!(fs.recovered_inodes(), files + grow.len(), "{what}");
            check_files(&mut fs, &expect, &format!("{what}, second recovery"));
        }
    }
}

/// A file checkpointed with inline data, then grown past the inline area (converted to
/// blocks) and fsync'd, recovered by roll-forward: the inode's address slots must start
/// empty (the kernel's `f2fs_recover_inline_data` truncates the inline area), not hold the
/// checkpointed inline bytes read as addresses, and `i_blocks` must count every replayed
/// block. Shrunk from cut 1,199 of `crash_explore`'s default setup, where fsck.f2fs found
/// "ino 0x8 has i_blocks 5, but has 6 blocks".
#[test]
fn fsync_after_an_inline_conversion_replays_into_empty_slots() {
    for (inline_len, grown_len) in [(1, 4096 * 5), (200, 4096 * 5 + 100), (3000, 9000)] {
        let what = format!("inline {inline_len} B, grown to {grown_len} B");
        let mut dev = MemDevice::new(64 * MIB);
        mkfs(&mut dev, &MkfsOptions::default()).unwrap();
        let mut fs = F2fs::mount(dev).unwrap();
        let ino = fs.create("/f").unwrap();
        let inline: Vec<u8> = (0..inline_len).map(|i| (i * 7 + 1) as u8 | 1).collect();
        fs.write(ino, 0, &inline).unwrap();
        fs.sync().unwrap();
        let grown: Vec<u8> = (0..grown_len).map(|i| (i % 251) as u8 ^ 0x5a).collect();
        fs.write(ino, 0, &grown).unwrap();
        fs.fsync(ino).unwrap();
        let crashed = fs.into_device();
        let mut fs = F2fs::mount(crashed).unwrap();
        assert_eq!(fs.recovered_inodes(), 1, "{what}");
        let ino = fs.lookup("/f").unwrap();
        assert_eq!(fs.read(ino, 0, grown_len).unwrap(), grown, "{what}");
        assert_eq!(
            fs.stat_ino(ino).unwrap().blocks,
            1 + grown_len.div_ceil(4096) as u64,
            "{what}: i_blocks"
        );
        check_image(&fs.unmount().unwrap(), &what);
    }
}
