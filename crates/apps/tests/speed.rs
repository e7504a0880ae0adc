//! Simulation speed on MemFs (not a test): `cargo test -p flashstack-apps --release
//! --test speed -- --ignored --nocapture`.

use std::time::Instant;

use flashstack_apps::{catalog, persona, run_with, RunOptions};
use flashstack_sqlvfs::{MemFs, MemFsConfig};

#[test]
#[ignore]
fn simulated_operations_per_second() {
    for record in [false, true] {
        let options = RunOptions {
            record,
            ..RunOptions::default()
        };
        let (mut ops, mut task_ns, mut setup_ns) = (0u64, 0u64, 0u64);
        let started = Instant::now();
        for entry in catalog() {
            let p = persona(&entry.name).expect("catalogued");
            let out = run_with(
                p.as_ref(),
                Box::new(MemFs::new(1, MemFsConfig::default())),
                1,
                &options,
            );
            assert!(out.error.is_none(), "{}: {:?}", entry.name, out.error);
            ops += out.report.user_ops;
            task_ns += out.report.task_ns;
            setup_ns += out.report.setup_ns;
        }
        let wall_s = started.elapsed().as_secs_f64();
        let app_hours = (task_ns + setup_ns) as f64 / 3.6e12;
        println!(
            "record={record}: {} personas, {ops} user operations, {:.2} app-hours (task {:.2} h) in {wall_s:.1} s wall: {:.0} user ops/s, {:.2} app-hours per wall minute",
            catalog().len(),
            app_hours,
            task_ns as f64 / 3.6e12,
            ops as f64 / wall_s,
            app_hours / (wall_s / 60.0)
        );
    }
}
