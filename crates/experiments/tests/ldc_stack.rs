//! `reproduce ldc --stack --quick`: one 1 GiB phone aged 10 days under PM, an eighth of the
//! six-app mix under each of the five policies from it. Golden: each policy's NAND
//! programs and erases exactly (the figures in docs/ldc-reproduction.md, "Under the whole
//! stack"). About 5 s in release.

use std::sync::Arc;

use flashstack_experiments::ldc_stack::{self, LdcStackOptions};
use flashstack_ftl::compression::CompressionPolicyKind;

#[test]
fn five_policies_from_one_phone_aged_under_pm() {
    let config = ldc_stack::phone_stack(true, true);
    let phone =
        flashstack_phone::build(&config, &ldc_stack::aging_spec(true, 1), &mut |_, _| {}).unwrap();
    let phone = Arc::new(phone);
    let options = LdcStackOptions {
        quick: true,
        seed: 1,
    };
    let r = ldc_stack::run(Arc::clone(&phone), &options, &mut |_| {}).unwrap();
    let text = r.render();
    assert!(text.contains("laid down policy-neutral"), "{text}");
    let got: Vec<(&str, u64, u64)> = r
        .runs
        .iter()
        .map(|f| (f.policy, f.page_programs, f.block_erases))
        .collect();
    assert_eq!(
        got,
        [
            ("PM", 10_897, 170),
            ("zFTL", 8_654, 136),
            ("SC", 8_699, 138),
            ("LDC", 8_699, 138),
            ("OPT", 8_659, 136),
        ],
        "{text}"
    );
    let pm = r.get("PM");
    assert_eq!(pm.pages_compressed_host + pm.pages_compressed_gc, 0);
    for p in ["zFTL", "SC", "LDC", "OPT"] {
        assert!(
            r.get(p).pages_compressed_host > 0,
            "{p} compressed nothing: {text}"
        );
    }
    // F2FS writes the same to every device but for a few pages: the policy reaches the
    // file system only through the device's latency (the flusher's and checkpoints'
    // timing).
    let host = pm.host_write_bytes;
    for f in &r.runs {
        assert!(f.host_write_bytes.abs_diff(host) * 1000 < host, "{text}");
    }

    // A phone aged under a compressing policy is refused: its data would not start raw.
    let mut ldc_phone = (*phone).clone();
    ldc_phone.header.stack.device =
        ldc_stack::stack_config(CompressionPolicyKind::Ldc, true).device;
    let e = ldc_stack::run(Arc::new(ldc_phone), &options, &mut |_| {}).unwrap_err();
    assert!(e.to_string().contains("must be aged under PM"), "{e}");
}
