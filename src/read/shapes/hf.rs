//! Hugging Face Trainer and TRL `trainer_state.json`: the rows of `log_history`.
//!
//! `log_history` mixes four kinds of row: training rows (loss, learning rate, and in newer versions the
//! cumulative `num_input_tokens_seen`, TRL's cumulative `num_tokens`, a cumulative `train_runtime`),
//! evaluation rows (`eval_*` keys), prediction rows (`predict_*`, no step) and one final summary
//! (`train_runtime`, `train_loss`, `total_flos`). Only training rows are steps; `--rows eval|all` keeps
//! the others (with `all`, a `row_kind` column says which is which).

use serde_json::{Map, Value};

use super::{rows_to_frame, RowKinds, ShapedFrame};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RowKind {
    Train,
    Eval,
    Predict,
    Summary,
}

impl RowKind {
    fn name(self) -> &'static str {
        match self {
            RowKind::Train => "train",
            RowKind::Eval => "eval",
            RowKind::Predict => "predict",
            RowKind::Summary => "summary",
        }
    }
}

fn kind(row: &Map<String, Value>) -> RowKind {
    if !row.contains_key("step") || row.keys().any(|k| k.starts_with("predict_")) {
        RowKind::Predict
    } else if row.keys().any(|k| k.starts_with("eval_")) {
        RowKind::Eval
    } else if row.contains_key("train_loss") || row.contains_key("total_flos") {
        RowKind::Summary
    } else {
        RowKind::Train
    }
}

pub fn read(bytes: &[u8], rows: RowKinds) -> Result<ShapedFrame, String> {
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    let history = doc
        .get("log_history")
        .and_then(Value::as_array)
        .ok_or("no 'log_history' list")?;
    let mut kept = Vec::new();
    let mut summary_runtime = None;
    let mut notes = Vec::new();
    let mut any_row_time = false;
    // Seconds the log says went to evaluation and prediction inside train() (their entries before the
    // summary), and how many entries.
    let (mut not_training, mut not_training_entries) = (0.0, 0usize);
    let mut summary_seen = false;
    for item in history {
        let Some(row) = item.as_object() else {
            continue;
        };
        let k = kind(row);
        if !summary_seen {
            let runtime = match k {
                RowKind::Eval => row.get("eval_runtime"),
                RowKind::Predict => row.get("predict_runtime"),
                _ => None,
            };
            if let Some(r) = runtime
                .and_then(Value::as_f64)
                .filter(|r| r.is_finite() && *r > 0.0)
            {
                not_training += r;
                not_training_entries += 1;
            }
        }
        if k == RowKind::Summary {
            summary_seen = true;
            summary_runtime = row
                .get("train_runtime")
                .and_then(Value::as_f64)
                .zip(row.get("step").and_then(Value::as_f64));
        }
        if k == RowKind::Train
            && (row.contains_key("train_runtime") || row.contains_key("step_time"))
        {
            any_row_time = true;
        }
        let keep = match rows {
            RowKinds::Train => k == RowKind::Train,
            RowKinds::Eval => k == RowKind::Eval,
            RowKinds::All => true,
        };
        if keep {
            let mut row = row.clone();
            if rows == RowKinds::All {
                row.insert("row_kind".into(), Value::String(k.name().into()));
            }
            kept.push(row);
        }
    }
    // Trainer states time only the whole run. Each training row then gets the run's mean step time, less
    // what the log's own evaluation and prediction entries say they took inside train(); checkpointing
    // cannot be separated and stays in, said plainly.
    if !any_row_time && rows != RowKinds::Eval {
        if let Some((runtime, steps)) = summary_runtime.filter(|(r, s)| *r > 0.0 && *s > 0.0) {
            let training = runtime - not_training;
            let (training, less) = if not_training > 0.0 && training > 0.0 {
                (
                    training,
                    format!(
                        ", less {not_training} s in the log's {not_training_entries} evaluation and prediction entries (eval_runtime, predict_runtime)"
                    ),
                )
            } else if not_training > 0.0 {
                (
                    runtime,
                    format!(
                        "; its {not_training_entries} evaluation and prediction entries claim {not_training} s, more than the whole run, so nothing is subtracted"
                    ),
                )
            } else {
                (runtime, String::new())
            };
            let mean = training / steps;
            for row in kept.iter_mut().filter(|r| kind(r) == RowKind::Train) {
                row.insert("run_mean_step_time_s".into(), Value::from(mean));
            }
            notes.push(format!(
                "no per-step time in log_history: each training row gets the run's mean step time, train_runtime {runtime} s{less} / {steps} steps = {mean:.6} s (checkpointing included: the log does not time it)"
            ));
        }
    }
    if let Some(seen) = doc.get("num_input_tokens_seen").and_then(Value::as_f64) {
        if seen == 0.0 {
            notes.push("num_input_tokens_seen is 0: the trainer did not count tokens; give --tokens-per-step".into());
        }
    }
    let frame = rows_to_frame(&kept)?;
    Ok(ShapedFrame {
        frame,
        notes,
        facts: Vec::new(),
        ..Default::default()
    })
}
