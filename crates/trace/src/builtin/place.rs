//! Pass 2: an address for every request, from the layout and a little state per file:
//! the ext4 journal head, each database's tail, each cache directory's write cursor, and
//! rings of what was written recently (what the reads go back to).

use std::collections::VecDeque;
use std::ops::Range;

use flashstack_sim::Rng;

use super::layout::{AppLayout, DbLayout, Layout};
use super::skeleton::{Skel, Target};

/// Recent extents remembered per database and per stream.
const RECENT: usize = 64;
/// Share (%) of in-place database writes to the hot pages (b-tree roots and inner pages,
/// allocated first, so at the start of the file), and to recently written pages.
const DB_HOT_PERCENT: u64 = 60;
const DB_RECENT_PERCENT: u64 = 25;
/// Share (%) of database reads that go back to recently written pages.
const DB_READ_RECENT_PERCENT: u64 = 50;
/// Share (%) of checkpoints that land in the app's own block group.
const META_WINDOW_PERCENT: u64 = 80;
/// Small files sit in slots of this many pages; most rewrites hit the first few files.
const TEXT_SLOT_PAGES: u64 = 8;
const TEXT_HOT_SLOTS: u64 = 16;
const TEXT_HOT_PERCENT: u64 = 80;

/// The last few extents `(lba, pages)` written somewhere.
#[derive(Clone, Debug, Default)]
struct Ring {
    items: VecDeque<(u64, u32)>,
}

impl Ring {
    fn push(&mut self, lba: u64, pages: u32) {
        if self.items.len() == RECENT {
            self.items.pop_front();
        }
        self.items.push_back((lba, pages));
    }

    fn pick(&self, rng: &mut Rng) -> Option<u64> {
        if self.items.is_empty() {
            return None;
        }
        let i = rng.below(self.items.len() as u64) as usize;
        self.items.get(i).map(|&(lba, _)| lba)
    }
}

#[derive(Clone, Debug)]
struct DbState {
    /// Where the next new pages go.
    tail: u64,
    /// The area new pages cycle through.
    append_area: Range<u64>,
    recent: Ring,
    appended: Ring,
}

#[derive(Clone, Debug)]
struct FileSlot {
    base: u64,
    written: u64,
}

#[derive(Clone, Debug)]
struct AppState {
    dbs: Vec<DbState>,
    /// Pages of each file (from the calibrated skeleton), and where it was put.
    file_pages: Vec<u64>,
    files: Vec<Option<FileSlot>>,
    cursors: Vec<u64>,
    recent_files: Vec<Ring>,
    exec_cursor: u64,
    rng: Rng,
}

/// Addresses requests of any of the apps, in the order given.
pub(crate) struct Placer<'a> {
    layout: &'a Layout,
    journal_head: u64,
    apps: Vec<Option<AppState>>,
}

fn db_state(db: &DbLayout) -> DbState {
    let len = db.data.end - db.data.start;
    let (append_area, tail) = match &db.blobs {
        Some(blobs) => (blobs.clone(), blobs.start),
        None => (
            db.data.start + len / 2..db.data.end,
            db.data.start + len * 3 / 4,
        ),
    };
    DbState {
        tail,
        append_area,
        recent: Ring::default(),
        appended: Ring::default(),
    }
}

/// `start` moved back or forward just enough that `pages` fit inside `zone`.
fn fit(zone: &Range<u64>, start: u64, pages: u32) -> Result<u64, String> {
    let pages = u64::from(pages);
    if zone.end - zone.start < pages {
        return Err(format!(
            "a request of {pages} pages does not fit a zone of {} pages",
            zone.end - zone.start
        ));
    }
    Ok(start.clamp(zone.start, zone.end - pages))
}

fn uniform(zone: &Range<u64>, rng: &mut Rng) -> u64 {
    zone.start + rng.below((zone.end - zone.start).max(1))
}

/// The next `pages` of a log that cycles through `zone` (the jbd2 journal, a database's
/// new pages, a cache directory, code readahead): at `cursor`, or at the start of the zone
/// when they do not fit before its end.
fn cyclic(cursor: &mut u64, zone: &Range<u64>, pages: u64) -> Result<u64, String> {
    if *cursor + pages > zone.end {
        *cursor = zone.start;
    }
    let lba = fit(zone, *cursor, u32::try_from(pages).unwrap_or(u32::MAX))?;
    *cursor = lba + pages;
    Ok(lba)
}

impl<'a> Placer<'a> {
    pub(crate) fn new(layout: &'a Layout) -> Self {
        Placer {
            layout,
            journal_head: layout.fs_journal.start,
            apps: vec![None; layout.apps.len()],
        }
    }

    /// Registers app `app` with the file sizes of its skeleton and its placement stream.
    pub(crate) fn add_app(&mut self, app: usize, requests: &[Skel], files: u32, rng: Rng) {
        let Some(layout) = self.layout.apps.get(app) else {
            return;
        };
        let mut file_pages = vec![0u64; files as usize];
        for r in requests {
            if let Target::File { file, .. } = r.target {
                if let Some(total) = file_pages.get_mut(file as usize) {
                    *total += u64::from(r.pages);
                }
            }
        }
        self.apps[app] = Some(AppState {
            dbs: layout.dbs.iter().map(db_state).collect(),
            file_pages,
            files: vec![None; files as usize],
            cursors: layout.streams.iter().map(|s| s.start).collect(),
            recent_files: vec![Ring::default(); layout.streams.len()],
            exec_cursor: layout.exec.start,
            rng,
        });
    }

    /// The first LBA of `request` of app `app`.
    pub(crate) fn place(&mut self, app: usize, request: &Skel) -> Result<u64, String> {
        let (Some(layout), Some(Some(state))) = (self.layout.apps.get(app), self.apps.get_mut(app))
        else {
            return Err(format!("app {app} was not registered"));
        };
        let pages = request.pages;
        match request.target {
            Target::FsJournal => cyclic(
                &mut self.journal_head,
                &self.layout.fs_journal,
                u64::from(pages),
            ),
            Target::FsMeta => {
                let zone = if state.rng.below(100) < META_WINDOW_PERCENT {
                    &layout.meta_window
                } else {
                    &self.layout.fs_meta
                };
                fit(zone, uniform(zone, &mut state.rng), pages)
            }
            Target::DbJournal(db) | Target::DbJournalHeader(db) => {
                let journal = &db_layout(layout, db)?.journal;
                fit(journal, journal.start, pages)
            }
            Target::DbPage(db) => db_page(layout, state, db, pages),
            Target::DbAppend(db) => db_append(layout, state, db, pages),
            Target::Text => text(layout, state, pages),
            Target::File { stream, file } => file_chunk(layout, state, stream, file, pages),
            Target::ReadDb(db) => read_db(layout, state, db, pages),
            Target::ReadAppended(db) => read_appended(state, db, pages),
            Target::ReadFile(stream) => read_file(layout, state, stream, pages),
            Target::ReadExec => cyclic(&mut state.exec_cursor, &layout.exec, u64::from(pages)),
        }
    }
}

fn db_layout(layout: &AppLayout, db: u8) -> Result<&DbLayout, String> {
    layout
        .dbs
        .get(usize::from(db))
        .ok_or_else(|| format!("no database {db}"))
}

fn db_state_mut(state: &mut AppState, db: u8) -> Result<&mut DbState, String> {
    state
        .dbs
        .get_mut(usize::from(db))
        .ok_or_else(|| format!("no database {db}"))
}

/// A page changed in place: a hot page, a recently written one, or any.
fn db_page(layout: &AppLayout, state: &mut AppState, db: u8, pages: u32) -> Result<u64, String> {
    let data = &db_layout(layout, db)?.data;
    let rng = &mut state.rng;
    let s = state
        .dbs
        .get_mut(usize::from(db))
        .ok_or_else(|| format!("no database {db}"))?;
    let hot = (data.end - data.start)
        .div_ceil(8)
        .max(8)
        .min(data.end - data.start);
    let roll = rng.below(100);
    let start = if roll < DB_HOT_PERCENT {
        data.start + rng.below(hot)
    } else if roll < DB_HOT_PERCENT + DB_RECENT_PERCENT {
        s.recent
            .pick(rng)
            .unwrap_or_else(|| data.start + rng.below(hot))
    } else {
        uniform(data, rng)
    };
    let lba = fit(data, start, pages)?;
    s.recent.push(lba, pages);
    Ok(lba)
}

/// New pages at the database's tail (or BLOB area), wrapping within it.
fn db_append(layout: &AppLayout, state: &mut AppState, db: u8, pages: u32) -> Result<u64, String> {
    let tail_of_file = db_layout(layout, db)?.blobs.is_none();
    let s = db_state_mut(state, db)?;
    let lba = cyclic(&mut s.tail, &s.append_area, u64::from(pages))?;
    s.appended.push(lba, pages);
    if tail_of_file {
        s.recent.push(lba, pages);
    }
    Ok(lba)
}

fn read_db(layout: &AppLayout, state: &mut AppState, db: u8, pages: u32) -> Result<u64, String> {
    let data = &db_layout(layout, db)?.data;
    let rng = &mut state.rng;
    let s = state
        .dbs
        .get_mut(usize::from(db))
        .ok_or_else(|| format!("no database {db}"))?;
    let recent = (rng.below(100) < DB_READ_RECENT_PERCENT)
        .then(|| s.recent.pick(rng))
        .flatten();
    let hot = (data.end - data.start).div_ceil(8).max(1);
    let start = recent.unwrap_or_else(|| data.start + rng.below(hot));
    fit(data, start, pages)
}

/// A read of recently appended pages (a tile shown again), else of any in the area.
fn read_appended(state: &mut AppState, db: u8, pages: u32) -> Result<u64, String> {
    let rng = &mut state.rng;
    let s = state
        .dbs
        .get(usize::from(db))
        .ok_or_else(|| format!("no database {db}"))?;
    let start = match s.appended.pick(rng) {
        Some(lba) => lba,
        None => uniform(&s.append_area, rng),
    };
    fit(&s.append_area, start, pages)
}

/// A small file rewritten in place, mostly one of the first few.
fn text(layout: &AppLayout, state: &mut AppState, pages: u32) -> Result<u64, String> {
    let files = &layout.files;
    let slots = ((files.end - files.start) / TEXT_SLOT_PAGES).max(1);
    let slot = if state.rng.below(100) < TEXT_HOT_PERCENT {
        state.rng.below(TEXT_HOT_SLOTS.min(slots))
    } else {
        state.rng.below(slots)
    };
    fit(files, files.start + slot * TEXT_SLOT_PAGES, pages)
}

/// A chunk of a new file: the file takes the next free run of its directory's zone
/// (wrapping to the start, where the oldest cache entries were evicted).
fn file_chunk(
    layout: &AppLayout,
    state: &mut AppState,
    stream: u8,
    file: u32,
    pages: u32,
) -> Result<u64, String> {
    let zone = layout
        .streams
        .get(usize::from(stream))
        .ok_or_else(|| format!("no file stream {stream}"))?;
    let index = file as usize;
    let slot = match state.files.get(index).cloned().flatten() {
        Some(slot) => slot,
        None => {
            let total = state.file_pages.get(index).copied().unwrap_or(0);
            let base = cyclic(&mut state.cursors[usize::from(stream)], zone, total)?;
            state.recent_files[usize::from(stream)].push(base, total as u32);
            FileSlot { base, written: 0 }
        }
    };
    let lba = fit(zone, slot.base + slot.written, pages)?;
    if let Some(entry) = state.files.get_mut(index) {
        *entry = Some(FileSlot {
            base: slot.base,
            written: slot.written + u64::from(pages),
        });
    }
    Ok(lba)
}

fn read_file(
    layout: &AppLayout,
    state: &mut AppState,
    stream: u8,
    pages: u32,
) -> Result<u64, String> {
    let zone = layout
        .streams
        .get(usize::from(stream))
        .ok_or_else(|| format!("no file stream {stream}"))?;
    let start = match state.recent_files[usize::from(stream)].pick(&mut state.rng) {
        Some(lba) => lba,
        None => uniform(zone, &mut state.rng),
    };
    fit(zone, start, pages)
}
