//! What flashstack's tests share (a dev-dependency only).
//!
//! **Skipping.** A test that needs something this machine lacks (a system tool, root,
//! `/dev/fuse`, a specific mkfs.f2fs version) calls [`skip`] and returns. Under `CI=true`
//! that is a failure: CI must really run every external judge (`scripts/test` installs
//! the tools when it runs as root). Elsewhere the test passes, and the skip must still be
//! seen: cargo captures a passing test's output (stdout and stderr alike), so a printed
//! notice alone is never shown by `cargo test` or `scripts/test`. Each skip is therefore
//! also appended to the file named by `FLASHSTACK_SKIP_LOG`, which `scripts/test` sets,
//! lists after the run and counts in its closing line (`tests: N passed, N failed, N
//! skipped`).
//!
//! **Scratch files.** A test binary keeps its files under [`scratch_dir`], one directory
//! per process. Statics are never dropped and a failing or killed test cleans nothing, so
//! instead each call first removes what earlier, finished processes left under the same
//! prefix: a machine holds at most the files of the runs still going, not every run's
//! images (hundreds of megabytes each for the mount tests).

pub mod browser;
pub mod report;

use std::io::Write;
use std::path::{Path, PathBuf};

/// The environment variable naming the skip log.
pub const SKIP_LOG_VAR: &str = "FLASHSTACK_SKIP_LOG";

/// Whether this is a CI run (`CI=true`), where no test may skip.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// Records that the calling test skips `what` because of `why`, or fails it under CI.
/// The caller returns (or leaves out the part named) after this.
#[track_caller]
pub fn skip(what: &str, why: &str) {
    let test = current_test();
    if in_ci() {
        panic!("{test}: cannot {what}: {why} (CI=true makes a skip a failure)");
    }
    let line = format!("skipped {test}: {what}: {why}");
    println!("{line}");
    if let Some(path) = std::env::var_os(SKIP_LOG_VAR) {
        // One short append per skip: whole lines even with tests in parallel processes.
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()));
        if let Err(e) = appended {
            panic!("cannot record the skip in {}: {e}", path.to_string_lossy());
        }
    }
}

/// Where `fsck.f2fs` is, or `None` after [`skip`]ping the check (not installed).
#[track_caller]
pub fn fsck_f2fs() -> Option<std::path::PathBuf> {
    let found = [
        "/usr/sbin/fsck.f2fs",
        "/sbin/fsck.f2fs",
        "/usr/bin/fsck.f2fs",
    ]
    .map(std::path::PathBuf::from)
    .into_iter()
    .find(|p| p.is_file());
    if found.is_none() {
        skip(
            "check the image with fsck.f2fs",
            "not found: install the f2fs-tools package (scripts/test does, as root)",
        );
    }
    found
}

/// Runs `fsck.f2fs -f IMAGE` (a full check; it may rewrite the image) and panics, naming
/// `what`, unless it exits 0 and reports nothing failed, asserted or fixed. Skips (see
/// [`skip`]) when f2fs-tools is missing.
#[track_caller]
pub fn assert_fsck_clean(image: &Path, what: &str) {
    let Some(fsck) = fsck_f2fs() else { return };
    let out = std::process::Command::new(fsck)
        .arg("-f")
        .arg(image)
        // fsck asks on stdin whether to restore lost files; never let it wait.
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run fsck.f2fs: {e}"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{what}: fsck.f2fs failed:\n{text}");
    let bad = ["[Fail]", "[FAIL]", "[ASSERT]", "[FIX]"];
    assert!(
        !bad.iter().any(|b| text.contains(b)),
        "{what}: fsck.f2fs found problems:\n{text}"
    );
}

/// `$TMPDIR/{prefix}-{pid}`, created, for this process's scratch files; first removes the
/// entries `{prefix}-{pid}` (and `{prefix}-{pid}-...`, `{prefix}-{pid}.ext`) of processes
/// that have ended. Removal errors are ignored (a stale mount point, another user's file).
pub fn scratch_dir(prefix: &str) -> PathBuf {
    let tmp = std::env::temp_dir();
    remove_stale(&tmp, prefix);
    let dir = tmp.join(format!("{prefix}-{}", std::process::id()));
    std::fs::create_dir_all(&dir)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    dir
}

/// Removes `tmp`'s entries that [`stale_pid`] attributes to a finished process.
fn remove_stale(tmp: &Path, prefix: &str) {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| stale_pid(n, prefix)) else {
            continue;
        };
        if pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let path = entry.path();
        let _ = if path.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
    }
}

/// The process id in `name` if it is `{prefix}-{pid}` or that followed by `-` or `.`.
fn stale_pid(name: &str, prefix: &str) -> Option<u32> {
    let rest = name.strip_prefix(prefix)?.strip_prefix('-')?;
    let end = rest.find(['-', '.']).unwrap_or(rest.len());
    let digits = &rest[..end];
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The running test's name: libtest names each test's thread after it.
fn current_test() -> String {
    let thread = std::thread::current();
    match thread.name() {
        Some(name) if name != "main" => name.to_string(),
        _ => std::env::args().next().unwrap_or_else(|| "a test".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scratch_names_are_matched_by_prefix_and_pid() {
        assert_eq!(stale_pid("flashstack-cli-123", "flashstack-cli"), Some(123));
        assert_eq!(
            stale_pid("flashstack-cli-123-f2fs.img", "flashstack-cli"),
            Some(123)
        );
        assert_eq!(
            stale_pid("flashstack-cli-123.json", "flashstack-cli"),
            Some(123)
        );
        assert_eq!(
            stale_pid("flashstack-cli-phone-123", "flashstack-cli"),
            None
        );
        assert_eq!(stale_pid("flashstack-cli-", "flashstack-cli"), None);
        assert_eq!(stale_pid("flashstack-client-1", "flashstack-cli"), None);
    }

    #[test]
    fn scratch_dirs_of_finished_processes_are_removed() {
        // pid_max is at most 2^22 on Linux: this process id never runs.
        let prefix = format!("testkit-scratch-{}", std::process::id());
        let stale = std::env::temp_dir().join(format!("{prefix}-4294967295"));
        std::fs::create_dir_all(stale.join("sub")).unwrap();
        let stale_file = std::env::temp_dir().join(format!("{prefix}-4294967295-x.img"));
        std::fs::write(&stale_file, b"left behind").unwrap();
        let mine = scratch_dir(&prefix);
        assert!(!stale.exists() && !stale_file.exists());
        assert!(mine.is_dir());
        // A second call keeps the directory of a process still running (this one).
        assert_eq!(scratch_dir(&prefix), mine);
        assert!(mine.is_dir());
        std::fs::remove_dir_all(&mine).unwrap();
    }

    #[test]
    fn skips_are_logged_with_the_test_name() {
        if in_ci() {
            return; // Under CI a skip panics; that path is not what this checks.
        }
        let log = std::env::temp_dir().join(format!("testkit-skips-{}", std::process::id()));
        let _ = std::fs::remove_file(&log);
        // Only this test sets the variable, and it reads it back before anything else can.
        std::env::set_var(SKIP_LOG_VAR, &log);
        skip("run the example", "no such tool");
        std::env::remove_var(SKIP_LOG_VAR);
        let text = std::fs::read_to_string(&log).unwrap();
        let _ = std::fs::remove_file(&log);
        assert_eq!(
            text,
            "skipped tests::skips_are_logged_with_the_test_name: run the example: no such tool\n"
        );
    }
}
