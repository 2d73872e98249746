//! The shapes real trainers write, turned into one row per logged step.
//!
//! Each shape is recognised from content (or named with `--shape`) and read into a frame whose columns are
//! the log's own keys, so the ordinary column mapping applies: cumulative counters such as LLaMA-Factory's
//! `elapsed_time` or TRL's `num_tokens` are found by name and differenced later, in the columns stage.

pub mod dvclive;
pub mod hf;
pub mod lightning;
pub mod llamafactory;
pub mod megatron;
pub mod megatron_log;
pub mod mlflow;
pub mod ms_swift;
pub mod nvidia_smi;
pub mod olmo;
pub mod tensorboard;
pub mod text;
pub mod tfevents;
pub mod wandb;

use std::fmt;

use polars::prelude::DataFrame;
use serde_json::{Map, Value};

/// A log layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Shape {
    /// A plain table: one row per step, one column per field.
    Table,
    /// Hugging Face Trainer / TRL `trainer_state.json` (`log_history`).
    HfTrainerState,
    /// LLaMA-Factory `trainer_log.jsonl` (`current_steps`, cumulative `elapsed_time`).
    LlamaFactory,
    /// PyTorch Lightning CSVLogger `metrics.csv` (sparse rows, several per step).
    Lightning,
    /// TensorBoard scalar CSV export (`Wall time,Step,Value`, one tag per file).
    TensorBoard,
    /// Megatron-LM metric JSON (`{metric: {start_step, end_step, step_interval, values}}`).
    Megatron,
    /// A console text log read with `--line-regex`.
    Text,
    /// modded-nanogpt console log (`step:N/M train_time:Xms step_avg:Yms`).
    ModdedNanogpt,
    /// nanoGPT console log (`iter N: loss L, time Tms, mfu M%`).
    Nanogpt,
    /// Megatron-LM / NeMo / Megatron-DeepSpeed console log (`iteration N/M | key: value | ...`).
    MegatronLog,
    /// ms-swift `logging.jsonl` (`"global_step/max_steps": "N/M"`, `"elapsed_time": "1h 2m 3s"`).
    MsSwift,
    /// TensorBoard event files (`events.out.tfevents.*`) of one run folder.
    TensorBoardEvents,
    /// An MLflow file-store run folder (`mlruns/<experiment>/<run>/metrics/...`).
    Mlflow,
    /// A DVCLive run folder (`dvclive/plots/metrics/*.tsv`, `metrics.json`, `params.yaml`).
    Dvclive,
    /// torchtitan console log (`step: N  loss: L  memory: ...  tps: T  tflops: F  mfu: U%`).
    Torchtitan,
    /// A W&B run folder (`wandb/run-*/`), read from its `run-<id>.wandb` transaction log.
    Wandb,
    /// OLMo console log (`[step=N/M]` headers, indented `name=value` metric lines).
    Olmo,
    /// Any other console log, read by the general reader (`crate::read::console`).
    Console,
}

impl Shape {
    pub const ALL: [Shape; 18] = [
        Shape::Table,
        Shape::HfTrainerState,
        Shape::LlamaFactory,
        Shape::Lightning,
        Shape::TensorBoard,
        Shape::Megatron,
        Shape::Text,
        Shape::ModdedNanogpt,
        Shape::Nanogpt,
        Shape::MegatronLog,
        Shape::MsSwift,
        Shape::TensorBoardEvents,
        Shape::Mlflow,
        Shape::Wandb,
        Shape::Torchtitan,
        Shape::Dvclive,
        Shape::Olmo,
        Shape::Console,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Shape::Table => "table",
            Shape::HfTrainerState => "hf-trainer-state",
            Shape::LlamaFactory => "llamafactory",
            Shape::Lightning => "lightning",
            Shape::TensorBoard => "tensorboard",
            Shape::Megatron => "megatron",
            Shape::Text => "text",
            Shape::ModdedNanogpt => "modded-nanogpt",
            Shape::Nanogpt => "nanogpt",
            Shape::MegatronLog => "megatron-log",
            Shape::MsSwift => "ms-swift",
            Shape::TensorBoardEvents => "tensorboard-events",
            Shape::Mlflow => "mlflow",
            Shape::Wandb => "wandb",
            Shape::Torchtitan => "torchtitan",
            Shape::Dvclive => "dvclive",
            Shape::Olmo => "olmo",
            Shape::Console => "console",
        }
    }

    /// Whether a log of this shape may lack per-step timing altogether (then throughput is null with a
    /// warning, instead of the missing-field error a plain table gets).
    pub fn timing_optional(self) -> bool {
        !matches!(self, Shape::Table)
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Shape {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Shape::ALL
            .into_iter()
            .find(|shape| shape.name() == s.trim().to_ascii_lowercase())
            .ok_or_else(|| {
                let names: Vec<&str> = Shape::ALL.iter().map(|s| s.name()).collect();
                format!("unknown shape '{s}': expected one of {}", names.join(", "))
            })
    }
}

/// Which rows of a log with several kinds (HF Trainer) to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RowKinds {
    #[default]
    Train,
    Eval,
    All,
}

impl std::str::FromStr for RowKinds {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "train" => Ok(RowKinds::Train),
            "eval" => Ok(RowKinds::Eval),
            "all" => Ok(RowKinds::All),
            _ => Err(format!(
                "unknown row kind '{s}': expected train, eval or all"
            )),
        }
    }
}

/// A shape's reading of a file: the rows, and notes on what was inferred (for `-v` and warnings).
#[derive(Debug, Default)]
pub struct ShapedFrame {
    pub frame: DataFrame,
    pub notes: Vec<String>,
    /// What the file says about the whole run (the device count of a Megatron argument dump, ...).
    pub facts: Vec<crate::columns::RunFact>,
    /// What the reader found wrong with the file but read past (a last line cut mid-way).
    pub warnings: Vec<String>,
    /// The model's shape, where the log prints it, to count FLOPs per token from.
    pub model: Option<crate::flops::ModelConfig>,
    /// Which column holds which field, as the log's vocabulary says.
    pub hints: Vec<crate::columns::ColumnHint>,
    /// What the log's lines say happened before some rows (a relaunch, an evaluation, a checkpoint),
    /// sorted by row, for `mfu goodput`; `None` where the reader does not look (only console logs do).
    pub marks: Option<Vec<(usize, crate::goodput::Mark)>>,
}

/// How much of a file is searched for a console log's layout.
pub const DETECT_BYTES: usize = 16 << 20;

/// Guesses the shape of `bytes` from their content; `name` is the file's name, for the TensorBoard export
/// convention. `None`: not a special shape (a plain table, or unreadable).
pub fn detect(bytes: &[u8], name: &str) -> Option<Shape> {
    let head = &bytes[..bytes.len().min(64 * 1024)];
    let rest = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    let rest = &rest[rest.iter().take_while(|b| b.is_ascii_whitespace()).count()..];
    if rest.starts_with(b"{") {
        // One JSON document (HF, Megatron) or JSON lines (LLaMA-Factory)? The first line says, so the
        // head is only decoded as text when it is not JSON lines (this runs once per input).
        let line_end = memchr::memchr(b'\n', rest).unwrap_or(rest.len());
        let first_line = String::from_utf8_lossy(&rest[..line_end]);
        let first_line = first_line.trim();
        if first_line.ends_with('}') && first_line.contains("\"current_steps\"") {
            return Some(Shape::LlamaFactory);
        }
        if first_line == "{" || !first_line.ends_with('}') {
            let text = String::from_utf8_lossy(head);
            if text.contains("\"log_history\"") {
                return Some(Shape::HfTrainerState);
            }
            if text.contains("\"step_interval\"") && text.contains("\"values\"") {
                return Some(Shape::Megatron);
            }
        }
        if ms_swift::detect(head) {
            return Some(Shape::MsSwift);
        }
        // JSON lines in a file not named like a table (MMDetection's `*.log.json`, MMEngine's
        // `scalars.json`), or a Python dict printed first (a config) before a console log: the
        // general reader reads each line's object as a line's fields.
        if serde_json::from_str::<Value>(first_line).is_ok()
            && crate::read::InputFormat::from_path(std::path::Path::new(name)).is_some()
        {
            return None;
        }
        let all = String::from_utf8_lossy(&bytes[..bytes.len().min(DETECT_BYTES)]);
        return crate::read::console::detect(&all).map(|_| Shape::Console);
    }
    let text = String::from_utf8_lossy(head);
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    let first_line = trimmed.lines().next().unwrap_or("").trim();
    let header: Vec<String> = first_line
        .split(',')
        .map(|h| h.trim().trim_matches('"').to_ascii_lowercase())
        .collect();
    if header == ["wall time", "step", "value"] {
        return Some(Shape::TensorBoard);
    }
    let has = |n: &str| header.iter().any(|h| h == n);
    // Lightning names a metric logged both ways `<name>_step` and `<name>_epoch`; a CSVLogger file of
    // metrics logged one way only is told by its name.
    let csv_logger_file = std::path::Path::new(name)
        .file_name()
        .is_some_and(|f| f == "metrics.csv");
    if has("step")
        && has("epoch")
        && (csv_logger_file
            || header
                .iter()
                .any(|h| h.ends_with("_step") || h.ends_with("_epoch")))
    {
        return Some(Shape::Lightning);
    }
    // Console logs often start with the script's source or its arguments, so a file whose name is not
    // a table's is searched further than its head: its first 16 MiB (a log's layout shows well before
    // that, and a log of gigabytes is not read twice).
    let all;
    let body: &str = if crate::read::InputFormat::from_path(std::path::Path::new(name)).is_some() {
        trimmed
    } else {
        all = String::from_utf8_lossy(&bytes[..bytes.len().min(DETECT_BYTES)]);
        &all
    };
    // The layouts of the trainers read by a reader of their own, in order of precedence (a line of
    // an earlier one anywhere wins over a line of a later one before it): one pass over the lines,
    // not one per layout (the 16 MiB took 4 passes).
    let (mut megatron, mut nanogpt, mut olmo) = (false, false, false);
    let mut lines = body.lines().peekable();
    while let Some(l) = lines.next() {
        if l.contains("step:") && l.contains("train_time:") && l.contains("step_avg:") {
            return Some(Shape::ModdedNanogpt);
        }
        megatron = megatron || megatron_log::is_iteration_line(l);
        nanogpt =
            nanogpt || (l.starts_with("iter ") && l.contains(": loss ") && l.contains(", time "));
        olmo = olmo
            || (olmo::is_header(l)
                && lines
                    .peek()
                    .is_some_and(|next| next.starts_with("    ") && next.contains('=')));
    }
    if megatron {
        return Some(Shape::MegatronLog);
    }
    if nanogpt {
        return Some(Shape::Nanogpt);
    }
    if olmo {
        return Some(Shape::Olmo);
    }
    crate::read::console::detect(body).map(|framework| match framework {
        Some(f) if f.name == "torchtitan" => Shape::Torchtitan,
        _ => Shape::Console,
    })
}

/// Facts from a run's parameters or config: a key named like a field's flag or alias (`dtype`,
/// `precision`, `num_devices`, `world_size`, `seq_len`, `flops_per_token`, `tokens_per_step`, `device`)
/// with a value of the field's kind, and tokens a step from the batch and sequence length (see
/// [`batch_tokens`]). `origin` names where a key was read.
pub fn parameter_facts<'a>(
    params: impl IntoIterator<Item = (&'a str, &'a str)>,
    origin: impl Fn(&str) -> String,
) -> Vec<crate::columns::RunFact> {
    let params: Vec<(&str, &str)> = params.into_iter().collect();
    let mut facts: Vec<crate::columns::RunFact> = Vec::new();
    for &(key, value) in &params {
        // A tracker's namespace before the name (`perf/device_name`, `train.dtype`) is not part of it.
        let k = key.trim().to_ascii_lowercase();
        let k = k.rsplit(['/', '.']).next().unwrap_or(&k).to_string();
        let value = value.trim().trim_matches('"');
        for field in [
            crate::columns::Field::DeviceName,
            crate::columns::Field::Dtype,
            crate::columns::Field::NumDevices,
            crate::columns::Field::FlopsPerToken,
            crate::columns::Field::SeqLen,
            crate::columns::Field::Tokens,
        ] {
            let named = match field {
                crate::columns::Field::Tokens => k == "tokens_per_step",
                _ => field.aliases().contains(&k.as_str()) || k == field.name(),
            };
            if !named || value.is_empty() || facts.iter().any(|f| f.field == field) {
                continue;
            }
            if field == crate::columns::Field::Dtype
                && (value.parse::<f64>().is_ok()
                    || crate::peaks::precision::parse_precision(value).is_none())
            {
                // A tracker's `precision` metric (0.83) is a classifier's score: a precision is a
                // word of the precision vocabulary, never a number.
                continue;
            }
            if field.is_text() {
                facts.push(crate::columns::RunFact::text(field, value, origin(key)));
            } else if let Ok(n) = value.parse::<f64>() {
                if n.is_finite() && n > 0.0 {
                    facts.push(crate::columns::RunFact::number(field, n, origin(key)));
                }
            }
        }
    }
    if !facts
        .iter()
        .any(|f| f.field == crate::columns::Field::Tokens)
    {
        if let Some(fact) = batch_tokens(&params, &origin) {
            facts.push(fact);
        }
    }
    facts
}

/// Tokens a step from a config's batch and sequence length when it names no token count: the global
/// batch (`global_batch_size`, DeepSpeed's `train_batch_size`, else `batch_size`, times
/// `gradient_accumulation_steps` when the config has it, as nanoGPT's does) × the sequence length
/// (`seq_len`, `seq_length`, `max_seq_len`, `max_seq_length`, `sequence_length`, `block_size`).
fn batch_tokens(
    params: &[(&str, &str)],
    origin: impl Fn(&str) -> String,
) -> Option<crate::columns::RunFact> {
    let number = |name: &str| {
        params.iter().find_map(|(k, v)| {
            (k.trim().eq_ignore_ascii_case(name))
                .then(|| v.trim().trim_matches('"').parse::<f64>().ok())
                .flatten()
                .filter(|n| n.is_finite() && *n >= 1.0)
                .map(|n| (k.trim().to_string(), n))
        })
    };
    let (batch_key, batch) = ["global_batch_size", "train_batch_size", "batch_size"]
        .into_iter()
        .find_map(number)?;
    let (seq_key, seq) = [
        "seq_len",
        "seq_length",
        "max_seq_len",
        "max_seq_length",
        "sequence_length",
        "block_size",
    ]
    .into_iter()
    .find_map(number)?;
    let (accumulation, times) = match number("gradient_accumulation_steps") {
        Some((key, n)) if batch_key.eq_ignore_ascii_case("batch_size") => {
            (n, format!(" x '{key}'"))
        }
        _ => (1.0, String::new()),
    };
    Some(crate::columns::RunFact::number(
        crate::columns::Field::Tokens,
        batch * accumulation * seq,
        format!(
            "{} (config keys '{batch_key}'{times} x '{seq_key}', taken as the global batch)",
            origin(&batch_key)
        ),
    ))
}

/// The JSON objects of a JSON Lines log, blank lines skipped; a line that is not a JSON object is an error
/// naming it.
pub fn json_objects(bytes: &[u8]) -> Result<Vec<Map<String, Value>>, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8: {e}"))?;
    let mut objects = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        match serde_json::from_str(line) {
            Ok(Value::Object(object)) => objects.push(object),
            Ok(_) => return Err(format!("line {}: not a JSON object", i + 1)),
            Err(e) => return Err(format!("line {}: {e}", i + 1)),
        }
    }
    Ok(objects)
}

/// Rows of JSON objects as a frame (through polars' JSON reader, so types are inferred the same way as
/// for any JSONL input). Keys become columns in first-seen order.
pub fn rows_to_frame(rows: &[Map<String, Value>]) -> Result<DataFrame, String> {
    let mut buf = Vec::with_capacity(rows.len() * 128);
    for row in rows {
        serde_json::to_writer(&mut buf, row).map_err(|e| e.to_string())?;
        buf.push(b'\n');
    }
    super::jsonl::read(buf)
}

/// A value that a log wrote as the string "nan" (or "NaN", "inf") becomes null; other values pass.
pub fn nan_strings_to_null(v: Value) -> Value {
    match &v {
        Value::String(s)
            if matches!(
                s.trim().to_ascii_lowercase().as_str(),
                "nan" | "-nan" | "inf" | "-inf" | ""
            ) =>
        {
            Value::Null
        }
        _ => v,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_shapes_from_content() {
        let cases: [(&str, Option<Shape>); 12] = [
            ("step:  1  loss: 12.2  memory:  1.2GiB(3.4%)  tps: 1,234  mfu: 3.21%\n", Some(Shape::Torchtitan)),
            ("{\n  \"log_history\": [{\"step\": 1}]\n}", Some(Shape::HfTrainerState)),
            ("{\"current_steps\": 10, \"elapsed_time\": \"0:00:32\"}\n", Some(Shape::LlamaFactory)),
            ("{\n \"lm loss\": {\"start_step\": 1, \"end_step\": 2, \"step_interval\": 1, \"values\": {}}}", Some(Shape::Megatron)),
            ("Wall time,Step,Value\n1.0,1,2.0\n", Some(Shape::TensorBoard)),
            ("epoch,step,train_loss_step,val_loss\n0,49,8.6,\n", Some(Shape::Lightning)),
            ("step:1/10 train_time:326ms step_avg:325.73ms\n", Some(Shape::ModdedNanogpt)),
            ("iter 10: loss 4.2, time 120.5ms, mfu 30.1%\n", Some(Shape::Nanogpt)),
            ("{\"step\": 1, \"step_time\": 1.0}\n", None),
            ("[2024-04-17 09:42:26] INFO     [olmo.train:816, rank=0] [step=1/739328]\n    train/CrossEntropyLoss=11.25\n", Some(Shape::Olmo)),
            ("{\"loss\": 1.9, \"global_step/max_steps\": \"1/94\", \"elapsed_time\": \"2s\"}\n", Some(Shape::MsSwift)),
            ("{\"loss\": 1.9, \"iteration\": \"1/94\", \"elapsed_time\": \"2s\", \"train_speed(s/it)\": 2.0}\n", Some(Shape::MsSwift)),
        ];
        for (text, want) in cases {
            assert_eq!(detect(text.as_bytes(), "x"), want, "{text}");
        }
        assert_eq!(detect(b"step,step_time\n1,2\n", "x"), None);
        // A CSVLogger file whose metrics were each logged one way (no `_step`/`_epoch` pair) is told
        // by its name; the same columns elsewhere are a table.
        let plain = b"epoch,perf/step_s,step,train_loss\n,0.5,1,\n0,,1,4.8\n";
        assert_eq!(
            detect(plain, "logs/run/version_0/metrics.csv"),
            Some(Shape::Lightning)
        );
        assert_eq!(detect(plain, "history.csv"), None);
    }

    #[test]
    fn config_batch_and_sequence_give_tokens_a_step() {
        let origin = |k: &str| format!("config {k}");
        let tokens_of = |facts: &[crate::columns::RunFact]| {
            facts
                .iter()
                .find(|f| f.field == crate::columns::Field::Tokens)
                .unwrap()
                .clone()
        };
        let facts = parameter_facts(
            [
                ("global_batch_size", "512"),
                ("seq_length", "4096"),
                ("lr", "3e-4"),
            ],
            origin,
        );
        assert_eq!(facts.len(), 2); // the sequence length, and the tokens
        let tokens = tokens_of(&facts);
        assert_eq!(
            tokens.value,
            crate::columns::FactValue::Number(512.0 * 4096.0)
        );
        assert!(
            tokens.origin.contains("'global_batch_size' x 'seq_length'"),
            "{}",
            tokens.origin
        );
        // nanoGPT's config: batch_size per micro-batch, gradient_accumulation_steps over all ranks.
        let facts = parameter_facts(
            [
                ("batch_size", "12"),
                ("block_size", "1024"),
                ("gradient_accumulation_steps", "40"),
            ],
            origin,
        );
        let tokens = tokens_of(&facts);
        assert_eq!(
            tokens.value,
            crate::columns::FactValue::Number(12.0 * 40.0 * 1024.0)
        );
        // A token count the config names wins; no sequence length, no tokens.
        let facts = parameter_facts(
            [
                ("tokens_per_step", "1000"),
                ("batch_size", "8"),
                ("seq_len", "10"),
            ],
            origin,
        );
        let tokens = tokens_of(&facts);
        assert_eq!(tokens.value, crate::columns::FactValue::Number(1000.0));
        assert!(parameter_facts([("batch_size", "8")], origin).is_empty());
        // A tracker's namespace is not part of the name.
        let facts = parameter_facts(
            [
                ("perf/device_name", "NVIDIA H100 80GB HBM3"),
                ("train.dtype", "bf16"),
            ],
            origin,
        );
        assert_eq!(facts.len(), 2);
        // A classifier's precision among a run's parameters or metrics is not the training precision.
        assert!(parameter_facts([("precision", "0.83"), ("recall", "0.7")], origin).is_empty());
        let facts = parameter_facts([("precision", "bf16-mixed")], origin);
        assert_eq!(
            facts[0].value,
            crate::columns::FactValue::Text("bf16-mixed".into())
        );
    }

    #[test]
    fn shape_names_round_trip() {
        for s in Shape::ALL {
            assert_eq!(s.name().parse::<Shape>(), Ok(s));
        }
        assert!("nope".parse::<Shape>().is_err());
    }
}
