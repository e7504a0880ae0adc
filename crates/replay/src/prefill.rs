//! Page contents generated ahead of the device on worker threads.
//!
//! With contents stored, generating each written page with the content model costs about
//! as much as the device model itself. The model is a pure function of (lba, version), so
//! the versions a run's writes will give can be planned in request order ahead of the
//! device, the pages filled on other cores, and handed to the device in the same order:
//! the bytes, and so every result, are those of generating each page just before its
//! write, whatever the number of workers.
//!
//! Memory is bounded: at most [`CHUNKS_AHEAD`] chunks of about [`CHUNK_PAGES`] pages are
//! planned and not yet written.

use std::collections::VecDeque;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::thread::Scope;

use flashstack_block::LBA_SIZE;
use flashstack_content::ContentModel;

use crate::image::IMAGE_VERSION;

/// Pages a chunk gathers before it goes to a worker.
pub(crate) const CHUNK_PAGES: usize = 256;
/// Chunks planned ahead of the device (per worker, two: one filling, one queued).
const CHUNKS_PER_WORKER: usize = 2;
/// Upper bound on planned chunks whatever the worker count.
pub(crate) const CHUNKS_AHEAD: usize = 16;

/// The version a write gives an LBA that holds `version`: an image's block is rewritten
/// as the content model's first version.
pub(crate) fn next_version(version: u32) -> u32 {
    match version {
        IMAGE_VERSION => 1,
        v => v.saturating_add(1),
    }
}

/// Most workers that can be kept busy within the bound on chunks ahead.
pub(crate) const WORKERS_MAX: usize = CHUNKS_AHEAD / CHUNKS_PER_WORKER;

/// Worker threads to use for `cores` available cores: all but the one driving the device,
/// none on a single core (pages are then generated inline).
pub(crate) fn workers_for(cores: usize) -> usize {
    cores.saturating_sub(1).min(WORKERS_MAX)
}

/// One batch of pages: which (lba, version) each is, and their bytes once filled.
#[derive(Default)]
struct Chunk {
    pages: Vec<(u64, u32)>,
    bytes: Vec<u8>,
}

/// Plans writes in request order, has workers fill them, and yields the filled pages in
/// the same order.
pub(crate) struct Prefill {
    /// The version each LBA will hold once every planned request has been served.
    planned: Vec<u32>,
    to_workers: Vec<Sender<Chunk>>,
    from_workers: Vec<Receiver<Chunk>>,
    /// Worker of each chunk sent and not yet taken back, oldest first.
    in_flight: VecDeque<usize>,
    next_worker: usize,
    building: Chunk,
    /// The chunk being consumed, and how many of its pages are taken.
    current: Chunk,
    taken: usize,
    spare: Vec<Chunk>,
}

impl Prefill {
    /// Starts `workers` (≥ 1) threads in `scope` filling pages with `content`; `versions`
    /// is what each LBA holds now.
    pub(crate) fn start<'scope, 'env>(
        scope: &'scope Scope<'scope, 'env>,
        content: &'env ContentModel,
        workers: usize,
        versions: Vec<u32>,
    ) -> Prefill {
        assert!(workers >= 1);
        let mut to_workers = Vec::with_capacity(workers);
        let mut from_workers = Vec::with_capacity(workers);
        for _ in 0..workers {
            let (job_tx, job_rx) = channel::<Chunk>();
            let (done_tx, done_rx) = channel::<Chunk>();
            scope.spawn(move || {
                // Ends when the planner drops its sender (or stops taking results).
                for mut chunk in job_rx {
                    fill(content, &mut chunk);
                    if done_tx.send(chunk).is_err() {
                        break;
                    }
                }
            });
            to_workers.push(job_tx);
            from_workers.push(done_rx);
        }
        Prefill {
            planned: versions,
            to_workers,
            from_workers,
            in_flight: VecDeque::new(),
            next_worker: 0,
            building: Chunk::default(),
            current: Chunk::default(),
            taken: 0,
            spare: Vec::new(),
        }
    }

    /// True while more may be planned without exceeding the bound on work ahead.
    pub(crate) fn has_room(&self) -> bool {
        self.in_flight.len() < (self.to_workers.len() * CHUNKS_PER_WORKER).min(CHUNKS_AHEAD)
    }

    /// Plans a write of `count` LBAs from `lba`; its pages come out of [`Prefill::take`].
    pub(crate) fn plan_write(&mut self, lba: u64, count: u32) {
        for l in lba..lba + count as u64 {
            let version = next_version(self.planned[l as usize]);
            self.planned[l as usize] = version;
            self.building.pages.push((l, version));
        }
        if self.building.pages.len() >= CHUNK_PAGES {
            self.send();
        }
    }

    /// Plans a trim: the LBAs read as zeros until written again.
    pub(crate) fn plan_trim(&mut self, lba: u64, count: u32) {
        self.planned[lba as usize..(lba + count as u64) as usize].fill(0);
    }

    /// Sends what has been planned so far to a worker (nothing if nothing was).
    pub(crate) fn send(&mut self) {
        if self.building.pages.is_empty() {
            return;
        }
        let mut next = self.spare.pop().unwrap_or_default();
        next.pages.clear();
        let chunk = std::mem::replace(&mut self.building, next);
        let worker = self.next_worker;
        self.next_worker = (worker + 1) % self.to_workers.len();
        self.to_workers[worker]
            .send(chunk)
            .expect("content worker stopped");
        self.in_flight.push_back(worker);
    }

    /// The next `count` planned pages, in plan order: their (lba, version) and bytes.
    /// Pages of one write never span chunks.
    pub(crate) fn take(&mut self, count: u32) -> (&[(u64, u32)], &[u8]) {
        let count = count as usize;
        if self.taken == self.current.pages.len() {
            if self.in_flight.is_empty() {
                self.send();
            }
            let worker = self.in_flight.pop_front().expect("a write was planned");
            let done = self.from_workers[worker]
                .recv()
                .expect("content worker stopped");
            let old = std::mem::replace(&mut self.current, done);
            self.spare.push(old);
            self.taken = 0;
        }
        let range = self.taken..self.taken + count;
        assert!(
            range.end <= self.current.pages.len(),
            "a write's pages span two chunks"
        );
        self.taken = range.end;
        (
            &self.current.pages[range.clone()],
            &self.current.bytes[range.start * LBA_SIZE..range.end * LBA_SIZE],
        )
    }
}

fn fill(content: &ContentModel, chunk: &mut Chunk) {
    chunk.bytes.resize(chunk.pages.len() * LBA_SIZE, 0);
    for (&(lba, version), page) in chunk
        .pages
        .iter()
        .zip(chunk.bytes.chunks_exact_mut(LBA_SIZE))
    {
        content.fill(lba, version, page);
    }
}

/// A stream of writes `(lba, count)` served in order, planned ahead through a
/// [`Prefill`] when there is one (else each is generated as it is written).
pub(crate) struct WriteStream<I: Iterator<Item = (u64, u32)>> {
    source: std::iter::Fuse<I>,
    planned: VecDeque<(u64, u32)>,
}

impl<I: Iterator<Item = (u64, u32)>> WriteStream<I> {
    pub(crate) fn new(source: I) -> Self {
        WriteStream {
            source: source.fuse(),
            planned: VecDeque::new(),
        }
    }

    /// The next write, after planning ahead as far as `prefill` has room.
    pub(crate) fn next(&mut self, prefill: Option<&mut Prefill>) -> Option<(u64, u32)> {
        let Some(prefill) = prefill else {
            return self.planned.pop_front().or_else(|| self.source.next());
        };
        while prefill.has_room() {
            let Some((lba, count)) = self.source.next() else {
                prefill.send();
                break;
            };
            prefill.plan_write(lba, count);
            self.planned.push_back((lba, count));
        }
        self.planned.pop_front()
    }
}
