//! Line-oriented text files: JSON-lines event logs, shared-preferences XML and logcat
//! output. A file (region) has one format; a page is a sequence of lines whose lengths are
//! fixed by (seed, lba), and each line is an update unit rewritten at the same length
//! (a preference value or a log record replaced in place).

use super::{phrases_until, PageCtx};
use crate::vocab::{EVENTS, JSON_KEYS, JSON_LEVELS, LOG_LEVELS, LOG_TAGS, PACKAGES, PREF_KEYS};
use crate::write::{Draw, Writer, TOK_WIDTH};
use crate::PAGE_SIZE;

const MAX_LINES: usize = 128;
/// The unit number of the stream for per-page values (line units are below it).
const PAGE_VALS_UNIT: usize = 1 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    JsonLines,
    PrefsXml,
    Logcat,
}

impl Format {
    fn of(region_key: u64) -> Self {
        match region_key % 3 {
            0 => Format::JsonLines,
            1 => Format::PrefsXml,
            _ => Format::Logcat,
        }
    }

    /// Line lengths in bytes; the minimum fits the fixed parts of a line.
    fn line_lengths(self) -> (usize, usize) {
        match self {
            Format::JsonLines => (96, 220),
            Format::PrefsXml => (56, 120),
            Format::Logcat => (72, 180),
        }
    }

    /// Mean fraction of a line's bytes that differ after it is rewritten (same format,
    /// similar prefix, new values). Measured; the
    /// `calibration_constants_match_measurement` test fails if they drift.
    fn line_diff(self) -> f64 {
        match self {
            Format::JsonLines => 0.72,
            Format::PrefsXml => 0.64,
            Format::Logcat => 0.72,
        }
    }
}

/// Start offsets of the lines of a page; line `i` ends where line `i + 1` starts and the
/// last line ends at the page end.
struct Lines {
    n: usize,
    start: [u16; MAX_LINES + 1],
}

fn layout(ctx: &PageCtx, format: Format) -> Lines {
    let mut d = ctx.layout_draw();
    let (lo, hi) = format.line_lengths();
    let mut lines = Lines {
        n: 0,
        start: [0; MAX_LINES + 1],
    };
    let mut pos = 0;
    while pos < PAGE_SIZE && lines.n < MAX_LINES {
        lines.start[lines.n] = pos as u16;
        lines.n += 1;
        pos += d.range(lo, hi);
        // No line shorter than the minimum: a short remainder joins the last line.
        if PAGE_SIZE.saturating_sub(pos) < lo {
            break;
        }
    }
    lines.start[lines.n] = PAGE_SIZE as u16;
    lines
}

/// Per-page values shared by its lines (a log's process ids, a clock to count from).
struct PageVals {
    time_ms: u64,
    pids: [u16; 4],
}

/// Writes every byte of the page (lines tile it), so the page needs no clearing.
pub(crate) fn fill(ctx: &PageCtx, page: &mut [u8]) {
    let format = Format::of(ctx.region_key);
    let lines = layout(ctx, format);
    let schedule = ctx.schedule(PAGE_SIZE as f64 * format.line_diff());
    let vals = page_vals(ctx);
    for i in 0..lines.n {
        write_line(ctx, format, &lines, &vals, i, schedule.last_touch(i), page);
    }
}

/// Turns `page`, holding the bytes [`fill`] gives for `prev` (the same page at another
/// version or change ratio), into the bytes it gives for `ctx`, rewriting only the lines
/// whose last touch differs. A line's bytes depend on its index and its last touch alone
/// (layout and per-page values do not depend on the version), so the result is the same
/// as a full fill.
pub(crate) fn refill(prev: &PageCtx, ctx: &PageCtx, page: &mut [u8]) {
    debug_assert_eq!((prev.key, prev.region_key), (ctx.key, ctx.region_key));
    let format = Format::of(ctx.region_key);
    let lines = layout(ctx, format);
    let diff_bytes = PAGE_SIZE as f64 * format.line_diff();
    let (was, now) = (prev.schedule(diff_bytes), ctx.schedule(diff_bytes));
    let vals = page_vals(ctx);
    // The next version under the same ratio: a line differs if this version touches it.
    let next = prev.version.checked_add(1) == Some(ctx.version)
        && prev.change_ratio.to_bits() == ctx.change_ratio.to_bits();
    for i in 0..lines.n {
        let touched = if next {
            if !now.touches(i) {
                continue;
            }
            ctx.version
        } else {
            let touched = now.last_touch(i);
            if touched == was.last_touch(i) {
                continue;
            }
            touched
        };
        // A line's last token is written as a whole 32-byte slot and may run past the
        // line's end into the next line, which a full fill rewrites afterwards; here the
        // next line may be kept, so its first bytes are put back.
        let end = usize::from(lines.start[i + 1]);
        let kept = TOK_WIDTH.min(PAGE_SIZE - end);
        let mut next = [0u8; TOK_WIDTH];
        next[..kept].copy_from_slice(&page[end..end + kept]);
        write_line(ctx, format, &lines, &vals, i, touched, page);
        page[end..end + kept].copy_from_slice(&next[..kept]);
    }
}

fn page_vals(ctx: &PageCtx) -> PageVals {
    let mut d = ctx.unit_draw(PAGE_VALS_UNIT, 0);
    PageVals {
        time_ms: ctx.page_epoch_ms(),
        pids: [0; 4].map(|_| d.range(600, 32_000) as u16),
    }
}

/// Line `i` as of version `touched`, the last at which it was rewritten.
#[inline]
fn write_line(
    ctx: &PageCtx,
    format: Format,
    lines: &Lines,
    vals: &PageVals,
    i: usize,
    touched: u32,
    page: &mut [u8],
) {
    let start = usize::from(lines.start[i]);
    let end = usize::from(lines.start[i + 1]);
    let mut d = ctx.unit_draw(i, touched);
    let mut w = Writer::new(page, start);
    let time_ms = vals.time_ms + i as u64 * 1500;
    match format {
        Format::JsonLines => json_line(&mut w, &mut d, end, time_ms),
        Format::PrefsXml => xml_line(&mut w, &mut d, end),
        Format::Logcat => logcat_line(&mut w, &mut d, end, time_ms, vals),
    }
}

/// Fills the rest of a line with words and closes it with `suffix`, which always ends
/// exactly at `end` (overwriting whatever the words ran past).
fn finish_line(w: &mut Writer, d: &mut Draw, end: usize, suffix: &[u8]) {
    let body_end = end.saturating_sub(suffix.len());
    phrases_until(w, d, body_end, 75);
    w.pos = body_end;
    w.bytes(suffix);
}

/// `{"ts":1718369696789,"level":"info","event":"sync_finished","id":123,"msg":"…"}`
fn json_line(w: &mut Writer, d: &mut Draw, end: usize, time_ms: u64) {
    w.bytes(b"{\"ts\":");
    w.decimal(time_ms + d.below(1000) as u64);
    w.bytes(b",\"level\":");
    w.tok(d.pick(&JSON_LEVELS));
    w.bytes(b",\"event\":");
    w.tok(d.pick(&EVENTS));
    w.byte(b',');
    w.tok(d.pick(&JSON_KEYS));
    w.decimal(d.below(10_000) as u64);
    w.bytes(b",\"msg\":\"");
    finish_line(w, d, end, b"\"}\n");
}

/// `    <string name="last_sync_time">…</string>`
fn xml_line(w: &mut Writer, d: &mut Draw, end: usize) {
    w.bytes(b"    <string name=\"");
    w.tok(d.pick(&PREF_KEYS));
    w.bytes(b"\">");
    finish_line(w, d, end, b"</string>\n");
}

/// `06-14 12:34:56.789  1234  1290 I SyncManager: …` (logcat's threadtime format).
fn logcat_line(w: &mut Writer, d: &mut Draw, end: usize, time_ms: u64, vals: &PageVals) {
    let day = time_ms / 86_400_000;
    let ms_of_day = time_ms % 86_400_000 + d.below(1000) as u64;
    w.digits(1 + day / 31 % 12, 2);
    w.byte(b'-');
    w.digits(1 + day % 28, 2);
    w.byte(b' ');
    w.digits(ms_of_day / 3_600_000 % 24, 2);
    w.byte(b':');
    w.digits(ms_of_day / 60_000 % 60, 2);
    w.byte(b':');
    w.digits(ms_of_day / 1000 % 60, 2);
    w.byte(b'.');
    w.digits(ms_of_day % 1000, 3);
    let pid = u64::from(vals.pids[d.below(4)]);
    w.bytes(b"  ");
    w.digits(pid, 5);
    w.bytes(b"  ");
    // Half the lines come from the main thread (tid = pid), as in real logcat output.
    let tid = if d.percent(50) {
        pid
    } else {
        pid + d.below(64) as u64
    };
    w.digits(tid, 5);
    w.tok(d.pick(&LOG_LEVELS));
    w.tok(d.pick_skewed(&LOG_TAGS));
    w.bytes(b": ");
    if d.percent(30) {
        w.tok(d.pick(&PACKAGES));
        w.byte(b' ');
    }
    finish_line(w, d, end, b"\n");
}

#[cfg(test)]
pub(super) fn group_of(ctx: &PageCtx) -> usize {
    Format::of(ctx.region_key) as usize
}
