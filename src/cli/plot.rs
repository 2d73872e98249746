//! `mfu plot`: a metric against step, one line per run.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::{Args, ValueEnum};

use mfu::compute::{MFU_FWD_BWD, MFU_WALL_CLOCK, TOKENS_PER_SECOND};
use mfu::plot::{draw, Chart, ImageFormat, Lines};

use super::source::{load_reported, remote_output, SourceArgs};

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

pub fn run(args: &PlotArgs) -> anyhow::Result<ExitCode> {
    let format = ImageFormat::from_path(&args.output).with_context(|| {
        format!(
            "{}: the plot must be a .svg or .png file",
            args.output.display()
        )
    })?;
    if !args.force && !mfu::store::is_url(&args.output.to_string_lossy()) && args.output.exists() {
        bail!(
            "{}: already exists; add --force to replace it",
            args.output.display()
        );
    }
    let plan = args.source.plan(None)?;
    // An output URL: drawn here first, then uploaded; an existing object refused before any work.
    let remote = remote_output(&args.output, &plan, args.force)?;
    let (loaded, failed) = load_reported(&plan, args.source.report.quiet)?;
    let mut lines = Lines::default();
    for (display, loaded) in loaded {
        let key_column = match (
            loaded.column_for(args.by.as_deref().unwrap_or("run_id")),
            &args.by,
        ) {
            (Some(c), _) => Some(c),
            (None, Some(key)) => bail!("--by {key}: {display} has no such column or field"),
            (None, None) => None,
        };
        lines.add(
            &loaded.enriched.frame,
            &loaded.enriched.values,
            key_column.as_deref(),
            &display,
            args.metric.column(),
            args.window.map(|n| n as usize),
        )?;
    }
    let series = lines.into_series();
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
    match remote {
        Some((remote, local, _folder)) => {
            draw(&chart, &local, format, true)?;
            remote.upload(&local, args.force)?;
        }
        None => draw(&chart, &args.output, format, args.force)?,
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
