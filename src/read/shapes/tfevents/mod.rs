//! TensorBoard event files (`events.out.tfevents.*`): the scalars a run logged, one row per step and one
//! column per tag.
//!
//! No maintained crate reads these, so this module does: [`wire`] frames the records and walks each
//! `Event` without copying it (held by a differential test to `prost`, which decodes the tensors, with
//! messages derived here from TensorFlow's `event.proto`, `summary.proto`, `tensor.proto` and
//! `tensor_shape.proto`, only the fields a scalar needs), and `crc32c` checks TFRecord's checksums.
//!
//! A file is read 16 MiB at a time, whatever its size (images and histograms make files of gigabytes); a
//! window of records is checked and decoded on every thread while the window before it is handed on, in
//! order, as scalars. Rows are built straight as columns while the steps come in order (`InOrder`); a run
//! whose files log steps again is read a second time by the general rule below (`AnyOrder`), and a test
//! holds the two to the same rows.
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

use std::collections::BTreeMap;

mod rows;
mod walk;
mod wire;

use rows::{AnyOrder, Built, InOrder};
pub use walk::EventFile;
use walk::{walk, Walk};

use polars::prelude::{Column, DataFrame, IntoSeries};
use prost::Message;

use super::ShapedFrame;
use crate::columns::{Field, RunFact};

#[cfg(test)]
#[derive(Clone, PartialEq, Message)]
struct Event {
    #[prost(double, tag = "1")]
    wall_time: f64,
    #[prost(int64, tag = "2")]
    step: i64,
    #[prost(message, optional, tag = "5")]
    summary: Option<Summary>,
}

#[cfg(test)]
#[derive(Clone, PartialEq, Message)]
struct Summary {
    #[prost(message, repeated, tag = "1")]
    value: Vec<SummaryValue>,
}

#[cfg(test)]
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

#[cfg(test)]
#[derive(Clone, PartialEq, Message)]
struct SummaryMetadata {
    #[prost(message, optional, tag = "1")]
    plugin_data: Option<PluginData>,
}

#[cfg(test)]
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

/// The tag Lightning's TensorBoardLogger writes as a placeholder with the hyperparameters.
const LIGHTNING_HP_METRIC: &str = "hp_metric";

/// The error of files that hold no scalar at all (an hparams-only folder): the caller skips them.
pub const NO_SCALARS: &str = "no scalar values (only histograms, images, text or graphs?)";

/// Reads the event files of one run, each `(name, bytes)`, in the order given (file-name order): the rows,
/// and warnings (records skipped, a record cut short).
///
/// With `every_attempt` (`mfu goodput`), the values a later file purged are kept too, as rows of the
/// attempt that wrote them (one row per file and step), and the rows come in order of wall time: a
/// resumed run reads as every step each attempt ran, the step counter going back where one resumed.
pub fn read(
    files: &[EventFile],
    every_attempt: bool,
) -> Result<(ShapedFrame, Vec<String>), String> {
    let mut in_order = InOrder::default();
    let (walked, flow) = walk(files, |s| in_order.add(s))?;
    // Lightning's placeholder is left out by the general reading.
    let has_placeholder = walked.column_named(LIGHTNING_HP_METRIC).is_some();
    let (walked, built) = if flow.is_continue() && !has_placeholder {
        (walked, in_order.finish())
    } else {
        drop(in_order);
        let mut any = AnyOrder::new(every_attempt);
        let (walked, _) = walk(files, |s| {
            any.add(s);
            std::ops::ControlFlow::Continue(())
        })?;
        let built = any.finish(&walked);
        (walked, built)
    };
    let Built {
        steps,
        wall_times,
        columns: cells,
        mut notes,
    } = built;
    let Walk {
        tags,
        tag_order,
        texts,
        bad_crc,
        undecodable,
        mut warnings,
    } = walked;
    if steps.is_empty() {
        return Err(NO_SCALARS.into());
    }
    let height = steps.len();
    let scalar_tags = cells.iter().flatten().count();
    let mut columns = vec![
        Column::new("step".into(), steps),
        Column::new("wall_time".into(), wall_times),
    ];
    for (tag, cells) in tag_order.iter().zip(cells) {
        let Some((values, valid)) = cells else {
            continue;
        };
        let tag = tags.infos[*tag].name.as_str();
        // A tag named like the row's own columns keeps its values under another name.
        let name = if tag == "step" || tag == "wall_time" {
            notes.push(format!("the tag '{tag}' is written as '{tag}_tag'"));
            format!("{tag}_tag")
        } else {
            tag.to_string()
        };
        let validity = valid
            .contains(&false)
            .then(|| polars_arrow::bitmap::Bitmap::from(valid.as_slice()));
        columns.push(Column::from(
            polars::prelude::Float64Chunked::from_vec_validity(name.into(), values, validity)
                .into_series(),
        ));
    }
    let frame = DataFrame::new(height, columns).map_err(|e| e.to_string())?;
    notes.insert(
        0,
        format!(
            "{} event file(s), {} step(s), {} scalar tag(s)",
            files.len(),
            height,
            scalar_tags
        ),
    );
    if bad_crc + undecodable > 0 {
        warnings.push(format!(
            "{bad_crc} record(s) with a wrong CRC and {undecodable} that are not events skipped"
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
    use super::wire::masked_crc;
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
        let got = wire::frames(&bytes, 0).unwrap();
        assert_eq!(got.records.len(), 3);
        assert_eq!(&bytes[got.records[1].0.clone()], b"second");
        let intact: Vec<bool> = got
            .records
            .iter()
            .map(|r| wire::data_is_intact(&bytes, r))
            .collect();
        assert_eq!(intact, [true, true, false]);
        assert_eq!(got.torn_at, Some(good_len));
        // A length whose CRC fails: an error at its offset.
        let mut broken = record(b"first");
        let second = broken.len();
        let mut next = record(b"second");
        next[8] ^= 0xff;
        broken.extend(next);
        let err = wire::frames(&broken, 0).unwrap_err();
        assert!(err.starts_with(&format!("byte {second}: ")), "{err}");
        // A huge length is a torn record, not an allocation.
        let mut huge = u64::MAX.to_le_bytes().to_vec();
        huge.extend_from_slice(&masked_crc(&u64::MAX.to_le_bytes()).to_le_bytes());
        assert_eq!(wire::frames(&huge, 0).unwrap().torn_at, Some(0));
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
        let (read, _) = super::read(&[EventFile::from_bytes("a", bytes)], false).unwrap();
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
        let files = [
            EventFile::from_bytes("a", first),
            EventFile::from_bytes("b", second),
        ];
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

/// The walker held to prost, the library it replaces, on events of every kind a writer makes and on
/// those events damaged.
#[cfg(test)]
mod walker_against_prost {
    use super::*;

    /// What a reading gives, as text: a NaN a damaged byte makes is then equal to itself.
    type Reading = Option<String>;

    /// What prost's decoding of a record gives, in the walker's terms.
    fn by_prost(record: &[u8]) -> Reading {
        let event = Event::decode(record).ok()?;
        let head = wire::EventHead {
            wall_time: event.wall_time,
            step: event.step,
            has_summary: event.summary.is_some(),
        };
        let values = event
            .summary
            .map(|s| s.value)
            .unwrap_or_default()
            .into_iter()
            .map(|v| {
                let plugin = v
                    .metadata
                    .and_then(|m| m.plugin_data)
                    .map(|p| p.plugin_name)
                    .unwrap_or_default();
                (v.tag, plugin, v.simple_value, v.tensor)
            })
            .collect::<Vec<_>>();
        Some(format!("{head:?} {values:?}"))
    }

    /// What the walker gives, with the tensors decoded as the reader decodes them.
    fn by_walker(record: &[u8]) -> Reading {
        by_walker_after(record, &[])
    }

    /// The walker's reading of `record` read after `before` (whose tags it may take as known).
    fn by_walker_after(record: &[u8], before: &[u8]) -> Reading {
        let mut values = Vec::new();
        let previous = match wire::event(before, &mut values, 0..0) {
            Ok(_) => 0..values.len(),
            Err(_) => 0..0,
        };
        let start = values.len();
        let head = wire::event(record, &mut values, previous).ok()?;
        let values = values
            .split_off(start)
            .into_iter()
            .map(|v| {
                let tensor = v.tensor.map(|t| TensorProto::decode(t).ok());
                (
                    v.tag.to_string(),
                    v.plugin.to_string(),
                    v.simple_value,
                    tensor,
                )
            })
            .collect::<Vec<_>>();
        // A tensor the walker kept undecoded that prost refuses: the one allowed difference.
        if values.iter().any(|v| matches!(v.3, Some(None))) {
            return None;
        }
        let values = values
            .into_iter()
            .map(|(t, p, s, tensor)| (t, p, s, tensor.flatten()))
            .collect::<Vec<_>>();
        Some(format!("{head:?} {values:?}"))
    }

    /// A small deterministic generator (xorshift64*).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    fn random_event(rng: &mut Rng) -> Vec<u8> {
        let tags = [
            "train/loss",
            "lr",
            "perf/step_time",
            "images/sample",
            "text/device_name",
            "héllo",
        ];
        let plugins = ["", "scalars", "images", "histograms", "text"];
        let values = (0..rng.below(6))
            .map(|_| {
                let tensor = match rng.below(4) {
                    0 => Some(TensorProto {
                        dtype: [1, 2, 3, 9, 14, 19, 7][rng.below(7) as usize],
                        float_val: vec![rng.below(1000) as f32 / 7.0],
                        double_val: (0..rng.below(2)).map(|i| i as f64 * 0.1).collect(),
                        int64_val: vec![rng.below(1 << 40) as i64],
                        half_val: vec![0x3e00],
                        string_val: (0..rng.below(2)).map(|_| b"NVIDIA H100".to_vec()).collect(),
                        tensor_content: (0..rng.below(9)).map(|b| b as u8).collect(),
                        tensor_shape: (rng.below(3) == 0).then(|| TensorShape {
                            dim: vec![Dim { size: 2 }],
                        }),
                        ..Default::default()
                    }),
                    _ => None,
                };
                SummaryValue {
                    tag: tags[rng.below(tags.len() as u64) as usize].into(),
                    simple_value: (rng.below(3) > 0).then(|| rng.below(1 << 20) as f32 * 0.25),
                    tensor,
                    metadata: (rng.below(3) == 0).then(|| SummaryMetadata {
                        plugin_data: Some(PluginData {
                            plugin_name: plugins[rng.below(plugins.len() as u64) as usize].into(),
                        }),
                    }),
                }
            })
            .collect();
        let mut bytes = Event {
            wall_time: 1.7e9 + rng.below(1 << 30) as f64 / 3.0,
            step: rng.below(1 << 40) as i64 - (1 << 20),
            summary: (rng.below(8) > 0).then_some(Summary { value: values }),
        }
        .encode_to_vec();
        // Fields the reader does not define, of every wire type, which both must skip: an image
        // (field 4 of a value is not defined here; at the event level, file_version and a group).
        if rng.below(4) == 0 {
            bytes.extend_from_slice(&[0x1a, 3, b'a', b'b', b'c']); // file_version = "abc"
            bytes.extend_from_slice(&[0x5b, 0x08, 0x01, 0x5c]); // group 11 { varint } end
            bytes.extend_from_slice(&[0x61, 1, 2, 3, 4, 5, 6, 7, 8]); // fixed64 field 12
            bytes.extend_from_slice(&[0x6d, 1, 2, 3, 4]); // fixed32 field 13
        }
        bytes
    }

    #[test]
    fn the_walker_reads_what_prost_reads_and_refuses_what_it_refuses() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let (mut agreed, mut refused) = (0, 0);
        let mut before = Vec::new();
        for _ in 0..4000 {
            let event = random_event(&mut rng);
            let walked = by_walker(&event);
            assert_eq!(walked, by_prost(&event), "{event:?}");
            // After another event, whose tags the walker takes as known where they match.
            assert_eq!(by_walker_after(&event, &before), walked, "{event:?}");
            before.clone_from(&event);
            agreed += 1;
            // Damaged: bytes changed or cut. Prost's reading is the walker's wherever prost reads the
            // event, and the walker never panics.
            for _ in 0..4 {
                let mut damaged = event.clone();
                if damaged.is_empty() {
                    break;
                }
                match rng.below(3) {
                    0 => {
                        let at = rng.below(damaged.len() as u64) as usize;
                        damaged[at] = rng.below(256) as u8;
                    }
                    1 => damaged.truncate(rng.below(damaged.len() as u64) as usize),
                    _ => {
                        let at = rng.below(damaged.len() as u64) as usize;
                        damaged.insert(at, rng.below(256) as u8);
                    }
                }
                let walked = by_walker(&damaged);
                assert_eq!(by_walker_after(&damaged, &event), walked, "{damaged:?}");
                match by_prost(&damaged) {
                    Some(read) => assert_eq!(walked, Some(read), "{damaged:?}"),
                    None => {
                        refused += 1;
                        // A string that is not UTF-8, a wrong wire type, a length past the end: the
                        // walker refuses it too, unless only a tensor it leaves undecoded is damaged.
                        let mut values = Vec::new();
                        if wire::event(&damaged, &mut values, 0..0).is_ok() {
                            assert!(values.iter().any(|v| v.tensor.is_some()), "{damaged:?}");
                        }
                    }
                }
            }
        }
        assert_eq!(agreed, 4000);
        assert!(refused > 1000, "{refused}");
    }
}
