//! `flashstack reproduce coco`: the COCO seed's figures beside ours
//! (`flashstack_experiments::coco`, `docs/coco-reproduction.md`).

use anyhow::Context;
use anyhow::Result;
use clap::Args;
use flashstack_apps::persona;
use flashstack_experiments::fullstack::{self, FullStackOptions, StackWorkload, Start};
use flashstack_html::Reproduction;
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
    let phone = phone_rows(args.quick, args.seed)?;
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
/// status bit (the `hinted` policy) — each from a factory-new phone.
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
    pub persona: String,
    pub side: String,
    pub stack: String,
    pub nand_page_programs: u64,
    pub host_write_bytes: u64,
    pub device_energy_mj: f64,
    pub phone_energy_mj: f64,
    pub user_op_latency_ns_mean: f64,
}

fn phone_rows(quick: bool, seed: u64) -> Result<Vec<PhoneRow>> {
    let base = StackConfig::preset("default")?;
    let mut rows = Vec::new();
    for name in phone_personas(quick) {
        let p = persona(name).map_err(|e| anyhow::anyhow!("{e}"))?;
        for (side, spec) in PHONE_STACKS {
            let config = resolve_stack(spec, &base)?;
            let options = FullStackOptions {
                seed,
                start: Start::Fresh,
                record: false,
                ..FullStackOptions::default()
            };
            let run = fullstack::run(&config, &StackWorkload::Persona(p.as_ref()), &options)
                .with_context(|| format!("{name} on {spec}"))?
                .run;
            rows.push(PhoneRow {
                persona: name.to_string(),
                side: side.into(),
                stack: spec.into(),
                nand_page_programs: run.device.nand.page_programs,
                host_write_bytes: run.device.host.write_bytes,
                device_energy_mj: run.energy.device_mj,
                phone_energy_mj: run.energy.total_mj,
                user_op_latency_ns_mean: crate::reproduce_all::user_op_mean_ns(&run),
            });
        }
    }
    Ok(rows)
}

fn phone_text(rows: &[PhoneRow]) -> String {
    let mut out = String::from(
        "\nBeyond the seed: who should compress on a phone (LDC eMMC phone, factory-new; change \
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
