//! Reading logs: one module per file format, plus compression and format detection.
//!
//! A format comes from the extension (`.jsonl`, `.ndjson`, `.csv`, `.tsv`, `.parquet`, `.pq`, each optionally
//! followed by `.gz` or `.zst`) or from `--input-format`; a Parquet file is recognised by its magic bytes
//! whatever its name, and gzip or zstd compression by theirs.

pub(crate) mod bytes;
pub mod compression;
pub mod console;
pub mod csv;
pub mod flat_csv;
pub mod flat_json;
pub mod guard;
pub mod inputs;
pub mod jsonl;
pub mod memory;
pub(crate) mod number;

/// The number parser of the fast readers, for the side-by-side benchmark against `fast-float2`
/// (`benches/number.rs`); not an API.
#[doc(hidden)]
pub use number::parse_f64 as bench_parse_f64;
pub mod parquet;
pub mod shapes;
pub mod stream;
pub(crate) mod text_column;
pub(crate) mod validity;

use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use polars::prelude::DataFrame;

pub use compression::Compression;
pub use inputs::{
    expand_inputs, group_event_files, group_tensorboard_tags, is_dvclive_input, is_event_input,
    is_mlflow_input, is_wandb_input, Input, InputError,
};
pub use jsonl::Reject;
pub use memory::{Held, MemoryBudget};
pub use shapes::{RowKinds, Shape};

/// A table format mfu reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InputFormat {
    Jsonl,
    Csv,
    Tsv,
    Parquet,
}

impl InputFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            InputFormat::Jsonl => "jsonl",
            InputFormat::Csv => "csv",
            InputFormat::Tsv => "tsv",
            InputFormat::Parquet => "parquet",
        }
    }

    /// The format an extension names (without the dot, lower-case), if any.
    pub fn from_extension(ext: &str) -> Option<InputFormat> {
        match ext {
            "jsonl" | "ndjson" => Some(InputFormat::Jsonl),
            "csv" => Some(InputFormat::Csv),
            "tsv" => Some(InputFormat::Tsv),
            "parquet" | "pq" => Some(InputFormat::Parquet),
            _ => None,
        }
    }

    /// The format of a path from its extension, looking past a `.gz` or `.zst` suffix.
    pub fn from_path(path: &Path) -> Option<InputFormat> {
        let name = path.file_name()?.to_str()?.to_ascii_lowercase();
        let name = name
            .strip_suffix(".gz")
            .or_else(|| name.strip_suffix(".zst"))
            .unwrap_or(&name);
        let ext = Path::new(name).extension()?.to_str()?;
        InputFormat::from_extension(ext)
    }
}

impl fmt::Display for InputFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `input`'s error for a message about its `shape`: for `.map_err` and `ok_or_else` in the readers.
fn shape_error_of(input: &Input, shape: Shape) -> impl Fn(String) -> ReadError + Copy + '_ {
    move |message| ReadError::Shape {
        input: input.display.clone(),
        shape,
        message,
    }
}

/// `input`'s error for an I/O failure.
fn io_error_of(input: &Input) -> impl Fn(std::io::Error) -> ReadError + Copy + '_ {
    move |source| ReadError::Io {
        input: input.display.clone(),
        source,
    }
}

/// Errors reading one input.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    // (UnknownFormat of an optional input, a folder's text file that is not a console log, is a skip:
    // see [`ReadError::is_skip`].)
    #[error("{input}: {source}")]
    Io {
        input: String,
        source: std::io::Error,
    },
    #[error(
        "{input}: cannot tell the format: not named like a table (.jsonl, .csv, .tsv, .parquet), no console-log preset (modded-nanogpt, nanogpt, megatron-log, olmo) matches, and the general console reader finds no family of lines with a step counter and named numbers; give --input-format jsonl|csv|tsv|parquet for a table, --shape and --line-regex (named groups) for a console log, or teach the general reader the framework's key names in src/read/console/frameworks.toml (docs/shapes.md shows how)"
    )]
    UnknownFormat { input: String },
    /// A console log of a training run that trained no step (it crashed at start-up, or logged only
    /// its set-up or evaluations): said as such, asking for no flag.
    #[error("{input}: no training steps found in {launches} launch(es){ending}")]
    NoSteps {
        input: String,
        launches: usize,
        /// How the log ends, where it ends in an error (`: it ends in 'torch.OutOfMemoryError: ...'`).
        ending: String,
    },
    /// An event-file folder with no scalar at all (the hparams-only folder PyTorch's `add_hparams` makes
    /// beside a run): nothing to enrich, so a skip.
    #[error("{input}: the event files hold no scalar values (only hyperparameters, text, histograms or graphs)")]
    NoScalars { input: String },
    #[error("{input}: {compression} data is corrupt or cut short: {source}")]
    Decompress {
        input: String,
        compression: &'static str,
        source: std::io::Error,
    },
    #[error("{input}: not a valid {shape} log: {message}")]
    Shape {
        input: String,
        shape: Shape,
        message: String,
    },
    #[error(
        "{input}: is a Git LFS pointer, not the data: fetch the file (git lfs pull) and run again"
    )]
    LfsPointer { input: String },
    #[error("{input}: --shape {shape} needs --line-regex with named groups")]
    NeedsLineRegex { input: String, shape: Shape },
    #[error("{input}: too large to read whole: {what}, beyond --max-memory {limit}; raise --max-memory or split the input (docs/memory.md says what mfu streams instead)", limit = memory::format_size(*limit))]
    TooLarge {
        input: String,
        what: String,
        limit: u64,
    },
    #[error("{input}: not valid {format}: {message}")]
    Parse {
        input: String,
        format: InputFormat,
        message: String,
    },
}

const PARQUET_MAGIC: &[u8] = b"PAR1";

/// Bytes read (and reserved) at a time when the size is not known beforehand.
const CHUNK_BYTES: u64 = 8 << 20;

/// An input's bytes, decompressed, with the memory reserved for them from `budget` (their bytes times
/// [`memory::TABLE_FACTOR`]). An uncompressed file reserves its size before it is read; a compressed file
/// or standard input reserves as it is read, so one that would outgrow the budget is stopped early.
fn load_bytes(
    input: &Input,
    budget: Option<&Arc<MemoryBudget>>,
) -> Result<(Vec<u8>, Held), ReadError> {
    let io_error = io_error_of(input);
    let (mut reader, compression) = opened(input)?;
    let known = match (&input.path, compression) {
        (Some(p), None) => Some(std::fs::metadata(p).map_err(io_error)?.len()),
        _ => None,
    };
    let mut held = Held::none();
    let reserve = |bytes: u64, read: u64, held: &mut Held| -> Result<(), ReadError> {
        let total = read + bytes;
        reserve_for(
            input,
            budget,
            held,
            bytes.saturating_mul(memory::TABLE_FACTOR),
            total.saturating_mul(memory::TABLE_FACTOR),
            || match known {
                None => format!("more than {} once decompressed", memory::format_size(total)),
                Some(_) => format!("{} of input", memory::format_size(total)),
            },
        )
    };
    if let Some(len) = known {
        reserve(len, 0, &mut held)?;
    }
    let read_error = |source| match compression {
        Some(c) => ReadError::Decompress {
            input: input.display.clone(),
            compression: c.name(),
            source,
        },
        None => io_error(source),
    };
    let mut bytes = Vec::with_capacity(known.map_or(CHUNK_BYTES, |n| n + 1) as usize);
    loop {
        let read = (&mut reader)
            .take(CHUNK_BYTES)
            .read_to_end(&mut bytes)
            .map_err(read_error)? as u64;
        if known.is_none() && read > 0 {
            reserve(read, bytes.len() as u64 - read, &mut held)?;
        }
        if read < CHUNK_BYTES {
            break;
        }
    }
    Ok((bytes, held))
}

/// `input` (its file, or standard input) opened for reading, decompressed where its first bytes say it is
/// gzip or zstd, and which of them it was.
fn opened(input: &Input) -> Result<(Box<dyn Read + Send>, Option<Compression>), ReadError> {
    let io_error = io_error_of(input);
    let mut raw: Box<dyn BufRead + Send> = match &input.path {
        Some(p) => Box::new(BufReader::with_capacity(
            1 << 16,
            File::open(p).map_err(io_error)?,
        )),
        None => Box::new(BufReader::with_capacity(1 << 16, std::io::stdin())),
    };
    let compression = Compression::sniff(raw.fill_buf().map_err(io_error)?);
    let reader = match compression {
        Some(c) => c.decoder(raw).map_err(|source| ReadError::Decompress {
            input: input.display.clone(),
            compression: c.name(),
            source,
        })?,
        None => raw,
    };
    Ok((reader, compression))
}

/// Reserves `more` bytes of memory for `input` from `budget` into `held`. When they do not fit, the error
/// says what the input is (`what`), the `total` it would take, and what other inputs already hold.
fn reserve_for(
    input: &Input,
    budget: Option<&Arc<MemoryBudget>>,
    held: &mut Held,
    more: u64,
    total: u64,
    what: impl FnOnce() -> String,
) -> Result<(), ReadError> {
    let Some(budget) = budget else {
        return Ok(());
    };
    match budget.reserve(more) {
        Ok(reserved) => {
            held.absorb(reserved);
            Ok(())
        }
        Err(over) => {
            // What this input reserved already is not another input's.
            let others = over.held.saturating_sub(held.bytes());
            let others = if others > 0 {
                format!(
                    ", with {} already held by other inputs read whole",
                    memory::format_size(others)
                )
            } else {
                String::new()
            };
            Err(ReadError::TooLarge {
                input: input.display.clone(),
                what: format!(
                    "{} would take about {} of memory{others}",
                    what(),
                    memory::format_size(total)
                ),
                limit: over.limit,
            })
        }
    }
}

/// Reserves what parsing `bytes` as `shape` takes beyond [`memory::TABLE_FACTOR`] times their size: a JSON
/// document becomes a tree first, a Parquet file decodes to many times its pages' bytes.
fn reserve_parsing(
    input: &Input,
    shape: Shape,
    bytes: &[u8],
    budget: Option<&Arc<MemoryBudget>>,
    held: &mut Held,
) -> Result<(), ReadError> {
    if budget.is_none() {
        return Ok(()); // nothing to reserve from: the footer need not be read either
    }
    let len = bytes.len() as u64;
    let needed = if bytes.starts_with(PARQUET_MAGIC) {
        parquet::page_bytes(bytes).map_or(0, |pages| pages.saturating_mul(memory::PARQUET_FACTOR))
    } else if matches!(
        shape,
        Shape::HfTrainerState | Shape::Megatron | Shape::LlamaFactory | Shape::MsSwift
    ) {
        len.saturating_mul(memory::DOCUMENT_FACTOR)
    } else {
        0
    };
    let extra = needed.saturating_sub(len.saturating_mul(memory::TABLE_FACTOR));
    if extra == 0 {
        return Ok(());
    }
    let kind = if bytes.starts_with(PARQUET_MAGIC) {
        "Parquet".to_string()
    } else {
        format!("{shape} JSON")
    };
    reserve_for(input, budget, held, extra, needed, || {
        format!("{} of {kind}", memory::format_size(len))
    })
}

/// How to read inputs, shared by every input of a run.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// `--input-format`: the table format whatever the name says.
    pub format: Option<InputFormat>,
    /// `--shape`: the log layout whatever the content suggests.
    pub shape: Option<Shape>,
    /// `--rows`: which kinds of row to keep where a log mixes them.
    pub rows: RowKinds,
    /// `--line-regex`: named groups that turn a text log's lines into rows.
    pub line_regex: Option<regex::Regex>,
    /// `--skip-bad-rows`: drop malformed JSONL lines and ragged CSV rows instead of failing.
    pub skip_bad_rows: bool,
    /// `--max-memory`: what inputs read whole may take, shared by the run's threads (`None`: no limit).
    pub budget: Option<Arc<MemoryBudget>>,
    /// `--num-devices`, `--seq-len` and `--tokens-per-step`, for what a console log's rates give only
    /// with them (a per-device rate into a step time).
    pub given: console::Given,
    /// Keep the rows of every attempt of a resumed run, where a reader would keep only the last's (a
    /// TensorBoard run's purged steps): for `mfu goodput`; `mfu enrich` keeps TensorBoard's rule.
    pub every_attempt: bool,
}

impl ReadError {
    /// Whether this error of `input` means "not a log, skip it" rather than a failure: a text file a
    /// folder walk found that no console-log preset reads.
    pub fn is_skip(&self, input: &Input) -> bool {
        self.skip_kind(input).is_some()
    }

    /// What kind of input a skip is, in words for the warning that counts them.
    pub fn skip_kind(&self, input: &Input) -> Option<&'static str> {
        match self {
            ReadError::UnknownFormat { .. } | ReadError::NoSteps { .. } if input.optional => {
                Some("text file(s) in folders matched no console-log preset and were skipped")
            }
            ReadError::NoScalars { .. } => Some(
                "TensorBoard folder(s) hold no scalar values (hyperparameters only) and were skipped",
            ),
            _ => None,
        }
    }
}

/// One input as a frame, with the shape it was read as and what was inferred on the way.
#[derive(Debug)]
pub struct ReadOutcome {
    pub frame: DataFrame,
    pub shape: Shape,
    pub notes: Vec<String>,
    /// What the user should know about the input itself (records skipped, a record cut short).
    pub warnings: Vec<String>,
    /// A torn last line (a run killed mid-write), dropped.
    pub torn: Option<Reject>,
    /// Malformed lines or rows dropped under `--skip-bad-rows`.
    pub rejects: Vec<Reject>,
    /// The input's bytes once decompressed (all of its files, for a group of tag exports).
    pub bytes: u64,
    /// The memory reserved for this input from [`ReadOptions::budget`]; given back when dropped.
    pub held: Held,
    /// What the run's own files say about fields its rows lack (device, precision, device count, ...).
    pub facts: Vec<crate::columns::RunFact>,
    /// The model's configuration found beside the log (an HF checkpoint folder's `config.json`), to count
    /// FLOPs per token from when no flag or column gives them and the sequence length is known.
    pub model: Option<crate::flops::ModelConfig>,
    /// The options a Parquet file mfu enriched records (its `mfu.options` metadata), as JSON.
    pub recorded: Option<String>,
    /// Which column holds which field, as a console log's vocabulary says.
    pub hints: Vec<crate::columns::ColumnHint>,
    /// What a console log's lines say happened before some rows (see [`shapes::ShapedFrame::marks`]).
    pub marks: Option<Vec<(usize, crate::goodput::Mark)>>,
    /// Whether a console log was read in windows and its rows put together, rather than whole.
    pub in_windows: bool,
}

/// Reads an input's bytes (decompressed), recognises its shape, and parses it into a frame: a run folder
/// by its reader; otherwise the bytes, their shape, the shape's reader, then what the run's own files
/// say beside it.
pub fn read_input(input: &Input, options: &ReadOptions) -> Result<ReadOutcome, ReadError> {
    if let Some(outcome) = read_run_folder(input, options) {
        return outcome;
    }
    skip_unknown_text(input, options)?;
    if let Some(outcome) = console_stacked(input, options)? {
        return Ok(outcome);
    }
    if let Some(outcome) = stream_console(input, options)? {
        return Ok(outcome);
    }
    let budget = options.budget.as_ref();
    let (bytes, mut held) = load_bytes(input, budget)?;
    let mut total_bytes = bytes.len() as u64;
    if bytes.starts_with(b"version https://git-lfs.github.com/spec/") {
        return Err(ReadError::LfsPointer {
            input: input.display.clone(),
        });
    }
    let file_name = input
        .path
        .as_deref()
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let shape = shape_of(input, options, &bytes, &file_name)?;
    reserve_parsing(input, shape, &bytes, budget, &mut held)?;
    if shape == Shape::Table {
        return read_table_input(input, options, bytes, held);
    }
    let console_facts = console_facts(shape, &bytes);
    let shaped = read_shape(
        input,
        options,
        shape,
        bytes,
        &file_name,
        &mut total_bytes,
        &mut held,
    )?;
    Ok(shaped_outcome(
        input,
        shape,
        shaped,
        console_facts,
        total_bytes,
        held,
    ))
}

/// The outcome of a log read by its shape's reader: what the run's own files beside it say, then
/// `more` facts for the fields the shape found nothing for (what the shape found itself comes first).
fn shaped_outcome(
    input: &Input,
    shape: Shape,
    shaped: shapes::ShapedFrame,
    more: Vec<crate::columns::RunFact>,
    bytes: u64,
    held: Held,
) -> ReadOutcome {
    let mut facts = shaped.facts;
    let mut notes = shaped.notes;
    let model = facts_beside(input, shape, &mut facts, &mut notes).or(shaped.model);
    for fact in more {
        if !facts.iter().any(|f| f.field == fact.field) {
            facts.push(fact);
        }
    }
    ReadOutcome {
        frame: shaped.frame,
        shape,
        notes,
        warnings: shaped.warnings,
        torn: None,
        rejects: Vec::new(),
        bytes,
        held,
        facts,
        model,
        recorded: None,
        hints: shaped.hints,
        marks: shaped.marks,
        in_windows: false,
    }
}

/// A console log on disk larger than the part of a file its shape is told from, read by the general
/// reader as it streams from the file (memory bounded by the rows it gives, not the log's size); `None`
/// for any other input, which is read whole.
fn stream_console(input: &Input, options: &ReadOptions) -> Result<Option<ReadOutcome>, ReadError> {
    let Some(path) = input.path.as_deref() else {
        return stream_console_stdin(input, options);
    };
    let detect = shapes::DETECT_BYTES as u64;
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() && m.len() > detect => {}
        _ => return Ok(None), // small, or an error load_bytes reports
    }
    let io_error = io_error_of(input);
    let mut file = File::open(path).map_err(io_error)?;
    let mut head = Vec::with_capacity(shapes::DETECT_BYTES);
    (&mut file)
        .take(detect)
        .read_to_end(&mut head)
        .map_err(io_error)?;
    if Compression::sniff(&head).is_some() || head.starts_with(PARQUET_MAGIC) {
        return Ok(None);
    }
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let shape = shape_of(input, options, &head, &file_name)?;
    if !matches!(shape, Shape::Console | Shape::Torchtitan) {
        return Ok(None);
    }
    let len = file.metadata().map_err(io_error)?.len();
    let mut held = Held::none();
    reserve_for(
        input,
        options.budget.as_ref(),
        &mut held,
        len.saturating_mul(memory::TABLE_FACTOR),
        len.saturating_mul(memory::TABLE_FACTOR),
        || format!("{} of input", memory::format_size(len)),
    )?;
    let mut source = std::io::Cursor::new(head).chain(file);
    let shaped = read_console(input, shape, &mut source, options.given)
        .map_err(shape_error_of(input, shape))?;
    Ok(Some(shaped_outcome(
        input,
        shape,
        shaped,
        Vec::new(),
        len,
        held,
    )))
}

/// A console log on disk read in windows ([`console::windows`]): what its head says, then its rows a
/// window at a time, in memory bounded by a window whatever the log's size.
pub struct ConsoleWindows {
    pub shape: Shape,
    pub facts: Vec<crate::columns::RunFact>,
    pub model: Option<crate::flops::ModelConfig>,
    pub hints: Vec<crate::columns::ColumnHint>,
    windows: Box<console::windows::Windows<'static>>,
    beside_note: Option<String>,
    /// The log's bytes read so far (decompressed).
    bytes: Arc<std::sync::atomic::AtomicU64>,
}

impl ConsoleWindows {
    /// The next rows as a frame (the head's first); `Ok(None)` at the end; `Err` (why) where the rest
    /// of the log does not read to its head's choices.
    pub fn next_frame(&mut self) -> Result<Option<DataFrame>, String> {
        match self.windows.next_table()? {
            Some(table) => table.into_frame().map(Some),
            None => Ok(None),
        }
    }

    /// What the lines said happened before the rows given so far, by their row among the log's rows
    /// (as [`ReadOutcome::marks`]); each is given once.
    pub fn take_marks(&mut self) -> Vec<(usize, crate::goodput::Mark)> {
        self.windows.take_marks()
    }

    /// The log's bytes read so far, decompressed.
    pub fn bytes_read(&self) -> u64 {
        self.bytes.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The log's notes and warnings, once every window is read.
    pub fn finish(self) -> (Vec<String>, Vec<String>) {
        let (mut notes, warnings) = self.windows.finish();
        notes.extend(self.beside_note);
        (notes, warnings)
    }
}

/// The console log `input` read in windows of `sizes`: `Ok(None)` where it is not a console log on disk
/// larger than its head (it is read as before); `Err` (why) where it is one that cannot be read in
/// windows: the whole-input way then reads it, and reports any error.
pub fn console_in_windows(
    input: &Input,
    options: &ReadOptions,
    sizes: console::windows::WindowSizes,
) -> Result<Option<ConsoleWindows>, String> {
    let Some((shape, head, file)) = windowed_console(input, options, sizes)? else {
        return Ok(None);
    };
    let beside = configs_beside(input);
    let beside_note = beside_note(&beside);
    let framework = (shape == Shape::Torchtitan).then_some("torchtitan");
    let bytes = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let source = Tallied {
        inner: std::io::Cursor::new(head).chain(file),
        bytes: Arc::clone(&bytes),
    };
    match console::windows::read_in_windows(source, framework, beside, options.given, sizes)? {
        console::windows::Streamed::Windows(windows) => Ok(Some(ConsoleWindows {
            shape,
            facts: windows.head.facts.clone(),
            model: windows.head.model.clone(),
            hints: windows.head.hints.clone(),
            windows,
            beside_note,
            bytes,
        })),
        console::windows::Streamed::Stopped(why) => Err(why),
        console::windows::Streamed::Whole(_) => Err("it is no longer than its head".into()),
    }
}

/// Whether `input` is a console log read in windows ([`console_in_windows`]): on disk, of a console
/// log's shape and larger than a window's head once decompressed. Reads its first bytes only.
pub fn is_windowed_console(input: &Input, options: &ReadOptions) -> bool {
    matches!(
        windowed_console(input, options, console::windows::window_sizes()),
        Ok(Some(_))
    )
}

/// A console log read in windows: its shape, its first bytes (read to tell the shape) and the rest of
/// it, decompressed as it is read; `Ok(None)` where `input` is no such log.
#[allow(clippy::type_complexity)]
fn windowed_console(
    input: &Input,
    options: &ReadOptions,
    sizes: console::windows::WindowSizes,
) -> Result<Option<(Shape, Vec<u8>, Box<dyn Read + Send>)>, String> {
    let Some(path) = input.path.as_deref() else {
        return Ok(None);
    };
    // Judged by its size once decompressed, as a table is: told from the file's length when it is not
    // compressed (before anything past its magic bytes is read: every input of a per-run command is
    // asked), else by decompressing up to the head's size, which waits until the input is known to be
    // a console log (a large compressed table read whole is not decompressed twice).
    let head_bytes = sizes.head_bytes as u64;
    let plain = compression::plain_len(path).map_err(|e| e.to_string())?;
    if plain.is_some_and(|len| len <= head_bytes) {
        return Ok(None);
    }
    let over = || {
        matches!(
            compression::size_up_to(path, head_bytes),
            Ok(compression::Size::Over(_))
        )
    };
    let (mut file, _) = compression::open(path).map_err(|e| e.to_string())?;
    let detect = shapes::DETECT_BYTES as u64;
    let mut head = Vec::with_capacity(shapes::DETECT_BYTES);
    (&mut file)
        .take(detect)
        .read_to_end(&mut head)
        .map_err(|e| e.to_string())?;
    if head.starts_with(PARQUET_MAGIC) {
        return Ok(None);
    }
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let shape = shape_of(input, options, &head, &file_name).map_err(|e| e.to_string())?;
    if !matches!(shape, Shape::Console | Shape::Torchtitan) || (plain.is_none() && !over()) {
        return Ok(None);
    }
    Ok(Some((shape, head, file)))
}

/// A source that tallies the bytes read from it where another owner can see them (the windows own
/// their source; standard input is read through it as it streams).
struct Tallied<R> {
    inner: R,
    bytes: Arc<std::sync::atomic::AtomicU64>,
}

impl<R: Read> Read for Tallied<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bytes
            .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }
}

/// A console log larger than a window's head, read in windows ([`console_in_windows`]) and its rows put
/// together: the rows, notes, facts and marks reading it whole gives, without the whole log's lines
/// and their figures in memory at once (what every command that needs all of a log's rows reads, as
/// `mfu summary`, `goodput` and `audit` do). Each window's rows reserve their memory from the budget
/// as they come. `Ok(None)`: the input is no such log, or its windows stopped (it is then read whole,
/// as before, and any error is that way's).
fn console_stacked(input: &Input, options: &ReadOptions) -> Result<Option<ReadOutcome>, ReadError> {
    let Ok(Some(mut windows)) =
        console_in_windows(input, options, console::windows::window_sizes())
    else {
        return Ok(None);
    };
    let budget = options.budget.as_ref();
    let mut held = Held::none();
    let mut frame: Option<DataFrame> = None;
    loop {
        match windows.next_frame() {
            Ok(Some(rows)) => {
                let more = (rows.estimated_size() as u64).saturating_mul(memory::STACKED_FACTOR);
                let total = held.bytes().saturating_add(more);
                reserve_for(input, budget, &mut held, more, total, || {
                    format!(
                        "its rows, read in windows ({} of the log so far)",
                        memory::format_size(windows.bytes_read())
                    )
                })?;
                match frame.as_mut() {
                    None => frame = Some(rows),
                    Some(all) => {
                        if all.vstack_mut_owned(rows).is_err() {
                            return Ok(None);
                        }
                    }
                }
            }
            Ok(None) => break,
            Err(_) => return Ok(None),
        }
    }
    // One chunk a window, not put together into one: that copy held the rows twice.
    let Some(frame) = frame else {
        return Ok(None);
    };
    let marks = windows.take_marks();
    let bytes = windows.bytes_read();
    let (shape, facts, model, hints) = (
        windows.shape,
        std::mem::take(&mut windows.facts),
        windows.model.take(),
        std::mem::take(&mut windows.hints),
    );
    let (notes, warnings) = windows.finish();
    let shaped = shapes::ShapedFrame {
        frame,
        notes,
        facts,
        warnings,
        model,
        hints,
        marks: Some(marks),
    };
    Ok(Some(ReadOutcome {
        in_windows: true,
        ..shaped_outcome(input, shape, shaped, Vec::new(), bytes, held)
    }))
}

/// A console log on standard input whose shape was named (`--shape console`), read as it streams
/// (decompressed where it is gzip or zstd), so a log piped in is never held whole.
fn stream_console_stdin(
    input: &Input,
    options: &ReadOptions,
) -> Result<Option<ReadOutcome>, ReadError> {
    let shape = match options.shape {
        Some(s @ (Shape::Console | Shape::Torchtitan)) if options.line_regex.is_none() => s,
        _ => return Ok(None),
    };
    let (mut source, _) = opened(input)?;
    let tally = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut counted = Tallied {
        inner: &mut source,
        bytes: Arc::clone(&tally),
    };
    let shaped = read_console(input, shape, &mut counted, options.given)
        .map_err(shape_error_of(input, shape))?;
    let bytes = tally.load(std::sync::atomic::Ordering::Relaxed);
    Ok(Some(shaped_outcome(
        input,
        shape,
        shaped,
        Vec::new(),
        bytes,
        Held::none(),
    )))
}

/// A run folder's reading by its own reader (TensorBoard, MLflow, W&B, DVCLive), when the input is one.
fn read_run_folder(input: &Input, options: &ReadOptions) -> Option<Result<ReadOutcome, ReadError>> {
    let budget = options.budget.as_ref();
    if is_event_input(input) || options.shape == Some(Shape::TensorBoardEvents) {
        return Some(read_event_files(input, options.every_attempt));
    }
    if let Some(path) = input.path.as_deref() {
        if shapes::mlflow::is_sqlite(path) {
            return Some(read_mlflow_db(input, path, budget));
        }
    }
    if is_mlflow_input(input) || options.shape == Some(Shape::Mlflow) {
        return Some(read_mlflow_run(input, budget));
    }
    if is_wandb_input(input) || options.shape == Some(Shape::Wandb) {
        return Some(read_wandb_run(input, budget));
    }
    if is_dvclive_input(input) || options.shape == Some(Shape::Dvclive) {
        return Some(read_dvclive_run(input, budget));
    }
    None
}

/// A folder's .log/.out/.txt file is only kept when a console-log preset reads it, judged on its first
/// MiB so that a large text file that is not a log is not read whole first.
fn skip_unknown_text(input: &Input, options: &ReadOptions) -> Result<(), ReadError> {
    if !(input.optional && options.shape.is_none() && options.line_regex.is_none()) {
        return Ok(());
    }
    let Some(path) = input.path.as_deref() else {
        return Ok(());
    };
    let mut head = Vec::with_capacity(1 << 20);
    let read = File::open(path).and_then(|f| f.take(1 << 20).read_to_end(&mut head));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if read.is_ok() && shapes::detect(&head, &name).is_none() {
        return Err(ReadError::UnknownFormat {
            input: input.display.clone(),
        });
    }
    Ok(())
}

/// The shape to read `bytes` as: Parquet is a table; else `--shape`, `--line-regex`, or what the
/// content says. A group of TensorBoard tag exports must be one.
fn shape_of(
    input: &Input,
    options: &ReadOptions,
    bytes: &[u8],
    file_name: &str,
) -> Result<Shape, ReadError> {
    let shape = if bytes.starts_with(PARQUET_MAGIC) {
        Shape::Table
    } else if let Some(s) = options.shape {
        s
    } else if options.line_regex.is_some() {
        Shape::Text
    } else {
        shapes::detect(bytes, file_name).unwrap_or(Shape::Table)
    };
    if !input.companions.is_empty() && shape != Shape::TensorBoard {
        return Err(shape_error_of(input, Shape::TensorBoard)(
            "named like a TensorBoard tag export (run-<run>-tag-<tag>.csv) but its header is not Wall time,Step,Value; give --shape table to read such files one by one".into(),
        ));
    }
    Ok(shape)
}

/// A plain table (JSON Lines, CSV, TSV, Parquet), with the options a Parquet file mfu enriched records.
fn read_table_input(
    input: &Input,
    options: &ReadOptions,
    bytes: Vec<u8>,
    held: Held,
) -> Result<ReadOutcome, ReadError> {
    let total_bytes = bytes.len() as u64;
    let recorded = if bytes.starts_with(PARQUET_MAGIC) {
        parquet::key_value(&bytes, crate::enrich::OPTIONS_KEY)
    } else {
        None
    };
    let (frame, torn, rejects) = read_table(input, options.format, bytes, options.skip_bad_rows)?;
    Ok(ReadOutcome {
        frame,
        shape: Shape::Table,
        notes: Vec::new(),
        warnings: Vec::new(),
        torn,
        rejects,
        bytes: total_bytes,
        held,
        facts: Vec::new(),
        model: None,
        recorded,
        hints: Vec::new(),
        marks: None,
        in_windows: false,
    })
}

/// What a console log says about its run outside its step lines: the job's nvidia-smi table, nanoGPT's
/// tokens per iteration.
fn console_facts(shape: Shape, bytes: &[u8]) -> Vec<crate::columns::RunFact> {
    // The general reader (Shape::Console, Shape::Torchtitan) reads nvidia-smi tables itself.
    if !matches!(
        shape,
        Shape::Text | Shape::ModdedNanogpt | Shape::Nanogpt | Shape::MegatronLog | Shape::Olmo
    ) {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(bytes);
    let mut facts = shapes::nvidia_smi::facts(&text);
    if shape == Shape::Nanogpt {
        facts.extend(shapes::text::nanogpt_facts(&text));
    }
    if shape == Shape::MegatronLog {
        // Where the argument dump is not in the log (Megatron-Bridge prints a YAML configuration, a
        // launcher its command line), the general facts reader gives the device count and precision.
        let mut config = console::facts::ConfigFacts::of(
            console::vocabulary::vocabulary().framework("megatron"),
        );
        // Its iteration lines, nearly all of a long log, hold neither.
        config.read_text(&text, "line", &shapes::megatron_log::is_iteration_line);
        facts.extend(config.run_facts().into_iter().filter(|f| {
            matches!(
                f.field,
                crate::columns::Field::NumDevices | crate::columns::Field::Dtype
            )
        }));
    }
    facts
}

/// The rows of a trainer or console log of `shape`.
fn read_shape(
    input: &Input,
    options: &ReadOptions,
    shape: Shape,
    bytes: Vec<u8>,
    file_name: &str,
    total_bytes: &mut u64,
    held: &mut Held,
) -> Result<shapes::ShapedFrame, ReadError> {
    let shape_error = shape_error_of(input, shape);
    match shape {
        Shape::HfTrainerState => shapes::hf::read(&bytes, options.rows),
        Shape::LlamaFactory => shapes::llamafactory::read(&bytes),
        Shape::Lightning => shapes::lightning::read(&bytes),
        Shape::TensorBoard if !input.companions.is_empty() => {
            return tensorboard_exports(input, options, bytes, file_name, total_bytes, held);
        }
        Shape::TensorBoard => shapes::tensorboard::read(bytes, file_name),
        Shape::Megatron => shapes::megatron::read(&bytes),
        Shape::MegatronLog => shapes::megatron_log::read(&bytes),
        Shape::MsSwift => shapes::ms_swift::read(&bytes),
        Shape::Torchtitan | Shape::Console => {
            read_console(input, shape, &mut &bytes[..], options.given)
        }
        Shape::Olmo => shapes::olmo::read(&bytes),
        Shape::Text | Shape::ModdedNanogpt | Shape::Nanogpt => {
            let preset = match shape {
                Shape::ModdedNanogpt => Some(shapes::text::MODDED_NANOGPT),
                Shape::Nanogpt => Some(shapes::text::NANOGPT),
                _ => None,
            };
            let line = match (&options.line_regex, preset) {
                (Some(re), _) => re.clone(),
                (None, Some(p)) => shapes::text::compile(p).expect("presets compile"),
                (None, None) => {
                    return Err(ReadError::NeedsLineRegex {
                        input: input.display.clone(),
                        shape,
                    })
                }
            };
            shapes::text::read(&bytes, &line)
        }
        // Tables, event files and run folders are read before any of this (see read_input).
        Shape::Table => Err("a table is read as a table".into()),
        Shape::TensorBoardEvents => Err("TensorBoard event files are read by run folder".into()),
        Shape::Mlflow => {
            Err("MLflow runs are read by run folder (mlruns/<experiment>/<run>/)".into())
        }
        Shape::Wandb => Err("W&B runs are read from their run-<id>.wandb log".into()),
        Shape::Dvclive => Err("DVCLive runs are read by run folder".into()),
    }
    .map_err(shape_error)
}

/// Files people keep beside a console log that configure its run.
const CONFIG_BESIDE: [&str; 9] = [
    "config.yaml",
    "config.yml",
    "config.json",
    "args.json",
    "hparams.yaml",
    "recipe.json",
    "training_args.json",
    "params.yaml",
    "run_config.yaml",
];

/// The configuration files kept beside a console log (name, text).
fn configs_beside(input: &Input) -> Vec<(String, String)> {
    let mut beside = Vec::new();
    if let Some(folder) = input.path.as_deref().and_then(Path::parent) {
        for name in CONFIG_BESIDE {
            let path = folder.join(name);
            let small = std::fs::metadata(&path).is_ok_and(|m| m.is_file() && m.len() < 4 << 20);
            if let (true, Ok(text)) = (small, std::fs::read_to_string(&path)) {
                beside.push((path.display().to_string(), text));
            }
        }
    }
    beside
}

/// The note that names the configuration files read beside a log, if any.
fn beside_note(beside: &[(String, String)]) -> Option<String> {
    (!beside.is_empty()).then(|| {
        let names: Vec<&str> = beside.iter().map(|(n, _)| n.as_str()).collect();
        format!("configuration read beside the log: {}", names.join(", "))
    })
}

/// A console log by the general reader, with the configuration files beside it.
fn read_console(
    input: &Input,
    shape: Shape,
    source: &mut (dyn Read + Send),
    given: console::Given,
) -> Result<shapes::ShapedFrame, String> {
    let beside = configs_beside(input);
    let framework = (shape == Shape::Torchtitan).then_some("torchtitan");
    let read = console::read(source, framework, &beside, given)?;
    let mut notes = read.notes;
    notes.extend(beside_note(&beside));
    Ok(shapes::ShapedFrame {
        frame: read.table.into_frame()?,
        notes,
        facts: read.facts,
        warnings: read.warnings,
        model: read.model,
        hints: read.hints,
        marks: Some(read.marks),
    })
}

/// The tag exports of one TensorBoard run (the input and its companions), combined by step.
fn tensorboard_exports(
    input: &Input,
    options: &ReadOptions,
    bytes: Vec<u8>,
    file_name: &str,
    total_bytes: &mut u64,
    held: &mut Held,
) -> Result<shapes::ShapedFrame, ReadError> {
    let shape_error = shape_error_of(input, Shape::TensorBoard);
    let mut frames = vec![
        shapes::tensorboard::read(bytes, file_name)
            .map_err(&shape_error)?
            .frame,
    ];
    for path in &input.companions {
        let (bytes, more) = load_bytes(
            &Input::file(path.clone(), PathBuf::new()),
            options.budget.as_ref(),
        )?;
        *total_bytes += bytes.len() as u64;
        held.absorb(more);
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        frames.push(
            shapes::tensorboard::read(bytes, &name)
                .map_err(&shape_error)?
                .frame,
        );
    }
    shapes::tensorboard::combine(frames)
        .map(|frame| shapes::ShapedFrame {
            frame,
            notes: vec![format!(
                "{} TensorBoard tag exports of one run combined by step",
                input.companions.len() + 1
            )],
            ..Default::default()
        })
        .map_err(shape_error)
}

/// What a run's files beside its log say: an HF checkpoint's `config.json` (precision, and the model to
/// count FLOPs per token from, which is returned), ms-swift's `args.json`.
fn facts_beside(
    input: &Input,
    shape: Shape,
    facts: &mut Vec<crate::columns::RunFact>,
    notes: &mut Vec<String>,
) -> Option<crate::flops::ModelConfig> {
    let folder = input.path.as_deref().and_then(Path::parent)?;
    match shape {
        Shape::HfTrainerState => config_beside(folder, facts, notes),
        Shape::MsSwift => {
            swift_args_beside(folder, facts);
            None
        }
        _ => None,
    }
}

/// The `config.json` of an HF checkpoint folder (beside its `trainer_state.json`): the model's precision
/// (`torch_dtype`, or `dtype` in newer transformers) as a fact, and the model to count FLOPs per token from.
fn config_beside(
    folder: &Path,
    facts: &mut Vec<crate::columns::RunFact>,
    notes: &mut Vec<String>,
) -> Option<crate::flops::ModelConfig> {
    let path = folder.join("config.json");
    let text = std::fs::read_to_string(&path).ok()?;
    let doc: serde_json::Value = serde_json::from_str(&text).ok()?;
    for key in ["torch_dtype", "dtype"] {
        if let Some(dtype) = doc.get(key).and_then(serde_json::Value::as_str) {
            facts.push(crate::columns::RunFact::text(
                crate::columns::Field::Dtype,
                dtype,
                format!("{} ({key})", path.display()),
            ));
            break;
        }
    }
    let config = crate::flops::ModelConfig::from_json(&text, &path.display().to_string()).ok()?;
    notes.push(format!(
        "{} beside the trainer state: FLOPs per token are counted from it (model_type {}) when no flag or column gives them and the sequence length is known (--seq-len)",
        path.display(),
        config.model_type()
    ));
    Some(config)
}

/// The `args.json` ms-swift writes beside its `logging.jsonl`: the precision (`bf16` or `fp16` true, else
/// `torch_dtype`) and the device count (`global_world_size`) as facts of the run.
fn swift_args_beside(folder: &Path, facts: &mut Vec<crate::columns::RunFact>) {
    use crate::columns::{Field, RunFact};
    let path = folder.join("args.json");
    let Some(doc) = std::fs::read_to_string(&path)
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
    else {
        return;
    };
    let origin = |key: &str| format!("{} ({key})", path.display());
    let flag = |key: &str| doc.get(key).and_then(serde_json::Value::as_bool) == Some(true);
    let dtype = if flag("bf16") {
        Some(("bf16", "bf16"))
    } else if flag("fp16") {
        Some(("fp16", "fp16"))
    } else {
        doc.get("torch_dtype")
            .and_then(serde_json::Value::as_str)
            .map(|d| (d, "torch_dtype"))
    };
    if let Some((dtype, key)) = dtype {
        facts.push(RunFact::text(Field::Dtype, dtype, origin(key)));
    }
    if let Some(world) = doc
        .get("global_world_size")
        .and_then(serde_json::Value::as_f64)
        .filter(|w| *w >= 1.0)
    {
        facts.push(RunFact::number(
            Field::NumDevices,
            world,
            origin("global_world_size"),
        ));
    }
}

/// An MLflow SQLite store: the input's run (every run when the store was not listed). Reserves three times the file's size from the budget (the
/// frame holds each metric value once, as the file does, plus the step and run columns).
fn read_mlflow_db(
    input: &Input,
    path: &Path,
    budget: Option<&Arc<MemoryBudget>>,
) -> Result<ReadOutcome, ReadError> {
    let size = std::fs::metadata(path).map_err(io_error_of(input))?.len();
    let mut held = Held::none();
    let estimate = size.saturating_mul(memory::TABLE_FACTOR);
    reserve_for(input, budget, &mut held, estimate, estimate, || {
        format!("an MLflow store of {}", memory::format_size(size))
    })?;
    let (frame, notes, warnings) = shapes::mlflow::read_sqlite(path, input.part.as_deref())
        .map_err(shape_error_of(input, Shape::Mlflow))?;
    let mut outcome = ReadOutcome::of_run(frame, Shape::Mlflow, (notes, warnings), size, held);
    if let Some(run) = input.part.as_deref() {
        outcome.facts = shapes::mlflow::sqlite_param_facts(path, run);
    }
    Ok(outcome)
}

/// The bytes of each of a run's files (in the order given), within the budget: the memory reserved and
/// the bytes read in all.
fn load_run_files(
    paths: &[PathBuf],
    budget: Option<&Arc<MemoryBudget>>,
) -> Result<(Vec<Vec<u8>>, Held, u64), ReadError> {
    let mut held = Held::none();
    let mut total = 0u64;
    let mut files = Vec::with_capacity(paths.len());
    for path in paths {
        let (bytes, more) = load_bytes(&Input::file(path.clone(), PathBuf::new()), budget)?;
        total += bytes.len() as u64;
        held.absorb(more);
        files.push(bytes);
    }
    Ok((files, held, total))
}

impl ReadOutcome {
    /// The outcome of a reader of run folders and stores: no torn lines or rejects of its own.
    fn of_run(
        frame: DataFrame,
        shape: Shape,
        (notes, warnings): (Vec<String>, Vec<String>),
        bytes: u64,
        held: Held,
    ) -> ReadOutcome {
        ReadOutcome {
            frame,
            shape,
            notes,
            warnings,
            torn: None,
            rejects: Vec::new(),
            bytes,
            held,
            facts: Vec::new(),
            model: None,
            recorded: None,
            hints: Vec::new(),
            marks: None,
            in_windows: false,
        }
    }

    /// [`ReadOutcome::of_run`] of a run a shape reader made, with the facts it found.
    fn of_shaped_run(
        shaped: shapes::ShapedFrame,
        shape: Shape,
        warnings: Vec<String>,
        bytes: u64,
        held: Held,
    ) -> ReadOutcome {
        ReadOutcome {
            facts: shaped.facts,
            ..ReadOutcome::of_run(shaped.frame, shape, (shaped.notes, warnings), bytes, held)
        }
    }
}

/// One MLflow run folder (the input stands as its `meta.yaml`): its metric files in key order, with
/// `run_id`, `run_name` (the `mlflow.runName` tag, else meta.yaml's run_name) and `experiment_id`.
fn read_mlflow_run(
    input: &Input,
    budget: Option<&Arc<MemoryBudget>>,
) -> Result<ReadOutcome, ReadError> {
    let shape_error = shape_error_of(input, Shape::Mlflow);
    let io_error = io_error_of(input);
    let meta_path = input
        .path
        .clone()
        .ok_or_else(|| shape_error("standard input is not a run folder".into()))?;
    let folder = match meta_path.file_name() {
        Some(n) if n == "meta.yaml" => meta_path.parent().map(Path::to_path_buf),
        _ => Some(meta_path.clone()), // --shape mlflow given the folder's own path
    }
    .unwrap_or_default();
    if !shapes::mlflow::is_run_folder(&folder) {
        return Err(shape_error(
            "not an MLflow run folder (meta.yaml and metrics/)".into(),
        ));
    }
    let meta = shapes::mlflow::flat_yaml(
        &std::fs::read_to_string(folder.join("meta.yaml")).map_err(io_error)?,
    );
    let tag = |name: &str| {
        std::fs::read_to_string(folder.join("tags").join(name))
            .ok()
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let info = shapes::mlflow::RunInfo {
        run_id: meta
            .get("run_id")
            .or_else(|| meta.get("run_uuid"))
            .cloned()
            .or_else(|| folder.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_default(),
        run_name: tag("mlflow.runName").or_else(|| meta.get("run_name").cloned()),
        experiment_id: meta.get("experiment_id").cloned(),
    };
    // Metric files, keys in path order ('/' for nested folders).
    let metrics_dir = folder.join("metrics");
    let mut paths = Vec::new();
    let mut stack = vec![metrics_dir.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).map_err(io_error)? {
            let p = entry.map_err(io_error)?.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                paths.push(p);
            }
        }
    }
    paths.sort();
    let (contents, held, total) = load_run_files(&paths, budget)?;
    let mut metrics = Vec::with_capacity(paths.len());
    for (path, bytes) in paths.iter().zip(contents) {
        let key = path
            .strip_prefix(&metrics_dir)
            .unwrap_or(path)
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        metrics.push(shapes::mlflow::MetricFile { key, bytes });
    }
    let (frame, notes, warnings) = shapes::mlflow::read(&metrics, &info).map_err(shape_error)?;
    let mut outcome = ReadOutcome::of_run(frame, Shape::Mlflow, (notes, warnings), total, held);
    // Tags (where a trainer puts what is not a number, as the device name), then parameters (params/<key>,
    // the value as the file's content: often a whole configuration, the model's torch_dtype among it),
    // named like a field, are facts.
    let params = shapes::mlflow::key_files(&folder.join("params"));
    let tags = shapes::mlflow::key_files(&folder.join("tags"));
    let origins: std::collections::HashMap<&str, &str> = params
        .iter()
        .map(|(k, _)| (k.as_str(), "params"))
        .chain(tags.iter().map(|(k, _)| (k.as_str(), "tags")))
        .collect();
    outcome.facts = shapes::parameter_facts(
        tags.iter()
            .chain(&params)
            .map(|(k, v)| (k.as_str(), v.as_str())),
        |key| {
            let dir = origins.get(key).copied().unwrap_or("params");
            format!(
                "the run's {} '{key}' ({dir}/{key})",
                if dir == "tags" { "tag" } else { "parameter" }
            )
        },
    );
    Ok(outcome)
}

/// A DVCLive run folder (the input stands as its `metrics.json`, or is the folder with `--shape dvclive`):
/// its `plots/metrics/**/*.tsv` in key order and its `params.yaml`; `run_id` is the folder's path under
/// the argument.
fn read_dvclive_run(
    input: &Input,
    budget: Option<&Arc<MemoryBudget>>,
) -> Result<ReadOutcome, ReadError> {
    let shape_error = shape_error_of(input, Shape::Dvclive);
    let io_error = io_error_of(input);
    let given = input
        .path
        .clone()
        .ok_or_else(|| shape_error("standard input is not a DVCLive run".into()))?;
    let folder = if given.is_dir() {
        given.clone()
    } else {
        given.parent().map(Path::to_path_buf).unwrap_or_default()
    };
    let metrics_dir = folder.join("plots").join("metrics");
    if !metrics_dir.is_dir() {
        return Err(shape_error(
            "not a DVCLive run folder (no plots/metrics/)".into(),
        ));
    }
    let mut paths = Vec::new();
    let mut stack = vec![metrics_dir.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).map_err(io_error)? {
            let p = entry.map_err(io_error)?.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "tsv") {
                paths.push(p);
            }
        }
    }
    paths.sort();
    let (contents, held, total) = load_run_files(&paths, budget)?;
    let metrics: Vec<shapes::dvclive::MetricFile> = paths
        .iter()
        .zip(contents)
        .map(|(path, bytes)| {
            let relative = path
                .strip_prefix(&metrics_dir)
                .unwrap_or(path)
                .with_extension("");
            let key = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            shapes::dvclive::MetricFile { key, bytes }
        })
        .collect();
    let params = std::fs::read_to_string(folder.join("params.yaml")).ok();
    let run_id = match input.relative.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.display().to_string(),
        _ => folder
            .canonicalize()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "dvclive".into()),
    };
    let (shaped, warnings) =
        shapes::dvclive::read(&metrics, params.as_deref(), &run_id).map_err(shape_error)?;
    Ok(ReadOutcome::of_shaped_run(
        shaped,
        Shape::Dvclive,
        warnings,
        total,
        held,
    ))
}

/// A W&B run: its `run-<id>.wandb` log (the input, or the log in the folder given with `--shape wandb`),
/// with `files/wandb-metadata.json` and `files/wandb-summary.json` beside it when the run wrote them.
fn read_wandb_run(
    input: &Input,
    budget: Option<&Arc<MemoryBudget>>,
) -> Result<ReadOutcome, ReadError> {
    let shape_error = shape_error_of(input, Shape::Wandb);
    let given = input
        .path
        .clone()
        .ok_or_else(|| shape_error("standard input is not a W&B run".into()))?;
    let summary_only = if given.is_dir() {
        shapes::wandb::summary_only_in(&given).map(|_| given.clone())
    } else {
        inputs::wandb_summary_folder(&given).map(Path::to_path_buf)
    };
    if let Some(folder) = summary_only {
        return read_wandb_files(input, &folder, budget);
    }
    let log = if given.is_dir() {
        shapes::wandb::run_log_in(&given)
            .ok_or_else(|| shape_error("the folder holds no run-<id>.wandb log".into()))?
    } else {
        given
    };
    let folder = log.parent().map(Path::to_path_buf).unwrap_or_default();
    let (contents, held, total) = load_run_files(std::slice::from_ref(&log), budget)?;
    let beside = |name: &str| std::fs::read_to_string(folder.join("files").join(name)).ok();
    let name = log
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let (shaped, warnings) = shapes::wandb::read(
        &contents[0],
        &name,
        &shapes::wandb::Beside {
            metadata: beside("wandb-metadata.json"),
            summary: beside("wandb-summary.json"),
        },
    )
    .map_err(shape_error)?;
    Ok(ReadOutcome::of_shaped_run(
        shaped,
        Shape::Wandb,
        warnings,
        total,
        held,
    ))
}

/// A W&B run folder that holds `files/` but no transaction log: one row from its summary.
fn read_wandb_files(
    input: &Input,
    folder: &Path,
    budget: Option<&Arc<MemoryBudget>>,
) -> Result<ReadOutcome, ReadError> {
    let files = folder.join("files");
    let summary = files.join(shapes::wandb::SUMMARY_FILE);
    let (contents, held, total) = load_run_files(std::slice::from_ref(&summary), budget)?;
    let name = folder
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let beside = shapes::wandb::Beside {
        metadata: std::fs::read_to_string(files.join("wandb-metadata.json")).ok(),
        summary: Some(String::from_utf8_lossy(&contents[0]).into_owned()),
    };
    let (shaped, warnings) =
        shapes::wandb::read_summary_only(&shapes::wandb::run_id_of_folder(&name), &beside)
            .map_err(shape_error_of(input, Shape::Wandb))?;
    Ok(ReadOutcome::of_shaped_run(
        shaped,
        Shape::Wandb,
        warnings,
        total,
        held,
    ))
}

/// The TensorBoard event files of one run folder (the input's file and its companions), with a `run_id`
/// column: the folder's path relative to the argument it was found under (its own name when it was given
/// itself).
fn read_event_files(input: &Input, every_attempt: bool) -> Result<ReadOutcome, ReadError> {
    let mut paths: Vec<PathBuf> = input.path.iter().cloned().collect();
    paths.extend(input.companions.iter().cloned());
    paths.sort();
    // Read a chunk at a time (image and histogram events make files of gigabytes): what is held is a
    // chunk, not the files.
    let mut total = 0u64;
    let mut files = Vec::with_capacity(paths.len());
    for path in &paths {
        let file = Input::file(path.clone(), PathBuf::new());
        total += std::fs::metadata(path).map_err(io_error_of(&file))?.len();
        // Opened once here, so an unreadable file is the input's error (its path named), not a message.
        opened(&file)?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        files.push(shapes::tfevents::EventFile::new(name, move || {
            opened(&file)
                .map(|(reader, _)| reader)
                .map_err(|e| std::io::Error::other(e.to_string()))
        }));
    }
    let held = Held::none();
    let shape_error = shape_error_of(input, Shape::TensorBoardEvents);
    let (shaped, warnings) = match shapes::tfevents::read(&files, every_attempt) {
        Ok(read) => read,
        Err(e) if e == shapes::tfevents::NO_SCALARS => {
            return Err(ReadError::NoScalars {
                input: input.display.clone(),
            })
        }
        Err(e) => return Err(shape_error(e)),
    };
    let run = match input.relative.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.display().to_string(),
        _ => paths[0]
            .parent()
            .and_then(|p| p.canonicalize().ok())
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| ".".into()),
    };
    let mut shaped = shaped;
    let height = shaped.frame.height();
    shaped
        .frame
        .with_column(polars::prelude::Column::new_scalar(
            "run_id".into(),
            polars::prelude::Scalar::new(
                polars::prelude::DataType::String,
                polars::prelude::AnyValue::StringOwned(run.as_str().into()),
            ),
            height,
        ))
        .map_err(|e| shape_error(e.to_string()))?;
    // The run's text summaries (its device name and precision) come along as facts.
    Ok(ReadOutcome::of_shaped_run(
        shaped,
        Shape::TensorBoardEvents,
        warnings,
        total,
        held,
    ))
}

/// A plain table, with a dropped torn last line and the rows skipped as malformed.
type TableRead = (DataFrame, Option<Reject>, Vec<Reject>);

/// Parses a plain table in the format its magic bytes, `forced` or its name says.
fn read_table(
    input: &Input,
    forced: Option<InputFormat>,
    bytes: Vec<u8>,
    skip_bad: bool,
) -> Result<TableRead, ReadError> {
    let format = if bytes.starts_with(PARQUET_MAGIC) {
        InputFormat::Parquet
    } else {
        match forced.or(input.format_from_name()) {
            Some(f) => f,
            None => {
                if let Some((launches, ending)) = console::no_steps(&bytes) {
                    return Err(ReadError::NoSteps {
                        input: input.display.clone(),
                        launches,
                        ending,
                    });
                }
                return Err(ReadError::UnknownFormat {
                    input: input.display.clone(),
                });
            }
        }
    };
    let parse_error = |message: String| ReadError::Parse {
        input: input.display.clone(),
        format,
        message,
    };
    match format {
        InputFormat::Jsonl => jsonl::read_checked(bytes, skip_bad)
            .map(|r| (r.frame, r.torn, r.rejects))
            .map_err(parse_error),
        InputFormat::Csv | InputFormat::Tsv => {
            let separator = if format == InputFormat::Tsv {
                b'\t'
            } else {
                b','
            };
            csv::read_checked(bytes, separator, skip_bad)
                .map(|(df, rejects)| (df, None, rejects))
                .map_err(parse_error)
        }
        InputFormat::Parquet => parquet::read(bytes)
            .map(|df| (df, None, Vec::new()))
            .map_err(parse_error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_from_names() {
        for (name, want) in [
            ("a.jsonl", Some(InputFormat::Jsonl)),
            ("a.NDJSON", Some(InputFormat::Jsonl)),
            ("dir/a.csv.gz", Some(InputFormat::Csv)),
            ("a.tsv.zst", Some(InputFormat::Tsv)),
            ("a.pq", Some(InputFormat::Parquet)),
            ("a.parquet", Some(InputFormat::Parquet)),
            ("a.txt", None),
            ("a.gz", None),
            ("noext", None),
        ] {
            assert_eq!(InputFormat::from_path(Path::new(name)), want, "{name}");
        }
    }

    fn file_input(dir: &Path, name: &str, bytes: &[u8]) -> Input {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        Input::file(path, PathBuf::from(name))
    }

    #[test]
    fn loads_plain_and_compressed_bytes_and_reports_truncation() {
        let dir = tempfile::tempdir().unwrap();
        let plain = file_input(dir.path(), "a.jsonl", b"abc");
        assert_eq!(load_bytes(&plain, None).unwrap().0, b"abc");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut gz, b"hello world, hello world").unwrap();
        let full = gz.finish().unwrap();
        let whole = file_input(dir.path(), "b.jsonl.gz", &full);
        assert_eq!(
            load_bytes(&whole, None).unwrap().0,
            b"hello world, hello world"
        );
        let cut = file_input(dir.path(), "c.jsonl.gz", &full[..full.len() - 6]);
        let err = load_bytes(&cut, None).unwrap_err().to_string();
        assert!(
            err.contains("c.jsonl.gz: gzip data is corrupt or cut short"),
            "{err}"
        );
        let z = zstd::stream::encode_all(&b"zstd bytes"[..], 3).unwrap();
        let zst = file_input(dir.path(), "d.bin", &z);
        assert_eq!(load_bytes(&zst, None).unwrap().0, b"zstd bytes");
    }

    #[test]
    fn whole_reads_reserve_memory_and_stop_at_the_budget() {
        let dir = tempfile::tempdir().unwrap();
        let text = b"{\"step_time\":0.5,\"tokens\":1024}\n".repeat(1 << 16); // 2 MiB
        let plain = file_input(dir.path(), "a.jsonl", &text);
        let packed = zstd::stream::encode_all(&text[..], 3).unwrap();
        let zst = file_input(dir.path(), "a.jsonl.zst", &packed);
        let n = text.len() as u64;
        // Enough for one: the reservation is held until dropped.
        let budget = MemoryBudget::new(n * memory::TABLE_FACTOR);
        let (bytes, held) = load_bytes(&plain, Some(&budget)).unwrap();
        assert_eq!(
            (bytes.len() as u64, held.bytes()),
            (n, n * memory::TABLE_FACTOR)
        );
        let err = load_bytes(&zst, Some(&budget)).unwrap_err().to_string();
        assert!(
            err.contains("a.jsonl.zst: too large to read whole"),
            "{err}"
        );
        assert!(err.contains("already held by other inputs"), "{err}");
        drop(held);
        assert_eq!(budget.held(), 0);
        let (bytes, held) = load_bytes(&zst, Some(&budget)).unwrap();
        assert_eq!(bytes, text);
        drop(held);
        // A compressed file is stopped as it is read, before it is all in memory.
        let small = MemoryBudget::new(1 << 20);
        let err = load_bytes(&zst, Some(&small)).unwrap_err().to_string();
        assert!(err.contains("more than"), "{err}");
        assert!(err.contains("beyond --max-memory 1.0 MiB"), "{err}");
        assert_eq!(small.held(), 0);
        let err = load_bytes(&plain, Some(&small)).unwrap_err().to_string();
        assert!(
            err.contains("2.0 MiB of input would take about 6.0 MiB"),
            "{err}"
        );
    }

    #[test]
    fn json_documents_reserve_more_than_tables() {
        let dir = tempfile::tempdir().unwrap();
        let mut state = String::from("{\n  \"log_history\": [");
        for step in 1..=2000 {
            state.push_str(&format!("{{\"step\": {step}, \"loss\": 1.5}},"));
        }
        state.push_str("{\"step\": 2001, \"loss\": 1.0}], \"global_step\": 2001}");
        let input = file_input(dir.path(), "trainer_state.json", state.as_bytes());
        let n = state.len() as u64;
        let options = |limit| ReadOptions {
            budget: Some(MemoryBudget::new(limit)),
            ..ReadOptions::default()
        };
        let err = read_input(&input, &options(n * memory::TABLE_FACTOR))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("hf-trainer-state JSON would take about"),
            "{err}"
        );
        let read = read_input(&input, &options(n * memory::DOCUMENT_FACTOR)).unwrap();
        assert_eq!(read.frame.height(), 2001);
        assert_eq!(
            (read.bytes, read.held.bytes()),
            (n, n * memory::DOCUMENT_FACTOR)
        );
    }
}
