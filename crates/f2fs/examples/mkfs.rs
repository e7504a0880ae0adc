//! Writes a freshly formatted F2FS image file:
//!
//! ```sh
//! cargo run -p flashstack-f2fs --example mkfs -- IMAGE SIZE [FEATURES]
//! ```
//!
//! SIZE takes the usual suffixes (`64MiB`, `16GiB`); FEATURES is an `-O`-style list such as
//! `extra_attr,inode_checksum,sb_checksum,compression`. The file is sparse: only the blocks
//! mkfs writes take space. Check it with `fsck.f2fs -f IMAGE`.

use std::path::PathBuf;
use std::process::ExitCode;

use flashstack_f2fs::{mkfs, Features, MemDevice, MkfsOptions};
use flashstack_sim::units::parse_size;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("mkfs: {msg}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [image, size, rest @ ..] = args.as_slice() else {
        return Err("usage: mkfs IMAGE SIZE [FEATURES]".to_string());
    };
    let bytes = parse_size(size).map_err(|e| format!("SIZE '{size}': {e}"))?;
    let features = match rest.first() {
        Some(list) => Features::parse(list)?,
        None => Features::NONE,
    };
    let mut dev = MemDevice::new(bytes);
    let opts = MkfsOptions {
        features,
        ..MkfsOptions::default()
    };
    let layout = mkfs(&mut dev, &opts).map_err(|e| e.to_string())?;
    let path = PathBuf::from(image);
    dev.export(&path).map_err(|e| e.to_string())?;
    println!(
        "{image}: {} segments ({} main), overprovision {:.2}% ({} segments, {} reserved)",
        layout.segment_count,
        layout.segment_count_main,
        layout.overprovision,
        layout.overprov_segments,
        layout.reserved_segments
    );
    Ok(())
}
