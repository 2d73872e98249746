//! Semantic mapping: which source column (or command-line constant) supplies each field MFU needs.
//!
//! Logs name the same quantity a dozen ways (`step_time`, `elapsed_time_per_iteration_ms`,
//! `train/step_time`). This stage finds each field by alias after dropping the usual metric prefixes, reads
//! its unit from the name, applies `--map` overrides and run-level constants, and extracts typed values:
//! times in seconds, counts as f64, names as strings. Values that are not numbers are counted, never
//! silently turned into something else.

use std::fmt;

use std::collections::HashMap;

use polars::prelude::*;

use crate::values::{parse_cell, CellNumber, NotANumber};

pub mod arrow;

/// A quantity the MFU computation reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Field {
    RunId,
    Step,
    StepTime,
    FwdBwdTime,
    Tokens,
    NumDevices,
    DeviceName,
    Dtype,
    FlopsPerToken,
    SeqLen,
    LoggedMfu,
    /// The peak FLOP/s the log says its own MFU was computed against (torchtitan's `Peak FLOPS used
    /// for computing MFU`); `mfu audit` reads it.
    LoggedPeakFlops,
    /// Samples (images, utterances, sequences, completions) of the step, all devices together: the
    /// unit of work of logs that count no tokens.
    Samples,
    /// Model FLOPs per sample (forward + backward).
    FlopsPerSample,
    /// Tokens a second, all devices together, as the log measured them: throughput and MFU of the rows
    /// that have no step time or no token count to divide.
    TokenRate,
    /// Samples a second, all devices together, as the log measured them (see [`Field::TokenRate`]).
    SampleRate,
}

impl Field {
    pub const ALL: [Field; 16] = [
        Field::RunId,
        Field::Step,
        Field::StepTime,
        Field::FwdBwdTime,
        Field::Tokens,
        Field::NumDevices,
        Field::DeviceName,
        Field::Dtype,
        Field::FlopsPerToken,
        Field::SeqLen,
        Field::LoggedMfu,
        Field::LoggedPeakFlops,
        Field::Samples,
        Field::FlopsPerSample,
        Field::TokenRate,
        Field::SampleRate,
    ];

    /// The field's name, as `--map` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Field::RunId => "run_id",
            Field::Step => "step",
            Field::StepTime => "step_time",
            Field::FwdBwdTime => "fwd_bwd_time",
            Field::Tokens => "tokens",
            Field::NumDevices => "num_devices",
            Field::DeviceName => "device_name",
            Field::Dtype => "dtype",
            Field::FlopsPerToken => "flops_per_token",
            Field::SeqLen => "seq_len",
            Field::LoggedMfu => "logged_mfu",
            Field::LoggedPeakFlops => "logged_peak_flops",
            Field::Samples => "samples",
            Field::FlopsPerSample => "flops_per_sample",
            Field::TokenRate => "token_rate",
            Field::SampleRate => "sample_rate",
        }
    }

    /// Column names that mean this field, most preferred first (compared case-insensitively, after
    /// dropping the prefixes in [`PREFIXES`]).
    pub fn aliases(self) -> &'static [&'static str] {
        match self {
            Field::RunId => &["run_id", "run", "run_name", "experiment"],
            Field::Step => &[
                "step",
                "global_step",
                "iteration",
                "iter",
                "current_steps",
                "_step",
            ],
            Field::StepTime => &[
                "step_time",
                "step_time_s",
                "step_time_ms",
                // TRL's perf/step_s, and what mfu's meter logs.
                "step_s",
                "time_per_step",
                "iteration_time",
                "iteration-time",
                "elapsed_time_per_iteration_ms",
                "train_step_timing in s",
                "end_to_end(s)",
                "timing_s/step",
                "dt",
                // What the ms-swift reader derives: the interval's time over its steps.
                "mean_step_time_s",
                "run_mean_step_time_s",
            ],
            Field::FwdBwdTime => &[
                "fwd_bwd_time",
                "fwd_bwd_time_s",
                "fwd_bwd_s",
                "forward_backward_time",
            ],
            Field::Tokens => &[
                "tokens",
                "step_tokens",
                "num_tokens_step",
                "ntokens",
                "global_tokens",
                "total_num_tokens",
            ],
            Field::NumDevices => &[
                "num_devices",
                "world_size",
                "world-size",
                "n_gpus",
                "num_gpus",
                "gpu_count",
            ],
            Field::DeviceName => &["device_name", "device", "gpu", "gpu_name", "accelerator"],
            Field::Dtype => &["dtype", "precision", "mixed_precision", "torch_dtype"],
            Field::FlopsPerToken => &["flops_per_token", "model_flops_per_token"],
            Field::SeqLen => &["seq_len", "seq_length", "max_seq_len", "train_seq_len"],
            // After prefix dropping, perf/mfu_wall_clock and throughput/device/mfu read as these.
            Field::LoggedMfu => &[
                "mfu",
                "mfu(%)",
                "mfu_wall_clock",
                "mfu_fwd_bwd",
                "device/mfu",
            ],
            Field::LoggedPeakFlops => &["logged_peak_flops"],
            Field::Samples => &["samples", "samples_per_step", "num_samples", "step_samples"],
            Field::FlopsPerSample => &["flops_per_sample", "model_flops_per_sample"],
            // Only names that say the rate is of all devices: a rate column without a scope in its name
            // is mapped with --map, by a user who knows it.
            Field::TokenRate => &["token_rate", "global_tokens_per_second"],
            Field::SampleRate => &["sample_rate", "global_samples_per_second"],
        }
    }

    /// Names of running totals that stand for this field when no per-step column exists; they are
    /// differenced into per-step values.
    pub fn cumulative_aliases(self) -> &'static [&'static str] {
        match self {
            Field::StepTime => &[
                "elapsed_time",
                "train_runtime",
                "_runtime",
                "train_time",
                "cumulative_time",
                "total_time",
                "time_elapsed",
                "wall_time",
                "wall time",
            ],
            Field::Tokens => &[
                "num_input_tokens_seen",
                "num_tokens",
                "total_tokens",
                "tokens_seen",
                // torchtitan's TensorBoard and W&B metric: all ranks' tokens so far.
                "n_tokens_seen",
                "consumed_tokens",
                "cumulative_tokens",
            ],
            Field::Samples => &[
                "consumed_samples",
                "samples_seen",
                "num_samples_seen",
                "total_samples",
            ],
            _ => &[],
        }
    }

    /// Whether the field is a duration (and so has a unit).
    pub fn is_time(self) -> bool {
        matches!(self, Field::StepTime | Field::FwdBwdTime)
    }

    /// Whether the field holds text (names) rather than numbers.
    pub fn is_text(self) -> bool {
        matches!(self, Field::RunId | Field::DeviceName | Field::Dtype)
    }

    /// The flag that supplies this field as a constant, when there is one.
    pub fn constant_flag(self) -> Option<&'static str> {
        match self {
            Field::DeviceName => Some("--device"),
            Field::Dtype => Some("--dtype"),
            Field::NumDevices => Some("--num-devices"),
            Field::FlopsPerToken => Some("--flops-per-token"),
            Field::Tokens => Some("--tokens-per-step"),
            Field::SeqLen => Some("--seq-len"),
            Field::Samples => Some("--samples-per-step"),
            Field::FlopsPerSample => Some("--flops-per-sample"),
            _ => None,
        }
    }

    /// Fields without which no throughput can be computed at all: the step time (a count, tokens or
    /// samples, is required too: see [`map_typed_columns`]). Without a device count or FLOPs a unit,
    /// throughput is still filled and MFU is null, with a warning.
    pub fn is_required(self) -> bool {
        matches!(self, Field::StepTime)
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Field {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Field::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                let names: Vec<&str> = Field::ALL.iter().map(|f| f.name()).collect();
                format!("unknown field '{s}': expected one of {}", names.join(", "))
            })
    }
}

/// Metric-namespace prefixes dropped before comparing a column name with the aliases.
pub const PREFIXES: &[&str] = &[
    "train/",
    "train_",
    "trainer/",
    "perf/",
    "throughput/",
    "time_metrics/",
];

/// The unit of a duration column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    Seconds,
    Milliseconds,
    Microseconds,
    /// A running total in minutes (nanochat's `total time: 161.08m`).
    Minutes,
    Hours,
}

impl TimeUnit {
    /// Multiply by this to get seconds.
    pub fn to_seconds(self) -> f64 {
        match self {
            TimeUnit::Seconds => 1.0,
            TimeUnit::Milliseconds => 1e-3,
            TimeUnit::Microseconds => 1e-6,
            TimeUnit::Minutes => 60.0,
            TimeUnit::Hours => 3600.0,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TimeUnit::Seconds => "s",
            TimeUnit::Milliseconds => "ms",
            TimeUnit::Microseconds => "us",
            TimeUnit::Minutes => "min",
            TimeUnit::Hours => "h",
        }
    }

    /// The unit a column name states (`_ms`, `(ms)`, `_us`, `_s`, `(s)`, `in s`); seconds when it states none.
    pub fn from_column_name(name: &str) -> TimeUnit {
        let n = name.trim().to_ascii_lowercase();
        let says = |unit: &str| {
            n.ends_with(&format!("_{unit}"))
                || n.ends_with(&format!("({unit})"))
                || n.ends_with(&format!(" in {unit}"))
                || n.ends_with(&format!("-{unit}"))
                || n.contains(&format!("_{unit}/"))
                || n.contains(&format!("_{unit}_"))
        };
        // `ms/batch`, `ms per step`: milliseconds a something.
        let per = |unit: &str| {
            n.starts_with(&format!("{unit}/"))
                || n.starts_with(&format!("{unit}_per"))
                || n.starts_with(&format!("{unit} per"))
        };
        if says("ms") || per("ms") {
            TimeUnit::Milliseconds
        } else if says("us") || per("us") {
            TimeUnit::Microseconds
        } else {
            TimeUnit::Seconds
        }
    }
}

impl std::str::FromStr for TimeUnit {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "s" | "sec" | "seconds" => Ok(TimeUnit::Seconds),
            "ms" | "milliseconds" => Ok(TimeUnit::Milliseconds),
            "us" | "µs" | "microseconds" => Ok(TimeUnit::Microseconds),
            _ => Err(format!("unknown time unit '{s}': expected s, ms or us")),
        }
    }
}

/// Run-level values given on the command line for fields a log does not carry.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Constants {
    pub device: Option<String>,
    pub dtype: Option<String>,
    pub num_devices: Option<f64>,
    pub flops_per_token: Option<f64>,
    pub tokens_per_step: Option<f64>,
    /// Sequence length, for FLOPs per token from a model configuration.
    pub seq_len: Option<f64>,
    /// Samples per optimizer step (all devices together), for logs that count samples, not tokens.
    pub samples_per_step: Option<f64>,
    /// Model FLOPs per sample (forward + backward).
    pub flops_per_sample: Option<f64>,
}

impl Constants {
    fn text(&self, field: Field) -> Option<&str> {
        match field {
            Field::DeviceName => self.device.as_deref(),
            Field::Dtype => self.dtype.as_deref(),
            _ => None,
        }
    }

    fn number(&self, field: Field) -> Option<f64> {
        match field {
            Field::NumDevices => self.num_devices,
            Field::FlopsPerToken => self.flops_per_token,
            Field::Tokens => self.tokens_per_step,
            Field::SeqLen => self.seq_len,
            Field::Samples => self.samples_per_step,
            Field::FlopsPerSample => self.flops_per_sample,
            _ => None,
        }
    }

    fn has(&self, field: Field) -> bool {
        self.text(field).is_some() || self.number(field).is_some()
    }
}

/// How to map columns, shared by every input of a run.
#[derive(Debug, Clone, Default)]
pub struct ColumnOptions {
    /// `--map FIELD=COLUMN`: use exactly this column for the field.
    pub map: Vec<(Field, String)>,
    /// `--time-unit`: the unit of every duration column, whatever its name says.
    pub time_unit: Option<TimeUnit>,
    /// Run-level constants.
    pub constants: Constants,
    /// `--override`: a constant wins over a column the file has, instead of being an error.
    pub allow_override: bool,
    /// `--cumulative FIELD`: the column of these fields is a running total, whatever its name.
    pub cumulative: Vec<Field>,
    /// `--model-config`: FLOPs per token from a model configuration when the log has no such column.
    pub model: Option<ModelFlops>,
    /// `--convention`: whose count of FLOPs per token a model configuration is counted with.
    pub convention: crate::conventions::Convention,
    /// A missing step time gives null throughput (with a warning) instead of an error: for trainer shapes
    /// that may not time steps at all.
    pub timing_optional: bool,
    /// No field is required: for re-reading a table mfu already enriched, whose derived columns are kept.
    pub lenient: bool,
    /// What the run's own files say about fields its rows do not carry (one input's, set per input).
    pub facts: Vec<RunFact>,
    /// Which column holds a field, as a console log's vocabulary says (one input's, set per input):
    /// tried after `--map` and before the aliases.
    pub hints: Vec<ColumnHint>,
}

/// A reader's word on which column holds a field, in which unit, and whether it is a running total.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnHint {
    pub field: Field,
    pub column: String,
    pub unit: Option<TimeUnit>,
    pub cumulative: bool,
}

impl ColumnHint {
    pub fn new(
        field: Field,
        column: String,
        unit: Option<TimeUnit>,
        cumulative: bool,
    ) -> ColumnHint {
        ColumnHint {
            field,
            column,
            unit,
            cumulative,
        }
    }
}

/// A run-level value found in the run's own files (a W&B run's metadata, a Megatron argument dump, an
/// `nvidia-smi` table in a console log), used for a field no column holds. A flag always wins over it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunFact {
    pub field: Field,
    pub value: FactValue,
    /// Where it was read, for `-v`: a file and a key or line (`files/wandb-metadata.json gpu_nvidia`).
    pub origin: String,
}

/// The value of a [`RunFact`].
#[derive(Debug, Clone, PartialEq)]
pub enum FactValue {
    Text(String),
    Number(f64),
}

impl fmt::Display for FactValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FactValue::Text(t) => write!(f, "'{t}'"),
            FactValue::Number(n) => write!(f, "{n}"),
        }
    }
}

impl RunFact {
    pub fn text(field: Field, value: impl Into<String>, origin: impl Into<String>) -> RunFact {
        RunFact {
            field,
            value: FactValue::Text(value.into()),
            origin: origin.into(),
        }
    }

    pub fn number(field: Field, value: f64, origin: impl Into<String>) -> RunFact {
        RunFact {
            field,
            value: FactValue::Number(value),
            origin: origin.into(),
        }
    }
}

/// FLOPs per token computed from a model configuration, per row's sequence length.
#[derive(Debug, Clone)]
pub struct ModelFlops {
    pub config: crate::flops::ModelConfig,
    pub attention: crate::flops::Attention,
    /// Whose count of FLOPs per token (`--convention`; mfu's own by default).
    pub convention: crate::conventions::Convention,
    /// `--logged-convention`: whose count the log's own MFU used, to re-base its numerator.
    pub logged_convention: Option<crate::conventions::Convention>,
}

/// Where one field's values come from.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldSource {
    Column {
        name: String,
        unit: Option<TimeUnit>,
        /// A running total (elapsed time, tokens seen), differenced into per-step values.
        cumulative: bool,
    },
    Text(String),
    Number(f64),
    /// Read from the run's own files (see [`RunFact`]).
    Fact {
        value: FactValue,
        origin: String,
    },
    /// Computed from `--model-config` and the sequence length.
    ModelConfig,
    Missing,
}

impl fmt::Display for FieldSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FieldSource::Column {
                name,
                unit,
                cumulative,
            } => {
                write!(f, "column '{name}'")?;
                match (unit, cumulative) {
                    (Some(u), true) => write!(f, " ({}, cumulative)", u.as_str()),
                    (Some(u), false) => write!(f, " ({})", u.as_str()),
                    (None, true) => write!(f, " (cumulative)"),
                    (None, false) => Ok(()),
                }
            }
            FieldSource::Text(t) => write!(f, "constant '{t}'"),
            FieldSource::Number(n) => write!(f, "constant {n}"),
            FieldSource::Fact { value, origin } => write!(f, "{value} from {origin}"),
            FieldSource::ModelConfig => write!(f, "counted from the model config"),
            FieldSource::Missing => write!(f, "missing"),
        }
    }
}

/// The source of every field for one input.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnMapping {
    sources: Vec<(Field, FieldSource)>,
}

impl ColumnMapping {
    pub fn source(&self, field: Field) -> &FieldSource {
        &self
            .sources
            .iter()
            .find(|(f, _)| *f == field)
            .expect("every field has a source")
            .1
    }

    /// What the work is counted in: tokens where the rows count them and either their FLOPs are
    /// known or the samples' are not; samples otherwise, where the rows count them.
    pub fn unit(&self) -> WorkUnit {
        let known = |field: Field| self.source(field) != &FieldSource::Missing;
        let samples = known(Field::Samples) || known(Field::SampleRate);
        let tokens = known(Field::Tokens) || known(Field::TokenRate);
        if samples && (!tokens || (!known(Field::FlopsPerToken) && known(Field::FlopsPerSample))) {
            WorkUnit::Samples
        } else {
            WorkUnit::Tokens
        }
    }

    /// Whether a rate the log measured (tokens or samples a second, all devices) is mapped: it gives
    /// throughput, and MFU, to rows with no step time or count.
    pub fn has_logged_rate(&self) -> bool {
        [Field::TokenRate, Field::SampleRate]
            .iter()
            .any(|f| self.source(*f) != &FieldSource::Missing)
    }

    /// One line per field, for `-v`.
    pub fn describe(&self) -> String {
        self.sources
            .iter()
            .map(|(f, s)| format!("{f}={s}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Errors mapping the columns of one input.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ColumnError {
    #[error("no column for {field} (tried {tried}); the file has: {available}{hint}")]
    Missing {
        field: Field,
        tried: String,
        available: String,
        hint: String,
    },
    #[error("--map {field}={column}: the file has no column '{column}'; it has: {available}")]
    MappedColumnAbsent {
        field: Field,
        column: String,
        available: String,
    },
    #[error("--model-config needs the sequence length: give --seq-len S, or a column named seq_len, seq_length, max_seq_len or train_seq_len")]
    NoSeqLen,
    #[error("{flag} was given but the file has a {field} column '{column}': drop the flag, or add --override to use the constant")]
    ConstantShadowsColumn {
        field: Field,
        flag: &'static str,
        column: String,
    },
}

/// Lower-cased name with one known metric prefix dropped, when it has one.
fn strip_prefix(name: &str) -> String {
    let mut name = name.trim().to_ascii_lowercase();
    // Namespaces nest: Transformers' TensorBoard and W&B callbacks file a `perf/` metric under `train/`,
    // so `train/perf/step_s` is `step_s`.
    while let Some(rest) = PREFIXES
        .iter()
        .find_map(|p| name.strip_prefix(p).filter(|rest| !rest.is_empty()))
    {
        name = rest.to_string();
    }
    name
}

/// Columns a "no column" error lists: all of them for a narrow table; for a wide one (a W&B export has
/// hundreds) the few whose names, prefixes dropped, are most like the field's aliases, in the table's order,
/// and how many others there are.
fn closest_columns(columns: &[&str], field: Field) -> String {
    const ALL_UP_TO: usize = 16;
    const CLOSEST: usize = 8;
    if columns.len() <= ALL_UP_TO {
        return columns.join(", ");
    }
    let aliases: Vec<&str> = field
        .aliases()
        .iter()
        .chain(field.cumulative_aliases())
        .copied()
        .collect();
    let likeness = |column: &str| -> f64 {
        let name = strip_prefix(column);
        aliases
            .iter()
            .map(|a| strsim::jaro_winkler(&name, a))
            .fold(0.0, f64::max)
    };
    let mut ranked: Vec<(usize, f64)> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| (i, likeness(c)))
        .collect();
    // Most alike first; ties in the table's order, so the list is the same on every run.
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut chosen: Vec<usize> = ranked.iter().take(CLOSEST).map(|(i, _)| *i).collect();
    chosen.sort_unstable();
    let names: Vec<&str> = chosen.iter().map(|i| columns[*i]).collect();
    format!(
        "{} (the {CLOSEST} closest of {} columns)",
        names.join(", "),
        columns.len()
    )
}

/// A file's column names in the forms aliases are matched against, worked out once per file rather than
/// once per field.
struct MatchNames<'a> {
    columns: &'a [&'a str],
    /// Whether each column holds numbers: never a device's name or a precision (a classifier's
    /// `precision` metric, a `gpu` utilisation).
    numeric: Vec<bool>,
    /// Trimmed and lower-cased; then with a known prefix dropped.
    lowered: Vec<String>,
    stripped: Vec<String>,
    /// The same two with a unit suffix dropped (for durations).
    lowered_no_unit: Vec<String>,
    stripped_no_unit: Vec<String>,
}

impl<'a> MatchNames<'a> {
    fn new(columns: &'a [&'a str], numeric: &[&str]) -> MatchNames<'a> {
        let lowered: Vec<String> = columns
            .iter()
            .map(|c| c.trim().to_ascii_lowercase())
            .collect();
        let stripped: Vec<String> = columns.iter().map(|c| strip_prefix(c)).collect();
        let no_unit = |names: &[String]| -> Vec<String> {
            names.iter().map(|n| strip_unit(n).to_string()).collect()
        };
        MatchNames {
            columns,
            numeric: columns.iter().map(|c| numeric.contains(c)).collect(),
            lowered_no_unit: no_unit(&lowered),
            stripped_no_unit: no_unit(&stripped),
            lowered,
            stripped,
        }
    }

    /// Finds the column for `field` among the columns: by alias order first, then by column order; an
    /// exact (prefix-kept) match beats a prefix-dropped one. For a duration, a name with its unit suffix
    /// dropped also counts (`fwd_bwd_time_ms` is `fwd_bwd_time`).
    fn find(&self, field: Field) -> Option<&'a str> {
        let words_only = matches!(field, Field::DeviceName | Field::Dtype);
        self.find_where(field.aliases(), field.is_time(), |i| {
            !(words_only && self.numeric[i])
        })
    }

    fn find_by_aliases(&self, aliases: &[&str], is_time: bool) -> Option<&'a str> {
        self.find_where(aliases, is_time, |_| true)
    }

    fn find_where(
        &self,
        aliases: &[&str],
        is_time: bool,
        usable: impl Fn(usize) -> bool,
    ) -> Option<&'a str> {
        let with_units = [&self.lowered, &self.stripped];
        let all = [
            &self.lowered,
            &self.stripped,
            &self.lowered_no_unit,
            &self.stripped_no_unit,
        ];
        let candidates: &[&Vec<String>] = if is_time { &all } else { &with_units };
        for alias in aliases {
            for names in candidates {
                if let Some(i) = (0..names.len()).find(|i| names[*i] == *alias && usable(*i)) {
                    return Some(self.columns[i]);
                }
            }
        }
        None
    }
}

/// `step_time_ms` → `step_time`; `end_to_end (s)` → `end_to_end`; names without a unit unchanged.
fn strip_unit(name: &str) -> &str {
    for suffix in ["_ms", "_us", "_s", "(ms)", "(us)", "(s)", " in s", " in ms"] {
        if let Some(rest) = name.strip_suffix(suffix) {
            let rest = rest.trim_end();
            if !rest.is_empty() {
                return rest;
            }
        }
    }
    name
}

/// Decides the source of every field for a file with these column names.
pub fn map_columns(
    columns: &[&str],
    options: &ColumnOptions,
) -> Result<ColumnMapping, ColumnError> {
    map_typed_columns(columns, &[], options)
}

/// [`map_columns`], knowing which columns hold numbers: such a column is never taken for the device's
/// name or the precision by its name alone (`--map` still may).
pub fn map_typed_columns(
    columns: &[&str],
    numeric: &[&str],
    options: &ColumnOptions,
) -> Result<ColumnMapping, ColumnError> {
    let available = || columns.join(", ");
    let names = MatchNames::new(columns, numeric);
    let mut sources = Vec::with_capacity(Field::ALL.len());
    // A required field's absence is an error only where no logged rate stands in for it.
    let mut missing_required = None;
    for field in Field::ALL {
        let mapped = options.map.iter().rev().find(|(f, _)| *f == field);
        let column = match mapped {
            Some((_, wanted)) => match columns.iter().find(|c| *c == wanted) {
                Some(c) => Some(*c),
                None => {
                    return Err(ColumnError::MappedColumnAbsent {
                        field,
                        column: wanted.clone(),
                        available: available(),
                    })
                }
            },
            None => None,
        };
        // A reader's hint names a column the file has; without --map it comes before the aliases.
        let hint = mapped
            .is_none()
            .then(|| {
                options.hints.iter().find_map(|h| {
                    let column = columns.iter().find(|c| **c == h.column)?;
                    (h.field == field).then_some((h, *column))
                })
            })
            .flatten();
        let column = match (mapped, hint) {
            (Some(_), _) => column,
            (None, Some((_, c))) => Some(c),
            (None, None) => names.find(field),
        };
        let hint = hint.map(|(h, _)| h);
        let (column, found_cumulative) = match column {
            Some(c) => (Some(c), hint.is_some_and(|h| h.cumulative)),
            None if mapped.is_none() => {
                match names.find_by_aliases(field.cumulative_aliases(), field.is_time()) {
                    Some(c) => (Some(c), true),
                    None => (None, false),
                }
            }
            None => (None, false),
        };
        let cumulative = found_cumulative || options.cumulative.contains(&field);
        let constant = options.constants.has(field);
        let source = match (column, constant) {
            (Some(c), true) if !options.allow_override => {
                return Err(ColumnError::ConstantShadowsColumn {
                    field,
                    flag: field.constant_flag().unwrap_or("a constant"),
                    column: c.to_string(),
                })
            }
            (_, true) => match (
                options.constants.text(field),
                options.constants.number(field),
            ) {
                (Some(t), _) => FieldSource::Text(t.to_string()),
                (None, Some(n)) => FieldSource::Number(n),
                (None, None) => unreachable!("has() said there is a constant"),
            },
            (Some(c), false) => FieldSource::Column {
                name: c.to_string(),
                cumulative,
                unit: field.is_time().then(|| {
                    options
                        .time_unit
                        .or_else(|| hint.and_then(|h| h.unit))
                        .unwrap_or_else(|| TimeUnit::from_column_name(c))
                }),
            },
            (None, false) if field == Field::FlopsPerToken && options.model.is_some() => {
                FieldSource::ModelConfig
            }
            (None, false) if options.facts.iter().any(|f| f.field == field) => {
                let fact = options
                    .facts
                    .iter()
                    .find(|f| f.field == field)
                    .expect("checked above");
                FieldSource::Fact {
                    value: fact.value.clone(),
                    origin: fact.origin.clone(),
                }
            }
            (None, false) if field == Field::StepTime && options.timing_optional => {
                FieldSource::Missing
            }
            (None, false) if field.is_required() && !options.lenient => {
                missing_required.get_or_insert(ColumnError::Missing {
                    field,
                    tried: field.aliases().join(", "),
                    available: closest_columns(columns, field),
                    hint: field
                        .constant_flag()
                        .map(|f| format!("; give it with {f} or --map {field}=COLUMN"))
                        .unwrap_or_else(|| format!("; name it with --map {field}=COLUMN")),
                });
                FieldSource::Missing
            }
            (None, false) => FieldSource::Missing,
        };
        sources.push((field, source));
    }
    let mapping = ColumnMapping { sources };
    if let (Some(error), false) = (missing_required, mapping.has_logged_rate()) {
        return Err(error);
    }
    // A count is required of a plain table, tokens or samples: without either, no throughput (unless
    // the table logs a rate of its own). A trainer's log may lack it (its step time is still read),
    // with a warning.
    if !options.lenient
        && !options.timing_optional
        && mapping.source(Field::Tokens) == &FieldSource::Missing
        && mapping.source(Field::Samples) == &FieldSource::Missing
        && !mapping.has_logged_rate()
    {
        return Err(ColumnError::Missing {
            field: Field::Tokens,
            tried: Field::Tokens.aliases().join(", "),
            available: closest_columns(columns, Field::Tokens),
            hint: "; give it with --tokens-per-step or --map tokens=COLUMN (a log that counts images, utterances or other samples: --samples-per-step or --map samples=COLUMN)".into(),
        });
    }
    if mapping.source(Field::FlopsPerToken) == &FieldSource::ModelConfig
        && mapping.source(Field::SeqLen) == &FieldSource::Missing
    {
        return Err(ColumnError::NoSeqLen);
    }
    Ok(mapping)
}

/// Numeric values of one field for every row: seconds for durations.
#[derive(Debug, Clone)]
pub enum Numbers {
    Column(Vec<Option<f64>>),
    /// A column with a value in every row (half the memory of `Column`): an Arrow column's own buffer
    /// when it is one Float64 array, shared rather than copied.
    Dense(::arrow::buffer::ScalarBuffer<f64>),
    /// An Arrow Int64 column with a value in every row, shared rather than copied: each value is read as
    /// `value as f64`, what a cast to Float64 gives, where it is used.
    DenseInt(::arrow::buffer::ScalarBuffer<i64>),
    /// A column in pieces, one per Arrow batch of a stream, each `Dense` or `DenseInt`; `starts[i]` is
    /// the first row of `pieces[i]`. The batches' buffers are shared, not concatenated.
    Pieces {
        starts: Vec<usize>,
        pieces: Vec<Numbers>,
    },
    Constant(f64),
    Missing,
}

impl Numbers {
    #[inline]
    pub fn get(&self, row: usize) -> Option<f64> {
        match self {
            Numbers::Column(v) => v[row],
            Numbers::Dense(v) => Some(v[row]),
            Numbers::DenseInt(v) => Some(v[row] as f64),
            Numbers::Pieces { starts, pieces } => {
                let piece = starts.partition_point(|s| *s <= row) - 1;
                pieces[piece].get(row - starts[piece])
            }
            Numbers::Constant(c) => Some(*c),
            Numbers::Missing => None,
        }
    }

    pub fn is_missing(&self) -> bool {
        matches!(self, Numbers::Missing)
    }
}

/// Text values of one field for every row.
#[derive(Debug, Clone)]
pub enum Texts {
    Column(StringChunked),
    /// Each row's value as an index into `values`, in order of first appearance (text read from Arrow
    /// arrays: a log's text is a handful of values repeated row after row).
    Coded {
        codes: Vec<u32>,
        values: Vec<Option<String>>,
    },
    Constant(String),
    Missing,
}

impl Texts {
    #[inline]
    pub fn get(&self, row: usize) -> Option<&str> {
        match self {
            Texts::Column(c) => c.get(row),
            Texts::Coded { codes, values } => values[codes[row] as usize].as_deref(),
            Texts::Constant(s) => Some(s.as_str()),
            Texts::Missing => None,
        }
    }
}

/// A table fields are read from: a polars frame (the command line), or an Arrow record batch (the Python
/// package and the engines, see [`arrow`]), each column read where it lies.
pub trait FieldTable: Sync {
    fn height(&self) -> usize;
    /// The column's cells as numbers (`scale` applied; a duration's own unit when `is_time`), with the
    /// count of cells that held something other than a number.
    fn numbers(
        &self,
        column: &str,
        scale: f64,
        is_time: bool,
    ) -> PolarsResult<(Vec<Option<f64>>, usize)>;
    /// The column's cells as text.
    fn texts(&self, column: &str) -> PolarsResult<Texts>;
    /// The column as numbers (`scale` applied) when it is numeric with a value in every row; `None`
    /// otherwise, or when the table cannot say cheaply.
    fn dense(&self, _column: &str, _scale: f64) -> Option<Numbers> {
        None
    }
}

impl FieldTable for DataFrame {
    fn height(&self) -> usize {
        DataFrame::height(self)
    }

    fn numbers(
        &self,
        column: &str,
        scale: f64,
        is_time: bool,
    ) -> PolarsResult<(Vec<Option<f64>>, usize)> {
        numeric_values(self.column(column)?, scale, is_time)
    }

    fn texts(&self, column: &str) -> PolarsResult<Texts> {
        Ok(Texts::Column(text_values(self.column(column)?)?))
    }

    /// A numeric column with a value in every row as 8 bytes a row, not 16 (`Option<f64>`): the field
    /// values of a 1 GiB console log's 4.5M rows took 290 MB.
    fn dense(&self, column: &str, scale: f64) -> Option<Numbers> {
        let col = self.column(column).ok()?;
        if col.null_count() > 0 || !col.dtype().is_primitive_numeric() {
            return None;
        }
        let cast = col.cast(&DataType::Float64).ok()?;
        let mut values = Vec::with_capacity(cast.len());
        for chunk in cast.f64().ok()?.downcast_iter() {
            // As `numeric_values` reads them: each value times the scale.
            values.extend(chunk.values().iter().map(|v| v * scale));
        }
        Some(Numbers::Dense(values.into()))
    }
}

/// A column's cells as text: lists joined, other types cast.
fn text_values(col: &Column) -> PolarsResult<StringChunked> {
    Ok(match col.dtype() {
        DataType::String => col.str()?.clone(),
        DataType::List(_) => join_lists(col)?,
        _ => col.cast(&DataType::String)?.str()?.clone(),
    })
}

/// What a run's work is counted in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WorkUnit {
    #[default]
    Tokens,
    /// Samples: images, utterances, sequences, completions.
    Samples,
}

impl WorkUnit {
    /// The unit's plural (`tokens`, `samples`).
    pub fn name(self) -> &'static str {
        match self {
            WorkUnit::Tokens => "tokens",
            WorkUnit::Samples => "samples",
        }
    }
}

/// The typed values of every field the computation reads, for one frame.
#[derive(Debug, Clone)]
pub struct FieldValues {
    pub height: usize,
    pub step_time_s: Numbers,
    pub fwd_bwd_time_s: Numbers,
    /// The count of the step's work in [`FieldValues::unit`]: tokens, or samples where the unit is
    /// samples.
    pub tokens: Numbers,
    pub num_devices: Numbers,
    /// FLOPs per unit of work: per token, or per sample where the unit is samples.
    pub flops_per_token: Numbers,
    /// What the work is counted in (tokens unless the rows count samples only, or only the samples
    /// have FLOPs a unit).
    pub unit: WorkUnit,
    /// The samples of each step where the rows count them (whatever the unit), for
    /// `samples_per_second`; missing where they do not.
    pub samples: Numbers,
    pub device: Texts,
    pub dtype: Texts,
    /// The log's own MFU as a fraction (a column named as a percentage is divided by 100).
    pub logged_mfu: Numbers,
    /// The rate of the work the log measured itself, in [`FieldValues::unit`]s a second over all
    /// devices: the throughput of the rows whose count and step time give none.
    pub rate: Numbers,
    /// The samples a second the log measured, for `samples_per_second` where the samples and the step
    /// time give none (whatever the unit).
    pub sample_rate: Numbers,
    /// Each row's step (its position, from 1, when the log has no step column); empty when the caller
    /// did not ask for the order of the rows (see [`extract_from`]).
    pub steps: Vec<Option<f64>>,
    /// Each row's run, as an index in order of first appearance (all 0 without a run_id column); empty
    /// as `steps` is.
    pub runs: Vec<u32>,
    /// Steps each row's step time covers, when it was differenced from a running total logged every k
    /// steps; `None` when every row is one step.
    pub spans: Option<Vec<f64>>,
    /// Cells of numeric fields that held text that is not a number, per column name.
    pub non_numeric: Vec<(String, usize)>,
    /// What the values of a column meant other than they say, in words: a token counter that never moves
    /// (left null), logged MFU sentinels (left null).
    pub column_warnings: Vec<String>,
}

/// Extracts typed values from `df` following `mapping`; `model` computes FLOPs per token when the mapping
/// says they come from a model configuration.
pub fn extract(
    df: &DataFrame,
    mapping: &ColumnMapping,
    model: Option<&ModelFlops>,
) -> PolarsResult<FieldValues> {
    extract_from(df, mapping, model, true)
}

/// [`extract`] from any [`FieldTable`]. The steps and runs of the rows (a pass over the step column and
/// the run names' coding) are read when `with_order` is set or a field is a running total; without them
/// `steps` and `runs` are empty, which is all the arithmetic of the added columns needs (a rolling
/// window, a summary and a plot need them).
pub fn extract_from(
    df: &dyn FieldTable,
    mapping: &ColumnMapping,
    model: Option<&ModelFlops>,
    with_order: bool,
) -> PolarsResult<FieldValues> {
    let mut non_numeric = Vec::new();
    let texts = |field: Field| -> PolarsResult<Texts> {
        Ok(match mapping.source(field) {
            FieldSource::Column { name, .. } => df.texts(name)?,
            FieldSource::Text(t)
            | FieldSource::Fact {
                value: FactValue::Text(t),
                ..
            } => Texts::Constant(t.clone()),
            FieldSource::Number(n)
            | FieldSource::Fact {
                value: FactValue::Number(n),
                ..
            } => Texts::Constant(n.to_string()),
            FieldSource::ModelConfig | FieldSource::Missing => Texts::Missing,
        })
    };
    // The text fields are coded while the steps and runs are read: on a large table, each is a pass
    // over a column.
    // Steps and runs are read only when something needs them: a running total always does.
    let with_order = with_order
        || mapping.sources.iter().any(|(_, s)| {
            matches!(
                s,
                FieldSource::Column {
                    cumulative: true,
                    ..
                }
            )
        });
    let ((steps, runs), (device, dtype)) = rayon::join(
        || {
            if with_order {
                step_order(df, mapping)
            } else {
                (Vec::new(), Vec::new())
            }
        },
        || rayon::join(|| texts(Field::DeviceName), || texts(Field::Dtype)),
    );
    let mut spans = None;
    // Running totals of runs with a single row, read as whole-run means: (column, runs).
    let mut whole_run_means: Vec<(String, usize)> = Vec::new();
    let mut numbers = |field: Field| -> PolarsResult<Numbers> {
        Ok(match mapping.source(field) {
            FieldSource::Column {
                name,
                unit,
                cumulative,
            } => {
                let scale = unit.map_or(1.0, TimeUnit::to_seconds);
                if !*cumulative {
                    if let Some(values) = df.dense(name, scale) {
                        return Ok(values);
                    }
                }
                let (values, bad) = df.numbers(name, scale, unit.is_some())?;
                if bad > 0 {
                    non_numeric.push((name.clone(), bad));
                }
                if *cumulative {
                    let (per_step, span, whole) = per_step_intervals(&values, &steps, &runs);
                    if field == Field::StepTime {
                        spans = Some(span);
                    }
                    if whole > 0 {
                        whole_run_means.push((name.clone(), whole));
                    }
                    Numbers::Column(per_step)
                } else {
                    Numbers::Column(values)
                }
            }
            FieldSource::Number(n)
            | FieldSource::Fact {
                value: FactValue::Number(n),
                ..
            } => Numbers::Constant(*n),
            FieldSource::Text(t)
            | FieldSource::Fact {
                value: FactValue::Text(t),
                ..
            } => Numbers::Constant(t.trim().parse().unwrap_or(f64::NAN)),
            FieldSource::ModelConfig | FieldSource::Missing => Numbers::Missing,
        })
    };
    let step_time_s = numbers(Field::StepTime)?;
    let fwd_bwd_time_s = numbers(Field::FwdBwdTime)?;
    let mut tokens = numbers(Field::Tokens)?;
    let num_devices = numbers(Field::NumDevices)?;
    let mut flops_per_token = numbers(Field::FlopsPerToken)?;
    let samples = numbers(Field::Samples)?;
    let flops_per_sample = numbers(Field::FlopsPerSample)?;
    let token_rate = numbers(Field::TokenRate)?;
    let sample_rate = numbers(Field::SampleRate)?;
    let counts_from_model = matches!(
        mapping.source(Field::FlopsPerToken),
        FieldSource::ModelConfig
    );
    let logged_convention = model.and_then(|m| m.logged_convention);
    // Read once, and only where a count from the model config needs it.
    let seq_len = match model {
        Some(_) if counts_from_model || logged_convention.is_some() => numbers(Field::SeqLen)?,
        _ => Numbers::Missing,
    };
    if let (true, Some(model)) = (counts_from_model, model) {
        flops_per_token = model_flops(model, model.convention, &seq_len, df.height());
    }
    let mut logged_mfu = numbers(Field::LoggedMfu)?;
    if let FieldSource::Column { name, .. } = mapping.source(Field::LoggedMfu) {
        if names_a_percentage(name) {
            match &mut logged_mfu {
                Numbers::Column(v) => v.iter_mut().for_each(|x| *x = x.map(|m| m / 100.0)),
                Numbers::Dense(_) | Numbers::DenseInt(_) | Numbers::Pieces { .. } => {
                    let column = &logged_mfu;
                    let percent = (0..df.height())
                        .map(|row| column.get(row).unwrap_or(f64::NAN) / 100.0)
                        .collect();
                    logged_mfu = Numbers::Dense(percent)
                }
                Numbers::Constant(_) | Numbers::Missing => {}
            }
        }
    }
    let mut column_warnings = Vec::new();
    if let (Some(model), Some(logged)) = (model, logged_convention) {
        let (rebased, uncounted) = rebase_numerator(
            model,
            logged,
            &logged_mfu,
            &flops_per_token,
            &seq_len,
            df.height(),
        );
        if uncounted > 0 {
            column_warnings.push(format!(
                "--logged-convention {logged}: {uncounted} row(s) with a logged MFU but no sequence length or FLOPs per token to re-base it with have a null mfu_logged_corrected"
            ));
        }
        logged_mfu = rebased;
    }
    for (name, runs) in &whole_run_means {
        column_warnings.push(format!(
            "column '{name}' is a running total with a single row in {runs} run(s): that row's value over its step, the mean over the whole run from step 0"
        ));
    }
    if let FieldSource::Column {
        name, cumulative, ..
    } = mapping.source(Field::Tokens)
    {
        let (nulled, stuck_runs) = null_uncounted_runs(&mut tokens, &runs, df.height());
        if nulled > 0 {
            column_warnings.push(format!(
                "column '{name}' {} {stuck_runs} run(s): the trainer did not count tokens, so {nulled} row(s) have null tokens (not 0) and null MFU; give --tokens-per-step",
                if *cumulative { "never moves in" } else { "is 0 in every row of" }
            ));
        }
    }
    if let FieldSource::Column { name, .. } = mapping.source(Field::LoggedMfu) {
        let sentinels = null_negative(&mut logged_mfu, df.height());
        if sentinels > 0 {
            column_warnings.push(format!(
                "column '{name}': {sentinels} negative value(s) (a trainer's placeholder before its estimate warms up, such as nanoGPT's -100%) read as null"
            ));
        }
    }
    let unit = mapping.unit();
    let (tokens, flops_per_token, rate) = match unit {
        WorkUnit::Tokens => (tokens, flops_per_token, token_rate),
        WorkUnit::Samples => (samples.clone(), flops_per_sample, sample_rate.clone()),
    };
    Ok(FieldValues {
        height: df.height(),
        step_time_s,
        fwd_bwd_time_s,
        tokens,
        num_devices,
        flops_per_token,
        unit,
        samples,
        device: device?,
        dtype: dtype?,
        logged_mfu,
        rate,
        sample_rate,
        steps,
        runs,
        spans,
        non_numeric,
        column_warnings,
    })
}

/// A token count that is 0 in every row of a run (per step, or differenced from a running total that
/// never moves) means the trainer did not count tokens, not that the run did no work: those rows become
/// null. Rows are one run when `runs` is empty. Gives the rows nulled and the runs they belong to.
fn null_uncounted_runs(tokens: &mut Numbers, runs: &[u32], height: usize) -> (usize, usize) {
    let run_of = |row: usize| runs.get(row).copied().unwrap_or(0);
    // Per run: (any value, all values 0).
    let mut seen: HashMap<u32, (bool, bool)> = HashMap::new();
    for row in 0..height {
        if let Some(v) = tokens.get(row) {
            let slot = seen.entry(run_of(row)).or_insert((false, true));
            slot.0 = true;
            slot.1 &= v == 0.0;
        }
    }
    let stuck: Vec<u32> = seen
        .iter()
        .filter(|(_, (any, zero))| *any && *zero)
        .map(|(run, _)| *run)
        .collect();
    if stuck.is_empty() {
        return (0, 0);
    }
    let mut nulled = 0;
    let values = (0..height)
        .map(|row| {
            let v = tokens.get(row);
            if v.is_some() && stuck.contains(&run_of(row)) {
                nulled += 1;
                None
            } else {
                v
            }
        })
        .collect();
    *tokens = Numbers::Column(values);
    (nulled, stuck.len())
}

/// Negative values made null (a logged MFU below 0 is a placeholder, never a measurement); gives how many.
fn null_negative(values: &mut Numbers, height: usize) -> usize {
    let negative = (0..height)
        .filter(|row| values.get(*row).is_some_and(|v| v < 0.0))
        .count();
    if negative > 0 {
        *values = Numbers::Column(
            (0..height)
                .map(|row| values.get(row).filter(|v| *v >= 0.0))
                .collect(),
        );
    }
    negative
}

/// A logged MFU moved onto this enrichment's numerator: × the row's FLOPs per token / the count of the
/// convention the log used (`logged`), from the model config at the row's sequence length. Gives the
/// re-based values and how many rows with a logged MFU could not be re-based (null, never left as is).
fn rebase_numerator(
    model: &ModelFlops,
    logged: crate::conventions::Convention,
    logged_mfu: &Numbers,
    flops_per_token: &Numbers,
    seq_len: &Numbers,
    height: usize,
) -> (Numbers, usize) {
    let theirs = model_flops(model, logged, seq_len, height);
    let mut uncounted = 0;
    let values = (0..height)
        .map(|row| {
            let m = logged_mfu.get(row)?;
            match (flops_per_token.get(row), theirs.get(row)) {
                (Some(ours), Some(theirs)) if theirs > 0.0 => Some(m * ours / theirs),
                _ => {
                    uncounted += 1;
                    None
                }
            }
        })
        .collect();
    (Numbers::Column(values), uncounted)
}

/// FLOPs per token by `convention` for each row's sequence length, computed once per distinct length.
/// A length that is missing, not a positive integer, or that the configuration cannot be counted with
/// gives null.
fn model_flops(
    model: &ModelFlops,
    convention: crate::conventions::Convention,
    seq_len: &Numbers,
    height: usize,
) -> Numbers {
    let mut cache: HashMap<u64, Option<f64>> = HashMap::new();
    let mut per_len = |s: Option<f64>| -> Option<f64> {
        let s = s.filter(|s| s.is_finite() && *s >= 1.0 && s.fract() == 0.0)? as u64;
        *cache.entry(s).or_insert_with(|| match convention {
            crate::conventions::Convention::Mfu => crate::flops::flops_per_token(
                &model.config,
                s,
                model.attention,
                crate::flops::Recompute::None,
            )
            .ok()
            .map(|b| b.flops_per_token),
            other => crate::conventions::count(
                other,
                &model.config,
                s,
                &crate::conventions::ConventionOptions::default(),
            )
            .ok()
            .map(|t| t.total()),
        })
    };
    match seq_len {
        Numbers::Constant(s) => match per_len(Some(*s)) {
            Some(f) => Numbers::Constant(f),
            None => Numbers::Missing,
        },
        Numbers::Column(v) => Numbers::Column(v.iter().map(|s| per_len(*s)).collect()),
        Numbers::Dense(_) | Numbers::DenseInt(_) | Numbers::Pieces { .. } => {
            Numbers::Column((0..height).map(|row| per_len(seq_len.get(row))).collect())
        }
        Numbers::Missing => Numbers::Column(vec![None; height]),
    }
}

/// A list column (a JSON array of device names, one per rank) as `;`-joined text, the list form the
/// resolver reads.
fn join_lists(col: &Column) -> PolarsResult<StringChunked> {
    let lists = col.list()?;
    let mut out: Vec<Option<String>> = Vec::with_capacity(lists.len());
    for item in lists.amortized_iter() {
        out.push(match item {
            None => None,
            Some(s) => {
                let s = s.as_ref().cast(&DataType::String)?;
                Some(s.str()?.iter().flatten().collect::<Vec<_>>().join(";"))
            }
        });
    }
    Ok(StringChunked::from_iter_options(
        col.name().clone(),
        out.into_iter(),
    ))
}

/// A column as f64 values times `scale`, with the count of text cells that were not numbers. For a
/// duration (`is_time`), a cell that names its own unit (`2950ms`, `0:01:05`) is read in that unit.
pub(crate) fn numeric_values(
    col: &Column,
    scale: f64,
    is_time: bool,
) -> PolarsResult<(Vec<Option<f64>>, usize)> {
    let scaled = |v: f64| v * scale;
    match col.dtype() {
        DataType::String => Ok(text_numbers(col.str()?.iter(), scale, is_time)),
        DataType::Boolean => Ok((vec![None; col.len()], col.len() - col.null_count())),
        // Dictionary-encoded text (pandas categoricals in Parquet) is read as the text it stands for.
        DataType::Categorical(..) | DataType::Enum(..) => {
            numeric_values(&col.cast(&DataType::String)?, scale, is_time)
        }
        _ => {
            // A type with no numeric reading (a list, a struct, bytes): every cell is not a number.
            let Ok(cast) = col.cast(&DataType::Float64) else {
                return Ok((vec![None; col.len()], col.len() - col.null_count()));
            };
            // Chunk by chunk, so a column without nulls skips the validity bits.
            let mut values = Vec::with_capacity(cast.len());
            for chunk in cast.f64()?.downcast_iter() {
                match chunk.validity().filter(|v| v.unset_bits() > 0) {
                    None => values.extend(chunk.values().iter().map(|v| Some(scaled(*v)))),
                    Some(valid) => values.extend(
                        chunk
                            .values()
                            .iter()
                            .zip(valid.iter())
                            .map(|(v, ok)| ok.then(|| scaled(*v))),
                    ),
                }
            }
            Ok((values, 0))
        }
    }
}

/// Text cells read as numbers (see [`crate::values::parse_cell`]): `scale` applied, or a duration's own
/// unit when `is_time`; with the count of cells that are not numbers.
pub(crate) fn text_numbers<'a>(
    cells: impl Iterator<Item = Option<&'a str>>,
    scale: f64,
    is_time: bool,
) -> (Vec<Option<f64>>, usize) {
    let mut bad = 0;
    let values = cells
        .map(|cell| match parse_cell(cell?) {
            Ok(None) => None,
            Ok(Some(CellNumber {
                value,
                seconds_per_unit,
            })) => match seconds_per_unit {
                Some(f) if is_time => Some(value * f),
                _ => Some(value * scale),
            },
            Err(NotANumber) => {
                bad += 1;
                None
            }
        })
        .collect();
    (values, bad)
}

/// `mfu(%)`, `mfu_pct`, `mfu_percent`: the values are percentages.
fn names_a_percentage(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.contains('%') || n.ends_with("pct") || n.contains("percent")
}

/// Each row's step (the row's position when the log has no step column) and run (an index per distinct
/// run_id; one run when there is none), for differencing counters.
fn step_order(df: &dyn FieldTable, mapping: &ColumnMapping) -> (Vec<Option<f64>>, Vec<u32>) {
    let n = df.height();
    let steps = match mapping.source(Field::Step) {
        FieldSource::Column { name, .. } => df.numbers(name, 1.0, false).ok().map(|(v, _)| v),
        _ => None,
    }
    .unwrap_or_else(|| (1..=n).map(|i| Some(i as f64)).collect());
    let runs = match mapping.source(Field::RunId) {
        FieldSource::Column { name, .. } => match df.texts(name) {
            // Codes are given in order of first appearance: they are the run indices.
            Ok(Texts::Coded { codes, .. }) => codes,
            Ok(texts) => run_indices((0..n).map(|row| texts.get(row))),
            Err(_) => vec![0; n],
        },
        _ => vec![0; n],
    };
    (steps, runs)
}

/// An index per distinct run name, in order of first appearance. Rows of a run are usually contiguous, so
/// the previous row's name is checked before the map.
fn run_indices<'a>(names: impl Iterator<Item = Option<&'a str>>) -> Vec<u32> {
    let mut ids: HashMap<Option<&str>, u32> = HashMap::new();
    let mut last: Option<(Option<&str>, u32)> = None;
    names
        .map(|name| match last {
            Some((prev, id)) if prev == name => id,
            _ => {
                let next = ids.len() as u32;
                let id = *ids.entry(name).or_insert(next);
                last = Some((name, id));
                id
            }
        })
        .collect()
}

/// Turns a cumulative counter into per-step values, run by run in file order: each row gets
/// (value - previous value) / (step - previous step), the mean per step over the interval it closes. The
/// first row of a run has no interval (null). A counter or step that goes down starts a new segment (a
/// resumed or restarted run), whose first row is null too; a repeated step is null.
pub fn per_step_differences(
    values: &[Option<f64>],
    steps: &[Option<f64>],
    runs: &[u32],
) -> Vec<Option<f64>> {
    per_step_intervals(values, steps, runs).0
}

/// [`per_step_differences`], with the number of steps each row's interval covers (1 where there is
/// none).
///
/// A run of a single row has no interval to close, but its totals count from step 0: that row gets
/// value / step, the whole run's mean (a log that wrote only its final row). The last number is how many
/// such runs there were.
pub fn per_step_intervals(
    values: &[Option<f64>],
    steps: &[Option<f64>],
    runs: &[u32],
) -> (Vec<Option<f64>>, Vec<f64>, usize) {
    let mut out = vec![None; values.len()];
    let mut spans = vec![1.0; values.len()];
    // Last (value, step) seen per run, and the rows with a value per run.
    let mut previous: HashMap<u32, (f64, f64)> = HashMap::new();
    let mut rows_of: HashMap<u32, (usize, usize)> = HashMap::new();
    for (row, value) in values.iter().enumerate() {
        let (Some(v), Some(step)) = (*value, steps[row]) else {
            continue;
        };
        if !(v.is_finite() && step.is_finite()) {
            continue;
        }
        rows_of.entry(runs[row]).or_insert((row, 0)).1 += 1;
        match previous.get(&runs[row]) {
            Some(&(pv, ps)) if v >= pv && step > ps => {
                out[row] = Some((v - pv) / (step - ps));
                spans[row] = step - ps;
            }
            Some(&(_, ps)) if step == ps => continue,
            _ => {}
        }
        previous.insert(runs[row], (v, step));
    }
    let mut whole_runs = 0;
    for (row, count) in rows_of.into_values() {
        let (Some(v), Some(step)) = (values[row], steps[row]) else {
            continue;
        };
        if count == 1 && step >= 1.0 && v >= 0.0 {
            out[row] = Some(v / step);
            spans[row] = step;
            whole_runs += 1;
        }
    }
    (out, spans, whole_runs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_column_of_numbers_is_never_the_precision_or_the_device_by_its_name() {
        let mut o = ColumnOptions::default();
        o.constants.dtype = Some("bf16".into());
        o.constants.device = Some("NVIDIA H100 80GB HBM3".into());
        o.constants.num_devices = Some(8.0);
        o.constants.flops_per_token = Some(1e9);
        // W&B history with a classifier's precision and a GPU utilisation: the flags apply, no clash.
        let cols = ["step", "step_time", "tokens", "precision", "gpu"];
        let m = map_typed_columns(
            &cols,
            &["step", "step_time", "tokens", "precision", "gpu"],
            &o,
        )
        .unwrap();
        assert_eq!(m.source(Field::Dtype), &FieldSource::Text("bf16".into()));
        assert_eq!(
            m.source(Field::DeviceName),
            &FieldSource::Text("NVIDIA H100 80GB HBM3".into())
        );
        // torchtitan's running token count.
        let m = map_columns(&["step", "step_time", "n_tokens_seen"], &o).unwrap();
        assert_eq!(
            m.source(Field::Tokens),
            &FieldSource::Column {
                name: "n_tokens_seen".into(),
                unit: None,
                cumulative: true
            }
        );
        // The same names holding words are the precision and the device (so the flags clash).
        assert!(map_typed_columns(&cols, &["step", "step_time", "tokens"], &o).is_err());
    }

    fn opts() -> ColumnOptions {
        ColumnOptions::default()
    }

    #[test]
    fn a_wide_table_without_a_field_lists_its_closest_columns() {
        let mut cols: Vec<String> = (0..250).map(|i| format!("eval/metric_{i}")).collect();
        cols.insert(120, "train/num_tokens_seen".into());
        cols.insert(7, "throughput/tokens_per_sec".into());
        cols.push("step_time".into());
        let names: Vec<&str> = cols.iter().map(String::as_str).collect();
        let ColumnError::Missing {
            field, available, ..
        } = map_columns(&names, &opts()).unwrap_err()
        else {
            panic!("expected a missing field");
        };
        assert_eq!(field, Field::Tokens);
        assert!(
            available.ends_with("(the 8 closest of 253 columns)"),
            "{available}"
        );
        assert!(available.contains("train/num_tokens_seen"), "{available}");
        assert!(
            available.contains("throughput/tokens_per_sec"),
            "{available}"
        );
        assert_eq!(available.matches(", ").count(), 7, "{available}");
    }

    #[test]
    fn nested_namespaces_are_dropped_in_turn() {
        // What Transformers' TensorBoard and W&B callbacks make of mfu's own perf/ metrics.
        let cols = [
            "train/perf/step_s",
            "train/perf/tokens",
            "train/perf/device_name",
            "train/perf/mfu_wall_clock",
            "train/perf/num_devices",
            "train/perf/flops_per_token",
        ];
        let m = map_columns(&cols, &opts()).unwrap();
        for (field, name) in [
            (Field::StepTime, "train/perf/step_s"),
            (Field::Tokens, "train/perf/tokens"),
            (Field::DeviceName, "train/perf/device_name"),
            (Field::LoggedMfu, "train/perf/mfu_wall_clock"),
            (Field::NumDevices, "train/perf/num_devices"),
        ] {
            match m.source(field) {
                FieldSource::Column { name: found, .. } => assert_eq!(found, name),
                other => panic!("{field}: {other:?}"),
            }
        }
    }

    #[test]
    fn finds_fields_by_alias_after_prefixes() {
        let cols = [
            "train/global_step",
            "perf/step_time_ms",
            "throughput/ntokens",
            "world_size",
            "gpu_name",
            "torch_dtype",
            "model_flops_per_token",
            "loss",
        ];
        let m = map_columns(&cols, &opts()).unwrap();
        assert_eq!(
            m.source(Field::Step),
            &FieldSource::Column {
                name: "train/global_step".into(),
                unit: None,
                cumulative: false
            }
        );
        assert_eq!(
            m.source(Field::StepTime),
            &FieldSource::Column {
                name: "perf/step_time_ms".into(),
                unit: Some(TimeUnit::Milliseconds),
                cumulative: false
            }
        );
        assert_eq!(
            m.source(Field::Tokens),
            &FieldSource::Column {
                name: "throughput/ntokens".into(),
                unit: None,
                cumulative: false
            }
        );
        assert_eq!(m.source(Field::FwdBwdTime), &FieldSource::Missing);
        assert_eq!(m.source(Field::RunId), &FieldSource::Missing);
        // A unit suffix on a duration's alias still finds it, with that unit.
        let m = map_columns(
            &[
                "fwd_bwd_time_ms",
                "iteration_time (us)",
                "tokens",
                "n_gpus",
                "flops_per_token",
            ],
            &opts(),
        )
        .unwrap();
        assert_eq!(
            m.source(Field::FwdBwdTime),
            &FieldSource::Column {
                name: "fwd_bwd_time_ms".into(),
                unit: Some(TimeUnit::Milliseconds),
                cumulative: false
            }
        );
        assert_eq!(
            m.source(Field::StepTime),
            &FieldSource::Column {
                name: "iteration_time (us)".into(),
                unit: Some(TimeUnit::Microseconds),
                cumulative: false
            }
        );
    }

    #[test]
    fn units_from_names() {
        for (name, unit) in [
            ("step_time_ms", TimeUnit::Milliseconds),
            ("elapsed_time_per_iteration_ms", TimeUnit::Milliseconds),
            ("end_to_end(s)", TimeUnit::Seconds),
            ("train_step_timing in s", TimeUnit::Seconds),
            ("timing_s/step", TimeUnit::Seconds),
            ("iteration_time_us", TimeUnit::Microseconds),
            ("step_time (ms)", TimeUnit::Milliseconds),
            ("dt", TimeUnit::Seconds),
            ("step_time", TimeUnit::Seconds),
        ] {
            assert_eq!(TimeUnit::from_column_name(name), unit, "{name}");
        }
    }

    #[test]
    fn alias_order_decides_between_two_candidates() {
        let m = map_columns(
            &[
                "dt",
                "step_time_s",
                "tokens",
                "num_devices",
                "flops_per_token",
            ],
            &opts(),
        )
        .unwrap();
        assert_eq!(
            m.source(Field::StepTime),
            &FieldSource::Column {
                name: "step_time_s".into(),
                unit: Some(TimeUnit::Seconds),
                cumulative: false
            }
        );
    }

    #[test]
    fn missing_required_field_names_aliases_and_columns() {
        let err = map_columns(&["step", "loss", "tokens"], &opts()).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("no column for step_time (tried step_time, step_time_s"),
            "{text}"
        );
        assert!(text.contains("the file has: step, loss, tokens"), "{text}");
        assert!(text.contains("--map step_time=COLUMN"), "{text}");
    }

    #[test]
    fn constants_fill_gaps_and_clash_without_override() {
        let mut o = opts();
        o.constants.num_devices = Some(8.0);
        o.constants.flops_per_token = Some(1e9);
        o.constants.device = Some("NVIDIA H100".into());
        let m = map_columns(&["step_time", "tokens"], &o).unwrap();
        assert_eq!(m.source(Field::NumDevices), &FieldSource::Number(8.0));
        assert_eq!(
            m.source(Field::DeviceName),
            &FieldSource::Text("NVIDIA H100".into())
        );

        let err = map_columns(&["step_time", "tokens", "gpu"], &o).unwrap_err();
        assert!(matches!(
            err,
            ColumnError::ConstantShadowsColumn {
                field: Field::DeviceName,
                ..
            }
        ));
        assert!(err.to_string().contains("--override"));
        o.allow_override = true;
        let m = map_columns(&["step_time", "tokens", "gpu"], &o).unwrap();
        assert_eq!(
            m.source(Field::DeviceName),
            &FieldSource::Text("NVIDIA H100".into())
        );
    }

    #[test]
    fn facts_fill_what_no_column_or_flag_gives() {
        let mut o = opts();
        o.facts = vec![
            RunFact::text(Field::DeviceName, "NVIDIA A100-SXM4-80GB", "meta.json gpu"),
            RunFact::number(Field::NumDevices, 8.0, "meta.json gpu_count"),
            RunFact::number(Field::FlopsPerToken, 6e9, "dump"),
        ];
        o.constants.num_devices = Some(16.0);
        // A column beats a fact, a flag beats a fact (no --override needed), a fact fills the rest.
        let m = map_columns(&["step_time", "tokens", "gpu"], &o).unwrap();
        assert_eq!(
            m.source(Field::DeviceName),
            &FieldSource::Column {
                name: "gpu".into(),
                unit: None,
                cumulative: false
            }
        );
        assert_eq!(m.source(Field::NumDevices), &FieldSource::Number(16.0));
        assert_eq!(
            m.source(Field::FlopsPerToken),
            &FieldSource::Fact {
                value: FactValue::Number(6e9),
                origin: "dump".into()
            }
        );
        assert!(m
            .describe()
            .contains("flops_per_token=6000000000 from dump"));
        let m = map_columns(&["step_time", "tokens"], &o).unwrap();
        assert!(m
            .describe()
            .contains("device_name='NVIDIA A100-SXM4-80GB' from meta.json gpu"));
    }

    #[test]
    fn map_overrides_detection_and_checks_the_column() {
        let mut o = opts();
        o.map.push((Field::StepTime, "my_time".into()));
        o.time_unit = Some(TimeUnit::Milliseconds);
        o.constants.num_devices = Some(1.0);
        o.constants.flops_per_token = Some(1.0);
        let m = map_columns(&["step_time", "my_time", "tokens"], &o).unwrap();
        assert_eq!(
            m.source(Field::StepTime),
            &FieldSource::Column {
                name: "my_time".into(),
                unit: Some(TimeUnit::Milliseconds),
                cumulative: false
            }
        );
        o.map[0].1 = "nope".into();
        assert!(matches!(
            map_columns(&["step_time", "tokens"], &o),
            Err(ColumnError::MappedColumnAbsent { .. })
        ));
    }

    #[test]
    fn cumulative_counters_become_per_step_means() {
        let values = [
            Some(0.0),
            Some(10.0),
            Some(30.0),
            Some(5.0),
            Some(8.0),
            None,
            Some(20.0),
        ];
        let steps = [
            Some(1.0),
            Some(2.0),
            Some(4.0),
            Some(1.0),
            Some(2.0),
            Some(3.0),
            Some(4.0),
        ];
        let runs = [0, 0, 0, 0, 0, 0, 0];
        let got = per_step_differences(&values, &steps, &runs);
        // Logged every 2 steps at row 2: the interval's 20 is 10 per step. The drop at row 3 restarts.
        assert_eq!(
            got,
            vec![
                None,
                Some(10.0),
                Some(10.0),
                None,
                Some(3.0),
                None,
                Some(6.0)
            ]
        );
        // Runs are separate; a repeated step has no interval.
        let got = per_step_differences(
            &[Some(1.0), Some(100.0), Some(3.0), Some(3.0), Some(150.0)],
            &[Some(1.0), Some(1.0), Some(2.0), Some(2.0), Some(2.0)],
            &[0, 1, 0, 0, 1],
        );
        assert_eq!(got, vec![None, None, Some(2.0), None, Some(50.0)]);
    }

    #[test]
    fn extract_scales_times_and_counts_text() {
        let df = df!(
            "step_time_ms" => ["1500", "x", "", "250"],
            "tokens" => [1i64, 2, 3, 4],
        )
        .unwrap();
        let mut o = opts();
        o.constants.num_devices = Some(2.0);
        o.constants.flops_per_token = Some(6.0);
        let m = map_columns(&["step_time_ms", "tokens"], &o).unwrap();
        let v = extract(&df, &m, None).unwrap();
        assert_eq!(v.step_time_s.get(0), Some(1.5));
        assert_eq!(v.step_time_s.get(1), None);
        assert_eq!(v.step_time_s.get(3), Some(0.25));
        assert_eq!(v.tokens.get(2), Some(3.0));
        assert_eq!(v.num_devices.get(3), Some(2.0));
        assert_eq!(v.non_numeric, vec![("step_time_ms".to_string(), 1)]);
    }
}
