//! `reproduce ldc --stack` in small: one small phone aged under PM, a slice of the six-app
//! mix under each of the five policies from it.

use std::sync::Arc;

use flashstack_experiments::ldc_stack::{self, LdcStackOptions};
use flashstack_phone::AgingSpec;

#[test]
fn five_policies_from_one_pm_phone() {
    let t = std::time::Instant::now();
    let config = ldc_stack::phone_stack(true);
    let spec = AgingSpec::new(0.8, 10, 1, flashstack_phone::Fidelity::Fast);
    let phone = flashstack_phone::build(&config, &spec, &mut |_, _| {}).unwrap();
    eprintln!("aged in {:?}", t.elapsed());
    let options = LdcStackOptions { quick: true, seed: 1 };
    let r = ldc_stack::run_with(Arc::new(phone), &options, &ldc_stack::mix(8), &mut |p| {
        eprintln!("{p} at {:?}", t.elapsed())
    })
    .unwrap();
    eprintln!("{}", r.render());
}
