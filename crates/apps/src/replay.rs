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
    /// Operations replayed.
    pub ops: u64,
    /// Operations the file API cannot express and that were skipped (`rmdir`).
    pub skipped: u64,
    /// Bytes written and read.
    pub write_bytes: u64,
    pub read_bytes: u64,
    /// Virtual time at the end.
    pub end_ns: Nanos,
}

struct OpenFd {
    id: FileId,
    path: String,
    position: u64,
    append: bool,
}

struct Replayer<'a> {
    api: &'a mut dyn FileApi,
    fds: BTreeMap<u32, OpenFd>,
    content: ContentModel,
    versions: BTreeMap<(String, u64), u32>,
    now: Nanos,
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
/// `start_ns`. Each operation is issued at its trace time (relative to the start) or when
/// the previous one completed, whichever is later, so idle gaps stay and a slower file
/// system delays what follows. Captured bytes are written as they are; a content-class
/// write gets that class's bytes from `flashstack_content`, deterministically from `seed`,
/// the file and the page (its version counts the page's rewrites); `unknown` data gets the
/// class the path suggests, else zeros. A file opened without `creat` that does not exist
/// (it existed before the trace began) is created. Errors name the operation.
pub fn replay_at(
    trace: &FileTrace,
    api: &mut dyn FileApi,
    seed: u64,
    start_ns: Nanos,
) -> Result<ReplayReport, AppError> {
    let mut r = Replayer {
        api,
        fds: BTreeMap::new(),
        content: ContentModel::new(seed, ContentMix::only(ContentClass::Zeros)),
        versions: BTreeMap::new(),
        now: start_ns,
        report: ReplayReport::default(),
    };
    for (index, op) in trace.ops.iter().enumerate() {
        r.now = r.now.max(start_ns.saturating_add(op.time_ns));
        r.apply(&op.kind).map_err(|message| AppError::Replay {
            index: index + 1,
            op: op.kind.name(),
            message,
        })?;
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

    fn done(&mut self, t: Nanos) {
        self.now = self.now.max(t);
    }

    fn apply(&mut self, kind: &OpKind) -> Result<(), String> {
        match kind {
            OpKind::Open { fd, path, flags } => self.open(*fd, path, *flags)?,
            OpKind::Close { fd } => {
                let open = self
                    .fds
                    .remove(fd)
                    .ok_or_else(|| format!("fd {fd} is not open"))?;
                let t = self.api.close(self.now, open.id).map_err(err)?;
                self.done(t);
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
                let (id, append, position) = {
                    let o = self.fd(*fd)?;
                    (o.id, o.append, o.position)
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
                let id = self.fd(*fd)?.id;
                let data_only = matches!(kind, OpKind::Fdatasync { .. });
                let t = self.api.sync(self.now, id, data_only).map_err(err)?;
                self.done(t);
            }
            OpKind::Ftruncate { fd, len_bytes } => {
                let id = self.fd(*fd)?.id;
                let t = self.api.truncate(self.now, id, *len_bytes).map_err(err)?;
                self.done(t);
            }
            OpKind::Truncate { path, len_bytes } => {
                let (id, t) = self
                    .api
                    .open(self.now, path, OpenFlags::default())
                    .map_err(err)?;
                self.done(t);
                let t = self.api.truncate(self.now, id, *len_bytes).map_err(err)?;
                self.done(t);
                let t = self.api.close(self.now, id).map_err(err)?;
                self.done(t);
            }
            OpKind::Unlink { path } => {
                let t = self.api.delete(self.now, path, false).map_err(err)?;
                self.done(t);
            }
            OpKind::Rename { from, to } => {
                let t = self.api.rename(self.now, from, to).map_err(err)?;
                self.done(t);
                for open in self.fds.values_mut() {
                    if open.path == *from {
                        open.path.clone_from(to);
                    }
                }
            }
            OpKind::Link { .. } => {
                return Err("hard links are not part of the file API".to_owned());
            }
            OpKind::Mkdir { path } => match self.api.mkdir(self.now, path) {
                Ok(t) => self.done(t),
                // The directory exists on the target already: nothing to do.
                Err(FileError::AlreadyExists(_)) => {}
                Err(e) => return Err(err(e)),
            },
            OpKind::Rmdir { .. } => self.report.skipped += 1,
            OpKind::Stat { path } => {
                let (_, t) = self.api.exists(self.now, path).map_err(err)?;
                self.done(t);
            }
            OpKind::Fstat { fd } => {
                let id = self.fd(*fd)?.id;
                let (_, t) = self.api.size(self.now, id).map_err(err)?;
                self.done(t);
            }
            OpKind::Sync => {
                let ids: Vec<FileId> = self.fds.values().map(|o| o.id).collect();
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
    ) -> Result<(), String> {
        if self.fds.contains_key(&fd) {
            return Err(format!("fd {fd} is already open"));
        }
        let mut api_flags = OpenFlags {
            create: flags.create,
            exclusive: flags.exclusive,
            read_only: flags.access == Access::Rdonly,
            delete_on_close: false,
        };
        let opened = match self.api.open(self.now, path, api_flags) {
            Err(FileError::NotFound(_)) => {
                // The file, or its directory, existed before the trace began; here the
                // directories are made and the file starts empty.
                self.make_parents(path)?;
                api_flags.create = true;
                api_flags.read_only &= flags.create;
                self.api.open(self.now, path, api_flags)
            }
            other => other,
        };
        let (id, t) = opened.map_err(err)?;
        self.done(t);
        if flags.truncate && flags.writable() {
            let t = self.api.truncate(self.now, id, 0).map_err(err)?;
            self.done(t);
        }
        self.fds.insert(
            fd,
            OpenFd {
                id,
                path: path.to_owned(),
                position: 0,
                append: flags.append,
            },
        );
        Ok(())
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

    fn read(&mut self, fd: u32, offset: u64, len: u64) -> Result<u64, String> {
        let id = self.fd(fd)?.id;
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

    fn write(&mut self, fd: u32, offset: u64, len: u64, data: &Data) -> Result<(), String> {
        let (id, path) = {
            let o = self.fd(fd)?;
            (o.id, o.path.clone())
        };
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
