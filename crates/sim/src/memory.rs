//! Large simulator tables (mapping tables, per-page OOB arrays) are touched at random; on
//! Linux they are backed by transparent huge pages where the kernel allows it, which removes
//! most TLB misses from the hot path. Purely a speed hint: results never depend on it.

/// A vector of `len` copies of `value`, advised to use huge pages before it is first
/// touched (advice given after the pages are faulted in would come too late).
pub fn table<T: Clone>(len: usize, value: T) -> Vec<T> {
    let mut v: Vec<T> = Vec::with_capacity(len);
    advise_huge_pages(v.as_ptr() as usize, len * std::mem::size_of::<T>());
    v.resize(len, value);
    v
}

/// Element types whose all-zero bit pattern is the value zero, so a table of them can be
/// taken from the allocator's zeroed memory.
pub trait Zeroed: Copy + Default + 'static {}
impl Zeroed for u8 {}
impl Zeroed for u16 {}
impl Zeroed for u32 {}
impl Zeroed for u64 {}

/// A vector of `len` zeros whose memory the kernel provides on first touch: a large
/// allocation comes from fresh anonymous pages (calloc knows they are zero and does not
/// write them), so building it costs microseconds and its resident memory follows the
/// entries written, 4 KiB at a time. Unlike [`table`] it is not advised to use huge
/// pages: every first touch would then fault in and zero 2 MiB, and a device's many write
/// frontiers touch a different 2 MiB of each spare-area table (measured on
/// `mqsim-default`: 128 frontiers made 100,000 writes take 7.6 s and 1.1 GB).
pub fn zeroed_table<T: Zeroed>(len: usize) -> Vec<T> {
    // `vec![0; n]` of an integer type allocates zeroed memory without writing it.
    vec![T::default(); len]
}

/// Advises the kernel to back the still untouched part of `table` with huge pages: a hint
/// for a lazily built table ([`zeroed_table`], [`LazyTable`]) that is about to be mostly
/// filled (a device being preconditioned), so the hot path that follows suffers fewer TLB
/// misses. Pages already touched keep their 4 KiB backing. No effect on results.
pub fn advise_dense<T>(table: &[T]) {
    advise_huge_pages(table.as_ptr() as usize, std::mem::size_of_val(table));
}

/// A table of `u32` entries that read as `u32::MAX` ("none") until written, built in
/// microseconds whatever its length: each entry is stored complemented, so the zero pages
/// of [`zeroed_table`] read as `u32::MAX` and only the pages holding written entries take
/// memory. Device tables whose empty value is `u32::MAX` (the L2P table, a slot's stored
/// frame) use it so a 512 GiB device starts at once and its memory follows the data
/// written. The complement costs one instruction per access.
#[derive(Clone, Debug, Default)]
pub struct LazyTable {
    raw: Vec<u32>,
    /// One bit per [`LAZY_PAGE_ENTRIES`] entries: set once any of them was written, so
    /// [`LazyTable::next_set`] passes over the rest without reading them (a first read
    /// of a never-written page faults it in, even as zeros).
    written: Vec<u64>,
}

/// Entries of a [`LazyTable`] per bit of its written map (4 KiB of entries).
const LAZY_PAGE_ENTRIES: usize = 1024;

impl PartialEq for LazyTable {
    fn eq(&self, other: &LazyTable) -> bool {
        // The written map is a hint: equal entries are equal tables.
        self.raw == other.raw
    }
}

impl Eq for LazyTable {}

impl LazyTable {
    /// `len` entries, all `u32::MAX`.
    pub fn new(len: usize) -> LazyTable {
        LazyTable {
            raw: zeroed_table(len),
            written: vec![0; len.div_ceil(LAZY_PAGE_ENTRIES * 64)],
        }
    }

    /// The table holding `values` (written entry by entry: every page is touched).
    pub fn from_values(values: &[u32]) -> LazyTable {
        let mut table = LazyTable::new(values.len());
        for (raw, &v) in table.raw.iter_mut().zip(values) {
            *raw = !v;
        }
        table.written.fill(u64::MAX);
        table
    }

    #[inline]
    fn note_written(&mut self, i: usize) {
        let page = i / LAZY_PAGE_ENTRIES;
        self.written[page / 64] |= 1 << (page % 64);
    }

    #[inline]
    fn page_written(&self, page: usize) -> bool {
        self.written[page / 64] & (1 << (page % 64)) != 0
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.raw.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// Entry `i` (panics beyond the table, as indexing does).
    #[inline]
    pub fn at(&self, i: usize) -> u32 {
        !self.raw[i]
    }

    /// Entry `i`, or `None` beyond the table.
    #[inline]
    pub fn get(&self, i: usize) -> Option<u32> {
        self.raw.get(i).map(|&r| !r)
    }

    #[inline]
    pub fn set(&mut self, i: usize, value: u32) {
        self.raw[i] = !value;
        self.note_written(i);
    }

    /// Sets entry `i` and returns what it held.
    #[inline]
    pub fn replace(&mut self, i: usize, value: u32) -> u32 {
        let old = !std::mem::replace(&mut self.raw[i], !value);
        self.note_written(i);
        old
    }

    /// Every entry back to `u32::MAX`, returning the memory to the kernel.
    pub fn clear(&mut self) {
        *self = LazyTable::new(self.raw.len());
    }

    /// The entries in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = u32> + '_ {
        self.raw.iter().map(|&r| !r)
    }

    /// The entries of `range`.
    pub fn range(&self, range: std::ops::Range<usize>) -> impl ExactSizeIterator<Item = u32> + '_ {
        self.raw[range].iter().map(|&r| !r)
    }

    /// The first index of `range` whose entry is not `u32::MAX`, if any: a scan that
    /// passes over never-written pages without reading them and over unwritten
    /// stretches 64 entries at a time (trimming a whole empty device visits each of its
    /// millions of entries otherwise).
    pub fn next_set(&self, range: std::ops::Range<usize>) -> Option<usize> {
        const STRIDE: usize = 64;
        let end = range.end.min(self.raw.len());
        let mut at = range.start;
        if at < end && self.raw[at] != 0 {
            // Dense tables answer at once.
            return Some(at);
        }
        while at < end {
            let page_end = ((at / LAZY_PAGE_ENTRIES + 1) * LAZY_PAGE_ENTRIES).min(end);
            if !self.page_written(at / LAZY_PAGE_ENTRIES) {
                at = page_end;
                continue;
            }
            while at < page_end {
                let stop = (at + STRIDE).min(page_end);
                let raw = &self.raw[at..stop];
                // An OR over whole stretches vectorizes; the search inside one does not.
                if raw.iter().fold(0, |any, &r| any | r) != 0 {
                    return raw.iter().position(|&r| r != 0).map(|i| at + i);
                }
                at = stop;
            }
        }
        None
    }

    /// The entries as a plain vector.
    pub fn to_vec(&self) -> Vec<u32> {
        self.iter().collect()
    }

    /// The table is about to be mostly filled: see [`advise_dense`].
    pub fn advise_dense(&self) {
        advise_dense(&self.raw);
    }

    /// Pulls entry `i`'s cache line towards the CPU (a hint; no effect on results).
    #[inline]
    pub fn prefetch(&self, i: usize) {
        if let Some(entry) = self.raw.get(i) {
            prefetch(entry);
        }
    }
}

#[cfg(target_os = "linux")]
fn advise_huge_pages(start: usize, bytes: usize) {
    const HUGE: usize = 2 << 20;
    if bytes < 4 * HUGE {
        return;
    }
    let aligned = (start + HUGE - 1) & !(HUGE - 1);
    let end = (start + bytes) & !(HUGE - 1);
    if end > aligned {
        // SAFETY: the range lies inside the vector's allocation (its capacity); MADV_HUGEPAGE
        // changes only how the kernel backs the memory, never its contents.
        unsafe {
            libc::madvise(
                aligned as *mut libc::c_void,
                end - aligned,
                libc::MADV_HUGEPAGE,
            );
        }
    }
}

/// Sets the C allocator (glibc's malloc, which Rust's default allocator calls) for a
/// process that builds and drops whole simulated devices one after another, as
/// `bench --personas` and sweeps do. Left adaptive, glibc raises its mmap threshold to
/// the size of each large block freed, so the next device's tables come from the heap
/// and `calloc` must zero them (the memset of `Ftl::new` and of the frame store's chunks),
/// and it returns the heap's top to the kernel after each device, so the next one faults
/// every page in again. Fixed values keep tables of 4 MiB and more lazily zeroed fresh
/// mappings (a large device still costs only the pages written) and keep freed heap for
/// reuse. Measured on `bench --personas`: minor page faults 381,000 → 222,000 and about
/// 11 % less CPU. Allocation never changes results; call once, before allocating much.
pub fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes glibc's allocation policy; it is called at start-up,
    // from one thread, before any large allocation.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 4 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
    }
}

/// Zeroed allocations of this many bytes or more are fresh mappings under
/// [`FreshZeroedTables`] (every device table of a phone-sized device is larger).
pub const FRESH_ZEROED_MIN_BYTES: usize = 4 << 20;

/// Fresh mappings [`FreshZeroedTables`] tracks at once (a device holds about ten tables);
/// beyond them zeroed allocations come from the C allocator as usual.
const FRESH_MAPPINGS_MAX: usize = 1024;

/// The addresses of the live fresh mappings (0: a free entry, 1: an entry being filled).
static FRESH_MAPPINGS: [std::sync::atomic::AtomicUsize; FRESH_MAPPINGS_MAX] =
    [const { std::sync::atomic::AtomicUsize::new(0) }; FRESH_MAPPINGS_MAX];

/// A global allocator for processes that build and drop whole simulated devices one after
/// another (`bench --personas`, sweeps): the system allocator, except that a zeroed
/// allocation of [`FRESH_ZEROED_MIN_BYTES`] or more is always a fresh anonymous mapping.
/// glibc serves a large `calloc` from free heap whenever it has room, whatever its mmap
/// threshold, and must then clear it: after one device is dropped, the next device's
/// tables (tens of MiB each on a 16 GiB device, mostly never written) were cleared in
/// full. A fresh mapping reads as zeros for nothing and takes memory only where written,
/// which is what [`zeroed_table`] and [`LazyTable`] promise. Allocation never changes
/// results.
pub struct FreshZeroedTables;

#[cfg(target_os = "linux")]
impl FreshZeroedTables {
    /// The registry entry holding `ptr`, if it is a fresh mapping.
    fn entry_of(ptr: *mut u8) -> Option<&'static std::sync::atomic::AtomicUsize> {
        use std::sync::atomic::Ordering;
        FRESH_MAPPINGS
            .iter()
            .find(|e| e.load(Ordering::Acquire) == ptr as usize)
    }

    /// A fresh zeroed mapping of `size` bytes, registered; `None` when the registry is
    /// full or the kernel refuses.
    fn map(size: usize) -> Option<*mut u8> {
        use std::sync::atomic::Ordering;
        let entry = FRESH_MAPPINGS.iter().find(|e| {
            e.compare_exchange(0, 1, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        })?;
        // SAFETY: an anonymous private mapping of `size` bytes at an address the kernel
        // chooses touches no existing memory.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            entry.store(0, Ordering::Release);
            return None;
        }
        entry.store(ptr as usize, Ordering::Release);
        Some(ptr.cast())
    }
}

// SAFETY: every block comes either from `System`, and goes back to it, or from a fresh
// mapping of at least `layout.size()` bytes, page aligned (so any alignment up to a page
// holds), which is registered while it lives and unmapped when freed; the registry tells
// the two apart by address.
#[cfg(target_os = "linux")]
unsafe impl std::alloc::GlobalAlloc for FreshZeroedTables {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        // SAFETY: forwarded under the caller's contract.
        unsafe { std::alloc::System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        if layout.size() >= FRESH_ZEROED_MIN_BYTES && layout.align() <= 4096 {
            if let Some(ptr) = Self::map(layout.size()) {
                return ptr;
            }
        }
        // SAFETY: forwarded under the caller's contract.
        unsafe { std::alloc::System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        if layout.size() >= FRESH_ZEROED_MIN_BYTES {
            if let Some(entry) = Self::entry_of(ptr) {
                // SAFETY: `ptr` is a live fresh mapping of `layout.size()` bytes (the
                // registry says so), and the caller gives it up.
                unsafe { libc::munmap(ptr.cast(), layout.size()) };
                entry.store(0, std::sync::atomic::Ordering::Release);
                return;
            }
        }
        // SAFETY: not a fresh mapping, so `System` allocated it.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        if layout.size() >= FRESH_ZEROED_MIN_BYTES {
            if let Some(entry) = Self::entry_of(ptr) {
                if new_size < FRESH_ZEROED_MIN_BYTES {
                    // Registered mappings are all large (`dealloc` looks only at those):
                    // a small one goes back to `System`.
                    // SAFETY: a non-zero size with the block's alignment.
                    let small = unsafe {
                        std::alloc::System.alloc(std::alloc::Layout::from_size_align_unchecked(
                            new_size,
                            layout.align(),
                        ))
                    };
                    if small.is_null() {
                        return small;
                    }
                    // SAFETY: both blocks hold at least `new_size` bytes and are distinct;
                    // the mapping is then given up, as `realloc` frees the old block.
                    unsafe {
                        std::ptr::copy_nonoverlapping(ptr, small, new_size);
                        libc::munmap(ptr.cast(), layout.size());
                    }
                    entry.store(0, std::sync::atomic::Ordering::Release);
                    return small;
                }
                // SAFETY: `ptr` is a live fresh mapping of `layout.size()` bytes; the kernel
                // keeps its contents, moving it if it must, and `new_size` is not zero.
                let moved = unsafe {
                    libc::mremap(ptr.cast(), layout.size(), new_size, libc::MREMAP_MAYMOVE)
                };
                if moved == libc::MAP_FAILED {
                    return std::ptr::null_mut();
                }
                entry.store(moved as usize, std::sync::atomic::Ordering::Release);
                return moved.cast();
            }
        }
        // SAFETY: not a fresh mapping, so `System` allocated it.
        unsafe { std::alloc::System.realloc(ptr, layout, new_size) }
    }
}

#[cfg(not(target_os = "linux"))]
// SAFETY: `System`'s, forwarded.
unsafe impl std::alloc::GlobalAlloc for FreshZeroedTables {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        unsafe { std::alloc::System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        unsafe { std::alloc::System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        unsafe { std::alloc::System.realloc(ptr, layout, new_size) }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_start: usize, _bytes: usize) {}

/// Faults in the whole pages of `region` with one call (`MADV_POPULATE_WRITE`) rather than
/// one page fault per 4 KiB at first touch: for a fresh block of private anonymous memory
/// about to be written in full (the NAND frame store's chunks, filled frame by frame).
/// Pages already present keep their contents; a kernel without the call leaves the pages
/// to be faulted in as usual. No effect on results. Takes `&mut`: populating for write
/// prepares the pages to be written, which only their owner may do.
pub fn populate<T>(region: &mut [T]) {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        let start = region.as_mut_ptr() as usize;
        let aligned = (start + PAGE - 1) & !(PAGE - 1);
        let end = (start + std::mem::size_of_val(region)) & !(PAGE - 1);
        if end > aligned {
            // SAFETY: the range lies inside `region`'s allocation; populating only makes
            // the kernel back the pages now, never changing their contents.
            unsafe {
                libc::madvise(
                    aligned as *mut libc::c_void,
                    end - aligned,
                    libc::MADV_POPULATE_WRITE,
                );
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = region;
}

/// Pulls the cache line holding `value` towards the CPU (a hint; never changes results).
#[inline]
pub fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching a valid reference's address has no side effects.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(value as *const T as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

/// Copies `src` into `dst` (same length) for bytes that will not be read again soon, such
/// as page contents going into a large store: on x86_64, whole 64-byte lines are written
/// with non-temporal stores, which skips reading the destination into the cache first and
/// leaves the cache to the working set. Same result as `copy_from_slice`.
#[inline]
pub fn copy_streaming(dst: &mut [u8], src: &[u8]) {
    assert_eq!(dst.len(), src.len(), "copy_streaming: lengths differ");
    // SAFETY: `dst` is valid for writes and `src` for reads of `len` bytes, and they do
    // not overlap (one is borrowed mutably).
    if !unsafe { stream_lines(dst.as_mut_ptr(), src.as_ptr(), src.len()) } {
        dst.copy_from_slice(src);
    }
}

/// Copies `src` into memory that may not hold initialized bytes yet (same length), as
/// [`copy_streaming`] does: a store's frames are written this way into chunks that were
/// never zeroed (after an earlier device is dropped its memory comes back from the heap,
/// which `calloc` would have to clear). Afterwards `dst` holds `src`'s bytes.
#[inline]
pub fn copy_streaming_uninit(dst: &mut [std::mem::MaybeUninit<u8>], src: &[u8]) {
    assert_eq!(
        dst.len(),
        src.len(),
        "copy_streaming_uninit: lengths differ"
    );
    // SAFETY: `dst` is valid for writes and `src` for reads of `len` bytes, and they do
    // not overlap (one is borrowed mutably).
    let streamed = unsafe { stream_lines(dst.as_mut_ptr().cast::<u8>(), src.as_ptr(), src.len()) };
    if !streamed {
        for (d, &s) in dst.iter_mut().zip(src) {
            d.write(s);
        }
    }
}

/// Copies `len` bytes with non-temporal stores when the copy suits them (x86_64, at least
/// 256 bytes, whole 64-byte lines, `dst` 16-byte aligned) and says whether it did; the
/// caller copies otherwise.
///
/// # Safety
/// `dst` must be valid for writes and `src` for reads of `len` bytes, not overlapping.
#[inline]
unsafe fn stream_lines(dst: *mut u8, src: *const u8, len: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        if len >= 256 && len.is_multiple_of(64) && (dst as usize).is_multiple_of(16) {
            // SAFETY: the caller's contract covers `len` bytes of both; `dst` is 16-byte
            // aligned as `_mm_stream_si128` requires, and `_mm_loadu_si128` accepts any
            // alignment. SSE2 is part of the x86_64 baseline. The fence orders the
            // streaming stores before any later store.
            unsafe {
                use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};
                let s = src as *const __m128i;
                let d = dst as *mut __m128i;
                for i in (0..len / 16).step_by(4) {
                    let a = _mm_loadu_si128(s.add(i));
                    let b = _mm_loadu_si128(s.add(i + 1));
                    let c = _mm_loadu_si128(s.add(i + 2));
                    let e = _mm_loadu_si128(s.add(i + 3));
                    _mm_stream_si128(d.add(i), a);
                    _mm_stream_si128(d.add(i + 1), b);
                    _mm_stream_si128(d.add(i + 2), c);
                    _mm_stream_si128(d.add(i + 3), e);
                }
                _mm_sfence();
            }
            return true;
        }
    }
    let _ = (dst, src, len);
    false
}

#[cfg(test)]
mod tests {
    use super::{copy_streaming, copy_streaming_uninit, zeroed_table, LazyTable};

    #[test]
    fn lazy_table_reads_max_until_written() {
        let mut t = LazyTable::new(3 << 20);
        assert_eq!(t.at(0), u32::MAX);
        assert_eq!(t.get(3 << 20), None);
        t.set(5, 0);
        t.set(7, 42);
        assert_eq!((t.at(5), t.at(7), t.at(6)), (0, 42, u32::MAX));
        assert_eq!(t.replace(7, 1), 42);
        assert_eq!(t.iter().filter(|&v| v != u32::MAX).count(), 2);
        let back = LazyTable::from_values(&t.range(4..8).collect::<Vec<_>>());
        assert_eq!(back.to_vec(), vec![u32::MAX, 0, u32::MAX, 1]);
        assert_eq!(t.next_set(0..3 << 20), Some(5));
        assert_eq!(t.next_set(6..3 << 20), Some(7));
        assert_eq!(t.next_set(8..3 << 20), None);
        assert_eq!(t.next_set(6..7), None);
        assert_eq!(t.next_set(5..5), None);
        t.set(5000, 3);
        t.set(5000, u32::MAX);
        assert_eq!(t.next_set(8..3 << 20), None);
        t.set((3 << 20) - 1, 9);
        assert_eq!(t.next_set(100..3 << 20), Some((3 << 20) - 1));
        for start in 0..130 {
            let expected = (start..3 << 20).find(|&i| t.at(i) != u32::MAX);
            assert_eq!(t.next_set(start..3 << 20), expected, "from {start}");
        }
        t.clear();
        assert!(t.iter().all(|v| v == u32::MAX));
        assert!(zeroed_table::<u64>(1 << 20).iter().all(|&v| v == 0));
    }

    #[test]
    fn streaming_copy_equals_plain_copy() {
        let src: Vec<u8> = (0..8192u32).map(|i| (i * 31 % 251) as u8).collect();
        for len in [0usize, 1, 63, 64, 255, 256, 512, 4096, 4160] {
            for offset in [0usize, 1, 16] {
                let mut buffer = vec![0u8; 8192 + 64];
                let dst = &mut buffer[offset..offset + len];
                copy_streaming(dst, &src[3..3 + len]);
                assert_eq!(dst, &src[3..3 + len], "len {len} offset {offset}");
            }
        }
    }

    #[test]
    fn streaming_copy_into_uninit_equals_plain_copy() {
        let src: Vec<u8> = (0..8192u32).map(|i| (i * 31 % 251) as u8).collect();
        for len in [0usize, 1, 63, 64, 256, 4096, 4160] {
            for offset in [0usize, 1, 16] {
                let mut buffer = Box::<[u8]>::new_uninit_slice(8192 + 64);
                copy_streaming_uninit(&mut buffer[offset..offset + len], &src[5..5 + len]);
                // SAFETY: exactly these bytes were written above.
                let written = unsafe {
                    std::slice::from_raw_parts(buffer[offset..].as_ptr().cast::<u8>(), len)
                };
                assert_eq!(written, &src[5..5 + len], "len {len} offset {offset}");
            }
        }
    }

    #[test]
    fn fresh_zeroed_tables_keep_contents_through_realloc() {
        use super::{FreshZeroedTables, FRESH_ZEROED_MIN_BYTES};
        use std::alloc::{GlobalAlloc, Layout};
        let a = FreshZeroedTables;
        let big = 2 * FRESH_ZEROED_MIN_BYTES;
        // SAFETY: sizes are non-zero; every block is freed once with its layout.
        unsafe {
            let layout = Layout::from_size_align(big, 8).unwrap();
            let p = a.alloc_zeroed(layout);
            assert!(!p.is_null());
            let block = std::slice::from_raw_parts_mut(p, big);
            assert!(block.iter().step_by(4093).all(|&b| b == 0));
            block[0] = 7;
            block[big - 1] = 9;
            let p = a.realloc(p, layout, 2 * big);
            let grown = std::slice::from_raw_parts_mut(p, 2 * big);
            assert_eq!((grown[0], grown[big - 1]), (7, 9));
            grown[2 * big - 1] = 11;
            let p = a.realloc(p, Layout::from_size_align(2 * big, 8).unwrap(), 4096);
            assert_eq!(*p, 7);
            a.dealloc(p, Layout::from_size_align(4096, 8).unwrap());
            let small = Layout::from_size_align(4096, 8).unwrap();
            let q = a.alloc_zeroed(small);
            assert!(std::slice::from_raw_parts(q, 4096).iter().all(|&b| b == 0));
            a.dealloc(q, small);
        }
    }
}
