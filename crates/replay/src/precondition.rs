//! Preconditioning: fill the device to a utilisation, then age it with overwrites until
//! garbage collection reaches a steady state, before anything is measured. The overwrites
//! are uniform random 4 KiB ones, or shaped like the measured workload's writes
//! ([`AgingShape`], `shape.rs`).
//!
//! Steady state is declared once garbage collection has started (free space that was never
//! written does not count as steady) and the write amplification of three consecutive
//! windows (each a quarter of the filled LBAs, at least 4,096 writes) agrees within the
//! tolerance,
//! and aging always stops after `aging_factor_max` × the filled LBAs. Both bounds make the
//! step deterministic and finite, whatever the device.

use std::fmt;

use flashstack_block::{BlockDevice, BlockError, Hints, LBA_SIZE};
use flashstack_sim::units::format_count;
use flashstack_sim::Rng;

use crate::prefill::{Prefill, WriteStream};
use crate::shape::{next_write, AgingPlan, AgingShape, REGION_LBAS};
use crate::{Progress, ReplayError, Replayer};

const FILL_CHUNK_LBAS: u32 = 32;
const WINDOW_LBAS_MIN: u64 = 4_096;
/// From this fill on, the device's tables will be mostly touched anyway: back them with
/// huge pages (faster lookups) rather than 4 KiB pages (memory that follows the data).
const DENSE_UTILIZATION: f64 = 0.5;

/// How the steady state is reached.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PreconditionMethod {
    /// Fill, then replay random overwrites until write amplification is steady.
    #[default]
    Replay,
    /// Fill and age by construction (`Ftl::constructed_steady_state`: the steady state of
    /// uniform random overwrites laid out directly), then settle with short windows of
    /// random overwrites until GC runs and write amplification is steady. Addresses-only
    /// page-mapped devices; others are refused with a clear error.
    Construct,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Precondition {
    /// Fraction of the user capacity to fill, in (0, 1].
    pub utilization: f64,
    /// Upper bound on aging writes, as a multiple of the filled LBAs (0 = fill only).
    pub aging_factor_max: f64,
    /// Relative change of write amplification between windows that counts as steady.
    pub steady_tolerance: f64,
    pub method: PreconditionMethod,
    /// What the aging writes look like (`uniform-4k`, or the workload's own shape, which
    /// needs [`Replayer::shape_aging_on`] and the replay method).
    pub shape: AgingShape,
}

impl Default for Precondition {
    fn default() -> Self {
        Precondition {
            utilization: 0.9,
            aging_factor_max: 4.0,
            steady_tolerance: 0.02,
            method: PreconditionMethod::Replay,
            shape: AgingShape::Uniform4k,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct PreconditionReport {
    pub utilization: f64,
    pub filled_lbas: u64,
    /// Aging write requests.
    pub aging_writes: u64,
    /// LBAs those requests wrote (equal to `aging_writes` with `uniform-4k`).
    pub aging_lbas: u64,
    pub shape: AgingShape,
    /// The bound on aging writes, as a multiple of the filled LBAs.
    pub aging_factor_max: f64,
    /// Whether garbage collection erased a block while aging.
    pub gc_started: bool,
    pub steady: bool,
    pub write_amplification_last_window: f64,
    /// With [`PreconditionMethod::Construct`]: the constructed state's model write
    /// amplification.
    pub constructed_model_wa: Option<f64>,
}

impl PreconditionReport {
    /// `filled` LBAs written, nothing aged yet.
    fn filled(p: &Precondition, filled: u64) -> PreconditionReport {
        PreconditionReport {
            utilization: p.utilization,
            filled_lbas: filled,
            aging_writes: 0,
            aging_lbas: 0,
            shape: p.shape,
            aging_factor_max: p.aging_factor_max,
            gc_started: false,
            steady: false,
            write_amplification_last_window: 0.0,
            constructed_model_wa: None,
        }
    }
}

impl fmt::Display for PreconditionReport {
    /// What state the measurement starts from, in words a user can act on.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "filled {:.0}% ({} LBAs)",
            self.utilization * 100.0,
            format_count(self.filled_lbas)
        )?;
        if let Some(model) = self.constructed_model_wa {
            write!(
                f,
                " and aged by construction (model write amplification {model:.3}), settled"
            )?;
        }
        if self.aging_writes == 0 {
            return write!(f, ", not aged");
        }
        let writes = match self.shape {
            AgingShape::Uniform4k => format!("{} random writes", format_count(self.aging_writes)),
            AgingShape::Workload => format!(
                "{} workload-shaped writes ({} LBAs)",
                format_count(self.aging_writes),
                format_count(self.aging_lbas)
            ),
        };
        let wa = self.write_amplification_last_window;
        if self.steady {
            return write!(
                f,
                ", aged with {writes} to steady state (write amplification \
                 {wa:.3}, stable over three windows)"
            );
        }
        write!(
            f,
            ", aged with {writes}, the bound ({} x the filled LBAs), \
             before steady state: ",
            format!("{:.2}", self.aging_factor_max)
                .trim_end_matches('0')
                .trim_end_matches('.')
        )?;
        if self.gc_started {
            write!(
                f,
                "garbage collection runs but write amplification still changes (last \
                 window {wa:.3}); a higher --aging-max ages the device further"
            )
        } else {
            write!(
                f,
                "garbage collection never ran (free blocks never ran out), so this \
                 measures a device not yet in use; fill more (--precondition) or age \
                 longer (--aging-max) to measure one with GC at work"
            )
        }
    }
}

pub(crate) fn run(
    replayer: &mut Replayer,
    p: &Precondition,
    progress: &mut dyn Progress,
) -> Result<PreconditionReport, ReplayError> {
    let capacity = replayer.ftl.capacity_lbas();
    let wanted = ((capacity as f64 * p.utilization.clamp(0.0, 1.0)) as u64).min(capacity);
    let mut filled = wanted;
    if p.shape == AgingShape::Workload {
        // Whole regions: a fill ending mid-page would leave the host frontier's open page
        // part-filled, and every aligned extent written after it would straddle one more
        // flash page than it covers (on full `ufs31`, 8.87 pages per 128 KiB read instead
        // of 8).
        filled -= filled % REGION_LBAS;
        if wanted > 0 && filled == 0 {
            return Err(ReplayError::AgingShape(format!(
                "the fill ({} KiB) holds no whole region of {} KiB to age; fill more \
                 (--precondition)",
                wanted * LBA_SIZE as u64 / 1024,
                REGION_LBAS * LBA_SIZE as u64 / 1024
            )));
        }
    }
    // Decided before anything is written, so that a shape that cannot run fails at once.
    let plan = aging_plan(replayer, p, filled).map_err(ReplayError::AgingShape)?;
    fill_and_age(replayer, p, filled, plan, progress).map_err(ReplayError::Precondition)
}

/// Fills the first `filled` LBAs and ages them with `plan` (or constructs the state).
fn fill_and_age(
    replayer: &mut Replayer,
    p: &Precondition,
    filled: u64,
    plan: AgingPlan,
    progress: &mut dyn Progress,
) -> Result<PreconditionReport, BlockError> {
    if p.method == PreconditionMethod::Construct && filled > 0 {
        return construct(replayer, p, filled, progress);
    }
    if p.utilization >= DENSE_UTILIZATION {
        replayer.ftl.expect_dense();
    }
    progress.phase("precondition: fill", Some(filled));
    let chunks = (0..filled)
        .step_by(FILL_CHUNK_LBAS as usize)
        .map(|lba| (lba, FILL_CHUNK_LBAS.min((filled - lba) as u32)));
    replayer.with_prefill(|replayer, mut prefill| {
        let mut writes = WriteStream::new(chunks);
        while let Some((lba, count)) = writes.next(prefill.as_deref_mut()) {
            let now = replayer.ftl.busy_until_ns();
            replayer.write_from(now, lba, count, Hints::default(), prefill.as_deref_mut())?;
            let done = lba + count as u64;
            if done.is_multiple_of(FILL_CHUNK_LBAS as u64 * 1024) {
                progress.advance(done);
            }
        }
        Ok::<(), BlockError>(())
    })?;
    let mut report = PreconditionReport::filled(p, filled);
    if filled > 0 && p.aging_factor_max > 0.0 {
        let window = (filled / 4).max(WINDOW_LBAS_MIN);
        age(replayer, p, (filled, window), plan, &mut report, progress)?;
    }
    Ok(report)
}

/// Where the aging writes go: the configured shape over the `filled` LBAs.
fn aging_plan(replayer: &Replayer, p: &Precondition, filled: u64) -> Result<AgingPlan, String> {
    match p.shape {
        AgingShape::Uniform4k => Ok(AgingPlan::Uniform4k { filled }),
        AgingShape::Workload if p.method == PreconditionMethod::Construct => Err(
            "construction lays out the steady state of uniform 4 KiB overwrites; use the \
             replay method (--precondition-method replay)"
                .into(),
        ),
        AgingShape::Workload => {
            let Some(shape) = &replayer.workload_shape else {
                return Err(
                    "no workload to take the shape from (give the trace or synthetic \
                            workload to Replayer::shape_aging_on before prepare)"
                        .into(),
                );
            };
            if filled == 0 || p.aging_factor_max <= 0.0 {
                return Ok(AgingPlan::Uniform4k { filled });
            }
            let plan = shape.plan(filled, replayer.config.seed)?;
            Ok(AgingPlan::Workload(Box::new(plan)))
        }
    }
}

/// Settling windows after construction: short, since the device starts near its steady
/// state (a replay-aged device needs windows of a quarter of the fill to see it change).
const SETTLE_WINDOW_LBAS_MAX: u64 = 1 << 18;

/// [`PreconditionMethod::Construct`]: the steady state laid out directly, then settled.
fn construct(
    replayer: &mut Replayer,
    p: &Precondition,
    filled: u64,
    progress: &mut dyn Progress,
) -> Result<PreconditionReport, BlockError> {
    let plan = AgingPlan::Uniform4k { filled };
    progress.phase("precondition: construct", None);
    let now = replayer.ftl.busy_until_ns();
    let (ftl, state) = replayer
        .ftl
        .constructed_steady_state(filled, replayer.config.seed, now)
        .map_err(|e| BlockError::Unsupported {
            operation: "preconditioning by construction",
            reason: e.to_string(),
        })?;
    replayer.ftl = ftl;
    let mut report = PreconditionReport {
        constructed_model_wa: Some(state.model_write_amplification),
        ..PreconditionReport::filled(p, filled)
    };
    if p.aging_factor_max > 0.0 {
        let window = (filled / 64).clamp(WINDOW_LBAS_MIN, SETTLE_WINDOW_LBAS_MAX);
        age(replayer, p, (filled, window), plan, &mut report, progress)?;
    }
    Ok(report)
}

fn age(
    replayer: &mut Replayer,
    p: &Precondition,
    (filled, window): (u64, u64),
    plan: AgingPlan,
    report: &mut PreconditionReport,
    progress: &mut dyn Progress,
) -> Result<(), BlockError> {
    let lbas_max = (filled as f64 * p.aging_factor_max) as u64;
    let mut rng = Rng::new(replayer.config.seed ^ 0xA6E1_A6E1);
    // The writes do not depend on the device, so they can be drawn (and their pages
    // generated) ahead of it; draws beyond the last write are simply not used.
    let writes = std::iter::repeat_with(move || next_write(&plan, &mut rng));
    progress.phase("precondition: age", Some(lbas_max));
    replayer.with_prefill(|replayer, mut prefill| {
        let mut writes = WriteStream::new(writes);
        age_windows(
            replayer,
            p,
            (filled, window),
            report,
            progress,
            &mut writes,
            &mut prefill,
        )
    })
}

/// Aging windows of `window` LBAs written over the `filled` LBAs until write amplification
/// is steady or the bound is reached.
fn age_windows<I: Iterator<Item = (u64, u32)>>(
    replayer: &mut Replayer,
    p: &Precondition,
    (filled, window): (u64, u64),
    report: &mut PreconditionReport,
    progress: &mut dyn Progress,
    writes: &mut WriteStream<I>,
    prefill: &mut Option<&mut Prefill>,
) -> Result<(), BlockError> {
    let lbas_max = (filled as f64 * p.aging_factor_max) as u64;
    let mut previous_wa: Option<f64> = None;
    let mut stable_windows = 0;
    while report.aging_lbas < lbas_max {
        let programs_before = replayer.ftl.nand().counters().page_programs;
        let erases_before = replayer.ftl.nand().counters().block_erases;
        let slots_per_page = replayer.ftl.nand().config().geometry.page_size_bytes as u64 / 4096;
        // A remainder shorter than a window joins the last one: a window of a few writes
        // measures nothing (two writes into a 16 KiB page buffer program no page: WA 0).
        let remaining = lbas_max - report.aging_lbas;
        let lbas_in_window = if remaining < 2 * window {
            remaining
        } else {
            window
        };
        // A window ends at the first write that reaches its LBAs (with 4 KiB writes,
        // exactly there).
        let mut written = 0;
        while written < lbas_in_window {
            let (lba, count) = writes.next(prefill.as_deref_mut()).expect("endless");
            let now = replayer.ftl.busy_until_ns();
            replayer.write_from(now, lba, count, Hints::default(), prefill.as_deref_mut())?;
            report.aging_writes += 1;
            written += u64::from(count);
        }
        report.aging_lbas += written;
        progress.advance(report.aging_lbas);
        let programmed =
            (replayer.ftl.nand().counters().page_programs - programs_before) * slots_per_page;
        let wa = programmed as f64 / written as f64;
        report.write_amplification_last_window = wa;
        if replayer.ftl.nand().counters().block_erases != erases_before {
            report.gc_started = true;
        }
        if replayer.ftl.nand().counters().block_erases == erases_before {
            // GC has not run in this window: the device is still eating fresh space.
            previous_wa = None;
            stable_windows = 0;
            continue;
        }
        if let Some(prev) = previous_wa {
            if (wa - prev).abs() <= p.steady_tolerance * wa.max(f64::MIN_POSITIVE) {
                stable_windows += 1;
            } else {
                stable_windows = 0;
            }
        }
        previous_wa = Some(wa);
        if stable_windows >= 2 {
            report.steady = true;
            break;
        }
    }
    Ok(())
}
