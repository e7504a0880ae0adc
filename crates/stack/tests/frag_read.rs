//! The stack's own reads pay for fragmentation (issue 15 item 2): a file read through
//! the page cache and F2FS (`F2fs::read_pages`) becomes one block request per extent
//! piece, each paying the host's time and the device's command time, so on `ufs31` a
//! file in 128 pieces reads slower than the same bytes contiguous, and janusdL (REMAP:
//! the same flash pages, one extent) closes the gap when planes run independently. Under
//! `ufs31`'s die rule (one command per die, multi-plane only at one page offset) the gap
//! is in where the pages sit on flash, which janusdL does not change. Figures in
//! `docs/janusd.md`.

mod common;

use common::try_read_all;
use flashstack_f2fs::F2fs;
use flashstack_sqlvfs::{FileApi, OpenFlags};
use flashstack_stack::{Stack, StackConfig};

use flashstack_stack::Device;

const PAGES: usize = 512;

fn bytes(seed: u8) -> Vec<u8> {
    (0..PAGES * 4096)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed ^ (i >> 12) as u8)
        .collect()
}

/// `/a.db` written `run` pages at a time alternately with a filler file (then removed):
/// pieces of `run` pages; `/c.db` the same bytes in one write.
fn lay_out(fs: &mut F2fs<Device>, run: usize, fill: usize) -> Vec<u8> {
    let data = bytes(1);
    let a = fs.create("/a.db").unwrap();
    let f = fs.create("/filler.db").unwrap();
    for at in (0..PAGES * 4096).step_by(run * 4096) {
        fs.write(a, at as u64, &data[at..at + run * 4096]).unwrap();
        fs.fsync(a).unwrap();
        for k in 0..fill / run {
            let to = (at * (fill / run) + k * run * 4096) as u64;
            fs.write(f, to, &data[at..at + run * 4096]).unwrap();
        }
        fs.fsync(f).unwrap();
    }
    fs.sync().unwrap();
    fs.unlink("/filler.db").unwrap();
    let c = fs.create("/c.db").unwrap();
    fs.write(c, 0, &data).unwrap();
    fs.sync().unwrap();
    data
}

/// A cold read of the whole file through the stack (open, read in calls of `call_bytes`,
/// close): its time.
fn cold_read_ns(s: &mut Stack, path: &str, want: &[u8], call_bytes: usize) -> u64 {
    s.drop_caches().unwrap();
    // From an idle device: after whatever F2FS did last (its clock may lead the stack's).
    let fs_now = s.with_fs(|fs| fs.now_ns()).unwrap();
    let t0 = s
        .idle_until(fs_now.max(s.now_ns()) + 1_000_000_000)
        .unwrap();
    let (h, t) = s.open(t0, path, OpenFlags::default()).unwrap();
    let mut buf = vec![0u8; want.len()];
    let mut t = t;
    for (k, chunk) in buf.chunks_mut(call_bytes).enumerate() {
        let (n, done) = s.read_at(t, h, (k * call_bytes) as u64, chunk).unwrap();
        assert_eq!(n, chunk.len());
        t = done;
    }
    assert!(buf == want, "{path}: bytes differ");
    let t = s.close(t, h).unwrap();
    s.idle_until(t + 1_000_000_000).unwrap();
    t - t0
}

fn extents(s: &mut Stack, path: &str) -> usize {
    s.with_fs(|fs| {
        let ino = fs.lookup(path).unwrap();
        let addrs = fs.file_block_addrs(ino).unwrap();
        1 + addrs.windows(2).filter(|w| w[1] != w[0] + 1).count()
    })
    .unwrap()
}

/// Cold whole-file read times (ms) of `/a.db` in pieces of `run` pages (after each,
/// `fill` pages of a filler), the same bytes contiguous, and `/a.db` after janusdL; and
/// the requests the fragmented read became.
struct Times {
    requests: u64,
    frag_ms: f64,
    contiguous_ms: f64,
    after_l_ms: f64,
}

fn times(run: usize, fill: usize, change: impl FnOnce(&mut StackConfig)) -> Times {
    times_in_calls(run, fill, PAGES * 4096, |c| {
        independent_planes(c);
        change(c)
    })
}

/// The array as `ufs31` was before its die rule: every plane its own timeline, blocks
/// allocated page by page. Isolates the logical term of fragmentation (requests, host
/// and command time) from where the pages sit on flash.
fn independent_planes(c: &mut StackConfig) {
    let d = &mut c.device;
    d.nand.die_rules = flashstack_nand::DieRules::IndependentPlanes;
    d.nand.timing.channel_model = flashstack_nand::ChannelModel::BusyUntil;
    d.ftl.allocation = flashstack_ftl::Allocation::Page;
}

fn times_in_calls(
    run: usize,
    fill: usize,
    call_bytes: usize,
    change: impl FnOnce(&mut StackConfig),
) -> Times {
    let mut config = StackConfig::preset("ufs31").unwrap();
    config.device.nand.geometry.blocks_per_plane = 40;
    config.device.nand.geometry.pages_per_block = 192;
    change(&mut config);
    let mut s = Stack::new(config).unwrap();
    let data = s.with_fs(|fs| lay_out(fs, run, fill)).unwrap();
    assert_eq!(extents(&mut s, "/a.db"), PAGES / run);
    // One log segment boundary may cut the contiguous copy once.
    assert!(extents(&mut s, "/c.db") <= 2);
    let requests_before = s.with_fs(|fs| fs.metrics().read_requests).unwrap();
    let frag = cold_read_ns(&mut s, "/a.db", &data, call_bytes);
    let requests = s.with_fs(|fs| fs.metrics().read_requests).unwrap() - requests_before;
    let contiguous = cold_read_ns(&mut s, "/c.db", &data, call_bytes);
    s.with_fs(|fs| {
        let ino = fs.lookup("/a.db").unwrap();
        fs.defrag_by_remap(ino).unwrap();
    })
    .unwrap();
    assert_eq!(extents(&mut s, "/a.db"), 1);
    let after = cold_read_ns(&mut s, "/a.db", &data, call_bytes);
    assert_eq!(try_read_all(&mut s, "/a.db").unwrap(), data);
    let ms = |ns: u64| ns as f64 / 1e6;
    let t = Times {
        requests,
        frag_ms: ms(frag),
        contiguous_ms: ms(contiguous),
        after_l_ms: ms(after),
    };
    println!(
        "pieces of {run} pages, {fill} between, {call_bytes}-byte calls: {} requests, fragmented {:.3} ms, contiguous {:.3} ms, after janusdL {:.3} ms",
        t.requests, t.frag_ms, t.contiguous_ms, t.after_l_ms
    );
    t
}

/// Logical fragmentation alone (each 16 KiB piece a whole flash page, the pieces spread
/// over all eight planes): the fragmented read pays 128 requests' host and command time
/// and is slower than the contiguous one; janusdL (one extent, the same flash pages)
/// brings it back to within a few percent of contiguous.
#[test]
fn a_fragmented_file_reads_slower_and_janusd_l_closes_the_gap() {
    let t = times(4, 8, |_| {});
    assert_eq!(t.requests, 128);
    assert!(t.frag_ms > 1.1 * t.contiguous_ms, "fragmented not slower");
    assert!(
        t.after_l_ms < 1.08 * t.contiguous_ms,
        "janusdL did not close the gap"
    );
    assert!(t.frag_ms - t.after_l_ms > 0.5 * (t.frag_ms - t.contiguous_ms));
}

/// Each term's share of the gap (printed for docs/janusd.md): the same layout with no
/// host time per request, then also no device command time; and one request per page
/// (what the stack's reads were before they went through `read_pages`).
#[test]
fn each_term_of_the_gap() {
    let all = times(4, 8, |_| {});
    let no_host = times(4, 8, |c| c.fs.mount.read.host_overhead_ns_per_request = 0);
    let neither = times(4, 8, |c| {
        c.fs.mount.read.host_overhead_ns_per_request = 0;
        c.device.host.controller_overhead_ns = 0;
    });
    let per_page = times(4, 8, |c| c.fs.mount.read.max_request_bytes = 4096);
    let gap = |t: &Times| t.frag_ms - t.contiguous_ms;
    println!(
        "gap {:.3} ms: host {:.3}, command {:.3}, the rest (flash, link, queueing) {:.3}; one request per page: gap {:.3} ms",
        gap(&all),
        gap(&all) - gap(&no_host),
        gap(&no_host) - gap(&neither),
        gap(&neither),
        gap(&per_page)
    );
    assert!(gap(&all) > gap(&no_host), "host time per request is a term");
    assert_eq!(per_page.requests, 512);
    // A request per page makes every file slow and hides fragmentation.
    assert!(per_page.contiguous_ms > 4.0 * all.contiguous_ms);
    assert!(gap(&per_page) / per_page.contiguous_ms < 0.05);
}

/// Physical fragmentation: 4 KiB pieces each in a flash page of its own (a whole 16 KiB
/// page sensed and moved for 4 KiB). janusdL makes the file one extent but cannot move
/// the pages, so the read stays several times the contiguous one (janusdP's case).
#[test]
fn janusd_l_does_not_fix_physical_fragmentation() {
    let t = times(1, 1, |_| {});
    assert_eq!(t.requests, 512);
    assert!(t.frag_ms > 3.0 * t.contiguous_ms);
    assert!(t.after_l_ms > 3.0 * t.contiguous_ms);
}

/// A reader of 4 KiB calls (SQLite's pages, faults on mapped code) pays for logical
/// fragmentation only through readahead: with Linux's readahead the windows (4 → 32
/// pages) are split at the pieces, so the fragmented file takes more requests and longer
/// than the contiguous one, and janusdL takes it back; with readahead off every page is
/// its own waited-for request, fragmented or not, and all three take the same time.
#[test]
fn page_by_page_readers_pay_for_fragmentation_through_readahead() {
    let linux =
        |c: &mut StackConfig| c.cache.readahead = flashstack_cache::ReadaheadConfig::linux();
    let on = times_in_calls(4, 8, 4096, |c| {
        independent_planes(c);
        linux(c)
    });
    let off = times_in_calls(4, 8, 4096, independent_planes);
    assert_eq!(
        off.requests, PAGES as u64,
        "one request per page without readahead"
    );
    assert!(
        on.requests < PAGES as u64 / 2,
        "readahead windows: {}",
        on.requests
    );
    assert!(
        on.frag_ms > 1.05 * on.contiguous_ms,
        "fragmented not slower"
    );
    // janusdL takes back most of the gap, as for one large read (the rest: `docs/janusd.md`).
    assert!(
        on.after_l_ms < 1.08 * on.contiguous_ms,
        "janusdL did not close the gap"
    );
    assert!(on.frag_ms - on.after_l_ms > 0.5 * (on.frag_ms - on.contiguous_ms));
    assert!(
        on.contiguous_ms < 0.5 * off.contiguous_ms,
        "readahead did not help"
    );
    let spread = off.frag_ms.max(off.contiguous_ms) / off.frag_ms.min(off.contiguous_ms);
    assert!(
        spread < 1.02,
        "without readahead fragmentation should not matter"
    );
}

/// On `ufs31` as it is (one command per die; a die's planes join one command only at the
/// same page offset; super-page allocation): the contiguous copy sits at one offset
/// across each die's planes and reads as multi-plane commands, the pieces do not, so the
/// fragmented read is much slower and janusdL, which leaves every page where it is,
/// takes back little of the gap (what the copying defragmenter and janusdP are for).
#[test]
fn under_the_die_rule_the_gap_is_in_the_flash_layout() {
    let t = times_in_calls(4, 8, PAGES * 4096, |_| {});
    assert_eq!(t.requests, 128);
    assert!(t.frag_ms > 1.4 * t.contiguous_ms, "fragmented not slower");
    let gap = t.frag_ms - t.contiguous_ms;
    assert!(
        t.frag_ms - t.after_l_ms < 0.2 * gap,
        "janusdL took back more than the logical part"
    );
    assert!(t.after_l_ms > 1.3 * t.contiguous_ms);
}
