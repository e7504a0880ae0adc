//! [`Stack`]: the file API over the page cache over F2FS over the FTL.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use flashstack_block::{
    BlockDevice, BlockRecorder, PowerLoss, RequestSink, VolatileCache, VolatileCacheConfig,
};
use flashstack_cache::{AppId, BackingError, CacheError, PageCache};
use flashstack_f2fs::{mkfs, F2fs, Features, FsError, MkfsOptions};
use flashstack_ftl::Ftl;
use flashstack_sim::{LatencyHistogram, Nanos};
use flashstack_sqlvfs::{FileApi, FileError, FileId, OpenFlags};
use serde::Serialize;
use thiserror::Error;

use crate::timeline::{Probe, Timeline};
use crate::{F2fsBacking, StackConfig};

/// Most handles open at once.
const OPEN_HANDLES_MAX: usize = 65_536;

#[derive(Debug, Error)]
pub enum StackError {
    #[error("device: {0}")]
    Device(String),
    #[error("mkfs: {0}")]
    Mkfs(String),
    #[error("mount: {0}")]
    Mount(String),
    #[error("cache: {0}")]
    Cache(String),
    #[error("the stack is powered off; call recover()")]
    PoweredOff,
}

struct Handle {
    ino: u32,
    path: String,
    read_only: bool,
    delete_on_close: bool,
}

/// Per-operation counts, bytes and latencies of the file API.
#[derive(Default)]
struct OpStats {
    count: u64,
    bytes: u64,
    latency: LatencyHistogram,
}

/// Figures of every layer, deterministic.
#[derive(Clone, Debug, Serialize)]
pub struct StackMetrics {
    pub now_ns: Nanos,
    /// The stack's state sampled over the measurement's simulated time.
    pub timeline: Timeline,
    pub ops: BTreeMap<String, OpMetrics>,
    pub cache: flashstack_cache::CacheMetrics,
    pub f2fs: flashstack_f2fs::Metrics,
    pub ftl: flashstack_ftl::FtlCounters,
}

#[derive(Clone, Debug, Serialize)]
pub struct OpMetrics {
    pub count: u64,
    pub bytes: u64,
    pub latency: flashstack_sim::LatencySummary,
}

/// The device F2FS writes to: the FTL behind a volatile write cache that is off (every
/// request passes straight through) unless a crash test turns it on
/// ([`Stack::set_volatile_cache`]), behind a recorder that reports every request F2FS
/// sends while a sink is attached ([`Stack::record_block_requests`]).
pub type Device = BlockRecorder<VolatileCache<Ftl>>;
type Cache = PageCache<F2fsBacking<Device>>;

/// The assembled stack. Data goes through the page cache; namespace operations go straight
/// to F2FS. After [`power_cut`](Stack::power_cut) every call fails until
/// [`recover`](Stack::recover).
pub struct Stack {
    config: StackConfig,
    cache: Option<Cache>,
    handles: BTreeMap<FileId, Handle>,
    next_handle: FileId,
    now_ns: Nanos,
    /// Namespace changes since the last checkpoint: a later fsync checkpoints (what F2FS
    /// does when roll-forward cannot recover the change, `need_do_checkpoint`).
    namespace_dirty: bool,
    last_power_loss: PowerLoss,
    ops: BTreeMap<&'static str, OpStats>,
    /// Apps by name ([`app_name`]), numbered in order of first open: the owners of
    /// MobiFS's transactions.
    apps: BTreeMap<String, AppId>,
    /// The measurement's state over simulated time (reports plot it).
    timeline: Timeline,
    /// Inputs, standby and held pages for the energy model (bookkeeping only).
    energy: crate::energy_log::EnergyLog,
}

/// The app a path belongs to, for MobiFS's per-app transactions: the package of
/// `/data/data/<package>/…` or `/data/user/<n>/<package>/…`, else the path's first
/// component (shared storage, `/storage`, is one app).
pub fn app_name(path: &str) -> &str {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    match parts.as_slice() {
        ["data", "data", package, ..] => package,
        ["data", "user", _, package, ..] => package,
        [first, _, ..] => first,
        _ => "",
    }
}

fn io<E: std::fmt::Display>(e: E) -> FileError {
    FileError::Io(e.to_string())
}

fn fs_err(path: &str, e: FsError) -> FileError {
    match e {
        FsError::NotFound(_) => FileError::NotFound(path.to_string()),
        FsError::Exists(_) => FileError::AlreadyExists(path.to_string()),
        e if e.is_no_space() => FileError::NoSpace(format!("'{path}'")),
        other => FileError::Io(format!("{path}: {other}")),
    }
}

fn cache_err(e: CacheError) -> FileError {
    match e {
        CacheError::Backing(BackingError::PoweredOff)
        | CacheError::Writeback {
            error: BackingError::PoweredOff,
            ..
        } => FileError::PowerLost,
        CacheError::Backing(BackingError::NoSpace { ino }) => {
            FileError::NoSpace(format!("inode {ino}"))
        }
        CacheError::Writeback {
            ino,
            error: BackingError::NoSpace { .. },
            ..
        } => FileError::NoSpace(format!("inode {ino}: an earlier writeback failed")),
        other => FileError::Io(other.to_string()),
    }
}

/// A barrier's outcome: its completion time and the writeback error it reports, if any
/// (the barrier itself ran); any other error fails the call.
fn split_writeback_error(
    result: Result<Nanos, CacheError>,
) -> Result<(Nanos, Option<FileError>), FileError> {
    match result {
        Ok(end) => Ok((end, None)),
        Err(CacheError::Writeback { done_ns, .. }) => {
            let error = result.map_err(cache_err).expect_err("an error");
            Ok((done_ns, Some(error)))
        }
        Err(e) => Err(cache_err(e)),
    }
}

impl Stack {
    /// Builds the device, formats it and mounts F2FS under an empty page cache.
    pub fn new(config: StackConfig) -> Result<Stack, StackError> {
        let mut ftl = Ftl::new(config.device.clone(), true, config.seed)
            .map_err(|e| StackError::Device(e.to_string()))?;
        let mut opts = MkfsOptions {
            overprovision: config.fs.overprovision_percent,
            ..MkfsOptions::default()
        };
        if config.fs.mount.compress.enabled {
            // F2FS compression needs these features (`mkfs.f2fs -O extra_attr,compression`).
            opts.features = Features(
                opts.features.0
                    | flashstack_f2fs::consts::FEATURE_EXTRA_ATTR
                    | flashstack_f2fs::consts::FEATURE_COMPRESSION,
            );
        }
        mkfs(&mut ftl, &opts).map_err(|e| StackError::Mkfs(e.to_string()))?;
        let fs = F2fs::mount_with(
            BlockRecorder::new(VolatileCache::write_through(ftl)),
            0,
            config.fs.mount.clone(),
        )
        .map_err(|e| StackError::Mount(e.to_string()))?;
        let now_ns = fs.now_ns();
        Stack::assemble(config, fs, now_ns)
    }

    /// Mounts the F2FS already on `ftl` (a saved phone's device) under an empty page
    /// cache, the first request arriving at `start_ns`.
    pub fn from_ftl(config: StackConfig, ftl: Ftl, start_ns: Nanos) -> Result<Stack, StackError> {
        let device = BlockRecorder::new(VolatileCache::write_through(ftl));
        let fs = F2fs::mount_with(device, start_ns, config.fs.mount.clone())
            .map_err(|e| StackError::Mount(e.to_string()))?;
        let now_ns = fs.now_ns().max(start_ns);
        Stack::assemble(config, fs, now_ns)
    }

    /// The stack over a mounted F2FS: an empty page cache of `config`, no open files,
    /// the clock at `now_ns`.
    fn assemble(config: StackConfig, fs: F2fs<Device>, now_ns: Nanos) -> Result<Stack, StackError> {
        let cache = PageCache::new(config.cache.clone(), F2fsBacking::new(fs))
            .map_err(|e| StackError::Cache(e.to_string()))?;
        Ok(Stack {
            config,
            cache: Some(cache),
            handles: BTreeMap::new(),
            next_handle: 1,
            now_ns,
            namespace_dirty: false,
            last_power_loss: PowerLoss::default(),
            ops: BTreeMap::new(),
            apps: BTreeMap::new(),
            timeline: Timeline::starting_at(now_ns),
            energy: crate::energy_log::EnergyLog::new(now_ns, 0),
        })
    }

    /// A clean shutdown at `now` (no open handles): every dirty page written back, F2FS
    /// unmounted (its unmount checkpoint flushes the device). Returns the device and the
    /// time the shutdown completed.
    pub fn shut_down(mut self, now: Nanos) -> Result<(Ftl, Nanos), FileError> {
        if !self.handles.is_empty() {
            return Err(FileError::Io(format!(
                "shutdown with {} files still open",
                self.handles.len()
            )));
        }
        let end = self.sync_all(now)?;
        let cache = self.cache.take().ok_or(FileError::PowerLost)?;
        let mut fs = cache.into_backing().into_fs();
        fs.advance_to(end);
        let device = fs.unmount().map_err(|e| fs_err("(unmount)", e))?;
        // The unmount checkpoint flushed the device, so its write cache holds nothing.
        assert_eq!(device.pending_lbas(), 0, "unflushed writes after unmount");
        let ftl = device.into_wrapped().into_inner();
        let done = ftl.busy_until_ns().max(end);
        Ok((ftl, done))
    }

    /// Runs `f` on the mounted F2FS (inspection: file block addresses, space in use).
    /// Dirty pages still in the cache are not visible to it: sync first.
    pub fn with_fs<T>(&mut self, f: impl FnOnce(&mut F2fs<Device>) -> T) -> Result<T, FileError> {
        Ok(f(self.fs()?))
    }

    pub fn config(&self) -> &StackConfig {
        &self.config
    }

    /// The current virtual time (the latest completion seen).
    pub fn now_ns(&self) -> Nanos {
        self.now_ns
    }

    fn cache(&mut self) -> Result<&mut Cache, FileError> {
        self.cache.as_mut().ok_or(FileError::PowerLost)
    }

    fn fs(&mut self) -> Result<&mut F2fs<Device>, FileError> {
        Ok(self.cache()?.backing_mut().fs_mut())
    }

    /// Lets background work run until `t` (no request arrives before it): the cache's
    /// flusher writes expired and over-threshold dirty pages, and F2FS's idle work runs
    /// (the GC thread cleaning by cost-benefit, the periodic checkpoint). Returns the time
    /// the stack is free again: `t`, or later if background work was still running
    /// (requests never preempt it).
    pub fn idle_until(&mut self, t: Nanos) -> Result<Nanos, FileError> {
        let mut at = self.now_ns;
        let t = t.max(at);
        let step_ns = self.config.cache.dirty_writeback_interval_ns.max(1);
        // While the cache holds dirty pages the two interleave in steps of the flusher's
        // wake period, so F2FS sees the flusher's writes as requests at their own times
        // (its idle test is "no request for idle_interval").
        while at < t && self.cache()?.dirty_bytes() > 0 {
            let step = at.saturating_add(step_ns).min(t);
            self.cache()?.advance_to(step).map_err(cache_err)?;
            at = self.fs_idle(step)?;
        }
        self.cache()?.advance_to(at.max(t)).map_err(cache_err)?;
        let end = self.fs_idle(t)?.max(t);
        self.now_ns = self.now_ns.max(end);
        let held = self.held_pages();
        self.energy.sample(self.now_ns, held);
        Ok(end)
    }

    /// The phone suspends until `t` (screen off, CPU asleep): every dirty page is written
    /// back and F2FS checkpoints first (Linux syncs before suspend), then time passes with
    /// no background work at all (no flusher, no GC thread, no periodic checkpoint).
    /// Returns the time the stack resumes: `t`, or later if the sync took longer.
    pub fn suspend_until(&mut self, t: Nanos) -> Result<Nanos, FileError> {
        let start = self.now_ns;
        let end = self.sync_all(start)?;
        let resume = t.max(end);
        self.cache()?.advance_to(resume).map_err(cache_err)?;
        self.fs()?.advance_to(resume);
        self.now_ns = resume;
        Ok(resume)
    }

    fn fs_idle(&mut self, until_ns: Nanos) -> Result<Nanos, FileError> {
        let fs = self.fs()?;
        let until_ns = until_ns.max(fs.now_ns());
        fs.idle(until_ns).map_err(|e| fs_err("(idle)", e))?;
        Ok(fs.now_ns())
    }

    /// Entry of every call: time never goes back; a gap first runs idle work.
    fn enter(&mut self, now: Nanos) -> Result<Nanos, FileError> {
        let now = now.max(self.now_ns);
        if self.cache.is_none() {
            return Err(FileError::PowerLost);
        }
        if now >= self.now_ns.saturating_add(self.config.idle_gap_ns) {
            // Background work still running when the call arrives delays it.
            return self.idle_until(now);
        }
        Ok(now)
    }

    fn done(&mut self, op: &'static str, start: Nanos, end: Nanos, bytes: u64) -> Nanos {
        let end = end.max(start);
        self.now_ns = self.now_ns.max(end);
        let held = self.held_pages();
        self.energy.sample(self.now_ns, held);
        let stats = self.ops.entry(op).or_default();
        stats.count += 1;
        stats.bytes += bytes;
        stats.latency.record(end - start);
        if self.timeline.due(self.now_ns) {
            self.sample_timeline();
        }
        end
    }

    /// Adds the stack's state now to the timeline (done on its own as the clock passes
    /// each interval; call it to close a measurement with its final state).
    pub fn sample_timeline(&mut self) {
        let Some(cache) = self.cache.as_ref() else {
            return;
        };
        let fs = cache.backing().fs();
        let ftl = fs.device().inner();
        let counters = ftl.counters();
        let units = ftl.config().nand.geometry.units();
        let probe = Probe {
            host_write_blocks: counters.host_write_lbas,
            nand_page_programs: counters.page_programs,
            fs_free_segments: Some(fs.free_segments()),
            device_free_blocks: (0..units).map(|die| u64::from(ftl.free_blocks(die))).sum(),
        };
        self.timeline.record(self.now_ns, probe);
    }

    /// The number of `path`'s app (numbered in order of first open).
    pub fn app_id(&mut self, path: &str) -> AppId {
        let next = self.apps.len() as AppId;
        *self.apps.entry(app_name(path).to_string()).or_insert(next)
    }

    /// Whether the page cache keeps MobiFS's transactions (`cache.policy = "mobifs"`):
    /// fsync seals in memory, durable at a checkpoint within the staleness bound.
    pub fn is_mobifs(&self) -> bool {
        self.config.cache.policy == flashstack_cache::PolicyName::Mobifs
    }

    /// MobiFS: how many transactions `app` has sealed (fsync and forced seals).
    pub fn tx_seals(&self, app: AppId) -> u64 {
        self.cache.as_ref().map_or(0, |c| c.tx_seals(app))
    }

    fn handle(&self, file: FileId) -> Result<&Handle, FileError> {
        self.handles.get(&file).ok_or(FileError::BadHandle(file))
    }

    fn open_count(&self, ino: u32) -> usize {
        self.handles.values().filter(|h| h.ino == ino).count()
    }

    /// Writes every dirty page back and checkpoints (`sync(2)`).
    /// A writeback that failed since the last sync (the data of those pages is lost) is
    /// reported once, as an I/O error, after the checkpoint.
    pub fn sync_all(&mut self, now: Nanos) -> Result<Nanos, FileError> {
        let start = self.enter(now)?;
        let (end, failed) = split_writeback_error(self.cache()?.sync_all(start))?;
        self.namespace_dirty = false;
        let end = self.done("sync_all", start, end, 0);
        failed.map_or(Ok(end), Err)
    }

    /// `echo 3 > /proc/sys/vm/drop_caches`: the page cache's clean pages go (later reads
    /// of them reach the device), then the in-memory inodes nothing holds (not open,
    /// no pages or state left in the cache), with what F2FS keeps in them (MedFS's
    /// HCluster counts). Returns how many pages were dropped.
    pub fn drop_caches(&mut self) -> Result<u64, FileError> {
        let cache = self.cache()?;
        let dropped = cache.drop_clean_pages();
        let held: std::collections::BTreeSet<u32> = cache
            .held_files()
            .filter_map(|ino| u32::try_from(ino).ok())
            .collect();
        self.fs()?.evict_unheld_inodes(&held);
        Ok(dropped)
    }

    /// Switches the page cache's readahead (`cache.readahead`) from now on.
    pub fn set_readahead(
        &mut self,
        readahead: flashstack_cache::ReadaheadConfig,
    ) -> Result<(), FileError> {
        self.cache()?.set_readahead(readahead.clone()).map_err(io)?;
        self.config.cache.readahead = readahead;
        Ok(())
    }

    /// A page fault on a mapping of `file` at `offset` (`buf` within that page): the page
    /// cache's fault path (`cache.readahead.mmap`; with `off`, exactly a `read_at` of the
    /// same bytes). Counted as a read.
    pub fn fault_at(
        &mut self,
        now: Nanos,
        file: FileId,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<(usize, Nanos), FileError> {
        self.cached_read(now, file, offset, buf, true)
    }

    /// A read through the cache, as a `read` call or (`fault`) a page fault on a mapping.
    fn cached_read(
        &mut self,
        now: Nanos,
        file: FileId,
        offset: u64,
        buf: &mut [u8],
        fault: bool,
    ) -> Result<(usize, Nanos), FileError> {
        let start = self.enter(now)?;
        let ino = self.handle(file)?.ino;
        let cache = self.cache()?;
        let (n, end) = match fault {
            true => cache.fault(start, ino as u64, offset, buf),
            false => cache.read(start, ino as u64, offset, buf),
        }
        .map_err(cache_err)?;
        let end = self.stamp_times(ino, start, false)?.max(end);
        Ok((n, self.done("read", start, end, n as u64)))
    }

    /// `sync_all`, the state a clean unmount leaves (a checkpoint).
    pub fn unmount(&mut self, now: Nanos) -> Result<Nanos, FileError> {
        self.sync_all(now)
    }

    /// Cuts power now: the page cache and every handle are lost; of what the device's
    /// write cache holds (when on), what survives reaches the FTL as power fails; the NAND
    /// tears nothing further (use [`arm_power_cut`](Stack::arm_power_cut) to tear a later
    /// operation).
    pub fn power_cut(&mut self) {
        let now = self.now_ns;
        if let Some(cache) = self.cache.as_mut() {
            cache.crash();
            let device = cache.backing_mut().fs_mut().device_mut();
            // A device that failed for other reasons is recovered all the same.
            self.last_power_loss = device.lose_power(now).unwrap_or_default();
            device.inner_mut().nand_mut().cut_power();
        }
    }

    /// Arms a power cut at the `ops`-th NAND operation from now (at least 1).
    pub fn arm_power_cut(&mut self, ops: u64) -> Result<(), FileError> {
        let ops = ops.max(1);
        self.fs()?
            .device_mut()
            .inner_mut()
            .nand_mut()
            .arm_power_cut(ops);
        Ok(())
    }

    /// Puts a volatile write cache between F2FS and the FTL (`capacity_lbas = 0` takes it
    /// away): acknowledged writes not yet flushed may be lost in any subset and persist in
    /// any order at a power cut ([`VolatileCache`]), on top of what the FTL itself loses.
    /// For crash tests; what the cache holds is written down first.
    pub fn set_volatile_cache(&mut self, config: VolatileCacheConfig) -> Result<(), FileError> {
        let now = self.now_ns;
        self.fs()?.device_mut().set_config(now, config).map_err(io)
    }

    /// Arms a power cut at the `requests`-th write or trim F2FS sends the device from now
    /// (at least 1): that request is torn and fails, and so does everything after it.
    pub fn arm_device_power_cut(&mut self, requests: u64) -> Result<(), FileError> {
        self.fs()?.device_mut().arm_power_cut(requests.max(1));
        Ok(())
    }

    /// Whether the device (the NAND, or the write cache in front of the FTL) has lost
    /// power.
    pub fn is_powered_off(&self) -> bool {
        self.cache.as_ref().is_none_or(|c| {
            let device = c.backing().fs().device();
            !device.is_powered() || !device.inner().nand().is_powered()
        })
    }

    /// What the last power loss did to the device's write cache (nothing when the cache
    /// is off).
    pub fn last_power_loss(&self) -> PowerLoss {
        self.last_power_loss
    }

    /// After a power cut: FTL power cycle (scan), F2FS remount with roll-forward, an empty
    /// cache. Handles are gone.
    pub fn recover(&mut self) -> Result<Nanos, StackError> {
        let cache = self.cache.take().ok_or(StackError::PoweredOff)?;
        let mut device = cache.into_backing().into_fs().into_device();
        let at = device.inner().busy_until_ns().max(self.now_ns);
        if !device.is_powered() || device.pending_lbas() > 0 {
            // What the write cache held reaches the FTL or not (unless `power_cut` has
            // settled it); then the FTL loses its own volatile state (its partial page
            // buffers, unlogged trims) and scans.
            self.last_power_loss = device
                .lose_power(at)
                .map_err(|e| StackError::Device(e.to_string()))?;
        }
        let ftl = device.inner_mut();
        ftl.nand_mut().cut_power();
        let at = ftl.busy_until_ns().max(at);
        let completion = ftl
            .power_cycle(at)
            .map_err(|e| StackError::Device(e.to_string()))?;
        let at = completion.complete_ns.max(at);
        let fs = F2fs::mount_with(device, at, self.config.fs.mount.clone())
            .map_err(|e| StackError::Mount(e.to_string()))?;
        self.now_ns = fs.now_ns().max(at);
        let cache = PageCache::new(self.config.cache.clone(), F2fsBacking::new(fs))
            .map_err(|e| StackError::Cache(e.to_string()))?;
        self.cache = Some(cache);
        self.handles.clear();
        self.namespace_dirty = false;
        Ok(self.now_ns)
    }

    /// The logical device image (every LBA, 4 KiB each) as of now, in memory: the size of
    /// the device, so prefer [`write_image`](Stack::write_image) for large devices.
    pub fn export_image(&mut self) -> Result<Vec<u8>, FileError> {
        let now = self.now_ns;
        let dev = self.fs()?.device_mut();
        let blocks = dev.capacity_lbas();
        let mut image = vec![0u8; (blocks * 4096) as usize];
        for lba in 0..blocks {
            let start = (lba * 4096) as usize;
            dev.read(now, lba, 1, Some(&mut image[start..start + 4096]))
                .map_err(io)?;
        }
        Ok(image)
    }

    /// Writes the logical device image to `path` as a sparse file (zero blocks skipped), for
    /// `fsck.f2fs`. Returns the non-zero blocks written.
    pub fn write_image(&mut self, path: &std::path::Path) -> Result<u64, FileError> {
        use std::io::{Seek, SeekFrom, Write};
        let now = self.now_ns;
        let dev = self.fs()?.device_mut();
        let blocks = dev.capacity_lbas();
        let mut file = std::fs::File::create(path).map_err(io)?;
        file.set_len(blocks * 4096).map_err(io)?;
        let mut block = vec![0u8; 4096];
        let mut written = 0;
        for lba in 0..blocks {
            dev.read(now, lba, 1, Some(&mut block)).map_err(io)?;
            if block.iter().any(|&b| b != 0) {
                file.seek(SeekFrom::Start(lba * 4096)).map_err(io)?;
                file.write_all(&block).map_err(io)?;
                written += 1;
            }
        }
        Ok(written)
    }

    /// Starts a measurement phase (after an unmeasured setup): every layer's counters and
    /// latency histograms restart; data, wear, free space and cached pages are kept.
    pub fn reset_measurement(&mut self) -> Result<(), FileError> {
        self.ops.clear();
        self.timeline = Timeline::starting_at(self.now_ns);
        self.energy = crate::energy_log::EnergyLog::new(self.now_ns, self.held_pages());
        let cache = self.cache()?;
        cache.reset_metrics();
        let fs = cache.backing_mut().fs_mut();
        fs.reset_metrics();
        fs.device_mut().inner_mut().reset_measurement();
        Ok(())
    }

    /// Attaches `sink` to the device (or, with `None`, detaches it): from now on every
    /// request F2FS sends the device and the device serves reaches it, with its virtual
    /// arrival time. Returns the sink it replaces. Changes no figure.
    pub fn record_block_requests(
        &mut self,
        sink: Option<Box<dyn RequestSink>>,
    ) -> Result<Option<Box<dyn RequestSink>>, FileError> {
        Ok(self.fs()?.device_mut().set_sink(sink))
    }

    /// Pages the cache holds beyond what a clean cache would: dirty pages and MobiFS's
    /// transaction versions (the energy model's extra resident pages).
    fn held_pages(&self) -> u64 {
        self.cache.as_ref().map_or(0, |c| {
            c.dirty_bytes() / flashstack_cache::PAGE_SIZE_BYTES as u64 + c.resident_pages()
                - c.cached_pages()
        })
    }

    /// The user did something at `now` (bookkeeping for the energy model).
    pub fn note_user_input(&mut self, now: Nanos, input: flashstack_sqlvfs::UserInput) {
        self.energy.input(now, input);
        let idle_timing = self.is_mobifs()
            && self.config.cache.mobifs.checkpoint == flashstack_cache::CheckpointTiming::Idle;
        if idle_timing {
            // An error (power lost) shows at the next call.
            let _ = self.cache_user_input(now, input);
        }
    }

    /// MobiFS's adaptive timing sees the input: time advances to it (idle work first, as
    /// at any call), then the cache's interaction machine learns it.
    fn cache_user_input(
        &mut self,
        now: Nanos,
        input: flashstack_sqlvfs::UserInput,
    ) -> Result<(), FileError> {
        use flashstack_cache::adaptive::Input;
        use flashstack_sqlvfs::UserInput;
        let now = self.enter(now)?;
        let input = match input {
            UserInput::ScreenOff => Input::ScreenOff,
            UserInput::ScreenOn => Input::ScreenOn,
            UserInput::Touch | UserInput::Scroll | UserInput::Key => Input::User,
        };
        let end = self.cache()?.user_input(now, input).map_err(cache_err)?;
        self.now_ns = self.now_ns.max(end);
        Ok(())
    }

    /// The energy model's inputs from this stack up to `end_ns` (since the measurement
    /// started).
    pub fn energy_inputs(&self, end_ns: Nanos) -> crate::energy_log::EnergyInputs {
        self.energy.inputs_until(end_ns)
    }

    /// The device under the file system (`None` while powered off).
    pub fn device(&self) -> Option<&Ftl> {
        Some(self.cache.as_ref()?.backing().fs().device().inner())
    }

    /// Every layer's figures.
    pub fn metrics(&self) -> Option<StackMetrics> {
        let cache = self.cache.as_ref()?;
        let fs = cache.backing().fs();
        let ops = self
            .ops
            .iter()
            .map(|(name, s)| {
                (
                    name.to_string(),
                    OpMetrics {
                        count: s.count,
                        bytes: s.bytes,
                        latency: s.latency.summary(),
                    },
                )
            })
            .collect();
        Some(StackMetrics {
            now_ns: self.now_ns,
            timeline: self.timeline.clone(),
            ops,
            cache: cache.metrics().clone(),
            f2fs: fs.metrics().clone(),
            ftl: fs.device().inner().counters().clone(),
        })
    }

    /// The inode's times after a read (atime by `relatime`) or a write (mtime and ctime),
    /// as the kernel's `touch_atime`/`file_update_time` set them at the call: in memory,
    /// lazily (F2FS's `lazytime`), at the call's arrival `now` or F2FS's clock if later;
    /// returns when F2FS is done (its inode may have to be read).
    fn stamp_times(&mut self, ino: u32, now: Nanos, written: bool) -> Result<Nanos, FileError> {
        let fs = self.fs()?;
        fs.advance_to(now);
        match written {
            true => fs.mark_modified(ino),
            false => fs.mark_accessed(ino),
        }
        .map_err(io)?;
        Ok(fs.now_ns().max(now))
    }

    fn remove_inode_if_unused(&mut self, ino: u32, now: Nanos) -> Result<Nanos, FileError> {
        let end = self.cache()?.unlink(now, ino as u64).map_err(cache_err)?;
        Ok(end)
    }
}

impl FileApi for Stack {
    fn user_input(&mut self, now: Nanos, input: flashstack_sqlvfs::UserInput) {
        self.note_user_input(now, input);
    }
    fn open(
        &mut self,
        now: Nanos,
        path: &str,
        flags: OpenFlags,
    ) -> Result<(FileId, Nanos), FileError> {
        let start = self.enter(now)?;
        if self.handles.len() >= OPEN_HANDLES_MAX {
            return Err(FileError::TableFull {
                table: "open handles",
                limit: OPEN_HANDLES_MAX,
            });
        }
        let fs = self.fs()?;
        fs.advance_to(start);
        let exists = match fs.lookup(path) {
            Ok(_) => true,
            Err(FsError::NotFound(_)) => false,
            Err(e) => return Err(fs_err(path, e)),
        };
        if exists && flags.create && flags.exclusive {
            return Err(FileError::AlreadyExists(path.to_string()));
        }
        if !exists {
            if !flags.create {
                return Err(FileError::NotFound(path.to_string()));
            }
            fs.create(path).map_err(|e| fs_err(path, e))?;
        }
        let ino = fs.open(path).map_err(|e| fs_err(path, e))?;
        let end = fs.now_ns();
        let app = self.app_id(path);
        self.cache()?.set_owner(u64::from(ino), app);
        if !exists {
            self.namespace_dirty = true;
        }
        let id = self.next_handle;
        self.next_handle += 1;
        self.handles.insert(
            id,
            Handle {
                ino,
                path: path.to_string(),
                read_only: flags.read_only,
                delete_on_close: flags.delete_on_close,
            },
        );
        Ok((id, self.done("open", start, end, 0)))
    }

    fn close(&mut self, now: Nanos, file: FileId) -> Result<Nanos, FileError> {
        let start = self.enter(now)?;
        let handle = self
            .handles
            .remove(&file)
            .ok_or(FileError::BadHandle(file))?;
        let mut end = start;
        if handle.delete_on_close {
            let fs = self.fs()?;
            if fs.lookup(&handle.path).ok() == Some(handle.ino) {
                fs.unlink(&handle.path)
                    .map_err(|e| fs_err(&handle.path, e))?;
                self.namespace_dirty = true;
            }
        }
        let last = self.open_count(handle.ino) == 0;
        if last && self.cache()?.is_atomic(handle.ino as u64) {
            // The last close aborts an atomic write in progress (F2FS's release).
            end = self
                .cache()?
                .atomic_abort(end, handle.ino as u64)
                .map_err(cache_err)?;
        }
        let fs = self.fs()?;
        let orphan = last
            && fs
                .stat_ino(handle.ino)
                .map(|s| s.links == 0)
                .unwrap_or(true);
        if orphan {
            end = self.remove_inode_if_unused(handle.ino, start)?;
        }
        let fs = self.fs()?;
        fs.advance_to(end);
        fs.close(handle.ino).map_err(|e| fs_err(&handle.path, e))?;
        let end = fs.now_ns().max(end);
        Ok(self.done("close", start, end, 0))
    }

    fn read_at(
        &mut self,
        now: Nanos,
        file: FileId,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<(usize, Nanos), FileError> {
        self.cached_read(now, file, offset, buf, false)
    }

    fn write_at(
        &mut self,
        now: Nanos,
        file: FileId,
        offset: u64,
        data: &[u8],
    ) -> Result<Nanos, FileError> {
        let start = self.enter(now)?;
        let handle = self.handle(file)?;
        if handle.read_only {
            return Err(FileError::ReadOnly(file));
        }
        let ino = handle.ino;
        let end = self
            .cache()?
            .write(start, ino as u64, offset, data)
            .map_err(cache_err)?;
        let end = self.stamp_times(ino, start, true)?.max(end);
        Ok(self.done("write", start, end, data.len() as u64))
    }

    fn truncate(&mut self, now: Nanos, file: FileId, size_bytes: u64) -> Result<Nanos, FileError> {
        let start = self.enter(now)?;
        let handle = self.handle(file)?;
        if handle.read_only {
            return Err(FileError::ReadOnly(file));
        }
        let ino = handle.ino;
        let end = self
            .cache()?
            .truncate(start, ino as u64, size_bytes)
            .map_err(cache_err)?;
        Ok(self.done("truncate", start, end, 0))
    }

    fn size(&mut self, now: Nanos, file: FileId) -> Result<(u64, Nanos), FileError> {
        let start = self.enter(now)?;
        let ino = self.handle(file)?.ino;
        let (size, end) = self
            .cache()?
            .file_size(start, ino as u64)
            .map_err(cache_err)?;
        Ok((size, self.done("size", start, end, 0)))
    }

    /// fsync through the cache; if names changed since the last checkpoint, a checkpoint
    /// makes them durable too (the trait's promise, F2FS's `need_do_checkpoint` path).
    fn sync(&mut self, now: Nanos, file: FileId, data_only: bool) -> Result<Nanos, FileError> {
        let start = self.enter(now)?;
        let ino = self.handle(file)?.ino as u64;
        let cache = self.cache()?;
        // A failed writeback of the file's pages (by the flusher or by this fsync) is
        // reported after the barrier and the checkpoint have run, once (the cache keeps it).
        let (mut end, failed) = split_writeback_error(if data_only {
            cache.fdatasync(start, ino)
        } else {
            cache.fsync(start, ino)
        })?;
        // With MobiFS the names wait for the next checkpoint (a file system checkpoint).
        if self.namespace_dirty && !self.is_mobifs() {
            let fs = self.fs()?;
            fs.advance_to(end);
            fs.checkpoint_names().map_err(io)?;
            end = fs.now_ns().max(end);
            self.namespace_dirty = false;
        }
        let end = self.done(if data_only { "fdatasync" } else { "fsync" }, start, end, 0);
        failed.map_or(Ok(end), Err)
    }

    fn delete(&mut self, now: Nanos, path: &str, sync_dir: bool) -> Result<Nanos, FileError> {
        let start = self.enter(now)?;
        let fs = self.fs()?;
        fs.advance_to(start);
        let ino = fs.lookup(path).map_err(|e| fs_err(path, e))?;
        fs.unlink(path).map_err(|e| fs_err(path, e))?;
        let mut end = fs.now_ns();
        self.namespace_dirty = true;
        if self.open_count(ino) == 0 {
            end = self.remove_inode_if_unused(ino, end)?;
        }
        if sync_dir {
            let fs = self.fs()?;
            fs.advance_to(end);
            fs.checkpoint_names().map_err(io)?;
            end = fs.now_ns();
            self.namespace_dirty = false;
        }
        Ok(self.done("delete", start, end, 0))
    }

    fn exists(&mut self, now: Nanos, path: &str) -> Result<(bool, Nanos), FileError> {
        let start = self.enter(now)?;
        let fs = self.fs()?;
        fs.advance_to(start);
        let found = match fs.lookup(path) {
            Ok(_) => true,
            Err(FsError::NotFound(_)) => false,
            Err(e) => return Err(fs_err(path, e)),
        };
        let end = fs.now_ns();
        Ok((found, self.done("exists", start, end, 0)))
    }

    fn rename(&mut self, now: Nanos, from: &str, to: &str) -> Result<Nanos, FileError> {
        let start = self.enter(now)?;
        let fs = self.fs()?;
        fs.advance_to(start);
        let replaced = fs.lookup(to).ok();
        fs.rename(from, to).map_err(|e| fs_err(from, e))?;
        let mut end = fs.now_ns();
        self.namespace_dirty = true;
        for h in self.handles.values_mut() {
            if h.path == from {
                h.path = to.to_string();
            }
        }
        if let Some(ino) = replaced {
            if self.open_count(ino) == 0 {
                end = self.remove_inode_if_unused(ino, end)?;
            }
        }
        Ok(self.done("rename", start, end, 0))
    }

    fn mkdir(&mut self, now: Nanos, path: &str) -> Result<Nanos, FileError> {
        let start = self.enter(now)?;
        let fs = self.fs()?;
        fs.advance_to(start);
        fs.mkdir(path).map_err(|e| fs_err(path, e))?;
        let end = fs.now_ns();
        self.namespace_dirty = true;
        Ok(self.done("mkdir", start, end, 0))
    }

    /// A directory fsync: a checkpoint if names changed since the last one (as a file's
    /// fsync does), else nothing reaches the device.
    fn sync_dir(&mut self, now: Nanos, path: &str) -> Result<Nanos, FileError> {
        let start = self.enter(now)?;
        let dirty = self.namespace_dirty;
        let fs = self.fs()?;
        fs.advance_to(start);
        fs.lookup(path).map_err(|e| fs_err(path, e))?;
        let mut end = fs.now_ns();
        if dirty {
            fs.checkpoint_names().map_err(io)?;
            end = fs.now_ns();
            self.namespace_dirty = false;
        }
        Ok(self.done("fsync-dir", start, end, 0))
    }

    /// With MobiFS, SQLite's transactions are the cache's (atomic writes not offered).
    fn atomic_write_supported(&mut self) -> bool {
        self.config.fs.atomic_write && !self.is_mobifs()
    }

    /// The page cache stages the file's writes (`PageCache::atomic_begin`).
    fn atomic_begin(&mut self, now: Nanos, file: FileId) -> Result<Nanos, FileError> {
        if !self.atomic_write_supported() {
            return Err(FileError::Unsupported("atomic writes"));
        }
        let start = self.enter(now)?;
        let handle = self.handle(file)?;
        if handle.read_only {
            return Err(FileError::ReadOnly(file));
        }
        let ino = handle.ino as u64;
        let end = self.cache()?.atomic_begin(start, ino).map_err(cache_err)?;
        Ok(self.done("atomic_begin", start, end, 0))
    }

    /// The staged pages go down in one F2FS atomic commit (an fsync, all or nothing); if
    /// names changed since the last checkpoint, a checkpoint follows, as for `sync`.
    fn atomic_commit(&mut self, now: Nanos, file: FileId) -> Result<Nanos, FileError> {
        let start = self.enter(now)?;
        let ino = self.handle(file)?.ino as u64;
        let mut end = self.cache()?.atomic_commit(start, ino).map_err(cache_err)?;
        if self.namespace_dirty {
            let fs = self.fs()?;
            fs.advance_to(end);
            fs.checkpoint_names().map_err(io)?;
            end = fs.now_ns().max(end);
            self.namespace_dirty = false;
        }
        Ok(self.done("atomic_commit", start, end, 0))
    }

    fn atomic_abort(&mut self, now: Nanos, file: FileId) -> Result<Nanos, FileError> {
        let start = self.enter(now)?;
        let ino = self.handle(file)?.ino as u64;
        let end = self.cache()?.atomic_abort(start, ino).map_err(cache_err)?;
        Ok(self.done("atomic_abort", start, end, 0))
    }
}

/// A [`Stack`] shared between a [`flashstack_sqlvfs::SimVfs`] (which owns its `FileApi`)
/// and the test or persona that cuts power and inspects it.
#[derive(Clone)]
pub struct SharedStack(pub Arc<Mutex<Stack>>);

impl SharedStack {
    pub fn new(stack: Stack) -> Self {
        Self(Arc::new(Mutex::new(stack)))
    }
    pub fn lock(&self) -> std::sync::MutexGuard<'_, Stack> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl FileApi for SharedStack {
    fn user_input(&mut self, now: Nanos, input: flashstack_sqlvfs::UserInput) {
        self.lock().user_input(now, input);
    }
    fn open(
        &mut self,
        now: Nanos,
        path: &str,
        flags: OpenFlags,
    ) -> Result<(FileId, Nanos), FileError> {
        self.lock().open(now, path, flags)
    }
    fn close(&mut self, now: Nanos, file: FileId) -> Result<Nanos, FileError> {
        self.lock().close(now, file)
    }
    fn read_at(
        &mut self,
        now: Nanos,
        file: FileId,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<(usize, Nanos), FileError> {
        self.lock().read_at(now, file, offset, buf)
    }
    fn write_at(
        &mut self,
        now: Nanos,
        file: FileId,
        offset: u64,
        data: &[u8],
    ) -> Result<Nanos, FileError> {
        self.lock().write_at(now, file, offset, data)
    }
    fn truncate(&mut self, now: Nanos, file: FileId, size_bytes: u64) -> Result<Nanos, FileError> {
        self.lock().truncate(now, file, size_bytes)
    }
    fn size(&mut self, now: Nanos, file: FileId) -> Result<(u64, Nanos), FileError> {
        self.lock().size(now, file)
    }
    fn sync(&mut self, now: Nanos, file: FileId, data_only: bool) -> Result<Nanos, FileError> {
        self.lock().sync(now, file, data_only)
    }
    fn delete(&mut self, now: Nanos, path: &str, sync_dir: bool) -> Result<Nanos, FileError> {
        self.lock().delete(now, path, sync_dir)
    }
    fn exists(&mut self, now: Nanos, path: &str) -> Result<(bool, Nanos), FileError> {
        self.lock().exists(now, path)
    }
    fn rename(&mut self, now: Nanos, from: &str, to: &str) -> Result<Nanos, FileError> {
        self.lock().rename(now, from, to)
    }
    fn mkdir(&mut self, now: Nanos, path: &str) -> Result<Nanos, FileError> {
        self.lock().mkdir(now, path)
    }
    fn sync_dir(&mut self, now: Nanos, path: &str) -> Result<Nanos, FileError> {
        self.lock().sync_dir(now, path)
    }
    fn atomic_write_supported(&mut self) -> bool {
        self.lock().atomic_write_supported()
    }
    fn atomic_begin(&mut self, now: Nanos, file: FileId) -> Result<Nanos, FileError> {
        self.lock().atomic_begin(now, file)
    }
    fn atomic_commit(&mut self, now: Nanos, file: FileId) -> Result<Nanos, FileError> {
        self.lock().atomic_commit(now, file)
    }
    fn atomic_abort(&mut self, now: Nanos, file: FileId) -> Result<Nanos, FileError> {
        self.lock().atomic_abort(now, file)
    }
}

/// Keeps `BlockDevice` in scope for `export_image`'s reads.
#[allow(dead_code)]
fn _uses_block_device<D: BlockDevice>(_: &D) {}

impl StackMetrics {
    /// A terminal table: one row per file operation, then each layer's headline figures.
    pub fn render_table(&self) -> String {
        let mut out = format!(
            "{:<10} {:>8} {:>12} {:>10} {:>10} {:>10} {:>10} {:>10}\n",
            "op", "count", "bytes", "p50_ns", "p90_ns", "p99_ns", "p99.9_ns", "max_ns"
        );
        for (name, op) in &self.ops {
            let l = &op.latency;
            out += &format!(
                "{:<10} {:>8} {:>12} {:>10} {:>10} {:>10} {:>10} {:>10}\n",
                name,
                op.count,
                op.bytes,
                l.latency_ns_p50,
                l.latency_ns_p90,
                l.latency_ns_p99,
                l.latency_ns_p999,
                l.latency_ns_max
            );
        }
        let f = &self.f2fs;
        out += &format!(
            "f2fs: data {} node {} checkpoint {} nat {} sit {} ssa {} gc-moved {}+{} blocks; \
             {} fsyncs, {} checkpoints, {} cleaning cycles\n",
            f.data_blocks,
            f.node_blocks,
            f.checkpoint_blocks,
            f.nat_blocks,
            f.sit_blocks,
            f.ssa_blocks,
            f.gc_data_blocks,
            f.gc_node_blocks,
            f.fsyncs,
            f.checkpoints,
            f.gc_cycles
        );
        let d = &self.ftl;
        out += &format!(
            "ftl: host writes {} LBAs, page programs {}, erases (gc) {}, WA(programs/host) {:.3}\n",
            d.host_write_lbas,
            d.page_programs,
            d.erases_gc,
            d.page_programs as f64 / d.host_write_lbas.max(1) as f64
        );
        out
    }
}
