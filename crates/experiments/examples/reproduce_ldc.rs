//! `cargo run --release -p flashstack-experiments --example reproduce_ldc [-- --quick]`
use flashstack_experiments::ldc::{reproduce, LdcOptions};
use flashstack_replay::NoProgress;

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let results = reproduce(&LdcOptions { quick, seed: 1 }, &mut NoProgress).expect("runs");
    print!("{}", results.render());
}
