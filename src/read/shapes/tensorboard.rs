//! TensorBoard scalar CSV exports: `Wall time,Step,Value`, one file per run and tag, named
//! `run-<run>-tag-<tag>.csv` by the TensorBoard UI. Long to wide: the value column takes the tag's name, and
//! a `run` column the run's. `Wall time` (Unix seconds) is a cumulative clock: its differences give the step
//! time when no timing tag exists. Several tag files of one run combine by step ([`combine`]).

use polars::prelude::*;

use super::ShapedFrame;

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
    })
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
    }
}
