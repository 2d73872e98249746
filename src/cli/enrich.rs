//! `mfu enrich`: logs in, enriched tables out.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, ValueEnum};

use mfu::pipeline::destination::OutputOptions;
use mfu::pipeline::enrich::run as run_enrich;
use mfu::pipeline::job::RunOptions;
use mfu::write::OutputFormat;

use super::source::{SourceArgs, Terminal};

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

pub fn run(args: &EnrichArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let plan = args.source.plan(args.window.map(|w| w as usize))?;
    let quiet = args.source.report.quiet;
    let terminal = Terminal::new(plan.inputs.len(), quiet);
    let run = RunOptions {
        output: OutputOptions {
            output: args.output.clone(),
            out_dir: args.out_dir.clone(),
            format: args.output_format.map(OutputFormat::from),
            force: args.force,
        },
        strict: args.strict,
        fail_fast: args.fail_fast,
        rejects: args.rejects.clone(),
    };
    let report = run_enrich(&plan, &run, &terminal);
    terminal.finish();
    let report = report?;
    for w in &report.warnings {
        eprintln!("mfu: warning: {w}");
    }
    let failed = !report.failures.is_empty();
    for f in report.failures {
        eprintln!("mfu: error: {:#}", anyhow::Error::new(f));
    }
    if !quiet {
        let elapsed = started.elapsed().as_secs_f64();
        eprintln!(
            "mfu: {} of {} input{} enriched, {} rows ({} with null MFU, {} lines skipped) in {elapsed:.2}s{}",
            report.enriched,
            report.inputs,
            if report.inputs == 1 { "" } else { "s" },
            report.stats.rows,
            report.stats.null_mfu_rows,
            report.rejects.len(),
            report.wrote.map(|w| format!(" -> {w}")).unwrap_or_default(),
        );
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
