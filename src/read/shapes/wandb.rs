//! W&B run folders (`wandb/run-<time>-<id>/`, `wandb/offline-run-<time>-<id>/`): the history, the config
//! and the machine of a run, read from its `run-<id>.wandb` transaction log.
//!
//! The log is LevelDB's log format behind a 7-byte header (`:W&B`, magic 0xBEE1 little-endian, version
//! 0): 32 KiB blocks of fragments, each with a CRC-32 (IEEE) of its type byte and data, a little-endian
//! u16 length and a type (full, first, middle, last); a block's last 6 bytes or fewer are padding. Each
//! record is a protobuf `wandb_internal.Record`; only the fields mfu reads are declared here (`prost`
//! skips the rest). wandb-core before 0.17.6 counted blocks from the end of the header instead of from
//! the start of the file (wandb PR #8088), so a log is read both ways when the first finds a fragment
//! across a block boundary, and the way with fewer problems is kept.
//!
//! History records become rows (one column per key, `_step`, `_runtime` and `_timestamp` among them);
//! the environment record (or `files/wandb-metadata.json`, which online runs write) names the GPUs and
//! their count; config keys named like a field (`dtype`, `num_devices`, `seq_len`, ...) are facts of the
//! run. A run with no history gets one row from its summary (`_step`, `_runtime`) with a run-mean step
//! time. No maintained crate reads this format.

use std::collections::HashMap;

use polars::prelude::{Column, DataFrame};
use prost::Message;
use serde_json::Value;

use super::ShapedFrame;
use crate::columns::{Field, RunFact};

/// The header every transaction log starts with: `:W&B`, magic 0xBEE1 (little-endian), version 0.
pub const HEADER: &[u8; 7] = b":W&B\xe1\xbe\x00";
const BLOCK: usize = 32 * 1024;
const FRAGMENT_HEADER: usize = 7;

/// Whether a file name is a run's transaction log (`run-<id>.wandb`).
pub fn is_run_log(name: &str) -> bool {
    name.starts_with("run-") && name.ends_with(".wandb")
}

/// A run folder's summary, `files/wandb-summary.json`, which stands for a run whose folder holds no
/// transaction log (the `files/` people commit from online runs).
pub const SUMMARY_FILE: &str = "wandb-summary.json";

/// The summary file of a run folder that holds no `run-<id>.wandb` log, when it has one.
pub fn summary_only_in(folder: &std::path::Path) -> Option<std::path::PathBuf> {
    let summary = folder.join("files").join(SUMMARY_FILE);
    (summary.is_file() && run_log_in(folder).is_none()).then_some(summary)
}

/// The run id in a run folder's name (`run-20240101_120000-abc123` → `abc123`), else the name.
pub fn run_id_of_folder(name: &str) -> String {
    match name.rsplit_once('-') {
        Some((_, id)) if !id.is_empty() && name.contains("run-") => id.to_string(),
        _ => name.to_string(),
    }
}

/// A run folder with no transaction log: one row from `beside.summary` (a run-mean step time), the
/// machine from `beside.metadata`, as [`read`] gives for a log that holds no history.
pub fn read_summary_only(
    run_id: &str,
    beside: &Beside,
) -> Result<(ShapedFrame, Vec<String>), String> {
    let (mut shaped, mut warnings) = read(HEADER, &format!("run-{run_id}.wandb"), beside)?;
    shaped.notes[0] = format!("no run-{run_id}.wandb log: the run folder's files/ only");
    warnings.push(format!(
        "run {run_id}: no transaction log, so one row from files/{SUMMARY_FILE}: its step time is the run's mean, start-up and evaluation included"
    ));
    Ok((shaped, warnings))
}

/// Whether `folder` is a W&B run folder: it holds a `run-<id>.wandb` file (the first in name order).
pub fn run_log_in(folder: &std::path::Path) -> Option<std::path::PathBuf> {
    let mut logs: Vec<_> = std::fs::read_dir(folder)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.is_file()
                && p.file_name()
                    .is_some_and(|n| is_run_log(&n.to_string_lossy()))
        })
        .collect();
    logs.sort();
    logs.into_iter().next()
}

#[derive(Clone, PartialEq, Message)]
struct Record {
    #[prost(message, optional, tag = "2")]
    history: Option<HistoryRecord>,
    #[prost(message, optional, tag = "3")]
    summary: Option<ItemsRecord>,
    #[prost(message, optional, tag = "5")]
    config: Option<ItemsRecord>,
    #[prost(message, optional, tag = "17")]
    run: Option<RunRecord>,
    #[prost(message, optional, tag = "26")]
    environment: Option<EnvironmentRecord>,
}

#[derive(Clone, PartialEq, Message)]
struct HistoryRecord {
    #[prost(message, repeated, tag = "1")]
    item: Vec<Item>,
    #[prost(message, optional, tag = "2")]
    step: Option<HistoryStep>,
}

#[derive(Clone, PartialEq, Message)]
struct HistoryStep {
    #[prost(int64, tag = "1")]
    num: i64,
}

/// A history, summary or config item: a key (or a nested key) and a value, as JSON text or, in newer
/// versions, typed.
#[derive(Clone, PartialEq, Message)]
struct Item {
    #[prost(string, tag = "1")]
    key: String,
    #[prost(string, repeated, tag = "2")]
    nested_key: Vec<String>,
    #[prost(int32, optional, tag = "3")]
    none: Option<i32>,
    #[prost(bool, optional, tag = "4")]
    boolean: Option<bool>,
    #[prost(sint64, optional, tag = "5")]
    integer: Option<i64>,
    #[prost(double, optional, tag = "6")]
    number: Option<f64>,
    #[prost(string, optional, tag = "7")]
    text: Option<String>,
    #[prost(string, optional, tag = "8")]
    json: Option<String>,
    #[prost(string, tag = "16")]
    value_json: String,
}

/// Summary and config records: `update` items (their `remove` items are not needed here).
#[derive(Clone, PartialEq, Message)]
struct ItemsRecord {
    #[prost(message, repeated, tag = "1")]
    update: Vec<Item>,
}

#[derive(Clone, PartialEq, Message)]
struct RunRecord {
    #[prost(string, tag = "1")]
    run_id: String,
    #[prost(string, tag = "3")]
    project: String,
    #[prost(message, optional, tag = "4")]
    config: Option<ItemsRecord>,
    #[prost(string, tag = "8")]
    display_name: String,
}

#[derive(Clone, PartialEq, Message)]
struct EnvironmentRecord {
    #[prost(string, tag = "18")]
    gpu_type: String,
    #[prost(uint32, tag = "19")]
    gpu_count: u32,
    #[prost(message, repeated, tag = "24")]
    gpu_nvidia: Vec<NamedDevice>,
    #[prost(message, repeated, tag = "26")]
    gpu_amd: Vec<AmdDevice>,
}

#[derive(Clone, PartialEq, Message)]
struct NamedDevice {
    #[prost(string, tag = "1")]
    name: String,
}

#[derive(Clone, PartialEq, Message)]
struct AmdDevice {
    #[prost(string, tag = "8")]
    series: String,
    #[prost(string, tag = "9")]
    model: String,
}

/// The records of a transaction log with blocks counted from `base`, and what went wrong on the way.
struct Framed {
    records: Vec<Vec<u8>>,
    warnings: Vec<String>,
    /// Fragments across a block boundary or failing their CRC: a sign of the other block layout.
    problems: usize,
}

fn frame_records(bytes: &[u8], base: usize) -> Framed {
    let mut framed = Framed {
        records: Vec::new(),
        warnings: Vec::new(),
        problems: 0,
    };
    let mut pos = HEADER.len();
    let mut partial: Option<Vec<u8>> = None;
    let mut bad_crc = 0usize;
    while pos < bytes.len() {
        let left = BLOCK - (pos - base) % BLOCK;
        if left < FRAGMENT_HEADER {
            pos += left; // padding at the end of a block
            continue;
        }
        if bytes.len() - pos < FRAGMENT_HEADER {
            framed.warnings.push(format!(
                "the log ends {} byte(s) into a fragment header at byte {pos} (a run still writing or killed?): the rest is not read",
                bytes.len() - pos
            ));
            break;
        }
        let crc = u32::from_le_bytes(bytes[pos..pos + 4].try_into().expect("4 bytes"));
        let length = u16::from_le_bytes([bytes[pos + 4], bytes[pos + 5]]) as usize;
        let kind = bytes[pos + 6];
        if kind == 0 && length == 0 && crc == 0 {
            pos += left; // zeros: the rest of the block was never written
            continue;
        }
        if FRAGMENT_HEADER + length > left {
            framed.problems += 1;
            pos += left;
            partial = None;
            continue;
        }
        let end = pos + FRAGMENT_HEADER + length;
        if end > bytes.len() {
            framed.warnings.push(format!(
                "the last record, at byte {pos}, is cut short (a run still writing or killed?): skipped"
            ));
            break;
        }
        let data = &bytes[pos + FRAGMENT_HEADER..end];
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&[kind]);
        hasher.update(data);
        pos = end;
        if hasher.finalize() != crc {
            framed.problems += 1;
            bad_crc += 1;
            partial = None;
            continue;
        }
        match kind {
            1 => framed.records.push(data.to_vec()),
            2 => partial = Some(data.to_vec()),
            3 | 4 => match partial.as_mut() {
                Some(p) => {
                    p.extend_from_slice(data);
                    if kind == 4 {
                        framed.records.extend(partial.take());
                    }
                }
                None => framed.problems += 1,
            },
            _ => framed.problems += 1,
        }
    }
    if bad_crc > 0 {
        framed.warnings.push(format!(
            "{bad_crc} fragment(s) failed their CRC and were skipped"
        ));
    }
    framed
}

/// A history value.
#[derive(Debug, Clone, PartialEq)]
enum Cell {
    Int(i64),
    Float(f64),
    Bool(bool),
    /// Text, or any other JSON (a media object, a list) as its JSON text.
    Text(String),
}

fn item_key(item: &Item) -> String {
    if item.key.is_empty() {
        item.nested_key.join(".")
    } else {
        item.key.clone()
    }
}

fn item_value(item: &Item) -> Option<Cell> {
    if let Some(b) = item.boolean {
        return Some(Cell::Bool(b));
    }
    if let Some(i) = item.integer {
        return Some(Cell::Int(i));
    }
    if let Some(f) = item.number {
        return Some(Cell::Float(f));
    }
    if let Some(t) = &item.text {
        return Some(Cell::Text(t.clone()));
    }
    if item.none.is_some() {
        return None;
    }
    json_value(item.json.as_deref().unwrap_or(&item.value_json))
}

/// A value written as JSON; Python's `NaN`, `Infinity` and `-Infinity` are numbers.
fn json_value(text: &str) -> Option<Cell> {
    let t = text.trim();
    match t {
        "" | "null" => return None,
        "NaN" => return Some(Cell::Float(f64::NAN)),
        "Infinity" => return Some(Cell::Float(f64::INFINITY)),
        "-Infinity" => return Some(Cell::Float(f64::NEG_INFINITY)),
        _ => {}
    }
    match serde_json::from_str::<Value>(t) {
        Ok(Value::Null) => None,
        Ok(Value::Bool(b)) => Some(Cell::Bool(b)),
        Ok(Value::Number(n)) => Some(match n.as_i64() {
            Some(i) => Cell::Int(i),
            None => Cell::Float(n.as_f64().unwrap_or(f64::NAN)),
        }),
        Ok(Value::String(s)) => Some(Cell::Text(s)),
        _ => Some(Cell::Text(t.to_string())),
    }
}

fn cell_text(cell: &Cell) -> String {
    match cell {
        Cell::Int(i) => i.to_string(),
        Cell::Float(f) => f.to_string(),
        Cell::Bool(b) => b.to_string(),
        Cell::Text(t) => t.clone(),
    }
}

/// A column of cells: Int64 when all are integers, Float64 when all are numbers, Boolean when all are
/// booleans, else text (numbers and booleans in their JSON spelling).
fn to_column(name: &str, cells: &[Option<Cell>]) -> Column {
    let known = || cells.iter().flatten();
    if known().all(|c| matches!(c, Cell::Int(_))) {
        let values: Vec<Option<i64>> = cells
            .iter()
            .map(|c| match c {
                Some(Cell::Int(i)) => Some(*i),
                _ => None,
            })
            .collect();
        return Column::new(name.into(), values);
    }
    if known().all(|c| matches!(c, Cell::Int(_) | Cell::Float(_))) {
        let values: Vec<Option<f64>> = cells
            .iter()
            .map(|c| match c {
                Some(Cell::Int(i)) => Some(*i as f64),
                Some(Cell::Float(f)) => Some(*f),
                _ => None,
            })
            .collect();
        return Column::new(name.into(), values);
    }
    if known().all(|c| matches!(c, Cell::Bool(_))) {
        let values: Vec<Option<bool>> = cells
            .iter()
            .map(|c| match c {
                Some(Cell::Bool(b)) => Some(*b),
                _ => None,
            })
            .collect();
        return Column::new(name.into(), values);
    }
    let values: Vec<Option<String>> = cells.iter().map(|c| c.as_ref().map(cell_text)).collect();
    Column::new(name.into(), values)
}

/// The GPUs a metadata document or environment record names: one name when all agree, else the names
/// joined with `;` (one per rank, which the peak resolver averages when all are known).
fn device_of(names: &[String]) -> Option<String> {
    let names: Vec<&String> = names.iter().filter(|n| !n.trim().is_empty()).collect();
    match names.first() {
        None => None,
        Some(first) if names.iter().all(|n| n == first) => Some(first.to_string()),
        Some(_) => Some(
            names
                .iter()
                .map(|n| n.as_str())
                .collect::<Vec<_>>()
                .join(";"),
        ),
    }
}

/// The device name and count a `wandb-metadata.json` document gives (`gpu`, else `gpu_nvidia[].name` or
/// `gpu_amd[].series`; `gpu_count`, else the number of GPUs listed).
pub fn metadata_devices(doc: &Value) -> (Option<String>, Option<f64>) {
    let listed = |key: &str, field: &str| -> Vec<String> {
        doc.get(key)
            .and_then(Value::as_array)
            .map(|gpus| {
                gpus.iter()
                    .filter_map(|g| g.get(field).and_then(Value::as_str).map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut names = listed("gpu_nvidia", "name");
    if names.is_empty() {
        names = listed("gpu_amd", "series");
    }
    let device = device_of(&names).or_else(|| {
        doc.get("gpu")
            .and_then(Value::as_str)
            .filter(|g| !g.trim().is_empty())
            .map(str::to_string)
    });
    let count = doc
        .get("gpu_count")
        .and_then(Value::as_f64)
        .filter(|c| *c > 0.0)
        .or_else(|| (!names.is_empty()).then_some(names.len() as f64));
    (device, count)
}

/// What a run folder holds beside its log: `files/wandb-metadata.json`, if any (its text).
pub struct Beside {
    pub metadata: Option<String>,
    pub summary: Option<String>,
}

/// Reads a run's transaction log (`bytes`, of the file `name`) into one row per history record, with
/// `run_id` and `run_name` columns; `beside` adds what the run folder's files say. Gives the frame with
/// its notes and facts, and warnings about damaged parts of the log.
pub fn read(
    bytes: &[u8],
    name: &str,
    beside: &Beside,
) -> Result<(ShapedFrame, Vec<String>), String> {
    // A process killed before it flushed its first block leaves an empty log: a log of no records.
    if bytes.is_empty() {
        let (shaped, mut warnings) = read(HEADER, name, beside)?;
        warnings.push(format!(
            "{name} is empty (its process stopped before writing a block): no records"
        ));
        return Ok((shaped, warnings));
    }
    if !bytes.starts_with(&HEADER[..4]) {
        return Err("not a W&B transaction log (no :W&B header)".into());
    }
    if bytes.len() < HEADER.len() || bytes[..HEADER.len()] != HEADER[..] {
        return Err(format!(
            "a W&B transaction log of an unknown version (header {:02x?}; mfu reads magic 0xBEE1 version 0)",
            &bytes[..bytes.len().min(HEADER.len())]
        ));
    }
    let mut framed = frame_records(bytes, 0);
    let mut notes = Vec::new();
    if framed.problems > 0 {
        let shifted = frame_records(bytes, HEADER.len());
        if shifted.problems < framed.problems {
            framed = shifted;
            notes.push(
                "blocks counted from the end of the header (wandb-core before 0.17.6)".into(),
            );
        }
    }
    let mut warnings = std::mem::take(&mut framed.warnings);
    if framed.problems > 0 {
        warnings.push(format!(
            "{} damaged fragment(s) skipped (a record across a block boundary, a bad CRC, or a fragment out of sequence)",
            framed.problems
        ));
    }
    let mut keys: Vec<String> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut columns: Vec<Vec<Option<Cell>>> = Vec::new();
    let mut rows = 0usize;
    let mut undecodable = 0usize;
    let mut run_id = String::new();
    let mut run_name = String::new();
    let mut config: Vec<(String, String)> = Vec::new();
    let mut summary: HashMap<String, Cell> = HashMap::new();
    let mut gpus: Vec<String> = Vec::new();
    let mut gpu_type = String::new();
    let mut gpu_count = 0u32;
    let config_items = |items: &[Item], config: &mut Vec<(String, String)>| {
        for item in items {
            let key = item_key(item);
            if key.starts_with('_') {
                continue; // wandb's own (_wandb)
            }
            if let Some(value) = item_value(item) {
                config.retain(|(k, _)| *k != key);
                config.push((key, cell_text(&value)));
            }
        }
    };
    for data in &framed.records {
        let Ok(record) = Record::decode(data.as_slice()) else {
            undecodable += 1;
            continue;
        };
        if let Some(history) = record.history {
            let mut has_step = false;
            for item in &history.item {
                let key = item_key(item);
                has_step |= key == "_step";
                let at = *index.entry(key.clone()).or_insert_with(|| {
                    keys.push(key);
                    columns.push(vec![None; rows]);
                    columns.len() - 1
                });
                columns[at].resize(rows, None);
                columns[at].push(item_value(item));
            }
            if let (false, Some(step)) = (has_step, history.step) {
                let at = *index.entry("_step".into()).or_insert_with(|| {
                    keys.push("_step".into());
                    columns.push(vec![None; rows]);
                    columns.len() - 1
                });
                columns[at].resize(rows, None);
                columns[at].push(Some(Cell::Int(step.num)));
            }
            rows += 1;
            for column in &mut columns {
                column.resize(rows, None);
            }
        }
        if let Some(run) = record.run {
            if !run.run_id.is_empty() {
                run_id = run.run_id;
            }
            if !run.display_name.is_empty() {
                run_name = run.display_name;
            }
            if let Some(c) = run.config {
                config_items(&c.update, &mut config);
            }
        }
        if let Some(c) = record.config {
            config_items(&c.update, &mut config);
        }
        if let Some(s) = record.summary {
            for item in &s.update {
                if let Some(v) = item_value(item) {
                    summary.insert(item_key(item), v);
                }
            }
        }
        if let Some(env) = record.environment {
            if !env.gpu_nvidia.is_empty() || !env.gpu_amd.is_empty() {
                gpus = env.gpu_nvidia.into_iter().map(|g| g.name).collect();
                gpus.extend(env.gpu_amd.into_iter().map(|g| {
                    if g.series.is_empty() {
                        g.model
                    } else {
                        g.series
                    }
                }));
            }
            if !env.gpu_type.is_empty() {
                gpu_type = env.gpu_type;
            }
            if env.gpu_count > 0 {
                gpu_count = env.gpu_count;
            }
        }
    }
    if undecodable > 0 {
        warnings.push(format!(
            "{undecodable} record(s) are not W&B records and were skipped"
        ));
    }
    if run_id.is_empty() {
        run_id = name
            .trim_start_matches("run-")
            .trim_end_matches(".wandb")
            .to_string();
    }

    // The summary stands in for a run that logged no history: one row, a run-mean step time.
    if rows == 0 {
        if let Some(text) = &beside.summary {
            if let Ok(Value::Object(doc)) = serde_json::from_str::<Value>(text) {
                for (k, v) in doc {
                    if let Some(cell) = json_value(&v.to_string()) {
                        summary.entry(k).or_insert(cell);
                    }
                }
            }
        }
        let number = |key: &str| match summary.get(key) {
            Some(Cell::Int(i)) => Some(*i as f64),
            Some(Cell::Float(f)) => Some(*f),
            _ => None,
        };
        // Trainers log their own step count (Transformers' train/global_step); wandb's _step counts log
        // calls unless the run passed step=.
        let (step_key, step) = ["train/global_step", "global_step", "trainer/global_step"]
            .into_iter()
            .find_map(|k| number(k).map(|s| (k, s)))
            .or_else(|| number("_step").map(|s| ("_step", s)))
            .unzip();
        let step_key = step_key.unwrap_or("_step");
        match (number("_runtime"), step) {
            (Some(runtime), Some(step)) if runtime > 0.0 && step > 0.0 => {
                let mut summary_keys: Vec<&String> = summary.keys().collect();
                summary_keys.sort();
                for key in summary_keys {
                    keys.push(key.clone());
                    columns.push(vec![summary.get(key).cloned()]);
                }
                keys.push("run_mean_step_time_s".into());
                columns.push(vec![Some(Cell::Float(runtime / step))]);
                rows = 1;
                notes.push(format!(
                    "no history: one row from the summary, run_mean_step_time_s = _runtime / {step_key} = {runtime} / {step} (it includes start-up and evaluation)"
                ));
            }
            _ => {
                return Err(
                    "the run logged no history, and its summary has no _runtime and _step".into(),
                )
            }
        }
    }

    let mut frame_columns: Vec<Column> = keys
        .iter()
        .zip(&columns)
        .map(|(k, cells)| to_column(k, cells))
        .collect();
    for (name, value) in [("run_id", &run_id), ("run_name", &run_name)] {
        if !value.is_empty() && !keys.iter().any(|k| k == name) {
            frame_columns.push(Column::new(name.into(), vec![value.as_str(); rows]));
        }
    }
    let frame = DataFrame::new(rows, frame_columns).map_err(|e| e.to_string())?;
    notes.insert(0, format!("{rows} history record(s) of run {run_id}"));

    // The machine: the log's environment record, else the folder's wandb-metadata.json.
    let mut facts = Vec::new();
    let (mut device, mut count) = (
        device_of(&gpus).or((!gpu_type.is_empty()).then(|| gpu_type.clone())),
        (gpu_count > 0).then_some(gpu_count as f64),
    );
    let mut from = "the log's environment record";
    if device.is_none() {
        if let Some(doc) = beside
            .metadata
            .as_deref()
            .and_then(|t| serde_json::from_str::<Value>(t).ok())
        {
            (device, count) = metadata_devices(&doc);
            from = "files/wandb-metadata.json";
        }
    }
    if let Some(d) = device {
        facts.push(RunFact::text(
            Field::DeviceName,
            d,
            format!("{from} (GPU names)"),
        ));
        if let Some(c) = count {
            facts.push(RunFact::number(
                Field::NumDevices,
                c,
                format!("{from} (gpu_count: the GPUs of the machine that ran wandb.init; give --num-devices for a run on several machines)"),
            ));
        }
    }
    for fact in super::parameter_facts(
        config.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        |key| format!("the run's config key '{key}'"),
    ) {
        if !facts.iter().any(|f| f.field == fact.field) {
            facts.push(fact);
        }
    }
    Ok((
        ShapedFrame {
            frame,
            notes,
            facts,
            ..Default::default()
        },
        warnings,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use polars::prelude::DataType;

    /// A transaction log of `records`, framed as wandb writes it (blocks counted from `base`).
    fn log_of(records: &[Vec<u8>], base: usize) -> Vec<u8> {
        let mut out = HEADER.to_vec();
        for record in records {
            let mut rest = record.as_slice();
            let mut first = true;
            loop {
                let left = BLOCK - (out.len() - base) % BLOCK;
                if left < FRAGMENT_HEADER {
                    out.extend(std::iter::repeat_n(0u8, left));
                    continue;
                }
                let room = left - FRAGMENT_HEADER;
                let take = rest.len().min(room);
                let last = take == rest.len();
                let kind = match (first, last) {
                    (true, true) => 1u8,
                    (true, false) => 2,
                    (false, false) => 3,
                    (false, true) => 4,
                };
                let mut hasher = crc32fast::Hasher::new();
                hasher.update(&[kind]);
                hasher.update(&rest[..take]);
                out.extend(hasher.finalize().to_le_bytes());
                out.extend((take as u16).to_le_bytes());
                out.push(kind);
                out.extend(&rest[..take]);
                rest = &rest[take..];
                first = false;
                if last {
                    break;
                }
            }
        }
        out
    }

    fn history(step: i64, loss: &str) -> Vec<u8> {
        let item = |key: &str, json: &str| Item {
            nested_key: vec![key.into()],
            value_json: json.into(),
            ..Default::default()
        };
        Record {
            history: Some(HistoryRecord {
                item: vec![
                    item("_step", &step.to_string()),
                    item("train/loss", loss),
                    item("_runtime", &format!("{}", step as f64 * 0.5)),
                    item("note", &"x".repeat(3000)),
                ],
                step: None,
            }),
            ..Default::default()
        }
        .encode_to_vec()
    }

    fn environment() -> Vec<u8> {
        Record {
            environment: Some(EnvironmentRecord {
                gpu_count: 8,
                gpu_nvidia: vec![
                    NamedDevice {
                        name: "NVIDIA H100 80GB HBM3".into()
                    };
                    8
                ],
                ..Default::default()
            }),
            ..Default::default()
        }
        .encode_to_vec()
    }

    fn none() -> Beside {
        Beside {
            metadata: None,
            summary: None,
        }
    }

    #[test]
    fn reads_both_block_layouts_across_blocks() {
        let mut records = vec![environment()];
        records.extend((0..40).map(|s| history(s, if s == 3 { "NaN" } else { "2.5" })));
        for base in [0, HEADER.len()] {
            let log = log_of(&records, base);
            assert!(log.len() > 3 * BLOCK);
            let (shaped, warnings) = read(&log, "run-abc.wandb", &none()).unwrap();
            assert!(warnings.is_empty(), "{warnings:?}");
            let df = shaped.frame;
            assert_eq!(df.height(), 40);
            assert_eq!(df.column("_step").unwrap().dtype(), &DataType::Int64);
            let loss = df.column("train/loss").unwrap().f64().unwrap().clone();
            assert!(loss.get(3).unwrap().is_nan());
            assert_eq!(loss.get(4), Some(2.5));
            assert_eq!(
                df.column("run_id").unwrap().str().unwrap().get(0),
                Some("abc")
            );
            assert_eq!(shaped.facts.len(), 2);
            assert_eq!(
                shaped.facts[0].value,
                crate::columns::FactValue::Text("NVIDIA H100 80GB HBM3".into())
            );
            assert_eq!(
                base != 0,
                !shaped.notes.iter().all(|n| !n.contains("0.17.6"))
            );
        }
    }

    #[test]
    fn damaged_and_cut_logs_keep_what_they_can() {
        let records: Vec<Vec<u8>> = (0..5).map(|s| history(s, "1.0")).collect();
        let mut log = log_of(&records, 0);
        let full = log.len();
        // Flip a byte in the second record's data: it is skipped, the rest kept.
        let second = HEADER.len() + FRAGMENT_HEADER + records[0].len() + FRAGMENT_HEADER + 5;
        log[second] ^= 0xff;
        log.truncate(full - 10);
        let (shaped, warnings) = read(&log, "run-x.wandb", &none()).unwrap();
        assert_eq!(shaped.frame.height(), 3);
        assert!(
            warnings.iter().any(|w| w.contains("cut short")),
            "{warnings:?}"
        );
        assert!(warnings.iter().any(|w| w.contains("CRC")), "{warnings:?}");
        assert!(read(b":W&B\x01\x00\x00", "x", &none()).is_err());
        assert!(read(b"nope", "x", &none()).is_err());
        assert!(read(HEADER, "x", &none()).is_err()); // no history, no summary
                                                      // An empty log (a process killed before its first block) is a log of no records.
        let summary = Beside {
            metadata: None,
            summary: Some(r#"{"_step": 10, "_runtime": 50.0}"#.into()),
        };
        let (shaped, warnings) = read(b"", "run-x.wandb", &summary).unwrap();
        assert_eq!(shaped.frame.height(), 1);
        assert!(
            warnings.iter().any(|w| w.contains("is empty")),
            "{warnings:?}"
        );
        assert!(read(b"", "x", &none()).is_err());
    }

    #[test]
    fn mutated_logs_are_read_or_refused_never_a_panic() {
        // A deterministic shake of a real-shaped log: bytes flipped, cut, duplicated and zeroed across
        // block boundaries (the fuzz target enrich_path runs the same reader on any bytes).
        let mut records = vec![environment()];
        records.extend((0..30).map(|s| history(s, "1.5")));
        let log = log_of(&records, 0);
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..400 {
            let mut bytes = log.clone();
            for _ in 0..(next() % 8 + 1) {
                let at = (next() as usize) % bytes.len();
                match next() % 4 {
                    0 => bytes[at] ^= (next() % 255 + 1) as u8,
                    1 => bytes.truncate(at.max(1)),
                    2 => {
                        let end = (at + (next() % 64) as usize).min(bytes.len());
                        bytes[at..end].fill(0);
                    }
                    _ => {
                        let piece = bytes[at..(at + 40).min(bytes.len())].to_vec();
                        bytes.splice(at..at, piece);
                    }
                }
            }
            let _ = read(&bytes, "run-m.wandb", &none());
        }
    }

    #[test]
    fn values_and_parameters() {
        assert_eq!(json_value("3"), Some(Cell::Int(3)));
        assert_eq!(
            json_value("-Infinity"),
            Some(Cell::Float(f64::NEG_INFINITY))
        );
        assert_eq!(json_value("\"bf16\""), Some(Cell::Text("bf16".into())));
        assert_eq!(
            json_value("{\"_type\": \"image-file\"}"),
            Some(Cell::Text("{\"_type\": \"image-file\"}".into()))
        );
        assert_eq!(json_value("null"), None);
        let facts = crate::read::shapes::parameter_facts(
            [
                ("precision", "bf16"),
                ("world_size", "16"),
                ("tokens", "5"),
                ("seq_len", "nope"),
            ],
            |k| k.to_string(),
        );
        let fields: Vec<Field> = facts.iter().map(|f| f.field).collect();
        assert_eq!(fields, [Field::Dtype, Field::NumDevices]);
        let (device, count) = metadata_devices(&serde_json::json!({
            "gpu_nvidia": [{"name": "NVIDIA A100-SXM4-80GB"}, {"name": "NVIDIA H100 80GB HBM3"}]
        }));
        assert_eq!(
            device.as_deref(),
            Some("NVIDIA A100-SXM4-80GB;NVIDIA H100 80GB HBM3")
        );
        assert_eq!(count, Some(2.0));
    }
}
