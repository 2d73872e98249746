//! `mfu enrich`: logs in, enriched tables out.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use polars::prelude::DataFrame;
use rayon::prelude::*;

use mfu::columns::{ColumnOptions, Constants, Field, FieldSource, ModelFlops, TimeUnit};
use mfu::enrich::{combine, enrich_frame, output_metadata, EnrichOptions};
use mfu::flops::ModelConfig;
use mfu::peaks::{parse_precision, Dtype};
use mfu::read::{expand_inputs, read_input, Input, InputFormat, ReadOptions, RowKinds, Shape};
use mfu::write::{write_file, write_stdout, OutputFormat};

use super::{AttentionArg, PeakTableArgs, RecomputeArg};

/// Add throughput and MFU columns to training logs.
///
/// Reads each INPUT (JSONL, CSV, TSV or Parquet, optionally .gz or .zst), finds the step time, token,
/// device-count, FLOPs-per-token, device and precision columns by name, resolves each distinct
/// (device, precision) pair to a dense peak once, and writes every input column unchanged followed by:
/// resolved_device, peak_flops_per_device, tokens_per_second, achieved_flops_per_device, mfu_wall_clock,
/// mfu_fwd_bwd. MFU is null where the device or precision is unknown; throughput is still filled.
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
    /// Files, folders (searched recursively for known extensions), glob patterns, or - for standard input.
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<String>,

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

    /// Read inputs as this format whatever their names (required for standard input).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub input_format: Option<InputFormatArg>,

    /// Read inputs as this trainer layout instead of recognising it from content: table, hf-trainer-state,
    /// llamafactory, lightning, tensorboard, megatron, text, modded-nanogpt, nanogpt.
    #[arg(long, value_name = "SHAPE")]
    pub shape: Option<Shape>,

    /// Which rows of an HF Trainer state to keep: train (steps only), eval, or all (with a row_kind
    /// column).
    #[arg(long, value_name = "KIND", default_value = "train")]
    pub rows: RowKinds,

    /// Read a text log: each line matching this regular expression becomes a row, one column per named
    /// group, e.g. '^step (?P<step>\d+) time (?P<step_time_ms>[\d.]+)ms'.
    #[arg(long, value_name = "REGEX", value_parser = parse_line_regex)]
    pub line_regex: Option<regex::Regex>,

    /// This field's column is a running total (elapsed time, tokens seen) whatever its name: differenced
    /// into per-step values. Repeatable.
    #[arg(long, value_name = "FIELD")]
    pub cumulative: Vec<Field>,

    /// A W&B wandb-metadata.json: supplies the device name (gpu, or gpu_nvidia[].name) and the device
    /// count (gpu_count) unless --device or --num-devices is given.
    #[arg(long, value_name = "FILE")]
    pub metadata: Option<PathBuf>,

    /// The peak FLOP/s a log's own MFU column was computed against (TRL's old default 989.5e12, nanoGPT's
    /// 312e12): adds mfu_logged_corrected = logged MFU x F / peak_flops_per_device.
    #[arg(long, value_name = "F", value_parser = parse_positive)]
    pub logged_peak_flops: Option<f64>,

    /// Write this format whatever OUTPUT's extension (default for --out-dir: parquet).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub output_format: Option<OutputFormatArg>,

    /// Use COLUMN for FIELD instead of detecting it (FIELD: run_id, step, step_time, fwd_bwd_time, tokens,
    /// num_devices, device_name, dtype, flops_per_token). Repeatable.
    #[arg(long = "map", value_name = "FIELD=COLUMN", value_parser = parse_mapping)]
    pub map: Vec<(Field, String)>,

    /// Device name for every row, as a framework prints it (e.g. "NVIDIA H100 80GB HBM3"); a list of names,
    /// one per rank, separated by ';'.
    #[arg(long, value_name = "NAME")]
    pub device: Option<String>,

    /// Training precision for every row (bf16, fp16, fp32, tf32, fp8, or spellings such as bf16-mixed).
    #[arg(long, value_name = "D", value_parser = parse_precision_arg)]
    pub dtype: Option<String>,

    /// What precision "no" (accelerate's mixed_precision) means: the model's own dtype.
    #[arg(long, value_name = "D")]
    pub model_dtype: Option<Dtype>,

    /// Number of training devices for every row.
    #[arg(long, value_name = "N", value_parser = parse_positive)]
    pub num_devices: Option<f64>,

    /// Model FLOPs per token (forward + backward, about 6 x parameters plus attention) for every row.
    #[arg(long, value_name = "F", value_parser = parse_positive)]
    pub flops_per_token: Option<f64>,

    /// Tokens per optimizer step (all devices together) for every row.
    #[arg(long, value_name = "T", value_parser = parse_positive)]
    pub tokens_per_step: Option<f64>,

    /// Compute flops_per_token from this model config.json when the log has no such column (needs
    /// --seq-len or a seq_len column). See `mfu flops` for the convention.
    #[arg(long, value_name = "FILE")]
    pub model_config: Option<PathBuf>,

    /// Training sequence length, for --model-config.
    #[arg(long, value_name = "S", value_parser = parse_positive)]
    pub seq_len: Option<f64>,

    /// How attention FLOPs are counted with --model-config.
    #[arg(long, value_enum, default_value_t = AttentionArg::Full)]
    pub attention: AttentionArg,

    /// With `full`, also write hfu_wall_clock and hfu_fwd_bwd (MFU x 4/3: hardware FLOPs under full
    /// activation recomputation).
    #[arg(long, value_enum, default_value_t = RecomputeArg::None)]
    pub recompute: RecomputeArg,

    /// Let --device, --dtype, --num-devices, --flops-per-token and --tokens-per-step replace a column the
    /// file has (otherwise that is an error).
    #[arg(long = "override")]
    pub override_columns: bool,

    /// Unit of every duration column, whatever its name says (default: from the name, else seconds).
    #[arg(long, value_name = "UNIT")]
    pub time_unit: Option<TimeUnit>,

    /// Threads for processing inputs in parallel (default: one per core).
    #[arg(short, long, value_name = "N")]
    pub jobs: Option<usize>,

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

    /// Print, for each input, its format, rows and which column or constant supplies each field.
    #[arg(short, long)]
    pub verbose: bool,

    #[command(flatten)]
    pub table: PeakTableArgs,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum InputFormatArg {
    Jsonl,
    Csv,
    Tsv,
    Parquet,
}

impl From<InputFormatArg> for InputFormat {
    fn from(f: InputFormatArg) -> InputFormat {
        match f {
            InputFormatArg::Jsonl => InputFormat::Jsonl,
            InputFormatArg::Csv => InputFormat::Csv,
            InputFormatArg::Tsv => InputFormat::Tsv,
            InputFormatArg::Parquet => InputFormat::Parquet,
        }
    }
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

fn parse_line_regex(s: &str) -> Result<regex::Regex, String> {
    mfu::read::shapes::text::compile(s)
}

fn parse_mapping(s: &str) -> Result<(Field, String), String> {
    let (field, column) = s
        .split_once('=')
        .ok_or_else(|| format!("'{s}' is not FIELD=COLUMN"))?;
    if column.is_empty() {
        return Err(format!("'{s}': the column name is empty"));
    }
    Ok((field.parse()?, column.to_string()))
}

fn parse_precision_arg(s: &str) -> Result<String, String> {
    match parse_precision(s) {
        Some(_) => Ok(s.to_string()),
        None => Err(format!(
            "unknown precision '{s}': expected fp64, fp32, tf32, bf16, fp16, fp8, int8, no, or a spelling such as torch.bfloat16 or bf16-mixed"
        )),
    }
}

fn parse_positive(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("'{s}' must be a positive number")),
    }
}

/// Where results go, decided before any data is read.
enum Destination {
    One {
        path: Option<PathBuf>,
        format: OutputFormat,
    },
    PerInput {
        paths: Vec<PathBuf>,
        format: OutputFormat,
    },
}

/// What happened to one input.
struct Processed {
    frame: Option<DataFrame>,
    stats: mfu::compute::ComputeStats,
    warnings: Vec<String>,
}

pub fn run(args: &EnrichArgs) -> anyhow::Result<ExitCode> {
    let inputs = expand_inputs(&args.inputs)?;
    let input_format = args.input_format.map(InputFormat::from);
    if inputs.iter().any(|i| i.path.is_none()) && input_format.is_none() {
        bail!("reading standard input needs --input-format jsonl|csv|tsv|parquet");
    }
    let destination = plan_destination(args, &inputs)?;
    let (meta_device, meta_devices) = match &args.metadata {
        Some(path) => wandb_metadata(path)?,
        None => (None, None),
    };
    let read_options = ReadOptions {
        format: input_format,
        shape: args.shape,
        rows: args.rows,
        line_regex: args.line_regex.clone(),
    };
    let resolver = Arc::new(args.table.resolver(args.model_dtype)?);
    let options = EnrichOptions {
        columns: ColumnOptions {
            map: args.map.clone(),
            time_unit: args.time_unit,
            constants: Constants {
                device: args.device.clone().or(meta_device),
                dtype: args.dtype.clone(),
                num_devices: args.num_devices.or(meta_devices),
                flops_per_token: args.flops_per_token,
                tokens_per_step: args.tokens_per_step,
                seq_len: args.seq_len,
            },
            allow_override: args.override_columns,
            model: model_flops(args)?,
            cumulative: args.cumulative.clone(),
            timing_optional: false,
        },
        resolver,
        recompute: args.recompute.into(),
        logged_peak_flops: args.logged_peak_flops,
    };
    let metadata = output_metadata(&options);

    let progress = progress_bar(inputs.len(), args.quiet);
    let started = Instant::now();
    let rows_done = AtomicUsize::new(0);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.jobs.unwrap_or(0))
        .build()
        .context("starting worker threads")?;
    let results: Vec<anyhow::Result<Processed>> = pool.install(|| {
        inputs
            .par_iter()
            .enumerate()
            .map(|(i, input)| {
                let result = process(
                    input,
                    &read_options,
                    &options,
                    args,
                    &destination,
                    i,
                    &metadata,
                );
                if let Ok(p) = &result {
                    let done = rows_done.fetch_add(p.stats.rows, Ordering::Relaxed) + p.stats.rows;
                    let rate = done as f64 / started.elapsed().as_secs_f64().max(1e-9);
                    progress.set_message(format!("{rate:.0} rows/s"));
                }
                progress.inc(1);
                result
            })
            .collect()
    });
    progress.finish_and_clear();

    let mut failures = Vec::new();
    let mut total = mfu::compute::ComputeStats::default();
    let mut unresolved: BTreeMap<String, usize> = BTreeMap::new();
    let mut parts = Vec::new();
    let mut files_ok = 0;
    for (input, result) in inputs.iter().zip(results) {
        match result {
            Ok(p) => {
                files_ok += 1;
                for w in &p.warnings {
                    eprintln!("mfu: warning: {w}");
                }
                add_stats(&mut total, &p.stats);
                for (why, rows) in &p.stats.unresolved {
                    *unresolved.entry(why.to_string()).or_default() += rows;
                }
                if let Some(frame) = p.frame {
                    parts.push((input.display.clone(), frame));
                }
            }
            Err(e) => failures.push(format!("{e:#}")),
        }
    }

    let mut wrote = None;
    let write_output = !args.fail_fast || failures.is_empty();
    if write_output {
        if let Destination::One { path, format } = &destination {
            if !parts.is_empty() {
                let mut df = if inputs.len() > 1 {
                    combine(parts).context("combining inputs")?
                } else {
                    parts.pop().map(|(_, f)| f).unwrap_or_default()
                };
                match path {
                    Some(p) => {
                        write_file(p, *format, &mut df, &metadata, args.force)?;
                        wrote = Some(p.display().to_string());
                    }
                    None => write_stdout(*format, &mut df, &metadata)?,
                }
            }
        } else if let Destination::PerInput { .. } = &destination {
            wrote = args.out_dir.as_ref().map(|d| d.display().to_string());
        }
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
            "mfu: {files_ok} of {} input{} enriched, {} rows ({} with null MFU) in {elapsed:.2}s{}",
            inputs.len(),
            if inputs.len() == 1 { "" } else { "s" },
            total.rows,
            total.null_mfu_rows,
            wrote.map(|w| format!(" -> {w}")).unwrap_or_default(),
        );
    }
    Ok(if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Device name and count from a W&B wandb-metadata.json.
fn wandb_metadata(path: &Path) -> anyhow::Result<(Option<String>, Option<f64>)> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let doc: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{}: not JSON", path.display()))?;
    let listed: Vec<String> = doc
        .get("gpu_nvidia")
        .and_then(|g| g.as_array())
        .map(|gpus| {
            gpus.iter()
                .filter_map(|g| g.get("name").and_then(|n| n.as_str()).map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let device = match doc.get("gpu").and_then(|g| g.as_str()) {
        Some(name) => Some(name.to_string()),
        None if listed.is_empty() => None,
        // Several GPUs: one name per rank, the list form the resolver averages over.
        None if listed.iter().all(|n| *n == listed[0]) => Some(listed[0].clone()),
        None => Some(listed.join(";")),
    };
    let count = doc
        .get("gpu_count")
        .and_then(|c| c.as_f64())
        .filter(|c| *c > 0.0)
        .or_else(|| (!listed.is_empty()).then_some(listed.len() as f64));
    if device.is_none() {
        anyhow::bail!("{}: no 'gpu' or 'gpu_nvidia' entry", path.display());
    }
    Ok((device, count))
}

/// Reads --model-config and checks it can be counted, before any log is read.
fn model_flops(args: &EnrichArgs) -> anyhow::Result<Option<ModelFlops>> {
    let Some(path) = &args.model_config else {
        return Ok(None);
    };
    let config = ModelConfig::from_file(path)?;
    mfu::flops::flops_per_token(
        &config,
        args.seq_len.map_or(1, |s| s as u64).max(1),
        args.attention.into(),
        args.recompute.into(),
    )?;
    Ok(Some(ModelFlops {
        config,
        attention: args.attention.into(),
    }))
}

fn add_stats(total: &mut mfu::compute::ComputeStats, s: &mfu::compute::ComputeStats) {
    total.rows += s.rows;
    total.null_mfu_rows += s.null_mfu_rows;
    total.bad_step_time_rows += s.bad_step_time_rows;
    total.bad_count_rows += s.bad_count_rows;
    total.mfu_above_one_rows += s.mfu_above_one_rows;
}

/// Reads, enriches and (with --out-dir) writes one input.
fn process(
    input: &Input,
    read_options: &ReadOptions,
    options: &EnrichOptions,
    args: &EnrichArgs,
    destination: &Destination,
    index: usize,
    metadata: &mfu::write::Metadata,
) -> anyhow::Result<Processed> {
    let read = read_input(input, read_options)?;
    let rows = read.frame.height();
    let enriched = if read.shape.timing_optional() {
        let mut shaped = options.clone();
        shaped.columns.timing_optional = true;
        enrich_frame(read.frame, &shaped)
    } else {
        enrich_frame(read.frame, options)
    }
    .with_context(|| input.display.clone())?;
    if args.verbose {
        eprintln!(
            "mfu: {}: {} log, {rows} rows; {}",
            input.display,
            read.shape,
            enriched.mapping.describe()
        );
        for note in &read.notes {
            eprintln!("mfu: {}: {note}", input.display);
        }
    }
    let mut warnings = Vec::new();
    if enriched.mapping.source(Field::StepTime) == &FieldSource::Missing {
        warnings.push(format!(
            "{}: this {} log has no step timing: throughput and MFU are null",
            input.display, read.shape
        ));
    }
    if options.logged_peak_flops.is_some()
        && enriched.mapping.source(Field::LoggedMfu) == &FieldSource::Missing
    {
        warnings.push(format!(
            "{}: --logged-peak-flops given but the log has no MFU column (mfu, mfu(%), perf/mfu_wall_clock, ...)",
            input.display
        ));
    }
    for (column, cells) in &enriched.non_numeric {
        warnings.push(format!(
            "{}: column '{column}': {cells} cell{} not a number (null in the derived columns)",
            input.display,
            if *cells == 1 { " is" } else { "s are" }
        ));
    }
    for (old, new) in &enriched.renamed {
        warnings.push(format!(
            "{}: the input's own column '{old}' is kept as '{new}'",
            input.display
        ));
    }
    if args.strict {
        if let Some((why, rows)) = enriched.stats.unresolved.first() {
            bail!("{}: --strict: {} for {rows} rows", input.display, why);
        }
    }
    let mut frame = Some(enriched.frame);
    if let Destination::PerInput { paths, format } = destination {
        let mut df = frame.take().expect("just set");
        write_file(&paths[index], *format, &mut df, metadata, args.force)?;
    }
    Ok(Processed {
        frame,
        stats: enriched.stats,
        warnings,
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

fn progress_bar(files: usize, quiet: bool) -> ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar =
        ProgressBar::with_draw_target(Some(files as u64), ProgressDrawTarget::stderr_with_hz(5));
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} files  {msg}  eta {eta}")
            .expect("valid template"),
    );
    bar
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

    #[test]
    fn mapping_argument() {
        assert_eq!(
            parse_mapping("step_time=iter_s").unwrap(),
            (Field::StepTime, "iter_s".to_string())
        );
        assert!(parse_mapping("nope=x").is_err());
        assert!(parse_mapping("step_time").is_err());
    }
}
