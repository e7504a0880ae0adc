//! What verification costs at mount on a large, full volume:
//!
//! ```sh
//! cargo run --release -p flashstack-f2fs --example verify_cost -- [SIZE] [FILL] [SMALL_FILES]
//! ```
//!
//! Formats SIZE (default 16GiB), makes SMALL_FILES (default 100000) inline files in 100
//! directories, then fills it with 4 MiB files up to FILL of the main area (default 0.9)
//! or until it is full, unmounts, then times a
//! mount with the checks at mount ([`Verify::Mount`]) and with the full walk
//! ([`Verify::Full`]), and prints the blocks each read. Data pages are zeros, which the
//! in-memory device does not store, so the run needs memory only for the metadata. Wall
//! time on the host is what this measures (the device has no timing model).
//! `VERIFY_COST_IMAGE=PATH` also writes the image to PATH.

use std::time::Instant;

use flashstack_f2fs::{mkfs, F2fs, MemDevice, MkfsOptions, MountOptions, Verify};
use flashstack_sim::units::parse_size;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let size = parse_size(args.first().map_or("16GiB", |s| s.as_str())).expect("SIZE");
    let fill: f64 = args.get(1).map_or(0.9, |s| s.parse().expect("FILL"));
    let small: usize = args
        .get(2)
        .map_or(100_000, |s| s.parse().expect("SMALL_FILES"));
    let start = Instant::now();
    let dev = populate(size, fill, small);
    println!("populated in {:.1} s", start.elapsed().as_secs_f64());
    // VERIFY_COST_IMAGE=path writes the image out (sparse), e.g. to time
    // `flashstack fs ls` on it.
    if let Some(path) = std::env::var_os("VERIFY_COST_IMAGE") {
        dev.export(std::path::Path::new(&path))
            .expect("export the image");
    }
    // VERIFY_COST_REPEAT=n repeats the full mount n times (for a profiler).
    let repeat: usize = std::env::var("VERIFY_COST_REPEAT").map_or(1, |v| v.parse().unwrap_or(1));
    let runs = std::iter::once(Verify::Mount).chain(std::iter::repeat_n(Verify::Full, repeat));
    for verify in runs {
        let opts = MountOptions {
            verify,
            ..MountOptions::default()
        };
        let copy = dev.clone();
        let start = Instant::now();
        let fs = F2fs::mount_opts(copy, opts).expect("a consistent image");
        let took = start.elapsed();
        println!(
            "mount with {verify:?}: {:.2} ms, {} blocks read",
            took.as_secs_f64() * 1e3,
            fs.metrics().blocks_read
        );
    }
}

fn populate(size: u64, fill: f64, small: usize) -> MemDevice {
    let mut dev = MemDevice::new(size);
    mkfs(&mut dev, &MkfsOptions::default()).expect("mkfs");
    let mut fs = F2fs::mount(dev).expect("mount");
    let (total, _) = fs.capacity_blocks();
    let zeros = vec![0u8; 4 << 20];
    let big_files = ((total as f64 * fill) as u64 * 4096 / zeros.len() as u64) as usize;
    for d in 0..100 {
        fs.mkdir(&format!("/d{d}")).expect("mkdir");
    }
    for i in 0..small {
        let ino = fs
            .create(&format!("/d{}/small-{i}", i % 100))
            .expect("create");
        fs.write(ino, 0, format!("file {i}").as_bytes())
            .expect("write");
    }
    for i in 0..big_files {
        let Ok(ino) = fs.create(&format!("/d{}/big-{i}", i % 100)) else {
            break; // full
        };
        if fs.write(ino, 0, &zeros).is_err() {
            break;
        }
    }
    fs.unmount().expect("unmount")
}
