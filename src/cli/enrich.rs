//! `mfu enrich`: logs in, enriched tables out.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use anyhow::{bail, Context};
use clap::{Args, ValueEnum};
use polars::prelude::DataFrame;

use mfu::enrich::{combine, output_metadata};
use mfu::read::Input;
use mfu::write::{write_file, write_stdout, OutputFormat};

use super::source::{add_stats, progress_bar, write_rejects, Pipeline, SourceArgs};

/// Add throughput and MFU columns to training logs.
///
/// Reads each INPUT (JSONL, CSV, TSV or Parquet, optionally .gz or .zst, or a trainer's own layout),
/// finds the step time, token, device-count, FLOPs-per-token, device and precision columns by name,
/// resolves each distinct (device, precision) pair to a dense peak once, and writes every input column
/// unchanged followed by: resolved_device, peak_flops_per_device, tokens_per_second,
/// achieved_flops_per_device, mfu_wall_clock, mfu_fwd_bwd. MFU is null where the device or precision is
/// unknown; throughput is still filled.
///
/// Examples:
///   mfu enrich fixtures/runs.jsonl -o runs.parquet
///   mfu enrich logs/ -o all.parquet --device "NVIDIA H100 80GB HBM3" --dtype bf16
///   mfu enrich 'runs/*/log.csv' --out-dir enriched/ --output-format parquet
///   cat log.jsonl | mfu enrich - --input-format jsonl -o - --num-devices 8 --flops-per-token 4.2e10
///   mfu enrich log.csv -o out.csv --map step_time=iter_seconds --time-unit s
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct EnrichArgs {
    #[command(flatten)]
    pub source: SourceArgs,

    /// Write one table here (.parquet, .csv or .jsonl; - for standard output, CSV unless --output-format).
    #[arg(
        short,
        long,
        value_name = "OUTPUT",
        required_unless_present = "out_dir",
        conflicts_with = "out_dir"
    )]
    pub output: Option<String>,

    /// Write one output per input into DIR instead, at the input's relative path with the output extension.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,

    /// Write this format whatever OUTPUT's extension (default for --out-dir: parquet).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub output_format: Option<OutputFormatArg>,

    /// Add mfu_wall_clock_rolling, mfu_fwd_bwd_rolling and tokens_per_second_rolling: means over this row
    /// and the N - 1 rows before it in the same run.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub window: Option<u64>,

    /// Write each line or row that was not read (torn, or skipped under --skip-bad-rows) with its file,
    /// line and reason to FILE, as JSON Lines.
    #[arg(long, value_name = "FILE")]
    pub rejects: Option<PathBuf>,

    /// Replace OUTPUT (or files in --out-dir) if it exists.
    #[arg(long)]
    pub force: bool,

    /// Treat any row whose peak cannot be resolved (unknown device or precision) as a failure of its input.
    #[arg(long)]
    pub strict: bool,

    /// Stop at the first input that fails, and write nothing.
    #[arg(long)]
    pub fail_fast: bool,

    /// No progress bar and no summary (warnings and errors are still printed).
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum OutputFormatArg {
    Parquet,
    Csv,
    Jsonl,
}

impl From<OutputFormatArg> for OutputFormat {
    fn from(f: OutputFormatArg) -> OutputFormat {
        match f {
            OutputFormatArg::Parquet => OutputFormat::Parquet,
            OutputFormatArg::Csv => OutputFormat::Csv,
            OutputFormatArg::Jsonl => OutputFormat::Jsonl,
        }
    }
}

/// Where results go, decided before any data is read.
pub(super) enum Destination {
    One {
        path: Option<PathBuf>,
        format: OutputFormat,
    },
    PerInput {
        paths: Vec<PathBuf>,
        format: OutputFormat,
    },
}

/// What happened to one input that was enriched.
pub(super) struct InputReport {
    pub stats: mfu::compute::ComputeStats,
    pub warnings: Vec<String>,
    pub rejects: Vec<mfu::read::Reject>,
}

/// What a run did: one result per input, in input order, and the output written.
pub(super) struct Outcome {
    pub results: Vec<anyhow::Result<InputReport>>,
    pub wrote: Option<String>,
}

pub fn run(args: &EnrichArgs) -> anyhow::Result<ExitCode> {
    let pipeline = args.source.pipeline(args.window.map(|w| w as usize))?;
    let destination = plan_destination(args, &pipeline.inputs)?;
    let metadata = output_metadata(&pipeline.options);
    let progress = progress_bar(pipeline.inputs.len(), args.quiet);
    let started = Instant::now();
    // Large inputs are streamed in blocks into the output; when that cannot give what the whole-input way
    // gives (see stream.rs), everything is done the whole-input way instead.
    let why = super::stream::StopReason::new();
    let streamed =
        super::stream::enrich_streaming(&pipeline, args, &destination, &metadata, &progress, &why)?;
    let outcome = match streamed {
        Some(outcome) => outcome,
        None => {
            if let (true, Some(why)) = (args.source.verbose, why.get()) {
                let limit = pipeline.read.budget.as_ref().map_or(0, |b| b.limit());
                eprintln!(
                    "mfu: reading every input whole, within --max-memory {}: {why}",
                    mfu::read::memory::format_size(limit)
                );
            }
            enrich_whole(&pipeline, args, &destination, &metadata, &progress, started)?
        }
    };
    progress.finish_and_clear();
    report(args, &pipeline, outcome, started)
}

/// Reads and enriches every input whole, then writes.
fn enrich_whole(
    pipeline: &Pipeline,
    args: &EnrichArgs,
    destination: &Destination,
    metadata: &mfu::write::Metadata,
    progress: &indicatif::ProgressBar,
    started: Instant,
) -> anyhow::Result<Outcome> {
    let inputs = &pipeline.inputs;
    progress.set_position(0);
    let rows_done = AtomicUsize::new(0);
    let processed = pipeline.for_each_input(|i, input| {
        let result = process(pipeline, input, args, destination, i, metadata);
        if let Ok(p) = &result {
            let rows = p.report.stats.rows;
            let done = rows_done.fetch_add(rows, Ordering::Relaxed) + rows;
            let rate = done as f64 / started.elapsed().as_secs_f64().max(1e-9);
            progress.set_message(format!("{rate:.0} rows/s"));
        }
        progress.inc(1);
        result
    })?;
    let timings = std::env::var_os("MFU_TIMINGS").is_some();
    if timings {
        eprintln!(
            "mfu: timings: all inputs read and enriched {:.3}s",
            started.elapsed().as_secs_f64()
        );
    }
    let mut parts = Vec::new();
    let mut results = Vec::with_capacity(inputs.len());
    for (input, result) in inputs.iter().zip(processed) {
        results.push(result.map(|p| {
            if let Some(frame) = p.frame {
                parts.push((input.display.clone(), frame));
            }
            p.report
        }));
    }
    let failed = results.iter().any(|r| r.is_err());

    let mut wrote = None;
    if !args.fail_fast || !failed {
        if let Destination::One { path, format } = destination {
            if !parts.is_empty() {
                let combine_started = Instant::now();
                let mut df = if inputs.len() > 1 {
                    combine(parts).context("combining inputs")?
                } else {
                    parts.pop().map(|(_, f)| f).unwrap_or_default()
                };
                if timings {
                    eprintln!(
                        "mfu: timings: combine {:.3}s",
                        combine_started.elapsed().as_secs_f64()
                    );
                }
                let write_started = Instant::now();
                match path {
                    Some(p) => {
                        write_file(p, *format, &mut df, metadata, args.force)?;
                        wrote = Some(p.display().to_string());
                    }
                    None => write_stdout(*format, &mut df, metadata)?,
                }
                if timings {
                    eprintln!(
                        "mfu: timings: write {:.3}s",
                        write_started.elapsed().as_secs_f64()
                    );
                }
            }
        } else if let Destination::PerInput { .. } = destination {
            wrote = args.out_dir.as_ref().map(|d| d.display().to_string());
        }
    }
    Ok(Outcome { results, wrote })
}

/// Prints warnings, errors and the closing line; the exit code says whether every input was enriched.
fn report(
    args: &EnrichArgs,
    pipeline: &Pipeline,
    outcome: Outcome,
    started: Instant,
) -> anyhow::Result<ExitCode> {
    let inputs = &pipeline.inputs;
    let mut failures = Vec::new();
    let mut total = mfu::compute::ComputeStats::default();
    let mut unresolved: BTreeMap<String, usize> = BTreeMap::new();
    let mut rejects = Vec::new();
    let mut files_ok = 0;
    for (input, result) in inputs.iter().zip(outcome.results) {
        match result {
            Ok(p) => {
                files_ok += 1;
                for w in &p.warnings {
                    eprintln!("mfu: warning: {w}");
                }
                add_stats(&mut total, &p.stats);
                rejects.extend(p.rejects.into_iter().map(|r| (input.display.clone(), r)));
                for (why, rows) in &p.stats.unresolved {
                    *unresolved.entry(why.to_string()).or_default() += rows;
                }
            }
            Err(e) => failures.push(format!("{e:#}")),
        }
    }
    if let Some(path) = &args.rejects {
        write_rejects(path, &rejects)?;
    }
    if total.bad_step_time_rows + total.bad_count_rows > 0 {
        eprintln!(
            "mfu: warning: {} row(s) with a missing, zero, negative or non-finite step time and {} with a negative or non-finite count have null derived values",
            total.bad_step_time_rows, total.bad_count_rows
        );
    }
    if total.overflow_rows > 0 {
        eprintln!(
            "mfu: warning: {} row(s) have a derived value too large for a 64-bit float (a step time such as 5e-324?): null instead of infinity",
            total.overflow_rows
        );
    }
    for (why, rows) in &unresolved {
        eprintln!(
            "mfu: warning: {why}: MFU is null for {rows} row{}; add the device with --peaks FILE or force a value with --peak-flops F",
            if *rows == 1 { "" } else { "s" }
        );
    }
    if total.mfu_above_one_rows > 0 {
        eprintln!(
            "mfu: warning: {} rows have MFU above 1, which is impossible: check flops_per_token and the device",
            total.mfu_above_one_rows
        );
    }
    for f in &failures {
        eprintln!("mfu: error: {f}");
    }
    if !args.quiet {
        let elapsed = started.elapsed().as_secs_f64();
        eprintln!(
            "mfu: {files_ok} of {} input{} enriched, {} rows ({} with null MFU, {} lines skipped) in {elapsed:.2}s{}",
            inputs.len(),
            if inputs.len() == 1 { "" } else { "s" },
            total.rows,
            total.null_mfu_rows,
            rejects.len(),
            outcome.wrote.map(|w| format!(" -> {w}")).unwrap_or_default(),
        );
    }
    Ok(if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// What happened to one input.
struct Processed {
    /// The enriched rows, when they go into the one output (`None` once written with --out-dir).
    frame: Option<DataFrame>,
    report: InputReport,
}

/// Reads, enriches and (with --out-dir) writes one input.
fn process(
    pipeline: &Pipeline,
    input: &Input,
    args: &EnrichArgs,
    destination: &Destination,
    index: usize,
    metadata: &mfu::write::Metadata,
) -> anyhow::Result<Processed> {
    let loaded = pipeline.load(input, false)?;
    let held = loaded.held;
    let enriched = loaded.enriched;
    if args.strict {
        if let Some((why, rows)) = enriched.stats.unresolved.first() {
            bail!("{}: --strict: {why} for {rows} rows", input.display);
        }
    }
    let mut frame = Some(enriched.frame);
    if let Destination::PerInput { paths, format } = destination {
        let mut df = frame.take().expect("just set");
        write_file(&paths[index], *format, &mut df, metadata, args.force)?;
        drop(held); // written: the memory its rows took is free again
    } else {
        held.keep(); // every input's rows are held until they are written together
    }
    Ok(Processed {
        frame,
        report: InputReport {
            stats: enriched.stats,
            warnings: loaded.warnings,
            rejects: loaded.rejects,
        },
    })
}

/// Decides output paths and formats, and refuses an output that is also an input.
fn plan_destination(args: &EnrichArgs, inputs: &[Input]) -> anyhow::Result<Destination> {
    let forced = args.output_format.map(OutputFormat::from);
    let input_paths: Vec<PathBuf> = inputs
        .iter()
        .filter_map(|i| {
            i.path
                .as_deref()
                .and_then(|p| std::fs::canonicalize(p).ok())
        })
        .collect();
    let is_input = |out: &Path| canonical_output(out).is_some_and(|c| input_paths.contains(&c));
    if let Some(out) = &args.output {
        if out == "-" {
            return Ok(Destination::One {
                path: None,
                format: forced.unwrap_or(OutputFormat::Csv),
            });
        }
        let path = PathBuf::from(out);
        let format = match forced.or_else(|| OutputFormat::from_path(&path)) {
            Some(f) => f,
            None => bail!("{out}: cannot tell the output format from the name; use .parquet, .csv or .jsonl, or give --output-format"),
        };
        if is_input(&path) {
            bail!("{out}: the output is also an input; write somewhere else");
        }
        if !args.force && path.exists() {
            bail!("{out}: already exists; add --force to replace it");
        }
        return Ok(Destination::One {
            path: Some(path),
            format,
        });
    }
    let dir = args
        .out_dir
        .as_ref()
        .expect("clap requires -o or --out-dir");
    let format = forced.unwrap_or(OutputFormat::Parquet);
    let mut paths = Vec::with_capacity(inputs.len());
    for input in inputs {
        let path = dir.join(output_relative(&input.relative, format));
        if is_input(&path) {
            bail!(
                "{}: the output for {} is that input itself",
                path.display(),
                input.display
            );
        }
        if !args.force && path.exists() {
            bail!(
                "{}: already exists; add --force to replace it",
                path.display()
            );
        }
        if paths.contains(&path) {
            bail!(
                "{}: two inputs would be written to the same output",
                path.display()
            );
        }
        paths.push(path);
    }
    for p in &paths {
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
    }
    Ok(Destination::PerInput { paths, format })
}

/// `runs/a/log.csv.gz` → `runs/a/log.parquet`.
fn output_relative(relative: &Path, format: OutputFormat) -> PathBuf {
    let name = relative
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "stdin".into());
    let lower = name.to_ascii_lowercase();
    let stem_len = [".gz", ".zst"]
        .iter()
        .find(|s| lower.ends_with(*s))
        .map_or(name.len(), |s| name.len() - s.len());
    let base = &name[..stem_len];
    let stem = Path::new(base)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| base.to_string());
    relative.with_file_name(format!("{stem}.{}", format.extension()))
}

/// The canonical form of an output path that may not exist yet.
fn canonical_output(path: &Path) -> Option<PathBuf> {
    if let Ok(c) = std::fs::canonicalize(path) {
        return Some(c);
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    Some(std::fs::canonicalize(parent).ok()?.join(path.file_name()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_names_swap_the_extension() {
        assert_eq!(
            output_relative(Path::new("a/log.csv.gz"), OutputFormat::Parquet),
            PathBuf::from("a/log.parquet")
        );
        assert_eq!(
            output_relative(Path::new("run.jsonl"), OutputFormat::Csv),
            PathBuf::from("run.csv")
        );
    }
}
