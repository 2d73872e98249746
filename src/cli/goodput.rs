//! `mfu goodput`: where each run's time went, one row per run.

use std::process::ExitCode;

use clap::Args;

use mfu::pipeline::goodput::{
    goodput_parts, goodput_runs_owned, to_frame, RunGoodput, GOODPUT_COLUMNS,
};
use mfu::pipeline::windowed::Part;
use mfu::pipeline::{Observer, Plan};

use super::source::SourceArgs;
use super::{aligned_table, key_cells, run_per_run, Gathered, RunsOutput, RunsOutputArgs};

/// Goodput: of a run's elapsed time, how much trained the model, and where the rest went.
///
/// Reads the inputs as `mfu enrich` does (same flags). Each run's rows, in log order, are split into
/// attempts where the step counter does not go forward (a relaunch resuming from a checkpoint); a row
/// that a later attempt ran again is wasted progress. Every second from the start of the first step to
/// the end of the last is in one bucket: productive, wasted progress, start-up (an attempt's first
/// step beyond the ideal step time), pauses (between two steps of one attempt, beyond the step's own
/// time), recovery (between attempts) and other. Also goodput (productive / elapsed), MFU over the
/// productive and over the elapsed time, device-hours lost and straggler steps. Wall times come from
/// the rows (`wall_time`, `_timestamp`, `timestamp`, console timestamps); where a run has none, what
/// cannot be measured is left empty and said in `notes`. docs/goodput.md has the rules.
///
/// Examples:
///   mfu goodput train.log --dtype bf16 --flops-per-token 6.2e9
///   mfu goodput runs/ --by run_id --format csv -o goodput.csv
///   mfu goodput metrics.csv --format json
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct GoodputArgs {
    #[command(flatten)]
    pub source: SourceArgs,

    /// Split the rows into runs by this column (or a field name such as run_id). Repeatable. Default: the
    /// run_id field, else each INPUT as given is one run: a folder's files (one log per launch) are its
    /// attempts, in order of their first wall time.
    #[arg(long = "by", value_name = "KEY")]
    pub by: Vec<String>,

    #[command(flatten)]
    pub out: RunsOutputArgs,
}

pub fn run(args: &GoodputArgs) -> anyhow::Result<ExitCode> {
    // A run's time needs only its steps and times: a field nothing gives leaves MFU empty, no error.
    let mut options = args.source.options(None);
    options.optional_fields = true;
    // Every attempt's rows, where a reader would keep only the last attempt's (TensorBoard's purge).
    options.every_attempt = true;
    // One large console log is read twice in windows, its rows never held at once.
    let fold = |plan: &Plan, parts: Vec<Part>, observer: &dyn Observer| {
        goodput_parts(plan, parts, observer, &args.by)
    };
    run_per_run(&args.source, &options, &args.out, fold, |inputs, format| {
        let (key_names, runs) = match inputs {
            Gathered::Folded(measured) => measured,
            Gathered::Loaded(loaded) => goodput_runs_owned(loaded, &args.by)?,
        };
        RunsOutput::of(
            format,
            || table_text(&key_names, &runs),
            || json_text(&key_names, &runs),
            || Ok(to_frame(&key_names, &runs)?),
        )
    })
}

/// Seconds as `h:mm:ss` (`12.3s` under a minute); `-` where unknown.
fn duration(seconds: Option<f64>) -> String {
    match seconds {
        None => "-".into(),
        Some(s) if s < 60.0 => format!("{s:.1}s"),
        Some(s) => {
            let s = s.round() as u64;
            format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
        }
    }
}

fn pct(v: Option<f64>) -> String {
    v.map_or("-".into(), |m| format!("{:.1}", m * 100.0))
}

fn table_text(keys: &[String], runs: &[RunGoodput]) -> String {
    let mut header: Vec<&str> = keys.iter().map(String::as_str).collect();
    header.extend([
        "attempts",
        "steps kept/executed",
        "elapsed",
        "goodput %",
        "productive",
        "wasted",
        "recovery",
        "start-up",
        "pauses",
        "other",
        "MFU productive %",
        "MFU effective %",
        "device-h lost",
        "notes",
    ]);
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            let g = &r.goodput;
            let mut row = key_cells(&r.keys);
            row.extend([
                match g.launches_without_steps {
                    0 => g.attempts.to_string(),
                    n => format!("{} (+{n} without steps)", g.attempts),
                },
                format!("{}/{}", g.steps_kept, g.steps_executed),
                duration(g.elapsed_s),
                pct(g.goodput),
                duration(g.productive_s),
                duration(g.wasted_progress_s),
                duration(g.recovery_s),
                duration(g.startup_s),
                duration(g.pause_s),
                duration(g.other_s),
                pct(g.mfu_productive),
                pct(g.mfu_effective),
                g.device_hours_lost
                    .map_or("-".into(), |h| format!("{h:.2}")),
                g.notes.join("; "),
            ]);
            row
        })
        .collect();
    aligned_table(&header, &rows)
}

fn json_text(keys: &[String], runs: &[RunGoodput]) -> anyhow::Result<String> {
    let rows: Vec<serde_json::Value> = (0..runs.len())
        .map(|row| {
            let mut o = serde_json::Map::new();
            for (k, key) in keys.iter().enumerate() {
                o.insert(key.clone(), serde_json::json!(runs[row].keys[k]));
            }
            let g = &runs[row].goodput;
            // Counts as integers where they are whole (120 steps, not 120.0).
            let count = |v: f64| {
                mfu::summary::whole(v).map_or(serde_json::json!(v), |i| serde_json::json!(i))
            };
            let values = serde_json::json!({
                "attempts": g.attempts, "launches_without_steps": g.launches_without_steps,
                "steps_executed": count(g.steps_executed),
                "steps_kept": count(g.steps_kept), "steps_redone": count(g.steps_redone),
                "elapsed_s": g.elapsed_s, "productive_s": g.productive_s,
                "wasted_progress_s": g.wasted_progress_s, "recovery_s": g.recovery_s,
                "startup_s": g.startup_s, "pause_s": g.pause_s,
                "pause_evaluation_s": g.pause_evaluation_s, "pause_checkpoint_s": g.pause_checkpoint_s,
                "other_s": g.other_s,
                "goodput": g.goodput, "ideal_step_time_s": g.ideal_step_time_s,
                "mfu_productive": g.mfu_productive, "mfu_effective": g.mfu_effective,
                "device_hours_lost": g.device_hours_lost, "straggler_steps": count(g.straggler_steps),
                "straggler_s": g.straggler_s, "wall_time_column": runs[row].wall_time_column,
                "notes": g.notes, "source_files": runs[row].sources,
            });
            for name in GOODPUT_COLUMNS {
                o.insert(name.to_string(), values[name].clone());
            }
            serde_json::Value::Object(o)
        })
        .collect();
    Ok(serde_json::to_string_pretty(&rows)? + "\n")
}
