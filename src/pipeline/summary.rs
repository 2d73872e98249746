//! Runs summarised across loaded inputs: which columns key a run in each input, then
//! [`crate::summary::summarize`]. What `mfu summary` and the Python package's `summary` share.

use crate::columns::{Field, FieldSource};
use crate::summary::{summarize, RunSummary, SummaryInput};

use super::runs::run_groups;
use super::{Loaded, PipelineError};

/// One row per run over `loaded` (each input with its display name): runs are the values of the `by`
/// keys (a column, or a field name such as `run_id`) or, without keys, each input's run_id field, else
/// the input itself. Gives the key column names (a key named like a summary column is written
/// `by_<key>`; without keys, `run_id` or `source_file`) and the runs. The first `skip_steps` steps of each
/// run are left out of its aggregates. Each run also gets its framework's own figure and the audit of it
/// (`mfu audit`, `logged_peak_flops` the user's word for that framework's peak).
pub fn summarize_runs(
    loaded: &[(String, Loaded)],
    by: &[String],
    skip_steps: f64,
    logged_peak_flops: Option<f64>,
) -> Result<(Vec<String>, Vec<RunSummary>), PipelineError> {
    let (key_names, groups) = run_groups(loaded, by)?;
    let inputs: Vec<SummaryInput> = loaded
        .iter()
        .zip(groups)
        .map(|((display, l), group)| SummaryInput {
            source: display,
            frame: &l.enriched.frame,
            values: &l.enriched.values,
            device_column: match l.enriched.mapping.source(Field::DeviceName) {
                FieldSource::Column { name, .. } => Some(name.as_str()),
                _ => None,
            },
            group,
        })
        .collect();
    let mut runs = summarize(&inputs, skip_steps).map_err(PipelineError::Combine)?;
    // Each run's framework figure, beside mfu's (`mfu audit`, over all of the run's rows).
    let (_, audits) = super::audit::audit_runs(loaded, by, logged_peak_flops, false)?;
    let audits: std::collections::HashMap<_, _> = audits
        .into_iter()
        .filter_map(|a| Some((a.keys, a.audit?)))
        .collect();
    for run in &mut runs {
        if let Some(a) = audits.get(&run.keys) {
            run.framework = Some(a.framework.clone());
            run.mfu_logged = a.mfu_logged;
            // mfu's own callbacks agreeing with mfu is nothing to say; anything else is.
            let agrees = a.framework == "mfu" && a.ratio.is_some_and(|r| (r - 1.0).abs() < 1e-3);
            run.audit = (!agrees).then(|| a.verdict.clone());
        }
    }
    Ok((key_names, runs))
}
