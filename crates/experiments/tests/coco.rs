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
