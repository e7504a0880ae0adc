use serde_json::json;

use super::*;

fn latency(scale: u64) -> Value {
    json!({
        "count": 10,
        "cdf": [[0.0, 1000 * scale], [0.5, 2000 * scale], [0.99, 9000 * scale], [1.0, 12000 * scale]]
    })
}

fn column(name: &str, scale: u64, with_fs: bool) -> Column {
    let mut report = json!({
        "start": "factory-new phone",
        "user_ops": [{"name": "send <text>", "count": 3, "cdf": latency(scale)["cdf"]}],
        "file_ops": {"fsync": {"count": 10, "latency": latency(scale)}},
        "device": {
            "simulated_seconds": 12.5,
            "host": {"write_bytes": 8 * 1048576},
            "nand": {"page_programs": 2048 * scale, "block_erases": 3, "program_bytes": 8 * 1048576},
            "write_amplification": {"total": 1.25},
            "latency": {"write": latency(scale), "trim": {"count": 0}},
            "erase_distribution": {"histogram": [[0, 100], [1, 3 * scale]]},
            "lifetime": {"pe_cycles": 3000, "lifetime_years": 9.5},
            "energy": {"program_mj": 10.0, "read_mj": 1.5, "total_mj": 11.5}
        }
    });
    if with_fs {
        report["fs"] = json!({"data_blocks": 100, "ipu_data_blocks": 4, "node_blocks": 20,
            "checkpoint_blocks": 2, "nat_blocks": 1, "sit_blocks": 1, "ssa_blocks": 1,
            "gc_data_blocks": 0, "gc_node_blocks": 0});
    }
    Column {
        name: name.into(),
        config_toml: format!("name = \"{name}\"\nseed = 1\n"),
        json: report,
    }
}

fn report(columns: &[Column]) -> String {
    render(&Report {
        title: "test <report>",
        command: "flashstack run --compare a,b",
        columns,
    })
    .unwrap()
}

#[test]
fn every_section_is_drawn_once_per_kind_with_a_curve_per_column() {
    let columns = [column("a", 1, true), column("b&c", 2, false)];
    let html = report(&columns);
    // Latency: the user op, the fsync, the device write (not the empty trim); then bytes,
    // erases and energy.
    assert_eq!(html.matches("<figure data-plot=").count(), 6, "{html}");
    assert!(html.contains("data-plot=\"user op: send &lt;text&gt;\""));
    assert!(!html.contains("device: trim"));
    // One curve per column in each CDF.
    let fsync = html.split("data-plot=\"file call: fsync\"").nth(1).unwrap();
    let fsync = &fsync[..fsync.find("</figure>").unwrap()];
    assert_eq!(curves(fsync), 2, "{fsync}");
    // Escaped names; a figure one column lacks is absent, not zero.
    assert!(html.contains("<th>b&amp;c</th>") && html.contains("<h1>test &lt;report&gt;</h1>"));
    assert!(
        html.contains("<td>F2FS data blocks</td><td>100</td><td>—</td>"),
        "{html}"
    );
    assert!(html.contains("name = &quot;b&amp;c&quot;"));
    assert!(!html.contains("<script"));
}

/// Polylines of three points or more: data curves (axes, ticks and legend marks have two).
fn curves(svg: &str) -> usize {
    svg.split("<polyline")
        .skip(1)
        .filter(|p| {
            let points = p.split("points=\"").nth(1).unwrap_or("");
            let points = &points[..points.find('"').unwrap_or(0)];
            points.split_whitespace().count() >= 3
        })
        .count()
}

#[test]
fn the_same_results_give_the_same_bytes() {
    let a = report(&[column("a", 1, true), column("b", 3, true)]);
    let b = report(&[column("a", 1, true), column("b", 3, true)]);
    assert_eq!(a, b);
    let c = report(&[column("a", 1, true), column("b", 4, true)]);
    assert_ne!(a, c);
}

#[test]
fn no_columns_is_an_error() {
    let err = render(&Report {
        title: "t",
        command: "c",
        columns: &[],
    });
    assert!(matches!(err, Err(HtmlError::NoColumns)));
}

fn reproduction(name: &str) -> Reproduction {
    Reproduction {
        name: name.into(),
        title: format!("{name} <paper>"),
        doc: format!("docs/{name}-reproduction.md"),
        text: "figure  paper  ours\n".into(),
        json: json!({
            "seed": 1,
            "headlines": [
                {"figure": "writes", "paper": -0.551, "ours": -0.113, "kind": "change"},
                {"figure": "energy", "paper": -0.092, "ours": 0.02, "kind": "change"},
                {"figure": "throughput", "paper": 11.2, "ours": 3.7, "kind": "ratio"},
                {"figure": "unstated", "paper": null, "ours": 1.5, "kind": "ms"}
            ]
        }),
    }
}

#[test]
fn reproductions_show_each_figure_with_its_gap_and_bars_below_zero() {
    let reproductions = [reproduction("medfs"), reproduction("mobifs")];
    let columns = [column("composed", 1, true)];
    let render = |columns: &[Column]| {
        render_reproductions(&ReproductionReport {
            title: "all",
            command: "flashstack reproduce all",
            reproductions: &reproductions,
            columns,
            columns_heading: "composed stack",
            columns_note: "interaction <table>",
        })
        .unwrap()
    };
    let html = render(&columns);
    assert_eq!(html, render(&columns), "same input, same bytes");
    // Every figure of both papers in the summary, gaps in points and relative.
    assert_eq!(html.matches("<td>writes</td>").count(), 2);
    assert!(
        html.contains("<td>-55.1%</td><td>-11.3%</td><td>+43.8 pp</td>"),
        "{html}"
    );
    assert!(html.contains("<td>11.20x</td><td>3.70x</td><td>-67.0%</td>"));
    assert!(html.contains("<td>n/a</td><td>1.500 ms</td><td>—</td>"));
    assert!(html.contains("<td>docs/mobifs-reproduction.md</td>"));
    assert!(html.contains("<h2 id=\"medfs\">medfs &lt;paper&gt;</h2>"));
    // Three kinds of figure, a plot each, per paper; a negative bar hangs below the axis.
    assert_eq!(html.matches("data-plot=\"medfs: ").count(), 3);
    let bars = html
        .split("data-plot=\"medfs: change (%)\"")
        .nth(1)
        .unwrap();
    let bars = &bars[..bars.find("</figure>").unwrap()];
    assert!(bars.contains("-40"), "a negative tick on the axis: {bars}");
    // The runs after the reproductions.
    assert!(
        html.contains("<h2 id=\"runs\">composed stack</h2>\n<pre>interaction &lt;table&gt;</pre>")
    );
    assert!(html.contains("data-plot=\"file call: fsync\""));
    let without = render(&[]);
    assert!(!without.contains("id=\"runs\""));
}
