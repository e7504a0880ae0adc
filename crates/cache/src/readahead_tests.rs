//! Readahead (`crate::readahead`, `docs/cache.md` "Readahead") against the in-memory file
//! system, wrapped so that every `read_pages` call is one request with a fixed cost.

use flashstack_sim::{Nanos, NS_PER_MS};
use proptest::prelude::*;

use crate::readahead::MMAP_MISS_BACKOFF;
use crate::{
    Backing, BackingError, CacheConfig, Ino, MemBacking, MemBackingCosts, MmapPolicy, Page,
    PageCache, ReadaheadConfig, PAGE_SIZE_BYTES,
};

/// Per request and per page (a device: the request's overhead dominates a small read).
const REQUEST_NS: Nanos = 50_000;
const PAGE_NS: Nanos = 5_000;

/// `MemBacking` whose reads are requests: one per `read_pages` call, counted.
#[derive(Default)]
struct Requests {
    inner: MemBacking,
    /// Pages of each read request, in order.
    sizes: Vec<u64>,
}

impl Backing for Requests {
    fn read_page(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        page_index: u64,
        page: &mut Page,
    ) -> Result<Nanos, BackingError> {
        self.sizes.push(1);
        self.inner.read_page(now_ns, ino, page_index, page)?;
        Ok(now_ns + REQUEST_NS + PAGE_NS)
    }

    fn read_pages(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        first_page_index: u64,
        pages: &mut [Box<Page>],
    ) -> Result<Nanos, BackingError> {
        self.sizes.push(pages.len() as u64);
        for (k, page) in pages.iter_mut().enumerate() {
            self.inner
                .read_page(now_ns, ino, first_page_index + k as u64, page)?;
        }
        Ok(now_ns + REQUEST_NS + PAGE_NS * pages.len() as u64)
    }

    fn write_pages(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        first_page_index: u64,
        pages: &[&Page],
        file_size_bytes: u64,
        sync: bool,
    ) -> Result<Nanos, BackingError> {
        self.inner
            .write_pages(now_ns, ino, first_page_index, pages, file_size_bytes, sync)
    }

    fn fsync(&mut self, now_ns: Nanos, ino: Ino, data_only: bool) -> Result<Nanos, BackingError> {
        self.inner.fsync(now_ns, ino, data_only)
    }

    fn sync_all(&mut self, now_ns: Nanos) -> Result<Nanos, BackingError> {
        self.inner.sync_all(now_ns)
    }

    fn truncate(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        size_bytes: u64,
    ) -> Result<Nanos, BackingError> {
        self.inner.truncate(now_ns, ino, size_bytes)
    }

    fn unlink(&mut self, now_ns: Nanos, ino: Ino) -> Result<Nanos, BackingError> {
        self.inner.unlink(now_ns, ino)
    }

    fn file_size(&mut self, now_ns: Nanos, ino: Ino) -> Result<(u64, Nanos), BackingError> {
        self.inner.file_size(now_ns, ino)
    }
}

fn config(pages: u64, readahead: ReadaheadConfig) -> CacheConfig {
    CacheConfig {
        memory_bytes: 1 << 30,
        cache_bytes_max: pages * PAGE_SIZE_BYTES as u64,
        readahead,
        ..CacheConfig::phone_4gib()
    }
}

/// A cache over a file `ino` 1 of `file_pages` pages (page k filled with k), synced and
/// dropped from the cache, so every read starts cold.
fn cold(cache_pages: u64, readahead: ReadaheadConfig, file_pages: u64) -> PageCache<Requests> {
    let mut cache = PageCache::new(config(cache_pages, readahead), Requests::default()).unwrap();
    for k in 0..file_pages {
        let page = [k as u8; PAGE_SIZE_BYTES];
        cache
            .write(0, 1, k * PAGE_SIZE_BYTES as u64, &page)
            .unwrap();
    }
    cache.sync_all(0).unwrap();
    cache.drop_clean_pages();
    cache.backing_mut().sizes.clear();
    cache.reset_metrics();
    cache
}

/// Reads page `k` of file 1 with one 4 KiB call at `now_ns`; checks its bytes.
fn read_page(cache: &mut PageCache<Requests>, now_ns: Nanos, k: u64) -> Nanos {
    let mut buf = [0u8; PAGE_SIZE_BYTES];
    let (n, done) = cache
        .read(now_ns, 1, k * PAGE_SIZE_BYTES as u64, &mut buf)
        .unwrap();
    assert_eq!(n, PAGE_SIZE_BYTES);
    assert!(
        buf.iter().all(|&b| b == k as u8),
        "page {k} read wrong bytes"
    );
    done
}

/// Sequential 4 KiB reads open a 4-page window, then grow it ×2 up to 32 pages, in far
/// fewer requests than the same pages read in a random order (which get no readahead).
#[test]
fn sequential_reads_grow_the_window_and_random_reads_get_none() {
    let mut seq = cold(4096, ReadaheadConfig::linux(), 256);
    let mut t = 0;
    for k in 0..256 {
        t = read_page(&mut seq, t, k);
    }
    let sizes = seq.backing().sizes.clone();
    assert_eq!(&sizes[..4], &[4, 8, 16, 32], "the window ramps: {sizes:?}");
    // Then stays at the max; the last window stops at end of file (4 + 8 + 16 + 7 × 32 =
    // 252 pages, 4 left).
    assert_eq!(&sizes[4..], &[32, 32, 32, 32, 32, 32, 4], "{sizes:?}");
    assert_eq!(seq.metrics().readahead_waste, 0);

    let mut random = cold(4096, ReadaheadConfig::linux(), 256);
    let mut order: Vec<u64> = (0..256).collect();
    // A fixed scramble (odd stride modulo 256 visits every page once), starting mid-file.
    order.iter_mut().for_each(|k| *k = (*k * 37 + 101) % 256);
    let mut t = 0;
    for &k in &order {
        t = read_page(&mut random, t, k);
    }
    let random_sizes = &random.backing().sizes;
    assert!(
        random_sizes.len() > 8 * sizes.len(),
        "sequential {} requests, random {}",
        sizes.len(),
        random_sizes.len()
    );
    assert_eq!(
        random.metrics().readahead_pages,
        0,
        "random reads read nothing ahead"
    );
}

/// A read that reaches the marker issues the next window but does not wait for it: it
/// costs a cache hit; only a read of a page still in flight waits.
#[test]
fn asynchronous_readahead_does_not_delay_the_reader() {
    let mut cache = cold(4096, ReadaheadConfig::linux(), 64);
    let t0 = read_page(&mut cache, 0, 0); // miss: window 0..4, marker on page 1
    assert_eq!(cache.backing().sizes, vec![4]);
    let hit_ns = cache.config().call_overhead_ns + cache.config().memcpy_ns_per_page;
    let t1 = read_page(&mut cache, t0, 1); // the marker: window 4..12 issued
    assert_eq!(
        cache.backing().sizes,
        vec![4, 8],
        "the next window is issued"
    );
    assert_eq!(t1 - t0, hit_ns, "the reader did not wait for it");
    // Page 4 is in flight until t1 - hit_ns + the request's time: reading it at once waits.
    let window_ns = REQUEST_NS + 8 * PAGE_NS;
    let t4 = read_page(&mut cache, t1, 4);
    assert_eq!(
        t4,
        t0 + window_ns + hit_ns,
        "a page in flight is waited for"
    );
    assert!(cache.metrics().readahead_wait_ns > 0);
    assert_eq!(cache.metrics().readahead_hits, 2); // pages 1 and 4
}

/// Without readahead every 4 KiB read is a request of one page (today's behaviour).
#[test]
fn off_reads_only_the_requested_pages() {
    let mut cache = cold(4096, ReadaheadConfig::default(), 16);
    let mut t = 0;
    for k in 0..16 {
        t = read_page(&mut cache, t, k);
    }
    assert_eq!(cache.backing().sizes, vec![1; 16]);
    assert_eq!(cache.metrics().readahead_pages, 0);
}

/// Pages read ahead and evicted unused are counted as waste.
#[test]
fn unused_readahead_is_counted_as_waste() {
    let mut cache = cold(4096, ReadaheadConfig::linux(), 64);
    read_page(&mut cache, 0, 0); // window of 4: pages 1..4 read ahead
    assert_eq!(cache.metrics().readahead_pages, 3);
    cache.drop_clean_pages();
    assert_eq!(cache.metrics().readahead_waste, 3);
}

#[derive(Clone, Debug)]
enum Op {
    Read {
        ino: Ino,
        page: u64,
        pages: u64,
    },
    /// A sequential scan in 4 KiB calls (what opens windows and reaches markers).
    Scan {
        ino: Ino,
        page: u64,
        pages: u64,
    },
    Write {
        ino: Ino,
        offset: u64,
        len: u64,
        byte: u8,
    },
    Truncate {
        ino: Ino,
        pages: u64,
    },
    Fsync {
        ino: Ino,
    },
    DropCaches,
    Unlink {
        ino: Ino,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let ino = 1u64..4;
    prop_oneof![
        // Sequential-looking reads dominate so that windows and markers are exercised.
        4 => (ino.clone(), 0u64..48, 1u64..6).prop_map(|(ino, page, pages)| Op::Read { ino, page, pages }),
        4 => (ino.clone(), 0u64..48, 1u64..40).prop_map(|(ino, page, pages)| Op::Scan { ino, page, pages }),
        3 => (ino.clone(), 0u64..48 * 4096, 1u64..20_000, any::<u8>())
            .prop_map(|(ino, offset, len, byte)| Op::Write { ino, offset, len, byte }),
        1 => (ino.clone(), 0u64..48).prop_map(|(ino, pages)| Op::Truncate { ino, pages }),
        1 => ino.clone().prop_map(|ino| Op::Fsync { ino }),
        1 => Just(Op::DropCaches),
        1 => ino.prop_map(|ino| Op::Unlink { ino }),
    ]
}

/// Runs `op` on `cache` at `t`; returns the bytes a read returned (empty otherwise).
fn apply(cache: &mut PageCache<Requests>, t: Nanos, op: &Op) -> Vec<u8> {
    match *op {
        Op::Read { ino, page, pages } => {
            let mut buf = vec![0u8; (pages as usize) * PAGE_SIZE_BYTES];
            let (n, _) = cache.read(t, ino, page * 4096, &mut buf).unwrap();
            buf.truncate(n);
            return buf;
        }
        Op::Scan { ino, page, pages } => {
            let mut out = Vec::new();
            let mut buf = vec![0u8; PAGE_SIZE_BYTES];
            for k in page..page + pages {
                let (n, _) = cache.read(t, ino, k * 4096, &mut buf).unwrap();
                out.extend_from_slice(&buf[..n]);
            }
            return out;
        }
        Op::Write {
            ino,
            offset,
            len,
            byte,
        } => {
            cache
                .write(t, ino, offset, &vec![byte; len as usize])
                .unwrap();
        }
        Op::Truncate { ino, pages } => {
            cache
                .truncate(t, ino, pages * 4096 - pages.min(1) * 100)
                .unwrap();
        }
        Op::Fsync { ino } => {
            cache.fsync(t, ino).unwrap();
        }
        Op::DropCaches => {
            cache.drop_clean_pages();
        }
        Op::Unlink { ino } => {
            cache.unlink(t, ino).unwrap();
        }
    }
    Vec::new()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Random operation sequences on two caches, readahead off and on: every read returns
    /// the same bytes, and the cache with readahead never holds more than its limit.
    #[test]
    fn readahead_changes_timing_not_contents(
        ops in prop::collection::vec(op(), 1..80),
        cache_pages in 8u64..64,
    ) {
        let _ = MemBackingCosts::default();
        let mut off = PageCache::new(config(cache_pages, ReadaheadConfig::default()), Requests::default()).unwrap();
        let mut on = PageCache::new(config(cache_pages, ReadaheadConfig::linux()), Requests::default()).unwrap();
        let limit = on.config().cache_pages_max();
        let mut t = 0;
        for op in &ops {
            t += NS_PER_MS;
            let expected = apply(&mut off, t, op);
            let got = apply(&mut on, t, op);
            prop_assert_eq!(&got, &expected, "{:?}", op);
            prop_assert!(on.cached_pages() <= limit, "{} pages cached, limit {}", on.cached_pages(), limit);
        }
    }
}

/// An impossible window is refused naming the field; the default is not serialized (so
/// every existing configuration file and report stays as it was) and `linux` round-trips.
#[test]
fn configuration_is_checked_and_round_trips() {
    for max_kib in [0, 6, 1024] {
        let bad = config(
            64,
            ReadaheadConfig {
                max_kib,
                ..ReadaheadConfig::linux()
            },
        );
        match PageCache::new(bad, Requests::default()) {
            Err(crate::CacheError::Config(crate::ConfigError::Invalid { field, .. })) => {
                assert_eq!(field, "readahead.max_kib")
            }
            other => panic!("max_kib {max_kib}: {:?}", other.err()),
        }
    }
    let off = serde_json::to_string(&CacheConfig::phone_4gib()).unwrap();
    assert!(!off.contains("readahead"), "{off}");
    let on = config(64, ReadaheadConfig::linux());
    let text = serde_json::to_string(&on).unwrap();
    assert!(
        text.contains(r#""readahead":{"policy":"linux","max_kib":128}"#),
        "{text}"
    );
    assert_eq!(serde_json::from_str::<CacheConfig>(&text).unwrap(), on);
}

/// Read-around for faults, on top of `policy`.
fn read_around(policy: ReadaheadConfig) -> ReadaheadConfig {
    ReadaheadConfig {
        mmap: MmapPolicy::ReadAround,
        ..policy
    }
}

/// A fault on page `k` of file 1 at `now_ns`; checks its bytes.
fn fault_page(cache: &mut PageCache<Requests>, now_ns: Nanos, k: u64) -> Nanos {
    let mut buf = [0u8; PAGE_SIZE_BYTES];
    let (n, done) = cache
        .fault(now_ns, 1, k * PAGE_SIZE_BYTES as u64, &mut buf)
        .unwrap();
    assert_eq!(n, PAGE_SIZE_BYTES);
    assert!(
        buf.iter().all(|&b| b == k as u8),
        "page {k} faulted wrong bytes"
    );
    done
}

/// A fault in the middle of a file reads the 32 pages centred on it (16 before, 15 after)
/// as one request, and waits for it; the window's last quarter carries the marker.
#[test]
fn a_fault_mid_file_reads_the_centred_window() {
    let mut cache = cold(4096, read_around(ReadaheadConfig::default()), 256);
    let done = fault_page(&mut cache, 0, 100);
    assert_eq!(cache.backing().sizes, vec![32]);
    for k in 0..256 {
        assert_eq!(
            cache.is_cached(1, k),
            (84..116).contains(&k),
            "page {k}: the window is pages 84..116"
        );
    }
    // It waits for the whole window: 31 pages more than the same fault as a read.
    let mut off = cold(4096, ReadaheadConfig::default(), 256);
    let off_done = fault_page(&mut off, 0, 100);
    assert_eq!(off.backing().sizes, vec![1]);
    assert_eq!(off.metrics().mmap_faults, 0);
    assert_eq!(
        done - off_done,
        31 * PAGE_NS,
        "the fault waits for its window"
    );
    let m = cache.metrics().clone();
    assert_eq!(
        (m.mmap_faults, m.mmap_major_faults, m.mmap_windows),
        (1, 1, 1)
    );
    assert_eq!((m.mmap_window_pages, m.readahead_pages), (31, 31));
    // A fault just before the window (page 83) reads around it without re-reading it:
    // 67..83 is the only gap.
    fault_page(&mut cache, done, 83);
    assert_eq!(cache.backing().sizes, vec![32, 17]);
    // Near the start of the file the window starts at page 0.
    let mut start = cold(4096, read_around(ReadaheadConfig::default()), 256);
    fault_page(&mut start, 0, 3);
    assert_eq!(start.backing().sizes, vec![32]);
    assert!(start.is_cached(1, 0) && start.is_cached(1, 31) && !start.is_cached(1, 32));
}

/// Sequential faults: one major fault reads 32 pages, then each marker (the window's last
/// quarter) issues the next 32 asynchronously: 8 requests for 256 pages, where sequential
/// 4 KiB reads ramp 4, 8, 16, 32 (11 requests); every page read ahead is used.
#[test]
fn sequential_faults_take_full_windows_at_each_marker() {
    let mut cache = cold(4096, read_around(ReadaheadConfig::default()), 256);
    let mut t = 0;
    for k in 0..256 {
        t = fault_page(&mut cache, t, k);
    }
    assert_eq!(cache.backing().sizes, vec![32; 8]);
    let m = cache.metrics().clone();
    assert_eq!((m.mmap_faults, m.mmap_major_faults), (256, 1));
    assert_eq!((m.mmap_windows, m.mmap_async_windows), (1, 7));
    assert_eq!((m.readahead_pages, m.readahead_hits), (255, 255));
    assert_eq!(m.mmap_readahead_hits, 255);
    assert_eq!(m.readahead_waste, 0);
    assert_eq!(cache.ra_state_mmap_miss(1), 0, "one miss, then hits");
}

/// A mapping that keeps missing (faults 64 pages apart, none hitting a window) gets
/// read-around for its first 100 misses only; hits on cached pages bring it back.
#[test]
fn a_mapping_that_misses_too_often_backs_off() {
    let pages = 64 * 103;
    let mut cache = cold(16_384, read_around(ReadaheadConfig::default()), pages);
    let mut t = 0;
    for k in 0..=MMAP_MISS_BACKOFF as u64 {
        t = fault_page(&mut cache, t, 32 + 64 * k);
    }
    let m = cache.metrics().clone();
    assert_eq!((m.mmap_major_faults, m.mmap_windows), (101, 100));
    assert_eq!(m.mmap_backoffs, 1);
    assert_eq!(
        cache.backing().sizes.last(),
        Some(&1),
        "the 101st reads its page"
    );
    assert_eq!(cache.ra_state_mmap_miss(1), MMAP_MISS_BACKOFF + 1);
    // Two hits (pages the first window read): 99 net misses; the next miss reads around.
    t = fault_page(&mut cache, t, 30);
    t = fault_page(&mut cache, t, 31);
    fault_page(&mut cache, t, 32 + 64 * 102);
    assert_eq!(cache.metrics().mmap_windows, 101);
    assert_eq!(cache.backing().sizes.last(), Some(&32));
}

/// A fault maps one page: more is refused, naming the inode and range.
#[test]
fn a_fault_across_pages_is_refused() {
    let mut cache = cold(4096, read_around(ReadaheadConfig::default()), 4);
    let mut buf = [0u8; 200];
    match cache.fault(0, 1, 4000, &mut buf) {
        Err(crate::CacheError::FaultSpansPages {
            ino: 1,
            offset_bytes: 4000,
            length_bytes: 200,
        }) => {}
        other => panic!("{other:?}"),
    }
    // Past the end of the file a fault reads nothing.
    let (n, _) = cache.fault(0, 1, 4 * 4096, &mut buf).unwrap();
    assert_eq!(n, 0);
}

/// A page fault or read of `pages` pages from `page` on `ino`.
#[derive(Clone, Debug)]
enum Access {
    Faults { ino: Ino, page: u64, pages: u64 },
    Other(Op),
}

fn access() -> impl Strategy<Value = Access> {
    prop_oneof![
        3 => (1u64..4, 0u64..48, 1u64..24).prop_map(|(ino, page, pages)| Access::Faults { ino, page, pages }),
        5 => op().prop_map(Access::Other),
    ]
}

/// Runs `a` on `cache` at `t`, faults as faults (`as_faults`) or as 4 KiB reads; returns
/// the bytes read and the completion time of the last fault.
fn apply_access(
    cache: &mut PageCache<Requests>,
    t: Nanos,
    a: &Access,
    as_faults: bool,
) -> (Vec<u8>, Nanos) {
    match *a {
        Access::Faults { ino, page, pages } => {
            let mut out = Vec::new();
            let mut buf = vec![0u8; PAGE_SIZE_BYTES];
            let mut done = 0;
            for k in page..page + pages {
                let (n, d) = match as_faults {
                    true => cache.fault(t, ino, k * 4096, &mut buf),
                    false => cache.read(t, ino, k * 4096, &mut buf),
                }
                .unwrap();
                out.extend_from_slice(&buf[..n]);
                done = d;
            }
            (out, done)
        }
        Access::Other(ref op) => (apply(cache, t, op), 0),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// With `mmap = off` a fault is a one-page read, byte for byte: the same sequence with
    /// faults and with reads gives the same bytes, times, requests and metrics (under
    /// either readahead policy). With read-around the bytes are the same and the cache
    /// stays within its limit.
    #[test]
    fn mmap_off_faults_are_reads_and_read_around_keeps_contents(
        accesses in prop::collection::vec(access(), 1..60),
        cache_pages in 8u64..64,
        linux in any::<bool>(),
    ) {
        let policy = if linux { ReadaheadConfig::linux() } else { ReadaheadConfig::default() };
        let mut reads = PageCache::new(config(cache_pages, policy.clone()), Requests::default()).unwrap();
        let mut faults = PageCache::new(config(cache_pages, policy.clone()), Requests::default()).unwrap();
        let mut around = PageCache::new(config(cache_pages, read_around(policy)), Requests::default()).unwrap();
        let limit = around.config().cache_pages_max();
        let mut t = 0;
        for a in &accesses {
            t += NS_PER_MS;
            let expected = apply_access(&mut reads, t, a, false);
            let got = apply_access(&mut faults, t, a, true);
            prop_assert_eq!(&got, &expected, "{:?}", a);
            let (bytes, _) = apply_access(&mut around, t, a, true);
            prop_assert_eq!(&bytes, &expected.0, "{:?}", a);
            prop_assert!(around.cached_pages() <= limit);
        }
        prop_assert_eq!(&faults.backing().sizes, &reads.backing().sizes);
        prop_assert_eq!(
            serde_json::to_string(faults.metrics()).unwrap(),
            serde_json::to_string(reads.metrics()).unwrap()
        );
    }
}

/// `mmap` is not serialized when off; `read-around` round-trips.
#[test]
fn mmap_configuration_round_trips() {
    let on = config(64, read_around(ReadaheadConfig::linux()));
    let text = serde_json::to_string(&on).unwrap();
    assert!(
        text.contains(r#""readahead":{"policy":"linux","max_kib":128,"mmap":"read-around"}"#),
        "{text}"
    );
    assert_eq!(serde_json::from_str::<CacheConfig>(&text).unwrap(), on);
    assert_eq!(
        MmapPolicy::parse("read-around"),
        Some(MmapPolicy::ReadAround)
    );
    assert_eq!(MmapPolicy::parse("around"), None);
}
