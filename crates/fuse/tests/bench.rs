//! The in-process side of the FUSE overhead benchmark (`docs/mount.md`): the requests a
//! mounted `dd` and an fsync loop send, issued straight to the mount's core ([`F2fsTree`]
//! over the default stack) on this thread, timed by the wall clock. The mount side is timed
//! by hand with the same programs' requests through FUSE; the difference is the FUSE
//! overhead. Ignored by default:
//!
//! ```sh
//! cargo test --release -p flashstack-fuse --test bench -- --ignored --nocapture
//! ```

use std::time::Instant;

use flashstack_f2fs::{mkfs, F2fs, MkfsOptions};
use flashstack_ftl::Ftl;
use flashstack_fuse::{F2fsTree, InodeFs, NewAttr, OpenHow};
use flashstack_stack::StackConfig;

/// The default stack (ldc-emmc, the phone page cache), formatted and mounted as
/// `flashstack mount` does.
fn default_stack() -> F2fsTree<Ftl> {
    let stack = StackConfig::preset("default").unwrap();
    let mut ftl = Ftl::new(stack.device.clone(), true, stack.seed).unwrap();
    let format = MkfsOptions {
        overprovision: stack.fs.overprovision_percent,
        ..MkfsOptions::default()
    };
    mkfs(&mut ftl, &format).unwrap();
    let fs = F2fs::mount_with(ftl, 0, stack.fs.mount.clone()).unwrap();
    F2fsTree::new(fs, stack.cache.clone()).unwrap()
}

/// Bytes that do not compress to nothing (xorshift), like `/dev/urandom` for `dd`.
fn noise(len: usize, mut state: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        out.extend_from_slice(&state.to_le_bytes());
    }
    out.truncate(len);
    out
}

fn megabytes_per_second(bytes: u64, seconds: f64) -> f64 {
    bytes as f64 / 1e6 / seconds
}

/// `dd if=SRC of=MNT/seq bs=128k count=512 conv=fsync` (64 MiB), then the fsync loop of
/// `fsync_loop.py`: 2,000 × (4 KiB pwrite at `(i × 4096) mod 4 MiB`, fsync).
#[test]
#[ignore]
fn in_process_dd_and_fsync_loop() {
    const REQUEST: usize = 128 << 10;
    const COUNT: usize = 512;
    const FSYNCS: usize = 2000;
    let mut tree = default_stack();
    let root = tree.root();
    let data = noise(REQUEST * COUNT, 0x9e37_79b9_7f4a_7c15);

    let start = Instant::now();
    let v0 = tree.now_ns();
    let ino = tree.create(root, b"seq", NewAttr::root(0o644)).unwrap().ino;
    tree.opened(ino, 1, OpenHow::default());
    for (i, chunk) in data.chunks(REQUEST).enumerate() {
        tree.write(ino, (i * REQUEST) as u64, chunk).unwrap();
    }
    tree.fsync(ino, false).unwrap();
    tree.released(1);
    let wall = start.elapsed().as_secs_f64();
    let virtual_s = (tree.now_ns() - v0) as f64 / 1e9;
    let bytes = data.len() as u64;
    println!(
        "in-process dd: {} MiB in {wall:.3} s wall = {:.1} MB/s (virtual: {virtual_s:.3} s = \
         {:.1} MB/s)",
        bytes >> 20,
        megabytes_per_second(bytes, wall),
        megabytes_per_second(bytes, virtual_s)
    );

    let page = noise(4096, 7);
    let start = Instant::now();
    let v0 = tree.now_ns();
    let ino = tree
        .create(root, b"sync", NewAttr::root(0o644))
        .unwrap()
        .ino;
    tree.opened(ino, 2, OpenHow::default());
    for i in 0..FSYNCS {
        let offset = (i as u64 * 4096) % (4 << 20);
        tree.write(ino, offset, &page).unwrap();
        tree.fsync(ino, false).unwrap();
    }
    tree.released(2);
    let wall = start.elapsed().as_secs_f64();
    let virtual_s = (tree.now_ns() - v0) as f64 / 1e9;
    println!(
        "in-process fsync loop: {FSYNCS} × (4 KiB write + fsync) in {wall:.3} s wall = {:.0} \
         fsyncs/s (virtual: {virtual_s:.3} s = {:.0} fsyncs/s)",
        FSYNCS as f64 / wall,
        FSYNCS as f64 / virtual_s
    );
    tree.sync().unwrap();
}
