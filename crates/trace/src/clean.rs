//! Removal of two capture artefacts of the public Pixel 6a traces: requests logged twice
//! (the same request under two process names within about 10 ms, e.g. a kernel worker and
//! the app) and implausibly long idle spans. Both distort an emulation: duplicates double
//! the write stress, and days of idle time let background work (GC, flushes) run for free.
//!
//! A process that writes the same sector again a few ms later is not an artefact: apps and
//! file systems really do rewrite (a journal block, a database page). Such repeats are kept
//! and counted apart, so a user can see how many of each there were.

use std::collections::{HashMap, VecDeque};
use std::fmt;

use flashstack_block::RequestKind;
use serde::Serialize;

use crate::{human, Trace, TraceRequest};

/// What [`clean`] removes. `None` turns a step off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CleanOptions {
    /// A request with the same kind, offset and length as a kept request of *another*
    /// process that arrived at most this long before it is a duplicate and is dropped.
    pub dedup_window_ns: Option<u64>,
    /// Idle gaps between consecutive arrivals longer than this are shortened to it.
    pub max_gap_ns: Option<u64>,
}

/// The idle gap above which [`CleanOptions::default`] shortens, and above which reports
/// count a gap as idle time worth mentioning.
pub const IDLE_GAP_NS: u64 = 10_000_000_000;

impl Default for CleanOptions {
    /// 10 ms (the double-logging window seen in the Pixel traces) and 10 s (longer than any
    /// idle period a phone's storage needs to finish its background work in our model).
    fn default() -> Self {
        CleanOptions {
            dedup_window_ns: Some(10_000_000),
            max_gap_ns: Some(IDLE_GAP_NS),
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
    /// Requests logged a second time under another process name, dropped.
    pub duplicates_dropped: u64,
    pub duplicate_bytes_dropped: u64,
    /// Writes of the same extent by the same process within the window: genuine rewrites,
    /// kept.
    pub rewrites_kept: u64,
    /// Reads and trims of the same extent by the same process within the window, kept.
    pub other_repeats_kept: u64,
    pub gaps_shortened: u64,
    /// The longest gap shortened (before shortening); 0 if none.
    pub longest_gap_ns: u64,
    pub time_removed_ns: u64,
    pub requests_before: u64,
    pub requests_after: u64,
}

impl fmt::Display for CleanReport {
    /// `dropped 12,345 requests logged twice by two processes (8.1%), kept 2,001 rewrites by
    /// the same process, shortened 17 idle gaps (longest 3d 4h) removing 5h 2m`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dropped = self.duplicates_dropped;
        let gaps = self.gaps_shortened;
        write!(
            f,
            "dropped {} {} logged twice by two processes ({:.1}%), kept {} {} by the same \
             process, shortened {} idle {}",
            human::count(dropped),
            human::plural(dropped, "request", "requests"),
            human::percent(dropped, self.requests_before),
            human::count(self.rewrites_kept),
            human::plural(self.rewrites_kept, "rewrite", "rewrites"),
            human::count(gaps),
            human::plural(gaps, "gap", "gaps"),
        )?;
        if gaps > 0 {
            write!(f, " (longest {})", human::duration(self.longest_gap_ns))?;
        }
        write!(f, " removing {}", human::duration(self.time_removed_ns))
    }
}

/// Idle gaps of a request stream longer than a threshold, as found (nothing changed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct IdleGaps {
    pub threshold_ns: u64,
    /// Gaps between consecutive arrivals longer than the threshold.
    pub count: u64,
    pub longest_ns: u64,
    /// Their summed length.
    pub total_ns: u64,
}

/// The gaps between consecutive arrivals of `requests` (in arrival order) longer than
/// `threshold_ns`.
pub fn idle_gaps(requests: &[TraceRequest], threshold_ns: u64) -> IdleGaps {
    let mut gaps = IdleGaps {
        threshold_ns,
        ..IdleGaps::default()
    };
    for pair in requests.windows(2) {
        let gap_ns = pair[1].arrival_ns.saturating_sub(pair[0].arrival_ns);
        if gap_ns > threshold_ns {
            gaps.count += 1;
            gaps.longest_ns = gaps.longest_ns.max(gap_ns);
            gaps.total_ns = gaps.total_ns.saturating_add(gap_ns);
        }
    }
    gaps
}

/// Drops duplicates, then shortens long idle gaps, in place, and keeps the report in
/// [`Trace::clean_report`].
///
/// A duplicate is a read, write or trim with the same kind, offset and length as a request
/// of another process that was kept and arrived at most `dedup_window_ns` earlier: the
/// same request logged twice, once per process name. The same extent repeated by the same
/// process is a genuine repeat (a rewrite, for a write) and is kept; it becomes the request
/// later copies are compared with. Comparing with kept requests only means a request
/// logged again every 6 ms with a 10 ms window keeps every other copy rather than
/// collapsing into one. Flushes are never duplicates: they carry no address to tell two of
/// them apart.
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
        drop_duplicates(requests, window_ns, &mut report);
    }
    if let Some(max_gap_ns) = opts.max_gap_ns {
        report.longest_gap_ns = idle_gaps(requests, max_gap_ns).longest_ns;
        (report.gaps_shortened, report.time_removed_ns) = shorten_gaps(requests, max_gap_ns);
    }
    report.requests_after = requests.len() as u64;
    trace.clean_report = Some(report);
    report
}

type Key = (RequestKind, u64, u64);

/// Kept requests of the last window: arrival and process by key, plus the keys in arrival
/// order so that expired entries can be pruned from the front. The map is only looked up,
/// never iterated, so its hash order cannot affect results.
struct RecentRequests {
    window_ns: u64,
    kept_by_key: HashMap<Key, (u64, u32)>,
    in_order: VecDeque<(u64, Key)>,
}

/// What [`RecentRequests::classify`] makes of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seen {
    /// No kept request of the window has its extent.
    New,
    /// A kept request of the same process has it: a genuine repeat, kept.
    Repeat,
    /// A kept request of another process has it: the same request logged twice.
    Duplicate,
}

impl RecentRequests {
    fn prune(&mut self, now_ns: u64) {
        while let Some(&(arrival_ns, key)) = self.in_order.front() {
            if now_ns - arrival_ns <= self.window_ns {
                break;
            }
            self.in_order.pop_front();
            if self.kept_by_key.get(&key).map(|k| k.0) == Some(arrival_ns) {
                self.kept_by_key.remove(&key);
            }
        }
    }

    /// Whether `request` repeats or duplicates a kept request; remembers it unless it is a
    /// duplicate.
    fn classify(&mut self, request: &TraceRequest) -> Seen {
        self.prune(request.arrival_ns);
        let key = (request.kind, request.offset_bytes, request.len_bytes);
        let seen = match self.kept_by_key.get(&key) {
            None => Seen::New,
            Some(&(_, process)) if process == request.process => Seen::Repeat,
            Some(_) => return Seen::Duplicate,
        };
        self.kept_by_key
            .insert(key, (request.arrival_ns, request.process));
        self.in_order.push_back((request.arrival_ns, key));
        seen
    }
}

fn drop_duplicates(requests: &mut Vec<TraceRequest>, window_ns: u64, report: &mut CleanReport) {
    let mut recent = RecentRequests {
        window_ns,
        kept_by_key: HashMap::new(),
        in_order: VecDeque::new(),
    };
    requests.retain(|request| {
        if request.kind == RequestKind::Flush {
            return true;
        }
        match recent.classify(request) {
            Seen::New => true,
            Seen::Repeat => {
                match request.kind {
                    RequestKind::Write => report.rewrites_kept += 1,
                    _ => report.other_repeats_kept += 1,
                }
                true
            }
            Seen::Duplicate => {
                report.duplicates_dropped += 1;
                report.duplicate_bytes_dropped = report
                    .duplicate_bytes_dropped
                    .saturating_add(request.len_bytes);
                false
            }
        }
    });
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

    fn dedup(requests: &mut Vec<TraceRequest>, window_ns: u64) -> CleanReport {
        let mut report = CleanReport::default();
        drop_duplicates(requests, window_ns, &mut report);
        report
    }

    #[test]
    fn kept_requests_anchor_the_window() {
        // Two processes log the same write every 6 ns, taking turns.
        let mut requests: Vec<TraceRequest> = [0, 6, 12, 18]
            .map(|t| TraceRequest {
                process: (t / 6 % 2) as u32,
                ..req(t, RequestKind::Write, 0)
            })
            .to_vec();
        let report = dedup(&mut requests, 10);
        assert_eq!(
            (report.duplicates_dropped, report.duplicate_bytes_dropped),
            (2, 8192)
        );
        let times: Vec<u64> = requests.iter().map(|r| r.arrival_ns).collect();
        assert_eq!(times, [0, 12]);
    }

    #[test]
    fn the_same_process_repeating_itself_is_kept() {
        let mut requests: Vec<TraceRequest> =
            [0, 3, 6].map(|t| req(t, RequestKind::Write, 0)).to_vec();
        requests.push(req(7, RequestKind::Read, 0));
        requests.push(req(8, RequestKind::Read, 0));
        // Another process logs the last rewrite again: that copy alone is dropped.
        requests.push(TraceRequest {
            process: 1,
            ..req(9, RequestKind::Write, 0)
        });
        let report = dedup(&mut requests, 10);
        assert_eq!(report.duplicates_dropped, 1);
        assert_eq!(report.rewrites_kept, 2);
        assert_eq!(report.other_repeats_kept, 1);
        assert_eq!(requests.len(), 5);
    }

    #[test]
    fn window_is_inclusive_and_kinds_differ() {
        let mut requests = vec![
            req(0, RequestKind::Write, 0),
            TraceRequest {
                process: 1,
                ..req(10, RequestKind::Write, 0)
            },
            req(10, RequestKind::Read, 0),
            req(11, RequestKind::Flush, 0),
            req(12, RequestKind::Flush, 0),
        ];
        requests[3].len_bytes = 0;
        requests[4].len_bytes = 0;
        let report = dedup(&mut requests, 10);
        assert_eq!(
            (report.duplicates_dropped, report.duplicate_bytes_dropped),
            (1, 4096)
        );
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
            rewrites_kept: 2_001,
            gaps_shortened: 17,
            longest_gap_ns: (3 * 86_400 + 4 * 3600) * 1_000_000_000,
            time_removed_ns: (5 * 3600 + 2 * 60) * 1_000_000_000,
            requests_before: 152_407,
            requests_after: 140_062,
            ..CleanReport::default()
        };
        assert_eq!(
            report.to_string(),
            "dropped 12,345 requests logged twice by two processes (8.1%), kept 2,001 \
             rewrites by the same process, shortened 17 idle gaps (longest 3d 4h) removing 5h 2m"
        );
        let one = CleanReport {
            duplicates_dropped: 1,
            rewrites_kept: 1,
            requests_before: 4,
            ..CleanReport::default()
        };
        assert_eq!(
            one.to_string(),
            "dropped 1 request logged twice by two processes (25.0%), kept 1 rewrite by the \
             same process, shortened 0 idle gaps removing 0ns"
        );
    }

    #[test]
    fn idle_gaps_are_counted_without_changing_anything() {
        let requests: Vec<TraceRequest> = [0, 5, 105, 106, 1006]
            .map(|t| req(t, RequestKind::Read, t))
            .to_vec();
        let gaps = idle_gaps(&requests, 10);
        assert_eq!((gaps.count, gaps.longest_ns, gaps.total_ns), (2, 900, 1000));
    }
}
