//! Device specifications on the command line: `PRESET`, `FILE.toml`, either followed by
//! `+key=value` overrides of the same TOML fields (`ldc-emmc+ftl.gc.policy=cost-benefit`).

use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use flashstack_ftl::{presets, DeviceConfig};

/// Resolves one device specification.
pub fn resolve(spec: &str) -> Result<DeviceConfig> {
    let mut parts = spec.split('+');
    let base = parts.next().unwrap_or_default();
    let mut config = load_base(base)?;
    let overrides: Vec<&str> = parts.collect();
    if overrides.is_empty() {
        return Ok(config);
    }
    config = apply_overrides(&config, &overrides).with_context(|| format!("device '{spec}'"))?;
    config.name = spec.to_string();
    Ok(config)
}

fn load_base(base: &str) -> Result<DeviceConfig> {
    if let Some(config) = presets::preset(base) {
        return Ok(config);
    }
    let path = Path::new(base);
    if path.extension().is_some_and(|e| e == "toml") || path.exists() {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read device file {}", path.display()))?;
        let config =
            DeviceConfig::from_toml(&text).map_err(|e| anyhow!("{}: {e}", path.display()))?;
        return Ok(config);
    }
    let names: Vec<&str> = presets::PRESETS.iter().map(|(n, _)| *n).collect();
    bail!(
        "unknown device '{base}': not a preset ({}) nor a TOML file",
        names.join(", ")
    )
}

/// Applies `key=value` overrides through the TOML representation, so every field a file can
/// set can be set on the command line, with the same validation.
pub fn apply_overrides(config: &DeviceConfig, overrides: &[&str]) -> Result<DeviceConfig> {
    let text = override_toml(config, overrides)?;
    DeviceConfig::from_toml(&text).map_err(|e| anyhow!("{e}"))
}

/// `config` as TOML text with the `key=value` overrides applied (keys are dotted paths of
/// its fields); the caller parses it back with its own validation.
///
/// Each override is checked against the type as it is applied, so a bad value is
/// reported as that override's, with its field and what the field accepts (`override
/// 'ftl.gc.policy=banana': field 'ftl.gc.policy': unknown variant `banana`, expected one
/// of ...`), never at a line of the TOML text built here, which the user never saw.
pub fn override_toml<T>(config: &T, overrides: &[&str]) -> Result<String>
where
    T: serde::Serialize + serde::de::DeserializeOwned,
{
    let mut value: toml::Value = toml::Value::try_from(config)?;
    for entry in overrides {
        let (key, raw) = entry
            .split_once('=')
            .ok_or_else(|| anyhow!("override '{entry}' is not key=value"))?;
        set_path(&mut value, key, parse_value(raw))
            .with_context(|| format!("override '{entry}'"))?;
        if let Err(e) = value.clone().try_into::<T>() {
            bail!("override '{entry}': field '{key}': {}", e.message().trim());
        }
    }
    Ok(toml::to_string(&value)?)
}

fn parse_value(raw: &str) -> toml::Value {
    // Numbers and booleans as TOML reads them; anything else is a string.
    match format!("v = {raw}").parse::<toml::Table>() {
        Ok(table) => table["v"].clone(),
        Err(_) => toml::Value::String(raw.to_string()),
    }
}

fn set_path(root: &mut toml::Value, key: &str, new: toml::Value) -> Result<()> {
    let mut node = root;
    let segments: Vec<&str> = key.split('.').collect();
    for (i, segment) in segments.iter().enumerate() {
        let table = node
            .as_table_mut()
            .ok_or_else(|| anyhow!("'{}' is not a table", segments[..i].join(".")))?;
        if i + 1 == segments.len() {
            if !table.contains_key(*segment) && !is_optional_field(segment) {
                bail!("no field '{key}'");
            }
            table.insert(segment.to_string(), new);
            return Ok(());
        }
        if *segment == "mobifs" && !table.contains_key(*segment) {
            // The cache's MobiFS options are left out while at their defaults.
            let defaults = toml::Value::try_from(flashstack_cache::MobifsConfig::default())?;
            table.insert(segment.to_string(), defaults);
        }
        node = table
            .get_mut(*segment)
            .ok_or_else(|| anyhow!("no field '{}'", segments[..=i].join(".")))?;
    }
    unreachable!("split yields at least one segment")
}

/// Optional fields are absent from the TOML when unset (or, for `atomic_write`, when
/// false; for the cache's `policy` and `mobifs` table, when the defaults).
fn is_optional_field(name: &str) -> bool {
    matches!(
        name,
        "static_threshold" | "page_types" | "atomic_write" | "policy" | "mobifs"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use flashstack_ftl::VictimPolicyKind;

    #[test]
    fn overrides_change_fields_and_validate() {
        let c = resolve("ldc-emmc+ftl.gc.policy=cost-benefit+host.queue_depth=4").unwrap();
        assert_eq!(c.ftl.gc.policy, VictimPolicyKind::CostBenefit);
        assert_eq!(c.host.queue_depth, 4);
        let err = resolve("ldc-emmc+ftl.gc.nonsense=1").unwrap_err();
        assert!(
            format!("{err:#}").contains("no field 'ftl.gc.nonsense'"),
            "{err:#}"
        );
        let err = resolve("ldc-emmc+nand.geometry.pages_per_block=0").unwrap_err();
        assert!(
            format!("{err:#}").contains("geometry.pages_per_block"),
            "{err:#}"
        );
        assert!(resolve("no-such-device").is_err());
    }

    /// A bad value names the override, its field and what the field accepts, and no line
    /// of the TOML text the override went through.
    #[test]
    fn bad_override_values_name_the_override_and_the_accepted_values() {
        let err = resolve("ldc-emmc+host.queue_depth=4+ftl.gc.policy=banana").unwrap_err();
        let text = format!("{err:#}");
        assert!(
            text.contains("override 'ftl.gc.policy=banana': field 'ftl.gc.policy'")
                && text.contains("`greedy`, `cost-benefit`, `compression-aware`"),
            "{text}"
        );
        assert!(!text.contains("line") && !text.contains('\n'), "{text}");
        let err = resolve("ldc-emmc+nand.geometry.blocks_per_plane=many").unwrap_err();
        let text = format!("{err:#}");
        assert!(
            text.contains("field 'nand.geometry.blocks_per_plane'") && text.contains("u32"),
            "{text}"
        );
        // Stack fields go through the same path.
        let stack = flashstack_stack::StackConfig::preset("default").unwrap();
        let err = override_toml(&stack, &["fs.mount.lfs_mode=maybe"]).unwrap_err();
        let text = format!("{err:#}");
        assert!(
            text.contains("field 'fs.mount.lfs_mode'") && text.contains("boolean"),
            "{text}"
        );
    }
}
