//! Large simulator tables (mapping tables, per-page OOB arrays) are touched at random; on
//! Linux they are backed by transparent huge pages where the kernel allows it, which removes
//! most TLB misses from the hot path. Purely a speed hint: results never depend on it.

/// A zero-initialised vector of `len` copies of `value`, advised to use huge pages.
pub fn table<T: Clone>(len: usize, value: T) -> Vec<T> {
    let v = vec![value; len];
    advise_huge_pages(&v);
    v
}

#[cfg(target_os = "linux")]
fn advise_huge_pages<T>(v: &[T]) {
    const HUGE: usize = 2 << 20;
    let bytes = std::mem::size_of_val(v);
    if bytes < 4 * HUGE {
        return;
    }
    let start = v.as_ptr() as usize;
    let aligned = (start + HUGE - 1) & !(HUGE - 1);
    let end = (start + bytes) & !(HUGE - 1);
    if end > aligned {
        // SAFETY: the range lies inside the vector's allocation; MADV_HUGEPAGE changes only
        // how the kernel backs the memory, never its contents.
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
fn advise_huge_pages<T>(_v: &[T]) {}
