//! Once warm, compressing and decompressing 4 KiB pages allocates nothing: every codec
//! owns its working state and writes into the caller's buffers. Counted with a global
//! allocator that counts the calls of this test binary's only test. zstd's C library
//! allocates with `malloc`, outside this count; its contexts are reused all the same.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use flashstack_codec::CodecKind;
use flashstack_content::{ContentClass, ContentMix, ContentModel, PAGE_SIZE};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn warm_codecs_do_not_allocate_per_page() {
    let model = ContentModel::new(11, ContentMix::default());
    let pages: Vec<Vec<u8>> = ContentClass::ALL
        .iter()
        .flat_map(|&class| {
            let model = &model;
            (0..8u64).map(move |lba| {
                let mut page = vec![0u8; PAGE_SIZE];
                model.fill_class(class, lba, 0, &mut page);
                page
            })
        })
        .collect();
    // The counter sees allocations: building a codec allocates its tables.
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    let lzo = CodecKind::Lzo1x1.build().unwrap();
    assert!(ALLOCATIONS.load(Ordering::Relaxed) > before);
    drop(lzo);
    for spec in ["none", "lz4", "lzo1x-1", "zstd:3", "zlib:6"] {
        let kind: CodecKind = spec.parse().unwrap();
        let mut codec = kind.build().unwrap();
        let mut packed = Vec::new();
        let mut out = Vec::new();
        // Warm up: buffers grow to their page-sized worst case.
        for page in &pages {
            codec.compress(page, &mut packed);
            codec.decompress(&packed, &mut out, PAGE_SIZE).unwrap();
        }
        let before = ALLOCATIONS.load(Ordering::Relaxed);
        for page in &pages {
            codec.compress(page, &mut packed);
            codec.decompress(&packed, &mut out, PAGE_SIZE).unwrap();
            assert_eq!(&out, page);
        }
        let allocations = ALLOCATIONS.load(Ordering::Relaxed) - before;
        assert_eq!(
            allocations,
            0,
            "{spec}: {allocations} allocations for {} warm pages",
            pages.len()
        );
    }
}
