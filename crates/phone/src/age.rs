//! Months of use, compressed: a day at a time, apps are used, updated, installed and
//! removed, caches grow and are trimmed, pictures, videos and downloads come and go, until
//! the file system holds the target fill on the last day. Everything goes through the
//! whole stack (page cache, F2FS with its cleaning, SSR, checkpoints and discards, the FTL
//! with its GC), with the phone idle between the day's events and overnight.
//!
//! Two paths share this timeline and differ in how an app session writes:
//! - realistic ([`Fidelity::Realistic`]): every session runs its archetype persona's own
//!   task (real SQLite, preferences, media, state files) on the app's installation;
//! - fast ([`Fidelity::Fast`]): sessions write the task's page-level footprint
//!   ([`crate::apps::Footprint`]) directly, SQLite's journal pattern included, and the
//!   personas' own apps run their real task at most every `persona_every_days` (their
//!   other sessions write only their files, not their databases).

use std::collections::VecDeque;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use flashstack_apps::{run_with, AppSpec, Persona, RunOptions, TaskPersona};
use flashstack_sim::{Nanos, Rng, NS_PER_SEC};
use flashstack_stack::{SharedStack, Stack, StackConfig};
use serde::{Deserialize, Serialize};

use crate::apps::{
    archetypes, db_is_wal, initial_db_bytes, instance_spec, session_ops, App, Footprint,
    SESSION_SHARE,
};
use crate::error::PhoneError;
use crate::model::{poisson, PopulationModel};
use crate::writer::{key_of, Bytes, Writer, BULK_CHUNK_BYTES};

pub const DAY_NS: Nanos = 86_400 * NS_PER_SEC;
const HOUR_NS: Nanos = 3_600 * NS_PER_SEC;
const PAGE: u64 = 4096;
/// Pages a WAL grows to before the app checkpoints it (SQLite's default 1000).
const WAL_CHECKPOINT_PAGES: u64 = 1000;
/// Virtual length of one app session [assumed: about a minute].
const SESSION_NS: Nanos = 60 * NS_PER_SEC;
/// How long the phone stays awake, idle, after the user's last action before it suspends
/// (the screen-off timeout) [assumed: 30 s]. Asleep, no background work runs.
const AWAKE_TAIL_NS: Nanos = 30 * NS_PER_SEC;
/// Android's daily idle maintenance (charging, screen off, at night): the phone stays
/// awake this long and F2FS's background cleaning runs [assumed: 10 minutes at 03:00].
const MAINTENANCE_AT_NS: Nanos = 3 * HOUR_NS;
const MAINTENANCE_NS: Nanos = 10 * 60 * NS_PER_SEC;

/// How sessions write (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fidelity {
    Fast,
    Realistic,
}

/// What phone to make.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgingSpec {
    /// Target utilisation of the file system (valid blocks ÷ user blocks) at the end.
    pub fill: f64,
    /// Days of use.
    pub days: u32,
    pub seed: u64,
    pub fidelity: Fidelity,
    /// Fast path: fewest days between two real sessions of a persona's app.
    pub persona_every_days: u32,
    pub model: PopulationModel,
}

impl AgingSpec {
    /// A used phone: `fill` full after `days` days.
    pub fn new(fill: f64, days: u32, seed: u64, fidelity: Fidelity) -> AgingSpec {
        AgingSpec {
            fill,
            days,
            seed,
            fidelity,
            persona_every_days: 3,
            model: PopulationModel::default(),
        }
    }

    pub fn validate(&self) -> Result<(), PhoneError> {
        let spec = |field, reason: String| Err(PhoneError::Spec { field, reason });
        // Android keeps a low-storage reserve free (see `World::has_room`).
        if !(0.05..=0.93).contains(&self.fill) {
            return spec(
                "fill",
                format!("{} is not between 0.05 and 0.93", self.fill),
            );
        }
        if self.days == 0 || self.days > 3650 {
            return spec("days", format!("{} is not between 1 and 3650", self.days));
        }
        if self.persona_every_days == 0 {
            return spec("persona_every_days", "must be at least 1".into());
        }
        Ok(())
    }
}

/// The personas whose apps every phone holds: the default workload's (`mix`).
pub fn persona_apps() -> Vec<TaskPersona> {
    flashstack_apps::ldc::mix().apps
}

/// A user media file and the day the user deletes it, if ever.
#[derive(Clone, Debug)]
struct Media {
    path: String,
    bytes: u64,
    delete_day: Option<u32>,
    camera: bool,
}

/// What happened while aging (counts for the report).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AgingCounts {
    pub app_sessions: u64,
    pub persona_sessions: u64,
    pub app_installs: u64,
    pub app_updates: u64,
    pub app_uninstalls: u64,
    pub photos: u64,
    pub videos: u64,
    pub media_deleted: u64,
    pub downloads: u64,
    pub cache_files_trimmed: u64,
    /// Updates, installs and new files given up for lack of space (the low-storage
    /// reserve).
    pub deferred: u64,
    /// Bytes the population wrote through the file API.
    pub file_bytes_written: u64,
    /// What F2FS wrote meanwhile: blocks (all kinds), of them moved by cleaning, cleaning
    /// cycles (of them in the background), checkpoints, blocks discarded.
    pub fs_blocks_written: u64,
    pub fs_gc_moved_blocks: u64,
    pub fs_gc_cycles: u64,
    pub fs_bg_gc_cycles: u64,
    pub fs_checkpoints: u64,
    pub fs_discarded_blocks: u64,
}

/// The phone being used.
pub(crate) struct World<'a> {
    spec: &'a AgingSpec,
    m: &'a PopulationModel,
    rng: Rng,
    pub w: Writer,
    archetypes: Vec<TaskPersona>,
    footprints: Vec<Footprint>,
    pub apps: Vec<App>,
    next_app: u32,
    media: VecDeque<Media>,
    media_seq: u64,
    /// Scales the user's media rates so the fill lands on target (see [`World::steer`]).
    media_scale: f64,
    /// Scales app updates so the device reaches its turnover.
    churn_scale: f64,
    programs_at_day_start: u64,
    /// With [`Aging::check_reads`]: the personas' reads checked so far.
    reads_checked: Option<Arc<AtomicU64>>,
    txn_version: u64,
    pub counts: AgingCounts,
    pub persona_apps: Vec<String>,
}

/// Builds a used phone on a new stack from `config`; `progress(day, days)` after each
/// day. Returns the stack, synced, with the counts of what happened and the personas'
/// apps it holds.
pub fn age_stack(
    config: &StackConfig,
    spec: &AgingSpec,
    progress: &mut dyn FnMut(u32, u32),
) -> Result<(Stack, AgingCounts, Vec<String>), PhoneError> {
    let mut aging = Aging::new(config, spec)?;
    aging.run(progress)?;
    aging.finish()
}

/// How close to the target fill aging lands, as a share of the user blocks.
const LANDING_SLACK: f64 = 0.005;

/// Aging under way, for callers that need the stack meanwhile (power-cut tests).
pub struct Aging<'a> {
    world: World<'a>,
    shared: SharedStack,
}

impl<'a> Aging<'a> {
    /// A factory-new phone of `config` (its seed replaced by the spec's), ready to age.
    pub fn new(config: &StackConfig, spec: &'a AgingSpec) -> Result<Aging<'a>, PhoneError> {
        spec.validate()?;
        let mut config = config.clone();
        config.seed = spec.seed;
        let mut stack = Stack::new(config).map_err(|e| PhoneError::Stack(e.to_string()))?;
        stack
            .with_fs(|fs| fs.device_mut().inner_mut().nand_mut().enable_frame_dedup())
            .map_err(|e| PhoneError::Stack(e.to_string()))?;
        let shared = SharedStack::new(stack);
        Ok(Aging {
            world: World::new(spec, shared.clone()),
            shared,
        })
    }

    /// From now on every read of the personas' sessions is checked against what they
    /// wrote or read before (`flashstack_sqlvfs::Checked`; timing and state unchanged);
    /// returns the count of reads checked. A wrong byte stops aging with the file, offset
    /// and byte.
    pub fn check_reads(&mut self) -> Arc<AtomicU64> {
        self.world
            .reads_checked
            .get_or_insert_with(Arc::default)
            .clone()
    }

    /// The stack being aged.
    pub fn stack(&self) -> SharedStack {
        self.shared.clone()
    }

    /// Every day of use, then the fill brought onto its target.
    pub fn run(&mut self, progress: &mut dyn FnMut(u32, u32)) -> Result<(), PhoneError> {
        let days = self.world.spec.days;
        self.set_up()?;
        for day in 0..days {
            self.day(day)?;
            progress(day + 1, days);
        }
        self.land_on_target()
    }

    /// Day 0: the phone set up (what [`run`](Aging::run) does first). With
    /// [`day`](Aging::day) and [`land_on_target`](Aging::land_on_target), a caller can
    /// act between days (Janusd's periodic defragmentation).
    pub fn set_up(&mut self) -> Result<(), PhoneError> {
        self.world.first_day()
    }

    /// One day of use (`day` counts from 0).
    pub fn day(&mut self, day: u32) -> Result<(), PhoneError> {
        self.world.day(day)
    }

    /// The fill brought onto the spec's target (what [`run`](Aging::run) does last).
    pub fn land_on_target(&mut self) -> Result<(), PhoneError> {
        self.world.land_on_target()
    }

    /// Files whose last change was a whole write that was fsync'd (packages, pictures,
    /// downloads), with their expected bytes: what a power cut must not lose.
    pub fn durable_files(&self) -> Vec<(String, Vec<u8>)> {
        self.world.w.durable_files()
    }

    /// The stack, synced, the counts and the personas' apps it holds.
    pub fn finish(self) -> Result<(Stack, AgingCounts, Vec<String>), PhoneError> {
        let Aging { world, shared } = self;
        let now = world.w.now;
        let (mut counts, personas) = (world.counts.clone(), world.persona_apps.clone());
        if let Some(m) = shared.lock().metrics() {
            let f = &m.f2fs;
            counts.fs_blocks_written = f.total_blocks();
            counts.fs_gc_moved_blocks = f.gc_data_blocks + f.gc_node_blocks;
            counts.fs_gc_cycles = f.gc_cycles;
            counts.fs_bg_gc_cycles = f.bg_gc_cycles;
            counts.fs_checkpoints = f.checkpoints;
            counts.fs_discarded_blocks = f.discarded_blocks;
        }
        drop(world);
        let mut stack = match std::sync::Arc::try_unwrap(shared.0) {
            Ok(m) => m.into_inner().unwrap_or_else(|p| p.into_inner()),
            Err(_) => return Err(PhoneError::Stack("the stack is still shared".into())),
        };
        stack
            .sync_all(now)
            .map_err(|e| PhoneError::Stack(format!("final sync: {e}")))?;
        Ok((stack, counts, personas))
    }
}

impl<'a> World<'a> {
    fn new(spec: &'a AgingSpec, api: SharedStack) -> World<'a> {
        let mut rng = Rng::new(spec.seed ^ 0xA61E_D0A7);
        let archetypes = archetypes();
        let footprints = archetypes
            .iter()
            .map(|a| Footprint::of(&a.ops, a.app.dbs.len(), SESSION_SHARE))
            .collect();
        let w = Writer::new(api, rng.next_u64());
        World {
            spec,
            m: &spec.model,
            rng,
            w,
            archetypes,
            footprints,
            apps: Vec::new(),
            next_app: 0,
            media: VecDeque::new(),
            media_seq: 0,
            media_scale: 1.0,
            churn_scale: 1.0,
            programs_at_day_start: 0,
            txn_version: 0,
            counts: AgingCounts::default(),
            persona_apps: Vec::new(),
            reads_checked: None,
        }
    }

    fn stack_usage(&self) -> flashstack_f2fs::BlockUsage {
        let mut stack = self.w.api.lock();
        stack
            .with_fs(|fs| fs.block_usage())
            .expect("the stack is powered while aging")
    }

    /// Whether `bytes` more fit while keeping the low-storage reserve free (Android
    /// refuses updates, installs and new pictures below it: `StorageManager`'s
    /// low-storage threshold) [assumed: 5 % of the capacity].
    fn has_room(&self, bytes: u64) -> bool {
        let u = self.stack_usage();
        let reserve = u.user_blocks / 20;
        u.valid_blocks + bytes.div_ceil(PAGE) + reserve <= u.user_blocks
    }

    fn device_programs(&self) -> (u64, u64) {
        let stack = self.w.api.lock();
        let ftl = stack.device().expect("powered while aging");
        (
            ftl.counters().page_programs,
            ftl.config().nand.geometry.pages(),
        )
    }

    // ----- day 0: the phone set up -----

    /// The user sets the phone up: the personas' apps and the other installed apps.
    fn first_day(&mut self) -> Result<(), PhoneError> {
        for dir in [
            "/data/app",
            "/data/data",
            "/data/media/0/DCIM/Camera",
            "/data/media/0/Pictures/Screenshots",
            "/data/media/0/Download",
            "/data/media/0/Android/media",
        ] {
            self.w.mkdirs(dir)?;
        }
        for (i, persona) in persona_apps().into_iter().enumerate() {
            self.persona_apps.push(persona.app.name.to_string());
            let archetype = self
                .archetypes
                .iter()
                .position(|a| a.app.name == persona.app.name)
                .unwrap_or(i % self.archetypes.len());
            self.install(Some(persona.app), archetype)
                .map_err(|e| self.too_small(persona.app.name, e))?;
        }
        let user_bytes = self.stack_usage().user_blocks * PAGE;
        let per_app = self.mean_app_bytes();
        let budget = (user_bytes as f64 * self.m.apps_share / per_app) as u32;
        let others = budget
            .min(self.m.apps_installed)
            .saturating_sub(self.apps.len() as u32);
        for _ in 0..others {
            let archetype = self.rng.below(self.archetypes.len() as u64) as usize;
            self.install(None, archetype)?;
        }
        self.check_target_reachable()
    }

    /// A persona's app did not fit: the stack is too small for the phone's apps.
    fn too_small(&self, app: &str, e: PhoneError) -> PhoneError {
        if !e.is_no_space() {
            return e;
        }
        let u = self.stack_usage();
        PhoneError::Spec {
            field: "stack",
            reason: format!(
                "the file system ({} MiB of user blocks) is too small for the personas' apps: \
                 installing {app} ran out of space with {} MiB in use ({e}); age a larger device",
                (u.user_blocks * PAGE) >> 20,
                (u.valid_blocks * PAGE) >> 20,
            ),
        }
    }

    /// What is installed on day 0 is never deleted (only media are), so a fill above the
    /// target now could never come down to it: say so now rather than age a phone fuller
    /// than asked.
    fn check_target_reachable(&self) -> Result<(), PhoneError> {
        let u = self.stack_usage();
        let fill = u.valid_blocks as f64 / u.user_blocks as f64;
        if fill <= self.spec.fill + LANDING_SLACK {
            return Ok(());
        }
        Err(PhoneError::Spec {
            field: "fill",
            reason: format!(
                "the installed apps alone fill {:.1}% of this file system ({} of {} MiB), \
                 above the target {:.1}%: age a larger device or ask for a higher fill",
                fill * 100.0,
                (u.valid_blocks * PAGE) >> 20,
                (u.user_blocks * PAGE) >> 20,
                self.spec.fill * 100.0
            ),
        })
    }

    fn mean_app_bytes(&self) -> f64 {
        let m = self.m;
        let code = m.apk.mean_bytes() * (1.0 + m.odex_ratio)
            + m.native_lib_share * 2.0 * m.native_lib.mean_bytes();
        code + m.cache_quota.mean_bytes() * 0.5 + 4.0 * 1024.0 * 1024.0
    }

    // ----- a day -----

    fn day(&mut self, day: u32) -> Result<(), PhoneError> {
        let start = day as Nanos * DAY_NS;
        self.programs_at_day_start = self.device_programs().0;
        let mut events = self.plan_day(day);
        events.push((MAINTENANCE_AT_NS, Event::Maintenance));
        events.sort_by_key(|(t, _)| *t);
        for (t, event) in events {
            self.wait_until(start + t)?;
            self.run(day, event)?;
        }
        self.delete_due_media(day)?;
        self.steer(day)?;
        Ok(())
    }

    /// Time passes until `t`: awake for the screen-off timeout after the last action,
    /// asleep after that.
    fn wait_until(&mut self, t: Nanos) -> Result<(), PhoneError> {
        let awake_until = self.w.now + AWAKE_TAIL_NS;
        if t <= awake_until {
            return self.w.idle_until(t);
        }
        self.w.idle_until(awake_until)?;
        self.w.suspend_until(t)
    }

    /// The day's events at their times of day (ns since midnight).
    fn plan_day(&mut self, day: u32) -> Vec<(Nanos, Event)> {
        let m = self.m;
        let mut ev = Vec::new();
        let awake = |rng: &mut Rng| 8 * HOUR_NS + rng.below(15 * HOUR_NS);
        let night = |rng: &mut Rng| HOUR_NS + rng.below(5 * HOUR_NS);
        for i in self.pick_sessions(day) {
            let id = self.apps[i].id;
            ev.push((awake(&mut self.rng), Event::Session(id)));
        }
        let s = self.media_scale;
        let camera = m.photos_per_day * s;
        for _ in 0..poisson(&mut self.rng, camera * (1.0 - m.video_share)) {
            ev.push((awake(&mut self.rng), Event::Photo));
        }
        for _ in 0..poisson(&mut self.rng, camera * m.video_share) {
            ev.push((awake(&mut self.rng), Event::Video));
        }
        for _ in 0..poisson(&mut self.rng, m.screenshots_per_day) {
            ev.push((awake(&mut self.rng), Event::Screenshot));
        }
        for _ in 0..poisson(&mut self.rng, m.messaging_media_per_day) {
            ev.push((awake(&mut self.rng), Event::MessagingMedia));
        }
        for _ in 0..poisson(&mut self.rng, m.downloads_per_day * s.max(1.0)) {
            ev.push((awake(&mut self.rng), Event::Download));
        }
        let updates = self.apps.len() as f64 / m.app_update_days * self.churn_scale;
        for _ in 0..poisson(&mut self.rng, updates) {
            let i = self.rng.below(self.apps.len() as u64) as usize;
            let id = self.apps[i].id;
            ev.push((night(&mut self.rng), Event::Update(id)));
        }
        for _ in 0..poisson(&mut self.rng, m.app_installs_per_day) {
            ev.push((awake(&mut self.rng), Event::Replace));
        }
        ev
    }

    /// The apps used today: about `apps_used_per_day` distinct ones by popularity (the
    /// personas' apps first).
    fn pick_sessions(&mut self, _day: u32) -> Vec<usize> {
        let n = self.apps.len();
        let want = poisson(&mut self.rng, self.m.apps_used_per_day).min(n as u32);
        let weights: Vec<f64> = (0..n)
            .map(|r| 1.0 / ((r + 1) as f64).powf(self.m.app_popularity_zipf))
            .collect();
        let mut picked: Vec<usize> = Vec::new();
        for _ in 0..want * 8 {
            if picked.len() as u32 >= want {
                break;
            }
            let i = pick_weighted(&mut self.rng, &weights);
            if !picked.contains(&i) {
                picked.push(i);
            }
        }
        picked.sort_unstable();
        picked
    }

    fn run(&mut self, day: u32, event: Event) -> Result<(), PhoneError> {
        match event {
            Event::Session(i) => self.session(i, day),
            Event::Photo => self.camera(day, false),
            Event::Video => self.camera(day, true),
            Event::Screenshot => self.user_file(day, UserFile::Screenshot),
            Event::MessagingMedia => self.user_file(day, UserFile::Messaging),
            Event::Download => self.user_file(day, UserFile::Download),
            Event::Update(i) => self.update(i),
            Event::Replace => self.replace_app(),
            Event::Maintenance => {
                let until = self.w.now + MAINTENANCE_NS;
                self.w.idle_until(until)
            }
        }
    }

    // ----- apps: install, update, uninstall -----

    fn install(
        &mut self,
        persona: Option<&'static AppSpec>,
        archetype: usize,
    ) -> Result<(), PhoneError> {
        let id = self.next_app;
        self.next_app += 1;
        let package = match persona {
            Some(spec) => spec.package.to_string(),
            None => format!("com.flashstack.app{id:03}"),
        };
        let m = self.m;
        let apk_bytes = m.apk.sample(&mut self.rng);
        let libs = if self.rng.chance(m.native_lib_share) {
            (0..1 + self.rng.below(3))
                .map(|_| m.native_lib.sample(&mut self.rng))
                .collect()
        } else {
            Vec::new()
        };
        let mut app = App {
            id,
            package,
            archetype,
            persona: persona.is_some(),
            version: 1,
            apk_bytes,
            odex_bytes: (apk_bytes as f64 * m.odex_ratio) as u64,
            lib_bytes: libs,
            cache_quota: m.cache_quota.sample(&mut self.rng),
            cache_files: VecDeque::new(),
            cache_bytes: 0,
            db_pages: Vec::new(),
            wal_pages: Vec::new(),
            set_up: false,
            seq: 0,
            sessions: 0,
            last_real_day: None,
        };
        self.write_code(&app)?;
        self.counts.app_installs += 1;
        let real = persona.is_some() || self.spec.fidelity == Fidelity::Realistic;
        if real {
            self.setup_real(&mut app)?;
        } else {
            self.setup_synthetic(&mut app)?;
        }
        self.apps.push(app);
        Ok(())
    }

    /// The package files: the APK, native libraries, then the compiled code (dex2oat).
    fn write_code(&mut self, app: &App) -> Result<(), PhoneError> {
        let dir = app.code_dir();
        self.w.mkdirs(&format!("{dir}/oat/arm64"))?;
        let apk = format!("{dir}/base.apk");
        let v = app.version as u64;
        self.w.put_file(
            &apk,
            app.apk_bytes,
            Bytes::Media,
            key_of(&apk, v),
            BULK_CHUNK_BYTES,
            true,
        )?;
        if !app.lib_bytes.is_empty() {
            self.w.mkdirs(&format!("{dir}/lib/arm64"))?;
        }
        for (i, &bytes) in app.lib_bytes.iter().enumerate() {
            let lib = format!("{dir}/lib/arm64/lib{i}.so");
            self.w.put_file(
                &lib,
                bytes,
                Bytes::Exec,
                key_of(&lib, v),
                BULK_CHUNK_BYTES,
                true,
            )?;
        }
        let odex = format!("{dir}/oat/arm64/base.odex");
        let vdex = format!("{dir}/oat/arm64/base.vdex");
        let odex_bytes = app.odex_bytes * 2 / 3;
        self.w.put_file(
            &odex,
            odex_bytes,
            Bytes::Exec,
            key_of(&odex, v),
            BULK_CHUNK_BYTES,
            true,
        )?;
        self.w.put_file(
            &vdex,
            app.odex_bytes - odex_bytes,
            Bytes::Exec,
            key_of(&vdex, v),
            BULK_CHUNK_BYTES,
            true,
        )
    }

    fn code_files(app: &App) -> Vec<String> {
        let dir = app.code_dir();
        let mut v = vec![
            format!("{dir}/base.apk"),
            format!("{dir}/oat/arm64/base.odex"),
            format!("{dir}/oat/arm64/base.vdex"),
        ];
        v.extend((0..app.lib_bytes.len()).map(|i| format!("{dir}/lib/arm64/lib{i}.so")));
        v
    }

    fn remove_code(&mut self, app: &App) -> Result<(), PhoneError> {
        for f in Self::code_files(app) {
            self.w.delete(&f)?;
        }
        let dir = app.code_dir();
        for d in ["/lib/arm64", "/lib", "/oat/arm64", "/oat", ""] {
            self.w.rmdir(&format!("{dir}{d}"));
        }
        Ok(())
    }

    /// A Play update: the new version's files are written, then the old ones removed.
    fn update(&mut self, id: u32) -> Result<(), PhoneError> {
        let Some(i) = self.index_of(id) else {
            return Ok(());
        };
        let old = self.apps[i].clone();
        if !self.has_room(old.apk_bytes * 2 + old.lib_bytes.iter().sum::<u64>()) {
            self.counts.deferred += 1;
            return Ok(());
        }
        let mut new = old.clone();
        new.version += 1;
        // An update changes the package's size a little [assumed: ±10 %].
        let grow = 0.9 + 0.2 * self.rng.unit_f64();
        new.apk_bytes = ((old.apk_bytes as f64 * grow) as u64).max(4096);
        new.odex_bytes = (new.apk_bytes as f64 * self.m.odex_ratio) as u64;
        self.write_code(&new)?;
        self.remove_code(&old)?;
        self.apps[i] = new;
        self.counts.app_updates += 1;
        Ok(())
    }

    /// The user installs a new app and removes one of the least used ones.
    fn replace_app(&mut self) -> Result<(), PhoneError> {
        let candidates: Vec<usize> = (self.apps.len() / 2..self.apps.len())
            .filter(|&i| !self.apps[i].persona)
            .collect();
        if let Some(&i) = candidates.get(self.rng.below(candidates.len().max(1) as u64) as usize) {
            let app = self.apps.remove(i);
            self.remove_code(&app)?;
            self.remove_tree(&app.data_dir())?;
            self.counts.app_uninstalls += 1;
        }
        let archetype = self.rng.below(self.archetypes.len() as u64) as usize;
        if !self.has_room((self.mean_app_bytes() * 2.0) as u64) {
            self.counts.deferred += 1;
            return Ok(());
        }
        self.install(None, archetype)
    }

    /// Deletes every file under `dir` and the directories themselves.
    fn remove_tree(&mut self, dir: &str) -> Result<(), PhoneError> {
        // The stack's clock catches up with the writer's before the deletes.
        self.w.idle_until(self.w.now)?;
        crate::start::remove_tree(&mut self.w.api.lock(), dir)?;
        self.w.catch_up();
        Ok(())
    }

    // ----- app data -----

    /// The app's installation and first use by its archetype's own setup (real SQLite).
    fn setup_real(&mut self, app: &mut App) -> Result<(), PhoneError> {
        let persona = self.instance(app);
        let options = RunOptions {
            record: false,
            setup_only: true,
            ..RunOptions::default()
        };
        self.run_persona(&persona, app, &options)?;
        app.set_up = true;
        Ok(())
    }

    /// The persona program of an app: the persona itself for the personas' apps, else its
    /// archetype on the app's own package, one session long.
    fn instance(&self, app: &App) -> TaskPersona {
        let archetype = &self.archetypes[app.archetype];
        let spec = if app.persona {
            archetype.app
        } else {
            instance_spec(archetype.app, &app.package)
        };
        TaskPersona {
            name: app.package.clone(),
            app: spec,
            ops: session_ops(&archetype.ops, SESSION_SHARE),
            ..archetype.clone()
        }
    }

    fn run_persona(
        &mut self,
        persona: &TaskPersona,
        app: &mut App,
        options: &RunOptions,
    ) -> Result<(), PhoneError> {
        let seed = self.rng.next_u64();
        let options = RunOptions {
            seq_start: (app.id as u64 + 1) << 40 | app.sessions << 20,
            ..options.clone()
        };
        let api: Box<dyn flashstack_sqlvfs::FileApi> = match &self.reads_checked {
            Some(counter) => Box::new(flashstack_sqlvfs::Checked::with_counter(
                self.w.api.clone(),
                counter.clone(),
            )),
            None => Box::new(self.w.api.clone()),
        };
        let out = run_with(persona, api, seed, &options);
        self.w.catch_up();
        if let Some(e) = out.error {
            return Err(PhoneError::App {
                app: persona.name(),
                message: e.to_string(),
                no_space: e.is_no_space(),
            });
        }
        Ok(())
    }

    /// The fast path's installation: the archetype's databases at their setup size,
    /// preferences, the state file and a log.
    fn setup_synthetic(&mut self, app: &mut App) -> Result<(), PhoneError> {
        let spec = self.archetypes[app.archetype].app;
        let dir = app.data_dir();
        for sub in ["databases", "shared_prefs", "files", "cache"] {
            self.w.mkdirs(&format!("{dir}/{sub}"))?;
        }
        self.w.mkdirs(&format!("{dir}/{}", spec.media_dir))?;
        for (i, bytes) in initial_db_bytes(spec).into_iter().enumerate() {
            // Created (header and root pages), then filled the way the app's setup fills
            // it: transactions of up to 500 rows, each with its journal.
            let path = format!("{dir}/databases/{}", spec.dbs[i].file);
            let key = key_of(&path, 0);
            self.w
                .put_file(&path, 2 * PAGE, Bytes::Sqlite, key, BULK_CHUNK_BYTES, true)?;
            app.db_pages.push(2);
            app.wal_pages.push(0);
            let per_txn = 500 * (spec.dbs[i].body_bytes as u64 + crate::apps::ROW_OVERHEAD);
            let mut left = bytes;
            while left > 0 {
                let add = left.min(per_txn);
                self.db_txn(app, spec, i, add)?;
                left -= add;
            }
        }
        for p in spec.prefs {
            let path = format!("{dir}/shared_prefs/{p}.xml");
            let len = 80 * spec.prefs_entries as u64;
            self.w.atomic_replace(&path, len, key_of(&path, 0))?;
        }
        if let Some((name, bytes)) = spec.state {
            let path = format!("{dir}/files/{name}");
            if let Some((parent, _)) = path.rsplit_once('/') {
                self.w.mkdirs(parent)?;
            }
            self.w.put_file(
                &path,
                bytes,
                Bytes::Text,
                key_of(&path, 0),
                BULK_CHUNK_BYTES,
                true,
            )?;
        }
        if let Some(log) = spec.log {
            let path = format!("{dir}/files/{log}");
            if let Some((parent, _)) = path.rsplit_once('/') {
                self.w.mkdirs(parent)?;
            }
            self.w
                .append(&path, 8 << 10, Bytes::Text, key_of(&path, 0))?;
        }
        app.set_up = true;
        Ok(())
    }

    fn index_of(&self, id: u32) -> Option<usize> {
        self.apps.iter().position(|a| a.id == id)
    }

    /// One session of app `id`, then its cache trimmed to its quota.
    fn session(&mut self, id: u32, day: u32) -> Result<(), PhoneError> {
        let Some(i) = self.index_of(id) else {
            return Ok(());
        };
        let mut app = self.apps[i].clone();
        // The personas' databases are real SQLite, which a page-level footprint would
        // corrupt: on the fast path their real task runs at most every
        // `persona_every_days`, and other sessions write only their files.
        let real_due = app
            .last_real_day
            .is_none_or(|d| day >= d + self.spec.persona_every_days);
        let real = match self.spec.fidelity {
            Fidelity::Realistic => true,
            Fidelity::Fast => app.persona && real_due,
        };
        if real {
            app.last_real_day = Some(day);
            let persona = self.instance(&app);
            let options = RunOptions {
                record: false,
                skip_setup: true,
                ..RunOptions::default()
            };
            self.run_persona(&persona, &mut app, &options)?;
            if app.persona {
                self.counts.persona_sessions += 1;
            }
        } else {
            let persona = app.persona;
            self.synthetic_session(&mut app, !persona)?;
        }
        self.cache_traffic(&mut app)?;
        app.sessions += 1;
        self.counts.app_sessions += 1;
        self.apps[i] = app;
        Ok(())
    }

    /// The page-level footprint of one session of the archetype's task; without
    /// `app_data`, only its media, temporary files and log (not the databases,
    /// preferences and state file).
    fn synthetic_session(&mut self, app: &mut App, app_data: bool) -> Result<(), PhoneError> {
        let mut f = self.footprints[app.archetype].clone();
        if !app_data {
            f.inserts.iter_mut().for_each(|x| x.0 = 0);
            f.updates.iter_mut().for_each(|x| *x = 0);
            f.prefs_commits = 0;
            f.state_patches.0 = 0;
        }
        let spec = self.archetypes[app.archetype].app;
        let dir = app.data_dir();
        let ops = f.inserts.iter().map(|x| x.0).sum::<u32>()
            + f.updates.iter().sum::<u32>()
            + f.media_files
            + f.prefs_commits
            + f.state_patches.0
            + 1;
        let gap = SESSION_NS / ops as u64;
        for (db, &(txns, bytes)) in f.inserts.iter().enumerate() {
            for _ in 0..txns {
                self.db_txn(app, spec, db, bytes)?;
                self.w.at(self.w.now + gap);
            }
        }
        for (db, &txns) in f.updates.iter().enumerate() {
            for _ in 0..txns {
                self.db_txn(app, spec, db, 0)?;
                self.w.at(self.w.now + gap);
            }
        }
        let media = f.media_bytes / f.media_files.max(1) as u64;
        for _ in 0..f.media_files {
            let n = app.next_name();
            let path = format!("{dir}/{}/{n:08x}.{}", spec.media_dir, spec.media_ext);
            self.w.put_file(
                &path,
                media,
                Bytes::Media,
                key_of(&path, 0),
                64 << 10,
                false,
            )?;
            app.cache_files.push_back((path, media));
            app.cache_bytes += media;
            self.w.at(self.w.now + gap);
        }
        if f.temp_bytes > 0 {
            let path = format!("{dir}/cache/tmp{:08}.tmp", app.next_name());
            self.w.put_file(
                &path,
                f.temp_bytes,
                Bytes::Media,
                key_of(&path, 0),
                64 << 10,
                false,
            )?;
            self.w.delete(&path)?;
        }
        for _ in 0..f.prefs_commits {
            if let Some(p) = spec.prefs.first() {
                let path = format!("{dir}/shared_prefs/{p}.xml");
                let v = app.next_name();
                self.w
                    .atomic_replace(&path, 80 * spec.prefs_entries as u64, key_of(&path, v))?;
                self.w.at(self.w.now + gap);
            }
        }
        if f.log_bytes > 0 {
            if let Some(log) = spec.log {
                let path = format!("{dir}/files/{log}");
                self.w
                    .append(&path, f.log_bytes, Bytes::Text, key_of(&path, app.seq))?;
            }
        }
        if let Some((name, _)) = spec.state {
            let path = format!("{dir}/files/{name}");
            let pages = f.state_patches.1.div_ceil(PAGE);
            for _ in 0..f.state_patches.0 {
                self.txn_version += 1;
                let v = self.txn_version;
                let list: Vec<(u64, u64)> = (0..pages).map(|p| (p, v)).collect();
                self.w.put_pages(&path, &list, Bytes::Text, Some(false))?;
                self.w.at(self.w.now + gap);
            }
        }
        Ok(())
    }

    /// One SQLite transaction's writes: a rollback journal (PERSIST: the journal with
    /// the pages' old images, fsync; the pages, fsync; the journal header zeroed,
    /// fdatasync) or a WAL (frames appended, fsync; a checkpoint into the database every
    /// 1000 pages). `added` bytes grow the database; the last page and a few others
    /// change.
    fn db_txn(
        &mut self,
        app: &mut App,
        spec: &AppSpec,
        db: usize,
        added: u64,
    ) -> Result<(), PhoneError> {
        let path = format!("{}/databases/{}", app.data_dir(), spec.dbs[db].file);
        let pages = app.db_pages[db].max(1);
        let new = added.div_ceil(PAGE);
        // Existing pages a transaction changes: a leaf or two for an update; for an
        // insert also the index leaves its rows land in, about one per eight rows, at
        // most a sixteenth of the database [calibrated against the realistic path,
        // docs/aging.md].
        let rows = added / (spec.dbs[db].body_bytes as u64 + crate::apps::ROW_OVERHEAD);
        let changed = 1 + self.rng.below(3) + (rows / 8).min(pages / 16);
        let mut touched: Vec<u64> = vec![pages - 1];
        for _ in 1..changed {
            touched.push(self.rng.below(pages));
        }
        touched.sort_unstable();
        touched.dedup();
        self.txn_version += 1;
        let v = self.txn_version;
        let mut db_pages: Vec<(u64, u64)> = touched.iter().map(|&p| (p, v)).collect();
        db_pages.extend((pages..pages + new).map(|p| (p, v)));
        if db_is_wal(spec, db) {
            let wal = format!("{path}-wal");
            let at = app.wal_pages[db];
            let frames: Vec<(u64, u64)> = (0..db_pages.len() as u64).map(|i| (at + i, v)).collect();
            self.w
                .put_pages(&wal, &frames, Bytes::Sqlite, Some(false))?;
            app.wal_pages[db] += frames.len() as u64;
            if app.wal_pages[db] >= WAL_CHECKPOINT_PAGES {
                self.w
                    .put_pages(&path, &db_pages, Bytes::Sqlite, Some(false))?;
                app.wal_pages[db] = 0;
            }
        } else {
            let journal = format!("{path}-journal");
            let mut images: Vec<(u64, u64)> = vec![(0, v)];
            images.extend((1..=touched.len() as u64).map(|i| (i, v)));
            self.w
                .put_pages(&journal, &images, Bytes::Sqlite, Some(false))?;
            self.w
                .put_pages(&path, &db_pages, Bytes::Sqlite, Some(false))?;
            self.w
                .put_pages(&journal, &[(0, v + 1)], Bytes::Sqlite, Some(true))?;
            self.txn_version += 1;
        }
        app.db_pages[db] = pages + new;
        Ok(())
    }

    /// Cached objects the session downloaded; then the cache is trimmed, oldest first, to
    /// 3/4 of its quota once over it.
    fn cache_traffic(&mut self, app: &mut App) -> Result<(), PhoneError> {
        let dir = format!("{}/cache/http", app.data_dir());
        self.w.mkdirs(&dir)?;
        let n = poisson(
            &mut self.rng,
            self.m.cache_files_per_session * self.churn_scale.min(4.0),
        );
        for _ in 0..n {
            let bytes = self.m.cache_file.sample(&mut self.rng);
            let path = format!("{dir}/{:016x}.0", app.next_name());
            self.w.put_file(
                &path,
                bytes,
                Bytes::Media,
                key_of(&path, 0),
                64 << 10,
                false,
            )?;
            app.cache_files.push_back((path, bytes));
            app.cache_bytes += bytes;
        }
        if app.cache_bytes > app.cache_quota {
            while app.cache_bytes > app.cache_quota * 3 / 4 {
                let Some((path, bytes)) = app.cache_files.pop_front() else {
                    break;
                };
                self.w.delete(&path)?;
                app.cache_bytes -= bytes;
                self.counts.cache_files_trimmed += 1;
            }
        }
        Ok(())
    }

    // ----- user media -----

    fn camera(&mut self, day: u32, video: bool) -> Result<(), PhoneError> {
        self.media_seq += 1;
        let m = self.m;
        let (bytes, path) = if video {
            self.counts.videos += 1;
            (
                m.video.sample(&mut self.rng),
                format!(
                    "/data/media/0/DCIM/Camera/VID_{day:04}_{:06}.mp4",
                    self.media_seq
                ),
            )
        } else {
            self.counts.photos += 1;
            (
                m.photo.sample(&mut self.rng),
                format!(
                    "/data/media/0/DCIM/Camera/IMG_{day:04}_{:06}.jpg",
                    self.media_seq
                ),
            )
        };
        let delete_day = self
            .rng
            .chance(m.media_delete_share)
            .then(|| day + 1 + poisson(&mut self.rng, m.media_delete_days));
        self.add_media(path, bytes, delete_day, true)
    }

    fn user_file(&mut self, day: u32, kind: UserFile) -> Result<(), PhoneError> {
        self.media_seq += 1;
        let m = self.m;
        let n = self.media_seq;
        let (path, bytes, delete_day) = match kind {
            UserFile::Screenshot => (
                format!("/data/media/0/Pictures/Screenshots/Screenshot_{day:04}_{n:06}.png"),
                m.screenshot.sample(&mut self.rng),
                self.rng
                    .chance(m.media_delete_share * 2.0)
                    .then_some(day + 1),
            ),
            UserFile::Messaging => {
                let dir = "/data/media/0/Android/media/com.whatsapp/WhatsApp Images";
                self.w.mkdirs(dir)?;
                (
                    format!("{dir}/IMG-{day:04}-WA{n:06}.jpg"),
                    m.messaging_media.sample(&mut self.rng),
                    None,
                )
            }
            UserFile::Download => {
                self.counts.downloads += 1;
                let delete = self.rng.chance(m.download_delete_share);
                let days = poisson(&mut self.rng, m.download_delete_days);
                (
                    format!("/data/media/0/Download/file_{n:06}.pdf"),
                    m.download.sample(&mut self.rng),
                    delete.then_some(day + 1 + days),
                )
            }
        };
        self.add_media(path, bytes, delete_day, false)
    }

    fn add_media(
        &mut self,
        path: String,
        bytes: u64,
        delete_day: Option<u32>,
        camera: bool,
    ) -> Result<(), PhoneError> {
        if !self.has_room(bytes) {
            self.counts.deferred += 1;
            return Ok(());
        }
        self.w.put_file(
            &path,
            bytes,
            Bytes::Media,
            key_of(&path, 0),
            BULK_CHUNK_BYTES,
            true,
        )?;
        self.media.push_back(Media {
            path,
            bytes,
            delete_day,
            camera,
        });
        Ok(())
    }

    fn delete_due_media(&mut self, day: u32) -> Result<(), PhoneError> {
        let due: Vec<String> = self
            .media
            .iter()
            .filter(|m| m.delete_day.is_some_and(|d| d <= day))
            .map(|m| m.path.clone())
            .collect();
        self.media.retain(|m| m.delete_day.is_none_or(|d| d > day));
        for path in due {
            self.w.delete(&path)?;
            self.counts.media_deleted += 1;
        }
        Ok(())
    }

    /// Deletes the oldest camera items until at most `target` blocks are valid.
    fn delete_oldest_media(&mut self, target_blocks: u64) -> Result<(), PhoneError> {
        loop {
            self.sync()?;
            let valid = self.stack_usage().valid_blocks;
            if valid <= target_blocks {
                return Ok(());
            }
            let mut excess = (valid - target_blocks) * PAGE;
            let mut deleted = false;
            while excess > 0 {
                let Some(i) = self.media.iter().position(|m| m.camera) else {
                    break;
                };
                let media = self.media.remove(i).expect("found above");
                self.w.delete(&media.path)?;
                self.counts.media_deleted += 1;
                excess = excess.saturating_sub(media.bytes);
                deleted = true;
            }
            if !deleted {
                return Ok(());
            }
        }
    }

    /// Writes back and checkpoints (deleted blocks are free only after a checkpoint).
    fn sync(&mut self) -> Result<(), PhoneError> {
        let t = self
            .w
            .api
            .lock()
            .sync_all(self.w.now)
            .map_err(|e| PhoneError::Stack(e.to_string()))?;
        self.w.at(t);
        Ok(())
    }

    // ----- steering -----

    /// After a day: the media rate for the rest of the period, so the fill lands on the
    /// target on the last day; the app-update rate, so the device reaches its turnover.
    fn steer(&mut self, day: u32) -> Result<(), PhoneError> {
        let usage = self.stack_usage();
        let left = (self.spec.days - day - 1).max(1) as f64;
        let target = self.spec.fill * usage.user_blocks as f64;
        let need_bytes = (target - usage.valid_blocks as f64) * PAGE as f64;
        let m = self.m;
        let media_per_day = m.photos_per_day
            * ((1.0 - m.video_share) * m.photo.mean_bytes() + m.video_share * m.video.mean_bytes())
            * (1.0 - m.media_delete_share);
        self.media_scale = (need_bytes / left / media_per_day).clamp(0.0, 50.0);
        if std::env::var("AGING_DEBUG").is_ok() {
            eprintln!(
                "day {day}: valid {} of {} ({:.1}%), free segs {}, media scale {:.2}, churn {:.2}, counts {:?}",
                usage.valid_blocks,
                usage.user_blocks,
                usage.valid_blocks as f64 * 100.0 / usage.user_blocks as f64,
                usage.free_segments,
                self.media_scale,
                self.churn_scale,
                self.counts
            );
        }
        if need_bytes < 0.0 {
            self.delete_oldest_media(target as u64)?;
        }
        let (programs, raw_pages) = self.device_programs();
        let want = m.device_turnover * raw_pages as f64;
        let today = (programs - self.programs_at_day_start).max(1) as f64;
        let per_day_needed = (want - programs as f64) / left;
        self.churn_scale = (self.churn_scale * per_day_needed / today).clamp(1.0, 50.0);
        Ok(())
    }

    /// After the last day: photos added, or the oldest deleted, until the fill is within
    /// half a percent of the target.
    fn land_on_target(&mut self) -> Result<(), PhoneError> {
        let day = self.spec.days;
        self.wait_until(day as Nanos * DAY_NS + 8 * HOUR_NS)?;
        let user = self.stack_usage().user_blocks as f64;
        let target = self.spec.fill * user;
        let slack = LANDING_SLACK * user;
        self.sync()?;
        while (self.stack_usage().valid_blocks as f64) < target - slack {
            let deferred = self.counts.deferred;
            self.camera(day, false)?;
            self.sync()?;
            if self.counts.deferred > deferred {
                break;
            }
        }
        self.delete_oldest_media((target + slack) as u64)?;
        self.counts.file_bytes_written = self.w.bytes_written;
        Ok(())
    }
}

#[derive(Clone, Copy, Debug)]
enum Event {
    Session(u32),
    Photo,
    Video,
    Screenshot,
    MessagingMedia,
    Download,
    Update(u32),
    Replace,
    /// The nightly idle-maintenance window.
    Maintenance,
}

#[derive(Clone, Copy, Debug)]
enum UserFile {
    Screenshot,
    Messaging,
    Download,
}

fn pick_weighted(rng: &mut Rng, weights: &[f64]) -> usize {
    let total: f64 = weights.iter().sum();
    let mut x = rng.unit_f64() * total;
    for (i, w) in weights.iter().enumerate() {
        if x < *w {
            return i;
        }
        x -= w;
    }
    weights.iter().rposition(|&w| w > 0.0).unwrap_or(0)
}
