//! Reference model: random FileApi operations checked after every step against an
//! in-memory model, with armed power cuts and recovery.
//!
//! What is checked (the stack's promise, docs/stack.md): while powered, every read equals
//! the model; after a cut + recovery, a file whose last change was a completed fsync reads
//! exactly as synced, and every file that exists reads back without error (no corruption).
//! Unsynced data and names are free to survive or not: the model adopts what recovery shows.

mod common;

use std::collections::BTreeMap;

use common::try_read_all;
use flashstack_sqlvfs::{FileApi, OpenFlags};
use flashstack_stack::{Stack, StackConfig};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Write {
        file: u8,
        offset: u32,
        len: u16,
        byte: u8,
    },
    Truncate {
        file: u8,
        size: u32,
    },
    Sync {
        file: u8,
        data_only: bool,
    },
    Delete {
        file: u8,
    },
    Rename {
        from: u8,
        to: u8,
    },
    Idle {
        secs: u8,
    },
    Cut {
        after_ops: u8,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (0..4u8, 0..60_000u32, 1..9000u16, any::<u8>())
            .prop_map(|(file, offset, len, byte)| Op::Write { file, offset, len, byte }),
        1 => (0..4u8, 0..70_000u32).prop_map(|(file, size)| Op::Truncate { file, size }),
        3 => (0..4u8, any::<bool>()).prop_map(|(file, data_only)| Op::Sync { file, data_only }),
        1 => (0..4u8).prop_map(|file| Op::Delete { file }),
        1 => (0..4u8, 0..4u8).prop_map(|(from, to)| Op::Rename { from, to }),
        // Up to four minutes: long enough for F2FS's GC wakes and periodic checkpoints.
        1 => (1..250u8).prop_map(|secs| Op::Idle { secs }),
        1 => (1..60u8).prop_map(|after_ops| Op::Cut { after_ops }),
    ]
}

#[derive(Clone, Debug, Default)]
struct ModelFile {
    bytes: Vec<u8>,
    /// Set by a completed fsync, cleared by any later change to the file or its name.
    synced: bool,
}

fn path(i: u8) -> String {
    format!("/m/f{i}")
}

const CREATE: OpenFlags = OpenFlags {
    create: true,
    exclusive: false,
    read_only: false,
    delete_on_close: false,
};

fn read_all(s: &mut Stack, p: &str) -> Vec<u8> {
    let (f, t) = s.open(s.now_ns(), p, OpenFlags::default()).unwrap();
    let (size, t) = s.size(t, f).unwrap();
    let mut buf = vec![0u8; size as usize];
    let (n, t) = s.read_at(t, f, 0, &mut buf).unwrap();
    assert_eq!(n as u64, size);
    s.close(t, f).unwrap();
    buf
}

/// Runs one op; Err means the armed cut fired.
fn apply(s: &mut Stack, m: &mut BTreeMap<String, ModelFile>, op: &Op) -> Result<(), ()> {
    let t = s.now_ns() + 1000;
    let e = |_| ();
    match *op {
        Op::Write {
            file,
            offset,
            len,
            byte,
        } => {
            let p = path(file);
            let (f, t) = s.open(t, &p, CREATE).map_err(e)?;
            let entry = m.entry(p).or_default();
            entry.synced = false;
            let t = s
                .write_at(t, f, offset as u64, &vec![byte; len as usize])
                .map_err(e)?;
            let end = offset as usize + len as usize;
            if entry.bytes.len() < end {
                entry.bytes.resize(end, 0);
            }
            entry.bytes[offset as usize..end].fill(byte);
            s.close(t, f).map_err(e)?;
        }
        Op::Truncate { file, size } => {
            let p = path(file);
            if let Some(entry) = m.get_mut(&p) {
                entry.synced = false;
                entry.bytes.resize(size as usize, 0);
                let (f, t) = s.open(t, &p, CREATE).map_err(e)?;
                let t = s.truncate(t, f, size as u64).map_err(e)?;
                s.close(t, f).map_err(e)?;
            }
        }
        Op::Sync { file, data_only } => {
            let p = path(file);
            if m.contains_key(&p) {
                let (f, t) = s.open(t, &p, CREATE).map_err(e)?;
                let t = s.sync(t, f, data_only).map_err(e)?;
                s.close(t, f).map_err(e)?;
                m.get_mut(&p).unwrap().synced = true;
            }
        }
        Op::Delete { file } => {
            let p = path(file);
            if m.remove(&p).is_some() {
                s.delete(t, &p, false).map_err(e)?;
            }
        }
        Op::Rename { from, to } => {
            let (a, b) = (path(from), path(to));
            if from != to && m.contains_key(&a) {
                s.rename(t, &a, &b).map_err(e)?;
                let mut moved = m.remove(&a).unwrap();
                moved.synced = false;
                m.insert(b, moved);
            }
        }
        Op::Idle { secs } => {
            s.idle_until(t + secs as u64 * 1_000_000_000).map_err(e)?;
        }
        Op::Cut { after_ops } => s.arm_power_cut(after_ops as u64).map_err(e)?,
    }
    Ok(())
}

thread_local! {
    /// Power cuts recovered from and checked on this thread (the proptest's cases run on
    /// the test's own thread).
    static CUTS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

fn recover_and_check(s: &mut Stack, m: &mut BTreeMap<String, ModelFile>) {
    CUTS.with(|c| c.set(c.get() + 1));
    s.power_cut();
    s.recover().unwrap();
    let before = std::mem::take(m);
    for i in 0..4 {
        let p = path(i);
        let exists = s.exists(s.now_ns(), &p).unwrap().0;
        if let Some(f) = before.get(&p).filter(|f| f.synced) {
            assert!(exists, "{p} was fsync'd and is gone");
            assert_eq!(
                read_all(s, &p),
                f.bytes,
                "{p} differs from its fsync'd content"
            );
        }
        if exists {
            let bytes = read_all(s, &p);
            m.insert(
                p,
                ModelFile {
                    bytes,
                    synced: true,
                },
            );
        }
    }
}

/// Every case ends with a cut too; the test prints how many cuts it recovered from.
#[test]
fn stack_matches_model() {
    proptest!(
        ProptestConfig { cases: 128, ..ProptestConfig::default() },
        |(ops in prop::collection::vec(op(), 1..40))| {
            one_case(&ops)?;
        }
    );
    let mut tally = flashstack_block::explore::Exploration::new("stack model stack_matches_model");
    for _ in 0..CUTS.with(|c| c.take()) {
        tally.cut();
    }
    tally.report();
}

fn one_case(ops: &[Op]) -> Result<(), TestCaseError> {
    let mut s = Stack::new(StackConfig::preset("default").unwrap()).unwrap();
    s.mkdir(0, "/m").unwrap();
    s.sync_all(s.now_ns()).unwrap();
    let mut m = BTreeMap::new();
    for op in ops {
        if apply(&mut s, &mut m, op).is_err() || s.is_powered_off() {
            recover_and_check(&mut s, &mut m);
            continue;
        }
        let mut cut = false;
        for (p, f) in &m {
            match try_read_all(&mut s, p) {
                Ok(bytes) => prop_assert_eq!(&bytes, &f.bytes, "after {:?}", op),
                Err(_) if s.is_powered_off() => {
                    cut = true;
                    break;
                }
                Err(e) => panic!("{p}: {e}"),
            }
        }
        if cut {
            recover_and_check(&mut s, &mut m);
        }
    }
    recover_and_check(&mut s, &mut m);
    Ok(())
}
