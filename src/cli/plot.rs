//! `mfu plot`: a metric against step, one line per run.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::{Args, ValueEnum};

use mfu::compute::{rolling_mean, MFU_FWD_BWD, MFU_WALL_CLOCK, RESOLVED_DEVICE, TOKENS_PER_SECOND};
use mfu::plot::{draw, Chart, ImageFormat, Series};

use super::source::SourceArgs;

/// Plot MFU or throughput against step, one line per run, as SVG or PNG.
///
/// Reads raw logs (enriching them with the same flags as `mfu enrich`) or tables mfu already enriched.
/// Each run (a value of --by; default the run_id field, else each input file) is one line, labelled with
/// its device.
///
/// Examples:
///   mfu plot fixtures/runs.jsonl -o mfu.svg
///   mfu plot enriched.parquet -o tps.png --metric tokens_per_second --window 20
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct PlotArgs {
    #[command(flatten)]
    pub source: SourceArgs,

    /// The image to write: .svg or .png.
    #[arg(short, long, value_name = "FILE.svg|FILE.png")]
    pub output: PathBuf,

    /// What to plot.
    #[arg(long, value_enum, default_value_t = Metric::MfuWallClock)]
    pub metric: Metric,

    /// Group rows into lines by this column (or a field name such as run_id).
    #[arg(long = "by", value_name = "KEY")]
    pub by: Option<String>,

    /// Plot the mean over each row and the N - 1 rows before it in the run instead of raw values.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub window: Option<u64>,

    /// Chart title (default: the metric).
    #[arg(long)]
    pub title: Option<String>,

    /// Image width and height in pixels.
    #[arg(long, value_name = "W", default_value_t = 1100)]
    pub width: u32,

    #[arg(long, value_name = "H", default_value_t = 650)]
    pub height: u32,

    /// Replace FILE if it exists.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum Metric {
    MfuWallClock,
    MfuFwdBwd,
    TokensPerSecond,
}

impl Metric {
    fn column(self) -> &'static str {
        match self {
            Metric::MfuWallClock => MFU_WALL_CLOCK,
            Metric::MfuFwdBwd => MFU_FWD_BWD,
            Metric::TokensPerSecond => TOKENS_PER_SECOND,
        }
    }

    fn describe(self) -> (&'static str, &'static str, f64) {
        match self {
            Metric::MfuWallClock => ("MFU (wall clock)", "MFU, % of dense peak", 100.0),
            Metric::MfuFwdBwd => (
                "MFU (forward + backward time)",
                "MFU, % of dense peak",
                100.0,
            ),
            Metric::TokensPerSecond => ("Throughput", "tokens per second", 1.0),
        }
    }
}

/// One run's points and the devices it ran on.
type Line = (Vec<(f64, f64)>, Vec<String>);

pub fn run(args: &PlotArgs) -> anyhow::Result<ExitCode> {
    let format = ImageFormat::from_path(&args.output).with_context(|| {
        format!(
            "{}: the plot must be a .svg or .png file",
            args.output.display()
        )
    })?;
    if !args.force && args.output.exists() {
        bail!(
            "{}: already exists; add --force to replace it",
            args.output.display()
        );
    }
    let pipeline = args.source.pipeline(None)?;
    let results = pipeline.for_each_input(|_, input| pipeline.load(input, true))?;
    let mut failed = false;
    // Lines in order of first appearance: label → points.
    let mut order: Vec<String> = Vec::new();
    let mut lines: HashMap<String, Line> = HashMap::new();
    for (input, result) in pipeline.inputs.iter().zip(results) {
        let loaded = match result {
            Ok(l) => l,
            Err(e) => {
                eprintln!("mfu: error: {e:#}");
                failed = true;
                continue;
            }
        };
        let frame = &loaded.enriched.frame;
        let values = &loaded.enriched.values;
        let key_column = match (
            loaded.column_for(args.by.as_deref().unwrap_or("run_id")),
            &args.by,
        ) {
            (Some(c), _) => Some(c),
            (None, Some(key)) => bail!("--by {key}: {} has no such column or field", input.display),
            (None, None) => None,
        };
        let keys: Vec<String> = match &key_column {
            Some(c) => frame
                .column(c)?
                .cast(&polars::prelude::DataType::String)?
                .str()?
                .iter()
                .map(|v| v.unwrap_or("(none)").to_string())
                .collect(),
            None => vec![input.display.clone(); frame.height()],
        };
        let metric: Vec<Option<f64>> = frame
            .column(args.metric.column())?
            .cast(&polars::prelude::DataType::Float64)?
            .f64()?
            .iter()
            .collect();
        let metric = match args.window {
            Some(n) => rolling_mean(&metric, &values.runs, n as usize),
            None => metric,
        };
        let devices: Vec<Option<String>> = frame
            .column(RESOLVED_DEVICE)?
            .str()?
            .iter()
            .map(|d| d.map(str::to_string))
            .collect();
        for row in 0..frame.height() {
            let key = &keys[row];
            let (points, devs) = lines.entry(key.clone()).or_insert_with(|| {
                order.push(key.clone());
                (Vec::new(), Vec::new())
            });
            let device = devices[row]
                .clone()
                .unwrap_or_else(|| "unknown device".into());
            if !devs.contains(&device) {
                devs.push(device);
            }
            let x = values.steps[row].unwrap_or(row as f64 + 1.0);
            if let Some(y) = metric[row].filter(|y| y.is_finite()) {
                points.push((x, y));
            }
        }
    }
    let series: Vec<Series> = order
        .iter()
        .map(|key| {
            let (mut points, devices) = lines.remove(key).expect("ordered keys have lines");
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series {
                label: format!("{key} ({})", devices.join(", ")),
                points,
            }
        })
        .collect();
    let (name, y_label, y_scale) = args.metric.describe();
    let title = args.title.clone().unwrap_or_else(|| match args.window {
        Some(n) => format!("{name} by step, mean over {n} steps"),
        None => format!("{name} by step"),
    });
    let chart = Chart {
        title,
        x_label: "step".into(),
        y_label: y_label.into(),
        y_scale,
        series,
        width: args.width,
        height: args.height,
    };
    draw(&chart, &args.output, format, args.force)?;
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
