//! The options every data command shares (inputs, shapes, columns, constants, peaks) and the parallel
//! read-and-enrich stage behind `enrich`, `summary` and `plot`.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;

use mfu::columns::{
    ColumnMapping, ColumnOptions, Constants, Field, FieldSource, ModelFlops, TimeUnit,
};
use mfu::enrich::{enrich_frame, is_enriched, reuse_enriched, EnrichOptions, Enriched};
use mfu::flops::ModelConfig;
use mfu::peaks::{parse_precision, Dtype};
use mfu::read::memory::{format_size, parse_size};
use mfu::read::{
    expand_inputs, group_event_files, group_tensorboard_tags, read_input, Held, Input, InputFormat,
    MemoryBudget, ReadOptions, Reject, RowKinds, Shape,
};

use super::{AttentionArg, PeakTableArgs, RecomputeArg};

/// Where the rows come from and how their fields are read: shared by enrich, summary and plot.
#[derive(Debug, Args)]
pub struct SourceArgs {
    /// Files, folders (searched recursively for known extensions), glob patterns, or - for standard input.
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<String>,

    /// Read inputs as this format whatever their names (required for standard input).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub input_format: Option<InputFormatArg>,

    /// Read inputs as this trainer layout instead of recognising it from content: table, hf-trainer-state,
    /// llamafactory, lightning, tensorboard, megatron, text, modded-nanogpt, nanogpt, megatron-log,
    /// ms-swift, tensorboard-events. A
    /// file not named like a table (.log, .txt, .out, no extension) is searched through for a preset's
    /// lines.
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

    /// Drop malformed JSONL lines and ragged CSV rows (each reported) instead of failing their input.
    #[arg(long)]
    pub skip_bad_rows: bool,

    /// The most memory that inputs read whole may take together, by mfu's estimate (about 3x a table's
    /// decompressed bytes, 20x a JSON document's), e.g. 8G or 512M. An input that would pass it is refused
    /// with an error instead of exhausting the machine. Large JSON Lines and CSV logs written with -o FILE
    /// stream in blocks and are not counted. Default: half the machine's (or the cgroup's) memory.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub max_memory: Option<u64>,

    /// Threads for processing inputs in parallel (default: one per core).
    #[arg(short, long, value_name = "N")]
    pub jobs: Option<usize>,

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

/// Everything needed to read and enrich the inputs, decided once before any data is read.
pub struct Pipeline {
    pub inputs: Vec<Input>,
    pub read: ReadOptions,
    pub options: EnrichOptions,
    jobs: Option<usize>,
    verbose: bool,
}

/// What reading and enriching one input showed, for its warnings and --verbose lines.
pub struct Seen {
    /// How it was read: whole (and how many bytes), or streamed in blocks.
    pub how: String,
    pub shape: Shape,
    pub rows: usize,
    pub notes: Vec<String>,
    /// The reader's own warnings about the input.
    pub read_warnings: Vec<String>,
    pub mapping: ColumnMapping,
    pub non_numeric: Vec<(String, usize)>,
    pub renamed: Vec<(String, String)>,
    pub torn: Option<Reject>,
    pub rejects: Vec<Reject>,
}

/// One input, read and enriched.
pub struct Loaded {
    pub enriched: Enriched,
    /// The memory its read reserved from --max-memory; given back when dropped.
    pub held: Held,
    /// Lines or rows that were not read: a torn last line, and those skipped under --skip-bad-rows.
    pub rejects: Vec<Reject>,
    /// Things the user should know (non-numeric cells, renamed columns, missing timing).
    pub warnings: Vec<String>,
}

impl Loaded {
    /// The column a --by key names in this input: a column of that name, else the column mapped to the
    /// field of that name (`run_id` may be a column called `run`).
    pub fn column_for(&self, key: &str) -> Option<String> {
        let names = self.enriched.frame.get_column_names();
        if names.iter().any(|n| n.as_str() == key) {
            return Some(key.to_string());
        }
        let field: Field = key.parse().ok()?;
        match self.enriched.mapping.source(field) {
            FieldSource::Column { name, .. } => Some(name.clone()),
            _ => None,
        }
    }
}

impl SourceArgs {
    /// Expands the inputs and resolves every option; `window` is enrich's rolling-mean width.
    pub fn pipeline(&self, window: Option<usize>) -> anyhow::Result<Pipeline> {
        let mut inputs = expand_inputs(&self.inputs)?;
        if self.shape.is_none() || self.shape == Some(Shape::TensorBoard) {
            inputs = group_tensorboard_tags(inputs);
        }
        if self.shape.is_none() || self.shape == Some(Shape::TensorBoardEvents) {
            inputs = group_event_files(inputs);
        }
        let format = self.input_format.map(InputFormat::from);
        if inputs.iter().any(|i| i.path.is_none()) && format.is_none() {
            anyhow::bail!("reading standard input needs --input-format jsonl|csv|tsv|parquet");
        }
        let (meta_device, meta_devices) = match &self.metadata {
            Some(path) => wandb_metadata(path)?,
            None => (None, None),
        };
        let resolver = Arc::new(self.table.resolver(self.model_dtype)?);
        let options = EnrichOptions {
            columns: ColumnOptions {
                map: self.map.clone(),
                time_unit: self.time_unit,
                constants: Constants {
                    device: self.device.clone().or(meta_device),
                    dtype: self.dtype.clone(),
                    num_devices: self.num_devices.or(meta_devices),
                    flops_per_token: self.flops_per_token,
                    tokens_per_step: self.tokens_per_step,
                    seq_len: self.seq_len,
                },
                allow_override: self.override_columns,
                model: model_flops(self)?,
                cumulative: self.cumulative.clone(),
                timing_optional: false,
                lenient: false,
            },
            resolver,
            recompute: self.recompute.into(),
            logged_peak_flops: self.logged_peak_flops,
            window,
        };
        Ok(Pipeline {
            inputs,
            read: ReadOptions {
                format,
                shape: self.shape,
                rows: self.rows,
                line_regex: self.line_regex.clone(),
                skip_bad_rows: self.skip_bad_rows,
                budget: Some(MemoryBudget::new(
                    self.max_memory.unwrap_or_else(MemoryBudget::default_limit),
                )),
            },
            options,
            jobs: self.jobs,
            verbose: self.verbose,
        })
    }
}

impl Pipeline {
    /// Reads and enriches one input. With `reuse`, a table that already has mfu's columns is taken as it
    /// is (for summaries and plots of enriched files).
    pub fn load(&self, input: &Input, reuse: bool) -> anyhow::Result<Loaded> {
        let (loaded, verbose) = self.load_quietly(input, reuse)?;
        for line in verbose {
            eprintln!("{line}");
        }
        Ok(loaded)
    }

    /// [`Pipeline::load`], giving back its --verbose lines instead of printing them.
    pub fn load_quietly(
        &self,
        input: &Input,
        reuse: bool,
    ) -> anyhow::Result<(Loaded, Vec<String>)> {
        let started = std::time::Instant::now();
        let read = read_input(input, &self.read)?;
        let read_s = started.elapsed().as_secs_f64();
        let rows = read.frame.height();
        let enriched = if reuse && is_enriched(&read.frame) {
            reuse_enriched(read.frame, &self.options)
        } else if read.shape.timing_optional() {
            let mut shaped = self.options.clone();
            shaped.columns.timing_optional = true;
            enrich_frame(read.frame, &shaped)
        } else {
            enrich_frame(read.frame, &self.options)
        }
        .with_context(|| input.display.clone())?;
        if std::env::var_os("MFU_TIMINGS").is_some() {
            eprintln!(
                "mfu: timings: {}: read {read_s:.3}s, enrich {:.3}s",
                input.display,
                started.elapsed().as_secs_f64() - read_s
            );
        }
        let seen = Seen {
            how: format!("read whole ({})", format_size(read.bytes)),
            shape: read.shape,
            rows,
            notes: read.notes,
            read_warnings: read.warnings,
            mapping: enriched.mapping.clone(),
            non_numeric: enriched.non_numeric.clone(),
            renamed: enriched.renamed.clone(),
            torn: read.torn,
            rejects: read.rejects,
        };
        let verbose = self.verbose_lines(input, &seen);
        let warnings = self.warnings(input, &seen);
        let rejects = seen.rejects.into_iter().chain(seen.torn).collect(); // in line order
        Ok((
            Loaded {
                enriched,
                held: read.held,
                rejects,
                warnings,
            },
            verbose,
        ))
    }

    /// With --verbose, what was read and how its columns were mapped.
    pub fn verbose_lines(&self, input: &Input, seen: &Seen) -> Vec<String> {
        if !self.verbose {
            return Vec::new();
        }
        let mut lines = vec![format!(
            "mfu: {}: {} log, {} rows, {}; {}",
            input.display,
            seen.shape,
            seen.rows,
            seen.how,
            seen.mapping.describe()
        )];
        for note in &seen.notes {
            lines.push(format!("mfu: {}: {note}", input.display));
        }
        lines
    }

    /// What the user should know about one input: non-numeric cells, renamed columns, missing timing,
    /// lines that were not read.
    pub fn warnings(&self, input: &Input, seen: &Seen) -> Vec<String> {
        let mut warnings: Vec<String> = seen
            .read_warnings
            .iter()
            .map(|w| format!("{}: {w}", input.display))
            .collect();
        for (column, cells) in &seen.non_numeric {
            warnings.push(format!(
                "{}: column '{column}': {cells} cell{} not a number (null in the derived columns)",
                input.display,
                if *cells == 1 { " is" } else { "s are" }
            ));
        }
        for (old, new) in &seen.renamed {
            warnings.push(format!(
                "{}: the input's own column '{old}' is kept as '{new}'",
                input.display
            ));
        }
        if seen.mapping.source(Field::StepTime) == &FieldSource::Missing {
            warnings.push(format!(
                "{}: this {} log has no step timing: throughput and MFU are null",
                input.display, seen.shape
            ));
        }
        if self.options.logged_peak_flops.is_some()
            && seen.mapping.source(Field::LoggedMfu) == &FieldSource::Missing
        {
            warnings.push(format!(
                "{}: --logged-peak-flops given but the log has no MFU column (mfu, mfu(%), perf/mfu_wall_clock, ...)",
                input.display
            ));
        }
        if let Some(torn) = &seen.torn {
            warnings.push(format!(
                "{}: line {} is cut short (a run killed mid-write?): skipped",
                input.display, torn.line
            ));
        }
        if !seen.rejects.is_empty() {
            warnings.push(format!(
                "{}: {} malformed line(s) skipped (--skip-bad-rows), the first at line {}: {}",
                input.display,
                seen.rejects.len(),
                seen.rejects[0].line,
                seen.rejects[0].reason
            ));
        }
        warnings
    }

    /// The worker threads (at most `--jobs`).
    pub fn pool(&self) -> anyhow::Result<rayon::ThreadPool> {
        // polars' readers run their own parallel work from inside these threads; nested pools need more
        // than rayon's default 2 MiB of stack.
        rayon::ThreadPoolBuilder::new()
            .num_threads(self.jobs.unwrap_or(0))
            .stack_size(32 << 20)
            .build()
            .context("starting worker threads")
    }

    /// Runs `work` on every input in parallel (at most `--jobs` threads), results in input order.
    pub fn for_each_input<T, F>(&self, work: F) -> anyhow::Result<Vec<anyhow::Result<T>>>
    where
        T: Send,
        F: Fn(usize, &Input) -> anyhow::Result<T> + Sync,
    {
        let pool = self.pool()?;
        Ok(pool.install(|| {
            self.inputs
                .par_iter()
                .enumerate()
                .map(|(i, input)| work(i, input))
                .collect()
        }))
    }
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
fn model_flops(args: &SourceArgs) -> anyhow::Result<Option<ModelFlops>> {
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

/// Writes rejected lines as JSON Lines (file, line, column, reason, text), atomically.
pub fn write_rejects(path: &Path, rejects: &[(String, Reject)]) -> anyhow::Result<()> {
    use std::io::Write;
    let mut text = Vec::new();
    for (file, r) in rejects {
        serde_json::to_writer(
            &mut text,
            &serde_json::json!({
                "file": file, "line": r.line, "column": r.column, "reason": r.reason, "text": r.text,
            }),
        )?;
        text.write_all(b"\n")?;
    }
    mfu::write::atomic::write_bytes(path, &text, true)
        .with_context(|| format!("writing {}", path.display()))
}

pub fn add_stats(total: &mut mfu::compute::ComputeStats, s: &mfu::compute::ComputeStats) {
    total.rows += s.rows;
    total.null_mfu_rows += s.null_mfu_rows;
    total.bad_step_time_rows += s.bad_step_time_rows;
    total.bad_count_rows += s.bad_count_rows;
    total.overflow_rows += s.overflow_rows;
    total.mfu_above_one_rows += s.mfu_above_one_rows;
    for (why, rows) in &s.unresolved {
        match total.unresolved.iter_mut().find(|(w, _)| w == why) {
            Some(slot) => slot.1 += rows,
            None => total.unresolved.push((why.clone(), *rows)),
        }
    }
}

pub fn progress_bar(files: usize, quiet: bool) -> ProgressBar {
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
