//! Helpers for the tests that run the real f2fs-tools (Debian package f2fs-tools).
//!
//! When a tool is missing the test skips (`flashstack_testkit::skip`: logged for
//! `scripts/test` to list), except under `CI=true`, where a missing tool is a failure: CI
//! must really run the external judge (`scripts/test` installs the package as root).

#![allow(dead_code)]

pub mod surgery;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use flashstack_f2fs::MemDevice;

/// Finds an f2fs-tools binary on PATH or in the sbin directories Debian installs it to
/// (often not on a normal user's PATH).
pub fn tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|p| p.is_file());
    if found.is_none() {
        flashstack_testkit::skip(
            &format!("run {name}"),
            "not found: install the f2fs-tools package (scripts/test does, as root)",
        );
    }
    found
}

/// A directory removed when the test ends.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(test: &str) -> TempDir {
        let dir =
            std::env::temp_dir().join(format!("flashstack-f2fs-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create temp dir");
        TempDir(dir)
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What fsck.f2fs said about an image.
pub struct FsckReport {
    pub status: Option<i32>,
    pub output: String,
}

/// Runs `fsck.f2fs -f IMAGE` (full check; it may rewrite the image, so pass a copy).
pub fn fsck(fsck: &Path, image: &Path) -> FsckReport {
    let out = Command::new(fsck)
        .arg("-f")
        .arg(image)
        // fsck asks on stdin whether to restore lost files; never let it wait.
        .stdin(Stdio::null())
        .output()
        .expect("run fsck.f2fs");
    FsckReport {
        status: out.status.code(),
        output: format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// A clean report: exit status 0, no failed check, no assertion or fix message, and the
/// closing "other corrupted bugs [Ok..]" line present. (`fsck.f2fs -f` exits 0 even after
/// fixing errors, so the status alone proves nothing.)
pub fn assert_clean(report: &FsckReport, what: &str) {
    assert!(
        is_clean(report),
        "fsck.f2fs rejected {what} (status {:?}, failing lines {:?}):\n{}",
        report.status,
        failing_lines(report),
        report.output
    );
}

/// Whether a report is clean (see [`assert_clean`]).
pub fn is_clean(report: &FsckReport) -> bool {
    let closing = report
        .output
        .lines()
        .any(|l| l.starts_with("[FSCK] other corrupted bugs") && l.contains("[Ok..]"));
    let checks = report
        .output
        .lines()
        .filter(|l| l.starts_with("[FSCK]") && l.contains("[Ok..]"))
        .count();
    report.status == Some(0) && failing_lines(report).is_empty() && closing && checks >= 10
}

/// The lines of a report that show a failed check, an assertion or a fix.
pub fn failing_lines(report: &FsckReport) -> Vec<&str> {
    report
        .output
        .lines()
        .filter(|l| l.contains("[Fail]") || l.contains("[ASSERT]") || l.contains("[FIX]"))
        .collect()
}

/// Runs mkfs.f2fs on a fresh sparse file of `bytes` bytes.
pub fn mkfs_f2fs(mkfs: &Path, image: &Path, bytes: u64, args: &[&str]) {
    let file = std::fs::File::create(image).expect("create image");
    file.set_len(bytes).expect("size image");
    drop(file);
    let out = Command::new(mkfs)
        .arg("-f")
        .args(args)
        .arg(image)
        .stdin(Stdio::null())
        .output()
        .expect("run mkfs.f2fs");
    assert!(
        out.status.success(),
        "mkfs.f2fs {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The version mkfs.f2fs reports, e.g. "1.15.0".
pub fn tool_version(tool: &Path) -> String {
    let out = Command::new(tool).arg("-V").output().expect("run -V");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.split_whitespace()
        .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .unwrap_or_default()
        .to_string()
}

/// LBAs where two devices differ (both sparse: absent means zero).
pub fn differing_blocks(a: &MemDevice, b: &MemDevice) -> Vec<u64> {
    let mut lbas: Vec<u64> = a.stored_lbas().chain(b.stored_lbas()).collect();
    lbas.sort_unstable();
    lbas.dedup();
    lbas.into_iter()
        .filter(|&lba| a.block(lba) != b.block(lba))
        .collect()
}

/// The Android-like format the tests use: the features an Android /data partition gets
/// beyond the defaults, and extra cold/hot extension lists (mkfs.f2fs
/// `-O extra_attr,inode_checksum,sb_checksum,compression -e db -E mp4`).
pub const ANDROID_LIKE_ARGS: [&str; 6] = [
    "-O",
    "extra_attr,inode_checksum,sb_checksum,compression",
    "-e",
    "db",
    "-E",
    "mp4",
];

pub fn android_like() -> flashstack_f2fs::MkfsOptions {
    flashstack_f2fs::MkfsOptions {
        features: flashstack_f2fs::Features::parse(ANDROID_LIKE_ARGS[1]).unwrap(),
        cold_extensions: vec!["db".into()],
        hot_extensions: vec!["mp4".into()],
        ..flashstack_f2fs::MkfsOptions::default()
    }
}

pub const MIB: u64 = 1 << 20;
pub const GIB: u64 = 1 << 30;

/// Our own full verification ([`Verify::Full`], read-only so that nothing is replayed or
/// written) finds nothing wrong with the checkpointed state of `dev`.
pub fn assert_walk_clean(dev: &MemDevice, what: &str) {
    let opts = flashstack_f2fs::MountOptions {
        verify: flashstack_f2fs::Verify::Full,
        read_only: true,
        ..Default::default()
    };
    let fs = flashstack_f2fs::F2fs::mount_opts(dev.clone(), opts)
        .unwrap_or_else(|e| panic!("{what}: the full verification refused the image: {e}"));
    assert!(
        fs.warnings().is_empty(),
        "{what}: the full verification found {:?}",
        fs.warnings()
    );
}

/// Exports `dev` as an image and asserts that `fsck.f2fs -f` finds it clean (skipped with
/// a notice when f2fs-tools is missing, outside CI).
pub fn check_image(dev: &MemDevice, what: &str) {
    assert_walk_clean(dev, what);
    let Some(bin) = tool("fsck.f2fs") else {
        return;
    };
    let dir = TempDir::new(&what.replace([' ', ':', ',', '/'], "-"));
    let image = dir.file("image");
    dev.export(&image).unwrap();
    assert_clean(&fsck(&bin, &image), what);
}

/// Bytes no codec shrinks (xorshift64*), one stream per seed.
pub fn incompressible(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        out.extend_from_slice(&x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    out.truncate(len);
    out
}
