//! Page generation throughput per class: `cargo bench -p flashstack-content`.
//!
//! Each iteration fills 256 pages (1 MiB) of one class at successive LBAs and versions, the
//! way the replay engine asks for them, so the figures include layout, update scheduling
//! and hashing, not only byte generation.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use flashstack_content::{ContentClass, ContentMix, ContentModel, PAGE_SIZE};

const PAGES: u64 = 256;

fn fill(c: &mut Criterion) {
    let model = ContentModel::new(42, ContentMix::default());
    let mut group = c.benchmark_group("fill");
    group.throughput(Throughput::Bytes(PAGES * PAGE_SIZE as u64));
    let mut page = vec![0u8; PAGE_SIZE];
    for class in ContentClass::ALL {
        group.bench_function(class.name(), |b| {
            let mut round = 0u32;
            b.iter(|| {
                round = round.wrapping_add(1);
                for lba in 0..PAGES {
                    model.fill_class(class, lba, round % 32, &mut page);
                    black_box(&page);
                }
            })
        });
    }
    group.bench_function("default-mix", |b| {
        let mut round = 0u32;
        b.iter(|| {
            round = round.wrapping_add(1);
            for lba in 0..PAGES {
                model.fill(lba * 61, round % 32, &mut page);
                black_box(&page);
            }
        })
    });
    group.finish();
}

criterion_group!(benches, fill);
criterion_main!(benches);
