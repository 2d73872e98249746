//! ms-swift `logging.jsonl`: one JSON object per logging step, the step written as
//! `"global_step/max_steps": "N/M"` (`"iteration": "N/M"` from its Megatron trainer) and the time since
//! the start as `"elapsed_time": "1h 13m 46s"`.
//!
//! Training lines become rows with `global_step` and `max_steps` as numbers and `elapsed_time` (and
//! `remaining_time`) in seconds. Evaluation lines (an `eval_*` key with a value), the final summary
//! (`train_runtime`) and lines without a step (model information, the trainer state some versions append)
//! are not steps; a step logged twice is kept once.
//!
//! **Step time.** `elapsed_time` is written to the second, too coarse for steps of a second or two. Every
//! line also carries `train_speed(s/it)` (older versions `train_speed(iter/s)`): the mean since the start,
//! elapsed / steps, from the unrounded clock and rounded to six decimals. Multiplied back by the steps it
//! gives the elapsed time to a few milliseconds; where every line agrees with `elapsed_time` to the second
//! (so the run started at step 0, not resumed), that is the running total used. Each row gets
//! `mean_step_time_s`: the time since the previous training line, less the `eval_runtime` of the
//! evaluation lines logged in between (evaluation is not training), over the steps in between. The first
//! row's interval starts when training started and so holds the warm-up; a step that goes back starts a
//! new segment whose first row is null. The cumulative mean itself is never used as a step's time.
//!
//! **Tokens.** Some builds log `tokens_this_step` (the attention-mask tokens of one data-parallel rank in
//! the logging step) and `tokens_global_per_sec` = tokens × data-parallel size / `train_speed(s/it)`. The
//! two together give the data-parallel size, and `global_tokens` = `tokens_this_step` × that size: the
//! logging rank's count scaled to all ranks (the other ranks' counts are not logged). With
//! `tokens_this_step` alone the size is unknown and nothing is taken (`-v` says what to give).

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::{json_objects, rows_to_frame, ShapedFrame};

pub const STEP_KEY: &str = "global_step/max_steps";
/// The step key of ms-swift's Megatron trainer.
const MEGATRON_STEP_KEY: &str = "iteration";

/// Whether the head of a JSON Lines file is an ms-swift log.
pub fn detect(head: &[u8]) -> bool {
    let has = |needle: &str| memchr::memmem::find(head, needle.as_bytes()).is_some();
    has(STEP_KEY) || (has("\"iteration\": \"") && has("\"elapsed_time\"") && has("\"train_speed("))
}

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

/// A positive finite number under `key`.
fn positive(object: &Map<String, Value>, key: &str) -> Option<f64> {
    object
        .get(key)
        .and_then(Value::as_f64)
        .filter(|v| v.is_finite() && *v > 0.0)
}

/// Seconds per step since the start, from whichever speed the line logs.
fn seconds_per_step(object: &Map<String, Value>) -> Option<f64> {
    positive(object, "train_speed(s/it)")
        .or_else(|| positive(object, "train_speed(iter/s)").map(|ips| 1.0 / ips))
}

/// What one training line says about time and tokens, kept for the second pass.
struct Timing {
    step: i64,
    elapsed: Option<f64>,
    seconds_per_step: Option<f64>,
    /// `eval_runtime` of the evaluation lines since the previous training line.
    evaluation: f64,
    rank_tokens: Option<f64>,
    global_rate: Option<f64>,
}

pub fn read(bytes: &[u8]) -> Result<ShapedFrame, String> {
    let mut rows = Vec::new();
    let mut timings: Vec<Timing> = Vec::new();
    let mut seen = HashSet::new();
    let (mut evals, mut others, mut repeats) = (0, 0, 0);
    let mut evaluation_since = 0.0;
    let mut rank_tokens = false;
    for object in json_objects(bytes)? {
        let Some((step, total)) = object
            .get(STEP_KEY)
            .or_else(|| object.get(MEGATRON_STEP_KEY))
            .and_then(step_and_total)
        else {
            others += 1;
            continue;
        };
        let evaluates = |(k, v): (&String, &Value)| k.starts_with("eval_") && !v.is_null();
        if object.iter().any(evaluates) {
            evals += 1;
            evaluation_since += positive(&object, "eval_runtime").unwrap_or(0.0);
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
        let mut elapsed = None;
        for (key, value) in &object {
            if key == STEP_KEY || key == MEGATRON_STEP_KEY {
                continue;
            }
            let value = match (key.as_str(), value.as_str()) {
                ("elapsed_time" | "remaining_time", Some(t)) => {
                    let seconds = parse_compact_duration(t);
                    if key == "elapsed_time" {
                        elapsed = seconds;
                    }
                    seconds
                        .and_then(serde_json::Number::from_f64)
                        .map_or(Value::Null, Value::Number)
                }
                _ => value.clone(),
            };
            row.insert(key.clone(), value);
        }
        rank_tokens |= object.contains_key("tokens_this_step");
        timings.push(Timing {
            step,
            elapsed,
            seconds_per_step: seconds_per_step(&object),
            evaluation: std::mem::take(&mut evaluation_since),
            rank_tokens: positive(&object, "tokens_this_step"),
            global_rate: positive(&object, "tokens_global_per_sec"),
        });
        rows.push(row);
    }
    if rows.is_empty() {
        return Err(format!("no training line with \"{STEP_KEY}\""));
    }
    let mut notes = vec![format!(
        "{} training line(s); {evals} evaluation line(s), {others} other line(s) and {repeats} repeated step(s) skipped",
        rows.len()
    )];
    notes.extend(step_times(&timings, &mut rows));
    notes.extend(global_tokens(&timings, &mut rows, rank_tokens));
    Ok(ShapedFrame {
        frame: rows_to_frame(&rows)?,
        notes,
        ..Default::default()
    })
}

/// The running total of training time each line stands at: from the logged speed where every line
/// agrees with `elapsed_time` (a run from step 0), else `elapsed_time` itself. `None` where neither is.
/// The flag says whether the totals count from step 0 at time 0 (so the first row has an interval).
fn running_totals(timings: &[Timing]) -> (Vec<Option<f64>>, String, bool) {
    let from_speed: Vec<Option<f64>> = timings
        .iter()
        .map(|t| t.seconds_per_step.map(|s| s * t.step as f64))
        .collect();
    // `elapsed_time` is rounded to the second; the speed to 1e-6 s a step.
    let agrees = timings
        .iter()
        .zip(&from_speed)
        .all(|(t, s)| match (t.elapsed, s) {
            (Some(e), Some(s)) => (s - e).abs() <= 1.0 + 1e-6 * t.step as f64 + 1e-3,
            _ => false,
        });
    if agrees {
        (
            from_speed,
            "elapsed times from train_speed x steps (the logged mean since the start times the steps, to a few ms; elapsed_time is to the second)".into(),
            true,
        )
    } else {
        let why = if timings.iter().any(|t| t.seconds_per_step.is_some()) {
            "train_speed x steps does not match elapsed_time on every line (a resumed run counts its steps from the resume), so elapsed_time is used"
        } else {
            "no train_speed on the lines"
        };
        (
            timings.iter().map(|t| t.elapsed).collect(),
            format!("elapsed times from elapsed_time, to the second ({why}): each step time is exact to about a second over its interval, and the first row has none"),
            false,
        )
    }
}

/// `mean_step_time_s` on every row it can be known for; the notes that say how.
fn step_times(timings: &[Timing], rows: &mut [Map<String, Value>]) -> Vec<String> {
    let (totals, how, from_start) = running_totals(timings);
    let mut notes = vec![how];
    let (mut subtracted, mut kept_in, mut subtracted_seconds) = (0usize, 0usize, 0.0);
    // The previous training line: its step and running total; step 0 at time 0 when the totals count
    // from the start.
    let mut previous: Option<(i64, f64)> = from_start.then_some((0, 0.0));
    for ((timing, total), row) in timings.iter().zip(&totals).zip(rows.iter_mut()) {
        let Some(total) = *total else {
            previous = None;
            continue;
        };
        let value = match previous {
            Some((step, before)) if timing.step > step && total >= before => {
                let mut interval = total - before;
                if timing.evaluation > 0.0 {
                    if timing.evaluation < interval {
                        interval -= timing.evaluation;
                        subtracted += 1;
                        subtracted_seconds += timing.evaluation;
                    } else {
                        kept_in += 1;
                    }
                }
                (interval > 0.0).then(|| interval / (timing.step - step) as f64)
            }
            _ => None,
        };
        if let Some(v) = value.and_then(serde_json::Number::from_f64) {
            row.insert("mean_step_time_s".into(), Value::Number(v));
        }
        previous = Some((timing.step, total));
    }
    notes.push("mean_step_time_s = the time since the previous training line over the steps since it (the first row's interval starts with training, warm-up included)".into());
    if subtracted > 0 {
        notes.push(format!(
            "{subtracted_seconds} s of evaluation (eval_runtime of the evaluation lines in between) left out of {subtracted} row(s)' intervals: evaluation is not training"
        ));
    }
    if kept_in > 0 {
        notes.push(format!(
            "{kept_in} row(s) follow evaluation lines whose eval_runtime is not less than the interval, so nothing was subtracted there"
        ));
    }
    notes
}

/// `global_tokens` where the line gives one rank's tokens and the global rate; the notes that say how.
fn global_tokens(
    timings: &[Timing],
    rows: &mut [Map<String, Value>],
    rank_tokens: bool,
) -> Vec<String> {
    let mut sizes: Vec<i64> = Vec::new();
    for (timing, row) in timings.iter().zip(rows.iter_mut()) {
        let (Some(tokens), Some(rate), Some(seconds)) = (
            timing.rank_tokens,
            timing.global_rate,
            timing.seconds_per_step,
        ) else {
            continue;
        };
        // rate = tokens x size / seconds, with the rate rounded to 0.1: the size is within a few
        // percent of a whole number, or the line is not what this reading assumes.
        let size = rate * seconds / tokens;
        let whole = size.round();
        if whole < 1.0 || (size - whole).abs() > 0.05 * whole.max(1.0) {
            continue;
        }
        row.insert("global_tokens".into(), Value::from(tokens * whole));
        if !sizes.contains(&(whole as i64)) {
            sizes.push(whole as i64);
        }
    }
    if !sizes.is_empty() {
        let sizes: Vec<String> = sizes.iter().map(i64::to_string).collect();
        return vec![format!(
            "global_tokens = tokens_this_step (one data-parallel rank's tokens at the logging step) x the data-parallel size the line implies (tokens_global_per_sec x train_speed(s/it) / tokens_this_step = {}): the logging rank's count scaled to all ranks; with logging_steps > 1 it is the logging step's count, not the interval's",
            sizes.join(", ")
        )];
    }
    if rank_tokens {
        return vec!["tokens_this_step counts one data-parallel rank's tokens and the line logs no global rate to scale it by: give --tokens-per-step (all ranks), or --map tokens=tokens_this_step with --num-devices set to the devices of one rank".into()];
    }
    Vec::new()
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
