//! Replaying a file-level trace onto any file API.

use std::collections::BTreeMap;

use flashstack_content::{ContentClass, ContentMix, ContentModel, PAGE_SIZE};
use flashstack_sqlvfs::{FileApi, FileError, FileId, Nanos, OpenFlags};
use flashstack_workload::{class_for_path, Access, Data, FileTrace, OpKind};
use serde::Serialize;

use crate::error::AppError;

/// Largest read one replayed operation performs at once (longer reads are split).
const READ_CHUNK_BYTES: usize = 1 << 20;
/// Most (file, page) versions remembered for content-class writes.
const VERSIONS_MAX: usize = 1 << 20;

/// What a replay did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ReplayReport {
    /// Operations of the trace gone through (carried out, or counted in `unhonoured`).
    pub ops: u64,
    /// Operations not carried out at all (an `rmdir`, a hard link, an unlink of a file
    /// that is not there): the part of `unhonoured` that was skipped.
    pub skipped: u64,
    /// What the replay could not do as the trace says, by kind: skipped, or done as
    /// closely as it could (an `O_EXCL` create of a file that exists opens and empties
    /// it). Without `strict` the replay counts them and carries on.
    pub unhonoured: BTreeMap<String, u64>,
    /// Files that existed before the trace, laid down before it (missing on the target
    /// only), and their bytes.
    pub preexisting_files: u64,
    pub preexisting_bytes: u64,
    /// Directories the trace uses, made before it where missing.
    pub directories_made: u64,
    /// Bytes written and read.
    pub write_bytes: u64,
    pub read_bytes: u64,
    /// Virtual time at the end.
    pub end_ns: Nanos,
}

/// How a trace is replayed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReplayOptions {
    /// Virtual time of the trace's time 0 (the preparation runs before it if it takes
    /// time: then operations move later).
    pub start_ns: Nanos,
    /// Stop at the first operation the replay cannot honour (see
    /// [`ReplayReport::unhonoured`]) instead of counting it.
    pub strict: bool,
}

struct OpenFd {
    /// `None` for a directory.
    id: Option<FileId>,
    path: String,
    position: u64,
    append: bool,
}

/// Why an operation did not go as the trace says.
enum Fail {
    /// The replay cannot honour it (the kind): counted, or an error with `strict`.
    Skip(&'static str),
    /// Anything else: always an error.
    Error(String),
}

impl From<String> for Fail {
    fn from(message: String) -> Self {
        Fail::Error(message)
    }
}

/// What the message of an unhonoured operation under `strict` adds.
const STRICT_NOTE: &str =
    "the replay cannot honour it (without --strict it is counted and the replay carries on)";

struct Replayer<'a> {
    api: &'a mut dyn FileApi,
    fds: BTreeMap<u32, OpenFd>,
    content: ContentModel,
    versions: BTreeMap<(String, u64), u32>,
    now: Nanos,
    strict: bool,
    report: ReplayReport,
}

/// Replays `trace` onto `api` from virtual time 0: see [`replay_at`].
pub fn replay(
    trace: &FileTrace,
    api: &mut dyn FileApi,
    seed: u64,
) -> Result<ReplayReport, AppError> {
    replay_at(trace, api, seed, 0)
}

/// Replays `trace` onto `api`, operation by operation, starting at virtual time
/// `start_ns`, counting what it cannot honour: [`replay_with`] with no hook.
pub fn replay_at(
    trace: &FileTrace,
    api: &mut dyn FileApi,
    seed: u64,
    start_ns: Nanos,
) -> Result<ReplayReport, AppError> {
    let options = ReplayOptions {
        start_ns,
        strict: false,
    };
    replay_with(trace, api, seed, &options, &mut |now| Ok(now))
}

/// Replays `trace` onto `api`. First it lays down what the trace found on the phone:
/// the directories it uses and the files that existed before it
/// ([`flashstack_workload::preexisting_files`]) with the sizes the trace implies, each
/// only if missing on `api`; then `start_measuring(now)` runs (a whole stack syncs and
/// restarts its counters there) and returns the time the trace starts at (at least
/// `options.start_ns`). Each operation is issued at its trace time (relative to the
/// start) or when the previous one completed, whichever is later, so idle gaps stay and
/// a slower file system delays what follows. Captured bytes are written as they are; a
/// content-class write gets that class's bytes from `flashstack_content`,
/// deterministically from `seed`, the file and the page (its version counts the page's
/// rewrites); `unknown` data gets the class the path suggests, else zeros. What the
/// replay cannot honour is counted by kind ([`ReplayReport::unhonoured`]), or with
/// `options.strict` is an error. Errors name the operation.
pub fn replay_with(
    trace: &FileTrace,
    api: &mut dyn FileApi,
    seed: u64,
    options: &ReplayOptions,
    start_measuring: &mut dyn FnMut(Nanos) -> Result<Nanos, AppError>,
) -> Result<ReplayReport, AppError> {
    let mut r = Replayer {
        api,
        fds: BTreeMap::new(),
        content: ContentModel::new(seed, ContentMix::only(ContentClass::Zeros)),
        versions: BTreeMap::new(),
        now: options.start_ns,
        strict: options.strict,
        report: ReplayReport::default(),
    };
    r.lay_down(trace).map_err(|message| AppError::Replay {
        index: 0,
        op: "laying down the files that existed before the trace",
        message,
    })?;
    let start_ns = start_measuring(r.now)?.max(options.start_ns);
    r.now = start_ns;
    for (index, op) in trace.ops.iter().enumerate() {
        r.now = r.now.max(start_ns.saturating_add(op.time_ns));
        let error = |message| AppError::Replay {
            index: index + 1,
            op: op.kind.name(),
            message,
        };
        match r.apply(&op.kind) {
            Ok(()) => {}
            Err(Fail::Error(message)) => return Err(error(message)),
            Err(Fail::Skip(kind)) => {
                r.note(kind)
                    .map_err(|_| error(format!("{kind}: {STRICT_NOTE}")))?;
                r.report.skipped += 1;
            }
        }
        r.report.ops += 1;
    }
    r.report.end_ns = r.now;
    Ok(r.report)
}

fn err(e: FileError) -> String {
    e.to_string()
}

impl Replayer<'_> {
    fn fd(&mut self, fd: u32) -> Result<&mut OpenFd, String> {
        self.fds
            .get_mut(&fd)
            .ok_or_else(|| format!("fd {fd} is not open"))
    }

    /// The file an fd names; a directory's fd cannot carry file I/O.
    fn file(&mut self, fd: u32) -> Result<FileId, Fail> {
        self.fd(fd)?
            .id
            .ok_or(Fail::Skip("file operation on a directory fd"))
    }

    fn done(&mut self, t: Nanos) {
        self.now = self.now.max(t);
    }

    /// Counts an operation not honoured as the trace says; with `strict`, refuses it.
    fn note(&mut self, kind: &'static str) -> Result<(), Fail> {
        if self.strict {
            return Err(Fail::Error(format!("{kind}: {STRICT_NOTE}")));
        }
        *self.report.unhonoured.entry(kind.to_string()).or_default() += 1;
        Ok(())
    }

    /// Makes the trace's directories and the files that existed before it, where missing.
    fn lay_down(&mut self, trace: &FileTrace) -> Result<(), String> {
        let (files, dirs) = flashstack_workload::preexisting_files(trace);
        for dir in &dirs {
            if dir.is_empty() || dir == "." {
                continue;
            }
            let (exists, t) = self.api.exists(self.now, dir).map_err(err)?;
            self.done(t);
            if !exists {
                self.make_parents(dir)?;
                match self.api.mkdir(self.now, dir) {
                    Ok(t) => {
                        self.done(t);
                        self.report.directories_made += 1;
                    }
                    Err(FileError::AlreadyExists(_)) => {}
                    Err(e) => return Err(err(e)),
                }
            }
        }
        for file in &files {
            let (exists, t) = self.api.exists(self.now, &file.path).map_err(err)?;
            self.done(t);
            if exists {
                continue;
            }
            self.make_parents(&file.path)?;
            self.lay_down_file(&file.path, file.size_bytes)?;
            self.report.preexisting_files += 1;
            self.report.preexisting_bytes += file.size_bytes;
        }
        Ok(())
    }

    /// Creates `path` with `size` bytes of the class its name suggests (else zeros),
    /// synced: the replay's later writes to it are its pages' next versions.
    fn lay_down_file(&mut self, path: &str, size: u64) -> Result<(), String> {
        let flags = OpenFlags {
            create: true,
            ..OpenFlags::default()
        };
        let (id, t) = self.api.open(self.now, path, flags).map_err(err)?;
        self.done(t);
        let class = class_for_path(path).unwrap_or(ContentClass::Zeros);
        let mut at = 0;
        while at < size {
            let len = (size - at).min(READ_CHUNK_BYTES as u64);
            let bytes = self.class_bytes(path, at, len, class, None)?;
            let t = self.api.write_at(self.now, id, at, &bytes).map_err(err)?;
            self.done(t);
            at += len;
        }
        let t = self.api.sync(self.now, id, false).map_err(err)?;
        self.done(t);
        let t = self.api.close(self.now, id).map_err(err)?;
        self.done(t);
        Ok(())
    }

    fn apply(&mut self, kind: &OpKind) -> Result<(), Fail> {
        match kind {
            OpKind::Open { fd, path, flags } => self.open(*fd, path, *flags)?,
            OpKind::Close { fd } => {
                let open = self
                    .fds
                    .remove(fd)
                    .ok_or_else(|| format!("fd {fd} is not open"))?;
                if let Some(id) = open.id {
                    let t = self.api.close(self.now, id).map_err(err)?;
                    self.done(t);
                }
            }
            OpKind::Read { fd, len_bytes } => {
                let at = self.fd(*fd)?.position;
                let n = self.read(*fd, at, *len_bytes)?;
                self.fd(*fd)?.position = at + n;
            }
            OpKind::Pread {
                fd,
                offset_bytes,
                len_bytes,
            } => {
                self.read(*fd, *offset_bytes, *len_bytes)?;
            }
            OpKind::Write {
                fd,
                len_bytes,
                data,
            } => {
                let id = self.file(*fd)?;
                let (append, position) = {
                    let o = self.fd(*fd)?;
                    (o.append, o.position)
                };
                let at = if append {
                    let (size, t) = self.api.size(self.now, id).map_err(err)?;
                    self.done(t);
                    size
                } else {
                    position
                };
                self.write(*fd, at, *len_bytes, data)?;
                self.fd(*fd)?.position = at + len_bytes;
            }
            OpKind::Pwrite {
                fd,
                offset_bytes,
                len_bytes,
                data,
            } => self.write(*fd, *offset_bytes, *len_bytes, data)?,
            OpKind::Seek { fd, offset_bytes } => self.fd(*fd)?.position = *offset_bytes,
            OpKind::Fsync { fd } | OpKind::Fdatasync { fd } => {
                let open = self.fd(*fd)?;
                let t = match open.id {
                    Some(id) => {
                        let data_only = matches!(kind, OpKind::Fdatasync { .. });
                        self.api.sync(self.now, id, data_only)
                    }
                    None => {
                        let path = open.path.clone();
                        self.api.sync_dir(self.now, &path)
                    }
                };
                let t = t.map_err(err)?;
                self.done(t);
            }
            OpKind::Ftruncate { fd, len_bytes } => {
                let id = self.file(*fd)?;
                let t = self.api.truncate(self.now, id, *len_bytes).map_err(err)?;
                self.done(t);
            }
            OpKind::Truncate { path, len_bytes } => {
                let (id, t) = match self.api.open(self.now, path, OpenFlags::default()) {
                    Err(FileError::NotFound(_)) => {
                        return Err(Fail::Skip("truncate of a missing file"))
                    }
                    other => other.map_err(err)?,
                };
                self.done(t);
                let t = self.api.truncate(self.now, id, *len_bytes).map_err(err)?;
                self.done(t);
                let t = self.api.close(self.now, id).map_err(err)?;
                self.done(t);
            }
            OpKind::Unlink { path } => match self.api.delete(self.now, path, false) {
                Ok(t) => self.done(t),
                Err(FileError::NotFound(_)) => return Err(Fail::Skip("unlink of a missing file")),
                Err(e) => return Err(Fail::Error(err(e))),
            },
            OpKind::Rename { from, to } => {
                match self.api.rename(self.now, from, to) {
                    Ok(t) => self.done(t),
                    Err(FileError::NotFound(_)) => {
                        return Err(Fail::Skip("rename of a missing file"))
                    }
                    Err(e) => return Err(Fail::Error(err(e))),
                }
                for open in self.fds.values_mut() {
                    if open.path == *from {
                        open.path.clone_from(to);
                    }
                }
            }
            OpKind::Link { .. } => return Err(Fail::Skip("hard link")),
            OpKind::Mkdir { path } => match self.api.mkdir(self.now, path) {
                Ok(t) => self.done(t),
                // The directory exists on the target already: nothing to do.
                Err(FileError::AlreadyExists(_)) => {}
                Err(e) => return Err(Fail::Error(err(e))),
            },
            OpKind::Rmdir { .. } => return Err(Fail::Skip("rmdir")),
            OpKind::Stat { path, .. } => {
                let (_, t) = self.api.exists(self.now, path).map_err(err)?;
                self.done(t);
            }
            OpKind::Fstat { fd, .. } => {
                let open = self.fd(*fd)?;
                let t = match open.id {
                    Some(id) => self.api.size(self.now, id).map(|(_, t)| t),
                    None => {
                        let path = open.path.clone();
                        self.api.exists(self.now, &path).map(|(_, t)| t)
                    }
                };
                let t = t.map_err(err)?;
                self.done(t);
            }
            OpKind::Sync => {
                let ids: Vec<FileId> = self.fds.values().filter_map(|o| o.id).collect();
                for id in ids {
                    let t = self.api.sync(self.now, id, false).map_err(err)?;
                    self.done(t);
                }
            }
        }
        Ok(())
    }

    fn open(
        &mut self,
        fd: u32,
        path: &str,
        flags: flashstack_workload::OpenFlags,
    ) -> Result<(), Fail> {
        if self.fds.contains_key(&fd) {
            return Err(Fail::Error(format!("fd {fd} is already open")));
        }
        if flags.directory {
            // The directories were made before the trace; one it removed is made again.
            let (exists, t) = self.api.exists(self.now, path).map_err(err)?;
            self.done(t);
            if !exists {
                self.make_parents(path)?;
                match self.api.mkdir(self.now, path) {
                    Ok(t) => self.done(t),
                    Err(FileError::AlreadyExists(_)) => {}
                    Err(e) => return Err(Fail::Error(err(e))),
                }
            }
            self.insert_fd(fd, None, path, false);
            return Ok(());
        }
        let mut api_flags = OpenFlags {
            create: flags.create,
            exclusive: flags.exclusive,
            read_only: flags.access == Access::Rdonly,
            delete_on_close: false,
        };
        let mut truncate = flags.truncate && flags.writable();
        let opened = match self.api.open(self.now, path, api_flags) {
            Err(FileError::NotFound(_)) => {
                // A file the trace removed, then opened without creating it: made again
                // (empty), as the files that existed before the trace were.
                self.make_parents(path)?;
                api_flags.create = true;
                api_flags.read_only &= flags.create;
                self.api.open(self.now, path, api_flags)
            }
            Err(FileError::AlreadyExists(_)) if flags.exclusive => {
                // On the phone the file was new; here a file of that name is there (two
                // files the capture named alike, or one it never saw removed). It is
                // opened and emptied, as the new file would be.
                self.note("exclusive create of an existing file")?;
                api_flags.exclusive = false;
                truncate = flags.writable();
                self.api.open(self.now, path, api_flags)
            }
            other => other,
        };
        let (id, t) = opened.map_err(err)?;
        self.done(t);
        if truncate {
            let t = self.api.truncate(self.now, id, 0).map_err(err)?;
            self.done(t);
        }
        self.insert_fd(fd, Some(id), path, flags.append);
        Ok(())
    }

    fn insert_fd(&mut self, fd: u32, id: Option<FileId>, path: &str, append: bool) {
        self.fds.insert(
            fd,
            OpenFd {
                id,
                path: path.to_owned(),
                position: 0,
                append,
            },
        );
    }

    /// `mkdir -p` of the directories above `path`.
    fn make_parents(&mut self, path: &str) -> Result<(), String> {
        let Some((parent, _)) = path.rsplit_once('/') else {
            return Ok(());
        };
        let mut at = String::new();
        for part in parent.split('/').filter(|p| !p.is_empty()) {
            at.push('/');
            at.push_str(part);
            match self.api.mkdir(self.now, &at) {
                Ok(t) => self.done(t),
                Err(FileError::AlreadyExists(_)) => {}
                Err(e) => return Err(err(e)),
            }
        }
        Ok(())
    }

    fn read(&mut self, fd: u32, offset: u64, len: u64) -> Result<u64, Fail> {
        let id = self.file(fd)?;
        let mut buf = vec![0u8; (len as usize).min(READ_CHUNK_BYTES)];
        let mut done = 0u64;
        while done < len {
            let want = ((len - done) as usize).min(buf.len());
            let (n, t) = self
                .api
                .read_at(self.now, id, offset + done, &mut buf[..want])
                .map_err(err)?;
            self.done(t);
            done += n as u64;
            if n < want {
                break;
            }
        }
        self.report.read_bytes += done;
        Ok(done)
    }

    fn write(&mut self, fd: u32, offset: u64, len: u64, data: &Data) -> Result<(), Fail> {
        let id = self.file(fd)?;
        let path = self.fd(fd)?.path.clone();
        let bytes = match data {
            Data::Bytes(b) => b.clone(),
            Data::Class {
                class,
                change_ratio,
            } => self.class_bytes(&path, offset, len, *class, *change_ratio)?,
            Data::Unknown => {
                let class = class_for_path(&path).unwrap_or(ContentClass::Zeros);
                self.class_bytes(&path, offset, len, class, None)?
            }
        };
        let t = self
            .api
            .write_at(self.now, id, offset, &bytes)
            .map_err(err)?;
        self.done(t);
        self.report.write_bytes += len;
        Ok(())
    }

    /// Class bytes for `len` bytes at `offset` of `path`: page `p` of the file at version
    /// `v` is the content model's page for an address derived from the path and `p`.
    fn class_bytes(
        &mut self,
        path: &str,
        offset: u64,
        len: u64,
        class: ContentClass,
        change_ratio: Option<f64>,
    ) -> Result<Vec<u8>, String> {
        let model = match change_ratio {
            Some(r) => self
                .content
                .clone()
                .with_change_ratio(r)
                .map_err(|e| e.to_string())?,
            None => self.content.clone(),
        };
        let file_key = path_hash(path) << 24;
        let page_bytes = PAGE_SIZE as u64;
        let mut out = Vec::with_capacity(len as usize);
        let mut page = [0u8; PAGE_SIZE];
        let mut at = offset;
        while at < offset + len {
            let p = at / page_bytes;
            let version = self.next_version(path, p);
            model.fill_class(class, file_key + p, version, &mut page);
            let from = (at % page_bytes) as usize;
            let take = ((offset + len - at) as usize).min(PAGE_SIZE - from);
            out.extend_from_slice(&page[from..from + take]);
            at += take as u64;
        }
        Ok(out)
    }

    fn next_version(&mut self, path: &str, page: u64) -> u32 {
        let key = (path.to_owned(), page);
        if !self.versions.contains_key(&key) && self.versions.len() >= VERSIONS_MAX {
            // A bounded table: forgetting versions only makes later rewrites look new.
            self.versions.clear();
        }
        let v = self.versions.entry(key).or_insert(0);
        let current = *v;
        *v = v.saturating_add(1);
        current
    }
}

/// FNV-1a of a path (a stable per-file address in the content model).
fn path_hash(path: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in path.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h & 0xff_ffff_ffff
}
