//! Preconditioning: fill the device to a utilisation, then age it with random overwrites
//! until garbage collection reaches a steady state, before anything is measured.
//!
//! Steady state is declared once garbage collection has started (free space that was never
//! written does not count as steady) and the write amplification of three consecutive
//! windows (each a quarter of the filled LBAs, at least 4,096 writes) agrees within the
//! tolerance,
//! and aging always stops after `aging_factor_max` × the filled LBAs. Both bounds make the
//! step deterministic and finite, whatever the device.

use std::fmt;

use flashstack_block::{BlockDevice, BlockError, Hints};
use flashstack_sim::units::format_count;
use flashstack_sim::Rng;

use crate::prefill::{Prefill, WriteStream};
use crate::{Progress, Replayer};

const FILL_CHUNK_LBAS: u32 = 32;
const WINDOW_LBAS_MIN: u64 = 4_096;
/// From this fill on, the device's tables will be mostly touched anyway: back them with
/// huge pages (faster lookups) rather than 4 KiB pages (memory that follows the data).
const DENSE_UTILIZATION: f64 = 0.5;

/// How the steady state is reached.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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

#[derive(Clone, Debug, PartialEq)]
pub struct Precondition {
    /// Fraction of the user capacity to fill, in (0, 1].
    pub utilization: f64,
    /// Upper bound on aging writes, as a multiple of the filled LBAs (0 = fill only).
    pub aging_factor_max: f64,
    /// Relative change of write amplification between windows that counts as steady.
    pub steady_tolerance: f64,
    pub method: PreconditionMethod,
}

impl Default for Precondition {
    fn default() -> Self {
        Precondition {
            utilization: 0.9,
            aging_factor_max: 4.0,
            steady_tolerance: 0.02,
            method: PreconditionMethod::Replay,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct PreconditionReport {
    pub utilization: f64,
    pub filled_lbas: u64,
    pub aging_writes: u64,
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
        let writes = format_count(self.aging_writes);
        let wa = self.write_amplification_last_window;
        if self.steady {
            return write!(
                f,
                ", aged with {writes} random writes to steady state (write amplification \
                 {wa:.3}, stable over three windows)"
            );
        }
        write!(
            f,
            ", aged with {writes} random writes, the bound ({} x the filled LBAs), \
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
) -> Result<PreconditionReport, BlockError> {
    let capacity = replayer.ftl.capacity_lbas();
    let filled = ((capacity as f64 * p.utilization.clamp(0.0, 1.0)) as u64).min(capacity);
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
        age(replayer, p, filled, window, &mut report, progress)?;
    }
    Ok(report)
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
        age(replayer, p, filled, window, &mut report, progress)?;
    }
    Ok(report)
}

fn age(
    replayer: &mut Replayer,
    p: &Precondition,
    filled: u64,
    window: u64,
    report: &mut PreconditionReport,
    progress: &mut dyn Progress,
) -> Result<(), BlockError> {
    let writes_max = (filled as f64 * p.aging_factor_max) as u64;
    let mut rng = Rng::new(replayer.config.seed ^ 0xA6E1_A6E1);
    // The LBAs do not depend on the device, so they can be drawn (and their pages
    // generated) ahead of it; draws beyond the last write are simply not used.
    let lbas = std::iter::repeat_with(move || (rng.below(filled), 1));
    progress.phase("precondition: age", Some(writes_max));
    replayer.with_prefill(|replayer, mut prefill| {
        let mut writes = WriteStream::new(lbas);
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

/// Aging windows of `window` writes over the `filled` LBAs until write amplification is
/// steady or the bound is reached.
fn age_windows<I: Iterator<Item = (u64, u32)>>(
    replayer: &mut Replayer,
    p: &Precondition,
    (filled, window): (u64, u64),
    report: &mut PreconditionReport,
    progress: &mut dyn Progress,
    writes: &mut WriteStream<I>,
    prefill: &mut Option<&mut Prefill>,
) -> Result<(), BlockError> {
    let writes_max = (filled as f64 * p.aging_factor_max) as u64;
    let mut previous_wa: Option<f64> = None;
    let mut stable_windows = 0;
    while report.aging_writes < writes_max {
        let programs_before = replayer.ftl.nand().counters().page_programs;
        let erases_before = replayer.ftl.nand().counters().block_erases;
        let slots_per_page = replayer.ftl.nand().config().geometry.page_size_bytes as u64 / 4096;
        // A remainder shorter than a window joins the last one: a window of a few writes
        // measures nothing (two writes into a 16 KiB page buffer program no page: WA 0).
        let remaining = writes_max - report.aging_writes;
        let writes_in_window = if remaining < 2 * window {
            remaining
        } else {
            window
        };
        for _ in 0..writes_in_window {
            let (lba, count) = writes.next(prefill.as_deref_mut()).expect("endless");
            let now = replayer.ftl.busy_until_ns();
            replayer.write_from(now, lba, count, Hints::default(), prefill.as_deref_mut())?;
            report.aging_writes += 1;
        }
        progress.advance(report.aging_writes);
        let programmed =
            (replayer.ftl.nand().counters().page_programs - programs_before) * slots_per_page;
        let wa = programmed as f64 / writes_in_window as f64;
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
