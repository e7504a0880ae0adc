//! Tests of the page cache against the in-memory file system.

use std::collections::BTreeMap;

use flashstack_sim::{Nanos, NS_PER_MS, NS_PER_SEC};
use proptest::prelude::*;

use crate::{
    BackingCall, CacheConfig, Ino, MemBacking, MemBackingCosts, PageCache, WritebackReason,
    PAGE_SIZE_BYTES,
};

fn cache(config: CacheConfig) -> PageCache<MemBacking> {
    PageCache::new(config, MemBacking::new(MemBackingCosts::default())).unwrap()
}

/// The tiny cache with 10 MiB of memory, so that no threshold is reached.
fn roomy() -> CacheConfig {
    CacheConfig {
        memory_bytes: 10 << 20,
        ..CacheConfig::tiny()
    }
}

fn read_all(cache: &mut PageCache<MemBacking>, now_ns: Nanos, ino: Ino) -> Vec<u8> {
    let (size, _) = cache.file_size(now_ns, ino).unwrap();
    let mut buf = vec![0u8; size as usize];
    let (n, _) = cache.read(now_ns, ino, 0, &mut buf).unwrap();
    assert_eq!(n as u64, size);
    buf
}

fn write_calls(backing: &MemBacking, ino: Ino) -> Vec<(Nanos, u64, u64)> {
    backing
        .calls()
        .iter()
        .filter_map(|call| match *call {
            BackingCall::WritePages {
                at_ns,
                ino: i,
                first_page_index,
                page_count,
                ..
            } if i == ino => Some((at_ns, first_page_index, page_count)),
            _ => None,
        })
        .collect()
}

/// A partial write to an uncached page that holds data below must read it first, and the
/// bytes around the write must survive.
#[test]
fn partial_write_reads_the_page_from_below() {
    let mut cache = cache(roomy());
    cache.write(0, 1, 0, &[7u8; 6000]).unwrap();
    cache.fsync(NS_PER_MS, 1).unwrap();
    cache.crash();
    cache.write(2 * NS_PER_MS, 1, 100, &[9u8; 10]).unwrap();
    assert_eq!(cache.metrics().read_modify_write_reads, 1);
    let bytes = read_all(&mut cache, 3 * NS_PER_MS, 1);
    assert_eq!(bytes.len(), 6000);
    assert!(bytes[..100].iter().all(|&b| b == 7));
    assert!(bytes[100..110].iter().all(|&b| b == 9));
    assert!(bytes[110..].iter().all(|&b| b == 7));
    // A full-page overwrite and a write beyond end of file read nothing.
    cache.write(4 * NS_PER_MS, 1, 4096, &[1u8; 4096]).unwrap();
    cache
        .write(5 * NS_PER_MS, 1, 5 * 4096 + 10, &[2u8; 10])
        .unwrap();
    assert_eq!(cache.metrics().read_modify_write_reads, 1);
    let bytes = read_all(&mut cache, 6 * NS_PER_MS, 1);
    assert_eq!(bytes.len(), 5 * 4096 + 20);
    assert!(
        bytes[8192..5 * 4096 + 10].iter().all(|&b| b == 0),
        "the gap reads as zeros"
    );
}

/// fsync writes the file's dirty pages in page-index order, one call per contiguous run,
/// then reaches the file system's barrier.
#[test]
fn fsync_writes_runs_in_index_order_then_syncs() {
    let mut cache = cache(CacheConfig {
        writeback_batch_pages_max: 1024,
        ..roomy()
    });
    for page in [5u64, 3, 4, 9] {
        cache.write(0, 1, page * 4096, &[page as u8; 4096]).unwrap();
    }
    let done = cache.fsync(NS_PER_MS, 1).unwrap();
    let calls: Vec<_> = cache
        .backing()
        .calls()
        .iter()
        .filter(|c| !matches!(c, BackingCall::FileSize { .. }))
        .cloned()
        .collect();
    assert_eq!(
        calls,
        vec![
            BackingCall::WritePages {
                at_ns: NS_PER_MS + 1_000,
                ino: 1,
                first_page_index: 3,
                page_count: 3,
                file_size_bytes: 40960,
                sync: true
            },
            BackingCall::WritePages {
                at_ns: NS_PER_MS + 601_000,
                ino: 1,
                first_page_index: 9,
                page_count: 1,
                file_size_bytes: 40960,
                sync: true
            },
            BackingCall::Fsync {
                at_ns: NS_PER_MS + 801_000,
                ino: 1,
                data_only: false
            },
        ]
    );
    assert_eq!(done, NS_PER_MS + 1_801_000);
    assert_eq!(
        cache.metrics().pages_written_back[&WritebackReason::Fsync],
        4
    );
    assert_eq!(cache.backing().durable_bytes(1).unwrap().len(), 40960);
}

/// Reads are cached; clean pages are evicted least recently used first.
#[test]
fn reads_hit_and_evict_lru() {
    let mut cache = cache(CacheConfig {
        cache_bytes_max: 3 * 4096,
        ..roomy()
    });
    cache.write(0, 1, 0, &[1u8; 4 * 4096]).unwrap();
    cache.sync_all(NS_PER_MS).unwrap();
    cache.crash();
    let evictions_before = cache.metrics().evictions;
    let mut buf = [0u8; 4096];
    let mut now = 2 * NS_PER_MS;
    for page in [0u64, 1, 2, 0, 3, 0, 1] {
        cache.read(now, 1, page * 4096, &mut buf).unwrap();
        assert!(buf.iter().all(|&b| b == 1));
        now += NS_PER_MS;
    }
    // 0,1,2 miss; 0 hits; 3 misses and evicts 1; 0 hits; 1 misses and evicts 2.
    assert_eq!(cache.metrics().read_misses, 5);
    assert_eq!(cache.metrics().read_hits, 2);
    assert_eq!(cache.metrics().evictions - evictions_before, 2);
    assert_eq!(cache.cached_pages(), 3);
}

/// Truncate drops pages (dirty ones included) and zeroes the tail of the last one.
#[test]
fn truncate_drops_pages_and_zeroes_tail() {
    let mut cache = cache(roomy());
    cache.write(0, 1, 0, &[3u8; 3 * 4096]).unwrap();
    cache.truncate(NS_PER_MS, 1, 5000).unwrap();
    assert_eq!(cache.dirty_bytes(), 2 * 4096);
    cache.write(2 * NS_PER_MS, 1, 9000, &[4u8; 10]).unwrap();
    let bytes = read_all(&mut cache, 3 * NS_PER_MS, 1);
    assert_eq!(bytes.len(), 9010);
    assert!(bytes[..5000].iter().all(|&b| b == 3));
    assert!(bytes[5000..9000].iter().all(|&b| b == 0));
}

/// The background threshold starts the flusher at once; above the dirty limit the writer
/// writes back itself; a full cache of dirty pages forces writeback (pressure).
#[test]
fn thresholds_background_throttle_and_pressure() {
    let mut cache = cache(CacheConfig::tiny());
    // 10 KiB background, 20 KiB limit, 8 pages of cache, 2-page batches.
    let mut now = 0;
    for page in 0..12u64 {
        now = cache
            .write(now, 1, page * 4096, &[page as u8; 4096])
            .unwrap();
        assert!(cache.dirty_bytes() <= cache.config().dirty_limit_bytes());
        assert!(cache.cached_pages() <= 8);
    }
    let m = cache.metrics();
    assert!(
        m.pages_written_back
            .get(&WritebackReason::Background)
            .copied()
            .unwrap_or(0)
            > 0
    );
    assert!(
        m.pages_written_back
            .get(&WritebackReason::Throttle)
            .copied()
            .unwrap_or(0)
            > 0
    );
    assert_eq!(
        m.dirty_bytes_high_water,
        24 * 1024,
        "one page over the limit before throttling"
    );

    let mut small = self::cache(CacheConfig {
        cache_bytes_max: 2 * 4096,
        ..CacheConfig::tiny()
    });
    small.write(0, 1, 0, &[1u8; 3 * 4096]).unwrap();
    assert!(small.metrics().pages_written_back[&WritebackReason::Pressure] >= 1);
}

/// Dirty data is written back by expiry no earlier than 30 s and no later than 30 s + one
/// 5 s flusher interval after it was dirtied, whether time passes in idle gaps or calls.
#[test]
fn expiry_window_examples() {
    for t0 in [0, 1, 4_999_999_999, 5 * NS_PER_SEC, 7 * NS_PER_SEC + 3] {
        let mut cache = cache(CacheConfig::phone_4gib());
        cache.write(t0, 1, 0, &[1u8; 100]).unwrap();
        cache.advance_to(t0 + 35 * NS_PER_SEC).unwrap();
        let calls = write_calls(cache.backing(), 1);
        assert_eq!(calls.len(), 1, "t0 = {t0}");
        let at = calls[0].0;
        assert!(
            at >= t0 + 30 * NS_PER_SEC && at <= t0 + 35 * NS_PER_SEC,
            "t0 = {t0}, at = {at}"
        );
        assert_eq!(at % (5 * NS_PER_SEC), 0, "written at a flusher wake-up");
        assert_eq!(
            cache.metrics().pages_written_back[&WritebackReason::Expiry],
            1
        );
    }
}

#[test]
fn presets_and_validation() {
    assert_eq!(
        CacheConfig::preset("linux").unwrap(),
        CacheConfig::default()
    );
    assert_eq!(CacheConfig::preset("tiny").unwrap(), CacheConfig::tiny());
    assert!(CacheConfig::preset("nope").is_err());
    let bad = CacheConfig {
        dirty_background_ratio_percent: 30,
        ..CacheConfig::default()
    };
    assert!(bad.validate().is_err());
    let mut cache = cache(CacheConfig::tiny());
    cache.write(1, 4, 100, &[]).unwrap();
    assert_eq!(
        cache.file_size(2, 4).unwrap().0,
        0,
        "an empty write changes nothing"
    );
    cache.advance_to(10).unwrap();
    assert!(cache.advance_to(5).is_err(), "time may not go backwards");
}

/// Golden figures for one fixed sequence: any change to the policy or the mechanism that
/// moves a counter shows here.
#[test]
fn golden_counters() {
    let mut cache = cache(CacheConfig::tiny());
    let mut now = 0;
    for step in 0..40u64 {
        let ino = step % 3;
        let offset = (step * 5_003) % 40_000;
        now = cache.write(now, ino, offset, &[step as u8; 3_000]).unwrap() + NS_PER_MS;
        if step % 7 == 0 {
            now = cache.fsync(now, ino).unwrap();
        }
        if step % 5 == 0 {
            let mut buf = [0u8; 6_000];
            now = cache
                .read(now, (ino + 1) % 3, offset / 2, &mut buf)
                .unwrap()
                .1;
        }
        if step % 11 == 0 {
            now += 12 * NS_PER_SEC;
        }
    }
    cache.advance_to(now + 40 * NS_PER_SEC).unwrap();
    let m = cache.metrics().clone();
    let by_reason: BTreeMap<&str, u64> = m
        .pages_written_back
        .iter()
        .map(|(r, &n)| (r.name(), n))
        .collect();
    let golden_reasons: BTreeMap<&str, u64> = GOLDEN_REASONS.iter().copied().collect();
    assert_eq!(by_reason, golden_reasons);
    assert_eq!(
        (
            m.dirty_bytes_high_water,
            m.write_back_calls,
            m.read_hits,
            m.read_misses,
            m.read_modify_write_reads,
            m.evictions
        ),
        GOLDEN_COUNTS
    );
    assert_eq!(m.latency[&crate::CallKind::Write].total_ns, GOLDEN_WRITE_NS);
    assert_eq!(cache.dirty_bytes(), 0, "everything expired");
}

const GOLDEN_REASONS: &[(&str, u64)] = &[("background", 53), ("expiry", 2), ("fsync", 10)];
/// (dirty bytes high-water, write_pages calls, read hits, read misses, read-modify-write
/// reads, evictions).
const GOLDEN_COUNTS: (u64, u64, u64, u64, u64, u64) = (16_384, 40, 7, 10, 45, 64);
const GOLDEN_WRITE_NS: u64 = 4_602_500;

#[derive(Clone, Debug)]
enum Op {
    Write {
        ino: Ino,
        offset: u64,
        len: usize,
        fill: u8,
    },
    Read {
        ino: Ino,
        offset: u64,
        len: usize,
    },
    Truncate {
        ino: Ino,
        size: u64,
    },
    Fsync {
        ino: Ino,
        data_only: bool,
    },
    SyncAll,
    Unlink {
        ino: Ino,
    },
    Advance {
        gap_ns: Nanos,
    },
    Crash,
}

fn op() -> impl Strategy<Value = Op> {
    let ino = 0u64..3;
    prop_oneof![
        6 => (ino.clone(), 0u64..40_000, 1usize..9_000, any::<u8>())
            .prop_map(|(ino, offset, len, fill)| Op::Write { ino, offset, len, fill }),
        3 => (ino.clone(), 0u64..44_000, 1usize..9_000).prop_map(|(ino, offset, len)| Op::Read { ino, offset, len }),
        1 => (ino.clone(), 0u64..40_000).prop_map(|(ino, size)| Op::Truncate { ino, size }),
        2 => (ino.clone(), any::<bool>()).prop_map(|(ino, data_only)| Op::Fsync { ino, data_only }),
        1 => Just(Op::SyncAll),
        1 => ino.prop_map(|ino| Op::Unlink { ino }),
        2 => prop_oneof![0u64..100 * NS_PER_MS, 0u64..40 * NS_PER_SEC].prop_map(|gap_ns| Op::Advance { gap_ns }),
        1 => Just(Op::Crash),
    ]
}

fn pattern(fill: u8, len: usize) -> Vec<u8> {
    (0..len).map(|i| fill.wrapping_add((i / 7) as u8)).collect()
}

/// The model: each file's bytes now, and the bytes that must survive a crash (as of the last
/// barrier covering the file).
#[derive(Default)]
struct Model {
    files: BTreeMap<Ino, Vec<u8>>,
    durable: BTreeMap<Ino, Vec<u8>>,
}

fn check_file(
    cache: &mut PageCache<MemBacking>,
    now: Nanos,
    model: &Model,
    ino: Ino,
) -> Result<(), TestCaseError> {
    let expected = model.files.get(&ino).cloned().unwrap_or_default();
    let got = read_all(cache, now, ino);
    prop_assert_eq!(got.len(), expected.len(), "size of inode {}", ino);
    prop_assert!(got == expected, "contents of inode {}", ino);
    Ok(())
}

fn apply(
    cache: &mut PageCache<MemBacking>,
    model: &mut Model,
    now: &mut Nanos,
    op: &Op,
) -> Result<(), TestCaseError> {
    match *op {
        Op::Write {
            ino,
            offset,
            len,
            fill,
        } => {
            let data = pattern(fill, len);
            *now = cache.write(*now, ino, offset, &data).unwrap();
            let file = model.files.entry(ino).or_default();
            let end = offset as usize + len;
            if file.len() < end {
                file.resize(end, 0);
            }
            file[offset as usize..end].copy_from_slice(&data);
        }
        Op::Read { ino, offset, len } => {
            let mut buf = vec![0u8; len];
            let (n, done) = cache.read(*now, ino, offset, &mut buf).unwrap();
            *now = done;
            let file = model.files.get(&ino).cloned().unwrap_or_default();
            let start = (offset as usize).min(file.len());
            let end = (offset as usize + len).min(file.len());
            prop_assert_eq!(n, end - start);
            prop_assert!(
                buf[..n] == file[start..end],
                "read of inode {} at {}",
                ino,
                offset
            );
        }
        Op::Truncate { ino, size } => {
            *now = cache.truncate(*now, ino, size).unwrap();
            model.files.entry(ino).or_default().resize(size as usize, 0);
        }
        Op::Fsync { ino, data_only } => {
            *now = if data_only {
                cache.fdatasync(*now, ino)
            } else {
                cache.fsync(*now, ino)
            }
            .unwrap();
            match model.files.get(&ino) {
                Some(bytes) => model.durable.insert(ino, bytes.clone()),
                None => model.durable.remove(&ino),
            };
            // After the barrier the file system holds exactly the file.
            let below = cache.backing().volatile_bytes(ino).unwrap_or_default();
            prop_assert!(
                below == model.files.get(&ino).cloned().unwrap_or_default(),
                "fsync of inode {}",
                ino
            );
        }
        Op::SyncAll => {
            *now = cache.sync_all(*now).unwrap();
            model.durable = model.files.clone();
            prop_assert_eq!(cache.dirty_bytes(), 0);
        }
        Op::Unlink { ino } => {
            *now = cache.unlink(*now, ino).unwrap();
            model.files.remove(&ino);
        }
        Op::Advance { gap_ns } => {
            *now += gap_ns;
            cache.advance_to(*now).unwrap();
        }
        Op::Crash => {
            cache.crash();
            cache.backing_mut().power_loss();
            cache.backing_mut().power_on();
            model.files = model.durable.clone();
            for ino in 0..3 {
                check_file(cache, *now, model, ino)?;
            }
        }
    }
    *now += NS_PER_MS;
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// Random operation sequences with crashes against the model: reads return the last
    /// written bytes; after a crash every fsync'd byte survives and nothing else appears; the
    /// dirty limit and the capacity hold after every call.
    #[test]
    fn random_sequences_match_the_model(
        ops in prop::collection::vec(op(), 1..100),
        cache_pages in 2u64..12,
        batch_pages in 1u32..4,
    ) {
        let config = CacheConfig {
            cache_bytes_max: cache_pages * PAGE_SIZE_BYTES as u64,
            writeback_batch_pages_max: batch_pages,
            ..CacheConfig::tiny()
        };
        let mut cache = cache(config);
        let mut model = Model::default();
        let mut now = 0;
        for op in &ops {
            apply(&mut cache, &mut model, &mut now, op)?;
            prop_assert!(cache.cached_pages() <= cache_pages);
            prop_assert!(cache.dirty_bytes() <= cache.config().dirty_limit_bytes());
        }
        for ino in 0..3 {
            check_file(&mut cache, now, &model, ino)?;
        }
    }

    /// A page dirtied at `t0` is written back by expiry within [t0 + 30 s, t0 + 35 s], however
    /// time passes and whatever other files do.
    #[test]
    fn expiry_writes_back_within_30s_plus_one_interval(
        t0 in 0u64..20 * NS_PER_SEC,
        steps in prop::collection::vec((0u64..7 * NS_PER_SEC, any::<bool>()), 1..20),
    ) {
        let mut cache = cache(CacheConfig::phone_4gib());
        cache.write(t0, 1, 4096, &[5u8; 10]).unwrap();
        let mut now = t0;
        let deadline = t0 + 35 * NS_PER_SEC;
        for (gap, other_write) in steps {
            now = (now + gap).min(deadline);
            if other_write {
                now = cache.write(now, 2, 0, &[1u8; 10]).unwrap();
            } else {
                cache.advance_to(now).unwrap();
            }
        }
        cache.advance_to(deadline.max(now)).unwrap();
        prop_assert!(!cache.is_dirty(1, 1));
        let calls = write_calls(cache.backing(), 1);
        prop_assert_eq!(calls.len(), 1);
        prop_assert!(calls[0].0 >= t0 + 30 * NS_PER_SEC && calls[0].0 <= deadline);
    }
}

/// A policy that defers fsync and never flushes (the shape of MobiFS's in-memory
/// transactions): fsync reaches nothing below, and a crash loses the data. The seam works
/// without touching the mechanism.
struct DeferAll;

impl crate::WritebackPolicy for DeferAll {
    fn flusher(&self, _view: &crate::DirtyView) -> crate::FlusherDecision {
        crate::FlusherDecision::Idle
    }

    fn writer(&self, _view: &crate::DirtyView) -> crate::WriterDecision {
        crate::WriterDecision::Proceed
    }

    fn fsync(&self, _ino: Ino, _data_only: bool) -> crate::FsyncDecision {
        crate::FsyncDecision::Defer
    }
}

#[test]
fn policy_seam_can_defer_fsync() {
    let backing = MemBacking::new(MemBackingCosts::default());
    let mut cache = PageCache::with_policy(roomy(), DeferAll, backing).unwrap();
    cache.write(0, 1, 0, &[8u8; 4096]).unwrap();
    let done = cache.fsync(NS_PER_MS, 1).unwrap();
    assert_eq!(
        done,
        NS_PER_MS + 1_000,
        "a deferred fsync costs only the call"
    );
    cache.advance_to(100 * NS_PER_SEC).unwrap();
    assert!(cache.is_dirty(1, 0), "no expiry under this policy");
    assert!(write_calls(cache.backing(), 1).is_empty());
    assert_eq!(cache.crash(), 1);
    cache.backing_mut().power_loss();
    assert_eq!(cache.backing().durable_bytes(1), None);
}

/// The configuration round-trips through serde and rejects unknown fields.
#[test]
fn config_serde_round_trip() {
    let config = CacheConfig::phone_4gib();
    let json = serde_json::to_string(&config).unwrap();
    let back: CacheConfig = serde_json::from_str(&json).unwrap();
    assert_eq!(back, config);
    let partial: CacheConfig = serde_json::from_str(r#"{"dirty_ratio_percent": 40}"#).unwrap();
    assert_eq!(partial.dirty_ratio_percent, 40);
    assert_eq!(partial.dirty_expire_ns, 30 * NS_PER_SEC);
    assert!(serde_json::from_str::<CacheConfig>(r#"{"dirty_ratio": 40}"#).is_err());
}

/// Latency in virtual time: a cached write costs the call and the copies; fsync adds the
/// writeback and the barrier; throttled writers pay for their writeback.
#[test]
fn call_latency_in_virtual_time() {
    let mut cache = cache(roomy());
    let done = cache.write(0, 1, 0, &[1u8; 2 * 4096]).unwrap();
    // Overhead, the first-use size query below (10 µs), two page copies.
    assert_eq!(done, 1_000 + 10_000 + 2 * 500);
    let done = cache.fsync(NS_PER_MS, 1).unwrap();
    assert_eq!(done - NS_PER_MS, 1_000 + 2 * 200_000 + 1_000_000);
    let mut throttled = self::cache(CacheConfig::tiny());
    let mut now = 0;
    for page in 0..8u64 {
        now = throttled.write(now, 1, page * 4096, &[1u8; 4096]).unwrap();
    }
    let write = throttled.metrics().latency[&crate::CallKind::Write];
    assert_eq!(write.count, 8);
    assert!(
        write.max_ns >= 200_000,
        "a throttled write waits for a page program"
    );
}

/// Records the hint of every writeback and forwards everything to a [`MemBacking`].
struct HintSpy {
    inner: MemBacking,
    hints: Vec<(u64, u64, crate::WritebackHint)>,
}

impl crate::Backing for HintSpy {
    fn read_page(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        page_index: u64,
        page: &mut crate::Page,
    ) -> Result<Nanos, crate::BackingError> {
        self.inner.read_page(now_ns, ino, page_index, page)
    }
    fn write_pages(
        &mut self,
        _: Nanos,
        _: Ino,
        _: u64,
        _: &[&crate::Page],
        _: u64,
        _: bool,
    ) -> Result<Nanos, crate::BackingError> {
        panic!("the cache must call write_pages_hinted")
    }
    fn write_pages_hinted(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        first_page_index: u64,
        pages: &[&crate::Page],
        file_size_bytes: u64,
        hint: crate::WritebackHint,
    ) -> Result<Nanos, crate::BackingError> {
        self.hints
            .push((first_page_index, pages.len() as u64, hint));
        self.inner.write_pages(
            now_ns,
            ino,
            first_page_index,
            pages,
            file_size_bytes,
            hint.sync,
        )
    }
    fn fsync(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        data_only: bool,
    ) -> Result<Nanos, crate::BackingError> {
        self.inner.fsync(now_ns, ino, data_only)
    }
    fn sync_all(&mut self, now_ns: Nanos) -> Result<Nanos, crate::BackingError> {
        self.inner.sync_all(now_ns)
    }
    fn truncate(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        size_bytes: u64,
    ) -> Result<Nanos, crate::BackingError> {
        self.inner.truncate(now_ns, ino, size_bytes)
    }
    fn unlink(&mut self, now_ns: Nanos, ino: Ino) -> Result<Nanos, crate::BackingError> {
        self.inner.unlink(now_ns, ino)
    }
    fn file_size(&mut self, now_ns: Nanos, ino: Ino) -> Result<(u64, Nanos), crate::BackingError> {
        self.inner.file_size(now_ns, ino)
    }
}

/// Every run of one writeback carries the inode's dirty-page count at the start of that
/// writeback (not the run's length), the reason and the sync flag.
#[test]
fn writeback_hint_carries_inode_dirty_pages() {
    let spy = HintSpy {
        inner: MemBacking::new(MemBackingCosts::default()),
        hints: Vec::new(),
    };
    // Batches of two pages: the fsync's writeback takes three batches, four runs.
    let mut cache = PageCache::new(roomy(), spy).unwrap();
    assert_eq!(cache.config().writeback_batch_pages_max, 2);
    let page = [5u8; PAGE_SIZE_BYTES];
    // Two runs: pages 0..3 and 10..12, five dirty pages in all.
    for index in [0u64, 1, 2, 10, 11] {
        cache
            .write(0, 7, index * PAGE_SIZE_BYTES as u64, &page)
            .unwrap();
    }
    cache.fsync(NS_PER_MS, 7).unwrap();
    let hints = &cache.backing().hints;
    let runs: Vec<(u64, u64)> = hints.iter().map(|h| (h.0, h.1)).collect();
    assert_eq!(runs, vec![(0, 2), (2, 1), (10, 1), (11, 1)]);
    for (_, _, hint) in hints {
        assert_eq!(hint.inode_dirty_pages, 5);
        assert_eq!(hint.reason, WritebackReason::Fsync);
        assert!(hint.sync && hint.is_fsync());
    }
    // The flusher's expiry writeback is asynchronous and not an fsync.
    cache.write(2 * NS_PER_MS, 7, 0, &page).unwrap();
    cache.advance_to(60 * NS_PER_SEC).unwrap();
    let last = cache.backing().hints.last().unwrap().2;
    assert_eq!(last.inode_dirty_pages, 1);
    assert_eq!(last.reason, WritebackReason::Expiry);
    assert!(!last.sync && !last.is_fsync());
}

/// An atomic write is staged: readable at once, never written back (not even after the
/// expiry time), durable only at its commit; an abort or a crash leaves the old content.
#[test]
fn atomic_writes_are_staged_until_commit() {
    let mut cache = cache(roomy());
    cache.write(0, 1, 0, &[1u8; 10_000]).unwrap();
    cache.atomic_begin(NS_PER_MS, 1).unwrap();
    // The writes before begin went down (not durable): the kernel's flush at start.
    let flushed = write_calls(cache.backing(), 1).len();
    assert!(flushed >= 1);
    assert!(!cache.is_dirty(1, 0));
    cache
        .write(2 * NS_PER_MS, 1, 5_000, &[2u8; 10_000])
        .unwrap();
    cache.truncate(3 * NS_PER_MS, 1, 12_000).unwrap();
    let mut expect = vec![1u8; 12_000];
    expect[5_000..].fill(2);
    assert_eq!(read_all(&mut cache, 4 * NS_PER_MS, 1), expect);
    cache.advance_to(60 * NS_PER_SEC).unwrap();
    assert_eq!(write_calls(cache.backing(), 1).len(), flushed);
    assert!(cache.is_atomic(1));
    cache.atomic_abort(60 * NS_PER_SEC, 1).unwrap();
    assert_eq!(read_all(&mut cache, 61 * NS_PER_SEC, 1), vec![1u8; 10_000]);

    cache.atomic_begin(62 * NS_PER_SEC, 1).unwrap();
    cache
        .write(63 * NS_PER_SEC, 1, 8_000, &[3u8; 4_000])
        .unwrap();
    cache.atomic_commit(64 * NS_PER_SEC, 1).unwrap();
    let mut committed = vec![1u8; 12_000];
    committed[8_000..].fill(3);
    assert_eq!(cache.backing().durable_bytes(1).unwrap(), committed);
    assert_eq!(read_all(&mut cache, 65 * NS_PER_SEC, 1), committed);

    cache.atomic_begin(66 * NS_PER_SEC, 1).unwrap();
    cache.write(67 * NS_PER_SEC, 1, 0, &[4u8; 100]).unwrap();
    cache.crash();
    cache.backing_mut().power_loss();
    cache.backing_mut().power_on();
    assert!(!cache.is_atomic(1));
    assert_eq!(read_all(&mut cache, 68 * NS_PER_SEC, 1), committed);
}
