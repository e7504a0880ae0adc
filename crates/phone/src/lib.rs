//! A phone that has been used: months of use compressed onto a whole stack (page cache,
//! F2FS, FTL, NAND), measured, saved in one file and loaded again.
//!
//! - [`build`]: ages a phone ([`age`]: the population model in [`model`], its apps in
//!   [`apps`]) and captures it as a [`PhoneImage`].
//! - [`PhoneImage::save`] / [`PhoneImage::load`]: the phone file ([`image`] gives the
//!   format); [`PhoneImage::into_stack`] starts a stack from it.
//! - [`measure`]: utilisation, free segments, per-file fragmentation (DoF), the device's
//!   valid-page and erase-count distributions.
//! - [`builtin`]: the built-in phone whole-stack runs start from, cached.
//!
//! `docs/aging.md` gives every modelling choice and its source, and the measured state of
//! the built-in phone.

pub mod age;
pub mod apps;
pub mod builtin;
mod error;
pub mod image;
pub mod measure;
pub mod model;
pub mod start;
mod writer;

pub use age::{persona_apps, Aging, AgingCounts, AgingSpec, Fidelity};
pub use builtin::{
    builtin, builtin_spec, cached_aged, choose_evictions, default_cache_dir,
    default_cache_max_bytes, prune, CachedPhone, PhoneCache, Provenance,
};
pub use error::PhoneError;
pub use image::{PhoneHeader, PhoneImage};
pub use model::PopulationModel;
pub use start::prepare_persona;

use flashstack_stack::StackConfig;

/// Ages a phone on a new stack built from `config` (its seed replaced by the spec's) and
/// captures it. `progress(day, days)` after each simulated day.
pub fn build(
    config: &StackConfig,
    spec: &AgingSpec,
    progress: &mut dyn FnMut(u32, u32),
) -> Result<PhoneImage, PhoneError> {
    let (stack, counts, personas) = age::age_stack(config, spec, progress)?;
    PhoneImage::capture(stack, spec, counts, personas)
}

/// [`build`] with every read of the personas' sessions checked against what they wrote
/// or read before ([`Aging::check_reads`]); the image is the same as [`build`]'s. Also
/// returns the count of reads checked.
pub fn build_checked(
    config: &StackConfig,
    spec: &AgingSpec,
    progress: &mut dyn FnMut(u32, u32),
) -> Result<(PhoneImage, u64), PhoneError> {
    let mut aging = Aging::new(config, spec)?;
    let reads = aging.check_reads();
    aging.run(progress)?;
    let (stack, counts, personas) = aging.finish()?;
    let image = PhoneImage::capture(stack, spec, counts, personas)?;
    Ok((image, reads.load(std::sync::atomic::Ordering::Relaxed)))
}
