//! `mfu audit`: the MFU or TFLOP/s a framework logged, re-based on the right peak and explained.

use std::process::ExitCode;

use clap::Args;

use mfu::pipeline::audit::{
    audit_parts, audit_runs, audited_rows, notes_of, rows_frame, to_frame, AuditedRow, RunAudit,
    AUDIT_COLUMNS,
};
use mfu::pipeline::windowed::Part;
use mfu::pipeline::{Observer, Plan};
use mfu::write::OutputFormat;

use super::source::SourceArgs;
use super::{
    aligned_table, key_cells, run_per_run, Gathered, RunsFormat, RunsOutput, RunsOutputArgs,
};

/// Audit: the MFU (or TFLOP/s) the framework logged, against mfu's, with the reasons they differ.
///
/// Reads the inputs as `mfu enrich` does (same flags) and tells which framework wrote each log from
/// its shape and the names of its figures (torchtitan `mfu`/`tflops`, verl `perf/mfu/actor`, llm.c
/// `bf16 MFU`, Lightning `device/mfu`, Composer `throughput/device/mfu`, OLMo-core
/// `throughput/device/MFU`, nanoGPT `mfu`, Megatron-LM `throughput per GPU (TFLOP/s/GPU)`,
/// Megatron-Bridge `GPU utilization: ...TFLOP/s/GPU`, MaxText `TFLOP/s/device`, nanotron
/// `model_tflops_per_gpu`, mfu's own callbacks `perf/mfu_wall_clock`). Per run: the logged MFU (a
/// fraction) and TFLOP/s, the peak the framework divided by (--logged-peak-flops, else the peak the
/// log announces, else what its own figures imply, else the framework's lookup run on the device
/// name as its code was at a named commit), the FLOPs per token it counted, mfu's MFU, peak and
/// count, the ratio and the two factors that make it (peak_factor: its peak over the right one;
/// numerator_factor: mfu's count over its), and a verdict to paste into a ticket. Logged values
/// above 100% (or TFLOP/s above the peak) are counted as impossible. A log whose MFU column no known
/// framework writes is audited against --logged-peak-flops. docs/audit.md has the frameworks and
/// worked audits of real logs.
///
/// Examples:
///   mfu audit train.log --flops-per-token 1.27e9 --dtype bf16
///   mfu audit train.log --flops-per-token 1.27e9 --dtype bf16 --per-row --format csv -o rows.csv
///   mfu audit runs/ --format json
///   mfu audit nanogpt.log --device "RTX 4070 Ti SUPER" --dtype bf16 --flops-per-token 2.2e7 --format csv
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct AuditArgs {
    #[command(flatten)]
    pub source: SourceArgs,

    /// Split the rows into runs by this column (or a field name such as run_id). Repeatable. Default: the
    /// run_id field, else each input is one run.
    #[arg(long = "by", value_name = "KEY")]
    pub by: Vec<String>,

    /// One row per logged row instead of per run: its step, the framework's MFU and TFLOP/s, the FLOPs
    /// per token they make at mfu's token rate, mfu's MFU and count, and the ratio.
    #[arg(long)]
    pub per_row: bool,

    #[command(flatten)]
    pub out: RunsOutputArgs,
}

pub fn run(args: &AuditArgs) -> anyhow::Result<ExitCode> {
    // A log with a figure but no FLOPs count is still audited (the peak half), so no field is required.
    let mut options = args.source.options(None);
    options.optional_fields = true;
    let logged_peak = args.source.logged_peak_flops;
    // One large console log is folded window by window, its rows never held at once.
    let fold = |plan: &Plan, parts: Vec<Part>, observer: &dyn Observer| {
        audit_parts(plan, parts, observer, &args.by, logged_peak, args.per_row)
    };
    run_per_run(&args.source, &options, &args.out, fold, |inputs, format| {
        let (key_names, runs) = match inputs {
            Gathered::Folded(audited) => audited,
            Gathered::Loaded(loaded) => audit_runs(&loaded, &args.by, logged_peak, args.per_row)?,
        };
        if args.per_row {
            let rows = audited_rows(&runs);
            return Ok(match format {
                RunsFormat::Table => RunsOutput::Text(rows_text(&key_names, &rows)),
                // JSON a row a line, as `mfu enrich` writes rows.
                RunsFormat::Json => {
                    RunsOutput::Frame(rows_frame(&key_names, &rows)?, OutputFormat::Jsonl)
                }
                RunsFormat::Csv => {
                    RunsOutput::Frame(rows_frame(&key_names, &rows)?, OutputFormat::Csv)
                }
                RunsFormat::Parquet => {
                    RunsOutput::Frame(rows_frame(&key_names, &rows)?, OutputFormat::Parquet)
                }
            });
        }
        RunsOutput::of(
            format,
            || table_text(&key_names, &runs),
            || json_text(&key_names, &runs),
            || Ok(to_frame(&key_names, &runs)?),
        )
    })
}

fn pct(v: Option<f64>) -> String {
    v.map_or("-".into(), |m| format!("{:.2}", m * 100.0))
}

fn times(v: Option<f64>) -> String {
    v.map_or("-".into(), |k| format!("{k:.2}x"))
}

fn table_text(keys: &[String], runs: &[RunAudit]) -> String {
    let mut header: Vec<&str> = keys.iter().map(String::as_str).collect();
    header.extend([
        "framework",
        "logged MFU %",
        "mfu MFU %",
        "ratio",
        "peak factor",
        "FLOPs factor",
        "verdict",
    ]);
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            let mut row = key_cells(&r.keys);
            match &r.audit {
                Some(a) => row.extend([
                    a.framework.clone(),
                    pct(a.mfu_logged),
                    pct(a.mfu),
                    times(a.ratio),
                    times(a.peak_factor),
                    times(a.numerator_factor),
                    a.verdict.clone(),
                ]),
                None => {
                    row.extend(["-", "-", "-", "-", "-", "-"].map(String::from));
                    row.push(notes_of(r).join("; "));
                }
            }
            row
        })
        .collect();
    aligned_table(&header, &rows)
}

/// The per-row audit for reading: MFU in percent, counts and peaks to four significant digits.
fn rows_text(keys: &[String], rows: &[AuditedRow]) -> String {
    let mut header: Vec<&str> = keys.iter().map(String::as_str).collect();
    header.extend([
        "step",
        "framework",
        "logged MFU %",
        "logged TFLOP/s",
        "logged peak",
        "logged FLOPs/token",
        "mfu MFU %",
        "mfu FLOPs/token",
        "ratio",
    ]);
    let sci = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.4e}"));
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut row = key_cells(&r.keys);
            row.extend([
                r.step.map_or("-".into(), |s| format!("{s}")),
                r.framework.clone(),
                pct(r.mfu_logged),
                r.tflops_logged.map_or("-".into(), |t| format!("{t}")),
                sci(r.peak_logged),
                sci(r.flops_per_token_logged),
                pct(r.mfu),
                sci(r.flops_per_token),
                times(r.ratio),
            ]);
            row
        })
        .collect();
    aligned_table(&header, &cells)
}

fn json_text(keys: &[String], runs: &[RunAudit]) -> anyhow::Result<String> {
    let rows: Vec<serde_json::Value> = runs
        .iter()
        .map(|r| {
            let mut o = serde_json::Map::new();
            for (k, key) in keys.iter().enumerate() {
                o.insert(key.clone(), serde_json::json!(r.keys[k]));
            }
            let a = r.audit.as_ref();
            let values = serde_json::json!({
                "framework": a.map(|a| &a.framework), "recognised_by": r.recognised_by,
                "figure": a.map(|a| &a.figure), "rows": a.map(|a| a.rows),
                "mfu_logged": a.and_then(|a| a.mfu_logged),
                "tflops_logged": a.and_then(|a| a.tflops_logged),
                "peak_logged": a.and_then(|a| a.peak_logged),
                "peak_logged_from": a.and_then(|a| a.peak_logged_from.clone()),
                "device": r.device,
                "peak_emulated": a.and_then(|a| a.peak_emulated),
                "emulation": a.and_then(|a| a.emulation.clone()),
                "flops_per_token_logged": a.and_then(|a| a.flops_per_token_logged),
                "mfu": a.and_then(|a| a.mfu), "peak": a.and_then(|a| a.peak),
                "flops_per_token": a.and_then(|a| a.flops_per_token),
                "mfu_logged_rebased": a.and_then(|a| a.mfu_logged_rebased),
                "ratio": a.and_then(|a| a.ratio), "peak_factor": a.and_then(|a| a.peak_factor),
                "numerator_factor": a.and_then(|a| a.numerator_factor),
                "impossible_rows": a.map(|a| a.impossible_rows),
                "placeholder_rows": a.map(|a| a.placeholder_rows),
                "verdict": a.map(|a| &a.verdict), "notes": notes_of(r), "source_files": r.sources,
            });
            for name in AUDIT_COLUMNS {
                o.insert(name.to_string(), values[name].clone());
            }
            serde_json::Value::Object(o)
        })
        .collect();
    Ok(serde_json::to_string_pretty(&rows)? + "\n")
}
