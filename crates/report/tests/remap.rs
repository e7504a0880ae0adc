//! The FTL's remap counters in the report: the terminal table shows them only for runs
//! that remapped (tables of other runs are unchanged), the JSON always.

use flashstack_block::{BlockDevice, Hints, Payload, Remap};
use flashstack_ftl::{presets, Ftl};
use flashstack_report::{render_json, render_table, ReportOptions, RunInfo, RunReport};

fn run(remaps: bool) -> RunReport {
    let mut device = presets::preset("ufs31").unwrap();
    device.nand.geometry.blocks_per_plane = 16;
    device.nand.geometry.pages_per_block = 128;
    let mut ftl = Ftl::new(device, true, 1).unwrap();
    let mut now = 0;
    for lba in 0..64u64 {
        let page = vec![lba as u8 + 1; 4096];
        now = ftl
            .write(now, lba, Payload::Bytes(&page), Hints::default())
            .unwrap()
            .complete_ns;
    }
    now = ftl.flush(now).unwrap().complete_ns;
    if remaps {
        now = ftl.remap(now, 0, 1_000, 16).unwrap().complete_ns;
        ftl.remap(now, 16, 2_000, 8).unwrap();
    }
    let info = RunInfo {
        device: ftl.config().name.clone(),
        gc_policy: ftl.policy_name().to_string(),
        workload: "test".into(),
        seed: 1,
        contents_stored: true,
        user_capacity_bytes: ftl.user_capacity_bytes(),
        raw_capacity_bytes: ftl.config().nand.geometry.raw_bytes(),
        precondition: None,
    };
    RunReport::from_device(&ftl, info, &ReportOptions::default())
}

#[test]
fn remap_rows_only_for_runs_that_remapped_json_always() {
    let (plain, remapped) = (run(false), run(true));
    let table = render_table(std::slice::from_ref(&plain));
    assert!(!table.contains("remap"), "{table}");
    // `render_json` of one report is that report's object.
    let json: serde_json::Value = serde_json::from_str(&render_json(&[&plain])).unwrap();
    assert_eq!(json["remap"]["requests"], 0, "{json}");

    assert_eq!(remapped.remap.requests, 2);
    assert_eq!(remapped.remap.lbas, 24);
    assert_eq!(remapped.remap.record_pages, 2);
    let table = render_table(&[plain, remapped.clone()]);
    let row = table
        .lines()
        .find(|l| l.starts_with("host remaps"))
        .expect(&table);
    assert!(
        row.contains("0 (0 B)") && row.contains("2 (96.00 KiB)"),
        "{row}"
    );
    let after = table
        .lines()
        .skip_while(|l| !l.starts_with("host trims"))
        .nth(1);
    assert!(after.unwrap().starts_with("host remaps"), "{table}");
    let json: serde_json::Value = serde_json::from_str(&render_json(&[&remapped])).unwrap();
    assert_eq!(json["remap"]["lbas"], 24, "{json}");
    assert_eq!(json["remap"]["record_pages"], 2, "{json}");
}
