//! The read-enrich-write pipeline as every front end runs it: options in, rows out, progress and warnings
//! as data.
//!
//! [`Options`] is a plain struct (the command line and the Python package each fill it their own way);
//! [`Plan::new`] expands the inputs and resolves every option once, before any data is read; then
//! [`Plan::load`] reads and enriches one input ([`Plan::for_each_input`] runs that on every input in
//! parallel), and [`enrich::run`] takes a run through to the output files. What a run has to tell its user
//! comes back as data: [`Event`]s while it works (progress, `verbose` lines), and warnings and errors in its
//! result. Nothing here prints.
//!
//! The stages below (read → columns → peaks → compute → write) know nothing of this module.

pub mod arrow;
pub mod audit;
pub mod destination;
pub mod enrich;
pub mod goodput;
pub mod job;
pub mod runs;
mod stream;
pub mod summary;
pub mod windowed;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;

use crate::columns::{
    ColumnMapping, ColumnOptions, Constants, Field, FieldSource, ModelFlops, TimeUnit,
};
use crate::enrich::{
    enrich_frame, is_enriched, reuse_enriched, EnrichError, EnrichOptions, Enriched,
};
use crate::flops::{Attention, FlopsError, ModelConfig, Recompute};
use crate::peaks::{Dtype, PeakTable, ResolveOptions, Resolver, TableError};
use crate::read::memory::format_size;
use crate::read::{
    expand_inputs, group_event_files, group_tensorboard_tags, read_input, Held, Input, InputError,
    InputFormat, MemoryBudget, ReadError, ReadOptions, Reject, RowKinds, Shape,
};
use crate::write::WriteError;

/// Everything a run is asked to do, as plain values. `Options::default()` reads with every detection on
/// and no constants: the fields a front end leaves alone keep mfu's defaults.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Files, folders (searched recursively), glob patterns, or `-` for standard input.
    pub inputs: Vec<String>,
    /// The table format whatever the names say (required for standard input).
    pub input_format: Option<InputFormat>,
    /// The trainer layout whatever the content suggests.
    pub shape: Option<Shape>,
    /// Which rows of a log with several kinds to keep.
    pub rows: RowKinds,
    /// A text log's rows: one per matching line, one column per named group.
    pub line_regex: Option<regex::Regex>,
    /// Fields whose columns are running totals whatever their names.
    pub cumulative: Vec<Field>,
    /// A W&B `wandb-metadata.json` that supplies the device name and count.
    pub metadata: Option<PathBuf>,
    /// The peak a log's own MFU column was computed against.
    pub logged_peak_flops: Option<f64>,
    /// Columns chosen for fields instead of detected.
    pub map: Vec<(Field, String)>,
    /// Constants for every row, where the log has no column (or with `override_columns`, always).
    pub device: Option<String>,
    pub dtype: Option<String>,
    pub num_devices: Option<f64>,
    pub flops_per_token: Option<f64>,
    pub tokens_per_step: Option<f64>,
    pub seq_len: Option<f64>,
    /// Samples per optimizer step and model FLOPs per sample, for logs that count samples (images,
    /// utterances, completions) rather than tokens.
    pub samples_per_step: Option<f64>,
    pub flops_per_sample: Option<f64>,
    /// What precision "no" (accelerate's mixed_precision) means.
    pub model_dtype: Option<Dtype>,
    /// A model config.json to count FLOPs per token from, with `seq_len`.
    pub model_config: Option<PathBuf>,
    pub attention: Attention,
    pub recompute: Recompute,
    /// Let the constants replace columns the log has.
    pub override_columns: bool,
    /// The unit of every duration column, whatever its name says.
    pub time_unit: Option<TimeUnit>,
    /// Drop malformed lines and ragged rows (each reported) instead of failing their input.
    pub skip_bad_rows: bool,
    /// What inputs read whole may take together, in bytes (default: half the machine's memory).
    pub max_memory: Option<u64>,
    /// Worker threads (default: one per core).
    pub jobs: Option<usize>,
    /// Report how each input was read and mapped ([`Event::Verbose`]).
    pub verbose: bool,
    /// Peak-table files added to (or replacing entries of) the built-in table, later files winning.
    pub peaks: Vec<PathBuf>,
    /// One peak for every device and precision.
    pub peak_flops: Option<f64>,
    /// Rolling means over this many rows of each run.
    pub window: Option<usize>,
    /// No field is required: a field no column, flag or fact gives is left empty (and MFU with it)
    /// instead of an error. For `mfu goodput`, whose time buckets need only steps and times.
    pub optional_fields: bool,
    /// Read the rows of every attempt of a resumed run (see [`ReadOptions::every_attempt`]).
    pub every_attempt: bool,
    /// Whose count of FLOPs per token a model configuration is counted with (mfu's own by default).
    pub convention: crate::conventions::Convention,
    /// The convention a log's own MFU counted FLOPs with: `mfu_logged_corrected` re-bases its numerator
    /// too (needs `model_config`).
    pub logged_convention: Option<crate::conventions::Convention>,
    /// Options for the object stores URL inputs and outputs live in (keys as `object_store` takes
    /// them; they win over the environment).
    pub storage: crate::store::StorageOptions,
}

impl Options {
    /// The peak table these options ask for: the built-in one with `peaks` files applied.
    pub fn peak_table(&self) -> Result<PeakTable, PipelineError> {
        PeakTable::with_user_files(&self.peaks).map_err(PipelineError::Peaks)
    }

    /// How each table is enriched under these options (the W&B metadata and the model config are read
    /// here, once).
    pub fn enrich_options(&self) -> Result<EnrichOptions, PipelineError> {
        let (meta_device, meta_devices) = match &self.metadata {
            Some(path) => wandb_metadata(path)?,
            None => (None, None),
        };
        Ok(EnrichOptions {
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
                    samples_per_step: self.samples_per_step,
                    flops_per_sample: self.flops_per_sample,
                },
                allow_override: self.override_columns,
                model: model_flops(self)?,
                convention: self.convention,
                cumulative: self.cumulative.clone(),
                timing_optional: false,
                lenient: self.optional_fields,
                facts: Vec::new(),
                hints: Vec::new(),
            },
            resolver: Arc::new(self.resolver()?),
            recompute: self.recompute,
            logged_peak_flops: self.logged_peak_flops,
            window: self.window,
        })
    }

    /// The resolver these options ask for.
    pub fn resolver(&self) -> Result<Resolver, PipelineError> {
        Ok(Resolver::new(
            self.peak_table()?,
            ResolveOptions {
                forced_peak: self.peak_flops,
                model_dtype: self.model_dtype,
            },
        ))
    }
}

/// Why a run, or one of its inputs, failed.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error(transparent)]
    Inputs(#[from] InputError),
    #[error("reading standard input needs --input-format jsonl|csv|tsv|parquet for a table, or --shape for a trainer's log (--shape console for any console log)")]
    StdinNeedsFormat,
    #[error("{path}: {message}")]
    Metadata { path: String, message: String },
    #[error("loading --peaks: {0}")]
    Peaks(TableError),
    #[error(transparent)]
    Flops(#[from] FlopsError),
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("{input}: {error}")]
    Enrich { input: String, error: EnrichError },
    #[error("{input}: --strict: {why} for {rows} rows")]
    Strict {
        input: String,
        why: String,
        rows: usize,
    },
    /// An output that cannot be written where it was asked for (named, with what to do instead).
    #[error("{0}")]
    Output(String),
    #[error(transparent)]
    Write(#[from] WriteError),
    /// Reading or writing a file failed (`what`: "reading FILE", "writing FILE").
    #[error("{what}: {error}")]
    Io { what: String, error: std::io::Error },
    #[error("creating {path}: {error}")]
    CreateDir { path: String, error: std::io::Error },
    #[error("starting worker threads: {0}")]
    Threads(#[from] rayon::ThreadPoolBuildError),
    #[error("combining inputs: {0}")]
    Combine(polars::prelude::PolarsError),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// Options that do not go together (named, with what to give).
    #[error("{0}")]
    Usage(String),
}

impl PipelineError {
    /// Whether this error of `input` is a skip, not a failure: a text file a folder walk found that no
    /// console-log preset reads.
    pub fn is_skip(&self, input: &Input) -> bool {
        matches!(self, PipelineError::Read(e) if e.is_skip(input))
    }

    /// The skip's kind and `input`'s name, for [`skip_warning`]; `None` when this is a failure.
    pub fn skipped(&self, input: &Input) -> Option<Skipped> {
        match self {
            PipelineError::Read(e) => e.skip_kind(input).map(|kind| Skipped {
                input: input.display.clone(),
                kind,
            }),
            _ => None,
        }
    }
}

/// An input left out because it is not a log (see [`ReadError::skip_kind`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Skipped {
    pub input: String,
    /// The words for the warning, the same for every input of the kind.
    pub kind: &'static str,
}

/// One warning per kind of skipped input: how many, and the first.
pub fn skip_warning(skipped: &[Skipped]) -> Vec<String> {
    let mut kinds: Vec<&'static str> = Vec::new();
    for s in skipped {
        if !kinds.contains(&s.kind) {
            kinds.push(s.kind);
        }
    }
    kinds
        .into_iter()
        .map(|kind| {
            let of_kind: Vec<&Skipped> = skipped.iter().filter(|s| s.kind == kind).collect();
            let hint = if kind.starts_with("text") {
                "; name a file to read it as a table, or give --shape or --line-regex"
            } else {
                ""
            };
            format!(
                "{} {kind} (the first: {}){hint}",
                of_kind.len(),
                of_kind[0].input
            )
        })
        .collect()
}

/// What a run reports while it works; each front end shows it its own way.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Event<'a> {
    /// The run starts over (streaming gave up and every input is read whole): progress is back at 0.
    Restart,
    /// One input is done: read, enriched, and written or queued for the output (its rows).
    InputDone { rows: usize },
    /// With [`Options::verbose`]: how an input was read and mapped, or why the run reads whole.
    Verbose(&'a str),
    /// With `MFU_TIMINGS` set: where the time went.
    Timing(&'a str),
}

/// Receives a run's [`Event`]s, from any of its threads.
pub trait Observer: Sync {
    fn on(&self, event: Event<'_>);
}

/// An observer that ignores everything.
pub struct Silent;

impl Observer for Silent {
    fn on(&self, _: Event<'_>) {}
}

/// Whether `MFU_TIMINGS` asks for [`Event::Timing`].
pub(crate) fn timings_wanted() -> bool {
    std::env::var_os("MFU_TIMINGS").is_some()
}

/// Everything needed to read and enrich the inputs, decided once before any data is read.
pub struct Plan {
    pub inputs: Vec<Input>,
    pub read: ReadOptions,
    pub options: EnrichOptions,
    jobs: Option<usize>,
    verbose: bool,
    /// URL inputs copied to local folders, kept (and their folders with them) as long as the plan.
    staged: Vec<crate::store::Staged>,
    /// Options for the stores of URL inputs and outputs.
    pub storage: crate::store::StorageOptions,
}

/// What reading and enriching one input showed, for its warnings and verbose lines.
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
    /// What a column's values meant other than they say, in words (each said once per input).
    pub column_warnings: Vec<String>,
    pub renamed: Vec<(String, String)>,
    pub torn: Option<Reject>,
    pub rejects: Vec<Reject>,
}

/// One input, read and enriched.
pub struct Loaded {
    pub enriched: Enriched,
    /// The memory its read reserved from the budget; given back when dropped.
    pub held: Held,
    /// Lines or rows that were not read: a torn last line, and those skipped under `skip_bad_rows`.
    pub rejects: Vec<Reject>,
    /// Things the user should know (non-numeric cells, renamed columns, missing timing).
    pub warnings: Vec<String>,
    /// What the log's lines say happened before some rows (a console log's `Training starts at step N`,
    /// evaluations, checkpoints), sorted by row; `None` where the reader does not look.
    pub marks: Option<Vec<(usize, crate::goodput::Mark)>>,
    /// The argument the input came from (see [`crate::read::Input::argument`]).
    pub argument: String,
    /// How it was read (a trainer's log by its preset, a table, ...).
    pub shape: Shape,
}

impl Loaded {
    /// The column a `by` key names in this input: a column of that name, else the column mapped to the
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

/// An output URL opened, with the local file to write first (in a private folder, named as the URL's
/// object so its extension gives the format) and the folder, removed when dropped. An existing object
/// is refused here, before any work, unless `force`.
pub fn remote_output(
    url: &str,
    storage: &crate::store::StorageOptions,
    force: bool,
) -> Result<(crate::store::Remote, PathBuf, tempfile::TempDir), PipelineError> {
    let remote = crate::store::open(url, storage)?;
    if !force && remote.exists()? {
        return Err(crate::store::StoreError::Exists { url: remote.url }.into());
    }
    let folder = tempfile::Builder::new()
        .prefix("mfu-upload-")
        .tempdir()
        .map_err(|error| PipelineError::CreateDir {
            path: std::env::temp_dir().display().to_string(),
            error,
        })?;
    let name = remote
        .url
        .rsplit('/')
        .next()
        .filter(|n| !n.is_empty())
        .unwrap_or("output")
        .to_string();
    let local = folder.path().join(name);
    Ok((remote, local, folder))
}

/// The input arguments with each URL replaced by the local copy of what it names (see
/// [`crate::store`]), and the copies.
fn stage_urls(
    args: &[String],
    storage: &crate::store::StorageOptions,
) -> Result<(Vec<String>, Vec<crate::store::Staged>), PipelineError> {
    let mut local = Vec::with_capacity(args.len());
    let mut staged = Vec::new();
    for arg in args {
        if crate::store::is_url(arg) {
            let copy = crate::store::open(arg, storage)?.stage()?;
            local.push(copy.local.display().to_string());
            staged.push(copy);
        } else {
            local.push(arg.clone());
        }
    }
    Ok((local, staged))
}

/// Names inputs found in staged copies by their URLs: a name that starts with a copy's local path (a
/// file, a run folder, `store#run`) starts with its URL instead, the rest joined with `/`.
fn name_staged(inputs: &mut [Input], staged: &[crate::store::Staged]) {
    for input in inputs {
        for copy in staged {
            let local = copy.local.display().to_string();
            let Some(rest) = input.display.strip_prefix(&local) else {
                continue;
            };
            let rest = rest.replace(std::path::MAIN_SEPARATOR, "/");
            input.display = if rest.is_empty() || rest.starts_with('/') || rest.starts_with('#') {
                format!("{}{rest}", copy.url)
            } else {
                continue;
            };
            if let Some(rest) = input.argument.strip_prefix(&local) {
                input.argument = format!(
                    "{}{}",
                    copy.url,
                    rest.replace(std::path::MAIN_SEPARATOR, "/")
                );
            }
            break;
        }
    }
}

impl Plan {
    /// Expands the inputs and resolves every option.
    pub fn new(options: &Options) -> Result<Plan, PipelineError> {
        let (args, staged) = stage_urls(&options.inputs, &options.storage)?;
        let mut inputs = expand_inputs(&args)?;
        if options.shape.is_none() || options.shape == Some(Shape::TensorBoard) {
            inputs = group_tensorboard_tags(inputs);
        }
        if options.shape.is_none() || options.shape == Some(Shape::TensorBoardEvents) {
            inputs = group_event_files(inputs);
        }
        name_staged(&mut inputs, &staged);
        // Standard input has no name to tell a table's format by; a trainer's log says its shape.
        if inputs.iter().any(|i| i.path.is_none())
            && options.input_format.is_none()
            && options.shape.is_none()
            && options.line_regex.is_none()
        {
            return Err(PipelineError::StdinNeedsFormat);
        }
        let enrich = options.enrich_options()?;
        Ok(Plan {
            inputs,
            read: ReadOptions {
                format: options.input_format,
                shape: options.shape,
                rows: options.rows,
                line_regex: options.line_regex.clone(),
                skip_bad_rows: options.skip_bad_rows,
                given: crate::read::console::Given {
                    num_devices: options.num_devices,
                    seq_len: options.seq_len,
                    tokens_per_step: options.tokens_per_step,
                    samples_per_step: options.samples_per_step,
                },
                every_attempt: options.every_attempt,
                budget: Some(MemoryBudget::new(
                    options
                        .max_memory
                        .unwrap_or_else(MemoryBudget::default_limit),
                )),
            },
            options: enrich,
            jobs: options.jobs,
            verbose: options.verbose,
            staged,
            storage: options.storage.clone(),
        })
    }

    /// What staging the URL inputs copied, in words (`-v`): objects, bytes, and objects left out.
    pub fn staged_summary(&self) -> Vec<String> {
        self.staged
            .iter()
            .map(|s| {
                format!(
                    "{}: {} object(s), {}, copied to a private folder{}",
                    s.url,
                    s.objects,
                    crate::read::memory::format_size(s.bytes),
                    if s.left_out > 0 {
                        format!(
                            "; {} object(s) no reader takes (checkpoints, images, ...) left out",
                            s.left_out
                        )
                    } else {
                        String::new()
                    }
                )
            })
            .collect()
    }

    /// Whether `--verbose` asked for what was read and how.
    pub fn verbose(&self) -> bool {
        self.verbose
    }

    /// Reads and enriches one input, its verbose lines sent to `observer`. With `reuse`, a table that
    /// already has mfu's columns is taken as it is (for summaries and plots of enriched files).
    pub fn load(
        &self,
        input: &Input,
        reuse: bool,
        observer: &dyn Observer,
    ) -> Result<Loaded, PipelineError> {
        let (loaded, verbose) = self.load_quietly(input, reuse, observer)?;
        for line in verbose {
            observer.on(Event::Verbose(&line));
        }
        Ok(loaded)
    }

    /// [`Plan::load`], giving back its verbose lines instead of sending them (the streaming way sends
    /// them in input order once the output is written).
    pub(crate) fn load_quietly(
        &self,
        input: &Input,
        reuse: bool,
        observer: &dyn Observer,
    ) -> Result<(Loaded, Vec<String>), PipelineError> {
        let started = std::time::Instant::now();
        let read = read_input(input, &self.read)?;
        let read_s = started.elapsed().as_secs_f64();
        let rows = read.frame.height();
        let marks = read.marks;
        let enriched = if reuse && is_enriched(&read.frame) {
            reuse_enriched(read.frame, &self.options, read.recorded.as_deref())
        } else if read.shape.timing_optional()
            || !read.facts.is_empty()
            || read.model.is_some()
            || !read.hints.is_empty()
        {
            let options = self.options.for_input(
                read.shape.timing_optional(),
                &read.facts,
                read.model.as_ref(),
                &read.hints,
            );
            enrich_frame(read.frame, &options)
        } else {
            enrich_frame(read.frame, &self.options)
        }
        .map_err(|error| PipelineError::Enrich {
            input: input.display.clone(),
            error,
        })?;
        if timings_wanted() {
            observer.on(Event::Timing(&format!(
                "{}: read {read_s:.3}s, enrich {:.3}s",
                input.display,
                started.elapsed().as_secs_f64() - read_s
            )));
        }
        let seen = Seen {
            how: if read.in_windows {
                format!(
                    "read in windows ({}), their rows put together",
                    format_size(read.bytes)
                )
            } else {
                format!("read whole ({})", format_size(read.bytes))
            },
            shape: read.shape,
            rows,
            notes: read.notes,
            read_warnings: read.warnings,
            mapping: enriched.mapping.clone(),
            non_numeric: enriched.non_numeric.clone(),
            column_warnings: enriched.column_warnings.clone(),
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
                marks,
                argument: input.argument.clone(),
                shape: seen.shape,
            },
            verbose,
        ))
    }

    /// With `verbose`, what was read and how its columns were mapped.
    fn verbose_lines(&self, input: &Input, seen: &Seen) -> Vec<String> {
        if !self.verbose {
            return Vec::new();
        }
        let mut lines = vec![format!(
            "{}: {} log, {} rows, {}; {}",
            input.display,
            seen.shape,
            seen.rows,
            seen.how,
            seen.mapping.describe()
        )];
        for note in &seen.notes {
            lines.push(format!("{}: {note}", input.display));
        }
        lines.iter().map(|l| self.shown(l)).collect()
    }

    /// What the user should know about one input (see [`warnings_for`]).
    fn warnings(&self, input: &Input, seen: &Seen) -> Vec<String> {
        warnings_for(&input.display, seen, &self.options)
            .iter()
            .map(|w| self.shown(w))
            .collect()
    }

    /// `text` with every local copy of a URL input named by its URL (a file a reader opened beside a
    /// log, in `-v` and warnings).
    pub fn shown(&self, text: &str) -> String {
        let mut text = text.to_string();
        for copy in &self.staged {
            let (local, url) = copy.names();
            text = text.replace(&local, &url);
        }
        text
    }

    /// The worker threads (at most `jobs`).
    pub fn pool(&self) -> Result<rayon::ThreadPool, PipelineError> {
        // polars' readers run their own parallel work from inside these threads; nested pools need more
        // than rayon's default 2 MiB of stack.
        Ok(rayon::ThreadPoolBuilder::new()
            .num_threads(self.jobs.unwrap_or(0))
            .stack_size(32 << 20)
            .build()?)
    }

    /// Runs `work` on every input in parallel (at most `jobs` threads), results in input order.
    pub fn for_each_input<T, F>(
        &self,
        work: F,
    ) -> Result<Vec<Result<T, PipelineError>>, PipelineError>
    where
        T: Send,
        F: Fn(usize, &Input) -> Result<T, PipelineError> + Sync,
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

    /// Every input read and enriched into one frame, as `enrich -o FILE` writes it (several inputs stacked
    /// by column name, with a `source_file` column), with the warnings `enrich` gives. The first input that fails
    /// fails the whole read.
    pub fn read_all(
        &self,
        observer: &dyn Observer,
    ) -> Result<(polars::prelude::DataFrame, Vec<String>), PipelineError> {
        let mut parts = Vec::with_capacity(self.inputs.len());
        let mut warnings = Vec::new();
        let mut stats = crate::compute::ComputeStats::default();
        let mut skipped = Vec::new();
        for (input, loaded) in self.inputs.iter().zip(self.load_all(false, observer)?) {
            let loaded = match loaded {
                Err(e) if e.is_skip(input) => {
                    skipped.extend(e.skipped(input));
                    continue;
                }
                other => other?,
            };
            warnings.extend(loaded.warnings);
            stats.add(&loaded.enriched.stats);
            parts.push((input.display.clone(), loaded.enriched.frame));
        }
        warnings.extend(enrich::stats_warnings(&stats));
        warnings.extend(skip_warning(&skipped));
        if parts.is_empty() {
            return Err(PipelineError::Output(
                "no input holds a log mfu reads".into(),
            ));
        }
        let frame = if parts.len() == 1 {
            parts.pop().map(|(_, f)| f).unwrap_or_default()
        } else {
            crate::enrich::combine(parts).map_err(PipelineError::Combine)?
        };
        Ok((frame, warnings))
    }

    /// Every input read and enriched (in parallel), in input order: what `summary` and `plot` work on.
    /// With `reuse`, tables mfu already enriched are taken as they are.
    pub fn load_all(
        &self,
        reuse: bool,
        observer: &dyn Observer,
    ) -> Result<Vec<Result<Loaded, PipelineError>>, PipelineError> {
        self.for_each_input(|_, input| {
            let loaded = self.load(input, reuse, observer);
            if let Ok(l) = &loaded {
                observer.on(Event::InputDone {
                    rows: l.enriched.frame.height(),
                });
            }
            loaded
        })
    }
}

/// What the user should know about one input (called `display` in the messages): the reader's warnings,
/// non-numeric cells, a `--convention` that FLOPs given outright leave unused, renamed columns, missing
/// timing, an MFU column missing under `--logged-peak-flops`, lines that were not read.
pub fn warnings_for(display: &str, seen: &Seen, options: &EnrichOptions) -> Vec<String> {
    let mut warnings: Vec<String> = seen
        .read_warnings
        .iter()
        .map(|w| format!("{}: {w}", display))
        .collect();
    for (column, cells) in &seen.non_numeric {
        warnings.push(format!(
            "{}: column '{column}': {cells} cell{} not a number (null in the derived columns)",
            display,
            if *cells == 1 { " is" } else { "s are" }
        ));
    }
    for warning in &seen.column_warnings {
        warnings.push(format!("{display}: {warning}"));
    }
    let convention = options.columns.convention;
    let flops_from = seen.mapping.source(Field::FlopsPerToken);
    if convention != crate::conventions::Convention::Mfu
        && !matches!(flops_from, FieldSource::ModelConfig)
    {
        warnings.push(format!(
            "{display}: --convention {convention} counts FLOPs per token from a model config; this input's come from {flops_from}, as given"
        ));
    }
    for (old, new) in &seen.renamed {
        warnings.push(format!(
            "{}: the input's own column '{old}' is kept as '{new}'",
            display
        ));
    }
    // Throughput is filled without a device count or FLOPs a unit; MFU is not, and says why.
    let unit = seen.mapping.unit();
    let (flops_field, flops_flag, per) = match unit {
        crate::columns::WorkUnit::Tokens => (
            Field::FlopsPerToken,
            "--flops-per-token or --model-config",
            "token",
        ),
        crate::columns::WorkUnit::Samples => (
            Field::FlopsPerSample,
            "--flops-per-sample (`mfu flops --vision` lists common vision models)",
            "sample",
        ),
    };
    let missing = |field: Field| seen.mapping.source(field) == &FieldSource::Missing;
    // A rate the log measured stands for a count and a time together.
    let rated = seen.mapping.has_logged_rate();
    let counted = !(missing(Field::Tokens) && missing(Field::Samples)) || rated;
    if !counted && !options.columns.lenient {
        warnings.push(format!(
            "{display}: no count a step (tokens or samples): throughput and MFU are null; give it with --tokens-per-step, or --samples-per-step for a log that counts images, utterances or other samples"
        ));
    }
    if missing(Field::NumDevices) && counted && !options.columns.lenient {
        warnings.push(format!(
            "{display}: no device count: achieved FLOP/s and MFU are null, throughput is filled; give it with --num-devices"
        ));
    }
    if missing(flops_field) && counted && !options.columns.lenient {
        warnings.push(format!(
            "{display}: no FLOPs per {per}: MFU is null, throughput is filled; give it with {flops_flag}"
        ));
    }
    if seen.mapping.source(Field::StepTime) == &FieldSource::Missing && !rated {
        warnings.push(format!(
            "{}: this {} log has no step timing: throughput and MFU are null",
            display, seen.shape
        ));
    }
    if options.logged_peak_flops.is_some()
        && seen.mapping.source(Field::LoggedMfu) == &FieldSource::Missing
    {
        warnings.push(format!(
            "{}: --logged-peak-flops given but the log has no MFU column (mfu, mfu(%), perf/mfu_wall_clock, ...)",
            display
        ));
    }
    if let Some(torn) = &seen.torn {
        warnings.push(format!(
            "{}: line {} is cut short (a run killed mid-write?): skipped",
            display, torn.line
        ));
    }
    if !seen.rejects.is_empty() {
        warnings.push(format!(
            "{}: {} malformed line(s) skipped (--skip-bad-rows), the first at line {}: {}",
            display,
            seen.rejects.len(),
            seen.rejects[0].line,
            seen.rejects[0].reason
        ));
    }
    warnings
}

/// Device name and count from a W&B wandb-metadata.json.
fn wandb_metadata(path: &Path) -> Result<(Option<String>, Option<f64>), PipelineError> {
    let failed = |message: String| PipelineError::Metadata {
        path: path.display().to_string(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|error| PipelineError::Io {
        what: format!("reading {}", path.display()),
        error,
    })?;
    let doc: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| failed(format!("not JSON: {e}")))?;
    let (device, count) = crate::read::shapes::wandb::metadata_devices(&doc);
    if device.is_none() {
        return Err(failed("no 'gpu' or 'gpu_nvidia' entry".into()));
    }
    Ok((device, count))
}

/// Reads the model config and checks it can be counted, before any log is read.
fn model_flops(options: &Options) -> Result<Option<ModelFlops>, PipelineError> {
    if let (Some(convention), None) = (options.logged_convention, options.logged_peak_flops) {
        return Err(PipelineError::Usage(format!(
            "--logged-convention {convention} re-bases mfu_logged_corrected: give --logged-peak-flops, the peak the log's MFU was computed against"
        )));
    }
    let Some(path) = &options.model_config else {
        if let Some(convention) = options.logged_convention {
            return Err(PipelineError::Usage(format!(
                "--logged-convention {convention} counts the log's FLOPs from the model: give --model-config"
            )));
        }
        return Ok(None);
    };
    let config = ModelConfig::from_file(path)?;
    crate::flops::flops_per_token(
        &config,
        options.seq_len.map_or(1, |s| s as u64).max(1),
        options.attention,
        options.recompute,
    )?;
    Ok(Some(ModelFlops {
        config,
        attention: options.attention,
        convention: options.convention,
        logged_convention: options.logged_convention,
    }))
}
