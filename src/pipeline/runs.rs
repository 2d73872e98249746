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
    let mut names = Vec::with_capacity(loaded.len());
    let mut groups = Vec::with_capacity(loaded.len());
    for (display, l) in loaded {
        let (n, group) = run_group(display, l, by)?;
        names.push(n);
        groups.push(group);
    }
    Ok((key_names(by, &names), groups))
}

/// [`run_groups`] of one input (called `display`), as though it were the only one: how it splits into
/// runs, and the key column names that gives.
pub fn run_group(
    display: &str,
    l: &Loaded,
    by: &[String],
) -> Result<(Vec<String>, GroupBy), PipelineError> {
    if by.is_empty() {
        return Ok(match l.column_for("run_id") {
            Some(c) => (vec!["run_id".into()], GroupBy::Columns(vec![c])),
            None => (vec!["source_file".into()], GroupBy::File),
        });
    }
    let mut columns = Vec::new();
    for key in by {
        columns.push(l.column_for(key).ok_or_else(|| {
            PipelineError::Output(format!("--by {key}: {display} has no such column or field"))
        })?);
    }
    Ok((by_names(by), GroupBy::Columns(columns)))
}

/// The key column names of runs split by `by` over inputs whose own names were `names` (each input's,
/// as [`run_group`] gives them): the `by` keys, else `run_id` where any input has one, else
/// `source_file`.
pub fn key_names(by: &[String], names: &[Vec<String>]) -> Vec<String> {
    if !by.is_empty() {
        by_names(by)
    } else if names.iter().any(|n| n == &["run_id"]) {
        vec!["run_id".into()]
    } else {
        vec!["source_file".into()]
    }
}

/// The `by` keys as key column names: a key named like a summary column is written `by_<key>`.
fn by_names(by: &[String]) -> Vec<String> {
    by.iter()
        .map(|k| {
            if SUMMARY_COLUMNS.contains(&k.as_str()) {
                format!("by_{k}")
            } else {
                k.clone()
            }
        })
        .collect()
}
