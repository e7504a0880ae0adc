//! Random operation sequences checked against an in-memory model after every step, with
//! unmount + remount and power cuts (the device taken without a checkpoint: the last
//! checkpoint must come back), and fsck.f2fs on the final image of some cases.
//!
//! Each case mounts with one of three configurations: the kernel defaults (in-place
//! updates for small fsync writebacks and for cold files), pure LFS (no in-place update),
//! and `F2FS_IPU_FORCE` (every overwrite in place). Idle periods run background cleaning
//! and periodic checkpoints. A block overwritten in place reaches the disk before any
//! checkpoint or fsync, so after a power cut such a page may show any content written to
//! it since the durable state (as on the kernel); everything else must be exact.
//!
//! Symlinks (short, and long enough for a data block) and extended attributes of files
//! (in the 200-byte inline area: ENOSPC beyond) are part of the sequences: a symlink is
//! durable at a checkpoint, a file's xattrs at a checkpoint or at its fsync.

mod common;

use std::collections::BTreeMap;

use common::*;
use flashstack_block::{BlockDevice, BlockError, Completion, Hints, Payload};
use flashstack_f2fs::{
    mkfs, F2fs, F2fsConfig, FsError, IpuPolicy, MemDevice, MkfsOptions, WriteHint, XattrMode,
};
use flashstack_sim::Nanos;
use proptest::prelude::*;

const DIRS: [&str; 4] = ["", "/a", "/b", "/a/c"];
const NAMES: [&str; 7] = [
    "f",
    "g.db",
    "h.mp4",
    "a-rather-long-file-name-spanning-several-slots",
    "a",
    "b",
    "c",
];
/// Offsets reaching every level of the node tree: inode, direct, indirect, second
/// indirect and double-indirect addresses.
const OFFSETS: [u64; 10] = [
    0,
    1,
    3000,
    4095,
    4096 * 2 + 7,
    4096 * 900,
    4096 * 3100,
    4096 * 1_040_000,
    4096 * 2_100_000,
    3488,
];

#[derive(Clone, Debug)]
enum Op {
    Create(usize),
    Mkdir(usize),
    Write(usize, usize, usize, u8),
    /// 64 pages at 256 KiB × slot: enough traffic to make a small volume clean.
    WriteBig(usize, usize, u8),
    Truncate(usize, usize),
    Unlink(usize),
    Rmdir(usize),
    Rename(usize, usize),
    Link(usize, usize),
    Fsync(usize),
    /// Page-cache writeback of whole pages (path, first page slot, pages, seed), as an
    /// fsync's writeback (then the fsync) or a background one.
    WriteHinted(usize, usize, u64, u8, bool),
    /// The device idle for this many seconds: background cleaning, periodic checkpoint.
    Idle(u64),
    Sync,
    Remount,
    PowerCut,
    /// Power fails after this many more block writes, during the next operation.
    CutDuring(u32, Box<Op>),
    /// A symlink at the path to one of [`TARGETS`].
    Symlink(usize, usize),
    /// Sets xattr [`XATTR_NAMES`]`[name]` of a file to `len` bytes of `seed`.
    SetXattr(usize, usize, usize, u8),
    RemoveXattr(usize, usize),
    /// A small overwrite (MedFS's case): `len` bytes of `seed` at byte `within` of page
    /// `page` of the file at the path.
    SmallWrite(usize, u64, u16, u16, u8),
    /// Operations one after the other, as one (a cut during it may fall in any).
    Seq(Vec<Op>),
}

/// Symlink targets: inline, and one long enough to need a data block.
fn target(i: usize) -> Vec<u8> {
    match i {
        0 => b"f".to_vec(),
        1 => b"../a/g.db".to_vec(),
        _ => "/long-directory-name".repeat(180).into_bytes(),
    }
}

const XATTR_NAMES: [&str; 4] = ["user.a", "user.bb", "trusted.c", "security.selinux"];

/// The inline xattr area: header, entries padded to 4 bytes, the zero word.
fn xattrs_fit(list: &[(Vec<u8>, Vec<u8>)]) -> bool {
    let entries: usize = list
        .iter()
        .map(|(n, v)| {
            let suffix = n.len() - n.iter().position(|&b| b == b'.').unwrap() - 1;
            (4 + suffix + v.len() + 3) & !3
        })
        .sum();
    24 + entries + 4 <= 200
}

fn path(i: usize) -> String {
    let (d, n) = (i / NAMES.len() % DIRS.len(), i % NAMES.len());
    format!("{}/{}", DIRS[d], NAMES[n])
}

const PATHS: usize = DIRS.len() * NAMES.len();

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => simple_op(),
        1 => (0u32..24, simple_op()).prop_map(|(n, o)| Op::CutDuring(n, Box::new(o))),
    ]
}

fn simple_op() -> impl Strategy<Value = Op> {
    let p = 0..PATHS;
    prop_oneof![
        4 => p.clone().prop_map(Op::Create),
        2 => p.clone().prop_map(Op::Mkdir),
        6 => (p.clone(), 0..OFFSETS.len(), 0usize..10_000, any::<u8>())
            .prop_map(|(a, o, l, s)| Op::Write(a, o, l, s)),
        2 => (p.clone(), 0..OFFSETS.len()).prop_map(|(a, o)| Op::Truncate(a, o)),
        2 => p.clone().prop_map(Op::Unlink),
        1 => p.clone().prop_map(Op::Rmdir),
        2 => (p.clone(), p.clone()).prop_map(|(a, b)| Op::Rename(a, b)),
        1 => (p.clone(), p).prop_map(|(a, b)| Op::Link(a, b)),
        3 => (0..PATHS).prop_map(Op::Fsync),
        3 => hinted(0..PATHS),
        1 => idle(),
        1 => Just(Op::Sync),
        1 => Just(Op::Remount),
        1 => Just(Op::PowerCut),
        4 => (0..NAMES.len(), 0..OFFSETS.len(), 0usize..10_000, any::<u8>())
            .prop_map(|(a, o, l, s)| Op::Write(a, o, l, s)),
        3 => (0..NAMES.len()).prop_map(Op::Create),
        2 => (0..PATHS, 0usize..3).prop_map(|(p, t)| Op::Symlink(p, t)),
        3 => (0..PATHS, 0..XATTR_NAMES.len(), 0usize..90, any::<u8>())
            .prop_map(|(p, n, l, s)| Op::SetXattr(p, n, l, s)),
        1 => (0..PATHS, 0..XATTR_NAMES.len()).prop_map(|(p, n)| Op::RemoveXattr(p, n)),
    ]
}

/// Page slots for hinted writes: the inode's addresses, a direct node, an indirect one.
const PAGE_SLOTS: [u64; 4] = [0, 2, 950, 2100];

fn hinted(paths: std::ops::Range<usize>) -> impl Strategy<Value = Op> {
    (
        paths,
        0..PAGE_SLOTS.len(),
        1u64..20,
        any::<u8>(),
        any::<bool>(),
    )
        .prop_map(|(p, slot, n, seed, fsync)| Op::WriteHinted(p, slot, n, seed, fsync))
}

/// Idle periods: too short to be idle, one GC wake, past the checkpoint interval, long.
fn idle() -> impl Strategy<Value = Op> {
    prop_oneof![Just(3u64), Just(40), Just(70), Just(400)].prop_map(Op::Idle)
}

/// The configurations a case runs under.
fn config() -> impl Strategy<Value = F2fsConfig> {
    let force = F2fsConfig {
        ipu_policy: IpuPolicy {
            force: true,
            ..IpuPolicy::OFF
        },
        ..F2fsConfig::default()
    };
    prop_oneof![
        Just(F2fsConfig::default()),
        Just(F2fsConfig::pure_lfs()),
        Just(force)
    ]
}

/// A sparse file: whole pages by index, and the size.
#[derive(Clone, Debug, Default, PartialEq)]
struct MFile {
    size: u64,
    pages: BTreeMap<u64, Vec<u8>>,
    /// Extended attributes in list order: full name, value.
    xattrs: Vec<(Vec<u8>, Vec<u8>)>,
}

impl MFile {
    fn write(&mut self, offset: u64, data: &[u8]) {
        for (i, &b) in data.iter().enumerate() {
            let pos = offset + i as u64;
            let page = self
                .pages
                .entry(pos / 4096)
                .or_insert_with(|| vec![0; 4096]);
            page[(pos % 4096) as usize] = b;
        }
        if !data.is_empty() {
            self.size = self.size.max(offset + data.len() as u64);
        }
    }

    fn truncate(&mut self, size: u64) {
        if size < self.size {
            self.pages.retain(|&i, _| i < size.div_ceil(4096));
            if let Some(p) = self.pages.get_mut(&(size / 4096)) {
                p[(size % 4096) as usize..].fill(0);
            }
        }
        self.size = size;
    }
}

#[derive(Clone, Debug, PartialEq)]
enum MEntry {
    File(usize),
    Dir(usize),
    /// A symlink: its id and target.
    Symlink(usize, Vec<u8>),
}

impl MEntry {
    fn is_dir(&self) -> bool {
        matches!(self, MEntry::Dir(_))
    }
}

#[derive(Clone, Debug, Default)]
struct Model {
    entries: BTreeMap<String, MEntry>,
    files: BTreeMap<usize, MFile>,
    next: usize,
}

const ENOENT: i32 = 2;
const EEXIST: i32 = 17;
const ENOTDIR: i32 = 20;
const EISDIR: i32 = 21;
const EINVAL: i32 = 22;
const ENOTEMPTY: i32 = 39;
const ENOSPC: i32 = 28;
const ENODATA: i32 = 61;
const EOPNOTSUPP: i32 = 95;

fn parent(p: &str) -> &str {
    &p[..p.rfind('/').unwrap()]
}

impl Model {
    /// Resolves a path as the file system walks it.
    fn lookup(&self, p: &str) -> Result<Option<&MEntry>, i32> {
        let mut cur = String::new();
        let parts: Vec<&str> = p.split('/').filter(|s| !s.is_empty()).collect();
        for (i, part) in parts.iter().enumerate() {
            if i > 0 && !self.entries.get(&cur).is_some_and(MEntry::is_dir) {
                return Err(ENOTDIR);
            }
            cur = format!("{cur}/{part}");
            if !self.entries.contains_key(&cur) {
                return Err(ENOENT);
            }
        }
        Ok(self.entries.get(&cur))
    }

    fn parent_ok(&self, p: &str) -> Result<(), i32> {
        let dir = parent(p);
        if dir.is_empty() {
            return Ok(());
        }
        match self.lookup(dir)? {
            Some(MEntry::Dir(_)) => Ok(()),
            _ => Err(ENOTDIR),
        }
    }

    fn children(&self, dir: &str) -> Vec<String> {
        self.entries
            .keys()
            .filter(|k| parent(k) == dir)
            .cloned()
            .collect()
    }

    fn add(&mut self, p: &str, dir: bool) -> Result<(), i32> {
        self.parent_ok(p)?;
        if self.entries.contains_key(p) {
            return Err(EEXIST);
        }
        self.next += 1;
        let e = if dir {
            MEntry::Dir(self.next)
        } else {
            self.files.insert(self.next, MFile::default());
            MEntry::File(self.next)
        };
        self.entries.insert(p.to_string(), e);
        Ok(())
    }

    fn file(&self, p: &str) -> Result<usize, i32> {
        match self.lookup(p)? {
            Some(MEntry::File(id)) => Ok(*id),
            Some(MEntry::Symlink(..)) => Err(EINVAL),
            _ => Err(EISDIR),
        }
    }

    fn symlink(&mut self, p: &str, target: Vec<u8>) -> Result<(), i32> {
        self.parent_ok(p)?;
        if self.entries.contains_key(p) {
            return Err(EEXIST);
        }
        self.next += 1;
        self.entries
            .insert(p.to_string(), MEntry::Symlink(self.next, target));
        Ok(())
    }

    fn drop_name(&mut self, p: &str) {
        if let Some(MEntry::File(id)) = self.entries.remove(p) {
            if !self.entries.values().any(|e| *e == MEntry::File(id)) {
                self.files.remove(&id);
            }
        }
    }

    fn unlink(&mut self, p: &str) -> Result<(), i32> {
        self.parent_ok(p)?;
        match self.entries.get(p) {
            None => Err(ENOENT),
            Some(MEntry::Dir(_)) => Err(EISDIR),
            Some(_) => {
                self.drop_name(p);
                Ok(())
            }
        }
    }

    fn rmdir(&mut self, p: &str) -> Result<(), i32> {
        self.parent_ok(p)?;
        match self.entries.get(p) {
            None => Err(ENOENT),
            Some(e) if !e.is_dir() => Err(ENOTDIR),
            Some(_) if !self.children(p).is_empty() => Err(ENOTEMPTY),
            Some(_) => {
                self.entries.remove(p);
                Ok(())
            }
        }
    }

    fn rename(&mut self, a: &str, b: &str) -> Result<(), i32> {
        self.parent_ok(a)?;
        self.parent_ok(b)?;
        let src = self.entries.get(a).cloned().ok_or(ENOENT)?;
        if src.is_dir() && (b.starts_with(&format!("{a}/"))) {
            return Err(EINVAL);
        }
        if let Some(dst) = self.entries.get(b).cloned() {
            if a == b || dst == src {
                return Ok(());
            }
            match (&src, &dst) {
                (MEntry::Dir(_), d) if !d.is_dir() => return Err(ENOTDIR),
                (s, MEntry::Dir(_)) if !s.is_dir() => return Err(EISDIR),
                (MEntry::Dir(_), MEntry::Dir(_)) if !self.children(b).is_empty() => {
                    return Err(ENOTEMPTY)
                }
                _ => {}
            }
            if dst.is_dir() {
                self.entries.remove(b);
            } else {
                self.drop_name(b);
            }
        }
        let moved: Vec<(String, MEntry)> = self
            .entries
            .iter()
            .filter(|(k, _)| *k == a || k.starts_with(&format!("{a}/")))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (k, v) in moved {
            self.entries.remove(&k);
            self.entries.insert(format!("{b}{}", &k[a.len()..]), v);
        }
        Ok(())
    }

    fn link(&mut self, a: &str, b: &str) -> Result<(), i32> {
        let id = match self.lookup(a)? {
            Some(MEntry::File(id)) => Some(*id),
            Some(MEntry::Symlink(..)) => None,
            _ => return Err(EISDIR),
        };
        self.parent_ok(b)?;
        // A symlink keeps one link (fsck.f2fs's rule).
        let id = id.ok_or(EOPNOTSUPP)?;
        if self.entries.contains_key(b) {
            return Err(EEXIST);
        }
        self.entries.insert(b.to_string(), MEntry::File(id));
        Ok(())
    }
}

/// A RAM disk whose writes stop reaching the media after a budget: later writes stay
/// readable (as in a volatile cache) until the power cut drops them.
struct CutDevice {
    media: MemDevice,
    budget_blocks: Option<u32>,
    /// Blocks written so far (to find every cut point of an operation).
    written_blocks: u64,
    cache: MemDevice,
    cached: std::collections::BTreeSet<u64>,
}

impl CutDevice {
    fn new(media: MemDevice) -> CutDevice {
        let bytes = media.capacity_lbas() * 4096;
        CutDevice {
            media,
            budget_blocks: None,
            written_blocks: 0,
            cache: MemDevice::new(bytes),
            cached: Default::default(),
        }
    }
}

impl BlockDevice for CutDevice {
    fn capacity_lbas(&self) -> u64 {
        self.media.capacity_lbas()
    }

    fn write(
        &mut self,
        at: Nanos,
        lba: u64,
        p: Payload<'_>,
        h: Hints,
    ) -> Result<Completion, BlockError> {
        let Payload::Bytes(bytes) = p else {
            return self.media.write(at, lba, p, h);
        };
        for (i, block) in bytes.chunks(4096).enumerate() {
            let target = lba + i as u64;
            self.written_blocks += 1;
            let persist = match &mut self.budget_blocks {
                None => true,
                Some(0) => false,
                Some(n) => {
                    *n -= 1;
                    true
                }
            };
            if persist && !self.cached.contains(&target) {
                self.media.write(at, target, Payload::Bytes(block), h)?;
            } else {
                self.cached.insert(target);
                self.cache.write(at, target, Payload::Bytes(block), h)?;
            }
        }
        Ok(Completion {
            start_ns: at,
            complete_ns: at,
        })
    }

    fn read(
        &mut self,
        at: Nanos,
        lba: u64,
        count: u32,
        out: Option<&mut [u8]>,
    ) -> Result<Completion, BlockError> {
        let Some(out) = out else {
            return self.media.read(at, lba, count, None);
        };
        for (i, dst) in out.chunks_mut(4096).enumerate() {
            let target = lba + i as u64;
            let src = if self.cached.contains(&target) {
                &mut self.cache
            } else {
                &mut self.media
            };
            src.read(at, target, 1, Some(dst))?;
        }
        Ok(Completion {
            start_ns: at,
            complete_ns: at,
        })
    }

    fn trim(&mut self, at: Nanos, lba: u64, count: u32) -> Result<Completion, BlockError> {
        if self.budget_blocks != Some(0) {
            return self.media.trim(at, lba, count);
        }
        // Past the cut: the discard never reaches the media.
        let zeros = vec![0u8; 4096];
        for target in lba..lba + count as u64 {
            self.cached.insert(target);
            self.cache
                .write(at, target, Payload::Bytes(&zeros), Hints::default())?;
        }
        Ok(Completion {
            start_ns: at,
            complete_ns: at,
        })
    }

    fn flush(&mut self, at: Nanos) -> Result<Completion, BlockError> {
        self.media.flush(at)
    }
}

struct Harness {
    fs: Option<F2fs<CutDevice>>,
    cfg: F2fsConfig,
    /// Contents a page may show after a power cut besides the durable one: what was
    /// written over it in place since (file id, page index).
    in_place: BTreeMap<(usize, u64), Vec<Vec<u8>>>,
    /// What the operation under way wrote in place, kept when a checkpoint in the same
    /// operation clears `in_place` (for the state before it, if that checkpoint is torn).
    op_in_place: BTreeMap<(usize, u64), Vec<Vec<u8>>>,
    /// Checking after a power cut: in-place contents are accepted (and adopted).
    lenient: bool,
    /// Over all sessions: blocks written in place, background cleanings, background
    /// checkpoints, blocks written by SSR (printed with F2FS_MODEL_TRACE, to see what a
    /// run exercised), deltas stored inline (MedFS).
    totals: [u64; 5],
    /// Run fsck.f2fs on every power-cut image too.
    fsck_crashes: bool,
    model: Model,
    durable: Model,
}

fn errno<T>(r: Result<T, FsError>) -> Result<T, i32> {
    r.map_err(|e| e.errno())
}

impl Harness {
    fn fs(&mut self) -> &mut F2fs<CutDevice> {
        self.fs.as_mut().unwrap()
    }

    fn apply(&mut self, op: &Op) -> Result<(), TestCaseError> {
        let before = self.fs().metrics().checkpoints;
        if !matches!(op, Op::CutDuring(..)) {
            self.op_in_place.clear();
        }
        match op {
            Op::Create(p) => self.both(
                |fs, p| errno(fs.create(p)).map(drop),
                |m, p| m.add(p, false),
                &path(*p),
            )?,
            Op::SmallWrite(p, page, within, len, seed) => {
                let offset = *page * 4096 + u64::from(*within);
                self.write_len(&path(*p), offset, *len as usize, *seed)?
            }
            Op::Mkdir(p) => self.both(
                |fs, p| errno(fs.mkdir(p)).map(drop),
                |m, p| m.add(p, true),
                &path(*p),
            )?,
            Op::Write(p, o, l, s) => self.write(&path(*p), OFFSETS[*o], *l, *s)?,
            Op::WriteBig(p, slot, s) => {
                self.write_len(&path(*p), *slot as u64 * BIG_BYTES as u64, BIG_BYTES, *s)?
            }
            Op::Truncate(p, o) => self.truncate(&path(*p), OFFSETS[*o])?,
            Op::Unlink(p) => self.both(|fs, p| errno(fs.unlink(p)), Model::unlink, &path(*p))?,
            Op::Rmdir(p) => self.both(|fs, p| errno(fs.rmdir(p)), Model::rmdir, &path(*p))?,
            Op::Rename(a, b) => {
                let (a, b) = (path(*a), path(*b));
                let got = errno(self.fs().rename(&a, &b));
                prop_assert_eq!(got, self.model.rename(&a, &b), "rename {} {}", a, b);
            }
            Op::Link(a, b) => {
                let (a, b) = (path(*a), path(*b));
                let got = errno(self.fs().link(&a, &b));
                prop_assert_eq!(got, self.model.link(&a, &b), "link {} {}", a, b);
            }
            Op::Fsync(p) => return self.fsync(&path(*p)),
            Op::Symlink(p, t) => {
                let t = target(*t);
                let t2 = t.clone();
                self.both(
                    |fs, p| errno(fs.symlink(p, &t)).map(drop),
                    |m, p| m.symlink(p, t2),
                    &path(*p),
                )?
            }
            Op::SetXattr(p, n, len, seed) => {
                let value: Vec<u8> = (0..*len).map(|i| (i as u8) ^ seed).collect();
                self.xattr(&path(*p), XATTR_NAMES[*n], Some(value))?
            }
            Op::RemoveXattr(p, n) => self.xattr(&path(*p), XATTR_NAMES[*n], None)?,
            Op::WriteHinted(p, slot, n, seed, fsync) => {
                self.write_hinted(&path(*p), PAGE_SLOTS[*slot], *n, *seed, *fsync)?;
                if *fsync {
                    // Cleaning at the end of the writeback may have checkpointed: that
                    // made everything durable before the fsync counts its own.
                    if self.fs().metrics().checkpoints != before {
                        self.made_durable();
                    }
                    return self.fsync(&path(*p));
                }
            }
            Op::Idle(secs) => {
                let until = self.fs().now_ns() + secs * 1_000_000_000;
                self.fs().idle(until).unwrap();
            }
            Op::Sync => self.fs().sync().unwrap(),
            Op::CutDuring(n, inner) => return self.cut_during(*n, inner),
            Op::Seq(ops) => {
                for o in ops {
                    self.apply(o)?;
                }
                return Ok(());
            }
            Op::Remount => {
                let dev = self.take_fs().unmount().unwrap();
                self.mount(dev.media);
                self.made_durable();
                return Ok(());
            }
            Op::PowerCut => {
                let dev = self.take_fs().into_device().media;
                if self.fsck_crashes {
                    self.fsck_crash_image(&dev, "the image at a power cut, before recovery");
                }
                self.mount(dev);
                // Ids are never reused, even for things the cut took back.
                let next = self.model.next;
                self.model = self.durable.clone();
                self.model.next = next;
                self.check_after_cut()?;
                CUTS.with(|c| c.set(c.get() + 1));
                return Ok(());
            }
        }
        if self.fs().metrics().checkpoints != before {
            self.made_durable();
        }
        Ok(())
    }

    fn mount(&mut self, media: MemDevice) {
        let dev = CutDevice::new(media);
        self.fs = Some(F2fs::mount_with(dev, 0, self.cfg.clone()).unwrap());
    }

    fn take_fs(&mut self) -> F2fs<CutDevice> {
        self.count_session();
        self.fs.take().unwrap()
    }

    /// Adds the current session's counters to the totals (before it ends).
    fn count_session(&mut self) {
        if let Some(fs) = &self.fs {
            let m = fs.metrics();
            let add = [
                m.ipu_data_blocks,
                m.bg_gc_cycles,
                m.bg_checkpoints,
                m.ssr_blocks(),
                m.delta.inline_stores,
            ];
            DELTAS.with(|c| c.set(c.get() + m.delta.inline_stores));
            DCM.with(|c| {
                let mut t = c.get();
                t[0] += m.delta.dcm_stores;
                t[1] += m.delta.dcm_evictions;
                t[2] += m.delta.bgres_restored_files;
                c.set(t)
            });
            CARRIED.with(|c| c.set(c.get() + m.delta.dcm_carried_replayed));
            if std::env::var("F2FS_MODEL_TRACE").is_ok() && !m.delta.is_empty() {
                eprintln!("session deltas: {:?}", m.delta);
            }
            for (t, a) in self.totals.iter_mut().zip(add) {
                *t += a;
            }
        }
    }

    /// A checkpoint: everything in the model is durable.
    fn made_durable(&mut self) {
        self.durable = self.model.clone();
        self.in_place.clear();
    }

    /// After recovery from a cut: the model (the durable state) must match, pages
    /// written in place since may show their newer contents; what is found is durable.
    fn check_after_cut(&mut self) -> Result<(), TestCaseError> {
        self.lenient = true;
        let r = self.check();
        self.lenient = false;
        r?;
        self.made_durable();
        Ok(())
    }

    /// Records the pages of file `id` in `first..=last` that an operation which wrote in
    /// place changed (`old`: their contents before, for pages that existed).
    fn note_in_place(&mut self, id: usize, old: &[(u64, Vec<u8>)], ipu_before: u64) {
        if self.fs().metrics().ipu_data_blocks == ipu_before {
            return;
        }
        let pages = &self.model.files[&id].pages;
        for (index, before) in old {
            if let Some(now) = pages.get(index).filter(|now| *now != before) {
                let alts = self.in_place.entry((id, *index)).or_default();
                alts.push(now.clone());
                let alts = self.op_in_place.entry((id, *index)).or_default();
                alts.push(now.clone());
            }
        }
    }

    fn pages_of(&self, id: usize, first: u64, last: u64) -> Vec<(u64, Vec<u8>)> {
        self.model.files[&id]
            .pages
            .range(first..=last)
            .map(|(i, p)| (*i, p.clone()))
            .collect()
    }

    /// Runs `op` with the power failing after `n` block writes; what comes back must be
    /// what was durable before the operation or what it made durable.
    fn cut_during(&mut self, n: u32, op: &Op) -> Result<(), TestCaseError> {
        if matches!(op, Op::Remount | Op::PowerCut | Op::CutDuring(..)) {
            return Ok(());
        }
        let before = self.durable.clone();
        let before_in_place = self.in_place.clone();
        self.fs().device_mut().budget_blocks = Some(n);
        self.apply(op)?;
        let after = self.durable.clone();
        let next = self.model.next;
        let dev = self.take_fs().into_device().media;
        if self.fsck_crashes {
            self.fsck_crash_image(&dev, "the image torn by a power cut");
        }
        self.mount(dev);
        self.model = after.clone();
        if self.check_after_cut().is_err() {
            // The checkpoint the operation counted (if any) may not have reached the
            // media: against the state before it, every page written in place since that
            // state (before or during the operation) may show its newer contents.
            self.model = before.clone();
            self.in_place = before_in_place;
            for (page, alts) in std::mem::take(&mut self.op_in_place) {
                self.in_place.entry(page).or_default().extend(alts);
            }
            self.check_after_cut()?;
        }
        self.model.next = next;
        CUTS.with(|c| c.set(c.get() + 1));
        Ok(())
    }

    /// fsck.f2fs on a crash image; with delta compression on, on a copy recovered by our
    /// mount and with every delta folded into its base (`restore_deltas`), since fsck
    /// reads an inline delta zone as block addresses.
    fn fsck_crash_image(&self, dev: &MemDevice, what: &str) {
        if !self.cfg.delta.enabled() {
            return fsck_image(dev, what);
        }
        let mut fs = F2fs::mount_with(dev.clone(), 0, self.cfg.clone()).unwrap();
        fs.restore_deltas().unwrap();
        assert_no_deltas(&mut fs);
        fsck_image(
            &fs.unmount().unwrap(),
            &format!("{what}, recovered and its deltas restored"),
        );
    }

    fn both(
        &mut self,
        f: impl FnOnce(&mut F2fs<CutDevice>, &str) -> Result<(), i32>,
        m: impl FnOnce(&mut Model, &str) -> Result<(), i32>,
        p: &str,
    ) -> Result<(), TestCaseError> {
        let got = f(self.fs(), p);
        prop_assert_eq!(got, m(&mut self.model, p), "on {}", p);
        Ok(())
    }

    /// fsync: a checkpoint makes everything durable; roll-forward only this file (its
    /// content, and its name if it is new since the last checkpoint).
    fn fsync(&mut self, p: &str) -> Result<(), TestCaseError> {
        let before = self.fs().metrics().checkpoints;
        // Directories may be fsync'd too (they checkpoint).
        let expect = match self.model.lookup(p) {
            Ok(Some(MEntry::File(id))) => Ok(Some(*id)),
            Ok(_) => Ok(None),
            Err(e) => Err(e),
        };
        let got = errno(self.fs().lookup(p)).and_then(|ino| errno(self.fs().fsync(ino)));
        prop_assert_eq!(got, expect.map(drop), "fsync {}", p);
        if self.fs().metrics().checkpoints != before {
            self.durable = self.model.clone();
            return Ok(());
        }
        let Ok(Some(id)) = expect else { return Ok(()) };
        self.durable.files.insert(id, self.model.files[&id].clone());
        self.in_place.retain(|(file, _), _| *file != id);
        if self
            .durable
            .entries
            .values()
            .any(|e| *e == MEntry::File(id))
        {
            return Ok(());
        }
        let dir = parent(p);
        let durable_dir = match self.model.entries.get(dir) {
            None => String::new(),
            Some(d) => self
                .durable
                .entries
                .iter()
                .find(|(_, e)| *e == d)
                .map(|(k, _)| k.clone())
                .expect("the parent of a replayed file is checkpointed"),
        };
        let name = &p[dir.len() + 1..];
        self.durable
            .entries
            .insert(format!("{durable_dir}/{name}"), MEntry::File(id));
        Ok(())
    }

    fn write(&mut self, p: &str, offset: u64, len: usize, seed: u8) -> Result<(), TestCaseError> {
        self.write_len(p, offset, len, seed)
    }

    /// Sets (`Some`) or removes an xattr of the file at `p` (directories and symlinks are
    /// left alone: the model keeps xattrs of files only).
    fn xattr(&mut self, p: &str, name: &str, value: Option<Vec<u8>>) -> Result<(), TestCaseError> {
        let id = match self.model.lookup(p) {
            Ok(Some(MEntry::File(id))) => *id,
            Err(e) => {
                prop_assert_eq!(errno(self.fs().lookup(p)).map(drop), Err(e), "{}", p);
                return Ok(());
            }
            _ => return Ok(()),
        };
        let ino = self.fs().lookup(p).unwrap();
        let mut list = self.model.files[&id].xattrs.clone();
        let at = list.iter().position(|(n, _)| n == name.as_bytes());
        let (got, expect) = match value {
            Some(value) => {
                if let Some(k) = at {
                    list.remove(k);
                }
                list.push((name.as_bytes().to_vec(), value.clone()));
                let expect = if xattrs_fit(&list) {
                    Ok(())
                } else {
                    Err(ENOSPC)
                };
                let got = errno(
                    self.fs()
                        .setxattr(ino, name.as_bytes(), &value, XattrMode::Set),
                );
                (got, expect)
            }
            None => {
                let expect = match at {
                    Some(k) => {
                        list.remove(k);
                        Ok(())
                    }
                    None => Err(ENODATA),
                };
                (errno(self.fs().removexattr(ino, name.as_bytes())), expect)
            }
        };
        prop_assert_eq!(got, expect, "xattr {} of {}", name, p);
        if expect.is_ok() {
            self.model.files.get_mut(&id).unwrap().xattrs = list;
        }
        Ok(())
    }

    fn write_len(
        &mut self,
        p: &str,
        offset: u64,
        len: usize,
        seed: u8,
    ) -> Result<(), TestCaseError> {
        let data: Vec<u8> = (0..len).map(|i| (i as u8).wrapping_mul(7) ^ seed).collect();
        let expect = self.model.file(p);
        let ipu = self.fs().metrics().ipu_data_blocks;
        let got =
            errno(self.fs().lookup(p)).and_then(|ino| errno(self.fs().write(ino, offset, &data)));
        prop_assert_eq!(got, expect.map(drop), "write {}", p);
        if let Ok(id) = expect {
            let end = (offset + len as u64).div_ceil(4096);
            let old = self.pages_of(id, offset / 4096, end);
            self.model.files.get_mut(&id).unwrap().write(offset, &data);
            self.note_in_place(id, &old, ipu);
        }
        Ok(())
    }

    /// Whole pages from `first`, the last one ending the file part-way.
    fn write_hinted(
        &mut self,
        p: &str,
        first: u64,
        n: u64,
        seed: u8,
        fsync: bool,
    ) -> Result<(), TestCaseError> {
        let expect = self.model.file(p);
        let end = (first + n) * 4096 - seed as u64 * 8;
        let size = expect
            .as_ref()
            .map_or(0, |id| self.model.files[id].size)
            .max(end);
        let mut bytes: Vec<u8> = (0..n * 4096)
            .map(|i| (i as u8).wrapping_mul(13) ^ seed)
            .collect();
        let valid = (size.min((first + n) * 4096) - first * 4096) as usize;
        bytes[valid..].fill(0);
        let pages: Vec<[u8; 4096]> = bytes.chunks(4096).map(|c| c.try_into().unwrap()).collect();
        let refs: Vec<&[u8; 4096]> = pages.iter().collect();
        let hint = WriteHint {
            inode_dirty_pages: n,
            fsync,
        };
        let ipu = self.fs().metrics().ipu_data_blocks;
        let got = errno(self.fs().lookup(p))
            .and_then(|ino| errno(self.fs().write_pages_hinted(ino, first, &refs, size, hint)));
        prop_assert_eq!(got, expect.map(drop), "hinted write {}", p);
        if let Ok(id) = expect {
            let old = self.pages_of(id, first, first + n);
            let f = self.model.files.get_mut(&id).unwrap();
            for (i, page) in pages.iter().enumerate() {
                f.pages.insert(first + i as u64, page.to_vec());
            }
            f.size = f.size.max(size);
            self.note_in_place(id, &old, ipu);
        }
        Ok(())
    }

    fn truncate(&mut self, p: &str, size: u64) -> Result<(), TestCaseError> {
        let expect = self.model.file(p);
        let ipu = self.fs().metrics().ipu_data_blocks;
        let got = errno(self.fs().lookup(p)).and_then(|ino| errno(self.fs().truncate(ino, size)));
        prop_assert_eq!(got, expect.map(drop), "truncate {}", p);
        if let Ok(id) = expect {
            let old = self.pages_of(id, size / 4096, size / 4096);
            self.model.files.get_mut(&id).unwrap().truncate(size);
            self.note_in_place(id, &old, ipu);
        }
        Ok(())
    }

    /// Every name, directory listing and file content agrees with the model.
    fn check(&mut self) -> Result<(), TestCaseError> {
        let model = self.model.clone();
        for dir in std::iter::once("").chain(
            model
                .entries
                .iter()
                .filter(|(_, e)| e.is_dir())
                .map(|(k, _)| k.as_str()),
        ) {
            let mut want: Vec<String> = model
                .children(dir)
                .iter()
                .map(|c| c[dir.len() + 1..].to_string())
                .collect();
            want.sort();
            let got: Vec<String> = self
                .fs()
                .readdir(if dir.is_empty() { "/" } else { dir })
                .unwrap()
                .into_iter()
                .map(|e| e.name)
                .collect();
            prop_assert_eq!(got, want, "readdir {}", dir);
        }
        for (p, e) in &model.entries {
            if let MEntry::Symlink(_, target) = e {
                prop_assert_eq!(&self.fs().readlink(p).unwrap(), target, "readlink {}", p);
            }
            let MEntry::File(id) = e else { continue };
            let f = &model.files[id];
            let ino = self.fs().lookup(p).unwrap();
            let names: Vec<Vec<u8>> = f.xattrs.iter().map(|(n, _)| n.clone()).collect();
            prop_assert_eq!(self.fs().listxattr(ino).unwrap(), names, "xattrs of {}", p);
            for (n, v) in &f.xattrs {
                prop_assert_eq!(
                    &self.fs().getxattr(ino, n).unwrap(),
                    v,
                    "{} of {}",
                    p,
                    n.len()
                );
            }
            prop_assert_eq!(
                self.fs().stat_ino(ino).unwrap().size_bytes,
                f.size,
                "size of {}",
                p
            );
            for (&index, page) in &f.pages {
                for probe in [index, index + 1] {
                    let start = probe * 4096;
                    if start >= f.size {
                        continue;
                    }
                    let got = self.fs().read(ino, start, 4096).unwrap();
                    let want_page = f
                        .pages
                        .get(&probe)
                        .cloned()
                        .unwrap_or_else(|| vec![0; 4096]);
                    let n = got.len();
                    if got[..] != want_page[..n] && self.adopt_in_place(*id, probe, &got) {
                        continue;
                    }
                    prop_assert_eq!(&got[..], &want_page[..n], "{} page {}", p, probe);
                }
                let _ = page;
            }
        }
        Ok(())
    }
}

impl Harness {
    /// After a cut: a page showing content written over it in place is accepted, and
    /// the model takes it.
    fn adopt_in_place(&mut self, id: usize, index: u64, got: &[u8]) -> bool {
        if !self.lenient {
            return false;
        }
        let Some(mut alt) = self
            .in_place
            .get(&(id, index))
            .and_then(|alts| alts.iter().find(|a| a[..got.len()] == got[..]))
            .cloned()
        else {
            return false;
        };
        // Only what lies within the recovered size is taken: past it the page reads as
        // zeros when the file grows again, whatever the block written in place holds.
        alt[got.len()..].fill(0);
        let f = self.model.files.get_mut(&id).unwrap();
        f.pages.insert(index, alt);
        true
    }
}

/// After `restore_deltas`: no file reachable from the root holds an inline delta.
fn assert_no_deltas<D: BlockDevice>(fs: &mut F2fs<D>) {
    let mut dirs = vec![String::new()];
    while let Some(dir) = dirs.pop() {
        let listing = fs.readdir(if dir.is_empty() { "/" } else { &dir }).unwrap();
        for e in listing
            .into_iter()
            .filter(|e| e.name != "." && e.name != "..")
        {
            let p = format!("{dir}/{}", e.name);
            match e.kind {
                flashstack_f2fs::FileKind::Dir => dirs.push(p),
                _ => {
                    assert_eq!(fs.inline_deltas(e.ino).unwrap(), vec![], "{p}");
                    assert_eq!(fs.dcm_pseudo_file(e.ino).unwrap(), None, "{p}");
                }
            }
        }
    }
}

fn fsck_image(dev: &MemDevice, what: &str) {
    // Tests run in parallel threads of one process: every image gets its own directory.
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    if let Some(bin) = tool("fsck.f2fs") {
        let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = TempDir::new(&format!("model-{n}"));
        let image = dir.file("image");
        dev.export(&image).unwrap();
        assert_clean(&fsck(&bin, &image), what);
    }
}

const BIG_BYTES: usize = 64 * 4096;

/// Sequences heavy in 256 KiB writes over a few files, for a 64 MiB volume (16 MiB of
/// user space) that has to clean.
fn cleaning_op() -> impl Strategy<Value = Op> {
    let big = (0..NAMES.len(), 0usize..5, any::<u8>()).prop_map(|(p, s, x)| Op::WriteBig(p, s, x));
    prop_oneof![
        30 => big.clone(),
        4 => hinted(0..NAMES.len()),
        3 => idle(),
        1 => (0u32..64, idle()).prop_map(|(n, o)| Op::CutDuring(n, Box::new(o))),
        2 => (0..NAMES.len()).prop_map(Op::Create),
        1 => (0..NAMES.len()).prop_map(Op::Unlink),
        1 => (0..NAMES.len(), 0..OFFSETS.len()).prop_map(|(a, o)| Op::Truncate(a, o)),
        1 => (0..NAMES.len()).prop_map(Op::Fsync),
        1 => (0u32..64, big).prop_map(|(n, o)| Op::CutDuring(n, Box::new(o))),
    ]
}

/// Sequences for SSR: the cleaning mix with more checkpoints (so the holes overwrites
/// leave become reusable) and fsyncs (roll-forward chains written into recycled holes).
fn ssr_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => cleaning_op(),
        2 => Just(Op::Sync),
        1 => (0..NAMES.len()).prop_map(Op::Fsync),
        1 => Just(Op::PowerCut),
    ]
}

/// SSR-heavy configurations: the kernel defaults, and without background cleaning (which
/// would otherwise empty the dirty segments SSR recycles).
fn ssr_config() -> impl Strategy<Value = F2fsConfig> {
    prop_oneof![
        Just(F2fsConfig::default()),
        Just(F2fsConfig {
            bg_gc: false,
            ..F2fsConfig::default()
        }),
    ]
}

fn run(ops: &[Op], fsck_at_end: bool, cfg: F2fsConfig) -> Result<(), TestCaseError> {
    run_on(ops, fsck_at_end, 128 * MIB, cfg)
}

/// A freshly formatted volume with "/a", "/b" and "/a/c" made.
fn harness(fsck_at_end: bool, bytes: u64, cfg: F2fsConfig) -> Result<Harness, TestCaseError> {
    let mut dev = MemDevice::new(bytes);
    mkfs(&mut dev, &MkfsOptions::default()).unwrap();
    let mut h = Harness {
        fs: Some(F2fs::mount_with(CutDevice::new(dev), 0, cfg.clone()).unwrap()),
        cfg,
        in_place: BTreeMap::new(),
        op_in_place: BTreeMap::new(),
        lenient: false,
        totals: [0; 5],
        model: Model::default(),
        durable: Model::default(),
        fsck_crashes: fsck_at_end,
    };
    // Most paths should be usable: start with the directories they live in.
    // "/a", "/b" and "/a/c".
    for p in [4, 5, NAMES.len() + 6] {
        h.apply(&Op::Mkdir(p))?;
    }
    Ok(h)
}

fn run_on(ops: &[Op], fsck_at_end: bool, bytes: u64, cfg: F2fsConfig) -> Result<(), TestCaseError> {
    let mut h = harness(fsck_at_end, bytes, cfg)?;
    for (i, op) in ops.iter().enumerate() {
        let r = h.apply(op).and_then(|_| h.check());
        if r.is_err() && std::env::var("F2FS_MODEL_TRACE").is_ok() {
            eprintln!("failed at op {i}: {op:?}");
        }
        r?;
    }
    let mut fs = h.take_fs();
    if fs.config().delta.enabled() {
        // An image holding deltas is not stock F2FS: fold them first (docs/medfs.md).
        fs.restore_deltas().unwrap();
        assert_no_deltas(&mut fs);
    }
    let dev = fs.unmount().unwrap().media;
    if std::env::var("F2FS_MODEL_TRACE").is_ok() {
        let [ipu, bg_gc, bg_cp, ssr, deltas] = h.totals;
        eprintln!(
            "totals: in-place {ipu} bg-cleaned {bg_gc} bg-checkpoints {bg_cp} ssr {ssr} deltas {deltas}"
        );
    }
    if fsck_at_end {
        fsck_image(&dev, "the image after a random sequence");
    }
    h.mount(dev);
    h.check()
}

thread_local! {
    /// Power cuts recovered from and checked on this thread (a proptest runs its cases on
    /// the test's own thread).
    static CUTS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Deltas stored inline on this thread (MedFS runs must store some).
    static DELTAS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// DCM deltas stored, DCI deltas evicted to DCM, files BGRes restored.
    static DCM: std::cell::Cell<[u64; 3]> = const { std::cell::Cell::new([0; 3]) };
    /// Owners' fsync'd copies whose carried DCM addresses roll-forward replayed.
    static CARRIED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Prints the test's crash-explore line (docs/testing.md, "Crash exploration").
fn report_cuts(test: &str) {
    let mut tally = flashstack_block::explore::Exploration::new(&format!("f2fs rw_model {test}"));
    for _ in 0..CUTS.with(|c| c.take()) {
        tally.cut();
    }
    tally.report();
}

#[test]
fn random_sequences_match_the_model() {
    proptest!(
        ProptestConfig { cases: 128, ..ProptestConfig::default() },
        |(ops in prop::collection::vec(op(), 1..60), cfg in config())| {
            run(&ops, false, cfg)?;
        }
    );
    report_cuts("random_sequences_match_the_model");
}

#[test]
fn random_sequences_pass_fsck() {
    proptest!(
        ProptestConfig { cases: 12, ..ProptestConfig::default() },
        |(ops in prop::collection::vec(op(), 1..80), cfg in config())| {
            run(&ops, true, cfg)?;
        }
    );
    report_cuts("random_sequences_pass_fsck");
}

#[test]
fn cleaning_under_random_sequences() {
    proptest!(
        ProptestConfig { cases: 4, ..ProptestConfig::default() },
        |(ops in prop::collection::vec(cleaning_op(), 60..120), cfg in config())| {
            let mut all: Vec<Op> = [0, 1, 2, 3, 6].into_iter().map(Op::Create).collect();
            all.extend(ops);
            run_on(&all, true, 64 * MIB, cfg)?;
        }
    );
    report_cuts("cleaning_under_random_sequences");
}

/// A 64 MiB volume (free segments always under the SSR threshold) filled to over half
/// its user blocks first, then overwritten: the logs recycle dirty segments by SSR.
#[test]
fn ssr_under_random_sequences() {
    proptest!(
        ProptestConfig { cases: 4, ..ProptestConfig::default() },
        |(ops in prop::collection::vec(ssr_op(), 60..120), cfg in ssr_config())| {
            let mut all: Vec<Op> = (0..NAMES.len()).map(Op::Create).collect();
            for slot in 0..5 {
                all.extend((0..NAMES.len()).map(|p| Op::WriteBig(p, slot, slot as u8)));
            }
            all.push(Op::Sync);
            all.extend(ops);
            run_on(&all, true, 64 * MIB, cfg)?;
        }
    );
    report_cuts("ssr_under_random_sequences");
}

/// Sequences for MedFS's inline deltas: the general mix with many small overwrites (of
/// the first pages, and of pages near the 852-page cap, where growth evicts deltas).
fn medfs_op() -> impl Strategy<Value = Op> {
    let small = (
        // Mostly two files, so their zones fill up and replacements happen.
        prop_oneof![4 => 0..2usize, 2 => 0..NAMES.len(), 1 => 0..PATHS],
        // The first pages (40 deltas overflow the zone: replacements), and pages near
        // the 852-page cap whose pointers the zone may cover (growth evicts the oldest).
        prop_oneof![6 => 0..10u64, 3 => 10..40u64, 1 => 820..852u64],
        0u16..4096,
        1u16..300,
        any::<u8>(),
    )
        .prop_map(|(p, page, within, len, seed)| {
            Op::SmallWrite(p, page, within, len.min(4096 - within), seed)
        });
    prop_oneof![
        10 => op(),
        16 => small.clone(),
        1 => (0u32..12, small).prop_map(|(n, o)| Op::CutDuring(n, Box::new(o))),
    ]
}

/// MedFS's delta-chunk inlining on (kernel defaults otherwise, and pure LFS): the same
/// model with power cuts, torn cuts and remounts; fsck.f2fs on every crash image and the
/// final one once the deltas are folded back (`restore_deltas`). Fails if no delta was
/// ever stored inline (MedFS silently off).
#[test]
fn medfs_random_sequences_match_the_model() {
    let dci = |base: F2fsConfig| F2fsConfig {
        delta: flashstack_f2fs::DeltaConfig::dci(),
        ..base
    };
    DELTAS.with(|c| c.set(0));
    proptest!(
        ProptestConfig { cases: 48, ..ProptestConfig::default() },
        |(ops in prop::collection::vec(medfs_op(), 1..160),
          cfg in prop_oneof![Just(dci(F2fsConfig::default())), Just(dci(F2fsConfig::pure_lfs()))],
          fsck in prop::bool::weighted(0.25))| {
            // Files of ten pages first (past the inline size), so updates have a base.
            let mut all: Vec<Op> = (0..NAMES.len()).map(Op::Create).collect();
            all.extend((0..NAMES.len()).map(|p| Op::WriteHinted(p, 0, 10, p as u8, false)));
            all.push(Op::Sync);
            all.extend(ops);
            run(&all, fsck, cfg)?;
        }
    );
    let deltas = DELTAS.with(|c| c.take());
    println!("medfs: {deltas} deltas stored inline");
    assert!(deltas > 100, "MedFS stored only {deltas} deltas inline");
    report_cuts("medfs_random_sequences_match_the_model");
}

/// HCluster centroids (tenths) that class every file read-cold/write-hot: the model
/// reads every file after every step, which the published centroids would class
/// read-hot, so the DCM paths would never run.
const ALL_WRITE_HOT: [[u32; 2]; 4] = [
    [2_000_000_000, 0],
    [0, 0],
    [0, 2_000_000_000],
    [2_000_000_000, 2_000_000_000],
];

fn delta_mode(mode: flashstack_f2fs::DeltaMode, base: F2fsConfig) -> F2fsConfig {
    F2fsConfig {
        delta: flashstack_f2fs::DeltaConfig {
            mode,
            hcluster_centroids_tenths: ALL_WRITE_HOT,
            ..flashstack_f2fs::DeltaConfig::with_mode(mode)
        },
        ..base
    }
}

/// MedFS's DCM (with DCI: `medfs`; alone: `dcm`; and F2FS-DC) under the model's random
/// sequences with power cuts, torn cuts, remounts and idle periods (BGRes): every fsync'd
/// byte reads back; fsck.f2fs on crash images and the final one after
/// `restore_deltas` (which must leave no pseudo file). Fails if DCM stored too few
/// deltas (silently off).
#[test]
fn dcm_random_sequences_match_the_model() {
    use flashstack_f2fs::DeltaMode;
    DCM.with(|c| c.set([0; 3]));
    CARRIED.with(|c| c.set(0));
    proptest!(
        ProptestConfig { cases: 36, ..ProptestConfig::default() },
        |(ops in prop::collection::vec(medfs_op(), 1..160),
          mode in prop_oneof![Just(DeltaMode::Medfs), Just(DeltaMode::Dcm), Just(DeltaMode::Dc)],
          lfs in any::<bool>(),
          // A tiny DCM cache writes pseudo-file pages between fsyncs (cache pressure):
          // the owner's next fsync must carry them too.
          dcm_cache_pages in prop_oneof![Just(2usize), Just(512)],
          fsck in prop::bool::weighted(0.25))| {
            let base = if lfs { F2fsConfig::pure_lfs() } else { F2fsConfig::default() };
            let mut all: Vec<Op> = (0..NAMES.len()).map(Op::Create).collect();
            all.extend((0..NAMES.len()).map(|p| Op::WriteHinted(p, 0, 10, p as u8, false)));
            all.push(Op::Sync);
            all.extend(ops);
            let mut cfg = delta_mode(mode, base);
            cfg.delta.dcm_cache_pages = dcm_cache_pages;
            run(&all, fsck, cfg)?;
        }
    );
    let [stores, evictions, restored] = DCM.with(|c| c.take());
    let carried = CARRIED.with(|c| c.take());
    println!("dcm: {stores} deltas stored in DCM, {evictions} evicted from DCI to DCM, {restored} files restored by BGRes, {carried} carried entries replayed");
    assert!(stores > 100, "DCM stored only {stores} deltas");
    assert!(
        carried > 0,
        "roll-forward never replayed a carried DCM entry"
    );
    assert!(evictions > 0, "DCI never evicted a delta to DCM");
    assert!(restored > 0, "BGRes never restored a file");
    report_cuts("dcm_random_sequences_match_the_model");
}

/// Sequences that keep DCM owners fsyncing between checkpoints, so that owners' inodes
/// carry their pseudo files' addresses: small overwrites of two files' first pages,
/// fsyncs, cuts during them or after, a user xattr now and then (an area too full to
/// carry: the pseudo inode is written instead), idle time (cleaning, BGRes), syncs.
fn carry_op() -> impl Strategy<Value = Op> {
    let small = (0..2usize, 0..12u64, 0u16..4096, 1u16..700, any::<u8>()).prop_map(
        |(p, page, within, len, seed)| {
            Op::SmallWrite(p, page, within, len.min(4096 - within), seed)
        },
    );
    let fsync = (0..2usize).prop_map(Op::Fsync);
    prop_oneof![
        12 => small.clone(),
        6 => fsync.clone(),
        2 => (0u32..6, prop_oneof![fsync.clone(), small]).prop_map(|(n, o)| Op::CutDuring(n, Box::new(o))),
        2 => Just(Op::PowerCut),
        1 => (0..2usize, 0..XATTR_NAMES.len(), 0usize..160, any::<u8>())
            .prop_map(|(p, n, l, s)| Op::SetXattr(p, n, l, s)),
        1 => (0..2usize, 0..XATTR_NAMES.len()).prop_map(|(p, n)| Op::RemoveXattr(p, n)),
        1 => idle(),
        1 => Just(Op::Sync),
        1 => Just(Op::Remount),
    ]
}

/// DCM's fsync without the pseudo inode (`delta/carry.rs`): the owner's inode carries
/// the pseudo file's new addresses, and roll-forward replays them. Every fsync'd byte
/// reads back after every cut; fails if recovery replayed too few carried entries.
#[test]
fn dcm_carried_addresses_survive_cuts() {
    use flashstack_f2fs::DeltaMode;
    DCM.with(|c| c.set([0; 3]));
    CARRIED.with(|c| c.set(0));
    proptest!(
        ProptestConfig { cases: 32, ..ProptestConfig::default() },
        |(ops in prop::collection::vec(carry_op(), 1..120),
          mode in prop_oneof![Just(DeltaMode::Medfs), Just(DeltaMode::Dcm), Just(DeltaMode::Dc)],
          dcm_cache_pages in prop_oneof![Just(2usize), Just(512)],
          fsck in prop::bool::weighted(0.2))| {
            let mut all: Vec<Op> = (0..2).map(Op::Create).collect();
            all.extend((0..2).map(|p| Op::WriteHinted(p, 0, 12, p as u8, false)));
            all.push(Op::Sync);
            all.extend(ops);
            let mut cfg = delta_mode(mode, F2fsConfig::default());
            cfg.delta.dcm_cache_pages = dcm_cache_pages;
            run(&all, fsck, cfg)?;
        }
    );
    let carried = CARRIED.with(|c| c.take());
    let [stores, _, _] = DCM.with(|c| c.take());
    println!("carry: {stores} DCM stores, {carried} carried entries replayed");
    assert!(
        carried > 20,
        "recovery replayed only {carried} carried DCM entries"
    );
    report_cuts("dcm_carried_addresses_survive_cuts");
}

/// Runs `op` after `prefix` once to count its block writes `w` (checking that it took
/// the path `took` names), then once per cut point: the power fails after each of
/// 0..=w writes of `op`, and recovery must give the state before it or after it. Every
/// fourth case runs fsck.f2fs on the crash image (after `restore_deltas`). Returns `w`.
fn cut_at_every_write(
    prefix: &[Op],
    op: Op,
    cfg: F2fsConfig,
    took: (&str, fn(&flashstack_f2fs::DeltaMetrics) -> u64),
) -> u64 {
    let mut h = harness(false, 128 * MIB, cfg.clone()).unwrap();
    for o in prefix {
        h.apply(o).and_then(|_| h.check()).unwrap();
    }
    let (before, w0) = (
        took.1(&h.fs().metrics().delta),
        h.fs().device_mut().written_blocks,
    );
    h.apply(&op).and_then(|_| h.check()).unwrap();
    let w = h.fs().device_mut().written_blocks - w0;
    let after = took.1(&h.fs().metrics().delta);
    assert!(
        after > before,
        "{}: the operation did not take the path",
        took.0
    );
    // 0..w cut inside the operation (the state before it or after it comes back); w
    // cuts right after it (everything it fsync'd must come back).
    for n in 0..=w {
        let mut all = prefix.to_vec();
        match n < w {
            true => all.push(Op::CutDuring(n as u32, Box::new(op.clone()))),
            false => all.extend([op.clone(), Op::PowerCut]),
        }
        all.push(Op::Idle(30));
        if let Err(e) = run(&all, n % 4 == 0, cfg.clone()) {
            panic!("{}: cut after {n} of {w} writes: {e}", took.0);
        }
    }
    println!("{}: {} cut points", took.0, w + 1);
    w + 1
}

/// A power cut at every device write of DCM's paths, each checked against the model:
/// a DCM store and its fsync (the owner's inode carrying the pseudo file's addresses;
/// with a full inline xattr area, the pseudo inode ahead of the owner instead), a
/// DCM store replacing a page's delta, DCI's eviction of inline deltas to DCM on growth
/// (and the new pseudo file's checkpoint), and BGRes restoring a file in idle time.
#[test]
fn dcm_cut_at_every_write_of_the_dcm_paths() {
    use flashstack_f2fs::DeltaMode;
    let small = |page: u64, seed: u8| Op::SmallWrite(0, page, 100, 40, seed);
    let setup: Vec<Op> = vec![
        Op::Create(0),
        Op::WriteHinted(0, 0, 10, 1, false),
        Op::Sync,
        small(2, 9),
        Op::Fsync(0),
    ];
    let dcm = delta_mode(DeltaMode::Dcm, F2fsConfig::default());
    let mut cuts = 0;
    CARRIED.with(|c| c.set(0));
    cuts += cut_at_every_write(
        &setup,
        Op::Seq(vec![small(5, 3), small(6, 4), Op::Fsync(0)]),
        dcm.clone(),
        ("DCM store + fsync carrying the addresses", |m| {
            m.dcm_carried_fsyncs
        }),
    );
    // Carriers in a row between checkpoints, one page rewritten in each: roll-forward
    // replays them in chain order (two before the operation, the third in it).
    let round = |r: u8| [small(5, 20 + r), small(7 + u64::from(r), r), Op::Fsync(0)];
    let mut carriers = setup.clone();
    carriers.extend(round(0).into_iter().chain(round(1)));
    cuts += cut_at_every_write(
        &carriers,
        Op::Seq(round(2).to_vec()),
        dcm.clone(),
        ("a third DCM store + fsync in a row", |m| {
            m.dcm_carried_fsyncs
        }),
    );
    let replayed = CARRIED.with(|c| c.take());
    assert!(replayed >= 4, "only {replayed} carried entries replayed");
    // A user xattr leaves the inline area no room for the entry: the pseudo inode is
    // written fsync-marked ahead of the owner instead.
    let mut full = setup.clone();
    full.push(Op::SetXattr(0, 0, 150, 4));
    cuts += cut_at_every_write(
        &full,
        Op::Seq(vec![small(5, 3), small(6, 4), Op::Fsync(0)]),
        dcm.clone(),
        ("DCM store + fsync writing the pseudo inode", |m| {
            m.dcm_pseudo_fsyncs
        }),
    );
    cuts += cut_at_every_write(
        &setup,
        Op::Seq(vec![small(2, 77), Op::Fsync(0)]),
        dcm.clone(),
        ("DCM store replacing a delta + fsync", |m| m.dcm_stores),
    );
    let mut inline = vec![Op::Create(0), Op::WriteHinted(0, 0, 10, 1, false), Op::Sync];
    inline.extend([small(1, 5), small(2, 6), small(3, 7), Op::Fsync(0)]);
    cuts += cut_at_every_write(
        &inline,
        Op::Seq(vec![Op::SmallWrite(0, 870, 0, 10, 3), Op::Fsync(0)]),
        delta_mode(DeltaMode::Medfs, F2fsConfig::default()),
        ("DCI eviction to DCM on growth + fsync", |m| m.dcm_evictions),
    );
    let mut two = setup.clone();
    two.extend([small(4, 11), Op::Fsync(0)]);
    cuts += cut_at_every_write(
        &two,
        Op::Idle(120),
        dcm,
        ("BGRes restore in idle time", |m| m.bgres_restored_files),
    );
    println!("dcm paths: {cuts} cut points in all");
    report_cuts("dcm_cut_at_every_write_of_the_dcm_paths");
}

/// A checkpoint taken inside the writeback half of a hinted write with fsync (foreground
/// cleaning at the end of the write, the volume being at its reserve) makes everything
/// durable, and a power cut after it brings that state back. The model used to miss that
/// checkpoint (the fsync counted only its own), so it expected pages the checkpoint had
/// superseded; F2FS was right. Reduced from a `cleaning_under_random_sequences` case
/// (the regression seed of `/g.db` page 128 wrong after a cut during a 256 KiB write).
#[test]
fn a_checkpoint_by_cleaning_during_an_fsynced_writeback_is_durable() {
    let fill = [
        Op::Create(0),
        Op::Create(2),
        Op::Create(3),
        Op::Create(6),
        Op::Idle(40),
        Op::WriteBig(0, 4, 232),
        Op::WriteBig(0, 1, 4),
        Op::Idle(40),
        Op::WriteHinted(3, 3, 1, 107, true),
        Op::PowerCut,
        Op::WriteBig(6, 4, 146),
        Op::WriteBig(3, 2, 243),
        Op::WriteBig(0, 3, 137),
        Op::WriteBig(0, 2, 153),
        Op::WriteBig(3, 4, 209),
        Op::WriteBig(0, 1, 218),
        Op::WriteBig(0, 4, 249),
        Op::WriteBig(0, 2, 198),
        Op::WriteBig(2, 3, 165),
        Op::WriteBig(0, 0, 163),
        Op::WriteBig(0, 1, 213),
        Op::WriteBig(0, 1, 1),
        Op::WriteBig(2, 1, 36),
        Op::WriteBig(0, 2, 213),
        Op::WriteBig(0, 2, 227),
        Op::WriteBig(0, 2, 68),
        Op::WriteBig(0, 4, 22),
        Op::WriteBig(0, 1, 178),
        Op::Idle(40),
    ];
    let mut h = harness(false, 64 * MIB, F2fsConfig::pure_lfs()).unwrap();
    for op in &fill {
        h.apply(op).and_then(|_| h.check()).unwrap();
    }
    let before = h.fs().metrics().checkpoints;
    let writeback = Op::WriteHinted(6, 0, 1, 72, true);
    h.apply(&writeback).and_then(|_| h.check()).unwrap();
    assert!(
        h.fs().metrics().checkpoints > before,
        "the case needs cleaning to checkpoint during the hinted write"
    );
    h.apply(&Op::PowerCut).and_then(|_| h.check()).unwrap();
}

/// A page overwritten in place past the end the file had at the last durable state
/// comes back after a cut with the old size, and reads as zeros past that end when the
/// file grows again (POSIX; `growing_a_file_after_a_cut_shows_zeros_past_its_old_end` in
/// `crash_explore`). The model used to adopt the whole in-place page, tail included, and
/// expected the tail's old bytes. Reduced from a `cleaning_under_random_sequences` case
/// under `F2FS_IPU_FORCE`.
#[test]
fn an_in_place_page_adopted_after_a_cut_is_zero_past_the_recovered_size() {
    let cfg = F2fsConfig {
        ipu_policy: IpuPolicy {
            force: true,
            ..IpuPolicy::OFF
        },
        ..F2fsConfig::default()
    };
    let ops = [
        Op::Create(2),
        // One page fsync'd with a size 8 bytes short of it.
        Op::WriteHinted(2, 0, 1, 1, true),
        // 64 pages from 0, page 0 in place: its last 8 bytes lie past the durable size.
        Op::WriteBig(2, 0, 0),
        Op::CutDuring(0, Box::new(Op::Idle(3))),
        Op::WriteBig(2, 1, 0),
    ];
    let mut h = harness(false, 64 * MIB, cfg).unwrap();
    for op in &ops {
        h.apply(op).and_then(|_| h.check()).unwrap();
    }
}

/// Under F2FS-DC, a power cut inside an fsync after the pseudo file's fsync-marked inode
/// reached the warm node chain but before the owner's nodes did: roll-forward replayed
/// the pseudo file alone, so the owner came back checkpointed but read page 9 with the
/// delta of an update the interrupted fsync had not made durable (neither the state
/// before the fsync nor the one after). A pseudo file now rolls forward only with its
/// owner (`replayable_fsyncs` in `fsync.rs`). Reduced from a
/// `dcm_random_sequences_match_the_model` case (the regression seed of `/g.db` page 9).
/// Since the owner's inode carries the pseudo file's addresses (`delta/carry.rs`), the
/// pseudo inode is written at an fsync only when the owner's inline xattr area has no
/// room: a user xattr fills it here, so the case still takes that path.
#[test]
fn a_pseudo_file_fsynced_without_its_owner_is_not_rolled_forward() {
    use flashstack_f2fs::DeltaMode;
    DCM.with(|c| c.set([0; 3]));
    let ops = [
        Op::Create(1),
        Op::WriteHinted(1, 0, 10, 1, false),
        // A DCM delta of page 1, checkpointed with its pseudo file.
        Op::SmallWrite(1, 1, 1714, 132, 208),
        Op::Sync,
        // A delta of page 9 into the same compact page, then growth past it.
        Op::SmallWrite(1, 9, 246, 18, 200),
        Op::SmallWrite(1, 825, 2504, 152, 185),
        Op::SetXattr(1, 0, 150, 4),
        // The cut falls after the pseudo inode's write, before the owner's nodes.
        Op::CutDuring(3, Box::new(Op::Fsync(1))),
    ];
    let mut h = harness(
        false,
        128 * MIB,
        delta_mode(DeltaMode::Dc, F2fsConfig::default()),
    )
    .unwrap();
    for op in &ops {
        h.apply(op).and_then(|_| h.check()).unwrap();
    }
    assert!(
        DCM.with(|c| c.get()[0]) >= 2,
        "the case needs the two DCM deltas before the cut"
    );
}
