//! Codec speed on 4 KiB pages of each content class: `cargo bench -p flashstack-codec`.
//!
//! Each iteration compresses (or decompresses) 64 distinct pages of one class with one
//! warm codec, the way the FTL calls it. `examples/codec_table.rs` prints the same
//! measurement, with ratios, as one table (docs/codecs.md).

use std::hint::black_box;

// The encoder as first written, to time the tuned one against it in the same process.
#[allow(dead_code)]
#[path = "../src/lzo1x_reference.rs"]
mod lzo1x_reference;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use flashstack_codec::CodecKind;
use flashstack_content::{ContentClass, ContentMix, ContentModel, PAGE_SIZE};

const PAGES: u64 = 64;
const CODECS: [&str; 5] = ["lz4", "lzo1x-1", "zstd:1", "zstd:3", "zlib:6"];

fn pages(class: ContentClass) -> Vec<Vec<u8>> {
    let model = ContentModel::new(7, ContentMix::default());
    (0..PAGES)
        .map(|lba| {
            let mut page = vec![0u8; PAGE_SIZE];
            model.fill_class(class, lba * 37, 0, &mut page);
            page
        })
        .collect()
}

fn codecs(c: &mut Criterion) {
    for spec in CODECS {
        let kind: CodecKind = spec.parse().expect("a valid codec name");
        let mut group = c.benchmark_group(format!("codec/{kind}"));
        group.throughput(Throughput::Bytes(PAGES * PAGE_SIZE as u64));
        for class in ContentClass::ALL {
            let input = pages(class);
            let mut codec = kind.build().expect("codec context");
            let mut packed: Vec<Vec<u8>> = vec![Vec::new(); input.len()];
            for (page, out) in input.iter().zip(packed.iter_mut()) {
                codec.compress(page, out);
            }
            let mut out = Vec::with_capacity(2 * PAGE_SIZE);
            group.bench_function(format!("compress/{}", class.name()), |b| {
                b.iter(|| {
                    for page in &input {
                        black_box(codec.compress(page, &mut out));
                    }
                })
            });
            group.bench_function(format!("decompress/{}", class.name()), |b| {
                b.iter(|| {
                    for p in &packed {
                        codec
                            .decompress(p, &mut out, PAGE_SIZE)
                            .expect("own output decodes");
                        black_box(&out);
                    }
                })
            });
        }
        group.finish();
    }
}

/// Delta-like pages, as MedFS compresses them: the XOR of a page with an edited copy,
/// mostly zeros with scattered changed spans (about 13–50 % of the bytes).
fn delta_pages() -> Vec<Vec<u8>> {
    let model = ContentModel::new(7, ContentMix::default());
    let mut s: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    (0..PAGES)
        .map(|lba| {
            let mut page = vec![0u8; PAGE_SIZE];
            model.fill_class(
                ContentClass::ALL[lba as usize % ContentClass::ALL.len()],
                lba * 37,
                0,
                &mut page,
            );
            let mut edited = page.clone();
            let target = PAGE_SIZE * (13 + (next() % 38) as usize) / 100;
            let mut changed = 0;
            while changed < target {
                let at = next() as usize % PAGE_SIZE;
                let run = 1 + next() as usize % 96;
                for byte in edited.iter_mut().skip(at).take(run) {
                    *byte = next() as u8;
                }
                changed += run;
            }
            page.iter().zip(&edited).map(|(a, b)| a ^ b).collect()
        })
        .collect()
}

fn lzo_delta(c: &mut Criterion) {
    let input = delta_pages();
    let mut codec = CodecKind::Lzo1x1.build().expect("codec context");
    let mut out = Vec::with_capacity(2 * PAGE_SIZE);
    let mut group = c.benchmark_group("codec/lzo1x-1");
    group.throughput(Throughput::Bytes(PAGES * PAGE_SIZE as u64));
    group.bench_function("compress/delta", |b| {
        b.iter(|| {
            for page in &input {
                black_box(codec.compress(page, &mut out));
            }
        })
    });
    // The reference encoder on the same pages, delta and text: the pair gives the
    // speed-up of the tuned encoder measured back to back.
    let text = pages(ContentClass::Text);
    let mut reference = lzo1x_reference::Reference::new();
    group.bench_function("compress-reference/delta", |b| {
        b.iter(|| {
            for page in &input {
                black_box(reference.compress_into(page, &mut out));
            }
        })
    });
    group.bench_function("compress-reference/text", |b| {
        b.iter(|| {
            for page in &text {
                black_box(reference.compress_into(page, &mut out));
            }
        })
    });
    group.bench_function("compress-tuned/text", |b| {
        b.iter(|| {
            for page in &text {
                black_box(codec.compress(page, &mut out));
            }
        })
    });
    group.finish();
}

criterion_group!(benches, codecs, lzo_delta);
criterion_main!(benches);
