//! Crash exploration of the whole stack (page cache, F2FS, FTL, NAND) with a volatile
//! write cache between F2FS and the FTL (`Stack::set_volatile_cache`): at a power cut,
//! writes F2FS sent since its last flush are lost in any subset and persist in any order;
//! then the FTL loses its own volatile state (partial page buffers, unlogged trims), scans
//! its flash and F2FS rolls forward. The same for cuts armed at a NAND operation (which
//! tear a program or an erase, possibly while the cache is written down at a flush).
//!
//! A seeded random workload of FileApi calls (writes, truncates, fsyncs, renames,
//! deletes, sync_all, idle periods with writeback, cleaning and periodic checkpoints) runs
//! on a 256 MiB device with a cut armed a few requests ahead; after each cut and recovery
//! the stack's promises (docs/stack.md, "What survives power loss") are checked against a
//! reference model:
//! - a file whose last change was a completed `sync` reads back exactly;
//! - after a completed `sync` of any file (or `sync_all`), every name exists or not as
//!   then ("namespace changes are durable after the next completed sync");
//! - anything else may be lost, but every file that exists reads without error.
//!
//! A sample of the recovered images goes through `fsck.f2fs -f`.

mod common;

use std::collections::BTreeMap;
use std::rc::Rc;

use common::{assert_fsck_clean, try_read_all};
use flashstack_block::explore::{self, lost_bytes, Exploration};
use flashstack_block::VolatileCacheConfig;
use flashstack_sim::{Rng, NS_PER_SEC};
use flashstack_sqlvfs::{FileApi, FileError, OpenFlags};
use flashstack_stack::{Stack, StackConfig};

const FILES: usize = 4;

/// Cut points in a CI run (times `FLASHSTACK_CRASH_SCALE`).
const CUTS: u64 = 1_500;

/// A cut is armed this many F2FS write/trim requests (or NAND operations) ahead, at most.
const CUT_WITHIN: u64 = 40;

/// One recovered image in this many goes through fsck.f2fs.
const FSCK_EVERY_CUTS: u64 = 300;

const CREATE: OpenFlags = OpenFlags {
    create: true,
    exclusive: false,
    read_only: false,
    delete_on_close: false,
};

fn path(file: usize) -> String {
    format!("/m/f{file}")
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Write {
        file: usize,
        offset: u64,
        len: usize,
        byte: u8,
    },
    Truncate {
        file: usize,
        size: u64,
    },
    Sync(usize),
    Delete(usize),
    Rename(usize, usize),
    SyncAll,
    Idle {
        secs: u64,
    },
}

impl Op {
    fn draw(rng: &mut Rng) -> Op {
        let file = rng.below(FILES as u64) as usize;
        match rng.below(100) {
            0..=44 => Op::Write {
                file,
                offset: rng.below(60_000),
                len: 1 + rng.below(9_000) as usize,
                byte: rng.below(256) as u8,
            },
            45..=51 => Op::Truncate {
                file,
                size: rng.below(70_000),
            },
            52..=79 => Op::Sync(file),
            80..=84 => Op::Delete(file),
            85..=91 => Op::Rename(file, rng.below(FILES as u64) as usize),
            92..=95 => Op::SyncAll,
            // A flusher wake; past F2FS's GC wake and periodic checkpoint.
            _ => Op::Idle {
                secs: [6, 70][rng.below(2) as usize],
            },
        }
    }

    fn touches(&self) -> Vec<usize> {
        match *self {
            Op::Write { file, .. } | Op::Truncate { file, .. } | Op::Delete(file) => vec![file],
            Op::Rename(a, b) => vec![a, b],
            Op::Sync(_) | Op::SyncAll | Op::Idle { .. } => vec![],
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Op::Write { .. } => "mid-write",
            Op::Truncate { .. } => "mid-truncate",
            Op::Sync(_) => "mid-fsync",
            Op::Delete(_) => "mid-delete",
            Op::Rename(..) => "mid-rename",
            Op::SyncAll => "mid-sync_all",
            Op::Idle { .. } => "mid-idle",
        }
    }
}

struct Explorer {
    stack: Stack,
    rng: Rng,
    current: BTreeMap<usize, Rc<Vec<u8>>>,
    /// Names whose existence is promised (true: exists, false: does not).
    exists_promised: BTreeMap<usize, bool>,
    /// Files whose content is promised.
    content_promised: BTreeMap<usize, Rc<Vec<u8>>>,
    tally: Exploration,
}

impl Explorer {
    fn new(seed: u64) -> Explorer {
        let mut config = StackConfig::preset("default").unwrap();
        config.device.nand.geometry.blocks_per_plane = 1024;
        config.seed = seed;
        let mut stack = Stack::new(config).unwrap();
        let mut rng = Rng::new(seed);
        stack.set_volatile_cache(cache_config(&mut rng)).unwrap();
        stack.mkdir(0, "/m").unwrap();
        stack.sync_all(stack.now_ns()).unwrap();
        Explorer {
            stack,
            rng,
            current: BTreeMap::new(),
            exists_promised: (0..FILES).map(|f| (f, false)).collect(),
            content_promised: BTreeMap::new(),
            tally: Exploration::new("stack crash_explore"),
        }
    }

    fn explore(&mut self, cuts: u64) {
        let mut op_index = 0u64;
        while self.tally.cut_points() < cuts {
            let ahead = 1 + self.rng.below(CUT_WITHIN);
            let nand = self.rng.below(4) == 0;
            if nand {
                self.stack.arm_power_cut(ahead).unwrap();
            } else {
                self.stack.arm_device_power_cut(ahead).unwrap();
            }
            loop {
                let op = Op::draw(&mut self.rng);
                op_index += 1;
                if let Err(e) = self.apply(op) {
                    assert!(
                        self.stack.is_powered_off(),
                        "op {op_index} {op:?} failed without a power cut: {e}"
                    );
                    self.tally
                        .note(if nand { "NAND cuts" } else { "device cuts" }, 1);
                    self.recover(op, op_index);
                    break;
                }
            }
        }
    }

    fn apply(&mut self, op: Op) -> Result<(), FileError> {
        for f in op.touches() {
            self.exists_promised.remove(&f);
            self.content_promised.remove(&f);
        }
        self.run(op)?;
        match op {
            Op::Sync(f) if self.current.contains_key(&f) => {
                self.content_promised.insert(f, self.current[&f].clone());
                self.promise_names();
            }
            Op::SyncAll => {
                self.content_promised = self.current.clone();
                self.promise_names();
            }
            _ => {}
        }
        Ok(())
    }

    fn promise_names(&mut self) {
        for f in 0..FILES {
            self.exists_promised
                .insert(f, self.current.contains_key(&f));
        }
    }

    fn run(&mut self, op: Op) -> Result<(), FileError> {
        let s = &mut self.stack;
        let t = s.now_ns() + 1_000;
        match op {
            Op::Write {
                file,
                offset,
                len,
                byte,
            } => {
                let (h, t) = s.open(t, &path(file), CREATE)?;
                let content = Rc::make_mut(self.current.entry(file).or_default());
                let t = s.write_at(t, h, offset, &vec![byte; len])?;
                let end = offset as usize + len;
                if content.len() < end {
                    content.resize(end, 0);
                }
                content[offset as usize..end].fill(byte);
                s.close(t, h)?;
            }
            Op::Truncate { file, size } => {
                if let Some(content) = self.current.get_mut(&file) {
                    let (h, t) = s.open(t, &path(file), OpenFlags::default())?;
                    Rc::make_mut(content).resize(size as usize, 0);
                    let t = s.truncate(t, h, size)?;
                    s.close(t, h)?;
                }
            }
            Op::Sync(file) => {
                if self.current.contains_key(&file) {
                    let (h, t) = s.open(t, &path(file), OpenFlags::default())?;
                    let t = s.sync(t, h, false)?;
                    s.close(t, h)?;
                }
            }
            Op::Delete(file) => {
                if self.current.remove(&file).is_some() {
                    s.delete(t, &path(file), false)?;
                }
            }
            Op::Rename(a, b) => {
                if a != b && self.current.contains_key(&a) {
                    let moved = self.current.remove(&a).unwrap();
                    self.current.insert(b, moved);
                    s.rename(t, &path(a), &path(b))?;
                }
            }
            Op::SyncAll => {
                s.sync_all(t)?;
            }
            Op::Idle { secs } => {
                s.idle_until(t + secs * NS_PER_SEC)?;
            }
        }
        Ok(())
    }

    fn recover(&mut self, op: Op, op_index: u64) {
        self.stack.power_cut();
        self.stack.recover().unwrap_or_else(|e| {
            panic!("op {op_index} {op:?}: recovery failed: {e}");
        });
        let loss = self.stack.last_power_loss();
        self.tally.cut();
        self.tally.note(op.kind(), 1);
        self.tally.note("unflushed LBAs lost", loss.lost_lbas);
        self.tally.note("unflushed LBAs kept", loss.survived_lbas);
        let cut = self.tally.cut_points();
        self.check(&format!("cut {cut} (op {op_index}, {op:?})"));
        if cut.is_multiple_of(FSCK_EVERY_CUTS) {
            assert_fsck_clean(&mut self.stack, &format!("crash-explore-{cut}"));
        }
        let config = cache_config(&mut self.rng);
        self.stack.set_volatile_cache(config).unwrap();
    }

    /// The promises hold; what was found is durable from now on.
    fn check(&mut self, what: &str) {
        let mut found = BTreeMap::new();
        for f in 0..FILES {
            let p = path(f);
            let (exists, _) = self.stack.exists(self.stack.now_ns(), &p).unwrap();
            if let Some(&promised) = self.exists_promised.get(&f) {
                assert_eq!(exists, promised, "{what}: {p} exists?");
            }
            if !exists {
                assert!(
                    !self.content_promised.contains_key(&f),
                    "{what}: {p} was synced and is gone"
                );
                continue;
            }
            let bytes = try_read_all(&mut self.stack, &p)
                .unwrap_or_else(|e| panic!("{what}: {p} unreadable: {e}"));
            if let Some(want) = self.content_promised.get(&f) {
                let lost = lost_bytes(want, &bytes);
                self.tally.checked(want.len() as u64, lost);
                assert!(
                    lost == 0,
                    "{what}: {p} differs from its synced content ({} bytes, {} now, {lost} lost)",
                    want.len(),
                    bytes.len()
                );
            }
            found.insert(f, Rc::new(bytes));
        }
        self.current = found;
        self.content_promised = self.current.clone();
        self.promise_names();
    }
}

/// 1 MiB of cache most of the time, sometimes 64 KiB (destaging while powered reorders
/// the writes the FTL sees).
fn cache_config(rng: &mut Rng) -> VolatileCacheConfig {
    VolatileCacheConfig {
        capacity_lbas: if rng.below(4) == 0 { 16 } else { 256 },
        seed: rng.next_u64(),
    }
}

#[test]
fn volatile_cache_and_nand_cuts_through_the_whole_stack() {
    let mut explorer = Explorer::new(0x57AC);
    explorer.explore(CUTS * explore::scale());
    explorer.tally.report();
    let t = &explorer.tally;
    assert_eq!(t.lost_bytes(), 0);
    // Writes stop in the page cache, so cuts land in fsyncs, syncs, idle writeback and
    // cleaning, and in namespace operations.
    for kind in [
        "mid-fsync",
        "mid-sync_all",
        "mid-idle",
        "mid-rename",
        "NAND cuts",
    ] {
        assert!(
            t.noted(kind) > 20,
            "cuts must land everywhere: {}",
            t.line()
        );
    }
}
