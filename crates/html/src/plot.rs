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

/// How a series is drawn: its colour, and whether it holds a paper's values (a lighter
/// fill with a black outline, or a dashed line) rather than ours.
#[derive(Clone, Copy)]
pub(crate) struct Look {
    pub colour: usize,
    pub paper: bool,
}

/// A value a paper states for a whole figure, drawn as a dashed black line across it:
/// horizontal at `value` on the y axis, or vertical at `value` on the x axis.
pub(crate) struct RefLine<'a> {
    pub label: &'a str,
    pub value: f64,
    pub vertical: bool,
}

/// Width of the legend panel right of the plot, so the legend never covers a bar or line.
const LEGEND_WIDTH: u32 = 250;
const LEGEND_ROW: i32 = 18;

/// A line with at most this many points has each point marked.
const MARKED_POINTS_MAX: usize = 50;

/// One legend entry: a swatch (a bar's fill, a line, or a dashed reference line) and its
/// name.
enum Swatch {
    Bar(Look),
    Line(Look),
    Reference,
}

/// The legend in its own panel beside the plot, one row per entry from the top.
fn legend(
    area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    entries: &[(&str, Swatch)],
) -> Result<(), HtmlError> {
    let font = ("sans-serif", 13).into_font().color(&BLACK);
    for (i, (name, swatch)) in entries.iter().enumerate() {
        let y = 30 + LEGEND_ROW * i as i32;
        match swatch {
            Swatch::Bar(look) => {
                area.draw(&Rectangle::new([(6, y - 5), (18, y + 5)], fill(*look)))
                    .map_err(err)?;
                if look.paper {
                    area.draw(&Rectangle::new(
                        [(6, y - 5), (18, y + 5)],
                        BLACK.stroke_width(1),
                    ))
                    .map_err(err)?;
                }
            }
            Swatch::Line(look) if look.paper => {
                let style = colour(look.colour).stroke_width(2);
                for x in [4, 12] {
                    area.draw(&PathElement::new([(x, y), (x + 5, y)], style))
                        .map_err(err)?;
                }
            }
            Swatch::Line(look) => {
                let style = colour(look.colour).stroke_width(2);
                area.draw(&PathElement::new([(4, y), (20, y)], style))
                    .map_err(err)?;
            }
            Swatch::Reference => {
                for x in [4, 10, 16] {
                    area.draw(&PathElement::new(
                        [(x, y), (x + 4, y)],
                        BLACK.stroke_width(1),
                    ))
                    .map_err(err)?;
                }
            }
        }
        let text = Text::new(name.to_string(), (26, y - 6), font.clone());
        area.draw(&text).map_err(err)?;
    }
    Ok(())
}

/// A bar's fill: the column's colour, lighter for a paper's values.
fn fill(look: Look) -> ShapeStyle {
    if look.paper {
        colour(look.colour).mix(0.35).filled()
    } else {
        colour(look.colour).filled()
    }
}

/// The whole picture's size: the plot, the legend panel beside it, tall enough for every
/// legend row.
fn canvas(entries: usize) -> (u32, u32) {
    let rows = 40 + LEGEND_ROW as u32 * entries as u32;
    (SIZE.0 + LEGEND_WIDTH, SIZE.1.max(rows))
}

/// Grouped bars: for each category, one bar per column (`values[category][column]`).
pub(crate) fn bars(
    title: &str,
    unit: &str,
    categories: &[String],
    columns: &[String],
    values: &[Vec<f64>],
) -> Result<String, HtmlError> {
    let looks: Vec<(String, Look)> = columns
        .iter()
        .enumerate()
        .map(|(c, name)| {
            (
                name.clone(),
                Look {
                    colour: c,
                    paper: false,
                },
            )
        })
        .collect();
    bars_with(title, unit, categories, &looks, values, &[])
}

/// Grouped bars with each column's look and reference lines: a NaN value draws no bar (the
/// paper prints no number there).
pub(crate) fn bars_with(
    title: &str,
    unit: &str,
    categories: &[String],
    columns: &[(String, Look)],
    values: &[Vec<f64>],
    references: &[RefLine],
) -> Result<String, HtmlError> {
    // The axis holds zero, every bar and every reference line, so negative values (a
    // reduction) hang below it.
    let finite = values
        .iter()
        .flatten()
        .copied()
        .chain(references.iter().filter(|r| !r.vertical).map(|r| r.value))
        .filter(|v| v.is_finite());
    let (bottom, top) = finite.fold((0f64, 0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let (bottom, top) = match (bottom < 0.0, top > 0.0) {
        (false, false) => (0.0, 1.0),
        _ => (bottom * 1.1, top * 1.1),
    };
    let n = categories.len().max(1) as f64;
    let width = 0.8 / columns.len().max(1) as f64;
    let mut svg = String::new();
    {
        let entries = columns.len() + references.len();
        let root = SVGBackend::with_string(&mut svg, canvas(entries)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (plot_area, legend_area) = root.split_horizontally(SIZE.0);
        let plot_area = plot_area.shrink((0, 0), (SIZE.0, SIZE.1));
        let mut chart = ChartBuilder::on(&plot_area)
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
        for (c, (_, look)) in columns.iter().enumerate() {
            let (style, look) = (fill(*look), *look);
            let rects = values.iter().enumerate().filter_map(move |(i, row)| {
                let v = row.get(c).copied().filter(|v| v.is_finite())?;
                let x = i as f64 + 0.1 + width * c as f64;
                Some([(x, 0.0), (x + width, v)])
            });
            chart
                .draw_series(rects.clone().map(|r| Rectangle::new(r, style)))
                .map_err(err)?;
            if look.paper {
                chart
                    .draw_series(rects.map(|r| Rectangle::new(r, BLACK.stroke_width(1))))
                    .map_err(err)?;
            }
        }
        for r in references
            .iter()
            .filter(|r| !r.vertical && r.value.is_finite())
        {
            let line =
                DashedLineSeries::new([(0.0, r.value), (n, r.value)], 6, 4, BLACK.stroke_width(1));
            chart.draw_series(line).map_err(err)?;
        }
        let label = ("sans-serif", 11).into_font().color(&BLACK);
        for (i, category) in categories.iter().enumerate() {
            let at = chart.backend_coord(&(i as f64 + 0.5, bottom));
            plot_area
                .draw(&Text::new(
                    category.as_str(),
                    (at.0, at.1 + 6),
                    label.pos(plotters::style::text_anchor::Pos::new(
                        plotters::style::text_anchor::HPos::Center,
                        plotters::style::text_anchor::VPos::Top,
                    )),
                ))
                .map_err(err)?;
        }
        let mut entries: Vec<(&str, Swatch)> = columns
            .iter()
            .map(|(name, look)| (name.as_str(), Swatch::Bar(*look)))
            .collect();
        entries.extend(references.iter().map(|r| (r.label, Swatch::Reference)));
        legend(&legend_area, &entries)?;
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
    let looks = vec![false; series.len()];
    lines_with(title, (x_desc, y_desc), series, &looks, &[])
}

/// Lines with reference lines; a series marked in `paper` is dashed with its points
/// marked (a paper's values). Non-finite points are left out.
pub(crate) fn lines_with(
    title: &str,
    (x_desc, y_desc): (&str, &str),
    series: &[Series],
    paper: &[bool],
    references: &[RefLine],
) -> Result<String, HtmlError> {
    let finite = |p: &&(f64, f64)| p.0.is_finite() && p.1.is_finite();
    let all = || series.iter().flat_map(|s| s.points.iter().filter(finite));
    let horizontal = || {
        references
            .iter()
            .filter(|r| !r.vertical && r.value.is_finite())
    };
    let vertical = || {
        references
            .iter()
            .filter(|r| r.vertical && r.value.is_finite())
    };
    let x_lo = all()
        .map(|p| p.0)
        .chain(vertical().map(|r| r.value))
        .fold(0f64, f64::min);
    let x_hi = all()
        .map(|p| p.0)
        .chain(vertical().map(|r| r.value))
        .fold(0f64, f64::max)
        .max(x_lo + 1e-9);
    let ys = || all().map(|p| p.1).chain(horizontal().map(|r| r.value));
    let (y_lo, y_hi) = ys().fold((f64::MAX, f64::MIN), |(lo, hi), y| (lo.min(y), hi.max(y)));
    let (y_lo, y_hi) = if y_lo > y_hi {
        (0.0, 1.0)
    } else {
        (y_lo, y_hi)
    };
    let pad = ((y_hi - y_lo) * 0.1).max(y_hi.abs() * 0.01).max(1e-9);
    let (y_lo, y_hi) = (y_lo - pad, y_hi + pad);
    let mut svg = String::new();
    {
        let entries = series.len() + references.len();
        let root = SVGBackend::with_string(&mut svg, canvas(entries)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (plot_area, legend_area) = root.split_horizontally(SIZE.0);
        let plot_area = plot_area.shrink((0, 0), (SIZE.0, SIZE.1));
        let mut chart = ChartBuilder::on(&plot_area)
            .caption(title, ("sans-serif", 15))
            .margin(8)
            .x_label_area_size(32)
            .y_label_area_size(56)
            .build_cartesian_2d(x_lo..x_hi, y_lo..y_hi)
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
        let mut entries: Vec<(&str, Swatch)> = Vec::new();
        for (i, s) in series.iter().enumerate() {
            let look = Look {
                colour: s.column,
                paper: paper.get(i).copied().unwrap_or(false),
            };
            let style = colour(s.column).stroke_width(2);
            let points: Vec<(f64, f64)> = s.points.iter().filter(finite).copied().collect();
            if look.paper {
                chart
                    .draw_series(DashedLineSeries::new(points.clone(), 6, 4, style))
                    .map_err(err)?;
            } else {
                chart
                    .draw_series(LineSeries::new(points.clone(), style))
                    .map_err(err)?;
            }
            // Marks on the measured points of a short series (a paper figure's few x
            // values), not on a timeline's thousand samples.
            if points.len() <= MARKED_POINTS_MAX {
                chart
                    .draw_series(points.iter().map(|&p| Circle::new(p, 3, style.filled())))
                    .map_err(err)?;
            }
            entries.push((s.name, Swatch::Line(look)));
        }
        for r in horizontal() {
            let line = DashedLineSeries::new(
                [(x_lo, r.value), (x_hi, r.value)],
                6,
                4,
                BLACK.stroke_width(1),
            );
            chart.draw_series(line).map_err(err)?;
        }
        for r in vertical() {
            let line = DashedLineSeries::new(
                [(r.value, y_lo), (r.value, y_hi)],
                6,
                4,
                BLACK.stroke_width(1),
            );
            chart.draw_series(line).map_err(err)?;
        }
        entries.extend(references.iter().map(|r| (r.label, Swatch::Reference)));
        legend(&legend_area, &entries)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}
