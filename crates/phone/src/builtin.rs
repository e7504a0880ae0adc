//! The built-in aged phone every whole-stack run starts from unless told otherwise: made
//! on first use for the stack at hand and kept in a cache directory. Building is
//! deterministic, so a cached phone and a freshly built one are the same phone; the cache
//! key covers everything that shapes it (formats, the aging model, the stack, the aging
//! specification and the build of the program), and a cached file that fails to load is
//! built again.

use std::path::{Path, PathBuf};

use flashstack_stack::StackConfig;

use crate::age::{AgingSpec, Fidelity};
use crate::error::PhoneError;
use crate::image::{PhoneImage, AGING_MODEL_VERSION, FORMAT_VERSION};

/// The built-in phone: 80 % full after 90 days of use, seed 1, the fast path.
pub fn builtin_spec() -> AgingSpec {
    AgingSpec::new(0.8, 90, 1, Fidelity::Fast)
}

/// Where built phones are kept, and what identifies the program that built them.
#[derive(Clone, Debug, Default)]
pub struct PhoneCache {
    /// `None`: build every time, keep nothing.
    pub dir: Option<PathBuf>,
    /// Identifies the build of the program (a hash of its executable), so that a changed
    /// program never reuses a phone an older one built.
    pub build_id: String,
}

/// The cache directory: `$FLASHSTACK_CACHE_DIR`, else `$XDG_CACHE_HOME/flashstack`, else
/// `$HOME/.cache/flashstack`.
pub fn default_cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("FLASHSTACK_CACHE_DIR") {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
        return Some(PathBuf::from(dir).join("flashstack"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("flashstack"))
}

fn fnv(bytes: &[u8], mut h: u64) -> u64 {
    for &b in bytes {
        h = (h ^ b as u64).wrapping_mul(0x0100_0000_01B3);
    }
    h
}

/// The cache file of a phone of `spec` on `config`.
pub fn cache_path(dir: &Path, config: &StackConfig, spec: &AgingSpec, build_id: &str) -> PathBuf {
    let text = format!(
        "{FORMAT_VERSION}/{AGING_MODEL_VERSION}/{}/{}/{build_id}",
        serde_json::to_string(config).unwrap_or_default(),
        serde_json::to_string(spec).unwrap_or_default()
    );
    let key = fnv(text.as_bytes(), 0xCBF2_9CE4_8422_2325);
    let name: String = config
        .name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    dir.join(format!("{name}-{key:016x}.phone"))
}

/// What [`builtin`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Provenance {
    Loaded(PathBuf),
    Built { saved: Option<PathBuf> },
}

/// The built-in phone for `config`: loaded from the cache, or built (and saved there).
/// `building` is called before a build starts (it can take a minute).
pub fn builtin(
    config: &StackConfig,
    cache: &PhoneCache,
    building: &mut dyn FnMut(&Path),
    progress: &mut dyn FnMut(u32, u32),
) -> Result<(PhoneImage, Provenance), PhoneError> {
    let spec = builtin_spec();
    let path = cache
        .dir
        .as_deref()
        .map(|d| cache_path(d, config, &spec, &cache.build_id));
    if let Some(path) = path.as_deref().filter(|p| p.exists()) {
        if let Ok(image) = PhoneImage::load(path) {
            let mut stack = config.clone();
            stack.seed = spec.seed;
            if image.header.stack == stack && image.header.spec == spec {
                return Ok((image, Provenance::Loaded(path.to_path_buf())));
            }
        }
    }
    building(path.as_deref().unwrap_or(Path::new("-")));
    let image = crate::build(config, &spec, progress)?;
    let saved = match (&cache.dir, &path) {
        (Some(dir), Some(path)) => std::fs::create_dir_all(dir)
            .ok()
            .and_then(|()| image.save(path).ok())
            .map(|_| path.clone()),
        _ => None,
    };
    Ok((image, Provenance::Built { saved }))
}
