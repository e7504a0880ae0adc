//! [`MemTree`]: an in-memory [`InodeFs`] with no device under it. It is the reference
//! model the FUSE adapter is tested against, and the "no file system cost" baseline; it
//! keeps everything, so `fsync` and `sync` have nothing to do.

use std::collections::BTreeMap;

use crate::tree::{Attr, FsError, FsStats, Ino, InodeFs, Kind};

const ROOT: Ino = 1;
/// Longest name, as in F2FS and ext4.
const NAME_BYTES_MAX: usize = 255;
/// Inodes the tree holds at most (a bounded table).
const INODES_MAX: u64 = 1 << 20;

enum Node {
    File {
        data: Vec<u8>,
        nlink: u32,
        perm: u16,
    },
    Dir {
        entries: BTreeMap<Vec<u8>, Ino>,
        perm: u16,
    },
}

/// Directories and files in memory.
pub struct MemTree {
    nodes: BTreeMap<Ino, Node>,
    next_ino: Ino,
    /// Simulated time: one tick per mutating call, for mtimes.
    clock_ns: u64,
    mtime_ns: BTreeMap<Ino, u64>,
}

impl Default for MemTree {
    fn default() -> Self {
        Self::new()
    }
}

impl MemTree {
    pub fn new() -> Self {
        let mut nodes = BTreeMap::new();
        nodes.insert(
            ROOT,
            Node::Dir {
                entries: BTreeMap::new(),
                perm: 0o755,
            },
        );
        MemTree {
            nodes,
            next_ino: ROOT + 1,
            clock_ns: 0,
            mtime_ns: BTreeMap::new(),
        }
    }

    fn touch(&mut self, ino: Ino) {
        self.clock_ns += 1_000;
        self.mtime_ns.insert(ino, self.clock_ns);
    }

    fn attr_of(&self, ino: Ino) -> Result<Attr, FsError> {
        let node = self.nodes.get(&ino).ok_or(FsError::NotFound)?;
        let mtime_ns = self.mtime_ns.get(&ino).copied().unwrap_or(0);
        Ok(match node {
            Node::File { data, nlink, perm } => Attr {
                ino,
                kind: Kind::File,
                size: data.len() as u64,
                nlink: *nlink,
                perm: *perm,
                mtime_ns,
            },
            Node::Dir { entries, perm } => Attr {
                ino,
                kind: Kind::Dir,
                size: 4096,
                nlink: 2 + entries
                    .values()
                    .filter(|i| matches!(self.nodes.get(i), Some(Node::Dir { .. })))
                    .count() as u32,
                perm: *perm,
                mtime_ns,
            },
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

    fn new_entry(&mut self, parent: Ino, name: &[u8], node: Node) -> Result<Attr, FsError> {
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
        self.touch(ino);
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
                self.mtime_ns.remove(&ino);
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

    fn set_perm(&mut self, ino: Ino, new: u16) -> Result<Attr, FsError> {
        match self.nodes.get_mut(&ino) {
            Some(Node::File { perm, .. }) | Some(Node::Dir { perm, .. }) => *perm = new & 0o7777,
            None => return Err(FsError::NotFound),
        }
        self.attr_of(ino)
    }

    fn create(&mut self, parent: Ino, name: &[u8], perm: u16) -> Result<Attr, FsError> {
        let node = Node::File {
            data: Vec::new(),
            nlink: 1,
            perm,
        };
        self.new_entry(parent, name, node)
    }

    fn mkdir(&mut self, parent: Ino, name: &[u8], perm: u16) -> Result<Attr, FsError> {
        let node = Node::Dir {
            entries: BTreeMap::new(),
            perm,
        };
        self.new_entry(parent, name, node)
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
