//! What the importers share: collecting raw calls, putting them in time order (a stable
//! sort, so each thread keeps its order), and turning them into a trace the fd state
//! machine accepts, counting everything left out.

use std::collections::BTreeMap;
use std::fmt;

use flashstack_content::ContentClass;
use serde::Serialize;

use crate::analyze::FileType;
use crate::op::{Access, Data, FileOp, FileTrace, OpKind, OpenFlags};
use crate::resolve::Resolver;

/// Most distinct names kept in an import report's tallies; the rest count under `…`.
const TALLY_NAMES_MAX: usize = 256;

/// What an import did with its input.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ImportReport {
    /// Lines read.
    pub lines: u64,
    /// Operations in the trace written.
    pub ops: u64,
    /// Calls that failed (returned an error), by system call: not in the trace.
    pub failed_calls: BTreeMap<String, u64>,
    /// System calls the trace format has no operation for, by name: not in the trace.
    pub ignored_calls: BTreeMap<String, u64>,
    /// Calls on fds the trace never saw opened (stdio, pipes, sockets): not in the trace.
    pub unknown_fd_calls: u64,
    /// Opens added for fds first used without an open (MobiGen only).
    pub stand_in_opens: u64,
    /// Closes added because an open returned an fd still open in the trace (another
    /// process's fd table, or a close the capture missed).
    pub implicit_closes: u64,
    /// Lines that are not calls (signals, exits, attach notes, blank lines).
    pub other_lines: u64,
    /// Calls dropped because the state machine refused them (e.g. a length past the limit).
    pub invalid_calls: u64,
    /// Read-only opens of a path the trace uses as a directory, marked `directory`
    /// (SQLite opens a database's directory to fsync it).
    pub directory_opens: u64,
}

impl ImportReport {
    pub(crate) fn tally(map: &mut BTreeMap<String, u64>, name: &str) {
        if map.len() >= TALLY_NAMES_MAX && !map.contains_key(name) {
            *map.entry("…".to_string()).or_default() += 1;
        } else {
            *map.entry(name.to_string()).or_default() += 1;
        }
    }
}

impl fmt::Display for ImportReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} lines -> {} operations; left out: {} failed calls, {} calls without a \
             trace operation, {} calls on fds never opened, {} non-call lines, {} invalid; \
             added: {} stand-in opens, {} implicit closes; {} directory opens",
            self.lines,
            self.ops,
            self.failed_calls.values().sum::<u64>(),
            self.ignored_calls.values().sum::<u64>(),
            self.unknown_fd_calls,
            self.other_lines,
            self.invalid_calls,
            self.stand_in_opens,
            self.implicit_closes,
            self.directory_opens
        )?;
        for (title, map) in [
            ("failed", &self.failed_calls),
            ("without an operation", &self.ignored_calls),
        ] {
            if !map.is_empty() {
                let list: Vec<String> = map.iter().map(|(k, v)| format!("{k} {v}")).collect();
                write!(f, "\n  {title}: {}", list.join(", "))?;
            }
        }
        Ok(())
    }
}

/// What to do with a call on an fd that was never opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UnknownFd {
    /// Leave it out (strace: stdio, pipes and sockets).
    Skip,
    /// Open a stand-in file `/unknown-fd/<fd>` first (MobiGen: fds opened before capture).
    StandIn,
}

/// Collects calls, then orders and validates them.
#[derive(Default)]
pub(crate) struct Builder {
    /// Calls, and for a `dup` (an open of the new fd) the fd it duplicates.
    calls: Vec<(FileOp, Option<u32>)>,
    pub report: ImportReport,
}

impl Builder {
    pub fn new() -> Self {
        Builder {
            calls: Vec::new(),
            report: ImportReport::default(),
        }
    }

    pub fn push(&mut self, time_ns: u64, tid: u32, kind: OpKind) {
        self.calls.push((FileOp { time_ns, tid, kind }, None));
    }

    /// `new` becomes another name for the file `old` names (if the trace knows it): the
    /// trace opens that file again as `new` (positions are not shared).
    pub fn push_dup(&mut self, time_ns: u64, tid: u32, old: u32, new: u32) {
        let kind = OpKind::Open {
            fd: new,
            path: String::new(),
            flags: OpenFlags {
                access: Access::Rdwr,
                ..OpenFlags::default()
            },
        };
        self.calls.push((FileOp { time_ns, tid, kind }, Some(old)));
    }

    /// The trace: calls in time order (ties and each thread keep input order), closes
    /// added before an fd is reopened, calls on unknown fds handled per `unknown`.
    pub fn finish(mut self, unknown: UnknownFd, stand_in_dir: &str) -> (FileTrace, ImportReport) {
        self.calls.sort_by_key(|(op, _)| op.time_ns);
        let mut resolver = Resolver::new();
        let mut ops = Vec::with_capacity(self.calls.len());
        for (mut op, dup_of) in self.calls {
            let (time_ns, tid) = (op.time_ns, op.tid);
            if let (Some(old), OpKind::Open { path, .. }) = (dup_of, &mut op.kind) {
                match resolver.path_of(old) {
                    Some(known) => *path = known.to_string(),
                    None => {
                        self.report.unknown_fd_calls += 1;
                        continue;
                    }
                }
            }
            let emit = |op: FileOp, resolver: &mut Resolver, ops: &mut Vec<FileOp>| {
                if resolver.apply(&op).is_ok() {
                    ops.push(op);
                    true
                } else {
                    false
                }
            };
            if let OpKind::Open { fd, .. } = op.kind {
                if resolver.is_open(fd) {
                    emit(
                        FileOp {
                            time_ns,
                            tid,
                            kind: OpKind::Close { fd },
                        },
                        &mut resolver,
                        &mut ops,
                    );
                    self.report.implicit_closes += 1;
                }
            } else if let Some(fd) = fd_of(&op.kind) {
                if !resolver.is_open(fd) {
                    if unknown == UnknownFd::Skip || matches!(op.kind, OpKind::Close { .. }) {
                        self.report.unknown_fd_calls += 1;
                        continue;
                    }
                    let open = FileOp {
                        time_ns,
                        tid,
                        kind: OpKind::Open {
                            fd,
                            path: format!("{stand_in_dir}/fd{fd}"),
                            flags: OpenFlags {
                                access: Access::Rdwr,
                                ..OpenFlags::default()
                            },
                        },
                    };
                    emit(open, &mut resolver, &mut ops);
                    self.report.stand_in_opens += 1;
                }
            }
            // Writes of unknown bytes get the class their file's name suggests.
            if let OpKind::Write { fd, data, .. } | OpKind::Pwrite { fd, data, .. } = &mut op.kind {
                if *data == Data::Unknown {
                    if let Some(class) = resolver.path_of(*fd).and_then(class_for_path) {
                        *data = Data::Class {
                            class,
                            change_ratio: None,
                        };
                    }
                }
            }
            if !emit(op, &mut resolver, &mut ops) {
                self.report.invalid_calls += 1;
            }
        }
        self.report.directory_opens = crate::dirs::mark_directory_opens(&mut ops);
        self.report.ops = ops.len() as u64;
        (FileTrace { ops }, self.report)
    }
}

fn fd_of(kind: &OpKind) -> Option<u32> {
    match kind {
        OpKind::Close { fd }
        | OpKind::Read { fd, .. }
        | OpKind::Pread { fd, .. }
        | OpKind::Write { fd, .. }
        | OpKind::Pwrite { fd, .. }
        | OpKind::Seek { fd, .. }
        | OpKind::Fsync { fd }
        | OpKind::Fdatasync { fd }
        | OpKind::Ftruncate { fd, .. }
        | OpKind::Fstat { fd, .. } => Some(*fd),
        _ => None,
    }
}

/// The content class a file's name suggests, if any: SQLite files hold SQLite pages,
/// media files incompressible bytes.
pub fn class_for_path(path: &str) -> Option<ContentClass> {
    match FileType::of(path) {
        FileType::SqliteDb | FileType::SqliteJournal | FileType::SqliteWal => {
            Some(ContentClass::SqliteTable)
        }
        FileType::Media => Some(ContentClass::Media),
        FileType::Prefs => Some(ContentClass::Text),
        _ => None,
    }
}

/// The content class the first bytes of a write suggest, if they say enough.
pub fn class_for_prefix(prefix: &[u8]) -> Option<ContentClass> {
    if prefix.len() < 4 {
        return None;
    }
    let media = prefix.starts_with(&[0xff, 0xd8, 0xff])
        || prefix.starts_with(b"\x89PNG")
        || prefix.starts_with(b"GIF8")
        || prefix.starts_with(b"RIFF")
        || prefix.starts_with(b"OggS")
        || prefix.starts_with(b"ID3")
        || prefix.get(4..8) == Some(b"ftyp");
    if prefix.starts_with(b"SQLite format 3\0") {
        Some(ContentClass::SqliteTable)
    } else if media {
        Some(ContentClass::Media)
    } else if prefix.starts_with(b"\x7fELF") || prefix.starts_with(b"dex\n") {
        Some(ContentClass::Executable)
    } else if prefix.iter().all(|&b| b == 0) {
        Some(ContentClass::Zeros)
    } else if prefix
        .iter()
        .all(|&b| b.is_ascii_graphic() || b == b' ' || b == b'\n' || b == b'\t' || b == b'\r')
    {
        Some(ContentClass::Text)
    } else {
        None
    }
}

/// `O_RDWR|O_CREAT|…` (Linux names) as open flags; flags the trace does not model
/// (`O_LARGEFILE`, `O_CLOEXEC`, numbers) are ignored.
pub fn parse_linux_flags(text: &str) -> OpenFlags {
    let mut flags = OpenFlags::default();
    for word in text.split('|').map(str::trim) {
        match word {
            "O_RDONLY" => flags.access = Access::Rdonly,
            "O_WRONLY" => flags.access = Access::Wronly,
            "O_RDWR" => flags.access = Access::Rdwr,
            "O_CREAT" => flags.create = true,
            "O_EXCL" => flags.exclusive = true,
            "O_TRUNC" => flags.truncate = true,
            "O_APPEND" => flags.append = true,
            "O_DIRECTORY" => flags.directory = true,
            _ => {}
        }
    }
    flags
}
