//! The MedFS workload table (FAST '25 slides, "Empirical Study on Mobile I/O Workload"):
//! seven apps, 24 tasks, each a persona calibrated to its row.
//!
//! Reading of the table: it is printed in two column groups. The left group holds Gmail
//! (5 tasks), Polish (2), Spotify (2) and the first three Telegram tasks; the right group
//! continues Telegram (2 tasks), Twitter (3) and WeChat (from "Watch news 5min"). Its
//! last three rows carry no app name and their cells are shifted one column to the left:
//! we read "Receive 10sec voice" (2.8 MB) and "Post 1 image" (1.7 MB) as WeChat's (the
//! app cell spans them, as it does for every app) and "Attend 5min meeting" (207.4 MB)
//! as Zoom's, the seventh app the slides name and the only one left without a row.

use crate::mix::{Mix, SqlWork};
use crate::persona::{AppSpec, DbSpec, Journal, MedfsRow};
use crate::schema::Kind;
use crate::task::TaskPersona;

const fn db(file: &'static str, kind: Kind, rows: u64, body: usize, threads: i64) -> DbSpec {
    DbSpec {
        file,
        kind,
        setup_rows: rows,
        body_bytes: body,
        threads,
        journal: None,
    }
}

const fn db_j(
    file: &'static str,
    kind: Kind,
    rows: u64,
    body: usize,
    threads: i64,
    journal: Journal,
) -> DbSpec {
    DbSpec {
        file,
        kind,
        setup_rows: rows,
        body_bytes: body,
        threads,
        journal: Some(journal),
    }
}

/// WAL apps here checkpoint when they go to the background rather than every 100 pages
/// (invented: the MedFS traces' low update differences and large-file shares leave no room
/// for the WAL being rewritten from its start during a task).
const DEFERRED_CHECKPOINTS: &str = "PRAGMA wal_autocheckpoint = 20000";

/// Gmail: the mail store (large: bodies of thousands of mails), the sync-operations
/// database, Firebase-style analytics, a sync-state file patched in place (invented).
pub static GMAIL: AppSpec = AppSpec {
    name: "gmail",
    package: "com.google.android.gm",
    journal: Journal::Persist,
    pragmas: &[],
    dbs: &[
        db("mailstore.user@gmail.com.db", Kind::Mail, 4000, 1500, 600),
        db("internal.user@gmail.com.db", Kind::Events, 400, 200, 1),
        db_j(
            "google_app_measurement.db",
            Kind::Events,
            300,
            300,
            1,
            Journal::Truncate,
        ),
    ],
    prefs: &["Gmail", "UnifiedEmail"],
    prefs_entries: 40,
    state: Some(("sync_state.bin", 128 << 10)),
    log: Some("gmail.log"),
    media_dir: "cache/attachments",
    media_ext: "jpg",
};

/// Polish (photo editor): a small project database, the editor's working buffer
/// (raw layer tiles patched in place at each stroke), rendered tiles and previews.
pub static POLISH: AppSpec = AppSpec {
    name: "polish",
    package: "photo.editor.polish",
    journal: Journal::Wal,
    pragmas: &[DEFERRED_CHECKPOINTS],
    dbs: &[db("projects.db", Kind::Media, 300, 200, 20)],
    prefs: &["editor"],
    prefs_entries: 24,
    state: Some(("edit/layer0.raw", 3 << 20)),
    log: Some("editor.log"),
    media_dir: "cache/tiles",
    media_ext: "png",
};

/// Spotify: track metadata, the event-sender queue (play events), the settings bank
/// patched in place, streamed audio cached in chunk files.
pub static SPOTIFY: AppSpec = AppSpec {
    name: "spotify",
    package: "com.spotify.music",
    journal: Journal::Wal,
    pragmas: &[DEFERRED_CHECKPOINTS],
    dbs: &[
        db("spotify.db", Kind::Media, 1500, 300, 50),
        db_j(
            "event_sender.db",
            Kind::Events,
            300,
            400,
            1,
            Journal::Truncate,
        ),
    ],
    prefs: &["spotify_preferences"],
    prefs_entries: 60,
    state: Some(("settings/settings.bnk", 256 << 10)),
    log: Some("spotify.log"),
    media_dir: "files/spotifycache/Storage",
    media_ext: "ogg",
};

/// Telegram: one large message cache (`cache4.db`, WAL), downloaded media files.
pub static TELEGRAM: AppSpec = AppSpec {
    name: "telegram",
    package: "org.telegram.messenger",
    journal: Journal::Wal,
    pragmas: &[DEFERRED_CHECKPOINTS],
    dbs: &[db("cache4.db", Kind::Chat, 24000, 160, 300)],
    prefs: &["mainconfig", "userconfing"],
    prefs_entries: 80,
    state: Some(("tgnet.dat", 64 << 10)),
    log: Some("logs/tgnet.txt"),
    media_dir: "cache",
    media_ext: "jpg",
};

/// Twitter: the account's timeline database (posts with the server's JSON), a global
/// database, analytics, a state file patched in place.
pub static TWITTER: AppSpec = AppSpec {
    name: "twitter",
    package: "com.twitter.android",
    journal: Journal::Persist,
    pragmas: &[DEFERRED_CHECKPOINTS],
    dbs: &[
        db_j("1234567890-66.db", Kind::Feed, 400, 900, 300, Journal::Wal),
        db_j("global.db", Kind::Http, 400, 200, 1, Journal::Truncate),
        db_j(
            "google_app_measurement.db",
            Kind::Events,
            300,
            300,
            1,
            Journal::Truncate,
        ),
    ],
    prefs: &["com.twitter.android_preferences"],
    prefs_entries: 60,
    state: Some(("app_state.bin", 256 << 10)),
    log: Some("twitter.log"),
    media_dir: "cache/image_manager_disk_cache",
    media_ext: "jpg",
};

/// WeChat: the message database (large, WAL), an MMKV file patched in place, image
/// and voice caches.
pub static WECHAT: AppSpec = AppSpec {
    name: "wechat",
    package: "com.tencent.mm",
    journal: Journal::Wal,
    pragmas: &[DEFERRED_CHECKPOINTS],
    dbs: &[
        db("EnMicroMsg.db", Kind::Chat, 22000, 180, 200),
        db_j(
            "WebViewCache.db",
            Kind::Http,
            600,
            200,
            1,
            Journal::Truncate,
        ),
    ],
    prefs: &["com.tencent.mm_preferences"],
    prefs_entries: 60,
    state: Some(("mmkv/mmkv.default", 512 << 10)),
    log: Some("xlog/MM.xlog"),
    media_dir: "MicroMsg/image2",
    media_ext: "jpg",
};

/// Zoom: the chat database (large, WAL), the meeting state file patched in place,
/// logs, cached avatars and shared images.
pub static ZOOM: AppSpec = AppSpec {
    name: "zoom",
    package: "us.zoom.videomeetings",
    journal: Journal::Wal,
    pragmas: &[DEFERRED_CHECKPOINTS],
    dbs: &[
        db("zoomus.db", Kind::Chat, 22000, 180, 100),
        db_j(
            "zoommeeting.db",
            Kind::Events,
            500,
            300,
            1,
            Journal::Persist,
        ),
    ],
    prefs: &["ZoomMeeting"],
    prefs_entries: 80,
    state: Some(("data/conf_state.bin", 2 << 20)),
    log: Some("logs/zoom_meeting.log"),
    media_dir: "data/avatars",
    media_ext: "png",
};

/// One calibrated task.
#[derive(Clone, Debug)]
pub struct MedfsTask {
    /// Catalogue name, `app:task`.
    pub key: &'static str,
    /// The operation name in the latency table.
    pub op: &'static str,
    pub app: &'static AppSpec,
    pub row: MedfsRow,
    pub mix: Mix,
}

const fn row(
    app: &'static str,
    task: &'static str,
    vol_mb: f64,
    small: f64,
    ur: f64,
    ud: f64,
) -> MedfsRow {
    MedfsRow {
        app,
        task,
        vol_mb,
        small: small / 100.0,
        ur: ur / 100.0,
        ud: ud / 100.0,
    }
}

/// A mix from its database list and its counts in [`Mix::knobs`] order: repeat, media
/// files, media KiB, temp KiB, prefs commits, log bytes, patch writes, patch KiB, patch ‰ (bytes changed per thousand),
/// then per database: transactions, rows per insert, bytes per row, rows per update.
fn mixk(think_ms: u32, show: u32, dbs: &[u8], knobs: &[u32]) -> Mix {
    let base = Mix {
        repeat: 1,
        think_ms,
        sql: dbs
            .iter()
            .map(|&db| SqlWork {
                db,
                txns: 0,
                rows: 0,
                body: 0,
                touch: 0,
            })
            .collect(),
        media_files: 0,
        media_kib: 0,
        temp_kib: 0,
        prefs: 0,
        log_bytes: 0,
        patch_writes: 0,
        patch_kib: 0,
        patch_permille: 0,
        show,
    };
    base.with_knobs(knobs)
}

/// The 24 tasks of the MedFS table with their calibrated mixes (counts from
/// `tests/tune.rs`; see `docs/personas.md`).
#[rustfmt::skip]
pub fn tasks() -> Vec<MedfsTask> {
    let t = |key, op, app, row, mix| MedfsTask { key, op, app, row, mix };
    vec![
        t("gmail:launch", "launch app", &GMAIL, row("Gmail", "Launch app", 0.7, 100.0, 62.4, 31.2),
          mixk(0, 4, &[0, 1, 2], &[1, 2, 25, 0, 3, 5514, 1, 10, 120, 0, 0, 0, 0, 4, 2, 200, 2, 13, 2, 300, 0])),
        t("gmail:send-image", "send 1 image", &GMAIL, row("Gmail", "Send 1 image", 6.3, 94.8, 89.6, 24.3),
          mixk(0, 0, &[0, 1, 2], &[1, 0, 0, 629, 4, 65536, 610, 5, 120, 8, 1, 300, 1, 0, 2, 200, 2, 0, 2, 300, 0])),
        t("gmail:send-text", "send 100 characters", &GMAIL, row("Gmail", "Send 100 characters", 9.0, 92.4, 91.5, 25.3),
          mixk(0, 0, &[0, 1, 2], &[1, 0, 0, 441, 6, 61125, 778, 5, 120, 13, 1, 100, 2, 7, 2, 200, 2, 16, 2, 300, 0])),
        t("gmail:receive-image", "receive 1 image", &GMAIL, row("Gmail", "Receive 1 image", 12.3, 89.1, 71.1, 30.2),
          mixk(0, 1, &[0, 1, 2], &[1, 1, 3445, 0, 6, 18185, 562, 7, 120, 11, 1, 300, 1, 46, 2, 200, 2, 19, 2, 300, 0])),
        t("gmail:receive-text", "receive 100 characters", &GMAIL, row("Gmail", "Receive 100 characters", 7.2, 98.6, 62.8, 29.0),
          mixk(0, 0, &[0, 1, 2], &[1, 2, 62, 0, 6, 10671, 31, 11, 120, 1, 1, 100, 1, 33, 2, 200, 2, 149, 2, 300, 0])),
        t("polish:launch", "launch app", &POLISH, row("Polish", "Launch app", 0.1, 100.0, 78.6, 0.9),
          mixk(0, 0, &[0], &[1, 0, 0, 18, 1, 578, 3, 17, 10, 1, 1, 200, 0])),
        t("polish:edit-photo", "edit a photo", &POLISH, row("Polish", "Edit a photo", 130.6, 99.9, 51.8, 2.7),
          mixk(3000, 1, &[0], &[40, 2, 766, 0, 1, 2000, 1, 1600, 30, 1, 1, 200, 1])),
        t("spotify:launch", "launch app", &SPOTIFY, row("Spotify", "Launch app", 4.4, 100.0, 93.1, 5.5),
          mixk(0, 0, &[0, 1], &[1, 0, 0, 176, 2, 0, 728, 1, 50, 21, 2, 300, 2, 5, 64, 400, 0])),
        t("spotify:listen-5min", "listen to music 5 min", &SPOTIFY, row("Spotify", "Listen to music 5min", 67.4, 100.0, 62.3, 11.2),
          mixk(10000, 0, &[0, 1], &[30, 1, 494, 322, 1, 65536, 101, 12, 110, 5, 1, 300, 0, 1, 2, 400, 0])),
        t("telegram:send-image", "send 1 image", &TELEGRAM, row("Telegram", "Send 1 image", 2.4, 52.9, 85.1, 5.2),
          mixk(0, 0, &[0], &[1, 2, 155, 0, 2, 2651, 15, 64, 50, 20, 2, 160, 2])),
        t("telegram:send-voice", "send 10 s voice", &TELEGRAM, row("Telegram", "Send 10sec voice", 3.4, 88.1, 92.7, 3.6),
          mixk(0, 0, &[0], &[1, 1, 311, 0, 2, 1433, 37, 64, 40, 9, 2, 160, 2])),
        t("telegram:receive-text", "receive 100 characters", &TELEGRAM, row("Telegram", "Receive 100 character", 4.8, 64.4, 95.1, 4.1),
          mixk(0, 0, &[0], &[1, 0, 0, 0, 2, 1526, 48, 64, 40, 29, 2, 100, 2])),
        t("telegram:receive-image", "receive 1 image", &TELEGRAM, row("Telegram", "Receive 1 image", 3.5, 51.7, 84.4, 1.6),
          mixk(0, 1, &[0], &[1, 1, 540, 0, 2, 20000, 20, 64, 16, 35, 2, 160, 2])),
        t("telegram:receive-voice", "receive 10 s voice", &TELEGRAM, row("Telegram", "Receive 10sec voice", 4.7, 72.1, 86.9, 2.5),
          mixk(0, 0, &[0], &[1, 1, 563, 0, 2, 7208, 44, 64, 30, 23, 2, 160, 2])),
        t("twitter:launch", "launch app", &TWITTER, row("Twitter", "Launch app", 9.2, 100.0, 61.4, 25.2),
          mixk(0, 0, &[0, 1, 2], &[1, 20, 151, 0, 2, 15640, 31, 161, 80, 0, 10, 900, 2, 3, 2, 200, 2, 32, 2, 300, 0])),
        t("twitter:post-text", "post 100 characters", &TWITTER, row("Twitter", "Post 100 character", 12.5, 100.0, 92.9, 11.1),
          mixk(0, 0, &[0, 1, 2], &[1, 2, 322, 0, 2, 65536, 253, 38, 80, 12, 10, 900, 2, 0, 2, 200, 1, 18, 2, 300, 0])),
        t("twitter:post-image", "post 1 image", &TWITTER, row("Twitter", "Post 1 image", 15.8, 100.0, 84.5, 8.3),
          mixk(0, 0, &[0, 1, 2], &[1, 1, 2337, 0, 2, 41269, 802, 16, 80, 0, 10, 900, 2, 2, 2, 200, 2, 0, 2, 300, 0])),
        t("wechat:watch-news-5min", "watch news 5 min", &WECHAT, row("Wechat", "Watch news 5min", 117.5, 99.2, 75.6, 14.4),
          mixk(10000, 2, &[0, 1], &[30, 6, 169, 3, 1, 65536, 98, 28, 140, 1, 2, 180, 2, 1, 6, 200, 19])),
        t("wechat:launch", "launch app", &WECHAT, row("Wechat", "Launch app", 2.0, 97.0, 67.1, 14.4),
          mixk(0, 0, &[0, 1], &[1, 2, 212, 0, 2, 11728, 30, 31, 140, 2, 1, 180, 2, 5, 4, 200, 9])),
        t("wechat:send-text", "send 100 characters", &WECHAT, row("Wechat", "Send 100 character", 2.3, 94.6, 75.9, 21.7),
          mixk(0, 0, &[0, 1], &[1, 1, 532, 0, 2, 8320, 37, 37, 200, 3, 1, 100, 2, 1, 2, 200, 2])),
        t("wechat:receive-text", "receive 100 characters", &WECHAT, row("Wechat", "Receive 100 character", 1.8, 97.7, 76.5, 22.3),
          mixk(0, 0, &[0, 1], &[1, 1, 315, 0, 2, 5771, 28, 34, 200, 1, 1, 100, 2, 4, 2, 200, 2])),
        t("wechat:receive-voice", "receive 10 s voice", &WECHAT, row("Wechat", "Receive 10sec voice", 2.8, 85.4, 55.3, 9.2),
          mixk(0, 0, &[0, 1], &[1, 1, 1221, 0, 2, 59435, 38, 25, 90, 9, 1, 100, 2, 0, 2, 200, 2])),
        t("wechat:post-image", "post 1 image", &WECHAT, row("Wechat", "Post 1 image", 1.7, 92.1, 61.2, 14.7),
          mixk(0, 0, &[0, 1], &[1, 1, 659, 0, 2, 2307, 32, 24, 140, 3, 1, 100, 2, 0, 2, 200, 2])),
        t("zoom:attend-5min", "attend 5 min meeting", &ZOOM, row("Zoom", "Attend 5min meeting", 207.4, 82.0, 92.5, 13.1),
          mixk(5000, 0, &[0, 1], &[60, 1, 14, 255, 1, 65536, 296, 5, 130, 9, 2, 180, 2, 0, 2, 300, 2])),
    ]
}

impl MedfsTask {
    /// The persona of this task with its calibrated mix.
    pub fn persona(&self) -> TaskPersona {
        self.persona_with(&self.mix)
    }

    /// The persona with another mix (calibration searches).
    pub fn persona_with(&self, mix: &Mix) -> TaskPersona {
        // The app was used before: the same database work and state patches, without
        // new media, so its journals, WAL and state file exist as on a used phone.
        let warm = Mix {
            repeat: 2,
            think_ms: 5_000,
            media_files: 0,
            temp_kib: 0,
            prefs: 1,
            show: 0,
            ..mix.clone()
        };
        TaskPersona {
            name: self.key.to_owned(),
            description: format!(
                "{}: {} (MedFS table row: {} MB written)",
                self.row.app, self.row.task, self.row.vol_mb
            ),
            calibration: format!(
                "MedFS workload table, row {} / {}: Vol {} MB, Small {:.1}%, UR {:.1}%, UD {:.1}%",
                self.row.app,
                self.row.task,
                self.row.vol_mb,
                self.row.small * 100.0,
                self.row.ur * 100.0,
                self.row.ud * 100.0
            ),
            app: self.app,
            warmup: warm.ops("warm-up"),
            ops: mix.ops(self.op),
            target: Some(self.row),
        }
    }
}
