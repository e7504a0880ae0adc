//! The controller write buffer in the report: a `write_buffer` JSON section and three
//! table rows only when a device has one, so other reports stay byte-identical.

use flashstack_block::{BlockDevice, Hints, Payload};
use flashstack_ftl::{presets, Ftl};
use flashstack_report::{render_json, render_table, ReportOptions, RunInfo, RunReport};

fn run(buffer_bytes: u64) -> RunReport {
    let mut device = presets::preset("ufs31").unwrap();
    device.nand.geometry.blocks_per_plane = 16;
    device.nand.geometry.pages_per_block = 128;
    device.ftl.write_buffer.capacity_bytes = buffer_bytes;
    // Eight planes each on its own timeline (the figures below count on it), and page
    // allocation: the write buffer destages page by page (super-pages refuse it).
    device.nand.die_rules = flashstack_nand::DieRules::IndependentPlanes;
    device.nand.timing.channel_model = flashstack_nand::ChannelModel::BusyUntil;
    device.ftl.allocation = flashstack_ftl::Allocation::Page;
    let mut ftl = Ftl::new(device, false, 1).unwrap();
    let mut now = 0;
    for lba in 0..66u64 {
        now = ftl
            .write(
                now,
                lba,
                Payload::Unstored { lba_count: 1 },
                Hints::default(),
            )
            .unwrap()
            .complete_ns;
    }
    ftl.read(now, 64, 2, None).unwrap();
    let info = RunInfo {
        device: ftl.config().name.clone(),
        gc_policy: ftl.policy_name().to_string(),
        workload: "test".into(),
        seed: 1,
        contents_stored: false,
        user_capacity_bytes: ftl.user_capacity_bytes(),
        raw_capacity_bytes: ftl.config().nand.geometry.raw_bytes(),
        precondition: None,
    };
    RunReport::from_device(&ftl, info, &ReportOptions::default())
}

#[test]
fn write_buffer_figures_only_for_devices_with_one() {
    let (plain, buffered) = (run(0), run(1 << 20));
    let table = render_table(std::slice::from_ref(&plain));
    assert!(!table.contains("write buffer"), "{table}");
    let json: serde_json::Value = serde_json::from_str(&render_json(&[&plain])).unwrap();
    assert!(json.get("write_buffer").is_none(), "{json}");

    let json: serde_json::Value = serde_json::from_str(&render_json(&[&buffered])).unwrap();
    let wb = &json["write_buffer"];
    assert_eq!(wb["capacity_bytes"], 1 << 20, "{json}");
    assert_eq!(wb["destage"], "fifo");
    // 16 KiB pages on 8 planes, a write every few µs: the first 8 pages (32 LBAs) go
    // down as their planes are idle; the rest wait in the buffer while the planes program
    // (500 µs), and the last 2 are read from it.
    assert_eq!(wb["destaged_lbas"], 32);
    assert_eq!(wb["buffered_lbas"], 34);
    assert_eq!(wb["buffer_read_hits"], 2);
    assert_eq!(wb["full_waits"], 0);
    let table = render_table(&[plain, buffered]);
    let row = |label: &str| {
        table
            .lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("{label}: {table}"))
            .to_string()
    };
    let destaged = row("write buffer destaged");
    assert!(
        destaged.contains("off") && destaged.contains("32 LBAs (1.00 MiB, fifo)"),
        "{destaged}"
    );
    assert!(row("  full waits / max wait").contains("0 / 0.0 us"));
    assert!(row("  read hits / lost at cuts").contains("2 / 0"));
}
