//! [`MemTree`]: an in-memory [`InodeFs`] with no device under it. It is the reference
//! model the FUSE adapter is tested against, and the "no file system cost" baseline; it
//! keeps everything, so `fsync` and `sync` have nothing to do.

use std::collections::BTreeMap;

use flashstack_f2fs::SIMULATION_EPOCH_SECS;

use crate::tree::{
    Attr, FsError, FsStats, Ino, InodeFs, Kind, NewAttr, SetAttr, TimeSet, Timestamp,
};

const ROOT: Ino = 1;
/// Longest name, as in F2FS and ext4.
const NAME_BYTES_MAX: usize = 255;
/// Inodes the tree holds at most (a bounded table).
const INODES_MAX: u64 = 1 << 20;

enum Node {
    File { data: Vec<u8>, nlink: u32 },
    Dir { entries: BTreeMap<Vec<u8>, Ino> },
}

/// Permission bits, owner and times of an inode.
#[derive(Clone, Copy)]
struct Meta {
    perm: u16,
    uid: u32,
    gid: u32,
    atime: Timestamp,
    mtime: Timestamp,
    ctime: Timestamp,
}

/// Directories and files in memory.
pub struct MemTree {
    nodes: BTreeMap<Ino, Node>,
    meta: BTreeMap<Ino, Meta>,
    next_ino: Ino,
    /// Simulated time: one tick per mutating call, on the simulation epoch.
    clock_ns: u64,
}

impl Default for MemTree {
    fn default() -> Self {
        Self::new()
    }
}

impl MemTree {
    pub fn new() -> Self {
        let mut tree = MemTree {
            nodes: BTreeMap::new(),
            meta: BTreeMap::new(),
            next_ino: ROOT + 1,
            clock_ns: 0,
        };
        tree.nodes.insert(
            ROOT,
            Node::Dir {
                entries: BTreeMap::new(),
            },
        );
        tree.meta.insert(ROOT, tree.new_meta(NewAttr::root(0o755)));
        tree
    }

    fn now(&self) -> Timestamp {
        Timestamp::from_secs_nanos(SIMULATION_EPOCH_SECS, self.clock_ns)
    }

    fn new_meta(&self, new: NewAttr) -> Meta {
        let now = self.now();
        Meta {
            perm: new.perm & 0o7777,
            uid: new.uid,
            gid: new.gid,
            atime: now,
            mtime: now,
            ctime: now,
        }
    }

    /// A change to `ino`'s data or entries: mtime and ctime move on.
    fn touch(&mut self, ino: Ino) {
        self.clock_ns += 1_000;
        let now = self.now();
        if let Some(m) = self.meta.get_mut(&ino) {
            m.mtime = now;
            m.ctime = now;
        }
    }

    fn attr_of(&self, ino: Ino) -> Result<Attr, FsError> {
        let node = self.nodes.get(&ino).ok_or(FsError::NotFound)?;
        let m = self.meta.get(&ino).ok_or(FsError::NotFound)?;
        let (kind, size, nlink) = match node {
            Node::File { data, nlink } => (Kind::File, data.len() as u64, *nlink),
            Node::Dir { entries } => {
                let subdirs = entries
                    .values()
                    .filter(|i| matches!(self.nodes.get(i), Some(Node::Dir { .. })))
                    .count() as u32;
                (Kind::Dir, 4096, 2 + subdirs)
            }
        };
        Ok(Attr {
            ino,
            kind,
            size,
            blocks: size.div_ceil(512),
            nlink,
            perm: m.perm,
            uid: m.uid,
            gid: m.gid,
            rdev: 0,
            atime: m.atime,
            mtime: m.mtime,
            ctime: m.ctime,
        })
    }

    fn entries(&self, dir: Ino) -> Result<&BTreeMap<Vec<u8>, Ino>, FsError> {
        match self.nodes.get(&dir) {
            Some(Node::Dir { entries, .. }) => Ok(entries),
            Some(Node::File { .. }) => Err(FsError::NotDir),
            None => Err(FsError::NotFound),
        }
    }

    fn entries_mut(&mut self, dir: Ino) -> Result<&mut BTreeMap<Vec<u8>, Ino>, FsError> {
        match self.nodes.get_mut(&dir) {
            Some(Node::Dir { entries, .. }) => Ok(entries),
            Some(Node::File { .. }) => Err(FsError::NotDir),
            None => Err(FsError::NotFound),
        }
    }

    fn new_entry(
        &mut self,
        parent: Ino,
        name: &[u8],
        node: Node,
        new: NewAttr,
    ) -> Result<Attr, FsError> {
        check_name(name)?;
        if self.entries(parent)?.contains_key(name) {
            return Err(FsError::Exists);
        }
        if self.next_ino - ROOT >= INODES_MAX {
            return Err(FsError::NoSpace);
        }
        let ino = self.next_ino;
        self.next_ino += 1;
        self.nodes.insert(ino, node);
        self.entries_mut(parent)?.insert(name.to_vec(), ino);
        self.touch(parent);
        let meta = self.new_meta(new);
        self.meta.insert(ino, meta);
        self.attr_of(ino)
    }

    fn file_mut(&mut self, ino: Ino) -> Result<&mut Vec<u8>, FsError> {
        match self.nodes.get_mut(&ino) {
            Some(Node::File { data, .. }) => Ok(data),
            Some(Node::Dir { .. }) => Err(FsError::IsDir),
            None => Err(FsError::NotFound),
        }
    }

    /// Drops one link of `ino`; the inode goes when none is left.
    fn drop_link(&mut self, ino: Ino) {
        if let Some(Node::File { nlink, .. }) = self.nodes.get_mut(&ino) {
            *nlink -= 1;
            if *nlink == 0 {
                self.nodes.remove(&ino);
                self.meta.remove(&ino);
            }
        }
    }

    fn is_empty_dir(&self, ino: Ino) -> bool {
        matches!(self.nodes.get(&ino), Some(Node::Dir { entries, .. }) if entries.is_empty())
    }
}

fn check_name(name: &[u8]) -> Result<(), FsError> {
    if name.len() > NAME_BYTES_MAX {
        return Err(FsError::NameTooLong);
    }
    if name.is_empty() || name == b"." || name == b".." || name.contains(&b'/') {
        return Err(FsError::Invalid(format!(
            "name {:?}",
            String::from_utf8_lossy(name)
        )));
    }
    Ok(())
}

impl InodeFs for MemTree {
    fn root(&self) -> Ino {
        ROOT
    }

    fn lookup(&mut self, parent: Ino, name: &[u8]) -> Result<Attr, FsError> {
        let ino = *self.entries(parent)?.get(name).ok_or(FsError::NotFound)?;
        self.attr_of(ino)
    }

    fn getattr(&mut self, ino: Ino) -> Result<Attr, FsError> {
        self.attr_of(ino)
    }

    fn set_size(&mut self, ino: Ino, size: u64) -> Result<Attr, FsError> {
        self.file_mut(ino)?.resize(size as usize, 0);
        self.touch(ino);
        self.attr_of(ino)
    }

    fn setattr(&mut self, ino: Ino, attr: &SetAttr) -> Result<Attr, FsError> {
        self.clock_ns += 1_000;
        let now = self.now();
        let m = self.meta.get_mut(&ino).ok_or(FsError::NotFound)?;
        let at = |t: TimeSet| match t {
            TimeSet::Now => now,
            TimeSet::At(t) => t,
        };
        m.perm = attr.perm.map_or(m.perm, |p| p & 0o7777);
        m.uid = attr.uid.unwrap_or(m.uid);
        m.gid = attr.gid.unwrap_or(m.gid);
        m.atime = attr.atime.map_or(m.atime, at);
        m.mtime = attr.mtime.map_or(m.mtime, at);
        m.ctime = now;
        self.attr_of(ino)
    }

    fn create(&mut self, parent: Ino, name: &[u8], new: NewAttr) -> Result<Attr, FsError> {
        let node = Node::File {
            data: Vec::new(),
            nlink: 1,
        };
        self.new_entry(parent, name, node, new)
    }

    fn mkdir(&mut self, parent: Ino, name: &[u8], new: NewAttr) -> Result<Attr, FsError> {
        let node = Node::Dir {
            entries: BTreeMap::new(),
        };
        self.new_entry(parent, name, node, new)
    }

    fn unlink(&mut self, parent: Ino, name: &[u8]) -> Result<(), FsError> {
        let ino = *self.entries(parent)?.get(name).ok_or(FsError::NotFound)?;
        if matches!(self.nodes.get(&ino), Some(Node::Dir { .. })) {
            return Err(FsError::IsDir);
        }
        self.entries_mut(parent)?.remove(name);
        self.drop_link(ino);
        self.touch(parent);
        Ok(())
    }

    fn rmdir(&mut self, parent: Ino, name: &[u8]) -> Result<(), FsError> {
        let ino = *self.entries(parent)?.get(name).ok_or(FsError::NotFound)?;
        self.entries(ino)?;
        if !self.is_empty_dir(ino) {
            return Err(FsError::NotEmpty);
        }
        self.entries_mut(parent)?.remove(name);
        self.nodes.remove(&ino);
        self.meta.remove(&ino);
        self.touch(parent);
        Ok(())
    }

    fn rename(
        &mut self,
        parent: Ino,
        name: &[u8],
        new_parent: Ino,
        new_name: &[u8],
    ) -> Result<(), FsError> {
        check_name(new_name)?;
        let ino = *self.entries(parent)?.get(name).ok_or(FsError::NotFound)?;
        let moving_dir = matches!(self.nodes.get(&ino), Some(Node::Dir { .. }));
        if let Some(&target) = self.entries(new_parent)?.get(new_name) {
            if target == ino {
                return Ok(());
            }
            let target_dir = matches!(self.nodes.get(&target), Some(Node::Dir { .. }));
            match (moving_dir, target_dir) {
                (false, true) => return Err(FsError::IsDir),
                (true, false) => return Err(FsError::NotDir),
                (true, true) if !self.is_empty_dir(target) => return Err(FsError::NotEmpty),
                (true, true) => {
                    self.nodes.remove(&target);
                    self.meta.remove(&target);
                }
                (false, false) => self.drop_link(target),
            }
        }
        self.entries_mut(parent)?.remove(name);
        self.entries_mut(new_parent)?.insert(new_name.to_vec(), ino);
        self.touch(parent);
        self.touch(new_parent);
        Ok(())
    }

    fn link(&mut self, ino: Ino, new_parent: Ino, new_name: &[u8]) -> Result<Attr, FsError> {
        check_name(new_name)?;
        if matches!(self.nodes.get(&ino), Some(Node::Dir { .. })) {
            return Err(FsError::Invalid("hard link to a directory".into()));
        }
        if self.entries(new_parent)?.contains_key(new_name) {
            return Err(FsError::Exists);
        }
        match self.nodes.get_mut(&ino) {
            Some(Node::File { nlink, .. }) => *nlink += 1,
            _ => return Err(FsError::NotFound),
        }
        self.entries_mut(new_parent)?.insert(new_name.to_vec(), ino);
        self.touch(new_parent);
        self.attr_of(ino)
    }

    fn read(&mut self, ino: Ino, offset: u64, out: &mut [u8]) -> Result<usize, FsError> {
        let data = self.file_mut(ino)?;
        let start = (offset as usize).min(data.len());
        let n = out.len().min(data.len() - start);
        out[..n].copy_from_slice(&data[start..start + n]);
        Ok(n)
    }

    fn write(&mut self, ino: Ino, offset: u64, bytes: &[u8]) -> Result<usize, FsError> {
        let data = self.file_mut(ino)?;
        let end = offset as usize + bytes.len();
        if data.len() < end {
            data.resize(end, 0);
        }
        data[offset as usize..end].copy_from_slice(bytes);
        self.touch(ino);
        Ok(bytes.len())
    }

    fn fsync(&mut self, ino: Ino, _data_only: bool) -> Result<(), FsError> {
        self.attr_of(ino).map(|_| ())
    }

    fn readdir(&mut self, dir: Ino) -> Result<Vec<(Ino, Kind, Vec<u8>)>, FsError> {
        let entries = self.entries(dir)?;
        Ok(entries
            .iter()
            .map(|(name, &ino)| {
                let kind = match self.nodes.get(&ino) {
                    Some(Node::Dir { .. }) => Kind::Dir,
                    _ => Kind::File,
                };
                (ino, kind, name.clone())
            })
            .collect())
    }

    fn statfs(&mut self) -> Result<FsStats, FsError> {
        let used: u64 = self
            .nodes
            .values()
            .map(|n| match n {
                Node::File { data, .. } => (data.len() as u64).div_ceil(4096),
                Node::Dir { .. } => 1,
            })
            .sum();
        let blocks = 1 << 20;
        Ok(FsStats {
            blocks,
            blocks_free: blocks.saturating_sub(used),
            files: INODES_MAX,
            files_free: INODES_MAX - self.nodes.len() as u64,
        })
    }

    fn sync(&mut self) -> Result<(), FsError> {
        Ok(())
    }
}
