//! The whole phone's energy over a run: CPU, DRAM, the storage device's power states and
//! the screen, beside the NAND array's per-operation energy that the device report already
//! counts (`flashstack_report::EnergyFigures`). Pure accounting: [`account`] takes what a
//! run did in virtual time ([`Activity`]: the device's busy periods, the screen's standby
//! intervals, the CPU time charged, the pages the cache held) and a [`PhoneEnergyConfig`];
//! nothing here reads a clock. See `docs/energy.md` for every number's source.
//!
//! The model, layer by layer:
//! - **Screen**: `screen.on_mw` while the screen is on (outside standby intervals).
//! - **CPU**: `cpu.active_mw` for the CPU time charged; `cpu.idle_mw` for the rest of the
//!   time the phone is awake (screen on); `cpu.suspend_mw` in standby, except that device
//!   work in standby wakes the CPU: each busy period there costs `cpu.resume_uj` and its
//!   duration at `cpu.active_mw` (the seed measured standby-time flushing as costly).
//! - **DRAM**: `dram.self_refresh_mw_per_gib` × capacity for the whole run, plus the pages
//!   the cache held beyond the baseline (dirty pages and transaction versions) at their
//!   share of that power (as partial-array self-refresh could power down what they take).
//! - **Storage device** (controller and link; the NAND array's operations are the NAND
//!   figure): `active_mw` while busy; in a gap, `idle_mw` until `sleep_timeout_ns`, then
//!   `sleep_mw`, and `wakeup_uj` at the end of each gap it slept through.

use flashstack_sim::{Nanos, NS_PER_SEC};
use serde::{Deserialize, Serialize};
use thiserror::Error;

#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum EnergyConfigError {
    #[error("unknown phone energy preset '{0}' (known: ufs31, i9260)")]
    UnknownPreset(String),
    #[error("invalid phone energy configuration: field '{field}': {reason}")]
    Invalid { field: &'static str, reason: String },
}

/// The application processor.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuPower {
    /// One core running the storage stack's code.
    pub active_mw: f64,
    /// Awake with nothing to run (WFI, screen on).
    pub idle_mw: f64,
    /// Suspended (standby), the SoC's floor.
    pub suspend_mw: f64,
    /// Resuming from suspend and suspending again, once per wake-up in standby.
    pub resume_uj: f64,
}

/// The main memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DramPower {
    pub capacity_gib: f64,
    /// Refresh and standby power per GiB (self-refresh in standby; the same figure is
    /// used awake, as refresh dominates a phone's idle DRAM power).
    pub self_refresh_mw_per_gib: f64,
}

/// The storage device's power states (controller and link; the NAND array's operations
/// are counted per operation by the NAND model).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoragePower {
    /// Serving requests (controller, link).
    pub active_mw: f64,
    /// Powered, link up, nothing to do.
    pub idle_mw: f64,
    /// Asleep (UFS Hibern8 / eMMC sleep).
    pub sleep_mw: f64,
    /// Leaving sleep for the next request.
    pub wakeup_uj: f64,
    /// Idle time before the device sleeps (UFS auto-hibern8 / MMC runtime autosuspend).
    pub sleep_timeout_ns: Nanos,
}

/// The display.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScreenPower {
    /// On, at a medium brightness.
    pub on_mw: f64,
}

/// The phone's power figures: one struct, presets per phone.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhoneEnergyConfig {
    pub name: String,
    pub cpu: CpuPower,
    pub dram: DramPower,
    pub storage: StoragePower,
    pub screen: ScreenPower,
    /// CPU time charged per file-system call (the personas charge SQLite 20 µs and the app
    /// 10 µs before each call: `flashstack_apps::RunOptions`), used when a run gives no
    /// exact CPU time.
    pub cpu_ns_per_file_call: Nanos,
    /// CPU time of handling one user input (a touch, a scroll step, a key): the frame it
    /// redraws.
    pub cpu_ns_per_input: Nanos,
}

impl Default for PhoneEnergyConfig {
    fn default() -> Self {
        Self::ufs31()
    }
}

impl PhoneEnergyConfig {
    pub const PRESETS: [&'static str; 2] = ["ufs31", "i9260"];

    /// A phone of the `ufs31` device's class (2020: Snapdragon 865-class SoC, 8 GiB
    /// LPDDR5, 128 GiB UFS 3.1, 6.5" OLED). Sources in `docs/energy.md`.
    pub fn ufs31() -> Self {
        Self {
            name: "ufs31".into(),
            cpu: CpuPower {
                active_mw: 600.0,
                idle_mw: 40.0,
                suspend_mw: 8.0,
                resume_uj: 2_000.0,
            },
            dram: DramPower {
                capacity_gib: 8.0,
                self_refresh_mw_per_gib: 1.5,
            },
            storage: StoragePower {
                active_mw: 300.0,
                idle_mw: 30.0,
                sleep_mw: 0.5,
                wakeup_uj: 30.0,
                sleep_timeout_ns: 150_000_000,
            },
            screen: ScreenPower { on_mw: 700.0 },
            cpu_ns_per_file_call: 15_000,
            cpu_ns_per_input: 8_000_000,
        }
    }

    /// The seed's phone: Samsung Galaxy Premier I9260 (2012: dual-core 1.5 GHz, 1 GiB
    /// LPDDR2, eMMC 4.5, 4.65" Super AMOLED). Sources in `docs/energy.md`.
    pub fn i9260() -> Self {
        Self {
            name: "i9260".into(),
            cpu: CpuPower {
                active_mw: 700.0,
                idle_mw: 50.0,
                suspend_mw: 15.0,
                resume_uj: 5_000.0,
            },
            dram: DramPower {
                capacity_gib: 1.0,
                self_refresh_mw_per_gib: 4.0,
            },
            storage: StoragePower {
                active_mw: 200.0,
                idle_mw: 3.0,
                sleep_mw: 0.3,
                wakeup_uj: 100.0,
                sleep_timeout_ns: 3 * NS_PER_SEC,
            },
            screen: ScreenPower { on_mw: 600.0 },
            cpu_ns_per_file_call: 30_000,
            cpu_ns_per_input: 16_000_000,
        }
    }

    pub fn preset(name: &str) -> Result<Self, EnergyConfigError> {
        match name {
            "ufs31" => Ok(Self::ufs31()),
            "i9260" | "galaxy-premier" => Ok(Self::i9260()),
            other => Err(EnergyConfigError::UnknownPreset(other.to_string())),
        }
    }

    /// Every power is finite and not negative; the memory is not empty.
    pub fn validate(&self) -> Result<(), EnergyConfigError> {
        let fields = [
            ("cpu.active_mw", self.cpu.active_mw),
            ("cpu.idle_mw", self.cpu.idle_mw),
            ("cpu.suspend_mw", self.cpu.suspend_mw),
            ("cpu.resume_uj", self.cpu.resume_uj),
            (
                "dram.self_refresh_mw_per_gib",
                self.dram.self_refresh_mw_per_gib,
            ),
            ("storage.active_mw", self.storage.active_mw),
            ("storage.idle_mw", self.storage.idle_mw),
            ("storage.sleep_mw", self.storage.sleep_mw),
            ("storage.wakeup_uj", self.storage.wakeup_uj),
            ("screen.on_mw", self.screen.on_mw),
        ];
        for (field, value) in fields {
            if !value.is_finite() || value < 0.0 {
                return Err(EnergyConfigError::Invalid {
                    field,
                    reason: format!("{value} is not a power ≥ 0"),
                });
            }
        }
        if !(self.dram.capacity_gib.is_finite() && self.dram.capacity_gib > 0.0) {
            return Err(EnergyConfigError::Invalid {
                field: "dram.capacity_gib",
                reason: "must be positive".into(),
            });
        }
        Ok(())
    }
}

/// What a run did, in virtual time.
#[derive(Clone, Debug, Default)]
pub struct Activity<'a> {
    pub start_ns: Nanos,
    pub end_ns: Nanos,
    /// The storage device's busy periods, in time order, not overlapping.
    pub device_busy: &'a [(Nanos, Nanos)],
    /// Screen off (standby), in time order, not overlapping; empty: on throughout.
    pub standby: &'a [(Nanos, Nanos)],
    /// CPU time charged to the storage stack and the app.
    pub cpu_active_ns: Nanos,
    /// User inputs handled (touches, scroll steps, keys).
    pub inputs: u64,
    /// Σ (pages held beyond the baseline × time): dirty pages and transaction versions.
    pub extra_page_ns: u128,
    /// The NAND array's energy (the device report's figure), carried into the total.
    pub nand_mj: f64,
}

/// Energy per layer, in millijoules, and the times it was computed from.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PhoneEnergy {
    pub phone: String,
    pub screen_mj: f64,
    pub cpu_active_mj: f64,
    pub cpu_idle_mj: f64,
    pub cpu_standby_mj: f64,
    pub dram_refresh_mj: f64,
    pub dram_extra_pages_mj: f64,
    pub storage_active_mj: f64,
    pub storage_idle_mj: f64,
    pub storage_sleep_mj: f64,
    pub storage_wakeup_mj: f64,
    pub nand_mj: f64,
    /// Storage controller and link plus the NAND array.
    pub device_mj: f64,
    pub total_mj: f64,
    pub screen_on_s: f64,
    pub standby_s: f64,
    pub cpu_active_s: f64,
    pub device_busy_s: f64,
    pub device_sleep_s: f64,
    pub device_wakeups: u64,
    /// Device busy periods in standby (each woke the CPU).
    pub standby_wakeups: u64,
}

const MW_NS_TO_MJ: f64 = 1e-9;

fn seconds(ns: Nanos) -> f64 {
    ns as f64 / NS_PER_SEC as f64
}

/// Length of the overlap of `[s, e)` with the intervals (sorted, disjoint).
fn overlap_ns(intervals: &[(Nanos, Nanos)], s: Nanos, e: Nanos) -> Nanos {
    let first = intervals.partition_point(|&(_, ie)| ie <= s);
    intervals[first..]
        .iter()
        .take_while(|&&(is, _)| is < e)
        .map(|&(is, ie)| ie.min(e).saturating_sub(is.max(s)))
        .sum()
}

/// The storage device's time in each state over the gaps between busy periods.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct GapStates {
    idle_ns: Nanos,
    sleep_ns: Nanos,
    wakeups: u64,
}

fn gap_states(activity: &Activity, timeout_ns: Nanos) -> GapStates {
    let mut states = GapStates::default();
    let mut last_end = activity.start_ns;
    let mut add_gap = |gap: Nanos, woken: bool| {
        states.idle_ns += gap.min(timeout_ns);
        if gap > timeout_ns {
            states.sleep_ns += gap - timeout_ns;
            states.wakeups += u64::from(woken);
        }
    };
    for &(s, e) in activity.device_busy {
        add_gap(s.saturating_sub(last_end), true);
        last_end = last_end.max(e);
    }
    add_gap(activity.end_ns.saturating_sub(last_end), false);
    states
}

/// The phone's energy over `activity` with `config`'s powers.
pub fn account(config: &PhoneEnergyConfig, activity: &Activity) -> PhoneEnergy {
    let span_ns = activity.end_ns.saturating_sub(activity.start_ns);
    let standby_ns = overlap_ns(activity.standby, activity.start_ns, activity.end_ns);
    let screen_on_ns = span_ns - standby_ns;
    let busy_ns: Nanos = activity.device_busy.iter().map(|(s, e)| e - s).sum();
    let (busy_in_standby_ns, standby_wakeups) = standby_work(activity);
    let input_cpu_ns = activity.inputs.saturating_mul(config.cpu_ns_per_input);
    let cpu_active_ns = (activity.cpu_active_ns + input_cpu_ns).min(screen_on_ns);
    let gaps = gap_states(activity, config.storage.sleep_timeout_ns);
    let s = &config.storage;
    let c = &config.cpu;
    let mut e = PhoneEnergy {
        phone: config.name.clone(),
        screen_mj: config.screen.on_mw * screen_on_ns as f64 * MW_NS_TO_MJ,
        cpu_active_mj: c.active_mw * cpu_active_ns as f64 * MW_NS_TO_MJ,
        cpu_idle_mj: c.idle_mw * (screen_on_ns - cpu_active_ns) as f64 * MW_NS_TO_MJ,
        cpu_standby_mj: (c.suspend_mw * (standby_ns - busy_in_standby_ns) as f64
            + c.active_mw * busy_in_standby_ns as f64)
            * MW_NS_TO_MJ
            + c.resume_uj * standby_wakeups as f64 / 1e3,
        dram_refresh_mj: config.dram.self_refresh_mw_per_gib
            * config.dram.capacity_gib
            * span_ns as f64
            * MW_NS_TO_MJ,
        dram_extra_pages_mj: config.dram.self_refresh_mw_per_gib * activity.extra_page_ns as f64
            / PAGES_PER_GIB
            * MW_NS_TO_MJ,
        storage_active_mj: s.active_mw * busy_ns as f64 * MW_NS_TO_MJ,
        storage_idle_mj: s.idle_mw * gaps.idle_ns as f64 * MW_NS_TO_MJ,
        storage_sleep_mj: s.sleep_mw * gaps.sleep_ns as f64 * MW_NS_TO_MJ,
        storage_wakeup_mj: s.wakeup_uj * gaps.wakeups as f64 / 1e3,
        nand_mj: activity.nand_mj,
        screen_on_s: seconds(screen_on_ns),
        standby_s: seconds(standby_ns),
        cpu_active_s: seconds(cpu_active_ns + busy_in_standby_ns),
        device_busy_s: seconds(busy_ns),
        device_sleep_s: seconds(gaps.sleep_ns),
        device_wakeups: gaps.wakeups,
        standby_wakeups,
        ..PhoneEnergy::default()
    };
    e.device_mj = e.storage_active_mj
        + e.storage_idle_mj
        + e.storage_sleep_mj
        + e.storage_wakeup_mj
        + e.nand_mj;
    e.total_mj = e.screen_mj
        + e.cpu_active_mj
        + e.cpu_idle_mj
        + e.cpu_standby_mj
        + e.dram_refresh_mj
        + e.dram_extra_pages_mj
        + e.device_mj;
    e
}

/// 4 KiB pages in a GiB.
const PAGES_PER_GIB: f64 = 262_144.0;

/// Device work inside standby: its time, and how many busy periods fell there (each
/// woke the CPU).
fn standby_work(activity: &Activity) -> (Nanos, u64) {
    let mut ns = 0;
    let mut wakeups = 0;
    for &(s, e) in activity.device_busy {
        let o = overlap_ns(activity.standby, s, e);
        if o > 0 {
            ns += o;
            wakeups += 1;
        }
    }
    (ns, wakeups)
}

#[cfg(test)]
mod tests;
