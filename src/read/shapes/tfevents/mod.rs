//! TensorBoard event files (`events.out.tfevents.*`): the scalars a run logged, one row per step and one
//! column per tag.
//!
//! No maintained crate reads these, so this module does, with `prost` for the protobuf messages (derived
//! here from TensorFlow's `event.proto`, `summary.proto`, `tensor.proto` and `tensor_shape.proto`, only the
//! fields a scalar needs) and `crc32c` for TFRecord's checksums.
//!
//! A file is a TFRecord stream: each record is a little-endian u64 length, the masked CRC-32C of those
//! eight bytes, the data, and the masked CRC-32C of the data. A length whose CRC is wrong means the framing
//! itself cannot be trusted: an error naming the file and the byte offset. A record whose data CRC is
//! wrong is skipped and counted; a record cut short at the end (a run killed mid-write) is a warning and
//! the records before it are kept.
//!
//! Scalars are a `simple_value` (TF1, tensorboardX, PyTorch's SummaryWriter), or a rank-0 tensor of float,
//! double, half, bfloat16, int32 or int64 in `float_val`, `double_val`, `half_val`, `int_val`,
//! `int64_val` or `tensor_content` (TF2's `tf.summary.scalar`). The plugin metadata is only on a tag's
//! first value: a tag whose first value names a plugin other than `scalars` (images, histograms, text,
//! ...) is skipped. Histograms, images, audio and graphs are skipped. A text summary whose tag ends in
//! `device_name` or `dtype` (what a trainer's `add_text` writes: `train/perf/device_name/text_summary`)
//! is a fact of the run, which a column or a flag overrides.
//!
//! The files of one folder are one run, read in file-name order (the timestamp in the name orders them).
//! A file's first value of a tag at or before a step already seen for that tag replaces that tag's values
//! from there on (a run resumed from a checkpoint), tag by tag as TensorBoard's out-of-order purge does,
//! so a file of evaluation values that starts at the last training step (Transformers' `evaluate()` after
//! `train()`) adds its tags and replaces nothing. Each row has the step, `wall_time` (the earliest wall
//! time of the step's values, in seconds: the training loop's, before an evaluation at the same step; its
//! differences give the step time when no tag does) and one column per tag.

use std::collections::{BTreeMap, HashMap};

use polars::prelude::{Column, DataFrame};
use prost::Message;

use super::ShapedFrame;
use crate::columns::{Field, RunFact};

#[derive(Clone, PartialEq, Message)]
struct Event {
    #[prost(double, tag = "1")]
    wall_time: f64,
    #[prost(int64, tag = "2")]
    step: i64,
    #[prost(message, optional, tag = "5")]
    summary: Option<Summary>,
}

#[derive(Clone, PartialEq, Message)]
struct Summary {
    #[prost(message, repeated, tag = "1")]
    value: Vec<SummaryValue>,
}

#[derive(Clone, PartialEq, Message)]
struct SummaryValue {
    #[prost(string, tag = "1")]
    tag: String,
    #[prost(float, optional, tag = "2")]
    simple_value: Option<f32>,
    #[prost(message, optional, tag = "8")]
    tensor: Option<TensorProto>,
    #[prost(message, optional, tag = "9")]
    metadata: Option<SummaryMetadata>,
}

#[derive(Clone, PartialEq, Message)]
struct SummaryMetadata {
    #[prost(message, optional, tag = "1")]
    plugin_data: Option<PluginData>,
}

#[derive(Clone, PartialEq, Message)]
struct PluginData {
    #[prost(string, tag = "1")]
    plugin_name: String,
}

#[derive(Clone, PartialEq, Message)]
struct TensorProto {
    #[prost(int32, tag = "1")]
    dtype: i32,
    #[prost(message, optional, tag = "2")]
    tensor_shape: Option<TensorShape>,
    #[prost(bytes = "vec", tag = "4")]
    tensor_content: Vec<u8>,
    #[prost(float, repeated, tag = "5")]
    float_val: Vec<f32>,
    #[prost(double, repeated, tag = "6")]
    double_val: Vec<f64>,
    #[prost(int32, repeated, tag = "7")]
    int_val: Vec<i32>,
    #[prost(int64, repeated, tag = "10")]
    int64_val: Vec<i64>,
    #[prost(int32, repeated, tag = "13")]
    half_val: Vec<i32>,
    /// A text summary's strings (the `text` plugin: `add_text`).
    #[prost(bytes = "vec", repeated, tag = "8")]
    string_val: Vec<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
struct TensorShape {
    #[prost(message, repeated, tag = "2")]
    dim: Vec<Dim>,
}

#[derive(Clone, PartialEq, Message)]
struct Dim {
    #[prost(int64, tag = "1")]
    size: i64,
}

// TensorFlow's DataType numbers.
const DT_FLOAT: i32 = 1;
const DT_DOUBLE: i32 = 2;
const DT_INT32: i32 = 3;
const DT_INT64: i32 = 9;
const DT_BFLOAT16: i32 = 14;
const DT_HALF: i32 = 19;

/// Whether a file name is a TensorBoard event file's.
pub fn is_event_file(name: &str) -> bool {
    name.starts_with("events.out.tfevents.")
}

/// TFRecord's masked CRC-32C.
fn masked_crc(bytes: &[u8]) -> u32 {
    let crc = crc32c::crc32c(bytes);
    (crc.rotate_right(15)).wrapping_add(0xa282_ead8)
}

/// What reading the records of one file met, for the notes.
#[derive(Debug, Default, PartialEq)]
struct Records {
    /// The records' data, in order.
    data: Vec<std::ops::Range<usize>>,
    /// Records skipped for a wrong data CRC.
    bad_crc: usize,
    /// Where a record cut short at the end starts.
    torn_at: Option<usize>,
}

/// Splits a TFRecord stream into its records' data.
fn records(bytes: &[u8]) -> Result<Records, String> {
    let mut out = Records::default();
    let mut at = 0;
    while at < bytes.len() {
        let Some(header) = bytes.get(at..at + 12) else {
            out.torn_at = Some(at);
            break;
        };
        let len_bytes = &header[..8];
        let len_crc = u32::from_le_bytes(header[8..12].try_into().expect("four bytes"));
        if masked_crc(len_bytes) != len_crc {
            return Err(format!(
                "byte {at}: the record's length fails its CRC (not an event file, or corrupt)"
            ));
        }
        let len = u64::from_le_bytes(len_bytes.try_into().expect("eight bytes"));
        let start = at + 12;
        let end = usize::try_from(len)
            .ok()
            .and_then(|l| start.checked_add(l))
            .filter(|e| e.checked_add(4).is_some_and(|e4| e4 <= bytes.len()));
        let Some(end) = end else {
            out.torn_at = Some(at);
            break;
        };
        let data_crc = u32::from_le_bytes(bytes[end..end + 4].try_into().expect("four bytes"));
        if masked_crc(&bytes[start..end]) == data_crc {
            out.data.push(start..end);
        } else {
            out.bad_crc += 1;
        }
        at = end + 4;
    }
    Ok(out)
}

/// A rank-0 numeric tensor's value.
fn tensor_scalar(t: &TensorProto) -> Option<f64> {
    if t.tensor_shape.as_ref().is_some_and(|s| !s.dim.is_empty()) {
        return None;
    }
    let content = &t.tensor_content;
    let half = |bits: u16, bf16: bool| -> f64 {
        if bf16 {
            f32::from_bits((bits as u32) << 16) as f64
        } else {
            f16_to_f64(bits)
        }
    };
    match t.dtype {
        DT_FLOAT => t
            .float_val
            .first()
            .map(|v| *v as f64)
            .or_else(|| Some(f32::from_le_bytes(content.get(..4)?.try_into().ok()?) as f64)),
        DT_DOUBLE => t
            .double_val
            .first()
            .copied()
            .or_else(|| Some(f64::from_le_bytes(content.get(..8)?.try_into().ok()?))),
        DT_INT32 => t
            .int_val
            .first()
            .map(|v| *v as f64)
            .or_else(|| Some(i32::from_le_bytes(content.get(..4)?.try_into().ok()?) as f64)),
        DT_INT64 => t
            .int64_val
            .first()
            .map(|v| *v as f64)
            .or_else(|| Some(i64::from_le_bytes(content.get(..8)?.try_into().ok()?) as f64)),
        DT_HALF | DT_BFLOAT16 => {
            let bits = match t.half_val.first() {
                Some(v) => *v as u16,
                None => u16::from_le_bytes(content.get(..2)?.try_into().ok()?),
            };
            Some(half(bits, t.dtype == DT_BFLOAT16))
        }
        _ => None,
    }
}

/// IEEE 754 half precision to f64.
fn f16_to_f64(bits: u16) -> f64 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exponent = ((bits >> 10) & 0x1f) as i32;
    let fraction = (bits & 0x3ff) as f64;
    sign * match exponent {
        0 => fraction * 2f64.powi(-24),
        31 if fraction == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        e => (1.0 + fraction / 1024.0) * 2f64.powi(e - 15),
    }
}

/// One step's values in one run.
#[derive(Default)]
struct StepRow {
    /// (tag index, value, wall time, the file it came from in the order given); a tag written twice in a
    /// step keeps its last value.
    values: Vec<(usize, f64, f64, usize)>,
}

impl StepRow {
    /// The earliest wall time of the step's values: the time the training loop logged the step, before
    /// an evaluation logged at the same step (Transformers' `evaluate()` after training) ran.
    fn wall_time(&self) -> f64 {
        self.values
            .iter()
            .map(|(_, _, wall, _)| *wall)
            .fold(f64::INFINITY, f64::min)
    }
}

/// Reads the event files of one run, each `(name, bytes)`, in the order given (file-name order): the rows,
/// and warnings (records skipped, a record cut short).
/// The tag Lightning's TensorBoardLogger writes as a placeholder with the hyperparameters.
const LIGHTNING_HP_METRIC: &str = "hp_metric";

/// The error of files that hold no scalar at all (an hparams-only folder): the caller skips them.
pub const NO_SCALARS: &str = "no scalar values (only histograms, images, text or graphs?)";

///
/// With `every_attempt` (`mfu goodput`), the values a later file purged are kept too, as rows of the
/// attempt that wrote them (one row per file and step), and the rows come in order of wall time: a
/// resumed run reads as every step each attempt ran, the step counter going back where one resumed.
pub fn read(
    files: &[(String, Vec<u8>)],
    every_attempt: bool,
) -> Result<(ShapedFrame, Vec<String>), String> {
    let mut steps: BTreeMap<i64, StepRow> = BTreeMap::new();
    // Values a later file purged, kept with every_attempt: (file, step) -> (tag, value, wall time).
    let mut superseded: BTreeMap<(usize, i64), StepRow> = BTreeMap::new();
    // The plugin each tag's first value named ("" when none).
    let mut plugins: HashMap<String, String> = HashMap::new();
    let mut tag_order: Vec<String> = Vec::new();
    let mut tag_index: HashMap<String, usize> = HashMap::new();
    // The last text each text-summary tag wrote (a trainer writes its device name and precision so).
    let mut texts: BTreeMap<String, String> = BTreeMap::new();
    let (mut bad_crc, mut undecodable, mut purged_values) = (0, 0, 0usize);
    let mut notes = Vec::new();
    let mut warnings = Vec::new();
    for (file, (name, bytes)) in files.iter().enumerate() {
        let records = records(bytes).map_err(|e| format!("{name}: {e}"))?;
        bad_crc += records.bad_crc;
        if let Some(at) = records.torn_at {
            warnings.push(format!(
                "{name}: the record at byte {at} is cut short (a run killed mid-write?): skipped"
            ));
        }
        // Tags this file has already written: the first value of a tag at or before a step already seen
        // for it purges that tag's values from there on (a run resumed from a checkpoint rewrites them).
        let mut written: Vec<bool> = vec![false; tag_order.len()];
        for range in records.data {
            let Ok(event) = Event::decode(&bytes[range]) else {
                undecodable += 1;
                continue;
            };
            let Some(summary) = event.summary else {
                continue;
            };
            let mut scalars = Vec::new();
            for value in summary.value {
                let plugin = plugins.entry(value.tag.clone()).or_insert_with(|| {
                    value
                        .metadata
                        .as_ref()
                        .and_then(|m| m.plugin_data.as_ref())
                        .map(|p| p.plugin_name.clone())
                        .unwrap_or_default()
                });
                if plugin == "text" {
                    if let Some(text) = value.tensor.as_ref().and_then(|t| t.string_val.first()) {
                        texts.insert(
                            value.tag.clone(),
                            String::from_utf8_lossy(text).into_owned(),
                        );
                    }
                    continue;
                }
                if !(plugin.is_empty() || plugin == "scalars") {
                    continue;
                }
                let scalar = match (value.simple_value, &value.tensor) {
                    (Some(v), _) => Some(v as f64),
                    (None, Some(t)) => tensor_scalar(t),
                    (None, None) => None,
                };
                if let Some(v) = scalar {
                    scalars.push((value.tag, v));
                }
            }
            if scalars.is_empty() {
                continue;
            }
            for (tag, v) in scalars {
                let next = tag_order.len();
                let i = *tag_index.entry(tag).or_insert_with_key(|tag| {
                    tag_order.push(tag.clone());
                    next
                });
                if written.len() <= i {
                    written.resize(i + 1, false);
                }
                if !written[i] {
                    written[i] = true;
                    // As TensorBoard purges out-of-order steps, tag by tag: this file's values of the tag
                    // replace the earlier files' from this step on. Tags it does not write are kept, so an
                    // evaluation file that starts at the last training step replaces nothing.
                    for (step, row) in steps.range_mut(event.step..) {
                        let before = row.values.len();
                        let rewritten = row.values.iter().any(|(t, ..)| *t == i);
                        if every_attempt && rewritten {
                            // The earlier attempt's whole row at this step is superseded (its other
                            // tags too), not only the tag written again.
                            for value in row.values.iter().filter(|(.., from)| *from < file) {
                                superseded
                                    .entry((value.3, *step))
                                    .or_default()
                                    .values
                                    .push(*value);
                            }
                            row.values.retain(|(.., from)| *from >= file);
                        }
                        row.values.retain(|(t, ..)| *t != i);
                        purged_values += before - row.values.len();
                    }
                    steps.retain(|_, r| !r.values.is_empty());
                }
                let row = steps.entry(event.step).or_default();
                match row.values.iter_mut().find(|(t, ..)| *t == i) {
                    Some(slot) => *slot = (i, v, event.wall_time, file),
                    None => row.values.push((i, v, event.wall_time, file)),
                }
            }
        }
    }
    // Lightning's TensorBoardLogger writes `hp_metric` = -1 at step 0 with the hyperparameters, a
    // placeholder for a metric the user may set later: not a step of the run.
    let placeholder = tag_index.get(LIGHTNING_HP_METRIC).copied().filter(|i| {
        steps
            .values()
            .flat_map(|r| r.values.iter())
            .filter(|(t, ..)| t == i)
            .all(|(_, v, ..)| *v == -1.0)
    });
    if let Some(i) = placeholder {
        for row in steps.values_mut().chain(superseded.values_mut()) {
            row.values.retain(|(t, ..)| *t != i);
        }
        steps.retain(|_, r| !r.values.is_empty());
        superseded.retain(|_, r| !r.values.is_empty());
        notes.push(format!(
            "the {LIGHTNING_HP_METRIC} placeholder (-1, written by Lightning with the hyperparameters) is not a step: left out"
        ));
    }
    if steps.is_empty() {
        return Err(NO_SCALARS.into());
    }
    // Columns built straight from the steps: step, wall_time, then one per tag in first-seen order.
    let kept_rows = superseded.len();
    let mut rows: Vec<(i64, StepRow)> = steps.into_iter().collect();
    if every_attempt && kept_rows > 0 {
        rows.extend(superseded.into_iter().map(|((_, step), row)| (step, row)));
        // In the order they were logged; a step logged twice at one time, by its step.
        rows.sort_by(|a, b| {
            a.1.wall_time()
                .total_cmp(&b.1.wall_time())
                .then(a.0.cmp(&b.0))
        });
        notes.push(format!(
            "{kept_rows} step(s) of earlier attempts, which a later file logged again, kept as rows (every attempt is read, in order of wall time)"
        ));
    }
    let height = rows.len();
    let mut step_column = Vec::with_capacity(height);
    let mut wall_times = Vec::with_capacity(height);
    let mut tag_columns: Vec<Vec<Option<f64>>> = vec![vec![None; height]; tag_order.len()];
    for (row, (step, values)) in rows.into_iter().enumerate() {
        step_column.push(step);
        wall_times.push(values.wall_time());
        for (tag, v, ..) in values.values {
            tag_columns[tag][row] = Some(v);
        }
    }
    let mut columns = vec![
        Column::new("step".into(), step_column),
        Column::new("wall_time".into(), wall_times),
    ];
    for (index, (tag, values)) in tag_order.iter().zip(tag_columns).enumerate() {
        if placeholder == Some(index) {
            continue;
        }
        // A tag named like the row's own columns keeps its values under another name.
        let name = if tag == "step" || tag == "wall_time" {
            notes.push(format!("the tag '{tag}' is written as '{tag}_tag'"));
            format!("{tag}_tag")
        } else {
            tag.clone()
        };
        columns.push(Column::new(name.into(), values));
    }
    let frame = DataFrame::new(height, columns).map_err(|e| e.to_string())?;
    notes.insert(
        0,
        format!(
            "{} event file(s), {} step(s), {} scalar tag(s)",
            files.len(),
            height,
            tag_order.len() - usize::from(placeholder.is_some())
        ),
    );
    if bad_crc + undecodable > 0 {
        warnings.push(format!(
            "{bad_crc} record(s) with a wrong CRC and {undecodable} that are not events skipped"
        ));
    }
    if purged_values > 0 {
        notes.push(format!(
            "{purged_values} value(s) at steps a later file logged again replaced by it: a resumed run, or an evaluation repeated at the last step"
        ));
    }
    let facts = text_facts(&texts);
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

/// What a run's text summaries say about it: the device name and the precision mfu's callbacks (and any
/// trainer) write as text under a tag ending in `device_name` or `dtype` (`train/perf/device_name`), as
/// facts of the run that a column or a flag overrides.
fn text_facts(texts: &BTreeMap<String, String>) -> Vec<RunFact> {
    let mut facts = Vec::new();
    // PyTorch's and tensorboardX's `add_text` file a tag's text under `<tag>/text_summary`.
    let last = |tag: &str| -> String {
        let tag = tag.strip_suffix("/text_summary").unwrap_or(tag);
        tag.rsplit(['/', '.'])
            .next()
            .unwrap_or(tag)
            .to_ascii_lowercase()
    };
    for (tag, text) in texts {
        let value = text.trim();
        let field = match last(tag).as_str() {
            "device_name" | "device" | "gpu_name" => Field::DeviceName,
            "dtype" | "precision" if crate::peaks::parse_precision(value).is_some() => Field::Dtype,
            _ => continue,
        };
        if !value.is_empty() && !facts.iter().any(|f: &RunFact| f.field == field) {
            let origin = format!("the TensorBoard text summary '{tag}'");
            facts.push(RunFact::text(field, value, origin));
        }
    }
    facts
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One TFRecord record around `data`.
    fn record(data: &[u8]) -> Vec<u8> {
        let len = (data.len() as u64).to_le_bytes();
        let mut out = len.to_vec();
        out.extend_from_slice(&masked_crc(&len).to_le_bytes());
        out.extend_from_slice(data);
        out.extend_from_slice(&masked_crc(data).to_le_bytes());
        out
    }

    fn scalar_event(step: i64, wall_time: f64, tag: &str, value: f32) -> Vec<u8> {
        Event {
            wall_time,
            step,
            summary: Some(Summary {
                value: vec![SummaryValue {
                    tag: tag.into(),
                    simple_value: Some(value),
                    tensor: None,
                    metadata: None,
                }],
            }),
        }
        .encode_to_vec()
    }

    #[test]
    fn masked_crc_is_crc32c_rotated_and_offset() {
        // CRC-32C's check value ("123456789" -> 0xE3069283), masked as TFRecord does.
        // ((0xE3069283 >> 15) | (0xE3069283 << 17)) + 0xa282ead8, worked out by hand.
        assert_eq!(crc32c::crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(masked_crc(b"123456789"), 0xC78A_B0E5);
    }

    #[test]
    fn framing_checks_crcs_and_keeps_what_precedes_a_torn_record() {
        let mut bytes = record(b"first");
        bytes.extend(record(b"second"));
        let mut bad = record(b"third");
        let n = bad.len();
        bad[n - 1] ^= 1; // data CRC
        bytes.extend(bad);
        let good_len = bytes.len();
        bytes.extend(&record(b"fourth")[..10]);
        let got = records(&bytes).unwrap();
        assert_eq!(got.data.len(), 2);
        assert_eq!(&bytes[got.data[1].clone()], b"second");
        assert_eq!(got.bad_crc, 1);
        assert_eq!(got.torn_at, Some(good_len));
        // A length whose CRC fails: an error at its offset.
        let mut broken = record(b"first");
        let second = broken.len();
        let mut next = record(b"second");
        next[8] ^= 0xff;
        broken.extend(next);
        let err = records(&broken).unwrap_err();
        assert!(err.starts_with(&format!("byte {second}: ")), "{err}");
        // A huge length is a torn record, not an allocation.
        let mut huge = u64::MAX.to_le_bytes().to_vec();
        huge.extend_from_slice(&masked_crc(&u64::MAX.to_le_bytes()).to_le_bytes());
        assert_eq!(records(&huge).unwrap().torn_at, Some(0));
    }

    #[test]
    fn tensors_of_every_scalar_type() {
        let t = |dtype: i32, f: &dyn Fn(&mut TensorProto)| {
            let mut t = TensorProto {
                dtype,
                ..Default::default()
            };
            f(&mut t);
            tensor_scalar(&t)
        };
        assert_eq!(t(DT_FLOAT, &|t| t.float_val = vec![1.5]), Some(1.5));
        assert_eq!(
            t(DT_FLOAT, &|t| t.tensor_content =
                2.5f32.to_le_bytes().to_vec()),
            Some(2.5)
        );
        assert_eq!(t(DT_DOUBLE, &|t| t.double_val = vec![0.1]), Some(0.1));
        assert_eq!(t(DT_INT32, &|t| t.int_val = vec![-7]), Some(-7.0));
        assert_eq!(
            t(DT_INT64, &|t| t.int64_val = vec![1 << 40]),
            Some((1u64 << 40) as f64)
        );
        assert_eq!(t(DT_HALF, &|t| t.half_val = vec![0x3e00]), Some(1.5));
        assert_eq!(t(DT_BFLOAT16, &|t| t.half_val = vec![0x3fc0]), Some(1.5));
        assert_eq!(
            t(DT_BFLOAT16, &|t| t.tensor_content =
                0x3fc0u16.to_le_bytes().to_vec()),
            Some(1.5)
        );
        // Not rank 0, or not a number: not a scalar.
        assert_eq!(
            t(DT_FLOAT, &|t| {
                t.float_val = vec![1.0, 2.0];
                t.tensor_shape = Some(TensorShape {
                    dim: vec![Dim { size: 2 }],
                });
            }),
            None
        );
        assert_eq!(t(7, &|_| {}), None); // DT_STRING
        assert_eq!(f16_to_f64(0x0001), 2f64.powi(-24));
        assert!(f16_to_f64(0x7c01).is_nan());
    }

    fn text_event(step: i64, tag: &str, text: &str) -> Vec<u8> {
        Event {
            wall_time: 100.0,
            step,
            summary: Some(Summary {
                value: vec![SummaryValue {
                    tag: tag.into(),
                    simple_value: None,
                    tensor: Some(TensorProto {
                        dtype: 7, // DT_STRING
                        string_val: vec![text.as_bytes().to_vec()],
                        ..TensorProto::default()
                    }),
                    metadata: Some(SummaryMetadata {
                        plugin_data: Some(PluginData {
                            plugin_name: "text".into(),
                        }),
                    }),
                }],
            }),
        }
        .encode_to_vec()
    }

    #[test]
    fn text_summaries_name_the_device_and_the_precision() {
        let mut bytes = Vec::new();
        bytes.extend(record(&scalar_event(1, 101.0, "train/perf/step_s", 0.5)));
        bytes.extend(record(&text_event(
            1,
            "train/perf/device_name/text_summary",
            "NVIDIA H100 80GB HBM3",
        )));
        bytes.extend(record(&text_event(1, "train/perf/dtype", "bf16")));
        bytes.extend(record(&text_event(1, "train/notes", "a note, not a fact")));
        // A precision mfu does not know is no fact.
        bytes.extend(record(&text_event(1, "eval/precision", "whatever")));
        let (read, _) = super::read(&[("a".to_string(), bytes)], false).unwrap();
        let facts: Vec<(Field, String)> = read
            .facts
            .iter()
            .map(|f| (f.field, format!("{:?}", f.value)))
            .collect();
        assert_eq!(facts.len(), 2, "{facts:?}");
        assert_eq!(facts[0].0, Field::DeviceName);
        assert!(facts[0].1.contains("H100"), "{facts:?}");
        assert_eq!(facts[1].0, Field::Dtype);
        assert_eq!(read.frame.height(), 1);
    }

    #[test]
    fn steps_tags_and_a_resumed_run() {
        let mut first = Vec::new();
        for step in 1..=4 {
            first.extend(record(&scalar_event(
                step,
                100.0 + step as f64,
                "train/loss",
                2.0,
            )));
            first.extend(record(&scalar_event(step, 100.5 + step as f64, "lr", 0.1)));
        }
        // Resumed from step 3: the loss of steps 3 and 4 of the first file is replaced.
        let mut second = Vec::new();
        for step in 3..=5 {
            second.extend(record(&scalar_event(
                step,
                200.0 + step as f64,
                "train/loss",
                1.0,
            )));
        }
        let files = [("a".to_string(), first), ("b".to_string(), second)];
        let (read, warnings) = super::read(&files, false).unwrap();
        assert!(warnings.is_empty());
        let df = read.frame;
        let steps: Vec<i64> = df
            .column("step")
            .unwrap()
            .i64()
            .unwrap()
            .into_no_null_iter()
            .collect();
        assert_eq!(steps, [1, 2, 3, 4, 5]);
        let loss: Vec<Option<f64>> = df
            .column("train/loss")
            .unwrap()
            .f64()
            .unwrap()
            .iter()
            .collect();
        assert_eq!(
            loss,
            [Some(2.0), Some(2.0), Some(1.0), Some(1.0), Some(1.0)]
        );
        // A tag the later file does not write keeps its values, as TensorBoard's purge by tags keeps them.
        let lr = df.column("lr").unwrap().f64().unwrap();
        assert_eq!(lr.get(2), Some(0.1f32 as f64));
        assert_eq!(lr.get(4), None);
        // The earliest wall time of a step's values; a replaced value's wall time goes with it.
        let wall = df.column("wall_time").unwrap().f64().unwrap();
        assert_eq!(wall.get(0), Some(101.0));
        assert_eq!(wall.get(2), Some(103.5));
        assert_eq!(wall.get(4), Some(205.0));
        assert!(
            read.notes
                .iter()
                .any(|n| n.contains("2 value(s) at steps a later file logged again")),
            "{:?}",
            read.notes
        );

        // Every attempt (`mfu goodput`): the first file's steps 3 and 4 stay as rows of their own, in
        // order of wall time, their loss with them.
        let (read, _) = super::read(&files, true).unwrap();
        let df = read.frame;
        let column = |name: &str| -> Vec<Option<f64>> {
            df.column(name)
                .unwrap()
                .cast(&polars::prelude::DataType::Float64)
                .unwrap()
                .f64()
                .unwrap()
                .iter()
                .collect()
        };
        let f = |v: &[f64]| v.iter().map(|x| Some(*x)).collect::<Vec<_>>();
        assert_eq!(column("step"), f(&[1.0, 2.0, 3.0, 4.0, 3.0, 4.0, 5.0]));
        assert_eq!(
            column("wall_time"),
            f(&[101.0, 102.0, 103.0, 104.0, 203.0, 204.0, 205.0])
        );
        assert_eq!(
            column("train/loss"),
            f(&[2.0, 2.0, 2.0, 2.0, 1.0, 1.0, 1.0])
        );
        // The learning rate the later file does not write stays with the step it was written at.
        let lr = column("lr");
        assert_eq!(lr[2], Some(0.1f32 as f64));
        assert_eq!(lr[4], None);
        assert!(read
            .notes
            .iter()
            .any(|n| n.contains("2 step(s) of earlier attempts")));
    }
}
