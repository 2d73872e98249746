//! CSV output, written by polars. CSV has no nested values, so a list, array or struct column (such as a
//! JSON array of device names) is written as its JSON text, and a duration as JSON Lines writes it (ISO
//! 8601, `PT2.5S`): the same text in both formats. Bytes are written as text (see
//! [`super::text_values`]).

use std::io::Write;

use polars::prelude::*;

use super::{Metadata, OutputFormat, TableWriter, WriteError};

pub struct CsvTableWriter;

impl TableWriter for CsvTableWriter {
    fn write(
        &self,
        df: &mut DataFrame,
        _metadata: &Metadata,
        out: &mut (dyn Write + Send),
    ) -> Result<(), WriteError> {
        write_csv(df, out, true)
    }
}

/// Writes `df` as CSV rows, after a header line when `header`.
pub(crate) fn write_csv(
    df: &mut DataFrame,
    out: &mut (impl Write + Send + ?Sized),
    header: bool,
) -> Result<(), WriteError> {
    let encode = |e: PolarsError| WriteError::from_polars(OutputFormat::Csv, e);
    let mut converted = super::text_values::bytes_as_text(df).map_err(encode)?;
    let as_json: Vec<usize> = converted
        .as_ref()
        .unwrap_or(df)
        .columns()
        .iter()
        .enumerate()
        .filter(|(_, c)| needs_json_text(c.dtype()))
        .map(|(i, _)| i)
        .collect();
    if !as_json.is_empty() {
        let mut flat = converted.take().unwrap_or_else(|| df.clone());
        for i in as_json {
            let text = json_text(&flat.columns()[i]).map_err(encode)?;
            flat.replace_column(i, text).map_err(encode)?;
        }
        converted = Some(flat);
    }
    let df = match converted.as_mut() {
        Some(flat) => flat,
        None => df,
    };
    CsvWriter::new(out)
        .include_header(header)
        .finish(df)
        .map_err(encode)
}

/// Types CSV cannot hold as they are: nested values (lists, arrays, structs) and durations. Their cells
/// are written as JSON Lines writes them, so both text formats agree on every value.
fn needs_json_text(dtype: &DataType) -> bool {
    dtype.is_nested() || matches!(dtype, DataType::Duration(_))
}

/// Each cell of `col` as the JSON Lines writer writes it (a JSON string without its quotes, since the
/// CSV cell is text already); null stays null.
fn json_text(col: &Column) -> PolarsResult<Column> {
    let name = col.name().clone();
    let mut one = DataFrame::new(col.len(), vec![col.clone().with_name("v".into())])?;
    let mut lines = Vec::new();
    JsonWriter::new(&mut lines)
        .with_json_format(JsonFormat::JsonLines)
        .finish(&mut one)?;
    let text = String::from_utf8(lines).map_err(|e| polars_err!(ComputeError: "{e}"))?;
    let values: Vec<Option<String>> = text
        .lines()
        .map(|line| {
            // Each line is {"v":VALUE}.
            let value = line
                .strip_prefix("{\"v\":")
                .and_then(|rest| rest.strip_suffix('}'))
                .unwrap_or("null");
            match value {
                "null" => None,
                v if v.starts_with('"') => serde_json::from_str::<String>(v).ok(),
                v => Some(v.to_string()),
            }
        })
        .collect();
    if values.len() != col.len() {
        polars_bail!(ComputeError: "column '{name}': {} JSON values for {} rows", values.len(), col.len());
    }
    Ok(Column::new(name, values))
}
