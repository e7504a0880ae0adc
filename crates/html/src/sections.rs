//! The report's sections, each drawn from the columns' JSON reports. A figure a column's
//! JSON lacks (a block-trace run has no page cache or F2FS) is shown as absent, never as 0.

use serde_json::Value;

use crate::page::{count, escape, plots, table};
use crate::plot::{self, Curve, Series};
use crate::{Column, HtmlError};

const BLOCK_BYTES: f64 = 4096.0;
const MIB: f64 = 1024.0 * 1024.0;

/// The value at a `/`-separated path of keys.
fn at<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('/').try_fold(v, |v, key| v.get(key))
}

/// A figure read from a column's JSON report.
type Getter = fn(&Value) -> Option<f64>;

/// Request kinds, each with its latency summary per column (`None`: not measured there).
type Kinds<'a> = Vec<(String, Vec<Option<&'a Value>>)>;

fn num(v: &Value, path: &str) -> Option<f64> {
    at(v, path).and_then(Value::as_f64)
}

/// The device's report: under `device` in a whole-stack run, the whole JSON otherwise.
fn device(json: &Value) -> &Value {
    json.get("device").unwrap_or(json)
}

fn names(columns: &[Column]) -> Vec<String> {
    columns.iter().map(|c| c.name.clone()).collect()
}

fn shown(value: Option<f64>, digits: usize) -> String {
    match value {
        Some(v) if digits == 0 => count(v.round() as u64),
        Some(v) => format!("{v:.digits$}"),
        None => "—".into(),
    }
}

/// The headline figures, one row each, a column per stack.
pub(crate) fn summary(columns: &[Column]) -> String {
    let rows: [(&str, Getter, usize); 9] = [
        (
            "simulated time (s)",
            |j| num(device(j), "simulated_seconds"),
            1,
        ),
        (
            "host writes (MiB)",
            |j| num(device(j), "host/write_bytes").map(|b| b / MIB),
            2,
        ),
        (
            "NAND page programs",
            |j| num(device(j), "nand/page_programs"),
            0,
        ),
        (
            "NAND block erases",
            |j| num(device(j), "nand/block_erases"),
            0,
        ),
        (
            "write amplification",
            |j| num(device(j), "write_amplification/total"),
            3,
        ),
        ("F2FS data blocks", |j| num(j, "fs/data_blocks"), 0),
        ("F2FS node blocks", |j| num(j, "fs/node_blocks"), 0),
        (
            "lifetime (years)",
            |j| num(device(j), "lifetime/lifetime_years"),
            2,
        ),
        (
            "device energy (mJ)",
            |j| num(device(j), "energy/total_mj"),
            1,
        ),
    ];
    let mut header = vec!["".to_string()];
    header.extend(names(columns));
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|(label, get, digits)| {
            let mut row = vec![label.to_string()];
            row.extend(columns.iter().map(|c| shown(get(&c.json), *digits)));
            row
        })
        .collect();
    let start: Vec<String> = columns
        .iter()
        .filter_map(|c| {
            let s = c.json.get("start")?.as_str()?;
            Some(format!("{}: {}", c.name, s))
        })
        .collect();
    let start = match start.is_empty() {
        true => String::new(),
        false => format!(
            "<p class=\"note\">Starting state — {}</p>\n",
            escape(&start.join("; "))
        ),
    };
    format!("<h2>Summary</h2>\n{start}{}", table(&header, &body))
}

/// A latency summary's CDF points, if it has requests.
fn cdf_of(latency: &Value) -> Option<Vec<(f64, u64)>> {
    let points: Vec<(f64, u64)> = latency
        .get("cdf")?
        .as_array()?
        .iter()
        .filter_map(|p| Some((p.get(0)?.as_f64()?, p.get(1)?.as_u64()?)))
        .collect();
    (!points.is_empty()).then_some(points)
}

/// The request kinds (in first-seen order) and, per column, each kind's latency summary.
fn kinds<'a>(
    columns: &'a [Column],
    list: impl Fn(&'a Value) -> Vec<(String, &'a Value)>,
) -> Kinds<'a> {
    let mut order: Vec<String> = Vec::new();
    let per_column: Vec<Vec<(String, &Value)>> = columns.iter().map(|c| list(&c.json)).collect();
    for (name, _) in per_column.iter().flatten() {
        if !order.contains(name) {
            order.push(name.clone());
        }
    }
    order
        .into_iter()
        .map(|name| {
            let found = per_column
                .iter()
                .map(|kinds| kinds.iter().find(|(n, _)| *n == name).map(|(_, v)| *v))
                .collect();
            (name, found)
        })
        .collect()
}

fn object_entries<'a>(v: Option<&'a Value>, latency_key: Option<&str>) -> Vec<(String, &'a Value)> {
    let Some(map) = v.and_then(Value::as_object) else {
        return Vec::new();
    };
    map.iter()
        .filter_map(|(k, v)| {
            let latency = match latency_key {
                Some(key) => v.get(key)?,
                None => v,
            };
            Some((k.clone(), latency))
        })
        .collect()
}

fn user_ops(json: &Value) -> Vec<(String, &Value)> {
    let Some(list) = json.get("user_ops").and_then(Value::as_array) else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|op| Some((op.get("name")?.as_str()?.to_string(), op)))
        .collect()
}

/// One CDF plot per kind that any column measured.
fn cdf_plots(
    columns: &[Column],
    prefix: &str,
    kinds: Kinds,
) -> Result<Vec<(String, String)>, HtmlError> {
    let mut out = Vec::new();
    for (kind, found) in kinds {
        let curves: Vec<Curve> = found
            .iter()
            .enumerate()
            .filter_map(|(i, v)| {
                Some(Curve {
                    column: i,
                    name: &columns[i].name,
                    points: cdf_of((*v)?)?,
                })
            })
            .collect();
        if curves.is_empty() {
            continue;
        }
        let title = format!("{prefix}: {kind}");
        out.push((title.clone(), plot::cdf(&title, &curves)?));
    }
    Ok(out)
}

/// Latency CDFs: per user operation, per file-system call, per device request kind.
pub(crate) fn latency(columns: &[Column]) -> Result<String, HtmlError> {
    let mut out = String::from("<h2>Latency</h2>\n");
    let groups: [(&str, &str, Kinds); 3] = [
        ("User operations", "user op", kinds(columns, user_ops)),
        (
            "File-system calls (the app's view, through the page cache)",
            "file call",
            kinds(columns, |j| {
                object_entries(j.get("file_ops"), Some("latency"))
            }),
        ),
        (
            "Device requests",
            "device",
            kinds(columns, |j| object_entries(device(j).get("latency"), None)),
        ),
    ];
    for (heading, prefix, kinds) in groups {
        let drawn = cdf_plots(columns, prefix, kinds)?;
        if !drawn.is_empty() {
            out.push_str(&format!("<h3>{}</h3>\n{}", escape(heading), plots(&drawn)));
        }
    }
    Ok(out)
}

/// Write amplification and free space over simulated time, from each column's
/// `timeline` (whole-stack runs).
pub(crate) fn over_time(columns: &[Column]) -> Result<String, HtmlError> {
    let plots_of: [(&str, &str, &str); 3] = [
        ("write amplification so far", "write_amplification", "WA"),
        ("F2FS free segments", "fs_free_segments", "segments"),
        ("device free blocks", "device_free_blocks", "blocks"),
    ];
    let mut drawn = Vec::new();
    for (title, key, unit) in plots_of {
        let series: Vec<Series> = columns
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let samples = at(&c.json, "timeline/samples")?.as_array()?;
                let points: Vec<(f64, f64)> = samples
                    .iter()
                    .filter_map(|s| Some((s.get("t_ns")?.as_f64()? / 1e9, s.get(key)?.as_f64()?)))
                    .collect();
                (points.len() > 1).then_some(Series {
                    column: i,
                    name: &c.name,
                    points,
                })
            })
            .collect();
        if !series.is_empty() {
            drawn.push((
                title.to_string(),
                plot::lines(title, "simulated time (s)", unit, &series)?,
            ));
        }
    }
    if drawn.is_empty() {
        return Ok(String::new());
    }
    let interval: Vec<String> = columns
        .iter()
        .filter_map(|c| {
            let ns = num(&c.json, "timeline/interval_ns")?;
            Some(format!("{}: every {} s", c.name, ns / 1e9))
        })
        .collect();
    Ok(format!(
        "<h2>Over simulated time</h2>\n<p class=\"note\">Sampled as the run's virtual clock \
         passes each interval ({}); write amplification is NAND page programs over host \
         blocks written since the measurement began.</p>\n{}",
        escape(&interval.join("; ")),
        plots(&drawn)
    ))
}

/// Bytes written at each layer, top to bottom: what the apps wrote, what the page cache
/// handed to F2FS, what F2FS wrote by kind, what the device received and programmed.
pub(crate) fn bytes_by_layer(columns: &[Column]) -> Result<String, HtmlError> {
    let layers: [(&str, Getter); 8] = [
        ("app writes", |j| num(j, "persona/trace/write_bytes")),
        ("cache writeback", |j| {
            let map = at(j, "cache/pages_written_back")?.as_object()?;
            Some(map.values().filter_map(Value::as_f64).sum::<f64>() * BLOCK_BYTES)
        }),
        ("F2FS data", |j| {
            Some((num(j, "fs/data_blocks")? + num(j, "fs/ipu_data_blocks")?) * BLOCK_BYTES)
        }),
        ("F2FS node", |j| {
            num(j, "fs/node_blocks").map(|b| b * BLOCK_BYTES)
        }),
        ("F2FS metadata", |j| {
            let keys = [
                "checkpoint_blocks",
                "nat_blocks",
                "sit_blocks",
                "ssa_blocks",
            ];
            let blocks: Option<f64> = keys.iter().map(|k| num(j, &format!("fs/{k}"))).sum();
            blocks.map(|b| b * BLOCK_BYTES)
        }),
        ("F2FS cleaning", |j| {
            Some((num(j, "fs/gc_data_blocks")? + num(j, "fs/gc_node_blocks")?) * BLOCK_BYTES)
        }),
        ("device host writes", |j| num(device(j), "host/write_bytes")),
        ("NAND programs", |j| num(device(j), "nand/program_bytes")),
    ];
    let categories: Vec<String> = layers.iter().map(|(n, _)| n.to_string()).collect();
    let values: Vec<Vec<f64>> = layers
        .iter()
        .map(|(_, get)| {
            columns
                .iter()
                .map(|c| get(&c.json).unwrap_or(0.0) / MIB)
                .collect()
        })
        .collect();
    let svg = plot::bars(
        "bytes written per layer",
        "MiB",
        &categories,
        &names(columns),
        &values,
    )?;
    let mut header = vec!["layer (MiB)".to_string()];
    header.extend(names(columns));
    let rows: Vec<Vec<String>> = layers
        .iter()
        .map(|(name, get)| {
            let mut row = vec![name.to_string()];
            row.extend(
                columns
                    .iter()
                    .map(|c| shown(get(&c.json).map(|b| b / MIB), 2)),
            );
            row
        })
        .collect();
    Ok(format!(
        "<h2>Where the written bytes came from</h2>\n{}{}",
        plots(&[("bytes per layer".into(), svg)]),
        table(&header, &rows)
    ))
}

/// The erase-count histogram per column, and the lifetime formula's inputs.
pub(crate) fn wear(columns: &[Column]) -> Result<String, HtmlError> {
    let hist = |j: &Value| -> Vec<(u64, f64)> {
        at(device(j), "erase_distribution/histogram")
            .and_then(Value::as_array)
            .map(|rows| {
                rows.iter()
                    .filter_map(|r| Some((r.get(0)?.as_u64()?, r.get(1)?.as_f64()?)))
                    .collect()
            })
            .unwrap_or_default()
    };
    let per_column: Vec<Vec<(u64, f64)>> = columns.iter().map(|c| hist(&c.json)).collect();
    let mut buckets: Vec<u64> = per_column.iter().flatten().map(|(e, _)| *e).collect();
    buckets.sort_unstable();
    buckets.dedup();
    let values: Vec<Vec<f64>> = buckets
        .iter()
        .map(|b| {
            per_column
                .iter()
                .map(|h| h.iter().find(|(e, _)| e == b).map_or(0.0, |(_, n)| *n))
                .collect()
        })
        .collect();
    let categories: Vec<String> = buckets.iter().map(|b| format!("{b} erases")).collect();
    let svg = plot::bars(
        "blocks by erase count",
        "blocks",
        &categories,
        &names(columns),
        &values,
    )?;
    let inputs = [
        ("P/E cycles", "pe_cycles", 0),
        ("over-provisioning", "overprovisioning", 3),
        ("drive writes per day", "dwpd", 3),
        ("write amplification", "write_amplification", 3),
        ("compression ratio", "compression_ratio", 3),
        ("lifetime (years)", "lifetime_years", 2),
    ];
    let mut header = vec!["lifetime formula input".to_string()];
    header.extend(names(columns));
    let rows: Vec<Vec<String>> = inputs
        .iter()
        .map(|(label, key, digits)| {
            let mut row = vec![label.to_string()];
            row.extend(
                columns
                    .iter()
                    .map(|c| shown(num(device(&c.json), &format!("lifetime/{key}")), *digits)),
            );
            row
        })
        .collect();
    Ok(format!(
        "<h2>Wear and lifetime</h2>\n{}<p class=\"note\">lifetime = P/E cycles × (1 + \
         over-provisioning) / (drive writes per day × 365 × write amplification × \
         compression ratio)</p>\n{}",
        plots(&[("erase histogram".into(), svg)]),
        table(&header, &rows)
    ))
}

/// Every `*_mj` figure of an `energy` object: the device's, and any other layer's the
/// run reports at the top level.
fn energy_terms(json: &Value) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    for (layer, v) in [
        ("device", device(json).get("energy")),
        ("phone", json.get("energy")),
    ] {
        let Some(map) = v.and_then(Value::as_object) else {
            continue;
        };
        if layer == "phone" && std::ptr::eq(json, device(json)) {
            continue;
        }
        for (k, v) in map {
            if let (Some(name), Some(mj)) = (k.strip_suffix("_mj"), v.as_f64()) {
                // Sums of other terms (the phone's device and NAND figures repeat the
                // storage terms and the device's own energy) would count twice.
                let sum =
                    name == "total" || (layer == "phone" && matches!(name, "device" | "nand"));
                if !sum {
                    out.push((format!("{layer}: {name}"), mj));
                }
            }
        }
    }
    out
}

/// Energy per term, a bar per column.
pub(crate) fn energy(columns: &[Column]) -> Result<String, HtmlError> {
    let per_column: Vec<Vec<(String, f64)>> =
        columns.iter().map(|c| energy_terms(&c.json)).collect();
    let mut terms: Vec<String> = Vec::new();
    for (name, _) in per_column.iter().flatten() {
        if !terms.contains(name) {
            terms.push(name.clone());
        }
    }
    if terms.is_empty() {
        return Ok(String::new());
    }
    let values: Vec<Vec<f64>> = terms
        .iter()
        .map(|t| {
            per_column
                .iter()
                .map(|c| c.iter().find(|(n, _)| n == t).map_or(0.0, |(_, v)| *v))
                .collect()
        })
        .collect();
    let svg = plot::bars("energy by term", "mJ", &terms, &names(columns), &values)?;
    let mut header = vec!["term (mJ)".to_string()];
    header.extend(names(columns));
    let rows: Vec<Vec<String>> = terms
        .iter()
        .zip(&values)
        .map(|(t, v)| {
            let mut row = vec![t.clone()];
            row.extend(v.iter().map(|x| format!("{x:.1}")));
            row
        })
        .collect();
    Ok(format!(
        "<h2>Energy</h2>\n{}{}",
        plots(&[("energy".into(), svg)]),
        table(&header, &rows)
    ))
}

/// The exact configuration of every column, to repeat the run.
pub(crate) fn configuration(columns: &[Column]) -> String {
    let mut out = String::from(
        "<h2>Configuration</h2>\n<p class=\"note\">Each column's stack as TOML: save it to a \
         file and pass it as <code>--stack FILE</code> to repeat the run.</p>\n",
    );
    for c in columns {
        out.push_str(&format!(
            "<details><summary>{}</summary>\n<pre>{}</pre>\n</details>\n",
            escape(&c.name),
            escape(&c.config_toml)
        ));
    }
    out
}
