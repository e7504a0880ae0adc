//! `reproduce ldc --stack-only` refuses the block-level runs' flags rather than ignoring
//! them (the figures themselves: `flashstack-experiments`' tests/ldc_stack.rs).

use std::process::Command;

#[test]
fn stack_only_refuses_block_level_flags() {
    for (flag, value) in [
        ("--fill", "0.6"),
        ("--aging", "1"),
        ("--lay-down", "through-policy"),
        ("--jobs", "2"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_flashstack"))
            .args(["reproduce", "ldc", "--stack-only", "--quick", flag, value])
            .output()
            .expect("the binary runs");
        assert!(!out.status.success(), "{flag} was accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("{flag} sets the block-level runs")),
            "{flag}: {err}"
        );
    }
}
