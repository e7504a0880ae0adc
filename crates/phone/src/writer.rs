//! File calls on the stack at virtual times, with bytes from a bounded pool of content-model
//! pages: bulk files (media, packages, caches) repeat pool pages, which the NAND stores once
//! (`Nand::enable_frame_dedup`), so a phone's memory follows its distinct bytes.

use std::collections::BTreeMap;

use flashstack_content::{ContentClass, ContentMix, ContentModel, PAGE_SIZE};
use flashstack_sim::Nanos;
use flashstack_sqlvfs::{FileApi, FileError, FileId, OpenFlags};
use flashstack_stack::SharedStack;

use crate::error::PhoneError;

/// Distinct pages per content class in the pool (8 MiB each).
const POOL_PAGES: u64 = 2048;
/// Bytes per write call of bulk files (a download manager's or installer's buffer).
pub const BULK_CHUNK_BYTES: usize = 256 * 1024;

/// The content classes the population uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bytes {
    /// Already-compressed data: JPEG, MP4, APK (zip), image caches.
    Media,
    /// Compiled code: odex, vdex, native libraries.
    Exec,
    /// Preferences XML, logs, JSON caches.
    Text,
    /// Database pages.
    Sqlite,
}

impl Bytes {
    fn class(self) -> ContentClass {
        match self {
            Bytes::Media => ContentClass::Media,
            Bytes::Exec => ContentClass::Executable,
            Bytes::Text => ContentClass::Text,
            Bytes::Sqlite => ContentClass::SqliteTable,
        }
    }
    fn index(self) -> usize {
        self as usize
    }
}

/// Pre-generated pool pages, per class.
struct Pool {
    pages: Vec<Vec<u8>>,
}

impl Pool {
    fn new(seed: u64) -> Pool {
        let model = ContentModel::new(seed, ContentMix::only(ContentClass::Media));
        let classes = [Bytes::Media, Bytes::Exec, Bytes::Text, Bytes::Sqlite];
        let pages = classes
            .iter()
            .map(|b| {
                let mut bytes = vec![0u8; POOL_PAGES as usize * PAGE_SIZE];
                for (i, page) in bytes.chunks_exact_mut(PAGE_SIZE).enumerate() {
                    model.fill_class(b.class(), i as u64, 0, page);
                }
                bytes
            })
            .collect();
        Pool { pages }
    }

    /// The pool page standing for page `page` of content `key`.
    fn page(&self, bytes: Bytes, key: u64, page: u64) -> &[u8] {
        let i = mix(key ^ page.wrapping_mul(0x9E37_79B9_7F4A_7C15)) % POOL_PAGES;
        let start = i as usize * PAGE_SIZE;
        &self.pages[bytes.index()][start..start + PAGE_SIZE]
    }
}

fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// A stable key for a file's content.
pub fn key_of(path: &str, version: u64) -> u64 {
    let mut h = 0xCBF2_9CE4_8422_2325u64 ^ version;
    for b in path.bytes() {
        h = (h ^ b as u64).wrapping_mul(0x0100_0000_01B3);
    }
    mix(h)
}

/// The phone's file calls, each at the writer's clock.
pub struct Writer {
    pub api: SharedStack,
    pub now: Nanos,
    pool: Pool,
    buf: Vec<u8>,
    /// Bytes written through the file API (for the report).
    pub bytes_written: u64,
    /// Files whose last change was a whole write, fsync'd: length, content and key.
    durable: BTreeMap<String, (u64, Bytes, u64)>,
}

fn file_err(op: &'static str, path: &str, e: FileError) -> PhoneError {
    PhoneError::File {
        op,
        path: path.to_string(),
        source: e,
    }
}

impl Writer {
    pub fn new(api: SharedStack, seed: u64) -> Writer {
        let now = api.lock().now_ns();
        Writer {
            api,
            now,
            pool: Pool::new(seed ^ 0x504F_4F4C),
            buf: Vec::new(),
            bytes_written: 0,
            durable: BTreeMap::new(),
        }
    }

    /// Moves the clock to `t` (never back).
    pub fn at(&mut self, t: Nanos) {
        self.now = self.now.max(t);
    }

    /// Takes the stack's clock after calls made by someone else (a persona).
    pub fn catch_up(&mut self) {
        self.now = self.now.max(self.api.lock().now_ns());
    }

    /// `mkdir -p`.
    pub fn mkdirs(&mut self, path: &str) -> Result<(), PhoneError> {
        let mut at = String::new();
        for part in path.split('/').filter(|p| !p.is_empty()) {
            at.push('/');
            at.push_str(part);
            match self.api.mkdir(self.now, &at) {
                Ok(t) => self.now = t,
                Err(FileError::AlreadyExists(_)) => {}
                Err(e) => return Err(file_err("mkdir", &at, e)),
            }
        }
        Ok(())
    }

    fn open(&mut self, path: &str) -> Result<FileId, PhoneError> {
        let (id, t) = self
            .api
            .open(
                self.now,
                path,
                OpenFlags {
                    create: true,
                    ..OpenFlags::default()
                },
            )
            .map_err(|e| file_err("open", path, e))?;
        self.now = t;
        Ok(id)
    }

    fn close(&mut self, id: FileId, path: &str) -> Result<(), PhoneError> {
        self.now = self
            .api
            .close(self.now, id)
            .map_err(|e| file_err("close", path, e))?;
        Ok(())
    }

    fn sync(&mut self, id: FileId, path: &str, data_only: bool) -> Result<(), PhoneError> {
        self.now = self
            .api
            .sync(self.now, id, data_only)
            .map_err(|e| file_err("fsync", path, e))?;
        Ok(())
    }

    /// Fills `self.buf` with `len` bytes of content `key` starting at byte `offset`
    /// (page-aligned offsets only).
    fn fill(&mut self, bytes: Bytes, key: u64, offset: u64, len: usize) {
        self.buf.clear();
        let first = offset / PAGE_SIZE as u64;
        let pages = len.div_ceil(PAGE_SIZE) as u64;
        for p in first..first + pages {
            self.buf.extend_from_slice(self.pool.page(bytes, key, p));
        }
        self.buf.truncate(len);
    }

    fn write(
        &mut self,
        id: FileId,
        path: &str,
        offset: u64,
        bytes: Bytes,
        key: u64,
        len: usize,
    ) -> Result<(), PhoneError> {
        self.fill(bytes, key, offset, len);
        let data = std::mem::take(&mut self.buf);
        let result = self.api.write_at(self.now, id, offset, &data);
        self.buf = data;
        self.now = result.map_err(|e| file_err("write", path, e))?;
        self.bytes_written += len as u64;
        Ok(())
    }

    /// The files whose last change was a whole, fsync'd write, with their bytes.
    pub fn durable_files(&self) -> Vec<(String, Vec<u8>)> {
        self.durable
            .iter()
            .map(|(path, &(len, bytes, key))| {
                let mut data = Vec::with_capacity(len as usize);
                for p in 0..len.div_ceil(PAGE_SIZE as u64) {
                    data.extend_from_slice(self.pool.page(bytes, key, p));
                }
                data.truncate(len as usize);
                (path.clone(), data)
            })
            .collect()
    }

    /// Writes a whole file of `len` bytes (replacing one of that name) in `chunk`-byte
    /// calls; fsync'd if asked.
    pub fn put_file(
        &mut self,
        path: &str,
        len: u64,
        bytes: Bytes,
        key: u64,
        chunk: usize,
        fsync: bool,
    ) -> Result<(), PhoneError> {
        let id = self.open(path)?;
        self.now = self
            .api
            .truncate(self.now, id, 0)
            .map_err(|e| file_err("truncate", path, e))?;
        let mut at = 0u64;
        while at < len {
            let n = (len - at).min(chunk as u64) as usize;
            self.write(id, path, at, bytes, key, n)?;
            at += n as u64;
        }
        self.durable.remove(path);
        if fsync {
            self.sync(id, path, false)?;
            self.durable.insert(path.to_string(), (len, bytes, key));
        }
        self.close(id, path)
    }

    /// Writes whole pages `(index, version)` of a file, then syncs it (`fdatasync` if
    /// `data_only`) when `sync` is set. Page versions pick distinct content.
    pub fn put_pages(
        &mut self,
        path: &str,
        pages: &[(u64, u64)],
        bytes: Bytes,
        sync: Option<bool>,
    ) -> Result<(), PhoneError> {
        self.durable.remove(path);
        let id = self.open(path)?;
        let base = key_of(path, 0);
        for &(index, version) in pages {
            let key = base ^ version.wrapping_mul(0xA24B_AED4_963E_E407);
            let offset = index * PAGE_SIZE as u64;
            self.fill(bytes, key, offset, PAGE_SIZE);
            let data = std::mem::take(&mut self.buf);
            let result = self.api.write_at(self.now, id, offset, &data);
            self.buf = data;
            self.now = result.map_err(|e| file_err("write", path, e))?;
            self.bytes_written += PAGE_SIZE as u64;
        }
        if let Some(data_only) = sync {
            self.sync(id, path, data_only)?;
        }
        self.close(id, path)
    }

    /// Appends `len` bytes to a file (a log), unsynced.
    pub fn append(
        &mut self,
        path: &str,
        len: u64,
        bytes: Bytes,
        key: u64,
    ) -> Result<(), PhoneError> {
        self.durable.remove(path);
        let id = self.open(path)?;
        let (size, t) = self
            .api
            .size(self.now, id)
            .map_err(|e| file_err("size", path, e))?;
        self.now = t;
        // Appends start on a page boundary of the content; the bytes need not continue
        // the previous ones.
        let mut at = size;
        let end = size + len;
        while at < end {
            let n = (end - at).min(BULK_CHUNK_BYTES as u64) as usize;
            self.fill(bytes, key, 0, n);
            let data = std::mem::take(&mut self.buf);
            let result = self.api.write_at(self.now, id, at, &data);
            self.buf = data;
            self.now = result.map_err(|e| file_err("write", path, e))?;
            self.bytes_written += n as u64;
            at += n as u64;
        }
        self.close(id, path)
    }

    /// Shared-preferences commit: `path.new` written and fsync'd, renamed over `path`.
    pub fn atomic_replace(&mut self, path: &str, len: u64, key: u64) -> Result<(), PhoneError> {
        let tmp = format!("{path}.new");
        self.put_file(&tmp, len, Bytes::Text, key, BULK_CHUNK_BYTES, true)?;
        self.now = self
            .api
            .rename(self.now, &tmp, path)
            .map_err(|e| file_err("rename", &tmp, e))?;
        // Until the rename is checkpointed either version may be found after a cut.
        self.durable.remove(&tmp);
        self.durable.remove(path);
        Ok(())
    }

    /// Deletes a file; a missing one is not an error.
    pub fn delete(&mut self, path: &str) -> Result<(), PhoneError> {
        self.durable.remove(path);
        match self.api.delete(self.now, path, false) {
            Ok(t) => self.now = t,
            Err(FileError::NotFound(_)) => {}
            Err(e) => return Err(file_err("delete", path, e)),
        }
        Ok(())
    }

    /// Lets background work run until `t` (the phone lies idle).
    pub fn idle_until(&mut self, t: Nanos) -> Result<(), PhoneError> {
        let end = self
            .api
            .lock()
            .idle_until(t.max(self.now))
            .map_err(|e| file_err("idle", "/", e))?;
        self.now = self.now.max(end);
        Ok(())
    }

    /// The phone sleeps until `t` (see `Stack::suspend_until`).
    pub fn suspend_until(&mut self, t: Nanos) -> Result<(), PhoneError> {
        let end = self
            .api
            .lock()
            .suspend_until(t.max(self.now))
            .map_err(|e| file_err("suspend", "/", e))?;
        self.now = self.now.max(end);
        Ok(())
    }

    /// Removes an empty directory (uninstalled apps), straight on F2FS; a missing or
    /// non-empty one is left alone.
    pub fn rmdir(&mut self, path: &str) {
        let mut stack = self.api.lock();
        let _ = stack.with_fs(|fs| fs.rmdir(path));
    }
}
