//! The LDC paper's application scenarios (Ji et al., ACM TECS 16(5s), 2017, Table 1) with
//! Fig. 3's data mix, and a multi-application mix.
//!
//! Fig. 3 is given in words (`shared/seeds/ldc-tecs2017.md`): Facebook's write traffic is
//! about 46% of high or moderate compressibility, carried by SQLite files (and the ext4
//! journal, which is below the file level and not ours to produce), its incompressible part
//! by image caches; Twitter is "highly similar"; Messenger is text-based with "much less
//! minimally compressible data"; Google Earth has the highest SQLite share because it keeps
//! map tiles as BLOBs, with "about one half" compressible; Chrome is "highly similar" to
//! Google Earth in compressibility but its incompressible part is image cache files;
//! Camera is mostly JPEG pictures plus "a fraction" from its database.

use crate::ctx::Ctx;
use crate::error::AppError;
use crate::persona::{AppSpec, DbSpec, Journal, Persona, Step, UserOp};
use crate::schema::Kind;
use crate::task::{run_ops, TaskPersona};

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

/// Facebook: the news-feed store, a preferences database, an image cache.
pub static FACEBOOK: AppSpec = AppSpec {
    name: "facebook",
    package: "com.facebook.katana",
    journal: Journal::Persist,
    pragmas: &[],
    dbs: &[
        db("newsfeed_db", Kind::Feed, 1500, 1200, 400),
        db("prefs_db", Kind::Http, 300, 200, 1),
        db("analytics_db", Kind::Events, 300, 300, 1),
    ],
    prefs: &["com.facebook.katana_preferences"],
    prefs_entries: 60,
    state: None,
    log: None,
    media_dir: "cache/images",
    media_ext: "jpg",
};

/// Twitter as the LDC paper traced it (Android 4.4, PERSIST): timeline and image cache.
pub static TWITTER_LDC: AppSpec = AppSpec {
    name: "twitter-ldc",
    package: "com.twitter.android",
    journal: Journal::Persist,
    pragmas: &[],
    dbs: &[
        db("0-66.db", Kind::Feed, 1200, 900, 300),
        db("global.db", Kind::Http, 300, 200, 1),
    ],
    prefs: &["com.twitter.android_preferences"],
    prefs_entries: 60,
    state: None,
    log: None,
    media_dir: "cache/images",
    media_ext: "jpg",
};

/// Messenger: message threads (text), a few stickers and photos.
pub static MESSENGER: AppSpec = AppSpec {
    name: "messenger",
    package: "com.facebook.orca",
    journal: Journal::Persist,
    pragmas: &[],
    dbs: &[
        db("threads_db2", Kind::Chat, 6000, 160, 60),
        db("prefs_db", Kind::Http, 300, 200, 1),
    ],
    prefs: &["com.facebook.orca_preferences"],
    prefs_entries: 60,
    state: None,
    log: None,
    media_dir: "cache/stickers",
    media_ext: "webp",
};

/// Google Earth: map tiles as BLOBs in SQLite, tile metadata.
pub static GOOGLE_EARTH: AppSpec = AppSpec {
    name: "google-earth",
    package: "com.google.earth",
    journal: Journal::Persist,
    pragmas: &[],
    dbs: &[
        db("dbCache.db", Kind::Tiles, 400, 12_000, 1),
        db("metadata.db", Kind::Http, 800, 300, 1),
    ],
    prefs: &["earth"],
    prefs_entries: 30,
    state: None,
    log: None,
    media_dir: "cache/icons",
    media_ext: "png",
};

/// Chrome: history and cookies databases, the HTTP disk cache (images and text).
pub static CHROME: AppSpec = AppSpec {
    name: "chrome",
    package: "com.android.chrome",
    journal: Journal::Persist,
    pragmas: &[],
    dbs: &[
        db("History.db", Kind::Http, 3000, 300, 1),
        db("Cookies.db", Kind::Http, 800, 200, 1),
    ],
    prefs: &["Preferences"],
    prefs_entries: 120,
    state: Some(("Cache/index", 256 << 10)),
    log: None,
    media_dir: "Cache/Cache_Data",
    media_ext: "jpg",
};

/// Camera: JPEG pictures and the media provider's database.
pub static CAMERA: AppSpec = AppSpec {
    name: "camera",
    package: "com.android.camera2",
    journal: Journal::Persist,
    pragmas: &[],
    dbs: &[db("external.db", Kind::Media, 2000, 200, 20)],
    prefs: &["com.android.camera2_preferences"],
    prefs_entries: 40,
    state: None,
    log: None,
    media_dir: "DCIM/Camera",
    media_ext: "jpg",
};

fn op(name: &'static str, steps: Vec<Step>, repeat: u32, think_ms: u32) -> UserOp {
    UserOp {
        name,
        steps,
        repeat,
        think_ms,
    }
}

fn warm(app: &'static AppSpec) -> Vec<UserOp> {
    vec![op(
        "warm-up",
        vec![Step::Add {
            db: 0,
            txns: 4,
            rows: 4,
            body: app.dbs[0].body_bytes as u32,
        }],
        1,
        1000,
    )]
}

fn scenario(
    name: &str,
    app: &'static AppSpec,
    description: &str,
    calibration: &str,
    ops: Vec<UserOp>,
) -> TaskPersona {
    TaskPersona {
        name: name.to_owned(),
        description: description.to_owned(),
        calibration: calibration.to_owned(),
        app,
        warmup: warm(app),
        ops,
        target: None,
    }
}

/// Facebook: browsing news feeds (stories stored, images cached) and posting.
pub fn facebook() -> TaskPersona {
    let browse = vec![
        Step::Read { db: 0, rows: 30 },
        Step::Add {
            db: 0,
            txns: 2,
            rows: 8,
            body: 1200,
        },
        Step::Touch {
            db: 0,
            txns: 1,
            rows: 4,
        },
        Step::Add {
            db: 2,
            txns: 1,
            rows: 3,
            body: 300,
        },
        Step::Media {
            files: 2,
            kib: 56,
            fsync: false,
        },
        Step::ShowMedia { files: 2 },
    ];
    let post = vec![
        Step::Add {
            db: 0,
            txns: 1,
            rows: 1,
            body: 400,
        },
        Step::Temp { files: 1, kib: 200 },
        Step::Add {
            db: 1,
            txns: 1,
            rows: 2,
            body: 200,
        },
        Step::Prefs { file: 0, writes: 1 },
    ];
    scenario(
        "facebook",
        &FACEBOOK,
        "Facebook: browsing news feeds and posting new messages (LDC Table 1), 6 minutes",
        "LDC Fig. 3: about 46% of writes highly or moderately compressible, from SQLite; the rest image caches",
        vec![
            op("scroll news feed", browse, 60, 5_000),
            op("post a message", post, 4, 15_000),
        ],
    )
}

/// Twitter as in the LDC study: browsing timelines and posting.
pub fn twitter_feeds() -> TaskPersona {
    let browse = vec![
        Step::Read { db: 0, rows: 30 },
        Step::Add {
            db: 0,
            txns: 2,
            rows: 6,
            body: 900,
        },
        Step::Touch {
            db: 0,
            txns: 1,
            rows: 3,
        },
        Step::Media {
            files: 3,
            kib: 28,
            fsync: false,
        },
        Step::ShowMedia { files: 2 },
    ];
    let post = vec![
        Step::Add {
            db: 0,
            txns: 1,
            rows: 1,
            body: 300,
        },
        Step::Add {
            db: 1,
            txns: 1,
            rows: 2,
            body: 200,
        },
        Step::Prefs { file: 0, writes: 1 },
    ];
    scenario(
        "twitter:feeds",
        &TWITTER_LDC,
        "Twitter: browsing news feeds and posting new messages (LDC Table 1), 5 minutes",
        "LDC Fig. 3: highly similar to Facebook (compressible SQLite, incompressible image caches)",
        vec![
            op("scroll timeline", browse, 50, 5_000),
            op("post a tweet", post, 4, 15_000),
        ],
    )
}

/// Messenger: chatting and browsing conversation history (text-based).
pub fn messenger() -> TaskPersona {
    let chat = vec![
        Step::Add {
            db: 0,
            txns: 1,
            rows: 1,
            body: 120,
        },
        Step::Touch {
            db: 0,
            txns: 1,
            rows: 2,
        },
        Step::Add {
            db: 1,
            txns: 1,
            rows: 1,
            body: 200,
        },
    ];
    let history = vec![
        Step::Read { db: 0, rows: 200 },
        Step::Add {
            db: 0,
            txns: 1,
            rows: 20,
            body: 160,
        },
    ];
    let sticker = vec![Step::Media {
        files: 1,
        kib: 24,
        fsync: false,
    }];
    scenario(
        "messenger",
        &MESSENGER,
        "Messenger: chatting with contacts and browsing conversation history (LDC Table 1), 6 minutes",
        "LDC Fig. 3: like Facebook but with much less minimally compressible data (text-based)",
        vec![
            op("send a message", chat.clone(), 40, 4_000),
            op("browse history", history, 10, 6_000),
            op("send a sticker", sticker, 6, 3_000),
            op("receive a message", chat, 40, 3_000),
        ],
    )
}

/// Google Earth: viewing satellite maps (tiles stored as BLOBs, bursts of writes).
pub fn google_earth() -> TaskPersona {
    let pan = vec![
        Step::Add {
            db: 0,
            txns: 1,
            rows: 6,
            body: 12_000,
        },
        Step::Add {
            db: 1,
            txns: 1,
            rows: 6,
            body: 300,
        },
        Step::Touch {
            db: 1,
            txns: 1,
            rows: 3,
        },
    ];
    scenario(
        "google-earth",
        &GOOGLE_EARTH,
        "Google Earth: viewing online satellite maps (LDC Table 1), 5 minutes",
        "LDC Fig. 3: the highest SQLite share (tiles as BLOBs), about one half compressible",
        vec![
            op("pan and zoom the map", pan, 100, 3_000),
            op(
                "search a place",
                vec![Step::Prefs { file: 0, writes: 1 }],
                3,
                10_000,
            ),
        ],
    )
}

/// Chrome: web surfing (history, cookies, HTTP cache of images and text).
pub fn chrome() -> TaskPersona {
    let page = vec![
        Step::Add {
            db: 0,
            txns: 1,
            rows: 2,
            body: 300,
        },
        Step::Add {
            db: 1,
            txns: 1,
            rows: 3,
            body: 200,
        },
        Step::Touch {
            db: 1,
            txns: 1,
            rows: 2,
        },
        Step::Media {
            files: 3,
            kib: 40,
            fsync: false,
        },
        Step::State {
            writes: 1,
            kib: 16,
            change_permille: 100,
        },
    ];
    scenario(
        "chrome",
        &CHROME,
        "Chrome: web surfing (LDC Table 1), 5 minutes",
        "LDC Fig. 3: compressibility like Google Earth's, minimally compressible part from cached images",
        vec![
            op("open a web page", page, 40, 7_000),
            op("change a setting", vec![Step::Prefs { file: 0, writes: 1 }], 2, 5_000),
        ],
    )
}

/// Camera: taking 30 pictures.
pub fn camera() -> TaskPersona {
    let shot = vec![
        Step::Media {
            files: 1,
            kib: 2_600,
            fsync: true,
        },
        Step::Media {
            files: 1,
            kib: 24,
            fsync: true,
        },
        Step::Add {
            db: 0,
            txns: 2,
            rows: 1,
            body: 200,
        },
        Step::Touch {
            db: 0,
            txns: 1,
            rows: 1,
        },
    ];
    scenario(
        "camera",
        &CAMERA,
        "Camera: taking 30 pictures (LDC Table 1)",
        "LDC Fig. 3: mostly incompressible JPEG pictures, a fraction from the media database",
        vec![op("take a picture", shot, 30, 4_000)],
    )
}

/// Several apps used in turn, as a day's use (the LDC paper's MA workload combines all
/// single-app workloads): each session opens its app (the previous app's process is
/// gone), runs part of its scenario, and the user switches after a pause.
#[derive(Clone, Debug)]
pub struct MixPersona {
    pub apps: Vec<TaskPersona>,
    /// Sessions per app; each runs 1/`rounds` of the app's operation repetitions.
    pub rounds: u32,
    /// Pause between sessions (ms).
    pub switch_ms: u32,
}

/// The default multi-app mix: the six LDC scenarios plus messaging, in three rounds.
pub fn mix() -> MixPersona {
    MixPersona {
        apps: vec![
            facebook(),
            messenger(),
            chrome(),
            twitter_feeds(),
            google_earth(),
            camera(),
        ],
        rounds: 3,
        switch_ms: 20_000,
    }
}

impl Persona for MixPersona {
    fn name(&self) -> String {
        "mix".to_owned()
    }
    fn description(&self) -> String {
        let names: Vec<String> = self.apps.iter().map(|a| a.name.clone()).collect();
        format!(
            "Multi-app mix: {} in {} rounds of sessions, app switches after {} s",
            names.join(", "),
            self.rounds,
            self.switch_ms / 1000
        )
    }
    fn calibration(&self) -> String {
        "LDC MA workload: the single-app scenarios combined (each app keeps its own data mix)"
            .to_owned()
    }
    fn setup(&self, ctx: &mut Ctx) -> Result<(), AppError> {
        for app in &self.apps {
            app.setup(ctx)?;
        }
        ctx.close_app()
    }
    fn apps(&self) -> Vec<&'static AppSpec> {
        self.apps.iter().map(|a| a.app).collect()
    }
    fn run(&self, ctx: &mut Ctx) -> Result<(), AppError> {
        let rounds = self.rounds.max(1);
        for _ in 0..rounds {
            for app in &self.apps {
                app.app.open(ctx)?;
                let session: Vec<UserOp> = app
                    .ops
                    .iter()
                    .map(|o| UserOp {
                        repeat: o.repeat.div_ceil(rounds),
                        ..o.clone()
                    })
                    .collect();
                run_ops(ctx, app.app, &session)?;
                ctx.think(u64::from(self.switch_ms) * flashstack_sim::NS_PER_MS);
            }
        }
        Ok(())
    }
}
