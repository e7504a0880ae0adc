//! Inode attributes as the kernel keeps them in `struct f2fs_inode`: permission bits and
//! type in `i_mode`, owner in `i_uid`/`i_gid`, the three times (`i_atime`, `i_mtime`,
//! `i_ctime`, seconds and nanoseconds), and a device number for device files.
//!
//! # Times
//!
//! Every time comes from one [`InodeClock`] (the seam): in simulated runs
//! [`VirtualClock`], a fixed epoch plus the virtual clock, so a run stamps the same times
//! whatever the machine; a FUSE mount passes a wall clock. Who changes what follows POSIX
//! and the kernel:
//!
//! | operation | times set | how the inode gets dirty |
//! |---|---|---|
//! | create, mkdir, symlink, mknod | atime, mtime, ctime of the new inode; mtime, ctime of the directory | at once |
//! | unlink, rmdir, rename, link | mtime, ctime of each directory changed; ctime of the inode whose links or name changed | at once |
//! | write (through a page cache: [`F2fs::mark_modified`]) | mtime, ctime | lazily |
//! | truncate, fallocate, setxattr | mtime and ctime (setxattr: ctime) | at once |
//! | chmod, chown, utimensat ([`F2fs::setattr`]) | what is asked, and ctime | at once |
//! | read ([`F2fs::mark_accessed`]) | atime, by `relatime` ([`policy::atime_due`]) | lazily |
//!
//! *Lazily* is the kernel's `lazytime`, which F2FS turns on by default (`default_options`
//! sets `SB_LAZYTIME`): the new times are in the in-memory inode (here its node block)
//! but do not make it dirty (`I_DIRTY_TIME`), so a checkpoint does not write it for them.
//! They reach the disk with the inode's next write for any other reason, at its `fsync`
//! (`vfs_fsync_range` turns them into a real dirtying), and at `sync` and unmount; a power
//! cut before that loses them. (The kernel also writes them after 24 hours; not here.)
//!
//! # Device files, FIFOs and sockets
//!
//! An inode with the type bits and no data (`i_size` 0, one block: the inode itself), no
//! inline data flag (`f2fs_may_inline_data` allows only regular files and symlinks), a
//! dentry of file type `F2FS_FT_CHRDEV`/`BLKDEV`/`FIFO`/`SOCK`. A device file's number is
//! kept where `__set_inode_rdev` puts it: in the first data address word (after the extra
//! attributes) in the old 16-bit encoding when major and minor are both below 256, else 0
//! there and the new encoding in the next word. fsck.f2fs checks nothing else of them.

use flashstack_block::BlockDevice;
use flashstack_sim::Nanos;

use super::data::{ADDR_WORD, OFF_CTIME, OFF_MTIME};
use super::{policy, put_word, word, F2fs, FsError};
use crate::codec::{le32_at, put_le32_at, Block};
use crate::consts::*;

/// A time as an inode stores it: seconds since the Unix epoch (negative before it) and
/// nanoseconds within the second.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct Timestamp {
    pub secs: i64,
    pub nsec: u32,
}

impl Timestamp {
    /// `secs` seconds plus `nanos` nanoseconds (which may exceed a second).
    pub fn from_secs_nanos(secs: i64, nanos: u64) -> Timestamp {
        Timestamp {
            secs: secs.saturating_add((nanos / 1_000_000_000) as i64),
            nsec: (nanos % 1_000_000_000) as u32,
        }
    }
}

/// Where inode times come from: the one clock seam of the file system. Implementations
/// for simulated runs must be pure functions of the virtual time they are given.
pub trait InodeClock: Send {
    /// The time to stamp on an inode for an operation running at virtual time `virtual_ns`.
    fn now(&self, virtual_ns: Nanos) -> Timestamp;
}

/// 2026-01-01 00:00:00 UTC: where simulated time starts on inodes.
pub const SIMULATION_EPOCH_SECS: i64 = 1_767_225_600;

/// Simulated runs: a fixed epoch plus the virtual clock (deterministic).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VirtualClock {
    pub epoch_secs: i64,
}

impl Default for VirtualClock {
    fn default() -> Self {
        VirtualClock {
            epoch_secs: SIMULATION_EPOCH_SECS,
        }
    }
}

impl InodeClock for VirtualClock {
    fn now(&self, virtual_ns: Nanos) -> Timestamp {
        Timestamp::from_secs_nanos(self.epoch_secs, virtual_ns)
    }
}

/// How `utimensat` sets one time (`UTIME_OMIT` is no [`TimeSet`] at all).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeSet {
    /// `UTIME_NOW`: the clock's time.
    Now,
    At(Timestamp),
}

/// What `setattr` changes (chmod, chown, utimensat); `None` leaves a field alone. Any
/// change also sets ctime to now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SetAttr {
    /// Permission bits (`0o7777`); the type bits are kept.
    pub perm: Option<u16>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub atime: Option<TimeSet>,
    pub mtime: Option<TimeSet>,
}

/// What a new inode is: its type and permission bits (`i_mode`, the umask already
/// applied), owner, and for a device file its number (`dev_t` in the kernel's new
/// encoding, as `stat` shows it; 0 otherwise).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewInode {
    pub mode: u16,
    pub uid: u32,
    pub gid: u32,
    pub rdev: u32,
}

impl NewInode {
    /// A regular file or directory owned by root, as `create`/`mkdir` make them.
    pub fn root_owned(mode: u16) -> NewInode {
        NewInode {
            mode,
            uid: 0,
            gid: 0,
            rdev: 0,
        }
    }
}

/// Which times an update sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Times {
    pub atime: bool,
    pub mtime: bool,
    pub ctime: bool,
}

impl Times {
    pub const MODIFIED: Times = Times {
        atime: false,
        mtime: true,
        ctime: true,
    };
    pub const CHANGED: Times = Times {
        atime: false,
        mtime: false,
        ctime: true,
    };
    const ACCESSED: Times = Times {
        atime: true,
        mtime: false,
        ctime: false,
    };
}

/// Byte offsets of the inode fields kept here.
const OFF_UID: usize = 4;
const OFF_GID: usize = 8;
const OFF_ATIME: usize = 32;
const OFF_ATIME_NSEC: usize = 56;
const OFF_CTIME_NSEC: usize = 60;
const OFF_MTIME_NSEC: usize = 64;

/// The time stored at `secs`/`nsec` of an inode block.
pub(crate) fn time_at(block: &Block, secs: usize, nsec: usize) -> Timestamp {
    Timestamp {
        secs: super::le64_at(block, secs) as i64,
        nsec: le32_at(block, nsec),
    }
}

fn put_time(block: &mut Block, secs: usize, nsec: usize, t: Timestamp) {
    super::put_le64_at(block, secs, t.secs as u64);
    put_le32_at(&mut block[..], nsec, t.nsec);
}

/// An inode block's (atime, mtime, ctime).
pub(crate) fn times_of(block: &Block) -> [Timestamp; 3] {
    [
        time_at(block, OFF_ATIME, OFF_ATIME_NSEC),
        time_at(block, OFF_MTIME, OFF_MTIME_NSEC),
        time_at(block, OFF_CTIME, OFF_CTIME_NSEC),
    ]
}

/// Whether `mode` is a device file, FIFO or socket.
pub fn is_special(mode: u16) -> bool {
    matches!(mode & S_IFMT, S_IFCHR | S_IFBLK | S_IFIFO | S_IFSOCK)
}

/// The dentry file type of an inode type (`f2fs_type_by_mode`).
pub(crate) fn file_type_of(mode: u16) -> u8 {
    match mode & S_IFMT {
        S_IFREG => FT_REG_FILE,
        S_IFDIR => FT_DIR,
        S_IFCHR => FT_CHRDEV,
        S_IFBLK => FT_BLKDEV,
        S_IFIFO => FT_FIFO,
        S_IFSOCK => FT_SOCK,
        S_IFLNK => FT_SYMLINK,
        _ => FT_UNKNOWN,
    }
}

/// `(major, minor)` of a device number in the kernel's new encoding (`new_decode_dev`).
fn split_dev(rdev: u32) -> (u32, u32) {
    (
        (rdev & 0xfff00) >> 8,
        (rdev & 0xff) | ((rdev >> 12) & 0xfff00),
    )
}

/// The two words `__set_inode_rdev` stores for a device number.
fn encode_rdev(rdev: u32) -> [u32; 2] {
    let (major, minor) = split_dev(rdev);
    if major < 256 && minor < 256 {
        [(major << 8) | minor, 0]
    } else {
        [0, rdev]
    }
}

/// The device number `__get_inode_rdev` reads back, in the new encoding.
fn decode_rdev(words: [u32; 2]) -> u32 {
    match words[0] {
        0 => words[1],
        old => {
            let (major, minor) = ((old >> 8) & 0xff, old & 0xff);
            (minor & 0xff) | (major << 8) | ((minor & !0xff) << 12)
        }
    }
}

impl<D: BlockDevice> F2fs<D> {
    /// Replaces the clock inode times come from (a FUSE mount passes the wall clock).
    pub fn set_inode_clock(&mut self, clock: Box<dyn InodeClock>) {
        self.inode_clock = clock;
    }

    /// The time an operation running now stamps on inodes.
    pub fn timestamp(&self) -> Timestamp {
        self.inode_clock.now(self.now_ns)
    }

    /// chmod, chown and utimensat: sets what `attr` names, and ctime to now.
    pub fn setattr(&mut self, ino: u32, attr: &SetAttr) -> Result<(), FsError> {
        self.timed("setattr", |fs| fs.setattr_op(ino, attr))
    }

    fn setattr_op(&mut self, ino: u32, attr: &SetAttr) -> Result<(), FsError> {
        let now = self.timestamp();
        let at = |t: Option<TimeSet>| match t {
            Some(TimeSet::Now) => Some(now),
            Some(TimeSet::At(t)) => Some(t),
            None => None,
        };
        let (atime, mtime) = (at(attr.atime), at(attr.mtime));
        let node = self.node(ino)?;
        if let Some(perm) = attr.perm {
            let mode = u16::from_le_bytes([node[0], node[1]]);
            node[..2].copy_from_slice(&((mode & S_IFMT) | (perm & 0o7777)).to_le_bytes());
        }
        if let Some(uid) = attr.uid {
            put_le32_at(&mut node[..], OFF_UID, uid);
        }
        if let Some(gid) = attr.gid {
            put_le32_at(&mut node[..], OFF_GID, gid);
        }
        if let Some(t) = atime {
            put_time(node, OFF_ATIME, OFF_ATIME_NSEC, t);
        }
        if let Some(t) = mtime {
            put_time(node, OFF_MTIME, OFF_MTIME_NSEC, t);
        }
        self.stamp(ino, Times::CHANGED, false)
    }

    /// A write through a page cache above changed the file's data (`file_update_time`):
    /// mtime and ctime now, lazily (see the module doc).
    pub fn mark_modified(&mut self, ino: u32) -> Result<(), FsError> {
        self.stamp(ino, Times::MODIFIED, true)
    }

    /// A read of the file's data (`touch_atime`): atime now if `relatime` says so
    /// ([`policy::atime_due`]), lazily.
    pub fn mark_accessed(&mut self, ino: u32) -> Result<(), FsError> {
        let now = self.timestamp();
        let [atime, mtime, ctime] = times_of(self.node(ino)?);
        if !policy::atime_due(atime, mtime, ctime, now) {
            return Ok(());
        }
        self.stamp(ino, Times::ACCESSED, true)
    }

    /// Sets `which` times of `ino` to now; `lazy`: without making the inode dirty.
    pub(crate) fn stamp(&mut self, ino: u32, which: Times, lazy: bool) -> Result<(), FsError> {
        let now = self.timestamp();
        let node = self.node(ino)?;
        if which.atime {
            put_time(node, OFF_ATIME, OFF_ATIME_NSEC, now);
        }
        if which.mtime {
            put_time(node, OFF_MTIME, OFF_MTIME_NSEC, now);
        }
        if which.ctime {
            put_time(node, OFF_CTIME, OFF_CTIME_NSEC, now);
        }
        match lazy && !self.dirty_nodes.contains(&ino) {
            true => self.lazy_times.insert(ino),
            false => self.dirty_nodes.insert(ino),
        };
        Ok(())
    }

    /// Inodes with only lazy time changes become dirty (sync, unmount).
    pub(crate) fn flush_lazy_times(&mut self) {
        let lazy = std::mem::take(&mut self.lazy_times);
        self.dirty_nodes.extend(lazy);
    }

    /// Makes a file, directory, device file, FIFO or socket `name` in directory `dir`
    /// with the type, permissions and owner of `new` (`mknod(2)`, and `open(O_CREAT)` and
    /// `mkdir(2)` with their modes); returns its inode number. In a set-group-ID
    /// directory the new inode takes the directory's group, and a new directory the bit.
    pub fn mknod_in(&mut self, dir: u32, name: &str, new: &NewInode) -> Result<u32, FsError> {
        self.balanced("mknod", |fs| {
            fs.check_parent(dir, name)?;
            fs.mknod_at(dir, name, new, name)
        })
    }

    /// [`F2fs::mknod_in`] by path.
    pub fn mknod(&mut self, path: &str, new: &NewInode) -> Result<u32, FsError> {
        self.balanced("mknod", |fs| {
            let (dir, name) = fs.parent_of(path)?;
            fs.mknod_at(dir, name, new, path)
        })
    }

    fn mknod_at(
        &mut self,
        dir: u32,
        name: &str,
        new: &NewInode,
        path: &str,
    ) -> Result<u32, FsError> {
        let new = self.inherit_group(dir, *new)?;
        if new.mode & S_IFMT == 0 || file_type_of(new.mode) == FT_SYMLINK {
            return Err(FsError::Invalid(format!(
                "{path}: mode {:o} is no file type mknod makes",
                new.mode
            )));
        }
        if self.find_entry(dir, name.as_bytes())?.is_some() {
            return Err(FsError::Exists(path.to_string()));
        }
        let is_dir = new.mode & S_IFMT == S_IFDIR;
        let ino = self.new_inode_as(dir, name, &new)?;
        self.add_entry(dir, name.as_bytes(), ino, file_type_of(new.mode))?;
        if is_dir {
            self.add_links(dir, 1)?;
        }
        Ok(ino)
    }

    /// `inode_init_owner`'s set-group-ID rule.
    fn inherit_group(&mut self, dir: u32, mut new: NewInode) -> Result<NewInode, FsError> {
        let node = self.node(dir)?;
        let dir_mode = u16::from_le_bytes([node[0], node[1]]);
        if dir_mode & S_ISGID != 0 {
            new.gid = le32_at(&node[..], OFF_GID);
            if new.mode & S_IFMT == S_IFDIR {
                new.mode |= S_ISGID;
            }
        }
        Ok(new)
    }

    /// Stores a device file's number in a new special inode.
    pub(crate) fn set_rdev(&mut self, ino: u32, rdev: u32) -> Result<(), FsError> {
        let extra = self.geometry(ino)?.extra;
        let node = self.node(ino)?;
        let [first, second] = encode_rdev(rdev);
        put_word(node, ADDR_WORD + extra, first);
        put_word(node, ADDR_WORD + extra + 1, second);
        self.dirty_nodes.insert(ino);
        Ok(())
    }

    /// The device number of a device file (0 for anything else).
    pub(crate) fn rdev_of(&mut self, ino: u32, mode: u16) -> Result<u32, FsError> {
        if !matches!(mode & S_IFMT, S_IFCHR | S_IFBLK) {
            return Ok(0);
        }
        let extra = self.geometry(ino)?.extra;
        let node = self.node(ino)?;
        Ok(decode_rdev([
            word(node, ADDR_WORD + extra),
            word(node, ADDR_WORD + extra + 1),
        ]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_numbers_round_trip_in_both_encodings() {
        // makedev(8, 1): old encoding; makedev(259, 70000): new.
        let small = (1 & 0xff) | (8 << 8);
        assert_eq!(encode_rdev(small), [0x0801, 0]);
        assert_eq!(decode_rdev(encode_rdev(small)), small);
        let (major, minor) = (259u32, 70_000u32);
        let big = (minor & 0xff) | (major << 8) | ((minor & !0xff) << 12);
        assert_eq!(split_dev(big), (major, minor));
        assert_eq!(encode_rdev(big), [0, big]);
        assert_eq!(decode_rdev(encode_rdev(big)), big);
    }

    #[test]
    fn the_virtual_clock_is_the_epoch_plus_virtual_time() {
        let t = VirtualClock::default().now(2_500_000_001);
        assert_eq!(
            t,
            Timestamp {
                secs: SIMULATION_EPOCH_SECS + 2,
                nsec: 500_000_001
            }
        );
    }
}
