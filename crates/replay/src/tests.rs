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

/// Aging that ends at its bound says so in words: whether GC ran, and what to change.
/// The last window's write amplification is a real measurement even when the bound
/// leaves a remainder of a couple of writes (it read 0.000 on 16 KiB pages).
#[test]
fn preconditioning_that_stops_at_the_bound_says_why() {
    let mut device = presets::preset("ufs31").unwrap();
    device.nand.geometry.blocks_per_plane = 16;
    device.nand.geometry.pages_per_block = 128;
    let mut c = config(false);
    c.device = device;
    let capacity = Replayer::new(c.clone()).unwrap().ftl.capacity_lbas();
    let filled = (capacity as f64 * 0.5) as u64;
    let window = (filled / 4).max(4_096);
    // Sixteen windows (GC has started by then) and two writes more.
    c.precondition = Some(Precondition {
        utilization: 0.5,
        aging_factor_max: (16 * window) as f64 / filled as f64 + 2.5 / filled as f64,
        steady_tolerance: 0.0,
        ..Precondition::default()
    });
    let mut r = Replayer::new(c).unwrap();
    r.prepare(&mut NoProgress).unwrap();
    let p = r.precondition.clone().unwrap();
    assert_eq!(p.aging_writes, 16 * window + 2, "{p}");
    assert!(!p.steady && p.gc_started, "{p}");
    assert!(p.write_amplification_last_window > 0.5, "{p}");
    let text = p.to_string();
    assert!(
        text.contains("before steady state") && text.contains("--aging-max"),
        "{text}"
    );

    // Little data and little aging: GC never runs, and the message says what that means.
    let mut c = config(false);
    c.precondition = Some(Precondition {
        utilization: 0.1,
        aging_factor_max: 0.5,
        ..Precondition::default()
    });
    let mut r = Replayer::new(c).unwrap();
    r.prepare(&mut NoProgress).unwrap();
    let p = r.precondition.clone().unwrap();
    assert!(!p.gc_started && !p.steady, "{p}");
    let text = p.to_string();
    assert!(
        text.contains("garbage collection never ran") && text.contains("--precondition"),
        "{text}"
    );
    assert!(!text.contains("WA 0.000"), "{text}");
}

fn zone(lbas: std::ops::Range<u64>, mix: &str) -> flashstack_content::Zone {
    flashstack_content::Zone::new(lbas, mix.parse().unwrap())
}

#[test]
fn snapshot_lays_down_each_zone_once_with_its_mix() {
    let mut r = Replayer::new(config(true)).unwrap();
    let zones = [zone(0..1000, "meta:1"), zone(5000..9000, "media:1")];
    let report = r
        .initialise_snapshot(&zones, &mut NoProgress)
        .unwrap()
        .clone();
    assert_eq!((report.zones, report.lbas_written), (2, 5000));
    assert_eq!(r.ftl.counters().host_write_lbas, 5000);
    assert_eq!(r.versions[999], 1);
    assert_eq!(r.versions[1000], 0);
    assert_eq!(r.versions[8999], 1);
    use flashstack_content::ContentClass;
    assert_eq!(r.content.class_of(10), ContentClass::Metadata);
    assert_eq!(r.content.class_of(6000), ContentClass::Media);
    let aged = r.age_snapshot(0.5, &mut NoProgress).unwrap();
    assert_eq!(aged, 2500);
    assert_eq!(r.snapshot.aging_writes, 2500);
    assert_eq!(r.ftl.counters().host_write_lbas, 7500);
    assert!(r.versions.iter().any(|&v| v >= 2));
    r.prepare(&mut NoProgress).unwrap();
    assert_eq!(
        r.ftl.counters().host_write_lbas,
        0,
        "measurement starts after it"
    );
    // Reads of existing data verify against the zones' content.
    for (i, lba) in [0u64, 500, 5000, 8999].into_iter().enumerate() {
        r.submit(i as u64, &request(RequestKind::Read, 0, lba * 4096, 4096))
            .unwrap();
    }
    let err = r.initialise_snapshot(&zones, &mut NoProgress).unwrap_err();
    assert!(matches!(err, ReplayError::SnapshotAfterPrepare), "{err}");
}

#[test]
fn configured_zones_win_over_snapshot_zones() {
    let mut c = config(true);
    c.content.zones = vec![zone(0..100, "text:1")];
    let mut r = Replayer::new(c).unwrap();
    r.initialise_snapshot(&[zone(0..200, "media:1")], &mut NoProgress)
        .unwrap();
    use flashstack_content::ContentClass;
    assert_eq!(r.content.class_of(50), ContentClass::Text);
    assert_eq!(r.content.class_of(150), ContentClass::Media);
}

#[test]
fn snapshot_beyond_the_device_is_an_error() {
    let mut r = Replayer::new(config(false)).unwrap();
    let cap = r.ftl.capacity_lbas();
    let err = r
        .initialise_snapshot(
            &[zone(0..10, "media:1"), zone(cap - 5..cap + 5, "media:1")],
            &mut NoProgress,
        )
        .unwrap_err();
    assert!(err.to_string().contains("zone 1"), "{err}");
    assert_eq!(r.ftl.counters().host_write_lbas, 0, "nothing written");
}

#[test]
fn a_builtin_workload_replays_with_its_zones_and_existing_data() {
    use flashstack_trace::builtin::{ldc_workload, LdcApp};
    let mut c = config(true);
    let capacity = Replayer::new(c.clone()).unwrap().capacity_bytes();
    let w = ldc_workload(LdcApp::Camera, capacity, 3).unwrap();
    c.content.zones = content_zones(&w.content_zones()).unwrap();
    let mut r = Replayer::new(c).unwrap();
    r.initialise_snapshot(&content_zones(&w.snapshot).unwrap(), &mut NoProgress)
        .unwrap();
    r.age_snapshot(0.25, &mut NoProgress).unwrap();
    r.prepare(&mut NoProgress).unwrap();
    r.replay(w.passes(2), None, &mut NoProgress).unwrap();
    let report = r.report();
    let f = w.figures();
    assert_eq!(report.host.write_requests, 2 * f.writes);
    assert_eq!(report.host.read_requests, 2 * f.reads);
    assert_eq!(report.host.write_bytes, 2 * f.write_bytes);
}

#[test]
fn a_bad_zone_mix_names_the_zone() {
    let spec = flashstack_trace::builtin::ZoneSpec {
        name: "fb.images".into(),
        lbas: 0..8,
        mix: "jpeg:1".into(),
    };
    let err = content_zones(&[spec]).unwrap_err().to_string();
    assert!(
        err.contains("zone fb.images") && err.contains("jpeg"),
        "{err}"
    );
}

/// A mixed request sequence: writes of 1 to 300 LBAs (more than a prefill chunk), trims,
/// verified reads and flushes, over a small device with wrapping addresses.
fn mixed_requests(seed: u64, n: u64, capacity: u64) -> Vec<TraceRequest> {
    let mut rng = flashstack_sim::Rng::new(seed);
    (0..n)
        .map(|i| {
            let kind = match rng.below(10) {
                0..=4 => RequestKind::Write,
                5..=7 => RequestKind::Read,
                8 => RequestKind::Trim,
                _ => RequestKind::Flush,
            };
            let len = match rng.below(20) {
                0 => 300 * 4096,
                _ => (1 + rng.below(8)) * 4096,
            };
            // Some requests run past the end and wrap; flushes have no range.
            let offset = rng.below(capacity + capacity / 50) / 4096 * 4096;
            match kind {
                RequestKind::Flush => request(kind, i * 100_000, 0, 0),
                _ => request(kind, i * 100_000, offset, len),
            }
        })
        .collect()
}

/// Everything a replay leaves behind: the report and every LBA's bytes.
fn outcome(r: &mut Replayer) -> String {
    let mut seen = format!("{:?}\n{:?}\n", r.report(), r.precondition);
    let mut page = vec![0u8; LBA_SIZE];
    let t = r.ftl.busy_until_ns();
    for lba in 0..r.ftl.capacity_lbas() {
        r.ftl.read(t, lba, 1, Some(&mut page)).unwrap();
        let sum = page.chunks_exact(8).fold(0u64, |h, w| {
            h.rotate_left(5) ^ u64::from_le_bytes(w.try_into().unwrap())
        });
        seen += &format!("{sum:x} ");
    }
    seen
}

#[test]
fn contents_generated_ahead_on_workers_give_identical_runs() {
    let mut outcomes = Vec::new();
    for workers in [0, 1, 3] {
        let mut c = config(true);
        c.out_of_range = OutOfRange::Wrap;
        c.device.nand.geometry.blocks_per_plane = 64; // 16 MiB: GC, and many overwrites
        c.precondition = Some(Precondition {
            utilization: 0.8,
            aging_factor_max: 1.0,
            steady_tolerance: 0.05,
            ..Precondition::default()
        });
        let mut r = Replayer::new(c).unwrap();
        r.set_content_workers(workers);
        r.prepare(&mut NoProgress).unwrap();
        let requests = mixed_requests(9, 20_000, r.capacity_bytes());
        r.replay(requests.into_iter(), None, &mut NoProgress)
            .unwrap();
        assert!(r.wrapped_requests > 0);
        outcomes.push(outcome(&mut r));
    }
    assert_eq!(outcomes[0], outcomes[1]);
    assert_eq!(outcomes[0], outcomes[2]);
}

#[test]
fn a_replay_stopped_by_an_error_leaves_the_content_state_consistent() {
    for workers in [0, 2] {
        let mut r = Replayer::new(config(true)).unwrap();
        r.set_content_workers(workers);
        r.prepare(&mut NoProgress).unwrap();
        let cap = r.capacity_bytes();
        // Writes planned after the failing request must not count as written.
        let mut first = mixed_requests(4, 3_000, cap / 2);
        first.insert(1_000, request(RequestKind::Write, 0, cap, 4096));
        let err = r
            .replay(first.into_iter(), None, &mut NoProgress)
            .unwrap_err();
        assert!(err.to_string().contains("request 1000"), "{err}");
        // Reading everything back verifies every LBA against the versions kept.
        let reads = (0..cap / 4096).map(|l| request(RequestKind::Read, 0, l * 4096, 4096));
        r.replay(reads, None, &mut NoProgress).unwrap();
    }
}

/// Existing data is stored raw for every policy by default (the paper's initialisation);
/// through the policy only when asked, and the host path compresses again afterwards.
#[test]
fn snapshot_is_laid_down_policy_neutrally_unless_asked() {
    use flashstack_ftl::compression::CompressionPolicyKind;
    let compressed_after_lay_down = |lay_down: LayDown| {
        let mut c = config(true);
        c.device = presets::ldc_emmc_with(CompressionPolicyKind::Zftl);
        c.device.nand.geometry.blocks_per_plane = 512;
        let mut r = Replayer::new(c).unwrap();
        r.set_snapshot_lay_down(lay_down);
        r.initialise_snapshot(&[zone(0..2000, "sqlite:1")], &mut NoProgress)
            .unwrap();
        r.age_snapshot(0.5, &mut NoProgress).unwrap();
        assert_eq!(r.snapshot.lay_down, lay_down);
        let laid = r.ftl.counters().pages_compressed_host;
        r.prepare(&mut NoProgress).unwrap();
        r.submit(0, &request(RequestKind::Write, 0, 0, 8 * 4096))
            .unwrap();
        r.submit(1, &request(RequestKind::Read, 1_000_000, 0, 2000 * 4096))
            .unwrap();
        (laid, r.ftl.counters().pages_compressed_host)
    };
    let (neutral, after) = compressed_after_lay_down(LayDown::Neutral);
    assert_eq!(neutral, 0, "existing data stored raw");
    assert!(after > 0, "the run under test compresses again");
    let (through, _) = compressed_after_lay_down(LayDown::ThroughPolicy);
    assert_eq!(through, 3000, "every SQLite page compressed by zFTL");
}

#[test]
fn the_timeline_samples_each_second_and_closes_on_the_report_figures() {
    let mut r = Replayer::new(config(false)).unwrap();
    r.prepare(&mut NoProgress).unwrap();
    // 600 writes, one every 10 ms: six seconds of simulated time, rewriting 300 LBAs
    // twice so GC may run.
    for i in 0..600u64 {
        let lba = (i * 7919) % 300;
        r.submit(
            i,
            &request(RequestKind::Write, i * 10_000_000, lba * 4096, 4096),
        )
        .unwrap();
    }
    let report = r.report();
    let timeline = report
        .timeline
        .as_ref()
        .expect("a block run carries its timeline");
    let samples = &timeline.samples;
    assert!((6..=8).contains(&samples.len()), "{samples:?}");
    assert!(samples
        .windows(2)
        .all(|w| w[0].t_ns < w[1].t_ns && w[0].host_write_blocks <= w[1].host_write_blocks));
    let last = samples.last().unwrap();
    assert_eq!(last.host_write_blocks * 4096, report.host.write_bytes);
    assert_eq!(last.nand_page_programs, report.nand.page_programs);
    assert_eq!(last.fs_free_segments, None);
    assert!(last.device_free_blocks > 0);
    // Not serialised for a device-only run: no F2FS.
    let json = serde_json::to_string(&report).unwrap();
    assert!(json.contains("\"timeline\"") && !json.contains("fs_free_segments"));
}

/// Preconditioning by construction lands where replay aging does: after preconditioning
/// to 70 % (replay: aged to steady state; construction: laid out, no settling writes at
/// all), the same filled / 2 uniform random 4 KiB overwrites give a write amplification
/// within 10 % of each other (4 KiB, 8 KiB and 16 KiB pages, one to three write streams),
/// and the model's own steady-state WA is within 10 % of replay's last window; GC runs on
/// the first measured writes; the constructed device passes the FTL's invariant check.
/// Construction is refused with a clear error where it does not apply (stored contents).
#[test]
fn constructed_steady_state_matches_replay_aging() {
    let mut ufs = presets::ufs31();
    ufs.nand.geometry.blocks_per_plane = 96;
    let mut mqsim = presets::mqsim_default();
    mqsim.nand.geometry.blocks_per_plane = 120;
    mqsim.ftl.gc.foreground_free_blocks = 4;
    mqsim.ftl.gc.background_free_blocks = 4;
    for device in [small_device(), ufs, mqsim] {
        let name = device.name.clone();
        let mut was = Vec::new();
        let mut reports = Vec::new();
        for method in [PreconditionMethod::Replay, PreconditionMethod::Construct] {
            let mut c = config(false);
            c.device = device.clone();
            c.precondition = Some(Precondition {
                utilization: 0.7,
                aging_factor_max: if method == PreconditionMethod::Replay {
                    4.0
                } else {
                    0.0
                },
                method,
                ..Precondition::default()
            });
            let mut r = Replayer::new(c).unwrap();
            r.prepare(&mut NoProgress).unwrap();
            let p = r.precondition.clone().unwrap();
            if method == PreconditionMethod::Construct {
                r.ftl.check_invariants().unwrap();
                assert!(p.to_string().contains("by construction"), "{p}");
            } else {
                assert!(p.gc_started && p.steady, "{name}: {p}");
            }
            let mut rng = flashstack_sim::Rng::new(11);
            let writes = p.filled_lbas / 2;
            let mut t = r.ftl.measure_start_ns();
            for i in 0..writes {
                t += 1_000;
                let lba = rng.below(p.filled_lbas);
                r.submit(i, &request(RequestKind::Write, t, lba * 4096, 4096))
                    .unwrap();
            }
            let nand = r.ftl.nand();
            assert!(nand.counters().block_erases > 0, "{name} {method:?}");
            let spp = nand.config().geometry.page_size_bytes as u64 / 4096;
            was.push(nand.counters().page_programs as f64 * spp as f64 / writes as f64);
            reports.push(p);
        }
        let (replay, constructed) = (was[0], was[1]);
        let steady = reports[0].write_amplification_last_window;
        let model = reports[1].constructed_model_wa.unwrap();
        println!(
            "{name}: WA of the first filled/2 writes after replay aging {replay:.3}, after \
             construction {constructed:.3}; replay's steady window {steady:.3}, model {model:.3}"
        );
        assert!(
            (constructed - replay).abs() <= 0.10 * replay,
            "{name}: WA after replay aging {replay:.3}, after construction {constructed:.3}"
        );
        assert!(
            (model - steady).abs() <= 0.10 * steady,
            "{name}: model WA {model:.3}, replay's steady window {steady:.3}"
        );
    }
    let mut c = config(true);
    c.precondition = Some(Precondition {
        utilization: 0.5,
        method: PreconditionMethod::Construct,
        ..Precondition::default()
    });
    let error = Replayer::new(c)
        .unwrap()
        .prepare(&mut NoProgress)
        .unwrap_err();
    assert!(error.to_string().contains("stored contents"), "{error}");
}

/// An install trace replays before the measurement: its data is on the device (read back
/// byte for byte), none of it is counted, and it cannot be given once measuring.
#[test]
fn a_precondition_trace_is_on_the_device_and_in_no_figure() {
    let mut r = Replayer::new(config(true)).unwrap();
    let install: Vec<TraceRequest> = (0..64u64)
        .map(|i| request(RequestKind::Write, 7_000_000 + i * 1000, i * 65536, 65536))
        .chain([request(RequestKind::Read, 9_000_000, 100 << 20, 4096)])
        .collect();
    r.precondition_with_trace("install", install).unwrap();
    r.prepare(&mut NoProgress).unwrap();
    let t = r.trace_precondition.clone().unwrap();
    assert_eq!(
        (t.requests, t.write_bytes, t.read_bytes),
        (65, 4 << 20, 4096)
    );
    assert!(t.duration_ns >= 2_000_000, "{t:?}");
    assert_eq!(r.precondition_summary().unwrap(), t.to_string());
    for lba in 0..1024 {
        assert!(r.ftl.is_mapped(lba), "LBA {lba}");
    }
    // Verified reads of the installed data, and nothing of the install counted.
    r.submit(0, &request(RequestKind::Read, 0, 0, 4 << 20))
        .unwrap();
    let report = r.report();
    assert_eq!(report.host.write_requests, 0);
    assert_eq!(report.host.read_bytes, 4 << 20);
    assert!(report.nand.page_reads > 0);
    assert!(report
        .run
        .precondition
        .unwrap()
        .starts_with("replayed install (65 requests"));
    assert!(matches!(
        r.precondition_with_trace("late", Vec::new()),
        Err(ReplayError::PreconditionTraceAfterPrepare)
    ));
    // Beyond the device: refused with the trace's name and the request.
    let mut r = Replayer::new(config(false)).unwrap();
    let far = vec![request(RequestKind::Write, 0, 1 << 40, 4096)];
    let err = r
        .precondition_with_trace("far.csv", far)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("precondition trace far.csv: request 0 (write"),
        "{err}"
    );
}
