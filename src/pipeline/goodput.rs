//! Goodput of the runs in loaded inputs: each run's rows (every attempt's, in log order) with their
//! wall times, then [`crate::goodput::measure`]. What `mfu goodput` and the Python package share.

use std::collections::HashMap;

use polars::prelude::*;

use crate::columns::{Field, FieldSource};
use crate::compute::{MFU_WALL_CLOCK, PEAK_FLOPS_PER_DEVICE};
use crate::goodput::{measure, Accounts, Goodput, Mark, Row, Survey, Weights};
use crate::read::Input;
use crate::summary::{f64s, step_spans, GroupBy, RunIndex, Spans};

use super::runs::{run_group, run_groups};
use super::windowed::{Fold, FoldedRuns, Part, Window, WindowsRead, SPAN_BY_USUAL_GAP};
use super::{Loaded, PipelineError};
use super::{Observer, Plan};

/// The columns of one run's goodput, after its key columns, in order.
pub const GOODPUT_COLUMNS: [&str; 24] = [
    "attempts",
    "launches_without_steps",
    "steps_executed",
    "steps_kept",
    "steps_redone",
    "elapsed_s",
    "productive_s",
    "wasted_progress_s",
    "recovery_s",
    "startup_s",
    "pause_s",
    "pause_evaluation_s",
    "pause_checkpoint_s",
    "other_s",
    "goodput",
    "ideal_step_time_s",
    "mfu_productive",
    "mfu_effective",
    "device_hours_lost",
    "straggler_steps",
    "straggler_s",
    "wall_time_column",
    "notes",
    "source_files",
];

/// One run's goodput, with its keys and where its wall times came from.
#[derive(Debug, Clone, PartialEq)]
pub struct RunGoodput {
    pub keys: Vec<Option<String>>,
    pub goodput: Goodput,
    /// The column the wall times were read from (`wall_time`, `_timestamp`, ...).
    pub wall_time_column: Option<String>,
    /// The inputs the run's rows came from.
    pub sources: Vec<String>,
}

/// Columns that hold when a row was logged, in the order they are looked for, as their names read
/// lower case with every run of other characters than letters and digits one `_`, trimmed: the
/// readers' own `wall_time` (TensorBoard, MLflow, DVCLive, console timestamps) and TensorBoard's CSV
/// export's `Wall time`, W&B's `_timestamp`, then the names other exports use.
/// Last, a console log's `log_clock_s`: its lines' timestamps where they have no date (seconds since
/// the first line), a clock within one file only.
pub const WALL_TIME_COLUMNS: [&str; 5] = [
    "wall_time",
    "timestamp",
    "time",
    "datetime",
    LOG_CLOCK_COLUMN,
];

/// A console log's clock where its timestamps have no date: seconds since its first line.
const LOG_CLOCK_COLUMN: &str = "log_clock_s";

/// The column of a run's own clock, seconds its processes have run, carried on across a resume: W&B's
/// `_runtime` (a resumed run starts at the runtime the last process reached).
pub const RUN_CLOCK_COLUMN: &str = "_runtime";

/// The file HF's Trainer saves with each checkpoint and reloads on resume.
const HF_TRAINER_STATE: &str = "trainer_state.json";

/// The column readers give a launch that logged no steps, from its summary (run time over steps).
const RUN_MEAN_STEP_TIME: &str = "run_mean_step_time_s";

/// A column name as [`WALL_TIME_COLUMNS`] are written.
fn normalised(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    out.trim_matches('_').to_string()
}

/// The wall times of `df`'s rows in seconds since the epoch, and the column they came from: a numeric
/// column in seconds (milliseconds where its values are past the year 5000 in seconds), a datetime
/// column, or text timestamps.
///
/// A column is a clock only where the evidence says so: the column the step times come from (a `time`
/// that is each step's duration) is none, and neither is a number column whose values go back between
/// more than a tenth of its rows (durations, not a clock): such a column is passed over, and said so in
/// `refused`, where goodput 1.003 and MFU 33,700% would otherwise come of it.
pub fn wall_times(df: &DataFrame, step_time_column: Option<&str>) -> PolarsResult<WallTimes> {
    let mut refused = Vec::new();
    for wanted in WALL_TIME_COLUMNS {
        let Some(column) = df.columns().iter().find(|c| normalised(c.name()) == wanted) else {
            continue;
        };
        let name = column.name().to_string();
        if step_time_column == Some(name.as_str()) {
            refused.push(format!(
                "'{name}' is the step times' column, not a clock: not used as the wall time"
            ));
            continue;
        }
        let values: Vec<Option<f64>> = match column.dtype() {
            DataType::String => column
                .str()?
                .iter()
                .map(|s| s.and_then(crate::values::parse_timestamp))
                .collect(),
            DataType::Datetime(unit, _) => {
                let per_second = match unit {
                    TimeUnit::Nanoseconds => 1e9,
                    TimeUnit::Microseconds => 1e6,
                    TimeUnit::Milliseconds => 1e3,
                };
                let raw = column.cast(&DataType::Int64)?;
                raw.i64()?
                    .iter()
                    .map(|v| v.map(|v| v as f64 / per_second))
                    .collect()
            }
            dtype if dtype.is_primitive_numeric() => {
                let values: Vec<Option<f64>> =
                    column.cast(&DataType::Float64)?.f64()?.iter().collect();
                // Seconds past the year 5000 are milliseconds.
                let milliseconds = values.iter().flatten().any(|v| *v > 1e11);
                let present: Vec<f64> = values.iter().flatten().copied().collect();
                let back = present.windows(2).filter(|w| w[1] < w[0]).count();
                let pairs = present.len().saturating_sub(1);
                if pairs > 0 && back * 10 > pairs {
                    refused.push(format!(
                        "'{name}' goes back between {back} of its {pairs} pairs of rows: durations, not a clock; not used as the wall time"
                    ));
                    continue;
                }
                values
                    .into_iter()
                    .map(|v| v.map(|v| if milliseconds { v / 1e3 } else { v }))
                    .collect()
            }
            _ => continue,
        };
        if values.iter().any(Option::is_some) {
            return Ok(WallTimes {
                found: Some((name, values)),
                refused,
            });
        }
    }
    Ok(WallTimes {
        found: None,
        refused,
    })
}

/// The wall times [`wall_times`] found, and the columns it passed over as no clock (why, for the notes).
#[derive(Debug, Clone, PartialEq)]
pub struct WallTimes {
    pub found: Option<(String, Vec<Option<f64>>)>,
    pub refused: Vec<String>,
}

/// A run's rows by input (the input's index, its rows), the column its wall times came from, its
/// inputs, and the notes on it (the columns passed over as no clock).
type Gathered = (
    Vec<(usize, Vec<Row>)>,
    Option<String>,
    Vec<String>,
    Vec<String>,
);

/// Whether a folder's name is the date and time a launch made it (torchtitan's TensorBoard folder of
/// each launch, `20260505-0152`; `2026-05-05_01-52-03`): at least eight digits, and nothing but digits
/// and the separators of a timestamp.
fn dated_folder(name: &str) -> bool {
    let digits = name.chars().filter(char::is_ascii_digit).count();
    digits >= 8
        && name
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '-' | '_' | ':' | '.' | 'T'))
}

/// Runs keyed by a run_id that is a dated folder (see [`dated_folder`]) of one parent folder, whose
/// wall times follow one another without overlapping, are the launches of one run: torchtitan writes
/// each launch's TensorBoard events to a folder of its own (`tb/20260505-0152/`, `tb/20260505-0305/`),
/// so a run relaunched 24 times would read as 25 runs of one attempt each. They are joined into one run
/// keyed by the parent folder (the argument, where they are its own folders), each launch's rows an
/// input of it (so each later one starts an attempt), with a note naming them. Folders whose wall times
/// overlap ran side by side: separate runs.
fn join_launch_folders(
    key_names: &[String],
    order: Vec<Vec<Option<String>>>,
    runs: Vec<Gathered>,
    argument_of: impl Fn(usize) -> String,
) -> (Vec<Vec<Option<String>>>, Vec<Gathered>) {
    if key_names != ["run_id"] {
        return (order, runs);
    }
    let parent_of = |key: &[Option<String>], run: &Gathered| -> Option<String> {
        let id = key.first()?.as_deref()?;
        let (parent, name) = match id.rsplit_once('/') {
            Some((parent, name)) => (parent.to_string(), name),
            None => (argument_of(run.0.first()?.0), id),
        };
        dated_folder(name).then_some(parent)
    };
    let span = |run: &Gathered| {
        let walls = run
            .0
            .iter()
            .flat_map(|(_, rows)| rows.iter())
            .filter_map(|r| r.wall_time);
        walls.fold(None, |s: Option<(f64, f64)>, w| {
            Some(s.map_or((w, w), |(a, b)| (a.min(w), b.max(w))))
        })
    };
    // The members of each parent, in order of first appearance.
    let mut families: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, key) in order.iter().enumerate() {
        if let Some(parent) = parent_of(key, &runs[i]) {
            match families.iter_mut().find(|(p, _)| *p == parent) {
                Some((_, members)) => members.push(i),
                None => families.push((parent, vec![i])),
            }
        }
    }
    let mut joined_into: Vec<Option<usize>> = vec![None; order.len()];
    let mut notes: Vec<(usize, String)> = Vec::new();
    for (parent, members) in &families {
        if members.len() < 2 {
            continue;
        }
        let mut spans: Vec<(f64, f64)> = Vec::with_capacity(members.len());
        for &m in members {
            match span(&runs[m]) {
                Some(s) => spans.push(s),
                None => break,
            }
        }
        if spans.len() < members.len() {
            continue;
        }
        spans.sort_by(|a, b| a.0.total_cmp(&b.0));
        if spans.windows(2).any(|w| w[1].0 < w[0].1) {
            continue;
        }
        let first = members[0];
        for &m in &members[1..] {
            joined_into[m] = Some(first);
        }
        let names: Vec<String> = members
            .iter()
            .filter_map(|&m| order[m][0].clone())
            .collect();
        notes.push((
            first,
            format!(
                "{} launch folders of '{parent}' read as one run, each an attempt (their wall times follow one another): {}",
                members.len(),
                names.join(", ")
            ),
        ));
    }
    if joined_into.iter().all(Option::is_none) {
        return (order, runs);
    }
    let mut slots: Vec<Option<Gathered>> = runs.into_iter().map(Some).collect();
    for (m, into) in joined_into.iter().enumerate() {
        if let Some(into) = *into {
            let (chunks, _, sources, refused) = slots[m].take().expect("joined once");
            let target = slots[into].as_mut().expect("a family's first is kept");
            target.0.extend(chunks);
            for s in sources {
                if !target.2.contains(&s) {
                    target.2.push(s);
                }
            }
            for r in refused {
                if !target.3.contains(&r) {
                    target.3.push(r);
                }
            }
        }
    }
    let mut out_order = Vec::new();
    let mut out_runs = Vec::new();
    for (i, (key, slot)) in order.into_iter().zip(slots).enumerate() {
        let Some(mut run) = slot else { continue };
        let key = match notes.iter().find(|(f, _)| *f == i) {
            Some((_, note)) => {
                let parent = parent_of(&key, &run);
                run.3.push(note.clone());
                vec![parent]
            }
            None => key,
        };
        out_order.push(key);
        out_runs.push(run);
    }
    (out_order, out_runs)
}

/// The goodput of every run over `loaded` (each input with its display name): the key column names and
/// the runs in order of first appearance. Runs are keyed by `by`, else by the run_id field, else each
/// argument the user gave is one run, all its files included (`input`): a run's files are read in order
/// of their first wall time, and each file after the first starts an attempt (a relaunch writes a new
/// log).
pub fn goodput_runs(
    loaded: &[(String, Loaded)],
    by: &[String],
) -> Result<(Vec<String>, Vec<RunGoodput>), PipelineError> {
    let (key_names, groups) = run_groups(loaded, by)?;
    let arguments: Vec<String> = loaded.iter().map(|(_, l)| l.argument.clone()).collect();
    measure_runs(key_names, groups, arguments, loaded.iter())
}

/// An input to [`measure_runs`]: borrowed, or owned, when its table can go once the columns goodput
/// reads of it are taken.
trait GoodputInput {
    fn loaded(&self) -> &(String, Loaded);
    /// Lets the input's table go (its field values stay).
    fn let_table_go(&mut self) {}
}

impl GoodputInput for &(String, Loaded) {
    fn loaded(&self) -> &(String, Loaded) {
        self
    }
}

impl GoodputInput for (String, Loaded) {
    fn loaded(&self) -> &(String, Loaded) {
        self
    }

    fn let_table_go(&mut self) {
        self.1.enriched.frame = DataFrame::empty();
    }
}

/// [`goodput_runs`] of inputs it may drop: each input's table (the log's columns and those enrich
/// added, about 650 MB of a 1 GiB console log) goes once goodput has taken the columns it reads, before
/// the input's rows are gathered; its field values stay.
pub fn goodput_runs_owned(
    loaded: Vec<(String, Loaded)>,
    by: &[String],
) -> Result<(Vec<String>, Vec<RunGoodput>), PipelineError> {
    let (key_names, groups) = run_groups(&loaded, by)?;
    let arguments: Vec<String> = loaded.iter().map(|(_, l)| l.argument.clone()).collect();
    measure_runs(key_names, groups, arguments, loaded.into_iter())
}

/// What goodput reads of one input's table, taken before its rows are gathered (so an owned input's
/// table can go first): each row's run, its wall times, run clock, peak and MFU.
struct TableColumns {
    height: usize,
    keys: RunIndex,
    found: WallTimes,
    /// Whether the wall-time column found holds numbers (the only kind checked for going back).
    numeric_wall: bool,
    run_clock: Option<Float64Chunked>,
    peaks: Option<Float64Chunked>,
    mfu: Option<Float64Chunked>,
}

/// [`TableColumns`] of input `display`'s table, its rows split into runs by `group`.
fn table_columns(
    display: &str,
    l: &Loaded,
    group: &GroupBy,
) -> Result<TableColumns, PipelineError> {
    let combine = PipelineError::Combine;
    let df = &l.enriched.frame;
    // An input that is one run needs no key per row.
    let keys = match group {
        GroupBy::File => RunIndex::one(vec![Some(l.argument.clone())]),
        group => RunIndex::of(df, display, group).map_err(combine)?,
    };
    let step_time_column = match l.enriched.mapping.source(Field::StepTime) {
        FieldSource::Column {
            name,
            cumulative: false,
            ..
        } => Some(name.as_str()),
        _ => None,
    };
    let found = wall_times(df, step_time_column).map_err(combine)?;
    let numeric_wall = found.found.as_ref().is_some_and(|(name, _)| {
        df.column(name)
            .is_ok_and(|c| c.dtype().is_primitive_numeric())
    });
    Ok(TableColumns {
        height: df.height(),
        keys,
        found,
        numeric_wall,
        run_clock: f64s(df, RUN_CLOCK_COLUMN).map_err(combine)?,
        peaks: f64s(df, PEAK_FLOPS_PER_DEVICE).map_err(combine)?,
        mfu: f64s(df, MFU_WALL_CLOCK).map_err(combine)?,
    })
}

/// One input's rows as goodput reads them, given one at a time in order ([`InputRows::row`]).
struct InputRows<'a> {
    columns: TableColumns,
    values: &'a crate::columns::FieldValues,
    walls: Vec<Option<f64>>,
    wall_column: Option<String>,
    refused: Vec<String>,
    steps: std::borrow::Cow<'a, [Option<f64>]>,
    /// Each row's span; `None` where the caller works them out (a log folded in windows).
    spans: Option<std::borrow::Cow<'a, [f64]>>,
    marks: std::iter::Peekable<std::slice::Iter<'a, (usize, Mark)>>,
    marked: bool,
    /// A step time differenced from the wall-time column itself says nothing the wall times do not,
    /// and across a relaunch it would make the whole gap one step: only the wall times are used.
    time_from_wall: bool,
    /// The step times are the run clock differenced (W&B's `_runtime`).
    clock_timed: bool,
    /// A reader's stand-in for a launch that logged no steps (a W&B run folder with only a summary).
    summary: bool,
}

impl<'a> InputRows<'a> {
    /// The rows of `l` (whose table's columns are `columns`), the first `first_row` rows of its log
    /// before them; with `spans`, each row's span worked out here.
    fn new(
        mut columns: TableColumns,
        l: &'a Loaded,
        first_row: usize,
        spans: bool,
    ) -> InputRows<'a> {
        let v = &l.enriched.values;
        let height = columns.height;
        let (wall_column, walls) = match columns.found.found.take() {
            Some((name, values)) => (Some(name), values),
            None => (None, vec![None; height]),
        };
        let refused = std::mem::take(&mut columns.found.refused);
        let steps: std::borrow::Cow<[Option<f64>]> = if v.steps.len() == height {
            std::borrow::Cow::Borrowed(&v.steps)
        } else {
            let rows = first_row + 1..=first_row + height;
            std::borrow::Cow::Owned(rows.map(|i| Some(i as f64)).collect())
        };
        let spans = spans.then(|| match &v.spans {
            Some(spans) => std::borrow::Cow::Borrowed(&spans[..]),
            None => std::borrow::Cow::Owned(step_spans(&columns.keys, &steps)),
        });
        let step_time_source = l.enriched.mapping.source(Field::StepTime);
        let time_from_wall = matches!(
            step_time_source,
            FieldSource::Column { name, cumulative: true, .. } if Some(name) == wall_column.as_ref()
        );
        let clock_timed = matches!(
            step_time_source,
            FieldSource::Column { name, cumulative: true, .. } if name == RUN_CLOCK_COLUMN
        );
        let summary = matches!(
            step_time_source,
            FieldSource::Column { name, .. } if name == RUN_MEAN_STEP_TIME
        );
        InputRows {
            columns,
            values: v,
            walls,
            wall_column,
            refused,
            steps,
            spans,
            marks: l.marks.as_deref().unwrap_or_default().iter().peekable(),
            marked: l.marks.is_some(),
            time_from_wall,
            clock_timed,
            summary,
        }
    }

    /// Row `row` (called for each row in order: the marks are taken as the rows go), its span NaN where
    /// the caller works the spans out.
    fn row(&mut self, row: usize) -> Row {
        let v = self.values;
        let height = self.columns.height;
        let (mut restart, mut evaluation, mut checkpoint) = (false, false, false);
        let mut launches_without_steps = 0;
        while let Some((_, mark)) = self.marks.next_if(|(r, _)| *r == row) {
            match mark {
                Mark::Restart => restart = true,
                Mark::Evaluation => evaluation = true,
                Mark::Checkpoint => checkpoint = true,
                // A launch came between the row before and this one: this row's is another.
                Mark::LaunchWithoutSteps => {
                    launches_without_steps += 1;
                    restart = true;
                }
            }
        }
        // Launches after the last row: counted with it.
        if row + 1 == height {
            launches_without_steps += self
                .marks
                .by_ref()
                .filter(|(_, m)| *m == Mark::LaunchWithoutSteps)
                .count();
        }
        let cell = |column: &Option<Float64Chunked>| column.as_ref()?.get(row);
        let step_time = v
            .step_time_s
            .get(row)
            .filter(|t| t.is_finite() && *t > 0.0 && !self.time_from_wall);
        let devices = v.num_devices.get(row).filter(|n| n.is_finite() && *n > 0.0);
        let capacity = cell(&self.columns.peaks).map(|p| p * devices.unwrap_or(1.0));
        let span = self.spans.as_ref().map_or(f64::NAN, |s| s[row]);
        // The FLOPs a row did: its MFU at its capacity over its steps' time. Where the caller works
        // the span out, it multiplies it in.
        let flops = match (cell(&self.columns.mfu), capacity, step_time) {
            (Some(m), Some(c), Some(t)) if span.is_nan() => Some(m * c * t),
            (Some(m), Some(c), Some(t)) => Some(m * c * t * span),
            _ => None,
        };
        Row {
            step: self.steps[row],
            wall_time: self.walls[row],
            step_time,
            span,
            flops,
            capacity,
            devices,
            restart,
            evaluation: self.marked.then_some(evaluation),
            checkpoint: self.marked.then_some(checkpoint),
            run_clock: cell(&self.columns.run_clock),
            summary: self.summary,
            launches_without_steps,
        }
    }
}

/// The runs of `loaded` (grouped by `groups`, each input's argument in `arguments`) gathered input by
/// input, then measured.
fn measure_runs<T: GoodputInput>(
    mut key_names: Vec<String>,
    groups: Vec<GroupBy>,
    arguments: Vec<String>,
    loaded: impl Iterator<Item = T>,
) -> Result<(Vec<String>, Vec<RunGoodput>), PipelineError> {
    if key_names == ["source_file"] {
        key_names = vec!["input".into()];
    }
    let mut order: Vec<Vec<Option<String>>> = Vec::new();
    // Whether each input's step times are its run clock differenced (W&B's `_runtime`).
    let mut clock_timed = vec![false; arguments.len()];
    let mut runs: Vec<Gathered> = Vec::new();
    let mut index: HashMap<Vec<Option<String>>, usize> = HashMap::new();
    for (input, (mut item, group)) in loaded.zip(groups).enumerate() {
        // What goodput reads of the input's table, taken before the rows are gathered; an owned
        // input's table then goes (`mfu goodput` of a 1 GiB console log: 1,808 -> 1,290 MiB).
        let columns = {
            let (display, l) = item.loaded();
            table_columns(display, l, &group)?
        };
        item.let_table_go();
        let (display, l) = item.loaded();
        let height = columns.height;
        let mut input_rows = InputRows::new(columns, l, 0, true);
        clock_timed[input] = input_rows.clock_timed;
        // Each of the input's runs' rows still to come: reserved at once rather than doubled as they
        // come (a row is 136 bytes: doubling took 320 MB for 1.1M rows).
        let mut left = vec![0usize; input_rows.columns.keys.keys.len()];
        for row in 0..height {
            left[input_rows.columns.keys.run(row)] += 1;
        }
        // The run of the row before, looked up again only where the key changes.
        let mut current: Option<(usize, usize)> = None;
        for row in 0..height {
            let run = input_rows.columns.keys.run(row);
            let at = match current {
                Some((r, at)) if r == run => at,
                _ => {
                    let key = input_rows.columns.keys.key(row);
                    let at = *index.entry(key.clone()).or_insert_with(|| {
                        order.push(key.clone());
                        runs.push((Vec::new(), None, Vec::new(), Vec::new()));
                        runs.len() - 1
                    });
                    current = Some((run, at));
                    at
                }
            };
            let r = input_rows.row(row);
            let entry = &mut runs[at];
            if entry.0.last().is_none_or(|(from, _)| *from != input) {
                entry.0.push((input, Vec::new()));
            }
            let chunk = &mut entry.0.last_mut().expect("pushed").1;
            let left = &mut left[run];
            if chunk.capacity() == chunk.len() {
                chunk.reserve_exact(*left);
            }
            *left -= 1;
            chunk.push(r);
            if entry.1.is_none() {
                entry.1.clone_from(&input_rows.wall_column);
            }
            if !entry.2.contains(display) {
                entry.2.push(display.clone());
            }
            for note in &input_rows.refused {
                if !entry.3.contains(note) {
                    entry.3.push(note.clone());
                }
            }
        }
    }
    let (order, runs) =
        join_launch_folders(&key_names, order, runs, |input| arguments[input].clone());
    let measured = order
        .into_iter()
        .zip(runs)
        .map(|(keys, (mut chunks, wall_time_column, sources, mut refused))| {
            // The run's files in order of their first wall time (those without one after, as read);
            // each file after the first starts an attempt.
            chunks.sort_by(|a, b| {
                let first = |c: &(usize, Vec<Row>)| c.1.iter().find_map(|r| r.wall_time);
                match (first(a), first(b)) {
                    (Some(x), Some(y)) => x.total_cmp(&y),
                    (Some(_), None) => std::cmp::Ordering::Less,
                    (None, Some(_)) => std::cmp::Ordering::Greater,
                    (None, None) => std::cmp::Ordering::Equal,
                }
            });
            // Undated timestamps (seconds since each file's first line) put no two files on one
            // clock: where a run has several, its elapsed time is not measured.
            if wall_time_column.as_deref() == Some(LOG_CLOCK_COLUMN) && chunks.len() > 1 {
                for (_, rows) in &mut chunks {
                    rows.iter_mut().for_each(|r| r.wall_time = None);
                }
                refused.push(format!(
                    "the lines' timestamps have no date ('{LOG_CLOCK_COLUMN}', seconds since each file's first line): the run's {} files cannot be put on one clock",
                    chunks.len()
                ));
            }
            let mut chunks = chunks.into_iter();
            let mut rows = chunks.next().map(|(_, rows)| rows).unwrap_or_default();
            for (input, mut chunk) in chunks {
                // A file's first row has no run clock before it in its file. Where the clock carried
                // on from the last file's (a resumed W&B run), the difference times it; where it
                // started again (a new process: offline runs, wandb-core before 0.19.10), its own
                // value is the time since its process started, if that fits the gap.
                let before = rows.iter().rev().find(|r| !r.summary);
                let before = before.and_then(|r| r.run_clock.zip(r.wall_time));
                if let Some(first) = chunk.iter_mut().find(|r| !r.summary) {
                    if let (true, None, Some((c0, w0)), Some(c1), Some(w1)) = (
                        clock_timed[input],
                        first.step_time,
                        before,
                        first.run_clock,
                        first.wall_time,
                    ) {
                        let ran = if c1 >= c0 { c1 - c0 } else { c1 };
                        first.step_time = Some(ran).filter(|t| *t > 0.0 && *t <= w1 - w0);
                    }
                }
                if let Some(first) = chunk.first_mut() {
                    first.restart = true;
                }
                rows.append(&mut chunk);
            }
            // Where steps are timed, a row without a time is no step (an evaluation row), nor is a
            // launch's summary: its time is the gap around it, and a relaunch it marks passes to the
            // next row, as does one its step shows by going back (a relaunch's first row, untimed
            // because nothing of its launch came before it).
            let all = rows.len();
            // Counted before rows are left out: a launch without steps noted on a row left out is
            // still one.
            let launches_without_steps = rows.iter().map(|r| r.launches_without_steps).sum();
            if rows.iter().any(|r| r.step_time.is_some() && !r.summary) {
                let timed = time_attempts_by_their_wall_clock(&mut rows);
                if timed > 0 {
                    refused.push(format!(
                        "{timed} attempt(s) logged no step time of their own (too short for their clock's resolution to time a step): each row timed by its attempt's wall-clock span over the steps in it"
                    ));
                }
                let mut steps = StepFilter::default();
                rows.retain_mut(|r| steps.keep(r));
            }
            let mut goodput = measure(&rows);
            run_notes(
                &mut goodput,
                launches_without_steps,
                refused,
                &sources,
                all - rows.len(),
            );
            RunGoodput {
                goodput,
                keys,
                wall_time_column,
                sources,
            }
        })
        .collect();
    Ok((key_names, measured))
}

/// Which rows of a run are steps, where its steps are timed: a row without a time is no step (an
/// evaluation row), nor is a launch's summary: its time is the gap around it, and a relaunch it marks
/// passes to the next row, as does one its step shows by going back (a relaunch's first row, untimed
/// because nothing of its launch came before it). The rows in log order, one at a time.
#[derive(Debug, Clone, Default)]
struct StepFilter {
    carried: bool,
    last_step: Option<f64>,
}

impl StepFilter {
    /// Whether `r` is a step (a relaunch passed on to it is marked on it).
    fn keep(&mut self, r: &mut Row) -> bool {
        let back = matches!((self.last_step, r.step), (Some(l), Some(s)) if s < l);
        // A relaunch's first row that stands for one step (LiBai's iteration 1 after iteration 86) is
        // that step: it starts its attempt, its own time unmeasured. One that stands for many (a line
        // every 200 steps) is left out as before.
        let first_step = back && !r.summary && r.span == 1.0 && r.wall_time.is_some();
        let step = (r.step_time.is_some() && !r.summary) || first_step;
        r.restart |= self.carried;
        self.carried = !step && (r.restart || back);
        if step || back {
            self.last_step = r.step.or(self.last_step);
        }
        step
    }
}

/// What a run's goodput says besides its figures: launches that logged no steps (counted before any
/// row was left out), the columns passed over as no clock, a trainer state's blind spot, the rows left
/// out as no steps.
fn run_notes(
    goodput: &mut Goodput,
    launches_without_steps: usize,
    refused: Vec<String>,
    sources: &[String],
    left_out: usize,
) {
    goodput.launches_without_steps = launches_without_steps;
    if launches_without_steps > 0 {
        goodput.notes.push(format!(
            "{launches_without_steps} launch(es) logged no training step (died at start-up, found no device, or were killed before a step): not attempts; their time is in the gap around them"
        ));
    }
    goodput.notes.extend(refused);
    if sources.iter().any(|s| s.ends_with(HF_TRAINER_STATE)) {
        goodput.notes.push(format!(
            "{HF_TRAINER_STATE} is reloaded from the checkpoint when a run resumes: it holds the kept steps only, so relaunches, wasted progress and time down cannot be seen in it"
        ));
    }
    if left_out > 0 {
        goodput.notes.push(format!(
            "{left_out} row(s) with no step time, or a summary's run-mean one, left out (evaluation rows, launches that logged no steps): not steps"
        ));
    }
}

/// The runs' goodput as a frame: the key columns (named `key_names`), then [`GOODPUT_COLUMNS`].
pub fn to_frame(key_names: &[String], runs: &[RunGoodput]) -> PolarsResult<DataFrame> {
    let mut columns: Vec<Column> = Vec::new();
    for (k, name) in key_names.iter().enumerate() {
        let values: Vec<Option<String>> = runs.iter().map(|r| r.keys[k].clone()).collect();
        columns.push(Column::new(name.into(), values));
    }
    let number = |f: &dyn Fn(&Goodput) -> Option<f64>| -> Vec<Option<f64>> {
        runs.iter().map(|r| f(&r.goodput)).collect()
    };
    let attempts: Vec<u32> = runs.iter().map(|r| r.goodput.attempts as u32).collect();
    columns.push(Column::new("attempts".into(), attempts));
    let idle: Vec<u32> = runs
        .iter()
        .map(|r| r.goodput.launches_without_steps as u32)
        .collect();
    columns.push(Column::new("launches_without_steps".into(), idle));
    type Getter = fn(&Goodput) -> Option<f64>;
    let numbers: [(&str, Getter); 19] = [
        ("steps_executed", |g| Some(g.steps_executed)),
        ("steps_kept", |g| Some(g.steps_kept)),
        ("steps_redone", |g| Some(g.steps_redone)),
        ("elapsed_s", |g| g.elapsed_s),
        ("productive_s", |g| g.productive_s),
        ("wasted_progress_s", |g| g.wasted_progress_s),
        ("recovery_s", |g| g.recovery_s),
        ("startup_s", |g| g.startup_s),
        ("pause_s", |g| g.pause_s),
        ("pause_evaluation_s", |g| g.pause_evaluation_s),
        ("pause_checkpoint_s", |g| g.pause_checkpoint_s),
        ("other_s", |g| g.other_s),
        ("goodput", |g| g.goodput),
        ("ideal_step_time_s", |g| g.ideal_step_time_s),
        ("mfu_productive", |g| g.mfu_productive),
        ("mfu_effective", |g| g.mfu_effective),
        ("device_hours_lost", |g| g.device_hours_lost),
        ("straggler_steps", |g| Some(g.straggler_steps)),
        ("straggler_s", |g| g.straggler_s),
    ];
    for (name, get) in numbers {
        columns.push(Column::new(name.into(), number(&get)));
    }
    let texts = |f: &dyn Fn(&RunGoodput) -> Option<String>| -> Vec<Option<String>> {
        runs.iter().map(f).collect()
    };
    columns.push(Column::new(
        "wall_time_column".into(),
        texts(&|r| r.wall_time_column.clone()),
    ));
    columns.push(Column::new(
        "notes".into(),
        texts(&|r| Some(r.goodput.notes.join("; "))),
    ));
    columns.push(Column::new(
        "source_files".into(),
        texts(&|r| Some(r.sources.join(";"))),
    ));
    DataFrame::new(runs.len(), columns)
}

/// Times the rows of an attempt that logged no step time at all (a launch of a few seconds, too short for
/// a clock of whole seconds to time its steps, so `mfu enrich` left them untimed) by the attempt's own
/// wall clock: its span from first row to last over the steps between them. Without it, those rows read
/// as evaluation rows and the attempt, its steps and the progress a later one threw away, vanish.
/// Attempts start at a restart mark or where the step goes back. Returns the attempts timed.
fn time_attempts_by_their_wall_clock(rows: &mut [Row]) -> usize {
    let mut scan = UntimedAttempts::default();
    let mut timed = Vec::new();
    for r in rows.iter() {
        timed.extend(scan.push(r));
    }
    timed.extend(scan.finish());
    for (attempt, per_step) in &timed {
        rows[attempt.clone()]
            .iter_mut()
            .for_each(|r| r.step_time = Some(*per_step));
    }
    timed.len()
}

/// The attempts [`time_attempts_by_their_wall_clock`] times, found row by row in log order: an attempt
/// starts at a restart mark or where the step goes back; one of two rows or more that logged no step
/// time (and is no summary) is timed by its wall-clock span over the steps in it.
#[derive(Debug, Clone, Default)]
struct UntimedAttempts {
    row: usize,
    last_step: Option<f64>,
    /// The attempt under way: its first row, whether any of its rows is timed (or a summary), and its
    /// first and last rows' (step, wall time).
    start: usize,
    timed: bool,
    first: Option<(f64, f64)>,
    last: Option<(f64, f64)>,
}

impl UntimedAttempts {
    /// The next row; where it starts an attempt, the attempt before it if that one is to be timed: its
    /// rows and the time a step.
    fn push(&mut self, r: &Row) -> Option<(std::ops::Range<usize>, f64)> {
        let i = self.row;
        self.row += 1;
        let back = matches!((self.last_step, r.step), (Some(l), Some(s)) if s < l);
        let mut ended = None;
        if i > 0 && (r.restart || back) {
            ended = self.ended(i);
            (self.start, self.timed, self.first, self.last) = (i, false, None, None);
        }
        self.last_step = r.step.or(self.last_step);
        self.timed |= r.step_time.is_some() || r.summary;
        if let Some(ends) = r.step.zip(r.wall_time) {
            self.first.get_or_insert(ends);
            self.last = Some(ends);
        }
        ended
    }

    /// After the last row: the last attempt, if it is to be timed.
    fn finish(&self) -> Option<(std::ops::Range<usize>, f64)> {
        self.ended(self.row)
    }

    fn ended(&self, end: usize) -> Option<(std::ops::Range<usize>, f64)> {
        if end - self.start < 2 || self.timed {
            return None;
        }
        let ((s0, w0), (s1, w1)) = (self.first?, self.last?);
        (s1 > s0 && w1 > w0).then(|| (self.start..end, (w1 - w0) / (s1 - s0)))
    }
}

/// A run's rows given one row behind, each with its span ([`Spans`]: a row's span needs the step of
/// the row after it), its FLOPs then multiplied by it.
#[derive(Debug, Clone, Default)]
struct SpanStream {
    spans: Spans,
    held: Option<Row>,
}

impl SpanStream {
    /// The next row; the row before it, its span worked out.
    fn push(&mut self, r: Row) -> Option<Row> {
        let after = r.step;
        self.held.replace(r).map(|held| self.spanned(held, after))
    }

    /// The last row, its span worked out.
    fn finish(&mut self) -> Option<Row> {
        self.held.take().map(|held| self.spanned(held, None))
    }

    fn spanned(&mut self, mut r: Row, after: Option<f64>) -> Row {
        let span = self.spans.next(r.step, after);
        r.span = span;
        r.flops = r.flops.map(|f| f * span);
        r
    }
}

/// Why a log whose numeric clock goes back too often is read whole.
const CLOCK_GOES_BACK: &str =
    "its wall-time column goes back between more than a tenth of its rows";

/// What a run's rows fold into: the first pass's survey, or the second's accounts.
enum RunFold<'w> {
    Survey(Survey),
    Accounts(Accounts<'w>),
}

/// One run of a console log folded in windows: its rows, as they come, through the stages
/// [`measure_runs`] puts a run's rows through (spans, attempts timed by their wall clock, rows that are
/// no step left out), into its survey or accounts.
struct RunStream<'w> {
    spans: SpanStream,
    untimed: UntimedAttempts,
    steps: StepFilter,
    rows: usize,
    kept: usize,
    launches_without_steps: usize,
    /// A row has a step time (and is no summary): the rows that are no step are left out.
    any_step: bool,
    /// An attempt logged no step time and would be timed by its wall clock.
    untimed_attempt: bool,
    fold: RunFold<'w>,
}

impl<'w> RunStream<'w> {
    fn new(usual_gap: Option<f64>, fold: RunFold<'w>) -> RunStream<'w> {
        RunStream {
            spans: SpanStream {
                spans: Spans::with_usual_gap(usual_gap),
                held: None,
            },
            untimed: UntimedAttempts::default(),
            steps: StepFilter::default(),
            rows: 0,
            kept: 0,
            launches_without_steps: 0,
            any_step: false,
            untimed_attempt: false,
            fold,
        }
    }

    fn push(&mut self, r: Row) {
        if let Some(row) = self.spans.push(r) {
            self.stage(row);
        }
    }

    /// The next row, its span already worked out (an input read whole).
    fn push_spanned(&mut self, r: Row) {
        self.stage(r);
    }

    /// Ends the run's rows (the row held for its span given); `Err` (why) where they were not weighed
    /// as reading them whole weighs them: no row has a step time (none are left out then), or an
    /// attempt logged none (it is timed by its wall clock, over all its rows).
    fn finish(&mut self) -> Result<(), String> {
        if let Some(row) = self.spans.finish() {
            self.stage(row);
        }
        self.untimed_attempt |= self.untimed.finish().is_some();
        if !self.any_step {
            return Err("a run has no step time: its rows are weighed as read whole".into());
        }
        if self.untimed_attempt {
            return Err(
                "an attempt logged no step time: it is timed by its wall clock, over all its rows"
                    .into(),
            );
        }
        Ok(())
    }

    /// What the first pass found, by which the second weighs the run's rows.
    fn weights(self) -> Result<Weights, String> {
        match self.fold {
            RunFold::Survey(survey) => survey
                .finish()
                .ok_or_else(|| "a run's rows are all left out as no steps".into()),
            RunFold::Accounts(_) => Err("the first pass surveys".into()),
        }
    }

    /// The run's goodput from the second pass, with its notes (`refused`: the columns passed over as
    /// no clock, and why).
    fn goodput(self, refused: Vec<String>, sources: &[String]) -> Result<Goodput, String> {
        let RunFold::Accounts(accounts) = self.fold else {
            return Err("the second pass weighs".into());
        };
        // A log that grew between the passes (a run still writing it) gives rows the survey did not
        // see.
        if !accounts.as_surveyed() {
            return Err("the log changed between the two passes (a run still writing it)".into());
        }
        let mut goodput = accounts.finish();
        let left_out = self.rows - self.kept;
        run_notes(
            &mut goodput,
            self.launches_without_steps,
            refused,
            sources,
            left_out,
        );
        Ok(goodput)
    }

    fn stage(&mut self, mut row: Row) {
        self.rows += 1;
        // Counted before rows are left out: a launch without steps noted on a row left out is still
        // one.
        self.launches_without_steps += row.launches_without_steps;
        self.any_step |= row.step_time.is_some() && !row.summary;
        self.untimed_attempt |= self.untimed.push(&row).is_some();
        if !self.steps.keep(&mut row) {
            return;
        }
        self.kept += 1;
        match &mut self.fold {
            RunFold::Survey(survey) => survey.push(&row),
            RunFold::Accounts(accounts) => accounts.push(&row),
        }
    }
}

/// One pass over a log's windows: its runs by key, in order of first appearance, and what each window
/// chose (the same as the first's, or the log is read whole).
struct WindowsPass<'w> {
    by: &'w [String],
    grouped: Option<(Vec<String>, GroupBy)>,
    index: HashMap<Vec<Option<String>>, usize>,
    order: Vec<Vec<Option<String>>>,
    runs: Vec<RunStream<'w>>,
    /// The first window's wall-time column and the columns it passed over (and why).
    wall: Option<(Option<String>, Vec<String>)>,
    /// A numeric wall-time column: how often it goes back between its values over the whole log (as
    /// [`wall_times`] judges a whole column), and its last value.
    numeric_wall: bool,
    backwards: Backwards,
    /// The second pass: each run's weights from the first, and its most common step gap.
    weights: Option<&'w [(Weights, Option<f64>)]>,
}

impl<'w> WindowsPass<'w> {
    fn new(by: &'w [String], weights: Option<&'w [(Weights, Option<f64>)]>) -> WindowsPass<'w> {
        WindowsPass {
            by,
            grouped: None,
            index: HashMap::new(),
            order: Vec::new(),
            runs: Vec::new(),
            wall: None,
            numeric_wall: false,
            backwards: Backwards::default(),
            weights,
        }
    }

    /// Folds one window's rows into their runs; stops where the window reads otherwise than the first
    /// (its clock chosen otherwise), or its runs may be launch folders to join (read whole).
    fn window(&mut self, display: &str, window: Window) -> Result<Fold, PipelineError> {
        let stop = |why: &str| Ok(Fold::Stop(why.to_string()));
        let loaded = window.loaded;
        if self.grouped.is_none() {
            let (names, group) = run_group(display, &loaded, self.by)?;
            // Runs keyed by run_id may be a parent's launch folders, joined only when read whole.
            if names == ["run_id"] {
                return stop(
                    "runs keyed by run_id may be launch folders, joined only when read whole",
                );
            }
            self.grouped = Some((names, group));
        }
        let Some((_, group)) = &self.grouped else {
            return stop("it has no rows");
        };
        let columns = table_columns(display, &loaded, group)?;
        let height = columns.height;
        let numeric_wall = columns.numeric_wall;
        let mut rows = InputRows::new(columns, &loaded, window.first_row, false);
        let chose = (rows.wall_column.clone(), rows.refused.clone());
        match &self.wall {
            None => {
                self.wall = Some(chose);
                self.numeric_wall = numeric_wall;
            }
            Some(first) if *first != chose || self.numeric_wall != numeric_wall => {
                return stop("a window picks its wall clock otherwise than the first");
            }
            Some(_) => {}
        }
        if self.numeric_wall {
            self.backwards.add(&rows.walls);
        }
        let mut current: Option<(usize, usize)> = None;
        for row in 0..height {
            let run = rows.columns.keys.run(row);
            let at = match current {
                Some((r, at)) if r == run => at,
                _ => {
                    let key = rows.columns.keys.key(row);
                    let at = match self.index.get(key) {
                        Some(at) => *at,
                        None => {
                            let at = self.runs.len();
                            let fold = match self.weights {
                                None => (None, RunFold::Survey(Survey::default())),
                                // A run the first pass did not see: not the same windows.
                                Some(weights) => match weights.get(at) {
                                    Some((w, gap)) => (*gap, RunFold::Accounts(Accounts::new(w))),
                                    None => {
                                        return stop("the second pass met a run the first did not")
                                    }
                                },
                            };
                            self.runs.push(RunStream::new(fold.0, fold.1));
                            self.order.push(key.clone());
                            self.index.insert(key.clone(), at);
                            at
                        }
                    };
                    current = Some((run, at));
                    at
                }
            };
            let r = rows.row(row);
            self.runs[at].push(r);
        }
        Ok(Fold::On)
    }

    /// Ends every run; `Err` (why) where a run's rows needed what the windows do not read as the whole
    /// log reads (the log is then read whole): a step time on no row, an attempt to time by its wall
    /// clock, a span that the run's most common gap decides, a numeric clock that goes back too often.
    fn finish(&mut self) -> Result<(), String> {
        for run in &mut self.runs {
            run.finish()?;
        }
        if self.numeric_wall && self.backwards.too_often() {
            return Err(CLOCK_GOES_BACK.into());
        }
        if !self.runs.iter().all(|run| run.spans.spans.guesses_hold()) {
            return Err(SPAN_BY_USUAL_GAP.into());
        }
        Ok(())
    }
}

/// What goodput reads of one input of a run read as several ([`goodput_several`]), from its rows or
/// its first window: where it stands among the run's files and what it says of its clock.
struct ChunkFacts {
    key: Vec<Option<String>>,
    /// Its first wall time (files are put in this order); `None` where its first rows have none.
    first_wall: Option<f64>,
    wall_column: Option<String>,
    refused: Vec<String>,
    display: String,
}

/// The facts of an input (or its first window) `l`, called `display`; `None` where its rows are not
/// one run by input (a run_id column), or its step times are a run clock differenced (a W&B run).
fn chunk_facts(display: &str, l: &Loaded) -> Result<Option<ChunkFacts>, PipelineError> {
    if l.column_for("run_id").is_some() {
        return Ok(None);
    }
    let columns = table_columns(display, l, &GroupBy::File)?;
    let rows = InputRows::new(columns, l, 0, false);
    if rows.clock_timed {
        return Ok(None);
    }
    Ok(Some(ChunkFacts {
        key: vec![Some(l.argument.clone())],
        first_wall: rows.walls.iter().flatten().next().copied(),
        wall_column: rows.wall_column.clone(),
        refused: rows.refused.clone(),
        display: display.to_string(),
    }))
}

/// A numeric wall-time column's pairs of rows and how many of them go back, over a whole input read
/// window by window (as [`wall_times`] judges a whole column).
#[derive(Default)]
struct Backwards {
    back: usize,
    pairs: usize,
    last: Option<f64>,
}

impl Backwards {
    fn add(&mut self, walls: &[Option<f64>]) {
        for w in walls.iter().flatten() {
            if let Some(last) = self.last {
                self.pairs += 1;
                self.back += usize::from(*w < last);
            }
            self.last = Some(*w);
        }
    }

    fn too_often(&self) -> bool {
        self.pairs > 0 && self.back * 10 > self.pairs
    }
}

/// What feeding an input gave: a log's most common step gap (its spans' own) and what its reading in
/// windows said.
type Fed = (Option<f64>, Option<WindowsRead>);

/// Feeds one input's rows (`part`, of facts `facts`) into its run's `stream`, as [`measure_runs`]
/// concatenates a run's files: its first row marked a relaunch where it is not the run's first file
/// (`later`), its wall times dropped where the run's clock has no date (`undated`). Its spans are its
/// own: worked out here for a log folded in windows (`usual_gap` known in the second pass), and that
/// log's most common gap given back. `Err` (why) where it does not read as reading it whole does.
#[allow(clippy::too_many_arguments)]
fn feed_chunk(
    plan: &Plan,
    observer: &dyn Observer,
    part: &Part,
    facts: &ChunkFacts,
    stream: &mut RunStream,
    later: bool,
    undated: bool,
    usual_gap: Option<f64>,
) -> Result<Result<Fed, String>, PipelineError> {
    let mut first = true;
    let mut prepare = |mut r: Row| {
        if first && later {
            r.restart = true;
        }
        first = false;
        if undated {
            r.wall_time = None;
        }
        r
    };
    match part {
        Part::Loaded(display, l) => {
            let columns = table_columns(display, l, &GroupBy::File)?;
            let height = columns.height;
            let mut rows = InputRows::new(columns, l, 0, true);
            for row in 0..height {
                let r = prepare(rows.row(row));
                stream.push_spanned(r);
            }
            Ok(Ok((None, None)))
        }
        Part::Windows(input) => {
            stream.spans = SpanStream {
                spans: Spans::with_usual_gap(usual_gap),
                held: None,
            };
            let mut backwards = Backwards::default();
            let mut numeric: Option<bool> = None;
            let read = plan.fold_windows(input, observer, &mut |window| {
                let columns = table_columns(&facts.display, &window.loaded, &GroupBy::File)?;
                let height = columns.height;
                let is_numeric = columns.numeric_wall;
                let mut rows = InputRows::new(columns, &window.loaded, window.first_row, false);
                if (&rows.wall_column, &rows.refused) != (&facts.wall_column, &facts.refused)
                    || *numeric.get_or_insert(is_numeric) != is_numeric
                {
                    return Ok(Fold::Stop(
                        "a window picks its wall clock otherwise than the first".into(),
                    ));
                }
                if is_numeric {
                    backwards.add(&rows.walls);
                }
                for row in 0..height {
                    let r = prepare(rows.row(row));
                    stream.push(r);
                }
                Ok(Fold::On)
            })?;
            let read = match read {
                Ok(read) => read,
                Err(why) => return Ok(Err(why.unwrap_or_else(|| "it is read whole".into()))),
            };
            if let Some(row) = stream.spans.finish() {
                stream.stage(row);
            }
            if backwards.too_often() {
                return Ok(Err(CLOCK_GOES_BACK.into()));
            }
            if !stream.spans.spans.guesses_hold() {
                return Ok(Err(SPAN_BY_USUAL_GAP.into()));
            }
            Ok(Ok((stream.spans.spans.usual_gap(), Some(read))))
        }
    }
}

/// The goodput of several inputs, each a run's file (runs by input: no `--by`, no run_id column), the
/// large console logs among them folded window by window, twice: the run's files in order of their
/// first wall time, each after the first starting an attempt, as [`goodput_runs`] reads them whole.
fn goodput_several(
    plan: &Plan,
    parts: Vec<Part>,
    observer: &dyn Observer,
    by: &[String],
) -> Result<FoldedRuns<RunGoodput>, PipelineError> {
    let whole = |why: &str| Ok(Err(Some(why.to_string())));
    if !by.is_empty() {
        return whole("goodput folds several inputs where each is a run's file (no --by)");
    }
    // Each input's facts: from its rows, or from a log's first window.
    let mut facts: Vec<ChunkFacts> = Vec::with_capacity(parts.len());
    for part in &parts {
        let found = match part {
            Part::Loaded(display, l) => chunk_facts(display, l)?,
            Part::Windows(input) => {
                let (mut found, mut seen) = (None, false);
                let stopped = plan.fold_windows(input, observer, &mut |window| {
                    seen = true;
                    found = chunk_facts(&input.display, &window.loaded)?;
                    Ok(Fold::Stop(
                        "its first window is all goodput needs to order it".into(),
                    ))
                })?;
                // Stopped after its first window, by design; before it, the log is read whole.
                if let (false, Err(Some(why))) = (seen, stopped) {
                    return whole(&why);
                }
                found.filter(|f| f.first_wall.is_some())
            }
        };
        match found {
            Some(found) => facts.push(found),
            None => {
                return whole(
                    "an input is not one run's file with a wall time in its first rows (a run_id column, a run clock, no clock)",
                )
            }
        }
    }
    // The runs in order of first appearance, each its files in order of their first wall time.
    let mut order: Vec<Vec<Option<String>>> = Vec::new();
    let mut files: Vec<Vec<usize>> = Vec::new();
    for (i, f) in facts.iter().enumerate() {
        match order.iter().position(|k| *k == f.key) {
            Some(at) => files[at].push(i),
            None => {
                order.push(f.key.clone());
                files.push(vec![i]);
            }
        }
    }
    for run in &mut files {
        run.sort_by(|a, b| {
            let (x, y) = (facts[*a].first_wall, facts[*b].first_wall);
            match (x, y) {
                (Some(x), Some(y)) => x.total_cmp(&y),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (None, None) => std::cmp::Ordering::Equal,
            }
        });
    }
    // Each run's clock column (its first input's, in input order), and whether it has no date.
    let clocks: Vec<(Option<String>, bool)> = files
        .iter()
        .map(|run| {
            let mut inputs = run.clone();
            inputs.sort_unstable();
            let column = inputs.iter().find_map(|i| facts[*i].wall_column.clone());
            let undated = column.as_deref() == Some(LOG_CLOCK_COLUMN) && run.len() > 1;
            (column, undated)
        })
        .collect();
    // First pass: each run surveyed, each log's most common step gap found.
    let mut gaps: Vec<Option<f64>> = vec![None; parts.len()];
    let mut weights: Vec<Weights> = Vec::with_capacity(files.len());
    // A run's files fed into `stream` in order, each log's spans by its gap of `gaps` (known in the
    // second pass): what each gave, by input.
    let feed_run = |stream: &mut RunStream, run: &[usize], undated: bool, gaps: Option<&[_]>| {
        let mut fed = Vec::with_capacity(run.len());
        for (k, &i) in run.iter().enumerate() {
            let gap = gaps.and_then(|g: &[Option<f64>]| g[i]);
            match feed_chunk(
                plan,
                observer,
                &parts[i],
                &facts[i],
                stream,
                k > 0,
                undated,
                gap,
            )? {
                Ok(one) => fed.push((i, one)),
                Err(why) => return Ok(Err(why)),
            }
        }
        Ok::<_, PipelineError>(Ok(fed))
    };
    for (run, (_, undated)) in files.iter().zip(&clocks) {
        let mut stream = RunStream::new(None, RunFold::Survey(Survey::default()));
        match feed_run(&mut stream, run, *undated, None)? {
            Ok(fed) => fed.into_iter().for_each(|(i, (gap, _))| gaps[i] = gap),
            Err(why) => return whole(&why),
        }
        match stream.finish().and_then(|()| stream.weights()) {
            Ok(w) => weights.push(w),
            Err(why) => return whole(&why),
        }
    }
    // Second pass: each row weighed.
    let mut reads: Vec<Option<WindowsRead>> = parts.iter().map(|_| None).collect();
    let mut measured = Vec::with_capacity(files.len());
    for (((run, (wall_time_column, undated)), keys), w) in
        files.iter().zip(clocks).zip(order).zip(&weights)
    {
        let mut stream = RunStream::new(None, RunFold::Accounts(Accounts::new(w)));
        match feed_run(&mut stream, run, undated, Some(&gaps))? {
            Ok(fed) => fed.into_iter().for_each(|(i, (_, read))| reads[i] = read),
            Err(why) => return whole(&why),
        }
        // The notes and sources in input order, as the run's rows were gathered.
        let mut inputs = run.clone();
        inputs.sort_unstable();
        let mut refused: Vec<String> = Vec::new();
        let mut sources: Vec<String> = Vec::new();
        for &i in &inputs {
            for note in &facts[i].refused {
                if !refused.contains(note) {
                    refused.push(note.clone());
                }
            }
            if !sources.contains(&facts[i].display) {
                sources.push(facts[i].display.clone());
            }
        }
        if undated {
            refused.push(format!(
                "the lines' timestamps have no date ('{LOG_CLOCK_COLUMN}', seconds since each file's first line): the run's {} files cannot be put on one clock",
                run.len()
            ));
        }
        if let Err(why) = stream.finish() {
            return whole(&why);
        }
        let goodput = match stream.goodput(refused, &sources) {
            Ok(goodput) => goodput,
            Err(why) => return whole(&why),
        };
        measured.push(RunGoodput {
            keys,
            goodput,
            wall_time_column,
            sources,
        });
    }
    Ok(Ok((
        (vec!["input".into()], measured),
        reads.into_iter().flatten().collect(),
    )))
}

/// The goodput of `parts`, the large console logs among them folded window by window: one log alone
/// ([`goodput_windows`]: its runs as its rows key them), or several inputs each a run's file
/// ([`goodput_several`]); `Err` (why) where they are to be read whole.
pub fn goodput_parts(
    plan: &Plan,
    parts: Vec<Part>,
    observer: &dyn Observer,
    by: &[String],
) -> Result<FoldedRuns<RunGoodput>, PipelineError> {
    match parts.as_slice() {
        [Part::Windows(input)] => goodput_windows(plan, input, observer, by),
        _ => goodput_several(plan, parts, observer, by),
    }
}

/// The goodput of the one input `input` where it is a console log read in windows: its windows read
/// twice, first to survey each run (where its attempts start, its step times' order statistics, its
/// devices), then to weigh each row, none of them held; `Err` where it is to be read whole, and why
/// (see [`WindowsPass::finish`]). The same goodput as [`goodput_runs`] of the log read whole.
pub fn goodput_windows(
    plan: &Plan,
    input: &Input,
    observer: &dyn Observer,
    by: &[String],
) -> Result<FoldedRuns<RunGoodput>, PipelineError> {
    let display = input.display.clone();
    let mut survey = WindowsPass::new(by, None);
    let whole = |why: String| Ok(Err(Some(why)));
    if let Err(why) = plan.fold_windows(input, observer, &mut |w| survey.window(&display, w))? {
        return Ok(Err(why));
    }
    if let Err(why) = survey.finish() {
        return whole(why);
    }
    let weights = std::mem::take(&mut survey.runs)
        .into_iter()
        .map(|run| {
            let gap = run.spans.spans.usual_gap();
            run.weights().map(|w| (w, gap))
        })
        .collect::<Result<Vec<_>, String>>();
    let weights = match weights {
        Ok(weights) => weights,
        Err(why) => return whole(why),
    };
    let mut accounts = WindowsPass::new(by, Some(&weights));
    let read = match plan.fold_windows(input, observer, &mut |w| accounts.window(&display, w))? {
        Ok(read) => read,
        Err(why) => return Ok(Err(why)),
    };
    if let Err(why) = accounts.finish() {
        return whole(why);
    }
    if accounts.order != survey.order {
        return whole("the log changed between the two passes (a run still writing it)".into());
    }
    let (Some((mut key_names, _)), Some((wall_time_column, refused))) =
        (accounts.grouped.take(), accounts.wall.take())
    else {
        return whole("it has no rows".into());
    };
    if key_names == ["source_file"] {
        key_names = vec!["input".into()];
    }
    let mut measured = Vec::with_capacity(accounts.runs.len());
    for (keys, run) in accounts.order.into_iter().zip(accounts.runs) {
        let sources = vec![display.clone()];
        match run.goodput(refused.clone(), &sources) {
            Ok(goodput) => measured.push(RunGoodput {
                keys,
                goodput,
                wall_time_column: wall_time_column.clone(),
                sources,
            }),
            Err(why) => return whole(why),
        }
    }
    Ok(Ok(((key_names, measured), vec![read])))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wall_times_from_seconds_milliseconds_datetimes_and_text() {
        let df = df!("step" => [1, 2], "_timestamp" => [1.7e9, 1.7e9 + 2.0]).unwrap();
        assert_eq!(
            wall_times(&df, None).unwrap().found,
            Some(("_timestamp".into(), vec![Some(1.7e9), Some(1.7e9 + 2.0)]))
        );
        let df = df!("Time" => [1.7e12, 1.7e12 + 500.0]).unwrap();
        assert_eq!(normalised("Wall time"), "wall_time");
        assert_eq!(normalised("_timestamp"), "timestamp");
        assert_eq!(
            wall_times(&df, None).unwrap().found.unwrap().1,
            vec![Some(1.7e9), Some(1.7e9 + 0.5)]
        );
        let df = df!("timestamp" => ["2026-01-02 03:04:05", "2026-01-02 03:04:07.5"]).unwrap();
        let (_, values) = wall_times(&df, None).unwrap().found.unwrap();
        assert_eq!(values[1].unwrap() - values[0].unwrap(), 2.5);
        let df = df!("step" => [1, 2]).unwrap();
        assert_eq!(wall_times(&df, None).unwrap().found, None);
    }

    #[test]
    fn a_duration_column_is_no_clock() {
        // `time` holding each step's seconds: it goes back half the time.
        let df = df!("step" => [1, 2, 3, 4, 5], "time" => [2.1, 1.9, 2.0, 1.8, 2.2]).unwrap();
        let w = wall_times(&df, None).unwrap();
        assert_eq!(w.found, None);
        assert!(w.refused[0].contains("durations, not a clock"), "{w:?}");
        // The step times' own column is none either, however it moves; a clock after it is taken.
        let df = df!("time" => [1.0, 2.0, 3.0], "datetime" => [1.7e9, 1.7e9 + 2.0, 1.7e9 + 4.0])
            .unwrap();
        let w = wall_times(&df, Some("time")).unwrap();
        assert_eq!(w.found.as_ref().unwrap().0, "datetime");
        assert!(w.refused[0].contains("the step times' column"), "{w:?}");
    }
}
