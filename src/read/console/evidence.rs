//! The evidence stage: the clocks of the candidates stage ([`super::candidates`]) checked against each
//! other before any becomes the step time.
//!
//! A *covering* clock (the lines' timestamps, else a running total of time) is the reference: it
//! accounts for every second between two lines, so it says what a step took on the wall, over spans
//! long enough for its resolution (20 s for a clock to the second). Every other clock is compared
//! with it over the same spans, and the first that agrees (its median over the spans within 10% of the
//! reference's) is the step time, being a row's own figure rather than a span's; where none agrees, the
//! reference itself is. A logged figure that does not agree is named for what it is instead: a running
//! total, the time of the steps since the line before, milliseconds, a rate, a running mean since the
//! launch began, one phase of the step. Where no covering clock exists, clocks are checked against
//! each other: a logged time that another clock bears out is taken, one alone is taken unchecked (and
//! says so), and two that disagree give no step time at all.

use super::candidates::{differenced, Clock, ClockKind, Meaning, Steps};
use crate::stats::{median, upper_middle};

/// How far a clock may be from another and still agree with it (on the median of their ratios).
pub(super) const TOLERANCE: f64 = 0.10;

/// How many of its resolution's steps a span of a clock must cover: its rounding is then at most 5% of
/// the span (20 s for a clock to the second, 12 s for minutes printed to two decimals).
const SPAN_IN_RESOLUTIONS: f64 = 20.0;

/// The resolution of a clock in seconds: the place of the last decimal its values are printed to (at
/// most six), in the clock's own unit, times `scale` (seconds per unit). A running total in minutes
/// printed to two decimals (nanochat's `total time: 161.08m`) moves in steps of 0.6 s.
pub(super) fn resolution(printed: &[f64], scale: f64) -> f64 {
    let places = (0..=6)
        .find(|d| {
            let m = 10f64.powi(*d);
            printed.iter().filter(|v| v.is_finite()).all(|v| {
                let x = v * m;
                // Within a thousandth of the quantum: a timestamp of 1.7e9 s to the millisecond is
                // stored to about 2e-7 s.
                (x - x.round()).abs() <= 1e-3
            })
        })
        .unwrap_or(6);
    10f64.powi(-places) * scale
}

/// A covering clock: its running values (a timestamp, a running total) in seconds.
#[derive(Debug, Clone)]
pub(super) struct Reference {
    pub(super) name: String,
    pub(super) totals: Vec<f64>,
    /// The most a clock may run over it and still agree: a step's own time is never longer than the
    /// wall clock over the same steps, but for the reference's rounding (its resolution over its median
    /// span) and 3% of logging.
    upper: f64,
    /// The seconds it moves in ([`resolution`]).
    pub(super) resolution: f64,
    /// The spans it is compared over: (the row a span starts after, the row it ends on), in one
    /// launch, each at least long enough for the clock's resolution.
    pub(super) spans: Vec<(usize, usize)>,
}

impl Reference {
    /// A reference from running values in seconds (NaN where a row has none), moving in steps of
    /// `resolution` seconds ([`resolution`]).
    #[cfg(test)]
    pub(super) fn new(name: String, totals: Vec<f64>, resolution: f64, steps: &Steps) -> Reference {
        Reference::from_row(name, totals, resolution, steps, 0)
    }

    /// [`Reference::new`], its first span starting at row `first` at the earliest: a window of a log
    /// read in windows starts its spans where the window before ended one, so that they are the whole
    /// log's spans.
    pub(super) fn from_row(
        name: String,
        totals: Vec<f64>,
        resolution: f64,
        steps: &Steps,
        first: usize,
    ) -> Reference {
        let min_span = SPAN_IN_RESOLUTIONS * resolution;
        // Room for a span a row (a clock to the millisecond): reserved, not faulted in, where the
        // spans are fewer.
        let mut spans: Vec<(usize, usize)> = Vec::with_capacity(totals.len());
        let mut start: Option<usize> = None;
        // The last row after `start` too close to it to end a span: at the end of a launch (or of
        // the log) it joins the span before, so that the last rows have a step time too.
        let mut tail: Option<usize> = None;
        let join_tail =
            |spans: &mut Vec<(usize, usize)>, start: Option<usize>, tail: Option<usize>| {
                if let (Some(last), Some(s), Some(t)) = (spans.last_mut(), start, tail) {
                    if last.1 == s && t > s {
                        last.1 = t;
                    }
                }
            };
        for row in first..totals.len() {
            let usable = totals[row].is_finite() && steps.step[row].is_finite();
            if !usable {
                continue;
            }
            match start {
                Some(s) if steps.segment[s] == steps.segment[row] && totals[row] >= totals[s] => {
                    if steps.step[row] > steps.step[s] {
                        if totals[row] - totals[s] > min_span {
                            spans.push((s, row));
                            start = Some(row);
                            tail = None;
                        } else {
                            tail = Some(row);
                        }
                    }
                }
                _ => {
                    join_tail(&mut spans, start, tail);
                    start = Some(row);
                    tail = None;
                }
            }
        }
        join_tail(&mut spans, start, tail);
        let mut lengths: Vec<f64> = spans.iter().map(|(a, b)| totals[*b] - totals[*a]).collect();
        let upper = 1.03
            + upper_middle(&mut lengths)
                .filter(|l| *l > 0.0)
                .map_or(0.0, |l| resolution / l);
        Reference {
            name,
            totals,
            upper: upper.min(1.0 + TOLERANCE),
            resolution,
            spans,
        }
    }

    /// Seconds a step over a span.
    fn span_value(&self, (from, to): (usize, usize), steps: &Steps) -> f64 {
        (self.totals[to] - self.totals[from]) / (steps.step[to] - steps.step[from])
    }

    /// The reference as a clock: each row of a span gets the span's seconds a step.
    pub(super) fn values(&self, steps: &Steps) -> Vec<f64> {
        let mut values = vec![f64::NAN; self.totals.len()];
        for &span in &self.spans {
            let v = self.span_value(span, steps);
            for value in &mut values[span.0 + 1..=span.1] {
                *value = v;
            }
        }
        values
    }

    /// Whether its spans are each one row: the clock is fine enough to time each row.
    pub(super) fn row_by_row(&self) -> bool {
        self.spans.iter().all(|(a, b)| b - a == 1)
    }

    /// How a clock compares with it: the median over the spans of the clock's seconds a step over the
    /// reference's, and how many spans both time.
    pub(super) fn compare(&self, clock: &[f64], steps: &Steps) -> Option<Comparison> {
        let mut ratios = Vec::with_capacity(self.spans.len());
        for &(from, to) in &self.spans {
            let reference = self.span_value((from, to), steps);
            let mut sum = 0.0;
            let mut whole = true;
            for (v, d) in clock[from + 1..=to].iter().zip(&steps.delta[from + 1..=to]) {
                let (v, d) = (*v, *d);
                if !(v.is_finite() && v > 0.0 && d.is_finite()) {
                    whole = false;
                    break;
                }
                sum += v * d;
            }
            let value = sum / (steps.step[to] - steps.step[from]);
            if whole && reference > 0.0 && value > 0.0 {
                ratios.push(value / reference);
            }
        }
        Comparison::within(ratios, self.upper)
    }
}

/// The median ratio of one clock to another and over how many spans or rows, and the most it may be
/// to agree.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Comparison {
    pub(super) median: f64,
    pub(super) over: usize,
    upper: f64,
    /// The share of the spans or rows that agree on their own: a reading that agrees only at its
    /// median (a running mean read as a rate, whose ratio climbs through 1) has few.
    share: f64,
}

impl Comparison {
    fn of(ratios: Vec<f64>) -> Option<Comparison> {
        Comparison::within(ratios, 1.0 + TOLERANCE)
    }

    fn within(mut ratios: Vec<f64>, upper: f64) -> Option<Comparison> {
        if ratios.is_empty() {
            return None;
        }
        let n = ratios.len();
        let share = ratios
            .iter()
            .filter(|r| **r >= 1.0 - TOLERANCE && **r <= upper)
            .count() as f64
            / n as f64;
        let median = median(&mut ratios)?;
        Some(Comparison {
            median,
            over: n,
            upper,
            share,
        })
    }

    /// The share of the spans or rows that agree on their own.
    pub(super) fn share(&self) -> f64 {
        self.share
    }

    pub(super) fn agrees(&self) -> bool {
        self.median >= 1.0 - TOLERANCE && self.median <= self.upper
    }
}

/// Two point clocks row by row: the median of `a / b` where both have a value.
pub(super) fn compare_rows(a: &[f64], b: &[f64]) -> Option<Comparison> {
    compare_pairs(a.iter().copied().zip(b.iter().copied()))
}

/// [`compare_rows`] of two clocks given as each row's pair of values.
pub(super) fn compare_pairs(pairs: impl Iterator<Item = (f64, f64)>) -> Option<Comparison> {
    // Room for every row at once: grown by doubling, the ratios of a million rows were copied and
    // faulted in twice over.
    let mut ratios = Vec::with_capacity(pairs.size_hint().1.unwrap_or(0));
    ratios.extend(
        pairs
            .filter(|(x, y)| x.is_finite() && y.is_finite() && *x > 0.0 && *y > 0.0)
            .map(|(x, y)| x / y),
    );
    Comparison::of(ratios)
}

/// What the evidence made of the clocks.
#[derive(Debug, Clone)]
pub(super) struct TimeVerdict {
    /// The clock chosen (an index into the clocks), else the reference's (`None` with `values`), or
    /// nothing.
    pub(super) chosen: Option<usize>,
    /// The step time at each row, where the reference was chosen.
    pub(super) reference_values: Option<Vec<f64>>,
    /// What was chosen and why, and what was overruled and as what: lines for `-v`.
    pub(super) said: Vec<String>,
    /// Where no clock could be chosen because two disagree: the note that names them.
    pub(super) conflict: Option<String>,
}

/// Seconds rounded to the microsecond, for messages (0.01 min is 0.6 s, not 0.6000000000000001).
fn micro(seconds: f64) -> f64 {
    (seconds * 1e6).round() / 1e6
}

/// Whether a clock is a logged figure read in a meaning other than as printed.
fn reinterpreted(clock: &Clock) -> bool {
    matches!(clock.kind, ClockKind::Logged(m) if m != Meaning::AsPrinted)
}

/// The words for a logged figure's meaning, when evidence chose it.
fn meaning_words(m: Meaning) -> &'static str {
    match m {
        Meaning::AsPrinted => "the step's time",
        Meaning::Interval => "the time of all the steps since the line before, not of one",
        Meaning::Milliseconds => "milliseconds, though nothing on the line says so",
        Meaning::Total => "a running total of time, not a step's",
        Meaning::Rate => "a rate (steps a second), not a time",
    }
}

/// A logged time's values as a running mean since its launch began, turned back into the time of
/// the steps since the line before: (mean x steps so far) differenced.
fn unmeaned(values: &[f64], steps: &Steps) -> Vec<f64> {
    let n = values.len();
    let mut origin = vec![f64::NAN; n];
    let mut row = 0;
    while row < n {
        let segment = steps.segment[row];
        let end = (row..n).find(|r| steps.segment[*r] != segment).unwrap_or(n);
        let mut deltas: Vec<f64> = steps.delta[row..end]
            .iter()
            .copied()
            .filter(|d| d.is_finite())
            .collect();
        let delta = upper_middle(&mut deltas).unwrap_or(1.0);
        let first = steps.step[row];
        for o in &mut origin[row..end] {
            *o = first - delta.min(first);
        }
        row = end;
    }
    let totals: Vec<f64> = (0..n)
        .map(|r| values[r] * (steps.step[r] - origin[r]))
        .collect();
    differenced(&totals, steps)
}

/// What an overruled logged figure is, from how it compares with the reference.
/// `as_mean`: how the figure read as a running mean since its launch began compares with the
/// reference.
fn overruled_as(
    clock: &Clock,
    comparison: Option<Comparison>,
    as_mean: Option<Comparison>,
    reference: &Reference,
) -> String {
    let Some(c) = comparison else {
        return format!(
            "{} not used: no span of {} to compare it with",
            clock.name, reference.name
        );
    };
    if as_mean.is_some_and(|m| m.agrees()) {
        return format!(
            "{} is a running mean since the launch began (its mean x the steps so far grows as {} do), not a step's time: not used",
            clock.name, reference.name
        );
    }
    let what = if c.median < 1.0 - TOLERANCE {
        format!(
            "shorter than the step {} time (median {:.0}% of it): one phase of the step, not all of it",
            reference.name,
            c.median * 100.0
        )
    } else {
        format!(
            "longer than the step {} time (median {:.2}x it): not the step's own time",
            reference.name, c.median
        )
    };
    format!("{} is {what}: not used", clock.name)
}

/// Chooses the step time among `clocks` (in order of preference: logged times, each in its meanings,
/// rates of steps, counts over rates, running totals), against `reference` where there is one.
pub(super) fn step_time(
    clocks: &[Clock],
    reference: Option<&Reference>,
    steps: &Steps,
) -> TimeVerdict {
    match reference {
        Some(reference) => against_reference(clocks, reference, steps),
        None => without_reference(clocks),
    }
}

fn against_reference(clocks: &[Clock], reference: &Reference, steps: &Steps) -> TimeVerdict {
    let comparisons: Vec<Option<Comparison>> = clocks
        .iter()
        .map(|c| reference.compare(&c.values, steps))
        .collect();
    // A logged figure that is near the reference, but whose reading as a running mean since its
    // launch began is much nearer (its mean x the steps so far grows as the reference does): a running
    // mean, which agrees only while the run is steady (LiBai's `time: 0.1190` over input stalls).
    // Each logged figure as printed, read as a running mean since its launch began: compared once.
    let as_mean: Vec<Option<Comparison>> = clocks
        .iter()
        .map(|clock| {
            (clock.kind == ClockKind::Logged(Meaning::AsPrinted))
                .then(|| reference.compare(&unmeaned(&clock.values, steps), steps))
                .flatten()
        })
        .collect();
    let running_mean: Vec<bool> = clocks
        .iter()
        .zip(&comparisons)
        .zip(&as_mean)
        .map(|((clock, printed), as_mean)| {
            let Some(printed) =
                printed.filter(|_| clock.kind == ClockKind::Logged(Meaning::AsPrinted))
            else {
                return false;
            };
            let off = (printed.median - 1.0).abs();
            off > 0.03 && as_mean.is_some_and(|m| m.agrees() && (m.median - 1.0).abs() * 2.0 < off)
        })
        .collect();
    // Of a logged column's readings (as printed, in another meaning, as a running mean), only the one
    // the most spans bear out may agree: a running mean read as a rate crosses the reference on its
    // way up and agrees at its median only, where its reading as a mean agrees on every span.
    let best_reading: Vec<bool> = clocks
        .iter()
        .enumerate()
        .map(|(i, clock)| {
            let Some(column) = clock
                .column
                .filter(|_| matches!(clock.kind, ClockKind::Logged(_)))
            else {
                return true;
            };
            let share =
                |c: Option<Comparison>| c.filter(Comparison::agrees).map_or(0.0, |c| c.share);
            let mine = share(comparisons[i]);
            let mut rivals = clocks.iter().enumerate().filter(|(j, other)| {
                *j != i
                    && other.column == Some(column)
                    && matches!(other.kind, ClockKind::Logged(_))
            });
            let mean_share = clocks
                .iter()
                .position(|c| {
                    c.column == Some(column) && c.kind == ClockKind::Logged(Meaning::AsPrinted)
                })
                .map_or(0.0, |printed| share(as_mean[printed]));
            // Ties go to the reading first in order of preference (as printed first).
            !rivals.any(|(j, _)| {
                let theirs = share(comparisons[j]);
                theirs > mine + 0.1 || (j < i && theirs >= mine)
            }) && mean_share <= mine + 0.1
        })
        .collect();
    let agrees = |i: usize| {
        comparisons[i].is_some_and(|c| c.agrees()) && !running_mean[i] && best_reading[i]
    };
    let mut said = Vec::new();
    // A logged figure is taken as printed where that agrees; in another meaning only where its
    // printed value does not.
    let printed_agrees = |column: Option<usize>| {
        clocks.iter().enumerate().any(|(i, c)| {
            c.column == column && c.kind == ClockKind::Logged(Meaning::AsPrinted) && agrees(i)
        })
    };
    let chosen = (0..clocks.len())
        .find(|&i| agrees(i) && !(reinterpreted(&clocks[i]) && printed_agrees(clocks[i].column)));
    // Each logged figure's verdict, once per column.
    let mut told: Vec<Option<usize>> = Vec::new();
    for (i, clock) in clocks.iter().enumerate() {
        if clock.kind != ClockKind::Logged(Meaning::AsPrinted) || told.contains(&clock.column) {
            continue;
        }
        told.push(clock.column);
        let comparison = comparisons[i];
        if agrees(i) {
            let c = comparison.expect("agrees");
            said.push(format!(
                "{} agrees with {} (median {:.3}x over {} span(s))",
                clock.name, reference.name, c.median, c.over
            ));
            continue;
        }
        // Another meaning of the same column that agrees says what it is.
        let meaning = clocks
            .iter()
            .enumerate()
            .find(|(j, other)| other.column == clock.column && reinterpreted(other) && agrees(*j));
        match meaning {
            Some((_, other)) => {
                let ClockKind::Logged(m) = other.kind else {
                    unreachable!("a reinterpreted clock is a logged one")
                };
                said.push(format!(
                    "{} is {} ({} agrees with {})",
                    clock.name,
                    meaning_words(m),
                    other.name,
                    reference.name
                ));
            }
            None => said.push(overruled_as(clock, comparison, as_mean[i], reference)),
        }
    }
    // Rates: which scope the evidence bears out.
    for (i, clock) in clocks.iter().enumerate() {
        if let ClockKind::CountRate(_) = clock.kind {
            if agrees(i) {
                let c = comparison_words(comparisons[i]);
                said.push(format!(
                    "{} agrees with {} ({c})",
                    clock.name, reference.name
                ));
            }
        }
    }
    match chosen {
        Some(i) => {
            said.insert(0, format!("step time: {}", clocks[i].name));
            TimeVerdict {
                chosen: Some(i),
                reference_values: None,
                said,
                conflict: None,
            }
        }
        None => {
            let values = reference.values(steps);
            let spans = if reference.row_by_row() {
                "each row's".to_string()
            } else {
                format!(
                    "over spans of at least {} s (the clock moves in steps of {} s), each row getting its span's",
                    micro(SPAN_IN_RESOLUTIONS * reference.resolution),
                    micro(reference.resolution)
                )
            };
            said.insert(
                0,
                format!(
                    "step time: {} differenced over the steps between lines ({spans}), no other clock agreeing with it",
                    reference.name
                ),
            );
            TimeVerdict {
                chosen: None,
                reference_values: Some(values),
                said,
                conflict: None,
            }
        }
    }
}

fn comparison_words(c: Option<Comparison>) -> String {
    c.map_or_else(String::new, |c| {
        format!("median {:.3}x over {} span(s)", c.median, c.over)
    })
}

fn without_reference(clocks: &[Clock]) -> TimeVerdict {
    let independent: Vec<usize> = (0..clocks.len())
        .filter(|&i| {
            matches!(
                clocks[i].kind,
                ClockKind::Logged(Meaning::AsPrinted) | ClockKind::StepsRate
            ) && clocks[i].values.iter().any(|v| v.is_finite())
        })
        .collect();
    let dependent: Vec<usize> = (0..clocks.len())
        .filter(|&i| {
            matches!(clocks[i].kind, ClockKind::CountRate(_))
                && clocks[i].values.iter().any(|v| v.is_finite())
        })
        .collect();
    let mut said = Vec::new();
    let partner = |i: usize| {
        independent
            .iter()
            .chain(&dependent)
            .copied()
            .filter(|&j| j != i)
            .find_map(|j| {
                compare_rows(&clocks[i].values, &clocks[j].values)
                    .filter(Comparison::agrees)
                    .map(|c| (j, c))
            })
    };
    if let Some((i, (j, c))) = independent.iter().find_map(|&i| partner(i).map(|p| (i, p))) {
        said.push(format!("step time: {} (no timestamps)", clocks[i].name));
        said.push(format!(
            "{} agrees with {} (median {:.3}x over {} row(s))",
            clocks[i].name, clocks[j].name, c.median, c.over
        ));
        return TimeVerdict {
            chosen: Some(i),
            reference_values: None,
            said,
            conflict: None,
        };
    }
    match independent.as_slice() {
        [] => {
            let Some(&i) = dependent.first() else {
                return TimeVerdict {
                    chosen: None,
                    reference_values: None,
                    said,
                    conflict: None,
                };
            };
            said.push(format!(
                "step time: {} (no timestamps and no logged time to check it against)",
                clocks[i].name
            ));
            TimeVerdict {
                chosen: Some(i),
                reference_values: None,
                said,
                conflict: None,
            }
        }
        [i] => {
            said.push(format!(
                "step time: {} (no timestamps and no other clock to check it against)",
                clocks[*i].name
            ));
            TimeVerdict {
                chosen: Some(*i),
                reference_values: None,
                said,
                conflict: None,
            }
        }
        several => {
            let named: Vec<String> = several
                .iter()
                .map(|&i| {
                    let mut v: Vec<f64> = clocks[i]
                        .values
                        .iter()
                        .copied()
                        .filter(|v| v.is_finite())
                        .collect();
                    let middle = upper_middle(&mut v).unwrap_or(f64::NAN);
                    format!("{} (median {middle:.4} s)", clocks[i].name)
                })
                .collect();
            let conflict = format!(
                "no step time: the log's clocks disagree and no timestamps settle it: {}",
                named.join(", ")
            );
            said.push(conflict.clone());
            TimeVerdict {
                chosen: None,
                reference_values: None,
                said,
                conflict: Some(conflict),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::console::candidates::Scope;

    fn steps(step: &[f64]) -> Steps {
        let n = step.len();
        let mut delta = vec![f64::NAN; n];
        for r in 1..n {
            delta[r] = step[r] - step[r - 1];
        }
        Steps {
            step: step.to_vec(),
            launch: vec![0; n],
            segment: vec![0; n],
            delta,
        }
    }

    fn clock(name: &str, kind: ClockKind, column: Option<usize>, values: &[f64]) -> Clock {
        Clock {
            name: name.into(),
            kind,
            column,
            values: values.to_vec(),
        }
    }

    #[test]
    fn a_clock_to_the_second_is_compared_over_spans_of_twenty_seconds() {
        // A step of 0.3 s logged every step, timestamps to the second.
        let n = 200;
        let s = steps(&(1..=n).map(f64::from).collect::<Vec<_>>());
        let wall: Vec<f64> = (1..=n).map(|i| (f64::from(i) * 0.3).floor()).collect();
        let r = Reference::new(
            "the line timestamps".into(),
            wall.clone(),
            resolution(&wall, 1.0),
            &s,
        );
        assert!(r.spans.len() >= 2 && !r.row_by_row());
        let logged = vec![0.3; n as usize];
        let c = r.compare(&logged, &s).unwrap();
        assert!(c.agrees(), "{c:?}");
        let half = vec![0.15; n as usize];
        assert!(!r.compare(&half, &s).unwrap().agrees());
    }

    #[test]
    fn a_running_mean_is_named_and_the_timestamps_time_the_steps() {
        // The first step takes 30 s (compilation), then 1 s; the log prints the mean since the start.
        let step: Vec<f64> = (1..=50).map(f64::from).collect();
        let s = steps(&step);
        let mut wall = vec![0.0; 50];
        wall[0] = 30.0;
        for i in 1..50 {
            wall[i] = wall[i - 1] + 1.0 + 0.001 * (i % 3) as f64;
        }
        let mean: Vec<f64> = (0..50).map(|i| wall[i] / (i as f64 + 1.0)).collect();
        let r = Reference::new(
            "the line timestamps".into(),
            wall.clone(),
            resolution(&wall, 1.0),
            &s,
        );
        let clocks = vec![clock(
            "'time' (s)",
            ClockKind::Logged(Meaning::AsPrinted),
            Some(1),
            &mean,
        )];
        let v = step_time(&clocks, Some(&r), &s);
        assert_eq!(v.chosen, None);
        assert!(v.reference_values.is_some());
        assert!(
            v.said
                .iter()
                .any(|l| l.contains("running mean since the launch began")),
            "{:?}",
            v.said
        );
    }

    #[test]
    fn a_running_mean_read_as_a_rate_agrees_at_its_median_only_and_is_not_taken() {
        // Steps of 0.88 s after a first of 7.3 s: the mean since the start falls through 1 / 0.88,
        // so its inverse, read as a rate of steps, matches the stamps at the median span.
        let step: Vec<f64> = (1..=49).map(f64::from).collect();
        let s = steps(&step);
        let mut wall = vec![7.3; 49];
        for i in 1..49 {
            wall[i] = wall[i - 1] + 0.88 * (1.0 + 0.01 * (i % 3) as f64);
        }
        let mean: Vec<f64> = (0..49).map(|i| wall[i] / (i as f64 + 1.0)).collect();
        let r = Reference::new(
            "the line timestamps".into(),
            wall.iter().map(|w| w + 1000.0).collect(),
            0.001,
            &s,
        );
        let rate = clock(
            "1 / 'time' (a rate of steps)",
            ClockKind::Logged(Meaning::Rate),
            Some(1),
            &mean.iter().map(|m| 1.0 / m).collect::<Vec<_>>(),
        );
        assert!(r.compare(&rate.values, &s).is_some_and(|c| c.agrees()));
        let clocks = vec![
            clock(
                "'time' (s)",
                ClockKind::Logged(Meaning::AsPrinted),
                Some(1),
                &mean,
            ),
            rate,
        ];
        let v = step_time(&clocks, Some(&r), &s);
        assert_eq!(v.chosen, None, "{:?}", v.said);
        assert!(
            v.said.iter().any(|l| l.contains("running mean")),
            "{:?}",
            v.said
        );
    }

    #[test]
    fn a_per_device_rate_is_told_by_the_timestamps() {
        let step: Vec<f64> = (1..=20).map(|i| f64::from(i) * 10.0).collect();
        let s = steps(&step);
        let wall: Vec<f64> = (1..=20)
            .map(|i| 1000.0 + f64::from(i) * 10.0 * 0.5)
            .collect();
        let r = Reference::new(
            "the line timestamps".into(),
            wall.clone(),
            resolution(&wall, 1.0),
            &s,
        );
        // 8 devices, 32768 tokens a step, 0.5 s a step: one device's rate is 8192 tok/s.
        let global = vec![32768.0 / 8192.0; 20];
        let per_device = vec![32768.0 / (8192.0 * 8.0); 20];
        let clocks = vec![
            clock(
                "tokens a step / 'tokens_per_second'",
                ClockKind::CountRate(Scope::Global),
                Some(1),
                &global,
            ),
            clock(
                "tokens a step / ('tokens_per_second' x 8 devices)",
                ClockKind::CountRate(Scope::PerDevice),
                Some(1),
                &per_device,
            ),
        ];
        let v = step_time(&clocks, Some(&r), &s);
        assert_eq!(v.chosen, Some(1), "{:?}", v.said);
    }

    #[test]
    fn two_logged_clocks_that_disagree_without_timestamps_give_no_step_time() {
        let a = clock(
            "'time' (s)",
            ClockKind::Logged(Meaning::AsPrinted),
            Some(1),
            &[0.5, 0.5],
        );
        let b = clock("1 / 'it/s'", ClockKind::StepsRate, Some(2), &[2.0, 2.0]);
        let v = step_time(&[a.clone(), b], None, &steps(&[1.0, 2.0]));
        assert_eq!(v.chosen, None);
        assert!(v.conflict.is_some());
        let c = clock("1 / 'ups'", ClockKind::StepsRate, Some(3), &[0.51, 0.49]);
        let v = step_time(&[a, c], None, &steps(&[1.0, 2.0]));
        assert_eq!(v.chosen, Some(0));
    }
}
