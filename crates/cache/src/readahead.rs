//! Readahead: which pages a read brings in beyond the ones it asked for.
//!
//! The policy is a pure function of a file's readahead state and the read that triggered
//! it; the cache ([`crate::PageCache`]) carries the window out. `linux` follows the
//! kernel's on-demand readahead (mm/readahead.c; facts in `docs/cache.md`, "Readahead"):
//! a sequential miss or the start of a file opens a window sized from the request, each
//! later window grows ×4 or ×2 up to `max_kib`, and a read that reaches the window's
//! marker page starts the next window asynchronously. `off` reads only what is asked.
//!
//! Faults on mapped files (`mmap`) have their own policy: `read-around` follows the
//! kernel's fault path (mm/filemap.c, `do_sync_mmap_readahead` and
//! `do_async_mmap_readahead`): a fault on an uncached page reads a window of `max_kib`
//! centred on it, a fault on a cached page carrying the marker extends it like sequential
//! readahead, and a per-file miss counter turns read-around off for mappings that miss far
//! more than they hit. `off` takes a fault as a one-page read.

use serde::{Deserialize, Serialize};

/// The readahead policies by name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReadaheadPolicy {
    /// No readahead: a miss reads the missing pages the call asked for (in runs of up to
    /// 128 pages), nothing more. The default (see `docs/cache.md` for why).
    #[default]
    Off,
    /// Linux's on-demand readahead (mm/readahead.c).
    Linux,
}

/// The readahead settings (`cache.readahead` in a stack's TOML).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReadaheadConfig {
    pub policy: ReadaheadPolicy,
    /// Largest window (the kernel's `ra_pages`, `read_ahead_kb`): 128 KiB, the kernel's
    /// default (`VM_READAHEAD_PAGES`). The cache may use less: a window never exceeds an
    /// eighth of the cache (so one window plus the next fit twice over).
    pub max_kib: u32,
    /// How faults on mapped files read (`cache.readahead.mmap`); not serialized when `off`,
    /// so every configuration and report written before it existed stays as it was.
    #[serde(skip_serializing_if = "MmapPolicy::is_off")]
    pub mmap: MmapPolicy,
}

impl Default for ReadaheadConfig {
    fn default() -> Self {
        Self {
            policy: ReadaheadPolicy::Off,
            max_kib: 128,
            mmap: MmapPolicy::Off,
        }
    }
}

/// How a fault on a mapped file reads (`cache.readahead.mmap`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MmapPolicy {
    /// A fault is a one-page `read` of its page, through `policy` (the model before faults
    /// had their own path: results stay byte-identical). The default.
    #[default]
    Off,
    /// Linux's mmap read-around (mm/filemap.c): see [`read_around_decision`].
    ReadAround,
}

impl MmapPolicy {
    pub const NAMES: [&'static str; 2] = ["off", "read-around"];

    pub fn is_off(&self) -> bool {
        *self == MmapPolicy::Off
    }

    pub fn name(self) -> &'static str {
        match self {
            MmapPolicy::Off => "off",
            MmapPolicy::ReadAround => "read-around",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        [MmapPolicy::Off, MmapPolicy::ReadAround]
            .into_iter()
            .find(|p| p.name() == name)
    }
}

impl ReadaheadConfig {
    /// Linux's readahead with the kernel's default 128 KiB window.
    pub fn linux() -> Self {
        Self {
            policy: ReadaheadPolicy::Linux,
            ..Self::default()
        }
    }

    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }

    pub fn max_pages(&self) -> u64 {
        u64::from(self.max_kib) * 1024 / crate::PAGE_SIZE_BYTES as u64
    }
}

/// A readahead window: pages `start..start + size`, of which the last `async_size` are
/// read ahead of need; the first of those carries the marker (the kernel's
/// `PG_readahead`), which starts the next window when a read reaches it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub start: u64,
    pub size: u64,
    pub async_size: u64,
}

impl Window {
    pub fn end(&self) -> u64 {
        self.start + self.size
    }

    /// The marker page, if the window has an asynchronous part.
    pub fn marker(&self) -> Option<u64> {
        (self.async_size > 0).then(|| self.end() - self.async_size)
    }
}

/// A file's readahead state (the kernel's `file_ra_state`, kept per inode here: the cache
/// has no open files): the last window, the last page read, and the mapping's miss counter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadaheadState {
    pub window: Option<Window>,
    pub prev_page: Option<u64>,
    /// Faults on uncached pages less faults on cached ones (the kernel's `mmap_miss`),
    /// kept within `0..=MMAP_MISS_MAX`.
    pub mmap_miss: u32,
}

/// Above this many net misses a mapping gets no read-around (the kernel's
/// `MMAP_LOTSAMISS`, 100): it misses much more than it hits, so reading around only hurts.
pub const MMAP_MISS_BACKOFF: u32 = 100;
/// The miss counter stops here (the kernel counts up to ten times `MMAP_LOTSAMISS`), so a
/// mapping that turns to hitting gets read-around back after at most 900 hits.
pub const MMAP_MISS_MAX: u32 = 10 * MMAP_MISS_BACKOFF;

/// What a fault on a mapped page found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The page was not cached (a major fault: the kernel's synchronous mmap readahead).
    Miss,
    /// The page was cached (a minor fault). `marker`: it carried a window's marker;
    /// `next_missing`: the first uncached page after it (as in [`Trigger::Marker`]).
    Cached { marker: bool, next_missing: u64 },
}

/// A fault's decision: the file's miss counter after the fault, and the window to read
/// (synchronous read-around on a miss, asynchronous at a marker), if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultDecision {
    pub mmap_miss: u32,
    pub window: Option<Window>,
    /// The miss got no window because the mapping misses too often (the back-off).
    pub backed_off: bool,
}

/// The kernel's read-around for a fault at page `index` of a mapping (mm/filemap.c,
/// `do_sync_mmap_readahead` / `do_async_mmap_readahead`), with `ra_pages` the largest
/// window (`ra_pages`; 0 turns it off):
///
/// - a miss counts one more net miss (up to [`MMAP_MISS_MAX`]); past
///   [`MMAP_MISS_BACKOFF`] it reads only its page; otherwise it reads `ra_pages` pages
///   starting `ra_pages / 2` before the fault (at the file's start at the earliest), the
///   last quarter asynchronous (the marker on its first page);
/// - a hit counts one net miss less; if the page carries the marker, the next window
///   follows as sequential readahead's does at a marker ([`linux_decision`]).
///
/// Not modelled: `MADV_SEQUENTIAL` / `MADV_RANDOM` mappings (sequential readahead / none)
/// and fault-around's mapping of neighbouring cached pages without a fault (its effect on
/// the counter, one less per cached page mapped, is the same as a hit per page here).
pub fn read_around_decision(
    state: &ReadaheadState,
    index: u64,
    fault: Fault,
    ra_pages: u64,
) -> FaultDecision {
    let none = |mmap_miss| FaultDecision {
        mmap_miss,
        window: None,
        backed_off: false,
    };
    if ra_pages == 0 {
        return none(state.mmap_miss);
    }
    match fault {
        Fault::Miss => {
            let mmap_miss = (state.mmap_miss + 1).min(MMAP_MISS_MAX);
            if mmap_miss > MMAP_MISS_BACKOFF {
                return FaultDecision {
                    backed_off: true,
                    ..none(mmap_miss)
                };
            }
            FaultDecision {
                mmap_miss,
                window: Some(Window {
                    start: index.saturating_sub(ra_pages / 2),
                    size: ra_pages,
                    async_size: ra_pages / 4,
                }),
                backed_off: false,
            }
        }
        Fault::Cached {
            marker,
            next_missing,
        } => {
            let mmap_miss = state.mmap_miss.saturating_sub(1);
            if !marker {
                return none(mmap_miss);
            }
            let trigger = Trigger::Marker { next_missing };
            FaultDecision {
                window: linux_decision(state, index, 1, trigger, ra_pages),
                ..none(mmap_miss)
            }
        }
    }
}

/// What made the cache ask for readahead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// Page `index` was not cached (the kernel's synchronous readahead).
    Miss,
    /// Page `index` was cached and carried the marker (asynchronous readahead).
    /// `next_missing` is the first uncached page after it (the kernel looks it up when the
    /// marker does not belong to the state's window).
    Marker { next_missing: u64 },
}

/// The initial window for a request of `req_pages` (the kernel's `get_init_ra_size`):
/// the request rounded up to a power of two, ×4 when it is tiny (≤ max/32), ×2 when small
/// (≤ max/4), else the maximum.
pub fn initial_size(req_pages: u64, max_pages: u64) -> u64 {
    let size = req_pages.max(1).next_power_of_two();
    let grown = if size <= max_pages / 32 {
        size * 4
    } else if size <= max_pages / 4 {
        size * 2
    } else {
        max_pages
    };
    grown.min(max_pages)
}

/// The window after one of `size` pages (the kernel's `get_next_ra_size`): ×4 below
/// max/16, ×2 up to max/2, else the maximum.
pub fn next_size(size: u64, max_pages: u64) -> u64 {
    let grown = if size < max_pages / 16 {
        size * 4
    } else if size <= max_pages / 2 {
        size * 2
    } else {
        max_pages
    };
    grown.clamp(1, max_pages)
}

/// The kernel's on-demand readahead decision (mm/readahead.c): the window to read for a
/// `trigger` at page `index` of a read of `req_pages` pages, or `None` (random access:
/// read only the requested pages).
pub fn linux_decision(
    state: &ReadaheadState,
    index: u64,
    req_pages: u64,
    trigger: Trigger,
    max_pages: u64,
) -> Option<Window> {
    if max_pages == 0 {
        return None;
    }
    let req_pages = req_pages.max(1);
    let initial = || {
        let size = initial_size(req_pages, max_pages);
        let async_size = if size > req_pages {
            size - req_pages
        } else {
            size
        };
        Some(Window {
            start: index,
            size,
            async_size,
        })
    };
    if index == 0 && trigger == Trigger::Miss {
        return initial().map(|w| ramp_if_all_async(w, index, max_pages));
    }
    // The reader reached the marker (or the end) of the current window: the next window
    // follows it, larger.
    if let Some(w) = state.window {
        let expected = w.end() - w.async_size;
        if index == expected || index == w.end() {
            let size = next_size(w.size, max_pages);
            return Some(Window {
                start: w.end(),
                size,
                async_size: size,
            });
        }
    }
    match trigger {
        // A marker of another window (an interleaved reader): continue from the first
        // missing page, sized as if the pages up to it had been one window.
        Trigger::Marker { next_missing } => {
            let gap = next_missing.saturating_sub(index);
            if gap > max_pages {
                return None;
            }
            let size = next_size(gap + req_pages, max_pages);
            Some(Window {
                start: next_missing,
                size,
                async_size: size,
            })
        }
        Trigger::Miss => {
            let sequential = state
                .prev_page
                .is_some_and(|prev| index == prev || index == prev + 1);
            // An oversized read is treated as sequential (the kernel does the same).
            if sequential || req_pages > max_pages {
                initial().map(|w| ramp_if_all_async(w, index, max_pages))
            } else {
                None
            }
        }
    }
}

/// When the whole initial window is asynchronous (the request filled it), the kernel
/// submits the next window with it at once, so the marker lands one window ahead.
fn ramp_if_all_async(w: Window, index: u64, max_pages: u64) -> Window {
    if w.start == index && w.size == w.async_size {
        let next = next_size(w.size, max_pages);
        Window {
            start: w.start,
            size: w.size + next,
            async_size: next,
        }
    } else {
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_around_centres_the_window_and_backs_off() {
        let fresh = ReadaheadState::default();
        let d = read_around_decision(&fresh, 100, Fault::Miss, 32);
        assert_eq!(
            d.window,
            Some(Window {
                start: 84,
                size: 32,
                async_size: 8
            })
        );
        assert_eq!((d.mmap_miss, d.backed_off), (1, false));
        assert_eq!(d.window.unwrap().marker(), Some(108));
        // Near the start the window begins at page 0, still 32 pages.
        let w = read_around_decision(&fresh, 5, Fault::Miss, 32)
            .window
            .unwrap();
        assert_eq!((w.start, w.size), (0, 32));
        // The 101st net miss reads only its page; hits bring read-around back.
        let lots = ReadaheadState {
            mmap_miss: MMAP_MISS_BACKOFF,
            ..fresh
        };
        let d = read_around_decision(&lots, 100, Fault::Miss, 32);
        assert_eq!((d.window, d.mmap_miss, d.backed_off), (None, 101, true));
        let hit = Fault::Cached {
            marker: false,
            next_missing: 0,
        };
        let d = read_around_decision(&lots, 100, hit, 32);
        assert_eq!((d.window, d.mmap_miss), (None, MMAP_MISS_BACKOFF - 1));
        let full = ReadaheadState {
            mmap_miss: MMAP_MISS_MAX,
            ..fresh
        };
        assert_eq!(
            read_around_decision(&full, 1, Fault::Miss, 32).mmap_miss,
            MMAP_MISS_MAX
        );
        assert_eq!(read_around_decision(&fresh, 1, Fault::Miss, 0).window, None);
    }

    #[test]
    fn sizes_follow_the_kernel_ramp() {
        // max 32 pages (128 KiB): a 1-page read starts at 4 pages (×4), 4 → 8 (×2),
        // 16 → 32 (max), and windows grow ×4 then ×2 up to the max.
        assert_eq!(initial_size(1, 32), 4);
        assert_eq!(initial_size(3, 32), 8);
        assert_eq!(initial_size(16, 32), 32);
        assert_eq!(next_size(1, 32), 4);
        assert_eq!(next_size(4, 32), 8);
        assert_eq!(next_size(16, 32), 32);
        assert_eq!(next_size(32, 32), 32);
    }

    #[test]
    fn a_sequential_reader_ramps_and_a_random_one_gets_none() {
        let first = linux_decision(&ReadaheadState::default(), 0, 1, Trigger::Miss, 32)
            .expect("the start of a file reads ahead");
        assert_eq!((first.start, first.size, first.async_size), (0, 4, 3));
        assert_eq!(first.marker(), Some(1));
        let state = ReadaheadState {
            window: Some(first),
            prev_page: Some(0),
            ..ReadaheadState::default()
        };
        let next = linux_decision(&state, 1, 1, Trigger::Marker { next_missing: 4 }, 32)
            .expect("the marker starts the next window");
        assert_eq!((next.start, next.size, next.async_size), (4, 8, 8));
        let random = ReadaheadState {
            window: Some(next),
            prev_page: Some(50),
            ..ReadaheadState::default()
        };
        assert_eq!(linux_decision(&random, 200, 1, Trigger::Miss, 32), None);
    }
}
