//! `flashstack fs ls / stat / cat` on a corrupted image: mounted as the CLI mounts it
//! (read-write with the full verification, else read-only), everything listed and read.
//! Errors are fine; a panic, a hang or unbounded memory is not.
#![no_main]

#[path = "f2fs/image.rs"]
mod image;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dev = image::decode(data);
    if let Some(mut fs) = image::open_for_reading(&dev) {
        image::read_everything(&mut fs);
        let _ = fs.unmount();
    }
});
