//! `flashstack fs put` on a corrupted image: mounted read-write with the full
//! verification, a directory made, a file written, renamed, another removed, unmounted.
//! Errors are fine, a panic is not; and an image the checks accepted and every operation
//! kept consistent must pass the checks again after the unmount (else the verification
//! let through something the writer then broke, or the writer broke a consistent image).
#![no_main]

#[path = "f2fs/image.rs"]
mod image;

use flashstack_f2fs::{F2fs, FsError};
use libfuzzer_sys::fuzz_target;

fn put(fs: &mut F2fs<flashstack_f2fs::MemDevice>) -> Result<(), FsError> {
    match fs.mkdir("/fuzz") {
        Ok(_) | Err(FsError::Exists(_)) => {}
        Err(e) => return Err(e),
    }
    let ino = match fs.create("/fuzz/new.bin") {
        Ok(ino) => ino,
        Err(FsError::Exists(_)) => fs.lookup("/fuzz/new.bin")?,
        Err(e) => return Err(e),
    };
    fs.truncate(ino, 0)?;
    fs.write(ino, 0, &[0x5a; 20_000])?;
    fs.rename("/fuzz/new.bin", "/fuzz/renamed.bin")?;
    if let Ok(entries) = fs.readdir("/") {
        if let Some(victim) = entries
            .iter()
            .find(|e| e.kind == flashstack_f2fs::FileKind::File)
        {
            fs.unlink(&format!("/{}", victim.name))?;
        }
    }
    fs.sync()
}

fuzz_target!(|data: &[u8]| {
    let dev = image::decode(data);
    let Some(mut fs) = image::open_for_writing(dev) else {
        return;
    };
    if put(&mut fs).is_err() {
        return;
    }
    let Ok(dev) = fs.unmount() else {
        return;
    };
    if let Err(e) = image::open_for_writing_checked(dev) {
        panic!("an image that passed the checks and took our writes fails them: {e}");
    }
});
