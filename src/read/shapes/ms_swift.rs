//! ms-swift `logging.jsonl`: one JSON object per logging step, the step written as
//! `"global_step/max_steps": "N/M"` and the time since the start as `"elapsed_time": "1h 13m 46s"`.
//!
//! Training lines become rows with `global_step` and `max_steps` as numbers and `elapsed_time` (and
//! `remaining_time`) in seconds, so the elapsed time is the cumulative step timing the columns stage
//! differences. Evaluation lines (an `eval_*` key with a value), the final summary (`train_runtime`) and
//! lines without a step (model information) are not steps; a step logged twice is kept once.
//!
//! Two things the log does not say well, reported in `-v`: `elapsed_time` is written to the second, so a
//! step time is the mean over a logging interval, exact to about a second; and `tokens_this_step`, where
//! present, counts the tokens of one data-parallel rank, so it is not taken as the step's tokens.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::{json_objects, rows_to_frame, ShapedFrame};

pub const STEP_KEY: &str = "global_step/max_steps";

/// `1d 2h 13m 46s`, `16m 46s`, `0s`, `12.5s` in seconds; `None` for anything else.
pub fn parse_compact_duration(text: &str) -> Option<f64> {
    let mut total = 0.0;
    let mut parts = 0;
    for part in text.split_whitespace() {
        let unit_at = part.find(|c: char| c.is_ascii_alphabetic())?;
        let (number, unit) = part.split_at(unit_at);
        let value: f64 = number
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v >= 0.0)?;
        let seconds = match unit {
            "d" => 86_400.0,
            "h" => 3_600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            _ => return None,
        };
        total += value * seconds;
        parts += 1;
    }
    (parts > 0).then_some(total)
}

/// `"N/M"` as the two numbers.
fn step_and_total(value: &Value) -> Option<(i64, i64)> {
    let (n, m) = value.as_str()?.split_once('/')?;
    Some((n.trim().parse().ok()?, m.trim().parse().ok()?))
}

pub fn read(bytes: &[u8]) -> Result<ShapedFrame, String> {
    let mut rows = Vec::new();
    let mut seen = HashSet::new();
    let (mut evals, mut others, mut repeats) = (0, 0, 0);
    let mut rank_tokens = false;
    for object in json_objects(bytes)? {
        let Some((step, total)) = object.get(STEP_KEY).and_then(step_and_total) else {
            others += 1;
            continue;
        };
        let evaluates = |(k, v): (&String, &Value)| k.starts_with("eval_") && !v.is_null();
        if object.iter().any(evaluates) {
            evals += 1;
            continue;
        }
        if object.contains_key("train_runtime") {
            others += 1;
            continue;
        }
        if !seen.insert(step) {
            repeats += 1;
            continue;
        }
        let mut row = Map::new();
        row.insert("global_step".into(), Value::from(step));
        row.insert("max_steps".into(), Value::from(total));
        for (key, value) in object {
            if key == STEP_KEY {
                continue;
            }
            let value = match (key.as_str(), value.as_str()) {
                ("elapsed_time" | "remaining_time", Some(t)) => parse_compact_duration(t)
                    .and_then(serde_json::Number::from_f64)
                    .map_or(Value::Null, Value::Number),
                _ => value.clone(),
            };
            rank_tokens |= key == "tokens_this_step";
            row.insert(key.clone(), value);
        }
        rows.push(row);
    }
    if rows.is_empty() {
        return Err(format!("no training line with \"{STEP_KEY}\""));
    }
    let mut notes = vec![format!(
        "{} training line(s); {evals} evaluation line(s), {others} other line(s) and {repeats} repeated step(s) skipped",
        rows.len()
    )];
    notes.push(
        "elapsed_time is logged to the second: each step time is the mean over its logging interval"
            .into(),
    );
    if rank_tokens {
        notes.push("tokens_this_step counts one data-parallel rank's tokens, so it is not the step's tokens: give --tokens-per-step (all ranks), or --map tokens=tokens_this_step with --num-devices set to the devices of one rank".into());
    }
    Ok(ShapedFrame {
        frame: rows_to_frame(&rows)?,
        notes,
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_durations() {
        assert_eq!(parse_compact_duration("21h 35m 49s"), Some(77_749.0));
        assert_eq!(parse_compact_duration("16m 46s"), Some(1006.0));
        assert_eq!(parse_compact_duration("0s"), Some(0.0));
        assert_eq!(parse_compact_duration("1d 1s"), Some(86_401.0));
        assert_eq!(parse_compact_duration("12.5s"), Some(12.5));
        assert_eq!(parse_compact_duration(""), None);
        assert_eq!(parse_compact_duration("0:01:05"), None);
        assert_eq!(parse_compact_duration("5 minutes"), None);
        assert_eq!(parse_compact_duration("-3s"), None);
    }
}
