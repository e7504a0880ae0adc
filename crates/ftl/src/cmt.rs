//! Demand-based mapping-table cache (DFTL, Gupta et al., ASPLOS 2009): the controller's
//! SRAM holds only some L2P entries (the cached mapping table, CMT); the whole table lives
//! in translation pages on flash, found through a global translation directory (GTD) in
//! SRAM. `ftl.mapping_cache.sram_bytes = 0` (the default) turns all of this off and every
//! call here returns at once: results are byte-identical to a fully resident table.
//!
//! Step by step, for a host read or write of logical page `lpn`:
//! 1. The CMT is looked up. A hit costs nothing on flash (a write marks the entry dirty).
//! 2. A miss first makes room: the policy ([`choose_victim`]) names the entry to evict. A
//!    dirty victim's translation page is programmed with every dirty entry of that page
//!    at once (DFTL's batch update), which cleans them all; a clean victim just leaves.
//! 3. Then the entry's translation page is read from the die that holds it (if it was
//!    ever written: a page the GTD has no location for maps nothing, so no read). Every
//!    other missing entry of the same request that lies in that translation page is
//!    filled from the same read.
//! 4. Garbage collection and wear levelling move data: entries of moved pages that are
//!    cached become dirty; the others ([`relocation_update`], `ftl.mapping_cache.
//!    relocation_updates`) are updated in their translation pages directly, one read and
//!    one program per translation page per relocated batch (`write-through`, DFTL's batch
//!    update, the default), or enter the cache as dirty entries, evicting others as a host
//!    miss does, and reach flash when evicted in turn (`cached`, as MQSim's GC does).
//!    Trims do the same.
//! 5. Translation pages are written out of place into translation blocks of their own;
//!    when those run out, translation-block GC moves the live translation pages of the
//!    block with the fewest and erases it.
//!
//! What is modelled and what is not. The authoritative L2P stays the full table in
//! `Mapping`: the cache decides *what it costs* to reach an entry (flash reads and
//! programs of translation pages, charged on the die that holds them in virtual time, and
//! counted), not what the entry says. Translation blocks are a separate area beside the
//! data array: their reads, programs and erases occupy real dies (`Nand::occupy_unit`)
//! but take no data blocks, hold no bytes and are not torn by armed power cuts.
//!
//! Power loss: the CMT is volatile. Recovery rebuilds every mapping from the OOB scan as
//! before (so everything flushed is intact, `tests.rs`), restarts with an empty CMT, and
//! programs again the translation pages whose dirty entries the cut lost (their flash
//! copies are stale), which the recovery time includes.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use flashstack_nand::UnitOp;
use flashstack_sim::memory::{zeroed_table, LazyTable};
use flashstack_sim::Nanos;

use crate::config::{CmtPolicyKind, MappingCacheConfig, RelocationUpdates};
use crate::{Ftl, FtlError};

/// Bytes of one mapping entry in a translation page on flash (a physical page number).
pub(crate) const TRANSLATION_ENTRY_BYTES: u32 = 4;
const NOWHERE: u32 = u32::MAX;

/// What a mapping update made without a host request does to an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RelocationAction {
    /// The entry is cached: it becomes dirty, nothing reaches flash now.
    MarkDirty,
    /// Not cached: its translation page joins the batch read and programmed now.
    WriteTranslationPage,
    /// Not cached: it enters the cache as a dirty entry.
    InsertDirty,
}

/// Step 4's decision for one entry moved by GC, wear levelling or a trim.
pub fn relocation_update(kind: RelocationUpdates, cached: bool) -> RelocationAction {
    match (cached, kind) {
        (true, _) => RelocationAction::MarkDirty,
        (false, RelocationUpdates::WriteThrough) => RelocationAction::WriteTranslationPage,
        (false, RelocationUpdates::Cached) => RelocationAction::InsertDirty,
    }
}

/// Which segment of the cache an entry sits in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Segment {
    Probation,
    Protected,
}

/// Where a hit entry goes (pure policy): LRU keeps one segment; segmented LRU promotes.
pub fn place_on_hit(kind: CmtPolicyKind) -> Segment {
    match kind {
        CmtPolicyKind::Lru => Segment::Probation,
        CmtPolicyKind::SegmentedLru => Segment::Protected,
    }
}

/// Whether the protected segment must hand its least recent entry back to probation
/// (pure policy): segmented LRU bounds it to half the cache.
pub fn demote_protected(protected_len: usize, capacity: usize) -> bool {
    protected_len > capacity / 2
}

/// The entry to evict (pure policy): the least recent probationary entry, else the
/// least recent protected one.
pub fn choose_victim(probation_lru: Option<u32>, protected_lru: Option<u32>) -> Option<u32> {
    probation_lru.or(protected_lru)
}

const NIL: u32 = u32::MAX;

/// One cached entry: a node of its segment's recency list.
#[derive(Clone, Copy, Debug)]
struct Node {
    lpn: u32,
    /// Neighbours in the segment's list (towards the least and the most recent).
    older: u32,
    newer: u32,
    segment: Segment,
    /// The cache's clean clock when the entry was last made dirty, 0 if never: the entry
    /// is dirty while this is later than its translation page's last clean
    /// ([`Cmt::cleaned_at`]), so cleaning a page is one store however many of its
    /// entries are cached.
    dirty_at: u64,
}

/// A recency list threaded through [`Cmt::nodes`]: `oldest` is the LRU end.
#[derive(Clone, Copy, Debug)]
struct List {
    oldest: u32,
    newest: u32,
    len: usize,
}

impl List {
    const EMPTY: List = List {
        oldest: NIL,
        newest: NIL,
        len: 0,
    };
}

/// The cached mapping table: which entries are in SRAM, in recency order per segment.
/// Bounded by `capacity`. The index is a direct table by entry (a lazily built one: only
/// the 4 KiB stretches of entries ever cached take memory, so a 512 GiB device still
/// starts at once), nothing depends on hash order, and the recency lists are doubly
/// linked through a slab, so a hit is one table read and two constant-time moves. What
/// eviction needs per translation page (how many of its entries are cached, cleaning
/// them all) is kept per page, so it costs the same however many are cached.
#[derive(Debug)]
pub(crate) struct Cmt {
    capacity: usize,
    policy: CmtPolicyKind,
    /// Entries (logical pages, or mapping units) one translation page holds.
    entries_per_page: u32,
    /// Entry → its node, `u32::MAX` while not cached.
    index: LazyTable,
    /// How many cached entries each translation page has.
    cached_in_page: Vec<u32>,
    /// Each translation page's last clean on the clean clock (0: never cleaned).
    cleaned_at: Vec<u64>,
    /// The clean clock: advanced at each clean, always later than every `cleaned_at`.
    clock: u64,
    /// How many entries are cached.
    len: usize,
    nodes: Vec<Node>,
    free: Vec<u32>,
    probation: List,
    protected: List,
}

impl Cmt {
    /// A cache of `capacity` entries over `keys` entries, `entries_per_page` to a
    /// translation page.
    fn new(capacity: usize, policy: CmtPolicyKind, keys: u64, entries_per_page: u32) -> Cmt {
        assert!(capacity >= 2);
        assert!(entries_per_page > 0);
        let pages = keys.div_ceil(entries_per_page as u64) as usize;
        Cmt {
            capacity,
            policy,
            entries_per_page,
            index: LazyTable::new(keys as usize),
            cached_in_page: zeroed_table(pages),
            cleaned_at: zeroed_table(pages),
            clock: 1,
            len: 0,
            nodes: Vec::new(),
            free: Vec::new(),
            probation: List::EMPTY,
            protected: List::EMPTY,
        }
    }

    /// An empty cache of the same shape.
    fn emptied(&self) -> Cmt {
        Cmt::new(
            self.capacity,
            self.policy,
            self.index.len() as u64,
            self.entries_per_page,
        )
    }

    #[inline]
    fn page_of(&self, lpn: u32) -> usize {
        (lpn / self.entries_per_page) as usize
    }

    #[inline]
    fn node_of(&self, lpn: u32) -> Option<u32> {
        let at = self.index.at(lpn as usize);
        (at != NIL).then_some(at)
    }

    #[inline]
    fn is_dirty(&self, node: &Node) -> bool {
        node.dirty_at > self.cleaned_at[self.page_of(node.lpn)]
    }

    #[inline]
    fn mark_dirty(&mut self, at: u32) {
        self.nodes[at as usize].dirty_at = self.clock;
    }

    fn list_mut(&mut self, segment: Segment) -> &mut List {
        match segment {
            Segment::Probation => &mut self.probation,
            Segment::Protected => &mut self.protected,
        }
    }

    /// Takes node `at` out of its segment's list.
    fn unlink(&mut self, at: u32) {
        let Node {
            older,
            newer,
            segment,
            ..
        } = self.nodes[at as usize];
        match older {
            NIL => self.list_mut(segment).oldest = newer,
            o => self.nodes[o as usize].newer = newer,
        }
        match newer {
            NIL => self.list_mut(segment).newest = older,
            n => self.nodes[n as usize].older = older,
        }
        self.list_mut(segment).len -= 1;
    }

    /// Puts node `at` at the most recent end of `segment`.
    fn push_newest(&mut self, at: u32, segment: Segment) {
        let list = *self.list_mut(segment);
        let node = &mut self.nodes[at as usize];
        node.segment = segment;
        node.older = list.newest;
        node.newer = NIL;
        match list.newest {
            NIL => self.list_mut(segment).oldest = at,
            n => self.nodes[n as usize].newer = at,
        }
        let list = self.list_mut(segment);
        list.newest = at;
        list.len += 1;
    }

    /// Looks `lpn` up; on a hit, moves it as the policy says and marks it dirty if asked.
    fn touch(&mut self, lpn: u32, dirty: bool) -> bool {
        let Some(at) = self.node_of(lpn) else {
            return false;
        };
        self.unlink(at);
        if dirty {
            self.mark_dirty(at);
        }
        self.place(at, place_on_hit(self.policy));
        true
    }

    fn place(&mut self, at: u32, segment: Segment) {
        self.push_newest(at, segment);
        if segment == Segment::Protected && demote_protected(self.protected.len, self.capacity) {
            let oldest = self.protected.oldest;
            self.unlink(oldest);
            self.push_newest(oldest, Segment::Probation);
        }
    }

    fn insert(&mut self, lpn: u32, dirty: bool) {
        debug_assert!(self.len < self.capacity);
        let node = Node {
            lpn,
            older: NIL,
            newer: NIL,
            segment: Segment::Probation,
            dirty_at: if dirty { self.clock } else { 0 },
        };
        let at = match self.free.pop() {
            Some(at) => {
                self.nodes[at as usize] = node;
                at
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        };
        let before = self.index.replace(lpn as usize, at);
        debug_assert!(before == NIL, "entry {lpn} inserted twice");
        let page = self.page_of(lpn);
        self.cached_in_page[page] += 1;
        self.len += 1;
        self.place(at, Segment::Probation);
    }

    fn is_full(&self) -> bool {
        self.len >= self.capacity
    }

    fn victim(&self) -> u32 {
        let lru = |l: &List| (l.oldest != NIL).then(|| self.nodes[l.oldest as usize].lpn);
        choose_victim(lru(&self.probation), lru(&self.protected)).expect("a full cache")
    }

    /// Removes `lpn`; returns whether it was dirty.
    fn remove(&mut self, lpn: u32) -> bool {
        let at = self.index.replace(lpn as usize, NIL);
        assert!(at != NIL, "entry {lpn} is not cached");
        self.unlink(at);
        self.free.push(at);
        let page = self.page_of(lpn);
        self.cached_in_page[page] -= 1;
        self.len -= 1;
        self.is_dirty(&self.nodes[at as usize])
    }

    /// Marks `lpn` dirty if cached (its translation page is updated later); returns
    /// whether it was cached.
    fn dirty_if_cached(&mut self, lpn: u32) -> bool {
        match self.node_of(lpn) {
            Some(at) => {
                self.mark_dirty(at);
                true
            }
            None => false,
        }
    }

    /// Cleans every dirty cached entry of translation page `tpage` (it was written).
    fn clean_page(&mut self, tpage: u32) {
        self.cleaned_at[tpage as usize] = self.clock;
        self.clock += 1;
    }

    /// How many entries of translation page `tpage` are cached.
    fn count_in_page(&self, tpage: u32) -> usize {
        self.cached_in_page[tpage as usize] as usize
    }

    /// The dirty cached entries, in no particular order.
    fn dirty_lpns(&self) -> impl Iterator<Item = u32> + '_ {
        [&self.probation, &self.protected]
            .into_iter()
            .flat_map(|list| {
                std::iter::successors((list.oldest != NIL).then_some(list.oldest), |&at| {
                    let newer = self.nodes[at as usize].newer;
                    (newer != NIL).then_some(newer)
                })
            })
            .map(|at| &self.nodes[at as usize])
            .filter(|node| self.is_dirty(node))
            .map(|node| node.lpn)
    }

    /// The lists hold exactly the indexed nodes, linked both ways, and the per-page
    /// counts and clean times agree with them.
    fn check(&self) -> Result<(), String> {
        let mut seen = 0;
        let mut per_page: BTreeMap<usize, u32> = BTreeMap::new();
        for list in [&self.probation, &self.protected] {
            let (mut at, mut prev, mut n) = (list.oldest, NIL, 0);
            while at != NIL {
                let node = &self.nodes[at as usize];
                if node.older != prev || self.index.get(node.lpn as usize) != Some(at) {
                    return Err(format!("CMT list broken at entry {}", node.lpn));
                }
                if node.dirty_at > self.clock {
                    return Err(format!("CMT entry {} dirty in the future", node.lpn));
                }
                *per_page.entry(self.page_of(node.lpn)).or_default() += 1;
                (prev, at, n) = (at, node.newer, n + 1);
            }
            if prev != list.newest || n != list.len {
                return Err(format!("CMT list of {} holds {n}", list.len));
            }
            seen += n;
        }
        if seen != self.len {
            return Err(format!("CMT lists hold {seen} of {} entries", self.len));
        }
        let (mut indexed, mut from) = (0, 0);
        while let Some(lpn) = self.index.next_set(from..self.index.len()) {
            (indexed, from) = (indexed + 1, lpn + 1);
        }
        if indexed != self.len {
            return Err(format!("CMT index holds {indexed} of {} entries", self.len));
        }
        for (page, &n) in self.cached_in_page.iter().enumerate() {
            let listed = per_page.get(&page).copied().unwrap_or(0);
            if n != listed {
                return Err(format!(
                    "CMT counts {n} entries of translation page {page}, which has {listed}"
                ));
            }
        }
        if let Some(page) = self.cleaned_at.iter().position(|&c| c >= self.clock) {
            return Err(format!("translation page {page} cleaned in the future"));
        }
        Ok(())
    }
}

/// Translation pages on flash: where each lives (the GTD), and the translation blocks.
#[derive(Debug)]
pub(crate) struct TranslationArea {
    entries_per_page: u32,
    pages_per_block: u32,
    units: u32,
    /// Translation page → its physical index (`block × pages_per_block + page`), or
    /// `NOWHERE` while never written. SRAM (DFTL's GTD), rebuilt at mount by scanning the
    /// translation blocks' spare areas; it survives a power cut in this model.
    gtd: Vec<u32>,
    /// Physical index → the translation page it holds while live, else `NOWHERE`.
    owner: Vec<u32>,
    valid: Vec<u32>,
    free: VecDeque<u32>,
    /// The open block and its next page.
    open: u32,
    next: u32,
}

impl TranslationArea {
    fn new(user_lbas: u64, entries_per_page: u32, pages_per_block: u32, units: u32) -> Self {
        let pages = user_lbas.div_ceil(entries_per_page as u64) as u32;
        let blocks = translation_blocks(pages, pages_per_block);
        TranslationArea {
            entries_per_page,
            pages_per_block,
            units,
            gtd: vec![NOWHERE; pages as usize],
            owner: vec![NOWHERE; (blocks * pages_per_block) as usize],
            valid: vec![0; blocks as usize],
            free: (1..blocks).collect(),
            open: 0,
            next: 0,
        }
    }

    fn page_of(&self, lpn: u32) -> u32 {
        lpn / self.entries_per_page
    }

    /// The die holding physical translation page `at`: a translation block is striped
    /// over every die (page `i` on die `i mod dies`), as controllers stripe their metadata
    /// writes, so a burst of translation programs does not queue on one die.
    fn unit_of_index(&self, at: u32) -> u32 {
        at % self.units
    }

    /// The die holding `tpage`, if it was ever written.
    fn unit_of(&self, tpage: u32) -> Option<u32> {
        let at = self.gtd[tpage as usize];
        (at != NOWHERE).then(|| self.unit_of_index(at))
    }

    /// Records `tpage` at the open block's next page; returns that physical page.
    fn place(&mut self, tpage: u32) -> u32 {
        assert!(self.next < self.pages_per_block, "translation block full");
        let old = self.gtd[tpage as usize];
        if old != NOWHERE {
            self.owner[old as usize] = NOWHERE;
            self.valid[(old / self.pages_per_block) as usize] -= 1;
        }
        let at = self.open * self.pages_per_block + self.next;
        self.gtd[tpage as usize] = at;
        self.owner[at as usize] = tpage;
        self.valid[self.open as usize] += 1;
        self.next += 1;
        at
    }

    /// Opens the next free block; returns the block translation-block GC must collect
    /// when that was the last free one.
    fn open_next(&mut self) -> Option<u32> {
        self.open = self.free.pop_front().expect("a spare translation block");
        self.next = 0;
        self.free.is_empty().then(|| self.gc_victim())
    }

    /// Moves the live pages of `victim` into the open block and frees it (its erase);
    /// returns each move's (from, to) physical page.
    fn collect(&mut self, victim: u32) -> Vec<(u32, u32)> {
        let live = self.live_pages(victim);
        let moves = live
            .iter()
            .map(|&tpage| (self.gtd[tpage as usize], self.place(tpage)))
            .collect();
        assert_eq!(
            self.valid[victim as usize], 0,
            "translation GC left live pages"
        );
        self.free.push_back(victim);
        moves
    }

    /// Greedy victim among full blocks other than the open one (pure choice).
    fn gc_victim(&self) -> u32 {
        (0..self.valid.len() as u32)
            .filter(|&b| b != self.open && !self.free.contains(&b))
            .min_by_key(|&b| (self.valid[b as usize], b))
            .expect("translation blocks besides the open one")
    }

    fn live_pages(&self, block: u32) -> Vec<u32> {
        let first = (block * self.pages_per_block) as usize;
        self.owner[first..first + self.pages_per_block as usize]
            .iter()
            .copied()
            .filter(|&t| t != NOWHERE)
            .collect()
    }
}

/// Translation blocks for `pages` translation pages: room for all of them, a quarter
/// more (so translation-block GC finds victims with little live data), and two spare
/// blocks (the open block and the one GC moves into). An assumption: DFTL and MQSim
/// leave the size of the translation area to the data GC's free pool.
fn translation_blocks(pages: u32, pages_per_block: u32) -> u32 {
    let full = pages.div_ceil(pages_per_block);
    full + full.div_ceil(4) + 2
}

/// The mapping cache of one device: the CMT and the translation area.
#[derive(Debug)]
pub(crate) struct MappingCache {
    cmt: Cmt,
    area: TranslationArea,
    /// log2 of the logical pages one entry covers (`ftl.mapping_unit_bytes` ÷ 4 KiB): the
    /// CMT and the translation pages hold one entry per mapping unit, keyed `lpn >> shift`.
    unit_shift: u32,
    /// Translation pages whose dirty entries a power cut lost: recovery writes them.
    stale_after_cut: BTreeSet<u32>,
    /// Step 4's setting for uncached entries.
    relocation_updates: RelocationUpdates,
    /// UFS HPB: the host's copy of part of the table (`hpb.rs`); `None` when off.
    pub(crate) hpb: Option<crate::hpb::Hpb>,
}

impl MappingCache {
    pub(crate) fn new(
        config: &MappingCacheConfig,
        user_lbas: u64,
        unit_lpns: u32,
        page_size_bytes: u32,
        pages_per_block: u32,
        units: u32,
    ) -> Option<MappingCache> {
        if config.is_off() {
            return None;
        }
        let keys = user_lbas.div_ceil(unit_lpns as u64);
        let entries_per_page = page_size_bytes / TRANSLATION_ENTRY_BYTES;
        Some(MappingCache {
            cmt: Cmt::new(
                config.entries() as usize,
                config.policy,
                keys,
                entries_per_page,
            ),
            unit_shift: unit_lpns.trailing_zeros(),
            area: TranslationArea::new(keys, entries_per_page, pages_per_block, units),
            stale_after_cut: BTreeSet::new(),
            relocation_updates: config.relocation_updates,
            hpb: crate::hpb::Hpb::new(&config.hpb),
        })
    }

    /// The dies holding the translation pages (on flash) of the entries of `lpns`.
    pub(crate) fn translation_units(&self, lpns: std::ops::Range<u32>) -> Vec<u32> {
        let first = self.area.page_of(lpns.start >> self.unit_shift);
        let last = self.area.page_of((lpns.end - 1) >> self.unit_shift);
        (first..=last)
            .filter_map(|t| self.area.unit_of(t))
            .collect()
    }

    /// Power loss: SRAM is gone; the pages with lost dirty entries are remembered.
    pub(crate) fn lose_power(&mut self) {
        let dirty: Vec<u32> = self.cmt.dirty_lpns().collect();
        for lpn in dirty {
            self.stale_after_cut.insert(self.area.page_of(lpn));
        }
        self.cmt = self.cmt.emptied();
        if let Some(hpb) = self.hpb.as_mut() {
            hpb.reset();
        }
    }
}

impl Ftl {
    /// Steps 1–3 of the module doc for the `count` logical pages from `lpn` of one host
    /// request; returns when their mapping entries are in SRAM.
    pub(crate) fn cmt_access(
        &mut self,
        lpn: u32,
        count: u32,
        dirty: bool,
        ready_ns: Nanos,
    ) -> Result<Nanos, FtlError> {
        let Some(mut cache) = self.mapping_cache.take() else {
            return Ok(ready_ns);
        };
        let result = self.cmt_access_with(&mut cache, lpn, count, dirty, ready_ns);
        self.mapping_cache = Some(cache);
        result
    }

    fn cmt_access_with(
        &mut self,
        cache: &mut MappingCache,
        lpn: u32,
        count: u32,
        dirty: bool,
        mut ready_ns: Nanos,
    ) -> Result<Nanos, FtlError> {
        let mut loaded = NOWHERE;
        if dirty {
            if let Some(hpb) = cache.hpb.as_mut() {
                (lpn..lpn + count).for_each(|l| hpb.mark(l));
            }
        }
        if count == 0 {
            return Ok(ready_ns);
        }
        // One lookup per mapping unit the request touches (per logical page with 4 KiB
        // mapping).
        let shift = cache.unit_shift;
        for l in lpn >> shift..=(lpn + count - 1) >> shift {
            if cache.cmt.touch(l, dirty) {
                self.counters.cmt_hits += 1;
                continue;
            }
            self.counters.cmt_misses += 1;
            while cache.cmt.is_full() {
                ready_ns = ready_ns.max(self.cmt_evict(cache, ready_ns)?);
            }
            let tpage = cache.area.page_of(l);
            if tpage != loaded {
                loaded = tpage;
                if let Some(unit) = cache.area.unit_of(tpage) {
                    ready_ns = self.nand.occupy_unit(unit, UnitOp::Read, ready_ns)?.end_ns;
                    self.counters.mapping_reads += 1;
                    self.counters.mapping_reads_miss += 1;
                }
            }
            cache.cmt.insert(l, dirty);
        }
        Ok(ready_ns)
    }

    /// Evicts the policy's victim; a dirty one's translation page is written with every
    /// dirty entry it holds. Returns when the eviction is done.
    fn cmt_evict(&mut self, cache: &mut MappingCache, now_ns: Nanos) -> Result<Nanos, FtlError> {
        let victim = cache.cmt.victim();
        if !cache.cmt.remove(victim) {
            return Ok(now_ns);
        }
        let tpage = cache.area.page_of(victim);
        cache.cmt.clean_page(tpage);
        // The SRAM holds only some entries of the page: the rest come from its flash copy
        // (DFTL's worst case is "two translation page reads and one write").
        let mut ready_ns = now_ns;
        let cached = cache.cmt.count_in_page(tpage);
        if let (Some(unit), false) = (
            cache.area.unit_of(tpage),
            cached == cache.area.entries_per_page as usize,
        ) {
            ready_ns = self.nand.occupy_unit(unit, UnitOp::Read, ready_ns)?.end_ns;
            self.counters.mapping_reads += 1;
            self.counters.mapping_reads_evict += 1;
        }
        self.write_translation_page(cache, tpage, ready_ns)
    }

    /// Programs `tpage` out of place (translation-block GC first if no page is left).
    fn write_translation_page(
        &mut self,
        cache: &mut MappingCache,
        tpage: u32,
        now_ns: Nanos,
    ) -> Result<Nanos, FtlError> {
        let mut ready_ns = now_ns;
        if cache.area.next == cache.area.pages_per_block {
            ready_ns = self.open_translation_block(cache, now_ns)?;
        }
        let at = cache.area.place(tpage);
        let unit = cache.area.unit_of_index(at);
        self.counters.mapping_programs += 1;
        Ok(self
            .nand
            .occupy_unit(unit, UnitOp::Program, ready_ns)?
            .end_ns)
    }

    /// Opens the next free translation block; when it is the last, translation-block GC
    /// moves the live pages of the emptiest block into it and erases that block.
    fn open_translation_block(
        &mut self,
        cache: &mut MappingCache,
        now_ns: Nanos,
    ) -> Result<Nanos, FtlError> {
        let Some(victim) = cache.area.open_next() else {
            return Ok(now_ns);
        };
        let moves = cache.area.collect(victim);
        // The moves are independent: all reads are queued at once, then each program
        // after its own read (chaining every move behind the previous one left all but
        // two dies idle).
        let mut read_ns = Vec::with_capacity(moves.len());
        for &(from, _) in &moves {
            let unit = cache.area.unit_of_index(from);
            read_ns.push(self.nand.occupy_unit(unit, UnitOp::Read, now_ns)?.end_ns);
        }
        let mut ready_ns = now_ns;
        for (&(_, to), &read_end_ns) in moves.iter().zip(&read_ns) {
            let unit = cache.area.unit_of_index(to);
            let end_ns = self
                .nand
                .occupy_unit(unit, UnitOp::Program, read_end_ns)?
                .end_ns;
            ready_ns = ready_ns.max(end_ns);
        }
        self.counters.translation_gc_moves += moves.len() as u64;
        self.counters.translation_gc_cycles += 1;
        // The striped block is erased on every die at once.
        let mut erased_ns = ready_ns;
        for unit in 0..cache.area.units {
            let end_ns = self.nand.occupy_unit(unit, UnitOp::Erase, ready_ns)?.end_ns;
            erased_ns = erased_ns.max(end_ns);
        }
        Ok(erased_ns)
    }

    /// Step 4: the mappings of `lpns` changed without a host request (GC, wear levelling,
    /// trims). Returns when their translation pages are up to date.
    pub(crate) fn cmt_update(
        &mut self,
        lpns: impl Iterator<Item = u32>,
        now_ns: Nanos,
    ) -> Result<Nanos, FtlError> {
        let Some(mut cache) = self.mapping_cache.take() else {
            return Ok(now_ns);
        };
        let result = self.cmt_update_with(&mut cache, lpns, now_ns);
        self.mapping_cache = Some(cache);
        result
    }

    fn cmt_update_with(
        &mut self,
        cache: &mut MappingCache,
        lpns: impl Iterator<Item = u32>,
        now_ns: Nanos,
    ) -> Result<Nanos, FtlError> {
        let mut pages = BTreeSet::new();
        let mut done_ns = now_ns;
        for lpn in lpns {
            if let Some(hpb) = cache.hpb.as_mut() {
                hpb.mark(lpn);
            }
            let key = lpn >> cache.unit_shift;
            let cached = cache.cmt.dirty_if_cached(key);
            match relocation_update(cache.relocation_updates, cached) {
                RelocationAction::MarkDirty => {}
                RelocationAction::WriteTranslationPage => {
                    pages.insert(cache.area.page_of(key));
                }
                RelocationAction::InsertDirty => {
                    while cache.cmt.is_full() {
                        done_ns = done_ns.max(self.cmt_evict(cache, now_ns)?);
                    }
                    cache.cmt.insert(key, true);
                    self.counters.mapping_updates_inserted += 1;
                }
            }
        }
        // Read-modify-write of each page (DFTL's batch update: one per translation page).
        for &tpage in &pages {
            let ready_ns = self.read_translation_page(cache, tpage, now_ns)?;
            self.counters.mapping_updates_uncached += 1;
            done_ns = done_ns.max(self.write_translation_page(cache, tpage, ready_ns)?);
        }
        let took_ns = done_ns - now_ns;
        self.counters.mapping_update_ns_total += took_ns;
        self.counters.mapping_update_ns_max = self.counters.mapping_update_ns_max.max(took_ns);
        Ok(done_ns)
    }

    /// Reads `tpage` for an update (no read if it was never written); returns when its
    /// contents are in the controller.
    fn read_translation_page(
        &mut self,
        cache: &MappingCache,
        tpage: u32,
        now_ns: Nanos,
    ) -> Result<Nanos, FtlError> {
        let Some(unit) = cache.area.unit_of(tpage) else {
            return Ok(now_ns);
        };
        self.counters.mapping_reads += 1;
        Ok(self.nand.occupy_unit(unit, UnitOp::Read, now_ns)?.end_ns)
    }

    /// After a recovery scan at `now_ns`: the translation pages whose dirty entries the
    /// cut lost are written from the recovered mapping. Returns when they are durable.
    pub(crate) fn cmt_recover(&mut self, now_ns: Nanos) -> Result<Nanos, FtlError> {
        let Some(mut cache) = self.mapping_cache.take() else {
            return Ok(now_ns);
        };
        let stale = std::mem::take(&mut cache.stale_after_cut);
        let mut done_ns = now_ns;
        let mut result = Ok(());
        for tpage in stale {
            match self.write_translation_page(&mut cache, tpage, now_ns) {
                Ok(t) => done_ns = done_ns.max(t),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        if result.is_ok() {
            self.materialise_translation_pages(&mut cache);
        }
        self.mapping_cache = Some(cache);
        result.map(|()| done_ns)
    }

    /// Translation pages of `entries` entries instead of a flash page's worth, so a tiny
    /// test device has many of them (batching and translation GC get exercised).
    #[cfg(test)]
    pub(crate) fn shrink_translation_pages(&mut self, entries: u32) {
        let g = self.config.nand.geometry.clone();
        let cache = self.mapping_cache.as_mut().expect("a mapping cache");
        let units = self.user_lbas.div_ceil(self.unit_lpns as u64);
        cache.area = TranslationArea::new(units, entries, g.pages_per_block, g.units());
        // The cache is still empty: its per-page books take the new page size.
        assert_eq!(
            cache.cmt.len, 0,
            "translation pages resized with entries cached"
        );
        cache.cmt = Cmt::new(cache.cmt.capacity, cache.cmt.policy, units, entries);
    }

    /// Every translation page that covers a mapped logical page exists on flash on a
    /// real device; state mounted from elsewhere (`DeviceParts`, a constructed steady
    /// state) never wrote them here, so they are placed now, at no cost in time.
    fn materialise_translation_pages(&self, cache: &mut MappingCache) {
        let area = &mut cache.area;
        let mut last = NOWHERE;
        for (lpn, slot) in self.mapping.l2p.iter().enumerate() {
            let tpage = area.page_of(lpn as u32 >> cache.unit_shift);
            if slot == crate::UNMAPPED || tpage == last || area.gtd[tpage as usize] != NOWHERE {
                continue;
            }
            last = tpage;
            if area.next == area.pages_per_block {
                if let Some(victim) = area.open_next() {
                    area.collect(victim);
                }
            }
            area.place(tpage);
        }
    }

    /// Full check: the CMT within its bound, the segments and entries agree, the GTD and
    /// the translation blocks agree.
    pub(crate) fn check_mapping_cache(&self) -> Result<(), String> {
        let Some(cache) = &self.mapping_cache else {
            return Ok(());
        };
        let (cmt, area) = (&cache.cmt, &cache.area);
        if cmt.len > cmt.capacity {
            return Err(format!(
                "CMT holds {} entries for {} places",
                cmt.len, cmt.capacity
            ));
        }
        cmt.check()?;
        for (t, &at) in area.gtd.iter().enumerate() {
            if at != NOWHERE && area.owner[at as usize] != t as u32 {
                return Err(format!(
                    "GTD: translation page {t} at {at}, which is not it"
                ));
            }
        }
        for (b, &v) in area.valid.iter().enumerate() {
            if area.live_pages(b as u32).len() as u32 != v {
                return Err(format!("translation block {b}: valid count {v} is wrong"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segmented_lru_protects_entries_hit_twice() {
        let mut cmt = Cmt::new(4, CmtPolicyKind::SegmentedLru, 64, 8);
        for lpn in 0..4 {
            cmt.insert(lpn, false);
        }
        assert!(cmt.touch(0, false));
        // 0 is protected now; the probationary LRU is 1.
        assert_eq!(cmt.victim(), 1);
        let mut lru = Cmt::new(4, CmtPolicyKind::Lru, 64, 8);
        for lpn in 0..4 {
            lru.insert(lpn, false);
        }
        assert!(lru.touch(0, false));
        assert_eq!(lru.victim(), 1);
        assert!(lru.touch(1, false));
        assert_eq!(lru.victim(), 2);
    }

    #[test]
    fn protected_segment_is_bounded_to_half() {
        let mut cmt = Cmt::new(4, CmtPolicyKind::SegmentedLru, 64, 8);
        for lpn in 0..4 {
            cmt.insert(lpn, false);
        }
        for lpn in 0..4 {
            assert!(cmt.touch(lpn, false));
        }
        assert_eq!(cmt.protected.len, 2);
        cmt.check().unwrap();
        // The first two promoted were demoted back, least recent first.
        assert_eq!(cmt.victim(), 0);
    }

    #[test]
    fn translation_gc_keeps_every_page_findable() {
        let mut area = TranslationArea::new(64 * 1024, 1024, 4, 2);
        assert_eq!(area.gtd.len(), 64);
        for round in 0..50u32 {
            for t in 0..64u32 {
                if (t * 7 + round) % 3 == 0 {
                    continue;
                }
                if area.next == area.pages_per_block {
                    if let Some(victim) = area.open_next() {
                        area.collect(victim);
                    }
                }
                area.place(t);
            }
        }
        let live: u32 = area.valid.iter().sum();
        assert_eq!(live, 64);
    }
    /// `ufs31` shrunk to 32 blocks of 64 pages per plane (8 planes, real timings), with a
    /// cache of `entries` entries and translation pages of 8 entries.
    fn cached_ufs31(entries: u64) -> Ftl {
        cached_ufs31_with(entries, RelocationUpdates::WriteThrough)
    }

    fn cached_ufs31_with(entries: u64, relocation_updates: RelocationUpdates) -> Ftl {
        let mut d = crate::presets::ufs31();
        d.nand.geometry.pages_per_block = 64;
        d.nand.geometry.blocks_per_plane = 32;
        // Every plane its own timeline, so the schedule tests below see the batch spread
        // over all eight planes (under one command per die, two dies).
        d.nand.die_rules = flashstack_nand::DieRules::IndependentPlanes;
        d.nand.timing.channel_model = flashstack_nand::ChannelModel::BusyUntil;
        d.ftl.allocation = crate::Allocation::Page;
        d.ftl.mapping_cache = MappingCacheConfig {
            sram_bytes: entries * 8,
            policy: CmtPolicyKind::SegmentedLru,
            entry_bytes: 8,
            relocation_updates,
            hpb: Default::default(),
        };
        let mut ftl = Ftl::new(d, false, 1).unwrap();
        ftl.shrink_translation_pages(8);
        ftl
    }

    fn write_one(ftl: &mut Ftl, lba: u64) {
        use flashstack_block::{BlockDevice, Hints, Payload};
        let payload = Payload::Unstored { lba_count: 1 };
        ftl.write(0, lba, payload, Hints::default()).unwrap();
    }

    /// A dirty victim whose translation page is on flash and not all in SRAM is a
    /// read-modify-write (DFTL: "two translation page reads and one write" at worst).
    #[test]
    fn evicting_a_dirty_entry_reads_its_translation_page_first() {
        let mut ftl = cached_ufs31(2);
        // 1 and 17 dirty; 41 evicts 1 (page 0 written, never read before: no read).
        for lba in [1u64, 17, 41] {
            write_one(&mut ftl, lba);
        }
        assert_eq!(ftl.counters.mapping_reads, 0);
        // 2 misses (reads page 0) and evicts 17 (page 2 not on flash: no read); 50
        // evicts 41 (page 5: no read); 60 evicts 2, whose page 0 is on flash: a read.
        for lba in [2u64, 50, 60] {
            write_one(&mut ftl, lba);
        }
        let c = &ftl.counters;
        assert_eq!((c.mapping_reads_miss, c.mapping_reads_evict), (1, 1));
        assert_eq!((c.mapping_reads, c.mapping_programs), (2, 4));
        ftl.check_invariants().unwrap();
    }

    /// `cached` relocation updates (MQSim's): GC's entries that are not cached program no
    /// translation page at once; they enter the cache dirty and reach flash when evicted.
    #[test]
    fn cached_relocation_updates_reach_flash_at_eviction() {
        let mut ftl = cached_ufs31_with(4, RelocationUpdates::Cached);
        // Translation pages of 8 entries: each of these is in a page of its own.
        let done_ns = ftl.cmt_update([0u32, 8, 16].into_iter(), 5).unwrap();
        let c = &ftl.counters;
        assert_eq!(done_ns, 5, "room in the cache: nothing waits");
        assert_eq!((c.mapping_programs, c.mapping_updates_uncached), (0, 0));
        assert_eq!(c.mapping_updates_inserted, 3);
        // Three more into a cache of four: two dirty entries are evicted and programmed
        // (their pages were never on flash: no read first).
        let done_ns = ftl.cmt_update([24u32, 32, 40].into_iter(), 5).unwrap();
        let c = &ftl.counters;
        assert!(done_ns > 5);
        assert_eq!((c.mapping_programs, c.mapping_reads), (2, 0));
        assert_eq!(c.mapping_updates_inserted, 6);
        // The write-through setting programs every page of the batch at once.
        let mut through = cached_ufs31(4);
        through.cmt_update([0u32, 8, 16].into_iter(), 5).unwrap();
        let c = &through.counters;
        assert_eq!((c.mapping_programs, c.mapping_updates_uncached), (3, 3));
        assert_eq!(c.mapping_updates_inserted, 0);
        ftl.check_invariants().unwrap();
    }

    /// A batch of translation updates (data GC moving cold data, its plane busy with the
    /// moves) costs the busy plane's backlog plus its die time spread over the 8 planes:
    /// 256 read-modify-writes are 32 deep. A regression guard for the batch's schedule
    /// (`docs/ftl.md`, "Where the tail comes from").
    #[test]
    fn a_translation_update_batch_runs_on_every_die_at_once() {
        let mut ftl = cached_ufs31(2);
        let lpns = || (0..256u32).map(|t| t * 8);
        // The first batch writes the 256 translation pages; the second rewrites them.
        let t0 = 1_000_000_000;
        let first_ns = ftl.cmt_update(lpns(), t0).unwrap();
        let t1 = first_ns + 1_000_000_000;
        // As in data GC: the victim's plane is busy moving its live pages.
        let mut busy_ns = t1;
        for _ in 0..200 {
            busy_ns = ftl.nand.occupy_unit(0, UnitOp::Program, t1).unwrap().end_ns;
        }
        let done_ns = ftl.cmt_update(lpns(), t1).unwrap();
        assert_eq!(ftl.counters.mapping_reads, 256);
        let t = &ftl.config.nand.timing;
        let per_die = 256 / 8;
        let bound_ns = (busy_ns - t1) + per_die * (t.program_ns + t.read_ns) * 5 / 4;
        assert!(
            done_ns - t1 <= bound_ns,
            "{} µs for 256 updates on 8 dies (bound {} µs)",
            (done_ns - t1) / 1_000,
            bound_ns / 1_000
        );
        assert_eq!(ftl.counters.mapping_update_ns_max, done_ns - t1);
    }

    /// Translation-block GC's moves are independent: they run on every die at once.
    #[test]
    fn translation_gc_moves_run_on_every_die_at_once() {
        let mut ftl = cached_ufs31(2);
        let mut cache = ftl.mapping_cache.take().unwrap();
        // 512 translation pages in 12 blocks of 64 over the 8 planes: blocks 0-7 hold
        // every page, then 24 pages of each are written again (blocks 8-10), leaving 40
        // live pages in each of blocks 0-7.
        cache.area = TranslationArea::new(4096, 8, 64, 8);
        let area = &mut cache.area;
        let again = (0..8u32).flat_map(|b| (0..24).map(move |j| 64 * b + j));
        for t in (0..512u32).chain(again) {
            if area.next == area.pages_per_block {
                assert_eq!(area.open_next(), None);
            }
            area.place(t);
        }
        let now = 1_000_000_000;
        let done_ns = ftl.open_translation_block(&mut cache, now).unwrap();
        let moves = ftl.counters.translation_gc_moves;
        assert_eq!(moves, 40);
        let tm = &ftl.config.nand.timing;
        let bound_ns = moves.div_ceil(8) * (tm.program_ns + tm.read_ns) * 5 / 4 + tm.erase_ns;
        assert!(
            done_ns - now <= bound_ns,
            "{} µs for {moves} moves on 8 dies (bound {} µs)",
            (done_ns - now) / 1_000,
            bound_ns / 1_000
        );
        ftl.mapping_cache = Some(cache);
    }
}
