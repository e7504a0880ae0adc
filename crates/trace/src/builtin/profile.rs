//! What each app does, as tables: its files (SQLite databases, cache streams, code), the
//! events it issues (SQLite transactions, new cache files, small file rewrites, ext4 journal
//! commits) and the reads it makes. Every number here is explained in
//! `docs/ldc-workloads.md`; sizes count 4 KiB pages.

use super::app::LdcApp;

/// Values (pages) and relative weights.
pub(crate) type Dist = &'static [(u32, u32)];

/// Pages of a MiB.
const MIB: u32 = 256;

/// SQLite files: table b-tree pages dominate, index pages make up about a fifth, and a
/// fifth of the table pages carry BLOB columns (serialized stories, protobuf caches,
/// thumbnails), whose share spreads pages over medium to minimal compressibility.
pub(crate) const DB_MIX: &str = "sqlite:60,sqlite-index:20,sqlite-blob:20";
/// A rollback journal holds copies of database pages (and a header).
pub(crate) const DB_JOURNAL_MIX: &str = "sqlite:80,sqlite-blob:20";
/// Shared preferences XML, JSON and logs: the "others" an app rewrites; half of them carry
/// tokens, digests and inline base64 at a per-file density.
pub(crate) const TEXT_MIX: &str = "text:50,log:50";
/// JPEG/PNG/WebP image caches, photos, map tiles: already compressed, with their formats'
/// headers and, in some JPEGs, flat areas.
pub(crate) const MEDIA_MIX: &str = "image:100";
/// An installed app: ARM64 ELF libraries, oat and dex files (code) plus the APK (a zip
/// archive whose entries are deflated or are PNGs, so it is media-like).
pub(crate) const EXEC_MIX: &str = "code:80,media:20";
/// ext4 inode tables, bitmaps and group descriptors.
pub(crate) const FS_META_MIX: &str = "meta:100";
/// The jbd2 journal: copies of metadata blocks, plus descriptor and commit blocks that are
/// nearly empty (one in four blocks of a small fsync transaction).
pub(crate) const FS_JOURNAL_MIX: &str = "meta:75,zeros:25";
/// Everything else on the partition (§4.1): 91% media and executables (photos, videos,
/// installed apps), the rest other apps' databases, documents and metadata. With the
/// modelled apps' own files, the whole snapshot lands at 85–88% low or minimal
/// compressibility, inside §4.1's 84–91%.
pub(crate) const USER_MIX: &str =
    "image:50,media:12,code:29,sqlite:3,sqlite-blob:1,text:1,log:1,meta:1,zeros:2";

/// Pages a small file rewrite writes (shared preferences, JSON, logs).
pub(crate) const TEXT_PAGES: Dist = &[(1, 50), (2, 25), (4, 15), (8, 10)];
/// Share (‰) of small file rewrites whose fsync commits metadata (write-new-then-rename).
pub(crate) const TEXT_COMMIT_PERMILLE: u32 = 500;
/// Metadata blocks in the jbd2 transaction that an fsync after a SQLite commit forces.
pub(crate) const TXN_COMMIT_BLOCKS: Dist = &[(1, 70), (2, 20), (3, 10)];
/// Metadata blocks in a periodic (5 s) jbd2 commit, which batches many files' changes.
pub(crate) const PERIODIC_COMMIT_BLOCKS: Dist = &[(2, 30), (4, 30), (8, 25), (16, 15)];
/// Share (‰) of periodic commits followed by a checkpoint of metadata blocks in place.
pub(crate) const CHECKPOINT_PERMILLE: u32 = 300;
/// Metadata blocks a checkpoint writes back (each its own 4 KiB request).
pub(crate) const CHECKPOINT_BLOCKS: Dist = &[(1, 50), (2, 30), (4, 20)];
/// Pages of a read of code (readahead at app start or on a page fault).
pub(crate) const EXEC_READ_PAGES: Dist = &[(8, 40), (16, 30), (32, 30)];
/// Pages of a read of database pages that missed the page cache (with readahead).
pub(crate) const DB_READ_PAGES: Dist = &[(1, 75), (2, 10), (4, 15)];
/// Pages of a rollback journal file (PERSIST mode keeps it at its largest size).
pub(crate) const DB_JOURNAL_PAGES: u32 = 32;
/// The largest request the eMMC accepts (Linux `max_sectors_kb` = 512).
pub(crate) const MAX_REQUEST_PAGES: u32 = 128;

/// Where a database's new pages go.
#[derive(Clone, Copy, Debug)]
pub(crate) enum AppendArea {
    /// The end of the database file (new rows), wrapping into its upper half (pages freed
    /// by deleted rows are reused).
    Tail,
    /// A separate area of `pages` pages for BLOB overflow pages (Google Earth's tiles), with
    /// its own mix; these appends carry the workload's elastic volume.
    Blobs { pages: u32, mix: &'static str },
}

/// A SQLite database in rollback-journal (PERSIST) mode, Android's default of the time.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DbSpec {
    pub name: &'static str,
    pub pages: u32,
    /// Existing pages a transaction changes (each written in place, and copied to the
    /// journal first).
    pub modified: Dist,
    /// Share (‰) of transactions that also append new pages.
    pub append_permille: u32,
    pub appended: Dist,
    pub append_area: AppendArea,
    /// Share (‰) of transactions whose fsync also commits ext4 metadata.
    pub commit_permille: u32,
    /// Pages of a read that misses the page cache (with readahead).
    pub read_pages: Dist,
}

/// A stream of new files in one directory (an image cache, the camera roll).
#[derive(Clone, Copy, Debug)]
pub(crate) struct FileStream {
    pub name: &'static str,
    pub pages: u32,
    pub mix: &'static str,
    /// Nominal file sizes; elastic streams are scaled to meet the app's volume.
    pub file_pages: Dist,
    /// Pages per write request as writeback issues them.
    pub chunk_pages: u32,
    pub elastic: bool,
    /// Share (‰) of files followed by a jbd2 commit of their metadata.
    pub commit_permille: u32,
    /// Events that follow each file (a photo's thumbnail and MediaStore rows).
    pub then: &'static [Event],
    pub read_pages: Dist,
}

/// One thing an app does that reaches the block layer as a burst of writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Event {
    /// A SQLite transaction on database `i`.
    Txn(u8),
    /// A new file in stream `i`.
    File(u8),
    /// A small file rewritten (preferences, JSON, logs).
    Text,
    /// A periodic jbd2 commit (and sometimes a checkpoint).
    Commit,
}

/// What a read asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReadKind {
    /// Pages of database `i` (recently written or hot), e.g. a query missing the cache.
    Db(u8),
    /// Recently appended pages of database `i` (a map tile viewed again).
    Appended(u8),
    /// A recently written file of stream `i` (an image shown again).
    File(u8),
    /// The app's code.
    Exec,
}

/// Everything that describes one app.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Profile {
    pub app: LdcApp,
    /// Length of the traced session (the paper: "at least five minutes").
    pub session_s: u64,
    pub exec_pages: u32,
    pub files_pages: u32,
    pub dbs: &'static [DbSpec],
    pub streams: &'static [FileStream],
    pub events: &'static [(Event, u32)],
    /// An event issued exactly `count` times, evenly spread (Camera's 30 photos).
    pub scheduled: Option<(Event, u32)>,
    pub reads: &'static [(ReadKind, u32)],
}

const NO_EVENTS: &[Event] = &[];

/// Small settings/analytics databases every app keeps besides its main one.
const SMALL_DB_MODIFIED: Dist = &[(1, 60), (2, 30), (3, 10)];
const SMALL_DB_APPENDED: Dist = &[(1, 50), (2, 30), (4, 20)];
/// Image caches: thumbnails and avatars (1–4 pages) up to full-width feed photos
/// (100–500 KiB).
const IMAGE_FILE_PAGES: Dist = &[
    (1, 6),
    (2, 8),
    (4, 10),
    (8, 14),
    (16, 20),
    (32, 20),
    (64, 14),
    (128, 8),
];
/// Twitter's timeline shows smaller images (thumbnails, avatars, cropped previews).
const SMALL_IMAGE_FILE_PAGES: Dist = &[
    (1, 10),
    (2, 14),
    (4, 18),
    (8, 20),
    (16, 18),
    (32, 12),
    (64, 6),
    (128, 2),
];
/// Full-size web images: Chrome caches what pages show, large photos included.
const LARGE_IMAGE_FILE_PAGES: Dist = &[
    (2, 5),
    (4, 10),
    (8, 15),
    (16, 20),
    (32, 20),
    (64, 18),
    (128, 12),
];
const IMAGE_READ_PAGES: Dist = &[(4, 30), (8, 30), (16, 25), (32, 15)];

const fn small_db(name: &'static str, pages: u32) -> DbSpec {
    DbSpec {
        name,
        pages,
        modified: SMALL_DB_MODIFIED,
        append_permille: 150,
        appended: SMALL_DB_APPENDED,
        append_area: AppendArea::Tail,
        commit_permille: 400,
        read_pages: DB_READ_PAGES,
    }
}

const fn image_cache(name: &'static str, pages: u32) -> FileStream {
    FileStream {
        name,
        pages,
        mix: MEDIA_MIX,
        file_pages: IMAGE_FILE_PAGES,
        chunk_pages: MAX_REQUEST_PAGES,
        elastic: true,
        commit_permille: 150,
        then: NO_EVENTS,
        read_pages: IMAGE_READ_PAGES,
    }
}

pub(crate) const FACEBOOK: Profile = Profile {
    app: LdcApp::Facebook,
    session_s: 600,
    exec_pages: 60 * MIB,
    files_pages: 8 * MIB,
    dbs: &[
        DbSpec {
            name: "newsfeed.db",
            pages: 32 * MIB,
            modified: &[(1, 45), (2, 30), (3, 15), (4, 10)],
            append_permille: 450,
            appended: &[(2, 10), (4, 20), (8, 25), (16, 25), (32, 15), (64, 5)],
            append_area: AppendArea::Tail,
            commit_permille: 600,
            read_pages: DB_READ_PAGES,
        },
        small_db("prefs.db", 8 * MIB),
    ],
    streams: &[image_cache("images", 192 * MIB)],
    events: &[
        (Event::Txn(0), 47),
        (Event::Txn(1), 9),
        (Event::File(0), 33),
        (Event::Text, 6),
        (Event::Commit, 5),
    ],
    scheduled: None,
    reads: &[
        (ReadKind::Db(0), 45),
        (ReadKind::Db(1), 10),
        (ReadKind::File(0), 40),
        (ReadKind::Exec, 3),
    ],
};

pub(crate) const TWITTER: Profile = Profile {
    app: LdcApp::Twitter,
    session_s: 360,
    exec_pages: 25 * MIB,
    files_pages: 4 * MIB,
    dbs: &[
        DbSpec {
            name: "timeline.db",
            pages: 16 * MIB,
            modified: &[(1, 45), (2, 30), (3, 15), (4, 10)],
            append_permille: 350,
            appended: &[(2, 20), (4, 25), (8, 25), (16, 20), (32, 10)],
            append_area: AppendArea::Tail,
            commit_permille: 600,
            read_pages: DB_READ_PAGES,
        },
        small_db("prefs.db", 4 * MIB),
    ],
    streams: &[FileStream {
        file_pages: SMALL_IMAGE_FILE_PAGES,
        read_pages: &[(2, 30), (4, 30), (8, 25), (16, 15)],
        ..image_cache("images", 80 * MIB)
    }],
    events: &[
        (Event::Txn(0), 32),
        (Event::Txn(1), 8),
        (Event::File(0), 48),
        (Event::Text, 6),
        (Event::Commit, 6),
    ],
    scheduled: None,
    reads: &[
        (ReadKind::Db(0), 45),
        (ReadKind::Db(1), 10),
        (ReadKind::File(0), 40),
        (ReadKind::Exec, 3),
    ],
};

pub(crate) const MESSENGER: Profile = Profile {
    app: LdcApp::Messenger,
    session_s: 480,
    exec_pages: 30 * MIB,
    files_pages: 4 * MIB,
    dbs: &[
        DbSpec {
            name: "threads.db",
            pages: 24 * MIB,
            modified: &[(1, 40), (2, 30), (3, 20), (4, 10)],
            append_permille: 500,
            appended: &[(4, 10), (8, 20), (16, 30), (32, 25), (64, 15)],
            append_area: AppendArea::Tail,
            commit_permille: 600,
            read_pages: &[(1, 40), (2, 20), (4, 20), (8, 15), (16, 5)],
        },
        small_db("prefs.db", 4 * MIB),
    ],
    streams: &[FileStream {
        file_pages: &[(8, 20), (16, 25), (32, 25), (64, 20), (128, 10)],
        commit_permille: 200,
        ..image_cache("media", 40 * MIB)
    }],
    events: &[
        (Event::Txn(0), 55),
        (Event::Txn(1), 10),
        (Event::File(0), 15),
        (Event::Text, 10),
        (Event::Commit, 10),
    ],
    scheduled: None,
    reads: &[
        (ReadKind::Db(0), 75),
        (ReadKind::Db(1), 7),
        (ReadKind::File(0), 15),
        (ReadKind::Exec, 3),
    ],
};

pub(crate) const GOOGLE_EARTH: Profile = Profile {
    app: LdcApp::GoogleEarth,
    session_s: 480,
    exec_pages: 40 * MIB,
    files_pages: 4 * MIB,
    dbs: &[
        DbSpec {
            name: "tiles.db",
            pages: 8 * MIB,
            modified: &[(1, 90), (2, 10)],
            append_permille: 1000,
            appended: &[(4, 15), (5, 20), (6, 25), (8, 25), (12, 15)],
            append_area: AppendArea::Blobs {
                pages: 96 * MIB,
                mix: MEDIA_MIX,
            },
            commit_permille: 100,
            read_pages: DB_READ_PAGES,
        },
        DbSpec {
            name: "metadata.db",
            pages: 8 * MIB,
            modified: &[(1, 60), (2, 30), (3, 10)],
            append_permille: 200,
            appended: SMALL_DB_APPENDED,
            append_area: AppendArea::Tail,
            commit_permille: 400,
            read_pages: DB_READ_PAGES,
        },
    ],
    streams: &[],
    events: &[
        (Event::Txn(0), 88),
        (Event::Txn(1), 8),
        (Event::Text, 2),
        (Event::Commit, 2),
    ],
    scheduled: None,
    reads: &[
        (ReadKind::Appended(0), 35),
        (ReadKind::Db(0), 30),
        (ReadKind::Db(1), 30),
        (ReadKind::Exec, 3),
    ],
};

pub(crate) const CHROME: Profile = Profile {
    app: LdcApp::Chrome,
    session_s: 360,
    exec_pages: 50 * MIB,
    files_pages: 8 * MIB,
    dbs: &[
        DbSpec {
            name: "History",
            pages: 8 * MIB,
            modified: &[(1, 50), (2, 30), (3, 20)],
            append_permille: 300,
            appended: &[(1, 40), (2, 30), (4, 20), (8, 10)],
            append_area: AppendArea::Tail,
            commit_permille: 500,
            read_pages: DB_READ_PAGES,
        },
        DbSpec {
            append_permille: 100,
            appended: &[(1, 100)],
            commit_permille: 300,
            ..small_db("Cookies", 2 * MIB)
        },
    ],
    streams: &[
        FileStream {
            file_pages: LARGE_IMAGE_FILE_PAGES,
            ..image_cache("cache-images", 96 * MIB)
        },
        FileStream {
            name: "cache-text",
            pages: 32 * MIB,
            mix: TEXT_MIX,
            file_pages: &[(1, 10), (2, 15), (4, 20), (8, 25), (16, 20), (32, 10)],
            chunk_pages: 32,
            elastic: false,
            commit_permille: 200,
            then: NO_EVENTS,
            read_pages: &[(2, 30), (4, 40), (8, 30)],
        },
    ],
    events: &[
        (Event::Txn(0), 26),
        (Event::Txn(1), 16),
        (Event::File(0), 20),
        (Event::File(1), 28),
        (Event::Text, 5),
        (Event::Commit, 5),
    ],
    scheduled: None,
    reads: &[
        (ReadKind::Db(0), 25),
        (ReadKind::Db(1), 10),
        (ReadKind::File(0), 30),
        (ReadKind::File(1), 25),
        (ReadKind::Exec, 3),
    ],
};

pub(crate) const CAMERA: Profile = Profile {
    app: LdcApp::Camera,
    session_s: 330,
    exec_pages: 10 * MIB,
    files_pages: MIB,
    dbs: &[
        DbSpec {
            name: "external.db",
            pages: 8 * MIB,
            modified: &[(1, 30), (2, 30), (3, 20), (4, 20)],
            append_permille: 300,
            appended: &[(1, 60), (2, 30), (4, 10)],
            append_area: AppendArea::Tail,
            commit_permille: 600,
            read_pages: DB_READ_PAGES,
        },
        small_db("prefs.db", MIB),
    ],
    streams: &[
        FileStream {
            name: "dcim",
            pages: 96 * MIB,
            mix: MEDIA_MIX,
            file_pages: &[(448, 100)],
            chunk_pages: MAX_REQUEST_PAGES,
            elastic: true,
            commit_permille: 1000,
            then: &[Event::File(1), Event::Txn(0), Event::Txn(0)],
            read_pages: &[(16, 50), (32, 50)],
        },
        FileStream {
            name: "thumbnails",
            pages: 16 * MIB,
            mix: MEDIA_MIX,
            file_pages: &[(4, 40), (8, 40), (16, 20)],
            chunk_pages: 32,
            elastic: false,
            commit_permille: 0,
            then: NO_EVENTS,
            read_pages: &[(4, 50), (8, 50)],
        },
    ],
    events: &[
        (Event::Txn(0), 50),
        (Event::Txn(1), 25),
        (Event::Text, 15),
        (Event::Commit, 10),
    ],
    scheduled: Some((Event::File(0), 30)),
    reads: &[
        (ReadKind::Db(0), 50),
        (ReadKind::File(1), 30),
        (ReadKind::File(0), 10),
        (ReadKind::Exec, 3),
    ],
};

/// The six single-app profiles, in [`LdcApp::SINGLE`] order.
pub(crate) const PROFILES: [Profile; 6] =
    [FACEBOOK, TWITTER, MESSENGER, GOOGLE_EARTH, CHROME, CAMERA];
