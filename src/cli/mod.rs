//! Command-line definitions: one module per subcommand, each with its arguments (whose `///` docs are the
//! help text) and a `run` that calls the library. Nothing below this module touches clap.

mod audit;
mod enrich;
mod flops;
mod goodput;
mod lookup;
mod peaks;
mod plot;
mod report;
mod source;
mod summary;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Parser, Subcommand, ValueEnum};

use mfu::peaks::{Dtype, PeakTable, ResolveOptions, Resolver};
use mfu::pipeline::windowed::{Part, Whole, WindowsRead};

/// Honest MFU from the logs of finished training runs.
///
/// mfu knows the dense peak FLOP/s of NVIDIA, AMD, Google TPU, AWS Trainium/Inferentia, Intel Gaudi and
/// Huawei Ascend devices for each precision, matches device names the way frameworks print them, and leaves MFU null
/// rather than guessing when the device or precision is unknown.
#[derive(Debug, Parser)]
#[command(name = "mfu", version, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    Audit(Box<audit::AuditArgs>),
    Enrich(Box<enrich::EnrichArgs>),
    Flops(flops::FlopsArgs),
    Goodput(Box<goodput::GoodputArgs>),
    Peaks(peaks::PeaksArgs),
    Plot(Box<plot::PlotArgs>),
    Report(Box<report::ReportPageArgs>),
    Summary(Box<summary::SummaryArgs>),
    Lookup(lookup::LookupArgs),
}

/// Runs the chosen command.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Audit(args) => audit::run(&args),
        Command::Enrich(args) => enrich::run(&args),
        Command::Flops(args) => flops::run(&args),
        Command::Goodput(args) => goodput::run(&args),
        Command::Peaks(args) => peaks::run(&args),
        Command::Plot(args) => plot::run(&args),
        Command::Report(args) => report::run(&args),
        Command::Summary(args) => summary::run(&args),
        Command::Lookup(args) => lookup::run(&args),
    }
}

/// Options shared by every command that resolves peaks.
#[derive(Debug, Clone, Args)]
pub struct PeakTableArgs {
    /// Add or replace peak-table entries from FILE (CSV, same columns as the built-in table: vendor, name,
    /// form_factor, patterns, fp64_tflops ... int8_tflops, fp6_tflops, fp4_tflops, source, note). An entry with the name of a
    /// built-in one replaces it. Repeatable; later files win.
    #[arg(long = "peaks", value_name = "FILE")]
    pub peaks: Vec<PathBuf>,

    /// Use F FLOP/s as the peak of every device, whatever its name or precision (e.g. 989.4e12).
    #[arg(long, value_name = "F", value_parser = parse_positive_flops)]
    pub peak_flops: Option<f64>,
}

impl PeakTableArgs {
    /// The table with the user's files applied.
    pub fn table(&self) -> anyhow::Result<PeakTable> {
        PeakTable::with_user_files(&self.peaks).context("loading --peaks")
    }

    pub fn resolver(&self, model_dtype: Option<Dtype>) -> anyhow::Result<Resolver> {
        Ok(Resolver::new(
            self.table()?,
            ResolveOptions {
                forced_peak: self.peak_flops,
                model_dtype,
            },
        ))
    }
}

fn parse_positive_flops(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number (FLOP/s, e.g. 989.4e12)"))?;
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(format!("'{s}' must be a positive number of FLOP/s"))
    }
}

/// How attention score FLOPs are counted (`--attention`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AttentionArg {
    /// Every query against every key (PaLM, nanoGPT).
    Full,
    /// Only the causal half.
    Causal,
}

impl From<AttentionArg> for mfu::flops::Attention {
    fn from(a: AttentionArg) -> Self {
        match a {
            AttentionArg::Full => mfu::flops::Attention::Full,
            AttentionArg::Causal => mfu::flops::Attention::Causal,
        }
    }
}

/// Activation recomputation (`--recompute`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RecomputeArg {
    None,
    /// Full activation recomputation: hardware FLOPs are 4/3 of model FLOPs.
    Full,
}

impl From<RecomputeArg> for mfu::flops::Recompute {
    fn from(r: RecomputeArg) -> Self {
        match r {
            RecomputeArg::None => mfu::flops::Recompute::None,
            RecomputeArg::Full => mfu::flops::Recompute::Full,
        }
    }
}

/// Output format of the per-run commands (`mfu summary`, `mfu goodput`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RunsFormat {
    /// Aligned columns for reading, MFU and shares in percent with one decimal.
    Table,
    Csv,
    /// A JSON array of objects.
    Json,
    Parquet,
}

impl RunsFormat {
    /// `format` as given, else the one `output`'s extension names, else a table on a terminal and CSV
    /// otherwise.
    pub fn chosen(format: Option<RunsFormat>, output: Option<&std::path::Path>) -> RunsFormat {
        use mfu::write::OutputFormat;
        format.unwrap_or_else(|| match output.and_then(OutputFormat::from_path) {
            Some(OutputFormat::Parquet) => RunsFormat::Parquet,
            Some(OutputFormat::Csv) => RunsFormat::Csv,
            Some(OutputFormat::Jsonl) => RunsFormat::Json,
            None => match list_format_or_default(None) {
                ListFormat::Table if output.is_none() => RunsFormat::Table,
                _ => RunsFormat::Csv,
            },
        })
    }

    /// The table format CSV and Parquet are written in; `None` for the text formats.
    pub fn table_format(self) -> Option<mfu::write::OutputFormat> {
        match self {
            RunsFormat::Csv => Some(mfu::write::OutputFormat::Csv),
            RunsFormat::Parquet => Some(mfu::write::OutputFormat::Parquet),
            RunsFormat::Table | RunsFormat::Json => None,
        }
    }
}

/// Where and how a per-run command (summary, goodput, audit) writes.
#[derive(Debug, Args)]
pub struct RunsOutputArgs {
    /// Output format; default: a table on a terminal (for reading: percentages, h:mm:ss), csv otherwise
    /// (fractions, seconds).
    #[arg(long, value_enum)]
    pub format: Option<RunsFormat>,

    /// Write to FILE instead of standard output (format from its extension unless --format); a URL
    /// (s3://, gs://, az://, http(s)://) is written there; `-` is standard output, as for `mfu enrich`.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Replace FILE if it exists.
    #[arg(long)]
    pub force: bool,
}

/// What a per-run command (summary, goodput, audit) writes in the format asked for.
pub enum RunsOutput {
    /// The terminal table or the JSON text.
    Text(String),
    /// A table, written as CSV, Parquet or JSON lines.
    Frame(mfu::write::Frame, mfu::write::OutputFormat),
}

impl RunsOutput {
    /// A per-run command's runs in `format`: its aligned table for reading, its JSON text, or its frame
    /// for CSV and Parquet.
    pub fn of(
        format: RunsFormat,
        table: impl FnOnce() -> String,
        json: impl FnOnce() -> anyhow::Result<String>,
        frame: impl FnOnce() -> anyhow::Result<mfu::write::Frame>,
    ) -> anyhow::Result<RunsOutput> {
        Ok(match format.table_format() {
            None if format == RunsFormat::Table => RunsOutput::Text(table()),
            None => RunsOutput::Text(json()?),
            Some(written) => RunsOutput::Frame(frame()?, written),
        })
    }
}

/// What a per-run command works on: its inputs read whole, or folded by the command's own fold, the
/// large console logs among them window by window.
pub enum Gathered<T> {
    Loaded(Vec<(String, mfu::pipeline::Loaded)>),
    Folded(T),
}

/// What every per-run command does around its own work: the plan of `options`, the inputs loaded
/// (progress on standard error), an output that may be a URL, the format chosen, `produce` asked for
/// what to write (given the inputs and that format), written atomically, uploaded, and the exit
/// code (1 where an input failed).
///
/// Where an input is a large console log, the command's `fold` is tried first ([`source::fold_reported`]):
/// the other inputs read whole, the logs folded window by window (`Err`: one cannot be folded as it
/// reads whole, and every input is read whole as before, `-v` saying why).
pub fn run_per_run<T>(
    source: &source::SourceArgs,
    options: &mfu::pipeline::Options,
    out: &RunsOutputArgs,
    fold: impl FnOnce(
        &mfu::pipeline::Plan,
        Vec<Part>,
        &dyn mfu::pipeline::Observer,
    ) -> Result<Result<(T, Vec<WindowsRead>), Whole>, mfu::pipeline::PipelineError>,
    produce: impl FnOnce(Gathered<T>, RunsFormat) -> anyhow::Result<RunsOutput>,
) -> anyhow::Result<ExitCode> {
    // `-o -` is standard output, as it is for `mfu enrich`, not a file named `-`.
    let output = out
        .output
        .as_deref()
        .filter(|p| *p != std::path::Path::new("-"));
    let (format, force) = (out.format, out.force);
    let plan = source.plan_of(options)?;
    let remote = match output {
        Some(path) => source::remote_output(path, &plan, force)?,
        None => None,
    };
    let output: Option<PathBuf> = match &remote {
        Some((_, local, _)) => Some(local.clone()),
        None => output.map(std::path::Path::to_path_buf),
    };
    let replace = force || remote.is_some();
    let format = RunsFormat::chosen(format, output.as_deref());
    let (inputs, failed) = match source::fold_reported(&plan, source.report.quiet, fold)? {
        Some((folded, failed)) => (Gathered::Folded(folded), failed),
        None => {
            let (loaded, failed) = source::load_reported(&plan, source.report.quiet)?;
            if loaded.is_empty() {
                anyhow::bail!("no input could be read");
            }
            (Gathered::Loaded(loaded), failed)
        }
    };
    // The inputs go to the command, which may let each go once it has what it needs of it.
    match produce(inputs, format)? {
        RunsOutput::Text(text) => write_text(output.as_deref(), &text, replace)?,
        RunsOutput::Frame(mut df, table) => {
            let metadata = vec![(
                "mfu.version".to_string(),
                env!("CARGO_PKG_VERSION").to_string(),
            )];
            mfu::write::write_to(output.as_deref(), table, &mut df, &metadata, replace)?;
        }
    }
    if let Some((remote, local, _folder)) = remote {
        remote.upload(&local, force)?;
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Writes a command's text (a table, JSON) to `output`, atomically and refused where it exists unless
/// `force`, else to standard output.
pub fn write_text(output: Option<&std::path::Path>, text: &str, force: bool) -> anyhow::Result<()> {
    use std::io::Write;
    let Some(path) = output else {
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes())?;
        out.flush()?;
        return Ok(());
    };
    if !force && path.exists() {
        anyhow::bail!(
            "{}: already exists; add --force to replace it",
            path.display()
        );
    }
    mfu::write::atomic::write_bytes(path, text.as_bytes(), force)
        .with_context(|| format!("writing {}", path.display()))
}

/// Output format of the listing commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ListFormat {
    /// Aligned columns for reading (the default on a terminal).
    Table,
    /// Comma-separated values with a header (the default when piped).
    Csv,
    /// A JSON array of objects.
    Json,
}

/// `format` as given, else a table on a terminal and CSV when piped.
pub fn list_format_or_default(format: Option<ListFormat>) -> ListFormat {
    use std::io::IsTerminal;
    format.unwrap_or_else(|| {
        if std::io::stdout().is_terminal() {
            ListFormat::Table
        } else {
            ListFormat::Csv
        }
    })
}

/// A per-run table's key cells (the `--by` values of its run), `-` where a run has none: the first
/// cells of a row of `mfu summary`, `goodput` and `audit`.
pub fn key_cells(keys: &[Option<String>]) -> Vec<String> {
    keys.iter()
        .map(|k| k.clone().unwrap_or_else(|| "-".into()))
        .collect()
}

/// Pads each column of `rows` to its widest cell; numeric-looking columns are right-aligned.
pub fn aligned_table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let numeric: Vec<bool> = (0..header.len())
        .map(|i| {
            rows.iter()
                .all(|r| r[i].is_empty() || r[i] == "-" || r[i].parse::<f64>().is_ok())
        })
        .collect();
    let mut out = String::new();
    let mut line = |cells: Vec<&str>| {
        let parts: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if numeric[i] {
                    format!("{c:>w$}", w = widths[i])
                } else {
                    format!("{c:<w$}", w = widths[i])
                }
            })
            .collect();
        out.push_str(parts.join("  ").trim_end());
        out.push('\n');
    };
    line(header.to_vec());
    for row in rows {
        line(row.iter().map(String::as_str).collect());
    }
    out
}

/// Formats TFLOP/s for people: at most one decimal place, no trailing zeros (989.4, 312, 181.05 → 181.05).
pub fn tflops_text(flops: f64) -> String {
    let t = flops / 1e12;
    let s = format!("{t:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn tflops_text_trims() {
        assert_eq!(tflops_text(989.4e12), "989.4");
        assert_eq!(tflops_text(312e12), "312");
        assert_eq!(tflops_text(181.05e12), "181.05");
    }
}
