//! `readahead = off` (the default) is today's cache, byte for byte: a fixed mix of
//! sequential and random reads, writes, fsyncs and cache drops gives the counters, the
//! completion time and the file-system call log recorded before readahead existed.

use flashstack_cache::{
    BackingCall, CacheConfig, MemBacking, MemBackingCosts, MmapPolicy, PageCache, ReadaheadConfig,
};

/// A fixed pseudo-random sequence (an LCG: no dependence on a PRNG crate's versions).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % below
    }
}

/// The completion time, calls, page reads and a digest of the call log, and the metrics.
type Outcome = ((u64, usize, usize, u64), String);

fn run(readahead: ReadaheadConfig) -> Outcome {
    run_scans(readahead, false)
}

/// The sequence, its 4 KiB scans made as reads or (`faults`) as faults on a mapping.
fn run_scans(readahead: ReadaheadConfig, faults: bool) -> Outcome {
    let config = CacheConfig {
        cache_bytes_max: 64 * 4096,
        readahead,
        ..CacheConfig::phone_4gib()
    };
    let mut cache = PageCache::new(config, MemBacking::new(MemBackingCosts::default())).unwrap();
    let mut rng = Lcg(15);
    let mut t = 0;
    let mut buf = vec![0u8; 64 * 1024];
    for step in 0..600u64 {
        let ino = 1 + rng.next(3);
        match rng.next(10) {
            0..=2 => {
                let offset = rng.next(96) * 4096;
                let len = 1 + rng.next(20_000) as usize;
                t = cache.write(t, ino, offset, &vec![step as u8; len]).unwrap();
            }
            3..=5 => {
                // A sequential scan in 4 KiB calls.
                let first = rng.next(64);
                for k in first..first + 1 + rng.next(32) {
                    t = match faults {
                        true => cache.fault(t, ino, k * 4096, &mut buf[..4096]),
                        false => cache.read(t, ino, k * 4096, &mut buf[..4096]),
                    }
                    .unwrap()
                    .1;
                }
            }
            6 | 7 => {
                let offset = rng.next(96 * 4096);
                let len = 1 + rng.next(buf.len() as u64) as usize;
                t = cache.read(t, ino, offset, &mut buf[..len]).unwrap().1;
            }
            8 => t = cache.fsync(t, ino).unwrap(),
            _ => {
                cache.sync_all(t).unwrap();
                cache.drop_clean_pages();
            }
        }
        t += 1_000_000;
    }
    let calls = cache.backing().calls();
    let reads = calls
        .iter()
        .filter(|c| matches!(c, BackingCall::ReadPage { .. }))
        .count();
    let digest = calls.iter().fold(0u64, |h, call| {
        format!("{call:?}")
            .bytes()
            .fold(h, |h, b| h.wrapping_mul(1099511628211) ^ u64::from(b))
    });
    let metrics = serde_json::to_string(cache.metrics()).unwrap();
    ((t, calls.len(), reads, digest), metrics)
}

#[test]
fn readahead_off_is_byte_identical_to_the_cache_without_readahead() {
    let (calls, metrics) = run(ReadaheadConfig::default());
    assert_eq!(calls, GOLDEN_CALLS);
    assert_eq!(metrics, GOLDEN_METRICS);
    // The same sequence with readahead reads fewer, larger runs: the golden can tell.
    let (on, on_metrics) = run(ReadaheadConfig::linux());
    assert!(on.2 > 0 && on != calls, "{on:?}");
    assert!(on_metrics.contains("readahead_hits"));
}

/// `mmap = off` (the default) takes a fault as a one-page read: the same sequence with its
/// scans made as faults is still the golden, under either readahead policy; read-around
/// changes it.
#[test]
fn mmap_off_faults_are_byte_identical_to_reads() {
    assert_eq!(
        run_scans(ReadaheadConfig::default(), true),
        (GOLDEN_CALLS, GOLDEN_METRICS.to_string())
    );
    assert_eq!(
        run_scans(ReadaheadConfig::linux(), true),
        run(ReadaheadConfig::linux())
    );
    let around = ReadaheadConfig {
        mmap: MmapPolicy::ReadAround,
        ..ReadaheadConfig::default()
    };
    let (calls, metrics) = run_scans(around, true);
    assert!(calls != GOLDEN_CALLS, "{calls:?}");
    assert!(metrics.contains("mmap_windows"), "{metrics}");
}

/// Recorded on main before readahead existed (commit 2b01cb2).
const GOLDEN_CALLS: (u64, usize, usize, u64) = (1042086500, 3971, 3483, 16610750452239538162);
const GOLDEN_METRICS: &str = r#"{"dirty_bytes_high_water":94208,"pages_written_back":{"fsync":91,"sync":314},"write_back_calls":135,"read_hits":557,"read_misses":3362,"read_modify_write_reads":121,"evictions":1116,"dirty_pages_lost":0,"latency":{"read":{"count":3124,"total_ns":342753500,"max_ns":1719500},"write":{"count":149,"total_ns":13065000,"max_ns":113500},"fsync":{"count":68,"total_ns":86268000,"max_ns":2801000},"sync":{"count":78,"total_ns":140878000,"max_ns":5601000}}}"#;
