use flashstack_block::{Hints, RequestKind};
use flashstack_ftl::presets;
use flashstack_trace::TraceRequest;

use super::*;

fn small_device() -> DeviceConfig {
    let mut device = presets::ldc_emmc();
    device.nand.geometry.blocks_per_plane = 512; // 128 MiB
    device
}

fn config(store_contents: bool) -> RunConfig {
    RunConfig {
        device: small_device(),
        seed: 3,
        store_contents,
        content: ContentConfig::default(),
        precondition: None,
        out_of_range: OutOfRange::Error,
        verify_reads: true,
        report: ReportOptions::default(),
        workload_name: "test".into(),
    }
}

fn request(kind: RequestKind, arrival_ns: u64, offset_bytes: u64, len_bytes: u64) -> TraceRequest {
    TraceRequest {
        arrival_ns,
        kind,
        offset_bytes,
        len_bytes,
        hints: Hints::default(),
        process: 0,
    }
}

#[test]
fn writes_then_reads_verify_content_end_to_end() {
    let mut r = Replayer::new(config(true)).unwrap();
    r.prepare(&mut NoProgress).unwrap();
    let mut t = 0;
    for round in 0..3u64 {
        for i in 0..200u64 {
            t += 1_000_000;
            let kind = if (i + round) % 3 == 0 {
                RequestKind::Read
            } else {
                RequestKind::Write
            };
            r.submit(i, &request(kind, t, i * 8192 + 1000, 6000))
                .unwrap();
        }
    }
    let report = r.report();
    assert!(report.host.write_requests > 0);
    assert!(report.host.read_requests > 0);
}

#[test]
fn beyond_capacity_is_an_error_or_wraps() {
    let mut r = Replayer::new(config(false)).unwrap();
    r.prepare(&mut NoProgress).unwrap();
    let cap = r.capacity_bytes();
    let err = r
        .submit(7, &request(RequestKind::Write, 0, cap, 4096))
        .unwrap_err();
    assert!(err.to_string().contains("request 7"), "{err}");
    let mut c = config(false);
    c.out_of_range = OutOfRange::Wrap;
    let mut r = Replayer::new(c).unwrap();
    r.prepare(&mut NoProgress).unwrap();
    r.submit(0, &request(RequestKind::Write, 0, cap + 4096, 8192))
        .unwrap();
    assert_eq!(r.wrapped_requests, 1);
}

#[test]
fn preconditioning_reaches_steady_state() {
    let mut c = config(false);
    c.precondition = Some(Precondition::default());
    let mut r = Replayer::new(c).unwrap();
    r.prepare(&mut NoProgress).unwrap();
    let p = r.precondition.clone().unwrap();
    assert!(p.steady, "{p}");
    assert!(p.write_amplification_last_window > 1.5, "{p}");
    // Measurement starts from zero.
    assert_eq!(r.ftl.counters().host_write_lbas, 0);
}
