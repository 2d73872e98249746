//! Which rows of loaded inputs make one run: what `mfu summary`, `mfu goodput` and `mfu audit` key
//! their runs by.

use crate::summary::{GroupBy, SUMMARY_COLUMNS};

use super::{Loaded, PipelineError};

/// How each of `loaded`'s inputs splits into runs: by the `by` keys (a column, or a field name such as
/// `run_id`), else each input's run_id field, else the input itself; and the key columns' names (a key
/// named like a summary column is written `by_<key>`; without keys, `run_id` or `source_file`).
pub fn run_groups(
    loaded: &[(String, Loaded)],
    by: &[String],
) -> Result<(Vec<String>, Vec<GroupBy>), PipelineError> {
    Ok(if by.is_empty() {
        let any_run = loaded.iter().any(|(_, l)| l.column_for("run_id").is_some());
        let groups = loaded
            .iter()
            .map(|(_, l)| match l.column_for("run_id") {
                Some(c) => GroupBy::Columns(vec![c]),
                None => GroupBy::File,
            })
            .collect();
        let name = if any_run { "run_id" } else { "source_file" };
        (vec![name.to_string()], groups)
    } else {
        let mut groups = Vec::new();
        for (display, l) in loaded {
            let mut columns = Vec::new();
            for key in by {
                columns.push(l.column_for(key).ok_or_else(|| {
                    PipelineError::Output(format!(
                        "--by {key}: {display} has no such column or field"
                    ))
                })?);
            }
            groups.push(GroupBy::Columns(columns));
        }
        let names = by
            .iter()
            .map(|k| {
                if SUMMARY_COLUMNS.contains(&k.as_str()) {
                    format!("by_{k}")
                } else {
                    k.clone()
                }
            })
            .collect();
        (names, groups)
    })
}
