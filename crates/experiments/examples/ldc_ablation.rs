//! Erases per policy on one LDC app under the raw-page and GC-packing options
//! (`docs/ldc-reproduction.md`, the compressing policies erasing as much as PM):
//! `cargo run --release -p flashstack-experiments --example ldc_ablation -- [--quick] APP`
//! with APP one of FB TW ME GE CH CA MA.
use flashstack_experiments::ldc::{run_one, LdcOptions, SNAPSHOT_AGING, SNAPSHOT_UTILIZATION};
use flashstack_ftl::compression::{CompressionPolicyKind, GcStraddleScope, RawStreams};
use flashstack_replay::LayDown;
use flashstack_trace::builtin::LdcApp;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let names = ["FB", "TW", "ME", "GE", "CH", "CA", "MA"];
    let Some(app) = args
        .iter()
        .find_map(|a| names.iter().position(|n| n == a))
        .map(|i| LdcApp::ALL[i])
    else {
        eprintln!("usage: ldc_ablation [--quick] FB|TW|ME|GE|CH|CA|MA");
        std::process::exit(2);
    };
    let base = LdcOptions {
        quick,
        seed: 1,
        aging: SNAPSHOT_AGING,
        lay_down: LayDown::Neutral,
        fill: SNAPSHOT_UTILIZATION,
        jobs: 1,
        raw_streams: RawStreams::ByRatio,
        gc_straddle_scope: GcStraddleScope::CaGc,
        device_gib: None,
        by_reference: false,
        sqlite_pages: Default::default(),
    };
    let settings = [
        (
            "by-ratio, ca-gc (default)",
            RawStreams::ByRatio,
            GcStraddleScope::CaGc,
        ),
        ("one, ca-gc", RawStreams::One, GcStraddleScope::CaGc),
        (
            "by-ratio, every-policy",
            RawStreams::ByRatio,
            GcStraddleScope::EveryPolicy,
        ),
        (
            "one, every-policy",
            RawStreams::One,
            GcStraddleScope::EveryPolicy,
        ),
    ];
    use CompressionPolicyKind::*;
    let pm = run_one(Pm, app, 200, &base).expect("PM runs");
    println!(
        "{app:?} ({}), PM erases {}",
        if quick { "quick" } else { "full" },
        pm.block_erases
    );
    println!(
        "{:<28}{:>14}{:>14}{:>14}",
        "raw streams, GC scope", "zFTL", "SC", "OPT"
    );
    for (name, raw_streams, gc_straddle_scope) in settings {
        let options = LdcOptions {
            raw_streams,
            gc_straddle_scope,
            ..base.clone()
        };
        let cells: Vec<String> = [Zftl, Sc, Opt]
            .into_iter()
            .map(|p| {
                let e = run_one(p, app, 200, &options).expect("runs").block_erases;
                format!("{e} ({:.3})", e as f64 / pm.block_erases as f64)
            })
            .collect();
        println!("{name:<28}{:>14}{:>14}{:>14}", cells[0], cells[1], cells[2]);
    }
}
