//! An enrich run from inputs to outputs: every input read and enriched, its rows written to the
//! [`Destination`], and one [`Report`] of what happened.
//!
//! Large inputs into one output file are streamed in blocks ([`super::stream`]); when that cannot give
//! what reading whole gives, the run starts again reading every input whole (an [`Event::Restart`]).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use polars::prelude::DataFrame;

use crate::compute::ComputeStats;
use crate::enrich::{combine, output_metadata};
use crate::read::memory::format_size;
use crate::read::{Input, Reject};
use crate::write::{write_file, write_stdout, Metadata};

use super::destination::Destination;
use super::job::{InputReport, Outcome, RunOptions};
use super::stream::{enrich_streaming, StopReason};
use super::{timings_wanted, Event, Observer, PipelineError, Plan};

/// What a run did, for its user.
#[derive(Debug)]
pub struct Report {
    /// Inputs asked for, and inputs enriched.
    pub inputs: usize,
    pub enriched: usize,
    /// Counts over every row written.
    pub stats: ComputeStats,
    /// Lines or rows not read, with the input each came from, in input and line order.
    pub rejects: Vec<(String, Reject)>,
    /// What the user should know, each once: the inputs' own warnings, then the run's.
    pub warnings: Vec<String>,
    /// The inputs that failed, in input order.
    pub failures: Vec<PipelineError>,
    /// Text files a folder walk found that are not console logs mfu reads: skipped, not counted in
    /// `inputs`.
    pub skipped: Vec<super::Skipped>,
    /// Where the rows went (a file or a folder); `None` for standard output or when nothing was written.
    pub wrote: Option<String>,
}

/// Runs `plan` to the outputs `run` asks for. An `Err` is a failure of the whole run (no output could be
/// planned, written or started); a failure of one input is in [`Report::failures`].
pub fn run(
    plan: &Plan,
    run: &RunOptions,
    observer: &dyn Observer,
) -> Result<Report, PipelineError> {
    if let Some(url) = run
        .output
        .output
        .as_deref()
        .filter(|o| crate::store::is_url(o))
    {
        return run_to_url(plan, run, observer, url);
    }
    let destination = Destination::plan(&run.output, &plan.inputs)?;
    let metadata = output_metadata(&plan.options);
    let started = Instant::now();
    let why = StopReason::new();
    let outcome = match enrich_streaming(plan, run, &destination, &metadata, observer, &why)? {
        Some(outcome) => outcome,
        None => {
            if let (true, Some(why)) = (plan.verbose, why.get()) {
                let limit = plan.read.budget.as_ref().map_or(0, |b| b.limit());
                observer.on(Event::Verbose(&format!(
                    "reading every input whole, within --max-memory {}: {why}",
                    format_size(limit)
                )));
            }
            observer.on(Event::Restart);
            enrich_whole(plan, run, &destination, &metadata, observer, started)?
        }
    };
    let report = report(&plan.inputs, outcome);
    if report.inputs == 0 {
        return Err(PipelineError::Output(format!(
            "no input holds a log mfu reads: {}",
            super::skip_warning(&report.skipped).join("; ")
        )));
    }
    if let Some(path) = &run.rejects {
        write_rejects(path, &report.rejects)?;
    }
    Ok(report)
}

/// A run whose output is a URL: written to a private temporary file, then uploaded (see
/// [`crate::store`]); an existing object is refused before any work unless `--force`.
fn run_to_url(
    plan: &Plan,
    run: &RunOptions,
    observer: &dyn Observer,
    url: &str,
) -> Result<Report, PipelineError> {
    let (remote, local, _folder) = super::remote_output(url, &plan.storage, run.output.force)?;
    let mut here = run.clone();
    here.output.output = Some(local.display().to_string());
    here.output.force = true;
    let mut report = self::run(plan, &here, observer)?;
    if report.wrote.is_some() {
        remote.upload(&local, run.output.force)?;
        report.wrote = Some(remote.url.clone());
    }
    Ok(report)
}

/// Reads and enriches every input whole, then writes.
fn enrich_whole(
    plan: &Plan,
    run: &RunOptions,
    destination: &Destination,
    metadata: &Metadata,
    observer: &dyn Observer,
    started: Instant,
) -> Result<Outcome, PipelineError> {
    let inputs = &plan.inputs;
    let rows_done = AtomicUsize::new(0);
    let processed = plan.for_each_input(|i, input| {
        let result = process(plan, input, run, destination, i, metadata, observer);
        let rows = result.as_ref().map_or(0, |p| p.report.stats.rows);
        rows_done.fetch_add(rows, Ordering::Relaxed);
        observer.on(Event::InputDone { rows });
        result
    })?;
    let timings = timings_wanted();
    if timings {
        observer.on(Event::Timing(&format!(
            "all inputs read and enriched {:.3}s",
            started.elapsed().as_secs_f64()
        )));
    }
    let mut parts = Vec::new();
    let mut results = Vec::with_capacity(inputs.len());
    for (input, result) in inputs.iter().zip(processed) {
        results.push(result.map(|p| {
            if let Some(frame) = p.frame {
                parts.push((input.display.clone(), frame));
            }
            p.report
        }));
    }
    let failed = results.iter().any(|r| r.is_err());

    let mut wrote = None;
    if !run.fail_fast || !failed {
        match destination {
            Destination::One { path, format } if !parts.is_empty() => {
                let combine_started = Instant::now();
                let mut df = if inputs.len() > 1 {
                    combine(parts).map_err(PipelineError::Combine)?
                } else {
                    parts.pop().map(|(_, f)| f).unwrap_or_default()
                };
                if timings {
                    observer.on(Event::Timing(&format!(
                        "combine {:.3}s",
                        combine_started.elapsed().as_secs_f64()
                    )));
                }
                let write_started = Instant::now();
                match path {
                    Some(p) => {
                        write_file(p, *format, &mut df, metadata, run.output.force)?;
                        wrote = Some(p.display().to_string());
                    }
                    None => write_stdout(*format, &mut df, metadata)?,
                }
                if timings {
                    observer.on(Event::Timing(&format!(
                        "write {:.3}s",
                        write_started.elapsed().as_secs_f64()
                    )));
                }
            }
            Destination::One { .. } => {}
            Destination::PerInput { dir, .. } => wrote = Some(dir.display().to_string()),
        }
    }
    Ok(Outcome { results, wrote })
}

/// What happened to one input.
struct Processed {
    /// The enriched rows, when they go into the one output (`None` once written to its own file).
    frame: Option<DataFrame>,
    report: InputReport,
}

/// Reads, enriches and (to one file per input) writes one input.
fn process(
    plan: &Plan,
    input: &Input,
    run: &RunOptions,
    destination: &Destination,
    index: usize,
    metadata: &Metadata,
    observer: &dyn Observer,
) -> Result<Processed, PipelineError> {
    let loaded = plan.load(input, false, observer)?;
    let held = loaded.held;
    let enriched = loaded.enriched;
    if run.strict {
        if let Some((why, rows)) = enriched.stats.unresolved.first() {
            return Err(PipelineError::Strict {
                input: input.display.clone(),
                why: why.to_string(),
                rows: *rows,
            });
        }
    }
    let mut frame = Some(enriched.frame);
    if let Destination::PerInput { paths, format, .. } = destination {
        let mut df = frame.take().expect("just set");
        write_file(&paths[index], *format, &mut df, metadata, run.output.force)?;
        drop(held); // written: the memory its rows took is free again
    } else {
        held.keep(); // every input's rows are held until they are written together
    }
    Ok(Processed {
        frame,
        report: InputReport {
            stats: enriched.stats,
            warnings: loaded.warnings,
            rejects: loaded.rejects,
        },
    })
}

/// Adds up what each input gave, and words the run's own warnings.
fn report(inputs: &[Input], outcome: Outcome) -> Report {
    let mut report = Report {
        inputs: inputs.len(),
        enriched: 0,
        stats: ComputeStats::default(),
        rejects: Vec::new(),
        warnings: Vec::new(),
        failures: Vec::new(),
        skipped: Vec::new(),
        wrote: outcome.wrote,
    };
    for (input, result) in inputs.iter().zip(outcome.results) {
        match result {
            Ok(p) => {
                report.enriched += 1;
                report.warnings.extend(p.warnings);
                report.stats.add(&p.stats);
                let display = &input.display;
                report
                    .rejects
                    .extend(p.rejects.into_iter().map(|r| (display.clone(), r)));
            }
            Err(e) if e.is_skip(input) => report.skipped.extend(e.skipped(input)),
            Err(e) => report.failures.push(e),
        }
    }
    report.inputs -= report.skipped.len();
    let mut warnings = stats_warnings(&report.stats);
    warnings.extend(super::skip_warning(&report.skipped));
    report.warnings.extend(warnings);
    report
}

/// The warnings counts over written rows call for: null derived values, overflows, unresolved peaks (one
/// per reason), impossible MFU.
pub fn stats_warnings(total: &ComputeStats) -> Vec<String> {
    let mut warnings = Vec::new();
    if total.bad_step_time_rows + total.bad_count_rows > 0 {
        warnings.push(format!(
            "{} row(s) with a missing, zero, negative or non-finite step time and {} with a negative or non-finite count have null derived values",
            total.bad_step_time_rows, total.bad_count_rows
        ));
    }
    if total.overflow_rows > 0 {
        warnings.push(format!(
            "{} row(s) have a derived value too large for a 64-bit float (a step time such as 5e-324?): null instead of infinity",
            total.overflow_rows
        ));
    }
    let mut unresolved: BTreeMap<(String, &str), usize> = BTreeMap::new();
    for (why, rows) in &total.unresolved {
        *unresolved.entry((why.to_string(), why.hint())).or_default() += rows;
    }
    for ((why, hint), rows) in &unresolved {
        warnings.push(format!(
            "{why}: MFU is null for {rows} row{}; {hint}",
            if *rows == 1 { "" } else { "s" }
        ));
    }
    if total.mfu_above_one_rows > 0 {
        warnings.push(format!(
            "{} rows have MFU above 1, which is impossible: check flops_per_token and the device",
            total.mfu_above_one_rows
        ));
    }
    let (logged_rows, logged_max) = total.logged_mfu_above_one;
    if logged_rows > 0 {
        warnings.push(format!(
            "{logged_rows} rows have a logged MFU above 1 (up to {:.4}, {:.0}%), which is impossible: the framework's FLOPs count or peak is wrong",
            logged_max,
            logged_max * 100.0
        ));
    }
    if total.corrected_mfu_above_one_rows > 0 {
        warnings.push(format!(
            "{} rows have mfu_logged_corrected above 1, which is impossible: the logged MFU's FLOPs count is wrong, or --logged-peak-flops",
            total.corrected_mfu_above_one_rows
        ));
    }
    warnings
}

/// Writes rejected lines as JSON Lines (file, line, column, reason, text), atomically.
fn write_rejects(
    path: &std::path::Path,
    rejects: &[(String, Reject)],
) -> Result<(), PipelineError> {
    let mut text = Vec::new();
    for (file, r) in rejects {
        let line = serde_json::json!({
            "file": file, "line": r.line, "column": r.column, "reason": r.reason, "text": r.text,
        });
        text.extend_from_slice(line.to_string().as_bytes());
        text.push(b'\n');
    }
    crate::write::atomic::write_bytes(path, &text, true).map_err(|error| PipelineError::Io {
        what: format!("writing {}", path.display()),
        error,
    })
}
