//! One LDC run per policy on one app, for measuring a run's memory and time:
//! `cargo run --release -p flashstack-experiments --example ldc_one -- [--quick]
//! [--device-gib N] [--by-reference] APP POLICY...` (APP: FB TW ME GE CH CA MA; POLICY:
//! pm zftl sc ldc opt). Prints the run's figures as JSON lines.
use flashstack_experiments::ldc::{run_one, LdcOptions, SNAPSHOT_AGING, SNAPSHOT_UTILIZATION};
use flashstack_ftl::compression::CompressionPolicyKind;
use flashstack_replay::LayDown;
use flashstack_trace::builtin::LdcApp;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let names = ["FB", "TW", "ME", "GE", "CH", "CA", "MA"];
    let mut options = LdcOptions {
        quick: false,
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
    let mut app = None;
    let mut policies = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" => options.quick = true,
            "--by-reference" => options.by_reference = true,
            "--device-gib" => {
                let n = it.next().and_then(|n| n.parse().ok());
                options.device_gib = Some(n.expect("--device-gib N"));
            }
            other => match names.iter().position(|n| *n == other) {
                Some(i) => app = Some(LdcApp::ALL[i]),
                None => policies.push(
                    CompressionPolicyKind::ALL
                        .into_iter()
                        .find(|p| p.name().eq_ignore_ascii_case(other))
                        .unwrap_or_else(|| panic!("{other}: not an app or a policy")),
                ),
            },
        }
    }
    let app =
        app.expect("usage: ldc_one [--quick] [--device-gib N] [--by-reference] APP POLICY...");
    for policy in policies {
        let f = run_one(policy, app, 200, &options).expect("run");
        println!("{}", serde_json::to_string(&f).expect("json"));
    }
}
