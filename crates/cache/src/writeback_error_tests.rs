//! Linux's rule for writeback errors, against an in-memory file system that fails writes
//! on demand: a failed writeback marks the pages clean (their data lost) and keeps the
//! error for the file's next fsync or fdatasync, which reports it once; `sync_all` reports
//! it once too, separately; power loss is not a writeback error.

use flashstack_sim::{NS_PER_MS, NS_PER_SEC};

use crate::{
    BackingError, CacheConfig, CacheError, MemBacking, MemBackingCosts, PageCache, PAGE_SIZE_BYTES,
};

fn cache() -> PageCache<MemBacking> {
    let config = CacheConfig {
        memory_bytes: 10 << 20,
        ..CacheConfig::tiny()
    };
    PageCache::new(config, MemBacking::new(MemBackingCosts::default())).unwrap()
}

fn full(ino: u64) -> Option<BackingError> {
    Some(BackingError::NoSpace { ino })
}

/// The flusher's writeback fails: the writer was told its write succeeded; the file's next
/// fsync reports the error, once; the pages are clean (not retried), the data lost below.
#[test]
fn a_failed_flusher_writeback_is_reported_by_the_next_fsync_once() {
    let mut cache = cache();
    cache.backing_mut().fail_writes(1, full(1));
    cache.write(0, 1, 0, &[7u8; 3 * PAGE_SIZE_BYTES]).unwrap();
    cache.write(0, 2, 0, b"other file").unwrap();
    // Past the expiry: the flusher writes both back; file 1's writeback fails.
    cache.advance_to(40 * NS_PER_SEC).unwrap();
    assert!(!cache.is_dirty(1, 0), "the failed pages are marked clean");
    assert!(cache.has_writeback_error(1));
    assert!(!cache.has_writeback_error(2));
    assert_eq!(
        cache.metrics().writeback_errors,
        2,
        "two batches of two pages"
    );
    assert_eq!(cache.metrics().writeback_pages_lost, 3);
    let (seen, latest) = cache.writeback_errors_seen();
    assert_eq!(seen, 2);
    assert_eq!(latest, Some(&(1, BackingError::NoSpace { ino: 1 })));
    // Writes still work (nothing is wedged), and other files' fsyncs are unaffected.
    cache.backing_mut().fail_writes(1, None);
    cache.write(41 * NS_PER_SEC, 2, 0, b"again").unwrap();
    cache.fsync(41 * NS_PER_SEC, 2).unwrap();
    // The file's fsync reports the error after running its barrier...
    let t = 42 * NS_PER_SEC;
    match cache.fsync(t, 1) {
        Err(CacheError::Writeback {
            ino: 1,
            error: BackingError::NoSpace { ino: 1 },
            done_ns,
        }) => assert!(done_ns > t),
        other => panic!("expected the writeback error, got {other:?}"),
    }
    assert_eq!(
        cache.backing().durable_bytes(1),
        None,
        "the data never got down"
    );
    // ...once: the next fsync of the file succeeds.
    cache.fsync(43 * NS_PER_SEC, 1).unwrap();
    cache.fdatasync(43 * NS_PER_SEC, 1).unwrap();
    // Reported to the file already: sync has nothing to report.
    cache.sync_all(44 * NS_PER_SEC).unwrap();
}

/// A sync before the file's fsync reports the failure too; the file's fsync still does
/// (its own errseq), once; a later sync does not.
#[test]
fn sync_reports_failures_no_fsync_reported() {
    let mut cache = cache();
    cache.backing_mut().fail_writes(3, full(3));
    cache.write(0, 3, 0, b"lost").unwrap();
    cache.write(0, 4, 0, b"kept").unwrap();
    match cache.sync_all(NS_PER_MS) {
        Err(CacheError::Writeback {
            ino: 3, done_ns, ..
        }) => assert!(done_ns > NS_PER_MS),
        other => panic!("expected the writeback error, got {other:?}"),
    }
    assert_eq!(cache.backing().durable_bytes(4).unwrap(), b"kept");
    cache.sync_all(2 * NS_PER_MS).unwrap();
    assert!(cache.fsync(3 * NS_PER_MS, 3).is_err());
    cache.fsync(4 * NS_PER_MS, 3).unwrap();
    cache.sync_all(5 * NS_PER_MS).unwrap();
}

/// fsync's own writeback fails: that fsync reports it (fdatasync alike), and a rewrite
/// after the device recovers is written and made durable.
#[test]
fn an_fsync_whose_writeback_fails_reports_it() {
    let mut cache = cache();
    cache.write(0, 1, 0, b"durable").unwrap();
    cache.fsync(NS_PER_MS, 1).unwrap();
    cache.write(2 * NS_PER_MS, 1, 0, b"lost!!!").unwrap();
    cache.backing_mut().fail_writes(
        1,
        Some(BackingError::Io {
            ino: 1,
            reason: "media error".into(),
        }),
    );
    assert!(matches!(
        cache.fdatasync(3 * NS_PER_MS, 1),
        Err(CacheError::Writeback {
            error: BackingError::Io { .. },
            ..
        })
    ));
    assert_eq!(cache.backing().durable_bytes(1).unwrap(), b"durable");
    // The cache still shows the data the program wrote (as Linux's clean page does).
    let mut buf = [0u8; 7];
    cache.read(4 * NS_PER_MS, 1, 0, &mut buf).unwrap();
    assert_eq!(&buf, b"lost!!!");
    cache.backing_mut().fail_writes(1, None);
    cache.fsync(5 * NS_PER_MS, 1).unwrap();
    cache.write(6 * NS_PER_MS, 1, 0, b"rewrite").unwrap();
    cache.fsync(7 * NS_PER_MS, 1).unwrap();
    assert_eq!(cache.backing().durable_bytes(1).unwrap(), b"rewrite");
}

/// A throttled writer or a full cache writing back another file's pages is not failed by
/// that file's error: the write succeeds, the victim's fsync hears about it.
#[test]
fn pressure_writeback_errors_go_to_the_victim_not_the_writer() {
    let mut cache = PageCache::new(
        CacheConfig::tiny(),
        MemBacking::new(MemBackingCosts::default()),
    )
    .unwrap();
    cache.backing_mut().fail_writes(1, full(1));
    cache.write(0, 1, 0, &[1u8; 2 * PAGE_SIZE_BYTES]).unwrap();
    // 20 KiB is the dirty limit of the tiny cache: writing more throttles the writer,
    // which writes back file 1 first (the longest dirty).
    for k in 0..8u64 {
        cache
            .write(NS_PER_MS, 2, k * 4096, &[2u8; PAGE_SIZE_BYTES])
            .unwrap();
    }
    assert!(cache.has_writeback_error(1));
    assert!(!cache.has_writeback_error(2));
    cache.fsync(2 * NS_PER_MS, 2).unwrap();
    assert!(cache.fsync(3 * NS_PER_MS, 1).is_err());
}

/// Unlink drops the file's pending error (nobody is left to tell), crash drops all.
#[test]
fn unlink_and_crash_forget_pending_errors() {
    let mut cache = cache();
    for ino in [1, 2] {
        cache.backing_mut().fail_writes(ino, full(ino));
        cache.write(0, ino, 0, b"doomed").unwrap();
    }
    cache.advance_to(40 * NS_PER_SEC).unwrap();
    assert!(cache.has_writeback_error(1) && cache.has_writeback_error(2));
    cache.unlink(41 * NS_PER_SEC, 1).unwrap();
    assert!(!cache.has_writeback_error(1));
    assert!(cache.has_writeback_error(2));
    cache.crash();
    assert!(!cache.has_writeback_error(2));
    cache.backing_mut().fail_writes(2, None);
    cache.fsync(42 * NS_PER_SEC, 2).unwrap();
    cache.sync_all(43 * NS_PER_SEC).unwrap();
    assert_eq!(
        cache.writeback_errors_seen().0,
        2,
        "the count never goes back"
    );
}

/// Power loss below is not a writeback error: the call fails, the pages stay dirty (a
/// power cut loses them with the cache), and nothing is kept for a later fsync.
#[test]
fn power_loss_is_not_a_writeback_error() {
    let mut cache = cache();
    cache.write(0, 1, 0, b"in flight").unwrap();
    cache.backing_mut().power_loss();
    assert_eq!(
        cache.fsync(NS_PER_MS, 1),
        Err(CacheError::Backing(BackingError::PoweredOff))
    );
    assert!(cache.is_dirty(1, 0));
    assert!(!cache.has_writeback_error(1));
    assert_eq!(cache.metrics().writeback_errors, 0);
    assert_eq!(cache.crash(), 1);
}

/// Without failures the new counters stay out of the serialized metrics (reports and
/// golden outputs unchanged).
#[test]
fn metrics_without_failures_serialize_as_before() {
    let mut cache = cache();
    cache.write(0, 1, 0, b"x").unwrap();
    cache.fsync(NS_PER_MS, 1).unwrap();
    let json = serde_json::to_string(cache.metrics()).unwrap();
    assert!(!json.contains("writeback_errors") && !json.contains("writeback_pages_lost"));
}
