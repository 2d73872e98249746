//! The audit of the runs in loaded inputs: each run's framework, its logged figure row by row beside
//! mfu's, then [`crate::audit::audit`]. What `mfu audit` and the Python package share.

use std::collections::HashMap;

use polars::prelude::*;

use crate::audit::{recognise, unknown, Audit, Folded, Recognised, Row, Run, Unit};
use crate::columns::{FactValue, Field, FieldSource};
use crate::compute::{MFU_WALL_CLOCK, PEAK_FLOPS_PER_DEVICE, TOKENS_PER_SECOND};
use crate::peaks::precision::parse_dtype;
use crate::summary::{GroupBy, RunIndex};

use super::runs::{key_names, run_group, run_groups};
use super::windowed::{Fold, FoldedRuns, Part};
use super::{Loaded, PipelineError};
use super::{Observer, Plan};

/// The columns of one run's audit, after its key columns, in order.
pub const AUDIT_COLUMNS: [&str; 24] = [
    "framework",
    "recognised_by",
    "figure",
    "rows",
    "mfu_logged",
    "tflops_logged",
    "peak_logged",
    "peak_logged_from",
    "device",
    "peak_emulated",
    "emulation",
    "flops_per_token_logged",
    "mfu",
    "peak",
    "flops_per_token",
    "mfu_logged_rebased",
    "ratio",
    "peak_factor",
    "numerator_factor",
    "impossible_rows",
    "placeholder_rows",
    "verdict",
    "notes",
    "source_files",
];

/// One run's audit, with its keys; `audit` is `None` where no framework's figure is in the log.
#[derive(Debug, Clone, PartialEq)]
pub struct RunAudit {
    pub keys: Vec<Option<String>>,
    pub audit: Option<Audit>,
    pub recognised_by: Option<String>,
    pub device: Option<String>,
    pub notes: Vec<String>,
    pub sources: Vec<String>,
    /// The run's rows, each with its step, as the audit read them.
    pub rows: Vec<(Option<f64>, Row)>,
}

/// The columns of the per-row audit (`mfu audit --rows`), after the key columns.
pub const AUDIT_ROW_COLUMNS: [&str; 9] = [
    "step",
    "framework",
    "mfu_logged",
    "tflops_logged",
    "peak_logged",
    "flops_per_token_logged",
    "mfu",
    "flops_per_token",
    "ratio",
];

/// One logged row of a run beside mfu's (`mfu audit --rows`).
#[derive(Debug, Clone, PartialEq)]
pub struct AuditedRow {
    pub keys: Vec<Option<String>>,
    pub step: Option<f64>,
    pub framework: String,
    pub mfu_logged: Option<f64>,
    pub tflops_logged: Option<f64>,
    pub peak_logged: Option<f64>,
    /// Its TFLOP/s over its token rate, else its MFU times the run's logged peak over that rate.
    pub flops_per_token_logged: Option<f64>,
    pub mfu: Option<f64>,
    pub flops_per_token: Option<f64>,
    pub ratio: Option<f64>,
}

/// The logged rows of the runs (kept by [`audit_runs`] with `keep_rows`) that have a framework figure.
pub fn audited_rows(runs: &[RunAudit]) -> Vec<AuditedRow> {
    let positive = |v: Option<f64>| v.filter(|v| v.is_finite() && *v > 0.0);
    let mut out = Vec::new();
    for run in runs {
        let Some(a) = &run.audit else { continue };
        for (step, r) in &run.rows {
            if r.mfu_logged.is_none() && r.tflops_logged.is_none() {
                continue;
            }
            let rate = positive(r.tokens_per_second_per_device);
            let fpt_logged = match (
                positive(r.tflops_logged),
                positive(r.mfu_logged),
                a.peak_logged,
            ) {
                (Some(t), _, _) => rate.map(|rate| t * 1e12 / rate),
                (None, Some(m), Some(p)) => rate.map(|rate| m * p / rate),
                _ => None,
            };
            out.push(AuditedRow {
                keys: run.keys.clone(),
                step: *step,
                framework: a.framework.clone(),
                mfu_logged: r.mfu_logged,
                tflops_logged: r.tflops_logged,
                peak_logged: a.peak_logged,
                flops_per_token_logged: fpt_logged,
                mfu: r.mfu,
                flops_per_token: r.flops_per_token,
                ratio: positive(r.mfu)
                    .zip(positive(r.mfu_logged))
                    .map(|(m, l)| m / l),
            });
        }
    }
    out
}

/// [`audited_rows`] as a frame: the key columns (named `key_names`), then [`AUDIT_ROW_COLUMNS`].
pub fn rows_frame(key_names: &[String], rows: &[AuditedRow]) -> PolarsResult<DataFrame> {
    let mut columns: Vec<Column> = (0..key_names.len())
        .map(|k| {
            let values: Vec<Option<String>> = rows.iter().map(|r| r.keys[k].clone()).collect();
            Column::new(key_names[k].as_str().into(), values)
        })
        .collect();
    let number = |name: &str, f: &dyn Fn(&AuditedRow) -> Option<f64>| {
        Column::new(name.into(), rows.iter().map(f).collect::<Vec<_>>())
    };
    columns.extend([
        number("step", &|r| r.step),
        Column::new(
            "framework".into(),
            rows.iter().map(|r| r.framework.clone()).collect::<Vec<_>>(),
        ),
        number("mfu_logged", &|r| r.mfu_logged),
        number("tflops_logged", &|r| r.tflops_logged),
        number("peak_logged", &|r| r.peak_logged),
        number("flops_per_token_logged", &|r| r.flops_per_token_logged),
        number("mfu", &|r| r.mfu),
        number("flops_per_token", &|r| r.flops_per_token),
        number("ratio", &|r| r.ratio),
    ]);
    DataFrame::new(rows.len(), columns)
}

/// A figure of each row, read from the frame where it is needed rather than copied out whole (five
/// copies of a column took 80 bytes a row).
enum Figures {
    /// A column of numbers, each divided by the number beside it (100 for a percentage).
    Numbers(Float64Chunked, f64),
    /// Figures read from text, or worked out.
    Parsed(Vec<Option<f64>>),
    Missing,
}

impl Figures {
    fn at(&self, row: usize) -> Option<f64> {
        match self {
            Figures::Numbers(values, per_unit) => values.get(row).map(|v| v / per_unit),
            Figures::Parsed(values) => values.get(row).copied().flatten(),
            Figures::Missing => None,
        }
    }
}

/// The audit of every run over `loaded` (each input with its display name): the key column names and
/// the runs in order of first appearance, keyed as `mfu summary` keys them. `logged_peak_flops` is the
/// user's word for the peak the framework used; `keep_rows` keeps each run's rows for [`rows_frame`].
pub fn audit_runs(
    loaded: &[(String, Loaded)],
    by: &[String],
    logged_peak_flops: Option<f64>,
    keep_rows: bool,
) -> Result<(Vec<String>, Vec<RunAudit>), PipelineError> {
    let (key_names, groups) = run_groups(loaded, by)?;
    let mut runs = AuditRuns::new(logged_peak_flops, keep_rows);
    for ((display, l), group) in loaded.iter().zip(groups) {
        runs.add(display, l, &group)?;
    }
    Ok((key_names, runs.finish()))
}

/// Each run's framework (the first input's that names one), the rows the audit weighs folded, device
/// and precision.
struct Gathered {
    keys: Vec<Option<String>>,
    recognised: Option<Recognised>,
    folded: Folded,
    /// The run's rows and their steps, only where they are kept for `--rows`.
    rows: Vec<Row>,
    steps: Vec<Option<f64>>,
    device: Option<String>,
    dtype: Option<String>,
    announced_peak: Option<(f64, String)>,
    sources: Vec<String>,
    notes: Vec<String>,
}

/// The audits of runs whose rows come input by input ([`audit_runs`]), or window by window of one
/// large console log ([`super::windowed`]): each input's (or window's) rows folded into its runs, the
/// rows themselves kept only for `--rows`.
pub struct AuditRuns {
    runs: Vec<Gathered>,
    index: HashMap<Vec<Option<String>>, usize>,
    logged_peak_flops: Option<f64>,
    keep_rows: bool,
}

impl AuditRuns {
    pub fn new(logged_peak_flops: Option<f64>, keep_rows: bool) -> AuditRuns {
        AuditRuns {
            runs: Vec::new(),
            index: HashMap::new(),
            logged_peak_flops,
            keep_rows,
        }
    }

    /// Folds the rows of one input (called `display`), split into runs by `group`.
    pub fn add(
        &mut self,
        display: &String,
        l: &Loaded,
        group: &GroupBy,
    ) -> Result<(), PipelineError> {
        let AuditRuns {
            runs,
            index,
            keep_rows,
            ..
        } = self;
        let keep_rows = *keep_rows;
        let combine = PipelineError::Combine;
        let df = &l.enriched.frame;
        let v = &l.enriched.values;
        let columns: Vec<&str> = df.get_column_names().iter().map(|c| c.as_str()).collect();
        // No framework named: the column enrich reads as the log's own MFU, as a fraction, if any.
        let fallback = match l.enriched.mapping.source(Field::LoggedMfu) {
            FieldSource::Column { name, .. } => Some(name.clone()),
            _ => None,
        };
        let recognised = recognise(Some(l.shape.name()), &columns).or_else(|| {
            fallback.as_ref().map(|name| Recognised {
                framework: unknown(),
                mfu_column: Some(name.clone()),
                tflops_column: None,
                by: format!(
                    "no framework named; '{name}' is the log's own MFU, as mfu enrich reads it"
                ),
            })
        });
        let unnamed = recognised
            .as_ref()
            .is_some_and(|r| std::ptr::eq(r.framework, unknown()));
        // Each row's run: the key columns' values, or the input itself.
        let keys = RunIndex::of(df, display, group).map_err(combine)?;
        let key_of = |row: usize| keys.key(row);
        // The run of each row, looked up again only where the key changes; a run met for the first
        // time in this input takes the input's framework, source and announced peak.
        let mut current: Option<(&Vec<Option<String>>, usize)> = None;
        let mut run_of = |row: usize, runs: &mut Vec<Gathered>| -> usize {
            let key = key_of(row);
            if let Some((k, at)) = current {
                if k == key {
                    return at;
                }
            }
            let at = match index.get(key) {
                Some(at) => *at,
                None => {
                    runs.push(Gathered {
                        keys: key.clone(),
                        recognised: None,
                        folded: Folded::default(),
                        rows: Vec::new(),
                        steps: Vec::new(),
                        device: None,
                        dtype: None,
                        announced_peak: None,
                        sources: Vec::new(),
                        notes: Vec::new(),
                    });
                    index.insert(key.clone(), runs.len() - 1);
                    runs.len() - 1
                }
            };
            let run = &mut runs[at];
            if !run.sources.contains(display) {
                run.sources.push(display.clone());
                match (&run.recognised, &recognised) {
                    (None, Some(r)) => run.recognised = Some(r.clone()),
                    (Some(a), Some(b)) if a.framework.name != b.framework.name => {
                        run.notes.push(format!(
                            "{display} reads as {}'s, the run's first input as {}'s: audited as {}",
                            b.framework.name, a.framework.name, a.framework.name
                        ))
                    }
                    _ => {}
                }
                if let (
                    None,
                    FieldSource::Fact {
                        value: FactValue::Number(p),
                        origin,
                    },
                ) = (
                    &run.announced_peak,
                    l.enriched.mapping.source(Field::LoggedPeakFlops),
                ) {
                    run.announced_peak = Some((*p, origin.clone()));
                }
            }
            current = Some((key, at));
            at
        };
        // An input without a framework figure only names its runs (to say there is nothing to audit).
        if recognised.is_none() {
            for row in 0..df.height() {
                let at = run_of(row, runs);
                let run = &mut runs[at];
                if run.device.is_none() {
                    run.device = v.device.get(row).map(str::to_string);
                }
            }
            return Ok(());
        }
        // A column's numbers, divided by `per_unit` (100 where the framework writes its MFU in
        // percent); a figure written with its unit (`9.63%`) is text, read as `mfu enrich` reads a
        // cell, `%` making it a fraction already.
        let column = |name: Option<&str>, per_unit: f64| -> PolarsResult<Figures> {
            Ok(match name.and_then(|n| df.column(n).ok()) {
                Some(c) if c.dtype() == &DataType::String => Figures::Parsed(
                    c.str()?
                        .iter()
                        .map(|cell| {
                            let cell = cell?;
                            let n = crate::values::parse_cell(cell).ok()??.value;
                            Some(if cell.trim_end().ends_with('%') {
                                n
                            } else {
                                n / per_unit
                            })
                        })
                        .collect(),
                ),
                Some(c) => Figures::Numbers(crate::summary::floats(c)?, per_unit),
                None => Figures::Missing,
            })
        };
        let per_unit = match recognised.as_ref().and_then(|r| r.framework.mfu_unit) {
            Some(Unit::Percent) => 100.0,
            _ => 1.0,
        };
        let logged = if unnamed {
            Figures::Parsed((0..df.height()).map(|r| v.logged_mfu.get(r)).collect())
        } else {
            column(
                recognised.as_ref().and_then(|r| r.mfu_column.as_deref()),
                per_unit,
            )
            .map_err(combine)?
        };
        let tflops = column(
            recognised.as_ref().and_then(|r| r.tflops_column.as_deref()),
            1.0,
        )
        .map_err(combine)?;
        let mfu = column(Some(MFU_WALL_CLOCK), 1.0).map_err(combine)?;
        let peak = column(Some(PEAK_FLOPS_PER_DEVICE), 1.0).map_err(combine)?;
        let rate = column(Some(TOKENS_PER_SECOND), 1.0).map_err(combine)?;
        // Each of the input's runs' rows still to come, where `--rows` keeps them: reserved at once
        // rather than doubled as they come.
        let mut left = vec![0usize; if keep_rows { keys.keys.len() } else { 0 }];
        if keep_rows {
            for row in 0..df.height() {
                left[keys.run(row)] += 1;
            }
        }
        for row in 0..df.height() {
            let at = run_of(row, runs);
            let run = &mut runs[at];
            if run.device.is_none() {
                run.device = v.device.get(row).map(str::to_string);
            }
            if run.dtype.is_none() {
                run.dtype = v.dtype.get(row).map(str::to_string);
            }
            let devices = v.num_devices.get(row).filter(|n| n.is_finite() && *n > 0.0);
            let r = Row {
                mfu_logged: logged.at(row),
                tflops_logged: tflops.at(row),
                tokens_per_second_per_device: rate.at(row).zip(devices).map(|(r, n)| r / n),
                mfu: mfu.at(row),
                peak: peak.at(row),
                flops_per_token: v.flops_per_token.get(row),
            };
            // The audit weighs only the rows with the framework's figure (the fold passes over the
            // rest); `--rows` shows every row.
            run.folded.push(&r);
            if !keep_rows {
                continue;
            }
            let left = &mut left[keys.run(row)];
            if run.rows.capacity() == run.rows.len() {
                run.rows.reserve_exact(*left);
                run.steps.reserve_exact(*left);
            }
            *left -= 1;
            run.steps.push(v.steps.get(row).copied().flatten());
            run.rows.push(r);
        }
        Ok(())
    }

    /// Each run's audit, in order of first appearance.
    pub fn finish(self) -> Vec<RunAudit> {
        let (logged_peak_flops, keep_rows) = (self.logged_peak_flops, self.keep_rows);
        self.runs
        .into_iter()
        .map(|g| {
            let Some(recognised) = g.recognised else {
                let mut notes = g.notes;
                notes.push(
                    "no framework's own MFU or TFLOP/s figure in the log: nothing to audit (docs/audit.md lists the frameworks and the names they log)"
                        .into(),
                );
                return RunAudit {
                    keys: g.keys,
                    audit: None,
                    recognised_by: None,
                    device: g.device,
                    notes,
                    sources: g.sources,
                    rows: Vec::new(),
                };
            };
            let figure: Vec<&str> = [&recognised.mfu_column, &recognised.tflops_column]
                .into_iter()
                .flatten()
                .map(String::as_str)
                .collect();
            let run = Run {
                device: g.device.clone(),
                dtype: g.dtype.as_deref().and_then(parse_dtype),
                logged_peak_flops,
                announced_peak: g.announced_peak,
            };
            let mut audit = g.folded.audit(recognised.framework, &figure.join(", "), &run);
            audit.notes.extend(g.notes);
            RunAudit {
                keys: g.keys,
                audit: Some(audit),
                recognised_by: Some(recognised.by),
                device: g.device,
                notes: Vec::new(),
                sources: g.sources,
                rows: if keep_rows {
                    g.steps.into_iter().zip(g.rows).collect()
                } else {
                    Vec::new()
                },
            }
        })
        .collect()
    }
}

/// The runs' audits as a frame: the key columns (named `key_names`), then [`AUDIT_COLUMNS`].
pub fn to_frame(key_names: &[String], runs: &[RunAudit]) -> PolarsResult<DataFrame> {
    let mut columns: Vec<Column> = Vec::new();
    for (k, name) in key_names.iter().enumerate() {
        let values: Vec<Option<String>> = runs.iter().map(|r| r.keys[k].clone()).collect();
        columns.push(Column::new(name.as_str().into(), values));
    }
    let text = |f: &dyn Fn(&RunAudit) -> Option<String>| -> Vec<Option<String>> {
        runs.iter().map(f).collect()
    };
    let number = |f: &dyn Fn(&Audit) -> Option<f64>| -> Vec<Option<f64>> {
        runs.iter().map(|r| r.audit.as_ref().and_then(f)).collect()
    };
    let count = |f: &dyn Fn(&Audit) -> usize| -> Vec<Option<u64>> {
        runs.iter()
            .map(|r| r.audit.as_ref().map(|a| f(a) as u64))
            .collect()
    };
    for name in AUDIT_COLUMNS {
        let c = match name {
            "framework" => Column::new(
                name.into(),
                text(&|r| r.audit.as_ref().map(|a| a.framework.clone())),
            ),
            "recognised_by" => Column::new(name.into(), text(&|r| r.recognised_by.clone())),
            "figure" => Column::new(
                name.into(),
                text(&|r| r.audit.as_ref().map(|a| a.figure.clone())),
            ),
            "rows" => Column::new(name.into(), count(&|a| a.rows)),
            "mfu_logged" => Column::new(name.into(), number(&|a| a.mfu_logged)),
            "tflops_logged" => Column::new(name.into(), number(&|a| a.tflops_logged)),
            "peak_logged" => Column::new(name.into(), number(&|a| a.peak_logged)),
            "peak_logged_from" => Column::new(
                name.into(),
                text(&|r| r.audit.as_ref().and_then(|a| a.peak_logged_from.clone())),
            ),
            "device" => Column::new(name.into(), text(&|r| r.device.clone())),
            "peak_emulated" => Column::new(name.into(), number(&|a| a.peak_emulated)),
            "emulation" => Column::new(
                name.into(),
                text(&|r| r.audit.as_ref().and_then(|a| a.emulation.clone())),
            ),
            "flops_per_token_logged" => {
                Column::new(name.into(), number(&|a| a.flops_per_token_logged))
            }
            "mfu" => Column::new(name.into(), number(&|a| a.mfu)),
            "peak" => Column::new(name.into(), number(&|a| a.peak)),
            "flops_per_token" => Column::new(name.into(), number(&|a| a.flops_per_token)),
            "mfu_logged_rebased" => Column::new(name.into(), number(&|a| a.mfu_logged_rebased)),
            "ratio" => Column::new(name.into(), number(&|a| a.ratio)),
            "peak_factor" => Column::new(name.into(), number(&|a| a.peak_factor)),
            "numerator_factor" => Column::new(name.into(), number(&|a| a.numerator_factor)),
            "impossible_rows" => Column::new(name.into(), count(&|a| a.impossible_rows)),
            "placeholder_rows" => Column::new(name.into(), count(&|a| a.placeholder_rows)),
            "verdict" => Column::new(
                name.into(),
                text(&|r| r.audit.as_ref().map(|a| a.verdict.clone())),
            ),
            "notes" => Column::new(name.into(), text(&|r| Some(notes_of(r).join("; ")))),
            "source_files" => Column::new(name.into(), text(&|r| Some(r.sources.join("; ")))),
            other => unreachable!("column {other} has no value"),
        };
        columns.push(c);
    }
    DataFrame::new(runs.len(), columns)
}

/// A run's notes: the audit's and the run's own.
pub fn notes_of(run: &RunAudit) -> Vec<String> {
    let mut notes: Vec<String> = run
        .audit
        .as_ref()
        .map(|a| a.notes.clone())
        .unwrap_or_default();
    notes.extend(run.notes.iter().cloned());
    notes
}

/// The audit of `parts` in order, each read whole or a console log folded window by window
/// ([`Plan::fold_windows`]), none of its rows held; `Err` where they are to be read whole (and why). The
/// same audit as [`audit_runs`] of every input read whole.
pub fn audit_parts(
    plan: &Plan,
    parts: Vec<Part>,
    observer: &dyn Observer,
    by: &[String],
    logged_peak_flops: Option<f64>,
    keep_rows: bool,
) -> Result<FoldedRuns<RunAudit>, PipelineError> {
    let mut runs = AuditRuns::new(logged_peak_flops, keep_rows);
    let mut names = Vec::new();
    let mut reads = Vec::new();
    for part in parts {
        let input = match part {
            Part::Loaded(display, l) => {
                let (n, group) = run_group(&display, &l, by)?;
                names.push(n);
                runs.add(&display, &l, &group)?;
                continue;
            }
            Part::Windows(input) => input,
        };
        let mut grouped: Option<GroupBy> = None;
        let read = plan.fold_windows(input, observer, &mut |window| {
            let group = match &grouped {
                Some(group) => group,
                None => {
                    let (n, group) = run_group(&input.display, &window.loaded, by)?;
                    names.push(n);
                    grouped.insert(group)
                }
            };
            runs.add(&input.display, &window.loaded, group)?;
            Ok(Fold::On)
        })?;
        match read {
            Ok(read) => reads.push(read),
            Err(why) => return Ok(Err(why)),
        }
    }
    Ok(Ok(((key_names(by, &names), runs.finish()), reads)))
}
