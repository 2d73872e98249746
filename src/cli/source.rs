//! The flags every data command shares (inputs, shapes, columns, constants, peaks, report), turned into the
//! library's [`Options`], and the terminal that shows a run's events.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use mfu::columns::{Field, TimeUnit};
use mfu::peaks::{parse_precision, Dtype};
use mfu::pipeline::windowed::{Part, Whole, WindowsRead};
use mfu::pipeline::{Event, Loaded, Observer, Options, PipelineError, Plan};
use mfu::read::memory::parse_size;
use mfu::read::{InputFormat, RowKinds, Shape};

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
    /// ms-swift, tensorboard-events, mlflow, wandb, torchtitan, dvclive, olmo, console (the general
    /// reader, for any console log). A file not named like a table (.log, .txt, .out, no extension) is
    /// searched through for a preset's lines. Standard input (`-`) needs it, or --input-format:
    /// `kubectl logs POD | mfu enrich - --shape console -o out.parquet`.
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

    /// The convention the log's own MFU counted FLOPs with (megatron, torchtitan, nanogpt, ...; see
    /// --convention): mfu_logged_corrected then re-bases the numerator too, x flops_per_token / that
    /// convention's count from --model-config at the row's sequence length.
    #[arg(
        long,
        value_name = "NAME",
        requires = "logged_peak_flops",
        requires = "model_config"
    )]
    pub logged_convention: Option<mfu::conventions::Convention>,

    /// Use COLUMN for FIELD instead of detecting it (FIELD: run_id, step, step_time, fwd_bwd_time, tokens,
    /// samples, num_devices, device_name, dtype, flops_per_token, flops_per_sample; token_rate or
    /// sample_rate: a rate of all devices the log measured, the throughput of rows with no step time or
    /// count). Repeatable.
    #[arg(long = "map", value_name = "FIELD=COLUMN", value_parser = parse_mapping)]
    pub map: Vec<(Field, String)>,

    /// Device name for every row, as a framework prints it (e.g. "NVIDIA H100 80GB HBM3"); a list of names,
    /// one per rank, separated by ';'.
    #[arg(long, value_name = "NAME")]
    pub device: Option<String>,

    /// Training precision for every row (bf16, fp16, fp32, tf32, fp8, fp4, or spellings such as bf16-mixed or
    /// nvfp4). An fp32 run with TF32 matmuls allowed (torch.backends.cuda.matmul.allow_tf32) is tf32.
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

    /// Samples per optimizer step (all devices together) for every row, for a log that counts
    /// images, utterances, sequences or completions rather than tokens: samples_per_second is then
    /// filled, and MFU too with --flops-per-sample.
    #[arg(long, value_name = "N", value_parser = parse_positive)]
    pub samples_per_step: Option<f64>,

    /// Model FLOPs per sample (forward + backward: about 3 x the forward pass) for every row. `mfu flops
    /// --vision` lists figures for common vision models.
    #[arg(long, value_name = "F", value_parser = parse_positive)]
    pub flops_per_sample: Option<f64>,

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

    /// Count FLOPs per token from the model config (--model-config, or a config.json beside a trainer
    /// state) the way this framework or paper does, to compare with its own MFU: mfu (the default),
    /// torchtitan, megatron, megatron-2024, megatron-2023, narayanan-2021, korthikanti-2022, nanogpt,
    /// nanochat, lightning-fused, lightning-eager, llm-foundry, hf, maxtext, levanter, palm, kaplan,
    /// chinchilla (`mfu flops --compare` shows them side by side; docs/flops.md).
    #[arg(long, value_name = "NAME", default_value = "mfu")]
    pub convention: mfu::conventions::Convention,

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

    #[command(flatten)]
    pub report: ReportArgs,

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
            "unknown precision '{s}': expected fp64, fp32, tf32, bf16, fp16, fp8, int8, fp6, fp4, no, or a spelling such as torch.bfloat16 or bf16-mixed"
        )),
    }
}

fn parse_positive(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("'{s}' must be a positive number")),
    }
}

impl SourceArgs {
    /// The library's options for these flags; `window` is enrich's rolling-mean width.
    pub fn options(&self, window: Option<usize>) -> Options {
        Options {
            inputs: self.inputs.clone(),
            input_format: self.input_format.map(InputFormat::from),
            shape: self.shape,
            rows: self.rows,
            line_regex: self.line_regex.clone(),
            cumulative: self.cumulative.clone(),
            metadata: self.metadata.clone(),
            logged_peak_flops: self.logged_peak_flops,
            map: self.map.clone(),
            device: self.device.clone(),
            dtype: self.dtype.clone(),
            num_devices: self.num_devices,
            flops_per_token: self.flops_per_token,
            tokens_per_step: self.tokens_per_step,
            seq_len: self.seq_len,
            samples_per_step: self.samples_per_step,
            flops_per_sample: self.flops_per_sample,
            model_dtype: self.model_dtype,
            model_config: self.model_config.clone(),
            attention: self.attention.into(),
            recompute: self.recompute.into(),
            override_columns: self.override_columns,
            time_unit: self.time_unit,
            skip_bad_rows: self.skip_bad_rows,
            max_memory: self.max_memory,
            jobs: self.report.jobs,
            verbose: self.report.verbose,
            peaks: self.table.peaks.clone(),
            peak_flops: self.table.peak_flops,
            window,
            optional_fields: false,
            every_attempt: false,
            storage: Default::default(),
            convention: self.convention,
            logged_convention: self.logged_convention,
        }
    }

    /// The plan for these flags.
    pub fn plan(&self, window: Option<usize>) -> Result<Plan, PipelineError> {
        self.plan_of(&self.options(window))
    }

    /// The plan of `options` (this command's, changed by it), staged as `-v` says.
    pub fn plan_of(&self, options: &Options) -> Result<Plan, PipelineError> {
        let plan = Plan::new(options)?;
        if self.report.verbose {
            for line in plan.staged_summary() {
                eprintln!("mfu: {line}");
            }
        }
        Ok(plan)
    }
}

/// The report flags every data command takes, the same way.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Threads for processing inputs in parallel (default: one per core).
    #[arg(short, long, value_name = "N")]
    pub jobs: Option<usize>,

    /// Print, for each input, its format, rows and which column or constant supplies each field.
    #[arg(short, long)]
    pub verbose: bool,

    /// No progress bar and no closing summary line (warnings and errors are still printed).
    #[arg(short, long)]
    pub quiet: bool,
}

/// Shows a run's events on standard error: a progress bar (on a terminal, unless --quiet), verbose lines
/// and timings.
pub struct Terminal {
    bar: ProgressBar,
    started: Instant,
    rows: AtomicUsize,
}

impl Terminal {
    pub fn new(files: usize, quiet: bool) -> Terminal {
        let bar = if quiet || !std::io::stderr().is_terminal() {
            ProgressBar::hidden()
        } else {
            let bar = ProgressBar::with_draw_target(
                Some(files as u64),
                ProgressDrawTarget::stderr_with_hz(5),
            );
            bar.set_style(
                ProgressStyle::with_template("{bar:30} {pos}/{len} files  {msg}  eta {eta}")
                    .expect("valid template"),
            );
            bar
        };
        Terminal {
            bar,
            started: Instant::now(),
            rows: AtomicUsize::new(0),
        }
    }

    /// Clears the progress bar, before the closing lines.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Observer for Terminal {
    fn on(&self, event: Event<'_>) {
        match event {
            Event::Restart => {
                self.bar.set_position(0);
                self.rows.store(0, Ordering::Relaxed);
            }
            Event::InputDone { rows } => {
                let done = self.rows.fetch_add(rows, Ordering::Relaxed) + rows;
                let rate = done as f64 / self.started.elapsed().as_secs_f64().max(1e-9);
                self.bar.set_message(format!("{rate:.0} rows/s"));
                self.bar.inc(1);
            }
            Event::Verbose(line) => self.bar.suspend(|| eprintln!("mfu: {line}")),
            Event::Timing(line) => self.bar.suspend(|| eprintln!("mfu: timings: {line}")),
        }
    }
}

/// Every input of `plan` read and enriched whole (the progress shown unless `quiet`), for the commands
/// that summarise or draw: each input's warnings, each failure and the files skipped are reported on
/// stderr. Gives the inputs that loaded, with their display names, and whether any failed.
pub fn load_reported(
    plan: &Plan,
    quiet: bool,
) -> Result<(Vec<(String, Loaded)>, bool), PipelineError> {
    let terminal = Terminal::new(plan.inputs.len(), quiet);
    let results = plan.load_all(true, &terminal);
    terminal.finish();
    let mut loaded = Vec::new();
    let mut failed = false;
    let mut skipped = Vec::new();
    for (input, result) in plan.inputs.iter().zip(results?) {
        match result {
            Err(e) if e.is_skip(input) => skipped.extend(e.skipped(input)),
            Ok(l) => {
                for w in &l.warnings {
                    eprintln!("mfu: warning: {w}");
                }
                loaded.push((input.display.clone(), l));
            }
            Err(e) => {
                eprintln!("mfu: error: {:#}", anyhow::Error::new(e));
                failed = true;
            }
        }
    }
    for w in mfu::pipeline::skip_warning(&skipped) {
        eprintln!("mfu: warning: {w}");
    }
    Ok((loaded, failed))
}

/// The inputs of a per-run command that has a fold, where any is a large console log: the others
/// read whole (in parallel, as [`load_reported`] reads them), the logs folded window by window, all
/// handed to `fold` in input order; what each input's reading says (`-v`, warnings, errors) is said
/// as [`load_reported`] says it. `None` where no input is such a log, or the fold cannot fold them as
/// they read whole (`-v` says why): every input is then read whole.
#[allow(clippy::type_complexity)]
pub fn fold_reported<T>(
    plan: &Plan,
    quiet: bool,
    fold: impl FnOnce(
        &Plan,
        Vec<Part>,
        &dyn Observer,
    ) -> Result<Result<(T, Vec<WindowsRead>), Whole>, PipelineError>,
) -> Result<Option<(T, bool)>, PipelineError> {
    let Some(windowed) = plan.windowed_inputs() else {
        return Ok(None);
    };
    let terminal = Terminal::new(plan.inputs.len(), quiet);
    // The loaded inputs' -v lines wait until the fold is known to hold (else the whole read says them).
    let said = Said {
        terminal: &terminal,
        lines: std::sync::Mutex::new(Vec::new()),
    };
    let items = plan.parts(&windowed, true, &said)?;
    let mut parts = Vec::new();
    // What to say of each input that is not skipped, in input order.
    enum Report {
        /// Folded: its warnings are its windows' reading's, in the order the fold gives them.
        Folded,
        Read(Vec<String>),
        Failed(String),
    }
    let mut reports: Vec<Report> = Vec::new();
    let mut skipped = Vec::new();
    for (input, part) in items {
        match part {
            Ok(Part::Loaded(display, l)) => {
                reports.push(Report::Read(l.warnings.clone()));
                parts.push(Part::Loaded(display, l));
            }
            Ok(part) => {
                reports.push(Report::Folded);
                parts.push(part);
            }
            Err(e) if e.is_skip(input) => skipped.extend(e.skipped(input)),
            Err(e) => reports.push(Report::Failed(format!("{:#}", anyhow::Error::new(e)))),
        }
    }
    let folded = fold(plan, parts, &terminal)?;
    let (folded, reads) = match folded {
        Ok(folded) => folded,
        Err(why) => {
            if let (Some(why), true) = (why, plan.verbose()) {
                terminal.on(Event::Verbose(&format!(
                    "not folded window by window ({why}); the whole-input way reads every input"
                )));
            }
            terminal.finish();
            return Ok(None);
        }
    };
    for line in said.lines.into_inner().unwrap_or_default() {
        terminal.on(Event::Verbose(&line));
    }
    for read in &reads {
        for line in &read.verbose {
            terminal.on(Event::Verbose(line));
        }
        terminal.on(Event::InputDone { rows: read.rows });
    }
    terminal.finish();
    let mut reads = reads.into_iter();
    let mut failed = false;
    for report in reports {
        match report {
            Report::Folded => {
                for w in reads.next().map(|r| r.warnings).unwrap_or_default() {
                    eprintln!("mfu: warning: {w}");
                }
            }
            Report::Read(warnings) => warnings.iter().for_each(|w| eprintln!("mfu: warning: {w}")),
            Report::Failed(error) => {
                eprintln!("mfu: error: {error}");
                failed = true;
            }
        }
    }
    for w in mfu::pipeline::skip_warning(&skipped) {
        eprintln!("mfu: warning: {w}");
    }
    Ok(Some((folded, failed)))
}

/// An observer that keeps the `-v` lines and passes everything else to the terminal.
struct Said<'a> {
    terminal: &'a Terminal,
    lines: std::sync::Mutex<Vec<String>>,
}

impl Observer for Said<'_> {
    fn on(&self, event: Event<'_>) {
        match event {
            Event::Verbose(line) => {
                if let Ok(mut lines) = self.lines.lock() {
                    lines.push(line.to_string());
                }
            }
            other => self.terminal.on(other),
        }
    }
}

/// An output given as a URL, opened before any work (an existing object refused unless `force`): the
/// object, the local file to write first and its private folder. `None` for a local path.
pub fn remote_output(
    output: &Path,
    plan: &Plan,
    force: bool,
) -> Result<Option<(mfu::store::Remote, PathBuf, tempfile::TempDir)>, PipelineError> {
    match output.to_str() {
        Some(url) if mfu::store::is_url(url) => {
            mfu::pipeline::remote_output(url, &plan.storage, force).map(Some)
        }
        _ => Ok(None),
    }
}
