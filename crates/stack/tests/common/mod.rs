//! Helpers shared by the stack's integration tests: the real `fsck.f2fs -f` as judge (flashstack_testkit),
//! reading a file whole. Each test binary uses some of them.

#![allow(dead_code)]

use flashstack_sqlvfs::{FileApi, FileError, OpenFlags};
use flashstack_stack::Stack;

/// Writes the stack's logical device image and asserts that `fsck.f2fs -f` finds nothing
/// to report or fix in it.
pub fn assert_fsck_clean(stack: &mut Stack, what: &str) {
    let image = flashstack_testkit::scratch_dir("flashstack-stack").join(format!("{what}.img"));
    stack.write_image(&image).unwrap();
    flashstack_testkit::assert_fsck_clean(&image, what);
    let _ = std::fs::remove_file(&image);
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
