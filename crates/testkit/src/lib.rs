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

use std::io::Write;

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
