//! The plots, drawn with plotters' SVG backend into strings: a latency CDF (one curve per
//! column) and grouped bars (one bar per column in each category). Each returns a whole
//! `<svg>` element; the same data gives the same bytes. Bars may be negative (a
//! reproduction's reductions).

use plotters::prelude::*;

use crate::HtmlError;

/// Plot size in pixels: two fit side by side on a laptop screen.
const SIZE: (u32, u32) = (560, 300);

/// The columns' colours, in column order (colour-blind-safe, from the Okabe–Ito palette).
const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
    RGBColor(240, 228, 66),
];

pub(crate) fn colour(column: usize) -> RGBColor {
    PALETTE[column % PALETTE.len()]
}

/// One column's curve of a CDF: `(quantile, latency_ns)` points, rising.
pub(crate) struct Curve<'a> {
    pub column: usize,
    pub name: &'a str,
    pub points: Vec<(f64, u64)>,
}

fn err(e: impl std::fmt::Display) -> HtmlError {
    HtmlError::Plot(e.to_string())
}

/// A latency CDF on a logarithmic time axis (µs), one curve per column.
pub(crate) fn cdf(title: &str, curves: &[Curve]) -> Result<String, HtmlError> {
    let us = |ns: u64| (ns.max(1) as f64) / 1000.0;
    let all = curves.iter().flat_map(|c| c.points.iter().map(|p| us(p.1)));
    let (lo, hi) = all.fold((f64::MAX, 0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let (lo, hi) = if lo > hi { (0.001, 1.0) } else { (lo, hi) };
    let (lo, hi) = (lo / 1.5, (hi * 1.5).max(lo * 10.0));
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 15))
            .margin(8)
            .x_label_area_size(32)
            .y_label_area_size(40)
            .build_cartesian_2d((lo..hi).log_scale(), 0f64..1f64)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("latency (µs)")
            .y_desc("fraction of requests")
            .x_labels(6)
            .x_label_formatter(&|v| tick(*v))
            .y_labels(6)
            .light_line_style(WHITE)
            .draw()
            .map_err(err)?;
        for curve in curves {
            let style = colour(curve.column).stroke_width(2);
            let points = curve.points.iter().map(|&(q, ns)| (us(ns), q));
            chart
                .draw_series(LineSeries::new(points, style))
                .map_err(err)?
                .label(curve.name)
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], style));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// A time-axis label in µs: whole numbers with thousands separators, fractions below 1.
fn tick(us: f64) -> String {
    if us >= 1.0 {
        crate::page::count(us.round() as u64)
    } else {
        format!("{}", (us * 1000.0).round() / 1000.0)
    }
}

/// Grouped bars: for each category, one bar per column (`values[category][column]`).
pub(crate) fn bars(
    title: &str,
    unit: &str,
    categories: &[String],
    columns: &[String],
    values: &[Vec<f64>],
) -> Result<String, HtmlError> {
    // The axis holds zero and every bar, so negative values (a reduction) hang below it.
    let (bottom, top) = values
        .iter()
        .flatten()
        .fold((0f64, 0f64), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    let (bottom, top) = match (bottom < 0.0, top > 0.0) {
        (false, false) => (0.0, 1.0),
        _ => (bottom * 1.1, top * 1.1),
    };
    let n = categories.len().max(1) as f64;
    let width = 0.8 / columns.len().max(1) as f64;
    let mut svg = String::new();
    {
        let height = SIZE.1 + 20 * columns.len() as u32;
        let root = SVGBackend::with_string(&mut svg, (SIZE.0 + 200, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 15))
            .margin(8)
            .x_label_area_size(70)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..n, bottom..top)
            .map_err(err)?;
        chart
            .configure_mesh()
            .y_desc(unit)
            .x_labels(0)
            .disable_x_mesh()
            .light_line_style(WHITE)
            .draw()
            .map_err(err)?;
        for (c, name) in columns.iter().enumerate() {
            let style = colour(c).filled();
            let rects = values.iter().enumerate().map(move |(i, row)| {
                let x = i as f64 + 0.1 + width * c as f64;
                let v = row.get(c).copied().unwrap_or(0.0);
                Rectangle::new([(x, 0.0), (x + width, v)], style)
            });
            chart
                .draw_series(rects)
                .map_err(err)?
                .label(name.as_str())
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], style));
        }
        let label = ("sans-serif", 11).into_font().color(&BLACK);
        for (i, category) in categories.iter().enumerate() {
            let at = chart.backend_coord(&(i as f64 + 0.5, bottom));
            root.draw(&Text::new(
                category.as_str(),
                (at.0, at.1 + 6),
                label.pos(plotters::style::text_anchor::Pos::new(
                    plotters::style::text_anchor::HPos::Center,
                    plotters::style::text_anchor::VPos::Top,
                )),
            ))
            .map_err(err)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// One column's series of a line plot.
pub(crate) struct Series<'a> {
    pub column: usize,
    pub name: &'a str,
    pub points: Vec<(f64, f64)>,
}

/// Lines on linear axes, one per column (a value over simulated time).
pub(crate) fn lines(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[Series],
) -> Result<String, HtmlError> {
    let all = || series.iter().flat_map(|s| s.points.iter());
    let x_hi = all().fold(0f64, |m, p| m.max(p.0)).max(1e-9);
    let (y_lo, y_hi) = all().fold((f64::MAX, f64::MIN), |(lo, hi), p| {
        (lo.min(p.1), hi.max(p.1))
    });
    let (y_lo, y_hi) = if y_lo > y_hi {
        (0.0, 1.0)
    } else {
        (y_lo, y_hi)
    };
    let pad = ((y_hi - y_lo) * 0.1).max(y_hi.abs() * 0.01).max(1e-9);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 15))
            .margin(8)
            .x_label_area_size(32)
            .y_label_area_size(56)
            .build_cartesian_2d(0f64..x_hi, (y_lo - pad)..(y_hi + pad))
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .x_labels(6)
            .y_labels(6)
            .light_line_style(WHITE)
            .draw()
            .map_err(err)?;
        for s in series {
            let style = colour(s.column).stroke_width(2);
            chart
                .draw_series(LineSeries::new(s.points.iter().copied(), style))
                .map_err(err)?
                .label(s.name)
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], style));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}
