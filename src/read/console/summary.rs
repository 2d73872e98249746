//! HF Trainer's end-of-training summary, read as one row for the whole run where its console has no
//! other family of training lines (its loss dicts carry no step, its tqdm bar's `s/it` is smoothed).

use super::pairs::{self, Pair, Value};
use super::rows::FamilyRows;
use super::scan::{FactLine, Record};
use super::{clean, digest};

/// The keys of HF Trainer's end-of-training summary (`{'train_runtime': 537.17, 'train_samples_per_second':
/// 14.89, 'train_steps_per_second': 0.931, ...}`): its runtime and its rate of optimizer steps.
pub(super) const SUMMARY_RUNTIME: &str = "train_runtime";
pub(super) const SUMMARY_STEPS_RATE: &str = "train_steps_per_second";

/// The last line kept for facts that is a run's summary (a positive runtime and steps rate), and its
/// pairs.
pub(super) fn run_summary(lines: &[FactLine]) -> Option<(usize, Vec<Pair<'static>>)> {
    lines.iter().rev().find_map(|line| {
        if !line.raw.contains(SUMMARY_RUNTIME) || !line.raw.contains(SUMMARY_STEPS_RATE) {
            return None;
        }
        let pairs: Vec<Pair<'static>> = clean::clean(&line.raw)
            .iter()
            .flat_map(|l| {
                pairs::pairs(&l.text)
                    .into_iter()
                    .map(Pair::into_owned)
                    .collect::<Vec<_>>()
            })
            .collect();
        let positive = |key: &str| {
            pairs
                .iter()
                .find(|p| p.key == key)
                .and_then(|p| p.value.number())
                .is_some_and(|v| v.is_finite() && v > 0.0)
        };
        (positive(SUMMARY_RUNTIME) && positive(SUMMARY_STEPS_RATE)).then_some((line.index, pairs))
    })
}

/// The one row a run's summary gives: its steps (the progress bar's last count where one was printed,
/// else the runtime x the rounded steps rate), the mean step time over them, and the summary's values.
pub(super) fn summary_row(
    line: usize,
    summary: &[Pair<'static>],
    progress: Option<&FamilyRows>,
) -> Option<FamilyRows> {
    let number = |key: &str| summary.iter().find(|p| p.key == key)?.value.number();
    let runtime = number(SUMMARY_RUNTIME)?;
    let counted = progress.and_then(|rows| {
        let column = rows.columns.get(*rows.at.get("progress")?)?;
        column.numbers.iter().rev().find(|v| !v.is_nan()).copied()
    });
    let steps = counted
        .filter(|n| *n >= 1.0)
        .unwrap_or_else(|| (runtime * number(SUMMARY_STEPS_RATE).unwrap_or(0.0)).round());
    if !(steps >= 1.0 && steps.is_finite()) {
        return None;
    }
    let number_pair = |key: &str, value: f64, unit: &'static str| Pair {
        key: key.to_string().into(),
        value: Value::Number {
            value,
            unit: unit.into(),
            total: None,
        },
        source: None,
    };
    let mut pairs = vec![
        number_pair("step", steps, ""),
        number_pair("step_time_s", runtime / steps, ""),
    ];
    pairs.extend(summary.iter().cloned());
    let mut rows = FamilyRows::new(("step".into(), false), Vec::new());
    rows.push(Record {
        line,
        wall_time: None,
        rank: None,
        numbers: pairs.len() - 1,
        timed: true,
        digest: digest::pairs(&pairs),
        family: ("step".into(), false),
        pairs,
    });
    Some(rows)
}
