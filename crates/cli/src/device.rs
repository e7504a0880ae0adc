//! Device specifications on the command line: `PRESET`, `FILE.toml`, either followed by
//! `+key=value` overrides of the same TOML fields (`ldc-emmc+ftl.gc.policy=cost-benefit`).
//! Resolved by `flashstack_sweep::spec`, which `sweep` and the Python bindings share.

pub use flashstack_sweep::spec::{apply_overrides, resolve};
