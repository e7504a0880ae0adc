//! Rendering: a terminal table with one column per run, pretty JSON, and CSV with one row
//! per run (dotted column names, pandas-friendly).

use flashstack_sim::units::{format_bytes, format_count as count, format_ns};
use serde::Serialize;
use serde_json::Value;

use crate::RunReport;

type Row = (&'static str, fn(&RunReport) -> String);

fn latency_row(
    r: &RunReport,
    kind: &str,
    pick: fn(&flashstack_sim::LatencySummary) -> u64,
) -> String {
    match r.latency.get(kind) {
        Some(s) if s.count > 0 => format_ns(pick(s)),
        _ => "-".into(),
    }
}

const ROWS: &[Row] = &[
    ("workload", |r| {
        let w = &r.run.workload;
        if w.chars().count() > 24 {
            format!("{}…", w.chars().take(23).collect::<String>())
        } else {
            w.clone()
        }
    }),
    ("gc policy", |r| r.gc.policy.clone()),
    ("user capacity", |r| format_bytes(r.run.user_capacity_bytes)),
    ("simulated time", |r| {
        format!("{:.3} s", r.simulated_seconds)
    }),
    ("host writes", |r| {
        format!(
            "{} ({})",
            count(r.host.write_requests),
            format_bytes(r.host.write_bytes)
        )
    }),
    ("host reads", |r| {
        format!(
            "{} ({})",
            count(r.host.read_requests),
            format_bytes(r.host.read_bytes)
        )
    }),
    ("host trims / flushes", |r| {
        format!(
            "{} / {}",
            count(r.host.trim_requests),
            count(r.host.flush_requests)
        )
    }),
    ("NAND page programs", |r| count(r.nand.page_programs)),
    ("NAND page reads", |r| count(r.nand.page_reads)),
    ("NAND block erases", |r| count(r.nand.block_erases)),
    ("write amplification", |r| {
        format!("{:.3}", r.write_amplification.total)
    }),
    ("  host data", |r| {
        format!("{:.3}", r.write_amplification.host)
    }),
    ("  GC migration", |r| {
        format!("{:.3}", r.write_amplification.gc)
    }),
    ("  wear levelling", |r| {
        format!("{:.3}", r.write_amplification.wear_levelling)
    }),
    ("  padding", |r| {
        format!("{:.3}", r.write_amplification.padding)
    }),
    ("  FTL metadata", |r| {
        format!("{:.3}", r.write_amplification.metadata)
    }),
    ("compression", |r| {
        let c = &r.compression;
        format!(
            "{}: {} host + {} GC ({} in idle time) pages, R {:.3}",
            c.policy,
            count(c.pages_compressed_host),
            count(c.pages_compressed_gc),
            count(c.pages_compressed_gc_background),
            c.stored_ratio
        )
    }),
    ("GC cycles fg / bg", |r| {
        format!(
            "{} / {}",
            count(r.gc.foreground_cycles),
            count(r.gc.background_cycles)
        )
    }),
    ("erases/block min/mean/max", |r| {
        let e = &r.erase_distribution;
        format!(
            "{} / {:.1} / {}",
            e.erase_count_min, e.erase_count_mean, e.erase_count_max
        )
    }),
    ("write latency p50", |r| {
        latency_row(r, "write", |s| s.latency_ns_p50)
    }),
    ("write latency p99", |r| {
        latency_row(r, "write", |s| s.latency_ns_p99)
    }),
    ("write latency max", |r| {
        latency_row(r, "write", |s| s.latency_ns_max)
    }),
    ("read latency p50", |r| {
        latency_row(r, "read", |s| s.latency_ns_p50)
    }),
    ("read latency p99", |r| {
        latency_row(r, "read", |s| s.latency_ns_p99)
    }),
    ("read latency max", |r| {
        latency_row(r, "read", |s| s.latency_ns_max)
    }),
    ("flush latency p99", |r| match r.latency.get("flush") {
        // Every flush found all writes already on flash and the device has no command
        // overhead (ldc-emmc: 4 KiB pages, each write programmed as it arrives): the
        // flush completes as it arrives. Said in words, as 0 ns alone reads like a bug.
        Some(s) if s.count > 0 && s.latency_ns_max == 0 => "0 ns (nothing pending)".into(),
        _ => latency_row(r, "flush", |s| s.latency_ns_p99),
    }),
    ("energy (NAND)", |r| format!("{:.1} mJ", r.energy.total_mj)),
    ("  program / erase", |r| {
        format!("{:.1} / {:.1} mJ", r.energy.program_mj, r.energy.erase_mj)
    }),
    ("  read / transfer / idle", |r| {
        format!(
            "{:.1} / {:.1} / {:.1} mJ",
            r.energy.read_mj, r.energy.transfer_mj, r.energy.idle_mj
        )
    }),
    ("lifetime (years)", |r| {
        format!("{:.2}", r.lifetime.lifetime_years)
    }),
    ("  = PEC×(1+OP)", |r| {
        format!(
            "{}×(1+{:.3})",
            r.lifetime.pe_cycles, r.lifetime.overprovisioning
        )
    }),
    ("  ÷ 365×DWPD", |r| {
        format!("365×{:.3} ({})", r.lifetime.dwpd, r.lifetime.dwpd_source)
    }),
    // WA per stored byte × the compression row's R = the write amplification row.
    ("  ÷ WA×R_compress", |r| {
        format!(
            "{:.3}×{:.3} = {:.3}",
            r.lifetime.write_amplification,
            r.lifetime.compression_ratio,
            r.write_amplification.total
        )
    }),
];

fn remap_cell(r: &RunReport) -> String {
    format!(
        "{} ({})",
        count(r.remap.requests),
        format_bytes(r.remap.lbas * 4096)
    )
}

fn remap_cost_cell(r: &RunReport) -> String {
    format!(
        "{} / {}",
        count(r.remap.record_pages),
        count(r.remap.shared_slots_moved)
    )
}

type CacheCell = fn(&crate::MappingCacheFigures) -> String;

fn cache_cell(r: &RunReport, f: CacheCell) -> String {
    r.mapping_cache.as_ref().map_or("off".into(), f)
}

/// Mapping-cache rows, inserted after the erases row when some run has a cache.
fn mapping_cache_rows(reports: &[RunReport]) -> Vec<(String, Vec<String>)> {
    let rows: [(&str, CacheCell); 3] = [
        ("mapping cache hit rate", |m| {
            format!("{:.4} ({} SRAM)", m.hit_rate, format_bytes(m.sram_bytes))
        }),
        ("  mapping reads / programs", |m| {
            format!("{} / {}", count(m.mapping_reads), count(m.mapping_programs))
        }),
        ("  translation GC / moves", |m| {
            format!(
                "{} / {}",
                count(m.translation_gc_cycles),
                count(m.translation_gc_moves)
            )
        }),
    ];
    let hpb_rows: [(&str, CacheCell); 2] = [
        ("HPB hits / stale / misses", |m| {
            format!(
                "{} / {} / {} ({} host)",
                count(m.hpb_hits),
                count(m.hpb_stale),
                count(m.hpb_misses),
                format_bytes(m.hpb_host_map_bytes)
            )
        }),
        ("  HPB loads / regions dropped", |m| {
            format!("{} / {}", count(m.hpb_loads), count(m.hpb_region_drops))
        }),
    ];
    // HPB rows only when some device has HPB: cached runs without it keep their tables.
    let hpb_on = reports.iter().any(|r| {
        r.mapping_cache
            .as_ref()
            .is_some_and(|m| m.hpb_host_map_bytes > 0)
    });
    let hpb_rows = match hpb_on {
        true => &hpb_rows[..],
        false => &[],
    };
    rows.iter()
        .chain(hpb_rows)
        .map(|&(label, f)| {
            let cells = reports.iter().map(|r| cache_cell(r, f)).collect();
            (label.to_string(), cells)
        })
        .collect()
}

type BufferCell = fn(&crate::WriteBufferFigures) -> String;

/// Write-buffer rows, inserted after the host trims row when some device has a buffer.
fn write_buffer_rows(reports: &[RunReport]) -> Vec<(String, Vec<String>)> {
    let rows: [(&str, BufferCell); 3] = [
        ("write buffer destaged", |b| {
            format!(
                "{} LBAs ({}, {})",
                count(b.destaged_lbas),
                format_bytes(b.capacity_bytes),
                b.destage
            )
        }),
        ("  full waits / max wait", |b| {
            format!(
                "{} / {:.1} us",
                count(b.full_waits),
                b.wait_ns_max as f64 / 1e3
            )
        }),
        ("  read hits / lost at cuts", |b| {
            format!("{} / {}", count(b.buffer_read_hits), count(b.lost_lbas))
        }),
    ];
    rows.iter()
        .map(|&(label, f)| {
            let cells = reports
                .iter()
                .map(|r| r.write_buffer.as_ref().map_or("off".into(), f))
                .collect();
            (label.to_string(), cells)
        })
        .collect()
}

type DieCell = fn(&crate::DieCommandFigures) -> String;

/// Die-command rows (the die-wide rules), inserted after the erases row.
fn die_command_rows(reports: &[RunReport]) -> Vec<(String, Vec<String>)> {
    let cell = |r: &RunReport, f: DieCell| {
        r.die_commands
            .as_ref()
            .map_or("independent planes".into(), f)
    };
    let rows: [(&str, DieCell); 2] = [
        ("die commands: program / multi-plane", |d| {
            format!(
                "{} / {}",
                count(d.program_commands),
                count(d.multi_plane_programs)
            )
        }),
        ("  read / multi-plane, erase / multi-plane", |d| {
            format!(
                "{} / {}, {} / {}",
                count(d.read_commands),
                count(d.multi_plane_reads),
                count(d.erase_commands),
                count(d.multi_plane_erases)
            )
        }),
    ];
    rows.iter()
        .map(|&(label, f)| {
            let cells = reports.iter().map(|r| cell(r, f)).collect();
            (label.to_string(), cells)
        })
        .collect()
}

/// One column per run, headed by the device name; then, for block traces, the trace's
/// notes and process table ([`crate::render_trace_notes`]).
pub fn render_table(reports: &[RunReport]) -> String {
    let headers: Vec<String> = reports.iter().map(|r| r.run.device.clone()).collect();
    let mut rows: Vec<(String, Vec<String>)> = ROWS
        .iter()
        .map(|(label, f)| (label.to_string(), reports.iter().map(f).collect()))
        .collect();
    // Remap rows only when some run remapped: tables of runs without remaps stay as
    // they were (their goldens too); the JSON and CSV always carry the figures.
    if reports.iter().any(|r| !r.remap.is_zero()) {
        let at = 1 + rows
            .iter()
            .position(|(label, _)| label == "host trims / flushes")
            .expect("the trims row");
        let cells = |f: fn(&RunReport) -> String| reports.iter().map(f).collect();
        rows.insert(at, ("host remaps".into(), cells(remap_cell)));
        rows.insert(
            at + 1,
            ("  records / shared moved".into(), cells(remap_cost_cell)),
        );
    }
    // Likewise the mapping-cache rows, only when some device has a cache.
    if reports.iter().any(|r| r.mapping_cache.is_some()) {
        let at = 1 + rows
            .iter()
            .position(|(label, _)| label == "NAND block erases")
            .expect("the erases row");
        for (k, row) in mapping_cache_rows(reports).into_iter().enumerate() {
            rows.insert(at + k, row);
        }
    }
    // Read-modify-write rows only when some device updated page-sized mapping units in
    // part (`ftl.mapping_unit_bytes`).
    let rmw = |r: &RunReport| r.nand.rmw_reads > 0 || r.write_amplification.read_modify_write > 0.0;
    if reports.iter().any(rmw) {
        let after = |rows: &[(String, Vec<String>)], label: &str| {
            1 + rows.iter().position(|(l, _)| l == label).expect("the row")
        };
        let at = after(&rows, "NAND page reads");
        let cells = reports.iter().map(|r| count(r.nand.rmw_reads)).collect();
        rows.insert(at, ("  read-modify-write reads".into(), cells));
        let at = after(&rows, "  wear levelling");
        let cells = reports
            .iter()
            .map(|r| format!("{:.3}", r.write_amplification.read_modify_write))
            .collect();
        rows.insert(at, ("  read-modify-write".into(), cells));
    }
    // And the write-buffer rows, only when some device has a buffer.
    if reports.iter().any(|r| r.write_buffer.is_some()) {
        let at = 1 + rows
            .iter()
            .position(|(label, _)| label == "host trims / flushes")
            .expect("the trims row");
        for (k, row) in write_buffer_rows(reports).into_iter().enumerate() {
            rows.insert(at + k, row);
        }
    }
    // And the die-command rows, only when some device runs one command per die.
    if reports.iter().any(|r| r.die_commands.is_some()) {
        let at = 1 + rows
            .iter()
            .position(|(label, _)| label == "NAND block erases")
            .expect("the erases row");
        for (k, row) in die_command_rows(reports).into_iter().enumerate() {
            rows.insert(at + k, row);
        }
    }
    let mut out = String::new();
    if let Some(first) = reports.first() {
        if reports.iter().all(|r| r.run.workload == first.run.workload) {
            out.push_str(&format!("workload: {}\n", first.run.workload));
        }
    }
    out.push_str(&render_columns(&headers, &rows));
    out.push_str(&crate::render_trace_notes(reports));
    out
}

/// A table with a label column and one right-aligned column per header: each row is a
/// label and one cell per column.
pub fn render_columns(headers: &[String], rows: &[(String, Vec<String>)]) -> String {
    let label_width = rows
        .iter()
        .map(|(l, _)| l.chars().count())
        .max()
        .unwrap_or(0);
    let widths: Vec<usize> = headers
        .iter()
        .enumerate()
        .map(|(i, h)| {
            rows.iter()
                .filter_map(|(_, cells)| cells.get(i))
                .map(|c| c.chars().count())
                .chain([h.chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = format!("{:label_width$}", "");
    for (h, w) in headers.iter().zip(&widths) {
        out.push_str(&format!("  {h:>w$}"));
    }
    out.push('\n');
    for (label, cells) in rows {
        out.push_str(label);
        out.push_str(&" ".repeat(label_width - label.chars().count()));
        for (i, w) in widths.iter().enumerate() {
            let cell = cells.get(i).map_or("", String::as_str);
            out.push_str(&format!("  {cell:>w$}"));
        }
        out.push('\n');
    }
    out
}

/// One object for one run, an array for several.
pub fn render_json<T: Serialize>(reports: &[T]) -> String {
    let mut text = if reports.len() == 1 {
        serde_json::to_string_pretty(&reports[0])
    } else {
        serde_json::to_string_pretty(reports)
    }
    .expect("reports serialise");
    text.push('\n');
    text
}

/// `value`'s leaves as (dotted path, text) pairs, in order: the CSV's columns, and what
/// a comparison of two configurations or reports diffs. Series (a latency CDF, the
/// timeline over simulated time) are left out: they are in the JSON, and a CSV row holds
/// one run's scalars.
pub fn flatten_json(value: &Value) -> Vec<(String, String)> {
    flatten_json_values(value)
        .into_iter()
        .map(|(key, v)| (key, cell_text(&v)))
        .collect()
}

/// [`flatten_json`] with the leaves kept as JSON values (numbers stay numbers, a missing
/// figure stays null): a table's typed columns (`flashstack sweep --json`, the Python
/// bindings' DataFrames). A list is one string cell, as in the CSV.
pub fn flatten_json_values(value: &Value) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    flatten("", value, &mut out);
    out
}

/// A leaf's text in a CSV cell: strings as they are, null empty.
pub fn cell_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Keys whose values are series, not scalars (see [`flatten_json`]).
const SERIES_KEYS: [&str; 2] = ["cdf", "timeline"];

fn flatten(prefix: &str, value: &Value, out: &mut Vec<(String, Value)>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                if SERIES_KEYS.contains(&key.as_str()) {
                    continue;
                }
                let name = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                flatten(&name, v, out);
            }
        }
        // The erase histogram stays one cell: "lo:count;lo:count".
        Value::Array(items) => {
            let joined: Vec<String> = items
                .iter()
                .map(|item| match item {
                    Value::Array(pair) => pair
                        .iter()
                        .map(|v| v.to_string())
                        .collect::<Vec<_>>()
                        .join(":"),
                    other => other.to_string(),
                })
                .collect();
            out.push((prefix.to_string(), Value::String(joined.join(";"))));
        }
        other => out.push((prefix.to_string(), other.clone())),
    }
}

/// One CSV cell: quoted when it holds a comma, a quote or a newline.
pub fn csv_cell(text: &str) -> String {
    if text.contains([',', '"', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// A header row and one row per run (the first run's fields name the columns).
pub fn render_csv<T: Serialize>(reports: &[T]) -> String {
    let rows: Vec<Vec<(String, String)>> = reports
        .iter()
        .map(|r| flatten_json(&serde_json::to_value(r).expect("reports serialise")))
        .collect();
    // The columns of the first run, then any a later run adds (figures left out while
    // zero or off, e.g. a mapping cache or read-modify-write reads on one device only);
    // a run without a column leaves its cell empty.
    let mut columns: Vec<&str> = Vec::new();
    let mut known = std::collections::BTreeSet::new();
    for (key, _) in rows.iter().flatten() {
        if known.insert(key.as_str()) {
            columns.push(key);
        }
    }
    let mut out = String::new();
    if rows.is_empty() {
        return out;
    }
    let header: Vec<String> = columns.iter().map(|k| csv_cell(k)).collect();
    out.push_str(&header.join(","));
    out.push('\n');
    for cells in &rows {
        let by_key: std::collections::BTreeMap<&str, &str> = cells
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let row: Vec<String> = columns
            .iter()
            .map(|k| by_key.get(k).map_or(String::new(), |v| csv_cell(v)))
            .collect();
        out.push_str(&row.join(","));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_columns_are_the_union_of_the_runs() {
        let runs = [
            serde_json::json!({"a": 1, "b": {"c": 2}}),
            serde_json::json!({"a": 3, "b": {"c": 4, "d": 5}}),
        ];
        assert_eq!(render_csv(&runs), "a,b.c,b.d\n1,2,\n3,4,5\n");
        assert_eq!(render_csv(&runs[..1]), "a,b.c\n1,2\n");
    }

    #[test]
    fn csv_quotes_what_needs_it() {
        assert_eq!(csv_cell("a,b"), "\"a,b\"");
        assert_eq!(csv_cell("say \"x\""), "\"say \"\"x\"\"\"");
        assert_eq!(csv_cell("plain"), "plain");
    }
}
