//! OLMo console logs (allenai/OLMo's trainer): one record per logged step over several lines, a header
//! with the step and the metrics below it, one `name=value` a line, indented:
//!
//! ```text
//! [2024-04-17 09:42:38] INFO     [olmo.train:816, rank=0] [step=2/739328]
//!     train/CrossEntropyLoss=10.73
//!     throughput/total_tokens=8,388,608
//!     throughput/device/tokens_per_second=45,538
//!     throughput/device/batches_per_second=0.0869
//! ```
//!
//! Each header (`[step=N/M]` or `[step=N/M,epoch=E]`) starts a row with `step`, `max_steps` (and
//! `epoch`); each metric line adds a column named as logged, its value read with the thousands commas
//! OLMo prints removed. The header's timestamp (the console handler's `[2024-04-17 09:42:38]` or the
//! plain handler's `2024-04-17 09:42:38.283`) is `wall_time`, in seconds. Evaluation blocks (headed by
//! the evaluator's name) and the system metrics before training are not steps.
//!
//! What the numbers mean, from OLMo's `SpeedMonitor`: `throughput/total_tokens` counts the tokens of
//! every rank since the start (a running total, differenced into tokens per step by the columns stage);
//! `throughput/device/batches_per_second` is one rank's batches over the seconds since the oldest batch
//! in its window, so `step_time_s` = 1 / it is the step time, the window's mean (printed to 4 decimals
//! below 1, so exact to about 0.1% for steps of 10 s); `tokens_per_second / batches_per_second` is one
//! rank's tokens a step, and the global tokens a step over that is the data-parallel size, which the log
//! gives as the device count when every step agrees on a whole number.

use serde_json::{Map, Value};

use super::{rows_to_frame, ShapedFrame};
use crate::columns::{Field, RunFact};

const TOTAL_TOKENS: &str = "throughput/total_tokens";
const DEVICE_TOKENS_PER_SECOND: &str = "throughput/device/tokens_per_second";
const DEVICE_BATCHES_PER_SECOND: &str = "throughput/device/batches_per_second";

/// The step, the run's total and the epoch of a record header.
fn header(line: &str) -> Option<(i64, i64, Option<i64>)> {
    let at = line.find("[step=")?;
    let rest = &line[at + "[step=".len()..];
    let inside = &rest[..rest.find(']')?];
    let (steps, epoch) = match inside.split_once(",epoch=") {
        Some((s, e)) => (s, e.trim().parse().ok()),
        None => (inside, None),
    };
    let (n, m) = steps.split_once('/')?;
    Some((n.trim().parse().ok()?, m.trim().parse().ok()?, epoch))
}

/// Whether a line starts an OLMo record.
pub fn is_header(line: &str) -> bool {
    header(line).is_some()
}

/// A metric line: indented `name=value`.
fn metric(line: &str) -> Option<(&str, &str)> {
    if !line.starts_with(char::is_whitespace) {
        return None;
    }
    let (name, value) = line.trim().split_once('=')?;
    (!name.is_empty()).then_some((name, value))
}

/// `4,194,304` → 4194304, `0.0869` → 0.0869, `nan` → null, anything else its text.
fn value_of(text: &str) -> Value {
    let t = text.trim();
    let plain = t.replace(',', "");
    if let Ok(i) = plain.parse::<i64>() {
        return Value::from(i);
    }
    match plain.parse::<f64>() {
        Ok(f) if f.is_finite() => {
            serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
        }
        Ok(_) => Value::Null,
        Err(_) => Value::String(t.to_string()),
    }
}

/// The timestamp a header line starts with, in seconds.
fn timestamp(line: &str) -> Option<f64> {
    let t = line.trim_start();
    let stamp = if t.starts_with('[') {
        &t[..=t.find(']')?]
    } else {
        t.split('\t').next()?
    };
    crate::values::parse_timestamp(stamp)
}

pub fn read(bytes: &[u8]) -> Result<ShapedFrame, String> {
    let text = String::from_utf8_lossy(bytes);
    let mut rows: Vec<Map<String, Value>> = Vec::new();
    let mut in_record = false;
    for line in text.lines() {
        if let Some((step, total, epoch)) = header(line) {
            let mut row = Map::new();
            row.insert("step".into(), Value::from(step));
            row.insert("max_steps".into(), Value::from(total));
            if let Some(e) = epoch {
                row.insert("epoch".into(), Value::from(e));
            }
            if let Some(t) = timestamp(line).and_then(serde_json::Number::from_f64) {
                row.insert("wall_time".into(), Value::Number(t));
            }
            rows.push(row);
            in_record = true;
            continue;
        }
        match (in_record, metric(line)) {
            (true, Some((name, value))) => {
                let row = rows.last_mut().expect("a record has a row");
                row.insert(name.to_string(), value_of(value));
            }
            _ => in_record = false,
        }
    }
    if rows.is_empty() {
        return Err("no '[step=N/M]' record".into());
    }
    let mut notes = vec![format!("{} step record(s) read", rows.len())];
    let mut timed = 0;
    let mut sizes: Vec<f64> = Vec::new();
    let mut previous_total: Option<(i64, f64)> = None;
    for row in &mut rows {
        let number = |key: &str| row.get(key).and_then(Value::as_f64).filter(|v| *v > 0.0);
        let (rate, batches, total) = (
            number(DEVICE_TOKENS_PER_SECOND),
            number(DEVICE_BATCHES_PER_SECOND),
            number(TOTAL_TOKENS),
        );
        let step = row.get("step").and_then(Value::as_i64).unwrap_or(0);
        if let (Some((before_step, before)), Some(total), Some(rate), Some(batches)) =
            (previous_total, total, rate, batches)
        {
            if step > before_step && total > before {
                sizes.push((total - before) / (step - before_step) as f64 / (rate / batches));
            }
        }
        if let Some(total) = total {
            previous_total = Some((step, total));
        }
        if let Some(seconds) = batches.and_then(|b| serde_json::Number::from_f64(1.0 / b)) {
            row.insert("step_time_s".into(), Value::Number(seconds));
            timed += 1;
        }
    }
    if timed > 0 {
        notes.push(format!("step_time_s = 1 / {DEVICE_BATCHES_PER_SECOND} on {timed} record(s): the mean over the speed monitor's window of recent batches (the first record has none: OLMo starts timing at the second batch)"));
    }
    let mut facts = Vec::new();
    if let Some(&first) = sizes.first() {
        let whole = first.round();
        if whole >= 1.0 && sizes.iter().all(|s| (s - whole).abs() <= 0.02 * whole) {
            facts.push(RunFact::number(
                Field::NumDevices,
                whole,
                format!("the log's tokens: {TOTAL_TOKENS} a step over one rank's ({DEVICE_TOKENS_PER_SECOND} / {DEVICE_BATCHES_PER_SECOND}), on {} records (the data-parallel size; give --num-devices when tensor or pipeline parallelism adds devices)", sizes.len()),
            ));
        }
    }
    Ok(ShapedFrame {
        frame: rows_to_frame(&rows)?,
        notes,
        facts,
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_metrics_and_values() {
        assert_eq!(
            header("[2024-04-17 09:42:26] INFO     [olmo.train:816, rank=0] [step=1/739328]"),
            Some((1, 739328, None))
        );
        assert_eq!(
            header("2024-02-02 17:32:13.283\thost:0\tolmo.train:1240\tINFO\t[step=20/100,epoch=1]"),
            Some((20, 100, Some(1)))
        );
        assert_eq!(header("[step=x/10]"), None);
        assert_eq!(
            metric("    train/Perplexity=76,631"),
            Some(("train/Perplexity", "76,631"))
        );
        assert_eq!(metric("train/Perplexity=76,631"), None);
        assert_eq!(value_of("4,194,304"), Value::from(4_194_304));
        assert_eq!(value_of("0.0869"), Value::from(0.0869));
        assert_eq!(value_of("nan"), Value::Null);
        assert_eq!(
            timestamp("2024-02-02 17:32:13.283\thost:0\tolmo.train:1240\tINFO\t[step=20/100]"),
            crate::values::parse_timestamp("2024-02-02 17:32:13.283")
        );
    }
}
