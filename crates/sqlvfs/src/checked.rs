//! [`Checked`]: a [`FileApi`] that passes every call to the file system below and
//! checks each read against a reference model of the files' contents, so a file system
//! that returns wrong bytes is caught at the first read that shows it (with the file,
//! offset and first differing byte), not later as a "database disk image is malformed"
//! from SQLite. The model is the API's non-crash semantics: writes and truncates are
//! visible at once, an atomic write's changes are dropped on abort and on the last close
//! before a commit. Power cuts are out of its scope (a `PowerLost` error disables it).
//!
//! A file the model has not seen (created before the wrapper, or by a caller going around
//! it) is learned from the file system at its first open.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::api::{FileApi, FileError, FileId, Nanos, OpenFlags, UserInput};

/// One file of the model (an inode: names and handles point at it).
#[derive(Debug, Default)]
struct ModelFile {
    bytes: Vec<u8>,
    handles: u32,
    named: bool,
    /// Contents at `atomic_begin`, restored on abort or on the last close.
    atomic_base: Option<Vec<u8>>,
}

/// A [`FileApi`] whose reads are checked against a model; see the module doc.
pub struct Checked<A: FileApi> {
    inner: A,
    files: BTreeMap<u64, ModelFile>,
    names: BTreeMap<String, u64>,
    handles: BTreeMap<FileId, u64>,
    /// The name each handle was opened by (for messages).
    paths: BTreeMap<FileId, String>,
    next_file: u64,
    /// Shared so a caller that handed the wrapper away (boxed) can still read it.
    reads_checked: Arc<AtomicU64>,
    disabled: bool,
}

impl<A: FileApi> Checked<A> {
    pub fn new(inner: A) -> Checked<A> {
        Checked {
            inner,
            files: BTreeMap::new(),
            names: BTreeMap::new(),
            handles: BTreeMap::new(),
            paths: BTreeMap::new(),
            next_file: 0,
            reads_checked: Arc::default(),
            disabled: false,
        }
    }

    /// Reads compared with the model so far, as a counter that outlives the wrapper.
    pub fn reads_checked(&self) -> Arc<AtomicU64> {
        self.reads_checked.clone()
    }

    pub fn inner(&mut self) -> &mut A {
        &mut self.inner
    }

    fn file_of(&mut self, id: FileId) -> Option<&mut ModelFile> {
        let f = *self.handles.get(&id)?;
        self.files.get_mut(&f)
    }

    /// Reads the whole file `id` from below (a file the model has not seen).
    fn learn(&mut self, now: Nanos, id: FileId) -> Result<Vec<u8>, FileError> {
        let (size, _) = self.inner.size(now, id)?;
        let mut bytes = vec![0u8; size as usize];
        let mut at = 0;
        while at < bytes.len() {
            let (n, _) = self.inner.read_at(now, id, at as u64, &mut bytes[at..])?;
            if n == 0 {
                break;
            }
            at += n;
        }
        bytes.truncate(at);
        Ok(bytes)
    }

    fn drop_file_if_unused(&mut self, f: u64) {
        if self
            .files
            .get(&f)
            .is_some_and(|m| m.handles == 0 && !m.named)
        {
            self.files.remove(&f);
        }
    }

    fn unname(&mut self, path: &str) {
        if let Some(f) = self.names.remove(path) {
            if let Some(m) = self.files.get_mut(&f) {
                m.named = false;
            }
            self.drop_file_if_unused(f);
        }
    }

    fn track<T>(&mut self, out: Result<T, FileError>) -> Result<T, FileError> {
        if matches!(out, Err(FileError::PowerLost)) {
            self.disabled = true;
        }
        out
    }
}

/// The first differing byte of two reads.
fn first_difference(got: &[u8], want: &[u8]) -> Option<usize> {
    got.iter()
        .zip(want)
        .position(|(a, b)| a != b)
        .or((got.len() != want.len()).then(|| got.len().min(want.len())))
}

impl<A: FileApi> FileApi for Checked<A> {
    fn user_input(&mut self, now: Nanos, input: UserInput) {
        self.inner.user_input(now, input);
    }

    fn open(
        &mut self,
        now: Nanos,
        path: &str,
        flags: OpenFlags,
    ) -> Result<(FileId, Nanos), FileError> {
        let out = self.inner.open(now, path, flags);
        let (id, t) = self.track(out)?;
        if self.disabled {
            return Ok((id, t));
        }
        let f = match self.names.get(path) {
            Some(&f) => f,
            None => {
                let bytes = self.learn(now, id)?;
                let f = self.next_file;
                self.next_file += 1;
                self.files.insert(
                    f,
                    ModelFile {
                        bytes,
                        named: true,
                        ..ModelFile::default()
                    },
                );
                self.names.insert(path.to_string(), f);
                f
            }
        };
        self.files.get_mut(&f).expect("named file").handles += 1;
        self.handles.insert(id, f);
        self.paths.insert(id, path.to_string());
        if flags.delete_on_close {
            self.names.remove(path);
            self.files.get_mut(&f).expect("named file").named = false;
        }
        Ok((id, t))
    }

    fn close(&mut self, now: Nanos, file: FileId) -> Result<Nanos, FileError> {
        let out = self.inner.close(now, file);
        let t = self.track(out)?;
        self.paths.remove(&file);
        if let Some(f) = self.handles.remove(&file) {
            if let Some(m) = self.files.get_mut(&f) {
                m.handles -= 1;
                if m.handles == 0 {
                    if let Some(base) = m.atomic_base.take() {
                        m.bytes = base;
                    }
                }
            }
            self.drop_file_if_unused(f);
        }
        Ok(t)
    }

    fn read_at(
        &mut self,
        now: Nanos,
        file: FileId,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<(usize, Nanos), FileError> {
        let out = self.inner.read_at(now, file, offset, buf);
        let (n, t) = self.track(out)?;
        if self.disabled {
            return Ok((n, t));
        }
        let Some(m) = self.file_of(file) else {
            return Ok((n, t));
        };
        let start = (offset as usize).min(m.bytes.len());
        let end = (start + buf.len()).min(m.bytes.len());
        if let Some(i) = first_difference(&buf[..n], &m.bytes[start..end]) {
            let want = m.bytes.get(start + i).copied();
            let got = buf.get(i).filter(|_| i < n).copied();
            let path = self.paths.get(&file).cloned().unwrap_or_default();
            return Err(FileError::Io(format!(
                "checked read of '{path}' at offset {offset}, {} bytes: {n} read, {} expected; first difference at byte {} (got {got:?}, expected {want:?})",
                buf.len(),
                end - start,
                offset + i as u64,
            )));
        }
        self.reads_checked.fetch_add(1, Ordering::Relaxed);
        Ok((n, t))
    }

    fn write_at(
        &mut self,
        now: Nanos,
        file: FileId,
        offset: u64,
        data: &[u8],
    ) -> Result<Nanos, FileError> {
        let out = self.inner.write_at(now, file, offset, data);
        let t = self.track(out)?;
        if let Some(m) = self.file_of(file) {
            let end = offset as usize + data.len();
            if m.bytes.len() < end {
                m.bytes.resize(end, 0);
            }
            m.bytes[offset as usize..end].copy_from_slice(data);
        }
        Ok(t)
    }

    fn truncate(&mut self, now: Nanos, file: FileId, size_bytes: u64) -> Result<Nanos, FileError> {
        let out = self.inner.truncate(now, file, size_bytes);
        let t = self.track(out)?;
        if let Some(m) = self.file_of(file) {
            m.bytes.resize(size_bytes as usize, 0);
        }
        Ok(t)
    }

    fn size(&mut self, now: Nanos, file: FileId) -> Result<(u64, Nanos), FileError> {
        let out = self.inner.size(now, file);
        let (size, t) = self.track(out)?;
        if !self.disabled {
            if let Some(m) = self.file_of(file) {
                if m.bytes.len() as u64 != size {
                    return Err(FileError::Io(format!(
                        "checked size: handle {file} is {size} bytes, {} expected",
                        m.bytes.len()
                    )));
                }
            }
        }
        Ok((size, t))
    }

    fn sync(&mut self, now: Nanos, file: FileId, data_only: bool) -> Result<Nanos, FileError> {
        let out = self.inner.sync(now, file, data_only);
        self.track(out)
    }

    fn delete(&mut self, now: Nanos, path: &str, sync_dir: bool) -> Result<Nanos, FileError> {
        let out = self.inner.delete(now, path, sync_dir);
        let t = self.track(out)?;
        self.unname(path);
        Ok(t)
    }

    fn exists(&mut self, now: Nanos, path: &str) -> Result<(bool, Nanos), FileError> {
        let out = self.inner.exists(now, path);
        self.track(out)
    }

    fn rename(&mut self, now: Nanos, from: &str, to: &str) -> Result<Nanos, FileError> {
        let out = self.inner.rename(now, from, to);
        let t = self.track(out)?;
        if let Some(f) = self.names.remove(from) {
            self.unname(to);
            self.names.insert(to.to_string(), f);
        } else {
            // Not known: forget the target; its next open learns it from below.
            self.unname(to);
        }
        Ok(t)
    }

    fn mkdir(&mut self, now: Nanos, path: &str) -> Result<Nanos, FileError> {
        let out = self.inner.mkdir(now, path);
        self.track(out)
    }

    fn sync_dir(&mut self, now: Nanos, path: &str) -> Result<Nanos, FileError> {
        let out = self.inner.sync_dir(now, path);
        self.track(out)
    }

    fn atomic_write_supported(&mut self) -> bool {
        self.inner.atomic_write_supported()
    }

    fn atomic_begin(&mut self, now: Nanos, file: FileId) -> Result<Nanos, FileError> {
        let out = self.inner.atomic_begin(now, file);
        let t = self.track(out)?;
        if let Some(m) = self.file_of(file) {
            m.atomic_base = Some(m.bytes.clone());
        }
        Ok(t)
    }

    fn atomic_commit(&mut self, now: Nanos, file: FileId) -> Result<Nanos, FileError> {
        let out = self.inner.atomic_commit(now, file);
        let committed = out.is_ok();
        let out = self.track(out);
        if let Some(m) = self.file_of(file) {
            // On an error the changes are dropped (the trait's contract).
            match m.atomic_base.take() {
                Some(base) if !committed => m.bytes = base,
                _ => {}
            }
        }
        out
    }

    fn atomic_abort(&mut self, now: Nanos, file: FileId) -> Result<Nanos, FileError> {
        let out = self.inner.atomic_abort(now, file);
        let t = self.track(out)?;
        if let Some(m) = self.file_of(file) {
            if let Some(base) = m.atomic_base.take() {
                m.bytes = base;
            }
        }
        Ok(t)
    }
}
