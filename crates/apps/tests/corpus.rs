//! The corpus of real SQLite pages: deterministic, parsed as b-tree pages, with version
//! chains that change where the database changed.

use flashstack_apps::corpus::{persona_chains, sqlite_corpus, sqlite_page_class, CorpusOptions};
use flashstack_content::{ContentClass, PAGE_SIZE};

fn small() -> CorpusOptions {
    CorpusOptions {
        personas: vec!["messenger".into(), "google-earth".into()],
        seed: 3,
        pages_per_class_max: 300,
        versions_per_chain_max: 32,
        ..CorpusOptions::default()
    }
}

/// The classes asked for are the only ones kept.
#[test]
fn a_corpus_keeps_only_the_classes_asked_for() {
    let tables = sqlite_corpus(&CorpusOptions {
        classes: vec![ContentClass::SqliteTable, ContentClass::SqliteIndex],
        ..small()
    })
    .unwrap();
    let all = sqlite_corpus(&small()).unwrap();
    assert!(all.pages(ContentClass::SqliteBlob) > 0);
    assert_eq!(tables.pages(ContentClass::SqliteBlob), 0);
    assert_eq!(
        tables.pages(ContentClass::SqliteTable),
        all.pages(ContentClass::SqliteTable)
    );
}

#[test]
fn same_seed_same_bytes_and_the_bound_holds() {
    let a = sqlite_corpus(&small()).unwrap();
    let b = sqlite_corpus(&small()).unwrap();
    assert_eq!(a.to_bytes(), b.to_bytes());
    let other = sqlite_corpus(&CorpusOptions { seed: 4, ..small() }).unwrap();
    assert_ne!(a.digest(), other.digest());
    for class in [
        ContentClass::SqliteTable,
        ContentClass::SqliteIndex,
        ContentClass::SqliteBlob,
    ] {
        let pages = a.pages(class);
        println!("{class}: {} chains, {pages} pages", a.chains(class));
        assert!(pages > 0 && pages <= 300, "{class}: {pages} pages");
    }
}

/// Every b-tree page of the corpus parses: its type byte matches its class and its cell
/// count fits the page.
#[test]
fn pages_parse_as_sqlite_btree_pages() {
    let corpus = sqlite_corpus(&small()).unwrap();
    let mut leaves = 0;
    for class in corpus.classes().collect::<Vec<_>>() {
        for chain in corpus.chain_list(class) {
            for page in &chain.pages {
                assert_eq!(page.len(), PAGE_SIZE);
                // Page 1 starts with the 100-byte database header.
                let page = &page[if page.starts_with(b"SQLite format 3\0") {
                    100
                } else {
                    0
                }..];
                let kind = page[0];
                let cells = u16::from_be_bytes([page[3], page[4]]) as usize;
                match class {
                    ContentClass::SqliteTable => assert_eq!(kind, 0x0D),
                    ContentClass::SqliteIndex => assert!([0x0A, 0x02, 0x05].contains(&kind)),
                    ContentClass::SqliteBlob => {}
                    other => panic!("class {other} in a SQLite corpus"),
                }
                if [0x0D, 0x0A].contains(&kind) {
                    leaves += 1;
                    // A cell takes at least 2 pointer bytes and 2 content bytes (an
                    // empty table's root has none).
                    assert!(8 + 4 * cells <= page.len(), "{cells} cells");
                    let content = u16::from_be_bytes([page[5], page[6]]) as usize;
                    assert!(8 + 2 * cells <= content && content <= PAGE_SIZE);
                }
            }
        }
    }
    assert!(leaves > 100, "{leaves} leaves");
}

#[test]
fn chains_change_where_the_database_changed() {
    let chains = persona_chains("messenger", 3).unwrap();
    let long: Vec<_> = chains.iter().filter(|c| c.pages.len() >= 3).collect();
    assert!(!long.is_empty(), "no page was rewritten");
    let (mut pairs, mut edits) = (0, 0);
    for chain in &long {
        for pair in chain.pages.windows(2) {
            let differ = pair[0].iter().zip(&pair[1]).filter(|(a, b)| a != b).count();
            assert!(
                differ > 0,
                "a chain holds a version only where the page changed"
            );
            pairs += 1;
            // An edit (rows added or updated in place) rather than a rewrite (a
            // rebalance moves every cell).
            edits += usize::from(differ < PAGE_SIZE / 2);
        }
    }
    println!("{edits} of {pairs} successive versions differ in under half their bytes");
    assert!(edits * 2 > pairs, "{edits} of {pairs}");
}

#[test]
fn classifier_rejects_what_is_not_a_btree_page() {
    let mut page = vec![0u8; PAGE_SIZE];
    assert_eq!(sqlite_page_class(&page, 2, 10), None);
    page[0] = 0x0D;
    page[3..5].copy_from_slice(&1u16.to_be_bytes());
    page[5..7].copy_from_slice(&4000u16.to_be_bytes());
    page[8..10].copy_from_slice(&4000u16.to_be_bytes());
    page[4000] = 20; // payload 20 bytes
    assert_eq!(
        sqlite_page_class(&page, 2, 10),
        Some(ContentClass::SqliteTable)
    );
    page[8..10].copy_from_slice(&10u16.to_be_bytes()); // a pointer into the header
    assert_eq!(sqlite_page_class(&page, 2, 10), None);
    // Text at the start: not a page number, not an overflow page.
    let text = vec![b'a'; PAGE_SIZE];
    assert_eq!(sqlite_page_class(&text, 5, 10), None);
    let mut overflow = vec![0x5Au8; PAGE_SIZE];
    overflow[..4].copy_from_slice(&7u32.to_be_bytes());
    assert_eq!(
        sqlite_page_class(&overflow, 5, 10),
        Some(ContentClass::SqliteBlob)
    );
}

/// The content model with a corpus stays a pure function: two corpora built apart give
/// models that agree on every (lba, version), in any order of calls, and classes the
/// corpus lacks keep the generator's bytes.
#[test]
fn the_model_with_a_corpus_is_a_pure_function() {
    use flashstack_content::{ContentMix, ContentModel};
    use std::sync::Arc;
    let mix: ContentMix = "sqlite:3,sqlite-index:1,sqlite-blob:1,text:1"
        .parse()
        .unwrap();
    let a =
        ContentModel::new(9, mix.clone()).with_corpus(Arc::new(sqlite_corpus(&small()).unwrap()));
    let b =
        ContentModel::new(9, mix.clone()).with_corpus(Arc::new(sqlite_corpus(&small()).unwrap()));
    let plain = ContentModel::new(9, mix);
    let (mut x, mut y) = (vec![0u8; PAGE_SIZE], vec![0u8; PAGE_SIZE]);
    let mut from_corpus = 0;
    for lba in (0..4000u64).step_by(7) {
        for version in [5u32, 0, 1, 1000, 2] {
            a.fill(lba, version, &mut x);
            y.fill(0xAA);
            b.fill(lba, version, &mut y);
            assert_eq!(x, y, "lba {lba} version {version}");
            let class = a.class_of(lba);
            if class == ContentClass::Text {
                plain.fill(lba, version, &mut y);
                assert_eq!(x, y, "a class the corpus lacks keeps the generator's bytes");
            } else {
                from_corpus += 1;
                let page = &x[if x.starts_with(b"SQLite format 3\0") {
                    100
                } else {
                    0
                }..];
                assert!(
                    class == ContentClass::SqliteBlob
                        || [0x0D, 0x0A, 0x02, 0x05].contains(&page[0]),
                    "{class} page of type {:#x}",
                    page[0]
                );
            }
        }
    }
    assert!(from_corpus > 1000);
    // refill_class (the replay's fast path for rewrites) gives the same bytes.
    for lba in 0..200u64 {
        let class = a.class_of(lba);
        a.fill_class(class, lba, 3, &mut x);
        a.refill_class(class, lba, 3, a.change_ratio(), 4, &mut x);
        a.fill_class(class, lba, 4, &mut y);
        assert_eq!(x, y, "refill of lba {lba}");
    }
}
