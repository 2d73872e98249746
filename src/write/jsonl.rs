//! JSON Lines output, written by polars: one object per row, nulls as `null` (and NaN and infinities too,
//! which JSON has no number for). Bytes are written as text (see [`super::text_values`]).

use std::io::Write;

use polars::prelude::*;

use super::{Metadata, OutputFormat, TableWriter, WriteError};

pub struct JsonlTableWriter;

impl TableWriter for JsonlTableWriter {
    fn write(
        &self,
        df: &mut DataFrame,
        _metadata: &Metadata,
        out: &mut (dyn Write + Send),
    ) -> Result<(), WriteError> {
        write_jsonl(df, out)
    }
}

/// Writes `df` as JSON Lines.
pub(crate) fn write_jsonl(
    df: &mut DataFrame,
    out: &mut (impl Write + Send + ?Sized),
) -> Result<(), WriteError> {
    let encode = |e: PolarsError| WriteError::from_polars(OutputFormat::Jsonl, e);
    // polars' JSON writer has no bytes (it panics on them): they are written as text first.
    let mut converted = super::text_values::bytes_as_text(df).map_err(encode)?;
    let df = match converted.as_mut() {
        Some(text) => text,
        None => df,
    };
    JsonWriter::new(out)
        .with_json_format(JsonFormat::JsonLines)
        .finish(df)
        .map_err(encode)
}
