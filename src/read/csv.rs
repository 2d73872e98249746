//! CSV and TSV, read with polars: a header row, then one row per record.

use std::io::Cursor;

use polars::prelude::*;

/// Parses delimited text with a header. Types are inferred from every row, so a column that is integral
/// early and fractional later is read as floats rather than failing.
pub fn read(bytes: Vec<u8>, separator: u8) -> Result<DataFrame, String> {
    let bytes = match bytes.strip_prefix(b"\xef\xbb\xbf") {
        Some(rest) => rest.to_vec(),
        None => bytes,
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(DataFrame::empty());
    }
    CsvReadOptions::default()
        .with_has_header(true)
        .with_infer_schema_length(None)
        .with_parse_options(CsvParseOptions::default().with_separator(separator))
        .into_reader_with_file_handle(Cursor::new(bytes))
        .finish()
        .map_err(|e| e.to_string())
}
