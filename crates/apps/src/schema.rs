//! App database schemas (with their indexes) and the SQL of what apps do to them.
//!
//! Every schema has one *primary* table that only grows at the top (rows are deleted
//! oldest first), so `max(rowid)` after a commit is a witness of that commit.

use flashstack_sim::Rng;
use rusqlite::{params, Connection};

use crate::error::AppError;
use crate::text;

/// Virtual epoch of app timestamps (ms): 2026-01-01, as SQLite's clock.
const EPOCH_MS: i64 = 1_767_225_600_000;

/// The kinds of database the personas keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// E-mail: conversations, messages (with bodies), attachments.
    Mail,
    /// Instant messaging: dialogs, messages (serialized as BLOBs), users, media index.
    Chat,
    /// Social feeds: users, posts (with the server's JSON), timelines.
    Feed,
    /// Media metadata (MediaStore-like): photos, edits, tracks.
    Media,
    /// Analytics events queued for upload (every app with an analytics SDK has one).
    Events,
    /// HTTP cache index: one row per cached response, the bodies in files.
    Http,
    /// Map tiles stored as BLOBs (Google Earth).
    Tiles,
}

impl Kind {
    /// The table whose rowids witness commits.
    pub fn primary(self) -> &'static str {
        match self {
            Kind::Mail | Kind::Chat => "messages",
            Kind::Feed => "posts",
            Kind::Media => "files",
            Kind::Events => "raw_events",
            Kind::Http => "cache",
            Kind::Tiles => "tiles",
        }
    }

    /// `CREATE` statements for schema `s`.
    pub fn ddl(self, s: &str) -> String {
        match self {
            Kind::Mail => format!(
                "CREATE TABLE IF NOT EXISTS {s}.conversations(_id INTEGER PRIMARY KEY, subject TEXT, snippet TEXT, last_date INTEGER, num_messages INTEGER, num_unread INTEGER, labels TEXT);
                 CREATE INDEX IF NOT EXISTS {s}.conv_date ON conversations(last_date);
                 CREATE TABLE IF NOT EXISTS {s}.messages(_id INTEGER PRIMARY KEY, conversation_id INTEGER, server_id TEXT, from_addr TEXT, to_addrs TEXT, subject TEXT, snippet TEXT, body TEXT, date_ms INTEGER, flags INTEGER, labels TEXT);
                 CREATE INDEX IF NOT EXISTS {s}.msg_conv ON messages(conversation_id, date_ms);
                 CREATE INDEX IF NOT EXISTS {s}.msg_server ON messages(server_id);
                 CREATE TABLE IF NOT EXISTS {s}.attachments(_id INTEGER PRIMARY KEY, message_id INTEGER, name TEXT, mime TEXT, size INTEGER, uri TEXT, state INTEGER);
                 CREATE INDEX IF NOT EXISTS {s}.att_msg ON attachments(message_id);"
            ),
            Kind::Chat => format!(
                "CREATE TABLE IF NOT EXISTS {s}.dialogs(did INTEGER PRIMARY KEY, date INTEGER, unread INTEGER, last_mid INTEGER, inbox_max INTEGER, outbox_max INTEGER, pinned INTEGER, title TEXT);
                 CREATE INDEX IF NOT EXISTS {s}.dialogs_date ON dialogs(date);
                 CREATE TABLE IF NOT EXISTS {s}.users(uid INTEGER PRIMARY KEY, name TEXT, phone TEXT, status INTEGER, photo TEXT);
                 CREATE TABLE IF NOT EXISTS {s}.messages(mid INTEGER PRIMARY KEY, uid INTEGER, date INTEGER, out INTEGER, read_state INTEGER, send_state INTEGER, media INTEGER, data BLOB);
                 CREATE INDEX IF NOT EXISTS {s}.msg_uid_date ON messages(uid, date);
                 CREATE INDEX IF NOT EXISTS {s}.msg_unread ON messages(uid, read_state);
                 CREATE TABLE IF NOT EXISTS {s}.media(mid INTEGER PRIMARY KEY, uid INTEGER, type INTEGER, path TEXT, size INTEGER, date INTEGER, w INTEGER, h INTEGER, duration INTEGER);
                 CREATE INDEX IF NOT EXISTS {s}.media_uid ON media(uid, type, mid);"
            ),
            Kind::Feed => format!(
                "CREATE TABLE IF NOT EXISTS {s}.users(uid INTEGER PRIMARY KEY, screen_name TEXT, name TEXT, bio TEXT, followers INTEGER, avatar_url TEXT);
                 CREATE TABLE IF NOT EXISTS {s}.posts(id INTEGER PRIMARY KEY, author_id INTEGER, created_at INTEGER, text TEXT, json TEXT, likes INTEGER, reposts INTEGER, media_url TEXT, flags INTEGER);
                 CREATE INDEX IF NOT EXISTS {s}.posts_author ON posts(author_id, created_at);
                 CREATE TABLE IF NOT EXISTS {s}.timeline(_id INTEGER PRIMARY KEY, type INTEGER, owner_id INTEGER, post_id INTEGER, sort_index INTEGER, is_read INTEGER);
                 CREATE INDEX IF NOT EXISTS {s}.timeline_sort ON timeline(type, owner_id, sort_index);"
            ),
            Kind::Media => format!(
                "CREATE TABLE IF NOT EXISTS {s}.files(_id INTEGER PRIMARY KEY, _data TEXT, size INTEGER, mime TEXT, date_added INTEGER, date_modified INTEGER, width INTEGER, height INTEGER, duration INTEGER, title TEXT, album TEXT, artist TEXT, bucket TEXT, is_pending INTEGER);
                 CREATE INDEX IF NOT EXISTS {s}.files_bucket ON files(bucket, date_added);
                 CREATE INDEX IF NOT EXISTS {s}.files_path ON files(_data);"
            ),
            Kind::Events => format!(
                "CREATE TABLE IF NOT EXISTS {s}.raw_events(_id INTEGER PRIMARY KEY, app_id TEXT, name TEXT, timestamp INTEGER, fingerprint INTEGER, data BLOB);
                 CREATE INDEX IF NOT EXISTS {s}.events_ts ON raw_events(timestamp);
                 CREATE TABLE IF NOT EXISTS {s}.user_attributes(name TEXT PRIMARY KEY, set_timestamp INTEGER, value BLOB);"
            ),
            Kind::Http => format!(
                "CREATE TABLE IF NOT EXISTS {s}.cache(_id INTEGER PRIMARY KEY, key TEXT UNIQUE, url TEXT, etag TEXT, size INTEGER, last_access INTEGER, expires INTEGER, file TEXT);
                 CREATE INDEX IF NOT EXISTS {s}.cache_access ON cache(last_access);"
            ),
            Kind::Tiles => format!(
                "CREATE TABLE IF NOT EXISTS {s}.tiles(_id INTEGER PRIMARY KEY, z INTEGER, x INTEGER, y INTEGER, fetched INTEGER, etag TEXT, data BLOB);
                 CREATE UNIQUE INDEX IF NOT EXISTS {s}.tiles_zxy ON tiles(z, x, y);
                 CREATE TABLE IF NOT EXISTS {s}.meta(key TEXT PRIMARY KEY, value TEXT);"
            ),
        }
    }
}

/// `conn.execute`, with the statement kept prepared: the personas run a few dozen
/// statements thousands of times, and parsing them again each time was a tenth of a
/// persona run's CPU (`bench --personas` under perf). SQLite's I/O is the same.
fn exec_cached<P: rusqlite::Params>(
    conn: &Connection,
    sql: &str,
    params: P,
) -> rusqlite::Result<usize> {
    conn.prepare_cached(sql)?.execute(params)
}

/// `conn.query_row` on a kept prepared statement (see [`exec_cached`]).
fn query_cached<T, P: rusqlite::Params>(
    conn: &Connection,
    sql: &str,
    params: P,
    f: impl FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    conn.prepare_cached(sql)?.query_row(params, f)
}

/// Rows of the primary table now.
pub fn max_rowid(conn: &Connection, s: &str, kind: Kind) -> Result<i64, AppError> {
    let v: Option<i64> = query_cached(
        conn,
        &format!("SELECT max(rowid) FROM {s}.{}", kind.primary()),
        [],
        |r| r.get(0),
    )?;
    Ok(v.unwrap_or(0))
}

/// What `add` inserts besides the primary row's size.
#[derive(Clone, Copy, Debug)]
pub struct AddSpec {
    /// Bytes of text (or BLOB for tiles and events) per row.
    pub body_bytes: usize,
    /// How many conversations/dialogs/authors the rows spread over.
    pub threads: i64,
    /// Time stamp (ms since the app epoch).
    pub now_ms: i64,
}

/// Inserts `n` rows into the primary table of schema `s` (and updates what an app
/// updates with them: a conversation's snippet and counters, a timeline entry).
pub fn add(
    conn: &Connection,
    s: &str,
    kind: Kind,
    rng: &mut Rng,
    n: u64,
    spec: AddSpec,
) -> Result<(), AppError> {
    let ts = EPOCH_MS + spec.now_ms;
    let threads = spec.threads.max(1) as u64;
    for _ in 0..n {
        let thread = 1 + rng.below(threads) as i64;
        match kind {
            Kind::Mail => add_mail(conn, s, rng, thread, ts, spec.body_bytes)?,
            Kind::Chat => add_chat(conn, s, rng, thread, ts, spec.body_bytes)?,
            Kind::Feed => add_post(conn, s, rng, thread, ts, spec.body_bytes)?,
            Kind::Media => add_media(conn, s, rng, thread, ts, spec.body_bytes)?,
            Kind::Events => {
                let mut data = vec![0u8; spec.body_bytes];
                rng.fill_bytes(&mut data[..spec.body_bytes / 4]);
                exec_cached(conn,
                    &format!("INSERT INTO {s}.raw_events(app_id, name, timestamp, fingerprint, data) VALUES ('app', ?1, ?2, ?3, ?4)"),
                    params![["screen_view", "user_engagement", "session_start", "play", "click"][rng.below(5) as usize], ts, rng.below(1 << 40) as i64, data],
                )?;
            }
            Kind::Http => {
                let id = rng.next_u64() >> 16;
                exec_cached(conn,
                    &format!("INSERT OR REPLACE INTO {s}.cache(key, url, etag, size, last_access, expires, file) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"),
                    params![format!("{id:x}"), text::url(rng, "r", id), format!("W/\"{:x}\"", rng.next_u64()), (spec.body_bytes * 40) as i64, ts, ts + 86_400_000, format!("{id:x}.0")],
                )?;
            }
            Kind::Tiles => {
                let mut data = vec![0u8; spec.body_bytes];
                rng.fill_bytes(&mut data);
                exec_cached(conn,
                    &format!("INSERT OR REPLACE INTO {s}.tiles(z, x, y, fetched, etag, data) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"),
                    params![12 + rng.below(6) as i64, rng.below(1 << 16) as i64, rng.below(1 << 16) as i64, ts, format!("{:x}", rng.next_u64()), data],
                )?;
            }
        }
    }
    Ok(())
}

fn add_mail(
    conn: &Connection,
    s: &str,
    rng: &mut Rng,
    conv: i64,
    ts: i64,
    body: usize,
) -> Result<(), AppError> {
    let subject_len = 24 + rng.below(30) as usize;
    let subject = text::sentence(rng, subject_len);
    let body_text = text::sentence(rng, body.max(8));
    let snippet: String = body_text.chars().take(90).collect();
    let from = text::email(rng, conv as u64);
    exec_cached(conn,
        &format!("INSERT INTO {s}.messages(conversation_id, server_id, from_addr, to_addrs, subject, snippet, body, date_ms, flags, labels) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 0, '^i^u')"),
        params![conv, format!("{:016x}", rng.next_u64()), from, "me@gmail.com", subject, snippet, body_text, ts],
    )?;
    let updated = exec_cached(conn,
        &format!("UPDATE {s}.conversations SET snippet = ?2, last_date = ?3, num_messages = num_messages + 1, num_unread = num_unread + 1 WHERE _id = ?1"),
        params![conv, snippet, ts],
    )?;
    if updated == 0 {
        exec_cached(conn,
            &format!("INSERT INTO {s}.conversations(_id, subject, snippet, last_date, num_messages, num_unread, labels) VALUES (?1, ?2, ?3, ?4, 1, 1, '^i')"),
            params![conv, subject, snippet, ts],
        )?;
    }
    Ok(())
}

fn add_chat(
    conn: &Connection,
    s: &str,
    rng: &mut Rng,
    did: i64,
    ts: i64,
    body: usize,
) -> Result<(), AppError> {
    // Messages are stored serialized (a TL/protobuf-like record): a header, then the text.
    let mut data = Vec::with_capacity(body + 24);
    data.extend_from_slice(&0x1c9b_0d45u32.to_le_bytes());
    data.extend_from_slice(&(did as u32).to_le_bytes());
    data.extend_from_slice(&(ts as u64).to_le_bytes());
    data.extend_from_slice(text::sentence(rng, body.max(4)).as_bytes());
    let out = i64::from(rng.chance(0.4));
    exec_cached(conn,
        &format!("INSERT INTO {s}.messages(uid, date, out, read_state, send_state, media, data) VALUES (?1, ?2, ?3, 0, 0, 0, ?4)"),
        params![did, ts / 1000, out, data],
    )?;
    let mid = conn.last_insert_rowid();
    let updated = exec_cached(conn,
        &format!("UPDATE {s}.dialogs SET date = ?2, last_mid = ?3, unread = unread + 1 - ?4, inbox_max = CASE WHEN ?4 = 0 THEN ?3 ELSE inbox_max END, outbox_max = CASE WHEN ?4 = 1 THEN ?3 ELSE outbox_max END WHERE did = ?1"),
        params![did, ts / 1000, mid, out],
    )?;
    if updated == 0 {
        exec_cached(conn,
            &format!("INSERT INTO {s}.dialogs(did, date, unread, last_mid, inbox_max, outbox_max, pinned, title) VALUES (?1, ?2, 1, ?3, ?3, 0, 0, ?4)"),
            params![did, ts / 1000, mid, text::name(rng)],
        )?;
        exec_cached(conn,
            &format!("INSERT OR IGNORE INTO {s}.users(uid, name, phone, status, photo) VALUES (?1, ?2, ?3, ?4, ?5)"),
            params![did, text::name(rng), text::phone(did as u64), ts / 1000, text::url(rng, "avatar", did as u64)],
        )?;
    }
    Ok(())
}

fn add_post(
    conn: &Connection,
    s: &str,
    rng: &mut Rng,
    author: i64,
    ts: i64,
    body: usize,
) -> Result<(), AppError> {
    let id = query_cached(
        conn,
        &format!("SELECT coalesce(max(id), 0) + 1 FROM {s}.posts"),
        [],
        |r| r.get::<_, i64>(0),
    )?;
    let json = text::json(rng, id as u64, body.max(64));
    let text: String = json.chars().skip(40).take(140).collect();
    exec_cached(conn,
        &format!("INSERT INTO {s}.posts(id, author_id, created_at, text, json, likes, reposts, media_url, flags) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 0)"),
        params![id, author, ts, text, json, rng.below(5000) as i64, rng.below(300) as i64, text::url(rng, "media", id as u64)],
    )?;
    exec_cached(conn,
        &format!("INSERT INTO {s}.timeline(type, owner_id, post_id, sort_index, is_read) VALUES (0, 1, ?1, ?2, 0)"),
        params![id, ts],
    )?;
    exec_cached(conn,
        &format!("INSERT OR IGNORE INTO {s}.users(uid, screen_name, name, bio, followers, avatar_url) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"),
        params![author, format!("user{author}"), text::name(rng), text::sentence(rng, 60), rng.below(100_000) as i64, text::url(rng, "avatar", author as u64)],
    )?;
    Ok(())
}

fn add_media(
    conn: &Connection,
    s: &str,
    rng: &mut Rng,
    bucket: i64,
    ts: i64,
    body: usize,
) -> Result<(), AppError> {
    let id = rng.next_u64() >> 24;
    exec_cached(conn,
        &format!("INSERT INTO {s}.files(_data, size, mime, date_added, date_modified, width, height, duration, title, album, artist, bucket, is_pending) VALUES (?1, ?2, 'image/jpeg', ?3, ?3, 4032, 3024, 0, ?4, ?5, ?6, ?7, 0)"),
        params![format!("/storage/emulated/0/DCIM/Camera/IMG_{id:08}.jpg"), (body * 1000) as i64, ts / 1000, text::sentence(rng, 20), text::sentence(rng, 12), text::name(rng), format!("bucket{bucket}")],
    )?;
    Ok(())
}

/// Updates small fields of `n` recent rows (read flags, counters, access times): the
/// tiny in-place changes that dominate app updates.
pub fn touch(
    conn: &Connection,
    s: &str,
    kind: Kind,
    rng: &mut Rng,
    n: u64,
    now_ms: i64,
) -> Result<(), AppError> {
    let top = max_rowid(conn, s, kind)?;
    if top == 0 {
        return Ok(());
    }
    let ts = EPOCH_MS + now_ms;
    for _ in 0..n {
        let back = (rng.below(64) as i64).min(top - 1);
        let id = top - back;
        let sql = match kind {
            Kind::Mail => {
                format!("UPDATE {s}.messages SET flags = flags | 1, labels = '^i' WHERE _id = ?1 AND ?2 > 0")
            }
            Kind::Chat => format!(
                "UPDATE {s}.messages SET read_state = 1, send_state = ?2 % 3 WHERE mid = ?1"
            ),
            Kind::Feed => format!("UPDATE {s}.posts SET likes = likes + 1 + ?2 % 7 WHERE id = ?1"),
            Kind::Media => format!("UPDATE {s}.files SET date_modified = ?2 WHERE _id = ?1"),
            Kind::Events => format!("UPDATE {s}.raw_events SET fingerprint = ?2 WHERE _id = ?1"),
            Kind::Http => format!("UPDATE {s}.cache SET last_access = ?2 WHERE _id = ?1"),
            Kind::Tiles => format!("UPDATE {s}.tiles SET fetched = ?2 WHERE _id = ?1"),
        };
        exec_cached(conn, &sql, params![id, ts])?;
    }
    if kind == Kind::Mail || kind == Kind::Chat {
        let (table, key, col) = if kind == Kind::Mail {
            ("conversations", "_id", "num_unread")
        } else {
            ("dialogs", "did", "unread")
        };
        exec_cached(
            conn,
            &format!("UPDATE {s}.{table} SET {col} = 0 WHERE {key} = ?1"),
            params![1 + rng.below(16) as i64],
        )?;
    }
    Ok(())
}

/// Reads the newest `n` rows (opening a conversation, scrolling a timeline).
pub fn read_recent(conn: &Connection, s: &str, kind: Kind, n: u64) -> Result<u64, AppError> {
    let sql = match kind {
        Kind::Mail => format!("SELECT m._id, m.subject, m.body, c.snippet FROM {s}.messages m JOIN {s}.conversations c ON c._id = m.conversation_id ORDER BY m._id DESC LIMIT ?1"),
        Kind::Chat => format!("SELECT m.mid, m.data, d.title FROM {s}.messages m LEFT JOIN {s}.dialogs d ON d.did = m.uid ORDER BY m.mid DESC LIMIT ?1"),
        Kind::Feed => format!("SELECT p.id, p.json, u.name FROM {s}.timeline t JOIN {s}.posts p ON p.id = t.post_id LEFT JOIN {s}.users u ON u.uid = p.author_id ORDER BY t.sort_index DESC LIMIT ?1"),
        Kind::Media => format!("SELECT _id, _data, size FROM {s}.files ORDER BY date_added DESC LIMIT ?1"),
        Kind::Events => format!("SELECT _id, data FROM {s}.raw_events ORDER BY timestamp DESC LIMIT ?1"),
        Kind::Http => format!("SELECT _id, url, file FROM {s}.cache ORDER BY last_access DESC LIMIT ?1"),
        Kind::Tiles => format!("SELECT _id, data FROM {s}.tiles ORDER BY _id DESC LIMIT ?1"),
    };
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = stmt.query(params![n as i64])?;
    let mut count = 0;
    while rows.next()?.is_some() {
        count += 1;
    }
    Ok(count)
}

/// Deletes the `n` oldest rows of the primary table (cache eviction, event upload).
pub fn evict(conn: &Connection, s: &str, kind: Kind, n: u64) -> Result<(), AppError> {
    let p = kind.primary();
    exec_cached(conn,
        // Never the newest row: it is the witness of the last commit.
        &format!("DELETE FROM {s}.{p} WHERE rowid IN (SELECT rowid FROM {s}.{p} WHERE rowid < (SELECT max(rowid) FROM {s}.{p}) ORDER BY rowid LIMIT ?1)"),
        params![n as i64],
    )?;
    Ok(())
}
