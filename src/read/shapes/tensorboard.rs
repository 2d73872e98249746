//! TensorBoard scalar CSV exports: `Wall time,Step,Value`, one file per run and tag, named
//! `run-<run>-tag-<tag>.csv` by the TensorBoard UI. Long to wide: the value column takes the tag's name, and
//! a `run` column the run's. `Wall time` (Unix seconds) is a cumulative clock: its differences give the step
//! time when no timing tag exists. Several tag files of one run combine by step ([`combine`]).

use polars::prelude::*;

use super::ShapedFrame;

/// (run, tag) of a file named like a TensorBoard export (`...run-<run>-tag-<tag>.csv`), else `None`.
pub fn export_run_and_tag(file_name: &str) -> Option<(String, String)> {
    let lower = file_name.to_ascii_lowercase();
    let is_csv = [".csv", ".csv.gz", ".csv.zst"]
        .iter()
        .any(|e| lower.ends_with(e));
    let (run, tag) = run_and_tag(file_name);
    (is_csv && tag != "value" && file_name.contains("-tag-")).then_some((run, tag))
}

/// (run, tag) from an export's file name; the tag defaults to `value`, the run to the file stem.
pub fn run_and_tag(file_name: &str) -> (String, String) {
    let stem = file_name
        .strip_suffix(".gz")
        .or_else(|| file_name.strip_suffix(".zst"))
        .unwrap_or(file_name);
    let stem = stem.strip_suffix(".csv").unwrap_or(stem);
    // The UI names exports `run-<run>-tag-<tag>.csv`; a prefix before `run-` (a renamed copy) is allowed.
    let start = if stem.starts_with("run-") {
        Some(0)
    } else {
        stem.find("_run-").map(|i| i + 1)
    };
    if let Some(rest) = start.map(|i| &stem[i + 4..]) {
        if let Some((run, tag)) = rest.rsplit_once("-tag-") {
            return (run.to_string(), tag.to_string());
        }
    }
    (stem.to_string(), "value".to_string())
}

pub fn read(bytes: Vec<u8>, file_name: &str) -> Result<ShapedFrame, String> {
    let (run, tag) = run_and_tag(file_name);
    let mut df = crate::read::csv::read(bytes, b',')?;
    let value = df
        .get_column_names()
        .into_iter()
        .find(|c| c.eq_ignore_ascii_case("value"))
        .cloned()
        .ok_or("no 'Value' column")?;
    df.rename(value.as_str(), tag.as_str().into())
        .map_err(|e| e.to_string())?;
    let height = df.height();
    df.insert_column(
        0,
        Column::new_scalar(
            "run".into(),
            Scalar::new(DataType::String, AnyValue::StringOwned(run.as_str().into())),
            height,
        ),
    )
    .map_err(|e| e.to_string())?;
    Ok(ShapedFrame {
        frame: df,
        notes: vec![format!(
            "TensorBoard export of tag '{tag}' for run '{run}': step time from differences of Wall time"
        )],
        ..Default::default()
    })
}

/// Tag exports of one run side by side: rows matched on Step (the k-th occurrence of a step in one file with
/// the k-th in another, so a restarted run's repeated steps stay apart), in order of first appearance.
/// `Wall time` comes from the first file that has the row.
pub fn combine(frames: Vec<DataFrame>) -> Result<DataFrame, String> {
    let err = |e: PolarsError| e.to_string();
    let mut run_name: Option<String> = None;
    let mut keys: Vec<(u64, usize)> = Vec::new();
    let mut index: std::collections::HashMap<(u64, usize), usize> = Default::default();
    let mut steps: Vec<f64> = Vec::new();
    let mut wall: Vec<Option<f64>> = Vec::new();
    let mut tags: Vec<(String, Vec<Option<f64>>)> = Vec::new();
    for df in &frames {
        let names = df.get_column_names();
        let find = |want: &str| {
            names
                .iter()
                .find(|n| n.eq_ignore_ascii_case(want))
                .map(|n| n.to_string())
        };
        let step_col = find("step").ok_or("no 'Step' column")?;
        let wall_col = find("wall time").ok_or("no 'Wall time' column")?;
        let tag = names
            .iter()
            .map(|n| n.to_string())
            .find(|n| n != "run" && *n != step_col && *n != wall_col)
            .ok_or("no value column")?;
        if run_name.is_none() {
            run_name = df
                .column("run")
                .ok()
                .and_then(|c| c.str().ok().and_then(|s| s.get(0).map(str::to_string)));
        }
        let as_f64 = |name: &str| -> Result<Vec<Option<f64>>, String> {
            Ok(df
                .column(name)
                .map_err(err)?
                .cast(&DataType::Float64)
                .map_err(err)?
                .f64()
                .map_err(err)?
                .iter()
                .collect())
        };
        let (s, w, v) = (as_f64(&step_col)?, as_f64(&wall_col)?, as_f64(&tag)?);
        let mut values = vec![None; keys.len()];
        let mut seen: std::collections::HashMap<u64, usize> = Default::default();
        for row in 0..df.height() {
            let Some(step) = s[row] else { continue };
            let k = seen.entry(step.to_bits()).or_insert(0);
            let key = (step.to_bits(), *k);
            *k += 1;
            let at = *index.entry(key).or_insert_with(|| {
                keys.push(key);
                steps.push(step);
                wall.push(None);
                for (_, col) in tags.iter_mut() {
                    col.push(None);
                }
                values.push(None);
                keys.len() - 1
            });
            if wall[at].is_none() {
                wall[at] = w[row];
            }
            values[at] = v[row];
        }
        tags.push((tag, values));
    }
    let n = keys.len();
    let mut columns = vec![
        Column::new("run".into(), vec![run_name.clone(); n]),
        Column::new("Wall time".into(), wall),
        Column::new("Step".into(), steps),
    ];
    for (name, mut values) in tags {
        values.resize(n, None);
        columns.push(Column::new(name.as_str().into(), values));
    }
    DataFrame::new(n, columns).map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_and_tag_from_export_names() {
        assert_eq!(
            run_and_tag("run-.-tag-loss.csv"),
            (".".into(), "loss".into())
        );
        assert_eq!(
            run_and_tag("run-exp_1-tag-train_lr.csv.gz"),
            ("exp_1".into(), "train_lr".into())
        );
        assert_eq!(
            run_and_tag("copy_of_run-a-tag-loss.csv"),
            ("a".into(), "loss".into())
        );
        assert_eq!(
            run_and_tag("scalars.csv"),
            ("scalars".into(), "value".into())
        );
        assert_eq!(export_run_and_tag("scalars.csv"), None);
        assert_eq!(
            export_run_and_tag("run-a-tag-loss.csv.gz"),
            Some(("a".into(), "loss".into()))
        );
    }

    #[test]
    fn tags_of_one_run_combine_by_step_and_occurrence() {
        let loss = read(
            b"Wall time,Step,Value\n10,1,3.0\n20,2,2.5\n30,1,2.9\n".to_vec(),
            "run-a-tag-loss.csv",
        )
        .unwrap()
        .frame;
        let lr = read(
            b"Wall time,Step,Value\n10.1,1,0.1\n31,1,0.05\n40,3,0.01\n".to_vec(),
            "run-a-tag-lr.csv",
        )
        .unwrap()
        .frame;
        let df = combine(vec![loss, lr]).unwrap();
        assert_eq!(
            df.get_column_names(),
            ["run", "Wall time", "Step", "loss", "lr"]
        );
        let col =
            |n: &str| -> Vec<Option<f64>> { df.column(n).unwrap().f64().unwrap().iter().collect() };
        assert_eq!(col("Step"), [Some(1.0), Some(2.0), Some(1.0), Some(3.0)]);
        assert_eq!(col("loss"), [Some(3.0), Some(2.5), Some(2.9), None]);
        assert_eq!(col("lr"), [Some(0.1), None, Some(0.05), Some(0.01)]);
        assert_eq!(
            col("Wall time"),
            [Some(10.0), Some(20.0), Some(30.0), Some(40.0)]
        );
    }
}
