//! Small vocabularies for synthetic app data. They are deliberately small: real app
//! databases and logs repeat a limited set of names, hosts, keys and tags, and that
//! repetition is what makes them compressible.

use crate::write::{toks, toks_lower, Tok};

/// Common words for message bodies, titles and log messages (most frequent first).
const WORD_STRS: [&str; 128] = [
    "the",
    "to",
    "and",
    "a",
    "of",
    "is",
    "in",
    "for",
    "you",
    "it",
    "on",
    "that",
    "with",
    "be",
    "this",
    "at",
    "are",
    "have",
    "not",
    "was",
    "ok",
    "will",
    "can",
    "we",
    "see",
    "just",
    "now",
    "get",
    "new",
    "time",
    "all",
    "from",
    "your",
    "what",
    "today",
    "tomorrow",
    "meeting",
    "thanks",
    "please",
    "call",
    "when",
    "back",
    "home",
    "photo",
    "video",
    "link",
    "update",
    "message",
    "sent",
    "received",
    "free",
    "lunch",
    "dinner",
    "weekend",
    "later",
    "morning",
    "night",
    "great",
    "good",
    "sure",
    "sorry",
    "love",
    "know",
    "think",
    "going",
    "want",
    "need",
    "here",
    "there",
    "still",
    "check",
    "file",
    "page",
    "account",
    "settings",
    "download",
    "upload",
    "sync",
    "started",
    "finished",
    "failed",
    "success",
    "request",
    "response",
    "cache",
    "session",
    "token",
    "user",
    "device",
    "network",
    "connected",
    "disconnected",
    "battery",
    "location",
    "service",
    "activity",
    "window",
    "display",
    "notification",
    "channel",
    "group",
    "order",
    "price",
    "ticket",
    "flight",
    "hotel",
    "weather",
    "news",
    "music",
    "game",
    "level",
    "score",
    "share",
    "comment",
    "post",
    "story",
    "friend",
    "family",
    "birthday",
    "party",
    "office",
    "project",
    "report",
    "deadline",
    "review",
    "done",
    "yes",
    "no",
];

pub(crate) static WORDS: [Tok; 128] = toks(WORD_STRS);

const FIRST_NAME_STRS: [&str; 32] = [
    "James", "Mary", "Wei", "Li", "Anna", "John", "Maria", "David", "Sarah", "Michael", "Emma",
    "Daniel", "Olivia", "Chen", "Yuki", "Ahmed", "Fatima", "Lucas", "Sofia", "Ivan", "Elena",
    "Raj", "Priya", "Kevin", "Laura", "Tom", "Mei", "Jun", "Hana", "Omar", "Nina", "Paul",
];

const LAST_NAME_STRS: [&str; 32] = [
    "Smith", "Wang", "Zhang", "Kim", "Lee", "Garcia", "Chen", "Liu", "Johnson", "Brown", "Park",
    "Nguyen", "Müller", "Rossi", "Tanaka", "Silva", "Khan", "Patel", "Lopez", "Wilson", "Martin",
    "Huang", "Wu", "Yang", "Sato", "Ivanova", "Jones", "Davis", "Miller", "Chang", "Lin", "Taylor",
];

pub(crate) static FIRST_NAMES: [Tok; 32] = toks(FIRST_NAME_STRS);
pub(crate) static LAST_NAMES: [Tok; 32] = toks(LAST_NAME_STRS);
/// Lower-case forms for e-mail addresses and user names.
pub(crate) static FIRST_LOWER: [Tok; 32] = toks_lower(FIRST_NAME_STRS);
pub(crate) static LAST_LOWER: [Tok; 32] = toks_lower(LAST_NAME_STRS);

/// E-mail domains with their `@`.
pub(crate) static MAIL_DOMAINS: [Tok; 8] = toks([
    "@gmail.com",
    "@outlook.com",
    "@yahoo.com",
    "@qq.com",
    "@163.com",
    "@hotmail.com",
    "@icloud.com",
    "@example.org",
]);

pub(crate) static HOSTS: [Tok; 16] = toks([
    "www.google.com",
    "m.facebook.com",
    "twitter.com",
    "www.youtube.com",
    "en.m.wikipedia.org",
    "www.amazon.com",
    "news.ycombinator.com",
    "www.reddit.com",
    "mail.google.com",
    "maps.google.com",
    "www.instagram.com",
    "github.com",
    "www.bbc.co.uk",
    "www.nytimes.com",
    "weibo.com",
    "www.baidu.com",
]);

pub(crate) static URL_PATHS: [Tok; 24] = toks([
    "search",
    "watch",
    "status",
    "wiki",
    "photos",
    "story",
    "item",
    "posts",
    "comments",
    "profile",
    "messages",
    "notifications",
    "settings",
    "api",
    "v1",
    "v2",
    "images",
    "static",
    "article",
    "news",
    "user",
    "home",
    "feed",
    "share",
]);

/// Android logcat tags.
pub(crate) static LOG_TAGS: [Tok; 24] = toks([
    "ActivityManager",
    "WindowManager",
    "PackageManager",
    "SyncManager",
    "ConnectivityService",
    "WifiStateMachine",
    "BatteryService",
    "AudioFlinger",
    "chromium",
    "SQLiteDatabase",
    "NotificationService",
    "JobScheduler",
    "InputDispatcher",
    "GCoreUlr",
    "Finsky",
    "DownloadManager",
    "LocationManager",
    "CameraService",
    "MediaProvider",
    "Zygote",
    "art",
    "System.err",
    "FirebaseMessaging",
    "OkHttp",
]);

pub(crate) static PACKAGES: [Tok; 16] = toks([
    "com.facebook.katana",
    "com.twitter.android",
    "com.whatsapp",
    "com.google.android.gm",
    "com.android.chrome",
    "com.google.android.apps.maps",
    "com.tencent.mm",
    "com.instagram.android",
    "com.spotify.music",
    "com.android.providers.media",
    "com.google.android.gms",
    "com.android.systemui",
    "com.android.settings",
    "com.google.android.youtube",
    "com.android.vending",
    "com.android.phone",
]);

pub(crate) static LOG_LEVELS: [Tok; 8] =
    toks([" D ", " I ", " I ", " D ", " V ", " W ", " I ", " E "]);

/// Shared-preferences keys.
pub(crate) static PREF_KEYS: [Tok; 32] = toks([
    "last_sync_time",
    "notifications_enabled",
    "user_id",
    "session_token",
    "launch_count",
    "first_launch",
    "theme",
    "language",
    "last_update_check",
    "onboarding_done",
    "sound_enabled",
    "vibrate",
    "auto_download_media",
    "account_name",
    "server_url",
    "cache_version",
    "last_location_lat",
    "last_location_lng",
    "push_registration_id",
    "app_version_code",
    "rate_prompt_shown",
    "analytics_opt_in",
    "font_scale",
    "data_saver",
    "backup_enabled",
    "last_backup_time",
    "default_tab",
    "feed_refresh_interval",
    "login_method",
    "device_id",
    "experiment_bucket",
    "privacy_accepted",
]);

pub(crate) static JSON_KEYS: [Tok; 16] = toks([
    "\"id\":",
    "\"user\":",
    "\"type\":",
    "\"status\":",
    "\"count\":",
    "\"name\":",
    "\"url\":",
    "\"text\":",
    "\"value\":",
    "\"source\":",
    "\"duration_ms\":",
    "\"retry\":",
    "\"tag\":",
    "\"version\":",
    "\"result\":",
    "\"session\":",
]);

pub(crate) static EVENTS: [Tok; 16] = toks([
    "\"sync_finished\"",
    "\"app_open\"",
    "\"screen_view\"",
    "\"message_sent\"",
    "\"message_received\"",
    "\"download_complete\"",
    "\"login\"",
    "\"notification_shown\"",
    "\"click\"",
    "\"scroll\"",
    "\"purchase\"",
    "\"search\"",
    "\"error\"",
    "\"upload_started\"",
    "\"heartbeat\"",
    "\"config_fetched\"",
]);

pub(crate) static JSON_LEVELS: [Tok; 4] = toks(["\"info\"", "\"debug\"", "\"info\"", "\"warn\""]);

/// Recurring phrases (with their trailing space): app text and log messages are mostly
/// templates, which gives them their long repeated strings.
const PHRASE_STRS: [&str; 32] = [
    "see you tomorrow ",
    "thanks for the update ",
    "are you free for lunch ",
    "call me when you get home ",
    "sounds good ",
    "on my way ",
    "happy birthday! ",
    "did you see the photo ",
    "let me check and get back ",
    "sync finished for account ",
    "request completed in ",
    "connection established to ",
    "starting service for user ",
    "cache miss, fetching from ",
    "notification posted for ",
    "scheduling job with id ",
    "Start proc for activity ",
    "Displayed activity in ",
    "GC freed objects, ",
    "network state changed to ",
    "failed to resolve host ",
    "retrying request after ",
    "user session refreshed ",
    "loaded configuration from ",
    "writing database transaction ",
    "battery level changed to ",
    "location update received ",
    "download progress for file ",
    "upload completed for media ",
    "permission granted for ",
    "skipped frames! The app ",
    "no network available, ",
];

/// Pieces of running text: the 32 phrases, then the 128 words each with its space, so
/// that either kind is one table entry and one slot copy.
pub(crate) static TEXT_PIECES: [Tok; 160] = {
    let mut out = [crate::write::tok(""); 160];
    let phrases = toks(PHRASE_STRS);
    let words = toks(WORD_STRS);
    let mut i = 0;
    while i < 32 {
        out[i] = phrases[i];
        i += 1;
    }
    while i < 160 {
        out[i] = words[i - 32].with_space();
        i += 1;
    }
    out
};
pub(crate) const TEXT_PHRASES: usize = 32;
