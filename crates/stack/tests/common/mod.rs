//! Helpers shared by the stack's integration tests: the real `fsck.f2fs -f` as judge,
//! reading a file whole. Each test binary uses some of them.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

use flashstack_sqlvfs::{FileApi, FileError, OpenFlags};
use flashstack_stack::Stack;

/// The installed f2fs-tools program `name`; `None` (with a notice) if it is missing, a
/// failure under CI=true, where a missing tool must never become a silent skip.
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

/// Writes the stack's logical device image and asserts that `fsck.f2fs -f` finds nothing
/// to report or fix in it.
pub fn assert_fsck_clean(stack: &mut Stack, what: &str) {
    let Some(fsck) = tool("fsck.f2fs") else {
        return;
    };
    let image = std::env::temp_dir().join(format!(
        "flashstack-stack-{}-{}.img",
        std::process::id(),
        what
    ));
    stack.write_image(&image).unwrap();
    let out = Command::new(fsck).arg("-f").arg(&image).output().unwrap();
    let _ = std::fs::remove_file(&image);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{what}: fsck.f2fs failed:\n{text}");
    let bad = ["[Fail]", "[FAIL]", "[ASSERT]", "[FIX]"];
    assert!(
        !bad.iter().any(|b| text.contains(b)),
        "{what}: fsck.f2fs found problems:\n{text}"
    );
}

/// A file's whole content through the FileApi (open, size, read, close).
pub fn try_read_all(s: &mut Stack, p: &str) -> Result<Vec<u8>, FileError> {
    let (h, t) = s.open(s.now_ns(), p, OpenFlags::default())?;
    let (size, t) = s.size(t, h)?;
    let mut buf = vec![0u8; size as usize];
    let (n, t) = s.read_at(t, h, 0, &mut buf)?;
    assert_eq!(n as u64, size, "{p}: short read");
    s.close(t, h)?;
    Ok(buf)
}
