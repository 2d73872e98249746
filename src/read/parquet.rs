//! Parquet, read with polars.

use std::io::Cursor;

use polars::prelude::*;

/// Parses a whole Parquet file.
pub fn read(bytes: Vec<u8>) -> Result<DataFrame, String> {
    ParquetReader::new(Cursor::new(bytes))
        .finish()
        .map_err(|e| e.to_string())
}
