//! Configuration specifications as the command line and the sweeps write them: a device
//! (`PRESET`, `FILE.toml`, either followed by `+key=value` overrides of the same TOML
//! fields: `ldc-emmc+ftl.gc.policy=cost-benefit`) and a stack (a stack preset or stack
//! TOML file with `+key=value` overrides of the stack's fields, or a device specification
//! put under a base stack). Moved here from the CLI so that `run`, `sweep` and the Python
//! bindings resolve a name the same way, with the same messages.

use std::path::Path;

use flashstack_ftl::{presets, DeviceConfig};
use flashstack_stack::StackConfig;
use thiserror::Error;

/// Why a specification does not resolve. The text of the error and its sources, joined
/// by ": " (as the CLI prints a chain), is what the user reads.
#[derive(Debug, Error)]
pub enum SpecError {
    #[error("unknown device '{base}': not a preset ({presets}) nor a TOML file")]
    UnknownDevice { base: String, presets: String },
    /// A file that could not be read; `context` names it.
    #[error("{context}")]
    Read {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// What a layer's own loader or TOML said of a configuration, as it said it.
    #[error("{0}")]
    Config(String),
    #[error("override '{0}' is not key=value")]
    NotKeyValue(String),
    /// An override that names no field, or a value its field does not accept.
    #[error("override '{entry}': {message}")]
    Override { entry: String, message: String },
    /// `source` in the specification named by `context` (`device 'X'`, `stack 'Y'`).
    #[error("{context}")]
    In {
        context: String,
        #[source]
        source: Box<SpecError>,
    },
}

impl SpecError {
    fn within(self, context: String) -> SpecError {
        SpecError::In {
            context,
            source: Box::new(self),
        }
    }
}

/// `error` and its causes joined by ": ", each cause once (a message that already ends
/// with its source's text is not followed by it again): the one line a user reads.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = String::new();
    let mut above = String::new();
    let mut next: Option<&dyn std::error::Error> = Some(error);
    while let Some(cause) = next {
        let message = cause.to_string();
        if !(message.is_empty() || above.ends_with(&message)) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&message);
        }
        above = message;
        next = cause.source();
    }
    text
}

/// Resolves one device specification.
pub fn resolve(spec: &str) -> Result<DeviceConfig, SpecError> {
    let mut parts = spec.split('+');
    let base = parts.next().unwrap_or_default();
    let mut config = load_base(base)?;
    let overrides: Vec<&str> = parts.collect();
    if overrides.is_empty() {
        return Ok(config);
    }
    config =
        apply_overrides(&config, &overrides).map_err(|e| e.within(format!("device '{spec}'")))?;
    config.name = spec.to_string();
    Ok(config)
}

fn load_base(base: &str) -> Result<DeviceConfig, SpecError> {
    if let Some(config) = presets::preset(base) {
        return Ok(config);
    }
    let path = Path::new(base);
    if path.extension().is_some_and(|e| e == "toml") || path.exists() {
        let text = read(path, "cannot read device file")?;
        return DeviceConfig::from_toml(&text)
            .map_err(|e| SpecError::Config(format!("{}: {e}", path.display())));
    }
    let names: Vec<&str> = presets::PRESETS.iter().map(|(n, _)| *n).collect();
    Err(SpecError::UnknownDevice {
        base: base.to_string(),
        presets: names.join(", "),
    })
}

fn read(path: &Path, what: &str) -> Result<String, SpecError> {
    std::fs::read_to_string(path).map_err(|source| SpecError::Read {
        context: format!("{what} {}", path.display()),
        source,
    })
}

/// Applies `key=value` overrides through the TOML representation, so every field a file can
/// set can be set on the command line, with the same validation.
pub fn apply_overrides(
    config: &DeviceConfig,
    overrides: &[&str],
) -> Result<DeviceConfig, SpecError> {
    let text = override_toml(config, overrides)?;
    DeviceConfig::from_toml(&text).map_err(|e| SpecError::Config(e.to_string()))
}

/// `config` as TOML text with the `key=value` overrides applied (keys are dotted paths of
/// its fields); the caller parses it back with its own validation.
///
/// Each override is checked against the type as it is applied, so a bad value is
/// reported as that override's, with its field and what the field accepts (`override
/// 'ftl.gc.policy=banana': field 'ftl.gc.policy': unknown variant `banana`, expected one
/// of ...`), never at a line of the TOML text built here, which the user never saw.
pub fn override_toml<T>(config: &T, overrides: &[&str]) -> Result<String, SpecError>
where
    T: serde::Serialize + serde::de::DeserializeOwned,
{
    let config_error = |e: &dyn std::fmt::Display| SpecError::Config(e.to_string());
    let mut value: toml::Value = toml::Value::try_from(config).map_err(|e| config_error(&e))?;
    for entry in overrides {
        let (key, raw) = entry
            .split_once('=')
            .ok_or_else(|| SpecError::NotKeyValue(entry.to_string()))?;
        set_path(&mut value, key, parse_value(raw)).map_err(|message| SpecError::Override {
            entry: entry.to_string(),
            message,
        })?;
        if let Err(e) = value.clone().try_into::<T>() {
            return Err(SpecError::Override {
                entry: entry.to_string(),
                message: format!("field '{key}': {}", e.message().trim()),
            });
        }
    }
    toml::to_string(&value).map_err(|e| config_error(&e))
}

fn parse_value(raw: &str) -> toml::Value {
    // Numbers and booleans as TOML reads them; anything else is a string.
    match format!("v = {raw}").parse::<toml::Table>() {
        Ok(table) => table["v"].clone(),
        Err(_) => toml::Value::String(raw.to_string()),
    }
}

fn set_path(root: &mut toml::Value, key: &str, new: toml::Value) -> Result<(), String> {
    let mut node = root;
    let segments: Vec<&str> = key.split('.').collect();
    for (i, segment) in segments.iter().enumerate() {
        let table = node
            .as_table_mut()
            .ok_or_else(|| format!("'{}' is not a table", segments[..i].join(".")))?;
        if i + 1 == segments.len() {
            if !table.contains_key(*segment) && !is_optional_field(segment) {
                return Err(format!("no field '{key}'"));
            }
            table.insert(segment.to_string(), new);
            return Ok(());
        }
        if *segment == "mobifs" && !table.contains_key(*segment) {
            // The cache's MobiFS options are left out while at their defaults.
            let defaults = toml::Value::try_from(flashstack_cache::MobifsConfig::default())
                .map_err(|e| e.to_string())?;
            table.insert(segment.to_string(), defaults);
        }
        if *segment == "mapping_cache" && !table.contains_key(*segment) {
            // The FTL's mapping cache is left out while off.
            let defaults = toml::Value::try_from(flashstack_ftl::MappingCacheConfig::default())
                .map_err(|e| e.to_string())?;
            table.insert(segment.to_string(), defaults);
        }
        if *segment == "write_buffer" && !table.contains_key(*segment) {
            // The FTL's write buffer is left out while off.
            let defaults = toml::Value::try_from(flashstack_ftl::WriteBufferConfig::default())
                .map_err(|e| e.to_string())?;
            table.insert(segment.to_string(), defaults);
        }
        if *segment == "hpb" && !table.contains_key(*segment) {
            // Likewise its HPB table (`ftl.mapping_cache.hpb`) while HPB is off.
            let defaults = toml::Value::try_from(flashstack_ftl::HpbConfig::default())
                .map_err(|e| e.to_string())?;
            table.insert(segment.to_string(), defaults);
        }
        node = table
            .get_mut(*segment)
            .ok_or_else(|| format!("no field '{}'", segments[..=i].join(".")))?;
    }
    unreachable!("split yields at least one segment")
}

/// Optional fields are absent from the TOML when unset (or, for `atomic_write`, when
/// false; for the cache's `policy` and `mobifs` table, when the defaults; MedFS's
/// diagnostic `pairs_dump`, when empty; the FTL's `mapping_unit_bytes`, when 4096; the
/// NAND's `timing.channel_model`, `die_rules` and `multi_plane`, and the mapping cache's
/// `relocation_updates`, when the defaults).
fn is_optional_field(name: &str) -> bool {
    matches!(
        name,
        "static_threshold"
            | "page_types"
            | "atomic_write"
            | "policy"
            | "mobifs"
            | "pairs_dump"
            | "mapping_unit_bytes"
            | "channel_model"
            | "die_rules"
            | "multi_plane"
            | "relocation_updates"
            | "allocation"
    )
}

/// The stack a specification names: a stack preset or stack TOML file, either followed by
/// `+key=value` overrides of the stack's fields (`default+fs.mount.lfs_mode=true`,
/// `ufs31+cache.dirty_ratio_percent=40`, `default+device.ftl.gc.policy=cost-benefit`); or
/// a device specification (preset, device TOML, `+key=value` overrides of device fields)
/// put under `base`.
///
/// `device=NAME` among a stack's overrides puts a whole device (a device preset or device
/// TOML file) under the stack: `medfs+cache.policy=mobifs+device=ldc-emmc-ldc`.
pub fn resolve_stack(spec: &str, base: &StackConfig) -> Result<StackConfig, SpecError> {
    let (head, mut overrides) = match spec.split_once('+') {
        Some((head, rest)) => (head, rest.split('+').collect::<Vec<_>>()),
        None => (spec, Vec::new()),
    };
    let named = overrides.join("+");
    let device = whole_device(spec, &mut overrides)?;
    // `ldc-emmc` and `ufs31` name both a stack and a device: overrides of device fields
    // (`ufs31+nand.geometry...`) mean the device under the default stack.
    let stack_keys = overrides.iter().all(|o| is_stack_key(o));
    let base_stack = if stack_keys { stack_base(head)? } else { None };
    let Some(mut config) = base_stack else {
        let device = resolve(spec)?;
        return Ok(StackConfig {
            name: spec.to_string(),
            device,
            ..base.clone()
        });
    };
    let name = format!("{}+{named}", config.name);
    if let Some(device) = device {
        config.device = device;
    }
    if !overrides.is_empty() {
        let text =
            override_toml(&config, &overrides).map_err(|e| e.within(format!("stack '{spec}'")))?;
        config = StackConfig::from_toml_str(&text, spec)
            .map_err(|e| SpecError::Config(e.to_string()))?;
    }
    if !named.is_empty() {
        config.name = name;
    }
    Ok(config)
}

/// Takes a `device=NAME` override out of `overrides` and resolves the device it names.
fn whole_device(spec: &str, overrides: &mut Vec<&str>) -> Result<Option<DeviceConfig>, SpecError> {
    let names: Vec<&str> = overrides
        .iter()
        .filter_map(|o| o.strip_prefix("device="))
        .collect();
    overrides.retain(|o| !o.starts_with("device="));
    match names.as_slice() {
        [] => Ok(None),
        [name] => resolve(name)
            .map(Some)
            .map_err(|e| e.within(format!("stack '{spec}'"))),
        _ => Err(SpecError::Override {
            entry: "device=".into(),
            message: format!("given more than once in stack '{spec}'"),
        }),
    }
}

/// Whether an override (`key=value` or a bare key) sets a field of the stack rather than
/// of a device.
pub fn is_stack_key(entry: &str) -> bool {
    let key = entry.split(['.', '=']).next().unwrap_or_default();
    matches!(key, "device" | "fs" | "cache" | "idle_gap_ns" | "seed")
}

/// A stack preset or a stack TOML file (one with a `[device]` table); `None` if `head`
/// names neither.
fn stack_base(head: &str) -> Result<Option<StackConfig>, SpecError> {
    if let Ok(config) = StackConfig::preset(head) {
        return Ok(Some(config));
    }
    let path = Path::new(head);
    if !(path.extension().is_some_and(|e| e == "toml") && path.exists()) {
        return Ok(None);
    }
    let text = read(path, "cannot read")?;
    let is_stack = text
        .lines()
        .any(|l| l.trim() == "[device]" || l.trim_start().starts_with("[device."));
    if !is_stack {
        return Ok(None);
    }
    StackConfig::from_toml_str(&text, head)
        .map(Some)
        .map_err(|e| SpecError::Config(e.to_string()))
}

/// Names of the stack presets (for messages and listings).
pub fn stack_preset_names() -> Vec<&'static str> {
    StackConfig::PRESETS.iter().map(|(n, _)| *n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use flashstack_ftl::VictimPolicyKind;

    fn text(error: SpecError) -> String {
        error_chain(&error)
    }

    #[test]
    fn overrides_change_fields_and_validate() {
        let c = resolve("ldc-emmc+ftl.gc.policy=cost-benefit+host.queue_depth=4").unwrap();
        assert_eq!(c.ftl.gc.policy, VictimPolicyKind::CostBenefit);
        assert_eq!(c.host.queue_depth, 4);
        let err = text(resolve("ldc-emmc+ftl.gc.nonsense=1").unwrap_err());
        assert!(err.contains("no field 'ftl.gc.nonsense'"), "{err}");
        let err = text(resolve("ldc-emmc+nand.geometry.pages_per_block=0").unwrap_err());
        assert!(err.contains("geometry.pages_per_block"), "{err}");
        assert!(resolve("no-such-device").is_err());
    }

    /// HPB's table is left out while off: an override creates it (and HPB without a
    /// mapping cache is refused naming the field).
    #[test]
    fn hpb_overrides_reach_a_table_left_out() {
        let c = resolve("ufs31-dftl+ftl.mapping_cache.hpb.host_map_bytes=65536").unwrap();
        assert_eq!(c.ftl.mapping_cache.hpb.host_map_bytes, 65536);
        let err = text(resolve("ufs31+ftl.mapping_cache.hpb.host_map_bytes=65536").unwrap_err());
        assert!(err.contains("ftl.mapping_cache.hpb"), "{err}");
    }

    /// The write buffer's table is left out while off: an override creates it; a buffer
    /// smaller than a flash page is refused naming the field.
    #[test]
    fn write_buffer_overrides_reach_a_table_left_out() {
        let c = resolve("mqsim-default+ftl.write_buffer.capacity_bytes=1048576").unwrap();
        assert_eq!(c.ftl.write_buffer.capacity_bytes, 1 << 20);
        let c = resolve("mqsim-wb+ftl.write_buffer.power_loss_protected=true").unwrap();
        assert!(c.ftl.write_buffer.power_loss_protected);
        let err = text(resolve("mqsim-default+ftl.write_buffer.capacity_bytes=4096").unwrap_err());
        assert!(err.contains("ftl.write_buffer.capacity_bytes"), "{err}");
    }

    /// A bad value names the override, its field and what the field accepts, and no line
    /// of the TOML text the override went through.
    #[test]
    fn bad_override_values_name_the_override_and_the_accepted_values() {
        let err = text(resolve("ldc-emmc+host.queue_depth=4+ftl.gc.policy=banana").unwrap_err());
        assert!(
            err.starts_with("device 'ldc-emmc+host.queue_depth=4+ftl.gc.policy=banana': ")
                && err.contains("override 'ftl.gc.policy=banana': field 'ftl.gc.policy'")
                && err.contains("`greedy`, `cost-benefit`, `compression-aware`"),
            "{err}"
        );
        assert!(!err.contains("line") && !err.contains('\n'), "{err}");
        let err = text(resolve("ldc-emmc+nand.geometry.blocks_per_plane=many").unwrap_err());
        assert!(
            err.contains("field 'nand.geometry.blocks_per_plane'") && err.contains("u32"),
            "{err}"
        );
        // Stack fields go through the same path.
        let stack = StackConfig::preset("default").unwrap();
        let err = text(override_toml(&stack, &["fs.mount.lfs_mode=maybe"]).unwrap_err());
        assert!(
            err.contains("field 'fs.mount.lfs_mode'") && err.contains("boolean"),
            "{err}"
        );
    }

    #[test]
    fn stack_specs_resolve_presets_overrides_and_devices() {
        let base = StackConfig::preset("default").unwrap();
        let lfs = resolve_stack("default+fs.mount.lfs_mode=true", &base).unwrap();
        assert!(lfs.fs.mount.lfs_mode);
        assert_eq!(lfs.name, "default+fs.mount.lfs_mode=true");
        // Device fields under a name that is both a stack and a device preset.
        let small = resolve_stack("ufs31+nand.geometry.blocks_per_plane=64", &base).unwrap();
        assert_eq!(small.device.nand.geometry.blocks_per_plane, 64);
        assert_eq!(small.cache, base.cache);
        // A device preset alone goes under the base stack.
        let pm = resolve_stack("ldc-emmc-pm", &base).unwrap();
        assert_eq!(pm.fs, base.fs);
        assert!(pm.device.ftl.compression.is_some());
        let err = text(resolve_stack("default+cache.nonsense=1", &base).unwrap_err());
        assert!(
            err == "stack 'default+cache.nonsense=1': override 'cache.nonsense=1': no field 'cache.nonsense'",
            "{err}"
        );
        assert!(resolve_stack("no-such-thing", &base).is_err());
        // A whole device under a stack, with the stack's other overrides.
        let all = resolve_stack("medfs+cache.policy=mobifs+device=ldc-emmc-ldc", &base).unwrap();
        assert_eq!(all.device.name, "ldc-emmc-ldc");
        assert_eq!(all.cache.policy, flashstack_cache::PolicyName::Mobifs);
        assert_eq!(all.techniques(), ["medfs", "mobifs"]);
        assert_eq!(all.name, "medfs+cache.policy=mobifs+device=ldc-emmc-ldc");
        let err = text(resolve_stack("default+device=nope", &base).unwrap_err());
        assert!(err.contains("nope"), "{err}");
    }

    #[test]
    fn a_missing_device_file_names_it_and_the_cause_once() {
        let err = text(resolve("/no/such/dev.toml").unwrap_err());
        assert!(
            err.starts_with("cannot read device file /no/such/dev.toml: ")
                && err.matches("No such file").count() == 1,
            "{err}"
        );
    }
}
