//! A corpus of real SQLite pages for the content model ([`PageCorpus`]): the personas run
//! on an in-memory file system whose database files are watched, and every page of a
//! database that changed is captured each time SQLite syncs the file (each commit under
//! PERSIST, each checkpoint under WAL). A page's captures, in order, form its version
//! chain; each captured version is classed by its b-tree page type byte
//! ([`sqlite_page_class`]).
//!
//! Deterministic: the personas are deterministic programs over one seed, the file system is
//! in memory and pages are gathered in (persona, file, page number) order, so the same
//! seed gives byte-identical corpora. The size is bounded per class by a deterministic,
//! seeded choice of chains ([`CorpusOptions::pages_per_class_max`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use flashstack_content::{ContentClass, PageChain, PageCorpus, PAGE_SIZE};
use flashstack_sqlvfs::{FileApi, FileError, FileId, MemFs, MemFsConfig, Nanos, OpenFlags};

use crate::error::AppError;
use crate::runner::{run_with, RunOptions};

/// What a corpus is built from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CorpusOptions {
    /// Personas to run (catalogue names), in order.
    pub personas: Vec<String>,
    /// Seed of the personas (the same for each).
    pub seed: u64,
    /// At most this many pages (all versions counted) per class.
    pub pages_per_class_max: usize,
    /// At most this many versions per chain, evenly spaced over the page's life (a hot
    /// page committed hundreds of times would otherwise fill a class alone).
    pub versions_per_chain_max: usize,
    /// The classes kept (pages of other classes are left out, and the content model
    /// generates them as before).
    pub classes: Vec<ContentClass>,
}

/// The personas of the LDC paper's scenarios: their databases are the apps the LDC
/// workloads stand for.
pub const LDC_PERSONAS: [&str; 6] = [
    "facebook",
    "twitter:feeds",
    "messenger",
    "google-earth",
    "chrome",
    "camera",
];

impl Default for CorpusOptions {
    fn default() -> Self {
        CorpusOptions {
            personas: LDC_PERSONAS.iter().map(|s| (*s).to_owned()).collect(),
            seed: 1,
            // 1,024 pages of 4 KiB: at most 4 MiB per class, 12 MiB in all.
            pages_per_class_max: 1024,
            versions_per_chain_max: 32,
            classes: vec![
                ContentClass::SqliteTable,
                ContentClass::SqliteIndex,
                ContentClass::SqliteBlob,
            ],
        }
    }
}

/// SQLite's header string, the first 16 bytes of every database file.
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";
/// Bytes of the database header on page 1, before its b-tree page header.
const DB_HEADER: usize = 100;
/// Largest payload a table leaf keeps on its page (U − 35 for a 4096-byte page, no
/// reserved bytes); a larger one spills to overflow pages.
const TABLE_LOCAL_MAX: u64 = PAGE_SIZE as u64 - 35;

/// The content class of one page of a SQLite database file (4096-byte pages), or `None`
/// for a page that carries no data of ours (empty, a freelist trunk, page 1's schema
/// table is kept: it is a table leaf).
///
/// * table leaf (0x0D) → `sqlite`, unless a cell spills to overflow pages (its rows carry
///   BLOBs or long text) → `sqlite-blob`;
/// * index leaf (0x0A), index interior (0x02), table interior (0x05) → `sqlite-index`
///   (keys and child pointers);
/// * any other page whose first four bytes name a page of the file (the next page of an
///   overflow chain, 0 for the last) → `sqlite-blob` (overflow pages);
///
/// A b-tree page is accepted only if its header is consistent: cell count and cell
/// pointers within the page, the content area after the pointer array.
pub fn sqlite_page_class(page: &[u8], page_no: u64, db_pages: u64) -> Option<ContentClass> {
    if page.len() != PAGE_SIZE || page.iter().all(|&b| b == 0) {
        return None;
    }
    let h = if page_no == 1 { DB_HEADER } else { 0 };
    if let Some(class) = btree_class(page, h) {
        return Some(class);
    }
    if page_no == 1 {
        return None;
    }
    let be32 = |at: usize| u32::from_be_bytes(page[at..at + 4].try_into().expect("4 bytes"));
    let next = u64::from(be32(0));
    if next > db_pages || next == page_no {
        return None;
    }
    // A freelist trunk: next trunk, a leaf count and that many page numbers.
    let leaves = be32(4) as usize;
    let trunk =
        leaves <= PAGE_SIZE / 4 - 2 && (0..leaves).all(|i| u64::from(be32(8 + 4 * i)) <= db_pages);
    (!trunk).then_some(ContentClass::SqliteBlob)
}

fn be16(page: &[u8], at: usize) -> usize {
    usize::from(u16::from_be_bytes([page[at], page[at + 1]]))
}

/// A SQLite varint at `at`: its value and length.
fn varint(page: &[u8], at: usize) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for i in 0..9 {
        let b = *page.get(at + i)?;
        if i == 8 {
            return Some(((v << 8) | u64::from(b), 9));
        }
        v = (v << 7) | u64::from(b & 0x7F);
        if b & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

fn btree_class(page: &[u8], h: usize) -> Option<ContentClass> {
    let kind = page[h];
    let header = match kind {
        0x0D | 0x0A => 8,
        0x05 | 0x02 => 12,
        _ => return None,
    };
    let cells = be16(page, h + 3);
    let content = match be16(page, h + 5) {
        0 => 65_536,
        c => c,
    };
    let pointers_end = h + header + 2 * cells;
    if pointers_end > content || content > PAGE_SIZE {
        return None;
    }
    let freeblock = be16(page, h + 1);
    if freeblock != 0 && !(content..PAGE_SIZE).contains(&freeblock) {
        return None;
    }
    let mut spills = false;
    for i in 0..cells {
        let cell = be16(page, h + header + 2 * i);
        if !(content..PAGE_SIZE).contains(&cell) {
            return None;
        }
        if kind == 0x0D {
            spills |= varint(page, cell)?.0 > TABLE_LOCAL_MAX;
        }
    }
    Some(match kind {
        0x0D if spills => ContentClass::SqliteBlob,
        0x0D => ContentClass::SqliteTable,
        _ => ContentClass::SqliteIndex,
    })
}

/// One captured version of a page, with the file's size in pages at the time.
type PageVersion = (Vec<u8>, u64);

/// Captured versions of every page of every database file, by (file, page number).
#[derive(Default)]
struct Captured {
    /// Path of each open handle.
    paths: BTreeMap<FileId, String>,
    /// Pages written since the file's last sync, by handle.
    dirty: BTreeMap<FileId, std::collections::BTreeSet<u64>>,
    /// Versions of each page, oldest first (consecutive versions differ), each with the
    /// file's size in pages when it was captured.
    chains: BTreeMap<(String, u64), Vec<PageVersion>>,
}

/// A file system that captures database pages at each sync.
struct Capture {
    fs: MemFs,
    state: Arc<Mutex<Captured>>,
}

impl Capture {
    fn on_sync(&mut self, now: Nanos, file: FileId) -> Result<(), FileError> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let state = &mut *state;
        let Some(dirty) = state.dirty.remove(&file) else {
            return Ok(());
        };
        let mut head = [0u8; DB_HEADER];
        let (n, _) = self.fs.read_at(now, file, 0, &mut head)?;
        let page_size = u16::from_be_bytes([head[16], head[17]]);
        if n < DB_HEADER || &head[..16] != SQLITE_MAGIC || usize::from(page_size) != PAGE_SIZE {
            return Ok(()); // a journal, a WAL, another file, or pages we do not model
        }
        let path = state.paths.get(&file).cloned().unwrap_or_default();
        let db_pages = self.fs.size(now, file)?.0 / PAGE_SIZE as u64;
        for page_no in dirty {
            let mut page = vec![0u8; PAGE_SIZE];
            let (n, _) = self
                .fs
                .read_at(now, file, (page_no - 1) * PAGE_SIZE as u64, &mut page)?;
            if n < PAGE_SIZE {
                continue; // beyond the end after a truncation
            }
            let chain = state.chains.entry((path.clone(), page_no)).or_default();
            if chain.last().map(|(p, _)| p) != Some(&page) {
                chain.push((page, db_pages));
            }
        }
        Ok(())
    }
}

impl FileApi for Capture {
    fn open(
        &mut self,
        now: Nanos,
        path: &str,
        flags: OpenFlags,
    ) -> Result<(FileId, Nanos), FileError> {
        let (file, t) = self.fs.open(now, path, flags)?;
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.paths.insert(file, path.to_owned());
        Ok((file, t))
    }
    fn close(&mut self, now: Nanos, file: FileId) -> Result<Nanos, FileError> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.paths.remove(&file);
        state.dirty.remove(&file);
        drop(state);
        self.fs.close(now, file)
    }
    fn read_at(
        &mut self,
        now: Nanos,
        file: FileId,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<(usize, Nanos), FileError> {
        self.fs.read_at(now, file, offset, buf)
    }
    fn write_at(
        &mut self,
        now: Nanos,
        file: FileId,
        offset: u64,
        data: &[u8],
    ) -> Result<Nanos, FileError> {
        if !data.is_empty() {
            let first = offset / PAGE_SIZE as u64 + 1;
            let last = (offset + data.len() as u64 - 1) / PAGE_SIZE as u64 + 1;
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            state.dirty.entry(file).or_default().extend(first..=last);
        }
        self.fs.write_at(now, file, offset, data)
    }
    fn truncate(&mut self, now: Nanos, file: FileId, size_bytes: u64) -> Result<Nanos, FileError> {
        self.fs.truncate(now, file, size_bytes)
    }
    fn size(&mut self, now: Nanos, file: FileId) -> Result<(u64, Nanos), FileError> {
        self.fs.size(now, file)
    }
    fn sync(&mut self, now: Nanos, file: FileId, data_only: bool) -> Result<Nanos, FileError> {
        let t = self.fs.sync(now, file, data_only)?;
        self.on_sync(now, file)?;
        Ok(t)
    }
    fn delete(&mut self, now: Nanos, path: &str, sync_dir: bool) -> Result<Nanos, FileError> {
        self.fs.delete(now, path, sync_dir)
    }
    fn exists(&mut self, now: Nanos, path: &str) -> Result<(bool, Nanos), FileError> {
        self.fs.exists(now, path)
    }
    fn rename(&mut self, now: Nanos, from: &str, to: &str) -> Result<Nanos, FileError> {
        self.fs.rename(now, from, to)
    }
    fn mkdir(&mut self, now: Nanos, path: &str) -> Result<Nanos, FileError> {
        self.fs.mkdir(now, path)
    }
    fn sync_dir(&mut self, now: Nanos, path: &str) -> Result<Nanos, FileError> {
        self.fs.sync_dir(now, path)
    }
}

/// The version chains of one persona's database pages, split where a page changes
/// class (a leaf that became an interior page, a freed page reused), in (file, page)
/// order; pages of no class are dropped.
pub fn persona_chains(name: &str, seed: u64) -> Result<Vec<PageChain>, AppError> {
    let persona = crate::catalog::persona(name)?;
    let state = Arc::new(Mutex::new(Captured::default()));
    let fs = Capture {
        fs: MemFs::new(seed, MemFsConfig::default()),
        state: Arc::clone(&state),
    };
    let options = RunOptions {
        record: false,
        ..RunOptions::default()
    };
    let out = run_with(persona.as_ref(), Box::new(fs), seed, &options);
    if let Some(e) = out.error {
        return Err(e);
    }
    let state = std::mem::take(&mut *state.lock().unwrap_or_else(|e| e.into_inner()));
    let mut chains = Vec::new();
    for ((_, page_no), versions) in state.chains {
        let mut current: Option<PageChain> = None;
        for (page, db_pages) in versions {
            let class = sqlite_page_class(&page, page_no, db_pages);
            match (&mut current, class) {
                (Some(c), Some(k)) if c.class == k => c.pages.push(page),
                (_, k) => {
                    chains.extend(current.take());
                    current = k.map(|class| PageChain {
                        class,
                        pages: vec![page],
                    });
                }
            }
        }
        chains.extend(current);
    }
    Ok(chains)
}

/// `chain` with at most `max` versions, evenly spaced, the first and last kept.
fn thin(mut chain: PageChain, max: usize) -> PageChain {
    let n = chain.pages.len();
    if n <= max || max < 2 {
        chain.pages.truncate(max.max(1));
        return chain;
    }
    let keep: Vec<usize> = (0..max).map(|i| i * (n - 1) / (max - 1)).collect();
    let mut pages = std::mem::take(&mut chain.pages);
    chain.pages = keep
        .iter()
        .map(|&i| std::mem::take(&mut pages[i]))
        .collect();
    chain
}

/// Builds the corpus: every persona's chains, then per class a seeded choice of whole
/// chains (a chain longer than what is left is cut) up to the size bound.
pub fn sqlite_corpus(options: &CorpusOptions) -> Result<PageCorpus, AppError> {
    let mut all: Vec<(u64, PageChain)> = Vec::new();
    for (p, name) in options.personas.iter().enumerate() {
        for (i, chain) in persona_chains(name, options.seed)?.into_iter().enumerate() {
            if !options.classes.contains(&chain.class) {
                continue;
            }
            let key =
                flashstack_sim::Rng::new(options.seed ^ ((p as u64) << 32) ^ i as u64).next_u64();
            all.push((key, thin(chain, options.versions_per_chain_max)));
        }
    }
    // A seeded order, so that a bound keeps chains of every persona and file.
    all.sort_by_key(|(key, c)| (c.class, *key));
    let mut left: BTreeMap<ContentClass, usize> = BTreeMap::new();
    let mut kept = Vec::new();
    for (_, mut chain) in all {
        let room = left
            .entry(chain.class)
            .or_insert(options.pages_per_class_max);
        if *room == 0 {
            continue;
        }
        chain.pages.truncate(*room);
        *room -= chain.pages.len();
        kept.push(chain);
    }
    let name = format!(
        "sqlite pages of personas {} (seed {})",
        options.personas.join(","),
        options.seed
    );
    PageCorpus::new(name, kept).map_err(|e| AppError::Corpus(e.to_string()))
}
