//! FPC's file policy over F2FS compression (`fs/fpc.rs`): which new files it compresses
//! (write-mostly names from creation, even `.db`; never media; others by the trial of
//! their first page), round trips through remounts, and fsck.f2fs on the image.

mod common;

use common::surgery::pattern;
use common::*;
use flashstack_f2fs::{mkfs, F2fs, F2fsConfig, MemDevice};

fn fresh(c: F2fsConfig) -> F2fs<MemDevice> {
    let mut dev = MemDevice::new(128 * MIB);
    let opts = flashstack_f2fs::MkfsOptions {
        features: android_like().features,
        ..flashstack_f2fs::MkfsOptions::default()
    };
    mkfs(&mut dev, &opts).unwrap();
    F2fs::mount_with(dev, 0, c).unwrap()
}

/// Bytes that compress well (a repeated record with a counter).
fn records(len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 64);
    let mut i = 0u64;
    while out.len() < len {
        out.extend_from_slice(format!("row {i:08} status=ok flags=0000 ").as_bytes());
        i += 1;
    }
    out.truncate(len);
    out
}

#[test]
fn fpc_compresses_write_mostly_and_trial_passing_files_only() {
    let mut fs = fresh(F2fsConfig::default().with_fpc());
    let text = records(16 * 4096);
    let noise = pattern(16 * 4096, 9);
    let files: Vec<(&str, &Vec<u8>, bool)> = vec![
        // Write-mostly by name: compressed from creation, `.db` included.
        ("/mail.db", &text, true),
        ("/mail.db-journal", &text, true),
        ("/app.log", &text, true),
        // Media: never.
        ("/photo.jpg", &text, false),
        // No known ending: the first page's trial decides.
        ("/state.bin", &text, true),
        ("/blob.bin", &noise, false),
    ];
    for (path, data, _) in &files {
        let ino = fs.create(path).unwrap();
        fs.write(ino, 0, data).unwrap();
    }
    for (path, _, compressed) in &files {
        let ino = fs.lookup(path).unwrap();
        let n = fs.compr_blocks(ino).unwrap();
        assert_eq!(n > 0, *compressed, "{path}: i_compr_blocks {n}");
    }
    let m = fs.fpc_metrics();
    assert_eq!(m.write_mostly_files, 3, "{m:?}");
    assert_eq!(m.incompressible_files, 1, "{m:?}");
    assert_eq!((m.trials, m.trials_passed), (2, 1), "{m:?}");
    // Updates of a compressed database's pages read back after a remount.
    let db = fs.lookup("/mail.db").unwrap();
    let mut want = text.clone();
    for page in [1u64, 6, 13] {
        let at = page as usize * 4096 + 100;
        want[at..at + 40].copy_from_slice(&[0xAB; 40]);
        fs.write(db, at as u64, &[0xAB; 40]).unwrap();
    }
    fs.fsync(db).unwrap();
    let dev = fs.unmount().unwrap();
    check_image(&dev, "fpc");
    let mut fs = F2fs::mount_with(dev, 0, F2fsConfig::default().with_fpc()).unwrap();
    let back = fs.read(db, 0, want.len()).unwrap();
    assert!(back == want, "mail.db reads back different bytes");
    for (path, data, _) in &files[1..] {
        let ino = fs.lookup(path).unwrap();
        assert!(fs.read(ino, 0, data.len()).unwrap() == **data, "{path}");
    }
}

/// A file whose first write lands past page 0 (or that already holds data) is never
/// made compressed behind its back: its trial is skipped.
#[test]
fn fpc_skips_the_trial_of_a_file_written_elsewhere_first() {
    let mut fs = fresh(F2fsConfig::default().with_fpc());
    let ino = fs.create("/sparse.bin").unwrap();
    fs.write(ino, 8 * 4096, &records(4096)).unwrap();
    fs.write(ino, 0, &records(4096)).unwrap();
    assert_eq!(fs.compr_blocks(ino).unwrap(), 0);
    let m = fs.fpc_metrics();
    assert_eq!((m.trials, m.trials_skipped), (0, 1), "{m:?}");
}
