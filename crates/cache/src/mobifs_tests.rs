//! MobiFS's versioned cache transactions against the in-memory file system
//! (`docs/mobifs.md`).

use flashstack_sim::{Nanos, NS_PER_MS, NS_PER_SEC};
use proptest::prelude::*;

use crate::{
    BackingCall, CacheConfig, Ino, MemBacking, MemBackingCosts, PageCache, PolicyName,
    PAGE_SIZE_BYTES,
};

const BOUND_NS: Nanos = 4 * NS_PER_SEC;

fn mobifs(cache_pages: u64) -> CacheConfig {
    let mut config = CacheConfig {
        memory_bytes: 10 << 20,
        cache_bytes_max: cache_pages * PAGE_SIZE_BYTES as u64,
        ..CacheConfig::tiny()
    };
    config.policy = PolicyName::Mobifs;
    config.mobifs.staleness_bound_ns = BOUND_NS;
    config.mobifs.checkpoint_reserve_ns = NS_PER_SEC;
    config
}

fn cache(config: CacheConfig) -> PageCache<MemBacking> {
    PageCache::new(config, MemBacking::new(MemBackingCosts::default())).unwrap()
}

fn commits(cache: &PageCache<MemBacking>) -> Vec<(Nanos, u64)> {
    cache
        .backing()
        .calls()
        .iter()
        .filter_map(|c| match *c {
            BackingCall::CommitBatch { at_ns, pages, .. } => Some((at_ns, pages)),
            BackingCall::WritePages { .. } | BackingCall::Fsync { .. } => {
                panic!("MobiFS writes only by checkpoints: {c:?}")
            }
            _ => None,
        })
        .collect()
}

#[test]
fn fsync_seals_in_memory_and_a_checkpoint_comes_within_the_bound() {
    let mut c = cache(mobifs(16));
    c.write(0, 1, 0, &[1u8; 5000]).unwrap();
    let done = c.fsync(NS_PER_MS, 1).unwrap();
    assert_eq!(
        done,
        NS_PER_MS + c.config().call_overhead_ns,
        "memory speed"
    );
    assert!(commits(&c).is_empty());
    assert_eq!(c.backing().durable_bytes(1), None);
    c.advance_to(NS_PER_MS + BOUND_NS).unwrap();
    // Due at seal + bound - reserve, one commit of both pages.
    assert_eq!(commits(&c), vec![(NS_PER_MS + BOUND_NS - NS_PER_SEC, 2)]);
    assert_eq!(c.backing().durable_bytes(1), Some(vec![1u8; 5000]));
    let m = &c.metrics().transactions;
    assert_eq!(
        (m.seals, m.checkpoints, m.persisted_transactions),
        (1, 1, 1)
    );
    assert_eq!(m.staleness_bound_overruns, 0);
    assert!(m.staleness_ns_max <= BOUND_NS);
    // The pages are clean now: evictable.
    assert!(!c.is_dirty(1, 0));
}

#[test]
fn a_write_after_the_seal_copies_the_sealed_version() {
    let mut c = cache(mobifs(16));
    c.write(0, 1, 0, &[1u8; 4096]).unwrap();
    c.fsync(NS_PER_MS, 1).unwrap();
    c.write(2 * NS_PER_MS, 1, 0, &[2u8; 100]).unwrap();
    assert_eq!(c.metrics().transactions.cow_copies, 1);
    assert_eq!(c.resident_pages(), 2);
    c.check_tx_invariants();
    c.advance_to(BOUND_NS + NS_PER_MS).unwrap();
    // The checkpoint wrote the sealed version; the new bytes stay dirty in memory.
    assert_eq!(c.backing().durable_bytes(1), Some(vec![1u8; 4096]));
    assert!(c.is_dirty(1, 0));
    let mut buf = [0u8; 4];
    c.read(BOUND_NS + 2 * NS_PER_MS, 1, 98, &mut buf).unwrap();
    assert_eq!(buf, [2, 2, 1, 1]);
    assert_eq!(c.resident_pages(), 1, "the copy is freed");
    c.sync_all(BOUND_NS + 3 * NS_PER_MS).unwrap();
    let mut want = vec![1u8; 4096];
    want[..100].fill(2);
    assert_eq!(c.backing().durable_bytes(1), Some(want));
}

#[test]
fn writes_coalesce_within_a_transaction() {
    let mut c = cache(mobifs(16));
    for k in 0..10u64 {
        c.write(k * NS_PER_MS, 1, k * 10, &[k as u8; 10]).unwrap();
    }
    c.fsync(20 * NS_PER_MS, 1).unwrap();
    c.sync_all(30 * NS_PER_MS).unwrap();
    assert_eq!(c.metrics().transactions.coalesced_writes, 9);
    assert_eq!(commits(&c).iter().map(|&(_, p)| p).sum::<u64>(), 1);
}

#[test]
fn memory_pressure_forces_checkpoints_and_the_page_limit_holds() {
    let mut c = cache(mobifs(8));
    c.set_owner(1, 0);
    c.set_owner(2, 1);
    let mut t = 0;
    for k in 0..40u64 {
        let ino = 1 + k % 2;
        t += NS_PER_MS;
        c.write(t, ino, (k % 12) * 4096, &[k as u8; 4096]).unwrap();
        c.check_tx_invariants();
        if k % 5 == 4 {
            c.fsync(t, ino).unwrap();
        }
    }
    let m = c.metrics().transactions.clone();
    assert!(m.forced_seals > 0 && m.checkpoints > 0, "{m:?}");
    assert!(c.resident_pages() <= 8);
}

/// One step of the model test.
#[derive(Clone, Debug)]
enum Op {
    Write {
        ino: Ino,
        offset: u64,
        len: usize,
        fill: u8,
    },
    Truncate {
        ino: Ino,
        size: u64,
    },
    Fsync(Ino),
    Read {
        ino: Ino,
        offset: u64,
        len: usize,
    },
    Wait {
        ms: u64,
    },
    Crash,
}

fn op() -> impl Strategy<Value = Op> {
    let ino = 1..4u64;
    prop_oneof![
        4 => (ino.clone(), 0..30_000u64, 1..9_000usize, 1..255u8)
            .prop_map(|(ino, offset, len, fill)| Op::Write { ino, offset, len, fill }),
        1 => (ino.clone(), 0..30_000u64).prop_map(|(ino, size)| Op::Truncate { ino, size }),
        2 => ino.clone().prop_map(Op::Fsync),
        1 => (ino, 0..30_000u64, 1..9_000usize)
            .prop_map(|(ino, offset, len)| Op::Read { ino, offset, len }),
        1 => (1..6_000u64).prop_map(|ms| Op::Wait { ms }),
        1 => Just(Op::Crash),
    ]
}

/// Files 1 and 2 belong to app 0, file 3 to app 1.
fn app_of(ino: Ino) -> usize {
    usize::from(ino == 3)
}

type Files = [Vec<u8>; 3];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Reads return the latest bytes; after a crash each app's files are exactly one of
    /// its sealed states (none older than the last one known durable), lost seals within
    /// the bound; the page limit and the transactions' invariants hold after every call.
    #[test]
    fn transactions_match_the_model(
        ops in prop::collection::vec(op(), 1..60),
        pages in 6..14u64,
        seal in 0..3u8,
    ) {
        let mut config = mobifs(pages);
        match seal {
            0 => config.mobifs.seal = crate::SealPolicy::EverySync,
            // The e-curve sampled fast enough to peak well within the 4 s bound.
            1 => {
                config.mobifs.adaptive.sample_interval_ns = 50 * NS_PER_MS;
                config.mobifs.adaptive.window_samples = 3;
            }
            _ => {}
        }
        let mut c = cache(config);
        c.set_owner(1, 0);
        c.set_owner(2, 0);
        c.set_owner(3, 1);
        let mut files: Files = Default::default();
        // Per app: (seal time, files) since the last state known durable.
        let mut sealed: Vec<Vec<(Nanos, Files)>> = vec![vec![(0, files.clone())]; 2];
        let mut seals = [0u64; 2];
        let mut t: Nanos = 0;
        for op in ops {
            t += NS_PER_MS;
            let before = files.clone();
            match op {
                Op::Write { ino, offset, len, fill } => {
                    c.write(t, ino, offset, &vec![fill; len]).unwrap();
                    let f = &mut files[ino as usize - 1];
                    let end = offset as usize + len;
                    if f.len() < end { f.resize(end, 0); }
                    f[offset as usize..end].fill(fill);
                }
                Op::Truncate { ino, size } => {
                    c.truncate(t, ino, size).unwrap();
                    files[ino as usize - 1].resize(size as usize, 0);
                }
                Op::Fsync(ino) => { c.fsync(t, ino).unwrap(); }
                Op::Read { ino, offset, len } => {
                    let mut buf = vec![0u8; len];
                    let (n, _) = c.read(t, ino, offset, &mut buf).unwrap();
                    let f = &files[ino as usize - 1];
                    let want = f.get(offset as usize..f.len().min(offset as usize + len)).unwrap_or(&[]);
                    prop_assert_eq!(&buf[..n], want);
                }
                Op::Wait { ms } => { t += ms * NS_PER_MS; c.advance_to(t).unwrap(); }
                Op::Crash => {
                    c.crash();
                    #[allow(clippy::needless_range_loop, reason = "app numbers, not positions")]
                    for app in 0..2 {
                        let inos: Vec<usize> = (0..3).filter(|&i| app_of(i as u64 + 1) == app).collect();
                        let found: Vec<Vec<u8>> = inos.iter()
                            .map(|&i| c.backing().durable_bytes(i as u64 + 1).unwrap_or_default())
                            .collect();
                        let at = sealed[app].iter().rposition(|(_, s)| {
                            inos.iter().zip(&found).all(|(&i, f)| s[i] == *f)
                        });
                        prop_assert!(at.is_some(), "app {} at no sealed state", app);
                        let at = at.unwrap();
                        if let Some((sealed_ns, _)) = sealed[app].get(at + 1) {
                            prop_assert!(t - sealed_ns <= BOUND_NS, "lost {} ns", t - sealed_ns);
                        }
                        for (&i, f) in inos.iter().zip(found) { files[i] = f; }
                    }
                    c.backing_mut().power_loss();
                    c.backing_mut().power_on();
                    for (app, states) in sealed.iter_mut().enumerate() {
                        *states = vec![(t, files.clone())];
                        seals[app] = c.tx_seals(app as u32);
                    }
                }
            }
            c.check_tx_invariants();
            for app in 0..2 {
                let now = c.tx_seals(app as u32);
                if now > seals[app] {
                    prop_assert_eq!(now, seals[app] + 1);
                    seals[app] = now;
                    let own_write = matches!(op, Op::Write { ino, .. } | Op::Truncate { ino, .. } if app_of(ino) == app);
                    sealed[app].push((t, if own_write { before.clone() } else { files.clone() }));
                }
            }
        }
        let m = &c.metrics().transactions;
        prop_assert_eq!(m.staleness_bound_overruns, 0);
    }
}

/// `checkpoint = "idle"` with a 30 s bound: τ (3 s) after the user's last input the
/// sealed data is checkpointed, long before the bound; while the user keeps typing
/// nothing is written; the screen going off checkpoints what is sealed at once.
#[test]
fn idle_timing_checkpoints_in_predicted_idle_and_before_standby() {
    use crate::adaptive::Input;
    let mut config = mobifs(16);
    config.mobifs.staleness_bound_ns = 30 * NS_PER_SEC;
    config.mobifs.checkpoint = crate::CheckpointTiming::Idle;
    // Each sync closes its transaction (with the e-curve the one write here would wait
    // for the bound: nothing coalesces).
    config.mobifs.seal = crate::SealPolicy::EverySync;
    let mut c = cache(config);
    c.user_input(0, Input::User).unwrap();
    c.write(NS_PER_MS, 1, 0, &[1u8; 100]).unwrap();
    c.fsync(2 * NS_PER_MS, 1).unwrap();
    // Keys every 0.5 s for 5 s: interactive, nothing written.
    for i in 1..=10 {
        c.user_input(i * NS_PER_SEC / 2, Input::User).unwrap();
    }
    assert!(commits(&c).is_empty(), "{:?}", commits(&c));
    // 3 s after the last key (at 5 s): idle, the checkpoint runs at 8 s.
    c.advance_to(10 * NS_PER_SEC).unwrap();
    assert_eq!(commits(&c), vec![(8 * NS_PER_SEC, 1)]);
    assert_eq!(c.metrics().transactions.staleness_bound_overruns, 0);
    // The user comes back; a new seal; the screen goes off 1 s later: checkpointed then.
    c.user_input(11 * NS_PER_SEC, Input::User).unwrap();
    c.write(11 * NS_PER_SEC, 1, 0, &[2u8; 100]).unwrap();
    c.fsync(11 * NS_PER_SEC + NS_PER_MS, 1).unwrap();
    c.user_input(12 * NS_PER_SEC, Input::ScreenOff).unwrap();
    assert_eq!(commits(&c).len(), 2);
    assert_eq!(commits(&c)[1].0, 12 * NS_PER_SEC);
    assert_eq!(c.backing().durable_bytes(1).unwrap()[..100], [2u8; 100]);
}

/// A synthetic coalescing curve under `seal = "ecurve"`: one app overwrites a growing
/// number of pages each second (2k + 1 at step k, so the bytes absorbed grow like t²),
/// each write followed by fsync, for 10 s, then stops. e = absorbed / age rises like t,
/// then falls like 1/t: the transaction closes once, at the tick the peak detector fed
/// the same samples offline says, holding every version sealed so far; not at each sync.
#[test]
fn the_ecurve_closes_at_the_detected_peak_not_at_each_sync() {
    use crate::adaptive::{tradeoff_decision, ECurve, TradeoffDecision};
    const PAGES: u64 = 24;
    // Room for every version's copies: no pressure closes it.
    let mut config = mobifs(512);
    config.mobifs.staleness_bound_ns = 60 * NS_PER_SEC;
    config.mobifs.checkpoint_reserve_ns = 2 * NS_PER_SEC;
    config.mobifs.adaptive.window_samples = 4;
    let adaptive = config.mobifs.adaptive;
    let mut c = cache(config);
    c.write(0, 1, 0, &vec![0u8; PAGES as usize * PAGE_SIZE_BYTES])
        .unwrap();
    // Absorbed bytes at time t: the writes at k + 0.5 s done by then.
    let absorbed = |t: Nanos| -> u64 {
        (0..10u64)
            .filter(|k| k * NS_PER_SEC + NS_PER_SEC / 2 <= t)
            .map(|k| (2 * k + 1) * PAGE_SIZE_BYTES as u64)
            .sum()
    };
    let mut expected = ECurve::default();
    let mut close_ns = None;
    for tick in 1..=60u64 {
        expected.push(tick * NS_PER_SEC, absorbed(tick * NS_PER_SEC), 4);
        expected.note_rise(&adaptive);
        if tradeoff_decision(&expected, &adaptive) == TradeoffDecision::Close {
            close_ns = Some(tick * NS_PER_SEC);
            break;
        }
    }
    let close_ns = close_ns.expect("the offline detector finds the peak");
    assert!(close_ns > 10 * NS_PER_SEC, "after the peak: {close_ns}");
    for k in 0..10u64 {
        let t = k * NS_PER_SEC + NS_PER_SEC / 2;
        let pages = (2 * k + 1).min(PAGES) as usize;
        c.write(t, 1, 0, &vec![k as u8 + 1; pages * PAGE_SIZE_BYTES])
            .unwrap();
        c.fsync(t + NS_PER_MS, 1).unwrap();
        assert_eq!(c.tx_closed_and_sealed(0), (0, k + 1), "open at step {k}");
    }
    c.advance_to(close_ns - 1).unwrap();
    assert_eq!(
        c.tx_closed_and_sealed(0),
        (0, 10),
        "still open before the peak"
    );
    assert_eq!(c.metrics().transactions.peak_closes, 0);
    c.advance_to(close_ns).unwrap();
    assert_eq!(
        c.tx_closed_and_sealed(0),
        (10, 10),
        "closed at the detected peak"
    );
    let m = c.metrics().transactions.clone();
    assert_eq!(
        (m.seals, m.peak_closes, m.bound_closes),
        (10, 1, 0),
        "{m:?}"
    );
    assert!(commits(&c).is_empty(), "closed, not yet checkpointed");
    // The bound timing checkpoints it at its first version's seal + bound − reserve: one
    // commit of the newest version of each page.
    c.advance_to(70 * NS_PER_SEC).unwrap();
    assert_eq!(
        commits(&c),
        vec![(58 * NS_PER_SEC + NS_PER_SEC / 2 + NS_PER_MS, PAGES)]
    );
    let mut want = vec![0u8; PAGES as usize * PAGE_SIZE_BYTES];
    for k in 0..10usize {
        want[..(2 * k + 1) * PAGE_SIZE_BYTES].fill(k as u8 + 1);
    }
    assert_eq!(c.backing().durable_bytes(1), Some(want));
    assert_eq!(c.metrics().transactions.staleness_bound_overruns, 0);
}

/// Under `seal = "ecurve"` a curve that never peaks (new pages only: nothing coalesces)
/// keeps the transaction open across syncs until its oldest version is
/// `bound − reserve` old: the bound closes it and the checkpoint follows at once.
#[test]
fn the_bound_closes_a_transaction_the_ecurve_keeps_open() {
    let mut config = mobifs(64);
    config.mobifs.adaptive.sample_interval_ns = 100 * NS_PER_MS;
    let mut c = cache(config);
    let mut t = 0;
    for k in 0..40u64 {
        t = k * NS_PER_SEC / 4;
        c.write(t, 1, (k % 48) * 4096, &[k as u8; 4096]).unwrap();
        c.fsync(t + NS_PER_MS, 1).unwrap();
        c.check_tx_invariants();
    }
    c.advance_to(t + BOUND_NS).unwrap();
    let m = c.metrics().transactions.clone();
    assert_eq!(m.peak_closes, 0, "{m:?}");
    assert!(m.bound_closes >= 3, "{m:?}");
    assert!(m.ecurve_samples > 0, "{m:?}");
    assert!(
        m.checkpoints < m.seals / 2,
        "several seals per transaction: {m:?}"
    );
    assert_eq!(m.staleness_bound_overruns, 0);
    assert!(m.staleness_ns_max <= BOUND_NS, "{m:?}");
    // Each checkpoint came at a bound close: first version + bound − reserve.
    assert_eq!(commits(&c)[0].0, NS_PER_MS + BOUND_NS - NS_PER_SEC);
}
