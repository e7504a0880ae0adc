//! Power cuts while a phone ages: after recovery (FTL scan, F2FS roll-forward) every file
//! whose last change was a whole, fsync'd write (packages, pictures, downloads) reads back
//! exactly, the personas' databases pass `integrity_check`, and fsck.f2fs is clean.
//!
//! Power cuts while a persona runs on a loaded (aged, saved and loaded) phone: every file
//! whose last change was a completed sync reads back exactly (a reference model follows
//! every file call), the aged files the run never touched read back exactly, every
//! committed transaction is there, the databases pass `integrity_check`, fsck.f2fs is
//! clean.

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use common::{assert_fsck_clean, check_persona_databases, small_stack};
use flashstack_apps::{run_with, AppSpec, RunOptions, RunOutput};
use flashstack_phone::{Aging, AgingSpec, Fidelity, PhoneError, PhoneImage};
use flashstack_sim::{Nanos, Rng};
use flashstack_sqlvfs::{FileApi, FileError, FileId, OpenFlags, SimDb, SimVfs};
use flashstack_stack::SharedStack;

/// NAND programs and erases so far (what an armed cut counts).
fn nand_writes(shared: &SharedStack) -> u64 {
    let s = shared.lock();
    let n = s.device().expect("powered").nand().counters();
    n.page_programs + n.block_erases
}

fn read_all(shared: &SharedStack, path: &str) -> Option<Vec<u8>> {
    let mut api = shared.clone();
    let now = shared.lock().now_ns();
    let (id, t) = api.open(now, path, OpenFlags::default()).ok()?;
    let (size, t) = api.size(t, id).unwrap();
    let mut data = vec![0u8; size as usize];
    let (n, t) = api.read_at(t, id, 0, &mut data).unwrap();
    assert_eq!(n as u64, size, "{path}: short read");
    api.close(t, id).unwrap();
    Some(data)
}

#[test]
fn a_power_cut_while_aging_keeps_every_fsynced_file() {
    let spec = AgingSpec::new(0.7, 4, 3, Fidelity::Fast);
    let config = small_stack();
    // A full run counts the NAND writes to cut among.
    let mut probe = Aging::new(&config, &spec).unwrap();
    let start = nand_writes(&probe.stack());
    probe.run(&mut |_, _| {}).unwrap();
    let total = nand_writes(&probe.stack()) - start;
    let mut rng = Rng::new(
        std::env::var("PROPTEST_RNG_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(13),
    );
    let mut checked_files = 0;
    for round in 0..3 {
        let at = 1 + rng.below(total);
        let mut aging = Aging::new(&config, &spec).unwrap();
        let shared = aging.stack();
        shared.lock().arm_power_cut(at).unwrap();
        let result = aging.run(&mut |_, _| {});
        assert!(
            shared.lock().is_powered_off(),
            "cut at {at} of {total} did not land"
        );
        match result {
            Err(PhoneError::File { .. } | PhoneError::App { .. } | PhoneError::Stack(_)) => {}
            other => panic!("cut at {at}: aging ended with {:?}", other.err()),
        }
        let durable = aging.durable_files();
        shared
            .lock()
            .recover()
            .unwrap_or_else(|e| panic!("cut at NAND write {at} of {total}: recovery: {e}"));
        for (path, expected) in &durable {
            let Some(found) = read_all(&shared, path) else {
                panic!("cut at {at} of {total}: {path} (fsync'd) is gone");
            };
            assert!(
                found == *expected,
                "cut at {at} of {total}: {path}: {} bytes read, {} fsync'd, contents differ",
                found.len(),
                expected.len()
            );
            checked_files += 1;
        }
        // The personas' apps are set up on the first day; a cut before that leaves some
        // of their databases unborn.
        if durable.iter().any(|(p, _)| p.contains("/DCIM/")) {
            check_persona_databases(&shared);
        }
        if round == 0 {
            assert_fsck_clean(&mut shared.lock(), &format!("aging-cut-{at}"));
        }
    }
    println!("power cuts while aging: 3 cut points, {checked_files} fsync'd files checked");
    assert!(checked_files > 20, "only {checked_files} files checked");
}

/// What a file held as the run's file calls left it, and whether its last change was a
/// completed sync (or the file is as the loaded phone held it, which is durable).
struct Shadow {
    bytes: Vec<u8>,
    synced: bool,
}

/// The reference model of a persona run: every file the run touched, by name.
#[derive(Default)]
struct Model {
    files: BTreeMap<String, Shadow>,
    /// The handles' names (`None`: the name was deleted or renamed away) and whether
    /// the last close deletes the file.
    handles: BTreeMap<FileId, (Option<String>, bool)>,
}

/// The file API over the stack that keeps [`Model`] up to date, call by call: the
/// promise checked after a cut is the stack's (docs/stack.md): a file whose last change
/// was a completed sync reads back exactly.
struct Witnessed {
    inner: SharedStack,
    model: Arc<Mutex<Model>>,
}

impl Witnessed {
    fn model(&self) -> std::sync::MutexGuard<'_, Model> {
        self.model.lock().unwrap()
    }

    /// Changes the shadow of `file`'s name (if it still has one): the change is not
    /// synced, whether the call succeeded or not.
    fn change(&self, file: FileId, ok: bool, f: impl FnOnce(&mut Vec<u8>)) {
        let mut m = self.model();
        let Some((Some(path), _)) = m.handles.get(&file).cloned() else {
            return;
        };
        if let Some(s) = m.files.get_mut(&path) {
            if ok {
                f(&mut s.bytes);
            }
            s.synced = false;
        }
        if !ok {
            // A failed write may have changed any part of the range: unknown content.
            m.files.remove(&path);
        }
    }
}

impl FileApi for Witnessed {
    fn open(
        &mut self,
        now: Nanos,
        path: &str,
        flags: OpenFlags,
    ) -> Result<(FileId, Nanos), FileError> {
        let (existed, now) = self.inner.exists(now, path)?;
        let (id, t) = self.inner.open(now, path, flags)?;
        let known = self.model().files.contains_key(path);
        let t = if known {
            t
        } else {
            let (size, t) = self.inner.size(t, id)?;
            let mut bytes = vec![0u8; size as usize];
            let (n, t) = self.inner.read_at(t, id, 0, &mut bytes)?;
            assert_eq!(n as u64, size, "{path}: short read");
            // A file the loaded phone held is durable; a new name is not yet.
            let shadow = Shadow {
                bytes,
                synced: existed,
            };
            self.model().files.insert(path.to_string(), shadow);
            t
        };
        self.model()
            .handles
            .insert(id, (Some(path.to_string()), flags.delete_on_close));
        Ok((id, t))
    }

    fn close(&mut self, now: Nanos, file: FileId) -> Result<Nanos, FileError> {
        let r = self.inner.close(now, file);
        let mut m = self.model();
        if let Some((Some(path), true)) = m.handles.remove(&file) {
            m.files.remove(&path);
        }
        r
    }

    fn read_at(
        &mut self,
        now: Nanos,
        file: FileId,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<(usize, Nanos), FileError> {
        self.inner.read_at(now, file, offset, buf)
    }

    fn write_at(
        &mut self,
        now: Nanos,
        file: FileId,
        offset: u64,
        data: &[u8],
    ) -> Result<Nanos, FileError> {
        let r = self.inner.write_at(now, file, offset, data);
        self.change(file, r.is_ok(), |b| {
            let end = offset as usize + data.len();
            if b.len() < end {
                b.resize(end, 0);
            }
            b[offset as usize..end].copy_from_slice(data);
        });
        r
    }

    fn truncate(&mut self, now: Nanos, file: FileId, size_bytes: u64) -> Result<Nanos, FileError> {
        let r = self.inner.truncate(now, file, size_bytes);
        self.change(file, r.is_ok(), |b| b.resize(size_bytes as usize, 0));
        r
    }

    fn size(&mut self, now: Nanos, file: FileId) -> Result<(u64, Nanos), FileError> {
        self.inner.size(now, file)
    }

    fn sync(&mut self, now: Nanos, file: FileId, data_only: bool) -> Result<Nanos, FileError> {
        let r = self.inner.sync(now, file, data_only);
        let mut m = self.model();
        if let (Ok(_), Some((Some(path), _))) = (&r, m.handles.get(&file).cloned()) {
            if let Some(s) = m.files.get_mut(&path) {
                s.synced = true;
            }
        }
        r
    }

    fn delete(&mut self, now: Nanos, path: &str, sync_dir: bool) -> Result<Nanos, FileError> {
        let r = self.inner.delete(now, path, sync_dir);
        let mut m = self.model();
        m.files.remove(path);
        for (name, _) in m.handles.values_mut() {
            if name.as_deref() == Some(path) {
                *name = None;
            }
        }
        r
    }

    fn exists(&mut self, now: Nanos, path: &str) -> Result<(bool, Nanos), FileError> {
        self.inner.exists(now, path)
    }

    fn rename(&mut self, now: Nanos, from: &str, to: &str) -> Result<Nanos, FileError> {
        let r = self.inner.rename(now, from, to);
        let mut m = self.model();
        let moved = m.files.remove(from);
        m.files.remove(to);
        if let (Ok(_), Some(mut s)) = (&r, moved) {
            // A namespace change: durable only once a later sync completes.
            s.synced = false;
            m.files.insert(to.to_string(), s);
        }
        for (name, _) in m.handles.values_mut() {
            match name.as_deref() {
                Some(n) if n == from && r.is_ok() => *name = Some(to.to_string()),
                Some(n) if n == to || n == from => *name = None,
                _ => {}
            }
        }
        r
    }

    fn mkdir(&mut self, now: Nanos, path: &str) -> Result<Nanos, FileError> {
        self.inner.mkdir(now, path)
    }
}

/// The aged files no persona touches (packages, pictures, other apps' data), a sample
/// of them with their bytes: what the loaded phone held durably before the run.
fn untouched_sample(shared: &SharedStack, apps: &[&AppSpec]) -> Vec<(String, Vec<u8>)> {
    let (files, _) = shared
        .lock()
        .with_fs(flashstack_phone::measure::file_layouts)
        .unwrap()
        .unwrap();
    files
        .into_iter()
        .filter(|f| !apps.iter().any(|a| f.path.starts_with(&a.data_dir())))
        .step_by(7)
        .take(60)
        .map(|f| {
            let bytes = read_all(shared, &f.path).expect("listed file");
            (f.path, bytes)
        })
        .collect()
}

/// The persona's task on the loaded phone (its apps are there: no setup), file calls
/// through the model.
fn run_task(shared: &SharedStack, model: &Arc<Mutex<Model>>) -> RunOutput {
    let persona = flashstack_apps::persona(CUT_PERSONA).unwrap();
    let api = Witnessed {
        inner: shared.clone(),
        model: Arc::clone(model),
    };
    let options = RunOptions {
        record: false,
        skip_setup: true,
        ..RunOptions::default()
    };
    run_with(persona.as_ref(), Box::new(api), 7, &options)
}

/// The persona cut while it runs on the loaded phone.
const CUT_PERSONA: &str = "facebook";

fn loaded_phone() -> PhoneImage {
    let spec = AgingSpec::new(0.8, 4, 5, Fidelity::Fast);
    flashstack_phone::build(&small_stack(), &spec, &mut |_, _| {}).unwrap()
}

/// A started stack on the loaded phone, with the persona's apps in place.
fn start(phone: &PhoneImage) -> SharedStack {
    let persona = flashstack_apps::persona(CUT_PERSONA).unwrap();
    let mut stack = phone.clone().into_stack(None, 7).unwrap();
    let installed =
        flashstack_phone::prepare_persona(&mut stack, &phone.header, &persona.apps()).unwrap();
    assert!(installed, "{CUT_PERSONA}'s app is on every aged phone");
    SharedStack::new(stack)
}

#[test]
fn a_power_cut_during_a_run_on_a_loaded_phone_keeps_every_fsynced_byte() {
    let phone = loaded_phone();
    let apps = flashstack_apps::persona(CUT_PERSONA).unwrap().apps();
    // An uncut run: the NAND writes to cut among, and the model agrees with the stack.
    let probe = start(&phone);
    let before = nand_writes(&probe);
    let model = Arc::new(Mutex::new(Model::default()));
    let full = run_task(&probe, &model);
    assert!(full.error.is_none(), "{:?}", full.error);
    let total = nand_writes(&probe) - before;
    // Uncut, every synced file reads back as the model says (the model is right).
    assert!(check_model(&probe, &model.lock().unwrap(), "uncut") > 0);
    let mut rng = Rng::new(
        std::env::var("PROPTEST_RNG_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(17),
    );
    let (mut synced_files, mut old_files) = (0, 0);
    for round in 0..3 {
        let at = 1 + rng.below(total);
        let shared = start(&phone);
        let sample = untouched_sample(&shared, &apps);
        let model = Arc::new(Mutex::new(Model::default()));
        shared.lock().arm_power_cut(at).unwrap();
        let out = run_task(&shared, &model);
        assert!(
            out.error.is_some() && shared.lock().is_powered_off(),
            "cut at {at} of {total} did not land"
        );
        shared
            .lock()
            .recover()
            .unwrap_or_else(|e| panic!("cut at NAND write {at} of {total}: recovery: {e}"));
        let what = format!("cut at NAND write {at} of {total}");
        synced_files += check_model(&shared, &model.lock().unwrap(), &what);
        for (path, expected) in &sample {
            let found = read_all(&shared, path).unwrap_or_else(|| panic!("{what}: {path} gone"));
            assert!(found == *expected, "{what}: {path} (untouched) differs");
            old_files += 1;
        }
        check_persona_databases(&shared);
        check_witnesses(&shared, &out, &what);
        if round == 0 {
            assert_fsck_clean(&mut shared.lock(), &format!("run-cut-{at}"));
        }
    }
    println!(
        "power cuts during {CUT_PERSONA} on a loaded phone: 3 cut points, {synced_files} \
         synced files and {old_files} untouched aged files read back exactly"
    );
    assert!(synced_files > 3, "only {synced_files} synced files checked");
}

/// Every file of the model whose last change was a completed sync reads back exactly;
/// returns how many were checked.
fn check_model(shared: &SharedStack, model: &Model, what: &str) -> usize {
    let mut checked = 0;
    for (path, s) in model.files.iter().filter(|(_, s)| s.synced) {
        let found =
            read_all(shared, path).unwrap_or_else(|| panic!("{what}: {path} (synced) is gone"));
        assert!(
            found == s.bytes,
            "{what}: {path}: {} bytes read, {} synced, contents differ",
            found.len(),
            s.bytes.len()
        );
        checked += 1;
    }
    checked
}

/// Every transaction whose COMMIT returned is in its database.
fn check_witnesses(shared: &SharedStack, out: &RunOutput, what: &str) {
    let vfs = SimVfs::register(Box::new(shared.clone()), 3, 1_000).unwrap();
    for (path, config) in &out.databases {
        let Some(db) = SimDb::open(&vfs, path, config).ok() else {
            panic!("{what}: {path} does not open");
        };
        for w in out.witnesses.iter().filter(|w| &w.db_path == path) {
            let max: Option<i64> = db
                .query_row(&format!("SELECT max(rowid) FROM {}", w.table), [], |r| {
                    r.get(0)
                })
                .unwrap();
            assert!(
                max.unwrap_or(0) >= w.rowid_min,
                "{what}: {path} {}: max rowid {max:?} < {} committed",
                w.table,
                w.rowid_min
            );
        }
        db.close().unwrap();
    }
}
