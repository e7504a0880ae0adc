//! `run --html`: the report of a three-column `--compare` on the persona mix, checked for
//! determinism and size, then opened in headless Chromium: every plot must lay out with
//! marks in it and the page must log no errors. The screenshot is kept under the target
//! directory (`html-report.png`) for a person to look at. Chromium comes from
//! `scripts/test` (Debian's `chromium`); under CI=true a missing browser is a failure.

use std::path::{Path, PathBuf};
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

/// Marks every figure's plot as laid out ("ok": a non-empty box with marks in it) and
/// records any script error, as attributes of `<body>` that `--dump-dom` shows.
const CHECK: &str = "<script>\n\
window.addEventListener('error', e => document.body.setAttribute('data-error', e.message));\n\
const figures = [...document.querySelectorAll('figure[data-plot]')];\n\
const seen = figures.map(f => {\n\
  const svg = f.querySelector('svg');\n\
  if (!svg) return f.dataset.plot + ': no svg';\n\
  const box = svg.getBBox();\n\
  const marks = svg.querySelectorAll('polyline, rect, path').length;\n\
  return box.width > 0 && box.height > 0 && marks > 3 ? 'ok' : f.dataset.plot + ': empty';\n\
});\n\
document.body.setAttribute('data-check', seen.join('|'));\n\
</script>\n";

fn chromium() -> Option<PathBuf> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
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
    let Some(browser) = chromium() else {
        flashstack_testkit::skip("open the report in Chromium", "chromium is not installed");
        return;
    };
    let checked = dir.join("checked.html");
    std::fs::write(
        &checked,
        html.replace("</body>", &format!("{CHECK}</body>")),
    )
    .unwrap();
    let url = format!("file://{}", checked.display());
    let headless = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
    ];
    let out = Command::new(&browser)
        .args(headless)
        .args(["--enable-logging=stderr", "--v=0", "--dump-dom", &url])
        .output()
        .expect("chromium runs");
    let dom = String::from_utf8_lossy(&out.stdout);
    let log = String::from_utf8_lossy(&out.stderr);
    let error = dom
        .split("data-error=\"")
        .nth(1)
        .map(|s| s.split('"').next());
    assert!(error.is_none(), "script error: {error:?}");
    assert!(!log.contains(":CONSOLE("), "console messages: {log}");
    let check = dom
        .split("data-check=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap_or_else(|| panic!("the check did not run: {log}"));
    let verdicts: Vec<&str> = check.split('|').collect();
    assert_eq!(verdicts.len(), figures, "{check}");
    assert!(verdicts.iter().all(|v| *v == "ok"), "{check}");
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("html-report.png");
    let out = Command::new(&browser)
        .args(headless)
        .args(["--window-size=1300,2400"])
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", a.display()))
        .output()
        .expect("chromium runs");
    assert!(out.status.success() && shot.exists(), "no screenshot");
    println!("screenshot: {}", shot.display());
}
