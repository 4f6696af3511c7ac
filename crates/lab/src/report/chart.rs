//! Grouped horizontal bar charts drawn with `plotters` (SVG backend): one row per group, one bar
//! per series, the value written at the bar's end. The value axis turns logarithmic when the
//! values span a decade or more, so 10 Mbit/s bars stay visible beside 10 Gbit/s ones.

use crate::error::LabError;

/// A bar: series (mode) name, value, 95 % CI half-width.
pub type Bar = (String, f64, f64);
/// A group of bars under one label.
pub type Group = (String, Vec<Bar>);
use plotters::coord::ranged1d::{Ranged, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Series colours (Tableau 10): ours in blue first; the seed's series are grey.
const PALETTE: [RGBColor; 10] = [
    RGBColor(0x4e, 0x79, 0xa7),
    RGBColor(0xf2, 0x8e, 0x2b),
    RGBColor(0xe1, 0x57, 0x59),
    RGBColor(0x76, 0xb7, 0xb2),
    RGBColor(0x59, 0xa1, 0x4f),
    RGBColor(0xed, 0xc9, 0x48),
    RGBColor(0xb0, 0x7a, 0xa1),
    RGBColor(0xff, 0x9d, 0xa7),
    RGBColor(0x9c, 0x75, 0x5f),
    RGBColor(0x2f, 0x4b, 0x7c),
];
/// The seed's series in greys, told apart by shade.
const SEED_GREYS: [RGBColor; 3] =
    [RGBColor(0x9a, 0x9a, 0x9a), RGBColor(0xc8, 0xc8, 0xc8), RGBColor(0x66, 0x66, 0x66)];

/// Pixels per character of the 12 px sans-serif labels (a generous average, so labels fit).
const CHAR_W: f64 = 6.4;
/// Longest row label drawn; longer ones are cut with "…".
const MAX_LABEL_CHARS: usize = 60;
/// Width of the plotting area, px.
const PLOT_W: u32 = 560;
/// Height of one bar, px.
const BAR_H: u32 = 14;

/// How the value axis is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    Linear,
    /// Chosen when no value is negative and the largest positive one is at least 10× the
    /// smallest; a zero is then drawn as its label alone (it has no place on a log axis).
    Log,
}

/// The scale for `values`: logarithmic when none is negative and the positive ones span a
/// decade or more.
pub fn scale_for(values: &[f64]) -> Scale {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if finite.iter().any(|v| *v < 0.0) {
        return Scale::Linear;
    }
    let positive = finite.iter().filter(|v| **v > 0.0);
    let (lo, hi) = positive.fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(*v), b.max(*v)));
    if lo <= hi && hi / lo >= 10.0 { Scale::Log } else { Scale::Linear }
}

/// The legend's swatches laid out in lines no wider than `width`: (x, line) per series.
fn legend_layout(series: &[String], x0: u32, width: u32) -> (Vec<(u32, u32)>, u32) {
    let (mut x, mut line) = (x0, 0);
    let mut out = Vec::new();
    for name in series {
        // Capitals and '+' run wider than the labels' average character.
        let w = 16 + text_w(name) * 6 / 5 + 16;
        if x > x0 && x + w > width {
            x = x0;
            line += 1;
        }
        out.push((x, line));
        x += w;
    }
    (out, line + 1)
}

fn cut(label: &str) -> String {
    if label.chars().count() <= MAX_LABEL_CHARS {
        label.to_string()
    } else {
        let mut s: String = label.chars().take(MAX_LABEL_CHARS - 1).collect();
        s.push('…');
        s
    }
}

/// An axis tick without trailing zeros: 0.1, 1, 2.5, 1000.
fn tick(v: f64) -> String {
    if v.abs() >= 1e6 {
        return format!("{v:.0e}");
    }
    let s = format!("{v:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.to_string() }
}

/// A bar's value: counts as integers, others with about three significant digits.
fn value_label(v: f64) -> String {
    if v.is_finite() && v == v.round() && v.abs() < 1e9 {
        format!("{v:.0}")
    } else {
        super::number::num(v)
    }
}

/// Text width estimate, px, for the 12 px labels.
fn text_w(s: &str) -> u32 {
    (s.chars().count() as f64 * CHAR_W).ceil() as u32
}

/// plotters draws SVG text at size / 1.24: this gives text of `px` pixels.
fn font(px: f64) -> FontDesc<'static> {
    ("sans-serif", px * 1.24).into_font()
}

/// The seed's series ("seed", "seed Ethernet", ...) in grey, ours in the palette's order.
fn colour(series: &[String], name: &str) -> RGBColor {
    let seed = name.starts_with("seed");
    let k = series
        .iter()
        .filter(|s| s.starts_with("seed") == seed)
        .position(|s| s == name)
        .unwrap_or(0);
    if seed { SEED_GREYS[k % SEED_GREYS.len()] } else { PALETTE[k % PALETTE.len()] }
}

fn series_of(groups: &[Group]) -> Vec<String> {
    let mut s: Vec<String> = Vec::new();
    for (_, bars) in groups {
        for (name, _, _) in bars {
            if !s.contains(name) {
                s.push(name.clone());
            }
        }
    }
    s
}

fn draw_err(e: impl std::fmt::Display) -> LabError {
    LabError::parse("chart (drawing)", e.to_string())
}

/// A grouped horizontal bar chart as SVG text; `unit` labels the value axis.
pub fn bar_chart(title: &str, unit: &str, groups: &[Group]) -> Result<String, LabError> {
    let series = series_of(groups);
    let values: Vec<f64> = groups.iter().flat_map(|(_, b)| b.iter().map(|(_, v, _)| *v)).collect();
    let scale = scale_for(&values);
    let labels: Vec<String> = groups.iter().map(|(l, _)| cut(l)).collect();
    let label_w = labels.iter().map(|l| text_w(l)).max().unwrap_or(40).max(40) + 14;
    let row_h = BAR_H * series.len().max(1) as u32 + 10;
    let width = label_w + PLOT_W + 80;
    let (legend, legend_lines) = legend_layout(&series, label_w, width - 10);
    let legend_h = 18 * legend_lines + 4;
    let (top, bottom) = (34 + legend_h, 52);
    let height = top + row_h * groups.len().max(1) as u32 + bottom;
    let axis = match scale {
        Scale::Log => format!("{unit} (log scale)"),
        Scale::Linear => unit.to_string(),
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        root.draw(&Text::new(title.to_string(), (10, 8), font(15.0).style(FontStyle::Bold)))
            .map_err(draw_err)?;
        // The legend under the title, in as many lines as it needs.
        for (name, (x, line)) in series.iter().zip(&legend) {
            let (x, y) = (*x as i32, 32 + 18 * *line as i32);
            root.draw(&Rectangle::new([(x, y), (x + 12, y + 12)], colour(&series, name).filled()))
                .map_err(draw_err)?;
            root.draw(&Text::new(name.clone(), (x + 16, y), font(12.0))).map_err(draw_err)?;
        }
        let area = root.margin(top, 0, 0, 80);
        let rows = groups.len().max(1) as f64;
        let mut cb = ChartBuilder::on(&area);
        cb.x_label_area_size(bottom).y_label_area_size(label_w);
        let finite = values.iter().copied().filter(|v| v.is_finite());
        let (lo, hi) = finite.fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(v), b.max(v)));
        let (lo, hi) = if lo > hi { (0.0, 1.0) } else { (lo, hi) };
        let ctx = Ctx { groups, series: &series, labels: &labels, axis: &axis, row_h, rows };
        match scale {
            Scale::Log => {
                let lo = values.iter().copied().filter(|v| *v > 0.0).fold(hi, f64::min);
                let lo = 10f64.powf(lo.log10().floor());
                let hi = 10f64.powf((hi * 1.5).log10().ceil());
                // A labelled tick at every power of ten, the axis' ends included.
                let decades = (hi / lo).log10().round() as i32;
                let ticks: Vec<f64> = (0..=decades).map(|i| lo * 10f64.powi(i)).collect();
                let x = (lo..hi).log_scale().with_key_points(ticks);
                let chart = cb.build_cartesian_2d(x, 0.0..rows).map_err(draw_err)?;
                draw(chart, &root, lo, &ctx)?;
            }
            Scale::Linear => {
                let lo = lo.min(0.0) * 1.1;
                let hi = if hi <= 0.0 { 1.0 } else { hi * 1.2 };
                let chart = cb.build_cartesian_2d(lo..hi, 0.0..rows).map_err(draw_err)?;
                draw(chart, &root, 0.0, &ctx)?;
            }
        }
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

/// What `draw` needs besides the chart.
struct Ctx<'a> {
    groups: &'a [Group],
    series: &'a [String],
    labels: &'a [String],
    axis: &'a str,
    row_h: u32,
    rows: f64,
}

/// Mesh, bars, value labels and row labels on a chart whose x axis is `X`; bars start at `base`.
fn draw<'b, XR>(
    mut chart: ChartContext<'b, SVGBackend<'b>, Cartesian2d<XR, RangedCoordf64>>,
    root: &DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    base: f64,
    c: &Ctx<'_>,
) -> Result<(), LabError>
where
    XR: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_desc(c.axis)
        .x_labels(8)
        .x_label_formatter(&|v| tick(*v))
        .axis_desc_style(font(13.0))
        .label_style(font(12.0))
        .light_line_style(RGBColor(0xee, 0xee, 0xee))
        .bold_line_style(RGBColor(0xdd, 0xdd, 0xdd))
        .draw()
        .map_err(draw_err)?;
    let n = c.series.len().max(1) as f64;
    let pad = 5.0 / f64::from(c.row_h);
    let bar = (1.0 - 2.0 * pad) / n;
    for (g, (_, bars)) in c.groups.iter().enumerate() {
        // Row 0 at the top: y runs upwards in plotters.
        let row_top = c.rows - g as f64;
        for (name, v, _) in bars {
            let k = c.series.iter().position(|s| s == name).unwrap_or(0);
            let y1 = row_top - pad - bar * k as f64;
            let y0 = y1 - bar;
            let text = value_label(*v);
            let shown = v.is_finite() && (*v > base || base == 0.0);
            if shown {
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(base, y0), (*v, y1)],
                        colour(c.series, name).filled(),
                    )))
                    .map_err(draw_err)?;
            }
            let at = if shown { (*v).max(base) } else { base };
            let (px, py) = chart.backend_coord(&(at, (y0 + y1) / 2.0));
            let style = font(11.0)
                .color(&RGBColor(0x33, 0x33, 0x33))
                .pos(Pos::new(HPos::Left, VPos::Center));
            root.draw(&Text::new(text, (px + 4, py), style)).map_err(draw_err)?;
        }
        let (_, py) = chart.backend_coord(&(base, row_top - 0.5));
        let px0 = chart.plotting_area().get_pixel_range().0.start;
        let right = TextStyle::from(font(12.0)).pos(Pos::new(HPos::Right, VPos::Center));
        root.draw(&Text::new(c.labels[g].clone(), (px0 - 8, py), right)).map_err(draw_err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_scale_when_values_span_decades() {
        assert_eq!(scale_for(&[9.5, 94.3, 17929.0]), Scale::Log);
        assert_eq!(scale_for(&[8.7, 9.5]), Scale::Linear);
        assert_eq!(scale_for(&[-6.4, 0.8, 37.8]), Scale::Linear);
        assert_eq!(scale_for(&[]), Scale::Linear);
        // A failed run's 0 Mbit/s does not force a linear axis on the others.
        assert_eq!(scale_for(&[0.0, 95.3, 4541.0]), Scale::Log);
        assert_eq!(scale_for(&[0.0, 0.0]), Scale::Linear);
    }

    #[test]
    fn a_long_legend_wraps_within_the_chart() {
        let names: Vec<String> =
            (0..7).map(|i| format!("ESP AES-CBC+HMAC-SHA1 mode {i}")).collect();
        let (pos, lines) = legend_layout(&names, 100, 700);
        assert!(lines > 1);
        assert!(pos.iter().zip(&names).all(|((x, _), n)| x + 16 + text_w(n) * 6 / 5 <= 700));
    }

    #[test]
    fn every_bar_is_drawn_on_a_log_axis() {
        let g = |l: &str, v: f64| (l.to_string(), vec![("ours".to_string(), v, 0.0)]);
        let svg = bar_chart(
            "throughput",
            "Mbit/s",
            &[g("10mbit", 9.49), g("100mbit", 94.3), g("unlimited", 17929.0)],
        )
        .expect("chart");
        assert!(svg.contains("log scale"), "{svg}");
        // Background, legend swatch and three bars; each bar at least a few pixels wide.
        let widths: Vec<f64> = svg
            .split("<rect")
            .skip(1)
            .filter_map(|r| r.split("width=\"").nth(1)?.split('"').next()?.parse().ok())
            .collect();
        assert!(widths.len() >= 5, "{widths:?}");
        assert!(widths.iter().all(|w| *w >= 5.0), "a bar vanished: {widths:?}");
        for l in ["10mbit", "100mbit", "unlimited", "9.49", "94.3", "17929"] {
            assert!(svg.contains(l), "{l} missing");
        }
    }
}
