//! Personas: an app (its databases and files) and the user operations run on it.

use flashstack_content::{ContentClass, ContentMix, ContentModel, PAGE_SIZE};
use flashstack_sim::NS_PER_MS;
use flashstack_sqlvfs::{JournalMode, SqliteConfig, Synchronous};
use serde::Serialize;

use crate::ctx::Ctx;
use crate::error::AppError;
use crate::files;
use crate::schema::{self, AddSpec, Kind};
use crate::text;

/// A deterministic program of user operations on an app.
pub trait Persona {
    /// Catalogue name (`gmail:send-image`, `facebook`, `mix`).
    fn name(&self) -> String;
    /// One line: what the user does.
    fn description(&self) -> String;
    /// Which published figures the persona is calibrated to.
    fn calibration(&self) -> String;
    /// The MedFS table row it reproduces, if any.
    fn target(&self) -> Option<MedfsRow> {
        None
    }
    /// The app installed and used before (databases at realistic sizes); not recorded.
    fn setup(&self, ctx: &mut Ctx) -> Result<(), AppError>;
    /// The user's task; recorded.
    fn run(&self, ctx: &mut Ctx) -> Result<(), AppError>;
    /// The apps the persona installs in its setup (a used phone may hold them already).
    fn apps(&self) -> Vec<&'static AppSpec> {
        Vec::new()
    }
}

/// One row of the MedFS workload table (FAST '25 slides, "Empirical Study on Mobile I/O
/// Workload"): volume written in MB, shares in [0, 1].
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct MedfsRow {
    pub app: &'static str,
    pub task: &'static str,
    pub vol_mb: f64,
    pub small: f64,
    pub ur: f64,
    pub ud: f64,
}

/// How an app configures SQLite.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Journal {
    /// Android's framework default up to Android 8 (PERSIST, FULL).
    Persist,
    /// TRUNCATE with FULL (later framework default for rollback journals).
    Truncate,
    /// WAL with FULL (compatibility WAL, `db_wal_sync_mode`; apps that enable WAL).
    Wal,
    /// WAL with NORMAL (apps that relax sync: only checkpoints sync).
    WalNormal,
}

impl Journal {
    /// The SQLite configuration.
    pub fn config(self) -> SqliteConfig {
        match self {
            Journal::Persist => SqliteConfig::android(),
            Journal::Truncate => SqliteConfig::android().with_journal_mode(JournalMode::Truncate),
            Journal::Wal => SqliteConfig::android_wal(),
            Journal::WalNormal => SqliteConfig::android_wal().with_synchronous(Synchronous::Normal),
        }
    }
}

/// A database of an app: file name, what it holds, how big it is when the task starts.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct DbSpec {
    pub file: &'static str,
    pub kind: Kind,
    /// Rows of the primary table inserted at setup.
    pub setup_rows: u64,
    /// Bytes of text (or BLOB) per row.
    pub body_bytes: usize,
    /// Conversations, dialogs or authors the rows spread over.
    pub threads: i64,
    /// The database's journal mode if not the app's.
    pub journal: Option<Journal>,
}

/// An app: package, SQLite settings, databases and other files.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct AppSpec {
    pub name: &'static str,
    pub package: &'static str,
    pub journal: Journal,
    /// Extra PRAGMAs the app sets (e.g. Telegram's `secure_delete`).
    pub pragmas: &'static [&'static str],
    pub dbs: &'static [DbSpec],
    /// Shared-preferences files (names without `.xml`).
    pub prefs: &'static [&'static str],
    /// Entries per preferences file.
    pub prefs_entries: usize,
    /// A memory-mapped key-value file patched in place (MMKV-like), and its size.
    pub state: Option<(&'static str, u64)>,
    /// The app's log file (appended).
    pub log: Option<&'static str>,
    /// Directory of downloaded or cached media, under the app's data directory.
    pub media_dir: &'static str,
    /// Extension of media files.
    pub media_ext: &'static str,
}

impl AppSpec {
    pub fn data_dir(&self) -> String {
        format!("/data/data/{}", self.package)
    }
    pub fn db_path(&self, i: usize) -> String {
        format!("{}/databases/{}", self.data_dir(), self.dbs[i].file)
    }
    pub fn prefs_path(&self, i: usize) -> String {
        format!("{}/shared_prefs/{}.xml", self.data_dir(), self.prefs[i])
    }
    pub fn media_path(&self, n: u64) -> String {
        format!(
            "{}/{}/{:016x}.{}",
            self.data_dir(),
            self.media_dir,
            n.wrapping_mul(0x9E37_79B9_7F4A_7C15),
            self.media_ext
        )
    }
    fn schema_name(i: usize) -> String {
        if i == 0 {
            "main".to_owned()
        } else {
            format!("db{i}")
        }
    }

    /// Opens the app's databases (the first as `main`, the rest attached as `db1`, ...).
    pub fn open(&self, ctx: &mut Ctx) -> Result<(), AppError> {
        let dbs: Vec<(String, String, SqliteConfig)> = (0..self.dbs.len())
            .map(|i| {
                let journal = self.dbs[i].journal.unwrap_or(self.journal);
                (Self::schema_name(i), self.db_path(i), journal.config())
            })
            .collect();
        ctx.open_app(&dbs, self.pragmas)
    }

    /// Installs the app and brings it to its used state: directories, schemas, rows,
    /// preferences, the state file, a log, a few cached media files.
    pub fn install(&self, ctx: &mut Ctx) -> Result<(), AppError> {
        let dir = self.data_dir();
        for sub in ["", "/databases", "/shared_prefs", "/files", "/cache"] {
            mkdir_quiet(ctx, &format!("{dir}{sub}"))?;
        }
        mkdir_quiet(ctx, &format!("{dir}/{}", self.media_dir))?;
        self.open(ctx)?;
        for (i, db) in self.dbs.iter().enumerate() {
            let s = Self::schema_name(i);
            ctx.db()?.execute_batch(&db.kind.ddl(&s))?;
            let mut left = db.setup_rows;
            while left > 0 {
                let n = left.min(500);
                left -= n;
                let spec = AddSpec {
                    body_bytes: db.body_bytes,
                    threads: db.threads,
                    now_ms: (ctx.now() / NS_PER_MS) as i64,
                };
                let kind = db.kind;
                let s2 = s.clone();
                ctx.txn(move |c, rng| {
                    schema::add(c, &s2, kind, rng, n, spec)?;
                    Ok(((), vec![(s2.clone(), kind.primary().to_owned())]))
                })?;
            }
        }
        for i in 0..self.prefs.len() {
            write_prefs(ctx, self, i)?;
        }
        if let Some((name, bytes)) = self.state {
            let path = format!("{dir}/files/{name}");
            mkdir_parent(ctx, &path)?;
            let model = state_model(ctx, 0.0)?;
            let mut data = Vec::with_capacity(bytes as usize);
            for page in 0..bytes.div_ceil(PAGE_SIZE as u64) {
                data.extend_from_slice(ctx.state_page(&model, page, 0));
            }
            data.truncate(bytes as usize);
            files::write_file(ctx, &path, &data, true)?;
        }
        if let Some(log) = self.log {
            mkdir_parent(ctx, &format!("{dir}/files/{log}"))?;
            let mut lines = String::new();
            for _ in 0..64 {
                let now = ctx.now();
                lines.push_str(&text::log_line(&mut ctx.rng, now, 120));
            }
            files::append(ctx, &format!("{dir}/files/{log}"), lines.as_bytes())?;
        }
        Ok(())
    }
}

/// `mkdir -p` of the directory `path` is in.
fn mkdir_parent(ctx: &mut Ctx, path: &str) -> Result<(), AppError> {
    match path.rsplit_once('/') {
        Some((parent, _)) if !parent.is_empty() => mkdir_quiet(ctx, parent),
        _ => Ok(()),
    }
}

/// `mkdir -p`: every missing directory on the way to `path`.
pub(crate) fn mkdir_quiet(ctx: &mut Ctx, path: &str) -> Result<(), AppError> {
    let mut at = String::new();
    for part in path.split('/').filter(|p| !p.is_empty()) {
        at.push('/');
        at.push_str(part);
        match ctx.mkdir(&at) {
            Err(AppError::File {
                source: flashstack_sqlvfs::FileError::AlreadyExists(_),
                ..
            })
            | Ok(()) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn write_prefs(ctx: &mut Ctx, app: &AppSpec, i: usize) -> Result<(), AppError> {
    let version = ctx.next_seq();
    let xml = text::prefs_xml(&mut ctx.rng, app.prefs_entries, version);
    files::atomic_write(ctx, &app.prefs_path(i), xml.as_bytes())
}

/// One thing an operation does. Counts are per execution of the step.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum Step {
    /// `txns` transactions on database `db`, each inserting `rows` rows of `body` bytes.
    Add {
        db: u8,
        txns: u32,
        rows: u32,
        body: u32,
    },
    /// `txns` transactions on `db`, each updating small fields of `rows` recent rows.
    Touch { db: u8, txns: u32, rows: u32 },
    /// Reads the newest `rows` rows of `db`.
    Read { db: u8, rows: u32 },
    /// One transaction deleting the `rows` oldest rows of `db`.
    Evict { db: u8, rows: u32 },
    /// `files` new media files of `kib` KiB each (downloaded images, voice notes),
    /// written in 64 KiB calls, fsynced if `fsync`.
    Media { files: u32, kib: u32, fsync: bool },
    /// Reads back `files` recent media files (showing cached images).
    ShowMedia { files: u32 },
    /// `files` temporary files of `kib` KiB written, read back and deleted
    /// (uploads being prepared, image transcodes).
    Temp { files: u32, kib: u32 },
    /// Commits preferences file `file` `writes` times (new file, fsync, rename).
    Prefs { file: u8, writes: u32 },
    /// Appends `bytes` of log lines.
    Log { bytes: u32 },
    /// Patches the state file in place `writes` times: `kib` KiB from the start, of which
    /// `change_permille` per thousand of the bytes differ from before, then msync (fsync).
    State {
        writes: u32,
        kib: u32,
        change_permille: u32,
    },
    /// Idle time inside the operation (waiting for the network).
    Wait { ms: u32 },
}

/// A user operation: a name (the latency table's row) and what it does.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct UserOp {
    pub name: &'static str,
    pub steps: Vec<Step>,
    /// How many times the user repeats it.
    pub repeat: u32,
    /// Think time after each repetition (ms).
    pub think_ms: u32,
}

/// Runs the steps of one operation.
pub fn exec(ctx: &mut Ctx, app: &AppSpec, steps: &[Step]) -> Result<(), AppError> {
    for step in steps {
        exec_step(ctx, app, *step)?;
    }
    Ok(())
}

fn exec_step(ctx: &mut Ctx, app: &AppSpec, step: Step) -> Result<(), AppError> {
    match step {
        Step::Add {
            db,
            txns,
            rows,
            body,
        } => {
            let (s, spec) = db_of(ctx, app, db)?;
            for _ in 0..txns {
                let add = AddSpec {
                    body_bytes: body as usize,
                    threads: spec.threads,
                    now_ms: (ctx.now() / NS_PER_MS) as i64,
                };
                let s2 = s.clone();
                ctx.txn(move |c, rng| {
                    schema::add(c, &s2, spec.kind, rng, u64::from(rows), add)?;
                    Ok(((), vec![(s2.clone(), spec.kind.primary().to_owned())]))
                })?;
            }
        }
        Step::Touch { db, txns, rows } => {
            let (s, spec) = db_of(ctx, app, db)?;
            for _ in 0..txns {
                let now_ms = (ctx.now() / NS_PER_MS) as i64;
                let s2 = s.clone();
                ctx.txn(move |c, rng| {
                    schema::touch(c, &s2, spec.kind, rng, u64::from(rows), now_ms)?;
                    Ok(((), Vec::new()))
                })?;
            }
        }
        Step::Read { db, rows } => {
            let (s, spec) = db_of(ctx, app, db)?;
            schema::read_recent(ctx.db()?, &s, spec.kind, u64::from(rows))?;
        }
        Step::Evict { db, rows } => {
            let (s, spec) = db_of(ctx, app, db)?;
            ctx.txn(move |c, _| {
                schema::evict(c, &s, spec.kind, u64::from(rows))?;
                Ok(((), Vec::new()))
            })?;
        }
        Step::Media { files, kib, fsync } => {
            for _ in 0..files {
                let n = ctx.next_seq();
                let mut data = vec![0u8; kib as usize * 1024];
                ctx.media_bytes(n, &mut data);
                files::create_file(ctx, &app.media_path(n), &data, fsync)?;
            }
        }
        Step::ShowMedia { files } => {
            let newest = ctx.next_seq();
            for back in 1..=u64::from(files) {
                let path = app.media_path(newest.saturating_sub(back));
                files::read_file(ctx, &path, 4 << 20)?;
            }
        }
        Step::Temp { files, kib } => {
            for _ in 0..files {
                let n = ctx.next_seq();
                let path = format!("{}/cache/tmp{n:08}.tmp", app.data_dir());
                let mut data = vec![0u8; kib as usize * 1024];
                ctx.media_bytes(n, &mut data);
                files::create_file(ctx, &path, &data, false)?;
                files::read_file(ctx, &path, data.len())?;
                ctx.delete(&path)?;
            }
        }
        Step::Prefs { file, writes } => {
            let i = usize::from(file).min(app.prefs.len().saturating_sub(1));
            for _ in 0..writes {
                if !app.prefs.is_empty() {
                    write_prefs(ctx, app, i)?;
                }
            }
        }
        Step::Log { bytes } => {
            if let Some(log) = app.log {
                let mut lines = String::new();
                while lines.len() < bytes as usize {
                    let now = ctx.now();
                    lines.push_str(&text::log_line(&mut ctx.rng, now, 120));
                }
                lines.truncate(bytes as usize);
                files::append(
                    ctx,
                    &format!("{}/files/{log}", app.data_dir()),
                    lines.as_bytes(),
                )?;
            }
        }
        Step::State {
            writes,
            kib,
            change_permille,
        } => patch_state(ctx, app, writes, kib, change_permille)?,
        Step::Wait { ms } => ctx.think(u64::from(ms) * NS_PER_MS),
    }
    Ok(())
}

fn db_of(ctx: &Ctx, app: &AppSpec, db: u8) -> Result<(String, DbSpec), AppError> {
    let i = usize::from(db);
    let spec = *app.dbs.get(i).ok_or_else(|| {
        AppError::Analyze(format!("app '{}' has no database number {i}", app.name))
    })?;
    Ok((ctx.schema(&AppSpec::schema_name(i))?, spec))
}

fn patch_state(
    ctx: &mut Ctx,
    app: &AppSpec,
    writes: u32,
    kib: u32,
    change_permille: u32,
) -> Result<(), AppError> {
    let Some((name, size)) = app.state else {
        return Ok(());
    };
    let path = format!("{}/files/{name}", app.data_dir());
    let ratio = f64::from(change_permille.min(1000)) / 1000.0;
    let model = state_model(ctx, ratio)?;
    let pages = (u64::from(kib) * 1024).min(size).div_ceil(PAGE_SIZE as u64);
    let f = ctx.open(&path, true)?;
    for _ in 0..writes {
        let mut data = Vec::with_capacity(pages as usize * PAGE_SIZE);
        for page in 0..pages {
            let v = ctx.state_version(page);
            data.extend_from_slice(ctx.state_page(&model, page, v));
        }
        ctx.write_at(f, &path, 0, &data)?;
        ctx.fsync(f, &path)?;
    }
    ctx.close(f, &path)
}

/// The state file's content: text pages whose successive versions differ by `ratio`.
fn state_model(ctx: &Ctx, ratio: f64) -> Result<ContentModel, AppError> {
    ContentModel::new(ctx.content_seed(), ContentMix::only(ContentClass::Text))
        .with_change_ratio(ratio)
        .map_err(|e| AppError::Analyze(e.to_string()))
}
