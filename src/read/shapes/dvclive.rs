//! DVCLive run folders (`dvclive/` by default): `plots/metrics/<key>.tsv` per metric (`step`, the value,
//! and `timestamp` in milliseconds when the run asked for it; a key with `/` is a nested folder),
//! `metrics.json` (the latest values) and `params.yaml`.
//!
//! One row per step with a column per metric key (`train/loss` from `plots/metrics/train/loss.tsv`), in
//! key order; `wall_time` is a step's latest timestamp in seconds when any metric has timestamps (its
//! differences give the step time when no metric does); `run_id` is the folder's path. Parameters named
//! like a field are facts of the run. The folder stands as its `metrics.json` in the list of inputs.

use std::collections::BTreeMap;
use std::path::Path;

use polars::prelude::{Column, DataFrame};

use super::ShapedFrame;

/// Whether `dir` is a DVCLive run folder: `plots/metrics/` beside a `metrics.json`.
pub fn is_run_folder(dir: &Path) -> bool {
    dir.join("plots").join("metrics").is_dir() && dir.join("metrics.json").is_file()
}

/// One metric's file: its key and its bytes.
pub struct MetricFile {
    pub key: String,
    pub bytes: Vec<u8>,
}

/// A step's latest timestamp (ms) and its values by key index.
#[derive(Default)]
struct StepRow {
    timestamp_ms: Option<i64>,
    values: BTreeMap<usize, f64>,
}

/// Reads the metric files (in key order) and `params.yaml` of one run into a frame, with notes, facts and
/// warnings.
pub fn read(
    metrics: &[MetricFile],
    params: Option<&str>,
    run_id: &str,
) -> Result<(ShapedFrame, Vec<String>), String> {
    let mut steps: BTreeMap<i64, StepRow> = BTreeMap::new();
    let mut bad = 0usize;
    let mut first_bad = None;
    for (index, metric) in metrics.iter().enumerate() {
        let text = String::from_utf8_lossy(&metric.bytes);
        let mut lines = text.lines().enumerate();
        let Some((_, header)) = lines.next() else {
            continue;
        };
        let names: Vec<&str> = header.split('\t').map(str::trim).collect();
        let step_at = names
            .iter()
            .position(|n| *n == "step")
            .ok_or_else(|| format!("plots/metrics/{}.tsv: no 'step' column", metric.key))?;
        let time_at = names.iter().position(|n| *n == "timestamp");
        let value_at = (0..names.len())
            .rev()
            .find(|i| Some(*i) != time_at && *i != step_at)
            .ok_or_else(|| format!("plots/metrics/{}.tsv: no value column", metric.key))?;
        for (n, line) in lines {
            if line.trim().is_empty() {
                continue;
            }
            let cells: Vec<&str> = line.split('\t').map(str::trim).collect();
            let step = cells.get(step_at).and_then(|c| c.parse::<i64>().ok());
            let value = cells.get(value_at).and_then(|c| c.parse::<f64>().ok());
            let (Some(step), Some(value)) = (step, value) else {
                bad += 1;
                first_bad.get_or_insert_with(|| {
                    format!("plots/metrics/{}.tsv line {}", metric.key, n + 1)
                });
                continue;
            };
            let row = steps.entry(step).or_default();
            if let Some(t) = time_at
                .and_then(|t| cells.get(t))
                .and_then(|c| c.parse::<i64>().ok())
            {
                row.timestamp_ms = Some(row.timestamp_ms.map_or(t, |old| old.max(t)));
            }
            row.values.insert(index, value);
        }
    }
    if steps.is_empty() {
        return Err("the run logged no metric values (plots/metrics/*.tsv)".into());
    }
    let height = steps.len();
    let mut columns = vec![Column::new(
        "step".into(),
        steps.keys().copied().collect::<Vec<i64>>(),
    )];
    let timed = steps.values().any(|r| r.timestamp_ms.is_some());
    if timed {
        let wall: Vec<Option<f64>> = steps
            .values()
            .map(|r| r.timestamp_ms.map(|t| t as f64 / 1000.0))
            .collect();
        columns.push(Column::new("wall_time".into(), wall));
    }
    for (index, metric) in metrics.iter().enumerate() {
        let name = match metric.key.as_str() {
            "step" | "wall_time" | "run_id" => format!("metrics/{}", metric.key),
            key => key.to_string(),
        };
        let values: Vec<Option<f64>> = steps
            .values()
            .map(|r| r.values.get(&index).copied())
            .collect();
        columns.push(Column::new(name.into(), values));
    }
    columns.push(Column::new("run_id".into(), vec![run_id; height]));
    let frame = DataFrame::new(height, columns).map_err(|e| e.to_string())?;
    let mut notes = vec![format!(
        "DVCLive run {run_id}: {} metric(s), {height} step(s){}",
        metrics.len(),
        if timed {
            "; wall_time from metric timestamps"
        } else {
            ""
        }
    )];
    let mut warnings = Vec::new();
    if let Some(first) = first_bad {
        warnings.push(format!(
            "{bad} metric line(s) without a step and a number skipped, the first at {first}"
        ));
    }
    let params = params.map(super::mlflow::flat_yaml).unwrap_or_default();
    let facts = super::parameter_facts(
        params.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        |key| format!("the run's parameter '{key}' (params.yaml)"),
    );
    if !facts.is_empty() {
        notes.push(format!("{} fact(s) from params.yaml", facts.len()));
    }
    Ok((
        ShapedFrame {
            frame,
            notes,
            facts,
            ..Default::default()
        },
        warnings,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_joined_by_step_with_timestamps_and_params() {
        let metrics = [
            MetricFile {
                key: "step_time_s".into(),
                bytes: b"timestamp\tstep\tstep_time_s\n1000\t0\t0.5\n1600\t1\t0.6\nx\t2\tnope\n"
                    .to_vec(),
            },
            MetricFile {
                key: "train/loss".into(),
                bytes: b"step\tloss\n0\t3.0\n1\t2.9\n2\tnan\n".to_vec(),
            },
        ];
        let (shaped, warnings) = read(
            &metrics,
            Some("dtype: bf16\nnum_devices: 8\nlr: 0.1\n"),
            "dvclive",
        )
        .unwrap();
        let df = shaped.frame;
        assert_eq!(df.height(), 3);
        let names: Vec<&str> = df.get_column_names().iter().map(|n| n.as_str()).collect();
        assert_eq!(
            names,
            ["step", "wall_time", "step_time_s", "train/loss", "run_id"]
        );
        let wall = df.column("wall_time").unwrap().f64().unwrap().clone();
        assert_eq!(wall.get(1), Some(1.6));
        assert_eq!(wall.get(2), None);
        assert!(df
            .column("train/loss")
            .unwrap()
            .f64()
            .unwrap()
            .get(2)
            .unwrap()
            .is_nan());
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert_eq!(shaped.facts.len(), 2);
        assert!(read(&[], None, "x").is_err());
    }
}
