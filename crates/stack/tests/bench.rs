//! Speed through the whole stack (host time per virtual operation). Run in release:
//! `cargo test --release -p flashstack-stack --test bench -- --ignored --nocapture`.

use flashstack_sqlvfs::{FileApi, OpenFlags};
use flashstack_stack::{Stack, StackConfig};

#[test]
#[ignore]
fn bench_file_ops() {
    let mut s = Stack::new(StackConfig::preset("default").unwrap()).unwrap();
    let create = OpenFlags {
        create: true,
        ..OpenFlags::default()
    };
    let data = vec![0x5au8; 16 * 1024];
    let started = std::time::Instant::now();
    let mut t = 0;
    let mut ops = 0u64;
    let mut bytes = 0u64;
    for i in 0..2000u64 {
        let (f, t1) = s.open(t, &format!("/b{}", i % 50), create).unwrap();
        let t2 = s.write_at(t1, f, (i % 16) * 16384, &data).unwrap();
        let t3 = if i % 4 == 0 {
            s.sync(t2, f, true).unwrap()
        } else {
            t2
        };
        t = s.close(t3, f).unwrap();
        ops += 3 + u64::from(i % 4 == 0);
        bytes += data.len() as u64;
    }
    t = s.sync_all(t).unwrap();
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{ops} file ops, {} MiB written in {secs:.2} s host time: {:.0} ops/s, {:.1} MB/s; virtual {:.3} s",
        bytes >> 20,
        ops as f64 / secs,
        bytes as f64 / secs / 1e6,
        t as f64 / 1e9
    );
}
