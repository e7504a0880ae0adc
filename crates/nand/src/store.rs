//! Sparse storage of page bytes: only slots that were programmed with data hold memory.

const FRAMES_PER_CHUNK: usize = 256; // 1 MiB chunks keep allocation count and overhead low.
const NO_FRAME: u32 = u32::MAX;

/// An arena of 4 KiB frames plus a map from physical slot to frame. Frames freed by an erase
/// are reused before the arena grows, so memory tracks the bytes actually stored. A slot
/// relocated by GC shares its source's frame (copy-on-write is never needed: programmed
/// slots are immutable until erased), so relocation moves no bytes.
#[derive(Debug, Default)]
pub(crate) struct FrameStore {
    chunks: Vec<Box<[u8]>>,
    free: Vec<u32>,
    frame_count: u32,
    frame_of_slot: Vec<u32>,
    /// Slots referring to each frame.
    refs: Vec<u16>,
    frame_bytes: usize,
}

impl FrameStore {
    pub fn new(slot_count: u64, frame_bytes: u32) -> Self {
        FrameStore {
            frame_of_slot: flashstack_sim::memory::table(slot_count as usize, NO_FRAME),
            frame_bytes: frame_bytes as usize,
            ..Default::default()
        }
    }

    fn frame_mut(&mut self, frame: u32) -> &mut [u8] {
        let chunk = frame as usize / FRAMES_PER_CHUNK;
        let offset = (frame as usize % FRAMES_PER_CHUNK) * self.frame_bytes;
        &mut self.chunks[chunk][offset..offset + self.frame_bytes]
    }

    fn frame(&self, frame: u32) -> &[u8] {
        let chunk = frame as usize / FRAMES_PER_CHUNK;
        let offset = (frame as usize % FRAMES_PER_CHUNK) * self.frame_bytes;
        &self.chunks[chunk][offset..offset + self.frame_bytes]
    }

    fn allocate(&mut self) -> u32 {
        if let Some(frame) = self.free.pop() {
            return frame;
        }
        let frame = self.frame_count;
        if frame as usize / FRAMES_PER_CHUNK == self.chunks.len() {
            let bytes = FRAMES_PER_CHUNK * self.frame_bytes;
            self.chunks.push(vec![0u8; bytes].into_boxed_slice());
        }
        self.frame_count += 1;
        self.refs.push(0);
        frame
    }

    pub fn put(&mut self, slot: u64, data: &[u8]) {
        debug_assert_eq!(data.len(), self.frame_bytes);
        let existing = self.frame_of_slot[slot as usize];
        assert_eq!(
            existing, NO_FRAME,
            "slot {slot} programmed twice without erase"
        );
        let frame = self.allocate();
        // Stored bytes are rarely read back soon: keep them out of the cache.
        flashstack_sim::memory::copy_streaming(self.frame_mut(frame), data);
        self.frame_of_slot[slot as usize] = frame;
        self.refs[frame as usize] = 1;
    }

    /// Makes `slot` hold the same bytes as `source` (zeros if the source holds none).
    pub fn share(&mut self, slot: u64, source: u64) {
        assert_eq!(
            self.frame_of_slot[slot as usize], NO_FRAME,
            "slot {slot} programmed twice"
        );
        let frame = self.frame_of_slot[source as usize];
        if frame != NO_FRAME {
            self.refs[frame as usize] += 1;
            self.frame_of_slot[slot as usize] = frame;
        }
    }

    /// Cache hints for the reference counts of the frames behind `slots` (a block about to
    /// be relocated and erased touches each of them once, at random). No effect on results.
    #[inline]
    pub fn prefetch_refs(&self, slots: std::ops::Range<u64>) {
        for &frame in &self.frame_of_slot[slots.start as usize..slots.end as usize] {
            if let Some(count) = self.refs.get(frame as usize) {
                flashstack_sim::memory::prefetch(count);
            }
        }
    }

    /// Copies the slot's bytes into `out`; a slot without data reads as zeros.
    pub fn get(&self, slot: u64, out: &mut [u8]) {
        match self.frame_of_slot[slot as usize] {
            NO_FRAME => out.fill(0),
            frame => out.copy_from_slice(self.frame(frame)),
        }
    }

    pub fn release(&mut self, slot: u64) {
        let frame = std::mem::replace(&mut self.frame_of_slot[slot as usize], NO_FRAME);
        if frame != NO_FRAME {
            self.refs[frame as usize] -= 1;
            if self.refs[frame as usize] == 0 {
                self.free.push(frame);
            }
        }
    }

    /// Frames currently holding data.
    pub fn frames_in_use(&self) -> u64 {
        self.frame_count as u64 - self.free.len() as u64
    }
}
