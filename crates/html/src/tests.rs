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

/// A reproduction whose JSON carries two paper figures as `PaperFigure` writes them: bars
/// with a paper bar on one category and a reference line, and lines with a knee.
fn with_figures() -> Reproduction {
    let mut r = reproduction("ldc");
    r.json["figures"] = json!([
        {"figure": "Fig. 9(a)", "title": "write latency / PM", "style": "bars", "x_desc": "",
         "y_desc": "ratio", "categories": ["FB", "GE", "MA"],
         "series": [
            {"name": "zFTL", "origin": "ours", "values": [1.01, 1.02, 0.9]},
            {"name": "LDC", "origin": "ours", "values": [0.8, 0.7, null]},
            {"name": "paper: zFTL", "origin": "paper", "values": [null, 1.04, null]}],
         "references": [{"label": "paper: LDC mean 0.820", "axis": "y", "paper": 0.82, "ours": 0.75}],
         "caption": "Only GE's bar is stated.", "explained": "docs/ldc-reproduction.md#why"},
        {"figure": "OP", "title": "throughput by OP", "style": "lines", "x_desc": "OP (%)",
         "y_desc": "MB/s", "categories": ["5", "10", "20", "40"],
         "series": [{"name": "ours", "origin": "ours", "values": [10.0, 20.0, 30.0, 31.0]}],
         "references": [{"label": "paper: peak at 15% OP", "axis": "x", "paper": 15.0, "ours": 20.0}],
         "caption": "The knee.", "explained": "docs/coco-reproduction.md#gaps"}
    ]);
    r
}

#[test]
fn paper_figures_draw_ours_beside_the_papers_values_with_the_gap_and_the_legend_aside() {
    let reproductions = [with_figures()];
    let html = render_reproductions(&ReproductionReport {
        title: "ldc",
        command: "flashstack reproduce ldc --quick",
        reproductions: &reproductions,
        columns: &[],
        columns_heading: "",
        columns_note: "",
    })
    .unwrap();
    let figures = flashstack_testkit::report::paper_figures(&html);
    let names: Vec<&str> = figures.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["ldc: Fig. 9(a)", "ldc: OP"]);
    // Two series of ours; the paper's GE bar and its mean line.
    assert_eq!((figures[0].ours, figures[0].paper), (2, 2));
    assert_eq!((figures[1].ours, figures[1].paper), (1, 1));
    flashstack_testkit::report::assert_offline(&html);
    // The gap per paper value: GE's bar beside our zFTL, the mean beside ours.
    assert!(
        html.contains("<td>GE (zFTL)</td><td>1.040</td><td>1.020</td><td>-0.020 (-1.9%)</td>"),
        "{html}"
    );
    assert!(html.contains("<td>paper: LDC mean 0.820</td><td>0.820</td><td>0.750</td>"));
    assert!(html.contains("<code>docs/ldc-reproduction.md#why</code>"));
    // Legend entries sit beside the plot, never on a bar.
    let bars = html.split("data-plot=\"ldc: Fig. 9(a)\"").nth(1).unwrap();
    let bars = &bars[..bars.find("</svg>").unwrap()];
    assert_legend_clear(
        bars,
        &["zFTL", "LDC", "paper: zFTL", "paper: LDC mean 0.820"],
    );
    // The paper's bar is drawn outlined, a NaN draws no bar: 3 + 2 + 1 data bars.
    let filled = bars.matches("<rect").count();
    assert!(filled >= 6, "{bars}");
}

/// `(x, y, width, height)` of every `<rect>` of an SVG but its background (the first).
fn rects(svg: &str) -> Vec<(f64, f64, f64, f64)> {
    let attr = |t: &str, a: &str| -> f64 {
        let v = t.split(&format!(" {a}=\"")).nth(1).unwrap();
        v[..v.find('"').unwrap()].parse().unwrap()
    };
    svg.split("<rect")
        .skip(2)
        .map(|t| {
            (
                attr(t, "x"),
                attr(t, "y"),
                attr(t, "width"),
                attr(t, "height"),
            )
        })
        .collect()
}

/// Asserts that each legend label's box (from its text's position, 7 px a character, 14
/// px high) overlaps no bar: no rectangle but the legend swatch beside it.
fn assert_legend_clear(svg: &str, labels: &[&str]) {
    let all = rects(svg);
    for label in labels {
        let text = svg
            .split("<text")
            .find(|t| t.contains(&format!(">\n{label}\n<")))
            .unwrap_or_else(|| panic!("no legend entry {label}: {svg}"));
        let num = |a: &str| -> f64 {
            let v = text.split(&format!(" {a}=\"")).nth(1).unwrap();
            v[..v.find('"').unwrap()].parse().unwrap()
        };
        let (x0, y0) = (num("x") - 22.0, num("y"));
        let (x1, y1) = (num("x") + 7.0 * label.len() as f64, y0 + 14.0);
        let swatch = |r: &&(f64, f64, f64, f64)| r.0 >= x0 && r.0 + r.2 <= num("x") && r.3 <= 12.0;
        let hit = all
            .iter()
            .filter(|r| !swatch(r))
            .find(|r| r.0 < x1 && r.0 + r.2 > x0 && r.1 < y1 && r.1 + r.3 > y0);
        assert!(
            hit.is_none(),
            "legend {label:?} at ({x0},{y0}) covers the bar {hit:?}"
        );
    }
}

#[test]
fn a_bar_plots_legend_covers_no_bar() {
    // Tall bars in every category, up to the top right where a legend inside the plot
    // would sit.
    let categories: Vec<String> = (1..=6).map(|i| i.to_string()).collect();
    let columns = ["paper".to_string(), "ours".to_string()];
    let values: Vec<Vec<f64>> = (0..6).map(|_| vec![10.0, 9.5]).collect();
    let svg = plot::bars("t", "u", &categories, &columns, &values).unwrap();
    assert_legend_clear(&svg, &["paper", "ours"]);
}
