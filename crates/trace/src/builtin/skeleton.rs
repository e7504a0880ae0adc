//! Pass 1: what each request of an app is (its target and size), before any address or time.
//!
//! The request count and the write count are met exactly: of the `requests` slots, exactly
//! `reads` are reads, spread uniformly (selection sampling), and the writes are taken in
//! order from a stream of events (SQLite transactions, new files, ...) whose last one is cut
//! where the count is reached. The volume is then met by scaling the sizes of the elastic
//! files (media), see [`calibrate`].

use std::collections::VecDeque;

use flashstack_sim::Rng;

use super::profile::{
    AppendArea, Dist, Event, Profile, ReadKind, CHECKPOINT_BLOCKS, CHECKPOINT_PERMILLE,
    DB_READ_PAGES, EXEC_READ_PAGES, MAX_REQUEST_PAGES, PERIODIC_COMMIT_BLOCKS,
    TEXT_COMMIT_PERMILLE, TEXT_PAGES, TXN_COMMIT_BLOCKS,
};

/// What a request touches; the placement pass turns it into an address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// jbd2 blocks (descriptor + metadata, or a commit block) at the journal head.
    FsJournal,
    /// A metadata block checkpointed in place.
    FsMeta,
    /// A SQLite rollback journal write: header plus the original pages.
    DbJournal(u8),
    /// The journal header zeroed at commit (PERSIST mode).
    DbJournalHeader(u8),
    /// A database page changed in place.
    DbPage(u8),
    /// New database pages (rows, or BLOB overflow pages).
    DbAppend(u8),
    /// A small file rewritten in place.
    Text,
    /// A chunk of new file `file` of stream `stream`.
    File {
        stream: u8,
        file: u32,
    },
    ReadDb(u8),
    ReadAppended(u8),
    ReadFile(u8),
    ReadExec,
}

impl Target {
    pub(crate) fn is_read(self) -> bool {
        matches!(
            self,
            Target::ReadDb(_) | Target::ReadAppended(_) | Target::ReadFile(_) | Target::ReadExec
        )
    }
}

/// One request of the skeleton.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Skel {
    pub target: Target,
    pub pages: u32,
    /// Requests of one event share a burst (reads join the burst under way).
    pub burst: u32,
    /// The elastic group (a media file or a BLOB) whose size calibration may change.
    pub group: Option<u32>,
}

/// The skeleton of one app's session.
#[derive(Clone, Debug)]
pub(crate) struct Skeleton {
    pub requests: Vec<Skel>,
    /// File ids handed out (`Target::File::file` is below this).
    pub files: u32,
    /// Mean factor applied to the nominal sizes of elastic files.
    pub elastic_scale: f64,
}

/// Weighted draw from a distribution.
pub(crate) fn draw(rng: &mut Rng, dist: Dist) -> u32 {
    let total: u64 = dist.iter().map(|&(_, w)| u64::from(w)).sum();
    let mut point = rng.below(total.max(1));
    for &(value, weight) in dist {
        if point < u64::from(weight) {
            return value;
        }
        point -= u64::from(weight);
    }
    dist.last().map_or(1, |&(v, _)| v)
}

fn draw_weighted<T: Copy>(rng: &mut Rng, items: &[(T, u32)]) -> Option<T> {
    let total: u64 = items.iter().map(|&(_, w)| u64::from(w)).sum();
    let mut point = rng.below(total.max(1));
    for &(item, weight) in items {
        if point < u64::from(weight) {
            return Some(item);
        }
        point -= u64::from(weight);
    }
    items.last().map(|&(item, _)| item)
}

/// The event generator of one app.
struct Events<'a> {
    profile: &'a Profile,
    choice: Rng,
    size: Rng,
    queue: VecDeque<Skel>,
    burst: u32,
    files: u32,
    groups: u32,
    /// Writes handed out, and scheduled events started.
    writes: u64,
    scheduled: u32,
}

impl Events<'_> {
    fn push(&mut self, target: Target, pages: u32, group: Option<u32>) {
        self.queue.push_back(Skel {
            target,
            pages,
            burst: self.burst,
            group,
        });
    }

    fn new_group(&mut self) -> u32 {
        self.groups += 1;
        self.groups - 1
    }

    fn start(&mut self, event: Event) {
        self.burst += 1;
        self.event(event, 0);
    }

    fn event(&mut self, event: Event, depth: u32) {
        match event {
            Event::Txn(db) => self.txn(db),
            Event::File(stream) => self.file(stream, depth),
            Event::Text => self.text(),
            Event::Commit => self.periodic_commit(),
        }
    }

    /// The next write: from the event under way, or from a new one (the scheduled event
    /// when its turn has come, else one drawn by weight). `writes` is the session's total.
    fn next_write(&mut self, writes: u64) -> Result<Skel, String> {
        if self.queue.is_empty() {
            let event = match self.profile.scheduled {
                Some((event, count))
                    if self.scheduled < count
                        && self.writes * u64::from(count) >= u64::from(self.scheduled) * writes =>
                {
                    self.scheduled += 1;
                    event
                }
                _ => draw_weighted(&mut self.choice, self.profile.events).unwrap_or(Event::Text),
            };
            self.start(event);
        }
        let next = self
            .queue
            .pop_front()
            .ok_or_else(|| format!("event {} of the profile writes nothing", self.burst))?;
        self.writes += 1;
        Ok(next)
    }

    fn chance(&mut self, permille: u32) -> bool {
        self.choice.below(1000) < u64::from(permille)
    }

    /// A PERSIST-mode SQLite transaction: journal (header + original pages), the header
    /// again (record count), the pages in place, new pages if any, the ext4 commit an fsync
    /// may force, the header reset.
    fn txn(&mut self, db: u8) {
        let Some(spec) = self.profile.dbs.get(usize::from(db)) else {
            return;
        };
        let modified = draw(&mut self.size, spec.modified);
        self.push(Target::DbJournal(db), 1 + modified, None);
        // synchronous=FULL: after syncing the records, SQLite writes the record count into
        // the header and syncs again.
        self.push(Target::DbJournalHeader(db), 1, None);
        for _ in 0..modified {
            self.push(Target::DbPage(db), 1, None);
        }
        if self.chance(spec.append_permille) {
            let pages = draw(&mut self.size, spec.appended);
            let group =
                matches!(spec.append_area, AppendArea::Blobs { .. }).then(|| self.new_group());
            self.push(Target::DbAppend(db), pages, group);
        }
        if self.chance(spec.commit_permille) {
            self.fs_commit(TXN_COMMIT_BLOCKS);
        }
        self.push(Target::DbJournalHeader(db), 1, None);
    }

    /// A new file, written in chunks as writeback issues them, then its follow-ups.
    fn file(&mut self, stream: u8, depth: u32) {
        let Some(spec) = self.profile.streams.get(usize::from(stream)) else {
            return;
        };
        let total = draw(&mut self.size, spec.file_pages);
        let file = self.files;
        self.files += 1;
        let group = spec.elastic.then(|| self.new_group());
        let chunk = spec.chunk_pages.clamp(1, MAX_REQUEST_PAGES);
        let mut left = total;
        while left > 0 {
            let pages = left.min(chunk);
            self.push(Target::File { stream, file }, pages, group);
            left -= pages;
        }
        if self.chance(spec.commit_permille) {
            self.fs_commit(TXN_COMMIT_BLOCKS);
        }
        if depth == 0 {
            for &then in spec.then {
                self.event(then, depth + 1);
            }
        }
    }

    fn text(&mut self) {
        let pages = draw(&mut self.size, TEXT_PAGES);
        self.push(Target::Text, pages, None);
        if self.chance(TEXT_COMMIT_PERMILLE) {
            self.fs_commit(TXN_COMMIT_BLOCKS);
        }
    }

    /// jbd2: descriptor + metadata blocks in one request, then the commit block.
    fn fs_commit(&mut self, blocks: Dist) {
        let body = 1 + draw(&mut self.size, blocks);
        self.push(Target::FsJournal, body, None);
        self.push(Target::FsJournal, 1, None);
    }

    fn periodic_commit(&mut self) {
        self.fs_commit(PERIODIC_COMMIT_BLOCKS);
        if self.chance(CHECKPOINT_PERMILLE) {
            for _ in 0..draw(&mut self.size, CHECKPOINT_BLOCKS) {
                self.push(Target::FsMeta, 1, None);
            }
        }
    }
}

/// A read of the kind the profile's weights pick, with its size.
fn read(profile: &Profile, rng: &mut Rng, burst: u32) -> Skel {
    let kind = draw_weighted(rng, profile.reads).unwrap_or(ReadKind::Exec);
    let (target, dist) = match kind {
        ReadKind::Db(db) => {
            let dist = profile
                .dbs
                .get(usize::from(db))
                .map_or(DB_READ_PAGES, |d| d.read_pages);
            (Target::ReadDb(db), dist)
        }
        ReadKind::Appended(db) => {
            let dist = profile
                .dbs
                .get(usize::from(db))
                .map_or(DB_READ_PAGES, |d| d.appended);
            (Target::ReadAppended(db), dist)
        }
        ReadKind::File(stream) => {
            let dist = profile
                .streams
                .get(usize::from(stream))
                .map_or(DB_READ_PAGES, |s| s.read_pages);
            (Target::ReadFile(stream), dist)
        }
        ReadKind::Exec => (Target::ReadExec, EXEC_READ_PAGES),
    };
    Skel {
        target,
        pages: draw(rng, dist),
        burst,
        group: None,
    }
}

/// The skeleton of `profile` with exactly `requests` requests of which `writes` are
/// writes, its elastic sizes scaled so the volume is `volume_pages` (to the page).
pub(crate) fn skeleton(
    profile: &Profile,
    requests: u64,
    writes: u64,
    volume_pages: u64,
    rng: &mut Rng,
) -> Result<Skeleton, String> {
    let mut slots = rng.fork(1);
    let mut reads_rng = rng.fork(2);
    let mut events = Events {
        profile,
        choice: rng.fork(3),
        size: rng.fork(4),
        queue: VecDeque::new(),
        burst: 0,
        files: 0,
        groups: 0,
        writes: 0,
        scheduled: 0,
    };
    let mut out = Vec::with_capacity(requests as usize);
    let mut reads_left = requests - writes;
    for slot in 0..requests {
        if slots.below(requests - slot) < reads_left {
            reads_left -= 1;
            out.push(read(profile, &mut reads_rng, events.burst));
        } else {
            out.push(events.next_write(writes)?);
        }
    }
    let elastic_scale = calibrate(&mut out, volume_pages)?;
    Ok(Skeleton {
        requests: out,
        files: events.files,
        elastic_scale,
    })
}

/// The requests of each elastic group, in order (groups appear in increasing order).
fn groups(requests: &[Skel]) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut current = None;
    for (i, r) in requests.iter().enumerate() {
        let Some(g) = r.group else { continue };
        if current != Some(g) {
            groups.push(Vec::new());
            current = Some(g);
        }
        if let Some(last) = groups.last_mut() {
            last.push(i);
        }
    }
    groups
}

/// Scales the elastic groups so that the total is `volume_pages`: one factor for all,
/// each group kept between one page per request and the largest request per request, the
/// rounding carried from group to group so the total is met to the page. Returns the
/// factor.
pub(crate) fn calibrate(requests: &mut [Skel], volume_pages: u64) -> Result<f64, String> {
    let groups = groups(requests);
    let fixed: u64 = requests
        .iter()
        .filter(|r| r.group.is_none())
        .map(|r| u64::from(r.pages))
        .sum();
    let bounds: Vec<(f64, f64, f64)> = groups
        .iter()
        .map(|members| {
            let nominal: u32 = members.iter().map(|&i| requests[i].pages).sum();
            let n = members.len() as f64;
            (f64::from(nominal), n, n * f64::from(MAX_REQUEST_PAGES))
        })
        .collect();
    let want = volume_pages as f64 - fixed as f64;
    let (low, high): (f64, f64) = bounds
        .iter()
        .fold((0.0, 0.0), |(l, h), b| (l + b.1, h + b.2));
    if groups.is_empty() || want < low || want > high {
        return Err(format!(
            "the fixed requests carry {} pages and the media files {low:.0} to {high:.0}; \
             the volume needs {volume_pages} pages in all",
            fixed
        ));
    }
    let total_at = |f: f64| -> f64 {
        bounds
            .iter()
            .map(|&(nom, lo, hi)| (f * nom).clamp(lo, hi))
            .sum()
    };
    let (mut lo_f, mut hi_f) = (0.0, 1.0);
    while total_at(hi_f) < want {
        hi_f *= 2.0;
    }
    for _ in 0..100 {
        let mid = (lo_f + hi_f) / 2.0;
        if total_at(mid) < want {
            lo_f = mid;
        } else {
            hi_f = mid;
        }
    }
    let factor = hi_f;
    let mut carried = 0.0;
    let mut assigned = 0u64;
    for (members, &(nominal, lo, hi)) in groups.iter().zip(&bounds) {
        carried += (factor * nominal).clamp(lo, hi);
        let size = (carried.round() as u64).saturating_sub(assigned);
        assigned += size;
        spread(requests, members, size as u32);
    }
    Ok(factor)
}

/// Splits `pages` over the requests of one group as evenly as possible.
fn spread(requests: &mut [Skel], members: &[usize], pages: u32) {
    let n = members.len() as u32;
    for (j, &i) in members.iter().enumerate() {
        requests[i].pages = pages / n + u32::from((j as u32) < pages % n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skel(pages: u32, group: Option<u32>) -> Skel {
        Skel {
            target: Target::Text,
            pages,
            burst: 0,
            group,
        }
    }

    #[test]
    fn calibration_meets_the_volume_to_the_page_within_bounds() {
        let mut requests = vec![
            skel(3, None),
            skel(8, Some(0)),
            skel(8, Some(0)),
            skel(2, Some(1)),
            skel(1, None),
            skel(40, Some(2)),
        ];
        let factor = calibrate(&mut requests, 100).unwrap();
        let total: u32 = requests.iter().map(|r| r.pages).sum();
        assert_eq!(total, 100);
        assert!(factor > 1.0);
        assert!(requests
            .iter()
            .all(|r| (1..=MAX_REQUEST_PAGES).contains(&r.pages)));
        // Unreachable volumes are refused, not approximated.
        assert!(calibrate(&mut requests, 3).is_err());
        assert!(calibrate(&mut requests, 10_000).is_err());
    }

    #[test]
    fn draws_follow_the_weights() {
        let mut rng = Rng::new(1);
        let dist: Dist = &[(1, 3), (7, 1)];
        let sevens = (0..40_000).filter(|_| draw(&mut rng, dist) == 7).count();
        assert!((sevens as f64 / 40_000.0 - 0.25).abs() < 0.01, "{sevens}");
    }
}
