//! Which paths of a trace are directories. Capture formats do not always say: SQLite opens
//! its database's directory `O_RDONLY` (no `O_DIRECTORY`) to fsync it after creating or
//! deleting a journal, and MobiGen and strace record that as a plain open. A path is taken
//! as a directory when the trace names a path below it, makes it (`mkdir`) or removes it
//! as a directory (`rmdir`).

use std::collections::BTreeSet;

use crate::op::{FileOp, OpKind};

/// The paths `ops` name, each with whether the operation itself says it is a directory.
fn named_paths(kind: &OpKind) -> impl Iterator<Item = (&str, bool)> {
    let (first, second, is_dir): (Option<&str>, Option<&str>, bool) = match kind {
        OpKind::Open { path, flags, .. } => (Some(path), None, flags.directory),
        OpKind::Truncate { path, .. } | OpKind::Unlink { path } | OpKind::Stat { path, .. } => {
            (Some(path), None, false)
        }
        OpKind::Mkdir { path } | OpKind::Rmdir { path } => (Some(path), None, true),
        OpKind::Rename { from, to } | OpKind::Link { from, to } => (Some(from), Some(to), false),
        _ => (None, None, false),
    };
    first.into_iter().chain(second).map(move |p| (p, is_dir))
}

/// Every directory of `ops` (see the module documentation), as the trace spells it
/// (without a trailing `/`).
pub fn directory_paths<'a>(ops: impl IntoIterator<Item = &'a FileOp>) -> BTreeSet<String> {
    let mut dirs = BTreeSet::new();
    for op in ops {
        for (path, is_dir) in named_paths(&op.kind) {
            if is_dir {
                dirs.insert(path.trim_end_matches('/').to_string());
            }
            // Every proper parent, with the trace's own spelling.
            let mut rest = path.trim_end_matches('/');
            while let Some((parent, _)) = rest.rsplit_once('/') {
                if parent.is_empty() || !dirs.insert(parent.to_string()) {
                    break;
                }
                rest = parent;
            }
        }
    }
    dirs
}

/// Marks the opens of `ops` that open a directory (per [`directory_paths`]) with the
/// `directory` flag; returns how many it marked. Only read-only opens are marked: a
/// writable open of a directory fails on Linux, so such a line names a file.
pub fn mark_directory_opens(ops: &mut [FileOp]) -> u64 {
    let dirs = directory_paths(ops.iter());
    let mut marked = 0;
    for op in ops {
        if let OpKind::Open { path, flags, .. } = &mut op.kind {
            if !flags.directory && !flags.writable() && dirs.contains(path.trim_end_matches('/')) {
                flags.directory = true;
                marked += 1;
            }
        }
    }
    marked
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::{Access, OpenFlags};

    fn op(kind: OpKind) -> FileOp {
        FileOp {
            time_ns: 0,
            tid: 1,
            kind,
        }
    }

    #[test]
    fn parents_of_named_paths_are_directories() {
        let mut ops = vec![
            op(OpKind::Open {
                fd: 3,
                path: "/data/app/databases".into(),
                flags: OpenFlags::default(),
            }),
            op(OpKind::Unlink {
                path: "/data/app/databases/a.db-journal".into(),
            }),
            op(OpKind::Open {
                fd: 4,
                path: "/data/app/files/log".into(),
                flags: OpenFlags::default(),
            }),
            op(OpKind::Open {
                fd: 5,
                path: "/data/app/databases".into(),
                flags: OpenFlags {
                    access: Access::Rdwr,
                    ..OpenFlags::default()
                },
            }),
        ];
        let dirs = directory_paths(ops.iter());
        let dirs: Vec<&str> = dirs.iter().map(String::as_str).collect();
        assert_eq!(
            dirs,
            [
                "/data",
                "/data/app",
                "/data/app/databases",
                "/data/app/files"
            ]
        );
        assert_eq!(mark_directory_opens(&mut ops), 1);
        let flags = |i: usize| match &ops[i].kind {
            OpKind::Open { flags, .. } => flags.directory,
            _ => unreachable!(),
        };
        assert!(flags(0) && !flags(2) && !flags(3));
    }
}
