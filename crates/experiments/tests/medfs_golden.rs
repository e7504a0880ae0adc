//! Golden counters for MedFS's schemes against stock F2FS on the whole stack: a fixed
//! persona and seed give exactly these F2FS blocks, deltas and NAND programs under the
//! `default`, `dci`, `dcm`, `medfs` (DCI + DCM), `f2fs-dc` and `fpc` (FPC's file policy
//! over F2FS compression) stack presets. A change here
//! is a change in modelled behaviour: update the figures only with a reason in the commit
//! message. The test also fails if a scheme is silently off (no delta stored where the
//! scheme stores them on a persona that updates its files).

use flashstack_apps::persona;
use flashstack_experiments::fullstack::{run, FullStackOptions, StackWorkload};
use flashstack_stack::StackConfig;

/// (F2FS data, in place, node blocks; deltas stored inline; deltas stored in DCM;
/// pseudo-file pages written; NAND page programs).
fn counters(preset: &str, workload: &str) -> [u64; 7] {
    let p = persona(workload).unwrap();
    let options = FullStackOptions {
        record: false,
        ..FullStackOptions::default()
    };
    let config = StackConfig::preset(preset).unwrap();
    let out = run(&config, &StackWorkload::Persona(p.as_ref()), &options).unwrap();
    let fs = &out.run.fs;
    [
        fs.data_blocks,
        fs.ipu_data_blocks,
        fs.node_blocks,
        fs.delta.inline_stores,
        fs.delta.dcm_stores,
        fs.delta.dcm_page_writes,
        out.run.device.nand.page_programs,
    ]
}

#[test]
fn medfs_schemes_against_stock_golden_counters() {
    let got: Vec<(&str, &str, [u64; 7])> = GOLDEN
        .iter()
        .map(|(preset, workload, _)| (*preset, *workload, counters(preset, workload)))
        .collect();
    for g in &got {
        println!("{g:?},");
    }
    for (preset, workload, c) in &got {
        let inline = matches!(*preset, "dci" | "medfs");
        let dcm = matches!(*preset, "dcm" | "medfs" | "f2fs-dc");
        assert_eq!(
            c[3] > 0,
            inline,
            "{preset} {workload}: inline deltas {}",
            c[3]
        );
        assert_eq!(c[4] > 0, dcm, "{preset} {workload}: DCM deltas {}", c[4]);
        if !matches!(*preset, "default" | "fpc") {
            assert_eq!(c[1], 0, "{workload}: in-place updates while {preset} is on");
        }
    }
    // FPC silently off would write exactly what stock F2FS writes.
    for (_, workload, c) in got.iter().filter(|g| g.0 == "fpc") {
        let stock = got
            .iter()
            .find(|g| g.0 == "default" && g.1 == *workload)
            .unwrap();
        assert_ne!(
            c[0], stock.2[0],
            "{workload}: fpc wrote the data blocks of stock F2FS"
        );
    }
    assert_eq!(got, GOLDEN);
}

const GOLDEN: [(&str, &str, [u64; 7]); 12] = [
    (
        "default",
        "telegram:receive-text",
        [2569, 0, 176, 0, 0, 0, 2788],
    ),
    (
        "dci",
        "telegram:receive-text",
        [2252, 0, 176, 321, 0, 0, 2469],
    ),
    (
        "dcm",
        "telegram:receive-text",
        [2108, 0, 179, 0, 623, 159, 2335],
    ),
    (
        "medfs",
        "telegram:receive-text",
        [2107, 0, 179, 115, 508, 156, 2329],
    ),
    (
        "f2fs-dc",
        "telegram:receive-text",
        [2111, 0, 179, 0, 623, 159, 2339],
    ),
    (
        "default",
        "gmail:send-text",
        [139, 2005, 1003, 0, 0, 0, 3292],
    ),
    ("dci", "gmail:send-text", [1849, 0, 1035, 295, 0, 0, 3071]),
    (
        "dcm",
        "gmail:send-text",
        [3005, 0, 1043, 0, 1160, 1993, 4237],
    ),
    (
        "medfs",
        "gmail:send-text",
        [2767, 0, 1027, 226, 934, 1767, 3968],
    ),
    (
        "f2fs-dc",
        "gmail:send-text",
        [2972, 0, 1043, 0, 1160, 1988, 4199],
    ),
    (
        "fpc",
        "telegram:receive-text",
        [1771, 0, 175, 0, 0, 0, 2531],
    ),
    ("fpc", "gmail:send-text", [2176, 0, 1035, 0, 0, 0, 8250]),
];
