//! `mfu summary`: one row per run.

use std::process::ExitCode;

use clap::Args;

use mfu::pipeline::summary::{summarize_runs, summary_parts};
use mfu::pipeline::windowed::Part;
use mfu::pipeline::{Observer, Plan};
use mfu::summary::{to_frame, RunSummary};

use super::source::SourceArgs;
use super::{
    aligned_table, key_cells, run_per_run, tflops_text, Gathered, RunsOutput, RunsOutputArgs,
};

/// Summarise runs: aggregate MFU, throughput and percentiles, one row per run.
///
/// Reads raw logs (enriching them with the same flags as `mfu enrich`) or tables mfu already enriched.
/// A run is a value of --by (default: the run_id field, else each input file). Its MFU is
/// sum(tokens x flops_per_token) / sum(num_devices x peak x step_time), not a mean of per-step MFU; p10,
/// p50 and p90 are of the per-step values. Flags: unknown device, mfu above 1, fewer than 10 steps.
///
/// Examples:
///   mfu summary fixtures/runs.jsonl
///   mfu summary enriched.parquet --skip-steps 20 --format csv -o runs.csv
///   mfu summary logs/ --by run --by dtype --format json
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct SummaryArgs {
    #[command(flatten)]
    pub source: SourceArgs,

    /// Group rows into runs by this column (or a field name such as run_id). Repeatable. A key named like
    /// a summary column (dtype, device, ...) is written as by_<key>.
    #[arg(long = "by", value_name = "KEY")]
    pub by: Vec<String>,

    /// Leave each run's first N steps (warm-up) out of the aggregates.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub skip_steps: u64,

    #[command(flatten)]
    pub out: RunsOutputArgs,
}

pub fn run(args: &SummaryArgs) -> anyhow::Result<ExitCode> {
    let options = args.source.options(None);
    let (skip_steps, logged_peak) = (args.skip_steps as f64, args.source.logged_peak_flops);
    // One large console log of one run is folded window by window, its rows never held at once.
    let fold = |plan: &Plan, parts: Vec<Part>, observer: &dyn Observer| {
        summary_parts(plan, parts, observer, &args.by, skip_steps, logged_peak)
    };
    run_per_run(&args.source, &options, &args.out, fold, |inputs, format| {
        let (key_names, runs) = match inputs {
            Gathered::Folded(summarized) => summarized,
            Gathered::Loaded(loaded) => summarize_runs(&loaded, &args.by, skip_steps, logged_peak)?,
        };
        RunsOutput::of(
            format,
            || table_text(&key_names, &runs),
            || json_text(&key_names, &runs),
            || Ok(to_frame(&key_names, &runs)?),
        )
    })
}

fn pct(v: Option<f64>) -> String {
    v.map_or("-".into(), |m| format!("{:.1}", m * 100.0))
}

fn table_text(keys: &[String], runs: &[RunSummary]) -> String {
    let mut header: Vec<&str> = keys.iter().map(String::as_str).collect();
    header.extend([
        "device",
        "dtype",
        "devices",
        "steps",
        "tokens/s",
        "MFU %",
        "MFU fwd+bwd %",
        "p10 %",
        "p50 %",
        "p90 %",
        "peak TFLOP/s",
        "flags",
    ]);
    // The framework's own figure, where any run's log holds one (`mfu audit`).
    let audited = runs.iter().any(|r| r.framework.is_some());
    if audited {
        header.push("logged MFU %");
    }
    // Samples a second, where any run counts samples (images, utterances, completions).
    let sampled = runs.iter().any(|r| r.samples_per_second.is_some());
    if sampled {
        header.push("samples/s");
    }
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            let mut row = key_cells(&r.keys);
            row.extend([
                r.device.clone().unwrap_or_else(|| "-".into()),
                r.dtype.clone().unwrap_or_else(|| "-".into()),
                r.num_devices.map_or("-".into(), |n| format!("{n}")),
                r.steps.to_string(),
                r.tokens_per_second
                    .map_or("-".into(), |t| format!("{t:.0}")),
                pct(r.mfu_wall_clock),
                pct(r.mfu_fwd_bwd),
                pct(r.mfu_wall_clock_p10),
                pct(r.mfu_wall_clock_p50),
                pct(r.mfu_wall_clock_p90),
                r.peak_flops_per_device.map_or("-".into(), tflops_text),
                r.flags.join("; "),
            ]);
            if audited {
                row.push(match (&r.framework, r.mfu_logged) {
                    (Some(f), m) => format!("{} ({f})", pct(m)),
                    (None, _) => "-".into(),
                });
            }
            if sampled {
                row.push(r.samples_per_second.map_or("-".into(), |t| {
                    if t >= 100.0 {
                        format!("{t:.0}")
                    } else {
                        format!("{t:.3}")
                    }
                }));
            }
            row
        })
        .collect();
    let mut text = aligned_table(&header, &rows);
    // The audit of each run with a framework figure, a paragraph a run under the table.
    for r in runs {
        if let Some(verdict) = &r.audit {
            let keys: Vec<String> = r
                .keys
                .iter()
                .map(|k| k.clone().unwrap_or_default())
                .collect();
            text.push_str(&format!("\naudit of {}: {verdict}\n", keys.join(" ")));
        }
    }
    text
}

fn json_text(keys: &[String], runs: &[RunSummary]) -> anyhow::Result<String> {
    let rows: Vec<serde_json::Value> = runs
        .iter()
        .map(|r| {
            let mut o = serde_json::Map::new();
            for (k, v) in keys.iter().zip(&r.keys) {
                o.insert(k.clone(), serde_json::json!(v));
            }
            // Counts as integers where they are whole (8 devices, not 8.0).
            let count = |v: Option<f64>| match v {
                Some(x) => mfu::summary::whole(x).map_or(serde_json::json!(x), |i| serde_json::json!(i)),
                None => serde_json::Value::Null,
            };
            let fields = serde_json::json!({
                "device": r.device, "dtype": r.dtype, "num_devices": count(r.num_devices), "steps": r.steps,
                "first_step": count(r.first_step), "last_step": count(r.last_step), "tokens": count(r.tokens),
                "step_time_total_s": r.step_time_total_s, "tokens_per_second": r.tokens_per_second,
                "mfu_wall_clock": r.mfu_wall_clock, "mfu_fwd_bwd": r.mfu_fwd_bwd,
                "mfu_wall_clock_p10": r.mfu_wall_clock_p10, "mfu_wall_clock_p50": r.mfu_wall_clock_p50,
                "mfu_wall_clock_p90": r.mfu_wall_clock_p90,
                "peak_flops_per_device": r.peak_flops_per_device, "flags": r.flags.join(";"),
                "framework": r.framework, "mfu_logged": r.mfu_logged, "audit": r.audit,
                "samples": count(r.samples), "samples_per_second": r.samples_per_second,
            });
            for name in mfu::summary::SUMMARY_COLUMNS {
                o.insert(name.to_string(), fields[name].clone());
            }
            serde_json::Value::Object(o)
        })
        .collect();
    Ok(serde_json::to_string_pretty(&rows)? + "\n")
}
