//! The mount's F2FS core without FUSE: data through the page cache, names through F2FS,
//! fsync across a power cut of the device, open-unlinked files, a full file system.

use flashstack_cache::{CacheConfig, WritebackReason};
use flashstack_f2fs::{mkfs, F2fs, MkfsOptions};
use flashstack_ftl::{presets, Ftl};
use flashstack_fuse::{F2fsTree, FsError, InodeFs, Kind, NewAttr, OpenHow};

fn small_ftl(blocks_per_plane: u32) -> Ftl {
    let mut device = presets::ldc_emmc();
    device.nand.geometry.blocks_per_plane = blocks_per_plane;
    Ftl::new(device, true, 7).expect("valid device")
}

fn tree_on(ftl: Ftl) -> F2fsTree<Ftl> {
    let fs = F2fs::mount(ftl).expect("mounts");
    F2fsTree::new(fs, CacheConfig::phone_4gib()).expect("valid cache")
}

fn fresh(blocks_per_plane: u32) -> F2fsTree<Ftl> {
    let mut ftl = small_ftl(blocks_per_plane);
    mkfs(&mut ftl, &MkfsOptions::default()).expect("mkfs");
    tree_on(ftl)
}

/// Power is cut under the mount (the cache is lost), the FTL power-cycles (OOB scan) and
/// F2FS mounts again with roll-forward recovery.
fn cut_and_remount(tree: F2fsTree<Ftl>) -> F2fsTree<Ftl> {
    let at = tree.now_ns();
    let mut ftl = tree.power_cut();
    ftl.nand_mut().cut_power();
    let at = ftl.busy_until_ns().max(at);
    let done = ftl.power_cycle(at).expect("power cycle");
    let fs = F2fs::mount_at(ftl, done.complete_ns.max(at)).expect("remount with roll-forward");
    F2fsTree::new(fs, CacheConfig::phone_4gib()).expect("valid cache")
}

fn read_all(tree: &mut F2fsTree<Ftl>, ino: u64) -> Vec<u8> {
    let size = tree.getattr(ino).unwrap().size as usize;
    let mut out = vec![0u8; size];
    let n = tree.read(ino, 0, &mut out).unwrap();
    assert_eq!(n, size);
    out
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

#[test]
fn writes_stay_in_the_cache_until_fsync() {
    let mut tree = fresh(256);
    let root = tree.root();
    let ino = tree.create(root, b"f", NewAttr::root(0o644)).unwrap().ino;
    let data_blocks = tree.fs().metrics().data_blocks;
    let data = pattern(10_000, 1);
    tree.write(ino, 0, &data).unwrap();
    tree.write(ino, 20_000, b"tail!").unwrap();
    // The size and bytes are the cache's; nothing reached F2FS yet.
    assert_eq!(tree.getattr(ino).unwrap().size, 20_005);
    let mut want = data.clone();
    want.resize(20_000, 0);
    want.extend_from_slice(b"tail!");
    assert_eq!(read_all(&mut tree, ino), want);
    assert_eq!(
        tree.fs().metrics().data_blocks,
        data_blocks,
        "no writeback before fsync"
    );
    assert!(tree.cache().metrics().read_hits > 0);
    let before = tree.now_ns();
    tree.fsync(ino, false).unwrap();
    assert!(tree.now_ns() > before, "fsync takes virtual time");
    let m = tree.metrics();
    assert_eq!(m.cache.pages_written_back[&WritebackReason::Fsync], 4);
    assert!(m.f2fs.data_blocks + m.f2fs.ipu_data_blocks >= 4);
    assert!(m.f2fs.fsyncs >= 1);
    assert_eq!(m.requests["write"].count, 2);
    assert_eq!(m.requests["write"].bytes, 10_005);
    assert_eq!(read_all(&mut tree, ino), want);
    // Truncate through the cache: shrink, then grow with zeros.
    tree.set_size(ino, 5).unwrap();
    tree.set_size(ino, 9000).unwrap();
    let mut want = data[..5].to_vec();
    want.resize(9000, 0);
    assert_eq!(read_all(&mut tree, ino), want);
}

#[test]
fn fsynced_data_survives_a_power_cut_unsynced_data_is_lost() {
    let mut tree = fresh(256);
    let root = tree.root();
    let dir = tree.mkdir(root, b"d", NewAttr::root(0o755)).unwrap().ino;
    // A checkpointed file, for data synced into it later with fdatasync.
    let other = tree
        .create(root, b"other", NewAttr::root(0o644))
        .unwrap()
        .ino;
    tree.sync().unwrap();
    let synced = tree
        .create(dir, b"synced", NewAttr::root(0o644))
        .unwrap()
        .ino;
    let v1 = pattern(30_000, 7);
    tree.write(synced, 0, &v1).unwrap();
    tree.fsync(synced, false).unwrap();
    // Later changes stay in the cache: lost at the cut.
    tree.write(synced, 0, &pattern(30_000, 99)).unwrap();
    let volatile = tree
        .create(dir, b"volatile", NewAttr::root(0o644))
        .unwrap()
        .ino;
    tree.write(volatile, 0, &pattern(8192, 3)).unwrap();
    tree.write(other, 0, b"fdatasync'd").unwrap();
    tree.fsync(other, true).unwrap();
    assert!(tree.cache().dirty_bytes() > 0);

    let mut tree = cut_and_remount(tree);
    let root = tree.root();
    let dir = tree.lookup(root, b"d").unwrap();
    assert_eq!(dir.kind, Kind::Dir);
    let synced = tree.lookup(dir.ino, b"synced").unwrap().ino;
    assert_eq!(read_all(&mut tree, synced), v1, "the fsync'd version");
    if let Ok(a) = tree.lookup(dir.ino, b"volatile") {
        assert_eq!(a.size, 0, "never synced: no data may have survived");
    }
    let other = tree.lookup(root, b"other").unwrap().ino;
    assert_eq!(read_all(&mut tree, other), b"fdatasync'd");
    // The recovered file system works on.
    tree.write(synced, 0, b"again").unwrap();
    tree.sync().unwrap();
    tree.into_inner().unwrap().unmount().unwrap();
}

#[test]
fn time_only_moves_forward_one_request_after_another() {
    let mut tree = fresh(256);
    let root = tree.root();
    let ino = tree.create(root, b"t", NewAttr::root(0o644)).unwrap().ino;
    let mut last = tree.now_ns();
    for i in 0..50u64 {
        tree.write(ino, i * 4096, &[i as u8; 4096]).unwrap();
        if i % 10 == 9 {
            tree.fsync(ino, true).unwrap();
        }
        let now = tree.now_ns();
        assert!(now > last, "every request takes time");
        last = now;
    }
    let m = tree.metrics();
    assert_eq!(m.now_ns, tree.now_ns());
    assert_eq!(m.requests["fdatasync"].count, 5);
    assert!(
        m.requests["fdatasync"].latency.latency_ns_max > m.requests["write"].latency.latency_ns_p50,
        "a sync waits for the device, a cached write does not"
    );
}

#[test]
fn an_open_file_outlives_its_last_name_until_released() {
    let mut tree = fresh(256);
    let root = tree.root();
    let dir = tree.mkdir(root, b"tmp", NewAttr::root(0o755)).unwrap().ino;
    let ino = tree
        .create(dir, b"scratch", NewAttr::root(0o644))
        .unwrap()
        .ino;
    tree.opened(ino, 1, OpenHow::default());
    tree.write(ino, 0, &pattern(12_000, 5)).unwrap();
    tree.unlink(dir, b"scratch").unwrap();
    assert_eq!(tree.lookup(dir, b"scratch"), Err(FsError::NotFound));
    // Still readable and writable through the handle, and written back by fsync.
    tree.write(ino, 12_000, b"more").unwrap();
    tree.fsync(ino, false).unwrap();
    let mut want = pattern(12_000, 5);
    want.extend_from_slice(b"more");
    assert_eq!(read_all(&mut tree, ino), want);
    assert_eq!(tree.getattr(ino).unwrap().nlink, 0);
    tree.released(1);
    assert!(tree.getattr(ino).is_err(), "freed at the last release");
    // The freed inode leaves nothing behind: new files work, sync writes nothing lost.
    let next = tree.create(dir, b"next", NewAttr::root(0o644)).unwrap().ino;
    tree.write(next, 0, b"fresh").unwrap();
    tree.sync().unwrap();
    assert_eq!(read_all(&mut tree, next), b"fresh");
    assert_eq!(tree.metrics().writeback_pages_lost, 0);
}

#[test]
fn freed_inodes_drop_their_cached_pages() {
    let mut tree = fresh(256);
    let root = tree.root();
    let a = tree.create(root, b"a", NewAttr::root(0o644)).unwrap().ino;
    tree.write(a, 0, &pattern(40_000, 1)).unwrap();
    let b = tree.create(root, b"b", NewAttr::root(0o644)).unwrap().ino;
    tree.write(b, 0, b"replacement").unwrap();
    // rename over `a`: a's dirty pages are dropped, never written back.
    tree.rename(root, b"b", root, b"a").unwrap();
    assert!(!tree.cache().is_dirty(a, 0));
    let c = tree.create(root, b"c", NewAttr::root(0o644)).unwrap().ino;
    tree.write(c, 0, &pattern(9000, 2)).unwrap();
    tree.unlink(root, b"c").unwrap();
    assert!(!tree.cache().is_dirty(c, 0));
    tree.sync().unwrap();
    let m = tree.metrics();
    assert_eq!(
        m.cache.pages_written_back_total(),
        1,
        "only the replacement's page"
    );
    assert_eq!(m.writeback_pages_lost, 0);
    let a = tree.lookup(root, b"a").unwrap().ino;
    assert_eq!(read_all(&mut tree, a), b"replacement");
    // Directories: rename one, then name paths through it (an open file unlinked in it).
    let d = tree.mkdir(root, b"d", NewAttr::root(0o755)).unwrap().ino;
    tree.rename(root, b"d", root, b"e").unwrap();
    let f = tree.create(d, b"f", NewAttr::root(0o644)).unwrap().ino;
    tree.opened(f, 9, OpenHow::default());
    tree.unlink(d, b"f").unwrap();
    tree.write(f, 0, b"orphan").unwrap();
    assert_eq!(read_all(&mut tree, f), b"orphan");
    tree.released(9);
    tree.rmdir(root, b"e").unwrap();
    tree.sync().unwrap();
    assert_eq!(tree.metrics().writeback_pages_lost, 0);
}

/// A full file system: the failed writeback is reported to fsync as ENOSPC (not a wedged
/// mount), growing files is refused until space is freed, and deleting frees it.
#[test]
fn a_full_file_system_reports_enospc_and_recovers_after_a_delete() {
    let mut tree = fresh(256);
    let root = tree.root();
    let ino = tree.create(root, b"big", NewAttr::root(0o644)).unwrap().ino;
    let chunk = vec![0x5au8; 1 << 20];
    let mut offset = 0u64;
    let error = loop {
        match tree.write(ino, offset, &chunk) {
            Ok(_) => offset += chunk.len() as u64,
            Err(e) => break e,
        }
        if let Err(e) = tree.fsync(ino, true) {
            break e;
        }
        assert!(offset < 1 << 30, "the device is far smaller");
    };
    assert_eq!(error, FsError::NoSpace);
    assert!(tree.metrics().writeback_pages_lost > 0);
    let size = tree.getattr(ino).unwrap().size;
    assert_eq!(
        tree.write(ino, size, b"x"),
        Err(FsError::NoSpace),
        "growing is refused while full"
    );
    // The mount is not wedged: reads and names still work (a create may need a node
    // block: ENOSPC is the answer then), and deleting frees the space.
    let mut head = vec![0u8; 4096];
    assert_eq!(tree.read(ino, 0, &mut head), Ok(4096));
    assert!(matches!(
        tree.create(root, b"small", NewAttr::root(0o644)),
        Ok(_) | Err(FsError::NoSpace)
    ));
    // This F2FS refuses even an unlink when it is full to the last block (the cleaning
    // on the way out finds no room); shrinking the file first frees it.
    tree.set_size(ino, 0).unwrap();
    tree.unlink(root, b"big").unwrap();
    assert_eq!(tree.lookup(root, b"big"), Err(FsError::NotFound));
    let again = tree
        .create(root, b"again", NewAttr::root(0o644))
        .unwrap()
        .ino;
    tree.write(again, 0, &chunk).unwrap();
    tree.fsync(again, false).unwrap();
    tree.sync().unwrap();
    assert_eq!(read_all(&mut tree, again), chunk);
}

/// The daemon-kill test's pattern: new files, each written in 8 KiB requests and fsync'd,
/// one after another, then the power goes.
#[test]
fn new_files_fsynced_one_after_another_survive_a_power_cut() {
    let mut tree = fresh(1024);
    let root = tree.root();
    for i in 0..6usize {
        let name = format!("synced{i}");
        let ino = tree
            .create(root, name.as_bytes(), NewAttr::root(0o644))
            .unwrap()
            .ino;
        let content = format!("file {i} ").repeat(1500 + 300 * i).into_bytes();
        for (k, chunk) in content.chunks(8192).enumerate() {
            tree.write(ino, (k * 8192) as u64, chunk).unwrap();
        }
        tree.fsync(ino, false).unwrap();
    }
    let u = tree
        .create(root, b"unsynced", NewAttr::root(0o644))
        .unwrap()
        .ino;
    tree.write(u, 0, b"may be lost").unwrap();
    let mut tree = cut_and_remount(tree);
    for i in 0..6usize {
        let name = format!("synced{i}");
        let ino = tree.lookup(root, name.as_bytes()).unwrap().ino;
        let content = format!("file {i} ").repeat(1500 + 300 * i).into_bytes();
        assert_eq!(read_all(&mut tree, ino), content);
    }
}

/// MobiFS's transactions are refused on request time (which advances only with device
/// work, so their bound would not hold): an error saying so, never a core whose fsync
/// silently is not durable. The mount uses `with_wall_clock` for them (below).
#[test]
fn request_time_refuses_mobifs_transactions() {
    let mut ftl = small_ftl(256);
    mkfs(&mut ftl, &MkfsOptions::default()).unwrap();
    let fs = F2fs::mount(ftl).unwrap();
    let mut cache = CacheConfig::phone_4gib();
    cache.policy = flashstack_cache::PolicyName::Mobifs;
    let Err(error) = F2fsTree::new(fs, cache) else {
        panic!("a MobiFS cache on the mount must be refused");
    };
    assert!(error.to_string().contains("mobifs"), "{error}");
}

/// The real time since the mount, set by the test.
struct Manual(std::sync::Arc<std::sync::atomic::AtomicU64>);

impl flashstack_fuse::RequestClock for Manual {
    fn elapsed_ns(&self) -> u64 {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}

const S: u64 = 1_000_000_000;

/// With the wall clock, MobiFS's transactions work on the mount: fsync returns with the
/// data sealed in memory, a tick past seal + bound − reserve checkpoints it with no
/// request, and a power cut keeps exactly the last checkpointed transaction.
#[test]
fn mobifs_on_the_wall_clock_checkpoints_between_requests_within_the_bound() {
    let mut ftl = small_ftl(512);
    mkfs(&mut ftl, &MkfsOptions::default()).unwrap();
    let fs = F2fs::mount(ftl).unwrap();
    let mut cache = CacheConfig::phone_4gib();
    cache.policy = flashstack_cache::PolicyName::Mobifs;
    let (bound, reserve) = (
        cache.mobifs.staleness_bound_ns,
        cache.mobifs.checkpoint_reserve_ns,
    );
    let wall = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut tree =
        F2fsTree::with_wall_clock(fs, cache, Box::new(Manual(wall.clone()))).expect("mobifs");
    let root = tree.root();
    let ino = tree.create(root, b"db", NewAttr::root(0o644)).unwrap().ino;
    let first = pattern(40_000, 3);
    tree.write(ino, 0, &first).unwrap();
    let data_blocks = |t: &F2fsTree<Ftl>| t.fs().metrics().data_blocks;
    let before = data_blocks(&tree);
    tree.fsync(ino, false).unwrap();
    assert_eq!(data_blocks(&tree), before, "fsync seals in memory");
    // Ticks before the checkpoint is due write nothing; the clock follows the wall.
    wall.store(S, std::sync::atomic::Ordering::SeqCst);
    tree.tick().unwrap();
    assert!(tree.now_ns() >= S);
    assert_eq!(data_blocks(&tree), before, "not due before bound - reserve");
    wall.store(bound - reserve + S, std::sync::atomic::Ordering::SeqCst);
    tree.tick().unwrap();
    assert!(
        data_blocks(&tree) >= before + 10,
        "the tick checkpointed the sealed transaction"
    );
    // A second transaction, sealed but not yet checkpointed, is lost whole by a power cut.
    let second = pattern(40_000, 9);
    tree.write(ino, 0, &second).unwrap();
    tree.fsync(ino, false).unwrap();
    let mut tree = cut_and_remount(tree);
    let ino = tree.lookup(root, b"db").unwrap().ino;
    assert_eq!(read_all(&mut tree, ino), first);
}
