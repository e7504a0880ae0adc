//! Readahead (`crate::readahead`, `docs/cache.md` "Readahead") against the in-memory file
//! system, wrapped so that every `read_pages` call is one request with a fixed cost.

use flashstack_sim::{Nanos, NS_PER_MS};
use proptest::prelude::*;

use crate::{
    Backing, BackingError, CacheConfig, Ino, MemBacking, MemBackingCosts, Page, PageCache,
    ReadaheadConfig, PAGE_SIZE_BYTES,
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
