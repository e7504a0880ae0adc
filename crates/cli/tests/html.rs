//! `run --html`: the report of a three-column `--compare` on the persona mix, checked for
//! determinism and size, then opened in headless Chromium: every plot must lay out with
//! marks in it and the page must log no errors (`flashstack_testkit::browser`). The
//! screenshot is kept under the target directory (`html-report.png`) for a person to look
//! at. Chromium comes from `scripts/test` (Debian's `chromium`); under CI=true a missing
//! browser is a failure.

use std::path::Path;
use std::process::Command;

fn flashstack(args: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_flashstack"))
        .args(args)
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn report(path: &Path) -> String {
    flashstack(&[
        "run",
        "--fresh",
        "--quiet",
        "--compare",
        "default,mobifs,medfs",
        "--html",
        path.to_str().unwrap(),
    ]);
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn the_html_report_is_deterministic_small_and_renders_in_a_browser() {
    let dir = flashstack_testkit::scratch_dir("flashstack-html");
    let a = dir.join("a.html");
    let html = report(&a);
    let again = report(&a);
    let differ = html.bytes().zip(again.bytes()).position(|(x, y)| x != y);
    assert!(
        differ.is_none() && html.len() == again.len(),
        "same seed, different bytes (from byte {differ:?})"
    );
    assert!(html.len() < 2_000_000, "{} bytes", html.len());
    let figures = html.matches("<figure data-plot=").count();
    assert!(figures >= 10, "{figures} plots");
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("html-report.png");
    flashstack_testkit::browser::check_plots_render(&a, figures, &shot);
}
