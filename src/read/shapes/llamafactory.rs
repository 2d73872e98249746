//! LLaMA-Factory `trainer_log.jsonl`: one line per logging step, with the cumulative `elapsed_time` as a
//! duration string and, when token counting is on, the cumulative `total_tokens`. Evaluation and
//! prediction lines (an `eval_*` or `predict_*` key with a value) are not steps; newer versions write
//! those keys as null on every training line, which makes them training lines still. A step logged twice
//! is kept once (its first line).

use std::collections::HashSet;

use serde_json::Value;

use super::{json_objects, rows_to_frame, ShapedFrame};

pub fn read(bytes: &[u8]) -> Result<ShapedFrame, String> {
    let mut rows = Vec::new();
    let mut seen = HashSet::new();
    let (mut evals, mut repeats) = (0, 0);
    for row in json_objects(bytes)? {
        let evaluates = |(k, v): (&String, &Value)| {
            (k.starts_with("eval_") || k.starts_with("predict_")) && !v.is_null()
        };
        if row.iter().any(evaluates) {
            evals += 1;
            continue;
        }
        let step = row.get("current_steps").map(Value::to_string);
        if let Some(step) = step {
            if !seen.insert(step) {
                repeats += 1;
                continue;
            }
        }
        rows.push(row.clone());
    }
    let mut notes = Vec::new();
    if evals + repeats > 0 {
        notes.push(format!(
            "{evals} evaluation line(s) and {repeats} repeated step(s) skipped"
        ));
    }
    Ok(ShapedFrame {
        frame: rows_to_frame(&rows)?,
        notes,
        ..Default::default()
    })
}
