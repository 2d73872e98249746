//! Line charts of a metric against step, one line per run, as SVG or PNG (plotters).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::prelude::*;
use polars::prelude::{DataFrame, DataType, PolarsError};

use crate::columns::FieldValues;
use crate::compute::{rolling_mean, RESOLVED_DEVICE};

/// One run's line.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text: the run and its device.
    pub label: String,
    /// (step, value) points, in step order; null values are left out by the caller.
    pub points: Vec<(f64, f64)>,
}

/// What the chart shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// Multiply values by this for display (100 for MFU shown in percent).
    pub y_scale: f64,
    pub series: Vec<Series>,
    pub width: u32,
    pub height: u32,
}

/// Image formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFormat {
    Svg,
    Png,
}

impl ImageFormat {
    pub fn from_path(path: &Path) -> Option<ImageFormat> {
        match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "svg" => Some(ImageFormat::Svg),
            "png" => Some(ImageFormat::Png),
            _ => None,
        }
    }
}

/// Errors drawing a chart.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    #[error("no data to plot: every value of the metric is null")]
    Empty,
    #[error("no font found to draw text: install DejaVu Sans (Debian: fonts-dejavu-core) or set MFU_FONT to a .ttf file")]
    NoFont,
    #[error("drawing failed: {0}")]
    Draw(String),
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    Polars(#[from] PolarsError),
}

/// Gathers the lines of a chart from enriched frames: one line per run key, in order of first
/// appearance, labelled with the devices the run's rows resolved to.
#[derive(Debug, Default)]
pub struct Lines {
    order: Vec<String>,
    lines: HashMap<String, Line>,
}

/// The run each row of `frame` belongs to: its `key_column` value as text ("(none)" where null), or
/// `fallback_key` for every row when there is no key column. Charts draw one line per run.
pub fn run_keys(
    frame: &DataFrame,
    key_column: Option<&str>,
    fallback_key: &str,
) -> Result<Vec<String>, PolarsError> {
    Ok(match key_column {
        Some(c) => frame
            .column(c)?
            .cast(&DataType::String)?
            .str()?
            .iter()
            .map(|v| v.unwrap_or("(none)").to_string())
            .collect(),
        None => vec![fallback_key.to_string(); frame.height()],
    })
}

/// One run's (step, value) points and the devices it ran on.
type Line = (Vec<(f64, f64)>, Vec<String>);

impl Lines {
    /// Adds one enriched frame's rows of `metric` (a column of mfu's): keyed by `key_column`'s values,
    /// or all under `fallback_key` when there is none; with `window`, the rolling mean over each run.
    /// Rows without a finite value are left out; x is the step, else the row number.
    pub fn add(
        &mut self,
        frame: &DataFrame,
        values: &FieldValues,
        key_column: Option<&str>,
        fallback_key: &str,
        metric: &str,
        window: Option<usize>,
    ) -> Result<(), PlotError> {
        let keys = run_keys(frame, key_column, fallback_key)?;
        let metric: Vec<Option<f64>> = frame
            .column(metric)?
            .cast(&DataType::Float64)?
            .f64()?
            .iter()
            .collect();
        let metric = match window {
            Some(n) => rolling_mean(&metric, &values.runs, n),
            None => metric,
        };
        let devices = frame.column(RESOLVED_DEVICE)?.str()?;
        for (row, device) in devices.iter().enumerate() {
            let key = &keys[row];
            let (points, devs) = self.lines.entry(key.clone()).or_insert_with(|| {
                self.order.push(key.clone());
                (Vec::new(), Vec::new())
            });
            let device = device.unwrap_or("unknown device");
            if !devs.iter().any(|d| d == device) {
                devs.push(device.to_string());
            }
            let x = values.steps[row].unwrap_or(row as f64 + 1.0);
            if let Some(y) = metric[row].filter(|y| y.is_finite()) {
                points.push((x, y));
            }
        }
        Ok(())
    }

    /// The lines, each sorted by step, labelled "key (device, ...)".
    pub fn into_series(mut self) -> Vec<Series> {
        self.order
            .iter()
            .map(|key| {
                let (mut points, devices) =
                    self.lines.remove(key).expect("ordered keys have lines");
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
                Series {
                    label: format!("{key} ({})", devices.join(", ")),
                    points,
                }
            })
            .collect()
    }
}

/// Font files tried, in order, after `$MFU_FONT`.
const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
    "/usr/local/share/fonts/DejaVuSans.ttf",
    "/System/Library/Fonts/Supplemental/Arial.ttf",
    "/Library/Fonts/Arial.ttf",
    "C:\\Windows\\Fonts\\arial.ttf",
];

/// Distinct, print-safe line colours (the Tableau 10 palette).
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// Registers a sans-serif font with plotters once per process.
fn ensure_font() -> Result<(), PlotError> {
    static FONT: OnceLock<bool> = OnceLock::new();
    let ok = *FONT.get_or_init(|| {
        let candidates = std::env::var_os("MFU_FONT")
            .map(PathBuf::from)
            .into_iter()
            .chain(FONT_PATHS.iter().map(PathBuf::from));
        for path in candidates {
            if let Ok(bytes) = std::fs::read(&path) {
                // plotters keeps fonts for the life of the process.
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
                    return true;
                }
            }
        }
        false
    });
    if ok {
        Ok(())
    } else {
        Err(PlotError::NoFont)
    }
}

/// Draws `chart` into `path` in `format`, atomically: into a temporary file beside it, then renamed. Without
/// `force` an existing `path` is not replaced.
pub fn draw(chart: &Chart, path: &Path, format: ImageFormat, force: bool) -> Result<(), PlotError> {
    let io = |source| PlotError::Io {
        path: path.display().to_string(),
        source,
    };
    let bytes = render_bytes(chart, format)?;
    crate::write::atomic::write_bytes(path, &bytes, force).map_err(io)
}

/// The chart as SVG text or PNG bytes.
pub fn render_bytes(chart: &Chart, format: ImageFormat) -> Result<Vec<u8>, PlotError> {
    ensure_font()?;
    let points = chart.series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    let mut any = false;
    for &(x, y) in points {
        any = true;
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y * chart.y_scale);
        y1 = y1.max(y * chart.y_scale);
    }
    if !any {
        return Err(PlotError::Empty);
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    // Start MFU and throughput at zero so runs compare by height; pad the top.
    let y_lo = y0.min(0.0);
    let y_hi = if y1 > y_lo {
        y1 + (y1 - y_lo) * 0.08
    } else {
        y_lo + 1.0
    };
    let size = (chart.width, chart.height);
    let err = |e: &dyn std::fmt::Display| PlotError::Draw(e.to_string());
    match format {
        ImageFormat::Svg => {
            let mut svg = String::new();
            {
                let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
                render(&root, chart, (x0, x1), (y_lo, y_hi)).map_err(|e| err(&e))?;
                root.present().map_err(|e| err(&e))?;
            }
            Ok(svg.into_bytes())
        }
        ImageFormat::Png => {
            let mut rgb = vec![0u8; size.0 as usize * size.1 as usize * 3];
            {
                let root = BitMapBackend::with_buffer(&mut rgb, size).into_drawing_area();
                render(&root, chart, (x0, x1), (y_lo, y_hi)).map_err(|e| err(&e))?;
                root.present().map_err(|e| err(&e))?;
            }
            let mut png = Vec::new();
            {
                let mut encoder = ::png::Encoder::new(&mut png, size.0, size.1);
                encoder.set_color(::png::ColorType::Rgb);
                encoder.set_depth(::png::BitDepth::Eight);
                let mut w = encoder.write_header().map_err(|e| err(&e))?;
                w.write_image_data(&rgb).map_err(|e| err(&e))?;
            }
            Ok(png)
        }
    }
}

fn render<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    chart: &Chart,
    x: (f64, f64),
    y: (f64, f64),
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let mut ctx = ChartBuilder::on(root)
        .caption(&chart.title, ("sans-serif", 26))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(72)
        .build_cartesian_2d(x.0..x.1, y.0..y.1)?;
    let whole = |v: &f64| {
        if v.fract() == 0.0 {
            format!("{v:.0}")
        } else {
            format!("{v}")
        }
    };
    let y_span = y.1 - y.0;
    let y_text = move |v: &f64| {
        if y_span >= 10.0 {
            format!("{v:.0}")
        } else {
            format!("{v:.2}")
        }
    };
    ctx.configure_mesh()
        .x_desc(&chart.x_label)
        .y_desc(&chart.y_label)
        .x_label_formatter(&whole)
        .y_label_formatter(&y_text)
        .axis_desc_style(("sans-serif", 18))
        .label_style(("sans-serif", 15))
        .bold_line_style(RGBColor(220, 220, 220))
        .light_line_style(RGBColor(246, 246, 246))
        .draw()?;
    for (i, s) in chart.series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()].to_rgba();
        let label = if s.points.is_empty() {
            format!("{} - no values", s.label)
        } else {
            s.label.clone()
        };
        let scale = chart.y_scale;
        ctx.draw_series(LineSeries::new(
            s.points.iter().map(|&(px, py)| (px, py * scale)),
            color.stroke_width(2),
        ))?
        .label(label)
        .legend(move |(lx, ly)| {
            PathElement::new(vec![(lx, ly), (lx + 24, ly)], color.stroke_width(3))
        });
    }
    ctx.configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(180, 180, 180))
        .label_font(("sans-serif", 15))
        .draw()?;
    Ok(())
}
