//! The fd state machine: which path each open fd names and where its position is, and what
//! the trace has taught about each file's size. The parser runs every line through it, so
//! a write on a closed fd is an error at its line; the analysis uses the resolved effects.

use std::collections::BTreeMap;

use crate::error::FieldError;
use crate::op::{Data, FileOp, OpKind, OP_LEN_MAX_BYTES};

/// Most fds open at once (a process's usual `ulimit -n` is far lower).
pub const OPEN_FDS_MAX: usize = 1 << 16;

/// Most distinct paths the state machine tracks at once.
pub const FILES_MAX: usize = 1 << 22;

#[derive(Clone, Debug)]
struct OpenFd {
    path: String,
    position_bytes: u64,
    append: bool,
}

/// What the trace has shown of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileMeta {
    /// The file's size as far as the trace shows: exact for a file created or truncated in
    /// the trace, a lower bound (the furthest byte touched) for one that existed before.
    pub size_bytes: u64,
    /// Whether the size is exact (the trace created or truncated the file).
    pub size_known: bool,
}

/// An operation with its fd resolved to a path and its position to a byte offset.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect<'a> {
    /// `created` if the open made a new file, `truncated` if it emptied an existing one.
    Open {
        path: String,
        created: bool,
        truncated: bool,
    },
    Read {
        path: String,
        offset_bytes: u64,
        len_bytes: u64,
    },
    /// `size_before_bytes` / `size_known` describe the file just before the write.
    Write {
        path: String,
        offset_bytes: u64,
        len_bytes: u64,
        data: &'a Data,
        size_before_bytes: u64,
        size_known: bool,
    },
    /// `path` is `None` for `sync` (every file).
    Sync {
        path: Option<String>,
        data_only: bool,
    },
    Truncate {
        path: String,
        len_bytes: u64,
    },
    Unlink {
        path: String,
    },
    Rename {
        from: String,
        to: String,
    },
    Link {
        from: String,
        to: String,
    },
    /// Everything else (close, seek, stat, fstat, mkdir, rmdir): no effect on file data.
    Other,
}

/// The fd table and file sizes of one trace (one fd namespace: a trace is one process, or
/// processes whose fds the importer has kept apart).
#[derive(Clone, Debug, Default)]
pub struct Resolver {
    fds: BTreeMap<u32, OpenFd>,
    files: BTreeMap<String, FileMeta>,
}

impl Resolver {
    pub fn new() -> Self {
        Resolver::default()
    }

    /// Whether `fd` is open.
    pub fn is_open(&self, fd: u32) -> bool {
        self.fds.contains_key(&fd)
    }

    /// The path `fd` names, if open.
    pub fn path_of(&self, fd: u32) -> Option<&str> {
        self.fds.get(&fd).map(|open| open.path.as_str())
    }

    /// The fd's position, if open.
    pub fn position_of(&self, fd: u32) -> Option<u64> {
        self.fds.get(&fd).map(|open| open.position_bytes)
    }

    /// What the trace has shown of `path`'s size.
    pub fn file(&self, path: &str) -> Option<FileMeta> {
        self.files.get(path).copied()
    }

    /// The fds open now, in order.
    pub fn open_fds(&self) -> impl Iterator<Item = (u32, &str)> {
        self.fds.iter().map(|(&fd, open)| (fd, open.path.as_str()))
    }

    fn fd(&self, fd: u32) -> Result<&OpenFd, FieldError> {
        self.fds
            .get(&fd)
            .ok_or_else(|| FieldError::new("fd", format!("{fd} is not open")))
    }

    fn track(&mut self, path: &str) -> Result<&mut FileMeta, FieldError> {
        if !self.files.contains_key(path) {
            if self.files.len() >= FILES_MAX {
                return Err(FieldError::new(
                    "path",
                    format!("more than {FILES_MAX} distinct files"),
                ));
            }
            self.files.insert(
                path.to_string(),
                FileMeta {
                    size_bytes: 0,
                    size_known: false,
                },
            );
        }
        Ok(self.files.get_mut(path).expect("inserted above"))
    }

    /// Applies one operation, or says which field makes it impossible (a closed fd, an fd
    /// opened twice, a length or offset past the limits, captured bytes of the wrong count).
    pub fn apply<'a>(&mut self, op: &'a FileOp) -> Result<Effect<'a>, FieldError> {
        Ok(match &op.kind {
            OpKind::Open { fd, path, flags } => {
                if self.fds.contains_key(fd) {
                    return Err(FieldError::new(
                        "fd",
                        format!("{fd} is already open (close it first)"),
                    ));
                }
                if self.fds.len() >= OPEN_FDS_MAX {
                    return Err(FieldError::new(
                        "fd",
                        format!("more than {OPEN_FDS_MAX} fds open at once"),
                    ));
                }
                let existed = self.files.contains_key(path.as_str());
                let meta = self.track(path)?;
                // A file first seen without O_CREAT existed before the trace began (size
                // unknown); with O_CREAT we cannot tell, and take it as new.
                let created = flags.create && !existed;
                let truncated = flags.truncate && flags.writable();
                if created || truncated {
                    meta.size_bytes = 0;
                    meta.size_known = true;
                }
                self.fds.insert(
                    *fd,
                    OpenFd {
                        path: path.clone(),
                        position_bytes: 0,
                        append: flags.append,
                    },
                );
                Effect::Open {
                    path: path.clone(),
                    created,
                    truncated: truncated && existed,
                }
            }
            OpKind::Close { fd } => {
                self.fd(*fd)?;
                self.fds.remove(fd);
                Effect::Other
            }
            OpKind::Read { fd, len_bytes } => {
                let offset = self.fd(*fd)?.position_bytes;
                self.read(*fd, offset, *len_bytes, true)?
            }
            OpKind::Pread {
                fd,
                offset_bytes,
                len_bytes,
            } => self.read(*fd, *offset_bytes, *len_bytes, false)?,
            OpKind::Write {
                fd,
                len_bytes,
                data,
            } => {
                let open = self.fd(*fd)?;
                let offset = if open.append {
                    self.files.get(&open.path).map_or(0, |m| m.size_bytes)
                } else {
                    open.position_bytes
                };
                self.write(*fd, offset, *len_bytes, data, true)?
            }
            OpKind::Pwrite {
                fd,
                offset_bytes,
                len_bytes,
                data,
            } => self.write(*fd, *offset_bytes, *len_bytes, data, false)?,
            OpKind::Seek { fd, offset_bytes } => {
                self.fd(*fd)?;
                if let Some(open) = self.fds.get_mut(fd) {
                    open.position_bytes = *offset_bytes;
                }
                Effect::Other
            }
            OpKind::Fsync { fd } | OpKind::Fdatasync { fd } => Effect::Sync {
                path: Some(self.fd(*fd)?.path.clone()),
                data_only: matches!(op.kind, OpKind::Fdatasync { .. }),
            },
            OpKind::Fstat { fd, .. } => {
                self.fd(*fd)?;
                Effect::Other
            }
            OpKind::Ftruncate { fd, len_bytes } => {
                let path = self.fd(*fd)?.path.clone();
                self.truncate(path, *len_bytes)?
            }
            OpKind::Truncate { path, len_bytes } => self.truncate(path.clone(), *len_bytes)?,
            OpKind::Unlink { path } => {
                self.files.remove(path.as_str());
                Effect::Unlink { path: path.clone() }
            }
            OpKind::Rename { from, to } => {
                match self.files.remove(from.as_str()) {
                    Some(meta) => {
                        self.files.insert(to.clone(), meta);
                    }
                    None => {
                        self.files.remove(to.as_str());
                    }
                }
                // Open fds keep naming the file under its new name.
                for open in self.fds.values_mut() {
                    if open.path == *from {
                        open.path.clone_from(to);
                    }
                }
                Effect::Rename {
                    from: from.clone(),
                    to: to.clone(),
                }
            }
            OpKind::Link { from, to } => {
                if let Some(meta) = self.files.get(from.as_str()).copied() {
                    *self.track(to)? = meta;
                }
                Effect::Link {
                    from: from.clone(),
                    to: to.clone(),
                }
            }
            OpKind::Mkdir { .. } | OpKind::Rmdir { .. } | OpKind::Stat { .. } => Effect::Other,
            OpKind::Sync => Effect::Sync {
                path: None,
                data_only: false,
            },
        })
    }

    fn read<'a>(
        &mut self,
        fd: u32,
        offset: u64,
        len: u64,
        advance: bool,
    ) -> Result<Effect<'a>, FieldError> {
        check_len(len)?;
        let end = end_of(offset, len)?;
        let open = self.fds.get_mut(&fd).ok_or_else(|| not_open(fd))?;
        if advance {
            open.position_bytes = end;
        }
        let path = open.path.clone();
        // A read shows that the file reaches at least this far.
        let meta = self.track(&path)?;
        if !meta.size_known {
            meta.size_bytes = meta.size_bytes.max(end);
        }
        Ok(Effect::Read {
            path,
            offset_bytes: offset,
            len_bytes: len,
        })
    }

    fn write<'a>(
        &mut self,
        fd: u32,
        offset: u64,
        len: u64,
        data: &'a Data,
        advance: bool,
    ) -> Result<Effect<'a>, FieldError> {
        check_len(len)?;
        check_data(data, len)?;
        let end = end_of(offset, len)?;
        let open = self.fds.get_mut(&fd).ok_or_else(|| not_open(fd))?;
        if advance {
            open.position_bytes = end;
        }
        let path = open.path.clone();
        let meta = self.track(&path)?;
        let (size_before_bytes, size_known) = (meta.size_bytes, meta.size_known);
        meta.size_bytes = meta.size_bytes.max(end);
        Ok(Effect::Write {
            path,
            offset_bytes: offset,
            len_bytes: len,
            data,
            size_before_bytes,
            size_known,
        })
    }

    fn truncate<'a>(&mut self, path: String, len: u64) -> Result<Effect<'a>, FieldError> {
        let meta = self.track(&path)?;
        meta.size_bytes = len;
        meta.size_known = true;
        Ok(Effect::Truncate {
            path,
            len_bytes: len,
        })
    }
}

fn not_open(fd: u32) -> FieldError {
    FieldError::new("fd", format!("{fd} is not open"))
}

fn check_len(len: u64) -> Result<(), FieldError> {
    if len > OP_LEN_MAX_BYTES {
        return Err(FieldError::new(
            "length",
            format!("{len} is larger than the limit of {OP_LEN_MAX_BYTES} bytes"),
        ));
    }
    Ok(())
}

fn end_of(offset: u64, len: u64) -> Result<u64, FieldError> {
    offset
        .checked_add(len)
        .ok_or_else(|| FieldError::new("offset", format!("{offset} + {len} overflows 64 bits")))
}

fn check_data(data: &Data, len: u64) -> Result<(), FieldError> {
    match data {
        Data::Bytes(bytes) if bytes.len() as u64 != len => Err(FieldError::new(
            "data",
            format!("carries {} bytes but the length is {len}", bytes.len()),
        )),
        Data::Class {
            change_ratio: Some(ratio),
            ..
        } if !(0.0..=1.0).contains(ratio) => Err(FieldError::new(
            "data",
            format!("change ratio {ratio} is outside [0, 1]"),
        )),
        _ => Ok(()),
    }
}
