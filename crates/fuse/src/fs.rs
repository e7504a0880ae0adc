//! Block-file mode's core: a root directory holding one file, `disk.img`, whose bytes are
//! the device's ([`BlockFile`]). It is an [`InodeFs`] like any other, so the one FUSE
//! adapter ([`crate::TreeFs`]) serves it.

use flashstack_block::{BlockDevice, BlockError, LBA_SIZE};

use crate::tree::{
    Attr, FallocMode, Fallocate, FsError, FsStats, Ino, InodeFs, Kind, NewAttr, SetAttr, Timestamp,
};
use crate::{BlockFile, BlockFileError};

/// The one file of block-file mode.
pub const DISK_FILE_NAME: &str = "disk.img";
const ROOT: Ino = 1;
const DISK: Ino = 2;

/// A device as the single file of a directory.
pub struct DiskTree<D: BlockDevice> {
    file: BlockFile<D>,
    /// Owner shown for the directory and the file: who mounted it.
    owner: (u32, u32),
}

impl<D: BlockDevice> DiskTree<D> {
    /// The device's file, shown as owned by `(uid, gid)`.
    pub fn new(file: BlockFile<D>, owner: (u32, u32)) -> Self {
        DiskTree { file, owner }
    }

    /// The file, for its counters and device after unmounting.
    pub fn file_mut(&mut self) -> &mut BlockFile<D> {
        &mut self.file
    }

    pub fn into_file(self) -> BlockFile<D> {
        self.file
    }

    fn attr(&self, ino: Ino) -> Result<Attr, FsError> {
        let (kind, perm, nlink, size) = match ino {
            ROOT => (Kind::Dir, 0o755, 2, 0),
            DISK => (Kind::File, 0o644, 1, self.file.size_bytes()),
            _ => return Err(FsError::NotFound),
        };
        // The device's virtual clock, from the Unix epoch: a block file keeps no times.
        let now = Timestamp::from_secs_nanos(0, self.file.now_ns());
        Ok(Attr {
            ino,
            kind,
            size,
            blocks: size.div_ceil(512),
            nlink,
            perm,
            uid: self.owner.0,
            gid: self.owner.1,
            rdev: 0,
            atime: now,
            mtime: now,
            ctime: now,
        })
    }

    fn disk(ino: Ino) -> Result<(), FsError> {
        match ino {
            DISK => Ok(()),
            ROOT => Err(FsError::IsDir),
            _ => Err(FsError::NotFound),
        }
    }
}

fn convert(error: BlockFileError) -> FsError {
    match error {
        BlockFileError::BeyondEnd { .. } | BlockFileError::Device(BlockError::NoSpace { .. }) => {
            FsError::NoSpace
        }
        BlockFileError::Device(BlockError::OutOfRange { .. } | BlockError::Empty) => {
            FsError::Invalid(error.to_string())
        }
        other => FsError::Io(other.to_string()),
    }
}

fn fixed(what: &str) -> FsError {
    FsError::Unsupported(format!("{what}: block-file mode holds exactly one file"))
}

impl<D: BlockDevice + Send + 'static> InodeFs for DiskTree<D> {
    fn root(&self) -> Ino {
        ROOT
    }

    fn lookup(&mut self, parent: Ino, name: &[u8]) -> Result<Attr, FsError> {
        match (parent, name == DISK_FILE_NAME.as_bytes()) {
            (ROOT, true) => self.attr(DISK),
            (ROOT, false) => Err(FsError::NotFound),
            _ => Err(FsError::NotDir),
        }
    }

    fn getattr(&mut self, ino: Ino) -> Result<Attr, FsError> {
        self.attr(ino)
    }

    fn set_size(&mut self, ino: Ino, size: u64) -> Result<Attr, FsError> {
        Self::disk(ino)?;
        // The device's size is fixed: only a no-op truncate is accepted.
        match size == self.file.size_bytes() {
            true => self.attr(ino),
            false => Err(FsError::TooLarge(format!(
                "disk.img stays {} bytes",
                self.file.size_bytes()
            ))),
        }
    }

    /// Modes, owners and times of the two fixed entries are not kept.
    fn setattr(&mut self, ino: Ino, _attr: &SetAttr) -> Result<Attr, FsError> {
        self.attr(ino)
    }

    fn create(&mut self, _parent: Ino, _name: &[u8], _new: NewAttr) -> Result<Attr, FsError> {
        Err(fixed("create"))
    }

    fn mkdir(&mut self, _parent: Ino, _name: &[u8], _new: NewAttr) -> Result<Attr, FsError> {
        Err(fixed("mkdir"))
    }

    fn unlink(&mut self, _parent: Ino, _name: &[u8]) -> Result<(), FsError> {
        Err(fixed("unlink"))
    }

    fn rmdir(&mut self, _parent: Ino, _name: &[u8]) -> Result<(), FsError> {
        Err(fixed("rmdir"))
    }

    fn rename(&mut self, _: Ino, _: &[u8], _: Ino, _: &[u8]) -> Result<(), FsError> {
        Err(fixed("rename"))
    }

    fn link(&mut self, _ino: Ino, _parent: Ino, _name: &[u8]) -> Result<Attr, FsError> {
        Err(fixed("link"))
    }

    fn read(&mut self, ino: Ino, offset: u64, out: &mut [u8]) -> Result<usize, FsError> {
        Self::disk(ino)?;
        self.file.read_at(offset, out).map_err(convert)
    }

    fn write(&mut self, ino: Ino, offset: u64, data: &[u8]) -> Result<usize, FsError> {
        Self::disk(ino)?;
        self.file.write_at(offset, data).map_err(convert)
    }

    fn fsync(&mut self, _ino: Ino, _data_only: bool) -> Result<(), FsError> {
        self.file.sync().map_err(convert)
    }

    /// A close of `disk.img` makes it durable too (the loop driver's flushes arrive as
    /// fsync; a program that writes the file directly and closes it gets the same).
    fn flush(&mut self, ino: Ino) -> Result<(), FsError> {
        match ino {
            DISK => self.file.sync().map_err(convert),
            _ => Ok(()),
        }
    }

    fn readdir(&mut self, dir: Ino) -> Result<Vec<(Ino, Kind, Vec<u8>)>, FsError> {
        match dir {
            ROOT => Ok(vec![(DISK, Kind::File, DISK_FILE_NAME.as_bytes().to_vec())]),
            DISK => Err(FsError::NotDir),
            _ => Err(FsError::NotFound),
        }
    }

    fn statfs(&mut self) -> Result<FsStats, FsError> {
        Ok(FsStats {
            blocks: self.file.size_bytes() / LBA_SIZE as u64,
            blocks_free: 0,
            files: 2,
            files_free: 0,
        })
    }

    fn sync(&mut self) -> Result<(), FsError> {
        self.file.sync().map_err(convert)
    }

    /// The loop driver turns discards (and write-zeroes) into hole punches and zero
    /// ranges: they reach the FTL as TRIM, after which the range reads as zeros.
    /// Preallocation within the fixed size changes nothing.
    fn fallocate(&mut self, ino: Ino, how: Fallocate) -> Result<(), FsError> {
        Self::disk(ino)?;
        let Fallocate { mode, offset, len } = how;
        match mode {
            FallocMode::PunchHole | FallocMode::ZeroRange { .. } => {
                self.file.discard(offset, len).map_err(convert)
            }
            FallocMode::Allocate { .. } => {
                match offset
                    .checked_add(len)
                    .is_some_and(|end| end <= self.file.size_bytes())
                {
                    true => Ok(()),
                    false => Err(FsError::NoSpace),
                }
            }
        }
    }
}
