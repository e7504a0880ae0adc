//! Golden counters for MedFS's inline deltas against stock F2FS on the whole stack: a
//! fixed persona and seed give exactly these F2FS blocks and NAND programs under the
//! `default` and `medfs` stack presets. A change here is a change in modelled behaviour:
//! update the figures only with a reason in the commit message. The test also fails if
//! MedFS is silently off (no delta stored on a persona that updates its files).

use flashstack_apps::persona;
use flashstack_experiments::fullstack::{run, FullStackOptions, StackWorkload};
use flashstack_stack::StackConfig;

/// (F2FS data, in place, node blocks; deltas stored inline; NAND page programs).
fn counters(preset: &str, workload: &str) -> [u64; 5] {
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
        out.run.device.nand.page_programs,
    ]
}

#[test]
fn medfs_against_stock_golden_counters() {
    let got: Vec<(&str, &str, [u64; 5])> = GOLDEN
        .iter()
        .map(|(preset, workload, _)| (*preset, *workload, counters(preset, workload)))
        .collect();
    println!("{got:?}");
    assert_eq!(got, GOLDEN);
    for (preset, workload, c) in &got {
        if *preset == "medfs" {
            assert!(c[3] > 0, "{workload}: MedFS stored no delta");
            assert_eq!(c[1], 0, "{workload}: in-place updates while DCI is on");
        }
    }
}

const GOLDEN: [(&str, &str, [u64; 5]); 4] = [
    ("default", "telegram:receive-text", [2569, 0, 176, 0, 2788]),
    ("medfs", "telegram:receive-text", [2226, 0, 176, 345, 2443]),
    ("default", "gmail:send-text", [139, 2005, 1003, 0, 3292]),
    ("medfs", "gmail:send-text", [1839, 0, 1035, 305, 3060]),
];
