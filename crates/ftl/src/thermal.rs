//! Power and temperature of a compressing SSD (COCO's observation under 128 KiB
//! sequential writes: temperature and power rise with time, both are higher with the
//! compression engine on, and heat protection holds the temperature at a ceiling).
//!
//! A first-order model, deliberately simple, as a pure function over the device's busy
//! time in fixed steps:
//! - power `P = (idle + (active − idle)·u + engine·c) · (1 + leakage·(T − ambient))`,
//!   with `u` the busy fraction of the step and `c` the fraction the engine compressed;
//!   the last factor is leakage rising with temperature;
//! - temperature `dT/dt = (R·P − (T − ambient)) / τ` (one thermal resistance and one time
//!   constant from the controller to the air);
//! - heat protection: at or above `throttle_c` the device may be busy at most
//!   `throttle_duty` of each step; work beyond it waits (the backlog is the throttling's
//!   cost in time), which holds the temperature near the ceiling.
//!
//! Every constant is cited or marked assumed in [`ThermalConfig::csd3000`].

use serde::{Deserialize, Serialize};

/// The model's constants.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThermalConfig {
    pub ambient_c: f64,
    pub idle_w: f64,
    /// Power busy all the time with the engine off, at ambient temperature.
    pub active_w: f64,
    /// Extra power of the compression engine busy all the time.
    pub engine_w: f64,
    /// Fraction of power added per °C above ambient.
    pub leakage_per_c: f64,
    pub thermal_resistance_c_per_w: f64,
    pub time_constant_s: f64,
    /// Heat protection starts here.
    pub throttle_c: f64,
    /// Busy fraction allowed while throttled.
    pub throttle_duty: f64,
}

impl ThermalConfig {
    /// The CSD 3000 class.
    /// - idle 5 W, active 20 W: StorageReview's CSD 3000 review lists "<5 W idle, <20 W
    ///   typical"; the typical figure is taken as full load.
    /// - engine 3 W, leakage 0.5 %/°C, 1.8 °C/W, τ 60 s: **assumed** (no published
    ///   figures; leakage of a few tenths of a percent per °C is the usual order for CMOS
    ///   at these temperatures; 1.8 °C/W is a U.2 drive in server airflow).
    /// - throttle at 70 °C: **assumed**, the usual NVMe warning composite temperature
    ///   (WCTEMP) of enterprise drives; duty 50 % while throttled, **assumed**.
    /// - ambient 25 °C: **assumed** (a lab).
    pub fn csd3000() -> ThermalConfig {
        ThermalConfig {
            ambient_c: 25.0,
            idle_w: 5.0,
            active_w: 20.0,
            engine_w: 3.0,
            leakage_per_c: 0.005,
            thermal_resistance_c_per_w: 1.8,
            time_constant_s: 60.0,
            throttle_c: 70.0,
            throttle_duty: 0.5,
        }
    }
}

/// What the device did in one step of the model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Load {
    pub duration_ns: u64,
    /// Busy time in the step (at most `duration_ns`).
    pub busy_ns: u64,
    /// Of the busy time, the share the engine was compressing, 0..=1.
    pub compress_fraction: f64,
}

/// The device's state after one step.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub end_ns: u64,
    pub temp_c: f64,
    pub power_w: f64,
    pub throttled: bool,
}

/// A run through the model.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ThermalTrace {
    pub samples: Vec<Sample>,
    pub energy_j: f64,
    pub peak_c: f64,
    pub mean_power_w: f64,
    /// Time steps spent throttled.
    pub throttled_ns: u64,
    /// Work still waiting when the last step ended: how much later the run finishes.
    pub delay_ns: u64,
}

/// Power at temperature `temp_c` for busy fraction `u` and engine fraction `c`.
pub fn power_w(config: &ThermalConfig, temp_c: f64, u: f64, c: f64) -> f64 {
    let base = config.idle_w + (config.active_w - config.idle_w) * u + config.engine_w * u * c;
    base * (1.0 + config.leakage_per_c * (temp_c - config.ambient_c).max(0.0))
}

/// Runs `loads` in order from ambient temperature.
pub fn simulate(config: &ThermalConfig, loads: &[Load]) -> ThermalTrace {
    let mut temp_c = config.ambient_c;
    let mut trace = ThermalTrace {
        peak_c: temp_c,
        ..ThermalTrace::default()
    };
    let mut backlog_ns = 0u64;
    let mut t_ns = 0u64;
    for load in loads {
        let dt_ns = load.duration_ns.max(1);
        let throttled = temp_c >= config.throttle_c;
        let cap_ns = if throttled {
            (dt_ns as f64 * config.throttle_duty) as u64
        } else {
            dt_ns
        };
        let wanted_ns = backlog_ns + load.busy_ns.min(dt_ns);
        let done_ns = wanted_ns.min(cap_ns);
        backlog_ns = wanted_ns - done_ns;
        let u = done_ns as f64 / dt_ns as f64;
        let p = power_w(config, temp_c, u, load.compress_fraction.clamp(0.0, 1.0));
        let dt_s = dt_ns as f64 * 1e-9;
        let target = config.ambient_c + config.thermal_resistance_c_per_w * p;
        // Exact for a constant target over the step (stable for any step length).
        temp_c = target + (temp_c - target) * (-dt_s / config.time_constant_s).exp();
        t_ns += dt_ns;
        trace.energy_j += p * dt_s;
        trace.peak_c = trace.peak_c.max(temp_c);
        if throttled {
            trace.throttled_ns += dt_ns;
        }
        trace.samples.push(Sample {
            end_ns: t_ns,
            temp_c,
            power_w: p,
            throttled,
        });
    }
    trace.delay_ns = backlog_ns;
    trace.mean_power_w = if t_ns == 0 {
        0.0
    } else {
        trace.energy_j / (t_ns as f64 * 1e-9)
    };
    trace
}

/// Steps of `step_ns` over `[start_ns, end_ns)` with the busy time of `periods` (sorted,
/// disjoint) in each, all with engine share `compress_fraction`.
pub fn loads_from_busy(
    periods: &[(u64, u64)],
    start_ns: u64,
    end_ns: u64,
    step_ns: u64,
    compress_fraction: f64,
) -> Vec<Load> {
    assert!(step_ns > 0, "step must be positive");
    let mut loads = Vec::new();
    let mut i = 0;
    let mut t = start_ns;
    while t < end_ns {
        let step_end = (t + step_ns).min(end_ns);
        let mut busy = 0;
        while i < periods.len() && periods[i].1 <= t {
            i += 1;
        }
        let mut j = i;
        while j < periods.len() && periods[j].0 < step_end {
            busy += periods[j].1.min(step_end) - periods[j].0.max(t);
            j += 1;
        }
        loads.push(Load {
            duration_ns: step_end - t,
            busy_ns: busy,
            compress_fraction,
        });
        t = step_end;
    }
    loads
}

#[cfg(test)]
mod tests {
    use super::*;

    fn busy(seconds: u64, c: f64) -> Vec<Load> {
        (0..seconds)
            .map(|_| Load {
                duration_ns: 1_000_000_000,
                busy_ns: 1_000_000_000,
                compress_fraction: c,
            })
            .collect()
    }

    #[test]
    fn temperature_and_power_rise_and_compression_runs_hotter() {
        let config = ThermalConfig::csd3000();
        let off = simulate(&config, &busy(600, 0.0));
        let on = simulate(&config, &busy(600, 1.0));
        let early = &off.samples[10];
        let late = &off.samples[300];
        assert!(late.temp_c > early.temp_c && late.power_w > early.power_w);
        assert!(on.samples[30].temp_c > off.samples[30].temp_c);
        assert!(on.mean_power_w > off.mean_power_w);
        // Without the engine the drive settles below the ceiling; with it, heat
        // protection holds the temperature there and costs time.
        assert!(off.peak_c < config.throttle_c, "{}", off.peak_c);
        assert_eq!(off.delay_ns, 0);
        assert!(on.throttled_ns > 0 && on.delay_ns > 0);
        assert!(on.peak_c < config.throttle_c + 2.0, "capped: {}", on.peak_c);
    }

    #[test]
    fn without_protection_it_would_run_away_hotter() {
        let mut config = ThermalConfig::csd3000();
        config.throttle_c = 1000.0;
        let free = simulate(&config, &busy(600, 1.0));
        assert!(free.peak_c > ThermalConfig::csd3000().throttle_c + 2.0);
    }

    #[test]
    fn idle_stays_near_ambient_and_loads_split_busy_time() {
        let config = ThermalConfig::csd3000();
        let idle = simulate(&config, &busy(0, 0.0));
        assert_eq!(idle.samples.len(), 0);
        let loads = loads_from_busy(&[(5, 15), (25, 40)], 0, 40, 10, 0.5);
        let busy: Vec<u64> = loads.iter().map(|l| l.busy_ns).collect();
        assert_eq!(busy, vec![5, 5, 5, 10]);
    }
}
