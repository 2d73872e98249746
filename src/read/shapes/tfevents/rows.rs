//! The rows of a run: built straight as columns while steps come in order ([`InOrder`]), else by
//! TensorBoard's purge rule ([`AnyOrder`]); a test holds the two to the same rows.

use std::collections::BTreeMap;

use super::walk::{Scalar, Walk};
use super::LIGHTNING_HP_METRIC;

/// One step's values in one run.
#[derive(Default)]
pub(super) struct StepRow {
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
pub(super) struct StepTable {
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

/// A column's cells: each row's value, and whether it has one.
pub(super) type Cells = (Vec<f64>, Vec<bool>);

/// The rows of a run as columns, ready for the frame.
pub(super) struct Built {
    pub(super) steps: Vec<i64>,
    pub(super) wall_times: Vec<f64>,
    /// One per scalar tag, in the walk's order; `None` for a tag left out (Lightning's placeholder).
    pub(super) columns: Vec<Option<Cells>>,
    pub(super) notes: Vec<String>,
}

/// Rows built straight as columns while every value comes at the last row's step or after it and
/// replaces no earlier file's value: one file, or files that follow one another (evaluation files that
/// start at the last training step included), which is nearly every run. A value that breaks this (a step
/// going back, a resumed run's file logging steps again) stops it, and the run is read again by
/// [`AnyOrder`]. Measured on benches/tfevents.sh, it halves the time and the memory of a row per step
/// (docs/performance.md).
#[derive(Default)]
pub(super) struct InOrder {
    steps: Vec<i64>,
    wall_times: Vec<f64>,
    columns: Vec<Cells>,
    /// For the last row: the file each column's value came from, and its wall time.
    last_row: Vec<Option<(usize, f64)>>,
}

impl InOrder {
    pub(super) fn add(&mut self, s: Scalar) -> std::ops::ControlFlow<()> {
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

    pub(super) fn finish(self) -> Built {
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
pub(super) struct AnyOrder {
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
    pub(super) fn new(every_attempt: bool) -> AnyOrder {
        AnyOrder {
            every_attempt,
            steps: StepTable::default(),
            superseded: BTreeMap::new(),
            file: None,
            written: Vec::new(),
            purged_values: 0,
        }
    }

    pub(super) fn add(&mut self, s: Scalar) {
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

    pub(super) fn finish(mut self, walk: &Walk) -> Built {
        let mut notes = Vec::new();
        // Lightning's TensorBoardLogger writes `hp_metric` = -1 at step 0 with the hyperparameters, a
        // placeholder for a metric the user may set later: not a step of the run.
        let placeholder = walk.column_named(LIGHTNING_HP_METRIC).filter(|i| {
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

/// The rows built as columns in order held to the general reading, on runs of one or several files
/// with steps in order, repeated, going back, tags written twice at a step, and evaluation files.
#[cfg(test)]
mod in_order_against_any_order {
    use super::super::walk::{walk, walk_in_chunks, EventFile};
    use super::super::{wire, Event, Summary, SummaryValue};
    use super::*;
    use prost::Message;

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
