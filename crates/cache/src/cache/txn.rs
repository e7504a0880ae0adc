//! MobiFS's versioned cache transactions (VCT), the mechanism (`docs/mobifs.md`).
//!
//! 1. Every file belongs to one app ([`PageCache::set_owner`]; app 0 by default). A write
//!    dirties the page in the page table as usual and makes it a member of its app's *open*
//!    transaction; writing the same page again within the transaction coalesces.
//! 2. fsync/fdatasync (the policy answers [`FsyncDecision::Seal`](crate::FsyncDecision))
//!    *seals* the app's open transaction in memory: its member pages are frozen as the
//!    transaction's version and the call returns at memory speed.
//! 3. Writing a frozen page first copies it into the sealed transaction's versions
//!    (copy-on-write, [`FileVersion`]); the app never waits for a checkpoint. A page's
//!    version as of a sealed transaction is its copy there if one was made, else the page
//!    table's page (unchanged since).
//! 4. A checkpoint persists a prefix of each app's sealed transactions in one
//!    [`Backing::commit_batch`] (all or nothing): for every page the newest version in
//!    the prefix, every file cut to the smallest size it had and set to its size at the
//!    prefix's last seal. Then the prefix's versions are freed and pages no open
//!    transaction holds become clean (evictable).
//! 5. Truncates are transactional too: nothing reaches the file system before the
//!    checkpoint; until then pages past the smallest pending size read as zeros.
//! 6. When the cache is full of dirty pages and versions, sealed transactions are
//!    checkpointed; if none is sealed, an app's open transaction is sealed first (a
//!    *forced* seal, at a call boundary of that app: the writer's own at the start of its
//!    write) — the page limit holds.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use flashstack_sim::Nanos;
use serde::{Deserialize, Serialize};

use super::{PageCache, PAGE_BYTES};
use crate::backing::BatchCommit;
use crate::policy::{AppId, CheckpointReason, CheckpointScope, TxView};
use crate::versions::FileVersion;
use crate::{Backing, CacheError, Ino, Page, WritebackPolicy, WritebackReason};

/// Counters of the transactions (all zero without MobiFS, and then not serialized).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxMetrics {
    /// Transactions sealed by fsync/fdatasync/sync.
    pub seals: u64,
    /// Transactions sealed by memory pressure.
    pub forced_seals: u64,
    pub checkpoints: u64,
    /// Pages the checkpoints wrote.
    pub checkpoint_pages: u64,
    /// Page writes that hit a page already in the app's open transaction.
    pub coalesced_writes: u64,
    /// Copies of frozen pages made because the app wrote them (copy-on-write).
    pub cow_copies: u64,
    /// The most versions held at once.
    pub versions_high_water: u64,
    /// The longest a sealed transaction waited for its checkpoint to complete.
    pub staleness_ns_max: u64,
    /// Sum over persisted transactions of that wait (for the mean).
    pub staleness_ns_total: u64,
    pub persisted_transactions: u64,
    /// Persisted transactions by staleness in whole milliseconds (rounded up), for
    /// percentiles (`staleness_ns_p99`); at most one entry per millisecond of the bound.
    /// In memory only.
    #[serde(skip)]
    pub staleness_ms_counts: BTreeMap<u64, u64>,
    /// Checkpoints that completed past the staleness bound of a transaction they held.
    pub staleness_bound_overruns: u64,
    /// Transactions the e-curve's peak closed (`seal = "ecurve"`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub peak_closes: u64,
    /// Transactions the staleness bound closed (`seal = "ecurve"`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub bound_closes: u64,
    /// Transactions closed by memory pressure, sync or the screen going off while the
    /// e-curve kept them open (`seal = "ecurve"`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub forced_closes: u64,
    /// E-curve samples taken (`seal = "ecurve"`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub ecurve_samples: u64,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

impl TxMetrics {
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// The staleness below which 99 % of persisted transactions stayed (to the
    /// millisecond above); 0 when none was persisted.
    pub fn staleness_ns_p99(&self) -> u64 {
        let rank = self.persisted_transactions.saturating_mul(99).div_ceil(100);
        let mut seen = 0;
        for (&ms, &n) in &self.staleness_ms_counts {
            seen += n;
            if seen >= rank {
                return ms * 1_000_000;
            }
        }
        0
    }

    /// The mean staleness of persisted transactions.
    pub fn staleness_ns_mean(&self) -> u64 {
        self.staleness_ns_total
            .checked_div(self.persisted_transactions)
            .unwrap_or(0)
    }
}

/// One file's part of a transaction: the pages it wrote and its version.
#[derive(Clone, Debug)]
struct TxFile {
    members: BTreeSet<u64>,
    version: FileVersion,
}

#[derive(Clone, Debug)]
struct SealedTxn {
    seq: u64,
    seal_ns: Nanos,
    files: BTreeMap<Ino, TxFile>,
}

#[derive(Clone, Debug, Default)]
struct AppTxns {
    next_seq: u64,
    seals: u64,
    open: BTreeMap<Ino, TxFile>,
    sealed: VecDeque<SealedTxn>,
    /// Sealed versions with a smaller sequence number are closed (ready to checkpoint).
    closed_before_seq: u64,
    /// The e-curve of the transaction being built (`seal = "ecurve"`).
    curve: CurveState,
}

/// What the e-curve is sampled from: the transaction since its app's last close.
#[derive(Clone, Debug, Default)]
struct CurveState {
    /// The transaction's first write (the origin of its staleness); `None`: empty.
    open_since_ns: Option<Nanos>,
    /// Pages written since the last close (a write to one of them coalesces).
    written: BTreeSet<(Ino, u64)>,
    /// Bytes written into pages already written since the last close.
    coalesced_bytes: u64,
    next_sample_ns: Nanos,
    curve: crate::adaptive::ECurve,
}

/// Every app's transactions.
#[derive(Clone, Debug, Default)]
pub(super) struct Transactions {
    owners: BTreeMap<Ino, AppId>,
    apps: BTreeMap<AppId, AppTxns>,
    /// Page → the sealed transaction whose version it is (written since: not frozen).
    frozen_by: BTreeMap<(Ino, u64), (AppId, u64)>,
    /// Page copies held in sealed transactions' versions.
    copies: u64,
    /// The user's inputs as the adaptive timing sees them (`checkpoint = "idle"`).
    interaction: crate::adaptive::InteractionMachine,
}

impl Transactions {
    pub(super) fn is_frozen(&self, ino: Ino, page_index: u64) -> bool {
        self.frozen_by.contains_key(&(ino, page_index))
    }
}

/// Where a checkpoint takes a page from.
#[derive(Clone, Copy, Debug)]
enum Source {
    Table,
    Version(AppId, u64),
}

/// One file of a checkpoint being planned.
#[derive(Debug, Default)]
struct FilePlan {
    pages: BTreeMap<u64, Source>,
    size_bytes: u64,
    cut_bytes: u64,
}

impl<B: Backing, P: WritebackPolicy> PageCache<B, P> {
    /// Makes `app` the owner of `ino`'s transactions (the first owner stays). Without
    /// MobiFS this does nothing.
    pub fn set_owner(&mut self, ino: Ino, app: AppId) {
        if let Some(tx) = self.tx.as_mut() {
            tx.owners.entry(ino).or_insert(app);
        }
    }

    /// How many transactions `app` has sealed so far (fsync and forced).
    pub fn tx_seals(&self, app: AppId) -> u64 {
        self.tx
            .as_ref()
            .and_then(|tx| tx.apps.get(&app))
            .map_or(0, |a| a.seals)
    }

    /// When the oldest closed transaction not yet persisted was sealed.
    pub fn tx_oldest_sealed_ns(&self) -> Option<Nanos> {
        let tx = self.tx.as_ref()?;
        tx.apps
            .values()
            .filter_map(|a| {
                a.sealed
                    .front()
                    .filter(|s| s.seq < a.closed_before_seq)
                    .map(|s| s.seal_ns)
            })
            .min()
    }

    /// Whether any app holds a sealed version not yet persisted (closed or not).
    fn tx_any_sealed(&self) -> bool {
        self.tx
            .as_ref()
            .is_some_and(|tx| tx.apps.values().any(|a| !a.sealed.is_empty()))
    }

    /// Pages held: the page table and the transactions' copies.
    pub fn resident_pages(&self) -> u64 {
        self.pages.len() as u64 + self.tx.as_ref().map_or(0, |tx| tx.copies)
    }

    /// How many sealed versions of `app` are closed and not yet persisted, and how many
    /// are sealed in all (for tests).
    pub fn tx_closed_and_sealed(&self, app: AppId) -> (u64, u64) {
        let Some(a) = self.tx.as_ref().and_then(|tx| tx.apps.get(&app)) else {
            return (0, 0);
        };
        let closed = a
            .sealed
            .iter()
            .filter(|s| s.seq < a.closed_before_seq)
            .count();
        (closed as u64, a.sealed.len() as u64)
    }

    /// The transactions' invariants (for tests): the page limit, frozen pages resident
    /// and dirty, the copy count.
    pub fn check_tx_invariants(&self) {
        assert!(
            self.resident_pages() <= self.config.cache_pages_max(),
            "page limit"
        );
        let Some(tx) = self.tx.as_ref() else { return };
        for &(ino, page_index) in tx.frozen_by.keys() {
            assert!(
                self.is_dirty(ino, page_index),
                "frozen page {ino}:{page_index} dirty"
            );
        }
        let copies: usize = tx
            .apps
            .values()
            .flat_map(|a| a.sealed.iter())
            .flat_map(|s| s.files.values())
            .map(|f| f.version.pages.len())
            .sum();
        assert_eq!(copies as u64, tx.copies, "copy count");
    }

    pub(super) fn owner(&self, ino: Ino) -> AppId {
        self.tx
            .as_ref()
            .and_then(|tx| tx.owners.get(&ino).copied())
            .unwrap_or(0)
    }

    /// Whether transactions still need the file's state (its size, its cut).
    pub(super) fn tx_pins(&self, ino: Ino) -> bool {
        self.tx.as_ref().is_some_and(|tx| {
            tx.apps.values().any(|a| {
                a.open.contains_key(&ino) || a.sealed.iter().any(|s| s.files.contains_key(&ino))
            })
        })
    }

    /// The smallest size `ino` had since its state below: pages from there read as zeros.
    pub(super) fn tx_low_water(&self, ino: Ino) -> Option<u64> {
        let tx = self.tx.as_ref()?;
        let app = tx.apps.get(&self.owner(ino))?;
        let open = app.open.get(&ino).map(|f| f.version.low_water_bytes);
        let sealed = app
            .sealed
            .iter()
            .filter_map(|s| s.files.get(&ino).map(|f| f.version.low_water_bytes));
        open.into_iter().chain(sealed).min()
    }

    /// Adjusts a page read from below to the pending truncates: returns whether to read it
    /// at all (`false`: it reads as zeros).
    pub(super) fn tx_reads_below(&self, ino: Ino, page_index: u64) -> bool {
        self.tx_low_water(ino)
            .is_none_or(|low| page_index * PAGE_BYTES < low)
    }

    pub(super) fn tx_zero_cut_tail(&self, ino: Ino, page_index: u64, data: &mut Page) {
        if let Some(low) = self.tx_low_water(ino) {
            FileVersion::begin(low).zero_cut_tail(page_index, data);
        }
    }

    /// The file joins its owner's open transaction (at its current size).
    pub(super) fn tx_touch_file(&mut self, ino: Ino) {
        let app = self.owner(ino);
        let size_bytes = self.files.get(&ino).map_or(0, |f| f.size_bytes);
        let Some(tx) = self.tx.as_mut() else { return };
        tx.apps
            .entry(app)
            .or_default()
            .open
            .entry(ino)
            .or_insert_with(|| TxFile {
                members: BTreeSet::new(),
                version: FileVersion::begin(size_bytes),
            });
    }

    /// `bytes` of page `page_index` were written at `now_ns`: a member of the owner's
    /// open transaction. (A write larger than the cache can be sealed in its middle by
    /// pressure; the rest of it joins a new transaction.)
    pub(super) fn tx_note_write(&mut self, now_ns: Nanos, ino: Ino, page_index: u64, bytes: u64) {
        self.tx_touch_file(ino);
        let app = self.owner(ino);
        let ecurve = self.config.mobifs.seal == crate::SealPolicy::Ecurve;
        let sample_ns = self.config.mobifs.adaptive.sample_interval_ns;
        let Some(tx) = self.tx.as_mut() else { return };
        let txns = tx.apps.entry(app).or_default();
        let file = txns
            .open
            .get_mut(&ino)
            .expect("the file joined the open transaction");
        if !file.members.insert(page_index) {
            self.metrics.transactions.coalesced_writes += 1;
        }
        if ecurve {
            let curve = &mut txns.curve;
            if curve.open_since_ns.is_none() {
                curve.open_since_ns = Some(now_ns);
                curve.next_sample_ns = now_ns.saturating_add(sample_ns);
            }
            if !curve.written.insert((ino, page_index)) {
                curve.coalesced_bytes += bytes;
            }
        }
    }

    /// Before page `page_index` changes: if a sealed transaction holds it as its version,
    /// that version is copied there first (copy-on-write). Room for the copy is made first
    /// (which may persist the version instead).
    pub(super) fn before_modify(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        page_index: u64,
    ) -> Result<Nanos, CacheError> {
        let frozen = |c: &Self| {
            c.tx.as_ref()
                .is_some_and(|tx| tx.frozen_by.contains_key(&(ino, page_index)))
        };
        if !frozen(self) {
            return Ok(now_ns);
        }
        let t = self.make_room_for(now_ns, ino, 1)?;
        if frozen(self) {
            self.copy_frozen(ino, page_index);
        }
        Ok(t)
    }

    /// Copies a frozen page into the sealed transaction that holds it.
    pub(super) fn copy_frozen(&mut self, ino: Ino, page_index: u64) {
        let mut copy = self.zeroed_page();
        copy.copy_from_slice(&self.pages[&(ino, page_index)].data[..]);
        let tx = self.tx.as_mut().expect("transactions on");
        let (app, seq) = tx
            .frozen_by
            .remove(&(ino, page_index))
            .expect("page is frozen");
        let sealed = tx
            .apps
            .get_mut(&app)
            .and_then(|a| a.sealed.iter_mut().find(|s| s.seq == seq))
            .expect("the freezing transaction is sealed");
        let file = sealed.files.get_mut(&ino).expect("file in the transaction");
        file.version.pages.insert(page_index, copy);
        tx.copies += 1;
        let m = &mut self.metrics.transactions;
        m.cow_copies += 1;
        m.versions_high_water = m.versions_high_water.max(tx.copies);
    }

    /// Seals `app`'s open transaction at `now_ns` (nothing if it is empty).
    pub(super) fn seal(&mut self, now_ns: Nanos, app: AppId, forced: bool) {
        let files_state = &self.files;
        let Some(tx) = self.tx.as_mut() else { return };
        let Some(txns) = tx.apps.get_mut(&app) else {
            return;
        };
        if txns.open.is_empty() {
            return;
        }
        let mut files = std::mem::take(&mut txns.open);
        let seq = txns.next_seq;
        txns.next_seq += 1;
        txns.seals += 1;
        for (&ino, file) in files.iter_mut() {
            file.version.size_bytes = files_state.get(&ino).map_or(0, |f| f.size_bytes);
            for &page_index in &file.members {
                let before = tx.frozen_by.insert((ino, page_index), (app, seq));
                assert!(before.is_none(), "a written page was copied before");
            }
        }
        txns.sealed.push_back(SealedTxn {
            seq,
            seal_ns: now_ns,
            files,
        });
        let m = &mut self.metrics.transactions;
        if forced {
            m.forced_seals += 1;
            // A forced seal is followed by a checkpoint of everything: closed at once.
            self.close(now_ns, app, None);
        } else {
            m.seals += 1;
            self.decide_close(now_ns, app);
        }
    }

    /// Asks the seal policy whether `app`'s sealed versions close at `now_ns`.
    fn decide_close(&mut self, now_ns: Nanos, app: AppId) {
        let Some(txns) = self.tx.as_ref().and_then(|tx| tx.apps.get(&app)) else {
            return;
        };
        let view = crate::CloseView {
            now_ns,
            oldest_unclosed_ns: txns
                .sealed
                .iter()
                .find(|s| s.seq >= txns.closed_before_seq)
                .map(|s| s.seal_ns),
            curve: &txns.curve.curve,
        };
        if let crate::CloseDecision::Close(reason) = self.policy.close(&view) {
            self.close(now_ns, app, Some(reason));
        }
    }

    /// Closes every version `app` has sealed (`reason` `None`: forced by the mechanism);
    /// the next transaction starts with what the app wrote since its last seal.
    fn close(&mut self, now_ns: Nanos, app: AppId, reason: Option<crate::CloseReason>) {
        let sample_ns = self.config.mobifs.adaptive.sample_interval_ns;
        let Some(txns) = self.tx.as_mut().and_then(|tx| tx.apps.get_mut(&app)) else {
            return;
        };
        if txns.closed_before_seq == txns.next_seq {
            return;
        }
        txns.closed_before_seq = txns.next_seq;
        let open_since_ns = (!txns.open.is_empty()).then_some(now_ns);
        txns.curve = CurveState {
            open_since_ns,
            written: txns
                .open
                .iter()
                .flat_map(|(&ino, f)| f.members.iter().map(move |&i| (ino, i)))
                .collect(),
            next_sample_ns: now_ns.saturating_add(sample_ns),
            ..CurveState::default()
        };
        let m = &mut self.metrics.transactions;
        match reason {
            Some(crate::CloseReason::Sync) => {}
            Some(crate::CloseReason::Peak) => m.peak_closes += 1,
            Some(crate::CloseReason::Bound) => m.bound_closes += 1,
            None if self.config.mobifs.seal == crate::SealPolicy::Ecurve => m.forced_closes += 1,
            None => {}
        }
    }

    /// Closes every app's sealed versions (pressure, sync, the screen going off).
    fn close_all(&mut self, now_ns: Nanos) {
        for app in self.tx_apps() {
            self.close(now_ns, app, None);
        }
    }

    fn tx_apps(&self) -> Vec<AppId> {
        self.tx
            .as_ref()
            .map_or(Vec::new(), |tx| tx.apps.keys().copied().collect())
    }

    /// The seal policy's events due by `now_ns` (the flusher's clock): each app's
    /// e-curve samples (the transaction's coalesced bytes over its age, every
    /// `sample_interval_ns` from its first write), each followed by the close decision,
    /// and the bound's deadline. Between two calls nothing written changes, so samples
    /// taken late at a call's entry see the bytes of their own time.
    pub(super) fn tx_seal_events(&mut self, now_ns: Nanos) {
        if self.tx.is_none() || self.config.mobifs.seal != crate::SealPolicy::Ecurve {
            return;
        }
        let adaptive = self.config.mobifs.adaptive;
        for app in self.tx_apps() {
            loop {
                let tx = self.tx.as_mut().expect("transactions on");
                let state = &mut tx.apps.get_mut(&app).expect("app").curve;
                let Some(open_ns) = state.open_since_ns else {
                    break;
                };
                let tick_ns = state.next_sample_ns;
                if tick_ns > now_ns {
                    break;
                }
                let coalesced = state.coalesced_bytes;
                state
                    .curve
                    .push(tick_ns - open_ns, coalesced, adaptive.window_samples);
                state.curve.note_rise(&adaptive);
                state.next_sample_ns = tick_ns.saturating_add(adaptive.sample_interval_ns);
                self.metrics.transactions.ecurve_samples += 1;
                self.decide_close(tick_ns, app);
            }
            self.decide_close(now_ns, app);
        }
    }

    /// The next time a seal event falls due: an e-curve sample or the bound's deadline
    /// of a version not closed.
    pub(super) fn tx_next_seal_event_ns(&self) -> Option<Nanos> {
        let tx = self.tx.as_ref()?;
        if self.config.mobifs.seal != crate::SealPolicy::Ecurve {
            return None;
        }
        let m = &self.config.mobifs;
        let margin_ns = m.staleness_bound_ns.saturating_sub(m.checkpoint_reserve_ns);
        tx.apps
            .values()
            .flat_map(|a| {
                let sample = a.curve.open_since_ns.map(|_| a.curve.next_sample_ns);
                let deadline = a
                    .sealed
                    .iter()
                    .find(|s| s.seq >= a.closed_before_seq)
                    .map(|s| s.seal_ns.saturating_add(margin_ns));
                sample.into_iter().chain(deadline)
            })
            .min()
    }

    /// Seals every app's open transaction (sync).
    pub(super) fn seal_all(&mut self, now_ns: Nanos) {
        for app in self.tx_apps() {
            self.seal(now_ns, app, false);
        }
        self.close_all(now_ns);
    }

    pub(super) fn tx_view(&self, now_ns: Nanos) -> TxView {
        let sealed = self.tx.as_ref().map_or(0, |tx| {
            tx.apps.values().map(|a| a.sealed.len() as u64).sum()
        });
        TxView {
            now_ns,
            oldest_sealed_ns: self.tx_oldest_sealed_ns(),
            sealed_transactions: sealed,
            resident_pages: self.resident_pages(),
            resident_pages_max: self.config.cache_pages_max(),
            idle: self
                .tx
                .as_ref()
                .map_or(crate::adaptive::IdleCheckpoint::Wait(None), |tx| {
                    crate::adaptive::idle_checkpoint_decision(
                        &tx.interaction,
                        now_ns,
                        &self.config.mobifs.adaptive,
                    )
                }),
        }
    }

    /// The user did something at `now_ns` (the stack passes the phone's inputs down):
    /// the interaction machine learns it; with `checkpoint = "idle"`, the screen going
    /// off checkpoints every sealed transaction first, so none is left for standby.
    pub fn user_input(
        &mut self,
        now_ns: Nanos,
        input: crate::adaptive::Input,
    ) -> Result<Nanos, CacheError> {
        self.enter(now_ns)?;
        let adaptive = self.config.mobifs.adaptive;
        let Some(tx) = self.tx.as_mut() else {
            return Ok(now_ns);
        };
        match input {
            crate::adaptive::Input::User => tx.interaction.input(now_ns, &adaptive),
            crate::adaptive::Input::ScreenOn => tx.interaction.screen(true),
            crate::adaptive::Input::ScreenOff => {
                tx.interaction.screen(false);
                if self.config.mobifs.checkpoint == crate::CheckpointTiming::Idle {
                    self.close_all(now_ns);
                    return self.checkpoint(
                        now_ns,
                        CheckpointScope::AllSealed,
                        CheckpointReason::Idle,
                    );
                }
            }
        }
        Ok(now_ns)
    }

    /// Makes room for `pages` more resident pages; under memory pressure with everything
    /// dirty: checkpoint the sealed transactions, or seal (forced) the open transaction of
    /// the app dirty longest — another app than `in_use`'s if there is one — and
    /// checkpoint it.
    pub(super) fn tx_relieve(&mut self, now_ns: Nanos, in_use: Ino) -> Result<Nanos, CacheError> {
        if !self.tx_any_sealed() {
            let own = self.owner(in_use);
            let owners: Vec<AppId> = self
                .dirty_inodes
                .iter()
                .map(|&(_, ino)| self.owner(ino))
                .collect();
            let app = owners
                .iter()
                .copied()
                .find(|&a| a != own)
                .or(owners.first().copied())
                .expect("a full cache with no clean page has dirty pages");
            self.seal(now_ns, app, true);
        }
        self.close_all(now_ns);
        self.checkpoint(
            now_ns,
            CheckpointScope::AllSealed,
            CheckpointReason::Pressure,
        )
    }

    /// Before a write of `pages` pages by `ino`'s app: if the cache could not hold them
    /// and their copies, the app's open transaction is sealed (forced) at this call
    /// boundary and the sealed transactions checkpointed, so pressure seals in the middle
    /// of the app's call only a write larger than half the cache.
    pub(super) fn tx_reserve(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        pages: u64,
    ) -> Result<Nanos, CacheError> {
        let need = pages.saturating_mul(2);
        let max = self.config.cache_pages_max();
        if self.tx.is_none() || self.resident_pages() + need <= max {
            return Ok(now_ns);
        }
        self.seal(now_ns, self.owner(ino), true);
        self.close_all(now_ns);
        self.checkpoint(
            now_ns,
            CheckpointScope::AllSealed,
            CheckpointReason::Pressure,
        )
    }

    /// A truncate inside the transactions: the cut page's tail is zeroed as a write of
    /// the open transaction, pages past the end go (their frozen versions copied first),
    /// and the file system is told at the checkpoint.
    pub(super) fn truncate_tx(
        &mut self,
        now_ns: Nanos,
        ino: Ino,
        size_bytes: u64,
    ) -> Result<Nanos, CacheError> {
        let mut t = now_ns + self.config.call_overhead_ns;
        let (old_size, t_size) = self.ensure_file(t, ino)?;
        t = t_size;
        self.tx_touch_file(ino);
        let keep_pages = size_bytes.div_ceil(PAGE_BYTES);
        let tail = (size_bytes % PAGE_BYTES) as usize;
        if tail != 0 && size_bytes < old_size {
            let index = keep_pages - 1;
            t = self.before_modify(t, ino, index)?;
            t = self.load_page(t, ino, index, true)?;
            self.page_mut(ino, index).data[tail..].fill(0);
            self.mark_dirty(now_ns, ino, index);
            self.tx_note_write(now_ns, ino, index, PAGE_BYTES - tail as u64);
        }
        for page_index in self.cached_from(ino, keep_pages) {
            self.drop_page_keeping_versions(ino, page_index);
        }
        let app = self.owner(ino);
        let tx = self.tx.as_mut().expect("transactions on");
        let file = tx
            .apps
            .get_mut(&app)
            .and_then(|a| a.open.get_mut(&ino))
            .expect("the file joined the open transaction");
        drop(file.version.cut(size_bytes));
        file.members.retain(|&index| index < keep_pages);
        self.files
            .get_mut(&ino)
            .expect("file state exists")
            .size_bytes = size_bytes;
        self.record(super::CallKind::Truncate, now_ns, t);
        Ok(t)
    }

    /// The file is gone: its transactions' parts go with it.
    pub(super) fn tx_forget_file(&mut self, ino: Ino) {
        let Some(tx) = self.tx.as_mut() else { return };
        tx.frozen_by.retain(|&(i, _), _| i != ino);
        let mut freed = 0;
        for app in tx.apps.values_mut() {
            app.open.remove(&ino);
            app.curve.written.retain(|&(i, _)| i != ino);
            for sealed in app.sealed.iter_mut() {
                if let Some(file) = sealed.files.remove(&ino) {
                    freed += file.version.pages.len() as u64;
                }
            }
        }
        tx.copies -= freed;
    }

    /// Persists a prefix of sealed transactions in one atomic commit below (module doc,
    /// step 4). Returns the completion time.
    pub(super) fn checkpoint(
        &mut self,
        now_ns: Nanos,
        scope: CheckpointScope,
        reason: CheckpointReason,
    ) -> Result<Nanos, CacheError> {
        let _ = reason;
        let prefix = self.prefix(scope);
        if prefix.is_empty() {
            return Ok(now_ns);
        }
        let plans = self.plan(&prefix);
        let (done, outcome) = self.commit(now_ns, &plans);
        match outcome {
            Err(error) if error.is_power_loss() => return Err(error.into()),
            Err(error) => {
                for (&ino, plan) in &plans {
                    self.writeback_failed(ino, plan.pages.len() as u64, error.clone());
                }
            }
            Ok(()) => {
                let pages: u64 = plans.values().map(|p| p.pages.len() as u64).sum();
                *self
                    .metrics
                    .pages_written_back
                    .entry(WritebackReason::Checkpoint)
                    .or_default() += pages;
                self.metrics.write_back_calls += 1;
                self.metrics.transactions.checkpoints += 1;
                self.metrics.transactions.checkpoint_pages += pages;
            }
        }
        // The files' states stay (a call may be using one): each is dropped when unused
        // at its file's next call or eviction.
        self.retire(done, &prefix);
        Ok(done)
    }

    /// The sealed transactions of `scope`: per app, the last sequence number included.
    fn prefix(&self, scope: CheckpointScope) -> Vec<(AppId, u64)> {
        let Some(tx) = self.tx.as_ref() else {
            return Vec::new();
        };
        match scope {
            CheckpointScope::AllSealed => tx
                .apps
                .iter()
                .filter(|(_, a)| {
                    a.sealed
                        .front()
                        .is_some_and(|s| s.seq < a.closed_before_seq)
                })
                .map(|(&app, a)| (app, a.closed_before_seq - 1))
                .collect(),
            CheckpointScope::App { app, through_seq } => tx
                .apps
                .get(&app)
                .filter(|a| through_seq < a.closed_before_seq)
                .filter(|a| a.sealed.front().is_some_and(|s| s.seq <= through_seq))
                .map(|_| vec![(app, through_seq)])
                .unwrap_or_default(),
        }
    }

    /// Per file: the newest version of each page in the prefix, the size at its last
    /// seal, the smallest size since the state below.
    fn plan(&self, prefix: &[(AppId, u64)]) -> BTreeMap<Ino, FilePlan> {
        let tx = self.tx.as_ref().expect("transactions on");
        let mut plans: BTreeMap<Ino, FilePlan> = BTreeMap::new();
        for &(app, through) in prefix {
            let sealed = tx.apps[&app].sealed.iter().take_while(|s| s.seq <= through);
            for txn in sealed {
                for (&ino, file) in &txn.files {
                    let plan = plans.entry(ino).or_insert_with(|| FilePlan {
                        cut_bytes: file.version.low_water_bytes,
                        ..FilePlan::default()
                    });
                    let low = file.version.low_water_bytes;
                    plan.cut_bytes = plan.cut_bytes.min(low);
                    plan.size_bytes = file.version.size_bytes;
                    // What this transaction cut, earlier ones' pages included, is gone
                    // (the page holding a partial cut is among its members).
                    plan.pages
                        .retain(|&index, _| index < low.div_ceil(PAGE_BYTES));
                    for &index in &file.members {
                        let source = match file.version.pages.contains_key(&index) {
                            true => Source::Version(app, txn.seq),
                            false => Source::Table,
                        };
                        plan.pages.insert(index, source);
                    }
                }
            }
        }
        for plan in plans.values_mut() {
            let keep = plan.size_bytes.div_ceil(PAGE_BYTES);
            plan.pages.retain(|&index, _| index < keep);
        }
        plans
    }

    /// Hands the plan to the file system in one batch commit.
    fn commit(
        &mut self,
        now_ns: Nanos,
        plans: &BTreeMap<Ino, FilePlan>,
    ) -> (Nanos, Result<(), crate::BackingError>) {
        let tx = self.tx.as_ref().expect("transactions on");
        let version = |ino: Ino, index: u64, app: AppId, seq: u64| -> &Page {
            let txn = tx.apps[&app]
                .sealed
                .iter()
                .find(|s| s.seq == seq)
                .expect("sealed");
            &txn.files[&ino].version.pages[&index]
        };
        let mut files = Vec::with_capacity(plans.len());
        for (&ino, plan) in plans {
            let mut pages = Vec::with_capacity(plan.pages.len());
            for (&index, &source) in &plan.pages {
                let page: &Page = match source {
                    Source::Version(app, seq) => version(ino, index, app, seq),
                    // A page a hole punch discarded (outside the transactions).
                    Source::Table => match self.pages.get(&(ino, index)) {
                        Some(page) => &page.data,
                        None => continue,
                    },
                };
                pages.push((index, page));
            }
            files.push(BatchCommit {
                ino,
                pages,
                size_bytes: plan.size_bytes,
                cut_bytes: plan.cut_bytes,
            });
        }
        match self.backing.commit_batch(now_ns, &files) {
            Ok(done) => (done.max(now_ns), Ok(())),
            Err(error) => (now_ns, Err(error)),
        }
    }

    /// The prefix is persisted (or lost to a failed write) at `done_ns`: its versions are
    /// freed, its pages clean unless an open transaction holds them.
    fn retire(&mut self, done_ns: Nanos, prefix: &[(AppId, u64)]) {
        let bound_ns = self.config.mobifs.staleness_bound_ns;
        let mut clean = Vec::new();
        let mut freed = Vec::new();
        let tx = self.tx.as_mut().expect("transactions on");
        let m = &mut self.metrics.transactions;
        for &(app, through) in prefix {
            let txns = tx.apps.get_mut(&app).expect("app");
            while txns.sealed.front().is_some_and(|s| s.seq <= through) {
                let txn = txns.sealed.pop_front().expect("front");
                let waited_ns = done_ns.saturating_sub(txn.seal_ns);
                m.staleness_ns_max = m.staleness_ns_max.max(waited_ns);
                m.staleness_ns_total += waited_ns;
                m.persisted_transactions += 1;
                *m.staleness_ms_counts
                    .entry(waited_ns.div_ceil(1_000_000))
                    .or_insert(0) += 1;
                if waited_ns > bound_ns {
                    m.staleness_bound_overruns += 1;
                }
                for (ino, file) in txn.files {
                    for index in file.members {
                        if tx.frozen_by.get(&(ino, index)) == Some(&(app, txn.seq)) {
                            tx.frozen_by.remove(&(ino, index));
                            let open = txns.open.get(&ino);
                            if open.is_none_or(|f| !f.members.contains(&index)) {
                                clean.push((ino, index));
                            }
                        }
                    }
                    tx.copies -= file.version.pages.len() as u64;
                    freed.extend(file.version.pages.into_values());
                }
            }
        }
        for (ino, index) in clean {
            self.mark_clean(ino, index);
        }
        for page in freed {
            self.recycle(page);
        }
    }

    /// A crash: every transaction is gone (the owners stay).
    pub(super) fn tx_crash(&mut self) {
        if let Some(tx) = self.tx.as_mut() {
            tx.apps.clear();
            tx.frozen_by.clear();
            tx.copies = 0;
        }
    }
}
