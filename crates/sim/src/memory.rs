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
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LazyTable {
    raw: Vec<u32>,
}

impl LazyTable {
    /// `len` entries, all `u32::MAX`.
    pub fn new(len: usize) -> LazyTable {
        LazyTable {
            raw: zeroed_table(len),
        }
    }

    /// The table holding `values` (written entry by entry: every page is touched).
    pub fn from_values(values: &[u32]) -> LazyTable {
        let mut table = LazyTable::new(values.len());
        for (raw, &v) in table.raw.iter_mut().zip(values) {
            *raw = !v;
        }
        table
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
    }

    /// Sets entry `i` and returns what it held.
    #[inline]
    pub fn replace(&mut self, i: usize, value: u32) -> u32 {
        !std::mem::replace(&mut self.raw[i], !value)
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

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_start: usize, _bytes: usize) {}

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
    #[cfg(target_arch = "x86_64")]
    {
        if dst.len() >= 256
            && dst.len().is_multiple_of(64)
            && (dst.as_ptr() as usize).is_multiple_of(16)
        {
            // SAFETY: both slices are valid for `len` bytes and do not overlap (one is
            // borrowed mutably); `dst` is 16-byte aligned as `_mm_stream_si128` requires, and
            // `_mm_loadu_si128` accepts any alignment. SSE2 is part of the x86_64 baseline.
            // The fence orders the streaming stores before any later store.
            unsafe {
                use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};
                let s = src.as_ptr() as *const __m128i;
                let d = dst.as_mut_ptr() as *mut __m128i;
                for i in (0..dst.len() / 16).step_by(4) {
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
            return;
        }
    }
    dst.copy_from_slice(src);
}

#[cfg(test)]
mod tests {
    use super::{copy_streaming, zeroed_table, LazyTable};

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
}
