//! Built-in block workloads: the seven application workloads of the LDC paper (Ji et al.,
//! "Lightweight Data Compression for Mobile Flash Storage", ACM TECS 16(5s), 2017, Table 4),
//! generated from a seed because the traces themselves were never published.
//!
//! Each workload meets its Table 4 row: the request count exactly, the write ratio exactly
//! to the request (`requests × ratio`, rounded half up), and the I/O volume (reads +
//! writes, MB = 10^6 bytes) to within a page. What the requests are follows the paper's
//! write-traffic study (§4.2, Fig. 3) and what is known of Android 4.4 on ext4: SQLite
//! databases in rollback-journal (PERSIST) mode whose journal and pages are overwritten in
//! place; ext4 journal commits and metadata checkpoints; image caches and photos written
//! once as new files; reads that mostly go back to what was just written. Every choice, and
//! which numbers come from the paper and which are invented, is in `docs/ldc-workloads.md`.
//!
//! A workload comes with its content [`ZoneSpec`]s (what kind of data each part of the
//! device holds, as a content-mix spec for `flashstack-content`) and with the snapshot of
//! existing data to lay down before it runs (§6.1: "the compression ratio of existing data
//! is initialized based on the volume snapshot analysis").
//!
//! Zone ranges count LBAs (4 KiB blocks), the unit of the content model; requests, like
//! every [`TraceRequest`], count bytes.

mod app;
mod layout;
mod place;
mod profile;
mod skeleton;
mod timing;

use std::fmt;
use std::ops::Range;
use std::str::FromStr;

use flashstack_block::RequestKind;
use flashstack_sim::Rng;
use serde::Serialize;
use thiserror::Error;

pub use app::{LdcApp, Table4Row};

use crate::TraceRequest;
use layout::Layout;
use place::Placer;
use profile::PROFILES;
use skeleton::{Skeleton, Target};

/// Bytes per LBA (the unit of zone ranges).
const LBA_BYTES: u64 = 4096;
/// Pause between two passes of a repeated workload (`flashstack run --repeat`); the paper
/// does not give one. Longer than every preset's 100 ms idle threshold, so background GC
/// can run between passes.
pub const REPEAT_GAP_NS: u64 = 1_000_000_000;
/// Passes `flashstack reproduce ldc` replays each workload ("Each of the workloads was
/// replayed three times", §6.1).
pub const LDC_PASSES: u32 = 3;
/// Salts of the per-app and merge random streams.
const APP_SALT: u64 = 0x1DC0_5EED_7AB1_E4A4;
const MERGE_SALT: u64 = 0x3A11_0F5E_5510_4A55;

/// A part of the device and the content it holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ZoneSpec {
    /// What the zone is, e.g. `fb.newsfeed.db`, `fs.journal`, `user.data`.
    pub name: String,
    /// LBAs (4 KiB blocks), end exclusive.
    pub lbas: Range<u64>,
    /// A content mix in `flashstack-content` syntax, e.g. `sqlite:75,sqlite-index:25`.
    pub mix: String,
}

/// A generated workload, ready to replay.
#[derive(Clone, Debug)]
pub struct BuiltinWorkload {
    /// `ldc:fb` and so on.
    pub name: String,
    pub app: LdcApp,
    /// The paper's figures for it.
    pub paper: Table4Row,
    /// One pass, in arrival order, the first arriving at 0.
    pub requests: Vec<TraceRequest>,
    /// App names, indexed by [`TraceRequest::process`].
    pub processes: Vec<String>,
    /// The zones the workload writes to (the file system's and its apps'), with their mixes.
    pub zones: Vec<ZoneSpec>,
    /// The existing data to write once before the run: every zone of the device layout
    /// (including `zones`, with the same mixes) and the rest of the user's data, 85% of the
    /// capacity in all.
    pub snapshot: Vec<ZoneSpec>,
    /// How the stream was made to fit Table 4 (scale factors, adjustments).
    pub notes: Vec<String>,
}

impl BuiltinWorkload {
    /// Counts and bytes of one pass.
    pub fn figures(&self) -> StreamFigures {
        StreamFigures::of(&self.requests)
    }

    /// The zones a content model should use: the workload's zones, then the rest of the
    /// snapshot (earlier zones win overlaps; here they never disagree).
    pub fn content_zones(&self) -> Vec<ZoneSpec> {
        let mut zones = self.zones.clone();
        zones.extend(
            self.snapshot
                .iter()
                .filter(|z| !self.zones.contains(z))
                .cloned(),
        );
        zones
    }

    /// `passes` copies of the stream back to back, each [`REPEAT_GAP_NS`] after the last
    /// arrival of the one before.
    pub fn passes(&self, passes: u32) -> impl Iterator<Item = TraceRequest> + Clone + '_ {
        back_to_back(self.requests.iter().copied(), passes, REPEAT_GAP_NS)
    }
}

/// `passes` copies of `source` back to back: pass `k` arrives `k × (last arrival + gap)`
/// later than the first.
pub fn back_to_back<I>(
    source: I,
    passes: u32,
    gap_ns: u64,
) -> impl Iterator<Item = TraceRequest> + Clone
where
    I: Iterator<Item = TraceRequest> + Clone,
{
    // One pass needs no span (and a long synthetic stream is not generated twice).
    let span = if passes > 1 {
        let last = source.clone().map(|r| r.arrival_ns).max().unwrap_or(0);
        last.saturating_add(gap_ns)
    } else {
        0
    };
    (0..u64::from(passes)).flat_map(move |k| {
        source.clone().map(move |r| TraceRequest {
            arrival_ns: r.arrival_ns.saturating_add(k.saturating_mul(span)),
            ..r
        })
    })
}

/// Counts and bytes of a request stream, as Table 4 reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StreamFigures {
    pub requests: u64,
    pub reads: u64,
    pub writes: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Writes of at most 8 KiB (§5.2: 77% of Facebook's).
    pub small_writes: u64,
}

impl StreamFigures {
    pub fn of(requests: &[TraceRequest]) -> Self {
        let mut f = StreamFigures::default();
        for r in requests {
            match r.kind {
                RequestKind::Read => {
                    f.reads += 1;
                    f.read_bytes += r.len_bytes;
                }
                RequestKind::Write => {
                    f.writes += 1;
                    f.write_bytes += r.len_bytes;
                    f.small_writes += u64::from(r.len_bytes <= 8 * 1024);
                }
                RequestKind::Trim | RequestKind::Flush => continue,
            }
            f.requests += 1;
        }
        f
    }

    /// Reads + writes in MB of 10^6 bytes.
    pub fn volume_mb(&self) -> f64 {
        (self.read_bytes + self.write_bytes) as f64 / 1e6
    }

    /// Writes as a percentage of reads + writes.
    pub fn write_percent(&self) -> f64 {
        if self.requests == 0 {
            0.0
        } else {
            self.writes as f64 * 100.0 / self.requests as f64
        }
    }

    /// Writes of at most 8 KiB as a percentage of writes.
    pub fn small_write_percent(&self) -> f64 {
        if self.writes == 0 {
            0.0
        } else {
            self.small_writes as f64 * 100.0 / self.writes as f64
        }
    }
}

/// Why a built-in workload could not be named or generated.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum BuiltinError {
    #[error("unknown workload '{0}' (known: {known})", known = Builtin::names().join(", "))]
    UnknownWorkload(String),
    #[error(
        "unknown LDC app '{0}' (known: fb, tw, me, ge, ch, ca, ma, or Facebook, Twitter, \
         Messenger, Google Earth, Chrome, Camera, Multiple)"
    )]
    UnknownApp(String),
    #[error(
        "the device ({capacity_bytes} bytes) is too small for the built-in workloads' files \
         and existing data; they need at least {needed_bytes} bytes"
    )]
    CapacityTooSmall {
        capacity_bytes: u64,
        needed_bytes: u64,
    },
    #[error("workload {workload}: {reason}")]
    Generation { workload: String, reason: String },
}

/// A built-in workload by name (`ldc:fb`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Builtin {
    Ldc(LdcApp),
}

impl Builtin {
    pub const ALL: [Builtin; 7] = [
        Builtin::Ldc(LdcApp::Facebook),
        Builtin::Ldc(LdcApp::Twitter),
        Builtin::Ldc(LdcApp::Messenger),
        Builtin::Ldc(LdcApp::GoogleEarth),
        Builtin::Ldc(LdcApp::Chrome),
        Builtin::Ldc(LdcApp::Camera),
        Builtin::Ldc(LdcApp::Multiple),
    ];

    fn names() -> Vec<String> {
        Builtin::ALL.iter().map(ToString::to_string).collect()
    }

    /// What the workload is, in a few words.
    pub fn description(self) -> String {
        match self {
            Builtin::Ldc(app) => format!("LDC Table 4: {}", app.name()),
        }
    }

    /// The figures the workload is matched to.
    pub fn paper(self) -> Table4Row {
        match self {
            Builtin::Ldc(app) => app.table4(),
        }
    }

    /// The workload for a device of `capacity_bytes`, from `seed`.
    pub fn generate(self, capacity_bytes: u64, seed: u64) -> Result<BuiltinWorkload, BuiltinError> {
        match self {
            Builtin::Ldc(app) => ldc_workload(app, capacity_bytes, seed),
        }
    }
}

impl fmt::Display for Builtin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Builtin::Ldc(app) => write!(f, "ldc:{app}"),
        }
    }
}

impl FromStr for Builtin {
    type Err = BuiltinError;

    /// `ldc:APP`, APP an abbreviation or a name (`ldc:fb`, `ldc:google-earth`).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let unknown = || BuiltinError::UnknownWorkload(text.trim().to_string());
        let (family, app) = text.trim().split_once(':').ok_or_else(unknown)?;
        if !family.eq_ignore_ascii_case("ldc") {
            return Err(unknown());
        }
        app.parse().map(Builtin::Ldc).map_err(|_| unknown())
    }
}

/// One app's generated session before placement.
struct Session {
    app: usize,
    skeleton: Skeleton,
    gaps: Vec<u64>,
}

fn app_rng(seed: u64, app: usize) -> Rng {
    Rng::new(seed ^ APP_SALT.wrapping_mul(app as u64 + 1))
}

fn generation_error(app: LdcApp, reason: String) -> BuiltinError {
    BuiltinError::Generation {
        workload: format!("ldc:{app}"),
        reason,
    }
}

/// Pass 1 and 3 for app `app` (its skeleton and gaps) and the stream its placement uses.
/// Everything derives from (seed, app), so an app's part of the multi-app workload is the
/// same as its own workload.
fn session(app: usize, seed: u64) -> Result<(Session, Rng), BuiltinError> {
    let profile = &PROFILES[app];
    let table = profile.app.table4();
    let mut rng = app_rng(seed, app);
    let volume_pages = (table.volume_bytes() + LBA_BYTES / 2) / LBA_BYTES;
    let skeleton = skeleton::skeleton(
        profile,
        table.requests,
        table.writes(),
        volume_pages,
        &mut rng.fork(1),
    )
    .map_err(|reason| generation_error(profile.app, reason))?;
    let gaps = timing::gaps(
        &skeleton.requests,
        profile.session_s * 1_000_000_000,
        &mut rng.fork(2),
    );
    let session = Session {
        app,
        skeleton,
        gaps,
    };
    Ok((session, rng.fork(3)))
}

/// The order sessions are replayed in: one app alone, or the six cut into sessions and
/// interleaved (`timing::interleave`), with the pause before each.
fn order(sessions: &[Session], seed: u64) -> Vec<(usize, Range<usize>, u64)> {
    if let [only] = sessions {
        return vec![(0, 0..only.skeleton.requests.len(), 0)];
    }
    let cuts: Vec<Vec<Range<usize>>> = sessions
        .iter()
        .map(|s| timing::sessions(&s.skeleton.requests, timing::SESSIONS_PER_APP))
        .collect();
    timing::interleave(&cuts, &mut Rng::new(seed ^ MERGE_SALT))
}

/// The LDC paper's workload `app` (Table 4) for a device of `capacity_bytes`, from `seed`.
///
/// The same (app, capacity, seed) always gives the same workload; the capacity only moves
/// addresses (smaller devices get smaller caches), never counts or sizes.
pub fn ldc_workload(
    app: LdcApp,
    capacity_bytes: u64,
    seed: u64,
) -> Result<BuiltinWorkload, BuiltinError> {
    let layout = Layout::new(capacity_bytes / LBA_BYTES)?;
    let members: Vec<usize> = match app {
        LdcApp::Multiple => (0..PROFILES.len()).collect(),
        single => vec![single.index()],
    };
    let mut placer = Placer::new(&layout);
    let mut sessions = Vec::new();
    for &m in &members {
        let (session, rng) = session(m, seed)?;
        placer.add_app(m, &session.skeleton.requests, session.skeleton.files, rng);
        sessions.push(session);
    }
    let (mut requests, headers) = assemble(&sessions, &order(&sessions, seed), &mut placer)
        .map_err(|reason| generation_error(app, reason))?;
    let mut notes = session_notes(&sessions);
    if app == LdcApp::Multiple {
        notes.push(match_write_count(&mut requests, &headers, app.table4())?);
    }
    let mut zones = layout.fs_zones.clone();
    zones.extend(
        members
            .iter()
            .flat_map(|&m| layout.apps[m].zones.iter().cloned()),
    );
    Ok(BuiltinWorkload {
        name: format!("ldc:{app}"),
        app,
        paper: app.table4(),
        requests,
        processes: LdcApp::SINGLE
            .iter()
            .map(|a| a.name().to_string())
            .collect(),
        zones,
        snapshot: layout.all_zones(),
        notes,
    })
}

/// Places and times every request in `order`; also returns the indices of the SQLite
/// journal-header writes (see [`match_write_count`]).
fn assemble(
    sessions: &[Session],
    order: &[(usize, Range<usize>, u64)],
    placer: &mut Placer,
) -> Result<(Vec<TraceRequest>, Vec<usize>), String> {
    let total = sessions.iter().map(|s| s.skeleton.requests.len()).sum();
    let mut requests = Vec::with_capacity(total);
    let mut headers = Vec::new();
    let mut now = 0u64;
    for (position, range, pause) in order {
        let session = &sessions[*position];
        for i in range.clone() {
            now += if i == range.start {
                *pause
            } else {
                session.gaps[i]
            };
            let skel = &session.skeleton.requests[i];
            let lba = placer.place(session.app, skel)?;
            if matches!(skel.target, Target::DbJournalHeader(_)) {
                headers.push(requests.len());
            }
            requests.push(TraceRequest {
                arrival_ns: now,
                kind: if skel.target.is_read() {
                    RequestKind::Read
                } else {
                    RequestKind::Write
                },
                offset_bytes: lba * LBA_BYTES,
                len_bytes: u64::from(skel.pages) * LBA_BYTES,
                hints: Default::default(),
                process: session.app as u32,
            });
        }
    }
    Ok((requests, headers))
}

fn session_notes(sessions: &[Session]) -> Vec<String> {
    sessions
        .iter()
        .map(|s| {
            let p = &PROFILES[s.app];
            format!(
                "{}: {} s session; media sizes scaled by {:.3} to meet Table 4's volume",
                p.app.name(),
                p.session_s,
                s.skeleton.elastic_scale
            )
        })
        .collect()
}

/// The multi-app workload's write count: its six parts have 59,891 writes (each app's
/// count rounded half up), Table 4's MA row 88% of 67,955 = 59,800. The surplus SQLite
/// journal-header writes, evenly spread, become reads of the same header (SQLite reads
/// it to check for a hot journal when it opens a database).
fn match_write_count(
    requests: &mut [TraceRequest],
    headers: &[usize],
    table: Table4Row,
) -> Result<String, BuiltinError> {
    let writes = requests
        .iter()
        .filter(|r| r.kind == RequestKind::Write)
        .count() as u64;
    let excess = writes.checked_sub(table.writes()).ok_or_else(|| {
        generation_error(
            LdcApp::Multiple,
            format!("{writes} writes, fewer than Table 4's {}", table.writes()),
        )
    })?;
    let n = headers.len() as u64;
    if excess > n {
        let reason = format!("{excess} surplus writes but only {n} journal-header writes");
        return Err(generation_error(LdcApp::Multiple, reason));
    }
    for k in 0..excess {
        let index = headers[((2 * k + 1) * n / (2 * excess)) as usize];
        requests[index].kind = RequestKind::Read;
    }
    Ok(format!(
        "Multiple: the six apps give {writes} writes; {excess} SQLite journal-header writes \
         are issued as reads (hot-journal checks) to meet Table 4's {} ({}%)",
        table.writes(),
        table.write_percent
    ))
}

#[cfg(test)]
mod tests;
