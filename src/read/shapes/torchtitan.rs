//! torchtitan console logs: one row per `step: N  loss: L  [grad_norm: G]  memory: MGiB(P%)  tps: T
//! [tflops: F]  mfu: U%` line (colour codes and the logger's prefix stripped), `wps` in older versions.
//!
//! torchtitan logs tokens per second per device (`tps`), not a step time. When the log also has the line
//! `Training starts at step 1, with local batch size B, global batch size G, ... sequence length S`, each
//! row gets `tokens` = G × S and `step_time_s` = B × S / tps: exact for data parallelism (FSDP, DDP),
//! where a device's tokens per step are its local batch; with tensor, context or pipeline parallelism
//! torchtitan divides tps by their degree, and the step time is that many times too long (`-v` says so).
//! Without that line the rows have no timing: throughput and MFU are null, and the log's own `mfu`
//! (a percentage) is kept as `logged_mfu`. The device comes from `CUDA capacity: NAME with XGiB memory`
//! (or `GPU capacity:`) as a fact of the run.

use serde_json::{Map, Value};

use super::{rows_to_frame, ShapedFrame};
use crate::columns::{Field, RunFact};

/// The text of a line without ANSI colour codes (`ESC [ ... m`).
fn plain(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether a line is a training step line.
pub fn is_step_line(line: &str) -> bool {
    let line = plain(line);
    step_pairs(&line).is_some()
}

/// The `key: value` pairs of a step line, from `step:` on.
fn step_pairs(line: &str) -> Option<Vec<(String, String)>> {
    let at = line.find("step:")?;
    if line[..at].ends_with("validate ") {
        return None;
    }
    let rest = &line[at..];
    if !(rest.contains("loss:") && (rest.contains("tps:") || rest.contains("wps:"))) {
        return None;
    }
    // `key: value` with the value padded to a width: a key is a word, a value has no space.
    static PAIR: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let pair = PAIR.get_or_init(|| regex::Regex::new(r"([A-Za-z_]+):\s*(\S+)").expect("valid"));
    let pairs: Vec<(String, String)> = pair
        .captures_iter(rest)
        .map(|c| (c[1].to_string(), c[2].to_string()))
        .collect();
    pairs.first().filter(|(k, _)| k == "step")?;
    Some(pairs)
}

/// A number as torchtitan prints it (`1,234`, `18.20%` → 18.2, `35.12GiB` → 35.12).
fn number(text: &str) -> Option<f64> {
    let t: String = text
        .trim()
        .trim_end_matches('%')
        .trim_end_matches("GiB")
        .chars()
        .filter(|c| *c != ',')
        .collect();
    t.parse().ok()
}

/// `local batch size 8, global batch size 64, ..., sequence length 2048` from the start line.
fn batch_line(text: &str) -> Option<(f64, f64, f64, usize)> {
    for (index, line) in text.lines().enumerate() {
        let line = plain(line);
        if !line.contains("Training starts at step") {
            continue;
        }
        let after = |label: &str| -> Option<f64> {
            let at = line.find(label)? + label.len();
            let digits: String = line[at..]
                .trim_start()
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == ',')
                .filter(|c| *c != ',')
                .collect();
            digits.parse().ok()
        };
        if let (Some(local), Some(global), Some(seq)) = (
            after("local batch size"),
            after("global batch size"),
            after("sequence length"),
        ) {
            return Some((local, global, seq, index + 1));
        }
    }
    None
}

/// The device of `CUDA capacity: NVIDIA H100 80GB HBM3 with 79.11GiB memory`, with its line.
fn device_line(text: &str) -> Option<(String, usize)> {
    text.lines().enumerate().find_map(|(index, line)| {
        let line = plain(line);
        let at = line
            .find("CUDA capacity:")
            .map(|a| a + "CUDA capacity:".len())
            .or_else(|| {
                line.find("GPU capacity:")
                    .map(|a| a + "GPU capacity:".len())
            })?;
        let rest = &line[at..];
        let name = rest.split(" with ").next()?.trim();
        // Older versions print `NAME (0) with`: the device index is not part of the name.
        let name = match name.rfind(" (") {
            Some(p) if name.ends_with(')') => &name[..p],
            _ => name,
        };
        (!name.is_empty()).then(|| (name.to_string(), index + 1))
    })
}

pub fn read(bytes: &[u8]) -> Result<ShapedFrame, String> {
    let text = String::from_utf8_lossy(bytes);
    let mut rows: Vec<Map<String, Value>> = Vec::new();
    for line in text.lines() {
        let line = plain(line);
        let Some(pairs) = step_pairs(&line) else {
            continue;
        };
        let mut row = Map::new();
        for (key, value) in pairs {
            if key == "memory" {
                // `35.12GiB(44.36%)`
                let (gib, pct) = value.split_once('(').unwrap_or((&value, ""));
                row.insert("memory_gib".into(), number(gib).into());
                if let Some(p) = number(pct.trim_end_matches(')')) {
                    row.insert("memory_pct".into(), p.into());
                }
            } else if key == "mfu" {
                // A percentage: the logged MFU as a fraction.
                row.insert("mfu".into(), number(&value).map(|m| m / 100.0).into());
            } else {
                match number(&value) {
                    Some(n) if key == "step" => row.insert(key, Value::from(n as i64)),
                    Some(n) => row.insert(key, Value::from(n)),
                    None => row.insert(key, Value::from(value)),
                };
            }
        }
        rows.push(row);
    }
    if rows.is_empty() {
        return Err("no 'step: N  loss: L  ...  tps: T  ...' line".into());
    }
    let mut notes = vec![format!("{} step line(s) read", rows.len())];
    if let Some((local, global, seq, line)) = batch_line(&text) {
        let mut timed = 0;
        for row in &mut rows {
            let tps = row
                .get("tps")
                .or_else(|| row.get("wps"))
                .and_then(Value::as_f64)
                .filter(|t| *t > 0.0);
            row.insert("tokens".into(), Value::from(global * seq));
            if let Some(tps) = tps {
                row.insert("step_time_s".into(), Value::from(local * seq / tps));
                timed += 1;
            }
        }
        notes.push(format!(
            "tokens per step = global batch size x sequence length = {global} x {seq}, step_time_s = local batch size x sequence length / tps (line {line}; tps is per device: exact under data parallelism only, too long by the tensor/context/pipeline degree otherwise); {timed} row(s) timed"
        ));
    } else {
        notes.push("no 'Training starts at step ..., local batch size ..., sequence length ...' line: no step time (the log's own mfu is kept)".into());
    }
    let mut facts = Vec::new();
    if let Some((device, line)) = device_line(&text) {
        facts.push(RunFact::text(
            Field::DeviceName,
            device,
            format!("the log's device line {line}"),
        ));
    }
    Ok(ShapedFrame {
        frame: rows_to_frame(&rows)?,
        notes,
        facts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_lines_with_colours_and_thousands() {
        let line = "[titan] 2025-03-01 10:00:00,000 - root - INFO - \u{1b}[31mstep: 20  \u{1b}[32mloss:  7.1234  \u{1b}[38;2;180;60;0mgrad_norm:  1.2345  \u{1b}[38;2;54;234;195mmemory: 35.12GiB(44.36%)  \u{1b}[34mtps: 6,912  \u{1b}[36mtflops: 325.67  \u{1b}[35mmfu: 32.93%\u{1b}[39m";
        assert!(is_step_line(line));
        let pairs = step_pairs(&plain(line)).unwrap();
        let keys: Vec<&str> = pairs.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "step",
                "loss",
                "grad_norm",
                "memory",
                "tps",
                "tflops",
                "mfu"
            ]
        );
        assert_eq!(number("6,912"), Some(6912.0));
        assert!(!is_step_line(
            "validate step: 20  loss: 7.0  memory: 1.00GiB(1.00%)  tps: 5"
        ));
        assert!(!is_step_line("step: 20 of warmup"));
        assert_eq!(
            device_line("x\nCUDA capacity: NVIDIA H100 80GB HBM3 with 79.11GiB memory\n"),
            Some(("NVIDIA H100 80GB HBM3".into(), 2))
        );
        assert_eq!(
            device_line("GPU capacity: NVIDIA A100-SXM4-80GB (0) with 79.15GiB memory"),
            Some(("NVIDIA A100-SXM4-80GB".into(), 1))
        );
    }
}
