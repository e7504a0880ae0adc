//! The in-memory form of a file-level trace: one [`FileOp`] per line.

use std::fmt;

use flashstack_content::ContentClass;
use serde::{Deserialize, Serialize};

use crate::error::quoted;

/// The largest write whose bytes a trace may carry inline (`hex:`), and the largest length
/// of any read or write: bounds the memory one line can ask for.
pub const OP_LEN_MAX_BYTES: u64 = 1 << 30;

/// The largest number of captured bytes one write may carry inline (4 MiB = an 8 MiB line).
pub const INLINE_DATA_MAX_BYTES: usize = 4 << 20;

/// One file operation at a virtual time, issued by one thread.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FileOp {
    /// Virtual time in nanoseconds since the trace began; never decreases along a trace.
    pub time_ns: u64,
    /// The issuing thread. Operations of one thread keep their order.
    pub tid: u32,
    pub kind: OpKind,
}

/// What an operation does. `fd`s name files opened earlier in the trace; paths are
/// absolute or relative as the source gave them (the trace does not resolve `..`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum OpKind {
    /// Opens (or creates, with `flags.create`) `path` as `fd`, at position 0.
    Open {
        fd: u32,
        path: String,
        flags: OpenFlags,
    },
    Close {
        fd: u32,
    },
    /// Reads at the fd's position and advances it.
    Read {
        fd: u32,
        len_bytes: u64,
    },
    Pread {
        fd: u32,
        offset_bytes: u64,
        len_bytes: u64,
    },
    /// Writes at the fd's position (the end of file if opened with `append`) and advances it.
    Write {
        fd: u32,
        len_bytes: u64,
        data: Data,
    },
    Pwrite {
        fd: u32,
        offset_bytes: u64,
        len_bytes: u64,
        data: Data,
    },
    /// Sets the fd's position (importers resolve `SEEK_CUR`/`SEEK_END` to the result).
    Seek {
        fd: u32,
        offset_bytes: u64,
    },
    Fsync {
        fd: u32,
    },
    Fdatasync {
        fd: u32,
    },
    Ftruncate {
        fd: u32,
        len_bytes: u64,
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
    Mkdir {
        path: String,
    },
    Rmdir {
        path: String,
    },
    /// A successful stat; `size_bytes` is the regular file's size it returned, when the
    /// capture shows it (strace prints `st_size`; MobiGen and recordings do not).
    Stat {
        path: String,
        size_bytes: Option<u64>,
    },
    Fstat {
        fd: u32,
        size_bytes: Option<u64>,
    },
    /// Flushes every file (the `sync` system call).
    Sync,
}

impl OpKind {
    /// The operation's keyword in the text format.
    pub fn name(&self) -> &'static str {
        match self {
            OpKind::Open { .. } => "open",
            OpKind::Close { .. } => "close",
            OpKind::Read { .. } => "read",
            OpKind::Pread { .. } => "pread",
            OpKind::Write { .. } => "write",
            OpKind::Pwrite { .. } => "pwrite",
            OpKind::Seek { .. } => "seek",
            OpKind::Fsync { .. } => "fsync",
            OpKind::Fdatasync { .. } => "fdatasync",
            OpKind::Ftruncate { .. } => "ftruncate",
            OpKind::Truncate { .. } => "truncate",
            OpKind::Unlink { .. } => "unlink",
            OpKind::Rename { .. } => "rename",
            OpKind::Link { .. } => "link",
            OpKind::Mkdir { .. } => "mkdir",
            OpKind::Rmdir { .. } => "rmdir",
            OpKind::Stat { .. } => "stat",
            OpKind::Fstat { .. } => "fstat",
            OpKind::Sync => "sync",
        }
    }
}

/// How a file is opened. Written as `rdonly`, `wronly` or `rdwr`, then any of
/// `creat`, `excl`, `trunc`, `append`, `directory`, joined by `|` in that order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenFlags {
    pub access: Access,
    pub create: bool,
    pub exclusive: bool,
    pub truncate: bool,
    pub append: bool,
    pub directory: bool,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    #[default]
    Rdonly,
    Wronly,
    Rdwr,
}

impl OpenFlags {
    /// Read-write, creating the file if missing: what SQLite opens its files with.
    pub const RDWR_CREATE: OpenFlags = OpenFlags {
        access: Access::Rdwr,
        create: true,
        exclusive: false,
        truncate: false,
        append: false,
        directory: false,
    };

    /// Parses the `|`-joined form; `None` names the first unknown word.
    pub fn parse(text: &str) -> Result<OpenFlags, String> {
        let mut words = text.split('|');
        let access = match words.next().unwrap_or("") {
            "rdonly" => Access::Rdonly,
            "wronly" => Access::Wronly,
            "rdwr" => Access::Rdwr,
            other => {
                return Err(format!(
                    "{} is not an access mode (rdonly, wronly or rdwr first)",
                    quoted(other)
                ))
            }
        };
        let mut flags = OpenFlags {
            access,
            ..OpenFlags::default()
        };
        let mut last = 0;
        for word in words {
            let (slot, rank) = match word {
                "creat" => (&mut flags.create, 1),
                "excl" => (&mut flags.exclusive, 2),
                "trunc" => (&mut flags.truncate, 3),
                "append" => (&mut flags.append, 4),
                "directory" => (&mut flags.directory, 5),
                other => {
                    return Err(format!(
                        "{} is not a flag (creat, excl, trunc, append, directory)",
                        quoted(other)
                    ))
                }
            };
            if rank <= last {
                return Err(format!(
                    "{} out of order or repeated (order: creat|excl|trunc|append|directory)",
                    quoted(word)
                ));
            }
            last = rank;
            *slot = true;
        }
        Ok(flags)
    }

    pub fn writable(self) -> bool {
        self.access != Access::Rdonly
    }
}

impl fmt::Display for OpenFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.access {
            Access::Rdonly => "rdonly",
            Access::Wronly => "wronly",
            Access::Rdwr => "rdwr",
        })?;
        for (set, name) in [
            (self.create, "creat"),
            (self.exclusive, "excl"),
            (self.truncate, "trunc"),
            (self.append, "append"),
            (self.directory, "directory"),
        ] {
            if set {
                write!(f, "|{name}")?;
            }
        }
        Ok(())
    }
}

/// What a write puts in the file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Data {
    /// Nothing is known about the bytes (`unknown`).
    Unknown,
    /// Bytes of a content class, drawn by the content model at replay (`sqlite`,
    /// `media:0.05`). `change_ratio`, in [0, 1], is the share of bytes that differ from what
    /// the write overwrites (meaningful for updates only).
    Class {
        class: ContentClass,
        change_ratio: Option<f64>,
    },
    /// The captured bytes themselves (`hex:…`); their count equals the write's length.
    Bytes(Vec<u8>),
}

impl fmt::Display for Data {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Data::Unknown => f.write_str("unknown"),
            Data::Class {
                class,
                change_ratio: None,
            } => write!(f, "{class}"),
            Data::Class {
                class,
                change_ratio: Some(ratio),
            } => write!(f, "{class}:{ratio}"),
            Data::Bytes(bytes) => {
                f.write_str("hex:")?;
                for byte in bytes {
                    write!(f, "{byte:02x}")?;
                }
                Ok(())
            }
        }
    }
}

/// A path as one field: bytes that would split the line or the field (space, tab, control
/// characters, `%`, DEL) become `%XX`; an empty path is `%`-free and impossible.
pub struct EncodedPath<'a>(pub &'a str);

impl fmt::Display for EncodedPath<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in self.0.chars() {
            if c <= ' ' || c == '%' || c == '\u{7f}' {
                write!(f, "%{:02X}", c as u32)?;
            } else {
                write!(f, "{c}")?;
            }
        }
        Ok(())
    }
}

/// A stat's optional result field: ` size=N`.
fn write_size(f: &mut fmt::Formatter<'_>, size_bytes: Option<u64>) -> fmt::Result {
    match size_bytes {
        Some(n) => write!(f, " size={n}"),
        None => Ok(()),
    }
}

impl fmt::Display for FileOp {
    /// The op as one line of the text format, without the newline.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.time_ns, self.tid, self.kind.name())?;
        match &self.kind {
            OpKind::Open { fd, path, flags } => write!(f, " {fd} {} {flags}", EncodedPath(path)),
            OpKind::Close { fd } | OpKind::Fsync { fd } | OpKind::Fdatasync { fd } => {
                write!(f, " {fd}")
            }
            OpKind::Fstat { fd, size_bytes } => {
                write!(f, " {fd}")?;
                write_size(f, *size_bytes)
            }
            OpKind::Read { fd, len_bytes } => write!(f, " {fd} {len_bytes}"),
            OpKind::Pread {
                fd,
                offset_bytes,
                len_bytes,
            } => write!(f, " {fd} {offset_bytes} {len_bytes}"),
            OpKind::Write {
                fd,
                len_bytes,
                data,
            } => write!(f, " {fd} {len_bytes} {data}"),
            OpKind::Pwrite {
                fd,
                offset_bytes,
                len_bytes,
                data,
            } => write!(f, " {fd} {offset_bytes} {len_bytes} {data}"),
            OpKind::Seek { fd, offset_bytes } => write!(f, " {fd} {offset_bytes}"),
            OpKind::Ftruncate { fd, len_bytes } => write!(f, " {fd} {len_bytes}"),
            OpKind::Truncate { path, len_bytes } => {
                write!(f, " {} {len_bytes}", EncodedPath(path))
            }
            OpKind::Unlink { path } | OpKind::Mkdir { path } | OpKind::Rmdir { path } => {
                write!(f, " {}", EncodedPath(path))
            }
            OpKind::Stat { path, size_bytes } => {
                write!(f, " {}", EncodedPath(path))?;
                write_size(f, *size_bytes)
            }
            OpKind::Rename { from, to } | OpKind::Link { from, to } => {
                write!(f, " {} {}", EncodedPath(from), EncodedPath(to))
            }
            OpKind::Sync => Ok(()),
        }
    }
}

/// A whole trace: the operations in time order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FileTrace {
    pub ops: Vec<FileOp>,
}
