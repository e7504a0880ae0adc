//! SQLite b-tree leaf pages in the on-disk format of <https://sqlite.org/fileformat2.html>.
//!
//! A page's structure (cell count, cell sizes, cell pointer array, rowids, free space) is a
//! function of (seed, lba) only and never changes; each cell is an update unit whose record
//! is regenerated, at the same size, when it is touched. This is SQLite's in-place update
//! of a row whose size did not change; the header and pointer array stay byte-identical.

use super::{email, person, phone, phrases_until, url, PageCtx};
use crate::vocab::{FIRST_LOWER, HOSTS, LAST_LOWER, MAIL_DOMAINS, PACKAGES, URL_PATHS, WORDS};
use crate::write::{varint_len, Draw, Tok, Writer, TOK_WIDTH};
use crate::PAGE_SIZE;

const LEAF_TABLE: u8 = 0x0D;
const LEAF_INDEX: u8 = 0x0A;
/// A leaf page header: type, first freeblock, cell count, content start, fragmented bytes.
const LEAF_HEADER: usize = 8;
const MAX_CELLS: usize = 256;

/// Mean fraction of a table cell's bytes that differ after it is regenerated: the payload
/// size, rowid and most serial types stay, the text shifts. Measured; the
/// `calibration_constants_match_measurement` test fails if it drifts.
const TABLE_CELL_DIFF: f64 = 0.84;

/// Cell sizes of a page, in pointer-array order.
struct Cells {
    n: usize,
    size: [u16; MAX_CELLS],
    /// Sum of the cell sizes.
    bytes: usize,
}

impl Cells {
    fn new() -> Self {
        Cells {
            n: 0,
            size: [0; MAX_CELLS],
            bytes: 0,
        }
    }

    /// Appends a cell if the page, header and pointers included, stays within `target`
    /// bytes and has a free pointer slot.
    fn push_within(&mut self, size: usize, target: usize) -> bool {
        let used = LEAF_HEADER + 2 * self.n + self.bytes;
        if self.n == MAX_CELLS || used + size + 2 > target {
            return false;
        }
        self.size[self.n] = size as u16;
        self.n += 1;
        self.bytes += size;
        true
    }
}

/// How full a page is: SQLite leaves range from about half full (after a split) to full
/// (sequential inserts); pages here are 70–98% full and the rest is zeroed free space.
fn fill_target(layout: &mut Draw) -> usize {
    PAGE_SIZE * layout.range(70, 98) / 100
}

/// Writes the leaf header and the pointer array; returns the start of the cell content
/// area. Cell `i` ends where cell `i − 1` starts, with cell 0 at the end of the page, as
/// sequential inserts lay them out.
fn write_btree_header(page: &mut [u8], kind: u8, cells: &Cells) -> usize {
    let mut off = PAGE_SIZE;
    for i in 0..cells.n {
        off -= usize::from(cells.size[i]);
        page[LEAF_HEADER + 2 * i..LEAF_HEADER + 2 * i + 2]
            .copy_from_slice(&(off as u16).to_be_bytes());
    }
    page[0] = kind;
    page[3..5].copy_from_slice(&(cells.n as u16).to_be_bytes());
    page[5..7].copy_from_slice(&(off as u16).to_be_bytes());
    off
}

// ---------------------------------------------------------------------------------------
// Table leaves
// ---------------------------------------------------------------------------------------

/// The table a region (file) holds: modelled on Android's mmssms.db `sms`, Chrome's
/// History `urls` and contacts2.db `raw_contacts`/`data`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Schema {
    Messages,
    History,
    Contacts,
}

impl Schema {
    fn of(region_key: u64) -> Self {
        match region_key % 3 {
            0 => Schema::Messages,
            1 => Schema::History,
            _ => Schema::Contacts,
        }
    }

    /// Cell sizes in bytes. The minimum leaves room for every fixed column at its longest.
    fn cell_sizes(self) -> (usize, usize) {
        match self {
            Schema::Messages => (72, 260),
            Schema::History => (120, 240),
            Schema::Contacts => (110, 200),
        }
    }
}

/// The payload length of a cell of `size` bytes holding `rowid`, or `None` if no payload
/// length is consistent with its own varint (a size straddling the 1/2-byte boundary).
fn table_payload(size: usize, rowid: u64) -> Option<usize> {
    let rest = size.checked_sub(varint_len(rowid))?;
    [1, 2]
        .into_iter()
        .filter_map(|n| rest.checked_sub(n))
        .find(|&p| varint_len(p as u64) + p == rest)
}

fn table_layout(ctx: &PageCtx, schema: Schema, rowid0: u64) -> Cells {
    let mut layout = ctx.layout_draw();
    let target = fill_target(&mut layout);
    let (lo, hi) = schema.cell_sizes();
    let mut cells = Cells::new();
    loop {
        let mut size = layout.range(lo, hi);
        if table_payload(size, rowid0 + cells.n as u64).is_none() {
            size += 1;
        }
        if !cells.push_within(size, target) {
            return cells;
        }
    }
}

/// The first rowid of a page: rows are numbered through the file (bounded, so that huge
/// regions cannot overflow).
fn rowid0(ctx: &PageCtx) -> u64 {
    1 + ctx.region_key % 50_000 + ctx.page_in_region % 1_000_000 * 40
}

pub(crate) fn fill_table(ctx: &PageCtx, page: &mut [u8]) {
    page.fill(0); // free space and unused header fields
    let schema = Schema::of(ctx.region_key);
    let rowid0 = rowid0(ctx);
    let cells = table_layout(ctx, schema, rowid0);
    let mut off = write_btree_header(page, LEAF_TABLE, &cells);
    let schedule = ctx.schedule(cells.bytes as f64 * TABLE_CELL_DIFF);
    let time0 = ctx.page_epoch_ms();
    // Lowest offset first, so slot overruns past a cell land on cells written later.
    for i in (0..cells.n).rev() {
        let size = usize::from(cells.size[i]);
        let mut d = ctx.unit_draw(i, schedule.last_touch(i));
        let row = Row {
            rowid: rowid0 + i as u64,
            time_ms: time0 + i as u64 * 60_000,
        };
        write_table_cell(&mut Writer::new(page, off), size, schema, &row, &mut d);
        off += size;
    }
}

struct Row {
    rowid: u64,
    time_ms: u64,
}

/// A record under construction: serial types and the bytes of every column but the last,
/// which is text sized to fill the cell exactly.
struct Record {
    header: [u8; 16],
    header_len: usize,
    /// Room for the longest fixed columns (about 70 bytes) plus a slot of overrun.
    body: [u8; 128],
    body_len: usize,
    /// The header position and value of a 0/1 flag column, stored as serial type 8 or 9
    /// (no body bytes) unless one byte is needed to make the sizes fit.
    flag: Option<(usize, bool)>,
}

impl Record {
    fn new() -> Self {
        Record {
            header: [0; 16],
            header_len: 0,
            body: [0; 128],
            body_len: 0,
            flag: None,
        }
    }

    fn serial(&mut self, serial: u64) {
        let mut w = Writer::new(&mut self.header, self.header_len);
        w.varint(serial);
        self.header_len = w.pos;
    }

    fn int(&mut self, v: u64) {
        let (serial, n) = match v {
            0 => (8, 0),
            1 => (9, 0),
            2..=0x7F => (1, 1),
            0x80..=0x7FFF => (2, 2),
            0x8000..=0x7F_FFFF => (3, 3),
            0x80_0000..=0x7FFF_FFFF => (4, 4),
            0x8000_0000..=0x7FFF_FFFF_FFFF => (5, 6),
            _ => (6, 8),
        };
        self.serial(serial);
        let mut w = Writer::new(&mut self.body, self.body_len);
        w.be(v, n);
        self.body_len = w.pos;
    }

    /// A 0/1 column; must be the last column before the filler.
    fn flag(&mut self, v: bool) {
        self.flag = Some((self.header_len, v));
        self.serial(8 + u64::from(v));
    }

    fn text(&mut self, f: impl FnOnce(&mut Writer)) {
        let start = self.body_len;
        let mut w = Writer::new(&mut self.body, start);
        f(&mut w);
        self.body_len = w.pos.min(self.body.len() - TOK_WIDTH);
        self.serial(2 * (self.body_len - start) as u64 + 13);
    }

    /// Stores the flag in one body byte instead of in its serial type.
    fn widen_flag(&mut self) -> bool {
        let Some((at, v)) = self.flag.take() else {
            return false;
        };
        self.header[at] = 1;
        self.body[self.body_len] = u8::from(v);
        self.body_len += 1;
        true
    }

    /// The filler text length for a payload of `payload` bytes, widening the flag if the
    /// filler's serial-type varint would otherwise straddle its 1/2-byte boundary.
    fn filler_len(&mut self, payload: usize) -> usize {
        loop {
            // Header-size varint (1 byte: headers are short) + serial types + body.
            let rest = payload.saturating_sub(1 + self.header_len + self.body_len);
            if rest >= 60 {
                return rest - 2;
            }
            if rest <= 58 {
                return rest.saturating_sub(1);
            }
            if !self.widen_flag() {
                return rest - 2;
            }
        }
    }
}

fn write_table_cell(w: &mut Writer, size: usize, schema: Schema, row: &Row, d: &mut Draw) {
    // The layout only makes sizes that have a payload length; `size` is a harmless
    // fallback that the format tests would catch.
    let payload = table_payload(size, row.rowid).unwrap_or(size);
    let mut rec = Record::new();
    match schema {
        Schema::Messages => message_columns(&mut rec, row, d),
        Schema::History => history_columns(&mut rec, row, d),
        Schema::Contacts => contact_columns(&mut rec, row, d),
    }
    let filler = rec.filler_len(payload);
    let filler_serial = 2 * filler as u64 + 13;
    w.varint(payload as u64);
    w.varint(row.rowid);
    w.byte((1 + rec.header_len + varint_len(filler_serial)) as u8);
    w.slot(&rec.header, rec.header_len);
    w.varint(filler_serial);
    w.slot(&rec.body, rec.body_len);
    let end = w.pos + filler;
    phrases_until(w, d, end, 50);
}

/// `sms(_id, thread_id, address, date, type, read, body)`; `_id` is the rowid.
fn message_columns(rec: &mut Record, row: &Row, d: &mut Draw) {
    rec.serial(0); // _id: INTEGER PRIMARY KEY aliases the rowid and is stored as NULL
    rec.int(d.range(2, 40) as u64);
    if d.percent(70) {
        rec.text(|w| phone(w, d));
    } else {
        rec.text(|w| email(w, d));
    }
    rec.int(row.time_ms + d.below(60_000) as u64);
    rec.int(d.range(1, 2) as u64);
    rec.flag(d.percent(90));
}

/// `urls(id, url, visit_count, last_visit_time, typed, title)`; times in Chrome's
/// microseconds since 1601.
fn history_columns(rec: &mut Record, row: &Row, d: &mut Draw) {
    const UNIX_TO_1601_MS: u64 = 11_644_473_600_000;
    rec.serial(0);
    rec.text(|w| url(w, d));
    rec.int(d.range(2, 30) as u64);
    rec.int((row.time_ms + UNIX_TO_1601_MS) * 1000 + d.below(60_000) as u64 * 1000);
    rec.flag(d.percent(20));
}

/// `contacts(_id, display_name, email, phone, times_contacted, last_time_contacted,
/// starred, notes)`.
fn contact_columns(rec: &mut Record, row: &Row, d: &mut Draw) {
    rec.serial(0);
    rec.text(|w| person(w, d));
    rec.text(|w| email(w, d));
    rec.text(|w| phone(w, d));
    rec.int(d.below(50) as u64);
    rec.int(row.time_ms + d.below(60_000) as u64);
    rec.flag(d.percent(10));
}

// ---------------------------------------------------------------------------------------
// Index leaves
// ---------------------------------------------------------------------------------------

/// What an index region's keys look like. Keys of a page share a scheme, and runs of
/// neighbouring keys share their middle parts, as sorted keys do.
#[derive(Clone, Copy, Debug)]
enum KeyKind {
    /// `https://host/path/NNNNNN`
    Url,
    /// `content://package/word/NNNNNN`
    Content,
    /// `first.lastNN@domain`
    Email,
    /// `+86138GGGGNNNN`: runs share the group digits `G`.
    Phone,
}

impl KeyKind {
    fn of(region_key: u64) -> Self {
        match (region_key >> 8) % 4 {
            0 => KeyKind::Url,
            1 => KeyKind::Content,
            2 => KeyKind::Email,
            _ => KeyKind::Phone,
        }
    }
}

/// The constant part of a run of keys, which are written as
/// `scheme a [sep_ab] b [sep_b] run-digits fresh-digits tail`; each key draws only its
/// fresh digits.
#[derive(Clone, Copy)]
struct KeyShape {
    scheme: &'static Tok,
    a: &'static Tok,
    /// Separators after `a` and after `b`; 0 for none.
    sep_ab: u8,
    b: &'static Tok,
    sep_b: u8,
    /// Digits shared by the run (a number prefix), and how many.
    run_number: u64,
    run_digits: usize,
    digits: usize,
    tail: &'static Tok,
}

static EMPTY_TOK: Tok = crate::write::tok("");
static SCHEMES: [Tok; 3] = crate::write::toks(["https://", "content://", "+86138"]);

impl KeyShape {
    const EMPTY: KeyShape = KeyShape {
        scheme: &EMPTY_TOK,
        a: &EMPTY_TOK,
        sep_ab: 0,
        b: &EMPTY_TOK,
        sep_b: 0,
        run_number: 0,
        run_digits: 0,
        digits: 0,
        tail: &EMPTY_TOK,
    };

    fn new(kind: KeyKind, d: &mut Draw) -> Self {
        let base = KeyShape {
            digits: d.range(6, 8),
            ..KeyShape::EMPTY
        };
        match kind {
            KeyKind::Url => KeyShape {
                scheme: &SCHEMES[0],
                a: d.pick(&HOSTS),
                sep_ab: b'/',
                b: d.pick(&URL_PATHS),
                sep_b: b'/',
                ..base
            },
            KeyKind::Content => KeyShape {
                scheme: &SCHEMES[1],
                a: d.pick(&PACKAGES),
                sep_ab: b'/',
                b: d.pick(&WORDS),
                sep_b: b'/',
                ..base
            },
            KeyKind::Email => KeyShape {
                a: d.pick(&FIRST_LOWER),
                sep_ab: b'.',
                b: d.pick(&LAST_LOWER),
                digits: d.range(2, 4),
                tail: d.pick(&MAIL_DOMAINS),
                ..base
            },
            KeyKind::Phone => KeyShape {
                scheme: &SCHEMES[2],
                run_number: d.u64(),
                run_digits: 4,
                digits: 4,
                ..base
            },
        }
    }

    fn len(&self) -> usize {
        self.scheme.len()
            + self.a.len()
            + usize::from(self.sep_ab != 0)
            + self.b.len()
            + usize::from(self.sep_b != 0)
            + self.run_digits
            + self.digits
            + self.tail.len()
    }

    fn write(&self, w: &mut Writer, d: &mut Draw) {
        w.tok(self.scheme);
        w.tok(self.a);
        if self.sep_ab != 0 {
            w.byte(self.sep_ab);
        }
        w.tok(self.b);
        if self.sep_b != 0 {
            w.byte(self.sep_b);
        }
        w.random_digits(self.run_number, self.run_digits);
        w.random_digits(d.u64(), self.digits);
        w.tok(self.tail);
    }
}

/// An index record: header size, key serial type, 6-byte timestamp, 3-byte rowid.
fn index_payload(key_len: usize) -> usize {
    let header = 1 + varint_len(2 * key_len as u64 + 13) + 2;
    header + key_len + 6 + 3
}

/// Bytes expected to differ when an index cell is regenerated: the fresh digits (9 in 10
/// differ), the low bytes of the timestamp and the rowid. Measured; the
/// `calibration_constants_match_measurement` test fails if it drifts.
fn index_cell_diff(shape: &KeyShape) -> f64 {
    0.85 * shape.digits as f64 + 5.5
}

struct IndexLayout {
    cells: Cells,
    /// Keys come in runs of this many cells sharing one [`KeyShape`].
    run: usize,
    diff_bytes: f64,
}

/// The key shapes of a page's runs, each a function of the page and the run only,
/// drawn when the walk over the cells (in either direction) enters a new run.
struct RunShapes<'a> {
    ctx: &'a PageCtx,
    kind: KeyKind,
    run_len: usize,
    /// The cells `first..end` of the current run, and its shape.
    first: usize,
    end: usize,
    shape: KeyShape,
}

impl<'a> RunShapes<'a> {
    fn new(ctx: &'a PageCtx, kind: KeyKind, run_len: usize) -> Self {
        let mut shapes = RunShapes {
            ctx,
            kind,
            run_len,
            first: 0,
            end: 0,
            shape: KeyShape::EMPTY,
        };
        shapes.enter(0);
        shapes
    }

    fn enter(&mut self, run: usize) {
        self.first = run * self.run_len;
        self.end = self.first + self.run_len;
        let mut d = self.ctx.unit_draw(SHAPE_UNIT_BASE + run, 0);
        self.shape = KeyShape::new(self.kind, &mut d);
    }

    fn of_cell(&mut self, cell: usize) -> &KeyShape {
        // Divide only on entering a run: a division per cell was a visible cost.
        if !(self.first..self.end).contains(&cell) {
            self.enter(cell / self.run_len);
        }
        &self.shape
    }
}

/// Unit numbers at and above this name key-shape streams, not cells.
const SHAPE_UNIT_BASE: usize = 1 << 20;

fn index_layout(ctx: &PageCtx, kind: KeyKind) -> IndexLayout {
    let mut layout = ctx.layout_draw();
    let target = fill_target(&mut layout);
    let mut out = IndexLayout {
        cells: Cells::new(),
        run: layout.range(2, 6),
        diff_bytes: 0.0,
    };
    let mut shapes = RunShapes::new(ctx, kind, out.run);
    loop {
        let shape = shapes.of_cell(out.cells.n);
        let payload = index_payload(shape.len());
        let size = varint_len(payload as u64) + payload;
        let diff = index_cell_diff(shape);
        if !out.cells.push_within(size, target) {
            return out;
        }
        out.diff_bytes += diff;
    }
}

pub(crate) fn fill_index(ctx: &PageCtx, page: &mut [u8]) {
    page.fill(0);
    let kind = KeyKind::of(ctx.region_key);
    let layout = index_layout(ctx, kind);
    let mut off = write_btree_header(page, LEAF_INDEX, &layout.cells);
    let schedule = ctx.schedule(layout.diff_bytes);
    let time0 = ctx.page_epoch_ms();
    let mut shapes = RunShapes::new(ctx, kind, layout.run);
    for i in (0..layout.cells.n).rev() {
        let shape = shapes.of_cell(i);
        let mut d = ctx.unit_draw(i, schedule.last_touch(i));
        write_index_cell(&mut Writer::new(page, off), shape, time0, &mut d);
        off += usize::from(layout.cells.size[i]);
    }
}

fn write_index_cell(w: &mut Writer, shape: &KeyShape, time0: u64, d: &mut Draw) {
    let key_serial = 2 * shape.len() as u64 + 13;
    w.varint(index_payload(shape.len()) as u64);
    w.byte((1 + varint_len(key_serial) + 2) as u8);
    w.varint(key_serial);
    w.bytes(&[5, 3]); // a 6-byte timestamp and a 3-byte rowid
    shape.write(w, d);
    w.be(time0 + d.below(1 << 16) as u64 * 256, 6);
    w.be(0x1_0000 + (d.u64() & 0x7E_FFFF), 3);
}

#[cfg(test)]
pub(super) fn group_of_table(ctx: &PageCtx) -> usize {
    Schema::of(ctx.region_key) as usize
}

#[cfg(test)]
pub(super) fn group_of_index(ctx: &PageCtx) -> usize {
    KeyKind::of(ctx.region_key) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_lengths_are_self_consistent() {
        for size in 10..400 {
            for rowid in [1u64, 200, 20_000, 3_000_000] {
                if let Some(p) = table_payload(size, rowid) {
                    assert_eq!(varint_len(p as u64) + varint_len(rowid) + p, size);
                } else {
                    assert!(table_payload(size + 1, rowid).is_some());
                }
            }
        }
    }

    #[test]
    fn filler_length_fits_payload_exactly() {
        for payload in 40..300 {
            let mut rec = Record::new();
            rec.serial(0);
            rec.int(7);
            rec.flag(true);
            let filler = rec.filler_len(payload);
            let serial = 2 * filler as u64 + 13;
            let total = 1 + rec.header_len + varint_len(serial) + rec.body_len + filler;
            assert_eq!(total, payload, "payload {payload}");
        }
    }
}
