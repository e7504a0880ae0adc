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
