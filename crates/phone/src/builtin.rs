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
    /// After saving a phone, the least recently used others are removed until the cache's
    /// phones total at most this (`None`: never prune). Each program build keys its own
    /// phones, so without pruning every rebuild leaves ~0.85 GB behind.
    pub max_bytes: Option<u64>,
}

/// The cache budget: `$FLASHSTACK_CACHE_MAX_BYTES` (0 = unlimited), else 4 GiB (four
/// 16 GiB phones, or a 128 GiB one).
pub fn default_cache_max_bytes() -> Option<u64> {
    match std::env::var("FLASHSTACK_CACHE_MAX_BYTES")
        .ok()
        .map(|v| v.trim().parse::<u64>())
    {
        Some(Ok(0)) => None,
        Some(Ok(n)) => Some(n),
        _ => Some(4 << 30),
    }
}

/// A phone file in the cache, as pruning sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CachedPhone {
    pub path: PathBuf,
    pub size_bytes: u64,
    /// Last use (modification time, set on every load), seconds since the epoch.
    pub used_s: u64,
}

/// Which phones to remove so the rest total at most `max_bytes`: least recently used
/// first (ties by path, so the choice does not depend on directory order), never one of
/// `keep`.
pub fn choose_evictions(phones: &[CachedPhone], keep: &[PathBuf], max_bytes: u64) -> Vec<PathBuf> {
    let mut by_use: Vec<&CachedPhone> = phones.iter().collect();
    by_use.sort_by(|a, b| b.used_s.cmp(&a.used_s).then_with(|| a.path.cmp(&b.path)));
    let kept: u64 = by_use
        .iter()
        .filter(|p| keep.contains(&p.path))
        .map(|p| p.size_bytes)
        .sum();
    let mut total = kept;
    let mut evict = Vec::new();
    for phone in by_use.into_iter().filter(|p| !keep.contains(&p.path)) {
        total += phone.size_bytes;
        if total > max_bytes {
            evict.push(phone.path.clone());
        }
    }
    evict
}

/// The cached phones this process has loaded or saved (since the last [`PinScope`]s
/// ended). They are never pruned meanwhile: `reproduce all` uses about eight built-in
/// phones (~1 GB each), more than the default budget, and pruning one it is about to use
/// again would age it twice.
static PINS: std::sync::Mutex<Pins> = std::sync::Mutex::new(Pins {
    scopes: 0,
    used: Vec::new(),
});

struct Pins {
    /// [`PinScope`]s alive.
    scopes: usize,
    used: Vec<PathBuf>,
}

fn pins() -> std::sync::MutexGuard<'static, Pins> {
    PINS.lock().unwrap_or_else(|e| e.into_inner())
}

fn pin(path: &Path) {
    let mut pins = pins();
    if !pins.used.iter().any(|p| p == path) {
        pins.used.push(path.to_path_buf());
    }
}

fn pinned() -> Vec<PathBuf> {
    pins().used.clone()
}

/// One unit of work of a long-lived process (a sweep point, a call from Python): the
/// phones it loads or saves are kept from pruning while it (or any other scope) is alive,
/// and released when the last scope ends, so such a process prunes its cache like a
/// command-line run. Without a scope (the CLI's commands) pins last the process.
pub struct PinScope(());

impl PinScope {
    pub fn begin() -> PinScope {
        pins().scopes += 1;
        PinScope(())
    }
}

impl Drop for PinScope {
    fn drop(&mut self) {
        let mut pins = pins();
        pins.scopes -= 1;
        if pins.scopes == 0 {
            pins.used.clear();
        }
    }
}

/// Whether `name` is one [`cache_path`] makes (`{device}-{16 hex digits}.phone`): a
/// phone file a user keeps in the same directory is never pruned.
fn is_cache_name(name: &str) -> bool {
    let Some(stem) = name.strip_suffix(".phone") else {
        return false;
    };
    match stem.rsplit_once('-') {
        Some((device, key)) => {
            !device.is_empty() && key.len() == 16 && key.bytes().all(|b| b.is_ascii_hexdigit())
        }
        None => false,
    }
}

/// The built phones of `dir` ([`is_cache_name`]) not being built now (no `.lock` beside
/// them).
fn cached_phones(dir: &Path) -> Vec<CachedPhone> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(is_cache_name)
        })
        .filter(|p| !p.with_extension("lock").exists())
        .filter_map(|path| {
            let meta = std::fs::metadata(&path).ok()?;
            let used = meta
                .modified()
                .ok()?
                .duration_since(std::time::UNIX_EPOCH)
                .ok()?;
            Some(CachedPhone {
                path,
                size_bytes: meta.len(),
                used_s: used.as_secs(),
            })
        })
        .collect()
}

/// Removes the phones [`choose_evictions`] names; returns them. Errors are ignored: a
/// phone another process holds open stays readable to it (Unix), one we cannot remove
/// stays.
pub fn prune(dir: &Path, keep: &Path, max_bytes: u64) -> Vec<PathBuf> {
    let mut keep_all = pinned();
    keep_all.push(keep.to_path_buf());
    let evict = choose_evictions(&cached_phones(dir), &keep_all, max_bytes);
    evict
        .into_iter()
        .filter(|path| std::fs::remove_file(path).is_ok())
        .collect()
}

/// Marks a cached phone used now (its modification time), for [`prune`]'s order.
fn mark_used(path: &Path) {
    if let Ok(file) = std::fs::File::options().append(true).open(path) {
        let _ = file.set_modified(std::time::SystemTime::now());
    }
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
    cached_aged(config, &builtin_spec(), cache, building, progress)
}

/// The phone `spec` ages on `config`, through the same cache as [`builtin`] (its key
/// covers the spec): a reproduction that needs a smaller aged phone than the built-in
/// one (`reproduce coco --quick`) builds and keeps it the same way.
pub fn cached_aged(
    config: &StackConfig,
    spec: &AgingSpec,
    cache: &PhoneCache,
    building: &mut dyn FnMut(&Path),
    progress: &mut dyn FnMut(u32, u32),
) -> Result<(PhoneImage, Provenance), PhoneError> {
    let spec = spec.clone();
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
            mark_used(path);
            pin(path);
            return Ok((image, Provenance::Loaded(path.clone())));
        }
    }
    // Another process building the same phone: wait for it rather than build it twice.
    let lock = match (&cache.dir, &path) {
        (Some(dir), Some(path)) => {
            let _ = std::fs::create_dir_all(dir);
            let lock = BuildLock::acquire(path);
            if let Some(image) = cached(path) {
                pin(path);
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
    if let (Some(dir), Some(saved), Some(max)) = (&cache.dir, &saved, cache.max_bytes) {
        pin(saved);
        prune(dir, saved, max);
    }
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

    fn phone(name: &str, size_bytes: u64, used_s: u64) -> CachedPhone {
        CachedPhone {
            path: PathBuf::from(name),
            size_bytes,
            used_s,
        }
    }

    #[test]
    fn pruning_removes_the_least_recently_used_beyond_the_budget() {
        let phones = [
            phone("old", 10, 100),
            phone("new", 10, 300),
            phone("mid", 10, 200),
            phone("just-built", 10, 50),
        ];
        let keep = [PathBuf::from("just-built")];
        let evict = |max| choose_evictions(&phones, &keep, max);
        assert_eq!(evict(40), Vec::<PathBuf>::new());
        assert_eq!(evict(30), vec![PathBuf::from("old")]);
        assert_eq!(evict(20), vec![PathBuf::from("mid"), PathBuf::from("old")]);
        // The phone just saved stays even when it alone is over the budget.
        assert_eq!(evict(5).len(), 3);
        // So do the other phones the process uses (`reproduce all`'s working set).
        let keep = [PathBuf::from("just-built"), PathBuf::from("old")];
        assert_eq!(
            choose_evictions(&phones, &keep, 30),
            vec![PathBuf::from("mid")],
            "the pinned old phone stays, the next least recently used goes"
        );
    }

    /// A long-lived process's pins last while any scope is alive and go when the last
    /// one ends.
    #[test]
    fn pins_end_with_the_last_scope() {
        let a = PathBuf::from(format!("/pin-scope-test-{}/a.phone", std::process::id()));
        let outer = PinScope::begin();
        let inner = PinScope::begin();
        pin(&a);
        assert!(pinned().contains(&a));
        drop(inner);
        assert!(pinned().contains(&a), "the outer scope still runs");
        drop(outer);
        // Another test's scope may still be alive in this process; then the pin stays
        // until that one ends, which is the rule too.
        if pins().scopes == 0 {
            assert!(!pinned().contains(&a));
        }
    }

    #[test]
    fn only_names_the_cache_makes_are_cache_names() {
        let spec = builtin_spec();
        let made = cache_path(
            Path::new("/c"),
            &StackConfig::preset("ufs31").unwrap(),
            &spec,
            "b",
        );
        assert!(is_cache_name(made.file_name().unwrap().to_str().unwrap()));
        for name in [
            "mine.phone",
            "my-phone.phone",
            "x-0123.phone",
            "-0123456789abcdef.phone",
        ] {
            assert!(!is_cache_name(name), "{name}");
        }
    }

    #[test]
    fn pruning_deletes_files_but_not_one_being_built() {
        let dir = std::env::temp_dir().join(format!("flashstack-prune-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let [a, b, c] = ["a", "b", "c"].map(|x| format!("emmc-{}.phone", x.repeat(16)));
        for name in [&a, &b, &c, "mine.phone", "notes.txt"] {
            std::fs::write(dir.join(name), [0u8; 100]).unwrap();
        }
        std::fs::write(dir.join(&b).with_extension("lock"), b"1").unwrap();
        let removed = prune(&dir, &dir.join(&c), 150);
        assert_eq!(removed, vec![dir.join(&a)]);
        assert!(dir.join(&b).exists() && dir.join(&c).exists());
        // A user's own phone file and other files are never the cache's to remove.
        assert!(dir.join("mine.phone").exists() && dir.join("notes.txt").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

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
