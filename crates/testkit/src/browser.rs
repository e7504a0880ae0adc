//! Opening an HTML report in headless Chromium (Debian's `chromium`, installed by
//! `scripts/test`): every plot must lay out with marks in it and the page must log no
//! script error or console message. A screenshot is kept for a person to look at.

use std::path::{Path, PathBuf};
use std::process::Command;

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

const HEADLESS: [&str; 4] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--hide-scrollbars",
];

fn chromium() -> Option<PathBuf> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

/// Opens the report at `report` in Chromium and asserts that each of its `figures` plots
/// rendered and nothing was logged; saves a screenshot as `screenshot` (a path) and
/// returns it. Without Chromium: [`crate::skip`] and `None`.
#[track_caller]
pub fn check_plots_render(report: &Path, figures: usize, screenshot: &Path) -> Option<PathBuf> {
    let Some(browser) = chromium() else {
        crate::skip("open the report in Chromium", "chromium is not installed");
        return None;
    };
    let html = std::fs::read_to_string(report).expect("the report reads");
    let checked = report.with_extension("checked.html");
    std::fs::write(
        &checked,
        html.replace("</body>", &format!("{CHECK}</body>")),
    )
    .expect("the checked copy writes");
    let url = format!("file://{}", checked.display());
    let out = Command::new(&browser)
        .args(HEADLESS)
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
    let out = Command::new(&browser)
        .args(HEADLESS)
        .args(["--window-size=1300,2400"])
        .arg(format!("--screenshot={}", screenshot.display()))
        .arg(format!("file://{}", report.display()))
        .output()
        .expect("chromium runs");
    assert!(out.status.success() && screenshot.exists(), "no screenshot");
    println!("screenshot: {}", screenshot.display());
    Some(screenshot.to_path_buf())
}
