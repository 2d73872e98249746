//! Megatron-LM metric JSON, as its functional tests record it: metric-major,
//! `{"<metric>": {"start_step", "end_step", "step_interval", "values": {"<step>": value}}}`. Turned into one
//! row per step with a `step` column and one column per metric; the string "nan" (a metric not logged at
//! that step) is null. `iteration-time` is seconds per iteration.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{nan_strings_to_null, rows_to_frame, ShapedFrame};

pub fn read(bytes: &[u8]) -> Result<ShapedFrame, String> {
    let doc: Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    let metrics = doc.as_object().ok_or("not a JSON object of metrics")?;
    let mut by_step: BTreeMap<u64, Map<String, Value>> = BTreeMap::new();
    let names: Vec<&String> = metrics.keys().collect();
    for (name, metric) in metrics {
        let values = metric
            .get("values")
            .and_then(Value::as_object)
            .ok_or_else(|| format!("metric '{name}' has no 'values' object"))?;
        for (step, value) in values {
            let step: u64 = step
                .trim()
                .parse()
                .map_err(|_| format!("metric '{name}': step '{step}' is not a number"))?;
            by_step
                .entry(step)
                .or_default()
                .insert(name.clone(), nan_strings_to_null(value.clone()));
        }
    }
    // Same columns on every row, in the file's metric order, after the step.
    let rows: Vec<Map<String, Value>> = by_step
        .into_iter()
        .map(|(step, mut values)| {
            let mut row = Map::new();
            row.insert("step".into(), Value::from(step));
            for name in &names {
                row.insert((*name).clone(), values.remove(*name).unwrap_or(Value::Null));
            }
            row
        })
        .collect();
    Ok(ShapedFrame {
        frame: rows_to_frame(&rows)?,
        notes: Vec::new(),
        ..Default::default()
    })
}
