//! The candidates stage: every way the chosen rows and the log's facts could give a step's time, each
//! as a *clock*, one value a row in seconds a step, named for `-v`. The evidence stage
//! ([`super::evidence`]) compares them and chooses; nothing here decides.
//!
//! - **Covering clocks** account for every second between two lines: the lines' timestamps
//!   (`wall_time` or `log_clock_s`) and running totals of time (`elapsed`, tqdm's elapsed), each
//!   differenced over the steps between the lines.
//! - **Logged times** (`step_time`, `time`, `iter time`), read as printed and in the other meanings a
//!   logged figure can have: the total of the steps since the line before, milliseconds, a running
//!   total, a rate. Only evidence makes one of those meanings the step time.
//! - **Rates of steps** (`ups`, `batches_per_sec`, `it/s`): a step time is their inverse.
//! - **Rates of tokens or samples** over a count a step (the line's own count, the configuration's
//!   batch): a step time once the rate's scope is known, so one clock per scope, the vocabulary's
//!   claim first.

use std::borrow::Cow;

use super::rows::{Column, Table, LOG_CLOCK, WALL_TIME};

/// What a clock's values stand for, and so how far evidence can be taken from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ClockKind {
    /// A running total of time in a column, differenced.
    Elapsed,
    /// A logged time read in one of its meanings.
    Logged(Meaning),
    /// The inverse of a rate of steps.
    StepsRate,
    /// A count a step over a rate of tokens or samples of the given scope.
    CountRate(Scope),
}

/// The meanings a logged time can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Meaning {
    /// The step's time, as printed (in the unit its name or its values state).
    AsPrinted,
    /// The time of the steps since the line before (`Time 263.47s` over 1,000 updates).
    Interval,
    /// Milliseconds though nothing says so.
    Milliseconds,
    /// A running total of time, differenced.
    Total,
    /// A rate (steps a second) under a name that sounds like a time.
    Rate,
}

/// The scope of a rate of tokens or samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Scope {
    Global,
    PerDevice,
}

impl Scope {
    pub(super) fn other(self) -> Scope {
        match self {
            Scope::Global => Scope::PerDevice,
            Scope::PerDevice => Scope::Global,
        }
    }

    pub(super) fn words(self) -> &'static str {
        match self {
            Scope::Global => "all devices' rate",
            Scope::PerDevice => "one device's rate",
        }
    }
}

/// One way of timing the rows: seconds a step at each row (NaN where it gives none).
#[derive(Debug, Clone)]
pub(super) struct Clock {
    /// How it is made, for `-v` (`'iter' (s)`, `tokens a step (32768) / ('tps' x 8 devices)`).
    pub(super) name: String,
    pub(super) kind: ClockKind,
    /// The column it reads (a rate's, a logged time's), to say which column's meaning evidence chose.
    pub(super) column: Option<usize>,
    pub(super) values: Vec<f64>,
}

/// The skeleton of the rows that clocks need: each row's step, its launch, its segment, and the steps
/// since the row before in the same segment.
#[derive(Debug, Clone)]
pub(super) struct Steps {
    pub(super) step: Vec<f64>,
    /// The index of each row's launch: a new one where the step counter goes back or does not move
    /// (unless an epoch moves on with it), or after a restart line.
    pub(super) launch: Vec<usize>,
    /// The index of each row's segment of steps that follow one another: a new one at every launch,
    /// and where an epoch's counter restarts.
    pub(super) segment: Vec<usize>,
    /// Steps since the row before in the same segment (NaN for a segment's first row).
    pub(super) delta: Vec<f64>,
}

impl Steps {
    /// The steps of `table`'s rows from its step column (`None`: no step column), a launch starting
    /// at each row of `restarts`; `epoch` a column whose moving on where the counter goes back makes
    /// that a new epoch, not a new launch.
    pub(super) fn of(
        table: &Table,
        step: Option<usize>,
        restarts: &[usize],
        epoch: Option<usize>,
    ) -> Steps {
        let n = table.height;
        let step: Vec<f64> = (0..n)
            .map(|row| step.and_then(|c| table.number(c, row)).unwrap_or(f64::NAN))
            .collect();
        let epoch = epoch.map(|c| values(table, c));
        let epoch_at = |row: usize| epoch.as_ref().map_or(f64::NAN, |e| e[row]);
        let (mut launch, mut segment) = (Vec::with_capacity(n), Vec::with_capacity(n));
        let mut delta = Vec::with_capacity(n);
        let (mut current, mut current_segment) = (0, 0);
        for row in 0..n {
            let before = row.checked_sub(1).map(|b| step[b]);
            let goes_on = before.is_some_and(|b| step[row] > b) && !restarts.contains(&row);
            if row > 0 && !goes_on {
                current_segment += 1;
                let next_epoch = epoch_at(row) > epoch_at(row - 1) && !restarts.contains(&row);
                if !next_epoch {
                    current += 1;
                }
            }
            launch.push(current);
            segment.push(current_segment);
            delta.push(if goes_on {
                step[row] - before.unwrap_or(f64::NAN)
            } else {
                f64::NAN
            });
        }
        Steps {
            step,
            launch,
            segment,
            delta,
        }
    }

    /// Whether every step moves by one between lines (each line is one step).
    pub(super) fn one_by_one(&self) -> bool {
        self.delta.iter().all(|d| d.is_nan() || *d == 1.0)
    }
}

/// A column's values in seconds (`scale` from its unit), NaN where missing, zero or negative.
pub(super) fn seconds(table: &Table, column: usize, scale: f64) -> Vec<f64> {
    (0..table.height)
        .map(|row| {
            table
                .number(column, row)
                .map(|v| v * scale)
                .filter(|s| s.is_finite() && *s > 0.0)
                .unwrap_or(f64::NAN)
        })
        .collect()
}

/// A column's values as printed, NaN where missing (a running total's, a timestamp's): the table's own
/// where the column holds numbers (they are stored so), not a copy.
pub(super) fn values(table: &Table, column: usize) -> Cow<'_, [f64]> {
    match &table.columns[column] {
        Column::Numbers { values, .. } => Cow::Borrowed(values),
        Column::Text(_) => Cow::Owned(vec![f64::NAN; table.height]),
    }
}

/// A running total at each row differenced over the steps since the row before (NaN where it did not
/// grow or the launch starts).
pub(super) fn differenced(totals: &[f64], steps: &Steps) -> Vec<f64> {
    (0..totals.len())
        .map(|row| {
            let d = steps.delta[row];
            if d.is_nan() || row == 0 {
                return f64::NAN;
            }
            let grew = totals[row] - totals[row - 1];
            if grew > 0.0 {
                grew / d
            } else {
                f64::NAN
            }
        })
        .collect()
}

/// The steps each row's running mean is over: the counter within the epoch from its first value
/// (`counter` 0-based or 1-based, as its smallest value says), else the steps since the launch began
/// (the launch's first step less the steps between its first two lines).
pub(super) fn counts_so_far(table: &Table, counter: Option<usize>, steps: &Steps) -> Vec<f64> {
    if let Some(c) = counter {
        let b = values(table, c);
        let base = if b.contains(&0.0) { 0.0 } else { 1.0 };
        return b.iter().map(|v| v - base + 1.0).collect();
    }
    let n = steps.step.len();
    let mut counts = vec![f64::NAN; n];
    let mut row = 0;
    while row < n {
        let segment = steps.segment[row];
        let end = (row..n).find(|r| steps.segment[*r] != segment).unwrap_or(n);
        let first = steps.step[row];
        let delta = steps.delta[row + 1..end]
            .iter()
            .copied()
            .find(|d| d.is_finite())
            .unwrap_or(1.0);
        let origin = first - delta.min(first);
        for (count, step) in counts[row..end].iter_mut().zip(&steps.step[row..end]) {
            *count = step - origin;
        }
        row = end;
    }
    counts
}

/// The lines' own clock, as a column of the table: the timestamps with a date, else those without.
pub(super) fn timestamps(table: &Table) -> Option<(usize, &'static str)> {
    [WALL_TIME, LOG_CLOCK]
        .into_iter()
        .find_map(|name| table.index(name).map(|c| (c, name)))
}

/// The clocks a logged time column gives, one for each meaning: its values in seconds (`scale` from
/// the unit its name or values state; `unit_stated` whether either states one).
pub(super) fn logged_clocks(
    table: &Table,
    column: usize,
    scale: f64,
    unit_stated: bool,
    steps: &Steps,
) -> Vec<Clock> {
    let name = &table.names[column];
    let printed = seconds(table, column, scale);
    let mut clocks = Vec::new();
    if !steps.one_by_one() {
        clocks.push(Clock {
            name: format!("'{name}' over the steps since the line before"),
            kind: ClockKind::Logged(Meaning::Interval),
            column: Some(column),
            values: printed
                .iter()
                .zip(&steps.delta)
                .map(|(v, d)| v / d)
                .collect(),
        });
    }
    if !unit_stated {
        clocks.push(Clock {
            name: format!("'{name}' in milliseconds"),
            kind: ClockKind::Logged(Meaning::Milliseconds),
            column: Some(column),
            values: printed.iter().map(|v| v / 1e3).collect(),
        });
    }
    clocks.push(Clock {
        name: format!("'{name}' as a running total, differenced"),
        kind: ClockKind::Logged(Meaning::Total),
        column: Some(column),
        values: differenced(&printed, steps),
    });
    // A value written with a time unit is no rate.
    if !unit_stated {
        clocks.push(Clock {
            name: format!("1 / '{name}' (a rate of steps)"),
            kind: ClockKind::Logged(Meaning::Rate),
            column: Some(column),
            values: printed.iter().map(|v| 1.0 / v).collect(),
        });
    }
    clocks.insert(
        0,
        Clock {
            name: format!("'{name}'{}", if scale == 1.0 { " (s)" } else { "" }),
            kind: ClockKind::Logged(Meaning::AsPrinted),
            column: Some(column),
            values: printed,
        },
    );
    clocks
}

/// The step of each row where the family's counter restarts every epoch (`Epoch: [3] [ 50/1251]`,
/// `Train: 2 [5000/10009]`, `Epoch [2][500/14659]`): the epoch a row is in, from the column whose value
/// moves exactly where the counter goes back, times the counter's total `N`, plus the counter. Epochs
/// counted from 0 where one is 0, else from 1. Where the total is not printed (MMDetection's JSON
/// lines, MXNet's `Epoch[2] Batch [100-120]`), `N` is the largest count logged in an epoch: at most one
/// logging interval short of the epoch's length, so the steps keep their order across epochs (a new
/// epoch is not a relaunch) while each is off by less than an interval an epoch. `None` where the
/// counter never goes back or no column moves with it. Gives the steps and the words that say how.
pub(super) fn global_step(table: &Table, step: usize) -> Option<GlobalStep> {
    let counter = values(table, step);
    let printed = table
        .totals
        .iter()
        .find(|(c, _)| *c == step)
        .map(|(_, n)| *n);
    let back = |r: usize| counter[r] < counter[r - 1];
    let n = table.height;
    if !(1..n).any(|r| counter[r].is_finite() && counter[r - 1].is_finite() && back(r)) {
        return None;
    }
    let whole = |v: &[f64]| v.iter().filter(|x| x.is_finite()).all(|x| x.fract() == 0.0);
    // An epoch is named so (`Epoch: [3]`), or printed as a counter of its own (`Train: [0/300]`), or
    // is the value the bracketed counter follows (timm's `Train: 1 [5000/10009 ( 50%)]`).
    let after = table.names[step] == super::pairs::COUNTER && step > 0;
    let mut candidates: Vec<usize> = (0..table.names.len())
        .filter(|&c| {
            c != step
                && matches!(table.columns[c], Column::Numbers { .. })
                && (table.names[c].to_ascii_lowercase().contains("epoch")
                    || table.totals.iter().any(|(t, _)| *t == c)
                    || (after && c == step - 1))
        })
        .collect();
    // Columns named for epochs first.
    candidates.sort_by_key(|&c| !table.names[c].to_ascii_lowercase().contains("epoch"));
    let epoch = candidates.into_iter().find(|&c| {
        let e = values(table, c);
        if !whole(&e) {
            return false;
        }
        let (mut agree, mut seen, mut moved) = (0usize, 0usize, 0usize);
        for r in 1..n {
            let defined = [counter[r], counter[r - 1], e[r], e[r - 1]]
                .iter()
                .all(|v| v.is_finite());
            if !defined {
                continue;
            }
            seen += 1;
            let changed = e[r] != e[r - 1];
            agree += usize::from(changed == back(r));
            moved += usize::from(back(r) && e[r] > e[r - 1]);
        }
        moved > 0 && agree * 20 >= seen * 19
    })?;
    let e = values(table, epoch);
    let base = if e.contains(&0.0) { 0.0 } else { 1.0 };
    let largest = counter
        .iter()
        .copied()
        .filter(|v| v.is_finite())
        .fold(f64::NAN, f64::max);
    let (per_epoch, total) = match printed {
        Some(n) => (n, String::new()),
        None if largest > 0.0 => (
            largest,
            format!(
                " (no total printed: {largest}, the largest '{}' logged, stands for an epoch's length)",
                table.names[step]
            ),
        ),
        None => return None,
    };
    Some(GlobalStep {
        epoch: table.names[epoch].clone(),
        base,
        per_epoch,
        how: format!(
            "step = ('{}'{}) x {per_epoch} + '{}': the counter restarts every epoch{total}",
            table.names[epoch],
            if base == 1.0 { " - 1" } else { "" },
            table.names[step]
        ),
    })
}

/// How [`global_step`] makes a counter that restarts every epoch global: decided over the rows once,
/// then applied to them (or, in a log read in windows, to each window's).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct GlobalStep {
    /// The column of the epoch.
    pub(super) epoch: String,
    /// The first epoch's number (0 or 1).
    pub(super) base: f64,
    /// The counter's total in an epoch.
    pub(super) per_epoch: f64,
    /// What it is, for `-v`.
    pub(super) how: String,
}

impl GlobalStep {
    /// Each row's step from the counter in column `step`; `None` where `table` has no epoch column.
    pub(super) fn values(&self, table: &Table, step: usize) -> Option<Vec<f64>> {
        let e = values(table, table.index(&self.epoch)?);
        let counter = values(table, step);
        Some(
            (0..table.height)
                .map(|r| (e[r] - self.base) * self.per_epoch + counter[r])
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(columns: &[(&str, &[f64])]) -> Table {
        Table {
            height: columns[0].1.len(),
            names: columns.iter().map(|(n, _)| n.to_string()).collect(),
            columns: columns
                .iter()
                .map(|(_, v)| Column::Numbers {
                    values: v.to_vec(),
                    integer: false,
                })
                .collect(),
            totals: Vec::new(),
        }
    }

    #[test]
    fn a_counter_that_restarts_each_epoch_is_made_global_with_or_without_its_total() {
        // MXNet's `Epoch[0] Batch [20-40]`: no total printed; the largest count logged (60) stands in.
        let mut t = table(&[
            ("Epoch", &[0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 2.0]),
            ("Batch", &[20.0, 40.0, 60.0, 20.0, 40.0, 60.0, 20.0]),
        ]);
        let g = global_step(&t, 1).unwrap();
        let (steps, how) = (g.values(&t, 1).unwrap(), g.how);
        assert_eq!(steps, [20.0, 40.0, 60.0, 80.0, 100.0, 120.0, 140.0]);
        assert!(how.contains("no total printed: 60"), "{how}");
        // With the total printed (`[20/64]`), the total, not the largest count.
        t.totals.push((1, 64.0));
        let g = global_step(&t, 1).unwrap();
        let (steps, how) = (g.values(&t, 1).unwrap(), g.how);
        assert_eq!(steps[3], 64.0 + 20.0);
        assert!(!how.contains("no total"), "{how}");
        // A counter that goes back while the epoch stays is a relaunch, not an epoch: no global step.
        let t = table(&[
            ("Epoch", &[0.0, 0.0, 0.0, 0.0, 0.0]),
            ("Batch", &[20.0, 40.0, 60.0, 20.0, 40.0]),
        ]);
        assert!(global_step(&t, 1).is_none());
    }

    #[test]
    fn launches_start_where_the_counter_goes_back_or_a_restart_line_is() {
        let t = table(&[("step", &[10.0, 20.0, 30.0, 10.0, 20.0, 30.0, 40.0])]);
        let s = Steps::of(&t, Some(0), &[5], None);
        assert_eq!(s.launch, [0, 0, 0, 1, 1, 2, 2]);
        assert_eq!(s.segment, s.launch);
        assert!(s.delta[0].is_nan() && s.delta[3].is_nan() && s.delta[5].is_nan());
        assert_eq!((s.delta[1], s.delta[6]), (10.0, 10.0));
        assert!(!s.one_by_one());
        // An epoch that moves on where the counter goes back: a new segment, the same launch.
        let t = table(&[
            ("batch", &[10.0, 20.0, 10.0, 20.0, 10.0]),
            ("epoch", &[0.0, 0.0, 1.0, 1.0, 0.0]),
        ]);
        let s = Steps::of(&t, Some(0), &[], Some(1));
        assert_eq!(s.segment, [0, 0, 1, 1, 2]);
        assert_eq!(s.launch, [0, 0, 0, 0, 1]);
    }

    #[test]
    fn a_logged_time_in_each_of_its_meanings() {
        let t = table(&[("step", &[10.0, 20.0, 30.0]), ("time", &[5.0, 10.0, 15.0])]);
        let s = Steps::of(&t, Some(0), &[], None);
        let clocks = logged_clocks(&t, 1, 1.0, false, &s);
        let of = |m: Meaning| {
            clocks
                .iter()
                .find(|c| c.kind == ClockKind::Logged(m))
                .unwrap()
                .values
                .clone()
        };
        assert_eq!(of(Meaning::AsPrinted), [5.0, 10.0, 15.0]);
        assert_eq!(&of(Meaning::Interval)[1..], [1.0, 1.5]);
        assert_eq!(of(Meaning::Milliseconds), [0.005, 0.01, 0.015]);
        assert_eq!(&of(Meaning::Total)[1..], [0.5, 0.5]);
        assert_eq!(of(Meaning::Rate)[0], 0.2);
    }
}
