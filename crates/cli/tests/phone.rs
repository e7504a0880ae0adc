//! Used phones end to end: `phone age`, `phone info`, `run --phone/--fresh/--image-out`,
//! the aged default run, and the errors a user can meet on the way.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The default stack on a 1 GiB device.
const SMALL: &str = "default+device.nand.geometry.blocks_per_plane=4200";

/// Built phones are kept under the target directory, shared by the tests of one run (and
/// never depending on a previous run: the cache key includes the executable's hash).
fn cache_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("phones")
}

fn flashstack(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flashstack"))
        .args(args)
        .env("FLASHSTACK_CACHE_DIR", cache_dir())
        .output()
        .expect("the binary runs")
}

fn ok(out: Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn err(out: Output, what: &str) -> String {
    assert!(!out.status.success(), "{what} succeeded");
    String::from_utf8(out.stderr).unwrap()
}

fn temp(name: &str) -> PathBuf {
    flashstack_testkit::scratch_dir("flashstack-cli-phone").join(name)
}

/// A small used phone, made once per test binary with `phone age`.
fn small_phone() -> &'static Path {
    static PHONE: OnceLock<PathBuf> = OnceLock::new();
    PHONE.get_or_init(|| {
        let path = temp("small.phone");
        let out = flashstack(&[
            "phone",
            "age",
            "--stack",
            SMALL,
            "--days",
            "6",
            "--quiet",
            "-o",
            path.to_str().unwrap(),
        ]);
        let text = ok(out, "phone age");
        assert!(
            text.contains("aged phone:") && text.contains("days"),
            "{text}"
        );
        path
    })
}

#[test]
fn phone_info_describes_the_file() {
    let text = ok(
        flashstack(&["phone", "info", small_phone().to_str().unwrap()]),
        "phone info",
    );
    for want in [
        "aged phone:",
        "database",
        "photo",
        "apk",
        "erases min/mean/max",
    ] {
        assert!(text.contains(want), "{want}: {text}");
    }
    let json = ok(
        flashstack(&["phone", "info", small_phone().to_str().unwrap(), "--json"]),
        "phone info --json",
    );
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["spec"]["days"], 6);
}

#[test]
fn a_persona_runs_from_the_phone_deterministically_and_its_image_passes_fsck() {
    let mut outputs = Vec::new();
    for run in 0..2 {
        let json = temp(&format!("phone-run{run}.json"));
        let image = temp(&format!("phone-run{run}.img"));
        let mut args = vec![
            "run",
            "--quiet",
            "--workload",
            "facebook",
            "--phone",
            small_phone().to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
            "--image-out",
            image.to_str().unwrap(),
        ];
        // The second run names no stack: it runs on the stack the phone was made on. It
        // also checks every read, which must change no byte of the report.
        if run == 0 {
            args.extend(["--stack", SMALL]);
        } else {
            args.push("--check-reads");
        }
        let out = flashstack(&args);
        let table = ok(out, "run --phone");
        assert!(
            table.contains("start (") && table.contains("aged phone:"),
            "{table}"
        );
        outputs.push((table, std::fs::read(&json).unwrap()));
        if run == 0 {
            check_image(&image);
        }
        let _ = std::fs::remove_file(&image);
    }
    assert!(
        outputs[0] == outputs[1],
        "two runs from one phone differ (the second without --stack, with --check-reads):\n{}\n{}",
        outputs[0].0,
        outputs[1].0
    );
    let v: serde_json::Value = serde_json::from_slice(&outputs[0].1).unwrap();
    // Facebook's app is on the phone: its setup is skipped, its task runs on aged data.
    let precondition = v["device"]["run"]["precondition"].as_str().unwrap_or("");
    assert!(precondition.contains("used phone"), "{precondition}");
}

/// fsck.f2fs is clean, and dump.f2fs reads the persona's database out of the image: a
/// SQLite file that passes sqlite3's integrity check.
fn check_image(image: &Path) {
    let stat = ok(
        flashstack(&[
            "fs",
            "stat",
            image.to_str().unwrap(),
            "/data/data/com.facebook.katana/databases/newsfeed_db",
        ]),
        "fs stat",
    );
    let stat: serde_json::Value = serde_json::from_str(&stat).unwrap();
    let ino = stat["ino"].as_u64().expect("an inode number");
    let size = stat["size_bytes"].as_u64().unwrap();
    if flashstack_testkit::fsck_f2fs().is_none() {
        return; // dump.f2fs comes with fsck.f2fs (f2fs-tools).
    }
    flashstack_testkit::assert_fsck_clean(image, "the persona run's image");
    let dir = temp("dump");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut dump = Command::new("dump.f2fs")
        .arg("-i")
        .arg(format!("{ino:#x}"))
        .arg(image)
        .current_dir(&dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("dump.f2fs comes with fsck.f2fs");
    use std::io::Write;
    dump.stdin.take().unwrap().write_all(b"y\n").unwrap();
    let out = dump.wait_with_output().unwrap();
    let dumped = dir.join("lost_found").join("newsfeed_db");
    let bytes = std::fs::read(&dumped).unwrap_or_else(|e| {
        panic!(
            "dump.f2fs wrote no {}: {e}\n{}",
            dumped.display(),
            String::from_utf8_lossy(&out.stdout)
        )
    });
    assert_eq!(bytes.len() as u64, size);
    assert!(bytes.starts_with(b"SQLite format 3\0"));
    match Command::new("sqlite3")
        .arg(&dumped)
        .arg("PRAGMA integrity_check")
        .output()
    {
        Ok(out) => assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok"),
        Err(_) => flashstack_testkit::skip(
            "check the dumped database's integrity",
            "sqlite3 not found (scripts/test installs it, as root)",
        ),
    }
}

#[test]
fn wrong_and_conflicting_starting_states_are_clear_errors() {
    let phone = small_phone().to_str().unwrap();
    let e = err(
        flashstack(&[
            "run",
            "--quiet",
            "--workload",
            "facebook",
            "--stack",
            "ufs31",
            "--phone",
            phone,
        ]),
        "another device",
    );
    assert!(
        e.contains("ufs31") && e.contains("phone age --stack"),
        "{e}"
    );
    let e = err(
        flashstack(&["run", "--quiet", "--phone", phone, "--fresh"]),
        "--phone with --fresh",
    );
    assert!(e.contains("--fresh"), "{e}");
    let e = err(
        flashstack(&["run", "--quiet", "--synthetic", "default", "--phone", phone]),
        "--phone on a block workload",
    );
    assert!(e.contains("--phone and --fresh apply to personas"), "{e}");
    let e = err(
        flashstack(&["run", "--quiet", "--synthetic", "default", "--check-reads"]),
        "--check-reads on a block workload",
    );
    assert!(e.contains("--check-reads") && e.contains("--verify"), "{e}");
    let bad = temp("bad.phone");
    std::fs::write(&bad, b"FLASHSTACK-PHONE nope").unwrap();
    let e = err(
        flashstack(&[
            "run",
            "--quiet",
            "--workload",
            "facebook",
            "--phone",
            bad.to_str().unwrap(),
        ]),
        "damaged phone",
    );
    assert!(e.contains("bad.phone") && e.contains("--phone"), "{e}");
    let e = err(
        flashstack(&[
            "phone",
            "age",
            "--fill",
            "0.99",
            "-o",
            temp("x.phone").to_str().unwrap(),
        ]),
        "impossible fill",
    );
    assert!(e.contains("fill") && e.contains("0.99"), "{e}");
}

/// A stack too small for the phone's apps, and a fill below what the installed apps
/// alone take, are refused with what is wrong (not a writeback error, nor a phone fuller
/// than asked).
#[test]
fn a_phone_too_small_for_its_apps_or_its_fill_is_refused_saying_so() {
    let age = |stack: &str, fill: &str| {
        flashstack(&[
            "phone",
            "age",
            "--stack",
            stack,
            "--fill",
            fill,
            "--days",
            "1",
            "--quiet",
            "-o",
            temp("refused.phone").to_str().unwrap(),
        ])
    };
    let e = err(
        age("default+device.nand.geometry.blocks_per_plane=1200", "0.8"),
        "tiny stack",
    );
    assert!(
        e.contains("too small for the personas' apps") && e.contains("age a larger device"),
        "{e}"
    );
    let e = err(age(SMALL, "0.1"), "fill below the apps");
    assert!(
        e.contains("the installed apps alone fill") && e.contains("above the target 10.0%"),
        "{e}"
    );
}

#[test]
fn image_out_on_a_block_workload_says_it_stores_contents() {
    // 1 TiB of flash: preconditioning it with contents cannot fit in memory.
    let e = err(
        flashstack(&[
            "run",
            "--quiet",
            "--device",
            "ldc-emmc+nand.geometry.blocks_per_plane=4200000",
            "--synthetic",
            "uniform,count=1000",
            "--precondition",
            "0.9",
            "--image-out",
            temp("big.img").to_str().unwrap(),
        ]),
        "image-out on a huge device",
    );
    assert!(e.contains("--image-out needs page contents"), "{e}");
    assert!(e.contains("--no-precondition"), "{e}");
}

/// The default run starts from the built-in aged phone (built into the cache on first
/// use) and shows F2FS cleaning and device garbage collection at work.
#[test]
fn the_default_run_starts_from_an_aged_phone_with_cleaning_and_erases() {
    let json = temp("default.json");
    let table = ok(
        flashstack(&["run", "--quiet", "--json", json.to_str().unwrap()]),
        "default run",
    );
    assert!(
        table.contains("start (default): aged phone: 79.")
            || table.contains("start (default): aged phone: 80."),
        "{table}"
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let run = &v; // one run: one object
    let cleaning = run["fs"]["gc_cycles"].as_u64().unwrap();
    let erases = run["device"]["nand"]["block_erases"].as_u64().unwrap();
    println!("default run on the aged phone: {cleaning} F2FS cleaning cycles, {erases} erases");
    assert!(cleaning > 0, "no F2FS cleaning");
    assert!(erases > 0, "no device erases");
    // --fresh: the factory-new phone of before, whose device erases nothing (so the
    // assertion above fails there).
    let fresh_json = temp("fresh.json");
    let fresh = ok(
        flashstack(&[
            "run",
            "--quiet",
            "--fresh",
            "--json",
            fresh_json.to_str().unwrap(),
        ]),
        "run --fresh",
    );
    assert!(fresh.contains("factory-new phone"), "{fresh}");
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&fresh_json).unwrap()).unwrap();
    assert_eq!(v["device"]["nand"]["block_erases"].as_u64(), Some(0));
}
