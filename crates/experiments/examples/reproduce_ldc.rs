//! `cargo run --release -p flashstack-experiments --example reproduce_ldc [-- --quick]`
//! (what `flashstack reproduce ldc` prints, without the CLI).
use flashstack_experiments::ldc::{reproduce, LdcOptions};
use flashstack_replay::NoProgress;

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let options = LdcOptions {
        quick,
        ..LdcOptions::default()
    };
    let results = reproduce(&options, &mut NoProgress).expect("runs");
    print!("{}", results.render());
}
