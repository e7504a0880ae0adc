//! Readahead: which pages a read brings in beyond the ones it asked for.
//!
//! The policy is a pure function of a file's readahead state and the read that triggered
//! it; the cache ([`crate::PageCache`]) carries the window out. `linux` follows the
//! kernel's on-demand readahead (mm/readahead.c; facts in `docs/cache.md`, "Readahead"):
//! a sequential miss or the start of a file opens a window sized from the request, each
//! later window grows ×4 or ×2 up to `max_kib`, and a read that reaches the window's
//! marker page starts the next window asynchronously. `off` reads only what is asked.

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
}

impl Default for ReadaheadConfig {
    fn default() -> Self {
        Self {
            policy: ReadaheadPolicy::Off,
            max_kib: 128,
        }
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
/// has no open files): the last window and the last page read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadaheadState {
    pub window: Option<Window>,
    pub prev_page: Option<u64>,
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
        };
        let next = linux_decision(&state, 1, 1, Trigger::Marker { next_missing: 4 }, 32)
            .expect("the marker starts the next window");
        assert_eq!((next.start, next.size, next.async_size), (4, 8, 8));
        let random = ReadaheadState {
            window: Some(next),
            prev_page: Some(50),
        };
        assert_eq!(linux_decision(&random, 200, 1, Trigger::Miss, 32), None);
    }
}
