//! Runs the Python package's tests (`tests/test_flashstack.py`) on the package as a user
//! installs it: `pip install ./crates/python` into a virtual environment (maturin builds
//! the wheel in release mode), then a point against the CLI's JSON (identical), a
//! block-level point and a sweep over devices, errors with
//! the CLI's messages, bad grids refused before anything runs, an 8-point sweep on the
//! local backend, on a local Ray cluster and through `flashstack sweep` (equal tables),
//! failed points retried and kept.
//!
//! The virtual environment is kept under `~/.cache/flashstack/` (pandas, pyarrow, ray
//! installed with pip on first use); maturin compiles into `target/wheel`, its own target
//! directory (the `cargo test` running this holds the lock of the one it built in), so a
//! second run rebuilds only what changed. Runs only when the crate's `python` feature is on
//! (scripts/test turns it on, so clippy checks the bindings); without the feature, Python,
//! pip or the network: a skip, a failure under `CI=true`.

use std::path::{Path, PathBuf};
use std::process::Command;

use flashstack_testkit::skip;

/// target/<profile>, from this test binary's path (target/<profile>/deps/python-HASH).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

const PACKAGES: &[&str] = &["pandas", "pyarrow", "ray"];

/// A virtual environment with the packages the tests import, made on first use.
fn venv() -> Result<PathBuf, String> {
    let dir = match std::env::var_os("FLASHSTACK_PYTHON_VENV") {
        Some(dir) => PathBuf::from(dir),
        None => {
            let home = std::env::var_os("HOME").ok_or("no HOME")?;
            PathBuf::from(home).join(".cache/flashstack/python-venv")
        }
    };
    let python = dir.join("bin/python");
    if !python.exists() {
        let base = std::env::var("FLASHSTACK_PYTHON").unwrap_or_else(|_| "python3".into());
        run(
            Command::new(&base).args(["-m", "venv"]).arg(&dir),
            "python3 -m venv",
        )?;
    }
    let imports = format!("import {}", PACKAGES.join(", "));
    if !Command::new(&python)
        .args(["-c", &imports])
        .status()
        .is_ok_and(|s| s.success())
    {
        run(
            Command::new(&python)
                .args(["-m", "pip", "install", "-q", "--disable-pip-version-check"])
                .args(PACKAGES),
            "pip install pandas pyarrow ray",
        )?;
    }
    Ok(python)
}

fn run(command: &mut Command, what: &str) -> Result<(), String> {
    let out = command.output().map_err(|e| format!("{what}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{what}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(())
}

/// `pip install ./crates/python` into the environment: maturin builds the wheel (release
/// profile, target/wheel) and pip installs it, replacing the previous build. Returns the
/// directory Python imports the package from.
fn install_package(python: &Path) -> Result<PathBuf, String> {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    run(
        Command::new(python)
            .args(["-m", "pip", "install", "-q", "--disable-pip-version-check"])
            .args(["--force-reinstall", "--no-deps"])
            .arg(crate_dir)
            .env(
                "CARGO_TARGET_DIR",
                profile_dir().parent().unwrap().join("wheel"),
            ),
        "pip install ./crates/python",
    )?;
    // From a neutral directory, so nothing on the path but the environment provides it.
    let out = Command::new(python)
        .args([
            "-c",
            "import flashstack, os; print(os.path.dirname(flashstack.__file__))",
        ])
        .current_dir(std::env::temp_dir())
        .output()
        .map_err(|e| format!("import flashstack: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "import flashstack: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

#[test]
fn the_python_package_matches_the_cli() {
    if !cfg!(feature = "python") {
        skip(
            "python package tests",
            "the crate's python feature is off (cargo test --workspace --features flashstack-python/python, as scripts/test does)",
        );
        return;
    }
    let cli = profile_dir().join("flashstack");
    if !cli.exists() {
        skip(
            "python package tests",
            "no flashstack binary in this build (cargo test --workspace builds it)",
        );
        return;
    }
    let python = match venv() {
        Ok(python) => python,
        Err(why) => {
            skip("python package tests", &why);
            return;
        }
    };
    let installed = match install_package(&python) {
        Ok(dir) => dir,
        Err(why) => {
            skip("python package tests", &why);
            return;
        }
    };
    let venv_dir = python.parent().unwrap().parent().unwrap();
    assert!(
        installed.starts_with(venv_dir) && installed.join("_native.abi3.so").exists(),
        "flashstack imported from {} (not the environment {} pip installed into)",
        installed.display(),
        venv_dir.display()
    );
    let scratch = flashstack_testkit::scratch_dir("flashstack-python");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/test_flashstack.py");
    let out = Command::new(&python)
        .arg(&script)
        .env("FLASHSTACK_BIN", &cli)
        .env("FLASHSTACK_SCRATCH", &scratch)
        .env("FLASHSTACK_CACHE_DIR", scratch.join("phones"))
        .env("RAY_USAGE_STATS_ENABLED", "0")
        .output()
        .expect("the virtual environment's python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "python tests failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout.matches("\nok ").count() + stdout.starts_with("ok ") as usize,
        6,
        "{stdout}"
    );
}
