//! Removal of two capture artefacts of the public Pixel 6a traces: requests logged twice
//! (the same request under two process names within about 10 ms) and implausibly long idle
//! spans. Both distort an emulation: duplicates double the write stress, and hours of idle
//! time let background work (GC, flushes) run for free.

use std::collections::{HashMap, VecDeque};
use std::fmt;

use flashstack_block::RequestKind;
use serde::Serialize;

use crate::{human, Trace, TraceRequest};

/// What [`clean`] removes. `None` turns a step off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CleanOptions {
    /// A request with the same kind, offset and length as a kept request that arrived at most
    /// this long before it is a duplicate and is dropped.
    pub dedup_window_ns: Option<u64>,
    /// Idle gaps between consecutive arrivals longer than this are shortened to it.
    pub max_gap_ns: Option<u64>,
}

impl Default for CleanOptions {
    /// 10 ms (the double-logging window seen in the Pixel traces) and 10 s (longer than any
    /// idle period a phone's storage needs to finish its background work in our model).
    fn default() -> Self {
        CleanOptions {
            dedup_window_ns: Some(10_000_000),
            max_gap_ns: Some(10_000_000_000),
        }
    }
}

impl CleanOptions {
    /// Cleans nothing.
    pub fn none() -> Self {
        CleanOptions {
            dedup_window_ns: None,
            max_gap_ns: None,
        }
    }
}

/// What [`clean`] changed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CleanReport {
    pub duplicates_dropped: u64,
    pub duplicate_bytes_dropped: u64,
    pub gaps_shortened: u64,
    pub time_removed_ns: u64,
    pub requests_before: u64,
    pub requests_after: u64,
}

impl fmt::Display for CleanReport {
    /// `dropped 12,345 duplicate requests (8.1%), shortened 17 idle gaps removing 5h 2m`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dropped = self.duplicates_dropped;
        let gaps = self.gaps_shortened;
        write!(
            f,
            "dropped {} duplicate {} ({:.1}%), shortened {} idle {} removing {}",
            human::count(dropped),
            human::plural(dropped, "request", "requests"),
            human::percent(dropped, self.requests_before),
            human::count(gaps),
            human::plural(gaps, "gap", "gaps"),
            human::duration(self.time_removed_ns),
        )
    }
}

/// Drops duplicates, then shortens long idle gaps, in place.
///
/// A duplicate is a read, write or trim with the same kind, offset and length as a request
/// that was kept and arrived at most `dedup_window_ns` earlier, whatever the processes.
/// Comparing with kept requests only means a request repeated every 6 ms with a 10 ms window
/// keeps every other copy rather than collapsing into one. Flushes are never duplicates: they
/// carry no address to tell two of them apart.
///
/// Gaps are measured between consecutive arrivals after deduplication; each one longer than
/// `max_gap_ns` is cut to `max_gap_ns` and every later request moves earlier by the cut.
///
/// Requests are sorted (stably) by arrival first if they are not already, as parsed traces
/// are. Time is linear in the number of requests; memory is bounded by the number of
/// requests inside one window.
pub fn clean(trace: &mut Trace, opts: &CleanOptions) -> CleanReport {
    let requests = &mut trace.requests;
    if !requests.is_sorted_by_key(|r| r.arrival_ns) {
        requests.sort_by_key(|r| r.arrival_ns);
    }
    let mut report = CleanReport {
        requests_before: requests.len() as u64,
        ..CleanReport::default()
    };
    if let Some(window_ns) = opts.dedup_window_ns {
        (report.duplicates_dropped, report.duplicate_bytes_dropped) =
            drop_duplicates(requests, window_ns);
    }
    if let Some(max_gap_ns) = opts.max_gap_ns {
        (report.gaps_shortened, report.time_removed_ns) = shorten_gaps(requests, max_gap_ns);
    }
    report.requests_after = requests.len() as u64;
    report
}

type Key = (RequestKind, u64, u64);

/// Kept requests of the last window: arrival by key, plus the keys in arrival order so that
/// expired entries can be pruned from the front. The map is only looked up, never iterated,
/// so its hash order cannot affect results.
struct RecentRequests {
    window_ns: u64,
    arrival_by_key: HashMap<Key, u64>,
    in_order: VecDeque<(u64, Key)>,
}

impl RecentRequests {
    fn prune(&mut self, now_ns: u64) {
        while let Some(&(arrival_ns, key)) = self.in_order.front() {
            if now_ns - arrival_ns <= self.window_ns {
                break;
            }
            self.in_order.pop_front();
            if self.arrival_by_key.get(&key) == Some(&arrival_ns) {
                self.arrival_by_key.remove(&key);
            }
        }
    }

    /// True if `request` duplicates a kept request; otherwise remembers it as kept.
    fn is_duplicate(&mut self, request: &TraceRequest) -> bool {
        self.prune(request.arrival_ns);
        let key = (request.kind, request.offset_bytes, request.len_bytes);
        if self.arrival_by_key.contains_key(&key) {
            return true;
        }
        self.arrival_by_key.insert(key, request.arrival_ns);
        self.in_order.push_back((request.arrival_ns, key));
        false
    }
}

fn drop_duplicates(requests: &mut Vec<TraceRequest>, window_ns: u64) -> (u64, u64) {
    let mut recent = RecentRequests {
        window_ns,
        arrival_by_key: HashMap::new(),
        in_order: VecDeque::new(),
    };
    let (mut dropped, mut dropped_bytes) = (0u64, 0u64);
    requests.retain(|request| {
        if request.kind == RequestKind::Flush || !recent.is_duplicate(request) {
            return true;
        }
        dropped += 1;
        dropped_bytes = dropped_bytes.saturating_add(request.len_bytes);
        false
    });
    (dropped, dropped_bytes)
}

fn shorten_gaps(requests: &mut [TraceRequest], max_gap_ns: u64) -> (u64, u64) {
    let Some(first) = requests.first() else {
        return (0, 0);
    };
    let mut previous_ns = first.arrival_ns;
    let (mut shortened, mut removed_ns) = (0u64, 0u64);
    for request in requests.iter_mut() {
        let original_ns = request.arrival_ns;
        let gap_ns = original_ns - previous_ns;
        if gap_ns > max_gap_ns {
            shortened += 1;
            removed_ns += gap_ns - max_gap_ns;
        }
        previous_ns = original_ns;
        request.arrival_ns = original_ns - removed_ns;
    }
    (shortened, removed_ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(arrival_ns: u64, kind: RequestKind, offset_bytes: u64) -> TraceRequest {
        TraceRequest {
            arrival_ns,
            kind,
            offset_bytes,
            len_bytes: 4096,
            hints: Default::default(),
            process: 0,
        }
    }

    #[test]
    fn kept_requests_anchor_the_window() {
        let mut requests: Vec<TraceRequest> = [0, 6, 12, 18]
            .map(|t| req(t, RequestKind::Write, 0))
            .to_vec();
        assert_eq!(drop_duplicates(&mut requests, 10), (2, 8192));
        let times: Vec<u64> = requests.iter().map(|r| r.arrival_ns).collect();
        assert_eq!(times, [0, 12]);
    }

    #[test]
    fn window_is_inclusive_and_kinds_differ() {
        let mut requests = vec![
            req(0, RequestKind::Write, 0),
            req(10, RequestKind::Write, 0),
            req(10, RequestKind::Read, 0),
            req(11, RequestKind::Flush, 0),
            req(12, RequestKind::Flush, 0),
        ];
        requests[3].len_bytes = 0;
        requests[4].len_bytes = 0;
        assert_eq!(drop_duplicates(&mut requests, 10), (1, 4096));
        assert_eq!(requests.len(), 4);
    }

    #[test]
    fn gaps_are_cut_to_the_limit() {
        let mut requests: Vec<TraceRequest> = [0, 5, 105, 106, 1006]
            .map(|t| req(t, RequestKind::Read, t))
            .to_vec();
        assert_eq!(shorten_gaps(&mut requests, 10), (2, 90 + 890));
        let times: Vec<u64> = requests.iter().map(|r| r.arrival_ns).collect();
        assert_eq!(times, [0, 5, 15, 16, 26]);
    }

    #[test]
    fn report_reads_like_a_sentence() {
        let report = CleanReport {
            duplicates_dropped: 12_345,
            duplicate_bytes_dropped: 0,
            gaps_shortened: 17,
            time_removed_ns: (5 * 3600 + 2 * 60) * 1_000_000_000,
            requests_before: 152_407,
            requests_after: 140_062,
        };
        assert_eq!(
            report.to_string(),
            "dropped 12,345 duplicate requests (8.1%), shortened 17 idle gaps removing 5h 2m"
        );
        let one = CleanReport {
            duplicates_dropped: 1,
            gaps_shortened: 1,
            requests_before: 4,
            ..CleanReport::default()
        };
        assert_eq!(
            one.to_string(),
            "dropped 1 duplicate request (25.0%), shortened 1 idle gap removing 0ns"
        );
    }
}
