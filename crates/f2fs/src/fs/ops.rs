//! The file API: path resolution and the operations on inodes and names.

use flashstack_block::BlockDevice;

use super::attr::{self, NewInode, Times, Timestamp};
use super::data::*;
use super::dir::Area;
use super::hash::has_extension;
use super::{corrupt, F2fs, FsError, WriteHint};
use crate::codec::{le32_at, put_le32_at, Block};
use crate::consts::*;
use crate::node::{ExtraAttr, Inode, NodeFooter};

/// What an inode is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum FileKind {
    File,
    Dir,
    Symlink,
    CharDevice,
    BlockDevice,
    Fifo,
    Socket,
    Other,
}

/// `stat` of an inode.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Stat {
    pub ino: u32,
    pub kind: FileKind,
    /// Type and permission bits (`i_mode`).
    pub mode: u16,
    pub uid: u32,
    pub gid: u32,
    pub links: u32,
    pub size_bytes: u64,
    /// Blocks in use, counting the inode block (`i_blocks`).
    pub blocks: u64,
    pub atime: Timestamp,
    pub mtime: Timestamp,
    pub ctime: Timestamp,
    /// A device file's number (the kernel's new `dev_t` encoding); 0 otherwise.
    pub rdev: u32,
    pub inline_data: bool,
    pub inline_dentry: bool,
}

/// One directory entry.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct DirEntryInfo {
    pub name: String,
    pub ino: u32,
    pub kind: FileKind,
}

fn kind_of_type(file_type: u8) -> FileKind {
    match file_type {
        FT_REG_FILE => FileKind::File,
        FT_DIR => FileKind::Dir,
        FT_SYMLINK => FileKind::Symlink,
        FT_CHRDEV => FileKind::CharDevice,
        FT_BLKDEV => FileKind::BlockDevice,
        FT_FIFO => FileKind::Fifo,
        FT_SOCK => FileKind::Socket,
        _ => FileKind::Other,
    }
}

/// What an inode's mode says it is.
fn kind_of_mode(mode: u16) -> FileKind {
    kind_of_type(attr::file_type_of(mode))
}

/// Splits a path into its parent's components and the last name.
fn split(path: &str) -> Result<(Vec<&str>, &str), FsError> {
    let mut parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let last = parts
        .pop()
        .ok_or_else(|| FsError::Invalid(format!("'{path}' names the root")))?;
    check_name(last)?;
    Ok((parts, last))
}

fn check_name(name: &str) -> Result<(), FsError> {
    if name.len() > NAME_LEN {
        return Err(FsError::NameTooLong(name.chars().take(32).collect()));
    }
    if name == "." || name == ".." || name.contains('\0') {
        return Err(FsError::Invalid(format!("'{name}' is not a usable name")));
    }
    Ok(())
}

impl<D: BlockDevice> F2fs<D> {
    /// Resolves a path to an inode number.
    pub fn lookup(&mut self, path: &str) -> Result<u32, FsError> {
        let mut ino = ROOT_INO;
        for part in path.split('/').filter(|p| !p.is_empty()) {
            if part.len() > NAME_LEN {
                return Err(FsError::NameTooLong(part.chars().take(32).collect()));
            }
            if !self.is_dir_inode(ino)? {
                return Err(FsError::NotDir(path.to_string()));
            }
            let place = self.find_entry(ino, part.as_bytes())?;
            ino = place
                .ok_or_else(|| FsError::NotFound(path.to_string()))?
                .found()
                .ino;
        }
        Ok(ino)
    }

    /// The directory that will hold the last component of `path`, and that name.
    pub(super) fn parent_of<'p>(&mut self, path: &'p str) -> Result<(u32, &'p str), FsError> {
        let (parents, name) = split(path)?;
        let dir = self.lookup(&parents.join("/"))?;
        if !self.is_dir_inode(dir)? {
            return Err(FsError::NotDir(path.to_string()));
        }
        Ok((dir, name))
    }

    /// The inode `name` names in directory `dir`.
    pub fn lookup_in(&mut self, dir: u32, name: &str) -> Result<u32, FsError> {
        self.check_parent(dir, name)?;
        let place = self.find_entry(dir, name.as_bytes())?;
        Ok(place
            .ok_or_else(|| FsError::NotFound(name.to_string()))?
            .found()
            .ino)
    }

    /// `dir` is a directory and `name` a usable name in it.
    pub(super) fn check_parent(&mut self, dir: u32, name: &str) -> Result<(), FsError> {
        check_name(name)?;
        if !self.is_dir_inode(dir)? {
            return Err(FsError::NotDir(format!("inode {dir}")));
        }
        Ok(())
    }

    /// Main-area blocks and the blocks of free segments (for `statfs`).
    pub fn capacity_blocks(&self) -> (u64, u64) {
        let per_segment = BLOCKS_PER_SEG as u64;
        let total = self.superblock().segment_count_main as u64 * per_segment;
        (total, self.free_segments() as u64 * per_segment)
    }

    /// Creates an empty regular file; returns its inode number.
    pub fn create(&mut self, path: &str) -> Result<u32, FsError> {
        self.balanced("create", |fs| fs.create_op(path))
    }

    fn create_op(&mut self, path: &str) -> Result<u32, FsError> {
        let (dir, name) = self.parent_of(path)?;
        self.create_at(dir, name, path)
    }

    /// `create` by parent directory and name (as a FUSE mount asks).
    pub fn create_in(&mut self, dir: u32, name: &str) -> Result<u32, FsError> {
        self.balanced("create", |fs| {
            fs.check_parent(dir, name)?;
            fs.create_at(dir, name, name)
        })
    }

    /// `path` names the file in error messages.
    fn create_at(&mut self, dir: u32, name: &str, path: &str) -> Result<u32, FsError> {
        if self.find_entry(dir, name.as_bytes())?.is_some() {
            return Err(FsError::Exists(path.to_string()));
        }
        let ino = self.new_inode_as(dir, name, &NewInode::root_owned(S_IFREG | 0o644))?;
        self.add_entry(dir, name.as_bytes(), ino, FT_REG_FILE)?;
        Ok(ino)
    }

    /// Creates a directory (inline, holding "." and "..").
    pub fn mkdir(&mut self, path: &str) -> Result<u32, FsError> {
        self.balanced("mkdir", |fs| fs.mkdir_op(path))
    }

    fn mkdir_op(&mut self, path: &str) -> Result<u32, FsError> {
        let (dir, name) = self.parent_of(path)?;
        self.mkdir_at(dir, name, path)
    }

    /// `mkdir` by parent directory and name.
    pub fn mkdir_in(&mut self, dir: u32, name: &str) -> Result<u32, FsError> {
        self.balanced("mkdir", |fs| {
            fs.check_parent(dir, name)?;
            fs.mkdir_at(dir, name, name)
        })
    }

    fn mkdir_at(&mut self, dir: u32, name: &str, path: &str) -> Result<u32, FsError> {
        if self.find_entry(dir, name.as_bytes())?.is_some() {
            return Err(FsError::Exists(path.to_string()));
        }
        let ino = self.new_inode_as(dir, name, &NewInode::root_owned(S_IFDIR | 0o755))?;
        self.add_entry(dir, name.as_bytes(), ino, FT_DIR)?;
        self.add_links(dir, 1)?;
        Ok(ino)
    }

    /// Opens an existing file or directory: it stays alive while open even if unlinked.
    pub fn open(&mut self, path: &str) -> Result<u32, FsError> {
        let ino = self.lookup(path)?;
        *self.open_counts.entry(ino).or_default() += 1;
        Ok(ino)
    }

    /// Closes an inode opened with [`F2fs::open`]; an unlinked one is freed on the last
    /// close.
    pub fn close(&mut self, ino: u32) -> Result<(), FsError> {
        let Some(count) = self.open_counts.get_mut(&ino) else {
            return Err(FsError::Invalid(format!("inode {ino} is not open")));
        };
        *count -= 1;
        if *count == 0 {
            self.open_counts.remove(&ino);
            if self.orphans.remove(&ino) {
                self.evict_inode(ino)?;
            }
        }
        Ok(())
    }

    /// Reads up to `len` bytes from `offset` (short at the end of the file); atime by
    /// `relatime` ([`F2fs::mark_accessed`]).
    pub fn read(&mut self, ino: u32, offset: u64, len: usize) -> Result<Vec<u8>, FsError> {
        self.check_file(ino)?;
        self.note_file_call(ino, false);
        self.timed("read", |fs| {
            let data = fs.read_at(ino, offset, len)?;
            fs.mark_accessed(ino)?;
            Ok(data)
        })
    }

    /// Writes `data` at `offset`, growing the file as needed (holes read as zeros).
    pub fn write(&mut self, ino: u32, offset: u64, data: &[u8]) -> Result<(), FsError> {
        self.check_file(ino)?;
        self.device_space_for(data.len() as u64)?;
        self.facs_on_write(ino, offset, data)?;
        self.note_file_call(ino, true);
        self.balanced("write", |fs| {
            fs.write_at(ino, offset, data)?;
            fs.mark_modified(ino)
        })
    }

    /// Reads whole page `index` of a file (zeros past the end or in a hole).
    pub fn read_page(&mut self, ino: u32, index: u64) -> Result<Box<Block>, FsError> {
        self.check_file(ino)?;
        self.note_file_call(ino, false);
        self.load_file_page(ino, index)
    }

    /// Writes whole page `index`; the size grows to cover at most `valid_bytes` of it
    /// (a page cache passes the bytes of the last page that lie inside the file).
    pub fn write_page(
        &mut self,
        ino: u32,
        index: u64,
        page: &Block,
        valid_bytes: usize,
    ) -> Result<(), FsError> {
        self.check_file(ino)?;
        self.device_space_for(BLOCK_SIZE as u64)?;
        if index == 0 {
            self.facs_on_write(ino, 0, &page[..valid_bytes.min(BLOCK_SIZE)])?;
        }
        self.note_file_call(ino, true);
        self.balanced("write_page", |fs| {
            fs.write_page_op(ino, index, page, valid_bytes)
        })
    }

    fn write_page_op(
        &mut self,
        ino: u32,
        index: u64,
        page: &Block,
        valid_bytes: usize,
    ) -> Result<(), FsError> {
        let valid = valid_bytes.min(BLOCK_SIZE);
        let offset = index
            .checked_mul(BLOCK_SIZE as u64)
            .ok_or_else(|| FsError::TooLarge(format!("page {index}")))?;
        if self.has_inline(ino, F2FS_INLINE_DATA)? {
            return self.write_at(ino, offset, &page[..valid]);
        }
        self.zero_post_eof(ino, offset + valid as u64, |i| i == index)?;
        let wb = self.writeback_plan(ino, None)?;
        self.store_page(ino, index, page, wb)?;
        self.grow_size(ino, offset + valid as u64)
    }

    /// Writes whole consecutive pages from `first_index` as the page cache's writeback
    /// does, with what it knows about the file (`hint`); the size grows to cover
    /// `size_bytes`, clipped to the end of the last page (as `write_page`'s
    /// `valid_bytes`); it never shrinks.
    pub fn write_pages_hinted(
        &mut self,
        ino: u32,
        first_index: u64,
        pages: &[&Block],
        size_bytes: u64,
        hint: WriteHint,
    ) -> Result<(), FsError> {
        self.check_file(ino)?;
        self.device_space_for((pages.len() * BLOCK_SIZE) as u64)?;
        // FACS looks at a file's first blocks once; gather them only then (this runs on
        // every writeback from a file's start).
        let facs_undecided = self.cfg.facs.enabled && !self.facs.contains_key(&ino);
        if first_index == 0 && !pages.is_empty() && facs_undecided {
            let n = pages.len().min(self.cfg.facs.sample_blocks as usize);
            let mut sample = Vec::with_capacity(n * BLOCK_SIZE);
            for page in &pages[..n] {
                sample.extend_from_slice(&page[..]);
            }
            let end = (size_bytes as usize).clamp(1, sample.len());
            self.facs_on_write(ino, 0, &sample[..end])?;
        }
        self.note_file_call(ino, true);
        self.balanced("write_pages", |fs| {
            fs.write_pages_op(ino, first_index, pages, size_bytes, hint)
        })
    }

    fn write_pages_op(
        &mut self,
        ino: u32,
        first_index: u64,
        pages: &[&Block],
        size_bytes: u64,
        hint: WriteHint,
    ) -> Result<(), FsError> {
        let end_bytes = first_index
            .checked_add(pages.len() as u64)
            .and_then(|e| e.checked_mul(BLOCK_SIZE as u64))
            .filter(|&e| e <= MAX_FILE_BYTES)
            .ok_or_else(|| FsError::TooLarge(format!("pages from {first_index}")))?;
        if pages.is_empty() {
            return Ok(());
        }
        let size = size_bytes.min(end_bytes);
        if self.has_inline(ino, F2FS_INLINE_DATA)? {
            let geo = self.geometry(ino)?;
            if first_index == 0 && pages.len() == 1 && size <= geo.inline_bytes as u64 {
                return self.write_at(ino, 0, &pages[0][..size as usize]);
            }
            self.convert_inline_data(ino)?;
        }
        let end_index = first_index + pages.len() as u64;
        self.zero_post_eof(ino, size, |i| (first_index..end_index).contains(&i))?;
        let wb = self.writeback_plan(ino, Some(hint))?;
        for (i, page) in pages.iter().enumerate() {
            // Cleaning gets its chance between batches, as in `write_at`.
            if i > 0 && i.is_multiple_of(BALANCE_EVERY_PAGES as usize) {
                self.balance()?;
            }
            let index = first_index + i as u64;
            self.store_page(ino, index, page, wb)?;
        }
        self.grow_size(ino, size)
    }

    /// Sets a file's size (shrinking frees blocks; growing leaves a hole).
    pub fn truncate(&mut self, ino: u32, size: u64) -> Result<(), FsError> {
        self.check_file(ino)?;
        self.balanced("truncate", |fs| {
            fs.set_size(ino, size)?;
            fs.stamp(ino, Times::MODIFIED, false)
        })
    }

    /// The page cache's writeback sets the size it knows (a file grown into a hole past its
    /// last page): no time changes, the write that grew it already changed them.
    pub fn writeback_size(&mut self, ino: u32, size: u64) -> Result<(), FsError> {
        self.check_file(ino)?;
        self.balanced("truncate", |fs| fs.set_size(ino, size))
    }

    pub(super) fn check_file(&mut self, ino: u32) -> Result<(), FsError> {
        if self.is_dir_inode(ino)? {
            return Err(FsError::IsDir(format!("inode {ino}")));
        }
        if self.is_symlink_inode(ino)? {
            return Err(FsError::Invalid(format!("inode {ino} is a symlink")));
        }
        let node = self.node(ino)?;
        if attr::is_special(u16::from_le_bytes([node[0], node[1]])) {
            return Err(FsError::Invalid(format!(
                "inode {ino} is a device file, FIFO or socket"
            )));
        }
        Ok(())
    }

    pub fn stat(&mut self, path: &str) -> Result<Stat, FsError> {
        let ino = self.lookup(path)?;
        self.stat_ino(ino)
    }

    /// The inode's size in bytes: `stat_ino(ino)?.size_bytes` without decoding the rest
    /// of the inode (its address vectors), for callers that check the size after every
    /// writeback.
    pub fn size_of_ino(&mut self, ino: u32) -> Result<u64, FsError> {
        self.inode_u64(ino, super::data::OFF_SIZE)
    }

    pub fn stat_ino(&mut self, ino: u32) -> Result<Stat, FsError> {
        let inode = Inode::decode(self.inode_node(ino)?);
        let [atime, mtime, ctime] = attr::times_of(self.inode_node(ino)?);
        let rdev = self.rdev_of(ino, inode.mode)?;
        Ok(Stat {
            ino,
            kind: kind_of_mode(inode.mode),
            mode: inode.mode,
            uid: inode.uid,
            gid: inode.gid,
            links: inode.links,
            size_bytes: inode.size,
            blocks: inode.blocks,
            atime,
            mtime,
            ctime,
            rdev,
            inline_data: inode.inline & F2FS_INLINE_DATA != 0,
            inline_dentry: inode.inline & F2FS_INLINE_DENTRY != 0,
        })
    }

    /// The entries of a directory, without "." and "..", sorted by name.
    pub fn readdir(&mut self, path: &str) -> Result<Vec<DirEntryInfo>, FsError> {
        let dir = self.lookup(path)?;
        if !self.is_dir_inode(dir)? {
            return Err(FsError::NotDir(path.to_string()));
        }
        self.readdir_ino(dir)
    }

    /// `readdir` of a directory inode.
    pub fn readdir_ino(&mut self, dir: u32) -> Result<Vec<DirEntryInfo>, FsError> {
        if !self.is_dir_inode(dir)? {
            return Err(FsError::NotDir(format!("inode {dir}")));
        }
        let mut out: Vec<DirEntryInfo> = self
            .dir_entries(dir)?
            .into_iter()
            .filter(|f| f.name != b"." && f.name != b"..")
            .map(|f| DirEntryInfo {
                name: String::from_utf8_lossy(&f.name).into_owned(),
                ino: f.ino,
                kind: kind_of_type(f.file_type),
            })
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// Adds a hard link to an existing file.
    pub fn link(&mut self, existing: &str, new_path: &str) -> Result<(), FsError> {
        self.balanced("link", |fs| fs.link_op(existing, new_path))
    }

    fn link_op(&mut self, existing: &str, new_path: &str) -> Result<(), FsError> {
        let ino = self.lookup(existing)?;
        if self.is_dir_inode(ino)? {
            return Err(FsError::IsDir(existing.to_string()));
        }
        let (dir, name) = self.parent_of(new_path)?;
        self.link_at(ino, dir, name, new_path)
    }

    /// `link` of inode `ino` as `name` in directory `dir`.
    pub fn link_in(&mut self, ino: u32, dir: u32, name: &str) -> Result<(), FsError> {
        self.balanced("link", |fs| {
            if fs.is_dir_inode(ino)? {
                return Err(FsError::IsDir(format!("inode {ino}")));
            }
            fs.check_parent(dir, name)?;
            fs.link_at(ino, dir, name, name)
        })
    }

    fn link_at(&mut self, ino: u32, dir: u32, name: &str, new_path: &str) -> Result<(), FsError> {
        // fsck.f2fs requires a symlink (and, from f2fs-tools 1.17, a special file) to have
        // exactly one link.
        let node = self.node(ino)?;
        let mode = u16::from_le_bytes([node[0], node[1]]);
        if mode & S_IFMT == S_IFLNK || attr::is_special(mode) {
            return Err(FsError::Unsupported(format!(
                "{new_path}: hard link to a symlink or special file"
            )));
        }
        if self.find_entry(dir, name.as_bytes())?.is_some() {
            return Err(FsError::Exists(new_path.to_string()));
        }
        self.add_entry(dir, name.as_bytes(), ino, FT_REG_FILE)?;
        self.since_cp.moved_or_shrunk.insert(ino);
        self.add_links(ino, 1)?;
        self.stamp(ino, Times::CHANGED, false)
    }

    /// Removes a file's name; the inode goes with its last link (or last close).
    pub fn unlink(&mut self, path: &str) -> Result<(), FsError> {
        self.balanced("unlink", |fs| fs.unlink_op(path))
    }

    fn unlink_op(&mut self, path: &str) -> Result<(), FsError> {
        let (dir, name) = self.parent_of(path)?;
        self.unlink_at(dir, name, path)
    }

    /// `unlink` by parent directory and name.
    pub fn unlink_in(&mut self, dir: u32, name: &str) -> Result<(), FsError> {
        self.balanced("unlink", |fs| {
            fs.check_parent(dir, name)?;
            fs.unlink_at(dir, name, name)
        })
    }

    fn unlink_at(&mut self, dir: u32, name: &str, path: &str) -> Result<(), FsError> {
        let place = self
            .find_entry(dir, name.as_bytes())?
            .ok_or_else(|| FsError::NotFound(path.to_string()))?;
        let ino = place.found().ino;
        if self.is_dir_inode(ino)? {
            return Err(FsError::IsDir(path.to_string()));
        }
        self.edit_entry(dir, &place, |a, buf, f| a.remove(buf, f))?;
        self.since_cp.dirs_lost_names.insert(dir);
        self.drop_link(ino)?;
        self.settle_fsynced(ino)
    }

    /// Removes an empty directory.
    pub fn rmdir(&mut self, path: &str) -> Result<(), FsError> {
        self.balanced("rmdir", |fs| fs.rmdir_op(path))
    }

    fn rmdir_op(&mut self, path: &str) -> Result<(), FsError> {
        let (dir, name) = self.parent_of(path)?;
        self.rmdir_at(dir, name, path)
    }

    /// `rmdir` by parent directory and name.
    pub fn rmdir_in(&mut self, dir: u32, name: &str) -> Result<(), FsError> {
        self.balanced("rmdir", |fs| {
            fs.check_parent(dir, name)?;
            fs.rmdir_at(dir, name, name)
        })
    }

    fn rmdir_at(&mut self, dir: u32, name: &str, path: &str) -> Result<(), FsError> {
        let place = self
            .find_entry(dir, name.as_bytes())?
            .ok_or_else(|| FsError::NotFound(path.to_string()))?;
        let ino = place.found().ino;
        if !self.is_dir_inode(ino)? {
            return Err(FsError::NotDir(path.to_string()));
        }
        if !self.dir_is_empty(ino)? {
            return Err(FsError::NotEmpty(path.to_string()));
        }
        self.edit_entry(dir, &place, |a, buf, f| a.remove(buf, f))?;
        self.since_cp.dirs_lost_names.insert(dir);
        self.add_links(dir, -1)?;
        self.release_inode(ino)
    }

    fn dir_is_empty(&mut self, dir: u32) -> Result<bool, FsError> {
        Ok(self
            .dir_entries(dir)?
            .iter()
            .all(|f| f.name == b"." || f.name == b".."))
    }

    /// Renames (POSIX semantics: an existing target is replaced; a directory may only
    /// replace an empty directory, and never moves into itself).
    pub fn rename(&mut self, from: &str, to: &str) -> Result<(), FsError> {
        self.balanced("rename", |fs| fs.rename_op(from, to))
    }

    fn rename_op(&mut self, from: &str, to: &str) -> Result<(), FsError> {
        let (src_dir, src_name) = self.parent_of(from)?;
        let (dst_dir, dst_name) = self.parent_of(to)?;
        self.rename_at((src_dir, src_name, from), (dst_dir, dst_name, to))
    }

    /// `rename` by parent directories and names.
    pub fn rename_in(
        &mut self,
        src_dir: u32,
        src_name: &str,
        dst_dir: u32,
        dst_name: &str,
    ) -> Result<(), FsError> {
        self.balanced("rename", |fs| {
            fs.check_parent(src_dir, src_name)?;
            fs.check_parent(dst_dir, dst_name)?;
            fs.rename_at((src_dir, src_name, src_name), (dst_dir, dst_name, dst_name))
        })
    }

    /// Each side: (directory, name, how to name it in errors).
    fn rename_at(
        &mut self,
        (src_dir, src_name, from): (u32, &str, &str),
        (dst_dir, dst_name, to): (u32, &str, &str),
    ) -> Result<(), FsError> {
        let src = self
            .find_entry(src_dir, src_name.as_bytes())?
            .ok_or_else(|| FsError::NotFound(from.to_string()))?;
        let ino = src.found().ino;
        let is_dir = self.is_dir_inode(ino)?;
        if is_dir && self.is_ancestor(ino, dst_dir)? {
            return Err(FsError::Invalid(format!("'{to}' is inside '{from}'")));
        }
        let dst = self.find_entry(dst_dir, dst_name.as_bytes())?;
        if let Some(d) = &dst {
            if d.found().ino == ino {
                return Ok(());
            }
            self.check_replace(d.found().ino, is_dir, to)?;
        }
        let file_type = src.found().file_type;
        self.since_cp.moved_or_shrunk.insert(ino);
        self.since_cp.dirs_lost_names.extend([src_dir, dst_dir]);
        let mut settle = vec![ino];
        match &dst {
            Some(d) => {
                let victim = d.found().ino;
                settle.push(victim);
                self.edit_entry(dst_dir, d, |a, buf, f| {
                    a.set_ino(buf, f.slot, ino, file_type)
                })?;
                self.release_replaced(victim, dst_dir)?;
            }
            None => self.add_entry(dst_dir, dst_name.as_bytes(), ino, file_type)?,
        }
        // The source entry may have moved if the add converted or grew the directory.
        let src = self
            .find_entry(src_dir, src_name.as_bytes())?
            .ok_or_else(|| corrupt("rename source vanished"))?;
        self.edit_entry(src_dir, &src, |a, buf, f| a.remove(buf, f))?;
        self.set_name(ino, dst_dir, dst_name)?;
        self.stamp(ino, Times::CHANGED, false)?;
        if is_dir && src_dir != dst_dir {
            self.set_dotdot(ino, dst_dir)?;
            self.add_links(src_dir, -1)?;
            self.add_links(dst_dir, 1)?;
        }
        for i in settle {
            self.settle_fsynced(i)?;
        }
        Ok(())
    }

    fn check_replace(&mut self, victim: u32, is_dir: bool, to: &str) -> Result<(), FsError> {
        let victim_dir = self.is_dir_inode(victim)?;
        match (is_dir, victim_dir) {
            (true, false) => Err(FsError::NotDir(to.to_string())),
            (false, true) => Err(FsError::IsDir(to.to_string())),
            (true, true) if !self.dir_is_empty(victim)? => Err(FsError::NotEmpty(to.to_string())),
            _ => Ok(()),
        }
    }

    /// Drops the inode a rename replaced.
    fn release_replaced(&mut self, victim: u32, dst_dir: u32) -> Result<(), FsError> {
        if self.is_dir_inode(victim)? {
            self.add_links(dst_dir, -1)?;
            return self.release_inode(victim);
        }
        self.drop_link(victim)
    }

    /// Whether `ancestor` is `dir` or one of its parents.
    fn is_ancestor(&mut self, ancestor: u32, mut dir: u32) -> Result<bool, FsError> {
        for _ in 0..4096 {
            if dir == ancestor {
                return Ok(true);
            }
            if dir == ROOT_INO {
                return Ok(false);
            }
            let parent = self
                .find_entry(dir, b"..")?
                .ok_or_else(|| corrupt(format!("directory {dir} has no '..'")))?;
            dir = parent.found().ino;
        }
        Err(corrupt("directory chain too deep"))
    }

    fn set_dotdot(&mut self, dir: u32, parent: u32) -> Result<(), FsError> {
        let place = self
            .find_entry(dir, b"..")?
            .ok_or_else(|| corrupt(format!("directory {dir} has no '..'")))?;
        self.edit_entry(dir, &place, |a, buf, f| {
            a.set_ino(buf, f.slot, parent, FT_DIR)
        })
    }

    /// Records the name and parent in the inode (`i_name`, `i_pino`, used by recovery).
    fn set_name(&mut self, ino: u32, parent: u32, name: &str) -> Result<(), FsError> {
        let mut inode = Inode::decode(self.node(ino)?);
        inode.pino = parent;
        inode.namelen = name.len() as u32;
        inode.name = name.as_bytes().to_vec();
        let block = inode.encode();
        self.put_node(ino, block);
        Ok(())
    }

    pub(crate) fn add_links(&mut self, ino: u32, delta: i32) -> Result<(), FsError> {
        let node = self.node(ino)?;
        let links = le32_at(&node[..], OFF_LINKS).saturating_add_signed(delta);
        put_le32_at(&mut node[..], OFF_LINKS, links);
        self.dirty_nodes.insert(ino);
        Ok(())
    }

    fn drop_link(&mut self, ino: u32) -> Result<(), FsError> {
        self.since_cp.moved_or_shrunk.insert(ino);
        self.add_links(ino, -1)?;
        if le32_at(&self.node(ino)?[..], OFF_LINKS) > 0 {
            return self.stamp(ino, Times::CHANGED, false);
        }
        self.release_inode(ino)
    }

    /// An inode with no links left: freed now, or kept as an orphan while open.
    fn release_inode(&mut self, ino: u32) -> Result<(), FsError> {
        put_le32_at(&mut self.node(ino)?[..], OFF_LINKS, 0);
        self.dirty_nodes.insert(ino);
        if self.open_counts.contains_key(&ino) {
            self.orphans.insert(ino);
            return Ok(());
        }
        self.evict_inode(ino)
    }

    /// Frees an inode with all its blocks and nodes.
    pub(crate) fn evict_inode(&mut self, ino: u32) -> Result<(), FsError> {
        self.dcm_on_evict(ino)?;
        if !self.has_inline(ino, F2FS_INLINE_DATA | F2FS_INLINE_DENTRY)? {
            self.free_blocks_from(ino, 0)?;
        }
        let xattr = le32_at(&self.node(ino)?[..], OFF_XATTR_NID);
        if xattr != 0 {
            self.free_node(xattr)?;
        }
        self.free_node(ino)?;
        self.valid_inode_count = self.valid_inode_count.saturating_sub(1);
        Ok(())
    }

    /// Builds a new inode in memory (written at the next checkpoint or fsync): a
    /// directory (inline, holding "." and ".."), a regular file or symlink (inline data),
    /// or a special file, as `new` says.
    pub(super) fn new_inode_as(
        &mut self,
        parent: u32,
        name: &str,
        new: &NewInode,
    ) -> Result<u32, FsError> {
        self.ensure_space()?;
        let ino = self.alloc_nid()?;
        let inode = self.initial_inode(ino, parent, name, new);
        let dir = new.mode & S_IFMT == S_IFDIR;
        self.new_node(ino, ino, 0, !dir)?;
        self.put_node(ino, inode.encode());
        self.valid_inode_count += 1;
        if dir {
            let geo = self.geometry(ino)?;
            let (area, start) = (Area::inline(geo.inline_bytes), geo.inline_start());
            let node = self.node(ino)?;
            area.put(&mut node[start..], 0, ino, b".", FT_DIR);
            area.put(&mut node[start..], 1, parent, b"..", FT_DIR);
            // An inline directory's size is its inline area (`f2fs_make_empty_inline_dir`).
            self.set_inode_u64(ino, OFF_SIZE, geo.inline_bytes as u64)?;
        }
        if matches!(new.mode & S_IFMT, S_IFCHR | S_IFBLK) {
            self.set_rdev(ino, new.rdev)?;
        }
        Ok(ino)
    }

    fn initial_inode(&mut self, ino: u32, parent: u32, name: &str, new: &NewInode) -> Inode {
        let now = self.timestamp();
        self.generation = self.generation.wrapping_add(1);
        let kind = new.mode & S_IFMT;
        let dir = kind == S_IFDIR;
        // `f2fs_may_inline_data`: regular files and symlinks; directories inline dentries.
        let inline = F2FS_INLINE_XATTR
            | match kind {
                S_IFDIR => F2FS_INLINE_DENTRY,
                S_IFREG | S_IFLNK => F2FS_INLINE_DATA,
                _ => 0,
            };
        let mut inode = Inode {
            mode: new.mode,
            advise: if kind == S_IFREG {
                self.advise_for(name)
            } else {
                0
            },
            inline,
            uid: new.uid,
            gid: new.gid,
            links: if dir { 2 } else { 1 },
            blocks: 1,
            atime: now.secs as u64,
            ctime: now.secs as u64,
            mtime: now.secs as u64,
            atime_nsec: now.nsec,
            ctime_nsec: now.nsec,
            mtime_nsec: now.nsec,
            generation: self.generation,
            current_depth: u32::from(dir),
            pino: parent,
            namelen: name.len() as u32,
            name: name.as_bytes().to_vec(),
            footer: NodeFooter {
                nid: ino,
                ino,
                flag: u32::from(!dir) << COLD_BIT_SHIFT,
                cp_ver: 0,
                next_blkaddr: 0,
            },
            ..Inode::default()
        };
        self.set_extra_attrs(&mut inode, now);
        self.compress_new_inode(&mut inode, parent, name);
        inode
    }

    fn set_extra_attrs(&self, inode: &mut Inode, now: Timestamp) {
        let f = self.sb.feature;
        if !f.contains(FEATURE_EXTRA_ATTR) {
            return;
        }
        let flexible = f.contains(FEATURE_FLEXIBLE_INLINE_XATTR);
        inode.set_extra(&ExtraAttr {
            extra_isize: crate::mkfs::extra_isize(f),
            inline_xattr_size: if flexible {
                DEFAULT_INLINE_XATTR_ADDRS as u16
            } else {
                0
            },
            crtime: if f.contains(FEATURE_INODE_CRTIME) {
                now.secs as u64
            } else {
                0
            },
            crtime_nsec: if f.contains(FEATURE_INODE_CRTIME) {
                now.nsec
            } else {
                0
            },
            ..ExtraAttr::default()
        });
    }

    /// `set_file_temperature`: cold for the media list, hot for the hot list.
    fn advise_for(&self, name: &str) -> u8 {
        let n = name.as_bytes();
        if self.cold_exts.iter().any(|e| has_extension(n, e, true)) {
            FADVISE_COLD
        } else if self.hot_exts.iter().any(|e| has_extension(n, e, false)) {
            FADVISE_HOT
        } else {
            0
        }
    }

    /// Checkpoints so that names changed since the last checkpoint are durable, as the
    /// kernel's fsync does when roll-forward cannot cover a change (`f2fs_sync_fs` from
    /// `f2fs_do_sync_file`): a checkpoint of F2FS's own, so times changed lazily stay in
    /// memory (unlike [`F2fs::sync`]).
    pub fn checkpoint_names(&mut self) -> Result<(), FsError> {
        self.timed("sync", |fs| fs.checkpoint(false))
    }

    /// Checkpoints everything (`sync(2)`), lazily updated times included.
    pub fn sync(&mut self) -> Result<(), FsError> {
        self.timed("sync", |fs| {
            fs.flush_lazy_times();
            fs.checkpoint(false)
        })
    }
}
