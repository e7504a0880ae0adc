//! The mount path's loader on a corrupted image: the format-level mount (superblock,
//! checkpoint, summaries, journals, root), then a read-write mount with the checks at
//! mount only (what a simulated stack uses), walked and written to. Errors are fine, a
//! panic is not.
#![no_main]

#[path = "f2fs/image.rs"]
mod image;

use flashstack_f2fs::F2fs;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dev = image::decode(data);
    let _ = flashstack_f2fs::mount(&mut dev.clone());
    let Ok(mut fs) = F2fs::mount(dev) else {
        return;
    };
    image::read_everything(&mut fs);
    if let Ok(entries) = fs.readdir("/") {
        for e in entries.iter().take(20) {
            let _ = fs.write(e.ino, 100, b"poke");
        }
    }
    let _ = fs.create("/new");
    let _ = fs.rename("/new", "/renamed");
    let _ = fs.sync();
    let _ = fs.unmount();
});
