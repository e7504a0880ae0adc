//! [`Recording`]: an [`InodeFs`] wrapper that writes everything the mounted programs did as
//! a file-level trace (`#flashstack-filetrace 1`, `docs/file-traces.md`), so a session on
//! the mount can be replayed on any other stack configuration.
//!
//! What the trace holds and why:
//! - Timestamps are the core's virtual clock when each request arrived ([`InodeFs::now_ns`];
//!   cores without a clock record 0 throughout), never wall time, so the same requests give
//!   the same trace.
//! - The mount sees inodes and handles, not processes' file descriptors: each FUSE open
//!   becomes an `open` with a trace fd of its own, a release becomes `close`, and reads and
//!   writes are recorded on the most recent open fd of their inode (exact unless two
//!   handles of one file are used at once, which only changes which fd a line names).
//!   Every request is recorded as thread 1: FUSE requests carry a pid, but the core's
//!   calls do not, and the trace's ordering is the mount's serial order anyway.
//! - Writes carry their captured bytes (`hex:`), so replay writes exactly those bytes and
//!   `workload analyze` measures update differences exactly.
//! - Paths are relative to the mount's root, written as absolute paths (`/dir/file`).
//! - Only requests the core completed successfully are recorded; a failed request changed
//!   nothing a replay must repeat.
//!
//! Memory is bounded: at most [`PATHS_MAX`] inode paths and [`OPEN_HANDLES_MAX`] open
//! handles are tracked; beyond them an inode is named `/.ino-N`, and the count of such
//! fallbacks is reported. A write error on the trace file stops the recording (the mount
//! goes on) and is reported by [`Recording::finish`].

use std::collections::BTreeMap;
use std::io::{self, Write};

use flashstack_workload::text::HEADER;
use flashstack_workload::{Access, Data, FileOp, OpKind, OpenFlags, INLINE_DATA_MAX_BYTES};

use crate::tree::{
    Attr, Fallocate, FsError, FsStats, Ino, InodeFs, Kind, NewAttr, OpenHow, SetAttr, XattrSet,
};

/// Most inode paths tracked.
pub const PATHS_MAX: usize = 1 << 20;
/// Most open handles tracked.
pub const OPEN_HANDLES_MAX: usize = 1 << 16;

/// The trace's thread for every request (see the module doc).
const TID: u32 = 1;

/// What a recording wrote, for the report at unmount.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecordStats {
    pub ops: u64,
    pub write_bytes: u64,
    /// Inodes named `/.ino-N` because a table was full or the path was unknown.
    pub unnamed: u64,
}

/// An [`InodeFs`] that records every successful request as a file-level trace.
pub struct Recording<T: InodeFs> {
    inner: T,
    out: Box<dyn Write + Send>,
    paths: BTreeMap<Ino, String>,
    /// FUSE handle → (inode, trace fd).
    handles: BTreeMap<u64, (Ino, u32)>,
    /// Inode → its most recent open trace fd.
    latest_fd: BTreeMap<Ino, u32>,
    next_fd: u32,
    last_ns: u64,
    stats: RecordStats,
    error: Option<io::Error>,
}

impl<T: InodeFs> Recording<T> {
    /// Wraps `inner`; the trace's header is written at once.
    pub fn new(inner: T, mut out: Box<dyn Write + Send>) -> io::Result<Self> {
        writeln!(out, "{HEADER}")?;
        let mut paths = BTreeMap::new();
        paths.insert(inner.root(), String::new());
        Ok(Recording {
            inner,
            out,
            paths,
            handles: BTreeMap::new(),
            latest_fd: BTreeMap::new(),
            next_fd: 3,
            last_ns: 0,
            stats: RecordStats::default(),
            error: None,
        })
    }

    pub fn inner(&self) -> &T {
        &self.inner
    }

    /// Flushes the trace; returns the core, the figures, and the first write error if any.
    pub fn finish(mut self) -> (T, RecordStats, io::Result<()>) {
        let flushed = match self.error.take() {
            Some(e) => Err(e),
            None => self.out.flush(),
        };
        (self.inner, self.stats, flushed)
    }

    fn emit(&mut self, time_ns: u64, kind: OpKind) {
        if self.error.is_some() {
            return;
        }
        // The core's clock only moves forward; the max keeps the trace valid regardless.
        self.last_ns = self.last_ns.max(time_ns);
        let op = FileOp {
            time_ns: self.last_ns,
            tid: TID,
            kind,
        };
        match writeln!(self.out, "{op}") {
            Ok(()) => self.stats.ops += 1,
            Err(e) => self.error = Some(e),
        }
    }

    fn path_of(&mut self, ino: Ino) -> String {
        match self.paths.get(&ino) {
            Some(p) if p.is_empty() => "/".to_string(),
            Some(p) => p.clone(),
            None => {
                self.stats.unnamed += 1;
                format!("/.ino-{ino}")
            }
        }
    }

    fn child_path(&mut self, parent: Ino, name: &[u8]) -> String {
        let base = match self.paths.get(&parent) {
            Some(p) => p.clone(),
            None => {
                self.stats.unnamed += 1;
                format!("/.ino-{parent}")
            }
        };
        format!("{base}/{}", String::from_utf8_lossy(name))
    }

    fn remember(&mut self, ino: Ino, path: String) {
        if self.paths.len() < PATHS_MAX || self.paths.contains_key(&ino) {
            self.paths.entry(ino).or_insert(path);
        }
    }

    /// The fd a read or write of `ino` is recorded on, opening one if the inode has none
    /// (a request on a handle opened before recording began).
    fn fd_for(&mut self, ino: Ino, time_ns: u64, write: bool) -> u32 {
        if let Some(&fd) = self.latest_fd.get(&ino) {
            return fd;
        }
        let fd = self.alloc_fd();
        let path = self.path_of(ino);
        let flags = OpenFlags {
            access: if write { Access::Rdwr } else { Access::Rdonly },
            ..OpenFlags::default()
        };
        self.emit(time_ns, OpKind::Open { fd, path, flags });
        self.latest_fd.insert(ino, fd);
        fd
    }

    fn alloc_fd(&mut self) -> u32 {
        let fd = self.next_fd;
        self.next_fd = self.next_fd.wrapping_add(1).max(3);
        fd
    }

    /// After a rename, every tracked path under the old name moves with it.
    fn rename_paths(&mut self, from: &str, to: &str) {
        let prefix = format!("{from}/");
        let moved: Vec<(Ino, String)> = self
            .paths
            .iter()
            .filter(|(_, p)| p.as_str() == from || p.starts_with(&prefix))
            .map(|(&ino, p)| (ino, format!("{to}{}", &p[from.len()..])))
            .collect();
        for (ino, path) in moved {
            self.paths.insert(ino, path);
        }
    }

    fn forget_path(&mut self, path: &str) {
        let gone: Vec<Ino> = self
            .paths
            .iter()
            .filter(|(_, p)| p.as_str() == path)
            .map(|(&ino, _)| ino)
            .collect();
        for ino in gone {
            self.paths.remove(&ino);
        }
    }
}

fn access_of(how: OpenHow) -> Access {
    match (how.read, how.write) {
        (_, false) => Access::Rdonly,
        (false, true) => Access::Wronly,
        (true, true) => Access::Rdwr,
    }
}

impl<T: InodeFs> InodeFs for Recording<T> {
    fn root(&self) -> Ino {
        self.inner.root()
    }

    fn now_ns(&self) -> u64 {
        self.inner.now_ns()
    }

    fn lookup(&mut self, parent: Ino, name: &[u8]) -> Result<Attr, FsError> {
        let attr = self.inner.lookup(parent, name)?;
        if !self.paths.contains_key(&attr.ino) {
            let path = self.child_path(parent, name);
            self.remember(attr.ino, path);
        }
        Ok(attr)
    }

    fn getattr(&mut self, ino: Ino) -> Result<Attr, FsError> {
        self.inner.getattr(ino)
    }

    fn set_size(&mut self, ino: Ino, size: u64) -> Result<Attr, FsError> {
        let t = self.inner.now_ns();
        let attr = self.inner.set_size(ino, size)?;
        let kind = match self.latest_fd.get(&ino) {
            Some(&fd) => OpKind::Ftruncate {
                fd,
                len_bytes: size,
            },
            None => OpKind::Truncate {
                path: self.path_of(ino),
                len_bytes: size,
            },
        };
        self.emit(t, kind);
        Ok(attr)
    }

    // Modes, owners and times are not part of the trace format: passed through.
    fn setattr(&mut self, ino: Ino, attr: &SetAttr) -> Result<Attr, FsError> {
        self.inner.setattr(ino, attr)
    }

    fn create(&mut self, parent: Ino, name: &[u8], new: NewAttr) -> Result<Attr, FsError> {
        let attr = self.inner.create(parent, name, new)?;
        let path = self.child_path(parent, name);
        self.paths.remove(&attr.ino);
        self.remember(attr.ino, path);
        // The `open` line is written when the mount reports the handle (`opened`).
        Ok(attr)
    }

    fn mkdir(&mut self, parent: Ino, name: &[u8], new: NewAttr) -> Result<Attr, FsError> {
        let t = self.inner.now_ns();
        let attr = self.inner.mkdir(parent, name, new)?;
        let path = self.child_path(parent, name);
        self.remember(attr.ino, path.clone());
        self.emit(t, OpKind::Mkdir { path });
        Ok(attr)
    }

    fn unlink(&mut self, parent: Ino, name: &[u8]) -> Result<(), FsError> {
        let t = self.inner.now_ns();
        self.inner.unlink(parent, name)?;
        let path = self.child_path(parent, name);
        self.forget_path(&path);
        self.emit(t, OpKind::Unlink { path });
        Ok(())
    }

    fn rmdir(&mut self, parent: Ino, name: &[u8]) -> Result<(), FsError> {
        let t = self.inner.now_ns();
        self.inner.rmdir(parent, name)?;
        let path = self.child_path(parent, name);
        self.forget_path(&path);
        self.emit(t, OpKind::Rmdir { path });
        Ok(())
    }

    fn rename(
        &mut self,
        parent: Ino,
        name: &[u8],
        new_parent: Ino,
        new_name: &[u8],
    ) -> Result<(), FsError> {
        let t = self.inner.now_ns();
        self.inner.rename(parent, name, new_parent, new_name)?;
        let (from, to) = (
            self.child_path(parent, name),
            self.child_path(new_parent, new_name),
        );
        self.forget_path(&to);
        self.rename_paths(&from, &to);
        self.emit(t, OpKind::Rename { from, to });
        Ok(())
    }

    fn link(&mut self, ino: Ino, new_parent: Ino, new_name: &[u8]) -> Result<Attr, FsError> {
        let t = self.inner.now_ns();
        let attr = self.inner.link(ino, new_parent, new_name)?;
        let from = self.path_of(ino);
        let to = self.child_path(new_parent, new_name);
        self.emit(t, OpKind::Link { from, to });
        Ok(attr)
    }

    fn read(&mut self, ino: Ino, offset: u64, out: &mut [u8]) -> Result<usize, FsError> {
        let t = self.inner.now_ns();
        let n = self.inner.read(ino, offset, out)?;
        let fd = self.fd_for(ino, t, false);
        self.emit(
            t,
            OpKind::Pread {
                fd,
                offset_bytes: offset,
                len_bytes: n as u64,
            },
        );
        Ok(n)
    }

    fn write(&mut self, ino: Ino, offset: u64, data: &[u8]) -> Result<usize, FsError> {
        let t = self.inner.now_ns();
        let n = self.inner.write(ino, offset, data)?;
        let fd = self.fd_for(ino, t, true);
        for (i, chunk) in data[..n].chunks(INLINE_DATA_MAX_BYTES).enumerate() {
            let offset_bytes = offset + (i * INLINE_DATA_MAX_BYTES) as u64;
            self.stats.write_bytes += chunk.len() as u64;
            self.emit(
                t,
                OpKind::Pwrite {
                    fd,
                    offset_bytes,
                    len_bytes: chunk.len() as u64,
                    data: Data::Bytes(chunk.to_vec()),
                },
            );
        }
        Ok(n)
    }

    fn fsync(&mut self, ino: Ino, data_only: bool) -> Result<(), FsError> {
        let t = self.inner.now_ns();
        self.inner.fsync(ino, data_only)?;
        let is_dir = self.inner.getattr(ino).is_ok_and(|a| a.kind == Kind::Dir);
        if is_dir {
            // A directory fsync: the trace format has fds for files only; a `sync` line
            // is the closest replayable equivalent (it makes at least as much durable).
            self.emit(t, OpKind::Sync);
            return Ok(());
        }
        let fd = self.fd_for(ino, t, false);
        let kind = if data_only {
            OpKind::Fdatasync { fd }
        } else {
            OpKind::Fsync { fd }
        };
        self.emit(t, kind);
        Ok(())
    }

    fn readdir(&mut self, dir: Ino) -> Result<Vec<(Ino, Kind, Vec<u8>)>, FsError> {
        self.inner.readdir(dir)
    }

    fn statfs(&mut self) -> Result<FsStats, FsError> {
        self.inner.statfs()
    }

    // Symlinks and special files are not part of the trace format
    // (`docs/file-traces.md`): passed through.
    fn symlink(
        &mut self,
        parent: Ino,
        name: &[u8],
        target: &[u8],
        owner: NewAttr,
    ) -> Result<Attr, FsError> {
        self.inner.symlink(parent, name, target, owner)
    }

    fn mknod(
        &mut self,
        parent: Ino,
        name: &[u8],
        kind: Kind,
        new: NewAttr,
        rdev: u32,
    ) -> Result<Attr, FsError> {
        self.inner.mknod(parent, name, kind, new, rdev)
    }

    fn flush(&mut self, ino: Ino) -> Result<(), FsError> {
        self.inner.flush(ino)
    }

    // Not a request: nothing to record.
    fn tick(&mut self) -> Result<(), FsError> {
        self.inner.tick()
    }

    fn readlink(&mut self, ino: Ino) -> Result<Vec<u8>, FsError> {
        self.inner.readlink(ino)
    }

    // Nor are extended attributes.
    fn setxattr(
        &mut self,
        ino: Ino,
        name: &[u8],
        value: &[u8],
        how: XattrSet,
    ) -> Result<(), FsError> {
        self.inner.setxattr(ino, name, value, how)
    }

    fn getxattr(&mut self, ino: Ino, name: &[u8]) -> Result<Vec<u8>, FsError> {
        self.inner.getxattr(ino, name)
    }

    fn listxattr(&mut self, ino: Ino) -> Result<Vec<Vec<u8>>, FsError> {
        self.inner.listxattr(ino)
    }

    fn removexattr(&mut self, ino: Ino, name: &[u8]) -> Result<(), FsError> {
        self.inner.removexattr(ino, name)
    }

    fn sync(&mut self) -> Result<(), FsError> {
        let t = self.inner.now_ns();
        self.inner.sync()?;
        self.emit(t, OpKind::Sync);
        Ok(())
    }

    fn fallocate(&mut self, ino: Ino, how: Fallocate) -> Result<(), FsError> {
        // Not part of the trace format: the space reservation or hole punch is applied but
        // not recorded (`docs/file-traces.md` lists the operations a trace can carry).
        self.inner.fallocate(ino, how)
    }

    fn opened(&mut self, ino: Ino, fh: u64, how: OpenHow) {
        self.inner.opened(ino, fh, how);
        if self.handles.len() >= OPEN_HANDLES_MAX {
            return;
        }
        let t = self.inner.now_ns();
        let fd = self.alloc_fd();
        let path = self.path_of(ino);
        let flags = OpenFlags {
            access: access_of(how),
            create: how.create,
            exclusive: how.exclusive,
            truncate: false,
            append: how.append,
            directory: false,
        };
        self.emit(t, OpKind::Open { fd, path, flags });
        self.handles.insert(fh, (ino, fd));
        self.latest_fd.insert(ino, fd);
    }

    fn released(&mut self, fh: u64) {
        self.inner.released(fh);
        let Some((ino, fd)) = self.handles.remove(&fh) else {
            return;
        };
        let t = self.inner.now_ns();
        self.emit(t, OpKind::Close { fd });
        if self.latest_fd.get(&ino) == Some(&fd) {
            // Fall back to another handle still open on the inode, if any.
            match self.handles.values().rev().find(|(i, _)| *i == ino) {
                Some(&(_, other)) => self.latest_fd.insert(ino, other),
                None => self.latest_fd.remove(&ino),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use flashstack_workload::{analyze, text};

    use super::*;
    use crate::MemTree;

    /// A writer the test can read back.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    const RW: OpenHow = OpenHow {
        read: true,
        write: true,
        create: false,
        exclusive: false,
        append: false,
    };

    #[test]
    fn a_session_records_as_a_valid_trace_with_paths_that_follow_renames() {
        let sink = Shared::default();
        let mut fs = Recording::new(MemTree::new(), Box::new(sink.clone())).unwrap();
        let root = fs.root();
        let dir = fs.mkdir(root, b"db", NewAttr::root(0o755)).unwrap().ino;
        let a = fs.create(dir, b"app.db", NewAttr::root(0o644)).unwrap().ino;
        fs.opened(a, 7, OpenHow { create: true, ..RW });
        fs.write(a, 0, &[1u8; 5000]).unwrap();
        fs.write(a, 4096, &[2u8; 100]).unwrap();
        fs.fsync(a, true).unwrap();
        fs.released(7);
        fs.rename(root, b"db", root, b"data").unwrap();
        fs.opened(a, 8, RW);
        let mut buf = [0u8; 10];
        assert_eq!(fs.read(a, 0, &mut buf).unwrap(), 10);
        fs.set_size(a, 4096).unwrap();
        fs.released(8);
        assert!(
            fs.unlink(root, b"missing").is_err(),
            "failures are not recorded"
        );
        fs.unlink(dir, b"app.db").unwrap();
        fs.sync().unwrap();
        let (_, stats, flushed) = fs.finish();
        flushed.unwrap();

        let body = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        let trace = text::parse_str(&body, "rec").unwrap();
        let lines: Vec<String> = trace.ops.iter().map(|op| op.to_string()).collect();
        let ops: Vec<&str> = trace.ops.iter().map(|op| op.kind.name()).collect();
        assert_eq!(
            ops,
            [
                "mkdir",
                "open",
                "pwrite",
                "pwrite",
                "fdatasync",
                "close",
                "rename",
                "open",
                "pread",
                "ftruncate",
                "close",
                "unlink",
                "sync"
            ],
            "{lines:#?}"
        );
        assert!(
            lines[1].ends_with("open 3 /db/app.db rdwr|creat"),
            "{}",
            lines[1]
        );
        assert!(lines[6].ends_with("rename /db /data"), "{}", lines[6]);
        assert!(
            lines[7].ends_with("open 4 /data/app.db rdwr"),
            "{}",
            lines[7]
        );
        assert!(lines[11].ends_with("unlink /data/app.db"), "{}", lines[11]);
        assert_eq!(stats.ops, 13);
        assert_eq!(stats.write_bytes, 5100);
        assert_eq!(stats.unnamed, 0);
        let summary = analyze(&trace).unwrap();
        assert_eq!(summary.write_bytes, 5100);
        assert_eq!(
            summary.update_bytes, 100,
            "the second write overwrote 100 bytes"
        );
        assert_eq!(
            summary.update_difference,
            Some(1.0),
            "every overwritten byte changed"
        );
    }
}
