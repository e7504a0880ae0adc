//! `flashstack reproduce all`: every seed's reproduction in turn, one summary of every
//! paper's figures beside ours, and the figure none of the seeds could draw: the
//! techniques alone and composed on one stack, over the persona mix, with the interaction
//! between them measured (the composed change against what the techniques alone would
//! give if they did not interact).

use anyhow::{bail, Context, Result};
use clap::Args;
use flashstack_apps::persona;
use flashstack_experiments::fullstack::{self, FullStackOptions, StackRun, StackWorkload};
use flashstack_experiments::paper::Headline;
use flashstack_html::{Column, Reproduction};
use flashstack_stack::StackConfig;
use serde_json::{json, Value};

use crate::phone::StartChoice;
use crate::progress::Spinner;
use crate::reproduce::{self, Outputs};
use crate::stackrun::resolve_stack;
use crate::{janusd_cmd, reproduce_coco, reproduce_medfs, reproduce_mobifs};

/// The reproductions `all` runs, in order.
const PAPERS: [&str; 5] = ["ldc", "janusd", "mobifs", "medfs", "coco"];

/// The composed-stack columns: each technique alone on the default stack, then all of
/// them on one. Janusd is not among them: it acts between days of use (a periodic pass),
/// not within a session, and `reproduce janusd` measures it on an aged phone.
const COMPOSED: [(&str, &str); 5] = [
    ("stock", "default"),
    ("MedFS", "medfs"),
    ("MobiFS", "mobifs"),
    ("LDC", "default+device=ldc-emmc-ldc"),
    ("composed", "medfs+cache.policy=mobifs+device=ldc-emmc-ldc"),
];

/// Columns beside the composed figure that are not part of the interaction: techniques
/// that replace one of the composed ones rather than add to it. COCO's FACS drives the LDC
/// device by the status bit instead of LDC's own predictor (`reproduce coco`'s phone
/// rows compare the sides).
const BESIDE: [(&str, &str); 1] = [("FACS", crate::reproduce_coco::PHONE_FACS_STACK)];

#[derive(Args)]
pub struct AllArgs {
    /// The quick form of every reproduction, and factory-new phones for the composed
    /// stacks (minutes in all instead of hours).
    #[arg(long)]
    quick: bool,
    #[command(flatten)]
    outputs: Outputs,
    /// Seed of every random choice; the same seed gives the same figures.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Only these parts, comma-separated: ldc, janusd, mobifs, medfs, coco, composed.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    only: Vec<String>,
}

pub fn run(args: &AllArgs) -> Result<()> {
    let parts: Vec<&str> = PAPERS.iter().copied().chain(["composed"]).collect();
    if let Some(unknown) = args.only.iter().find(|p| !parts.contains(&p.as_str())) {
        bail!("--only {unknown}: not one of {}", parts.join(", "));
    }
    let wanted = |part: &str| args.only.is_empty() || args.only.iter().any(|p| p == part);
    let mut reproductions = Vec::new();
    for paper in PAPERS.into_iter().filter(|p| wanted(p)) {
        eprintln!("reproduce all: {paper}");
        let r = one(paper, args).with_context(|| format!("reproduce {paper}"))?;
        println!("{}", r.text);
        reproductions.push(r);
    }
    let mut columns = Vec::new();
    let mut interaction = String::new();
    if wanted("composed") {
        let runs = composed_runs(args)?;
        print!(
            "{}",
            fullstack::render(&runs.iter().map(|(_, r)| r.clone()).collect::<Vec<_>>())
        );
        interaction = interaction_text(&runs[..COMPOSED.len()]);
        print!("{interaction}");
        for (config, run) in &runs {
            columns.push(crate::html::column(&config.name, config, run, args.seed)?);
        }
    }
    print!("{}", summary_text(&reproductions));
    let heading = format!(
        "The techniques alone and composed, on the persona mix ({})",
        start_text(args.quick)
    );
    reproduce::write_outputs(
        &args.outputs,
        &reproductions,
        &columns,
        (&heading, &interaction),
    )
}

fn one(paper: &str, args: &AllArgs) -> Result<Reproduction> {
    let outputs = Outputs::default();
    match paper {
        "ldc" => reproduce::ldc(&reproduce::LdcArgs {
            quick: args.quick,
            outputs,
            seed: args.seed,
            aging: flashstack_experiments::ldc::SNAPSHOT_AGING,
            fill: flashstack_experiments::ldc::SNAPSHOT_UTILIZATION,
            lay_down: flashstack_replay::LayDown::Neutral,
            raw_streams: Default::default(),
            gc_straddle_scope: Default::default(),
            jobs: None,
            device_gib: None,
            by_reference: false,
            sqlite_pages: Default::default(),
            stack: false,
            stack_only: false,
            fs_nodiscard: false,
        }),
        "janusd" => janusd_cmd::reproduction(&janusd_cmd::JanusdArgs {
            quick: args.quick,
            outputs,
            seed: args.seed,
            period_days: None,
            reader: "pages".to_string(),
            mmap: "off".to_string(),
            code_order: "sequential".to_string(),
            stack: None,
        }),
        "mobifs" => reproduce_mobifs::reproduction(&reproduce_mobifs::MobifsArgs {
            quick: args.quick,
            outputs,
            seed: args.seed,
        }),
        "medfs" => reproduce_medfs::reproduction(&reproduce_medfs::MedfsArgs {
            quick: args.quick,
            outputs,
            seed: args.seed,
            stack: "ufs31".into(),
            verbose: false,
        }),
        "coco" => reproduce_coco::reproduction(&reproduce_coco::CocoArgs {
            quick: args.quick,
            outputs,
            seed: args.seed,
            // As the composed part: factory-new phones with --quick.
            phones: if args.quick {
                reproduce_coco::PhoneStart::Fresh
            } else {
                reproduce_coco::PhoneStart::Both
            },
        }),
        other => unreachable!("not a paper of PAPERS: {other}"),
    }
}

fn start_text(quick: bool) -> &'static str {
    if quick {
        "factory-new phones"
    } else {
        "each stack's built-in aged phone: 80% full after 90 days of use on that stack"
    }
}

/// The persona mix on each composed stack.
fn composed_runs(args: &AllArgs) -> Result<Vec<(StackConfig, StackRun)>> {
    let mix = persona(crate::stackrun::DEFAULT_PERSONA).map_err(|e| anyhow::anyhow!("{e}"))?;
    let workload = StackWorkload::Persona(mix.as_ref());
    let starts = StartChoice::from_args(None, args.quick)?;
    let base = StackConfig::preset("default")?;
    let mut runs = Vec::new();
    for (label, spec) in COMPOSED.into_iter().chain(BESIDE) {
        let mut config = resolve_stack(spec, &base)?;
        config.name = label.to_string();
        let options = FullStackOptions {
            seed: args.seed,
            start: starts
                .start_for(&config, |c| crate::phone::builtin_phone(c, false))
                .with_context(|| format!("stack '{spec}'"))?,
            // Only the report is used: its trace summary is built as the task runs.
            keep_trace: false,
            ..FullStackOptions::default()
        };
        let spinner = Spinner::start(false, &format!("the persona mix on {label} ({spec})"));
        let out = fullstack::run(&config, &workload, &options);
        spinner.finish();
        runs.push((config, out?.run));
    }
    Ok(runs)
}

/// The composed stack's figures against the techniques alone.
struct Measure {
    name: &'static str,
    get: fn(&StackRun) -> f64,
    /// More is better (lifetime): the interaction's sign is turned so that above zero
    /// always means the techniques overlap.
    more_is_better: bool,
}

const MEASURES: [Measure; 6] = [
    Measure {
        name: "bytes F2FS wrote to the device",
        get: |r| r.device.host.write_bytes as f64,
        more_is_better: false,
    },
    Measure {
        name: "NAND page programs",
        get: |r| r.device.nand.page_programs as f64,
        more_is_better: false,
    },
    Measure {
        name: "block erases",
        get: |r| r.device.nand.block_erases as f64,
        more_is_better: false,
    },
    Measure {
        name: "projected lifetime (years)",
        get: |r| r.device.lifetime.lifetime_years,
        more_is_better: true,
    },
    Measure {
        name: "user-operation latency, mean",
        get: user_op_mean_ns,
        more_is_better: false,
    },
    Measure {
        name: "phone energy",
        get: |r| r.energy.total_mj,
        more_is_better: false,
    },
];

/// The mean latency over every user operation of the run.
pub(crate) fn user_op_mean_ns(run: &StackRun) -> f64 {
    let (sum, n) = run.user_ops.iter().fold((0.0, 0u64), |(s, n), op| {
        let c = op.latency.count;
        (s + op.latency.latency_ns_mean as f64 * c as f64, n + c)
    });
    if n == 0 {
        f64::NAN
    } else {
        sum / n as f64
    }
}

fn change(value: f64, stock: f64) -> f64 {
    if stock > 0.0 {
        value / stock - 1.0
    } else {
        f64::NAN
    }
}

fn pct(v: f64) -> String {
    if v.is_finite() {
        format!("{:+.1}%", v * 100.0)
    } else {
        "n/a".into()
    }
}

/// Per measure: each technique's change alone, the composed change, the change the
/// techniques would give together if they were independent (the product of their
/// factors), and the difference (the interaction), in percentage points.
fn interaction_text(runs: &[(StackConfig, StackRun)]) -> String {
    let [(_, stock), alone @ .., (_, composed)] = runs else {
        return String::new();
    };
    let mut out = format!(
        "\nthe techniques alone and composed, change from stock ({} alone, then composed)\n{:<32}",
        alone.len(),
        "measure"
    );
    for (c, _) in alone {
        out.push_str(&format!("{:>10}", c.name));
    }
    out.push_str(&format!(
        "{:>10}{:>12}{:>13}\n",
        "composed", "if indep.", "interaction"
    ));
    for m in &MEASURES {
        let base = (m.get)(stock);
        let changes: Vec<f64> = alone
            .iter()
            .map(|(_, r)| change((m.get)(r), base))
            .collect();
        let both = change((m.get)(composed), base);
        let independent = changes.iter().map(|c| 1.0 + c).product::<f64>() - 1.0;
        out.push_str(&format!("{:<32}", m.name));
        for c in &changes {
            out.push_str(&format!("{:>10}", pct(*c)));
        }
        let sign = if m.more_is_better { -1.0 } else { 1.0 };
        let gap = (both - independent) * 100.0 * sign;
        let gap = if gap.is_finite() {
            format!("{gap:+.1} pp")
        } else {
            "n/a".into()
        };
        out.push_str(&format!(
            "{:>10}{:>12}{gap:>13}\n",
            pct(both),
            pct(independent)
        ));
    }
    out.push_str(
        "(\"if indep.\": the product of the changes alone. Interaction above zero: composed, \
         the techniques gain less than that, they overlap (e.g. MedFS's deltas leave less for \
         LDC to compress); below zero: they gain more together)\n",
    );
    out
}

/// A JSON headline row back as a [`Headline`] (null numbers as NaN).
fn headline_of(row: &Value) -> Headline {
    let num = |key: &str| row[key].as_f64().unwrap_or(f64::NAN);
    Headline::new(
        row["figure"].as_str().unwrap_or("?"),
        num("paper"),
        num("ours"),
        row["kind"].as_str().unwrap_or(""),
    )
}

/// Every reproduction's headline figures in one table.
fn summary_text(reproductions: &[Reproduction]) -> String {
    if reproductions.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "\nsummary: the papers' figures and ours\n{:<10}{:<48}{:>10}{:>10}{:>11}\n",
        "paper", "figure", "paper's", "ours", "gap"
    );
    for r in reproductions {
        let rows = r.json["headlines"].as_array().cloned().unwrap_or_default();
        for h in rows.iter().map(headline_of) {
            let gap = match (h.gap(), h.kind.as_str()) {
                (Some(g), "change") => format!("{g:+.1} pp"),
                (Some(g), _) => format!("{g:+.1}%"),
                (None, _) => "—".into(),
            };
            out.push_str(&format!(
                "{:<10}{:<48}{:>10}{:>10}{gap:>11}\n",
                r.name,
                h.figure,
                h.format(h.paper),
                h.format(h.ours)
            ));
        }
    }
    out.push_str("each gap over ten points is explained in docs/<paper>-reproduction.md\n");
    out
}

/// The JSON of `reproduce all`: every reproduction under its name, and the composed runs.
pub fn json(reproductions: &[Reproduction], columns: &[Column]) -> Value {
    let papers: serde_json::Map<String, Value> = reproductions
        .iter()
        .map(|r| (r.name.clone(), r.json.clone()))
        .collect();
    let composed: Vec<Value> = columns
        .iter()
        .map(|c| json!({"stack": c.name, "report": c.json}))
        .collect();
    json!({"reproductions": papers, "composed": composed})
}

#[cfg(test)]
mod paper_list_tests {
    use clap::Subcommand;

    /// `reproduce all` without `--only` runs every seed's reproduction: each `reproduce`
    /// subcommand but `all` itself is in PAPERS (a new reproduction left out fails here).
    #[test]
    fn every_reproduction_is_in_the_default_list() {
        let command =
            crate::reproduce::ReproduceCommand::augment_subcommands(clap::Command::new("r"));
        let names: Vec<&str> = command
            .get_subcommands()
            .map(|c| c.get_name())
            .filter(|n| *n != "all")
            .collect();
        assert_eq!(names.len(), 5, "{names:?}");
        for name in names {
            assert!(super::PAPERS.contains(&name), "{name} is not in PAPERS");
        }
    }
}
