//! JSON Lines output, written by polars: one object per row, nulls as `null`.

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
    JsonWriter::new(out)
        .with_json_format(JsonFormat::JsonLines)
        .finish(df)
        .map_err(|e| WriteError::encode(OutputFormat::Jsonl, e))
}
