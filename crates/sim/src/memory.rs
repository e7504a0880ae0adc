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
    use super::copy_streaming;

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
