//! The README's example commands work as written. Every `flashstack` (or `cargo run
//! --release --`) command in its `sh` blocks is listed in [`PLANS`] and run in order in a
//! scratch directory (later commands use what earlier ones wrote: `my-device.toml`,
//! `tg.fst`, `dev.img`, `phone.img`), or skipped with the reason; the whole-stack and the
//! device-only commands in two tests that run in parallel. A command added to the
//! README without a plan, or a plan whose command left the README, fails the test, so the
//! README and this list stay in step.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

enum Plan {
    /// Run exactly as written.
    Run,
    /// Run with these arguments appended; the reason says why.
    RunWith(&'static [&'static str], &'static str),
    /// Not run here; the reason names where it is tested.
    Skip(&'static str),
}

const SMALL_EMMC: &str = "ldc-emmc+nand.geometry.blocks_per_plane=4096";
/// The default stack on a 1 GiB device: a phone aged on it is small.
const SMALL_STACK: &str = "default+device.nand.geometry.blocks_per_plane=4200";
/// Why a persona run on other stacks than the default starts factory-new here.
const OTHER_STACKS: &str = "each stack's aged phone is built on first use (ufs31's is \
    128 GiB, minutes); here only the default's is (by `flashstack run`, shared with \
    tests/cli.rs and tests/phone.rs), the aged start is tested in tests/phone.rs";
const MOUNT: &str = "needs root and /dev/fuse: crates/cli/tests/mount.rs runs the mounts";

/// Every README command, in README order.
const PLANS: &[(&str, Plan)] = &[
    ("flashstack run", Plan::Run),
    ("flashstack workload list", Plan::Run),
    (
        "flashstack run --workload gmail:send-image --compare ldc-emmc-pm,ldc-emmc-ldc,ufs31",
        Plan::RunWith(&["--fresh"], OTHER_STACKS),
    ),
    (
        "flashstack run --workload wechat --compare default,default+fs.mount.lfs_mode=true",
        Plan::RunWith(&["--fresh"], OTHER_STACKS),
    ),
    ("flashstack run --workload telegram --record tg.fst", Plan::Run),
    (
        "flashstack run --workload tg.fst --stack ufs31",
        Plan::RunWith(&["--fresh"], OTHER_STACKS),
    ),
    ("flashstack workload analyze zoom:attend-5min", Plan::Run),
    ("flashstack run --fresh", Plan::Run),
    (
        "flashstack run --fresh --compare default,mobifs,medfs --html report.html",
        Plan::Run,
    ),
    (
        "flashstack phone age --fill 0.7 -o my.phone",
        Plan::RunWith(
            &["--stack", SMALL_STACK, "--days", "6"],
            "a 1 GiB phone of 6 days; the 16 GiB, 90-day phone is the default's, built above",
        ),
    ),
    ("flashstack phone info my.phone", Plan::Run),
    (
        "flashstack run --workload wechat --phone my.phone",
        Plan::RunWith(&["--stack", SMALL_STACK], "the stack the small phone was aged on"),
    ),
    ("flashstack run --synthetic default", Plan::Run),
    ("flashstack presets", Plan::Run),
    ("flashstack presets --toml ufs31 > my-device.toml", Plan::Run),
    (
        "flashstack run --device ufs31 --synthetic \"zipf:0.99,count=1e6,read=0.3,size=4k,iat=exp:200us\"",
        Plan::Run,
    ),
    (
        "flashstack run --synthetic default --compare ldc-emmc,ldc-emmc+ftl.gc.policy=cost-benefit,my-device.toml",
        Plan::Run,
    ),
    (
        "flashstack run --trace examples/app.csv --clean --wrap --json out.json --csv out.csv",
        Plan::Run,
    ),
    ("flashstack trace inspect examples/app.csv", Plan::Run),
    (
        "flashstack run --synthetic \"uniform,count=1e5\" --image-out dev.img",
        Plan::RunWith(
            &["--device", SMALL_EMMC],
            "on the 16 GiB default the image's contents take 8 GiB of memory",
        ),
    ),
    (
        "flashstack run --image dev.img --synthetic \"zipf:0.9,count=1e5\"",
        Plan::Run,
    ),
    ("flashstack bench", Plan::Run),
    ("flashstack fs mkfs phone.img --size 512MiB", Plan::Run),
    ("flashstack fs put phone.img notes.txt /notes.txt", Plan::Run),
    ("flashstack fs ls phone.img /", Plan::Run),
    (
        "flashstack trace import --from strace app.strace app.fst",
        Plan::Run,
    ),
    ("flashstack workload analyze app.fst", Plan::Run),
    ("flashstack mount --block /tmp/fs", Plan::Skip(MOUNT)),
    (
        "flashstack mount --block /tmp/fs --device \"ldc-emmc-ldc+nand.geometry.blocks_per_plane=4096\" --metrics ext4.json",
        Plan::Skip(MOUNT),
    ),
    (
        "flashstack mount /tmp/phone --stack default --device \"ldc-emmc+nand.geometry.blocks_per_plane=4096\" --image phone.img --metrics phone.json",
        Plan::Skip(MOUNT),
    ),
];

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The `flashstack` commands of the README's `sh` blocks: continuation lines joined,
/// comments and a trailing `&` dropped, `&&` chains split, `cargo run --release --`
/// written as `flashstack`.
fn readme_commands() -> Vec<String> {
    let text = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let mut commands = Vec::new();
    let mut in_sh = false;
    let mut pending = String::new();
    for line in text.lines() {
        if line.starts_with("```") {
            in_sh = line == "```sh";
            continue;
        }
        if !in_sh {
            continue;
        }
        if let Some(head) = line.strip_suffix('\\') {
            pending.push_str(head);
            continue;
        }
        pending.push_str(line);
        let joined = std::mem::take(&mut pending);
        let code = joined.split(" #").next().unwrap_or_default();
        let code = code.trim().trim_end_matches('&').trim();
        for part in code.split("&&") {
            let part = part.split_whitespace().collect::<Vec<_>>().join(" ");
            let part = match part.strip_prefix("cargo run --release -- ") {
                Some(rest) => format!("flashstack {rest}"),
                None => part,
            };
            if part.starts_with("flashstack ") {
                commands.push(part);
            }
        }
    }
    commands
}

/// Words as a shell splits them (double quotes only, which is all the README uses).
fn words(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    let mut in_word = false;
    for c in command.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                in_word = true;
            }
            ' ' if !quoted => {
                if in_word {
                    out.push(std::mem::take(&mut word));
                }
                in_word = false;
            }
            c => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        out.push(word);
    }
    out
}

/// The scratch directory with the files the README assumes the user has.
fn scratch(name: &str) -> PathBuf {
    let dir = flashstack_testkit::scratch_dir(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("examples")).unwrap();
    let root = repo_root();
    std::fs::copy(root.join("examples/app.csv"), dir.join("examples/app.csv")).unwrap();
    std::fs::copy(
        root.join("crates/workload/tests/data/sample.strace"),
        dir.join("app.strace"),
    )
    .unwrap();
    std::fs::write(dir.join("notes.txt"), "call the dentist\n").unwrap();
    dir
}

fn run(dir: &Path, command: &str, extra: &[&str]) {
    let mut args = words(command);
    assert_eq!(args.remove(0), "flashstack");
    let mut stdout_to = None;
    if let Some(at) = args.iter().position(|a| a == ">") {
        stdout_to = Some(dir.join(&args[at + 1]));
        args.truncate(at);
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    let out = Command::new(env!("CARGO_BIN_EXE_flashstack"))
        .args(&args)
        // Built-in aged phones go where the other CLI tests keep theirs (one build).
        .env(
            "FLASHSTACK_CACHE_DIR",
            PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("phones"),
        )
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "`{command}` failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !out.stdout.is_empty() || !out.stderr.is_empty(),
        "`{command}` printed nothing"
    );
    if let Some(path) = stdout_to {
        std::fs::write(path, &out.stdout).unwrap();
    }
}

#[test]
fn every_readme_command_is_planned() {
    let found = readme_commands();
    let planned: Vec<&str> = PLANS.iter().map(|(c, _)| *c).collect();
    assert_eq!(
        found, planned,
        "the README's commands (left) and this test's plans (right) differ"
    );
}

/// Whether a README command runs on the whole stack (personas, phones, the built-in aged
/// phone) rather than on a device alone. The two kinds share no files, so they run as two
/// tests, in parallel; each keeps its commands in README order.
fn on_the_stack(command: &str) -> bool {
    command == "flashstack run"
        || [
            "--workload",
            "--fresh",
            "phone age",
            "phone info",
            "workload list",
            "zoom:",
        ]
        .iter()
        .any(|w| command.contains(w))
}

fn run_plans(name: &str, stack: bool) {
    let dir = scratch(name);
    for (command, plan) in PLANS.iter().filter(|(c, _)| on_the_stack(c) == stack) {
        match plan {
            Plan::Run => run(&dir, command, &[]),
            Plan::RunWith(extra, _why) => run(&dir, command, extra),
            Plan::Skip(why) => println!("not run here: {command}: {why}"),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn readme_stack_commands_run_as_written() {
    run_plans("flashstack-readme-stack", true);
}

#[test]
fn readme_device_commands_run_as_written() {
    run_plans("flashstack-readme-device", false);
}
