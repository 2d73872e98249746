//! Runs summarised across loaded inputs: which columns key a run in each input, then
//! [`crate::summary::summarize`]. What `mfu summary` and the Python package's `summary` share.

use crate::columns::{Field, FieldSource};
use crate::summary::{summarize, GroupBy, RunIndex, RunSummary, Spans, SummaryInput, SummaryRuns};

use super::audit::{AuditRuns, RunAudit};
use super::runs::{key_names, run_group, run_groups};
use super::windowed::{Fold, FoldedRuns, Part, SPAN_BY_USUAL_GAP};
use super::{Loaded, Observer, PipelineError, Plan};

/// One row per run over `loaded` (each input with its display name): runs are the values of the `by`
/// keys (a column, or a field name such as `run_id`) or, without keys, each input's run_id field, else
/// the input itself. Gives the key column names (a key named like a summary column is written
/// `by_<key>`; without keys, `run_id` or `source_file`) and the runs. The first `skip_steps` steps of each
/// run are left out of its aggregates. Each run also gets its framework's own figure and the audit of it
/// (`mfu audit`, `logged_peak_flops` the user's word for that framework's peak).
pub fn summarize_runs(
    loaded: &[(String, Loaded)],
    by: &[String],
    skip_steps: f64,
    logged_peak_flops: Option<f64>,
) -> Result<(Vec<String>, Vec<RunSummary>), PipelineError> {
    let (key_names, groups) = run_groups(loaded, by)?;
    let inputs: Vec<SummaryInput> = loaded
        .iter()
        .zip(groups)
        .map(|((display, l), group)| summary_input(display, l, group))
        .collect();
    let mut runs = summarize(&inputs, skip_steps).map_err(PipelineError::Combine)?;
    // Each run's framework figure, beside mfu's (`mfu audit`, over all of the run's rows).
    let (_, audits) = super::audit::audit_runs(loaded, by, logged_peak_flops, false)?;
    with_audits(&mut runs, audits);
    Ok((key_names, runs))
}

/// Input `display`'s table as the summary reads it.
fn summary_input<'a>(display: &'a str, l: &'a Loaded, group: GroupBy) -> SummaryInput<'a> {
    SummaryInput {
        source: display,
        frame: &l.enriched.frame,
        values: &l.enriched.values,
        device_column: match l.enriched.mapping.source(Field::DeviceName) {
            FieldSource::Column { name, .. } => Some(name.as_str()),
            _ => None,
        },
        group,
    }
}

/// Each run's framework, its logged MFU and the audit's verdict, from the runs' audits.
fn with_audits(runs: &mut [RunSummary], audits: Vec<RunAudit>) {
    let audits: std::collections::HashMap<_, _> = audits
        .into_iter()
        .filter_map(|a| Some((a.keys, a.audit?)))
        .collect();
    for run in runs {
        if let Some(a) = audits.get(&run.keys) {
            run.framework = Some(a.framework.clone());
            run.mfu_logged = a.mfu_logged;
            // mfu's own callbacks agreeing with mfu is nothing to say; anything else is.
            let agrees = a.framework == "mfu" && a.ratio.is_some_and(|r| (r - 1.0).abs() < 1e-3);
            run.audit = (!agrees).then(|| a.verdict.clone());
        }
    }
}

/// A log of one run folded window by window into its summary and audit: each row given with its span
/// once the row after it is read (the last row of a window waits, its window held, for the next one).
struct SummaryWindows<'a> {
    by: &'a [String],
    skip_steps: f64,
    grouped: Option<(Vec<String>, GroupBy)>,
    key: Option<Vec<Option<String>>>,
    runs: &'a mut SummaryRuns,
    audits: &'a mut AuditRuns,
    /// The window before, its runs, and its last row, not yet given.
    held: Option<(Loaded, RunIndex, usize)>,
    /// The run's rows' spans, as they come.
    spans: Spans,
    /// With warm-up left out: the first window's first step, which the whole log's must be.
    first_step: Option<f64>,
    lowest_step: Option<f64>,
}

impl SummaryWindows<'_> {
    /// Gives `rows` of `l` (whose runs are `index`), with their spans, to the summary.
    fn give(
        &mut self,
        display: &str,
        l: &Loaded,
        index: &RunIndex,
        rows: &[(usize, f64)],
    ) -> Result<(), PipelineError> {
        let Some((_, group)) = self.grouped.as_ref() else {
            return Ok(());
        };
        let input = summary_input(display, l, group.clone());
        let from = self
            .first_step
            .filter(|_| self.skip_steps > 0.0)
            .map(|s| s + self.skip_steps);
        self.runs
            .add(&input, index, rows.iter().copied(), |_| from)
            .map_err(PipelineError::Combine)
    }

    /// Folds one window; stops where the log is more than one run.
    fn window(&mut self, display: &str, l: Loaded) -> Result<Fold, PipelineError> {
        if self.grouped.is_none() {
            self.grouped = Some(run_group(display, &l, self.by)?);
        }
        let Some((_, group)) = self.grouped.as_ref() else {
            return Ok(Fold::Stop("it has no runs".into()));
        };
        let index =
            RunIndex::of(&l.enriched.frame, display, group).map_err(PipelineError::Combine)?;
        let several = || Ok(Fold::Stop("it holds more than one run".into()));
        let key = match index.keys.as_slice() {
            [key] => key.clone(),
            _ => return several(),
        };
        if self.key.get_or_insert_with(|| key.clone()) != &key {
            return several();
        }
        let group = group.clone();
        self.audits.add(&display.to_string(), &l, &group)?;
        let steps = &l.enriched.values.steps;
        let height = l.enriched.frame.height();
        if height == 0 {
            return Ok(Fold::On);
        }
        if steps.len() != height {
            return Ok(Fold::Stop("its rows have no steps".into()));
        }
        for s in steps.iter().flatten() {
            self.first_step.get_or_insert(*s);
            self.lowest_step = Some(self.lowest_step.map_or(*s, |l| l.min(*s)));
        }
        if let Some((before, before_index, last)) = self.held.take() {
            let span = self
                .spans
                .next(before.enriched.values.steps[last], steps[0]);
            self.give(display, &before, &before_index, &[(last, span)])?;
        }
        let rows: Vec<(usize, f64)> = (0..height - 1)
            .map(|row| (row, self.spans.next(steps[row], steps[row + 1])))
            .collect();
        self.give(display, &l, &index, &rows)?;
        self.held = Some((l, index, height - 1));
        Ok(Fold::On)
    }
}

/// The summary of `parts` in order, each read whole or a console log of one run folded window by
/// window: each window's rows added to the run's sums and its MFU's values counted by distinct value,
/// none of them held; `Err` where they are to be read whole, and why (a log of several runs; a span its
/// run's most common gap decides; warm-up left out from a first step the first window does not hold).
/// The same summary as [`summarize_runs`] of every input read whole.
pub fn summary_parts(
    plan: &Plan,
    parts: Vec<Part>,
    observer: &dyn Observer,
    by: &[String],
    skip_steps: f64,
    logged_peak_flops: Option<f64>,
) -> Result<FoldedRuns<RunSummary>, PipelineError> {
    let mut runs = SummaryRuns::default();
    let mut audits = AuditRuns::new(logged_peak_flops, false);
    let mut names = Vec::new();
    let mut reads = Vec::new();
    let whole = |why: &str| Ok(Err(Some(why.to_string())));
    for part in parts {
        let input = match part {
            Part::Loaded(display, l) => {
                let (n, group) = run_group(&display, &l, by)?;
                names.push(n);
                let input = summary_input(&display, &l, group.clone());
                runs.add_input(&input, skip_steps)
                    .map_err(PipelineError::Combine)?;
                audits.add(&display, &l, &group)?;
                continue;
            }
            Part::Windows(input) => input,
        };
        let display = input.display.clone();
        let mut windows = SummaryWindows {
            by,
            skip_steps,
            grouped: None,
            key: None,
            runs: &mut runs,
            audits: &mut audits,
            held: None,
            spans: Spans::default(),
            first_step: None,
            lowest_step: None,
        };
        let read = match plan
            .fold_windows(input, observer, &mut |w| windows.window(&display, w.loaded))?
        {
            Ok(read) => read,
            Err(why) => return Ok(Err(why)),
        };
        if let Some((last, index, row)) = windows.held.take() {
            let span = windows.spans.next(last.enriched.values.steps[row], None);
            windows.give(&display, &last, &index, &[(row, span)])?;
        }
        if !windows.spans.guesses_hold() {
            return whole(SPAN_BY_USUAL_GAP);
        }
        if skip_steps > 0.0 && windows.first_step != windows.lowest_step {
            return whole("--skip-steps counts from a first step later than the run's lowest");
        }
        if let Some((n, _)) = windows.grouped.take() {
            names.push(n);
        }
        reads.push(read);
    }
    let mut runs = runs.finish();
    with_audits(&mut runs, audits.finish());
    Ok(Ok(((key_names(by, &names), runs), reads)))
}
