//! Plots of sweeps: Kpps and wire Mbps against frame size, with the line rate when known.

use std::path::Path;
use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::ReportError;
use crate::rate::{LinkSpeed, line_rate_pps};
use crate::result::SweepResult;

const SIZE: (u32, u32) = (1000, 900);
const FONT: &str = "sans-serif";

/// The output format, chosen by the file's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlotFormat {
    Svg,
    Png,
}

impl PlotFormat {
    pub fn from_path(path: &Path) -> Result<Self, ReportError> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("svg") => Ok(PlotFormat::Svg),
            Some("png") => Ok(PlotFormat::Png),
            _ => Err(ReportError::PlotFormat {
                path: path.to_path_buf(),
            }),
        }
    }
}

/// (size, median, min, max), sorted by size.
type Point = (usize, f64, f64, f64);

struct Series {
    name: String,
    /// In Kpps, or in Mbps for the wire panel.
    points: Vec<Point>,
}

/// Draws one sweep to `path` (`.svg` or `.png`): Kpps above, wire Mbps below, the min..max of
/// the repetitions as bars, and the line-rate curve when the link speed is known.
pub fn plot_sweep(result: &SweepResult, path: &Path) -> Result<(), ReportError> {
    let c = &result.context;
    let title = format!(
        "linerate sweep: {} {} on {} ({}), {}",
        c.backend, c.mode, c.interface, c.hostname, c.os
    );
    let series = vec![series_of(&series_name(c), result)];
    let links: Vec<u64> = c.link_speed_mbps.into_iter().collect();
    render(path, &title, &series, &links)
}

/// Draws several sweeps on the same axes, one colour each, named by `names`.
pub fn plot_compare(
    results: &[SweepResult],
    names: &[String],
    path: &Path,
) -> Result<(), ReportError> {
    if names.len() != results.len() {
        return Err(ReportError::NameCount {
            results: results.len(),
            names: names.len(),
        });
    }
    let series: Vec<Series> = names
        .iter()
        .zip(results)
        .map(|(name, r)| series_of(name, r))
        .collect();
    let mut links: Vec<u64> = results
        .iter()
        .filter_map(|r| r.context.link_speed_mbps)
        .collect();
    links.sort_unstable();
    links.dedup();
    render(
        path,
        &format!("linerate compare: {}", names.join(" vs ")),
        &series,
        &links,
    )
}

/// Draws the backends of one `sweep --backends` run on the same axes, one colour each, each
/// named by its backend, mode, host and driver.
pub fn plot_backends(sweeps: &crate::BackendSweeps, path: &Path) -> Result<(), ReportError> {
    let series: Vec<Series> = sweeps
        .sweeps
        .iter()
        .map(|r| series_of(&series_name(&r.context), r))
        .collect();
    let mut links: Vec<u64> = sweeps
        .sweeps
        .iter()
        .filter_map(|r| r.context.link_speed_mbps)
        .collect();
    links.sort_unstable();
    links.dedup();
    let title = match sweeps.sweeps.first() {
        Some(c) => format!(
            "linerate sweep: {} on {} ({}), {}",
            sweeps.labels().join(" vs "),
            c.context.driver.as_deref().unwrap_or("driver n/a"),
            c.context.hostname,
            c.context.os
        ),
        None => "linerate sweep".into(),
    };
    render(path, &title, &series, &links)
}

/// A sweep's legend: what was measured (backend and mode, the host, the driver), not the
/// interface's name, which on a lab is generated anew each run.
fn series_name(c: &crate::Context) -> String {
    // live's mode already starts with its name ("live (redirect)").
    let what = if c.mode.starts_with(&c.backend) {
        c.mode.clone()
    } else {
        format!("{} {}", c.backend, c.mode)
    };
    format!(
        "{what} · {} · {}",
        c.hostname,
        c.driver.as_deref().unwrap_or("driver n/a")
    )
}

fn series_of(name: &str, result: &SweepResult) -> Series {
    let mut points: Vec<_> = result
        .points
        .iter()
        .map(|p| (p.size, p.kpps_median(), p.kpps_min(), p.kpps_max()))
        .collect();
    points.sort_by_key(|p| p.0);
    Series {
        name: name.to_string(),
        points,
    }
}

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The embedded font makes text independent of what fonts the machine has installed.
        let _ = plotters::style::register_font(
            FONT,
            FontStyle::Normal,
            epaint_default_fonts::UBUNTU_LIGHT,
        );
    });
}

fn render(path: &Path, title: &str, series: &[Series], links: &[u64]) -> Result<(), ReportError> {
    let format = PlotFormat::from_path(path)?;
    register_font();
    let failed = |message: String| ReportError::Plot {
        path: path.to_path_buf(),
        message,
    };
    match format {
        PlotFormat::Svg => {
            let root = SVGBackend::new(path, SIZE).into_drawing_area();
            draw(&root, title, series, links).map_err(|e| failed(e.to_string()))?;
            root.present().map_err(|e| failed(e.to_string()))?;
        }
        PlotFormat::Png => {
            let root = BitMapBackend::new(path, SIZE).into_drawing_area();
            draw(&root, title, series, links).map_err(|e| failed(e.to_string()))?;
            root.present().map_err(|e| failed(e.to_string()))?;
        }
    }
    // The backends report some write failures only on drop; check that the file is really there.
    match std::fs::metadata(path) {
        Ok(m) if m.len() > 0 => Ok(()),
        Ok(_) => Err(failed("the file is empty after drawing".into())),
        Err(e) => Err(failed(e.to_string())),
    }
}

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    series: &[Series],
    links: &[u64],
) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let body = root.titled(title, (FONT, 22))?;
    let panels = body.split_evenly((2, 1));
    let max_size = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .max()
        .unwrap_or(1518);
    let min_size = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .min()
        .unwrap_or(64);
    let x_max = (max_size as f64 * 1.05).max(100.0);

    // Kpps panel: the line-rate curve falls with size, the measured points under it.
    let line_kpps = |size: usize, mbps: u64| line_rate_pps(size, mbps) / 1000.0;
    let measured_max = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.3))
        .fold(0.0, f64::max);
    let line_max = links
        .iter()
        .map(|&m| line_kpps(min_size, m))
        .fold(0.0, f64::max);
    let curve_sizes: Vec<usize> = (min_size..=max_size).step_by(4).chain([max_size]).collect();
    let kpps_lines: Vec<(String, Vec<(f64, f64)>)> = links
        .iter()
        .map(|&m| {
            let curve = curve_sizes
                .iter()
                .map(|&s| (s as f64, line_kpps(s, m)))
                .collect();
            (format!("line rate {}", LinkSpeed::from_mbps(m)), curve)
        })
        .collect();
    panel(
        &panels[0],
        "Max rate (Kpps)",
        SeriesLabelPosition::UpperRight,
        x_max,
        measured_max.max(line_max),
        series,
        &kpps_lines,
    )?;

    // Mbps panel: on the wire the line rate is flat, so the gap to it reads directly.
    let mbps_series: Vec<Series> = series.iter().map(on_the_wire).collect();
    let mbps_measured = mbps_series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.3))
        .fold(0.0, f64::max);
    let mbps_lines: Vec<(String, Vec<(f64, f64)>)> = links
        .iter()
        .map(|&m| {
            (
                format!("line rate {}", LinkSpeed::from_mbps(m)),
                vec![(min_size as f64, m as f64), (max_size as f64, m as f64)],
            )
        })
        .collect();
    let mbps_line_max = links.iter().map(|&m| m as f64).fold(0.0, f64::max);
    panel(
        &panels[1],
        "Max rate (Mbps on the wire)",
        // Rates climb towards the flat line rate at large sizes, so the upper right is taken.
        SeriesLabelPosition::LowerRight,
        x_max,
        mbps_measured.max(mbps_line_max),
        &mbps_series,
        &mbps_lines,
    )?;
    Ok(())
}

/// A series' points in Mbps on the wire instead of Kpps.
fn on_the_wire(s: &Series) -> Series {
    let to_mbps = |size: usize, kpps: f64| crate::rate::wire_mbps(size, kpps);
    let points = s
        .points
        .iter()
        .map(|&(size, med, lo, hi)| {
            (
                size,
                to_mbps(size, med),
                to_mbps(size, lo),
                to_mbps(size, hi),
            )
        })
        .collect();
    Series {
        name: s.name.clone(),
        points,
    }
}

fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    y_desc: &str,
    legend_at: SeriesLabelPosition,
    x_max: f64,
    y_max: f64,
    series: &[Series],
    lines: &[(String, Vec<(f64, f64)>)],
) -> DrawResult<DB> {
    let y_top = if y_max > 0.0 { y_max * 1.1 } else { 1.0 };
    let mut chart = ChartBuilder::on(area)
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(80)
        .build_cartesian_2d(0.0..x_max, 0.0..y_top)?;
    chart
        .configure_mesh()
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| format!("{v:.0}"))
        .x_desc("frame size (B, FCS included)")
        .y_desc(y_desc)
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 17))
        .draw()?;

    for (i, (name, curve)) in lines.iter().enumerate() {
        let style = ShapeStyle::from(&BLACK.mix(0.6 - 0.15 * (i % 3) as f64)).stroke_width(2);
        chart
            .draw_series(DashedLineSeries::new(curve.iter().copied(), 8, 6, style))?
            .label(name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], style));
    }
    for (i, Series { name, points }) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let style = ShapeStyle::from(&color).stroke_width(2);
        chart
            .draw_series(LineSeries::new(
                points.iter().map(|&(size, med, _, _)| (size as f64, med)),
                style,
            ))?
            .label(name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], style));
        chart.draw_series(
            points
                .iter()
                .map(|&(size, med, _, _)| Circle::new((size as f64, med), 4, color.filled())),
        )?;
        // The spread of the repetitions: a flat bar means a steady machine.
        chart.draw_series(points.iter().map(|&(size, _, lo, hi)| {
            PathElement::new(vec![(size as f64, lo), (size as f64, hi)], style)
        }))?;
    }
    chart
        .configure_series_labels()
        .position(legend_at)
        .label_font((FONT, 15))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

/// One line of a [`Panel`]: points (x, y) joined, marked with dots unless dashed (a reference
/// such as the line rate).
#[derive(Debug, Clone, PartialEq)]
pub struct Curve {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub dashed: bool,
}

/// One chart of a figure: its axes and its curves.
#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    pub x_desc: String,
    pub y_desc: String,
    pub curves: Vec<Curve>,
}

/// Draws panels one above the other to `path` (`.svg` or `.png`): the figures of a benchmark
/// that are not a sweep (RFC 2544 throughput against size, loss against offered load).
pub fn plot_panels(path: &Path, title: &str, panels: &[Panel]) -> Result<(), ReportError> {
    let format = PlotFormat::from_path(path)?;
    register_font();
    let failed = |message: String| ReportError::Plot {
        path: path.to_path_buf(),
        message,
    };
    let height = 450 * panels.len().max(1) as u32;
    match format {
        PlotFormat::Svg => {
            let root = SVGBackend::new(path, (SIZE.0, height)).into_drawing_area();
            draw_panels(&root, title, panels).map_err(|e| failed(e.to_string()))?;
            root.present().map_err(|e| failed(e.to_string()))?;
        }
        PlotFormat::Png => {
            let root = BitMapBackend::new(path, (SIZE.0, height)).into_drawing_area();
            draw_panels(&root, title, panels).map_err(|e| failed(e.to_string()))?;
            root.present().map_err(|e| failed(e.to_string()))?;
        }
    }
    match std::fs::metadata(path) {
        Ok(m) if m.len() > 0 => Ok(()),
        Ok(_) => Err(failed("the file is empty after drawing".into())),
        Err(e) => Err(failed(e.to_string())),
    }
}

fn draw_panels<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    panels: &[Panel],
) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let body = root.titled(title, (FONT, 22))?;
    let areas = body.split_evenly((panels.len().max(1), 1));
    for (area, p) in areas.iter().zip(panels) {
        let all = || p.curves.iter().flat_map(|c| c.points.iter());
        let x_max = all().map(|q| q.0).fold(0.0, f64::max);
        let y_max = all().map(|q| q.1).fold(0.0, f64::max);
        let x_top = if x_max > 0.0 { x_max * 1.05 } else { 1.0 };
        let y_top = if y_max > 0.0 { y_max * 1.1 } else { 1.0 };
        let mut chart = ChartBuilder::on(area)
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(80)
            .build_cartesian_2d(0.0..x_top, 0.0..y_top)?;
        chart
            .configure_mesh()
            .x_desc(p.x_desc.as_str())
            .y_desc(p.y_desc.as_str())
            .label_style((FONT, 15))
            .axis_desc_style((FONT, 17))
            .draw()?;
        for (i, c) in p.curves.iter().enumerate() {
            if c.dashed {
                let style = ShapeStyle::from(&BLACK.mix(0.6)).stroke_width(2);
                chart
                    .draw_series(DashedLineSeries::new(c.points.iter().copied(), 8, 6, style))?
                    .label(c.name.clone())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], style));
                continue;
            }
            let color = Palette99::pick(i).to_rgba();
            let style = ShapeStyle::from(&color).stroke_width(2);
            chart
                .draw_series(LineSeries::new(c.points.iter().copied(), style))?
                .label(c.name.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], style));
            chart.draw_series(c.points.iter().map(|&q| Circle::new(q, 4, color.filled())))?;
        }
        if !p.curves.is_empty() {
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .label_font((FONT, 15))
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .draw()?;
        }
    }
    Ok(())
}
