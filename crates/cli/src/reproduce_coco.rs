//! `flashstack reproduce coco`: the COCO seed's figures beside ours
//! (`flashstack_experiments::coco`, `docs/coco-reproduction.md`).

use std::sync::Arc;

use anyhow::Context;
use anyhow::Result;
use clap::Args;
use flashstack_apps::persona;
use flashstack_experiments::fullstack::{self, FullStackOptions, StackWorkload, Start};
use flashstack_html::Reproduction;
use flashstack_phone::{AgingSpec, Fidelity};
use flashstack_stack::StackConfig;
use serde::Serialize;

use crate::stackrun::resolve_stack;

use crate::reproduce::Outputs;

#[derive(Args)]
pub struct CocoArgs {
    /// A 256 MiB drive and a smaller file set (well under a minute).
    #[arg(long)]
    pub quick: bool,
    #[command(flatten)]
    pub outputs: Outputs,
    /// Seed of every random choice; the same seed gives the same figures.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The phone rows' starting state: factory-new phones, aged ones (each stack's own,
    /// kept in the phone cache: the built-in phone, 80% full after 90 days, or with
    /// `--quick` 60% full after 2 days), or both side by side.
    #[arg(long, value_enum, default_value_t = PhoneStart::Both)]
    pub phones: PhoneStart,
}

/// Which starting states the phone rows run from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum PhoneStart {
    Fresh,
    Aged,
    Both,
}

/// The evaluation, with its terminal report.
pub fn reproduction(args: &CocoArgs) -> Result<Reproduction> {
    use flashstack_experiments::coco::{render, reproduce, CocoOptions};
    let options = CocoOptions {
        quick: args.quick,
        seed: args.seed,
        coco_op_threshold_permille: None,
    };
    let spinner = crate::progress::Spinner::start(
        false,
        "COCO: the OP sweep, then five schemes on the four filebench personalities",
    );
    let results = reproduce(&options);
    spinner.finish();
    let results = results?;
    let phone = phone_rows(args)?;
    let text = format!("{}{}", render(&results), phone_text(&phone));
    crate::reproduce::reproduction(
        "coco",
        "COCO (HotStorage '23)",
        text,
        &WithPhone {
            results: &results,
            phone,
        },
        results.paper_figures(),
    )
}

#[derive(Serialize)]
struct WithPhone<'a> {
    #[serde(flatten)]
    results: &'a flashstack_experiments::coco::CocoResults,
    phone: Vec<PhoneRow>,
}

/// Beyond the seed (issue 17 item 7): which side should compress on a phone. The LDC
/// eMMC phone with nobody compressing, the device alone (LDC's own predictor), the host
/// alone (F2FSC on every file) and FACS choosing per file, the device then obeying the
/// status bit (the `hinted` policy) — from factory-new phones, from each stack's own aged
/// phone, or both (`--phones`).
pub const PHONE_STACKS: [(&str, &str); 4] = [
    ("nobody", "default+device=ldc-emmc"),
    ("device", "default+device=ldc-emmc-ldc"),
    (
        "host",
        "default+device=ldc-emmc+fs.mount.compress.enabled=true+fs.mount.compress.extensions=[\"*\"]",
    ),
    ("FACS", PHONE_FACS_STACK),
];

/// FACS on the LDC eMMC phone: F2FSC for host-side files, the device's engine for the
/// writes carrying the status bit.
pub const PHONE_FACS_STACK: &str =
    "default+device=ldc-emmc-ldc+device.ftl.compression.policy=hinted\
     +fs.mount.compress.enabled=true+fs.mount.facs.enabled=true";

/// The phone personas run (fewer with `--quick`).
fn phone_personas(quick: bool) -> &'static [&'static str] {
    if quick {
        &["camera", "messenger"]
    } else {
        &[
            "facebook",
            "twitter:feeds",
            "messenger",
            "google-earth",
            "chrome",
            "camera",
        ]
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct PhoneRow {
    /// The starting state: "factory-new" or the aged phone's description.
    pub start: String,
    pub persona: String,
    pub side: String,
    pub stack: String,
    pub nand_page_programs: u64,
    pub host_write_bytes: u64,
    pub device_energy_mj: f64,
    pub phone_energy_mj: f64,
    pub user_op_latency_ns_mean: f64,
}

/// The aging of the phone rows' aged start: the built-in phone (shared with `run` and
/// `reproduce all`), or with `--quick` a lighter one (janusd's quick aging: 60% full after
/// 2 days), built through the same phone cache.
fn aged_spec(quick: bool, seed: u64) -> AgingSpec {
    if quick {
        AgingSpec::new(0.6, 2, seed, Fidelity::Fast)
    } else {
        flashstack_phone::builtin_spec()
    }
}

fn start_name(spec: Option<&AgingSpec>) -> String {
    match spec {
        None => "factory-new".into(),
        Some(s) => format!(
            "aged: {:.0}% full after {} days of use on that stack (seed {})",
            s.fill * 100.0,
            s.days,
            s.seed
        ),
    }
}

fn phone_rows(args: &CocoArgs) -> Result<Vec<PhoneRow>> {
    let spec = aged_spec(args.quick, args.seed);
    let starts: &[Option<&AgingSpec>] = match args.phones {
        PhoneStart::Fresh => &[None],
        PhoneStart::Aged => &[Some(&spec)],
        PhoneStart::Both => &[None, Some(&spec)],
    };
    let personas = phone_personas(args.quick);
    let mut rows = Vec::new();
    for &aged in starts {
        // Stack by stack, so that each aged phone is loaded (or built) once.
        let mut of_start = Vec::new();
        for (side, stack) in PHONE_STACKS {
            let config = resolve_stack(stack, &StackConfig::preset("default")?)?;
            let start = match aged {
                None => Start::Fresh,
                Some(aging) => Start::Phone(Arc::new(
                    crate::phone::aged_phone(&config, aging, false)
                        .with_context(|| format!("the aged phone of {stack}"))?,
                )),
            };
            for name in personas {
                let row = phone_row(name, (side, stack), &config, &start, aged, args.seed)?;
                of_start.push(row);
            }
        }
        // Shown persona by persona, the sides in PHONE_STACKS's order.
        of_start.sort_by_key(|r| personas.iter().position(|p| *p == r.persona));
        rows.extend(of_start);
    }
    Ok(rows)
}

/// One persona on one stack from a factory-new phone or the stack's own aged phone.
fn phone_row(
    name: &str,
    (side, stack): (&str, &str),
    config: &StackConfig,
    start: &Start,
    aged: Option<&AgingSpec>,
    seed: u64,
) -> Result<PhoneRow> {
    let spinner = crate::progress::Spinner::start(
        false,
        &format!("COCO on a phone: {name} on {stack} ({})", start_name(aged)),
    );
    let run = phone_run(name, config, start, seed);
    spinner.finish();
    let run = run.with_context(|| format!("{name} on {stack}"))?;
    Ok(PhoneRow {
        start: start_name(aged),
        persona: name.to_string(),
        side: side.into(),
        stack: stack.into(),
        nand_page_programs: run.device.nand.page_programs,
        host_write_bytes: run.device.host.write_bytes,
        device_energy_mj: run.energy.device_mj,
        phone_energy_mj: run.energy.total_mj,
        user_op_latency_ns_mean: crate::reproduce_all::user_op_mean_ns(&run),
    })
}

/// One persona on one stack from `start`: the run `flashstack run --workload NAME --stack
/// STACK --seed SEED` (with `--fresh` or `--phone FILE`) makes, with `run`'s options
/// (`FullStackOptions::default()`), so that a row's figures are those `run --json`
/// prints for the same point. That includes recording the task: the recorder asks the
/// stack whether each file it first sees opened exists, and on a used phone those
/// lookups read metadata from flash and move the clock, so a run without them is a
/// different run (messenger on the quick aged LDC phone: 3,262 NAND programs without,
/// 3,246 with).
fn phone_run(
    name: &str,
    config: &StackConfig,
    start: &Start,
    seed: u64,
) -> Result<fullstack::StackRun> {
    let p = persona(name).map_err(|e| anyhow::anyhow!("{e}"))?;
    let options = FullStackOptions {
        seed,
        start: start.clone(),
        // Only the report is used: its trace summary is built as the task runs.
        keep_trace: false,
        ..FullStackOptions::default()
    };
    Ok(fullstack::run(config, &StackWorkload::Persona(p.as_ref()), &options)?.run)
}

fn phone_text(rows: &[PhoneRow]) -> String {
    let mut starts: Vec<&str> = rows.iter().map(|r| r.start.as_str()).collect();
    starts.dedup();
    starts
        .iter()
        .map(|start| {
            let of_start: Vec<&PhoneRow> = rows.iter().filter(|r| r.start == *start).collect();
            phone_table(start, &of_start)
        })
        .collect()
}

/// The rows of one starting state, each against nobody compressing from the same state.
fn phone_table(start: &str, rows: &[&PhoneRow]) -> String {
    let mut out = format!(
        "\nBeyond the seed: who should compress on a phone (LDC eMMC phone, {start}; change \
         from nobody compressing)\n",
    );
    out += &format!(
        "{:<14} {:<7} {:>12} {:>9} {:>12} {:>9} {:>12} {:>9}\n",
        "persona", "side", "NAND pages", "", "device mJ", "", "op mean ms", ""
    );
    for row in rows {
        let Some(none) = rows
            .iter()
            .find(|r| r.persona == row.persona && r.side == "nobody")
        else {
            continue;
        };
        let change = |a: f64, b: f64| {
            if b > 0.0 {
                format!("{:+.1}%", (a / b - 1.0) * 100.0)
            } else {
                "n/a".into()
            }
        };
        out += &format!(
            "{:<14} {:<7} {:>12} {:>9} {:>12.1} {:>9} {:>12.2} {:>9}\n",
            row.persona,
            row.side,
            row.nand_page_programs,
            change(
                row.nand_page_programs as f64,
                none.nand_page_programs as f64
            ),
            row.device_energy_mj,
            change(row.device_energy_mj, none.device_energy_mj),
            row.user_op_latency_ns_mean / 1e6,
            change(row.user_op_latency_ns_mean, none.user_op_latency_ns_mean),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A phone row's run is `run --json`'s for the same point, byte for byte: the
    /// sweep's point makes the calls `flashstack run` makes (`flashstack_sweep::point`).
    #[test]
    fn a_phone_row_is_the_run_of_the_same_point() {
        use flashstack_sweep::point::{run_point, Point, PointRun, RunEnv, START_FRESH};
        let (_, stack) = PHONE_STACKS[1];
        let config = resolve_stack(stack, &StackConfig::preset("default").unwrap()).unwrap();
        let row = phone_run("messenger", &config, &Start::Fresh, 1).unwrap();
        let point = Point {
            workload: "messenger".into(),
            stack: stack.into(),
            seed: 1,
            overrides: Vec::new(),
            start: START_FRESH.into(),
            device: None,
            contents: false,
        };
        let PointRun::Stack(run) = run_point(&point, &RunEnv::default()).unwrap() else {
            panic!("a persona point runs on the whole stack");
        };
        let (row, run) = (
            serde_json::to_string_pretty(&row).unwrap(),
            serde_json::to_string_pretty(&run).unwrap(),
        );
        let first_difference = row
            .lines()
            .zip(run.lines())
            .enumerate()
            .find(|(_, (a, b))| a != b);
        assert!(
            row == run,
            "the phone row's run differs from the point's at line (number, row, point) {:?}",
            first_difference.map(|(n, (a, b))| (n + 1, a, b))
        );
    }

    fn row(start: &str, side: &str, pages: u64) -> PhoneRow {
        PhoneRow {
            start: start.into(),
            persona: "messenger".into(),
            side: side.into(),
            stack: side.into(),
            nand_page_programs: pages,
            host_write_bytes: 0,
            device_energy_mj: 1.0,
            phone_energy_mj: 1.0,
            user_op_latency_ns_mean: 1.0,
        }
    }

    #[test]
    fn each_starting_state_is_stated_and_compared_with_its_own_baseline() {
        let aged = start_name(Some(&aged_spec(true, 7)));
        assert_eq!(
            aged,
            "aged: 60% full after 2 days of use on that stack (seed 7)"
        );
        let rows = [
            row("factory-new", "nobody", 100),
            row("factory-new", "host", 300),
            row(&aged, "nobody", 200),
            row(&aged, "host", 300),
        ];
        let text = phone_text(&rows);
        let fresh_at = text
            .find("LDC eMMC phone, factory-new;")
            .expect("fresh header");
        let aged_at = text
            .find(&format!("LDC eMMC phone, {aged};"))
            .expect("aged header");
        assert!(fresh_at < aged_at);
        let (fresh, aged) = text.split_at(aged_at);
        assert!(fresh.contains("+200.0%"), "{fresh}");
        assert!(
            aged.contains("+50.0%") && !aged.contains("+200.0%"),
            "{aged}"
        );
        assert_eq!(start_name(None), "factory-new");
        assert_eq!(
            start_name(Some(&aged_spec(false, 7))),
            "aged: 80% full after 90 days of use on that stack (seed 1)",
            "the full run's aged phone is the built-in one"
        );
    }
}
