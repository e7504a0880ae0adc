//! Page contents generated ahead of the device on worker threads.
//!
//! With contents stored, generating each written page with the content model costs about
//! as much as the device model itself. The model is a pure function of (lba, version), so
//! the versions a run's writes will give can be planned in request order ahead of the
//! device, the pages filled on other cores, and handed to the device in the same order:
//! the bytes, and so every result, are those of generating each page just before its
//! write, whatever the number of workers.
//!
//! Planned chunks wait in one shared queue, oldest first. Workers take from it; so does
//! the thread driving the device whenever the chunk it needs next is still being filled
//! (or not yet started), rather than wait. Memory is bounded: at most [`CHUNKS_AHEAD`]
//! chunks of about [`CHUNK_PAGES`] pages are planned and not yet written.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Condvar, Mutex};
use std::thread::Scope;

use flashstack_block::LBA_SIZE;
use flashstack_content::ContentModel;

use crate::image::IMAGE_VERSION;

/// Pages a chunk gathers before it is queued for filling.
pub(crate) const CHUNK_PAGES: usize = 256;
/// Upper bound on planned chunks not yet written.
pub(crate) const CHUNKS_AHEAD: usize = 16;
/// Most worker threads (beyond that, chunks ahead would not keep them busy).
pub(crate) const WORKERS_MAX: usize = CHUNKS_AHEAD / 2;

/// The version a write gives an LBA that holds `version`: an image's block is rewritten
/// as the content model's first version.
pub(crate) fn next_version(version: u32) -> u32 {
    match version {
        IMAGE_VERSION => 1,
        v => v.saturating_add(1),
    }
}

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

/// What the planner and the workers share: chunks not yet started (oldest first, by
/// number) and chunks filled, by number.
#[derive(Default)]
struct Shared {
    queued: VecDeque<(u64, Chunk)>,
    filled: BTreeMap<u64, Chunk>,
    closed: bool,
    /// A worker panicked: the chunk it held will never be filled.
    worker_failed: bool,
}

/// The shared state and its signal (a chunk queued, a chunk filled, or closing).
#[derive(Default)]
struct Queue {
    state: Mutex<Shared>,
    changed: Condvar,
}

impl Queue {
    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        // A worker that panicked takes the scope down with it; the data stays usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A worker's loop: fill the oldest queued chunk, until closed.
    fn work(&self, content: &ContentModel) {
        let _failure = FailureFlag(self);
        let mut shared = self.lock();
        loop {
            if let Some((number, mut chunk)) = shared.queued.pop_front() {
                drop(shared);
                fill(content, &mut chunk);
                shared = self.lock();
                shared.filled.insert(number, chunk);
                self.changed.notify_all();
            } else if shared.closed {
                return;
            } else {
                shared = self.changed.wait(shared).unwrap_or_else(|e| e.into_inner());
            }
        }
    }
}

/// Plans writes in request order, has workers fill them, and yields the filled pages in
/// the same order.
pub(crate) struct Prefill<'env> {
    content: &'env ContentModel,
    queue: &'env Queue,
    /// The version each LBA will hold once every planned request has been served.
    planned: Vec<u32>,
    /// Number of the next chunk to queue, and of the next to take.
    next_queued: u64,
    next_taken: u64,
    building: Chunk,
    /// The chunk being consumed, and how many of its pages are taken.
    current: Chunk,
    taken: usize,
    spare: Vec<Chunk>,
}

/// Runs `body` with a [`Prefill`] whose `workers` (≥ 1) threads fill pages with `content`;
/// `versions` is what each LBA holds now. The workers stop when `body` returns.
pub(crate) fn with_workers<R>(
    content: &ContentModel,
    workers: usize,
    versions: Vec<u32>,
    body: impl FnOnce(&mut Prefill<'_>) -> R,
) -> R {
    assert!(workers >= 1);
    let queue = Queue::default();
    std::thread::scope(|scope: &Scope<'_, '_>| {
        for _ in 0..workers {
            scope.spawn(|| queue.work(content));
        }
        let mut prefill = Prefill {
            content,
            queue: &queue,
            planned: versions,
            next_queued: 0,
            next_taken: 0,
            building: Chunk::default(),
            current: Chunk::default(),
            taken: 0,
            spare: Vec::new(),
        };
        // Closed however `body` ends, a panic included: the scope waits for the workers.
        let _close = Closer(&queue);
        body(&mut prefill)
    })
}

/// Tells the planner when a worker unwinds, so it does not wait for the chunk forever.
struct FailureFlag<'q>(&'q Queue);

impl Drop for FailureFlag<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.lock().worker_failed = true;
            self.0.changed.notify_all();
        }
    }
}

/// Closes the queue when dropped, so waiting workers return.
struct Closer<'q>(&'q Queue);

impl Drop for Closer<'_> {
    fn drop(&mut self) {
        self.0.lock().closed = true;
        self.0.changed.notify_all();
    }
}

impl Prefill<'_> {
    /// True while more may be planned without exceeding the bound on work ahead.
    pub(crate) fn has_room(&self) -> bool {
        self.next_queued - self.next_taken < CHUNKS_AHEAD as u64
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

    /// Queues what has been planned so far for filling (nothing if nothing was).
    pub(crate) fn send(&mut self) {
        if self.building.pages.is_empty() {
            return;
        }
        let mut next = self.spare.pop().unwrap_or_default();
        next.pages.clear();
        let chunk = std::mem::replace(&mut self.building, next);
        self.queue
            .lock()
            .queued
            .push_back((self.next_queued, chunk));
        self.next_queued += 1;
        self.queue.changed.notify_all();
    }

    /// The next `count` planned pages, in plan order: their (lba, version) and bytes.
    /// Pages of one write never span chunks.
    pub(crate) fn take(&mut self, count: u32) -> (&[(u64, u32)], &[u8]) {
        let count = count as usize;
        if self.taken == self.current.pages.len() {
            let done = self.next_chunk();
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

    /// The oldest planned chunk, filled. While it is not, this thread fills the oldest
    /// queued chunk itself rather than wait.
    fn next_chunk(&mut self) -> Chunk {
        if self.next_taken == self.next_queued {
            self.send();
        }
        assert!(self.next_taken < self.next_queued, "a write was planned");
        let wanted = self.next_taken;
        self.next_taken += 1;
        let mut shared = self.queue.lock();
        loop {
            if let Some(chunk) = shared.filled.remove(&wanted) {
                return chunk;
            }
            if let Some((number, mut chunk)) = shared.queued.pop_front() {
                drop(shared);
                fill(self.content, &mut chunk);
                if number == wanted {
                    return chunk;
                }
                shared = self.queue.lock();
                shared.filled.insert(number, chunk);
                continue;
            }
            assert!(!shared.worker_failed, "a content worker panicked");
            shared = self
                .queue
                .changed
                .wait(shared)
                .unwrap_or_else(|e| e.into_inner());
        }
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
    pub(crate) fn next(&mut self, prefill: Option<&mut Prefill<'_>>) -> Option<(u64, u32)> {
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
