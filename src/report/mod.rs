//! `mfu report`: one self-contained HTML page for a run or a fleet.
//!
//! The page holds everything it shows and everything it runs: the data as one JSON document, the
//! charting library (uPlot 1.6.32, MIT, vendored in `assets/` and embedded at build time), the page's
//! own script and style. A content security policy forbids every request, so the file works from
//! `file://` with the network off and can go into a ticket or a CI artifact as it is.
//!
//! What it shows: what was read (inputs, runs, rows, the version, when); the per-run summary (the
//! columns of `mfu summary`, sortable, flags highlighted); MFU against step for every run on one chart
//! (wall-clock and fwd+bwd), tokens per second and step time below on the same steps, cursors and zoom
//! shared; a section per device with the entry that matched, its dense peaks and their sources, or why
//! no peak is known and what to do; the FLOPs per token used and where each came from.
//!
//! **Drawing a fleet.** Every run is drawn on one grid of steps of at most [`ReportOptions::points`]
//! buckets spanning all runs (the chart is about a thousand pixels wide: more points would not show),
//! fewer for a fleet: 100,000 numbers a chart across runs, never fewer than 200 buckets. In
//! each bucket a run's MFU is the time-weighted mean of its steps' MFU, which is the bucket's
//! Σ FLOPs / Σ (devices × peak × time) when the peak and device count are constant within the run;
//! tokens per second is Σ tokens / Σ time, the step time the mean. Numbers are written to 4
//! significant digits. The summary uses every row. 200 runs of 10,000 steps give a page of about
//! 1.6 MB (`tests/report.rs` holds it under 3 MB).

use std::collections::HashMap;
use std::fmt::Write as _;

use polars::prelude::DataType;
use serde_json::{json, Value};

use crate::columns::{ColumnMapping, Field, FieldSource, FieldValues};
use crate::compute::{MFU_FWD_BWD, MFU_WALL_CLOCK, RESOLVED_DEVICE};
use crate::goodput::Goodput;
use crate::peaks::{cited_in, normalize, Dtype, MatchOutcome, NoMatch, Resolver};
use crate::summary::RunSummary;

const UPLOT_JS: &str = include_str!("assets/uPlot.iife.min.js");
const UPLOT_CSS: &str = include_str!("assets/uPlot.min.css");
const PAGE_JS: &str = include_str!("assets/report.js");
const PAGE_CSS: &str = include_str!("assets/report.css");

/// How the page is made.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    /// Buckets of the step grid the charts are drawn on.
    pub points: usize,
    /// When the report was made, as shown (see [`generated_at`]).
    pub generated: String,
    /// The page's title.
    pub title: String,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            points: 1000,
            generated: generated_at(),
            title: "MFU report".into(),
        }
    }
}

/// Now in UTC (RFC 3339, to the second), or `SOURCE_DATE_EPOCH` when set, so that a report can be
/// made byte for byte again.
pub fn generated_at() -> String {
    let seconds = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64)
        });
    chrono::DateTime::from_timestamp(seconds, 0)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default()
}

/// One input read for the report: its name, its enriched rows with the values and mapping behind them,
/// and the column that keys its runs (none: the whole input is one run).
pub struct ReportInput<'a> {
    pub display: &'a str,
    pub frame: &'a polars::prelude::DataFrame,
    pub values: &'a FieldValues,
    pub mapping: &'a ColumnMapping,
    pub key_column: Option<String>,
}

/// One row as the charts need it: step, MFU, fwd+bwd MFU, tokens, step time.
type ChartRow = (f64, Option<f64>, Option<f64>, Option<f64>, Option<f64>);

/// A run's rows gathered from the inputs, in input order.
#[derive(Default)]
struct RunRows {
    rows: Vec<ChartRow>,
    flops: Vec<f64>,
    flops_from: Vec<String>,
}

/// The report page for `inputs`, with `runs` (the summaries, from [`crate::pipeline::summary`]) and
/// `goodput` (each run's keys and where its time went, from [`crate::goodput`]) keyed by `key_names`.
pub fn html(
    inputs: &[ReportInput],
    key_names: &[String],
    runs: &[RunSummary],
    goodput: &[(Vec<Option<String>>, Goodput)],
    resolver: &Resolver,
    options: &ReportOptions,
) -> Result<String, polars::prelude::PolarsError> {
    let (order, gathered, devices) = gather(inputs)?;
    let data = json!({
        "meta": {
            "title": options.title,
            "version": env!("CARGO_PKG_VERSION"),
            "generated": options.generated,
            "inputs": inputs.iter().map(|i| i.display).collect::<Vec<_>>(),
            "runs": runs.len(),
            "rows": inputs.iter().map(|i| i.frame.height()).sum::<usize>(),
            "points": options.points,
            "peak_table_sha256": resolver.table().sha256(),
        },
        "summary": summary_json(key_names, runs),
        "goodput": goodput_json(key_names, goodput),
        "series": series_json(&order, &gathered, points_per_run(options.points, order.len())),
        "devices": devices_json(&devices, resolver),
        "flops": flops_json(&order, &gathered),
    });
    Ok(page(&options.title, &data))
}

/// Where each run's time went: its keys and buckets, for the page's bars.
fn goodput_json(key_names: &[String], runs: &[(Vec<Option<String>>, Goodput)]) -> Value {
    json!({
        "keys": key_names,
        "rows": runs.iter().map(|(keys, g)| json!({
            "keys": keys,
            "attempts": g.attempts,
            "launches_without_steps": g.launches_without_steps,
            "attempt_steps": g.attempt_steps,
            "steps_kept": g.steps_kept,
            "steps_executed": g.steps_executed,
            "elapsed_s": g.elapsed_s,
            "productive_s": g.productive_s,
            "wasted_progress_s": g.wasted_progress_s,
            "startup_s": g.startup_s,
            "pause_s": g.pause_s,
            "pause_evaluation_s": g.pause_evaluation_s,
            "pause_checkpoint_s": g.pause_checkpoint_s,
            "recovery_s": g.recovery_s,
            "other_s": g.other_s,
            "goodput": g.goodput,
            "mfu_productive": g.mfu_productive,
            "mfu_effective": g.mfu_effective,
            "notes": g.notes,
        })).collect::<Vec<_>>(),
    })
}

/// Each run's rows, in order of first appearance, and every device name seen with its rows' dtypes.
#[allow(clippy::type_complexity)]
fn gather(
    inputs: &[ReportInput],
) -> Result<
    (
        Vec<String>,
        HashMap<String, RunRows>,
        Vec<(String, Vec<String>)>,
    ),
    polars::prelude::PolarsError,
> {
    let mut order: Vec<String> = Vec::new();
    let mut runs: HashMap<String, RunRows> = HashMap::new();
    let mut devices: Vec<(String, Vec<String>)> = Vec::new();
    for input in inputs {
        let frame = input.frame;
        let values = input.values;
        let floats = |name: &str| -> Result<Vec<Option<f64>>, polars::prelude::PolarsError> {
            Ok(frame
                .column(name)?
                .cast(&DataType::Float64)?
                .f64()?
                .iter()
                .collect())
        };
        let mfu = floats(MFU_WALL_CLOCK)?;
        let mfu_fb = floats(MFU_FWD_BWD)?;
        let resolved: Vec<Option<String>> = frame
            .column(RESOLVED_DEVICE)?
            .str()?
            .iter()
            .map(|s| s.map(str::to_string))
            .collect();
        let keys = crate::plot::run_keys(frame, input.key_column.as_deref(), input.display)?;
        let flops_from = describe_source(input.mapping.source(Field::FlopsPerToken));
        for row in 0..frame.height() {
            let key = &keys[row];
            let run = runs.entry(key.clone()).or_insert_with(|| {
                order.push(key.clone());
                RunRows::default()
            });
            let step = values
                .steps
                .get(row)
                .copied()
                .flatten()
                .unwrap_or(row as f64 + 1.0);
            let time = values
                .step_time_s
                .get(row)
                .filter(|t| t.is_finite() && *t > 0.0);
            let tokens = values
                .tokens
                .get(row)
                .filter(|t| t.is_finite() && *t >= 0.0);
            run.rows.push((step, mfu[row], mfu_fb[row], tokens, time));
            if let Some(f) = values.flops_per_token.get(row).filter(|f| f.is_finite()) {
                if !run.flops.contains(&f) {
                    run.flops.push(f);
                }
            }
            if !run.flops_from.contains(&flops_from) {
                run.flops_from.push(flops_from.clone());
            }
            // Devices: the raw name where it is known, else the entry it resolved to.
            let raw = values
                .device
                .get(row)
                .map(str::to_string)
                .or(resolved[row].clone());
            if let Some(name) = raw {
                let dtype = values.dtype.get(row).unwrap_or("").to_string();
                match devices.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, dtypes)) => {
                        if !dtypes.contains(&dtype) {
                            dtypes.push(dtype);
                        }
                    }
                    None => devices.push((name, vec![dtype])),
                }
            }
        }
    }
    Ok((order, runs, devices))
}

/// Where a field's value came from, in words (as `-v` says).
fn describe_source(source: &FieldSource) -> String {
    match source {
        FieldSource::Column { name, .. } => format!("the log's column '{name}'"),
        FieldSource::Number(_) => "a constant (--flops-per-token)".into(),
        FieldSource::Text(t) => format!("a constant '{t}'"),
        FieldSource::Fact { origin, .. } => origin.clone(),
        FieldSource::ModelConfig => "counted from --model-config at the sequence length".into(),
        FieldSource::Missing => {
            "not known: MFU is null (give --flops-per-token or --model-config)".into()
        }
    }
}

/// A number to 4 significant digits, or null.
fn compact(v: Option<f64>) -> Value {
    match v.filter(|v| v.is_finite()) {
        None => Value::Null,
        Some(0.0) => json!(0),
        Some(v) => {
            let digits = 3 - v.abs().log10().floor() as i32;
            let rounded = if digits > 0 {
                let scale = 10f64.powi(digits.min(15));
                (v * scale).round() / scale
            } else {
                let scale = 10f64.powi(-digits);
                (v / scale).round() * scale
            };
            // Whole numbers without ".0": a fleet's page is mostly numbers.
            if rounded.fract() == 0.0 && rounded.abs() < 9.0e15 {
                json!(rounded as i64)
            } else {
                serde_json::Number::from_f64(rounded).map_or(Value::Null, Value::Number)
            }
        }
    }
}

/// Points a chart draws per run: `points`, fewer for a fleet so that the page stays light (every run's
/// three series share [`POINT_BUDGET`] numbers, but never fewer than 200 a run).
fn points_per_run(points: usize, runs: usize) -> usize {
    points.min((POINT_BUDGET / runs.max(1)).max(200))
}

/// Numbers a chart's lines may hold in all, across runs.
const POINT_BUDGET: usize = 100_000;

fn summary_json(key_names: &[String], runs: &[RunSummary]) -> Value {
    let rows: Vec<Value> = runs
        .iter()
        .map(|r| {
            json!({
                "keys": r.keys,
                "device": r.device,
                "dtype": r.dtype,
                "num_devices": r.num_devices,
                "steps": r.steps,
                "first_step": r.first_step,
                "last_step": r.last_step,
                "tokens": r.tokens,
                "step_time_total_s": r.step_time_total_s,
                "tokens_per_second": r.tokens_per_second,
                "mfu_wall_clock": r.mfu_wall_clock,
                "mfu_fwd_bwd": r.mfu_fwd_bwd,
                "mfu_wall_clock_p10": r.mfu_wall_clock_p10,
                "mfu_wall_clock_p50": r.mfu_wall_clock_p50,
                "mfu_wall_clock_p90": r.mfu_wall_clock_p90,
                "peak_flops_per_device": r.peak_flops_per_device,
                "flags": r.flags,
                "framework": r.framework,
                "mfu_logged": r.mfu_logged,
                "audit": r.audit,
            })
        })
        .collect();
    json!({ "keys": key_names, "rows": rows })
}

/// Every run on one grid of at most `points` step buckets (see the module's doc).
fn series_json(order: &[String], runs: &HashMap<String, RunRows>, points: usize) -> Value {
    let steps: Vec<f64> = runs
        .values()
        .flat_map(|r| r.rows.iter().map(|row| row.0))
        .collect();
    let (Some(low), Some(high)) = (
        steps.iter().copied().reduce(f64::min),
        steps.iter().copied().reduce(f64::max),
    ) else {
        return json!({ "steps": [], "runs": [] });
    };
    let mut distinct = steps.clone();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    // The grid: every distinct step when there are few, else equal buckets over the span.
    let (grid, bucket_of): (Vec<f64>, Box<dyn Fn(f64) -> usize>) =
        if distinct.len() <= points.max(2) {
            let index: HashMap<u64, usize> = distinct
                .iter()
                .enumerate()
                .map(|(i, s)| (s.to_bits(), i))
                .collect();
            (
                distinct.clone(),
                Box::new(move |s: f64| index[&s.to_bits()]),
            )
        } else {
            let n = points.max(2);
            let width = (high - low) / n as f64;
            let grid = (0..n)
                .map(|i| (low + width * (i as f64 + 0.5)).round())
                .collect();
            (
                grid,
                Box::new(move |s: f64| (((s - low) / width) as usize).min(n - 1)),
            )
        };
    let n = grid.len();
    let series: Vec<Value> = order
        .iter()
        .map(|name| {
            let run = &runs[name];
            // Per bucket: Σ mfu·t, Σ t (for MFU), Σ mfu_fb·t, Σ t (fwd+bwd), Σ tokens, Σ t (tokens), Σ t, count.
            let mut sums = vec![[0f64; 8]; n];
            for &(step, mfu, mfu_fb, tokens, time) in &run.rows {
                let b = &mut sums[bucket_of(step)];
                let t = time.unwrap_or(0.0);
                if let (Some(m), true) = (mfu.filter(|m| m.is_finite()), t > 0.0) {
                    b[0] += m * t;
                    b[1] += t;
                }
                if let (Some(m), true) = (mfu_fb.filter(|m| m.is_finite()), t > 0.0) {
                    b[2] += m * t;
                    b[3] += t;
                }
                if let (Some(k), true) = (tokens, t > 0.0) {
                    b[4] += k;
                    b[5] += t;
                }
                if t > 0.0 {
                    b[6] += t;
                    b[7] += 1.0;
                }
            }
            let ratio = |num: usize, den: usize| -> Vec<Value> {
                sums.iter()
                    .map(|b| compact((b[den] > 0.0).then(|| b[num] / b[den])))
                    .collect()
            };
            let has_fb = sums.iter().any(|b| b[3] > 0.0);
            json!({
                "name": name,
                "mfu": ratio(0, 1),
                "mfu_fwd_bwd": if has_fb { Value::Array(ratio(2, 3)) } else { Value::Null },
                "tokens_per_second": ratio(4, 5),
                "step_time_s": ratio(6, 7),
            })
        })
        .collect();
    json!({ "steps": grid, "runs": series })
}

/// A section per device name: the entry that matched and its peaks, or why none is known.
fn devices_json(devices: &[(String, Vec<String>)], resolver: &Resolver) -> Value {
    let entries = resolver.table().entries();
    let sections: Vec<Value> = devices
        .iter()
        .map(|(name, dtypes)| {
            let dtypes: Vec<String> = dtypes.iter().filter(|d| !d.is_empty()).cloned().collect();
            match resolver.matcher().find(name) {
                MatchOutcome::Found(found) => {
                    let e = &entries[found.entry];
                    let peaks: Vec<Value> = Dtype::ALL
                        .iter()
                        .filter_map(|d| e.peak(*d).map(|p| json!([d.as_str(), p])))
                        .collect();
                    let missing: Vec<String> = dtypes
                        .iter()
                        .filter(|d| {
                            crate::peaks::parse_dtype(d).is_some_and(|p| e.peak(p).is_none())
                        })
                        .map(|d| {
                            format!("{} has no {d} rate in the table: MFU is null for those rows; give --peak-flops if you know it, or --dtype if the run's precision was another", e.name)
                        })
                        .collect();
                    json!({
                        "name": name,
                        "dtypes": dtypes,
                        "resolved": e.name,
                        "vendor": e.vendor,
                        "form_factor": e.form_factor,
                        "matched": format!(
                            "{} by the pattern '{}'",
                            found.matched_tokens.iter().map(|t| format!("'{t}'")).collect::<Vec<_>>().join(" "),
                            found.pattern
                        ),
                        "peaks": peaks,
                        "source": e.source,
                        "documents": cited_in(&e.source),
                        "note": e.note,
                        "warnings": missing,
                    })
                }
                MatchOutcome::NotFound(why) => {
                    let reason = match why {
                        NoMatch::Empty => "the name is empty".to_string(),
                        NoMatch::Unmatched => {
                            let closest: Vec<&str> = resolver
                                .matcher()
                                .suggest(name)
                                .iter()
                                .map(|&i| entries[i].name.as_str())
                                .collect();
                            let mut r = format!("no entry matches the tokens '{}'", normalize(name));
                            if !closest.is_empty() {
                                let _ = write!(r, " (closest: {})", closest.join(", "));
                            }
                            r
                        }
                        NoMatch::CutDown { qualifier, entry } => format!(
                            "'{qualifier}' marks a cut-down variant of {}, which has no entry of its own",
                            entries[entry].name
                        ),
                        NoMatch::Ambiguous { entries: tied } => format!(
                            "it matches {} equally",
                            tied.iter().map(|&i| entries[i].name.as_str()).collect::<Vec<_>>().join(" and ")
                        ),
                    };
                    json!({
                        "name": name,
                        "dtypes": dtypes,
                        "resolved": Value::Null,
                        "warnings": [format!(
                            "unknown device '{name}': {reason}. MFU is null, never guessed; add the device with --peaks FILE, or force a value with --peak-flops F"
                        )],
                    })
                }
            }
        })
        .collect();
    Value::Array(sections)
}

fn flops_json(order: &[String], runs: &HashMap<String, RunRows>) -> Value {
    Value::Array(
        order
            .iter()
            .map(|name| {
                let run = &runs[name];
                json!({ "run": name, "flops_per_token": run.flops, "from": run.flops_from })
            })
            .collect(),
    )
}

/// JSON that can sit inside a `<script>` element: `<`, `>` and `&` escaped as JSON allows.
fn script_safe(data: &Value) -> String {
    data.to_string()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// Text for HTML.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The page: everything inline, no request allowed.
fn page(title: &str, data: &Value) -> String {
    let mut html = String::with_capacity(data.to_string().len() + UPLOT_JS.len() + 32 * 1024);
    let _ = write!(
        html,
        r#"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="mfu {version}">
<title>{title}</title>
<style>{uplot_css}</style>
<style>{page_css}</style>
</head>
<body>
<header id="header"><h1>{title}</h1><p id="meta"></p></header>
<main>
<section id="summary-section"><h2>Runs</h2><table id="summary"></table><div id="audits"></div></section>
<section id="goodput-section"><h2>Where the time went</h2>
<p class="hint">Each run's elapsed time, from its first step's start to its last step's end, in buckets (<code>mfu goodput</code>, docs/goodput.md): productive steps, steps a later attempt ran again, start-up, pauses between steps, recovery between attempts, other.</p>
<div id="goodput"></div></section>
<section id="charts-section"><h2>MFU, throughput and step time by step</h2>
<p class="hint">Drag across a chart to zoom (double-click to reset), click a run in a legend to hide or show it; the cursor moves on all three charts together.</p>
<div id="chart-mfu" class="chart"></div><div id="chart-tps" class="chart"></div><div id="chart-time" class="chart"></div>
<p id="sampling" class="hint"></p></section>
<section id="devices-section"><h2>Devices and their peaks</h2><div id="devices"></div></section>
<section id="flops-section"><h2>FLOPs per token</h2><table id="flops"></table></section>
</main>
<script id="data" type="application/json">{data}</script>
<script>{uplot_js}</script>
<script>{page_js}</script>
</body>
</html>
"#,
        version = env!("CARGO_PKG_VERSION"),
        title = escape(title),
        uplot_css = UPLOT_CSS,
        page_css = PAGE_CSS,
        data = script_safe(data),
        uplot_js = UPLOT_JS,
        page_js = PAGE_JS,
    );
    html
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_to_four_significant_digits() {
        assert_eq!(compact(Some(0.421_337)), json!(0.4213));
        assert_eq!(compact(Some(123_456.7)), json!(123_500));
        assert_eq!(compact(Some(2.5)), json!(2.5));
        assert_eq!(compact(Some(0.0)), json!(0));
        assert_eq!(compact(Some(f64::NAN)), Value::Null);
        assert_eq!(compact(None), Value::Null);
    }

    #[test]
    fn data_cannot_close_its_script() {
        let data = json!({"name": "</script><script>alert(1)</script> & co"});
        let text = script_safe(&data);
        assert!(!text.contains("</script"));
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), data);
    }
}
