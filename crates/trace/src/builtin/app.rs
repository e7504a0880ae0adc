//! The seven workloads of the LDC paper (Ji et al., TECS 2017, Table 4) and their names.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use super::BuiltinError;

/// One application workload of the LDC paper's Table 4 (Table 1 gives the scenarios).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum LdcApp {
    /// Browsing news feeds and posting new messages.
    Facebook,
    /// Browsing news feeds and posting new messages.
    Twitter,
    /// Chatting with contacts and browsing conversation history.
    Messenger,
    /// Viewing online satellite maps.
    GoogleEarth,
    /// Web surfing.
    Chrome,
    /// Taking 30 pictures.
    Camera,
    /// All six single-app workloads combined (long-term use).
    Multiple,
}

/// A row of Table 4, as printed: request count, write ratio in whole percent, I/O volume
/// (reads + writes) in tenths of a megabyte.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Table4Row {
    pub requests: u64,
    pub write_percent: u64,
    pub volume_mb_tenths: u64,
}

impl Table4Row {
    /// Writes the row asks for: `requests × write_percent / 100`, rounded half up, so the
    /// write ratio is exact to the request.
    pub fn writes(&self) -> u64 {
        (self.requests * self.write_percent + 50) / 100
    }

    pub fn reads(&self) -> u64 {
        self.requests - self.writes()
    }

    /// The volume in bytes, taking MB as 10^6 bytes (see `docs/ldc-workloads.md`).
    pub fn volume_bytes(&self) -> u64 {
        self.volume_mb_tenths * 100_000
    }

    pub fn volume_mb(&self) -> f64 {
        self.volume_mb_tenths as f64 / 10.0
    }
}

impl LdcApp {
    /// Table 4's order.
    pub const ALL: [LdcApp; 7] = [
        LdcApp::Facebook,
        LdcApp::Twitter,
        LdcApp::Messenger,
        LdcApp::GoogleEarth,
        LdcApp::Chrome,
        LdcApp::Camera,
        LdcApp::Multiple,
    ];

    /// The six single-application workloads that make up [`LdcApp::Multiple`].
    pub const SINGLE: [LdcApp; 6] = [
        LdcApp::Facebook,
        LdcApp::Twitter,
        LdcApp::Messenger,
        LdcApp::GoogleEarth,
        LdcApp::Chrome,
        LdcApp::Camera,
    ];

    /// The paper's abbreviation, lower case (`fb`, `tw`, `me`, `ge`, `ch`, `ca`, `ma`).
    pub fn abbrev(self) -> &'static str {
        match self {
            LdcApp::Facebook => "fb",
            LdcApp::Twitter => "tw",
            LdcApp::Messenger => "me",
            LdcApp::GoogleEarth => "ge",
            LdcApp::Chrome => "ch",
            LdcApp::Camera => "ca",
            LdcApp::Multiple => "ma",
        }
    }

    /// The full name (Table 4 prints Google Earth as "G. Earth").
    pub fn name(self) -> &'static str {
        match self {
            LdcApp::Facebook => "Facebook",
            LdcApp::Twitter => "Twitter",
            LdcApp::Messenger => "Messenger",
            LdcApp::GoogleEarth => "Google Earth",
            LdcApp::Chrome => "Chrome",
            LdcApp::Camera => "Camera",
            LdcApp::Multiple => "Multiple",
        }
    }

    /// The app's row of Table 4.
    pub fn table4(self) -> Table4Row {
        let (requests, write_percent, volume_mb_tenths) = match self {
            LdcApp::Facebook => (17_428, 90, 3_361),
            LdcApp::Twitter => (7_869, 85, 1_197),
            LdcApp::Messenger => (7_573, 66, 1_366),
            LdcApp::GoogleEarth => (25_831, 95, 2_374),
            LdcApp::Chrome => (6_953, 83, 1_401),
            LdcApp::Camera => (2_301, 96, 653),
            LdcApp::Multiple => (67_955, 88, 10_342),
        };
        Table4Row {
            requests,
            write_percent,
            volume_mb_tenths,
        }
    }

    /// Position among [`LdcApp::SINGLE`] (`Multiple` comes last), used as the process index
    /// of the app's requests.
    pub fn index(self) -> usize {
        LdcApp::ALL.iter().position(|&a| a == self).unwrap_or(0)
    }
}

impl fmt::Display for LdcApp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.abbrev())
    }
}

/// Letters and digits only, lower-cased: "Google Earth", "google-earth" and "G. Earth"
/// reduce to "googleearth" or "gearth".
fn squash(text: &str) -> String {
    text.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

impl FromStr for LdcApp {
    type Err = BuiltinError;

    /// The abbreviation or the full name, in any case, ignoring spaces, dots and hyphens
    /// (`fb`, `Facebook`, `google-earth`, `G. Earth`).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let key = squash(text);
        LdcApp::ALL
            .into_iter()
            .find(|app| {
                key == app.abbrev()
                    || key == squash(app.name())
                    || key == "gearth" && *app == LdcApp::GoogleEarth
            })
            .ok_or_else(|| BuiltinError::UnknownApp(text.trim().to_string()))
    }
}
