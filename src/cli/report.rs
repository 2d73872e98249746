//! `mfu report`: one self-contained HTML page for a run or a fleet.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::Args;

use mfu::pipeline::goodput::goodput_runs;
use mfu::pipeline::summary::summarize_runs;
use mfu::report::{html, ReportInput, ReportOptions};

use super::source::{load_reported, remote_output, SourceArgs};

/// Write one self-contained HTML page: the runs' summary, MFU, throughput and step time by step, the
/// devices and their peaks, and the FLOPs per token used.
///
/// Reads what `mfu enrich` reads (logs, folders, run folders, URLs, or tables mfu already enriched), with
/// the same flags. The page inlines everything it needs (its charts are uPlot's), makes no request, and
/// opens from a file with the network off: attach it to a ticket or keep it as a CI artifact. Runs are
/// the values of --by (default the run_id field, else each input). Charts draw every run on one grid of
/// at most --points step buckets; the table uses every row.
///
/// Examples:
///   mfu report fixtures/demo_runs.csv -o report.html
///   mfu report runs/ --device "NVIDIA H100 80GB HBM3" --dtype bf16 --num-devices 8 -o fleet.html
///   mfu report enriched.parquet -o s3://bucket/reports/week-49.html
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct ReportPageArgs {
    #[command(flatten)]
    pub source: SourceArgs,

    /// The page to write (.html), or an object-store URL.
    #[arg(short, long, value_name = "FILE.html")]
    pub output: PathBuf,

    /// Group rows into runs by this column (or a field name such as run_id).
    #[arg(long = "by", value_name = "KEY")]
    pub by: Option<String>,

    /// Leave each run's first N steps (warm-up) out of the summary.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub skip_steps: u64,

    /// Step buckets the charts draw each run on (a chart is about a thousand pixels wide).
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(2..=100_000))]
    pub points: u64,

    /// The page's title.
    #[arg(long, default_value = "MFU report")]
    pub title: String,

    /// Replace FILE if it exists.
    #[arg(long)]
    pub force: bool,
}

pub fn run(args: &ReportPageArgs) -> anyhow::Result<ExitCode> {
    let named = args.output.to_string_lossy().to_string();
    let extension = named.rsplit('.').next().unwrap_or("").to_ascii_lowercase();
    if !matches!(extension.as_str(), "html" | "htm") {
        bail!("{named}: the report is an .html file");
    }
    let is_url = mfu::store::is_url(&named);
    if !args.force && !is_url && args.output.exists() {
        bail!("{named}: already exists; add --force to replace it");
    }
    let plan = args.source.plan(None)?;
    let remote = remote_output(&args.output, &plan, args.force)?;
    let (loaded, failed) = load_reported(&plan, args.source.report.quiet)?;
    if loaded.is_empty() {
        bail!("nothing to report: no input could be read");
    }
    let by: Vec<String> = args.by.iter().cloned().collect();
    let (key_names, runs) = summarize_runs(
        &loaded,
        &by,
        args.skip_steps as f64,
        args.source.logged_peak_flops,
    )?;
    // Where each run's time went, its runs keyed as the summary's.
    let (_, goodput) = goodput_runs(&loaded, &by)?;
    let goodput: Vec<_> = goodput.into_iter().map(|r| (r.keys, r.goodput)).collect();
    let mut inputs = Vec::with_capacity(loaded.len());
    for (display, l) in &loaded {
        let key_column = match (
            l.column_for(args.by.as_deref().unwrap_or("run_id")),
            &args.by,
        ) {
            (Some(c), _) => Some(c),
            (None, Some(key)) => bail!("--by {key}: {display} has no such column or field"),
            (None, None) => None,
        };
        inputs.push(ReportInput {
            display,
            frame: &l.enriched.frame,
            values: &l.enriched.values,
            mapping: &l.enriched.mapping,
            key_column,
        });
    }
    let options = ReportOptions {
        points: args.points as usize,
        title: args.title.clone(),
        ..ReportOptions::default()
    };
    let page = html(
        &inputs,
        &key_names,
        &runs,
        &goodput,
        &plan.options.resolver,
        &options,
    )?;
    match remote {
        Some((remote, local, _folder)) => {
            write_page(&local, &page, true)?;
            remote.upload(&local, args.force)?;
        }
        None => write_page(&args.output, &page, args.force)?,
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn write_page(path: &std::path::Path, page: &str, force: bool) -> anyhow::Result<()> {
    mfu::write::atomic::write_bytes(path, page.as_bytes(), force)
        .with_context(|| format!("writing {}", path.display()))
}
