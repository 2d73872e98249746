//! MLflow's stores. The file store: a run folder `mlruns/<experiment>/<run>/` with `meta.yaml`, `metrics/<key>` (one
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
//! The SQLite store (`mlflow.db`) holds every run in one file and gives the same columns, one row per run
//! and step ([`read_sqlite`], through rusqlite with SQLite compiled in).
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

/// One step's values: the latest timestamp (ms) and a value per metric (by key index).
struct StepRow {
    timestamp_ms: i64,
    values: BTreeMap<usize, f64>,
}

/// Metric points gathered run by run, then laid out as one frame: one row per run and step.
#[derive(Default)]
pub struct Collector {
    keys: Vec<String>,
    key_index: BTreeMap<String, usize>,
    runs: Vec<(RunInfo, BTreeMap<i64, StepRow>)>,
    bad_points: usize,
    first_bad: Option<String>,
}

impl Collector {
    /// Points from now on belong to this run.
    pub fn start_run(&mut self, info: RunInfo) {
        self.runs.push((info, BTreeMap::new()));
    }

    /// One logged value of the current run; a later one for the same step and key replaces it.
    pub fn point(&mut self, key: &str, timestamp_ms: i64, value: f64, step: i64) {
        let index = match self.key_index.get(key) {
            Some(&i) => i,
            None => {
                self.keys.push(key.to_string());
                self.key_index.insert(key.to_string(), self.keys.len() - 1);
                self.keys.len() - 1
            }
        };
        let Some((_, steps)) = self.runs.last_mut() else {
            return;
        };
        let row = steps.entry(step).or_insert_with(|| StepRow {
            timestamp_ms,
            values: BTreeMap::new(),
        });
        row.timestamp_ms = row.timestamp_ms.max(timestamp_ms);
        row.values.insert(index, value);
    }

    /// A point that could not be read, `at` saying where.
    pub fn bad_point(&mut self, at: impl FnOnce() -> String) {
        self.bad_points += 1;
        if self.first_bad.is_none() {
            self.first_bad = Some(at());
        }
    }

    /// The frame (runs in the order started, steps ascending; metric columns in key order), notes and
    /// warnings.
    pub fn finish(self) -> Result<(DataFrame, Vec<String>, Vec<String>), String> {
        let mut warnings = Vec::new();
        if let Some(first) = &self.first_bad {
            warnings.push(format!(
                "{} metric value(s) that are not 'timestamp value step' skipped, the first at {first}",
                self.bad_points
            ));
        }
        let height: usize = self.runs.iter().map(|(_, steps)| steps.len()).sum();
        if height == 0 {
            return Err("the run logged no metric values".into());
        }
        // Columns in key order, whatever order the keys were first seen in.
        let mut order: Vec<usize> = (0..self.keys.len()).collect();
        order.sort_by(|&a, &b| self.keys[a].cmp(&self.keys[b]));
        let mut step = Vec::with_capacity(height);
        let mut wall = Vec::with_capacity(height);
        let mut metrics: Vec<Vec<Option<f64>>> = vec![Vec::with_capacity(height); self.keys.len()];
        let (mut run_id, mut run_name, mut experiment) = (Vec::new(), Vec::new(), Vec::new());
        for (info, steps) in &self.runs {
            for (s, row) in steps {
                step.push(*s);
                wall.push(row.timestamp_ms as f64 / 1000.0);
                for (k, column) in metrics.iter_mut().enumerate() {
                    column.push(row.values.get(&k).copied());
                }
                run_id.push(info.run_id.as_str());
                run_name.push(info.run_name.as_deref());
                experiment.push(info.experiment_id.as_deref());
            }
        }
        let mut columns = vec![
            Column::new("step".into(), step),
            Column::new("wall_time".into(), wall),
        ];
        for &k in &order {
            let name = match self.keys[k].as_str() {
                "step" | "wall_time" | "run_id" | "run_name" | "experiment_id" => {
                    format!("metrics/{}", self.keys[k])
                }
                key => key.to_string(),
            };
            columns.push(Column::new(name.into(), std::mem::take(&mut metrics[k])));
        }
        columns.push(Column::new("run_id".into(), run_id));
        columns.push(Column::new("run_name".into(), run_name));
        columns.push(Column::new("experiment_id".into(), experiment));
        let frame = DataFrame::new(height, columns).map_err(|e| e.to_string())?;
        let notes = self
            .runs
            .iter()
            .map(|(info, steps)| {
                format!(
                    "MLflow run {}: {} step(s); wall_time from metric timestamps",
                    info.run_id,
                    steps.len()
                )
            })
            .chain(std::iter::once(format!(
                "{} metric(s) over {} run(s)",
                self.keys.len(),
                self.runs.len()
            )))
            .collect();
        Ok((frame, notes, warnings))
    }
}

/// The frame of one file-store run from its metric files (in key order) and its info; gives the frame,
/// notes and warnings.
pub fn read(
    metrics: &[MetricFile],
    info: &RunInfo,
) -> Result<(DataFrame, Vec<String>, Vec<String>), String> {
    let mut collector = Collector::default();
    collector.start_run(info.clone());
    for metric in metrics {
        let text = String::from_utf8_lossy(&metric.bytes);
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            match parse_line(line) {
                Some((timestamp, value, step)) => {
                    collector.point(&metric.key, timestamp, value, step)
                }
                None => collector.bad_point(|| format!("metrics/{} line {}", metric.key, n + 1)),
            }
        }
    }
    collector.finish()
}

/// The runs of an MLflow SQLite store (`mlflow.db`, MLflow's default since 3.7; `only`: one run), read-only
/// and without touching the file: runs in experiment and start-time order, metrics from the `metrics` table
/// (`is_nan` means NaN; for a step logged twice the later timestamp wins), names from `runs.name` or the
/// `mlflow.runName` tag.
pub fn read_sqlite(
    path: &Path,
    only: Option<&str>,
) -> Result<(DataFrame, Vec<String>, Vec<String>), String> {
    let db = open(path)?;
    let sql_error = |e: rusqlite::Error| format!("not an MLflow store ({e})");
    let infos: Vec<RunInfo> = runs(&db)?
        .into_iter()
        .filter(|r| only.is_none_or(|id| r.run_id == id))
        .collect();
    if infos.is_empty() {
        return Err(match only {
            Some(id) => format!("no run {id} in the store"),
            None => "the store holds no runs".into(),
        });
    }
    let mut points = db
        .prepare(
            "SELECT key, timestamp, value, step, is_nan FROM metrics WHERE run_uuid = ?1 \
             ORDER BY step, timestamp, key",
        )
        .map_err(sql_error)?;
    let mut collector = Collector::default();
    for info in infos {
        let run = info.run_id.clone();
        collector.start_run(info);
        let mut rows = points.query([&run]).map_err(sql_error)?;
        while let Some(row) = rows.next().map_err(sql_error)? {
            let point = (|| -> rusqlite::Result<(String, i64, Option<f64>, i64, bool)> {
                Ok((
                    row.get(0)?,
                    row.get(1)?,
                    row.get(2)?,
                    row.get(3)?,
                    row.get(4)?,
                ))
            })();
            match point {
                Ok((key, timestamp, value, step, is_nan)) => {
                    let value = if is_nan { Some(f64::NAN) } else { value };
                    match value {
                        Some(v) => collector.point(&key, timestamp, v, step),
                        None => {
                            collector.bad_point(|| format!("run {run}, metric '{key}' step {step}"))
                        }
                    }
                }
                Err(e) => collector.bad_point(|| format!("run {run}: {e}")),
            }
        }
    }
    collector.finish()
}

/// The parameters of one run of an MLflow SQLite store, as facts of the run (see
/// [`super::parameter_facts`]).
pub fn sqlite_param_facts(path: &Path, run: &str) -> Vec<crate::columns::RunFact> {
    let Ok(db) = open(path) else {
        return Vec::new();
    };
    // Its tags (where a trainer puts what is not a number, as the device name; MLflow's own `mlflow.*`
    // aside), then its parameters (often a whole configuration, the model's torch_dtype among it).
    let rows = |sql: &str| -> Vec<(String, String)> {
        db.prepare(sql)
            .and_then(|mut q| {
                q.query_map([run], |row| Ok((row.get(0)?, row.get(1)?)))?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .unwrap_or_default()
    };
    let params = rows("SELECT key, value FROM params WHERE run_uuid = ?1 ORDER BY key");
    let tags: Vec<(String, String)> =
        rows("SELECT key, value FROM tags WHERE run_uuid = ?1 ORDER BY key")
            .into_iter()
            .filter(|(k, _)| !k.starts_with("mlflow."))
            .collect();
    super::parameter_facts(
        tags.iter()
            .chain(&params)
            .map(|(k, v)| (k.as_str(), v.as_str())),
        |key| {
            let is_param = params.iter().any(|(k, _)| k == key);
            format!(
                "the run's {} '{key}'",
                if is_param { "parameter" } else { "tag" }
            )
        },
    )
}

/// The `key: value` files of a file-store run folder's `params/` or `tags/` (nested folders for keys with
/// `/`), keys `/`-joined, in key order; MLflow's own `mlflow.*` tags aside.
pub fn key_files(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(value) = std::fs::read_to_string(&path) {
                let key = path
                    .strip_prefix(dir)
                    .unwrap_or(&path)
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/");
                if !key.starts_with("mlflow.") {
                    out.push((key, value));
                }
            }
        }
    }
    out.sort();
    out
}

/// The run ids of an MLflow SQLite store, in experiment and start-time order.
pub fn sqlite_runs(path: &Path) -> Result<Vec<String>, String> {
    Ok(runs(&open(path)?)?.into_iter().map(|r| r.run_id).collect())
}

/// Opens a store read-only without touching the file.
fn open(path: &Path) -> Result<rusqlite::Connection, String> {
    use rusqlite::{Connection, OpenFlags};
    // immutable=1: SQLite neither locks nor writes the file (no -wal or -shm beside an input).
    let uri = format!(
        "file:{}?immutable=1",
        path.display()
            .to_string()
            .replace('%', "%25")
            .replace('?', "%3f")
            .replace('#', "%23")
    );
    Connection::open_with_flags(
        uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| format!("cannot open as SQLite: {e}"))
}

/// Every run of a store with its name and experiment.
fn runs(db: &rusqlite::Connection) -> Result<Vec<RunInfo>, String> {
    let sql_error = |e: rusqlite::Error| format!("not an MLflow store ({e})");
    let mut runs = db
        .prepare(
            "SELECT r.run_uuid, COALESCE(r.name, t.value), CAST(r.experiment_id AS TEXT) \
             FROM runs r LEFT JOIN tags t ON t.run_uuid = r.run_uuid AND t.key = 'mlflow.runName' \
             ORDER BY r.experiment_id, r.start_time, r.run_uuid",
        )
        .map_err(sql_error)?;
    let infos = runs
        .query_map([], |row| {
            Ok(RunInfo {
                run_id: row.get(0)?,
                run_name: row.get(1)?,
                experiment_id: row.get(2)?,
            })
        })
        .map_err(sql_error)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(sql_error)?;
    Ok(infos)
}

/// Whether `path` starts like an SQLite database.
pub fn is_sqlite(path: &Path) -> bool {
    let mut magic = [0u8; 16];
    std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic))
        .is_ok_and(|_| &magic == b"SQLite format 3\0")
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
                "metrics/step", // a metric named "step", in key order
                "train/tokens",
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
