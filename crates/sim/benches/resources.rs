//! Cost of one reservation on a channel's timing resource, the way the NAND model books
//! it on every page operation: `cargo bench -p flashstack-sim --bench resources`.
//!
//! Two patterns, each 4,096 reservations per iteration: in time order (every request
//! ready after everything booked: the common case), and the GC-burst pattern that
//! motivated booked intervals (16 dies each booking a chain of 64 transfers 100 µs apart,
//! one die's chain at a time, so later chains fill the gaps of earlier ones), with the
//! history pruned as the NAND model prunes it.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use flashstack_sim::{IntervalResource, Resource};

const OPS: u64 = 4_096;

fn in_order(c: &mut Criterion) {
    let mut group = c.benchmark_group("resource/in-order");
    group.throughput(Throughput::Elements(OPS));
    group.bench_function("busy-until", |b| {
        b.iter(|| {
            let mut r = Resource::default();
            for i in 0..OPS {
                black_box(r.reserve(i * 30_000, 24_600));
            }
            r.busy_until_ns()
        })
    });
    group.bench_function("intervals", |b| {
        b.iter(|| {
            let mut r = IntervalResource::default();
            for i in 0..OPS {
                black_box(r.reserve(i * 30_000, 24_600));
                if r.len() > 64 {
                    r.forget_before(i * 30_000);
                }
            }
            r.busy_until_ns()
        })
    });
    group.finish();
}

fn gc_bursts(c: &mut Criterion) {
    let mut group = c.benchmark_group("resource/gc-bursts");
    group.throughput(Throughput::Elements(OPS));
    let bursts = |mut reserve: Box<dyn FnMut(u64, u64, u64)>| {
        // 4 rounds × 16 dies × 64 transfers.
        for round in 0..4u64 {
            let start = round * 64 * 100_000;
            for die in 0..16u64 {
                for k in 0..64u64 {
                    reserve(start + die * 1_000 + k * 100_000, 24_600, start);
                }
            }
        }
    };
    group.bench_function("busy-until", |b| {
        b.iter(|| {
            let mut r = Resource::default();
            bursts(Box::new(move |ready, d, _| {
                black_box(r.reserve(ready, d));
            }));
        })
    });
    group.bench_function("intervals", |b| {
        b.iter(|| {
            let mut r = IntervalResource::default();
            bursts(Box::new(move |ready, d, floor| {
                black_box(r.reserve(ready, d));
                if r.len() > 256 {
                    r.forget_before(floor);
                }
            }));
        })
    });
    group.finish();
}

criterion_group!(benches, in_order, gc_bursts);
criterion_main!(benches);
