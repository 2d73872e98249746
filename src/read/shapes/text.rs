//! Console text logs: each line that matches a regular expression with named groups becomes a row, one
//! column per group. Presets cover modded-nanogpt and nanoGPT; `--line-regex` takes any other. A group
//! that captures a timestamp (ISO 8601, `2024-02-02 17:32:13[.283]`, see
//! [`crate::values::parse_timestamp`]) is read in seconds since the epoch, so a `wall_time` group's
//! differences give the step time.

use regex::Regex;
use serde_json::{Map, Value};

use super::{rows_to_frame, ShapedFrame};
use crate::values::{parse_cell, CellNumber};

/// modded-nanogpt: `step:N/M [val_loss:L ][train_loss:L ]train_time:Xms step_avg:Yms` (`step_avg:nanms`
/// before the timer's first steps); train_time is cumulative (it excludes validation), so the group is
/// named for the cumulative alias with its unit.
pub const MODDED_NANOGPT: &str = r"^step:(?P<step>\d+)/(?P<total_steps>\d+) (?:val_loss:(?P<val_loss>[-\d.eE]+|nan) )?(?:train_loss:(?P<train_loss>[-\d.eE]+|nan) )?train_time:(?P<train_time_ms>[\d.]+)ms step_avg:(?P<step_avg_ms>[\d.]+|nan)ms";

/// nanoGPT: `iter N: loss L, time Tms, mfu M%` (mfu is nanoGPT's own estimate against 312e12 FLOP/s).
pub const NANOGPT: &str = r"^iter (?P<step>\d+): loss (?P<loss>[-\d.eE]+|nan), time (?P<step_time_ms>[\d.]+)ms(?:, mfu (?P<mfu>-?[\d.]+%))?";

/// What nanoGPT prints before training that its iteration lines do not say: `tokens per iteration will
/// be: 491,520` (gradient accumulation x processes x batch size x block size), the tokens of a step.
pub fn nanogpt_facts(text: &str) -> Vec<crate::columns::RunFact> {
    const SAYS: &str = "tokens per iteration will be:";
    text.lines()
        .enumerate()
        .find_map(|(index, line)| {
            let at = line.find(SAYS)?;
            let n: f64 = line[at + SAYS.len()..]
                .trim()
                .replace(',', "")
                .parse()
                .ok()?;
            (n.is_finite() && n >= 1.0).then(|| {
                crate::columns::RunFact::number(
                    crate::columns::Field::Tokens,
                    n,
                    format!("'{SAYS}' at line {}", index + 1),
                )
            })
        })
        .into_iter()
        .collect()
}

/// Compiles a line pattern, checking it has at least one named group.
pub fn compile(pattern: &str) -> Result<Regex, String> {
    let re = Regex::new(pattern).map_err(|e| e.to_string())?;
    if re.capture_names().flatten().next().is_none() {
        return Err(format!(
            "'{pattern}' has no named group: name what each group holds, e.g. (?P<step>\\d+)"
        ));
    }
    Ok(re)
}

pub fn read(bytes: &[u8], line: &Regex) -> Result<ShapedFrame, String> {
    let text = String::from_utf8_lossy(bytes);
    let names: Vec<&str> = line.capture_names().flatten().collect();
    let mut rows = Vec::new();
    let mut lines = 0;
    for l in text.lines() {
        lines += 1;
        let Some(caps) = line.captures(l) else {
            continue;
        };
        let mut row = Map::new();
        for name in &names {
            let value = match caps.name(name).map(|m| m.as_str()) {
                None => Value::Null,
                Some(s) => match crate::values::parse_timestamp(s) {
                    // A timestamp (`2024-02-02 17:32:13`, ISO 8601) in seconds since the epoch, so
                    // that a wall_time group's differences are step times.
                    Some(t) => serde_json::Number::from_f64(t).map_or(Value::Null, Value::Number),
                    // Plain numbers become numbers; anything else (units, percentages) stays text and
                    // is read later by the columns stage, which knows what each field means.
                    None => match parse_cell(s) {
                        Ok(None) => Value::Null,
                        _ if s.trim().parse::<i64>().is_ok() => {
                            Value::from(s.trim().parse::<i64>().expect("just parsed"))
                        }
                        Ok(Some(CellNumber {
                            value,
                            seconds_per_unit: None,
                        })) if s.trim().parse::<f64>().is_ok() => {
                            serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number)
                        }
                        _ => Value::String(s.to_string()),
                    },
                },
            };
            row.insert((*name).to_string(), value);
        }
        rows.push(row);
    }
    if rows.is_empty() {
        return Err(format!(
            "no line of {lines} matches the line pattern {}",
            line.as_str()
        ));
    }
    Ok(ShapedFrame {
        frame: rows_to_frame(&rows)?,
        notes: vec![format!("{} of {lines} lines matched", rows.len())],
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_read_their_lines() {
        let re = compile(MODDED_NANOGPT).unwrap();
        let log = "noise\nstep:0/3000 val_loss:10.8258 train_time:0ms step_avg:0.02ms\nstep:1/3000 train_time:326ms step_avg:325.73ms\n";
        let f = read(log.as_bytes(), &re).unwrap().frame;
        assert_eq!(f.height(), 2);
        let t = f
            .column("train_time_ms")
            .unwrap()
            .cast(&polars::prelude::DataType::Float64)
            .unwrap();
        assert_eq!(t.f64().unwrap().get(1), Some(326.0));
        let re = compile(NANOGPT).unwrap();
        let f = read(b"iter 10: loss 4.2100, time 120.50ms, mfu 30.12%\n", &re)
            .unwrap()
            .frame;
        assert_eq!(
            f.column("mfu").unwrap().str().unwrap().get(0),
            Some("30.12%")
        );
    }

    #[test]
    fn patterns_need_named_groups_and_a_match() {
        assert!(compile(r"step (\d+)")
            .unwrap_err()
            .contains("no named group"));
        let re = compile(r"^x (?P<step>\d+)").unwrap();
        assert!(read(b"nothing here\n", &re)
            .unwrap_err()
            .contains("no line of 1"));
    }
}
