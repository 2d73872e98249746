//! Per-run summaries of enriched tables.
//!
//! A run's MFU is aggregated as sum(tokens x flops_per_token) / sum(num_devices x peak x step_time) over its
//! steps, not as the mean of per-step MFU: a slow step weighs as much as the time it took. Each row counts
//! for the steps it covers (a row differenced from a running total logged every k steps covers k).

use std::collections::HashMap;

use polars::prelude::*;

use crate::columns::{FieldValues, WorkUnit};
use crate::compute::{MFU_FWD_BWD, MFU_WALL_CLOCK, PEAK_FLOPS_PER_DEVICE, RESOLVED_DEVICE};
use crate::stats::{value_at, Counted};

/// Runs with fewer logged steps than this are flagged.
pub const FEW_STEPS: usize = 10;

/// How one input's rows are grouped into runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupBy {
    /// By the values of these columns of the table.
    Columns(Vec<String>),
    /// The whole input is one run, keyed by its name.
    File,
}

/// One enriched table, with the field values behind it.
pub struct SummaryInput<'a> {
    /// The input's name, for `GroupBy::File`.
    pub source: &'a str,
    pub frame: &'a DataFrame,
    pub values: &'a FieldValues,
    /// The column that holds the raw device name, for runs whose device is unknown.
    pub device_column: Option<&'a str>,
    /// How this input's rows form runs (the number of keys must be the same for every input).
    pub group: GroupBy,
}

/// The summary of one run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunSummary {
    pub keys: Vec<Option<String>>,
    pub device: Option<String>,
    pub dtype: Option<String>,
    pub num_devices: Option<f64>,
    pub steps: usize,
    pub first_step: Option<f64>,
    pub last_step: Option<f64>,
    pub tokens: Option<f64>,
    pub step_time_total_s: Option<f64>,
    pub tokens_per_second: Option<f64>,
    pub mfu_wall_clock: Option<f64>,
    pub mfu_fwd_bwd: Option<f64>,
    pub mfu_wall_clock_p10: Option<f64>,
    pub mfu_wall_clock_p50: Option<f64>,
    pub mfu_wall_clock_p90: Option<f64>,
    pub peak_flops_per_device: Option<f64>,
    pub flags: Vec<String>,
    /// The framework whose own MFU or TFLOP/s the log holds, that figure's median MFU (a fraction), and
    /// the audit's verdict on it (`mfu audit`); `None` where the log holds no such figure.
    pub framework: Option<String>,
    pub mfu_logged: Option<f64>,
    pub audit: Option<String>,
    /// Samples (images, utterances, completions) where the rows count them, and their rate.
    pub samples: Option<f64>,
    pub samples_per_second: Option<f64>,
}

#[derive(Default)]
struct Accumulator {
    keys: Vec<Option<String>>,
    devices: Vec<String>,
    unknown_device: bool,
    dtypes: Vec<String>,
    num_devices: Vec<f64>,
    rows: usize,
    first_step: Option<f64>,
    last_step: Option<f64>,
    tokens: f64,
    tokens_seen: bool,
    samples: f64,
    samples_seen: bool,
    time: f64,
    time_seen: bool,
    work: f64,
    capacity: f64,
    work_fb: f64,
    capacity_fb: f64,
    peaks: Vec<f64>,
    /// The rows' MFU, by distinct value (a console log's millions of rows hold a few thousand).
    mfus: Counted,
    above_one: bool,
    /// Why rows of a known device have no peak, each once.
    no_peak: Vec<String>,
}

fn push_distinct<T: PartialEq>(list: &mut Vec<T>, v: T) {
    if !list.contains(&v) {
        list.push(v);
    }
}

/// Column `name` of `df` as f64 values in one chunk, when it exists: read in place where they are needed,
/// not copied out as `Option<f64>`s (16 bytes a row).
pub fn f64s(df: &DataFrame, name: &str) -> PolarsResult<Option<Float64Chunked>> {
    df.column(name).ok().map(floats).transpose()
}

/// `column` as f64 values in one chunk (shared with the frame where it is one chunk of f64 already).
pub fn floats(column: &Column) -> PolarsResult<Float64Chunked> {
    Ok(column
        .cast(&DataType::Float64)?
        .f64()?
        .rechunk()
        .into_owned())
}

/// Column `name` of `df` as text, when it exists.
fn texts(df: &DataFrame, name: &str) -> PolarsResult<Option<StringChunked>> {
    match df.column(name) {
        Ok(c) => Ok(Some(c.cast(&DataType::String)?.str()?.clone())),
        Err(_) => Ok(None),
    }
}

fn push_distinct_str(list: &mut Vec<String>, v: &str) {
    if !list.iter().any(|x| x == v) {
        list.push(v.to_string());
    }
}

/// Each row's run in one input, as an index into the input's distinct run keys (in order of first
/// appearance). A key a row as a vector of strings held about a hundred bytes a row, most of them the
/// input's name again (110 MiB of a summary of a 1.1M-row console log); an index holds four bytes a
/// row, and an input that is one run holds none.
#[derive(Debug, Clone, PartialEq)]
pub struct RunIndex {
    /// The distinct keys: the values of the group's columns, or the input's name.
    pub keys: Vec<Vec<Option<String>>>,
    /// Each row's index into `keys`; empty where every row is the one run.
    of_row: Vec<u32>,
}

impl RunIndex {
    /// Every row of an input in the one run `key`.
    pub fn one(key: Vec<Option<String>>) -> RunIndex {
        RunIndex {
            keys: vec![key],
            of_row: Vec::new(),
        }
    }

    /// The runs of `df`'s rows grouped by `group` (`source` names the input for [`GroupBy::File`]).
    pub fn of(df: &DataFrame, source: &str, group: &GroupBy) -> PolarsResult<RunIndex> {
        let cols = match group {
            GroupBy::File => return Ok(RunIndex::one(vec![Some(source.to_string())])),
            GroupBy::Columns(cols) => cols,
        };
        let mut texts = Vec::with_capacity(cols.len());
        for c in cols {
            let column = df.column(c).map_err(
                |_| polars_err!(ColumnNotFound: "--by {c}: {source} has no such column"),
            )?;
            texts.push(column.cast(&DataType::String)?);
        }
        let texts: Vec<&StringChunked> =
            texts.iter().map(|c| c.str()).collect::<PolarsResult<_>>()?;
        let mut cells: Vec<_> = texts.iter().map(|t| t.iter()).collect();
        let mut index = RunIndex {
            keys: Vec::new(),
            of_row: Vec::with_capacity(df.height()),
        };
        let mut known: HashMap<Vec<Option<String>>, u32> = HashMap::new();
        let mut key: Vec<Option<&str>> = Vec::with_capacity(cols.len());
        for _ in 0..df.height() {
            key.clear();
            key.extend(cells.iter_mut().map(|c| c.next().flatten()));
            // Rows of a run mostly follow one another: the row before's run is tried first.
            let same =
                |k: &Vec<Option<String>>| k.iter().map(Option::as_deref).eq(key.iter().copied());
            let run = match index.of_row.last() {
                Some(&r) if same(&index.keys[r as usize]) => r,
                _ => {
                    let owned: Vec<Option<String>> =
                        key.iter().map(|k| k.map(str::to_string)).collect();
                    *known.entry(owned.clone()).or_insert_with(|| {
                        index.keys.push(owned);
                        (index.keys.len() - 1) as u32
                    })
                }
            };
            index.of_row.push(run);
        }
        Ok(index)
    }

    /// The index of `row`'s run.
    pub fn run(&self, row: usize) -> usize {
        self.of_row.get(row).map_or(0, |r| *r as usize)
    }

    /// The key of `row`'s run.
    pub fn key(&self, row: usize) -> &Vec<Option<String>> {
        &self.keys[self.run(row)]
    }
}

/// Summarises every run in `inputs`, runs in order of first appearance. `skip_steps` leaves out each run's
/// first steps (warm-up): rows whose step is below the run's first step + `skip_steps`.
pub fn summarize(inputs: &[SummaryInput], skip_steps: f64) -> PolarsResult<Vec<RunSummary>> {
    let mut runs = SummaryRuns::default();
    for input in inputs {
        runs.add_input(input, skip_steps)?;
    }
    Ok(runs.finish())
}

/// The runs of [`summarize`], their rows added as they come: input by input, or window by window of a
/// large console log (`pipeline::summary`), runs in order of first appearance.
#[derive(Default)]
pub struct SummaryRuns {
    runs: Vec<Accumulator>,
    at: HashMap<Vec<Option<String>>, usize>,
}

impl SummaryRuns {
    /// Adds every row of `input`, each run's first `skip_steps` steps left out (see [`summarize`]).
    pub fn add_input(&mut self, input: &SummaryInput, skip_steps: f64) -> PolarsResult<()> {
        let index = RunIndex::of(input.frame, input.source, &input.group)?;
        let v = input.values;
        let spans: std::borrow::Cow<[f64]> = match &v.spans {
            Some(spans) => std::borrow::Cow::Borrowed(spans),
            None => std::borrow::Cow::Owned(step_spans(&index, &v.steps)),
        };
        // Each run's first step, for skipping warm-up.
        let mut first: Vec<Option<f64>> = vec![None; index.keys.len()];
        for row in 0..input.frame.height() {
            if let Some(s) = v.steps[row] {
                let e = first[index.run(row)].get_or_insert(s);
                *e = e.min(s);
            }
        }
        let rows = spans.iter().copied().enumerate().take(input.frame.height());
        self.add(input, &index, rows, |run| {
            first[run].map(|s| s + skip_steps)
        })
    }

    /// Adds rows of `input` (whose runs are `index`), each with the steps it stands for; a row whose
    /// step is below its run's `from` (warm-up) is left out.
    pub fn add(
        &mut self,
        input: &SummaryInput,
        index: &RunIndex,
        rows: impl Iterator<Item = (usize, f64)>,
        from: impl Fn(usize) -> Option<f64>,
    ) -> PolarsResult<()> {
        let SummaryRuns { runs, at } = self;
        let df = input.frame;
        let v = input.values;
        // Each of this input's runs among all runs.
        let global: Vec<usize> = index
            .keys
            .iter()
            .map(|key| {
                *at.entry(key.clone()).or_insert_with(|| {
                    runs.push(Accumulator {
                        keys: key.clone(),
                        ..Default::default()
                    });
                    runs.len() - 1
                })
            })
            .collect();
        let peaks = f64s(df, PEAK_FLOPS_PER_DEVICE)?;
        let mfu = f64s(df, MFU_WALL_CLOCK)?;
        let mfu_fb = f64s(df, MFU_FWD_BWD)?;
        let number = |column: &Option<Float64Chunked>, row: usize| column.as_ref()?.get(row);
        // Device names as the frame holds them, not copied a row each.
        let resolved = texts(df, RESOLVED_DEVICE)?.map(|c| c.rechunk().into_owned());
        let raw_device = match input.device_column {
            Some(c) => texts(df, c)?.map(|c| c.rechunk().into_owned()),
            None => None,
        };
        fn text(column: &Option<StringChunked>, row: usize) -> Option<&str> {
            column.as_ref()?.get(row)
        }
        for (row, span) in rows {
            let run = index.run(row);
            if let (Some(step), Some(from)) = (v.steps[row], from(run)) {
                if step < from {
                    continue;
                }
            }
            let acc = &mut runs[global[run]];
            acc.rows += 1;
            if let Some(s) = v.steps[row] {
                acc.first_step = Some(acc.first_step.map_or(s, |f| f.min(s)));
                acc.last_step = Some(acc.last_step.map_or(s, |l| l.max(s)));
            }
            match text(&resolved, row) {
                Some(d) => push_distinct_str(&mut acc.devices, d),
                None => {
                    acc.unknown_device = true;
                    let raw = text(&raw_device, row).or_else(|| v.device.get(row));
                    if let Some(raw) = raw {
                        push_distinct_str(&mut acc.devices, raw);
                    }
                }
            }
            if let Some(d) = v.dtype.get(row) {
                let d =
                    crate::peaks::parse_dtype(d).map_or(d.to_string(), |d| d.as_str().to_string());
                push_distinct(&mut acc.dtypes, d);
            }
            let n = v.num_devices.get(row).filter(|n| n.is_finite() && *n > 0.0);
            if let Some(n) = n {
                push_distinct(&mut acc.num_devices, n);
            }
            let t = v.step_time_s.get(row).filter(|t| t.is_finite() && *t > 0.0);
            let t_fb = v
                .fwd_bwd_time_s
                .get(row)
                .filter(|t| t.is_finite() && *t > 0.0);
            // The work's count is tokens or samples (FieldValues::unit); samples are counted besides
            // tokens where the rows have both.
            let count = |n: Option<f64>| n.filter(|c| c.is_finite() && *c >= 0.0);
            let (tokens, samples) = match v.unit {
                WorkUnit::Tokens => (count(v.tokens.get(row)), count(v.samples.get(row))),
                WorkUnit::Samples => (None, count(v.tokens.get(row))),
            };
            if let Some(t) = t {
                acc.time += t * span;
                acc.time_seen = true;
            }
            if let (Some(tok), Some(_)) = (tokens, t) {
                acc.tokens += tok * span;
                acc.tokens_seen = true;
            }
            if let (Some(n), Some(_)) = (samples, t) {
                acc.samples += n * span;
                acc.samples_seen = true;
            }
            let (peak, m) = (number(&peaks, row), number(&mfu, row));
            if let Some(p) = peak {
                push_distinct(&mut acc.peaks, p);
            } else if let Some(device) = text(&resolved, row) {
                // A device the table knows, with no rate for this precision (GB10 in fp32).
                let missing = match v.dtype.get(row).map(crate::peaks::parse_dtype) {
                    Some(Some(dtype)) => format!("no {} peak for {device}", dtype.as_str()),
                    Some(None) => format!("unknown precision for {device}"),
                    None => "no precision (dtype)".to_string(),
                };
                push_distinct(&mut acc.no_peak, missing);
            }
            if let Some(m) = m {
                acc.mfus.push(m);
                acc.above_one |= m > 1.0;
            }
            // Device-seconds weigh each row: work is what was done, capacity what the devices could do.
            // Without a device count the count is taken as constant within the run, and cancels.
            let devices = n.unwrap_or(1.0);
            if let (Some(t), Some(p), Some(m)) = (t, peak, m) {
                acc.work += m * p * devices * t * span;
                acc.capacity += p * devices * t * span;
            }
            // mfu_fwd_bwd x peak x devices x fwd_bwd time is the same work, over the fwd+bwd time.
            if let (Some(p), Some(mf), Some(tf)) = (peak, number(&mfu_fb, row), t_fb) {
                acc.work_fb += mf * p * devices * tf * span;
                acc.capacity_fb += p * devices * tf * span;
            }
        }
        Ok(())
    }

    /// Each run's summary.
    pub fn finish(self) -> Vec<RunSummary> {
        self.runs.into_iter().map(finish).collect()
    }
}

fn finish(acc: Accumulator) -> RunSummary {
    let mfus = acc.mfus.sorted();
    let quantile = |q: f64| quantile_counted(&mfus, acc.mfus.len(), q);
    let mut flags = Vec::new();
    if acc.unknown_device {
        flags.push("unknown device".to_string());
    }
    flags.extend(acc.no_peak.iter().cloned());
    if acc.above_one {
        flags.push("mfu above 1".to_string());
    }
    if acc.rows < FEW_STEPS {
        flags.push(format!("fewer than {FEW_STEPS} steps"));
    }
    if !acc.time_seen {
        flags.push("no step timing".to_string());
    }
    if acc.num_devices.len() > 1 {
        flags.push("num_devices varies".to_string());
    }
    if acc.peaks.len() > 1 {
        flags.push("peak varies".to_string());
    }
    let tokens = acc.tokens_seen.then_some(acc.tokens);
    let samples = acc.samples_seen.then_some(acc.samples);
    let time = acc.time_seen.then_some(acc.time);
    let rate = |n: Option<f64>| n.zip(time).filter(|(_, t)| *t > 0.0).map(|(k, t)| k / t);
    RunSummary {
        keys: acc.keys,
        device: (!acc.devices.is_empty()).then(|| acc.devices.join(";")),
        dtype: (!acc.dtypes.is_empty()).then(|| acc.dtypes.join(";")),
        num_devices: (acc.num_devices.len() == 1).then(|| acc.num_devices[0]),
        steps: acc.rows,
        first_step: acc.first_step,
        last_step: acc.last_step,
        tokens,
        step_time_total_s: time,
        tokens_per_second: rate(tokens),
        samples,
        samples_per_second: rate(samples),
        mfu_wall_clock: (acc.capacity > 0.0).then(|| acc.work / acc.capacity),
        mfu_fwd_bwd: (acc.capacity_fb > 0.0).then(|| acc.work_fb / acc.capacity_fb),
        mfu_wall_clock_p10: quantile(0.1),
        mfu_wall_clock_p50: quantile(0.5),
        mfu_wall_clock_p90: quantile(0.9),
        peak_flops_per_device: (acc.peaks.len() == 1).then(|| acc.peaks[0]),
        flags,
        // Filled by the pipeline, which audits the runs' own figures.
        framework: None,
        mfu_logged: None,
        audit: None,
    }
}

/// The steps each row stands for, from the steps of its run's rows: a row logged k steps after the one
/// before stands for those k steps (a trainer that logs every k steps logs one row for k); a row that
/// starts a run or an attempt (its step not after the one before: a relaunch) stands for as many steps
/// as the gap after it when its step is at least that gap (step 10 of rows at 10, 20, 30); with no gap
/// after it (an attempt of one row), for the run's most common gap k when its step is a multiple of k
/// and at least k (a relaunch's only row at 10 of a log every 10 steps, or at 5010 after a resume from
/// 5000); else for one. A row whose step does not move on from the one before, or without a step,
/// stands for one.
pub fn step_spans(runs: &RunIndex, steps: &[Option<f64>]) -> Vec<f64> {
    let mut spans = vec![1.0; steps.len()];
    let mut rows_of: Vec<Vec<usize>> = vec![Vec::new(); runs.keys.len()];
    for row in 0..steps.len() {
        rows_of[runs.run(row)].push(row);
    }
    for rows in &rows_of {
        let usual_gap = most_common_gap(rows.iter().map(|&r| steps[r]));
        for (i, &row) in rows.iter().enumerate() {
            let Some(step) = steps[row] else { continue };
            let before = i.checked_sub(1).and_then(|j| steps[rows[j]]);
            let after = rows.get(i + 1).and_then(|&r| steps[r]);
            spans[row] = span_by_neighbours(step, before, after)
                .unwrap_or_else(|| span_by_usual_gap(step, usual_gap));
        }
    }
    spans
}

/// Each row's span ([`step_spans`]) worked out as a run's rows come in order, for a log folded window by
/// window: the row before's step is kept, the row after's given. Where the run's most common gap is not
/// known yet (the log's first pass), a row its neighbours do not tell is taken to stand for one step
/// and its step kept, to check once every gap is seen ([`Spans::guesses_hold`]).
#[derive(Debug, Clone, Default)]
pub struct Spans {
    usual_gap: Option<f64>,
    /// The step of the row before (`None` where it has none).
    before: Option<f64>,
    /// The gaps between the run's rows that move forward, and the last step seen.
    gaps: Counted,
    last_step: Option<f64>,
    /// The steps of the rows taken to stand for one step, at most [`GUESSED_AT_MOST`] + 1.
    guessed: Vec<f64>,
}

/// Rows whose span a fold guessed, past which the log is read whole rather than checked.
pub const GUESSED_AT_MOST: usize = 100_000;

impl Spans {
    /// Spans of a run whose most common gap is `usual_gap` (known from a first pass).
    pub fn with_usual_gap(usual_gap: Option<f64>) -> Spans {
        Spans {
            usual_gap,
            ..Spans::default()
        }
    }

    /// The span of the run's next row, at `step`; the row after it is at `after`.
    pub fn next(&mut self, step: Option<f64>, after: Option<f64>) -> f64 {
        let span = match step {
            None => 1.0,
            Some(s) => span_by_neighbours(s, self.before, after).unwrap_or_else(|| {
                if self.usual_gap.is_none() && self.guessed.len() <= GUESSED_AT_MOST {
                    self.guessed.push(s);
                }
                span_by_usual_gap(s, self.usual_gap)
            }),
        };
        if let (Some(b), Some(s)) = (self.last_step, step) {
            if s > b {
                self.gaps.push(s - b);
            }
        }
        self.last_step = step.or(self.last_step);
        self.before = step;
        span
    }

    /// The run's most common gap, over the rows seen.
    pub fn usual_gap(&self) -> Option<f64> {
        most_common_gap_of(&self.gaps)
    }

    /// Whether each span taken as one step is what the run's most common gap gives (the whole read's).
    pub fn guesses_hold(&self) -> bool {
        let gap = self.usual_gap();
        self.guessed.len() <= GUESSED_AT_MOST
            && self
                .guessed
                .iter()
                .all(|step| span_by_usual_gap(*step, gap) == 1.0)
    }
}

/// The steps a row at `step` stands for as the steps of the rows just before and after it in its run
/// tell (see [`step_spans`]); `None` where neither does, and the run's most common gap decides
/// ([`span_by_usual_gap`]).
pub fn span_by_neighbours(step: f64, before: Option<f64>, after: Option<f64>) -> Option<f64> {
    match (before, after) {
        (Some(b), _) if step > b => Some(step - b),
        (Some(b), _) if step == b => Some(1.0),
        (_, Some(a)) if a > step && step >= a - step => Some(a - step),
        (_, Some(a)) if a > step => Some(1.0),
        _ => None,
    }
}

/// The steps a row at `step` stands for where its neighbours do not tell: the run's most common gap
/// where its step is a multiple of it, else one.
pub fn span_by_usual_gap(step: f64, usual_gap: Option<f64>) -> f64 {
    match usual_gap {
        Some(k) if step >= k && (step / k).fract() == 0.0 => k,
        _ => 1.0,
    }
}

/// The most common step gap between consecutive rows that move forward (the smaller on a tie), where
/// one is seen at least twice.
fn most_common_gap(steps: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let mut gaps = Counted::default();
    let mut before: Option<f64> = None;
    for step in steps {
        if let (Some(b), Some(s)) = (before, step) {
            if s > b {
                gaps.push(s - b);
            }
        }
        before = step.or(before);
    }
    most_common_gap_of(&gaps)
}

/// [`most_common_gap`] of the gaps counted by value.
pub fn most_common_gap_of(gaps: &Counted) -> Option<f64> {
    let mut best: Option<(f64, u64)> = None;
    for (gap, n) in gaps.sorted() {
        if n >= 2 && best.is_none_or(|(_, most)| n > most) {
            best = Some((gap, n));
        }
    }
    best.map(|(gap, _)| gap)
}

/// The q-quantile of sorted values, interpolating linearly between neighbours (numpy's default).
pub fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let pos = q * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    Some(sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64))
}

/// [`quantile`] of `len` values held as sorted distinct values with their counts.
pub fn quantile_counted(sorted: &[(f64, u64)], len: u64, q: f64) -> Option<f64> {
    if len == 0 {
        return None;
    }
    let pos = q * (len - 1) as f64;
    let (lo, hi) = (pos.floor() as u64, pos.ceil() as u64);
    let (low, high) = (value_at(sorted, lo), value_at(sorted, hi));
    Some(low + (high - low) * (pos - lo as f64))
}

/// Column names of the machine formats, after the key columns.
pub const SUMMARY_COLUMNS: [&str; 21] = [
    "device",
    "dtype",
    "num_devices",
    "steps",
    "first_step",
    "last_step",
    "tokens",
    "step_time_total_s",
    "tokens_per_second",
    "mfu_wall_clock",
    "mfu_fwd_bwd",
    "mfu_wall_clock_p10",
    "mfu_wall_clock_p50",
    "mfu_wall_clock_p90",
    "peak_flops_per_device",
    "flags",
    "framework",
    "mfu_logged",
    "audit",
    "samples",
    "samples_per_second",
];

/// The summaries as a frame: the key columns (named `key_names`), then [`SUMMARY_COLUMNS`].
/// `v` as an integer when it is a whole number an f64 holds exactly (below 2^53 in size).
pub fn whole(v: f64) -> Option<i64> {
    (v.fract() == 0.0 && v.abs() < 9_007_199_254_740_992.0).then_some(v as i64)
}

pub fn to_frame(key_names: &[String], runs: &[RunSummary]) -> PolarsResult<DataFrame> {
    let mut columns: Vec<Column> = Vec::new();
    for (i, name) in key_names.iter().enumerate() {
        let v: Vec<Option<String>> = runs.iter().map(|r| r.keys[i].clone()).collect();
        columns.push(Column::new(name.as_str().into(), v));
    }
    let f = |name: &str, get: &dyn Fn(&RunSummary) -> Option<f64>| {
        Column::new(name.into(), runs.iter().map(get).collect::<Vec<_>>())
    };
    // Counts are integers when every run's is whole (a device count, steps, tokens), so a reader sees
    // 8, not 8.0; a count that is a mean or an interpolation stays a float.
    let count = |name: &str, get: &dyn Fn(&RunSummary) -> Option<f64>| {
        let values: Vec<Option<f64>> = runs.iter().map(get).collect();
        if values.iter().flatten().all(|v| whole(*v).is_some()) {
            let ints: Vec<Option<i64>> = values.iter().map(|v| v.and_then(whole)).collect();
            Column::new(name.into(), ints)
        } else {
            Column::new(name.into(), values)
        }
    };
    columns.push(Column::new(
        "device".into(),
        runs.iter().map(|r| r.device.clone()).collect::<Vec<_>>(),
    ));
    columns.push(Column::new(
        "dtype".into(),
        runs.iter().map(|r| r.dtype.clone()).collect::<Vec<_>>(),
    ));
    columns.push(count("num_devices", &|r| r.num_devices));
    columns.push(Column::new(
        "steps".into(),
        runs.iter().map(|r| r.steps as u64).collect::<Vec<_>>(),
    ));
    columns.push(count("first_step", &|r| r.first_step));
    columns.push(count("last_step", &|r| r.last_step));
    columns.push(count("tokens", &|r| r.tokens));
    columns.push(f("step_time_total_s", &|r| r.step_time_total_s));
    columns.push(f("tokens_per_second", &|r| r.tokens_per_second));
    columns.push(f("mfu_wall_clock", &|r| r.mfu_wall_clock));
    columns.push(f("mfu_fwd_bwd", &|r| r.mfu_fwd_bwd));
    columns.push(f("mfu_wall_clock_p10", &|r| r.mfu_wall_clock_p10));
    columns.push(f("mfu_wall_clock_p50", &|r| r.mfu_wall_clock_p50));
    columns.push(f("mfu_wall_clock_p90", &|r| r.mfu_wall_clock_p90));
    columns.push(f("peak_flops_per_device", &|r| r.peak_flops_per_device));
    columns.push(Column::new(
        "flags".into(),
        runs.iter().map(|r| r.flags.join(";")).collect::<Vec<_>>(),
    ));
    columns.push(Column::new(
        "framework".into(),
        runs.iter().map(|r| r.framework.clone()).collect::<Vec<_>>(),
    ));
    columns.push(f("mfu_logged", &|r| r.mfu_logged));
    columns.push(Column::new(
        "audit".into(),
        runs.iter().map(|r| r.audit.clone()).collect::<Vec<_>>(),
    ));
    columns.push(count("samples", &|r| r.samples));
    columns.push(f("samples_per_second", &|r| r.samples_per_second));
    DataFrame::new(runs.len(), columns)
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Spans worked out row by row are the whole run's: with the run's most common gap known (a
        /// second pass), always; without it (one pass), wherever the guesses hold.
        #[test]
        fn spans_row_by_row_are_the_whole_runs(
            steps in proptest::collection::vec(proptest::option::weighted(0.9, 0u32..60), 0..80),
        ) {
            let steps: Vec<Option<f64>> = steps.iter().map(|s| s.map(f64::from)).collect();
            let whole = step_spans(&RunIndex::one(vec![None]), &steps);
            let after = |i: usize| steps.get(i + 1).copied().flatten();
            let mut first = Spans::default();
            let guessed: Vec<f64> = (0..steps.len()).map(|i| first.next(steps[i], after(i))).collect();
            if first.guesses_hold() {
                proptest::prop_assert_eq!(&guessed, &whole);
            }
            let mut second = Spans::with_usual_gap(first.usual_gap());
            let known: Vec<f64> = (0..steps.len()).map(|i| second.next(steps[i], after(i))).collect();
            proptest::prop_assert_eq!(known, whole);
        }
    }

    #[test]
    fn quantiles_interpolate() {
        let v = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(quantile(&v, 0.5), Some(3.0));
        assert_eq!(quantile(&v, 0.1), Some(1.4));
        assert_eq!(quantile(&v, 0.9), Some(4.6));
        assert_eq!(quantile(&[], 0.5), None);
        assert_eq!(quantile(&[7.0], 0.9), Some(7.0));
        // Held by distinct value, the same quantiles to the bit.
        let values = [0.31, 0.2, 0.31, 0.45, 0.2, 0.2, 0.5, 0.33, 0.31, 0.1, 0.45];
        for n in 0..=values.len() {
            let mut sorted = values[..n].to_vec();
            sorted.sort_by(f64::total_cmp);
            let mut counted = Counted::default();
            values[..n].iter().for_each(|v| counted.push(*v));
            for q in [0.0, 0.1, 0.25, 0.5, 0.9, 1.0] {
                assert_eq!(
                    quantile_counted(&counted.sorted(), counted.len(), q).map(f64::to_bits),
                    quantile(&sorted, q).map(f64::to_bits),
                    "{n} values, q {q}"
                );
            }
        }
    }

    #[test]
    fn rows_stand_for_the_steps_since_the_row_before_and_a_relaunch_for_the_usual_gap() {
        let spans = |steps: &[f64]| {
            let steps: Vec<Option<f64>> = steps.iter().map(|s| Some(*s)).collect();
            step_spans(&RunIndex::one(Vec::new()), &steps)
        };
        // GPT-NeoX every 10 iterations, relaunched from scratch: its one row at 10 stands for 10.
        assert_eq!(spans(&[10., 20., 30., 40., 10.]), [10.; 5]);
        // A resume from 5000 whose only row is at 5010.
        assert_eq!(spans(&[4990., 5000., 5010., 5010.]), [10., 10., 10., 1.]);
        assert_eq!(spans(&[4990., 5000., 5010., 4990., 5000.]), [10.; 5]);
        // A 0-based index every 10 (swin's 0, 10, 20) and a first line at step 1 before a gap of 50
        // (PaddleDetection's 1, 51, 101): one step each, relaunched or not.
        assert_eq!(spans(&[0., 10., 20., 0.]), [1., 10., 10., 1.]);
        assert_eq!(spans(&[1., 51., 101., 1.]), [1., 50., 50., 1.]);
        // A step off the usual gap, or no gap seen twice: one.
        assert_eq!(spans(&[10., 20., 30., 15.]), [10., 10., 10., 1.]);
        assert_eq!(spans(&[10., 20., 10.]), [10., 10., 1.]);
    }
}
