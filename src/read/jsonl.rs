//! JSON Lines (`.jsonl`, `.ndjson`): one JSON object per line, read with polars.

use std::io::Cursor;

use polars::prelude::*;

/// Parses JSON Lines. The schema is inferred from every line, so a field that first appears late, or is an
/// integer early and a float later, is read correctly.
pub fn read(bytes: Vec<u8>) -> Result<DataFrame, String> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(DataFrame::empty());
    }
    JsonReader::new(Cursor::new(bytes))
        .with_json_format(JsonFormat::JsonLines)
        .infer_schema_len(None)
        .finish()
        .map_err(|e| e.to_string())
}
