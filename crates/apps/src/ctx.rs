//! The persona's world while it runs: one file system, one virtual clock, one SQLite
//! connection (the foreground app's), the seeded PRNG, and per-operation latencies.

use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use std::rc::Rc;

use flashstack_content::{ContentClass, ContentMix, ContentModel, PAGE_SIZE};
use flashstack_sim::{LatencyHistogram, Nanos, Rng};
use flashstack_sqlvfs::{FileApi, FileId, OpenFlags, SimDb, SimVfs, SqliteConfig};

use crate::error::AppError;
use crate::interaction::{Interaction, InteractionConfig, InteractionCounts};
use crate::recorder::{BoxedApi, Recorder};
use crate::shared::Shared;
use flashstack_sqlvfs::UserInput;

/// The file system as the persona sees it: shared with SQLite, recorded on demand.
pub type AppFs = Shared<Recorder<BoxedApi>>;

/// Most distinct operation names a run keeps latencies for.
const OP_NAMES_MAX: usize = 256;
/// Most witnesses (one per table written) a run remembers.
const WITNESSES_MAX: usize = 1024;
/// SQLite allows the main database plus ten attached ones.
pub const DATABASES_MAX: usize = 10;

/// Evidence that a committed transaction is durable: after it committed, `max(rowid)` of
/// `schema_path`'s `table` was at least `rowid_min`. Rows are only ever deleted oldest
/// first, never the newest, so the value can only grow while the persona runs.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Witness {
    /// The database file.
    pub db_path: String,
    /// The table.
    pub table: String,
    /// The newest rowid committed.
    pub rowid_min: i64,
}

/// One attached database of the foreground app.
#[derive(Clone, Debug)]
struct DbSlot {
    schema: String,
    path: String,
}

/// An app [`Ctx::stop_app`] closed, to open again: its databases and extra pragmas.
#[derive(Clone)]
pub struct ReopenApp(Vec<(String, String, SqliteConfig)>, Vec<String>);

/// Everything a persona touches while it runs.
pub struct Ctx {
    vfs: Rc<SimVfs>,
    fs: AppFs,
    db: Option<SimDb>,
    slots: Vec<DbSlot>,
    /// What the open app was opened with (its databases and extra pragmas), so a cold
    /// start can open it again as a freshly started process would.
    opened: Option<ReopenApp>,
    /// The persona's seeded PRNG (its own stream; SQLite's comes from the VFS).
    pub rng: Rng,
    content: ContentModel,
    latencies: BTreeMap<String, LatencyHistogram>,
    witnesses: BTreeMap<(String, String), i64>,
    commits: u64,
    user_ops: u64,
    app_cpu_ns_per_call: Nanos,
    /// Counter for unique file names and content-model addresses.
    seq: u64,
    /// Every database a run opened (path and configuration), in order of first use.
    databases: Vec<(String, SqliteConfig)>,
    /// Version of each state-file page (see `Step::State`).
    state_versions: BTreeMap<u64, u32>,
    /// Each state-file page as last generated (version, change ratio, bytes): the next
    /// version rewrites only the lines that changed (see `ContentModel::refill_class`).
    state_pages: BTreeMap<u64, (u32, f64, Box<[u8; PAGE_SIZE]>)>,
    /// The user's touches, scrolls, keys and screen-off periods around the operations.
    interaction: Interaction,
    /// When the last user operation ended.
    last_op_end_ns: Nanos,
}

impl std::fmt::Debug for Ctx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ctx")
            .field("vfs", &self.vfs)
            .field("commits", &self.commits)
            .finish()
    }
}

impl Ctx {
    pub(crate) fn new(vfs: Rc<SimVfs>, fs: AppFs, seed: u64, app_cpu_ns_per_call: Nanos) -> Self {
        let mut rng = Rng::new(seed);
        let content = ContentModel::new(rng.next_u64(), ContentMix::only(ContentClass::Media));
        Self {
            vfs,
            fs,
            db: None,
            slots: Vec::new(),
            opened: None,
            rng: rng.fork(1),
            content,
            latencies: BTreeMap::new(),
            witnesses: BTreeMap::new(),
            commits: 0,
            user_ops: 0,
            app_cpu_ns_per_call,
            seq: 0,
            databases: Vec::new(),
            state_versions: BTreeMap::new(),
            state_pages: BTreeMap::new(),
            interaction: Interaction::new(seed, InteractionConfig::default()),
            last_op_end_ns: 0,
        }
    }

    /// The next version of state-file page `page` (1 on its first patch).
    pub fn state_version(&mut self, page: u64) -> u32 {
        let v = self.state_versions.entry(page).or_insert(0);
        *v = v.saturating_add(1);
        *v
    }

    /// The bytes of `version` of state-file page `page` under `model` (text pages of the
    /// run's content seed), the same as `model.fill_class(Text, page, version, _)`.
    pub(crate) fn state_page(&mut self, model: &ContentModel, page: u64, version: u32) -> &[u8] {
        debug_assert_eq!(model.seed(), self.content_seed());
        let ratio = model.change_ratio();
        let (was_version, was_ratio, bytes) = match self.state_pages.entry(page) {
            Entry::Vacant(e) => {
                let mut bytes = Box::new([0u8; PAGE_SIZE]);
                model.fill_class(ContentClass::Text, page, version, &mut bytes[..]);
                e.insert((version, ratio, bytes))
            }
            Entry::Occupied(e) => e.into_mut(),
        };
        model.refill_class(
            ContentClass::Text,
            page,
            *was_version,
            *was_ratio,
            version,
            &mut bytes[..],
        );
        (*was_version, *was_ratio) = (version, ratio);
        &bytes[..]
    }

    /// The seed of the run's content model.
    pub fn content_seed(&self) -> u64 {
        self.content.seed()
    }

    /// Forgets the latencies and operation count of the setup phase.
    pub(crate) fn reset_ops(&mut self) {
        self.latencies.clear();
        self.user_ops = 0;
        self.interaction.reset_counts();
    }

    /// Hands the user's inputs to the file system below (in time order).
    fn deliver(&mut self, inputs: Vec<(Nanos, UserInput)>) {
        self.fs.with(|fs| {
            for (t, input) in inputs {
                fs.user_input(t, input);
            }
        });
    }

    /// The user puts the phone down after the task: the screen goes off after its timeout.
    pub(crate) fn put_down(&mut self) {
        let inputs = self.interaction.put_down(self.now());
        self.deliver(inputs);
    }

    /// How many touches, scrolls, keys and screen-offs the task made.
    pub(crate) fn interaction_counts(&self) -> InteractionCounts {
        self.interaction.counts()
    }

    // ---- time -----------------------------------------------------------------------

    /// The virtual time now.
    pub fn now(&self) -> Nanos {
        self.vfs.now_ns()
    }

    /// Idle time (the user reads, thinks, or the phone sits in a pocket).
    pub fn think(&mut self, ns: Nanos) {
        let t = self.now().saturating_add(ns);
        self.vfs.advance_to(t);
    }

    /// Charges CPU time of the app itself (decoding, rendering) to the clock.
    pub fn cpu(&mut self, ns: Nanos) {
        self.think(ns);
    }

    /// Runs one user operation and records its latency (completion − start, virtual)
    /// under `name`.
    pub fn user_op<T>(
        &mut self,
        name: &str,
        f: impl FnOnce(&mut Self) -> Result<T, AppError>,
    ) -> Result<T, AppError> {
        let start = self.now();
        let inputs = self.interaction.before_op(name, self.last_op_end_ns, start);
        self.deliver(inputs);
        let out = f(self)?;
        self.last_op_end_ns = self.now();
        let latency = self.now() - start;
        if !self.latencies.contains_key(name) && self.latencies.len() >= OP_NAMES_MAX {
            return Err(AppError::TableFull {
                table: "operation names",
                limit: OP_NAMES_MAX,
            });
        }
        self.latencies
            .entry(name.to_owned())
            .or_default()
            .record(latency);
        self.user_ops += 1;
        Ok(out)
    }

    pub(crate) fn latencies(&self) -> &BTreeMap<String, LatencyHistogram> {
        &self.latencies
    }

    pub(crate) fn user_ops(&self) -> u64 {
        self.user_ops
    }

    /// A fresh number for unique names.
    /// Restarts the counter of unique names at `seq` (runs sharing an installation).
    pub(crate) fn set_seq(&mut self, seq: u64) {
        self.seq = seq;
    }

    pub fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    // ---- databases ------------------------------------------------------------------

    /// Makes an app's databases the open ones: closes the previous app's connection (one
    /// connection per process: `SimDb` serialises connections), opens the first database
    /// as `main` and attaches the others under their schema names, each configured by its
    /// own `SqliteConfig` (journal mode, synchronous, ...). Attaching rather than opening
    /// more connections gives each database its own file, journal and page cache, as
    /// separate connections would, while SQLite's process-global PRNG stays seeded.
    pub fn open_app(
        &mut self,
        dbs: &[(String, String, SqliteConfig)],
        extra_pragmas: &[&str],
    ) -> Result<(), AppError> {
        self.close_app()?;
        let Some((_, first_path, first_config)) = dbs.first() else {
            return Ok(());
        };
        if dbs.len() > DATABASES_MAX {
            return Err(AppError::TableFull {
                table: "databases per app",
                limit: DATABASES_MAX,
            });
        }
        let db = SimDb::open(&self.vfs, first_path, first_config)?;
        self.slots = vec![DbSlot {
            schema: "main".to_owned(),
            path: first_path.clone(),
        }];
        for (schema, path, config) in &dbs[1..] {
            db.execute("ATTACH DATABASE ?1 AS ?2", (path.as_str(), schema.as_str()))?;
            for pragma in config.pragmas() {
                let qualified = pragma.replacen("PRAGMA ", &format!("PRAGMA {schema}."), 1);
                run_pragma(&db, &qualified)?;
            }
            self.slots.push(DbSlot {
                schema: schema.clone(),
                path: path.clone(),
            });
        }
        for pragma in extra_pragmas {
            run_pragma(&db, pragma)?;
        }
        for (_, path, config) in dbs {
            if !self.databases.iter().any(|(p, _)| p == path) {
                self.databases.push((path.clone(), config.clone()));
            }
        }
        self.db = Some(db);
        let pragmas = extra_pragmas.iter().map(|p| p.to_string()).collect();
        self.opened = Some(ReopenApp(dbs.to_vec(), pragmas));
        Ok(())
    }

    /// Closes the foreground app's connection, if any.
    pub fn close_app(&mut self) -> Result<(), AppError> {
        if let Some(db) = self.db.take() {
            db.close()?;
        }
        self.slots.clear();
        Ok(())
    }

    /// Closes the foreground app (as the process exits) and returns what reopens it:
    /// a cold start closes the app before the caches are dropped and opens it again
    /// ([`Ctx::reopen_app`]) as the launched process does, with SQLite's page cache empty.
    pub fn stop_app(&mut self) -> Result<Option<ReopenApp>, AppError> {
        let was_open = self.db.is_some();
        self.close_app()?;
        Ok(self.opened.clone().filter(|_| was_open))
    }

    /// Opens the app [`Ctx::stop_app`] closed, with the same databases and pragmas.
    pub fn reopen_app(&mut self, app: ReopenApp) -> Result<(), AppError> {
        let ReopenApp(dbs, pragmas) = app;
        let pragmas: Vec<&str> = pragmas.iter().map(String::as_str).collect();
        self.open_app(&dbs, &pragmas)
    }

    /// The open connection.
    pub fn db(&self) -> Result<&SimDb, AppError> {
        self.db
            .as_ref()
            .ok_or(AppError::Sql(rusqlite::Error::InvalidQuery))
    }

    /// The schema name of the app's database whose file name ends with `name`
    /// (`main` for the first).
    pub fn schema(&self, name: &str) -> Result<String, AppError> {
        self.slots
            .iter()
            .find(|s| s.path.ends_with(name) || s.schema == name)
            .map(|s| s.schema.clone())
            .ok_or_else(|| AppError::Analyze(format!("no open database named '{name}'")))
    }

    fn path_of_schema(&self, schema: &str) -> String {
        self.slots
            .iter()
            .find(|s| s.schema == schema)
            .map_or_else(String::new, |s| s.path.clone())
    }

    /// Runs `f` inside `BEGIN` … `COMMIT` (rolled back on error). After the
    /// commit returns, the transaction is durable (synchronous FULL), so the newest
    /// rowids it wrote become witnesses for the power-cut tests.
    pub fn txn<T>(
        &mut self,
        f: impl FnOnce(&rusqlite::Connection, &mut Rng) -> Result<(T, Vec<(String, String)>), AppError>,
    ) -> Result<T, AppError> {
        let mut rng = self.rng.fork(self.seq);
        self.seq += 1;
        let db = self
            .db
            .as_ref()
            .ok_or(AppError::Sql(rusqlite::Error::InvalidQuery))?;
        // DEFERRED, not Android's EXCLUSIVE: on one connection with attached databases an
        // EXCLUSIVE or IMMEDIATE transaction write-locks every database, and COMMIT then
        // writes a super-journal (`-mj…`) that separate connections never would.
        db.execute_batch("BEGIN")?;
        let result = f(db, &mut rng);
        let (out, written) = match result {
            Ok(v) => v,
            Err(e) => {
                let _ = db.execute_batch("ROLLBACK");
                return Err(e);
            }
        };
        // The newest rowid of each written table, read before COMMIT from the page cache.
        let mut maxima = Vec::with_capacity(written.len());
        for (schema, table) in &written {
            let max: Option<i64> = db.query_row(
                &format!("SELECT max(rowid) FROM {schema}.{table}"),
                [],
                |r| r.get(0),
            )?;
            maxima.push((schema.clone(), table.clone(), max.unwrap_or(0)));
        }
        db.execute_batch("COMMIT")?;
        self.commits += 1;
        for (schema, table, max) in maxima {
            let key = (self.path_of_schema(&schema), table);
            if !self.witnesses.contains_key(&key) && self.witnesses.len() >= WITNESSES_MAX {
                continue;
            }
            let w = self.witnesses.entry(key).or_insert(0);
            *w = (*w).max(max);
        }
        Ok(out)
    }

    /// Transactions committed so far.
    pub fn commits(&self) -> u64 {
        self.commits
    }

    pub(crate) fn witnesses(&self) -> Vec<Witness> {
        self.witnesses
            .iter()
            .map(|((db_path, table), &rowid_min)| Witness {
                db_path: db_path.clone(),
                table: table.clone(),
                rowid_min,
            })
            .collect()
    }

    pub(crate) fn databases(&self) -> &[(String, SqliteConfig)] {
        &self.databases
    }

    // ---- files ----------------------------------------------------------------------

    /// The shared file system (for recording control).
    pub(crate) fn fs(&self) -> &AppFs {
        &self.fs
    }

    /// Issues one file call at the current time plus the app's CPU cost per call, and
    /// moves the clock to its completion.
    fn call<T>(
        &mut self,
        call: &'static str,
        path: &str,
        f: impl FnOnce(&mut AppFs, Nanos) -> Result<(T, Nanos), flashstack_sqlvfs::FileError>,
    ) -> Result<T, AppError> {
        let now = self.now() + self.app_cpu_ns_per_call;
        let (v, done) = f(&mut self.fs, now).map_err(|e| AppError::file(call, path, e))?;
        self.vfs.advance_to(done.max(now));
        Ok(v)
    }

    /// Opens `path`, creating it if `create`.
    pub fn open(&mut self, path: &str, create: bool) -> Result<FileId, AppError> {
        let flags = OpenFlags {
            create,
            ..OpenFlags::default()
        };
        self.call("open", path, |fs, now| fs.open(now, path, flags))
    }

    pub fn close(&mut self, file: FileId, path: &str) -> Result<(), AppError> {
        self.call("close", path, |fs, now| {
            fs.close(now, file).map(|t| ((), t))
        })
    }

    pub fn write_at(
        &mut self,
        file: FileId,
        path: &str,
        offset: u64,
        data: &[u8],
    ) -> Result<(), AppError> {
        self.call("write_at", path, |fs, now| {
            fs.write_at(now, file, offset, data).map(|t| ((), t))
        })
    }

    pub fn read_at(
        &mut self,
        file: FileId,
        path: &str,
        offset: u64,
        len: usize,
    ) -> Result<Vec<u8>, AppError> {
        let mut buf = vec![0; len];
        let n = self.call("read_at", path, |fs, now| {
            fs.read_at(now, file, offset, &mut buf)
        })?;
        buf.truncate(n);
        Ok(buf)
    }

    pub fn fsync(&mut self, file: FileId, path: &str) -> Result<(), AppError> {
        self.call("sync", path, |fs, now| {
            fs.sync(now, file, false).map(|t| ((), t))
        })
    }

    pub fn truncate(&mut self, file: FileId, path: &str, size: u64) -> Result<(), AppError> {
        self.call("truncate", path, |fs, now| {
            fs.truncate(now, file, size).map(|t| ((), t))
        })
    }

    pub fn size(&mut self, file: FileId, path: &str) -> Result<u64, AppError> {
        self.call("size", path, |fs, now| fs.size(now, file))
    }

    pub fn exists(&mut self, path: &str) -> Result<bool, AppError> {
        self.call("exists", path, |fs, now| fs.exists(now, path))
    }

    pub fn delete(&mut self, path: &str) -> Result<(), AppError> {
        self.call("delete", path, |fs, now| {
            fs.delete(now, path, false).map(|t| ((), t))
        })
    }

    pub fn rename(&mut self, from: &str, to: &str) -> Result<(), AppError> {
        self.call("rename", from, |fs, now| {
            fs.rename(now, from, to).map(|t| ((), t))
        })
    }

    pub fn mkdir(&mut self, path: &str) -> Result<(), AppError> {
        self.call("mkdir", path, |fs, now| {
            fs.mkdir(now, path).map(|t| ((), t))
        })
    }

    /// Fills `out` with incompressible media bytes (JPEG-like first page) for file `file_no`.
    pub fn media_bytes(&self, file_no: u64, out: &mut [u8]) {
        let mut page = [0u8; PAGE_SIZE];
        for (i, chunk) in out.chunks_mut(PAGE_SIZE).enumerate() {
            // Each file gets its own range of content-model addresses.
            let lba = (file_no << 20) + i as u64;
            self.content
                .fill_class(ContentClass::Media, lba, 0, &mut page);
            chunk.copy_from_slice(&page[..chunk.len()]);
        }
    }

    /// Text-class bytes from the content model (logs, JSON caches) for address `lba`.
    pub fn text_page(&self, lba: u64, version: u32) -> Vec<u8> {
        let mut page = vec![0u8; PAGE_SIZE];
        self.content
            .fill_class(ContentClass::Text, lba, version, &mut page);
        page
    }
}

fn run_pragma(db: &SimDb, sql: &str) -> Result<(), AppError> {
    // Some PRAGMAs return a row (journal_mode, locking_mode), others none.
    db.query_row(sql, [], |_| Ok(()))
        .or_else(|e| match e {
            rusqlite::Error::QueryReturnedNoRows => Ok(()),
            e => Err(e),
        })
        .map_err(AppError::Sql)
}
