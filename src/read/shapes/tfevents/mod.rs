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

use std::collections::{BTreeMap, HashMap};

mod wire;

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

/// The rows of a run by step, in step order. Steps mostly come in order, so the row of a step is most
/// often the last one or a new one after it: a vector sorted by step serves that without a tree's search
/// and allocation per step.
#[derive(Default)]
struct StepTable {
    rows: Vec<(i64, StepRow)>,
}

impl StepTable {
    fn row(&mut self, step: i64) -> &mut StepRow {
        let at = match self.rows.last() {
            Some((last, _)) if *last == step => self.rows.len() - 1,
            Some((last, _)) if *last > step => {
                match self.rows.binary_search_by_key(&step, |(s, _)| *s) {
                    Ok(at) => at,
                    Err(at) => {
                        self.rows.insert(at, (step, StepRow::default()));
                        at
                    }
                }
            }
            _ => {
                self.rows.push((step, StepRow::default()));
                self.rows.len() - 1
            }
        };
        &mut self.rows[at].1
    }

    /// The rows at `step` and after it.
    fn at_and_after_mut(&mut self, step: i64) -> &mut [(i64, StepRow)] {
        let at = self.rows.partition_point(|(s, _)| *s < step);
        &mut self.rows[at..]
    }

    fn drop_empty(&mut self) {
        self.rows.retain(|(_, r)| !r.values.is_empty());
    }
}

/// What the run knows of a tag, by the order tags were first met.
struct TagInfo {
    name: String,
    /// The plugin the tag's first value named ("" when none): the metadata is only on a first value.
    plugin: String,
    /// Its column among the scalar tags, once it has had a scalar value.
    column: Option<usize>,
}

/// Tags by name, with a guess of the next tag from the last event's order: a trainer logs the same tags in
/// the same order at every step, so the guess spares a hash of most tags.
#[derive(Default)]
struct Tags {
    infos: Vec<TagInfo>,
    by_name: HashMap<String, usize>,
    /// The tag that followed each tag last time (`usize::MAX`: none yet); the last entry is for an event's
    /// first value.
    next: Vec<usize>,
}

impl Tags {
    /// The tag's index; `previous` is the index of the value before it in its event (`None` for the
    /// first), `plugin` the value's own plugin name, kept when the tag is new.
    fn index(&mut self, previous: Option<usize>, tag: &str, plugin: &str) -> usize {
        let guess = match previous {
            Some(p) => self.next.get(p).copied(),
            None => self.next.last().copied(),
        };
        let index = match guess {
            Some(g) if g < self.infos.len() && self.infos[g].name == tag => g,
            _ => match self.by_name.get(tag) {
                Some(&i) => i,
                None => {
                    self.infos.push(TagInfo {
                        name: tag.to_owned(),
                        plugin: plugin.to_owned(),
                        column: None,
                    });
                    self.by_name.insert(tag.to_owned(), self.infos.len() - 1);
                    self.infos.len() - 1
                }
            },
        };
        // `next` has one entry per tag and a last one for first values.
        if self.next.len() < self.infos.len() + 1 {
            let first = self.next.pop().unwrap_or(usize::MAX);
            self.next.resize(self.infos.len(), usize::MAX);
            self.next.push(first);
        }
        match previous {
            Some(p) => self.next[p] = index,
            None => *self.next.last_mut().expect("one entry for first values") = index,
        }
        index
    }
}

/// The events of one stretch of records, decoded on one thread.
#[derive(Default)]
struct Decoded<'a> {
    /// Each event with a summary: its head and its values' range in `values`.
    events: Vec<(wire::EventHead, std::ops::Range<usize>)>,
    values: Vec<wire::ValueView<'a>>,
    bad_crc: usize,
    undecodable: usize,
}

/// Bytes of an event file read at a time (more where one record is longer): the file is read in chunks,
/// so memory stays bounded by a chunk whatever the file's size (image and histogram events make files of
/// gigabytes).
const CHUNK_BYTES: usize = 16 << 20;
/// Records decoded at a time: the events of a window are held while the window is handed on.
const WINDOW_RECORDS: usize = 1 << 14;
/// Records one thread decodes at a time within a window.
const RECORDS_PER_TASK: usize = 2048;

/// Checks and decodes a window of records on every thread, in order, into `pool` (one entry a task,
/// their buffers kept from window to window).
fn decode<'a>(
    bytes: &'a [u8],
    records: &[(std::ops::Range<usize>, u32)],
    pool: &mut Vec<Decoded<'a>>,
) {
    use rayon::prelude::*;
    let tasks = records.len().div_ceil(RECORDS_PER_TASK);
    pool.truncate(tasks);
    pool.resize_with(tasks, Decoded::default);
    pool.par_iter_mut()
        .zip(records.par_chunks(RECORDS_PER_TASK))
        .for_each(|(out, task)| {
            out.events.clear();
            out.values.clear();
            out.bad_crc = 0;
            out.undecodable = 0;
            let mut previous = 0..0;
            for record in task {
                if !wire::data_is_intact(bytes, record) {
                    out.bad_crc += 1;
                    continue;
                }
                let start = out.values.len();
                match wire::event(&bytes[record.0.clone()], &mut out.values, previous.clone()) {
                    Ok(head) if head.has_summary => {
                        previous = start..out.values.len();
                        out.events.push((head, previous.clone()));
                    }
                    Ok(_) => {}
                    Err(wire::NotAnEvent) => out.undecodable += 1,
                }
            }
        });
}

/// The tag Lightning's TensorBoardLogger writes as a placeholder with the hyperparameters.
const LIGHTNING_HP_METRIC: &str = "hp_metric";

/// The error of files that hold no scalar at all (an hparams-only folder): the caller skips them.
pub const NO_SCALARS: &str = "no scalar values (only histograms, images, text or graphs?)";

/// An event file to read: its name (for messages) and how to open it. A run may be read twice (see
/// [`InOrder`]), each time from the start.
pub struct EventFile {
    pub name: String,
    open: OpenEvents,
}

/// How to open an event file from its start.
type OpenEvents = Box<dyn Fn() -> std::io::Result<Box<dyn std::io::Read + Send>> + Send + Sync>;

/// Bytes held in memory, shared by every reading of them.
struct SharedBytes(std::sync::Arc<Vec<u8>>);

impl AsRef<[u8]> for SharedBytes {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl EventFile {
    pub fn new(
        name: impl Into<String>,
        open: impl Fn() -> std::io::Result<Box<dyn std::io::Read + Send>> + Send + Sync + 'static,
    ) -> EventFile {
        EventFile {
            name: name.into(),
            open: Box::new(open),
        }
    }

    /// An event file already in memory.
    pub fn from_bytes(name: impl Into<String>, bytes: Vec<u8>) -> EventFile {
        let bytes = std::sync::Arc::new(bytes);
        EventFile::new(name, move || {
            Ok(Box::new(std::io::Cursor::new(SharedBytes(bytes.clone()))))
        })
    }
}

/// Reads from `reader` onto `buf` until it holds `want` bytes; whether the reader ended first.
fn fill(reader: &mut dyn std::io::Read, buf: &mut Vec<u8>, want: usize) -> std::io::Result<bool> {
    use std::io::Read;
    if buf.len() >= want {
        return Ok(false);
    }
    let missing = (want - buf.len()) as u64;
    let read = reader.take(missing).read_to_end(buf)? as u64;
    Ok(read < missing)
}

/// What walking a run's files met besides their scalars.
#[derive(Default)]
struct Walk {
    tags: Tags,
    /// The scalar tags (their index in `tags`), in the order of their first scalar value: the columns.
    tag_order: Vec<usize>,
    /// The last text each text-summary tag wrote (a trainer writes its device name and precision so).
    texts: BTreeMap<String, String>,
    bad_crc: usize,
    undecodable: usize,
    warnings: Vec<String>,
}

/// One scalar value, as the walk hands it on.
#[derive(Clone, Copy)]
struct Scalar {
    /// The file it came from, in the order given.
    file: usize,
    step: i64,
    wall_time: f64,
    /// Its tag's column (an index into [`Walk::tag_order`]).
    column: usize,
    value: f64,
}

/// Walks the files' events in order, a chunk of each file at a time, and hands each scalar value to
/// `take`, which may stop the walk. A window of records is decoded on every thread while the one before
/// it is handed on.
fn walk(
    files: &[EventFile],
    take: impl FnMut(Scalar) -> std::ops::ControlFlow<()> + Send,
) -> Result<(Walk, std::ops::ControlFlow<()>), String> {
    walk_in_chunks(files, CHUNK_BYTES, take)
}

/// [`walk`], reading `chunk` bytes at a time.
fn walk_in_chunks(
    files: &[EventFile],
    chunk: usize,
    mut take: impl FnMut(Scalar) -> std::ops::ControlFlow<()> + Send,
) -> Result<(Walk, std::ops::ControlFlow<()>), String> {
    use std::ops::ControlFlow;
    let mut w = Walk::default();
    for (file, EventFile { name, open }) in files.iter().enumerate() {
        let mut reader = open().map_err(|e| format!("{name}: {e}"))?;
        let mut buf: Vec<u8> = Vec::new();
        // The file offset of buf[0], and the bytes the next chunk must hold at least (a record longer
        // than a chunk).
        let (mut base, mut need) = (0usize, 0usize);
        loop {
            let ended = fill(&mut reader, &mut buf, chunk.max(need))
                .map_err(|e| format!("{name}: byte {}: {e}", base + buf.len()))?;
            let frames = wire::frames(&buf, base).map_err(|e| format!("{name}: {e}"))?;
            let windows: Vec<_> = frames.records.chunks(WINDOW_RECORDS).collect();
            let (mut current, mut next) = (Vec::new(), Vec::new());
            if let Some(first) = windows.first() {
                decode(&buf, first, &mut current);
            }
            for k in 0..windows.len() {
                let (flow, ()) = rayon::join(
                    || w.hand_on(&current, file, &mut take),
                    || {
                        if let Some(window) = windows.get(k + 1) {
                            decode(&buf, window, &mut next);
                        }
                    },
                );
                if flow.is_break() {
                    return Ok((w, ControlFlow::Break(())));
                }
                std::mem::swap(&mut current, &mut next);
            }
            drop((current, next));
            let done = frames.torn_at.unwrap_or(buf.len());
            if ended {
                if let Some(at) = frames.torn_at {
                    w.warnings.push(format!(
                        "{name}: the record at byte {} is cut short (a run killed mid-write?): skipped",
                        base + at
                    ));
                }
                break;
            }
            // At least a byte more than is left, so every chunk gets on (a length too large for memory,
            // whose CRC holds, reads to the end and is a record cut short).
            need = (buf.len() - done + 1).max(wire::record_size(&buf[done..]).unwrap_or(12));
            buf.drain(..done);
            base += done;
        }
    }
    Ok((w, ControlFlow::Continue(())))
}

impl Walk {
    /// Hands the scalar values of a decoded window on to `take`, keeping the tags and texts met.
    fn hand_on(
        &mut self,
        window: &[Decoded<'_>],
        file: usize,
        take: &mut impl FnMut(Scalar) -> std::ops::ControlFlow<()>,
    ) -> std::ops::ControlFlow<()> {
        use std::ops::ControlFlow;
        for decoded in window {
            self.bad_crc += decoded.bad_crc;
            self.undecodable += decoded.undecodable;
            for (event, range) in &decoded.events {
                let mut previous = None;
                let mut broken_tensor = false;
                for value in &decoded.values[range.clone()] {
                    let tag = self.tags.index(previous, value.tag, value.plugin);
                    previous = Some(tag);
                    let plugin = self.tags.infos[tag].plugin.as_str();
                    if plugin == "text" {
                        match value.tensor.map(TensorProto::decode) {
                            Some(Ok(t)) => {
                                if let Some(text) = t.string_val.first() {
                                    self.texts.insert(
                                        value.tag.to_string(),
                                        String::from_utf8_lossy(text).into_owned(),
                                    );
                                }
                            }
                            Some(Err(_)) => broken_tensor = true,
                            None => {}
                        }
                        continue;
                    }
                    if !(plugin.is_empty() || plugin == "scalars") {
                        continue;
                    }
                    let v = match (value.simple_value, value.tensor) {
                        (Some(v), _) => v as f64,
                        (None, Some(t)) => match TensorProto::decode(t) {
                            Ok(t) => match tensor_scalar(&t) {
                                Some(v) => v,
                                None => continue,
                            },
                            Err(_) => {
                                broken_tensor = true;
                                continue;
                            }
                        },
                        (None, None) => continue,
                    };
                    let column = match self.tags.infos[tag].column {
                        Some(c) => c,
                        None => {
                            self.tag_order.push(tag);
                            self.tags.infos[tag].column = Some(self.tag_order.len() - 1);
                            self.tag_order.len() - 1
                        }
                    };
                    let scalar = Scalar {
                        file,
                        step: event.step,
                        wall_time: event.wall_time,
                        column,
                        value: v,
                    };
                    if take(scalar).is_break() {
                        return ControlFlow::Break(());
                    }
                }
                self.undecodable += usize::from(broken_tensor);
            }
        }
        ControlFlow::Continue(())
    }
}

/// A column's cells: each row's value, and whether it has one.
type Cells = (Vec<f64>, Vec<bool>);

/// The rows of a run as columns, ready for the frame.
struct Built {
    steps: Vec<i64>,
    wall_times: Vec<f64>,
    /// One per scalar tag, in the walk's order; `None` for a tag left out (Lightning's placeholder).
    columns: Vec<Option<Cells>>,
    notes: Vec<String>,
}

/// Rows built straight as columns while every value comes at the last row's step or after it and
/// replaces no earlier file's value: one file, or files that follow one another (evaluation files that
/// start at the last training step included), which is nearly every run. A value that breaks this (a step
/// going back, a resumed run's file logging steps again) stops it, and the run is read again by
/// [`AnyOrder`]. Measured on benches/tfevents.sh, it halves the time and the memory of a row per step
/// (docs/performance.md).
#[derive(Default)]
struct InOrder {
    steps: Vec<i64>,
    wall_times: Vec<f64>,
    columns: Vec<Cells>,
    /// For the last row: the file each column's value came from, and its wall time.
    last_row: Vec<Option<(usize, f64)>>,
}

impl InOrder {
    fn add(&mut self, s: Scalar) -> std::ops::ControlFlow<()> {
        use std::ops::ControlFlow;
        let height = self.steps.len();
        if self.columns.len() <= s.column {
            self.columns
                .resize_with(s.column + 1, || (vec![0.0; height], vec![false; height]));
            self.last_row.resize(s.column + 1, None);
        }
        match self.steps.last() {
            Some(&last) if s.step < last => return ControlFlow::Break(()),
            Some(&last) if s.step == last => {}
            _ => {
                self.steps.push(s.step);
                self.wall_times.push(s.wall_time);
                for (values, valid) in &mut self.columns {
                    values.push(0.0);
                    valid.push(false);
                }
                self.last_row.fill(None);
            }
        }
        let row = self.steps.len() - 1;
        let replaced = match self.last_row[s.column] {
            // An earlier file's value of the tag at this step: a later file logs the step again,
            // which purges (AnyOrder's work).
            Some((file, _)) if file != s.file => return ControlFlow::Break(()),
            Some((_, wall)) => Some(wall),
            None => None,
        };
        self.columns[s.column].0[row] = s.value;
        self.columns[s.column].1[row] = true;
        self.last_row[s.column] = Some((s.file, s.wall_time));
        // The row's wall time is its values' earliest; a value written again in one file replaces the
        // one before, whose time may have been that earliest.
        self.wall_times[row] = match replaced {
            Some(old) if old <= self.wall_times[row] => self
                .last_row
                .iter()
                .flatten()
                .map(|(_, wall)| *wall)
                .fold(f64::INFINITY, f64::min),
            _ => self.wall_times[row].min(s.wall_time),
        };
        ControlFlow::Continue(())
    }

    fn finish(self) -> Built {
        Built {
            steps: self.steps,
            wall_times: self.wall_times,
            columns: self.columns.into_iter().map(Some).collect(),
            notes: Vec::new(),
        }
    }
}

/// Rows in any order: a file's first value of a tag at or before a step already seen for it replaces
/// that tag's values from there on, as TensorBoard's purge does.
struct AnyOrder {
    every_attempt: bool,
    steps: StepTable,
    /// Values a later file purged, kept with every_attempt: (file, step) -> (tag, value, wall time).
    superseded: BTreeMap<(usize, i64), StepRow>,
    /// The file being read, and the tags it has written: the first value of a tag at or before a step
    /// already seen for it purges that tag's values from there on (a run resumed from a checkpoint
    /// rewrites them).
    file: Option<usize>,
    written: Vec<bool>,
    purged_values: usize,
}

impl AnyOrder {
    fn new(every_attempt: bool) -> AnyOrder {
        AnyOrder {
            every_attempt,
            steps: StepTable::default(),
            superseded: BTreeMap::new(),
            file: None,
            written: Vec::new(),
            purged_values: 0,
        }
    }

    fn add(&mut self, s: Scalar) {
        if self.file != Some(s.file) {
            self.file = Some(s.file);
            self.written.iter_mut().for_each(|w| *w = false);
        }
        let (i, file) = (s.column, s.file);
        if self.written.len() <= i {
            self.written.resize(i + 1, false);
        }
        if !self.written[i] {
            self.written[i] = true;
            // As TensorBoard purges out-of-order steps, tag by tag: this file's values of the tag replace
            // the earlier files' from this step on. Tags it does not write are kept, so an evaluation
            // file that starts at the last training step replaces nothing.
            let mut emptied = false;
            for (step, row) in self.steps.at_and_after_mut(s.step) {
                let before = row.values.len();
                let rewritten = row.values.iter().any(|(t, ..)| *t == i);
                if self.every_attempt && rewritten {
                    // The earlier attempt's whole row at this step is superseded (its other tags too),
                    // not only the tag written again.
                    for value in row.values.iter().filter(|(.., from)| *from < file) {
                        self.superseded
                            .entry((value.3, *step))
                            .or_default()
                            .values
                            .push(*value);
                    }
                    row.values.retain(|(.., from)| *from >= file);
                }
                row.values.retain(|(t, ..)| *t != i);
                self.purged_values += before - row.values.len();
                emptied |= row.values.is_empty();
            }
            if emptied {
                self.steps.drop_empty();
            }
        }
        let row = self.steps.row(s.step);
        match row.values.iter_mut().find(|(t, ..)| *t == i) {
            Some(slot) => *slot = (i, s.value, s.wall_time, file),
            None => row.values.push((i, s.value, s.wall_time, file)),
        }
    }

    fn finish(mut self, walk: &Walk) -> Built {
        let mut notes = Vec::new();
        // Lightning's TensorBoardLogger writes `hp_metric` = -1 at step 0 with the hyperparameters, a
        // placeholder for a metric the user may set later: not a step of the run.
        let placeholder = walk
            .tag_order
            .iter()
            .position(|t| walk.tags.infos[*t].name == LIGHTNING_HP_METRIC)
            .filter(|i| {
                self.steps
                    .rows
                    .iter()
                    .flat_map(|(_, r)| r.values.iter())
                    .filter(|(t, ..)| t == i)
                    .all(|(_, v, ..)| *v == -1.0)
            });
        if let Some(i) = placeholder {
            for row in self
                .steps
                .rows
                .iter_mut()
                .map(|(_, r)| r)
                .chain(self.superseded.values_mut())
            {
                row.values.retain(|(t, ..)| *t != i);
            }
            self.steps.drop_empty();
            self.superseded.retain(|_, r| !r.values.is_empty());
            notes.push(format!(
                "the {LIGHTNING_HP_METRIC} placeholder (-1, written by Lightning with the hyperparameters) is not a step: left out"
            ));
        }
        let kept_rows = self.superseded.len();
        let mut rows: Vec<(i64, StepRow)> = self.steps.rows;
        if self.every_attempt && kept_rows > 0 {
            rows.extend(
                self.superseded
                    .into_iter()
                    .map(|((_, step), row)| (step, row)),
            );
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
        if self.purged_values > 0 {
            notes.push(format!(
                "{} value(s) at steps a later file logged again replaced by it: a resumed run, or an evaluation repeated at the last step",
                self.purged_values
            ));
        }
        let height = rows.len();
        let mut steps = Vec::with_capacity(height);
        let mut wall_times = Vec::with_capacity(height);
        let mut columns: Vec<Cells> =
            vec![(vec![0.0; height], vec![false; height]); walk.tag_order.len()];
        for (row, (step, values)) in rows.into_iter().enumerate() {
            steps.push(step);
            wall_times.push(values.wall_time());
            for (tag, v, ..) in values.values {
                columns[tag].0[row] = v;
                columns[tag].1[row] = true;
            }
        }
        Built {
            steps,
            wall_times,
            columns: columns
                .into_iter()
                .enumerate()
                .map(|(i, c)| (placeholder != Some(i)).then_some(c))
                .collect(),
            notes,
        }
    }
}

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
    let has_placeholder = walked
        .tag_order
        .iter()
        .any(|t| walked.tags.infos[*t].name == LIGHTNING_HP_METRIC);
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
    let scalar_tags =
        tag_order.len() - usize::from(notes.iter().any(|n| n.contains(LIGHTNING_HP_METRIC)));
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

/// The rows built as columns in order held to the general reading, on runs of one or several files
/// with steps in order, repeated, going back, tags written twice at a step, and evaluation files.
#[cfg(test)]
mod in_order_against_any_order {
    use super::*;

    fn record(data: &[u8]) -> Vec<u8> {
        let len = (data.len() as u64).to_le_bytes();
        let mut out = len.to_vec();
        out.extend_from_slice(&wire::masked_crc(&len).to_le_bytes());
        out.extend_from_slice(data);
        out.extend_from_slice(&wire::masked_crc(data).to_le_bytes());
        out
    }

    fn event(step: i64, wall_time: f64, values: &[(&str, f32)]) -> Vec<u8> {
        record(
            &Event {
                wall_time,
                step,
                summary: Some(Summary {
                    value: values
                        .iter()
                        .map(|(tag, v)| SummaryValue {
                            tag: tag.to_string(),
                            simple_value: Some(*v),
                            tensor: None,
                            metadata: None,
                        })
                        .collect(),
                }),
            }
            .encode_to_vec(),
        )
    }

    fn built(files: &[EventFile], in_order: bool) -> Option<String> {
        let text = |b: Built| {
            format!(
                "{:?} {:?} {:?} {:?}",
                b.steps, b.wall_times, b.columns, b.notes
            )
        };
        if in_order {
            let mut rows = InOrder::default();
            let (_, flow) = walk(files, |s| rows.add(s)).unwrap();
            flow.is_continue().then(|| text(rows.finish()))
        } else {
            let mut rows = AnyOrder::new(false);
            let (w, _) = walk(files, |s| {
                rows.add(s);
                std::ops::ControlFlow::Continue(())
            })
            .unwrap();
            Some(text(rows.finish(&w)))
        }
    }

    #[test]
    fn the_columns_built_in_order_are_the_general_reading_s() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut below = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let tags = ["loss", "lr", "train/epoch", "eval/loss"];
        let (mut in_order, mut fell_back) = (0, 0);
        for _ in 0..400 {
            let mut files = Vec::new();
            let mut step = below(3) as i64;
            for f in 0..1 + below(3) {
                let mut bytes = Vec::new();
                for _ in 0..below(30) {
                    // Mostly forward; sometimes the same step again, sometimes back.
                    step += match below(10) {
                        0 => -(below(4) as i64),
                        1 | 2 => 0,
                        _ => 1 + below(3) as i64,
                    };
                    let values: Vec<(&str, f32)> = (0..1 + below(3))
                        .map(|_| (tags[below(4) as usize], below(100) as f32))
                        .collect();
                    let wall = 1000.0 + (below(50) as f64) + step as f64 * 10.0;
                    bytes.extend(event(step, wall, &values));
                }
                files.push(EventFile::from_bytes(
                    format!("events.out.tfevents.{f}"),
                    bytes,
                ));
                // A later file often starts at or before the last step (a resume, an evaluation).
                step -= below(4) as i64;
            }
            match built(&files, true) {
                Some(fast) => {
                    in_order += 1;
                    assert_eq!(Some(fast), built(&files, false));
                }
                None => fell_back += 1,
            }
        }
        assert!(in_order > 50 && fell_back > 50, "{in_order} {fell_back}");
    }

    /// Read a few bytes at a time (records cut across chunks, a record longer than a chunk, a damaged
    /// record, a torn end), a run reads as it does whole.
    #[test]
    fn chunks_of_any_size_read_as_the_whole_file() {
        let mut bytes = Vec::new();
        for step in 0..200 {
            bytes.extend(event(
                step,
                1000.0 + step as f64,
                &[("loss", step as f32), ("lr", 0.5)],
            ));
        }
        // A record longer than the small chunks: a long tag.
        let long = "x".repeat(3000);
        bytes.extend(event(200, 1200.0, &[(long.as_str(), 1.0)]));
        // A damaged record (data CRC), then more steps, then a torn end.
        let mut bad = event(201, 1201.0, &[("loss", 9.0)]);
        let n = bad.len();
        bad[n - 1] ^= 1;
        bytes.extend(bad);
        for step in 202..260 {
            bytes.extend(event(step, 1000.0 + step as f64, &[("loss", step as f32)]));
        }
        bytes.extend(&event(260, 1260.0, &[("loss", 1.0)])[..20]);
        let files = [EventFile::from_bytes("e", bytes)];
        let read = |chunk: usize| {
            let mut rows = InOrder::default();
            let (w, flow) = walk_in_chunks(&files, chunk, |s| rows.add(s)).unwrap();
            assert!(flow.is_continue());
            let b = rows.finish();
            format!(
                "{:?} {:?} {:?} {} {} {:?}",
                b.steps, b.wall_times, b.columns, w.bad_crc, w.undecodable, w.warnings
            )
        };
        let whole = read(usize::MAX >> 1);
        // A length past the end of the file whose CRC holds: a record cut short, whatever the chunk.
        let mut huge = (1u64 << 40).to_le_bytes().to_vec();
        huge.extend_from_slice(&wire::masked_crc(&(1u64 << 40).to_le_bytes()).to_le_bytes());
        huge.extend_from_slice(&[0; 100]);
        for chunk in [1, 50, 1 << 20] {
            let (w, _) = walk_in_chunks(&[EventFile::from_bytes("h", huge.clone())], chunk, |_| {
                std::ops::ControlFlow::Continue(())
            })
            .unwrap();
            assert_eq!(w.warnings.len(), 1, "{:?}", w.warnings);
        }
        assert!(whole.contains("1 0 [\"e: the record at byte"), "{whole}");
        for chunk in [1, 7, 64, 100, 1000, 4096] {
            assert_eq!(read(chunk), whole, "chunk {chunk}");
        }
    }
}
