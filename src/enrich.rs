//! The enrich pipeline for one table: map columns → resolve peaks → compute → append the six columns.
//!
//! This is the library's main entry point. [`enrich_frame`] works on a polars frame; the Arrow interface in
//! [`crate::arrow_bridge`] wraps it for arrow-rs record batches. Reading and writing files is the caller's
//! business (see [`crate::read`] and [`crate::write`]).

use std::sync::Arc;

use polars::prelude::*;

use crate::columns::{
    extract, map_columns, map_typed_columns, ColumnError, ColumnMapping, ColumnOptions, Field,
    FieldValues, Numbers,
};
use crate::compute::{
    compute, ComputeStats, Extras, COLUMN_DEFINITIONS, HFU_COLUMNS, HFU_DEFINITIONS,
    LOGGED_DEFINITION, MFU_LOGGED_CORRECTED, OUTPUT_COLUMNS, ROLLING_COLUMNS, SAMPLES_DEFINITION,
    SAMPLES_PER_SECOND,
};
use crate::flops::Recompute;
use crate::peaks::Resolver;
use crate::write::Metadata;

/// The name of the column that says which input a row came from, when several inputs go into one output.
pub const SOURCE_FILE: &str = "source_file";

/// Everything the enrichment of one table needs.
#[derive(Debug, Clone)]
pub struct EnrichOptions {
    pub columns: ColumnOptions,
    pub resolver: Arc<Resolver>,
    /// With [`Recompute::Full`], the HFU columns are added after the six.
    pub recompute: Recompute,
    /// `--logged-peak-flops`: the peak a log's own MFU was computed against; adds `mfu_logged_corrected`.
    pub logged_peak_flops: Option<f64>,
    /// `--window N`: adds rolling means over N rows of each run.
    pub window: Option<usize>,
}

impl EnrichOptions {
    /// The six columns only, with `resolver`, and every column option at its default.
    pub fn new(resolver: Resolver) -> EnrichOptions {
        EnrichOptions {
            columns: ColumnOptions::default(),
            resolver: Arc::new(resolver),
            recompute: Recompute::None,
            logged_peak_flops: None,
            window: None,
        }
    }

    /// These options for one input: its shape may lack timing altogether, and its files' facts fill the
    /// fields no column or flag gives.
    pub fn for_input(
        &self,
        timing_optional: bool,
        facts: &[crate::columns::RunFact],
        model: Option<&crate::flops::ModelConfig>,
        hints: &[crate::columns::ColumnHint],
    ) -> EnrichOptions {
        let mut options = self.clone();
        options.columns.timing_optional |= timing_optional;
        options.columns.facts = facts.to_vec();
        options.columns.hints = hints.to_vec();
        // A model config found beside the log counts FLOPs per token when the sequence length is known
        // (a flag or a fact); --model-config wins over it.
        let seq_len_known = options.columns.constants.seq_len.is_some()
            || facts
                .iter()
                .any(|f| f.field == crate::columns::Field::SeqLen);
        if let (None, Some(config), true) = (&options.columns.model, model, seq_len_known) {
            options.columns.model = Some(crate::columns::ModelFlops {
                config: config.clone(),
                attention: crate::flops::Attention::default(),
                convention: options.columns.convention,
                logged_convention: None,
            });
        }
        options
    }

    /// The names of the columns this run adds to a table mapped as `mapping`, in order.
    pub fn added_columns(&self, mapping: &ColumnMapping) -> Vec<&'static str> {
        let mut names = OUTPUT_COLUMNS.to_vec();
        if mapping.source(crate::columns::Field::Samples) != &crate::columns::FieldSource::Missing {
            names.push(SAMPLES_PER_SECOND);
        }
        if self.recompute == Recompute::Full {
            names.extend(HFU_COLUMNS);
        }
        if self.logged_peak_flops.is_some() {
            names.push(MFU_LOGGED_CORRECTED);
        }
        if self.window.is_some_and(|n| n > 0) {
            names.extend(ROLLING_COLUMNS);
        }
        names
    }

    pub fn extras(&self) -> Extras {
        Extras {
            hfu: self.recompute == Recompute::Full,
            logged_peak_flops: self.logged_peak_flops,
            window: self.window,
        }
    }
}

/// Whether `name` is one of the columns mfu adds.
pub fn is_added_column(name: &str) -> bool {
    OUTPUT_COLUMNS.contains(&name)
        || name == SAMPLES_PER_SECOND
        || HFU_COLUMNS.contains(&name)
        || ROLLING_COLUMNS.contains(&name)
        || name == MFU_LOGGED_CORRECTED
}

/// An enriched table and what was seen making it.
#[derive(Debug)]
pub struct Enriched {
    pub frame: DataFrame,
    pub mapping: ColumnMapping,
    pub stats: ComputeStats,
    /// Numeric columns with cells that were not numbers: (column, cells).
    pub non_numeric: Vec<(String, usize)>,
    /// What a column's values meant other than they say (see [`FieldValues::column_warnings`]).
    pub column_warnings: Vec<String>,
    /// Input columns renamed because their names are taken by added columns: (old, new).
    pub renamed: Vec<(String, String)>,
    /// The typed field values the columns were computed from (for summaries).
    pub values: FieldValues,
}

/// Errors enriching one table.
#[derive(Debug, thiserror::Error)]
pub enum EnrichError {
    #[error(transparent)]
    Columns(#[from] ColumnError),
    #[error("the input already has every column mfu adds ({}): it looks enriched already", OUTPUT_COLUMNS.join(", "))]
    AlreadyEnriched,
    #[error("table has no columns (empty input)")]
    NoColumns,
    #[error("{0}")]
    Polars(#[from] PolarsError),
}

/// How a table with these column names is enriched: where each field comes from, and which input columns
/// are renamed because an added column takes their name (a trainer's own `tokens_per_second` is kept as
/// `tokens_per_second_input`).
pub fn plan_columns(
    names: &[&str],
    numeric: &[&str],
    options: &EnrichOptions,
) -> Result<(ColumnMapping, Vec<(String, String)>), EnrichError> {
    if names.is_empty() {
        return Err(EnrichError::NoColumns);
    }
    if OUTPUT_COLUMNS.iter().all(|c| names.contains(c)) {
        return Err(EnrichError::AlreadyEnriched);
    }
    let mapping = map_typed_columns(names, numeric, &options.columns)?;
    let mut renamed = Vec::new();
    for taken in options.added_columns(&mapping) {
        if names.contains(&taken) {
            let mut new = format!("{taken}_input");
            let mut k = 2;
            while names.contains(&new.as_str()) {
                new = format!("{taken}_input{k}");
                k += 1;
            }
            renamed.push((taken.to_string(), new));
        }
    }
    Ok((mapping, renamed))
}

/// Enriches one table: every input column kept, in order, then the six added columns.
pub fn enrich_frame(mut df: DataFrame, options: &EnrichOptions) -> Result<Enriched, EnrichError> {
    let names: Vec<String> = df
        .get_column_names()
        .iter()
        .map(|s| s.to_string())
        .collect();
    let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let numeric: Vec<&str> = df
        .columns()
        .iter()
        .filter(|c| c.dtype().is_primitive_numeric())
        .map(|c| c.name().as_str())
        .collect();
    let (mapping, renamed) = plan_columns(&name_refs, &numeric, options)?;
    let mut values = extract(&df, &mapping, options.columns.model.as_ref())?;
    crate::compute::read_logged_percentages(&mut values, &options.resolver);
    let computed = compute(&values, &options.resolver, options.extras());
    let non_numeric = values.non_numeric.clone();
    let column_warnings = values.column_warnings.clone();
    for (old, new) in &renamed {
        df.rename(old, new.as_str().into())?;
    }
    let frame = df.hstack(&computed.columns)?;
    Ok(Enriched {
        frame,
        mapping,
        stats: computed.stats,
        non_numeric,
        column_warnings,
        renamed,
        values,
    })
}

/// Whether a table already carries the six columns mfu adds.
pub fn is_enriched(df: &DataFrame) -> bool {
    OUTPUT_COLUMNS
        .iter()
        .all(|c| df.get_column_names().iter().any(|n| n.as_str() == *c))
}

/// Reads a table mfu already enriched without recomputing it: its columns are kept as they are, and the
/// fields are mapped leniently (nothing is required) so summaries can weigh its rows by step time.
pub fn reuse_enriched(
    df: DataFrame,
    options: &EnrichOptions,
    recorded: Option<&str>,
) -> Result<Enriched, EnrichError> {
    let names: Vec<String> = df
        .get_column_names()
        .iter()
        .map(|s| s.to_string())
        .filter(|n| !is_added_column(n) && n != SOURCE_FILE)
        .collect();
    let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut columns = options.columns.clone();
    columns.lenient = true;
    columns.allow_override = true;
    if let Some(record) = recorded {
        apply_recorded(&mut columns, record, &name_refs);
    }
    let mapping = map_columns(&name_refs, &columns)?;
    let mut values = extract(&df, &mapping, columns.model.as_ref())?;
    // The tokens the enrichment used, whatever gave them (a column, a constant, a differenced counter):
    // its tokens_per_second times the step time, where both are there.
    if let Ok(rate) = df.column(crate::compute::TOKENS_PER_SECOND) {
        let rate = rate.cast(&DataType::Float64)?;
        let rate = rate.f64()?;
        let tokens: Vec<Option<f64>> = (0..df.height())
            .map(|row| match (rate.get(row), values.step_time_s.get(row)) {
                (Some(r), Some(t)) if r.is_finite() && t.is_finite() && t > 0.0 => Some(r * t),
                _ => values.tokens.get(row),
            })
            .collect();
        values.tokens = Numbers::Column(tokens);
    }
    let mfu = df
        .column(crate::compute::MFU_WALL_CLOCK)?
        .cast(&DataType::Float64)?;
    let stats = ComputeStats {
        rows: df.height(),
        null_mfu_rows: mfu.null_count(),
        ..Default::default()
    };
    Ok(Enriched {
        non_numeric: values.non_numeric.clone(),
        column_warnings: values.column_warnings.clone(),
        frame: df,
        mapping,
        stats,
        renamed: Vec::new(),
        values,
    })
}

/// The Parquet key-value metadata of an output: tool version, peak-table hash, and each added column's unit
/// and definition (JSON).
pub fn output_metadata(options: &EnrichOptions) -> Metadata {
    let resolver = &options.resolver;
    let hfu: &[(&str, &str, &str)] = if options.recompute == Recompute::Full {
        &HFU_DEFINITIONS
    } else {
        &[]
    };
    let logged: &[(&str, &str, &str)] = if options.logged_peak_flops.is_some() {
        std::slice::from_ref(&LOGGED_DEFINITION)
    } else {
        &[]
    };
    let rolling_definitions: Vec<(&str, &str, String)> = match options.window {
        Some(n) if n > 0 => [
            (ROLLING_COLUMNS[0], "fraction", "mfu_wall_clock"),
            (ROLLING_COLUMNS[1], "fraction", "mfu_fwd_bwd"),
            (ROLLING_COLUMNS[2], "tokens/s", "tokens_per_second"),
        ]
        .iter()
        .map(|(name, unit, of)| {
            (
                *name,
                *unit,
                format!(
                    "mean of the non-null {of} over this row and the {} before it in the run",
                    n - 1
                ),
            )
        })
        .collect(),
        _ => Vec::new(),
    };
    let rolling: Vec<(&str, &str, &str)> = rolling_definitions
        .iter()
        .map(|(a, b, c)| (*a, *b, c.as_str()))
        .collect();
    // samples_per_second is added where the rows count samples: its definition is written with the
    // six's, and applies where the column is there.
    let columns: serde_json::Map<String, serde_json::Value> = COLUMN_DEFINITIONS
        .iter()
        .chain(std::iter::once(&SAMPLES_DEFINITION))
        .chain(hfu)
        .chain(logged)
        .chain(rolling.iter())
        .map(|(name, unit, definition)| {
            (
                name.to_string(),
                serde_json::json!({ "unit": unit, "definition": definition }),
            )
        })
        .collect();
    let mut meta = vec![
        (
            "mfu.version".to_string(),
            env!("CARGO_PKG_VERSION").to_string(),
        ),
        (
            "mfu.peak_table_sha256".to_string(),
            resolver.table().sha256().to_string(),
        ),
        (
            "mfu.columns".to_string(),
            serde_json::Value::Object(columns).to_string(),
        ),
    ];
    if let Some(f) = resolver.options().forced_peak {
        meta.push(("mfu.forced_peak_flops".to_string(), f.to_string()));
    }
    meta.push((
        OPTIONS_KEY.to_string(),
        options_record(&options.columns).to_string(),
    ));
    meta
}

/// The Parquet metadata key under which an output records the run-level options its columns were made
/// with (`--device`, `--dtype`, `--num-devices`, `--flops-per-token`, `--tokens-per-step`, `--seq-len`,
/// `--map`, `--cumulative`, `--time-unit`, `--override`), so that a summary or plot of the file reads its
/// rows as the enrichment did.
pub const OPTIONS_KEY: &str = "mfu.options";

/// The column options as [`OPTIONS_KEY`] records them: only what was given.
fn options_record(columns: &ColumnOptions) -> serde_json::Value {
    let c = &columns.constants;
    let mut constants = serde_json::Map::new();
    let texts = [("device", &c.device), ("dtype", &c.dtype)];
    for (name, value) in texts {
        if let Some(v) = value {
            constants.insert(name.into(), serde_json::json!(v));
        }
    }
    let numbers = [
        ("num_devices", c.num_devices),
        ("flops_per_token", c.flops_per_token),
        ("tokens_per_step", c.tokens_per_step),
        ("seq_len", c.seq_len),
    ];
    for (name, value) in numbers {
        if let Some(v) = value {
            constants.insert(name.into(), serde_json::json!(v));
        }
    }
    let map: serde_json::Map<String, serde_json::Value> = columns
        .map
        .iter()
        .map(|(field, column)| (field.name().to_string(), serde_json::json!(column)))
        .collect();
    let cumulative: Vec<&str> = columns.cumulative.iter().map(|f| f.name()).collect();
    let mut record = serde_json::json!({
        "constants": constants,
        "map": map,
        "cumulative": cumulative,
        "override": columns.allow_override,
    });
    if let Some(unit) = columns.time_unit {
        record["time_unit"] = serde_json::json!(unit.as_str());
    }
    // Whose count of FLOPs per token a model config was counted with: the MFU columns' numerator.
    record["convention"] = serde_json::json!(columns.convention.name());
    record
}

/// Adds what an output's [`OPTIONS_KEY`] record says to `columns`, where `columns` does not say it
/// already (an option given now wins). A map entry whose column is not among `names` is left out.
/// Gives what was taken from the record, in words, for `-v`.
pub fn apply_recorded(columns: &mut ColumnOptions, record: &str, names: &[&str]) -> Vec<String> {
    let Ok(record) = serde_json::from_str::<serde_json::Value>(record) else {
        return Vec::new();
    };
    let mut taken = Vec::new();
    let c = &mut columns.constants;
    let constants = &record["constants"];
    let text = |name: &str| constants[name].as_str().map(str::to_string);
    let number = |name: &str| constants[name].as_f64().filter(|v| v.is_finite());
    let mut take_text = |slot: &mut Option<String>, name: &str| {
        if slot.is_none() {
            if let Some(v) = text(name) {
                taken.push(format!("{name} '{v}'"));
                *slot = Some(v);
            }
        }
    };
    take_text(&mut c.device, "device");
    take_text(&mut c.dtype, "dtype");
    let mut take_number = |slot: &mut Option<f64>, name: &str| {
        if slot.is_none() {
            if let Some(v) = number(name) {
                taken.push(format!("{name} {v}"));
                *slot = Some(v);
            }
        }
    };
    take_number(&mut c.num_devices, "num_devices");
    take_number(&mut c.flops_per_token, "flops_per_token");
    take_number(&mut c.tokens_per_step, "tokens_per_step");
    take_number(&mut c.seq_len, "seq_len");
    if let Some(map) = record["map"].as_object() {
        for (field, column) in map {
            let (Ok(field), Some(column)) = (field.parse::<Field>(), column.as_str()) else {
                continue;
            };
            if columns.map.iter().all(|(f, _)| *f != field) && names.contains(&column) {
                taken.push(format!("--map {field}={column}"));
                columns.map.push((field, column.to_string()));
            }
        }
    }
    for field in record["cumulative"].as_array().into_iter().flatten() {
        if let Some(field) = field.as_str().and_then(|f| f.parse::<Field>().ok()) {
            if !columns.cumulative.contains(&field) {
                taken.push(format!("--cumulative {field}"));
                columns.cumulative.push(field);
            }
        }
    }
    if columns.time_unit.is_none() {
        if let Some(unit) = record["time_unit"].as_str().and_then(|u| u.parse().ok()) {
            taken.push(format!(
                "--time-unit {}",
                record["time_unit"].as_str().unwrap_or("")
            ));
            columns.time_unit = Some(unit);
        }
    }
    taken
}

/// Stacks enriched tables from several inputs into one, in input order: the union of the input columns in
/// first-seen order (null where an input lacks one), then `source_file`, then the six added columns.
/// A column whose type differs between inputs becomes Float64 when all are numeric, String otherwise.
pub fn combine(parts: Vec<(String, DataFrame)>) -> PolarsResult<DataFrame> {
    let mut order: Vec<PlSmallStr> = Vec::new();
    let mut types: Vec<DataType> = Vec::new();
    for (_, df) in &parts {
        for col in df.columns() {
            let name = col.name();
            if is_added_column(name.as_str()) {
                continue;
            }
            match order.iter().position(|n| n == name) {
                Some(i) => types[i] = unify(&types[i], col.dtype()),
                None => {
                    order.push(name.clone());
                    types.push(col.dtype().clone());
                }
            }
        }
    }
    let mut out: Option<DataFrame> = None;
    for (source, df) in parts {
        let height = df.height();
        let mut columns: Vec<Column> = Vec::with_capacity(order.len() + 7);
        for (name, dtype) in order.iter().zip(&types) {
            let col = match df.column(name.as_str()) {
                Ok(c) if c.dtype() == dtype => c.clone(),
                Ok(c) => c.cast(dtype)?,
                Err(_) => Column::full_null(name.clone(), height, dtype),
            };
            columns.push(col);
        }
        columns.push(source_file_column(&source, height));
        for name in OUTPUT_COLUMNS
            .iter()
            .chain(&HFU_COLUMNS)
            .chain(&[MFU_LOGGED_CORRECTED])
            .chain(&ROLLING_COLUMNS)
        {
            if let Ok(c) = df.column(name) {
                columns.push(c.clone());
            }
        }
        let part = DataFrame::new(height, columns)?;
        match &mut out {
            None => out = Some(part),
            Some(acc) => {
                acc.vstack_mut_owned(part)?;
            }
        }
    }
    let mut df = out.unwrap_or_default();
    df.rechunk_mut();
    Ok(df)
}

/// `df` with a `source_file` column naming `source`, placed before the added columns as in [`combine`]'s
/// output (for stacking enriched inputs one at a time).
pub fn tag_source(df: DataFrame, source: &str) -> PolarsResult<DataFrame> {
    let height = df.height();
    let mut columns = df.into_columns();
    let at = columns
        .iter()
        .position(|c| is_added_column(c.name().as_str()))
        .unwrap_or(columns.len());
    columns.insert(at, source_file_column(source, height));
    DataFrame::new(height, columns)
}

/// The `source_file` column: `source` on each of `height` rows.
fn source_file_column(source: &str, height: usize) -> Column {
    Column::new_scalar(
        SOURCE_FILE.into(),
        Scalar::new(DataType::String, AnyValue::StringOwned(source.into())),
        height,
    )
}

fn unify(a: &DataType, b: &DataType) -> DataType {
    if a == b || b == &DataType::Null {
        a.clone()
    } else if a == &DataType::Null {
        b.clone()
    } else if a.is_primitive_numeric() && b.is_primitive_numeric() {
        DataType::Float64
    } else {
        DataType::String
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> EnrichOptions {
        EnrichOptions::new(Resolver::builtin())
    }

    fn sample() -> DataFrame {
        df!(
            "step" => [1i64, 2, 3],
            "step_time" => [2.0, 0.0, 4.0],
            "fwd_bwd_time" => [Some(1.6), None, Some(3.0)],
            "tokens" => [1000i64, 1000, 2000],
            "num_devices" => [2i64, 2, 2],
            "flops_per_token" => [6e9, 6e9, 6e9],
            "device_name" => ["NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB", "Acme X9"],
            "dtype" => ["bf16", "bf16", "bf16"],
        )
        .unwrap()
    }

    #[test]
    fn appends_the_contract_columns_with_nulls_where_unknown() {
        let e = enrich_frame(sample(), &options()).unwrap();
        let names: Vec<&str> = e
            .frame
            .get_column_names()
            .iter()
            .map(|s| s.as_str())
            .collect();
        assert_eq!(
            &names[..8],
            &[
                "step",
                "step_time",
                "fwd_bwd_time",
                "tokens",
                "num_devices",
                "flops_per_token",
                "device_name",
                "dtype"
            ]
        );
        assert_eq!(&names[8..], &OUTPUT_COLUMNS);
        let f = |c: &str| e.frame.column(c).unwrap().f64().unwrap().clone();
        let achieved0 = 1000.0 * 6e9 / (2.0 * 2.0);
        assert_eq!(f("tokens_per_second").get(0), Some(500.0));
        assert_eq!(f("achieved_flops_per_device").get(0), Some(achieved0));
        assert_eq!(f("mfu_wall_clock").get(0), Some(achieved0 / 312e12));
        assert_eq!(
            f("mfu_fwd_bwd").get(0),
            Some(1000.0 * 6e9 / (2.0 * 1.6) / 312e12)
        );
        // Zero step time: null, never infinity.
        assert_eq!(f("tokens_per_second").get(1), None);
        assert_eq!(f("mfu_wall_clock").get(1), None);
        // Unknown device: throughput filled, MFU null.
        assert_eq!(f("tokens_per_second").get(2), Some(500.0));
        assert_eq!(f("peak_flops_per_device").get(2), None);
        assert_eq!(f("mfu_wall_clock").get(2), None);
        assert_eq!(
            e.frame
                .column("resolved_device")
                .unwrap()
                .str()
                .unwrap()
                .get(2),
            None
        );
        assert_eq!(e.stats.null_mfu_rows, 2);
        assert_eq!(e.stats.bad_step_time_rows, 1);
        assert_eq!(e.stats.unresolved.len(), 1);
        assert_eq!(e.stats.unresolved[0].1, 1);
    }

    #[test]
    fn clashing_input_columns_are_kept_renamed() {
        let mut df = sample();
        df.with_column(Series::new("tokens_per_second".into(), [1.0, 2.0, 3.0]).into_column())
            .unwrap();
        let e = enrich_frame(df, &options()).unwrap();
        assert_eq!(
            e.renamed,
            vec![(
                "tokens_per_second".to_string(),
                "tokens_per_second_input".to_string()
            )]
        );
        assert_eq!(
            e.frame
                .column("tokens_per_second_input")
                .unwrap()
                .f64()
                .unwrap()
                .get(2),
            Some(3.0)
        );
        let again = enrich_frame(e.frame, &options());
        assert!(matches!(again, Err(EnrichError::AlreadyEnriched)));
    }

    #[test]
    fn combine_unions_columns_in_input_order() {
        let a = enrich_frame(sample(), &options()).unwrap().frame;
        let mut other = sample().drop("fwd_bwd_time").unwrap();
        other
            .with_column(Series::new("loss".into(), [1.5, 1.4, 1.3]).into_column())
            .unwrap();
        let step_as_float = other
            .column("step")
            .unwrap()
            .cast(&DataType::Float64)
            .unwrap();
        other.with_column(step_as_float).unwrap();
        let b = enrich_frame(other, &options()).unwrap().frame;
        let all = combine(vec![("a.jsonl".into(), a), ("b.csv".into(), b)]).unwrap();
        let names: Vec<&str> = all.get_column_names().iter().map(|s| s.as_str()).collect();
        assert_eq!(names[8], "loss");
        assert_eq!(names[9], SOURCE_FILE);
        assert_eq!(&names[10..], &OUTPUT_COLUMNS);
        assert_eq!(all.height(), 6);
        assert_eq!(all.column("step").unwrap().dtype(), &DataType::Float64);
        assert_eq!(all.column("loss").unwrap().f64().unwrap().get(0), None);
        assert_eq!(
            all.column("fwd_bwd_time").unwrap().f64().unwrap().get(4),
            None
        );
        let src = all.column(SOURCE_FILE).unwrap().str().unwrap().clone();
        assert_eq!((src.get(0), src.get(5)), (Some("a.jsonl"), Some("b.csv")));
    }
}
