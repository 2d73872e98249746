//! MLflow's file store: a run folder `mlruns/<experiment>/<run>/` with `meta.yaml`, `metrics/<key>` (one
//! line per logged value: `timestamp value step`, milliseconds since the epoch; a key with `/` is a
//! nested folder), `params/` and `tags/` (one file per key, the value as its content).
//!
//! One row per step: `step`, `wall_time` (the latest timestamp of that step, in seconds, so the column
//! mapping differences it into a step time when no metric gives one, as TensorBoard's wall_time), one
//! Float64 column per metric key in path order (a value logged twice for a step: the later line wins, as
//! MLflow's own history ends with it), then `run_id`, `run_name` and `experiment_id`. A line that is not
//! `timestamp value [step]` is skipped and counted in a warning. `meta.yaml` is read for its top-level
//! `key: value` scalars only (run_id, run_name, experiment_id): MLflow writes it flat, and no other of its
//! keys is used, so no YAML parser is needed.
//!
//! Parameters are not turned into columns: a run logs tens to hundreds of them, each a constant, and none is
//! named like a field mfu reads; pass what they say with --num-devices, --dtype, ... instead.

use std::collections::BTreeMap;
use std::path::Path;

use polars::prelude::{Column, DataFrame};

/// Whether `dir` is an MLflow run folder.
pub fn is_run_folder(dir: &Path) -> bool {
    dir.join("meta.yaml").is_file() && dir.join("metrics").is_dir()
}

/// One metric file: its key (path under `metrics/`, `/`-separated) and its bytes.
pub struct MetricFile {
    pub key: String,
    pub bytes: Vec<u8>,
}

/// What a run folder gave besides its metrics.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct RunInfo {
    pub run_id: String,
    pub run_name: Option<String>,
    pub experiment_id: Option<String>,
}

/// The top-level `key: value` scalars of a flat YAML file such as MLflow's meta.yaml (quotes removed).
pub fn flat_yaml(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        if line.starts_with([' ', '\t', '-', '#']) {
            continue; // nested, list item or comment
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        let value = value
            .strip_prefix('\'')
            .and_then(|v| v.strip_suffix('\''))
            .or_else(|| value.strip_prefix('"').and_then(|v| v.strip_suffix('"')))
            .unwrap_or(value);
        if !value.is_empty() {
            out.insert(key.trim().to_string(), value.to_string());
        }
    }
    out
}

/// One step's values: the latest timestamp (ms) and a value per metric.
struct StepRow {
    timestamp_ms: i64,
    values: Vec<Option<f64>>,
}

/// The frame of one run from its metric files (in key order) and its info; gives the frame, notes and
/// warnings.
pub fn read(
    metrics: &[MetricFile],
    info: &RunInfo,
) -> Result<(DataFrame, Vec<String>, Vec<String>), String> {
    let mut steps: BTreeMap<i64, StepRow> = BTreeMap::new();
    let mut bad_lines = 0usize;
    let mut first_bad: Option<String> = None;
    let width = metrics.len();
    for (index, metric) in metrics.iter().enumerate() {
        let text = String::from_utf8_lossy(&metric.bytes);
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let Some((timestamp, value, step)) = parse_line(line) else {
                bad_lines += 1;
                first_bad.get_or_insert_with(|| format!("metrics/{} line {}", metric.key, n + 1));
                continue;
            };
            let row = steps.entry(step).or_insert_with(|| StepRow {
                timestamp_ms: timestamp,
                values: vec![None; width],
            });
            row.timestamp_ms = row.timestamp_ms.max(timestamp);
            row.values[index] = Some(value);
        }
    }
    let mut warnings = Vec::new();
    if let Some(first) = first_bad {
        warnings.push(format!(
            "{bad_lines} metric line(s) not 'timestamp value step' skipped, the first at {first}"
        ));
    }
    if steps.is_empty() {
        return Err("the run logged no metric values".into());
    }
    let height = steps.len();
    let mut columns = vec![
        Column::new("step".into(), steps.keys().copied().collect::<Vec<i64>>()),
        Column::new(
            "wall_time".into(),
            steps
                .values()
                .map(|r| r.timestamp_ms as f64 / 1000.0)
                .collect::<Vec<f64>>(),
        ),
    ];
    for (index, metric) in metrics.iter().enumerate() {
        let name = match metric.key.as_str() {
            "step" | "wall_time" | "run_id" | "run_name" | "experiment_id" => {
                format!("metrics/{}", metric.key)
            }
            key => key.to_string(),
        };
        let values: Vec<Option<f64>> = steps.values().map(|r| r.values[index]).collect();
        columns.push(Column::new(name.into(), values));
    }
    columns.push(Column::new(
        "run_id".into(),
        vec![info.run_id.as_str(); height],
    ));
    columns.push(Column::new(
        "run_name".into(),
        vec![info.run_name.as_deref(); height],
    ));
    columns.push(Column::new(
        "experiment_id".into(),
        vec![info.experiment_id.as_deref(); height],
    ));
    let frame = DataFrame::new(height, columns).map_err(|e| e.to_string())?;
    let notes = vec![format!(
        "MLflow run {}: {} metric(s) over {height} step(s); wall_time from metric timestamps",
        info.run_id, width
    )];
    Ok((frame, notes, warnings))
}

/// `timestamp value step` (MLflow's file store; before MLflow 1.0 the step was not written: step 0).
fn parse_line(line: &str) -> Option<(i64, f64, i64)> {
    let mut parts = line.split_ascii_whitespace();
    let timestamp: i64 = parts.next()?.parse().ok()?;
    let value: f64 = parts.next()?.parse().ok()?;
    let step: i64 = match parts.next() {
        Some(s) => s.parse().ok()?,
        None => 0,
    };
    parts.next().is_none().then_some((timestamp, value, step))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metric(key: &str, text: &str) -> MetricFile {
        MetricFile {
            key: key.into(),
            bytes: text.as_bytes().to_vec(),
        }
    }

    #[test]
    fn steps_are_joined_across_metrics_and_the_later_line_wins() {
        let info = RunInfo {
            run_id: "abc".into(),
            run_name: Some("first".into()),
            experiment_id: Some("0".into()),
        };
        let (frame, _, warnings) = read(
            &[
                metric("loss", "1000 2.5 1\n2500 2.25 2\n2600 2.0 2\n"),
                metric("train/tokens", "1100 4096 1\n2700 4096 2\nnot a line\n"),
                metric("step", "1000 1 1\n"),
            ],
            &info,
        )
        .unwrap();
        let names: Vec<&str> = frame
            .get_column_names()
            .iter()
            .map(|n| n.as_str())
            .collect();
        assert_eq!(
            names,
            [
                "step",
                "wall_time",
                "loss",
                "train/tokens",
                "metrics/step",
                "run_id",
                "run_name",
                "experiment_id"
            ]
        );
        let loss: Vec<Option<f64>> = frame
            .column("loss")
            .unwrap()
            .f64()
            .unwrap()
            .iter()
            .collect();
        assert_eq!(loss, [Some(2.5), Some(2.0)]);
        let wall: Vec<Option<f64>> = frame
            .column("wall_time")
            .unwrap()
            .f64()
            .unwrap()
            .iter()
            .collect();
        assert_eq!(wall, [Some(1.1), Some(2.7)]);
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].contains("metrics/train/tokens line 3"),
            "{warnings:?}"
        );
    }

    #[test]
    fn meta_yaml_scalars_and_old_lines_without_a_step() {
        let meta = flat_yaml("artifact_uri: file:///x\nrun_id: 5f2a\nrun_name: 'brave-owl'\ntags: []\n  nested: no\nexperiment_id: '0'\n");
        assert_eq!(meta["run_id"], "5f2a");
        assert_eq!(meta["run_name"], "brave-owl");
        assert_eq!(meta["experiment_id"], "0");
        assert!(!meta.contains_key("nested"));
        assert_eq!(
            parse_line("1700000000000 0.5"),
            Some((1700000000000, 0.5, 0))
        );
        assert_eq!(
            parse_line("1 nan 3").map(|(_, v, _)| v.is_nan()),
            Some(true)
        );
        assert_eq!(parse_line("1 2 3 4"), None);
    }
}
