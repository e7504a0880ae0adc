//! The lifetime formula's inputs agree with the rows the report prints beside them.

use flashstack_block::{BlockDevice, Hints, Payload};
use flashstack_ftl::compression::CompressionPolicyKind;
use flashstack_ftl::{presets, Ftl};
use flashstack_report::{render_table, ReportOptions, RunInfo, RunReport};

fn info(ftl: &Ftl) -> RunInfo {
    RunInfo {
        device: ftl.config().name.clone(),
        gc_policy: ftl.policy_name().to_string(),
        workload: "test".into(),
        seed: 1,
        contents_stored: true,
        user_capacity_bytes: ftl.user_capacity_bytes(),
        raw_capacity_bytes: ftl.config().nand.geometry.raw_bytes(),
        precondition: None,
    }
}

/// Text-like pages (compressible) written to a small device, some LBAs rewritten while
/// still in the write buffer, a flush now and then.
fn report(mut ftl: Ftl) -> RunReport {
    let mut page = vec![0u8; 4096];
    let mut now = 0;
    for i in 0..3_000u64 {
        let text = format!("row {i} of the table, a line of text that repeats; ");
        for (j, b) in page.iter_mut().enumerate() {
            *b = text.as_bytes()[j % text.len()];
        }
        // Every fifth write rewrites the LBA before it, still in the buffer.
        let lba = (i / 5 * 4 + (i % 5).min(3)) * 7 % 1_000;
        now = ftl
            .write(now, lba, Payload::Bytes(&page), Hints::default())
            .unwrap()
            .complete_ns;
        if i % 10 == 9 {
            now = ftl.flush(now).unwrap().complete_ns;
        }
    }
    RunReport::from_device(&ftl, info(&ftl), &ReportOptions::default())
}

fn small(mut device: flashstack_ftl::DeviceConfig) -> Ftl {
    device.nand.geometry.blocks_per_plane = 256;
    Ftl::new(device, true, 1).unwrap()
}

#[test]
fn lifetime_inputs_multiply_to_the_write_amplification_row() {
    let ldc = report(small(presets::ldc_emmc_with(CompressionPolicyKind::Ldc)));
    let mut ufs = presets::preset("ufs31").unwrap();
    ufs.nand.geometry.blocks_per_plane = 16;
    ufs.nand.geometry.pages_per_block = 128;
    let plain = report(small(ufs));
    for r in [&ldc, &plain] {
        let l = &r.lifetime;
        let product = l.write_amplification * l.compression_ratio;
        assert!(
            (product - r.write_amplification.total).abs() < 1e-9,
            "{}: {product} vs {}",
            r.run.device,
            r.write_amplification.total
        );
        assert_eq!(l.compression_ratio, r.compression.stored_ratio);
    }
    assert!(ldc.compression.stored_ratio < 0.5, "{:?}", ldc.compression);
    // No page compressed: R_compress is 1, even when writes superseded others in the
    // buffer (padding, counted in the WA row, not a compression ratio).
    assert!(
        plain.write_amplification.padding > 0.0,
        "{:?}",
        plain.write_amplification
    );
    assert_eq!(plain.compression.stored_ratio, 1.0);
    // The table prints the product beside its factors.
    let table = render_table(std::slice::from_ref(&ldc));
    let row = table
        .lines()
        .find(|l| l.contains("WA×R_compress"))
        .expect("lifetime row");
    let shown = format!(
        "{:.3}×{:.3} = {:.3}",
        ldc.lifetime.write_amplification,
        ldc.lifetime.compression_ratio,
        ldc.write_amplification.total
    );
    assert!(row.ends_with(&shown), "{row}");
    assert!(table.contains(&format!("R {:.3}", ldc.compression.stored_ratio)));
}

#[test]
fn flushes_with_nothing_pending_say_so() {
    // ldc-emmc: 4 KiB pages (each write is programmed as it arrives) and no command
    // overhead, so a flush has nothing to do.
    let r = report(small(presets::preset("ldc-emmc").unwrap()));
    let flush = &r.latency["flush"];
    assert!(flush.count > 0);
    assert_eq!(flush.latency_ns_max, 0, "{flush:?}");
    let table = render_table(&[r]);
    let row = table
        .lines()
        .find(|l| l.starts_with("flush latency p99"))
        .unwrap();
    assert!(row.ends_with("0 ns (nothing pending)"), "{row}");
}
