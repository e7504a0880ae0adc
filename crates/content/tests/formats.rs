//! Structural realism: SQLite pages parse as b-tree leaves, text pages are well-formed
//! lines, metadata pages hold ext4-style inodes.

use flashstack_content::{ContentClass, ContentMix, ContentModel, PAGE_SIZE};

fn pages(class: ContentClass, n: u64) -> impl Iterator<Item = Vec<u8>> {
    // Small regions so that the pages cover every schema and format.
    let m = ContentModel::new(21, ContentMix::only(class))
        .with_region_lbas(2)
        .unwrap();
    (0..n).map(move |lba| {
        let mut out = vec![0u8; PAGE_SIZE];
        m.fill(lba, (lba % 7) as u32, &mut out);
        out
    })
}

fn be16(page: &[u8], at: usize) -> usize {
    usize::from(u16::from_be_bytes([page[at], page[at + 1]]))
}

/// A SQLite varint at `at`: (value, length).
fn varint(bytes: &[u8], at: usize) -> (u64, usize) {
    let mut v = 0u64;
    for i in 0..9 {
        let b = bytes[at + i];
        if i == 8 {
            return ((v << 8) | u64::from(b), 9);
        }
        v = (v << 7) | u64::from(b & 0x7F);
        if b & 0x80 == 0 {
            return (v, i + 1);
        }
    }
    unreachable!()
}

/// Body bytes of a serial type (SQLite file format §2.1).
fn serial_len(serial: u64) -> usize {
    match serial {
        0 | 8 | 9 => 0,
        1..=4 => serial as usize,
        5 => 6,
        6 | 7 => 8,
        s if s >= 12 => ((s - 12) / 2) as usize,
        s => panic!("reserved serial type {s}"),
    }
}

/// Parses a record; returns its serial types and the text values, checking that the
/// header and body exactly fill `payload` bytes.
fn record(cell: &[u8], payload: usize) -> (Vec<u64>, Vec<String>) {
    let (header_len, n) = varint(cell, 0);
    let mut at = n;
    let mut serials = Vec::new();
    while at < header_len as usize {
        let (s, n) = varint(cell, at);
        serials.push(s);
        at += n;
    }
    assert_eq!(at, header_len as usize, "header overruns its size");
    let mut texts = Vec::new();
    for &s in &serials {
        let len = serial_len(s);
        if s >= 13 && s % 2 == 1 {
            let text = std::str::from_utf8(&cell[at..at + len]).expect("text is UTF-8");
            texts.push(text.to_string());
        }
        at += len;
    }
    assert_eq!(at, payload, "record size differs from payload size");
    (serials, texts)
}

/// Checks the b-tree leaf header, pointer array and free space; returns the cell ranges.
fn leaf_cells(page: &[u8], kind: u8) -> Vec<(usize, usize)> {
    assert_eq!(page[0], kind);
    assert_eq!(be16(page, 1), 0, "no freeblocks");
    assert_eq!(page[7], 0, "no fragmented bytes");
    let n = be16(page, 3);
    let content = be16(page, 5);
    assert!(
        n > 0 && 8 + 2 * n <= content,
        "{n} cells, content at {content}"
    );
    assert!(
        page[8 + 2 * n..content].iter().all(|&b| b == 0),
        "free space is zeroed"
    );
    let mut end = PAGE_SIZE;
    let mut cells = Vec::new();
    for i in 0..n {
        let start = be16(page, 8 + 2 * i);
        assert!(start < end, "cells are laid out back to front");
        cells.push((start, end));
        end = start;
    }
    assert_eq!(end, content, "the last cell starts the content area");
    cells
}

#[test]
fn sqlite_table_pages_are_valid_leaves() {
    for page in pages(ContentClass::SqliteTable, 300) {
        let mut prev_rowid = None;
        for (start, end) in leaf_cells(&page, 0x0D) {
            let cell = &page[start..end];
            let (payload, a) = varint(cell, 0);
            let (rowid, b) = varint(cell, a);
            assert_eq!(a + b + payload as usize, cell.len(), "cell size");
            let (serials, texts) = record(&cell[a + b..], payload as usize);
            assert_eq!(serials[0], 0, "INTEGER PRIMARY KEY is stored as NULL");
            assert!(!texts.is_empty());
            if let Some(prev) = prev_rowid {
                assert_eq!(rowid, prev + 1, "rowids are consecutive");
            }
            prev_rowid = Some(rowid);
        }
    }
}

#[test]
fn sqlite_index_pages_are_valid_leaves_with_shared_prefixes() {
    let mut shared = 0usize;
    let mut pairs = 0usize;
    for page in pages(ContentClass::SqliteIndex, 300) {
        let mut prev_key: Option<String> = None;
        for (start, end) in leaf_cells(&page, 0x0A) {
            let cell = &page[start..end];
            let (payload, a) = varint(cell, 0);
            assert_eq!(a + payload as usize, cell.len(), "cell size");
            let (serials, mut texts) = record(&cell[a..], payload as usize);
            assert_eq!(&serials[1..], &[5, 3], "timestamp and rowid columns");
            let key = texts.remove(0);
            if let Some(prev) = prev_key {
                shared += prev
                    .bytes()
                    .zip(key.bytes())
                    .take_while(|(x, y)| x == y)
                    .count();
                pairs += 1;
            }
            prev_key = Some(key);
        }
    }
    let mean = shared as f64 / pairs as f64;
    assert!(
        mean >= 8.0,
        "neighbouring keys share {mean:.1} bytes on average"
    );
}

#[test]
fn text_pages_are_utf8_lines() {
    let mut formats = [0usize; 3];
    for page in pages(ContentClass::Text, 300) {
        let text = std::str::from_utf8(&page).expect("text pages are UTF-8");
        assert!(text.ends_with('\n'));
        for line in text.lines() {
            let format = if line.starts_with("{\"ts\":") && line.ends_with("\"}") {
                0
            } else if line.starts_with("    <string name=\"") && line.ends_with("</string>") {
                1
            } else if line.as_bytes()[2] == b'-' && line.as_bytes()[5] == b' ' {
                2
            } else {
                panic!("malformed line {line:?}");
            };
            formats[format] += 1;
        }
    }
    assert!(
        formats.iter().all(|&n| n > 100),
        "every format appears: {formats:?}"
    );
}

#[test]
fn metadata_pages_hold_inodes_or_bitmaps() {
    let (mut inode_pages, mut bitmap_pages) = (0, 0);
    for page in pages(ContentClass::Metadata, 300) {
        let units: Vec<&[u8]> = page.chunks(128).collect();
        let is_inode = |u: &[u8]| u[40..42] == [0x0A, 0xF3] && [0x81B0, 0x41F9].contains(&le16(u));
        let empty = |u: &[u8]| u.iter().all(|&b| b == 0);
        if units.iter().any(|u| is_inode(u)) {
            assert!(units.iter().all(|u| is_inode(u) || empty(u)), "inode table");
            inode_pages += 1;
        } else {
            // A bitmap stretch: allocated blocks first.
            assert!(units.iter().any(|u| u[0] == 0xFF), "bitmap");
            bitmap_pages += 1;
        }
        let zeros = page.iter().filter(|&&b| b == 0).count();
        assert!(zeros > PAGE_SIZE / 3, "metadata is mostly zeros: {zeros}");
    }
    assert!(
        inode_pages > 150 && bitmap_pages > 50,
        "{inode_pages} / {bitmap_pages}"
    );
}

fn le16(unit: &[u8]) -> u16 {
    u16::from_le_bytes([unit[0], unit[1]])
}
