//! Compresses delta-like and text pages many times with either the tuned LZO1X-1 encoder
//! or the reference copy, for paired whole-process timing (docs/performance.md):
//! `cargo run --release -p flashstack-codec --example lzo_pair -- tuned|reference`.
//!
//! With a second argument, the pages are instead the XORs of the (base, new page) pairs
//! that F2FS's diagnostic `fs.mount.delta.pairs_dump` wrote (MedFS's real deltas), each
//! compressed `ROUNDS / 100` times:
//! `lzo_pair tuned /tmp/pairs.bin`.

use std::hint::black_box;

use flashstack_codec::Lzo1x1;
use flashstack_content::{ContentClass, ContentMix, ContentModel, PAGE_SIZE};

#[allow(dead_code)]
#[path = "../src/lzo1x_reference.rs"]
mod lzo1x_reference;

const ROUNDS: usize = 6000;

fn main() {
    let which = std::env::args().nth(1).unwrap_or_default();
    let dump = std::env::args().nth(2);
    let model = ContentModel::new(7, ContentMix::default());
    let mut s: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    // Half delta-like pages (13–50 % of bytes changed), half text pages.
    let mut pages = Vec::new();
    for lba in 0..64u64 {
        let mut page = vec![0u8; PAGE_SIZE];
        model.fill_class(ContentClass::Text, lba * 37, 0, &mut page);
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
        pages.push(
            page.iter()
                .zip(&edited)
                .map(|(a, b)| a ^ b)
                .collect::<Vec<u8>>(),
        );
        if which.ends_with("-text") {
            pages.push(page);
        }
    }
    let mut rounds = ROUNDS;
    if let Some(path) = dump {
        pages = dumped_deltas(&path);
        rounds = ROUNDS / 100;
    }
    let mut out = Vec::new();
    let mut total = 0usize;
    match which.as_str() {
        "tuned" | "tuned-text" => {
            let mut lzo = Lzo1x1::new();
            for _ in 0..rounds {
                for p in &pages {
                    total += black_box(lzo.compress_into(p, &mut out));
                }
            }
        }
        "reference" | "reference-text" => {
            let mut lzo = lzo1x_reference::Reference::new();
            for _ in 0..rounds {
                for p in &pages {
                    total += black_box(lzo.compress_into(p, &mut out));
                }
            }
        }
        "check" => {
            // Both encoders on every page, byte for byte (warm encoders, in order).
            let mut tuned = Lzo1x1::new();
            let mut reference = lzo1x_reference::Reference::new();
            let mut out_ref = Vec::new();
            for (i, p) in pages.iter().enumerate() {
                tuned.compress_into(p, &mut out);
                reference.compress_into(p, &mut out_ref);
                if out != out_ref {
                    eprintln!("lzo_pair: page {i}: the encoders differ");
                    std::process::exit(1);
                }
                total += out.len();
            }
            eprintln!("{} pages identical", pages.len());
        }
        _ => {
            eprintln!("usage: lzo_pair tuned|reference|tuned-text|reference-text|check [PAIRS]");
            std::process::exit(2);
        }
    }
    println!("{total}");
}

/// The XOR of every (base, page) pair in a `pairs_dump` file: records of an 80-byte
/// header, the 4 KiB base and the 4 KiB new page.
fn dumped_deltas(path: &str) -> Vec<Vec<u8>> {
    const RECORD: usize = 80 + 2 * PAGE_SIZE;
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("lzo_pair: {path}: {e}");
            std::process::exit(2);
        }
    };
    bytes
        .chunks_exact(RECORD)
        .map(|r| {
            let (base, page) = r[80..].split_at(PAGE_SIZE);
            base.iter().zip(page).map(|(a, b)| a ^ b).collect()
        })
        .collect()
}
