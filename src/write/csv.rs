//! CSV output, written by polars. CSV has no nested values, so a list column (such as a JSON array of
//! device names) is written as its JSON text.

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
    let encode = |e: PolarsError| WriteError::encode(OutputFormat::Csv, e);
    let nested: Vec<usize> = df
        .columns()
        .iter()
        .enumerate()
        .filter(|(_, c)| c.dtype().is_nested())
        .map(|(i, _)| i)
        .collect();
    let mut flat;
    let df = if nested.is_empty() {
        df
    } else {
        flat = df.clone();
        for i in nested {
            let text = nested_as_json(&flat.columns()[i]).map_err(encode)?;
            flat.replace_column(i, text).map_err(encode)?;
        }
        &mut flat
    };
    CsvWriter::new(out)
        .include_header(header)
        .finish(df)
        .map_err(encode)
}

/// Each cell of a nested column as JSON text (null stays null).
fn nested_as_json(col: &Column) -> PolarsResult<Column> {
    let values: Vec<Option<String>> = (0..col.len())
        .map(|i| {
            let v = col.get(i)?;
            Ok(match v {
                AnyValue::Null => None,
                other => Some(any_to_json(&other).to_string()),
            })
        })
        .collect::<PolarsResult<_>>()?;
    Ok(Column::new(col.name().clone(), values))
}

fn any_to_json(v: &AnyValue) -> serde_json::Value {
    use serde_json::Value;
    match v {
        AnyValue::Null => Value::Null,
        AnyValue::Boolean(b) => Value::Bool(*b),
        AnyValue::String(s) => Value::String(s.to_string()),
        AnyValue::StringOwned(s) => Value::String(s.to_string()),
        AnyValue::List(s) => Value::Array(
            (0..s.len())
                .map(|i| s.get(i).map(|x| any_to_json(&x)).unwrap_or(Value::Null))
                .collect(),
        ),
        other => match other.extract::<f64>() {
            Some(f) if other.is_integer() => Value::from(f as i64),
            Some(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
            None => Value::String(other.to_string()),
        },
    }
}
