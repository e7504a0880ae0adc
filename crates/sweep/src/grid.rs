//! A sweep's grid: each parameter a value or a list of values, the points their cartesian
//! product. Every name and value is checked before any point runs, and an error names the
//! file (or the caller's origin) and the key.
//!
//! ```toml
//! workload = ["gmail:launch", "polish:launch"]   # personas or .fst files
//! stack = ["default", "mobifs"]                  # stack specifications, as `run --stack`
//! seed = [1, 2]
//! start = "fresh"                                # "builtin" (default), "fresh", FILE.phone
//! [overrides]                                    # stack fields, as `+key=value`
//! "device.nand.geometry.blocks_per_plane" = 512
//! "cache.dirty_ratio_percent" = [10, 40]
//! ```
//!
//! A grid with `device` in place of `stack` makes block-level points (`flashstack run
//! --device D --workload ldc:APP | --synthetic SPEC`): its workloads are `ldc:APP`,
//! `synthetic` (the default mix) or `synthetic:SPEC`, its overrides device fields,
//! `contents = true` stores page contents (`run --contents`; compressing devices need it),
//! and it has no `start` (a block-level run is preconditioned, or lays down a built-in
//! workload's own data).

use flashstack_stack::StackConfig;
use serde::Serialize;
use thiserror::Error;

use flashstack_replay::BlockInput;

use crate::point::{Loaded, Point, START_BUILTIN, START_FRESH};
use crate::spec::{error_chain, override_toml, resolve, resolve_stack};

/// The grid's top-level keys, in the order the points vary (the last fastest); a grid
/// has `stack` (whole-stack points) or `device` (block-level points), not both.
pub const KEYS: [&str; 7] = [
    "workload",
    "stack",
    "device",
    "overrides",
    "contents",
    "start",
    "seed",
];

/// A grid that cannot be expanded: `origin` is the file (or "grid" for one given in
/// code), `key` the parameter, `message` what is wrong with it.
#[derive(Debug, Error, PartialEq)]
#[error("{origin}: {key}: {message}")]
pub struct GridError {
    pub origin: String,
    pub key: String,
    pub message: String,
}

/// A parsed, checked grid.
#[derive(Clone, Debug, Serialize)]
pub struct Grid {
    pub workloads: Vec<String>,
    /// Whole-stack points' stacks (empty in a block-level grid).
    pub stacks: Vec<String>,
    /// Block-level points' devices (empty in a whole-stack grid).
    pub devices: Vec<String>,
    /// Block-level points: whether the device stores page contents (`[false]` unless
    /// given; empty in a whole-stack grid).
    pub contents: Vec<bool>,
    pub seeds: Vec<u64>,
    pub starts: Vec<String>,
    /// Each override key with its values (keys in the grid's order).
    pub overrides: Vec<(String, Vec<String>)>,
}

impl Grid {
    /// A grid from TOML text (a `flashstack sweep` spec); `origin` names it in errors.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Grid, GridError> {
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| GridError {
            origin: origin.to_string(),
            key: "(file)".to_string(),
            message: e.message().trim().to_string(),
        })?;
        Grid::from_table(&table, origin)
    }

    /// A grid from JSON text (the Python bindings' dict).
    pub fn from_json_str(text: &str, origin: &str) -> Result<Grid, GridError> {
        let table: toml::Table = serde_json::from_str(text).map_err(|e| GridError {
            origin: origin.to_string(),
            key: "(grid)".to_string(),
            message: format!("not a table of parameters: {e}"),
        })?;
        Grid::from_table(&table, origin)
    }

    fn from_table(table: &toml::Table, origin: &str) -> Result<Grid, GridError> {
        let err = |key: &str, message: String| GridError {
            origin: origin.to_string(),
            key: key.to_string(),
            message,
        };
        if let Some(key) = table.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(err(
                key,
                format!("unknown parameter (a grid has {})", KEYS.join(", ")),
            ));
        }
        let texts = |key: &str| -> Result<Option<Vec<String>>, GridError> {
            table
                .get(key)
                .map(|v| values(v).and_then(|vs| vs.iter().map(string).collect()))
                .transpose()
                .map_err(|m| err(key, m))
        };
        let workloads = texts("workload")?.ok_or_else(|| {
            err(
                "workload",
                "missing: name at least one persona or file-level trace (or, with device, \
                 a block workload)"
                    .into(),
            )
        })?;
        let devices = texts("device")?.unwrap_or_default();
        let block = !devices.is_empty();
        if block && table.contains_key("stack") {
            return Err(err(
                "device",
                "a grid has stack (whole-stack points) or device (block-level points), not both"
                    .into(),
            ));
        }
        if block && table.contains_key("start") {
            return Err(err(
                "start",
                "block-level points (device) have no start: they are preconditioned, or lay \
                 down a built-in workload's own data, as `flashstack run --device` does"
                    .into(),
            ));
        }
        if !block && table.contains_key("contents") {
            return Err(err(
                "contents",
                "applies to block-level points (a grid with device); whole stacks store \
                 contents always"
                    .into(),
            ));
        }
        let contents = match (block, table.get("contents")) {
            (false, _) => Vec::new(),
            (true, None) => vec![false],
            (true, Some(v)) => values(v)
                .and_then(|vs| vs.iter().map(boolean).collect())
                .map_err(|m| err("contents", m))?,
        };
        let stacks = match block {
            true => Vec::new(),
            false => texts("stack")?.unwrap_or_else(|| vec!["default".to_string()]),
        };
        let starts = match block {
            true => Vec::new(),
            false => texts("start")?.unwrap_or_else(|| vec![START_BUILTIN.to_string()]),
        };
        let seeds = match table.get("seed") {
            None => vec![1],
            Some(v) => values(v)
                .and_then(|vs| vs.iter().map(seed).collect())
                .map_err(|m| err("seed", m))?,
        };
        let overrides = match table.get("overrides") {
            None => Vec::new(),
            Some(toml::Value::Table(t)) => t
                .iter()
                .map(|(k, v)| {
                    let key = format!("overrides.\"{k}\"");
                    let vs = values(v)
                        .and_then(|vs| vs.iter().map(override_value).collect())
                        .map_err(|m| err(&key, m))?;
                    Ok((k.clone(), vs))
                })
                .collect::<Result<_, GridError>>()?,
            Some(_) => {
                return Err(err(
                    "overrides",
                    "must be a table of stack (or device) fields (\"fs.mount.lfs_mode\" = \
                     [true, false])"
                        .into(),
                ))
            }
        };
        let grid = Grid {
            workloads,
            stacks,
            devices,
            contents,
            seeds,
            starts,
            overrides,
        };
        grid.check(origin)?;
        Ok(grid)
    }

    /// Every value on its own, then every point's configuration: nothing runs until the
    /// whole grid resolves.
    fn check(&self, origin: &str) -> Result<(), GridError> {
        let err = |key: String, value: &str, message: String| GridError {
            origin: origin.to_string(),
            key: format!("{key} = \"{value}\""),
            message,
        };
        if self.is_block() {
            return self.check_block(origin);
        }
        for w in &self.workloads {
            Loaded::load(w, 1).map_err(|e| err("workload".into(), w, error_chain(&e)))?;
        }
        let default = StackConfig::preset("default").expect("the default preset exists");
        let mut configs = Vec::new();
        for s in &self.stacks {
            let config =
                resolve_stack(s, &default).map_err(|e| err("stack".into(), s, error_chain(&e)))?;
            configs.push(config);
        }
        for start in &self.starts {
            let known = [START_FRESH, START_BUILTIN].contains(&start.as_str());
            if !known && !std::path::Path::new(start).is_file() {
                return Err(err(
                    "start".into(),
                    start,
                    "neither \"fresh\", \"builtin\" nor a phone file".into(),
                ));
            }
        }
        self.check_overrides(&configs, origin)?;
        for point in self.points() {
            point.config().map_err(|e| GridError {
                origin: origin.to_string(),
                key: format!("point {}", point.stack_spec()),
                message: error_chain(&e),
            })?;
        }
        Ok(())
    }

    /// Every override value on each of `configs` (stacks or devices) on its own.
    fn check_overrides<T>(&self, configs: &[T], origin: &str) -> Result<(), GridError>
    where
        T: serde::Serialize + serde::de::DeserializeOwned,
    {
        for (key, vs) in &self.overrides {
            for v in vs {
                let entry = format!("{key}={v}");
                for config in configs {
                    override_toml(config, &[entry.as_str()]).map_err(|e| GridError {
                        origin: origin.to_string(),
                        key: format!("overrides.\"{key}\" = \"{v}\""),
                        message: error_chain(&e),
                    })?;
                }
            }
        }
        Ok(())
    }

    /// [`Grid::check`] for a block-level grid: workloads, devices, overrides, points.
    fn check_block(&self, origin: &str) -> Result<(), GridError> {
        let err = |key: String, value: &str, message: String| GridError {
            origin: origin.to_string(),
            key: format!("{key} = \"{value}\""),
            message,
        };
        for w in &self.workloads {
            BlockInput::from_name(w).map_err(|e| err("workload".into(), w, e))?;
        }
        let mut configs = Vec::new();
        for d in &self.devices {
            configs.push(resolve(d).map_err(|e| err("device".into(), d, error_chain(&e)))?);
        }
        self.check_overrides(&configs, origin)?;
        for point in self.points() {
            let message = match point.device_config() {
                Some(Err(e)) => error_chain(&e),
                Some(Ok(config)) if config.compresses() && !point.contents => {
                    "the device compresses pages, which needs their contents: add \
                     contents = true (as run --contents)"
                        .to_string()
                }
                _ => continue,
            };
            return Err(GridError {
                origin: origin.to_string(),
                key: format!("point {}", point.target()),
                message,
            });
        }
        Ok(())
    }

    /// Whether the points are block-level runs on devices.
    pub fn is_block(&self) -> bool {
        !self.devices.is_empty()
    }

    /// The number of points.
    pub fn len(&self) -> usize {
        let overrides: usize = self.overrides.iter().map(|(_, v)| v.len()).product();
        let targets = self.stacks.len() + self.devices.len();
        let variants = self.starts.len().max(1) * self.contents.len().max(1);
        self.workloads.len() * targets * overrides * variants * self.seeds.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The parameter columns a point's row starts with, in [`KEYS`] order.
    /// (`device` in place of `stack`, and no `start`, in a block-level grid).
    pub fn columns(&self) -> Vec<String> {
        let target = if self.is_block() { "device" } else { "stack" };
        let mut columns = vec!["workload".to_string(), target.to_string()];
        columns.extend(self.overrides.iter().map(|(k, _)| k.clone()));
        columns.push(if self.is_block() { "contents" } else { "start" }.to_string());
        columns.push("seed".to_string());
        columns
    }

    /// The cartesian product, the last key varying fastest.
    pub fn points(&self) -> Vec<Point> {
        let mut override_sets: Vec<Vec<String>> = vec![Vec::new()];
        for (key, vs) in &self.overrides {
            override_sets = override_sets
                .iter()
                .flat_map(|set| {
                    vs.iter().map(move |v| {
                        let mut next = set.clone();
                        next.push(format!("{key}={v}"));
                        next
                    })
                })
                .collect();
        }
        // A block-level point's target is its device; it has no start.
        let targets: Vec<(String, Option<String>)> = match self.is_block() {
            true => self
                .devices
                .iter()
                .map(|d| (String::new(), Some(d.clone())))
                .collect(),
            false => self.stacks.iter().map(|s| (s.clone(), None)).collect(),
        };
        // (start, contents): a whole-stack point's start, a block-level point's contents.
        let variants: Vec<(String, bool)> = match self.is_block() {
            true => self
                .contents
                .iter()
                .map(|&c| (START_BUILTIN.to_string(), c))
                .collect(),
            false => self.starts.iter().map(|s| (s.clone(), false)).collect(),
        };
        let mut points = Vec::with_capacity(self.len());
        for workload in &self.workloads {
            for (stack, device) in &targets {
                for overrides in &override_sets {
                    for (start, contents) in &variants {
                        for &seed in &self.seeds {
                            points.push(Point {
                                workload: workload.clone(),
                                stack: stack.clone(),
                                seed,
                                overrides: overrides.clone(),
                                start: start.clone(),
                                device: device.clone(),
                                contents: *contents,
                            });
                        }
                    }
                }
            }
        }
        points
    }
}

/// A parameter's values: a list, or one value.
fn values(value: &toml::Value) -> Result<Vec<toml::Value>, String> {
    match value {
        toml::Value::Array(items) if items.is_empty() => Err("an empty list".into()),
        toml::Value::Array(items) => Ok(items.clone()),
        other => Ok(vec![other.clone()]),
    }
}

fn string(value: &toml::Value) -> Result<String, String> {
    match value {
        toml::Value::String(s) if !s.contains('+') => Ok(s.clone()),
        toml::Value::String(s) => Err(format!(
            "\"{s}\": write overrides in [overrides], not with '+'"
        )),
        other => Err(format!("{other}: must be a string")),
    }
}

fn boolean(value: &toml::Value) -> Result<bool, String> {
    match value {
        toml::Value::Boolean(b) => Ok(*b),
        other => Err(format!("{other}: must be true or false")),
    }
}

fn seed(value: &toml::Value) -> Result<u64, String> {
    match value {
        toml::Value::Integer(n) if *n >= 0 => Ok(*n as u64),
        other => Err(format!("{other}: must be a non-negative integer")),
    }
}

/// An override's value as `key=value` writes it.
fn override_value(value: &toml::Value) -> Result<String, String> {
    let text = match value {
        toml::Value::String(s) => s.clone(),
        toml::Value::Integer(n) => n.to_string(),
        toml::Value::Float(_) => value.to_string(),
        toml::Value::Boolean(b) => b.to_string(),
        other => return Err(format!("{other}: must be a string, number or boolean")),
    };
    if text.contains('+') || text.is_empty() {
        return Err(format!("\"{text}\": empty or holding '+'"));
    }
    Ok(text)
}
