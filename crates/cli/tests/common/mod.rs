//! Helpers shared by the CLI's integration tests.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `flashstack ARGS` (`args[1]` the mount point, for a mount) and returns its exit status and stderr; a command still running
/// after 60 s (a mount that came up although it should have been refused) is killed and
/// the test fails.
pub fn flashstack_within_a_minute(args: &[&str]) -> (bool, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_flashstack"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            let _ = Command::new("umount").arg("-l").arg(args[1]).status();
            panic!(
                "`flashstack {}` is still running: it was not refused",
                args.join(" ")
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}
