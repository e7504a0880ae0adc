//! [`F2fsTree`]: the F2FS stack (F2FS on an emulated device) as an [`InodeFs`] core, so that
//! `flashstack mount` puts real programs on it. Everything it does is F2FS's own API;
//! this file only converts names, attributes and errors.

use flashstack_block::BlockDevice;
use flashstack_f2fs::{F2fs, FileKind, FsError as F2fsFsError};

use crate::tree::{Attr, FsError, FsStats, Ino, InodeFs, Kind};

/// F2FS mounted read-write on a device `D`.
pub struct F2fsTree<D: BlockDevice + Send + 'static> {
    fs: Option<F2fs<D>>,
}

impl<D: BlockDevice + Send + 'static> F2fsTree<D> {
    pub fn new(fs: F2fs<D>) -> Self {
        F2fsTree { fs: Some(fs) }
    }

    /// The file system, for its metrics and device.
    pub fn fs(&self) -> &F2fs<D> {
        self.fs.as_ref().expect("present until into_inner")
    }

    pub fn into_inner(mut self) -> F2fs<D> {
        self.fs.take().expect("present until into_inner")
    }

    fn f(&mut self) -> &mut F2fs<D> {
        self.fs.as_mut().expect("present until into_inner")
    }

    fn attr(&mut self, ino: Ino) -> Result<Attr, FsError> {
        let ino32 = to_u32(ino)?;
        let s = self.f().stat_ino(ino32).map_err(convert)?;
        Ok(Attr {
            ino,
            kind: match s.kind {
                FileKind::Dir => Kind::Dir,
                _ => Kind::File,
            },
            size: s.size_bytes,
            nlink: s.links,
            perm: s.mode & 0o7777,
            mtime_ns: s.mtime_secs.saturating_mul(1_000_000_000),
        })
    }
}

fn to_u32(ino: Ino) -> Result<u32, FsError> {
    u32::try_from(ino).map_err(|_| FsError::NotFound)
}

fn name_str(name: &[u8]) -> Result<&str, FsError> {
    std::str::from_utf8(name).map_err(|_| FsError::Invalid("names must be UTF-8".into()))
}

/// F2FS's error kinds onto the mount's (errno follows from these in one place).
fn convert(e: F2fsFsError) -> FsError {
    match e {
        F2fsFsError::NotFound(_) => FsError::NotFound,
        F2fsFsError::Exists(_) => FsError::Exists,
        F2fsFsError::NotDir(_) => FsError::NotDir,
        F2fsFsError::IsDir(_) => FsError::IsDir,
        F2fsFsError::NotEmpty(_) => FsError::NotEmpty,
        F2fsFsError::NoSpace => FsError::NoSpace,
        F2fsFsError::NameTooLong(_) => FsError::NameTooLong,
        F2fsFsError::Invalid(m) => FsError::Invalid(m),
        F2fsFsError::TooLarge(m) => FsError::TooLarge(m),
        F2fsFsError::Unsupported(m) => FsError::Unsupported(m),
        other => FsError::Io(other.to_string()),
    }
}

impl<D: BlockDevice + Send + 'static> InodeFs for F2fsTree<D> {
    fn now_ns(&self) -> u64 {
        self.fs().now_ns()
    }

    fn root(&self) -> Ino {
        flashstack_f2fs::consts::ROOT_INO as Ino
    }

    fn lookup(&mut self, parent: Ino, name: &[u8]) -> Result<Attr, FsError> {
        let (dir, name) = (to_u32(parent)?, name_str(name)?);
        let ino = self.f().lookup_in(dir, name).map_err(convert)?;
        self.attr(ino as Ino)
    }

    fn getattr(&mut self, ino: Ino) -> Result<Attr, FsError> {
        self.attr(ino)
    }

    fn set_size(&mut self, ino: Ino, size: u64) -> Result<Attr, FsError> {
        self.f().truncate(to_u32(ino)?, size).map_err(convert)?;
        self.attr(ino)
    }

    fn set_perm(&mut self, ino: Ino, _perm: u16) -> Result<Attr, FsError> {
        // Permission bits are not changed after creation (no chmod in the F2FS core yet);
        // the mount runs with default_permissions as the mounting user.
        self.attr(ino)
    }

    fn create(&mut self, parent: Ino, name: &[u8], _perm: u16) -> Result<Attr, FsError> {
        let (dir, name) = (to_u32(parent)?, name_str(name)?);
        let ino = self.f().create_in(dir, name).map_err(convert)?;
        self.attr(ino as Ino)
    }

    fn mkdir(&mut self, parent: Ino, name: &[u8], _perm: u16) -> Result<Attr, FsError> {
        let (dir, name) = (to_u32(parent)?, name_str(name)?);
        let ino = self.f().mkdir_in(dir, name).map_err(convert)?;
        self.attr(ino as Ino)
    }

    fn unlink(&mut self, parent: Ino, name: &[u8]) -> Result<(), FsError> {
        let (dir, name) = (to_u32(parent)?, name_str(name)?);
        self.f().unlink_in(dir, name).map_err(convert)
    }

    fn rmdir(&mut self, parent: Ino, name: &[u8]) -> Result<(), FsError> {
        let (dir, name) = (to_u32(parent)?, name_str(name)?);
        self.f().rmdir_in(dir, name).map_err(convert)
    }

    fn rename(
        &mut self,
        parent: Ino,
        name: &[u8],
        new_parent: Ino,
        new_name: &[u8],
    ) -> Result<(), FsError> {
        let (src, name) = (to_u32(parent)?, name_str(name)?);
        let (dst, new_name) = (to_u32(new_parent)?, name_str(new_name)?);
        self.f()
            .rename_in(src, name, dst, new_name)
            .map_err(convert)
    }

    fn link(&mut self, ino: Ino, new_parent: Ino, new_name: &[u8]) -> Result<Attr, FsError> {
        let (file, dir, name) = (to_u32(ino)?, to_u32(new_parent)?, name_str(new_name)?);
        self.f().link_in(file, dir, name).map_err(convert)?;
        self.attr(ino)
    }

    fn read(&mut self, ino: Ino, offset: u64, out: &mut [u8]) -> Result<usize, FsError> {
        let bytes = self
            .f()
            .read(to_u32(ino)?, offset, out.len())
            .map_err(convert)?;
        out[..bytes.len()].copy_from_slice(&bytes);
        Ok(bytes.len())
    }

    fn write(&mut self, ino: Ino, offset: u64, data: &[u8]) -> Result<usize, FsError> {
        self.f()
            .write(to_u32(ino)?, offset, data)
            .map_err(convert)?;
        Ok(data.len())
    }

    fn fsync(&mut self, ino: Ino, data_only: bool) -> Result<(), FsError> {
        let ino = to_u32(ino)?;
        match data_only {
            true => self.f().fdatasync(ino),
            false => self.f().fsync(ino),
        }
        .map_err(convert)
    }

    fn readdir(&mut self, dir: Ino) -> Result<Vec<(Ino, Kind, Vec<u8>)>, FsError> {
        let entries = self.f().readdir_ino(to_u32(dir)?).map_err(convert)?;
        Ok(entries
            .into_iter()
            .map(|e| {
                let kind = match e.kind {
                    FileKind::Dir => Kind::Dir,
                    _ => Kind::File,
                };
                (e.ino as Ino, kind, e.name.into_bytes())
            })
            .collect())
    }

    fn statfs(&mut self) -> Result<FsStats, FsError> {
        let (blocks, free) = self.f().capacity_blocks();
        Ok(FsStats {
            blocks,
            blocks_free: free,
            files: blocks,
            files_free: free,
        })
    }

    fn sync(&mut self) -> Result<(), FsError> {
        self.f().sync().map_err(convert)
    }
}
