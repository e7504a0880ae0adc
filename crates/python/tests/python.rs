//! Runs the Python package's tests (`tests/test_flashstack.py`) on the extension this
//! build made: a point against the CLI's JSON (identical), errors with the CLI's
//! messages, bad grids refused before anything runs, an 8-point sweep on the local
//! backend, on a local Ray cluster and through `flashstack sweep` (equal tables), failed
//! points retried and kept.
//!
//! The extension is the cdylib of this crate built with `--features python` (scripts/test
//! builds the workspace so: one build, every crate compiled once). The package is laid out
//! in a scratch directory (the Python sources and the extension as `_native.abi3.so`) and
//! run by a virtual environment kept under `~/.cache/flashstack/` (pandas, pyarrow, ray
//! installed with pip on first use). Without the feature, Python or the packages: a skip,
//! a failure under `CI=true`.

use std::path::{Path, PathBuf};
use std::process::Command;

use flashstack_testkit::skip;

/// target/<profile>, from this test binary's path (target/<profile>/deps/python-HASH).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

/// The extension built with this test: the lib's cdylib, which `cargo test` leaves in
/// deps/ (only `cargo build` copies it up a level). Without the feature it exports no
/// module.
fn built_extension() -> Option<PathBuf> {
    let path = profile_dir().join("deps/lib_native.so");
    let bytes = std::fs::read(&path).ok()?;
    let has_module = bytes.windows(14).any(|w| w == b"PyInit__native");
    has_module.then_some(path)
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

/// The package as pip would install it: the Python sources and the extension.
fn lay_out_package(extension: &Path, root: &Path) {
    let package = root.join("flashstack");
    std::fs::create_dir_all(&package).unwrap();
    let sources = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/flashstack");
    for entry in std::fs::read_dir(sources).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "py") {
            std::fs::copy(&path, package.join(path.file_name().unwrap())).unwrap();
        }
    }
    std::fs::copy(extension, package.join("_native.abi3.so")).unwrap();
}

#[test]
fn the_python_package_matches_the_cli() {
    let Some(extension) = built_extension() else {
        skip(
            "python package tests",
            "the extension was built without its feature (cargo test --workspace --features flashstack-python/python, as scripts/test does)",
        );
        return;
    };
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
    let scratch = flashstack_testkit::scratch_dir("flashstack-python");
    let root = scratch.join("site");
    lay_out_package(&extension, &root);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/test_flashstack.py");
    let out = Command::new(&python)
        .arg(&script)
        .env("PYTHONPATH", &root)
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
        5,
        "{stdout}"
    );
}
