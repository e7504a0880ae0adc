//! A block-level run's configuration and its built-in and synthetic inputs, shared by
//! `flashstack run --device D (--workload ldc:APP | --synthetic SPEC)` and a sweep's
//! block-level points, so both make the same calls with the same defaults and a point's
//! report is the CLI's byte for byte.

use flashstack_content::{ContentConfig, ContentMix};
use flashstack_ftl::DeviceConfig;
use flashstack_report::{ReportOptions, RunReport};
use flashstack_trace::builtin::{Builtin, BuiltinWorkload};
use flashstack_trace::{synthetic, SyntheticSpec};

use crate::{
    content_zones, AgingShape, OutOfRange, Precondition, PreconditionMethod, Progress, ReplayError,
    Replayer, RunConfig, DEFAULT_SNAPSHOT_AGING,
};

/// The synthetic workload a block-level run uses when given none: a phone-like mix of
/// small random writes concentrated on a hot fifth of the data, reads, and a flush
/// (fsync) every 8 writes.
pub const DEFAULT_SYNTHETIC: &str =
    "hotcold:0.2:0.8,count=200000,read=0.3,size=4k:60/16k:25/64k:10/256k:5,iat=exp:10ms,flush=8";
/// Fill fraction of preconditioning when not given.
pub const DEFAULT_PRECONDITION: f64 = 0.5;
/// Upper bound on preconditioning's aging writes, as a multiple of the filled LBAs.
pub const DEFAULT_AGING_MAX: f64 = 2.0;

/// What a block-level run's options choose besides the device and the input; the
/// defaults are `flashstack run`'s.
#[derive(Clone, Debug)]
pub struct BlockOptions {
    pub seed: u64,
    /// Fill fraction of preconditioning (`None`: [`DEFAULT_PRECONDITION`]).
    pub precondition: Option<f64>,
    pub aging_max: f64,
    pub method: PreconditionMethod,
    /// What preconditioning's aging writes look like.
    pub shape: AgingShape,
    /// Measure from an empty device.
    pub no_precondition: bool,
    /// Keep page bytes on the device.
    pub store_contents: bool,
    pub content_mix: Option<ContentMix>,
    pub wrap: bool,
    pub verify: bool,
    pub dwpd: Option<f64>,
}

impl Default for BlockOptions {
    fn default() -> Self {
        BlockOptions {
            seed: 1,
            precondition: None,
            aging_max: DEFAULT_AGING_MAX,
            method: PreconditionMethod::Replay,
            shape: AgingShape::Uniform4k,
            no_precondition: false,
            store_contents: false,
            content_mix: None,
            wrap: false,
            verify: false,
            dwpd: None,
        }
    }
}

impl BlockOptions {
    /// The run's configuration. `from_scratch`: the device starts empty and is
    /// preconditioned (not a built-in workload, which lays down its own data, nor an
    /// image).
    pub fn run_config(
        &self,
        device: DeviceConfig,
        workload_name: &str,
        from_scratch: bool,
    ) -> RunConfig {
        let fraction = self.precondition.unwrap_or(DEFAULT_PRECONDITION);
        let precondition =
            (from_scratch && !self.no_precondition && fraction > 0.0).then(|| Precondition {
                utilization: fraction,
                aging_factor_max: self.aging_max,
                method: self.method,
                shape: self.shape,
                ..Precondition::default()
            });
        let mut content = ContentConfig::default();
        if let Some(mix) = &self.content_mix {
            content.mix = mix.clone();
        }
        RunConfig {
            device,
            seed: self.seed,
            store_contents: self.store_contents,
            content,
            precondition,
            out_of_range: if self.wrap {
                OutOfRange::Wrap
            } else {
                OutOfRange::Error
            },
            verify_reads: self.verify,
            report: ReportOptions { dwpd: self.dwpd },
            workload_name: workload_name.to_string(),
        }
    }
}

/// A block-level input that needs no file: a built-in workload or a synthetic spec.
#[derive(Clone, Debug)]
pub enum BlockInput {
    Builtin(Builtin),
    Synthetic(SyntheticSpec),
}

impl BlockInput {
    /// A sweep's block workload: `ldc:APP`, `synthetic` (the default mix) or
    /// `synthetic:SPEC`. Returns the input and its name in the report (a synthetic
    /// workload is named by its spec text, as `run --synthetic` names it).
    pub fn from_name(name: &str) -> Result<(BlockInput, String), String> {
        if name == "synthetic" {
            return Self::synthetic(DEFAULT_SYNTHETIC);
        }
        if let Some(spec) = name.strip_prefix("synthetic:") {
            return Self::synthetic(spec);
        }
        let builtin: Builtin = name.parse().map_err(|e| {
            format!("{e}; a block-level point runs ldc:APP, synthetic or synthetic:SPEC")
        })?;
        Ok((BlockInput::Builtin(builtin), builtin.to_string()))
    }

    fn synthetic(text: &str) -> Result<(BlockInput, String), String> {
        let spec = text.parse().map_err(|e| format!("synthetic: {e}"))?;
        Ok((BlockInput::Synthetic(spec), text.to_string()))
    }
}

/// Generates `builtin` for the device's capacity, gives the content model its zones and,
/// with `lay_down`, lays down and ages its existing data; the measurement has not started
/// (`prepare` starts it).
pub fn start_builtin(
    mut config: RunConfig,
    builtin: Builtin,
    lay_down: bool,
    progress: &mut dyn Progress,
) -> Result<(Replayer, BuiltinWorkload), ReplayError> {
    let capacity = config.device.user_capacity_bytes()?;
    let workload = builtin.generate(capacity, config.seed)?;
    config.content.zones = content_zones(&workload.content_zones())?;
    let mut replayer = Replayer::new(config)?;
    if lay_down {
        replayer.initialise_snapshot(&content_zones(&workload.snapshot)?, progress)?;
        replayer.age_snapshot(DEFAULT_SNAPSHOT_AGING, progress)?;
    }
    Ok((replayer, workload))
}

/// `flashstack run --device D --workload ldc:APP | --synthetic SPEC --seed N [--contents]`
/// with no other option: `device` (already resolved, overrides applied), the CLI's
/// defaults.
pub fn run_block(
    device: DeviceConfig,
    input: &BlockInput,
    workload_name: &str,
    seed: u64,
    store_contents: bool,
    progress: &mut dyn Progress,
) -> Result<RunReport, ReplayError> {
    let options = BlockOptions {
        seed,
        store_contents,
        ..BlockOptions::default()
    };
    let from_scratch = matches!(input, BlockInput::Synthetic(_));
    let config = options.run_config(device, workload_name, from_scratch);
    let replayer = match input {
        BlockInput::Builtin(builtin) => {
            let (mut replayer, workload) = start_builtin(config, *builtin, true, progress)?;
            replayer.prepare(progress)?;
            let total = workload.requests.len() as u64;
            replayer.replay(workload.passes(1), Some(total), progress)?;
            replayer
        }
        BlockInput::Synthetic(spec) => {
            let mut replayer = Replayer::new(config)?;
            replayer.prepare(progress)?;
            let source = synthetic(spec, replayer.capacity_bytes(), seed)?;
            replayer.replay(source, Some(spec.count), progress)?;
            replayer
        }
    };
    Ok(replayer.report())
}
