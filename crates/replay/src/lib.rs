//! Block-level experiments: build a device, precondition it to a steady state (or lay down
//! a workload's existing data, see [`Replayer::initialise_snapshot`]), replay a trace, a
//! synthetic or a built-in workload on it with content from the content model, and report.
//!
//! Time: trace arrival times are shifted to start after preconditioning; a request never
//! arrives before the previous one (the block interface serves requests in order).

pub mod block;
mod image;
mod install;
mod precondition;
mod prefill;
mod shape;
mod snapshot;
mod traced;

use std::collections::VecDeque;

use flashstack_block::{BlockDevice, BlockError, Payload, RequestKind, LBA_SIZE};
use flashstack_content::{ContentConfig, ContentModel};
use flashstack_ftl::{DeviceConfig, Ftl};
use flashstack_nand::ConfigError;
use flashstack_report::{ReportOptions, RunInfo, RunReport};
use flashstack_sim::timeline::{Probe, Timeline};
use flashstack_trace::TraceRequest;
use prefill::{Prefill, CHUNKS_AHEAD, CHUNK_PAGES};
use thiserror::Error;

pub use block::{
    run_block, start_builtin, BlockInput, BlockOptions, DEFAULT_AGING_MAX, DEFAULT_PRECONDITION,
    DEFAULT_SYNTHETIC,
};
pub use image::ImageReport;
pub use install::TracePreconditionReport;
pub use precondition::{Precondition, PreconditionMethod, PreconditionReport};
pub use shape::{next_write, AgingPlan, AgingShape, WorkloadPlan, WorkloadShape, REGION_LBAS};
pub use snapshot::{content_zones, LayDown, SnapshotReport, DEFAULT_SNAPSHOT_AGING};
pub use traced::PROCESSES_LISTED_MAX;

/// Requests the replay looks ahead (for prefetching).
const LOOKAHEAD: usize = 8;

/// How addresses beyond the device are treated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OutOfRange {
    /// Stop with an error naming the request.
    #[default]
    Error,
    /// Fold the start address modulo the capacity and cut the request at the end.
    Wrap,
}

/// Everything one run needs besides its request stream.
#[derive(Clone, Debug)]
pub struct RunConfig {
    pub device: DeviceConfig,
    pub seed: u64,
    /// Keep page bytes on the device (memory = bytes stored). Without, the run is
    /// address-only and no content is generated.
    pub store_contents: bool,
    pub content: ContentConfig,
    pub precondition: Option<Precondition>,
    pub out_of_range: OutOfRange,
    /// Read back every host read into a buffer and compare with what was written.
    pub verify_reads: bool,
    pub report: ReportOptions,
    /// Name of the workload, for the report.
    pub workload_name: String,
}

#[derive(Debug, Error)]
pub enum ReplayError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("content model: {0}")]
    Content(String),
    #[error(
        "request {index} ({kind} of {len_bytes} bytes at byte {offset_bytes}) is beyond the \
         device's {capacity_bytes} bytes; pass --wrap to fold addresses into the device"
    )]
    BeyondCapacity {
        index: u64,
        kind: &'static str,
        offset_bytes: u64,
        len_bytes: u64,
        capacity_bytes: u64,
    },
    #[error("request {index}: {source}")]
    Device {
        index: u64,
        #[source]
        source: BlockError,
    },
    #[error("request {index}: read back data that differs from what was written at LBA {lba}")]
    Corruption { index: u64, lba: u64 },
    #[error("preconditioning: {0}")]
    Precondition(BlockError),
    /// Workload-shaped aging cannot run as asked (`--precondition-shape workload`).
    #[error("--precondition-shape workload: {0}")]
    AgingShape(String),
    #[error("laying down existing data: {0}")]
    Snapshot(BlockError),
    #[error(
        "existing data: zone {index} (LBAs {}..{}) is beyond the device's {capacity_lbas} LBAs",
        lbas.start,
        lbas.end
    )]
    SnapshotBeyondCapacity {
        index: usize,
        lbas: std::ops::Range<u64>,
        capacity_lbas: u64,
    },
    #[error("existing data must be laid down before prepare() starts the measurement")]
    SnapshotAfterPrepare,
    #[error("a precondition trace must be given before prepare() starts the measurement")]
    PreconditionTraceAfterPrepare,
    #[error(
        "precondition trace {name}: request {index} ({kind} of {len_bytes} bytes at byte \
         {offset_bytes}) is beyond the device's {capacity_bytes} bytes"
    )]
    PreconditionTraceBeyondCapacity {
        name: String,
        index: u64,
        kind: &'static str,
        offset_bytes: u64,
        len_bytes: u64,
        capacity_bytes: u64,
    },
    #[error("precondition trace {name}: {source}")]
    PreconditionTrace {
        name: String,
        #[source]
        source: Box<ReplayError>,
    },
    /// A built-in workload could not be made for this device.
    #[error(transparent)]
    Builtin(#[from] flashstack_trace::builtin::BuiltinError),
    /// A synthetic workload's spec does not fit this device.
    #[error("synthetic: {0}")]
    Synthetic(#[from] flashstack_trace::SpecError),
    #[error("image {}: {message}", path.display())]
    Image {
        path: std::path::PathBuf,
        message: String,
    },
}

/// Progress of a run, for a progress bar.
pub trait Progress {
    fn phase(&mut self, name: &str, total: Option<u64>);
    fn advance(&mut self, done: u64);
}

/// A progress sink that shows nothing.
pub struct NoProgress;

impl Progress for NoProgress {
    fn phase(&mut self, _name: &str, _total: Option<u64>) {}
    fn advance(&mut self, _done: u64) {}
}

/// The device and the content state a replay drives.
pub struct Replayer {
    pub ftl: Ftl,
    content: ContentModel,
    /// Version of each LBA's content (0 = never written or trimmed: reads as zeros).
    versions: Vec<u32>,
    write_buffer: Vec<u8>,
    read_buffer: Vec<u8>,
    expected: Vec<u8>,
    config: RunConfig,
    time_offset_ns: u64,
    last_arrival_ns: u64,
    /// The device's state over the measurement's simulated time, and the latest
    /// completion (where the closing sample is taken).
    timeline: Timeline,
    last_complete_ns: u64,
    pub wrapped_requests: u64,
    pub precondition: Option<PreconditionReport>,
    /// What replaying the install-time trace did, when one was given
    /// ([`precondition_with_trace`](Self::precondition_with_trace)).
    pub trace_precondition: Option<TracePreconditionReport>,
    /// The install-time trace `prepare` replays after the fill preconditioning.
    install_trace: Option<install::InstallTrace>,
    /// What [`initialise_snapshot`](Self::initialise_snapshot) and
    /// [`age_snapshot`](Self::age_snapshot) did (all zero if never called).
    pub snapshot: SnapshotReport,
    snapshot_ranges: Vec<std::ops::Range<u64>>,
    /// Set by `prepare`: from then on the device is measured.
    prepared: bool,
    /// Threads generating page contents ahead of the device; `None`: all cores but one.
    content_workers: Option<usize>,
    /// Per-process counters of the measured replay, when asked for
    /// ([`track_processes`](Self::track_processes)).
    processes: Option<traced::ProcessStats>,
    /// Data a trace reads without writing it, when planned
    /// ([`plan_existing_reads`](Self::plan_existing_reads)).
    existing_reads: Option<traced::ExistingReads>,
    /// The device keeps written pages as references to the content model
    /// ([`keep_pages_by_reference`](Self::keep_pages_by_reference)).
    by_reference: bool,
    /// The workload's write shape, for workload-shaped aging
    /// ([`shape_aging_on`](Self::shape_aging_on)).
    workload_shape: Option<WorkloadShape>,
}

/// The content model as the device's page source (pages by reference).
struct ModelPages(ContentModel);

impl flashstack_ftl::PageSource for ModelPages {
    fn fill(&self, lba: u64, version: u32, out: &mut [u8]) {
        self.0.fill(lba, version, out);
    }
}

impl Replayer {
    pub fn new(config: RunConfig) -> Result<Replayer, ReplayError> {
        let ftl = Ftl::new(config.device.clone(), config.store_contents, config.seed)?;
        let content = ContentModel::from_config(config.seed, &config.content)
            .map_err(|e| ReplayError::Content(e.to_string()))?;
        let lbas = ftl.capacity_lbas() as usize;
        Ok(Replayer {
            ftl,
            content,
            versions: if config.store_contents {
                vec![0; lbas]
            } else {
                Vec::new()
            },
            write_buffer: Vec::new(),
            read_buffer: Vec::new(),
            expected: vec![0; LBA_SIZE],
            config,
            time_offset_ns: 0,
            last_arrival_ns: 0,
            timeline: Timeline::starting_at(0),
            last_complete_ns: 0,
            wrapped_requests: 0,
            precondition: None,
            trace_precondition: None,
            install_trace: None,
            snapshot: SnapshotReport::default(),
            snapshot_ranges: Vec::new(),
            prepared: false,
            content_workers: None,
            processes: None,
            existing_reads: None,
            by_reference: false,
            workload_shape: None,
        })
    }

    /// Serves the content model's pages of the classes `corpus` holds from it (real pages,
    /// see `flashstack_content::PageCorpus`). Must come before anything is written and
    /// before [`keep_pages_by_reference`](Self::keep_pages_by_reference), so that every
    /// page of the run, and every regenerated one, comes from the same model.
    pub fn use_page_corpus(
        &mut self,
        corpus: std::sync::Arc<flashstack_content::PageCorpus>,
    ) -> Result<(), ReplayError> {
        if self.by_reference || self.prepared || !self.snapshot_ranges.is_empty() {
            return Err(ReplayError::Content(
                "a page corpus must be set before pages are written or kept by reference".into(),
            ));
        }
        self.content = self.content.clone().with_corpus(corpus);
        Ok(())
    }

    /// Keeps the pages the run writes as references to the content model (their LBA,
    /// version and form) instead of their bytes, which are regenerated when read: the
    /// same results, with memory for a device's metadata only. `verify`: compare every
    /// byte when programmed (slow; tests). Needs `store_contents`.
    pub fn keep_pages_by_reference(&mut self, verify: bool) -> Result<(), ReplayError> {
        let pages = Box::new(ModelPages(self.content.clone()));
        self.ftl.set_page_source(pages, verify)?;
        self.by_reference = true;
        Ok(())
    }

    /// Slots the device keeps by reference, compressed fragments ever programmed as
    /// references, and references that did not regenerate their bytes (with verification
    /// on; always 0 otherwise).
    pub fn pages_by_reference(&self) -> (u64, u64, u64) {
        self.ftl.pages_by_reference()
    }

    /// Sets how many threads generate page contents ahead of the device (0: each page
    /// is generated just before its write). Results never depend on it; the default is
    /// one per core but the one driving the device.
    pub fn set_content_workers(&mut self, workers: usize) {
        self.content_workers = Some(workers);
    }

    /// Takes the shape of preconditioning's workload-shaped aging (`AgingShape::Workload`)
    /// from `requests`, the workload the run will measure: its write sizes and the
    /// regions it writes and reads (`shape.rs`). Call it before [`prepare`](Self::prepare).
    pub fn shape_aging_on(&mut self, requests: impl IntoIterator<Item = TraceRequest>) {
        let capacity = self.ftl.capacity_lbas();
        self.workload_shape = Some(WorkloadShape::from_requests(requests, capacity));
    }

    pub fn capacity_bytes(&self) -> u64 {
        self.ftl.capacity_lbas() * LBA_SIZE as u64
    }

    /// Preconditions (if configured), replays the install-time trace (if given), lays down
    /// the data a trace reads without writing it (if planned, and only where neither wrote
    /// it), and starts the measurement phase.
    pub fn prepare(&mut self, progress: &mut dyn Progress) -> Result<(), ReplayError> {
        if let Some(p) = self.config.precondition.clone() {
            let report = precondition::run(self, &p, progress)?;
            self.precondition = Some(report);
        }
        self.replay_install_trace(progress)?;
        self.lay_down_existing_reads(progress)?;
        self.ftl.reset_measurement();
        self.time_offset_ns = self.ftl.measure_start_ns();
        self.last_arrival_ns = self.time_offset_ns;
        self.timeline = Timeline::starting_at(self.time_offset_ns);
        self.last_complete_ns = self.time_offset_ns;
        self.prepared = true;
        Ok(())
    }

    /// Replays `requests` (indexed from 0 for error messages).
    pub fn replay(
        &mut self,
        requests: impl Iterator<Item = TraceRequest>,
        total: Option<u64>,
        progress: &mut dyn Progress,
    ) -> Result<(), ReplayError> {
        self.replay_phase("replay", requests, total, progress)
    }

    /// `replay`, showing `phase` on the progress bar.
    fn replay_phase(
        &mut self,
        phase: &str,
        requests: impl Iterator<Item = TraceRequest>,
        total: Option<u64>,
        progress: &mut dyn Progress,
    ) -> Result<(), ReplayError> {
        progress.phase(phase, total);
        let mut requests = requests.fuse();
        let replayer = self;
        replayer.with_prefill(|r, prefill| match prefill {
            Some(prefill) => r.replay_prefilled(&mut requests, prefill, progress),
            None => r.replay_inline(&mut requests, progress),
        })
    }

    /// Runs `body` with a [`Prefill`] when contents are stored and another core can
    /// generate them, else with none.
    pub(crate) fn with_prefill<R>(
        &mut self,
        body: impl FnOnce(&mut Replayer, Option<&mut Prefill<'_>>) -> R,
    ) -> R {
        let workers = self.content_workers.unwrap_or_else(|| {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            prefill::workers_for(cores)
        });
        let workers = workers.min(prefill::WORKERS_MAX);
        if !self.config.store_contents || workers == 0 {
            return body(self, None);
        }
        let content = self.content.clone();
        let versions = self.versions.clone();
        prefill::with_workers(&content, workers, versions, |prefill| {
            body(self, Some(prefill))
        })
    }

    /// `replay` with page contents generated ahead on other cores: requests are planned
    /// (their writes' versions fixed, in order) well ahead of the device.
    fn replay_prefilled(
        &mut self,
        requests: &mut impl Iterator<Item = TraceRequest>,
        prefill: &mut Prefill,
        progress: &mut dyn Progress,
    ) -> Result<(), ReplayError> {
        let mut ahead: VecDeque<TraceRequest> = VecDeque::new();
        let mut index = 0u64;
        loop {
            while prefill.has_room() && ahead.len() < CHUNKS_AHEAD * CHUNK_PAGES {
                let Some(next) = requests.next() else {
                    prefill.send();
                    break;
                };
                self.plan(prefill, &next);
                ahead.push_back(next);
            }
            if let Some(soon) = ahead.get(LOOKAHEAD) {
                self.ftl.prefetch(soon.offset_bytes / LBA_SIZE as u64);
            }
            if let Some(soon) = ahead.get(LOOKAHEAD / 2) {
                self.ftl
                    .prefetch_block_of(soon.offset_bytes / LBA_SIZE as u64);
            }
            let Some(request) = ahead.pop_front() else {
                break;
            };
            self.submit_with(index, &request, Some(prefill))?;
            index += 1;
            if index.is_multiple_of(4096) {
                progress.advance(index);
            }
        }
        Ok(())
    }

    /// Fixes the versions a request's writes will give (trims reset them), in order.
    fn plan(&self, prefill: &mut Prefill, request: &TraceRequest) {
        if !matches!(request.kind, RequestKind::Write | RequestKind::Trim) {
            return; // flushes have no range; reads change nothing
        }
        let Some((lba, count)) = self.range_if_valid(request) else {
            return;
        };
        match request.kind {
            RequestKind::Write => prefill.plan_write(lba, count),
            _ => prefill.plan_trim(lba, count),
        }
    }

    /// `replay` generating each page just before its write.
    fn replay_inline(
        &mut self,
        requests: &mut impl Iterator<Item = TraceRequest>,
        progress: &mut dyn Progress,
    ) -> Result<(), ReplayError> {
        // A short look-ahead lets the device prefetch the mapping entries of upcoming
        // requests while it serves the current one.
        let mut ahead: VecDeque<TraceRequest> = VecDeque::with_capacity(LOOKAHEAD);
        let mut index = 0u64;
        loop {
            while ahead.len() < LOOKAHEAD {
                let Some(next) = requests.next() else { break };
                self.ftl.prefetch(next.offset_bytes / LBA_SIZE as u64);
                ahead.push_back(next);
            }
            if let Some(soon) = ahead.get(LOOKAHEAD / 2) {
                self.ftl
                    .prefetch_block_of(soon.offset_bytes / LBA_SIZE as u64);
            }
            let Some(request) = ahead.pop_front() else {
                break;
            };
            self.submit(index, &request)?;
            index += 1;
            if index.is_multiple_of(4096) {
                progress.advance(index);
            }
        }
        Ok(())
    }

    /// The report of the measurement phase.
    pub fn report(&self) -> RunReport {
        let g = &self.config.device.nand.geometry;
        let info = RunInfo {
            device: self.config.device.name.clone(),
            gc_policy: self.ftl.policy_name().to_string(),
            workload: self.config.workload_name.clone(),
            seed: self.config.seed,
            contents_stored: self.config.store_contents,
            user_capacity_bytes: self.ftl.user_capacity_bytes(),
            raw_capacity_bytes: g.raw_bytes(),
            precondition: self.precondition_summary(),
        };
        let mut report = RunReport::from_device(&self.ftl, info, &self.config.report);
        let mut timeline = self.timeline.clone();
        if self.prepared {
            timeline.record(self.last_complete_ns, self.probe());
            report.timeline = Some(timeline);
        }
        report
    }

    /// The LBAs a request covers (folded into the device under `--wrap`, with whether it
    /// was), or `None` beyond the device without it. Counts nothing.
    fn resolve_range(&self, request: &TraceRequest) -> Option<(u64, u32, bool)> {
        let first = request.offset_bytes / LBA_SIZE as u64;
        let last = (request.offset_bytes + request.len_bytes - 1) / LBA_SIZE as u64;
        let count = last - first + 1;
        let capacity = self.ftl.capacity_lbas();
        if last < capacity {
            return Some((first, count as u32, false));
        }
        match self.config.out_of_range {
            OutOfRange::Error => None,
            OutOfRange::Wrap => {
                let lba = first % capacity;
                Some((lba, count.min(capacity - lba) as u32, true))
            }
        }
    }

    /// The LBAs a request covers, or `None` where `lba_range` reports an error.
    fn range_if_valid(&self, request: &TraceRequest) -> Option<(u64, u32)> {
        if request.len_bytes == 0 {
            return None;
        }
        self.resolve_range(request)
            .map(|(lba, count, _)| (lba, count))
    }

    fn lba_range(&mut self, index: u64, request: &TraceRequest) -> Result<(u64, u32), ReplayError> {
        match self.resolve_range(request) {
            Some((lba, count, wrapped)) => {
                self.wrapped_requests += u64::from(wrapped);
                Ok((lba, count))
            }
            None => Err(ReplayError::BeyondCapacity {
                index,
                kind: request.kind.name(),
                offset_bytes: request.offset_bytes,
                len_bytes: request.len_bytes,
                capacity_bytes: self.ftl.capacity_lbas() * LBA_SIZE as u64,
            }),
        }
    }

    /// Serves one request at its (shifted) arrival time.
    pub fn submit(&mut self, index: u64, request: &TraceRequest) -> Result<(), ReplayError> {
        self.submit_with(index, request, None)
    }

    /// `submit`, with a planned write's pages taken from `prefill` when given.
    fn submit_with(
        &mut self,
        index: u64,
        request: &TraceRequest,
        prefill: Option<&mut Prefill>,
    ) -> Result<(), ReplayError> {
        let arrival_ns = (self.time_offset_ns + request.arrival_ns).max(self.last_arrival_ns);
        self.last_arrival_ns = arrival_ns;
        let device = |source| ReplayError::Device { index, source };
        let (lbas, complete_ns) = match request.kind {
            RequestKind::Flush => (0, self.ftl.flush(arrival_ns).map_err(device)?.complete_ns),
            RequestKind::Trim => {
                let (lba, count) = self.lba_range(index, request)?;
                if self.config.store_contents {
                    self.versions[lba as usize..(lba + count as u64) as usize].fill(0);
                }
                let done = self.ftl.trim(arrival_ns, lba, count).map_err(device)?;
                (count, done.complete_ns)
            }
            RequestKind::Write => {
                let (lba, count) = self.lba_range(index, request)?;
                let done = self
                    .write_from(arrival_ns, lba, count, request.hints, prefill)
                    .map_err(device)?;
                (count, done)
            }
            RequestKind::Read => {
                let (lba, count) = self.lba_range(index, request)?;
                (count, self.read(index, arrival_ns, lba, count)?)
            }
        };
        if let Some(stats) = &mut self.processes {
            stats.record(request, u64::from(lbas), complete_ns - arrival_ns);
        }
        self.last_complete_ns = self.last_complete_ns.max(complete_ns);
        if self.timeline.due(complete_ns) {
            let probe = self.probe();
            self.timeline.record(complete_ns, probe);
        }
        Ok(())
    }

    /// The device's state for the timeline.
    fn probe(&self) -> Probe {
        let counters = self.ftl.counters();
        let units = self.ftl.config().nand.geometry.units();
        Probe {
            host_write_blocks: counters.host_write_lbas,
            nand_page_programs: counters.page_programs,
            fs_free_segments: None,
            device_free_blocks: (0..units)
                .map(|die| u64::from(self.ftl.free_blocks(die)))
                .sum(),
        }
    }

    /// `write`, its pages taken from `prefill` when given (they must have been planned
    /// as this write).
    pub(crate) fn write_from(
        &mut self,
        arrival_ns: u64,
        lba: u64,
        count: u32,
        hints: flashstack_block::Hints,
        prefill: Option<&mut Prefill>,
    ) -> Result<u64, BlockError> {
        let Some(prefill) = prefill else {
            return self.write(arrival_ns, lba, count, hints);
        };
        let (planned, bytes) = prefill.take(count);
        for (i, &(planned_lba, version)) in planned.iter().enumerate() {
            let l = lba as usize + i;
            assert_eq!(
                planned_lba, l as u64,
                "prefilled page planned for another write"
            );
            debug_assert_eq!(version, prefill::next_version(self.versions[l]));
            // The planned version is the one `write` would give: a store, no load of the
            // (randomly placed) old version.
            self.versions[l] = version;
        }
        if self.by_reference {
            let versions = &self.versions[lba as usize..lba as usize + count as usize];
            let done = self
                .ftl
                .write_versioned(arrival_ns, lba, bytes, versions, hints)?;
            return Ok(done.complete_ns);
        }
        let payload = Payload::Bytes(bytes);
        Ok(self.ftl.write(arrival_ns, lba, payload, hints)?.complete_ns)
    }

    pub(crate) fn write(
        &mut self,
        arrival_ns: u64,
        lba: u64,
        count: u32,
        hints: flashstack_block::Hints,
    ) -> Result<u64, BlockError> {
        if !self.config.store_contents {
            let payload = Payload::Unstored { lba_count: count };
            return Ok(self.ftl.write(arrival_ns, lba, payload, hints)?.complete_ns);
        }
        let bytes = count as usize * LBA_SIZE;
        if self.write_buffer.len() < bytes {
            self.write_buffer.resize(bytes, 0);
        }
        for i in 0..count as usize {
            let l = lba as usize + i;
            // An image's block is rewritten as the content model's first version.
            self.versions[l] = prefill::next_version(self.versions[l]);
            let page = &mut self.write_buffer[i * LBA_SIZE..(i + 1) * LBA_SIZE];
            self.content.fill(l as u64, self.versions[l], page);
        }
        if self.by_reference {
            let versions = &self.versions[lba as usize..lba as usize + count as usize];
            let done = self.ftl.write_versioned(
                arrival_ns,
                lba,
                &self.write_buffer[..bytes],
                versions,
                hints,
            )?;
            return Ok(done.complete_ns);
        }
        let payload = Payload::Bytes(&self.write_buffer[..bytes]);
        Ok(self.ftl.write(arrival_ns, lba, payload, hints)?.complete_ns)
    }

    /// Reads (and with `verify_reads` checks) `count` LBAs; returns the completion time.
    fn read(
        &mut self,
        index: u64,
        arrival_ns: u64,
        lba: u64,
        count: u32,
    ) -> Result<u64, ReplayError> {
        let device = |source| ReplayError::Device { index, source };
        if !(self.config.store_contents && self.config.verify_reads) {
            let done = self
                .ftl
                .read(arrival_ns, lba, count, None)
                .map_err(device)?;
            return Ok(done.complete_ns);
        }
        let bytes = count as usize * LBA_SIZE;
        let mut buffer = std::mem::take(&mut self.read_buffer);
        buffer.resize(bytes, 0);
        let result = self
            .ftl
            .read(arrival_ns, lba, count, Some(&mut buffer[..bytes]));
        let checked = result.map_err(device).and_then(|done| {
            for i in 0..count as usize {
                let l = lba + i as u64;
                if !self.content_matches(l, &buffer[i * LBA_SIZE..(i + 1) * LBA_SIZE]) {
                    return Err(ReplayError::Corruption { index, lba: l });
                }
            }
            Ok(done.complete_ns)
        });
        self.read_buffer = buffer;
        checked
    }

    fn content_matches(&mut self, lba: u64, page: &[u8]) -> bool {
        let version = self.versions[lba as usize];
        if version == 0 {
            return page.iter().all(|&b| b == 0);
        }
        if version == image::IMAGE_VERSION {
            return true;
        }
        self.content.fill(lba, version, &mut self.expected);
        page == self.expected.as_slice()
    }
}

/// Builds, preconditions and replays one configuration, returning its report.
pub fn run(
    config: RunConfig,
    requests: impl Iterator<Item = TraceRequest>,
    total: Option<u64>,
    progress: &mut dyn Progress,
) -> Result<RunReport, ReplayError> {
    let mut replayer = Replayer::new(config)?;
    replayer.prepare(progress)?;
    replayer.replay(requests, total, progress)?;
    Ok(replayer.report())
}

#[cfg(test)]
mod tests;
