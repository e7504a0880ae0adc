//! MobiFS's versioned cache transactions on the whole stack, with power cuts
//! (`docs/mobifs.md`, `docs/testing.md`).
//!
//! Three apps (`/data/data/app<a>/f<k>`, two files each) write, truncate and fsync on a
//! stack with `cache.policy = "mobifs"`, a small page cache (so memory pressure forces
//! seals and checkpoints) and a short staleness bound. A reference model keeps, per app,
//! the state of its files at every seal it can see (fsync, sync, and forced seals, which
//! the cache counts: `Stack::tx_seals`). After each power cut and recovery:
//! - each app's files equal exactly one of its sealed states since the last one known
//!   durable (never a torn mix, never an older one);
//! - the sealed data lost is younger than the bound: the first lost seal happened at most
//!   `staleness_bound_ns` before the cut;
//! - sampled recovered images pass `fsck.f2fs -f`.
//!
//! Cuts: at every device request and at every NAND operation of one checkpoint of
//! several apps' transactions (a fresh stack per cut point, the same seeded scenario),
//! and at random virtual times across random runs (the stack idles to the time, then
//! power fails), with a volatile write cache between F2FS and the FTL.

mod common;

use std::collections::BTreeMap;

use common::{assert_fsck_clean, try_read_all};
use flashstack_block::explore::{self, Exploration};
use flashstack_block::VolatileCacheConfig;
use flashstack_cache::{AppId, PolicyName, SealPolicy, PAGE_SIZE_BYTES};
use flashstack_sim::{Nanos, Rng, NS_PER_SEC};
use flashstack_sqlvfs::{FileApi, FileError, FileId, OpenFlags};
use flashstack_stack::{Stack, StackConfig};

const APPS: usize = 3;
const FILES_PER_APP: usize = 2;
const BOUND_NS: Nanos = 4 * NS_PER_SEC;
/// Page cache of 48 pages: three apps' open transactions do not all fit.
const CACHE_PAGES: u64 = 48;
const FILE_BYTES_MAX: u64 = 10 * PAGE_SIZE_BYTES as u64;

/// Random-run cut points in a CI run (times `FLASHSTACK_CRASH_SCALE`).
const RANDOM_CUTS: u64 = 150;
const FSCK_EVERY_CUTS: u64 = 50;

const CREATE: OpenFlags = OpenFlags {
    create: true,
    exclusive: false,
    read_only: false,
    delete_on_close: false,
};

fn path(app: usize, file: usize) -> String {
    format!("/data/data/app{app}/f{file}")
}

fn config(seed: u64) -> StackConfig {
    let mut config = StackConfig::preset("mobifs").unwrap();
    assert_eq!(config.cache.policy, PolicyName::Mobifs);
    config.device.nand.geometry.blocks_per_plane = 1024;
    config.seed = seed;
    config.cache.cache_bytes_max = CACHE_PAGES * PAGE_SIZE_BYTES as u64;
    config.cache.mobifs.staleness_bound_ns = BOUND_NS;
    config.cache.mobifs.checkpoint_reserve_ns = NS_PER_SEC;
    config
}

/// `seal = "ecurve"` sampled fast enough (every 100 ms, a window of 4) for the curve to
/// peak well within the 4 s bound, so peaks close transactions, not only the bound.
fn fast_ecurve(mut config: StackConfig) -> StackConfig {
    config.cache.mobifs.seal = SealPolicy::Ecurve;
    config.cache.mobifs.adaptive.sample_interval_ns = NS_PER_SEC / 10;
    config.cache.mobifs.adaptive.window_samples = 4;
    config
}

/// `seal = "every-sync"`: each fsync closes its transaction.
fn every_sync(mut config: StackConfig) -> StackConfig {
    config.cache.mobifs.seal = SealPolicy::EverySync;
    config
}

/// The files of one app at one seal.
type AppState = Vec<Vec<u8>>;

#[derive(Clone, Copy, Debug)]
enum Op {
    Write {
        app: usize,
        file: usize,
        offset: u64,
        len: usize,
        byte: u8,
    },
    Truncate {
        app: usize,
        file: usize,
        size: u64,
    },
    Fsync {
        app: usize,
        file: usize,
    },
    SyncAll,
    /// Time passes (checkpoints fall due).
    Idle {
        ms: u64,
    },
}

impl Op {
    fn draw(rng: &mut Rng) -> Op {
        let app = rng.below(APPS as u64) as usize;
        let file = rng.below(FILES_PER_APP as u64) as usize;
        match rng.below(100) {
            0..=54 => Op::Write {
                app,
                file,
                offset: rng.below(FILE_BYTES_MAX - 9_000),
                len: 1 + rng.below(9_000) as usize,
                byte: 1 + rng.below(255) as u8,
            },
            55..=61 => Op::Truncate {
                app,
                file,
                size: rng.below(FILE_BYTES_MAX),
            },
            62..=86 => Op::Fsync { app, file },
            87..=88 => Op::SyncAll,
            _ => Op::Idle {
                ms: 200 + rng.below(2 * BOUND_NS / 1_000_000),
            },
        }
    }

    fn app(&self) -> Option<usize> {
        match *self {
            Op::Write { app, .. } | Op::Truncate { app, .. } | Op::Fsync { app, .. } => Some(app),
            Op::SyncAll | Op::Idle { .. } => None,
        }
    }
}

/// One app in the model: its files now, and its states at seals not known durable.
struct AppModel {
    id: AppId,
    current: AppState,
    /// (seal time, state); the first is the state known durable.
    sealed: Vec<(Nanos, AppState)>,
    seals_seen: u64,
}

struct Run {
    stack: Stack,
    rng: Rng,
    apps: Vec<AppModel>,
    handles: BTreeMap<(usize, usize), FileId>,
    tally: Exploration,
}

impl Run {
    fn new(seed: u64) -> Run {
        Run::with_config(seed, config(seed))
    }

    fn with_config(seed: u64, config: StackConfig) -> Run {
        let mut stack = Stack::new(config).unwrap();
        let mut t = stack.now_ns();
        for dir in ["/data", "/data/data"] {
            t = stack.mkdir(t, dir).unwrap();
        }
        let mut run = Run {
            stack,
            rng: Rng::new(seed),
            apps: Vec::new(),
            handles: BTreeMap::new(),
            tally: Exploration::new("stack mobifs"),
        };
        for app in 0..APPS {
            let t = run.stack.now_ns();
            run.stack.mkdir(t, &format!("/data/data/app{app}")).unwrap();
        }
        run.open_all();
        let t = run.stack.now_ns();
        run.stack.sync_all(t).unwrap();
        run.apps = (0..APPS)
            .map(|app| AppModel {
                id: run.stack.app_id(&path(app, 0)),
                current: vec![Vec::new(); FILES_PER_APP],
                sealed: vec![(0, vec![Vec::new(); FILES_PER_APP])],
                seals_seen: 0,
            })
            .collect();
        for app in &mut run.apps {
            app.seals_seen = run.stack.tx_seals(app.id);
        }
        run
    }

    fn open_all(&mut self) {
        self.handles.clear();
        for app in 0..APPS {
            for file in 0..FILES_PER_APP {
                let t = self.stack.now_ns();
                let (h, _) = self.stack.open(t, &path(app, file), CREATE).unwrap();
                self.handles.insert((app, file), h);
            }
        }
    }

    /// Runs `op` at `t`, then records the seals it caused in the model.
    fn apply(&mut self, op: Op) -> Result<(), FileError> {
        let t = self.stack.now_ns() + 1_000 + self.rng.below(300_000_000);
        let before: Vec<AppState> = self.apps.iter().map(|a| a.current.clone()).collect();
        self.run(op, t)?;
        for (index, app) in self.apps.iter_mut().enumerate() {
            let seals = self.stack.tx_seals(app.id);
            let new = seals - app.seals_seen;
            app.seals_seen = seals;
            if new == 0 {
                continue;
            }
            assert_eq!(new, 1, "{op:?}: one seal per app and call");
            // A seal by this app's own write or truncate is forced at the call's start.
            let at_start =
                matches!(op, Op::Write { .. } | Op::Truncate { .. }) && op.app() == Some(index);
            let state = if at_start {
                before[index].clone()
            } else {
                app.current.clone()
            };
            app.sealed.push((t, state));
        }
        Ok(())
    }

    fn run(&mut self, op: Op, t: Nanos) -> Result<(), FileError> {
        let s = &mut self.stack;
        match op {
            Op::Write {
                app,
                file,
                offset,
                len,
                byte,
            } => {
                s.write_at(t, self.handles[&(app, file)], offset, &vec![byte; len])?;
                let content = &mut self.apps[app].current[file];
                let end = offset as usize + len;
                if content.len() < end {
                    content.resize(end, 0);
                }
                content[offset as usize..end].fill(byte);
            }
            Op::Truncate { app, file, size } => {
                s.truncate(t, self.handles[&(app, file)], size)?;
                self.apps[app].current[file].resize(size as usize, 0);
            }
            Op::Fsync { app, file } => {
                s.sync(t, self.handles[&(app, file)], false)?;
            }
            Op::SyncAll => {
                s.sync_all(t)?;
            }
            Op::Idle { ms } => {
                s.idle_until(t + ms * 1_000_000)?;
            }
        }
        Ok(())
    }

    /// After a completed sync every sealed state is durable.
    fn note_sync_all(&mut self) {
        for app in &mut self.apps {
            let last = app.sealed.pop().expect("a state");
            app.sealed = vec![last];
        }
    }

    /// Power fails at `cut_ns`; after recovery every app is at one of its sealed states,
    /// and what it lost was sealed within the bound before the cut.
    fn recover_and_check(&mut self, cut_ns: Nanos, what: &str) {
        self.stack.power_cut();
        self.stack
            .recover()
            .unwrap_or_else(|e| panic!("{what}: recovery failed: {e}"));
        self.tally.cut();
        for app in 0..APPS {
            let found: AppState = (0..FILES_PER_APP)
                .map(|file| try_read_all(&mut self.stack, &path(app, file)).unwrap())
                .collect();
            let model = &mut self.apps[app];
            let index = model
                .sealed
                .iter()
                .rposition(|(_, state)| *state == found)
                .unwrap_or_else(|| {
                    panic!(
                        "{what}: app {app} is at no sealed state (sizes {:?}; sealed sizes {:?})",
                        found.iter().map(Vec::len).collect::<Vec<_>>(),
                        model
                            .sealed
                            .iter()
                            .map(|(_, s)| s.iter().map(Vec::len).collect::<Vec<_>>())
                            .collect::<Vec<_>>()
                    )
                });
            let bytes: usize = found.iter().map(Vec::len).sum();
            self.tally.checked(bytes as u64, 0);
            if let Some((sealed_ns, _)) = model.sealed.get(index + 1) {
                let lost_ns = cut_ns.saturating_sub(*sealed_ns);
                assert!(
                    lost_ns <= BOUND_NS,
                    "{what}: app {app} lost {lost_ns} ns of sealed data (bound {BOUND_NS})"
                );
                self.tally.note("cuts losing sealed transactions", 1);
            }
            model.current = found.clone();
            model.sealed = vec![(cut_ns, found)];
            model.seals_seen = self.stack.tx_seals(model.id);
        }
        self.open_all();
    }

    fn check_staleness(&self) {
        let m = self.stack.metrics().unwrap().cache.transactions;
        assert_eq!(m.staleness_bound_overruns, 0, "{m:?}");
        assert!(m.staleness_ns_max <= BOUND_NS, "{m:?}");
    }
}

fn volatile(rng: &mut Rng) -> VolatileCacheConfig {
    VolatileCacheConfig {
        capacity_lbas: 256,
        seed: rng.next_u64(),
    }
}

/// The scenario cut at every operation: the three apps' writes, truncates and fsyncs, then
/// time passes until a checkpoint persists them all, with a power cut armed at the `n`-th
/// device request (or NAND operation) of that last step. Returns whether the cut fired.
fn cut_checkpoint_at(n: u64, nand: bool, tally: &mut Exploration) -> bool {
    let mut run = Run::new(0x30B1);
    run.stack
        .set_volatile_cache(volatile(&mut run.rng))
        .unwrap();
    // Everything up to the checkpoint, without cuts (the same every time).
    for _ in 0..40 {
        let op = Op::draw(&mut run.rng);
        if matches!(op, Op::Idle { .. } | Op::SyncAll) {
            continue;
        }
        run.apply(op).unwrap();
    }
    for app in 0..APPS {
        run.apply(Op::Fsync { app, file: 0 }).unwrap();
    }
    if nand {
        run.stack.arm_power_cut(n).unwrap();
    } else {
        run.stack.arm_device_power_cut(n).unwrap();
    }
    let result = run.apply(Op::Idle {
        ms: 2 * BOUND_NS / 1_000_000,
    });
    if result.is_ok() {
        return false;
    }
    assert!(run.stack.is_powered_off(), "cut {n}: {result:?}");
    let cut_ns = run
        .stack
        .with_fs(|fs| fs.now_ns())
        .unwrap()
        .max(run.stack.now_ns());
    run.recover_and_check(cut_ns, &format!("checkpoint cut {n} (nand {nand})"));
    if n % 8 == 1 {
        assert_fsck_clean(&mut run.stack, &format!("mobifs-checkpoint-{n}-{nand}"));
    }
    tally.merge(&run.tally);
    tally.note(if nand { "NAND cuts" } else { "device cuts" }, 1);
    true
}

#[test]
fn a_checkpoint_cut_at_every_operation_recovers_a_sealed_prefix() {
    let mut tally = Exploration::new("stack mobifs checkpoint");
    for nand in [false, true] {
        let mut n = 1;
        while cut_checkpoint_at(n, nand, &mut tally) {
            n += 1;
        }
        assert!(
            n > 5,
            "the checkpoint made {} operations (nand {nand})",
            n - 1
        );
    }
    tally.report();
    assert!(tally.noted("cuts losing sealed transactions") > 0);
}

#[test]
fn random_runs_with_cuts_keep_transaction_prefixes_within_the_bound() {
    let (_, t) = random_runs_with_cuts(Run::new(0x40B1), RANDOM_CUTS);
    assert!(t.noted("cuts losing sealed transactions") > 10);
    for kind in ["checkpoints", "forced seals", "copy-on-write copies"] {
        assert!(t.noted(kind) > 10, "{kind}: {}", t.line());
    }
}

/// The same with the e-curve peaking within the bound, and with every sync closing.
#[test]
fn random_runs_with_cuts_under_each_seal_policy() {
    let run = Run::with_config(0x40B2, fast_ecurve(config(0x40B2)));
    let (m, t) = random_runs_with_cuts(run, RANDOM_CUTS / 2);
    assert!(m.peak_closes > 10 && m.bound_closes > 0, "{m:?}");
    assert!(t.noted("cuts losing sealed transactions") > 0);
    let run = Run::with_config(0x40B3, every_sync(config(0x40B3)));
    let (m, _) = random_runs_with_cuts(run, RANDOM_CUTS / 2);
    assert_eq!(m.peak_closes + m.bound_closes + m.forced_closes, 0, "{m:?}");
}

/// Random runs cut at random times until `cuts` cut points; returns the transactions'
/// counters summed over the runs between cuts, and the tally.
fn random_runs_with_cuts(mut run: Run, cuts: u64) -> (flashstack_cache::TxMetrics, Exploration) {
    let mut total = flashstack_cache::TxMetrics::default();
    run.stack
        .set_volatile_cache(volatile(&mut run.rng))
        .unwrap();
    let cuts = cuts * explore::scale();
    let mut ops = 0u64;
    while run.tally.cut_points() < cuts {
        // A cut at a random time: up to twice the bound after a few operations.
        for _ in 0..run.rng.below(30) {
            let op = Op::draw(&mut run.rng);
            run.apply(op).unwrap();
            ops += 1;
            if matches!(op, Op::SyncAll) {
                run.note_sync_all();
            }
        }
        run.check_staleness();
        let cut_ns = run.stack.now_ns() + run.rng.below(2 * BOUND_NS);
        run.stack.idle_until(cut_ns).unwrap();
        let m = run.stack.metrics().unwrap().cache.transactions;
        run.tally.note("checkpoints", m.checkpoints);
        run.tally.note("forced seals", m.forced_seals);
        run.tally.note("copy-on-write copies", m.cow_copies);
        total.peak_closes += m.peak_closes;
        total.bound_closes += m.bound_closes;
        total.forced_closes += m.forced_closes;
        let cut = run.tally.cut_points() + 1;
        run.recover_and_check(cut_ns, &format!("random cut {cut} after op {ops}"));
        if cut.is_multiple_of(FSCK_EVERY_CUTS) {
            assert_fsck_clean(&mut run.stack, &format!("mobifs-random-{cut}"));
        }
        let config = volatile(&mut run.rng);
        run.stack.set_volatile_cache(config).unwrap();
    }
    run.tally.report();
    (total, run.tally)
}

/// Cuts of runs with `checkpoint = "idle"`: the user's inputs (touches, the screen going
/// off and on) drawn between the operations move checkpoints into idle intervals and
/// before standby; every cut still recovers a sealed prefix per app within the bound.
#[test]
fn idle_timing_runs_with_cuts_keep_transaction_prefixes_within_the_bound() {
    use flashstack_sqlvfs::UserInput;
    let mut config = config(0x1D1E);
    config.cache.mobifs.checkpoint = flashstack_cache::CheckpointTiming::Idle;
    config.cache.mobifs.adaptive.t_s_ns = NS_PER_SEC / 4;
    let mut run = Run::with_config(0x1D1E, config);
    run.stack
        .set_volatile_cache(volatile(&mut run.rng))
        .unwrap();
    let cuts = (RANDOM_CUTS / 3) * explore::scale();
    let mut ops = 0u64;
    while run.tally.cut_points() < cuts {
        for _ in 0..run.rng.below(30) {
            let input = match run.rng.below(10) {
                0 => Some(UserInput::ScreenOff),
                1 => Some(UserInput::ScreenOn),
                2..=5 => Some(UserInput::Touch),
                _ => None,
            };
            if let Some(input) = input {
                let t = run.stack.now_ns() + run.rng.below(NS_PER_SEC);
                run.stack.user_input(t, input);
            }
            let op = Op::draw(&mut run.rng);
            run.apply(op).unwrap();
            ops += 1;
            if matches!(op, Op::SyncAll) {
                run.note_sync_all();
            }
        }
        run.check_staleness();
        let cut_ns = run.stack.now_ns() + run.rng.below(2 * BOUND_NS);
        run.stack.idle_until(cut_ns).unwrap();
        let m = run.stack.metrics().unwrap().cache.transactions;
        run.tally.note("checkpoints", m.checkpoints);
        let cut = run.tally.cut_points() + 1;
        run.recover_and_check(cut_ns, &format!("idle-timing cut {cut} after op {ops}"));
        let config = volatile(&mut run.rng);
        run.stack.set_volatile_cache(config).unwrap();
    }
    run.tally.report();
    assert!(run.tally.noted("checkpoints") > 10, "{}", run.tally.line());
}

/// SQLite (Android's settings: rollback journal, `synchronous = FULL`) on the MobiFS
/// stack, a power cut armed at several NAND operations into a run of committed
/// transactions with think time between them: after recovery the database passes
/// `integrity_check`, holds whole transactions only, and every transaction committed
/// more than the bound before the cut is there. Its journal's create and delete are
/// namespace operations outside the transactions; this checks they do not tear it.
#[test]
fn sqlite_under_mobifs_recovers_whole_transactions_within_the_bound() {
    sqlite_power_cuts(&|seed| config(seed));
}

/// The SQLite power cuts with the e-curve peaking within the bound (transactions of
/// several commits closed at the peak) and with every sync closing one.
#[test]
fn sqlite_under_each_seal_policy_recovers_whole_transactions_within_the_bound() {
    let peaks = sqlite_power_cuts(&|seed| fast_ecurve(config(seed)));
    assert!(peaks > 0, "the e-curve closed no transaction at a peak");
    sqlite_power_cuts(&|seed| every_sync(config(seed)));
}

/// Returns the transactions closed at the e-curve's peak over all the runs.
fn sqlite_power_cuts(config: &dyn Fn(u64) -> StackConfig) -> u64 {
    use flashstack_sqlvfs::{SimDb, SimVfs, SqliteConfig};
    use flashstack_stack::SharedStack;
    const ROWS: i64 = 20;
    let sqlite = SqliteConfig::android();
    let mut cuts = 0;
    let mut peaks = 0;
    for cut_after in [40u64, 150, 400, 900, 1600, 2500, 4000] {
        let mut stack = Stack::new(config(cut_after)).unwrap();
        for dir in ["/data", "/data/data", "/data/data/app0"] {
            stack.mkdir(stack.now_ns(), dir).unwrap();
        }
        stack.sync_all(stack.now_ns()).unwrap();
        stack.arm_power_cut(cut_after).unwrap();
        let shared = SharedStack::new(stack);
        let vfs = SimVfs::register(Box::new(shared.clone()), 7, 20_000).unwrap();
        // (commit time, transactions committed by then)
        let mut commits: Vec<(Nanos, i64)> = Vec::new();
        if let Ok(db) = SimDb::open(&vfs, "/data/data/app0/app.db", &sqlite) {
            let _ = (|| -> Result<(), Box<dyn std::error::Error>> {
                db.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")?;
                for txn in 0..60 {
                    db.execute_batch("BEGIN")?;
                    for r in 0..ROWS {
                        db.execute(
                            "INSERT INTO t (v) VALUES (?1)",
                            [format!("row {txn}/{r} {}", "x".repeat(200))],
                        )?;
                    }
                    db.execute_batch("COMMIT")?;
                    commits.push((vfs.now_ns(), txn + 1));
                    vfs.advance_to(vfs.now_ns() + NS_PER_SEC / 3);
                }
                Ok(())
            })();
        }
        let cut_ns = shared.lock().now_ns();
        peaks += shared
            .lock()
            .metrics()
            .map_or(0, |m| m.cache.transactions.peak_closes);
        if !shared.lock().is_powered_off() {
            shared.lock().power_cut();
        }
        shared.lock().recover().unwrap();
        cuts += 1;
        let vfs = SimVfs::register(Box::new(shared.clone()), 8, 20_000).unwrap();
        vfs.advance_to(shared.lock().now_ns());
        let db = SimDb::open(&vfs, "/data/data/app0/app.db", &sqlite).unwrap();
        let ok: String = db
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ok, "ok", "cut after {cut_after} NAND operations");
        let rows: i64 = db
            .query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0))
            .unwrap_or(0);
        println!(
            "cut {cut_after}: committed {} rows back {} at {cut_ns}",
            commits.len(),
            rows / ROWS
        );
        assert_eq!(rows % ROWS, 0, "cut after {cut_after}: a torn transaction");
        let durable = commits
            .iter()
            .filter(|(at, _)| *at + BOUND_NS <= cut_ns)
            .map(|(_, n)| *n)
            .max()
            .unwrap_or(0);
        assert!(
            rows / ROWS >= durable,
            "cut after {cut_after} at {cut_ns} ns: {} transactions back, {durable} committed \
             more than the bound before the cut",
            rows / ROWS
        );
    }
    println!("sqlite under MobiFS: {cuts} cut points, {peaks} peak closes");
    peaks
}
