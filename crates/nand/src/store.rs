//! Sparse storage of page bytes: only slots that were programmed with data hold memory.

use std::collections::HashMap;
use std::mem::MaybeUninit;

use flashstack_sim::memory::LazyTable;

/// Frames per allocation chunk (1 MiB chunks of 4 KiB frames keep allocation count and
/// overhead low).
pub const FRAMES_PER_CHUNK: usize = 256;
pub(crate) const NO_FRAME: u32 = u32::MAX;

/// What a frame written with zeros reads as (frames are at most 4 KiB).
static ZEROS: [u8; crate::SLOT_SIZE as usize] = [0; crate::SLOT_SIZE as usize];

/// An arena of 4 KiB frames plus a map from physical slot to frame. Frames freed by an erase
/// are reused before the arena grows, so memory tracks the bytes actually stored. A slot
/// relocated by GC shares its source's frame (copy-on-write is never needed: programmed
/// slots are immutable until erased), so relocation moves no bytes.
#[derive(Debug, Default)]
pub(crate) struct FrameStore {
    /// The frames' bytes, [`FRAMES_PER_CHUNK`] frames per chunk. Chunks are allocated
    /// without being zeroed (after an earlier device is dropped its memory comes back
    /// from the heap, which `calloc` would have to clear): a frame's bytes are
    /// initialized when it is written with data that is not all zeros; a frame written
    /// with zeros (`zero_frame`) is never read from here.
    chunks: Vec<Box<[MaybeUninit<u8>]>>,
    /// Per frame, whether it holds only zeros (its chunk bytes then unused): mkfs zeroes
    /// tens of MiB of NAT and SIT blocks on a phone-sized device, which need no copy.
    zero_frame: Vec<bool>,
    free: Vec<u32>,
    frame_count: u32,
    /// Frame of each slot (`NO_FRAME`: none); untouched entries take no memory.
    frame_of_slot: LazyTable,
    /// Slots referring to each frame.
    refs: Vec<u16>,
    frame_bytes: usize,
    /// With deduplication on, frames holding identical bytes are stored once.
    dedup: Option<Dedup>,
}

/// The index of stored frames by a sample of their bytes. Lookups only (no iteration), so
/// no hash-map order can reach a result; a hit is confirmed by comparing every byte.
#[derive(Debug, Default)]
struct Dedup {
    by_key: HashMap<u64, u32>,
    /// The key each frame was indexed under (`u64::MAX`: not indexed).
    key_of_frame: Vec<u64>,
}

/// A cheap key of a frame's bytes: 32 words spread over it, mixed. Distinct frames that
/// share it only cost a comparison; they are stored separately.
fn frame_key(data: &[u8]) -> u64 {
    let words = data.len() / 8;
    let step = (words / 32).max(1);
    let mut h: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in (0..words).step_by(step) {
        let w = u64::from_le_bytes(data[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
        h = (h ^ w).wrapping_mul(0xBF58_476D_1CE4_E5B9).rotate_left(29);
    }
    h
}

impl FrameStore {
    pub fn new(slot_count: u64, frame_bytes: u32) -> Self {
        FrameStore {
            frame_of_slot: LazyTable::new(slot_count as usize),
            frame_bytes: frame_bytes as usize,
            ..Default::default()
        }
    }

    fn frame(&self, frame: u32) -> &[u8] {
        if self.zero_frame[frame as usize] {
            return &ZEROS[..self.frame_bytes];
        }
        let chunk = frame as usize / FRAMES_PER_CHUNK;
        let offset = (frame as usize % FRAMES_PER_CHUNK) * self.frame_bytes;
        let bytes = &self.chunks[chunk][offset..offset + self.frame_bytes];
        // SAFETY: a frame not marked zero was written in full (`write_frame`) or imported
        // (initialized bytes), so these bytes are initialized.
        unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<u8>(), bytes.len()) }
    }

    /// Makes `frame` hold `data`.
    fn write_frame(&mut self, frame: u32, data: &[u8]) {
        // An OR over each 64 bytes vectorizes; most data differs from zero in the first.
        let zero = data
            .chunks(64)
            .all(|line| line.iter().fold(0, |any, &b| any | b) == 0);
        self.zero_frame[frame as usize] = zero;
        if !zero {
            let chunk = frame as usize / FRAMES_PER_CHUNK;
            let offset = (frame as usize % FRAMES_PER_CHUNK) * self.frame_bytes;
            // Stored bytes are rarely read back soon: keep them out of the cache.
            flashstack_sim::memory::copy_streaming_uninit(
                &mut self.chunks[chunk][offset..offset + self.frame_bytes],
                data,
            );
        }
    }

    /// A frame holding `data`: a freed one, else the next one of the arena.
    fn allocate(&mut self, data: &[u8]) -> u32 {
        let frame = match self.free.pop() {
            Some(frame) => frame,
            None => {
                let frame = self.frame_count;
                if frame as usize / FRAMES_PER_CHUNK == self.chunks.len() {
                    let bytes = FRAMES_PER_CHUNK * self.frame_bytes;
                    self.chunks.push(Box::new_uninit_slice(bytes));
                }
                self.frame_count += 1;
                self.refs.push(0);
                self.zero_frame.push(true);
                frame
            }
        };
        self.write_frame(frame, data);
        frame
    }

    /// Turns deduplication of identical frames on: from now on a frame written with bytes
    /// already stored shares that frame (memory follows distinct bytes, not slots).
    pub fn enable_dedup(&mut self) {
        if self.dedup.is_some() {
            return;
        }
        let mut dedup = Dedup {
            by_key: HashMap::new(),
            key_of_frame: vec![u64::MAX; self.frame_count as usize],
        };
        for frame in 0..self.frame_count {
            if self.refs[frame as usize] > 0 {
                let key = frame_key(self.frame(frame));
                dedup.by_key.entry(key).or_insert(frame);
                dedup.key_of_frame[frame as usize] = key;
            }
        }
        self.dedup = Some(dedup);
    }

    /// A stored frame holding exactly `data` that can take one more reference.
    fn find_same(&self, key: u64, data: &[u8]) -> Option<u32> {
        let frame = *self.dedup.as_ref()?.by_key.get(&key)?;
        (self.refs[frame as usize] < u16::MAX && self.frame(frame) == data).then_some(frame)
    }

    pub fn put(&mut self, slot: u64, data: &[u8]) {
        debug_assert_eq!(data.len(), self.frame_bytes);
        let existing = self.frame_of_slot.at(slot as usize);
        assert_eq!(
            existing, NO_FRAME,
            "slot {slot} programmed twice without erase"
        );
        if self.dedup.is_some() {
            return self.put_dedup(slot, data);
        }
        let frame = self.allocate(data);
        self.frame_of_slot.set(slot as usize, frame);
        self.refs[frame as usize] = 1;
    }

    fn put_dedup(&mut self, slot: u64, data: &[u8]) {
        let key = frame_key(data);
        if let Some(frame) = self.find_same(key, data) {
            self.refs[frame as usize] += 1;
            self.frame_of_slot.set(slot as usize, frame);
            return;
        }
        let frame = self.allocate(data);
        self.frame_of_slot.set(slot as usize, frame);
        self.refs[frame as usize] = 1;
        let dedup = self.dedup.as_mut().expect("checked by the caller");
        dedup
            .key_of_frame
            .resize(self.frame_count as usize, u64::MAX);
        dedup.key_of_frame[frame as usize] = key;
        // The newest frame with a key answers for it (an older one may be full).
        dedup.by_key.insert(key, frame);
    }

    /// Makes `slot` hold the same bytes as `source` (zeros if the source holds none).
    pub fn share(&mut self, slot: u64, source: u64) {
        assert_eq!(
            self.frame_of_slot.at(slot as usize),
            NO_FRAME,
            "slot {slot} programmed twice"
        );
        let frame = self.frame_of_slot.at(source as usize);
        if frame == NO_FRAME {
            return;
        }
        if self.refs[frame as usize] == u16::MAX {
            // A frame shared by as many slots as its count can say: copy it.
            let bytes = self.frame(frame).to_vec();
            let copy = self.allocate(&bytes);
            self.refs[copy as usize] = 1;
            self.frame_of_slot.set(slot as usize, copy);
            if let Some(dedup) = self.dedup.as_mut() {
                dedup
                    .key_of_frame
                    .resize(self.frame_count as usize, u64::MAX);
            }
            return;
        }
        self.refs[frame as usize] += 1;
        self.frame_of_slot.set(slot as usize, frame);
    }

    /// Cache hints for the reference counts of the frames behind `slots` (a block about to
    /// be relocated and erased touches each of them once, at random). No effect on results.
    #[inline]
    pub fn prefetch_refs(&self, slots: std::ops::Range<u64>) {
        for frame in self
            .frame_of_slot
            .range(slots.start as usize..slots.end as usize)
        {
            if let Some(count) = self.refs.get(frame as usize) {
                flashstack_sim::memory::prefetch(count);
            }
        }
    }

    /// Copies the slot's bytes into `out`; a slot without data reads as zeros.
    pub fn get(&self, slot: u64, out: &mut [u8]) {
        match self.frame_of_slot.at(slot as usize) {
            NO_FRAME => out.fill(0),
            frame => out.copy_from_slice(self.frame(frame)),
        }
    }

    pub fn release(&mut self, slot: u64) {
        let frame = self.frame_of_slot.replace(slot as usize, NO_FRAME);
        if frame != NO_FRAME {
            self.refs[frame as usize] -= 1;
            if self.refs[frame as usize] == 0 {
                self.free.push(frame);
                self.unindex(frame);
            }
        }
    }

    fn unindex(&mut self, frame: u32) {
        let Some(dedup) = self.dedup.as_mut() else {
            return;
        };
        let Some(key) = dedup.key_of_frame.get_mut(frame as usize) else {
            return;
        };
        let key = std::mem::replace(key, u64::MAX);
        if key != u64::MAX && dedup.by_key.get(&key) == Some(&frame) {
            dedup.by_key.remove(&key);
        }
    }

    /// Frames currently holding data.
    pub fn frames_in_use(&self) -> u64 {
        self.frame_count as u64 - self.free.len() as u64
    }

    pub fn dedup_enabled(&self) -> bool {
        self.dedup.is_some()
    }

    /// The stored bytes in portable form: per slot the index of its frame among the
    /// frames in use (numbered in order of their first slot; [`NO_FRAME`] for none), and
    /// those frames' bytes in that order, in chunks of [`FRAMES_PER_CHUNK`] frames.
    pub fn export(&self) -> StoredFrames {
        let mut dense = vec![NO_FRAME; self.frame_count as usize];
        let mut slot_frame = Vec::with_capacity(self.frame_of_slot.len());
        let mut order: Vec<u32> = Vec::new();
        for frame in self.frame_of_slot.iter() {
            if frame == NO_FRAME {
                slot_frame.push(NO_FRAME);
                continue;
            }
            if dense[frame as usize] == NO_FRAME {
                dense[frame as usize] = order.len() as u32;
                order.push(frame);
            }
            slot_frame.push(dense[frame as usize]);
        }
        let chunk_bytes = FRAMES_PER_CHUNK * self.frame_bytes;
        let chunks = order
            .chunks(FRAMES_PER_CHUNK)
            .map(|frames| {
                let mut chunk = vec![0u8; chunk_bytes].into_boxed_slice();
                for (i, &f) in frames.iter().enumerate() {
                    chunk[i * self.frame_bytes..(i + 1) * self.frame_bytes]
                        .copy_from_slice(self.frame(f));
                }
                chunk
            })
            .collect();
        StoredFrames {
            slot_frame,
            frame_count: order.len() as u32,
            chunks,
        }
    }

    /// A store holding `frames` (as [`FrameStore::export`] gives them), checked: every
    /// slot's frame exists and every frame is used.
    pub fn import(frames: StoredFrames, frame_bytes: u32, dedup: bool) -> Result<Self, String> {
        let StoredFrames {
            slot_frame,
            frame_count,
            chunks,
        } = frames;
        let chunk_bytes = FRAMES_PER_CHUNK * frame_bytes as usize;
        if chunks.len() != (frame_count as usize).div_ceil(FRAMES_PER_CHUNK)
            || chunks.iter().any(|c| c.len() != chunk_bytes)
        {
            return Err(format!(
                "{} chunks of frame bytes do not hold {frame_count} frames",
                chunks.len()
            ));
        }
        let mut refs = vec![0u16; frame_count as usize];
        for (slot, &frame) in slot_frame.iter().enumerate() {
            if frame == NO_FRAME {
                continue;
            }
            let Some(count) = refs.get_mut(frame as usize) else {
                return Err(format!(
                    "slot {slot} refers to frame {frame} of {frame_count}"
                ));
            };
            *count = count.checked_add(1).ok_or_else(|| {
                format!("frame {frame} is shared by more than {} slots", u16::MAX)
            })?;
        }
        if let Some(unused) = refs.iter().position(|&r| r == 0) {
            return Err(format!("frame {unused} is stored but no slot refers to it"));
        }
        let mut store = FrameStore {
            chunks: chunks
                .into_iter()
                .map(|chunk| {
                    // SAFETY: `[u8]` and `[MaybeUninit<u8>]` have the same layout, and
                    // initialized bytes are valid `MaybeUninit<u8>`.
                    unsafe { Box::from_raw(Box::into_raw(chunk) as *mut [MaybeUninit<u8>]) }
                })
                .collect(),
            zero_frame: vec![false; frame_count as usize],
            free: Vec::new(),
            frame_count,
            frame_of_slot: LazyTable::from_values(&slot_frame),
            refs,
            frame_bytes: frame_bytes as usize,
            dedup: None,
        };
        if dedup {
            store.enable_dedup();
        }
        Ok(store)
    }

    /// The slot table is about to be mostly filled (a speed hint, see
    /// `flashstack_sim::memory::advise_dense`).
    pub fn advise_dense(&self) {
        self.frame_of_slot.advise_dense();
    }

    /// Slots the store covers.
    pub fn slots(&self) -> usize {
        self.frame_of_slot.len()
    }

    pub fn has_frame(&self, slot: u64) -> bool {
        self.frame_of_slot.at(slot as usize) != NO_FRAME
    }
}

/// Stored page bytes in portable form ([`FrameStore::export`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredFrames {
    /// Per physical slot, the index of its frame (`u32::MAX`: no bytes stored).
    pub slot_frame: Vec<u32>,
    pub frame_count: u32,
    /// The frames' bytes in index order, [`FRAMES_PER_CHUNK`] frames per chunk (the last
    /// chunk padded with zeros).
    pub chunks: Vec<Box<[u8]>>,
}

#[cfg(test)]
mod tests {
    use super::{FrameStore, FRAMES_PER_CHUNK};

    fn read(store: &FrameStore, slot: u64) -> Vec<u8> {
        let mut out = vec![7u8; 4096];
        store.get(slot, &mut out);
        out
    }

    /// Frames written with zeros keep no bytes but read, share, free, reuse, export and
    /// import as any other frame.
    #[test]
    fn zero_frames_behave_as_stored_frames() {
        let slots = (FRAMES_PER_CHUNK * 3) as u64;
        let mut store = FrameStore::new(slots, 4096);
        let zeros = vec![0u8; 4096];
        let mut last_byte = vec![0u8; 4096];
        last_byte[4095] = 1;
        for slot in 0..slots / 2 {
            let data = if slot % 3 == 0 { &zeros } else { &last_byte };
            store.put(slot, data);
        }
        assert_eq!(store.frames_in_use(), slots / 2);
        assert_eq!(read(&store, 0), zeros);
        assert_eq!(read(&store, 1), last_byte);
        assert_eq!(read(&store, slots - 1), zeros, "never programmed");
        store.share(slots - 1, 1);
        assert_eq!(read(&store, slots - 1), last_byte);
        // A freed zero frame reused for data, and a freed data frame for zeros.
        store.release(0);
        store.release(2);
        store.put(slots - 2, &last_byte);
        store.put(slots - 3, &zeros);
        assert_eq!(read(&store, slots - 2), last_byte);
        assert_eq!(read(&store, slots - 3), zeros);
        let exported = store.export();
        let back = FrameStore::import(exported.clone(), 4096, false).unwrap();
        assert_eq!(back.export(), exported);
        for slot in 0..slots {
            assert_eq!(read(&back, slot), read(&store, slot), "slot {slot}");
        }
        let mut deduped = FrameStore::import(exported, 4096, true).unwrap();
        deduped.put(slots - 4, &zeros);
        assert_eq!(read(&deduped, slots - 4), zeros);
    }
}
