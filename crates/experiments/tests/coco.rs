//! `reproduce coco`'s runs measure what each scheme does: the engine-off drive and F2FSC
//! make the device compress nothing, F2FSC compresses clusters on the host, the CSD
//! compresses on the device and writes less flash than plain F2FS; same seed, same figures.

use flashstack_experiments::coco::{run_one, CocoOptions};
use flashstack_workload::filebench::Personality;

#[test]
fn each_scheme_compresses_where_it_should() {
    let options = CocoOptions {
        quick: true,
        seed: 3,
        coco_op_threshold_permille: None,
    };
    let p = Personality::Fileserver;
    let f2fs = run_one("F2FS", p, &options).unwrap();
    let f2fsc = run_one("F2FSC", p, &options).unwrap();
    let csd = run_one("CSD", p, &options).unwrap();
    assert_eq!(
        f2fs.device_compressed_pages + f2fs.host_compressed_clusters,
        0
    );
    assert!(f2fsc.host_compressed_clusters > 0 && f2fsc.device_compressed_pages == 0);
    assert!(csd.device_compressed_pages > 0 && csd.host_compressed_clusters == 0);
    assert!(csd.waf < f2fs.waf, "{} vs {}", csd.waf, f2fs.waf);
    assert!(
        f2fsc.throughput_mb_s < f2fs.throughput_mb_s,
        "host compression costs CPU time"
    );
    assert!(
        csd.device_power_w_mean > f2fs.device_power_w_mean,
        "the engine draws power"
    );
    let again = run_one("CSD", p, &options).unwrap();
    assert_eq!(again.flash_program_bytes, csd.flash_program_bytes);
    assert_eq!(again.throughput_mb_s, csd.throughput_mb_s);
}

/// COCO is FACS plus on-demand allocation: the same work, the same side decisions, and a
/// user capacity the policy set from the flash (the drive's budget less the threshold,
/// plus what compression saved) instead of mkfs's twice-the-flash logical capacity.
#[test]
fn coco_is_facs_with_the_capacity_on_demand() {
    let options = CocoOptions {
        quick: true,
        seed: 3,
        coco_op_threshold_permille: Some(300),
    };
    let p = Personality::Varmail;
    let facs = run_one("FACS", p, &options).unwrap();
    let coco = run_one("COCO", p, &options).unwrap();
    assert_eq!(coco.app_write_bytes, facs.app_write_bytes);
    assert_eq!(coco.host_compressed_clusters, facs.host_compressed_clusters);
    // 256 MiB of flash, a budget of about 190 MiB; 70 % of it plus the saved space.
    assert!(
        coco.user_capacity_mib < facs.user_capacity_mib / 2,
        "{} MiB against {} MiB",
        coco.user_capacity_mib,
        facs.user_capacity_mib
    );
    assert!(
        (120..=200).contains(&coco.user_capacity_mib),
        "{}",
        coco.user_capacity_mib
    );
}

/// Two points of the OP sweep: more OP, less cleaning — higher throughput, lower WAF —
/// and the knee of the two is the larger unless the smaller is within 5 % of it.
#[test]
fn the_op_sweep_measures_cleaning_cost() {
    use flashstack_experiments::coco_op::{knee, op_point};
    let low = op_point(10.0, true, 2).unwrap();
    let high = op_point(40.0, true, 2).unwrap();
    assert!(low.user_mib > high.user_mib, "{low:?} {high:?}");
    assert!(low.waf > high.waf * 1.5, "{low:?} {high:?}");
    assert!(
        high.throughput_mb_s > low.throughput_mb_s * 1.5,
        "{low:?} {high:?}"
    );
    assert_eq!(knee(&[low, high]), Some(40.0));
}
