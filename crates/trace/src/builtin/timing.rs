//! Pass 3: arrival times. Requests of one event (a SQLite commit, a file's writeback) follow
//! each other within about a millisecond, as each waits for the previous fsync on the
//! traced phone; events are separated by background pauses and, one time in five, by user
//! think time. The pauses are scaled so that the session lasts the profile's length. The
//! multi-app workload switches apps every few sessions with a pause of 5–30 s.

use std::ops::Range;

use flashstack_sim::Rng;

use super::skeleton::Skel;

/// Gap between requests of one event: a floor plus an exponential part.
const INTRA_MIN_NS: u64 = 200_000;
const INTRA_MEAN_NS: f64 = 800_000.0;
/// Share (%) of pauses between events that are user think time, and how much longer
/// they are on average than background pauses.
const THINK_PERCENT: u64 = 20;
const THINK_FACTOR: f64 = 15.0;
/// Pause when the user switches apps (multi-app workload).
const SWITCH_MIN_NS: u64 = 5_000_000_000;
const SWITCH_SPREAD_NS: u64 = 25_000_000_000;
/// Sessions each app's stream is cut into in the multi-app workload.
pub(crate) const SESSIONS_PER_APP: usize = 3;

fn exponential(rng: &mut Rng) -> f64 {
    -(1.0 - rng.unit_f64()).ln()
}

/// The gap before each request (the first is 0), for a session of about `session_ns`.
pub(crate) fn gaps(requests: &[Skel], session_ns: u64, rng: &mut Rng) -> Vec<u64> {
    let mut gaps = vec![0u64; requests.len()];
    let mut pauses = vec![0f64; requests.len()];
    for i in 1..requests.len() {
        if requests[i].burst == requests[i - 1].burst {
            gaps[i] = INTRA_MIN_NS + (exponential(rng) * INTRA_MEAN_NS) as u64;
        } else {
            let think = rng.below(100) < THINK_PERCENT;
            pauses[i] = exponential(rng) * if think { THINK_FACTOR } else { 1.0 };
        }
    }
    let within: u64 = gaps.iter().sum();
    let units: f64 = pauses.iter().sum();
    let scale = if units > 0.0 {
        session_ns.saturating_sub(within) as f64 / units
    } else {
        0.0
    };
    for (gap, pause) in gaps.iter_mut().zip(&pauses) {
        if *pause > 0.0 {
            *gap = (pause * scale).round() as u64;
        }
    }
    gaps
}

/// `parts` consecutive sessions of about equal request counts, each cut where an event
/// ends.
pub(crate) fn sessions(requests: &[Skel], parts: usize) -> Vec<Range<usize>> {
    let n = requests.len();
    let mut cuts = vec![0];
    for k in 1..parts {
        let mut cut = (k * n / parts).max(*cuts.last().unwrap_or(&0));
        while cut > 0 && cut < n && requests[cut].burst == requests[cut - 1].burst {
            cut += 1;
        }
        cuts.push(cut.min(n));
    }
    cuts.push(n);
    cuts.windows(2).map(|w| w[0]..w[1]).collect()
}

/// Round by round, every app's next session in a shuffled order, each with the pause
/// before it (0 for the first).
pub(crate) fn interleave(
    sessions: &[Vec<Range<usize>>],
    rng: &mut Rng,
) -> Vec<(usize, Range<usize>, u64)> {
    let rounds = sessions.iter().map(Vec::len).max().unwrap_or(0);
    let mut order = Vec::new();
    for round in 0..rounds {
        let mut apps: Vec<usize> = (0..sessions.len()).collect();
        for i in (1..apps.len()).rev() {
            apps.swap(i, rng.below(i as u64 + 1) as usize);
        }
        for app in apps {
            let Some(range) = sessions[app].get(round).filter(|r| !r.is_empty()) else {
                continue;
            };
            let pause = if order.is_empty() {
                0
            } else {
                SWITCH_MIN_NS + rng.below(SWITCH_SPREAD_NS)
            };
            order.push((app, range.clone(), pause));
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::super::skeleton::Target;
    use super::*;

    fn bursts(ids: &[u32]) -> Vec<Skel> {
        ids.iter()
            .map(|&burst| Skel {
                target: Target::Text,
                pages: 1,
                burst,
                group: None,
            })
            .collect()
    }

    #[test]
    fn gaps_fill_the_session_and_keep_bursts_tight() {
        let requests = bursts(&[1, 1, 1, 2, 2, 3, 4, 4, 4, 4, 5]);
        let gaps = gaps(&requests, 10_000_000_000, &mut Rng::new(1));
        assert_eq!(gaps[0], 0);
        let total: u64 = gaps.iter().sum();
        assert!(total.abs_diff(10_000_000_000) < 10, "{total}");
        assert!(gaps[1] >= INTRA_MIN_NS && gaps[1] < 50_000_000);
    }

    #[test]
    fn sessions_cut_between_events() {
        let requests = bursts(&[1, 1, 1, 2, 2, 2, 3, 3, 3]);
        let s = sessions(&requests, 3);
        assert_eq!(s, vec![0..3, 3..6, 6..9]);
        let s = sessions(&bursts(&[1, 1, 1, 1, 1, 2]), 3);
        assert_eq!(s, vec![0..5, 5..5, 5..6]);
    }
}
