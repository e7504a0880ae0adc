//! The fast path (sessions write their task's page-level footprint) against the realistic
//! path (every session runs its persona's real task with SQLite) on the same phone and
//! timeline: the states they leave must agree within the tolerances docs/aging.md states.

mod common;

use common::small_stack;
use flashstack_phone::image::PhoneHeader;
use flashstack_phone::{build, AgingSpec, Fidelity};

fn aged(fidelity: Fidelity) -> PhoneHeader {
    let mut config = small_stack();
    config.device.nand.geometry.blocks_per_plane = 8400; // 2 GiB: room for other apps
    let spec = AgingSpec::new(0.8, 10, 1, fidelity);
    build(&config, &spec, &mut |_, _| {}).unwrap().header
}

fn within(what: &str, fast: f64, real: f64, tolerance: f64) -> Option<String> {
    let off = (fast - real).abs() / real.abs().max(f64::MIN_POSITIVE);
    println!(
        "{what}: fast {fast:.3}, realistic {real:.3} ({:.0}% off, tolerance {:.0}%)",
        off * 100.0,
        tolerance * 100.0
    );
    (off > tolerance).then(|| format!("{what}: fast {fast:.3} vs realistic {real:.3}"))
}

#[test]
fn the_fast_path_leaves_the_state_the_realistic_path_leaves() {
    let fast = aged(Fidelity::Fast);
    let real = aged(Fidelity::Realistic);
    let share_full = |h: &PhoneHeader| {
        let v = &h.device.valid_share_histogram;
        v[10] as f64 / v.iter().sum::<u64>() as f64
    };
    let class = |h: &PhoneHeader, c: &str| h.fs.classes[c].dof_mean;
    let failures: Vec<String> = [
        within(
            "utilisation",
            fast.fs.utilization,
            real.fs.utilization,
            0.02,
        ),
        within(
            "free segments",
            fast.fs.free_segments as f64,
            real.fs.free_segments as f64,
            0.15,
        ),
        within(
            "mean DoF, all files",
            fast.fs.dof_mean,
            real.fs.dof_mean,
            0.25,
        ),
        within(
            "mean DoF, databases",
            class(&fast, "database"),
            class(&real, "database"),
            0.4,
        ),
        within(
            "mean DoF, photos",
            class(&fast, "photo"),
            class(&real, "photo"),
            0.25,
        ),
        within(
            "mean DoF, packages",
            class(&fast, "apk"),
            class(&real, "apk"),
            0.4,
        ),
        within(
            "device mean erase count",
            fast.device.erase_count_mean,
            real.device.erase_count_mean,
            0.4,
        ),
        within(
            "device blocks fully valid",
            share_full(&fast),
            share_full(&real),
            0.1,
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    assert!(failures.is_empty(), "{failures:#?}");
}
