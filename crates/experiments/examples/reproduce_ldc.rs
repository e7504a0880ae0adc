//! `cargo run --release -p flashstack-experiments --example reproduce_ldc [-- --quick]`
use flashstack_experiments::ldc::{reproduce, LdcOptions, SNAPSHOT_AGING, SNAPSHOT_UTILIZATION};
use flashstack_replay::{LayDown, NoProgress};

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let options = LdcOptions {
        quick,
        seed: 1,
        aging: SNAPSHOT_AGING,
        lay_down: LayDown::Neutral,
        fill: SNAPSHOT_UTILIZATION,
        jobs: 1,
        raw_streams: Default::default(),
        gc_straddle_scope: Default::default(),
        device_gib: None,
        by_reference: false,
        sqlite_pages: Default::default(),
    };
    let results = reproduce(&options, &mut NoProgress).expect("runs");
    print!("{}", results.render());
}
