//! `flashstack run --trace`: what a captured block trace needs besides its replay. Checked
//! before anything runs (addresses beyond the device, with the presets that would hold
//! the trace); planned before the measurement (the data it reads without writing it, a
//! per-process breakdown); reported after it (`RunReport::trace`).

use std::path::Path;

use anyhow::{bail, Result};
use flashstack_replay::Replayer;
use flashstack_sim::units::format_bytes;
use flashstack_trace::Trace;

use crate::run::RunArgs;

/// Processes listed by name in a trace's report when `--processes` is not given.
pub const PROCESSES_LISTED: usize = 10;

/// Readies `replayer` for `trace` before it is preconditioned: fails at once if the trace
/// addresses more than the device holds (naming the presets that would hold it), plans
/// the existing data for reads and turns on the per-process breakdown.
pub fn before_prepare(replayer: &mut Replayer, trace: &Trace, args: &RunArgs) -> Result<()> {
    check_fits(replayer, trace, "the trace")?;
    let lay_down = !args.no_read_footprint && args.image.is_none();
    replayer.plan_existing_reads(&trace.requests, lay_down);
    replayer.track_processes(trace, args.processes.unwrap_or(PROCESSES_LISTED));
    Ok(())
}

/// Gives `replayer` the install-time trace read from `path` (`--precondition-trace`),
/// replayed by `prepare` before the measurement; fails at once, naming the file, if it
/// addresses more than the device holds.
pub fn precondition_with(replayer: &mut Replayer, path: &Path, install: &Trace) -> Result<()> {
    let what = format!("the precondition trace {}", path.display());
    check_fits(replayer, install, &what)?;
    let name = path.display().to_string();
    replayer.precondition_with_trace(&name, install.requests.clone())?;
    Ok(())
}

/// Fails if `trace` (called `what` in the message) addresses more than the device holds.
fn check_fits(replayer: &Replayer, trace: &Trace, what: &str) -> Result<()> {
    let Some((index, request)) = replayer.first_beyond(&trace.requests) else {
        return Ok(());
    };
    let needed = trace
        .requests
        .iter()
        .map(|r| r.offset_bytes.saturating_add(r.len_bytes))
        .max()
        .unwrap_or(0);
    let beyond = trace
        .requests
        .iter()
        .filter(|r| r.offset_bytes.saturating_add(r.len_bytes) > replayer.capacity_bytes())
        .count();
    bail!(
        "{what} addresses {} but the device holds {}: request {index} ({} of {} bytes at \
         byte {}) and {} more go beyond it (checked before preconditioning). {}; or --wrap \
         folds addresses into this device",
        format_bytes(needed),
        format_bytes(replayer.capacity_bytes()),
        request.kind.name(),
        request.len_bytes,
        request.offset_bytes,
        beyond.saturating_sub(1),
        presets_holding(needed)
    )
}

/// The device presets whose user capacity holds `bytes`, in words.
fn presets_holding(bytes: u64) -> String {
    let fitting: Vec<String> = flashstack_ftl::presets::PRESETS
        .iter()
        .filter_map(|(name, _)| {
            let capacity = flashstack_ftl::presets::preset(name)?
                .user_capacity_bytes()
                .ok()?;
            (capacity >= bytes).then(|| format!("{name} ({})", format_bytes(capacity)))
        })
        .collect();
    if fitting.is_empty() {
        return "No preset holds it (a device TOML with more blocks per plane would)".into();
    }
    format!("Presets that hold it: --device {}", fitting.join(", "))
}
