//! Seeded synthetic workloads: a request stream computed on the fly, O(1) memory, the same
//! for the same spec, capacity and seed.

mod spec;
mod zipf;

use flashstack_block::RequestKind;
use flashstack_sim::units::format_bytes;
use flashstack_sim::Rng;

pub use spec::{
    Interarrival, Pattern, SizeDistribution, SpecError, SyntheticSpec, SIZE_ENTRIES_MAX,
};

use crate::TraceRequest;
use spec::size_text;
use zipf::{Scatter, Zipf};

/// Starts the request stream of `spec` on a device of `capacity_bytes`.
///
/// Every request lies inside the footprint (the first `footprint_bytes`, or the whole
/// device), which must fit the device; offsets are multiples of `align_bytes`. The kind, size,
/// address and time draws use separate sub-streams of the seed, so changing, say, the read
/// fraction leaves the sizes and the arrival times of the stream unchanged.
pub fn synthetic(
    spec: &SyntheticSpec,
    capacity_bytes: u64,
    seed: u64,
) -> Result<SyntheticSource, SpecError> {
    spec.validate()?;
    let footprint_bytes = spec.footprint_bytes.unwrap_or(capacity_bytes);
    if footprint_bytes > capacity_bytes {
        let reason = format!(
            "exceeds the device capacity of {}",
            format_bytes(capacity_bytes)
        );
        return Err(SpecError::bad(
            "footprint",
            size_text(footprint_bytes),
            reason,
        ));
    }
    let slots = footprint_bytes / spec.align_bytes;
    let max_need = spec.sizes.max_bytes().div_ceil(spec.align_bytes);
    if slots == 0 || max_need > slots {
        let reason = format!(
            "has a request larger than the footprint of {}",
            format_bytes(footprint_bytes)
        );
        return Err(SpecError::bad("size", &spec.sizes, reason));
    }
    let mut root = Rng::new(seed);
    let streams = Streams {
        kind: root.fork(1),
        size: root.fork(2),
        address: root.fork(3),
        time: root.fork(4),
    };
    let placement = Placement::new(spec.pattern, slots, &mut root.fork(5));
    Ok(SyntheticSource::new(spec, slots, placement, streams))
}

/// The request iterator of a synthetic workload (see [`synthetic`]).
#[derive(Clone, Debug)]
pub struct SyntheticSource {
    remaining: u64,
    read_fraction: f64,
    trim_fraction: f64,
    flush_every: Option<u64>,
    writes_since_flush: u64,
    flush_due: bool,
    /// `(bytes, cumulative weight)`, for inversion sampling.
    sizes: Vec<(u64, f64)>,
    interarrival: Interarrival,
    now_ns: u64,
    started: bool,
    align_bytes: u64,
    slots: u64,
    placement: Placement,
    streams: Streams,
}

/// Independent random streams, one per decision.
#[derive(Clone, Debug)]
struct Streams {
    kind: Rng,
    size: Rng,
    address: Rng,
    time: Rng,
}

impl SyntheticSource {
    fn new(spec: &SyntheticSpec, slots: u64, placement: Placement, streams: Streams) -> Self {
        let mut total = 0.0;
        let sizes = spec
            .sizes
            .entries()
            .iter()
            .map(|&(bytes, weight)| {
                total += weight;
                (bytes, total)
            })
            .collect();
        SyntheticSource {
            remaining: spec.count,
            read_fraction: spec.read_fraction,
            trim_fraction: spec.trim_fraction,
            flush_every: spec.flush_every,
            writes_since_flush: 0,
            flush_due: false,
            sizes,
            interarrival: spec.interarrival,
            now_ns: 0,
            started: false,
            align_bytes: spec.align_bytes,
            slots,
            placement,
            streams,
        }
    }

    /// Bytes the workload addresses, from offset 0 (the footprint rounded down to the
    /// alignment).
    pub fn footprint_bytes(&self) -> u64 {
        self.slots * self.align_bytes
    }

    fn draw_kind(&mut self) -> RequestKind {
        let u = self.streams.kind.unit_f64();
        if u < self.read_fraction {
            RequestKind::Read
        } else if u < self.read_fraction + self.trim_fraction {
            RequestKind::Trim
        } else {
            RequestKind::Write
        }
    }

    fn draw_size(&mut self) -> u64 {
        let total = self.sizes.last().map_or(0.0, |&(_, cumulative)| cumulative);
        let target = self.streams.size.unit_f64() * total;
        let index = self
            .sizes
            .partition_point(|&(_, cumulative)| cumulative <= target);
        let last = self.sizes.len().saturating_sub(1);
        self.sizes
            .get(index.min(last))
            .map_or(0, |&(bytes, _)| bytes)
    }

    fn advance_time(&mut self) {
        if !self.started {
            self.started = true;
            return;
        }
        let gap_ns = match self.interarrival {
            Interarrival::Fixed(gap_ns) => gap_ns,
            Interarrival::Exponential { mean_ns } => {
                let u = self.streams.time.unit_f64();
                (-(mean_ns as f64) * (1.0 - u).ln()).round() as u64
            }
            Interarrival::Back2Back => 0,
        };
        self.now_ns = self.now_ns.saturating_add(gap_ns);
    }

    fn count_write(&mut self) {
        let Some(every) = self.flush_every else {
            return;
        };
        self.writes_since_flush += 1;
        if self.writes_since_flush == every {
            self.writes_since_flush = 0;
            self.flush_due = true;
        }
    }

    fn request(&self, kind: RequestKind, offset_bytes: u64, len_bytes: u64) -> TraceRequest {
        TraceRequest {
            arrival_ns: self.now_ns,
            kind,
            offset_bytes,
            len_bytes,
            hints: Default::default(),
            process: 0,
        }
    }
}

impl Iterator for SyntheticSource {
    type Item = TraceRequest;

    /// The next request; a due flush arrives together with the write that made it due.
    fn next(&mut self) -> Option<TraceRequest> {
        if self.flush_due {
            self.flush_due = false;
            return Some(self.request(RequestKind::Flush, 0, 0));
        }
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        self.advance_time();
        let kind = self.draw_kind();
        let len_bytes = self.draw_size();
        let need = len_bytes.div_ceil(self.align_bytes);
        let slot = self
            .placement
            .pick(kind, need, self.slots, &mut self.streams.address);
        if kind == RequestKind::Write {
            self.count_write();
        }
        Some(self.request(kind, slot * self.align_bytes, len_bytes))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let data = usize::try_from(self.remaining).unwrap_or(usize::MAX);
        let low = data.saturating_add(usize::from(self.flush_due));
        match self.flush_every {
            None => (low, Some(low)),
            Some(_) => (low, None),
        }
    }
}

/// Where the next request starts, in aligned slots.
#[derive(Clone, Debug)]
enum Placement {
    /// Next slot per kind (read, write, trim).
    Sequential([u64; 3]),
    Uniform,
    Zipf {
        zipf: Zipf,
        scatter: Scatter,
    },
    HotCold {
        hot_slots: u64,
        hot_access: f64,
    },
}

impl Placement {
    fn new(pattern: Pattern, slots: u64, rng: &mut Rng) -> Self {
        match pattern {
            Pattern::Sequential => Placement::Sequential([0; 3]),
            Pattern::Uniform => Placement::Uniform,
            Pattern::Zipf { theta } => Placement::Zipf {
                zipf: Zipf::new(slots, theta),
                scatter: Scatter::new(slots, rng),
            },
            Pattern::HotCold {
                hot_space_fraction,
                hot_access_fraction,
            } => {
                let hot_slots = (slots as f64 * hot_space_fraction).round() as u64;
                Placement::HotCold {
                    hot_slots: hot_slots.clamp(1, slots),
                    hot_access: hot_access_fraction,
                }
            }
        }
    }

    /// A start slot such that `start + need <= slots` (`need <= slots` is checked up front).
    fn pick(&mut self, kind: RequestKind, need: u64, slots: u64, rng: &mut Rng) -> u64 {
        let last_start = slots - need;
        match self {
            Placement::Sequential(cursors) => {
                let index = match kind {
                    RequestKind::Read => 0,
                    RequestKind::Write => 1,
                    RequestKind::Trim | RequestKind::Flush => 2,
                };
                let cursor = &mut cursors[index];
                if *cursor > last_start {
                    *cursor = 0;
                }
                let start = *cursor;
                *cursor += need;
                start
            }
            Placement::Uniform => rng.below(last_start + 1),
            Placement::Zipf { zipf, scatter } => {
                let page = scatter.apply(zipf.sample(rng) - 1);
                page % (last_start + 1)
            }
            Placement::HotCold {
                hot_slots,
                hot_access,
            } => pick_hot_cold(*hot_slots, *hot_access, need, slots, rng),
        }
    }
}

/// Uniform inside the hot region (slots `0..hot_slots`) with probability `hot_access`, else
/// inside the cold remainder; a request too large for its region goes anywhere.
fn pick_hot_cold(hot_slots: u64, hot_access: f64, need: u64, slots: u64, rng: &mut Rng) -> u64 {
    let (start, len) = if rng.chance(hot_access) {
        (0, hot_slots)
    } else {
        (hot_slots, slots - hot_slots)
    };
    if need <= len {
        start + rng.below(len - need + 1)
    } else {
        rng.below(slots - need + 1)
    }
}
