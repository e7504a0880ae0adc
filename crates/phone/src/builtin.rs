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

/// `config` as far as it shapes a phone: everything but its name (the `default` and
/// `ldc-emmc` presets are one stack under two names, and share one phone).
fn shaping(config: &StackConfig) -> StackConfig {
    StackConfig {
        name: String::new(),
        ..config.clone()
    }
}

/// The cache file of a phone of `spec` on `config`: named after the device, keyed by
/// everything that shapes the phone.
pub fn cache_path(dir: &Path, config: &StackConfig, spec: &AgingSpec, build_id: &str) -> PathBuf {
    let text = format!(
        "{FORMAT_VERSION}/{AGING_MODEL_VERSION}/{}/{}/{build_id}",
        serde_json::to_string(&shaping(config)).unwrap_or_default(),
        serde_json::to_string(spec).unwrap_or_default()
    );
    let key = fnv(text.as_bytes(), 0xCBF2_9CE4_8422_2325);
    let name: String = config
        .device
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
    let mut stack = config.clone();
    stack.seed = spec.seed;
    let cached = |path: &Path| {
        PhoneImage::load(path)
            .ok()
            .filter(|i| shaping(&i.header.stack) == shaping(&stack) && i.header.spec == spec)
    };
    if let Some(path) = &path {
        if let Some(image) = cached(path) {
            return Ok((image, Provenance::Loaded(path.clone())));
        }
    }
    // Another process building the same phone: wait for it rather than build it twice.
    let lock = match (&cache.dir, &path) {
        (Some(dir), Some(path)) => {
            let _ = std::fs::create_dir_all(dir);
            let lock = BuildLock::acquire(path);
            if let Some(image) = cached(path) {
                return Ok((image, Provenance::Loaded(path.clone())));
            }
            lock
        }
        _ => None,
    };
    building(path.as_deref().unwrap_or(Path::new("-")));
    let image = crate::build(config, &spec, progress)?;
    let saved = match (&lock, &path) {
        (Some(_), Some(path)) => image.save(path).ok().map(|_| path.clone()),
        _ => None,
    };
    drop(lock);
    Ok((image, Provenance::Built { saved }))
}

/// `PATH.lock`, holding the builder's process id while it builds the phone at `PATH`.
struct BuildLock {
    path: PathBuf,
}

impl BuildLock {
    /// Takes the lock, waiting while a live process holds it (a holder that died leaves
    /// a stale lock, which is taken over). `None` if the directory is not writable.
    fn acquire(phone: &Path) -> Option<BuildLock> {
        let path = phone.with_extension("lock");
        loop {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(mut file) => {
                    use std::io::Write;
                    let _ = write!(file, "{}", std::process::id());
                    return Some(BuildLock { path });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    if !holder_alive(&path) {
                        let _ = std::fs::remove_file(&path);
                        continue;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(500));
                }
                Err(_) => return None,
            }
        }
    }
}

impl Drop for BuildLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Whether the process named in a lock file still runs (Linux: /proc/PID); an unreadable
/// lock counts as alive for a while (it may be being written).
fn holder_alive(lock: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(lock) else {
        return false;
    };
    let Ok(pid) = text.trim().parse::<u32>() else {
        let age = std::fs::metadata(lock)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok());
        return age.is_none_or(|a| a.as_secs() < 10);
    };
    Path::new(&format!("/proc/{pid}")).exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_phone_per_shaping_configuration() {
        let dir = Path::new("/cache");
        let spec = builtin_spec();
        let path = |c: &StackConfig| cache_path(dir, c, &spec, "b");
        let default = StackConfig::preset("default").unwrap();
        let emmc = StackConfig::preset("ldc-emmc").unwrap();
        assert_ne!(default.name, emmc.name);
        assert_eq!(path(&default), path(&emmc), "a name does not shape a phone");
        let mut policy = default.clone();
        policy.device.ftl.gc.policy = flashstack_ftl::VictimPolicyKind::CostBenefit;
        assert_ne!(path(&default), path(&policy));
        assert_ne!(
            path(&default),
            cache_path(dir, &default, &spec, "other build")
        );
        let mut other_spec = spec.clone();
        other_spec.days = 30;
        assert_ne!(path(&default), cache_path(dir, &default, &other_spec, "b"));
    }
}
